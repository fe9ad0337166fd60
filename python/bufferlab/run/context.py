"""What a command sees of the run: the contexts it is prepared and run in, what it may wait
for, and the record each program is (:class:`Program`).

A command is prepared against a :class:`PrepareCtx` when the scenario is checked
(its program's ``prepare``, run/programs/) and run, as a generator yielding :data:`Wait`
values, against a :class:`RunCtx` (scheduler.py advances the engine to whatever the jobs
wait for).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..commands.shell import Loop, SimpleCommand, Word
from ..errors import CommandError, Diagnostics
from ..profile import Profile
from ..safefs import ensure_dir, open_write
from ..scenario.load import Command, Part, Scenario
from ..scenario.topology import BuiltTopology
from .engine import Engine
from .observation import Observation

if TYPE_CHECKING:
    from .tc_shadow import TcShadow

NS = 1_000_000_000


@dataclass(frozen=True)
class WaitApp:
    app_id: int
    #: never ends on its own: the part does not wait for it
    endless: bool
    #: expected end (ns) for progress estimates, if known
    expected_end_ns: int | None = None


@dataclass(frozen=True)
class WaitOther(WaitApp):
    """Wait for an application another job started (bash's ``wait``): a Ctrl-C of the
    waiting job wakes it with :attr:`INTERRUPTED` and leaves the application running."""

    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class WaitUntil:
    t_ns: int
    #: a wait of a loop that never ends (``while true; do ...; sleep 1; done``): the part does
    #: not wait for it, and Ctrl-C ends the loop
    endless: bool = False


@dataclass(frozen=True)
class NextLine:
    index: int


Wait = WaitApp | WaitOther | WaitUntil | NextLine
JobGen = Generator[Wait, Any, int]


class Io:
    """Where one command's output goes: its redirect file or the terminal log.

    As in bash, the redirect file is opened (created, and truncated for ``>``)
    before the command runs, so ``cmd > f`` empties ``f`` even if ``cmd`` prints
    nothing; later writes append. The last text written to each stream is kept:
    a command that fails is listed at the end of the run with its own message.
    """

    def __init__(self, term: Terminal, redirect_path: Path | None) -> None:
        self.term = term
        self.path = redirect_path
        self.last_out = ""
        self.last_err = ""
        #: what of a tool's output reaches the terminal when a signal it does not catch ended
        #: it (run/procs.py ``supervise``: the lines it had printed, without its summary)
        self.cut: Callable[[str], str] | None = None

    def out(self, text: str) -> None:
        if self.cut is not None:
            text = self.cut(text)
        if text:
            self.last_out = text
        if self.path is None:
            self.term.log(text)
            return
        with open_write(self.path, "a") as f:
            f.write(text)

    def err(self, text: str) -> None:
        if text:
            self.last_err = text
        self.term.log(text)

    def message(self) -> str:
        """What the tool said when it failed: its last error text, else iperf3 -J's
        ``"error"``, else the last line it printed."""
        if self.last_err.strip():
            return self.last_err.strip().splitlines()[-1]
        text = self.last_out.strip()
        if text.startswith("{"):
            try:
                doc = json.loads(text)
            except ValueError:
                doc = None
            if isinstance(doc, dict) and doc.get("error"):  # iperf3 -J: "error - unable to ..."
                return f"iperf3: {doc['error']}"
        return text.splitlines()[-1] if text else ""


@dataclass
class Terminal:
    name: str
    #: node folder of the current part (results/<scenario>/<part>/<terminal>)
    home: Path
    cwd: Path
    transcript: list[str] = field(default_factory=list)

    def log(self, text: str) -> None:
        if text:
            self.transcript.append(text if text.endswith("\n") else text + "\n")

    def flush(self) -> None:
        if self.transcript:
            ensure_dir(self.home)
            with open_write(self.home / "terminal.log") as f:
                f.write("".join(self.transcript))


def inside_home(term: Terminal, path: Path) -> Path | None:
    """``path`` resolved, or None if it leaves the terminal's node folder (its home).

    Its last component is not followed: a symlink there is the place of the file the
    command writes, and is replaced by it (safefs.py), wherever it points."""
    p = path.resolve() if path.name in ("", ".", "..") else path.parent.resolve() / path.name
    return _in_home(term, p)


def resolved_in_home(term: Terminal, path: Path) -> Path | None:
    """``path`` resolved, its last component too (a folder to enter, a file to read), or
    None if it leaves the terminal's node folder."""
    return _in_home(term, path.resolve())


def _in_home(term: Terminal, resolved: Path) -> Path | None:
    home = term.home.resolve()
    return resolved if resolved == home or home in resolved.parents else None


Gen = Generator[Any, Any, int]


@dataclass(frozen=True)
class Prepared:
    """A command checked against its terminal, ready to run: ``run(rt)`` performs it in
    simulated time (a generator yielding what it waits for) and returns its exit status."""

    run: Callable[[RunCtx], Gen]
    #: it never ends on its own (``ping`` without ``-c``, ``iperf3 -s``): docs/internals.md
    #: "How lines run"
    endless: bool = False
    #: the program that runs it (set by run/programs ``prepare_command``)
    program: Program | None = None

    @classmethod
    def at_once(cls, fn: Callable[[RunCtx], int]) -> Prepared:
        """A command that does what it does and returns, with no simulated time passing."""

        def run(rt: RunCtx) -> Gen:
            return fn(rt)
            yield  # pragma: no cover - makes this a generator

        return cls(run)


@dataclass(frozen=True)
class Program:
    """One program a scenario line may run, all it is in one record (as iproute2 has one
    ``struct qdisc_util`` per tc kind): each module of run/programs/ lists its own, and
    run/programs/__init__.py registers the modules (docs/internals.md "How to add a command")."""

    name: str
    #: parse the line's words at check time, in the terminal's context (errors with their column)
    prepare: Callable[[PrepareCtx, list[Word]], Prepared]
    #: what it does, in a line (the command reference lists every program with it)
    summary: str
    #: a bash builtin: it runs in the shell itself, with no process and no PID
    builtin: bool = False
    #: its words may hold ``$!``, the last background job's PID (expanded when it runs)
    expands_last_pid: bool = False
    #: it only changes the host's settings and returns: typed while a command runs in the
    #: terminal's foreground, it does not Ctrl-C it (a second shell of the host, Lab 7)
    configures: bool = False
    #: the signals it catches to end as on Ctrl-C, printing what it prints then; None:
    #: SIGINT and SIGTERM if it started an application, else none. Any other signal ends it
    #: with nothing more printed (run/procs.py)
    catches: frozenset[int] | None = None
    #: signals it handles and runs on (ping's SIGQUIT status line, tcpdump's SIGUSR1 counts)
    continues: frozenset[int] = frozenset()
    #: it prints as it goes on a terminal: what it had printed when a signal it does not
    #: catch ended it, out of what it prints when interrupted (None: it prints at its end)
    printed_before: Callable[[str], str] | None = None


@dataclass
class PrepareCtx:
    terminal: str
    topo: BuiltTopology
    profile: Profile
    diag: Diagnostics
    #: the scenario file's folder (files a command names, e.g. a flows CDF, are relative to it)
    base_dir: Path | None = None
    #: the qdisc trees as the lines checked so far leave them (``check`` only; tc_shadow.py)
    shadow: TcShadow | None = None

    @property
    def node(self) -> str | None:
        return None if self.terminal == "admin" else self.terminal

    def require_node(self, word: Word, what: str) -> str:
        if self.node is None:
            raise CommandError(
                f"{what} runs on a host: the admin terminal is the machine's root namespace",
                col=word.col,
                suggestion=f'type it in a host\'s terminal, e.g. "h1: {what} ..."',
            )
        if self.topo.node_kinds[self.node] == "switch":
            raise CommandError(
                f"{self.node} is a switch and runs no programs",
                col=word.col,
                suggestion="use a host's terminal",
            )
        return self.node

    def engine_dev(self, dev: str, col: int | None) -> str:
        name = self.topo.resolve_dev(self.terminal, dev)
        if name is not None:
            return name
        owner = self.topo.owner_of(dev)
        if owner is not None and owner != self.terminal:
            where = "the admin terminal" if self.topo.node_kinds[owner] == "switch" else f"{owner}'s terminal"
            raise CommandError(
                f'Cannot find device "{dev}"',
                col=col,
                suggestion=f"{dev} belongs to {owner}: run the line in {where}",
            )
        visible = [
            i.name
            for i in self.topo.interfaces
            if (self.terminal == "admin" and self.topo.node_kinds[i.node] == "switch")
            or i.node == self.terminal
        ]
        close = difflib.get_close_matches(dev, visible, n=1)
        raise CommandError(
            f'Cannot find device "{dev}"',
            col=col,
            expected="one of " + ", ".join(visible) if visible else "an interface of this node",
            suggestion=f"did you mean {close[0]}?" if close else None,
        )

    def resolve_host(self, name: str) -> str | None:
        """Mininet host name → its address (for did-you-mean hints)."""
        return self.topo.host_ip(name) if name in self.topo.node_kinds else None



#: the commands that always succeed: a ``while`` whose condition holds only these never ends
_ALWAYS_TRUE = frozenset({"true", ":"})


@dataclass(frozen=True)
class PreparedLoop:
    """A ``while``/``until`` loop (commands/shell.py ``Loop``) checked against its terminal:
    its condition and body as prepared chains, each its items and the operators between them."""

    until: bool
    condition: list[Chain]
    body: list[Chain]

    @property
    def endless(self) -> bool:
        """It never ends on its own: ``while true`` (or ``:``), or a condition whose first
        command never ends (as :meth:`PreparedLine.job_endless` says of a chain)."""
        cond = [item for items, _ in self.condition for item in items]
        always = not self.until and all(isinstance(sc, SimpleCommand) and sc.name in _ALWAYS_TRUE
                                        for sc, _ in cond)
        return always or cond[0][1].endless


#: one element of a chain: a simple command or a loop, with what it was prepared into
Item = tuple[SimpleCommand, Prepared] | tuple[Loop, PreparedLoop]
#: an ``&&``/``||`` chain: its items and the operator before each item after the first
Chain = tuple[list[Item], list[str]]


def simple_items(chains: list[Chain]) -> Iterator[tuple[SimpleCommand, Prepared]]:
    """Every simple command of ``chains`` with its preparation, those inside loops included."""
    for items, _ in chains:
        for sc, p in items:
            if isinstance(p, PreparedLoop):
                yield from simple_items(p.condition + p.body)
            else:
                assert isinstance(sc, SimpleCommand)
                yield sc, p


@dataclass
class PreparedLine:
    command: Command
    jobs: list[list[Item]]
    backgrounds: list[bool]
    #: per job, the operator before each command after the first ("&&" or "||")
    ops: list[list[str]]

    def job_endless(self, k: int) -> bool:
        """Job ``k`` never ends on its own: its first command does not (``ping`` without
        ``-c``, ``iperf3 -s``, ...: ``Prepared.endless``)."""
        return any(first.endless for _, first in self.jobs[k][:1])

    @property
    def endless(self) -> bool:
        """The line's foreground never ends on its own."""
        fg = [k for k, bg in enumerate(self.backgrounds) if not bg]
        return bool(fg) and all(self.job_endless(k) for k in fg)

    def configures_only(self) -> bool:
        """Every command of the line only changes the host's settings (``Program.configures``);
        a loop does not."""
        return all(isinstance(p, Prepared) and p.program is not None and p.program.configures
                   for job in self.jobs for _, p in job)

    def simple_commands(self) -> Iterator[tuple[SimpleCommand, Prepared]]:
        """Every simple command of the line, those inside its loops included, in the order typed."""
        return simple_items(list(zip(self.jobs, self.ops, strict=True)))


@dataclass
class PartSummary:
    """A part's result summary as the applications that ended in it fill it
    (run/part_results.py): rows per section and warnings."""

    #: section -> rows; ``iperf3`` and ``ping`` are in every part's summary, even empty
    sections: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {"iperf3": [], "ping": []})
    warnings: list[str] = field(default_factory=list)

    def add(self, section: str, row: dict[str, Any]) -> None:
        self.sections.setdefault(section, []).append(row)


#: what an application adds to the summary of the part it ended in, from its result
Summarise = Callable[["AppRecord", dict[str, Any], PartSummary], None]


@dataclass
class AppRecord:
    """What the summary says about an application the scenario started."""

    app_id: int
    part: str
    terminal: str
    #: the line it was typed on: one object for all the applications of its jobs
    line: Command
    #: the column, in the line, of the simple command that started it
    col: int | None
    #: simulated start time, and where its standard output went (relative to the
    #: scenario's results folder): what the tables and the report need to place it
    start_ns: int = 0
    output: str = ""
    #: the engine spec it was started with
    spec: dict[str, Any] = field(default_factory=dict)
    #: the simple command that started it (``iperf3 -c ...`` out of ``a & b & c``)
    simple: str = ""
    #: its rows in the part's result summary (None: it adds none)
    summarise: Summarise | None = None
    #: the interface whose queue it has traced in every part while it runs (plot_q.sh)
    traces: str | None = None
    #: its job's text (``a && b``) when the line holds several jobs (``a & b & c``), else None
    job: str | None = None

    @property
    def command(self) -> str:
        """What summary.json's flow rows show: the line, or on a line of several jobs the
        job that started it (a line of N jobs would otherwise be copied N times)."""
        return self.line.text if self.job is None else self.job

    @property
    def where(self) -> str:
        return self.line.where(self.col)


@dataclass
class PartState:
    """What the commands typed in one part report into. Kept after the part ends:
    a command may outlive its part (it persists until interrupted)."""

    part: Part
    start_ns: int
    queue_files: list[str] = field(default_factory=list)
    #: UDP iperf3 datagrams per DS byte: tos -> [sent, received]
    classes: dict[int, list[int]] = field(default_factory=dict)
    #: the part's `sink` commands: {"app", "host", "port", "proto"} in start order
    sinks: list[dict[str, Any]] = field(default_factory=list)
    #: the FCT record files of the part's `flows -c` commands (relative to the results folder)
    fct_files: list[str] = field(default_factory=list)

    def count_class(self, tos: int, sent: int, received: int) -> None:
        c = self.classes.setdefault(tos, [0, 0])
        c[0] += sent
        c[1] += received

    def sink_table(self, eng: Engine) -> list[dict[str, Any]]:
        """What each `sink` of the part received; goodput = floor(bytes / the sink's lifetime)."""
        rows = []
        for s in self.sinks:
            r = eng.app_result(s["app"])
            life = int(r.get("end_ns", 0)) - int(r.get("start_ns", 0))
            nbytes = int(r.get("bytes", 0))
            rows.append({"host": s["host"], "port": s["port"], "proto": s["proto"], "bytes": nbytes,
                         "packets": int(r.get("packets", 0)),
                         "goodput_Bps": nbytes * NS // life if life > 0 else 0})
        return rows

    def class_table(self) -> list[dict[str, Any]]:
        """Per-DS-byte delivery of the part's UDP iperf3 tests (the CPM report's table)."""
        rows = []
        for tos, (sent, received) in sorted(self.classes.items()):
            dropped = sent - received
            rows.append({
                "tos": f"0x{tos:02x}", "dscp": tos >> 2, "sent": sent, "received": received,
                "dropped": dropped, "dropped_pct": round(100 * dropped / sent, 3) if sent else 0.0,
            })
        return rows


class RunnerView(Protocol):
    """What a running command may use of the run (``Runner``, scheduler.py)."""

    sc: Scenario
    root: Path
    engine: Engine | None
    apps: list[AppRecord]
    #: per node: the sysctl values written so far
    sysctl: dict[str, dict[str, Any]]
    #: listening TCP applications: app id -> (host, -C of the command)
    tcp_listeners: dict[int, tuple[str, str | None]]
    observation: Observation
    #: the machine's processes and the terminals' jobs (run/procs.py ``ProcessTable``)
    procs: Any


class DetachedJobs(Protocol):
    """The scheduler's applications that outlive their command (``Scheduler``, scheduler.py),
    and what signals (run/procs.py) need of it."""

    #: (application id, what to run when the scenario ends)
    detached: list[tuple[int, Callable[[], None]]]

    def signal_owner(self, owner: Any, apps: list[int]) -> None: ...

    def pending(self, owner: Any) -> Any: ...


@dataclass
class RunCtx:
    """What a running command may use."""

    runner: RunnerView
    scheduler: DetachedJobs
    #: the part the command was typed in (``rt.sched.sinks``, ``rt.sched.count_class``)
    sched: PartState
    term: Terminal
    command: Command
    io: Io
    #: the simple command running (one of the line's ``&``/``&&`` parts)
    simple: SimpleCommand | None = None
    #: its job's text when the line holds several jobs (:attr:`AppRecord.job`)
    job: str | None = None
    #: the applications this command started
    app_ids: list[int] = field(default_factory=list)
    #: the process running the command (run/procs.py ``Process``; None for a shell builtin)
    process: Any = None
    #: Ctrl-C ended the command (a builtin that waits without an application of its own:
    #: ``wait``); its status 130 is then no failure
    interrupted: bool = False

    @property
    def engine(self) -> Engine:
        assert self.runner.engine is not None
        return self.runner.engine

    @property
    def now_ns(self) -> int:
        return self.engine.now_ns

    def start_app(self, node: str, spec: dict[str, Any], summarise: Summarise | None = None,
                  traces: str | None = None) -> int:
        """Start an application on ``node``; ``summarise`` and ``traces``: see :class:`AppRecord`."""
        app_id = self.engine.start_app(node, spec)
        self.app_ids.append(app_id)
        while len(self.runner.apps) <= app_id:
            self.runner.apps.append(None)  # type: ignore[arg-type]
        out = self.io.path if self.io.path is not None else self.term.home / "terminal.log"
        col = self.simple.words[0].col if self.simple is not None and self.simple.words else None
        self.runner.apps[app_id] = AppRecord(
            app_id, self.sched.part.name, self.term.name, self.command, col, self.now_ns,
            out.resolve().relative_to(self.runner.root.resolve()).as_posix(), spec,
            self.simple.text if self.simple is not None else self.command.text, summarise, traces,
            self.job,
        )
        return app_id

    def ctrl_c(self) -> int:
        """The command ends as Ctrl-C ends a shell builtin: status 130, not a failure."""
        self.interrupted = True
        return 130

    def detach(self, app_id: int, on_end: Callable[[], None]) -> None:
        """An application that outlives its command (iperf3 -D): it leaves the
        terminal, so only the end of the scenario interrupts it."""
        self.scheduler.detached.append((app_id, on_end))

    def note_listener(self, app_id: int, host: str, congestion: str | None = None) -> None:
        self.runner.tcp_listeners[app_id] = (host, congestion)

    def note_sink(self, app_id: int, host: str, port: int, proto: str) -> None:
        """A `sink` started: listed in the part's summary and found by ns3-goodput."""
        self.sched.sinks.append({"app": app_id, "host": host, "port": port, "proto": proto})

    def note_queue_file(self, path: Path) -> None:
        self.sched.queue_files.append(str(path.relative_to(self.runner.root)))
