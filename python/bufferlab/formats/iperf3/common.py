"""The pieces every iperf3 output shares: iperf_locale.c's report templates, units.c's
``unit_snprintf``, the interval arithmetic (``iperf_time``, float32 durations), the version
switches of the profile, and the printer that prefixes ``-T`` titles."""

from __future__ import annotations

import re
import struct
import time
from dataclasses import dataclass
from typing import Any

#: SO_SNDBUF/SO_RCVBUF of a fresh UDP socket on Linux (net.core.[rw]mem_default)
UDP_SOCKBUF = 212992


BANNER = "-----------------------------------------------------------\n"  # 59 dashes


SEPARATOR = "- - - - - - - - - - - - - - - - - - - - - - - - -\n"


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
