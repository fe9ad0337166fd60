"""netperf 2.7 output (docs/semantics/formats.md §12).

What the text follows, read in netperf's sources (HewlettPackard/netperf; nothing copied):

* ``src/netlib.c`` ``demo_interval_display`` -- a demo-mode (``-D``) interim result: in
  keyval mode (``-k``) four lines ``NETPERF_INTERIM_RESULT[i]=%.2f``, ``NETPERF_UNITS[i]=%s/s``,
  ``NETPERF_INTERVAL[i]=%.3f``, ``NETPERF_ENDING[i]=%ld.%.3ld`` (the wall clock at the end of the
  interval, seconds and milliseconds); in human mode one line ``Interim result: %7.2f %s/s over
  %.3f seconds ending at %ld.%.3ld``. ``demo_interval_tick`` with a negative ``-D`` interval
  (flent's ``-D -0.20``) is "always timestamp" mode: an interim result is printed at the first
  send or receive that completes at least one interval after the previous one, so intervals are
  a little longer than asked. ``calc_thruput_interval`` and ``format_units`` -- ``-f m`` is
  ``10^6bits`` (divisor 10⁶/8 bytes), ``-f g`` ``10^9bits``, ``-f k`` ``10^3bits``, ``-f M``
  ``MBytes`` (2²⁰), the default ``-f`` (none given) is ``10^6bits`` for stream tests.
* ``src/nettest_omni.c`` ``print_omni_keyword`` -- the final ``KEY=value`` lines for the
  ``-k`` output selectors, each with the format its ``set_output_elt`` gives it: THROUGHPUT
  ``%.2f``, ELAPSED_TIME ``%.2f``, TRANSPORT_MSS and the sizes and retransmissions ``%d``,
  byte counts ``%PRIu64``, socket TOS ``0x%.2x``, names ``%s``, THROUGHPUT_UNITS ``%s/s``,
  RT_LATENCY and TRANSACTION_RATE ``%.3f``, MEAN_LATENCY ``%.2f``.
* ``src/nettest_omni.c`` ``send_tcp_stream``, ``send_tcp_maerts``, ``send_tcp_rr``,
  ``send_udp_rr`` -- the "MIGRATED ... TEST" human reports (banner from ``nettest_bsd.c``
  ``print_top_test_header``; the destination's numeric address is printed empty when it
  does not fit netperf's 8-byte buffer, as in ``to 10.0.0.2 () port 0``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "UNITS",
    "NetperfResult",
    "interim_keyval",
    "interim_human",
    "final_keyval",
    "human_report",
    "OUTPUT_VARS",
    "banner",
    "throughput",
]

#: ``-f`` letter -> (unit name, divisor in bytes); ``x`` = transactions
UNITS: dict[str, tuple[str, float]] = {
    "k": ("10^3bits", 1000.0 / 8),
    "m": ("10^6bits", 1e6 / 8),
    "g": ("10^9bits", 1e9 / 8),
    "K": ("KBytes", 1024.0),
    "M": ("MBytes", 1024.0**2),
    "G": ("GBytes", 1024.0**3),
    "b": ("10^0bits", 1.0),
    "B": ("Bytes", 1.0),
    "x": ("Trans", 1.0),
}


def throughput(units: float, elapsed_s: float, fmt: str) -> float:
    """netperf's ``calc_thruput_interval``: units (bytes, or transactions for ``x``) per second in
    the ``-f`` unit; the bit units count bytes × 8."""
    if elapsed_s <= 0:
        return 0.0
    if fmt == "x":
        return units / elapsed_s
    return units / UNITS[fmt][1] / elapsed_s


def _ending(epoch_s: float) -> str:
    """``%ld.%.3ld`` of (tv_sec, tv_usec/1000): seconds and truncated milliseconds."""
    us = int(round(epoch_s * 1e6))
    return f"{us // 1_000_000}.{(us % 1_000_000) // 1000:03d}"


def interim_keyval(count: int, value: float, fmt: str, interval_s: float, ending_epoch_s: float) -> str:
    unit = UNITS[fmt][0]
    return (
        f"NETPERF_INTERIM_RESULT[{count}]={value:.2f}\n"
        f"NETPERF_UNITS[{count}]={unit}/s\n"
        f"NETPERF_INTERVAL[{count}]={interval_s:.3f}\n"
        f"NETPERF_ENDING[{count}]={_ending(ending_epoch_s)}\n"
    )


def interim_human(value: float, fmt: str, interval_s: float, ending_epoch_s: float) -> str:
    return (
        f"Interim result: {value:7.2f} {UNITS[fmt][0]}/s over {interval_s:.3f} seconds "
        f"ending at {_ending(ending_epoch_s)}\n"
    )


@dataclass
class NetperfResult:
    """What a finished test reports (both ends' view)."""

    test: str  # TCP_STREAM, TCP_MAERTS, TCP_RR, UDP_RR
    fmt: str  # -f letter (x for transaction rates)
    elapsed_s: float
    throughput: float  # in the -f unit (or transactions/s)
    protocol: str  # TCP / UDP
    direction: str  # Send / Receive / Send|Recv
    local_send_size: int
    local_recv_size: int
    remote_send_size: int
    remote_recv_size: int
    local_bytes_sent: int
    local_bytes_recvd: int
    remote_bytes_sent: int
    remote_bytes_recvd: int
    lss_size: int  # local socket send buffer
    lsr_size: int
    rss_size: int
    rsr_size: int
    request_size: int = 1
    response_size: int = 1
    transport_mss: int = -1
    local_retrans: int = -1
    remote_retrans: int = -1
    local_tos: int = 0
    remote_tos: int = 0
    local_cc: str = ""
    remote_cc: str = ""
    rt_latency_us: float = 0.0
    transaction_rate: float = 0.0
    mean_latency_us: float = 0.0
    min_latency_us: int = 0
    max_latency_us: int = 0


def _u(v: int) -> str:
    return str(v if v >= 0 else v & 0xFFFFFFFFFFFFFFFF)


#: the ``-k`` output selectors bufferlab prints, with netperf's format for each
OUTPUT_VARS = {
    "THROUGHPUT": lambda r: f"{r.throughput:.2f}",
    "THROUGHPUT_UNITS": lambda r: f"{UNITS[r.fmt][0]}/s",
    "ELAPSED_TIME": lambda r: f"{r.elapsed_s:.2f}",
    "PROTOCOL": lambda r: r.protocol,
    "DIRECTION": lambda r: r.direction,
    "LOCAL_CONG_CONTROL": lambda r: r.local_cc,
    "REMOTE_CONG_CONTROL": lambda r: r.remote_cc,
    "TRANSPORT_MSS": lambda r: f"{r.transport_mss}",
    "LOCAL_TRANSPORT_RETRANS": lambda r: f"{r.local_retrans}",
    "REMOTE_TRANSPORT_RETRANS": lambda r: f"{r.remote_retrans}",
    "LOCAL_SOCKET_TOS": lambda r: f"0x{r.local_tos:02x}",
    "REMOTE_SOCKET_TOS": lambda r: f"0x{r.remote_tos:02x}",
    "LOCAL_SEND_SIZE": lambda r: f"{r.local_send_size}",
    "LOCAL_RECV_SIZE": lambda r: f"{r.local_recv_size}",
    "REMOTE_SEND_SIZE": lambda r: f"{r.remote_send_size}",
    "REMOTE_RECV_SIZE": lambda r: f"{r.remote_recv_size}",
    "LOCAL_BYTES_SENT": lambda r: _u(r.local_bytes_sent),
    "LOCAL_BYTES_RECVD": lambda r: _u(r.local_bytes_recvd),
    "REMOTE_BYTES_SENT": lambda r: _u(r.remote_bytes_sent),
    "REMOTE_BYTES_RECVD": lambda r: _u(r.remote_bytes_recvd),
    "LSS_SIZE": lambda r: f"{r.lss_size}",
    "LSR_SIZE": lambda r: f"{r.lsr_size}",
    "RSS_SIZE": lambda r: f"{r.rss_size}",
    "RSR_SIZE": lambda r: f"{r.rsr_size}",
    "REQUEST_SIZE": lambda r: f"{r.request_size}",
    "RESPONSE_SIZE": lambda r: f"{r.response_size}",
    "RT_LATENCY": lambda r: f"{r.rt_latency_us:.3f}",
    "TRANSACTION_RATE": lambda r: f"{r.transaction_rate:.3f}",
    "MEAN_LATENCY": lambda r: f"{r.mean_latency_us:.2f}",
    "MIN_LATENCY": lambda r: f"{r.min_latency_us}",
    "MAX_LATENCY": lambda r: f"{r.max_latency_us}",
}


def final_keyval(result: NetperfResult, selectors: list[str]) -> str:
    """``print_omni_keyword``: one ``NAME=value`` line per selector, in the order given."""
    return "".join(f"{name}={OUTPUT_VARS[name](result)}\n" for name in selectors)


_TITLES = {
    "TCP_STREAM": "MIGRATED TCP STREAM TEST",
    "TCP_MAERTS": "MIGRATED TCP MAERTS TEST",
    "TCP_RR": "MIGRATED TCP REQUEST/RESPONSE TEST",
    "UDP_RR": "MIGRATED UDP REQUEST/RESPONSE TEST",
}


def banner(test: str, host: str, address: str, demo: bool = True) -> str:
    """``print_top_test_header``: netperf prints the numeric address through an 8-byte buffer,
    so an address of 8 characters or more comes out empty (``to 10.0.0.2 () port 0``)."""
    shown = address if len(address) < 8 else ""
    extra = " : demo" if demo else ""
    if test in ("TCP_RR", "UDP_RR"):
        extra += " : first burst 0"
    return (
        f"{_TITLES[test]} from 0.0.0.0 (0.0.0.0) port 0 AF_INET to {host} ({shown}) port 0 AF_INET{extra}\n"
    )


def human_report(result: NetperfResult, headers: bool = True) -> str:
    """The legacy report after the banner (verbosity 1; ``-P 0`` leaves the titles out)."""
    unit = UNITS[result.fmt][0]
    if result.test in ("TCP_STREAM", "TCP_MAERTS"):
        title = (
            "Recv   Send    Send                          \n"
            "Socket Socket  Message  Elapsed              \n"
            "Size   Size    Size     Time     Throughput  \n"
            f"bytes  bytes   bytes    secs.    {unit}/sec  \n\n"
        )
        if result.test == "TCP_STREAM":
            sizes = (result.rsr_size, result.lss_size, result.local_send_size)
        else:
            sizes = (result.lsr_size, result.rss_size, result.remote_send_size)
        line = f"{sizes[0]:6d} {sizes[1]:6d} {sizes[2]:6d}    {result.elapsed_s:<6.2f}   "
        line += f"{result.throughput:7.2f}   \n"
        return (title if headers else "") + line
    if result.fmt == "x":
        title = (
            "Local /Remote\n"
            "Socket Size   Request  Resp.   Elapsed  Trans.\n"
            "Send   Recv   Size     Size    Time     Rate         \n"
            "bytes  Bytes  bytes    bytes   secs.    per sec   \n\n"
        )
    else:
        title = (
            "Local /Remote\n"
            "Socket Size   Request  Resp.   Elapsed  \n"
            "Send   Recv   Size     Size    Time     Throughput \n"
            f"bytes  Bytes  bytes    bytes   secs.    {unit}/sec   \n\n"
        )
    line1 = (
        f"{result.lss_size:<6d} {result.lsr_size:<6d} {result.request_size:<6d}   "
        f"{result.response_size:<6d}  {result.elapsed_s:<6.2f}   {result.throughput:7.2f}   \n"
    )
    line2 = f"{result.rss_size:<6d} {result.rsr_size:<6d}\n"
    return (title if headers else "") + line1 + line2
