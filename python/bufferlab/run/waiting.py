"""The scheduler's waiting jobs, indexed so that a wake-up costs what it wakes.

A job waits for an application to end (``WaitApp``) or for an instant
(``WaitUntil``). With thousands of flows (``bulk -P 10000``) the engine stops
thousands of times, once per finishing application; scanning every waiting job
each time made a part quadratic in its number of commands. Here jobs are kept
in arrival order (a dict keyed by their sequence number) with two indexes: the
jobs per application id, and a heap of instants. Woken jobs come back in
arrival order, exactly as a scan of the list would return them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any

from .context import WaitApp, WaitUntil

#: (line index, sequence number, job, wait, owner) — the scheduler's _Entry
Entry = tuple[int, int, Any, Any, Any]


def is_finite(wait: Any) -> bool:
    """The part waits for it: all but the waits of what never ends (``endless``)."""
    return not (isinstance(wait, WaitApp | WaitUntil) and wait.endless)


class Waiting:
    """Jobs waiting for an application or an instant, in arrival order."""

    def __init__(self) -> None:
        self._entries: dict[int, Entry] = {}
        self._by_app: dict[int, list[int]] = {}
        self._instants: list[tuple[int, int]] = []
        #: terminal name → its foreground jobs (typing a line Ctrl-C's them)
        self._foreground: dict[str, set[int]] = {}
        #: jobs the part waits for (all but endless applications)
        self._finite = 0

    def clear(self) -> None:
        self._entries.clear()
        self._by_app.clear()
        self._instants.clear()
        self._foreground.clear()
        self._finite = 0

    def add(self, entry: Entry) -> None:
        seq, wait = entry[1], entry[3]
        self._entries[seq] = entry
        if isinstance(wait, WaitApp):
            self._by_app.setdefault(wait.app_id, []).append(seq)
        elif isinstance(wait, WaitUntil):
            heapq.heappush(self._instants, (wait.t_ns, seq))
        owner = entry[4]
        if owner.foreground:
            self._foreground.setdefault(owner.terminal, set()).add(seq)
        self._finite += is_finite(wait)

    def _remove(self, seq: int) -> Entry:
        entry = self._entries.pop(seq)
        self._finite -= is_finite(entry[3])
        owner = entry[4]
        if owner.foreground:
            self._foreground[owner.terminal].discard(seq)
        return entry

    def remove(self, seq: int) -> Entry:
        """Take one job out (a signal ended what it waited for)."""
        return self._remove(seq)

    def take(self, finished_apps: Iterable[int], now_ns: int) -> list[Entry]:
        """Remove and return, in arrival order, the jobs of ``finished_apps`` and
        the jobs whose instant has come."""
        seqs = [s for app in finished_apps for s in self._by_app.pop(app, ())]
        while self._instants and self._instants[0][0] <= now_ns:
            seqs.append(heapq.heappop(self._instants)[1])
        return [self._remove(s) for s in sorted(seqs) if s in self._entries]

    def foreground(self, terminal: str) -> list[Entry]:
        """The jobs in ``terminal``'s foreground, in arrival order."""
        return [self._entries[s] for s in sorted(self._foreground.get(terminal, ()))]

    def next_instant(self) -> int | None:
        """The earliest instant a job waits for."""
        heap = self._instants
        while heap and heap[0][1] not in self._entries:
            heapq.heappop(heap)  # its job left by other means (end of the scenario)
        return heap[0][0] if heap else None

    def has_finite(self) -> bool:
        return self._finite > 0

    def __iter__(self) -> Iterator[Entry]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)
