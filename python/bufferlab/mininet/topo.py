"""mininet/topo.py's ``Topo``: a description of nodes and links, built by ``build()``."""

from __future__ import annotations

import re
from typing import Any

from .session import MininetError


def natural(text: str) -> list[Any]:
    """Mininet's natural order: h2 before h10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(text))]


class Topo:
    """Subclass and override ``build(self, ...)``; Mininet builds the network from it."""

    def __init__(self, *args: Any, **params: Any) -> None:
        self._nodes: dict[str, dict[str, Any]] = {}
        self._links: list[tuple[str, str, dict[str, Any]]] = []
        self.hopts = params.pop("hopts", {})
        self.sopts = params.pop("sopts", {})
        self.lopts = params.pop("lopts", {})
        self.build(*args, **params)

    def build(self, *args: Any, **params: Any) -> None:
        """Override to add hosts, switches and links."""

    def addNode(self, name: str, **opts: Any) -> str:  # noqa: N802 (Mininet's names)
        if not isinstance(name, str) or not name:
            raise MininetError(f"addHost/addSwitch({name!r}): a node name is a non-empty string such as 'h1'")
        if name in self._nodes:
            raise MininetError(f"node {name!r} added twice")
        self._nodes[name] = opts
        return name

    def addHost(self, name: str, **opts: Any) -> str:  # noqa: N802
        return self.addNode(name, **{**self.hopts, **opts})

    def addSwitch(self, name: str, **opts: Any) -> str:  # noqa: N802
        return self.addNode(name, isSwitch=True, **{**self.sopts, **opts})

    def addLink(self, node1: str, node2: str, port1: int | None = None, port2: int | None = None,  # noqa: N802
                key: Any = None, **opts: Any) -> Any:
        for n in (node1, node2):
            if n not in self._nodes:
                raise MininetError(f"addLink({node1!r}, {node2!r}): no node {n!r} in the topology; "
                                   "add it with addHost/addSwitch first")
        info = {**self.lopts, **opts}
        if port1 is not None:
            info["port1"] = port1
        if port2 is not None:
            info["port2"] = port2
        self._links.append((node1, node2, info))
        return key if key is not None else len(self._links) - 1

    def nodes(self, sort: bool = True) -> list[str]:
        return sorted(self._nodes, key=natural) if sort else list(self._nodes)

    def isSwitch(self, name: str) -> bool:  # noqa: N802
        return bool(self._nodes[name].get("isSwitch"))

    def hosts(self, sort: bool = True) -> list[str]:
        return [n for n in self.nodes(sort) if not self.isSwitch(n)]

    def switches(self, sort: bool = True) -> list[str]:
        return [n for n in self.nodes(sort) if self.isSwitch(n)]

    def links(self, sort: bool = False, withKeys: bool = False, withInfo: bool = False) -> list[Any]:  # noqa: N803
        rows = list(enumerate(self._links))
        if sort:  # alphabetically by the pair, each link keeping its (src, dst) order
            rows.sort(key=lambda r: sorted((natural(r[1][0]), natural(r[1][1]))))
        out: list[Any] = []
        for key, (a, b, info) in rows:
            out.append((a, b) + ((key,) if withKeys else ()) + ((info,) if withInfo else ()))
        return out

    def nodeInfo(self, name: str) -> dict[str, Any]:  # noqa: N802
        return self._nodes[name]

    def linkInfo(self, src: str, dst: str) -> dict[str, Any]:  # noqa: N802
        for a, b, info in self._links:
            if {a, b} == {src, dst}:
                return info
        raise MininetError(f"no link between {src} and {dst}")


class SingleSwitchTopo(Topo):
    """One switch s1 and hosts h1..hk."""

    def build(self, k: int = 2, **_opts: Any) -> None:
        self.k = k
        switch = self.addSwitch("s1")
        for h in range(1, k + 1):
            self.addLink(self.addHost(f"h{h}"), switch)


class SingleSwitchReversedTopo(Topo):
    """SingleSwitchTopo with h1 on the highest port."""

    def build(self, k: int = 2) -> None:
        self.k = k
        switch = self.addSwitch("s1")
        for h in range(1, k + 1):
            self.addLink(self.addHost(f"h{h}"), switch, port1=0, port2=k - h + 1)


class MinimalTopo(SingleSwitchTopo):
    """Two hosts on one switch (``mn``'s default)."""

    def build(self) -> None:  # type: ignore[override]
        super().build(k=2)


class LinearTopo(Topo):
    """k switches in a line, n hosts on each (``hI`` for n = 1, else ``hJsI``)."""

    def build(self, k: int = 2, n: int = 1, **_opts: Any) -> None:
        self.k, self.n = k, n
        last = None
        for i in range(1, k + 1):
            switch = self.addSwitch(f"s{i}")
            for j in range(1, n + 1):
                self.addLink(self.addHost(f"h{i}" if n == 1 else f"h{j}s{i}"), switch)
            if last:
                self.addLink(switch, last)
            last = switch


__all__ = ["Topo", "SingleSwitchTopo", "SingleSwitchReversedTopo", "MinimalTopo", "LinearTopo"]
