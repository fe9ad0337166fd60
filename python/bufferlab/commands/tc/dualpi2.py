"""``dualpi2`` (Linux ≥ 6.17), tc/q_dualpi2.c: ``dualpi2_parse_opt``, ``dualpi2_print_opt``,
``dualpi2_print_xstats`` (docs/semantics/qdiscs.md §12).

tc sends an attribute only when its option was given (and, for ``limit``, ``memlimit``,
``target``, ``tupdate`` and ``step_thresh``, only when it is not 0); the kernel keeps its
defaults for the others. ``alpha``/``beta`` travel in 1/256 Hz (``alpha 0.16`` → 40);
``max_rtt``/``typical_rtt`` compute target, tupdate, alpha and beta in tc and print the
result on stderr. The keywords are compared whole (``strcmp``), not by prefix.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_time_us, strtod_prefix
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecDualpi2 as DualPi2Spec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_time

#: q_dualpi2.c: ALPHA_BETA_MAX is (2 << 23) - 1 there, in Hz before the ×256
_AB_MAX = (2 << 23) - 1
_AB_SCALE = 256
_RTT_TYP_TO_MAX = 6

_USAGE = (
    "dualpi2 [limit PACKETS] [memlimit BYTES] [coupling_factor NUMBER] [step_thresh TIME|PACKETS] "
    "[min_qlen_step PACKETS] [drop_on_overload|overflow] [drop_enqueue|drop_dequeue] "
    "[classic_protection PERCENTAGE] [max_rtt TIME [typical_rtt TIME]] [target TIME] [tupdate TIME] "
    "[alpha ALPHA] [beta BETA] [split_gso|no_split_gso] [l4s_ect|any_ect]"
)
_KEYWORDS = [
    "limit", "memlimit", "target", "tupdate", "alpha", "beta", "coupling_factor", "l4s_ect", "any_ect",
    "step_thresh", "min_qlen_step", "overflow", "drop_on_overload", "drop_enqueue", "drop_dequeue",
    "split_gso", "no_split_gso", "classic_protection", "max_rtt", "typical_rtt",
]
#: options of the out-of-tree L4S-team dualpi2 and their Linux 6.17 names
_OUT_OF_TREE = {
    "c_protection": "classic_protection", "coupling": "coupling_factor", "k": "coupling_factor",
    "l4s_ecn": "l4s_ect", "any_ecn": "any_ect", "classic_ecn": "any_ect", "step_packets": "step_thresh",
    "drop_early": "drop_enqueue", "drop_late": "drop_dequeue",
}
_FLAGS = {
    "overflow": ("drop_overload", False), "drop_on_overload": ("drop_overload", True),
    "drop_enqueue": ("drop_early", True), "drop_dequeue": ("drop_early", False),
    "split_gso": ("split_gso", True), "no_split_gso": ("split_gso", False),
    "l4s_ect": ("ecn_mask", 1), "any_ect": ("ecn_mask", 3),
}


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _get_float(text: str) -> float | None:
    """``get_float`` (strtof, the whole word)."""
    value, rest = strtod_prefix(text)
    if value is None or rest:
        return None
    return _f32(value)


def _alpha_beta(name: str, v: Word, diag: Diagnostics) -> int:
    """``parse_alpha_beta``: 0 ≤ value ≤ 16777215 Hz, sent as trunc(value × 256)."""
    f = _get_float(v.text)
    if f is None or math.isnan(f) or not 0.0 <= f <= _AB_MAX:
        raise CommandError(f'Illegal "{name}"', col=v.col, expected="a rate in Hz, e.g. 0.16")
    if f < 1.0 / _AB_SCALE:
        diag.warn(f'Warning: "{name}" is too small and will be rounded to zero.', col=v.col)
    return int(_f32(f * _AB_SCALE))


def _get_packets(text: str) -> int | None:
    """``get_packets``: a decimal number with one of the suffixes p, pkt, pkts, packet, packets."""
    j = 0
    while j < len(text) and text[j].isdigit():
        j += 1
    if j == 0 or text[j:] not in ("p", "pkt", "pkts", "packet", "packets"):
        return None
    n = int(text[:j])
    return n if n <= U32_MAX else None


def _u32(cur: Cursor, w: Word, name: str) -> int:
    v = cur.value(w, f"{name} NUMBER")
    n = c_int_full(v.text, 10)
    if n is None or not 0 <= n <= U32_MAX:
        raise CommandError(f'Illegal "{name}"', col=v.col, expected=_USAGE)
    return n


def _time(cur: Cursor, w: Word, name: str) -> int:
    v = cur.value(w, f"{name} TIME")
    return int(read_unit(parse_time_us, v, f'Illegal "{name}"'))


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> DualPi2Spec:
    spec = DualPi2Spec()
    limit = memlimit = target = tupdate = step = 0
    step_pkts = False
    rtt_max = rtt_typ = 0
    rtt_word: Word | None = None
    while not cur.done():
        w = cur.take()
        t = w.text
        if t in ("limit", "memlimit", "min_qlen_step"):
            n = _u32(cur, w, t)
            if t == "limit":
                limit = n
            elif t == "memlimit":
                memlimit = n
            else:
                spec.min_qlen_step = n
        elif t in ("target", "tupdate"):
            if t == "target":
                target = _time(cur, w, t)
            else:
                tupdate = _time(cur, w, t)
        elif t in ("alpha", "beta"):
            setattr(spec, t, _alpha_beta(t, cur.value(w, f"{t} VALUE"), diag))
        elif t == "coupling_factor":
            v = cur.value(w, "coupling_factor NUMBER")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= 0xFF:
                raise CommandError('Illegal "coupling_factor"', col=v.col, expected="an integer 0..255")
            spec.coupling = n
        elif t == "step_thresh":
            v = cur.value(w, "step_thresh TIME|PACKETS")
            try:
                step, step_pkts = parse_time_us(v.text, v.col), False
            except CommandError:
                n = _get_packets(v.text)
                if n is None:
                    raise CommandError(
                        'Illegal "step_thresh"', col=v.col, expected="a time (1ms) or packets (5p)"
                    ) from None
                step, step_pkts = n, True
        elif t == "classic_protection":
            v = cur.value(w, "classic_protection PERCENTAGE")
            # try_get_percent: parse_percent (strtod / 100 in [0, 1], an optional "%"), rint(× 100)
            value, rest = strtod_prefix(v.text)
            frac = value / 100.0 if value is not None else math.nan
            if math.isnan(frac) or not 0.0 <= frac <= 1.0 or rest not in ("", "%"):
                raise CommandError('Illegal "classic_protection"', col=v.col, expected="a percentage 0..100")
            spec.c_protection = round(frac * 100)
        elif t in ("max_rtt", "typical_rtt"):
            rtt_word = rtt_word or w
            if t == "max_rtt":
                rtt_max = _time(cur, w, t)
            else:
                rtt_typ = _time(cur, w, t)
        elif t in _FLAGS:
            name, val = _FLAGS[t]
            setattr(spec, name, val)
        else:
            raise CommandError(
                f'What is "{t}"?', col=w.col, expected=_USAGE,
                suggestion=_OUT_OF_TREE.get(t) or suggestion_for(t, _KEYWORDS),
            )
    if rtt_max or rtt_typ:
        assert rtt_word is not None
        target, tupdate = _auto_config(spec, rtt_max, rtt_typ, target, tupdate, rtt_word, diag)
    spec.limit = limit or None
    spec.memlimit = memlimit or None
    spec.target = target or None
    spec.tupdate = tupdate or None
    if step:
        if step_pkts:
            spec.step_thresh_pkts = step
        else:
            spec.step_thresh_us = step
    return spec


def _auto_config(spec: DualPi2Spec, rtt_max: int, rtt_typ: int, target: int, tupdate: int,
                 w: Word, diag: Diagnostics) -> tuple[int, int]:
    """q_dualpi2.c's ``max_rtt``/``typical_rtt`` block: (target, tupdate) in µs; alpha, beta set."""
    if not rtt_typ:
        rtt_typ = max(rtt_max // _RTT_TYP_TO_MAX, 1)
    elif not rtt_max:
        rtt_max = rtt_typ * _RTT_TYP_TO_MAX
    elif rtt_typ > rtt_max:
        raise CommandError("typical_rtt must be <= max_rtt!", col=w.col, expected=_USAGE)
    if spec.alpha is not None or spec.beta is not None or tupdate or target:
        diag.warn("rtt_max is specified, ignore alpha/beta/tupdate/target", col=w.col)
    target = rtt_typ
    third = float(rtt_max) / _f32(3.0)
    tupdate = max(int(rtt_typ if float(rtt_typ) < third else third), 1)
    alpha_f = float(tupdate) / rtt_max / rtt_max * 1e6 * _f32(0.1)
    beta_f = _f32(0.3) / float(rtt_max) * 1e6
    if beta_f > _AB_MAX:
        raise CommandError(
            "max_rtt=%s is too low and cause beta to overflow!" % sprint_time(rtt_max, True),
            col=w.col, expected=_USAGE)
    if alpha_f < 1.0 / _AB_SCALE or beta_f < 1.0 / _AB_SCALE:
        raise CommandError(
            "Large max_rtt=%s rounds down alpha=%f and/or beta=%f!"
            % (sprint_time(rtt_max, True), alpha_f, beta_f),
            col=w.col, expected=_USAGE)
    diag.warn(
        "Auto-config [max_rtt: %s, typical_rtt: %s]: target=%s tupdate=%s alpha=%f beta=%f" % (
            sprint_time(rtt_max, True), sprint_time(rtt_typ, True), sprint_time(target, True),
            sprint_time(tupdate, True), alpha_f, beta_f), col=w.col)
    spec.alpha = int(alpha_f * _AB_SCALE)
    spec.beta = int(beta_f * _AB_SCALE)
    return target, tupdate


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """``dualpi2_print_opt`` (the kernel dumps every attribute; times by ``sprint_time`` of
    iproute2 ≥ 6.17, so always in its modern form)."""
    g = lambda k, d=0: int(opts.get(k) if opts.get(k) is not None else d)  # noqa: E731
    out = "limit %dp memlimit %dB " % (g("limit", 10000), g("memlimit", 30280000))
    out += "target %s tupdate %s " % (
        sprint_time(g("target", 15000), True), sprint_time(g("tupdate", 16000), True))
    out += "alpha %f beta %f " % (g("alpha", 40) / _AB_SCALE, g("beta", 818) / _AB_SCALE)
    if opts.get("step_thresh_pkts") is not None:
        out += "step_thresh %dp " % g("step_thresh_pkts")
    else:
        out += "step_thresh %s " % sprint_time(g("step_thresh_us", 1000), True)
    out += "min_qlen_step %dp coupling_factor %d " % (g("min_qlen_step"), g("coupling", 2))
    out += "drop_on_overload " if opts.get("drop_overload", True) else "overflow "
    out += "drop_enqueue " if opts.get("drop_early") else "drop_dequeue "
    out += "classic_protection %d%% " % g("c_protection", 10)
    out += "l4s_ect " if g("ecn_mask", 1) & 3 == 1 else "any_ect "
    out += "split_gso " if opts.get("split_gso", True) else "no_split_gso "
    return out


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    """``dualpi2_print_xstats``: five lines, each ended by tc's newline, then the
    newline ``print_qdisc`` adds after every xstats printer (a blank line)."""
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    credit = g("credit")
    return (
        "prob %f delay_c %dus delay_l %dus\n" % (g("prob") / U32_MAX, g("delay_c"), g("delay_l"))
        + "pkts_in_c %d pkts_in_l %d maxq %d\n" % (g("packets_in_c"), g("packets_in_l"), g("maxq"))
        + "ecn_mark %d step_mark %d\n" % (g("ecn_mark"), g("step_marks"))
        + "credit %d (%s)\n" % (credit, "C-queue" if credit > 0 else "L-queue")
        + "memory_used %d (max %d) of memory limit %d\n\n"
        % (g("memory_used"), g("max_memory_used"), g("memory_limit"))
    )


KINDS = (QdiscKind("dualpi2", _parse_opt, _print_opt, _print_xstats),)
