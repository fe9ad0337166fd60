#!/usr/bin/env python3
"""Per-ACK cost of each congestion-control module, against reno's.

    python benches/cc_mainline.py                 # every registered module
    python benches/cc_mainline.py --only reno,vegas --repeat 3

Workload (one process per module, as benches/suite.py runs its workloads):
Lab 14's topology, one iperf3 flow with `-C NAME` for 60 s through
netem 20 ms + tbf 100 Mbit/s with one BDP (250 000 B) of buffer, one packet
record per segment (`gso = false`), so that every ACK runs the module's
hooks. The cost per ACK is the engine's CPU time (the least of `--repeat`
runs, taken round-robin over the modules) divided by the ACKs the
receiver sent (h3-eth0's packets): everything the simulator does per ACK,
the module included. Modules differ in how many packets they keep queued,
which changes the qdisc work a little; the micro-benchmark of the hooks
alone is the ignored Rust test `tcp::cc::bench::per_ack_cost`
(`cargo test --release -p bufferlab-core per_ack_cost -- --ignored --nocapture`).
Target (issue 26): within 1.3x of reno.

    python benches/cc_mainline.py --l4s --only reno,prague

`--l4s`: the same flow on the modern profile with a DualPI2 under the tbf
and h3 accepting Accurate ECN (tcp_ecn = 3), so that prague runs on AccECN
with marks (every ACK carries ACE and the AccECN option) and reno, classic
and Not-ECT, is dropped by PI2; prague's cost against that reno.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from suite import _scenario  # noqa: E402

TARGET = 1.3


def scenario(cc: str, l4s: bool = False) -> str:
    if l4s:
        return _scenario(f"cc-{cc}", [
            "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 100000",
            "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 100mbit burst 50000 limit 250000",
            "admin: tc qdisc add dev s1-eth2 parent 2: handle 3: dualpi2",
            "h3: sysctl -w net.ipv4.tcp_ecn=3",
            "h3: iperf3 -s",
            f"h1: iperf3 -c 10.0.0.3 -t 60 -C {cc}",
        ], 'gso = false\nprofile = "modern"')
    return _scenario(f"cc-{cc}", [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 100000",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 100mbit burst 50000 limit 250000",
        "h3: iperf3 -s",
        f"h1: iperf3 -c 10.0.0.3 -t 60 -C {cc}",
    ], "gso = false")


def child(cc: str, l4s: bool = False) -> dict[str, float]:
    from bufferlab import load_scenario
    from bufferlab.run import engine as engine_mod
    from bufferlab.run.scheduler import Runner

    inside = [0.0]
    run = engine_mod.Engine.run

    def timed(self, *a, **k):  # CPU time: the machine may be shared
        t = time.process_time()
        try:
            return run(self, *a, **k)
        finally:
            inside[0] += time.process_time() - t

    engine_mod.Engine.run = timed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"cc-{cc}.toml"
        path.write_text(scenario(cc, l4s))
        runner = Runner(load_scenario(path), Path(d) / "results", progress=False)
        runner.check()
        t0 = time.process_time()
        summary = runner.run()
        run_cpu = time.process_time() - t0
    ifs = summary["interfaces"]
    acks = next(v["tx_packets"] for k, v in ifs.items() if k.startswith("h3"))
    return {"engine_s": inside[0], "run_s": run_cpu, "acks": acks, "events": summary["events"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated module names (default: all registered)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per module; medians (default 3)")
    ap.add_argument("--l4s", action="store_true", help="modern profile, DualPI2, AccECN at the receiver")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.l4s)))
        return 0
    from bufferlab import registry

    names = args.only.split(",") if args.only else list(registry.CONGESTION_CONTROLS)
    if "reno" not in names:
        names.insert(0, "reno")
    runs: dict[str, list[dict[str, float]]] = {cc: [] for cc in names}
    for i in range(args.repeat):
        for cc in names:
            print(f"running {cc} ({i + 1}/{args.repeat}) ...", file=sys.stderr, flush=True)
            cmd = [sys.executable, __file__, "--child", cc] + (["--l4s"] if args.l4s else [])
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"{cc}: failed:\n{out.stderr}")
            runs[cc].append(json.loads(out.stdout.strip().splitlines()[-1]))
    rows = {}
    for cc in names:
        r = dict(runs[cc][0])
        r["engine_s"] = min(x["engine_s"] for x in runs[cc])
        r["ns_per_ack"] = r["engine_s"] / r["acks"] * 1e9
        rows[cc] = r
    base = rows["reno"]["ns_per_ack"]
    print("| module | ACKs | engine CPU s | ns per ACK | vs reno |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for cc, r in rows.items():
        ratio = r["ns_per_ack"] / base
        worst = max(worst, ratio)
        print(f"| {cc} | {r['acks']} | {r['engine_s']:.3f} | {r['ns_per_ack']:.0f} | {ratio:.2f} |")
    print(f"\nworst ratio {worst:.2f} (target <= {TARGET})")
    return 0 if worst <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
