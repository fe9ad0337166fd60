"""``tbf``, tc/q_tbf.c.

Parsing: keywords, prefix rules, mandatory checks, ``latency`` → ``limit``
conversion and its error messages. Printing (``tbf_print_opt``): ``rate R burst B
[peakrate P minburst M] lat T `` where T = 1e6·limit/rate − tick2time(buffer)
(peak analogue, larger wins), or ``limit SIZE `` when T < 0; the printed burst is
``tc_calc_xmitsize(rate, buffer_ticks)``; ``-d`` adds ``/cell mpu`` and
``linklayer ethernet``.
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_rate, parse_size, parse_time_us
from .._common import c_int_full, matches, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecTbf as TbfSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import cell_log, sprint_rate, sprint_size, sprint_time, tick2time, xmitsize, xmittime

_TBF_USAGE = (
    "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS [ mtu BYTES[/BYTES] ] "
    "[ peakrate KBPS ] [ latency TIME ] [ overhead BYTES ] [ linklayer TYPE ]"
)
_TBF_EXPECTED = (
    "tbf rate RATE burst SIZE (limit SIZE | latency TIME) [peakrate RATE mtu SIZE] [mpu SIZE] "
    "[overhead N] [linklayer ethernet|atm|adsl]"
)
_TBF_KEYWORDS = [
    "limit",
    "latency",
    "burst",
    "buffer",
    "maxburst",
    "mtu",
    "minburst",
    "mpu",
    "rate",
    "peakrate",
    "overhead",
    "linklayer",
]


def _size_and_cell(word: Word, param: str) -> int:
    """``get_size_and_cell``: SIZE[/CELL], CELL a power of two (ignored by the model)."""
    text = word.text
    msg = f'tbf: illegal value for "{param}": "{text}"'
    size_text, slash, cell_text = text.partition("/")
    size = read_unit(parse_size, Word(size_text, word.col), msg)
    if slash:
        cell = c_int_full(cell_text, 0)
        if cell is None or cell <= 0 or cell & (cell - 1) or cell >= 1 << 31:
            raise CommandError(
                msg,
                col=word.col + len(size_text) + 1,
                expected="SIZE/CELL with CELL a power of two, e.g. 10k/8",
            )
    return size


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> TbfSpec:
    limit = latency = burst = mtu = mpu = 0
    rate = peakrate = 0
    overhead = 0
    atm = False
    given: set[str] = set()

    def dup(name: str, w: Word, label: str | None = None) -> None:
        if name in given:
            raise CommandError(f'tbf: duplicate "{label or name}" specification', col=w.col)
        given.add(name)

    while not cur.done():
        w = cur.take()
        t = w.text
        if matches(t, "limit"):
            v = cur.value(w, "limit SIZE")
            dup("limit", w)
            if "latency" in given:
                raise CommandError('tbf: specifying both "latency" and "limit" is not allowed', col=w.col)
            limit = read_unit(parse_size, v, f'tbf: illegal value for "limit": "{v.text}"')
        elif matches(t, "latency"):
            v = cur.value(w, "latency TIME")
            dup("latency", w)
            if "limit" in given:
                raise CommandError('tbf: specifying both "limit" and "/latency" is not allowed', col=w.col)
            latency = read_unit(parse_time_us, v, f'tbf: illegal value for "latency": "{v.text}"')
        elif matches(t, "burst") or t in ("buffer", "maxburst"):
            v = cur.value(w, f"{t} SIZE")
            dup("burst", w, "buffer/burst/maxburst")
            burst = _size_and_cell(v, t)
        elif t in ("mtu", "minburst"):
            v = cur.value(w, f"{t} SIZE")
            dup("mtu", w, "mtu/minburst")
            mtu = _size_and_cell(v, t)
        elif t == "mpu":
            v = cur.value(w, "mpu SIZE")
            dup("mpu", w)
            mpu = read_unit(parse_size, v, f'tbf: illegal value for "mpu": "{v.text}"')
        elif t == "rate":
            v = cur.value(w, "rate RATE")
            dup("rate", w)
            rate = read_unit(parse_rate, v, f'tbf: illegal value for "rate": "{v.text}"')
        elif matches(t, "peakrate"):
            v = cur.value(w, "peakrate RATE")
            dup("peakrate", w)
            peakrate = read_unit(parse_rate, v, f'tbf: illegal value for "peakrate": "{v.text}"')
        elif matches(t, "overhead"):
            v = cur.value(w, "overhead BYTES")
            dup("overhead", w)
            n = c_int_full(v.text, 10)
            if n is None or not 0 <= n <= 0xFFFF:
                raise CommandError(
                    f'tbf: illegal value for "overhead": "{v.text}"',
                    col=v.col,
                    expected="an integer between 0 and 65535",
                )
            overhead = n
        elif matches(t, "linklayer"):
            v = cur.value(w, "linklayer ethernet|atm|adsl")
            if matches(v.text, "ethernet"):
                atm = False
            elif matches(v.text, "atm") or matches(v.text, "adsl"):
                atm = True
            else:
                raise CommandError(
                    f'tbf: illegal value for "linklayer": "{v.text}"',
                    col=v.col,
                    expected="ethernet, atm or adsl",
                    suggestion=suggestion_for(v.text, ["ethernet", "atm", "adsl"]),
                )
        elif t == "help":
            raise CommandError(_TBF_USAGE, col=w.col, expected=_TBF_EXPECTED)
        else:
            raise CommandError(
                f'tbf: unknown parameter "{t}"',
                col=w.col,
                expected=_TBF_EXPECTED,
                suggestion=suggestion_for(t, _TBF_KEYWORDS),
            )

    problems = []
    if rate == 0:
        problems.append('tbf: the "rate" parameter is mandatory.')
    if not burst:
        problems.append('tbf: the "burst" parameter is mandatory.')
    if peakrate and not mtu:
        problems.append('tbf: when "peakrate" is specified, "mtu" must also be specified.')
    if limit == 0 and latency == 0:
        problems.append('tbf: either "limit" or "latency" is required.')
    if problems:
        raise CommandError(
            "\n".join(problems),
            col=kind_word.col,
            expected=_TBF_EXPECTED,
            suggestion="e.g. tbf rate 1gbit burst 500000 limit 26214400",
        )

    if limit == 0:
        lim = float(rate) * float(latency) / 1000000 + burst
        if peakrate:
            lim2 = float(peakrate) * float(latency) / 1000000 + mtu
            if lim2 < lim:
                lim = lim2
        if lim > U32_MAX:
            raise CommandError(
                f"tbf: latency {latency}us gives a limit above 4294967295 bytes",
                col=kind_word.col,
                expected=_TBF_EXPECTED,
            )
        limit = int(lim)

    return TbfSpec(
        rate=rate,
        burst=burst,
        limit=limit,
        peakrate=peakrate or None,
        mtu=mtu if peakrate else None,
        mpu=mpu,
        overhead=overhead,
        atm=atm,
    )


def tbf_latency_us(opts: dict[str, Any], modern: bool) -> float:
    """The ``lat`` value ``tbf_print_opt`` computes (may be negative)."""
    rate = int(opts["rate"])
    buffer_ticks = xmittime(rate, int(opts["burst"]), modern)
    latency = 1e6 * (int(opts["limit"]) / float(rate)) - tick2time(buffer_ticks, modern)
    prate = opts.get("peakrate")
    if prate:
        mtu_ticks = xmittime(int(prate), int(opts.get("mtu") or 0), modern)
        lat2 = 1e6 * (int(opts["limit"]) / float(prate)) - tick2time(mtu_ticks, modern)
        latency = max(latency, lat2)
    return latency


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    rate = int(opts["rate"])
    mpu = int(opts.get("mpu") or 0)
    prate = int(opts.get("peakrate") or 0)
    mtu = int(opts.get("mtu") or 0)
    cell = 1 << cell_log(mtu)
    buffer_ticks = xmittime(rate, int(opts["burst"]), modern)
    burst = xmitsize(rate, buffer_ticks, modern)
    out = "rate %s " % sprint_rate(rate)
    if details:
        out += "burst %s/%d mpu %s " % (sprint_size(burst), cell, sprint_size(mpu))
    else:
        out += "burst %s " % sprint_size(burst)
    if prate:
        out += "peakrate %s " % sprint_rate(prate)
        if mtu or mpu:
            mtu_p = xmitsize(prate, xmittime(prate, mtu, modern), modern)
            if details:
                out += "mtu %s/%d mpu %s " % (sprint_size(mtu_p), cell, sprint_size(mpu))
            else:
                out += "minburst %s " % sprint_size(mtu_p)
    latency = tbf_latency_us(opts, modern)
    if latency >= 0.0:
        out += "lat %s " % sprint_time(latency, modern)
    else:
        out += "limit %s " % sprint_size(int(opts["limit"]))
    overhead = int(opts.get("overhead") or 0)
    if overhead:
        out += "overhead %d" % overhead
    if opts.get("atm") or details:
        out += "linklayer %s " % ("atm" if opts.get("atm") else "ethernet")
    return out


KINDS = (QdiscKind("tbf", _parse_opt, _print_opt),)
