"""Speed-up of `bufferlab sweep` from -j 1 to -j 2: the same 8 runs, each in a fresh folder.

    PYTHONPATH=python python benches/sweep_speedup.py [--scenario scenarios/lab14-bufferbloat.toml]

Prints both wall times and their ratio (issue 14 asks for ≥ 1.6× on 2 cores). Not a test:
the ratio depends on what else the machine runs. Results go in benches/RESULTS.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(sweep: Path, out: Path, jobs: int) -> float:
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "bufferlab.cli", "sweep", str(sweep), "-o", str(out), "-j", str(jobs)]
    subprocess.run([*cmd, "--no-progress"], check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", type=Path, default=ROOT / "scenarios" / "lab14-bufferbloat.toml")
    p.add_argument("--runs", type=int, default=8, help="seeds 1..N of the scenario (default 8)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "bench.toml"
        text = f'scenario = "{a.scenario.resolve().as_posix()}"\nseeds = {a.runs}\n'
        sweep.write_text(text, encoding="utf-8")
        one = run(sweep, Path(tmp) / "j1", 1)
        two = run(sweep, Path(tmp) / "j2", 2)
    print(f"{a.runs} runs of {a.scenario.name}: -j 1 {one:.2f} s, -j 2 {two:.2f} s, "
          f"speed-up {one / two:.2f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
