"""System tests: whole scenarios, checked against first-principles expectations
(shaped rate in payload terms, RTT = propagation + backlog/rate, loss rates
within computed statistical bounds, packet conservation, determinism)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from conftest import SCENARIOS

LAB14_TOPO = """
[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""


def run(path: Path, out: Path, seed: int | None = None) -> dict:
    sc = load_scenario(path)
    if seed is not None:
        sc.seed = seed
    return run_scenario(sc, results_root=out, progress=False)


def ping_rtts(text: str) -> list[float]:
    return [float(m) for m in re.findall(r"time=([\d.]+) ms", text)]


def assert_conserved(summary: dict) -> None:
    p = summary["packets"]
    assert p["created"] == p["delivered"] + p["dropped"] + p["live"] + p["segmented"], p
    assert p["live"] == p["held"], p
    g = summary["segments"]
    assert g["created"] == g["delivered"] + g["dropped"] + g["live"], g


def sink_received(text: str) -> int:
    m = re.search(r"sink: received (\d+) packets", text)
    assert m, text
    return int(m.group(1))


@pytest.fixture(scope="module")
def udp_lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("udp")
    summary = run(SCENARIOS / "udp-tbf-netem.toml", out)
    return summary, out / "udp-tbf-netem"


def test_under_rate_udp_arrives_whole_and_ping_sees_the_base_rtt(udp_lab):
    summary, root = udp_lab
    doc = json.loads((root / "under-rate/h1/udp.json").read_text())
    s = doc["end"]["sum"]
    assert s["lost_packets"] == 0
    # 5 Mbit/s for 20 s in 1448-byte datagrams: floor(5e6*20/(8*1448)) + 1
    assert s["packets"] == 5_000_000 * 20 // (8 * 1448) + 1
    rtts = ping_rtts((root / "under-rate/h2/ping.txt").read_text())
    assert len(rtts) == 20
    # netem adds 20 ms one way; the first ping also waits for ARP across it
    assert rtts[0] == pytest.approx(40.0, abs=0.1)
    assert all(r == pytest.approx(20.0, abs=0.1) for r in rtts[1:])
    assert_conserved(summary)


def test_over_rate_udp_is_cut_to_the_shaped_rate_and_ping_waits_behind_the_full_buffer(udp_lab):
    summary, root = udp_lab
    server = (root / "over-rate/h3/terminal.log").read_text()
    m = re.search(r"sec\s+[\d.]+ MBytes\s+([\d.]+) Mbits/sec .*receiver", server)
    assert m, server
    # 10 Mbit/s of 1490-byte frames carries 10e6 * 1448/1490 bit/s of payload
    assert float(m.group(1)) == pytest.approx(10e6 * 1448 / 1490 / 1e6, abs=0.02)
    rtts = ping_rtts((root / "over-rate/h2/ping.txt").read_text())
    # Between arrivals (every 0.77 ms) and departures (every 1.19 ms) the bfifo
    # holds between limit - 2 frames and limit bytes; ping prints whole ms above 100 ms.
    limit = 150 * 1024
    full = limit // 1490 * 1490
    lo = 20 + (limit - 2 * 1490) * 8 / 10e6 * 1e3 - 0.5
    hi = 20 + (limit + 98) * 8 / 10e6 * 1e3 + 0.5
    assert len(rtts) == 15
    assert all(lo <= r <= hi for r in rtts), (lo, rtts, hi)
    # queue samples: the tbf's bfifo never holds more than its limit, and it fills
    dat = [line.split() for line in (root / "over-rate/admin/q_s1-eth2.dat").read_text().splitlines()]
    backlog = [int(b) for _, b in dat]
    assert max(backlog) <= limit
    assert max(backlog) >= full - 1490
    drops = summary["interfaces"]["s1-eth2"]["drops"]["queue_full"]["packets"]
    assert drops > 8000
    assert_conserved(summary)


def test_tc_statistics_add_up(udp_lab):
    _, root = udp_lab
    text = (root / "over-rate/admin/terminal.log").read_text()
    sent = [int(x) for x in re.findall(r"Sent (\d+) bytes", text)]
    dropped = [int(x) for x in re.findall(r"dropped (\d+),", text)]
    assert len(sent) == 2 and sent[0] == sent[1], "netem hands every packet to the tbf"
    assert dropped[0] == dropped[1] > 0, "the tbf's drops propagate to netem (docs/semantics/qdiscs.md §1.5)"


def test_same_seed_gives_identical_outputs_and_another_seed_does_not(tmp_path):
    def digest(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    path = SCENARIOS / "udp-tbf-netem.toml"
    run(path, tmp_path / "a")
    run(path, tmp_path / "b")
    run(path, tmp_path / "c", seed=99)
    a, b, c = (digest(tmp_path / x / "udp-tbf-netem") for x in "abc")
    for d in (a, b, c):  # run.json: the run's wall-clock start and length, by definition not repeatable
        del d["run.json"]
    assert a == b
    assert a.keys() == c.keys() and a != c  # ports, cookies differ with the seed


def test_netem_on_one_and_on_both_directions(write_scenario, tmp_path):
    path = write_scenario(f"""
name = "rtt"
{LAB14_TOPO}
[[part]]
name = "one-way"
cmds = ["admin: tc qdisc add dev s1-eth2 root netem delay 20ms", "h1: ping 10.0.0.3 -c 5 > p.txt"]
[[part]]
name = "both-ways"
cmds = ["admin: tc qdisc add dev s2-eth1 root netem delay 20ms", "h1: ping 10.0.0.3 -c 5 > p.txt"]
""")
    run(path, tmp_path)
    one = ping_rtts((tmp_path / "t/one-way/h1/p.txt").read_text())
    both = ping_rtts((tmp_path / "t/both-ways/h1/p.txt").read_text())
    assert one[1:] == [20.0] * 4
    assert both == [40.0] * 5, "ARP was resolved in the first part and the cache carries over"


def test_tclink_delay_is_installed_on_both_ends(write_scenario, tmp_path):
    path = write_scenario("""
name = "tclink"
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [{ a = "h1", b = "s1", delay = "10ms" }, ["s1", "h2"]]
[[part]]
name = "p"
cmds = ["h2: ping 10.0.0.1 -c 3 > p.txt", "admin: tc qdisc show dev s1-eth1"]
""")
    run(path, tmp_path)
    rtts = ping_rtts((tmp_path / "t/p/h2/p.txt").read_text())
    assert rtts[1:] == [20.0, 20.0]
    assert (
        "qdisc netem 10: root refcnt 2 limit 1000 delay 10.0ms"
        in (tmp_path / "t/p/admin/terminal.log").read_text()
    )


def test_random_loss_rate_is_within_its_statistical_bound(write_scenario, tmp_path):
    n = 40_000
    path = write_scenario(f"""
name = "loss"
seed = 3
{LAB14_TOPO}
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root netem loss 1%",
  "h3: sink -u",
  "h1: cbr -c 10.0.0.3 -u -r 8M -l 1000 -n {n * 1000}",
]
""")
    summary = run(path, tmp_path)
    received = sink_received((tmp_path / "t/p/h3/terminal.log").read_text())
    p = 42949673 / 2**32  # rint(0.01 * (2^32 - 1)) + 1 over 2^32 (docs/semantics/qdiscs.md §4.3)
    sigma = math.sqrt(p * (1 - p) / n)
    # The scenario ends when cbr exits, right after its last send; the sink is
    # Ctrl-C'd then. With the hosts' stack time (host.rs, issue 10) a datagram
    # takes 2·(2.25 µs + 0.61 ns·1042 B) ≈ 5.8 µs from cbr to the sink, far
    # less than the 1 ms between datagrams: exactly the last one is still on
    # its way (summary "live"), neither received nor lost.
    in_flight = summary["packets"]["live"]
    assert in_flight == 1
    lost = n - received - in_flight
    assert abs(lost / n - p) < 4 * sigma
    assert summary["interfaces"]["s1-eth2"]["drops"]["netem_loss"]["packets"] == lost
    assert_conserved(summary)


def test_cpm_scenario_classes_share_the_shaped_link(tmp_path):
    # the handout's runs: 3 × 0.9 Mbit/s into 8 Mbit/s, nothing to drop
    summary = run(SCENARIOS / "cpm-red.toml", tmp_path)
    root = tmp_path / "cpm-red"
    for part in ("plain-red", "classful-red"):
        un = (root / part / "host1/terminal.log").read_text()
        assert un.count("receiver") == 3
        assert re.findall(r"Class\d:  \[  5\].* (\d+)/\d+ \([\d.]+%\)  receiver", un) == ["0", "0", "0"]
    assert_conserved(summary)
    # the study's congested variant: three 3.5 Mbit/s flows share the 8 Mbit/s of frames
    summary = run(SCENARIOS / "cpm-red-congested.toml", tmp_path)
    co = (tmp_path / "cpm-red-congested/red/host1/terminal.log").read_text()
    got = sum(float(x) for x in re.findall(r"([\d.]+) Mbits/sec .*receiver", co))
    # 8e6 * 1448/1490 of payload in total
    assert got == pytest.approx(8 * 1448 / 1490, rel=0.03)
    assert_conserved(summary)


def _bulk_goodput(text: str) -> float:
    m = re.search(r"sink: received \d+ packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s", text)
    assert m, text
    return int(m.group(1)) * 8 / float(m.group(2))


def test_tcp_bulk_fills_the_bottleneck_and_a_small_rmem_caps_it_at_rwnd_over_rtt(write_scenario, tmp_path):
    # 50 Mbit/s tbf with a 1-BDP buffer, 20 ms one-way netem: RTT 20 ms, BDP 125 000 B.
    path = write_scenario(f"""
name = "bulk"
{LAB14_TOPO}
[[part]]
name = "big"
duration = "10s"
# the sink ends with the part (not 5 s of part_gap later, when the next part's
# sink line stops it): its goodput is over the transfer
interrupt = ["h3"]
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 10000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 50mbit burst 15k limit 125000",
  "h3: sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'",
  "h1: sysctl -w net.ipv4.tcp_wmem='10240 87380 52428800'",
  "h3: sink",
  "h1: bulk -c 10.0.0.3 -t 10",
]
[[part]]
name = "small-rmem"
duration = "10s"
cmds = [
  "h3: sysctl -w net.ipv4.tcp_rmem='4096 16384 16384'",
  "h3: sink",
  "h1: bulk -c 10.0.0.3 -t 10 -C reno",
]
""")
    summary = run(path, tmp_path)
    big = _bulk_goodput((tmp_path / "t/big/h3/terminal.log").read_text())
    # the sink's lifetime includes the handshake and the final drain; allow 7%
    assert big >= 0.93 * 50e6 * 1448 / 1514
    assert big <= 50e6 * 1448 / 1514
    small = _bulk_goodput((tmp_path / "t/small-rmem/h3/terminal.log").read_text())
    # rcvbuf 16384 B, half of it window (tcp_adv_win_scale = 1): 8192 B, in whole
    # segments 5 x 1448 = 7240 B per 20 ms RTT; delayed ACKs keep it somewhat below
    cap = 8192 // 1448 * 1448 * 8 / 0.020
    assert 0.75 * cap <= small <= cap * 1.01, (small, cap)
    assert "bulk: sent" in (tmp_path / "t/big/h1/terminal.log").read_text()
    assert_conserved(summary)


@pytest.mark.parametrize("gso", [True, False])
def test_iperf3_tcp_json_feeds_plot_iperf_and_netem_overflow_is_warned(write_scenario, tmp_path, gso):
    # 1 Gbit/s through netem 20 ms with its default limit 1000 (docs/semantics/qdiscs.md E7, P9).
    # netem's limit counts queue entries. With one packet per segment (gso off)
    # the delay line must hold 1 Gbit/s x 20 ms = 1651 frames of 1514 B: it
    # overflows, which is warned about, and caps the path at 1000 x 1514 B per
    # 20 ms = 605.6 Mbit/s. With TSO/GSO aggregates (the default, issue 10) an
    # entry carries up to 45 segments (68 130 B as tc counts it): the same
    # 2.5 MB are ~37 entries, so netem never overflows and the tbf sets the rate.
    sim = "" if gso else "[sim]\ngso = false\n"
    path = write_scenario(f"""
name = "plot"
{sim}{LAB14_TOPO}
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2621440",
  "h1: sysctl -w net.ipv4.tcp_wmem='10240 87380 52428800'",
  "h3: sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'",
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -t 3 -J > out.json",
  "h1: plot_iperf.sh out.json && cd results",
]
""")
    summary = run(path, tmp_path)
    doc = json.loads((tmp_path / "t/p/h1/out.json").read_text())
    assert doc["start"]["test_start"]["protocol"] == "TCP"
    assert doc["end"]["sender_tcp_congestion"] == "cubic"
    rows = (tmp_path / "t/p/h1/results/1.dat").read_text().splitlines()
    assert len(rows) == 3 and rows[0].split()[:3] == ["5", "0", "1"]
    for name in ("throughput", "cwnd", "RTT", "RTT_Var", "retransmits", "bytes", "MTU"):
        assert (tmp_path / f"t/p/h1/results/{name}.pdf").read_bytes().startswith(b"%PDF")
    warned = any("netem on s1-eth2 dropped" in w for w in summary["warnings"])
    got = doc["end"]["sum_received"]["bits_per_second"]
    cap = 1000 * 1514 * 8 / 0.020  # 605.6 Mbit/s
    if gso:
        assert not warned, summary["warnings"]
        # above netem's per-frame cap, so netem did not bind (3 s with slow start
        # and CUBIC's regrowth; the tbf's ceiling is 956 Mbit/s)
        assert cap < got <= 1e9 * 1448 / 1514
    else:
        assert warned, summary["warnings"]
        assert got < cap


def test_ns3_flavoured_hosts_use_ns3_segment_size_and_buffer(write_scenario, tmp_path):
    # The RED-vs-DropTail study's TCP: 536-byte segments, a 4000-byte receive
    # buffer advertised whole (ns-3), min RTO 1 s, initial window 1 segment.
    path = write_scenario(f"""
name = "ns3"
{LAB14_TOPO}
[hosts.h1]
tcp = {{ flavour = "ns3" }}
[hosts.h3]
tcp = {{ flavour = "ns3", mss = 536, min_rto = "1s", rcvbuf = 4000 }}
[[part]]
name = "p"
duration = "10s"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root netem delay 20ms",
  "h3: sink",
  "h1: bulk -c 10.0.0.3 -t 10",
]
""")
    run(path, tmp_path)
    text = (tmp_path / "t/p/h3/terminal.log").read_text()
    m = re.search(r"sink: received (\d+) packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s", text)
    assert m, text
    packets, nbytes, secs = int(m.group(1)), int(m.group(2)), float(m.group(3))
    assert nbytes / packets == pytest.approx(536, rel=0.01), "full segments carry 536 bytes"
    # window: the whole 4000-byte buffer in whole 536-byte segments, once per 20 ms RTT;
    # an odd 7-segment window leaves its last segment to the 40 ms delayed-ACK timer,
    # and the sink's lifetime includes slow start from 1 segment: well below the cap
    cap = 4000 // 536 * 536 * 8 / 0.020
    assert 0.4 * cap <= nbytes * 8 / secs <= cap * 1.01
    assert "reno" in (tmp_path / "t/p/h1/terminal.log").read_text(), "ns-3's TcpNewReno"


def test_iperf3_reverse_text_output_has_the_receiver_layout(write_scenario, tmp_path):
    path = write_scenario(f"""
name = "rev"
{LAB14_TOPO}
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s2-eth1 root handle 1: netem delay 10ms",
  "admin: tc qdisc add dev s2-eth1 parent 1: handle 2: tbf rate 50mbit burst 15k limit 125000",
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -t 3 -R",
]
""")
    run(path, tmp_path)
    text = (tmp_path / "t/p/h1/terminal.log").read_text()
    assert "Reverse mode, remote host 10.0.0.3 is sending" in text
    m = re.search(r"sec\s+[\d.]+ MBytes\s+([\d.]+) Mbits/sec\s+receiver", text)
    assert m, text
    # h3 -> h1 crosses s2-eth1's 50 Mbit/s tbf: payload at most 50e6 * 1448/1514
    assert float(m.group(1)) <= 50 * 1448 / 1514
    assert float(m.group(1)) > 0.8 * 50 * 1448 / 1514


def test_cpm_summary_has_a_per_class_table(tmp_path, capsys):
    summary = run(SCENARIOS / "cpm-red.toml", tmp_path)
    parts = {p["name"]: p["classes"] for p in summary["parts"]}
    assert [r["tos"] for r in parts["plain-red"]] == ["0x00", "0x32", "0x46"]
    assert all(r["dropped"] == 0 and r["sent"] == r["received"] for r in parts["plain-red"])
    summary = run(SCENARIOS / "cpm-red-congested.toml", tmp_path)
    parts = {p["name"]: p["classes"] for p in summary["parts"]}
    classful = {r["tos"]: r for r in parts["classful-red"]}
    for r in classful.values():
        assert r["dropped"] == r["sent"] - r["received"]
        assert r["dropped_pct"] == pytest.approx(100 * r["dropped"] / r["sent"], abs=1e-3)
    # coefficient 0.5 for 0x32 against 0.9 for the default class: fewest drops
    assert classful["0x32"]["dropped"] < min(classful["0x46"]["dropped"], classful["0x00"]["dropped"])
