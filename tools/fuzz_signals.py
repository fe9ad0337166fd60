#!/usr/bin/env python3
"""Signal and concurrency trials of bufferlab's commands (issue 30, item 10; docs/fuzzing.md).

Each trial starts ``python -m bufferlab.cli ...`` as a user would (a fresh interpreter in a
session of its own, no terminal) in a folder with a complete earlier run, planted symlinks
pointing at victim files outside it and the user's own files beside it, then either

* sends SIGINT, SIGTERM or SIGKILL at a random moment (uniform over the command's measured
  duration, so also while it imports, writes its tables or its report) to ``run``,
  ``sweep`` (two pool workers), ``mininet``, ``mn``, ``report``, ``compare`` or ``export``
  (to the process, or to its process group as a terminal's Ctrl-C does); or
* starts two writers of one results folder at once, a random delay apart: two ``run``\\ s,
  two ``sweep``\\ s, two ``mininet`` scripts, a ``run`` and a ``report``.

Properties checked after each (the class of a violation in brackets; fuzz.py's BAD):

* it ends: within 20 s of SIGINT/SIGTERM [hang]; exit 128 + the signal, or the status of
  a command that had finished; no traceback, panic, abort, "Exception ignored" [traceback,
  panic, signal, other];
* no process left in its session 3 s after it ended (sweep workers, SIGKILL included)
  [leftover];
* the victims of the planted symlinks, the user's files and the scenario's folder are
  unchanged byte for byte [through_symlink, data_loss];
* the last complete run is still there (as ``<name>`` or ``<name>.prev``), or the new
  complete one is [lost_complete_run]; a folder marked complete is whole: its summary.json
  parses, its tables' footers are there, its report ends [half_written];
* no ``.NAME.tmp`` left after SIGINT/SIGTERM or a normal end, no lock still held after any
  end (a lock file may stay: the next writer takes it over) [half_written];
* after SIGINT/SIGTERM a run's folder says it was interrupted, with the finished parts;
  a sweep's finished runs are kept and the same command's dry-run lists only the rest,
  which one trial in three then runs to completion [not_resumable];
* of two writers at once, a refused one names the holder (pid and command)
  [holder_unnamed], and the folder holds one complete run at the end.

    python tools/fuzz_signals.py --trials 200 --json totals.json
    python tools/fuzz_signals.py --replay 17 --seed 3      # run trial 17 again, print its outcome
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz  # noqa: E402
import fuzz_inputs  # noqa: E402
from fuzz_inputs import SCRIPTS, TINY, _walk, changed, leftover_tmp, parquet_whole, snapshot  # noqa: E402

ROOT = fuzz.ROOT
#: TINY with a third part, so a signal has parts to land between (about 1 s of wall time)
SCENARIO = TINY.replace('t = 1\n', 't = 2\n') + """
[[part]]
name = "c"
cmds = ["h1: iperf3 -c 10.0.0.2 -t 2 > tcp.txt"]
"""
SWEEP = 'scenario = "tiny.toml"\nseeds = [1, 2]\n\n[grid]\nt = [1, 2]\n'
SCRIPT = SCRIPTS["api.py"]
#: (command, weight) of the signal trials; the concurrency trials' kinds
COMMANDS = (("run", 5), ("sweep", 3), ("mininet", 2), ("mn", 2), ("report", 3), ("compare", 2), ("export", 2))
PAIRS = (("run+run", 3), ("sweep+sweep", 2), ("run+report", 2), ("mininet+mininet", 1))
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
#: where links to the victims are planted (relative to the -o folder)
#: (not -o's own path: a link given with -o is the user's, and followed)
LINKS = ("tiny/report.html", "tiny/tables/ping.parquet", "tiny/tables/flows.csv", "tiny/a/h1/c.json",
         "tiny.prev", ".tiny.lock", "cmp/compare.html", "tiny/a.flent.gz", "api/report.html", "mn",
         "sw/sweep.parquet", ".sw.lock")


def _argv(cmd: str, t: Path, v: int) -> tuple[list[str], bytes]:
    """The command line (and its stdin) of ``cmd`` in trial folder ``t``."""
    out = str(t / "out")
    if cmd == "run":
        return ["run", "-q", str(t / "src/tiny.toml"), "-o", out,
                *(["--no-report"] if v % 3 == 2 else [])], b""
    if cmd == "sweep":
        return ["sweep", str(t / "src/sw.toml"), "-o", out, "-j", "2", "--no-progress"], b""
    if cmd == "mininet":
        return ["mininet", "-o", out, str(t / "src/api.py")], b""
    if cmd == "mn":
        if v % 2:
            return ["mn", "--topo", "single,3", "--link", "tc,bw=10,delay=5ms", "--test", "iperf",
                    "-o", out], b""
        return ["mn", "--topo", "linear,2", "-o", out], b"h1 ping -c 5 h2\npingall\nh2 iperf3 -s &\n" \
                                                         b"h1 iperf3 -c h2 -t 2\nexit\n"
    if cmd == "report":
        return ["report", str(t / "out/tiny")], b""
    if cmd == "compare":
        return ["compare", str(t / "out/tiny"), str(t / "out/tiny/a"), "-o", str(t / "out/cmp")], b""
    return ["export", "--flent", str(t / "out/tiny"), *(["-o", str(t / "out/fl")] if v % 2 else [])], b""


class Proc:
    """A command started for a trial: a fresh ``python -m bufferlab.cli`` (as a user starts it),
    or a child forked from this process, which imported bufferlab once (``fuzz.fork_start``:
    the command's own SIGINT handler, ``main()`` as the script calls it), starting at once.
    Either way in a session of its own, stdin, stdout and stderr in files."""

    def __init__(self, argv: list[str], t: Path, stdin: bytes, name: str, fresh: bool) -> None:
        self.io = t / name
        self.io.mkdir(parents=True, exist_ok=True)
        self.popen: subprocess.Popen[bytes] | None = None
        self.code: int | None = None
        if fresh:
            (self.io / "stdin").write_bytes(stdin)
            with open(self.io / "stdin", "rb") as fin, open(self.io / "stdout", "wb") as fout, \
                    open(self.io / "stderr", "wb") as ferr:
                self.popen = subprocess.Popen([sys.executable, "-m", "bufferlab.cli", *argv], cwd=t,
                                              stdin=fin, stdout=fout, stderr=ferr, start_new_session=True)
            self.pid = self.popen.pid
        else:
            self.pid = fuzz.fork_start(argv, self.io, 0, stdin, t)

    def wait(self, timeout: float) -> int | None:
        """Its exit status (-N: signal N), or None if it still runs after ``timeout`` seconds."""
        if self.code is None:
            if self.popen is not None:
                try:
                    self.code = self.popen.wait(timeout)
                except subprocess.TimeoutExpired:
                    return None
            else:
                status = fuzz._wait(self.pid, timeout)
                self.code = None if status is None else fuzz.status_code(status)
        return self.code

    def kill(self) -> None:
        """SIGKILL to its session (a hang), and reap it."""
        for q in [self.pid, *fuzz.session_members(self.pid)]:
            try:
                os.kill(q, signal.SIGKILL)
            except OSError:
                pass
        self.wait(30)

    def err(self) -> str:
        """What it wrote on stderr ("" if it was killed before it opened it)."""
        f = self.io / "stderr"
        return f.read_text(errors="replace") if f.exists() else ""


class Trials:
    """The trial folder's templates (a complete run, sweep, script run, comparison) built once;
    each trial copies them."""

    def __init__(self, work: Path, kinds: list[str] | None = None) -> None:
        """``kinds``: the commands and pairs tried (default all, COMMANDS and PAIRS)."""
        self.work = work
        self.tpl = work / "template"
        self.durations: dict[str, float] = {}
        self.commands = [(c, w) for c, w in COMMANDS if kinds is None or c in kinds]
        self.pairs = [(c, w) for c, w in PAIRS if kinds is None or c in kinds]

    def setup(self) -> None:
        tpl = self.tpl
        if (tpl / "done.json").is_file():
            self.durations = json.loads((tpl / "done.json").read_text())
            return
        shutil.rmtree(tpl, ignore_errors=True)
        (tpl / "src").mkdir(parents=True)
        for name, text in (("tiny.toml", SCENARIO), ("sw.toml", SWEEP), ("api.py", SCRIPT),
                           ("notes.txt", "the user's notes beside the scenario\n")):
            (tpl / "src" / name).write_text(text, encoding="utf-8")
        (tpl / "out").mkdir()
        # the earlier complete results, and each command's duration once started (the signals
        # land within it); a fresh interpreter's start-up apart
        used = {c for k, _ in self.commands + self.pairs for c in k.split("+")}
        for cmd in [c for c in ("run", "mininet", "compare", "export", "report", "mn")
                    if c in used or c == "run"]:
            self.durations[cmd] = self._timed(*_argv(cmd, tpl, 1), tpl)
        if "sweep" in used:
            work = tpl / "sweep-timing"
            shutil.copytree(tpl / "src", work / "src")
            self.durations["sweep"] = self._timed(_argv("sweep", work, 0)[0], b"", work)
            shutil.rmtree(work)
        self.durations["startup"] = self._timed(["check", str(tpl / "src/tiny.toml")], b"", tpl, fresh=True)
        shutil.rmtree(tpl / "setup")
        (tpl / "done.json").write_text(json.dumps(self.durations))

    @staticmethod
    def _timed(argv: list[str], stdin: bytes, t: Path, fresh: bool = False) -> float:
        t0 = time.monotonic()
        p = Proc(argv, t, stdin, "setup", fresh)
        if p.wait(600) != 0:
            raise RuntimeError(f"template {argv}: exit {p.code}\n{p.err()}")
        return time.monotonic() - t0

    # -- one trial

    def make(self, seed: int, i: int) -> dict[str, Any]:
        rng = random.Random(f"{seed}:signals:{i}")
        # one trial in four starts a fresh interpreter (a signal may land in its start-up and
        # imports), the others a child forked from this process, which imported bufferlab
        fresh = rng.random() < 0.25
        start = self.durations.get("startup", 0.5) if fresh else 0.0
        links = rng.sample(LINKS, rng.randint(0, 3))
        if self.pairs and (rng.random() < 0.2 or not self.commands):
            names, weights = zip(*self.pairs, strict=True)
            kind = rng.choices(names, weights)[0]
            return {"kind": kind, "delay": rng.uniform(0, 1.5), "v": rng.randrange(6), "links": links,
                    "fresh": fresh}
        names, weights = zip(*self.commands, strict=True)
        cmd = rng.choices(names, weights)[0]
        end = start + 1.1 * self.durations.get(cmd, 2.0)
        delay = rng.uniform(0, start) if fresh and rng.random() < 0.2 else rng.uniform(start, end)
        return {"kind": cmd, "signal": int(rng.choice(SIGNALS)), "group": rng.random() < 0.2, "delay": delay,
                "v": rng.randrange(6), "links": links, "resume": rng.random() < 1 / 3, "fresh": fresh}

    def prepare(self, trial: dict[str, Any]) -> Path:
        t = self.work / "trial"
        if t.exists():
            shutil.rmtree(t)
        shutil.copytree(self.tpl / "src", t / "src")
        shutil.copytree(self.tpl / "out", t / "out", symlinks=True)
        (t / "out/notes.txt").write_text("the user's notes beside the results\n")
        victim = t / "victim"
        (victim / "vdir").mkdir(parents=True)
        (victim / "target.txt").write_text("precious\n")
        (victim / "vdir/keep").write_text("precious\n")
        for rel in trial["links"]:
            at = t / "out" / rel
            if os.path.lexists(at):
                shutil.rmtree(at) if at.is_dir() and not at.is_symlink() else at.unlink()
            at.parent.mkdir(parents=True, exist_ok=True)
            at.symlink_to(victim / ("vdir" if "." not in at.name else "target.txt"))
        return t

    def run(self, trial: dict[str, Any]) -> tuple[str, str]:
        t = self.prepare(trial)
        outside = {"victim": snapshot(t / "victim"), "src": snapshot(t / "src"),
                   "notes": snapshot(t / "out")["notes.txt"]}
        complete_before = {n for n in ("tiny", "api", "mn") if _complete(t / "out" / n)}
        if "+" in trial["kind"]:
            cls, msg = self._pair(trial, t)
        else:
            cls, msg = self._signal(trial, t)
        msg = json.dumps(trial) + "\n" + msg
        if cls in fuzz.BAD:
            return cls, msg
        after = {"victim": snapshot(t / "victim"), "src": snapshot(t / "src"),
                 "notes": snapshot(t / "out").get("notes.txt")}
        if after["victim"] != outside["victim"]:
            return "through_symlink", f"victim changed: {changed(outside['victim'], after['victim'])}\n" + msg
        if after != outside:
            what = ", ".join(k for k in after if after[k] != outside[k])
            return "data_loss", f"changed: {what}\n" + msg
        for n in complete_before:
            if not (_complete(t / "out" / n) or _complete(t / "out" / f"{n}.prev")):
                return "lost_complete_run", f"{n}: neither it nor {n}.prev holds a complete run\n" + msg
        for folder in [p.parent for p in _walk(t / "out") if p.name == ".bufferlab-results"]:
            why = _not_whole(folder)
            if why:
                return "half_written", f"{folder.relative_to(t)}: {why}\n" + msg
        return cls, msg

    def _signal(self, trial: dict[str, Any], t: Path) -> tuple[str, str]:
        argv, stdin = _argv(trial["kind"], t, trial["v"])
        sig = signal.Signals(trial["signal"])
        p = Proc(argv, t, stdin, "a", trial["fresh"])
        code = p.wait(trial["delay"])
        sent = code is None
        if sent:
            try:
                os.killpg(p.pid, sig) if trial["group"] else os.kill(p.pid, sig)
            except ProcessLookupError:
                sent = False
            code = p.wait(20)
        err = p.err()
        what = "sent" if sent else "not sent (it had ended)"
        msg = f"argv: {argv}\nsignal {sig.name} {what}, exit {code}\n" + err[-3000:]
        if code is None:
            p.kill()
            return "hang", f"still running 20 s after {sig.name}\n" + msg
        left = fuzz.leftover(p.pid)
        if left:
            return "leftover", f"processes left in its session: {left}\n" + msg
        cls = _status_class(code, err, sig if sent else None)
        if cls == "other" and code == 2 and not sent:  # it had refused its input (a planted link)
            cls = "error_pos" if fuzz_inputs._names(t)(err) else "error_nopos"
        if cls in fuzz.BAD:
            return cls, msg
        if sig != signal.SIGKILL or not sent:
            tmp = leftover_tmp(t / "out")
            if tmp:
                return "half_written", f"left {tmp}\n" + msg
        held = [q.name for q in (t / "out").glob(".*.lock") if _held(q)]
        if held:  # a lock file may stay (the next writer takes it over), never held by no one
            return "half_written", f"a lock still held: {held}\n" + msg
        if trial["kind"] == "run" and code in (130, 143) and "the finished parts" in err:
            s = _json(t / "out/tiny/summary.json")
            if not isinstance(s, dict) or "interrupted" not in s:
                return "not_resumable", "interrupted, but summary.json does not say so\n" + msg
        if trial["kind"] == "sweep":
            return self._resumed(trial, t, cls, msg)
        return cls, msg

    def _resumed(self, trial: dict[str, Any], t: Path, cls: str, msg: str) -> tuple[str, str]:
        """A sweep after any end: its finished runs kept, the dry-run lists the rest (and, in one
        trial of three, running it again completes the sweep)."""
        runs = t / "out/sw/runs"
        done = [d for d in runs.glob("*") if d.suffix != ".partial"
                and (_json(d / "run.json") or {}).get("status") == "ok"] if runs.is_dir() else []
        dry = fuzz.fork_cli([*_argv("sweep", t, 0)[0], "--dry-run"], t / "dry", 120, 0, cwd=t)
        m = re.search(r"^(\d+) runs, (\d+) to run", dry.out, re.M)
        if m is None or int(m.group(1)) - int(m.group(2)) != len(done):
            return "not_resumable", (f"{len(done)} runs finished; dry-run: {dry.out[-300:]}"
                                     f"{dry.err[-500:]}\n" + msg)
        if trial["resume"]:
            again = fuzz.fork_cli(_argv("sweep", t, 0)[0], t / "again", 300, 0, cwd=t)
            if again.code != 0 or f"({len(done)} cached, {m.group(2)} run)" not in again.out:
                return "not_resumable", (f"resumed: exit {again.code}\n{again.out[-300:]}{again.err[-800:]}\n"
                                         + msg)
        return cls, msg

    def _pair(self, trial: dict[str, Any], t: Path) -> tuple[str, str]:
        first, second = trial["kind"].split("+")
        a_argv, a_in = _argv(first, t, 0)
        b_argv, b_in = _argv(second, t, 0)
        a = Proc(a_argv, t, a_in, "a", trial["fresh"])
        time.sleep(trial["delay"])
        b = Proc(b_argv, t, b_in, "b", trial["fresh"])
        codes = []
        for p in (a, b):
            if p.wait(300) is None:
                p.kill()
                codes.append(None)
            else:
                codes.append(p.code)
        errs = [a.err(), b.err()]
        msg = f"{a_argv}\n{b_argv}\nexits {codes}\n" + "\n".join(e[-1500:] for e in errs)
        if None in codes:
            return "hang", msg
        for p in (a, b):
            if fuzz.leftover(p.pid):
                return "leftover", msg
        for code, err in zip(codes, errs, strict=True):
            cls = _status_class(code, err, None)
            if cls in fuzz.BAD:
                return cls, msg
            if code == 2:
                if "is being written by another bufferlab" not in err:
                    return "other", msg
                if not re.search(r"another bufferlab \(pid \d+, `", err):
                    return "holder_unnamed", msg
        if 0 not in codes:
            return "other", "neither writer succeeded\n" + msg
        root = t / "out" / ("sw" if first == "sweep" else "api" if first == "mininet" else "tiny")
        if first != "sweep" and not _complete(root):
            return "lost_complete_run", "the folder does not hold a complete run at the end\n" + msg
        return ("refused" if 2 in codes else "both_ok"), msg


def _status_class(code: int, err: str, sig: signal.Signals | None) -> str:
    """The class of an exit status after ``sig`` (None: no signal was sent)."""
    if "panicked at" in err or "PanicException" in err:
        return "panic"
    if sig == signal.SIGINT and "Traceback" in err and "KeyboardInterrupt" in err and "bufferlab" not in err:
        return "interpreter_startup"  # Python's own start-up, before bufferlab's first line ran
    if "Traceback (most recent call last)" in err or "Exception ignored" in err or "Fatal Python" in err:
        return "traceback"
    if sig is not None and code == 128 + sig:
        return f"exit_{sig.name}"
    if sig is not None and code == -sig:
        # SIGKILL; or SIGTERM before the interpreter ran bufferlab's first line (nothing written)
        return f"killed_{sig.name}" if sig == signal.SIGKILL or not err.strip() else "signal"
    if code in (0, 1, 3):
        return "finished"  # it had finished, or it finished what the signal left to do
    if code == 2 and "is being written by another bufferlab" in err:
        return "refused"
    return "signal" if code < 0 or code >= 128 else "other"


def _held(lock: Path) -> bool:
    """Someone holds the flock on this lock file (results_folder.acquire's)."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _complete(folder: Path) -> bool:
    from bufferlab.results_folder import complete

    return folder.is_dir() and not folder.is_symlink() and complete(folder)


def _not_whole(folder: Path) -> str | None:
    """What is half-written in a folder whose marker says complete (a run, a comparison), else None."""
    marker = _json(folder / ".bufferlab-results")
    if not isinstance(marker, dict) or not marker.get("complete", marker.get("kind") == "compare"):
        return None
    if marker.get("kind") in ("run", "mininet") and not isinstance(_json(folder / "summary.json"), dict):
        return "summary.json does not parse"
    for p in list(folder.glob("tables/*.parquet")) + list(folder.glob("*.parquet")):
        if not p.is_symlink() and not parquet_whole(p):
            return f"{p.name} has no footer"
    for p in folder.glob("*.html"):
        if not p.is_symlink() and not p.read_bytes().rstrip().endswith(b"</html>"):
            return f"{p.name} does not end"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"), help="where failing trials go")
    ap.add_argument("--json", type=Path, help="write the totals here")
    ap.add_argument("--budget-s", type=float, default=float("inf"), help="stop after this many wall seconds")
    ap.add_argument("--replay", type=int, metavar="I", help="run trial I again and print its outcome")
    ap.add_argument("--replay-file", type=Path, metavar="TRIAL.json",
                    help="run a saved trial again (its delay as it was; the timing still varies)")
    ap.add_argument("--kinds", help="comma-separated commands and pairs to try (default: all of "
                    + ", ".join(k for k, _ in COMMANDS + PAIRS) + ")")
    a = ap.parse_args(argv)
    fuzz_inputs._preload()  # the forked commands start at once
    work = Path(tempfile.mkdtemp(prefix="bufferlab-fuzzsig-"))
    trials = Trials(work, a.kinds.split(",") if a.kinds else None)
    t0 = time.time()
    try:
        trials.setup()
        if a.replay is not None or a.replay_file is not None:  # (delays scale with the durations)
            trial = (trials.make(a.seed, a.replay) if a.replay_file is None
                     else json.loads(a.replay_file.read_text()))
            print(*trials.run(trial), sep="\n")
            return 0
        totals: Counter[str] = Counter()
        kinds: Counter[str] = Counter()
        last = t0
        done = 0
        for i in range(a.trials):
            if time.time() - t0 > a.budget_s:
                break
            trial = trials.make(a.seed, i)
            cls, msg = trials.run(trial)
            totals[cls] += 1
            sig = "" if "+" in trial["kind"] else ":" + signal.Signals(trial["signal"]).name
            kinds[trial["kind"] + sig] += 1
            done += 1
            if cls in fuzz.BAD:
                fuzz._save(a.out, "signals", a.seed, i, trial["kind"], cls, msg, json.dumps(trial).encode(),
                           ".json")
            if time.time() - last > 30:
                last = time.time()
                print(f"  signals: {done}/{a.trials} in {last - t0:.0f} s {fuzz._fmt(totals)}", flush=True)
        dt = time.time() - t0
        out = {"seed": a.seed, "signals": {"n": done, "seconds": round(dt, 1), "classes": dict(totals),
                                           "kinds": dict(sorted(kinds.items())),
                                           "durations_s": {k: round(v, 2)
                                                           for k, v in trials.durations.items()}}}
        print(f"signals: {done} in {dt:.1f} s: {fuzz._fmt(totals)}")
        if a.json:
            a.json.write_text(json.dumps(out, indent=2) + "\n")
        return 1 if any(k in fuzz.BAD for k in totals) else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
