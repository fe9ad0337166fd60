"""``fping`` command lines (fping 5.1, schweikert/fping ``src/fping.c`` ``main``; read, not
copied): ``getopt`` over the short options, values checked as fping checks them.

Modelled: ``-c COUNT`` (probes per target, required: the per-reply lines only exist in count
mode), ``-p MS`` (the period between probes to one target, default 1000 ms, at least 10 ms for
root), ``-t MS`` (how long to wait for a reply, default 500 ms), ``-D`` (a ``[%.5f]`` wall time
before each line), ``-O TOS``, ``-b BYTES`` (ICMP data, default 56), ``-q``, ``-4``, one target
(an IPv4 address). Other fping options are refused as not supported yet.
"""

from __future__ import annotations

from dataclasses import dataclass

from bufferlab.errors import CommandError, NotSupportedError

from ._common import Resolver, check_host
from ._getopt import Getopt, OptSpec
from .shell import Word

__all__ = ["FpingCommand", "parse_fping"]

_EXPECTED = "fping -c COUNT [-p PERIOD_MS] [-t TIMEOUT_MS] [-D] [-O TOS] [-b BYTES] [-q] ADDRESS"
_SPECS = [
    OptSpec("c", "c", arg=True),
    OptSpec("p", "p", arg=True),
    OptSpec("t", "t", arg=True),
    OptSpec("D", "D"),
    OptSpec("O", "O", arg=True),
    OptSpec("b", "b", arg=True),
    OptSpec("q", "q"),
    OptSpec("4", "4"),
]
_OTHER = {c: True for c in "CiIrBfgHIMQRSTxXz"} | {c: False for c in "6adeAlmnNosuvk"}
_SPECS += [OptSpec("other:" + c, c, arg=a) for c, a in _OTHER.items() if c not in "cptDObq4"]


@dataclass
class FpingCommand:
    target: str
    target_col: int
    count: int = 1
    period_ms: float = 1000.0
    timeout_ms: float = 500.0
    timestamps: bool = False
    tos: int = 0
    size: int = 56
    quiet: bool = False


def _num(w: Word, opt: str, low: float, high: float) -> float:
    try:
        v = float(w.text)
    except ValueError:
        raise CommandError(f"fping: -{opt} {w.text}: not a number", col=w.col, expected=_EXPECTED) from None
    if not low <= v <= high:
        raise CommandError(
            f"fping: -{opt} {w.text}: out of range ({low:g}..{high:g})", col=w.col, expected=_EXPECTED
        )
    return v


def parse_fping(words: list[Word], resolve: Resolver | None = None) -> FpingCommand:
    opts, operands = Getopt("fping", _SPECS, expected=_EXPECTED).parse(words[1:])
    for o in opts:
        if o.key.startswith("other:"):
            raise NotSupportedError(f"fping {o.spelled} is not supported yet", col=o.col, expected=_EXPECTED)
    if not operands:
        raise CommandError("fping: no target given", col=words[0].col, expected=_EXPECTED)
    if len(operands) > 1:
        raise NotSupportedError(
            "fping with several targets is not supported yet", col=operands[1].col, expected=_EXPECTED
        )
    target = check_host(operands[0], "fping", resolve, f"{operands[0].text}: Name or service not known")
    cmd = FpingCommand(target=target, target_col=operands[0].col)
    counted = False
    for o in opts:
        v = o.value
        if o.key.startswith("other:"):
            raise NotSupportedError(f"fping {o.spelled} is not supported yet", col=o.col, expected=_EXPECTED)
        if o.key == "c" and v is not None:
            cmd.count = int(_num(v, "c", 1, 2**31 - 1))
            counted = True
        elif o.key == "p" and v is not None:
            cmd.period_ms = _num(v, "p", 10, 2**31 - 1)  # fping: at least 10 ms for root
        elif o.key == "t" and v is not None:
            cmd.timeout_ms = _num(v, "t", 0, 2**31 - 1)
        elif o.key == "D":
            cmd.timestamps = True
        elif o.key == "O" and v is not None:
            try:
                cmd.tos = int(v.text, 0)
            except ValueError:
                raise CommandError(
                    f"fping: -O {v.text}: not a TOS value", col=v.col, expected="-O TOS"
                ) from None
            if not 0 <= cmd.tos <= 255:
                raise CommandError(f"fping: -O {v.text}: TOS must be 0..255", col=v.col, expected="-O TOS")
        elif o.key == "b" and v is not None:
            cmd.size = int(_num(v, "b", 0, 65507))
        elif o.key == "q":
            cmd.quiet = True
    if not counted:
        raise NotSupportedError(
            "fping without -c (the alive/unreachable report) is not supported yet",
            col=words[0].col,
            expected=_EXPECTED,
        )
    return cmd
