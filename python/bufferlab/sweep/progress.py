"""Progress of a sweep: a rich display on a terminal, one plain line per run otherwise; both on
stderr (stdout has the results: the closing line)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress


class Progress:
    def __init__(self, todo: int, cached: int, workers: int, plain: bool) -> None:
        self.todo, self.cached, self.workers, self.plain = todo, cached, workers, plain
        self.n_done = self.n_failed = 0
        self._bar: RichProgress | None = None

    def __enter__(self) -> Progress:
        if not self.plain and self.todo:
            self._bar = RichProgress(TextColumn("runs"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.fields[state]}"), TimeElapsedColumn(),
                                     TextColumn("ETA"), TimeRemainingColumn(), transient=False,
                                     console=Console(stderr=True))
            self._bar.start()
            self._task = self._bar.add_task("runs", total=self.todo, state=self._state())
        elif self.cached:
            print(f"{self.cached} runs already done", file=sys.stderr)
        return self

    def _state(self) -> str:
        running = min(self.workers, self.todo - self.n_done)
        return f"running {running}, failed {self.n_failed}, cached {self.cached}"

    def done(self, rec: dict[str, Any]) -> None:
        self.n_done += 1
        self.n_failed += rec["status"] != "ok"
        if self._bar is not None:
            self._bar.update(self._task, advance=1, state=self._state())
            return
        params = " ".join(f"{k}={v}" for k, v in rec["overrides"].items())
        print(f"[{self.n_done}/{self.todo}] {rec['run_id']} seed={rec['seed']} {params}: {rec['status']} "
              f"({rec['wall_s']:.1f} s)", file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
