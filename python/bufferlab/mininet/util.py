"""mininet/util.py's helpers that scripts use."""

from __future__ import annotations

import ipaddress
from typing import Any

from . import clock
from .log import output
from .node import ROOT, Node, Switch


def quietRun(cmd: str | list[str], **kwargs: Any) -> str:  # noqa: N802 (Mininet's names)
    """Run ``cmd`` in the root namespace of the running network; return its output."""
    text = " ".join(cmd) if isinstance(cmd, list) else cmd
    session = clock.current()
    term = session.terminal(ROOT)
    start = len(term.transcript) + 1
    done = session.start_line(ROOT, text)
    session.run_until(lambda: bool(done), text)
    return "".join(term.transcript[start:])


def dumpNodeConnections(nodes: list[Node]) -> None:  # noqa: N802
    """``h1 h1-eth0:s1-eth1`` per node, as Mininet prints it."""
    for node in nodes:
        output(node.name)
        if isinstance(node, Switch):
            output(" lo: ")  # a switch's port 0 is its loopback, listed first by Mininet
        for intf in node.intfList():
            output(f" {intf}:")
            if intf.link is not None:
                other = intf.link.intf2 if intf.link.intf1 is intf else intf.link.intf1
                output(str(other))
            else:
                output(" ")
        output("\n")


def dumpNetConnections(net: Any) -> None:  # noqa: N802
    dumpNodeConnections(net.controllers + net.switches + net.hosts)


def ipStr(ip: int) -> str:  # noqa: N802
    return str(ipaddress.IPv4Address(ip))


def ipParse(ip: str) -> int:  # noqa: N802
    return int(ipaddress.IPv4Address(ip))


def ipAdd(i: int, prefixLen: int = 8, ipBaseNum: int = 0x0A000000) -> str:  # noqa: N802, N803
    """Address ``i`` of the network ``ipBaseNum/prefixLen`` (host number ``i`` from 1)."""
    limit = 0xFFFFFFFF >> prefixLen
    if not 0 <= i <= limit:
        raise ValueError(f"ipAdd({i}): at most {limit} addresses in a /{prefixLen}")
    return ipStr((ipBaseNum & (0xFFFFFFFF ^ limit)) + i)


def netParse(ipstr: str) -> tuple[int, int]:  # noqa: N802
    """``'10.0.0.0/8'`` -> (address as int, prefix length); no prefix means /24 as in Mininet."""
    ip, _, plen = ipstr.partition("/")
    return ipParse(ip), int(plen) if plen else 24


def macColonHex(mac: int) -> str:  # noqa: N802
    return ":".join(f"{(mac >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def fmtBps(bps: float | str, prefix: str = "", fmt: str = "%.1f %sbits/sec") -> str:  # noqa: N802
    """iperf-style rate text (decimal prefixes), as Mininet's iperf() results print."""
    value = float(bps)
    scale = ["", "K", "M", "G", "T", "P"]
    k = scale.index(prefix) if prefix in scale else 0
    if not prefix:
        while k < len(scale) - 1 and value >= 1000 ** (k + 1):
            k += 1
    return fmt % (value / 1000 ** k, scale[k])


def waitListening(client: Any = None, server: Any = "127.0.0.1", port: int = 80,  # noqa: N802
                  timeout: float | None = None) -> bool:
    """True: a server started by an earlier line listens before the next line runs
    (lines run in order at one simulated instant)."""
    return True


def irange(start: int, end: int) -> range:
    return range(start, end + 1)


__all__ = ["quietRun", "dumpNodeConnections", "dumpNetConnections", "ipAdd", "ipStr", "ipParse", "netParse",
           "macColonHex", "fmtBps", "waitListening", "irange"]
