"""The ``bufferlab mininet`` and ``bufferlab mn`` subcommands (hooked into cli.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from . import mn
from .script import run_script

COMMANDS = ("mininet", "mn")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("mininet", help="run a Mininet Python script in simulated time",
                       description="Run a Mininet script whose imports say bufferlab.mininet instead of "
                       "mininet: time.sleep/time.time are simulated time, os.system/subprocess run the "
                       "simulated tools (docs/mininet.md).")
    p.add_argument("--results", type=Path, default=None, help="results folder (default: results)")
    p.add_argument("script", type=Path, metavar="SCRIPT.py")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    mn.add_parser(sub)


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "mininet":
        return run_script(args.script, args.args, args.results)
    return mn.run_mn(args)


__all__ = ["COMMANDS", "add_parsers", "dispatch"]
