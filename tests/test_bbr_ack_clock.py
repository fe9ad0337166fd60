"""BBR v1's standing queue follows the ACK clock's noise (docs/kernel-oracle.md, "BBR's queue").

The fidelity case bbr-tbf-20ms (tbf 20 Mbit/s, 200 kB; 20 ms of netem delay on the ACK path;
one `-C bbr` flow) gave a ping median of 23.7 ms in bufferlab against 26–41 ms on Linux 6.18.
The kernel runs showed why: BBR's bandwidth filter (the max of ten rounds of delivery-rate
samples, `bbr_update_bw`, net/ipv4/tcp_bbr.c; `tcp_rate_gen`, net/ipv4/tcp_rate.c) read
0.3–1.3 % above the tbf's rate, because the receiving host sends its ACKs with a jitter
(p99 0.7 ms on the loaded test machine) that shortens some samples' ACK phase. That cancels
BBR's 1 % pacing margin (`bbr_pacing_margin_percent`), so the queue left by STARTUP and by
each PROBE_RTT drains slowly or not at all. bufferlab's hosts send every ACK on time, so its
samples never exceed the rate. These runs put the noise into bufferlab's ACK path (netem
jitter, uniform ±J, or the receiver's timing noise as measured on the test machine, the case's
`[hosts.h2] noise`) and check that its BBR then does what the kernel's did.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import ack_clock  # noqa: E402
import fidelity  # noqa: E402

#: what the tbf delivers as TCP payload: 20 Mbit/s × 1448 B of payload per 1514 B it counts
TBF_PAYLOAD_MBPS = 20.0 * 1448 / 1514


#: the receiver's noise the fidelity case carries (this machine's, docs/kernel-oracle.md)
MEASURED_NOISE = 'noise = { median = "5us", p99 = "600us", max = "1.5ms" }'


def scenario(tmp: Path, name: str, ack_delay: str, host_noise: bool) -> Path:
    """The fidelity case with `ack_delay` as its netem, its receiver's timing noise or a
    punctual receiver, and `ss -tin` every 0.5 s."""
    text = (fidelity.CASES / "bbr-tbf-20ms.toml").read_text()
    samples = ", ".join(['"h1: sleep 0.5", "h1: ss -tin dst 10.0.0.2 >> ss.txt"'] * 30)
    edits = {
        'name = "bbr-tbf-20ms"': f'name = "{name}"',
        "netem delay 20ms": f"netem delay {ack_delay}",
        '-J > iperf.json",': f'-J > iperf.json &", {samples}, "h1: sleep 1",',
        MEASURED_NOISE: MEASURED_NOISE if host_noise else "noise = false",
    }
    for old, new in edits.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp / f"{name}.toml"
    path.write_text(text)
    return path


def run(tmp: Path, name: str, ack_delay: str, host_noise: bool = False) -> tuple[float, float]:
    """The ping median (ms) and the median of BBR's bw estimate after STARTUP (Mbit/s)."""
    results = tmp / name
    run_scenario(load_scenario(scenario(tmp, name, ack_delay, host_noise)), results_root=results, progress=False)
    ss = (results / name / "p" / "h1" / "ss.txt").read_text()
    # the data connection's lines (the control connection carries a few hundred bytes);
    # from 4 s on, after STARTUP, DRAIN and the first loss recovery
    bws = [
        float(m[2]) / 1e6
        for m in re.finditer(r"bytes_acked:(\d+).*?bbr:\(bw:([\d.]+)bps", ss)
        if int(m[1]) > 4.0 * TBF_PAYLOAD_MBPS * 1e6 / 8
    ]
    assert len(bws) > 15, ss[-2000:]
    return fidelity.metrics(results)["ping_median_ms"], statistics.median(bws)


def test_bbr_queue_grows_with_the_ack_clocks_jitter(tmp_path: Path) -> None:
    quiet_ping, quiet_bw = run(tmp_path, "quiet", "20ms")
    # on time: the filter holds the tbf's payload rate, within the few samples that catch the
    # bucket's 32 kB burst (19.17 since the write path pushes as Linux's does, 19.13 before)
    assert TBF_PAYLOAD_MBPS - 0.01 < quiet_bw < TBF_PAYLOAD_MBPS * 1.003, quiet_bw
    # pacing 1 % below it drains the queue: the ping sees ~3 ms of it at the median
    assert 22.0 < quiet_ping < 26.0, quiet_ping
    noisy_ping, noisy_bw = run(tmp_path, "noisy", "20ms 200us")
    # ±200 µs on the ACKs: the filter keeps the samples whose ACK phase came out short
    # (the kernel's ss read 19.19–19.37 Mbit/s, bufferlab's without noise 19.13)
    assert noisy_bw > TBF_PAYLOAD_MBPS * 1.005, noisy_bw
    # and the queue stays: the kernel's medians were 26.4–41 ms (33–37 in most runs)
    assert noisy_ping > 30.0, noisy_ping


def test_the_receivers_measured_noise_keeps_the_kernels_queue(tmp_path: Path) -> None:
    """The case as the fidelity matrix runs it: the receiver with this machine's timing noise
    ([hosts.h2] noise, docs/models.md "Host timing noise"), ACKs otherwise on time."""
    ping, bw = run(tmp_path, "measured", "20ms", host_noise=True)
    # the kernel's `ss` read 19.19–19.37 Mbit/s after STARTUP (bufferlab punctual: 19.13)
    assert 19.19 <= bw <= 19.37, bw
    # the kernel's ping medians: 27.5–41 ms in the matrix's three runs (26.4–43 ms in eleven)
    assert 27.5 <= ping <= 41.0, ping


def test_a_late_ack_shortens_the_ack_phase_of_the_samples_that_start_at_it() -> None:
    """tools/ack_clock.py's rebuilt `tcp_rate_gen` samples, by hand: packet k (1448 B) leaves
    at 0.8·k ms (a 1.25× probing phase), its ACK returns at 20 + k ms (the bottleneck's
    1 packet/ms). The ACK of packet 100 (at 120 ms) samples from the last ACK before packet
    100 left at 80 ms: ACK 59, at 79 ms. Delivered 101 − 60 = 41 packets; send phase
    80 − 47.2 = 32.8 ms, ACK phase 120 − 79 = 41 ms: 41 packets / 41 ms, the bottleneck's rate.
    ACK 59 half a millisecond late (79.5 ms): the ACK phase is 40.5 ms and the sample
    41/40.5 = 1.0123 × the rate; the send phase, shorter, does not cap it."""

    def flow(late_ms: float) -> ack_clock.Flow:
        data = [(0.8e-3 * k, 1448 * (k + 1)) for k in range(120)]
        acks = [((20 + k + (late_ms if k == 59 else 0)) * 1e-3, 1448 * (k + 1)) for k in range(120)]
        return ack_clock.Flow(data, acks, 0.0, 0)

    def sample_at(f: ack_clock.Flow, t: float) -> float:
        return min(ack_clock.rate_samples(f, 0.020), key=lambda s: abs(s[0] - t))[1]

    rate = 1448 / 1e-3
    assert sample_at(flow(0.0), 0.120) / rate == pytest.approx(1.0)
    assert sample_at(flow(0.5), 0.120) / rate == pytest.approx(41 / 40.5)
