"""Simulated time for Mininet scripts: ``sleep`` lets the network run, ``time`` reads it.

``bufferlab mininet SCRIPT.py`` maps ``time.sleep``/``time.time`` here. Before
``net.start()`` (no network yet) sleeping only moves the clock."""

from __future__ import annotations

from ..profile import PROFILES
from .session import MininetError, Session

#: the running network, set by Mininet.start() and cleared by stop()
_session: Session | None = None
#: seconds slept before any network existed
_offset = 0.0


def current() -> Session:
    if _session is None:
        raise MininetError("no network is running: call net.start() first")
    return _session


def attach(session: Session | None) -> None:
    global _session, _offset
    if session is None and _session is not None:
        _offset += _session.now_s
    _session = session


def sleep(seconds: float) -> None:
    global _offset
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        raise MininetError(f"sleep({seconds!r}): expected a number of seconds")
    if _session is None:
        _offset += max(0.0, seconds)
    else:
        _session.sleep(seconds)


def time() -> float:
    """UNIX-like seconds: the profile's epoch plus simulated time."""
    now = _offset + (_session.now_s if _session is not None else 0.0)
    return PROFILES["lab2019"].epoch + now


__all__ = ["sleep", "time", "current"]
