"""``ss`` as iproute2 misc/ss.c parses its command line: options (``getopt_long``,
[lab2019] 4.15's letters, [modern] 6.9's), then ``state``/``exclude`` words, then a
filter expression (misc/ssfilter.y: ``dst``/``src`` HOST[:PORT], ``dport``/``sport``
OP PORT with OP one of ``= == eq != ne neq > gt < lt >= ge geq <= le leq``, ``and``
``&`` ``&&`` or two conditions side by side, ``or`` ``|`` ``||``, ``not`` ``!``,
parentheses; a word holding spaces is split as ss splits it).

Modelled: ``-t -u -a -l -n -i -o -e -m -s -H -4 -6``, ``-A tcp|udp|inet``, ``-f
inet|inet6`` (and their long names); ``-m`` of TCP sockets only (UDP sockets' memory is
not modelled: ``-m`` with ``-u`` is refused). Everything else ss knows is refused naming
the option: the model has no unix, raw or packet sockets to list, no processes' file
descriptors (``-p``), no name resolution (``-r``). ``ss`` without ``-t``/``-u`` would list the host's unix
sockets too and is refused the same way. IPv6 exists only as iperf3's dual-stack
sockets (``-6``, ``ss`` shows them ``[::ffff:a.b.c.d]``); a filter on an IPv6 address
is refused.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CommandError, NotSupportedError
from . import _services as services
from ._getopt import Getopt, OptSpec
from .shell import Word

#: ss's state names (scan_state) → the states they select, as ss prints them
_STATES = ("ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "UNCONN",
           "CLOSE-WAIT", "LAST-ACK", "LISTEN", "CLOSING")
_STATE_NAMES = dict(zip(("established", "syn-sent", "syn-recv", "fin-wait-1", "fin-wait-2", "time-wait",
                         "unconnected", "close-wait", "last-ack", "listening", "closing"), _STATES,
                        strict=True))
ALL = frozenset(_STATES)
#: SS_CONN: the default
CONNECTED = ALL - {"LISTEN", "UNCONN", "TIME-WAIT", "SYN-RECV"}
_GROUPS = {
    "all": ALL,
    "connected": ALL - {"UNCONN", "LISTEN"},
    "synchronized": ALL - {"UNCONN", "LISTEN", "SYN-SENT"},
    "bucket": frozenset({"SYN-RECV", "TIME-WAIT"}),
    "big": ALL - {"SYN-RECV", "TIME-WAIT"},
    "close": frozenset({"UNCONN"}),
    "closed": frozenset({"UNCONN"}),
    "syn-rcv": frozenset({"SYN-RECV"}),
}

_COMMON = [
    OptSpec("numeric", "n", ("numeric",)),
    OptSpec("resolve", "r", ("resolve",)),
    OptSpec("options", "o", ("options",)),
    OptSpec("extended", "e", ("extended",)),
    OptSpec("memory", "m", ("memory",)),
    OptSpec("processes", "p", ("processes",)),
    OptSpec("info", "i", ("info",)),
    OptSpec("bpf", "b", ("bpf",)),
    OptSpec("events", "E", ("events",)),
    OptSpec("dccp", "d", ("dccp",)),
    OptSpec("tcp", "t", ("tcp",)),
    OptSpec("sctp", "S", ("sctp",)),
    OptSpec("udp", "u", ("udp",)),
    OptSpec("raw", "w", ("raw",)),
    OptSpec("unix", "x", ("unix",)),
    OptSpec("vsock", None, ("vsock",)),
    OptSpec("all", "a", ("all",)),
    OptSpec("listening", "l", ("listening",)),
    OptSpec("ipv4", "4", ("ipv4",)),
    OptSpec("ipv6", "6", ("ipv6",)),
    OptSpec("packet", "0", ("packet",)),
    OptSpec("family", "f", ("family",), arg=True),
    OptSpec("query", "A", ("socket", "query"), arg=True),
    OptSpec("summary", "s", ("summary",)),
    OptSpec("diag", "D", ("diag",), arg=True),
    OptSpec("filter", "F", ("filter",), arg=True),
    OptSpec("version", "V", ("version",)),
    OptSpec("version", "v", ()),
    OptSpec("help", "h", ("help",)),
    OptSpec("context", "Z", ("context",)),
    OptSpec("contexts", "z", ("contexts",)),
    OptSpec("net", "N", ("net",), arg=True),
    OptSpec("kill", "K", ("kill",)),
    OptSpec("no-header", "H", ("no-header",)),
]
#: the options iproute2 6.9 adds
_MODERN = [
    OptSpec("bound-inactive", "B", ("bound-inactive",)),
    OptSpec("threads", "T", ("threads",)),
    OptSpec("mptcp", "M", ("mptcp",)),
    OptSpec("no-queues", "Q", ("no-queues",)),
    OptSpec("oneline", "O", ("oneline",)),
    OptSpec("tipc", None, ("tipc",)),
    OptSpec("xdp", None, ("xdp",)),
    OptSpec("cgroup", None, ("cgroup",)),
    OptSpec("tos", None, ("tos",)),
    OptSpec("inet-sockopt", None, ("inet-sockopt",)),
]

#: what each refused option would need
_UNMODELLED = {
    "resolve": "host name resolution",
    "processes": "the processes' file descriptors",
    "threads": "the processes' file descriptors",
    "bpf": "socket filters",
    "events": "following socket events",
    "dccp": "DCCP sockets",
    "sctp": "SCTP sockets",
    "mptcp": "MPTCP sockets",
    "raw": "raw sockets",
    "unix": "unix sockets",
    "vsock": "vsock sockets",
    "packet": "packet sockets",
    "tipc": "TIPC sockets",
    "xdp": "XDP sockets",
    "diag": "dumping raw inet_diag messages",
    "filter": "reading a filter from a file",
    "version": "printing the version",
    "help": "the usage text",
    "context": "SELinux contexts",
    "contexts": "SELinux contexts",
    "net": "switching network namespaces (type the command in the host's terminal)",
    "kill": "killing sockets",
    "bound-inactive": "bound but inactive sockets",
    "no-queues": "hiding the queue columns",
    "oneline": "one line per socket",
    "cgroup": "cgroups",
    "tos": "TOS/TCLASS/class id",
    "inet-sockopt": "socket options",
}

_EXPECTED = "ss -t|-u [-a|-l] [-n] [-i] [-o] [-e] [-m] [-s] [-H] [-4|-6] [state STATE] [FILTER]"


@dataclass(frozen=True)
class Hostcond:
    """A ``dst``/``src`` argument: an IPv4 prefix (None: any) and a port (None: any)."""

    net: ipaddress.IPv4Network | None
    port: int | None


@dataclass(frozen=True)
class Cond:
    """One filter condition or its combination (``and``/``or``/``not``)."""

    op: str  # dst src dport sport and or not
    args: tuple[Any, ...]

    def matches(self, e: dict[str, Any]) -> bool:
        if self.op == "and":
            return all(c.matches(e) for c in self.args)
        if self.op == "or":
            return any(c.matches(e) for c in self.args)
        if self.op == "not":
            return not self.args[0].matches(e)
        if self.op in ("dst", "src"):
            h: Hostcond = self.args[0]
            addr, port = (e["peer"], e["pport"]) if self.op == "dst" else (e["local"], e["lport"])
            if h.port is not None and h.port != port:
                return False
            if h.net is None:
                return True
            if addr == "::":
                addr = "0.0.0.0"
            return ipaddress.IPv4Address(addr) in h.net
        cmp: Callable[[int, int], bool] = self.args[0]
        port = e["pport"] if self.op == "dport" else e["lport"]
        return cmp(port, self.args[1])


_PORT_OPS: dict[str, Callable[[int, int], bool]] = {
    **dict.fromkeys(("=", "==", "eq"), lambda a, b: a == b),
    **dict.fromkeys(("!=", "ne", "neq"), lambda a, b: a != b),
    **dict.fromkeys((">", "gt"), lambda a, b: a > b),
    **dict.fromkeys(("<", "lt"), lambda a, b: a < b),
    **dict.fromkeys((">=", "ge", "geq"), lambda a, b: a >= b),
    **dict.fromkeys(("<=", "le", "leq"), lambda a, b: a <= b),
}


@dataclass
class Ss:
    tcp: bool = False
    udp: bool = False
    states: frozenset[str] = CONNECTED
    numeric: bool = False
    info: bool = False
    options: bool = False
    extended: bool = False
    memory: bool = False
    summary: bool = False
    header: bool = True
    #: the address families kept: "4" (AF_INET sockets), "6" (dual-stack ones)
    families: frozenset[str] = frozenset({"4", "6"})
    filter: Cond | None = None
    #: the words of the filter, for messages
    filter_words: list[Word] = field(default_factory=list)

    @property
    def netid_column(self) -> bool:
        """ss shows the Netid column when it lists more than one table."""
        return self.tcp and self.udp

    @property
    def state_column(self) -> bool:
        """... and the State column when more than one state."""
        return len(self.states) > 1

    def keeps(self, e: dict[str, Any]) -> bool:
        """Is socket ``e`` (the engine's listing) one ss prints?"""
        if (e["proto"] == "tcp" and not self.tcp) or (e["proto"] == "udp" and not self.udp):
            return False
        if e["state"] not in self.states or ("6" if e["v6"] else "4") not in self.families:
            return False
        return self.filter is None or self.filter.matches(e)


def _port_number(text: str, w: Word, ss: Ss) -> int:
    if text.isdigit():
        return int(text)
    by_name = {name: p for table in (services.TCP if ss.tcp else {}, services.UDP if ss.udp else {})
               for p, name in table.items()}
    if text in by_name:
        return by_name[text]
    raise CommandError(f'ss: "{text}" does not look like a port', col=w.col,
                       expected="a port number or service name")


def _hostcond(w: Word, text: str, ss: Ss, is_port: bool) -> Hostcond:
    """misc/ss.c ``parse_hostcond`` for IPv4: ``ADDR[/LEN][:PORT]``, ``*``, ``:PORT``."""
    if text.startswith("[") or text.count(":") > 1:
        raise NotSupportedError(f"ss: {text}: IPv6 addresses are not modelled (the model's hosts are "
                                "IPv4 only)", col=w.col, expected="an IPv4 address, prefix or :PORT")
    for prefix in ("inet:", "inet6:"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    if is_port:
        port = text[1:] if text.startswith(":") else text
        return Hostcond(None, None if port in ("", "*") else _port_number(port, w, ss))
    addr, _, port = text.partition(":")
    net = None
    if addr and addr != "*":
        try:
            net = ipaddress.IPv4Network(addr, strict=False)
        except ValueError:
            raise CommandError(f'ss: an inet prefix is expected rather than "{addr}"', col=w.col,
                               expected="an IPv4 address or prefix") from None
    return Hostcond(net, None if port in ("", "*") else _port_number(port, w, ss))


class _FilterParser:
    """ssfilter.y: ``|`` binds looser than ``&`` (or side by side), ``!`` tightest."""

    def __init__(self, tokens: list[tuple[str, Word]], ss: Ss) -> None:
        self.toks, self.i, self.ss = tokens, 0, ss

    def peek(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, Word]:
        if self.i >= len(self.toks):
            last = self.toks[-1][1]
            raise CommandError("ss: the filter ends too early", col=last.col, expected="a condition")
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expr(self) -> Cond:
        parts = [self.conj()]
        while self.peek() in ("|", "||", "or"):
            self.take()
            parts.append(self.conj())
        return parts[0] if len(parts) == 1 else Cond("or", tuple(parts))

    def conj(self) -> Cond:
        parts = [self.unary()]
        while self.peek() is not None and self.peek() not in ("|", "||", "or", ")"):
            if self.peek() in ("&", "&&", "and"):
                self.take()
            parts.append(self.unary())
        return parts[0] if len(parts) == 1 else Cond("and", tuple(parts))

    def unary(self) -> Cond:
        text, w = self.take()
        if text in ("!", "not"):
            return Cond("not", (self.unary(),))
        if text == "(":
            inner = self.expr()
            close, cw = self.take()
            if close != ")":
                raise CommandError("ss: ')' expected", col=cw.col, expected=")")
            return inner
        if text in ("dst", "src"):
            arg, aw = self.take()
            return Cond(text, (_hostcond(aw, arg, self.ss, False),))
        if text in ("dport", "sport"):
            op, ow = self.take()
            if op not in _PORT_OPS:
                raise CommandError(f"ss: {op}: a comparison is expected after {text}", col=ow.col,
                                   expected=" ".join(sorted(_PORT_OPS)))
            arg, aw = self.take()
            port = _hostcond(aw, arg, self.ss, True).port
            if port is None:
                raise CommandError(f"ss: {arg}: a port is expected", col=aw.col, expected=":PORT")
            return Cond(text, (_PORT_OPS[op], port))
        if text in ("dev", "fwmark", "autobound", "cgroup"):
            raise NotSupportedError(f"ss: the filter condition {text} is not supported yet", col=w.col,
                                    expected="dst, src, dport, sport")
        raise CommandError(f"ss: {text}: unexpected word in the filter", col=w.col,
                           expected="dst, src, dport, sport, and, or, not, (, )")


def parse_ss(words: list[Word], modern: bool) -> Ss:
    """``ss`` and its arguments (``words[0]`` is ``ss``)."""
    getopt = Getopt("ss", _COMMON + (_MODERN if modern else []), expected=_EXPECTED)
    opts, operands = getopt.parse(words[1:])
    ss = Ss()
    #: ``-a``/``-l`` (ss's state_filter; empty: none given)
    state_opt: frozenset[str] = frozenset()
    dbs: set[str] = set()
    family_given = False
    memory_opt = None
    for o in opts:
        k = o.key
        if k in _UNMODELLED:
            raise NotSupportedError(f"ss: option {o.spelled} ({_UNMODELLED[k]}) is not supported yet",
                                    col=o.col, expected=_EXPECTED)
        if k in ("tcp", "udp"):
            dbs.add(k)
        elif k == "all":
            state_opt = ALL
        elif k == "listening":
            state_opt = frozenset({"LISTEN", "UNCONN"})
        elif k in ("numeric", "info", "options", "extended", "memory", "summary"):
            setattr(ss, k, True)
            if k == "memory":
                memory_opt = o
        elif k == "no-header":
            ss.header = False
        elif k in ("ipv4", "ipv6"):
            ss.families = frozenset({k[-1]}) if not family_given else ss.families | {k[-1]}
            family_given = True
        elif k == "family":
            assert o.value is not None
            fam = {"inet": "4", "inet6": "6"}.get(o.value.text)
            if fam is None:
                raise NotSupportedError(f'ss: family "{o.value.text}" is not modelled', col=o.value.col,
                                        expected="inet or inet6")
            ss.families = frozenset({fam}) if not family_given else ss.families | {fam}
            family_given = True
        elif k == "query":
            assert o.value is not None
            for part in o.value.text.split(","):
                if part in ("tcp", "udp"):
                    dbs.add(part)
                elif part == "inet":
                    dbs |= {"tcp", "udp"}
                else:
                    raise NotSupportedError(f"ss: -A {part}: only tcp, udp and inet sockets are modelled",
                                            col=o.value.col, expected="tcp, udp or inet")
    if not dbs and ss.summary and not operands:
        return ss  # ss -s alone prints the summary only
    if not dbs:
        raise NotSupportedError("ss without -t or -u would list the host's unix and other sockets too, which "
                                "the model does not have", col=words[0].col, expected=_EXPECTED,
                                suggestion="add -t (TCP) or -u (UDP)")
    ss.tcp, ss.udp = "tcp" in dbs, "udp" in dbs
    if memory_opt is not None and ss.udp:
        raise NotSupportedError(f"ss: option {memory_opt.spelled} with UDP sockets (their memory is not "
                                "modelled) is not supported yet", col=memory_opt.col, expected=_EXPECTED,
                                suggestion="list TCP sockets only (-t) with -m")
    # each table and family adds its default states (TCP: the connected ones, UDP:
    # ESTAB only); -a, -l and state/exclude words replace them
    defaults = (CONNECTED if ss.tcp or family_given else frozenset()) | (
        frozenset({"ESTAB"}) if ss.udp else frozenset())
    i = 0
    saw_states = False
    states = state_opt
    while i < len(operands) and operands[i].text in ("state", "exclude", "excl"):
        kw = operands[i]
        if i + 1 >= len(operands):
            raise CommandError(f"ss: {kw.text} needs a state name", col=kw.col, expected="a state name")
        name = operands[i + 1]
        chosen = _GROUPS.get(name.text.lower())
        if chosen is None:
            single = _STATE_NAMES.get(name.text.lower())
            if single is None:
                raise CommandError(f"ss: wrong state name: {name.text}", col=name.col,
                                   expected=", ".join([*_STATE_NAMES, *_GROUPS]))
            chosen = frozenset({single})
        if kw.text == "state":
            states = (states if saw_states else frozenset()) | chosen
        else:
            states = (states if saw_states else ALL) - chosen
        saw_states = True
        i += 2
    ss.states = states or defaults
    rest = operands[i:]
    tokens = [(t, w) for w in rest for t in w.text.split()]
    if tokens:
        parser = _FilterParser(tokens, ss)
        ss.filter = parser.expr()
        if parser.i < len(tokens):
            extra = tokens[parser.i][1]
            raise CommandError(f"ss: {tokens[parser.i][0]}: unexpected word in the filter", col=extra.col,
                               expected="and, or")
        ss.filter_words = rest
    return ss
