"""The SNMP counter tools of the terminal's host: ``nstat``, ``netstat -s`` and the files
they read, ``cat /proc/net/snmp`` and ``cat /proc/net/netstat`` (parsers:
commands/nstat.py; text: formats/snmp.py, nstat.py, netstat.py; counters: the engine's
mib.rs and tcp/endpoint/mib.rs).

nstat's history file is ``/tmp/.nstat.u0``: one for the machine, shared by every host's
terminal (Mininet's hosts share the file system and all run as root), kept on the
engine (``Engine.nstat_history``) for the whole run. So ``nstat`` on h2 after ``nstat``
on h1 prints h2's counters minus h1's, as it would in Mininet; use ``nstat -a`` (and
``-s``) for a host's own totals.
"""

from __future__ import annotations

from ...commands import nstat as nstat_cmd
from ...commands.shell import Word
from ...errors import NotSupportedError
from ...formats import netstat as netstat_fmt
from ...formats import nstat as nstat_fmt
from ...formats import snmp
from ..context import PrepareCtx, Prepared, Program, RunCtx

#: the /proc files of the model: path → what writes them
PROC_FILES = {"/proc/net/snmp": snmp.proc_net_snmp, "/proc/net/netstat": snmp.proc_net_netstat}


def _counters(rt: RunCtx, node: str) -> tuple[snmp.Counters, bool]:
    modern = rt.runner.sc.profile.name == "modern"
    return snmp.kernel_counters(rt.engine.netstat(node), modern), modern


def proc_file(rt: RunCtx, node: str, path: str) -> str:
    """The text of one of :data:`PROC_FILES` on ``node`` now."""
    counters, modern = _counters(rt, node)
    return PROC_FILES[path](counters, modern)


def check_proc_file(pc: PrepareCtx, word: Word) -> str:
    """``cat`` of a /proc file: one the model writes, typed in a host's terminal."""
    if word.text not in PROC_FILES:
        raise NotSupportedError(f"cat: {word.text}: only {' and '.join(PROC_FILES)} of /proc are modelled",
                                col=word.col, expected=" or ".join(PROC_FILES))
    return pc.require_node(word, f"cat {word.text}")


def _prep_nstat(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "nstat")
    opt = nstat_cmd.parse_nstat(words, pc.profile.name == "modern")

    def run(rt: RunCtx) -> int:
        counters, modern = _counters(rt, node)
        text, history = nstat_fmt.nstat(snmp.nstat_counters(counters, modern), rt.engine.nstat_history, opt)
        rt.engine.nstat_history = history
        rt.io.out(text)
        return 0

    return Prepared.at_once(run)


def _prep_netstat(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "netstat")
    cmd = nstat_cmd.parse_netstat(words)

    def run(rt: RunCtx) -> int:
        counters, modern = _counters(rt, node)
        rt.io.out(netstat_fmt.netstat_s(snmp.proc_net_snmp(counters, modern),
                                        snmp.proc_net_netstat(counters, modern), modern, cmd.shown))
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program("nstat", _prep_nstat, "`nstat [-a] [-z] [-r] [-n] [-s] [PATTERN...]`: SNMP counters, by "
            "default what grew since the last nstat (iproute2)"),
    Program("netstat", _prep_netstat, "`netstat -s [-t] [-u] [-w]`: the SNMP counters in sentences "
            "(net-tools)"),
)
