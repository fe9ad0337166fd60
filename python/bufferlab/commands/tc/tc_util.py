"""iproute2's number printers (tc/tc_util.c) and its rate-table arithmetic (tc/tc_core.c).

* ``sprint_rate`` (bit/s, 1000-steps while divisible or ≥ 10⁶), ``sprint_size``
  (``Mb``/``Kb``/``b`` with rint, round-half-even), ``sprint_time`` (the µs
  argument is a ``__u32``: the double is truncated; [lab2019] ``%.1fs``/``%.1fms``,
  [modern, iproute2 ≥ 5.7] ``%.3g``), ``print_time64`` (ns, modern);
* ``tc_calc_xmittime`` / ``tc_calc_xmitsize`` / ``tc_core_tick2time`` (psched
  tick = 1/15.625 µs). [lab2019] (iproute2 4.15 … 6.13) they truncate to whole
  µs and whole ticks; [modern] the 2025 rounding fix: ticks =
  ceil(burst/rate·1e6·15.625), tick→µs in double (docs/semantics/formats.md and
  docs/semantics/qdiscs.md state the ceil form).
"""

from __future__ import annotations

import math

UINT32_MAX = 4294967295
TICKS_PER_US = 15.625  # /proc/net/psched: 1000/64


def rint(x: float) -> float:
    return float(round(x))  # Python rounds half to even, like rint()


def sprint_size(sz: int) -> str:
    """``sprint_size``: 26214400 → ``25Mb``, 2621440 → ``2560Kb``, 2184533 → ``2184533b``."""
    sz = int(sz) & 0xFFFFFFFF  # __u32 argument
    tmp = float(sz)
    mb = 1024 * 1024
    if sz >= mb and abs(mb * rint(tmp / mb) - sz) < 1024:
        return "%gMb" % rint(tmp / mb)
    if sz >= 1024 and abs(1024 * rint(tmp / 1024) - sz) < 16:
        return "%gKb" % rint(tmp / 1024)
    return "%db" % sz


def sprint_rate(bytes_per_s: int) -> str:
    """``sprint_rate`` of a rate in bytes/s (printed in bit/s)."""
    rate = int(bytes_per_s) * 8
    units = ("", "K", "M", "G", "T")
    i = 0
    while i < len(units) - 1:
        if rate < 1000:
            break
        if rate % 1000 != 0 and rate < 1000 * 1000:
            break
        rate //= 1000
        i += 1
    return "%.0f%sbit" % (float(rate), units[i])


def u32(x: float) -> int:
    """C conversion of a non-negative double to ``__u32`` (truncation)."""
    return int(math.trunc(x)) & 0xFFFFFFFF


def sprint_time(us: float, modern: bool) -> str:
    """``sprint_time``: the argument is a ``__u32`` number of µs."""
    t = u32(us)
    tmp = float(t)
    if tmp >= 1e6:
        return ("%.3gs" if modern else "%.1fs") % (tmp / 1e6)
    if tmp >= 1e3:
        return ("%.3gms" if modern else "%.1fms") % (tmp / 1e3)
    return "%dus" % t


def sprint_time64(ns: int) -> str:
    """``print_time64`` (iproute2 ≥ 4.16 netem times, ns)."""
    ns = int(ns)
    tmp = float(ns)
    if ns >= 1_000_000_000:
        return "%.3gs" % (tmp / 1e9)
    if ns >= 1_000_000:
        return "%.3gms" % (tmp / 1e6)
    if ns >= 1_000:
        return "%.3gus" % (tmp / 1e3)
    return "%dns" % ns


def sprint_percent(per: int) -> str:
    """``sprint_percent`` of a u32 probability: 429497 → ``0.01%``."""
    return "%g%%" % (100.0 * int(per) / UINT32_MAX)


def xmittime(rate: int, size: int, modern: bool) -> int:
    """``tc_calc_xmittime``: psched ticks to send ``size`` bytes at ``rate`` B/s."""
    t = 1e6 * (float(size) / float(rate))
    if modern:
        val = math.ceil(t * TICKS_PER_US)
        return min(int(val), UINT32_MAX)
    return u32(u32(t) * TICKS_PER_US)


def tick2time(ticks: int, modern: bool) -> float:
    if modern:
        return ticks / TICKS_PER_US
    return float(u32(ticks / TICKS_PER_US))


def xmitsize(rate: int, ticks: int, modern: bool) -> int:
    """``tc_calc_xmitsize``: bytes sent at ``rate`` during ``ticks``."""
    return int(math.trunc(float(rate) * tick2time(ticks, modern) / 1e6))


def cell_log(mtu: int) -> int:
    """``tc_calc_rtable`` with cell_log −1 (mtu 0 → 2047)."""
    mtu = mtu or 2047
    cell_log = 0
    while (mtu >> cell_log) > 255:
        cell_log += 1
    return cell_log
