"""The shell's small commands: bash's builtins ``cd``, ``echo``, ``true``, and ``mkdir``,
``sleep``, ``cat``, ``date``, ``xdg-open`` (GNU coreutils' messages), within the
terminal's node folder."""

from __future__ import annotations

import shlex
import time

from ...commands.shell import Word
from ...errors import CommandError, NotSupportedError
from ...units import parse_duration_ns
from .. import procs
from ..context import NS, Gen, PrepareCtx, Prepared, Program, RunCtx, WaitUntil, resolved_in_home
from . import nstat


def _prep_cd(pc: PrepareCtx, words: list[Word]) -> Prepared:
    if len(words) > 2:
        raise CommandError("cd: too many arguments", col=words[2].col)
    target = words[1].text if len(words) == 2 else None

    def run(rt: RunCtx) -> int:
        if target is None or target == "~":
            rt.term.cwd = rt.term.home
            return 0
        new = resolved_in_home(rt.term, rt.term.cwd / target)
        if new is None or not new.is_dir():
            rt.io.err(f"bash: cd: {target}: No such file or directory")
            return 1
        rt.term.cwd = new
        return 0

    return Prepared.at_once(run)


def _prep_mkdir(pc: PrepareCtx, words: list[Word]) -> Prepared:
    parents = any(w.text == "-p" for w in words[1:])
    names = [w for w in words[1:] if w.text != "-p"]
    for w in names:
        if w.text.startswith("-"):
            raise NotSupportedError(
                f"mkdir: option {w.text} is not supported", col=w.col, expected="mkdir [-p] DIR..."
            )
    if not names:
        raise CommandError("mkdir: missing operand", col=words[0].col, expected="mkdir [-p] DIR...")

    def run(rt: RunCtx) -> int:
        status = 0
        for w in names:
            p = resolved_in_home(rt.term, rt.term.cwd / w.text)
            if p is None:
                rt.io.err(f"mkdir: cannot create directory '{w.text}': outside the node's results folder")
                status = 1
                continue
            if p.exists() and not parents:
                rt.io.err(f"mkdir: cannot create directory '{w.text}': File exists")
                status = 1
                continue
            try:
                p.mkdir(parents=parents, exist_ok=parents)
            except OSError as e:  # GNU mkdir's message: No such file or directory, Not a directory, ...
                rt.io.err(f"mkdir: cannot create directory '{w.text}': {e.strerror or e}")
                status = 1
        return status

    return Prepared.at_once(run)


def _prep_sleep(pc: PrepareCtx, words: list[Word]) -> Prepared:
    if len(words) < 2:
        raise CommandError(
            "sleep: missing operand", col=words[0].col, expected="sleep DURATION (e.g. sleep 5)"
        )
    total = sum(parse_duration_ns(w.text, w.col) for w in words[1:])

    def run(rt: RunCtx) -> Gen:
        yield WaitUntil(rt.now_ns + total)
        return 0

    return Prepared(run)


def _prep_echo(pc: PrepareCtx, words: list[Word]) -> Prepared:
    text = " ".join(w.text for w in words[1:]) + "\n"

    def run(rt: RunCtx) -> int:
        rt.io.out(procs.expand_words(text, rt))  # $!
        return 0

    return Prepared.at_once(run)


def _prep_cat(pc: PrepareCtx, words: list[Word]) -> Prepared:
    """``cat FILE...``: files of the node's results folder (GNU cat's messages)."""
    names = words[1:]
    for w in names:
        if w.text.startswith("-") and w.text != "-":
            raise NotSupportedError(
                f"cat: option {w.text} is not supported", col=w.col, expected="cat FILE..."
            )
        if w.text == "-":
            raise NotSupportedError(
                "cat -: standard input is not supported", col=w.col, expected="cat FILE..."
            )
    if not names:
        raise NotSupportedError(
            "cat without a file (standard input) is not supported", col=words[0].col, expected="cat FILE..."
        )
    proc_node = {w.text: nstat.check_proc_file(pc, w) for w in names if w.text.startswith("/proc/")}

    def run(rt: RunCtx) -> int:
        status = 0
        for w in names:
            if w.text in proc_node:
                rt.io.out(nstat.proc_file(rt, proc_node[w.text], w.text))
                continue
            path = resolved_in_home(rt.term, rt.term.cwd / w.text)
            if path is None:
                rt.io.err(f"cat: {w.text}: Permission denied (outside the node's results folder)")
                status = 1
            elif path.is_dir():
                rt.io.err(f"cat: {w.text}: Is a directory")
                status = 1
            elif not path.is_file():
                rt.io.err(f"cat: {w.text}: No such file or directory")
                status = 1
            else:
                rt.io.out(path.read_text(encoding="utf-8", errors="replace"))
        return status

    return Prepared.at_once(run)


def _prep_date(pc: PrepareCtx, words: list[Word]) -> Prepared:
    """``date`` and ``date +FORMAT``: the simulated clock (the profile's epoch + simulated
    time), in UTC, as GNU date prints it in the C locale."""
    fmt = "%a %b %e %H:%M:%S UTC %Y"
    for w in words[1:]:
        if w.text.startswith("+"):
            fmt = w.text[1:].replace("%Z", "UTC").replace("%N", "{ns}").replace("%s", "{epoch}")
        elif w.text not in ("-u", "--utc"):
            raise NotSupportedError(
                f"date {w.text} is not supported yet", col=w.col, expected="date [-u] [+FORMAT]"
            )

    def run(rt: RunCtx) -> int:
        t = rt.runner.sc.profile.epoch * NS + rt.now_ns
        text = time.strftime(fmt, time.gmtime(t // NS))
        rt.io.out(text.replace("{ns}", f"{t % NS:09d}").replace("{epoch}", str(t // NS)) + "\n")
        return 0

    return Prepared.at_once(run)


def _prep_xdg_open(pc: PrepareCtx, words: list[Word]) -> Prepared:
    files = " ".join(shlex.quote(w.text) for w in words[1:])
    return Prepared.at_once(
        lambda rt: (rt.io.err(f"(xdg-open {files}: a viewer is not opened in simulation)"), 0)[1]
    )


def _prep_true(pc: PrepareCtx, words: list[Word]) -> Prepared:
    return TRUE


#: ``true``, and an empty command (a line of only a redirect)
TRUE = Prepared.at_once(lambda rt: 0)

PROGRAMS = (
    Program("cd", _prep_cd, "bash's `cd [DIR]`, within the node's results folder", builtin=True),
    Program("mkdir", _prep_mkdir, "`mkdir [-p] DIR...` (GNU mkdir's messages)"),
    Program("sleep", _prep_sleep, "`sleep DURATION...` in simulated time (`5`, `0.5`, `2m`)"),
    Program("echo", _prep_echo, "bash's `echo WORDS...`", builtin=True, expands_last_pid=True),
    Program(
        "cat",
        _prep_cat,
        "`cat FILE...` of the node's results folder (GNU cat's messages), and "
        "`/proc/net/snmp`, `/proc/net/netstat`",
    ),
    Program("date", _prep_date, "`date [-u] [+FORMAT]`: the profile's epoch plus simulated time, in UTC"),
    Program("true", _prep_true, "exits 0 (`cmd || true`)", builtin=True),
    Program(":", _prep_true, "bash's null command: exits 0 (`while :; do ...; done`)", builtin=True),
    Program("xdg-open", _prep_xdg_open, "accepted; no viewer is opened in simulation"),
)
