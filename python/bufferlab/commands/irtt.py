"""``irtt client`` and ``irtt server`` command lines (irtt 0.9, heistp/irtt ``irtt_client.go``
and ``irtt_server.go``: GNU-style flags, Go durations; read, not copied).

Client: ``irtt client [-d DUR] [-i INT] [-l LEN] [--dscp=N] [-o FILE] [-q|-Q] [-n] [--fill=F]
[--timeouts=LIST] [-4] HOST[:PORT]`` -- duration 1 m and interval 1 s by default, port 2112;
``-l`` the packet payload length (at least irtt's header, 0 = the minimum); ``--dscp`` the TOS
byte (irtt sets IP_TOS to the value given, flent passes ``0xb8`` for EF); ``-o -`` JSON on stdout;
``-n`` only checks that the server answers. The human-readable report (without ``-Q``) is not
modelled yet. Server: ``irtt server [-b ADDR[:PORT]] [-4]`` (listens on UDP 2112).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bufferlab.errors import CommandError, NotSupportedError

from ._common import Resolver, check_host
from ._getopt import Getopt, OptSpec
from .shell import Word

__all__ = ["IrttClient", "IrttServer", "parse_irtt", "go_duration_ns", "IRTT_PORT", "MIN_LENGTH"]

IRTT_PORT = 2112
#: bytes of irtt's packet header with the default options (magic, flags, token, seqno, received
#: count and window, two wall and two monotonic timestamps): what ``-l 0`` sends
MIN_LENGTH = 60
_CLIENT_EXPECTED = (
    "irtt client [-d DURATION] [-i INTERVAL] [-l LENGTH] [--dscp=TOS] [-o FILE] [-Q] HOST[:PORT]"
)
_SERVER_EXPECTED = "irtt server [-b [ADDR]:PORT] [-4]"
_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def go_duration_ns(text: str) -> int | None:
    """Go's ``time.ParseDuration``: a sequence of decimal numbers with units; None if malformed."""
    s = text
    sign = 1
    if s[:1] in "+-":
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    pos = 0
    total = 0.0
    while pos < len(s):
        m = _DURATION.match(s, pos)
        if m is None:
            return None
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    return sign * round(total) if pos else None


@dataclass
class IrttClient:
    host: str
    host_col: int
    port: int = IRTT_PORT
    supplied: str = ""
    duration_ns: int = 60_000_000_000
    interval_ns: int = 1_000_000_000
    length: int = 0
    dscp: int = 0
    output: str | None = None
    quiet: int = 0  # 1 = -q, 2 = -Q
    check_only: bool = False
    fill: str = "none"


@dataclass
class IrttServer:
    port: int = IRTT_PORT


_CLIENT = [
    OptSpec("d", "d", arg=True),
    OptSpec("i", "i", arg=True),
    OptSpec("l", "l", arg=True),
    OptSpec("dscp", None, ("dscp",), arg=True),
    OptSpec("o", "o", arg=True),
    OptSpec("q", "q"),
    OptSpec("Q", "Q"),
    OptSpec("n", "n"),
    OptSpec("fill", None, ("fill",), arg=True),
    OptSpec("timeouts", None, ("timeouts",), arg=True),
    OptSpec("4", "4"),
]
_CLIENT_OTHER = {
    "6": False,
    "sfill": True,
    "fill-one": False,
    "stats": True,
    "tstamp": True,
    "clock": True,
    "ttl": True,
    "df": True,
    "local": True,
    "hmac": True,
    "thread": False,
    "timer": True,
    "tsource": True,
    "wait": True,
    "loose": False,
    "outformat": True,
    "o-json": False,
}
_CLIENT += [
    OptSpec("other:" + k, k if len(k) == 1 else None, (k,) if len(k) > 1 else (), arg=a)
    for k, a in _CLIENT_OTHER.items()
]


def _duration(w: Word, flag: str) -> int:
    ns = go_duration_ns(w.text)
    if ns is None:
        raise CommandError(
            f'irtt: invalid argument "{w.text}" for "{flag}" flag: time: invalid duration "{w.text}"',
            col=w.col,
            expected="a Go duration such as 10s, 200ms or 1m30s",
        )
    return ns


def parse_irtt(words: list[Word], resolve: Resolver | None = None) -> IrttClient | IrttServer:
    """Parse ``irtt client ...`` or ``irtt server ...``."""
    if len(words) < 2 or words[1].text not in ("client", "server"):
        col = words[1].col if len(words) > 1 else words[0].col
        if len(words) > 1 and words[1].text in ("bench", "clock", "sleep", "timer", "version", "help"):
            raise NotSupportedError(
                f"irtt {words[1].text} is not supported yet",
                col=col,
                expected="irtt client ... or irtt server ...",
            )
        raise CommandError(
            "irtt: a command is needed (client or server)",
            col=col,
            expected="irtt client ... or irtt server ...",
        )
    if words[1].text == "server":
        opts, operands = Getopt(
            "irtt",
            [OptSpec("b", "b", arg=True), OptSpec("4", "4")]
            + [
                OptSpec("other:" + k, None, (k,), arg=True)
                for k in (
                    "hmac",
                    "max-duration",
                    "min-interval",
                    "max-length",
                    "packet-burst",
                    "timeout",
                    "goroutines",
                    "allow-stamp",
                    "set-src-ip",
                    "ecn",
                )
            ],
            expected=_SERVER_EXPECTED,
        ).parse(words[2:])
        if operands:
            raise CommandError(
                f"irtt: unexpected argument {operands[0].text}",
                col=operands[0].col,
                expected=_SERVER_EXPECTED,
            )
        server = IrttServer()
        for o in opts:
            if o.key.startswith("other:"):
                raise NotSupportedError(
                    f"irtt server {o.spelled} is not supported yet", col=o.col, expected=_SERVER_EXPECTED
                )
            if o.key == "b" and o.value is not None:
                port = o.value.text.rpartition(":")[2]
                if not port.isdigit() or not 0 < int(port) < 65536:
                    raise CommandError(
                        f"irtt: invalid bind address {o.value.text}", col=o.value.col, expected="-b :PORT"
                    )
                server.port = int(port)
        return server
    opts, operands = Getopt("irtt", _CLIENT, expected=_CLIENT_EXPECTED).parse(words[2:])
    if len(operands) != 1:
        col = operands[1].col if len(operands) > 1 else words[1].col
        raise CommandError("irtt: exactly one server address is needed", col=col, expected=_CLIENT_EXPECTED)
    target = operands[0]
    host_text, _, port_text = target.text.partition(":")
    host = check_host(Word(host_text, target.col), "irtt", resolve, f"irtt: lookup {host_text}: no such host")
    cmd = IrttClient(host=host, host_col=target.col, supplied=target.text)
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise CommandError(f"irtt: invalid port {port_text}", col=target.col, expected="HOST[:PORT]")
        cmd.port = int(port_text)
    for o in opts:
        v = o.value
        if o.key.startswith("other:"):
            raise NotSupportedError(
                f"irtt client {o.spelled} is not supported yet", col=o.col, expected=_CLIENT_EXPECTED
            )
        if o.key == "d" and v is not None:
            cmd.duration_ns = _duration(v, "d")
            if cmd.duration_ns <= 0:
                raise CommandError("irtt: duration must be positive", col=v.col, expected="-d DURATION")
        elif o.key == "i" and v is not None:
            cmd.interval_ns = _duration(v, "i")
            if cmd.interval_ns <= 0:
                raise CommandError("irtt: interval must be positive", col=v.col, expected="-i INTERVAL")
        elif o.key == "l" and v is not None:
            if not v.text.isdigit():
                raise CommandError(
                    f'irtt: invalid argument "{v.text}" for "-l, --length" flag',
                    col=v.col,
                    expected="-l BYTES",
                )
            cmd.length = int(v.text)
        elif o.key == "dscp" and v is not None:
            try:
                cmd.dscp = int(v.text, 0)
            except ValueError:
                raise CommandError(
                    f'irtt: invalid argument "{v.text}" for "--dscp" flag',
                    col=v.col,
                    expected="--dscp=TOS (0xb8 or 184)",
                ) from None
            if not 0 <= cmd.dscp <= 255:
                raise CommandError("irtt: --dscp must be 0..255", col=v.col, expected="--dscp=TOS")
        elif o.key == "o" and v is not None:
            cmd.output = v.text
        elif o.key == "q":
            cmd.quiet = max(cmd.quiet, 1)
        elif o.key == "Q":
            cmd.quiet = 2
        elif o.key == "n":
            cmd.check_only = True
        elif o.key == "fill" and v is not None:
            if v.text not in ("none", "rand") and not v.text.startswith("pattern:"):
                raise CommandError(
                    f"irtt: invalid fill {v.text}", col=v.col, expected="--fill=none|rand|pattern:HEX"
                )
            cmd.fill = v.text
        elif o.key == "timeouts" and v is not None:
            if any(go_duration_ns(t) is None for t in v.text.split(",")):
                raise CommandError(
                    f"irtt: invalid timeouts {v.text}", col=v.col, expected="--timeouts=1s,2s,4s"
                )
    if cmd.quiet < 2 and not cmd.check_only:
        raise NotSupportedError(
            "irtt client's human-readable report is not supported yet (add -Q, and -o FILE for the JSON)",
            col=words[1].col,
            expected=_CLIENT_EXPECTED,
        )
    return cmd
