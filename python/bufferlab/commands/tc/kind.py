"""One qdisc kind as tc knows it, the shape of iproute2's ``struct qdisc_util``
(tc/tc_util.h): its name, its option parser, its ``tc qdisc show`` printer and
its ``tc -s`` xstats printer. Each kind module (fifo.py, tbf.py, ...) defines
``KINDS``; registry.py lists the modules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from keyword import iskeyword
from typing import Any, ClassVar, Protocol

from ...errors import Diagnostics
from ...profile import Profile
from ..shell import Word
from .cursor import Cursor


class Spec:
    """Base of the request dataclasses of ``_schema.py`` (generated from the engine's schema
    by tools/gen_schema_types.py): ``to_dict()`` is the engine's serde JSON
    (crates/bufferlab-core/src/qdisc/spec.rs), the keys ``JSON_KEYS`` names in their order
    (serde's: the tag first, then the fields as spec.rs declares them); nested specs as
    their own ``to_dict()``, tuples and lists as lists. A subclass's own fields (columns,
    parser state) stay out of it."""

    JSON_KEYS: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        return {key: _json_value(getattr(self, _attribute(key))) for key in self.JSON_KEYS}

    def to_json_value(self) -> Any:
        return self.to_dict()


def _attribute(key: str) -> str:
    """The field of a JSON key (``class`` → ``class_``, tools/gen_schema_types.py)."""
    return key + "_" if iskeyword(key) else key


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_json_value(v) for v in value]
    return value.to_json_value() if hasattr(value, "to_json_value") else value


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
