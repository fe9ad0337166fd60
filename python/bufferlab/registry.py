"""What the engine registers, as ``bufferlab._core.registry()`` lists it (Rust's
``schema::Registry``): the parsers, messages and ``tc`` printers take these names from
here instead of keeping copies (docs/internals.md "Registries"). Each tuple is in
registration order, which the messages that list them keep."""

from __future__ import annotations

import json

from . import _core

_REGISTRY = json.loads(_core.registry())

#: ``register_congestion_controls!``, as ``tcp_available_congestion_control`` lists them
CONGESTION_CONTROLS: tuple[str, ...] = tuple(_REGISTRY["congestion_controls"])
#: every qdisc kind a ``tc`` request may name
QDISCS: tuple[str, ...] = tuple(_REGISTRY["qdiscs"])
#: kinds that own classes with grafted leaf chains (htb, prio, drr, ets, hfsc)
CLASS_OWNERS: tuple[str, ...] = tuple(_REGISTRY["class_owners"])
#: kinds whose classes ``tc class add|change|delete`` configures
CLASS_VERB_KINDS: tuple[str, ...] = tuple(_REGISTRY["class_verbs"])
