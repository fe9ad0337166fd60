from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
#: the smallest lab network: h1 -- s1 -- h2 (s1-eth2 faces h2)
TWO_HOSTS = """[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["s1", "h2"]]
"""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="run long experiments")


def level_markers() -> dict[str, str]:
    """Test file name -> its level's marker, from the "By level" table of tests/README.md
    (the one place that says which file tests what)."""
    markers: dict[str, str] = {}
    for row in (ROOT / "tests" / "README.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"`\w+`", cells[1]):
            continue
        for name in re.findall(r"`(test_\w+\.py)`", cells[2]):
            markers[name] = cells[1].strip("`")
    return markers


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markers = level_markers()
    unlisted = sorted({item.path.name for item in items} - markers.keys())
    if unlisted:
        raise pytest.UsageError(
            f"{', '.join(unlisted)}: not in tests/README.md's 'By level' table; "
            "add each to the row of its level (that row's marker is how -m selects it)"
        )
    for item in items:
        item.add_marker(getattr(pytest.mark, markers[item.path.name]))
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="long experiment: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def write_scenario(tmp_path: Path):
    """Write a scenario file into a temporary folder and return its path."""

    def write(text: str, name: str = "t.toml") -> Path:
        p = tmp_path / name
        p.write_text(text, encoding="utf-8")
        return p

    return write
