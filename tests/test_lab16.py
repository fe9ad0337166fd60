"""Lab 16 at its own rate (1 Gbit/s, 20 ms): the shipped scenario with 20 s
transfers instead of 90 s and eight parallel streams for a steady load
(issue #5 item 6). One run serves every test of the module.

RED's thresholds in the handout (min 2 184 533 B, max 8 738 133 B) are
17.5 ms and 69.9 ms of queue at 1 Gbit/s. TCP needs a very small loss rate at
this bandwidth-delay product (Mathis: p ≈ 1.5/W² with W of a few hundred
packets per flow ⇒ p ~ 1e-5), which RED reaches barely above `min`: the
average settles at the bottom of the band, never near `max`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario

SCENARIO = Path(__file__).parent.parent / "scenarios" / "lab16-red.toml"
MIN_B, MAX_B = 2_184_533, 8_738_133
LINE_RATE = 1e9
BASE_RTT_MS = 20.0


@pytest.fixture(scope="module")
def lab16(tmp_path_factory) -> Path:
    text = SCENARIO.read_text(encoding="utf-8")
    assert text.count("-t 90") == 3 and text.count("-c 90") == 3
    text = text.replace("-t 90", "-t 20 -P 8").replace("-c 90", "-c 20")
    tmp = tmp_path_factory.mktemp("lab16")
    path = tmp / "lab16.toml"
    path.write_text(text, encoding="utf-8")
    summary = run_scenario(load_scenario(path), results_root=tmp, progress=False)
    p = summary["packets"]
    assert p["created"] == p["delivered"] + p["dropped"] + p["live"] + p["segmented"], p
    return tmp / "lab16"


def ping_rtts(part: Path) -> dict[str, float]:
    log = (part / "h2/terminal.log").read_text()
    m = re.search(r"rtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)/", log)
    assert m, "no ping statistics"
    return {"min": float(m[1]), "avg": float(m[2]), "max": float(m[3])}


def goodput_bps(part: Path) -> float:
    return json.loads((part / "h1/out.json").read_text())["end"]["sum_received"]["bits_per_second"]


def steady_backlog(part: Path) -> list[float]:
    """plot_q.sh samples (bytes) once the flows are past slow start."""
    rows = [line.split() for line in (part / "admin/q_s2-eth2.dat").read_text().splitlines() if line.strip()]
    return [float(b) for t, b, *_ in rows if 3.0 <= float(t) <= 20.0]


def test_red_holds_the_average_queue_at_the_bottom_of_its_band(lab16):
    q = steady_backlog(lab16 / "red")
    mean = sum(q) / len(q)
    assert 0.9 * MIN_B <= mean <= MAX_B, mean
    assert max(q) < MAX_B, max(q)
    red = json.loads((lab16 / "summary.json").read_text())["interfaces"]["s2-eth2"]["qdiscs"][1]
    assert red["kind"] == "red"
    # never forced: the average stayed below max and the 25 MB limit never filled
    assert red["xstats"]["pdrop"] == 0 and red["xstats"]["early"] > 0, red["xstats"]


def test_red_cuts_the_ping_rtt_of_droptail_10bdp_by_four_at_line_rate(lab16):
    tail, red = ping_rtts(lab16 / "droptail-10bdp"), ping_rtts(lab16 / "red")
    assert red["min"] >= BASE_RTT_MS and tail["min"] >= BASE_RTT_MS
    assert tail["avg"] >= 4 * red["avg"], (tail, red)
    # the drop-tail queue is bounded by its 25 MB limit: 209.7 ms + 20 ms
    assert tail["max"] <= BASE_RTT_MS + 26_214_400 * 8 / LINE_RATE * 1e3 + 1.0, tail
    for part in ("droptail-10bdp", "red"):
        g = goodput_bps(lab16 / part)
        assert 0.85 * LINE_RATE <= g <= LINE_RATE, (part, g)


def test_red_tuned_for_1gbit_brings_bufferbloat_back_at_100mbit(lab16):
    red, slow = ping_rtts(lab16 / "red"), ping_rtts(lab16 / "red-100mbit")
    assert slow["avg"] >= 4 * red["avg"], (red, slow)
    g = goodput_bps(lab16 / "red-100mbit")
    assert 0.85 * 100e6 <= g <= 100e6, g
    # the queue RED now tolerates is ten times longer in time: its min
    # threshold alone is 175 ms at 100 Mbit/s, and ping waits behind it
    q = steady_backlog(lab16 / "red-100mbit")
    queue_delay_ms = sum(q) / len(q) * 8 / 100e6 * 1e3
    assert queue_delay_ms >= 0.9 * MIN_B * 8 / 100e6 * 1e3
    assert abs((slow["avg"] - BASE_RTT_MS) - queue_delay_ms) <= 0.15 * queue_delay_ms, (slow, queue_delay_ms)
