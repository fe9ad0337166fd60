"""TCP tests, the server's side: streams by data port, the summary printed at
TEST_END before the results exchange, ``-R`` sender intervals."""

from __future__ import annotations

from typing import Any

from .common import (
    _cpu,
    _on_connect_rate,
    _parameters_rate,
    _Printer,
    _secs,
    _timestamp,
    _us,
    _version_string,
)
from .control import _server_interval_s, _test_start
from .tcp import (
    _bufsize_pairs,
    _JsonObject,
    _own_end_ns,
    _tcp_end_json,
    _tcp_intervals_json,
    _tcp_intervals_text,
    _tcp_sender_stats,
    _tcp_streams,
    _tcp_summary_text,
    _TcpEnd,
    _TcpRow,
    _TcpStream,
)


def _server_reverse(test: dict[str, Any]) -> bool:
    params = test.get("params") or {}
    return bool(test.get("reverse", params.get("reverse", False)))


def _server_tcp_stream_ids(test: dict[str, Any], profile: Any) -> list[tuple[int, dict[str, Any], int]]:
    """(socket, stream, client data port) per stream: sockets base, base+3, …
    (docs/semantics/formats.md §1.2)."""
    base = int(profile.iperf3_socket_base)
    out = []
    for i, st in enumerate(test.get("streams") or []):
        port = st.get("client_data_port")
        if port is None and i == 0:
            port = test.get("client_data_port")
        if port is None:
            raise ValueError(f"iperf3 formatter: server TCP stream {i} has no client_data_port")
        out.append((base + 3 * i, st, int(port)))
    return out


def _derived_tcp_total(stream: dict[str, Any]) -> dict[str, Any]:
    """Totals of a stream cut short (no ``total``): what iperf3's counters hold at that point."""
    ivs = list(stream.get("intervals") or [])
    if not ivs:
        return {}
    post = [iv for iv in ivs if not iv.get("omitted")]
    rtts = [int(iv.get("rtt_us", 0)) for iv in ivs]
    return {
        "bytes": sum(int(iv.get("bytes", 0)) for iv in post),
        "retransmits": sum(int(iv.get("retransmits", 0)) for iv in post),
        "max_snd_cwnd": max(int(iv.get("snd_cwnd", 0)) for iv in ivs),
        "max_snd_wnd": max(int(iv.get("snd_wnd", 0)) for iv in ivs),
        "max_rtt_us": max(rtts),
        "min_rtt_us": min((r for r in rtts if r > 0), default=0),
        "mean_rtt_us": sum(rtts) // len(rtts),
        "end_ns": ivs[-1]["end_ns"],
    }


def _server_tcp_parts(test: dict[str, Any], interval_s: float, profile: Any
                      ) -> tuple[list[_TcpStream], list[int], _TcpEnd]:
    """The server's streams, printed intervals and summary (printed before any exchange).

    ``sender_time`` therefore equals ``receiver_time`` (the server's own
    time), a receiving server reports 0 bytes sent and no retransmit
    columns; a sending server (``-R``) has its own TCP statistics.
    """
    reverse = _server_reverse(test)
    ids = _server_tcp_stream_ids(test, profile)
    view = dict(test, streams=[st for _, st, _ in ids])
    streams, keep, base_us = _tcp_streams(view, [sock for sock, _, _ in ids], interval_s)
    rows = []
    end_time = 0.0
    for i, s in enumerate(streams):
        tot = s.raw.get("total") or _derived_tcp_total(s.raw)
        if i == 0:
            own_end = _own_end_ns(tot, s)
            end_time = _secs(base_us, _us(own_end)) if own_end is not None else 0.0
        if reverse:
            row = _TcpRow(s.sock, int(tot.get("bytes", 0)), 0)
            _tcp_sender_stats(row, tot)
        else:
            row = _TcpRow(s.sock, 0, int(tot.get("bytes", 0)))
        rows.append(row)
    return streams, keep, _TcpEnd(end_time, end_time, end_time, reverse, rows)


def _tcp_server_test_text(p: _Printer, heads: dict[str, str], test: dict[str, Any], interval_s: float,
                          profile: Any) -> None:
    """Intervals and summary of one TCP test as the server prints them."""
    reverse = _server_reverse(test)
    streams, keep, end = _server_tcp_parts(test, interval_s, profile)
    params = test.get("params") or {}
    multi = max(int(params.get("num_streams", 1)), len(streams)) > 1
    _tcp_intervals_text(p, heads, streams, keep, reverse, multi)
    _tcp_summary_text(p, heads, end, reverse, not reverse, multi)


def _tcp_server_document(result: dict[str, Any], test: dict[str, Any], profile: Any) -> dict[str, Any]:
    """``iperf3 -s -J`` document of one TCP test (the mirror image, docs/semantics/formats.md §1.6)."""
    reverse = _server_reverse(test)
    port = int(result["port"])
    params = test.get("params") or {}
    ids = _server_tcp_stream_ids(test, profile)
    connected = [{"socket": sock, "local_host": test["local_ip"], "local_port": port,
                  "remote_host": test["client_ip"], "remote_port": cport} for sock, _, cport in ids]
    started = test.get("start_ns") is not None
    at_ns = test.get("connect_ns")
    if at_ns is None:
        at_ns = test.get("test_start_ns") if started else None
    if at_ns is None:
        at_ns = test.get("start_ns") or 0
    rate = int(params.get("rate", 0))
    pairs: list[tuple[str, Any]] = [
        ("connected", connected),
        ("version", _version_string(profile)),
        ("system_info", profile.system_info),
        *_parameters_rate(profile, rate),
    ]
    # iperf_tcp_listen runs in the parameter exchange, before on_connect: once per test
    pairs += _bufsize_pairs(profile, 1, params.get("window", 0), test.get("sndbuf_actual", 16384),
                            test.get("rcvbuf_actual", 131072))
    pairs += [
        ("timestamp", _timestamp(profile, at_ns)),
        ("accepted_connection", {"host": test["client_ip"], "port": int(test["client_ctrl_port"])}),
        ("cookie", test.get("cookie", "")),
    ]
    if params.get("mss"):
        pairs.append(("tcp_mss", int(params["mss"])))
    else:
        pairs.append(("tcp_mss_default", 0))  # ctrl_sck_mss is only read by the client
    if _on_connect_rate(profile, "tcp", rate):
        pairs.append(("target_bitrate", rate))
    pairs.append(("test_start", _test_start(
        "tcp", params.get("num_streams", max(len(ids), 1)), params.get("blksize", 131072),
        params.get("omit", 0), params.get("duration", 10), params.get("bytes", 0),
        params.get("blocks", 0), params.get("tos", 0), params.get("rate", 0), profile, reverse)))
    start = _JsonObject(pairs)
    if not started:
        return {"start": start, "intervals": [], "end": {}}
    streams, keep, end = _server_tcp_parts(test, _server_interval_s(result), profile)
    cc = test.get("congestion")
    return {
        "start": start,
        "intervals": _tcp_intervals_json(streams, keep, reverse, profile),
        "end": _tcp_end_json(end, reverse, profile, _cpu(test), cc if reverse else None,
                             None if reverse else cc),
    }
