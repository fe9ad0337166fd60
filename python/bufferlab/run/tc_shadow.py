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
says ``duplicate`` cannot break the rule, so ``check`` makes no shadow for it (a tc
line costs as much here as in a run: htb reads its tree back).

The order is the file's, not the simulated one: terminals run side by side, so a line
of another terminal may in fact come first. Only this one refusal is reported, so the
approximation can only miss a refusal that ``run`` then prints as a failing line.
"""

from __future__ import annotations

from typing import Any

from ..commands.shell import parse_shell
from ..commands.tc import TcQdiscRequest, htb, parse_tc
from ..errors import Diagnostics
from ..profile import Profile
from ..scenario.topology import BuiltTopology
from .engine import Engine, TcFailure

#: the kernel's extack text for the duplicating-netem rule (crates/bufferlab-core/src/qdisc/api.rs)
NETEM_MIX = "netem: cannot mix duplicating netems with other netems in tree"


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
                words = parse_shell(f"tc qdisc add dev {dev} {args}")[0].commands[0].words
                req = parse_tc(words, Diagnostics(), self._profile)
                if isinstance(req, TcQdiscRequest):
                    self._tc({**req.to_dict(), "dev": dev})
        return self._engine

    def _tc(self, request: dict[str, Any]) -> str | None:
        assert self._engine is not None
        try:
            self._engine.tc(request)
        except TcFailure as e:
            return str(e)
        return None

    def refusal(self, dev: str, parsed: Any, request: dict[str, Any] | None) -> str | None:
        """Apply one modifying ``tc`` line as ``run`` does (run/programs/tc.py ``run_modify``);
        tc's error text if the tree refuses it for the duplicating-netem rule, else None."""
        eng = self._eng()
        try:
            htb_request = htb.rewrite(parsed, eng.qdisc_show(dev))
        except (TcFailure, htb.HtbError):
            return None
        if htb_request is not None:
            htb_request["dev"] = dev
        req = htb_request or request
        if req is None:
            return None
        err = self._tc(req)
        return err if err is not None and NETEM_MIX in err else None
