"""Process and job commands of a host's shell: ``kill``, ``pkill``, ``pgrep``, ``killall``,
``wait``, ``jobs`` and ``ps``.

Parsed as the real tools parse them (checked against their sources): bash 5's builtins
``kill`` (``-s SIG``, ``-n NUM``, ``-SIG``, ``-NUM``, ``--``; job specs ``%N``, ``%%``, ``%+``,
``%-``, ``%NAME`` (a job whose command starts with NAME), ``%?TEXT`` (contains TEXT) and
PIDs), ``wait [ID...]`` and ``jobs [-l|-p|-r|-s] [JOBSPEC...]``; procps-ng's ``pkill``/``pgrep``
(``-SIG``, ``--signal SIG``, ``-f``, ``-x``, ``-n``, ``-o``, ``-e``, ``-c``, ``-l``; the pattern is
an extended regular expression searched in the process name, or the whole command line with
``-f``); psmisc's ``killall`` (``-s SIG``, ``-SIG``, ``-q``, ``-w``, ``-v``, ``-e``, ``-I``,
``-r``; names match the process name exactly, the first 15 characters as the kernel keeps
them); procps-ng's ``ps`` with no options (the processes of the shell's terminal), ``-e``/``-A``
(every process), ``-f`` (full listing) and ``aux``.

Signals are named as ``kill -l`` names them (``TERM``, ``SIGTERM``, ``term`` or ``15``). A
signal reaches a simulated program as it reaches the real one: ``iperf3`` catches SIGINT,
SIGTERM and SIGHUP (its ``iperf_catch_sigend``) and prints what it prints on Ctrl-C;
``iperf`` 2 catches SIGINT and SIGTERM; iputils ``ping`` catches SIGINT and SIGALRM (its
statistics; on SIGQUIT it prints a status line and goes on: here it just goes on), so
SIGTERM ends it silently; ``tcpdump``/``tshark`` catch SIGINT, SIGTERM and SIGHUP;
bufferlab's own generators and ``plot_q.sh`` take SIGINT and SIGTERM as Ctrl-C. Any other
signal, SIGKILL always, ends a program with nothing more printed (run/procs.py: on a
terminal, the lines ping and iperf3 had printed stay). SIGCHLD, SIGURG and SIGWINCH are
ignored; stopping and continuing (SIGSTOP, SIGTSTP, SIGCONT, SIGTTIN, SIGTTOU) is not
supported yet. ``$!`` (commands/shell.py) names the last background job's PID.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import CommandError, NotSupportedError
from .shell import LAST_BACKGROUND_PID, Word

#: Linux's signal numbers (x86, arm, most architectures), as ``kill -l`` lists them
SIGNALS: dict[str, int] = {
    "HUP": 1, "INT": 2, "QUIT": 3, "ILL": 4, "TRAP": 5, "ABRT": 6, "BUS": 7, "FPE": 8, "KILL": 9,
    "USR1": 10, "SEGV": 11, "USR2": 12, "PIPE": 13, "ALRM": 14, "TERM": 15, "STKFLT": 16,
    "CHLD": 17, "CONT": 18, "STOP": 19, "TSTP": 20, "TTIN": 21, "TTOU": 22, "URG": 23, "XCPU": 24,
    "XFSZ": 25, "VTALRM": 26, "PROF": 27, "WINCH": 28, "IO": 29, "PWR": 30, "SYS": 31,
}
SIGNAL_NAMES = {n: name for name, n in SIGNALS.items()}
#: the descriptions glibc's strsignal gives (what bash prints for a job a signal ended)
DESCRIPTIONS = {
    1: "Hangup", 2: "Interrupt", 3: "Quit", 4: "Illegal instruction", 5: "Trace/breakpoint trap",
    6: "Aborted", 7: "Bus error", 8: "Floating point exception", 9: "Killed",
    10: "User defined signal 1", 11: "Segmentation fault", 12: "User defined signal 2",
    13: "Broken pipe", 14: "Alarm clock", 15: "Terminated", 16: "Stack fault",
    24: "CPU time limit exceeded", 25: "File size limit exceeded", 26: "Virtual timer expired",
    27: "Profiling timer expired", 29: "I/O possible", 30: "Power failure", 31: "Bad system call",
}
SIGKILL, SIGINT, SIGTERM = 9, 2, 15
#: ignored unless a program asks for them (their default action)
IGNORED = frozenset({17, 23, 28})
#: job control: a stopped process is not modelled
JOB_CONTROL = frozenset({18, 19, 20, 21, 22})

#: the kernel keeps this many characters of a program's name (TASK_COMM_LEN - 1)
COMM_LEN = 15


def comm(program: str) -> str:
    """The process name the kernel keeps for ``program`` (its basename, 15 characters)."""
    return program.rsplit("/", 1)[-1][:COMM_LEN]


def parse_signal(text: str, col: int, tool: str) -> int:
    """``TERM``, ``SIGTERM``, ``term``, ``15`` (or 0) → the number; a clear error otherwise."""
    if text.isdigit():
        n = int(text)
        if n == 0 or n in SIGNAL_NAMES:
            return _modelled(n, col, tool)
    else:
        name = text.upper()
        name = name[3:] if name.startswith("SIG") else name
        if name in SIGNALS:
            return _modelled(SIGNALS[name], col, tool)
    raise CommandError(f"{tool}: {text}: invalid signal specification", col=col,
                       expected="a signal name or number, e.g. TERM, SIGINT, KILL, 9")


def _modelled(n: int, col: int, tool: str) -> int:
    if n in JOB_CONTROL:
        raise NotSupportedError(f"{tool}: SIG{SIGNAL_NAMES[n]}: stopping and continuing processes is not "
                                "supported yet", col=col, expected="TERM, INT, KILL, HUP, USR1, ...")
    return n


# ---------------------------------------------------------------------- kill


@dataclass(frozen=True)
class Target:
    """One ``kill``/``wait`` operand: a job spec (``%...``) or a PID."""

    text: str
    col: int
    #: the PID, or None for a job spec
    pid: int | None = None
    #: ``$!``: the PID of the shell's last background job, known when the command runs
    last_background: bool = False


@dataclass
class Kill:
    signal: int = SIGTERM
    targets: list[Target] = field(default_factory=list)


KILL_USAGE = "kill [-s sigspec | -n signum | -sigspec] pid | jobspec ..."


def _target(w: Word, tool: str) -> Target:
    t = w.text
    if t == LAST_BACKGROUND_PID:
        return Target("$!", w.col, last_background=True)
    if t.startswith("%"):
        return Target(t, w.col)
    if t.isdigit():
        return Target(t, w.col, int(t))
    if t.startswith("-") and t[1:].isdigit():
        raise NotSupportedError(f"{tool}: {t}: process groups are not supported yet", col=w.col,
                                expected="a PID or a job spec (%1, %iperf)")
    raise CommandError(f"{tool}: {t}: arguments must be process or job IDs", col=w.col,
                       expected="a PID or a job spec such as %1, %+ or %iperf")


def parse_kill(words: list[Word]) -> Kill:
    """bash's ``kill`` builtin (see the module doc); ``kill -l`` is not supported yet."""
    cmd = Kill()
    args = words[1:]
    k = 0
    while k < len(args):
        t, col = args[k].text, args[k].col
        if t == "--":
            k += 1
            break
        if t in ("-s", "-n"):
            if k + 1 >= len(args):
                raise CommandError(f"kill: {t}: option requires an argument", col=col, expected=KILL_USAGE)
            cmd.signal = parse_signal(args[k + 1].text, args[k + 1].col, "kill")
            k += 2
            continue
        if t in ("-l", "-L"):
            raise NotSupportedError("kill -l (listing signals) is not supported yet", col=col)
        if t.startswith("-") and len(t) > 1:
            cmd.signal = parse_signal(t[1:], col, "kill")
            k += 1
            continue
        break
    cmd.targets = [_target(w, "kill") for w in args[k:]]
    if not cmd.targets:
        raise CommandError("kill: usage: " + KILL_USAGE, col=words[0].col, expected=KILL_USAGE,
                           suggestion="e.g. kill %1, kill %iperf3 or kill -INT 12345")
    return cmd


# ---------------------------------------------------------------------- pkill, pgrep, killall


@dataclass
class Pkill:
    tool: str
    pattern: str
    signal: int = SIGTERM
    full: bool = False
    exact: bool = False
    newest: bool = False
    oldest: bool = False
    echo: bool = False
    count: bool = False
    list_name: bool = False


_PKILL_FLAGS = {"f": "full", "x": "exact", "n": "newest", "o": "oldest", "e": "echo", "c": "count",
                "l": "list_name"}


def parse_pkill(words: list[Word]) -> Pkill:
    """procps-ng's ``pkill``/``pgrep`` (see the module doc)."""
    tool = words[0].text
    kill = tool == "pkill"
    cmd = Pkill(tool, "")
    patterns: list[Word] = []
    args = words[1:]
    k = 0
    while k < len(args):
        w = args[k]
        t = w.text
        if t == "--":
            patterns += args[k + 1:]
            break
        if t in ("--signal",) or t.startswith("--signal="):
            if not kill:
                raise CommandError("pgrep: unrecognized option '--signal'", col=w.col)
            value = t.split("=", 1)[1] if "=" in t else (args[k + 1].text if k + 1 < len(args) else "")
            cmd.signal = parse_signal(value, w.col, tool)
            k += 1 if "=" in t else 2
            continue
        if t in ("--full", "--exact", "--newest", "--oldest", "--echo", "--count", "--list-name"):
            setattr(cmd, {"--list-name": "list_name"}.get(t, t[2:]), True)
            k += 1
            continue
        if t.startswith("-") and len(t) > 1:
            body = t[1:]
            if kill and k == 0 and (body.isdigit() or body.upper().removeprefix("SIG") in SIGNALS):
                cmd.signal = parse_signal(body, w.col, tool)
                k += 1
                continue
            for ch in body:
                if ch not in _PKILL_FLAGS or (ch == "e" and not kill) or (ch == "l" and kill):
                    raise NotSupportedError(f"{tool}: option -{ch} is not supported yet", col=w.col,
                                            expected=f"{tool} [-SIGNAL] [-f] [-x] [-n|-o] PATTERN")
                setattr(cmd, _PKILL_FLAGS[ch], True)
            k += 1
            continue
        patterns.append(w)
        k += 1
    if len(patterns) != 1:
        what = "no matching criteria specified" if not patterns else "only one pattern can be provided"
        raise CommandError(f"{tool}: {what}", col=(patterns[1].col if len(patterns) > 1 else words[0].col),
                           expected=f"{tool} [options] PATTERN", suggestion=f"e.g. {tool} iperf3")
    cmd.pattern = patterns[0].text
    try:
        re.compile(cmd.pattern)
    except re.error as e:
        raise CommandError(f"{tool}: invalid pattern {cmd.pattern!r}: {e}", col=patterns[0].col) from None
    return cmd


def pkill_matches(cmd: Pkill, name: str, cmdline: str) -> bool:
    subject = cmdline if cmd.full else name
    if cmd.exact:
        return re.fullmatch(cmd.pattern, subject) is not None
    return re.search(cmd.pattern, subject) is not None


@dataclass
class Killall:
    names: list[str]
    signal: int = SIGTERM
    quiet: bool = False
    wait: bool = False
    verbose: bool = False
    exact: bool = False
    ignore_case: bool = False
    regex: bool = False


_KILLALL_FLAGS = {"q": "quiet", "w": "wait", "v": "verbose", "e": "exact", "I": "ignore_case", "r": "regex"}


def parse_killall(words: list[Word]) -> Killall:
    """psmisc's ``killall`` (see the module doc)."""
    cmd = Killall([])
    args = words[1:]
    k = 0
    while k < len(args):
        w = args[k]
        t = w.text
        if t == "--":
            cmd.names += [a.text for a in args[k + 1:]]
            break
        if t in ("-s", "--signal"):
            if k + 1 >= len(args):
                raise CommandError(f"killall: option '{t}' requires an argument", col=w.col)
            cmd.signal = parse_signal(args[k + 1].text, args[k + 1].col, "killall")
            k += 2
            continue
        long = {"--quiet": "quiet", "--wait": "wait", "--verbose": "verbose", "--exact": "exact",
                "--ignore-case": "ignore_case", "--regexp": "regex"}
        if t in long:
            setattr(cmd, long[t], True)
            k += 1
            continue
        if t.startswith("-") and len(t) > 1:
            body = t[1:]
            if body.isdigit() or body.upper().removeprefix("SIG") in SIGNALS:
                cmd.signal = parse_signal(body, w.col, "killall")
            elif all(ch in _KILLALL_FLAGS for ch in body):
                for ch in body:
                    setattr(cmd, _KILLALL_FLAGS[ch], True)
            else:
                raise NotSupportedError(
                    f"killall: option {t} is not supported yet",
                    col=w.col,
                    expected="killall [-s SIGNAL | -SIGNAL] [-q] [-w] [-v] [-I] [-r] NAME...",
                )
            k += 1
            continue
        cmd.names.append(t)
        k += 1
    if not cmd.names:
        raise CommandError("killall: no process name given", col=words[0].col,
                           expected="killall [-SIGNAL] NAME...", suggestion="e.g. killall iperf3")
    return cmd


def killall_matches(cmd: Killall, name: str, proc_name: str, cmdline: str) -> bool:
    """psmisc: a name longer than the kernel's 15 characters is compared with the command
    line's program name; ``-r`` searches a regular expression, ``-I`` ignores case."""
    flags = re.IGNORECASE if cmd.ignore_case else 0
    if cmd.regex:
        return re.search(name, proc_name, flags) is not None
    program = cmdline.split(" ", 1)[0].rsplit("/", 1)[-1]
    subject = program if len(name) > COMM_LEN else proc_name
    return (subject.lower() == name.lower()) if cmd.ignore_case else subject == name


# ---------------------------------------------------------------------- wait, jobs, ps


def parse_wait(words: list[Word]) -> list[Target]:
    """bash's ``wait [ID...]`` (``-n``, ``-f`` and ``-p`` are not supported yet)."""
    out = []
    for w in words[1:]:
        if w.text.startswith("-") and w.text != "--":
            raise NotSupportedError(f"wait: option {w.text} is not supported yet", col=w.col,
                                    expected="wait [PID | JOBSPEC ...]")
        if w.text != "--":
            out.append(_target(w, "wait"))
    return out


@dataclass
class Jobs:
    #: "standard", "long" (-l), "pids" (-p)
    format: str = "standard"
    running: bool = False
    stopped: bool = False
    specs: list[Target] = field(default_factory=list)


def parse_jobs(words: list[Word]) -> Jobs:
    cmd = Jobs()
    for w in words[1:]:
        t = w.text
        if t.startswith("-") and len(t) > 1:
            for ch in t[1:]:
                if ch == "l":
                    cmd.format = "long"
                elif ch == "p":
                    cmd.format = "pids"
                elif ch == "r":
                    cmd.running = True
                elif ch == "s":
                    cmd.stopped = True
                else:
                    raise NotSupportedError(f"jobs: -{ch}: option not supported yet", col=w.col,
                                            expected="jobs [-l|-p] [-r|-s] [JOBSPEC...]")
        elif t.startswith("%"):
            cmd.specs.append(Target(t, w.col))
        else:
            raise CommandError(f"jobs: {t}: no such job", col=w.col, expected="a job spec such as %1")
    return cmd


@dataclass
class Ps:
    every: bool = False
    full: bool = False
    #: BSD ``ps aux`` (user-oriented columns)
    bsd: bool = False


def parse_ps(words: list[Word]) -> Ps:
    """procps-ng's ``ps``: no options, ``-e``/``-A``, ``-f`` (and ``-ef``), BSD ``aux``."""
    cmd = Ps()
    for w in words[1:]:
        t = w.text
        if t in ("aux", "axu", "uax", "xau"):
            cmd.every = cmd.bsd = True
            continue
        if t.startswith("-") and len(t) > 1 and all(ch in "eAf" for ch in t[1:]):
            cmd.every = cmd.every or "e" in t or "A" in t
            cmd.full = cmd.full or "f" in t
            continue
        raise NotSupportedError(f"ps {t} is not supported yet", col=w.col,
                                expected="ps, ps -e, ps -f, ps -ef or ps aux")
    return cmd


__all__ = ["SIGNALS", "parse_signal", "parse_kill", "parse_pkill", "parse_killall", "parse_wait",
           "parse_jobs", "parse_ps", "Kill", "Pkill", "Killall", "Jobs", "Ps", "Target", "comm"]
