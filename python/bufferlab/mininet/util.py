"""mininet/util.py's interface that scripts use: ``quietRun``, ``dumpNodeConnections``,
``ipAdd``, ``ipStr``, ``macColonHex``, ``irange``, ``natural``, ``custom``, and the
``Popen`` object ``Node.popen`` returns."""

from __future__ import annotations

import re
import subprocess
from functools import partial
from typing import Any

from . import clock
from .log import output
from .session import Job, MininetError, Session


def ipStr(ip: int) -> str:  # noqa: N802
    return ".".join(str((ip >> s) & 0xFF) for s in (24, 16, 8, 0))


def ipNum(w: int, x: int, y: int, z: int) -> int:  # noqa: N802
    return (w << 24) | (x << 16) | (y << 8) | z


def ipParse(ip: str) -> int:  # noqa: N802
    return ipNum(*(int(p) for p in ip.split(".")))


def ipAdd(i: int, prefixLen: int = 8, ipBaseNum: int = 0x0A000000) -> str:  # noqa: N802, N803
    """Address number ``i`` of the subnet ``ipBaseNum/prefixLen`` (Mininet's host numbering)."""
    imax = 0xFFFFFFFF >> prefixLen
    if not 0 <= i <= imax:
        raise MininetError(f"ipAdd({i}): not enough addresses in a /{prefixLen} (at most {imax})")
    mask = 0xFFFFFFFF ^ imax
    return ipStr((ipBaseNum & mask) + i)


def netParse(ipstr: str) -> tuple[int, int]:  # noqa: N802
    ip, _, prefix = ipstr.partition("/")
    return ipParse(ip), int(prefix) if prefix else 24


def macColonHex(mac: int) -> str:  # noqa: N802
    return ":".join(f"{(mac >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def irange(start: int, end: int) -> range:
    """Mininet's inclusive range."""
    return range(start, end + 1)


def natural(text: str) -> list[Any]:
    """A sort key that orders h2 before h10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(text))]


def naturalSeq(t: Any) -> list[Any]:  # noqa: N802
    return [natural(x) for x in t]


def custom(cls: Any, **params: Any) -> Any:
    """A constructor of ``cls`` with ``params`` as defaults (``custom(TCLink, bw=10)``)."""
    return partial(cls, **params)


def dumpNodeConnections(nodes: Any) -> None:  # noqa: N802
    """For each node, its interfaces and what each connects to (``h1 h1-eth0:s1-eth1``)."""
    for node in nodes:
        output(node.name)
        for intf in node.intfList():
            output(f" {intf}:")
            link = intf.link
            if link is not None:
                output(str(link.intf2 if link.intf1 is intf else link.intf1))
            else:
                output(" ")
        output("\n")


def dumpNetConnections(net: Any) -> None:  # noqa: N802
    dumpNodeConnections(net.controllers + net.switches + net.hosts)


def quietRun(cmd: str | list[str], **kwargs: Any) -> str:  # noqa: N802
    """Run ``cmd`` in the simulation's root namespace (the ``admin`` terminal) and return its output."""
    if not clock._current:
        raise MininetError(f"quietRun({cmd!r}): no network is running; start one with net.start() first")
    line = " ".join(cmd) if isinstance(cmd, list) else cmd
    job = clock._current[0].start("admin", line)
    job.wait()
    return job.output()


class Popen:
    """``subprocess.Popen``'s interface over a line running in the simulation."""

    def __init__(self, session: Session, terminal: str, line: str, stdout: Any = None, stderr: Any = None,
                 text: bool | None = None, universal_newlines: bool | None = None,
                 encoding: str | None = None, shell: bool = False, **_kwargs: Any) -> None:
        self.args = line
        self._text = bool(text or universal_newlines or encoding)
        self._job: Job = session.start(terminal, line, background=True)
        self._read = 0
        self.stdout = _Stream(self)
        self.stderr = _Stream(self, empty=True)

    @property
    def returncode(self) -> int | None:
        return self._job.status

    def poll(self) -> int | None:
        return self._job.status

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            return self._job.wait()
        self._job.session.run_until(lambda: self._job.done, timeout, self.args, fail=False)
        if not self._job.done:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self._job.status  # type: ignore[return-value]

    def communicate(self, input: Any = None, timeout: float | None = None) -> tuple[Any, Any]:  # noqa: A002
        self.wait(timeout)
        return self._take(), (b"" if not self._text else "")

    def _take(self) -> Any:
        text = self._job.output()[self._read:]
        self._read += len(text)
        return text if self._text else text.encode()

    def terminate(self) -> None:
        """As Ctrl-C: the tool prints what it prints then (ping its statistics)."""
        if not self._job.done:
            self._job.interrupt()

    @property
    def pid(self) -> int:
        """The PID of the process the line runs (run/procs.py: deterministic per node)."""
        procs = self._procs()
        return procs[0].pid if procs else 0

    def _procs(self) -> list[Any]:
        table = self._job.session.runner.procs
        return [p for p in table.procs.values() if p.owner is self._job.owner]

    def kill(self) -> None:
        """SIGKILL: the tool ends with nothing printed."""
        self.send_signal(9)

    def send_signal(self, sig: int) -> None:
        """The signal reaches the line's process as it reaches the real tool (SIGINT: as
        Ctrl-C; SIGTERM: iperf3 prints its summary, ping ends silently; see run/procs.py)."""
        if sig == 2:
            self.terminate()
            return
        s = self._job.session
        for p in self._procs():
            s.runner.procs.deliver(p, int(sig), s.runner.engine, s.sched)
        s.sched.drain()


class _Stream:
    """``proc.stdout``: read what the line printed so far."""

    def __init__(self, proc: Popen, empty: bool = False) -> None:
        self.proc, self.empty = proc, empty

    def read(self, n: int = -1) -> Any:
        if self.empty:
            return "" if self.proc._text else b""
        self.proc.wait()
        return self.proc._take()

    def readline(self) -> Any:
        if self.empty:
            return "" if self.proc._text else b""
        self.proc.wait()
        data = self.proc._job.output()[self.proc._read:]
        line = data[:data.index("\n") + 1] if "\n" in data else data
        self.proc._read += len(line)
        return line if self.proc._text else line.encode()

    def close(self) -> None:
        pass


def unitScale(num: float, prefix: str = "") -> tuple[str, float]:  # noqa: N802
    """The SI prefix and factor of a rate, as mininet/util.py picks them (``prefix`` forces one)."""
    scale = "kMGTP"
    if prefix:
        pos = scale.lower().find(prefix.lower())
        if pos < 0:
            raise MininetError(f"unit prefix {prefix!r}: expected one of k, M, G, T, P")
        return prefix, float(10 ** (3 * (pos + 1)))
    num, unit, factor = float(num), "", 1
    for i, c in enumerate(scale, start=1):
        if num < 10 ** (3 * i):
            break
        unit, factor = c, 10 ** (3 * i)
    return unit, float(factor)


def fmtBps(bps: float, prefix: str = "", fmt: str = "%.1f %sbits/sec") -> str:  # noqa: N802
    """A rate in iperf's style (``fmtBps(9570000)`` is ``'9.6 Mbits/sec'``)."""
    unit, factor = unitScale(bps, prefix)
    return fmt % (float(bps) / factor, unit)


__all__ = ["unitScale", "fmtBps", "ipStr", "ipNum", "ipParse", "ipAdd", "netParse", "macColonHex", "irange",
           "natural", "naturalSeq", "custom", "dumpNodeConnections", "dumpNetConnections", "quietRun",
           "Popen"]
