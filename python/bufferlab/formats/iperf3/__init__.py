"""iperf3 output: client/server ``-J`` JSON and human-readable text.

One module per part, as iperf3 splits its sources: common.py (templates, units, interval
arithmetic), control.py (what the control exchange decides), client.py and server.py (each
side's document and text), udp.py and tcp.py / tcp_server.py (each protocol's streams and
summaries). This package exports what the rest of bufferlab uses.

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

from .client import client_json, client_text, goodput_bps, receiver_totals
from .common import (
    SEPARATOR,
    UDP_SOCKBUF,
    float32,
    printed_before,
    tcp_receiver_line,
    tcp_sender_interval_line,
    tcp_sender_summary_line,
    udp_line,
    udp_sender_interval_line,
    unit_snprintf,
)
from .server import server_json, server_text

__all__ = [
    "client_json",
    "client_text",
    "server_json",
    "server_text",
    "unit_snprintf",
    "float32",
    "printed_before",
    "tcp_sender_interval_line",
    "tcp_sender_summary_line",
    "tcp_receiver_line",
    "udp_sender_interval_line",
    "udp_line",
    "SEPARATOR",
    "UDP_SOCKBUF",
    "goodput_bps",
    "receiver_totals",
]
