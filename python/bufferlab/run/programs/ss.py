"""``ss``: the sockets of the terminal's host (parser: commands/ss.py; text:
formats/ss.py; the listing: the engine's socket table, app/sockets/diag.rs).

UDP sockets come before TCP ones, and listeners before connections, as ss dumps them
(the kernel's order within a table is its hash order; here it is creation order).
Listed: the TCP connections of the host's applications and their listeners, and
their UDP sockets. Not listed, documented in docs/semantics/formats.md: iperf3's
control connection (a message exchange in the model, not a TCP connection), and a
connection once its application has ended (Linux keeps it a while in FIN-WAIT or
TIME-WAIT).
"""

from __future__ import annotations

from ...commands import ss as ss_cmd
from ...commands.shell import Word
from ...formats import ss as fmt
from ..context import PrepareCtx, Prepared, Program, RunCtx


def _prep_ss(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "ss")
    modern = pc.profile.name == "modern"
    cmd = ss_cmd.parse_ss(words, modern)
    view = fmt.SsView(modern, numeric=cmd.numeric, info=cmd.info, options=cmd.options, extended=cmd.extended,
                      memory=cmd.memory, header=cmd.header, netid=cmd.netid_column, state=cmd.state_column)

    def run(rt: RunCtx) -> int:
        entries = rt.engine.sockets(node)
        out = ""
        if cmd.summary:
            estab = rt.engine.netstat(node)["Tcp"]["CurrEstab"]
            out += fmt.summary_text(entries, estab, view)
        if cmd.tcp or cmd.udp:
            shown = [e for e in entries if e["proto"] == "udp" and cmd.keeps(e)]
            shown += [e for e in entries if e["proto"] == "tcp" and cmd.keeps(e)]
            out += fmt.ss_text(shown, view)
        rt.io.out(out)
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program("ss", _prep_ss, "`ss -t|-u [-a|-l] [-n] [-i] [-o] [-e] [-m] [-s] [-H] [state S] [FILTER]`: the "
            "host's sockets, `-i` their TCP information, `-m` their memory (iproute2)"),
)
