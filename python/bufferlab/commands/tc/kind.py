"""One qdisc kind as tc knows it, the shape of iproute2's ``struct qdisc_util``
(tc/tc_util.h): its name, its option parser, its ``tc qdisc show`` printer and
its ``tc -s`` xstats printer. Each kind module (fifo.py, tbf.py, ...) defines
``KINDS``; registry.py lists the modules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Protocol

from ...errors import Diagnostics
from ...profile import Profile
from ..shell import Word
from .cursor import Cursor


class Spec:
    """Base of the spec dataclasses: ``to_dict()`` is the engine's serde JSON
    (crates/bufferlab-core/src/qdisc/spec.rs): the ``kind`` tag first, then the fields
    in their order (= spec.rs field order); nested specs as their own ``to_dict()``,
    tuples and lists as lists."""

    def to_dict(self) -> dict[str, Any]:
        names = sorted((f.name for f in fields(self)), key=lambda name: name != "kind")  # type: ignore[arg-type]
        return {name: _json_value(getattr(self, name)) for name in names}


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return list(value)
    return value.to_dict() if hasattr(value, "to_dict") else value


class QdiscSpec(Protocol):
    """What a kind's parser returns: its part of the engine's ``TcRequest``
    (crates/bufferlab-core/src/qdisc/spec.rs), in the kernel's units."""

    kind: str

    def to_dict(self) -> dict[str, Any]: ...


#: reads the options after the kind's name: (the kind's word, the words after it, warnings, profile)
ParseOpt = Callable[[Word, Cursor, Diagnostics, Profile], QdiscSpec]
#: the options text of ``tc qdisc show``: (the block's ``options``, modern iproute2, ``-d``)
PrintOpt = Callable[[dict[str, Any], bool, bool], str]
#: the lines ``tc -s`` prints after ``backlog``: (the whole ``qdisc_show`` block, modern iproute2)
PrintXstats = Callable[[dict[str, Any], bool], str]


@dataclass(frozen=True)
class QdiscKind:
    name: str
    parse_opt: ParseOpt
    #: None: the engine reports the qdisc under another kind (``cpm_red`` is shown as ``red``)
    print_opt: PrintOpt | None = None
    #: None: tc prints no xstats for the kind
    print_xstats: PrintXstats | None = None
