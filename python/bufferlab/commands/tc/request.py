"""What ``tc qdisc ...`` becomes: a request for the engine (``TcQdiscRequest``, the generated
``TcRequest`` of _schema.py with the words' columns, serialised as the serde JSON of
crates/bufferlab-core/src/qdisc/spec.rs ``TcRequest``) or a ``tc qdisc show`` (``TcShow``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._schema import TcRequest


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


@dataclass(kw_only=True)
class TcQdiscRequest(TcRequest):
    """One ``tc qdisc {add|change|replace|link|delete} ...``."""

    #: the parser's form of the schema's ``parent`` (``root``, or the class), as ``tc qdisc
    #: show`` filters by it too; each gives its JSON (``to_json_value``)
    parent: ParentSpec | None = None  # type: ignore[assignment]
    dev_col: int | None = None
    kind_col: int | None = None
    verb_col: int | None = None

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
