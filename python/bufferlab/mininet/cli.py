"""mininet/cli.py's interface: ``CLI(net)``, the ``mininet>`` prompt.

Commands: ``pingall``, ``pingpair``, ``iperf``, ``dump``, ``net``, ``nodes``,
``links``, ``time`` (simulated seconds so far), ``sh`` (the root namespace),
``exit``/``quit``/EOF, ``help``; any other line starting with a node name runs
the rest in that node, with other node names replaced by their IP address, as
in Mininet (``h1 ping -c 3 h2``). Input is read from ``stdin`` (a file works).
"""

from __future__ import annotations

import cmd
import sys
from typing import Any, TextIO

from ..errors import BufferlabError
from . import clock
from .log import error, output
from .net import Mininet
from .util import dumpNodeConnections, natural


class CLI(cmd.Cmd):
    prompt = "mininet> "

    def __init__(self, mininet: Mininet, stdin: TextIO = sys.stdin, script: str | None = None,
                 **kwargs: Any) -> None:
        self.mn = mininet
        super().__init__(stdin=stdin)
        self.use_rawinput = stdin is sys.stdin and sys.stdin.isatty()
        if script is not None:
            with open(script, encoding="utf-8") as f:
                for line in f:
                    self.onecmd(line)
            return
        self.run()

    def run(self) -> None:
        if not self.use_rawinput:
            self.prompt = ""
        try:
            self.cmdloop()
        except KeyboardInterrupt:  # SIGINT or SIGTERM: the command (mn, the script) ends, results written
            output("\nInterrupt\n")
            raise

    def emptyline(self) -> bool:
        return False

    def onecmd(self, line: str) -> bool:
        try:
            return super().onecmd(line)
        except BufferlabError as e:  # a mistyped command does not end the session
            error(f"*** Error: {e}\n")
            return False

    def do_pingall(self, line: str) -> None:
        """Ping between all hosts."""
        self.mn.pingAll(line.strip() or None)

    def do_pingpair(self, _line: str) -> None:
        """Ping between the first two hosts."""
        self.mn.pingPair()

    def do_iperf(self, line: str) -> None:
        """TCP throughput between two hosts (iperf 2): iperf [src dst]."""
        args = line.split()
        if args and len(args) != 2:
            error("invalid number of args: iperf src dst\n")
            return
        self.mn.iperf([self.mn.get(n) for n in args] or None)

    def do_iperfudp(self, line: str) -> None:
        """UDP throughput between two hosts (iperf 2): iperfudp bw [src dst]."""
        args = line.split()
        if len(args) not in (1, 3):
            error("invalid number of args: iperfudp bw src dst\nbw examples: 10M\n")
            return
        self.mn.iperf([self.mn.get(n) for n in args[1:]] or None, l4Type="UDP", udpBw=args[0])

    def do_dump(self, _line: str) -> None:
        """Every node with its interfaces and addresses."""
        for node in self.mn.values():
            output(f"{node!r}\n")

    def do_net(self, _line: str) -> None:
        """Every node's connections."""
        dumpNodeConnections(self.mn.values())

    def do_nodes(self, _line: str) -> None:
        """The nodes' names."""
        output("available nodes are: \n%s\n" % " ".join(sorted(self.mn.keys(), key=natural)))

    def do_links(self, _line: str) -> None:
        """Every link and its status."""
        for link in self.mn.links:
            output(str(link), link.status(), "\n")

    def do_time(self, _line: str) -> None:
        """Simulated seconds since the network started."""
        output(f"{clock.time():.6f}\n")

    def do_sh(self, line: str) -> None:
        """Run a simulated tool in the root namespace (e.g. sh tc -s qdisc show dev s1-eth1)."""
        job = clock._current[0].start("admin", line)
        job.wait()
        output(job.output())

    def do_exit(self, _line: str) -> bool:
        """Leave the CLI."""
        return True

    do_quit = do_exit

    def do_EOF(self, _line: str) -> bool:  # noqa: N802 (cmd.Cmd's name)
        output("\n")
        return True

    def default(self, line: str) -> None:
        first, _, rest = line.strip().partition(" ")
        if first not in self.mn:
            error(f"*** Unknown command: {line.strip()}\n")
            return
        words = [str(self.mn[w].IP()) if w in self.mn and self.mn[w].IP() else w for w in rest.split()]
        node = self.mn[first]
        out = node.cmd(" ".join(words))
        output(out)


__all__ = ["CLI"]
