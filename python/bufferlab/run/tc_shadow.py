"""The qdisc trees as a scenario's ``tc`` lines leave them, for ``check``.

A ``tc`` line is refused when it runs if the device's tree would break a rule the
kernel enforces, and most of those refusals are ordinary failing lines (``tc qdisc
del`` of a root that is not there). One is not: a duplicating netem next to another
netem (sch_netem.c's check, Linux 6.16) is refused because the two would copy each
other's copies without end; a scenario that relies on it cannot run as written. So
``check`` applies every ``tc`` line, in file order (parts in order, the lines of a
part as listed), to an engine of the same topology that never runs, and reports that
refusal at its line; ``run`` refuses the same line the same way (it checks first),
and the engine itself refuses it in a Mininet script. A scenario none of whose lines
says ``duplicate`` cannot break the rule, so ``check`` makes no shadow for it.

:func:`send_tc` is how a modifying ``tc`` line reaches an engine, here and in a run
(run/programs/tc.py): one request per line, by what the line is (``tc qdisc``, ``tc class``,
``tc filter`` at a qdisc or at a hook), whatever the tree holds.

The order is the file's, not the simulated one: terminals run side by side, so a line
of another terminal may in fact come first. Only this one refusal is reported, so the
approximation can only miss a refusal that ``run`` then prints as a failing line.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..commands.shell import parse_shell, simple_commands
from ..commands.tc import TcQdiscRequest, parse_tc
from ..commands.tc.htb import TcClassRequest, TcFilterRequest
from ..commands.tc.ingress import HookFilterRequest
from ..errors import Diagnostics
from ..profile import Profile
from ..scenario.topology import BuiltTopology
from .engine import Engine, TcFailure

#: the kernel's extack text for the duplicating-netem rule (crates/bufferlab-core/src/qdisc/api.rs)
NETEM_MIX = "netem: cannot mix duplicating netems with other netems in tree"


def send_tc(engine: Engine, parsed: Any, request: dict[str, Any]) -> str:
    """Apply one modifying ``tc`` line (``parsed``, its engine ``request``): the warning
    tc prints for it (htb's quantum clamp), else ""; ``TcFailure`` with tc's text."""
    if isinstance(parsed, TcClassRequest):
        return engine.tc_class(request)
    if isinstance(parsed, TcFilterRequest):
        engine.tc_filter(request)
    elif isinstance(parsed, HookFilterRequest):
        engine.tc_hook_filter(request)
    else:
        engine.tc(request)
    return ""


class TcShadow:
    """An idle engine of the scenario's topology that takes its ``tc`` lines."""

    def __init__(self, topo: BuiltTopology, profile: Profile) -> None:
        self._topo = topo
        self._profile = profile
        self._engine: Engine | None = None

    def _eng(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(self._topo.engine_config)
            # Mininet TCLink qdiscs are there before any line (Runner._apply_tclink)
            for _node, dev, args in self._topo.tclink_commands:
                words = next(simple_commands(parse_shell(f"tc qdisc add dev {dev} {args}"))).words
                req = parse_tc(words, Diagnostics(), self._profile)
                if isinstance(req, TcQdiscRequest):
                    with contextlib.suppress(TcFailure):
                        self._engine.tc({**req.to_dict(), "dev": dev})
        return self._engine

    def refusal(self, parsed: Any, request: dict[str, Any]) -> str | None:
        """Apply one modifying ``tc`` line as ``run`` does (:func:`send_tc`); tc's error
        text if the tree refuses it for the duplicating-netem rule, else None."""
        try:
            send_tc(self._eng(), parsed, request)
        except TcFailure as e:
            return str(e) if NETEM_MIX in str(e) else None
        return None
