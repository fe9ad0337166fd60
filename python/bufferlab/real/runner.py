"""``bufferlab run --real``: a scenario's lines typed, in real time, into real tools in
Linux network namespaces (netns.py), with the terminal semantics of a simulated run
(docs/part-semantics.md) and its results layout, so that the same readers (tables,
report, ``bufferlab compare``) take both.

Each job of a line (``a && b``, ``x &``) is run by a thread of its own; each program
is a process ``ip netns exec NS PROGRAM ARGS`` leading its own process group, with
standard output in its ``>`` file or the node's ``terminal.log`` and standard error
in the log. Ctrl-C is SIGINT to the group. A part ends when every terminal has run its
lines and every finite command has ended (and ``duration`` has passed): as in the
simulation, a terminal whose foreground command never ends has it Ctrl-C'd once the
part's finite commands are done if it has more lines; otherwise the command keeps
running into the next parts until its terminal types a line (not a tc/sysctl/ethtool
one), a part's ``interrupt`` names the terminal, or the scenario ends.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..commands.shell import SimpleCommand
from ..formats import queue as queue_fmt
from ..formats.plot_iperf import PlotError, plot_iperf
from ..outputs.queue_plot import plot_queue
from ..outputs.result_lines import results_text
from ..outputs.results import app_for, load_run, scan_outputs
from ..results_folder import acquire, discard, fresh, release, write_marker
from ..run.context import PreparedLine, Terminal, inside_home
from ..run.part_results import qdisc_chain
from ..run.scheduler import (
    Failure,
    Interrupted,
    PartTimeout,
    Runner,
    RunStopped,
    signal_name,
    write_run_info,
)
from ..safefs import ensure_dir, open_write, write_json_atomic
from ..scenario.load import Part, Scenario
from .netns import Lab, reap_orphans, sh
from .preflight import check_machine, netem_delay_s, read_plan, stand_in_words

NS = 1_000_000_000
#: how often a part checks whether it is over (its lines' ends are seen within this)
POLL_S = 0.02
#: a Ctrl-C'd command gets this long to print what it prints then, before SIGKILL
GRACE_S = 3.0


@dataclass
class Proc:
    popen: subprocess.Popen
    interrupted: bool = False


@dataclass
class JobRun:
    """One ``&&``/``||`` chain of a line, run by its own thread."""

    term: Terminal
    part: Part
    line: PreparedLine
    index: int  # the job's place in the line
    endless: bool
    foreground: bool
    proc: Proc | None = None
    #: plot_q.sh's sampler runs until this is set
    stop: threading.Event = field(default_factory=threading.Event)
    interrupted: bool = False
    status: int = 0
    done: threading.Event = field(default_factory=threading.Event)
    #: its first program runs (a server: listens), so the next line may start
    launched: threading.Event = field(default_factory=threading.Event)

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the running program's group (plot_q.sh: its sampler stops)."""
        self.interrupted = True
        self.stop.set()
        p = self.proc
        if p is not None and p.popen.poll() is None:
            p.interrupted = True
            try:
                os.killpg(p.popen.pid, signal.SIGINT)
            except ProcessLookupError:
                pass


@dataclass
class TermState:
    """A terminal across parts: its foreground command that outlived its part."""

    name: str
    persisting: JobRun | None = None


class RealRunner:
    """Runs a scenario for real: :meth:`check` (lines, then the machine), :meth:`run`."""

    def __init__(
        self,
        scenario: Scenario,
        results_root: Path | None = None,
        echo: Callable[[str], None] | None = None,
        result: Callable[[str], None] | None = None,
    ) -> None:
        self.sc = scenario
        #: the simulator's checker: every line parsed exactly as a simulated run parses it
        self.sim = Runner(scenario)
        self.topo = self.sim.topo
        self.root = (results_root or Path("results")) / f"{scenario.slug}-real"
        self.echo = echo or (lambda s: None)
        self.result = result or self.echo
        self.lock = threading.Lock()
        self.jobs: list[JobRun] = []
        self.terms: dict[str, TermState] = {}
        self.flows: list[dict[str, Any]] = []
        self.failures: list[Failure] = []
        self.parts: list[dict[str, Any]] = []
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self.interrupted: str | None = None
        #: ``--max-wall``: the run ends cleanly after this many seconds (``stopped`` says so)
        self.max_wall_s: float | None = None
        self.stopped: str | None = None
        self.lab: Lab | None = None
        self.prev: Path | None = None
        #: the scenario is ending: no line or program starts any more
        self.stopping = False
        self.t0 = 0.0
        self.started_unix = 0.0
        #: root qdisc drops seen at the end of the previous part, per interface
        self._drops_seen: dict[str, int] = {}
        self.log_files: dict[str, Path] = {}
        #: a Mininet network's process table (session.py), what mininet/ reads of it
        self.procs: Any = None

    def check(self) -> None:
        self.sim.check()
        self.lines = self.sim.lines
        self.plan = read_plan(self.sc, self.topo, self.lines)
        self.warnings = list(self.sim.warnings)
        if self.sc.capture or self.sc.trace:
            self.warnings.append("warning: [capture] and [trace] are the simulator's; --real leaves them out "
                                 "(plot_q.sh and tcpdump lines run)")

    def now_ns(self) -> int:
        return int((time.monotonic() - self.t0) * NS)

    # ------------------------------------------------------------ the run

    def run(self) -> dict[str, Any]:
        tag = f"blr{os.getpid()}"
        check_machine(self.plan, tag)
        self.notes = list(self.plan.notes)
        for n in self.notes:
            self.echo(f"note: {n}")
        for ns in reap_orphans():
            self.echo(f"note: removed namespace {ns} left by an earlier --real run that was killed")
        acquire(self.root)
        error: str | None = None
        abort: BaseException | None = None
        try:
            self.prev = fresh(self.root, "run", f"choose another folder with -o, or move {self.root} away",
                              [self.sc.path])
            self.lab = Lab(self.sc, self.topo, piped=set(self.plan.netem_devs))
            self.t0 = time.monotonic()
            self.started_unix = time.time()
            try:
                self.lab.build()
                for n in self.lab.notes:
                    self.notes.append(n)
                    self.echo(f"note: {n}")
                for node, dev, args in self.topo.tclink_commands:
                    self._admin_tc(node, dev, args)
                for i, part in enumerate(self.sc.parts):
                    if i > 0 and self.sc.part_gap > 0:
                        time.sleep(self.sc.part_gap)
                    self._run_part(part)
            except RunStopped as e:
                self.stopped = str(e)
            except KeyboardInterrupt as e:
                self.interrupted, abort = signal_name(e), e
            except PartTimeout as e:
                error, abort = str(e), e
            except Exception as e:
                error, abort = f"{type(e).__name__}: {e}", e
            finally:
                self.stopping = True
                late = _deferred(self._end_all) + _deferred(self._teardown)
            if late and abort is None:  # a signal while everything was being stopped
                self.interrupted, abort = signal.Signals(late[0]).name, Interrupted(late[0])
            summary = self._write_summary(error)
            if abort is None and error is None and self.stopped is None:
                write_marker(self.root, "run", complete=True)
                if self.prev is not None:
                    discard(self.prev)  # the run completed: the previous one goes
        finally:
            release(self.root)
        if abort is not None:
            raise abort
        return summary

    def _teardown(self) -> None:
        if self.lab is not None:
            self.lab.teardown()
            left = self.lab.leftovers()
            if left:
                self.warnings.append(f"warning: could not remove the namespaces {', '.join(left)}")

    def _admin_tc(self, node: str, dev: str, args: str) -> None:
        """A TCLink option's qdisc, on the node's side of the link."""
        assert self.lab is not None
        words = ["tc", "qdisc", "add", "dev", self.lab.name_of(dev), *args.split()]
        delay = netem_delay_s(words)
        if dev in self.lab.pipes and delay is not None:
            self.lab.set_delay(dev, delay)
            return
        sh("ip", "netns", "exec", self.lab.ns(node), *words)

    def _run_part(self, part: Part) -> None:
        start = self.now_ns()
        self.echo(f"== part {part.name} (t = {start / NS:.3f} s, real time)")
        part_dir = self.root / part.name
        by_term: dict[str, list[PreparedLine]] = {}
        for pl in self.lines[part.name]:
            by_term.setdefault(pl.command.terminal, []).append(pl)
        states: dict[str, str] = {}
        threads = []
        entry: dict[str, Any] = {"name": part.name, "start_ns": start, "end_ns": start, "queues": [],
                                 "queue_traces": [], "captures": []}
        self.parts.append(entry)
        first_started: list[threading.Event] = []
        for t, pls in by_term.items():
            home = part_dir / t
            ensure_dir(home, self.root)
            term = Terminal(t, home, home)
            states[t] = "busy"
            first_started.append(threading.Event())
            th = threading.Thread(target=self._terminal, args=(part, term, pls, states, first_started[-1]),
                                  daemon=True)
            threads.append(th)
        # lines typed at one instant start in file order, each once its program runs: a client
        # typed after its server finds it listening, as in the simulation (and in the lab,
        # where seconds pass between the two); a terminal's leading tc/sysctl/ethtool lines,
        # which take no time in the simulation, are done before the next terminal starts, so
        # no flow typed after them runs before the classes and filters they make exist
        for th, ev in zip(threads, first_started, strict=True):
            th.start()
            ev.wait(5.0)
        try:
            self._await_end(part, start, states)
            for th in threads:
                th.join(timeout=GRACE_S)
        except RunStopped as e:
            entry["stopped"] = str(e)
            raise
        except KeyboardInterrupt as e:
            entry["interrupted"] = signal_name(e)
            raise
        except Exception as e:
            entry["error"] = str(e)
            raise
        finally:  # the qdiscs as the part left them, however it ended
            try:
                entry.update(self._part_counters(part))
            except Exception:
                pass
            entry["end_ns"] = self.now_ns()

    def _await_end(self, part: Part, start: int, states: dict[str, str]) -> None:
        """Until the part ends (module docstring), Ctrl-C'ing what its semantics say."""
        min_end = start + int((part.duration or 0) * NS)
        stop_at = start + int((self.sc.profile.stop_at or 3600.0) * NS)
        hard_stop = start + round(part.stop * NS) if part.stop is not None else None
        interrupted_at_end = False
        while True:
            time.sleep(POLL_S)
            now = self.now_ns()
            if self.max_wall_s is not None and now >= self.max_wall_s * NS:
                raise RunStopped(f"--max-wall {self.max_wall_s:g} s reached")
            if hard_stop is not None and now >= hard_stop:
                hard_stop = None
                for j in self._running():
                    j.interrupt()
            with self.lock:
                busy = any(s == "busy" for s in states.values()) or any(
                    not j.endless and not j.done.is_set() and j.part is part for j in self.jobs)
                blocked = [t for t, s in states.items() if s == "blocked"]
            if now >= stop_at:
                running = sorted({f"{j.line.command.where()}: {j.line.command.text}" for j in self._running()
                                  if j.part is part and not j.endless})
                raise PartTimeout(
                    f"{self.sc.path}:{part.line}: error: part {part.name!r} did not finish within stop_at = "
                    f"{(stop_at - start) / NS:g} s; still running:\n    " + "\n    ".join(running))
            if busy or now < min_end:
                continue
            if blocked:  # the next line of a terminal whose foreground never ends: Ctrl-C it
                with self.lock:
                    for t in blocked:
                        states[t] = "busy"
                for j in self._running():
                    if j.foreground and j.term.name in blocked and j.part is part:
                        j.interrupt()
                continue
            if part.interrupt and not interrupted_at_end:
                interrupted_at_end = True
                every = part.interrupt == ["all"]
                for j in self._running():
                    if every or j.term.name in part.interrupt:
                        j.interrupt()
                        self._wait(j)
                continue
            return

    def _running(self) -> list[JobRun]:
        with self.lock:
            return [j for j in self.jobs if not j.done.is_set()]

    def _wait(self, j: JobRun) -> None:
        if not j.done.wait(GRACE_S) and j.proc is not None:
            try:
                os.killpg(j.proc.popen.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            j.done.wait(GRACE_S)

    def _end_all(self) -> None:
        """The scenario ends: Ctrl-C everything still running, in the order it was typed."""
        for j in self._running():
            j.interrupt()
        for j in self._running():
            self._wait(j)

    # ------------------------------------------------------------ terminals and jobs

    def _terminal(self, part: Part, term: Terminal, lines: list[PreparedLine], states: dict[str, str],
                  first_started: threading.Event) -> None:
        ts = self.terms.setdefault(term.name, TermState(term.name))
        # until its first line that does more than configure, the terminal holds the others back
        settling = True
        try:
            for pl in lines:
                if not settling:
                    first_started.set()
                settling = settling and pl.configures_only()
                if self.stopping:
                    break
                if ts.persisting is not None and not pl.configures_only():
                    old, ts.persisting = ts.persisting, None
                    old.interrupt()
                    self._wait(old)
                self._log(term, f"$ {pl.command.text}")
                for idx, bg in enumerate(pl.backgrounds):
                    endless = pl.job_endless(idx)  # the simulation's own rule
                    j = JobRun(term, part, pl, idx, endless, not bg)
                    with self.lock:
                        self.jobs.append(j)
                    th = threading.Thread(target=self._job, args=(j,), daemon=True)
                    th.start()
                    j.launched.wait(5.0)
                    if not settling:
                        first_started.set()
                    if bg:
                        continue
                    if endless and pl is lines[-1]:  # it outlives the part, in the foreground
                        ts.persisting = j
                        continue
                    if endless:
                        with self.lock:
                            states[term.name] = "blocked"
                    j.done.wait()
                    with self.lock:
                        states[term.name] = "busy"
        finally:
            first_started.set()
            with self.lock:
                states[term.name] = "done"

    def log_file(self, term: Terminal) -> Path:
        """Where a terminal's output goes: its node folder's terminal.log (a Mininet
        network's nodes keep theirs apart from where their redirects land)."""
        return self.log_files.get(term.name) or term.home / "terminal.log"

    def _log(self, term: Terminal, text: str) -> None:
        with self.lock, open_write(self.log_file(term), "a") as f:
            f.write(text if text.endswith("\n") else text + "\n")

    def _job(self, j: JobRun) -> None:
        status = 0
        failed: tuple[SimpleCommand, str] | None = None
        # simple commands only: the preflight refuses loops (real/preflight.py)
        cmds = [sc for sc, _ in j.line.jobs[j.index] if isinstance(sc, SimpleCommand)]
        ops = j.line.ops[j.index]
        try:
            for k, sc in enumerate(cmds):
                if k > 0 and (
                    j.interrupted or (status == 0) != ((ops[k - 1] if k - 1 < len(ops) else "&&") == "&&")
                ):
                    continue
                status, message = self._command(j, sc)
                killed = j.interrupted
                failed = (sc, message) if status != 0 and not killed else None
        except Exception as e:  # a command that could not start: its terminal says why
            status, failed = 127, (cmds[0], str(e))
            self._log(j.term, f"bufferlab --real: {e}")
        finally:
            j.status = status
            j.launched.set()
            j.done.set()
        if failed is not None:
            sc, message = failed
            c = j.line.command
            self.failures.append(
                Failure(
                    j.term.name,
                    j.part.name,
                    c.where(sc.words[0].col if sc.words else 0),
                    f"{c.terminal}: {c.text}",
                    status,
                    message,
                    c.index in j.part.allow_fail,
                )
            )

    def _command(self, j: JobRun, sc: SimpleCommand) -> tuple[int, str]:
        """Run one simple command; (exit status, its message on failure)."""
        assert self.lab is not None
        words = [w.text for w in sc.words]
        if not words:
            return 0, ""
        prog = "tc" if words[0] == "./tc" else words[0]
        term = j.term
        if prog == "cd":
            folder = inside_home(term, term.cwd / (words[1] if len(words) > 1 else "."))
            if folder is None or not folder.is_dir():
                self._log(term, f"bash: cd: {words[1] if len(words) > 1 else ''}: No such file or directory")
                return 1, "cd: no such folder inside the node's results folder"
            term.cwd = folder
            return 0, ""
        if prog == "plot_q.sh":
            return self._plot_q(j, words[1]), ""
        if prog == "plot_iperf.sh":
            return self._plot_iperf(term, words[1])
        dev = self.topo.resolve_dev(term.name, _dev_of(words) or "") if prog == "tc" else None
        if dev is not None and dev in self.lab.pipes:
            # the userspace delay line stands in for netem (preflight.py)
            delay = netem_delay_s(words)
            if delay is not None:
                self.lab.set_delay(dev, delay)
                return 0, ""
            if "del" in words[:4] and "root" in words:  # the netem goes, and what was under it
                self.lab.set_delay(dev, 0.0)
                sh("ip", "netns", "exec", self.lab.ns(term.name), *words, check=False)
                return 0, ""
            words = stand_in_words(words, self.plan.netem_handles.get(dev))
        for name in _paths(prog, words):
            if inside_home(term, term.cwd / name) is None:  # real tools run as root: as simulated, no
                # file outside the node's results folder is read or written
                why = f"{prog}: {name}: Permission denied (outside the node's results folder)"
                self._log(term, why)
                return 1, why
        out_path = None
        if sc.redirect is not None:
            target = sc.redirect.target.text
            out_path = inside_home(term, term.cwd / target)
            if out_path is None:
                self._log(term, f"bash: {target}: Permission denied (outside the node's results folder)")
                return 1, f"{target}: outside the node's results folder"
        if self.stopping:
            return 130, ""
        log = open_write(self.log_file(term), "a")
        out = (
            open_write(out_path, "a" if sc.redirect and sc.redirect.op == ">>" else "w") if out_path else log
        )
        try:
            argv = self.lab.exec_argv(term.name, [prog, *words[1:]])
            # nstat keeps its history per user in /tmp: a terminal's own, not the machine's root's
            history = {"NSTAT_HISTORY": str(term.cwd / ".nstat.history")}
            env = {**os.environ, **history} if prog == "nstat" else None
            popen = subprocess.Popen(argv, cwd=term.cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=log,
                                     start_new_session=True, env=env)
        finally:
            if out is not log:
                out.close()
            log.close()
        proc = Proc(popen)
        with self.lock:
            self.lab.procs.append(popen)
            j.proc = proc
        if j.interrupted:  # Ctrl-C'd before it started
            j.interrupt()
        self._flow(j, sc, prog, words, out_path or self.log_file(term))
        if prog == "iperf3" and ("-s" in words or "--server" in words):
            _wait_listening(self.lab.ns(term.name), _port(words), popen)
        j.launched.set()
        status = popen.wait()
        if status < 0:
            status = 128 - status
        message = ""
        if status and not proc.interrupted:
            text = self.log_file(term).read_text(encoding="utf-8", errors="replace").splitlines()
            message = text[-1] if text else ""
        if proc.interrupted:
            j.interrupted = True
        return status, message

    def _flow(self, j: JobRun, sc: SimpleCommand, prog: str, words: list[str], out: Path) -> None:
        """The applications the tables and compare link to their outputs (summary.json flows)."""
        if prog == "iperf3":
            kind = "iperf3_server" if "-s" in words or "--server" in words else "iperf3_client"
        elif prog == "ping":
            kind = "ping"
        else:
            return
        with self.lock:
            self.flows.append({"app": len(self.flows), "kind": kind, "node": j.term.name, "part": j.part.name,
                               "where": j.line.command.where(sc.words[0].col),
                               "terminal": j.term.name, "command": j.line.command.text, "simple": sc.text,
                               "start_ns": self.now_ns(),
                               "output": out.resolve().relative_to(self.root.resolve()).as_posix()})

    # ------------------------------------------------------------ plot_q.sh and tc -s

    def _plot_iperf(self, term: Terminal, name: str) -> tuple[int, str]:
        """plot_iperf.sh: the simulation's reconstruction of the script (formats/plot_iperf.py)."""
        if inside_home(term, term.cwd / name) is None:
            self._log(term, f"plot_iperf.sh: {name}: outside the node's results folder")
            return 1, f"plot_iperf.sh: {name}: outside the node's results folder"
        try:
            plot_iperf(term.cwd / name, term.cwd)
        except PlotError as e:
            self._log(term, e.message)
            return 1, e.message
        except OSError as e:
            self._log(term, f"plot_iperf.sh: {e.strerror or e}")
            return 1, f"plot_iperf.sh: {e.strerror or e}"
        return 0, ""

    def _plot_q(self, j: JobRun, dev: str) -> int:
        j.launched.set()
        return self._sample_queue(j, dev)

    def _sample_queue(self, j: JobRun, dev: str) -> int:
        """plot_q.sh: ``tc -s qdisc show dev IF`` every queue_sample_interval, the last
        (leaf) qdisc's backlog, until Ctrl-C; then q_IF.dat, its plot and the part's
        queue_IF.csv, as a simulated plot_q.sh writes them."""
        assert self.lab is not None
        interval = self.sc.profile.queue_sample_interval
        start = self.now_ns()
        samples: list[list[int]] = []
        engine = self.topo.resolve_dev(j.term.name, dev) or dev
        ns, name = self.lab.ns_of_dev(engine), self.lab.name_of(engine)
        nxt = time.monotonic()
        while not j.stop.is_set():
            blocks = _tc_json(ns, name)
            if blocks:
                leaf = blocks[-1]
                samples.append([self.now_ns(), int(leaf.get("backlog", 0)), int(leaf.get("qlen", 0))])
            nxt += interval
            j.stop.wait(max(0.0, nxt - time.monotonic()))
        j.interrupted = True
        term = j.term
        dat = term.cwd / f"q_{dev}.dat"
        with open_write(dat) as f:
            f.write(queue_fmt.q_dat(samples, start))
        csv = term.home.parent / f"queue_{dev}.csv"
        with open_write(csv) as f:
            f.write(queue_fmt.q_csv(samples, start))
        part = next(p for p in self.parts if p["name"] == j.part.name)
        rel = csv.resolve().relative_to(self.root.resolve()).as_posix()
        if rel not in part["queues"]:
            part["queues"].append(rel)
        peak = part.setdefault("peak_backlog", {}).setdefault(engine, {"bytes": 0, "packets": 0})
        peak["bytes"] = max([peak["bytes"], *(s[1] for s in samples)])
        peak["packets"] = max([peak["packets"], *(s[2] for s in samples)])
        if samples:
            plot_queue(samples, start, dev, dat.with_suffix(".png"))
        return 0

    def _part_counters(self, part: Part) -> dict[str, Any]:
        """Every interface's qdiscs as ``tc -s`` shows them now, and the root qdisc's
        drops during the part."""
        assert self.lab is not None
        qdiscs: dict[str, Any] = {}
        texts: dict[str, str] = {}
        drops: dict[str, Any] = {}
        for i in self.topo.interfaces:  # keyed by the engine's names, as a simulated run's
            ns, dev = self.lab.ns(i.node), i.engine_name
            blocks = _tc_json(ns, i.name)
            if not blocks or all(b.get("kind") == "noqueue" for b in blocks):
                continue
            if dev in self.lab.pipes and [b.get("kind") for b in blocks] == ["pfifo_fast"]:
                continue  # the tap's default queue, not the scenario's
            qdiscs[dev] = blocks
            texts[dev] = sh("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", i.name,
                            check=False).stdout
            root = next((b for b in blocks if b.get("root")), blocks[0])
            total = int(root.get("drops", 0))
            new = total - self._drops_seen.get(dev, 0)
            self._drops_seen[dev] = total
            if new > 0:
                drops[dev] = {"dropped": {"packets": new, "bytes": 0}}
        return {"qdiscs": qdiscs, "tc": texts, "drops": drops}

    # ------------------------------------------------------------ summary

    def _results(self) -> None:
        """Each part's result summary from what the tools wrote (as a simulated run's,
        outputs/result_lines.py): iperf3 clients, pings, interfaces with drops."""
        run = load_run(self.root)
        out = scan_outputs(run)
        clients: dict[str, int] = {}
        for p in self.parts:
            rows: dict[str, Any] = {"iperf3": [], "ping": [], "qdiscs": []}
            for t in out.iperf3:
                if t.part != p["name"] or t.role != "client":
                    continue
                k = clients.get(t.file, 0)
                clients[t.file] = k + 1
                app = app_for(run, "iperf3_client", t.file, k) or {}
                rows["iperf3"].append({
                    "node": t.host, "where": app.get("where", t.file), "command": app.get("simple", t.file),
                    "protocol": t.protocol, "dst": None, "error": t.error,
                    "goodput_mbps": None if t.goodput_bps is None else round(t.goodput_bps / 1e6, 2),
                    "retransmits": t.retransmits, "lost": t.lost_packets})
            for pr in out.pings:
                if pr.part != p["name"]:
                    continue
                app = app_for(run, "ping", pr.file, pr.index) or {}
                rtts = [r[2] for r in pr.replies]
                tx = pr.transmitted if pr.transmitted is not None else len(rtts)
                got = pr.received if pr.received is not None else len(rtts)
                rows["ping"].append(
                    {
                        "node": pr.host,
                        "where": app.get("where", pr.file),
                        "command": app.get("simple", pr.file),
                        "dst": pr.dest,
                        "transmitted": tx,
                        "received": got,
                        "loss_pct": round(100 * (tx - got) / tx, 2) if tx else None,
                        "min_ms": min(rtts) if rtts else None,
                        "avg_ms": round(sum(rtts) / len(rtts), 3) if rtts else None,
                        "max_ms": max(rtts) if rtts else None,
                    }
                )
            peaks = p.get("peak_backlog", {})
            for dev in sorted(set(p.get("drops", {})) | set(peaks)):
                d = {r: c["packets"] for r, c in p.get("drops", {}).get(dev, {}).items()}
                rows["qdiscs"].append(
                    {
                        "interface": dev,
                        "qdiscs": qdisc_chain(p.get("qdiscs", {}).get(dev, [])),
                        "drops": d,
                        "dropped": sum(d.values()),
                        "peak_backlog_bytes": peaks.get(dev, {}).get("bytes"),
                        "peak_backlog_packets": peaks.get(dev, {}).get("packets"),
                    }
                )
            p["results"] = rows
            text = results_text(p["name"], rows)
            if text:
                self.result(text)

    def _write_summary(self, error: str | None) -> dict[str, Any]:
        for p in self.parts:
            p.setdefault("qdiscs", {})
            p.setdefault("drops", {})
            p.setdefault("peak_backlog", {})
            p.setdefault("classes", [])
            p.setdefault("sinks", [])
        interfaces: dict[str, Any] = {}
        for p in self.parts:
            for dev, blocks in p.get("qdiscs", {}).items():
                root = next((b for b in blocks if b.get("root")), blocks[0])
                interfaces[dev] = {
                    "node": self.lab.ifaces[dev].node if self.lab and dev in self.lab.ifaces else None,
                    "qdiscs": blocks,
                    "drops": {"dropped": {"packets": int(root.get("drops", 0)), "bytes": 0}},
                }
        wall = time.monotonic() - self.t0 if self.t0 else 0.0
        summary: dict[str, Any] = {
            "scenario": self.sc.name,
            "file": str(self.sc.path),
            "seed": self.sc.seed,
            "profile": self.sc.profile.name,
            "real": {"kernel": platform.release(), "machine": platform.machine(), "tools": _versions(),
                     "notes": self.notes},
            "part_gap_s": self.sc.part_gap,
            "simulated_s": round(wall, 6),
            "events": 0,
            "parts": self.parts,
            "packets": {},
            "interfaces": interfaces,
            "nodes": {},
            "flows": self.flows,
            "warnings": self.warnings + [f"note: {n}" for n in self.notes],
            "failures": [vars(f) for f in self.failures],
            "error": error,
            **({"interrupted": self.interrupted} if self.interrupted else {}),
            **({"stopped": self.stopped} if self.stopped else {}),
            "captures": [],
            "topology": {"nodes": self.topo.engine_config["nodes"], "links": self.topo.engine_config["links"],
                         "tclink": [list(c) for c in self.topo.tclink_commands]},
            "scenario_toml": self.sc.path.read_text(encoding="utf-8") if self.sc.path.is_file() else None,
        }
        write_json_atomic(self.root / "summary.json", summary)
        try:
            self._results()
        except Exception as e:  # the tools' own files are what counts; the summary lines are a digest
            self.warnings.append(f"warning: could not read the tools' outputs back: {e}")
        write_json_atomic(self.root / "summary.json", summary)
        write_run_info(self.root, self.started_unix, wall)
        return summary


def _port(words: list[str]) -> int:
    for k, w in enumerate(words):
        if w in ("-p", "--port") and k + 1 < len(words) and words[k + 1].isdigit():
            return int(words[k + 1])
        if w.startswith("-p") and w[2:].isdigit():
            return int(w[2:])
    return 5201


def _wait_listening(ns: str, port: int, popen: subprocess.Popen, timeout: float = 3.0) -> None:
    """Until a server listens on ``port`` in ``ns`` (or has exited, or ``timeout``)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and popen.poll() is None:
        if f":{port} " in sh("ip", "netns", "exec", ns, "ss", "-Htln", check=False).stdout:
            return
        time.sleep(0.02)


def _paths(prog: str, words: list[str]) -> list[str]:
    """The files a line's program reads or writes (kept inside its node folder)."""
    if prog in ("cat", "mkdir"):
        return [w for w in words[1:] if not w.startswith("-")]
    found = []
    for k, w in enumerate(words):
        if prog == "iperf3" and w.startswith("--logfile"):
            found.append(w.split("=", 1)[1] if "=" in w else (words[k + 1] if k + 1 < len(words) else ""))
        if prog in ("tcpdump", "tshark") and w.startswith("-w"):
            found.append(w[2:] or (words[k + 1] if k + 1 < len(words) else ""))
    return [f for f in found if f]


def _dev_of(words: list[str]) -> str | None:
    return next((words[k + 1] for k in range(len(words) - 1) if words[k] == "dev"), None)


def _tc_json(ns: str, dev: str) -> list[dict[str, Any]]:
    r = sh("ip", "netns", "exec", ns, "tc", "-s", "-j", "qdisc", "show", "dev", dev, check=False)
    try:
        doc = json.loads(r.stdout or "[]")
    except ValueError:
        return []
    return doc if isinstance(doc, list) else []


def _versions() -> dict[str, str]:
    out = {}
    for tool, args in (("iperf3", ["--version"]), ("ip", ["-V"]), ("ping", ["-V"])):
        try:
            r = subprocess.run([tool, *args], capture_output=True, text=True, timeout=5)
            out[tool] = (r.stdout or r.stderr).splitlines()[0].strip() if (r.stdout or r.stderr) else "?"
        except (OSError, subprocess.TimeoutExpired):
            out[tool] = "not installed"
    return out


def _deferred(fn: Callable[[], None]) -> list[int]:
    """Clean-up that a second Ctrl-C must not cut short: signals wait until it is done
    (returned: the signals that arrived meanwhile)."""
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    pending: list[int] = []
    for s in old:
        signal.signal(s, lambda signum, frame: pending.append(signum))
    try:
        fn()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    return pending


def run_real(scenario: Scenario, results_root: Path | None = None,
             echo: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run a scenario on the Linux kernel in network namespaces (root) and write
    ``<results_root>/<slug>-real/`` as a simulated run writes ``<slug>/``."""
    r = RealRunner(scenario, results_root, echo)
    r.check()
    return r.run()
