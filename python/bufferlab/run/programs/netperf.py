"""``netserver`` and ``netperf`` (netperf 2.7; parser: commands/netperf.py, text:
formats/netperf.py, engine: app/rr/).

``netserver`` starts a TCP and a UDP ``rr_server`` on its port (12865). netperf's data
connection goes to that port too: netperf 2.7 opens a control connection there first and the
data connection to a port netserver picks; the control exchange, a few hundred bytes at the
start and end of a test, is not modelled. ``-t TCP_STREAM`` is an ``rr_client`` in ``stream``
mode, ``TCP_MAERTS`` in ``maerts`` mode (the server sends; ``-Y`` and ``-K`` give both ends' TOS
and congestion control), ``TCP_RR`` and ``UDP_RR`` in ``closed`` mode; ``-D`` asks for demo-mode
ticks. A test needs a netserver on its host, as netperf's control connection does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...commands import netperf as netperf_cmd
from ...commands.shell import Word
from ...formats import netperf as netperf_fmt
from ..context import NS, Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp
from ..engine import AppStartError
from ..services import Service, epoch_s, find, host_ip, register
from ..sockets import check_congestion, host_sysctls, tcp_spec


def _prep_netserver(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "netserver")
    cmd = netperf_cmd.parse_netserver(words)
    ip = host_ip(pc, node)

    def run(rt: RunCtx) -> Gen:
        try:
            tcp = rt.start_app(
                node,
                {"kind": "rr_server", "port": cmd.port, "proto": "tcp", "tcp": tcp_spec(rt, node, None)},
            )
            udp = rt.start_app(node, {"kind": "rr_server", "port": cmd.port, "proto": "udp"})
        except AppStartError:
            rt.io.err(f"netserver: bind to port {cmd.port} failed: Address already in use\n")
            return 1
        rt.note_listener(tcp, node)
        for app, proto in ((tcp, "tcp"), (udp, "udp")):
            register(
                rt,
                Service("netserver", ip, proto, cmd.port, app, node, rt.term.name, started_ns=rt.now_ns),
            )
        rt.io.out(f"Starting netserver with host 'IN(6)ADDR_ANY' port '{cmd.port}' and family AF_UNSPEC\n")
        if not cmd.foreground:  # it daemonises: the line returns, the server runs on
            rt.detach(tcp, lambda: None)
            rt.detach(udp, lambda: None)
            return 0
        yield WaitApp(tcp, True)
        if not rt.engine.app_finished(udp):
            rt.engine.stop_app(udp)
        return 0

    return Prepared(run, endless=cmd.foreground)


@dataclass
class NetperfRun:
    cmd: netperf_cmd.NetperfCommand
    node: str
    app: int = -1
    error: str | None = None
    start_ns: int = 0


def _netperf_spec(rt: RunCtx, node: str, cmd: netperf_cmd.NetperfCommand) -> dict[str, Any]:
    mode = {"TCP_STREAM": "stream", "TCP_MAERTS": "maerts", "TCP_RR": "closed", "UDP_RR": "closed"}[cmd.test]
    spec: dict[str, Any] = {
        "kind": "rr_client",
        "dst": cmd.data_host or cmd.host,
        "port": cmd.port,
        "proto": "udp" if cmd.test == "UDP_RR" else "tcp",
        "mode": mode,
        "duration_ns": round(cmd.length_s * NS),
        "tos": cmd.local_tos,
        "server_tos": cmd.remote_tos,
    }
    if cmd.rr:
        spec.update(request=cmd.request, response=cmd.response)
        if cmd.test == "UDP_RR" and cmd.timeout_s:
            spec["timeout_ns"] = round(cmd.timeout_s * NS)
    if cmd.demo_interval_s:
        spec["tick_ns"] = round(cmd.demo_interval_s * NS)
    if spec["proto"] == "tcp":
        spec["tcp"] = tcp_spec(rt, node, cmd.local_cc)
        if cmd.remote_cc:
            spec["server_congestion"] = cmd.remote_cc
    return spec


def netperf_start(rt: RunCtx, run: NetperfRun) -> None:
    cmd = run.cmd
    proto = "udp" if cmd.test == "UDP_RR" else "tcp"
    if find(rt, cmd.host, "tcp", cmd.port, "netserver") is None or (
        proto == "udp" and find(rt, cmd.data_host or cmd.host, "udp", cmd.port, "netserver") is None
    ):
        run.error = (
            f"establish control: are you sure there is a netserver listening on {cmd.host} at port "
            f"{cmd.port}?\nestablish_control could not establish the control connection from 0.0.0.0 "
            f"port 0 address family AF_INET to {cmd.host} port {cmd.port} address family AF_INET\n"
        )
        return
    run.start_ns = rt.now_ns
    try:
        run.app = rt.start_app(run.node, _netperf_spec(rt, run.node, cmd))
    except AppStartError as e:
        run.error = f"netperf: {e}\n"


def _server_conn(rt: RunCtx, cmd: netperf_cmd.NetperfCommand, result: dict[str, Any]) -> dict[str, Any]:
    """The netserver's record of this test's connection (its bytes, retransmits, MSS)."""
    svc = find(rt, cmd.data_host or cmd.host, "tcp", cmd.port)
    if svc is None or result.get("proto") != "tcp":
        return {}
    conns = rt.engine.app_result(svc.app).get("conns", {})
    for i, port in enumerate(conns.get("client_port", [])):
        if port == result.get("local_port"):
            return {k: v[i] for k, v in conns.items() if isinstance(v, list)} | {
                "congestion": conns.get("congestion")
            }
    return {}


def _netperf_result(rt: RunCtx, run: NetperfRun, result: dict[str, Any]) -> netperf_fmt.NetperfResult:
    cmd = run.cmd
    server = _server_conn(rt, cmd, result)
    start = int(result.get("connected_ns") or result["start_ns"])
    end = int(result["end_ns"])
    elapsed = max(end - start, 1) / NS
    tcp = result.get("tcp") or {}
    local = host_sysctls(rt, run.node)
    wmem, rmem = int(local["net.ipv4.tcp_wmem"][1]), int(local["net.ipv4.tcp_rmem"][1])
    fmt = cmd.fmt
    if cmd.test == "TCP_STREAM":
        units, direction = float(result["bytes_written"]), "Send"
    elif cmd.test == "TCP_MAERTS":
        units, direction = float(result["bytes_read"]), "Receive"
    else:
        units, direction, fmt = float(result["completed"]), "Send|Recv", "x"
    completed = int(result.get("completed") or 0)
    rate = completed / elapsed if cmd.rr else 0.0
    lat_us = int(result.get("latency_sum_ns") or 0) / max(completed, 1) / 1000
    return netperf_fmt.NetperfResult(
        cmd.test,
        fmt,
        elapsed,
        netperf_fmt.throughput(units, elapsed, fmt),
        "UDP" if cmd.test == "UDP_RR" else "TCP",
        direction,
        local_send_size=cmd.send_size or (cmd.request if cmd.rr else wmem),
        local_recv_size=cmd.recv_size or (cmd.response if cmd.rr else rmem),
        remote_send_size=cmd.response if cmd.rr else wmem,
        remote_recv_size=cmd.request if cmd.rr else rmem,
        local_bytes_sent=int(result["bytes_written"]),
        local_bytes_recvd=int(result["bytes_read"]),
        remote_bytes_sent=int(server.get("written", result["bytes_read"])),
        remote_bytes_recvd=int(server.get("read", result["bytes_written"])),
        lss_size=wmem,
        lsr_size=rmem,
        rss_size=wmem,
        rsr_size=rmem,
        request_size=cmd.request,
        response_size=cmd.response,
        transport_mss=int(tcp.get("mss", -1)) if tcp else -1,
        local_retrans=int(tcp.get("retransmits", 0)) if tcp else -1,
        remote_retrans=int(server.get("retransmits", 0)) if server else -1,
        local_tos=cmd.local_tos,
        remote_tos=cmd.remote_tos,
        local_cc=str(tcp.get("congestion", "")) if tcp else "",
        remote_cc=cmd.remote_cc or str(server.get("congestion") or ""),
        rt_latency_us=lat_us,
        transaction_rate=rate,
        mean_latency_us=lat_us,
        min_latency_us=int(result.get("latency_min_ns") or 0) // 1000,
        max_latency_us=int(result.get("latency_max_ns") or 0) // 1000,
    )


def netperf_text(rt: RunCtx, run: NetperfRun) -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of a finished netperf."""
    if run.error is not None:
        return run.error, "", 255
    cmd = run.cmd
    result = rt.engine.app_result(run.app)
    if result.get("error"):
        what = "send_omni: connect_data_socket failed" if cmd.test != "UDP_RR" else "send_omni: recv failed"
        return "", f"netperf: {what}: {result['error']}\n", 1
    res = _netperf_result(rt, run, result)
    out: list[str] = []
    if cmd.headers and not cmd.keyval:
        out.append(netperf_fmt.banner(cmd.test, cmd.host, cmd.host))
    epoch = epoch_s(rt)
    last = int(result["start_ns"])
    fmt = "x" if cmd.rr else cmd.fmt
    for k, (t, units) in enumerate(result.get("ticks") or []):
        dt = (t - last) / NS
        value = netperf_fmt.throughput(float(units), dt, fmt)
        if cmd.keyval:
            out.append(netperf_fmt.interim_keyval(k, value, fmt, dt, epoch + t / NS))
        else:
            out.append(netperf_fmt.interim_human(value, fmt, dt, epoch + t / NS))
        last = t
    if cmd.keyval:
        out.append(netperf_fmt.final_keyval(res, cmd.selectors))
    elif cmd.verbosity == 0:
        out.append(f"{res.throughput:7.2f} \n")
    else:
        out.append(netperf_fmt.human_report(res, headers=cmd.headers))
    return "".join(out), "", 0


def _prep_netperf(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "netperf")
    cmd = netperf_cmd.parse_netperf(words, resolve=pc.resolve_host)
    for cc in (cmd.local_cc, cmd.remote_cc):
        if cc:
            check_congestion(cc, words)

    def run(rt: RunCtx) -> Gen:
        nr = NetperfRun(cmd, node)
        netperf_start(rt, nr)
        if nr.app >= 0:
            yield WaitApp(nr.app, False, rt.now_ns + round(cmd.length_s * NS))
        out, err, status = netperf_text(rt, nr)
        rt.io.out(out)
        rt.io.err(err)
        return status

    return Prepared(run, endless=False)


PROGRAMS = (
    Program("netserver", _prep_netserver, "netperf's server (`-D` in the foreground, `-p PORT`)"),
    Program(
        "netperf",
        _prep_netperf,
        "netperf 2.7 TCP_STREAM, TCP_MAERTS, TCP_RR, UDP_RR, demo mode (`-D`), keyval output (`-- -k`)",
    ),
)
