"""mininet/net.py's interface: the ``Mininet`` class.

The network is declared (``addHost``/``addSwitch``/``addLink``, or a ``Topo``)
and becomes a simulation at ``start()``: a scenario topology is built from it
(hosts numbered 10.0.0.1, 10.0.0.2, ... in natural name order from ``ipBase``,
interfaces ``hN-ethK``/``sN-ethK`` by port, as Mininet names them), then each
link's options are applied as Mininet's ``TCIntf.config`` applies them (link.py).
From then on, node commands run in simulated time (session.py); with ``real=True``,
for real on this machine's kernel, in network namespaces (real/session.py, docs/real.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..formats.iperf2 import csv_rate
from ..real.session import RealSession
from ..scenario.load import LinkSpec, Scenario, _build_sim
from ..scenario.mn_file import load_mn
from ..scenario.source import SourceMap
from . import clock
from .link import Link, TCLink
from .log import error, info, output
from .node import Controller, DefaultController, Host, Node, OVSKernelSwitch, Switch
from .session import MininetError, Session
from .util import fmtBps, ipAdd, macColonHex, natural, netParse

#: where networks write their results folder; ``bufferlab mininet`` points it at the script's
RESULTS: dict[str, Any] = {"root": Path("results"), "slug": "mininet", "seed": 1, "fresh": True}
#: networks started since ``results_in``: the second one of a script writes ``<slug>-2``
_started = [0]


def results_in(root: Path, slug: str, seed: int = 1, fresh: bool = True) -> None:
    """Where the next networks write their results: ``root/slug``, then ``root/slug-2``, ..."""
    RESULTS.update(root=root, slug=slug, seed=seed, fresh=fresh)
    _started[0] = 0


@contextmanager
def results_at(root: Path, slug: str) -> Iterator[None]:
    """``results_in`` for one run (``bufferlab mn``): afterwards, where they were before."""
    saved = dict(RESULTS)
    results_in(root, slug)
    try:
        yield
    finally:
        RESULTS.update(saved)
        _started[0] = 0


class Mininet:
    def __init__(self, topo: Any = None, switch: Any = OVSKernelSwitch, host: Any = Host,
                 controller: Any = DefaultController, link: Any = Link, intf: Any = None, build: bool = True,
                 xterms: bool = False, cleanup: bool = False, ipBase: str = "10.0.0.0/8",  # noqa: N803
                 inNamespace: bool = False, autoSetMacs: bool = False, autoStaticArp: bool = False,  # noqa: N803
                 autoPinCpus: bool = False, listenPort: int | None = None,  # noqa: N803
                 waitConnected: bool = False, real: bool = False) -> None:  # noqa: N803
        self.topo = topo
        #: run on the kernel (root): namespaces, veths, bridges, the real tools (docs/real.md)
        self.real = real
        self.switch, self.host, self.controller, self.link = switch, host, controller, link
        self.ipBase = ipBase  # noqa: N815
        try:
            self.ipBaseNum, self.prefixLen = netParse(ipBase)  # noqa: N815
        except ValueError:
            raise MininetError(f"ipBase={ipBase!r}: expected an IPv4 subnet such as '10.0.0.0/8'") from None
        self.nextIP = 1  # noqa: N815
        self.autoSetMacs = autoSetMacs  # noqa: N815
        self.hosts: list[Host] = []
        self.switches: list[Switch] = []
        self.controllers: list[Controller] = []
        self.links: list[Link] = []
        self.nameToNode: dict[str, Node] = {}  # noqa: N815
        self.session: Any = None
        self.built = False
        if topo is not None and build:
            self.build()

    @classmethod
    def from_mn(cls, path: str | Path, use_tbf: bool = False, **kwargs: Any) -> Mininet:
        """A network drawn in MiniEdit (a ``.mn`` file read by scenario/mn_file.py ``load_mn``):
        its hosts with their addresses, its switches, and its links as the TCLinks MiniEdit
        makes, with their options (``use_tbf``: shaped with tbf instead of Mininet's htb).
        The file's ignored keys are reported as ``load_mn`` warns about them."""
        drawing = load_mn(path)
        for w in drawing.warnings:
            error(f"{w}\n")
        net = cls(link=TCLink, **kwargs)
        for h in drawing.hosts:
            net.addHost(h, **({"ip": drawing.host_ips[h]} if h in drawing.host_ips else {}))
        for s in drawing.switches:
            net.addSwitch(s)
        for ln in drawing.links:
            opts = {k: getattr(ln, k) for k in ("bw", "delay", "jitter", "loss", "max_queue_size")
                    if getattr(ln, k) is not None}
            if use_tbf and "bw" in opts:
                opts["use_tbf"] = True
            net.addLink(ln.src, ln.dest, **opts)
        return net

    # ------------------------------------------------------------ declaring

    def _add(self, node: Node) -> Node:
        if node.name in self.nameToNode:
            raise MininetError(f"a node named {node.name!r} already exists")
        if self.session is not None:
            raise MininetError(f"adding {node.name!r} to a started network is not supported yet; "
                               "add every node before net.start()")
        node.net = self
        self.nameToNode[node.name] = node
        return node

    def addHost(self, name: str, cls: Any = None, **params: Any) -> Host:  # noqa: N802
        ip = ipAdd(self.nextIP, self.prefixLen, self.ipBaseNum)
        defaults: dict[str, Any] = {"ip": f"{ip}/{self.prefixLen}"}
        if self.autoSetMacs:
            defaults["mac"] = macColonHex(self.nextIP)
        self.nextIP += 1
        host = (cls or self.host)(name, **{**defaults, **params})
        self.hosts.append(host)
        return self._add(host)  # type: ignore[return-value]

    def addSwitch(self, name: str, cls: Any = None, **params: Any) -> Switch:  # noqa: N802
        switch = (cls or self.switch)(name, **params)
        self.switches.append(switch)
        return self._add(switch)  # type: ignore[return-value]

    def addController(self, name: Any = "c0", controller: Any = None, **params: Any) -> Controller:  # noqa: N802
        if isinstance(name, Controller):
            c = name
        else:
            c = (controller or self.controller or Controller)(name, **params)
        self.controllers.append(c)
        return self._add(c)  # type: ignore[return-value]

    def addLink(self, node1: Any, node2: Any, port1: int | None = None, port2: int | None = None,  # noqa: N802
                cls: Any = None, **params: Any) -> Link:
        if self.session is not None:
            raise MininetError("adding a link to a started network is not supported yet; add every link "
                               "before net.start()")
        n1, n2 = (self.get(n) if isinstance(n, str) else n for n in (node1, node2))
        link = (cls or self.link)(n1, n2, port1=port1, port2=port2, **params)
        self.links.append(link)
        for intf in link.intfs():  # a host's first interface has its address (Mininet's configHosts)
            node: Any = intf.node
            if isinstance(node, Host) and node.intfList()[0] is intf:
                ip = node.params.get("ip")
                intf.ip = ip.split("/")[0] if ip else None
                intf.mac = intf.mac or node.params.get("mac") or macColonHex(self.hosts.index(node) + 1)
        return link

    def build(self) -> None:
        info("*** Creating network\n")
        if not self.controllers and self.controller:
            info("*** Adding controller\n")
            self.addController("c0")
        if self.topo is not None:
            self.buildFromTopo(self.topo)
        self.built = True

    def buildFromTopo(self, topo: Any) -> None:  # noqa: N802
        info("*** Adding hosts:\n")
        for name in topo.hosts():
            self.addHost(name, **topo.nodeInfo(name))
            info(name + " ")
        info("\n*** Adding switches:\n")
        for name in topo.switches():
            self.addSwitch(name, **{k: v for k, v in topo.nodeInfo(name).items() if k != "isSwitch"})
            info(name + " ")
        info("\n*** Adding links:\n")
        for a, b, params in topo.links(sort=True, withInfo=True):
            opts = {k: v for k, v in params.items() if k not in ("node1", "node2")}
            self.addLink(a, b, **opts)
            info(f"({a}, {b}) ")
        info("\n")

    # ------------------------------------------------------------ looking up

    def get(self, *args: str) -> Any:
        nodes = [self.getNodeByName(a) for a in args]
        return nodes[0] if len(nodes) == 1 else nodes

    def getNodeByName(self, *args: str) -> Any:  # noqa: N802
        for name in args:
            if name not in self.nameToNode:
                known = ", ".join(sorted(self.nameToNode, key=natural)) or "none yet"
                raise MininetError(f"no node named {name!r} in the network (nodes: {known})")
        nodes = [self.nameToNode[a] for a in args]
        return nodes[0] if len(nodes) == 1 else nodes

    def __getitem__(self, key: str) -> Any:
        return self.getNodeByName(key)

    def __contains__(self, item: str) -> bool:
        return item in self.nameToNode

    def __iter__(self) -> Any:
        """Node names as Mininet lists them: hosts, then switches, then controllers."""
        return iter([n.name for n in [*self.hosts, *self.switches, *self.controllers]])

    def __len__(self) -> int:
        return len(self.nameToNode)

    def keys(self) -> list[str]:
        return list(self)

    def values(self) -> list[Node]:
        return [self.nameToNode[k] for k in self]

    def items(self) -> list[tuple[str, Node]]:
        return [(k, self.nameToNode[k]) for k in self]

    # ------------------------------------------------------------ running

    def _scenario(self) -> Scenario:
        slug = RESULTS["slug"] if _started[0] == 0 else f"{RESULTS['slug']}-{_started[0] + 1}"
        file = f"{slug}.mininet"
        profile, arp, gso = _build_sim({}, SourceMap("", file))
        linked = {i.node.name for link in self.links for i in link.intfs()}
        for h in self.hosts:
            if h.name not in linked:
                raise MininetError(f"host {h.name} has no link; connect it with addLink before net.start()")
        specs = []
        for link in self.links:
            ends = []
            for intf in link.intfs():
                ip = None
                if isinstance(intf.node, Host) and intf is intf.node.defaultIntf():
                    ip = intf.node.params.get("ip")
                elif isinstance(intf.node, Controller):
                    raise MininetError(f"a link to controller {intf.node.name} is not supported")
                ends.append((intf, ip))
            (i1, ip1), (i2, ip2) = ends
            specs.append(LinkSpec(a=i1.node.name, b=i2.node.name, a_intf=i1.name, b_intf=i2.name,
                                  a_ip=ip1, b_ip=ip2))
        hosts = [h.name for h in self.hosts]
        return Scenario(path=Path(file), name=slug, slug=slug, seed=int(RESULTS["seed"]), profile=profile,
                        arp=arp, gso=gso, hosts=hosts, switches=[s.name for s in self.switches], routers=[],
                        links=specs, parts=[])

    def start(self) -> None:
        if self.session is not None:
            return
        if not self.built:
            self.build()
        info("*** Configuring hosts\n" + "".join(h.name + " " for h in self.hosts) + "\n")
        if self.real:
            delayed = {
                i.name
                for link in self.links
                for i, p in zip(link.intfs(), _link_params(link), strict=True)
                if p.get("delay") is not None and p.get("bw") is None
            }
            self.session = RealSession(
                self._scenario(), Path(RESULTS["root"]), fresh_folder=bool(RESULTS["fresh"]), delayed=delayed
            )
        else:
            self.session = Session(self._scenario(), Path(RESULTS["root"]), fresh=bool(RESULTS["fresh"]))
        _started[0] += 1
        clock.attach(self.session)
        for h in self.hosts:  # each host's shell, as Mininet's Node.pid
            h.pid = self.session.runner.procs.shell(h.name).pid
        if self.controllers:
            info("*** Starting controller\n" + "".join(c.name + " " for c in self.controllers) + "\n")
        info(f"*** Starting {len(self.switches)} switches\n")
        for link in self.links:
            link.configure()
        for s in self.switches:
            info(s.name + " ")
        info("\n")

    def stop(self) -> None:
        if self.session is None:
            return
        info("*** Stopping %i controllers\n" % len(self.controllers))
        info(f"*** Stopping {len(self.links)} links\n")
        info(f"*** Stopping {len(self.switches)} switches\n")
        info(f"*** Stopping {len(self.hosts)} hosts\n")
        clock.detach(self.session)
        self.session.close()
        info("\n*** Done\n")

    def run(self, test: Any, *args: Any, **kwargs: Any) -> Any:
        self.start()
        try:
            return test(*args, **kwargs)
        finally:
            self.stop()

    # ------------------------------------------------------------ tests

    @staticmethod
    def _parsePing(text: str) -> tuple[int, int]:  # noqa: N802
        m = re.search(r"(\d+) packets transmitted, (\d+)( packets)? received", text)
        if m is None:
            error(f"*** Error: could not parse ping output: {text}\n")
            return 1, 0
        return int(m.group(1)), int(m.group(2))

    def ping(self, hosts: list[Host] | None = None, timeout: Any = None) -> float:
        """Ping every pair once; print Mininet's reachability matrix; return the % lost."""
        packets = lost = 0
        if not hosts:
            hosts = self.hosts
            output("*** Ping: testing ping reachability\n")
        for node in hosts:
            output(f"{node.name} -> ")
            for dest in hosts:
                if node is dest:
                    continue
                opts = f"-W {timeout} " if timeout else ""
                sent, received = self._parsePing(node.cmd(f"ping -c1 {opts}{dest.IP()}"))
                packets += sent
                lost += sent - received
                output(f"{dest.name} " if received else "X ")
            output("\n")
        if packets > 0:
            ploss = 100.0 * lost / packets
            output("*** Results: %i%% dropped (%d/%d received)\n" % (ploss, packets - lost, packets))
            return ploss
        output("*** Warning: No packets sent\n")
        return 0

    def pingAll(self, timeout: Any = None) -> float:  # noqa: N802
        return self.ping(timeout=timeout)

    def pingPair(self) -> float:  # noqa: N802
        return self.ping(hosts=self.hosts[:2])

    def iperf(self, hosts: Any = None, l4Type: str = "TCP", udpBw: str = "10M", fmt: Any = None,  # noqa: N803
              seconds: int = 5, port: int = 5001) -> list[str]:
        """iperf 2 between two hosts, as mininet/net.py runs it: a CSV server (``iperf -y C -s``)
        on the second, a client for ``seconds`` on the first; returns [server rate, client rate]
        (UDP: the requested rate first). The server's report is read once it is interrupted
        (bufferlab's iperf -s prints its reports then)."""
        if l4Type not in ("TCP", "UDP"):
            raise MininetError(f"net.iperf(l4Type={l4Type!r}): expected 'TCP' or 'UDP'")
        hosts = hosts or [self.hosts[0], self.hosts[-1]]
        if len(hosts) != 2:
            raise MininetError(f"net.iperf(hosts=...): expected two hosts, got {len(hosts)}")
        client, server = hosts
        output("*** Iperf: testing", l4Type, "bandwidth between", client, "and", server, "\n")
        args = f"iperf -y C -p {port} " + ("-u " if l4Type == "UDP" else "")
        bw = f"-b {udpBw} " if l4Type == "UDP" else ""
        server.sendCmd(args + "-s")
        cliout = client.cmd(args + f"-t {seconds} -c {server.IP()} {bw}")
        server.sendInt()
        serverout = server.waitOutput()
        rates = []
        for text, who in ((serverout, server), (cliout, client)):
            vals = csv_rate(text)
            if vals is None:
                raise MininetError(f"net.iperf(): {who} printed no iperf report:\n{text}")
            rates.append(fmtBps(vals, fmt or ""))
        if l4Type == "UDP":
            rates.insert(0, udpBw)
        output(f"*** Results: {rates}\n")
        return rates

    def configLinkStatus(self, src: str, dst: str, status: str) -> None:  # noqa: N802
        if status not in ("up", "down"):
            raise MininetError(f"configLinkStatus(..., {status!r}): expected 'up' or 'down'")
        self.get(src, dst)
        raise MininetError("configLinkStatus is not supported yet: links cannot be taken down in the "
                           "simulation")

    def __enter__(self) -> Mininet:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


__all__ = ["Mininet"]


def _link_params(link: Link) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each end's TCLink options (none for a plain Link)."""
    return getattr(link, "params1", {}) or {}, getattr(link, "params2", {}) or {}
