"""``iperf3`` command lines (server ``-s`` and client ``-c HOST``).

Mirrors iperf3 ``src/iperf_api.c`` ``iperf_parse_arguments`` (3.7 behaviour,
with the 3.0.x/3.1 differences of docs/semantics/formats.md §1.1 behind the profile's
``iperf3_version``), ``src/units.c`` and ``src/iperf_error.c`` texts:

* ``getopt_long`` with options and operands interleaved; long options by
  unique prefix; the 3.7 option set (``--bitrate``/``--bandwidth``, ...);
* per-option checks in source order: ``-p`` 1..65535, ``-i`` 0 or 0.1..60,
  ``-t`` ≤ 86400, ``-P`` ≤ 128, ``-w`` ≤ 512 MiB, ``-S`` via ``strtol(.., 0)``
  in 0..255, ``-O`` 0..60, ``-b RATE[/BURST]`` (BURST 1..1000),
  ``--pacing-timer`` (3.2+; ``unit_atoi`` with no range check, so 0 and
  negative values are accepted: the timer is then due on every loop pass);
* then role checks (``some option you are trying to set is client only`` /
  ``... server only``), block size limits, the test-end-condition rule
  (``-t`` with ``-n`` is iperf3's own error ``only one test end condition
  (-t, -n, -k) may be specified``), and last the missing-role error.

Messages are iperf3's ``parameter error - <iperf_strerror text>``.

Defaults: port 5201; ``-t`` 10 s; UDP rate 1 048 576 bit/s (``UDP_RATE``);
UDP block size 1448 (3.2+: the control connection's MSS on a 1500-byte MTU)
or 8192 (3.0.x/3.1); TCP block size 131072; pacing timer 1000 µs (3.2+) or a
fixed 100 000 µs (3.0.x/3.1, ``iperf_create_send_timers``). How the engine
paces with them: ``Throttle`` in crates/bufferlab-core/src/app/iperf3.rs.

The handouts' ``-0 10`` typo is read as ``-O 10`` with a warning. TCP clients
parse fully; :func:`ensure_supported` is what refuses them (until the TCP
model lands).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from bufferlab.profile import Profile
from bufferlab.units import parse_iperf_rate, parse_iperf_size, strtod_prefix

from ._common import Resolver, c_strtol, check_host
from ._getopt import Getopt, Opt, OptSpec
from .shell import Word

__all__ = ["Iperf3Server", "Iperf3Client", "parse_iperf3", "ensure_supported"]

DEFAULT_PORT = 5201
DEFAULT_DURATION = 10
UDP_RATE = 1024 * 1024
DEFAULT_TCP_BLKSIZE = 128 * 1024
MAX_TIME = 86400
MAX_STREAMS = 128
MAX_BURST = 1000
MAX_BLOCKSIZE = 1024 * 1024
MIN_UDP_BLOCKSIZE = 4 + 4 + 8
MAX_UDP_BLOCKSIZE = 65535 - 8 - 20
MAX_TCP_BUFFER = 512 * 1024 * 1024
MIN_INTERVAL = 0.1
MAX_INTERVAL = 60.0
#: --pacing-timer default in µs (3.2+) and the fixed timer of 3.0.x/3.1
DEFAULT_PACING_TIMER = 1000
OLD_PACING_TIMER = 100_000
MAX_INT = 2**31 - 1
NS_PER_S = 1_000_000_000
#: how late Linux may wake a normal task from select(): the default
#: timer_slack_ns (fs/select.c select_estimate_accuracy), in ns
TIMER_SLACK_NS = 50_000


def default_udp_blksize(profile: Profile) -> int:
    """3.2+: the control connection's MSS (1448 on Mininet); before: 8192."""
    return 1448 if profile.iperf3_at_least(3, 2) else 8192


def default_pacing_timer(profile: Profile) -> int:
    """3.2+: ``--pacing-timer`` defaults to 1000 µs; before, the timer is a fixed 0.1 s."""
    return DEFAULT_PACING_TIMER if profile.iperf3_at_least(3, 2) else OLD_PACING_TIMER


@dataclass
class Iperf3Server:
    port: int = DEFAULT_PORT
    one_off: bool = False  # -1
    daemon: bool = False  # -D
    interval_s: float = 1.0  # -i (0 = no interval reports)
    json: bool = False  # -J
    verbose: bool = False  # -V
    logfile: str | None = None
    format: str | None = None  # -f letter
    debug: bool = False


def _sent_as(key: str) -> Any:
    """A field the engine receives, as ``key`` of the ``iperf3_client`` request."""
    return field(metadata={"request": key})


@dataclass(frozen=True, kw_only=True)
class Iperf3Client:
    """An iperf3 client's configuration, as ``iperf_parse_arguments`` leaves
    ``struct iperf_test`` (src/iperf.h): the one model of it. The parser fills
    every field (iperf3's defaults are applied there only), :meth:`to_request`
    is the engine's request (app/iperf3.rs ``ClientSpec``; each field that
    feeds it names its key, tests/test_iperf3_model.py holds them to the
    schema), and formats/iperf3/ echoes it in the client's output
    (``connecting_to``, ``test_start``, ``target_bitrate``, ``sock_bufsize``,
    ``title``)."""

    host: str = _sent_as("dst")  # -c, as typed (an IPv4 literal)
    protocol: str = _sent_as("protocol")  # "tcp", or "udp" with -u
    port: int = _sent_as("port")  # -p
    rate_bps: int = _sent_as("rate_bps")  # -b; UDP default UDP_RATE, TCP 0 = unlimited
    burst: int = _sent_as("pacing")  # -b RATE/BURST; 0 = no burst
    pacing_timer_us: int = _sent_as("pacing")  # --pacing-timer, or the version's default
    blksize: int = _sent_as("blksize")  # -l, or the protocol's default (UDP: the payload)
    duration_s: int = _sent_as("duration_ns")  # -t; 0 = until interrupted (or -n)
    bytes: int | None = _sent_as("bytes")  # -n
    omit_s: int = _sent_as("omit_ns")  # -O
    interval_s: float = _sent_as("interval_ns")  # -i
    tos: int = _sent_as("tos")  # -S
    parallel: int = _sent_as("parallel")  # -P
    reverse: bool = _sent_as("reverse")  # -R
    window: int | None = _sent_as("window")  # -w (socket buffers, bytes)
    congestion: str | None = _sent_as("tcp")  # -C
    fq_rate_bps: int = _sent_as("tcp")  # --fq-rate, bits/s; 0 = not set
    blocks: int | None  # -k (refused by ensure_supported)
    title: str | None  # -T: the prefix of every text line, JSON ``title``
    json: bool  # -J
    logfile: str | None  # --logfile
    no_delay: bool  # -N
    zerocopy: bool  # -Z
    verbose: bool  # -V
    format: str | None  # -f letter
    udp_counters_64bit: bool  # --udp-counters-64bit
    debug: bool  # -d
    rate_given: bool
    blksize_given: bool
    pacing_timer_given: bool
    host_col: int
    words_col: int  # column of the program name

    @property
    def until_interrupted(self) -> bool:
        """``-t 0`` without ``-n``: the test runs until Ctrl-C."""
        return self.duration_s == 0 and self.bytes is None

    def to_request(self, profile: Profile, host_tcp: dict[str, Any]) -> dict[str, Any]:
        """The engine's ``iperf3_client`` request. ``host_tcp``: the socket
        settings of a new TCP socket on the client's host, to which ``-C`` and
        ``-w`` apply (``iperf_tcp_connect`` sets them per socket)."""
        request: dict[str, Any] = {
            "kind": "iperf3_client",
            "dst": self.host,
            "port": self.port,
            "protocol": self.protocol,
            "rate_bps": self.rate_bps,
            "blksize": self.blksize,
            "duration_ns": self.duration_s * NS_PER_S,  # 0 (-t 0, -n): no time limit
            "bytes": self.bytes,
            "omit_ns": self.omit_s * NS_PER_S,
            "interval_ns": round(self.interval_s * NS_PER_S),
            "tos": self.tos,
        }
        pacing = {  # app/iperf3/throttle.rs PacingSpec
            "timer_us": self.pacing_timer_us,
            "burst": self.burst,
            "send_ns": profile.iperf3_send_loop_us * 1000,
            "slack_ns": TIMER_SLACK_NS,
        }
        if self.protocol == "udp":
            request["pacing"] = pacing
            return request
        if self.rate_bps:  # -b: each stream's throttle, checked between blocks
            request["pacing"] = pacing
        tcp = dict(host_tcp)
        if self.congestion:
            tcp["congestion"] = self.congestion
        if self.window:
            tcp["sndbuf"] = tcp["rcvbuf"] = self.window
        if self.fq_rate_bps // 8:  # iperf_tcp_connect: SO_MAX_PACING_RATE in bytes/s, unless that is 0
            tcp["max_pacing_rate"] = self.fq_rate_bps // 8
        request.update(parallel=self.parallel, window=self.window or 0, reverse=self.reverse, tcp=tcp)
        return request


_SPECS = [
    OptSpec("p", "p", ("port",), arg=True),
    OptSpec("f", "f", ("format",), arg=True),
    OptSpec("i", "i", ("interval",), arg=True),
    OptSpec("D", "D", ("daemon",)),
    OptSpec("1", "1", ("one-off",)),
    OptSpec("V", "V", ("verbose",)),
    OptSpec("J", "J", ("json",)),
    OptSpec("v", "v", ("version",)),
    OptSpec("s", "s", ("server",)),
    OptSpec("c", "c", ("client",), arg=True),
    OptSpec("u", "u", ("udp",)),
    OptSpec("b", "b", ("bitrate", "bandwidth"), arg=True),
    OptSpec("t", "t", ("time",), arg=True),
    OptSpec("n", "n", ("bytes",), arg=True),
    OptSpec("k", "k", ("blockcount",), arg=True),
    OptSpec("l", "l", ("length",), arg=True),
    OptSpec("P", "P", ("parallel",), arg=True),
    OptSpec("R", "R", ("reverse",)),
    OptSpec("bidir", None, ("bidir",)),
    OptSpec("w", "w", ("window",), arg=True),
    OptSpec("B", "B", ("bind",), arg=True),
    OptSpec("cport", None, ("cport",), arg=True),
    OptSpec("M", "M", ("set-mss",), arg=True),
    OptSpec("N", "N", ("no-delay",)),
    OptSpec("4", "4", ("version4",)),
    OptSpec("6", "6", ("version6",)),
    OptSpec("S", "S", ("tos",), arg=True),
    OptSpec("dscp", None, ("dscp",), arg=True),
    OptSpec("L", "L", ("flowlabel",), arg=True),
    OptSpec("Z", "Z", ("zerocopy",)),
    OptSpec("O", "O", ("omit",), arg=True),
    OptSpec("F", "F", ("file",), arg=True),
    OptSpec("A", "A", ("affinity",), arg=True),
    OptSpec("T", "T", ("title",), arg=True),
    OptSpec("C", "C", ("congestion", "linux-congestion"), arg=True),
    OptSpec("d", "d", ("debug",)),
    OptSpec("I", "I", ("pidfile",), arg=True),
    OptSpec("logfile", None, ("logfile",), arg=True),
    OptSpec("forceflush", None, ("forceflush",)),
    OptSpec("get-server-output", None, ("get-server-output",)),
    OptSpec("udp-counters-64bit", None, ("udp-counters-64bit",)),
    OptSpec("no-fq-socket-pacing", None, ("no-fq-socket-pacing",)),
    OptSpec("fq-rate", None, ("fq-rate",), arg=True),  # 3.2+
    OptSpec("pacing-timer", None, ("pacing-timer",), arg=True),  # 3.2+
    OptSpec("h", "h", ("help",)),
]

_SUPPORTED_TEXT = (
    "-s, -c HOST, -u, -b RATE, -l LEN, -t SEC, -n BYTES, -p PORT, -S TOS, -T TITLE, -J, "
    "-i SEC, -O SEC, -P N, -R, -w SIZE, -C ALGO, -D, -1, -V, -f FMT, --logfile FILE, "
    "--pacing-timer USEC, --fq-rate RATE"
)
#: real iperf3 options bufferlab does not model (parsed only to refuse them clearly)
_UNSUPPORTED = {
    "v": "-v (version)",
    "h": "-h (help)",
    "bidir": "--bidir",
    "B": "-B (bind)",
    "cport": "--cport",
    "M": "-M (set-mss)",
    "6": "-6 (IPv6)",
    "dscp": "--dscp",
    "L": "-L (flow label)",
    "F": "-F (file)",
    "A": "-A (affinity)",
    "I": "-I (pidfile)",
    "get-server-output": "--get-server-output",
    "no-fq-socket-pacing": "--no-fq-socket-pacing",
}
_CLIENT_ONLY = {"u", "b", "t", "n", "k", "l", "P", "R", "w", "M", "N", "S", "Z", "O", "T", "C"} | {
    "pacing-timer", "fq-rate"
}
_SERVER_ONLY = {"D", "1"}


def _perr(
    text: str, col: int | None, expected: str | None = None, suggestion: str | None = None
) -> CommandError:
    return CommandError(f"parameter error - {text}", col=col, expected=expected, suggestion=suggestion)


def _atoi_strict(o: Opt, what: str) -> int:
    """``atoi`` with the silent truncations turned into errors."""
    assert o.value is not None
    v, rest = c_strtol(o.value.text, 10)
    if v is None or rest:
        hint = None
        num, _ = strtod_prefix(o.value.text)
        if num is not None and math.isfinite(num):
            hint = f"iperf3 {o.spelled} takes whole numbers; iperf3 would read {o.value.text!r} as {int(num)}"
        raise CommandError(
            f"iperf3: invalid {what} {o.value.text!r} for {o.spelled}",
            col=o.value.col,
            expected=f"{o.spelled} N (an integer)",
            suggestion=hint,
        )
    return v


def _atof(o: Opt, what: str) -> float:
    assert o.value is not None
    v, rest = strtod_prefix(o.value.text)
    if v is None or rest or not math.isfinite(v):
        raise CommandError(
            f"iperf3: invalid {what} {o.value.text!r} for {o.spelled}",
            col=o.value.col,
            expected=f"{o.spelled} SECONDS (a number)",
        )
    return v


def _pacing_timer(o: Opt, diag: Diagnostics) -> int:
    """``--pacing-timer``: iperf3 reads it with ``unit_atoi`` (a number, an
    optional k/m/g/t ×1024 letter, truncated to an int) and checks nothing."""
    assert o.value is not None
    text = o.value.text
    num, rest = strtod_prefix(text)
    mult = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}.get(rest[:1].lower(), 1) if rest else 1
    if num is None or not math.isfinite(num) or (rest and (len(rest) != 1 or mult == 1)):
        raise CommandError(
            f"iperf3: invalid pacing timer {text!r} for {o.spelled}",
            col=o.value.col,
            expected=f"{o.spelled} MICROSECONDS (an integer; default {DEFAULT_PACING_TIMER})",
            suggestion="the timer is in microseconds: 1000 is 1 ms" if rest else None,
        )
    value = num * mult
    if abs(value) > MAX_INT:
        raise CommandError(
            f"iperf3: pacing timer {text!r} out of range for {o.spelled}",
            col=o.value.col,
            expected=f"{o.spelled} MICROSECONDS up to {MAX_INT}",
        )
    if value != int(value):
        diag.warn(f"iperf3 reads the pacing timer {text!r} as {int(value)} µs", o.value.col)
    if int(value) <= 0:
        diag.warn(
            f"--pacing-timer {int(value)}: the timer is due on every pass of iperf3's loop, "
            "which then re-checks its rate continuously (a busy loop)",
            o.value.col,
        )
    return int(value)


def _unit(fn, o: Opt, **kw) -> int:  # type: ignore[no-untyped-def]
    assert o.value is not None
    try:
        return fn(o.value.text, o.value.col, **kw)
    except CommandError as err:
        raise CommandError(
            f"iperf3: {err.message} for {o.spelled}",
            col=err.col,
            expected=err.expected,
            suggestion=err.suggestion,
        ) from None


def parse_iperf3(
    words: list[Word],
    diag: Diagnostics,
    profile: Profile | None = None,
    resolve: Resolver | None = None,
) -> Iperf3Server | Iperf3Client:
    """Parse ``iperf3 ...`` (``words[0]`` is ``iperf3``).

    ``resolve`` (optional) maps a Mininet host name to its address so that
    ``-c h3`` can be answered with "h3 is 10.0.0.3".
    """
    profile = profile or Profile()
    # --pacing-timer and --fq-rate arrived in 3.2; before, getopt does not know them
    specs = _SPECS if profile.iperf3_at_least(3, 2) else [s for s in _SPECS
                                                         if s.key not in ("pacing-timer", "fq-rate")]
    getopt = Getopt(
        "iperf3",
        specs,
        expected="supported options: " + _SUPPORTED_TEXT,
        short_aliases={"0": ("O", "iperf3 has no -0 option; read as -O (omit), write -O")},
    )
    opts, operands = getopt.parse(words[1:])
    for warning, col in getopt.alias_warnings:
        diag.warn(warning, col)
    if operands:
        w = operands[0]
        raise CommandError(
            f"iperf3: unexpected argument {w.text!r}",
            col=w.col,
            expected="options only: " + _SUPPORTED_TEXT,
            suggestion="a host goes after -c (iperf3 -c 10.0.0.2)",
        )

    role: str | None = None
    host: Word | None = None
    client_flag: Opt | None = None
    server_flag: Opt | None = None
    udp = False
    port = DEFAULT_PORT
    rate: int | None = None
    burst = 0
    pacing_timer: int | None = None
    blksize = 0
    blksize_opt: Opt | None = None
    duration = DEFAULT_DURATION
    duration_given = False
    nbytes = 0
    nblocks = 0
    interval = 1.0
    tos = 0
    title = None
    json_out = verbose = debug = False
    logfile = None
    fmt = None
    parallel = 1
    reverse = False
    window: int | None = None
    congestion = None
    fq_rate = 0
    no_delay = zerocopy = counters64 = False
    omit = 0
    daemon = one_off = False

    for o in opts:
        k = o.key
        if k in _UNSUPPORTED:
            raise NotSupportedError(
                f"iperf3 {_UNSUPPORTED[k]} is not supported",
                col=o.col,
                expected="supported options: " + _SUPPORTED_TEXT,
            )
        if k in _CLIENT_ONLY and client_flag is None:
            client_flag = o
        if k in _SERVER_ONLY and server_flag is None:
            server_flag = o
        if k == "p":
            port = _atoi_strict(o, "port")
            if not 1 <= port <= 65535:
                raise _perr(
                    "port number must be between 1 and 65535 inclusive", o.value.col if o.value else o.col
                )
        elif k == "f":
            assert o.value is not None
            if not o.value.text or o.value.text[0] not in "kmgtKMGT":
                raise _perr(
                    "bad format specifier (valid formats are in the set [kmgtKMGT])",
                    o.value.col,
                )
            fmt = o.value.text[0]
        elif k == "i":
            interval = _atof(o, "interval")
            if (interval < MIN_INTERVAL or interval > MAX_INTERVAL) and interval != 0:
                raise _perr(
                    f"invalid report interval (min = {MIN_INTERVAL:g}, max = {MAX_INTERVAL:g} seconds)",
                    o.value.col if o.value else o.col,
                )
        elif k == "D":
            daemon = True
        elif k == "1":
            one_off = True
        elif k == "V":
            verbose = True
        elif k == "J":
            json_out = True
        elif k == "s":
            if role == "c":
                raise _perr("cannot be both server and client", o.col)
            role = "s"
        elif k == "c":
            if role == "s":
                raise _perr("cannot be both server and client", o.col)
            role = "c"
            host = o.value
        elif k == "u":
            udp = True
        elif k == "fq-rate":  # unit_atof_rate, as -b's rate
            fq_rate = _unit(parse_iperf_rate, o)
        elif k == "b":
            assert o.value is not None
            text = o.value.text
            if "/" in text:
                rate_text, _, burst_text = text.partition("/")
                b, rest = c_strtol(burst_text, 10)
                if b is None or rest or b <= 0 or b > MAX_BURST:
                    raise _perr(
                        f"invalid burst count (maximum = {MAX_BURST})",
                        o.value.col + len(rate_text) + 1,
                        expected=f"-b RATE/BURST with BURST a whole number of datagrams, 1..{MAX_BURST}",
                    )
                burst = b
                o = Opt(o.key, o.spelled, o.col, Word(rate_text, o.value.col))
            # (a later -b without /BURST keeps the burst, as iperf3 does)
            rate = _unit(parse_iperf_rate, o, legacy_1024=not profile.iperf3_at_least(3, 1))
        elif k == "t":
            duration = _atoi_strict(o, "time")
            if duration > MAX_TIME:
                raise _perr(
                    f"test duration too long (maximum = {MAX_TIME} seconds)",
                    o.value.col if o.value else o.col,
                )
            if duration < 0:
                raise CommandError(
                    "iperf3: the test duration cannot be negative", col=o.value.col if o.value else o.col
                )
            duration_given = True
        elif k == "n":
            nbytes = _unit(parse_iperf_size, o)
        elif k == "k":
            nblocks = _unit(parse_iperf_size, o)
        elif k == "l":
            blksize = _unit(parse_iperf_size, o)
            blksize_opt = o
        elif k == "P":
            parallel = _atoi_strict(o, "stream count")
            if parallel > MAX_STREAMS:
                raise _perr(
                    f"number of parallel streams too large (maximum = {MAX_STREAMS})",
                    o.value.col if o.value else o.col,
                )
            if parallel < 1:
                raise CommandError(
                    "iperf3: -P needs at least 1 stream", col=o.value.col if o.value else o.col
                )
        elif k == "R":
            reverse = True
        elif k == "w":
            window = _unit(parse_iperf_size, o)
            if window > MAX_TCP_BUFFER:
                raise _perr(
                    f"socket buffer size too large (maximum = {MAX_TCP_BUFFER} bytes)",
                    o.value.col if o.value else o.col,
                )
        elif k == "N":
            no_delay = True
        elif k == "4":
            pass
        elif k == "S":
            assert o.value is not None
            v, rest = c_strtol(o.value.text, 0)
            if v is None or v < 0 or v > 255:
                raise _perr(
                    "bad TOS value (must be between 0 and 255 inclusive)",
                    o.value.col,
                    expected="-S TOS: 0x32, 050 (octal), 50",
                )
            if rest:
                diag.warn(
                    f"iperf3 ignores {rest!r} after the TOS value {v}",
                    o.value.col + len(o.value.text) - len(rest),
                )
            tos = v
        elif k == "Z":
            zerocopy = True
        elif k == "O":
            omit = _atoi_strict(o, "omit")
            if omit < 0 or omit > 60:
                raise _perr("bogus value for --omit", o.value.col if o.value else o.col)
        elif k == "T":
            assert o.value is not None
            title = o.value.text
        elif k == "C":
            assert o.value is not None
            congestion = o.value.text
        elif k == "d":
            debug = True
        elif k == "logfile":
            assert o.value is not None
            logfile = o.value.text
        elif k == "forceflush":
            pass
        elif k == "udp-counters-64bit":
            counters64 = True
        elif k == "pacing-timer":
            pacing_timer = _pacing_timer(o, diag)

    if role == "c" and server_flag is not None:
        raise _perr("some option you are trying to set is server only", server_flag.col)
    if role == "s" and client_flag is not None:
        raise _perr("some option you are trying to set is client only", client_flag.col)

    if blksize == 0:
        blksize_given = False
        blksize = default_udp_blksize(profile) if udp else DEFAULT_TCP_BLKSIZE
    else:
        blksize_given = True
    blk_col = blksize_opt.value.col if blksize_opt and blksize_opt.value else None
    if blksize <= 0 or blksize > MAX_BLOCKSIZE:
        raise _perr(f"block size too large (maximum = {MAX_BLOCKSIZE} bytes)", blk_col)
    if udp and (blksize < MIN_UDP_BLOCKSIZE or blksize > MAX_UDP_BLOCKSIZE):
        raise _perr(
            f"block size invalid (minimum = {MIN_UDP_BLOCKSIZE} bytes, maximum = {MAX_UDP_BLOCKSIZE} bytes)",
            blk_col,
        )
    if (nbytes or nblocks) and not duration_given:
        duration = 0
    if (duration_given and nbytes) or (duration_given and nblocks) or (nbytes and nblocks):
        col = next((o.col for o in opts if o.key in ("n", "k")), None)
        raise _perr("only one test end condition (-t, -n, -k) may be specified", col)
    if role is None:
        raise _perr(
            "must either be a client (-c) or server (-s)",
            words[0].col,
            expected="iperf3 -s  or  iperf3 -c HOST [options]",
        )

    if role == "s":
        return Iperf3Server(
            port=port,
            one_off=one_off,
            daemon=daemon,
            interval_s=interval,
            json=json_out,
            verbose=verbose,
            logfile=logfile,
            format=fmt,
            debug=debug,
        )
    assert host is not None
    if rate and not udp and not profile.iperf3_at_least(3, 2):
        # 3.0/3.1 also set SO_MAX_PACING_RATE to the rate (iperf_tcp_connect)
        col = next(o.col for o in opts if o.key == "b")
        raise NotSupportedError("iperf3 3.0/3.1's -b over TCP (fq socket pacing as well as the throttle) is "
                                "not supported yet", col=col)
    check_host(
        host,
        "iperf3",
        resolve,
        f"iperf3: error - unable to connect to server: {host.text}: Name or service not known",
    )
    return Iperf3Client(
        host=host.text,
        host_col=host.col,
        protocol="udp" if udp else "tcp",
        port=port,
        rate_bps=rate if rate is not None else (UDP_RATE if udp else 0),
        rate_given=rate is not None,
        blksize=blksize,
        blksize_given=blksize_given,
        duration_s=duration,
        bytes=nbytes or None,
        blocks=nblocks or None,
        tos=tos,
        title=title,
        json=json_out,
        interval_s=interval,
        omit_s=omit,
        logfile=logfile,
        parallel=parallel,
        reverse=reverse,
        window=window,
        congestion=congestion,
        fq_rate_bps=fq_rate,
        no_delay=no_delay,
        zerocopy=zerocopy,
        verbose=verbose,
        format=fmt,
        udp_counters_64bit=counters64,
        debug=debug,
        words_col=words[0].col,
        pacing_timer_us=default_pacing_timer(profile) if pacing_timer is None else pacing_timer,
        pacing_timer_given=pacing_timer is not None,
        burst=burst,
    )


def ensure_supported(cmd: Iperf3Server | Iperf3Client) -> None:
    """Refuse what parses but the engine cannot run yet (call before starting)."""
    if isinstance(cmd, Iperf3Server):
        return
    if cmd.reverse and cmd.protocol == "udp":
        raise NotSupportedError("iperf3 -u -R (reverse UDP) is not supported yet", col=cmd.words_col)
    if cmd.reverse and cmd.bytes is not None:
        raise NotSupportedError("iperf3 -R with -n is not supported yet", col=cmd.words_col)
    if cmd.protocol == "udp" and cmd.fq_rate_bps // 8:
        raise NotSupportedError("iperf3 -u --fq-rate (an fq pacing a UDP socket at its SO_MAX_PACING_RATE) "
                                "is not supported yet", col=cmd.words_col)
    if cmd.protocol == "udp" and cmd.parallel != 1:
        raise NotSupportedError("iperf3 -u -P (parallel UDP streams) is not supported yet", col=cmd.words_col)
    if cmd.protocol == "tcp" and cmd.rate_bps and (cmd.reverse or cmd.burst):
        raise NotSupportedError("iperf3 -b over TCP with -R (a throttled server) or a /BURST is not "
                                "supported yet", col=cmd.words_col)
    if cmd.blocks is not None:
        raise NotSupportedError("iperf3 -k (block count) is not supported yet", col=cmd.words_col)
