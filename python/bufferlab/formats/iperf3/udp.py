"""UDP tests: the sender/receiver summary (iperf_api.c ``iperf_print_results``, the single
``udp`` JSON object, ``end.sum``/``sum_sent``/``sum_received``) on both sides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .common import (
    REPORT_OMITTED,
    REPORT_SUM_OUTOFORDER,
    SEPARATOR,
    _has_udp_sum_sent_received,
    _Interval,
    _intervals,
    _Printer,
    _ratio,
    _secs,
    _sender_flag,
    _us,
    udp_line,
)


@dataclass
class _UdpSummary:
    """The end-of-test numbers of a UDP test, as either side prints them."""

    sender_time: float
    receiver_time: float
    bytes_sent: int       # on the server: the client's, from the results exchange, else 0
    bytes_received: int
    sender_packets: int
    receiver_packets: int
    lost: int
    out_of_order: int
    jitter: float  # seconds


def _udp_summary(sender: dict[str, Any], receiver: dict[str, Any], sender_time: float,
                 receiver_time: float) -> _UdpSummary:
    return _UdpSummary(
        sender_time=sender_time,
        receiver_time=receiver_time,
        bytes_sent=int(sender.get("bytes", 0)),
        bytes_received=int(receiver.get("bytes", 0)),
        sender_packets=int(sender.get("packets", 0)),
        receiver_packets=int(receiver.get("packets", 0)),
        lost=int(receiver.get("lost", 0)),
        out_of_order=int(receiver.get("out_of_order", 0)),
        jitter=float(receiver.get("jitter_s", 0.0)),
    )


def _udp_end(s: _UdpSummary, sock: int, profile: Any, client: bool, cpu: dict[str, Any]) -> dict[str, Any]:
    """The JSON ``end`` object of a UDP test (one stream), key order as iperf3's."""
    bw_sent = s.bytes_sent / s.sender_time if s.sender_time > 0.0 else 0.0
    packet_count = s.sender_packets or s.receiver_packets
    udp = {"socket": sock, "start": 0.0, "end": s.sender_time, "seconds": s.sender_time,
           "bytes": s.bytes_sent, "bits_per_second": bw_sent * 8, "jitter_ms": s.jitter * 1000.0,
           "lost_packets": s.lost, "packets": packet_count,
           "lost_percent": 100.0 * s.lost / s.sender_packets if s.sender_packets > 0 else 0.0,
           "out_of_order": s.out_of_order}
    lost_percent = 100.0 * s.lost / packet_count if packet_count > 0 else 0.0
    total = {"start": 0.0, "end": s.receiver_time, "seconds": s.receiver_time,
             "bytes": s.bytes_sent, "bits_per_second": bw_sent * 8,
             "jitter_ms": s.jitter * 1000.0, "lost_packets": s.lost, "packets": packet_count,
             "lost_percent": lost_percent}
    end = {"streams": [{"udp": _sender_flag(udp, profile, client)}],
           "sum": _sender_flag(total, profile, client)}
    if _has_udp_sum_sent_received(profile):
        # iperf3 3.11+: each side's own totals beside the ambiguous "sum"; "sender" is fixed
        # (true, false) whichever side prints them, and the rate is bytes * 8 / seconds
        end["sum_sent"] = {"start": 0.0, "end": s.sender_time, "seconds": s.sender_time,
                           "bytes": s.bytes_sent,
                           "bits_per_second": _ratio(s.bytes_sent * 8.0, s.sender_time),
                           "jitter_ms": 0.0, "lost_packets": 0, "packets": s.sender_packets,
                           "lost_percent": 0.0, "sender": True}
        end["sum_received"] = {"start": 0.0, "end": s.receiver_time, "seconds": s.receiver_time,
                               "bytes": s.bytes_received,
                               "bits_per_second": _ratio(s.bytes_received * 8.0, s.receiver_time),
                               "jitter_ms": s.jitter * 1000.0, "lost_packets": s.lost,
                               "packets": s.receiver_packets, "lost_percent": lost_percent, "sender": False}
    end["cpu_utilization_percent"] = cpu
    return end


def _client_summary(result: dict[str, Any], base_us: int) -> _UdpSummary:
    sender = result.get("sender") or {}
    sender_time = _secs(base_us, _us(sender["end_ns"])) if sender.get("end_ns") is not None else 0.0
    recv = result.get("receiver")
    if recv:
        receiver_time = _secs(_us(recv["start_ns"]), _us(recv["end_ns"]))
    else:  # no results exchange (interrupted): iperf3 falls back to sender_time
        receiver_time = 0.0
    if receiver_time == 0.0:
        receiver_time = sender_time
    return _udp_summary(sender, recv or {}, sender_time, receiver_time)


def _derived_total(test: dict[str, Any]) -> dict[str, Any]:
    """Totals of a test cut short (no ``total``): the post-omit intervals summed."""
    ivs = [iv for iv in test.get("intervals", []) if not iv.get("omitted")]
    if not ivs:
        return {}
    return {
        "bytes": sum(int(iv.get("bytes", 0)) for iv in ivs),
        "packets": sum(int(iv.get("packets", 0)) for iv in ivs),
        "lost": sum(int(iv.get("lost", 0)) for iv in ivs),
        "out_of_order": sum(int(iv.get("out_of_order", 0)) for iv in ivs),
        "jitter_s": float(ivs[-1].get("jitter_s", 0.0)),
        "end_ns": ivs[-1]["end_ns"],
    }


def _server_summary(test: dict[str, Any], base_us: int) -> _UdpSummary:
    total = test.get("total") or _derived_total(test)
    receiver_time = _secs(base_us, _us(total["end_ns"])) if total.get("end_ns") is not None else 0.0
    peer = test.get("peer")
    sender_time = _secs(_us(peer["start_ns"]), _us(peer["end_ns"])) if peer else 0.0
    if sender_time == 0.0:
        sender_time = receiver_time
    return _udp_summary(peer or {}, total, sender_time, receiver_time)


def _udp_receiver_interval_line(sock: int, iv: _Interval) -> str:
    packets = int(iv.raw.get("packets", 0))
    lost = int(iv.raw.get("lost", 0))
    return udp_line(sock, iv.st, iv.et, int(iv.raw["bytes"]), iv.seconds,
                    float(iv.raw.get("jitter_s", 0.0)) * 1000.0, lost, packets,
                    100.0 * lost / packets if packets > 0 else 0.0,
                    REPORT_OMITTED if iv.raw.get("omitted") else "")


def _udp_server_test_text(p: _Printer, heads: dict[str, str], test: dict[str, Any], interval_s: float,
                          sock: int) -> None:
    """Intervals and summary of one UDP test as the server prints them."""
    kept, base_us = _intervals(test, interval_s)
    header_done = False
    for iv in kept:
        if iv.first and not header_done:
            p(heads["udp"])
            header_done = True
        p(_udp_receiver_interval_line(sock, iv))
    s = _server_summary(test, base_us)
    p(SEPARATOR)
    p(heads["udp"])
    if s.out_of_order > 0:
        p(REPORT_SUM_OUTOFORDER % ("", 0.0, s.sender_time, s.out_of_order))
    p(udp_line(sock, 0.0, s.receiver_time, s.bytes_received, s.receiver_time,
               s.jitter * 1000.0, s.lost, s.receiver_packets,
               100.0 * s.lost / s.receiver_packets if s.receiver_packets > 0 else 0.0,
               "receiver"))
