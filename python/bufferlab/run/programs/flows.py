"""``flows``: TCP flows arriving at a rate with sizes from a distribution, and their server
(parser and report text: commands/flows.py; engine: app/flows.rs; records: outputs/fct.py)."""

from __future__ import annotations

from typing import Any

from ...commands import flows as flows_cmd
from ...commands.shell import Word
from ...outputs.fct import fct_rows, fct_summary, plot_fct, write_fct_csv
from ...safefs import ensure_dir
from ..context import AppRecord, Gen, PartSummary, PrepareCtx, Prepared, Program, RunCtx, WaitApp
from ..engine import AppStartError
from ..sockets import check_congestion, tcp_spec


def _prep_flows(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "flows")
    cmd = flows_cmd.parse_flows(words, pc.diag, resolve=pc.resolve_host, base_dir=pc.base_dir)
    congestion = getattr(cmd, "congestion", None)
    check_congestion(congestion, words)
    spec = cmd.to_spec()
    endless = flows_cmd.is_endless(cmd)
    client = cmd if isinstance(cmd, flows_cmd.FlowsClient) else None

    def run(rt: RunCtx) -> Gen:
        spec["tcp"] = tcp_spec(rt, node, congestion=congestion)
        try:
            app = rt.start_app(node, spec, summarise=_summarise if client else None)
        except AppStartError as e:
            rt.io.err(str(e) if str(e).startswith("flows:") else f"flows: {e}")
            return 1
        if client is None:
            rt.note_listener(app, node, None)
        duration = spec.get("duration_ns")
        yield WaitApp(app, endless, None if duration is None else rt.now_ns + duration)
        result = rt.engine.app_result(app)
        if client is not None:
            # the flow records, beside the terminal's other files (outputs/fct.py)
            rows = fct_rows(result)
            path = rt.term.cwd / f"fct_{app}.csv"
            ensure_dir(path.parent)
            write_fct_csv(path, rows)
            plot_fct(
                {f"{node}: flows {client.size_text}": rows},
                path.with_suffix(".png"),
                f"FCT vs size: {node} → {client.dest}, {client.rate_per_s:g} flows/s",
            )
            rt.sched.fct_files.append(path.resolve().relative_to(rt.runner.root.resolve()).as_posix())
        rt.io.out(flows_cmd.report_text(cmd, result))
        return 0

    return Prepared(run, endless)


def _summarise(a: AppRecord, r: dict[str, Any], out: PartSummary) -> None:
    """The part's ``fct`` row of a client: per size bucket (outputs/fct.py) the flows that
    arrived, those that completed, and the mean, median and 99th percentile of their
    completion times in ms (0.001)."""
    out.add(
        "fct",
        {
            "node": a.terminal,
            "where": a.where,
            "command": a.simple or a.command,
            "buckets": fct_summary(fct_rows(r)),
        },
    )


PROGRAMS = (
    Program(
        "flows",
        _prep_flows,
        "TCP flows arriving at a rate with sizes from a distribution (`-c`), and their server (`-s`)",
    ),
)
