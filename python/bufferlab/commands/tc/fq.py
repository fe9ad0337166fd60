"""``fq`` (tc/q_fq.c ``fq_parse_opt``, ``fq_print_opt``, ``fq_print_xstats``).

[modern] iproute2 >= 6.9 with Linux 6.8: ``bands 3 priomap``, ``weights``, ``ce_threshold``,
``timer_slack``, ``horizon``, ``horizon_drop``/``horizon_cap``; sizes with ``sprint_size``,
xstats ``  flows F (inactive I throttled T) band0_pkts …`` then ``  gc G highprio H …``.
[lab2019] iproute2 4.15: none of those keywords (``What is "…"?``), sizes as plain numbers,
xstats ``  F flows (I inactive, T throttled)`` then ``  G gc, H highprio, … throttled``
(docs/semantics/qdiscs.md §15).
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_rate, parse_time_ns64, parse_time_us
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecFq as FqSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_rate, sprint_size, sprint_time, sprint_time64

_USAGE_OLD = (
    "Usage: ... fq [ limit PACKETS ] [ flow_limit PACKETS ] [ quantum BYTES ] [ initial_quantum BYTES ] "
    "[ maxrate RATE ] [ buckets NUMBER ] [ [no]pacing ] [ refill_delay TIME ] [ low_rate_threshold RATE ] "
    "[ orphan_mask MASK]"
)
_USAGE = (
    "Usage: ... fq [ limit PACKETS ] [ flow_limit PACKETS ] [ quantum BYTES ] [ initial_quantum BYTES ] "
    "[ maxrate RATE ] [ buckets NUMBER ] [ [no]pacing ] [ refill_delay TIME ] "
    "[ bands 3 priomap P0 P1 ... P14 P15 ] [ weights W1 W2 W3 ] [ low_rate_threshold RATE ] "
    "[ orphan_mask MASK] [ timer_slack TIME] [ ce_threshold TIME ] [ horizon TIME ] [ horizon_{cap|drop} ]"
)
_UINTS = ("limit", "flow_limit", "buckets", "quantum", "initial_quantum", "orphan_mask")
_RATES = ("maxrate", "low_rate_threshold", "defrate")
_OLD_KEYWORDS = [*_UINTS, *_RATES, "refill_delay", "pacing", "nopacing", "help"]
_NEW_KEYWORDS = ["ce_threshold", "timer_slack", "horizon", "horizon_drop", "horizon_cap", "bands", "weights"]
#: FQ_MIN_WEIGHT
_MIN_WEIGHT = 16384


def _ilog2(val: int) -> int:
    """q_fq.c ``ilog2``: bits of val - 1 (the log2 rounded up)."""
    val = (val - 1) & 0xFFFFFFFF
    res = 0
    while val:
        res += 1
        val >>= 1
    return res


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> FqSpec:
    modern = profile.tc_modern_print
    usage = _USAGE if modern else _USAGE_OLD
    keywords = _OLD_KEYWORDS + (_NEW_KEYWORDS if modern else [])
    spec = FqSpec()
    buckets = 0
    seen_bands = seen_weights = False
    while not cur.done():
        w = cur.take()
        t = w.text
        if t not in keywords:
            raise CommandError(f'What is "{t}"?', col=w.col, expected=usage,
                               suggestion=suggestion_for(t, keywords))
        if t in _UINTS:
            v = cur.value(w, f"{t} NUMBER")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                # q_fq.c reports a bad orphan_mask as "initial_quantum"
                name = "initial_quantum" if t == "orphan_mask" else t
                raise CommandError(f'Illegal "{name}"', col=v.col, expected=usage)
            if t == "buckets":
                buckets = n
            else:
                setattr(spec, t, n)
        elif t in _RATES:
            v = cur.value(w, f"{t} RATE")
            setattr(spec, t, int(read_unit(parse_rate, v, f'Illegal "{t}"', bits32=True)))
        elif t in ("refill_delay", "ce_threshold", "horizon"):
            v = cur.value(w, f"{t} TIME")
            setattr(spec, t, min(int(read_unit(parse_time_us, v, f'Illegal "{t}"')), U32_MAX))
        elif t == "timer_slack":
            v = cur.value(w, "timer_slack TIME")
            ns = int(read_unit(parse_time_ns64, v, 'Illegal "timer_slack"'))
            if ns > U32_MAX:
                raise CommandError('Illegal (out of range) "timer_slack"', col=v.col, expected=usage)
            spec.timer_slack = ns
        elif t in ("pacing", "nopacing"):
            spec.pacing = t == "pacing"
        elif t in ("horizon_drop", "horizon_cap"):
            spec.horizon_drop = t == "horizon_drop"
        elif t == "bands":
            if seen_bands:
                raise CommandError('Duplicate "bands"', col=w.col, expected=usage)
            v = cur.value(w, "bands 3")
            n = c_int_full(v.text, 10)
            if n is None:
                raise CommandError('Illegal "bands"', col=v.col, expected=usage)
            if n != 3:
                raise CommandError('"bands" must be 3', col=v.col, expected=usage)
            pm = cur.value(v, "priomap P0 … P15")
            if pm.text != "priomap":
                raise CommandError('"priomap" expected', col=pm.col, expected=usage)
            bands: list[int] = []
            for _ in range(16):
                if cur.done():
                    raise CommandError("Not enough elements in priomap", col=pm.col, expected=usage)
                e = cur.take()
                b = c_int_full(e.text, 10)
                if b is None or not 0 <= b <= U32_MAX:
                    raise CommandError('Illegal "priomap" element, number in [0..2] expected', col=e.col,
                                       expected=usage)
                if b >= 3:
                    raise CommandError(f'"priomap" element {b} too big', col=e.col, expected=usage)
                bands.append(b)
            spec.priomap = bands
            seen_bands = True
        elif t == "weights":
            if seen_weights:
                raise CommandError('Duplicate "weights"', col=w.col, expected=usage)
            ws: list[int] = []
            for _ in range(3):
                if cur.done():
                    raise CommandError("Not enough elements in weights", col=w.col, expected=usage)
                e = cur.take()
                x = c_int_full(e.text, 10)
                if x is None or not -(2**31) <= x < 2**31:
                    raise CommandError('Illegal "weights" element, positive number expected', col=e.col,
                                       expected=usage)
                if x < _MIN_WEIGHT:
                    raise CommandError(f'"weight" element {x} too small', col=e.col, expected=usage)
                ws.append(x)
            spec.weights = ws
            seen_weights = True
        elif t == "help":
            raise CommandError(usage, col=w.col, expected=usage)
    if buckets:
        spec.buckets_log = _ilog2(buckets)
    if spec.defrate is not None:
        diag.warn("fq: the kernel ignores defrate (sch_fq: defrate ignored)", kind_word.col)
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_fq.c ``fq_print_opt`` of the kernel's ``fq_dump``."""
    g = lambda k, d: int(opts.get(k, d))  # noqa: E731
    out = "limit %dp flow_limit %dp buckets %d orphan_mask %d " % (
        g("limit", 10000), g("flow_limit", 100), 1 << g("buckets_log", 10), g("orphan_mask", 1023))
    if not opts.get("pacing", True):
        out += "nopacing "
    if modern:
        out += "bands 3 priomap " + "".join("%d " % b for b in opts.get("priomap", [1, 2, 2, 2, 1, 2, 0, 0]
                                                                         + [1] * 8))
        out += "weights " + "".join("%d " % x for x in opts.get("weights", [589824, 196608, 65536]))
        out += "quantum %s initial_quantum %s " % (sprint_size(g("quantum", 3028)),
                                                   sprint_size(g("initial_quantum", 15140)))
    else:
        out += "quantum %d initial_quantum %d " % (g("quantum", 3028), g("initial_quantum", 15140))
    maxrate = g("maxrate", 0xFFFFFFFF)
    if maxrate != 0xFFFFFFFF:
        out += "maxrate %s " % sprint_rate(maxrate)
    low = g("low_rate_threshold", 68750)
    if low != 0:
        out += "low_rate_threshold %s " % sprint_rate(low)
    out += "refill_delay %s " % sprint_time(g("refill_delay", 40000), modern)
    if modern:
        ce = g("ce_threshold", 0xFFFFFFFF)
        if ce != 0xFFFFFFFF:
            out += "ce_threshold %s " % sprint_time(ce, modern)
        out += "timer_slack %s " % sprint_time64(g("timer_slack", 10000))
        out += "horizon %s " % sprint_time(g("horizon", 10_000_000), modern)
        out += "horizon_drop " if opts.get("horizon_drop", True) else "horizon_cap "
    return out


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    """tc/q_fq.c ``fq_print_xstats`` ([modern] 6.9, [lab2019] 4.15 wording)."""
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    delay = g("time_next_delayed_flow")
    if not modern:
        out = "  %d flows (%d inactive, %d throttled)" % (
            g("flows"),
            g("inactive_flows"),
            g("throttled_flows"),
        )
        if delay > 0:
            out += ", next packet delay %d ns" % delay
        out += "\n  %d gc, %d highprio" % (g("gc_flows"), g("highprio_packets"))
        if g("tcp_retrans"):
            out += ", %d retrans" % g("tcp_retrans")
        out += ", %d throttled" % g("throttled")
        if g("unthrottle_latency_ns"):
            out += ", %d ns latency" % g("unthrottle_latency_ns")
        if g("flows_plimit"):
            out += ", %d flows_plimit" % g("flows_plimit")
        if g("pkts_too_long") or g("allocation_errors"):
            return out + "\n  %d too long pkts, %d alloc errors\n" % (
                g("pkts_too_long"),
                g("allocation_errors"),
            )
        return out + "\n"
    pkts = list(x.get("band_pkt_count") or [0, 0, 0])
    drops = list(x.get("band_drops") or [0, 0, 0])
    out = "  flows %d (inactive %d throttled %d)" % (g("flows"), g("inactive_flows"), g("throttled_flows"))
    out += " band0_pkts %d band1_pkts %d band2_pkts %d" % tuple(int(p) for p in pkts)
    if delay > 0:
        out += " next_packet_delay %s" % sprint_time64(delay)
    out += "\n  gc %d highprio %d" % (g("gc_flows"), g("highprio_packets"))
    if g("fastpath_packets"):
        out += " fastpath %d" % g("fastpath_packets")
    if g("tcp_retrans"):
        out += " retrans %d" % g("tcp_retrans")
    out += " throttled %d" % g("throttled")
    if g("unthrottle_latency_ns"):
        out += " latency %s" % sprint_time64(g("unthrottle_latency_ns"))
    if g("ce_mark"):
        out += " ce_mark %d" % g("ce_mark")
    if g("flows_plimit"):
        out += " flows_plimit %d" % g("flows_plimit")
    if g("pkts_too_long") or g("allocation_errors") or g("horizon_drops") or g("horizon_caps") or any(drops):
        out += "\n"
        if g("pkts_too_long"):
            out += " pkts_too_long %d" % g("pkts_too_long")
        if g("allocation_errors"):
            out += " alloc_errors %d" % g("allocation_errors")
        if g("horizon_drops"):
            out += " horizon_drops %d" % g("horizon_drops")
        if g("horizon_caps"):
            out += "  horizon_caps %d" % g("horizon_caps")
        for i, d in enumerate(drops):
            if d:
                out += " band%d_drops %d" % (i, int(d))
    return out + "\n"


KINDS = (QdiscKind("fq", _parse_opt, _print_opt, _print_xstats),)
