"""The programs a scenario line can run: one module per tool, each listing its
:class:`~bufferlab.run.context.Program` records in ``PROGRAMS``, registered below (its place
here is its place in the reference's list of commands).

A command runs in two steps. :func:`prepare_command` parses and validates it when the
scenario is checked (before anything runs), in the terminal's context (which node, which
interfaces are visible), into a :class:`~bufferlab.run.context.Prepared` command: whether it
runs until stopped, and the generator that performs it in simulated time (yielding what it
waits for) and returns its exit status.
"""

from __future__ import annotations

import difflib

from ...commands.shell import LAST_BACKGROUND_PID, Job, Loop, SimpleCommand
from ...errors import CommandError, NotSupportedError
from ..context import Chain, Item, PrepareCtx, Prepared, PreparedLoop, Program
from . import (
    capture,
    ethtool,
    flent,
    flows,
    fping,
    generators,
    iperf2,
    iperf3,
    irtt,
    netinfo,
    netperf,
    ns3_goodput,
    nstat,
    ping,
    plot_iperf,
    plot_q,
    procs,
    shell,
    ss,
    sysctl,
    tc,
    web,
)

#: the modules of the programs, one per tool
MODULES = (
    tc,
    sysctl,
    ethtool,
    ping,
    iperf3,
    iperf2,
    generators,
    flows,
    ns3_goodput,
    plot_q,
    plot_iperf,
    capture,
    shell,
    procs,
    netinfo,
    ss,
    nstat,
    netperf,
    irtt,
    fping,
    flent,
    web,
)

PROGRAMS: dict[str, Program] = {p.name: p for module in MODULES for p in module.PROGRAMS}


def prepare_command(pc: PrepareCtx, sc: SimpleCommand) -> Prepared:
    """Check one simple command of a line against its terminal (errors at their column)."""
    if not sc.words:  # a redirect alone runs nothing
        return _prepared(PROGRAMS["true"], shell.TRUE)
    name = sc.words[0].text
    program = PROGRAMS.get(name)
    if program is None:
        close = difflib.get_close_matches(name, list(PROGRAMS), n=1)
        raise CommandError(
            f"{name}: command not found (not modelled by bufferlab)",
            col=sc.words[0].col,
            expected="one of " + ", ".join(sorted(PROGRAMS)),
            suggestion=f"did you mean {close[0]}?" if close else None,
        )
    last_bg = next((w for w in sc.words if LAST_BACKGROUND_PID in w.text), None)
    if last_bg is not None and not program.expands_last_pid:
        *others, last = [p.name for p in PROGRAMS.values() if p.expands_last_pid]
        raise NotSupportedError(
            f"{name}: $! (the last background job's PID) is supported in {', '.join(others)} and {last} only",
            col=last_bg.col,
            suggestion="e.g. kill $! or wait $!",
        )
    return _prepared(program, program.prepare(pc, sc.words))


def prepare_chain(pc: PrepareCtx, job: Job) -> Chain:
    """Check every command of a job, those inside its loops too, as :func:`prepare_command`."""
    items: list[Item] = []
    for c in job.commands:
        if isinstance(c, Loop):
            items.append((c, PreparedLoop(c.until, [prepare_chain(pc, j) for j in c.condition],
                                          [prepare_chain(pc, j) for j in c.body])))
        else:
            items.append((c, prepare_command(pc, c)))
    return items, job.ops


def _prepared(program: Program, prepared: Prepared) -> Prepared:
    return Prepared(prepared.run, prepared.endless, program)


__all__ = ["PROGRAMS", "MODULES", "prepare_command", "prepare_chain"]
