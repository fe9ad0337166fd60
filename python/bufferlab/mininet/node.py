"""mininet/node.py's classes in simulated time.

A host's ``cmd`` types one line into its shell (the host's terminal in the results
folder) and returns what it printed once it ends in simulated time; switches and
controllers live in the root namespace (the ``admin`` terminal of a scenario)."""

from __future__ import annotations

import shlex
from typing import Any

from . import clock
from .log import output
from .session import MininetError, Session

#: the scenario runner's terminal for the root namespace
ROOT = "admin"


class Intf:
    """One interface: ``hN-ethK``/``sX-ethK`` named as Mininet names them."""

    def __init__(self, name: str, node: Node, port: int | None = None, link: Any = None,
                 mac: str | None = None, **params: Any) -> None:
        self.name = name
        self.node = node
        self.link = link
        self.mac = mac
        self.ip: str | None = None
        self.prefixLen: int | None = None
        self.params = params
        node.addIntf(self, port)

    def IP(self) -> str | None:  # noqa: N802 (Mininet's names, here and below)
        return self.ip

    def MAC(self) -> str | None:  # noqa: N802
        return self.mac

    def setIP(self, ip: str, prefixLen: int | None = None) -> None:  # noqa: N802, N803
        if "/" in ip:
            ip, plen = ip.split("/", 1)
            prefixLen = int(plen)
        self.ip, self.prefixLen = ip, prefixLen

    def config(self, **params: Any) -> dict[str, Any]:
        return {}

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class Popen:
    """What ``node.popen()`` returns: subprocess.Popen's interface over a simulated line."""

    def __init__(self, node: Node, text: str) -> None:
        self.node, self.args = node, text
        session = node.session()
        self._session = session
        self._term = session.new_terminal(node.shell)
        self._done = session.start_line(node.shell, text, term=self._term, foreground=False)
        self.pid = session.next_pid()
        self.stdout = _Stream(self)
        self.stderr = _Stream(self, empty=True)

    @property
    def returncode(self) -> int | None:
        return self._done[0] if self._done else None

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._session.run_until(lambda: bool(self._done), f"{self.node.name}: {self.args}")
        return self._done[0]

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[str, str]:
        if input is not None:
            raise MininetError(f"popen({self.args!r}).communicate(input=...): stdin is not supported yet")
        self.wait()
        return self.stdout.read(), ""

    def terminate(self) -> None:
        self._session.interrupt_terminal(self._term)

    kill = terminate

    def output_so_far(self) -> str:
        return "".join(t for t in self._term.transcript[1:])


class _Stream:
    """``Popen.stdout``: reading waits (in simulated time) for the line to end."""

    def __init__(self, proc: Popen, empty: bool = False) -> None:
        self.proc, self.empty, self.pos = proc, empty, 0

    def read(self) -> str:
        if self.empty:
            return ""
        self.proc.wait()
        text = self.proc.output_so_far()[self.pos:]
        self.pos += len(text)
        return text

    def readline(self) -> str:
        if self.empty:
            return ""
        while True:
            text = self.proc.output_so_far()[self.pos:]
            if "\n" in text or self.proc.poll() is not None:
                line = text[: text.index("\n") + 1] if "\n" in text else text
                self.pos += len(line)
                return line
            self.proc._session.run_until(
                lambda: "\n" in self.proc.output_so_far()[self.pos:] or self.proc.poll() is not None,
                f"{self.proc.node.name}: {self.proc.args}")

    def __iter__(self) -> Any:
        while line := self.readline():
            yield line

    def close(self) -> None:
        pass


class Node:
    """A network namespace with a shell; ``cmd`` runs one line in simulated time."""

    #: the terminal a line typed on this node runs in (hosts: their own; switches: root)
    in_namespace = True

    def __init__(self, name: str, inNamespace: bool = True, **params: Any) -> None:  # noqa: N803
        if not isinstance(name, str) or not name:
            raise MininetError(f"node name {name!r}: expected a non-empty string such as 'h1'")
        self.name = name
        self.params = params
        self.intfs: dict[int, Intf] = {}
        self.ports: dict[Intf, int] = {}
        self.nameToIntf: dict[str, Intf] = {}
        self.net: Any = None
        self._pending: list[int] | None = None
        self._read = 0
        #: exit status of the last line ``cmd`` ran (bash's ``$?``)
        self.status = 0
        #: a process id for dump (each node is one shell in Mininet); set when the network starts
        self.pid = 0

    @property
    def shell(self) -> str:
        return self.name if self.in_namespace else ROOT

    def session(self) -> Session:
        return clock.current()

    # ------------------------------------------------------------ interfaces

    def newPort(self) -> int:  # noqa: N802
        return max(self.intfs) + 1 if self.intfs else 0

    def addIntf(self, intf: Intf, port: int | None = None) -> None:  # noqa: N802
        port = self.newPort() if port is None else port
        self.intfs[port] = intf
        self.ports[intf] = port
        self.nameToIntf[intf.name] = intf

    def intfList(self) -> list[Intf]:  # noqa: N802
        return [self.intfs[p] for p in sorted(self.intfs)]

    def intfNames(self) -> list[str]:  # noqa: N802
        return [i.name for i in self.intfList()]

    def defaultIntf(self) -> Intf | None:  # noqa: N802
        ports = self.intfList()
        return ports[0] if ports else None

    def intf(self, intf: str | Intf | None = None) -> Intf | None:
        if intf is None:
            return self.defaultIntf()
        if isinstance(intf, Intf):
            return intf
        if intf not in self.nameToIntf:
            raise MininetError(f"{self.name} has no interface {intf!r}; it has "
                               f"{', '.join(self.intfNames()) or 'none'}")
        return self.nameToIntf[intf]

    def connectionsTo(self, node: Node) -> list[tuple[Intf, Intf]]:  # noqa: N802
        out = []
        for i in self.intfList():
            link = i.link
            if link is not None:
                for a, b in ((link.intf1, link.intf2), (link.intf2, link.intf1)):
                    if a is i and b.node is node:
                        out.append((a, b))
        return out

    def IP(self, intf: str | Intf | None = None) -> str | None:  # noqa: N802
        i = self.intf(intf)
        return i.IP() if i is not None else self.params.get("ip", "").split("/")[0] or None

    def MAC(self, intf: str | Intf | None = None) -> str | None:  # noqa: N802
        i = self.intf(intf)
        return i.MAC() if i is not None else None

    def setIP(self, ip: str, prefixLen: int = 8, intf: str | Intf | None = None) -> None:  # noqa: N802, N803
        if self.net is not None and self.net.started:
            raise MininetError(f"{self.name}.setIP() after net.start() is not supported yet")
        i = self.intf(intf)
        if i is not None:
            i.setIP(ip, prefixLen)

    # ------------------------------------------------------------ shell

    def _text(self, args: tuple[Any, ...]) -> str:
        if len(args) == 1 and isinstance(args[0], list):
            return shlex.join(str(a) for a in args[0])
        return " ".join(str(a) for a in args)

    def cmd(self, *args: Any, **kwargs: Any) -> str:
        """Run one shell line; return its output once it ends in simulated time."""
        self.sendCmd(*args, **kwargs)
        return self.waitOutput()

    def cmdPrint(self, *args: Any) -> str:  # noqa: N802
        out = self.cmd(*args)
        output(out)
        return out

    def sendCmd(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        if self._pending is not None and not self._pending:
            raise MininetError(f"{self.name}: sendCmd while the previous command still runs; "
                               "call waitOutput() first")
        text = self._text(args)
        if not text.strip():
            raise MininetError(f"{self.name}.cmd(): empty command line")
        session = self.session()
        self._text_now = text
        self._read = len(session.terminal(self.shell).transcript) + 1  # after the "$ line" echo
        self._pending = session.start_line(self.shell, text)

    @property
    def waiting(self) -> bool:
        return self._pending is not None and not self._pending

    def _new_output(self) -> str:
        transcript = self.session().terminal(self.shell).transcript
        text = "".join(transcript[self._read:])
        self._read = len(transcript)
        return text

    def waitOutput(self, verbose: bool = False, findPid: bool = True) -> str:  # noqa: N802, N803
        if self._pending is None:
            return ""
        pending = self._pending
        self.session().run_until(lambda: bool(pending), f"{self.name}: {self._text_now}")
        self.status = pending[0]
        self._pending = None
        return self._new_output()

    def monitor(self, timeoutms: float | None = None, findPid: bool = True) -> str:  # noqa: N803
        """Output so far; waits up to ``timeoutms`` of simulated time for the line to end."""
        session = self.session()
        if self._pending is not None and not self._pending:
            if timeoutms is None:
                self.waitOutput()
            else:
                end = session.engine.now_ns + int(timeoutms * 1_000_000)
                pending = self._pending
                session.run_until_or(lambda: bool(pending), end)
        if self._pending:
            self._pending = None
        return self._new_output()

    def sendInt(self, intr: str = "\x03") -> None:  # noqa: N802
        self.session().interrupt(self.shell)

    def popen(self, *args: Any, **kwargs: Any) -> Popen:
        return Popen(self, self._text(args))

    def pexec(self, *args: Any, **kwargs: Any) -> tuple[str, str, int]:
        p = self.popen(*args, **kwargs)
        out, err = p.communicate()
        return out, err, p.wait()

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        intfs = ",".join(f"{i.name}:{i.IP()}" for i in self.intfList())
        return f"<{type(self).__name__} {self.name}: {intfs} pid={self.pid}>"


class Host(Node):
    pass


class CPULimitedHost(Host):
    """Accepted; CPU limits are not modelled (every host computes instantly, docs/mininet.md)."""

    def setCPUFrac(self, f: float, sched: str | None = None) -> None:  # noqa: N802
        self.params["cpu"] = f


class Switch(Node):
    in_namespace = False
    dpid: str | None = None

    def __init__(self, name: str, dpid: str | None = None, **params: Any) -> None:
        super().__init__(name, **params)
        self.dpid = dpid

    def newPort(self) -> int:  # noqa: N802 (port 0 is the switch's own loopback in Mininet)
        return max(self.intfs) + 1 if self.intfs else 1

    def start(self, controllers: list[Any]) -> None:
        pass

    def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803
        pass


class OVSSwitch(Switch):
    """Accepted: every switch is a learning L2 switch (the scenario's switches)."""


OVSKernelSwitch = OVSSwitch
OVSBridge = OVSSwitch
UserSwitch = OVSSwitch


class Controller(Node):
    """Accepted; the switches learn on their own (no OpenFlow is modelled)."""

    in_namespace = False

    def __init__(self, name: str = "c0", **params: Any) -> None:
        super().__init__(name, **params)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass


class DefaultController(Controller):
    pass


OVSController = DefaultController

__all__ = ["Node", "Host", "CPULimitedHost", "Switch", "OVSSwitch", "OVSKernelSwitch", "OVSBridge",
           "UserSwitch", "Controller", "DefaultController", "OVSController", "Intf", "Popen"]
