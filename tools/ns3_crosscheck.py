#!/usr/bin/env python3
r"""Cross-check bufferlab against ns-3 on one dumbbell (docs/ns3-crosscheck.md).

Both simulators run the same experiment: one TCP bulk transfer (1448-byte
segments) from h1 to h3 through a drop-tail bottleneck of RATE and base RTT,
a 10 Hz ping from h2 to h3 through the same bottleneck, for T seconds. The
script prints, side by side, the sink's goodput over [0, T], the mean and
maximum ping RTT, the bottleneck's drops, the sender's retransmitted segments
and each simulator's wall time.

    h1 --\                            ns-3:      PointToPoint links, access 10 Gbit/s and 0 delay;
          r|s1 ====(bottleneck)==== h3           bottleneck PointToPoint (RTT/2 each way) + FifoQueueDisc
    h2 --/                            bufferlab: veths; s1-eth2 (to h3) has netem delay RTT + tbf
                                                 (or, with --bottleneck wire, a RATE wire + bfifo)

ns-3 comes from PyPI (`pip install ns3`: ns-3.44, imported as `from ns import
ns`); it is not a dependency of bufferlab. Without it the script says so and
exits with status 2. Loading ns-3 takes about 10 s (cppyy); the 100 Mbit/s
workload then takes ns-3 several seconds, bufferlab a tenth of a second.

    python tools/ns3_crosscheck.py                  # all workloads, ns-3 with its own defaults
    python tools/ns3_crosscheck.py --quick          # only the 10 Mbit/s workloads
    python tools/ns3_crosscheck.py --linux-like     # ns-3 given Linux's RTO/delayed-ACK/HyStart constants
    python tools/ns3_crosscheck.py --burst 15k      # the Mininet TCLink tbf burst instead of one frame
    python tools/ns3_crosscheck.py --only 10m-1bdp-cubic --keep /tmp/xc --json out.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SEGMENT = 1448  # TCP payload per segment (MSS 1460 minus 12 bytes of timestamps)
# Bytes of one full-size data segment where each simulator counts it:
FRAME_LINUX = SEGMENT + 32 + 20 + 14  # skb->len at a switch port (tbf/bfifo): TCP+opts, IP, Ethernet
IP_PACKET = SEGMENT + 32 + 20  # ns-3 queue disc item (Ipv4QueueDiscItem::GetSize)
FRAME_PPP = IP_PACKET + 2  # what ns-3's PointToPointNetDevice serialises (PPP header)
PING_INTERVAL = 0.1  # seconds, both simulators
ACCESS_RATE = "10Gbps"
SEED = 1


@dataclass(frozen=True)
class Workload:
    name: str
    rate_bps: int
    rtt_s: float  # base (propagation) RTT
    buffer_bdp: float  # bottleneck buffer in bandwidth-delay products
    cc: str  # "cubic" | "reno"
    seconds: int

    @property
    def bdp_bytes(self) -> int:
        return round(self.rate_bps / 8 * self.rtt_s)

    @property
    def buffer_bytes(self) -> int:
        """tbf's `limit`: the byte limit of its inner bfifo."""
        return round(self.buffer_bdp * self.bdp_bytes)

    @property
    def buffer_packets(self) -> int:
        """Full-size data frames the bfifo holds (bfifo admits while backlog + len <= limit)."""
        return self.buffer_bytes // FRAME_LINUX

    @property
    def ceiling_bps(self) -> float:
        """Goodput of a saturated bottleneck: payload share of each frame the shaper counts."""
        return self.rate_bps * SEGMENT / FRAME_LINUX

    def label(self) -> str:
        return (
            f"{self.rate_bps / 1e6:g}M {self.rtt_s * 1e3:g}ms {self.buffer_bdp:g}BDP "
            f"({self.buffer_packets}p) {self.cc} {self.seconds}s"
        )


WORKLOADS = [
    Workload("10m-1bdp-cubic", 10_000_000, 0.040, 1.0, "cubic", 10),
    Workload("10m-1bdp-reno", 10_000_000, 0.040, 1.0, "reno", 10),
    Workload("10m-0.25bdp-cubic", 10_000_000, 0.040, 0.25, "cubic", 10),
    Workload("10m-0.25bdp-reno", 10_000_000, 0.040, 0.25, "reno", 10),
    Workload("100m-1bdp-cubic", 100_000_000, 0.020, 1.0, "cubic", 20),
]


# --------------------------------------------------------------------------- ns-3

# Trace sinks and small accessors in C++ (a Python callback per packet would
# dominate ns-3's run time, and cppyy's templates are awkward from Python).
_NS3_HELPERS = r"""
#include <vector>
namespace bufferlab_xcheck {
using namespace ns3;
static std::vector<double> g_rtt;
static uint64_t g_retx = 0;

void Reset() { g_rtt.clear(); g_retx = 0; }
void OnRtt(uint16_t, Time rtt) { g_rtt.push_back(rtt.GetSeconds()); }
void OnRetx(Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
            Ptr<const TcpSocketBase>) { g_retx++; }
void HookBulk(Ptr<Application> app) {
    Ptr<Socket> s = DynamicCast<BulkSendApplication>(app)->GetSocket();
    s->TraceConnectWithoutContext("Retransmission", MakeCallback(&OnRetx));
}
// BulkSendApplication creates its socket when it starts: connect just after.
void ScheduleHookBulk(Ptr<Application> app, Time at) { Simulator::Schedule(at, &HookBulk, app); }
void HookPing(Ptr<Application> app) { app->TraceConnectWithoutContext("Rtt", MakeCallback(&OnRtt)); }
uint64_t SinkRx(Ptr<Application> app) { return DynamicCast<PacketSink>(app)->GetTotalRx(); }
uint64_t QdiscDrops(Ptr<QueueDisc> q) { return q->GetStats().nTotalDroppedPackets; }
uint64_t DeviceDrops(Ptr<NetDevice> d) {
    return DynamicCast<PointToPointNetDevice>(d)->GetQueue()->GetTotalDroppedPackets();
}
size_t RttCount() { return g_rtt.size(); }
double RttAt(size_t i) { return g_rtt[i]; }
uint64_t Retx() { return g_retx; }
}
"""


def import_ns3(helpers: str = _NS3_HELPERS) -> Any:
    """`from ns import ns` plus the C++ ``helpers`` (this tool's by default), or
    None if ns-3 cannot be loaded.

    The PyPI stub calls exit() when ns-3 fails to load, hence SystemExit. cppyy
    prints harmless "[runStaticInitializersOnce]: Failed to materialize symbols"
    lines while ns-3 loads (wlav/cppyy#156); they are filtered out of stderr.
    """
    if importlib.util.find_spec("ns") is None or importlib.util.find_spec("ns3") is None:
        return None
    sys.stderr.flush()
    fd = sys.stderr.fileno()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), fd)
        try:
            from ns import ns  # type: ignore[import-not-found]

            ns.cppyy.cppdef(helpers)
        except (Exception, SystemExit):
            ns = None
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            captured.seek(0)
            for line in captured.read().decode(errors="replace").splitlines():
                if "Failed to materialize symbols" not in line:
                    print(line, file=sys.stderr)
    return ns


@dataclass(frozen=True)
class Ns3Options:
    """ns-3 TCP constants that differ from Linux's; `--linux-timers`/`--linux-hystart` align them."""

    linux_timers: bool = False
    linux_hystart: bool = False

    def describe(self) -> str:
        timers = (
            "MinRto 200 ms, DelAckTimeout 40 ms (Linux)"
            if self.linux_timers
            else "MinRto 1 s, DelAckTimeout 200 ms (ns-3 defaults)"
        )
        hystart = (
            "HyStartDelayMax clamp(RTT/8, 4, 16) ms (Linux's delay threshold)"
            if self.linux_hystart
            else "HyStartDelayMax 1 s (ns-3 default)"
        )
        return f"{timers}; {hystart}"


def run_ns3(ns: Any, w: Workload, opts: Ns3Options) -> dict[str, Any]:
    """One ns-3 run: goodput (bit/s), ping RTTs, drops, retransmissions, wall time."""
    t0 = time.perf_counter()
    cpp = ns.cppyy.gbl.bufferlab_xcheck
    cpp.Reset()
    tcp_type = {"cubic": "ns3::TcpCubic", "reno": "ns3::TcpLinuxReno"}[w.cc]
    # Every default is set on every run: Config::SetDefault outlives Simulator::Destroy.
    setd = ns.Config.SetDefault
    setd("ns3::TcpL4Protocol::SocketType", ns.StringValue(tcp_type))
    setd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(SEGMENT))
    setd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(64 << 20))
    setd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(64 << 20))
    setd("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    setd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    setd("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    setd("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    # Linux: TCP_RTO_MIN 200 ms, TCP_ATO_MIN 40 ms (ns-3: MinRto 1 s, DelAckTimeout 200 ms)
    setd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200 if opts.linux_timers else 1000)))
    setd("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(40 if opts.linux_timers else 200)))
    # HyStart's delay test: Linux leaves slow start when a round's minimum RTT
    # exceeds delay_min + clamp(delay_min/8, 4 ms, 16 ms); ns-3's TcpCubic uses
    # delay_min + clamp(delay_min, HyStartDelayMin, HyStartDelayMax), i.e. a
    # queueing delay of a whole base RTT (1 BDP of queue). Capping
    # HyStartDelayMax at clamp(RTT/8, 4, 16) ms reproduces Linux's threshold.
    hystart_max_ms = min(max(w.rtt_s * 1e3 / 8, 4.0), 16.0) if opts.linux_hystart else 1000.0
    setd("ns3::TcpCubic::HyStartDelayMax", ns.TimeValue(ns.MicroSeconds(round(hystart_max_ms * 1e3))))
    ns.RngSeedManager.SetSeed(SEED)
    ns.RngSeedManager.SetRun(1)

    nodes = ns.NodeContainer()
    nodes.Create(4)
    h1, h2, r, h3 = (nodes.Get(i) for i in range(4))

    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.StringValue(ACCESS_RATE))
    access.SetChannelAttribute("Delay", ns.StringValue("0s"))
    # The bottleneck's rate. bufferlab's tbf charges a data segment FRAME_LINUX
    # bytes (Ethernet + IP + TCP with timestamps + 1448); ns-3's PointToPoint
    # device serialises FRAME_PPP bytes (PPP + IP + TCP + 1448). Scaling the
    # device rate by FRAME_PPP/FRAME_LINUX gives a data segment the same service
    # time in both, so both have the same goodput ceiling RATE * 1448/1514.
    bott = ns.PointToPointHelper()
    bott.SetDeviceAttribute("DataRate", ns.StringValue(f"{round(w.rate_bps * FRAME_PPP / FRAME_LINUX)}bps"))
    bott.SetChannelAttribute("Delay", ns.StringValue(f"{round(w.rtt_s / 2 * 1e9)}ns"))
    # The bottleneck's buffer, equivalent to `tbf ... limit L`. tbf's inner
    # bfifo admits a packet while backlog + len <= L and also holds the packet
    # that waits for tokens (the one "on the wire"), so tbf holds
    # N = L // 1514 full-size segments in all. In ns-3 a segment at the
    # bottleneck is in one of three places: the device's transmitter (1 packet,
    # in no queue), the device's TX queue (set to 1 packet: while it is full,
    # flow control stops the queue disc, which therefore holds the backlog, as
    # with Linux's BQL) and the FifoQueueDisc, whose byte limit is set to
    # exactly N - 2 segments of IP_PACKET bytes (ns-3 counts IP packets, no
    # link header). Both drop at the tail when full.
    bott.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))
    d1 = access.Install(h1, r)
    d2 = access.Install(h2, r)
    d3 = bott.Install(r, h3)

    stack = ns.InternetStackHelper()
    stack.Install(nodes)
    qdisc_bytes = (w.buffer_packets - 2) * IP_PACKET
    tch = ns.TrafficControlHelper()
    tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{qdisc_bytes}B")))
    bottleneck_qdiscs = tch.Install(d3.Get(0))
    # Every other device: a long FIFO instead of ns-3's default FqCoDel (no
    # queue builds there: access links are 100-1000x the bottleneck rate).
    big = ns.TrafficControlHelper()
    big.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize("10000p")))
    for dev in (d1.Get(0), d1.Get(1), d2.Get(0), d2.Get(1), d3.Get(1)):
        big.Install(dev)

    addr = ns.Ipv4AddressHelper()
    addr.SetBase(ns.Ipv4Address("10.1.1.0"), ns.Ipv4Mask("255.255.255.0"))
    addr.Assign(d1)
    addr.SetBase(ns.Ipv4Address("10.1.2.0"), ns.Ipv4Mask("255.255.255.0"))
    addr.Assign(d2)
    addr.SetBase(ns.Ipv4Address("10.1.3.0"), ns.Ipv4Mask("255.255.255.0"))
    if3 = addr.Assign(d3)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()
    dst = if3.GetAddress(1)

    any_port = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 5001).ConvertTo()
    sink_apps = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_port).Install(h3)
    bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(dst, 5001).ConvertTo())
    bulk.SetAttribute("SendSize", ns.UintegerValue(SEGMENT))
    bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
    bulk_apps = bulk.Install(h1)
    ping = ns.PingHelper(dst.ConvertTo())
    ping.SetAttribute("Interval", ns.TimeValue(ns.Seconds(PING_INTERVAL)))
    ping.SetAttribute("Count", ns.UintegerValue(round(w.seconds / PING_INTERVAL)))
    ping.SetAttribute("VerboseMode", ns.StringValue("Silent"))
    ping_apps = ping.Install(h2)
    cpp.HookPing(ping_apps.Get(0))

    for apps in (sink_apps, bulk_apps, ping_apps):
        apps.Start(ns.Seconds(0))
    cpp.ScheduleHookBulk(bulk_apps.Get(0), ns.NanoSeconds(1))
    ns.Simulator.Stop(ns.Seconds(w.seconds))
    ns.Simulator.Run()

    rx = int(cpp.SinkRx(sink_apps.Get(0)))
    rtts = [float(cpp.RttAt(i)) for i in range(int(cpp.RttCount()))]
    drops = int(cpp.QdiscDrops(bottleneck_qdiscs.Get(0))) + int(cpp.DeviceDrops(d3.Get(0)))
    retx = int(cpp.Retx())
    ns.Simulator.Destroy()
    return {
        "goodput_bps": rx * 8 / w.seconds,
        "bytes": rx,
        "rtt_mean_s": sum(rtts) / len(rtts) if rtts else math.nan,
        "rtt_min_s": min(rtts, default=math.nan),
        "rtt_max_s": max(rtts, default=math.nan),
        "rtt_samples": len(rtts),
        "drops": drops,
        "retransmits": retx,
        "qdisc_limit_bytes": qdisc_bytes,
        "wall_s": time.perf_counter() - t0,
    }


# --------------------------------------------------------------------- bufferlab

SCENARIO = """\
name = "ns-3 cross-check: {label}"
seed = {seed}

[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1"]
links = [["h1", "s1"], {bottleneck_link}, ["h2", "s1"]]   # s1-eth2 faces h3

[[part]]
# Set up the bottleneck and fill the ARP caches (ns-3's PointToPoint links need
# no ARP; here the first packet to h3 would wait one RTT for it).
name = "setup"
cmds = [
{qdisc_cmds}
  "h1: sysctl -w net.ipv4.tcp_rmem='10240 87380 67108864'",
  "h1: sysctl -w net.ipv4.tcp_wmem='10240 87380 67108864'",
  "h3: sysctl -w net.ipv4.tcp_rmem='10240 87380 67108864'",
  "h3: sysctl -w net.ipv4.tcp_wmem='10240 87380 67108864'",
  "h1: ping 10.0.0.3 -c 1 -q",
  "h2: ping 10.0.0.3 -c 1 -q",
]

[[part]]
# bulk runs until the part ends at {seconds} s; the sink then reports what it read.
name = "run"
duration = "{seconds}s"
cmds = [
  "h3: sink",
  "h2: ping 10.0.0.3 -i {ping_interval} -w {seconds} -q",
  "h1: bulk -c 10.0.0.3 -C {cc}",
]
"""


def scenario_text(w: Workload, bottleneck: str = "tbf", burst: str = "1514") -> str:
    """The bufferlab scenario of workload `w`.

    tbf: s1-eth2 is a veth (no serialisation, no propagation delay) with
    `netem delay RTT` at the root and `tbf rate RATE burst BURST limit L` under
    it. netem delays only the data direction (ACKs come back at once), ns-3
    splits the delay over both directions: the same RTT. The default burst is
    one full-size frame, so the shaper spaces packets like a link; a larger
    burst (Mininet's TCLink uses 15000 B) lets tokens saved while the link idles
    release back-to-back trains (see docs/ns3-crosscheck.md).

    wire: s1-eth2 is a physical wire of RATE and RTT/2 each way, like ns-3's
    PointToPoint link, with a `bfifo` root; the segment being serialised is on
    the wire, so the bfifo gets N - 1 frames for the same N in all.
    """
    delay_ms = f"{w.rtt_s * 1e3:g}"
    if bottleneck == "tbf":
        link = '["s1", "h3"]'
        cmds = [
            f"admin: tc qdisc add dev s1-eth2 root handle 1: netem delay {delay_ms}ms limit 100000",
            f"admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate {w.rate_bps}bit "
            f"burst {burst} limit {w.buffer_bytes}",
        ]
    elif bottleneck == "wire":
        link = (
            f'{{ a = "s1", b = "h3", wire_rate = "{w.rate_bps}bit", wire_delay = "{w.rtt_s * 1e3 / 2:g}ms" }}'
        )
        limit = (w.buffer_packets - 1) * FRAME_LINUX
        cmds = [f"admin: tc qdisc replace dev s1-eth2 root bfifo limit {limit}"]
    else:
        raise ValueError(f"unknown bottleneck {bottleneck!r}")
    return SCENARIO.format(
        label=w.label(),
        seed=SEED,
        bottleneck_link=link,
        qdisc_cmds="\n".join(f'  "{c}",' for c in cmds),
        seconds=w.seconds,
        ping_interval=PING_INTERVAL,
        cc=w.cc,
    )


_SINK_RE = re.compile(r"sink: received (\d+) packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s")
_BULK_RE = re.compile(r"bulk: sent \d+ bytes \(\d+ acknowledged, (\d+) retransmitted segments\)")
_PING_RE = re.compile(
    r"(\d+) packets transmitted, (\d+) received.*\nrtt min/avg/max/mdev = ([\d.]+)/([\d.]+)/([\d.]+)/"
)


def run_bufferlab(w: Workload, bottleneck: str, burst: str, keep: Path | None) -> dict[str, Any]:
    from bufferlab import load_scenario, run_scenario

    with tempfile.TemporaryDirectory() as tmp:
        d = keep / w.name if keep else Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{w.name}.toml"
        path.write_text(scenario_text(w, bottleneck, burst))
        scenario = load_scenario(path)
        t0 = time.perf_counter()
        summary = run_scenario(scenario, d / "results", progress=False, echo=lambda _s: None)
        wall = time.perf_counter() - t0
        run = d / "results" / w.name / "run"
        sink_log = (run / "h3" / "terminal.log").read_text()
        bulk_log = (run / "h1" / "terminal.log").read_text()
        ping_log = (run / "h2" / "terminal.log").read_text()
    m_sink = _SINK_RE.search(sink_log)
    m_bulk = _BULK_RE.search(bulk_log)
    m_ping = _PING_RE.search(ping_log)
    if not (m_sink and m_bulk and m_ping):
        raise RuntimeError(f"bufferlab output not understood:\n{sink_log}\n{bulk_log}\n{ping_log}")
    nbytes, elapsed = int(m_sink.group(2)), float(m_sink.group(3))
    if abs(elapsed - w.seconds) > 1e-3:
        raise RuntimeError(f"bufferlab's sink ran {elapsed} s, not {w.seconds} s:\n{sink_log}")
    drops = sum(v["packets"] for v in summary["interfaces"]["s1-eth2"]["drops"].values())
    return {
        "goodput_bps": nbytes * 8 / elapsed,
        "bytes": nbytes,
        "rtt_mean_s": float(m_ping.group(4)) / 1e3,
        "rtt_min_s": float(m_ping.group(3)) / 1e3,
        "rtt_max_s": float(m_ping.group(5)) / 1e3,
        "rtt_samples": int(m_ping.group(2)),
        "drops": drops,
        "retransmits": int(m_bulk.group(1)),
        "wall_s": wall,
    }


# -------------------------------------------------------------------------- main


def format_table(rows: list[tuple[Workload, dict[str, Any], dict[str, Any]]]) -> str:
    """The side-by-side table (a = ns-3, b = bufferlab)."""
    cols = [
        ("workload", "", 36, "<"),
        ("ceiling", "Mbit/s", 7, ">"),
        ("ns-3", "Mbit/s", 7, ">"),
        ("bflab", "Mbit/s", 7, ">"),
        ("ratio", "bl/ns3", 6, ">"),
        ("RTT ns-3", "mean ms", 8, ">"),
        ("RTT bflab", "mean ms", 9, ">"),
        ("max ns-3", "ms", 8, ">"),
        ("max bflab", "ms", 9, ">"),
        ("drops", "ns3/bl", 9, ">"),
        ("retx", "ns3/bl", 9, ">"),
        ("wall ns-3", "s", 9, ">"),
        ("wall bflab", "s", 10, ">"),
    ]
    lines = [" ".join(f"{h:{a}{n}}" for h, _, n, a in cols), " ".join(f"{u:{a}{n}}" for _, u, n, a in cols)]
    lines.append("-" * len(lines[0]))
    for w, a, b in rows:
        cells = [
            w.label(),
            f"{w.ceiling_bps / 1e6:.3f}",
            f"{a['goodput_bps'] / 1e6:.3f}",
            f"{b['goodput_bps'] / 1e6:.3f}",
            f"{b['goodput_bps'] / a['goodput_bps']:.3f}",
            f"{a['rtt_mean_s'] * 1e3:.1f}",
            f"{b['rtt_mean_s'] * 1e3:.1f}",
            f"{a['rtt_max_s'] * 1e3:.1f}",
            f"{b['rtt_max_s'] * 1e3:.1f}",
            f"{a['drops']}/{b['drops']}",
            f"{a['retransmits']}/{b['retransmits']}",
            f"{a['wall_s']:.2f}",
            f"{b['wall_s']:.3f}",
        ]
        lines.append(" ".join(f"{c:{al}{n}}" for c, (_, _, n, al) in zip(cells, cols, strict=True)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the 10 Mbit/s workloads")
    ap.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        choices=[w.name for w in WORKLOADS],
        help="run only these workloads: " + ", ".join(w.name for w in WORKLOADS),
    )
    ap.add_argument(
        "--linux-timers",
        action="store_true",
        help="give ns-3 Linux's minimum RTO (200 ms) and delayed-ACK timeout (40 ms)",
    )
    ap.add_argument(
        "--linux-hystart",
        action="store_true",
        help="give ns-3's CUBIC Linux's HyStart delay threshold (clamp(RTT/8, 4, 16) ms)",
    )
    ap.add_argument("--linux-like", action="store_true", help="both --linux-timers and --linux-hystart")
    ap.add_argument(
        "--bottleneck",
        choices=("tbf", "wire"),
        default="tbf",
        help="bufferlab's bottleneck: netem + tbf on a veth (default) or a wire + bfifo",
    )
    ap.add_argument(
        "--burst",
        default="1514",
        help="bufferlab's tbf burst (tc syntax; default 1514 = one full-size frame)",
    )
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write all measurements as JSON")
    ap.add_argument(
        "--keep", type=Path, metavar="DIR", help="keep bufferlab's scenarios and results under DIR"
    )
    args = ap.parse_args(argv)
    opts = Ns3Options(
        linux_timers=args.linux_timers or args.linux_like, linux_hystart=args.linux_hystart or args.linux_like
    )

    workloads = WORKLOADS
    if args.quick:
        workloads = [w for w in workloads if w.rate_bps <= 10_000_000]
    if args.only:
        workloads = [w for w in workloads if w.name in args.only]

    t0 = time.perf_counter()
    ns = import_ns3()
    if ns is None:
        print(
            "ns3_crosscheck: ns-3 is not importable (`from ns import ns` failed).\n"
            "Install the ns-3 Python package into this environment: pip install ns3",
            file=sys.stderr,
        )
        return 2
    # cppyy compiles the bindings it needs on first use: one short untimed run
    # keeps that out of the first workload's wall time.
    run_ns3(ns, Workload("warm-up", 10_000_000, 0.040, 1.0, "cubic", 1), opts)
    print(f"ns-3 loaded and warmed up in {time.perf_counter() - t0:.1f} s", flush=True)

    rows = []
    for w in workloads:
        print(f"{w.name}: {w.label()}, buffer {w.buffer_bytes} B ...", end=" ", flush=True)
        b = run_bufferlab(w, args.bottleneck, args.burst, args.keep)
        a = run_ns3(ns, w, opts)
        print(f"ns-3 {a['wall_s']:.1f} s, bufferlab {b['wall_s']:.2f} s", flush=True)
        rows.append((w, a, b))

    bl = f"netem + tbf burst {args.burst}" if args.bottleneck == "tbf" else "wire + bfifo"
    print()
    print("goodput: sink payload over [0, T]; RTT: 10 Hz ping h2 -> h3 across the bottleneck")
    print(f"ns-3 TCP: {opts.describe()}")
    print(f"bufferlab bottleneck: {bl}")
    print(format_table(rows))
    if args.json:
        out = [
            {
                "workload": w.name,
                "label": w.label(),
                "rate_bps": w.rate_bps,
                "rtt_s": w.rtt_s,
                "buffer_bytes": w.buffer_bytes,
                "buffer_packets": w.buffer_packets,
                "cc": w.cc,
                "seconds": w.seconds,
                "ceiling_bps": w.ceiling_bps,
                "ns3_options": {"linux_timers": opts.linux_timers, "linux_hystart": opts.linux_hystart},
                "bufferlab_bottleneck": bl,
                "ns3": a,
                "bufferlab": b,
            }
            for w, a, b in rows
        ]
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
