"""Runs and sweeps started from a page: each an ordinary ``bufferlab`` command in a process of
its own, watched.

A job is ``bufferlab run SCENARIO -o results --progress-json`` (or ``mininet``, ``sweep``) in
the served folder. Its output lines become events (the run's JSON progress as it is, every other
line as ``log``), kept in order so a page that comes back later, or a second page, replays them
from the start; ``end`` says how it ended. Its results go to the served folder's ``results/``
as from a terminal, so closing the page changes nothing, and Stop sends SIGINT: the command
stops as at Ctrl-C, the finished parts (or a sweep's finished runs) kept. One job at a time per
file; the results folder's own lock (results_folder.py) keeps two writers apart anyway.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

#: the bufferlab of this server comes first in the commands' path (a source tree's, if it runs
#: from one, not another one installed)
_PYTHONPATH = os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                               *filter(None, [os.environ.get("PYTHONPATH")])])
#: runs yield the processor to the page (and to whoever types in it): on a busy machine the
#: simulation waits a little, the editor does not (benches/RESULTS.md, bufferlab serve)
_NICE = ["nice", "-n", "10"] if shutil.which("nice") else []
#: ``bufferlab sweep --no-progress``'s line per finished run
_SWEEP_LINE = re.compile(r"^\[(\d+)/(\d+)\] (\S+) seed=(\S+) ?(.*): (\w+) \(")


@dataclass
class Job:
    kind: str  # run, mininet or sweep
    source: str  # the file, relative to the served folder
    #: the results folder, relative to the served folder (a run's or a sweep's)
    results: str
    argv: list[str]
    cwd: Path
    id: str = field(default_factory=lambda: secrets.token_hex(6))
    events: list[dict[str, Any]] = field(default_factory=list)
    state: str = "running"  # running, stopping, done, stopped, failed
    status: int | None = None
    started: float = field(default_factory=time.time)
    proc: subprocess.Popen[str] | None = None
    cond: threading.Condition = field(default_factory=threading.Condition)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv, cwd=self.cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, encoding="utf-8", errors="replace", bufsize=1,
            # a group of its own: Ctrl-C in the server's terminal reaches it through stop(), once
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg", "PYTHONPATH": _PYTHONPATH})
        self.add({"event": "start", "kind": self.kind, "source": self.source, "results": self.results})
        readers = [threading.Thread(target=self._read, args=(s, n), daemon=True)
                   for s, n in ((self.proc.stdout, "stdout"), (self.proc.stderr, "stderr"))]
        for t in readers:
            t.start()
        threading.Thread(target=self._wait, args=(readers,), daemon=True).start()
        if self.kind == "mininet":  # no --progress-json there: summary.json's changes say it
            threading.Thread(target=self._watch_summary, daemon=True).start()

    def add(self, event: dict[str, Any]) -> None:
        with self.cond:
            event["seq"] = len(self.events)
            self.events.append(event)
            self.cond.notify_all()

    def since(self, n: int, timeout: float) -> list[dict[str, Any]]:
        """The events from the n-th on, waiting up to ``timeout`` s for one if there is none."""
        with self.cond:
            if len(self.events) <= n and self.state in ("running", "stopping"):
                self.cond.wait(timeout)
            return self.events[n:]

    @property
    def over(self) -> bool:
        return self.state not in ("running", "stopping")

    def stop(self) -> bool:
        """SIGINT, as Ctrl-C in its terminal; False if it had ended."""
        if self.over or self.proc is None:
            return False
        try:
            self.proc.send_signal(signal.SIGINT)
        except ProcessLookupError:
            return False
        self.state = "stopping"
        self.add({"event": "stopping"})
        return True

    def info(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "source": self.source, "results": self.results,
                "state": self.state, "status": self.status, "started": self.started}

    def _read(self, stream: IO[str], name: str) -> None:
        for line in stream:
            line = line.rstrip("\n")
            if name == "stderr" and line.startswith('{"event"'):
                try:
                    self.add(json.loads(line))
                    continue
                except ValueError:
                    pass
            m = _SWEEP_LINE.match(line) if self.kind == "sweep" else None
            if m:
                self.add({"event": "sweep_run", "done": int(m[1]), "todo": int(m[2]), "run_id": m[3],
                          "status": m[6]})
            self.add({"event": "log", "stream": name, "line": line})

    def _wait(self, readers: list[threading.Thread]) -> None:
        assert self.proc is not None
        status = self.proc.wait()
        for t in readers:
            t.join()
        state = "stopped" if status in (130, 143) else "done" if status in (0, 1, 3, 4) else "failed"
        with self.cond:
            self.status, self.state = status, state
        self.add({"event": "end", "status": status, "state": state})

    def _watch_summary(self) -> None:
        path = self.cwd / self.results / "summary.json"
        seen = None
        while not self.over:
            try:
                stamp = path.stat().st_mtime_ns
            except OSError:
                stamp = None
            if stamp is not None and stamp != seen:
                seen = stamp
                self.add({"event": "summary"})
            time.sleep(0.25)


class Jobs:
    """Every job this server started; at most one running per file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.all: dict[str, Job] = {}

    def running_for(self, source: str) -> Job | None:
        return next((j for j in self.all.values() if j.source == source and not j.over), None)

    def start(self, kind: str, source: str, results: str, args: list[str]) -> tuple[Job, bool]:
        """(the job, True) once started; (the one already running for ``source``, False)."""
        with self.lock:
            running = self.running_for(source)
            if running is not None:
                return running, False
            argv = [*_NICE, sys.executable, "-m", "bufferlab.cli", *args]
            job = Job(kind, source, results, argv, self.root)
            job.start()
            self.all[job.id] = job
            return job, True

    def get(self, job_id: str) -> Job | None:
        return self.all.get(job_id)

    def list(self) -> list[dict[str, Any]]:
        return [j.info() for j in sorted(self.all.values(), key=lambda j: j.started)]

    def running_results(self) -> set[str]:
        return {j.results for j in self.all.values() if not j.over}

    def stop_all(self, wait_s: float = 20.0) -> list[Job]:
        """Stop every running job (SIGINT) and wait for them to write what they finished."""
        stopped = [j for j in list(self.all.values()) if j.stop()]
        deadline = time.monotonic() + wait_s
        for j in stopped:
            assert j.proc is not None
            try:
                j.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                j.proc.send_signal(signal.SIGTERM)
        return stopped
