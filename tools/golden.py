#!/usr/bin/env python3
"""Golden outputs: prove a refactoring changed no output byte (issue 12).

``record DIR`` runs every shipped scenario (``scenarios/*.toml``) into DIR and
writes ``DIR/hashes.json`` (SHA-256 of every file of every results folder, stdout
included). ``compare DIR`` runs them again into a temporary folder and lists
every file whose bytes differ, is missing or is new; exit status 1 if any.

    python tools/golden.py record /tmp/golden-before
    ... refactor ...
    python tools/golden.py compare /tmp/golden-before

The bufferlab imported is the one on ``sys.path`` first (set ``PYTHONPATH`` to
a work tree's ``python/`` folder to test that tree's code and extension).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What legitimately changes between two runs of the same scenario: the wall
# clock (run.json's start time and wall seconds, the "simulated in X s wall"
# line). Everything else must be byte-identical.
WALL_CLOCK = [
    (re.compile(rb'"(started|started_unix|wall_s)": ("[^"]*"|[-+.0-9e]+)'), rb'"\1": WALL'),
    (re.compile(rb"[0-9.]+ s wall \(\+[0-9.]+ s"), b"WALL s wall (+WALL s"),
]


def digest(data: bytes) -> str:
    for pattern, replacement in WALL_CLOCK:
        data = pattern.sub(replacement, data)
    return hashlib.sha256(data).hexdigest()


def scenarios(only: list[str]) -> list[Path]:
    found = sorted((ROOT / "scenarios").glob("*.toml"))
    if only:
        found = [p for p in found if p.stem in only]
    return found


def run_all(out: Path, only: list[str]) -> dict[str, str]:
    """Run each scenario from a copy in ``out`` with relative paths only, so the
    outputs do not depend on where the work tree or the results folder is."""
    hashes: dict[str, str] = {}
    shutil.copytree(ROOT / "scenarios", out / "scenarios", dirs_exist_ok=True)
    for scenario in scenarios(only):
        dest = out / "results" / scenario.stem
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "bufferlab.cli",
                "run",
                f"scenarios/{scenario.name}",
                "-o",
                f"results/{scenario.stem}",
                "--no-progress",
            ],
            capture_output=True,
            check=False,
            cwd=out,
        )
        hashes[f"{scenario.stem}/exit"] = str(proc.returncode)
        hashes[f"{scenario.stem}/stdout"] = digest(proc.stdout + b"\nstderr:\n" + proc.stderr)
        for path in sorted(p for p in dest.rglob("*") if p.is_file()):
            hashes[f"{scenario.stem}/{path.relative_to(dest)}"] = digest(path.read_bytes())
        print(
            f"{scenario.stem}: exit {proc.returncode}",
            flush=True,
        )
    return hashes


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=["record", "compare"])
    parser.add_argument(
        "dir", type=Path, help="where the recorded hashes are (record writes them there)"
    )
    parser.add_argument("--only", nargs="*", default=[], help="scenario names (file stems) to run")
    args = parser.parse_args()
    if args.action == "record":
        args.dir.mkdir(parents=True, exist_ok=True)
        hashes = run_all(args.dir, args.only)
        (args.dir / "hashes.json").write_text(json.dumps(hashes, indent=1, sort_keys=True))
        return 0
    before = json.loads((args.dir / "hashes.json").read_text())
    if args.only:
        before = {k: v for k, v in before.items() if k.split("/", 1)[0] in args.only}
    with tempfile.TemporaryDirectory() as tmp:
        after = run_all(Path(tmp), args.only)
    differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    for key in differ:
        state = "missing" if key not in after else "new" if key not in before else "differs"
        print(f"{state}: {key}")
    print(f"{len(after)} outputs compared, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
