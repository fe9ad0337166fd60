"""``ets`` (tc/q_ets.c): ``bands``, ``strict``, ``quanta``, ``priomap``, as
``ets_parse_opt`` reads them and ``ets_qdisc_change`` (net/sched/sch_ets.c)
completes them: ``bands`` defaults to strict + the number of quanta, the bands
without a quantum get ``psched_mtu`` (1514), the priorities without a band go to
the last band. Its classes 1:1…1:N exist with the qdisc; ``tc class change …
ets quantum Q`` sets a non-strict band's quantum (``ets_class_change``).
Printing follows ``ets_print_opt`` / ``ets_print_copt``.
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecEts as EtsSpec
from .cursor import Cursor
from .kind import QdiscKind

TXQUEUELEN = 1000
PSCHED_MTU = 1514
#: ``TCQ_ETS_MAX_BANDS`` and ``TC_PRIO_MAX``
MAX_BANDS = 16
PRIO_MAX = 15

_USAGE = "Usage: ... ets [bands NUMBER] [strict NUMBER] [quanta Q1 Q2...] [priomap P1 P2...]"


def _unsigned(w: Word) -> int | None:
    n = c_int_full(w.text, 10)
    return n if n is not None and 0 <= n <= 0xFFFFFFFF else None


def _nbands(w: Word, what: str) -> int:
    n = _unsigned(w)
    if n is None:
        raise CommandError(f'Illegal "{what}"', col=w.col, expected="a number of bands, 0..16")
    if n > MAX_BANDS:
        raise CommandError(f'The number of "{what}" must be <= {MAX_BANDS}', col=w.col, expected="0..16")
    return n


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> EtsSpec:
    """``ets_parse_opt``, then the kernel's defaults (``ets_qdisc_change``)."""
    nbands = nstrict = 0
    quanta: list[int] = []
    priomap: list[int] = []
    mode = ""
    seen: set[str] = set()
    while not cur.done():
        w = cur.take()
        t = w.text
        if t in ("bands", "strict", "quanta", "priomap"):
            if t in seen:
                raise CommandError(f'Duplicate "{t}"', col=w.col, expected=_USAGE)
            seen.add(t)
            v = cur.value(w, f"{t} NUMBER")
            if t == "bands":
                nbands, mode = _nbands(v, "bands"), ""
                continue
            if t == "strict":
                nstrict, mode = _nbands(v, "strict"), ""
                continue
            mode, w = t, v
        elif t == "help":
            raise CommandError(_USAGE, col=w.col)
        elif not mode:
            raise CommandError(
                f'What is "{t}"?',
                col=w.col,
                expected=_USAGE,
                suggestion=suggestion_for(t, ["bands", "strict", "quanta", "priomap"]),
            )
        if mode == "quanta":
            q = _unsigned(w)
            if q is None:
                raise CommandError('Illegal "quanta" element', col=w.col, expected="a quantum in bytes")
            if q == 0:
                raise CommandError('"quanta" must be > 0', col=w.col, expected="a quantum in bytes")
            quanta.append(q)
        else:
            b = _unsigned(w)
            if b is None:
                raise CommandError('Illegal "priomap" element', col=w.col, expected="a band number")
            if len(priomap) > PRIO_MAX:
                raise CommandError(
                    f'"priomap" index cannot be higher than {PRIO_MAX}',
                    col=w.col,
                    expected="16 bands at most",
                )
            priomap.append(b)
    if not nbands:
        nbands = len(quanta) + nstrict
    if not nbands:
        raise CommandError(
            'One of "bands", "quanta" or "strict" needs to be specified', col=kind_word.col, expected=_USAGE
        )
    if nstrict + len(quanta) > nbands:
        raise CommandError(
            "Not enough total bands to cover all the strict bands and quanta",
            col=kind_word.col,
            expected=_USAGE,
        )
    if any(b >= nbands for b in priomap):
        raise CommandError(
            '"priomap" element is out of bounds', col=kind_word.col, expected=f"bands 0..{nbands - 1}"
        )
    quanta += [PSCHED_MTU] * (nbands - nstrict - len(quanta))
    priomap += [nbands - 1] * (PRIO_MAX + 1 - len(priomap))
    return EtsSpec(bands=nbands, strict=nstrict, quanta=quanta, priomap=priomap, leaf_limit=TXQUEUELEN)


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """``ets_print_opt``: ``strict`` only when not 0, ``quanta`` only with non-strict bands."""
    out = "bands %d " % int(opts["bands"])
    if int(opts.get("strict", 0)):
        out += "strict %d " % int(opts["strict"])
    if opts.get("quanta"):
        out += "quanta" + "".join(" %d" % q for q in opts["quanta"]) + " "
    return out + "priomap" + "".join(" %d" % b for b in opts["priomap"]) + " "


KINDS = (QdiscKind("ets", _parse_opt, _print_opt),)

CLASS_EXPECTED = "ets [quantum Q1]"


def parse_class_opt(kind_word: Word, cur: Cursor, profile: Profile) -> dict[str, Any]:
    """``ets_parse_copt``."""
    out: dict[str, Any] = {}
    while not cur.done():
        w = cur.take()
        if w.text == "quantum":
            if "quantum" in out:
                raise CommandError('Duplicate "quantum"', col=w.col, expected=CLASS_EXPECTED)
            v = cur.value(w, "quantum Q")
            q = _unsigned(v)
            if q is None:
                raise CommandError('Illegal "quanta" element', col=v.col, expected="a quantum in bytes")
            if q == 0:
                raise CommandError('"quanta" must be > 0', col=v.col, expected="a quantum in bytes")
            out["quantum"] = q
        elif w.text == "help":
            raise CommandError("Usage: ... ets [quantum Q1]", col=w.col)
        else:
            raise CommandError(f'What is "{w.text}"?', col=w.col, expected="Usage: ... ets [quantum Q1]")
    return out


def class_line(c: dict[str, Any]) -> str:
    """``ets_print_copt``: a strict band dumps no quantum."""
    return "quantum %d " % int(c["quantum"]) if int(c["quantum"]) else ""
