"""iputils ``ping`` output for the engine's ping result (docs/semantics/formats.md §2).

Reproduces iputils ``ping_common.c`` (``gather_statistics``: the reply line
and its time bands; ``finish``: the statistics block, ``llsqrt``) and
``ping.c`` (the ``PING host (ip) 56(84) bytes of data.`` banner) for the
releases selected by ``Profile.ping_style``:

``s20161105``  truncating time bands, integer ``%d%%`` loss, ``time`` =
               1000·sec + usec/1000;
``s20180629``  (lab2019, the handouts) rounding bands whose carry is printed
               as a two-digit fraction (29 960 µs → ``29.10``), ``%g`` loss,
               and the elapsed-time bug ``(1000·sec + usec + 500)/1000``
               (``time 7ms`` for 3.004 s); integer ``mdev``;
``s20190709``  fixed bands (rounding applied before the split), correct
               ``time``; mdev from Σt²−(Σt)²/n;
``modern``     ≥ 20210202: bands start at 99 950 / 9 995 µs, elapsed time
               rounded from nanoseconds.

Statistics: n = received + duplicates; min/avg/max/mdev in µs printed
``%ld.%03ld`` (truncating); ``mdev = llsqrt(var)`` where ``llsqrt`` is
iputils' integer Newton iteration (it returns the last iterate, i.e.
⌊√a⌋ except that a+1 being a perfect square yields √(a+1)). The ``rtt``
line is printed only if a reply arrived; the final ``putchar('\\n')`` still
happens, so a run without replies ends with an empty line. Loss uses
``%g`` of a C ``float``.

Simplifications (documented): the reply source is always printed as the
numeric address (Mininet hosts have no reverse DNS, and a numeric target
sets ``F_NUMERIC``); round-trip times are the engine's ``rtt_ns``
truncated to µs. ``, pipe N`` is printed only if the result carries a
``pipesize`` > 1 (iputils' maximum of ntransmitted − seq + 1 at reply
time), which docs/internals.md does not define yet.
"""

from __future__ import annotations

import struct
from typing import Any

__all__ = ["ping_text", "ping_exit_status", "triptime_text", "llsqrt"]

_STYLES = ("s20161105", "s20180629", "s20190709", "modern")


def _cdiv(a: int, b: int) -> int:
    """C integer division (truncation toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def llsqrt(a: int) -> int:
    """iputils ``llsqrt``: Newton iteration from x = a, returns the last x."""
    prev = (1 << 63) - 1
    x = a
    if x > 0:
        while x < prev:
            prev = x
            x = (x + a // x) // 2
    return x


def triptime_text(t_us: int, style: str) -> str:
    """The ``time=`` value (without `` ms``) for a round trip of ``t_us`` µs."""
    t = int(t_us)
    if style == "s20161105":
        if t >= 100000:
            return "%d" % (t // 1000)
        if t >= 10000:
            return "%d.%01d" % (t // 1000, (t % 1000) // 100)
        if t >= 1000:
            return "%d.%02d" % (t // 1000, (t % 1000) // 10)
        return "%d.%03d" % (t // 1000, t % 1000)
    if style == "s20180629":
        if t >= 100000:
            return "%d" % ((t + 500) // 1000)
        if t >= 10000:  # %01ld of a value that can reach 10: "29.10"
            return "%d.%01d" % (t // 1000, ((t % 1000) + 50) // 100)
        if t >= 1000:  # same carry bug: ".100"
            return "%d.%02d" % (t // 1000, ((t % 1000) + 5) // 10)
        return "%d.%03d" % (t // 1000, t % 1000)
    if style in ("s20190709", "modern"):
        band_a, band_b = (100000, 10000) if style == "s20190709" else (100000 - 50, 10000 - 5)
        if t >= band_a:
            return "%d" % ((t + 500) // 1000)
        if t >= band_b:
            u = t + 50
            return "%d.%01d" % (u // 1000, (u % 1000) // 100)
        if t >= 1000:
            u = t + 5
            return "%d.%02d" % (u // 1000, (u % 1000) // 10)
        return "%d.%03d" % (t // 1000, t % 1000)
    raise ValueError(f"unknown ping style {style!r} (expected one of {', '.join(_STYLES)})")


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


def _elapsed_ms(start_ns: int, last_ns: int, style: str) -> int:
    if style == "modern":  # timespec arithmetic, rounded to ms
        d = int(last_ns) - int(start_ns)
        sec, nsec = divmod(d, 1_000_000_000)
        return 1000 * sec + (nsec + 500_000) // 1_000_000
    d = int(last_ns) // 1000 - int(start_ns) // 1000  # two gettimeofday readings
    sec, usec = divmod(d, 1_000_000)
    if style == "s20161105":
        return 1000 * sec + usec // 1000
    if style == "s20180629":  # the bug: seconds are not scaled to µs
        return (1000 * sec + usec + 500) // 1000
    return 1000 * sec + (usec + 500) // 1000


def _mdev(tsum: int, tsum2: int, n: int, style: str) -> tuple[int, int]:
    """(avg, mdev) in µs."""
    if style in ("s20161105", "s20180629"):
        avg = _cdiv(tsum, n)
        m2 = _cdiv(tsum2, n)
        return avg, llsqrt(m2 - avg * avg)
    avg = _cdiv(tsum, n)
    if tsum < 2**31 - 1:
        var = _cdiv(tsum2 - _cdiv(tsum * tsum, n), n)
    else:
        var = _cdiv(tsum2, n) - avg * avg
    return avg, llsqrt(var)


def _ms3(us: int) -> str:
    """``%ld.%03ld`` of (us / 1000, us % 1000) with C semantics."""
    q = _cdiv(us, 1000)
    return "%d.%03d" % (q, us - q * 1000)


def ping_text(result: dict[str, Any], target_as_typed: str, profile: Any, quiet: bool = False,
              echo_ctrl_c: bool = True) -> str:
    """Full stdout of ``ping [-q] <target>`` for an engine ping result (``echo_ctrl_c``: an
    interruption was Ctrl-C typed at the terminal, which echoes ``^C``; False for a signal
    sent by ``kill``)."""
    style = profile.ping_style
    if style not in _STYLES:
        raise ValueError(f"unknown ping style {style!r} (expected one of {', '.join(_STYLES)})")
    size = int(result.get("size", 56))
    dst = result["dst"]
    out = [f"PING {target_as_typed} ({dst}) {size}({size + 8 + 20}) bytes of data.\n"]
    replies = list(result.get("replies", []))
    rtts = [int(r["rtt_ns"]) // 1000 for r in replies]
    if not quiet:
        for r, t in zip(replies, rtts, strict=True):
            line = "%d bytes from %s: icmp_seq=%d" % (int(r.get("bytes", size + 8)), dst, int(r["seq"]))
            if r.get("ttl") is not None:
                line += " ttl=%d" % int(r["ttl"])
            line += " time=%s ms" % triptime_text(t, style)
            if r.get("dup"):
                line += " (DUP!)"
            out.append(line + "\n")

    tx = int(result.get("transmitted", 0))
    dups = sum(1 for r in replies if r.get("dup"))
    rx = len(replies) - dups
    out.append("^C\n" if result.get("interrupted") and echo_ctrl_c else "\n")
    out.append(f"--- {target_as_typed} ping statistics ---\n")
    line = "%d packets transmitted, %d received" % (tx, rx)
    if dups:
        line += ", +%d duplicates" % dups
    if tx:
        if style == "s20161105":
            line += ", %d%% packet loss" % _cdiv((tx - rx) * 100, tx)
        else:
            line += ", %g%% packet loss" % _float32(((tx - rx) * 100.0) / tx)
        line += ", time %dms" % _elapsed_ms(result.get("start_ns", 0),
                                            result.get("last_send_ns", result.get("start_ns", 0)),
                                            style)
    out.append(line + "\n")
    tail = ""
    comma = ""
    if rx and rtts:
        n = len(rtts)
        avg, mdev = _mdev(sum(rtts), sum(t * t for t in rtts), n, style)
        tail += "rtt min/avg/max/mdev = %s/%s/%s/%s ms" % (
            _ms3(min(rtts)), _ms3(avg), _ms3(max(rtts)), _ms3(mdev))
        comma = ", "
    pipesize = int(result.get("pipesize", 1) or 1)
    if pipesize > 1:
        tail += "%spipe %d" % (comma, pipesize)
    out.append(tail + "\n")
    return "".join(out)


def ping_exit_status(result: dict[str, Any]) -> int:
    """``exit(!nreceived || (deadline && nreceived < npackets))``."""
    replies = result.get("replies", [])
    rx = sum(1 for r in replies if not r.get("dup"))
    if rx == 0:
        return 1
    deadline = result.get("deadline_ns")
    count = result.get("count")
    if deadline and count and rx < int(count):
        return 1
    return 0


def printed_before(text: str) -> str:
    """What ping had printed on a terminal (line-buffered) when a signal it does not catch
    ended it, out of what it prints when interrupted (``text``): its header and replies,
    without the statistics."""
    k = text.find("\n--- ")  # the blank line before the statistics
    return text[:k] if k >= 0 else text
