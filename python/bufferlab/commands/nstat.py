"""``nstat`` (iproute2 misc/nstat.c) and ``netstat -s`` (net-tools netstat.c and
statistics.c): the SNMP counter tools. Their output: formats/nstat.py,
formats/netstat.py, from the files formats/snmp.py writes.

nstat: ``-a -z -r -n -s`` and counter name patterns (shell wildcards, as nstat's
``fnmatch``); the daemon (``-d``, ``-t``), JSON (``-j``, ``-p``) and ``-V`` are refused
naming the option. netstat: ``-s`` with ``-t``/``-u``/``-w`` (``--tcp``, ``--udp``,
``--raw``) to keep those groups; netstat's socket and routing listings are refused (``ss``
lists sockets).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import NotSupportedError
from ._getopt import Getopt, OptSpec
from .shell import Word


@dataclass
class NstatOptions:
    absolute: bool = False  # -a
    zeros: bool = False  # -z
    reset: bool = False  # -r
    no_output: bool = False  # -n
    no_update: bool = False  # -s
    patterns: list[str] = field(default_factory=list)
    #: [modern] patterns match whatever the case (``FNM_CASEFOLD``); [lab2019] 4.15 matches it
    casefold: bool = False


_NSTAT = [
    OptSpec("zeros", "z", ("zeros",)),
    OptSpec("reset", "r", ("reset",)),
    OptSpec("ignore", "a", ("ignore",)),
    OptSpec("noupdate", "s", ("noupdate",)),
    OptSpec("nooutput", "n", ("nooutput",)),
    OptSpec("scan", "d", ("scan",), arg=True),
    OptSpec("interval", "t", ("interval",), arg=True),
    OptSpec("json", "j", ("json",)),
    OptSpec("pretty", "p", ("pretty",)),
    OptSpec("version", "V", ("version",)),
    OptSpec("version", "v", ()),
    OptSpec("help", "h", ("help",)),
]
_NSTAT_EXPECTED = "nstat [-a] [-z] [-r] [-n] [-s] [PATTERN...]"
_NSTAT_UNMODELLED = {
    "scan": "the daemon that keeps average rates",
    "interval": "the daemon's time constant",
    "json": "JSON output",
    "pretty": "JSON output",
    "version": "printing the version",
    "help": "the usage text",
}


def parse_nstat(words: list[Word], modern: bool) -> NstatOptions:
    """``nstat`` and its arguments (``words[0]`` is ``nstat``)."""
    opts, operands = Getopt("nstat", _NSTAT, expected=_NSTAT_EXPECTED).parse(words[1:])
    out = NstatOptions(patterns=[w.text for w in operands], casefold=modern)
    for o in opts:
        if o.key in _NSTAT_UNMODELLED:
            raise NotSupportedError(f"nstat: option {o.spelled} ({_NSTAT_UNMODELLED[o.key]}) is not "
                                    "supported yet", col=o.col, expected=_NSTAT_EXPECTED)
        attr = {"zeros": "zeros", "reset": "reset", "ignore": "absolute", "noupdate": "no_update",
                "nooutput": "no_output"}[o.key]
        setattr(out, attr, True)
    return out


@dataclass
class NetstatStats:
    """``netstat -s [-t] [-u] [-w]``: the groups shown (``raw`` is IP and ICMP)."""

    shown: set[str] = field(default_factory=lambda: {"raw", "tcp", "udp"})


_NETSTAT = [
    OptSpec("statistics", "s", ("statistics",)),
    OptSpec("tcp", "t", ("tcp",)),
    OptSpec("udp", "u", ("udp",)),
    OptSpec("raw", "w", ("raw",)),
    OptSpec("udplite", "U", ("udplite",)),
    OptSpec("sctp", "S", ("sctp",)),
    OptSpec("numeric", "n", ("numeric",)),
    OptSpec("all", "a", ("all",)),
    OptSpec("listening", "l", ("listening",)),
    OptSpec("programs", "p", ("program",)),
    OptSpec("route", "r", ("route",)),
    OptSpec("interfaces", "i", ("interfaces",)),
    OptSpec("groups", "g", ("groups",)),
    OptSpec("masquerade", "M", ("masquerade",)),
    OptSpec("continuous", "c", ("continuous",)),
    OptSpec("extend", "e", ("extend",)),
    OptSpec("timers", "o", ("timers",)),
    OptSpec("verbose", "v", ("verbose",)),
    OptSpec("wide", "W", ("wide",)),
    OptSpec("unix", "x", ("unix",)),
    OptSpec("version", "V", ("version",)),
    OptSpec("help", "h", ("help",)),
]
_NETSTAT_EXPECTED = "netstat -s [-t] [-u] [-w]"


def parse_netstat(words: list[Word]) -> NetstatStats:
    """``netstat`` and its arguments: the statistics only."""
    opts, operands = Getopt("netstat", _NETSTAT, expected=_NETSTAT_EXPECTED).parse(words[1:])
    if operands:
        raise NotSupportedError(f"netstat: {operands[0].text}: unexpected argument", col=operands[0].col,
                                expected=_NETSTAT_EXPECTED)
    if not any(o.key == "statistics" for o in opts):
        raise NotSupportedError("netstat lists sockets, routes and interfaces the way `ss`, `ip route` and "
                                "`ip -s link` do; only `netstat -s` (the statistics) is modelled",
                                col=words[0].col, expected=_NETSTAT_EXPECTED,
                                suggestion="use ss -tan to list sockets")
    groups = {o.key for o in opts if o.key in ("tcp", "udp", "raw")}
    for o in opts:
        if o.key not in ("statistics", "tcp", "udp", "raw"):
            raise NotSupportedError(f"netstat: option {o.spelled} is not supported yet with -s", col=o.col,
                                    expected=_NETSTAT_EXPECTED)
    return NetstatStats(shown=groups or {"raw", "tcp", "udp"})
