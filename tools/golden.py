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

``--portable`` hashes what the simulation decides and nothing the machine does:
figures (PNG, PDF) and report.html (which embeds them) are left out, since their
bytes follow the installed matplotlib and fonts, and a Parquet table is hashed by
its columns' names, types and values rather than its bytes (the file records the
writing library's version). Those hashes are committed as
``tests/data/golden/hashes.json`` and compared by ``tests/test_golden.py``; after
a change that is meant to alter outputs, record them again with

    python tools/golden.py record --portable tests/data/golden
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
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


#: outputs whose bytes depend on the plotting library and fonts, not on the simulation
MACHINE_DEPENDENT = {".png", ".pdf", ".html"}


def table_digest(path: Path) -> str:
    """The digest of a Parquet table's content: column names, types and values."""
    import pandas as pd
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    frame = table.to_pandas()
    h = hashlib.sha256(str(table.schema.remove_metadata()).encode())
    h.update(pd.util.hash_pandas_object(frame, index=False).values.tobytes())
    return h.hexdigest()


def file_digest(path: Path, portable: bool) -> str | None:
    """A file's digest, or None when a portable record leaves it out."""
    if portable and path.suffix in MACHINE_DEPENDENT:
        return None
    if portable and path.suffix == ".parquet":
        return table_digest(path)
    return digest(path.read_bytes())


def scenarios(only: list[str]) -> list[Path]:
    found = sorted((ROOT / "scenarios").glob("*.toml"))
    if only:
        found = [p for p in found if p.stem in only]
    return found


def run_all(out: Path, only: list[str], portable: bool = False) -> dict[str, str]:
    """Run each scenario from a copy in ``out`` with relative paths only, so the
    outputs do not depend on where the work tree or the results folder is."""
    hashes: dict[str, str] = {}
    shutil.copytree(ROOT / "scenarios", out / "scenarios", dirs_exist_ok=True)
    # the runs start in ``out``: a relative PYTHONPATH (``PYTHONPATH=python``) would name
    # nothing there and silently test the installed bufferlab instead of the work tree's
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        entries = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(e) for e in entries if e)
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
            env=env,
        )
        hashes[f"{scenario.stem}/exit"] = str(proc.returncode)
        hashes[f"{scenario.stem}/stdout"] = digest(proc.stdout + b"\nstderr:\n" + proc.stderr)
        for path in sorted(p for p in dest.rglob("*") if p.is_file()):
            file_hash = file_digest(path, portable)
            if file_hash is not None:
                hashes[f"{scenario.stem}/{path.relative_to(dest)}"] = file_hash
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
    parser.add_argument(
        "--portable",
        action="store_true",
        help="leave out figures and the report, hash tables by content (the committed record)",
    )
    args = parser.parse_args()
    if args.action == "record":
        args.dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            hashes = run_all(Path(tmp) if args.portable else args.dir, args.only, args.portable)
        (args.dir / "hashes.json").write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
        return 0
    before = json.loads((args.dir / "hashes.json").read_text())
    if args.only:
        before = {k: v for k, v in before.items() if k.split("/", 1)[0] in args.only}
    with tempfile.TemporaryDirectory() as tmp:
        after = run_all(Path(tmp), args.only, args.portable)
    differ = differences(before, after)
    for line in differ:
        print(line)
    print(f"{len(after)} outputs compared, {len(differ)} differ")
    return 1 if differ else 0


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """One line per output whose hash differs, is missing or is new."""
    lines = []
    for key in sorted(before.keys() | after.keys()):
        if before.get(key) != after.get(key):
            state = "missing" if key not in after else "new" if key not in before else "differs"
            lines.append(f"{state}: {key}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
