"""``iperf3`` (parser: commands/iperf3.py, text and JSON: formats/iperf3/, engine:
app/iperf3.rs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...commands import iperf3 as iperf3_cmd
from ...commands._common import option_col
from ...commands.shell import Word
from ...errors import NotSupportedError
from ...formats import iperf3 as iperf3_fmt
from ...safefs import open_write
from ..context import (
    NS,
    AppRecord,
    Gen,
    PartSummary,
    PrepareCtx,
    Prepared,
    Program,
    RunCtx,
    Summarise,
    WaitApp,
    resolved_in_home,
)
from ..engine import AppStartError
from ..sockets import check_congestion, tcp_spec


def _prep_iperf3(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "iperf3")
    cmd = iperf3_cmd.parse_iperf3(words, pc.diag, pc.profile)
    if isinstance(cmd, iperf3_cmd.Iperf3Client):
        check_congestion(cmd.congestion, words)
    # Real iperf3 values the engine's applications cannot run (they need a positive
    # interval and rate): refused here with their position rather than at run time.
    if cmd.interval_s == 0:
        raise NotSupportedError(
            "iperf3 -i 0 (no interval reports) is not supported yet",
            col=option_col(words, "-i", "--interval"),
            expected="-i SECONDS between 0.1 and 60",
        )
    if isinstance(cmd, iperf3_cmd.Iperf3Server):
        return _server(node, cmd)
    iperf3_cmd.ensure_supported(cmd)
    if cmd.protocol == "udp" and cmd.rate_bps == 0:
        raise NotSupportedError(
            "iperf3 -u -b 0 (an unlimited UDP rate) is not supported yet",
            col=option_col(words, "-b", "--bitrate", "--bandwidth"),
            expected="-b RATE, e.g. -b 10M",
        )
    return _client(node, cmd)


def _open_logfile(rt: RunCtx, logfile: str | None) -> tuple[bool, Path | None]:
    """iperf3 opens ``--logfile`` (append) when it starts, relative to the directory
    it starts in: (True, its path or None), or (False, None) after iperf3's error
    text if it cannot, as iperf3 exits then."""
    if not logfile:
        return True, None
    path = resolved_in_home(rt.term, rt.term.cwd / logfile)
    try:
        if path is None:
            raise PermissionError(13, "Permission denied (outside the node's results folder)")
        with open_write(path, "a"):
            pass
    except OSError as e:
        rt.io.err(f"iperf3: error - unable to open log file: {e.strerror}")
        return False, None
    return True, path


def write_tool_output(rt: RunCtx, logfile: Path | None, text: str, stderr: str = "") -> None:
    """A tool's report: into its log file if it has one, else on its outputs."""
    if logfile:
        with open_write(logfile, "a") as f:
            f.write(text + stderr)
    else:
        rt.io.out(text)
        rt.io.err(stderr)


def _server(node: str, cmd: iperf3_cmd.Iperf3Server) -> Prepared:
    spec = {
        "kind": "iperf3_server",
        "port": cmd.port,
        "one_off": cmd.one_off,
        "interval_ns": round(cmd.interval_s * NS),
    }

    def emit(rt: RunCtx, app: int, log: Path | None) -> None:
        result = rt.engine.app_result(app)
        profile = rt.runner.sc.profile
        text = (
            iperf3_fmt.server_json(result, profile) if cmd.json else iperf3_fmt.server_text(result, profile)
        )
        write_tool_output(rt, log, text)

    def run(rt: RunCtx) -> Gen:
        ok, log = _open_logfile(rt, cmd.logfile)
        if not ok:
            return 1
        spec["tcp"] = tcp_spec(rt, node)  # accepted data connections use this host's sysctls
        try:
            app = rt.start_app(node, spec, summarise=server_summary("iperf3"))
        except AppStartError as e:
            rt.io.err(str(e))
            return 1
        rt.note_listener(app, node)
        if cmd.daemon:
            rt.detach(app, lambda: emit(rt, app, log) if log else None)
            return 0
        yield WaitApp(app, True)
        emit(rt, app, log)
        return 0

    return Prepared(run, endless=not cmd.daemon and not cmd.one_off)


def _client(node: str, cmd: iperf3_cmd.Iperf3Client) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        ok, log = _open_logfile(rt, cmd.logfile)
        if not ok:
            return 1
        profile = rt.runner.sc.profile
        spec = cmd.to_request(profile, tcp_spec(rt, node))
        try:
            app = rt.start_app(node, spec, summarise=client_summary)
        except AppStartError as e:
            rt.io.err(f"iperf3: error - unable to connect to server: {e}")
            return 1
        expected = rt.now_ns + spec["duration_ns"] + spec["omit_ns"] if cmd.duration_s else None
        yield WaitApp(app, cmd.until_interrupted, expected)
        result = rt.engine.app_result(app)
        failed = bool(result.get("error")) or bool(result.get("interrupted"))
        if cmd.json:
            write_tool_output(rt, log, iperf3_fmt.client_json(result, cmd, profile))
        elif result.get("error"):
            write_tool_output(rt, log, "", iperf3_fmt.client_text(result, cmd, profile))
        else:
            write_tool_output(rt, log, iperf3_fmt.client_text(result, cmd, profile))
        if cmd.protocol == "udp" and result.get("receiver"):
            sent = int(result["sender"]["packets"])
            rt.sched.count_class(cmd.tos, sent, int(result["receiver"]["received"]))
        return 1 if failed else 0

    return Prepared(run, endless=cmd.until_interrupted)


def client_summary(a: AppRecord, r: dict[str, Any], out: PartSummary) -> None:
    """The part's ``iperf3`` row of a client (iperf3's or iperf 2's): goodput = payload
    bytes the receiver got × 8 / the receiver's interval, the figures of iperf3's
    ``receiver`` line, in Mbit/s (0.01); TCP retransmits; UDP datagrams lost."""
    row: dict[str, Any] = {
        "node": a.terminal,
        "where": a.where,
        "command": a.simple or a.command,
        "protocol": a.spec.get("protocol", "tcp"),
        "dst": a.spec.get("dst"),
        "goodput_mbps": None,
        "retransmits": None,
        "lost": None,
        "error": r.get("error"),
    }
    out.add("iperf3", row)
    if r.get("error"):
        return
    tcp = r.get("protocol") == "tcp" or "streams" in r
    if tcp:
        streams = r.get("streams", [])
        row["retransmits"] = sum(int((s.get("sender") or {}).get("retransmits", 0)) for s in streams)
    else:
        rx = r.get("receiver") or {}
        row["lost"] = int(rx.get("lost", 0)) if rx else None
    totals = iperf3_fmt.receiver_totals(r, "tcp" if tcp else "udp", bool(a.spec.get("reverse")))
    bps = iperf3_fmt.goodput_bps(*totals) if totals else None
    if bps is not None:
        row["goodput_mbps"] = round(bps / 1e6, 2)


def server_summary(prog: str) -> Summarise:
    """A server (``prog -s``, iperf3's or iperf 2's) adds a warning if no client came."""

    def summarise(a: AppRecord, r: dict[str, Any], out: PartSummary) -> None:
        if not r.get("tests"):
            out.warnings.append(
                f"warning: {a.where}: {a.terminal}: {prog} -s (port {r.get('port')}) never "
                "saw a client before it was stopped"
            )

    return summarise


PROGRAMS = (
    Program(
        "iperf3",
        _prep_iperf3,
        "iperf3 client (`-c`) and server (`-s`), TCP and UDP, text and JSON",
        catches=frozenset({1, 2, 15}),
        printed_before=iperf3_fmt.printed_before,
    ),
)
