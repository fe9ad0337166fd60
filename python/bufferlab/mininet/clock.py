"""Simulated time for Mininet scripts: ``sleep`` lets the running network go on,
``time`` reads its clock (seconds since the simulation started)."""

from __future__ import annotations

from .session import NS, Session

_current: list[Session] = []
#: simulated nanoseconds slept while no network ran (a script that sleeps before net.start())
_idle_ns = [0]


def attach(session: Session) -> None:
    _current[:] = [session]


def detach(session: Session) -> None:
    if _current and _current[0] is session:
        _idle_ns[0] += session.now_ns
        _current.clear()


def reset() -> None:
    """Time 0 again: each script run starts from the same clock, so that comparisons such as
    ``time() - start < 8`` round alike in every run of one process (same seed, same outputs)."""
    _idle_ns[0] = 0


def sleep(seconds: float) -> None:
    if _current:
        _current[0].sleep(seconds)
    else:
        _idle_ns[0] += round(seconds * NS)


def time() -> float:
    return (_idle_ns[0] + (_current[0].now_ns if _current else 0)) / NS


__all__ = ["sleep", "time", "reset"]
