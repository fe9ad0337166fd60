"""What ``nstat`` prints (iproute2 misc/nstat.c ``dump_kern_db``, ``dump_incr_db``):
``#kernel``, then one ``%-32s%-16llu%6.1f`` line per counter (name, value, rate; the
rate is the daemon's average, 0.0 without one), zeros left out unless ``-z``.

History: nstat keeps the values it last saw in a history file and prints what grew
since (``-a``: absolute values; ``-s``: leave the file as it is; ``-n``: update it
only; ``-r``: start it afresh); with no history it prints absolute values. The file
holds the counters printed (with ``-z``, the zero ones too), and for counters a name
pattern left out, their old values.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from ..commands.nstat import NstatOptions


def _matches(name: str, opt: NstatOptions) -> bool:
    if opt.casefold:
        return not opt.patterns or any(fnmatchcase(name.lower(), p.lower()) for p in opt.patterns)
    return not opt.patterns or any(fnmatchcase(name, p) for p in opt.patterns)


def _line(name: str, value: int, overflow: bool = False) -> str:
    return f"{name:<32}{value:<16}{0.0:6.1f}" + (" (overflow)" if overflow else "") + "\n"


def nstat(counters: list[tuple[str, int]], history: dict[str, int] | None,
          opt: NstatOptions) -> tuple[str, dict[str, int] | None]:
    """(what nstat prints, the history file afterwards) for the kernel's ``counters``
    (formats/snmp.py ``nstat_counters``) and the history file's content (None: none)."""
    if opt.reset:
        history = None
    if opt.absolute and opt.no_update:
        history = None  # the file is not opened at all
    out = ["#kernel\n"]
    if not opt.no_output:
        incremental = not opt.absolute and history
        for name, value in counters:
            overflow = False
            if incremental and name in history:
                old = history[name]
                overflow = value < old
                value = 0 if overflow else value - old
            if not opt.zeros and value == 0:
                continue
            if not _matches(name, opt):
                continue
            out.append(_line(name, value, overflow))
    if opt.no_update:
        return ("".join(out) if not opt.no_output else ""), history
    new: dict[str, int] = {}
    for name, value in counters:
        if not opt.zeros and value == 0:
            continue
        if not _matches(name, opt) and history and name in history:
            value = history[name]
        new[name] = value
    return ("".join(out) if not opt.no_output else ""), new
