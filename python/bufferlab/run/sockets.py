"""A host's TCP sockets: the settings a new socket gets (``tcp_spec``, the engine's
app/tcp.rs ``TcpSpec``) and the congestion controls a command may name with ``-C``."""

from __future__ import annotations

import difflib
from typing import Any

from ..commands import sysctl as sysctl_cmd
from ..commands.shell import Word
from ..errors import CommandError, NotSupportedError
from .context import NS, RunCtx

#: sysctl key -> field of the engine's TCP socket settings (app/tcp.rs TcpSpec)
_TCP_SYSCTLS = {
    "net.ipv4.tcp_rmem": "rmem",
    "net.ipv4.tcp_wmem": "wmem",
    "net.core.rmem_max": "rmem_max",
    "net.core.wmem_max": "wmem_max",
    "net.ipv4.tcp_congestion_control": "congestion",
    "net.ipv4.tcp_ecn": "ecn",
    "net.ipv4.tcp_ecn_fallback": "ecn_fallback",
    "net.ipv4.tcp_ecn_option": "ecn_option",
    "net.ipv4.tcp_ecn_option_beacon": "ecn_option_beacon",
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


def check_congestion(name: str | None, words: list[Word]) -> None:
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


def host_sysctls(rt: RunCtx, node: str) -> dict[str, Any]:
    """Every sysctl value of ``node`` now: the kernel's defaults and what was written."""
    modern = rt.runner.sc.profile.name == "modern"
    return {**sysctl_cmd.sysctl_defaults(modern), **rt.runner.sysctl.get(node, {})}


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
