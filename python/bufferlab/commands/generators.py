"""bufferlab's own traffic generators (docs/internals.md "Commands"), ns-3 style.

* ``cbr -c DEST -u -r RATE [-l SIZE] [-t T] [-n BYTES] [-p PORT] [-S TOS]``
  -- constant bit rate, evenly spaced datagrams;
* ``poisson`` -- same options, exponential gaps with the same mean rate;
* ``onoff -c DEST -u -r RATE [--on T] [--off T] [-l SIZE] [-t T] [-n BYTES] [-p PORT] [-S TOS]``
  -- like ns-3 ``src/applications/model/onoff-application.cc``
  (``OnOffApplication``): sends at RATE during ON periods, silent during OFF;
* ``sink [-p PORT] [-u]`` -- counts bytes (like ns-3 ``PacketSink``);
* ``bulk -c DEST [-p PORT] [-n BYTES] [-t T] [-C CC] [-P N]`` -- TCP bulk send (like
  ns-3 ``BulkSendApplication``); ``-P N`` opens N connections at once (iperf3's
  ``-P`` without its 128 cap; at most 20 000, what one host's ephemeral ports
  allow), sharing ``-n`` as iperf3's parallel streams do.

Decisions (documented defaults):

* ``--on``/``--off`` default to 1 s each: ns-3 OnOffApplication's ``OnTime``
  and ``OffTime`` default to ``ConstantRandomVariable[Constant=1.0]``;
* port 5001 (iperf2's default, distinct from iperf3's 5201 so a generator and
  an ``iperf3 -s`` can share a host);
* ``-l`` 1448 bytes of UDP payload (what iperf3 ≥ 3.2 sends on a 1500-byte
  MTU path: a 1476-byte IP packet);
* RATE is bits/s and accepts iperf3 style (``10M``, ``900k``, ``0.9m``,
  ``1G``; k/m/g/t = 10³/10⁶/10⁹/10¹², case-insensitive) or tc style bit
  units (``10mbit``, ``500kbit``, ``1gbit``, ``2mibit``); tc's byte units
  (``mbps`` = megabytes/s) are refused to avoid the bits/bytes trap;
* sizes (``-l``, ``-n``) are bytes with iperf3's K/M/G = ×1024;
* durations (``-t``, ``--on``, ``--off``) by :func:`bufferlab.units.parse_duration_ns`
  (``1``, ``0.5``, ``2s``, ``500ms``, ``1m``);
* ``-t`` and ``-n`` may both be given: the source stops at whichever comes
  first; neither = runs until the part ends (interrupted like ``iperf3 -s``);
* ``-S TOS`` reads like iperf3 (``strtol(.., 0)``: ``0x32``, ``050``, ``50``);
* ``--jitter T`` (cbr, poisson, onoff; default 0) delays each datagram's
  departure by a uniform draw in [0, T] from the source's own random stream,
  without changing the nominal instants or the mean rate; a datagram never
  leaves before its predecessor, so jitter does not reorder a flow
  (crates/bufferlab-core/src/app/udp_source.rs).

``bulk`` and a ``sink`` without ``-u`` are TCP; their socket settings (the
host's sysctls, ``-C``) are added by the runner. :func:`ensure_supported`
refuses only the UDP generators without ``-u``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from bufferlab.units import parse_duration_ns, parse_iperf_rate, parse_iperf_size, parse_rate_bits

from ._common import Resolver, c_strtol, check_host, port_value, prog_value, tos_value
from ._getopt import Getopt, Opt, OptSpec
from .shell import Word

__all__ = [
    "UdpSourceCommand",
    "SinkCommand",
    "BulkCommand",
    "GeneratorCommand",
    "GENERATORS",
    "parse_generator",
    "parse_generator_rate",
    "ensure_supported",
    "engine_spec",
    "is_endless",
    "report_text",
]

DEFAULT_PORT = 5001
DEFAULT_SIZE = 1448
DEFAULT_ON_NS = 1_000_000_000
DEFAULT_OFF_NS = 1_000_000_000
MAX_UDP_PAYLOAD = 65507
#: bulk -P: the engine's cap (app/bulk.rs MAX_PARALLEL), below one host's 28 232 ephemeral ports
MAX_PARALLEL = 20_000

GENERATORS = ("cbr", "poisson", "onoff", "sink", "bulk")


@dataclass
class UdpSourceCommand:
    pattern: str  # "cbr" | "poisson" | "onoff"
    dest: str
    dest_col: int
    rate_bps: int
    protocol: str = "udp"  # "tcp" when -u is missing (refused by ensure_supported)
    port: int = DEFAULT_PORT
    size: int = DEFAULT_SIZE  # UDP payload bytes
    duration_ns: int | None = None
    bytes: int | None = None
    on_ns: int = DEFAULT_ON_NS  # onoff only
    off_ns: int = DEFAULT_OFF_NS  # onoff only
    tos: int = 0
    #: "fixed" or "exponential" (mean = size): exponential service times for M/M/1 experiments
    size_dist: str = "fixed"
    #: --jitter: largest extra departure delay per datagram, ns (uniform in [0, jitter])
    jitter_ns: int = 0
    words_col: int = 0

    def to_spec(self, dst_ip: str | None = None) -> dict[str, Any]:
        """The engine's ``udp_source`` spec (docs/internals.md)."""
        spec: dict[str, Any] = {
            "kind": "udp_source",
            "pattern": self.pattern,
            "dst": dst_ip or self.dest,
            "port": self.port,
            "rate_bps": self.rate_bps,
            "size": self.size,
            "duration_ns": self.duration_ns,
            "bytes": self.bytes,
            "on_ns": self.on_ns,
            "off_ns": self.off_ns,
            "tos": self.tos,
            "size_dist": self.size_dist,
        }
        if self.jitter_ns:
            spec["jitter_ns"] = self.jitter_ns
        return spec


@dataclass
class SinkCommand:
    port: int = DEFAULT_PORT
    proto: str = "tcp"  # "udp" with -u
    words_col: int = 0

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "sink", "port": self.port, "proto": self.proto}


@dataclass
class BulkCommand:
    dest: str
    dest_col: int
    port: int = DEFAULT_PORT
    bytes: int | None = None  # None = unlimited
    duration_ns: int | None = None
    congestion: str | None = None  # -C
    parallel: int = 1  # -P
    words_col: int = 0


GeneratorCommand = UdpSourceCommand | SinkCommand | BulkCommand

_RATE_EXPECTED = "a rate in bits/s: 10M, 900k, 0.9m, 1G (iperf style) or 10mbit, 500kbit (tc style)"
_IPERF_STYLE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?[kKmMgGtT]?")


def parse_generator_rate(text: str, col: int | None = None) -> int:
    """Generator RATE -> bits/s (see module docstring)."""
    if _IPERF_STYLE.fullmatch(text):
        return parse_iperf_rate(text, col)
    if text.lower().endswith("bps"):
        raise CommandError(
            f'invalid rate "{text}": byte units are not accepted here',
            col=col,
            expected=_RATE_EXPECTED,
            suggestion=f"write bits/s, e.g. {text[:-3]}bit (tc reads '{text[-4:]}' as bytes per second)",
        )
    try:
        return parse_rate_bits(text, col)
    except CommandError as err:
        raise CommandError(
            err.message, col=col, expected=_RATE_EXPECTED, suggestion="e.g. -r 10M or -r 10mbit"
        ) from None


_COMMON = [
    OptSpec("c", "c", ("client",), arg=True),
    OptSpec("u", "u", ("udp",)),
    OptSpec("p", "p", ("port",), arg=True),
    OptSpec("t", "t", ("time",), arg=True),
    OptSpec("n", "n", ("bytes",), arg=True),
]
_SPECS: dict[str, list[OptSpec]] = {
    "cbr": _COMMON
    + [
        OptSpec("r", "r", ("rate",), arg=True),
        OptSpec("l", "l", ("length",), arg=True),
        OptSpec("S", "S", ("tos",), arg=True),
        OptSpec("size-dist", None, ("size-dist",), arg=True),
        OptSpec("jitter", None, ("jitter",), arg=True),
    ],
    "sink": [OptSpec("p", "p", ("port",), arg=True), OptSpec("u", "u", ("udp",))],
    "bulk": [
        OptSpec("c", "c", ("client",), arg=True),
        OptSpec("p", "p", ("port",), arg=True),
        OptSpec("t", "t", ("time",), arg=True),
        OptSpec("n", "n", ("bytes",), arg=True),
        OptSpec("C", "C", ("congestion",), arg=True),
        OptSpec("P", "P", ("parallel",), arg=True),
    ],
}
_SPECS["poisson"] = _SPECS["cbr"]
_SPECS["onoff"] = _SPECS["cbr"] + [
    OptSpec("on", None, ("on",), arg=True),
    OptSpec("off", None, ("off",), arg=True),
]

_USAGE = {
    "cbr": "cbr -c DEST -u -r RATE [-l SIZE] [--size-dist fixed|exp] [-t T] [-n BYTES] [-p PORT] "
    "[-S TOS] [--jitter T]",
    "poisson": "poisson -c DEST -u -r RATE [-l SIZE] [--size-dist fixed|exp] [-t T] [-n BYTES] "
    "[-p PORT] [-S TOS] [--jitter T]",
    "onoff": "onoff -c DEST -u -r RATE [--on T] [--off T] [-l SIZE] [--size-dist fixed|exp] [-t T] "
    "[-n BYTES] [-p PORT] [-S TOS] [--jitter T]",
    "sink": "sink [-p PORT] [-u]",
    "bulk": "bulk -c DEST [-p PORT] [-n BYTES] [-t T] [-C CC] [-P N]",
}


def _value(o: Opt) -> Word:
    assert o.value is not None
    return o.value


def parse_generator(
    words: list[Word],
    diag: Diagnostics,
    resolve: Resolver | None = None,
) -> GeneratorCommand:
    """Parse ``cbr``/``poisson``/``onoff``/``sink``/``bulk`` (``words[0]`` is the name)."""
    prog = words[0].text
    if prog not in _SPECS:
        raise CommandError(
            f"{prog}: not a traffic generator", col=words[0].col, expected="one of " + ", ".join(GENERATORS)
        )
    usage = _USAGE[prog]
    opts, operands = Getopt(prog, _SPECS[prog], expected=usage).parse(words[1:])
    if operands:
        raise CommandError(
            f"{prog}: unexpected argument {operands[0].text!r}",
            col=operands[0].col,
            expected=usage,
            suggestion="the destination goes after -c",
        )
    vals: dict[str, Opt] = {}
    for o in opts:
        vals[o.key] = o  # last one wins, as with getopt-based tools

    port = port_value(prog, _value(vals["p"])) if "p" in vals else DEFAULT_PORT
    if prog == "sink":
        return SinkCommand(port=port, proto="udp" if "u" in vals else "tcp", words_col=words[0].col)

    if "c" not in vals:
        raise CommandError(f"{prog}: -c DEST is required", col=words[0].col, expected=usage)
    dest_w = _value(vals["c"])
    check_host(dest_w, prog, resolve, f"{prog}: {dest_w.text}: Name or service not known")
    duration = prog_value(prog, parse_duration_ns, _value(vals["t"])) if "t" in vals else None
    nbytes = prog_value(prog, parse_iperf_size, _value(vals["n"])) if "n" in vals else None
    if nbytes == 0:
        raise CommandError(f"{prog}: -n must be at least 1 byte", col=_value(vals["n"]).col, expected=usage)
    if duration == 0:
        raise CommandError(f"{prog}: -t must be longer than 0", col=_value(vals["t"]).col, expected=usage)

    if prog == "bulk":
        parallel = 1
        if "P" in vals:
            pw = _value(vals["P"])
            v, rest = c_strtol(pw.text, 10)
            if v is None or rest or not 1 <= v <= MAX_PARALLEL:
                raise CommandError(f"bulk: invalid number of connections {pw.text!r}", col=pw.col,
                                   expected=f"-P N between 1 and {MAX_PARALLEL}")
            parallel = v
        return BulkCommand(
            dest=dest_w.text,
            dest_col=dest_w.col,
            port=port,
            bytes=nbytes,
            duration_ns=duration,
            congestion=_value(vals["C"]).text if "C" in vals else None,
            parallel=parallel,
            words_col=words[0].col,
        )

    if "r" not in vals:
        raise CommandError(
            f"{prog}: -r RATE is required",
            col=words[0].col,
            expected=usage,
            suggestion=f"e.g. {prog} -c {dest_w.text} -u -r 1M",
        )
    rate_w = _value(vals["r"])
    rate = prog_value(prog, parse_generator_rate, rate_w)
    if rate <= 0:
        raise CommandError(f"{prog}: the rate must be above 0", col=rate_w.col, expected=_RATE_EXPECTED)
    size = DEFAULT_SIZE
    if "l" in vals:
        size_w = _value(vals["l"])
        size = prog_value(prog, parse_iperf_size, size_w)
        if not 1 <= size <= MAX_UDP_PAYLOAD:
            raise CommandError(
                f"{prog}: invalid datagram size {size}",
                col=size_w.col,
                expected=f"-l SIZE between 1 and {MAX_UDP_PAYLOAD} bytes",
            )
    if "u" in vals and size * 8 * 1_000_000_000 < rate:
        # the engine's clock counts whole nanoseconds (udp_source.rs): faster, every datagram
        # of a nanosecond is sent at one instant, without end (no host could send them anyway)
        raise CommandError(
            f"{prog}: -r {rate_w.text} sends a {size}-byte datagram every "
            f"{size * 8 * 1e9 / rate:.3g} ns; simulated time advances in whole nanoseconds",
            col=rate_w.col,
            expected=f"at most one datagram per nanosecond: -r up to {size * 8} Gbit/s for {size}-byte "
            "datagrams (a host's stack sends a few hundred thousand per second)",
            suggestion="a rate in bits/s such as 100M or 10G, or larger datagrams with -l",
        )
    tos = tos_value(prog, _value(vals["S"])) if "S" in vals else 0
    size_dist = "fixed"
    if "size-dist" in vals:
        dw = _value(vals["size-dist"])
        choices = {"fixed": "fixed", "exp": "exponential", "exponential": "exponential"}
        if dw.text not in choices:
            raise CommandError(f"{prog}: unknown size distribution {dw.text!r}", col=dw.col,
                               expected="--size-dist fixed|exp")
        size_dist = choices[dw.text]
    jitter_ns = prog_value(prog, parse_duration_ns, _value(vals["jitter"])) if "jitter" in vals else 0
    on_ns, off_ns = DEFAULT_ON_NS, DEFAULT_OFF_NS
    if "on" in vals:
        on_ns = prog_value(prog, parse_duration_ns, _value(vals["on"]))
    if "off" in vals:
        off_ns = prog_value(prog, parse_duration_ns, _value(vals["off"]))
    if prog == "onoff" and on_ns == 0:
        raise CommandError(f"{prog}: --on must be longer than 0", col=_value(vals["on"]).col, expected=usage)
    return UdpSourceCommand(
        pattern=prog,
        dest=dest_w.text,
        dest_col=dest_w.col,
        rate_bps=rate,
        protocol="udp" if "u" in vals else "tcp",
        port=port,
        size=size,
        duration_ns=duration,
        bytes=nbytes,
        on_ns=on_ns,
        off_ns=off_ns,
        tos=tos,
        size_dist=size_dist,
        jitter_ns=jitter_ns,
        words_col=words[0].col,
    )


def ensure_supported(cmd: GeneratorCommand) -> None:
    """Refuse what parses but the engine cannot run yet (call before starting)."""
    if isinstance(cmd, UdpSourceCommand) and cmd.protocol == "tcp":
        raise NotSupportedError(
            f"{cmd.pattern} sends UDP only; add -u (use bulk for a TCP transfer)",
            col=cmd.words_col,
            expected=_USAGE[cmd.pattern],
        )


def engine_spec(cmd: GeneratorCommand) -> dict[str, Any]:
    """The engine app spec (docs/internals.md); refuses unsupported commands first.
    TCP specs (bulk, sink without -u) get their socket settings (``tcp``) from the caller."""
    ensure_supported(cmd)
    if isinstance(cmd, BulkCommand):
        spec: dict[str, Any] = {"kind": "bulk", "dst": cmd.dest, "port": cmd.port, "bytes": cmd.bytes,
                "duration_ns": cmd.duration_ns}
        if cmd.parallel > 1:
            spec["parallel"] = cmd.parallel
        return spec
    return cmd.to_spec()


def is_endless(cmd: GeneratorCommand) -> bool:
    """True if the command runs until interrupted (the part's end)."""
    if isinstance(cmd, SinkCommand):
        return True
    return cmd.duration_ns is None and cmd.bytes is None


def _secs(ns: int) -> str:
    return f"{ns / 1e9:.3f}"


def report_text(cmd: GeneratorCommand, result: dict[str, Any]) -> str:
    """The one summary line a generator prints when it ends (bufferlab's own format).

    source: ``cbr: sent 1036 packets, 1500128 bytes to 10.0.0.7:5001 in 15.000 s (800068 bit/s)``
    bulk:   ``bulk: sent 1000000 bytes (1000000 acknowledged, 3 retransmitted segments) to
    10.0.0.8:5001 in 9.212 s (868432 bit/s, cubic)`` or ``bulk: connect: Connection refused``
    sink:   ``sink: received 1036 packets, 1500128 bytes on udp port 5001 in 15.000 s:
    goodput 800068 bit/s`` -- goodput = payload bits received / the sink's lifetime.
    """
    elapsed = max(0, int(result.get("end_ns", 0)) - int(result.get("start_ns", 0)))
    nbytes = int(result.get("bytes", 0))
    packets = int(result.get("packets", 0))
    rate = int(nbytes * 8 * 1e9 / elapsed) if elapsed else 0
    if isinstance(cmd, SinkCommand):
        return (
            f"sink: received {packets} packets, {nbytes} bytes on {cmd.proto} port {cmd.port} "
            f"in {_secs(elapsed)} s: goodput {rate} bit/s\n"
        )
    if isinstance(cmd, BulkCommand):
        if result.get("refused"):
            return "bulk: connect: Connection refused\n"
        conns = f" over {cmd.parallel} connections" if cmd.parallel > 1 else ""
        return (
            f"bulk: sent {nbytes} bytes{conns} ({int(result.get('acked', 0))} acknowledged, "
            f"{int(result.get('retransmits', 0))} retransmitted segments) to {cmd.dest}:{cmd.port} "
            f"in {_secs(elapsed)} s ({rate} bit/s, {result.get('congestion', '')})\n"
        )
    return (
        f"{cmd.pattern}: sent {packets} packets, {nbytes} bytes to {cmd.dest}:{cmd.port} "
        f"in {_secs(elapsed)} s ({rate} bit/s)\n"
    )
