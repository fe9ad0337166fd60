"""``ns3-goodput``: the goodput block the ns-3 RED-vs-DropTail program prints
(docs/semantics/formats.md §10), computed from the part's ``sink`` commands.

``ns3-goodput [-t SECONDS] [--sep C] LABEL=NODE[:PORT][/udp|/tcp] ...``

For each argument, in order, it prints ::

    <blank line>
    LABEL:
    \\tTotal Bytes Received:<bytes>
    \\tGoodput:<floor(bytes / SECONDS)> Bytes/seconds

and finally ``\\nIt worked!``. The bytes are what the sink on NODE (port
PORT, default 5001; ``/udp`` or ``/tcp`` when both kinds listen there) has
received so far in this part — run it after the flows' time, e.g.
``admin: sleep 15; ns3-goodput TCP1=n8:9 TCP2=n9:9 UDP=n7:9``. SECONDS is the
divisor of the ns-3 program (its ``15.0``); default: the time since the part
started. ``--sep _`` joins "Total Bytes Received" with underscores (the
handout's OCR spelling).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import CommandError
from ..units import parse_duration_ns
from .shell import Word

__all__ = ["GoodputEntry", "Ns3GoodputCommand", "parse_ns3_goodput", "goodput_block"]

USAGE = "ns3-goodput [-t SECONDS] [--sep C] LABEL=NODE[:PORT][/udp|/tcp] ..."
_ENTRY = re.compile(r"([^=\s]+)=([A-Za-z][A-Za-z0-9_]*)(?::(\d+))?(?:/(udp|tcp))?")


@dataclass
class GoodputEntry:
    label: str
    node: str
    port: int = 5001
    proto: str | None = None
    col: int = 0


@dataclass
class Ns3GoodputCommand:
    entries: list[GoodputEntry] = field(default_factory=list)
    #: the divisor in ns; None = time since the part started
    seconds_ns: int | None = None
    sep: str = " "


def parse_ns3_goodput(words: list[Word], nodes: set[str]) -> Ns3GoodputCommand:
    """Parse the command line (``words[0]`` is the program name)."""
    cmd = Ns3GoodputCommand()
    i = 1
    while i < len(words):
        w = words[i]
        if w.text in ("-t", "--sep"):
            if i + 1 >= len(words):
                raise CommandError(f"ns3-goodput: {w.text} needs a value", col=w.col, expected=USAGE)
            v = words[i + 1]
            if w.text == "-t":
                ns = parse_duration_ns(v.text, v.col)
                if ns <= 0:
                    raise CommandError("ns3-goodput: -t must be longer than 0", col=v.col, expected=USAGE)
                cmd.seconds_ns = ns
            else:
                if len(v.text) != 1:
                    raise CommandError("ns3-goodput: --sep takes one character", col=v.col,
                                       expected="--sep _ (or a space)")
                cmd.sep = v.text
            i += 2
            continue
        if w.text.startswith("-"):
            raise CommandError(f"ns3-goodput: unknown option {w.text}", col=w.col, expected=USAGE)
        m = _ENTRY.fullmatch(w.text)
        if m is None:
            raise CommandError(f"ns3-goodput: cannot read {w.text!r}", col=w.col,
                               expected="LABEL=NODE[:PORT][/udp|/tcp]",
                               suggestion="e.g. TCP1=n8:9 or UDP=n7:9/udp")
        label, node, port, proto = m.groups()
        if node not in nodes:
            raise CommandError(f"ns3-goodput: no node named {node!r}", col=w.col + len(label) + 1,
                               expected="a host of the topology")
        p = int(port) if port else 5001
        if not 1 <= p <= 65535:
            raise CommandError(f"ns3-goodput: invalid port {p}", col=w.col, expected="a port 1..65535")
        cmd.entries.append(GoodputEntry(label, node, p, proto, w.col))
        i += 1
    if not cmd.entries:
        raise CommandError("ns3-goodput: name at least one sink", col=words[0].col, expected=USAGE,
                           suggestion="e.g. ns3-goodput -t 15 TCP1=n8:9 TCP2=n9:9 UDP=n7:9")
    return cmd


def goodput_block(rows: list[tuple[str, int]], seconds: float, sep: str = " ") -> str:
    """The ns-3 program's output for (label, bytes received) rows: goodput is
    the C++ ``int`` of ``bytes / seconds`` (truncation)."""
    total = sep.join(("Total", "Bytes", "Received"))
    out = ""
    for label, rx in rows:
        out += f"\n{label}:\n\t{total}:{rx}\n\tGoodput:{int(rx / seconds)} Bytes/seconds\n"
    return out + "\nIt worked!\n"
