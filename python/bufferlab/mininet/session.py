"""A live simulation that Python code types shell lines into, one at a time.

The scenario runner (run/scheduler.py) runs a file of parts; a Mininet script
instead builds its network once (``net.start()``) and then types lines into
hosts while its own Python code runs in between. A :class:`Session` owns one
``Runner`` and ``Scheduler`` with a single open-ended part named ``mininet``:
each line goes through the same preparation and program dispatch as a scenario
line (``Runner.prepare_line`` and ``terminal_proc``: the steps of a run that
``Runner`` lists beside ``open_run``), and the engine is
advanced only as far as the caller waits (a foreground line's end, or
``clock.sleep``). The results folder is a scenario's: ``summary.json``, the
terminals' logs (``mininet/<node>/terminal.log``) and the report.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import BufferlabError
from ..run.context import NS, Terminal, WaitUntil
from ..run.scheduler import DEFAULT_STOP_AT_S, Owner, Runner, Scheduler
from ..safefs import ensure_dir, open_write
from ..scenario.load import Command, Part, Scenario

PART_NAME = "mininet"


class MininetError(BufferlabError):
    """A Mininet API call bufferlab cannot honour; the message says what and why."""


class Job:
    """One line typed into a node: its output so far and, once it ended, its status."""

    def __init__(self, session: Session, term: Terminal, first_entry: int, owner: Owner) -> None:
        self.session = session
        self.term = term
        #: what the scheduler's entries of this line carry (other lines of the node have their own)
        self.owner = owner
        self.first_entry = first_entry
        self.status: int | None = None

    @property
    def done(self) -> bool:
        return self.status is not None

    def output(self) -> str:
        """What the line printed to its terminal (its ``$`` echo left out)."""
        return "".join(self.term.transcript[self.first_entry + 1:])

    def wait(self, limit_s: float = DEFAULT_STOP_AT_S) -> int:
        """Advance simulated time until the line ends (at most ``limit_s`` seconds)."""
        self.session.run_until(lambda: self.done, limit_s, self.term.name)
        assert self.status is not None
        return self.status

    def interrupt(self) -> None:
        """Ctrl-C what the line runs (it prints what the tool prints then)."""
        s = self.session
        s.sched.interrupt([e for e in s.sched.waiting if e[4] is self.owner])
        s.sched.drain()


class Session:
    def __init__(self, scenario: Scenario, results_root: Path | None = None,
                 echo: Callable[[str], None] | None = None, fresh: bool = True) -> None:
        """``fresh``: move a previous run's folder aside as ``bufferlab run`` does; False when
        the caller made the folder already (``bufferlab mininet`` runs the script in it)."""
        self.runner = Runner(scenario, results_root, progress=False, echo=echo)
        self.runner.kind = "mininet"  # its results folder's marker (results_folder.py)
        self.runner.check()
        r = self.runner
        r.open_run(fresh)
        self.sched = Scheduler(r)
        self.part = Part(PART_NAME, [], None, 0)
        self.state = r.begin_part(self.sched, self.part, r.root / PART_NAME)
        self.terminals: dict[str, Terminal] = {}
        self._index = 0
        self._warned = 0
        self.closed = False

    @property
    def root(self) -> Path:
        return self.runner.root

    @property
    def now_ns(self) -> int:
        assert self.runner.engine is not None
        return self.runner.engine.now_ns

    def _terminal(self, node: str) -> Terminal:
        if node not in self.terminals:
            # a node's redirects (``> ping.txt``) land in the results folder, where the
            # script runs: Mininet's hosts share the machine's file system and cwd
            self.terminals[node] = Terminal(node, self.root, self.root)
        return self.terminals[node]

    def start(self, node: str, line: str, background: bool = False) -> Job:
        """Type ``line`` into ``node``'s terminal; run it up to its first wait.

        A ``background`` line (``popen``) is a process of its own, as in Mininet: a later
        line typed into the node does not Ctrl-C it."""
        if self.closed:
            raise MininetError(f"{node}: `{line}`: the network was stopped (net.stop()); start a new one")
        self._index += 1
        cmd = Command(node, line, self._index, 1, self._index, f"<{node}>")
        pl = self.runner.prepare_line(cmd)
        for w in self.runner.warnings[self._warned:]:
            self.runner.echo(w)
        self._warned = len(self.runner.warnings)
        term = self._terminal(node)
        owner = Owner(node, foreground=not background)
        job = Job(self, term, len(term.transcript), owner)

        def proc() -> Any:
            job.status = yield from self.runner.terminal_proc(self.sched, self.state, term, [pl], owner)

        self.sched.spawn(proc(), self._index, owner)
        self.sched.drain()
        return job

    def run_until(self, ready: Callable[[], bool], limit_s: float, what: str, fail: bool = True) -> None:
        """Advance simulated time until ``ready()`` (or ``limit_s`` seconds passed: an
        error if ``fail``)."""
        eng = self.runner.engine
        assert eng is not None
        stop = eng.now_ns + round(limit_s * NS)
        while True:
            self.sched.drain()
            if ready():
                return
            if eng.now_ns >= stop:
                if not fail:
                    return
                raise MininetError(f"{what}: still running after {limit_s:g} s of simulated time; "
                                   "a command that never ends needs `&` or popen()")
            waits = [w.t_ns for *_, w, _o in self.sched.waiting if isinstance(w, WaitUntil)]
            self.sched.advance(min([*waits, stop]))

    def sleep(self, seconds: float) -> None:
        """The network runs on for ``seconds`` of simulated time; what runs goes on."""
        if seconds < 0:
            raise MininetError(f"sleep({seconds!r}): a duration cannot be negative")
        self.sched.idle(round(seconds * NS))

    def close(self, error: str | None = None, interrupted: str | None = None) -> dict[str, Any]:
        """Ctrl-C what still runs and write the results folder (summary.json, logs).

        ``error`` (the script raised) or ``interrupted`` (``SIGINT``/``SIGTERM``) ended the
        session early: they are recorded in its part's entry and at the top of summary.json,
        and the run is not marked complete."""
        if self.closed:
            return {}
        self.closed = True
        r = self.runner
        try:
            self.sched.end_scenario()
        except Exception:  # the network was stopped in the middle of something: keep what it has
            if error is None and interrupted is None:
                raise
        assert r.engine is not None
        entry = r.part_entry(self.state, r.engine.summary()["interfaces"])
        if interrupted is not None:
            entry["interrupted"] = r.interrupted = interrupted
        if error is not None:
            entry["error"] = error
        r.part_reports.append(entry)
        r.summarise_part(0)
        for node, term in self.terminals.items():
            home = r.root / PART_NAME / node
            ensure_dir(home, r.root)
            with open_write(home / "terminal.log") as f:
                f.write("".join(term.transcript))
        return r.close_run(error, completed=error is None and interrupted is None)
