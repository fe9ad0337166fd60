"""The programs a scenario line can run: one module per tool, each listing its
:class:`~bufferlab.run.context.Program` records in ``PROGRAMS``, registered below (its place
here is its place in the reference's list of commands).

A command runs in two steps. :func:`prepare_command` parses and validates it when the
scenario is checked (before anything runs), in the terminal's context (which node, which
interfaces are visible), into a :class:`~bufferlab.run.context.Prepared` command: whether it
runs until stopped, and the generator that performs it in simulated time (yielding what it
waits for) and returns its exit status.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator, Mapping
from types import ModuleType

from ...commands.shell import LAST_BACKGROUND_PID, Job, Loop, SimpleCommand
from ...errors import CommandError, NotSupportedError
from ..context import Chain, Item, PrepareCtx, Prepared, PreparedLoop, Program
from . import shell

#: each module of a tool (run/programs/<module>.py) with the names of its ``PROGRAMS``, in
#: their order; a module is imported when one of its programs is first looked up, since a
#: scenario uses a few of them and importing all 22 was a tenth of a second of every run
#: (tests/test_architecture.py keeps this table and the modules' records in step)
INDEX: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tc", ("tc",)),
    ("sysctl", ("sysctl",)),
    ("ethtool", ("ethtool",)),
    ("ping", ("ping",)),
    ("iperf3", ("iperf3",)),
    ("iperf2", ("iperf",)),
    ("generators", ("cbr", "poisson", "onoff", "sink", "bulk")),
    ("flows", ("flows",)),
    ("ns3_goodput", ("ns3-goodput",)),
    ("plot_q", ("plot_q.sh",)),
    ("plot_iperf", ("plot_iperf.sh",)),
    ("capture", ("tcpdump", "tshark")),
    ("shell", ("cd", "mkdir", "sleep", "echo", "cat", "date", "true", ":", "xdg-open")),
    ("procs", ("kill", "pkill", "pgrep", "killall", "wait", "jobs", "ps")),
    ("netinfo", ("ip", "ifconfig", "arp", "hostname")),
    ("ss", ("ss",)),
    ("nstat", ("nstat", "netstat")),
    ("netperf", ("netserver", "netperf")),
    ("irtt", ("irtt",)),
    ("fping", ("fping",)),
    ("flent", ("flent",)),
    ("web", ("python", "python3", "curl", "wget", "dd", "head")),
)


def program_module(module: str) -> ModuleType:
    """The module ``run/programs/<module>.py`` (imported on first use)."""
    return importlib.import_module(f"{__name__}.{module}")


class Registry(Mapping[str, Program]):
    """Every program by name, in :data:`INDEX`'s order; a record is read from its module
    when first looked up. Membership, iteration and the names need no import."""

    def __init__(self) -> None:
        self._module_of = {name: module for module, names in INDEX for name in names}
        self._loaded: dict[str, Program] = {}

    def __getitem__(self, name: str) -> Program:
        program = self._loaded.get(name)
        if program is None:
            module = self._module_of[name]
            self._loaded.update((p.name, p) for p in program_module(module).PROGRAMS)
            if name not in self._loaded:
                raise RuntimeError(f"run/programs/{module}.py has no program {name!r}, as INDEX says")
            program = self._loaded[name]
        return program

    def __contains__(self, name: object) -> bool:
        return name in self._module_of

    def __iter__(self) -> Iterator[str]:
        return iter(self._module_of)

    def __len__(self) -> int:
        return len(self._module_of)


PROGRAMS = Registry()


def prepare_command(pc: PrepareCtx, sc: SimpleCommand) -> Prepared:
    """Check one simple command of a line against its terminal (errors at their column)."""
    if not sc.words:  # a redirect alone runs nothing
        return _prepared(PROGRAMS["true"], shell.TRUE)
    name = sc.words[0].text
    program = PROGRAMS.get(name)
    if program is None:
        close = difflib.get_close_matches(name, list(PROGRAMS), n=1)
        raise CommandError(
            f"{name}: command not found (not modelled by bufferlab)",
            col=sc.words[0].col,
            expected="one of " + ", ".join(sorted(PROGRAMS)),
            suggestion=f"did you mean {close[0]}?" if close else None,
        )
    last_bg = next((w for w in sc.words if LAST_BACKGROUND_PID in w.text), None)
    if last_bg is not None and not program.expands_last_pid:
        *others, last = [p.name for p in PROGRAMS.values() if p.expands_last_pid]
        raise NotSupportedError(
            f"{name}: $! (the last background job's PID) is supported in {', '.join(others)} and {last} only",
            col=last_bg.col,
            suggestion="e.g. kill $! or wait $!",
        )
    return _prepared(program, program.prepare(pc, sc.words))


def prepare_chain(pc: PrepareCtx, job: Job) -> Chain:
    """Check every command of a job, those inside its loops too, as :func:`prepare_command`."""
    items: list[Item] = []
    for c in job.commands:
        if isinstance(c, Loop):
            items.append((c, PreparedLoop(c.until, [prepare_chain(pc, j) for j in c.condition],
                                          [prepare_chain(pc, j) for j in c.body])))
        else:
            items.append((c, prepare_command(pc, c)))
    return items, job.ops


def _prepared(program: Program, prepared: Prepared) -> Prepared:
    return Prepared(prepared.run, prepared.endless, program)


__all__ = ["INDEX", "PROGRAMS", "Registry", "prepare_command", "prepare_chain", "program_module"]
