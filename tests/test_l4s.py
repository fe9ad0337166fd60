"""Accurate ECN and TCP Prague (issue 26, items 1, 4 and 7): the sysctls
(``net.ipv4.tcp_ecn`` 3/4/5, ``tcp_ecn_option``, ``tcp_congestion_control=prague``,
``iperf3 -C prague``), AccECN on the wire as tshark decodes it (AE, ACE, the
option's byte counters) with CE marks conserved from the AQM to the receiver's
counters and back, and the lesson of scenarios/l4s-coexistence.toml (RFC 9332): a
Prague and a CUBIC flow through DualPI2 get comparable rates while the L queue
stays near a millisecond and the C queue near PI2's 15 ms target."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.shell import parse_shell
from bufferlab.commands.sysctl import SUPPORTED_CC, execute_sysctl, parse_sysctl, sysctl_defaults
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from conftest import TWO_HOSTS

ROOT = Path(__file__).resolve().parent.parent
TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark)")


def W(line: str):
    return parse_shell(line)[0].commands[0].words


# ------------------------------------------------------------------ sysctls


@pytest.mark.parametrize("mode", [0, 1, 2, 3, 4, 5])
def test_tcp_ecn_takes_the_six_linux_modes(mode: int) -> None:
    cmd = parse_sysctl(W(f"sysctl -w net.ipv4.tcp_ecn={mode}"), Diagnostics())
    assert cmd.writes() == [("net.ipv4.tcp_ecn", mode)]


def test_tcp_ecn_option_and_beacon() -> None:
    line = "sysctl -w net.ipv4.tcp_ecn_option=0 net.ipv4.tcp_ecn_option_beacon=7"
    cmd = parse_sysctl(W(line), Diagnostics())
    assert cmd.writes() == [("net.ipv4.tcp_ecn_option", 0), ("net.ipv4.tcp_ecn_option_beacon", 7)]
    with pytest.raises(NotSupportedError, match="minimum AccECN option rules"):
        parse_sysctl(W("sysctl -w net.ipv4.tcp_ecn_option=1"), Diagnostics())
    with pytest.raises(CommandError, match="Invalid argument"):
        parse_sysctl(W("sysctl -w net.ipv4.tcp_ecn_option=4"), Diagnostics())
    with pytest.raises(CommandError, match="Invalid argument"):
        parse_sysctl(W("sysctl -w net.ipv4.tcp_ecn=6"), Diagnostics())
    store = sysctl_defaults(modern=True)
    read = parse_sysctl(W("sysctl net.ipv4.tcp_ecn_option net.ipv4.tcp_ecn_option_beacon"), Diagnostics())
    out, _, rc = execute_sysctl(read, store)
    assert (out, rc) == ("net.ipv4.tcp_ecn_option = 2\nnet.ipv4.tcp_ecn_option_beacon = 3\n", 0)


def test_prague_is_an_available_congestion_control() -> None:
    assert "prague" in SUPPORTED_CC
    cmd = parse_sysctl(W("sysctl -w net.ipv4.tcp_congestion_control=prague"), Diagnostics())
    assert cmd.writes() == [("net.ipv4.tcp_congestion_control", "prague")]
    store = sysctl_defaults(modern=True)
    out, _, _ = execute_sysctl(parse_sysctl(W("sysctl -n net.ipv4.tcp_available_congestion_control"),
                                            Diagnostics()), store)
    assert "prague" in out.split()


# ------------------------------------------------------------------ on the wire

WIRE = ("""
name = "accecn wire"
seed = 2

[sim]
profile = "{profile}"

""" + TWO_HOSTS + """
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: tbf rate 20mbit burst 20000 limit 300000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: dualpi2",
  "h2: sysctl -w net.ipv4.tcp_ecn={server_ecn}",
  "h2: tcpdump -i h2-eth0 -w h2.pcap -s 128 &",
  "h2: iperf3 -s -D",
  "h1: iperf3 -c 10.0.0.2 -t 3 -C {cc} -J > client.json",
  "admin: sleep 3.5; tc -s qdisc show dev s1-eth2",
]
""")


def wire(tmp: Path, cc: str = "prague", server_ecn: int = 3, profile: str = "modern") -> Path:
    sc = tmp / "wire.toml"
    sc.write_text(WIRE.format(cc=cc, server_ecn=server_ecn, profile=profile))
    run_scenario(load_scenario(sc), tmp / "results", progress=False)
    return tmp / "results" / "wire" / "p"


def fields(pcap: Path, display: str, *names: str) -> list[list[str]]:
    assert TSHARK is not None
    args = [TSHARK, "-r", str(pcap), "-n", "-T", "fields", "-Y", display]
    for n in names:
        args += ["-e", n]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [line.split("\t") for line in out.splitlines() if line]


@pytest.fixture(scope="module")
def prague_wire(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wire(tmp_path_factory.mktemp("wire"))


def test_iperf3_c_prague_runs_prague(prague_wire: Path) -> None:
    client = json.loads((prague_wire / "h1" / "client.json").read_text())
    assert client["end"]["sender_tcp_congestion"] == "prague"


@needs_tshark
def test_tshark_decodes_ae_ace_and_the_accecn_option(prague_wire: Path) -> None:
    pcap = prague_wire / "h2" / "h2.pcap"
    # the SYN asks for AccECN (AE, CWR, ECE = 111) and is ECT(1); the SYN-ACK
    # reflects ECT(1) as ACE 011 and carries the option with zero counts
    flags = ("tcp.flags.ae", "tcp.flags.cwr", "tcp.flags.ece")
    syn = fields(pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == 5201",
                 *flags, "ip.dsfield.ecn")
    assert syn and syn[-1] == ["1", "1", "1", "1"]
    synack = fields(pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.srcport == 5201", *flags,
                    "tcp.options.acc_ecn.ee1b", "tcp.options.acc_ecn.eceb", "tcp.options.acc_ecn.ee0b")
    assert synack[-1] == ["0", "1", "1", "1", "0", "1"]
    # after the handshake tshark reads the three bits as ACE
    ack = fields(pcap, "tcp.srcport == 5201 && tcp.flags.syn == 0 && tcp.options.acc_ecn", "tcp.flags.ace")
    assert ack and all(a[0].isdigit() for a in ack)


@needs_tshark
def test_ce_marks_are_conserved_from_the_aqm_to_the_sender(prague_wire: Path) -> None:
    pcap = prague_wire / "h2" / "h2.pcap"
    # the data connection: the client's port that sent the most payload
    data = fields(pcap, "tcp.dstport == 5201 && tcp.len > 0", "tcp.srcport", "ip.dsfield.ecn", "tcp.len",
                  "frame.number")
    volume: dict[str, int] = {}
    for d in data:
        volume[d[0]] = volume.get(d[0], 0) + int(d[2])
    port = max(volume, key=volume.__getitem__)
    data = [d for d in data if d[0] == port]
    ce = [d for d in data if d[1] == "3"]
    ect1 = [d for d in data if d[1] == "1"]
    assert len(ce) > 20 and all(d[1] in ("1", "3") for d in data), "Prague's data is ECT(1)"
    # every CE mark DualPI2 made reached the receiver (nothing else is ECT here)
    show = (prague_wire / "admin" / "terminal.log").read_text()
    marks = int(re.search(r"ecn_mark (\d+)", show)[1])  # step marks included
    # (the control connection's packets are Not-ECT and never marked)
    assert marks == len(ce)
    # the receiver's last ACK reports them: ACE = CE packets + 5 mod 8, ECEB =
    # CE payload bytes, EE1B = 1 + ECT(1) payload bytes (24 bits)
    acks = fields(pcap, f"tcp.srcport == 5201 && tcp.dstport == {port} && tcp.options.acc_ecn",
                  "tcp.flags.ace", "tcp.options.acc_ecn.eceb", "tcp.options.acc_ecn.ee1b", "frame.number")
    ace, eceb, ee1b, last = (int(x) for x in acks[-1])
    assert ace == (len(ce) + 5) % 8
    assert eceb == sum(int(d[2]) for d in ce) % 2**24
    # (data reaching the server after it closed at TEST_END is answered with a reset, not
    # counted: the last ACK covers what came before it)
    assert ee1b == (1 + sum(int(d[2]) for d in ect1 if int(d[3]) < last)) % 2**24


def test_prague_towards_a_classic_listener_falls_back_to_reno(tmp_path: Path) -> None:
    part = wire(tmp_path, server_ecn=2)
    client = json.loads((part / "h1" / "client.json").read_text())
    assert client["end"]["sender_tcp_congestion"] == "prague"
    assert client["end"]["sum_received"]["bytes"] > 0
    if TSHARK is not None:
        pcap = part / "h2" / "h2.pcap"
        synack = fields(pcap, "tcp.flags.syn == 1 && tcp.flags.ack == 1 && tcp.srcport == 5201",
                        "tcp.flags.ae", "tcp.flags.cwr", "tcp.flags.ece")
        assert synack[-1] == ["0", "0", "1"], "classic ECN's answer: ECE alone"
        data = fields(pcap, "tcp.dstport == 5201 && tcp.len > 1000", "ip.dsfield.ecn")
        assert data and all(d == ["0"] for d in data), "prague-reno sends Not-ECT"


def test_accecn_and_prague_need_a_modern_kernel_profile(tmp_path: Path) -> None:
    sc = tmp_path / "old.toml"
    sc.write_text(WIRE.format(cc="prague", server_ecn=2, profile="lab2019").replace(
        ',\n  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: dualpi2"', ""))
    summary = run_scenario(load_scenario(sc), tmp_path / "results", progress=False)
    log = (tmp_path / "results" / "old" / "p" / "h1" / "terminal.log").read_text()
    assert "prague" in log and summary["failures"], log


# ------------------------------------------------------------------ the lesson


@pytest.fixture(scope="module")
def lesson(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("l4s")
    scenario = load_scenario(ROOT / "scenarios" / "l4s-coexistence.toml")
    run_scenario(scenario, results_root=root, progress=False)
    return root / "l4s-coexistence"


def _rates(lesson: Path) -> tuple[float, float]:
    """Mean sender bitrate over the seconds 10-30 (the steady state), Mbit/s."""
    out = []
    for host in ("h1", "h2"):
        log = (lesson / "coexist" / host / "terminal.log").read_text()
        interval = r"\]\s+([\d.]+)-[\d.]+\s+sec\s+\S+ \w?Bytes\s+([\d.]+) (\w)bits/sec\s+\d"
        v = [float(rate) * (1000.0 if unit == "G" else 1.0 if unit == "M" else 0.001)
             for start, rate, unit in re.findall(interval, log)
             if 10.0 <= float(start) < 30.0]
        assert len(v) == 20, (host, v)
        out.append(statistics.mean(v))
    return out[0], out[1]


# Testbed measurements of one Prague and one CUBIC flow through DualPI2 at
# 50 Mbit/s with equal path RTTs (Heist and Morton, github heistp/l4s-tests,
# its Scenario 1 table: L4STeam/linux b256dae, 3-minute runs, the last minute):
# Prague/CUBIC 2.61-2.73 at 10 ms, 2.05-2.17 at 20 ms, 1.66-1.71 at 80 ms.
TESTBED_LARGEST_RATIO = 2.73


def test_prague_and_cubic_get_comparable_rates(lesson: Path) -> None:
    prague, cubic = _rates(lesson)
    # RFC 9332's k = 2 balances a Reno-like and an ideal DCTCP-like window
    # (2/p_L) at equal RTTs; Linux's Prague, the C queue's 15 ms and PI2's
    # swings put Prague ahead by about 2 at 40 ms, as on the testbed above
    # (docs/models.md "L4S coexistence"): ahead, as in every testbed run,
    # and by no more than the testbed's largest ratio
    assert 1.0 <= prague / cubic <= TESTBED_LARGEST_RATIO, (prague, cubic)
    assert 40.0 <= prague + cubic <= 48.0, "the link stays full"


#: the testbed's ratios at the RTTs either side of the lesson's 40 ms (the ratio falls as the
#: RTT grows: 2.05-2.17 at 20 ms, 1.66-1.71 at 80 ms)
TESTBED_AROUND_40_MS = (1.66, 2.17)


def test_the_seeds_median_ratio_lies_between_the_testbeds_at_20_and_80_ms(tmp_path: Path) -> None:
    """One seed's ratio moves with where the sawtooths meet (seeds 1-20: 1.41-2.49); the median
    of five seeds is the number to hold against the testbed's three-minute runs."""
    base = load_scenario(ROOT / "scenarios" / "l4s-coexistence.toml")
    ratios = []
    for seed in range(1, 6):
        run_scenario(dataclasses.replace(base, seed=seed), results_root=tmp_path / str(seed), progress=False)
        prague, cubic = _rates(tmp_path / str(seed) / "l4s-coexistence")
        ratios.append(prague / cubic)
    low, high = TESTBED_AROUND_40_MS
    assert low <= statistics.median(ratios) <= high, ratios


PRAGUE_MARKED = ("""
name = "prague under random marks"
seed = 1

[sim]
profile = "modern"

""" + TWO_HOSTS + """
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 40ms loss {percent}% ecn",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 500mbit burst 500000 limit 12500000",
  "h2: sysctl -w net.ipv4.tcp_ecn=3",
  "h2: iperf3 -s -D",
  "h1: iperf3 -c 10.0.0.2 -t 40 -C prague",
]
""")


def test_prague_cuts_once_per_cwr_episode(tmp_path: Path) -> None:
    """Prague's window under random CE marks (netem `loss p ecn`, 40 ms, no
    queue): each CWR episode (tcp_enter_cwr, held until snd_una passes
    high_seq) cuts alpha/2 once (prague_enter_cwr), and the next episode
    starts with the first mark after it. With alpha = p, a growth of 1 - p
    packets per round and an episode of 1 + 1/(W p) rounds, W p/2 =
    (1 - p)(1 + 1/(W p)): W p = 2.69 at p = 2 %, not the 2(1 - p) = 1.96 of
    a cut every round that tcp_prague.c's header formula r = (1/p - 1) ·
    25 ms/RTT Mbit/s assumes."""
    percent = 2
    sc = tmp_path / "marked.toml"
    sc.write_text(PRAGUE_MARKED.format(percent=percent))
    run_scenario(load_scenario(sc), tmp_path / "results", progress=False)
    log = (tmp_path / "results" / "marked" / "p" / "h1" / "terminal.log").read_text()
    interval = r"\]\s+([\d.]+)-[\d.]+\s+sec.*?bits/sec\s+\d+\s+([\d.]+) KBytes"
    cwnd = [float(kb) * 1024 / 1448 for start, kb in re.findall(interval, log) if 15.0 <= float(start) < 40.0]
    assert len(cwnd) == 25, cwnd
    p = percent / 100
    wp = statistics.mean(cwnd) * p
    per_episode = (1 - p) + ((1 - p) ** 2 + 2 * (1 - p)) ** 0.5
    assert abs(wp - per_episode) <= 0.1 * per_episode, (wp, per_episode)
    assert wp > 1.1 * 2 * (1 - p), "above the once-a-round law"


def test_l_queue_near_a_millisecond_c_queue_near_15_ms(lesson: Path) -> None:
    # h1 pings plain (Not-ECT: the C queue), h2 with -Q 1 (ECT(1): the L queue);
    # RTT − 40 ms of netem is the queueing delay
    def queue_ms(host: str) -> list[float]:
        log = (lesson / "coexist" / host / "terminal.log").read_text()
        return [float(t) - 40.0 for t in re.findall(r"time=([\d.]+) ms", log)]

    c_q, l_q = queue_ms("h1"), queue_ms("h2")
    assert len(l_q) > 350 and len(c_q) > 350
    p99 = sorted(l_q)[int(0.99 * len(l_q)) - 1]
    assert statistics.mean(l_q) < 1.5, statistics.mean(l_q)
    assert p99 < 5.0, p99
    # PI2 holds the classic queue at its 15 ms target (RFC 9332 §2.5)
    assert 10.0 <= statistics.mean(c_q) <= 20.0, statistics.mean(c_q)
    show = (lesson / "coexist" / "admin" / "terminal.log").read_text()
    m = re.search(r"pkts_in_c (\d+) pkts_in_l (\d+)", show)
    assert m and int(m[1]) > 10_000 and int(m[2]) > 10_000
