"""The SIM kind ``red_ns3``: ns-3's RedQueueDisc with its own attributes (docs/semantics/qdiscs.md)."""

from __future__ import annotations

import math
from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_rate_bits, parse_size, parse_time_ns64
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecRedNs3 as RedNs3Spec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .red import red_xstats_text
from .tc_util import sprint_rate, sprint_size, sprint_time

_RED_NS3_EXPECTED = (
    "red_ns3 [variant 2015|qdisc] [mode packets|bytes] limit N minth X maxth Y [qw W] (maxp P | linterm L) "
    "[meanpktsize 500] [gentle|nogentle] [wait|nowait] [ecn] [harddrop|noharddrop] [ns1compat] "
    "[bandwidth RATE] [linkdelay TIME] [ared] [adaptmaxp] [target TIME] [interval TIME] [top F] "
    "[bottom F] [alpha F] [beta F] [rtt TIME] [feng [fengalpha F] [fengbeta F]] [nlred]"
)
_RED_NS3_FLAGS = {
    "gentle": ("gentle", True), "nogentle": ("gentle", False), "wait": ("wait", True),
    "nowait": ("wait", False), "ecn": ("ecn", True), "harddrop": ("harddrop", True),
    "noharddrop": ("harddrop", False), "ns1compat": ("ns1compat", True), "ared": ("ared", True),
    "adaptmaxp": ("adapt_max_p", True), "feng": ("feng", True), "nlred": ("nlred", True),
}
_RED_NS3_TIMES = {"linkdelay": "link_delay", "target": "target_delay", "interval": "interval", "rtt": "rtt"}
_RED_NS3_FRACTIONS = {"top": "top", "bottom": "bottom", "alpha": "alpha", "beta": "beta"}


#: RedQueueDisc-only attributes (ns3::RedQueue of 2015 has none of them)
_RED_NS3_QDISC_ONLY = ("ecn", "noharddrop", "harddrop", "ared", "adaptmaxp", "feng", "fengalpha", "fengbeta",
                       "nlred", "target", "interval", "top", "bottom", "alpha", "beta", "rtt")
_RED_NS3_KEYWORDS = ["variant", "mode", "limit", "minth", "maxth", "qw", "maxp", "linterm", "meanpktsize",
                     "bandwidth", "fengalpha", "fengbeta", *_RED_NS3_FLAGS, *_RED_NS3_TIMES,
                     *_RED_NS3_FRACTIONS]
_QW_EXPECTED = "a weight in (0, 1], or 0 / -1 / -2 for ns-3's automatic settings"


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> RedNs3Spec:
    # ns-3's attribute defaults (RedQueueDisc; docs/semantics/qdiscs.md §5.10): thresholds and
    # limit in the mode's unit, times in ns, bandwidth in bit/s; max_p = 1/linterm unless given
    spec = RedNs3Spec(
        variant="qdisc", mode="packets", limit=25, min_th=5.0, max_th=15.0, qw=0.002, linterm=50.0,
        mean_pkt_size=500, gentle=True, wait=True, bandwidth=1_500_000, link_delay=20_000_000,
        target_delay=5_000_000, interval=500_000_000, top=0.5, bottom=0.0, alpha=0.01, beta=0.9,
        rtt=100_000_000, feng_alpha=3.0, feng_beta=2.0,
    )
    seen: dict[str, Word] = {}  # keyword -> the keyword's word (for positions)

    def number(w: Word, what: str, expected: str) -> float:
        v = cur.value(w, f"{w.text} {what}")
        try:
            x = float(v.text)
        except ValueError:
            x = math.nan
        if not math.isfinite(x):
            raise CommandError(f'red_ns3: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected=expected)
        seen[w.text + ":value"] = v
        return x

    def count(w: Word) -> int:
        v = cur.value(w, f"{w.text} N")
        n = c_int_full(v.text, 0)
        if n is None or not 1 <= n <= U32_MAX:
            raise CommandError(f'red_ns3: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected="a whole number >= 1")
        return n

    limit_word: Word | None = None
    while not cur.done():
        w = cur.take()
        t = w.text
        seen[t] = w
        if t == "variant":
            v = cur.value(w, "variant 2015|qdisc")
            if v.text not in ("2015", "qdisc"):
                raise CommandError(f'red_ns3: unknown variant "{v.text}"', col=v.col,
                                   expected="2015 (ns3::RedQueue) or qdisc (ns3::RedQueueDisc)")
            spec.variant = v.text
        elif t == "mode":
            v = cur.value(w, "mode packets|bytes")
            if v.text not in ("packets", "bytes"):
                raise CommandError(f'red_ns3: unknown mode "{v.text}"', col=v.col,
                                   expected="packets or bytes",
                                   suggestion=suggestion_for(v.text, ["packets", "bytes"]))
            spec.mode = v.text
        elif t == "limit":
            limit_word = cur.value(w, "limit N (packets, or bytes with mode bytes)")
        elif t in ("minth", "maxth"):
            x = number(w, "X", "a threshold >= 0 in the mode's unit (packets or bytes), e.g. minth 5")
            if x < 0:
                raise CommandError(f"red_ns3: {t} must not be negative", col=seen[t + ":value"].col)
            setattr(spec, "min_th" if t == "minth" else "max_th", x)
        elif t == "qw":
            x = number(w, "W", _QW_EXPECTED)
            if not (0.0 < x <= 1.0 or x in (0.0, -1.0, -2.0)):
                raise CommandError(f"red_ns3: qw {seen['qw:value'].text} is outside (0, 1]",
                                   col=seen["qw:value"].col, expected=_QW_EXPECTED)
            spec.qw = x
        elif t == "maxp":
            x = number(w, "P", "a probability between 0 and 1, e.g. maxp 0.1")
            if not 0.0 <= x <= 1.0:
                txt = seen["maxp:value"].text
                raise CommandError(
                    f"red_ns3: maxp {txt} is outside 0..1", col=seen["maxp:value"].col,
                    expected="a probability between 0 and 1",
                    suggestion=f"ns-3's LInterm attribute is 1/max_p: write linterm {txt} "
                    "to reproduce a script that passed this value as LInterm")
            spec.max_p, spec.linterm = x, None
        elif t == "linterm":
            x = number(w, "L", "ns-3's LInterm (max_p = 1/L), e.g. linterm 50")
            if x <= 0:
                raise CommandError(f"red_ns3: linterm {seen['linterm:value'].text} must be above 0",
                                   col=seen["linterm:value"].col, expected="ns-3's LInterm (max_p = 1/L) > 0")
            spec.linterm, spec.max_p = x, None
        elif t == "meanpktsize":
            spec.mean_pkt_size = count(w)
        elif t == "bandwidth":
            v = cur.value(w, "bandwidth RATE")
            if v.text.lower().endswith("bps"):
                raise CommandError(
                    f'red_ns3: bandwidth "{v.text}": byte units are not accepted here', col=v.col,
                    expected="a rate in bits/s, e.g. bandwidth 1.5mbit",
                    suggestion=f"write {v.text[:-3]}bit: ns-3's \"Mbps\" is megabits/s, "
                    "tc's \"mbps\" megabytes/s")
            spec.bandwidth = int(read_unit(parse_rate_bits, v, f'red_ns3: illegal "bandwidth" "{v.text}"'))
            if spec.bandwidth <= 0:
                raise CommandError("red_ns3: bandwidth must be above 0", col=v.col)
        elif t in _RED_NS3_TIMES:
            v = cur.value(w, f"{t} TIME")
            ns = int(read_unit(parse_time_ns64, v, f'red_ns3: illegal "{t}" "{v.text}"'))
            setattr(spec, _RED_NS3_TIMES[t], ns)
        elif t in _RED_NS3_FRACTIONS:
            x = number(w, "F", "a number between 0 and 1")
            if not 0.0 <= x <= 1.0:
                raise CommandError(f"red_ns3: {t} must be between 0 and 1", col=seen[t + ":value"].col,
                                   expected="a number between 0 and 1 (ns-3's checker)")
            setattr(spec, _RED_NS3_FRACTIONS[t], x)
        elif t in ("fengalpha", "fengbeta"):
            x = number(w, "F", "a factor > 0, e.g. fengalpha 3 fengbeta 2")
            if x <= 0:
                raise CommandError(f"red_ns3: {t} must be above 0", col=seen[t + ":value"].col)
            setattr(spec, "feng_alpha" if t == "fengalpha" else "feng_beta", x)
        elif t in _RED_NS3_FLAGS:
            name, val = _RED_NS3_FLAGS[t]
            setattr(spec, name, val)
        else:
            raise CommandError(f'red_ns3: unknown option "{t}"', col=w.col, expected=_RED_NS3_EXPECTED,
                               suggestion=suggestion_for(t, _RED_NS3_KEYWORDS))

    if "maxp" in seen and "linterm" in seen:
        raise CommandError("red_ns3: give either maxp or linterm, not both", col=seen["linterm"].col,
                           expected="maxp P (the probability) or linterm L (ns-3's LInterm, max_p = 1/L)")
    if spec.variant == "2015":
        for k in _RED_NS3_QDISC_ONLY:
            if k in seen:
                raise CommandError(
                    f"red_ns3: {k} needs variant qdisc (ns3::RedQueue of 2015 has no such attribute)",
                    col=seen[k].col, expected=_RED_NS3_EXPECTED, suggestion="add variant qdisc")
    if ("ared" in seen or "adaptmaxp" in seen) and "feng" in seen:
        raise CommandError("red_ns3: ared/adaptmaxp and feng cannot be used together", col=seen["feng"].col,
                           expected="one adaptation: ared (or adaptmaxp) or feng")
    bytes_mode = spec.mode == "bytes"
    if limit_word is None:
        if bytes_mode:
            raise CommandError(
                "red_ns3: mode bytes needs a limit in bytes (ns-3's default of 25 would then mean 25 bytes)",
                col=kind_word.col, expected=_RED_NS3_EXPECTED, suggestion="e.g. limit 800 or limit 64kb")
    elif bytes_mode:
        spec.limit = int(read_unit(parse_size, limit_word, f'red_ns3: illegal "limit" "{limit_word.text}"'))
    else:
        n = c_int_full(limit_word.text, 0)
        if n is None or not 1 <= n <= U32_MAX:
            raise CommandError(f'red_ns3: illegal "limit" "{limit_word.text}"', col=limit_word.col,
                               expected="a packet count >= 1 (mode packets)",
                               suggestion="add mode bytes for a limit in bytes")
        spec.limit = n
    if spec.limit < 1:
        raise CommandError("red_ns3: limit must be at least 1", col=(limit_word or kind_word).col)
    if spec.ared:
        for k in ("minth", "maxth", "qw"):
            if k in seen:
                diag.warn(f"red_ns3: ared sets {k} automatically (ns-3 overrides the value given)",
                          col=seen[k].col)
    elif not (spec.min_th == 0 and spec.max_th == 0):
        if spec.min_th > spec.max_th:
            w = seen.get("maxth:value") or seen.get("minth:value") or kind_word
            raise CommandError(f"red_ns3: thresholds out of order: minth {spec.min_th:g} > "
                               f"maxth {spec.max_th:g}", col=w.col,
                               expected="minth <= maxth (0 and 0 = ns-3's automatic thresholds)")
        if spec.min_th > spec.limit:
            w = seen.get("minth:value") or kind_word
            unit = "bytes" if bytes_mode else "packets"
            raise CommandError(f"red_ns3: minth {spec.min_th:g} is above limit {spec.limit} ({unit}): "
                               "the queue can never reach it", col=w.col, expected="minth <= limit",
                               suggestion=None if bytes_mode else
                               "thresholds count bytes only with mode bytes")
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """SIM ``red_ns3`` (docs/semantics/qdiscs.md §5.10): the attributes as typed, in ns-3's terms."""
    bytes_mode = opts.get("mode") == "bytes"
    limit = int(opts.get("limit", 25))
    out = "variant %s mode %s limit %s minth %g maxth %g qw %g " % (
        opts.get("variant", "qdisc"), opts.get("mode", "packets"),
        sprint_size(limit) if bytes_mode else "%dp" % limit, float(opts.get("min_th", 5.0)),
        float(opts.get("max_th", 15.0)), float(opts.get("qw", 0.002)))
    if opts.get("linterm") is not None:
        out += "linterm %g " % float(opts["linterm"])
    else:
        out += "maxp %g " % float(opts.get("max_p") or 0.0)
    out += "meanpktsize %d %s %s " % (int(opts.get("mean_pkt_size", 500)),
                                      "gentle" if opts.get("gentle", True) else "nogentle",
                                      "wait" if opts.get("wait", True) else "nowait")
    out += "bandwidth %s linkdelay %s " % (sprint_rate(int(opts.get("bandwidth", 1500000)) // 8),
                                           sprint_time(int(opts.get("link_delay", 20000000)) / 1000, modern))
    if opts.get("ecn"):
        out += "ecn " + ("" if opts.get("harddrop", True) else "noharddrop ")
    for flag, name in (("ns1compat", "ns1compat"), ("ared", "ared"), ("adapt_max_p", "adaptmaxp"),
                       ("feng", "feng"), ("nlred", "nlred")):
        if opts.get(flag):
            out += name + " "
    if details and (opts.get("ared") or opts.get("adapt_max_p")):
        out += "target %s interval %s top %g bottom %g alpha %g beta %g rtt %s " % (
            sprint_time(int(opts.get("target_delay", 5000000)) / 1000, modern),
            sprint_time(int(opts.get("interval", 500000000)) / 1000, modern), float(opts.get("top", 0.5)),
            float(opts.get("bottom", 0.0)), float(opts.get("alpha", 0.01)), float(opts.get("beta", 0.9)),
            sprint_time(int(opts.get("rtt", 100000000)) / 1000, modern))
    if details and opts.get("feng"):
        out += "fengalpha %g fengbeta %g " % (float(opts.get("feng_alpha", 3.0)),
                                              float(opts.get("feng_beta", 2.0)))
    return out


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    """Linux red's line (marked = ECN marks, early = unforced + forced drops, pdrop = hard-limit
    drops), then ns-3's own counters (2015: forced_drop includes qlim_drop, as ns-3 counts) and
    the live average, max_p and effective weight/thresholds."""
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = red_xstats_text(block, modern)
    out += "  unforced_drop %d forced_drop %d qlim_drop %d unforced_mark %d forced_mark %d\n" % (
        g("unforced_drop"), g("forced_drop"), g("qlim_drop"), g("unforced_mark"), g("forced_mark"))
    out += "  avg %g cur_max_p %g qw %g minth %g maxth %g\n" % tuple(
        float(x.get(k, 0.0)) for k in ("avg", "cur_max_p", "qw", "min_th", "max_th"))
    return out


KINDS = (QdiscKind("red_ns3", _parse_opt, _print_opt, _print_xstats),)
