"""What ``bufferlab run --real`` needs, checked before anything is built.

Every line was already parsed by the simulator's checker (the same mistakes, the same
messages); here each is read for what the *running kernel and machine* must provide:
root, the programs, every qdisc, class and filter kind (tried with the line's own
options on a veth in a scratch namespace: "Specified qdisc kind is unknown" means the
kernel lacks it, after ``modprobe`` had its chance), every congestion control
(``tcp_available_congestion_control``), and per-namespace ``net.*`` sysctls only, so that
no line can change the machine's own settings. ``netem delay D`` alone is run by a
userspace delay line where the kernel has no netem (delayline.py); any other netem
line is refused then. All problems are listed at once (exit status 2).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..commands.shell import Loop
from ..errors import BufferlabError
from ..run.context import PreparedLine
from ..scenario.load import Scenario
from ..scenario.topology import BuiltTopology
from ..units import parse_duration_ns
from .netns import sh

#: lines whose program a real host runs as it is (found on PATH), besides the ones below
REAL_PROGRAMS = frozenset({"iperf3", "iperf", "ping", "tc", "sysctl", "ethtool", "ip", "ifconfig", "arp",
                           "sleep", "echo", "cat", "date", "hostname", "ps", "tcpdump", "tshark", "mkdir",
                           "true", "ss", "netstat", "nstat"})
#: run by bufferlab itself: plot_q.sh samples `tc -s qdisc show` as the simulation's does,
#: plot_iperf.sh is the simulation's reconstruction (formats/plot_iperf.py), cd moves the
#: terminal's folder
INTERNAL = frozenset({"plot_q.sh", "plot_iperf.sh", "cd"})
#: refused, with why: signals by PID or name would reach the whole machine's processes (one PID
#: namespace), and shell job control needs the simulated shell
REFUSED = {
    "kill": "signals by PID or job reach every process of the machine (one PID namespace)",
    "pkill": "would signal the machine's own processes of that name",
    "killall": "would signal the machine's own processes of that name",
    "pgrep": "would list the machine's own processes (one PID namespace)",
    "xdg-open": "opens a window on the machine's desktop",
    "wait": "shell job control is not available with --real",
    "jobs": "shell job control is not available with --real",
}
#: bufferlab's traffic generators and study helpers: no real host has them
OWN_PROGRAMS = frozenset({"cbr", "poisson", "onoff", "sink", "bulk", "flows", "ns3-goodput"})
_QDISC_OPTS = {"dev": 1, "root": 0, "parent": 1, "handle": 1, "ingress": 0, "clsact": 0, "estimator": 2,
               "classid": 1}
_FILTER_OPTS = {"dev": 1, "parent": 1, "protocol": 1, "prio": 1, "pref": 1, "handle": 1, "chain": 1,
                "root": 0, "ingress": 0, "egress": 0}
_NETEM_DELAY = re.compile(r"^\d+(\.\d+)?(s|ms|us|usec|msec|sec)?$")


class RealError(BufferlabError):
    """What the kernel or the machine lacks for a ``--real`` run (exit status 2)."""


@dataclass
class TcUse:
    where: str
    terminal: str
    obj: str  # qdisc | class | filter
    verb: str
    dev: str | None
    kind: str | None
    args: list[str]
    root: bool
    handle: str | None = None
    parent: str | None = None


@dataclass
class Plan:
    """What the scenario asks of the kernel, read from its lines."""

    programs: dict[str, str] = field(default_factory=dict)  # program -> where first used
    tc: list[TcUse] = field(default_factory=list)
    ccs: dict[str, str] = field(default_factory=dict)
    sysctls: dict[str, str] = field(default_factory=dict)
    #: interfaces given a `netem delay D` line (where the kernel lacks netem: delay lines)
    netem_devs: set[str] = field(default_factory=set)
    #: the netem's handle (major) on each of them: its children become the root
    netem_handles: dict[str, str] = field(default_factory=dict)
    #: a terminal's interface name -> the engine's (topology.py ``resolve_dev``); the netem
    #: interfaces are kept in the engine's names, unique across nodes
    resolve: Callable[[str, str], str | None] = lambda terminal, dev: None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def tc_use(words: list[str], where: str, terminal: str) -> TcUse | None:
    """The object, verb, device and kind of a ``tc`` line (None for ``tc -s qdisc show``)."""
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 1
    if i + 1 >= len(words):
        return None
    obj, verb = words[i], words[i + 1]
    if verb in ("show", "ls", "list") or obj not in ("qdisc", "class", "filter"):
        return None
    opts = _FILTER_OPTS if obj == "filter" else _QDISC_OPTS
    dev, root, kind, k = None, False, None, i + 2
    handle = parent = None
    while k < len(words):
        w = words[k]
        if w == "dev" and k + 1 < len(words):
            dev = words[k + 1]
        if w == "handle" and k + 1 < len(words):
            handle = _major(words[k + 1])
        if w == "parent" and k + 1 < len(words):
            parent = _major(words[k + 1])
        if w in ("root",):
            root = True
        if w in opts:
            k += 1 + opts[w]
            continue
        kind = w
        break
    return TcUse(where, terminal, obj, verb, dev, kind, words[k + 1:] if kind else [], root, handle, parent)


def _major(handle: str) -> str:
    """``1:``, ``1:0`` and ``1`` are the same qdisc handle."""
    return handle.split(":")[0].lower().lstrip("0") or "0"


def stand_in_words(words: list[str], netem_handle: str | None) -> list[str]:
    """A tc line on an interface whose netem is a delay line: a qdisc under the netem
    (``parent H:``) becomes the root, where the delay line's frames leave from. For a
    constant delay this changes nothing measured: a time-invariant shaper's departures
    from arrivals delayed by D are its departures delayed by D (docs/real.md)."""
    u = tc_use(words, "", "")
    if u is None or netem_handle is None or u.parent != netem_handle:
        return words
    k = words.index("parent")
    return [*words[:k], "root", *words[k + 2:]]


def _netem_delay_s(u: TcUse) -> float | None:
    """Seconds of an exact ``netem delay D`` (root, nothing else), else None."""
    if u.kind != "netem" or not u.root or len(u.args) != 2 or u.args[0] != "delay":
        return None
    if not _NETEM_DELAY.match(u.args[1]):
        return None
    try:
        return parse_duration_ns(u.args[1]) / 1e9
    except ValueError:
        return None


def netem_delay_s(words: list[str]) -> float | None:
    u = tc_use(words, "", "")
    return None if u is None or u.verb not in ("add", "replace", "change") else _netem_delay_s(u)


def read_plan(sc: Scenario, topo: BuiltTopology, lines: dict[str, list[PreparedLine]]) -> Plan:
    plan = Plan(resolve=topo.resolve_dev)
    if sc.routers:
        plan.problems.append(f"routers ({', '.join(sc.routers)}) are not built by --real yet: hosts and "
                             "switches only")
    if sc.host_tcp:
        plan.problems.append(
            f"[hosts.{next(iter(sc.host_tcp))}] tcp = {{...}} is bufferlab's model of a host's "
            "TCP: a real kernel takes sysctl lines instead"
        )
    if sc.host_noise:
        plan.notes.append(
            f"host noise ([sim] host_noise / [hosts.X] noise, on {', '.join(sorted(sc.host_noise))}) is "
            "bufferlab's model of a loaded host's timing: the kernel's hosts have their own"
        )
    for key, what in (("reader_wakeup", "a reading process's scheduling latency"),
                      ("app_setup", "a server program's set-up work")):
        hosts = getattr(sc, key)
        if hosts:
            plan.notes.append(
                f"{key} ([sim] {key} / [hosts.X] {key}, on {', '.join(sorted(hosts))}) is "
                f"bufferlab's model of {what}: the kernel's hosts have their own"
            )
    if sc.profile.max_tcp_header is not None:
        plan.notes.append(
            f"[sim] max_tcp_header = {sc.profile.max_tcp_header} is the simulated kernel's build: the "
            "kernel here uses the MAX_TCP_HEADER it was built with (its send buffer shows it: "
            "`ss -tmi` tb = 2 x per_mss x cwnd: 4608 x cwnd for 192 or 256, 8704 x cwnd for 320)"
        )
    for node, dev, args in topo.tclink_commands:
        words = ["tc", "qdisc", "add", "dev", dev, *args.split()]
        u = tc_use(words, f"link of {node}", node)
        if u is not None:
            plan.tc.append(u)
    for part in sc.parts:
        read_lines(plan, lines[part.name])
    return plan


def read_lines(plan: Plan, lines: list[PreparedLine]) -> None:
    """What these lines need of the machine, into ``plan``."""
    for pl in lines:
        c = pl.command
        loop = next((item for job in pl.jobs for item, _ in job if isinstance(item, Loop)), None)
        if loop is not None:
            plan.problems.append(f"{c.where(loop.col)}: {c.terminal}: while/until loops: not with --real yet "
                                 "(only the simulation runs them)")
        for cmd, _ in pl.simple_commands():
            words = [w.text for w in cmd.words]
            if not words:
                continue
            where = c.where(cmd.words[0].col)
            prog = "tc" if words[0] == "./tc" else words[0]
            if prog in REFUSED:
                plan.problems.append(f"{where}: {c.terminal}: {prog}: not with --real: {REFUSED[prog]}")
                continue
            if prog not in REAL_PROGRAMS and prog not in INTERNAL:
                plan.problems.append(
                    f"{where}: {c.terminal}: {prog} is bufferlab's own program, not a "
                    "tool a real host has (use iperf3 or ping)"
                    if prog in OWN_PROGRAMS
                    else f"{where}: {c.terminal}: {prog}: not run by --real"
                )
                continue
            plan.programs.setdefault(prog, where)
            if prog == "tc":
                u = tc_use(words, where, c.terminal)
                if u is not None:
                    plan.tc.append(u)
            elif prog == "iperf3":
                for k, w in enumerate(words):
                    if w in ("-C", "--congestion") and k + 1 < len(words):
                        plan.ccs.setdefault(words[k + 1], where)
                    elif w.startswith("--congestion="):
                        plan.ccs.setdefault(w.split("=", 1)[1], where)
            elif prog == "sysctl":
                for w in words[1:]:
                    if w.startswith("-"):
                        continue
                    key, _, value = w.partition("=")
                    plan.sysctls.setdefault(key, where)
                    if key.replace("/", ".") == "net.ipv4.tcp_congestion_control" and value:
                        plan.ccs.setdefault(value, where)


def check_machine(plan: Plan, tag: str, has_netem: bool | None = None) -> None:
    """Root, the programs, and every kind, congestion control and sysctl the plan needs;
    raises :class:`RealError` listing every problem. Decides the netem stand-ins."""
    if os.geteuid() != 0:
        raise RealError("error: bufferlab run --real needs root (it builds network namespaces)\n"
                        "  hint: run it with sudo, or drop --real to simulate")
    problems = list(plan.problems)
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            problems.append(f"{tool} is not installed (iproute2)")
    for prog, where in plan.programs.items():
        if prog not in INTERNAL and prog not in ("echo",) and shutil.which(prog) is None:
            problems.append(f"{where}: {prog} is not installed on this machine")
    if problems and any("iproute2" in p for p in problems):
        raise RealError(_listed(problems))
    if not (plan.tc or plan.ccs or plan.sysctls):  # nothing to try on the kernel
        if problems:
            raise RealError(_listed(problems))
        return
    probe = f"{tag}-probe"
    sh("ip", "netns", "add", probe)
    try:
        sh("ip", "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1")
        sh("ip", "-n", probe, "link", "set", "p0", "up")
        problems += _check_kinds(plan, probe, has_netem)
        problems += _check_ccs(plan, probe)
        problems += _check_sysctls(plan, probe)
    finally:
        sh("ip", "netns", "del", probe, check=False)
    if problems:
        raise RealError(_listed(problems))


def _listed(problems: list[str]) -> str:
    return ("error: this machine cannot run the scenario for real:\n  " + "\n  ".join(problems)
            + "\n  hint: drop --real to simulate it, or run it on a kernel that builds what is missing")


def _modprobe(module: str) -> None:
    if shutil.which("modprobe"):
        sh("modprobe", "-q", module, check=False)


def _unknown(stderr: str) -> bool:
    s = stderr.lower()
    return "kind is unknown" in s or "classifier not found" in s or "unknown qdisc" in s \
        or "unknown filter" in s


def _check_kinds(plan: Plan, probe: str, has_netem: bool | None) -> list[str]:
    problems: list[str] = []
    tried: dict[tuple[str, str], bool] = {}

    def have(obj: str, kind: str, args: list[str]) -> bool:
        key = (obj, kind)
        if key not in tried:
            _modprobe(("cls_" if obj == "filter" else "sch_") + kind)
            if obj == "filter":
                sh(
                    "ip",
                    "netns",
                    "exec",
                    probe,
                    "tc",
                    "qdisc",
                    "replace",
                    "dev",
                    "p0",
                    "ingress",
                    check=False,
                )
                r = sh("ip", "netns", "exec", probe, "tc", "filter", "add", "dev", "p0", "parent", "ffff:",
                       "protocol", "ip", "prio", "1", kind, *args, check=False)
            else:
                r = sh(
                    "ip",
                    "netns",
                    "exec",
                    probe,
                    "tc",
                    "qdisc",
                    "replace",
                    "dev",
                    "p0",
                    "root",
                    "handle",
                    "1:",
                    kind,
                    *(args if obj == "qdisc" else []),
                    check=False,
                )
                sh("ip", "netns", "exec", probe, "tc", "qdisc", "del", "dev", "p0", "root", check=False)
            tried[key] = not _unknown(r.stderr)
        return tried[key]

    netem_ok = has_netem
    for u in plan.tc:
        if u.kind is None or u.verb not in ("add", "replace", "change"):
            continue
        if u.kind == "netem":
            if netem_ok is None:
                netem_ok = have("qdisc", "netem", ["delay", "1ms"])
            if netem_ok:
                continue
            if _netem_delay_s(u) is None or u.dev is None:
                problems.append(f"{u.where}: {u.terminal}: this kernel has no netem qdisc; only an exact "
                                "`tc qdisc add dev IF root netem delay D` is run without it (by a userspace "
                                f"delay line), not `netem {' '.join(u.args)}`")
                continue
            dev = plan.resolve(u.terminal, u.dev) or u.dev  # a link's own lines name it already
            u.dev = dev
            plan.netem_devs.add(dev)
            plan.netem_handles[dev] = u.handle or "?"
            continue
        if not have(u.obj, u.kind, u.args):
            what = {"qdisc": "qdisc", "class": "qdisc (for its classes)", "filter": "filter (classifier)"}[
                u.obj
            ]
            problems.append(f"{u.where}: {u.terminal}: this kernel has no {u.kind} {what} "
                            f"(`tc {u.obj} {u.verb} ... {u.kind}`: Specified kind is unknown)")
    for dev in sorted(plan.netem_devs):
        # a qdisc beside the netem at the root would compete with it for the root: refused
        others = [u for u in plan.tc if u.dev and (plan.resolve(u.terminal, u.dev) or u.dev) == dev
                  and u.kind not in (None, "netem") and u.obj == "qdisc" and u.root]
        if others:
            problems.append(
                f"{others[0].where}: {others[0].terminal}: {dev} has a netem delay run by a userspace "
                f"delay line (this kernel has no netem); a root {others[0].kind} beside it is not "
                "(put it under the netem: parent H:)"
            )
    if plan.netem_devs:
        plan.notes.append(
            "this kernel has no netem: `netem delay D` on "
            + ", ".join(sorted(plan.netem_devs))
            + " is a userspace delay line on a tap device (frames leave the interface's qdisc, "
            "wait D in bufferlab.real.delayline, then reach the peer; at most 1000 wait, as netem's "
            "default limit); a qdisc under the netem is the interface's root instead, and "
            "`tc -s qdisc show` does not list the netem"
        )
    return problems


def _check_ccs(plan: Plan, probe: str) -> list[str]:
    problems = []
    path = "/proc/sys/net/ipv4/tcp_available_congestion_control"
    for cc, where in plan.ccs.items():
        if cc not in Path(path).read_text().split():
            _modprobe(f"tcp_{cc}")
        if cc not in Path(path).read_text().split():
            problems.append(f"{where}: this kernel has no {cc} congestion control (available: "
                            f"{Path(path).read_text().strip()})")
    return problems


def _check_sysctls(plan: Plan, probe: str) -> list[str]:
    problems = []
    for key, where in plan.sysctls.items():
        dotted = key.replace("/", ".")
        if not dotted.startswith("net."):
            problems.append(
                f"{where}: sysctl {key}: only net.* settings, which each namespace has of its own, "
                "are set with --real (this one would change the machine's)"
            )
            continue
        segs = dotted.split(".")
        if len(segs) > 3 and segs[2] in ("conf", "neigh"):
            segs[3] = "default"  # an interface's own (h1-eth0): the probe has the defaults' entry
        path = "/proc/sys/" + "/".join(segs)
        if sh("ip", "netns", "exec", probe, "test", "-e", path, check=False).returncode != 0:
            problems.append(f"{where}: sysctl {key}: not a per-namespace setting on this kernel (it would "
                            "change the machine's own)")
    return problems
