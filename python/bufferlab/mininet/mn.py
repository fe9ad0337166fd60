"""``bufferlab mn``: Mininet's ``mn`` command-line subset, in simulated time.

``--topo single,N | linear,N[,M] | tree,depth=D,fanout=F | minimal`` (or a name
from ``--custom FILE``'s ``topos`` dict), ``--link default|tc[,bw=..,delay=..,
loss=..,max_queue_size=..,use_htb|use_tbf]``, ``--test pingall|pingpair|iperf|
iperfudp|none``; without ``--test`` the CLI reads commands from stdin.
Arguments are split as Mininet's ``splitArgs`` splits them: ``name,a,b,k=v``.
"""

from __future__ import annotations

import inspect
import runpy
import sys
import traceback
from pathlib import Path
from typing import Any

from ..commands.shell import parse_shell, simple_commands
from ..commands.tc import parse_tc
from ..errors import BufferlabError, CommandError, Diagnostics
from ..outputs.report import after_run
from ..run.scheduler import signal_name, signals_deferred, signals_raise
from . import clock
from . import net as net_mod
from .cli import CLI
from .link import Link, TCLink, tc_lines
from .log import info, output, setLogLevel
from .net import Mininet
from .script import check_script, mininet_modules
from .session import MininetError
from .topo import LinearTopo, MinimalTopo, SingleSwitchTopo
from .topolib import TreeTopo

TOPOS: dict[str, Any] = {"minimal": MinimalTopo, "single": SingleSwitchTopo, "linear": LinearTopo,
                         "tree": TreeTopo}
TESTS = ("pingall", "pingpair", "iperf", "iperfudp", "none")
#: TCLink flags that may be written without a value (``--link tc,use_tbf``)
FLAGS = ("use_tbf", "use_hfsc", "use_htb", "enable_ecn", "enable_red")


def _numeric(s: str) -> Any:
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(s, s)


def split_args(text: str) -> tuple[str, list[Any], dict[str, Any]]:
    """``name,a,b,k=v`` -> (name, [a, b], {k: v}), numbers converted (Mininet's splitArgs)."""
    name, *rest = text.split(",")
    args, kwargs = [], {}
    for item in rest:
        key, eq, value = item.partition("=")
        if eq:
            kwargs[key] = _numeric(value)
        elif item in FLAGS:
            kwargs[item] = True
        else:
            args.append(_numeric(item))
    return name, args, kwargs


#: the built-in topologies' arguments, every one a whole number of at least 1
USAGE = {"minimal": "minimal", "single": "single,N (N hosts on one switch)",
         "linear": "linear,N[,M] (N switches in a row, M hosts on each)",
         "tree": "tree,depth=D,fanout=F (or tree,D,F)"}


#: the most nodes (hosts and switches) of a built-in topology, and a tree's deepest level: far
#: beyond a lab, and `tree,depth=5000,fanout=1` (recursion) or `single,10**18` never end
MAX_TOPO_NODES = 10_000
#: the most pings of a pingall (each host to every other): a 1 024-host tree's 1 047 552 run for
#: ever and their results outgrow memory (campaign 5, docs/fuzzing.md)
MAX_PINGALL = 100_000
MAX_TREE_DEPTH = 100


def _nodes(cls: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[int, int]:
    """(nodes, tree depth) of a built-in topology with these arguments ((0, 0) if they do not
    fit its build(): the call says why)."""
    try:
        bound = inspect.signature(cls.build).bind(None, *args, **kwargs)
    except TypeError:
        return 0, 0
    bound.apply_defaults()
    a = bound.arguments
    if cls is TreeTopo:
        depth, fanout = a["depth"], a["fanout"]
        # levels 0..depth-1 of switches, fanout**depth hosts (capped: a count past the bound will do)
        return min(sum(fanout**i for i in range(min(depth, 64) + 1)), MAX_TOPO_NODES + 1), depth
    if cls is LinearTopo:
        return a["k"] * (1 + a["n"]), 0
    if cls is SingleSwitchTopo:
        return a["k"] + 1, 0
    return 3, 0


def build_topo(spec: str, topos: dict[str, Any]) -> Any:
    name, args, kwargs = split_args(spec)
    if name not in topos:
        raise MininetError(f"--topo {spec}: unknown topology {name!r}; expected one of {', '.join(topos)}")
    if topos[name] is TOPOS.get(name):
        for v in [*args, *kwargs.values()]:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                what = "a whole number" if not isinstance(v, int) or isinstance(v, bool) else "at least 1"
                raise MininetError(f"--topo {spec}: {v!r} is not {what}; expected {USAGE[name]}")
        nodes, depth = _nodes(topos[name], args, kwargs)
        if nodes > MAX_TOPO_NODES or depth > MAX_TREE_DEPTH:
            raise MininetError(f"--topo {spec}: " + (f"a tree {depth} levels deep; at most {MAX_TREE_DEPTH}"
                                                     if depth > MAX_TREE_DEPTH else
                                                     f"more than {MAX_TOPO_NODES:,} hosts and switches")
                               + f"; expected {USAGE[name]}")
    try:
        return topos[name](*args, **kwargs)
    except Exception as e:
        custom = _custom_frame(e)
        if custom is not None:  # the --custom topology's own mistake, at its line
            where = f"{custom.filename}:{custom.lineno}"
            raise MininetError(f"--topo {spec}: {where}: {type(e).__name__}: {e}") from None
        if not isinstance(e, TypeError):
            raise
        # too many arguments, an unknown name=value
        usage = f"; expected {USAGE[name]}" if topos[name] is TOPOS.get(name) else ""
        raise MininetError(f"--topo {spec}: {e}{usage}") from None


def _custom_frame(e: BaseException) -> traceback.FrameSummary | None:
    """The innermost frame of ``e``'s traceback outside bufferlab (a --custom file), if any."""
    package = Path(__file__).resolve().parent.parent
    return next((t for t in reversed(traceback.extract_tb(e.__traceback__))
                 if not Path(t.filename).resolve().is_relative_to(package)), None)


def _check_tc_lines(spec: str, kwargs: dict[str, Any]) -> None:
    """The tc lines these TCLink options make, parsed now: a value tc refuses (``delay=x``) is
    an error about ``--link``, not about a line the user never wrote."""
    try:
        lines = tc_lines("h1-eth0", node_name="h1", show="noqueue", **kwargs)
    except MininetError as e:
        raise MininetError(f"--link {spec}: {e}") from None
    for line in lines:
        try:
            parse_tc(next(simple_commands(parse_shell(line))).words, Diagnostics())
        except CommandError as e:
            hint = f"; expected {e.expected}" if e.expected else ""
            raise MininetError(f"--link {spec}: {e.message} (in the line it makes: {line}){hint}") from None


def link_class(spec: str) -> Any:
    name, args, kwargs = split_args(spec)
    if name == "default" and not args and not kwargs:
        return Link
    if name != "tc" or args:
        raise MininetError(f"--link {spec}: expected default or tc,bw=N,delay=..,loss=..,max_queue_size=..")
    kwargs.pop("use_htb", None)  # htb is TCLink's default shaper
    known = {"bw", "delay", "jitter", "loss", "max_queue_size", "use_tbf", "use_hfsc", "enable_ecn",
             "enable_red", "latency_ms", "speedup"}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise MininetError(f"--link {spec}: unknown option(s) {', '.join(unknown)}; "
                           f"expected {', '.join(sorted(known))}")
    q = kwargs.get("max_queue_size")
    if q is not None and (isinstance(q, bool) or not isinstance(q, int) or q < 1):
        why = ("a queue of 0 packets drops every packet (netem limit 0): nothing would cross the links"
               if q == 0 and not isinstance(q, bool) else "not a packet count")
        raise MininetError(f"--link {spec}: max_queue_size={q!r}: {why}; expected a whole number of "
                           "packets, at least 1 (e.g. max_queue_size=100)")

    _check_tc_lines(spec, kwargs)

    def make(*a: Any, **kw: Any) -> TCLink:
        try:
            return TCLink(*a, **{**kwargs, **kw})
        except MininetError as e:  # a value of --link's: the error names the argument
            raise MininetError(f"--link {spec}: {e}") from None

    return make


def run_mn(topo: str, link: str, test: str | None, custom: list[Path], results: Path,
           stdin: Any = None, real: bool = False) -> int:
    """``real``: on this machine's kernel, in network namespaces (root; docs/real.md)."""
    setLogLevel("info")
    topos = dict(TOPOS)
    for f in custom:
        check_script(f, "file")
        try:
            with mininet_modules():  # a custom file written for Mininet imports mininet.topo
                found = runpy.run_path(str(f)).get("topos", {})
        except OSError as e:
            raise BufferlabError(f"--custom {f}: {e.strerror}") from None
        except SyntaxError as e:
            raise BufferlabError(f"--custom {f}:{e.lineno}: invalid Python: {e.msg}") from None
        except Exception as e:  # the file's own mistake, at its line
            frame = _custom_frame(e)
            at = f":{frame.lineno}" if frame is not None and Path(frame.filename).resolve() == f.resolve() \
                else ""
            raise BufferlabError(f"--custom {f}{at}: {type(e).__name__}: {e}") from None
        if not isinstance(found, dict):
            raise BufferlabError(f"--custom {f}: topos must be a dict of name -> topology class")
        topos.update(found)
    if test is not None and test not in TESTS:
        raise MininetError(f"--test {test}: expected one of {', '.join(TESTS)}")
    with net_mod.results_at(results, "mn"):  # the API's later networks write where they did before
        return _run_network(topo, topos, link, test, results, stdin, real)


def _run_network(topo: str, topos: dict[str, Any], link: str, test: str | None, results: Path,
                 stdin: Any, real: bool) -> int:
    # SIGINT/SIGTERM end the test or the CLI: what ran until then is written, exit 128 + signal
    # (before the network exists: "bufferlab: interrupted", 130/143, nothing to write)
    signals_raise()
    net = Mininet(topo=build_topo(topo, topos), link=link_class(link), real=real)
    if test in ("iperf", "iperfudp") and len(net.hosts) < 2:  # its client and server: two hosts
        raise MininetError(f"--test {test}: needs two hosts; --topo {topo} has {len(net.hosts)}")
    pings = len(net.hosts) * (len(net.hosts) - 1)
    if test == "pingall" and pings > MAX_PINGALL:
        raise MininetError(f"--test {test}: --topo {topo} has {len(net.hosts):,} hosts, {pings:,} pings; "
                           f"at most {MAX_PINGALL:,} (about 316 hosts): try --test pingpair, or a script "
                           "that pings the pairs it needs")
    interrupted: str | None = None
    status = 0
    try:
        net.start()
        if test == "pingall":
            net.pingAll()
        elif test == "pingpair":
            net.pingPair()
        elif test in ("iperf", "iperfudp"):
            net.iperf(l4Type="UDP" if test == "iperfudp" else "TCP")
        elif test is None:
            info("*** Starting CLI:\n")
            CLI(net, stdin=stdin or sys.stdin)
    except KeyboardInterrupt as e:
        interrupted, status = signal_name(e), 128 + getattr(e, "signum", 2)
    finally:
        with signals_deferred():  # a second signal waits until everything is written
            elapsed = net.session.now_ns / 1e9 if net.session else 0.0
            if net.session is not None and interrupted is not None:
                net.session.close(interrupted=interrupted)
            root = net.session.root if net.session is not None else Path(results) / "mn"
            net.stop()
            clock.reset()  # the next network of this process starts at 0, as after a script
            if (root / "summary.json").is_file():
                after_run(root, report=True, echo=lambda s: print(s, file=sys.stderr))
    if interrupted is not None:
        print(f"bufferlab: interrupted by {interrupted}: what ran until then is in {root}", file=sys.stderr)
        return status
    output(f"completed in {elapsed:.3f} seconds ({'real time' if real else 'simulated'})\n")
    return 0


__all__ = ["run_mn", "split_args", "build_topo", "link_class"]
