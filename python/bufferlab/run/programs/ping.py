"""``ping`` (iputils; parser: commands/ping.py, text: formats/ping.py, engine: app/ping.rs)."""

from __future__ import annotations

from typing import Any

from ...commands import ping as ping_cmd
from ...commands._common import option_col
from ...commands.shell import Word
from ...errors import NotSupportedError
from ...formats import ping as ping_fmt
from ..context import NS, AppRecord, Gen, PartSummary, PrepareCtx, Prepared, Program, RunCtx, WaitApp
from ..engine import AppStartError


def _prep_ping(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "ping")
    cmd = ping_cmd.parse_ping(words, pc.diag, resolve=pc.resolve_host)
    lag_ns = pc.profile.ping_send_lag_us * 1000
    spec = {
        "kind": "ping",
        "dst": cmd.target,
        "count": cmd.count,
        "interval_ns": round(cmd.interval_s * NS),
        "size": cmd.size,
        "deadline_ns": round(cmd.deadline_s * NS) if cmd.deadline_s is not None else None,
        "timeout_ns": round(cmd.timeout_s * NS) if cmd.timeout_s is not None else None,
        "send_lag_ns": lag_ns,
        "tos": cmd.tos or 0,
    }
    if spec["interval_ns"] <= 0:  # root may, but the engine's ping needs a positive interval
        raise NotSupportedError(
            "ping -i 0 (as fast as replies come) is not supported yet",
            col=option_col(words, "-i"),
            expected="-i SECONDS, e.g. -i 0.01",
        )
    endless = cmd.count is None and cmd.deadline_s is None

    def run(rt: RunCtx) -> Gen:
        try:
            app = rt.start_app(node, spec, summarise=_summarise)
        except AppStartError as e:
            rt.io.err(f"connect: {e}")  # iputils: no route to the target
            return 2
        expected = None if endless else rt.now_ns + (cmd.count or 1) * (spec["interval_ns"] + lag_ns)
        yield WaitApp(app, endless, expected)
        result = rt.engine.app_result(app)
        by_kill = rt.process is not None and rt.process.signal is not None
        rt.io.out(
            ping_fmt.ping_text(
                result, cmd.target, rt.runner.sc.profile, quiet=cmd.quiet, echo_ctrl_c=not by_kill
            )
        )
        return ping_fmt.ping_exit_status(result)

    return Prepared(run, endless)


def _summarise(a: AppRecord, r: dict[str, Any], out: PartSummary) -> None:
    """The part's ``ping`` row: min/avg/max RTT of the replies (ms, 0.001) and the loss in %
    (0.01) of the requests sent; a warning if none was answered."""
    replies = [x for x in r.get("replies", []) if not x.get("dup")]
    rtts = [x["rtt_ns"] / 1e6 for x in replies]
    tx = int(r.get("transmitted", 0))
    received = len({x["seq"] for x in replies})
    row = {
        "node": a.terminal,
        "where": a.where,
        "command": a.simple or a.command,
        "dst": r.get("dst"),
        "transmitted": tx,
        "received": received,
        "loss_pct": round(100 * (tx - received) / tx, 2) if tx else None,
        "min_ms": round(min(rtts), 3) if rtts else None,
        "avg_ms": round(sum(rtts) / len(rtts), 3) if rtts else None,
        "max_ms": round(max(rtts), 3) if rtts else None,
    }
    out.add("ping", row)
    if tx and not received:
        out.warnings.append(
            f"warning: {a.where}: {a.terminal}: ping {row['dst']}: 100% packet loss "
            f"({tx} transmitted, none answered)"
        )


PROGRAMS = (
    Program(
        "ping",
        _prep_ping,
        "ICMP echo requests and their round-trip times (iputils)",
        catches=frozenset({2, 14}),
        continues=frozenset({3}),
        printed_before=ping_fmt.printed_before,
    ),
)
