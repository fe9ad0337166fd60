#!/usr/bin/env python3
r"""Replay the RED-vs-DropTail study in real ns-3 and in bufferlab (docs/ns3-crosscheck.md).

The study (tests/data/handouts/red-vs-droptail.txt, scenarios/red-vs-droptail.toml):

    n4 ─10M 6ms─┐                          ┌─10M 6ms─ n7
    n5 ─10M 6ms─ n3 ══1M 10ms══ n0 ──1M 10ms── n1 ══1M 10ms══ n2 ─10M 6ms─ n8
    n6 ─15M 4ms─┘   (RED/DropTail)          (RED/DropTail)    └─15M 4ms─ n9

UDP on/off n4 → n7 (0.5 s / 0.5 s, 512-byte datagrams at load·1e6/3/0.5 bit/s
while on), TCP bulk n5 → n8 and n6 → n9 (at most 1e6 bytes, 536-byte segments,
4000-byte receive buffer), 15 s. The studied queue (byte mode, 800 B) sits on
both devices of n0-n3 and n1-n2; everything crosses n3 → n0, whose 1 Mbit/s
device is the bottleneck. Output: per sink total bytes and goodput
floor(rx / 15.0) B/s, and the queue drops at the bottleneck.

ns-3 comes from PyPI (`pip install ns3`, 3.44.post0: `from ns import ns`),
preferably in a venv of its own; it is not a bufferlab dependency. The 2015
`ns3::RedQueue` the study configured is gone from current ns-3, so RED is
`ns3::RedQueueDisc` and DropTail `ns3::FifoQueueDisc` (800 B). By default
(`--ns3-placement device`) the queue disc is made the PointToPoint device's TX
queue through a small C++ adapter (DiscQueue below), which is where the
study's RedQueue / DropTailQueue sat: it sees PPP-framed sizes and is dequeued
when a transmission completes. `--ns3-placement tc` uses the current ns-3
idiom instead (queue disc in the traffic-control layer above a 1-packet device
queue, which then holds one more packet than the study's queue). RED's MaxSize
defaults to 1400 B, which admits what the 2015 RedQueue admitted (`n < 800`
before the packet); `--ns3-red-limit 800` gives RedQueueDisc's own rule
(`n + size <= 800`, bufferlab's `red_ns3 variant qdisc`). bufferlab runs the
same configurations as generated one-part scenarios (`bufferlab` on PATH or
`--bufferlab EXE`). Each simulator runs 15 simulated seconds in about 0.05 s
(ns-3, after 10 s of loading) and 0.5 s (bufferlab, process start included).

    python tools/ns3_red_study.py               # 3 configs, load 0.75, ns-3 runs 1-5, bufferlab seeds 1-5
    python tools/ns3_red_study.py --loads 0.25 0.5 0.75 --runs 10 --json /tmp/red.json
    python tools/ns3_red_study.py --ns3-only --runs 3    # or --bufferlab-only
    python tools/ns3_red_study.py --ns3-tcp 2015         # ns-3 without SACK/timestamps/PRR, as ns-3.2x was

Without ns-3 (and without --bufferlab-only) it prints how to install it and
exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import ns3_crosscheck  # tools/ns3_crosscheck.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "scenarios" / "red-vs-droptail.toml"
STOP_S = 15.0
QUEUE_BYTES = 800
SEGMENT = 536  # TcpSocket::SegmentSize in the study
RCVBUF = 4000  # the study's window_size
MAX_BYTES = 1_000_000
UDP_SIZE = 512
# RedQueueDisc MaxSize that admits what the 2015 RedQueue admitted (n < 800 before the
# packet): one 542/590-byte frame queued may be joined by another, two may not.
RED_LIMIT_2015 = 1400

# (a, b, a address, b address, rate, delay): the study's links, in the
# scenario's order (n0-n3 first: n3-eth0, the bottleneck, faces n0).
LINKS = [
    ("n0", "n3", "10.1.1.1", "10.1.1.2", "1Mbps", "10ms"),
    ("n1", "n2", "10.1.2.1", "10.1.2.2", "1Mbps", "10ms"),
    ("n0", "n1", "10.1.3.1", "10.1.3.2", "1Mbps", "10ms"),
    ("n3", "n4", "10.1.4.1", "10.1.4.2", "10Mbps", "6ms"),
    ("n3", "n5", "10.1.5.1", "10.1.5.2", "10Mbps", "6ms"),
    ("n3", "n6", "10.1.6.1", "10.1.6.2", "15Mbps", "4ms"),
    ("n2", "n7", "10.1.7.1", "10.1.7.2", "10Mbps", "6ms"),
    ("n2", "n8", "10.1.8.1", "10.1.8.2", "10Mbps", "6ms"),
    ("n2", "n9", "10.1.9.1", "10.1.9.2", "15Mbps", "4ms"),
]
STUDIED = (0, 1)  # links whose both devices get the studied queue
# The four studied devices, named as bufferlab names them (link index, end).
DEVICES = {"n0-eth0": (0, 0), "n3-eth0": (0, 1), "n1-eth0": (1, 0), "n2-eth0": (1, 1)}
BOTTLENECK = "n3-eth0"
SINKS = [("TCP1", "n8"), ("TCP2", "n9"), ("UDP", "n7")]  # the program's print order

RED_COMMON = {"min_th": 50, "max_th": 150, "qw": 0.01}
CONFIGS = {
    # name: None for DropTail, else ns-3's LInterm (max_p = 1/LInterm)
    "droptail": None,
    "red-faithful": 0.1,  # the script hands maxP 0.1 to LInterm: max_p = 10
    "red-intended": 10.0,  # max_p 0.1, what the script meant
}


def udp_rate_bps(load: float) -> int:
    return round(load * 1e6 / 3 / 0.5)


def goodput(rx: int) -> int:
    return int(rx / STOP_S)  # the program stores rx/15.0 in an int


# --------------------------------------------------------------------------- ns-3

_NS3_HELPERS = r"""
#include <sstream>
namespace bufferlab_redstudy {
using namespace ns3;

uint64_t SinkRx(Ptr<Application> app) { return DynamicCast<PacketSink>(app)->GetTotalRx(); }

// A queue disc item for a packet that already carries its PPP header.
class FramedItem : public QueueDiscItem {
  public:
    explicit FramedItem(Ptr<Packet> p) : QueueDiscItem(p, Address(), 0) {}
    void AddHeader() override {}
    bool Mark() override { return false; }
};

// A PointToPoint TX queue that lets an ns-3 queue disc decide admission and
// order: the queue disc then sits where the study's 2015 device queue
// (ns3::RedQueue / DropTailQueue) sat, sees PPP-framed sizes, and is dequeued
// by the device itself when a transmission completes. Its own counters stay
// at zero, so flow control never stops the (absent) traffic-control queue.
class DiscQueue : public Queue<Packet> {
  public:
    static TypeId GetTypeId() {
        static TypeId tid = TypeId("bufferlab_redstudy::DiscQueue")
                                .SetParent<Queue<Packet>>()
                                .SetGroupName("Network");
        return tid;
    }
    Ptr<QueueDisc> disc;
    bool Enqueue(Ptr<Packet> p) override { return disc->Enqueue(Create<FramedItem>(p)); }
    Ptr<Packet> Dequeue() override {
        Ptr<QueueDiscItem> i = disc->Dequeue();
        return i ? i->GetPacket() : nullptr;
    }
    Ptr<Packet> Remove() override { return Dequeue(); }
    Ptr<const Packet> Peek() const override {
        Ptr<const QueueDiscItem> i = disc->Peek();
        return i ? i->GetPacket() : nullptr;
    }
};

Ptr<QueueDisc> MakeDisc(bool red, std::string maxSize, double minTh, double maxTh, double qw,
                        double linterm) {
    ObjectFactory f;
    f.SetTypeId(red ? "ns3::RedQueueDisc" : "ns3::FifoQueueDisc");
    f.Set("MaxSize", QueueSizeValue(QueueSize(maxSize)));
    if (red) {
        f.Set("MinTh", DoubleValue(minTh));
        f.Set("MaxTh", DoubleValue(maxTh));
        f.Set("QW", DoubleValue(qw));
        f.Set("LInterm", DoubleValue(linterm));
    }
    return f.Create<QueueDisc>();
}

Ptr<QueueDisc> UseAsDeviceQueue(Ptr<NetDevice> dev, Ptr<QueueDisc> disc) {
    disc->Initialize();
    Ptr<DiscQueue> q = CreateObject<DiscQueue>();
    q->disc = disc;
    DynamicCast<PointToPointNetDevice>(dev)->SetQueue(q);
    return disc;
}

Ptr<QueueDisc> RootDisc(Ptr<NetDevice> dev) {
    return dev->GetNode()->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(dev);
}

// "sent_pkts sent_bytes dropped unforced forced internal"
std::string DiscStats(Ptr<QueueDisc> q) {
    const QueueDisc::Stats& s = q->GetStats();
    std::ostringstream o;
    o << s.nTotalSentPackets << " " << s.nTotalSentBytes << " " << s.nTotalDroppedPackets << " "
      << s.GetNDroppedPackets(RedQueueDisc::UNFORCED_DROP) << " "
      << s.GetNDroppedPackets(RedQueueDisc::FORCED_DROP) << " "
      << s.GetNDroppedPackets(QueueDisc::INTERNAL_QUEUE_DROP);
    return o.str();
}

uint64_t DeviceQueueDrops(Ptr<NetDevice> dev) {
    return DynamicCast<PointToPointNetDevice>(dev)->GetQueue()->GetTotalDroppedPackets();
}
}
"""


def import_ns3() -> Any:
    """`from ns import ns` with this study's C++ helpers (the loader and its
    stderr filtering are tools/ns3_crosscheck.py's), or None."""
    return ns3_crosscheck.import_ns3(_NS3_HELPERS)


@dataclass(frozen=True)
class Ns3Options:
    """How ns-3 is set up where current ns-3 differs from the study's (2015) ns-3."""

    # "device": the studied queue disc (RedQueueDisc / FifoQueueDisc) IS the
    # device's TX queue (DiscQueue above), as the study's RedQueue and
    # DropTailQueue were; "tc": the current ns-3 idiom, the queue disc in the
    # traffic-control layer above a 1-packet device queue.
    placement: str = "device"
    # RedQueueDisc's MaxSize in bytes (internal FIFO: admits while n + size <=
    # limit). The 2015 RedQueue admitted while n < 800 before the packet, i.e.
    # up to two 540-590-byte packets: 1400 reproduces that for this traffic.
    red_limit: int = RED_LIMIT_2015
    # "study": TcpNewReno, InitialCwnd 1 (bufferlab's ns3 flavour) with
    # ns-3.44's SACK, timestamps, window scaling and PRR; "2015": additionally
    # no SACK, no timestamps, no window scaling and classic NewReno recovery,
    # roughly the ns-3 TCP of the study's time.
    tcp: str = "study"


def run_ns3(ns: Any, config: str, load: float, run: int, opts: Ns3Options) -> dict[str, Any]:
    t0 = time.perf_counter()
    cpp = ns.cppyy.gbl.bufferlab_redstudy
    setd = ns.Config.SetDefault
    # Set every default on every run: Config::SetDefault outlives Simulator::Destroy.
    setd("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpNewReno"))
    setd("ns3::TcpSocket::SegmentSize", ns.UintegerValue(SEGMENT))
    setd("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(RCVBUF))
    setd("ns3::TcpSocket::SndBufSize", ns.UintegerValue(131072))
    setd("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(1))
    setd("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.Seconds(1)))
    old_tcp = opts.tcp == "2015"
    setd("ns3::TcpSocketBase::Sack", ns.BooleanValue(not old_tcp))
    setd("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(not old_tcp))
    setd("ns3::TcpSocketBase::WindowScaling", ns.BooleanValue(not old_tcp))
    recovery = "ns3::TcpClassicRecovery" if old_tcp else "ns3::TcpPrrRecovery"
    setd("ns3::TcpL4Protocol::RecoveryType", ns.TypeIdValue(ns.TypeId.LookupByName(recovery)))
    ns.RngSeedManager.SetSeed(1)
    ns.RngSeedManager.SetRun(run)

    nodes = ns.NodeContainer()
    nodes.Create(10)
    node = {f"n{i}": nodes.Get(i) for i in range(10)}
    stack = ns.InternetStackHelper()
    stack.Install(nodes)

    linterm = CONFIGS[config]
    devs = []
    for i, (a, b, _aip, _bip, rate, delay) in enumerate(LINKS):
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue(rate))
        p2p.SetChannelAttribute("Delay", ns.StringValue(delay))
        if i in STUDIED and opts.placement == "tc":
            # flow control: the queue disc above holds the backlog
            p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))
        # elsewhere ns-3's default device queue, DropTailQueue of 100 packets
        devs.append(p2p.Install(node[a], node[b]))

    addr = ns.Ipv4AddressHelper()
    ifaces = []
    for d, (_a, _b, aip, _bip, _r, _dl) in zip(devs, LINKS, strict=True):
        addr.SetBase(ns.Ipv4Address(aip.rsplit(".", 1)[0] + ".0"), ns.Ipv4Mask("255.255.255.0"))
        ifaces.append(addr.Assign(d))
    # Assign installed ns-3's default root queue disc (FqCoDel) everywhere;
    # the study's ns-3 had no traffic-control layer: take them all off.
    uninstall = ns.TrafficControlHelper()
    for d in devs:
        for k in range(2):
            uninstall.Uninstall(d.Get(k))
    limit = f"{QUEUE_BYTES if linterm is None else opts.red_limit}B"
    discs = {}
    for name, (li, k) in DEVICES.items():
        # RED: everything but these attributes stays at ns-3's default
        # (MeanPktSize 500, Gentle, Wait, LinkBandwidth 1.5Mbps, LinkDelay 20ms, no ECN/ARED)
        disc = cpp.MakeDisc(linterm is not None, limit, RED_COMMON["min_th"], RED_COMMON["max_th"],
                            RED_COMMON["qw"], linterm or 1.0)
        dev = devs[li].Get(k)
        if opts.placement == "device":
            discs[name] = cpp.UseAsDeviceQueue(dev, disc)
        else:
            tch = ns.TrafficControlHelper()
            if linterm is None:
                tch.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize(limit)))
            else:
                tch.SetRootQueueDisc(
                    "ns3::RedQueueDisc",
                    "MaxSize", ns.QueueSizeValue(ns.QueueSize(limit)),
                    "MinTh", ns.DoubleValue(RED_COMMON["min_th"]),
                    "MaxTh", ns.DoubleValue(RED_COMMON["max_th"]),
                    "QW", ns.DoubleValue(RED_COMMON["qw"]),
                    "LInterm", ns.DoubleValue(linterm),
                )
            tch.Install(dev)
            discs[name] = cpp.RootDisc(dev)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    def addr_of(host: str) -> Any:
        li = next(i for i, link in enumerate(LINKS) if link[1] == host)
        return ifaces[li].GetAddress(1)

    port = 9
    any_port = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
    sinks = {}
    for label, host in SINKS:
        factory = "ns3::UdpSocketFactory" if label == "UDP" else "ns3::TcpSocketFactory"
        sinks[label] = ns.PacketSinkHelper(factory, any_port).Install(node[host])
    onoff = ns.OnOffHelper("ns3::UdpSocketFactory", ns.InetSocketAddress(addr_of("n7"), port).ConvertTo())
    onoff.SetAttribute("OnTime", ns.StringValue("ns3::ConstantRandomVariable[Constant=0.5]"))
    onoff.SetAttribute("OffTime", ns.StringValue("ns3::ConstantRandomVariable[Constant=0.5]"))
    onoff.SetAttribute("DataRate", ns.DataRateValue(ns.DataRate(udp_rate_bps(load))))
    onoff.SetAttribute("PacketSize", ns.UintegerValue(UDP_SIZE))
    apps = [onoff.Install(node["n4"])]
    for src, dst in (("n5", "n8"), ("n6", "n9")):
        to = ns.InetSocketAddress(addr_of(dst), port).ConvertTo()
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", to)
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(MAX_BYTES))
        apps.append(bulk.Install(node[src]))
    for a in [*sinks.values(), *apps]:
        a.Start(ns.Seconds(0))
    ns.Simulator.Stop(ns.Seconds(STOP_S))
    ns.Simulator.Run()

    rx = {label: int(cpp.SinkRx(sinks[label].Get(0))) for label, _ in SINKS}
    queues: dict[str, Any] = {}
    for name, (li, k) in DEVICES.items():
        stats = str(cpp.DiscStats(discs[name])).split()
        sent, _sent_b, dropped, unforced, forced, internal = (int(x) for x in stats)
        dev_drops = int(cpp.DeviceQueueDrops(devs[li].Get(k))) if opts.placement == "tc" else 0
        entry: dict[str, Any] = {"sent": sent, "drops": dropped + dev_drops}
        if linterm is not None:
            entry.update(unforced=unforced, forced=forced, limit=internal)
        queues[name] = entry
    ns.Simulator.Destroy()
    return {
        "rx": rx,
        "goodput": {k: goodput(v) for k, v in rx.items()},
        "queues": queues,
        "wall_s": time.perf_counter() - t0,
    }


# --------------------------------------------------------------------- bufferlab


@dataclass(frozen=True)
class BlOptions:
    red_variant: str = "2015"  # red_ns3 variant: 2015 (the study's RedQueue) or qdisc (RedQueueDisc)
    arp: bool = False  # ns-3's PointToPoint links resolve no addresses


def bufferlab_scenario(config: str, load: float, opts: BlOptions) -> str:
    """A one-part scenario: the shipped file's topology and hosts, this config's commands."""
    text = SHIPPED.read_text(encoding="utf-8")
    head = text.split("[[part]]", 1)[0]
    head = re.sub(r'(?m)^seed = \d+\n', "", head)
    if not opts.arp:
        head = head.replace("[topology]", "[sim]\narp = false\n\n[topology]", 1)
    linterm = CONFIGS[config]
    cmds = []
    for dev in DEVICES:
        host = dev.split("-")[0]
        if linterm is None:
            q = f"bfifo limit {QUEUE_BYTES}"
        else:
            q = (f"red_ns3 variant {opts.red_variant} mode bytes limit {QUEUE_BYTES} "
                 f"minth {RED_COMMON['min_th']} maxth {RED_COMMON['max_th']} qw {RED_COMMON['qw']} "
                 f"linterm {linterm:g}")
        cmds.append(f"{host}: tc qdisc replace dev {dev} root {q}")
    cmds += [
        "n0: tc qdisc replace dev n0-eth1 root pfifo limit 100",
        "n1: tc qdisc replace dev n1-eth1 root pfifo limit 100",
        "n7: sink -u -p 9",
        "n8: sink -p 9",
        "n9: sink -p 9",
        f"n4: onoff -c 10.1.7.2 -u -r {udp_rate_bps(load)} --on 0.5 --off 0.5 -l {UDP_SIZE} -p 9 -t 15",
        f"n5: bulk -c 10.1.8.2 -p 9 -n {MAX_BYTES} -t 15",
        f"n6: bulk -c 10.1.9.2 -p 9 -n {MAX_BYTES} -t 15",
    ]
    body = "\n".join(f'  "{c}",' for c in cmds)
    return f'{head}[[part]]\nname = "{config}"\nstop = "15s"\ncmds = [\n{body}\n]\n'


def run_bufferlab(
    exe: str, config: str, load: float, seed: int, opts: BlOptions, workdir: Path
) -> dict[str, Any]:
    t0 = time.perf_counter()
    d = workdir / f"{config}-{load:g}-{seed}"
    d.mkdir(parents=True, exist_ok=True)
    sc = d / "study.toml"
    sc.write_text(bufferlab_scenario(config, load, opts), encoding="utf-8")
    subprocess.run([exe, "run", str(sc), "-o", str(d / "out"), "--seed", str(seed), "-q", "--no-report"],
                   check=True)
    summary = next((d / "out").glob("*/summary.json"))
    part = json.loads(summary.read_text())["parts"][0]
    by_host = {s["host"]: s["bytes"] for s in part["sinks"]}
    rx = {label: int(by_host.get(host, 0)) for label, host in SINKS}
    queues: dict[str, Any] = {}
    for dev in DEVICES:
        root = next(q for q in part["qdiscs"][dev] if q["parent"] is None)
        x = root.get("xstats", {})
        entry = {"sent": root["stats"]["packets"], "drops": root["stats"]["drops"]}
        if root["kind"] == "red_ns3":
            v2015 = root["options"]["variant"] == "2015"
            entry.update(unforced=x["unforced_drop"],
                         forced=x["forced_drop"] - (x["qlim_drop"] if v2015 else 0),
                         limit=x["qlim_drop"])
        queues[dev] = entry
    return {
        "rx": rx,
        "goodput": {k: goodput(v) for k, v in rx.items()},
        "queues": queues,
        "wall_s": time.perf_counter() - t0,
    }


# ------------------------------------------------------------------------ report


def spread(values: list[float]) -> tuple[float, float, float, float]:
    """mean, standard deviation, min, max."""
    if not values:
        return (math.nan,) * 4
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), sd, min(values), max(values)


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"n": len(runs)}
    for label, _ in SINKS:
        out[label] = spread([r["goodput"][label] for r in runs])
    out["TCP"] = spread([r["goodput"]["TCP1"] + r["goodput"]["TCP2"] for r in runs])
    q = [r["queues"][BOTTLENECK] for r in runs]
    for key in ("drops", "unforced", "forced", "limit"):
        if all(key in e for e in q):
            out[f"bottleneck_{key}"] = spread([e[key] for e in q])
    return out


def fmt(s: tuple[float, float, float, float]) -> str:
    mean, sd, lo, hi = s
    if math.isnan(mean):
        return "-"
    if sd == 0:
        return f"{mean:.0f}"
    return f"{mean:.0f} ± {sd:.0f} [{lo:.0f}–{hi:.0f}]"


def print_table(results: dict[str, Any]) -> None:
    cols = ["TCP1", "TCP2", "UDP", "TCP"]
    print("\ngoodput B/s: mean ± sd [min–max] over runs; drops at n3-eth0 (bottleneck):"
          " total (unforced/forced/limit)")
    print("| config | load | sim | runs | " + " | ".join(cols) + " | drops | unforced | forced | limit |")
    print("|---" * (8 + len(cols)) + "|")
    for key, sims in results.items():
        config, load = key.rsplit("@", 1)
        for sim in ("ns-3", "bufferlab"):
            if sim not in sims:
                continue
            s = sims[sim]["summary"]
            keys = ("drops", "unforced", "forced", "limit")
            drops = [fmt(s.get(f"bottleneck_{k}", (math.nan,) * 4)) for k in keys]
            print(f"| {config} | {load} | {sim} | {s['n']} | " + " | ".join(fmt(s[c]) for c in cols)
                  + " | " + " | ".join(drops) + " |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    ap.add_argument("--loads", nargs="+", type=float, default=[0.75])
    ap.add_argument("--runs", type=int, default=5, help="ns-3 RngRun 1..N and bufferlab --seed 1..N")
    ap.add_argument("--ns3-only", action="store_true")
    ap.add_argument("--bufferlab-only", action="store_true")
    ap.add_argument("--ns3-placement", choices=["device", "tc"], default="device",
                    help="studied queue disc as the device queue (2015 layout) or in the traffic-control"
                         " layer")
    ap.add_argument("--ns3-red-limit", type=int, default=RED_LIMIT_2015,
                    help="RedQueueDisc MaxSize in bytes (1400 mimics the 2015 RedQueue's limit test)")
    ap.add_argument("--ns3-tcp", choices=["study", "2015"], default="study")
    ap.add_argument("--bl-red-variant", choices=["2015", "qdisc"], default="2015")
    ap.add_argument("--bl-arp", action="store_true",
                    help="let bufferlab resolve addresses (ns-3 P2P does not)")
    ap.add_argument("--bufferlab", default=shutil.which("bufferlab") or "bufferlab")
    ap.add_argument("--keep", type=Path, help="keep bufferlab's scenarios and results here")
    ap.add_argument("--json", type=Path, help="write every run's numbers here")
    ap.add_argument("--per-run", action="store_true", help="print every run's goodputs")
    a = ap.parse_args(argv)

    ns = None
    if not a.bufferlab_only:
        ns = import_ns3()
        if ns is None:
            print("ns-3 is not importable here. Install it into a venv of its own and run this there:\n"
                  "  python3 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install 'ns3==3.44.post0'\n"
                  "  /tmp/ns3venv/bin/python tools/ns3_red_study.py --bufferlab $(which bufferlab)",
                  file=sys.stderr)
            return 2
    nopts = Ns3Options(placement=a.ns3_placement, red_limit=a.ns3_red_limit, tcp=a.ns3_tcp)
    bopts = BlOptions(red_variant=a.bl_red_variant, arp=a.bl_arp)
    runs = list(range(1, a.runs + 1))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="red-study-") as tmp:
        work = a.keep or Path(tmp)
        for load in a.loads:
            for config in a.configs:
                key = f"{config}@{load:g}"
                results[key] = {}
                if ns is not None:
                    rr = [run_ns3(ns, config, load, r, nopts) for r in runs]
                    results[key]["ns-3"] = {"runs": rr, "summary": summarise(rr)}
                if not a.ns3_only:
                    rr = [run_bufferlab(a.bufferlab, config, load, s, bopts, work) for s in runs]
                    results[key]["bufferlab"] = {"runs": rr, "summary": summarise(rr)}
                if a.per_run:
                    for sim, v in results[key].items():
                        for i, r in zip(runs, v["runs"], strict=True):
                            print(f"{key} {sim} run {i}: {r['goodput']} drops {r['queues'][BOTTLENECK]}"
                                  f" ({r['wall_s']:.2f} s)")
    print(f"ns-3 options: {asdict(nopts)}; bufferlab options: {asdict(bopts)}")
    print_table(results)
    if a.json:
        a.json.write_text(json.dumps({"ns3": asdict(nopts), "bufferlab": asdict(bopts), "results": results},
                                     indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
