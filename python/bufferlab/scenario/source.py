"""Positions in the scenario's TOML text, for errors that point at the key or string at fault.

``tomllib`` gives values without positions; :class:`SourceMap` finds them again in
the raw text, and the error helpers here turn a message about a key into a
``file:line:col`` :class:`~bufferlab.errors.ScenarioError`.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..errors import ScenarioError

#: where a scan for the next string literal stops: a quote, or a comment's start
_QUOTE_OR_COMMENT = re.compile(r"[\"'#]")

_TOML_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}


def _toml_string_at(text: str, j: int) -> tuple[str, list[int], int] | None:
    """Decode the one-line TOML string whose opening quote is ``text[j]``.

    Returns (value, 0-based column of each character of the value, column
    after the closing quote), or None if it is not a one-line string.
    """
    q = text[j]
    if text.startswith(q * 3, j):
        return None
    end = text.find(q, j + 1)
    if end >= 0 and (q == "'" or "\\" not in text[j + 1 : end]):  # no escapes: a slice
        return text[j + 1 : end], list(range(j + 1, end)), end + 1
    out: list[str] = []
    cols: list[int] = []
    i = j + 1
    while i < len(text):
        ch = text[i]
        if ch == q:
            return "".join(out), cols, i + 1
        if q == '"' and ch == "\\":
            esc = text[i + 1 : i + 2]
            if esc in _TOML_ESCAPES:
                out.append(_TOML_ESCAPES[esc])
                cols.append(i)
                i += 2
                continue
            n = {"u": 4, "U": 8}.get(esc)
            if n is None:
                return None
            try:
                out.append(chr(int(text[i + 2 : i + 2 + n], 16)))
            except ValueError:
                return None
            cols.append(i)
            i += 2 + n
            continue
        out.append(ch)
        cols.append(i)
        i += 1
    return None


class SourceMap:
    """Finds keys and string values in the raw TOML text, scanning forward."""

    def __init__(self, text: str, file: str, colmap: dict[int, list[int]] | None = None) -> None:
        self.lines = text.splitlines()
        self.file = file
        self.cursor = (0, 0)  # (line index, column) where the next search starts
        #: lines changed by ${...} substitution (scenario/params.py): 1-based line -> the
        #: file's 0-based column of each character of the text searched here
        self.colmap = colmap or {}

    def _file_col(self, line: int, col: int) -> int:
        """The file's 1-based column of 1-based column ``col`` of the searched ``line``."""
        cols = self.colmap.get(line)
        return cols[col - 1] + 1 if cols and 0 < col <= len(cols) else col

    def key_pos(self, key: str, start_line: int = 0) -> tuple[int, int] | None:
        """Line and column (1-based) of ``key =`` at the start of a line, from ``start_line`` (0-based)."""
        pat = re.compile(rf"^(\s*)(\"{re.escape(key)}\"|{re.escape(key)})\s*=")
        for i in range(start_line, len(self.lines)):
            m = pat.search(self.lines[i])
            if m:
                return i + 1, m.end(1) + 1
        return None

    def key_line(self, key: str, start_line: int = 0) -> int | None:
        pos = self.key_pos(key, start_line)
        return pos[0] if pos else None

    def inline_key_pos(self, key: str, start_line: int) -> tuple[int, int] | None:
        """Line and column (1-based) of ``key =`` anywhere in a line (inline tables), from ``start_line``."""
        pat = re.compile(rf"(?<![\w-])({re.escape(key)}|\"{re.escape(key)}\")\s*=")
        for i in range(max(start_line - 1, 0), len(self.lines)):
            m = pat.search(self.lines[i])
            if m:
                return i + 1, m.start() + 1
        return None

    def header_line(self, header: str, occurrence: int) -> int | None:
        seen = -1
        for i, ln in enumerate(self.lines):
            if ln.strip().startswith(header):
                seen += 1
                if seen == occurrence:
                    return i + 1
        return None

    def find_string(self, value: str) -> tuple[int, int] | None:
        """Line and column (1-based) of the next string literal whose value is ``value``."""
        pos = self.find_string_cols(value)
        return (pos[0], pos[1][0] if pos[1] else pos[2]) if pos else None

    def find_string_cols(self, value: str) -> tuple[int, list[int], int] | None:
        """Like :meth:`find_string`: (line, 1-based column of each character of the
        value as written, 1-based column of the string's first character)."""
        li, col = self.cursor
        while li < len(self.lines):
            text = self.lines[li]
            j = col
            while (mark := _QUOTE_OR_COMMENT.search(text, j)) is not None:
                j = mark.start()
                ch = text[j]
                if ch == "#":
                    break
                if ch in "\"'":
                    found = _toml_string_at(text, j)
                    if found is None:
                        break
                    got, cols, end = found
                    if got == value:
                        self.cursor = (li, end)
                        chars = ([self._file_col(li + 1, c + 1) for c in cols] if li + 1 in self.colmap
                                 else [c + 1 for c in cols])
                        return li + 1, chars, self._file_col(li + 1, j + 2)
                    j = end
            li, col = li + 1, 0
        return None


def suggest(word: str, choices: set[str] | list[str]) -> str | None:
    match = difflib.get_close_matches(word, list(choices), n=1)
    return f"did you mean {match[0]!r}?" if match else None


def error_at(
    src: SourceMap, message: str, key: str | None = None, line: int | None = None, **kw: Any
) -> ScenarioError:
    if line is None and key is not None:
        pos = src.key_pos(key)
        if pos:
            line, kw["col"] = pos
    return ScenarioError(message, file=src.file, line=line, **kw)


def key_error(src: SourceMap, message: str, key: str, table_line: int | None, **kw: Any) -> ScenarioError:
    """An error about ``key`` of the table whose header is on ``table_line`` (1-based)."""
    pos = src.key_pos(key, (table_line or 1) - 1) if table_line else src.key_pos(key)
    if pos is None:
        return ScenarioError(message, file=src.file, line=table_line, **kw)
    return ScenarioError(message, file=src.file, line=pos[0], col=pos[1], **kw)


def check_keys(src: SourceMap, table: dict, allowed: set[str], where: str, line: int | None = None) -> None:
    for k in table:
        if k not in allowed:
            raise key_error(
                src,
                f"unknown key {k!r} in {where}",
                k,
                line,
                expected=", ".join(sorted(allowed)),
                suggestion=suggest(k, allowed),
            )
