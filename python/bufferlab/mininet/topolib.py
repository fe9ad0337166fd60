"""mininet/topolib.py: ``TreeTopo`` (and ``TreeNet``)."""

from __future__ import annotations

from typing import Any

from .net import Mininet
from .session import MininetError
from .topo import Topo


class TreeTopo(Topo):
    """A tree of switches ``depth`` deep, ``fanout`` children each; hosts are the leaves."""

    def build(self, depth: int = 1, fanout: int = 2) -> None:
        self.hostNum = 1
        self.switchNum = 1
        self.addTree(depth, fanout)

    def addTree(self, depth: int, fanout: int) -> str:  # noqa: N802 (Mininet's name)
        """Add a subtree (depth first, as Mininet numbers it); return its root."""
        if depth > 0:
            node = self.addSwitch(f"s{self.switchNum}")
            self.switchNum += 1
            for _ in range(fanout):
                self.addLink(node, self.addTree(depth - 1, fanout))
        else:
            node = self.addHost(f"h{self.hostNum}")
            self.hostNum += 1
        return node


def TreeNet(depth: int = 1, fanout: int = 2, **kwargs: Any) -> Any:  # noqa: N802
    return Mininet(TreeTopo(depth, fanout), **kwargs)


class TorusTopo(Topo):
    """Not supported yet: a torus needs loops, which learning switches without STP flood forever."""

    def build(self, *args: Any, **params: Any) -> None:
        raise MininetError("TorusTopo is not supported yet (switch loops need STP)")


__all__ = ["TreeTopo", "TreeNet", "TorusTopo"]
