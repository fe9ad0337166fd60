"""``sfq`` (tc/q_sfq.c ``sfq_parse_opt``, ``sfq_print_opt``; docs/semantics/qdiscs.md §16).

The options are ``struct tc_sfq_qopt_v1`` (0 = the kernel's default). With ``redflowlimit``
tc derives RED's ``min``/``max`` (max = limit / 4, min = max / 3), ``burst`` ((2·min + max) /
(3·avpkt)), Wlog (``tc_red_eval_ewma``), Plog (``tc_red_eval_P``) and max_P =
probability·2³². sfq has no qdisc xstats; with ``-s`` tc prints RED's counters among the
options, which the kernel returns there.
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_size, strtod_prefix
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecSfq as SfqSpec
from ._schema import SfqRedSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .red import red_eval_ewma, red_eval_p
from .tc_util import sprint_size

_USAGE = (
    "Usage: ... sfq [ limit NUMBER ] [ perturb SECS ] [ quantum BYTES ] [ divisor NUMBER ] "
    "[ flows NUMBER] [ depth NUMBER ] [ headdrop ] [ redflowlimit BYTES ] [ min BYTES ] [ max BYTES ] "
    "[ avpkt BYTES ] [ burst PACKETS ] [ probability P ] [ ecn ] [ harddrop ]"
)
_KEYWORDS = ["quantum", "perturb", "limit", "divisor", "flows", "depth", "headdrop", "redflowlimit", "min",
             "max", "burst", "avpkt", "probability", "ecn", "harddrop", "help"]


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> SfqSpec:
    spec = SfqSpec()
    red_seen = False
    redlimit = qmin = qmax = burst = 0
    avpkt = 1000
    prob = 0.02
    ecn = harddrop = False

    def u32(w: Word, msg: str) -> int:
        v = cur.value(w, f"{w.text} NUMBER")
        n = c_int_full(v.text, 0)
        if n is None or not 0 <= n <= U32_MAX:
            raise CommandError(msg, col=v.col, expected=_USAGE)
        return n

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "quantum":
            v = cur.value(w, "quantum BYTES")
            spec.quantum = int(read_unit(parse_size, v, 'Illegal "limit"'))  # sic, q_sfq.c
        elif t == "perturb":
            v = cur.value(w, "perturb SECS")
            n = c_int_full(v.text, 0)
            if n is None or not -(2**31) <= n < 2**31:
                raise CommandError('Illegal "perturb"', col=v.col, expected=_USAGE)
            spec.perturb = n
        elif t == "limit":
            spec.limit = u32(w, 'Illegal "limit"')
            if spec.limit < 2:
                raise CommandError('Illegal "limit", must be > 1', col=w.col, expected=_USAGE)
        elif t == "divisor":
            spec.divisor = u32(w, 'Illegal "divisor"')
        elif t == "flows":
            spec.flows = u32(w, 'Illegal "flows"')
        elif t == "depth":
            spec.depth = u32(w, 'Illegal "flows"')  # sic, q_sfq.c
        elif t == "headdrop":
            spec.headdrop = True
        elif t == "redflowlimit":
            redlimit, red_seen = u32(w, 'Illegal "redflowlimit"'), True
        elif t == "min":
            qmin, red_seen = u32(w, 'Illegal "min"'), True
        elif t == "max":
            qmax, red_seen = u32(w, 'Illegal "max"'), True
        elif t == "burst":
            burst, red_seen = u32(w, 'Illegal "burst"'), True
        elif t == "avpkt":
            v = cur.value(w, "avpkt BYTES")
            avpkt, red_seen = int(read_unit(parse_size, v, 'Illegal "avpkt"')), True
        elif t == "probability":
            v = cur.value(w, "probability P")
            value, _rest = strtod_prefix(v.text)
            if value is None:
                raise CommandError('Illegal "probability"', col=v.col, expected=_USAGE)
            prob, red_seen = value, True
        elif t == "ecn":
            ecn, red_seen = True, True
        elif t == "harddrop":
            harddrop, red_seen = True, True
        elif t == "help":
            raise CommandError(_USAGE, col=w.col, expected=_USAGE)
        else:
            raise CommandError(f'What is "{t}"?', col=w.col, expected=_USAGE,
                               suggestion=suggestion_for(t, _KEYWORDS))
    if red_seen:
        if not redlimit:
            raise CommandError("Required parameter (redflowlimit) is missing", col=kind_word.col,
                               expected=_USAGE)
        if not qmax:
            qmax = redlimit // 4
        if not qmin:
            qmin = qmax // 3
        if not burst:
            burst = (2 * qmin + qmax) // (3 * avpkt)
        if qmax > redlimit:
            raise CommandError('"max" is larger than "limit"', col=kind_word.col, expected=_USAGE)
        if qmin >= qmax:
            raise CommandError('"min" is not smaller than "max"', col=kind_word.col, expected=_USAGE)
        wlog = red_eval_ewma(qmin, burst, avpkt)
        if wlog < 0:
            raise CommandError("SFQ: failed to calculate EWMA constant.", col=kind_word.col, expected=_USAGE)
        if wlog >= 10:
            diag.warn(f"SFQ: WARNING. Burst {burst} seems to be too large.", kind_word.col)
        plog = red_eval_p(qmin, qmax, prob)
        if plog < 0:
            raise CommandError("SFQ: failed to calculate probability.", col=kind_word.col, expected=_USAGE)
        spec.red = SfqRedSpec(qth_min=qmin, qth_max=qmax, wlog=wlog, plog=plog,
                              max_p=int(prob * 2**32) & 0xFFFFFFFF, ecn=ecn, harddrop=harddrop)
    if spec.divisor and (spec.divisor & (spec.divisor - 1) or spec.divisor > 65536):
        raise CommandError("RTNETLINK answers: Invalid argument", col=kind_word.col, expected=_USAGE)
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_sfq.c ``sfq_print_opt`` (``_show_stats``/``_xstats``: added by show.py)."""
    g = lambda k, d: int(opts.get(k, d))  # noqa: E731
    out = "limit %dp quantum %s " % (g("limit", 127), sprint_size(g("quantum", 1514)))
    if g("depth", 127):
        out += "depth %d " % g("depth", 127)
    if opts.get("headdrop"):
        out += "headdrop "
    if details:
        out += "flows %d/%d " % (g("flows", 128), g("divisor", 1024))
    out += "divisor %d " % g("divisor", 1024)
    if g("perturb", 0):
        out += "perturb %dsec " % g("perturb", 0)
    red = opts.get("red")
    if red and int(red.get("qth_min", 0)):
        out += "\n ewma %d " % int(red["wlog"])
        out += "min %s max %s probability %g " % (
            sprint_size(int(red["qth_min"])), sprint_size(int(red["qth_max"])), int(red["max_p"]) / 2**32)
        if red.get("ecn"):
            out += "ecn "
        if opts.get("_show_stats"):
            s = opts.get("_xstats") or {}
            h = lambda k: int(s.get(k, 0))  # noqa: E731
            out += "\n prob_mark %d prob_mark_head %d prob_drop %d" % (
                h("prob_mark"), h("prob_mark_head"), h("prob_drop"))
            out += "\n forced_mark %d forced_mark_head %d forced_drop %d" % (
                h("forced_mark"), h("forced_mark_head"), h("forced_drop"))
    return out


KINDS = (QdiscKind("sfq", _parse_opt, _print_opt, None),)
