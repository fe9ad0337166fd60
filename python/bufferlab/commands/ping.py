"""``ping`` command lines (iputils).

Mirrors iputils ``ping.c``/``ping_common.c`` option handling (s20180629 as
the labs ran it, docs/semantics/formats.md §2): GNU ``getopt`` so options may come before or
after the target (``ping 10.0.0.3 -c 90``), and its checks and messages:

* ``-c N``   -- ``ping: bad number of packets to transmit.`` unless N ≥ 1;
* ``-i SEC`` -- ``ping: bad timing interval`` unless a finite number ≥ 0
  (Mininet hosts run as root, so the 200 ms user minimum does not apply);
* ``-s N``   -- ``ping: illegal negative packet size N.`` / at most 65507;
* ``-w SEC`` -- ``ping: bad wait time.``; ``-W SEC`` -- ``ping: bad linger time.``;
* ``-Q TOS`` -- decimal or ``0x`` hex (``parsetos``), 0..255;
* ``-q``.

Other real ping options are refused as not supported; unknown ones get
getopt's ``invalid option``. The target must be an IPv4 address: inside a
Mininet terminal ``h3`` does not resolve (``ping: h3: Name or service not known``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from bufferlab.units import strtod_prefix

from ._common import Resolver, c_strtol, check_host
from ._getopt import Getopt, Opt, OptSpec
from .shell import Word

__all__ = ["PingCommand", "parse_ping"]

MAX_DATALEN = 65507


@dataclass
class PingCommand:
    target: str  # as typed (an IPv4 literal)
    target_col: int
    count: int | None = None  # -c; None = until interrupted
    interval_s: float = 1.0  # -i
    size: int = 56  # -s (ICMP data bytes)
    deadline_s: float | None = None  # -w
    timeout_s: float | None = None  # -W
    quiet: bool = False  # -q
    tos: int = 0  # -Q

    @property
    def interval_ns(self) -> int:
        return round(self.interval_s * 1e9)


_SPECS = [
    OptSpec("c", "c", arg=True),
    OptSpec("i", "i", arg=True),
    OptSpec("s", "s", arg=True),
    OptSpec("w", "w", arg=True),
    OptSpec("W", "W", arg=True),
    OptSpec("q", "q"),
    OptSpec("Q", "Q", arg=True),
]
# real iputils options, refused as not supported (letter -> takes a value)
_OTHER = {
    "a": False,
    "A": False,
    "b": False,
    "B": False,
    "d": False,
    "D": False,
    "f": False,
    "h": False,
    "L": False,
    "n": False,
    "O": False,
    "r": False,
    "R": False,
    "U": False,
    "v": False,
    "V": False,
    "4": False,
    "6": False,
    "F": True,
    "I": True,
    "l": True,
    "m": True,
    "M": True,
    "N": True,
    "p": True,
    "S": True,
    "t": True,
    "T": True,
}
_SPECS += [OptSpec("other:" + k, k, arg=v) for k, v in _OTHER.items()]

#: iputils reads -c, -w and -W into a C int (atoi/strtol then range checks), so 2³¹−1 is the
#: largest count and the longest deadline; the engine's PingSpec keeps the count in a u32
MAX_COUNT = 2**31 - 1
MAX_WAIT_S = 2**31 - 1
_COUNT_EXPECTED = f"-c COUNT between 1 and {MAX_COUNT}"
_WAIT_EXPECTED = "{} SECONDS between 0 and %d" % MAX_WAIT_S
_EXPECTED = "ping [-c COUNT] [-i INTERVAL] [-s SIZE] [-w DEADLINE] [-W TIMEOUT] [-q] [-Q TOS] ADDRESS"


def _num(o: Opt, message: str, expected: str) -> float:
    assert o.value is not None
    v, rest = strtod_prefix(o.value.text)
    if v is None or rest or not math.isfinite(v):
        raise CommandError(message, col=o.value.col, expected=expected)
    return v


def _int(o: Opt, message: str, expected: str) -> int:
    assert o.value is not None
    v, rest = c_strtol(o.value.text, 10)
    if v is None or rest:
        raise CommandError(message, col=o.value.col, expected=expected)
    return v


def _tos(o: Opt) -> int:
    assert o.value is not None
    text = o.value.text
    if text[:2] in ("0x", "0X"):
        v, rest = c_strtol(text[2:], 16)
    else:
        v, rest = c_strtol(text, 10)
    if v is None or rest:
        raise CommandError(
            f'ping: "{text}" bad value for TOS', col=o.value.col, expected="-Q TOS: 0x32 or 50"
        )
    if v < 0 or v > 255:
        raise CommandError(
            "ping: the decimal value of TOS bits must be in range 0-255",
            col=o.value.col,
            expected="-Q TOS between 0 and 255",
        )
    return v


def parse_ping(words: list[Word], diag: Diagnostics, resolve: Resolver | None = None) -> PingCommand:
    """Parse ``ping ...`` (``words[0]`` is ``ping``)."""
    getopt = Getopt("ping", _SPECS, expected=_EXPECTED)
    opts, operands = getopt.parse(words[1:])
    cmd = PingCommand(target="", target_col=0)
    for o in opts:
        if o.key.startswith("other:"):
            raise NotSupportedError(
                f"ping {o.spelled} is not supported",
                col=o.col,
                expected="-c, -i, -s, -w, -W, -q, -Q",
            )
        if o.key == "c":
            n = _int(o, "ping: bad number of packets to transmit.", _COUNT_EXPECTED)
            if not 1 <= n <= MAX_COUNT:
                raise CommandError(
                    "ping: bad number of packets to transmit.",
                    col=o.value.col if o.value else o.col,
                    expected=_COUNT_EXPECTED,
                    suggestion="iputils reads -c into a C int" if n > MAX_COUNT else None,
                )
            cmd.count = n
        elif o.key == "i":
            v = _num(o, "ping: bad timing interval", "-i SECONDS (e.g. 1, 0.2)")
            if v < 0 or v >= (2**31 - 1) / 1000 - 1:
                raise CommandError(
                    "ping: bad timing interval",
                    col=o.value.col if o.value else o.col,
                    expected="-i SECONDS (e.g. 1, 0.2)",
                )
            cmd.interval_s = v
        elif o.key == "s":
            n = _int(
                o, f"ping: invalid packet size {o.value.text if o.value else ''!r}", "-s BYTES (0..65507)"
            )
            if n < 0:
                raise CommandError(
                    f"ping: illegal negative packet size {n}.",
                    col=o.value.col if o.value else o.col,
                    expected="-s BYTES (0..65507)",
                )
            if n > MAX_DATALEN:
                raise CommandError(
                    f"ping: packet size {n} is too large. Maximum is {MAX_DATALEN}",
                    col=o.value.col if o.value else o.col,
                    expected="-s BYTES (0..65507)",
                )
            cmd.size = n
        elif o.key == "w":
            v = _num(o, "ping: bad wait time.", _WAIT_EXPECTED.format("-w"))
            if not 0 <= v <= MAX_WAIT_S:
                raise CommandError(
                    "ping: bad wait time.", col=o.value.col if o.value else o.col,
                    expected=_WAIT_EXPECTED.format("-w"),
                )
            cmd.deadline_s = v
        elif o.key == "W":
            v = _num(o, "ping: bad linger time.", _WAIT_EXPECTED.format("-W"))
            if not 0 <= v <= MAX_WAIT_S:
                raise CommandError(
                    "ping: bad linger time.", col=o.value.col if o.value else o.col,
                    expected=_WAIT_EXPECTED.format("-W"),
                )
            cmd.timeout_s = v
        elif o.key == "q":
            cmd.quiet = True
        elif o.key == "Q":
            cmd.tos = _tos(o)
    if not operands:
        raise CommandError(
            "ping: usage error: Destination address required",
            col=words[0].col,
            expected=_EXPECTED,
        )
    if len(operands) > 1:
        raise NotSupportedError(
            "ping with several addresses (source routing) is not supported",
            col=operands[0].col,
            expected=_EXPECTED,
        )
    target = operands[0]
    check_host(target, "ping", resolve, f"ping: {target.text}: Name or service not known")
    cmd.target = target.text
    cmd.target_col = target.col
    return cmd
