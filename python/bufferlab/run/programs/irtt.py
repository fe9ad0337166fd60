"""``irtt client`` and ``irtt server`` (irtt 0.9; parser: commands/irtt.py, JSON:
formats/irtt.py, engine: app/rr/). The server is a UDP ``rr_server`` on 2112 answering each
packet with one of the same length and class; the client a ``paced`` UDP ``rr_client`` whose
transactions become irtt's round trips."""

from __future__ import annotations

import gzip
from dataclasses import dataclass

from ...commands import irtt as irtt_cmd
from ...commands.shell import Word
from ...formats import irtt as irtt_fmt
from ...safefs import ensure_dir, open_write
from ..context import NS, Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp, WaitUntil
from ..engine import AppStartError
from ..services import Service, epoch_s, find, host_ip, register


def _prep_irtt(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "irtt")
    cmd = irtt_cmd.parse_irtt(words, resolve=pc.resolve_host)
    ip = host_ip(pc, node)
    if isinstance(cmd, irtt_cmd.IrttServer):
        server = cmd

        def run_server(rt: RunCtx) -> Gen:
            try:
                app = rt.start_app(node, {"kind": "rr_server", "port": server.port, "proto": "udp"})
            except AppStartError:
                rt.io.err(f"Error: listen udp4 0.0.0.0:{server.port}: bind: address already in use\n")
                return 1
            register(
                rt,
                Service("irtt", ip, "udp", server.port, app, node, rt.term.name, started_ns=rt.now_ns),
            )
            yield WaitApp(app, True)
            return 0

        return Prepared(run_server, endless=True)
    client = cmd

    def run_client(rt: RunCtx) -> Gen:
        ir = IrttRun(client, node, rt.term.name, ip)
        irtt_start(rt, ir)
        if ir.app >= 0:
            yield WaitApp(ir.app, False, rt.now_ns + client.duration_ns)
        elif ir.error is not None:
            yield WaitUntil(rt.now_ns + 15 * NS)  # the open timeouts 1s, 2s, 4s, 8s pass unanswered
        text, err, status = irtt_text(rt, ir)
        rt.io.err(err)
        if text and client.output is not None:
            _write_irtt_output(rt, client.output, text)
        return status

    return Prepared(run_client, endless=False)


@dataclass
class IrttRun:
    cmd: irtt_cmd.IrttClient
    node: str
    hostname: str
    ip: str
    app: int = -1
    error: str | None = None
    start_ns: int = 0


def _irtt_length(cmd: irtt_cmd.IrttClient) -> int:
    return max(cmd.length, irtt_cmd.MIN_LENGTH)


def irtt_start(rt: RunCtx, ir: IrttRun) -> None:
    cmd = ir.cmd
    if find(rt, cmd.host, "udp", cmd.port, "irtt") is None:
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


def _irtt_document(rt: RunCtx, ir: IrttRun) -> str:
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
    svc = find(rt, cmd.host, "udp", cmd.port)
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
        epoch_s(rt),
        ir.hostname,
        probes,
        duplicates=int(r["duplicates"]),
        server_received=int(r["server_received"]),
        server_start_ns=svc.started_ns if svc else 0,
        fill=cmd.fill,
        supplied_length=cmd.length,
    )
    return irtt_fmt.irtt_json(run)


def irtt_text(rt: RunCtx, ir: IrttRun) -> tuple[str, str, int]:
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


PROGRAMS = (Program("irtt", _prep_irtt, "irtt 0.9 `client` (JSON with `-o`, `-Q`) and `server`"),)
