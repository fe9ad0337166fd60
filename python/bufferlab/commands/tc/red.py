"""``red`` (tc/q_red.c, tc/tc_red.c) and the SIM kinds ``red_csc573`` / ``cpm_red``
(red with the CPM report's ``dscp-coeff`` map, docs/semantics/qdiscs.md §7).

Parsing: RED keywords (exact), defaults, and the Wlog / Plog / max_P / Scell_log +
idle-damping table tc computes. Printing: ``limit min max `` + flags, ``-d``
ewma/probability/Scell_log; xstats ``  marked … early … pdrop … other …``. The
engine's ``RedSpec`` JSON (``max_p`` = current value) is read as ``limit``,
``min``/``qth_min``, ``max``/``qth_max`` (bytes), ``ecn``/``harddrop``/``adaptive``/
``nodrop`` (bools) and, for ``-d``, ``wlog``, ``max_p`` (u32), ``plog``, ``scell_log``.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from ...units import U32_MAX, parse_rate, parse_size
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecRed as RedSpec
from .cpm import (
    REPORT_DSCP_COEFF,
    class_xstats_text,
    cpm_options,
    dscp_coeff_text,
    finish_cpm,
    parse_dscp_coeff,
)
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_size

_RED_USAGE = (
    "Usage: ... red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS]\n"
    "               [adaptive] [probability PROBABILITY] [bandwidth KBPS]\n"
    "               [ecn] [harddrop] [nodrop]"
)
_RED_EXPECTED = (
    "red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS] [probability P] "
    "[bandwidth RATE] [ecn] [harddrop] [nodrop] [adaptive]"
)
_RED_KEYWORDS = [
    "limit",
    "min",
    "max",
    "burst",
    "avpkt",
    "probability",
    "bandwidth",
    "ecn",
    "harddrop",
    "nodrop",
    "adaptive",
    "dscp-coeff",
    "dscp-match",
]


def red_eval_ewma(qmin: int, burst: int, avpkt: int) -> int:
    """``tc_red_eval_ewma``: the smallest Wlog in 1..31 whose EWMA reaches the
    threshold within ``burst`` packets; -1 if the burst is too small (a < 1)
    or no Wlog fits."""
    a = float(burst) + 1 - float(qmin) / avpkt
    if a < 1.0:
        return -1
    w = 0.5
    for wlog in range(1, 32):
        if a <= (1 - (1 - w) ** burst) / w:
            return wlog
        w /= 2
    return -1


def red_eval_p(qmin: int, qmax: int, prob: float) -> int:
    """``tc_red_eval_P``: Plog = doublings of prob/(max-min) needed to exceed 1."""
    i = qmax - qmin
    if i == 0:
        return 0
    if i < 0:
        return -1
    p = prob / i
    for n in range(32):
        if p > 1.0:
            return n
        p *= 2
    return -1


def red_eval_idle_damping(wlog: int, avpkt: int, rate: int) -> tuple[int, list[int]]:
    """``tc_red_eval_idle_damping``: (Scell_log, Stab[256]); Scell_log -1 on failure.

    xmit(avpkt) in 64-ns psched ticks = ceil(avpkt/rate · 1e6 · 15.625)
    (docs/semantics/qdiscs.md §5.2 step 4)."""
    xmit = math.ceil(avpkt / rate * 1e6 * 15.625)
    if xmit <= 0:
        return -1, []
    lw = -math.log(1.0 - 1.0 / (1 << wlog)) / xmit
    maxtime = 31 / lw
    clog = next((c for c in range(32) if maxtime / (1 << c) < 512), -1)
    if clog < 0:
        return -1, []
    stab = [0] * 256
    for i in range(1, 255):
        stab[i] = min(31, int((i << clog) * lw))
    stab[255] = 31
    return clog, stab


def _parse_red(
    kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile, cpm_default: bool
) -> RedSpec:
    limit = qmin = qmax = avpkt = burst = 0
    rate = 0
    probability = 0.02
    ecn = harddrop = adaptive = nodrop = False
    state: dict[str, Any] = {}
    if cpm_default:
        state["coeff"] = parse_dscp_coeff(Word(REPORT_DSCP_COEFF, kind_word.col), kind_word.text)

    def size(w: Word, name: str) -> int:
        v = cur.value(w, f"{name} SIZE")
        return int(read_unit(parse_size, v, f'Illegal "{name}"'))

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "limit":
            limit = size(w, "limit")
        elif t == "min":
            qmin = size(w, "min")
        elif t == "max":
            qmax = size(w, "max")
        elif t in ("avpkt", "avgpkt"):
            if t == "avgpkt":
                diag.warn(
                    '"avgpkt" is not a tc keyword (tc says: What is "avgpkt"?); read as "avpkt"', col=w.col
                )
            avpkt = size(w, "avpkt")
        elif t == "burst":
            v = cur.value(w, "burst PACKETS")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError('Illegal "burst"', col=v.col, expected="a packet count, e.g. burst 17")
            burst = n
        elif t == "probability":
            v = cur.value(w, "probability P")
            try:
                probability = float(v.text)
            except ValueError:
                raise CommandError(
                    'Illegal "probability"', col=v.col, expected="a fraction between 0 and 1, e.g. 0.02"
                ) from None
            if not 0.0 <= probability <= 1.0:
                raise CommandError(
                    f'RED: probability {v.text} is outside 0..1',
                    col=v.col,
                    expected="a fraction between 0 and 1 (no % sign), e.g. 0.02",
                )
        elif t == "bandwidth":
            v = cur.value(w, "bandwidth RATE")
            rate = int(read_unit(parse_rate, v, 'Illegal "bandwidth"', bits32=True))
        elif t == "ecn":
            ecn = True
        elif t == "harddrop":
            harddrop = True
        elif t == "nodrop":
            nodrop = True
        elif t in ("adaptive", "adaptative"):
            if t == "adaptative":
                diag.warn(
                    '"adaptative" is accepted by tc as a synonym; the documented spelling is "adaptive"',
                    col=w.col,
                )
            adaptive = True
        elif cpm_options(w, cur, kind_word.text, state):
            pass
        elif t == "qevent":
            raise NotSupportedError("red qevent is not supported yet", col=w.col, expected=_RED_EXPECTED)
        elif t == "help":
            raise CommandError(_RED_USAGE, col=w.col, expected=_RED_EXPECTED)
        else:
            raise CommandError(
                f'What is "{t}"?\n{_RED_USAGE}',
                col=w.col,
                expected=_RED_EXPECTED,
                suggestion=suggestion_for(t, _RED_KEYWORDS),
            )

    if not limit or not avpkt:
        raise CommandError(
            "RED: Required parameter (limit, avpkt) is missing",
            col=kind_word.col,
            expected=_RED_EXPECTED,
            suggestion="e.g. red limit 400kb min 16kb max 32kb avpkt 1000 burst 17 "
            "probability 0.2 bandwidth 8mbit",
        )
    if not qmax:
        qmax = qmin * 3 if qmin else limit // 4
    if not qmin:
        qmin = qmax // 3
    if not burst:
        burst = (2 * qmin + qmax) // (3 * avpkt)
    if not rate:
        rate = 1250000
        diag.warn("RED: set bandwidth to 10Mbit", col=kind_word.col)
    wlog = red_eval_ewma(qmin, burst, avpkt)
    if wlog < 0:
        a = float(burst) + 1 - float(qmin) / avpkt
        msg = "RED: failed to calculate EWMA constant."
        if a < 1.0:
            msg = (f"tc_red_eval_ewma() burst {burst} is too small ? Try burst {1 + qmin // avpkt}\n" + msg)
        raise CommandError(msg, col=kind_word.col, expected=_RED_EXPECTED,
                           suggestion=f"burst {1 + qmin // avpkt}" if a < 1.0 else None)
    if wlog >= 10:
        diag.warn(f"RED: WARNING. Burst {burst} seems to be too large.", col=kind_word.col)
    plog = red_eval_p(qmin, qmax, probability)
    if plog < 0:
        why = " (max is below min)" if qmax < qmin else ""
        raise CommandError(f"RED: failed to calculate probability.{why}", col=kind_word.col,
                           expected="min ≤ max and 0 < probability ≤ 1")
    scell_log, stab = red_eval_idle_damping(wlog, avpkt, rate)
    if scell_log < 0:
        raise CommandError("RED: failed to calculate idle damping table.", col=kind_word.col)
    if qmin > limit:
        diag.warn(f"RED: min threshold {qmin} is above limit {limit}: the average can never reach it",
                  col=kind_word.col)
    # trunc(p·2³²) as u32; p = 1.0 overflows to 0 on x86-64 (the kernel then uses Plog)
    max_p = int(probability * 2.0**32)
    if max_p > U32_MAX:
        max_p = 0
    # kernel checks (red_check_params / nodrop without ecn): RTNETLINK EINVAL
    if qmin.bit_length() + wlog >= 32 or qmax.bit_length() + wlog >= 32:
        raise CommandError("RTNETLINK answers: Invalid argument", col=kind_word.col,
                           expected="thresholds small enough for the EWMA constant (bitlen(max)+Wlog < 32)")
    if nodrop and not ecn:
        raise CommandError("RTNETLINK answers: Invalid argument", col=kind_word.col,
                           expected="nodrop only together with ecn")
    return RedSpec(
        limit=limit,
        qth_min=qmin,
        qth_max=qmax,
        wlog=wlog,
        plog=plog,
        scell_log=scell_log,
        stab=stab,
        max_p=max_p,
        ecn=ecn,
        harddrop=harddrop,
        adaptive=adaptive,
        nodrop=nodrop,
        adaptive_timer=adaptive and profile.red_adaptive_timer,
        dscp_coeff=finish_cpm(state, kind_word.text),
    )


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    qmin = opts.get("qth_min", opts.get("min"))
    qmax = opts.get("qth_max", opts.get("max"))
    out = "limit %s min %s max %s " % (sprint_size(int(opts["limit"])), sprint_size(int(qmin)),
                                       sprint_size(int(qmax)))
    if opts.get("ecn"):
        out += "ecn "
    if opts.get("harddrop"):
        out += "harddrop "
    if opts.get("adaptive"):
        out += "adaptive "
    if modern and opts.get("nodrop"):
        out += "nodrop "
    if details:
        out += "ewma %d " % int(opts.get("wlog", 0))
        max_p = int(opts.get("max_p") or 0)
        if max_p:
            out += "probability %g " % (max_p / 2.0**32)
        else:
            out += "Plog %d " % int(opts.get("plog", 0))
        out += "Scell_log %d" % int(opts.get("scell_log", 0))
        if opts.get("dscp_coeff"):
            out += " "
    if opts.get("dscp_coeff"):
        out += "dscp-coeff %s " % dscp_coeff_text(opts["dscp_coeff"])
    return out


def red_xstats_text(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    vals = tuple(int(x.get(k, 0)) for k in ("marked", "early", "pdrop", "other"))
    if modern:
        return "  marked %d early %d pdrop %d other %d \n" % vals + class_xstats_text(x)
    return "  marked %d early %d pdrop %d other %d\n" % vals + class_xstats_text(x)


def _parse_red_csc573(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> RedSpec:
    diag.warn(
        "red_csc573 is the CPM report's out-of-tree module (real tc: Unknown qdisc); "
        f"modelled as red with dscp-coeff {REPORT_DSCP_COEFF}",
        col=kind_word.col,
    )
    return _parse_red(kind_word, cur, diag, profile, cpm_default=True)


KINDS = (
    QdiscKind("red", partial(_parse_red, cpm_default=False), _print_opt, red_xstats_text),
    QdiscKind("red_csc573", _parse_red_csc573),
    QdiscKind("cpm_red", partial(_parse_red, cpm_default=True)),
)
