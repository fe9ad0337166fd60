"""``sysctl``: the host's kernel settings that the model reads (commands/sysctl.py
``MODELLED_KEYS``), stored per host since each Mininet host is a network namespace."""

from __future__ import annotations

from ...commands import sysctl as sysctl_cmd
from ...commands.shell import Word
from ..context import PrepareCtx, Prepared, Program, RunCtx
from ..sockets import tcp_spec


def _prep_sysctl(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = sysctl_cmd.parse_sysctl(words, pc.diag)

    def run(rt: RunCtx) -> int:
        store = rt.runner.sysctl.setdefault(rt.term.name, {})
        out, err, status = sysctl_cmd.execute_sysctl(cmd, store)
        rt.io.out(out)
        rt.io.err(err)
        # servers already listening on this host accept later connections with
        # the new settings (Linux reads net.ipv4.tcp_* when a socket is created)
        for app, (host, congestion) in rt.runner.tcp_listeners.items():
            if host == rt.term.name and not rt.engine.app_finished(app):
                rt.engine.set_listener_tcp(app, tcp_spec(rt, host, congestion=congestion))
        return status

    return Prepared.at_once(run)


PROGRAMS = (
    Program(
        "sysctl",
        _prep_sysctl,
        "`sysctl -w KEY=VALUE` and `sysctl KEY` for the keys the model uses",
        configures=True,
    ),
)
