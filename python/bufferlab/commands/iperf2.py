"""``iperf`` (iperf 2.0.13) command lines: server ``-s`` and client ``-c HOST``.

Mirrors iperf 2.0.13 ``src/Settings.cpp`` (``Settings_Interpret``) as Mininet's
``net.iperf()`` and the classic course scripts use it:

* ``getopt_long`` with options and operands interleaved (the ``_getopt``
  work-alike);
* sizes and rates through ``byte_atoi``/``byte_atof`` (``src/stdio.c``): a
  lower-case k/m/g multiplies by 10³, an upper-case K/M/G by 2¹⁰ (so
  ``-b 10M`` is 10 485 760 bit/s, ``-w 64k`` 64 000 bytes);
* ``-t`` and ``-i`` are ``atof`` seconds (fractions allowed);
* defaults: port 5001, ``-t`` 10 s, TCP buffer length 128 KiB, UDP datagrams
  of 1470 bytes at 1 048 576 bit/s (``kDefault_UDPRate``).

Outputs (text and ``-y C``) follow iperf 2.0.13's formats (formats/iperf2.py).

iperf 2 has no control connection: a TCP client connects and writes for
``-t`` seconds, the server reports each connection. bufferlab runs both ends
on the engine's iperf3 applications (app/iperf3*.rs), whose streams, interval
counters and UDP receiver statistics are what iperf 2 reports. Deviations
this brings:

* the wire also carries iperf3's short control connection (a few hundred
  bytes and a round trip or two before the data starts);
* a server serves one test at a time (iperf 2 serves clients concurrently),
  and prints its connection reports when it stops (the settings block at once);
* the UDP client paces datagrams by its average rate (iperf3's throttle
  with the timer at every send-loop pass) rather than iperf 2's Kalman-adjusted
  inter-packet gap; the server report comes from the engine's receiver
  statistics (no FIN/ack exchange);
* a server never prints ``[SUM]`` lines for a client's ``-P`` streams;
* a TCP server stops counting when the client's test ends (iperf3's end of
  test message), so bytes still in flight then are not in its report.

``-b`` without ``-u`` (TCP rate limiting), ``-u`` with ``-P``, server-side
``-t``/``-n``/``-b``/``-l``/``-P``, and every other iperf 2 option are refused
as not supported yet.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from bufferlab.errors import CommandError, NotSupportedError

from ._common import Resolver, check_host
from ._getopt import Getopt, Opt, OptSpec
from .shell import Word

__all__ = ["IperfServer", "IperfClient", "parse_iperf", "byte_atof"]

DEFAULT_PORT = 5001
DEFAULT_DURATION = 10.0
DEFAULT_TCP_LEN = 128 * 1024
DEFAULT_UDP_LEN = 1470
DEFAULT_UDP_RATE = 1024 * 1024
NS_PER_S = 1_000_000_000
#: interval the engine's iperf3 apps count in when ``-i`` is not given (not printed)
UNREPORTED_INTERVAL_NS = NS_PER_S
MAX_PARALLEL = 128


@dataclass(frozen=True, kw_only=True)
class IperfServer:
    udp: bool = False  # -u
    port: int = DEFAULT_PORT  # -p
    interval_s: float = 0.0  # -i; 0 = final reports only
    window: int | None = None  # -w (bytes)
    csv: bool = False  # -y C

    def to_request(self, host_tcp: dict[str, Any]) -> dict[str, Any]:
        """The engine's ``iperf3_server`` request (docs/internals.md)."""
        tcp = dict(host_tcp)
        if self.window:
            tcp["sndbuf"] = tcp["rcvbuf"] = self.window
        return {
            "kind": "iperf3_server",
            "port": self.port,
            "one_off": False,
            "interval_ns": _interval_ns(self.interval_s),
            "tcp": tcp,
        }


@dataclass(frozen=True, kw_only=True)
class IperfClient:
    host: str  # -c, an IPv4 literal
    udp: bool = False  # -u
    port: int = DEFAULT_PORT  # -p
    duration_s: float = DEFAULT_DURATION  # -t
    bytes: int | None = None  # -n (instead of -t)
    interval_s: float = 0.0  # -i; 0 = final report only
    window: int | None = None  # -w (bytes)
    rate_bps: int = DEFAULT_UDP_RATE  # -b (UDP)
    length: int = DEFAULT_TCP_LEN  # -l, or the protocol's default
    parallel: int = 1  # -P
    csv: bool = False  # -y C

    @property
    def duration_ns(self) -> int:
        return 0 if self.bytes is not None else round(self.duration_s * NS_PER_S)

    def to_request(self, host_tcp: dict[str, Any], send_loop_ns: int) -> dict[str, Any]:
        """The engine's ``iperf3_client`` request. The window is set on the
        client's own sockets only (``"window": 0``): an iperf 2 server never
        learns the client's ``-w``."""
        request: dict[str, Any] = {
            "kind": "iperf3_client",
            "dst": self.host,
            "port": self.port,
            "protocol": "udp" if self.udp else "tcp",
            "rate_bps": self.rate_bps if self.udp else 0,
            "blksize": self.length,
            "duration_ns": self.duration_ns,
            "bytes": self.bytes,
            "omit_ns": 0,
            "interval_ns": _interval_ns(self.interval_s),
            "tos": 0,
        }
        if self.udp:
            # iperf 2 paces each datagram to its own departure time (no burst, no timer slack)
            request["pacing"] = {"timer_us": 0, "burst": 0, "send_ns": send_loop_ns, "slack_ns": 0}
            return request
        tcp = dict(host_tcp)
        if self.window:
            tcp["sndbuf"] = tcp["rcvbuf"] = self.window
        request.update(parallel=self.parallel, window=0, reverse=False, tcp=tcp)
        return request


def _interval_ns(interval_s: float) -> int:
    return round(interval_s * NS_PER_S) if interval_s > 0 else UNREPORTED_INTERVAL_NS


_SPECS = [
    OptSpec("s", "s", ("server",)),
    OptSpec("c", "c", ("client",), arg=True),
    OptSpec("u", "u", ("udp",)),
    OptSpec("p", "p", ("port",), arg=True),
    OptSpec("i", "i", ("interval",), arg=True),
    OptSpec("w", "w", ("window",), arg=True),
    OptSpec("y", "y", ("reportstyle",), arg=True),
    OptSpec("t", "t", ("time",), arg=True),
    OptSpec("n", "n", ("num",), arg=True),
    OptSpec("b", "b", ("bandwidth",), arg=True),
    OptSpec("l", "l", ("len",), arg=True),
    OptSpec("P", "P", ("parallel",), arg=True),
    # real iperf 2.0.13 options, parsed only to refuse them clearly
    OptSpec("1", "1", ("singleclient",)),
    OptSpec("d", "d", ("dualtest",)),
    OptSpec("e", "e", ("enhancedreports",)),
    OptSpec("f", "f", ("format",), arg=True),
    OptSpec("h", "h", ("help",)),
    OptSpec("m", "m", ("print_mss",)),
    OptSpec("o", "o", ("output",), arg=True),
    OptSpec("r", "r", ("tradeoff",)),
    OptSpec("v", "v", ("version",)),
    OptSpec("x", "x", ("reportexclude",), arg=True),
    OptSpec("z", "z", ("realtime",)),
    OptSpec("B", "B", ("bind",), arg=True),
    OptSpec("C", "C", ("compatibility",)),
    OptSpec("D", "D", ("daemon",)),
    OptSpec("F", "F", ("fileinput",), arg=True),
    OptSpec("I", "I", ("stdin",)),
    OptSpec("L", "L", ("listenport",), arg=True),
    OptSpec("M", "M", ("mss",), arg=True),
    OptSpec("N", "N", ("nodelay",)),
    OptSpec("R", "R", ("remove",)),
    OptSpec("S", "S", ("tos",), arg=True),
    OptSpec("T", "T", ("ttl",), arg=True),
    OptSpec("U", "U", ("single_udp",)),
    OptSpec("V", "V", ("ipv6_domain",)),
    OptSpec("Z", "Z", ("linux-congestion",), arg=True),
]
_SUPPORTED = {"s", "c", "u", "p", "i", "w", "y", "t", "n", "b", "l", "P"}
#: real iperf 2.0.13 options bufferlab parses only to refuse them
_UNSUPPORTED = {s.key for s in _SPECS} - _SUPPORTED
_CLIENT_ONLY = {"t", "n", "b", "l", "P"}
_SUPPORTED_TEXT = (
    "server: -s [-u] [-w SIZE] [-p PORT] [-i SEC] [-y C]; "
    "client: -c HOST [-t SEC | -n BYTES] [-i SEC] [-w SIZE] [-u [-b RATE]] [-P N] [-l LEN] [-p PORT] [-y C]"
)

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "K": 2.0**10, "M": 2.0**20, "G": 2.0**30}


def byte_atof(text: str, col: int, spelled: str, what: str) -> float:
    """iperf 2's ``byte_atof``: a number and an optional k/m/g (10³) or K/M/G (2¹⁰)
    letter. iperf ignores anything after the letter and reads a bad number as 0;
    both are errors here."""
    m = _NUMBER.match(text)
    rest = text[m.end() :] if m else text
    if m is None or (rest and (len(rest) != 1 or rest not in _SUFFIX)):
        raise CommandError(
            f"iperf: invalid {what} {text!r} for {spelled}",
            col=col,
            expected=f"{spelled} N[kmgKMG] (k/m/g ×1000, K/M/G ×1024)",
            suggestion=f"write {m.group(0)}{rest[0]}" if m and rest[:1] in _SUFFIX else None,
        )
    return float(m.group(0)) * _SUFFIX.get(rest, 1.0)


def _value(o: Opt) -> Word:
    assert o.value is not None
    return o.value


def _positive_int(o: Opt, what: str, low: int, high: int) -> int:
    w = _value(o)
    if not re.fullmatch(r"\d+", w.text) or not low <= int(w.text) <= high:
        raise CommandError(
            f"iperf: invalid {what} {w.text!r} for {o.spelled}",
            col=w.col,
            expected=f"{o.spelled} N, a whole number from {low} to {high}",
        )
    return int(w.text)


def _seconds(o: Opt, what: str) -> float:
    w = _value(o)
    m = _NUMBER.fullmatch(w.text)
    value = float(w.text) if m else math.nan
    if not math.isfinite(value) or value < 0:
        raise CommandError(
            f"iperf: invalid {what} {w.text!r} for {o.spelled}",
            col=w.col,
            expected=f"{o.spelled} SECONDS (a non-negative number, e.g. 10 or 0.5)",
        )
    return value


def _amount(o: Opt, what: str, minimum: int = 1) -> int:
    w = _value(o)
    amount = byte_atof(w.text, w.col, o.spelled, what)
    if not math.isfinite(amount) or amount >= 2**63:
        raise CommandError(f"iperf: {what} {w.text!r} for {o.spelled} is too large", col=w.col,
                           expected=f"{o.spelled} N[kmgKMG] below 2^63")
    value = int(amount)
    if value < minimum:
        raise CommandError(
            f"iperf: {what} {w.text!r} for {o.spelled} is below {minimum}",
            col=w.col,
            expected=f"{o.spelled} N[kmgKMG] of at least {minimum}",
        )
    return value


def parse_iperf(words: list[Word], resolve: Resolver | None = None) -> IperfServer | IperfClient:
    """Parse ``iperf ...`` (``words[0]`` is ``iperf``); ``resolve`` maps a Mininet
    host name to its address for the error about ``-c h2``."""
    getopt = Getopt("iperf", _SPECS, expected="supported options: " + _SUPPORTED_TEXT)
    opts, operands = getopt.parse(words[1:])
    if operands:
        raise CommandError(
            f"iperf: unexpected argument {operands[0].text!r}",
            col=operands[0].col,
            expected="options only: " + _SUPPORTED_TEXT,
            suggestion="a host goes after -c (iperf -c 10.0.0.2)",
        )
    for o in opts:
        if o.key in _UNSUPPORTED:
            raise NotSupportedError(
                f"iperf {o.spelled} is not supported yet",
                col=o.col,
                expected="supported options: " + _SUPPORTED_TEXT,
            )
    roles = [o for o in opts if o.key in ("s", "c")]
    if not roles:
        raise CommandError(
            "iperf: one of -s or -c must be given",
            col=words[0].col,
            expected="iperf -s (server) or iperf -c HOST (client)",
            suggestion="e.g. h2: iperf -s &   then   h1: iperf -c 10.0.0.2 -t 10",
        )
    if len({o.key for o in roles}) > 1:
        raise CommandError(
            "iperf: cannot be both server (-s) and client (-c)",
            col=roles[-1].col,
            expected="iperf -s or iperf -c HOST",
        )
    server = roles[-1].key == "s"
    fields: dict[str, Any] = {}
    length: int | None = None
    for o in opts:
        k = o.key
        if server and k in _CLIENT_ONLY:
            raise NotSupportedError(
                f"iperf -s with {o.spelled} is not supported yet",
                col=o.col,
                expected="server options: -s [-u] [-w SIZE] [-p PORT] [-i SEC] [-y C]",
            )
        if k == "u":
            fields["udp"] = True
        elif k == "p":
            fields["port"] = _positive_int(o, "port", 1, 65535)
        elif k == "i":
            fields["interval_s"] = _interval(o)
        elif k == "w":
            fields["window"] = _amount(o, "window size")
        elif k == "y":
            if _value(o).text.upper() != "C":
                raise NotSupportedError(
                    f"iperf -y {_value(o).text} is not supported yet",
                    col=_value(o).col,
                    expected="-y C (comma-separated values)",
                )
            fields["csv"] = True
        elif k == "t":
            fields["duration_s"] = _seconds(o, "time")
            fields.pop("bytes", None)
        elif k == "n":
            fields["bytes"] = _amount(o, "byte count")
        elif k == "b":
            fields["rate_bps"] = _amount(o, "bandwidth")
            rate_opt = o
        elif k == "l":
            length = _amount(o, "buffer length")
            length_opt = o
        elif k == "P":
            fields["parallel"] = _positive_int(o, "parallel count", 1, MAX_PARALLEL)
    if server:
        return IperfServer(**fields)
    udp = fields.get("udp", False)
    if "rate_bps" in fields and not udp:
        raise NotSupportedError(
            "iperf -b without -u (TCP rate limiting) is not supported yet",
            col=rate_opt.col,
            expected="-u -b RATE for a UDP test; TCP runs unlimited",
        )
    if udp and fields.get("parallel", 1) > 1:
        raise NotSupportedError(
            "iperf -u with -P is not supported yet",
            col=next(o.col for o in opts if o.key == "P"),
            expected="one UDP stream per client; start several clients instead",
        )
    if udp and length is not None and not 16 <= length <= 65507:
        raise CommandError(
            f"iperf: datagram length {length} out of range for -l",
            col=length_opt.col,
            expected="-l BYTES from 16 to 65507 for UDP",
        )
    if "bytes" not in fields and fields.get("duration_s", DEFAULT_DURATION) == 0:
        raise NotSupportedError(
            "iperf -t 0 is not supported yet",
            col=next(o.col for o in opts if o.key == "t"),
            expected="-t SECONDS greater than 0",
        )
    fields["length"] = length or (DEFAULT_UDP_LEN if udp else DEFAULT_TCP_LEN)
    host_word = _value(roles[-1])
    host = check_host(host_word, "iperf", resolve, f"iperf: {host_word.text!r} is not an IPv4 address")
    return IperfClient(host=host, **fields)


def _interval(o: Opt) -> float:
    value = _seconds(o, "interval")
    if 0 < value < 0.005:
        raise NotSupportedError(
            f"iperf -i {_value(o).text} (below 5 ms) is not supported yet",
            col=_value(o).col,
            expected="-i SECONDS of at least 0.005",
        )
    return value
