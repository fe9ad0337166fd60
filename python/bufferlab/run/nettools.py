"""The tools Flent drives, and ``flent`` itself: ``netserver``, ``netperf``, ``irtt
client|server``, ``fping`` and ``flent TEST`` (docs/flent.md).

Parsers: commands/netperf.py, commands/irtt.py, commands/fping.py, commands/flent.py (and
commands/flent_tests.py for the tests); output: formats/netperf.py, formats/irtt.py,
formats/fping.py, outputs/flent_run.py and outputs/flent_plots.py; engine: app/rr.rs
(``rr_client``/``rr_server``) and app/ping.rs.

* ``netserver`` starts a TCP and a UDP ``rr_server`` on its port (12865). netperf's data
  connection goes to that port too (netperf 2.7 opens a control connection there first and
  the data connection to a port netserver picks: the control exchange, a few hundred bytes at
  the start and end of a test, is not modelled).
* ``netperf -t TCP_STREAM`` is an ``rr_client`` in ``stream`` mode, ``TCP_MAERTS`` in ``maerts``
  mode (the server sends, ``-Y`` and ``-K`` giving both ends' TOS and congestion control),
  ``TCP_RR``/``UDP_RR`` in ``closed`` mode; ``-D`` asks the client for demo-mode ticks.
* ``irtt client`` is a ``paced`` UDP ``rr_client`` to an ``irtt server`` (a UDP ``rr_server``
  on 2112, which answers each packet with one of the same length and class).
* ``fping`` is the engine's ``ping`` application without iputils' send lag.
* ``flent TEST`` runs its test's tools as flent's runners do (``runners.py``): the ICMP ping
  with fping ``-D -p STEP -c N``, the UDP probes with irtt when an irtt server answers on the
  host (else netperf UDP_RR), the TCP flows with ``netperf -P 0 -v 0 -D -STEP ... -k
  OUTPUT_VARS``; probes from the start for ``TOTAL_LENGTH``, flows after ``DELAY`` for
  ``LENGTH``. It then parses the tools' outputs as flent does, writes the data file into ``-D``,
  and prints the summary, or draws ``-p PLOT`` into ``-o FILE``.
"""

from __future__ import annotations

import gzip
import json
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..commands import flent as flent_cmd
from ..commands import fping as fping_cmd
from ..commands import irtt as irtt_cmd
from ..commands import netperf as netperf_cmd
from ..commands.flent_tests import (
    IPERF_UDP,
    NETPERF,
    PING,
    UDP_RTT,
    VOIP,
    DataSet,
    FlentTestError,
    build_test,
    tos_of,
)
from ..commands.shell import Word
from ..errors import CommandError, NotSupportedError
from ..formats import fping as fping_fmt
from ..formats import irtt as irtt_fmt
from ..formats import netperf as netperf_fmt
from ..outputs import flent_run
from ..outputs.flent_plots import FlentPlotError, draw_plot
from ..safefs import ensure_dir, open_write
from ..version import __version__
from . import services
from .context import NS, Gen, PrepareCtx, Prepared, RunCtx, WaitApp, WaitUntil
from .engine import AppStartError

__all__ = ["Helpers", "programs", "ENDLESS"]

FLENT_VERSION = "2.1.1"
#: what flent's netperf runner asks netperf for (runners.py NetperfDemoRunner.output_vars)
FLENT_OUTPUT_VARS = [
    "THROUGHPUT",
    "LOCAL_CONG_CONTROL",
    "REMOTE_CONG_CONTROL",
    "TRANSPORT_MSS",
    "LOCAL_TRANSPORT_RETRANS",
    "REMOTE_TRANSPORT_RETRANS",
    "LOCAL_SOCKET_TOS",
    "REMOTE_SOCKET_TOS",
    "DIRECTION",
    "ELAPSED_TIME",
    "PROTOCOL",
    "LOCAL_SEND_SIZE",
    "LOCAL_RECV_SIZE",
    "REMOTE_SEND_SIZE",
    "REMOTE_RECV_SIZE",
    "LOCAL_BYTES_SENT",
    "LOCAL_BYTES_RECVD",
    "REMOTE_BYTES_SENT",
    "REMOTE_BYTES_RECVD",
]
#: flent's --socket-timeout default: netperf UDP_RR gives up on a request after 2 s (-e 2)
FLENT_SOCKET_TIMEOUT_S = 2


@dataclass
class Helpers:
    """What the tools need of run/programs.py (passed in, so this module does not import it)."""

    tcp_spec: Callable[[RunCtx, str, str | None], dict[str, Any]]
    within: Callable[[RunCtx, Path], Path | None]
    check_congestion: Callable[[str | None, list[Word]], None]
    host_sysctls: Callable[[RunCtx, str], dict[str, Any]]


def _ip_of(pc: PrepareCtx, node: str) -> str:
    ip = pc.topo.host_ip(node)
    assert ip is not None, node
    return ip


def _epoch(rt: RunCtx) -> float:
    """Wall-clock seconds of simulated time 0 (the profile's epoch, as ``date`` shows it)."""
    return float(rt.runner.sc.profile.epoch)


# ============================================================ netserver


def _prep_netserver(h: Helpers, pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "netserver")
    cmd = netperf_cmd.parse_netserver(words)
    ip = _ip_of(pc, node)

    def run(rt: RunCtx) -> Gen:
        try:
            tcp = rt.start_app(
                node,
                {"kind": "rr_server", "port": cmd.port, "proto": "tcp", "tcp": h.tcp_spec(rt, node, None)},
            )
            udp = rt.start_app(node, {"kind": "rr_server", "port": cmd.port, "proto": "udp"})
        except AppStartError:
            rt.io.err(f"netserver: bind to port {cmd.port} failed: Address already in use\n")
            return 1
        rt.note_listener(tcp, node)
        for app, proto in ((tcp, "tcp"), (udp, "udp")):
            services.register(
                rt,
                services.Service(
                    "netserver", ip, proto, cmd.port, app, node, rt.term.name, started_ns=rt.now_ns
                ),
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

    return run


# ============================================================ netperf


@dataclass
class _NetperfRun:
    cmd: netperf_cmd.NetperfCommand
    node: str
    app: int = -1
    error: str | None = None
    start_ns: int = 0


def _netperf_spec(h: Helpers, rt: RunCtx, node: str, cmd: netperf_cmd.NetperfCommand) -> dict[str, Any]:
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
        spec["tcp"] = h.tcp_spec(rt, node, cmd.local_cc)
        if cmd.remote_cc:
            spec["server_congestion"] = cmd.remote_cc
    return spec


def _netperf_start(h: Helpers, rt: RunCtx, run: _NetperfRun) -> None:
    cmd = run.cmd
    proto = "udp" if cmd.test == "UDP_RR" else "tcp"
    if services.find(rt, cmd.host, "tcp", cmd.port, "netserver") is None or (
        proto == "udp" and services.find(rt, cmd.data_host or cmd.host, "udp", cmd.port, "netserver") is None
    ):
        run.error = (
            f"establish control: are you sure there is a netserver listening on {cmd.host} at port "
            f"{cmd.port}?\nestablish_control could not establish the control connection from 0.0.0.0 "
            f"port 0 address family AF_INET to {cmd.host} port {cmd.port} address family AF_INET\n"
        )
        return
    run.start_ns = rt.now_ns
    try:
        run.app = rt.start_app(run.node, _netperf_spec(h, rt, run.node, cmd))
    except AppStartError as e:
        run.error = f"netperf: {e}\n"


def _server_conn(rt: RunCtx, cmd: netperf_cmd.NetperfCommand, result: dict[str, Any]) -> dict[str, Any]:
    """The netserver's record of this test's connection (its bytes, retransmits, MSS)."""
    svc = services.find(rt, cmd.data_host or cmd.host, "tcp", cmd.port)
    if svc is None or result.get("proto") != "tcp":
        return {}
    conns = rt.engine.app_result(svc.app).get("conns", {})
    for i, port in enumerate(conns.get("client_port", [])):
        if port == result.get("local_port"):
            return {k: v[i] for k, v in conns.items() if isinstance(v, list)} | {
                "congestion": conns.get("congestion")
            }
    return {}


def _netperf_result(
    h: Helpers, rt: RunCtx, run: _NetperfRun, result: dict[str, Any]
) -> netperf_fmt.NetperfResult:
    cmd = run.cmd
    server = _server_conn(rt, cmd, result)
    start = int(result.get("connected_ns") or result["start_ns"])
    end = int(result["end_ns"])
    elapsed = max(end - start, 1) / NS
    tcp = result.get("tcp") or {}
    local = h.host_sysctls(rt, run.node)
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


def _netperf_text(h: Helpers, rt: RunCtx, run: _NetperfRun) -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of a finished netperf."""
    if run.error is not None:
        return run.error, "", 255
    cmd = run.cmd
    result = rt.engine.app_result(run.app)
    if result.get("error"):
        what = "send_omni: connect_data_socket failed" if cmd.test != "UDP_RR" else "send_omni: recv failed"
        return "", f"netperf: {what}: {result['error']}\n", 1
    res = _netperf_result(h, rt, run, result)
    out: list[str] = []
    if cmd.headers and not cmd.keyval:
        out.append(netperf_fmt.banner(cmd.test, cmd.host, cmd.host))
    epoch = _epoch(rt)
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


def _prep_netperf(h: Helpers, pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "netperf")
    cmd = netperf_cmd.parse_netperf(words, resolve=pc.resolve_host)
    for cc in (cmd.local_cc, cmd.remote_cc):
        if cc:
            h.check_congestion(cc, words)

    def run(rt: RunCtx) -> Gen:
        nr = _NetperfRun(cmd, node)
        _netperf_start(h, rt, nr)
        if nr.app >= 0:
            yield WaitApp(nr.app, False, rt.now_ns + round(cmd.length_s * NS))
        out, err, status = _netperf_text(h, rt, nr)
        rt.io.out(out)
        rt.io.err(err)
        return status

    return run


# ============================================================ irtt


def _prep_irtt(h: Helpers, pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "irtt")
    cmd = irtt_cmd.parse_irtt(words, resolve=pc.resolve_host)
    ip = _ip_of(pc, node)
    if isinstance(cmd, irtt_cmd.IrttServer):
        server = cmd

        def run_server(rt: RunCtx) -> Gen:
            try:
                app = rt.start_app(node, {"kind": "rr_server", "port": server.port, "proto": "udp"})
            except AppStartError:
                rt.io.err(f"Error: listen udp4 0.0.0.0:{server.port}: bind: address already in use\n")
                return 1
            services.register(
                rt,
                services.Service(
                    "irtt", ip, "udp", server.port, app, node, rt.term.name, started_ns=rt.now_ns
                ),
            )
            yield WaitApp(app, True)
            return 0

        return run_server
    client = cmd

    def run_client(rt: RunCtx) -> Gen:
        ir = _IrttRun(client, node, rt.term.name, ip)
        _irtt_start(rt, ir)
        if ir.app >= 0:
            yield WaitApp(ir.app, False, rt.now_ns + client.duration_ns)
        elif ir.error is not None:
            yield WaitUntil(rt.now_ns + 15 * NS)  # the open timeouts 1s, 2s, 4s, 8s pass unanswered
        text, err, status = _irtt_text(rt, ir)
        rt.io.err(err)
        if text and client.output is not None:
            _write_irtt_output(rt, client.output, text)
        return status

    return run_client


@dataclass
class _IrttRun:
    cmd: irtt_cmd.IrttClient
    node: str
    hostname: str
    ip: str
    app: int = -1
    error: str | None = None
    start_ns: int = 0


def _irtt_length(cmd: irtt_cmd.IrttClient) -> int:
    return max(cmd.length, irtt_cmd.MIN_LENGTH)


def _irtt_start(rt: RunCtx, ir: _IrttRun) -> None:
    cmd = ir.cmd
    if services.find(rt, cmd.host, "udp", cmd.port, "irtt") is None:
        ir.error = "Error: no reply from server\n"
        return
    if cmd.check_only:
        return
    ir.start_ns = rt.now_ns
    spec = {
        "kind": "rr_client",
        "dst": cmd.host,
        "port": cmd.port,
        "proto": "udp",
        "mode": "paced",
        "request": _irtt_length(cmd),
        "response": 0,
        "duration_ns": cmd.duration_ns,
        "interval_ns": cmd.interval_ns,
        "tos": cmd.dscp,
        "record": True,
    }
    try:
        ir.app = rt.start_app(ir.node, spec)
    except AppStartError as e:
        ir.error = f"Error: {e}\n"


def _irtt_document(rt: RunCtx, ir: _IrttRun) -> str:
    cmd = ir.cmd
    r = rt.engine.app_result(ir.app)
    tx = r["tx"]
    probes = [
        irtt_fmt.Probe(i, int(s), None if sv is None else int(sv), None if d is None else int(d), bool(late))
        for i, (s, sv, d, late) in enumerate(
            zip(tx["sent_ns"], tx["server_ns"], tx["done_ns"], tx["late"], strict=True)
        )
    ]
    for p in probes:  # a reply that came back says the server saw it; a lost one may still have been seen
        if p.server_ns is None and p.seq < int(r["server_received"]) and p.recv_ns is None:
            p.server_ns = p.sent_ns  # seen upstream, the reply lost: irtt reports it lost downstream
    svc = services.find(rt, cmd.host, "udp", cmd.port)
    local = f"{ir.ip}:{r['local_port']}"
    run = irtt_fmt.IrttRun(
        local,
        f"{cmd.host}:{cmd.port}",
        cmd.supplied,
        cmd.duration_ns,
        cmd.interval_ns,
        _irtt_length(cmd),
        cmd.dscp,
        int(r["start_ns"]),
        int(r["end_ns"]),
        _epoch(rt),
        ir.hostname,
        probes,
        duplicates=int(r["duplicates"]),
        server_received=int(r["server_received"]),
        server_start_ns=svc.started_ns if svc else 0,
        fill=cmd.fill,
        supplied_length=cmd.length,
    )
    return irtt_fmt.irtt_json(run)


def _irtt_text(rt: RunCtx, ir: _IrttRun) -> tuple[str, str, int]:
    """(the JSON document or "", stderr, status)."""
    if ir.error is not None:
        return "", ir.error, 1
    if ir.cmd.check_only:
        return "", "", 0
    return _irtt_document(rt, ir), "", 0


def _write_irtt_output(rt: RunCtx, name: str, text: str) -> None:
    """``-o -`` to stdout, NAME.json plain, anything else gzipped as irtt names it."""
    if name == "-":
        rt.io.out(text)
        return
    if not name.endswith(".json"):
        if name.endswith(".json.gz"):
            pass
        elif name.endswith(".gz"):
            name = name[:-3] + ".json.gz"
        else:
            name += ".json.gz"
    path = rt.term.cwd / name
    ensure_dir(path.parent)
    if name.endswith(".json"):
        with open_write(path, "w") as f:
            f.write(text)
    else:
        with open_write(path, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
            gz.write(text.encode())


# ============================================================ fping


def _fping_spec(cmd: fping_cmd.FpingCommand) -> dict[str, Any]:
    return {
        "kind": "ping",
        "dst": cmd.target,
        "count": cmd.count,
        "interval_ns": round(cmd.period_ms * 1e6),
        "size": cmd.size,
        "deadline_ns": None,
        "timeout_ns": round(cmd.timeout_ms * 1e6),
        "send_lag_ns": 0,
        "tos": cmd.tos,
    }


def _fping_text(rt: RunCtx, cmd: fping_cmd.FpingCommand, app: int) -> tuple[str, str, int]:
    r = rt.engine.app_result(app)
    out, err = fping_fmt.fping_text(
        r,
        cmd.target,
        period_ns=round(cmd.period_ms * 1e6),
        timeout_ns=round(cmd.timeout_ms * 1e6),
        end_ns=rt.now_ns,
        timestamps=cmd.timestamps,
        epoch_s=_epoch(rt),
        quiet=cmd.quiet,
    )
    return out, err, fping_fmt.fping_exit_status(r)


def _prep_fping(h: Helpers, pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "fping")
    cmd = fping_cmd.parse_fping(words, resolve=pc.resolve_host)

    def run(rt: RunCtx) -> Gen:
        try:
            app = rt.start_app(node, _fping_spec(cmd))
        except AppStartError:
            rt.io.err(f"{cmd.target}: error while sending ping: No route to host\n")
            return 2
        yield WaitApp(app, False, rt.now_ns + round(cmd.count * cmd.period_ms * 1e6))
        out, err, status = _fping_text(rt, cmd, app)
        rt.io.out(out)
        rt.io.err(err)
        return status

    return run


# ============================================================ flent


@dataclass
class _Runner:
    """One data set's tool within a flent run."""

    ds: DataSet
    start_s: float
    host: str
    node: str
    kind: str  # netperf, irtt, fping
    netperf: _NetperfRun | None = None
    irtt: _IrttRun | None = None
    fping: fping_cmd.FpingCommand | None = None
    app: int = -1
    started: bool = False
    error: str | None = None
    text: str = ""


@dataclass
class _FlentRun:
    runners: list[_Runner] = field(default_factory=list)


def _flent_runners(rt: RunCtx, test: Any, node: str, ip: str) -> list[_Runner]:
    out: list[_Runner] = []
    step = test.step
    for ds in test.measured():
        host = test.hosts[ds.host]
        start, length = test.start_s(ds), test.length_s(ds)
        r = _Runner(ds, start, host, node, "")
        if ds.runner == NETPERF:
            tos = tos_of(ds.marking), tos_of(ds.marking, second=True)
            cmd = netperf_cmd.NetperfCommand(
                host=host,
                data_host=host,
                test=ds.test or "TCP_STREAM",
                length_s=float(int(length)),
                demo_interval_s=step,
                fmt="m",
                headers=False,
                verbosity=0,
                local_tos=tos[0],
                remote_tos=tos[1],
                keyval=True,
                selectors=list(FLENT_OUTPUT_VARS),
                local_cc=ds.cc,
                remote_cc=ds.cc,
            )
            r.kind, r.netperf = "netperf", _NetperfRun(cmd, node)
        elif ds.runner in (UDP_RTT, VOIP):
            if services.find(rt, host, "udp", irtt_cmd.IRTT_PORT, "irtt") is not None or ds.runner == VOIP:
                interval = ds.interval or step
                cmd_i = irtt_cmd.IrttClient(
                    host,
                    0,
                    supplied=host,
                    duration_ns=round(length * NS),
                    interval_ns=round(interval * NS),
                    length=ds.size or 0,
                    dscp=tos_of(ds.marking),
                    output="-",
                    quiet=2,
                    fill="rand",
                )
                r.kind, r.irtt = "irtt", _IrttRun(cmd_i, node, rt.term.name, ip)
            else:  # flent falls back to netperf UDP_RR when irtt has no server to talk to
                tos = tos_of(ds.marking), tos_of(ds.marking, second=True)
                cmd = netperf_cmd.NetperfCommand(
                    host=host,
                    data_host=host,
                    test="UDP_RR",
                    length_s=float(int(length)),
                    demo_interval_s=step,
                    headers=False,
                    verbosity=0,
                    local_tos=tos[0],
                    remote_tos=tos[1],
                    keyval=True,
                    selectors=list(FLENT_OUTPUT_VARS),
                    timeout_s=FLENT_SOCKET_TIMEOUT_S,
                )
                r.kind, r.netperf = "netperf", _NetperfRun(cmd, node)
        elif ds.runner == PING:
            count = int(length // step + 1)
            r.kind = "fping"
            r.fping = fping_cmd.FpingCommand(
                host,
                0,
                count=count,
                period_ms=step * 1000,
                timeout_ms=length * 2000,
                timestamps=True,
                tos=tos_of(ds.marking),
            )
        out.append(r)
    return out


def _flent_start(h: Helpers, rt: RunCtx, r: _Runner) -> None:
    r.started = True
    if r.netperf is not None:
        _netperf_start(h, rt, r.netperf)
        r.app, r.error = r.netperf.app, r.netperf.error
    elif r.irtt is not None:
        _irtt_start(rt, r.irtt)
        r.app, r.error = r.irtt.app, r.irtt.error
    elif r.fping is not None:
        try:
            r.app = rt.start_app(r.node, _fping_spec(r.fping))
        except AppStartError as e:
            r.error = str(e)


def _flent_text(h: Helpers, rt: RunCtx, r: _Runner) -> str:
    if r.netperf is not None:
        out, err, _ = _netperf_text(h, rt, r.netperf)
        return out
    if r.irtt is not None:
        text, _, _ = _irtt_text(rt, r.irtt)
        return text
    if r.fping is not None and r.app >= 0:
        out, err, _ = _fping_text(rt, r.fping, r.app)
        return out + err
    return ""


def _flent_parse(r: _Runner, step: float) -> flent_run.Measured:
    if not r.text.strip():
        return flent_run.Measured()
    if r.kind == "netperf":
        assert r.netperf is not None
        return flent_run.parse_netperf_demo(r.text, r.netperf.cmd.test)
    if r.kind == "irtt":
        multi = r.ds.runner == VOIP
        return flent_run.parse_irtt(r.text, sample_every=step if multi else 0.0, multi=multi)
    return flent_run.parse_ping_lines(r.text)


def _prep_flent(h: Helpers, pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "flent")
    ip = _ip_of(pc, node)
    cmd = flent_cmd.parse_flent(words, resolve=pc.resolve_host)
    if cmd.inputs:
        return _flent_input(h, cmd)
    assert cmd.test is not None
    test_word = next(w for w in words if w.text == cmd.test)
    try:
        test = build_test(cmd.test, cmd.hosts, cmd.length, delay=cmd.delay, step=cmd.step, params=cmd.params)
    except FlentTestError as e:
        raise CommandError(
            f"flent: {e}", col=test_word.col, expected="flent TEST -H HOST [--test-parameter KEY=VALUE]"
        ) from None
    for ds in test.measured():
        if ds.runner == IPERF_UDP:
            raise NotSupportedError(
                f"flent {cmd.test} (its iperf 2 UDP flood) is not supported yet",
                col=test_word.col,
                expected="a TCP or ping test, e.g. rrul or tcp_nup",
            )
        if ds.cc:
            h.check_congestion(ds.cc, [Word(ds.cc, test_word.col)])
        try:
            tos_of(ds.marking)
        except FlentTestError as e:
            raise CommandError(f"flent: {e}", col=test_word.col) from None
    if cmd.plot is not None and cmd.plot not in test.plots:
        raise CommandError(
            f"flent: Unable to find plot configuration '{cmd.plot}'",
            col=cmd.plot_col,
            expected="one of " + ", ".join(test.plots),
        )
    if cmd.fmt == "plot" and cmd.output is None:
        raise NotSupportedError(
            "flent -p without -o (an interactive plot window) is not supported",
            col=cmd.plot_col,
            expected="-p PLOT -o FILE.png",
        )

    def run(rt: RunCtx) -> Gen:
        t0 = rt.now_ns
        runners = _flent_runners(rt, test, node, ip)
        if not cmd.quiet:
            rt.io.err(
                f"Started Flent {FLENT_VERSION} using Python 3.10.12.\n"
                f"Starting {test.name} test. Expected run time: {int(test.total_length)} seconds.\n"
            )
        for at in sorted({r.start_s for r in runners}):
            t = t0 + round(at * NS)
            if t > rt.now_ns:
                yield WaitUntil(t)
            for r in runners:
                if r.start_s == at:
                    _flent_start(h, rt, r)
        end = t0 + round(test.total_length * NS)
        for r in runners:
            if r.app >= 0 and not rt.engine.app_finished(r.app):
                yield WaitApp(r.app, False, end)
        for r in runners:  # Ctrl-C reached one: the others stop with it
            if r.app >= 0 and not rt.engine.app_finished(r.app):
                rt.engine.stop_app(r.app)
        measured: dict[str, flent_run.Measured] = {}
        failed = []
        for r in runners:
            r.text = _flent_text(h, rt, r)
            m = _flent_parse(r, test.step)
            measured[r.ds.name] = m
            if r.error or not (m.raw or m.results):
                failed.append(r)
        for r in failed:
            why = (r.error or "no data").strip().splitlines()[-1]
            rt.io.err(f"WARNING: Program exited non-zero: {r.kind} for {r.ds.name!r}: {why}\n")
        doc = flent_run.build_document(
            test,
            measured,
            local_host=rt.term.name,
            title=cmd.title or None,
            note=cmd.note,
            version=f"{FLENT_VERSION} (bufferlab {__version__})",
            started_s=_epoch(rt) + t0 / NS,
        )
        data_dir = h.within(rt, rt.term.cwd / cmd.data_dir)
        if data_dir is None:
            rt.io.err(f"flent: {cmd.data_dir}: outside the node's results folder\n")
            return 1
        ensure_dir(data_dir)
        path = flent_run.write_document(doc, data_dir / doc["metadata"]["DATA_FILENAME"])
        rel = Path(cmd.data_dir) / path.name
        if not cmd.quiet:
            rt.io.err(
                f"Data file written to {rel.as_posix() if cmd.data_dir != '.' else './' + path.name}.\n"
            )
        _note_flent(rt, path, doc)
        return _flent_output(h, rt, cmd, test, doc)

    return run


def _flent_output(h: Helpers, rt: RunCtx, cmd: flent_cmd.FlentCommand, test: Any, doc: dict[str, Any]) -> int:
    if cmd.fmt == "plot":
        assert cmd.plot is not None and cmd.output is not None
        out = h.within(rt, rt.term.cwd / cmd.output)
        if out is None:
            rt.io.err(f"flent: {cmd.output}: outside the node's results folder\n")
            return 1
        if out.suffix.lower() not in (".png", ".svg", ".pdf", ".ps", ".eps"):
            rt.io.err(f"ERROR: Unrecognised file format for output '{cmd.output}'\n")
            return 1
        ensure_dir(out.parent)
        try:
            draw_plot(test, doc, cmd.plot, out)
        except FlentPlotError as e:
            rt.io.err(f"ERROR: {e}\n")
            return 1
        return 0
    text = flent_run.summary_text(doc)
    if cmd.output:
        out = h.within(rt, rt.term.cwd / cmd.output)
        if out is None:
            rt.io.err(f"flent: {cmd.output}: outside the node's results folder\n")
            return 1
        ensure_dir(out.parent)
        with open_write(out, "w") as f:
            f.write(text)
    else:
        rt.io.out(text)
    return 0


def _flent_input(h: Helpers, cmd: flent_cmd.FlentCommand) -> Prepared:
    """``flent -i FILE [-p PLOT -o OUT]``: summarise or plot a data file already written."""

    def run(rt: RunCtx) -> int:
        for name in cmd.inputs:
            path = h.within(rt, rt.term.cwd / name)
            if path is None or not path.is_file():
                rt.io.err(f"ERROR: Unable to find file: {name}\n")
                return 1
            try:
                with gzip.open(path, "rt", encoding="utf-8") as f:
                    doc = json.load(f)
                md = doc["metadata"]
                test = build_test(
                    md["NAME"],
                    list(md.get("HOSTS") or [md["HOST"]]),
                    float(md["LENGTH"]),
                    delay=(float(md["TOTAL_LENGTH"]) - float(md["LENGTH"])) / 2,
                    step=float(md["STEP_SIZE"]),
                    params=dict(md.get("TEST_PARAMETERS") or {}),
                )
            except (OSError, ValueError, KeyError, FlentTestError) as e:
                rt.io.err(f"ERROR: Unable to load data file {name}: {e}\n")
                return 1
            if cmd.plot is not None and cmd.plot not in test.plots:
                rt.io.err(f"ERROR: Unable to find plot configuration '{cmd.plot}'\n")
                return 1
            status = _flent_output(h, rt, cmd, test, doc)
            if status:
                return status
        return 0

    def gen(rt: RunCtx) -> Gen:
        return run(rt)
        yield  # pragma: no cover

    return gen


#: the flent runs of each run (runner): their part, terminal, data file and per-series means
_FLENT_RUNS: weakref.WeakKeyDictionary[Any, list[dict[str, Any]]] = weakref.WeakKeyDictionary()


def _note_flent(rt: RunCtx, path: Path, doc: dict[str, Any]) -> None:
    means = {
        k: {
            "mean": None if v["mean"] is None or not math.isfinite(v["mean"]) else round(v["mean"], 3),
            "units": v["units"],
        }
        for k, v in flent_run.series_means(doc).items()
    }
    _FLENT_RUNS.setdefault(rt.runner, []).append(
        {
            "part": rt.sched.part.name,
            "node": rt.term.name,
            "test": doc["metadata"]["NAME"],
            "file": path.resolve().relative_to(rt.runner.root.resolve()).as_posix(),
            "means": means,
        }
    )


def flent_rows(runner: Any, part: str) -> list[dict[str, Any]]:
    """The flent runs of ``part``: their data files and per-series means (the part's summary)."""
    return [r for r in _FLENT_RUNS.get(runner, []) if r["part"] == part]


# ============================================================ registration


def programs(h: Helpers) -> dict[str, Callable[[PrepareCtx, list[Word]], Prepared]]:
    def bind(
        f: Callable[[Helpers, PrepareCtx, list[Word]], Prepared],
    ) -> Callable[[PrepareCtx, list[Word]], Prepared]:
        return lambda pc, words: f(h, pc, words)

    return {
        "netserver": bind(_prep_netserver),
        "netperf": bind(_prep_netperf),
        "irtt": bind(_prep_irtt),
        "fping": bind(_prep_fping),
        "flent": bind(_prep_flent),
    }


def _endless_netserver(words: list[Word]) -> bool:
    return netperf_cmd.parse_netserver(words).foreground


def _endless_irtt(words: list[Word]) -> bool:
    return len(words) > 1 and words[1].text == "server"


#: commands that may never end on their own (run/scheduler.py ``_endless``)
ENDLESS: dict[str, Callable[[list[Word]], bool]] = {"netserver": _endless_netserver, "irtt": _endless_irtt}
