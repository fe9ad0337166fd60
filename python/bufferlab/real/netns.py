"""A scenario's topology as Linux network namespaces, and its removal.

Mininet's layout, in a private tree: host ``hN`` is namespace ``blr<pid>-hN`` with
``hN-eth0`` = 10.0.0.N/8; every switch is a bridge named after it in one
``blr<pid>-admin`` namespace, which also holds the switch ports ``sX-eth<k>`` and
runs the ``admin:`` lines (Mininet's root namespace, here never the machine's).
No interface of the machine's own namespace is created, changed or routed to.

The runner's pid in every name lets the next run remove what a killed one
(``kill -9``) left: :func:`reap_orphans` deletes the namespaces of pids that are
gone, after killing every process still inside them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

from ..scenario.load import Scenario
from ..scenario.topology import BuiltTopology

PREFIX = "blr"
_OURS = re.compile(rf"^{PREFIX}(\d+)-\S+$")

#: a new namespace copies nothing of the machine's TCP settings on this kernel family, but
#: older ones copied init_net's: the kernel's defaults (net/ipv4/tcp.c) set explicitly, as the
#: simulation models them
TCP_DEFAULTS = {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
#: the hosts' default congestion control, first choice first. A new namespace inherits the
#: machine's (which may be bbr), and may only choose one the machine allows
#: (tcp_allowed_congestion_control; reno always): cubic, the kernel's own default, or else
#: reno. It matters even to `iperf3 -C cubic`: iperf3 sets -C after connect(), so the
#: handshake ran the default's init, and bbr's leaves the socket paced (SK_PACING_NEEDED) for
#: good (docs/kernel-oracle.md, "Fidelity matrix")
DEFAULT_CC = ("cubic", "reno")


def sh(*args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=timeout)


def netns_list() -> list[str]:
    out = sh("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def ns_pids(ns: str) -> list[int]:
    out = sh("ip", "netns", "pids", ns, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def _alive(pid: int) -> bool:
    """Whether ``pid`` is still a runner (a Python process; a reused pid is another program)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"python" in f.read()
    except OSError:
        return False


def delete_namespace(ns: str) -> None:
    """Kill what runs inside ``ns`` (a namespace outlives its deletion while a process holds
    it), then delete it; its interfaces go with it (a veth's peer too)."""
    for _ in range(3):
        pids = [p for p in ns_pids(ns) if p != os.getpid()]
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    sh("ip", "netns", "del", ns, check=False)


def reap_orphans() -> list[str]:
    """Namespaces of earlier ``--real`` runs whose runner is gone (killed by SIGKILL):
    removed with their processes. Returns their names."""
    gone = []
    for ns in netns_list():
        m = _OURS.match(ns)
        if m and not _alive(int(m[1])):
            delete_namespace(ns)
            gone.append(ns)
    return gone


@dataclass
class Lab:
    """The namespaces of one run. :meth:`build` makes them, :meth:`teardown` removes
    them and everything started in them (idempotent; called on every exit path)."""

    sc: Scenario
    topo: BuiltTopology
    #: interfaces (engine names, topology.py) whose link is a userspace delay line (delayline.py)
    #: instead of a veth
    piped: set[str] = field(default_factory=set)
    namespaces: list[str] = field(default_factory=list)
    #: processes started in the namespaces, each the leader of its own process group
    procs: list[subprocess.Popen] = field(default_factory=list)
    #: the delay lines: interface -> (its process, the end this interface is: "a" or "b")
    pipes: dict[str, tuple[subprocess.Popen, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tag = f"{PREFIX}{os.getpid()}"
        #: what the run should tell about how the hosts were set up
        self.notes: list[str] = []
        #: engine name (unique: ``h1/eth0`` where two hosts name theirs eth0) -> interface
        self.ifaces = {i.engine_name: i for i in self.topo.interfaces}

    def ns(self, terminal: str) -> str:
        """The namespace a terminal's lines run in: a host's own, or admin (switches too)."""
        kind = self.topo.node_kinds.get(terminal)
        return f"{self.tag}-{terminal}" if kind == "host" else f"{self.tag}-admin"

    def ns_of_dev(self, dev: str) -> str:
        """The namespace of the interface named ``dev`` in the engine's terms."""
        i = self.ifaces.get(dev)
        return self.ns(i.node) if i else self.ns("admin")

    def name_of(self, dev: str) -> str:
        """An interface's own name in its namespace (``eth0`` for ``h1/eth0``)."""
        i = self.ifaces.get(dev)
        return i.name if i else dev

    def exec_argv(self, terminal: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns(terminal), *argv]

    def _add_ns(self, name: str) -> None:
        sh("ip", "netns", "add", name)
        self.namespaces.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")

    def build(self) -> None:
        admin = self.ns("admin")
        self._add_ns(admin)
        for h in self.sc.hosts:
            self._add_ns(self.ns(h))
            for key, value in TCP_DEFAULTS.items():
                sh("ip", "netns", "exec", self.ns(h), "sysctl", "-q", "-w", f"{key}={value}")
            self._default_cc(self.ns(h))
        for s in self.sc.switches:
            # a switch forwards at once (no STP learning delay), as Open vSwitch in Mininet
            sh("ip", "-n", admin, "link", "add", s, "type", "bridge", "stp_state", "0", "forward_delay", "0")
            sh("ip", "-n", admin, "link", "set", s, "up")
        for link in self.topo.engine_config["links"]:
            a, b = link["a"], link["b"]
            self._link(a, b)
        for i in self.topo.interfaces:
            ns = self.ns(i.node)
            if i.ip:
                sh("ip", "-n", ns, "addr", "add", i.ip if "/" in i.ip else f"{i.ip}/8", "dev", i.name)
            if self.topo.node_kinds[i.node] == "switch":
                sh("ip", "-n", ns, "link", "set", i.name, "master", i.node)
            sh("ip", "-n", ns, "link", "set", i.name, "up")

    def _default_cc(self, ns: str) -> None:
        """The host's default congestion control: :data:`DEFAULT_CC`'s first the machine
        allows a namespace (a note says which when it is not cubic)."""
        key = "net.ipv4.tcp_congestion_control"
        for cc in DEFAULT_CC:
            chosen = sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", f"{key}={cc}", check=False)
            if chosen.returncode == 0:
                break
        else:
            cc = sh("ip", "netns", "exec", ns, "sysctl", "-n", key).stdout.strip()
        if cc != DEFAULT_CC[0]:
            note = (f"this machine does not let a namespace choose {DEFAULT_CC[0]} as its default "
                    f"congestion control (net.ipv4.tcp_allowed_congestion_control): the hosts' "
                    f"default is {cc}; iperf3 -C still selects any installed one")
            if note not in self.notes:
                self.notes.append(note)

    def _link(self, a: dict, b: dict) -> None:
        na, nb = self.ns_of_dev(a["intf"]), self.ns_of_dev(b["intf"])
        da, db = self.name_of(a["intf"]), self.name_of(b["intf"])
        if a["intf"] in self.piped or b["intf"] in self.piped:
            for ns, dev in ((na, da), (nb, db)):
                sh("ip", "-n", ns, "tuntap", "add", "dev", dev, "mode", "tap")
            proc = subprocess.Popen(
                [sys.executable, "-m", "bufferlab.real.delayline", na, da, nb, db],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True)
            self.procs.append(proc)
            ready = proc.stdout.readline() if proc.stdout else ""
            if ready.strip() != "ready":
                raise RuntimeError(f"the delay line between {da} and {db} did not start")
            self.pipes[a["intf"]] = (proc, "a")
            self.pipes[b["intf"]] = (proc, "b")
            return
        sh("ip", "-n", na, "link", "add", da, "type", "veth", "peer", "name", db, "netns", nb)

    def set_delay(self, dev: str, seconds: float) -> None:
        """``netem delay`` on ``dev``: frames leaving it wait this long in its delay line."""
        proc, end = self.pipes[dev]
        assert proc.stdin is not None
        proc.stdin.write(f"{end} {seconds!r}\n")
        proc.stdin.flush()

    def teardown(self) -> None:
        """Stop every process (Ctrl-C first, so tools end as a student's would; then SIGKILL),
        then delete the namespaces with whatever still runs inside them."""
        live = [p for p in self.procs if p.poll() is None]
        for p in live:
            _signal_group(p, signal.SIGINT)
        end = time.monotonic() + 1.0
        while time.monotonic() < end and any(p.poll() is None for p in live):
            time.sleep(0.02)
        for p in self.procs:
            _signal_group(p, signal.SIGKILL)
            try:
                p.wait(timeout=2)
            except subprocess.TimeoutExpired:
                pass
        for ns in reversed(self.namespaces):
            delete_namespace(ns)
        left = [ns for ns in self.namespaces if ns in netns_list()]
        self.namespaces = left
        self.procs = []

    def leftovers(self) -> list[str]:
        return [ns for ns in netns_list() if ns.startswith(self.tag + "-")]


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    """Signal the process group ``p`` leads (its children too: a tool's helpers)."""
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
