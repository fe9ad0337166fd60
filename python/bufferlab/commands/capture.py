"""``tcpdump`` and ``tshark`` command lines, and the capture-filter compiler.

Options as tcpdump(8) 4.99 and tshark(1) document them; only writing to a file
(``-w``) is modelled: the engine writes the frames (crates/bufferlab-core/src/
capture), Wireshark/tshark read them. Filters: a subset of pcap-filter(7),
compiled here into the expression tree the engine evaluates
(capture/filter.rs); anything outside the subset is refused with its column.

Supported filter language::

    expr    := term (("or" | "||") term)*
    term    := factor (("and" | "&&") factor)*
    factor  := ("not" | "!") factor | "(" expr ")" | relation | primitive
    primitive := [ip|arp|tcp|udp|icmp] [src|dst] [host|net|port] ID
                 | less N | greater N
    relation  := (ether|ip|arp|tcp|udp|icmp) "[" OFF [":" 1|2|4] "]" ["&" MASK] CMP N
                 | len CMP N

As in pcap-filter(7), an ID after ``and``/``or`` with no qualifier of its own
reuses the previous primitive's (``host 10.0.0.1 or 10.0.0.2``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import CommandError, NotSupportedError
from ..units import U32_MAX
from ._common import is_ipv4_literal
from .shell import Word

LAYERS = ("ether", "ip", "arp", "tcp", "udp", "icmp")
CMPS = {"==": "==", "=": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
#: pcap-filter keywords outside the subset (refused with "not supported yet")
UNSUPPORTED = {
    "ip6", "ether", "vlan", "mpls", "portrange", "gateway", "broadcast", "multicast", "proto",
    "sctp", "icmp6", "rarp", "decnet", "fddi", "tr", "wlan", "atalk", "aarp", "iso", "stp",
    "ipx", "netbeui", "type", "subtype", "dir", "inbound", "outbound", "ifname", "on", "rnr",
    "rulenum", "reason", "rset", "srnr", "subrulenum", "action", "geneve", "pppoed", "pppoes",
    "llc", "mask", "igmp", "igrp", "pim", "vrrp", "carp", "ah", "esp", "clnp", "esis",
    "isis", "+", "-", "*", "/", "%", "|", "^", "<<", ">>",
}
SUBSET = (
    "tcp, udp, icmp, arp, ip; [src|dst] host A; [src|dst] net A/N; [tcp|udp] [src|dst] port N; "
    "less N; greater N; ip[1] == 0x32-style byte tests (proto[off:size] & mask op value); "
    "and/or/not, &&/||/!, parentheses"
)


@dataclass(frozen=True)
class Tok:
    text: str
    col: int


_TOKEN = re.compile(r"\s*(&&|\|\||==|!=|<=|>=|<<|>>|[()\[\]:!&<>=+\-*/%|^]|[^\s()\[\]:!&<>=+*/%|^]+)")


def tokenize(words: list[Word]) -> list[Tok]:
    """Filter tokens with their columns in the command line. A word with a
    space was quoted: its text starts one column after the quote."""
    toks: list[Tok] = []
    for w in words:
        base = w.col + (1 if re.search(r"\s", w.text) else 0)
        pos = 0
        while pos < len(w.text):
            m = _TOKEN.match(w.text, pos)
            if m is None or not m.group(1):
                break
            toks.append(Tok(m.group(1), base + m.start(1)))
            pos = m.end()
    return toks


class _Parser:
    def __init__(self, prog: str, toks: list[Tok], end_col: int, resolve_host: Any) -> None:
        self.prog = prog
        self.toks = toks
        self.i = 0
        self.end_col = end_col
        self.resolve_host = resolve_host
        #: qualifiers of the last primitive: (proto, dir, type)
        self.last: tuple[str | None, str, str] | None = None

    # ---------------------------------------------------------------- helpers

    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def next(self) -> Tok:
        t = self.peek()
        if t is None:
            raise self.syntax(None, "more of the expression")
        self.i += 1
        return t

    def syntax(self, t: Tok | None, expected: str) -> CommandError:
        return CommandError(
            f"{self.prog}: can't parse filter expression: syntax error",
            col=self.end_col if t is None else t.col,
            expected=expected,
            suggestion="quote the filter, e.g. tcpdump -i h1-eth0 -w f.pcap 'udp and dst port 5201'",
        )

    def unsupported(self, t: Tok) -> NotSupportedError:
        return NotSupportedError(
            f"{self.prog}: filter {t.text!r} is not supported yet",
            col=t.col,
            expected="the supported subset: " + SUBSET,
        )

    def number(self, t: Tok) -> int:
        try:
            v = int(t.text, 0) if not re.fullmatch(r"0[0-7]+", t.text) else int(t.text, 8)
        except ValueError:
            if t.text.lower() in UNSUPPORTED:
                raise self.unsupported(t) from None
            raise self.syntax(t, "a number") from None
        if v > U32_MAX:  # BPF compares 32-bit words (bpf_u_int32)
            raise CommandError(f"{self.prog}: number {t.text} is too large", col=t.col,
                               expected=f"a number between 0 and {U32_MAX} (BPF compares 32-bit values)")
        return v

    # ---------------------------------------------------------------- grammar

    def parse(self) -> dict[str, Any]:
        if not self.toks:
            return {"op": "true"}
        e = self.expr()
        t = self.peek()
        if t is not None:
            if t.text.lower() in UNSUPPORTED:
                raise self.unsupported(t)
            raise self.syntax(t, "'and', 'or' or the end of the filter")
        return e

    def expr(self) -> dict[str, Any]:
        args = [self.term()]
        while (t := self.peek()) is not None and t.text in ("or", "||"):
            self.i += 1
            args.append(self.term())
        return args[0] if len(args) == 1 else {"op": "or", "args": args}

    def term(self) -> dict[str, Any]:
        args = [self.factor()]
        while (t := self.peek()) is not None and t.text in ("and", "&&"):
            self.i += 1
            args.append(self.factor())
        return args[0] if len(args) == 1 else {"op": "and", "args": args}

    def factor(self) -> dict[str, Any]:
        t = self.peek()
        if t is None:
            raise self.syntax(None, "a primitive such as tcp, host A, port N")
        if t.text in ("not", "!"):
            self.i += 1
            return {"op": "not", "arg": self.factor()}
        if t.text == "(":
            self.i += 1
            e = self.expr()
            close = self.peek()
            if close is None or close.text != ")":
                raise self.syntax(close, "')'")
            self.i += 1
            return e
        nxt = self.peek(1)
        if t.text in LAYERS and nxt is not None and nxt.text == "[":
            return self.relation()
        if t.text == "len":
            self.i += 1
            op = self.next()
            if op.text not in CMPS:
                raise self.syntax(op, "a comparison: == != < <= > >=")
            return {"op": "len", "cmp": CMPS[op.text], "value": self.number(self.next())}
        if t.text in ("less", "greater"):
            self.i += 1
            n = self.number(self.next())
            return {"op": "len", "cmp": "<=" if t.text == "less" else ">=", "value": n}
        return self.primitive()

    def relation(self) -> dict[str, Any]:
        layer = self.next()
        if layer.text == "ether":
            raise self.unsupported(layer)
        self.next()  # "["
        offset = self.number(self.next())
        size = 1
        t = self.next()
        if t.text == ":":
            size_tok = self.next()
            size = self.number(size_tok)
            if size not in (1, 2, 4):
                raise self.syntax(size_tok, "a size of 1, 2 or 4 bytes")
            t = self.next()
        if t.text != "]":
            raise self.syntax(t, "']' (arithmetic inside [] is not supported yet)")
        mask = None
        op = self.next()
        if op.text == "&":
            mask = self.number(self.next())
            op = self.next()
        if op.text not in CMPS:
            if op.text in UNSUPPORTED:
                raise self.unsupported(op)
            raise self.syntax(op, "a comparison: == != < <= > >=")
        value = self.number(self.next())
        return {"op": "byte", "layer": layer.text, "offset": offset, "size": size, "mask": mask,
                "cmp": CMPS[op.text], "value": value}

    def primitive(self) -> dict[str, Any]:
        first = self.peek()
        assert first is not None
        proto: str | None = None
        direction: str | None = None
        kind: str | None = None
        t = first
        if t.text in ("ip", "arp", "tcp", "udp", "icmp"):
            proto = t.text
            self.i += 1
            t = self.peek()  # type: ignore[assignment]
        if t is not None and t.text in ("src", "dst"):
            direction = t.text
            self.i += 1
            t = self.peek()  # type: ignore[assignment]
            if t is not None and t.text in ("or", "and") and self.peek(1) is not None and \
                    self.peek(1).text in ("src", "dst"):  # type: ignore[union-attr]
                both = f"{direction} {t.text} {self.peek(1).text}"  # type: ignore[union-attr]
                raise self.unsupported(Tok(both, t.col))
        if t is not None and t.text in ("host", "net", "port"):
            kind = t.text
            self.i += 1
        elif t is not None and t.text.lower() in UNSUPPORTED:
            raise self.unsupported(t)
        if proto is not None and direction is None and kind is None:
            self.last = None
            return {"op": "proto", "layer": proto}
        if proto is None and direction is None and kind is None:
            if t is not None and t.text.lower() in UNSUPPORTED:
                raise self.unsupported(t)
            if self.last is None:
                # a bare ID names a host (pcap-filter(7))
                proto, direction, kind = None, "any", "host"
            else:
                proto, direction, kind = self.last
        kind = kind or "host"
        direction = direction or "any"
        self.last = (proto, direction, kind)
        id_tok = self.peek()
        if id_tok is None or id_tok.text in ("and", "or", "&&", "||", ")", "(", "not", "!"):
            raise self.syntax(id_tok, f"the {kind}'s value after {first.text!r}")
        self.i += 1
        if kind == "port":
            if proto not in (None, "tcp", "udp"):
                raise self.syntax(first, "'tcp port N' or 'udp port N' (port applies to TCP and UDP)")
            port = self.number(id_tok) if id_tok.text[:1].isdigit() else None
            if port is None or not 0 <= port <= 65535:
                raise self.syntax(id_tok, "a port number 0-65535 (service names are not supported)")
            return {"op": "port", "dir": direction, "layer": proto, "port": port}
        if proto not in (None, "ip", "arp"):
            raise self.syntax(first, f"'{proto}' applies to ports only: e.g. '{proto} and host A'")
        if kind == "host":
            addr = id_tok.text
            if not is_ipv4_literal(addr):
                resolved = self.resolve_host(addr) if self.resolve_host else None
                if resolved is None:
                    raise CommandError(
                        f"{self.prog}: unknown host '{addr}'",
                        col=id_tok.col,
                        expected="an IPv4 address or a host name of the topology",
                    )
                addr = resolved
            prim: dict[str, Any] = {"op": "host", "dir": direction, "addr": addr}
        else:
            prim = self.net(id_tok, direction)
        if proto is not None:
            return {"op": "and", "args": [{"op": "proto", "layer": proto}, prim]}
        return prim

    def net(self, t: Tok, direction: str) -> dict[str, Any]:
        text, _, plen = t.text.partition("/")
        parts = text.split(".")
        ok = 1 <= len(parts) <= 4 and all(p.isdigit() and int(p) < 256 for p in parts)
        if not ok or (plen and not (plen.isdigit() and int(plen) <= 32)):
            raise self.syntax(t, "a network such as 10.0.0.0/24 or 10.0.0")
        prefix = int(plen) if plen else 8 * len(parts)
        addr = ".".join(parts + ["0"] * (4 - len(parts)))
        return {"op": "net", "dir": direction, "addr": addr, "prefix": prefix}


def compile_filter(prog: str, words: list[Word], end_col: int, resolve_host: Any = None) -> dict[str, Any]:
    """The engine's filter tree for the filter words (an empty filter matches all)."""
    return _Parser(prog, tokenize(words), end_col, resolve_host).parse()


# ---------------------------------------------------------------------- command lines


#: bufferlab's own capture option: GSO aggregates written as their segments
SEGMENT_GSO = "--segment-gso"


@dataclass
class CaptureCmd:
    prog: str
    iface: Word
    file: Word
    snaplen: int
    count: int | None
    fmt: str
    filter: dict[str, Any]
    #: write GSO aggregates as segments (bufferlab's ``--segment-gso``); the
    #: real tools show an aggregate on a veth as one large frame
    segment_gso: bool = False


def _value(words: list[Word], k: int, opt: str, attached: str, prog: str, expected: str) -> tuple[Word, int]:
    """The value of option ``opt`` given as ``-xVALUE`` / ``--long=VALUE`` or as the next word."""
    w = words[k]
    if attached:
        return Word(attached, w.col + len(w.text) - len(attached)), k + 1
    if k + 1 >= len(words):
        raise CommandError(f"{prog}: option requires an argument -- '{opt}'", col=w.col, expected=expected)
    return words[k + 1], k + 2


#: tcpdump reads -s and -c with ``(int)strtol`` and refuses a snaplen above MAXIMUM_SNAPLEN
#: (262144); tshark's get_natural_int allows up to INT_MAX
MAX_SNAPLEN = 262144
MAX_INT = 2**31 - 1


def _int(w: Word, prog: str, what: str, maximum: int = MAX_INT) -> int:
    try:
        v = int(w.text, 0)
    except ValueError:
        raise CommandError(
            f"{prog}: invalid {what} {w.text}", col=w.col, expected=f"a {what} (a number)"
        ) from None
    if v < 0 or v > maximum:
        raise CommandError(f"{prog}: invalid {what} {w.text}", col=w.col,
                           expected=f"a {what} between 0 and {maximum}")
    return v


def parse_tcpdump(words: list[Word], resolve_host: Any = None) -> CaptureCmd:
    """``tcpdump -i IFACE -w FILE [-s SNAPLEN] [-c COUNT] [-n] [-U] [-p] [--nano] [FILTER...]``."""
    prog = "tcpdump"
    iface = file = None
    snaplen, count, fmt = 262144, None, "pcap"
    segment_gso = False
    rest: list[Word] = []
    k = 1
    expected = "tcpdump -i IFACE -w FILE [-s SNAPLEN] [-c COUNT] [-n] [--segment-gso] [FILTER]"
    while k < len(words):
        w = words[k]
        t = w.text
        if t == SEGMENT_GSO:
            segment_gso, k = True, k + 1
        elif t in ("--nano", "--time-stamp-precision=nano"):
            fmt, k = "pcap_ns", k + 1
        elif t == "--time-stamp-precision=micro":
            fmt, k = "pcap", k + 1
        elif t.startswith("--interface") or t.startswith("--snapshot-length"):
            name, eq, val = t.partition("=")
            v, k = _value(words, k, name, val if eq else "", prog, expected)
            if name == "--interface":
                iface = v
            else:
                snaplen = _int(v, prog, "snaplen", MAX_SNAPLEN) or 262144
        elif t.startswith("-") and len(t) > 1 and not t.startswith("--"):
            j = 1
            while j < len(t):
                c = t[j]
                if c in "iwsc":
                    v, k = _value(words, k, c, t[j + 1:], prog, expected)
                    if c == "i":
                        iface = v
                    elif c == "w":
                        file = v
                    elif c == "s":
                        snaplen = _int(v, prog, "snaplen", MAX_SNAPLEN) or 262144
                    else:
                        count = _int(v, prog, "packet count")
                        if count == 0:
                            raise CommandError(f"{prog}: invalid packet count 0", col=v.col,
                                               expected="a positive packet count")
                    break
                if c in "nUpNq":
                    j += 1  # name resolution, buffering, promiscuous mode: no effect on the file
                    if j == len(t):
                        k += 1
                    continue
                raise NotSupportedError(
                    f"{prog}: option -{c} is not supported yet",
                    col=w.col + j,
                    expected=expected,
                )
        elif t.startswith("--"):
            raise NotSupportedError(f"{prog}: option {t} is not supported yet", col=w.col, expected=expected)
        else:
            rest.append(w)
            k += 1
    end_col = words[-1].col + len(words[-1].text)
    if iface is None:
        raise NotSupportedError(
            "tcpdump without -i is not supported yet (the default interface is ambiguous here)",
            col=words[0].col, expected=expected,
            suggestion="name the interface: tcpdump -i h1-eth0 -w h1.pcap",
        )
    if file is None:
        raise NotSupportedError(
            "tcpdump without -w (printing decoded packets) is not supported yet",
            col=words[0].col, expected=expected,
            suggestion="write a file and read it afterwards: tcpdump -i h1-eth0 -w h1.pcap, "
            "then tshark -r h1.pcap",
        )
    if iface.text == "any":
        raise NotSupportedError("tcpdump -i any (Linux cooked capture) is not supported yet", col=iface.col,
                                expected="one interface name")
    flt = compile_filter(prog, rest, end_col, resolve_host)
    return CaptureCmd(prog, iface, file, snaplen, count, fmt, flt, segment_gso)


def parse_tshark(words: list[Word], resolve_host: Any = None) -> CaptureCmd:
    """``tshark -i IFACE -w FILE [-f FILTER] [-c COUNT] [-s SNAPLEN] [-F pcap|pcapng] [-q] [-n]``."""
    prog = "tshark"
    iface = file = None
    snaplen, count, fmt = 262144, None, "pcapng"
    segment_gso = False
    flt_word: Word | None = None
    expected = ("tshark -i IFACE -w FILE [-f 'CAPTURE FILTER'] [-c COUNT] [-s SNAPLEN] [-F pcap|pcapng] "
                "[--segment-gso]")
    k = 1
    while k < len(words):
        w = words[k]
        t = w.text
        if t == SEGMENT_GSO:
            segment_gso, k = True, k + 1
            continue
        if t.startswith("-") and len(t) > 1 and not t.startswith("--"):
            c = t[1]
            if c in "iwfcsF":
                v, k = _value(words, k, c, t[2:], prog, expected)
                if c == "i":
                    iface = v
                elif c == "w":
                    file = v
                elif c == "f":
                    flt_word = v
                elif c == "c":
                    count = _int(v, prog, "packet count") or None
                elif c == "s":
                    snaplen = _int(v, prog, "snaplen") or 262144
                else:
                    if v.text not in ("pcap", "pcapng", "nsecpcap"):
                        raise NotSupportedError(f"tshark: file type {v.text} is not supported yet", col=v.col,
                                                expected="pcap, nsecpcap or pcapng")
                    fmt = {"pcap": "pcap", "nsecpcap": "pcap_ns", "pcapng": "pcapng"}[v.text]
                continue
            if t in ("-q", "-n", "-Q", "-p"):
                k += 1
                continue
            raise NotSupportedError(f"tshark: option {t} is not supported yet", col=w.col, expected=expected)
        raise NotSupportedError(
            "tshark: a filter as trailing words is not supported yet", col=w.col, expected=expected,
            suggestion="give the capture filter with -f, e.g. tshark -i eth1 -w c.cap -f 'udp'",
        )
    if iface is None or file is None:
        raise NotSupportedError(
            "tshark without -i IFACE -w FILE (live decoding) is not supported yet",
            col=words[0].col, expected=expected,
        )
    words_f = [flt_word] if flt_word is not None else []
    end_col = words[-1].col + len(words[-1].text)
    flt = compile_filter(prog, words_f, end_col, resolve_host)
    return CaptureCmd(prog, iface, file, snaplen, count, fmt, flt, segment_gso)
