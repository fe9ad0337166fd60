"""``ns3-goodput``: the goodput of the part's sinks, as the ns-3 programs print it
(commands/ns3.py)."""

from __future__ import annotations

from ...commands import ns3 as ns3_cmd
from ...commands.shell import Word
from ..context import NS, PrepareCtx, Prepared, Program, RunCtx


def _prep_ns3_goodput(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = ns3_cmd.parse_ns3_goodput(words, set(pc.topo.node_kinds))

    def run(rt: RunCtx) -> int:
        rows = []
        for e in cmd.entries:
            found = [
                s
                for s in rt.sched.sinks
                if s["host"] == e.node and s["port"] == e.port and e.proto in (None, s["proto"])
            ]
            if len(found) != 1:
                why = "no sink" if not found else "two sinks (add /udp or /tcp)"
                rt.io.err(f"ns3-goodput: {e.label}: {why} on {e.node} port {e.port} in this part")
                return 1
            rows.append((e.label, int(rt.engine.app_result(found[0]["app"])["bytes"])))
        ns = cmd.seconds_ns if cmd.seconds_ns is not None else rt.now_ns - rt.sched.start_ns
        if ns <= 0:
            rt.io.err("ns3-goodput: no time has passed in this part yet (give -t SECONDS)")
            return 1
        rt.io.out(ns3_cmd.goodput_block(rows, ns / NS, cmd.sep))
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program(
        "ns3-goodput", _prep_ns3_goodput, "the goodput of the part's sinks, as the ns-3 programs print it"
    ),
)
