"""Reading a tc command line word by word, as iproute2's ``NEXT_ARG()`` does, and
the two option parsers of kinds without their own (tc/tc.c ``parse_noqopt``,
tc/tc_qdisc.c for a ``qdisc_util`` without ``parse_qopt``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import CommandError, NotSupportedError
from ..shell import Word

_NOT_COMPLETE = 'Command line is not complete. Try option "help"'


class Cursor:
    def __init__(self, words: list[Word], i: int = 0) -> None:
        self.words = words
        self.i = i

    def done(self) -> bool:
        return self.i >= len(self.words)

    def peek(self, k: int = 0) -> Word | None:
        j = self.i + k
        return self.words[j] if j < len(self.words) else None

    def take(self) -> Word:
        w = self.words[self.i]
        self.i += 1
        return w

    def value(self, keyword: Word, expected: str | None = None) -> Word:
        """NEXT_ARG(): the word after ``keyword`` or tc's "not complete" error."""
        if self.done():
            raise CommandError(
                _NOT_COMPLETE, col=keyword.col, expected=expected or f"a value after {keyword.text!r}"
            )
        return self.take()


def read_classid(v: Word) -> int:
    """``get_tc_classid`` of a filter's ``flowid``/``classid`` or ``parent``: ``MAJOR:MINOR``
    in hex (a word that is no hex number, ``flowid flowid 1:1`` of fuzz.py campaign 6, is
    refused as tc refuses it)."""
    major_t, colon, minor_t = v.text.partition(":")
    try:
        major = int(major_t, 16) if major_t else 0 if colon else None
        minor = int(minor_t, 16) if minor_t else 0
    except ValueError:
        major = minor = None
    if major is None or minor is None or not colon or major > 0xFFFF or minor > 0xFFFF:
        raise CommandError(f'Illegal "classid" "{v.text}"', col=v.col, expected="MAJOR:MINOR, e.g. 1:1")
    return (major << 16) | minor


def rewrap(err: CommandError, message: str, col: int | None = None) -> CommandError:
    cls = NotSupportedError if isinstance(err, NotSupportedError) else CommandError
    return cls(message, col=err.col if col is None else col, expected=err.expected, suggestion=err.suggestion)


def read_unit(fn: Callable[..., Any], word: Word, message: str, *args: Any, **kw: Any) -> Any:
    """Run a units reader; on error keep its column/expected/hint, use tc's message."""
    try:
        return fn(word.text, *args, col=word.col, **kw)
    except CommandError as err:
        raise rewrap(err, message) from None


def parse_noqopt(kind: str, cur: Cursor) -> None:
    """tc/tc.c ``parse_noqopt``: the parser tc gives a kind it has no module for
    (``noqueue``), which takes no options."""
    if not cur.done():
        w = cur.take()
        raise CommandError(
            f'Unknown qdisc "{kind}", hence option "{w.text}" is unparsable',
            col=w.col,
            expected=f"{kind} takes no options",
        )


def reject_options(kind: str, cur: Cursor) -> None:
    """tc/tc_qdisc.c: options after a kind whose module has no option parser (``pfifo_fast``)."""
    if not cur.done():
        raise CommandError(f"qdisc '{kind}' does not support option parsing", col=cur.take().col)
