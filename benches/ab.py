#!/usr/bin/env python3
"""Back-to-back timing of this tree against another commit: the honest way to
state a speed-up on a shared machine, whose absolute timings drift by ±25 %
from one day to the next (benches/RESULTS.md).

    python benches/ab.py --base e2b9c26                       # lab14-segments, bulk-1, bulk-10000
    python benches/ab.py --base 2d2c574 --only lab14-segments-no-host-time --repeat 7

Builds the extension of ``--base`` (a git worktree in a temporary folder) and of
this tree with the same cargo profile, then runs each workload of
benches/suite.py alternately with the one and the other package (this tree's
suite.py defines the workloads for both, so a workload must run on both
versions), and prints the fastest and the median engine wall of each and their
ratio. The fastest of alternating runs is the estimate least disturbed by
other jobs. Commits from session 3 on (the ``[sim] host_*`` keys) can be
measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SUITE = HERE / "suite.py"
DEFAULT = "lab14-segments,bulk-1,bulk-10000"
#: the release profile without its link-time optimisation: builds in a third of
#: the time and measured the same within noise (benches/RESULTS.md)
FAST_PROFILE = {"CARGO_PROFILE_RELEASE_LTO": "false", "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "16"}


def build(tree: Path, target_dir: Path) -> Path:
    """Build ``tree``'s extension into ``target_dir`` (shared by both versions:
    only the two workspace crates are rebuilt); return a new folder under it
    holding the tree's Python package with that extension in place."""
    env = {**os.environ, **FAST_PROFILE}
    cmd = ["cargo", "build", "--release", "-q", "-p", "bufferlab-py", "--target-dir", str(target_dir)]
    subprocess.run(cmd, cwd=tree, env=env, check=True)
    site = Path(tempfile.mkdtemp(prefix="ab-python-", dir=target_dir))
    shutil.copytree(tree / "python" / "bufferlab", site / "bufferlab",
                    ignore=shutil.ignore_patterns("_core*.so", "__pycache__"))
    shutil.copy(target_dir / "release" / "lib_core.so", site / "bufferlab" / "_core.abi3.so")
    return site


def child(site: Path, workload: str) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(site), "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, str(SUITE), "--child", workload], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{workload} failed with the package in {site}:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the commit to compare with (any git revision)")
    ap.add_argument("--only", default=DEFAULT, help=f"comma-separated suite workloads (default {DEFAULT})")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each version per workload (default 5)")
    args = ap.parse_args()
    rev = subprocess.run(["git", "rev-parse", "--short", args.base], cwd=REPO, capture_output=True,
                         text=True)
    if rev.returncode != 0:
        ap.error(f"--base {args.base}: not a revision of this repository ({rev.stderr.strip()})")
    base_rev = rev.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="bufferlab-ab-") as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base_tree), base_rev], cwd=REPO,
                       check=True)
        try:
            print(f"building {base_rev} and this tree ...", file=sys.stderr, flush=True)
            target = Path(tmp) / "target"
            sites = {base_rev: build(base_tree, target), "this tree": build(REPO, target)}
            print(f"| workload | {base_rev} fastest | median | this tree fastest | median "
                  "| ratio (fastest) | events (base, this) |")
            print("|---|---|---|---|---|---|---|")
            for w in args.only.split(","):
                times: dict[str, list[float]] = {k: [] for k in sites}
                events: dict[str, int] = {}
                for _ in range(args.repeat):
                    for k, site in sites.items():
                        row = child(site, w)
                        times[k].append(row["engine_s"])
                        events[k] = int(row["events"])
                b, t = times[base_rev], times["this tree"]
                print(f"| {w} | {min(b):.3f} s | {statistics.median(b):.3f} s | {min(t):.3f} s | "
                      f"{statistics.median(t):.3f} s | {min(t) / min(b):.2f} | "
                      f"{events[base_rev]}, {events['this tree']} |", flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=REPO, check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
