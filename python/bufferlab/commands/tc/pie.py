"""``pie``, tc/q_pie.c."""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_time_us
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecPie as PieSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_time

_PIE_USAGE = (
    "pie [ limit PACKETS ] [ target TIME ] [ tupdate TIME ] [ alpha ALPHA ] [ beta BETA ] "
    "[ bytemode | nobytemode ] [ ecn | noecn ] [ dq_rate_estimator | no_dq_rate_estimator ]"
)
_PIE_FLAGS = {
    "ecn": ("ecn", True), "noecn": ("ecn", False), "bytemode": ("bytemode", True),
    "nobytemode": ("bytemode", False), "dq_rate_estimator": ("dq_rate_estimator", True),
    "no_dq_rate_estimator": ("dq_rate_estimator", False),
}


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> PieSpec:
    """tc/q_pie.c. [lab2019] kernels (before the 2020 rework) only had the
    drain-rate estimator (docs/semantics/qdiscs.md §11 ``pie_delay``), so it is the default there."""
    spec = PieSpec()
    if not profile.tc_modern_print:
        spec.dq_rate_estimator = True
    keywords = ["limit", "target", "tupdate", "alpha", "beta", *_PIE_FLAGS]
    while not cur.done():
        w = cur.take()
        t = w.text
        if t in ("limit", "alpha", "beta"):
            v = cur.value(w, f"{t} NUMBER")
            n = c_int_full(v.text, 0)
            hi = U32_MAX if t == "limit" else 32
            if n is None or not 0 <= n <= hi:
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=_PIE_USAGE)
            setattr(spec, t, n)
        elif t in ("target", "tupdate"):
            v = cur.value(w, f"{t} TIME")
            setattr(spec, t, min(int(read_unit(parse_time_us, v, f'Illegal "{t}"')), U32_MAX))
        elif t in _PIE_FLAGS:
            name, val = _PIE_FLAGS[t]
            setattr(spec, name, val)
        else:
            raise CommandError(
                f'What is "{t}"?', col=w.col, expected=_PIE_USAGE, suggestion=suggestion_for(t, keywords)
            )
    if spec.limit == 0:
        raise CommandError("Error: pie: limit must be at least 1", col=kind_word.col, expected=_PIE_USAGE)
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_pie.c ``pie_print_opt``."""
    out = "limit %dp target %s tupdate %s alpha %d beta %d " % (
        int(opts.get("limit", 1000)), sprint_time(int(opts.get("target", 15000)), modern),
        sprint_time(int(opts.get("tupdate", 16000)), modern), int(opts.get("alpha", 2)),
        int(opts.get("beta", 20)))
    for flag in ("ecn", "bytemode", "dq_rate_estimator"):
        if opts.get(flag):
            out += flag + " "
    return out


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = "  prob %g delay %s" % (float(x.get("prob", 0.0)), sprint_time(g("delay"), modern))
    if "avg_dq_rate" in x:
        out += " avg_dq_rate %d" % g("avg_dq_rate")
    out += "\n  pkts_in %d overlimit %d dropped %d maxq %d ecn_mark %d\n" % (
        g("packets_in"), g("overlimit"), g("dropped"), g("maxq"), g("ecn_mark"))
    return out


KINDS = (QdiscKind("pie", _parse_opt, _print_opt, _print_xstats),)
