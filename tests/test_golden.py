"""Golden outputs: every shipped scenario, run again, gives the committed hashes.

``tests/data/golden/hashes.json`` holds the portable digests (tools/golden.py
``--portable``: figures and report.html left out, Parquet tables hashed by content)
of every output file, stdout and exit status of ``bufferlab run`` on each
``scenarios/*.toml``. A refactoring must leave all of them unchanged; a change
meant to alter outputs records them again (the command is in the failure message)
and the diff of that file shows which outputs moved.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import golden  # noqa: E402

COMMITTED = ROOT / "tests" / "data" / "golden" / "hashes.json"


def test_every_shipped_scenario_has_committed_hashes() -> None:
    recorded = json.loads(COMMITTED.read_text())
    stems = {key.split("/", 1)[0] for key in recorded}
    assert stems == {p.stem for p in golden.scenarios([])}
    assert all(recorded[f"{stem}/exit"] == "0" for stem in stems)


def test_shipped_scenarios_reproduce_the_committed_hashes(tmp_path: Path) -> None:
    after = golden.run_all(tmp_path, [], portable=True)
    differ = golden.differences(json.loads(COMMITTED.read_text()), after)
    assert not differ, (
        "outputs differ from tests/data/golden/hashes.json:\n  "
        + "\n  ".join(differ)
        + "\nif the change is meant to alter them: python tools/golden.py record --portable tests/data/golden"
    )


def test_portable_digest_leaves_out_figures_and_hashes_tables_by_content(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"t": [0.0, 0.5], "backlog": [3, 7]})
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    frame.to_parquet(first, compression="snappy")
    frame.to_parquet(second, compression="zstd")
    assert first.read_bytes() != second.read_bytes()
    assert golden.file_digest(first, portable=True) == golden.file_digest(second, portable=True)
    frame.assign(backlog=[3, 8]).to_parquet(second)
    assert golden.file_digest(first, portable=True) != golden.file_digest(second, portable=True)
    figure = tmp_path / "q.png"
    figure.write_bytes(b"\x89PNG")
    assert golden.file_digest(figure, portable=True) is None
    assert golden.file_digest(figure, portable=False) == golden.digest(b"\x89PNG")
