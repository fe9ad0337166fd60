"""mininet/cli.py's ``CLI``: the ``mininet>`` prompt over a running network.

``h1 ping -c 3 h2`` runs on h1 with node names after the first word replaced by their
addresses (as Mininet does); ``pingall``, ``pingpair``, ``iperf``, ``dump``, ``net``,
``nodes``, ``links``, ``help``, ``exit``/``quit``/end of input. Lines are read from
``stdin`` (any text stream: tests feed a StringIO)."""

from __future__ import annotations

import cmd
import sys
from typing import IO, Any

from ..errors import BufferlabError
from .log import error, info, output
from .util import dumpNodeConnections


class CLI(cmd.Cmd):
    prompt = "mininet> "

    def __init__(self, mininet: Any, stdin: IO[str] | None = None, script: str | None = None,
                 **kwargs: Any) -> None:
        self.mn = mininet
        stdin = stdin or sys.stdin
        super().__init__(stdin=stdin, stdout=sys.stdout, **kwargs)
        self.use_rawinput = stdin is sys.stdin and stdin.isatty()
        info("*** Starting CLI:\n")
        if script is not None:
            with open(script, encoding="utf-8") as f:
                for line in f:
                    if self.onecmd(line.strip()):
                        break
            return
        self.run()

    def run(self) -> None:
        if not self.use_rawinput:
            self.prompt = ""  # a fed script: no prompt between its lines (Mininet prints none either)
        self.cmdloop()

    def emptyline(self) -> bool:
        return False

    def onecmd(self, line: str) -> bool:
        try:
            return bool(super().onecmd(line))
        except BufferlabError as e:  # a bad line: say why and keep the prompt
            error(f"*** Error: {e}\n")
            return False

    def default(self, line: str) -> None:
        first, args, line = self.parseline(line)
        if first in self.mn:
            if not args:
                error(f"*** Please enter a command for node: {first} <cmd>\n")
                return
            words = [self.mn[w].IP() or w if w in self.mn else w for w in args.split(" ")]
            output(self.mn[first].cmd(" ".join(words)))
        else:
            error(f"*** Unknown command: {line}\n")

    def do_nodes(self, _line: str) -> None:
        """List the nodes."""
        output("available nodes are: \n%s\n" % " ".join(sorted(self.mn.keys())))

    def do_net(self, _line: str) -> None:
        """List the links of every node."""
        dumpNodeConnections(self.mn.controllers + self.mn.switches + self.mn.hosts)

    def do_links(self, _line: str) -> None:
        """List the links."""
        for link in self.mn.links:
            output(link, link.status(), "\n")

    def do_dump(self, _line: str) -> None:
        """Describe every node."""
        for node in self.mn.values():
            output(f"{node!r}\n")

    def do_pingall(self, line: str) -> None:
        """Ping between all hosts."""
        self.mn.pingAll(line or None)

    def do_pingpair(self, _line: str) -> None:
        """Ping between the first two hosts."""
        self.mn.pingPair()

    def do_iperf(self, line: str) -> None:
        """TCP iperf between two hosts (iperf 2)."""
        self.mn.iperf([self.mn[h] for h in line.split()] or None)

    def do_iperfudp(self, line: str) -> None:
        """UDP iperf between two hosts (iperf 2)."""
        self.mn.iperf(l4Type="UDP")

    def do_exit(self, _line: str) -> str:
        """Exit."""
        return "exited by user command"

    def do_quit(self, line: str) -> str:
        """Exit."""
        return self.do_exit(line)

    def do_EOF(self, line: str) -> str:  # noqa: N802 (cmd.Cmd's name for end of input)
        """Exit."""
        output("\n")
        return self.do_exit(line)


__all__ = ["CLI"]
