"""``sfb``, tc/q_sfb.c.

Parsing: keywords (exact), tc's defaults, ``max``/``target`` derivation and Q0.16
probabilities ``trunc(F·65535 + 0.5)``. Printing (``sfb_print_opt``/
``sfb_print_xstats``): [lab2019] (before iproute2 5.6) ``limit L max M target T`` +
newline + ``  increment %.5f decrement %.5f penalty rate R burst B (Rms Dms)``;
[modern] ``rehash T db T limit Lp max Mp target Tp increment %g decrement %g
penalty_rate Rpps penalty_burst Bp ``; xstats ``  earlydrop … marked M`` then
``  maxqlen L maxprob F avgprob F`` (probabilities Q0.16 / 65535).
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, strtod_prefix
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecSfb as SfbSpec
from .cursor import Cursor
from .kind import QdiscKind
from .tc_util import sprint_time

_SFB_USAGE = (
    "Usage: ... sfb [ rehash SECS ] [ db SECS ] [ limit PACKETS ] [ max PACKETS ] [ target PACKETS ] "
    "[ increment FLOAT ] [ decrement FLOAT ] [ penalty_rate PPS ] [ penalty_burst PACKETS ]"
)
_SFB_U32 = {"rehash": "rehash", "db": "db", "limit": "limit", "max": "max", "target": "target",
            "penalty_rate": "penalty_rate", "penalty_burst": "penalty_burst"}
_SFB_PROBS = ("increment", "decrement")


#: what each value means (tc's usage says SECS for rehash/db, but tc sends them as ms)
_SFB_EXPECTED = {
    "rehash": "an interval in milliseconds (an integer; 0 = never rehash)",
    "db": "a double-buffering time in milliseconds (an integer)",
    "limit": "a packet count (0 = txqueuelen)",
    "max": "a packet count per bin",
    "target": "a packet count per bin",
    "penalty_rate": "packets per second (an integer)",
    "penalty_burst": "a packet count",
    "increment": "a probability between 0 and 1, e.g. 0.0005",
    "decrement": "a probability between 0 and 1, e.g. 0.00005",
}
SFB_MAX_PROB = 65535


def sfb_prob(x: float) -> int:
    """tc's ``get_prob``: ``(__u32)(F · 65535 + 0.5)``."""
    return int(x * SFB_MAX_PROB + 0.5)


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> SfbSpec:
    # tc's defaults (q_sfb.c sfb_parse_opt): times in ms, probabilities Q0.16, limit 0 = the
    # device's txqueuelen; max and target tc derives after the loop
    spec = SfbSpec(
        rehash=600_000, db=60_000, limit=0, max=0, target=0, increment=33, decrement=3,
        penalty_rate=10, penalty_burst=20,
    )
    keywords = list(_SFB_U32) + list(_SFB_PROBS)
    while not cur.done():
        w = cur.take()
        t = w.text
        if t in _SFB_U32:
            v = cur.value(w, f"{t} {_SFB_EXPECTED[t]}")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=_SFB_EXPECTED[t])
            setattr(spec, _SFB_U32[t], n)
        elif t in _SFB_PROBS:
            v = cur.value(w, f"{t} FLOAT")
            x, rest = strtod_prefix(v.text)
            if x is None or not 0.0 <= x <= 1.0:  # NaN fails both tests here (tc would let it through)
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=_SFB_EXPECTED[t])
            if rest:
                diag.warn(f'sfb {t}: "{rest}" after the number is ignored, as tc does', col=v.col)
            setattr(spec, t, sfb_prob(x))
        else:
            raise CommandError(
                f'What is "{t}"?', col=w.col, expected=_SFB_USAGE, suggestion=suggestion_for(t, keywords)
            )
    # tc derives the missing one in __u32 arithmetic (wraps for huge values)
    if spec.max == 0:
        spec.max = ((spec.target * 5 + 1) & U32_MAX) // 4 if spec.target >= 1 else 25
    if spec.target == 0:
        spec.target = ((spec.max * 4 + 3) & U32_MAX) // 5
    return spec


def _c_int(v: Any) -> int:
    """A ``__u32`` printed with ``%d``."""
    x = int(v) & 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    g = lambda k: int(opts.get(k, 0)) & 0xFFFFFFFF  # noqa: E731
    inc, dec = g("increment") / 65535.0, g("decrement") / 65535.0
    if not modern:
        return ("limit %d max %d target %d\n  increment %.5f decrement %.5f penalty rate %d burst %d "
                "(%ums %ums)") % (_c_int(g("limit")), _c_int(g("max")), _c_int(g("target")), inc, dec,
                                  _c_int(g("penalty_rate")), _c_int(g("penalty_burst")), g("rehash"), g("db"))
    # the ms values are multiplied by 1000 in __u32 before sprint_time
    out = "rehash %s db %s " % (sprint_time(g("rehash") * 1000, True), sprint_time(g("db") * 1000, True))
    out += "limit %up max %up target %up " % (g("limit"), g("max"), g("target"))
    out += "increment %g decrement %g " % (inc, dec)
    return out + "penalty_rate %upps penalty_burst %up " % (g("penalty_rate"), g("penalty_burst"))


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0)) & 0xFFFFFFFF  # noqa: E731
    out = "  earlydrop %u penaltydrop %u bucketdrop %u queuedrop %u childdrop %u marked %u\n" % (
        g("earlydrop"), g("penaltydrop"), g("bucketdrop"), g("queuedrop"), g("childdrop"), g("marked"))
    fmt = "  maxqlen %u maxprob %g avgprob %g\n" if modern else "  maxqlen %u maxprob %.5f avgprob %.5f \n"
    return out + fmt % (g("maxqlen"), g("maxprob") / 65535.0, g("avgprob") / 65535.0)


KINDS = (QdiscKind("sfb", _parse_opt, _print_opt, _print_xstats),)
