"""``tc [-s] [-d] qdisc show dev X`` text from the engine's ``qdisc_show`` blocks.

Reproduces iproute2 (docs/semantics/formats.md §3; docs/semantics/qdiscs.md §3.4, §4.1, §5.7):
``tc/tc_qdisc.c`` ``print_qdisc``: ``qdisc KIND MAJ: root|parent X:Y [refcnt N
]OPTIONS`` (the kind's printer, registry.py) then, with ``-s``, the statistics
lines of ``tc/tc_util.c`` ``print_tcstats2_attr`` (`` Sent … pkt (dropped …,
overlimits … requeues …) `` with its trailing blank, `` backlog SIZE Np requeues
N``) and the kind's xstats.

Blocks follow docs/internals.md: ``{"kind", "handle", "parent": [maj, min] |
null, "anonymous", "options", "stats"}``; ``options`` is the kind's spec from
crates/bufferlab-core/src/qdisc/spec.rs in kernel units. Two optional keys
are honoured: ``refcnt`` (default 2 for a root, 1 otherwise) and ``xstats``
(the kind's, see its module). A kind without a printer raises ``ValueError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .htb import CLASSFUL_KINDS, leaf_blocks
from .kind import PrintOpt, PrintXstats
from .registry import QDISC_KINDS
from .tc_util import sprint_size


def _printers(kind: str) -> tuple[PrintOpt, PrintXstats | None]:
    found = QDISC_KINDS.get(kind)
    if found is None or found.print_opt is None:
        shown = ", ".join(k.name for k in QDISC_KINDS.values() if k.print_opt is not None)
        raise ValueError(f"tc_show_text: qdisc kind {kind!r} has no printer yet (known: {shown})")
    return found.print_opt, found.print_xstats


def _classid_text(parent: Any) -> str:
    major, minor = int(parent[0]), int(parent[1])
    if minor == 0:
        return "%x:" % major
    if major == 0:
        return ":%x" % minor
    return "%x:%x" % (major, minor)


def _block_text(block: dict[str, Any], modern: bool, stats: bool, details: bool, dev: str | None) -> str:
    kind = block["kind"]
    opts = dict(block.get("options") or {})
    parent = block.get("parent")
    line = "qdisc %s %x: " % (kind, int(block.get("handle", 0)))
    if dev is not None:
        line += "dev %s " % dev
    line += "root " if parent is None else "parent %s " % _classid_text(parent)
    refcnt = int(block.get("refcnt", 2 if parent is None else 1))
    if refcnt != 1:
        line += "refcnt %d " % refcnt
    print_opt, print_xstats = _printers(kind)
    # sfq returns RED's counters inside its options (tc/q_sfq.c prints them with -s)
    if kind == "sfq":
        opts.update(_show_stats=stats, _xstats=block.get("xstats") or {})
    line += print_opt(opts, modern, details) + "\n"
    if not stats:
        return line
    st = block.get("stats") or {}
    g = lambda k: int(st.get(k, 0))  # noqa: E731
    line += " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d) \n" % (
        g("bytes"), g("packets"), g("drops"), g("overlimits"), g("requeues"))
    line += " backlog %s %dp requeues %d\n" % (sprint_size(g("backlog")), g("qlen"), g("requeues"))
    if print_xstats is not None:
        line += print_xstats(block, modern)
    return line


def _with_htb_leaves(blocks: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """htb's and prio's leaf qdiscs live inside their block (htb.py, prio.py): list them
    after it, and give htb's printer the ``direct_packets_stat`` tc prints among the options."""
    out = []
    for block in blocks:
        if block["kind"] == "prio" or (block["kind"] in CLASSFUL_KINDS and block["kind"] != "htb"):
            # prio, drr, ets, hfsc: no qdisc xstats; their leaves follow them
            out.append(dict(block, xstats=None))
            out.extend(leaf_blocks(block))
            continue
        if block["kind"] != "htb":
            out.append(block)
            continue
        xstats = block.get("xstats") or {}
        opts = dict(block.get("options") or {}, direct_packets_stat=xstats.get("direct_packets_stat", 0))
        out.append(dict(block, options=opts, xstats=None))
        out.extend(leaf_blocks(block))
    return out


def tc_show_text(blocks: Iterable[dict[str, Any]] | str, profile: Any, stats: bool = True,
                 details: bool = False, invisible: bool = False, dev: str | None = None) -> str:
    """``tc [-s] [-d] qdisc show dev X [invisible]`` for the engine's blocks.

    ``blocks`` is the list (or the JSON text) returned by
    ``Simulator.qdisc_show``; anonymous default children are shown only
    with ``invisible=True``. ``dev`` is given when ``tc qdisc show`` named no
    device: tc then prints ``dev NAME`` in every block's first line.
    """
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    modern = bool(profile.tc_modern_print)
    out = []
    for block in _with_htb_leaves(blocks):
        if block.get("anonymous") and not invisible:
            continue
        out.append(_block_text(block, modern, stats, details, dev))
    return "".join(out)
