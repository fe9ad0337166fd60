"""mininet/node.py's interface: ``Node``, ``Host``, ``CPULimitedHost``, switches, controllers.

A host's ``cmd`` types one shell line into its terminal in the simulation
(session.py) and returns what it printed once it ends in simulated time; a
line ending in ``&`` returns at once. Switches live in the root namespace, as
in Mininet: their lines run in the ``admin`` terminal.
"""

from __future__ import annotations

import re
from typing import Any

from .log import output
from .session import Job, MininetError
from .util import Popen

#: an interface (link.py's Intf; link.py imports this module, so not named here)
Intf = Any


class Node:
    #: switch ports start at 1 (port 0 is the switch itself in OpenFlow), host ports at 0
    portBase = 0  # noqa: N815 (Mininet's name)

    def __init__(self, name: str, inNamespace: bool = True, **params: Any) -> None:  # noqa: N803
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise MininetError(f"node name {name!r}: expected a letter followed by letters, digits or _ "
                               "(e.g. 'h1')")
        self.name = name
        self.params = params
        self.intfs: dict[int, Intf] = {}
        self.ports: dict[Intf, int] = {}
        self.nameToIntf: dict[str, Intf] = {}  # noqa: N815
        #: the Mininet network the node belongs to (net.py)
        self.net: Any = None
        self.waiting = False
        self._job: Job | None = None
        self._read = 0
        self.pid = 0
        #: the PID of the last line started with `&` (Mininet reads it from $!)
        self.lastPid: int | None = None  # noqa: N815

    # ------------------------------------------------------------ interfaces

    def newPort(self) -> int:  # noqa: N802
        return max(self.intfs) + 1 if self.intfs else self.portBase

    def addIntf(self, intf: Intf, port: int | None = None) -> None:  # noqa: N802
        if port is None:
            port = self.newPort()
        self.intfs[port] = intf
        self.ports[intf] = port
        self.nameToIntf[intf.name] = intf

    def intfList(self) -> list[Intf]:  # noqa: N802
        return [self.intfs[p] for p in sorted(self.intfs)]

    def intfNames(self) -> list[str]:  # noqa: N802
        return [i.name for i in self.intfList()]

    def defaultIntf(self) -> Intf | None:  # noqa: N802
        ports = sorted(self.intfs)
        return self.intfs[ports[0]] if ports else None

    def intf(self, intf: str | Intf | None = None) -> Intf | None:
        if intf is None:
            return self.defaultIntf()
        if isinstance(intf, str):
            if intf not in self.nameToIntf:
                raise MininetError(f"{self.name} has no interface {intf!r}; "
                                   f"it has {', '.join(self.nameToIntf)}")
            return self.nameToIntf[intf]
        return intf

    def connectionsTo(self, node: Node) -> list[tuple[Intf, Intf]]:  # noqa: N802
        out = []
        for intf in self.intfList():
            link = intf.link
            if link is not None:
                other = link.intf2 if link.intf1 is intf else link.intf1
                if other.node is node:
                    out.append((intf, other))
        return out

    def IP(self, intf: str | Intf | None = None) -> str | None:  # noqa: N802
        i = self.intf(intf)
        return i.IP() if i is not None else None

    def MAC(self, intf: str | Intf | None = None) -> str | None:  # noqa: N802
        i = self.intf(intf)
        return i.MAC() if i is not None else None

    def setIP(self, ip: str, prefixLen: int = 8, intf: str | Intf | None = None) -> None:  # noqa: N802, N803
        raise MininetError(f"{self.name}.setIP({ip!r}): addresses are fixed when the network is built; "
                           "give addHost(..., ip='A.B.C.D/N') instead (changing them later is not "
                           "supported yet)")

    # ------------------------------------------------------------ commands

    @property
    def terminal(self) -> str:
        return self.name

    def _session(self) -> Any:
        if self.net is None or self.net.session is None:
            raise MininetError(f"{self.name}: the network is not started; call net.start() before running "
                               "commands")
        return self.net.session

    def sendCmd(self, *args: Any, **kwargs: Any) -> None:  # noqa: N802
        """Start a line without waiting for it (read its output with waitOutput/monitor)."""
        if self.waiting:
            raise MininetError(f"{self.name}: sendCmd while a command still runs; call waitOutput() first")
        line = _line(args)
        self._job = self._session().start(self.terminal, line)
        self._read = 0
        self.waiting = True
        if line.rstrip().endswith("&"):
            self.lastPid = self._session().runner.procs.shell(self.terminal).last_background

    def waitOutput(self, verbose: bool = False, findPid: bool = True) -> str:  # noqa: N802, N803
        if self._job is None:
            return ""
        self._job.wait()
        out = self._job.output()[self._read:]
        self._job, self.waiting = None, False
        if verbose:
            output(out)
        return out

    def sendInt(self) -> None:  # noqa: N802
        """Ctrl-C the line started with sendCmd (it prints what the tool prints then)."""
        if self._job is not None and not self._job.done:
            self._job.interrupt()

    def monitor(self, timeoutms: int | None = None, findPid: bool = True) -> str:  # noqa: N803
        """What the running line printed since the last read, after at most ``timeoutms`` ms."""
        if self._job is None:
            return ""
        if timeoutms is not None:
            self._session().run_until(lambda: self._job is None or self._job.done, timeoutms / 1000,
                                      self.name, fail=False)
        job = self._job
        text = job.output()[self._read:]
        self._read += len(text)
        if job.done:
            self._job, self.waiting = None, False
        return text

    def cmd(self, *args: Any, **kwargs: Any) -> str:
        """Run one shell line; its output once it ends (at once for a line ending in ``&``)."""
        verbose = kwargs.pop("verbose", False)
        if kwargs:
            raise MininetError(f"{self.name}.cmd: keyword argument(s) {', '.join(kwargs)} are not supported")
        self.sendCmd(*args)
        return self.waitOutput(verbose)

    def cmdPrint(self, *args: Any) -> str:  # noqa: N802
        return self.cmd(*args, verbose=True)

    def popen(self, *args: Any, **kwargs: Any) -> Any:
        return Popen(self._session(), self.terminal, _line(args), **kwargs)

    def pexec(self, *args: Any, **kwargs: Any) -> tuple[str, str, int]:
        job = self._session().start(self.terminal, _line(args))
        status = job.wait()
        return job.output(), "", status

    def config(self, **params: Any) -> dict[str, Any]:
        return {}

    def terminate(self) -> None:
        pass

    def stop(self, deleteIntfs: bool = False) -> None:  # noqa: N803
        pass

    def __repr__(self) -> str:
        intfs = ",".join(f"{i.name}:{i.IP()}" for i in self.intfList())
        return f"<{type(self).__name__} {self.name}: {intfs} pid={self.pid}> "

    def __str__(self) -> str:
        return self.name


def _line(args: tuple[Any, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    if not args:
        raise MininetError("cmd(): expected a shell line, e.g. h1.cmd('ping -c 3 10.0.0.2')")
    return " ".join(str(a) for a in args)


class Host(Node):
    pass


class CPULimitedHost(Host):
    """Accepted for compatibility: CPU limits (``cpu=``, ``setCPUFrac``) are not modelled."""

    def setCPUFrac(self, f: float, sched: str | None = None) -> None:  # noqa: N802
        pass

    def setCPUs(self, cores: Any = None, mems: int = 0) -> None:  # noqa: N802
        pass


class Switch(Node):
    portBase = 1

    def __init__(self, name: str, dpid: str | None = None, opts: str = "", listenPort: int | None = None,  # noqa: N803
                 **params: Any) -> None:
        super().__init__(name, **params)
        self.dpid = dpid

    @property
    def terminal(self) -> str:
        return "admin"

    def start(self, controllers: list[Controller]) -> None:
        pass

    def connected(self) -> bool:
        return True


class OVSSwitch(Switch):
    pass


OVSKernelSwitch = OVSSwitch


class UserSwitch(Switch):
    pass


class OVSBridge(OVSSwitch):
    pass


class Controller(Node):
    """Accepted: bufferlab's switches learn like a standalone bridge, no OpenFlow controller runs."""

    def __init__(self, name: str, inNamespace: bool = False, command: str = "controller",  # noqa: N803
                 cargs: str = "", cdir: str | None = None, ip: str = "127.0.0.1", port: int = 6653,
                 protocol: str = "tcp", **params: Any) -> None:
        super().__init__(name, **params)
        self.ip, self.port, self.protocol = ip, port, protocol

    def start(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}: {self.ip}:{self.port} pid={self.pid}> "


class OVSController(Controller):
    pass


class NOX(Controller):
    pass


class RemoteController(Controller):
    pass


def DefaultController(name: str, **kwargs: Any) -> Controller:  # noqa: N802 (Mininet's name)
    return Controller(name, **kwargs)


__all__ = ["Node", "Host", "CPULimitedHost", "Switch", "OVSSwitch", "OVSKernelSwitch", "UserSwitch",
           "OVSBridge", "Controller", "OVSController", "NOX", "RemoteController", "DefaultController"]
