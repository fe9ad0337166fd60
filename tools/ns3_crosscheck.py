#!/usr/bin/env python3
"""Cross-check bufferlab against ns-3 on one dumbbell (docs/ns3-crosscheck.md).

Both simulators run the same experiment: one TCP bulk transfer (1448-byte
segments) from h1 to h3 through a drop-tail bottleneck of RATE and base RTT,
a 10 Hz ping from h2 to h3 through the same bottleneck, for T seconds. The
script prints, side by side, the sink's goodput over [0, T], the mean and
maximum ping RTT, the bottleneck's drops, the sender's retransmitted segments
and each simulator's wall time.

    h1 --\                            ns-3:      PointToPoint links, access 10 Gbit/s and 0 delay;
          r|s1 ====(bottleneck)==== h3           bottleneck PointToPoint (RTT/2 each way) + FifoQueueDisc
    h2 --/                            bufferlab: veths; s1-eth2 (to h3) has netem delay RTT + tbf
                                                 (or, with --bottleneck wire, a 10 Mbit/s wire + bfifo)

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
    Workload("10m-q-bdp-cubic", 10_000_000, 0.040, 0.25, "cubic", 10),
    Workload("10m-q-bdp-reno", 10_000_000, 0.040, 0.25, "reno", 10),
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


def import_ns3() -> Any:
    """`from ns import ns`, or None. (The PyPI stub calls exit() when ns-3 fails to load.)"""
    if importlib.util.find_spec("ns") is None or importlib.util.find_spec("ns3") is None:
        return None
    try:
        from ns import ns  # type: ignore[import-not-found]
    except (ImportError, SystemExit, Exception):
        return None
    ns.cppyy.cppdef(_NS3_HELPERS)
    return ns


def run_ns3(ns: Any, w: Workload, linux_timers: bool) -> dict[str, Any]:
    """One ns-3 run. Returns goodput (bit/s), ping RTTs, drops, retransmissions, wall time."""
    t0 = time.perf_counter()
    cpp = ns.cppyy.gbl.bufferlab_xcheck
    cpp.Reset()
    tcp_type = {"cubic": "ns3::TcpCubic", "reno": "ns3::TcpLinuxReno"}[w.cc]
    setd = ns.Config.SetDefault
    setd("ns3::TcpL4Protocol::SocketType", ns.StringValue(tcp_type))
    setd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(SEGMENT))
    setd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(64 << 20))
    setd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(64 << 20))
    setd("ns3::TcpSocket::DelAckCount", ns.UintegerValue(2))
    setd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(True))
    setd("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))
    setd("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(True))
    if linux_timers:
        # Linux's TCP_RTO_MIN and TCP_ATO_MIN (ns-3: 1 s and 200 ms)
        setd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(200)))
        setd("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(40)))
    else:
        setd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(1)))
        setd("ns3::TcpSocket::DelAckTimeout", ns.TimeValue(ns.MilliSeconds(200)))
    ns.RngSeedManager.SetSeed(SEED)
    ns.RngSeedManager.SetRun(1)

    nodes = ns.NodeContainer()
    nodes.Create(4)
    h1, h2, r, h3 = (nodes.Get(i) for i in range(4))

    access = ns.PointToPointHelper()
    access.SetDeviceAttribute("DataRate", ns.StringValue(ACCESS_RATE))
    access.SetChannelAttribute("Delay", ns.StringValue("0s"))
    # The bottleneck. bufferlab's tbf charges each data segment FRAME_LINUX bytes
    # (Ethernet + IP + TCP with timestamps + 1448); ns-3's PointToPoint device
    # serialises FRAME_PPP bytes (PPP + IP + TCP + 1448). Scaling the device rate
    # by FRAME_PPP/FRAME_LINUX gives a data segment the same service time in both,
    # so both have the same goodput ceiling RATE * 1448/1514.
    bott = ns.PointToPointHelper()
    bott.SetDeviceAttribute("DataRate", ns.StringValue(f"{round(w.rate_bps * FRAME_PPP / FRAME_LINUX)}bps"))
    bott.SetChannelAttribute("Delay", ns.StringValue(f"{round(w.rtt_s / 2 * 1e9)}ns"))
    # Buffer equivalence with `tbf ... limit L` (whose inner bfifo admits a packet
    # while backlog + len <= L, counting the packet that waits for tokens, i.e. the
    # one "being transmitted"): tbf holds N = L // 1514 full-size segments in all.
    # In ns-3 a segment is held in three places: the device's transmitter (1, not
    # in any queue), the device's TX queue (set to 1 packet, so the queue disc,
    # which flow control stops while the device queue is full, holds the backlog,
    # like BQL), and the FifoQueueDisc, given a byte limit of exactly N - 2
    # segments of IP_PACKET bytes (ns-3 counts IP packets without link header).
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
    # Every other device: a long FIFO instead of ns-3's default FqCoDel (no queue
    # builds there anyway: access links are 100-1000x the bottleneck rate).
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

    sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 5001).ConvertTo())
    sink_apps = sink.Install(h3)
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
links = [["h1", "s1"], ["s1", "h3"], ["h2", "s1"]]   # s1-eth2 faces h3

[[part]]
# Set up the bottleneck and fill the ARP caches (ns-3's PointToPoint links need
# no ARP; here the first packet to h3 would wait one RTT for it).
name = "setup"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay {delay_ms}ms limit 100000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate {rate}bit burst 15k limit {limit}",
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

_SINK_RE = re.compile(r"sink: received (\d+) packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s")
_BULK_RE = re.compile(r"bulk: sent \d+ bytes \(\d+ acknowledged, (\d+) retransmitted segments\)")
_PING_RE = re.compile(r"(\d+) packets transmitted, (\d+) received.*\nrtt min/avg/max/mdev = [\d.]+/([\d.]+)/")


def scenario_text(w: Workload) -> str:
    return SCENARIO.format(
        label=w.label(),
        seed=SEED,
        delay_ms=f"{w.rtt_s * 1e3:g}",
        rate=w.rate_bps,
        limit=w.buffer_bytes,
        seconds=w.seconds,
        ping_interval=PING_INTERVAL,
        cc=w.cc,
    )


def run_bufferlab(w: Workload, keep: Path | None) -> dict[str, Any]:
    from bufferlab import load_scenario, run_scenario

    with tempfile.TemporaryDirectory() as tmp:
        d = keep / w.name if keep else Path(tmp)
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{w.name}.toml"
        path.write_text(scenario_text(w))
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
    drops = sum(v["packets"] for v in summary["interfaces"]["s1-eth2"]["drops"].values())
    return {
        "goodput_bps": nbytes * 8 / elapsed,
        "bytes": nbytes,
        "sink_elapsed_s": elapsed,
        "rtt_mean_s": float(m_ping.group(3)) / 1e3,
        "rtt_samples": int(m_ping.group(2)),
        "drops": drops,
        "retransmits": int(m_bulk.group(1)),
        "wall_s": wall,
    }


# -------------------------------------------------------------------------- main


def _fmt_table(rows: list[tuple[Workload, dict[str, Any], dict[str, Any]]]) -> str:
    head = (
        f"{'workload':<38} {'ceiling':>7} {'ns-3':>7} {'bflab':>7} {'ratio':>6} "
        f"{'RTT ns-3':>8} {'RTT bflab':>9} {'drops':>9} {'retx':>9} {'wall ns-3':>9} {'wall bflab':>10}"
    )
    units = (
        f"{'':<38} {'Mbit/s':>7} {'Mbit/s':>7} {'Mbit/s':>7} {'bl/ns3':>6} "
        f"{'ms':>8} {'ms':>9} {'ns3/bl':>9} {'ns3/bl':>9} {'s':>9} {'s':>10}"
    )
    lines = [head, units, "-" * len(head)]
    for w, a, b in rows:
        lines.append(
            f"{w.label():<38} {w.ceiling_bps / 1e6:7.3f} {a['goodput_bps'] / 1e6:7.3f} "
            f"{b['goodput_bps'] / 1e6:7.3f} {b['goodput_bps'] / a['goodput_bps']:6.3f} "
            f"{a['rtt_mean_s'] * 1e3:8.1f} {b['rtt_mean_s'] * 1e3:9.1f} "
            f"{a['drops']:>4}/{b['drops']:<4} {a['retransmits']:>4}/{b['retransmits']:<4} "
            f"{a['wall_s']:9.2f} {b['wall_s']:10.3f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="only the 10 Mbit/s workloads")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=[w.name for w in WORKLOADS],
                    help="run only these workloads")
    ap.add_argument("--linux-timers", action="store_true",
                    help="give ns-3 Linux's minimum RTO (200 ms) and delayed-ACK timeout (40 ms)")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write all measurements as JSON")
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="keep the bufferlab scenarios and results under DIR")
    args = ap.parse_args(argv)

    t0 = time.perf_counter()
    ns = import_ns3()
    if ns is None:
        print(
            "ns3_crosscheck: ns-3 is not importable (`from ns import ns` failed).\n"
            "Install the ns-3 Python package into this environment: pip install ns3",
            file=sys.stderr,
        )
        return 2
    print(f"ns-3 loaded in {time.perf_counter() - t0:.1f} s", flush=True)

    workloads = WORKLOADS
    if args.quick:
        workloads = [w for w in workloads if w.rate_bps <= 10_000_000]
    if args.only:
        workloads = [w for w in workloads if w.name in args.only]

    rows = []
    for w in workloads:
        print(f"{w.name}: {w.label()}, buffer {w.buffer_bytes} B ...", end=" ", flush=True)
        b = run_bufferlab(w, args.keep)
        a = run_ns3(ns, w, args.linux_timers)
        print(f"ns-3 {a['wall_s']:.1f} s, bufferlab {b['wall_s']:.2f} s", flush=True)
        rows.append((w, a, b))

    timers = "Linux-like (MinRto 200 ms, DelAckTimeout 40 ms)" if args.linux_timers else \
        "ns-3 defaults (MinRto 1 s, DelAckTimeout 200 ms)"
    print()
    print(f"goodput = sink payload bytes over [0, T]; RTT = mean of 10 Hz pings h2->h3; ns-3 TCP timers: {timers}")
    print(_fmt_table(rows))
    if args.json:
        out = [{"workload": w.name, "label": w.label(), "rate_bps": w.rate_bps, "rtt_s": w.rtt_s,
                "buffer_bytes": w.buffer_bytes, "buffer_packets": w.buffer_packets, "cc": w.cc,
                "seconds": w.seconds, "ceiling_bps": w.ceiling_bps, "linux_timers": args.linux_timers,
                "ns3": a, "bufferlab": b} for w, a, b in rows]
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
