"""One simulated network driven line by line: what ``Mininet.start()`` builds.

A scenario runs its parts' lines on its own; a Mininet script types one line at a
time and waits for it (``node.cmd``) or lets simulated time pass (``clock.sleep``).
This wraps the scenario runner (run/scheduler.py) so a line goes through exactly the
same parsing and program dispatch as a scenario line, in one open-ended part named
``mininet``; the results folder is a scenario's (terminal logs, summary.json).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

from ..errors import BufferlabError, CommandError
from ..outputs.report import after_run
from ..profile import PROFILES
from ..run.context import NS, PartState, Terminal
from ..run.engine import Engine
from ..run.scheduler import DEFAULT_STOP_AT_S, Runner, Scheduler, _Owner
from ..safefs import ensure_dir, remove_tree
from ..scenario.load import Command, LinkSpec, Part, Scenario, _slug

#: the part every line of a script belongs to
PART = "mininet"


def caller() -> str:
    """``FILE:LINE`` of the user code that called into bufferlab.mininet."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame = sys._getframe(1)
    while frame.f_back is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
        frame = frame.f_back
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


class MininetError(BufferlabError):
    """A Mininet API call bufferlab cannot honour (bad argument, unknown node, ...)."""


class Session:
    def __init__(self, name: str, hosts: list[str], switches: list[str], links: list[LinkSpec],
                 results_root: Path | None = None, seed: int = 1) -> None:
        part = Part(PART, [], None, 0)
        sc = Scenario(path=Path(f"{name}.py"), name=name, slug=_slug(name), seed=seed,
                      profile=PROFILES["lab2019"], arp=True, gso=True, hosts=hosts, switches=switches,
                      routers=[], links=links, parts=[part])
        self.runner = Runner(sc, results_root, progress=False)
        self.part = part
        self.runner.lines[PART] = []
        eng = self.runner.engine = Engine(self.runner.topo.engine_config)
        self.engine = eng
        self.runner._fresh_root()
        self.runner.observation.start_run(eng)
        self.runner.started_unix = time.time()
        self.runner._wall0 = self._wall0 = time.perf_counter()
        self.sched = Scheduler(self.runner)
        self.state = PartState(part, 0)
        self.runner.part_states.append(self.state)
        self.sched.begin_part(self.state)
        self.part_dir = self.runner.root / PART
        self.runner.observation.start_part(self.part_dir, [])
        self.terminals: dict[str, Terminal] = {}
        self._index = 0
        self._pid = 0
        #: each terminal's latest line owner (popen's terminate finds its jobs by it)
        self._owners: dict[int, _Owner] = {}
        self.closed = False

    @property
    def now_s(self) -> float:
        return self.engine.now_ns / NS

    def terminal(self, node: str) -> Terminal:
        if node not in self.terminals:
            home = self.part_dir / node
            ensure_dir(home, self.runner.root)
            self.terminals[node] = Terminal(node, home, home)
            self.runner._terminals.append(self.terminals[node])
        return self.terminals[node]

    def start_line(self, node: str, text: str, term: Terminal | None = None,
                   foreground: bool = True) -> list[int]:
        """Type ``text`` into ``node``'s shell; the returned list gets the exit status
        when the line is done (at once for a line ending in ``&``)."""
        if self.closed:
            raise MininetError(f"{node}: cmd({text!r}) after net.stop()")
        self._index += 1
        # errors name the script line that typed the command, the node, then the column in it
        cmd = Command(terminal=node, text=text, line=1, col=1, index=self._index,
                      file=f"{caller()}: {node}")
        try:
            pl = self.runner._prepare_line(cmd)
        except CommandError as e:
            raise MininetError(str(e)) from None
        term = term or self.terminal(node)
        owner = _Owner(node, foreground=foreground)
        self._owners[id(term)] = owner
        done: list[int] = []

        def job() -> Generator[Any, Any, int]:
            status = yield from self.runner._terminal_proc(self.sched, self.state, term, [pl], owner)
            done.append(status)
            return status

        self.sched.spawn(job(), self._index, owner)
        self.sched._drain()
        return done

    def run_until(self, finished: Callable[[], bool], what: str) -> None:
        """Advance simulated time until ``finished()``; a line that can only end by
        Ctrl-C (``ping`` without ``-c``) would hang Mininet: here it is an error."""
        sched, eng = self.sched, self.engine
        while True:
            sched._drain()
            if finished():
                return
            instant = sched.waiting.next_instant()
            if instant is None and not sched.waiting.has_finite():
                raise MininetError(
                    f"{what} runs until interrupted, so cmd() would never return; "
                    "end it with '&' (and kill it later) or give it an end (ping -c N, iperf -t N)")
            cap = eng.now_ns + int(DEFAULT_STOP_AT_S * NS)
            sched._advance(min(instant, cap) if instant is not None else cap)

    def run_until_or(self, finished: Callable[[], bool], end_ns: int) -> None:
        """Advance simulated time until ``finished()`` or ``end_ns``, whichever comes first."""
        sched, eng = self.sched, self.engine
        while True:
            sched._drain()
            if finished() or eng.now_ns >= end_ns:
                return
            instant = sched.waiting.next_instant()
            sched._advance(min(instant, end_ns) if instant is not None else end_ns)

    def new_terminal(self, node: str) -> Terminal:
        """A terminal of its own for one ``popen`` (its output apart from the shell's)."""
        self._pid += 1
        home = self.part_dir / node / f"popen-{self._pid}"
        ensure_dir(home, self.runner.root)
        term = Terminal(node, home, home)
        self.runner._terminals.append(term)
        return term

    def next_pid(self) -> int:
        return 1000 + self._pid

    def interrupt_terminal(self, term: Terminal) -> None:
        """Ctrl-C the line a ``popen`` started (its jobs wait under that terminal's owner)."""
        entries = [e for e in self.sched.waiting if e[4] is self._owners.get(id(term))]
        self.sched._interrupt(entries)
        self.sched._drain()

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise MininetError(f"sleep({seconds}): a duration of at least 0 s")
        self.sched.idle(round(seconds * NS))

    def interrupt(self, node: str) -> None:
        """Ctrl-C ``node``'s foreground line (``sendInt``)."""
        self.sched._interrupt(self.sched.waiting.foreground(node))
        self.sched._drain()

    def close(self, report: bool = True) -> dict[str, Any]:
        """Ctrl-C what still runs; write the terminal logs, summary.json, and (``report``)
        the tables and the HTML report as ``bufferlab run`` does."""
        if self.closed:
            return {}
        self.closed = True
        runner = self.runner
        self.sched.end_scenario()
        for term in runner._terminals:
            term.flush()
        observed = runner.observation.end_part()
        runner.part_reports.append({"name": PART, "start_ns": 0, "end_ns": self.engine.now_ns,
                                    "queues": self.state.queue_files, **observed,
                                    **runner._part_counters()})
        runner._part_results(0)
        runner.observation.end_run()
        summary = runner._write_summary(time.perf_counter() - self._wall0, None)
        if runner.prev_root is not None:
            remove_tree(runner.prev_root)
        after_run(runner.root, report=report)
        return summary
