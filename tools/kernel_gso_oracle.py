#!/usr/bin/env python3
r"""Measure what the real Linux kernel does with TSO/GSO aggregates behind a tbf
shaper with a pfifo child (issue 10, "Real-kernel oracle"; docs/kernel-oracle.md).

Topology, built from scratch for every run (fresh namespaces, so no TCP metrics
cache, counters or qdisc state carry over from one run to the next):

    ns h1                 ns s1 (Linux bridge br0)                 ns h2
    h1-eth0 10.77.10.1 ── s1-eth1   br0   s1-eth2 ── h2-eth0 10.77.10.2
                                          └ tbf 1: rate R burst B limit L
                                              └ pfifo 2: limit N

as Mininet builds it (hosts' eth0 veths into a switch; the shaper on the switch
port toward the receiver; GRO off on every veth, which is also this kernel's
veth default). There is no delay line: netem is not available in the kernel
this was written on, and an EDT/BPF delay would need a compiler. The round trip
is therefore the veth/bridge path (tens of µs) plus the queue the flow builds in
front of the shaper, i.e. the pfifo's own standing queue; the "BDP" is that
queue. This is the configuration in which the pfifo limit, counted in queue
entries, matters most: it alone decides the RTT, the cwnd and the drops.

One run = one TCP iperf3 flow h1 -> h2 (`-C cubic -t T -J`). "gso on" leaves
every veth's offloads at their defaults (TSO and GSO on); "gso off" runs
`ethtool -K h1-eth0 tso off gso off` in the sender's namespace, which is the
interface that decides what reaches the switch: TCP builds aggregates anyway
(since Linux 4.14 `sk_setup_caps` forces NETIF_F_GSO for TCP sockets) and the
sender's device segments them in software (`validate_xmit_skb`) when its
features lack TSO/GSO. Turning the offloads off on the switch ports instead
changes nothing the qdisc sees: a qdisc is passed the skb before the device's
features are checked (validate_xmit_skb runs after dequeue, in
sch_direct_xmit). `--probe-ports` measures that too.

Recorded per run: iperf3's sender/receiver goodput, retransmits and RTT
(tcp_info), `tc -s -j qdisc show dev s1-eth2` (Sent bytes/pkt, dropped,
overlimits, requeues, backlog for tbf and pfifo), the interface counters
(`ip -s -j link`: a veth counts one packet per skb) and the SNMP counters of
both hosts (/proc/net/snmp, netstat) from which the segments per skb are
derived:

- segs_per_skb_sent  = h1 TcpOutSegs / h1-eth0 tx packets (what leaves the host)
- segs_per_entry_out = tc pfifo Sent pkt (segments) / s1-eth2 tx packets (skbs
  dequeued from the shaper = queue entries that left it)
- segs_per_skb_recv  = h2 IpExtInNoECTPkts (segments) / IpInReceives (skbs)

    python tools/kernel_gso_oracle.py                     # full grid, 3 repetitions, -> stdout table
    python tools/kernel_gso_oracle.py --out results.json  # also the JSON
    python tools/kernel_gso_oracle.py --limits 10 --bursts 200000 --reps 1 --seconds 3

Needs root, `ip`, `tc`, `ethtool`, `iperf3`. Traffic stays inside the
namespaces it creates (addresses 10.77.10.0/24 exist only there); they are
removed in a finally block.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

RATE = "100mbit"
RATE_BPS = 100e6
TBF_LIMIT = 1_000_000     # tbf's own limit only sizes the default bfifo child, replaced by pfifo
SECONDS = 5
LIMITS = (10, 50, 1000)
# 50000 < a 64 KB aggregate (tbf splits it, docs/semantics/qdiscs.md E5); 200000 > it
BURSTS = (50_000, 200_000)
REPS = 3
# Kernel defaults for the TCP buffers (net/ipv4/tcp.c, tcp_init), set explicitly in
# every namespace because a new namespace copies init_net's values, which may
# have been changed on the machine.
TCP_RMEM = "4096 131072 6291456"
TCP_WMEM = "4096 16384 4194304"
SENDER_ADDR, RECEIVER_ADDR = "10.77.10.1", "10.77.10.2"


@dataclass(frozen=True)
class Case:
    burst: int
    limit: int
    gso: str                          # "on" | "off"
    off_ifaces: tuple[str, ...] = ()  # interfaces given `ethtool -K … tso off gso off`

    @property
    def key(self) -> str:
        where = "" if self.off_ifaces in ((), ("h1-eth0",)) else "@" + "+".join(self.off_ifaces)
        return f"burst{self.burst}-limit{self.limit}-gso{self.gso}{where}"


def standard_case(burst: int, limit: int, gso: str) -> Case:
    return Case(burst, limit, gso, ("h1-eth0",) if gso == "off" else ())


def _sh(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=timeout)


def _ns(ns: str, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    return _sh("ip", "netns", "exec", ns, *args, check=check, timeout=timeout)


def unavailable() -> str | None:
    """Why the experiment cannot run here, or None."""
    if platform.system() != "Linux":
        return "needs Linux"
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    for tool in ("ip", "tc", "iperf3", "ethtool"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = f"blg{uuid.uuid4().hex[:6]}"
    if _sh("ip", "netns", "add", probe, check=False).returncode != 0:
        return "network namespaces are not available here"
    try:
        made = _sh("ip", "-n", probe, "link", "add", "x0", "type", "veth", "peer", "name", "x1",
                   check=False).returncode == 0
        if not made:
            return "veth is not available here"
        if _ns(probe, "tc", "qdisc", "add", "dev", "x0", "root", "tbf", "rate", RATE,
               "burst", "50000", "limit", "100000", check=False).returncode != 0:
            return "tbf is not available here"
        if "cubic" not in _ns(probe, "sysctl", "-n", "net.ipv4.tcp_available_congestion_control",
                              check=False).stdout.split():
            return "cubic is not available here"
    finally:
        _sh("ip", "netns", "del", probe, check=False)
    return None


class Topology:
    """h1 -- s1 (bridge) -- h2 in three fresh namespaces; a context manager."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:6]
        self.h1, self.h2, self.s1 = f"blh1{tag}", f"blh2{tag}", f"bls1{tag}"

    def __enter__(self) -> Topology:
        made: list[str] = []
        try:
            for ns in (self.h1, self.h2, self.s1):
                _sh("ip", "netns", "add", ns)
                made.append(ns)
            self._build()
        except BaseException:
            for ns in made:
                _sh("ip", "netns", "del", ns, check=False)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for ns in (self.h1, self.h2, self.s1):
            _sh("ip", "netns", "del", ns, check=False)

    def _build(self) -> None:
        s1 = self.s1
        _sh("ip", "-n", s1, "link", "add", "br0", "type", "bridge")
        _sh("ip", "-n", s1, "link", "set", "br0", "up")
        for host, ifname, addr, port in ((self.h1, "h1-eth0", SENDER_ADDR, "s1-eth1"),
                                         (self.h2, "h2-eth0", RECEIVER_ADDR, "s1-eth2")):
            _sh("ip", "link", "add", ifname, "netns", host, "type", "veth",
                "peer", "name", port, "netns", s1)
            _sh("ip", "-n", host, "addr", "add", f"{addr}/24", "dev", ifname)
            for ns, dev in ((host, ifname), (s1, port)):
                # Mininet's TCIntf turns GRO off; the veth default here is off already.
                _ns(ns, "ethtool", "-K", dev, "gro", "off", check=False)
            _sh("ip", "-n", host, "link", "set", ifname, "up")
            _sh("ip", "-n", host, "link", "set", "lo", "up")
            _sh("ip", "-n", s1, "link", "set", port, "master", "br0")
            _sh("ip", "-n", s1, "link", "set", port, "up")
            _ns(host, "sysctl", "-q", "-w", f"net.ipv4.tcp_rmem={TCP_RMEM}")
            _ns(host, "sysctl", "-q", "-w", f"net.ipv4.tcp_wmem={TCP_WMEM}")
            # ARP answered before the flow, so no neighbour resolution inside the measurement
            _sh("ip", "-n", host, "neigh", "flush", "all", check=False)

    def ns_of(self, ifname: str) -> str:
        return {"h1-eth0": self.h1, "h2-eth0": self.h2}.get(ifname, self.s1)


def _link_stats(ns: str, dev: str) -> dict[str, int]:
    doc = json.loads(_ns(ns, "ip", "-s", "-j", "link", "show", "dev", dev).stdout)[0]
    st = doc["stats64"]
    return {"rx_packets": st["rx"]["packets"], "rx_bytes": st["rx"]["bytes"],
            "tx_packets": st["tx"]["packets"], "tx_bytes": st["tx"]["bytes"],
            "tx_dropped": st["tx"]["dropped"]}


def _snmp(ns: str) -> dict[str, int]:
    """/proc/net/snmp and /proc/net/netstat of the namespace, as {"TcpOutSegs": n, …}."""
    out: dict[str, int] = {}
    for path in ("/proc/net/snmp", "/proc/net/netstat"):
        lines = _ns(ns, "cat", path).stdout.splitlines()
        for head, vals in zip(lines[::2], lines[1::2], strict=False):
            proto, names = head.split(":", 1)
            _, values = vals.split(":", 1)
            for n, v in zip(names.split(), values.split(), strict=True):
                try:
                    out[proto + n] = int(v)
                except ValueError:
                    pass
    return out


def _qdisc_stats(ns: str, dev: str) -> tuple[dict[str, dict[str, int]], str]:
    doc = json.loads(_ns(ns, "tc", "-s", "-j", "qdisc", "show", "dev", dev).stdout)
    text = _ns(ns, "tc", "-s", "qdisc", "show", "dev", dev).stdout
    out: dict[str, dict[str, int]] = {}
    for q in doc:
        out[q["kind"]] = {k: int(q.get(k, 0)) for k in
                          ("bytes", "packets", "drops", "overlimits", "requeues", "backlog", "qlen")}
    return out, text


def _wait_listening(ns: str, port: int = 5201, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if f":{port} " in _ns(ns, "ss", "-Htln", check=False).stdout:
            return
        time.sleep(0.05)
    raise RuntimeError("iperf3 server did not start listening")


def run_once(case: Case, seconds: float = SECONDS) -> dict[str, Any]:
    """One fresh topology, one TCP flow; the measured numbers."""
    with Topology() as topo:
        s1 = topo.s1
        _ns(s1, "tc", "qdisc", "add", "dev", "s1-eth2", "root", "handle", "1:", "tbf", "rate", RATE,
            "burst", str(case.burst), "limit", str(TBF_LIMIT))
        _ns(s1, "tc", "qdisc", "add", "dev", "s1-eth2", "parent", "1:", "handle", "2:", "pfifo",
            "limit", str(case.limit))
        for dev in case.off_ifaces:
            _ns(topo.ns_of(dev), "ethtool", "-K", dev, "tso", "off", "gso", "off")
        features = {dev: _features(topo.ns_of(dev), dev)
                    for dev in ("h1-eth0", "s1-eth1", "s1-eth2", "h2-eth0")}
        server = subprocess.Popen(["ip", "netns", "exec", topo.h2, "iperf3", "-s", "-1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_listening(topo.h2)
            before = {"h1": _snmp(topo.h1), "h2": _snmp(topo.h2)}
            links0 = {d: _link_stats(topo.ns_of(d), d) for d in ("h1-eth0", "s1-eth1", "s1-eth2")}
            t0 = time.monotonic()
            client = _ns(topo.h1, "iperf3", "-c", RECEIVER_ADDR, "-C", "cubic", "-t", str(seconds),
                         "-J", timeout=seconds + 30)
            wall = time.monotonic() - t0
        finally:
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        qd, tc_text = _qdisc_stats(s1, "s1-eth2")
        after = {"h1": _snmp(topo.h1), "h2": _snmp(topo.h2)}
        links1 = {d: _link_stats(topo.ns_of(d), d) for d in ("h1-eth0", "s1-eth1", "s1-eth2")}
    doc = json.loads(client.stdout)
    end = doc["end"]
    stream = end["streams"][0]["sender"]
    snmp = {h: {k: after[h][k] - before[h].get(k, 0) for k in after[h]} for h in after}
    links = {d: {k: links1[d][k] - links0[d][k] for k in links1[d]} for d in links1}
    pf, tbf = qd["pfifo"], qd["tbf"]
    segs_recv = sum(snmp["h2"].get(k, 0) for k in
                    ("IpExtInNoECTPkts", "IpExtInECT0Pkts", "IpExtInECT1Pkts", "IpExtInCEPkts"))
    res: dict[str, Any] = {
        "case": asdict(case) | {"key": case.key},
        "wall_s": round(wall, 3),
        "sender_bps": end["sum_sent"]["bits_per_second"],
        "receiver_bps": end["sum_received"]["bits_per_second"],
        "sender_bytes": end["sum_sent"]["bytes"],
        "receiver_bytes": end["sum_received"]["bytes"],
        "retransmits": end["sum_sent"].get("retransmits", 0),
        "rtt_us": {k: stream.get(k) for k in ("min_rtt", "mean_rtt", "max_rtt")},
        "max_snd_cwnd": stream.get("max_snd_cwnd"),
        "tbf": tbf, "pfifo": pf,
        "tc_text": tc_text,
        "links": links,
        "snmp": {h: {k: snmp[h][k] for k in ("TcpOutSegs", "TcpRetransSegs", "TcpInSegs",
                                             "IpInReceives", "IpOutRequests") if k in snmp[h]}
                 for h in snmp} | {"h2_segments_in": segs_recv},
        "features": features,
    }
    res["derived"] = derive(res)
    return res


def derive(res: dict[str, Any]) -> dict[str, float | None]:
    """Bytes and segments per queue entry, from the counters of one run."""
    pf = res["pfifo"]
    links = res["links"]
    snmp = res["snmp"]

    def ratio(a: float, b: float) -> float | None:
        return round(a / b, 3) if b else None

    entries_out = links["s1-eth2"]["tx_packets"]
    # TcpOutSegs leaves retransmitted segments out (__tcp_transmit_skb); add them back
    sent_segs = snmp["h1"].get("TcpOutSegs", 0) + snmp["h1"].get("TcpRetransSegs", 0)
    return {
        "segs_per_skb_sent": ratio(sent_segs, links["h1-eth0"]["tx_packets"]),
        "segs_per_ip_skb": ratio(sent_segs, snmp["h1"].get("IpOutRequests", 0)),
        "segs_per_entry_out": ratio(pf["packets"], entries_out),
        "bytes_per_entry_out": ratio(pf["bytes"], entries_out),
        "segs_per_skb_recv": ratio(snmp["h2_segments_in"], snmp["h2"].get("IpInReceives", 0)),
        "drop_share_of_entries": ratio(pf["drops"], entries_out + pf["drops"]),
        # segments h1 sent that never left s1-eth2 (the pfifo's drops, in segments)
        "dropped_segs_est": sent_segs - pf["packets"],
        "segs_per_drop_est": ratio(sent_segs - pf["packets"], pf["drops"]),
    }


def _features(ns: str, dev: str) -> dict[str, str]:
    out = _ns(ns, "ethtool", "-k", dev).stdout
    want = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload")
    feats = {}
    for line in out.splitlines():
        m = re.match(r"(\S+): (on|off)", line.strip())
        if m and m.group(1) in want:
            feats[m.group(1)] = m.group(2)
    return feats


def environment() -> dict[str, str]:
    iperf = _sh("iperf3", "--version", check=False).stdout.splitlines()
    eth = _sh("ethtool", "--version", check=False).stdout.strip()
    ipv = _sh("ip", "-V", check=False).stdout.strip()
    return {"kernel": platform.release(), "iperf3": iperf[0] if iperf else "?", "ethtool": eth,
            "iproute2": ipv, "cpus": str(os.cpu_count())}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean, min and max over the repetitions of one case, for the numbers compared."""
    cols = {
        "receiver_mbps": [r["receiver_bps"] / 1e6 for r in runs],
        "sender_mbps": [r["sender_bps"] / 1e6 for r in runs],
        "retransmits": [r["retransmits"] for r in runs],
        "sent_pkt": [r["pfifo"]["packets"] for r in runs],
        "sent_bytes": [r["pfifo"]["bytes"] for r in runs],
        "tbf_sent_pkt": [r["tbf"]["packets"] for r in runs],
        "dropped": [r["tbf"]["drops"] for r in runs],
        "pfifo_dropped": [r["pfifo"]["drops"] for r in runs],
        "overlimits": [r["tbf"]["overlimits"] for r in runs],
        "requeues": [r["tbf"]["requeues"] for r in runs],
        "mean_rtt_ms": [r["rtt_us"]["mean_rtt"] / 1000 for r in runs if r["rtt_us"]["mean_rtt"]],
        "segs_per_skb_sent": [r["derived"]["segs_per_skb_sent"] for r in runs],
        "segs_per_entry_out": [r["derived"]["segs_per_entry_out"] for r in runs],
        "bytes_per_entry_out": [r["derived"]["bytes_per_entry_out"] for r in runs],
        "segs_per_skb_recv": [r["derived"]["segs_per_skb_recv"] for r in runs],
        "segs_per_drop_est": [r["derived"]["segs_per_drop_est"] for r in runs],
    }
    out = {}
    for k, vals in cols.items():
        vals = [v for v in vals if v is not None]
        if vals:
            out[k] = {"mean": round(statistics.fmean(vals), 3), "min": min(vals), "max": max(vals)}
    return out


def grid(bursts: list[int], limits: list[int], probe_ports: bool) -> list[Case]:
    cases = [standard_case(b, n, g) for b in bursts for n in limits for g in ("on", "off")]
    if probe_ports:
        # offloads off on the switch ports only (and on everything): what the qdisc sees
        b, n = max(bursts), min(limits)
        cases.append(Case(b, n, "off", ("s1-eth1", "s1-eth2")))
        cases.append(Case(b, n, "off", ("h1-eth0", "s1-eth1", "s1-eth2", "h2-eth0")))
    return cases


def table(results: dict[str, Any]) -> str:
    head = (f"{'case':<34} {'rcv Mb/s':>15} {'retr':>11} {'Sent pkt':>17} {'Sent MB':>7} "
            f"{'dropped':>11} {'overlim':>8} {'RTT ms':>6} {'seg/skb':>7} {'seg/ent':>7} {'B/ent':>6}")
    lines = [head, "-" * len(head)]
    for key, c in results["cases"].items():
        s = c["summary"]

        def rng(col: str, fmt: str = "{:.0f}", s: dict[str, Any] = s) -> str:
            v = s.get(col)
            if not v:
                return "-"
            return f"{fmt.format(v['mean'])} ({fmt.format(v['min'])}-{fmt.format(v['max'])})"

        def mean(col: str, fmt: str, s: dict[str, Any] = s) -> str:
            v = s.get(col)
            return fmt.format(v["mean"]) if v else "-"

        lines.append(f"{key:<34} {rng('receiver_mbps', '{:.1f}'):>15} {rng('retransmits'):>11} "
                     f"{rng('sent_pkt'):>17} {s['sent_bytes']['mean'] / 1e6:>7.1f} "
                     f"{rng('dropped'):>11} {mean('overlimits', '{:.0f}'):>8} "
                     f"{mean('mean_rtt_ms', '{:.2f}'):>6} {mean('segs_per_skb_sent', '{:.1f}'):>7} "
                     f"{mean('segs_per_entry_out', '{:.1f}'):>7} {mean('bytes_per_entry_out', '{:.0f}'):>6}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="write the JSON results here")
    ap.add_argument("--reps", type=int, default=REPS)
    ap.add_argument("--seconds", type=float, default=SECONDS)
    ap.add_argument("--limits", type=int, nargs="+", default=list(LIMITS))
    ap.add_argument("--bursts", type=int, nargs="+", default=list(BURSTS))
    ap.add_argument("--gso", choices=("on", "off", "both"), default="both")
    ap.add_argument("--probe-ports", action="store_true",
                    help="also run offloads off on the switch ports only, and on every interface")
    args = ap.parse_args(argv)
    why = unavailable()
    if why:
        print(f"kernel_gso_oracle: cannot run: {why}", file=sys.stderr)
        return 2
    cases = [c for c in grid(args.bursts, args.limits, args.probe_ports)
             if args.gso == "both" or c.gso == args.gso]
    results: dict[str, Any] = {
        "environment": environment(),
        "config": {"rate": RATE, "tbf_limit": TBF_LIMIT, "seconds": args.seconds, "reps": args.reps,
                   "tcp_rmem": TCP_RMEM, "tcp_wmem": TCP_WMEM, "cc": "cubic",
                   "iperf3": f"iperf3 -c {RECEIVER_ADDR} -C cubic -t {args.seconds:g} -J"},
        "cases": {},
    }
    for case in cases:
        runs = []
        for rep in range(args.reps):
            r = run_once(case, args.seconds)
            runs.append(r)
            print(f"{case.key} rep {rep + 1}: {r['receiver_bps'] / 1e6:.1f} Mbit/s, "
                  f"retr {r['retransmits']}, Sent {r['pfifo']['packets']} pkt, "
                  f"dropped {r['tbf']['drops']}, seg/entry {r['derived']['segs_per_entry_out']}",
                  file=sys.stderr, flush=True)
        results["cases"][case.key] = {"case": asdict(case), "runs": runs, "summary": summarize(runs)}
    print(table(results))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1, sort_keys=False)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
