"""``flent TEST`` (Flent 2.1's command line; parser: commands/flent.py, tests:
commands/flent_tests.py, data file and summary: outputs/flent_run.py, plots:
outputs/flent_plots.py).

It runs its test's tools as flent's runners do (``runners.py``): the ICMP ping with fping ``-D
-p STEP -c N``, the UDP probes with irtt when an irtt server answers on the host (else netperf
UDP_RR), the TCP flows with ``netperf -P 0 -v 0 -D -STEP ... -- -k OUTPUT_VARS``; the probes
from the start for ``TOTAL_LENGTH``, the flows after ``DELAY`` for ``LENGTH``. It then parses the
tools' outputs as flent does, writes the data file into ``-D``, and prints the summary, or draws
``-p PLOT`` into ``-o FILE``. ``-i FILE`` summarises or plots a data file instead.
"""

from __future__ import annotations

import gzip
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...commands import flent as flent_cmd
from ...commands import fping as fping_cmd
from ...commands import iperf2 as iperf2_cmd
from ...commands import irtt as irtt_cmd
from ...commands import netperf as netperf_cmd
from ...commands.flent_tests import (
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
from ...commands.shell import Word
from ...errors import CommandError, NotSupportedError
from ...outputs import flent_run
from ...outputs.flent_plots import FlentPlotError, draw_plot
from ...safefs import ensure_dir, open_write
from ..context import (
    NS,
    AppRecord,
    Gen,
    PartSummary,
    PrepareCtx,
    Prepared,
    Program,
    RunCtx,
    WaitApp,
    WaitUntil,
    inside_home,
    resolved_in_home,
)
from ..engine import AppStartError
from ..services import epoch_s, find, host_ip
from ..sockets import check_congestion, tcp_spec
from .fping import fping_spec, fping_text
from .irtt import IrttRun, irtt_start, irtt_text
from .netperf import NetperfRun, netperf_start, netperf_text

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
class _Runner:
    """One data set's tool within a flent run."""

    ds: DataSet
    start_s: float
    host: str
    node: str
    kind: str  # netperf, irtt, fping, iperf
    netperf: NetperfRun | None = None
    irtt: IrttRun | None = None
    fping: fping_cmd.FpingCommand | None = None
    iperf: iperf2_cmd.IperfClient | None = None
    app: int = -1
    started: bool = False
    error: str | None = None
    text: str = ""


def _flent_runners(rt: RunCtx, test: Any, node: str, ip: str) -> list[_Runner]:
    out: list[_Runner] = []
    step = test.step
    for ds in test.measured():
        host = test.hosts[ds.host]
        start, length = test.start_s(ds), test.length_s(ds)
        r = _Runner(ds, start, host, node, "")
        if ds.runner == NETPERF:
            cmd = _flent_netperf(ds, host, ds.test or "TCP_STREAM", length, step)
            r.kind, r.netperf = "netperf", NetperfRun(cmd, node)
        elif ds.runner in (UDP_RTT, VOIP):
            if find(rt, host, "udp", irtt_cmd.IRTT_PORT, "irtt") is not None or ds.runner == VOIP:
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
                r.kind, r.irtt = "irtt", IrttRun(cmd_i, node, rt.term.name, ip)
            else:  # flent falls back to netperf UDP_RR when irtt has no server to talk to
                cmd = _flent_netperf(ds, host, "UDP_RR", length, step)
                r.kind, r.netperf = "netperf", NetperfRun(cmd, node)
        elif ds.runner == IPERF_UDP:
            # flent's iperf runner: iperf --enhanced --reportstyle C --format m --client HOST --time LENGTH
            # --interval STEP --udp --bandwidth BW (100M unless udp_bandwidth) [--len PKTSIZE]
            line = f"iperf -c {host} -u -b {ds.bandwidth or '100M'} -t {int(length)} -i {step} -y C"
            if ds.pktsize:
                line += f" -l {ds.pktsize}"
            r.kind = "iperf"
            r.iperf = _iperf_client(line)
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


def _flent_netperf(
    ds: DataSet, host: str, test: str, length: float, step: float
) -> netperf_cmd.NetperfCommand:
    """flent's netperf runner: ``netperf -P 0 -v 0 -D -STEP -Y MARK,MARK -H HOST -t TEST -l LENGTH
    -f m -- -k OUTPUT_VARS [-K CC] [-e SOCKET_TIMEOUT]`` (UDP_RR: the timeout, no congestion)."""
    rr = test == "UDP_RR"
    return netperf_cmd.NetperfCommand(
        host=host,
        data_host=host,
        test=test,
        length_s=float(int(length)),
        demo_interval_s=step,
        fmt="m",
        headers=False,
        verbosity=0,
        local_tos=tos_of(ds.marking),
        remote_tos=tos_of(ds.marking, second=True),
        keyval=True,
        selectors=list(FLENT_OUTPUT_VARS),
        local_cc=None if rr else ds.cc,
        remote_cc=None if rr else ds.cc,
        timeout_s=FLENT_SOCKET_TIMEOUT_S if rr else None,
    )


def _flent_start(rt: RunCtx, r: _Runner) -> None:
    r.started = True
    if r.netperf is not None:
        netperf_start(rt, r.netperf)
        r.app, r.error = r.netperf.app, r.netperf.error
    elif r.irtt is not None:
        irtt_start(rt, r.irtt)
        r.app, r.error = r.irtt.app, r.irtt.error
    elif r.fping is not None:
        try:
            r.app = rt.start_app(r.node, fping_spec(r.fping))
        except AppStartError as e:
            r.error = str(e)
    elif r.iperf is not None:
        spec = r.iperf.to_request(tcp_spec(rt, r.node), rt.runner.sc.profile.iperf3_send_loop_us * 1000)
        try:
            r.app = rt.start_app(r.node, spec)
        except AppStartError as e:
            r.error = f"connect failed: {e}"


def _iperf_client(line: str) -> iperf2_cmd.IperfClient:
    """The iperf 2 client flent's iperf runner starts (built from its command line)."""
    words = [Word(w, 0) for w in line.split()]
    cmd = iperf2_cmd.parse_iperf(words)
    assert isinstance(cmd, iperf2_cmd.IperfClient)
    return cmd


def _iperf_csv(rt: RunCtx, r: _Runner) -> str:
    """What ``iperf --enhanced --reportstyle C`` prints: a line per interval, then the total;
    enhanced reports stamp each with milliseconds (``YYYYMMDDHHMMSS.mmm``)."""
    res = rt.engine.app_result(r.app)
    if res.get("error") or "intervals" not in res:
        return ""
    epoch = epoch_s(rt)
    head = f"{res.get('local_ip')},{res.get('local_port')},{res.get('remote_ip')},{res.get('remote_port')},3"
    start = int(res.get("start_ns") or 0)

    def line(end_ns: int, st: float, et: float, nbytes: int) -> str:
        t = epoch + end_ns / NS
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}"
        bps = int(nbytes * 8 / (et - st)) if et > st else 0
        return f"{stamp},{head},{st:.1f}-{et:.1f},{nbytes},{bps}\n"

    out = []
    for iv in res["intervals"]:
        if iv.get("omitted"):
            continue
        st, et = (int(iv["start_ns"]) - start) / NS, (int(iv["end_ns"]) - start) / NS
        out.append(line(int(iv["end_ns"]), st, et, int(iv["bytes"])))
    sender = res.get("sender") or {}
    end = int(sender.get("end_ns") or res["intervals"][-1]["end_ns"])
    out.append(line(end, 0.0, (end - start) / NS, int(sender.get("bytes") or 0)))
    return "".join(out)


def _flent_text(rt: RunCtx, r: _Runner) -> str:
    if r.netperf is not None:
        out, err, _ = netperf_text(rt, r.netperf)
        return out
    if r.irtt is not None:
        text, _, _ = irtt_text(rt, r.irtt)
        return text
    if r.fping is not None and r.app >= 0:
        out, err, _ = fping_text(rt, r.fping, r.app)
        return out + err
    if r.iperf is not None and r.app >= 0:
        return _iperf_csv(rt, r)
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
    if r.kind == "iperf":
        return flent_run.parse_iperf_csv(r.text)
    return flent_run.parse_ping_lines(r.text)


def _prep_flent(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "flent")
    ip = host_ip(pc, node)
    cmd = flent_cmd.parse_flent(words, resolve=pc.resolve_host)
    if cmd.inputs:
        return _flent_input(cmd)
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
            try:  # flent's udp_bandwidth and udp_pktsize become iperf's -b and -l
                bw, size = ds.bandwidth or "100M", ds.pktsize or 1470
                _iperf_client(f"iperf -c 10.0.0.1 -u -b {bw} -t 1 -l {size}")
            except CommandError as e:
                msg = f"flent: udp_bandwidth/udp_pktsize: {e.message}"
                raise CommandError(msg, col=test_word.col) from None
        if ds.cc:
            check_congestion(ds.cc, [Word(ds.cc, test_word.col)])
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
                    _flent_start(rt, r)
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
            r.text = _flent_text(rt, r)
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
            version=FLENT_VERSION,
            started_s=epoch_s(rt) + t0 / NS,
        )
        data_dir = inside_home(rt.term, rt.term.cwd / cmd.data_dir)
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
        _note_flent(rt, runners, path, doc)
        return _flent_output(rt, cmd, test, doc)

    return Prepared(run, endless=False)


def _flent_output(rt: RunCtx, cmd: flent_cmd.FlentCommand, test: Any, doc: dict[str, Any]) -> int:
    if cmd.fmt == "plot":
        assert cmd.plot is not None and cmd.output is not None
        out = inside_home(rt.term, rt.term.cwd / cmd.output)
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
        out = inside_home(rt.term, rt.term.cwd / cmd.output)
        if out is None:
            rt.io.err(f"flent: {cmd.output}: outside the node's results folder\n")
            return 1
        ensure_dir(out.parent)
        with open_write(out, "w") as f:
            f.write(text)
    else:
        rt.io.out(text)
    return 0


def _flent_input(cmd: flent_cmd.FlentCommand) -> Prepared:
    """``flent -i FILE [-p PLOT -o OUT]``: summarise or plot a data file already written."""

    def run(rt: RunCtx) -> int:
        for name in cmd.inputs:
            path = resolved_in_home(rt.term, rt.term.cwd / name)
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
            status = _flent_output(rt, cmd, test, doc)
            if status:
                return status
        return 0

    return Prepared.at_once(run)


def _note_flent(rt: RunCtx, runners: list[_Runner], path: Path, doc: dict[str, Any]) -> None:
    """The part's summary gets the run's data file and flent's per-series means, through the
    first of its applications (the others add nothing: fping's ping is no ping row of its own)."""
    means = {
        k: {
            "mean": None if v["mean"] is None or not math.isfinite(v["mean"]) else round(v["mean"], 3),
            "units": v["units"],
        }
        for k, v in flent_run.series_means(doc).items()
    }
    row = {
        "node": rt.term.name,
        "command": rt.simple.text if rt.simple is not None else rt.command.text,
        "test": doc["metadata"]["NAME"],
        "file": path.resolve().relative_to(rt.runner.root.resolve()).as_posix(),
        "means": means,
    }
    first = next((r.app for r in runners if r.app >= 0), None)
    if first is None:
        return
    record = rt.runner.apps[first]

    def summarise(a: AppRecord, result: dict[str, Any], out: PartSummary) -> None:
        out.add("flent", row)

    record.summarise = summarise


PROGRAMS = (
    Program(
        "flent",
        _prep_flent,
        "Flent's tests (rrul, tcp_nup, rtt_fair, cubic_*, ping, voip, ...) run "
        "natively: the data file, the summary, `-p PLOT -o FILE`",
    ),
)
