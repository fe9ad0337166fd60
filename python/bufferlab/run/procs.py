"""Processes, shell jobs and signals of the simulated machine, and the commands that use
them: ``kill``, ``pkill``, ``pgrep``, ``killall``, ``wait``, ``jobs``, ``ps``.

Every simple command a terminal runs, except bash's builtins, is a :class:`Process`
with a PID. PIDs are deterministic per node: the node's shell (``bash``, on the
terminal ``pts/K``, K its place among the run's terminals, ``admin`` first) has PID
``1000·(K+1)``, and each process it starts takes the next number, so what one host
runs never moves another host's PIDs. As on Mininet, whose hosts share the
machine's PID namespace, ``kill PID``, ``pkill``, ``killall`` and ``ps -e`` see every
node's processes; ``ps`` alone lists the processes of the shell's own terminal.

A line ending in ``&`` is a job of its terminal's shell, numbered as bash numbers
them (one more than the highest number in use, or 1); ``[1] PID`` is not printed,
as in a non-interactive shell. ``popen`` processes of a Mininet script are no job
of the shell and have no terminal (``?``).

A signal ends a process as the real program takes it (commands/procs.py
``CATCHES``): a caught one ends the program as Ctrl-C does (it prints what it
prints then, without the ``^C`` a terminal echoes), any other ends it with exit
status 128 + the signal and nothing more printed (on a terminal the lines ping and
iperf3 had printed stay: :func:`supervise`); a job's chain (``a && b &``) stops with it. A foreground command
that
a signal other than SIGINT ends prints the signal's description (``Terminated``,
``Killed``) in its terminal, as bash does.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from ..commands import procs as procs_cmd
from ..commands.shell import LAST_BACKGROUND_PID, Word
from ..formats.procs import PsRow, job_line, printed_before, ps_text
from .context import NS, Gen, Io, PrepareCtx, Prepared, RunCtx, WaitApp, WaitOther, WaitUntil

#: bash builtins among the programs: no process, no PID
BUILTINS = frozenset({"cd", "echo", "true", "kill", "wait", "jobs"})


@dataclass
class Process:
    pid: int
    ppid: int
    node: str
    comm: str
    args: str
    start_ns: int
    tty: str | None
    #: who runs it in the scheduler (run/scheduler.py ``Owner``): a signal wakes its wait
    owner: Any
    #: the applications it started (the RunCtx's list, filled as it runs)
    apps: list[int]
    job: ShellJob | None = None
    #: the signal that ended it, and whether the program caught it (ends as on Ctrl-C)
    signal: int | None = None
    caught: bool = False
    #: an uncaught signal ended it while it wrote to a terminal: what it had printed stays
    partial: bool = False
    status: int | None = None

    @property
    def alive(self) -> bool:
        return self.status is None


@dataclass
class ShellJob:
    number: int
    command: str
    owner: Any
    #: the PID its first process takes (``$!``: known as soon as the job is started)
    pid: int = 0
    processes: list[Process] = field(default_factory=list)
    status: int | None = None
    signal: int | None = None
    #: a finished job is listed once more by ``jobs``, then forgotten (as bash does)
    reported: bool = False

    @property
    def running(self) -> bool:
        return self.status is None

    def status_text(self) -> str:
        if self.status is None:
            return "Running"
        if self.signal is not None and self.status == 128 + self.signal:
            return procs_cmd.DESCRIPTIONS.get(self.signal, f"Signal {self.signal}")
        return "Done" if self.status == 0 else f"Exit {self.status}"


@dataclass
class Shell:
    pid: int
    tty: str
    next_pid: int
    start_ns: int = 0
    jobs: dict[int, ShellJob] = field(default_factory=dict)
    #: ``$!``: the PID of the last background job (None before the first)
    last_background: int | None = None
    #: job numbers, most recent last (the current job is the last running one)
    order: list[int] = field(default_factory=list)


class ProcessTable:
    """The machine's processes and each terminal's jobs (see the module doc)."""

    def __init__(self, terminals: list[str]) -> None:
        self._index = {t: k for k, t in enumerate(terminals)}
        self.shells: dict[str, Shell] = {}
        self.procs: dict[int, Process] = {}

    def shell(self, terminal: str) -> Shell:
        if terminal not in self.shells:
            k = self._index.setdefault(terminal, len(self._index))
            base = 1000 * (k + 1)
            self.shells[terminal] = Shell(base, f"pts/{k}", base + 1)
        return self.shells[terminal]

    def _pid(self, sh: Shell) -> int:
        """The shell's next PID; after 999 processes the range wraps, skipping live ones."""
        for _ in range(999):
            pid = sh.next_pid
            sh.next_pid = pid + 1 if pid + 1 < sh.pid + 1000 else sh.pid + 1
            if pid not in self.procs or not self.procs[pid].alive:
                return pid
        # 999 processes of this shell alive at once: a number above every shell's range
        return max(max(self.procs, default=0), 1000 * (len(self._index) + 1)) + 1

    def spawn(self, terminal: str, words: list[Word], now_ns: int, owner: Any, apps: list[int],
              job: ShellJob | None) -> Process:
        sh = self.shell(terminal)
        tty = sh.tty if owner.foreground or job is not None else None
        pid = job.pid if job is not None and not job.processes and job.pid else self._pid(sh)
        p = Process(pid, sh.pid, terminal, procs_cmd.comm(words[0].text),
                    " ".join(w.text for w in words), now_ns, tty, owner, apps, job)
        self.procs[p.pid] = p
        if job is not None:
            if job.signal is not None and not job.processes:  # signalled before it ran: it dies at once
                p.signal = job.signal
            job.processes.append(p)
        return p

    def job_by_pid(self, pid: int) -> ShellJob | None:
        """The running job whose first process has (or is about to have) ``pid``."""
        return next((j for sh in self.shells.values() for j in sh.jobs.values()
                     if j.pid == pid and j.running), None)

    def new_job(self, terminal: str, command: str, owner: Any) -> ShellJob:
        sh = self.shell(terminal)
        live = [n for n, j in sh.jobs.items() if j.running or not j.reported]
        number = max(live, default=0) + 1
        job = ShellJob(number, command, owner, self._pid(sh))
        sh.last_background = job.pid
        sh.jobs[number] = job
        sh.order = [n for n in sh.order if n != number] + [number]
        return job

    def live(self) -> list[Process]:
        return sorted((p for p in self.procs.values() if p.alive), key=lambda p: p.pid)

    # ------------------------------------------------------------ job specs

    def current(self, sh: Shell) -> tuple[int | None, int | None]:
        """bash's current (``%+``) and previous (``%-``) job numbers."""
        alive = [n for n in sh.order if n in sh.jobs and (sh.jobs[n].running or not sh.jobs[n].reported)]
        cur = alive[-1] if alive else None
        prev = alive[-2] if len(alive) > 1 else None
        return cur, prev

    def find_job(self, terminal: str, spec: str) -> ShellJob | str:
        """The job ``spec`` (``%1``, ``%%``, ``%+``, ``%-``, ``%name``, ``%?text``) names, or
        bash's message why none."""
        sh = self.shell(terminal)
        jobs = {n: j for n, j in sh.jobs.items() if j.running or not j.reported}
        body = spec[1:]
        cur, prev = self.current(sh)
        if body in ("", "%", "+"):
            n: int | None = cur
        elif body == "-":
            n = prev
        elif body.isdigit():
            n = int(body) if int(body) in jobs else None
        else:
            if body.startswith("?"):
                found = [k for k, j in jobs.items() if body[1:] in j.command]
            else:
                found = [k for k, j in jobs.items() if j.command.startswith(body)]
            if len(found) > 1:
                return f"{spec}: ambiguous job spec"
            n = found[0] if found else None
        if n is None or n not in jobs:
            return f"{spec}: no such job"
        return jobs[n]

    # ------------------------------------------------------------ signals

    def deliver(self, proc: Process, sig: int, eng: Any, sched: Any) -> None:
        """Signal ``sig`` reaches ``proc`` (see the module doc); ``sched`` is the scheduler
        (``signal_owner``)."""
        if not proc.alive or sig == 0 or sig in procs_cmd.IGNORED:
            return
        if sig in procs_cmd.CONTINUES.get(proc.comm, ()):
            return
        catches = procs_cmd.CATCHES.get(proc.comm, procs_cmd.DEFAULT_CATCHES if proc.apps else frozenset())
        proc.signal, proc.caught = sig, sig in catches and sig != procs_cmd.SIGKILL
        if proc.job is not None and proc.job.signal is None:
            proc.job.signal = sig
        sched.signal_owner(proc.owner, [a for a in proc.apps if not eng.app_finished(a)])

    def deliver_job(self, job: ShellJob, sig: int, eng: Any, sched: Any) -> None:
        if sig in (0, *procs_cmd.IGNORED):
            return
        job.signal = job.signal or sig
        for p in list(job.processes):
            self.deliver(p, sig, eng, sched)


#: tools that print as they go (line-buffered on a terminal): see formats/procs.py printed_before
PRINT_AS_THEY_GO = frozenset({"ping", "iperf3"})


def supervise(proc: Process, gen: Gen, io: Io | None = None) -> Generator[Any, Any, int]:
    """Run a program's generator as process ``proc``: a signal it catches lets it finish as
    on Ctrl-C; one it does not catch ends it with exit status 128 + the signal and nothing
    more printed -- on a terminal, the lines ping or iperf3 had printed until then stay
    (the generator runs on with ``io.cut``); into a file or a popen pipe (block-buffered),
    nothing."""
    value: Any = None
    while True:
        if proc.signal is not None and not proc.caught and not proc.partial:
            if io is not None and io.path is None and proc.tty is not None and proc.comm in PRINT_AS_THEY_GO \
                    and proc.apps:  # on a terminal, not into a file or a popen pipe
                proc.partial = True
                io.cut = lambda text: printed_before(proc.comm, text)
            else:
                gen.close()
                return 128 + proc.signal
        try:
            w = gen.send(value)
        except StopIteration as stop:
            status = stop.value if isinstance(stop.value, int) else 0
            return 128 + proc.signal if proc.partial and proc.signal is not None else status
        value = yield w


def ended_message(proc: Process) -> str:
    """What bash prints when a signal ended its foreground command (``Terminated``)."""
    sig = proc.signal
    if sig is None or proc.caught or sig in (procs_cmd.SIGINT, 13) or proc.status != 128 + sig:
        return ""
    return procs_cmd.DESCRIPTIONS.get(sig, f"Unknown signal {sig}") + "\n"


# ---------------------------------------------------------------------- the commands


def _instant(fn: Callable[[RunCtx], int]) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        return fn(rt)
        yield  # pragma: no cover - makes this a generator

    return run


def prep_kill(pc: PrepareCtx, words: list[Word]) -> Prepared:
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
                    rt.io.err(f"bash: kill: ({job.processes[-1].pid if job.processes else 0}) - "
                              "No such process")
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

    return _instant(run)


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


def expand_words(text: str, rt: RunCtx) -> str:
    """``$!`` in an argument (``echo $!``), expanded now."""
    if LAST_BACKGROUND_PID not in text:
        return text
    last = rt.runner.procs.shell(rt.term.name).last_background
    return text.replace(LAST_BACKGROUND_PID, "" if last is None else str(last))


def _others(rt: RunCtx) -> list[Process]:
    """Every live process but the one running this command."""
    me = rt.process.pid if rt.process is not None else None
    return [p for p in rt.runner.procs.live() if p.pid != me]


def prep_pkill(pc: PrepareCtx, words: list[Word]) -> Prepared:
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

    return _instant(run)


def prep_killall(pc: PrepareCtx, words: list[Word]) -> Prepared:
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

    return _instant(run)


def _pending(rt: RunCtx, owner: Any) -> Any:
    """What ``owner``'s job waits for now, to wait for the same (``WaitUntil(now)`` if it is
    about to run)."""
    w = rt.scheduler.pending(owner)
    if isinstance(w, WaitApp):
        return WaitOther(w.app_id, w.endless, w.expected_end_ns)
    if isinstance(w, WaitUntil):
        return WaitUntil(w.t_ns)
    return WaitUntil(rt.now_ns)


def prep_wait(pc: PrepareCtx, words: list[Word]) -> Prepared:
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

    return run


def prep_jobs(pc: PrepareCtx, words: list[Word]) -> Prepared:
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
                out.append(job_line(j.number, mark, j.status_text(), j.command, j.running,
                                    pid if cmd.format == "long" else None))
            if not j.running:
                j.reported = True
        rt.io.out("".join(out))
        return status

    return _instant(run)


def prep_ps(pc: PrepareCtx, words: list[Word]) -> Prepared:
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

    return _instant(run)


PROGRAMS: dict[str, Callable[[PrepareCtx, list[Word]], Prepared]] = {
    "kill": prep_kill,
    "pkill": prep_pkill,
    "pgrep": prep_pkill,
    "killall": prep_killall,
    "wait": prep_wait,
    "jobs": prep_jobs,
    "ps": prep_ps,
}

__all__ = ["ProcessTable", "Process", "ShellJob", "supervise", "ended_message", "BUILTINS", "PROGRAMS"]
