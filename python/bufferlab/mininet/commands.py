"""The ``bufferlab mininet`` and ``bufferlab mn`` subcommands (hooked into cli.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

COMMANDS = ("mininet", "mn")


def add_parsers(sub: Any) -> None:
    script = sub.add_parser(
        "mininet",
        help="run a Mininet Python script in simulated time",
        description="Run SCRIPT.py (Mininet's API, imports from bufferlab.mininet or mininet) in its results "
        "folder, results/<script>/, with time.sleep/time.time in simulated time and os.system/subprocess "
        "calls of simulated tools (tc, sysctl, ping, iperf3, ...) run in the root namespace. "
        "See docs/mininet.md.",
    )
    script.add_argument("script", type=Path, metavar="SCRIPT.py")
    script.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    script.add_argument("-o", "--output", type=Path, default=Path("results"),
                        help="results folder (default: ./results)")
    script.add_argument("--seed", type=_seed_arg, default=1, help="the simulation's seed (default 1)")
    script.add_argument("--no-report", action="store_true", help="write the tables but not report.html")
    mn = sub.add_parser(
        "mn",
        help="Mininet's mn: build a topology, run a test or the CLI",
        description="Mininet's mn in simulated time: --topo single,N | linear,N | tree,depth=D,fanout=F | "
        "minimal | a name from --custom; --link tc,bw=..,delay=..,loss=..,max_queue_size=..[,use_tbf]; "
        "--test pingall|pingpair|iperf|iperfudp|none; without --test, the CLI reads stdin.",
    )
    mn.add_argument("--topo", default="minimal")
    mn.add_argument("--link", default="default")
    mn.add_argument("--test")
    mn.add_argument("--custom", type=Path, action="append", default=[], metavar="FILE")
    mn.add_argument("-o", "--output", type=Path, default=Path("results"),
                    help="results folder (default: ./results)")
    mn.add_argument("--real", action="store_true",
                    help="build the network on this machine's Linux kernel in private network namespaces and "
                    "run the real tools (root; results/mn-real; docs/real.md)")


def _seed_arg(text: str) -> int:
    from ..scenario.load import seed_arg

    return seed_arg(text)


def dispatch(args: argparse.Namespace) -> int:
    # imported here: building the parsers (every `bufferlab` call) must not load the simulator
    if args.command == "mininet":
        from .script import run_script

        return run_script(args.script, args.args, args.output, args.seed, report=not args.no_report)
    from .mn import run_mn

    return run_mn(args.topo, args.link, args.test, args.custom, args.output, real=args.real)
