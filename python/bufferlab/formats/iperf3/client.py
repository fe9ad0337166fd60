"""The client's output (``iperf3 -c``): ``-J`` JSON and text, UDP here and TCP in tcp.py;
the goodput definitions the results tables share."""

from __future__ import annotations

from typing import Any

from ...commands.iperf3 import Iperf3Client
from .. import cjson
from .common import (
    REPORT_CONNECTED,
    REPORT_CONNECTING,
    REPORT_DONE,
    REPORT_OMITTED,
    REPORT_SUM_OUTOFORDER,
    SEPARATOR,
    UDP_SOCKBUF,
    _bw,
    _check_protocol,
    _cpu,
    _headers,
    _intervals,
    _on_connect_rate,
    _Printer,
    _ratio,
    _sender_flag,
    _time_bases,
    _timestamp,
    _version_string,
    udp_line,
    udp_sender_interval_line,
)
from .control import _client_test_start, _error_document
from .tcp import _check_udp_client, _tcp_client_end, _tcp_client_json, _tcp_client_text, _tcp_streams
from .udp import _client_summary, _udp_end


def goodput_bps(nbytes: float, seconds: float) -> float | None:
    """Goodput in bit/s: payload bytes received / the receiver's interval × 8, evaluated as
    iperf3's receiver line does (None for no interval)."""
    return float(nbytes) / seconds * 8 if seconds > 0 else None


def receiver_totals(result: dict[str, Any], protocol: str, reverse: bool = False) -> tuple[int, float] | None:
    """The figures of the client's ``receiver`` summary line for an engine result: (payload
    bytes received, the receiver's interval in seconds), as the text and JSON outputs print
    them. Goodput is ``bytes × 8 / seconds``, that line's bitrate (``end.sum_received``); the
    console, summary.json, the report, the tables and ``compare`` all use this definition.
    None for a test that failed or never started."""
    if result.get("error") or result.get("start_ns") is None:
        return None
    if _check_protocol(protocol) == "tcp":
        streams, _, base_us = _tcp_streams(result, list(range(len(result.get("streams") or []))), 1.0)
        end = _tcp_client_end(streams, base_us, reverse)
        return sum(row.received for row in end.rows), end.receiver_time
    s = _client_summary(result, _time_bases(result)[1])
    return s.bytes_received, s.receiver_time


def client_json(result: dict[str, Any], client: Iperf3Client, profile: Any) -> str:
    """``iperf3 -c … [-u] -J`` document (docs/semantics/formats.md §1.5/§1.7), with its newline."""
    if result.get("error"):
        return _error_document(profile, "error - " + str(result["error"]), client.title)
    if _check_protocol(client.protocol) == "tcp":
        return _tcp_client_json(result, client, profile)
    _check_udp_client(client)
    sock = int(profile.iperf3_socket_base)
    kept, base_us = _intervals(result, client.interval_s)

    start: dict[str, Any] = {
        "connected": [{
            "socket": sock,
            "local_host": result["local_ip"],
            "local_port": int(result["local_port"]),
            "remote_host": result["remote_ip"],
            "remote_port": int(result["remote_port"]),
        }],
        "version": _version_string(profile),
        "system_info": profile.system_info,
        "timestamp": _timestamp(profile, result.get("connect_ns",
                                                    result.get("test_start_ns", result["start_ns"]))),
        "connecting_to": {"host": client.host, "port": client.port},
        "cookie": result["cookie"],
    }
    if _on_connect_rate(profile, "udp", client.rate_bps):
        start["target_bitrate"] = client.rate_bps
    start["sock_bufsize"] = 0
    start["sndbuf_actual"] = UDP_SOCKBUF
    start["rcvbuf_actual"] = UDP_SOCKBUF
    start["test_start"] = _client_test_start(client, profile)

    intervals = []
    for iv in kept:
        nbytes = int(iv.raw["bytes"])
        packets = int(iv.raw.get("packets", 0))
        omitted = bool(iv.raw.get("omitted", False))
        stream = {"socket": sock, "start": iv.st, "end": iv.et, "seconds": iv.seconds,
                  "bytes": nbytes, "bits_per_second": _bw(nbytes, iv.seconds) * 8,
                  "packets": packets, "omitted": omitted}
        total = {"start": iv.st, "end": iv.et, "seconds": iv.seconds, "bytes": nbytes,
                 "bits_per_second": _ratio(nbytes, iv.seconds) * 8, "packets": packets,
                 "omitted": omitted}
        intervals.append({"streams": [_sender_flag(stream, profile, True)],
                          "sum": _sender_flag(total, profile, True)})

    end = _udp_end(_client_summary(result, base_us), sock, profile, True, _cpu(result))

    doc: dict[str, Any] = {"start": start, "intervals": intervals, "end": end}
    if result.get("interrupted"):
        doc["error"] = "interrupt - the client has terminated"
    if client.title:
        doc["title"] = client.title
    return cjson.dumps(doc)


def client_text(result: dict[str, Any], client: Iperf3Client, profile: Any) -> str:
    """Human-readable client output (docs/semantics/formats.md §1.8), byte exact.

    On a failed test this is the one line iperf3 writes to stderr
    (``iperf3: error - …``); on Ctrl-C the summary is followed by
    ``iperf3: interrupt - the client has terminated`` (also stderr).
    """
    if result.get("error"):
        return f"iperf3: error - {result['error']}\n"
    if _check_protocol(client.protocol) == "tcp":
        return _tcp_client_text(result, client, profile)
    _check_udp_client(client)
    heads = _headers(profile)
    p = _Printer(client.title)
    sock = int(profile.iperf3_socket_base)
    p(REPORT_CONNECTING % (client.host, client.port))
    p(REPORT_CONNECTED % (sock, result["local_ip"], int(result["local_port"]),
                          result["remote_ip"], int(result["remote_port"])))
    kept, base_us = _intervals(result, client.interval_s)
    header_done = False
    for iv in kept:
        if iv.first and not header_done:
            p(heads["udp_sender"])
            header_done = True
        p(udp_sender_interval_line(sock, iv.st, iv.et, int(iv.raw["bytes"]), iv.seconds,
                                   int(iv.raw.get("packets", 0)),
                                   REPORT_OMITTED if iv.raw.get("omitted") else ""))

    s = _client_summary(result, base_us)
    p(SEPARATOR)
    p(heads["udp"])
    p(udp_line(sock, 0.0, s.sender_time, s.bytes_sent, s.sender_time, 0.0, 0, s.sender_packets,
               0.0, "sender"))
    if s.out_of_order > 0:
        p(REPORT_SUM_OUTOFORDER % ("", 0.0, s.sender_time, s.out_of_order))
    p(udp_line(sock, 0.0, s.receiver_time, s.bytes_received, s.receiver_time, s.jitter * 1000.0,
               s.lost, s.receiver_packets,
               100.0 * s.lost / s.receiver_packets if s.receiver_packets > 0 else 0.0, "receiver"))
    if result.get("interrupted"):
        p.raw("iperf3: interrupt - the client has terminated\n")
    else:
        p("\n")
        p(REPORT_DONE)
    return p.text()
