"""Number readers for command lines, exactly as the real tools read them.

tc (docs/semantics/qdiscs.md §1.1), mirroring iproute2:

* :func:`parse_size` -- ``lib/utils_math.c`` ``get_size``/``get_size64``:
  strtod + case-insensitive ``b``, ``k``/``kb`` (×1024), ``m``/``mb``,
  ``g``/``gb``, ``kbit`` (×128), ``mbit`` (×131072), ``gbit``; truncated;
  > 2³²−1 is an error.
* :func:`parse_rate` -- ``get_rate``/``get_rate64``: strtod + the suffix table
  (``bit``, ``kbit``, ``mbit``, ``gbit``, ``tbit``, ``kibit`` …, ``bps`` = bytes,
  ``kbps`` …), then ÷8 → bytes/s, truncated.
* :func:`parse_time_us` -- ``lib/utils.c`` ``get_time``: ``s``/``sec``/``secs``,
  ``ms``/``msec``/``msecs``, ``us``/``usec``/``usecs``, bare = µs; u32 µs.
* :func:`parse_time_ns64` -- ``get_time64``: same plus ``ns``; bare = ns.
* :func:`parse_netem_time` -- ``tc/q_netem.c`` ``get_ticks`` + ``tc/tc_core.c``
  ``tc_core_time2tick`` ([lab2019]: µs → trunc(µs × 15.625) psched ticks → ×64
  ns) or ``get_time64`` ([modern] iproute2 ≥ 6.9: ns, bare = ns).
* :func:`parse_percent` -- ``tc/tc_util.c`` ``parse_percent`` + netem
  ``set_percent``: ``strtod/100``, optional ``%``, within [0, 100] %, encoded
  ``rint(fraction × 4294967295)``.
* :func:`parse_probability` -- ``tc/q_red.c`` ``probability`` (a fraction 0..1).

iperf3, mirroring ``src/units.c``:

* :func:`parse_iperf_rate` -- ``unit_atof_rate`` (3.1+: ``k``/``m``/``g``/``t`` =
  10³/10⁶/10⁹/10¹², case-insensitive) or ``unit_atof`` (3.0.x: 1024-based).
* :func:`parse_iperf_size` -- ``unit_atoi`` (``-n``, ``-l``: 1024-based).

And :func:`parse_duration_ns` for ``sleep`` and the traffic generators
(``1``, ``0.5``, ``2s``, ``500ms``, ``1m``).

Every reader raises :class:`~bufferlab.errors.CommandError` carrying the
word's column, the expected form and a suggestion. Arithmetic is done in IEEE
doubles where the C code does (so truncations match bit for bit).
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from bufferlab.errors import CommandError

__all__ = [
    "U32_MAX",
    "U64_MAX",
    "check_u64",
    "strtod_prefix",
    "parse_size",
    "parse_rate",
    "parse_rate_bits",
    "parse_time_us",
    "parse_time_ns64",
    "parse_netem_time",
    "parse_percent",
    "parse_percent_fraction",
    "parse_probability",
    "parse_iperf_rate",
    "parse_iperf_size",
    "parse_duration_ns",
    "percent_to_u32",
]

U32_MAX = 4294967295
U64_MAX = 2**64 - 1

#: psched ticks per µs as tc computes it from /proc/net/psched (1000/64)
TICKS_PER_US = 15.625
NS_PER_TICK = 64

# --------------------------------------------------------------------------
# C strtod

_DEC = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_HEX = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?")
_SPECIAL = re.compile(r"[+-]?(?:infinity|inf|nan)", re.IGNORECASE)


def strtod_prefix(text: str) -> tuple[float | None, str]:
    """C ``strtod``: the longest numeric prefix as a double, and the rest.

    Returns ``(None, text)`` when no number starts the text (C's ``p == str``).
    """
    s = text.lstrip(" \t\n\v\f\r")
    m = _HEX.match(s)
    if m:
        body = m.group(0)
        sign = -1.0 if body.startswith("-") else 1.0
        body = body.lstrip("+-")
        if "p" not in body.lower():
            body += "p0"
        return sign * float.fromhex(body), s[m.end() :]
    m = _SPECIAL.match(s)
    if m:
        return float(m.group(0)), s[m.end() :]
    m = _DEC.match(s)
    if m:
        return float(m.group(0)), s[m.end() :]
    return None, text


# --------------------------------------------------------------------------
# tc SIZE

_SIZE_SCALE: dict[str, float] = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "m": 1024 * 1024,
    "mb": 1024 * 1024,
    "g": 1024 * 1024 * 1024,
    "gb": 1024 * 1024 * 1024,
    "kbit": 1024 // 8,
    "mbit": 1024 * 1024 // 8,
    "gbit": 1024 * 1024 * 1024 // 8,
}

SIZE_EXPECTED = "a size in bytes: 500000, 10k (= 10240), 400kb, 2mb, 1mbit (= 131072)"


def _num_error(message: str, col: int | None, expected: str, suggestion: str | None = None) -> CommandError:
    return CommandError(message, col=col, expected=expected, suggestion=suggestion)


def parse_size(text: str, col: int | None = None) -> int:
    """tc SIZE -> bytes (u32)."""
    value, rest = strtod_prefix(text)
    if value is None:
        raise _num_error(f'invalid size "{text}"', col, SIZE_EXPECTED, "write a number, e.g. 500000 or 10k")
    suffix = rest.lower()
    if suffix not in _SIZE_SCALE:
        hint = None
        if suffix in _RATE_SCALE:
            hint = f'"{rest}" is a rate unit; sizes take b, k/kb, m/mb, g/gb (×1024) or kbit/mbit/gbit'
        else:
            hint = "sizes take b, k/kb, m/mb, g/gb (×1024) or kbit/mbit/gbit"
        raise _num_error(f'invalid size "{text}": unknown unit "{rest}"', col, SIZE_EXPECTED, hint)
    if not math.isfinite(value) or value < 0:
        raise _num_error(f'invalid size "{text}"', col, SIZE_EXPECTED, "sizes are non-negative")
    size = value * _SIZE_SCALE[suffix]
    if size > U32_MAX:
        raise _num_error(f'size "{text}" is too large (maximum 4294967295 bytes)', col, SIZE_EXPECTED)
    return int(size)


# --------------------------------------------------------------------------
# tc RATE

_RATE_SCALE: dict[str, float] = {
    "": 1.0,
    "bit": 1.0,
    "kibit": 1024.0,
    "kbit": 1000.0,
    "mibit": 1024.0 * 1024.0,
    "mbit": 1000000.0,
    "gibit": 1024.0 * 1024.0 * 1024.0,
    "gbit": 1000000000.0,
    "tibit": 1024.0 * 1024.0 * 1024.0 * 1024.0,
    "tbit": 1000000000000.0,
    "bps": 8.0,
    "kibps": 8.0 * 1024.0,
    "kbps": 8000.0,
    "mibps": 8.0 * 1024 * 1024,
    "mbps": 8000000.0,
    "gibps": 8.0 * 1024.0 * 1024.0 * 1024.0,
    "gbps": 8000000000.0,
    "tibps": 8.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0,
    "tbps": 8000000000000.0,
}

RATE_EXPECTED = "a rate: 1gbit, 100mbit, 8mbit, 500kbit (bits/s) or 1mbps (bytes/s)"
RATE_SUGGESTION = "use 1gbit, 100mbit, 8mbit"


def _rate_bits(text: str, col: int | None) -> float:
    value, rest = strtod_prefix(text)
    if value is None:
        raise _num_error(f'invalid rate "{text}"', col, RATE_EXPECTED, RATE_SUGGESTION)
    suffix = rest.lower()
    if suffix not in _RATE_SCALE:
        hint = RATE_SUGGESTION
        if suffix in ("k", "m", "g", "t", "kb", "mb", "gb"):
            number = text[: len(text) - len(rest)]
            hint = f'"{rest}" is not a tc rate unit: write {number}{suffix[0]}bit for bits/s'
        elif suffix.endswith("bits"):
            hint = f'write "{rest[:-1]}" (no s): {RATE_SUGGESTION}'
        raise _num_error(f'invalid rate "{text}": unknown unit "{rest}"', col, RATE_EXPECTED, hint)
    if not math.isfinite(value) or value < 0:
        raise _num_error(f'invalid rate "{text}"', col, RATE_EXPECTED, "rates are non-negative")
    return value * _RATE_SCALE[suffix]


def parse_rate(text: str, col: int | None = None, *, bits32: bool = False) -> int:
    """tc RATE -> bytes/s (truncated). ``bits32``: ``get_rate`` (u32 B/s) limit."""
    if "%" in text:
        raise _num_error(
            f'rate "{text}" is a percentage of the device speed',
            col,
            RATE_EXPECTED,
            "give an absolute rate such as 100mbit",
        )
    bps = _rate_bits(text, col) / 8
    limit = U32_MAX if bits32 else U64_MAX
    if bps > limit:
        raise _num_error(f'rate "{text}" is too large', col, RATE_EXPECTED)
    return int(bps)


def parse_rate_bits(text: str, col: int | None = None) -> int:
    """tc RATE in bits/s (the same suffix table, without the ÷8); at most 2⁶⁴−1."""
    if "%" in text:
        raise _num_error(f'rate "{text}" is a percentage', col, RATE_EXPECTED, RATE_SUGGESTION)
    return check_u64(_rate_bits(text, col), text, col, "rate", "bits/s", RATE_EXPECTED)


# --------------------------------------------------------------------------
# tc TIME

_TIME_US_SCALE: dict[str, float] = {
    "": 1.0,
    "s": 1000000.0,
    "sec": 1000000.0,
    "secs": 1000000.0,
    "ms": 1000.0,
    "msec": 1000.0,
    "msecs": 1000.0,
    "us": 1.0,
    "usec": 1.0,
    "usecs": 1.0,
}
_TIME_NS_SCALE: dict[str, float] = {
    "": 1.0,
    "s": 1e9,
    "sec": 1e9,
    "secs": 1e9,
    "ms": 1e6,
    "msec": 1e6,
    "msecs": 1e6,
    "us": 1e3,
    "usec": 1e3,
    "usecs": 1e3,
    "ns": 1.0,
    "nsec": 1.0,
    "nsecs": 1.0,
}

TIME_EXPECTED = "a time: 20ms, 1.5s, 500us (a bare number is µs)"
TIME_NS_EXPECTED = "a time: 20ms, 1.5s, 500us, 100ns (a bare number is ns)"


def _time(text: str, col: int | None, table: dict[str, float], expected: str) -> float:
    value, rest = strtod_prefix(text)
    if value is None:
        raise _num_error(f'invalid time "{text}"', col, expected, "write e.g. 20ms")
    suffix = rest.lower()
    if suffix not in table:
        hint = "times take s, ms, us" + (", ns" if "ns" in table else "")
        if suffix in ("m", "min", "mins", "minute", "minutes"):
            hint = f"tc has no minutes unit: write {value * 60:g}s"
        raise _num_error(f'invalid time "{text}": unknown unit "{rest}"', col, expected, hint)
    if not math.isfinite(value) or value < 0:
        raise _num_error(f'invalid time "{text}"', col, expected, "times are non-negative")
    return value * table[suffix]


def parse_time_us(text: str, col: int | None = None) -> int:
    """tc TIME (``get_time``) -> µs, truncated to u32."""
    t = _time(text, col, _TIME_US_SCALE, TIME_EXPECTED)
    if t > U32_MAX:
        raise _num_error(f'time "{text}" is too large', col, TIME_EXPECTED)
    return int(t)


def parse_time_ns64(text: str, col: int | None = None) -> int:
    """tc ``get_time64`` -> ns (bare number = ns)."""
    t = _time(text, col, _TIME_NS_SCALE, TIME_NS_EXPECTED)
    if t > 2**63 - 1:
        raise _num_error(f'time "{text}" is too large', col, TIME_NS_EXPECTED)
    return int(t)


def parse_netem_time(text: str, ns_mode: bool, col: int | None = None) -> int:
    """netem ``delay``/jitter -> the nanoseconds the kernel ends up with.

    ``ns_mode`` False ([lab2019], iproute2 < 6.9): read as µs, converted to
    psched ticks ``trunc(µs × 15.625)``, kernel ns = ticks × 64 (``delay 1.1ms``
    → 17187 ticks → 1 099 968 ns). True ([modern]): 64-bit ns, bare = ns.
    """
    if ns_mode:
        return parse_time_ns64(text, col)
    us = parse_time_us(text, col)
    ticks = int(us * TICKS_PER_US)
    if ticks >> 32:
        raise _num_error(
            f"Illegal {us} time (too large)", col, TIME_EXPECTED, "netem delays must stay below 274.8s"
        )
    return ticks * NS_PER_TICK


# --------------------------------------------------------------------------
# tc PERCENT / PROB

PERCENT_EXPECTED = "a percentage between 0 and 100, e.g. 1% or 0.01% (the % sign is optional)"


def parse_percent_fraction(text: str, col: int | None = None) -> float:
    """``parse_percent``: ``strtod/100``, optional trailing ``%``, in [0, 1]."""
    value, rest = strtod_prefix(text)
    if value is None:
        raise _num_error(f'invalid percentage "{text}"', col, PERCENT_EXPECTED, "write e.g. 0.01%")
    frac = value / 100.0
    if frac > 1.0 or frac < 0.0 or math.isnan(frac):
        raise _num_error(f'percentage "{text}" is out of range', col, PERCENT_EXPECTED)
    if rest and rest != "%":
        raise _num_error(
            f'invalid percentage "{text}"', col, PERCENT_EXPECTED, "only a single trailing % is allowed"
        )
    return frac


def percent_to_u32(frac: float) -> int:
    """netem ``set_percent``: ``rint(fraction × UINT32_MAX)`` (round half even)."""
    return int(round(frac * U32_MAX))


def parse_percent(text: str, col: int | None = None) -> int:
    """tc PERCENT -> u32 fraction of 2³²−1 (``loss 0.01%`` → 429497)."""
    return percent_to_u32(parse_percent_fraction(text, col))


PROB_EXPECTED = "a probability between 0 and 1, e.g. 0.02"


def parse_probability(text: str, col: int | None = None) -> float:
    """RED ``probability`` (``%lg``): a fraction in [0, 1]; ``2%`` is rejected."""
    value, rest = strtod_prefix(text)
    if value is None:
        raise _num_error(f'invalid probability "{text}"', col, PROB_EXPECTED)
    if rest == "%":
        raise _num_error(
            f'invalid probability "{text}"',
            col,
            PROB_EXPECTED,
            f"probability is a fraction, not a percentage: write {value / 100:g}",
        )
    if rest:
        raise _num_error(f'invalid probability "{text}"', col, PROB_EXPECTED)
    if not (0.0 <= value <= 1.0):
        raise _num_error(f'probability "{text}" is out of range', col, PROB_EXPECTED)
    return value


# --------------------------------------------------------------------------
# iperf3 (src/units.c)

_IPERF_NUM = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_IPERF_SUFFIX = {"k": 1, "m": 2, "g": 3, "t": 4}

IPERF_RATE_EXPECTED = "a rate in bits/s: 1M, 0.9m, 900K, 1G (k/m/g/t; no 'bit' or 'bps')"
IPERF_SIZE_EXPECTED = "a size in bytes: 1448, 64K, 10M, 1G (K/M/G are ×1024)"


def _iperf_number(text: str, col: int | None, kilo: int, expected: str, what: str) -> float | int:
    m = _IPERF_NUM.match(text)
    if not m:
        raise _num_error(f'invalid {what} "{text}"', col, expected)
    value = float(m.group(0))
    rest = text[m.end() :]
    if rest == "":
        # digits only: exact (a double would round 2^64 - 1 up past the u64 bound)
        # (beyond 40 digits the double, then the caller's range check, says it is too large)
        return int(m.group(0)) if m.group(0).isdigit() and len(m.group(0)) <= 40 else value
    if len(rest) == 1 and rest.lower() in _IPERF_SUFFIX:
        return value * float(kilo) ** _IPERF_SUFFIX[rest.lower()]
    hint = None
    if rest[:1].lower() in _IPERF_SUFFIX:
        hint = f"write {m.group(0)}{rest[0]} (iperf3 reads only the letter after the number)"
    raise _num_error(f'invalid {what} "{text}": unknown unit "{rest}"', col, expected, hint)


def check_u64(value: float | int, text: str, col: int | None, what: str, unit: str, expected: str,
              maximum: int = U64_MAX) -> int:
    """``value`` truncated to an integer, or an error naming the bound when it is not finite
    or above ``maximum`` (default 2⁶⁴−1: the engine keeps rates, byte counts and
    nanoseconds in u64; iperf3 itself keeps ``-b`` and ``-n`` in ``uint64_t``)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise _num_error(f'{what} "{text}" is not a finite number', col, expected,
                         f"the largest {what} is {maximum} {unit}")
    if value > maximum:
        raise _num_error(f'{what} "{text}" is too large (maximum {maximum} {unit})', col, expected)
    return int(value)


def parse_iperf_rate(text: str, col: int | None = None, *, legacy_1024: bool = False) -> int:
    """iperf3 ``-b``: bits/s. 3.1+ decimal k/m/g/t; ``legacy_1024`` for 3.0.x; at most 2⁶⁴−1."""
    value = _iperf_number(text, col, 1024 if legacy_1024 else 1000, IPERF_RATE_EXPECTED, "rate")
    return check_u64(value, text, col, "rate", "bits/s", IPERF_RATE_EXPECTED)


def parse_iperf_size(text: str, col: int | None = None) -> int:
    """iperf3 ``unit_atoi`` (``-n``, ``-l``, ``-w``): bytes, K/M/G/T ×1024; at most 2⁶⁴−1."""
    value = _iperf_number(text, col, 1024, IPERF_SIZE_EXPECTED, "size")
    return check_u64(value, text, col, "size", "bytes", IPERF_SIZE_EXPECTED)


# --------------------------------------------------------------------------
# durations (sleep, generators)

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([a-z]*)")
_DURATION_NS = {
    "": 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 10**3,
    "ns": 1,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
    "d": 86400 * 10**9,
}
DURATION_EXPECTED = "a duration: 10 (seconds), 0.5, 2s, 500ms, 1m, 1h"
#: the engine's clock is u64 nanoseconds (time.rs SimTime)
MAX_DURATION_NS = U64_MAX


def parse_duration_ns(text: str, col: int | None = None) -> int:
    """``1`` / ``0.5`` / ``2s`` / ``500ms`` / ``250us`` / ``1m`` / ``1h`` / ``1d`` -> ns.

    A bare number is seconds (as for ``sleep``); ``m`` is minutes. The value
    is computed exactly (decimal), truncated to whole ns.
    """
    m = _DURATION.fullmatch(text)
    if not m or m.group(2) not in _DURATION_NS:
        hint = None
        if m and m.group(2) in ("sec", "secs", "msec", "min"):
            hint = {"sec": "s", "secs": "s", "msec": "ms", "min": "m"}[m.group(2)]
            hint = f"write {m.group(1)}{hint}"
        raise _num_error(f'invalid duration "{text}"', col, DURATION_EXPECTED, hint)
    try:
        value = Decimal(m.group(1)) * _DURATION_NS[m.group(2)]
    except InvalidOperation:  # pragma: no cover - regex guarantees a number
        raise _num_error(f'invalid duration "{text}"', col, DURATION_EXPECTED) from None
    if value > MAX_DURATION_NS:
        raise _num_error(
            f'duration "{text}" is too long (maximum {MAX_DURATION_NS // 10**9} s)', col, DURATION_EXPECTED,
            "the simulated clock counts nanoseconds in 64 bits (about 584 years)",
        )
    return int(value)
