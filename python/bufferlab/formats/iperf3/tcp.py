"""TCP tests, the client's side and what both sides share: ``-P`` streams, interval and
``[SUM]`` lines, the end summary, ``-R`` (docs/semantics/formats.md §1.5, §1.6, §1.8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...commands.iperf3 import Iperf3Client
from .. import cjson
from .common import (
    REPORT_CONNECTED,
    REPORT_CONNECTING,
    REPORT_DONE,
    REPORT_OMITTED,
    REPORT_REVERSE,
    REPORT_SUM_BW,
    REPORT_SUM_BW_RETRANS,
    SEPARATOR,
    _bw,
    _check_udp,
    _cpu,
    _headers,
    _Interval,
    _on_connect_rate,
    _Printer,
    _ratio,
    _secs,
    _sender_flag,
    _time_bases,
    _timed_intervals,
    _timestamp,
    _us,
    _version_string,
    tcp_receiver_line,
    tcp_sender_interval_line,
    tcp_sender_summary_line,
    unit_snprintf,
)
from .control import _client_test_start


def _check_udp_client(client: Iperf3Client) -> None:
    _check_udp(client.protocol)
    if client.reverse:
        raise ValueError("iperf3 formatter: UDP -R (reverse) is not supported")


def _has_snd_wnd(profile: Any) -> bool:
    return tuple(profile.iperf3_version) >= (3, 10)


def _bufsize_per_stream(profile: Any) -> bool:
    """3.0–3.13 add the socket-buffer triple once per data connection (fixed in 3.14)."""
    return tuple(profile.iperf3_version) < (3, 14)


class _JsonObject(dict):
    """A JSON object whose members may repeat a key, as ``cJSON_AddItemToObject`` allows.

    Lookups see the last value (like a JSON parser); ``items()`` — what the
    cJSON printer iterates — yields every member in insertion order.
    """

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self._pairs = list(pairs)

    def items(self) -> list[tuple[str, Any]]:  # type: ignore[override]
        return list(self._pairs)


@dataclass
class _TcpStream:
    sock: int
    raw: dict[str, Any]
    timed: list[tuple[_Interval, bool]]


def _stream_view(parent: dict[str, Any], stream: dict[str, Any]) -> dict[str, Any]:
    """A stream's intervals with the time bases (per stream if given, else the test's)."""
    view: dict[str, Any] = {"intervals": stream.get("intervals") or []}
    for key in ("test_start_ns", "start_ns", "omit_end_ns"):
        val = stream.get(key, parent.get(key))
        if val is not None:
            view[key] = val
    return view


def _tcp_streams(parent: dict[str, Any], socks: list[int], interval_s: float
                 ) -> tuple[list[_TcpStream], list[int], int]:
    """Streams with their timed intervals, the printed interval indices and the time base.

    ``iperf_print_intermediate`` drops a block only when *every* stream's
    interval is short (< 10 % of ``-i``) and empty.
    """
    streams = list(parent.get("streams") or [])
    out: list[_TcpStream] = []
    base_us: int | None = None
    for sock, st in zip(socks, streams, strict=False):
        timed, base = _timed_intervals(_stream_view(parent, st), interval_s)
        if base_us is None:
            base_us = base
        out.append(_TcpStream(sock, st, timed))
    if base_us is None:
        base_us = _time_bases(parent)[1] if parent.get("start_ns") is not None else 0
    n = max((len(s.timed) for s in out), default=0)
    keep = [k for k in range(n) if any(k < len(s.timed) and s.timed[k][1] for s in out)]
    return out, keep, base_us


def _tcp_interval_stream_json(sock: int, iv: _Interval, sender: bool, profile: Any) -> dict[str, Any]:
    raw = iv.raw
    nbytes = int(raw["bytes"])
    obj: dict[str, Any] = {"socket": sock, "start": iv.st, "end": iv.et, "seconds": iv.seconds,
                           "bytes": nbytes, "bits_per_second": _bw(nbytes, iv.seconds) * 8}
    if sender:
        obj["retransmits"] = int(raw.get("retransmits", 0))
        obj["snd_cwnd"] = int(raw.get("snd_cwnd", 0))
        if _has_snd_wnd(profile):
            obj["snd_wnd"] = int(raw.get("snd_wnd", 0))
        obj["rtt"] = int(raw.get("rtt_us", 0))
        obj["rttvar"] = int(raw.get("rttvar_us", 0))
        obj["pmtu"] = int(raw.get("pmtu", 0))
    obj["omitted"] = bool(raw.get("omitted", False))
    return _sender_flag(obj, profile, sender)


def _tcp_intervals_json(streams: list[_TcpStream], keep: list[int], sender: bool,
                        profile: Any) -> list[dict[str, Any]]:
    """``intervals``: per block the stream objects and the ``sum`` (timed by the first stream)."""
    out = []
    for k in keep:
        block = [(s.sock, s.timed[k][0]) for s in streams if k < len(s.timed)]
        first = block[0][1]
        nbytes = sum(int(iv.raw["bytes"]) for _, iv in block)
        total: dict[str, Any] = {"start": first.st, "end": first.et, "seconds": first.seconds,
                                 "bytes": nbytes, "bits_per_second": _ratio(nbytes, first.seconds) * 8}
        if sender:
            total["retransmits"] = sum(int(iv.raw.get("retransmits", 0)) for _, iv in block)
        total["omitted"] = bool(first.raw.get("omitted", False))
        out.append({"streams": [_tcp_interval_stream_json(sock, iv, sender, profile) for sock, iv in block],
                    "sum": _sender_flag(total, profile, sender)})
    return out


def _tcp_intervals_text(p: _Printer, heads: dict[str, str], streams: list[_TcpStream], keep: list[int],
                        sender: bool, multi: bool) -> None:
    """Interval lines: header before the very first one, separator between ``-P`` blocks."""
    header_done = False
    for k in keep:
        block = [(s.sock, s.timed[k][0]) for s in streams if k < len(s.timed)]
        for i, (sock, iv) in enumerate(block):
            if i == 0:
                if iv.first and not header_done:
                    p(heads["retrans_cwnd"] if sender else heads["bw"])
                    header_done = True
                elif multi:
                    p(SEPARATOR)
            tag = REPORT_OMITTED if iv.raw.get("omitted") else ""
            nbytes = int(iv.raw["bytes"])
            if sender:
                p(tcp_sender_interval_line(sock, iv.st, iv.et, nbytes, iv.seconds,
                                           int(iv.raw.get("retransmits", 0)),
                                           int(iv.raw.get("snd_cwnd", 0)), tag))
            else:
                p(tcp_receiver_line(sock, iv.st, iv.et, nbytes, iv.seconds, tag))
        if multi and block:
            first = block[0][1]
            nbytes = sum(int(iv.raw["bytes"]) for _, iv in block)
            xfer = unit_snprintf(nbytes, "A")
            rate = unit_snprintf(_ratio(nbytes, first.seconds), "a")
            tag = REPORT_OMITTED if first.raw.get("omitted") else ""
            if sender:
                retr = sum(int(iv.raw.get("retransmits", 0)) for _, iv in block)
                p(REPORT_SUM_BW_RETRANS % ("", first.st, first.et, xfer, rate, retr, tag))
            else:
                p(REPORT_SUM_BW % ("", first.st, first.et, xfer, rate, tag))


@dataclass
class _TcpRow:
    sock: int
    sent: int
    received: int
    retransmits: int = 0
    max_snd_cwnd: int = 0
    max_snd_wnd: int = 0
    max_rtt: int = 0
    min_rtt: int = 0
    mean_rtt: int = 0


@dataclass
class _TcpEnd:
    sender_time: float
    receiver_time: float
    end_time: float      # this side's own measurement (receiver ``seconds`` quirk)
    has_retr: bool       # sender_has_retransmits when the summary is printed
    rows: list[_TcpRow]


def _tcp_sender_stats(row: _TcpRow, snd: dict[str, Any]) -> None:
    row.retransmits = int(snd.get("retransmits", 0))
    row.max_snd_cwnd = int(snd.get("max_snd_cwnd", 0))
    row.max_snd_wnd = int(snd.get("max_snd_wnd", 0))
    row.max_rtt = int(snd.get("max_rtt_us", 0))
    row.min_rtt = int(snd.get("min_rtt_us", 0))
    row.mean_rtt = int(snd.get("mean_rtt_us", 0))


def _own_end_ns(side: dict[str, Any], stream: _TcpStream) -> int | None:
    if side.get("end_ns") is not None:
        return int(side["end_ns"])
    if stream.timed:
        return int(stream.timed[-1][0].raw["end_ns"])
    return None


def _tcp_client_end(streams: list[_TcpStream], base_us: int, reverse: bool) -> _TcpEnd:
    """``iperf_print_results`` on the client (after the results exchange, if any).

    Times come from the first stream only: its own ``end_time`` (post-omit
    ``start_time`` → last stats instant) and the peer's ``end − start`` from
    the exchange; a missing peer time falls back to the own one. With
    ``-R`` the exchange brings only bytes and retransmits of the sender.
    """
    own_key, peer_key = ("receiver", "sender") if reverse else ("sender", "receiver")
    end_time = 0.0
    peer_time = 0.0
    exchanged = False
    if streams:
        first = streams[0]
        own_end = _own_end_ns(first.raw.get(own_key) or {}, first)
        end_time = _secs(base_us, _us(own_end)) if own_end is not None else 0.0
        peer = first.raw.get(peer_key)
        exchanged = peer is not None
        if peer and peer.get("end_ns") is not None:
            peer_time = _secs(_us(peer.get("start_ns", peer["end_ns"])), _us(peer["end_ns"]))
    if reverse:
        receiver_time = end_time
        sender_time = peer_time if peer_time != 0.0 else receiver_time
    else:
        sender_time = end_time
        receiver_time = peer_time if peer_time != 0.0 else sender_time
    rows = []
    for s in streams:
        snd = s.raw.get("sender") or {}
        rcv = s.raw.get("receiver") or {}
        row = _TcpRow(s.sock, int(snd.get("bytes", 0)), int(rcv.get("bytes", 0)))
        if reverse:
            row.retransmits = int(snd.get("retransmits", 0))
        else:
            _tcp_sender_stats(row, snd)
        rows.append(row)
    return _TcpEnd(sender_time, receiver_time, end_time, (not reverse) or exchanged, rows)


def _tcp_end_json(end: _TcpEnd, flag: bool, profile: Any, cpu: dict[str, Any],
                  snd_cc: str | None, rcv_cc: str | None) -> dict[str, Any]:
    streams = []
    total_sent = total_received = total_retr = 0
    for row in end.rows:
        total_sent += row.sent
        total_received += row.received
        total_retr += row.retransmits
        snd: dict[str, Any] = {"socket": row.sock, "start": 0.0, "end": end.sender_time,
                               "seconds": end.sender_time, "bytes": row.sent,
                               "bits_per_second": _bw(row.sent, end.sender_time) * 8}
        if end.has_retr:
            snd["retransmits"] = row.retransmits
            snd["max_snd_cwnd"] = row.max_snd_cwnd
            if _has_snd_wnd(profile):
                snd["max_snd_wnd"] = row.max_snd_wnd
            snd["max_rtt"] = row.max_rtt
            snd["min_rtt"] = row.min_rtt
            snd["mean_rtt"] = row.mean_rtt
        rcv = {"socket": row.sock, "start": 0.0, "end": end.receiver_time, "seconds": end.end_time,
               "bytes": row.received, "bits_per_second": _bw(row.received, end.receiver_time) * 8}
        streams.append({"sender": _sender_flag(snd, profile, flag),
                        "receiver": _sender_flag(rcv, profile, flag)})
    sum_sent: dict[str, Any] = {"start": 0.0, "end": end.sender_time, "seconds": end.sender_time,
                                "bytes": total_sent,
                                "bits_per_second": _bw(total_sent, end.sender_time) * 8}
    if end.has_retr:
        sum_sent["retransmits"] = total_retr
    sum_received = {"start": 0.0, "end": end.receiver_time, "seconds": end.receiver_time,
                    "bytes": total_received,
                    "bits_per_second": _bw(total_received, end.receiver_time) * 8}
    doc: dict[str, Any] = {"streams": streams,
                           "sum_sent": _sender_flag(sum_sent, profile, flag),
                           "sum_received": _sender_flag(sum_received, profile, flag),
                           "cpu_utilization_percent": cpu}
    if snd_cc:
        doc["sender_tcp_congestion"] = snd_cc
    if rcv_cc:
        doc["receiver_tcp_congestion"] = rcv_cc
    return doc


def _tcp_summary_text(p: _Printer, heads: dict[str, str], end: _TcpEnd, show_sender: bool,
                      show_receiver: bool, multi: bool) -> None:
    """Separator, header, per stream ``sender``/``receiver`` lines, ``[SUM]`` lines for -P."""
    p(SEPARATOR)
    p(heads["retrans"] if end.has_retr else heads["bw"])
    st, rt = end.sender_time, end.receiver_time
    for row in end.rows:
        if show_sender:
            if end.has_retr:
                p(tcp_sender_summary_line(row.sock, 0.0, st, row.sent, st, row.retransmits))
            else:
                p(tcp_receiver_line(row.sock, 0.0, st, row.sent, st, "sender"))
        if show_receiver:
            p(tcp_receiver_line(row.sock, 0.0, rt, row.received, rt, "receiver"))
    if not multi:
        return
    if show_sender:
        sent = sum(r.sent for r in end.rows)
        xfer, rate = unit_snprintf(sent, "A"), unit_snprintf(_bw(sent, st), "a")
        if end.has_retr:
            p(REPORT_SUM_BW_RETRANS % ("", 0.0, st, xfer, rate, sum(r.retransmits for r in end.rows),
                                      "sender"))
        else:
            p(REPORT_SUM_BW % ("", 0.0, st, xfer, rate, "sender"))
    if show_receiver:
        received = sum(r.received for r in end.rows)
        p(REPORT_SUM_BW % ("", 0.0, rt, unit_snprintf(received, "A"),
                           unit_snprintf(_bw(received, rt), "a"), "receiver"))


def _client_socks(result: dict[str, Any], profile: Any) -> list[int]:
    base = int(profile.iperf3_socket_base)
    return [base + 2 * i for i in range(len(result.get("streams") or []))]


def _bufsize_pairs(profile: Any, n: int, window: int, sndbuf: int, rcvbuf: int) -> list[tuple[str, Any]]:
    triple = [("sock_bufsize", int(window)), ("sndbuf_actual", int(sndbuf)),
              ("rcvbuf_actual", int(rcvbuf))]
    return triple * (max(n, 1) if _bufsize_per_stream(profile) else 1)


def _tcp_client_json(result: dict[str, Any], client: Iperf3Client, profile: Any) -> str:
    """``iperf3 -c … -J`` over TCP (docs/semantics/formats.md §1.5, §1.6)."""
    reverse = client.reverse
    sender = not reverse
    socks = _client_socks(result, profile)
    streams, keep, base_us = _tcp_streams(result, socks, client.interval_s)
    connected = [{
        "socket": s.sock,
        "local_host": result["local_ip"],
        "local_port": int(s.raw["local_port"]),
        "remote_host": result["remote_ip"],
        "remote_port": int(result["remote_port"]),
    } for s in streams]
    at_ns = next((result[k] for k in ("connect_ns", "test_start_ns", "start_ns")
                  if result.get(k) is not None), 0)
    pairs: list[tuple[str, Any]] = [
        ("connected", connected),
        ("version", _version_string(profile)),
        ("system_info", profile.system_info),
        ("timestamp", _timestamp(profile, at_ns)),
        ("connecting_to", {"host": client.host, "port": client.port}),
        ("cookie", result["cookie"]),
    ]
    pairs.append(("tcp_mss_default", int(result.get("tcp_mss_default", 1448))))
    if _on_connect_rate(profile, "tcp", client.rate_bps):
        pairs.append(("target_bitrate", client.rate_bps))
    pairs += _bufsize_pairs(profile, len(streams), client.window or 0,
                            result.get("sndbuf_actual", 16384), result.get("rcvbuf_actual", 131072))
    pairs.append(("test_start", _client_test_start(client, profile)))
    end = _tcp_client_end(streams, base_us, reverse)
    exchanged = bool(streams) and streams[0].raw.get("sender" if reverse else "receiver") is not None
    own_cc, peer_cc = ("receiver_congestion", "sender_congestion") if reverse else (
        "sender_congestion", "receiver_congestion")
    ccs = {own_cc: result.get(own_cc), peer_cc: result.get(peer_cc) if exchanged else None}
    doc: dict[str, Any] = {
        "start": _JsonObject(pairs),
        "intervals": _tcp_intervals_json(streams, keep, sender, profile),
        "end": _tcp_end_json(end, sender, profile, _cpu(result), ccs["sender_congestion"],
                             ccs["receiver_congestion"]),
    }
    if result.get("interrupted"):
        doc["error"] = "interrupt - the client has terminated"
    if client.title:
        doc["title"] = client.title
    return cjson.dumps(doc)


def _tcp_client_text(result: dict[str, Any], client: Iperf3Client, profile: Any) -> str:
    """Human-readable TCP client output (docs/semantics/formats.md §1.8), byte exact."""
    reverse = client.reverse
    heads = _headers(profile)
    p = _Printer(client.title)
    socks = _client_socks(result, profile)
    streams, keep, base_us = _tcp_streams(result, socks, client.interval_s)
    multi = max(client.parallel, len(streams)) > 1
    p(REPORT_CONNECTING % (client.host, client.port))
    if reverse:
        p(REPORT_REVERSE % client.host)
    for s in streams:
        p(REPORT_CONNECTED % (s.sock, result["local_ip"], int(s.raw["local_port"]),
                              result["remote_ip"], int(result["remote_port"])))
    _tcp_intervals_text(p, heads, streams, keep, not reverse, multi)
    end = _tcp_client_end(streams, base_us, reverse)
    _tcp_summary_text(p, heads, end, True, True, multi)
    if result.get("interrupted"):
        p.raw("iperf3: interrupt - the client has terminated\n")
    else:
        p("\n")
        p(REPORT_DONE)
    return p.text()
