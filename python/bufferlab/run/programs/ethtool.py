"""``ethtool``: an interface's offloads (``-k``, ``-K``; commands/ethtool.py)."""

from __future__ import annotations

from ...commands import ethtool as ethtool_cmd
from ...commands.shell import Word
from ..context import PrepareCtx, Prepared, Program, RunCtx


def _prep_ethtool(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = ethtool_cmd.parse_ethtool(words, pc.diag)
    dev = pc.topo.resolve_dev(pc.terminal, cmd.dev)

    def run(rt: RunCtx) -> int:
        if dev is None:
            rt.io.err(ethtool_cmd.NO_DEVICE)
            return 1 if cmd.changes is None else 92
        if cmd.error is not None:
            text, status = cmd.error
            rt.io.err(text)
            return status
        state = rt.engine.offloads(dev)
        if cmd.changes is None:
            rt.io.out(ethtool_cmd.show_features(cmd.dev, state))
            return 0
        for feature, on in ethtool_cmd.apply_changes(state, cmd.changes).items():
            rt.engine.set_offload(dev, feature, on)
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program(
        "ethtool",
        _prep_ethtool,
        "`ethtool -k DEV` and `ethtool -K DEV FEATURE on|off` (TSO, GSO, GRO)",
        configures=True,
    ),
)
