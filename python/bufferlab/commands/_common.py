"""Small helpers shared by the command parsers.

``matches`` mirrors iproute2 ``lib/utils.c`` ``matches()`` (the typed word must
be a non-empty prefix of the keyword); ``did_you_mean`` wraps difflib; the
IPv4 check mirrors what ``getaddrinfo(AI_NUMERICHOST)`` accepts for the
dotted-quad form the handouts use.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import TypeVar

from bufferlab.errors import CommandError

from .shell import Word

T = TypeVar("T")

#: maps a Mininet host name (``h3``) to its address (``10.0.0.3``), or None
Resolver = Callable[[str], "str | None"]


def matches(typed: str, keyword: str) -> bool:
    """iproute2 ``matches(typed, keyword) == 0``: non-empty prefix of keyword."""
    return bool(typed) and keyword.startswith(typed)


def did_you_mean(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=cutoff)
    return close[0] if close else None


def suggestion_for(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    best = did_you_mean(word, candidates, cutoff)
    return f"did you mean {best!r}?" if best else None


def is_ipv4_literal(text: str) -> bool:
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for p in parts:
        if not p.isdigit() or not p.isascii() or len(p) > 3:
            return False
        if len(p) > 1 and p[0] == "0":
            return False
        if int(p) > 255:
            return False
    return True


def check_host(
    word: Word,
    tool: str,
    resolve: Resolver | None,
    message: str,
) -> str:
    """Return the address typed in ``word`` or raise a CommandError.

    Inside a Mininet terminal (xterm) host names such as ``h3`` do not
    resolve; ``resolve`` (if given) lets the error say which address was meant.
    """
    text = word.text
    if is_ipv4_literal(text):
        return text
    suggestion = None
    if resolve is not None:
        ip = resolve(text)
        if ip:
            suggestion = f"{tool} needs an address inside a terminal; {text} is {ip}"
    raise CommandError(
        message,
        col=word.col,
        expected="an IPv4 address such as 10.0.0.3",
        suggestion=suggestion,
    )


#: more significant digits than any C integer has (2^64 is 20 decimal, 22 octal digits): such a
#: number is out of range, whatever the check after it, and is never handed to int() (whose
#: 4300-digit limit made a 5000-digit option a ValueError)
C_INT_DIGITS = 40


def c_strtol(text: str, base: int = 0) -> tuple[int | None, str]:
    """C ``strtol``/``strtoul`` prefix parse: (value or None if no digits, rest).

    Base 0 means: ``0x``/``0X`` prefix -> hex, leading ``0`` -> octal, else
    decimal. A sign is accepted. Leading blanks are skipped like C does.
    """
    s = text.lstrip(" \t\n\v\f\r")
    i = 0
    neg = False
    if i < len(s) and s[i] in "+-":
        neg = s[i] == "-"
        i += 1
    b = base
    if (
        (b in (0, 16))
        and s[i : i + 2].lower() == "0x"
        and i + 2 < len(s)
        and s[i + 2] in "0123456789abcdefABCDEF"
    ):
        b = 16
        i += 2
    elif b == 0:
        b = 8 if s[i : i + 1] == "0" else 10
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:b]
    j = i
    while j < len(s) and s[j].lower() in digits:
        j += 1
    if j == i:
        return None, text
    if len(s[i:j].lstrip("0")) > C_INT_DIGITS:  # out of range as strtol's ERANGE (and of int()'s limit)
        value = 2**128
    else:
        value = int(s[i:j], b)
    return (-value if neg else value), s[j:]


def c_int_full(text: str, base: int = 0) -> int | None:
    """A whole word as a C integer (``get_integer``/``get_u32`` style), else None."""
    value, rest = c_strtol(text, base)
    if value is None or rest:
        return None
    return value


def port_value(prog: str, w: Word) -> int:
    """``-p PORT`` of a generator-style tool (bulk, sink, cbr, flows): 1..65535."""
    v = c_int_full(w.text, 10)
    if v is None or not 1 <= v <= 65535:
        raise CommandError(f"{prog}: invalid port {w.text!r}", col=w.col, expected="-p PORT (1..65535)")
    return v


def tos_value(prog: str, w: Word) -> int:
    """``-S TOS``: a C integer (hex, octal or decimal) from 0 to 255."""
    v = c_int_full(w.text, 0)
    if v is None or not 0 <= v <= 255:
        raise CommandError(f"{prog}: bad TOS value {w.text!r}", col=w.col,
                           expected="-S TOS between 0 and 255: 0x32, 050 (octal), 50")
    return v


def prog_value(prog: str, parse: Callable[[str, int], T], w: Word) -> T:
    """``parse(w.text, w.col)``, its error message prefixed with ``prog: `` as the tool prints it."""
    try:
        return parse(w.text, w.col)
    except CommandError as err:
        raise CommandError(
            f"{prog}: {err.message}", col=err.col, expected=err.expected, suggestion=err.suggestion
        ) from None


def option_col(words: list[Word], short: str, *long: str) -> int:
    """Column of the last word giving option ``short``/``long`` (the one that counts), else
    of the program's name."""
    col = words[0].col
    for w in words[1:]:
        t = w.text
        if t == short or t.startswith(short) and not t.startswith("--") or t.split("=")[0] in long:
            col = w.col
    return col
