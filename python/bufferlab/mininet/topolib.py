"""mininet/topolib.py's interface: ``TreeTopo`` and ``TreeNet``."""

from __future__ import annotations

from typing import Any

from .net import Mininet
from .topo import Topo


class TreeTopo(Topo):
    """A tree of switches ``depth`` levels deep, each with ``fanout`` children; hosts at the
    leaves. Switches and hosts are numbered depth-first, as Mininet numbers them."""

    def build(self, depth: int = 1, fanout: int = 2) -> None:  # type: ignore[override]
        self.hostNum = 1  # noqa: N815
        self.switchNum = 1  # noqa: N815
        self.addTree(depth, fanout)

    def addTree(self, depth: int, fanout: int) -> str:  # noqa: N802
        if depth > 0:
            node = self.addSwitch(f"s{self.switchNum}")
            self.switchNum += 1
            for _ in range(fanout):
                self.addLink(node, self.addTree(depth - 1, fanout))
        else:
            node = self.addHost(f"h{self.hostNum}")
            self.hostNum += 1
        return node


def TreeNet(depth: int = 1, fanout: int = 2, **kwargs: Any) -> Any:  # noqa: N802 (Mininet's name)
    return Mininet(TreeTopo(depth, fanout), **kwargs)


__all__ = ["TreeTopo", "TreeNet"]
