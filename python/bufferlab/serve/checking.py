"""``bufferlab check`` on an editor's buffer: its errors and warnings with their positions.

The same checks as the command (load_scenario, then the runner preparing every line, then the
``[[expect]]`` entries), run on the text as typed, not the file on disk; relative paths in it
still count from the file's folder. A check raises its first error: that one, and every
warning found before it, are the diagnostics (line and column 1-based, as the messages print
them).
"""

from __future__ import annotations

import re
import threading
import tomllib
from pathlib import Path
from typing import Any

from ..errors import BufferlabError, CommandError, ScenarioError
from ..run.scheduler import Runner
from ..scenario.expect import scenario_expectations
from ..scenario.load import load_scenario

#: "FILE:LINE[:COL]: " at the start of a message (the file may hold ':')
_WHERE = re.compile(r"^(?P<file>.*?):(?P<line>\d+)(?::(?P<col>\d+))?: (?P<rest>.*)$", re.S)
#: the checks build engines and topologies: one at a time
_LOCK = threading.Lock()


def _diag(severity: str, message: str, line: int | None = None, col: int | None = None,
          expected: str | None = None, hint: str | None = None) -> dict[str, Any]:
    return {"severity": severity, "message": message, "line": line, "col": col, "expected": expected,
            "hint": hint}


def _located(severity: str, text: str) -> dict[str, Any]:
    """A message that starts with its place (``FILE:LINE:COL: error: ...``)."""
    first, _, more = text.partition("\n")
    m = _WHERE.match(first)
    if not m:
        return _diag(severity, text)
    msg = re.sub(r"^(error|warning): ", "", m["rest"])
    return _diag(severity, msg + (f"\n{more}" if more else ""), int(m["line"]),
                 int(m["col"]) if m["col"] else None)


def _error(e: BufferlabError) -> dict[str, Any]:
    if isinstance(e, ScenarioError):
        return _diag("error", e.message, e.line, e.col, e.expected, e.suggestion)
    if isinstance(e, CommandError) and e.where:
        d = _located("error", f"{e.where}: {e.message}")
        d.update(expected=e.expected, hint=e.suggestion)
        return d
    return _located("error", str(e))


def check_scenario(path: Path, text: str) -> dict[str, Any]:
    """``{"ok", "summary", "diagnostics"}`` for the scenario ``text`` of the file ``path``."""
    warnings: list[str] = []
    try:
        with _LOCK:
            sc = load_scenario(path, source=text)
            warnings = list(sc.warnings)
            expectations = scenario_expectations(sc)
            r = Runner(sc)
            try:
                r.check()
            finally:
                warnings = list(r.warnings)
    except BufferlabError as e:
        return {"ok": False, "summary": "", "diagnostics": [*(_located("warning", w) for w in warnings),
                                                            _error(e)]}
    n = sum(len(p.commands) for p in sc.parts)
    graded = f", {len(expectations)} expectations" if expectations else ""
    summary = (f"OK ({len(sc.parts)} parts, {n} command lines, "
               f"{len(sc.hosts) + len(sc.switches) + len(sc.routers)} nodes{graded})")
    return {"ok": True, "summary": summary, "diagnostics": [_located("warning", w) for w in warnings]}


def check_python(path: Path, text: str) -> dict[str, Any]:
    """A Mininet script: Python's own syntax check (it runs only under ``bufferlab mininet``)."""
    try:
        compile(text, str(path), "exec", dont_inherit=True)
    except SyntaxError as e:
        return {"ok": False, "summary": "", "diagnostics": [_diag("error", e.msg, e.lineno, e.offset)]}
    except ValueError as e:  # NUL bytes
        return {"ok": False, "summary": "", "diagnostics": [_diag("error", str(e))]}
    return {"ok": True, "summary": "Python syntax OK (the script runs with bufferlab mininet)",
            "diagnostics": []}


def check_toml(path: Path, text: str) -> dict[str, Any]:
    """A sweep file: its TOML (the sweep itself is checked when it starts)."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        return {"ok": False, "summary": "", "diagnostics": [_located("error", f"{path}:{_toml_place(e)}")]}
    return {"ok": True, "summary": "TOML OK (the sweep is checked when it starts)", "diagnostics": []}


def _toml_place(e: tomllib.TOMLDecodeError) -> str:
    m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
    msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
    return f"{m[1]}:{m[2]}: {msg}" if m else f"1: {msg}"
