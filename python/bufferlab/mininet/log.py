"""mininet/log.py's interface: ``setLogLevel``, ``info``, ``output``, ``error``, ``debug``, ``warn``
and the logger ``lg``. Messages are printed as Mininet prints them (no newline added)."""

from __future__ import annotations

import logging
import sys

#: Mininet's level names (mininet/log.py LEVELS), ``output`` between info and warning
OUTPUT = 25
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "output": OUTPUT,
          "warning": logging.WARNING, "warn": logging.WARNING, "error": logging.ERROR,
          "critical": logging.CRITICAL}
logging.addLevelName(OUTPUT, "OUTPUT")


class _Raw(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes each message as given: Mininet's messages carry their own newlines."""

    terminator = ""

    def emit(self, record: logging.LogRecord) -> None:
        # the stream is looked up at each message so that redirected sys.stdout (tests) works
        self.stream = sys.stdout
        super().emit(record)


lg = logging.getLogger("bufferlab.mininet")
lg.propagate = False
lg.addHandler(_Raw(sys.stdout))
lg.setLevel(OUTPUT)


def setLogLevel(level: str = "output") -> None:  # noqa: N802 (Mininet's name)
    if level not in LEVELS:
        raise ValueError(f"setLogLevel({level!r}): expected one of {', '.join(LEVELS)}")
    lg.setLevel(LEVELS[level])


def _join(args: tuple[object, ...]) -> str:
    # Mininet joins the arguments with spaces, as print does
    return " ".join(str(a) for a in args)


def debug(*args: object) -> None:
    lg.log(logging.DEBUG, _join(args))


def info(*args: object) -> None:
    lg.log(logging.INFO, _join(args))


def output(*args: object) -> None:
    lg.log(OUTPUT, _join(args))


def warn(*args: object) -> None:
    lg.log(logging.WARNING, _join(args))


def error(*args: object) -> None:
    lg.log(logging.ERROR, _join(args))


__all__ = ["lg", "setLogLevel", "debug", "info", "output", "warn", "error", "LEVELS"]
