"""``bufferlab mn``: Mininet's ``mn`` command line (a subset) in simulated time.

``--topo minimal|single,N|linear,N[,M]|tree,depth=D,fanout=F`` (or a name from
``--custom FILE``'s ``topos`` dict), ``--link default|tc[,bw=..,delay=..,loss=..,
max_queue_size=..,use_htb|use_tbf]``, ``--test pingall|pingpair|iperf|iperfudp|none``,
then the CLI when no test is given. Arguments are split as mininet/util.py
``splitArgs`` splits them: ``name,a,b,k=v``, numbers converted.
"""

from __future__ import annotations

import argparse
import runpy
import time
from pathlib import Path
from typing import IO, Any

from .cli import CLI
from .link import Link, TCLink
from .log import output, setLogLevel
from .net import Mininet
from .session import MininetError
from .topo import LinearTopo, MinimalTopo, SingleSwitchReversedTopo, SingleSwitchTopo, Topo
from .topolib import TreeTopo

TOPOS: dict[str, Any] = {"minimal": MinimalTopo, "single": SingleSwitchTopo, "linear": LinearTopo,
                         "reversed": SingleSwitchReversedTopo, "tree": TreeTopo}
LINKS: dict[str, type[Link]] = {"default": Link, "tc": TCLink}
TESTS = ("pingall", "pingpair", "iperf", "iperfudp", "none", "build")


def _value(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def split_args(spec: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``'tree,depth=2,fanout=3'`` -> ('tree', [], {'depth': 2, 'fanout': 3}); a bare flag
    (``use_tbf``) is True."""
    name, *rest = spec.split(",")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for item in rest:
        if "=" in item:
            k, v = item.split("=", 1)
            kwargs[k] = _value(v)
        elif item.startswith("use_") or item.startswith("enable_"):
            kwargs[item] = True
        else:
            args.append(_value(item))
    return name, args, kwargs


def add_parser(sub: Any) -> None:
    p = sub.add_parser("mn", help="Mininet's mn command (--topo, --link, --test) in simulated time",
                       description="Build a Mininet topology and run a test or the mininet> CLI, in "
                       "simulated time (docs/mininet.md).")
    p.add_argument("--topo", default="minimal",
                   help="minimal | single,N | linear,N | tree,depth=D,fanout=F | a name from --custom")
    p.add_argument("--link", default="default",
                   help="default | tc[,bw=10,delay=5ms,loss=1,max_queue_size=100,use_tbf]")
    p.add_argument("--test", default=None, help=f"{' | '.join(TESTS)} (default: the CLI)")
    p.add_argument("--custom", type=Path, help="a Python file defining topos = {'name': TopoClass}")
    p.add_argument("--mac", action="store_true", help="MACs 00:00:00:00:00:0N (autoSetMacs)")
    p.add_argument("-v", "--verbosity", default="info", help="debug | info | output | warning | error")
    p.add_argument("--results", type=Path, default=None, help="results folder (default: results)")


def _topo(spec: str, custom: Path | None) -> Topo:
    name, args, kwargs = split_args(spec)
    topos = dict(TOPOS)
    if custom is not None:
        if not custom.is_file():
            raise MininetError(f"--custom {custom}: no such file")
        found = runpy.run_path(str(custom)).get("topos")
        if not isinstance(found, dict):
            raise MininetError(f"--custom {custom}: the file defines no topos = {{'name': TopoClass}} dict")
        topos.update(found)
    if name not in topos:
        raise MininetError(f"--topo {spec}: unknown topology {name!r}; expected one of {', '.join(topos)}")
    try:
        return topos[name](*args, **kwargs)
    except TypeError as e:
        raise MininetError(f"--topo {spec}: {e}") from None


def run_mn(args: argparse.Namespace, stdin: IO[str] | None = None) -> int:
    setLogLevel(args.verbosity)
    if args.test is not None and args.test not in TESTS:
        raise MininetError(f"--test {args.test}: expected one of {', '.join(TESTS)}")
    lname, largs, lopts = split_args(args.link)
    if lname not in LINKS or largs:
        raise MininetError(f"--link {args.link}: expected default or tc[,bw=10,delay=5ms,...]")
    wall0 = time.perf_counter()
    topo = _topo(args.topo, args.custom)
    topo.lopts = {**topo.lopts, **lopts}
    # mn applies --link options to every link the topology adds
    topo._links = [(a, b, {**lopts, **info}) for a, b, info in topo._links]
    Mininet.results_root, Mininet.name = args.results, "mn"
    try:
        net = Mininet(topo=topo, link=LINKS[lname], autoSetMacs=args.mac)
        net.start()
        try:
            if args.test in (None, "none") and args.test is None:
                CLI(net, stdin=stdin)
            elif args.test == "pingall":
                net.pingAll()
            elif args.test == "pingpair":
                net.pingPair()
            elif args.test in ("iperf", "iperfudp"):
                net.iperf(l4Type="UDP" if args.test == "iperfudp" else "TCP")
        finally:
            net.stop()
    finally:
        Mininet.results_root, Mininet.name = None, "mininet"
    output(f"completed in {time.perf_counter() - wall0:.3f} seconds\n")
    return 0


__all__ = ["run_mn", "add_parser", "split_args"]
