"""What ``tc qdisc ...`` becomes: a request for the engine (``TcQdiscRequest``,
serialised as the serde JSON of crates/bufferlab-core/src/qdisc/spec.rs ``TcRequest``;
field order = spec.rs field order) or a ``tc qdisc show`` (``TcShow``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .kind import QdiscSpec


@dataclass(frozen=True)
class ParentRoot:
    def to_json_value(self) -> Any:
        return "root"


@dataclass(frozen=True)
class ParentClass:
    major: int
    minor: int

    def to_json_value(self) -> Any:
        return {"class": {"major": self.major, "minor": self.minor}}


ParentSpec = ParentRoot | ParentClass
_VERB_JSON = {"add": "add", "change": "change", "replace": "replace", "link": "link", "delete": "delete"}


@dataclass
class TcQdiscRequest:
    """One ``tc qdisc {add|change|replace|link|delete} ...``."""

    verb: str  # "add" | "change" | "replace" | "link" | "delete"
    dev: str
    parent: ParentSpec | None = None  # None: neither root nor parent given
    handle: int | None = None  # major of "handle X:"
    qdisc: QdiscSpec | None = None  # None only for delete
    dev_col: int | None = None
    kind_col: int | None = None
    verb_col: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "verb": _VERB_JSON[self.verb],
            "dev": self.dev,
            "parent": self.parent.to_json_value() if self.parent is not None else None,
            "handle": self.handle,
            "qdisc": self.qdisc.to_dict() if self.qdisc is not None else None,
        }

    def to_json(self) -> str:
        """The ``TcRequest`` JSON the engine's ``Simulator.tc()`` takes."""
        return json.dumps(self.to_dict(), separators=(",", ":"))


@dataclass
class TcShow:
    """``tc [-s] [-d] qdisc {show|ls|list} [dev D] [root|handle H|parent P] [invisible]``."""

    dev: str | None = None
    stats: bool = False
    details: bool = False
    raw: bool = False
    pretty: bool = False
    iec: bool = False
    invisible: bool = False
    #: filters of ``tc qdisc show`` (iproute2 >= 4.x): root / parent / handle
    parent: ParentSpec | None = None
    handle: int | None = None
    dev_col: int | None = None
