"""The SIM kinds ``blue`` and ``cpm_blue`` (docs/semantics/qdiscs.md §6.1, §7): BLUE, and BLUE with the CPM
report's ``dscp-coeff`` map. xstats: ``{"pmark", "early", "overflow", "marked"[, "classes"]}``."""

from __future__ import annotations

from functools import partial
from typing import Any

from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from ...units import U32_MAX, parse_time_us
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecBlue as BlueSpec
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
from .tc_util import sprint_time

_BLUE_EXPECTED = (
    "blue [limit PACKETS] [increment D1] [decrement D2] [freeze TIME | freeze_inc TIME freeze_dec TIME] "
    "[qthresh PACKETS] [ecn] [dscp-coeff KEY:C,...,default:C]"
)
_BLUE_KEYWORDS = ["limit", "increment", "decrement", "freeze", "freeze_inc", "freeze_dec", "qthresh", "ecn",
                  "bytemode", "dscp-coeff", "dscp-match"]


def _parse_blue(
    kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile, cpm_default: bool
) -> BlueSpec:
    kind = kind_word.text
    # the SIM qdisc's defaults (docs/semantics/qdiscs.md §6.1): increment 0.0025, decrement
    # 0.00025 as rint(d·2³²), freeze 100 ms
    spec = BlueSpec(
        limit=1000, increment=10737418, decrement=1073742, freeze_inc=100_000_000, freeze_dec=100_000_000
    )
    state: dict[str, Any] = {}
    if cpm_default:
        state["coeff"] = parse_dscp_coeff(Word(REPORT_DSCP_COEFF, kind_word.col), kind)
    freeze_split = False

    def count(w: Word) -> int:
        v = cur.value(w, f"{w.text} PACKETS")
        n = c_int_full(v.text, 0)
        if n is None or not 1 <= n <= U32_MAX:
            raise CommandError(f'{kind}: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected="a packet count >= 1")
        return n

    def prob(w: Word) -> int:
        v = cur.value(w, f"{w.text} FRACTION")
        try:
            x = float(v.text)
        except ValueError:
            x = -1.0
        if not 0.0 <= x <= 1.0:
            raise CommandError(f'{kind}: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected="a fraction between 0 and 1, e.g. 0.0025")
        return min(U32_MAX, int(round(x * 2.0**32)))

    def tm(w: Word) -> int:
        v = cur.value(w, f"{w.text} TIME")
        return int(read_unit(parse_time_us, v, f'{kind}: illegal value for "{w.text}": "{v.text}"')) * 1000

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "limit":
            spec.limit = count(w)
        elif t == "increment":
            spec.increment = prob(w)
        elif t == "decrement":
            spec.decrement = prob(w)
        elif t == "freeze":
            spec.freeze_inc = spec.freeze_dec = tm(w)
        elif t in ("freeze_inc", "freeze_dec"):
            freeze_split = True
            setattr(spec, t, tm(w))
        elif t == "qthresh":
            spec.qthresh = count(w)
        elif t == "ecn":
            spec.ecn = True
        elif t == "bytemode":
            raise NotSupportedError(
                f"{kind} bytemode is not supported yet", col=w.col, expected=_BLUE_EXPECTED
            )
        elif cpm_options(w, cur, kind, state):
            pass
        else:
            raise CommandError(
                f'{kind}: unknown parameter "{t}"',
                col=w.col,
                expected=_BLUE_EXPECTED,
                suggestion=suggestion_for(t, _BLUE_KEYWORDS),
            )
    spec.shared = not freeze_split
    spec.dscp_coeff = finish_cpm(state, kind)
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    out = "limit %dp increment %g decrement %g " % (
        int(opts.get("limit", 1000)), int(opts.get("increment", 0)) / 2.0**32,
        int(opts.get("decrement", 0)) / 2.0**32)
    fi, fd = int(opts.get("freeze_inc", 0)), int(opts.get("freeze_dec", 0))
    if opts.get("shared", True):
        out += "freeze %s " % sprint_time(fi / 1000, modern)
    else:
        out += "freeze_inc %s freeze_dec %s " % (
            sprint_time(fi / 1000, modern), sprint_time(fd / 1000, modern))
    if opts.get("qthresh") is not None:
        out += "qthresh %dp " % int(opts["qthresh"])
    if opts.get("ecn"):
        out += "ecn "
    if opts.get("dscp_coeff"):
        out += "dscp-coeff %s " % dscp_coeff_text(opts["dscp_coeff"])
    return out


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    line = "  pmark %g early %d overflow %d marked %d\n" % (
        float(x.get("pmark", 0.0)), int(x.get("early", 0)), int(x.get("overflow", 0)),
        int(x.get("marked", 0)))
    return line + class_xstats_text(x)


KINDS = (
    QdiscKind("blue", partial(_parse_blue, cpm_default=False), _print_opt, _print_xstats),
    QdiscKind("cpm_blue", partial(_parse_blue, cpm_default=True)),
)
