#!/usr/bin/env python3
"""ns-3's dctcp-example in bufferlab, timed against ns-3 (issue 26, "Targets").

    python benches/dctcp_example.py                  # whole `bufferlab run`, 3 times
    python benches/dctcp_example.py --repeat 1 --breakdown
    python benches/dctcp_example.py --gso            # the same with TSO/GSO aggregates

The workload is scenarios/dctcp-example.toml as shipped: 5 simulated seconds,
40 DCTCP flows, 63 nodes. The reference is ns-3 3.44's examples/tcp/dctcp-example
on the development machine: 210 s in `Simulator::Run()` alone (98 M events).
The target is the whole `bufferlab run` process (start-up, parsing, engine,
outputs, tables, report) at least 100 times faster: 2.1 s or less.

Printed per run: wall time of the process and its CPU time (user + system; on
a machine shared with other jobs the CPU time is the steadier figure), the
engine's events and events per second of wall time, the packets the engine
created per second, and the ratio of ns-3's 210 s to each. `--breakdown` runs
the scenario once more inside a child process with the engine's `run` timed
(as benches/suite.py does) and prints where the wall time went: the engine,
and everything else (start-up, commands, plots, tables, report). `--gso` runs a
copy with `[sim] gso = true` (aggregates of up to 64 KB leave the senders as
on a Mininet VM): fewer events, other numbers (docs/models.md "ns-3's
dctcp-example").

The processes find their modules' bytecode cached, as an installed package has it:
`PYTHONPYCACHEPREFIX` points to a temporary folder that an untimed short run fills
first (a machine with `PYTHONDONTWRITEBYTECODE` set otherwise compiles bufferlab's
150 modules again in every process, about 0.2 s). `--compile-each-run` keeps the
environment as it is.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCENARIO = HERE.parent / "scenarios" / "dctcp-example.toml"
NS3_RUN_S = 210.0  # ns-3 3.44 Simulator::Run(), this machine
NS3_EVENTS = 98e6
TARGET_RATIO = 100.0


def scenario_file(gso: bool, tmp: Path) -> Path:
    if not gso:
        return SCENARIO
    text = SCENARIO.read_text()
    assert "\ngso = false\n" in text
    path = tmp / "dctcp-example-gso.toml"
    path.write_text(text.replace("\ngso = false\n", "\ngso = true\n"))
    return path


def whole_process(path: Path, out: Path) -> dict:
    """One `bufferlab run` as a user types it: wall and CPU of the process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from bufferlab.cli import main; main()",
                           "run", str(path), "-q", "-o", str(out)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"bufferlab run failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = json.loads(next(out.glob("*/summary.json")).read_text())
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "events": summary["events"],
        "packets": summary["segments"]["created"],
        "hops": sum(i["tx_packets"] for i in summary["interfaces"].values()),
        "simulated_s": summary["simulated_s"],
    }


def child(path: str) -> None:
    """Run the scenario in this process with the engine's time measured."""
    from bufferlab import load_scenario
    from bufferlab.run import engine as engine_mod
    from bufferlab.run.scheduler import Runner

    inside = [0.0, 0.0]  # wall, CPU
    run = engine_mod.Engine.run

    def timed(self, *a, **k):
        t, c = time.perf_counter(), time.process_time()
        try:
            return run(self, *a, **k)
        finally:
            inside[0] += time.perf_counter() - t
            inside[1] += time.process_time() - c

    engine_mod.Engine.run = timed  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory() as d:
        t0, c0 = time.perf_counter(), time.process_time()
        runner = Runner(load_scenario(Path(path)), Path(d) / "results", progress=False)
        runner.check()
        summary = runner.run()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "engine_s": inside[0], "engine_cpu_s": inside[1],
                      "events": summary["events"]}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gso", action="store_true", help="run with [sim] gso = true")
    ap.add_argument("--breakdown", action="store_true", help="also time the engine inside the run")
    ap.add_argument("--compile-each-run", action="store_true",
                    help="no bytecode cache prepared (the environment as it is)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    env_path = str(HERE.parent / "python")
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = env_path + (os.pathsep + before if before else "")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        path = scenario_file(args.gso, tmp)
        if not args.compile_each_run:
            os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
            os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
            short = ["--set", "warmup_s=0.1", "--set", "window_s=0.1", "--set", "stop_s=0.2"]
            warm = subprocess.run([sys.executable, "-c", "from bufferlab.cli import main; main()", "run",
                                   str(path), "-q", "-o", str(tmp / "warm"), *short],
                                  capture_output=True, text=True)
            if warm.returncode != 0:
                raise SystemExit(f"the warm-up run failed ({warm.returncode}):\n{warm.stderr[-2000:]}")
        rows = []
        for k in range(args.repeat):
            r = whole_process(path, tmp / f"run{k}")
            rows.append(r)
            print(f"run {k + 1}: wall {r['wall_s']:.2f} s, cpu {r['cpu_s']:.2f} s, "
                  f"{r['events'] / 1e6:.1f} M events ({r['events'] / r['wall_s'] / 1e6:.2f} M/s of wall), "
                  f"{r['packets'] / 1e6:.2f} M packets ({r['packets'] / r['wall_s'] / 1e6:.2f} M/s), "
                  f"{r['hops'] / 1e6:.1f} M packet-hops; ratio to ns-3's {NS3_RUN_S:.0f} s: "
                  f"{NS3_RUN_S / r['wall_s']:.0f}x wall, {NS3_RUN_S / r['cpu_s']:.0f}x cpu")
        best_wall = min(r["wall_s"] for r in rows)
        best_cpu = min(r["cpu_s"] for r in rows)
        print(f"best of {len(rows)}: wall {best_wall:.2f} s ({NS3_RUN_S / best_wall:.0f}x), "
              f"cpu {best_cpu:.2f} s ({NS3_RUN_S / best_cpu:.0f}x); events {rows[0]['events'] / 1e6:.1f} M "
              f"vs ns-3's {NS3_EVENTS / 1e6:.0f} M; target {TARGET_RATIO:.0f}x = "
              f"{NS3_RUN_S / TARGET_RATIO:.1f} s: "
              f"{'met' if best_wall <= NS3_RUN_S / TARGET_RATIO else 'NOT met'}")
        if args.breakdown:
            out = subprocess.run([sys.executable, __file__, "--child", str(path)], capture_output=True,
                                 text=True)
            if out.returncode != 0:
                raise SystemExit(f"breakdown run failed:\n{out.stderr[-2000:]}")
            b = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"breakdown (one run in a child, after imports): Runner.run {b['wall_s']:.2f} s wall / "
                  f"{b['cpu_s']:.2f} s cpu; engine {b['engine_s']:.2f} s wall / "
                  f"{b['engine_cpu_s']:.2f} s cpu "
                  f"({b['events'] / b['engine_cpu_s'] / 1e6:.2f} M events per cpu second, "
                  f"{b['engine_cpu_s'] / b['events'] * 1e9:.0f} ns an event); everything else "
                  f"{b['cpu_s'] - b['engine_cpu_s']:.2f} s cpu (commands, plot_q.sh plots, queue traces, "
                  "tables, report)")


if __name__ == "__main__":
    main()
