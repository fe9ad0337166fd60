#!/usr/bin/env python3
"""Many jobs on one line: what a scenario line of N ``ping … &`` jobs costs (issue 30 item 6).

Every application a job starts is listed in summary.json with the line it was typed on, so
the line's text must be held once, not once per job. Writes a two-host scenario whose one
line is N times ``ping 10.0.0.2 -c 1 -q &``, runs ``bufferlab run -q --no-report`` on it in
a child process and prints the child's wall and CPU time, its peak resident memory and the
size of summary.json. Not a test: run it by hand and record the numbers in
benches/RESULTS.md. ``--pythonpath DIR`` runs another source tree (e.g. main's
``python/``) for a before/after comparison.

    python benches/many_jobs.py [--jobs 5000] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = """name = "many jobs"
seed = 1

[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["h2", "s1"]]

[[part]]
name = "jobs"
cmds = ["h1: {line}"]
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=5000, help="background jobs on the line (default 5000)")
    ap.add_argument("--pythonpath", metavar="DIR", help="run python -m bufferlab.cli from this source tree")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bufferlab-many-jobs-") as tmp:
        work = Path(tmp)
        line = " ".join(["ping 10.0.0.2 -c 1 -q &"] * a.jobs)
        (work / "jobs.toml").write_text(SCENARIO.format(line=line), encoding="utf-8")
        env = dict(os.environ)
        if a.pythonpath:
            env["PYTHONPATH"] = str(Path(a.pythonpath).resolve())
        argv = [sys.executable, "-m", "bufferlab.cli", "run", "-q", "--no-report", "-o", str(work / "out"),
                str(work / "jobs.toml")]
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        assert child.stderr is not None
        code = os.waitstatus_to_exitcode(status)
        summary = next((work / "out").glob("*/summary.json"), None)
        if summary is None:
            sys.exit(f"{' '.join(argv[:6])}: exit {code}\n{child.stderr.read().decode()}")
        print(f"{a.jobs} jobs on one line ({len(line):,} characters): wall {wall:.2f} s, "
              f"cpu {usage.ru_utime + usage.ru_stime:.2f} s, peak RSS {usage.ru_maxrss / 1024:.0f} MB, "
              f"summary.json {summary.stat().st_size / 2**20:.1f} MB, exit {code}; "
              f"load average {os.getloadavg()[0]:.2f}")
        if code:
            print("  " + child.stderr.read().decode().splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
