"""Run a scenario's parts with the semantics of DESIGN.md "How lines run".

Each terminal (a node's, or ``admin``) runs its lines in order; terminals run
side by side in simulated time; at one instant, lines start in file order.
A line is a shell line (``&``, ``&&``, ``;``, ``>``, ``>>``): each job is a
generator that yields what it waits for — an application to finish, an
instant to arrive, or its turn to start the next line — and the scheduler
below advances the engine to the next thing anyone waits for.

A part ends when every terminal has run all its lines and every finite
command has finished; commands that never end on their own (``iperf3 -s``,
``ping`` without ``-c``, ``plot_q.sh``, ``sink``) are then interrupted as by
Ctrl-C, and print what the real tools print then. A part's optional
``duration`` keeps it running at least that long before the interrupt.
"""

from __future__ import annotations

import heapq
import json
import sys
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .commands.shell import Job, SimpleCommand, parse_shell
from .engine import Engine
from .errors import BufferlabError, CommandError, Diagnostics, ScenarioError
from .observation import Observation
from .programs import PrepareCtx, Prepared, prepare_command
from .scenario.load import Command, Part, Scenario
from .scenario.topology import BuiltTopology, build_topology

NS = 1_000_000_000
#: default hard cap on one part's simulated length (a part that would never end is an error)
DEFAULT_STOP_AT_S = 3600.0


@dataclass(frozen=True)
class WaitApp:
    app_id: int
    #: never ends on its own: the part does not wait for it
    endless: bool
    #: expected end (ns) for progress estimates, if known
    expected_end_ns: int | None = None


@dataclass(frozen=True)
class WaitUntil:
    t_ns: int


@dataclass(frozen=True)
class NextLine:
    index: int


Wait = WaitApp | WaitUntil | NextLine
JobGen = Generator[Wait, Any, int]


class Io:
    """Where one command's output goes: its redirect file or the terminal log.

    As in bash, the redirect file is opened (created, and truncated for ``>``)
    before the command runs, so ``cmd > f`` empties ``f`` even if ``cmd`` prints
    nothing; later writes append.
    """

    def __init__(self, term: Terminal, redirect_path: Path | None) -> None:
        self.term = term
        self.path = redirect_path

    def out(self, text: str) -> None:
        if self.path is None:
            self.term.log(text)
            return
        with self.path.open("a", encoding="utf-8") as f:
            f.write(text)

    def err(self, text: str) -> None:
        self.term.log(text)


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
            self.home.mkdir(parents=True, exist_ok=True)
            (self.home / "terminal.log").write_text("".join(self.transcript), encoding="utf-8")


def inside_home(term: Terminal, path: Path) -> Path | None:
    """``path`` resolved, or None if it leaves the terminal's node folder (its home)."""
    p = path.resolve()
    home = term.home.resolve()
    return p if p == home or home in p.parents else None


@dataclass
class PreparedLine:
    command: Command
    jobs: list[list[tuple[SimpleCommand, Prepared]]]
    backgrounds: list[bool]


@dataclass
class AppRecord:
    """What the summary says about an application the scenario started."""

    app_id: int
    part: str
    terminal: str
    command: str
    where: str
    #: simulated start time, and where its standard output went (relative to the
    #: scenario's results folder): what the tables and the report need to place it
    start_ns: int = 0
    output: str = ""


class PartTimeout(BufferlabError):
    pass


class Runner:
    def __init__(
        self,
        scenario: Scenario,
        results_root: Path | None = None,
        progress: bool | None = None,
        echo: Callable[[str], None] | None = None,
    ) -> None:
        self.sc = scenario
        self.topo: BuiltTopology = build_topology(scenario)
        self.root = (results_root or Path("results")) / scenario.slug
        self.progress = sys.stderr.isatty() if progress is None else progress
        self.echo = echo or (lambda s: None)
        self.warnings: list[str] = []
        self.sysctl: dict[str, dict[str, Any]] = {}
        self.apps: list[AppRecord] = []
        self.lines: dict[str, list[PreparedLine]] = {}
        self.engine: Engine | None = None
        self.part_reports: list[dict[str, Any]] = []
        self.wall_s = 0.0
        self._netem_limit_seen: dict[str, int] = {}
        #: [capture], [trace] and plot_q.sh's queue traces (observation.py)
        self.observation = Observation(self)
        #: drop counters at the end of the previous part (interface -> reason -> [packets, bytes])
        self._drops_seen: dict[str, dict[str, list[int]]] = {}

    # ------------------------------------------------------------ checking

    def check(self) -> None:
        """Parse every line of every part; raise the first error with its position."""
        cap = self.sc.profile.stop_at or DEFAULT_STOP_AT_S
        for part in self.sc.parts:
            if part.duration is not None and part.duration > cap:
                raise ScenarioError(
                    f"part {part.name!r}: duration = {part.duration:g} s is longer than stop_at = {cap:g} s",
                    file=str(self.sc.path),
                    line=part.line,
                    expected="a duration no longer than [sim] stop_at",
                    suggestion=f'raise [sim] stop_at, e.g. stop_at = "{part.duration:g}s"',
                )
            self.lines[part.name] = [self._prepare_line(c) for c in part.commands]
        self.observation.check()

    def _prepare_line(self, c: Command) -> PreparedLine:
        diag = Diagnostics()
        pc = PrepareCtx(terminal=c.terminal, topo=self.topo, profile=self.sc.profile, diag=diag)
        try:
            jobs = parse_shell(c.text)
            prepared = [[(sc, prepare_command(pc, sc)) for sc in job.commands] for job in jobs]
        except CommandError as e:
            raise e.locate(c.where(e.col), c.text) from None
        for w in diag.warnings:
            w.where = c.where(w.col)
            self.warnings.append(str(w))
        return PreparedLine(c, prepared, [job.background for job in jobs])

    # ------------------------------------------------------------ running

    def run(self) -> dict[str, Any]:
        if not self.lines:
            self.check()
        for w in self.warnings:
            self.echo(w)
        self.engine = Engine(self.topo.engine_config)
        self.root.mkdir(parents=True, exist_ok=True)
        self.observation.start_run()
        wall0 = time.perf_counter()
        for node, dev, args in self.topo.tclink_commands:
            self._apply_tclink(node, dev, args)
        error = None
        try:
            for part in self.sc.parts:
                self._run_part(part)
        except PartTimeout as e:
            error = str(e)
        self.observation.end_run()
        summary = self._write_summary(time.perf_counter() - wall0, error)
        if error:
            raise PartTimeout(error)
        return summary

    def _apply_tclink(self, node: str, dev: str, args: str) -> None:
        from .commands.shell import parse_shell as _ps
        from .programs import tc_request_for_engine

        words = _ps(f"tc qdisc add dev {dev} {args}")[0].commands[0].words
        assert self.engine is not None
        self.engine.tc(tc_request_for_engine(words, self.sc.profile, dev))

    def _run_part(self, part: Part) -> None:
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
                home.mkdir(parents=True, exist_ok=True)
                terminals[t] = Terminal(t, home, home)
            lines_by_term.setdefault(t, []).append(pl)
        sched = _Scheduler(self, part, start)
        self.observation.start_part(part_dir)
        for t, pls in lines_by_term.items():
            sched.spawn(self._terminal_proc(sched, terminals[t], pls), pls[0].command.index)
        try:
            sched.run()
        finally:  # what the terminals printed helps most when the part did not finish
            for term in terminals.values():
                term.flush()
        self.part_reports.append(
            {
                "name": part.name,
                "start_ns": start,
                "end_ns": eng.now_ns,
                "queues": sched.queue_files,
                **self.observation.end_part(),
                "classes": sched.class_table(),
                "sinks": sched.sink_table(),
                **self._part_counters(),
            }
        )
        self._print_classes(part, sched.class_table())
        self._warn_netem_limit(part)

    def _part_counters(self) -> dict[str, Any]:
        """``drops``: by interface and reason during this part (the engine's counters are
        cumulative); ``qdiscs``: each configured interface's qdiscs as the part left them
        (options and cumulative stats), for per-part rates and ``tc -s`` in the report."""
        assert self.engine is not None
        out: dict[str, dict[str, dict[str, int]]] = {}
        qdiscs: dict[str, Any] = {}
        for dev, info in sorted(self.engine.summary()["interfaces"].items()):
            if any(q["kind"] != "noqueue" for q in info["qdiscs"]):
                qdiscs[dev] = info["qdiscs"]
            seen = self._drops_seen.setdefault(dev, {})
            for reason, c in sorted(info["drops"].items()):
                p0, b0 = seen.get(reason, [0, 0])
                if c["packets"] > p0:
                    out.setdefault(dev, {})[reason] = {"packets": c["packets"] - p0, "bytes": c["bytes"] - b0}
                seen[reason] = [c["packets"], c["bytes"]]
        return {"drops": out, "qdiscs": qdiscs}

    def _print_classes(self, part: Part, rows: list[dict[str, Any]]) -> None:
        if len(rows) < 2:
            return
        self.echo(f"part {part.name}: UDP iperf3 datagrams per DS byte")
        self.echo("  DS byte      sent  received   dropped  dropped %")
        for r in rows:
            cells = f"{r['sent']:>9} {r['received']:>9} {r['dropped']:>9} {r['dropped_pct']:>10.2f}"
            self.echo(f"  {r['tos']:>7} {cells}")

    def _warn_netem_limit(self, part: Part) -> None:
        """qdiscs.md P9: netem's `limit` counts packets in its delay line. With
        MTU-sized packets (no GSO) a fast, long path overflows the default 1000
        where Mininet, carrying 64 KB GSO super-packets, did not."""
        assert self.engine is not None
        for dev, info in self.engine.summary()["interfaces"].items():
            total = info["drops"].get("netem_limit", {}).get("packets", 0)
            new = total - self._netem_limit_seen.get(dev, 0)
            self._netem_limit_seen[dev] = total
            if new > 0:
                w = (
                    f"warning: part {part.name!r}: netem on {dev} dropped {new} packets at its limit: "
                    "netem's limit counts packets in its delay line, and bufferlab sends MTU-sized "
                    "packets where Mininet's veths carry 64 KB GSO super-packets (qdiscs.md P9); "
                    "to reproduce a handout's figures raise the limit, e.g. netem delay 20ms limit 100000"
                )
                self.warnings.append(w)
                self.echo(w)

    def _terminal_proc(self, sched: _Scheduler, term: Terminal, lines: list[PreparedLine]) -> JobGen:
        status = 0
        for pl in lines:
            yield NextLine(pl.command.index)
            if sched.stopping:
                break
            term.log(f"$ {pl.command.text}")
            for job, bg in zip(pl.jobs, pl.backgrounds, strict=True):
                if sched.stopping:
                    break
                if bg:
                    sched.spawn(self._job(sched, term, pl, job), pl.command.index)
                    status = 0
                else:
                    status = yield from self._job(sched, term, pl, job)
        return status

    def _job(
        self, sched: _Scheduler, term: Terminal, pl: PreparedLine, job: list[tuple[SimpleCommand, Prepared]]
    ) -> JobGen:
        status = 0
        for k, (sc, prepared) in enumerate(job):
            if k > 0 and (status != 0 or sched.stopping):
                break  # `a && b`: b runs only if a succeeded
            io = self._io_for(term, sc)
            if io is None:
                status = 1  # bash: the redirect failed, the command does not run
                continue
            rt = RunCtx(self, sched, term, pl.command, io)
            status = yield from prepared(rt)
        return status

    def _io_for(self, term: Terminal, sc: SimpleCommand) -> Io | None:
        if sc.redirect is None:
            return Io(term, None)
        target = sc.redirect.target.text
        path = inside_home(term, term.cwd / target)
        if path is None:
            term.log(f"bash: {target}: Permission denied (outside the node's results folder)")
            return None
        try:
            with path.open("a" if sc.redirect.op == ">>" else "w", encoding="utf-8"):
                pass
        except OSError as e:
            term.log(f"bash: {target}: {e.strerror}")
            return None
        return Io(term, path)

    # ------------------------------------------------------------ summary

    def _write_summary(self, wall_s: float, error: str | None) -> dict[str, Any]:
        assert self.engine is not None
        eng = self.engine.summary()
        for f in eng["flows"]:
            rec = self.apps[f["app"]] if f["app"] < len(self.apps) else None
            if rec is not None:
                f.update(part=rec.part, terminal=rec.terminal, command=rec.command,
                         start_ns=rec.start_ns, output=rec.output)
        summary = {
            "scenario": self.sc.name,
            "file": str(self.sc.path),
            "seed": self.sc.seed,
            "profile": self.sc.profile.name,
            "simulated_s": self.engine.now_ns / NS,
            "events": self.engine.events_processed(),
            "parts": self.part_reports,
            "packets": eng["packets"],
            "interfaces": eng["interfaces"],
            "nodes": eng["nodes"],
            "flows": eng["flows"],
            "warnings": self.warnings,
            "error": error,
            "captures": self.observation.run_capture_report,
            # for the HTML report: the topology as built, and the scenario as written
            "topology": {
                "nodes": self.topo.engine_config["nodes"],
                "links": self.topo.engine_config["links"],
                "tclink": [list(c) for c in self.topo.tclink_commands],
            },
            "scenario_toml": self.sc.path.read_text(encoding="utf-8") if self.sc.path.is_file() else None,
        }
        (self.root / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
        # Wall-clock figures differ between runs, so they stay out of summary.json
        # (which is bit-identical for the same scenario and seed).
        self.wall_s = wall_s
        return summary


@dataclass
class RunCtx:
    """What a running command may use."""

    runner: Runner
    sched: _Scheduler
    term: Terminal
    command: Command
    io: Io

    @property
    def engine(self) -> Engine:
        assert self.runner.engine is not None
        return self.runner.engine

    @property
    def now_ns(self) -> int:
        return self.engine.now_ns

    def start_app(self, node: str, spec: dict[str, Any]) -> int:
        app_id = self.engine.start_app(node, spec)
        while len(self.runner.apps) <= app_id:
            self.runner.apps.append(None)  # type: ignore[arg-type]
        out = self.io.path if self.io.path is not None else self.term.home / "terminal.log"
        self.runner.apps[app_id] = AppRecord(
            app_id, self.sched.part.name, self.term.name, self.command.text, self.command.where(),
            self.now_ns, out.resolve().relative_to(self.runner.root.resolve()).as_posix(),
        )
        return app_id

    def detach(self, app_id: int, on_end: Callable[[], None]) -> None:
        """An application that outlives its command (iperf3 -D): interrupted at part end."""
        self.sched.detached.append((app_id, on_end))

    def note_sink(self, app_id: int, host: str, port: int, proto: str) -> None:
        """A `sink` started: listed in the part's summary and found by ns3-goodput."""
        self.sched.sinks.append({"app": app_id, "host": host, "port": port, "proto": proto})

    def note_queue_file(self, path: Path) -> None:
        self.sched.queue_files.append(str(path.relative_to(self.runner.root)))


class _Scheduler:
    """Advances the engine to whatever the part's jobs wait for next."""

    def __init__(self, runner: Runner, part: Part, start_ns: int) -> None:
        self.runner = runner
        self.part = part
        self.start_ns = start_ns
        self.engine = runner.engine
        assert self.engine is not None
        stop_at = runner.sc.profile.stop_at or DEFAULT_STOP_AT_S
        self.stop_ns = start_ns + int(stop_at * NS)
        self.min_end_ns = start_ns + int((part.duration or 0) * NS)
        #: the part's `stop` (ns-3's Simulator::Stop): applications still running then are interrupted
        self.hard_stop_ns = start_ns + round(part.stop * NS) if part.stop is not None else None
        self.ready: list[tuple[int, int, JobGen, Any]] = []
        self.waiting: list[tuple[int, int, JobGen, Wait]] = []
        self.seq = 0
        self.detached: list[tuple[int, Callable[[], None]]] = []
        self.queue_files: list[str] = []
        #: UDP iperf3 datagrams per DS byte: tos -> [sent, received]
        self.classes: dict[int, list[int]] = {}
        #: the part's `sink` commands: {"app", "host", "port", "proto"} in start order
        self.sinks: list[dict[str, Any]] = []
        self.expected_end_ns = start_ns
        #: the part hit stop_at: interrupted commands print their output, nothing new starts
        self.stopping = False

    def count_class(self, tos: int, sent: int, received: int) -> None:
        c = self.classes.setdefault(tos, [0, 0])
        c[0] += sent
        c[1] += received

    def sink_table(self) -> list[dict[str, Any]]:
        """What each `sink` of the part received; goodput = floor(bytes / the sink's lifetime)."""
        eng = self.engine
        assert eng is not None
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

    def spawn(self, gen: JobGen, key: int) -> None:
        self._ready(gen, key, None)

    def _ready(self, gen: JobGen, key: int, value: Any) -> None:
        heapq.heappush(self.ready, (key, self.seq, gen, value))
        self.seq += 1

    def _step(self, key: int, gen: JobGen, value: Any) -> None:
        try:
            w = gen.send(value)
        except StopIteration:
            return
        if isinstance(w, NextLine):
            self._ready(gen, w.index, None)
        else:
            if isinstance(w, WaitApp) and w.expected_end_ns:
                self.expected_end_ns = max(self.expected_end_ns, w.expected_end_ns)
            if isinstance(w, WaitUntil):
                self.expected_end_ns = max(self.expected_end_ns, w.t_ns)
            self.waiting.append((key, self.seq, gen, w))
            self.seq += 1

    def run(self) -> None:
        eng = self.engine
        assert eng is not None
        progress = _Progress(self) if self.runner.progress else None
        try:
            while True:
                while self.ready:
                    key, _, gen, value = heapq.heappop(self.ready)
                    self._step(key, gen, value)
                    # What this line started happens before the next line starts: at one
                    # instant lines run in file order, so a client typed before its server
                    # is refused even over a zero-delay veth.
                    self._wake(set(eng.run(eng.now_ns)))
                if not self.waiting:
                    break
                now = eng.now_ns
                if self.hard_stop_ns is not None and now >= self.hard_stop_ns:
                    self.hard_stop_ns = None
                    self._interrupt_running()
                    continue
                finite = [w for *_, w in self.waiting if not (isinstance(w, WaitApp) and w.endless)]
                if not finite and now >= self.min_end_ns:
                    self._interrupt_endless()
                    continue
                if now >= self.stop_ns:
                    self._timeout()
                target = min(
                    [w.t_ns for w in finite if isinstance(w, WaitUntil)]
                    + ([self.min_end_ns] if now < self.min_end_ns else [])
                    + ([self.hard_stop_ns] if self.hard_stop_ns is not None else [])
                    + [self.stop_ns]
                )
                # Run in slices so the progress display and Ctrl-C stay responsive.
                slice_end = min(target, now + NS) if progress else target
                finished = eng.run(slice_end)
                if progress:
                    progress.update()
                self._wake(set(finished))
        finally:
            if progress:
                progress.close()
        self._end_detached()

    def _end_detached(self) -> None:
        eng = self.engine
        assert eng is not None
        for app_id, on_end in self.detached:
            if not eng.app_finished(app_id):
                eng.stop_app(app_id)
            on_end()

    def _wake(self, finished_apps: set[int]) -> None:
        now = self.engine.now_ns  # type: ignore[union-attr]
        still = []
        for key, seq, gen, w in self.waiting:
            if isinstance(w, WaitApp) and w.app_id in finished_apps:
                self._ready(gen, key, w.app_id)
            elif isinstance(w, WaitUntil) and w.t_ns <= now:
                self._ready(gen, key, None)
            else:
                still.append((key, seq, gen, w))
        self.waiting = still

    def _interrupt_endless(self) -> None:
        eng = self.engine
        assert eng is not None
        # Ctrl-C in file order; every remaining wait is an endless application here
        for *_, w in sorted(self.waiting, key=lambda x: (x[0], x[1])):
            assert isinstance(w, WaitApp)
            eng.stop_app(w.app_id)
        self._wake({w.app_id for *_, w in self.waiting if isinstance(w, WaitApp)})

    def _interrupt_running(self) -> None:
        """The part's `stop`: Ctrl-C every application still running, in file order."""
        eng = self.engine
        assert eng is not None
        waits = sorted(self.waiting, key=lambda x: (x[0], x[1]))
        apps = [w.app_id for *_, w in waits if isinstance(w, WaitApp)]
        for app_id in apps:
            if not eng.app_finished(app_id):
                eng.stop_app(app_id)
        self._wake(set(apps))

    def _timeout(self) -> None:
        eng = self.engine
        assert eng is not None
        lines = {c.index: c for c in self.part.commands}
        pending = [
            f"{lines[key].where()}: {lines[key].text}"
            for key in sorted(
                {
                    key
                    for key, _, _, w in self.waiting
                    if not (isinstance(w, WaitApp) and w.endless) and key in lines
                }
            )
        ]
        # Ctrl-C everything, let the interrupted commands print what they print then
        # (ping's statistics, ...), and start nothing more.
        self.stopping = True
        for *_, w in sorted(self.waiting, key=lambda x: (x[0], x[1])):
            if isinstance(w, WaitApp) and not eng.app_finished(w.app_id):
                eng.stop_app(w.app_id)
        self._wake({w.app_id for *_, w in self.waiting if isinstance(w, WaitApp)})
        while self.ready:
            key, _, gen, value = heapq.heappop(self.ready)
            self._step(key, gen, value)
        for *_, gen, _w in self.waiting:
            gen.close()
        self.waiting = []
        self._end_detached()
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

    def __init__(self, sched: _Scheduler) -> None:
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
    r = Runner(scenario, results_root, progress, echo)
    r.check()
    return r.run()


__all__ = ["Runner", "run_scenario", "WaitApp", "WaitUntil", "NextLine", "RunCtx", "Job"]
