#!/usr/bin/env python3
"""Benchmarks: 90 simulated seconds at 1 Gbit/s on Lab 14's topology.

Workloads (h1,h2 -- s1 -- s2 -- h3; `netem delay 20ms` root of s1-eth2 with a
`tbf rate 1gbit burst 500000` child):
- `udp`: `cbr -r 950M -l 1448` from h1 to a sink on h3 (977.5 Mbit/s of
  frames, just under the shaped rate, so every packet crosses three hops);
  target (issue 3): 5 M packet-hops per wall second on one core;
- `lab14`: Lab 14's 10·BDP part from the handout's lines (netem's default
  limit), `iperf3 -c 10.0.0.3 -t 90` (CUBIC) and `ping -c 90` through a
  25 MB tbf buffer; target (issue 10): 90 simulated seconds in at most 1 s
  of wall time with GSO aggregates (the default, as on a Mininet VM);
  `--gso off` runs it with one packet record per segment (and then needs
  netem `limit 100000`, which the workload adds, to carry 1 Gbit/s × 20 ms).
- `flows`: `iperf3 -P 32` through the same netem + tbf with a flow-queueing
  leaf under the tbf (`--leaf fq_codel|fq|sfq|fq_pie|cake`), the cost of a
  qdisc that keeps per-flow state; reference: the same run with `--leaf pfifo`.

Prints wall time, the simulated/wall ratio, data packets per wall second,
packet-hops per wall second (one hop = one packet handed to a wire), events
per second, and the ratio to the target. Not a test: run it by hand and
record the numbers in benches/RESULTS.md.

    python benches/bench.py [udp|lab14] [--seconds 90] [--repeat 3] [--observe none|capture|trace|both]
                            [--gso on|off]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bufferlab import load_scenario
from bufferlab.run.scheduler import Runner

TARGET_HOPS_PER_S = 5e6
TARGET_LAB14_WALL_S = 1.0

TOPOLOGY = """[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""

UDP = """
name = "bench: CBR UDP through netem + tbf"
seed = 1
{topology}[[part]]
name = "run"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 10000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2621440",
  "h3: sink -u",
  "h1: cbr -c 10.0.0.3 -u -r 950M -l 1448 -t {seconds}",
]
"""

LAB14 = """
name = "bench: Lab 14 10xBDP"
seed = 1
{topology}[[part]]
name = "run"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms{netem_limit}",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 26214400",
  "h1: sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'",
  "h1: sysctl -w net.ipv4.tcp_wmem='10240 87380 52428800'",
  "h3: sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'",
  "h3: sysctl -w net.ipv4.tcp_wmem='10240 87380 52428800'",
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -t {seconds}",
  "h2: ping 10.0.0.3 -c {seconds}",
]
"""
FLOWS = """
name = "bench: 32 flows through a flow-queueing leaf"
seed = 1
{topology}[[part]]
name = "run"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms{netem_limit}",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 26214400",
  "admin: tc qdisc add dev s1-eth2 parent 2: handle 3: {leaf}",
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -P 32 -t {seconds}",
]
"""
WORKLOADS = {"udp": UDP, "lab14": LAB14, "flows": FLOWS}
#: --observe: packet capture and/or exact queue trace of the bottleneck (s1-eth2)
OBSERVE = {
    "none": "",
    "capture": '[capture]\ninterfaces = ["s1-eth2"]\nsnaplen = 128\n',
    "trace": '[trace]\nqueues = ["s1-eth2"]\n',
}
OBSERVE["both"] = OBSERVE["capture"] + OBSERVE["trace"]


def once(workload: str, seconds: int, observe: str = "none", gso: bool = True,
         leaf: str = "fq_codel") -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "bench.toml"
        sim = "" if gso else "[sim]\ngso = false\n"
        text = WORKLOADS[workload].format(
            seconds=seconds, topology=sim + TOPOLOGY + OBSERVE[observe],
            netem_limit="" if gso else " limit 100000", leaf=leaf,
        )
        path.write_text(text)
        runner = Runner(load_scenario(path), Path(d) / "results", progress=False)
        runner.check()
        t0 = time.perf_counter()
        summary = runner.run()
        wall = time.perf_counter() - t0
    hops = sum(i["tx_packets"] for i in summary["interfaces"].values())
    data = max(f["sent_packets"] for f in summary["flows"])
    return {
        "wall_s": wall,
        "simulated_s": summary["simulated_s"],
        "data_packets": data,
        "records": summary["packets"]["created"],
        "hops": hops,
        "events": summary["events"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", nargs="?", choices=sorted(WORKLOADS), default="udp")
    ap.add_argument("--seconds", type=int, default=90, help="simulated seconds (default 90)")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the median is reported (default 3)")
    ap.add_argument("--observe", choices=sorted(OBSERVE), default="none",
                    help="also capture (pcap, snaplen 128) and/or trace the bottleneck queue")
    ap.add_argument("--gso", choices=("on", "off"), default="on",
                    help="TSO/GSO aggregates (on, as on a Mininet VM) or one record per segment")
    ap.add_argument("--leaf", default="fq_codel", help="the flows workload's leaf qdisc (default fq_codel)")
    args = ap.parse_args()
    gso = args.gso == "on"
    runs = [once(args.workload, args.seconds, args.observe, gso, args.leaf) for _ in range(args.repeat)]
    wall = statistics.median(r["wall_s"] for r in runs)
    r = runs[0]
    hops_per_s = r["hops"] / wall
    print(f"simulated            {r['simulated_s']:.1f} s")
    walls = ", ".join(f"{x['wall_s']:.3f}" for x in runs)
    print(f"wall (median of {args.repeat})   {wall:.3f} s   ({walls})")
    print(f"simulated/wall       {r['simulated_s'] / wall:.1f}x")
    print(f"data segments        {r['data_packets']:,}  ({r['data_packets'] / wall / 1e6:.2f} M/s)")
    print(f"packet records       {r['records']:,}  ({r['records'] / wall / 1e6:.2f} M/s)")
    print(f"packet-hops          {r['hops']:,}  ({hops_per_s / 1e6:.2f} M/s)")
    print(f"events               {r['events']:,}  ({r['events'] / wall / 1e6:.2f} M/s)")
    if args.workload == "udp":
        ratio = hops_per_s / TARGET_HOPS_PER_S
        print(f"ratio to target      {ratio:.2f} (target {TARGET_HOPS_PER_S / 1e6:.0f} M hops/s)")
    elif args.workload == "lab14":
        ratio = TARGET_LAB14_WALL_S / wall
        print(f"ratio to target      {ratio:.2f} (target {TARGET_LAB14_WALL_S:.0f} s wall for 90 s)")
    else:
        base = statistics.median(once("flows", args.seconds, args.observe, gso, "pfifo")["wall_s"]
                                 for _ in range(args.repeat))
        print(f"ratio to pfifo       {wall / base:.2f} ({base:.3f} s wall with a pfifo leaf)")


if __name__ == "__main__":
    main()
