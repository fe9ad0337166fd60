"""The server's output (``iperf3 -s``): banner, per-test text and ``-J`` JSON; UDP tests
here and in udp.py, TCP tests in tcp_server.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import cjson
from .common import (
    BANNER,
    REPORT_ACCEPTED,
    REPORT_CONNECTED,
    UDP_SOCKBUF,
    _bw,
    _check_protocol,
    _cpu,
    _headers,
    _intervals,
    _on_connect_rate,
    _parameters_rate,
    _Printer,
    _ratio,
    _sender_flag,
    _timestamp,
    _version_string,
)
from .control import _error_document, _server_interval_s, _test_start
from .tcp import _JsonObject
from .tcp_server import _server_tcp_stream_ids, _tcp_server_document, _tcp_server_test_text
from .udp import _server_summary, _udp_end, _udp_server_test_text


def _banner(p: Callable[[str], None], result: dict[str, Any], test_no: int, profile: Any) -> None:
    port = int(result["port"])
    p(BANNER)
    if tuple(profile.iperf3_version) >= (3, 16):
        p("Server listening on %d (test #%d)\n" % (port, test_no))
    else:
        p("Server listening on %d\n" % port)
    p(BANNER)


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
