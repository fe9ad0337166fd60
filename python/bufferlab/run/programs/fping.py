"""``fping`` (fping 5.1; parser: commands/fping.py, text: formats/fping.py, engine: the ``ping``
application of app/ping.rs without iputils' send lag)."""

from __future__ import annotations

from typing import Any

from ...commands import fping as fping_cmd
from ...commands.shell import Word
from ...formats import fping as fping_fmt
from ..context import Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp
from ..engine import AppStartError
from ..services import epoch_s


def fping_spec(cmd: fping_cmd.FpingCommand) -> dict[str, Any]:
    return {
        "kind": "ping",
        "dst": cmd.target,
        "count": cmd.count,
        "interval_ns": round(cmd.period_ms * 1e6),
        "size": cmd.size,
        "deadline_ns": None,
        "timeout_ns": round(cmd.timeout_ms * 1e6),
        "send_lag_ns": 0,
        "tos": cmd.tos,
    }


def fping_text(rt: RunCtx, cmd: fping_cmd.FpingCommand, app: int) -> tuple[str, str, int]:
    r = rt.engine.app_result(app)
    out, err = fping_fmt.fping_text(
        r,
        cmd.target,
        period_ns=round(cmd.period_ms * 1e6),
        timeout_ns=round(cmd.timeout_ms * 1e6),
        end_ns=rt.now_ns,
        timestamps=cmd.timestamps,
        epoch_s=epoch_s(rt),
        quiet=cmd.quiet,
    )
    return out, err, fping_fmt.fping_exit_status(r)


def _prep_fping(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "fping")
    cmd = fping_cmd.parse_fping(words, resolve=pc.resolve_host)

    def run(rt: RunCtx) -> Gen:
        try:
            app = rt.start_app(node, fping_spec(cmd))
        except AppStartError:
            rt.io.err(f"{cmd.target}: error while sending ping: No route to host\n")
            return 2
        yield WaitApp(app, False, rt.now_ns + round(cmd.count * cmd.period_ms * 1e6))
        out, err, status = fping_text(rt, cmd, app)
        rt.io.out(out)
        rt.io.err(err)
        return status

    return Prepared(run, endless=False)


PROGRAMS = (
    Program("fping", _prep_fping, "fping 5.1 `-c COUNT` to one target, `-D` timestamps, `-p PERIOD`"),
)
