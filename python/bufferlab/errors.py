"""One exception tree for everything a user can get wrong.

Every error a user sees names where the problem is (file, line and column of
a scenario, or the column inside a command line), what was expected, and a
suggestion. The CLI prints ``str(err)`` and exits with status 2; no traceback.
"""

from __future__ import annotations

from dataclasses import dataclass, field


class BufferlabError(Exception):
    """Base class of every error bufferlab raises on purpose."""


class CommandError(BufferlabError):
    """A command line (tc, sysctl, iperf3, ping, ...) is malformed.

    ``col`` is the 0-based column inside the command text where the offending
    word starts (``None`` if the whole command is at fault). The scenario
    runner adds the file/line position with :meth:`locate`.
    """

    def __init__(
        self,
        message: str,
        *,
        col: int | None = None,
        expected: str | None = None,
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.col = col
        self.expected = expected
        self.suggestion = suggestion
        self.where: str | None = None  # "FILE:LINE:COL" once located
        self.command: str | None = None

    def locate(self, where: str, command: str) -> CommandError:
        """Attach the ``FILE:LINE:COL`` of the command and its text; returns ``self``."""
        self.where = where
        self.command = command
        return self

    def __str__(self) -> str:
        head = f"{self.where}: error: {self.message}" if self.where else f"error: {self.message}"
        lines = [head]
        if self.command is not None:
            lines.append(f"    {self.command}")
            if self.col is not None:
                lines.append("    " + " " * self.col + "^")
        if self.expected:
            lines.append(f"  expected: {self.expected}")
        if self.suggestion:
            lines.append(f"  hint: {self.suggestion}")
        return "\n".join(lines)


class NotSupportedError(CommandError):
    """A real option or command that bufferlab does not model yet."""


class ScenarioError(BufferlabError):
    """The scenario file itself is malformed (TOML syntax, unknown keys, ...).

    ``str()`` gives ``FILE:LINE:COL: error: MESSAGE`` and the ``expected:``/``hint:`` lines;
    the attributes hold each part (``line``/``col`` are 1-based, ``None`` if unknown).
    """

    def __init__(
        self,
        message: str,
        *,
        file: str,
        line: int | None = None,
        col: int | None = None,
        expected: str | None = None,
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.expected = expected
        self.suggestion = suggestion

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        lines = [f"{where}: error: {self.message}"]
        if self.expected:
            lines.append(f"  expected: {self.expected}")
        if self.suggestion:
            lines.append(f"  hint: {self.suggestion}")
        return "\n".join(lines)


@dataclass
class Diagnostic:
    """A warning (accepted alias, ignored no-op option, ...)."""

    message: str
    col: int | None = None
    where: str | None = None

    def __str__(self) -> str:
        prefix = f"{self.where}: " if self.where else ""
        return f"{prefix}warning: {self.message}"


@dataclass
class Diagnostics:
    """Collects warnings while parsing; errors are raised, never collected."""

    warnings: list[Diagnostic] = field(default_factory=list)

    def warn(self, message: str, col: int | None = None) -> None:
        """Record a warning about the command (``col``: 0-based column of the word at fault)."""
        self.warnings.append(Diagnostic(message, col))
