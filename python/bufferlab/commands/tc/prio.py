"""``prio`` (tc/q_prio.c ``prio_parse_opt``/``prio_print_opt``; docs/semantics/qdiscs.md §13).

The engine holds the prio (``PrioSpec`` of crates/bufferlab-core/src/qdisc/spec.rs: bands,
priomap; the qdiscs grafted on its classes ``M:1`` … ``M:bands`` and the u32 filters come
one line at a time: a graft ``tc qdisc … parent M:N`` and ``tc filter`` are engine requests,
as for htb). ``tc qdisc change … prio`` keeps the grafts and filters (the kernel's
``prio_tune`` touches neither). ``tc class show`` lists one class
per band (``prio_dump_class``: ``class prio M:N parent M: [leaf H:]``) with its child's
counters (``prio_dump_class_stats``).
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecPrio as PrioSpec
from .cursor import Cursor
from .kind import QdiscKind
from .pfifo_fast import DEFAULT_PRIOMAP
from .pfifo_fast import _print_opt as _print_prio_opt
from .tc_util import sprint_size

#: the device's txqueuelen: the limit of a band's default pfifo
TXQUEUELEN = 1000
_TC_PRIO_MAX = 15
_USAGE = "prio bands NUMBER priomap P1 P2 ... [multiqueue]"


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> PrioSpec:
    """``prio_parse_opt``: ``bands`` (get_integer), then ``priomap`` and up to 16 bands."""
    spec = PrioSpec(bands=3, priomap=list(DEFAULT_PRIOMAP), leaf_limit=TXQUEUELEN)
    pmap_mode = False
    idx = 0
    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "bands":
            v = cur.value(w, "bands NUMBER")
            n = c_int_full(v.text, 10)
            if n is None or not -(2**31) <= n < 2**31:
                raise CommandError('Illegal "bands"', col=v.col, expected=_USAGE)
            spec.bands = n
        elif t == "priomap":
            if pmap_mode:
                raise CommandError("Error: duplicate priomap", col=w.col, expected=_USAGE)
            pmap_mode = True
        elif t == "multiqueue":
            raise NotSupportedError(
                "prio multiqueue is not supported yet (it needs a multiqueue device)", col=w.col,
                expected=_USAGE)
        elif not pmap_mode:
            raise CommandError(
                f'What is "{t}"?', col=w.col, expected=_USAGE,
                suggestion=suggestion_for(t, ["bands", "priomap", "multiqueue"]))
        else:
            band = c_int_full(t, 10)
            if band is None or not 0 <= band <= 0xFFFFFFFF:
                raise CommandError('Illegal "priomap" element', col=w.col, expected=_USAGE)
            if band >= spec.bands:
                raise CommandError('"priomap" element is out of bands', col=w.col, expected=_USAGE)
            if idx > _TC_PRIO_MAX:
                raise CommandError(
                    '"priomap" index > TC_PRIO_MAX=%d' % _TC_PRIO_MAX, col=w.col, expected=_USAGE)
            spec.priomap[idx] = band
            idx += 1
    if not 2 <= spec.bands <= 16 or any(b >= spec.bands for b in spec.priomap):
        # prio_tune: EINVAL without a message
        raise CommandError("RTNETLINK answers: Invalid argument", col=kind_word.col,
                           expected="2 to 16 bands, every priomap entry below bands")
    return spec


KINDS = (QdiscKind("prio", _parse_opt, _print_prio_opt),)


def class_show_lines(block: dict[str, Any], stats: bool) -> str:
    """``tc [-s] class show`` for one prio block: a class per band, in band order."""
    out = []
    major = int(block["handle"])
    for c in (block.get("xstats") or {}).get("classes", []):
        line = "class prio %x:%x parent %x: " % (major, c["classid"], major)
        chain = c.get("leaf") or []
        head = chain[0] if chain else None
        if head and head.get("handle"):
            line += "leaf %x: " % head["handle"]
        line += "\n"
        if stats:
            st = (head or {}).get("stats") or {}
            n = {k: int(st.get(k, 0)) for k in ("bytes", "packets", "drops", "overlimits", "requeues",
                                               "backlog", "qlen")}
            line += " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d) \n" % (
                n["bytes"], n["packets"], n["drops"], n["overlimits"], n["requeues"])
            line += " backlog %s %dp requeues %d\n" % (sprint_size(n["backlog"]), n["qlen"], n["requeues"])
        out.append(line)
    return "".join(out)
