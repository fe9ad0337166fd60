#!/usr/bin/env python3
"""The benchmark suite: every workload in its own process, one table, compared
with the reference figures recorded in benches/RESULTS.md.

    python benches/suite.py                      # run all, compare with the reference
    python benches/suite.py --only bulk-1,bulk-10000
    python benches/suite.py --record             # also write this run as the new reference

Workloads (the topology of Lab 14: h1, h2 -- s1 -- s2 -- h3, bottleneck s1-eth2):
- ``lab14``: Lab 14's 10·BDP part from the handout's lines (iperf3 CUBIC 90 s +
  ping, 1 Gbit/s, 20 ms), TSO/GSO aggregates on, as on a Mininet VM;
- ``lab14-segments``: the same with one packet record per segment (``gso = false``);
- ``lab14-segments-no-host-time``: the same without the hosts' processing time
  (``host_*`` = 0), the model issue 13's "3.5 s" was measured on: three
  events per segment fewer, the same qdisc and TCP work;
- ``udp``: CBR 950 Mbit/s through netem + tbf, 90 s;
- ``bulk-N`` (N = 1, 100, 1000, 10000): ``bulk -P N``, N concurrent TCP flows
  into one sink through 1 Gbit/s, 20 ms, a 1·BDP tbf buffer, 10 s, one record per
  segment (the per-packet cost of the flows, not of aggregates);
- ``flows-70``: benches/scenarios/flows-70.toml, a web-like flow workload at 70 %
  of 1 Gbit/s (1 500 new TCP connections per simulated second);
- ``long-360s`` / ``long-3600s``: iperf3 TCP and ping through 100 Mbit/s for
  6 and 60 simulated minutes: memory must not grow with the run's length;
- ``aqm-fq_codel``, ``aqm-dualpi2``, ``aqm-prio``, ``aqm-fq``, ``aqm-sfq``, ``aqm-fq_pie``,
  ``aqm-cake``: 8 TCP flows through a 1 Gbit/s tbf with
  the kind as its child (issue 25's target: a new kind's engine cost per packet-hop
  within 1.5x of fq_codel's on the same workload).
- ``cc-reno`` / ``cc-dctcp``: the per-ACK cost of a congestion control (issue 26:
  within 1.3x of Reno's): ``bulk -P 10`` for 10 s through 1 Gbit/s, 1 ms, RED as a
  step marker at K = 20 packets with ``ecn``; Reno with classic ECN (tcp_ecn=1)
  against DCTCP at both ends, one record per segment.
- ``tsq-sender``: TCP Small Queues' cost (issue 27): iperf3 for 30 s through a
  1 Gbit/s tbf on the sender's own interface, 20 ms of netem at the switch, one
  record per segment: every packet the tbf releases calls back into its socket.

Columns: simulated seconds, wall (whole run: parsing, engine, outputs), engine
wall (inside the simulator), events per wall second, packet-hops (packets handed
to a wire) per wall second, peak RSS of the process and peak engine heap
(counted by the extension's allocator, Python objects excluded). Derived lines:
engine wall per million events of ``bulk-10000`` against ``bulk-1`` (target
≤ 1.5×), engine heap per flow (target ≤ 10 KB), and the long run's growth.
A row more than 20 % slower than its reference is flagged; the exit status is 1
if any is. Timings are medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS_MD = HERE / "RESULTS.md"
START, END = "<!-- suite-reference:start -->", "<!-- suite-reference:end -->"
REGRESSION = 1.20

TOPOLOGY = """[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""

BUFFERS = [f"{h}: sysctl -w net.ipv4.tcp_{m}='10240 87380 52428800'"
           for h in ("h1", "h3") for m in ("rmem", "wmem")]


def _scenario(name: str, cmds: list[str], sim: str = "") -> str:
    lines = ",\n".join(f"  {json.dumps(c)}" for c in cmds)
    head = f"[sim]\n{sim}\n" if sim else ""
    return f'name = "{name}"\nseed = 1\n{head}{TOPOLOGY}[[part]]\nname = "run"\ncmds = [\n{lines}\n]\n'


def _lab14(gso: bool, host_time: bool = True) -> str:
    netem_limit = "" if gso else " limit 100000"
    sim = "" if gso else "gso = false"
    if not host_time:
        sim += "\nhost_packet_ns = 0\nhost_byte_ps = 0\nhost_wakeup_ns = 0"
    return _scenario("lab14", [
        f"admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms{netem_limit}",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 26214400",
        *BUFFERS,
        "h3: iperf3 -s",
        "h1: iperf3 -c 10.0.0.3 -t 90",
        "h2: ping 10.0.0.3 -c 90",
    ], sim)


def _udp() -> str:
    return _scenario("udp", [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 10000",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2621440",
        "h3: sink -u",
        "h1: cbr -c 10.0.0.3 -u -r 950M -l 1448 -t 90",
    ])


def _bulk(n: int) -> str:
    return _scenario(f"bulk-{n}", [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 100000",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2500000",
        "h3: sink",
        f"h1: bulk -c 10.0.0.3 -t 10 -P {n}",
    ], "gso = false\nstop_at = \"120s\"")


def _long(seconds: int) -> str:
    return _scenario(f"long-{seconds}s", [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 100mbit burst 50000 limit 2500000",
        *BUFFERS,
        "h3: iperf3 -s",
        f"h1: iperf3 -c 10.0.0.3 -t {seconds}",
        f"h2: ping 10.0.0.3 -c {seconds}",
    ], f'stop_at = "{seconds + 60}s"')


def _aqm(kind: str) -> str:
    """``aqm-KIND``: the per-packet cost of a queueing discipline against fq_codel's on the
    same workload (issue 25: within 1.5x): 8 CUBIC flows (``bulk -P 8``) and a ping through
    a 1 Gbit/s tbf whose child is the AQM, 20 ms, one record per segment, 20 s."""
    return _scenario(f"aqm-{kind}", [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 100000",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2500000",
        f"admin: tc qdisc add dev s1-eth2 parent 2: handle 3: {kind}",
        *BUFFERS,
        "h3: sink",
        "h1: bulk -c 10.0.0.3 -t 20 -P 8",
        "h2: ping 10.0.0.3 -c 20",
    ], "gso = false\nstop_at = \"60s\"")


def _tsq() -> str:
    """``tsq-sender``: TCP Small Queues at work (issue 27): a 1 Gbit/s tbf on the sender's own
    interface (a TCLink's shaping) holds a few skbs per flow, each released packet a call back
    into its socket; 20 ms of netem at the switch, one record per segment, 30 s."""
    return _scenario("tsq-sender", [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 100000",
        "h1: tc qdisc add dev h1-eth0 root tbf rate 1gbit burst 500000 limit 26214400",
        *BUFFERS,
        "h3: iperf3 -s",
        "h1: iperf3 -c 10.0.0.3 -t 30",
    ], "gso = false\nstop_at = \"90s\"")


AQMS = ("fq_codel", "dualpi2", "prio", "fq", "sfq", "fq_pie", "cake")

def _cc(cc: str) -> str:
    k = 20
    sysctls = (
        [f"{h}: sysctl -w net.ipv4.tcp_congestion_control=dctcp" for h in ("h1", "h3")]
        if cc == "dctcp"
        else ["h1: sysctl -w net.ipv4.tcp_congestion_control=reno net.ipv4.tcp_ecn=1"]
    )
    return _scenario(f"cc-{cc}", [
        "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 1ms limit 100000",
        "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2500000",
        f"admin: tc qdisc add dev s1-eth2 parent 2: handle 3: red limit 2500000 min {k * 1500} "
        f"max {k * 1500 + 1500} avpkt 1500 burst {k} probability 1.0 bandwidth 1gbit ecn",
        *sysctls,
        "h3: sink",
        "h1: bulk -c 10.0.0.3 -t 10 -P 10",
    ], "gso = false\nstop_at = \"60s\"")


WORKLOADS = {
    "lab14": lambda: _lab14(True),
    "lab14-segments": lambda: _lab14(False),
    "lab14-segments-no-host-time": lambda: _lab14(False, host_time=False),
    "udp": _udp,
    **{f"bulk-{n}": (lambda n=n: _bulk(n)) for n in (1, 100, 1000, 10000)},
    "flows-70": lambda: (HERE / "scenarios/flows-70.toml").read_text(),
    "long-360s": lambda: _long(360),
    "long-3600s": lambda: _long(3600),
    **{f"aqm-{k}": (lambda k=k: _aqm(k)) for k in AQMS},
    "tsq-sender": _tsq,
    "cc-reno": lambda: _cc("reno"),
    "cc-dctcp": lambda: _cc("dctcp"),
}
FLOWS = {name: int(name.split("-")[1]) for name in WORKLOADS if name.startswith("bulk-")}


def child(name: str) -> dict[str, float]:
    """Run one workload in this process and return its figures."""
    from bufferlab import _core, load_scenario

    try:
        from bufferlab.run import engine as engine_mod
        from bufferlab.run.scheduler import Runner
    except ImportError:  # the layout before session 4 (benches/ab.py runs older commits)
        from bufferlab import engine as engine_mod  # type: ignore[no-redef]
        from bufferlab.runner import Runner  # type: ignore[no-redef]

    inside = [0.0]
    run = engine_mod.Engine.run

    def timed(self, *a, **k):  # time spent inside the simulator
        t = time.perf_counter()
        try:
            return run(self, *a, **k)
        finally:
            inside[0] += time.perf_counter() - t

    engine_mod.Engine.run = timed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as d:
        # beside the shipped scenarios: flows-70 names its size CDF relative to itself
        path = HERE / "scenarios" / f".suite-{name}.toml"
        path.write_text(WORKLOADS[name]())
        runner = Runner(load_scenario(path), Path(d) / "results", progress=False)
        runner.check()
        t0 = time.perf_counter()
        summary = runner.run()
        wall = time.perf_counter() - t0
        # (no allocator statistics before session 5)
        heap_live, heap_peak = _core.heap_stats() if hasattr(_core, "heap_stats") else (0, 0)
        path.unlink()
    return {
        "simulated_s": summary["simulated_s"],
        "wall_s": wall,
        "engine_s": inside[0],
        "events": summary["events"],
        "hops": sum(i["tx_packets"] for i in summary["interfaces"].values()),
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "heap_live_mb": heap_live / 1e6,
        "heap_peak_mb": heap_peak / 1e6,
    }


def measure(name: str, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"{name}: the workload failed:\n{out.stderr}")
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    row = dict(runs[0])
    for key in ("wall_s", "engine_s"):
        row[key] = statistics.median(r[key] for r in runs)
    row["events_per_s"] = row["events"] / row["wall_s"]
    row["hops_per_s"] = row["hops"] / row["wall_s"]
    return row


COLUMNS = [  # (key, header, format)
    ("simulated_s", "simulated s", "{:.1f}"),
    ("wall_s", "wall s", "{:.3f}"),
    ("engine_s", "engine s", "{:.3f}"),
    ("events_per_s", "events/s", "{:.3g}"),
    ("hops_per_s", "packet-hops/s", "{:.3g}"),
    ("rss_mb", "peak RSS MB", "{:.0f}"),
    ("heap_peak_mb", "engine heap MB", "{:.1f}"),
]


def markdown(rows: dict[str, dict[str, float]]) -> str:
    out = ["| workload | " + " | ".join(h for _, h, _ in COLUMNS) + " |",
           "|---|" + "---|" * len(COLUMNS)]
    for name, r in rows.items():
        out.append(f"| {name} | " + " | ".join(f.format(r[k]) for k, _, f in COLUMNS) + " |")
    return "\n".join(out)


def reference() -> dict[str, dict[str, float]]:
    """The recorded reference rows (benches/RESULTS.md, between the markers)."""
    text = RESULTS_MD.read_text()
    if START not in text:
        return {}
    table = text.split(START, 1)[1].split(END, 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != len(COLUMNS) + 1 or cells[0] in ("workload", "---") or set(cells[0]) == {"-"}:
            continue
        rows[cells[0]] = {k: float(v) for (k, _, _), v in zip(COLUMNS, cells[1:], strict=True)}
    return rows


def record(rows: dict[str, dict[str, float]]) -> None:
    text = RESULTS_MD.read_text()
    block = f"{START}\n{markdown(rows)}\n{END}"
    if START in text:
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _m: block, text, flags=re.S)
    else:
        text += f"\n## Suite reference (`python benches/suite.py --record`)\n\n{block}\n"
    RESULTS_MD.write_text(text)


def derived(rows: dict[str, dict[str, float]]) -> list[str]:
    lines = []
    if {"bulk-1", "bulk-10000"} <= rows.keys():
        per = {k: rows[k]["engine_s"] / rows[k]["events"] * 1e6 for k in ("bulk-1", "bulk-10000")}
        ratio = per["bulk-10000"] / per["bulk-1"]
        lines.append(f"engine wall per million events: 1 flow {per['bulk-1']:.3f} s, 10 000 flows "
                     f"{per['bulk-10000']:.3f} s, ratio {ratio:.2f} (target <= 1.5)")
    if "lab14-segments" in rows:
        seg = rows["lab14-segments"]
        line = (f"lab14-segments: engine {seg['engine_s']:.2f} s for {seg['events'] / 1e6:.1f} M events "
                "(target <= 2.5 s, set before the host-time model)")
        if "lab14-segments-no-host-time" in rows:
            bare = rows["lab14-segments-no-host-time"]
            line += f"; without host time {bare['engine_s']:.2f} s for {bare['events'] / 1e6:.1f} M events"
        lines.append(line)
    flows = [k for k in FLOWS if k in rows and FLOWS[k] > 1]
    if "bulk-1" in rows and flows:
        base = rows["bulk-1"]["heap_live_mb"]
        for k in flows:
            per_flow = (rows[k]["heap_live_mb"] - base) * 1e6 / (FLOWS[k] - 1)
            lines.append(f"engine heap per flow ({k}): {per_flow / 1e3:.1f} KB (target <= 10 KB; "
                         "both endpoints, the applications, their results)")
    if "aqm-fq_codel" in rows:
        base = rows["aqm-fq_codel"]
        for k in AQMS[1:]:
            if f"aqm-{k}" in rows:
                r = rows[f"aqm-{k}"]
                per, per0 = r["engine_s"] / r["hops"] * 1e9, base["engine_s"] / base["hops"] * 1e9
                lines.append(f"engine ns per packet-hop, {k} vs fq_codel: {per:.0f} vs {per0:.0f}, "
                             f"ratio {per / per0:.2f} (target <= 1.5)")
    if {"cc-reno", "cc-dctcp"} <= rows.keys():
        per = {k: rows[k]["engine_s"] / rows[k]["events"] * 1e6 for k in ("cc-reno", "cc-dctcp")}
        lines.append(f"engine wall per million events: reno {per['cc-reno']:.3f} s, dctcp "
                     f"{per['cc-dctcp']:.3f} s, ratio {per['cc-dctcp'] / per['cc-reno']:.2f} (target <= 1.3)")
        hop = {k: rows[k]["engine_s"] / rows[k]["hops"] * 1e9 for k in ("cc-reno", "cc-dctcp")}
        lines.append(f"engine ns per packet-hop: reno {hop['cc-reno']:.0f}, dctcp {hop['cc-dctcp']:.0f}, "
                     f"ratio {hop['cc-dctcp'] / hop['cc-reno']:.2f}")
    if {"long-360s", "long-3600s"} <= rows.keys():
        a, b = rows["long-360s"], rows["long-3600s"]
        lines.append(f"long run, 10x longer: engine heap peak {a['heap_peak_mb']:.1f} -> "
                     f"{b['heap_peak_mb']:.1f} MB, peak RSS {a['rss_mb']:.0f} -> {b['rss_mb']:.0f} MB")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="comma-separated workloads (default: all): " + ", ".join(WORKLOADS))
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per workload; timings are medians (default 1)")
    ap.add_argument("--record", action="store_true",
                    help="write this run as the reference in benches/RESULTS.md")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return 0
    names = args.only.split(",") if args.only else list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")
    rows = {}
    for name in names:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows[name] = measure(name, args.repeat)
    print(markdown(rows))
    print()
    for line in derived(rows):
        print(line)
    ref = reference()
    slower = []
    for name, r in rows.items():
        if name in ref:
            ratio = r["wall_s"] / ref[name]["wall_s"]
            flag = "  REGRESSION (> 20 % slower)" if ratio > REGRESSION else ""
            print(f"{name}: wall {r['wall_s']:.3f} s vs reference {ref[name]['wall_s']:.3f} s "
                  f"({ratio:.2f}x){flag}")
            if flag:
                slower.append(name)
        else:
            print(f"{name}: no reference recorded")
    if args.record:
        record({**ref, **rows})
        print(f"reference written to {RESULTS_MD.relative_to(HERE.parent)}")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
