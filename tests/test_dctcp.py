"""DCTCP end to end (issue 26): the sysctl, iperf3 -C and bulk -C names, Accurate
ECN refused, and the steady-state lesson of scenarios/dctcp-steady-state.toml
(Alizadeh et al., SIGCOMM 2010, §3.3; docs/models.md "DCTCP steady state")."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.shell import parse_shell
from bufferlab.commands.sysctl import parse_sysctl
from bufferlab.errors import Diagnostics

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "dctcp-steady-state.toml"

K = 20  # the scenario's marking threshold, packets
N = 2  # flows
PKT = 1514  # bytes a full segment occupies in the queue
C = 100e6 / (PKT * 8)  # packets per second
RTT = 0.010  # base round trip, s


def W(line: str):
    """The words of the single command in ``line``."""
    return parse_shell(line)[0].commands[0].words


@pytest.mark.parametrize("mode", [3, 4, 5])
def test_accurate_ecn_modes_are_sysctl_values(mode):
    cmd = parse_sysctl(W(f"sysctl -w net.ipv4.tcp_ecn={mode}"), Diagnostics())
    assert cmd.writes() == [("net.ipv4.tcp_ecn", mode)]


def test_dctcp_and_ecn_fallback_are_sysctls():
    cmd = parse_sysctl(W("sysctl -w net.ipv4.tcp_congestion_control=dctcp net.ipv4.tcp_ecn_fallback=0"),
                       Diagnostics())
    assert cmd.writes() == [("net.ipv4.tcp_congestion_control", "dctcp"), ("net.ipv4.tcp_ecn_fallback", 0)]


def queue_packets(path: Path) -> list[tuple[float, float]]:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return [(float(t), float(b) / PKT) for t, b, *_ in rows]


def goodput_bps(log: str) -> float:
    """The receiver line of an iperf3 client's summary, bits/s."""
    m = re.search(r"\[\s*\d+\]\s+0\.00-\S+\s+sec\s+\S+ \S+\s+([\d.]+) (\w)bits/sec\s+receiver", log)
    assert m, log[-600:]
    return float(m.group(1)) * {"K": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("dctcp")
    summary = run_scenario(load_scenario(SCENARIO), results_root=out, progress=False)
    return summary, out / SCENARIO.stem


def steady(samples: list[tuple[float, float]]) -> list[float]:
    t0 = samples[0][0]
    return [q for t, q in samples if t0 + 5.0 <= t <= t0 + 19.0]


def test_dctcp_fills_the_link_with_the_queue_held_near_k(run):
    _, root = run
    part = root / "dctcp"
    # both flows negotiated ECN and ran DCTCP (a dctcp-reno fallback would
    # send Not-ECT, which RED drops): marks held the queue, nothing was dropped
    log = (part / "admin" / "terminal.log").read_text()
    m = re.search(r"marked (\d+) early (\d+) pdrop (\d+)", log)
    assert m, log
    marked, early, pdrop = map(int, m.groups())
    assert marked > 1000 and early == 0 and pdrop == 0, (marked, early, pdrop)
    # full link: the two receivers' goodput adds up to the link's payload rate
    total = sum(goodput_bps((part / h / "terminal.log").read_text()) for h in ("h1", "h2"))
    full = 100e6 * 1448 / PKT
    assert total > 0.95 * full, total
    # the queue: oscillates below Q_max = K + N and never runs empty
    q = steady(queue_packets(part / "admin" / "q_s1-eth3.dat"))
    mean = sum(q) / len(q)
    empty = sum(1 for x in q if x < 1) / len(q)
    assert K / 2 < mean < K + N + 2, mean
    assert max(q) <= K + N + 4, max(q)
    assert empty < 0.01, empty
    # the oscillation's amplitude, the paper's A = ½·sqrt(2N(C·RTT + K)):
    # about 10 packets here; measured as the 2nd-98th percentile spread
    a = 0.5 * math.sqrt(2 * N * (C * RTT + K))
    qs = sorted(q)
    spread = qs[int(0.98 * len(qs))] - qs[int(0.02 * len(qs))]
    assert 0.5 * a < spread < 2.0 * a, (spread, a)


def test_reno_with_classic_ecn_empties_the_queue_dctcp_does_not(run):
    _, root = run
    q_dctcp = steady(queue_packets(root / "dctcp" / "admin" / "q_s1-eth3.dat"))
    q_reno = steady(queue_packets(root / "reno-ecn" / "admin" / "q_s1-eth3.dat"))
    empty = [sum(1 for x in q if x < 1) / len(q) for q in (q_dctcp, q_reno)]
    assert empty[1] > 0.05 and empty[1] > 10 * empty[0], empty
    g = [sum(goodput_bps((root / p / h / "terminal.log").read_text()) for h in ("h1", "h2"))
         for p in ("dctcp", "reno-ecn")]
    assert g[1] < g[0], g


BULK = """name = "bulk-dctcp"
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["s1", "h2"]]
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: tbf rate 50mbit burst 50000 limit 1000000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: red limit 1000000 min 15000 max 16500 avpkt 1500 burst 10 probability 1.0 bandwidth 50mbit ecn",
  "h2: sysctl -w net.ipv4.tcp_congestion_control=dctcp",
  "h2: sink",
  "h1: bulk -c 10.0.0.2 -C dctcp -t 2",
  "admin: sleep 2.5; tc -s qdisc show dev s1-eth2",
]
"""


def test_bulk_dash_c_dctcp_runs_on_ecn_marks(tmp_path):
    from bufferlab.cli import main

    path = tmp_path / "b.toml"
    path.write_text(BULK)
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "--no-progress", "-q"]) == 0
    log = next((tmp_path / "out").rglob("admin/terminal.log")).read_text()
    m = re.search(r"marked (\d+) early (\d+) pdrop (\d+)", log)
    assert m and int(m.group(1)) > 0 and m.group(2) == "0" and m.group(3) == "0", log
