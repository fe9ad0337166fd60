#!/usr/bin/env python3
"""Mutation fuzzer for ``bufferlab check`` and ``bufferlab run`` (issue 16, docs/fuzzing.md).

Every input is a mutation of a shipped scenario (``scenarios/*.toml``): numbers,
units, option names, line order, quoting, TOML structure and raw bytes are
mutated. Input ``i`` of campaign seed ``S`` is a pure function of (S, i), so
``--replay i`` regenerates it.

* ``check`` runs in worker processes (load + ``Runner.check``, in-process: no
  interpreter start per input). A worker writes each input to its own file
  before checking it, so when a worker dies (abort, signal, out of memory) the
  parent knows which input killed it.
* ``run`` runs each input in a forked child of a process that has imported
  bufferlab once (``--exec`` for a fresh ``python -m bufferlab.cli`` each time),
  with ``--max-wall``/``--max-events``, a wall-clock timeout and a memory cap.

Outcome classes: ``ok`` (exit 0), ``stopped`` (exit 3, a run limit),
``error_pos`` (exit 2 / a BufferlabError naming file:line), ``error_file`` (an
error about the whole file, naming it: a missing table), ``error_nopos``
(exit 2 without a position), ``failed`` (exit 1 with the failed commands
listed), ``traceback``, ``panic`` (a Rust panic), ``signal`` (abort or another
signal, e.g. exit 134), ``hang`` (timeout), ``other``. The bad classes
(error_nopos, traceback, panic, signal, hang, other) are saved under
``--out`` (default ``fuzz-failures/``, not committed) with the message.

    python tools/fuzz.py --checks 20000 --runs 100 --jobs 2
    python tools/fuzz.py --replay-check 1234 --seed 7     # print input 1234
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from bufferlab import registry  # noqa: E402
from bufferlab.commands.sysctl import LINUX_CC  # noqa: E402
from bufferlab.commands.tc.registry import QDISC_KINDS  # noqa: E402

#: errors only a run can find (check accepted the input; the run failed with a position)
RUNTIME_ERRORS = ("did not finish within stop_at", "simulated time stopped advancing")
BAD = ("error_nopos", "traceback", "panic", "signal", "hang", "other",
       # the properties of issue 30 the other entry points' fuzzers check (fuzz_inputs.py,
       # fuzz_signals.py): a process left behind, a file outside the results folders changed,
       # a write through a planted symlink, a half-written output, the last complete run lost,
       # a state that does not resume, a lock refusal without its holder, and what a
       # command's own output says it should be but is not (convert's scenario not checking)
       "leftover", "data_loss", "through_symlink", "half_written", "lost_complete_run",
       "not_resumable", "holder_unnamed", "mismatch")
POS_RE = re.compile(r"\.toml(:\d+)+: (error|warning)")
#: an error about the file as a whole (a missing table, not UTF-8 ...) names just the file
FILE_RE = re.compile(r"\.toml: error")

# ---------------------------------------------------------------------- mutation

INTERESTING_NUMBERS = [
    "0", "-0", "-1", "1", "2", "7", "255", "256", "65535", "65536", "2147483647", "2147483648",
    "4294967295", "4294967296", "9223372036854775807", "18446744073709551615",
    "18446744073709551616", "99999999999999999999", "1e400", "1e30", "1e23", "1e-30", "-1e400",
    "0.0001", "0.5", "1.5", "nan", "inf", "-inf", "0x10", "010", "1_000", "+5", "1e", ".5", "5.",
    "100000", "1000000000", "3600", "1e9", "123456789012",
]
UNITS = [
    "", "s", "ms", "us", "ns", "sec", "usec", "msec", "m", "h", "bit", "kbit", "mbit", "gbit", "tbit",
    "bps", "kbps", "mbps", "gbps", "Mbit", "M", "K", "G", "T", "k", "b", "kb", "mb", "gb", "B", "KB",
    "MB", "%", "pct", "KiB", "mibit", "x", "\u00b5s",
]
KEYWORDS = [
    "tc", "qdisc", "class", "filter", "add", "change", "replace", "del", "show", "dev", "root", "parent",
    "handle", "bands", "priomap", "multiqueue", "memlimit", "coupling_factor",
    "step_thresh", "min_qlen_step", "drop_on_overload", "overflow", "drop_enqueue", "drop_dequeue",
    "classic_protection", "max_rtt", "typical_rtt", "alpha", "beta", "tupdate", "split_gso",
    "no_split_gso", "l4s_ect", "any_ect", "5p", "u32", "match", "flowid", "1:2", "delay", "loss",
    "rate", "burst", "limit", "latency", "peakrate", "mtu", "min", "max",
    "avpkt", "probability", "bandwidth", "ecn", "adaptive", "harddrop", "duplicate", "reorder",
    "corrupt", "gap", "distribution", "normal", "pareto", "slot", "gemodel", "state", "target",
    "interval", "quantum", "flows", "noecn", "sysctl", "-w", "net.ipv4.tcp_congestion_control=bbr",
    "net.ipv4.tcp_congestion_control=dctcp", "net.ipv4.tcp_ecn=1", "net.ipv4.tcp_ecn_fallback=0",
    "net.ipv4.tcp_congestion_control=vegas", "net.core.rmem_max=1",
    "iperf3", "-c", "-s", "-u", "-b", "-t", "-i", "-J", "-P", "-R", "-w", "-C",
    "-l", "-n", "-k", "-p", "-O", "-A", "-M", "-N", "-Z", "--pacing-timer", "--fq-rate", "-S", "ping",
    "-c", "-i", "-s", "-W", "-q", "-D", "-Q", "cbr", "poisson", "onoff", "bulk", "sink", "-r", "--on",
    "--off", "plot_q.sh", "plot_iperf.sh", "tcpdump", "tshark", "-w", "-s", "-c", "udp", "tcp", "host",
    "port", "less", "greater", "and", "or", "not", "ethtool", "-K", "tso", "gso", "gro", "off", "on",
    "sleep", "echo", "cd", "mkdir", "-p", "sudo", "./tc", "&", "&&", "||", ";", ">", ">>", "|", "true",
    "false", "h1", "h2", "h3", "s1", "s1-eth1", "s1-eth2", "s2-eth1", "eth0", "h1-eth0", "admin",
    "10.0.0.1", "10.0.0.3", "10.0.0.255", "1:", "1:0", "10:", "ffff:", "1:1", "0:", "$HOME", "~",
    # fq, sfq, fq_pie (docs/semantics/qdiscs.md §15-17)
    "flow_limit", "initial_quantum", "maxrate", "buckets", "pacing", "nopacing",
    "refill_delay", "low_rate_threshold", "orphan_mask", "ce_threshold", "timer_slack", "horizon",
    "horizon_drop", "horizon_cap", "bands", "priomap", "weights", "defrate", "perturb", "divisor",
    "depth", "headdrop", "redflowlimit", "tupdate", "alpha", "beta", "memory_limit", "ecn_prob",
    "bytemode", "nobytemode", "dq_rate_estimator", "no_dq_rate_estimator",
    # drr, ets, hfsc (tc/q_drr.c, q_ets.c, q_hfsc.c)
    "bands", "strict", "quanta", "priomap", "default", "rt", "ls", "sc", "ul",
    "m1", "d", "m2", "umax", "dmax", "classid", "flowid", "u32", "match", "ip", "dport", "sport",
]
# cake (tc/q_cake.c): every keyword cake_parse_opt knows
KEYWORDS += [
    "unlimited", "autorate-ingress", "rtt", "overhead", "mpu", "memlimit", "fwmark", "raw",
    "conservative", "via-ethernet", "help", "datacentre", "lan", "metro", "regional", "internet", "oceanic",
    "satellite", "interplanetary", "besteffort", "precedence", "diffserv8", "diffserv4", "diffserv",
    "diffserv3", "flowblind", "srchost", "dsthost", "hosts", "dual-srchost", "dual-dsthost",
    "triple-isolate", "ipoa-vcmux", "ipoa-llcsnap", "bridged-vcmux", "bridged-llcsnap", "pppoa-vcmux",
    "pppoa-llc", "pppoe-vcmux", "pppoe-llcsnap", "pppoe-ptm", "bridged-ptm", "ethernet", "ether-vlan",
    "docsis", "nat", "nonat", "wash", "nowash", "split-gso", "no-split-gso", "ingress", "egress",
    "no-ack-filter", "ack-filter", "ack-filter-aggressive", "ptm", "atm", "noatm",
    "egress", "ffff:fff1", "ffff:fff2", "ffff:fff3", "protocol", "all", "ip", "pref",
    "matchall", "flower", "action", "actions", "mirred", "redirect", "mirror", "police", "conform-exceed",
    "drop/ok", "continue/pipe", "reclassify", "pass", "ok", "pipe", "continue", "shot", "gact", "drop",
    "mpu", "overhead", "linklayer", "atm", "avrate", "classid", "skip_hw", "at", "ifb", "ifb0",
    "ifb4eth0", "link", "type", "name", "up", "ip",
    # tc filter show (tc/tc_filter.c tc_filter_list)
    "list", "lst", "chain", "block", "preference", "priority", "0", "ffff:fff3", "800::800",
    # flower (tc/f_flower.c flower_parse_opt): the keys bufferlab reads and some it refuses
    "ip_proto", "src_ip", "dst_ip", "src_port", "dst_port", "ip_tos", "ip_ttl", "ip_flags", "indev",
    "skip_sw", "verbose", "hw_tc", "dst_mac", "src_mac", "tcp_flags", "vlan_id", "ct_state", "type",
    "code", "frag", "nofrag", "firstfrag", "frag/nofirstfrag", "sctp", "icmp", "icmpv6", "5201",
    "1000-2000", "2000-1000", "5201/0xff00", "10.0.0.0/24", "0x10/0xfc", "64", "11", "1:10",
]
# every qdisc kind the tc parser knows and every congestion control the engine registers
# (bufferlab.registry), with the Linux ones it refuses by name
KEYWORDS += [*QDISC_KINDS, *registry.CONGESTION_CONTROLS, *LINUX_CC]
SHELL_NOISE = ["'", '"', "\\", "\\\\", "&", ";", "|", ">", "<", "$(", "`", "#", "\t", "  ", "\\\"", "\\n",
               "\u00e9", "\x00", "\x7f", "\ud7ff", "\u202e", "\U0001f600", "*", "?", "[", "]", "{", "}"]
TOML_NOISE = ["[", "]", "[[", "]]", "{", "}", "=", ",", '"', "'", '"""', "'''", "\n", "#", ".", "\\",
              "[[part]]\n", "[part]\n", "[sim]\n", "[topology]\n", "[trace]\n", "[capture]\n", "[hosts.h1]\n",
              "true", "false", "[]", "{}", "1979-05-27T07:32:00Z", "= 1\n", "x = ", "\r\n", "\ufeff"]
SIM_LINES = [
    'queue_sample_interval = "{n}{u}"', 'stop_at = "{n}{u}"', 'part_gap = "{n}{u}"', "gso = {b}",
    "host_packet_ns = {n}", "host_byte_ps = {n}", "host_wakeup_ns = {n}", 'profile = "{w}"',
    'ping_style = "{w}"', 'iperf3_version = "{w}"', "red_adaptive_timer = {b}", "{w} = {n}",
    'host_noise = {{ median = "{n}{u}", p99 = "{n}{u}", max = "{n}{u}" }}', "host_noise = {b}",
]

NUM_RE = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
NUM_UNIT_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)([A-Za-z%]+)")
WORD_RE = re.compile(r"(?<=[\s\"'])(-{1,2}[A-Za-z][\w-]*|[a-z_][\w.]*)")


def _pick_number(rng: random.Random, old: str) -> str:
    r = rng.random()
    if r < 0.55:
        return rng.choice(INTERESTING_NUMBERS)
    try:
        v = float(old)
    except ValueError:
        v = 1.0
    if r < 0.8:
        v *= rng.choice([0, 0.001, 0.1, 0.5, 2, 10, 1000, 1e6, 1e12, -1])
        return repr(int(v)) if abs(v) < 1e18 and v == int(v) else repr(v)
    return str(rng.randint(-10, 10**rng.randint(1, 22)))


def mut_number(rng: random.Random, text: str) -> str:
    ms = list(NUM_RE.finditer(text))
    if not ms:
        return text
    m = rng.choice(ms)
    return text[: m.start()] + _pick_number(rng, m.group()) + text[m.end():]


def mut_unit(rng: random.Random, text: str) -> str:
    ms = list(NUM_UNIT_RE.finditer(text))
    if not ms:
        return mut_number(rng, text)
    m = rng.choice(ms)
    num = m.group(1) if rng.random() < 0.6 else _pick_number(rng, m.group(1))
    return text[: m.start()] + num + rng.choice(UNITS) + text[m.end():]


def mut_word(rng: random.Random, text: str, corpus_words: list[str], vocab: list[str] = KEYWORDS) -> str:
    """Replace, drop, duplicate or misspell an option name / keyword (from ``vocab``, the corpus)."""
    ms = list(WORD_RE.finditer(text))
    if not ms:
        return text
    m = rng.choice(ms)
    w = m.group()
    r = rng.random()
    if r < 0.35:
        new = rng.choice(vocab)
    elif r < 0.55:
        new = rng.choice(corpus_words)
    elif r < 0.7:
        new = ""
    elif r < 0.8:
        new = w + " " + w
    elif r < 0.9 and len(w) > 1:  # misspelling
        i = rng.randrange(len(w))
        new = w[:i] + w[i + 1:] if rng.random() < 0.5 else w[:i] + rng.choice("abcxyz-_=0") + w[i:]
    else:
        new = w + " " + rng.choice(vocab) + " " + rng.choice(INTERESTING_NUMBERS)
    return text[: m.start()] + new + text[m.end():]


def mut_lines(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    r = rng.random()
    if r < 0.35:
        lines[i], lines[j] = lines[j], lines[i]
    elif r < 0.6:
        lines.insert(j, lines[i])
    elif r < 0.85:
        del lines[i]
    else:  # move a block
        k = min(len(lines), i + rng.randint(1, 8))
        block = lines[i:k]
        del lines[i:k]
        j = rng.randrange(len(lines) + 1)
        lines[j:j] = block
    return "\n".join(lines)


def mut_command_lines(rng: random.Random, text: str) -> str:
    """Swap, duplicate or drop entries of a ``cmds = [...]`` list (quoted command lines)."""
    cmds = list(re.finditer(r'^\s*"[^"\n]*",?\s*$', text, re.M))
    if len(cmds) < 2:
        return mut_lines(rng, text)
    a, b = rng.sample(cmds, 2)
    if a.start() > b.start():
        a, b = b, a
    r = rng.random()
    if r < 0.5:
        return text[: a.start()] + b.group() + text[a.end(): b.start()] + a.group() + text[b.end():]
    if r < 0.8:
        return text[: b.end()] + "\n" + a.group() + text[b.end():]
    return text[: a.start()] + text[a.end():]


def mut_quoting(rng: random.Random, text: str) -> str:
    idx = [i for i, c in enumerate(text) if c in "\"'"]
    r = rng.random()
    if idx and r < 0.4:
        i = rng.choice(idx)
        return text[:i] + rng.choice(["", "'", '"', '\\"', "\"'\"", "'\"'"]) + text[i + 1:]
    i = rng.randrange(len(text) + 1) if text else 0
    # inside a command string most of the time
    qs = [m.start() + 1 for m in re.finditer(r'"[a-z0-9]+: ', text)]
    if qs and rng.random() < 0.8:
        q = rng.choice(qs)
        end = text.find('"', q)
        i = rng.randint(q, end if end > q else q)
    return text[:i] + rng.choice(SHELL_NOISE) + text[i:]


def mut_toml(rng: random.Random, text: str) -> str:
    r = rng.random()
    if r < 0.35:
        i = rng.randrange(len(text) + 1)
        return text[:i] + rng.choice(TOML_NOISE) + text[i:]
    if r < 0.5:  # a [sim] key with a random value
        line = rng.choice(SIM_LINES).format(
            n=rng.choice(INTERESTING_NUMBERS), u=rng.choice(UNITS),
            b=rng.choice(["true", "false", "1", '"x"']),
            w=rng.choice(["lab2019", "modern", "x", "", "3.12", "3.1", "old"]),
        )
        if "[sim]" in text:
            return text.replace("[sim]", "[sim]\n" + line, 1)
        return text.replace("[topology]", "[sim]\n" + line + "\n\n[topology]", 1)
    if r < 0.6:  # a part key
        key = rng.choice(["duration", "stop", "interrupt", "allow_fail", "name", "cmds", "x"])
        val = rng.choice(['"1s"', '"0s"', '"1e400s"', '"-1s"', '["all"]', '["h9"]', "1", "[]", '"a/b"',
                          '"..\\/x"', '"."', '""'])
        return text.replace("[[part]]", f"[[part]]\n{key} = {val}", 1)
    if r < 0.7:  # deep nesting
        d = rng.choice([5, 50, 300, 2000])
        return text + "\nx = " + "[" * d + "]" * d + "\n"
    if r < 0.8:  # truncate
        return text[: rng.randrange(len(text) + 1)]
    if r < 0.9:  # break an inline table / array
        ms = [m.start() for m in re.finditer(r"[\[\]{},=]", text)]
        if ms:
            i = rng.choice(ms)
            return text[:i] + text[i + 1:]
        return text
    # [[part]] header duplicated/removed
    if "[[part]]" in text and rng.random() < 0.5:
        return text.replace("[[part]]", "", 1)
    return text.replace("[[part]]", "[[part]]\nname = \"dup\"\ncmds = []\n\n[[part]]", 1)


def mut_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not b:
            break
        i = rng.randrange(len(b))
        r = rng.random()
        if r < 0.4:
            b[i] ^= 1 << rng.randrange(8)
        elif r < 0.7:
            b[i:i] = bytes([rng.choice([0, 0x80, 0xC3, 0xFF, 0xFE, 0xEF, 0x0D, 0x1B])])
        else:
            del b[i]
    return bytes(b)


def mut_splice(rng: random.Random, text: str, seeds: list[str]) -> str:
    """Insert a command line from another shipped scenario into a cmds list."""
    other = rng.choice(seeds)
    cmds = re.findall(r'^\s*"[a-z0-9]+: [^"\n]*",?\s*$', other, re.M)
    here = [m.end() for m in re.finditer(r"cmds = \[\s*\n", text)]
    if not cmds or not here:
        return text
    i = rng.choice(here)
    line = rng.choice(cmds).rstrip()
    if not line.endswith(","):
        line += ","
    return text[:i] + line + "\n" + text[i:]


class Mutator:
    def __init__(self, seeds: dict[str, str], vocab: list[str] = KEYWORDS,
                 structure: Callable[[random.Random, str], str] | None = None) -> None:
        """``seeds``: name -> text of the inputs mutated; ``vocab``: the words option names are
        replaced with (with the corpus's own); ``structure``: the format's structure mutation
        (TOML's by default)."""
        self.names = sorted(seeds)
        self.seeds = [seeds[n] for n in self.names]
        self.vocab = vocab
        self.structure = structure or mut_toml
        words: set[str] = set()
        for s in self.seeds:
            words.update(m.group() for m in WORD_RE.finditer(s))
        self.words = sorted(words)

    def make(self, campaign_seed: int | str, i: int) -> tuple[str, bytes]:
        """Input ``i``: (name of the seed input, the mutated bytes)."""
        rng = random.Random(f"{campaign_seed}:{i}")
        k = rng.randrange(len(self.seeds))
        text = self.seeds[k]
        n = rng.choice([1, 1, 1, 2, 2, 3, 4, 6])
        raw = False
        for _ in range(n):
            r = rng.random()
            if r < 0.22:
                text = mut_number(rng, text)
            elif r < 0.38:
                text = mut_unit(rng, text)
            elif r < 0.56:
                text = mut_word(rng, text, self.words, self.vocab)
            elif r < 0.64:
                text = mut_lines(rng, text)
            elif r < 0.72:
                text = mut_command_lines(rng, text)
            elif r < 0.82:
                text = mut_quoting(rng, text)
            elif r < 0.92:
                text = self.structure(rng, text)
            elif r < 0.97:
                text = mut_splice(rng, text, self.seeds)
            else:
                raw = True
        data = text.encode("utf-8", "surrogatepass")
        if raw:
            data = mut_bytes(rng, data)
        return self.names[k], data


def load_seeds() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "scenarios").glob("*.toml"))}


# ---------------------------------------------------------------------- check (in-process)


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):  # noqa: ANN001
    raise _Timeout()


def _error_class(msg: str) -> str:
    first = msg.split("\n", 1)[0]
    if POS_RE.search(first):
        return "error_pos"
    return "error_file" if FILE_RE.search(first) else "error_nopos"


def check_one(path: Path, timeout_s: float = 10.0) -> tuple[str, str]:
    """(class, message) of ``bufferlab check path`` done in-process."""
    from bufferlab.errors import BufferlabError
    from bufferlab.run.scheduler import Runner
    from bufferlab.scenario.load import load_scenario

    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        sc = load_scenario(path)
        Runner(sc).check()
        return "ok", ""
    except _Timeout:
        return "hang", f"check took more than {timeout_s:g} s"
    except BufferlabError as e:
        msg = str(e)
        return _error_class(msg), msg
    except RecursionError:
        return "traceback", traceback.format_exc(limit=-8)
    except Exception as e:  # noqa: BLE001
        name = type(e).__name__
        cls = "panic" if name == "PanicException" else "traceback"
        return cls, traceback.format_exc(limit=-8)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


class CheckTarget:
    """``bufferlab check`` of mutated shipped scenarios, in-process (the pool's default target).

    A target is what :func:`run_pool` fuzzes: ``kind`` (names saved inputs), ``suffix`` (of
    the input file), ``make(seed, i)`` -> (name of the seed input, bytes) and
    ``execute(i, path, workdir, name)`` -> (class, message) for the input written at ``path``
    (``name``: its seed input's)."""

    kind = "check"
    suffix = ".toml"

    def __init__(self) -> None:
        self.mut = Mutator(load_seeds())

    def make(self, seed: int | str, i: int) -> tuple[str, bytes]:
        return self.mut.make(seed, i)

    def execute(self, i: int, path: Path, workdir: Path, name: str = "") -> tuple[str, str]:
        return check_one(path)


def target_worker(target, seed: int, start: int, stop: int, step: int, workdir: Path,  # noqa: ANN001
                  mem_mb: int, out_fd: int, deadline: float = float("inf")) -> None:
    """Inputs start, start+step, ... < stop of ``target``; one JSON line per bad outcome and a
    progress line every 500 inputs or 20 s, on ``out_fd``."""
    _limit_memory(mem_mb)
    signal.signal(signal.SIGALRM, _alarm)
    become_subreaper()
    gc.freeze()  # the imported modules stay shared with each forked child (copy-on-write)
    # the interpreter's default recursion limit, as the bufferlab command has (a deeper limit
    # here hid tomllib's RecursionError on deep nesting, which runs then found)
    out = os.fdopen(out_fd, "w", buffering=1)
    counts: Counter[str] = Counter()
    cur = workdir / f"current{target.suffix}"
    done, last = 0, time.time()
    for i in range(start, stop, step):
        if time.time() > deadline:
            break
        name, data = target.make(seed, i)
        (workdir / "index").write_text(str(i))
        cur.write_bytes(data)
        cls, msg = target.execute(i, cur, workdir, name)
        counts[cls] += 1
        done += 1
        if cls in BAD:
            out.write(json.dumps({"i": i, "seed_file": name, "class": cls, "msg": msg[-4000:]}) + "\n")
        if done % 500 == 0 or time.time() - last > 20:
            last = time.time()
            out.write(json.dumps({"progress": done, "counts": counts}) + "\n")
            counts = Counter()
    out.write(json.dumps({"progress": done, "counts": counts, "end": True}) + "\n")
    out.close()


def _limit_memory(mem_mb: int) -> None:
    if mem_mb > 0:
        b = mem_mb * 1024 * 1024
        try:
            resource.setrlimit(resource.RLIMIT_AS, (b, b))
        except (ValueError, OSError):
            pass


def run_checks(seed: int, n: int, jobs: int, outdir: Path, mem_mb: int, log=print,  # noqa: ANN001
               deadline: float = float("inf")) -> Counter:
    """n check inputs over ``jobs`` worker processes (:func:`run_pool` of :class:`CheckTarget`)."""
    return run_pool(CheckTarget(), seed, n, jobs, outdir, mem_mb, log, deadline)


def run_pool(target, seed: int, n: int, jobs: int, outdir: Path, mem_mb: int, log=print,  # noqa: ANN001
             deadline: float = float("inf")) -> Counter:
    """n inputs of ``target`` over ``jobs`` worker processes; a worker that dies is restarted after
    the input that killed it, which is recorded as a 'signal' (or 'other') failure."""
    import select

    totals: Counter[str] = Counter()
    tmp = Path(tempfile.mkdtemp(prefix=f"bufferlab-fuzz-{target.kind}-"))
    workers: dict[int, dict] = {}

    def spawn(w: int, start: int) -> None:
        wd = tmp / f"w{w}"
        wd.mkdir(exist_ok=True)
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            code = 0
            try:
                target_worker(target, seed, start, n, jobs, wd, mem_mb, wfd, deadline)
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                code = 70
            os._exit(code)
        os.close(wfd)
        workers[w] = {"pid": pid, "fd": r, "buf": b"", "wd": wd, "start": start, "ended": False}

    for w in range(jobs):
        spawn(w, w)
    t0 = time.time()
    last = t0
    while workers:
        fds = {v["fd"]: k for k, v in workers.items()}
        ready, _, _ = select.select(list(fds), [], [], 5.0)
        for fd in ready:
            w = fds[fd]
            st = workers[w]
            chunk = os.read(fd, 1 << 16)
            if chunk:
                st["buf"] += chunk
                *lines, st["buf"] = st["buf"].split(b"\n")
                for line in lines:
                    rec = json.loads(line)
                    if "progress" in rec:
                        totals.update(rec["counts"])
                        st["ended"] = st["ended"] or rec.get("end", False)
                    else:
                        _save(outdir, target.kind, seed, rec["i"], rec["seed_file"], rec["class"], rec["msg"],
                              target.make(seed, rec["i"])[1], target.suffix)
                continue
            # EOF: the worker ended or died
            os.close(fd)
            _, status = os.waitpid(st["pid"], 0)
            del workers[w]
            if st["ended"]:
                continue
            idx_file = st["wd"] / "index"
            i = int(idx_file.read_text()) if idx_file.exists() else st["start"]
            cls = "signal" if os.WIFSIGNALED(status) else "other"
            msg = (f"worker died: signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"worker died: exit {os.WEXITSTATUS(status)}")
            totals[cls] += 1
            cur = st["wd"] / f"current{target.suffix}"
            _save(outdir, target.kind, seed, i, "?", cls, msg, cur.read_bytes() if cur.exists() else b"",
                  target.suffix)
            # progress lines are every 500 inputs: count the unreported ones as done (unknown class)
            nxt = i + jobs
            if nxt < n:
                idx_file.unlink(missing_ok=True)
                spawn(w, nxt)
        if time.time() - last > 30:
            last = time.time()
            done = sum(v for k, v in totals.items() if not k.endswith("!"))
            rate = done / (last - t0)
            log(f"  {target.kind}: {done}/{n} in {last - t0:.0f} s ({rate:.1f}/s) {_fmt(totals)}")
    shutil.rmtree(tmp, ignore_errors=True)
    return Counter({k: v for k, v in totals.items() if not k.endswith("!")})


def _fmt(c: Counter) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(c.items()) if not k.endswith("!"))


def _save(outdir: Path, kind: str, seed: int, i: int, seed_file: str, cls: str, msg: str,
          data: bytes, suffix: str = ".toml") -> None:
    d = outdir / cls
    d.mkdir(parents=True, exist_ok=True)
    stem = f"{kind}-s{seed}-{i}"
    (d / f"{stem}{suffix}").write_bytes(data)
    (d / f"{stem}.txt").write_text(f"{kind} input {i} of seed {seed} (from {seed_file}): {cls}\n\n{msg}\n",
                                   encoding="utf-8", errors="replace")


# ---------------------------------------------------------------------- the CLI in a forked child


@dataclass
class CliResult:
    """How a ``bufferlab`` command run by :func:`fork_cli` ended."""

    #: exit status; -N when signal N ended it; None if it had to be killed (a hang)
    code: int | None
    out: str
    err: str
    #: it ran past its timeout (SIGTERM then ended it, unless ``code`` is None)
    timed_out: bool = False
    #: processes of its session still alive 3 s after it ended (then killed)
    leftover: list[int] = field(default_factory=list)


def _cli_child(argv: list[str], work: Path, cwd: Path, mem_mb: int) -> None:
    """In a forked child: ``bufferlab ARGV`` in ``cwd`` as the command runs it (``sys.argv`` set,
    ``main()``, the command's own SIGINT handler until a command installs its own), stdin from
    work/stdin, stdout and stderr to work/stdout and work/stderr; exits with its status."""
    import bufferlab

    _limit_memory(mem_mb)
    for sig in (signal.SIGALRM, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    sys.argv = ["bufferlab", *argv]
    for fd, name, flags in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        f = os.open(str(work / name), flags, 0o644)
        os.dup2(f, fd)
        os.close(f)
    # Python's own streams onto those descriptors: under pytest they are capture objects that
    # write elsewhere, and the CLI's messages would never reach the files classified
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - lives until os._exit
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    os.chdir(cwd)
    code = 1
    try:
        from bufferlab.cli import main

        signal.signal(signal.SIGINT, bufferlab._interrupted_while_importing)  # the command's, from here
        code = main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:  # noqa: BLE001 - a traceback is what we classify
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _wait(pid: int, timeout_s: float) -> int | None:
    """The wait status of child ``pid``, or None if it is still running after ``timeout_s``
    (woken the moment it ends through a pidfd, Linux 5.3; else by polling)."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        import select

        try:
            select.select([fd], [], [], timeout_s)
        finally:
            os.close(fd)
        wpid, status = os.waitpid(pid, os.WNOHANG)
        return status if wpid else None
    t_end = time.monotonic() + timeout_s
    delay = 0.002
    while True:
        wpid, status = os.waitpid(pid, os.WNOHANG)
        if wpid:
            return status
        if time.monotonic() > t_end:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def session_members(sid: int) -> list[int]:
    """Live (not zombie) processes of session ``sid`` (Linux /proc)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] != b"Z":
            found.append(int(d))
    return found


#: this process adopts the orphans of its descendants (prctl PR_SET_CHILD_SUBREAPER): a command
#: that left a process behind then left it a child of ours (a pool worker sets it)
_SUBREAPER = False


def become_subreaper() -> None:
    """Adopt orphaned descendants (Linux); :func:`fork_cli` then scans for leftovers only when
    one was adopted, instead of after every command."""
    global _SUBREAPER
    try:
        import ctypes

        _SUBREAPER = ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        _SUBREAPER = False


def _adopted() -> list[int]:
    """Children of this process (with :func:`become_subreaper`: adopted orphans too)."""
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                found += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return found


def _left_adopted(grace_s: float = 3.0) -> list[int]:
    """The orphans this subreaper adopted still alive after ``grace_s`` seconds (processes a
    command left behind), killed; every adopted one reaped."""
    t_end = time.monotonic() + grace_s
    alive = _adopted()
    while alive:
        for p in alive:
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass
        alive = [p for p in _adopted() if not _zombie(p)]
        if not alive or time.monotonic() > t_end:
            break
        time.sleep(0.05)
    for p in alive:
        try:
            os.kill(p, signal.SIGKILL)
            os.waitpid(p, 0)
        except OSError:
            pass
    return alive


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def leftover(sid: int, grace_s: float = 3.0) -> list[int]:
    """Processes of session ``sid`` still alive after ``grace_s`` seconds; they are killed."""
    t_end = time.monotonic() + grace_s
    alive = session_members(sid)
    while alive and time.monotonic() < t_end:
        time.sleep(0.05)
        alive = session_members(sid)
    for p in alive:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
    return alive


def status_code(status: int) -> int:
    """A wait status as an exit code, -N for signal N (subprocess's convention)."""
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def fork_cli(argv: list[str], work: Path, timeout_s: float, mem_mb: int, stdin: bytes = b"",
             cwd: Path | None = None) -> CliResult:
    """``bufferlab ARGV`` in a forked child (this process has imported bufferlab once) in a
    session of its own, with the memory cap; past ``timeout_s`` it gets SIGTERM, 15 s later
    SIGKILL (a hang). Processes it leaves in its session are reported (and killed)."""
    return fork_end(fork_start(argv, work, mem_mb, stdin, cwd), work, timeout_s)


def fork_start(argv: list[str], work: Path, mem_mb: int, stdin: bytes = b"", cwd: Path | None = None) -> int:
    """Start ``bufferlab ARGV`` as :func:`fork_cli` does; its pid (also its session's id)."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "stdin").write_bytes(stdin)
    # the child's handlers from its first instruction: until it calls main(), as a command
    # still importing (exit 130 on SIGINT, SIGTERM's default); this process's come back after
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, _interrupted_starting)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    pid = -1  # fork failed: this process's handlers come back all the same
    try:
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                _cli_child(argv, work, cwd or work, mem_mb)
            finally:
                os._exit(99)
    finally:
        if pid != 0:
            for sig, handler in saved.items():
                signal.signal(sig, handler)
    return pid


def _interrupted_starting(signum: int, frame: object) -> None:
    os.write(2, b"bufferlab: interrupted\n")
    os._exit(130)


def fork_end(pid: int, work: Path, timeout_s: float) -> CliResult:
    """Wait for a command :func:`fork_start` started (see :func:`fork_cli`)."""
    status = _wait(pid, timeout_s)
    timed_out = status is None
    if status is None:
        os.kill(pid, signal.SIGTERM)
        status = _wait(pid, 15.0)
        if status is None:
            for p in [pid, *session_members(pid)]:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            os.waitpid(pid, 0)
    left = _left_adopted() if _SUBREAPER else leftover(pid)

    def text(name: str) -> str:
        f = work / name
        return f.read_text(errors="replace") if f.exists() else ""

    return CliResult(None if status is None else status_code(status), text("stdout"), text("stderr"),
                     timed_out, left)


# ---------------------------------------------------------------------- runs (subprocess)


def classify_run(code: int | None, stderr: str, timed_out: bool) -> str:
    if timed_out:
        return "hang"
    if "panicked at" in stderr or "PanicException" in stderr:
        return "panic"
    if "Traceback (most recent call last)" in stderr:
        return "traceback"
    if code is None:
        return "other"
    if code < 0 or code >= 128:
        return "signal"
    if code == 0:
        return "ok"
    if code == 3:
        return "stopped"
    if code == 4:  # the run (or a grade's) went well, an [[expect]] entry or requirement failed
        return "expectations"
    if code == 2:
        return _error_class(stderr.strip())
    if code == 1:
        return "failed" if "failed" in stderr else "other"
    return "other"


def run_one(path: Path, work: Path, timeout_s: float, max_wall: float, max_events: int, report: bool,
            mem_mb: int, use_exec: bool) -> tuple[str, str]:
    import subprocess

    work.mkdir(parents=True, exist_ok=True)
    args = ["--max-wall", str(max_wall), "--max-events", str(max_events)]
    if not report:
        args.append("--no-report")
    if use_exec:
        try:
            p = subprocess.run(
                [sys.executable, "-m", "bufferlab.cli", "run", str(path), "-o", str(work / "results"), "-q",
                 *args],
                cwd=work, capture_output=True, timeout=timeout_s, text=True, errors="replace",
                preexec_fn=lambda: _limit_memory(mem_mb),
            )
            return classify_run(p.returncode, p.stderr, False), p.stderr[-4000:]
        except subprocess.TimeoutExpired as e:
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
            return "hang", f"timeout after {timeout_s:g} s\n{err[-4000:]}"
    r = fork_cli(["run", str(path), "-o", str(work / "results"), "-q", *args], work, timeout_s, mem_mb)
    if r.timed_out:
        return "hang", f"timeout after {timeout_s:g} s\n{r.err[-4000:]}"
    return classify_run(r.code, r.err, False), (f"exit {r.code}\n" + r.err)[-4000:]


def run_runs(seed: int, n: int, outdir: Path, timeout_s: float, max_wall: float, max_events: int,
             report_every: int, mem_mb: int, use_exec: bool, log=print, only_checked: float = 0.9,  # noqa: ANN001
             deadline: float = float("inf")) -> Counter:
    """n runs of mutated scenarios; most of them inputs that ``check`` accepts (the check = run
    property: such an input must run, or fail with a run-time reason)."""
    import bufferlab.cli  # noqa: F401 - imported once, before forking
    import bufferlab.outputs.report  # noqa: F401

    signal.signal(signal.SIGALRM, _alarm)
    mut = Mutator(load_seeds())
    tmp = Path(tempfile.mkdtemp(prefix="bufferlab-fuzzrun-"))
    totals: Counter[str] = Counter()
    i = 10**9  # run inputs use their own index range (distinct from check inputs)
    t0 = last = time.time()
    done = 0
    rng = random.Random(seed)
    while done < n and time.time() < deadline:
        i += 1
        name, data = mut.make(seed, i)
        path = tmp / "in.toml"
        path.write_bytes(data)
        ccls, _ = check_one(path)
        want_valid = rng.random() < only_checked
        if want_valid and ccls != "ok":
            continue
        work = tmp / "run"
        shutil.rmtree(work, ignore_errors=True)
        report = report_every > 0 and done % report_every == 0
        cls, msg = run_one(path, work, timeout_s, max_wall, max_events, report, mem_mb, use_exec)
        if ccls == "ok" and cls.startswith("error_"):
            # check accepted what run rejected (issue 16, must have 1), unless for a run-time reason
            runtime = cls == "error_pos" and any(r in msg for r in RUNTIME_ERRORS)
            cls = "run_error_pos" if runtime else "check_run_mismatch"
        totals[cls] += 1
        done += 1
        if cls in BAD or cls == "check_run_mismatch":
            _save(outdir, "run", seed, i, name, cls, msg, data)
        if time.time() - last > 30:
            last = time.time()
            log(f"  runs: {done}/{n} in {last - t0:.0f} s ({done / (last - t0):.2f}/s) {_fmt(totals)}")
    shutil.rmtree(tmp, ignore_errors=True)
    return totals


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1, help="campaign seed (input i is a function of seed and i)")
    ap.add_argument("--checks", type=int, default=2000, help="number of check inputs")
    ap.add_argument("--runs", type=int, default=20, help="number of runs")
    ap.add_argument("--jobs", type=int, default=1, help="check worker processes")
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"), help="where failing inputs go")
    ap.add_argument("--run-timeout", type=float, default=30.0, help="wall seconds before a run is a hang")
    ap.add_argument("--max-wall", type=float, default=3.0, help="bufferlab run --max-wall of each run")
    ap.add_argument("--max-events", type=int, default=200_000, help="bufferlab run --max-events of each run")
    ap.add_argument("--report-every", type=int, default=10,
                    help="every k-th run writes report.html (0: none)")
    ap.add_argument("--mem-mb", type=int, default=3000, help="address-space cap of each worker/run (MB)")
    ap.add_argument("--exec", action="store_true", help="runs as fresh interpreters (slower, fully isolated)")
    ap.add_argument("--json", type=Path, help="write the totals here")
    ap.add_argument("--budget-s", type=float, default=float("inf"),
                    help="stop checks and runs after this many wall seconds (totals say what was reached)")
    ap.add_argument("--replay-check", type=int, metavar="I", help="print check input I and its outcome")
    a = ap.parse_args(argv)
    if a.replay_check is not None:
        name, data = Mutator(load_seeds()).make(a.seed, a.replay_check)
        sys.stdout.buffer.write(data)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "in.toml"
            p.write_bytes(data)
            signal.signal(signal.SIGALRM, _alarm)
            print(f"\n--- from {name}: ", *check_one(p), file=sys.stderr)
        return 0
    t0 = time.time()
    deadline = t0 + a.budget_s
    out: dict = {"seed": a.seed}
    if a.checks:
        c = run_checks(a.seed, a.checks, a.jobs, a.out, a.mem_mb, deadline=deadline)
        dt = time.time() - t0
        out["checks"] = {"n": sum(c.values()), "seconds": round(dt, 1),
                         "per_s": round(sum(c.values()) / dt, 1),
                         "classes": dict(c)}
        print(f"checks: {sum(c.values())} in {dt:.1f} s: {_fmt(c)}")
    if a.runs:
        t1 = time.time()
        c = run_runs(a.seed, a.runs, a.out, a.run_timeout, a.max_wall, a.max_events, a.report_every,
                     a.mem_mb, a.exec, deadline=deadline)
        dt = time.time() - t1
        out["runs"] = {"n": sum(c.values()), "seconds": round(dt, 1), "per_s": round(sum(c.values()) / dt, 2),
                       "classes": dict(c)}
        print(f"runs: {sum(c.values())} in {dt:.1f} s: {_fmt(c)}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=2) + "\n")
    bad = sum(v for k, v in (out.get("checks", {}).get("classes", {}) | {}).items() if k in BAD)
    bad += sum(v for k, v in out.get("runs", {}).get("classes", {}).items()
               if k in BAD or k == "check_run_mismatch")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
