#!/usr/bin/env python3
"""Start-up benchmark: what one ``bufferlab`` call costs before and around the engine.

Times three whole processes, as a shell or a grading script runs them:

- ``bufferlab --version`` (target ≤ 0.15 s),
- ``bufferlab check scenarios/lab14-bufferbloat.toml`` (target ≤ 0.3 s),
- ``bufferlab run -q --no-report`` of a 20 s iperf3 CUBIC test through a
  100 Mbit/s tbf (netem 20 ms; the engine takes ~0.03 s of it) (target ≤ 0.35 s),

N times each (after one warm-up call), and prints the median and minimum wall
time, the median CPU time (user + system of the child, less sensitive to other
jobs on the machine), the ratio of the median to the target and the load
average. Not a test: run it by hand and record the numbers in benches/RESULTS.md.

Python's bytecode cache is on for the child processes (in a temporary
``PYTHONPYCACHEPREFIX``), as for any installed package, even when the calling
environment sets ``PYTHONDONTWRITEBYTECODE`` (then every module would be
compiled on every call: ~0.1 s more); ``--as-is`` keeps the environment as it is.
``python -X importtime -m bufferlab.cli --version`` shows where the import
time goes. ``--pythonpath DIR`` times ``python -m bufferlab.cli`` from another
source tree (e.g. an older commit's ``python/`` from ``git archive``, with the
compiled ``_core*.so`` copied in) for a before/after comparison.

    python benches/startup.py [--runs 9] [--as-is] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CUBIC = """name = "startup: iperf3 CUBIC 20 s through a 100 Mbit/s tbf"
seed = 1

[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]

[[part]]
name = "run"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 100mbit burst 50000 limit 250000",
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -t 20",
]
"""


def bufferlab_command() -> list[str]:
    """The installed ``bufferlab`` script next to this Python, else ``python -m bufferlab.cli``."""
    script = Path(sys.executable).with_name("bufferlab")
    if script.is_file():
        return [str(script)]
    found = shutil.which("bufferlab")
    return [found] if found else [sys.executable, "-m", "bufferlab.cli"]


def time_call(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one call; exits on a failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9, help="calls of each command (default 9)")
    ap.add_argument("--as-is", action="store_true",
                    help="keep the environment's bytecode settings (PYTHONDONTWRITEBYTECODE etc.)")
    ap.add_argument("--pythonpath", metavar="DIR", help="run python -m bufferlab.cli from this source tree")
    a = ap.parse_args()
    cmd = [sys.executable, "-m", "bufferlab.cli"] if a.pythonpath else bufferlab_command()
    with tempfile.TemporaryDirectory(prefix="bufferlab-startup-") as tmp:
        work = Path(tmp)
        (work / "cubic.toml").write_text(CUBIC, encoding="utf-8")
        env = dict(os.environ)
        if not a.as_is:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        if a.pythonpath:
            env["PYTHONPATH"] = str(Path(a.pythonpath).resolve())
        cases = [
            ("bufferlab --version", [*cmd, "--version"], 0.15),
            ("bufferlab check scenarios/lab14-bufferbloat.toml",
             [*cmd, "check", str(ROOT / "scenarios" / "lab14-bufferbloat.toml")], 0.30),
            ("bufferlab run -q --no-report (CUBIC 20 s, 100 Mbit/s)",
             [*cmd, "run", "-q", "--no-report", "-o", str(work / "results"), str(work / "cubic.toml")], 0.35),
        ]
        print(f"{' '.join(cmd)}; {a.runs} calls each; bytecode cache "
              f"{'as the environment has it' if a.as_is else 'on'}; "
              f"load average before: {os.getloadavg()[0]:.2f}")
        print(f"{'command':<58} {'median':>7} {'min':>7} {'cpu':>7} {'target':>7} {'ratio':>6} "
              f"{'cpu ratio':>9}")
        for label, argv, target in cases:
            time_call(argv, env, work)  # warm-up: the bytecode cache, the page cache
            runs = [time_call(argv, env, work) for _ in range(a.runs)]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            print(f"{label:<58} {wall:7.3f} {min(w for w, _ in runs):7.3f} {cpu:7.3f} {target:7.2f} "
                  f"{wall / target:6.2f} {cpu / target:9.2f}")
        print(f"load average after: {os.getloadavg()[0]:.2f} (ratio = median wall / target, ≤ 1 meets it; "
              "cpu ratio: the same for CPU time, what an idle machine's wall time approaches)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
