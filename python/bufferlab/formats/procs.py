"""The text of ``ps`` (procps-ng) and of bash's ``jobs``.

``ps`` (procps-ng 3.3.12 to 4.0.x, ``ps/output.c`` format table and
``ps/sortformat.c``): the default format is ``PID TTY TIME CMD``; ``-f`` is
``UID PID PPID C STIME TTY TIME CMD``. Columns are separated by one space and
padded to their widths (PID, PPID: the digits of ``kernel.pid_max - 1``, 7 with
systemd's pid_max 4194304; TTY 8, left; TIME 8, right, ``HH:MM:SS``; UID 8, left;
C 2, right; STIME 5, right, ``HH:MM``); the last column is not padded. CMD is
the process name without ``-f`` and the whole command line with it. CPU time is
not modelled: TIME is ``00:00:00`` and C is 0. ``aux`` (procps' old Linux ``u``
format: ``user,pid,pcpu,pmem,vsz,rss,tname,stat,start_time,bsdtime,args``, widths 8, PID,
4, 4, 6, 5, 8, 4 left, 5, 6): memory is not modelled either, so VSZ and RSS are 0 and %CPU
and %MEM 0.0; STAT is ``Ss`` for a shell, ``R+`` for ``ps`` itself, ``S+`` for another
terminal's foreground command, ``S`` otherwise. Only the simulation's shells and
processes are listed (no init, no kernel threads).

``jobs`` (bash 5, ``jobs.c`` ``pretty_print_job``/``print_pipeline``): ``[N]`` and
``+`` (the current job), ``-`` (the previous one) or a space, a space, with
``-l`` the PID in 5 columns and a space, the status (``Running``, ``Done``,
``Exit N``, or the signal's description) padded to 24 columns, the command, and
`` &`` for a job still running; ``-p`` prints the PIDs alone.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

#: systemd sets kernel.pid_max to 4194304 (Ubuntu 20.04 and later)
PID_MAX = 4194304
PID_WIDTH = len(str(PID_MAX - 1))
#: bash's LONGEST_SIGNAL_DESC: the status column's width in ``jobs``
STATUS_WIDTH = 24


@dataclass(frozen=True)
class PsRow:
    pid: int
    ppid: int
    tty: str | None
    comm: str
    args: str
    start_s: float
    user: str = "root"
    #: the process state as ``ps aux`` shows it (S sleeping, R running; s session leader,
    #: + in its terminal's foreground process group)
    stat: str = "S"


def ps_text(rows: list[PsRow], full: bool, epoch: int, bsd: bool = False) -> str:
    w = PID_WIDTH
    if bsd:
        lines = [
            f"{'USER':<8} {'PID':>{w}} %CPU %MEM {'VSZ':>6} {'RSS':>5} {'TTY':<8} STAT START   TIME COMMAND"
        ]
        for r in rows:
            start = time.strftime("%H:%M", time.gmtime(epoch + int(r.start_s)))
            lines.append(f"{r.user:<8} {r.pid:>{w}}  0.0  0.0 {0:>6} {0:>5} {r.tty or '?':<8} {r.stat:<4} "
                         f"{start:>5} {'0:00':>6} {r.args}")
        return "\n".join(lines) + "\n"
    if full:
        lines = [f"{'UID':<8} {'PID':>{w}} {'PPID':>{w}}  C STIME {'TTY':<8} {'TIME':>8} CMD"]
        for r in rows:
            stime = time.strftime("%H:%M", time.gmtime(epoch + int(r.start_s)))
            lines.append(f"{r.user:<8} {r.pid:>{w}} {r.ppid:>{w}}  0 {stime:>5} {r.tty or '?':<8} "
                         f"{'00:00:00':>8} {r.args}")
    else:
        lines = [f"{'PID':>{w}} {'TTY':<8} {'TIME':>8} CMD"]
        lines += [f"{r.pid:>{w}} {r.tty or '?':<8} {'00:00:00':>8} {r.comm}" for r in rows]
    return "\n".join(lines) + "\n"


def job_line(number: int, mark: str, status: str, command: str, running: bool, pid: int | None = None) -> str:
    """One line of ``jobs`` (``pid`` given: ``jobs -l``)."""
    head = f"[{number}]{mark} "
    if pid is not None:
        head += f"{pid:>5}"
    return f"{head} {status:<{STATUS_WIDTH}}{command}{' &' if running else ''}\n"


__all__ = ["PsRow", "ps_text", "job_line", "PID_WIDTH"]
