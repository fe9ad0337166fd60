"""Processes, shell jobs and signals of the simulated machine (the commands that use
them, ``kill``, ``pkill``, ``pgrep``, ``killall``, ``wait``, ``jobs``, ``ps``: run/programs/procs.py).

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

A signal ends a process as the real program takes it (its record's ``catches``,
run/context.py ``Program``): a caught one ends the program as Ctrl-C does (it prints
what it prints then, without the ``^C`` a terminal echoes), any other ends it with exit
status 128 + the signal and nothing more printed (on a terminal the lines ping and
iperf3 had printed stay: :func:`supervise`); a job's chain (``a && b &``) stops with it.
A foreground command that a signal other than SIGINT ends prints the signal's
description (``Terminated``, ``Killed``) in its terminal, as bash does.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from ..commands import procs as procs_cmd
from ..commands.shell import LAST_BACKGROUND_PID, Word
from .context import Gen, Io, Program, RunCtx

#: what a program that does not say which signals it catches takes as Ctrl-C, if it
#: started an application (``Program.catches``)
DEFAULT_CATCHES = frozenset({procs_cmd.SIGINT, procs_cmd.SIGTERM})


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
    #: the program it runs: how it takes signals
    program: Program
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
    #: job numbers, most recent last (the current job is the last running one); a dict as an
    #: ordered set, so that moving a number to the end does not copy the others
    order: dict[int, None] = field(default_factory=dict)


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
              program: Program, job: ShellJob | None) -> Process:
        sh = self.shell(terminal)
        tty = sh.tty if owner.foreground or job is not None else None
        pid = job.pid if job is not None and not job.processes and job.pid else self._pid(sh)
        p = Process(pid, sh.pid, terminal, procs_cmd.comm(words[0].text),
                    " ".join(w.text for w in words), now_ns, tty, owner, apps, program, job)
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
        # the numbers in use are 1..len(jobs) (each new one is at most one above them): the
        # highest live one is found from the top, at once while the last job runs
        top = len(sh.jobs)
        while top and not (sh.jobs[top].running or not sh.jobs[top].reported):
            top -= 1
        number = top + 1
        job = ShellJob(number, command, owner, self._pid(sh))
        sh.last_background = job.pid
        sh.jobs[number] = job
        sh.order.pop(number, None)
        sh.order[number] = None
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
        if sig in proc.program.continues:
            return
        catches = proc.program.catches
        if catches is None:
            catches = DEFAULT_CATCHES if proc.apps else frozenset()
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


def supervise(proc: Process, gen: Gen, io: Io | None = None) -> Generator[Any, Any, int]:
    """Run a program's generator as process ``proc``: a signal it catches lets it finish as
    on Ctrl-C; one it does not catch ends it with exit status 128 + the signal and nothing
    more printed -- on a terminal, the lines a tool that prints as it goes (ping, iperf3:
    ``Program.printed_before``) had printed until then stay (the generator runs on with
    ``io.cut``); into a file or a popen pipe (block-buffered), nothing."""
    value: Any = None
    printed_before = proc.program.printed_before
    while True:
        if proc.signal is not None and not proc.caught and not proc.partial:
            if io is not None and io.path is None and proc.tty is not None and printed_before is not None \
                    and proc.apps:  # on a terminal, not into a file or a popen pipe
                proc.partial = True
                io.cut = printed_before
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


def expand_words(text: str, rt: RunCtx) -> str:
    """``$!`` in an argument (``echo $!``), expanded now."""
    if LAST_BACKGROUND_PID not in text:
        return text
    last = rt.runner.procs.shell(rt.term.name).last_background
    return text.replace(LAST_BACKGROUND_PID, "" if last is None else str(last))


__all__ = ["ProcessTable", "Process", "ShellJob", "supervise", "ended_message", "expand_words"]
