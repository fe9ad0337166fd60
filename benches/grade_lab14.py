#!/usr/bin/env python3
"""Grading benchmark: a Lab 14 submission from ``bufferlab grade`` to results.json (issue 28's
target: ≤ 5 s).

Runs, as an autograder's ``run_autograder`` would, the whole process

    bufferlab grade scenarios/lab14-bufferbloat.toml --rubric examples/grading/lab14-rubric.toml \
        -o TMP --results-json TMP/results.json -q

N times and reports, per run and as medians: the wall time until results.json appears
(polled every 5 ms; the process goes on to write the tables and report.html, which an
autograder does not wait for unless it waits for the process) and the CPU time the process
had used then (user + system, from /proc: on a busy machine the wall time is a multiple of
it, on an idle one about equal), the whole process's wall and CPU time, and the load average.
Not a test: run it by hand and record the numbers in benches/RESULTS.md.

    python benches/grade_lab14.py [--runs 3] [--no-report]
"""

from __future__ import annotations

import argparse
import json
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
SUBMISSION = ROOT / "scenarios" / "lab14-bufferbloat.toml"
RUBRIC = ROOT / "examples" / "grading" / "lab14-rubric.toml"
TARGET_S = 5.0


def _cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a running process so far (Linux's /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one(tmp: Path, report: bool) -> tuple[float, float, float, float, float | None]:
    """(s to results.json, s for the process, CPU s of the process, score, CPU s to results.json)."""
    out = tmp / "out"
    shutil.rmtree(out, ignore_errors=True)
    results = tmp / "results.json"
    results.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "bufferlab.cli", "grade", str(SUBMISSION), "--rubric", str(RUBRIC),
           "-o", str(out), "--results-json", str(results), "-q", *([] if report else ["--no-report"])]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, cwd=tmp)
    to_json = cpu_to_json = None
    while proc.poll() is None:
        if to_json is None and results.exists():
            to_json = time.perf_counter() - t0
            cpu_to_json = _cpu_s(proc.pid)
        time.sleep(0.005)
    total = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 4):
        raise SystemExit(f"bufferlab grade exited with {proc.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (to_json if to_json is not None else total, total, cpu, json.loads(results.read_text())["score"],
            cpu_to_json)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-report", action="store_true", help="pass --no-report (tables only)")
    args = ap.parse_args()
    env_cache = tempfile.mkdtemp(prefix="bufferlab-pycache-")
    os.environ["PYTHONPYCACHEPREFIX"] = env_cache
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="grade-lab14-") as d:
        tmp = Path(d)
        one(tmp, not args.no_report)  # warm-up: bytecode cache, file cache
        rows = [one(tmp, not args.no_report) for _ in range(args.runs)]
    shutil.rmtree(env_cache, ignore_errors=True)
    for i, (j, t, c, s, cj) in enumerate(rows, 1):
        upto = f" (CPU {cj:.2f} s)" if cj is not None else ""
        print(f"run {i}: results.json after {j:.2f} s{upto}, process {t:.2f} s, CPU {c:.2f} s, score {s}")
    med = [statistics.median(r[k] for r in rows) for k in range(3)]
    cpus = [r[4] for r in rows if r[4] is not None]
    upto = f" (CPU {statistics.median(cpus):.2f} s)" if cpus else ""
    ratio = f"target ≤ {TARGET_S:g} s: {med[0] / TARGET_S:.2f}×"
    print(f"median: results.json after {med[0]:.2f} s{upto} ({ratio}), "
          f"process {med[1]:.2f} s, CPU {med[2]:.2f} s; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
