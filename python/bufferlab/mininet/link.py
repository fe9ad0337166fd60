"""mininet/link.py's interface: ``Intf``, ``TCIntf``, ``Link``, ``TCLink``.

``TCIntf.config`` types the tc lines Mininet's own ``TCIntf.config`` runs
(checked against mininet/link.py, ``bwCmds`` and ``delayCmds``), on the
interface's node, through the same tc parser as a scenario line; see
docs/mininet.md for the lines each option gives. Whitespace is collapsed
(Mininet's templates leave double spaces that tc ignores).
"""

from __future__ import annotations

from typing import Any

from .log import error, info
from .node import Node
from .session import MininetError

#: Mininet's TCIntf.bwParamMax: shaping above 1000 Mbit/s is skipped with an error message
BW_PARAM_MAX = 1000


class Intf:
    def __init__(self, name: str, node: Node, port: int | None = None, link: Link | None = None,
                 mac: str | None = None, **params: Any) -> None:
        self.name = name
        self.node = node
        self.port = port
        self.link = link
        self.mac = mac
        self.ip: str | None = None
        self.prefixLen: int | None = None  # noqa: N815 (Mininet's name)
        self.params = params
        node.addIntf(self, port)

    def cmd(self, *args: Any, **kwargs: Any) -> str:
        return self.node.cmd(*args, **kwargs)

    def IP(self) -> str | None:  # noqa: N802
        return self.ip

    def MAC(self) -> str | None:  # noqa: N802
        return self.mac

    def isUp(self, setUp: bool = False) -> bool:  # noqa: N802, N803
        return True

    def config(self, **params: Any) -> dict[str, Any] | None:
        unknown = sorted(k for k in params if k not in ("mac", "ip", "up", "ifconfig"))
        if unknown:
            raise MininetError(f"{self.name}: link option(s) {', '.join(unknown)} are not supported "
                               "by a plain Link; use link=TCLink for bw/delay/loss/max_queue_size")
        return {}

    def status(self) -> str:
        return "OK"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    def __str__(self) -> str:
        return self.name


def _number(name: str, value: Any, intf: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MininetError(f"{intf}: {name}={value!r}: expected a number "
                           f"(e.g. {name}=10{' for 10 Mbit/s' if name == 'bw' else ''})")
    return float(value)


def tc_lines(intf: str, bw: Any = None, delay: Any = None, jitter: Any = None, loss: Any = None,
             speedup: float = 0, use_hfsc: bool = False, use_tbf: bool = False,
             latency_ms: Any = None, enable_ecn: bool = False, enable_red: bool = False,
             max_queue_size: Any = None, node_name: str = "", show: str = "") -> list[str]:
    """The tc command lines Mininet's TCIntf.config runs on ``intf`` (``show``: what
    ``tc qdisc show dev INTF`` printed before, to decide whether to delete the root)."""
    if bw is not None:
        bw = _number("bw", bw, intf)
    speedup = _number("speedup", speedup, intf)
    if loss is not None:
        loss = _number("loss", loss, intf)
    if max_queue_size is not None:
        if isinstance(max_queue_size, bool) or not isinstance(max_queue_size, int) or max_queue_size < 0:
            raise MininetError(f"{intf}: max_queue_size={max_queue_size!r}: expected a packet count "
                               "(a non-negative integer, e.g. max_queue_size=100)")
    for name, value in (("delay", delay), ("jitter", jitter)):
        if value is not None and not isinstance(value, str):
            raise MininetError(f"{intf}: {name}={value!r}: expected a string with a unit, e.g. {name}='5ms'")
    if bw is None and not delay and not loss and max_queue_size is None:
        return []
    lines = [] if "priomap" in show or "noqueue" in show else [f"tc qdisc del dev {intf} root"]
    parent = "root"
    if bw and (bw < 0 or bw > BW_PARAM_MAX):
        error("Bandwidth limit", bw, f"is outside supported range 0..{BW_PARAM_MAX}", "- ignoring\n")
    elif bw is not None:
        if speedup > 0 and node_name[:1] == "s":
            bw = float(speedup)
        if use_hfsc:
            lines += [f"tc qdisc add dev {intf} root handle 5:0 hfsc default 1",
                      f"tc class add dev {intf} parent 5:0 classid 5:1 hfsc sc rate {bw:f}Mbit "
                      f"ul rate {bw:f}Mbit"]
        elif use_tbf:
            latency = 15.0 * 8 / bw if latency_ms is None else _number("latency_ms", latency_ms, intf)
            lines.append(f"tc qdisc add dev {intf} root handle 5: tbf rate {bw:f}Mbit burst 15000 "
                         f"latency {latency:f}ms")
        else:
            lines += [f"tc qdisc add dev {intf} root handle 5:0 htb default 1",
                      f"tc class add dev {intf} parent 5:0 classid 5:1 htb rate {bw:f}Mbit burst 15k"]
        parent = "parent 5:1"
        if enable_ecn or enable_red:
            lines.append(f"tc qdisc add dev {intf} {parent} handle 6: red limit 1000000 min 30000 max 35000 "
                         f"avpkt 1500 burst 20 bandwidth {bw:f}mbit probability 1"
                         + (" ecn" if enable_ecn else ""))
            parent = "parent 6:"
    if loss and (loss < 0 or loss > 100):
        error("Bad loss percentage", loss, "%%\n")
        return lines
    netem = " ".join(
        ([f"delay {delay}"] if delay is not None else [])
        + ([jitter] if jitter is not None else [])
        + ([f"loss {loss:.5f}"] if loss is not None and loss > 0 else [])
        + ([f"limit {max_queue_size:d}"] if max_queue_size is not None else [])
    )
    if netem:
        lines.append(f"tc qdisc add dev {intf} {parent} handle 10: netem {netem}")
    return lines


class TCIntf(Intf):
    """An interface shaped by tc as Mininet's TCIntf shapes it."""

    def config(self, bw: Any = None, delay: Any = None, jitter: Any = None, loss: Any = None,
               gro: bool = False, txo: bool = True, rxo: bool = True, speedup: float = 0,
               use_hfsc: bool = False, use_tbf: bool = False, latency_ms: Any = None,
               enable_ecn: bool = False, enable_red: bool = False, max_queue_size: Any = None,
               **params: Any) -> dict[str, Any] | None:
        params.pop("disable_gro", None)  # Mininet's old name; offloads are not modelled per flag here
        result = Intf.config(self, **params) or {}
        opts = dict(bw=bw, delay=delay, jitter=jitter, loss=loss, speedup=speedup, use_hfsc=use_hfsc,
                    use_tbf=use_tbf, latency_ms=latency_ms, enable_ecn=enable_ecn, enable_red=enable_red,
                    max_queue_size=max_queue_size, node_name=self.node.name)
        if not tc_lines(self.name, **opts):
            return None
        lines = tc_lines(self.name, show=self.node.cmd(f"tc qdisc show dev {self.name}"), **opts)
        stuff = (([f"{bw:.2f}Mbit"] if bw is not None else [])
                 + ([f"{delay} delay"] if delay is not None else [])
                 + ([f"{jitter} jitter"] if jitter is not None else [])
                 + ([f"{loss:.5f}% loss"] if loss is not None else [])
                 + (["ECN"] if enable_ecn else ["RED"] if enable_red else []))
        info("(" + " ".join(stuff) + ") ")
        outputs = [self.node.cmd(line) for line in lines]
        for out in outputs:
            if out != "":
                error(f"*** Error: {out}")
        result["tcoutputs"] = outputs
        return result


class Link:
    """A veth pair between two nodes; ``params`` configure both ends."""

    def __init__(self, node1: Node, node2: Node, port1: int | None = None, port2: int | None = None,
                 intfName1: str | None = None, intfName2: str | None = None,  # noqa: N803
                 addr1: str | None = None, addr2: str | None = None, intf: type[Intf] = Intf,
                 cls1: type[Intf] | None = None, cls2: type[Intf] | None = None,
                 params1: dict[str, Any] | None = None, params2: dict[str, Any] | None = None,
                 fast: bool = True, **params: Any) -> None:
        if port1 is None:
            port1 = node1.newPort()
        if port2 is None:
            port2 = node2.newPort()
        p1 = {**params, **(params1 or {})}
        p2 = {**params, **(params2 or {})}
        self.intf1 = (cls1 or intf)(intfName1 or f"{node1.name}-eth{port1}", node1, port1, self, addr1)
        self.intf2 = (cls2 or intf)(intfName2 or f"{node2.name}-eth{port2}", node2, port2, self, addr2)
        self.params1, self.params2 = p1, p2
        _check_params(self.intf1, p1)

    def configure(self) -> None:
        """Run each end's ``config`` (tc lines) once the network exists (net.start())."""
        self.intf1.config(**self.params1)
        self.intf2.config(**self.params2)

    def intfs(self) -> tuple[Intf, Intf]:
        return self.intf1, self.intf2

    def status(self) -> str:
        return f"({self.intf1.status()} {self.intf2.status()})"

    def __str__(self) -> str:
        return f"{self.intf1}<->{self.intf2}"


def _check_params(intf: Intf, params: dict[str, Any]) -> None:
    """Bad option values fail at addLink, where the script wrote them."""
    if isinstance(intf, TCIntf):
        keys = {"bw", "delay", "jitter", "loss", "max_queue_size"}
        tc_lines(intf.name, **{k: v for k, v in params.items() if k in keys})
    else:
        intf.config(**params)


class TCLink(Link):
    """A link whose two ends are TCIntf (Mininet's TCLink)."""

    def __init__(self, node1: Node, node2: Node, port1: int | None = None, port2: int | None = None,
                 intfName1: str | None = None, intfName2: str | None = None,  # noqa: N803
                 addr1: str | None = None, addr2: str | None = None, **params: Any) -> None:
        super().__init__(node1, node2, port1=port1, port2=port2, intfName1=intfName1, intfName2=intfName2,
                         cls1=TCIntf, cls2=TCIntf, addr1=addr1, addr2=addr2, **params)


__all__ = ["Intf", "TCIntf", "Link", "TCLink", "tc_lines", "BW_PARAM_MAX"]
