"""Run a scenario's parts with the semantics of docs/internals.md "How lines run".

Each terminal (a node's, or ``admin``) runs its lines in order; terminals run
side by side in simulated time; at one instant, lines start in file order.
A line is a shell line (``&``, ``&&``, ``;``, ``>``, ``>>``): each job is a
generator that yields what it waits for — an application to finish, an
instant to arrive, or its turn to start the next line — and the scheduler
below advances the engine to the next thing anyone waits for.

A part ends when every terminal has run all its lines and every finite
command has finished (and its optional ``duration`` has passed). Commands that
never end on their own (``iperf3 -s``, ``ping`` without ``-c``, ``plot_q.sh``,
``sink``, ``tcpdump``, a ``while true`` loop) keep running into the following parts, as in a
terminal the student leaves open: one is interrupted as by Ctrl-C (printing
what the real tool prints then) when its terminal types its next line, when a
part's ``interrupt`` names its terminal, or when the scenario ends. Before
each part after the first the network runs idle for ``[sim] part_gap``.

Its output goes where the command was typed (its part's node folder); the
printed result summary lists it in the part during which it ended.
"""

from __future__ import annotations

import heapq
import signal
import sys
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..commands.procs import SIGINT
from ..commands.shell import Job, Loop, Redirect, SimpleCommand, Word, parse_shell, simple_commands
from ..errors import BufferlabError, CommandError, Diagnostics, ScenarioError
from ..outputs.result_lines import results_text
from ..results_folder import acquire, discard, fresh, release, write_marker
from ..safefs import ensure_dir, open_write, write_json_atomic
from ..scenario.load import Command, Part, Scenario
from ..scenario.topology import BuiltTopology, build_topology
from .budget import check_flow_budget, check_ping_budget, check_sample_budget
from .context import (
    NS,
    AppRecord,
    Chain,
    Io,
    Item,
    JobGen,
    NextLine,
    PartState,
    PrepareCtx,
    PreparedLine,
    PreparedLoop,
    RunCtx,
    Terminal,
    Wait,
    WaitApp,
    WaitOther,
    WaitUntil,
    inside_home,
)
from .engine import Engine, EngineError
from .observation import Observation
from .part_results import part_results
from .procs import ProcessTable, ShellJob, ended_message, supervise
from .programs import PROGRAMS, prepare_chain
from .programs.tc import tc_request_for_engine
from .tc_shadow import TcShadow
from .waiting import Waiting, is_finite

#: default hard cap on one part's simulated length (a part that would never end is an error)
DEFAULT_STOP_AT_S = 3600.0

#: a loop that turns this many times at one simulated instant is stopped (an error of its line):
#: with no `sleep` (nothing that lets time pass) it would hold the simulation at that instant
LOOP_SPINS = 10_000

#: a chain or a list run as a generator: its status, and whether Ctrl-C ended one of its commands
_Steered = Generator[Wait, Any, tuple[int, bool]]

#: the subshell bash forks to run a background loop (``while ...; done &``): a process of the
#: job that takes its PID (``$!``) and that any signal but the ignored ones ends. Never typed,
#: so never prepared: only its name and its (default) ways with signals are used
SUBSHELL = replace(PROGRAMS["true"], name="bash", summary="the subshell of a background loop", builtin=False)


@dataclass
class Failure:
    """A command that exited non-zero and whose line did not handle it (``||``)."""

    node: str
    part: str
    where: str
    command: str
    status: int
    message: str
    #: the part lists the line under ``allow_fail``: reported, but ``run`` still exits 0
    allowed: bool

    def __str__(self) -> str:
        ok = " (allowed by allow_fail)" if self.allowed else ""
        return (f"{self.where}: {self.node}: part {self.part!r}: `{self.command}` exited with status "
                f"{self.status}{ok}\n    {self.message or '(it printed no message)'}")


class PartTimeout(BufferlabError):
    """A part did not finish within ``[sim] stop_at``; the earlier parts' results are written."""


#: with --max-wall/--max-events the engine hands control back after at most this many events
#: (~20 ms of wall time), the limits are checked, and it resumes exactly where it stopped: the
#: runner itself acts only when an application ends or a wait expires, so the outputs are those
#: of an unlimited run, and dense traffic (millions of events per simulated ms) cannot outrun
#: the limits
LIMIT_CHECK_EVENTS = 65_536


class RunStopped(Exception):
    """``--max-wall`` or ``--max-events`` was reached: the run ends cleanly with what it has."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived (raised by the handlers of :func:`signals_raise`, from
    inside the engine's run within milliseconds). The runner writes what it has, the
    interrupted part marked, then re-raises; ``bufferlab run`` exits 128 + ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_name(e: BaseException) -> str:
    """``SIGINT`` or ``SIGTERM`` for an interrupt (a plain KeyboardInterrupt is SIGINT)."""
    return signal.Signals(getattr(e, "signum", signal.SIGINT)).name


class _Signals:
    #: while writing results after an interrupt, further signals wait (``pending``)
    defer = 0
    pending: int | None = None
    #: the last signal this process took (see :func:`interrupted_by`)
    received: int | None = None


def _on_signal(signum: int, frame: Any) -> None:
    _Signals.received = signum
    if _Signals.defer:
        _Signals.pending = signum
        return
    raise Interrupted(signum)


def signals_raise() -> None:
    """SIGINT and SIGTERM raise :class:`Interrupted` (``bufferlab run`` installs this:
    SIGTERM's default would kill the process with nothing written, and SIGINT is
    ignored in a background job without a terminal)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _on_signal)


def interrupted_by() -> int | None:
    """The signal :func:`signals_raise`'s handler took, if any: an extension module whose
    import it interrupted reports only ``ImportError: initialization failed``."""
    return _Signals.received


@contextmanager
def signals_deferred() -> Any:
    """Finish writing results before another signal acts (it is remembered, and
    raised when the outermost block ends)."""
    _Signals.defer += 1
    try:
        yield
    finally:
        _Signals.defer -= 1
    if not _Signals.defer and _Signals.pending is not None:
        signum, _Signals.pending = _Signals.pending, None
        raise Interrupted(signum)


class Runner:
    """Runs one scenario: :meth:`check` prepares every line, :meth:`run` runs the parts
    and writes the results (what :func:`run_scenario` does)."""

    def __init__(
        self,
        scenario: Scenario,
        results_root: Path | None = None,
        progress: bool | None = None,
        echo: Callable[[str], None] | None = None,
        result: Callable[[str], None] | None = None,
    ) -> None:
        self.sc = scenario
        self.topo: BuiltTopology = build_topology(scenario)
        self.root = (results_root or Path("results")) / scenario.slug
        self.progress = sys.stderr.isatty() if progress is None else progress
        #: progress and diagnostics (``== part``, warnings); ``result``: each part's result
        #: summary (``bufferlab run`` prints the one on stderr, the other on stdout)
        self.echo = echo or (lambda s: None)
        self.result = result or self.echo
        #: the scenario's own warnings (a MiniEdit file's ignored keys), then the commands'
        self.warnings: list[str] = list(scenario.warnings)
        self.sysctl: dict[str, dict[str, Any]] = {}
        #: listening TCP applications (iperf3 -s, TCP sink): app id -> (host, -C of the command);
        #: a sysctl on the host reaches the connections they accept later
        self.tcp_listeners: dict[int, tuple[str, str | None]] = {}
        self.apps: list[AppRecord] = []
        self.lines: dict[str, list[PreparedLine]] = {}
        self.engine: Engine | None = None
        self.part_reports: list[dict[str, Any]] = []
        self.part_states: list[PartState] = []
        self.failures: list[Failure] = []
        self.wall_s = 0.0
        #: the run's wall-clock start (UNIX seconds); only run.json carries it (not deterministic)
        self.started_unix = 0.0
        self._netem_limit_seen: dict[str, int] = {}
        #: [capture], [trace] and plot_q.sh's queue traces (observation.py)
        self.observation = Observation(scenario, self.topo, self.root)
        #: drop counters at the end of the previous part (interface -> reason -> [packets, bytes])
        self._drops_seen: dict[str, dict[str, list[int]]] = {}
        #: every terminal of every part: a command that outlives its part still writes its log
        self._terminals: list[Terminal] = []
        #: applications already listed in a part's result summary
        self._reported: set[int] = set()
        #: ``bufferlab run --max-wall SECONDS`` / ``--max-events N``: end the run cleanly once
        #: either is reached (checked every ``LIMIT_CHECK_EVENTS`` events); ``stopped`` then says
        #: why (also in summary.json)
        self.max_wall_s: float | None = None
        self.max_events: int | None = None
        #: the qdisc trees of the tc lines checked so far (check only; tc_shadow.py)
        self.tc_shadow: TcShadow | None = None
        self.stopped: str | None = None
        self._wall0 = 0.0
        #: ``SIGINT``/``SIGTERM`` if a signal ended the run (summary.json's ``interrupted``)
        self.interrupted: str | None = None
        #: the previous run's folder, moved aside (``<scenario>.prev``) until this run completes
        self.prev_root: Path | None = None
        #: processes, PIDs and each terminal's jobs (kill, ps, jobs, wait: run/procs.py)
        self.procs = ProcessTable(["admin", *scenario.hosts, *scenario.routers, *scenario.switches])
        #: what the results folder's marker says made it (results_folder.py): run or mininet
        self.kind = "run"
        self._made_root = False
        #: receives the run's progress as plain dicts (``bufferlab run --progress-json``, bufferlab
        #: serve): ``part`` when a part starts, ``progress`` while it runs (simulated seconds done
        #: and expected; at most every 0.1 s of wall time), ``summary`` each time summary.json is
        #: written (after each part: the parts it holds). Watching leaves the outputs unchanged:
        #: the engine is only paused and resumed, as for --max-wall (LIMIT_CHECK_EVENTS).
        self.on_event: Callable[[dict[str, Any]], None] | None = None

    # ------------------------------------------------------------ checking

    def check(self) -> None:
        """Parse every line of every part; raise the first error with its position."""
        cap = self.sc.profile.stop_at or DEFAULT_STOP_AT_S
        # only a duplicating netem needs the trees (their tc lines cost as much as in a run)
        if any("duplicate" in c.text for part in self.sc.parts for c in part.commands):
            self.tc_shadow = TcShadow(self.topo, self.sc.profile)
        try:
            for part in self.sc.parts:
                if part.duration is not None and part.duration > cap:
                    raise ScenarioError(
                        f"part {part.name!r}: duration = {part.duration:g} s is longer than stop_at = "
                        f"{cap:g} s",
                        file=str(self.sc.path),
                        line=part.line,
                        expected="a duration no longer than [sim] stop_at",
                        suggestion=f'raise [sim] stop_at, e.g. stop_at = "{part.duration:g}s"',
                    )
                self.lines[part.name] = [self.prepare_line(c) for c in part.commands]
                self._check_part_ends(part, self.lines[part.name])
        finally:
            self.tc_shadow = None
        self.observation.check()
        check_sample_budget(self.sc, self.lines, DEFAULT_STOP_AT_S)
        check_flow_budget(self.sc, self.lines, DEFAULT_STOP_AT_S)
        check_ping_budget(self.sc, self.lines, DEFAULT_STOP_AT_S)

    def _check_part_ends(self, part: Part, lines: list[PreparedLine]) -> None:
        """A part of only endless lines would end the instant it starts (Lab 14's first
        section, two `ping 10.0.0.3` the student watches): it needs a `duration`."""
        if part.duration is not None or not lines or not all(pl.endless for pl in lines):
            return
        first = lines[0].command
        raise ScenarioError(
            f"part {part.name!r}: every line runs until interrupted ({first.terminal}: {first.text}), "
            "so the part would end at once",
            file=str(self.sc.path),
            line=first.line,
            col=first.col,
            expected="a duration for the part (how long the student watches), or a line that ends",
            suggestion='add duration = "30s" to the part, or give the command an end (e.g. ping -c 30)',
        )

    def prepare_line(self, c: Command) -> PreparedLine:
        diag = Diagnostics()
        pc = PrepareCtx(terminal=c.terminal, topo=self.topo, profile=self.sc.profile, diag=diag,
                        base_dir=self.sc.path.parent, shadow=self.tc_shadow)
        try:
            jobs = parse_shell(c.text)
            chains = [prepare_chain(pc, job) for job in jobs]
        except CommandError as e:
            raise e.locate(c.where(e.col), c.text) from None
        for w in diag.warnings:
            w.where = c.where(w.col)
            self.warnings.append(str(w))
        return PreparedLine(c, [items for items, _ in chains], [job.background for job in jobs],
                            [ops for _, ops in chains])

    # ------------------------------------------------------------ running

    def run(self) -> dict[str, Any]:
        """Run every part and write the results; returns summary.json's contents."""
        if not self.lines:
            self.check()
        for w in self.warnings:
            self.echo(w)
        self.open_run()
        wall0 = self._wall0
        for node, dev, args in self.topo.tclink_commands:
            self._apply_tclink(node, dev, args)
        sched = Scheduler(self)
        error = None
        #: what ended the run early, re-raised once everything is written
        abort: BaseException | None = None
        try:
            for i, part in enumerate(self.sc.parts):
                if i > 0:
                    sched.idle(round(self.sc.part_gap * NS))
                self._run_part(sched, part)
                if i < len(self.sc.parts) - 1:
                    self.summarise_part(i)
                    # nothing lost: summary.json as it stands after each part
                    with signals_deferred():
                        self.write_summary(time.perf_counter() - wall0, None)
            sched.end_scenario()
        except PartTimeout as e:
            error = str(e)
        except RunStopped as e:
            self.stopped = str(e)
        except KeyboardInterrupt as e:  # SIGINT/SIGTERM (Interrupted), or Ctrl-C of a library caller
            self.interrupted, abort = signal_name(e), e
        except Exception as e:  # a run-time error: every earlier part's results are kept
            error, abort = _error_text(e), e
        with signals_deferred():
            if abort is not None and not sched.stopping:
                # between parts, or an error: Ctrl-C what still runs (each prints what it prints then)
                _quietly(sched.end_scenario)
            for term in self._terminals:
                term.flush()
            if self.part_reports and "results" not in self.part_reports[-1]:
                self.summarise_part(len(self.part_reports) - 1)
            completed = abort is None and error is None and self.stopped is None
            summary = self.close_run(error, completed)
        if abort is not None:
            raise abort
        if error:
            raise PartTimeout(error)
        return summary

    # The steps of a run, in order, shared by :meth:`run` and a live session
    # (mininet/session.py, which types lines one at a time): open_run, then per part
    # begin_part, the jobs (prepare_line, terminal_proc) driven by a Scheduler,
    # part_entry and summarise_part; close_run last.

    def open_run(self, fresh: bool = True) -> None:
        """Start the engine and the results folder (``fresh``: a previous run's folder is
        moved aside, as :meth:`_fresh_root` says; False: the caller made it already)."""
        self.engine = Engine(self.topo.engine_config)
        acquire(self.root)  # one writer per results folder; released by close_run
        self._made_root = fresh  # else its caller says whether it completed
        try:
            if fresh:
                self._fresh_root()
            else:
                self.root.mkdir(parents=True, exist_ok=True)
        except BaseException:
            release(self.root)
            raise
        self.observation.start_run(self.engine)
        self.started_unix = time.time()
        self._wall0 = time.perf_counter()

    def close_run(self, error: str | None, completed: bool) -> dict[str, Any]:
        """End the observations, write summary.json; a ``completed`` run removes the
        previous run's folder. Returns the summary."""
        _quietly(self.observation.end_run)
        try:
            summary = self.write_summary(time.perf_counter() - self._wall0, error)
            if completed and self._made_root:
                write_marker(self.root, self.kind, complete=True)
            if completed and self.prev_root is not None:
                discard(self.prev_root)  # the run completed: the previous one goes
                self.prev_root = None
        finally:
            release(self.root)
        return summary

    def begin_part(self, sched: Scheduler, part: Part, part_dir: Path) -> PartState:
        """A part starts now: its state, the scheduler's limits, the engine's peak
        backlogs and the observations restart."""
        assert self.engine is not None
        eng = self.engine
        state = PartState(part, eng.now_ns)
        self.part_states.append(state)
        sched.begin_part(state)
        eng.reset_peak_backlogs()
        # plot_q.sh still running from an earlier part keeps tracing its queue in this one
        self.observation.start_part(part_dir, sorted({
            a.traces for a in self.apps
            if a is not None and a.traces is not None and not eng.app_finished(a.app_id)
        }))
        return state

    def part_entry(self, state: PartState, interfaces: dict[str, Any]) -> dict[str, Any]:
        """The part's summary.json entry as it ends now: its span, the drops and qdiscs
        (:meth:`_part_counters` of the engine summary's ``interfaces``) and what was observed."""
        assert self.engine is not None
        counters = self._part_counters(interfaces)
        observed = self.observation.end_part()
        # interfaces without a queue trace: the engine's high-water mark of what their qdiscs
        # held (the same quantity, without the trace's time series)
        observed["peak_backlog"] = {**{dev: peak for dev, peak in self.engine.peak_backlogs().items()
                                       if dev in counters["qdiscs"]},
                                    **observed["peak_backlog"]}
        return {"name": state.part.name, "start_ns": state.start_ns, "end_ns": self.engine.now_ns,
                "queues": state.queue_files, **observed, **counters}

    def _fresh_root(self) -> None:
        """Results go into a new, empty, marked folder: a previous run's folder becomes
        ``<scenario>.prev`` until this run completes, so no stale file of it can show up
        in this run's results (a symlink there is unlinked, never followed). Only a folder
        bufferlab wrote is moved or removed, and a partial run never pushes out the last
        complete one (results_folder.fresh)."""
        root = self.root
        self.prev_root = fresh(root, self.kind, f"choose another folder with -o (results go into "
                               f"<-o>/{root.name}), or move {root} away yourself", [self.sc.path])

    def _apply_tclink(self, node: str, dev: str, args: str) -> None:
        words = next(simple_commands(parse_shell(f"tc qdisc add dev {dev} {args}"))).words
        assert self.engine is not None
        self.engine.tc(tc_request_for_engine(words, self.sc.profile, dev))

    def _run_part(self, sched: Scheduler, part: Part) -> None:
        assert self.engine is not None
        eng = self.engine
        part_dir = self.root / part.name
        start = eng.now_ns
        self.echo(f"== part {part.name} (t = {start / NS:.3f} s)")
        terminals: dict[str, Terminal] = {}
        lines_by_term: dict[str, list[PreparedLine]] = {}
        for pl in self.lines[part.name]:
            t = pl.command.terminal
            if t not in terminals:
                home = part_dir / t
                ensure_dir(home, self.root)  # part and node folders: never through a symlink
                terminals[t] = Terminal(t, home, home)
                self._terminals.append(terminals[t])
            lines_by_term.setdefault(t, []).append(pl)
        state = self.begin_part(sched, part, part_dir)
        for t, pls in lines_by_term.items():
            owner = Owner(t, foreground=True)
            proc = self.terminal_proc(sched, state, terminals[t], pls, owner)
            sched.spawn(proc, pls[0].command.index, owner)
        stopped: RunStopped | None = None
        #: a signal or a run-time error ended the part: it is recorded with what it has, marked
        aborted: BaseException | None = None
        try:
            # announced once its commands are in place, inside the try: a stop that follows
            # the event (bufferlab serve sends SIGINT as soon as it reads it) may land before
            # emit returns, and the part is still recorded, marked
            self.emit({"event": "part", "part": part.name, "index": len(self.part_reports),
                       "parts": len(self.sc.parts), "start_s": start / NS})
            sched.run_part()
        except RunStopped as e:  # --max-wall/--max-events: keep what the part has, marked
            stopped = e
        except KeyboardInterrupt as e:  # SIGINT/SIGTERM: Ctrl-C every command, as a student would
            aborted = e
            with signals_deferred():
                if not sched.stopping:
                    _quietly(sched.end_scenario)
        except Exception as e:  # a run-time error (the part timed out, the engine refused ...)
            aborted = e
            if not sched.stopping:
                _quietly(sched.end_scenario)
        finally:  # what the terminals printed helps most when the part did not finish
            with signals_deferred():
                for term in terminals.values():
                    term.flush()
        if aborted is not None:
            with signals_deferred():
                self._record_aborted_part(state, aborted)
            raise aborted
        # one engine summary for both: it serialises every qdisc and class
        interfaces = eng.summary()["interfaces"]
        self.part_reports.append(self.part_entry(state, interfaces))
        if stopped is not None:
            self.part_reports[-1]["stopped"] = str(stopped)
            raise stopped
        self._warn_netem_limit(part, interfaces)

    def emit(self, event: dict[str, Any]) -> None:
        """Hand ``event`` to :attr:`on_event`, if anyone listens."""
        if self.on_event is not None:
            self.on_event(event)

    def _record_aborted_part(self, state: PartState, e: BaseException) -> None:
        """The part's summary entry when a signal (``interrupted``) or a run-time error
        (``error``) ended it: what it has up to then."""
        assert self.engine is not None
        entry: dict[str, Any] = {"name": state.part.name, "start_ns": state.start_ns,
                                 "end_ns": self.engine.now_ns, "queues": state.queue_files}
        try:
            entry = self.part_entry(state, self.engine.summary()["interfaces"])
        except Exception:
            pass
        if isinstance(e, KeyboardInterrupt):
            entry["interrupted"] = signal_name(e)
        else:
            entry["error"] = _error_text(e)
        self.part_reports.append(entry)

    def limit_reached(self) -> str | None:
        """Why the run must stop now (``--max-wall``/``--max-events``), or None."""
        eng = self.engine
        assert eng is not None
        if self.max_events is not None and eng.events_processed() >= self.max_events:
            return f"--max-events {self.max_events} reached ({eng.events_processed()} events)"
        if self.max_wall_s is not None and time.perf_counter() - self._wall0 >= self.max_wall_s:
            return f"--max-wall {self.max_wall_s:g} s reached"
        return None

    def _part_counters(self, interfaces: dict[str, Any]) -> dict[str, Any]:
        """``drops``: by interface and reason during this part (the engine's counters are
        cumulative); ``qdiscs``: each configured interface's qdiscs as the part left them
        (options and cumulative stats), for per-part rates and ``tc -s`` in the report."""
        assert self.engine is not None
        out: dict[str, dict[str, dict[str, int]]] = {}
        qdiscs: dict[str, Any] = {}
        for dev, info in sorted(interfaces.items()):
            if any(q["kind"] != "noqueue" for q in info["qdiscs"]):
                qdiscs[dev] = info["qdiscs"]
            seen = self._drops_seen.setdefault(dev, {})
            for reason, c in sorted(info["drops"].items()):
                p0, b0 = seen.get(reason, [0, 0])
                if c["packets"] > p0:
                    out.setdefault(dev, {})[reason] = {"packets": c["packets"] - p0, "bytes": c["bytes"] - b0}
                seen[reason] = [c["packets"], c["bytes"]]
        return {"drops": out, "qdiscs": qdiscs}

    def summarise_part(self, index: int) -> None:
        """The part's result summary (``results`` in its summary.json entry), printed:
        every iperf3 client and ping that ended during the part, and every
        interface whose qdiscs dropped packets in it."""
        assert self.engine is not None
        report, state = self.part_reports[index], self.part_states[index]
        ended = [a for a in self.apps if a is not None and a.app_id not in self._reported
                 and self.engine.app_finished(a.app_id)]
        self._reported.update(a.app_id for a in ended)
        res, warnings = part_results(self.engine, ended, report)
        report["results"] = res
        for w in warnings:
            self.warnings.append(w)
            self.echo(w)
        text = results_text(report["name"], res)
        if text:
            self.result(text)
        self._print_classes(report["name"], state.class_table())

    def _warn_netem_limit(self, part: Part, interfaces: dict[str, Any]) -> None:
        """docs/semantics/qdiscs.md P9: netem's `limit` counts packets in its delay line. With
        TSO/GSO off somewhere, MTU-sized packets overflow the default 1000 on a
        fast, long path where Mininet, carrying 64 KB aggregates, did not. (With
        aggregates everywhere such drops are what Linux does: no warning.)"""
        segmented = [d for d, i in interfaces.items() if not (i["offloads"]["tso"] and i["offloads"]["gso"])]
        for dev, info in interfaces.items():
            total = info["drops"].get("netem_limit", {}).get("packets", 0)
            new = total - self._netem_limit_seen.get(dev, 0)
            self._netem_limit_seen[dev] = total
            if new > 0 and segmented:
                w = (
                    f"warning: part {part.name!r}: netem on {dev} dropped {new} packets at its limit: "
                    "netem's limit counts packets in its delay line, and with TSO/GSO off "
                    f"({', '.join(sorted(segmented))}) bufferlab sends MTU-sized packets where Mininet's "
                    "veths carry 64 KB aggregates (docs/semantics/qdiscs.md P9); turn them on "
                    "([sim] gso = true, ethtool -K IFACE tso on gso on) or raise the limit, "
                    "e.g. netem delay 20ms limit 100000"
                )
                self.warnings.append(w)
                self.echo(w)

    def terminal_proc(
        self, sched: Scheduler, state: PartState, term: Terminal, lines: list[PreparedLine], owner: Owner
    ) -> JobGen:
        status = 0
        for k, pl in enumerate(lines):
            yield NextLine(pl.command.index)
            # typing a line into a terminal whose command still runs (an endless one from an
            # earlier part): Ctrl-C it first, and let it print what it prints then -- unless
            # the line only configures the host (sysctl, tc, ethtool), which a student types
            # in a second shell of the same host while the server keeps running (Lab 7)
            if not pl.configures_only() and sched.ctrl_c_foreground(term.name, owner):
                yield NextLine(pl.command.index)
            if sched.stopping:
                break
            owner.more_lines = k < len(lines) - 1
            term.log(f"$ {pl.command.text}")
            for job, bg, ops in zip(pl.jobs, pl.backgrounds, pl.ops, strict=True):
                if sched.stopping:
                    break
                if bg:
                    bg_owner = Owner(term.name, foreground=False)
                    shell_job = self.procs.new_job(term.name, _job_text(job, ops), bg_owner)
                    sched.spawn(self._job(sched, state, term, pl, job, ops, bg_owner, shell_job),
                                pl.command.index, bg_owner)
                    status = 0
                else:
                    status = yield from self._job(sched, state, term, pl, job, ops, owner)
        return status

    def _job(
        self, sched: Scheduler, state: PartState, term: Terminal, pl: PreparedLine,
        job: list[Item], ops: list[str], owner: Owner, shell_job: ShellJob | None = None,
    ) -> JobGen:
        """One job of a line: its chain (:meth:`_chain`); a background job's status is the
        chain's."""
        text = _job_text(job, ops) if len(pl.jobs) > 1 else None
        jc = _JobRun(sched, state, term, pl, owner, shell_job, text)
        status, _ = yield from self._chain(jc, job, ops, None, report=True)
        if shell_job is not None:
            shell_job.status = status
        return status

    def _chain(self, jc: _JobRun, job: list[Item], ops: list[str], out: Path | None,
               report: bool) -> _Steered:
        """One ``&&``/``||`` chain, left to right as bash runs it. A command without a redirection
        writes to ``out`` (a loop's ``> FILE``; None: the terminal). A non-zero status that
        reaches the end of the chain (no ``||`` took it) is a failure if ``report``. Each
        command but a builtin is a process (run/procs.py); a signal to the job ends the chain.
        Returns the status and whether Ctrl-C ended one of its commands (which ends a loop)."""
        sched, term, shell_job = jc.sched, jc.term, jc.shell_job
        status = 0
        ctrl_c = False
        failed: tuple[SimpleCommand, RunCtx] | None = None
        for k, (sc, prepared) in enumerate(job):
            if jc.stopped() and k > 0:
                break
            if k > 0 and (status == 0) != ((ops[k - 1] if k - 1 < len(ops) else "&&") == "&&"):
                continue  # `a && b` runs b only if a succeeded, `a || b` only if it failed
            io = self._io_for(term, sc.redirect, out)
            if io is None:
                status = 1  # bash: the redirect failed, the command does not run
                failed = None
                continue
            if isinstance(prepared, PreparedLoop):
                assert isinstance(sc, Loop)
                loop = self._loop(jc, sc, prepared, io.path)
                # a loop that never ends holds the part no more than `ping` without -c does
                status = yield from (_endless(loop) if prepared.endless else loop)
                failed = None  # its commands' statuses steer it; it reports only its own error
                continue
            assert isinstance(sc, SimpleCommand)
            rt = RunCtx(self, sched, jc.state, term, jc.pl.command, io, sc, job=jc.text)
            program = prepared.program
            assert program is not None
            if program.builtin:
                status = yield from prepared.run(rt)
            else:
                assert self.engine is not None
                proc = rt.process = self.procs.spawn(term.name, sc.words, self.engine.now_ns, jc.owner,
                                                     rt.app_ids, program, shell_job)
                proc.status = status = yield from supervise(proc, prepared.run(rt), io)
                if jc.owner.foreground:
                    term.log(ended_message(proc))
            killed = rt.interrupted or rt.process is not None and rt.process.signal is not None
            # Ctrl-C: the scheduler's (an application stopped, no signal to the process) or a
            # SIGINT. Another signal (kill) ends a loop only through its job (_JobRun.stopped):
            # bash goes on with a foreground loop whose command was killed
            sig = rt.process.signal if rt.process is not None else None
            ctrl_c = ctrl_c or rt.interrupted or sig == SIGINT or (
                sig is None and sched.was_interrupted(rt.app_ids))
            failed = (
                (sc, rt) if status != 0 and not killed and not sched.was_interrupted(rt.app_ids) else None
            )
        if report and status != 0 and failed is not None:
            sc, rt = failed
            self._fail(jc, sc.words[0].col if sc.words else 0, status, rt.io.message())
        return status, ctrl_c

    def _loop(self, jc: _JobRun, loop: Loop, prepared: PreparedLoop, out: Path | None) -> JobGen:
        """``while``/``until`` as bash runs it: the condition, then the body while the condition
        succeeds (``until``: fails); the status is the body's last (0 if it never ran). Ctrl-C
        of one of its commands ends it, and so does a signal to its job. A background loop runs
        in a subshell process, the first of its job (``$!``). :data:`LOOP_SPINS` turns at one
        simulated instant stop it: an error of the line, status 1."""
        eng = self.engine
        assert eng is not None
        shell = None if jc.shell_job is None else self.procs.spawn(
            jc.term.name, [Word("bash", loop.col)], eng.now_ns, jc.owner, [], SUBSHELL, jc.shell_job)
        status, spins, instant = 0, 0, eng.now_ns
        while not jc.stopped():
            held, ctrl_c = yield from self._list(jc, prepared.condition, out)
            if ctrl_c or jc.stopped() or (held == 0) == prepared.until:
                break
            status, ctrl_c = yield from self._list(jc, prepared.body, out)
            if ctrl_c:
                break
            if eng.now_ns != instant:
                instant, spins = eng.now_ns, 0
            spins += 1
            if spins == LOOP_SPINS:
                message = (f"bufferlab: the loop `{loop.text}` turned {LOOP_SPINS} times at t = "
                           f"{instant / NS:.6f} s with no simulated time passing: stopped (put a `sleep` "
                           "in its body, e.g. sleep 0.1)")
                jc.term.log(message)
                self._fail(jc, loop.col, 1, message)
                status = 1
                break
        if shell is not None:
            shell.status = status = 128 + shell.signal if shell.signal is not None else status
        return status

    def _list(self, jc: _JobRun, chains: list[Chain], out: Path | None) -> _Steered:
        """A loop's condition or body: its chains in order, as :meth:`_chain` runs them, until
        Ctrl-C ends one or the job is signalled. Returns the last status and whether Ctrl-C came."""
        status, ctrl_c = 0, False
        for items, ops in chains:
            if ctrl_c or jc.stopped():
                break
            status, ctrl_c = yield from self._chain(jc, items, ops, out, report=False)
        return status, ctrl_c

    def _fail(self, jc: _JobRun, col: int, status: int, message: str) -> None:
        """A command of the line at ``col`` failed with ``status``: listed at the end of the run."""
        c = jc.pl.command
        self.failures.append(Failure(jc.term.name, jc.state.part.name, c.where(col),
                                     f"{c.terminal}: {c.text}", status, message,
                                     c.index in jc.state.part.allow_fail))

    def _io_for(self, term: Terminal, redirect: Redirect | None, out: Path | None) -> Io | None:
        """Where a command writes: its redirection (the file opened now, as bash does), else ``out``."""
        if redirect is None:
            return Io(term, out)
        target = redirect.target.text
        path = inside_home(term, term.cwd / target)
        if path is None:
            term.log(f"bash: {target}: Permission denied (outside the node's results folder)")
            return None
        try:
            with open_write(path, "a" if redirect.op == ">>" else "w"):
                pass
        except OSError as e:
            term.log(f"bash: {target}: {e.strerror}")
            return None
        return Io(term, path)

    # ------------------------------------------------------------ summary

    def write_summary(self, wall_s: float, error: str | None) -> dict[str, Any]:
        assert self.engine is not None
        eng = self.engine.summary()
        for f in eng["flows"]:
            rec = self.apps[f["app"]] if f["app"] < len(self.apps) else None
            if rec is not None:
                f.update(part=rec.part, terminal=rec.terminal, command=rec.command,
                         start_ns=rec.start_ns, output=rec.output, simple=rec.simple)
        # commands may outlive their part: what they count is final only now
        for report, state in zip(self.part_reports, self.part_states, strict=False):
            report["classes"] = state.class_table()
            report["sinks"] = state.sink_table(self.engine)
            if state.fct_files:
                report["fct"] = state.fct_files
        summary = {
            "scenario": self.sc.name,
            "file": str(self.sc.path),
            "seed": self.sc.seed,
            "profile": self.sc.profile.name,
            "part_gap_s": self.sc.part_gap,
            "simulated_s": self.engine.now_ns / NS,
            "events": self.engine.events_processed(),
            "parts": self.part_reports,
            "packets": eng["packets"],
            "segments": eng["segments"],
            "interfaces": eng["interfaces"],
            "nodes": eng["nodes"],
            "flows": eng["flows"],
            "warnings": self.warnings,
            "failures": [vars(f) for f in self.failures],
            "error": error,
            **({"stopped": self.stopped} if self.stopped else {}),
            **({"interrupted": self.interrupted} if self.interrupted else {}),
            "captures": self.observation.run_capture_report,
            # for the HTML report: the topology as built, and the scenario as written
            "topology": {
                "nodes": self.topo.engine_config["nodes"],
                "links": self.topo.engine_config["links"],
                "tclink": [list(c) for c in self.topo.tclink_commands],
            },
            "scenario_toml": self.sc.source if self.sc.source is not None else (
                self.sc.path.read_text(encoding="utf-8") if self.sc.path.is_file() else None),
        }
        write_json_atomic(self.root / "summary.json", summary)
        self.emit({"event": "summary", "parts": [p["name"] for p in self.part_reports],
                   "simulated_s": summary["simulated_s"]})
        # Wall-clock figures differ between runs, so they stay out of summary.json
        # (which is bit-identical for the same scenario and seed): run.json has them.
        self.wall_s = wall_s
        write_run_info(self.root, self.started_unix, wall_s)
        return summary

    def _print_classes(self, name: str, rows: list[dict[str, Any]]) -> None:
        if len(rows) < 2:
            return
        self.result(f"part {name}: UDP iperf3 datagrams per DS byte")
        self.result("  DS byte      sent  received   dropped  dropped %")
        for r in rows:
            cells = f"{r['sent']:>9} {r['received']:>9} {r['dropped']:>9} {r['dropped_pct']:>10.2f}"
            self.result(f"  {r['tos']:>7} {cells}")


def _error_text(e: BaseException) -> str:
    """A run-time error as summary.json and the report show it."""
    return str(e) if isinstance(e, BufferlabError) else f"{type(e).__name__}: {e}"


def _quietly(fn: Callable[[], Any]) -> None:
    """Clean-up after an error: best effort, the original error is what is reported."""
    try:
        fn()
    except Exception:
        pass


def write_run_info(root: Path, started_unix: float, wall_s: float) -> None:
    """``run.json``: the run's wall-clock facts (when it started, how long it took),
    the only output that differs between two runs of the same scenario and seed.
    Exports that need a real date (Flent's ``TIME``) read it here."""
    doc = {
        "started": datetime.fromtimestamp(started_unix, UTC).isoformat(timespec="microseconds"),
        "started_unix": started_unix,
        "wall_s": round(wall_s, 6),
    }
    write_json_atomic(root / "run.json", doc)


@dataclass
class Owner:
    """Who runs a job: a terminal's foreground (its line-by-line process) or one of its
    background (``&``) jobs. Ctrl-C reaches the foreground; ``interrupt`` reaches both."""

    terminal: str
    foreground: bool
    #: the terminal has more lines in the part: its endless foreground command is
    #: interrupted once the part's finite commands are done, so the next line runs
    more_lines: bool = False


@dataclass
class _JobRun:
    """What every command of one job runs with (``Runner._job``), those of its loops too."""

    sched: Scheduler
    state: PartState
    term: Terminal
    pl: PreparedLine
    owner: Owner
    shell_job: ShellJob | None
    #: the job's text when the line holds several jobs (``AppRecord.job``)
    text: str | None

    def stopped(self) -> bool:
        """The scenario is ending, or a signal reached the job: nothing more of it runs."""
        return self.sched.stopping or self.shell_job is not None and self.shell_job.signal is not None


def _endless(gen: JobGen) -> JobGen:
    """``gen``, its waits marked endless: the part does not wait for a loop that never ends
    (``while true``), and Ctrl-C reaches its ``sleep`` (``Scheduler.interrupt``)."""
    value: Any = None
    try:
        while True:
            w = gen.send(value)
            value = yield replace(w, endless=True) if isinstance(w, WaitApp | WaitUntil) else w
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        gen.close()


#: one entry of the scheduler's queues: (line index, sequence number, job, wait or value, owner)
_Entry = tuple[int, int, JobGen, Any, Owner]


class Scheduler:
    """Advances the engine to whatever the jobs wait for next, part after part.

    Jobs that outlive a part (endless commands) stay in ``waiting`` across parts.
    """

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.engine = runner.engine
        assert self.engine is not None
        self.ready: list[_Entry] = []
        self.waiting = Waiting()
        self.seq = 0
        self.detached: list[tuple[int, Callable[[], None]]] = []
        #: applications interrupted by Ctrl-C (their exit status is not a failure)
        self.interrupted: set[int] = set()
        self.state: PartState | None = None
        self.stopping = False
        #: when the next ``progress`` event may go out (wall clock, :meth:`_tell_progress`)
        self._next_tell = 0.0
        self._in_part = False

    # ------------------------------------------------------------ parts

    def begin_part(self, state: PartState) -> None:
        part = state.part
        self.state = state
        self.part = part
        start = state.start_ns
        self.start_ns = start
        stop_at = self.runner.sc.profile.stop_at or DEFAULT_STOP_AT_S
        self.stop_ns = start + int(stop_at * NS)
        self.min_end_ns = start + int((part.duration or 0) * NS)
        #: the part's `stop` (ns-3's Simulator::Stop): applications still running then are interrupted
        self.hard_stop_ns = start + round(part.stop * NS) if part.stop is not None else None
        self.expected_end_ns = start

    def spawn(self, gen: JobGen, key: int, owner: Owner) -> None:
        self._ready(gen, key, None, owner)

    def _ready(self, gen: JobGen, key: int, value: Any, owner: Owner) -> None:
        heapq.heappush(self.ready, (key, self.seq, gen, value, owner))
        self.seq += 1

    def _step(self, key: int, gen: JobGen, value: Any, owner: Owner) -> None:
        try:
            w = gen.send(value)
        except StopIteration:
            return
        if isinstance(w, NextLine):
            self._ready(gen, w.index, None, owner)
        else:
            if isinstance(w, WaitApp) and w.expected_end_ns:
                self.expected_end_ns = max(self.expected_end_ns, w.expected_end_ns)
            if isinstance(w, WaitUntil) and not w.endless:
                self.expected_end_ns = max(self.expected_end_ns, w.t_ns)
            self.waiting.add((key, self.seq, gen, w, owner))
            self.seq += 1

    def drain(self) -> None:
        eng = self.engine
        assert eng is not None
        while self.ready:
            key, _, gen, value, owner = heapq.heappop(self.ready)
            self._step(key, gen, value, owner)
            # What this line started happens before the next line starts: at one
            # instant lines run in file order, so a client typed before its server
            # is refused even over a zero-delay veth. (Limits are checked here too:
            # an instant can hold millions of events.)
            self._wake(set(self._run_engine(eng.now_ns)))

    def advance(self, target: int, progress: _Progress | None = None) -> None:
        """Run the engine towards ``target`` (stopping early when an application ends).

        Never in more slices than that: where ``run`` stops changes what the engine
        has delivered at an instant (a sink Ctrl-C'd at the instant a cbr ends missed
        its last datagram when the runner sampled queues every 100 ms)."""
        eng = self.engine
        assert eng is not None
        # Run in slices so the progress display and Ctrl-C stay responsive.
        end = min(target, eng.now_ns + NS) if progress else target
        finished = self._run_engine(end)
        if progress:
            progress.update()
        self._wake(set(finished))

    def _run_engine(self, end: int) -> list[int]:
        """``engine.run(end)``, checking ``--max-wall``/``--max-events`` every
        ``LIMIT_CHECK_EVENTS`` events when either is given."""
        eng = self.engine
        assert eng is not None
        runner = self.runner
        if runner.max_wall_s is None and runner.max_events is None and runner.on_event is None:
            return eng.run(end) or []
        while True:
            self._check_limits()
            self._tell_progress()
            cap = LIMIT_CHECK_EVENTS
            if runner.max_events is not None:
                cap = max(1, min(cap, runner.max_events - eng.events_processed()))
            finished = eng.run(end, cap)
            if finished is not None:
                return finished

    def _tell_progress(self) -> None:
        """A ``progress`` event for :attr:`Runner.on_event` (at most every 0.1 s of wall time)."""
        runner = self.runner
        if runner.on_event is None or not self._in_part or self.stopping:
            return
        wall = time.perf_counter()
        if wall < self._next_tell:
            return
        self._next_tell = wall + 0.1
        now = self.engine.now_ns  # type: ignore[union-attr]
        total = max(self.expected_end_ns, now, self.min_end_ns) - self.start_ns
        runner.emit({"event": "progress", "part": self.part.name, "done_s": (now - self.start_ns) / NS,
                     "total_s": total / NS})

    def _check_limits(self) -> None:
        if self.stopping:
            return  # already ending the scenario (its Ctrl-Cs run the engine through here)
        why = self.runner.limit_reached()
        if why is not None:
            # as at the end of a scenario: Ctrl-C everything (each prints what it prints then)
            self.end_scenario()
            raise RunStopped(why)

    def idle(self, gap_ns: int) -> None:
        """``[sim] part_gap``: the network runs on its own; persisting commands go on."""
        eng = self.engine
        assert eng is not None
        end = eng.now_ns + gap_ns
        while eng.now_ns < end:
            self.drain()
            # a background loop's sleep ends within the gap (no other wait for an instant outlives its part)
            instant = self.waiting.next_instant()
            self._wake(set(self._run_engine(end if instant is None else min(instant, end))))
        self.drain()

    def run_part(self) -> None:
        eng = self.engine
        assert eng is not None
        part = self.part
        interrupted_at_end = False
        progress = _Progress(self) if self.runner.progress else None
        self._in_part = True
        try:
            while True:
                self.drain()
                now = eng.now_ns
                if self.hard_stop_ns is not None and now >= self.hard_stop_ns:
                    self.hard_stop_ns = None
                    self.interrupt([e for e in self.waiting])
                    continue
                if not self.waiting.has_finite() and now >= self.min_end_ns:
                    # the next line of a terminal whose foreground command never ends: Ctrl-C it
                    typed = [e for e in self.waiting if e[4].foreground and e[4].more_lines]
                    if typed:
                        self.interrupt(typed)
                        continue
                    if part.interrupt and not interrupted_at_end:
                        interrupted_at_end = True
                        every = part.interrupt == ["all"]
                        self.interrupt([e for e in self.waiting if every or e[4].terminal in part.interrupt])
                        continue
                    break
                if now >= self.stop_ns:
                    self._timeout()
                instant = self.waiting.next_instant()
                target = min(
                    ([instant] if instant is not None else [])
                    + ([self.min_end_ns] if now < self.min_end_ns else [])
                    + ([self.hard_stop_ns] if self.hard_stop_ns is not None else [])
                    + [self.stop_ns]
                )
                self.advance(target, progress)
        except EngineError as e:  # e.g. TCP on a zero-delay path: name the part and its lines
            lines = {c.index: c for c in part.commands}
            running = [f"{lines[k].where()}: {lines[k].text}"
                       for k in sorted({w[0] for w in self.waiting if w[0] in lines})]
            raise EngineError(f"{self.runner.sc.path}:{part.line}: error: part {part.name!r}: {e}"
                              + ("\n  running:\n    " + "\n    ".join(running) if running else "")) from None
        finally:
            self._in_part = False
            if progress:
                progress.close()

    def end_scenario(self) -> None:
        """The scenario ends: Ctrl-C everything still running, in file order; let
        it print; start nothing more; daemons end last."""
        self.stopping = True
        self.interrupt(list(self.waiting))
        self.drain()
        for *_, gen, _w, _o in self.waiting:
            gen.close()
        self.waiting.clear()
        self._end_detached()

    def signal_owner(self, owner: Owner, apps: list[int]) -> None:
        """A signal reached a process of ``owner`` (run/procs.py): its applications are
        interrupted, and a wait for an instant (``sleep``) ends now."""
        eng = self.engine
        assert eng is not None
        for app_id in apps:
            if not eng.app_finished(app_id):
                eng.stop_app(app_id)
                self.interrupted.add(app_id)
        for key, seq, gen, w, o in self.waiting:
            if o is owner and isinstance(w, WaitUntil):
                self.waiting.remove(seq)
                self._ready(gen, key, None, o)
        self._wake(set(apps))

    def pending(self, owner: Owner) -> Any:
        """What ``owner``'s job waits for now (None: it is ready to run)."""
        return next((w for *_, w, o in self.waiting if o is owner), None)

    def was_interrupted(self, app_ids: list[int]) -> bool:
        return any(a in self.interrupted for a in app_ids)

    def ctrl_c_foreground(self, terminal: str, owner: Owner) -> bool:
        """Interrupt what runs in ``terminal``'s foreground (an endless command typed
        in an earlier part); True if anything was."""
        old = [e for e in self.waiting.foreground(terminal) if e[4] is not owner]
        if not old:
            return False
        self.interrupt(old)
        return True

    def _end_detached(self) -> None:
        eng = self.engine
        assert eng is not None
        for app_id, on_end in self.detached:
            if not eng.app_finished(app_id):
                eng.stop_app(app_id)
            on_end()
        self.detached = []

    def _wake(self, finished_apps: set[int]) -> None:
        now = self.engine.now_ns  # type: ignore[union-attr]
        for key, _seq, gen, w, owner in self.waiting.take(finished_apps, now):
            self._ready(gen, key, w.app_id if isinstance(w, WaitApp) else None, owner)

    def interrupt(self, entries: list[_Entry]) -> None:
        """Ctrl-C the applications these jobs wait for, in file order. A job waiting for
        another's application (``wait``: ``WaitOther``) is woken without stopping it."""
        eng = self.engine
        assert eng is not None
        for e in [e for e in entries if isinstance(e[3], WaitOther)]:
            self.waiting.remove(e[1])
            self._ready(e[2], e[0], WaitOther.INTERRUPTED, e[4])
        for e in [e for e in entries if isinstance(e[3], WaitUntil) and e[3].endless]:
            self._ctrl_c_loop(e)
        entries = [e for e in entries if not isinstance(e[3], WaitOther)]
        apps = [e[3].app_id for e in sorted(entries, key=lambda x: (x[0], x[1])) if isinstance(e[3], WaitApp)]
        for app_id in apps:
            if not eng.app_finished(app_id):
                eng.stop_app(app_id)
                self.interrupted.add(app_id)
        self._wake(set(apps))

    def _ctrl_c_loop(self, e: _Entry) -> None:
        """Ctrl-C of an endless loop waiting for an instant (its ``sleep``): SIGINT to its job's
        processes, which ends the loop (``Runner._loop``); a builtin's wait just ends."""
        procs = self.runner.procs
        mine = [p for p in procs.live() if p.owner is e[4]]
        for p in mine:
            procs.deliver(p, SIGINT, self.engine, self)
        if not mine:
            self.waiting.remove(e[1])
            self._ready(e[2], e[0], None, e[4])

    def _timeout(self) -> None:
        lines = {c.index: c for c in self.part.commands}
        pending = [
            f"{lines[key].where()}: {lines[key].text}"
            for key in sorted(
                {
                    key
                    for key, _, _, w, _o in self.waiting
                    if is_finite(w) and key in lines
                }
            )
        ]
        # Ctrl-C everything, let the interrupted commands print what they print then
        # (ping's statistics, ...), and start nothing more.
        self.end_scenario()
        cap = (self.stop_ns - self.start_ns) / NS
        raise PartTimeout(
            f"{self.runner.sc.path}:{self.part.line}: error: "
            f"part {self.part.name!r} did not finish within stop_at = {cap:g} s of simulated time; "
            "still running:\n    "
            + "\n    ".join(pending)
            + "\n  hint: a client whose server never answers waits forever; raise [sim] stop_at if the "
            "experiment is really that long"
        )


class _Progress:
    """Simulated time done, wall time and ETA, on a terminal only (rich)."""

    def __init__(self, sched: Scheduler) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.sched = sched
        self.p = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:.1f}/{task.total:.1f} s simulated"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.p.start()
        self.task = self.p.add_task(f"part {sched.part.name}", total=1.0)

    def update(self) -> None:
        s = self.sched
        now = s.engine.now_ns  # type: ignore[union-attr]
        total = max(s.expected_end_ns, now, s.min_end_ns) - s.start_ns
        self.p.update(self.task, completed=(now - s.start_ns) / NS, total=max(total / NS, 1e-9))

    def close(self) -> None:
        self.p.stop()


def run_scenario(
    scenario: Scenario,
    results_root: Path | None = None,
    progress: bool | None = None,
    echo: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every part of a scenario in simulated time and write its results.

    Args:
        scenario: from :func:`load_scenario`.
        results_root: where ``<slug>/`` goes (default ``./results``); an earlier run's
            folder is kept as ``<slug>.prev`` until this one completes.
        progress: show a progress bar (``None``: only on a terminal).
        echo: receives the result summary printed after each part (``None``: not printed).

    Returns:
        The contents of ``summary.json``: per part its ``results`` (iperf3 goodput, ping
        RTTs, drops and peak backlog per interface, classes, sinks), qdisc statistics,
        flows, warnings and failures (commands that exited non-zero).

    Raises:
        ScenarioError, CommandError: the scenario does not validate (checked before running).
        BufferlabError: a part did not finish within ``[sim] stop_at``.
        KeyboardInterrupt: SIGINT/SIGTERM.

    In every case after the run started, summary.json, the tables and report.html are
    written first, with every finished part's results and the failed part marked.
    """
    r = Runner(scenario, results_root, progress, echo)
    r.check()
    return r.run()


__all__ = ["Runner", "RunStopped", "run_scenario", "WaitApp", "WaitUntil", "NextLine", "RunCtx", "Job",
           "Failure"]


def _job_text(job: list[Item], ops: list[str]) -> str:
    """A background job's command as ``jobs`` shows it (``a && b``)."""
    texts = [sc.text for sc, _ in job]
    return " ".join(t if k == 0 else f"{ops[k - 1] if k - 1 < len(ops) else '&&'} {t}"
                    for k, t in enumerate(texts))
