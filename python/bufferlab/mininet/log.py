"""mininet/log.py's interface: ``setLogLevel``, ``info``, ``output``, ``error``, ``debug``, ``lg``.

As in Mininet, the arguments of one call are joined by spaces and written
without an added newline; the default level is ``output``.
"""

from __future__ import annotations

import sys
from typing import Any

from .session import MininetError

LEVELS = {"debug": 10, "info": 20, "output": 25, "warning": 30, "warn": 30, "error": 40, "critical": 50}


class MininetLogger:
    def __init__(self) -> None:
        self.level = LEVELS["output"]

    def setLogLevel(self, level: str | None = None) -> None:  # noqa: N802 (Mininet's name)
        name = level or "output"
        if name not in LEVELS:
            raise MininetError(f"setLogLevel({level!r}): unknown level; expected one of {', '.join(LEVELS)}")
        self.level = LEVELS[name]

    def _log(self, level: str, args: tuple[Any, ...]) -> None:
        if LEVELS[level] >= self.level:
            sys.stdout.write(" ".join(str(a) for a in args))
            sys.stdout.flush()

    def debug(self, *args: Any) -> None:
        self._log("debug", args)

    def info(self, *args: Any) -> None:
        self._log("info", args)

    def output(self, *args: Any) -> None:
        self._log("output", args)

    def warning(self, *args: Any) -> None:
        self._log("warning", args)

    warn = warning

    def error(self, *args: Any) -> None:
        self._log("error", args)


lg = MininetLogger()
setLogLevel = lg.setLogLevel  # noqa: N816 (Mininet's names)
debug, info, output, warning, warn, error = lg.debug, lg.info, lg.output, lg.warning, lg.warn, lg.error

__all__ = ["lg", "setLogLevel", "debug", "info", "output", "warning", "warn", "error", "MininetLogger"]
