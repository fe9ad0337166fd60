"""System tests for the AQM qdiscs (docs/semantics/qdiscs.md §8): a TCP bulk flow fills a
10 Mbit/s tbf bottleneck (10 ms one-way netem in front of it, so the base
RTT is 10 ms) while a ping measures the RTT through the same queue.

- drop-tail: the tbf's default 250 000-byte bfifo fills (200 ms at 10 Mbit/s),
  ping waits behind it;
- fq_codel as the tbf's child: ping is a sparse flow in its own queue and
  sees the base RTT;
- codel as the tbf's child: ping shares the one queue, whose sojourn time
  CoDel holds near its 5 ms target;
- pie as the tbf's child: the queueing delay is held near PIE's 15 ms target.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario

BASE_RTT = 10.0


def _part(name: str, child: str | None) -> str:
    cmds = [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms limit 10000",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 10mbit burst 5k limit 250000",
    ]
    if child:
        cmds.append(f"admin: tc qdisc add dev s1-eth2 parent 2: handle 3: {child}")
    cmds += [
        "h3: sink",
        "h1: bulk -c 10.0.0.3 -t 10",
        "h2: ping 10.0.0.3 -c 10 > ping.txt",
        "admin: sleep 8",
        "admin: tc -s qdisc show dev s1-eth2",
    ]
    body = ",\n  ".join(f'"{c}"' for c in cmds)
    return f'[[part]]\nname = "{name}"\nduration = "12s"\ncmds = [\n  {body},\n]\n'


# One scenario per variant: every part starts from a fresh network.
TOPO = """
seed = 5
[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""
VARIANTS = {"droptail": None, "fq-codel": "fq_codel", "codel": "codel", "pie": "pie"}


def ping_rtts(text: str) -> list[float]:
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", text)]


def goodput(text: str) -> float:
    m = re.search(r"sink: received \d+ packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s", text)
    assert m, text
    return int(m.group(1)) * 8 / float(m.group(2))


@pytest.fixture(scope="module")
def aqm(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("aqm")
    summaries = {}
    for name, child in VARIANTS.items():
        p = out / f"{name}.toml"
        p.write_text(f'name = "{name}"\n' + TOPO + _part(name, child), encoding="utf-8")
        summaries[name] = run_scenario(load_scenario(p), results_root=out / "runs", progress=False)
    return summaries, out / "runs"


def steady(root: Path, part: str) -> list[float]:
    """RTTs once the bulk flow has filled the queue (skip ARP and slow start)."""
    rtts = ping_rtts((root / part / part / "h2/ping.txt").read_text())
    assert len(rtts) == 10
    return rtts[2:]


def test_droptail_ping_waits_behind_the_full_buffer(aqm):
    _, root = aqm
    rtts = steady(root, "droptail")
    mean = sum(rtts) / len(rtts)
    # 250 000 B at 10 Mbit/s = 200 ms of queue when full; cubic keeps it mostly full
    assert mean > 80.0, rtts
    assert max(rtts) > 150.0, rtts


def test_fq_codel_keeps_the_ping_at_the_base_rtt(aqm):
    summary, root = aqm
    rtts = steady(root, "fq-codel")
    mean = sum(rtts) / len(rtts)
    # a sparse flow waits at most for the packet in service (1.2 ms) plus the tbf
    assert mean < BASE_RTT + 2.0, rtts
    assert max(rtts) < BASE_RTT + 5.0, rtts
    # the link stays full
    assert goodput((root / "fq-codel/fq-codel/h3/terminal.log").read_text()) > 0.75 * 10e6 * 1448 / 1514
    show = (root / "fq-codel/fq-codel/admin/terminal.log").read_text()
    assert "qdisc fq_codel 3: parent 2: limit 10240p flows 1024 quantum 1514 target 5.0ms" in show
    assert "new_flows_len" in show
    p = summary["fq-codel"]["packets"]
    assert p["created"] == p["delivered"] + p["dropped"] + p["live"] + p["segmented"]


def test_codel_holds_the_queueing_delay_near_its_target(aqm):
    _, root = aqm
    rtts = steady(root, "codel")
    queueing = [r - BASE_RTT for r in rtts]
    mean = sum(queueing) / len(queueing)
    # sojourn held near target = 5 ms (well below drop-tail's ~100-200 ms)
    assert 0.5 < mean < 10.0, rtts
    show = (root / "codel/codel/admin/terminal.log").read_text()
    m = re.search(r"qdisc codel 3: parent 2: .*\n Sent \d+ bytes \d+ pkt \(dropped (\d+),", show)
    assert m, show
    assert int(m.group(1)) > 0
    # maxpacket is the largest entry CoDel saw: a TSO aggregate of whole 1514-byte frames
    m = re.search(r"maxpacket (\d+) ", show)
    assert "  count " in show and m and int(m[1]) % 1514 == 0 and int(m[1]) >= 1514, show
    assert goodput((root / "codel/codel/h3/terminal.log").read_text()) > 0.75 * 10e6 * 1448 / 1514


def test_codel_drops_reach_every_ancestor(aqm):
    _, root = aqm
    show = (root / "codel/codel/admin/terminal.log").read_text()
    drops = [int(x) for x in re.findall(r"\(dropped (\d+),", show)]
    assert len(drops) == 3 and drops[0] == drops[1] == drops[2] > 0, show


def test_pie_holds_the_queueing_delay_near_its_target(aqm):
    _, root = aqm
    rtts = steady(root, "pie")
    queueing = [r - BASE_RTT for r in rtts]
    mean = sum(queueing) / len(queueing)
    # PIE's target is 15 ms: far below drop-tail, above CoDel's 5 ms
    assert mean < 40.0, rtts
    show = (root / "pie/pie/admin/terminal.log").read_text()
    assert "qdisc pie 3: parent 2: limit 1000p target 15.0ms tupdate 16.0ms alpha 2 beta 20 " in show
    assert "  pkts_in " in show
    assert goodput((root / "pie/pie/h3/terminal.log").read_text()) > 0.75 * 10e6 * 1448 / 1514
