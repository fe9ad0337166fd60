#!/usr/bin/env python3
"""How regular a bulk TCP flow's ACK clock is, from a capture at each end (docs/kernel-oracle.md,
"BBR's queue"): what a delivery-rate estimator such as BBR's sees, in a simulated run or on
the kernel (`bufferlab run --real`), from the same two lines in a scenario:

    h1: tshark -i h1-eth0 -s 96 -w h1.pcap &        (the sender)
    h2: tshark -i h2-eth0 -s 96 -w h2.pcap &        (the receiver)

    python tools/ack_clock.py RESULTS/PART/h1/h1.pcap RESULTS/PART/h2/h2.pcap --rate 19.128

It reads the largest flow (by payload bytes) of each capture with ``tshark`` and prints, over
the flow after ``--skip`` seconds:

- the receiver's turnaround: how long after the data an ACK covers arrived the ACK left;
- the ACKs' transit from the receiver's capture to the sender's (one clock in both worlds);
- the spread (standard deviation) of the gaps between consecutive packets: data arriving
  at the receiver, the ACKs of new data leaving it and arriving at the sender;
- the delivery-rate samples the sender's kernel would take, rebuilt from its capture as
  `tcp_rate_gen` does (net/ipv4/tcp_rate.c): the data newly acked since the last ACK before
  the acked packet was sent, over the longer of that packet's send phase and ack phase
  (samples shorter than ``--min-rtt`` discarded), and their running maximum over
  ``--window`` seconds (BBR v1's bandwidth filter holds the max of ten rounds,
  `bbr_update_bw`, net/ipv4/tcp_bbr.c), both relative to ``--rate``, the bottleneck's
  payload rate. BBR paces 1 % below its filter (`bbr_pacing_margin_percent`): where the
  filter stays above 1/0.99 of the rate, it paces faster than the bottleneck drains.

With ``--fit-noise`` (kernel captures) it also fits bufferlab's host timing noise
(docs/models.md "Host timing noise") to the receiver's turnaround: the lognormal whose median
and 99th percentile are the turnaround's less bufferlab's own (``--base``, two stack passes),
and the measured maximum; it prints the ``[hosts.X] noise`` line and the two distributions'
quantiles side by side.
"""

from __future__ import annotations

import argparse
import bisect
import math
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SEQ_MOD = 1 << 32
FIELDS = (
    "frame.time_epoch",
    "ip.src",
    "tcp.srcport",
    "ip.dst",
    "tcp.dstport",
    "tcp.seq_raw",
    "tcp.ack_raw",
    "tcp.len",
)


@dataclass
class Flow:
    """One bulk flow in one capture: data sent (time, end sequence) and ACKs (time, ack);
    sequence numbers relative to `base`."""

    data: list[tuple[float, int]]
    acks: list[tuple[float, int]]
    start: float
    base: int


def read_flow(pcap: Path, base: int | None = None) -> Flow:
    """The flow carrying the most payload in ``pcap``, sequence numbers relative to ``base``
    (its first data's where not given: pass the other capture's to compare the two)."""
    # resets are not part of the ACK clock (a server closing at the end answers data with them)
    cmd = ["tshark", "-r", str(pcap), "-Y", "tcp and tcp.flags.reset == 0", "-T", "fields"]
    cmd += [a for f in FIELDS for a in ("-e", f)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        t, src, sport, dst, dport, seq, ack, length = line.split("\t")
        rows.append((float(t), (src, sport, dst, dport), int(seq), int(ack), int(length)))
    volume = Counter()
    for _, key, _, _, length in rows:
        volume[key] += length
    if not volume or not max(volume.values()):
        raise SystemExit(f"{pcap}: no TCP payload in this capture")
    src, sport, dst, dport = volume.most_common(1)[0][0]
    data_rows = [(t, seq, n) for t, key, seq, _, n in rows if key == (src, sport, dst, dport) and n > 0]
    base = data_rows[0][1] if base is None else base

    def rel(seq: int) -> int:  # signed distance from base: the SYN's sequence number is -1
        d = (seq - base) % SEQ_MOD
        return d - SEQ_MOD if d >= SEQ_MOD // 2 else d

    data, highest = [], -1
    for t, seq, n in data_rows:
        end = rel(seq + n)
        if end > highest:  # first transmissions only, in sequence order
            data.append((t, end))
            highest = end
    acks = [(t, rel(ack)) for t, key, _, ack, _ in rows if key == (dst, dport, src, sport)]
    return Flow(data, acks, data_rows[0][0], base)


def percentiles(values: list[float], qs: tuple[float, ...] = (0.1, 0.5, 0.9, 0.99)) -> str:
    s = sorted(values)
    parts = [f"p{round(q * 100)} {s[int(q * (len(s) - 1))]:.0f}" for q in qs]
    return ", ".join(parts) + f", max {s[-1]:.0f}"


def turnaround_us(receiver: Flow, since: float) -> list[float]:
    """ACK departure − arrival of the data whose end it acknowledges, at the receiver."""
    arrived = {}
    for t, end in receiver.data:
        arrived.setdefault(end, t)
    return [(t - arrived[a]) * 1e6 for t, a in receiver.acks if a in arrived and t >= since]


def transit_us(sender: Flow, receiver: Flow, since: float) -> list[float]:
    """Each ACK's time from the receiver's capture to the sender's (an ACK number sent
    again, a window update or a duplicate, pairs with its latest sending before the arrival)."""
    left: dict[int, list[float]] = {}
    for t, a in receiver.acks:
        left.setdefault(a, []).append(t)
    out = []
    for t, a in sender.acks:
        sent = left.get(a, [])
        i = bisect.bisect_right(sent, t) - 1
        if t >= since and i >= 0:
            out.append((t - sent[i]) * 1e6)
    return out


def gap_spread_us(packets: list[tuple[float, int]], since: float) -> float:
    """Standard deviation of the gaps between consecutive packets (gaps over 4 ms, idle, left out)."""
    times = [t for t, _ in packets if t >= since]
    gaps = [(b - a) * 1e6 for a, b in zip(times, times[1:], strict=False) if b - a < 0.004]
    return statistics.pstdev(gaps)


def advancing(acks: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """The ACKs that acknowledge new data (not window updates or duplicates)."""
    out, highest = [], -1
    for t, a in acks:
        if a > highest:
            out.append((t, a))
            highest = a
    return out


def rate_samples(sender: Flow, min_rtt: float) -> list[tuple[float, float]]:
    """(ACK time, bytes/s) as `tcp_rate_gen` would sample them at the sender."""
    sent_t = [t for t, _ in sender.data]
    sent_end = [e for _, e in sender.data]
    ack_t = [t for t, _ in sender.acks]
    ack_a = [a for _, a in sender.acks]
    out = []
    for t, a in sender.acks:
        newest = bisect.bisect_right(sent_end, a) - 1  # the latest packet this ACK covers
        if newest < 0:
            continue
        prior = bisect.bisect_left(ack_t, sent_t[newest]) - 1  # the last ACK before it left
        if prior < 0 or a <= ack_a[prior]:
            continue
        prior_newest = bisect.bisect_right(sent_end, ack_a[prior]) - 1
        if prior_newest < 0:
            continue
        send_phase = sent_t[newest] - sent_t[prior_newest]
        ack_phase = t - ack_t[prior]
        interval = max(send_phase, ack_phase)
        if interval >= min_rtt:
            out.append((t, (a - ack_a[prior]) / interval))
    return out


def running_max(samples: list[tuple[float, float]], window: float, since: float) -> list[float]:
    times = [t for t, _ in samples]
    values = [v for _, v in samples]
    return [
        max(values[bisect.bisect_left(times, t - window) : i + 1])
        for i, (t, _) in enumerate(samples)
        if t >= since
    ]


#: quantiles --fit-noise compares, and the standard normal's at each
FIT_QUANTILES = (0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999)
NORMAL = statistics.NormalDist()


def fit_noise(turnarounds: list[float], base_us: float) -> tuple[float, float, float]:
    """(median, p99, max) in µs of the lognormal noise a punctual receiver needs to turn
    around as ``turnarounds`` did: the measured quantiles less ``base_us``."""
    excess = sorted(max(t - base_us, 0.0) for t in turnarounds)
    q = lambda p: excess[int(p * (len(excess) - 1))]  # noqa: E731
    return q(0.5), q(0.99), excess[-1]


def print_noise_fit(turnarounds: list[float], base_us: float) -> None:
    median, p99, top = fit_noise(turnarounds, base_us)
    sigma = math.log(p99 / median) / NORMAL.inv_cdf(0.99)
    excess = sorted(max(t - base_us, 0.0) for t in turnarounds)
    print(f'noise fit: noise = {{ median = "{median:.0f}us", p99 = "{p99:.0f}us", max = "{top:.0f}us" }}'
          f" (sigma {sigma:.2f}; {len(excess)} ACKs)")
    for p in FIT_QUANTILES:
        model = min(median * math.exp(sigma * NORMAL.inv_cdf(p)), top)
        measured = excess[int(p * (len(excess) - 1))]
        print(f"  p{p * 100:g}: measured {measured:.1f} us, lognormal {model:.1f} us")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sender", type=Path, help="capture on the sender's interface")
    ap.add_argument("receiver", type=Path, help="capture on the receiver's interface")
    ap.add_argument(
        "--rate",
        type=float,
        required=True,
        help="the bottleneck's payload rate, Mbit/s (tbf 20 Mbit/s: 20 × 1448/1514 = 19.128)",
    )
    ap.add_argument("--skip", type=float, default=4.0, help="seconds of the flow left out (default 4)")
    ap.add_argument("--min-rtt", type=float, default=20.0, help="path min RTT, ms (default 20)")
    ap.add_argument("--window", type=float, default=0.24, help="filter window, s (default 0.24: ten rounds)")
    ap.add_argument("--fit-noise", action="store_true", help="fit bufferlab's host noise to the turnaround")
    ap.add_argument("--base", type=float, default=6.0,
                    help="bufferlab's own turnaround, us, taken off before --fit-noise (default 6)")
    args = ap.parse_args()
    if shutil.which("tshark") is None:
        print("ack_clock.py: needs tshark (apt-get install tshark)", file=sys.stderr)
        return 2
    sender = read_flow(args.sender)
    receiver = read_flow(args.receiver, sender.base)
    s_since, r_since = sender.start + args.skip, receiver.start + args.skip
    rate = args.rate * 1e6 / 8
    samples = rate_samples(sender, args.min_rtt / 1e3)
    tail = [v / rate for t, v in samples if t >= s_since]
    filt = [v / rate for v in running_max(samples, args.window, s_since)]
    if not tail:
        raise SystemExit(f"{args.sender}: no rate samples after {args.skip} s")
    q = lambda v, p: sorted(v)[int(p * (len(v) - 1))]  # noqa: E731
    turnaround = turnaround_us(receiver, r_since)
    print(f"receiver turnaround, us: {percentiles(turnaround)}")
    if args.fit_noise:
        print_noise_fit(turnaround, args.base)
    print(f"ACK transit receiver -> sender, us: {percentiles(transit_us(sender, receiver, s_since))}")
    print(
        f"gap spread, us: data arriving at the receiver {gap_spread_us(receiver.data, r_since):.0f}, "
        f"its ACKs of new data leaving {gap_spread_us(advancing(receiver.acks), r_since):.0f}, "
        f"arriving at the sender {gap_spread_us(advancing(sender.acks), s_since):.0f}"
    )
    print(f"rate samples / rate: p50 {q(tail, 0.5):.4f}, p90 {q(tail, 0.9):.4f}, p99 {q(tail, 0.99):.4f}")
    above = sum(f > 1 / 0.99 for f in filt) / len(filt)
    print(
        f"{args.window * 1e3:.0f} ms max filter / rate: p10 {q(filt, 0.1):.4f}, p50 {q(filt, 0.5):.4f}, "
        f"p90 {q(filt, 0.9):.4f}; above 1/0.99 {above:.0%} of the time"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
