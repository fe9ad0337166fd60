"""A Mininet network on the kernel: ``Mininet(topo, real=True)`` (mininet/net.py).

The interface of mininet/session.py's ``Session`` (``start``, ``run_until``, ``sleep``,
``close``), over :class:`~bufferlab.real.runner.RealRunner`: ``net.start()`` builds the
namespaces (netns.py), each ``cmd``/``popen`` line runs for real in its node's namespace
as a ``--real`` scenario's lines do, time is the wall clock, and ``net.stop()`` removes
everything and writes ``results/<script>-real/`` (one open-ended part, ``mininet``). Each
line is checked first as a scenario's lines are (preflight.py): a kind the kernel lacks
or a line that would reach the machine is a ``MininetError``. Links with ``delay`` (and no
``bw``) become delay lines where the kernel has no netem.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import BufferlabError
from ..results_folder import acquire, discard, fresh, release, write_marker
from ..run.context import Terminal
from ..safefs import ensure_dir
from ..scenario.load import Command, Part, Scenario
from .netns import Lab, reap_orphans
from .preflight import Plan, RealError, check_machine, read_lines, read_plan
from .runner import NS, JobRun, RealRunner

PART_NAME = "mininet"


class RealJob:
    """One line typed into a node: ``Job``'s interface (mininet/session.py)."""

    def __init__(self, session: RealSession, term: Terminal, runs: list[JobRun], offset: int) -> None:
        self.session = session
        self.term = term
        self.runs = runs
        self.offset = offset
        #: mininet/util.py's Popen finds the line's processes by it
        self.owner = self

    @property
    def status(self) -> int | None:
        fg = [j for j in self.runs if j.foreground] or self.runs
        return fg[-1].status if all(j.done.is_set() for j in fg) else None

    @property
    def done(self) -> bool:
        return self.status is not None

    def wait(self, limit_s: float = 3600.0) -> int:
        self.session.run_until(lambda: self.done, limit_s, self.term.name)
        assert self.status is not None
        return self.status

    def output(self) -> str:
        path = self.session.runner.log_file(self.term)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()[self.offset:]
        return text.split("\n", 1)[1] if text.startswith("$ ") and "\n" in text else text

    def interrupt(self) -> None:
        for j in self.runs:
            j.interrupt()


class _Shell:
    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last_background: int | None = None


class _Procs:
    """What mininet/net.py and util.py read of the simulated process table."""

    def __init__(self, session: RealSession) -> None:
        self.session = session
        self.shells: dict[str, _Shell] = {}
        self.procs: dict[int, Any] = {}

    def shell(self, node: str) -> _Shell:
        return self.shells.setdefault(node, _Shell(os.getpid()))


class RealSession:
    def __init__(self, scenario: Scenario, results_root: Path | None = None,
                 echo: Callable[[str], None] | None = None, fresh_folder: bool = True,
                 delayed: set[str] | None = None) -> None:
        """``delayed``: interfaces whose link has a ``delay`` (delay lines where netem is missing)."""
        self.runner = r = RealRunner(scenario, results_root, echo=echo)
        r.check()
        r.procs = self.procs_table = _Procs(self)
        plan = read_plan(scenario, r.topo, {})
        check_machine(plan, f"blr{os.getpid()}")
        r.plan = plan
        for ns in reap_orphans():
            r.echo(f"note: removed namespace {ns} left by an earlier --real run that was killed")
        self.closed = False
        acquire(r.root)
        try:
            r.prev = fresh(r.root, "mininet", f"move {r.root} away", []) if fresh_folder else None
            if not fresh_folder:
                r.root.mkdir(parents=True, exist_ok=True)
            r.lab = Lab(scenario, r.topo, piped=set(plan.netem_devs) | set(delayed or ()))
            r.t0 = time.monotonic()
            r.started_unix = time.time()
            r.lab.build()
        except BaseException:
            self._teardown()
            release(r.root)
            raise
        self.part = Part(PART_NAME, [], None, 0)
        r.parts.append({"name": PART_NAME, "start_ns": 0, "end_ns": 0, "queues": [], "queue_traces": [],
                        "captures": []})
        self.terminals: dict[str, Terminal] = {}
        self._index = 0
        self.lock = threading.Lock()

    @property
    def root(self) -> Path:
        return self.runner.root

    @property
    def now_ns(self) -> int:
        return self.runner.now_ns()

    def _terminal(self, node: str) -> Terminal:
        if node not in self.terminals:
            # redirects land in the results folder, where the script runs (as in session.py)
            home = self.root / PART_NAME / node
            ensure_dir(home, self.root)
            self.terminals[node] = Terminal(node, self.root, self.root)
            self.runner.log_files[node] = home / "terminal.log"
        return self.terminals[node]

    def start(self, node: str, line: str, background: bool = False) -> RealJob:
        """Type ``line`` into ``node``'s terminal (checked first); its jobs start now."""
        if self.closed:
            raise _error(f"{node}: `{line}`: the network was stopped (net.stop()); start a new one")
        r = self.runner
        self._index += 1
        cmd = Command(node, line, self._index, 1, self._index, f"<{node}>")
        pl = r.sim.prepare_line(cmd)
        plan = Plan(resolve=r.topo.resolve_dev)
        read_lines(plan, [pl])
        try:
            # delay lines were made for the kernel's want of netem: no need to probe again
            check_machine(plan, f"blr{os.getpid()}", has_netem=False if r.lab and r.lab.pipes else None)
        except RealError as e:
            raise _error(str(e)) from None
        assert r.lab is not None
        missing = sorted(plan.netem_devs - set(r.lab.pipes))
        if missing:
            raise _error(
                f"{node}: `{line}`: this kernel has no netem; a delay on {missing[0]} must be a link's "
                "delay= (made a delay line when the network starts)"
            )
        term = self._terminal(node)
        log = r.log_file(term)
        offset = log.stat().st_size if log.exists() else 0
        r._log(term, f"$ {line}")
        runs = []
        for idx, bg in enumerate(pl.backgrounds):
            j = JobRun(
                term, self.part, pl, idx, pl.job_endless(idx), not (bg or background)
            )
            with r.lock:
                r.jobs.append(j)
            threading.Thread(target=r._job, args=(j,), daemon=True).start()
            j.launched.wait(5.0)
            runs.append(j)
            if bg and j.proc is not None:
                self.procs_table.shell(node).last_background = j.proc.popen.pid
        return RealJob(self, term, runs, offset)

    def run_until(self, ready: Callable[[], bool], limit_s: float, what: str, fail: bool = True) -> None:
        end = time.monotonic() + limit_s
        while not ready():
            if time.monotonic() >= end:
                if not fail:
                    return
                raise _error(f"{what}: still running after {limit_s:g} s; a command that never ends needs "
                             "`&` or popen()")
            time.sleep(0.02)

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise _error(f"sleep({seconds!r}): a duration cannot be negative")
        time.sleep(seconds)

    def close(self, error: str | None = None, interrupted: str | None = None) -> dict[str, Any]:
        """Ctrl-C what still runs, remove every namespace and process, write the results."""
        if self.closed:
            return {}
        self.closed = True
        r = self.runner
        try:
            r.stopping = True
            r._end_all()
            entry = r.parts[-1]
            try:
                entry.update(r._part_counters(self.part))
            except Exception:
                pass
            entry["end_ns"] = self.now_ns
            if interrupted is not None:
                entry["interrupted"] = r.interrupted = interrupted
            if error is not None:
                entry["error"] = error
        finally:
            self._teardown()
        try:
            summary = r._write_summary(error)
            if error is None and interrupted is None:
                write_marker(self.root, "mininet", complete=True)
                if r.prev is not None:
                    discard(r.prev)
        finally:
            release(self.root)
        return summary

    def _teardown(self) -> None:
        if self.runner.lab is not None:
            self.runner._teardown()


class RealSessionError(BufferlabError):
    """A line a real network cannot run, or a network already stopped (the message says)."""


def _error(message: str) -> BufferlabError:
    return RealSessionError(message)


__all__ = ["RealSession", "RealJob", "RealSessionError", "NS"]
