from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bufferlab.commands.shell import parse_shell
from bufferlab.commands.tc import parse_tc
from bufferlab.errors import Diagnostics
from bufferlab.profile import PROFILES
from bufferlab.run.engine import Engine
from bufferlab.run.tc_shadow import send_tc

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
#: the smallest lab network: h1 -- s1 -- h2 (s1-eth2 faces h2)
TWO_HOSTS = """[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["s1", "h2"]]
"""


def hog_and_thin(name: str, child_line: str, head: str = "") -> str:
    """A scenario in which a UDP hog (h1, 40 Mbit/s) and a thin UDP flow (h2, 40 kbit/s, 102
    frames) share s1-eth3 towards h3: a 1 Mbit/s tbf (handle 1:) with the qdisc of
    ``child_line`` below it, a whole ``tc qdisc add … parent 1: handle 2: KIND`` line (written
    out at the call, so that test_schema's scan of sample lines sees the kind). The sinks
    write hog.txt and thin.txt on h3; admin's log ends with ``tc -s qdisc show dev s1-eth3``.
    ``head``: lines after the name and seed (a ``[sim]`` table)."""
    return f"""name = "{name}"
seed = 3
{head}[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1"]
links = [["h1", "s1"], ["h2", "s1"], ["s1", "h3"]]

[[part]]
name = "hog"
duration = "4s"
cmds = [
  "admin: tc qdisc add dev s1-eth3 root handle 1: tbf rate 1mbit burst 10k limit 100000",
  "admin: {child_line}",
  "h3: sink -u -p 5001 > hog.txt &",
  "h3: sink -u -p 5002 > thin.txt",
  "h1: cbr -c 10.0.0.3 -u -r 40mbit -l 972 -p 5001 -t 3.5",
  "h2: cbr -c 10.0.0.3 -u -r 40kbit -l 172 -p 5002 -t 3.5",
  "admin: sleep 3.6; tc -s qdisc show dev s1-eth3",
]
"""


def sink_received(text: str) -> int:
    """The packet count of a ``sink`` report."""
    m = re.search(r"sink: received (\d+) packets", text)
    assert m, text
    return int(m.group(1))


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


class TcEngine:
    """An idle engine with one device ``x`` (a veth to ``y``) that takes ``tc`` lines as a
    run does (run/tc_shadow.py ``send_tc``): what a line does to the engine's qdiscs,
    without a scenario."""

    def __init__(self, profile: str = "modern") -> None:
        self.profile = PROFILES[profile]
        self.engine = Engine({
            "seed": 1,
            "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}],
            "links": [{"a": {"node": "h1", "intf": "x", "ip": "10.0.0.1"},
                       "b": {"node": "h2", "intf": "y", "ip": "10.0.0.2"}, "rate_bps": 0, "delay_ns": 0}],
        })

    def __call__(self, line: str) -> str:
        """Apply one modifying ``tc`` line; the warning tc prints, else "" (``TcFailure``:
        tc's error text)."""
        words = parse_shell(line)[0].commands[0].words
        parsed = parse_tc(words, Diagnostics(), self.profile)
        return send_tc(self.engine, parsed, {**parsed.to_dict(), "dev": parsed.dev})

    def block(self, kind: str) -> dict[str, Any]:
        """The ``qdisc_show`` block of the first qdisc of that kind on ``x``."""
        return next(b for b in self.engine.qdisc_show("x") if b["kind"] == kind)
