"""iperf3 output: client/server ``-J`` JSON and human-readable text.

Reproduces, for the engine results of docs/internals.md (``iperf3_client``,
``iperf3_server``), what iperf3 prints (formats.md §1; reference layout 3.7,
version switches via ``Profile.iperf3_version``):

* ``src/iperf_api.c`` — ``iperf_print_intermediate`` (per-interval JSON
  objects and text lines, the "short final interval with no data" rule),
  ``print_interval_results`` (header before the first interval),
  ``iperf_print_results`` (UDP summary: the single ``udp`` JSON object, the
  ``sender``/``receiver`` text lines, ``end.sum``, the out-of-order line),
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

Timing model (formats.md §1.2/§1.3): every engine instant (integer ns) is
truncated to µs as ``clock_gettime`` → ``iperf_time`` would, differences are
taken in integer µs and converted with ``secs + usecs / 1000000.0``; the
interval ``seconds`` is that value stored in a float32; ``bits_per_second``
= ``bytes / seconds * 8`` evaluated in that order in double precision.

Not modelled: CPU use — every ``cpu_utilization_percent`` member is 0 unless
the engine result carries a ``cpu_utilization_percent`` object (the six
iperf3 keys), which is then copied (used by the conformance test to replay
the formats.md §1.7 example). TCP documents and ``--bidir``/``-R`` are not
built yet (``ValueError``); the generic line helpers below already cover
the TCP text layouts. iperf3 3.0.x is only honoured for the header word
``Bandwidth`` (its UDP summary layout and 8192-byte defaults are not).

Engine keys used beyond docs/internals.md: ``test_start_ns`` (the stream's
first ``start_time``; ``start_ns`` is then the post-omit one), client
``interrupted`` (Ctrl-C); optional: ``omit_end_ns`` (when ``test_start_ns``
is absent), ``connect_ns`` (the ``timestamp`` instant), server
``interval_ns`` and ``one_off``, and per server test ``cookie``, ``params``
(the client's test parameters: ``num_streams``, ``blksize``, ``omit``,
``duration``, ``bytes``, ``blocks``, ``tos``, ``rate``) and ``peer`` (the
client's sender totals as received in the results exchange: ``bytes``,
``packets``, ``start_ns``, ``end_ns``). Without ``peer`` the server falls
back as iperf3 does when no results were exchanged (sender_time =
receiver_time, 0 bytes sent). A server test with ``total: null`` (cut by
Ctrl-C) is summarised from its post-omit intervals.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import cjson

__all__ = [
    "CmdInfo",
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
]

#: SO_SNDBUF/SO_RCVBUF of a fresh UDP socket on Linux (net.core.[rw]mem_default)
UDP_SOCKBUF = 212992
BANNER = "-----------------------------------------------------------\n"  # 59 dashes
SEPARATOR = "- - - - - - - - - - - - - - - - - - - - - - - - -\n"

# --- report templates (iperf_locale.c, 3.7; C printf layouts) ---------------
REPORT_CONNECTING = "Connecting to host %s, port %d\n"
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
REPORT_SUM_BW_UDP = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec  %5.3f ms  %d/%d (%.2g%%)  %s\n"
REPORT_SUM_BW_UDP_SENDER = "[SUM]%s %6.2f-%-6.2f sec  %ss  %ss/sec %s %d  %s\n"
REPORT_SUM_OUTOFORDER = "[SUM]%s %4.1f-%4.1f sec  %d datagrams received out-of-order\n"
REPORT_OMITTED = "(omitted)"

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class CmdInfo:
    """What the client command line said (only what the output echoes).

    host        -c argument exactly as typed (``connecting_to.host``, text header)
    port        -p (default 5201)
    protocol    "udp" (-u); "tcp" is rejected until the TCP results exist
    duration_s  -t, whole seconds (``test_start.duration``)
    omit_s      -O, whole seconds (``test_start.omit``)
    blksize     -l or the default (1448 = control MSS for UDP on Mininet)
    tos         -S value as a decimal byte (``test_start.tos``)
    title       -T string or None (prefix ``title:  `` on every text line,
                top-level ``title`` key in JSON)
    num_streams -P (only 1 is supported by the engine results)
    bytes       -n target in bytes (0 = time based)
    blocks      -k target (0)
    rate        -b in bit/s (``target_bitrate``, 3.12+)
    interval_s  -i (the stats interval; used by the short-final-interval rule)
    """

    host: str
    port: int = 5201
    protocol: str = "udp"
    duration_s: int = 10
    omit_s: int = 0
    blksize: int = 1448
    tos: int = 0
    title: str | None = None
    num_streams: int = 1
    bytes: int = 0
    blocks: int = 0
    rate: int = 1048576
    interval_s: float = 1.0


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


# --- generic line helpers (also used for TCP, formats.md §11 item 2) ----------


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
    return tuple(profile.iperf3_version) >= (3, 12)


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


def _intervals(obj: dict[str, Any], interval_s: float) -> tuple[list[_Interval], int]:
    """Interval times as iperf3 computes them; drops short empty intervals.

    Omitted intervals are timed from the original ``start_time``, the others
    from the post-omit one (so they restart at 0.00). Returns the kept
    intervals and the µs instant of the post-omit ``start_time`` (the
    summary's time base).
    """
    s_us, base_us = _time_bases(obj)
    kept: list[_Interval] = []
    for iv in obj.get("intervals", []):
        ist, iet = _us(iv["start_ns"]), _us(iv["end_ns"])
        base = s_us if iv.get("omitted") else base_us
        length = _secs(ist, iet)
        # iperf_print_intermediate: keep if >= 10 % of the interval or any data
        if not (length >= interval_s * 0.10 or int(iv.get("bytes", 0)) > 0):
            continue
        kept.append(_Interval(_secs(base, ist), _secs(base, iet), float32(length),
                              ist == s_us, iv))
    return kept, base_us


def _check_udp(protocol: str) -> None:
    if str(protocol).lower() != "udp":
        raise ValueError(f"iperf3 formatter: protocol {protocol!r} is not supported yet (UDP only)")


# --- client ---------------------------------------------------------------------


@dataclass
class _ClientSummary:
    sock: int
    sender_time: float
    receiver_time: float
    bytes_sent: int
    bytes_received: int
    sender_packets: int
    receiver_packets: int
    lost: int
    out_of_order: int
    jitter: float  # seconds


def _client_summary(result: dict[str, Any], base_us: int, sock: int) -> _ClientSummary:
    sender = result.get("sender") or {}
    sender_time = _secs(base_us, _us(sender["end_ns"])) if sender.get("end_ns") is not None else 0.0
    recv = result.get("receiver")
    if recv:
        receiver_time = _secs(_us(recv["start_ns"]), _us(recv["end_ns"]))
    else:  # no results exchange (interrupted): iperf3 falls back to sender_time
        receiver_time = 0.0
    if receiver_time == 0.0:
        receiver_time = sender_time
    recv = recv or {}
    return _ClientSummary(
        sock=sock,
        sender_time=sender_time,
        receiver_time=receiver_time,
        bytes_sent=int(sender.get("bytes", 0)),
        bytes_received=int(recv.get("bytes", 0)),
        sender_packets=int(sender.get("packets", 0)),
        receiver_packets=int(recv.get("packets", 0)),
        lost=int(recv.get("lost", 0)),
        out_of_order=int(recv.get("out_of_order", 0)),
        jitter=float(recv.get("jitter_s", 0.0)),
    )


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
                nbytes: int, blocks: int, tos: int, rate: int, profile: Any) -> dict[str, Any]:
    ts: dict[str, Any] = {
        "protocol": protocol.upper(),
        "num_streams": int(num_streams),
        "blksize": int(blksize),
        "omit": int(omit),
        "duration": int(duration),
        "bytes": int(nbytes),
        "blocks": int(blocks),
        "reverse": 0,
        "tos": int(tos),
    }
    if _has_target_bitrate(profile):
        ts["target_bitrate"] = int(rate)
    return ts


def client_json(result: dict[str, Any], cmd_info: CmdInfo, profile: Any) -> str:
    """``iperf3 -c … -u -J`` document (formats.md §1.5/§1.7), with its newline."""
    if result.get("error"):
        return _error_document(profile, "error - " + str(result["error"]), cmd_info.title)
    _check_udp(cmd_info.protocol)
    sock = int(profile.iperf3_socket_base)
    kept, base_us = _intervals(result, cmd_info.interval_s)

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
        "connecting_to": {"host": cmd_info.host, "port": int(cmd_info.port)},
        "cookie": result["cookie"],
    }
    if _has_target_bitrate(profile):
        start["target_bitrate"] = int(cmd_info.rate)
    start["sock_bufsize"] = 0
    start["sndbuf_actual"] = UDP_SOCKBUF
    start["rcvbuf_actual"] = UDP_SOCKBUF
    start["test_start"] = _test_start("udp", cmd_info.num_streams, cmd_info.blksize, cmd_info.omit_s,
                                      cmd_info.duration_s, cmd_info.bytes, cmd_info.blocks,
                                      cmd_info.tos, cmd_info.rate, profile)

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

    s = _client_summary(result, base_us, sock)
    bw_sent = s.bytes_sent / s.sender_time if s.sender_time > 0.0 else 0.0
    packet_count = s.sender_packets or s.receiver_packets
    udp = {"socket": sock, "start": 0.0, "end": s.sender_time, "seconds": s.sender_time,
           "bytes": s.bytes_sent, "bits_per_second": bw_sent * 8, "jitter_ms": s.jitter * 1000.0,
           "lost_packets": s.lost, "packets": packet_count,
           "lost_percent": 100.0 * s.lost / s.sender_packets if s.sender_packets > 0 else 0.0,
           "out_of_order": s.out_of_order}
    total = {"start": 0.0, "end": s.receiver_time, "seconds": s.receiver_time,
             "bytes": s.bytes_sent, "bits_per_second": bw_sent * 8,
             "jitter_ms": s.jitter * 1000.0, "lost_packets": s.lost, "packets": packet_count,
             "lost_percent": 100.0 * s.lost / packet_count if packet_count > 0 else 0.0}
    end = {"streams": [{"udp": _sender_flag(udp, profile, True)}],
           "sum": _sender_flag(total, profile, True),
           "cpu_utilization_percent": _cpu(result)}

    doc: dict[str, Any] = {"start": start, "intervals": intervals, "end": end}
    if result.get("interrupted"):
        doc["error"] = "interrupt - the client has terminated"
    if cmd_info.title:
        doc["title"] = cmd_info.title
    return cjson.dumps(doc)


def client_text(result: dict[str, Any], cmd_info: CmdInfo, profile: Any) -> str:
    """Human-readable client output (formats.md §1.8), byte exact.

    On a failed test this is the one line iperf3 writes to stderr
    (``iperf3: error - …``); on Ctrl-C the summary is followed by
    ``iperf3: interrupt - the client has terminated`` (also stderr).
    """
    if result.get("error"):
        return f"iperf3: error - {result['error']}\n"
    _check_udp(cmd_info.protocol)
    heads = _headers(profile)
    p = _Printer(cmd_info.title)
    sock = int(profile.iperf3_socket_base)
    p(REPORT_CONNECTING % (cmd_info.host, int(cmd_info.port)))
    p(REPORT_CONNECTED % (sock, result["local_ip"], int(result["local_port"]),
                          result["remote_ip"], int(result["remote_port"])))
    kept, base_us = _intervals(result, cmd_info.interval_s)
    header_done = False
    for iv in kept:
        if iv.first and not header_done:
            p(heads["udp_sender"])
            header_done = True
        p(udp_sender_interval_line(sock, iv.st, iv.et, int(iv.raw["bytes"]), iv.seconds,
                                   int(iv.raw.get("packets", 0)),
                                   REPORT_OMITTED if iv.raw.get("omitted") else ""))

    s = _client_summary(result, base_us, sock)
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


@dataclass
class _ServerSummary:
    sender_time: float
    receiver_time: float
    bytes_sent: int       # the client's sent bytes (results exchange), else 0
    bytes_received: int
    sender_packets: int   # the client's datagram count, else 0
    receiver_packets: int
    lost: int
    out_of_order: int
    jitter: float


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


def _server_summary(test: dict[str, Any], base_us: int) -> _ServerSummary:
    total = test.get("total") or _derived_total(test)
    receiver_time = _secs(base_us, _us(total["end_ns"])) if total.get("end_ns") is not None else 0.0
    peer = test.get("peer")
    sender_time = _secs(_us(peer["start_ns"]), _us(peer["end_ns"])) if peer else 0.0
    if sender_time == 0.0:
        sender_time = receiver_time
    peer = peer or {}
    return _ServerSummary(
        sender_time=sender_time,
        receiver_time=receiver_time,
        bytes_sent=int(peer.get("bytes", 0)),
        bytes_received=int(total.get("bytes", 0)),
        sender_packets=int(peer.get("packets", 0)),
        receiver_packets=int(total.get("packets", 0)),
        lost=int(total.get("lost", 0)),
        out_of_order=int(total.get("out_of_order", 0)),
        jitter=float(total.get("jitter_s", 0.0)),
    )


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
        _check_udp(test.get("protocol", "udp"))
        cut = not test.get("complete", True) and result.get("interrupted")
        p(REPORT_ACCEPTED % (test["client_ip"], int(test["client_ctrl_port"])))
        if test.get("client_data_port") is not None:
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
        if cut:
            p.raw("iperf3: interrupt - the server has terminated\n")
            return p.text()
        if result.get("one_off"):
            return p.text()
        _banner(p, result, n + 1, profile)
    if result.get("interrupted"):
        p.raw("iperf3: interrupt - the server has terminated\n")
    return p.text()


def _server_document(result: dict[str, Any], test: dict[str, Any], profile: Any) -> dict[str, Any]:
    _check_udp(test.get("protocol", "udp"))
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
    start: dict[str, Any] = {
        "connected": connected,
        "version": _version_string(profile),
        "system_info": profile.system_info,
        "timestamp": _timestamp(profile, at_ns),
        "accepted_connection": {"host": test["client_ip"], "port": int(test["client_ctrl_port"])},
        "cookie": test.get("cookie", ""),
    }
    if _has_target_bitrate(profile):
        start["target_bitrate"] = int(params.get("rate", 1048576))
    start["sock_bufsize"] = 0
    start["sndbuf_actual"] = UDP_SOCKBUF
    start["rcvbuf_actual"] = UDP_SOCKBUF
    start["test_start"] = _test_start(
        "udp", params.get("num_streams", 1), params.get("blksize", 1448), params.get("omit", 0),
        params.get("duration", 10), params.get("bytes", 0), params.get("blocks", 0),
        params.get("tos", 0), params.get("rate", 1048576), profile)
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

    s = _server_summary(test, base_us)
    bw_sent = s.bytes_sent / s.sender_time if s.sender_time > 0.0 else 0.0
    packet_count = s.sender_packets or s.receiver_packets
    udp = {"socket": sock, "start": 0.0, "end": s.sender_time, "seconds": s.sender_time,
           "bytes": s.bytes_sent, "bits_per_second": bw_sent * 8, "jitter_ms": s.jitter * 1000.0,
           "lost_packets": s.lost, "packets": packet_count,
           "lost_percent": 100.0 * s.lost / s.sender_packets if s.sender_packets > 0 else 0.0,
           "out_of_order": s.out_of_order}
    total = {"start": 0.0, "end": s.receiver_time, "seconds": s.receiver_time,
             "bytes": s.bytes_sent, "bits_per_second": bw_sent * 8,
             "jitter_ms": s.jitter * 1000.0, "lost_packets": s.lost, "packets": packet_count,
             "lost_percent": 100.0 * s.lost / packet_count if packet_count > 0 else 0.0}
    end = {"streams": [{"udp": _sender_flag(udp, profile, False)}],
           "sum": _sender_flag(total, profile, False),
           "cpu_utilization_percent": _cpu(test)}
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
