#!/usr/bin/env python3
"""Fuzzers of bufferlab's other entry points (issue 30, item 10; docs/fuzzing.md).

tools/fuzz.py mutates scenarios for ``check`` and ``run``; this tool uses its
mutation, outcome classes and worker pool for the rest:

* ``sweep``: mutated sweep files (the shipped ones and small ones over a tiny
  scenario), ``bufferlab sweep FILE --dry-run``;
* ``sweep-run``: small mutated sweeps really run (``-j 2``), then the same
  command's ``--dry-run``, which must list exactly the failed runs as to run;
* ``script``: mutated Mininet scripts (``examples/mininet/*.py`` and small ones
  using the API, the CLI and ``os.system``/``subprocess``), ``bufferlab mininet``;
* ``mn``: ``bufferlab mn`` argument lists (``--topo``, ``--link tc,...``,
  ``--test``, unknown options, ``--custom`` files) and, without ``--test``, the
  CLI's input;
* ``mnfile``: mutated MiniEdit ``.mn`` files, ``bufferlab convert`` (a written
  scenario must pass ``check``), or a scenario using it (``[topology] mn``);
* ``results``: a real results folder (a run's, a sweep's) damaged: files
  truncated, bit-flipped, deleted, replaced (deep JSON, not UTF-8, a value of the
  wrong type, a folder, a FIFO, a symlink to a victim file), symlinks planted
  where outputs go; then ``report``, ``compare``, ``export --flent``, ``plot``,
  ``grade``, ``run``, ``sweep`` (collect) or ``sweep plot``.

Every input runs in a forked child of a worker that imported bufferlab once, in
a session of its own (:func:`fuzz.fork_cli`). Properties, besides fuzz.py's
outcome classes (no traceback, panic, abort, hang; errors name the file):
files outside bufferlab's results folders (the inputs' own folder, planted user
files, the targets of planted symlinks) unchanged byte for byte (``data_loss``,
``through_symlink``), no process left in the session (``leftover``), no
``.*.tmp`` left after a command ended (``half_written``), convert's scenario
accepted by check and a sweep's dry-run listing its failed runs (``mismatch``,
``not_resumable``). An input running past ``--timeout`` gets SIGTERM: a clean
exit then is ``slow`` (a long but stoppable input), none within 15 s a ``hang``.

    python tools/fuzz_inputs.py --sweep 2000 --mnfile 2000 --mn 100 --script 50 --results 200
    python tools/fuzz_inputs.py --replay results:17 --seed 3      # print input 17 of the results fuzzer
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import stat
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz  # noqa: E402
from fuzz import (  # noqa: E402
    BAD,
    INTERESTING_NUMBERS,
    KEYWORDS,
    SHELL_NOISE,
    UNITS,
    CliResult,
    Mutator,
    classify_run,
    fork_cli,
    mut_number,
    mut_unit,
    mut_word,
)

ROOT = fuzz.ROOT

# ---------------------------------------------------------------------- the inputs' seeds

TOPOLOGY = """[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["s1", "h2"]]
"""
#: a scenario of two parts that runs in well under a second (sweeps, grade, the signal trials)
TINY = """name = "tiny"
seed = 1

[sim]
stop_at = "6s"

[params]
t = 1
rate = "5M"
qlen = 100

""" + TOPOLOGY + """
[[part]]
name = "a"
cmds = [
  "s1: tc qdisc add dev s1-eth2 root tbf rate 10mbit burst 32kbit limit ${qlen * 1500}",
  "h2: iperf3 -s &",
  "h1: ping -c 2 -i 0.2 10.0.0.2 > ping.txt &",
  "h1: iperf3 -c 10.0.0.2 -u -b ${rate} -t ${t} -J > c.json",
]

[[part]]
name = "b"
cmds = ["h1: ping -c ${t} -i 0.2 10.0.0.2"]
"""

#: small sweeps over TINY (the shipped sweeps are mutated too, for the dry-run)
SWEEPS = {
    "grid.toml": 'scenario = "../scenarios/tiny.toml"\nseeds = 2\n\n[grid]\nt = [1, 2]\n',
    "where.toml": 'scenario = "../scenarios/tiny.toml"\nname = "narrow"\nparts = ["a"]\n'
                  'where = "t < 3 and qlen > 10"\n\n[grid]\nqlen = [50, 100]\nrate = ["1M", "5M"]\n',
    "zip.toml": 'scenario = "../scenarios/tiny.toml"\nseeds = [1, 7]\n\n[[zip]]\nt = [1, 2]\n'
                'qlen = [50, 100]\n',
    "strings.toml": 'scenario = "../scenarios/tiny.toml"\nname = "rates"\nseeds = [3]\nparts = ["b", "a"]\n\n'
                    '[grid]\nrate = ["1M", "2M", "5M"]\n',
    "two-zips.toml": 'scenario = "../scenarios/tiny.toml"\nwhere = "not (t == 2 and qlen < 60)"\n\n'
                     '[[zip]]\nt = [1, 2]\nrate = ["1M", "3M"]\n\n[[zip]]\nqlen = [50, 70]\n',
}
SWEEP_WORDS = ["scenario", "name", "seeds", "grid", "zip", "parts", "where", "t", "qlen", "rate", "load",
               "maxth", "minth", "maxp", "wq", "qdisc", "and", "or", "not", "<", "<=", "==", "!=", "+", "*",
               "//", "a", "b", "c", "../scenarios/tiny.toml", "../scenarios/red-vs-droptail.toml",
               "tiny.toml", "/dev/zero", "..", ".", "[grid]", "[[zip]]", "[params]"] + KEYWORDS[:40]

#: small Mininet scripts over the API, the CLI (its input given on stdin) and os.system
SCRIPTS = {
    "api.py": '''from time import sleep

from mininet.link import TCLink
from mininet.log import setLogLevel
from mininet.net import Mininet
from mininet.node import CPULimitedHost
from mininet.topo import Topo


class T(Topo):
    def build(self, n=2):
        s = self.addSwitch("s1")
        for k in range(n):
            h = self.addHost("h%d" % (k + 1))
            self.addLink(h, s, bw=10, delay="5ms", loss=0, max_queue_size=100, use_tbf=False)


setLogLevel("info")
net = Mininet(topo=T(n=3), link=TCLink, host=CPULimitedHost)
net.start()
h1, h2, s1 = net.get("h1", "h2", "s1")
print(h1.cmd("ping -c 2 -i 0.2 %s" % h2.IP()))
print(s1.cmd("tc -s qdisc show dev s1-eth2"))
h2.cmd("iperf3 -s &")
print(h1.cmd("iperf3 -c %s -t 1 -u -b 5M" % h2.IP()))
p = h1.popen("ping -c 3 -i 0.2 10.0.0.3")
p.wait()
sleep(0.5)
net.pingAll()
net.iperf((h1, h2), seconds=1)
net.stop()
''',
    "cli.py": '''from mininet.cli import CLI
from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo

net = Mininet(topo=SingleSwitchTopo(3))
net.start()
net.get("h1").cmd("ping 10.0.0.2 -c 2 > ping.txt &")
CLI(net)
net.stop()
''',
    "system.py": '''import os
import subprocess
import time

from mininet.link import TCLink
from mininet.net import Mininet

net = Mininet(link=TCLink)
h1, h2, s1 = net.addHost("h1"), net.addHost("h2"), net.addSwitch("s1")
net.addLink(h1, s1, bw=20, delay="2ms")
net.addLink(s1, h2, bw=5, delay="10ms", max_queue_size=50)
net.start()
os.system("tc qdisc change dev s1-eth2 root netem delay 20ms limit 50")
out = subprocess.run(["tc", "-s", "qdisc", "show", "dev", "s1-eth2"], capture_output=True, text=True)
print(out.stdout)
print(subprocess.check_output("sysctl -w net.ipv4.tcp_congestion_control=reno", shell=True))
h2.cmd("iperf3 -s &")
h1.cmd("iperf3 -c 10.0.0.2 -t 1 > c.txt")
time.sleep(0.2)
print(os.popen("ping -c 1 10.0.0.2").read())
net.stop()
''',
}
#: arguments each seed script runs with (bufferbloat's 10 s by default)
SCRIPT_ARGS = {"bufferbloat.py": ["--time", "3"]}
PY_WORDS = ["addHost", "addSwitch", "addLink", "bw", "delay", "loss", "max_queue_size", "use_tbf", "use_hfsc",
            "jitter", "cmd", "popen", "IP", "get", "start", "stop", "pingAll", "iperf", "sleep", "time",
            "None", "True", "False", "0", "-1", "1e400", "float('nan')", "''", "[]", "{}", "net", "h1", "h2",
            "s1", "self", "wait", "terminate", "poll", "kill", "print", "CLI", "Mininet", "TCLink", "Topo",
            "setLogLevel", "intf", "intfs", "config", "monitor", "waitOutput", "sendCmd", "defaultIntf",
            "linkDelete", "configLinkStatus", "addController", "build", "hosts", "switches", "links"]
#: statements inserted into scripts (at a line's indentation)
PY_SNIPPETS = [
    'net.get("h9")', "net.addLink(h1, h2, bw=-1)", "sleep(-1)", 'sleep(float("nan"))', "sleep(1e400)",
    'h1.cmd("tc qdisc add dev h1-eth0 root netem delay 1e400ms")', 'h1.cmd("ping -c 3 10.0.0.99")',
    'h1.popen("ping -c 2 10.0.0.2").wait()', "net.stop()", "net.start()", "net.pingAll(timeout=-1)",
    'h1.cmd("iperf3 -c 10.0.0.2 -t 1 &")', 'h1.cmd("kill %1")', "h1.cmd(b'ping')", "h1.cmd(None)",
    "net.configLinkStatus('s1', 'h1', 'down')", 'h1.cmd("cd /")', 'h1.cmd("sysctl -w net.core.rmem_max=1")',
    'print(h1.cmd("tc -s qdisc show"))', "net.iperf(seconds=0)", "net.iperf(l4Type='UDP', udpBw='1G')",
    "import os; os.chdir('..')", "h1.terminate()", 'h1.cmd("sleep 2 &"); h1.cmd("wait")',
]

#: what the mn fuzzer's CLI input is made of
MN_CLI = ["pingall", "pingpair", "iperf", "iperf h1 h2", "iperfudp 10M h1 h2", "net", "nodes", "links",
          "dump",
          "time", "help", "h1 ping -c 2 h2", "h1 ping -c 1 10.0.0.2", "h1 ifconfig", "h2 ip addr",
          "h1 tc qdisc add dev h1-eth0 root netem delay 10ms", "s1 tc -s qdisc show dev s1-eth1",
          "h2 iperf3 -s &", "h1 iperf3 -c h2 -t 1", "sh tc -s qdisc show", "sh echo x", "h1 sleep 1",
          "h9 ping h1", "exit", "quit", "EOF", "", "h1", "h1 kill %1", "link s1 h1 down", "h1 sysctl -a"]
MN_TOPOS = ["minimal", "single,{n}", "linear,{n}", "linear,{n},{m}", "tree,depth={n},fanout={m}",
            "tree,{n},{m}",
            "single", "torus,3,3", "custom", "{w}", "single,{n},{w}={m}", "", "linear,{w}"]
MN_LINK_KEYS = ["bw", "delay", "loss", "max_queue_size", "jitter", "use_tbf", "use_hfsc", "use_htb",
                "enable_ecn", "enable_red", "latency_ms", "speedup", "x", "bw ", "BW"]
MN_CUSTOM = '''from mininet.topo import Topo


class Pair(Topo):
    def build(self, n=2):
        s = self.addSwitch("s1")
        for k in range(n):
            self.addLink(self.addHost("h%d" % (k + 1)), s)


topos = {"pair": Pair}
'''

# ---------------------------------------------------------------------- format-specific mutations


def _string_spans(text: str) -> list[tuple[int, int]]:
    return [(m.start() + 1, m.end() - 1) for m in re.finditer(r'"[^"\n]*"', text)]


def mut_python(rng: random.Random, text: str) -> str:
    """A Mininet script's structure: inside a string literal (a command line, a file name, a
    delay), a statement inserted, or a keyword argument's value."""
    r = rng.random()
    spans = _string_spans(text)
    if r < 0.55 and spans:
        a, b = rng.choice(spans)
        inner = text[a:b]
        k = rng.random()
        if k < 0.3:
            inner = mut_number(rng, inner)
        elif k < 0.5:
            inner = mut_unit(rng, inner)
        elif k < 0.8:
            inner = mut_word(rng, " " + inner, KEYWORDS, KEYWORDS)[1:]
        else:
            i = rng.randrange(len(inner) + 1)
            inner = inner[:i] + rng.choice([s for s in SHELL_NOISE if s not in '"\\\n']) + inner[i:]
        return text[:a] + inner + text[b:]
    lines = text.split("\n")
    if r < 0.8:
        k = rng.randrange(len(lines))
        indent = re.match(r"\s*", lines[k]).group()
        lines.insert(k + 1, indent + rng.choice(PY_SNIPPETS))
        return "\n".join(lines)
    kws = list(re.finditer(r"\b(\w+)=([^,)\n]+)", text))
    if not kws:
        return text
    m = rng.choice(kws)
    value = rng.choice(["-1", "0", "1e400", "None", "'x'", "[]", "float('nan')", "10**9", '"1e3ms"', "True",
                        rng.choice(INTERESTING_NUMBERS)])
    return text[: m.start(2)] + value + text[m.end(2):]


JSON_VALUES: list[Any] = [None, True, False, "", "x", -1, 0, 1, 1.5, 1e308, 2**64, [], {}, "10.0.0.300/33",
                          "1e400ms", "h1", "s1", "-5ms", "100", "nan", "10.0.0.1/8", "legacyRouter",
                          "legacySwitch", "ovs", {"opts": {}}, [1, 2], "\u202e", "9" * 5000]


def _json_nodes(doc: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _json_nodes(v, (*path, k))
    elif isinstance(doc, list):
        for k, v in enumerate(doc):
            out += _json_nodes(v, (*path, k))
    return out


def mut_json(rng: random.Random, text: str) -> str:
    """A JSON document's structure: a value replaced by one of another type, a key deleted or
    misspelt, a list element duplicated; a document that does not parse gets JSON noise."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):  # the noise below nests 5 000 deep: json gives up
        i = rng.randrange(len(text) + 1)
        noise = ["{", "}", "[", "]", ",", ":", '"', "null", "\\u0000", "[" * 5000]
        return text[:i] + rng.choice(noise) + text[i:]
    path = rng.choice(_json_nodes(doc)[1:] or [()])
    if not path:
        return json.dumps(rng.choice(JSON_VALUES))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    r = rng.random()
    if r < 0.55:
        parent[key] = rng.choice(JSON_VALUES)
    elif r < 0.7:
        del parent[key]
    elif r < 0.85 and isinstance(parent, list):
        parent.insert(key, json.loads(json.dumps(parent[key])))
    elif isinstance(parent, dict):
        parent[str(key)[:-1] or "_"] = parent.pop(key)
    else:
        parent[key] = [parent[key]] * 3
    return json.dumps(doc, indent=rng.choice([None, 4]))


# ---------------------------------------------------------------------- properties


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder`` (not following links): its type and a hash of its bytes
    or a link's target. Two equal snapshots: nothing in it changed."""
    out: dict[str, str] = {}
    if not os.path.lexists(folder):
        return out
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, folder)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = "link:" + os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    out[rel] = "file:" + hashlib.sha256(f.read()).hexdigest()
            else:
                out[rel] = "dir" if stat.S_ISDIR(st.st_mode) else f"mode:{stat.S_IFMT(st.st_mode)}"
    return out


def _walk(folder: Path) -> list[Path]:
    """Everything under ``folder``, never through a symlink (pathlib's rglob may follow them)."""
    return [Path(d) / n for d, dirs, files in os.walk(folder) for n in dirs + files]


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def leftover_tmp(folder: Path) -> list[str]:
    """``.NAME.tmp`` files (safefs's temporary names) under ``folder``, but in a sweep's
    ``<run-id>.partial`` folders (a run a stopped sweep left: removed by the next sweep)."""
    if not folder.is_dir():
        return []
    return sorted(str(p.relative_to(folder)) for p in _walk(folder) if re.fullmatch(r"\..+\.tmp", p.name)
                  and not any(c.endswith(".partial") for c in p.relative_to(folder).parts))


def parquet_whole(path: Path) -> bool:
    """A Parquet file with its header and footer (a truncated one has no footer), read
    without pyarrow (whose threads would not survive the worker's later forks)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size < 12:
                return False
            f.seek(size - 8)
            tail = f.read(8)
    except OSError:
        return False
    return head == b"PAR1" and tail[4:] == b"PAR1" and int.from_bytes(tail[:4], "little") < size - 8


def outcome(r: CliResult, named: Callable[[str], bool], slow_ok: bool = True) -> tuple[str, str]:
    """The class of a command's end: fuzz.py's classes; an error (exit 2) is ``error_pos`` when
    ``named(stderr)`` (it names the file, argument or folder), else ``error_nopos``; an input
    still running at the timeout that SIGTERM ended cleanly is ``slow``."""
    msg = (f"exit {r.code}\n" + r.err)[-4000:]
    if r.code is None:
        return "hang", "did not end within 15 s of SIGTERM\n" + msg
    if r.leftover:
        return "leftover", f"processes left in its session: {r.leftover}\n" + msg
    cls = classify_run(r.code, r.err, False)
    if r.timed_out:
        clean = r.code in (143, -15) and cls not in ("traceback", "panic")
        return ("slow" if slow_ok and clean else "hang"), "ran past the timeout, then SIGTERM\n" + msg
    if cls in ("error_pos", "error_file", "error_nopos", "other") and r.code == 2:
        return ("error_pos" if named(r.err) else "error_nopos"), msg
    return cls, msg


#: an error (or warning) at a place in a file: FILE:LINE[:COL]: error, or FILE: error for the whole file
POSITIONED = re.compile(r"\.(toml|mn|py)(:\d+)*: (error|warning)")


def positioned(err: str) -> bool:
    return bool(POSITIONED.search(err))


def _names(*paths: Path | str) -> Callable[[str], bool]:
    """``named`` for :func:`outcome`: an error line mentions one of ``paths``."""
    keys = [str(p) for p in paths]

    def named(err: str) -> bool:
        lines = [ln for ln in err.splitlines() if "error" in ln.lower()] or err.splitlines()[:1]
        return any(k in ln for ln in lines for k in keys)

    return named


def _fresh(folder: Path) -> Path:
    """``folder``, empty (what the previous input left there removed)."""
    _rmtree(folder)
    folder.mkdir(parents=True)
    return folder


def _write_tree(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------- targets


class _Target:
    """fuzz.run_pool's target interface (see fuzz.CheckTarget) with a per-worker set-up."""

    kind = ""
    suffix = ".toml"
    timeout_s = 60.0
    mem_mb = 3000

    mut: Mutator

    def make(self, seed: int | str, i: int) -> tuple[str, bytes]:
        """Input ``i``: the target's seed inputs mutated (fuzz.Mutator), its own stream of seed S."""
        return self.mut.make(f"{seed}:{self.kind}", i)

    def execute(self, i: int, path: Path, wd: Path, name: str = "") -> tuple[str, str]:
        raise NotImplementedError

    def cli(self, argv: list[str], wd: Path, stdin: bytes = b"", cwd: Path | None = None) -> CliResult:
        return fork_cli(argv, wd / "io", self.timeout_s, self.mem_mb, stdin, cwd)


def _scenarios(wd: Path) -> Path:
    """wd/scenarios: the shipped scenarios and TINY (sweep files name them ../scenarios/...)."""
    d = wd / "scenarios"
    if not (d / "tiny.toml").is_file():
        d.mkdir(parents=True, exist_ok=True)
        for p in (ROOT / "scenarios").iterdir():
            if p.is_file():
                shutil.copy(p, d / p.name)
        (d / "tiny.toml").write_text(TINY, encoding="utf-8")
    return d


class SweepTarget(_Target):
    """``sweep FILE --dry-run`` of mutated sweep files: nothing written, errors located."""

    kind = "sweep"

    def __init__(self) -> None:
        # the shipped sweeps with one seed (ten times fewer runs for the dry-run to prepare)
        seeds = {p.name: p.read_text(encoding="utf-8").replace("seeds = 10\n", "seeds = 1\n")
                 for p in sorted((ROOT / "sweeps").glob("*.toml"))}
        self.mut = Mutator({**seeds, **SWEEPS}, SWEEP_WORDS)

    def _place(self, path: Path, wd: Path) -> tuple[Path, Path, dict[str, str]]:
        scen = _scenarios(wd)
        sweeps = _fresh(wd / "sweeps")
        f = sweeps / "in.toml"
        shutil.copy(path, f)
        out = wd / "out"
        shutil.rmtree(out, ignore_errors=True)
        return f, out, {**snapshot(scen), **{"sweeps/" + k: v for k, v in snapshot(sweeps).items()}}

    def _kept(self, wd: Path, before: dict[str, str]) -> list[str]:
        after = {**snapshot(wd / "scenarios"),
                 **{"sweeps/" + k: v for k, v in snapshot(wd / "sweeps").items()}}
        return changed(before, after)

    def execute(self, i: int, path: Path, wd: Path, name: str = "") -> tuple[str, str]:
        f, out, before = self._place(path, wd)
        r = self.cli(["sweep", str(f), "-o", str(out), "--dry-run"], wd)
        cls, msg = outcome(r, positioned)
        if self._kept(wd, before):
            return "data_loss", f"changed: {self._kept(wd, before)}\n" + msg
        if os.path.lexists(out):
            return "data_loss", "--dry-run wrote " + ", ".join(os.listdir(out)) + "\n" + msg
        return cls, msg


class SweepRunTarget(SweepTarget):
    """Small mutated sweeps (of TINY) run for real (``-j 2``): then ``--dry-run`` must list the
    failed runs, and only them, as to run (finished runs kept: the state resumes)."""

    kind = "sweep-run"
    #: more runs than this are only dry-run (a mutated grid may have thousands)
    max_runs = 6

    def __init__(self) -> None:
        self.mut = Mutator(dict(SWEEPS), SWEEP_WORDS)

    def execute(self, i: int, path: Path, wd: Path, name: str = "") -> tuple[str, str]:
        f, out, before = self._place(path, wd)
        dry = self.cli(["sweep", str(f), "-o", str(out), "--dry-run"], wd)
        m = re.search(r"^(\d+) runs, (\d+) to run", dry.out, re.M)
        if dry.code != 0 or m is None or int(m.group(1)) > self.max_runs:
            cls, msg = outcome(dry, positioned)
            return ("dry:" + cls if cls not in BAD else cls), msg
        r = self.cli(["sweep", str(f), "-o", str(out), "-j", "2", "--no-progress"], wd)
        cls, msg = outcome(r, positioned)
        if cls in BAD:
            return cls, msg
        if self._kept(wd, before):
            return "data_loss", f"changed: {self._kept(wd, before)}\n" + msg
        failed = re.search(r"^(\d+) runs? failed:", r.err, re.M)
        n_failed = int(failed.group(1)) if failed else 0
        again = self.cli(["sweep", str(f), "-o", str(out), "--dry-run"], wd)
        m2 = re.search(r"^(\d+) runs, (\d+) to run", again.out, re.M)
        if r.code in (0, 1) and (m2 is None or int(m2.group(2)) != n_failed):
            return "not_resumable", (f"{n_failed} runs failed, the dry-run after it: "
                                     f"{m2.group() if m2 else again.err[-500:]}\n" + msg)
        tmp = leftover_tmp(out)
        if tmp:
            return "half_written", f"left {tmp}\n" + msg
        return cls, msg


class ScriptTarget(_Target):
    """``bufferlab mininet SCRIPT.py`` of mutated scripts. The script's own mistakes are its
    traceback from its own first frame (``script_error``), as ``python SCRIPT.py`` prints;
    a traceback that starts elsewhere (in bufferlab) is ``traceback``."""

    kind = "script"
    suffix = ".py"
    timeout_s = 40.0

    def __init__(self) -> None:
        seeds = {p.name: p.read_text(encoding="utf-8")
                 for p in sorted((ROOT / "examples/mininet").glob("*.py"))}
        self.mut = Mutator({**seeds, **SCRIPTS}, PY_WORDS + KEYWORDS[:60], mut_python)

    def execute(self, i: int, path: Path, wd: Path, name: str = "") -> tuple[str, str]:
        src = _fresh(wd / "src")
        script = src / name
        shutil.copy(path, script)
        (src / "notes.txt").write_text("the user's notes\n")
        out = wd / "out"
        shutil.rmtree(out, ignore_errors=True)
        before = snapshot(src)
        rng = random.Random(f"script-stdin:{i}")
        stdin = "\n".join(rng.choice(MN_CLI) for _ in range(rng.randint(0, 6))) + "\n"
        r = self.cli(["mininet", "-o", str(out), str(script), *SCRIPT_ARGS.get(name, [])], wd, stdin.encode())
        cls, msg = outcome(r, _names(script, name))
        if r.code == 1 and cls in ("traceback", "other", "failed"):
            cls = _script_traceback(r.err, script, cls)
        if changed(before, snapshot(src)):
            return "data_loss", f"changed: {changed(before, snapshot(src))}\n" + msg
        return cls, msg


def _script_traceback(err: str, script: Path, cls: str) -> str:
    """``script_error`` for an exit 1 as python prints a script's own exception: a traceback
    whose first frame is the script, or a SyntaxError's location in it (no traceback); else
    ``cls``."""
    at = err.find("Traceback (most recent call last)")
    frames = re.findall(r'^  File "([^"]+)", line \d+', err[at:] if at >= 0 else "", re.M)
    if frames and frames[0] == str(script):
        return "script_error"
    syntax = rf'^  File "{re.escape(str(script))}", line \d+\n(.*\n)*\w*Error: '
    if at < 0 and re.search(syntax, err, re.M):
        return "script_error"
    return cls


class MnTarget(_Target):
    """``bufferlab mn`` with generated argument lists (and the CLI's input on stdin)."""

    kind = "mn"
    suffix = ".json"
    timeout_s = 40.0

    def make(self, seed: int | str, i: int) -> tuple[str, bytes]:
        rng = random.Random(f"{seed}:{self.kind}:{i}")

        def num() -> str:
            return str(rng.randint(1, 5)) if rng.random() < 0.8 else rng.choice(INTERESTING_NUMBERS)

        def word() -> str:
            return rng.choice(KEYWORDS + MN_LINK_KEYS)

        argv: list[str] = []
        if rng.random() < 0.9:
            argv += ["--topo", rng.choice(MN_TOPOS).format(n=num(), m=num(), w=word())]
        if rng.random() < 0.7:
            items = ["tc"] if rng.random() < 0.9 else [rng.choice(["default", "tcx", word(), ""])]
            for _ in range(rng.randint(0, 5)):
                key = rng.choice(MN_LINK_KEYS)
                value = rng.choice([num(), num() + rng.choice(UNITS), "", "True", "x", "1e400"])
                items.append(key if rng.random() < 0.15 else f"{key}={value}")
            argv += ["--link", ",".join(items)]
        test = rng.choice([None, None, "pingall", "pingpair", "iperf", "iperfudp", "none", word()])
        if test is not None:
            argv += ["--test", test]
        if rng.random() < 0.1:
            argv += rng.choice([["--switch", "ovsk"], ["--controller", "remote"], ["--mac"], ["-x"],
                                ["--nat"], ["--topo"], ["--link"], ["--custom"], ["-v", "debug"]])
        custom = None
        if rng.random() < 0.15:
            custom = MN_CUSTOM if rng.random() < 0.5 else Mutator({"c.py": MN_CUSTOM}, PY_WORDS,
                                                                   mut_python).make(seed, i)[1].decode(
                                                                       "utf-8", "replace")
            argv += ["--custom", "CUSTOM"]
            if rng.random() < 0.7 and "--topo" in argv:
                argv[argv.index("--topo") + 1] = "pair," + num()
        lines = []
        for _ in range(rng.randint(0, 8)):
            line = rng.choice(MN_CLI)
            if rng.random() < 0.3:
                line = mut_word(rng, " " + line, MN_CLI, KEYWORDS).strip()
            if rng.random() < 0.2:
                line = mut_number(rng, line)
            lines.append(line)
        doc = {"argv": argv, "stdin": "\n".join(lines) + ("\n" if lines else ""), "custom": custom}
        return "mn", json.dumps(doc, indent=1).encode()

    def execute(self, i: int, path: Path, wd: Path, name: str = "") -> tuple[str, str]:
        doc = json.loads(path.read_bytes())
        cwd = _fresh(wd / "cwd")
        (cwd / "notes.txt").write_text("the user's notes\n")
        argv = list(doc["argv"])
        if doc["custom"] is not None:
            (cwd / "custom.py").write_text(doc["custom"], encoding="utf-8")
            argv = [str(cwd / "custom.py") if a == "CUSTOM" else a for a in argv]
        before = snapshot(cwd)
        r = self.cli(["mn", *argv, "-o", str(wd / "out")], wd, doc["stdin"].encode(), cwd)
        shutil.rmtree(wd / "out", ignore_errors=True)
        # an error names the argument it is about (--topo X: ..., bufferlab mn: error: argument --link)
        args = [a for a in argv if a.startswith("-")] + ["bufferlab mn: error", "custom.py"]
        cls, msg = outcome(r, _names(*args))
        msg = "argv: " + json.dumps(argv) + "\n" + msg
        if changed(before, snapshot(cwd)):
            return "data_loss", f"changed: {changed(before, snapshot(cwd))}\n" + msg
        return cls, msg


class MnFileTarget(_Target):
    """Mutated MiniEdit files: ``bufferlab convert`` (its scenario must pass ``check``; the
    input unchanged) or, one input in five, a scenario using it (``[topology] mn``)."""

    kind = "mnfile"
    suffix = ".mn"
    timeout_s = 30.0

    def __init__(self) -> None:
        lab = (ROOT / "tests/data/lab.mn").read_text(encoding="utf-8")
        doc = json.loads(lab)
        doc["links"][0]["opts"] = {"bw": 10, "delay": "5ms", "loss": 1, "max_queue_size": 100,
                                   "jitter": "1ms"}
        doc["hosts"][0]["opts"].update(ip="10.0.0.7/24", defaultRoute="10.0.0.254")
        self.mut = Mutator({"lab.mn": lab, "opts.mn": json.dumps(doc, indent=4)},
                           ["hostname", "ip", "ipBase", "nodeNum", "opts", "links", "src", "dest", "bw",
                            "delay", "loss", "max_queue_size", "jitter", "switchType", "legacyRouter",
                            "legacySwitch", "defaultRoute", "startCommand", "hosts", "switches", "version"],
                           mut_json)

    def execute(self, i: int, path: Path, wd: Path, name: str = "") -> tuple[str, str]:
        src = _fresh(wd / "src")
        mn = src / "lab.mn"
        shutil.copy(path, mn)
        out = src / "lab.toml"
        mode = random.Random(f"mnfile:{i}").random()
        if mode < 0.2:  # a scenario that reads the .mn itself
            out.write_text('name = "lab"\n[topology]\nmn = "lab.mn"\n\n[[part]]\nname = "a"\n'
                           'cmds = ["h1: ping -c 1 10.0.0.2"]\n', encoding="utf-8")
            before = snapshot(src)
            cls, msg = fuzz.check_one(out)
            if cls == "error_file" or (cls == "error_nopos" and str(mn) in msg):
                cls = "error_pos"
            return ("data_loss", msg) if changed(before, snapshot(src)) else (cls, msg)
        argv = ["convert", str(mn), "-o", str(out)]
        if mode < 0.3:
            out.write_text("the user's own file\n")
            argv.append("--force")
        elif mode < 0.4:
            out.write_text("the user's own file\n")  # without --force: refused, untouched
        before = {"lab.mn": snapshot(src)["lab.mn"]}
        kept_out = out.read_bytes() if out.exists() and "--force" not in argv else None
        r = self.cli(argv, wd)
        cls, msg = outcome(r, _names(mn, out))
        if snapshot(src).get("lab.mn") != before["lab.mn"]:
            return "data_loss", "convert changed its input\n" + msg
        if kept_out is not None and out.read_bytes() != kept_out:
            return "data_loss", "convert replaced a file without --force\n" + msg
        if cls == "ok" and kept_out is None:
            ccls, cmsg = fuzz.check_one(out)
            if ccls != "ok":
                return "mismatch", f"convert wrote a scenario that check refuses ({ccls}):\n{cmsg}\n" + msg
        return cls, msg


# ---------------------------------------------------------------------- damaged results folders

#: the run damaged (two parts: tbf, ping to a file, iperf3 -J, a queue trace, plot_q.sh)
LAB = """name = "lab"
seed = 1

""" + TOPOLOGY + """
[[part]]
name = "a"
cmds = ["s1: tc qdisc add dev s1-eth2 root tbf rate 10mbit burst 32kbit latency 50ms", "h2: iperf3 -s &",
        "h1: ping -c 3 10.0.0.2 > ping.txt &", "h1: iperf3 -c 10.0.0.2 -t 2 -J > c.json"]

[[part]]
name = "b"
cmds = ["admin: plot_q.sh s1-eth2 &", "h1: iperf3 -c 10.0.0.2 -u -b 2M -t 1 -J > u.json"]

[trace]
queues = ["s1-eth2"]
"""
RUBRIC = """name = "lab rubric"
seed = 1

[require]
parts = ["a", "b"]

[[expect]]
name = "goodput"
part = "a"
expr = 'goodput("h1")'
min = 1
"""
#: files damaged more often than the others (every file may be picked)
IMPORTANT = ("summary.json", "run.json", ".bufferlab-results", "tables/", ".parquet", "c.json", "u.json",
             "ping.txt", "report.html", "queue_trace", "sweep.parquet", "q_s1-eth2")
#: where a reader writes (relative to the results folder, the -o parent): links planted there
OUTPUTS = ("report.html", "tables/ping.parquet", "tables/flows.csv", "tables", "a/c.flent.gz",
           "../cmp/compare.html", "../cmp", "../fl/a.flent.gz", "../plot", "../.lab.lock", "lab.prev",
           "summary.json")
DAMAGES = ("truncate", "flip", "delete", "empty", "replace", "json_edit", "json_edit", "json_edit", "dir",
           "symlink", "plant_link", "plant_link", "fifo")
REPLACEMENTS = [b"[" * 100_000 + b"]" * 100_000, b'{"scenario": "\xff"}', b"null", b"[]", b"{}", b'"x"',
                b"1e999", b"9" * 5000, b"PAR1", b"PAR1" + b"\x00" * 64 + b"PAR1", b"\xff\xfe\x00",
                b"{" * 3000,
                b'{"parts": [], "scenario": "x"}', b"\n" * 1000, b'{"a": 1, "a": 2}']


class ResultsTarget(_Target):
    """A finished run's (or sweep's) folder damaged, then a reader on it. Every input is a recipe
    (JSON): the template, the damages, the reader; files are picked by name or index."""

    kind = "results"
    suffix = ".json"
    timeout_s = 60.0
    readers = (("report", 20), ("compare", 14), ("export", 14), ("plot", 8), ("grade", 2), ("run", 3),
               ("sweep", 3), ("sweep-plot", 5))

    def make(self, seed: int | str, i: int) -> tuple[str, bytes]:
        rng = random.Random(f"{seed}:{self.kind}:{i}")
        names, weights = zip(*self.readers, strict=True)
        reader = rng.choices(names, weights)[0]
        template = "sweep" if reader.startswith("sweep") else "run"
        damages = []
        for _ in range(rng.choice([1, 1, 2, 2, 3, 4])):
            op = rng.choice(DAMAGES)
            pick: Any = rng.choice(IMPORTANT) if rng.random() < 0.6 else rng.randrange(10**6)
            damages.append({"op": op, "pick": pick, "r": rng.randrange(10**9),
                            "out": rng.choice(OUTPUTS) if op == "plant_link" else None})
        variant = rng.randrange(4)
        return template, json.dumps({"reader": reader, "variant": variant, "damages": damages}).encode()

    # -- the templates: built once per worker

    def _templates(self, wd: Path) -> Path:
        t = wd / "templates"
        if (t / "done").is_file():
            return t
        shutil.rmtree(t, ignore_errors=True)
        _write_tree(t / "src", {"lab.toml": LAB, "rubric.toml": RUBRIC})
        _write_tree(t / "scenarios", {"tiny.toml": TINY})
        _write_tree(t / "sweeps", {"sw.toml": SWEEPS["grid.toml"].replace("seeds = 2", "seeds = 1")})
        for argv in (["run", "-q", str(t / "src/lab.toml"), "-o", str(t / "run")],
                     ["sweep", str(t / "sweeps/sw.toml"), "-o", str(t / "sweep"), "-j", "1",
                      "--no-progress"]):
            r = fork_cli(argv, wd / "io", 300, 0)
            if r.code != 0:
                raise RuntimeError(f"template {argv}: exit {r.code}\n{r.err}")
        (t / "done").write_text("")
        return t

    def _pick(self, root: Path, pick: Any) -> Path | None:
        files = sorted(p for p in _walk(root) if not p.is_symlink() and (p.is_file() or p.is_dir()))
        if not files:
            return None
        if isinstance(pick, str):
            match = [p for p in files if pick in str(p.relative_to(root)) + ("/" if p.is_dir() else "")]
            return match[len(match) // 2] if match else None
        return files[pick % len(files)]

    def _damage(self, root: Path, d: dict[str, Any], victim: Path) -> str:
        rng = random.Random(d["r"])
        op = d["op"]
        if op == "plant_link":
            at = root / d["out"]
            if any(os.path.lexists(q) and not os.path.isdir(q) for q in at.parents if root in q.parents):
                return f"no link at {d['out']}: an earlier damage put a file where its folder was"
            if os.path.lexists(at) and not os.path.islink(at):
                if at.is_dir():
                    shutil.rmtree(at)
                else:
                    at.unlink()
            at.parent.mkdir(parents=True, exist_ok=True)
            target = victim / ("vdir" if not at.suffix else "target.txt")
            if not os.path.lexists(at):
                at.symlink_to(target)
            return f"link {d['out']} -> {target.name}"
        p = self._pick(root, d["pick"])
        if p is None or not os.path.lexists(p):
            return f"{op}: nothing at {d['pick']!r}"
        rel = str(p.relative_to(root))
        if p.is_dir():
            if op in ("delete", "empty", "truncate", "dir"):
                shutil.rmtree(p)
                if op == "empty":
                    p.write_bytes(b"")
                return f"{op} folder {rel}"
            op = "symlink"
        if op == "symlink":
            _remove(p)
            p.symlink_to(rng.choice([victim / "target.txt", victim / "vdir", victim / "nowhere", p]))
            return f"symlink {rel} -> {os.readlink(p)}"
        if op == "fifo":
            _remove(p)
            os.mkfifo(p)
            return f"fifo {rel}"
        if op == "delete":
            p.unlink()
            return f"delete {rel}"
        if op == "dir":
            p.unlink()
            p.mkdir()
            return f"dir {rel}"
        data = p.read_bytes()
        if op == "truncate":
            n = len(data)
            cut = rng.choice([0, 1, n // 10, n // 2, max(n - 1, 0), max(n - 9, 0)])
            p.write_bytes(data[:cut])
        elif op == "flip" and data:
            b = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            p.write_bytes(bytes(b))
        elif op == "empty":
            p.write_bytes(b"")
        elif op == "replace":
            p.write_bytes(rng.choice(REPLACEMENTS))
        elif op == "json_edit":
            try:
                text = data.decode("utf-8")
                json.loads(text)
            except ValueError:
                p.write_bytes(rng.choice(REPLACEMENTS))
                return f"replace {rel} (not JSON)"
            p.write_text(mut_json(rng, text), encoding="utf-8")
        return f"{op} {rel}"

    def execute(self, i: int, path: Path, wd: Path, name: str = "") -> tuple[str, str]:
        recipe = json.loads(path.read_bytes())
        t = self._templates(wd)
        case = wd / "case"
        _rmtree(case)
        out = case / "out"
        shutil.copytree(t / ("sweep" if recipe["reader"].startswith("sweep") else "run"), out, symlinks=True)
        shutil.copytree(t / "src", case / "src")
        shutil.copytree(t / "scenarios", case / "scenarios")
        shutil.copytree(t / "sweeps", case / "sweeps")
        victim = case / "victim"
        _write_tree(victim, {"target.txt": "precious\n"})
        _write_tree(victim / "vdir", {"keep": "precious\n"})
        (out / "notes.txt").write_text("the user's notes beside the results\n")
        root = out / ("sw" if recipe["reader"].startswith("sweep") else "lab")
        done = [self._damage(root, d, victim) for d in recipe["damages"]]
        outside = {"victim": snapshot(victim), "src": snapshot(case / "src"),
                   "scenarios": snapshot(case / "scenarios"), "notes": snapshot(out)["notes.txt"]}
        argv = self._argv(recipe, case, root)
        r = self.cli(argv, wd, cwd=case)
        cls, msg = outcome(r, _names(case))
        msg = f"damages: {done}\nargv: {argv}\n" + msg
        after = {"victim": snapshot(victim), "src": snapshot(case / "src"),
                 "scenarios": snapshot(case / "scenarios"),
                 "notes": snapshot(out).get("notes.txt") if out.is_dir() else None}
        if after["victim"] != outside["victim"]:
            return "through_symlink", f"victim changed: {changed(outside['victim'], after['victim'])}\n" + msg
        if after != outside:
            what = [k for k in after if after[k] != outside[k]]
            return "data_loss", f"changed outside the results: {what}\n" + msg
        tmp = leftover_tmp(out) if r.code is not None and r.code >= 0 else []
        if tmp:
            return "half_written", f"left {tmp}\n" + msg
        return cls, msg

    def _argv(self, recipe: dict[str, Any], case: Path, root: Path) -> list[str]:
        reader, v = recipe["reader"], recipe["variant"]
        out = case / "out"
        if reader == "report":
            return ["report", str(root)]
        if reader == "compare":
            return ["compare", str(root), *([str(root / "a")] if v % 2 else []), "-o", str(out / "cmp")]
        if reader == "export":
            return ["export", "--flent", str(root if v % 2 else out),
                    *(["-o", str(out / "fl")] if v < 2 else [])]
        if reader == "plot":
            return ["plot", str(root / "a" / "h1" / ("c.json" if v % 2 else "../../b/h1/u.json")),
                    "-o", str(out / "plot")]
        if reader == "grade":
            return ["grade", str(case / "src/lab.toml"), "--rubric", str(case / "src/rubric.toml"),
                    "-o", str(out), "-q"]
        if reader == "run":
            return ["run", "-q", str(case / "src/lab.toml"), "-o", str(out),
                    *(["--no-report"] if v % 2 else [])]
        if reader == "sweep":
            return ["sweep", str(case / "sweeps/sw.toml"), "-o", str(out), "-j", "1", "--no-progress"]
        return ["sweep", "plot", str(root), "--x", "t", "--y", rng_y(v), "-o", str(out / "plot")]


def rng_y(v: int) -> str:
    return ("goodput_bps", "rtt_p99_ms", "drops", "nope")[v]


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p)
    else:
        p.unlink()


def _rmtree(p: Path) -> None:
    """shutil.rmtree that also removes a FIFO or a folder left unwritable."""
    if os.path.lexists(p):
        shutil.rmtree(p, onerror=lambda f, path, e: _remove(Path(path)) if os.path.lexists(path) else None)


TARGETS: dict[str, Callable[[], Any]] = {"sweep": SweepTarget, "sweep-run": SweepRunTarget,
                                         "script": ScriptTarget, "mn": MnTarget, "mnfile": MnFileTarget,
                                         "results": ResultsTarget}


def _preload() -> None:
    """Import every module of bufferlab (and matplotlib) before the workers fork: each child then
    starts at once (with PYTHONDONTWRITEBYTECODE, a module a child imports is compiled anew)."""
    import importlib
    import pkgutil

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

    import bufferlab

    for m in pkgutil.walk_packages(bufferlab.__path__, "bufferlab."):
        try:
            importlib.import_module(m.name)
        except Exception:  # noqa: BLE001 - an optional dependency missing (ray, ...): imported when used
            pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="campaign seed (input i is a function of seed and i)")
    for name in TARGETS:
        ap.add_argument(f"--{name}", type=int, default=0, metavar="N", help=f"inputs of the {name} fuzzer")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes")
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"), help="where failing inputs go")
    ap.add_argument("--mem-mb", type=int, default=3000, help="address-space cap of each command (MB)")
    ap.add_argument("--json", type=Path, help="write the totals here")
    ap.add_argument("--budget-s", type=float, default=float("inf"),
                    help="stop after this many wall seconds (each fuzzer in turn; the totals say what "
                    "was reached)")
    ap.add_argument("--replay", metavar="TARGET:I", help="print input I of TARGET and its outcome")
    a = ap.parse_args(argv)
    _preload()
    if a.replay:
        kind, _, i = a.replay.partition(":")
        target = TARGETS[kind]()
        name, data = target.make(a.seed, int(i))
        sys.stdout.buffer.write(data)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / f"in{target.suffix}"
            p.write_bytes(data)
            print(f"\n--- from {name}: ", *target.execute(int(i), p, Path(d), name), file=sys.stderr)
        return 0
    t0 = time.time()
    deadline = t0 + a.budget_s
    totals: dict[str, Any] = {"seed": a.seed}
    bad = 0
    for name, factory in TARGETS.items():
        n = getattr(a, name.replace("-", "_"))
        if not n:
            continue
        t1 = time.time()
        c: Counter[str] = fuzz.run_pool(factory(), a.seed, n, a.jobs, a.out, a.mem_mb, deadline=deadline)
        dt = time.time() - t1
        totals[name] = {"n": sum(c.values()), "seconds": round(dt, 1),
                        "per_s": round(sum(c.values()) / max(dt, 1e-9), 2), "classes": dict(c)}
        print(f"{name}: {sum(c.values())} in {dt:.1f} s: {fuzz._fmt(c)}", flush=True)
        bad += sum(v for k, v in c.items() if k in BAD)
        if a.json:
            a.json.write_text(json.dumps(totals, indent=2) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
