"""``pfifo_fast``: the kernel's default root qdisc, three bands chosen by the packet's
priority through a fixed priomap (engine: crates/bufferlab-core/src/qdisc/prio/). tc's
module (tc/q_prio.c) prints it and parses no options."""

from __future__ import annotations

from typing import Any

from ...errors import Diagnostics
from ...profile import Profile
from ..shell import Word
from ._schema import QdiscSpecPfifoFast as PfifoFastSpec
from .cursor import Cursor, reject_options
from .kind import QdiscKind

#: ``sch_default_prio2band``: the band of each of the 16 priorities
DEFAULT_PRIOMAP = (1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> PfifoFastSpec:
    reject_options(kind_word.text, cur)
    return PfifoFastSpec()


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_prio.c ``prio_print_opt``: ``bands 3 priomap  1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1``."""
    bands = int(opts.get("bands", 3))
    priomap = opts.get("priomap") or DEFAULT_PRIOMAP
    return "bands %d priomap " % bands + "".join(" %d" % int(p) for p in priomap)


KINDS = (QdiscKind("pfifo_fast", _parse_opt, _print_opt),)
