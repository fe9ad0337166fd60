"""The ``bufferlab`` command: run, check.

Every user mistake ends with a message naming the place and exit status 2;
never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .errors import BufferlabError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bufferlab",
        description="Run network lab handouts (tc, sysctl, iperf3, ping, plot scripts) in a fast, "
        "deterministic packet-level simulation.",
    )
    p.add_argument("--version", action="version", version=f"bufferlab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="run a scenario and write its results",
        description="Run every part of SCENARIO and write results/<scenario>/...",
    )
    run.add_argument("scenario", type=Path, help="scenario file (.toml)")
    run.add_argument(
        "-o", "--output", type=Path, default=Path("results"), help="results folder (default: ./results)"
    )
    run.add_argument("--seed", type=int, help="override the scenario's seed")
    run.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    run.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    check = sub.add_parser(
        "check",
        help="validate a scenario without running it",
        description="Parse SCENARIO and every command line in it; report the first error.",
    )
    check.add_argument("scenario", type=Path, help="scenario file (.toml)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        return _dispatch(args)
    except BufferlabError as e:
        print(str(e), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bufferlab: interrupted", file=sys.stderr)
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    from .runner import Runner
    from .scenario.load import load_scenario

    sc = load_scenario(args.scenario)
    if args.command == "check":
        r = Runner(sc)
        r.check()
        for w in r.warnings:
            print(w, file=sys.stderr)
        n = sum(len(p.commands) for p in sc.parts)
        print(
            f"{args.scenario}: OK ({len(sc.parts)} parts, {n} command lines, "
            f"{len(sc.hosts) + len(sc.switches) + len(sc.routers)} nodes)"
        )
        return 0
    if args.seed is not None:
        sc.seed = args.seed
    echo = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr))
    progress = False if (args.no_progress or args.quiet) else None
    r = Runner(sc, args.output, progress=progress, echo=echo)
    r.check()
    try:
        r.root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BufferlabError(
            f"error: cannot create the results folder {r.root}: {e.strerror}\n"
            "  hint: choose another folder with -o/--output"
        ) from None
    summary = r.run()
    if not args.quiet:
        print(
            f"{sc.name}: {summary['simulated_s']:.3f} s simulated in {r.wall_s:.2f} s wall, "
            f"{summary['events']} events; results in {r.root}"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
