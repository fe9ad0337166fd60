"""The handouts' own lines teach their labs (issues 10 and 11).

The shipped Lab 7, 14 and 16 scenarios are the handouts' command sequences
(tests/data/handouts/*.txt) verbatim: the first test diffs them. The other
tests run each shipped scenario unchanged, at full length (a few seconds of
wall time each, thanks to GSO aggregates), and check the lesson with numbers
derived from first principles:

- payload line rate of a 1 Gbit/s tbf: 1e9 · 1448/1514 = 956.4 Mbit/s (tc
  counts 1514-byte frames per 1448 bytes of payload);
- Lab 14/16 base RTT 20 ms (one netem delay) plus tens of µs of host time;
  a full buffer of B bytes adds B·8/rate: 1·BDP (2 621 440 B) 21.0 ms;
  with 10·BDP the receive window (half of tcp_rmem[2] = 26 214 400 B) caps
  the flight, so the RTT plateaus at 26 214 400 · 1514/1448 · 8 / 1e9 =
  219.3 ms;
- Lab 7 at 30 ms and 0.01 % loss: Reno is loss-bound (Mathis), BBR is not.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parent.parent
HANDOUTS = ROOT / "tests" / "data" / "handouts"
PAYLOAD_LINE_MBPS = 1e3 * 1448 / 1514
RWND_CAPPED_RTT_MS = 26_214_400 * 1514 / 1448 * 8 / 1e9 * 1e3
BDP_QUEUE_MS = 2_621_440 * 8 / 1e9 * 1e3


def handout_lines(name: str) -> list[str]:
    text = (HANDOUTS / f"{name}.txt").read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def scenario_lines(name: str) -> list[str]:
    data = tomllib.loads((ROOT / "scenarios" / f"{name}.toml").read_text(encoding="utf-8"))
    return [cmd for part in data["part"] for cmd in part["cmds"]]


@pytest.mark.parametrize("name", ["lab7-bbr", "lab14-bufferbloat", "lab16-red"])
def test_shipped_lab_scenarios_are_the_handouts_verbatim(name):
    # only comments, durations, interrupts and part headers may differ: the lines are the same
    assert scenario_lines(name) == handout_lines(name)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    out = {}
    tmp = tmp_path_factory.mktemp("labs")
    for name in ("lab14-bufferbloat", "lab16-red", "lab7-bbr"):
        summary = run_scenario(load_scenario(ROOT / "scenarios" / f"{name}.toml"), results_root=tmp,
                               progress=False)
        assert not summary.get("failures"), summary["failures"]
        p, g = summary["packets"], summary["segments"]
        assert p["created"] == p["delivered"] + p["dropped"] + p["live"] + p["segmented"], p
        assert g["created"] == g["delivered"] + g["dropped"] + g["live"], g
        out[name] = tmp / name
    return out


def ping(part: Path, host: str = "h2") -> list[float]:
    log = (part / host / "terminal.log").read_text()
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", log)]


def goodput_mbps(json_path: Path) -> float:
    return json.loads(json_path.read_text())["end"]["sum_received"]["bits_per_second"] / 1e6


def test_lab14_one_bdp_runs_at_line_rate_with_at_most_one_bdp_of_queueing(runs):
    part = runs["lab14-bufferbloat"] / "1bdp"
    assert 0.95 * PAYLOAD_LINE_MBPS <= goodput_mbps(part / "h1/out.json") <= PAYLOAD_LINE_MBPS * 1.001
    rtts = ping(part)[1:]
    assert len(rtts) == 89
    # never below the propagation delay, never above it plus a full 1·BDP buffer
    # (and a frame or two of tbf burst; ping prints 3 significant digits)
    assert min(rtts) >= 20.0
    assert max(rtts) <= 20.0 + BDP_QUEUE_MS + 0.5
    # the buffer really fills: cubic keeps it more than half full on average
    assert sum(rtts) / len(rtts) >= 20.0 + BDP_QUEUE_MS / 2


def test_lab14_ten_bdp_shows_bufferbloat_at_the_same_goodput(runs):
    root = runs["lab14-bufferbloat"]
    ten = root / "10bdp"
    assert 0.95 * PAYLOAD_LINE_MBPS <= goodput_mbps(ten / "h1/out.json") <= PAYLOAD_LINE_MBPS * 1.001
    rtts = ping(ten)
    # after slow start the flight is the receive window: the RTT plateaus at
    # rwnd's drain time (up to one 64 KB aggregate, 0.5 ms, held back by TSO
    # deferral; ping prints whole ms above 100 ms)
    plateau = rtts[30:]
    assert all(RWND_CAPPED_RTT_MS - 2.0 <= r <= RWND_CAPPED_RTT_MS + 1.0 for r in plateau), plateau
    # ten times the 1·BDP part's queueing delay, give or take
    one = ping(root / "1bdp")[1:]
    assert sum(plateau) / len(plateau) - 20 >= 5 * (sum(one) / len(one) - 20)


def test_lab14_hundred_mtu_buffer_below_the_tbf_burst_costs_goodput(runs):
    # a 160 000 B buffer is smaller than the 500 000 B burst the tbf releases
    # after idle periods: the sender's bursts overflow it and CUBIC backs off
    part = runs["lab14-bufferbloat"] / "100mtu"
    log = (part / "h1/terminal.log").read_text()
    m = re.search(r"([\d.]+) Mbits/sec\s+(\d+)\s+sender", log)
    assert m, log[-500:]
    assert float(m[1]) < 0.7 * PAYLOAD_LINE_MBPS
    assert int(m[2]) > 100


def test_lab16_red_cuts_the_queueing_delay_at_the_same_goodput(runs):
    root = runs["lab16-red"]
    drop_tail, red = root / "droptail-10bdp", root / "red"
    g_dt, g_red = goodput_mbps(drop_tail / "h1/out.json"), goodput_mbps(red / "h1/out.json")
    assert g_red >= 0.95 * PAYLOAD_LINE_MBPS and abs(g_red - g_dt) <= 0.02 * g_dt
    dt, rd = ping(drop_tail)[30:], ping(red)[30:]
    # RED's thresholds (min 2 184 533 B = 17.5 ms of queue at 1 Gbit/s) hold the
    # average queue near the bottom of its band; drop-tail lets the window fill
    assert max(rd) <= 20.0 + 2 * 17.5
    assert sum(rd) / len(rd) <= 0.25 * sum(dt) / len(dt)


def test_lab16_red_tuned_for_one_gigabit_lets_the_queue_grow_at_100_mbit(runs):
    # the same byte thresholds at 100 Mbit/s are 175–700 ms of queue
    part = runs["lab16-red"] / "red-100mbit"
    g = goodput_mbps(part / "h1/out.json")
    assert 0.9 * 100 * 1448 / 1514 <= g <= 100 * 1448 / 1514 * 1.01
    rtts = ping(part)[30:]
    assert sum(rtts) / len(rtts) >= 20.0 + 100.0


def test_lab7_bbr_keeps_the_link_under_random_loss_and_reno_does_not(runs):
    part = runs["lab7-bbr"] / "30ms"
    reno, bbr = goodput_mbps(part / "h1/reno.json"), goodput_mbps(part / "h1/bbr.json")
    # the server typed in part 1 still listens; it takes part 2's 150 MB buffers for the
    # connections it accepts (Linux reads the sysctls at socket creation)
    assert bbr >= 0.9 * PAYLOAD_LINE_MBPS, bbr
    assert reno <= 0.5 * bbr, (reno, bbr)
