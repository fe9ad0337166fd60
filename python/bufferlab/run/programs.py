"""The programs a scenario line can run, each in two steps.

``prepare_command`` parses and validates a command when the scenario is
checked (before anything runs), in the terminal's context (which node, which
interfaces are visible); it returns a *prepared* command: a function that,
given the run-time context, returns a generator which performs the command in
simulated time (yielding what it waits for) and returns its exit status.
"""

from __future__ import annotations

import difflib
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..commands import ethtool as ethtool_cmd
from ..commands import flows as flows_cmd
from ..commands import generators as gen_cmd
from ..commands import iperf2 as iperf2_cmd
from ..commands import iperf3 as iperf3_cmd
from ..commands import ns3 as ns3_cmd
from ..commands import ping as ping_cmd
from ..commands import sysctl as sysctl_cmd
from ..commands.shell import LAST_BACKGROUND_PID, SimpleCommand, Word
from ..commands.tc import TcQdiscRequest, TcShow, htb, parse_tc, tc_show_text
from ..commands.tc.htb import TcClassShow
from ..commands.tc.ingress import HookError, HookFilterRequest, carry_filters
from ..commands.tc.ingress import rewrite as hook_rewrite
from ..errors import CommandError, Diagnostics, NotSupportedError
from ..formats import iperf2 as iperf2_fmt
from ..formats import iperf3 as iperf3_fmt
from ..formats import ping as ping_fmt
from ..formats import queue as queue_fmt
from ..formats.plot_iperf import PlotError, plot_iperf
from ..outputs.fct import fct_rows, plot_fct, write_fct_csv
from ..outputs.queue_plot import plot_queue
from ..profile import Profile
from ..safefs import ensure_dir, open_write, write_text
from ..units import parse_duration_ns
from . import capture, netinfo, procs
from .context import NS, Gen, PrepareCtx, Prepared, RunCtx, WaitApp, WaitUntil
from .engine import AppStartError, TcFailure
from .observation import PLOT_Q_TRACE_INTERVAL_NS

# ---------------------------------------------------------------------- dispatch


def prepare_command(pc: PrepareCtx, sc: SimpleCommand) -> Prepared:
    if not sc.words:
        return _builtin_true
    prog = sc.words[0].text
    handler = PROGRAMS.get(prog)
    last_bg = next((w for w in sc.words if LAST_BACKGROUND_PID in w.text), None)
    if last_bg is not None and handler is not None and prog not in ("echo", "kill", "wait"):
        raise NotSupportedError(f"{prog}: $! (the last background job's PID) is supported in echo, kill and "
                                "wait only", col=last_bg.col, suggestion="e.g. kill $! or wait $!")
    if handler is None:
        close = difflib.get_close_matches(prog, list(PROGRAMS), n=1)
        raise CommandError(
            f"{prog}: command not found (not modelled by bufferlab)",
            col=sc.words[0].col,
            expected="one of " + ", ".join(sorted(PROGRAMS)),
            suggestion=f"did you mean {close[0]}?" if close else None,
        )
    return handler(pc, sc.words)


def _builtin_true(rt: RunCtx) -> Gen:
    return 0
    yield  # pragma: no cover - makes this a generator


def _instant(fn: Callable[[RunCtx], int]) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        return fn(rt)
        yield  # pragma: no cover

    return run


# ---------------------------------------------------------------------- tc


def tc_request_for_engine(words: list[Word], profile: Profile, engine_dev: str) -> dict[str, Any]:
    """Parse a tc line already known to be valid (TCLink options) into the engine's request."""
    req = parse_tc(words, Diagnostics(), profile)
    assert isinstance(req, TcQdiscRequest)
    d = req.to_dict()
    d["dev"] = engine_dev
    return d


def _prep_tc(pc: PrepareCtx, words: list[Word]) -> Prepared:
    parsed = parse_tc(words, pc.diag, pc.profile)
    if parsed.dev is None:
        dev = None
    else:
        dev = pc.engine_dev(parsed.dev, parsed.dev_col)
    if isinstance(parsed, TcShow):
        show = parsed
        # (engine name, name to print): tc prints `dev NAME` when no device was named
        devs = (
            [(dev, None)]
            if dev
            else [
                (i.engine_name, i.name)
                for i in pc.topo.interfaces
                if (pc.terminal == "admin" and pc.topo.node_kinds[i.node] == "switch")
                or i.node == pc.terminal
            ]
        )

        def run_show(rt: RunCtx) -> int:
            try:
                text = [
                    tc_show_text(
                        rt.engine.qdisc_show(d),
                        rt.runner.sc.profile,
                        stats=show.stats,
                        details=show.details,
                        invisible=show.invisible,
                        dev=name,
                    )
                    for d, name in devs
                ]
            except TcFailure:
                # an ifb whose `ip link add` failed when it ran
                rt.io.err(f'Cannot find device "{parsed.dev}"')
                return 1
            rt.io.out("".join(text))
            return 0

        return _instant(run_show)
    if isinstance(parsed, TcClassShow):
        class_show = parsed

        def run_class_show(rt: RunCtx) -> int:
            blocks = rt.engine.qdisc_show(dev) if dev else []
            modern = rt.runner.sc.profile.tc_modern_print
            rt.io.out(htb.class_show_text(blocks, class_show.stats, class_show.details, modern))
            return 0

        return _instant(run_class_show)
    request = parsed.to_dict() if isinstance(parsed, TcQdiscRequest) else None
    if request is not None:
        request["dev"] = dev
    if isinstance(parsed, HookFilterRequest):
        # mirred's target is a device of the same namespace (tc resolves it to an ifindex)
        targets = iter([pc.engine_dev(name, col) for name, col in parsed.mirred])
        for action in (parsed.filter or {}).get("actions", []):
            if action["kind"] == "mirred":
                action["dev"] = next(targets)
    if pc.shadow is not None and dev is not None:
        refused = pc.shadow.refusal(dev, parsed, request)
        if refused is not None:
            at = next((w for w in words if w.text == "duplicate"), None) or next(
                (w for w in words if w.text == "netem"), words[0])
            first, _, rest = refused.partition("\n")
            raise CommandError(
                f"tc: {first}" + (f" ({rest})" if rest else ""),
                col=at.col,
                expected="at most one netem on a device when a netem duplicates: Linux refuses the "
                "pair (sch_netem.c), as each would copy the other's copies without end",
                suggestion="give one netem all the impairments (e.g. netem delay 10ms duplicate 1%), "
                "or duplicate on another device",
            )

    def run_modify(rt: RunCtx) -> int:
        try:
            blocks = rt.engine.qdisc_show(dev)
            if isinstance(parsed, HookFilterRequest):
                htb_request: dict[str, Any] | None = hook_rewrite(parsed, blocks)
            else:
                htb_request = htb.rewrite(parsed, blocks)
            if htb_request is not None:
                htb_request["dev"] = dev
            rt.engine.tc(htb_request or carry_filters(request, blocks))
        except (TcFailure, htb.HtbError, HookError) as e:
            rt.io.err(str(e).replace(f'"{dev}"', f'"{parsed.dev}"') if dev else str(e))
            return 2
        if isinstance(parsed, htb.TcClassRequest) and parsed.verb != "delete":
            rt.io.err(htb.class_warnings(rt.engine.qdisc_show(dev), parsed.major, parsed.classid))
        return 0

    return _instant(run_modify)


# ---------------------------------------------------------------------- sysctl


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

    return _instant(run)


# ---------------------------------------------------------------------- ethtool


def _prep_ethtool(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = ethtool_cmd.parse_ethtool(words, pc.diag)
    dev = pc.topo.resolve_dev(pc.terminal, cmd.dev)

    def run(rt: RunCtx) -> int:
        if dev is None:
            rt.io.err(ethtool_cmd.NO_DEVICE)
            return 1 if cmd.changes is None else 92
        if cmd.error is not None:
            text, status = cmd.error
            rt.io.err(text)
            return status
        state = rt.engine.offloads(dev)
        if cmd.changes is None:
            rt.io.out(ethtool_cmd.show_features(cmd.dev, state))
            return 0
        for feature, on in ethtool_cmd.apply_changes(state, cmd.changes).items():
            rt.engine.set_offload(dev, feature, on)
        return 0

    return _instant(run)


# ---------------------------------------------------------------------- ping


def _prep_ping(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "ping")
    cmd = ping_cmd.parse_ping(words, pc.diag, resolve=pc.resolve_host)
    lag_ns = pc.profile.ping_send_lag_us * 1000
    spec = {
        "kind": "ping",
        "dst": cmd.target,
        "count": cmd.count,
        "interval_ns": round(cmd.interval_s * NS),
        "size": cmd.size,
        "deadline_ns": round(cmd.deadline_s * NS) if cmd.deadline_s is not None else None,
        "timeout_ns": round(cmd.timeout_s * NS) if cmd.timeout_s is not None else None,
        "send_lag_ns": lag_ns,
        "tos": cmd.tos or 0,
    }
    if spec["interval_ns"] <= 0:  # root may, but the engine's ping needs a positive interval
        raise NotSupportedError(
            "ping -i 0 (as fast as replies come) is not supported yet",
            col=_option_col(words, "-i"),
            expected="-i SECONDS, e.g. -i 0.01",
        )
    endless = cmd.count is None and cmd.deadline_s is None

    def run(rt: RunCtx) -> Gen:
        try:
            app = rt.start_app(node, spec)
        except AppStartError as e:
            rt.io.err(f"connect: {e}")  # iputils: no route to the target
            return 2
        expected = None if endless else rt.now_ns + (cmd.count or 1) * (spec["interval_ns"] + lag_ns)
        yield WaitApp(app, endless, expected)
        result = rt.engine.app_result(app)
        by_kill = rt.process is not None and rt.process.signal is not None
        rt.io.out(ping_fmt.ping_text(result, cmd.target, rt.runner.sc.profile, quiet=cmd.quiet,
                                     echo_ctrl_c=not by_kill))
        return ping_fmt.ping_exit_status(result)

    return run


# ---------------------------------------------------------------------- iperf3


def _check_congestion(name: str | None, words: list[Word]) -> None:
    """`-C NAME` must be a congestion control the TCP model has (SUPPORTED_CC)."""
    if name is None or name in sysctl_cmd.SUPPORTED_CC:
        return
    col = next((w.col for w in words if w.text == name), None)
    if name in sysctl_cmd.LINUX_CC:
        raise NotSupportedError(
            f"congestion control {name} is not modelled yet", col=col,
            expected=" or ".join(sysctl_cmd.SUPPORTED_CC),
        )
    close = difflib.get_close_matches(name, sysctl_cmd.SUPPORTED_CC, n=1)
    raise CommandError(
        f"unable to set TCP_CONGESTION: {name}: no such congestion control", col=col,
        expected=" or ".join(sysctl_cmd.SUPPORTED_CC),
        suggestion=f"did you mean {close[0]}?" if close else None,
    )


def _prep_iperf3(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "iperf3")
    cmd = iperf3_cmd.parse_iperf3(words, pc.diag, pc.profile)
    if isinstance(cmd, iperf3_cmd.Iperf3Client):
        _check_congestion(cmd.congestion, words)
    # Real iperf3 values the engine's applications cannot run (they need a positive
    # interval and rate): refused here with their position rather than at run time.
    if cmd.interval_s == 0:
        raise NotSupportedError(
            "iperf3 -i 0 (no interval reports) is not supported yet",
            col=_option_col(words, "-i", "--interval"),
            expected="-i SECONDS between 0.1 and 60",
        )
    if isinstance(cmd, iperf3_cmd.Iperf3Server):
        return _iperf3_server(node, cmd)
    iperf3_cmd.ensure_supported(cmd)
    if cmd.protocol == "udp" and cmd.rate_bps == 0:
        raise NotSupportedError(
            "iperf3 -u -b 0 (an unlimited UDP rate) is not supported yet",
            col=_option_col(words, "-b", "--bitrate", "--bandwidth"),
            expected="-b RATE, e.g. -b 10M",
        )
    return _iperf3_client(node, cmd)


def _option_col(words: list[Word], short: str, *long: str) -> int:
    """Column of the last word giving option ``short``/``long`` (the one that counts)."""
    col = words[0].col
    for w in words[1:]:
        t = w.text
        if t == short or t.startswith(short) and not t.startswith("--") or t.split("=")[0] in long:
            col = w.col
    return col


def _open_logfile(rt: RunCtx, logfile: str | None) -> tuple[bool, Path | None]:
    """iperf3 opens ``--logfile`` (append) when it starts, relative to the directory
    it starts in: (True, its path or None), or (False, None) after iperf3's error
    text if it cannot, as iperf3 exits then."""
    if not logfile:
        return True, None
    path = _within(rt, rt.term.cwd / logfile)
    try:
        if path is None:
            raise PermissionError(13, "Permission denied (outside the node's results folder)")
        with open_write(path, "a"):
            pass
    except OSError as e:
        rt.io.err(f"iperf3: error - unable to open log file: {e.strerror}")
        return False, None
    return True, path


def _write_tool_output(rt: RunCtx, logfile: Path | None, text: str, stderr: str = "") -> None:
    if logfile:
        with open_write(logfile, "a") as f:
            f.write(text + stderr)
    else:
        rt.io.out(text)
        rt.io.err(stderr)


def _iperf3_server(node: str, cmd: Any) -> Prepared:
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
        _write_tool_output(rt, log, text)

    def run(rt: RunCtx) -> Gen:
        ok, log = _open_logfile(rt, cmd.logfile)
        if not ok:
            return 1
        spec["tcp"] = tcp_spec(rt, node)  # accepted data connections use this host's sysctls
        try:
            app = rt.start_app(node, spec)
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

    return run


def _iperf3_client(node: str, cmd: iperf3_cmd.Iperf3Client) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        ok, log = _open_logfile(rt, cmd.logfile)
        if not ok:
            return 1
        profile = rt.runner.sc.profile
        spec = cmd.to_request(profile, tcp_spec(rt, node))
        try:
            app = rt.start_app(node, spec)
        except AppStartError as e:
            rt.io.err(f"iperf3: error - unable to connect to server: {e}")
            return 1
        expected = rt.now_ns + spec["duration_ns"] + spec["omit_ns"] if cmd.duration_s else None
        yield WaitApp(app, cmd.until_interrupted, expected)
        result = rt.engine.app_result(app)
        failed = bool(result.get("error")) or bool(result.get("interrupted"))
        if cmd.json:
            _write_tool_output(rt, log, iperf3_fmt.client_json(result, cmd, profile))
        elif result.get("error"):
            _write_tool_output(rt, log, "", iperf3_fmt.client_text(result, cmd, profile))
        else:
            _write_tool_output(rt, log, iperf3_fmt.client_text(result, cmd, profile))
        if cmd.protocol == "udp" and result.get("receiver"):
            sent = int(result["sender"]["packets"])
            rt.sched.count_class(cmd.tos, sent, int(result["receiver"]["received"]))
        return 1 if failed else 0

    return run


# ---------------------------------------------------------------------- iperf (2)


def _prep_iperf(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "iperf")
    cmd = iperf2_cmd.parse_iperf(words)
    if isinstance(cmd, iperf2_cmd.IperfServer):
        return _iperf_server(node, cmd)
    return _iperf_client(node, cmd)


def _host_sysctls(rt: RunCtx, node: str) -> dict[str, Any]:
    modern = rt.runner.sc.profile.name == "modern"
    return {**sysctl_cmd.sysctl_defaults(modern), **rt.runner.sysctl.get(node, {})}


def _iperf_listen_buffer(rt: RunCtx, node: str, cmd: iperf2_cmd.IperfServer) -> int:
    """``getsockopt(SO_RCVBUF)`` of the listening socket: Linux doubles a
    ``-w`` request capped at net.core.rmem_max (net/core/sock.c ``sock_setsockopt``)."""
    values = _host_sysctls(rt, node)
    if cmd.window:
        return 2 * min(cmd.window, int(values["net.core.rmem_max"]))
    return iperf2_fmt.UDP_SOCKBUF if cmd.udp else int(values["net.ipv4.tcp_rmem"][1])


def _iperf_server(node: str, cmd: iperf2_cmd.IperfServer) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        spec = cmd.to_request(tcp_spec(rt, node))
        try:
            app = rt.start_app(node, spec)
        except AppStartError as e:
            rt.io.err(f"bind failed: {e}")
            return 1
        rt.note_listener(app, node)
        rt.io.out(iperf2_fmt.server_header(cmd, _iperf_listen_buffer(rt, node, cmd)))
        yield WaitApp(app, True)
        rt.io.out(iperf2_fmt.server_text(rt.engine.app_result(app), cmd, rt.runner.sc.profile.epoch))
        return 0

    return run


def _iperf_client(node: str, cmd: iperf2_cmd.IperfClient) -> Prepared:
    def run(rt: RunCtx) -> Gen:
        profile = rt.runner.sc.profile
        spec = cmd.to_request(tcp_spec(rt, node), profile.iperf3_send_loop_us * 1000)
        try:
            app = rt.start_app(node, spec)
        except AppStartError as e:
            rt.io.err(f"connect failed: {e}")
            return 1
        expected = rt.now_ns + cmd.duration_ns if cmd.duration_ns else None
        yield WaitApp(app, False, expected)
        result = rt.engine.app_result(app)
        values = _host_sysctls(rt, node)
        buffer = iperf2_fmt.client_buffer(cmd, values["net.ipv4.tcp_wmem"], int(values["net.core.wmem_max"]))
        out, err = iperf2_fmt.client_text(result, cmd, profile.epoch, buffer)
        _write_tool_output(rt, None, out, err)
        return 1 if result.get("error") or result.get("interrupted") else 0

    return run


# ---------------------------------------------------------------------- TCP sockets

#: sysctl key -> field of the engine's TCP socket settings (app/tcp.rs TcpSpec)
_TCP_SYSCTLS = {
    "net.ipv4.tcp_rmem": "rmem",
    "net.ipv4.tcp_wmem": "wmem",
    "net.core.rmem_max": "rmem_max",
    "net.core.wmem_max": "wmem_max",
    "net.ipv4.tcp_congestion_control": "congestion",
    "net.ipv4.tcp_ecn": "ecn",
    "net.ipv4.tcp_ecn_fallback": "ecn_fallback",
    "net.ipv4.tcp_sack": "sack",
    "net.ipv4.tcp_timestamps": "timestamps",
    "net.ipv4.tcp_window_scaling": "window_scaling",
    "net.ipv4.tcp_moderate_rcvbuf": "moderate_rcvbuf",
    "net.ipv4.tcp_adv_win_scale": "adv_win_scale",
    "net.ipv4.tcp_slow_start_after_idle": "slow_start_after_idle",
    "net.ipv4.tcp_no_metrics_save": "no_metrics_save",
    "net.ipv4.tcp_limit_output_bytes": "limit_output_bytes",
}
_TCP_BOOLS = {"sack", "timestamps", "window_scaling", "moderate_rcvbuf", "slow_start_after_idle",
              "no_metrics_save", "ecn_fallback"}


def tcp_spec(rt: RunCtx, node: str, congestion: str | None = None) -> dict[str, Any]:
    """Socket settings of a new TCP socket on ``node``. Precedence, lowest first:
    the kernel profile's defaults (in the engine), the host's TCP flavour
    defaults, the sysctls written on that host so far (Linux reads them at
    socket creation), the host's explicit ``[hosts.X] tcp`` keys, and the
    command's ``-C`` (an iperf3 client applies its own, ``Iperf3Client.to_request``)."""
    spec: dict[str, Any] = {"profile": "modern" if rt.runner.sc.profile.name == "modern" else "lab2019"}
    host = rt.runner.sc.host_tcp.get(node, {})
    if host.get("flavour") == "ns3":
        # ns-3 grows no buffers and advertises the whole free buffer as its window
        spec.update(moderate_rcvbuf=False, adv_win_scale=0)
    for key, value in rt.runner.sysctl.get(node, {}).items():
        field = _TCP_SYSCTLS.get(key)
        if field is None:
            continue
        if isinstance(value, tuple):
            value = list(value)
        spec[field] = bool(value) if field in _TCP_BOOLS else value
    for key, value in host.items():
        if key == "mss":
            spec["mss"] = value + 12  # advertised MSS: the payload plus the timestamp option
        elif key == "min_rto":
            spec["min_rto_ns"] = round(value * NS)
        elif key in ("rcvbuf", "sndbuf"):
            _socket_buffer(spec, key, value)
        elif key != "flavour":
            spec[key] = value
    if congestion:
        spec["congestion"] = congestion
    return spec


def _socket_buffer(spec: dict[str, Any], key: str, size: int) -> None:
    """A buffer of exactly ``size`` bytes: SO_SNDBUF/SO_RCVBUF double the request
    and cap it at twice net.core.{w,r}mem_max, so ask for half and lift the cap."""
    request = (size + 1) // 2
    cap = "rmem_max" if key == "rcvbuf" else "wmem_max"
    spec[key] = request
    spec[cap] = max(int(spec.get(cap, 212992)), request)


# ---------------------------------------------------------------------- generators


#: how far a host's sending stack may fall behind its applications (engine.rs MAX_STACK_BACKLOG)
MAX_STACK_BACKLOG_S = 1.0


def _check_stack_backlog(pc: PrepareCtx, words: list[Word], cmd: gen_cmd.GeneratorCommand) -> None:
    """A cbr/poisson with a known length (-t, -n) that offers more datagrams than the host's
    stack processes falls behind by (offered × cost − 1) per second; the engine stops the run
    once a host is MAX_STACK_BACKLOG_S behind, so check refuses it first (several generators
    on one host add up: only the run sees that)."""
    if not isinstance(cmd, gen_cmd.UdpSourceCommand) or cmd.pattern == "onoff" or cmd.protocol != "udp":
        return
    frame = cmd.size + 42  # UDP, IPv4 and Ethernet headers: the engine's packet length
    cost_s = (pc.profile.host_packet_ns + frame * pc.profile.host_byte_ps / 1000) / 1e9
    offered = cmd.rate_bps / (cmd.size * 8)
    length_s = (cmd.duration_ns / 1e9 if cmd.duration_ns is not None
                else cmd.bytes * 8 / cmd.rate_bps if cmd.bytes is not None else None)
    if length_s is None or cost_s <= 0:
        return
    behind_s = length_s * (offered * cost_s - 1)
    if behind_s <= MAX_STACK_BACKLOG_S:
        return
    rate_w = next((w for a, w in zip(words, words[1:], strict=False) if a.text in ("-r", "--rate")), words[0])
    prog = words[0].text
    raise CommandError(
        f"{prog}: -r {rate_w.text} offers {offered:,.0f} datagrams/s, more than a host's stack "
        f"processes ({1 / cost_s:,.0f}/s of {frame}-byte frames): over {length_s:.3g} s it would fall "
        f"{behind_s:.3g} s behind",
        col=rate_w.col,
        expected=f"a rate the sending host keeps up with (it may fall at most {MAX_STACK_BACKLOG_S:g} s "
                 f"behind; "
        "[sim] host_packet_ns and host_byte_ps set its cost)",
        suggestion=f"at most about {(1 + MAX_STACK_BACKLOG_S / length_s) / cost_s * cmd.size * 8 / 1e9:.3g} "
        "Gbit/s here, or send for less time (-t, -n)",
    )


def _prep_generator(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], words[0].text)
    cmd = gen_cmd.parse_generator(words, pc.diag)
    _check_stack_backlog(pc, words, cmd)
    _check_congestion(getattr(cmd, "congestion", None), words)
    spec = gen_cmd.engine_spec(cmd)
    endless = gen_cmd.is_endless(cmd)

    def run(rt: RunCtx) -> Gen:
        if spec["kind"] == "bulk" or spec.get("proto") == "tcp":
            spec["tcp"] = tcp_spec(rt, node, congestion=getattr(cmd, "congestion", None))
        try:
            app = rt.start_app(node, spec)
        except AppStartError as e:
            prog = words[0].text
            rt.io.err(str(e) if str(e).startswith(f"{prog}:") else f"{prog}: {e}")
            return 1
        if spec["kind"] == "sink":
            rt.note_sink(app, node, spec["port"], spec["proto"])
            if spec["proto"] == "tcp":
                rt.note_listener(app, node, getattr(cmd, "congestion", None))
        duration = spec.get("duration_ns")
        yield WaitApp(app, endless, rt.now_ns + duration if duration else None)
        rt.io.out(gen_cmd.report_text(cmd, rt.engine.app_result(app)))
        return 0

    return run


# ---------------------------------------------------------------------- flows


def _prep_flows(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "flows")
    cmd = flows_cmd.parse_flows(words, pc.diag, resolve=pc.resolve_host, base_dir=pc.base_dir)
    congestion = getattr(cmd, "congestion", None)
    _check_congestion(congestion, words)
    spec = cmd.to_spec()
    endless = flows_cmd.is_endless(cmd)

    def run(rt: RunCtx) -> Gen:
        spec["tcp"] = tcp_spec(rt, node, congestion=congestion)
        try:
            app = rt.start_app(node, spec)
        except AppStartError as e:
            rt.io.err(str(e) if str(e).startswith("flows:") else f"flows: {e}")
            return 1
        if isinstance(cmd, flows_cmd.FlowsServer):
            rt.note_listener(app, node, None)
        duration = spec.get("duration_ns")
        yield WaitApp(app, endless, None if duration is None else rt.now_ns + duration)
        result = rt.engine.app_result(app)
        if isinstance(cmd, flows_cmd.FlowsClient):
            # the flow records, beside the terminal's other files (outputs/fct.py)
            rows = fct_rows(result)
            path = rt.term.cwd / f"fct_{app}.csv"
            ensure_dir(path.parent)
            write_fct_csv(path, rows)
            plot_fct({f"{node}: flows {cmd.size_text}": rows}, path.with_suffix(".png"),
                     f"FCT vs size: {node} → {cmd.dest}, {cmd.rate_per_s:g} flows/s")
            rt.sched.fct_files.append(path.resolve().relative_to(rt.runner.root.resolve()).as_posix())
        rt.io.out(flows_cmd.report_text(cmd, result))
        return 0

    return run


# ---------------------------------------------------------------------- plot_q.sh


#: plot_q.sh's own queue trace keeps one record of each kind per millisecond
#: (``[trace] min_interval`` overrides; ``[trace] queues`` lists exact ones)
# ---------------------------------------------------------------------- ns3-goodput


def _prep_ns3_goodput(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = ns3_cmd.parse_ns3_goodput(words, set(pc.topo.node_kinds))

    def run(rt: RunCtx) -> Gen:
        rows = []
        for e in cmd.entries:
            found = [s for s in rt.sched.sinks
                     if s["host"] == e.node and s["port"] == e.port and e.proto in (None, s["proto"])]
            if len(found) != 1:
                why = "no sink" if not found else "two sinks (add /udp or /tcp)"
                rt.io.err(f"ns3-goodput: {e.label}: {why} on {e.node} port {e.port} in this part")
                return 1
            rows.append((e.label, int(rt.engine.app_result(found[0]["app"])["bytes"])))
        ns = cmd.seconds_ns if cmd.seconds_ns is not None else rt.now_ns - rt.sched.start_ns
        if ns <= 0:
            rt.io.err("ns3-goodput: no time has passed in this part yet (give -t SECONDS)")
            return 1
        rt.io.out(ns3_cmd.goodput_block(rows, ns / NS, cmd.sep))
        return 0
        yield  # pragma: no cover - makes this a generator

    return run


def _prep_plot_q(pc: PrepareCtx, words: list[Word]) -> Prepared:
    if len(words) != 2:
        raise CommandError(
            "plot_q.sh takes one interface name",
            col=words[0].col,
            expected="plot_q.sh IFACE",
            suggestion="e.g. sudo plot_q.sh s1-eth2",
        )
    dev_word = words[1]
    dev = pc.engine_dev(dev_word.text, dev_word.col)
    interval_ns = round(pc.profile.queue_sample_interval * NS)

    def run(rt: RunCtx) -> Gen:
        app = rt.start_app(_any_host(rt), {"kind": "qmon", "dev": dev, "interval_ns": interval_ns})
        # a finer series beside the 100 ms samples: thinned to 1 ms by default,
        # since every change of a gigabit queue is ~10^5 rows per second
        rt.runner.observation.trace_iface(dev, default_min_ns=PLOT_Q_TRACE_INTERVAL_NS)
        start = rt.now_ns
        yield WaitApp(app, True)
        result = rt.engine.app_result(app)
        samples = result["samples"]
        if result.get("error"):  # the engine's sample cap or out of memory: what it has, and a failure
            rt.io.err(result["error"])
        dat = rt.term.cwd / f"q_{dev_word.text}.dat"
        ensure_dir(dat.parent, rt.runner.root)
        write_text(dat, queue_fmt.q_dat(samples, start))
        csv = rt.term.home.parent / f"queue_{dev_word.text}.csv"
        write_text(csv, queue_fmt.q_csv(samples, start))
        rt.note_queue_file(csv)
        plot_queue(samples, start, dev_word.text, dat.with_suffix(".png"))
        return 1 if result.get("error") else 0

    return run


def _any_host(rt: RunCtx) -> str:
    """The queue monitor reads qdisc statistics; it is hosted on the first host
    (it sends nothing, so where it lives does not matter)."""
    return rt.runner.sc.hosts[0]


# ---------------------------------------------------------------------- plot_iperf.sh


def _prep_plot_iperf(pc: PrepareCtx, words: list[Word]) -> Prepared:
    """``plot_iperf.sh FILE.json``: iperf.csv, results/N.dat and the seven plots
    (docs/semantics/formats.md §5), in the terminal's current folder."""
    if len(words) != 2:
        raise CommandError(
            "plot_iperf.sh takes one iperf3 JSON file",
            col=words[0].col,
            expected="plot_iperf.sh FILE.json",
            suggestion="e.g. h1: iperf3 -c 10.0.0.3 -J > out.json, then h1: plot_iperf.sh out.json",
        )
    name = words[1].text

    def run(rt: RunCtx) -> int:
        if _within(rt, rt.term.cwd / name) is None:
            rt.io.err(f"plot_iperf.sh: {name}: outside the node's results folder")
            return 1
        try:
            plot_iperf(Path(name), rt.term.cwd)
        except PlotError as e:
            rt.io.err(e.message)
            return 1
        except OSError as e:  # e.g. a file named results where the script makes its folder
            where = Path(e.filename).name if e.filename else name
            if where == "results" and isinstance(e, FileExistsError | NotADirectoryError):
                rt.io.err("mkdir: cannot create directory 'results': File exists")
            else:
                rt.io.err(f"plot_iperf.sh: {where}: {e.strerror or e}")
            return 1
        return 0

    return _instant(run)


# ---------------------------------------------------------------------- shell builtins


def _prep_cd(pc: PrepareCtx, words: list[Word]) -> Prepared:
    if len(words) > 2:
        raise CommandError("cd: too many arguments", col=words[2].col)
    target = words[1].text if len(words) == 2 else None

    def run(rt: RunCtx) -> int:
        if target is None or target == "~":
            rt.term.cwd = rt.term.home
            return 0
        new = _within(rt, rt.term.cwd / target)
        if new is None or not new.is_dir():
            rt.io.err(f"bash: cd: {target}: No such file or directory")
            return 1
        rt.term.cwd = new
        return 0

    return _instant(run)


def _within(rt: RunCtx, path: Path) -> Path | None:
    """Resolve ``path``; terminals may not leave their node folder."""
    p = path.resolve()
    home = rt.term.home.resolve()
    return p if p == home or home in p.parents else None


def _prep_mkdir(pc: PrepareCtx, words: list[Word]) -> Prepared:
    parents = any(w.text == "-p" for w in words[1:])
    names = [w for w in words[1:] if w.text != "-p"]
    for w in names:
        if w.text.startswith("-"):
            raise NotSupportedError(
                f"mkdir: option {w.text} is not supported", col=w.col, expected="mkdir [-p] DIR..."
            )
    if not names:
        raise CommandError("mkdir: missing operand", col=words[0].col, expected="mkdir [-p] DIR...")

    def run(rt: RunCtx) -> int:
        status = 0
        for w in names:
            p = _within(rt, rt.term.cwd / w.text)
            if p is None:
                rt.io.err(f"mkdir: cannot create directory '{w.text}': outside the node's results folder")
                status = 1
                continue
            if p.exists() and not parents:
                rt.io.err(f"mkdir: cannot create directory '{w.text}': File exists")
                status = 1
                continue
            try:
                p.mkdir(parents=parents, exist_ok=parents)
            except OSError as e:  # GNU mkdir's message: No such file or directory, Not a directory, ...
                rt.io.err(f"mkdir: cannot create directory '{w.text}': {e.strerror or e}")
                status = 1
        return status

    return _instant(run)


def _prep_sleep(pc: PrepareCtx, words: list[Word]) -> Prepared:
    if len(words) < 2:
        raise CommandError(
            "sleep: missing operand", col=words[0].col, expected="sleep DURATION (e.g. sleep 5)"
        )
    total = sum(parse_duration_ns(w.text, w.col) for w in words[1:])

    def run(rt: RunCtx) -> Gen:
        yield WaitUntil(rt.now_ns + total)
        return 0

    return run


def _prep_echo(pc: PrepareCtx, words: list[Word]) -> Prepared:
    text = " ".join(w.text for w in words[1:]) + "\n"

    def run(rt: RunCtx) -> int:
        rt.io.out(procs.expand_words(text, rt))  # $!
        return 0

    return _instant(run)


def _prep_cat(pc: PrepareCtx, words: list[Word]) -> Prepared:
    """``cat FILE...``: files of the node's results folder (GNU cat's messages)."""
    names = words[1:]
    for w in names:
        if w.text.startswith("-") and w.text != "-":
            raise NotSupportedError(
                f"cat: option {w.text} is not supported", col=w.col, expected="cat FILE..."
            )
        if w.text == "-":
            raise NotSupportedError(
                "cat -: standard input is not supported", col=w.col, expected="cat FILE..."
            )
    if not names:
        raise NotSupportedError("cat without a file (standard input) is not supported", col=words[0].col,
                                expected="cat FILE...")

    def run(rt: RunCtx) -> int:
        status = 0
        for w in names:
            path = _within(rt, rt.term.cwd / w.text)
            if path is None:
                rt.io.err(f"cat: {w.text}: Permission denied (outside the node's results folder)")
                status = 1
            elif path.is_dir():
                rt.io.err(f"cat: {w.text}: Is a directory")
                status = 1
            elif not path.is_file():
                rt.io.err(f"cat: {w.text}: No such file or directory")
                status = 1
            else:
                rt.io.out(path.read_text(encoding="utf-8", errors="replace"))
        return status

    return _instant(run)


def _prep_date(pc: PrepareCtx, words: list[Word]) -> Prepared:
    """``date`` and ``date +FORMAT``: the simulated clock (the profile's epoch + simulated
    time), in UTC, as GNU date prints it in the C locale."""
    fmt = "%a %b %e %H:%M:%S UTC %Y"
    for w in words[1:]:
        if w.text.startswith("+"):
            fmt = w.text[1:].replace("%Z", "UTC").replace("%N", "{ns}").replace("%s", "{epoch}")
        elif w.text not in ("-u", "--utc"):
            raise NotSupportedError(
                f"date {w.text} is not supported yet", col=w.col, expected="date [-u] [+FORMAT]"
            )

    def run(rt: RunCtx) -> int:
        t = rt.runner.sc.profile.epoch * NS + rt.now_ns
        text = time.strftime(fmt, time.gmtime(t // NS))
        rt.io.out(text.replace("{ns}", f"{t % NS:09d}").replace("{epoch}", str(t // NS)) + "\n")
        return 0

    return _instant(run)


def _prep_xdg_open(pc: PrepareCtx, words: list[Word]) -> Prepared:
    files = " ".join(shlex.quote(w.text) for w in words[1:])
    return _instant(lambda rt: (rt.io.err(f"(xdg-open {files}: a viewer is not opened in simulation)"), 0)[1])


def _not_yet(what: str, issue: str) -> Callable[[PrepareCtx, list[Word]], Prepared]:
    def prep(pc: PrepareCtx, words: list[Word]) -> Prepared:
        raise NotSupportedError(
            f"{words[0].text} is not supported yet ({what} arrives with {issue})", col=words[0].col
        )

    return prep


PROGRAMS: dict[str, Callable[[PrepareCtx, list[Word]], Prepared]] = {
    "tc": _prep_tc,
    "sysctl": _prep_sysctl,
    "ethtool": _prep_ethtool,
    "ping": _prep_ping,
    "iperf3": _prep_iperf3,
    "iperf": _prep_iperf,
    "cbr": _prep_generator,
    "poisson": _prep_generator,
    "onoff": _prep_generator,
    "sink": _prep_generator,
    "bulk": _prep_generator,
    "flows": _prep_flows,
    "ns3-goodput": _prep_ns3_goodput,
    "plot_q.sh": _prep_plot_q,
    "plot_iperf.sh": _prep_plot_iperf,
    "tcpdump": capture.prep_tcpdump,
    "tshark": capture.prep_tshark,
    "cd": _prep_cd,
    "mkdir": _prep_mkdir,
    "sleep": _prep_sleep,
    "echo": _prep_echo,
    "xdg-open": _prep_xdg_open,
    "true": lambda pc, words: _builtin_true,
    "cat": _prep_cat,
    "date": _prep_date,
    **procs.PROGRAMS,
    **netinfo.PROGRAMS,
}
