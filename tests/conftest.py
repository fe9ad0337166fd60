from __future__ import annotations

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
