"""iperf3 output: client/server ``-J`` JSON and human-readable text.

Reproduces, for the engine results of docs/internals.md (``iperf3_client``,
``iperf3_server``) and the client's settings (commands/iperf3.py
``Iperf3Client``, the model the request was built from), what iperf3 prints
(docs/semantics/formats.md §1; reference layout 3.7, version switches via
``Profile.iperf3_version``):

* ``src/iperf_api.c`` — ``iperf_print_intermediate`` (per-interval JSON
  objects and text lines, the "short final interval with no data" rule),
  ``print_interval_results`` (header before the first interval),
  ``iperf_print_results`` (UDP summary: the single ``udp`` JSON object, the
  ``sender``/``receiver`` text lines, ``end.sum``, from 3.11 also
  ``end.sum_sent``/``end.sum_received``, the out-of-order line),
  ``iperf_on_connect`` (``timestamp``, ``connecting_to`` /
  ``accepted_connection``, ``cookie``), ``iperf_on_test_start``
  (``test_start``), ``iperf_json_start`` / ``iperf_json_finish`` (document
  skeleton, ``title``, ``error``), ``iperf_got_sigend`` (``interrupt - the
  server has terminated``), ``iperf_printf`` (``-T title`` prefix on every
  printf call, blank lines included);
* ``src/iperf_locale.c`` — the report templates (``report_bw_*_format``,
  headers, separator, ``report_connected``, ``report_accepted``);
* ``src/units.c`` — ``unit_snprintf`` (adaptive Byte/KByte/… for transfer and
  Cwnd, bit/Kbit/… for bitrate, ``%4.2f``/``%4.1f``/``%4.0f`` mantissa);
* ``src/iperf_udp.c`` — ``iperf_udp_buffercheck`` (``sock_bufsize``,
  ``sndbuf_actual``, ``rcvbuf_actual``; 212992 = Linux ``wmem_default``);
* ``src/iperf_server_api.c`` — banner ``Server listening on PORT``;
* ``src/iperf.h`` — ``interval_duration`` is a C ``float``; times are
  ``iperf_time`` (µs) and ``iperf_time_in_secs`` = secs + usecs/1e6.

Timing model (docs/semantics/formats.md §1.2/§1.3): every engine instant (integer ns) is
truncated to µs as ``clock_gettime`` → ``iperf_time`` would, differences are
taken in integer µs and converted with ``secs + usecs / 1000000.0``; the
interval ``seconds`` is that value stored in a float32; ``bits_per_second``
= ``bytes / seconds * 8`` evaluated in that order in double precision.

Not modelled: CPU use — every ``cpu_utilization_percent`` member is 0 unless
the engine result carries a ``cpu_utilization_percent`` object (the six
iperf3 keys), which is then copied (used by the conformance tests to replay
the docs/semantics/formats.md §1.5/§1.7 examples). ``--bidir`` and UDP ``-R`` are not built
(``ValueError``). iperf3 3.0.x is only honoured for the header word
``Bandwidth`` (its UDP summary layout and 8192-byte defaults are not).

Engine keys used beyond docs/internals.md: ``test_start_ns`` (the stream's
first ``start_time``; ``start_ns`` is then the post-omit one), client
``interrupted`` (Ctrl-C); optional: ``omit_end_ns`` (when ``test_start_ns``
is absent), ``connect_ns`` (the ``timestamp`` instant), server
``interval_ns`` and ``one_off``, and per server test ``cookie``, ``params``
(the client's test parameters: ``num_streams``, ``blksize``, ``omit``,
``duration``, ``bytes``, ``blocks``, ``tos``, ``rate``; TCP also ``window``
(-w), ``mss`` (-M), ``reverse``) and ``peer`` (UDP only: the client's sender
totals as received in the results exchange: ``bytes``, ``packets``,
``start_ns``, ``end_ns``). Without ``peer`` the server falls back as iperf3
does when no results were exchanged (sender_time = receiver_time, 0 bytes
sent). A server test with ``total: null`` (cut by Ctrl-C) is summarised from
its post-omit intervals.

TCP (docs/semantics/formats.md §1.5, §1.6, §1.8; ``iperf_print_intermediate``,
``print_interval_results``, ``iperf_print_results``, ``get_results``,
``iperf_tcp_connect``/``iperf_tcp_listen``, ``iperf_accept``,
``iperf_handle_message_server``):

* client: ``-P N`` streams with sockets base, base+2, …; interval ``[SUM]``
  lines (text only for N > 1, JSON ``sum`` always) timed by the first stream;
  the interval header only before the very first interval, the separator
  before every later block when N > 1 (so after the ``-O`` omitted block);
  the summary uses the first stream's sender/receiver times for every line;
  ``-R``: ``Reverse mode, remote host … is sending``, receiver-type
  intervals, ``"sender": false`` everywhere, and in ``end`` only what the
  results exchange carries (bytes, retransmits, times): ``max_snd_cwnd``,
  ``max_snd_wnd``, ``max_rtt``, ``min_rtt``, ``mean_rtt`` are 0 there;
* JSON ``start``: ``tcp_mss_default`` (``tcp_mss`` with -M, which the parser
  refuses) after ``cookie``, ``target_bitrate`` after it (3.11+; 3.7-3.10 with -b), then one
  ``sock_bufsize`` / ``sndbuf_actual`` / ``rcvbuf_actual`` triple **per stream**
  (cJSON appends a duplicate key per ``iperf_tcp_connect``; fixed in 3.14); ``snd_wnd`` /
  ``max_snd_wnd`` from 3.10;
* server: prints its summary at TEST_END, *before* the results exchange, so
  a normal (receiving) server has no retransmit columns, sender_time =
  receiver_time and 0 bytes sent; only ``receiver`` lines (``sender`` lines
  with ``-R``); sockets base, base+3, …; JSON ``start`` has the listener's
  ``sock_bufsize``/``sndbuf_actual``/``rcvbuf_actual`` *before*
  ``timestamp`` (``iperf_tcp_listen`` runs in the parameter exchange, before
  ``on_connect``) and ``tcp_mss_default`` 0 (the server never reads its
  control MSS); only its own congestion key.

TCP engine keys used beyond docs/internals.md (all optional): client
``connect_ns``, ``cpu_utilization_percent``; server test ``reverse`` (or
``params.reverse``), ``cookie``, ``params``, ``congestion`` (the server's
algorithm), ``sndbuf_actual`` / ``rcvbuf_actual`` (listener socket;
defaults 16384 / 131072), per server stream ``client_data_port`` (required
for streams after the first) and, with ``-R``, sender intervals (the client
interval keys) and a ``total`` with the client ``sender`` keys.
"""

from __future__ import annotations

import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..commands.iperf3 import Iperf3Client
from . import cjson

__all__ = [
    "client_json",
    "client_text",
    "server_json",
    "server_text",
    "unit_snprintf",
    "float32",
    "tcp_sender_interval_line",
    "tcp_sender_summary_line",
    "tcp_receiver_line",
    "udp_sender_interval_line",
    "udp_line",
    "SEPARATOR",
    "goodput_bps",
    "receiver_totals",
]

#: SO_SNDBUF/SO_RCVBUF of a fresh UDP socket on Linux (net.core.[rw]mem_default)
UDP_SOCKBUF = 212992
BANNER = "-----------------------------------------------------------\n"  # 59 dashes
SEPARATOR = "- - - - - - - - - - - - - - - - - - - - - - - - -\n"

# --- report templates (iperf_locale.c, 3.7; C printf layouts) ---------------
REPORT_CONNECTING = "Connecting to host %s, port %d\n"
REPORT_REVERSE = "Reverse mode, remote host %s is sending\n"
REPORT_ACCEPTED = "Accepted connection from %s, port %d\n"
REPORT_CONNECTED = "[%3d] local %s port %d connected to %s port %d\n"
REPORT_DONE = "iperf Done.\n"
REPORT_BW = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec                  %s\n"
REPORT_BW_RETRANS = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %3u             %s\n"
REPORT_BW_RETRANS_CWND = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %3u   %ss       %s\n"
REPORT_BW_UDP = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %5.3f ms  %d/%d (%.2g%%)  %s\n"
REPORT_BW_UDP_SENDER = "[%3d]%s %6.2f-%-6.2f sec  %ss  %ss/sec %s %d  %s\n"
REPORT_SUM_BW = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec                  %s\n"
REPORT_SUM_BW_RETRANS = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %3d             %s\n"
REPORT_SUM_OUTOFORDER = "[SUM]%s %4.1f-%4.1f sec  %d datagrams received out-of-order\n"
REPORT_OMITTED = "(omitted)"

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


# --- numeric helpers ----------------------------------------------------------


def float32(x: float) -> float:
    """Round a double to the nearest IEEE single (C ``float`` assignment)."""
    return struct.unpack("f", struct.pack("f", x))[0]


def _us(ns: int) -> int:
    """Engine ns → the µs an ``iperf_time_now`` reading would hold (truncation)."""
    return int(ns) // 1000


def _secs(us_a: int, us_b: int) -> float:
    """``iperf_time_in_secs(iperf_time_diff(a, b))``: |b − a| in seconds."""
    d = abs(us_b - us_a)
    return d // 1_000_000 + (d % 1_000_000) / 1000000.0


def _ratio(num: float, den: float) -> float:
    """C double division, including the x/0 cases (inf / nan → JSON null)."""
    if den == 0:
        if num == 0:
            return float("nan")
        return float("inf") if num > 0 else float("-inf")
    return num / den


_CONV_BYTES = (1.0, 1.0 / 1024, 1.0 / 1024 / 1024, 1.0 / 1024 / 1024 / 1024, 1.0 / 1024 / 1024 / 1024 / 1024)
_CONV_BITS = (1.0, 1.0 / 1000, 1.0 / 1000 / 1000, 1.0 / 1000 / 1000 / 1000, 1.0 / 1000 / 1000 / 1000 / 1000)
_LABEL_BYTE = ("Byte", "KByte", "MByte", "GByte", "TByte")
_LABEL_BIT = ("bit", "Kbit", "Mbit", "Gbit", "Tbit")
_FIXED = {"B": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def unit_snprintf(value: float, fmt: str = "a") -> str:
    """``unit_snprintf`` of src/units.c (no trailing ``s``; templates add it).

    Upper-case formats print bytes (``A`` adaptive by 1024), lower-case ones
    bits of a byte quantity (value × 8; ``a`` adaptive by 1000); ``k``/``m``/
    ``g``/``t`` (and upper-case) force a unit, as ``-f`` does.
    """
    num = float(value)
    bits = not fmt.isupper()
    if bits:
        num *= 8
    up = fmt.upper()
    if up in _FIXED:
        conv = _FIXED[up]
    else:
        tmp = num
        conv = 0
        base = 1000.0 if bits else 1024.0
        while tmp >= base and conv < 4:
            tmp /= base
            conv += 1
    if bits:
        num *= _CONV_BITS[conv]
        label = _LABEL_BIT[conv]
    else:
        num *= _CONV_BYTES[conv]
        label = _LABEL_BYTE[conv]
    if num < 9.995:
        return "%4.2f %s" % (num, label)
    if num < 99.95:
        return "%4.1f %s" % (num, label)
    return "%4.0f %s" % (num, label)


def _bw(nbytes: float, seconds: float) -> float:
    """Per-line bandwidth in bytes/s with iperf3's ``> 0`` guard."""
    return float(nbytes) / seconds if seconds > 0 else 0.0


# --- generic line helpers (also used for TCP, docs/semantics/formats.md §11 item 2) ----------


def tcp_sender_interval_line(sock: int, st: float, et: float, nbytes: int, seconds: float,
                             retransmits: int, cwnd: int, tag: str = "") -> str:
    """``report_bw_retrans_cwnd_format`` (TCP sender interval with Retr/Cwnd)."""
    return REPORT_BW_RETRANS_CWND % (
        sock, "", st, et, unit_snprintf(nbytes, "A"), unit_snprintf(_bw(nbytes, seconds), "a"),
        retransmits, unit_snprintf(cwnd, "A"), tag)


def tcp_sender_summary_line(sock: int, st: float, et: float, nbytes: int, seconds: float,
                            retransmits: int, tag: str = "sender") -> str:
    """``report_bw_retrans_format`` (TCP sender summary)."""
    return REPORT_BW_RETRANS % (
        sock, "", st, et, unit_snprintf(nbytes, "A"), unit_snprintf(_bw(nbytes, seconds), "a"),
        retransmits, tag)


def tcp_receiver_line(sock: int, st: float, et: float, nbytes: int, seconds: float,
                      tag: str = "receiver") -> str:
    """``report_bw_format`` (TCP receiver interval or summary)."""
    return REPORT_BW % (
        sock, "", st, et, unit_snprintf(nbytes, "A"), unit_snprintf(_bw(nbytes, seconds), "a"), tag)


def udp_sender_interval_line(sock: int, st: float, et: float, nbytes: int, seconds: float,
                             packets: int, tag: str = "") -> str:
    """``report_bw_udp_sender_format`` (``…Kbits/sec  78  ``)."""
    return REPORT_BW_UDP_SENDER % (
        sock, "", st, et, unit_snprintf(nbytes, "A"), unit_snprintf(_bw(nbytes, seconds), "a"),
        "", packets, tag)


def udp_line(sock: int, st: float, et: float, nbytes: int, seconds: float, jitter_ms: float,
             lost: int, total: int, lost_percent: float, tag: str = "") -> str:
    """``report_bw_udp_format`` (UDP receiver interval, any UDP summary)."""
    return REPORT_BW_UDP % (
        sock, "", st, et, unit_snprintf(nbytes, "A"), unit_snprintf(_bw(nbytes, seconds), "a"),
        jitter_ms, lost, total, lost_percent, tag)


# --- shared pieces ------------------------------------------------------------


def _version_string(profile: Any) -> str:
    major, minor = profile.iperf3_version
    return f"iperf {major}.{minor}"


def _has_sender_key(profile: Any) -> bool:
    return tuple(profile.iperf3_version) >= (3, 7)


def _has_target_bitrate(profile: Any) -> bool:
    """``start.target_bitrate`` from ``iperf_on_connect`` on every test and
    ``test_start.target_bitrate``: iperf3 3.11 (3.7-3.10: see :func:`_on_connect_rate`)."""
    return tuple(profile.iperf3_version) >= (3, 11)


def _on_connect_rate(profile: Any, protocol: str, rate: int) -> bool:
    """Whether ``iperf_on_connect`` adds ``start.target_bitrate`` (after ``cookie`` /
    ``tcp_mss_default``): from 3.11 always; 3.7-3.10 only for TCP with a rate (-b),
    esnet/iperf #776."""
    if _has_target_bitrate(profile):
        return True
    return tuple(profile.iperf3_version) >= (3, 7) and protocol == "tcp" and bool(rate)


def _parameters_rate(profile: Any, rate: int) -> list[tuple[str, Any]]:
    """The server's ``get_parameters`` (3.7+, #776) adds ``start.target_bitrate`` when the
    client sent a rate (every UDP test, TCP with -b), in the parameter exchange: after
    ``system_info``, before ``on_connect``'s keys (so a 3.11+ UDP server prints the key twice)."""
    return [("target_bitrate", int(rate))] if tuple(profile.iperf3_version) >= (3, 7) and rate else []


def _has_udp_sum_sent_received(profile: Any) -> bool:
    """UDP ``end.sum_sent`` / ``end.sum_received`` (iperf3 3.11, esnet/iperf PR #1174)."""
    return tuple(profile.iperf3_version) >= (3, 11)


def _headers(profile: Any) -> dict[str, str]:
    word = "Bitrate" if tuple(profile.iperf3_version) >= (3, 2) else "Bandwidth"
    head = "[ ID] Interval           Transfer     "
    return {
        "bw": head + word + "\n",
        "retrans": head + word.ljust(16) + "Retr\n",
        "retrans_cwnd": head + word.ljust(16) + "Retr  Cwnd\n",
        "udp": head + word.ljust(16) + "Jitter    Lost/Total Datagrams\n",
        "udp_sender": head + word.ljust(16) + "Total Datagrams\n",
    }


def _timestamp(profile: Any, at_ns: int) -> dict[str, Any]:
    secs = int(profile.epoch) + int(at_ns) // 1_000_000_000
    tm = time.gmtime(secs)
    text = "%s, %02d %s %04d %02d:%02d:%02d GMT" % (
        _DAYS[tm.tm_wday], tm.tm_mday, _MONTHS[tm.tm_mon - 1], tm.tm_year,
        tm.tm_hour, tm.tm_min, tm.tm_sec)
    return {"time": text, "timesecs": secs}


def _cpu(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("host_total", "host_user", "host_system", "remote_total", "remote_user", "remote_system")
    given = result.get("cpu_utilization_percent") or {}
    return {k: float(given.get(k, 0.0)) for k in keys}


def _sender_flag(obj: dict[str, Any], profile: Any, flag: bool) -> dict[str, Any]:
    if _has_sender_key(profile):
        obj["sender"] = flag
    return obj


class _Printer:
    """``iperf_printf``: one call = one piece of text, prefixed by ``title:  ``."""

    def __init__(self, title: str | None) -> None:
        self.prefix = f"{title}:  " if title else ""
        self.parts: list[str] = []

    def __call__(self, text: str) -> None:
        self.parts.append(self.prefix + text)

    def raw(self, text: str) -> None:  # fprintf(stderr, …): no title prefix
        self.parts.append(text)

    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class _Interval:
    st: float          # seconds since the stream's start_time (µs resolution)
    et: float
    seconds: float     # float32 interval_duration
    first: bool        # interval_start_time == the stream's original start_time
    raw: dict[str, Any]


def _time_bases(obj: dict[str, Any]) -> tuple[int, int]:
    """(original start, post-omit start) of a stream, in µs.

    The engine reports ``test_start_ns`` (TEST_START, the stream's first
    ``start_time``) and ``start_ns`` (``start_time`` after the omit reset;
    equal without ``-O``). Without ``test_start_ns``, ``start_ns`` is the
    original start and the reset instant is ``omit_end_ns`` or the end of
    the last omitted interval.
    """
    orig = obj.get("test_start_ns")
    if orig is not None:
        return _us(orig), _us(obj["start_ns"])
    omitted = [iv for iv in obj.get("intervals", []) if iv.get("omitted")]
    post = obj.get("omit_end_ns")
    if post is None:
        post = omitted[-1]["end_ns"] if omitted else obj["start_ns"]
    return _us(obj["start_ns"]), _us(post)


def _timed_intervals(obj: dict[str, Any], interval_s: float) -> tuple[list[tuple[_Interval, bool]], int]:
    """Every interval of one stream with iperf3's times, and whether it may be printed.

    Omitted intervals are timed from the original ``start_time``, the others
    from the post-omit one (so they restart at 0.00). The flag is
    ``iperf_print_intermediate``'s test: at least 10 % of the interval length
    or any data. Returns the intervals and the µs instant of the post-omit
    ``start_time`` (the summary's time base).
    """
    s_us, base_us = _time_bases(obj)
    out: list[tuple[_Interval, bool]] = []
    for iv in obj.get("intervals", []):
        ist, iet = _us(iv["start_ns"]), _us(iv["end_ns"])
        base = s_us if iv.get("omitted") else base_us
        length = _secs(ist, iet)
        ok = length >= interval_s * 0.10 or int(iv.get("bytes", 0)) > 0
        out.append((_Interval(_secs(base, ist), _secs(base, iet), float32(length), ist == s_us, iv), ok))
    return out, base_us


def _intervals(obj: dict[str, Any], interval_s: float) -> tuple[list[_Interval], int]:
    """The printed intervals of one stream (short empty ones dropped) and the time base."""
    timed, base_us = _timed_intervals(obj, interval_s)
    return [iv for iv, ok in timed if ok], base_us


def _check_protocol(protocol: str | None) -> str:
    proto = str(protocol or "udp").lower()
    if proto not in ("udp", "tcp"):
        raise ValueError(f"iperf3 formatter: protocol {protocol!r} is not supported (UDP and TCP only)")
    return proto


def _check_udp(protocol: str) -> None:
    if _check_protocol(protocol) != "udp":
        raise ValueError(f"iperf3 formatter: {protocol!r} test passed to the UDP formatter")


# --- client ---------------------------------------------------------------------


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


def _error_document(profile: Any, error: str, title: str | None) -> str:
    doc: dict[str, Any] = {
        "start": {"connected": [], "version": _version_string(profile),
                  "system_info": profile.system_info},
        "intervals": [],
        "end": {},
        "error": error,
    }
    if title:
        doc["title"] = title
    return cjson.dumps(doc)


def _test_start(protocol: str, num_streams: int, blksize: int, omit: int, duration: int,
                nbytes: int, blocks: int, tos: int, rate: int, profile: Any,
                reverse: bool = False) -> dict[str, Any]:
    ts: dict[str, Any] = {
        "protocol": protocol.upper(),
        "num_streams": int(num_streams),
        "blksize": int(blksize),
        "omit": int(omit),
        "duration": int(duration),
        "bytes": int(nbytes),
        "blocks": int(blocks),
        "reverse": 1 if reverse else 0,
        "tos": int(tos),
    }
    if _has_target_bitrate(profile):
        ts["target_bitrate"] = int(rate)
    return ts


def _client_test_start(client: Iperf3Client, profile: Any) -> dict[str, Any]:
    """``test_start`` as the client fills it from its own settings (``iperf_on_test_start``)."""
    return _test_start(client.protocol, client.parallel, client.blksize, client.omit_s,
                       client.duration_s, client.bytes or 0, client.blocks or 0, client.tos,
                       client.rate_bps, profile, client.reverse)


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


# --- server ---------------------------------------------------------------------


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


def _server_interval_s(result: dict[str, Any]) -> float:
    return int(result.get("interval_ns", 1_000_000_000)) / 1e9


def _banner(p: Callable[[str], None], result: dict[str, Any], test_no: int, profile: Any) -> None:
    port = int(result["port"])
    p(BANNER)
    if tuple(profile.iperf3_version) >= (3, 16):
        p("Server listening on %d (test #%d)\n" % (port, test_no))
    else:
        p("Server listening on %d\n" % port)
    p(BANNER)


def _udp_receiver_interval_line(sock: int, iv: _Interval) -> str:
    packets = int(iv.raw.get("packets", 0))
    lost = int(iv.raw.get("lost", 0))
    return udp_line(sock, iv.st, iv.et, int(iv.raw["bytes"]), iv.seconds,
                    float(iv.raw.get("jitter_s", 0.0)) * 1000.0, lost, packets,
                    100.0 * lost / packets if packets > 0 else 0.0,
                    REPORT_OMITTED if iv.raw.get("omitted") else "")


def server_text(result: dict[str, Any], profile: Any) -> str:
    """Human-readable ``iperf3 -s`` output over the server's whole life.

    Banner, then per test: ``Accepted connection…``, the stream line, the
    receiver intervals (the short final one included unless it is shorter
    than 10 % of the interval *and* empty), separator, header, ``receiver``
    line, banner again. A test cut by Ctrl-C prints its partial results and
    ``iperf3: interrupt - the server has terminated`` (stderr in reality);
    an idle server interrupted prints only that line after the banner.
    """
    heads = _headers(profile)
    p = _Printer(None)
    sock = int(profile.iperf3_socket_base)
    interval_s = _server_interval_s(result)
    tests = list(result.get("tests", []))
    _banner(p, result, 1, profile)
    for n, test in enumerate(tests, start=1):
        tcp = _check_protocol(test.get("protocol", "udp")) == "tcp"
        cut = not test.get("complete", True) and result.get("interrupted")
        p(REPORT_ACCEPTED % (test["client_ip"], int(test["client_ctrl_port"])))
        if tcp:
            for sock_i, _st, cport in _server_tcp_stream_ids(test, profile):
                p(REPORT_CONNECTED % (sock_i, test["local_ip"], int(result["port"]), test["client_ip"],
                                      cport))
        elif test.get("client_data_port") is not None:
            p(REPORT_CONNECTED % (sock, test["local_ip"], int(result["port"]), test["client_ip"],
                                  int(test["client_data_port"])))
        if test.get("start_ns") is None:  # TEST_START never happened: nothing measured
            if cut:
                p.raw("iperf3: interrupt - the server has terminated\n")
                return p.text()
            if result.get("one_off"):
                return p.text()
            _banner(p, result, n + 1, profile)
            continue
        if tcp:
            _tcp_server_test_text(p, heads, test, interval_s, profile)
        else:
            _udp_server_test_text(p, heads, test, interval_s, sock)
        if cut:
            p.raw("iperf3: interrupt - the server has terminated\n")
            return p.text()
        if result.get("one_off"):
            return p.text()
        _banner(p, result, n + 1, profile)
    if result.get("interrupted"):
        p.raw("iperf3: interrupt - the server has terminated\n")
    return p.text()


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


def _server_document(result: dict[str, Any], test: dict[str, Any], profile: Any) -> dict[str, Any]:
    if _check_protocol(test.get("protocol", "udp")) == "tcp":
        return _tcp_server_document(result, test, profile)
    sock = int(profile.iperf3_socket_base)
    port = int(result["port"])
    params = test.get("params") or {}
    started = test.get("start_ns") is not None
    connected = []
    if test.get("client_data_port") is not None:
        connected.append({
            "socket": sock,
            "local_host": test["local_ip"],
            "local_port": port,
            "remote_host": test["client_ip"],
            "remote_port": int(test["client_data_port"]),
        })
    at_ns = test.get("connect_ns")
    if at_ns is None:
        at_ns = test.get("test_start_ns") if started else None
    if at_ns is None:
        at_ns = test.get("start_ns") or 0
    rate = int(params.get("rate", 1048576))
    pairs: list[tuple[str, Any]] = [
        ("connected", connected),
        ("version", _version_string(profile)),
        ("system_info", profile.system_info),
        *_parameters_rate(profile, rate),
        ("timestamp", _timestamp(profile, at_ns)),
        ("accepted_connection", {"host": test["client_ip"], "port": int(test["client_ctrl_port"])}),
        ("cookie", test.get("cookie", "")),
    ]
    if _on_connect_rate(profile, "udp", rate):
        pairs.append(("target_bitrate", rate))
    pairs += [("sock_bufsize", 0), ("sndbuf_actual", UDP_SOCKBUF), ("rcvbuf_actual", UDP_SOCKBUF)]
    pairs.append(("test_start", _test_start(
        "udp", params.get("num_streams", 1), params.get("blksize", 1448), params.get("omit", 0),
        params.get("duration", 10), params.get("bytes", 0), params.get("blocks", 0),
        params.get("tos", 0), rate, profile)))
    start = _JsonObject(pairs)
    if not started:  # TEST_START never happened: the skeleton only
        return {"start": start, "intervals": [], "end": {}}

    kept, base_us = _intervals(test, _server_interval_s(result))
    intervals = []
    for iv in kept:
        nbytes = int(iv.raw["bytes"])
        packets = int(iv.raw.get("packets", 0))
        lost = int(iv.raw.get("lost", 0))
        jitter_ms = float(iv.raw.get("jitter_s", 0.0)) * 1000.0
        omitted = bool(iv.raw.get("omitted", False))
        stream = {"socket": sock, "start": iv.st, "end": iv.et, "seconds": iv.seconds,
                  "bytes": nbytes, "bits_per_second": _bw(nbytes, iv.seconds) * 8,
                  "jitter_ms": jitter_ms, "lost_packets": lost, "packets": packets,
                  "lost_percent": 100.0 * lost / packets if packets > 0 else 0.0,
                  "omitted": omitted}
        total = {"start": iv.st, "end": iv.et, "seconds": iv.seconds, "bytes": nbytes,
                 "bits_per_second": _ratio(nbytes, iv.seconds) * 8, "jitter_ms": jitter_ms,
                 "lost_packets": lost, "packets": packets,
                 "lost_percent": 100.0 * lost / packets if packets > 0 else 0.0,
                 "omitted": omitted}
        intervals.append({"streams": [_sender_flag(stream, profile, False)],
                          "sum": _sender_flag(total, profile, False)})

    end = _udp_end(_server_summary(test, base_us), sock, profile, False, _cpu(test))
    return {"start": start, "intervals": intervals, "end": end}


def server_json(result: dict[str, Any], profile: Any) -> str:
    """``iperf3 -s -J``: one JSON document per test, concatenated.

    A test cut by Ctrl-C gets ``"error": "interrupt - the server has
    terminated"``; a server interrupted while idle prints the bare skeleton
    (``connected: []``, version, system_info) with that error, as
    ``iperf_errexit`` does with the ``json_top`` of the next, empty run.
    """
    docs = []
    tests = list(result.get("tests", []))
    for test in tests:
        doc = _server_document(result, test, profile)
        if not test.get("complete", True) and result.get("interrupted"):
            doc["error"] = "interrupt - the server has terminated"
            docs.append(cjson.dumps(doc))
            return "".join(docs)
        docs.append(cjson.dumps(doc))
        if result.get("one_off"):
            return "".join(docs)
    if result.get("interrupted"):
        docs.append(_error_document(profile, "interrupt - the server has terminated", None))
    return "".join(docs)


# --- TCP ------------------------------------------------------------------------


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


# --- TCP server -------------------------------------------------------------------


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


#: an interval line: ``[  5]   1.00-2.00   sec ...`` (``[SUM]`` with -P)
_INTERVAL_LINE = re.compile(r"\[\s*(?:\d+|SUM)\]\s+(\d+\.\d+)-(\d+\.\d+)\s+sec")


def printed_before(text: str) -> str:
    """What iperf3 had printed on a terminal (line-buffered) when a signal it does not catch
    ended it, out of what it prints when interrupted (``text``): its lines without the
    summary a client prints last and without the ``iperf3: interrupt`` line."""
    lines = [ln for ln in text.splitlines(keepends=True) if not ln.startswith("iperf3: interrupt")]
    text = "".join(lines)
    if "Connecting to host" in text and SEPARATOR in text:
        text = text[:text.rindex(SEPARATOR)]
        # the last, shorter interval is printed on Ctrl-C only
        lines = text.splitlines(keepends=True)
        spans = [(k, float(m[2]) - float(m[1])) for k, ln in enumerate(lines)
                 if (m := _INTERVAL_LINE.match(ln))]
        if spans:
            nominal = spans[0][1]
            cut = [k for k, span in spans if span < nominal - 1e-9 and k >= spans[0][0]]
            lines = [ln for k, ln in enumerate(lines) if k not in cut]
        text = "".join(lines)
    return text
