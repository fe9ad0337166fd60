"""iperf 2.0.13's text and CSV (``-y C``) reports, from the engine's iperf3 results.

Layouts follow iperf 2.0.13 ``src/Locale.c`` (the "legacy" reports, no ``-e``)
and ``src/ReportDefault.c``/``src/ReportCSV.c``:

* the settings block between 60-dash separator lines, ``TCP window size``
  from ``getsockopt`` (a server's SO_RCVBUF, a client's SO_SNDBUF once
  connected) with ``(default)`` or ``(WARNING: requested …)``;
* ``[%3d] local A port P connected with B port Q`` per connection; transfer
  ids are socket descriptors: 3, 4, … on a client, 4, 5, … on a server (the
  listening socket is 3);
* ``report_bw_format`` ``[%3d] %4.1f-%4.1f sec  %ss  %ss/sec``, the UDP
  jitter/loss form with ``%6.3f ms %4d/%5d (%.2g%%)``, ``[SUM]`` lines for
  ``-P``; the column header is printed once per process (a static flag in
  ReportDefault.c), which is why a UDP client's server report has none;
* CSV: ``YYYYMMDDHHMMSS,local,port,remote,port,id,%.1f-%.1f,bytes,bits/s``
  (UDP receiver reports add jitter ms, lost, total, loss %, out-of-order);
  the settings and connection lines are not printed.

Numbers use ``byte_snprintf`` (src/stdio.c), the same rule as iperf3's
``unit_snprintf`` (re-used from formats/iperf3/). The timestamp is the
simulated wall clock (the profile's epoch, UTC).
"""

from __future__ import annotations

import re
import time
from typing import Any

from ..commands.iperf2 import IperfClient, IperfServer
from .iperf3 import unit_snprintf

__all__ = ["server_header", "server_text", "client_buffer", "client_text", "mininet_rates", "csv_rate",
           "window_line"]

SEPARATOR = "-" * 60 + "\n"
HEADER_BW = "[ ID] Interval       Transfer     Bandwidth\n"
HEADER_JITTER = "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams\n"
#: SO_RCVBUF/SO_SNDBUF of a fresh UDP socket (net.core.rmem_default)
UDP_SOCKBUF = 212992


def connected_sndbuf(max_tcp_header: int) -> int:
    """A TCP socket's send buffer once connected (net/ipv4/tcp_input.c ``tcp_sndbuf_expand``):
    2 x TCP_INIT_CWND (10) x per-segment truesize for a 1460-byte MSS,
    roundup_pow_of_two(1460 + MAX_TCP_HEADER + skb_shared_info 320) + sk_buff 256
    (4352 bytes with the distribution kernels' MAX_TCP_HEADER 320, 2304 with 192 or 256)."""
    head = 1460 + max_tcp_header + 320
    return 2 * 10 * ((1 << (head - 1).bit_length()) + 256)

CLIENT_FIRST_ID = 3
SERVER_FIRST_ID = 4
NS = 1_000_000_000


def window_line(udp: bool, actual: int, requested: int | None) -> str:
    """The settings block's buffer line (``reporter_reportsettings``)."""
    text = "%s: %s" % ("UDP buffer size" if udp else "TCP window size", unit_snprintf(actual, "A"))
    if not requested:
        return text + " (default)\n"
    if actual != requested:
        return text + " (WARNING: requested %s)\n" % unit_snprintf(requested, "A")
    return text + "\n"


def client_buffer(cmd: IperfClient, wmem: tuple[int, int, int], wmem_max: int, max_tcp_header: int) -> int:
    """What the client's settings block shows: ``getsockopt(SO_SNDBUF)`` once
    connected. Linux doubles a ``-w`` request capped at net.core.wmem_max
    (net/core/sock.c); otherwise a TCP socket has grown from tcp_wmem[1] to
    :func:`connected_sndbuf` (capped at tcp_wmem[2]), a UDP one has the default."""
    if cmd.window:
        return 2 * min(cmd.window, wmem_max)
    if cmd.udp:
        return UDP_SOCKBUF
    return max(wmem[1], min(connected_sndbuf(max_tcp_header), wmem[2]))


def server_header(cmd: IperfServer, actual_buffer: int) -> str:
    """What ``iperf -s`` prints when it starts (nothing with ``-y C``)."""
    if cmd.csv:
        return ""
    proto = "UDP" if cmd.udp else "TCP"
    lines = [SEPARATOR, "Server listening on %s port %d\n" % (proto, cmd.port)]
    if cmd.udp:
        lines.append("Receiving %d byte datagrams\n" % 1470)
    lines += [window_line(cmd.udp, actual_buffer, cmd.window), SEPARATOR]
    return "".join(lines)


def _connected(local: str, lport: int, remote: str, rport: int, sock: int) -> str:
    return "[%3d] local %s port %d connected with %s port %d\n" % (sock, local, lport, remote, rport)


def _bw_line(sock: int | None, st: float, et: float, nbytes: int) -> str:
    prefix = "[SUM] " if sock is None else "[%3d] " % sock
    rate = nbytes / (et - st) if et > st else 0.0
    return prefix + "%4.1f-%4.1f sec  %ss  %ss/sec\n" % (
        st, et, unit_snprintf(nbytes, "A"), unit_snprintf(rate, "a"))


def _jitter_line(sock: int, st: float, et: float, nbytes: int, jitter_s: float, lost: int, total: int) -> str:
    rate = nbytes / (et - st) if et > st else 0.0
    percent = 100.0 * lost / total if total else 0.0
    return "[%3d] %4.1f-%4.1f sec  %ss  %ss/sec  %6.3f ms %4d/%5d (%.2g%%)\n" % (
        sock, st, et, unit_snprintf(nbytes, "A"), unit_snprintf(rate, "a"),
        jitter_s * 1000.0, lost, total, percent)


class _Csv:
    """``-y C`` lines of one connection (ReportCSV.c)."""

    def __init__(self, epoch: int, local: str, lport: int, remote: str, rport: int, sock: int) -> None:
        self.epoch = epoch
        self.head = "%s,%d,%s,%d,%d" % (local, lport, remote, rport, sock)

    def line(self, at_ns: int, st: float, et: float, nbytes: int, udp: dict[str, Any] | None = None) -> str:
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(self.epoch + at_ns // NS))
        bps = int(nbytes * 8 / (et - st)) if et > st else 0
        text = "%s,%s,%.1f-%.1f,%d,%d" % (stamp, self.head, st, et, nbytes, bps)
        if udp is not None:
            total = int(udp["packets"])
            lost = int(udp["lost"])
            text += ",%.3f,%d,%d,%.3f,%d" % (
                float(udp["jitter_s"]) * 1000.0, lost, total,
                100.0 * lost / total if total else 0.0, int(udp["out_of_order"]))
        return text + "\n"


def _secs(ns: int, base: int) -> float:
    return (int(ns) - base) / NS


def _full_intervals(intervals: list[dict[str, Any]], interval_s: float) -> list[dict[str, Any]]:
    """Interval records iperf 2 would print: whole intervals only (iperf 2
    reports when a boundary passes; the tail goes only into the total)."""
    if interval_s <= 0:
        return []
    need = interval_s * NS * 0.99
    return [iv for iv in intervals if int(iv["end_ns"]) - int(iv["start_ns"]) >= need]


class _Printer:
    """Collects one process's output with iperf 2's once-per-process header."""

    def __init__(self, csv: bool, epoch: int) -> None:
        self.csv = csv
        self.epoch = epoch
        self.out: list[str] = []
        self.header_done = False

    def header(self, text: str) -> None:
        if not self.csv and not self.header_done:
            self.out.append(text)
            self.header_done = True

    def text(self, line: str) -> None:
        if not self.csv:
            self.out.append(line)


def server_text(result: dict[str, Any], cmd: IperfServer, epoch: int) -> str:
    """Everything after the settings block: each accepted connection's reports."""
    p = _Printer(cmd.csv, epoch)
    sock = SERVER_FIRST_ID
    for test in result.get("tests", []):
        if test.get("protocol") == "udp":
            _server_udp(p, test, cmd, sock)
            sock += 1
            continue
        for stream in test.get("streams", []):
            total = stream.get("total")
            if not total:
                continue
            args = (test["local_ip"], cmd.port, test["client_ip"], int(stream["client_data_port"]), sock)
            p.text(_connected(*args))
            p.header(HEADER_BW)
            csv = _Csv(epoch, *args)
            base = int(total["start_ns"])
            for iv in _full_intervals(stream.get("intervals", []), cmd.interval_s):
                st, et = _secs(iv["start_ns"], base), _secs(iv["end_ns"], base)
                p.text(_bw_line(sock, st, et, int(iv["bytes"])))
                if cmd.csv:
                    p.out.append(csv.line(int(iv["end_ns"]), st, et, int(iv["bytes"])))
            et = _secs(total["end_ns"], base)
            p.text(_bw_line(sock, 0.0, et, int(total["bytes"])))
            if cmd.csv:
                p.out.append(csv.line(int(total["end_ns"]), 0.0, et, int(total["bytes"])))
            sock += 1
    return "".join(p.out)


def _server_udp(p: _Printer, test: dict[str, Any], cmd: IperfServer, sock: int) -> None:
    total = test.get("total")
    if not total:
        return
    args = (test["local_ip"], cmd.port, test["client_ip"], int(test["client_data_port"]), sock)
    p.text(_connected(*args))
    p.header(HEADER_JITTER)
    csv = _Csv(p.epoch, *args)
    base = int(test.get("start_ns") or total.get("start_ns", 0))
    for iv in _full_intervals(test.get("intervals", []), cmd.interval_s):
        st, et = _secs(iv["start_ns"], base), _secs(iv["end_ns"], base)
        p.text(_jitter_line(sock, st, et, int(iv["bytes"]), float(iv["jitter_s"]), int(iv["lost"]),
                            int(iv["packets"])))
        if cmd.csv:
            p.out.append(csv.line(int(iv["end_ns"]), st, et, int(iv["bytes"]), iv))
    et = _secs(total["end_ns"], base)
    p.text(_jitter_line(sock, 0.0, et, int(total["bytes"]), float(total["jitter_s"]), int(total["lost"]),
                        int(total["packets"])))
    if int(total.get("out_of_order", 0)):
        p.text("[%3d] %4.1f-%4.1f sec  %d datagrams received out-of-order\n"
               % (sock, 0.0, et, int(total["out_of_order"])))
    if cmd.csv:
        p.out.append(csv.line(int(total["end_ns"]), 0.0, et, int(total["bytes"]), total))


def client_text(result: dict[str, Any], cmd: IperfClient, epoch: int, buffer: int) -> tuple[str, str]:
    """(stdout, stderr) of ``iperf -c``; ``buffer``: :func:`client_buffer`."""
    if result.get("error"):
        return "", "connect failed: %s\n" % _errno_text(str(result["error"]))
    p = _Printer(cmd.csv, epoch)
    proto = "UDP" if cmd.udp else "TCP"
    p.text(SEPARATOR)
    p.text("Client connecting to %s, %s port %d\n" % (cmd.host, proto, cmd.port))
    if cmd.udp:
        p.text("Sending %d byte datagrams, IPG target: %.2f us (kalman adjust)\n"
               % (cmd.length, cmd.length * 8 / cmd.rate_bps * 1e6))
    p.text(window_line(cmd.udp, buffer, cmd.window))
    p.text(SEPARATOR)
    if cmd.udp:
        _client_udp(p, result, cmd)
    else:
        _client_tcp(p, result, cmd)
    return "".join(p.out), ""


def _errno_text(error: str) -> str:
    """iperf3's ``unable to connect to server: X`` reduced to the errno text X."""
    return error.rsplit(": ", 1)[-1]


def _client_tcp(p: _Printer, result: dict[str, Any], cmd: IperfClient) -> None:
    streams = result.get("streams", [])
    socks = list(range(CLIENT_FIRST_ID, CLIENT_FIRST_ID + len(streams)))
    csvs = []
    for sock, stream in zip(socks, streams, strict=True):
        args = (result["local_ip"], int(stream["local_port"]), result["remote_ip"],
                int(result["remote_port"]), sock)
        p.text(_connected(*args))
        csvs.append(_Csv(p.epoch, *args))
    p.header(HEADER_BW)
    base = int(result["start_ns"])
    rows = [_full_intervals(s.get("intervals", []), cmd.interval_s) for s in streams]
    for k in range(min((len(r) for r in rows), default=0)):
        for sock, csv, r in zip(socks, csvs, rows, strict=True):
            iv = r[k]
            st, et = _secs(iv["start_ns"], base), _secs(iv["end_ns"], base)
            p.text(_bw_line(sock, st, et, int(iv["bytes"])))
            if p.csv:
                p.out.append(csv.line(int(iv["end_ns"]), st, et, int(iv["bytes"])))
        if len(streams) > 1:
            st, et = _secs(rows[0][k]["start_ns"], base), _secs(rows[0][k]["end_ns"], base)
            nbytes = sum(int(r[k]["bytes"]) for r in rows)
            p.text(_bw_line(None, st, et, nbytes))
            if p.csv:
                p.out.append(_sum_csv(p.epoch, result, csvs, int(rows[0][k]["end_ns"]), st, et, nbytes))
    end_ns = max((int(s["sender"]["end_ns"]) for s in streams), default=base)
    for sock, csv, stream in zip(socks, csvs, streams, strict=True):
        sender = stream["sender"]
        et = _secs(sender["end_ns"], base)
        p.text(_bw_line(sock, 0.0, et, int(sender["bytes"])))
        if p.csv:
            p.out.append(csv.line(int(sender["end_ns"]), 0.0, et, int(sender["bytes"])))
    if len(streams) > 1:
        nbytes = sum(int(s["sender"]["bytes"]) for s in streams)
        et = _secs(end_ns, base)
        p.text(_bw_line(None, 0.0, et, nbytes))
        if p.csv:
            p.out.append(_sum_csv(p.epoch, result, csvs, end_ns, 0.0, et, nbytes))


def _sum_csv(epoch: int, result: dict[str, Any], csvs: list[_Csv], at_ns: int, st: float, et: float,
             nbytes: int) -> str:
    """A ``[SUM]`` row in CSV: local port 0 and transfer id -1 (ReportCSV.c)."""
    total = _Csv(epoch, result["local_ip"], 0, result["remote_ip"], 0, -1)
    return total.line(at_ns, st, et, nbytes)


def _client_udp(p: _Printer, result: dict[str, Any], cmd: IperfClient) -> None:
    sock = CLIENT_FIRST_ID
    args = (result["local_ip"], int(result["local_port"]), result["remote_ip"], int(result["remote_port"]),
            sock)
    p.text(_connected(*args))
    p.header(HEADER_BW)
    csv = _Csv(p.epoch, *args)
    base = int(result["start_ns"])
    for iv in _full_intervals(result.get("intervals", []), cmd.interval_s):
        st, et = _secs(iv["start_ns"], base), _secs(iv["end_ns"], base)
        p.text(_bw_line(sock, st, et, int(iv["bytes"])))
        if p.csv:
            p.out.append(csv.line(int(iv["end_ns"]), st, et, int(iv["bytes"])))
    sender = result["sender"]
    et = _secs(sender["end_ns"], base)
    p.text(_bw_line(sock, 0.0, et, int(sender["bytes"])))
    if p.csv:
        p.out.append(csv.line(int(sender["end_ns"]), 0.0, et, int(sender["bytes"])))
    p.text("[%3d] Sent %d datagrams\n" % (sock, int(sender["packets"])))
    receiver = result.get("receiver")
    if not receiver:
        p.text("[%3d] WARNING: did not receive ack of last datagram after 10 tries.\n" % sock)
        return
    p.text("[%3d] Server Report:\n" % sock)
    rbase = int(receiver["start_ns"])
    ret = _secs(receiver["end_ns"], rbase)
    p.text(_jitter_line(sock, 0.0, ret, int(receiver["bytes"]), float(receiver["jitter_s"]),
                        int(receiver["lost"]), int(receiver["packets"])))
    if int(receiver.get("out_of_order", 0)):
        p.text("[%3d] %4.1f-%4.1f sec  %d datagrams received out-of-order\n"
               % (sock, 0.0, ret, int(receiver["out_of_order"])))
    if p.csv:
        p.out.append(csv.line(int(receiver["end_ns"]), 0.0, ret, int(receiver["bytes"]), receiver))


_RATE = re.compile(r"([\d\.]+ \w+/sec)")


def mininet_rates(server_text: str, client_text: str) -> list[str]:
    """What Mininet's ``net.iperf()`` returns for a TCP test: ``[server rate,
    client rate]``, each the last ``NUMBER UNIT/sec`` of that side's output
    (mininet/net.py ``_parseIperf``; an output without one gives ``''``).
    For ``l4Type='UDP'`` Mininet puts the requested ``udpBw`` string first."""
    return [_last_rate(server_text), _last_rate(client_text)]


def csv_rate(text: str) -> int | None:
    """The rate in bits/s of the last report line of an ``-y C`` output: its ninth field (a UDP
    report adds jitter and loss after it), as mininet/net.py ``_iperfVals`` reads it; None if
    there is no report line."""
    rate = None
    for line in text.strip().splitlines():
        fields = line.split(",")
        if len(fields) >= 9 and fields[8].strip().isdigit():
            rate = int(fields[8])
    return rate


def _last_rate(text: str) -> str:
    found = _RATE.findall(text)
    return found[-1] if found else ""
