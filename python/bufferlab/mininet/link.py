"""mininet/link.py's ``Link``, ``TCLink`` and ``TCIntf`` in simulated time.

``TCIntf.tc_lines`` builds the tc lines mininet/link.py ``TCIntf.config`` runs
(``bwCmds`` then ``delayCmds``, checked against Mininet 2.3's source), with the same
number formatting (``%f``), on the interfaces of both ends; they then run through
bufferlab's tc parser as any typed ``tc`` line. The lines each option produces are
listed in docs/mininet.md.
"""

from __future__ import annotations

from typing import Any

from ..commands.tc.registry import QDISC_KINDS
from .log import error, info
from .node import Intf, Node
from .session import MininetError

#: TCIntf.bwParamMax: Mininet ignores (with a message) a bw above this many Mbit/s
BW_MAX = 1000

#: TCIntf.config's keyword arguments and the types each accepts
_NUMBER = (int, float)
TC_PARAMS: dict[str, tuple[type, ...]] = {
    "bw": _NUMBER, "delay": (str,), "jitter": (str,), "loss": _NUMBER, "max_queue_size": (int,),
    "speedup": _NUMBER, "latency_ms": _NUMBER, "use_hfsc": (bool,), "use_tbf": (bool,),
    "use_htb": (bool,), "enable_ecn": (bool,), "enable_red": (bool,), "gro": (bool,), "txo": (bool,),
    "rxo": (bool,),
}
#: what each parameter looks like, for the error message
_EXAMPLE = {"bw": "bw=10 (Mbit/s)", "delay": "delay='5ms'", "jitter": "jitter='1ms'", "loss": "loss=1 (%)",
            "max_queue_size": "max_queue_size=100 (packets)", "speedup": "speedup=10",
            "latency_ms": "latency_ms=12"}


def check_tc_params(params: dict[str, Any], where: str) -> None:
    """Reject a parameter of the wrong type (``bw="fast"``) or an unknown one, naming it."""
    for key, value in params.items():
        if key not in TC_PARAMS:
            raise MininetError(f"{where}: unknown link parameter {key}={value!r}; TCLink takes "
                               + ", ".join(sorted(TC_PARAMS)))
        if value is None:
            continue
        types = TC_PARAMS[key]
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise MininetError(f"{where}: {key}={value!r}: expected "
                               + _EXAMPLE.get(key, f"{key}=True or False"))


class TCIntf(Intf):
    """An interface shaped with tc as Mininet's TCIntf shapes it."""

    def tc_lines(self, bw: float | None = None, delay: str | None = None, jitter: str | None = None,
                 loss: float | None = None, speedup: float = 0, use_hfsc: bool = False,
                 use_tbf: bool = False, latency_ms: float | None = None, enable_ecn: bool = False,
                 enable_red: bool = False, max_queue_size: int | None = None,
                 **_offloads: Any) -> tuple[list[str], str]:
        """(tc lines after ``qdisc del``, the ``(10.00Mbit 5ms delay)`` text Mininet prints)."""
        lines: list[str] = []
        parent = " root "
        dev = self.name
        if bw and (bw < 0 or bw > BW_MAX):
            error("Bandwidth limit", bw, f"is outside supported range 0..{BW_MAX}", "- ignoring\n")
        elif bw is not None:
            if speedup > 0 and self.node.name[:1] == "s":  # Mininet's own switch test
                bw = speedup
            if use_hfsc:
                raise MininetError(f"{dev}: TCLink(use_hfsc=True): the hfsc qdisc is not supported yet; "
                                   "use the default (htb) or use_tbf=True")
            if use_tbf:
                latency = 15.0 * 8 / bw if latency_ms is None else latency_ms
                lines.append(f"tc qdisc add dev {dev} root handle 5: tbf rate {bw:f}Mbit burst 15000 "
                             f"latency {latency:f}ms")
            else:
                lines += [f"tc qdisc add dev {dev} root handle 5:0 htb default 1",
                          f"tc class add dev {dev} parent 5:0 classid 5:1 htb rate {bw:f}Mbit burst 15k"]
            parent = " parent 5:1 "
            if enable_ecn or enable_red:
                lines.append(f"tc qdisc add dev {dev}{parent}handle 6: red limit 1000000 min 30000 max 35000 "
                             f"avpkt 1500 burst 20 bandwidth {bw:f}mbit probability 1"
                             + (" ecn" if enable_ecn else ""))
                parent = " parent 6: "
        if loss and (loss < 0 or loss > 100):
            error("Bad loss percentage", loss, "%%\n")
        else:
            netem = ((f"delay {delay} " if delay is not None else "")
                     + (f"{jitter} " if jitter is not None else "")
                     + (f"loss {loss:.5f} " if loss is not None and loss > 0 else "")
                     + (f"limit {max_queue_size:d}" if max_queue_size is not None else ""))
            if netem:
                lines.append(f"tc qdisc add dev {dev} {parent} handle 10: netem {netem}")
        said = (([f"{bw:.2f}Mbit"] if bw is not None else [])
                + ([f"{delay} delay"] if delay is not None else [])
                + ([f"{jitter} jitter"] if jitter is not None else [])
                + ([f"{loss:.5f}% loss"] if loss is not None else [])
                + (["ECN"] if enable_ecn else ["RED"] if enable_red else []))
        return lines, "(" + " ".join(said) + ") "

    def plan(self, **params: Any) -> list[str] | None:
        """The tc lines for ``params`` (None: Mininet's early return, nothing to shape),
        printing what Mininet prints when it configures the interface."""
        params = {k: v for k, v in params.items() if k not in ("use_htb", "gro", "txo", "rxo")}
        bw, delay, loss, mqs = (params.get(k) for k in ("bw", "delay", "loss", "max_queue_size"))
        if bw is None and not delay and not loss and mqs is None:
            return None
        lines, said = self.tc_lines(**params)
        info(said)
        return lines

    def config(self, lines: list[str] | None = None, **params: Any) -> dict[str, Any]:
        """Run the planned tc lines in the interface's namespace, after ``tc qdisc del ... root``
        unless the interface still has its default qdisc (Mininet's ``priomap``/``noqueue`` test)."""
        if not lines:
            return {}
        if any(" htb " in line for line in lines) and "htb" not in QDISC_KINDS:
            raise MininetError(f"{self.name}: TCLink shapes with HTB by default, and HTB is not supported "
                               "yet; pass use_tbf=True to the link (Mininet's tbf shaper) meanwhile")
        node = self.node
        shown = node.cmd(f"tc qdisc show dev {self.name}")
        if "priomap" not in shown and "noqueue" not in shown:
            lines = [f"tc qdisc del dev {self.name} root", *lines]
        outputs = [node.cmd(line) for line in lines]
        for out in outputs:
            if out:
                error(f"*** Error: {out}")
        return {"tcoutputs": outputs}


class Link:
    """A veth pair between two nodes; its interfaces are named ``<node>-eth<port>``."""

    intf_class: type[Intf] = Intf

    def __init__(self, node1: Node, node2: Node, port1: int | None = None, port2: int | None = None,
                 intfName1: str | None = None, intfName2: str | None = None,  # noqa: N803
                 addr1: str | None = None, addr2: str | None = None, intf: type[Intf] | None = None,
                 cls1: type[Intf] | None = None, cls2: type[Intf] | None = None,
                 params1: dict[str, Any] | None = None, params2: dict[str, Any] | None = None,
                 fast: bool = True, **params: Any) -> None:
        where = f"addLink({node1}, {node2})"
        for n in (node1, node2):
            if not isinstance(n, Node):
                raise MininetError(f"{where}: {n!r} is not a node (pass names or nodes of this network)")
        self.params1 = {**params, **(params1 or {})}
        self.params2 = {**params, **(params2 or {})}
        if self.intf_class is Intf and any(k in TC_PARAMS for k in {**self.params1, **self.params2}):
            raise MininetError(f"{where}: link parameters {sorted(params)} need link=TCLink "
                               "(Mininet's plain Link ignores them)",)
        if self.intf_class is not Intf:
            check_tc_params(self.params1, where)
            check_tc_params(self.params2, where)
        port1 = node1.newPort() if port1 is None else port1
        port2 = node2.newPort() if port2 is None else port2
        cls = intf or self.intf_class
        self.intf1 = (cls1 or cls)(intfName1 or f"{node1.name}-eth{port1}", node1, port1, link=self,
                                   mac=addr1)
        self.intf2 = (cls2 or cls)(intfName2 or f"{node2.name}-eth{port2}", node2, port2, link=self,
                                   mac=addr2)
        #: each end's tc lines, planned (and announced) now as Mininet configures a link when made
        self.lines1: list[str] | None = None
        self.lines2: list[str] | None = None
        if isinstance(self.intf1, TCIntf) and isinstance(self.intf2, TCIntf):
            self.lines1 = self.intf1.plan(**self.params1)
            self.lines2 = self.intf2.plan(**self.params2)

    def intfs(self) -> tuple[Intf, Intf]:
        return self.intf1, self.intf2

    def configure(self) -> None:
        """Shape both ends (Mininet configures them when the link is made; here at start)."""
        if isinstance(self.intf1, TCIntf) and isinstance(self.intf2, TCIntf):
            self.intf1.config(self.lines1)
            self.intf2.config(self.lines2)

    def status(self) -> str:
        return "(OK OK)"

    def __str__(self) -> str:
        return f"{self.intf1}<->{self.intf2}"


class TCLink(Link):
    """A link whose interfaces are shaped by tc (``bw``, ``delay``, ``loss``, ``max_queue_size``...)."""

    intf_class = TCIntf


class TCULink(TCLink):
    """Mininet's TCLink with user-space veths: the same here."""


__all__ = ["Link", "TCLink", "TCULink", "TCIntf", "Intf", "BW_MAX"]
