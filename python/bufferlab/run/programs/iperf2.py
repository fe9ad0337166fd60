"""``iperf`` (iperf 2; parser: commands/iperf2.py, text: formats/iperf2.py). It runs on
the engine's iperf3 applications (docs/internals.md, "iperf 2 (`iperf`) runs on
`iperf3_client` / `iperf3_server`"), and its clients are in the part's ``iperf3`` rows."""

from __future__ import annotations

from ...commands import iperf2 as iperf2_cmd
from ...commands.shell import Word
from ...formats import iperf2 as iperf2_fmt
from ..context import Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp
from ..engine import AppStartError
from ..sockets import host_sysctls, tcp_spec
from .iperf3 import client_summary, server_summary, write_tool_output


def _prep_iperf(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "iperf")
    cmd = iperf2_cmd.parse_iperf(words)
    if isinstance(cmd, iperf2_cmd.IperfServer):
        return _server(node, cmd)
    return _client(node, cmd)


def _listen_buffer(rt: RunCtx, node: str, cmd: iperf2_cmd.IperfServer) -> int:
    """``getsockopt(SO_RCVBUF)`` of the listening socket: Linux doubles a
    ``-w`` request capped at net.core.rmem_max (net/core/sock.c ``sock_setsockopt``)."""
    values = host_sysctls(rt, node)
    if cmd.window:
        return 2 * min(cmd.window, int(values["net.core.rmem_max"]))
    return iperf2_fmt.UDP_SOCKBUF if cmd.udp else int(values["net.ipv4.tcp_rmem"][1])


def _server(node: str, cmd: iperf2_cmd.IperfServer) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        spec = cmd.to_request(tcp_spec(rt, node))
        try:
            app = rt.start_app(node, spec, summarise=server_summary("iperf"))
        except AppStartError as e:
            rt.io.err(f"bind failed: {e}")
            return 1
        rt.note_listener(app, node)
        rt.io.out(iperf2_fmt.server_header(cmd, _listen_buffer(rt, node, cmd)))
        yield WaitApp(app, True)
        rt.io.out(iperf2_fmt.server_text(rt.engine.app_result(app), cmd, rt.runner.sc.profile.epoch))
        return 0

    # an iperf 2 server serves until it is interrupted, as iperf3 -s does
    return Prepared(run, endless=True)


def _client(node: str, cmd: iperf2_cmd.IperfClient) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        profile = rt.runner.sc.profile
        spec = cmd.to_request(tcp_spec(rt, node), profile.iperf3_send_loop_us * 1000)
        try:
            app = rt.start_app(node, spec, summarise=client_summary)
        except AppStartError as e:
            rt.io.err(f"connect failed: {e}")
            return 1
        expected = rt.now_ns + cmd.duration_ns if cmd.duration_ns else None
        yield WaitApp(app, False, expected)
        result = rt.engine.app_result(app)
        values = host_sysctls(rt, node)
        buffer = iperf2_fmt.client_buffer(cmd, values["net.ipv4.tcp_wmem"], int(values["net.core.wmem_max"]),
                                          profile.kernel_max_tcp_header)
        out, err = iperf2_fmt.client_text(result, cmd, profile.epoch, buffer)
        write_tool_output(rt, None, out, err)
        return 1 if result.get("error") or result.get("interrupted") else 0

    return Prepared(run)


PROGRAMS = (
    Program(
        "iperf",
        _prep_iperf,
        "iperf 2 client (`-c`) and server (`-s`), TCP and UDP",
        catches=frozenset({2, 15}),
    ),
)
