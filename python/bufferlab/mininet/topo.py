"""mininet/topo.py's interface: ``Topo`` (a graph of named nodes and links with their
options) and the built-in ``SingleSwitchTopo``, ``LinearTopo``, ``MinimalTopo``.

As in Mininet, ports are numbered when ``addLink`` is called (hosts from 0,
switches from 1), so interface names follow the order the script adds links.
"""

from __future__ import annotations

from typing import Any

from .session import MininetError
from .util import irange, natural


class Topo:
    def __init__(self, *args: Any, **params: Any) -> None:
        self.hopts: dict[str, Any] = params.pop("hopts", {})
        self.sopts: dict[str, Any] = params.pop("sopts", {})
        self.lopts: dict[str, Any] = params.pop("lopts", {})
        self._nodes: dict[str, dict[str, Any]] = {}
        self._links: list[tuple[str, str, dict[str, Any]]] = []
        self._ports: dict[str, dict[int, tuple[str, int]]] = {}
        self.build(*args, **params)

    def build(self, *args: Any, **params: Any) -> None:
        """Override to add nodes and links."""

    def addNode(self, name: str, **opts: Any) -> str:  # noqa: N802
        if not isinstance(name, str) or not name:
            raise MininetError(f"node name {name!r}: expected a non-empty string such as 'h1'")
        if name in self._nodes:
            raise MininetError(f"node {name!r} is added twice")
        self._nodes[name] = opts
        self._ports[name] = {}
        return name

    def addHost(self, name: str, **opts: Any) -> str:  # noqa: N802
        return self.addNode(name, **(opts or self.hopts))

    def addSwitch(self, name: str, **opts: Any) -> str:  # noqa: N802
        return self.addNode(name, isSwitch=True, **(opts or self.sopts))

    def addLink(self, node1: str, node2: str, port1: int | None = None, port2: int | None = None,  # noqa: N802
                key: Any = None, **opts: Any) -> str:
        for n in (node1, node2):
            if n not in self._nodes:
                raise MininetError(f"addLink({node1!r}, {node2!r}): no node {n!r}; add it first with "
                                   "addHost/addSwitch")
        if port1 is None:
            port1 = self._newport(node1)
        if port2 is None:
            port2 = self._newport(node2)
        self._ports[node1][port1] = (node2, port2)
        self._ports[node2][port2] = (node1, port1)
        info = {**(opts or self.lopts), "node1": node1, "node2": node2,
                "port1": port1, "port2": port2}
        self._links.append((node1, node2, info))
        return key if key is not None else str(len(self._links))

    def _newport(self, node: str) -> int:
        base = 1 if self.isSwitch(node) else 0
        used = self._ports[node]
        return max(used) + 1 if used else base

    def isSwitch(self, n: str) -> bool:  # noqa: N802
        return bool(self._nodes[n].get("isSwitch"))

    def nodes(self, sort: bool = True) -> list[str]:
        names = list(self._nodes)
        return sorted(names, key=natural) if sort else names

    def hosts(self, sort: bool = True) -> list[str]:
        return [n for n in self.nodes(sort) if not self.isSwitch(n)]

    def switches(self, sort: bool = True) -> list[str]:
        return [n for n in self.nodes(sort) if self.isSwitch(n)]

    def links(self, sort: bool = False, withKeys: bool = False, withInfo: bool = False) -> list[Any]:  # noqa: N803
        links = list(self._links)
        if sort:
            links.sort(key=lambda x: (natural(x[0]), natural(x[1])))
        if withInfo:
            return links
        return [(a, b) for a, b, _ in links]

    def nodeInfo(self, name: str) -> dict[str, Any]:  # noqa: N802
        return self._nodes[name]

    def linkInfo(self, src: str, dst: str) -> dict[str, Any]:  # noqa: N802
        for a, b, info in self._links:
            if {a, b} == {src, dst}:
                return info
        raise MininetError(f"no link between {src!r} and {dst!r}")


class SingleSwitchTopo(Topo):
    """k hosts h1..hk on switch s1."""

    def build(self, k: int = 2, **_opts: Any) -> None:
        self.k = k
        switch = self.addSwitch("s1")
        for h in irange(1, k):
            self.addLink(self.addHost(f"h{h}"), switch)


class MinimalTopo(SingleSwitchTopo):
    def build(self) -> None:  # type: ignore[override]
        SingleSwitchTopo.build(self, k=2)


class LinearTopo(Topo):
    """k switches in a chain, n hosts on each (h1.. if n == 1, else hJsI)."""

    def build(self, k: int = 2, n: int = 1, **_opts: Any) -> None:
        self.k, self.n = k, n
        last = None
        for i in irange(1, k):
            switch = self.addSwitch(f"s{i}")
            for j in irange(1, n):
                self.addLink(self.addHost(f"h{i}" if n == 1 else f"h{j}s{i}"), switch)
            if last:
                self.addLink(switch, last)
            last = switch


__all__ = ["Topo", "SingleSwitchTopo", "MinimalTopo", "LinearTopo"]
