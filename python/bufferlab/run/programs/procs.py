"""``kill``, ``pkill``, ``pgrep``, ``killall``, ``wait``, ``jobs`` and ``ps``: the
simulated machine's processes and each terminal's jobs (run/procs.py; parsers:
commands/procs.py; text: formats/procs.py)."""

from __future__ import annotations

from typing import Any

from ...commands import procs as procs_cmd
from ...commands.shell import Word
from ...formats.procs import PsRow, job_line, ps_text
from ..context import NS, Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp, WaitOther, WaitUntil
from ..procs import Process, Shell


def _prep_kill(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = procs_cmd.parse_kill(words)

    def run(rt: RunCtx) -> int:
        table = rt.runner.procs
        status = 0
        for t in _expand(cmd.targets, table.shell(rt.term.name)):
            if t.pid is None:
                job = table.find_job(rt.term.name, t.text)
                if isinstance(job, str):
                    rt.io.err(f"bash: kill: {job}")
                    status = 1
                elif not job.running:
                    rt.io.err(
                        f"bash: kill: ({job.processes[-1].pid if job.processes else 0}) - No such process"
                    )
                    status = 1
                else:
                    table.deliver_job(job, cmd.signal, rt.engine, rt.scheduler)
                continue
            proc = table.procs.get(t.pid)
            shell = next((s for s in table.shells.values() if s.pid == t.pid), None)
            pending = table.job_by_pid(t.pid) if proc is None else None
            if pending is not None:  # `cmd & kill $!`: the job has not run yet
                table.deliver_job(pending, cmd.signal, rt.engine, rt.scheduler)
            elif shell is not None:
                rt.io.err(f"bash: kill: ({t.pid}) - killing a node's shell is not supported yet")
                status = 1
            elif proc is None or not proc.alive:
                rt.io.err(f"bash: kill: ({t.pid}) - No such process")
                status = 1
            else:
                table.deliver(proc, cmd.signal, rt.engine, rt.scheduler)
        return status

    return Prepared.at_once(run)


def _expand(targets: list[procs_cmd.Target], sh: Shell) -> list[procs_cmd.Target]:
    """``$!`` becomes the PID of the shell's last background job (an empty word before
    the first one: bash then drops it)."""
    out = []
    for t in targets:
        if not t.last_background:
            out.append(t)
        elif sh.last_background is not None:
            out.append(procs_cmd.Target(str(sh.last_background), t.col, sh.last_background))
    return out


def _others(rt: RunCtx) -> list[Process]:
    """Every live process but the one running this command."""
    me = rt.process.pid if rt.process is not None else None
    return [p for p in rt.runner.procs.live() if p.pid != me]


def _prep_pkill(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = procs_cmd.parse_pkill(words)

    def run(rt: RunCtx) -> int:
        found = [p for p in _others(rt) if procs_cmd.pkill_matches(cmd, p.comm, p.args)]
        if found and cmd.newest:
            found = [max(found, key=lambda p: (p.start_ns, p.pid))]
        elif found and cmd.oldest:
            found = [min(found, key=lambda p: (p.start_ns, p.pid))]
        if cmd.tool == "pgrep" or cmd.count:
            if cmd.count:
                rt.io.out(f"{len(found)}\n")
            else:
                rt.io.out("".join(f"{p.pid} {p.comm}\n" if cmd.list_name else f"{p.pid}\n" for p in found))
        if cmd.tool == "pkill":
            for p in found:
                rt.runner.procs.deliver(p, cmd.signal, rt.engine, rt.scheduler)
                if cmd.echo:
                    rt.io.out(f"{p.comm} killed (pid {p.pid})\n")
        return 0 if found else 1

    return Prepared.at_once(run)


def _prep_killall(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = procs_cmd.parse_killall(words)

    def run(rt: RunCtx) -> int:
        missing = 0
        for name in cmd.names:
            found = [p for p in _others(rt) if procs_cmd.killall_matches(cmd, name, p.comm, p.args)]
            if not found:
                missing += 1
                if not cmd.quiet:
                    rt.io.err(f"{name}: no process found")
            for p in found:
                rt.runner.procs.deliver(p, cmd.signal, rt.engine, rt.scheduler)
                if cmd.verbose:
                    rt.io.err(f"Killed {p.comm}({p.pid}) with signal {cmd.signal}")
        return 1 if missing else 0

    return Prepared.at_once(run)


def _pending(rt: RunCtx, owner: Any) -> Any:
    """What ``owner``'s job waits for now, to wait for the same (``WaitUntil(now)`` if it is
    about to run)."""
    w = rt.scheduler.pending(owner)
    if isinstance(w, WaitApp):
        return WaitOther(w.app_id, w.endless, w.expected_end_ns)
    if isinstance(w, WaitUntil):
        return WaitUntil(w.t_ns)
    return WaitUntil(rt.now_ns)


def _prep_wait(pc: PrepareCtx, words: list[Word]) -> Prepared:
    targets = procs_cmd.parse_wait(words)

    def run(rt: RunCtx) -> Gen:
        table = rt.runner.procs
        sh = table.shell(rt.term.name)
        status = 0
        if not targets:
            while True:
                running = [j for j in sh.jobs.values() if j.running]
                if not running:
                    for j in sh.jobs.values():  # bash forgets the jobs it waited for
                        j.reported = True
                    return 0
                if (yield _pending(rt, running[0].owner)) == WaitOther.INTERRUPTED:
                    return rt.ctrl_c()  # Ctrl-C of wait: the job runs on
        for t in _expand(targets, sh):
            if t.pid is None:
                job = table.find_job(rt.term.name, t.text)
                if isinstance(job, str):
                    rt.io.err(f"bash: wait: {job}")
                    status = 127
                    continue
                while job.running:
                    if (yield _pending(rt, job.owner)) == WaitOther.INTERRUPTED:
                        return rt.ctrl_c()  # Ctrl-C of wait: the job runs on
                status = job.status or 0
                job.reported = True
                continue
            proc = table.procs.get(t.pid)
            pending = table.job_by_pid(t.pid) if proc is None else None
            if pending is not None and pending.owner.terminal == rt.term.name:
                while pending.running:
                    if (yield _pending(rt, pending.owner)) == WaitOther.INTERRUPTED:
                        return rt.ctrl_c()  # Ctrl-C of wait: the job runs on
                status = pending.status or 0
                continue
            if proc is None or proc.node != rt.term.name or proc.job is None:
                rt.io.err(f"bash: wait: pid {t.pid} is not a child of this shell")
                status = 127
                continue
            while proc.alive:
                if (yield _pending(rt, proc.owner)) == WaitOther.INTERRUPTED:
                    return rt.ctrl_c()  # Ctrl-C of wait: the job runs on
            status = proc.status or 0
        return status

    return Prepared(run)


def _prep_jobs(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = procs_cmd.parse_jobs(words)

    def run(rt: RunCtx) -> int:
        table = rt.runner.procs
        sh = table.shell(rt.term.name)
        cur, prev = table.current(sh)
        status = 0
        if cmd.specs:
            chosen = []
            for t in cmd.specs:
                job = table.find_job(rt.term.name, t.text)
                if isinstance(job, str):
                    rt.io.err(f"bash: jobs: {job}")
                    status = 1
                else:
                    chosen.append(job)
        else:
            chosen = [j for n, j in sorted(sh.jobs.items()) if j.running or not j.reported]
        out = []
        for j in chosen:
            if cmd.stopped or (cmd.running and not j.running):
                continue
            pid = j.processes[0].pid if j.processes else 0
            if cmd.format == "pids":
                out.append(f"{pid}\n")
            else:
                mark = "+" if j.number == cur else "-" if j.number == prev else " "
                out.append(
                    job_line(
                        j.number,
                        mark,
                        j.status_text(),
                        j.command,
                        j.running,
                        pid if cmd.format == "long" else None,
                    )
                )
            if not j.running:
                j.reported = True
        rt.io.out("".join(out))
        return status

    return Prepared.at_once(run)


def _prep_ps(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = procs_cmd.parse_ps(words)

    def run(rt: RunCtx) -> int:
        table = rt.runner.procs
        sh = table.shell(rt.term.name)
        rows = []
        me = rt.process.pid if rt.process is not None else None
        for s_name, s in sorted(table.shells.items(), key=lambda kv: kv[1].pid):
            if cmd.every or s_name == rt.term.name:
                rows.append(PsRow(s.pid, 1, s.tty, "bash", "bash", s.start_ns / NS, stat="Ss"))
        for p in table.live():
            if cmd.every or (p.tty is not None and p.tty == sh.tty):
                stat = "R+" if p.pid == me else "S+" if p.owner.foreground and p.tty else "S"
                rows.append(PsRow(p.pid, p.ppid, p.tty, p.comm, p.args, p.start_ns / NS, stat=stat))
        rows.sort(key=lambda r: r.pid)
        rt.io.out(ps_text(rows, cmd.full, rt.runner.sc.profile.epoch, cmd.bsd))
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program("kill", _prep_kill, "bash's `kill [-SIGNAL] PID|%JOB...`", builtin=True, expands_last_pid=True),
    Program("pkill", _prep_pkill, "`pkill [-SIGNAL] PATTERN`: signal the processes whose name matches"),
    Program("pgrep", _prep_pkill, "`pgrep PATTERN`: the PIDs of the processes whose name matches"),
    Program("killall", _prep_killall, "`killall [-SIGNAL] NAME...`: signal the processes of that name"),
    Program("wait", _prep_wait, "bash's `wait [PID|%JOB...]`", builtin=True, expands_last_pid=True),
    Program("jobs", _prep_jobs, "bash's `jobs [-lp]`: the terminal's background jobs", builtin=True),
    Program("ps", _prep_ps, "`ps [-ef] [aux]`: the simulated machine's processes"),
)
