"""``drr`` (tc/q_drr.c): the qdisc takes no options; its classes (``tc class … drr
[quantum SIZE]``) are created one by one and fed by u32 filters: one engine request
per ``tc class`` line, sent as htb.py sends htb's (qdisc/drr/ implements them).
Printing follows ``drr_print_opt`` (the class's ``quantum``) and
``drr_print_xstats`` (`` deficit SIZE``, reported by the kernel only while the
class is backlogged, sch_drr.c ``drr_dump_class_stats``).
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import parse_size
from ..shell import Word
from ._schema import QdiscSpecDrr as DrrSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_size

#: the device's txqueuelen: the limit of a class's default pfifo
TXQUEUELEN = 1000
#: ``psched_mtu``: MTU 1500 + the Ethernet header, the default quantum
PSCHED_MTU = 1514


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> DrrSpec:
    """``drr_parse_opt``: no options."""
    if not cur.done():
        w = cur.take()
        if w.text == "help":
            raise CommandError("Usage: ... drr", col=w.col)
        raise CommandError(
            f'What is "{w.text}"?', col=w.col, expected="drr takes no options (Usage: ... drr)"
        )
    return DrrSpec(leaf_limit=TXQUEUELEN)


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """``drr_print_opt`` of the qdisc: its options nest is empty."""
    return ""


KINDS = (QdiscKind("drr", _parse_opt, _print_opt),)

CLASS_EXPECTED = "drr [quantum SIZE]"


def parse_class_opt(kind_word: Word, cur: Cursor, profile: Profile) -> dict[str, Any]:
    """``drr_parse_class_opt``: ``quantum`` (0 = not given: the kernel's psched_mtu)."""
    out: dict[str, Any] = {}
    while not cur.done():
        w = cur.take()
        if w.text == "quantum":
            v = cur.value(w, "quantum SIZE")
            out["quantum"] = read_unit(parse_size, v, 'Illegal "quantum"')
        elif w.text == "help":
            raise CommandError("Usage: ... drr quantum SIZE", col=w.col)
        else:
            raise CommandError(f'What is "{w.text}"?', col=w.col, expected="Usage: ... drr quantum SIZE")
    return out


def class_line(c: dict[str, Any]) -> str:
    """``drr_print_opt`` of a class."""
    return "quantum %s " % sprint_size(int(c["quantum"]))


def class_xstats(c: dict[str, Any]) -> str:
    """``drr_print_xstats`` (no newline of its own)."""
    return " deficit %s " % sprint_size(int(c["deficit"]))
