"""Split one scenario command line into shell jobs, the way bash would.

Mirrors the small part of bash's grammar (bash ``parse.y``/``subst.c``
semantics, POSIX Shell Command Language §2.2-2.9) that lab handouts use:
words separated by blanks, ``'...'`` and ``"..."`` quoting (backslash escapes
``\\"``, ``\\\\``, ``\\$`` and ``\\``` inside double quotes), unquoted backslash
escapes, ``&&``/``||`` chains, ``;`` and ``&`` job separators, and ``>``/``>>``
output redirection (attached ``>out.json`` or separate ``> out.json``).

Of bash's compound commands, ``while LIST; do LIST; done`` and ``until LIST; do LIST; done``
(§2.9.4) are understood, as an element of a job like a simple command: a handout's
``while true; do ss -ti >> ss.txt; sleep 0.1; done &`` is one background job, and ``done`` may
be followed by ``> FILE``/``>> FILE`` and by ``&``, ``;``, ``&&`` or ``||``. The condition and
the body are ``;``/``&&``/``||`` lists of simple commands; a loop inside a loop, ``&`` inside
one, and the other compound commands (``for``, ``if``, ``case``, ``{ ...; }``) are errors
naming their column.

``$!`` (the last background job's PID) is kept for ``echo``, ``kill`` and
``wait`` to expand when they run. Everything else bash would interpret -- pipes,
``<``, here-docs, ``$(...)``, backticks, ``$VAR``, globs, subshells, fd redirections -- is a
:class:`~bufferlab.errors.CommandError` naming the column, never silently
passed through.

After splitting, each simple command is normalised as docs/internals.md "How lines run" says: a
leading ``sudo`` (with its options, e.g. ``sudo -E``) is dropped without a
warning and ``./tc`` becomes ``tc``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from bufferlab.errors import CommandError

__all__ = ["Word", "Redirect", "SimpleCommand", "Loop", "Job", "parse_shell", "simple_commands",
           "LAST_BACKGROUND_PID"]

#: ``$!`` (the PID of the shell's last background job) in a word's text: expanded when the
#: command runs (``echo``, ``kill``, ``wait``: run/procs.py); NUL cannot occur in a line
LAST_BACKGROUND_PID = "\x00!"


@dataclass(frozen=True)
class Word:
    """One shell word after quote removal.

    ``col`` is the 0-based column (in the original line) of the word's first
    character -- the opening quote if the word starts with one.
    """

    text: str
    col: int


@dataclass(frozen=True)
class Redirect:
    """``> target`` or ``>> target`` (standard output only)."""

    op: str  # ">" or ">>"
    target: Word
    col: int  # column of the operator


@dataclass
class SimpleCommand:
    """One command: program name + arguments (``words[0]`` is the program)."""

    words: list[Word]
    redirect: Redirect | None = None
    #: the command exactly as typed in the line (including ``sudo`` and the
    #: redirection), for echoing and error displays
    text: str = ""

    @property
    def name(self) -> str:
        return self.words[0].text if self.words else ""


@dataclass
class Loop:
    """``while CONDITION; do BODY; done`` (or ``until``): each list is jobs run in order (none
    in the background), and ``redirect`` takes the output of every command of the loop that
    has none of its own."""

    until: bool
    condition: list[Job]
    body: list[Job]
    redirect: Redirect | None = None
    #: the loop exactly as typed, from ``while`` to ``done`` (and its redirection)
    text: str = ""
    #: column of ``while``/``until``
    col: int = 0


@dataclass
class Job:
    """An ``&&``/``||``-chain of simple commands and loops; ``background`` if ended by ``&``."""

    commands: list[SimpleCommand | Loop] = field(default_factory=list)
    background: bool = False
    #: the operator before each command after the first ("&&" or "||"), left to right as bash
    ops: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# tokenizer

_OPERATOR_CHARS = "&|;<>()"
_BLANKS = " \t"
_GLOB_CHARS = "*?["
#: a run of word characters with no meaning to the shell (the word loop's fast path)
_PLAIN_RUN = re.compile(r"[^ \t&|;<>()\r\n'\"\\`$*?\[]+")
_VAR_START = re.compile(r"[A-Za-z_0-9{?$!#@*-]")

_SUDO_OPTS_WITH_ARG = set("CDghprtTuU")  # sudo options that take a value
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
#: bash's reserved words that open or continue a compound command (parse.y ``word_token_alist``)
_COMPOUND = frozenset({"while", "until", "for", "select", "if", "then", "elif", "else", "fi", "case", "esac",
                       "do", "done", "function", "coproc", "{", "}", "[["})


@dataclass
class _Tok:
    kind: str  # "word" or "op"
    text: str  # word text after quote removal, or the operator
    col: int
    end: int  # column just after the token in the raw line
    quoted: bool = False  # any quoting/escaping inside the word


def _not_supported(what: str, col: int, suggestion: str | None = None) -> CommandError:
    return CommandError(
        f"{what} not supported",
        col=col,
        expected="simple commands joined by &&, ; or &, with an optional > or >> FILE",
        suggestion=suggestion,
    )


def _check_dollar(line: str, i: int) -> None:
    """Raise for command substitution / parameter expansion at ``line[i] == '$'``."""
    nxt = line[i + 1] if i + 1 < len(line) else ""
    if nxt == "(":
        raise _not_supported("command substitution $(...) is", i)
    if nxt and _VAR_START.match(nxt):
        raise _not_supported(
            "shell variables ($NAME) are",
            i,
            "write the value itself, or quote the $ with '...'",
        )


def _tokenize(line: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c in _BLANKS:
            i += 1
            continue
        if c in "\r\n":
            raise CommandError("a command line must be a single line", col=i)
        if c == "#":  # comment: only at the start of a word
            break
        if c in _OPERATOR_CHARS:
            two = line[i : i + 2]
            if two == "&&":
                toks.append(_Tok("op", "&&", i, i + 2))
                i += 2
            elif two == "||":
                toks.append(_Tok("op", "||", i, i + 2))
                i += 2
            elif two in ("&>", ">&", ">|", "|&"):
                raise _not_supported(f"the {two} redirection is", i)
            elif c == "|":
                raise _not_supported("pipes (|) are", i)
            elif c == "<":
                raise _not_supported("input redirection (<) is", i)
            elif c in "()":
                raise _not_supported("subshells ( ... ) are", i)
            elif two == ";;":
                raise CommandError("syntax error near unexpected token `;;'", col=i)
            elif two == ">>":
                toks.append(_Tok("op", ">>", i, i + 2))
                i += 2
            else:  # ">", ";", "&"
                toks.append(_Tok("op", c, i, i + 1))
                i += 1
            continue
        # a word
        start = i
        buf: list[str] = []
        quoted = False
        while i < n and line[i] not in _BLANKS and line[i] not in _OPERATOR_CHARS and line[i] not in "\r\n":
            plain = _PLAIN_RUN.match(line, i)
            if plain:
                buf.append(plain.group())
                i = plain.end()
                continue
            ch = line[i]
            if ch == "'":
                j = line.find("'", i + 1)
                if j < 0:
                    raise CommandError(
                        "unterminated single quote",
                        col=i,
                        expected="a closing '",
                    )
                buf.append(line[i + 1 : j])
                i = j + 1
                quoted = True
            elif ch == '"':
                j = i + 1
                while True:
                    if j >= n:
                        raise CommandError(
                            "unterminated double quote",
                            col=i,
                            expected='a closing "',
                        )
                    cj = line[j]
                    if cj == '"':
                        break
                    if cj == "\\" and j + 1 < n and line[j + 1] in '"\\$`':
                        buf.append(line[j + 1])
                        j += 2
                        continue
                    if cj == "`":
                        raise _not_supported("command substitution `...` is", j)
                    if cj == "$" and line[j + 1 : j + 2] == "!":
                        buf.append(LAST_BACKGROUND_PID)
                        j += 2
                        continue
                    if cj == "$":
                        _check_dollar(line, j)
                    buf.append(cj)
                    j += 1
                i = j + 1
                quoted = True
            elif ch == "\\":
                if i + 1 >= n:
                    raise _not_supported("line continuation (a trailing \\) is", i)
                buf.append(line[i + 1])
                i += 2
                quoted = True
            elif ch == "`":
                raise _not_supported("command substitution `...` is", i)
            elif ch == "$" and line[i + 1 : i + 2] == "!":
                buf.append(LAST_BACKGROUND_PID)
                i += 2
            elif ch == "$":
                _check_dollar(line, i)
                buf.append(ch)
                i += 1
            elif ch in _GLOB_CHARS:
                raise _not_supported(
                    f"the glob character {ch!r} is",
                    i,
                    f"quote it ('{ch}') if you mean the character itself",
                )
            else:
                buf.append(ch)
                i += 1
        text = "".join(buf)
        if not quoted and text.isdigit() and i < n and line[i] in "<>":
            raise _not_supported("file-descriptor redirections (such as 2>) are", start)
        toks.append(_Tok("word", text, start, i, quoted))
    return toks


# ---------------------------------------------------------------------------
# normalisation of one simple command


def _strip_sudo(words: list[_Tok]) -> list[_Tok]:
    """Drop leading ``sudo`` and its options (``-E``, ``-u USER``, ``--``, ...)."""
    while words and words[0].text == "sudo" and not words[0].quoted:
        k = 1
        while k < len(words):
            t = words[k].text
            if t == "--":
                k += 1
                break
            if t.startswith("--") and len(t) > 2:
                name = t[2:].split("=", 1)[0]
                takes = name in {
                    "user",
                    "group",
                    "prompt",
                    "close-from",
                    "chdir",
                    "role",
                    "type",
                    "command-timeout",
                    "other-user",
                    "host",
                }
                k += 2 if (takes and "=" not in t) else 1
                continue
            if t.startswith("-") and len(t) > 1:
                cluster = t[1:]
                consumed_next = False
                for pos, ch in enumerate(cluster):
                    if ch in _SUDO_OPTS_WITH_ARG:
                        consumed_next = pos == len(cluster) - 1
                        break
                k += 2 if consumed_next else 1
                continue
            break
        if k >= len(words):
            raise CommandError(
                "sudo needs a command to run",
                col=words[0].col,
                expected="sudo COMMAND [ARGS]",
            )
        words = words[k:]
    return words


def _finish_command(
    line: str,
    toks: list[_Tok],
    redirect: Redirect | None,
    redirect_end: int,
    op: _Tok | None,
) -> SimpleCommand:
    if not toks:
        if redirect is not None:
            raise CommandError(
                "a redirection needs a command",
                col=redirect.col,
                expected="COMMAND > FILE",
            )
        where = op.col if op is not None else len(line)
        token = op.text if op is not None else "newline"
        raise CommandError(f"syntax error near unexpected token `{token}'", col=where)
    start = toks[0].col
    end = toks[-1].end
    if redirect is not None:
        start = min(start, redirect.col)
        end = max(end, redirect_end)
    text = line[start:end]
    words = _strip_sudo(toks)
    first = words[0]
    if not first.quoted and _ASSIGNMENT.match(first.text):
        raise _not_supported(
            "environment assignments (NAME=value before a command) are",
            first.col,
        )
    if not first.quoted and first.text in _COMPOUND:
        raise _not_supported(
            f"the compound command `{first.text}` is", first.col,
            suggestion="of bash's compound commands only while and until loops are (e.g. `while true; do "
            "ss -ti; sleep 1; done`); type the other commands as lines of their own",
        )
    out = [Word(t.text, t.col) for t in words]
    if out[0].text.startswith("./") and len(out[0].text) > 2:
        out[0] = Word(out[0].text[2:], out[0].col + 2)
    return SimpleCommand(words=out, redirect=redirect, text=text)


def parse_shell(line: str) -> list[Job]:
    """Split ``line`` into jobs (see module docstring).

    ``a && b; c & d`` gives ``[Job([a, b]), Job([c], background=True), Job([d])]``.
    An empty line (or a comment) gives ``[]``.
    """
    bad = next((k for k, ch in enumerate(line) if ch == "\x00"), None)
    if bad is not None:  # C strings end at NUL: no program, file name or argument can hold one
        raise CommandError(
            "a NUL character (\\0) cannot be part of a command line",
            col=bad,
            expected="printable text: file names and arguments are C strings, which end at NUL",
            suggestion="remove the \\u0000 from the line",
        )
    return _parse_list(line, _tokenize(line), 0, None)[0]


def simple_commands(jobs: list[Job]) -> Iterator[SimpleCommand]:
    """Every simple command of ``jobs``, those inside their loops included, in the order typed."""
    for job in jobs:
        for c in job.commands:
            if isinstance(c, Loop):
                yield from simple_commands(c.condition + c.body)
            else:
                yield c


def _parse_list(line: str, toks: list[_Tok], i: int, opener: _Tok | None) -> tuple[list[Job], int]:
    """The jobs from ``toks[i]`` on: to the end of the line (``opener`` None), or, inside a
    loop, to the ``do`` that ends the condition opened by ``opener`` (``while``/``until``) or
    the ``done`` that ends the body opened by ``opener`` (``do``). Returns the jobs and the
    index of that closing word."""
    closer = None if opener is None else "done" if opener.text == "do" else "do"
    jobs: list[Job] = []
    chain: list[SimpleCommand | Loop] = []
    ops: list[str] = []
    words: list[_Tok] = []
    redirect: Redirect | None = None
    pending: _Tok | None = None  # a ">"/">>" waiting for its target
    redirect_end = 0
    loop: Loop | None = None  # a loop just parsed: only a redirection or an operator may follow

    while i < len(toks):
        tok = toks[i]
        i += 1
        if tok.kind == "word":
            if pending is not None:
                redirect = Redirect(pending.text, Word(tok.text, tok.col), pending.col)
                redirect_end = tok.end
                pending = None
            elif loop is not None:
                raise CommandError(f"syntax error near unexpected token `{tok.text}'", col=tok.col)
            elif words or redirect is not None or tok.quoted:
                words.append(tok)
            elif tok.text in ("do", "done"):  # reserved words only where a command starts
                if tok.text != closer or chain or not jobs:  # stray, after && or ||, or an empty list
                    raise CommandError(f"syntax error near unexpected token `{tok.text}'", col=tok.col)
                return jobs, i - 1
            elif tok.text in ("while", "until"):
                if opener is not None:
                    raise _not_supported("a loop inside a loop is", tok.col)
                loop, i = _parse_loop(line, toks, i, tok)
            else:
                words.append(tok)
            continue
        # operator
        if pending is not None:
            raise CommandError(f"syntax error near unexpected token `{tok.text}'", col=tok.col)
        if tok.text in (">", ">>"):
            if redirect is not None:
                raise _not_supported("more than one redirection per command is", tok.col)
            pending = tok
            continue
        if tok.text == "&" and opener is not None:
            raise _not_supported("a background job (&) inside a loop is", tok.col)
        chain.append(_finish_loop(line, loop, redirect, redirect_end) if loop is not None
                     else _finish_command(line, words, redirect, redirect_end, tok))
        words, redirect, loop = [], None, None
        if tok.text in ("&&", "||"):
            ops.append(tok.text)
            continue
        jobs.append(Job(commands=chain, background=(tok.text == "&"), ops=ops))
        chain, ops = [], []

    if pending is not None:
        raise CommandError(
            "syntax error near unexpected token `newline'",
            col=pending.col,
            expected=f"{pending.text} FILE",
        )
    if opener is not None:
        raise CommandError("syntax error: unexpected end of file", col=len(line.rstrip()),
                           expected=f"`{closer}' (while LIST; do LIST; done)")
    if loop is not None:
        chain.append(_finish_loop(line, loop, redirect, redirect_end))
        jobs.append(Job(commands=chain, background=False, ops=ops))
    elif words or redirect is not None:
        chain.append(_finish_command(line, words, redirect, redirect_end, None))
        jobs.append(Job(commands=chain, background=False, ops=ops))
    elif chain:
        raise CommandError(
            f"the line ends after `{ops[-1]}'",
            col=len(line.rstrip()),
            expected=f"a command after {ops[-1]}",
        )
    return jobs, i


def _parse_loop(line: str, toks: list[_Tok], i: int, keyword: _Tok) -> tuple[Loop, int]:
    """``while``/``until`` (``keyword``, just before ``toks[i]``) to its ``done``; returns the
    loop and the index after ``done``."""
    condition, i = _parse_list(line, toks, i, keyword)
    body, i = _parse_list(line, toks, i + 1, toks[i])
    text = line[keyword.col:toks[i].end]
    return Loop(keyword.text == "until", condition, body, text=text, col=keyword.col), i + 1


def _finish_loop(line: str, loop: Loop, redirect: Redirect | None, redirect_end: int) -> Loop:
    if redirect is not None:
        loop.redirect = redirect
        loop.text = line[loop.col:redirect_end]
    return loop
