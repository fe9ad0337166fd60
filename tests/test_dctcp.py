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
from conftest import TWO_HOSTS

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


#: an iperf3 results message on the wire: Ethernet, IP, TCP with timestamps, 424 B of JSON
RESULTS_MESSAGE_LEN = 14 + 20 + 32 + 424


def test_dctcp_fills_the_link_with_the_queue_held_near_k(run):
    summary, root = run
    part = root / "dctcp"
    # both flows negotiated ECN and ran DCTCP (a dctcp-reno fallback would
    # send Not-ECT, which RED drops): marks held the queue, no data was dropped
    log = (part / "admin" / "terminal.log").read_text()
    m = re.search(r"marked (\d+) early (\d+) pdrop (\d+)", log)
    assert m, log
    marked, early, pdrop = map(int, m.groups())
    assert marked > 1000 and pdrop == 0, (marked, early, pdrop)
    (dctcp,) = [p for p in summary["parts"] if p["name"] == "dctcp"]
    assert all(c["retransmits"] == 0 for c in dctcp["results"]["iperf3"])
    # what RED did drop early are the clients' results messages as the test ends: the
    # modelled control connection sends Not-ECT (docs/models.md, "Tools and their output")
    drops = dctcp["drops"].get("s1-eth3", {})
    assert sum(d["packets"] for d in drops.values()) == early
    assert all(d["bytes"] == RESULTS_MESSAGE_LEN * d["packets"] for d in drops.values()), drops
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


BULK = ("""name = "bulk-dctcp"
""" + TWO_HOSTS + """[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: tbf rate 50mbit burst 50000 limit 1000000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: red limit 1000000 min 15000 max 16500 avpkt 1500 burst 10 probability 1.0 bandwidth 50mbit ecn",
  "h2: sysctl -w net.ipv4.tcp_congestion_control=dctcp",
  "h2: sink",
  "h1: bulk -c 10.0.0.2 -C dctcp -t 2",
  "admin: sleep 2.5; tc -s qdisc show dev s1-eth2",
]
""")


def test_bulk_dash_c_dctcp_runs_on_ecn_marks(tmp_path):
    from bufferlab.cli import main

    path = tmp_path / "b.toml"
    path.write_text(BULK)
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "--no-progress", "-q"]) == 0
    log = next((tmp_path / "out").rglob("admin/terminal.log")).read_text()
    m = re.search(r"marked (\d+) early (\d+) pdrop (\d+)", log)
    assert m and int(m.group(1)) > 0 and m.group(2) == "0" and m.group(3) == "0", log


# --- ns-3's dctcp-example (scenarios/dctcp-example.toml; docs/models.md "ns-3's dctcp-example") ---

EXAMPLE = ROOT / "scenarios" / "dctcp-example.toml"
# Linux RED as a step marker at K = ns-3's MinTh (the scenario header's --set lines)
STEP = {
    "aqm10": "red limit 3999000 min 75000 max 76500 avpkt 1500 burst 50 probability 1.0 bandwidth 10gbit ecn",
    "aqm1": "red limit 3999000 min 30000 max 31500 avpkt 1500 burst 20 probability 1.0 bandwidth 1gbit ecn",
}
# CI: every flow has started by 1.045 s; measure 1.5-2 s instead of ns-3's 4-5 s
SHORT = {"warmup_s": 1.5, "window_s": 0.5, "stop_s": 2}
PAYLOAD_10G = 10e9 * 1448 / 1514  # goodput of a full 10 Gbit/s wire, bit/s
PAYLOAD_1G = 1e9 * 1448 / 1514


def run_example(out: Path, **params) -> dict:
    """Run the example with ``params`` set; the program's figures from its outputs."""
    from bufferlab.scenario.params import Override

    sc = load_scenario(EXAMPLE, [Override(k, v, "--set") for k, v in params.items()])
    summary = run_scenario(sc, results_root=out, progress=False)
    assert not summary["failures"], summary["failures"]
    warmup = params.get("warmup_s", 4)
    window = params.get("window_s", 1)
    part = out / EXAMPLE.stem / "dctcp"
    log = (part / "admin" / "terminal.log").read_text()
    # the two ns3-goodput snapshots (at warmup and warmup + window): bytes per sink
    snaps = [dict((k, int(v)) for k, v in re.findall(r"(\w+):\n\tTotal Bytes Received:(\d+)", block))
             for block in log.split("It worked!")[:2]]
    assert len(snaps) == 2 and len(snaps[0]) == 40 and snaps[0].keys() == snaps[1].keys(), log[-2000:]
    rate = {k: (snaps[1][k] - snaps[0][k]) * 8 / window for k in snaps[0]}
    groups = {g: [v for k, v in rate.items() if k.startswith(g)] for g in ("s1r1", "s2r2", "s3r1")}
    # plot_q.sh's 10 ms samples (bytes) in the window, in 1514-byte packets
    queue = {}
    for iface in ("t1-eth1", "t2-eth2"):
        rows = [line.split() for line in (part / "admin" / f"q_{iface}.dat").read_text().splitlines()
                if line.strip()]
        t0 = float(rows[0][0])
        queue[iface] = [float(b) / PKT for t, b, *_ in rows if warmup - 1e-9 <= float(t) - t0 < warmup + window - 1e-9]
    marks = re.findall(r"marked (\d+) early (\d+) pdrop (\d+)", log)
    return {"groups": groups, "queue": queue, "log": log, "summary": summary, "marks": marks}


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def check_physics(r: dict) -> None:
    """What the topology implies, whichever marker: both bottlenecks full, shares as max-min
    fairness with two bottlenecks allots them, every group fair within itself."""
    g = r["groups"]
    assert [len(g[k]) for k in ("s1r1", "s2r2", "s3r1")] == [10, 20, 10]
    through_t1 = sum(g["s1r1"]) + sum(g["s2r2"])
    to_r1 = sum(g["s1r1"]) + sum(g["s3r1"])
    # t1 -> t2 carries s1 and s2: full (>= 9 Gbit/s, never above the wire's payload rate)
    assert 9e9 <= through_t1 <= PAYLOAD_10G * 1.001, through_t1
    assert 0.95 * PAYLOAD_1G <= to_r1 <= PAYLOAD_1G * 1.001, to_r1
    # s2's 20 flows get the 10 Gbit/s link less what s1 takes: about 9.5 G / 20 each, never
    # their 1 Gbit/s access rate; s1 and s3 split r1's 1 Gbit/s, s1 (marked at two queues) the
    # smaller part
    s1, s2, s3 = mean(g["s1r1"]), mean(g["s2r2"]), mean(g["s3r1"])
    assert 430e6 < s2 < 480e6, s2
    assert 10e6 < s1 < s3 < 80e6, (s1, s3)
    assert s2 > 5 * s3
    for k, xs in g.items():
        assert jain(xs) > 0.95, (k, jain(xs))


def check_ns3_ramp_queue(r: dict) -> None:
    """ns-3's ramp (MinTh 50, MaxTh 150, max_p 0.02, gentle to 300): the T1->T2 queue settles
    where the gentle ramp marks enough, above MaxTh, never near the 2666-packet buffer."""
    q = r["queue"]["t1-eth1"]
    assert len(q) >= 40, len(q)
    assert 150 < mean(q) < 250, mean(q)
    assert max(q) < 300, max(q)
    q2 = r["queue"]["t2-eth2"]
    assert 60 < mean(q2) < 120 and max(q2) < 120, (mean(q2), max(q2))
    # only marks: every flow runs DCTCP with ECN, so RED never drops at the bottlenecks
    assert r["marks"] and all(int(m) > 1000 and e == "0" and p == "0" for m, e, p in r["marks"]), r["marks"]


@pytest.fixture(scope="module")
def example_short(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_example(tmp_path_factory.mktemp("dctcp-example"), **SHORT)


@pytest.fixture(scope="module")
def example_short_step(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return run_example(tmp_path_factory.mktemp("dctcp-example-step"), **SHORT, **STEP)


def test_ns3_dctcp_example_fills_both_bottlenecks_with_fair_groups(example_short):
    check_physics(example_short)


def test_ns3_dctcp_example_ramp_holds_the_queue_in_the_gentle_region(example_short):
    check_ns3_ramp_queue(example_short)


def test_ns3_dctcp_example_step_marker_holds_the_queue_at_k(example_short, example_short_step):
    # the lesson: the same full links with a step at K = 50 (20) hold the queues near K,
    # a quarter of what ns-3's ramp lets build
    check_physics(example_short_step)
    q, q_ramp = example_short_step["queue"]["t1-eth1"], example_short["queue"]["t1-eth1"]
    assert 25 < mean(q) < 65 and max(q) < 120, (mean(q), max(q))
    assert mean(q) < mean(q_ramp) / 2.5, (mean(q), mean(q_ramp))
    q2 = example_short_step["queue"]["t2-eth2"]
    assert 10 < mean(q2) < 35, mean(q2)


@pytest.mark.slow
def test_ns3_dctcp_example_full_five_seconds(tmp_path):
    # the program's own timing: flows start over 1 s, 3 s to converge, measure 4-5 s
    r = run_example(tmp_path)
    check_physics(r)
    check_ns3_ramp_queue(r)
