"""First-principles validation of the TCP model (docs/semantics/tcp.md §15–§16).

Every test runs a whole scenario on Lab 14's topology (h1, h2 -- s1 -- s2 --
h3; s1-eth2 faces s2) and compares what the tools report with a number
computed here from the path: line rate, propagation delay, buffer size, loss
probability. Unless a test says otherwise the path is the handouts' one: a
netem delay line as the root of s1-eth2 (one way, towards h3) with a tbf as
its child, and Lab 14's socket buffers (tcp_rmem/tcp_wmem 10240 87380
52428800) so that the window never binds unless a test wants it to.

netem always gets `limit 100000`: with one packet per segment (`[sim] gso =
false`, which the tests of per-packet laws use) at 1 Gbit/s × 20 ms the delay
line holds ~1651 of them, more than netem's default limit of 1000 (which would
cap the path at 605 Mbit/s, docs/semantics/qdiscs.md P9); with TSO/GSO aggregates (the
default since issue 10) it holds ~40 entries and the limit is moot.

Units: a full segment carries MSS = 1448 B of payload in a 1514 B frame as
tc counts it (docs/semantics/tcp.md §2), so goodput behind `tbf rate R` is at most
R·1448/1514 (956.4 Mbit/s at 1 Gbit/s). BDP = R·RTT/8 bytes.

Where a full-size run (1 Gbit/s, as in the labs) takes more than ~2 s it is
marked slow, and a scaled copy (100 Mbit/s, same RTT and the same buffer in
BDPs, so the same physics) runs by default.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario

MSS = 1448  # payload of a full segment (1460 - 12 bytes of timestamp option)
FRAME = 1514  # the same segment as tc counts it (14 Ethernet + 20 IP + 32 TCP)
RTT = 0.020  # netem delay 20ms on the forward path only: the base RTT
LAB_BUFFERS = "10240 87380 52428800"
#: [lab2019] the window is half the buffer: win_from_space(tcp_rmem[2])
LAB_RWND = 52428800 // 2

TOPO = """
[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""


def payload_rate(line_bps: float) -> float:
    """Goodput ceiling behind a tbf of `line_bps` (docs/semantics/tcp.md §15)."""
    return line_bps * MSS / FRAME


def bdp_bytes(line_bps: float, rtt: float = RTT) -> float:
    return line_bps * rtt / 8


def path(rate: str, limit: int, *, burst: str = "15k", netem: str = "delay 20ms") -> list[str]:
    """netem (root 1:, forward direction) + tbf (2:) on s1-eth2, as in Lab 14."""
    return [
        f"admin: tc qdisc add dev s1-eth2 root handle 1: netem {netem} limit 100000",
        f"admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate {rate} burst {burst} limit {limit}",
    ]


def big_buffers(*hosts: str) -> list[str]:
    out = []
    for h in hosts:
        out += [f"{h}: sysctl -w net.ipv4.tcp_rmem='{LAB_BUFFERS}'",
                f"{h}: sysctl -w net.ipv4.tcp_wmem='{LAB_BUFFERS}'"]
    return out


#: `[sim]` lines for a textbook, per-packet law: one queue entry (and one
#: netem loss draw) per MTU segment, as the law assumes (issue 10: by default
#: TCP sends TSO/GSO aggregates of up to 45 segments, as on a Mininet VM)
PER_SEGMENT = "gso = false"
#: `[sim]` lines without the hosts' stack time (host.rs): a window leaves a
#: host as one train at one instant
NO_HOST_TIME = "host_packet_ns = 0\nhost_byte_ps = 0\nhost_wakeup_ns = 0"


def run(folder: Path, cmds: list[str], sim: str = "") -> tuple[Path, dict]:
    """Run a one-part scenario in `folder` (`sim`: lines of its `[sim]` table);
    returns the part's results folder and the summary."""
    folder.mkdir(parents=True, exist_ok=True)
    body = ",\n".join(f'  "{c}"' for c in cmds)
    p = folder / "t.toml"
    sim_table = f"[sim]\n{sim}\n" if sim else ""
    text = f'name = "v"\nseed = 1\n{sim_table}{TOPO}\n[[part]]\nname = "p"\ncmds = [\n{body}\n]\n'
    p.write_text(text, encoding="utf-8")
    summary = run_scenario(load_scenario(p), results_root=folder, progress=False)
    return folder / "t" / "p", summary


def iperf3_json(root: Path, name: str = "o.json") -> dict:
    return json.loads((root / "h1" / name).read_text())


def received_bps(doc: dict) -> float:
    return doc["end"]["sum_received"]["bits_per_second"]


def sink_goodput(root: Path) -> float:
    text = (root / "h3" / "terminal.log").read_text()
    m = re.search(r"sink: received \d+ packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s", text)
    assert m, text
    return int(m.group(1)) * 8 / float(m.group(2))


def ping_rtts(root: Path, node: str = "h2") -> list[float]:
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", (root / node / "terminal.log").read_text())]


def jain(xs: list[float]) -> float:
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs))


def reno_sawtooth(line_bps: float, buffer_pkts: float, rtt: float = RTT) -> tuple[float, float]:
    """Utilisation and period (s) of one Reno flow on a drop-tail bottleneck.

    P = BDP in packets, B = buffer in packets. cwnd grows by one segment per
    round (Linux counts acked segments, so delayed ACKs do not slow it) from
    W0 = (P+B)/2 to W = P+B, where the buffer overflows and cwnd halves. A
    round with window w delivers w segments; it lasts one base RTT while
    w <= P and w/P base RTTs once the queue holds w - P packets. Hence
    delivered = (W² - W0²)/2 segments in (P - W0) + (W² - P²)/(2P) base RTTs,
    and utilisation = delivered / (P · duration).
    """
    p = line_bps / (FRAME * 8) * rtt
    w = p + buffer_pkts
    w0 = w / 2
    assert w0 < p, "the formula is for buffers below one BDP"
    delivered = (w * w - w0 * w0) / 2
    rounds = (p - w0) + (w * w - p * p) / (2 * p)
    return delivered / (p * rounds), rounds * rtt


# ---------------------------------------------------------------------------
# 1. One flow fills a 1 Gbit/s bottleneck with a one-BDP buffer


@pytest.mark.parametrize("cc", ["cubic", "reno", "htcp", "bbr"])
def test_one_flow_fills_a_1gbit_bottleneck_with_one_bdp_of_buffer(tmp_path, record_property, cc):
    line = 1e9
    limit = round(bdp_bytes(line))  # 2.5 MB: one BDP of buffer
    root, _ = run(tmp_path, path("1gbit", limit) + big_buffers("h1", "h3") + [
        "h3: iperf3 -s",
        f"h1: iperf3 -c 10.0.0.3 -t 10 -C {cc} -J > o.json",
    ])
    got = received_bps(iperf3_json(root))
    ceiling = payload_rate(line)  # 956.4 Mbit/s
    # 93% of the payload ceiling over the whole 10 s, slow start included
    # (the spec's "near line rate"); nothing can exceed the ceiling itself.
    record_property("measured", f"{got / 1e6:.1f} Mbit/s = {got / ceiling:.1%} of {ceiling / 1e6:.1f}")
    assert 0.93 * ceiling <= got <= ceiling * 1.001, (cc, got / 1e6)


# ---------------------------------------------------------------------------
# 2. RTT under a full drop-tail buffer = propagation + limit/rate


@pytest.mark.parametrize(("rate", "line", "bdps", "seconds"), [
    ("100mbit", 1e8, 5, 20),  # 100 ms of buffer: ping sees up to 120 ms
    ("1gbit", 1e9, 1, 10),  # Lab 14's 1·BDP (2.5 MiB): up to 20 + 21 ms
])
def test_ping_behind_a_bulk_flow_waits_for_the_full_buffer(
    tmp_path, record_property, rate, line, bdps, seconds
):
    limit = bdps * (2621440 if line == 1e9 else round(bdp_bytes(line)))
    root, _ = run(tmp_path, path(rate, limit) + big_buffers("h1", "h3") + [
        "h3: sink",
        f"h1: bulk -c 10.0.0.3 -t {seconds}",
        f"h2: ping 10.0.0.3 -i 0.2 -c {seconds * 5}",
    ])
    rtts = ping_rtts(root)[1:]  # the first ping also waits for ARP across the delay line
    # A ping request (98 B) joins the bfifo only if backlog + 98 <= limit, then
    # waits for the backlog and itself: at most limit·8/rate; replies never queue.
    bound = (RTT + limit * 8 / line) * 1e3
    record_property("measured", f"bound {bound:.2f} ms, ping {min(rtts)}..{max(rtts)} ms")
    # ping prints whole ms from 100 ms up, and 0.1 ms below: allow 1 ms.
    assert all(RTT * 1e3 - 0.05 <= r <= bound + 1.0 for r in rtts), (bound, rtts)
    # CUBIC keeps probing until the buffer overflows: some ping waits behind a
    # full queue (within one frame and the print resolution of the bound).
    assert max(rtts) >= bound - FRAME * 8 / line * 1e3 - 1.0, (bound, max(rtts))
    assert sink_goodput(root) >= 0.9 * payload_rate(line)


def test_bufferbloat_rtt_grows_until_the_receive_window_caps_the_flight(tmp_path, record_property):
    # Lab 14, 10·BDP: a 25 MiB tbf buffer at 1 Gbit/s would add 210 ms, but the
    # receive window (half of tcp_rmem[2] = 25 MiB) binds first: the flight is
    # then rwnd bytes of payload = rwnd·1514/1448 bytes of frames, which the
    # link drains in one RTT: RTT = rwnd·1514/1448·8/rate = 219.3 ms, below the
    # 20 + 210 ms a full buffer would give; no loss at all.
    line = 1e9
    limit = 26214400
    root, _ = run(tmp_path, path("1gbit", limit, burst="500000") + big_buffers("h1", "h3") + [
        "h3: sink",
        "h1: bulk -c 10.0.0.3 -t 10",
        "h2: ping 10.0.0.3 -c 10",
    ])
    rtt_capped = LAB_RWND * FRAME / MSS * 8 / line * 1e3
    assert rtt_capped < (RTT + limit * 8 / line) * 1e3
    # With TSO/GSO aggregates (issue 10, the default) the flight sits a little
    # below the window, and the ping samples it at the granularity of an
    # aggregate. At 1 Gbit/s an aggregate is the 64 KB cap: 45 segments,
    # 45·1514 B = 0.545 ms of line time (t_agg). Below the window:
    # - TSO deferral (tcp_tso_should_defer) holds back up to one aggregate
    #   until a full one fits the window: [0, t_agg);
    # - the receiver's ACK for an aggregate is sent before the sink has read
    #   it, so the window it offers lacks win_from_space(truesize) = half
    #   [lab2019] of the aggregate's truesize (65160 + 896 B): t_rcv;
    # - what netem holds (the last 20 ms of departures from h1) is whole
    #   aggregates, one more or less than 20 ms of line rate: ±t_agg of what
    #   is left for the tbf's queue ahead of the ping.
    # Above it: the hosts' stack time, tens of µs (host.rs), and the same
    # ±t_agg. So RTT ∈ [capped − 2·t_agg − t_rcv, capped + t_agg + 0.1 ms]
    # = [217.90, 219.92] ms (measured on the engine of issue 10: 218.5).
    t_agg = 45 * FRAME * 8 / line * 1e3
    t_rcv = (45 * MSS + 896) / 2 * FRAME / MSS * 8 / line * 1e3
    lo, hi = rtt_capped - 2 * t_agg - t_rcv, rtt_capped + t_agg + 0.1
    rtts = ping_rtts(root)
    record_property("measured", f"expected {lo:.2f}..{hi:.2f} ms (window {rtt_capped:.2f}), ping {rtts}")
    # after ~4 s of slow start and window growth the RTT sits on the plateau;
    # ping prints whole ms here (rounded): 0.5 ms of print resolution.
    assert all(lo - 0.5 <= r <= hi + 0.5 for r in rtts[5:]), (lo, hi, rtts)
    assert "0 retransmitted segments" in (root / "h1" / "terminal.log").read_text()


# ---------------------------------------------------------------------------
# 3. A tiny buffer: goodput far below line rate, retransmissions


def test_reno_sawtooth_utilisation_with_a_small_buffer_matches_aimd(tmp_path, record_property):
    # 100 Mbit/s, 20 ms: P = 165 packets of BDP. With B = 20 and 40 packets the
    # Reno sawtooth (reno_sawtooth) predicts 83% and 89% of the payload rate
    # and one overflow per (P+B)/2 rounds (~1.8 s). Startup is omitted (-O 5);
    # 60 s hold ~30 periods, so the average is the sawtooth's to a few %:
    # tolerance 5%. The tbf burst (10 packets) is below the buffer, so the
    # queue spaces each window at line rate and the ACK clock keeps it so.
    line = 1e8
    for b in (20, 40):
        sub = tmp_path / f"b{b}"
        root, _ = run(sub, path("100mbit", b * FRAME) + big_buffers("h1", "h3") + [
            "h3: iperf3 -s",
            "h1: iperf3 -c 10.0.0.3 -t 60 -O 5 -C reno -J > o.json",
        ])
        doc = iperf3_json(root)
        util, period = reno_sawtooth(line, b)
        got = received_bps(doc) / payload_rate(line)
        retr = doc["end"]["sum_sent"]["retransmits"]
        record_property(f"B={b}", f"utilisation {got:.3f} (sawtooth {util:.3f}), "
                        f"{retr} retransmits, {60 / period:.0f} periods")
        assert got == pytest.approx(util, rel=0.05), (b, got, util)
        # at least one retransmission per overflow
        assert retr >= 60 / period, (b, period)


def test_a_buffer_below_the_tbf_burst_collapses_goodput_as_in_lab14_100mtu(tmp_path, record_property):
    # Lab 14's first part scaled to 100 Mbit/s: buffer 0.064·BDP (16 000 B,
    # ~10 packets), tbf burst 50 000 B, larger than the buffer (Lab 14: limit
    # 160000 < burst 500000). Upper bound from first principles, whatever the
    # host model: even the ideal Reno sawtooth with B = 10.6 packets reaches
    # only ~79% of the link, with at least one loss per sawtooth period.
    #
    # The collapse far below that (under half the payload rate) comes from a
    # window that leaves h1 as one train at one instant: the bucket passes up
    # to `burst` bytes of it without spacing it, netem hands packets due at
    # the same instant to the tbf's bfifo together (netem_dequeue moves every
    # due packet into its child first), and what exceeds the buffer is lost.
    # That needs the hosts' stack time off (NO_HOST_TIME): with it (issue 10,
    # the default) a train leaves h1 spaced by the CPU, 2.25 µs + 0.61 ns/B
    # per packet, the tbf's tokens pass the first 50 kB as it arrives, and the
    # 16 kB bfifo (one 10-segment aggregate of 15 140 B at this pacing rate)
    # only fills after that: measured 51 Mbit/s (53%) by default, 72 Mbit/s
    # (76%) with gso off, against 5 and 8 Mbit/s without host time. The
    # default is held to the sawtooth bound, the one-train model to "far below".
    line = 1e8
    limit = 16000
    cmds = path("100mbit", limit, burst="50000") + big_buffers("h1", "h3") + [
        "h3: iperf3 -s",
        "h1: iperf3 -c 10.0.0.3 -t 10 -C reno -J > o.json",
    ]
    util, period = reno_sawtooth(line, limit / FRAME)
    for name, sim in (("default", ""), ("one-train", NO_HOST_TIME)):
        root, _ = run(tmp_path / name, cmds, sim)
        doc = iperf3_json(root)
        got = received_bps(doc)
        retr = doc["end"]["sum_sent"]["retransmits"]
        record_property(name, f"{got / 1e6:.2f} Mbit/s = {got / payload_rate(line):.1%}, "
                        f"sawtooth bound {util:.1%}, {retr} retransmits, >= {10 / period:.1f} expected")
        assert got <= util * payload_rate(line), (name, got / 1e6)
        assert retr >= 10 / period, (name, retr)
        if name == "one-train":
            assert got <= 0.5 * payload_rate(line), got / 1e6


def test_lab14_100mtu_at_1gbit_heavy_loss_and_small_cwnd(tmp_path, record_property):
    # The handout's numbers (docs/semantics/tcp.md §16): tbf 1gbit burst 500000 limit 160000
    # (~105 frames, 6% of a BDP), CUBIC, 10 s: goodput far below the line
    # (asserted: under half of 956 Mbit/s), hundreds of retransmissions
    # (asserted: >= 100), and a cwnd that never comes near the BDP (1726
    # segments of payload; asserted: below half of it).
    # Why half (issue 10): with the hosts' stack time a window leaves h1
    # spaced by the CPU, so after slow start overflows bucket + buffer (all
    # 726 retransmissions fall in the first second) CUBIC regrows from
    # 0.7·W_max towards W_max ≈ 800 segments without further loss (K =
    # (0.3·W_max/0.4)^(1/3) ≈ 8.5 s): measured 566 -> 789 segments. The queue
    # adds at most 160000·8/1e9 = 1.3 ms to the 20 ms RTT, so goodput is
    # window/RTT and "under half the ceiling" is "window under half a BDP"
    # for most of the run; the quarter asserted before held only when every
    # window left h1 as one train at one instant and lost its excess each RTT.
    line = 1e9
    root, _ = run(tmp_path, path("1gbit", 160000, burst="500000") + big_buffers("h1", "h3") + [
        "h3: iperf3 -s",
        "h1: iperf3 -c 10.0.0.3 -t 10 -J > o.json",
    ])
    doc = iperf3_json(root)
    cwnd = doc["end"]["streams"][0]["sender"]["max_snd_cwnd"]
    record_property("measured", f"{received_bps(doc) / 1e6:.1f} Mbit/s, "
                    f"{doc['end']['sum_sent']['retransmits']} retransmits, max cwnd {cwnd // MSS} segments")
    assert received_bps(doc) <= 0.5 * payload_rate(line)
    assert doc["end"]["sum_sent"]["retransmits"] >= 100
    bdp_segments = bdp_bytes(line) / MSS
    assert cwnd <= bdp_segments / 2 * MSS


@pytest.mark.slow
def test_reno_sawtooth_utilisation_at_1gbit(tmp_path, record_property):
    # As the 100 Mbit/s test, at the labs' 1 Gbit/s with B = 0.1·BDP (165
    # packets): utilisation 0.82 predicted, period ~18 s; 300 s hold ~16 periods.
    line = 1e9
    b = 165
    root, _ = run(tmp_path, path("1gbit", b * FRAME) + big_buffers("h1", "h3") + [
        "h3: iperf3 -s",
        "h1: iperf3 -c 10.0.0.3 -t 300 -O 20 -C reno -J > o.json",
    ])
    util, _ = reno_sawtooth(line, b)
    got = received_bps(iperf3_json(root)) / payload_rate(line)
    record_property("measured", f"utilisation {got:.3f} (sawtooth {util:.3f})")
    assert got == pytest.approx(util, rel=0.05), (got, util)


# ---------------------------------------------------------------------------
# 4. Mathis under random loss


MATHIS_C = math.sqrt(3 / 2)  # every segment counted: Linux grows cwnd per acked segment


def mathis_bps(p: float, rtt: float = RTT) -> float:
    return MSS * 8 / rtt * MATHIS_C / math.sqrt(p)


def cubic_avg_window(p: float, rtt: float = RTT, c: float = 0.4, beta: float = 0.7) -> float:
    """RFC 8312 §5.1: CUBIC's average window (segments) under loss rate p."""
    return (c * (3 + beta) / (4 * (1 - beta))) ** 0.25 * rtt**0.75 / p**0.75


MATHIS_P = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2]


@pytest.mark.parametrize("cc", ["reno", "cubic"])
@pytest.mark.parametrize("p", MATHIS_P)
def test_throughput_under_random_loss_follows_mathis(tmp_path, record_property, cc, p):
    line = 1e9
    expect = mathis_bps(p)
    # Preconditions (checked, not assumed): the sawtooth's peak (4/3 of the
    # mean) stays under a fifth of the 1 Gbit/s bottleneck, so it never
    # queues; the window ceiling (25 MiB) is far above the window; CUBIC is in
    # its Reno-friendly region (RFC 8312 §5.2), where it runs an AIMD with the
    # same 1.22/sqrt(p) average window.
    assert expect * 4 / 3 <= payload_rate(line) / 5
    assert LAB_RWND > 100 * expect * RTT / 8
    assert cubic_avg_window(p) < MATHIS_C / math.sqrt(p)
    # Long enough for ~400 loss events after the 5 s omitted startup: the
    # statistical error of the mean is then a few %; the tolerance (25%)
    # covers the model's idealisation (periodic loss, no timeouts).
    pps = expect / (MSS * 8)
    seconds = max(20, math.ceil(400 / (p * pps)))
    pct = f"{p * 100:g}%"
    # Mathis' p is a per-segment loss probability: run with one queue entry
    # per segment (PER_SEGMENT). With TSO/GSO aggregates netem draws its loss
    # once per aggregate (docs/semantics/qdiscs.md §1.2) and an aggregate of k segments is
    # lost whole, so the loss events are ~k times rarer for the same p (the
    # default measured 1.3x-7.9x Mathis, the larger the rarer the loss).
    # Host time (tens of µs) is negligible beside the 20 ms RTT and stays on.
    root, _ = run(tmp_path, path("1gbit", 2500000, netem=f"delay 20ms loss {pct}")
                  + big_buffers("h1", "h3") + [
        "h3: iperf3 -s",
        f"h1: iperf3 -c 10.0.0.3 -t {seconds} -O 5 -C {cc} -J > o.json",
    ], sim=PER_SEGMENT)
    doc = iperf3_json(root)
    got = received_bps(doc)
    sent = doc["end"]["sum_sent"]["bytes"] / MSS
    retr = doc["end"]["sum_sent"]["retransmits"]
    record_property("measured", f"{got / 1e6:.2f} Mbit/s vs Mathis {expect / 1e6:.2f} (x{got / expect:.3f}); "
                    f"{retr} retransmits vs p*N {p * sent:.0f}; {seconds} s")
    assert got == pytest.approx(expect, rel=0.25), (cc, p, got / expect)
    # Every lost segment is retransmitted once: retransmissions ≈ p·segments
    # sent (Poisson, ~400 expected: 4σ = 20%).
    assert retr == pytest.approx(p * sent, rel=0.2)


# ---------------------------------------------------------------------------
# 5. BBR under 1% random loss


@pytest.mark.parametrize(("rate", "line"), [
    ("100mbit", 1e8),  # scaled: same RTT, one BDP of buffer
    ("1gbit", 1e9),
])
def test_bbr_keeps_the_bottleneck_under_1pct_loss_while_cubic_collapses(
    tmp_path, record_property, rate, line
):
    p = 0.01
    limit = round(bdp_bytes(line))
    results = {}
    for cc in ("bbr", "cubic"):
        sub = tmp_path / cc
        root, _ = run(sub, path(rate, limit, netem="delay 20ms loss 1%") + big_buffers("h1", "h3") + [
            "h3: iperf3 -s",
            f"h1: iperf3 -c 10.0.0.3 -t 30 -O 5 -C {cc} -J > o.json",
        ])
        results[cc] = received_bps(iperf3_json(root))
    ceiling = payload_rate(line)
    record_property("measured", f"bbr {results['bbr'] / 1e6:.1f} Mbit/s = {results['bbr'] / ceiling:.1%}; "
                    f"cubic {results['cubic'] / 1e6:.2f} Mbit/s (Mathis {mathis_bps(p) / 1e6:.2f})")
    # BBR v1 does not take random loss as congestion (docs/semantics/tcp.md §15: unaffected
    # below ~15-20%): at least 85% of the bottleneck (PROBE_RTT dips and the
    # lost 1% cost a few %).
    assert results["bbr"] >= 0.85 * ceiling, results["bbr"] / ceiling
    # CUBIC "collapses" to the loss-bound rate, independent of the link:
    # Mathis at p = 1% and 20 ms is 7.1 Mbit/s; asserted: within the Mathis
    # tolerance of test 4 (<= 1.25 × Mathis), which is < 10% of 100 Mbit/s
    # and < 1% of 1 Gbit/s.
    collapse = 1.25 * mathis_bps(p)
    assert collapse < 0.1 * ceiling
    assert results["cubic"] <= collapse, results["cubic"] / 1e6


# ---------------------------------------------------------------------------
# 6. Fairness of N Reno flows


def _reno_flows_share_fairly(tmp_path, record_property, rate: str, line: float, seconds: int) -> None:
    n = 4
    root, _ = run(tmp_path, path(rate, round(bdp_bytes(line))) + big_buffers("h1", "h3") + [
        "h3: iperf3 -s",
        f"h1: iperf3 -c 10.0.0.3 -t {seconds} -P {n} -C reno -J > o.json",
    ])
    doc = iperf3_json(root)
    per_flow = [st["receiver"]["bits_per_second"] for st in doc["end"]["streams"]]
    assert len(per_flow) == n
    shares = [round(x / 1e6, 1) for x in per_flow]
    record_property("measured", f"Jain {jain(per_flow):.4f}, flows {shares} Mbit/s, "
                    f"sum {sum(per_flow) / payload_rate(line):.1%}")
    # Same RTT, same drop-tail queue: AIMD converges to equal shares
    # (Chiu & Jain); Jain's index >= 0.95 (e.g. shares 0.30/0.25/0.23/0.22
    # still pass) and together they fill the link.
    assert jain(per_flow) >= 0.95, [x / 1e6 for x in per_flow]
    assert sum(per_flow) >= 0.93 * payload_rate(line)


def test_four_reno_flows_share_a_link_fairly(tmp_path, record_property):
    # scaled: 100 Mbit/s, 20 ms, one BDP of buffer, 60 s. After 30 s the index still carries
    # slow start's uneven exit (seed 1: 0.938, 0.954 before the receiver stopped taking DRS
    # steps on empty reads; seeds 1-12 average 0.953 and 0.956); after 60 s AIMD has evened
    # the shares (0.991 at seeds 1, 5, 9, 10, 11; 0.962-0.978 before)
    _reno_flows_share_fairly(tmp_path, record_property, "100mbit", 1e8, 60)


@pytest.mark.slow
def test_four_reno_flows_share_a_1gbit_link_fairly(tmp_path, record_property):
    # 1 Gbit/s: each flow's window peaks near (BDP + buffer) / 4 ≈ 860 segments,
    # so one sawtooth (W/2 RTTs of ~30 ms) lasts ~13 s, ten times the 100 Mbit/s
    # one; and the shares are whole-run means, so the unequal first epochs weigh
    # in as 1/T. Measured: Jain 0.946 after 60 s, 0.937 after 120 s, 0.990
    # after 240 s (≈ 18 epochs; the 100 Mbit/s test's 30 s hold ~23).
    _reno_flows_share_fairly(tmp_path, record_property, "1gbit", 1e9, 240)


# ---------------------------------------------------------------------------
# 7. The receive window caps throughput at rwnd/RTT: iperf3 -w


@pytest.mark.parametrize(("window", "rate", "line"), [
    ("16K", "100mbit", 1e8),
    ("64K", "100mbit", 1e8),
    ("200K", "1gbit", 1e9),
])
def test_iperf3_window_caps_throughput_at_rwnd_over_rtt(tmp_path, record_property, window, rate, line):
    # iperf3 -w N sets SO_SNDBUF/SO_RCVBUF = N on the client and (through the
    # parameter exchange, iperf_tcp_listen) on the server's data socket. The
    # kernel doubles it (2N <= 2·rmem_max = 425984) and the window is half of
    # that [lab2019]: N bytes. A sender only sends whole segments within the
    # window: at most n = floor(N/1448) per RTT. The path is not the limit:
    # the cap is well below the line.
    # Below n, with TSO/GSO aggregates (issue 10, the default), the flight
    # lacks at most:
    # - one aggregate that TSO deferral holds until a whole one fits the
    #   window. Its size is tcp_tso_autosize's 1 ms of pacing rate; the flow
    #   never loses, so it stays in slow start, where pacing is 2·cwnd/srtt
    #   and cwnd grows only while cwnd < 2·packets_out (tcp_is_cwnd_limited):
    #   pacing <= 4·N/RTT, an aggregate <= 4·N·1 ms/20 ms = N/5 bytes
    #   (>= min_tso_segs = 2 segments);
    # - half [lab2019 win_from_space] of that aggregate's truesize (payload +
    #   896 B), which the receiver's ACK, sent before the application reads,
    #   leaves out of the window it offers.
    # (Without aggregates the old bound, n - 1, is this with a one-segment
    # aggregate.)
    w = int(window[:-1]) * 1024
    n = w // MSS
    agg = max(2, w // 5 // MSS)
    held = agg + math.ceil((agg * MSS + 896) / 2 / MSS)
    hi = n * MSS * 8 / RTT
    lo = (n - held) * MSS * 8 / RTT
    assert hi < 0.9 * payload_rate(line)
    root, _ = run(tmp_path, path(rate, round(bdp_bytes(line))) + [
        "h3: iperf3 -s -1 -J > s.json",
        f"h1: iperf3 -c 10.0.0.3 -t 10 -O 2 -w {window} -J > o.json",
    ])
    doc = iperf3_json(root)
    got = received_bps(doc)
    record_property("measured", f"{got / 1e6:.3f} Mbit/s in [{lo / 1e6:.3f}, {hi / 1e6:.3f}]")
    # 1%: the RTT also holds a frame's serialisation, the hosts' stack time
    # and the ACK's turnaround
    assert 0.99 * lo <= got <= hi, (window, lo / 1e6, got / 1e6, hi / 1e6)
    assert doc["start"]["sock_bufsize"] == w
    assert doc["start"]["rcvbuf_actual"] == 2 * w
    # the server reports the same socket buffers for its data socket
    server = json.loads((root / "h3" / "s.json").read_text())
    assert server["start"]["sock_bufsize"] == w
    assert server["start"]["rcvbuf_actual"] == 2 * w
