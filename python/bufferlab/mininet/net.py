"""mininet/net.py's ``Mininet`` in simulated time.

The network is described by ``addHost``/``addSwitch``/``addLink`` (or a ``Topo``) and
built in the engine at ``start()``; from then on ``node.cmd`` lines and
``clock.sleep`` advance simulated time. Addresses follow Mininet: host k (in the
order added) is address k of ``ipBase`` (10.0.0.k), interfaces ``hN-ethK`` and
``sX-ethK`` by link order, MACs 00:00:00:00:00:0k with ``autoSetMacs``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..scenario.load import LinkSpec
from ..scenario.mn_file import load_mn
from . import clock
from .link import Link, TCLink
from .log import error, info, output
from .node import Controller, DefaultController, Host, Node, OVSKernelSwitch, Switch
from .session import MininetError, Session
from .topo import Topo
from .util import ipAdd, macColonHex, netParse

#: the process id the first node's shell gets (dump prints them)
FIRST_PID = 1000


class Mininet:
    #: where results go (``bufferlab mininet --results``); the folder is named after ``name``
    results_root: Path | None = None
    name = "mininet"
    #: tables and the HTML report at stop() (tests turn it off for speed)
    write_report = True

    def __init__(self, topo: Topo | None = None, switch: type[Switch] = OVSKernelSwitch,
                 host: type[Host] = Host, controller: Any = DefaultController, link: type[Link] = Link,
                 intf: Any = None, build: bool = True, xterms: bool = False, cleanup: bool = False,
                 ipBase: str = "10.0.0.0/8", inNamespace: bool = False,  # noqa: N803 (Mininet's names)
                 autoSetMacs: bool = False, autoStaticArp: bool = False,  # noqa: N803
                 autoPinCpus: bool = False, listenPort: int | None = None,  # noqa: N803
                 waitConnected: bool = False) -> None:  # noqa: N803
        if topo is not None and not isinstance(topo, Topo):
            raise MininetError(f"Mininet(topo={topo!r}): expected a Topo instance such as "
                               "SingleSwitchTopo(2)")
        if xterms:
            raise MininetError("Mininet(xterms=True): xterms are not supported (no terminals in a "
                               "simulation); use node.cmd()")
        self.topo = topo
        self.switch, self.host, self.controller, self.link = switch, host, controller, link
        try:
            self.ipBaseNum, self.prefixLen = netParse(ipBase)
        except ValueError:
            raise MininetError(f"Mininet(ipBase={ipBase!r}): expected a network such as "
                               "'10.0.0.0/8'") from None
        self.ipBase = ipBase
        self.nextIP = 1
        self.autoSetMacs = autoSetMacs
        self.hosts: list[Node] = []
        self.switches: list[Node] = []
        self.controllers: list[Node] = []
        self.links: list[Link] = []
        self.nameToNode: dict[str, Node] = {}
        self.started = False
        self.built = False
        self.session: Session | None = None
        if topo is not None and build:
            self.build()

    @classmethod
    def from_mn(cls, path: str | Path, use_tbf: bool = False, **kwargs: Any) -> Mininet:
        """A network from a MiniEdit ``.mn`` file (hosts, switches, links and their options);
        links are TCLinks as MiniEdit makes them (``use_tbf``: shaped with tbf instead of htb)."""
        mn = load_mn(path)
        for w in mn.warnings:
            error(w + "\n")
        net = cls(link=TCLink, **kwargs)
        for h in mn.hosts:
            net.addHost(h, ip=mn.host_ips.get(h))
        for s in mn.switches:
            net.addSwitch(s)
        for ln in mn.links:
            opts = {k: getattr(ln, k) for k in ("bw", "delay", "loss", "max_queue_size", "jitter")
                    if getattr(ln, k, None) is not None}
            if use_tbf:
                opts["use_tbf"] = True
            net.addLink(ln.src, ln.dest, **opts)
        return net

    # ------------------------------------------------------------ building

    def _check_new(self, name: str) -> None:
        if self.started:
            raise MininetError(f"adding {name!r} after net.start() is not supported yet; build the whole "
                               "network first")
        if name in self.nameToNode:
            raise MininetError(f"a node named {name!r} already exists")

    def addHost(self, name: str, cls: type[Node] | None = None, **params: Any) -> Node:  # noqa: N802
        self._check_new(name)
        ip = params.get("ip")
        if ip is None:
            params["ip"] = ipAdd(self.nextIP, self.prefixLen, self.ipBaseNum) + f"/{self.prefixLen}"
        elif not isinstance(ip, str) or not re.fullmatch(r"\d+\.\d+\.\d+\.\d+(/\d+)?", ip):
            raise MininetError(f"addHost({name!r}, ip={ip!r}): expected an address such as '10.0.0.5/8'")
        if self.autoSetMacs and "mac" not in params:
            params["mac"] = macColonHex(self.nextIP)
        self.nextIP += 1
        node = (cls or self.host)(name, **params)
        return self._add(node, self.hosts)

    def addSwitch(self, name: str, cls: type[Node] | None = None, **params: Any) -> Node:  # noqa: N802
        self._check_new(name)
        return self._add((cls or self.switch)(name, **params), self.switches)

    def addController(self, name: str | Node = "c0", controller: Any = None, **params: Any) -> Node:  # noqa: N802
        if isinstance(name, Controller):
            return self._add(name, self.controllers)
        self._check_new(str(name))
        cls = controller or self.controller or Controller
        if not (isinstance(cls, type) and issubclass(cls, Controller)):
            cls = DefaultController  # a RemoteController factory etc.: every controller is the same here
        return self._add(cls(str(name), **params), self.controllers)

    def _add(self, node: Node, into: list[Node]) -> Node:
        node.net = self
        into.append(node)
        self.nameToNode[node.name] = node
        return node

    def _node(self, node: str | Node, where: str) -> Node:
        if isinstance(node, Node):
            return node
        if node not in self.nameToNode:
            raise MininetError(f"{where}: no node named {node!r}; nodes are "
                               f"{', '.join(self.nameToNode) or '(none)'}")
        return self.nameToNode[node]

    def addLink(self, node1: str | Node, node2: str | Node, port1: int | None = None,  # noqa: N802
                port2: int | None = None, cls: type[Link] | None = None, **params: Any) -> Link:
        where = f"addLink({node1}, {node2})"
        if self.started:
            raise MininetError(f"{where} after net.start() is not supported yet")
        n1, n2 = self._node(node1, where), self._node(node2, where)
        link = (cls or self.link)(n1, n2, port1=port1, port2=port2, **params)
        for intf, node in ((link.intf1, n1), (link.intf2, n2)):
            if isinstance(node, Host) and node is not None and len(node.intfs) == 1:
                intf.setIP(node.params["ip"])
                intf.mac = intf.mac or node.params.get("mac")
        self.links.append(link)
        return link

    def build(self) -> None:
        """Add the topology's nodes and links, printing what Mininet prints."""
        topo = self.topo
        assert topo is not None
        info("*** Creating network\n")
        if not self.controllers and self.controller:
            info("*** Adding controller\n")
            self.addController("c0")
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
            self.addLink(a, b, **params)
            info(f"({a}, {b}) ")
        info("\n")
        self.built = True

    # ------------------------------------------------------------ running

    def _link_specs(self) -> list[LinkSpec]:
        specs = []
        for ln in self.links:
            ips = []
            for intf in ln.intfs():
                ips.append(f"{intf.ip}/{intf.prefixLen}" if intf.ip else None)
            specs.append(LinkSpec(ln.intf1.node.name, ln.intf2.node.name, a_intf=ln.intf1.name,
                                  b_intf=ln.intf2.name, a_ip=ips[0], b_ip=ips[1]))
        return specs

    def start(self) -> None:
        if self.started:
            return
        if clock._session is not None:
            raise MininetError("another network is running; call its stop() first")
        if self.topo is not None and not self.built:
            self.build()
        info("*** Configuring hosts\n")
        info(" ".join(h.name for h in self.hosts) + " \n")
        self.session = Session(self.name, [h.name for h in self.hosts], [s.name for s in self.switches],
                               self._link_specs(), self.results_root)
        clock.attach(self.session)
        self.started = True
        for k, node in enumerate(self.nameToNode.values()):
            node.pid = FIRST_PID + k
        info(f"*** Starting controller\n{' '.join(c.name for c in self.controllers)} \n")
        info(f"*** Starting {len(self.switches)} switches\n{' '.join(s.name for s in self.switches)} ...\n")
        for ln in self.links:
            ln.configure()

    def stop(self) -> dict[str, Any]:
        """End the network: Ctrl-C what still runs; write the results folder."""
        if not self.started or self.session is None:
            return {}
        info(f"*** Stopping {len(self.controllers)} controllers\n")
        info(f"*** Stopping {len(self.links)} links\n")
        info(f"*** Stopping {len(self.switches)} switches\n")
        info(f"*** Stopping {len(self.hosts)} hosts\n")
        summary = self.session.close(self.write_report)
        clock.attach(None)
        self.started = False
        info("\n*** Done\n")
        return summary

    def __enter__(self) -> Mininet:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------ lookup

    def get(self, *args: str) -> Any:
        nodes = [self._node(a, f"net.get({a!r})") if isinstance(a, str) else self._bad_get(a) for a in args]
        return nodes[0] if len(nodes) == 1 else nodes

    def _bad_get(self, a: Any) -> Node:
        raise MininetError(f"net.get({a!r}): expected a node name such as 'h1'")

    getNodeByName = get  # noqa: N815

    def __getitem__(self, key: str) -> Node:
        return self._node(key, f"net[{key!r}]")

    def __contains__(self, item: str) -> bool:
        return item in self.nameToNode

    def __iter__(self) -> Any:
        return iter(self.nameToNode)

    def keys(self) -> list[str]:
        return list(self.nameToNode)

    def values(self) -> list[Node]:
        return list(self.nameToNode.values())

    def items(self) -> list[tuple[str, Node]]:
        return list(self.nameToNode.items())

    def linksBetween(self, node1: Node, node2: Node) -> list[Link]:  # noqa: N802
        return [ln for ln in self.links if {ln.intf1.node, ln.intf2.node} == {node1, node2}]

    def configLinkStatus(self, src: str, dst: str, status: str) -> None:  # noqa: N802
        self._node(src, "configLinkStatus")
        self._node(dst, "configLinkStatus")
        if status not in ("up", "down"):
            raise MininetError(f"configLinkStatus({src}, {dst}, {status!r}): status is 'up' or 'down'")
        raise MininetError("configLinkStatus (ifconfig up/down) is not supported yet: links stay up")

    # ------------------------------------------------------------ tests

    @staticmethod
    def _parsePing(text: str) -> tuple[int, int]:  # noqa: N802
        """(sent, received) from ping's statistics line; (1, 0) if it has none."""
        if re.search(r"[uU]nreachable", text):
            return 1, 0
        m = re.search(r"(\d+) packets transmitted, (\d+)( packets)? received", text)
        return (int(m.group(1)), int(m.group(2))) if m else (1, 0)

    def ping(self, hosts: list[Node] | None = None, timeout: str | None = None) -> float:
        """Ping every pair once; print Mininet's reachability matrix; return the loss %."""
        packets = lost = 0
        if not hosts:
            hosts = self.hosts
            output("*** Ping: testing ping reachability\n")
        for node in hosts:
            output(f"{node.name} -> ")
            for dest in hosts:
                if node is dest:
                    continue
                sent, received = 0, 0
                if dest.intfs:
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

    def pingAll(self, timeout: str | None = None) -> float:  # noqa: N802
        return self.ping(timeout=timeout)

    def pingPair(self) -> float:  # noqa: N802
        return self.ping(hosts=[self.hosts[0], self.hosts[1]])

    def iperf(self, hosts: list[Node] | None = None, l4Type: str = "TCP", udpBw: str = "10M",  # noqa: N803
              fmt: str | None = None, seconds: int = 5, port: int = 5001) -> list[str]:
        raise MininetError("net.iperf() runs iperf 2 (iperf -y C), which is not supported yet; "
                           "run iperf3 with node.cmd() meanwhile")


__all__ = ["Mininet"]
