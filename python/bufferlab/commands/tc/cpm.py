"""The CPM coefficient map ``dscp-coeff`` of docs/semantics/qdiscs.md §7, shared by ``red`` and ``blue``
(the SIM kinds ``red_csc573``/``cpm_red``/``cpm_blue`` default to the report's map):
its parser, its ``tc qdisc show`` text and the per-class xstats lines."""

from __future__ import annotations

from typing import Any

from ...errors import CommandError
from .._common import c_int_full
from ..shell import Word
from ._schema import DscpClass, DscpCoeff
from .cursor import Cursor

#: the CPM report's table (docs/semantics/qdiscs.md §7): 0x32 → 0.5, 0x46 → 0.7, others → 0.9
REPORT_DSCP_COEFF = "0x32:0.5,0x46:0.7,default:0.9"


def parse_dscp_coeff(v: Word, kind: str) -> DscpCoeff:
    """``K:C,K:C,...,default:C``: K a hex DS byte (or decimal DSCP with
    ``dscp-match dscp``, resolved later), C a decimal >= 0."""
    classes: list[DscpClass] = []
    default: tuple[int, int] | None = None
    seen: set[int] = set()
    col = v.col
    for part in v.text.split(","):
        key, colon, coeff = part.partition(":")
        bad = CommandError(
            f'{kind}: illegal "dscp-coeff" entry "{part}"',
            col=col,
            expected="KEY:COEFF,...,default:COEFF, e.g. " + REPORT_DSCP_COEFF,
        )
        col += len(part) + 1
        if not colon or not coeff:
            raise bad
        whole, dot, frac = coeff.partition(".")
        if not (whole or frac) or not (whole + frac).isdigit() or (dot and not frac and not whole):
            raise bad
        den = 10 ** len(frac)
        num = int(whole or "0") * den + int(frac or "0")
        while den > 1 and num % 10 == 0:
            num //= 10
            den //= 10
        if key == "default":
            if default is not None:
                raise CommandError(f'{kind}: "default" given twice in "dscp-coeff"', col=v.col)
            default = (num, den)
            continue
        k = c_int_full(key, 0)
        if k is None or not 0 <= k <= 0xFF or k in seen:
            raise bad
        seen.add(k)
        classes.append(DscpClass(key=k, num=num, den=den))
    if default is None:
        raise CommandError(
            f'{kind}: "dscp-coeff" needs a "default:COEFF" entry',
            col=v.col,
            expected="KEY:COEFF,...,default:COEFF, e.g. " + REPORT_DSCP_COEFF,
        )
    return DscpCoeff(classes=classes, default=default)


def cpm_options(w: Word, cur: Cursor, kind: str, state: dict[str, Any]) -> bool:
    """``dscp-coeff LIST`` / ``dscp-match byte|dscp``; False if ``w`` is neither."""
    if w.text == "dscp-coeff":
        v = cur.value(w, "dscp-coeff KEY:COEFF,...,default:COEFF")
        state["coeff"] = parse_dscp_coeff(v, kind)
        state["coeff_col"] = v.col
        return True
    if w.text == "dscp-match":
        v = cur.value(w, "dscp-match byte|dscp")
        if v.text not in ("byte", "dscp"):
            raise CommandError(
                f'{kind}: illegal value for "dscp-match": "{v.text}"', col=v.col, expected="byte or dscp"
            )
        state["match_dscp"] = v.text == "dscp"
        return True
    return False


def finish_cpm(state: dict[str, Any], kind: str) -> DscpCoeff | None:
    coeff: DscpCoeff | None = state.get("coeff")
    if coeff is None:
        return None
    if state.get("match_dscp"):
        for c in coeff.classes:
            if c.key > 63:
                raise CommandError(
                    f"{kind}: DSCP {c.key} out of range 0..63 (dscp-match dscp)", col=state.get("coeff_col")
                )
        coeff.match_dscp = True
    return coeff


def _coeff(num: int, den: int) -> str:
    return "%g" % (int(num) / int(den))


def dscp_coeff_text(m: dict[str, Any]) -> str:
    """The CPM map as it was typed (docs/semantics/qdiscs.md §7): ``0x32:0.5,...,default:0.9``."""
    dscp = bool(m.get("match_dscp"))
    parts = [("%d" if dscp else "0x%02x") % int(c["key"]) + ":" + _coeff(c["num"], c["den"])
             for c in m.get("classes") or []]
    num, den = m.get("default") or (1, 1)
    parts.append("default:" + _coeff(num, den))
    out = ",".join(parts)
    if dscp:
        out += " dscp-match dscp"
    return out


def class_xstats_text(x: dict[str, Any]) -> str:
    """SIM per-class lines ``  class 0x32 passed N marked M early E pdrop P``."""
    out = ""
    for c in x.get("classes") or []:
        out += "  class %s passed %d marked %d early %d pdrop %d\n" % (
            c.get("key"), int(c.get("passed", 0)), int(c.get("marked", 0)), int(c.get("early", 0)),
            int(c.get("pdrop", 0)))
    return out
