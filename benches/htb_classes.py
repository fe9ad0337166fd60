#!/usr/bin/env python3
"""HTB scaling benchmark (issue 30): what a scenario with N htb classes costs.

For each N (default 250, 1000, 4000) it writes a scenario whose admin terminal
builds an htb tree on s1-eth2 — a parent class 1:1 of 100 Mbit/s and N − 1 leaf
classes 1:2 … under it, each with its own u32 filter on a destination port — and
then runs a 2 s iperf3 TCP test and three pings through it (port 5201 is filtered
into class 1:2, so the test crosses one class among N). It times two whole
processes, as a user runs them:

- ``bufferlab check SCENARIO`` (parse and validate every line),
- ``bufferlab run -q --no-report SCENARIO`` (every tc line through the engine, then
  the traffic),

and prints the wall times, the CPU time of the run (user + system of the child, less
sensitive to other jobs on the machine) and its ratio to the run's CPU time before
classes and filters became engine operations (``BEFORE``: the tree at commit 08a2c6c
with the engine of d228206, which read the whole tree back for every line; 4 000 classes
were not measured then, about an hour). ``--pythonpath DIR`` times another source tree
(with its compiled ``_core*.so``). Target: 4 000 classes run in ≤ 5 s. Not a test: run
it by hand and record the numbers in benches/RESULTS.md.

    python benches/htb_classes.py [--classes 250 1000 4000] [--runs 3] [--pythonpath DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from startup import time_call  # noqa: E402

#: CPU seconds of ``run`` before the change, by number of classes (one call each, 2026-11-29)
BEFORE: dict[int, float] = {250: 4.01, 1000: 72.3, 2000: 495.7}

#: the run's target for 4 000 classes (issue 30)
TARGET_S = 5.0


def scenario(n: int) -> str:
    """N htb classes (1:1 and N − 1 leaves under it), a u32 filter per leaf, traffic."""
    cmds = [
        "admin: tc qdisc add dev s1-eth2 root handle 1: htb default 2",
        "admin: tc class add dev s1-eth2 parent 1: classid 1:1 htb rate 100mbit",
    ]
    for i in range(2, n + 1):
        cmds.append(f"admin: tc class add dev s1-eth2 parent 1:1 classid 1:{i:x} htb rate 1mbit ceil 100mbit")
        cmds.append(
            f"admin: tc filter add dev s1-eth2 parent 1: protocol ip prio 1 u32 "
            f"match ip dport {5199 + i} 0xffff flowid 1:{i:x}"
        )
    cmds += [
        "h2: iperf3 -s -D",
        "h1: ping -c 3 -i 0.2 10.0.0.2",
        "h1: iperf3 -c 10.0.0.2 -t 2 > tcp.txt",
        "admin: tc -s class show dev s1-eth2 > classes.txt",
    ]
    lines = ",\n".join(f'  "{c}"' for c in cmds)
    return (
        f'name = "htb-{n}"\nseed = 1\n\n[topology]\nhosts = ["h1", "h2"]\nswitches = ["s1"]\n'
        f'links = [["h1", "s1"], ["s1", "h2"]]\n\n[[part]]\nname = "classes"\ncmds = [\n{lines},\n]\n'
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--classes", type=int, nargs="+", default=[250, 1000, 4000], help="values of N")
    ap.add_argument("--runs", type=int, default=3, help="calls of each command (median; default 3)")
    ap.add_argument("--pythonpath", metavar="DIR", help="run python -m bufferlab.cli from this source tree")
    a = ap.parse_args()
    cmd = [sys.executable, "-m", "bufferlab.cli"]
    env = dict(os.environ)
    if a.pythonpath:
        env["PYTHONPATH"] = str(Path(a.pythonpath).resolve())
    print(f"{' '.join(cmd)}; {a.runs} calls each; load average before: {os.getloadavg()[0]:.2f}")
    print(f"{'classes':>7} {'check':>8} {'run':>8} {'run cpu':>8} {'cpu before':>10} {'ratio':>7}")
    with tempfile.TemporaryDirectory(prefix="bufferlab-htb-") as tmp:
        work = Path(tmp)
        # the bytecode cache on, as for an installed package (startup.py)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        for n in a.classes:
            path = work / f"htb-{n}.toml"
            path.write_text(scenario(n), encoding="utf-8")
            run_argv = [*cmd, "run", "-q", "--no-report", "-o", str(work / "results"), str(path)]
            check = [time_call([*cmd, "check", str(path)], env, work) for _ in range(a.runs)]
            run = [time_call(run_argv, env, work) for _ in range(a.runs)]
            check_s = statistics.median(w for w, _ in check)
            run_s = statistics.median(w for w, _ in run)
            cpu_s = statistics.median(c for _, c in run)
            before = BEFORE.get(n)
            ratio = f"{before / cpu_s:6.0f}×" if before else "      —"
            before_s = f"{before:9.1f}s" if before else "         —"
            print(f"{n:7d} {check_s:7.2f}s {run_s:7.2f}s {cpu_s:7.2f}s {before_s} {ratio}")
    print(f"load average after: {os.getloadavg()[0]:.2f}; target: {TARGET_S:.0f} s for 4000 classes; "
          "ratio = run CPU before / run CPU now")
    return 0


if __name__ == "__main__":
    sys.exit(main())
