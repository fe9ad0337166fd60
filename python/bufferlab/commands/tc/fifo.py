"""``pfifo``, ``bfifo``, ``pfifo_head_drop`` (tc/q_fifo.c): an exact ``limit`` in packets or bytes."""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import parse_size
from .._common import suggestion_for
from ..shell import Word
from ._schema import QdiscSpecBfifo, QdiscSpecPfifo, QdiscSpecPfifoHeadDrop
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_size

#: pfifo / bfifo / pfifo_head_drop; ``limit`` None = kernel default
FifoSpec = QdiscSpecPfifo | QdiscSpecBfifo | QdiscSpecPfifoHeadDrop
_SPECS: dict[str, type[FifoSpec]] = {
    "pfifo": QdiscSpecPfifo,
    "bfifo": QdiscSpecBfifo,
    "pfifo_head_drop": QdiscSpecPfifoHeadDrop,
}


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> FifoSpec:
    kind = kind_word.text
    limit: int | None = None
    while not cur.done():
        w = cur.take()
        if w.text == "limit":
            v = cur.value(w, "limit NUMBER")
            limit = read_unit(parse_size, v, f'{kind}: Illegal value for "limit": "{v.text}"')
        elif w.text == "help":
            raise CommandError("Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]", col=w.col)
        else:
            raise CommandError(
                f'{kind}: unknown parameter "{w.text}"',
                col=w.col,
                expected="limit NUMBER",
                suggestion=suggestion_for(w.text, ["limit"]),
            )
    return _SPECS[kind](limit=limit)


def _print_packets_limit(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_fifo.c ``fifo_print_opt`` for pfifo / pfifo_head_drop (kernel default 1000 packets)."""
    limit = opts.get("limit")
    return "limit %dp" % (1000 if limit is None else int(limit))


def _print_bytes_limit(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_fifo.c ``fifo_print_opt`` for bfifo (kernel default 1000 × 1514 bytes)."""
    limit = opts.get("limit")
    return "limit %s" % sprint_size(1514000 if limit is None else int(limit))


KINDS = (
    QdiscKind("pfifo", _parse_opt, _print_packets_limit),
    QdiscKind("bfifo", _parse_opt, _print_bytes_limit),
    QdiscKind("pfifo_head_drop", _parse_opt, _print_packets_limit),
)
