"""Conformance tests of the output formatters (docs/semantics/formats.md §11 items 1-4).

Item 1: the §1.7 UDP example JSON and its ``-T Class2`` text, byte for byte,
from a hand-built engine result; item 2: the ``[ 15]`` TCP line; item 3:
ping lab/modern blocks; item 4: tc sizes, tbf lat/limit (docs/semantics/qdiscs.md E3-E6)
and the Lab 14/16/7 renderings of docs/semantics/formats.md §3.4; plus edge cases.

Run: PYTHONPATH=python python -m pytest tests/test_formats.py -q
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import sys
import types

import pytest

# The formatters are pure Python; the package __init__ may pull in the compiled
# engine (bufferlab._core). If that is not importable here, load the package as
# a bare namespace so bufferlab.formats.* and bufferlab.profile still resolve.
try:  # pragma: no cover - depends on the build state of the extension
    import bufferlab  # noqa: F401
except ImportError:  # pragma: no cover
    for _name in [m for m in sys.modules if m == "bufferlab" or m.startswith("bufferlab.")]:
        del sys.modules[_name]
    _pkg = types.ModuleType("bufferlab")
    _pkg.__path__ = [str(pathlib.Path(__file__).resolve().parents[1] / "python" / "bufferlab")]
    sys.modules["bufferlab"] = _pkg

from bufferlab.commands.iperf3 import Iperf3Client, parse_iperf3  # noqa: E402
from bufferlab.commands.shell import parse_shell  # noqa: E402
from bufferlab.commands.tc import tc_show_text, tc_util  # noqa: E402
from bufferlab.commands.tc.tbf import tbf_latency_us  # noqa: E402
from bufferlab.errors import Diagnostics  # noqa: E402
from bufferlab.formats import cjson, iperf3, ping, queue  # noqa: E402
from bufferlab.profile import PROFILES  # noqa: E402

LAB = PROFILES["lab2019"]
MODERN = PROFILES["modern"]
HANDOUT_UNAME = ("Linux admin-pc 5.3.0-46-generic #38~18.04.1-Ubuntu SMP Tue Mar 31 04:17:56 "
                 "UTC 2020 x86_64")
LAB_HANDOUT = dataclasses.replace(LAB, system_info=HANDOUT_UNAME)

EXPECTED_UDP_JSON = """\
{
\t"start":\t{
\t\t"connected":\t[{
\t\t\t\t"socket":\t5,
\t\t\t\t"local_host":\t"10.0.0.1",
\t\t\t\t"local_port":\t43222,
\t\t\t\t"remote_host":\t"10.0.0.2",
\t\t\t\t"remote_port":\t5010
\t\t\t}],
\t\t"version":\t"iperf 3.7",
\t\t"system_info":\t"@UNAME@",
\t\t"timestamp":\t{
\t\t\t"time":\t"Tue, 14 Apr 2020 18:10:05 GMT",
\t\t\t"timesecs":\t1586887805
\t\t},
\t\t"connecting_to":\t{
\t\t\t"host":\t"10.0.0.2",
\t\t\t"port":\t5010
\t\t},
\t\t"cookie":\t"b5n4ydqfx2rkq6rjgq3nqjkbwd7ewpq2svyl",
\t\t"sock_bufsize":\t0,
\t\t"sndbuf_actual":\t212992,
\t\t"rcvbuf_actual":\t212992,
\t\t"test_start":\t{
\t\t\t"protocol":\t"UDP",
\t\t\t"num_streams":\t1,
\t\t\t"blksize":\t1448,
\t\t\t"omit":\t0,
\t\t\t"duration":\t3,
\t\t\t"bytes":\t0,
\t\t\t"blocks":\t0,
\t\t\t"reverse":\t0,
\t\t\t"tos":\t50
\t\t}
\t},
\t"intervals":\t[{
\t\t\t"streams":\t[{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t0,
\t\t\t\t\t"end":\t1.000089,
\t\t\t\t\t"seconds":\t1.0000890493392944,
\t\t\t\t\t"bytes":\t112944,
\t\t\t\t\t"bits_per_second":\t903471.54645571683,
\t\t\t\t\t"packets":\t78,
\t\t\t\t\t"omitted":\tfalse,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}],
\t\t\t"sum":\t{
\t\t\t\t"start":\t0,
\t\t\t\t"end":\t1.000089,
\t\t\t\t"seconds":\t1.0000890493392944,
\t\t\t\t"bytes":\t112944,
\t\t\t\t"bits_per_second":\t903471.54645571683,
\t\t\t\t"packets":\t78,
\t\t\t\t"omitted":\tfalse,
\t\t\t\t"sender":\ttrue
\t\t\t}
\t\t}, {
\t\t\t"streams":\t[{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t1.000089,
\t\t\t\t\t"end":\t2.000102,
\t\t\t\t\t"seconds":\t1.000012993812561,
\t\t\t\t\t"bytes":\t112944,
\t\t\t\t\t"bits_per_second":\t903540.25956722582,
\t\t\t\t\t"packets":\t78,
\t\t\t\t\t"omitted":\tfalse,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}],
\t\t\t"sum":\t{
\t\t\t\t"start":\t1.000089,
\t\t\t\t"end":\t2.000102,
\t\t\t\t"seconds":\t1.000012993812561,
\t\t\t\t"bytes":\t112944,
\t\t\t\t"bits_per_second":\t903540.25956722582,
\t\t\t\t"packets":\t78,
\t\t\t\t"omitted":\tfalse,
\t\t\t\t"sender":\ttrue
\t\t\t}
\t\t}, {
\t\t\t"streams":\t[{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t2.000102,
\t\t\t\t\t"end":\t3.000065,
\t\t\t\t\t"seconds":\t0.99996298551559448,
\t\t\t\t\t"bytes":\t112944,
\t\t\t\t\t"bits_per_second":\t903585.44574939075,
\t\t\t\t\t"packets":\t78,
\t\t\t\t\t"omitted":\tfalse,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}],
\t\t\t"sum":\t{
\t\t\t\t"start":\t2.000102,
\t\t\t\t"end":\t3.000065,
\t\t\t\t"seconds":\t0.99996298551559448,
\t\t\t\t"bytes":\t112944,
\t\t\t\t"bits_per_second":\t903585.44574939075,
\t\t\t\t"packets":\t78,
\t\t\t\t"omitted":\tfalse,
\t\t\t\t"sender":\ttrue
\t\t\t}
\t\t}],
\t"end":\t{
\t\t"streams":\t[{
\t\t\t\t"udp":\t{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t0,
\t\t\t\t\t"end":\t3.000065,
\t\t\t\t\t"seconds":\t3.000065,
\t\t\t\t\t"bytes":\t338832,
\t\t\t\t\t"bits_per_second":\t903532.4234641582,
\t\t\t\t\t"jitter_ms":\t0.0121373051,
\t\t\t\t\t"lost_packets":\t5,
\t\t\t\t\t"packets":\t234,
\t\t\t\t\t"lost_percent":\t2.1367521367521367,
\t\t\t\t\t"out_of_order":\t0,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}
\t\t\t}],
\t\t"sum":\t{
\t\t\t"start":\t0,
\t\t\t"end":\t3.041207,
\t\t\t"seconds":\t3.041207,
\t\t\t"bytes":\t338832,
\t\t\t"bits_per_second":\t903532.4234641582,
\t\t\t"jitter_ms":\t0.0121373051,
\t\t\t"lost_packets":\t5,
\t\t\t"packets":\t234,
\t\t\t"lost_percent":\t2.1367521367521367,
\t\t\t"sender":\ttrue
\t\t},
\t\t"cpu_utilization_percent":\t{
\t\t\t"host_total":\t0.61372137069702148,
\t\t\t"host_user":\t0.1293,
\t\t\t"host_system":\t0.48442137069702146,
\t\t\t"remote_total":\t0.21843922138214111,
\t\t\t"remote_user":\t0.032768249511718743,
\t\t\t"remote_system":\t0.18567097187042236
\t\t}
\t}
}
"""
EXPECTED_UDP_JSON = EXPECTED_UDP_JSON.replace("@UNAME@", HANDOUT_UNAME)

# ---------------------------------------------------------------------------
# iperf3: the docs/semantics/formats.md §1.7 UDP example
#
# `iperf3 -c 10.0.0.2 -p 5010 -u -b 0.9M -S 0x32 -t 3 -J`: the client stream
# starts at 1.2 ms of simulated time; the three interval ends are 1.000089,
# 2.000102 and 3.000065 s after it (so the float32 `seconds` are
# 1.0000890493392944, 1.000012993812561, 0.99996298551559448); 78 datagrams
# of 1448 B per interval, 234 in total; the server (whose stream started at
# 1.0 ms) received 229 of them (5 lost in the middle, max_seq 234) and ended
# 3.041207 s after its start; its jitter was 12.1373051 µs.

S_NS = 1_200_000
R_NS = 1_000_000
UDP_RESULT = {
    "error": None,
    "local_ip": "10.0.0.1",
    "local_port": 43222,
    "ctrl_port": 43220,
    "remote_ip": "10.0.0.2",
    "remote_port": 5010,
    "cookie": "b5n4ydqfx2rkq6rjgq3nqjkbwd7ewpq2svyl",
    "start_ns": S_NS,
    "intervals": [
        {"start_ns": S_NS, "end_ns": S_NS + 1_000_089_000, "bytes": 112944, "packets": 78,
         "omitted": False},
        {"start_ns": S_NS + 1_000_089_000, "end_ns": S_NS + 2_000_102_000, "bytes": 112944,
         "packets": 78, "omitted": False},
        {"start_ns": S_NS + 2_000_102_000, "end_ns": S_NS + 3_000_065_000, "bytes": 112944,
         "packets": 78, "omitted": False},
    ],
    "sender": {"bytes": 338832, "packets": 234, "end_ns": S_NS + 3_000_065_000},
    "receiver": {"bytes": 331592, "packets": 234, "received": 229, "lost": 5, "out_of_order": 0,
                 "jitter_s": 0.0121373051 / 1000, "start_ns": R_NS,
                 "end_ns": R_NS + 3_041_207_000},
    # CPU is not modelled (zeros by default); the example's values are replayed
    "cpu_utilization_percent": {
        "host_total": 0.61372137069702148, "host_user": 0.1293,
        "host_system": 0.48442137069702146, "remote_total": 0.21843922138214111,
        "remote_user": 0.032768249511718743, "remote_system": 0.18567097187042236},
}


def client(line: str) -> Iperf3Client:
    """The client model of an iperf3 command line, as a run formats it."""
    client = parse_iperf3(parse_shell(line)[0].commands[0].words, Diagnostics(), LAB)
    assert isinstance(client, Iperf3Client)
    return client


UDP_CMD = client("iperf3 -c 10.0.0.2 -p 5010 -u -b 0.9m -S 0x32 -t 3")

EXPECTED_UDP_TEXT = (
    "Class2:  Connecting to host 10.0.0.2, port 5010\n"
    "Class2:  [  5] local 10.0.0.1 port 43222 connected to 10.0.0.2 port 5010\n"
    "Class2:  [ ID] Interval           Transfer     Bitrate         Total Datagrams\n"
    "Class2:  [  5]   0.00-1.00   sec   110 KBytes   903 Kbits/sec  78  \n"
    "Class2:  [  5]   1.00-2.00   sec   110 KBytes   904 Kbits/sec  78  \n"
    "Class2:  [  5]   2.00-3.00   sec   110 KBytes   904 Kbits/sec  78  \n"
    "Class2:  - - - - - - - - - - - - - - - - - - - - - - - - -\n"
    "Class2:  [ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
    "Class2:  [  5]   0.00-3.00   sec   331 KBytes   904 Kbits/sec  0.000 ms  0/234 (0%)  sender\n"
    "Class2:  [  5]   0.00-3.04   sec   324 KBytes   872 Kbits/sec  0.012 ms  5/234 (2.1%)  receiver\n"
    "Class2:  \n"
    "Class2:  iperf Done.\n"
)


def test_udp_example_json_byte_exact():
    assert iperf3.client_json(UDP_RESULT, UDP_CMD, LAB_HANDOUT) == EXPECTED_UDP_JSON


def test_udp_example_text_with_title_byte_exact():
    cmd = dataclasses.replace(UDP_CMD, title="Class2")
    assert iperf3.client_text(UDP_RESULT, cmd, LAB_HANDOUT) == EXPECTED_UDP_TEXT


def test_udp_text_without_title_has_no_prefix():
    expected = EXPECTED_UDP_TEXT.replace("Class2:  ", "")
    assert iperf3.client_text(UDP_RESULT, UDP_CMD, LAB_HANDOUT) == expected
    assert expected.endswith("receiver\n\niperf Done.\n")


def test_udp_json_title_key_and_parseable():
    doc = iperf3.client_json(UDP_RESULT, dataclasses.replace(UDP_CMD, title="Class2"), LAB_HANDOUT)
    obj = json.loads(doc)
    assert list(obj) == ["start", "intervals", "end", "title"]
    assert obj["title"] == "Class2"


def test_udp_example_derived_numbers():
    assert iperf3.float32(1.000089) == 1.0000890493392944
    assert cjson.format_number(iperf3.float32(0.999963)) == "0.99996298551559448"
    assert cjson.format_number(112944 / iperf3.float32(1.000089) * 8) == "903471.54645571683"
    assert cjson.format_number(338832 / 3.000065 * 8) == "903532.4234641582"


def test_cpu_defaults_to_zero():
    result = dict(UDP_RESULT)
    del result["cpu_utilization_percent"]
    obj = json.loads(iperf3.client_json(result, UDP_CMD, LAB))
    assert obj["end"]["cpu_utilization_percent"] == {
        "host_total": 0, "host_user": 0, "host_system": 0,
        "remote_total": 0, "remote_user": 0, "remote_system": 0}
    assert obj["start"]["system_info"] == LAB.system_info
    assert obj["start"]["timestamp"] == {"time": "Tue, 14 Apr 2020 18:10:05 GMT",
                                         "timesecs": 1586887805}


def test_iperf312_target_bitrate_keys():
    obj = json.loads(iperf3.client_json(UDP_RESULT, UDP_CMD, MODERN))
    keys = list(obj["start"])
    assert keys[keys.index("cookie") + 1] == "target_bitrate"
    assert obj["start"]["target_bitrate"] == 900000
    assert list(obj["start"]["test_start"])[-2:] == ["tos", "target_bitrate"]
    assert obj["start"]["version"] == "iperf 3.12"
    lab = json.loads(iperf3.client_json(UDP_RESULT, UDP_CMD, LAB))
    assert "target_bitrate" not in lab["start"]
    assert "target_bitrate" not in lab["start"]["test_start"]


def test_iperf36_has_no_sender_keys():
    p36 = dataclasses.replace(LAB, iperf3_version=(3, 6))
    doc = iperf3.client_json(UDP_RESULT, UDP_CMD, p36)
    assert '"sender"' not in doc
    assert json.loads(doc)["start"]["version"] == "iperf 3.6"


def test_socket_base_from_profile():
    p15 = dataclasses.replace(LAB, iperf3_socket_base=15)
    text = iperf3.client_text(UDP_RESULT, UDP_CMD, p15)
    assert "[ 15] local 10.0.0.1 port 43222 connected to 10.0.0.2 port 5010\n" in text
    assert "[ 15]   0.00-1.00   sec   110 KBytes   903 Kbits/sec  78  \n" in text
    assert json.loads(iperf3.client_json(UDP_RESULT, UDP_CMD, p15))["start"]["connected"][0][
        "socket"] == 15


def test_old_iperf_header_word():
    p30 = dataclasses.replace(LAB, iperf3_version=(3, 0))
    text = iperf3.client_text(UDP_RESULT, UDP_CMD, p30)
    assert "[ ID] Interval           Transfer     Bandwidth       Jitter    Lost/Total Datagrams\n" in text


def _omit_result():
    s = 5_000_000
    ivs = [
        {"start_ns": s, "end_ns": s + 1_000_050_000, "bytes": 112944, "packets": 78,
         "omitted": True},
        {"start_ns": s + 1_000_050_000, "end_ns": s + 2_000_070_000, "bytes": 112944,
         "packets": 78, "omitted": False},
        {"start_ns": s + 2_000_070_000, "end_ns": s + 3_000_090_000, "bytes": 112944,
         "packets": 78, "omitted": False},
    ]
    result = dict(UDP_RESULT, start_ns=s, intervals=ivs)
    result["sender"] = {"bytes": 225888, "packets": 156, "end_ns": s + 3_000_090_000}
    result["receiver"] = dict(UDP_RESULT["receiver"], bytes=225888, packets=156, lost=0,
                              start_ns=s, end_ns=s + 2_040_000_000)
    del result["cpu_utilization_percent"]
    return result


def test_omitted_intervals_tagged_and_restart_at_zero():
    cmd = dataclasses.replace(UDP_CMD, omit_s=1, duration_s=2)
    text = iperf3.client_text(_omit_result(), cmd, LAB)
    lines = text.splitlines()
    assert lines[2] == "[ ID] Interval           Transfer     Bitrate         Total Datagrams"
    assert lines[3] == "[  5]   0.00-1.00   sec   110 KBytes   904 Kbits/sec  78  (omitted)"
    assert lines[4] == "[  5]   0.00-1.00   sec   110 KBytes   904 Kbits/sec  78  "
    assert lines[5] == "[  5]   1.00-2.00   sec   110 KBytes   904 Kbits/sec  78  "
    assert lines[6].startswith("- - -")
    assert lines[8] == ("[  5]   0.00-2.00   sec   221 KBytes   904 Kbits/sec  0.000 ms  0/156 (0%)"
                        "  sender")
    assert text.count("[ ID]") == 2  # the interval header is printed once
    obj = json.loads(iperf3.client_json(_omit_result(), cmd, LAB))
    assert [iv["streams"][0]["omitted"] for iv in obj["intervals"]] == [True, False, False]
    assert [iv["sum"]["omitted"] for iv in obj["intervals"]] == [True, False, False]
    assert obj["intervals"][1]["streams"][0]["start"] == 0
    assert obj["start"]["test_start"]["omit"] == 1
    assert obj["end"]["streams"][0]["udp"]["end"] == 2.00004


def test_engine_style_omit_keys():
    """test_start_ns = first start_time, start_ns = start_time after the omit reset."""
    result = _omit_result()
    result["test_start_ns"] = result["start_ns"]
    result["start_ns"] = result["intervals"][0]["end_ns"] + 3_000  # omit timer fired 3 µs later
    cmd = dataclasses.replace(UDP_CMD, omit_s=1, duration_s=2)
    lines = iperf3.client_text(result, cmd, LAB).splitlines()
    assert lines[3] == "[  5]   0.00-1.00   sec   110 KBytes   904 Kbits/sec  78  (omitted)"
    assert lines[4] == "[  5]   0.00-1.00   sec   110 KBytes   904 Kbits/sec  78  "
    obj = json.loads(iperf3.client_json(result, cmd, LAB))
    assert obj["intervals"][1]["streams"][0]["start"] == 0.000003
    assert obj["end"]["streams"][0]["udp"]["end"] == 2.000037
    assert obj["start"]["timestamp"]["timesecs"] == LAB.epoch


# ---------------------------------------------------------------------------
# iperf3: generic line helpers (docs/semantics/formats.md §11 item 2, TCP layouts)


def test_unit_snprintf():
    assert iperf3.unit_snprintf(13212057, "A") == "12.6 MByte"
    assert iperf3.unit_snprintf(13212057 / 1.0, "a") == " 106 Mbit"
    assert iperf3.unit_snprintf(1100000, "a") == "8.80 Mbit"
    assert iperf3.unit_snprintf(1023 * 1024, "A") == "1023 KByte"
    assert iperf3.unit_snprintf(0, "A") == "0.00 Byte"
    assert iperf3.unit_snprintf(1024 ** 5 * 3, "A") == "3072 TByte"
    assert iperf3.unit_snprintf(125_000_000, "m") == "1000 Mbit"


def test_tcp_interval_line_lab14():
    line = iperf3.tcp_sender_interval_line(15, 0.0, 1.0, 13_212_057, iperf3.float32(1.0), 322,
                                           118 * 1448)
    assert line == ("[ 15]   0.00-1.00   sec  12.6 MBytes   106 Mbits/sec  322    167 KBytes       \n")
    omitted = iperf3.tcp_sender_interval_line(5, 0.0, 1.0, 1_192_000_000, 1.0, 0, 1023 * 1024,
                                              "(omitted)")
    assert omitted == ("[  5]   0.00-1.00   sec  1.11 GBytes  9.54 Gbits/sec    0   1023 KBytes"
                       "       (omitted)\n")


def test_tcp_summary_pair_lab14():
    sender = iperf3.tcp_sender_summary_line(15, 0.0, 10.0, 92_600_000, 10.0, 582)
    receiver = iperf3.tcp_receiver_line(15, 0.0, 10.04, 90_660_000, 10.04)
    assert sender == "[ 15]   0.00-10.00  sec  88.3 MBytes  74.1 Mbits/sec  582             sender\n"
    assert receiver == ("[ 15]   0.00-10.04  sec  86.5 MBytes  72.2 Mbits/sec                  "
                        "receiver\n")
    server_line = iperf3.tcp_receiver_line(5, 3.0, 3.04, 1021 * 1024, iperf3.float32(0.04), "")
    assert server_line == "[  5]   3.00-3.04   sec  1021 KBytes   209 Mbits/sec                  \n"


# ---------------------------------------------------------------------------
# iperf3: server side


def _server_iv(a_us, b_us, nbytes, packets, lost, jitter_s):
    return {"start_ns": R_NS + a_us * 1000, "end_ns": R_NS + b_us * 1000, "bytes": nbytes,
            "packets": packets, "received": packets - lost, "lost": lost, "out_of_order": 0,
            "jitter_s": jitter_s, "omitted": False}


def _server_test(final_bytes, final_packets, complete=True):
    return {
        "client_ip": "10.0.0.1", "client_ctrl_port": 43220, "client_data_port": 43222,
        "local_ip": "10.0.0.2", "protocol": "udp", "start_ns": R_NS, "omit_ns": 0,
        "intervals": [
            _server_iv(0, 1_000_120, 106152, 78, 5, 0.0000213),
            _server_iv(1_000_120, 2_000_130, 112944, 78, 0, 0.0000152),
            _server_iv(2_000_130, 3_000_140, 112944 - final_bytes, 78 - final_packets, 0,
                       0.0000125),
            _server_iv(3_000_140, 3_041_207, final_bytes, final_packets, 0, 0.0000121373051),
        ],
        "total": {"bytes": 331592, "packets": 234, "received": 229, "lost": 5, "out_of_order": 0,
                  "jitter_s": 0.0000121373051, "end_ns": R_NS + 3_041_207_000},
        "complete": complete,
        "cookie": "b5n4ydqfx2rkq6rjgq3nqjkbwd7ewpq2svyl",
        "params": {"num_streams": 1, "blksize": 1448, "omit": 0, "duration": 3, "bytes": 0,
                   "blocks": 0, "tos": 50, "rate": 900000},
        "peer": {"bytes": 338832, "packets": 234, "start_ns": S_NS,
                 "end_ns": S_NS + 3_000_065_000},
    }


BANNER = ("-----------------------------------------------------------\n"
          "Server listening on 5010\n"
          "-----------------------------------------------------------\n")


def test_server_text_short_final_interval_printed_when_it_has_data():
    result = {"port": 5010, "start_ns": 0, "end_ns": 60_000_000_000, "interrupted": False,
              "tests": [_server_test(2896, 2)]}
    expected = (
        BANNER
        + "Accepted connection from 10.0.0.1, port 43220\n"
        "[  5] local 10.0.0.2 port 5010 connected to 10.0.0.1 port 43222\n"
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        "[  5]   0.00-1.00   sec   104 KBytes   849 Kbits/sec  0.021 ms  5/78 (6.4%)  \n"
        "[  5]   1.00-2.00   sec   110 KBytes   904 Kbits/sec  0.015 ms  0/78 (0%)  \n"
        "[  5]   2.00-3.00   sec   107 KBytes   880 Kbits/sec  0.013 ms  0/76 (0%)  \n"
        "[  5]   3.00-3.04   sec  2.83 KBytes   564 Kbits/sec  0.012 ms  0/2 (0%)  \n"
        "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
        "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams\n"
        "[  5]   0.00-3.04   sec   324 KBytes   872 Kbits/sec  0.012 ms  5/234 (2.1%)  receiver\n"
        + BANNER
    )
    assert iperf3.server_text(result, LAB) == expected


def test_server_text_zero_byte_short_final_interval_suppressed_and_interrupt():
    result = {"port": 5010, "start_ns": 0, "end_ns": 95_000_000_000, "interrupted": True,
              "tests": [_server_test(0, 0)]}
    text = iperf3.server_text(result, LAB)
    assert "3.00-3.04" not in text.split("- - -")[0]
    assert "[  5]   0.00-3.04   sec   324 KBytes   872 Kbits/sec  0.012 ms  5/234 (2.1%)  receiver\n" in text
    assert text.endswith(BANNER + "iperf3: interrupt - the server has terminated\n")
    assert text.count("Server listening on 5010\n") == 2


def test_short_interval_kept_if_long_enough():
    test = _server_test(0, 0)
    test["intervals"][-1]["end_ns"] = R_NS + 3_100_140_000  # exactly 10 % of 1 s, no data
    test["total"]["end_ns"] = R_NS + 3_100_140_000
    result = {"port": 5010, "start_ns": 0, "interrupted": False, "tests": [test]}
    assert "[  5]   3.00-3.10   sec  0.00 Bytes  0.00 bits/sec  0.012 ms  0/0 (0%)  \n" in \
        iperf3.server_text(result, LAB)


def test_server_interrupted_while_idle():
    result = {"port": 5201, "start_ns": 0, "end_ns": 5_000_000_000, "interrupted": True,
              "tests": []}
    assert iperf3.server_text(result, LAB) == (
        "-----------------------------------------------------------\n"
        "Server listening on 5201\n"
        "-----------------------------------------------------------\n"
        "iperf3: interrupt - the server has terminated\n")
    assert iperf3.server_json(result, LAB) == (
        '{\n\t"start":\t{\n\t\t"connected":\t[],\n\t\t"version":\t"iperf 3.7",\n'
        '\t\t"system_info":\t"' + LAB.system_info + '"\n\t},\n\t"intervals":\t[],\n'
        '\t"end":\t{\n\t},\n\t"error":\t"interrupt - the server has terminated"\n}\n')


def test_server_text_interrupted_mid_test():
    test = _server_test(2896, 2, complete=False)
    del test["peer"]  # no results exchange happened
    result = {"port": 5010, "start_ns": 0, "interrupted": True, "tests": [test]}
    text = iperf3.server_text(result, LAB)
    assert text.endswith("5/234 (2.1%)  receiver\niperf3: interrupt - the server has terminated\n")
    assert text.count("Server listening") == 1
    obj = json.loads(iperf3.server_json(result, LAB))
    assert obj["error"] == "interrupt - the server has terminated"
    udp = obj["end"]["streams"][0]["udp"]
    # without the exchange iperf3 falls back: sender_time = receiver_time, no sent bytes
    assert udp["end"] == 3.041207 and udp["bytes"] == 0 and udp["lost_percent"] == 0
    assert udp["packets"] == 234


def test_server_engine_style_cut_test_without_totals():
    test = _server_test(2896, 2, complete=False)
    test["total"] = None          # the engine has no totals for a test cut by Ctrl-C
    del test["peer"], test["params"], test["cookie"]
    test["test_start_ns"] = R_NS
    result = {"port": 5010, "start_ns": 0, "interrupted": True, "tests": [test]}
    text = iperf3.server_text(result, LAB)
    # totals = the intervals summed: 332040 B over 3.041207 s
    assert ("[  5]   0.00-3.04   sec   324 KBytes   873 Kbits/sec  0.012 ms  5/234 (2.1%)  receiver\n"
            "iperf3: interrupt - the server has terminated\n") in text
    obj = json.loads(iperf3.server_json(result, LAB))
    assert obj["end"]["sum"]["packets"] == 234 and obj["error"].startswith("interrupt")


def test_server_test_that_never_started():
    test = {"client_ip": "10.0.0.1", "client_ctrl_port": 43220, "client_data_port": None,
            "local_ip": "10.0.0.2", "protocol": "udp", "test_start_ns": None, "start_ns": None,
            "omit_ns": 0, "intervals": [], "total": None, "complete": False}
    result = {"port": 5201, "start_ns": 0, "interrupted": True, "tests": [test]}
    assert iperf3.server_text(result, LAB) == (
        "-----------------------------------------------------------\n"
        "Server listening on 5201\n"
        "-----------------------------------------------------------\n"
        "Accepted connection from 10.0.0.1, port 43220\n"
        "iperf3: interrupt - the server has terminated\n")
    obj = json.loads(iperf3.server_json(result, LAB))
    assert obj["start"]["connected"] == [] and obj["intervals"] == [] and obj["end"] == {}
    assert obj["error"] == "interrupt - the server has terminated"


def test_server_json_iperf312():
    """target_bitrate twice, as a real 3.12 UDP server prints it (tests/data/iperf3-3.12/
    srv_udp.json): get_parameters adds it after system_info, iperf_on_connect after cookie."""
    result = {"port": 5010, "start_ns": 0, "interrupted": False, "tests": [_server_test(0, 0)]}
    text = iperf3.server_json(result, MODERN)
    obj = json.loads(text)
    assert list(obj["start"])[2:4] == ["system_info", "target_bitrate"]
    assert text.count('\t\t"target_bitrate":\t900000,\n') == 2
    assert '\t\t"cookie":\t"' + obj["start"]["cookie"] + '",\n\t\t"target_bitrate":\t900000,\n' in text
    assert obj["start"]["target_bitrate"] == 900000
    assert obj["start"]["test_start"]["target_bitrate"] == 900000


def test_server_json_mirror_image():
    result = {"port": 5010, "start_ns": 0, "interrupted": False,
              "tests": [_server_test(2896, 2), _server_test(0, 0)]}
    docs = iperf3.server_json(result, LAB)
    assert docs.count('{\n\t"start":') == 2
    first = json.loads(docs[: docs.index('{\n\t"start":', 1)])
    # 3.7's get_parameters adds the client's rate (esnet/iperf #776); on_connect adds it only for TCP
    assert list(first["start"]) == [
        "connected", "version", "system_info", "target_bitrate", "timestamp", "accepted_connection",
        "cookie", "sock_bufsize", "sndbuf_actual", "rcvbuf_actual", "test_start"]
    assert first["start"]["target_bitrate"] == 900000 and "target_bitrate" not in first["start"]["test_start"]
    assert first["start"]["accepted_connection"] == {"host": "10.0.0.1", "port": 43220}
    assert first["start"]["connected"][0] == {"socket": 5, "local_host": "10.0.0.2",
                                              "local_port": 5010, "remote_host": "10.0.0.1",
                                              "remote_port": 43222}
    assert first["start"]["test_start"]["tos"] == 50
    assert len(first["intervals"]) == 4
    iv0 = first["intervals"][0]["streams"][0]
    assert list(iv0) == ["socket", "start", "end", "seconds", "bytes", "bits_per_second",
                         "jitter_ms", "lost_packets", "packets", "lost_percent", "omitted",
                         "sender"]
    assert iv0["sender"] is False and iv0["lost_packets"] == 5
    udp = first["end"]["streams"][0]["udp"]
    assert udp["end"] == 3.000065 and udp["bytes"] == 338832 and udp["packets"] == 234
    assert udp["lost_percent"] == 100.0 * 5 / 234 and udp["sender"] is False
    assert first["end"]["sum"]["end"] == 3.041207
    assert first["end"]["sum"]["bits_per_second"] == 338832 / 3.000065 * 8
    second = json.loads(docs[docs.index('{\n\t"start":', 1):])
    assert len(second["intervals"]) == 3  # the empty short final interval is dropped


def test_client_error_text_and_json():
    result = {"error": "unable to connect to server: Connection refused"}
    cmd = client("iperf3 -c 10.0.0.2 -u")
    assert iperf3.client_text(result, cmd, LAB) == (
        "iperf3: error - unable to connect to server: Connection refused\n")
    assert iperf3.client_json(result, cmd, LAB) == (
        '{\n\t"start":\t{\n\t\t"connected":\t[],\n\t\t"version":\t"iperf 3.7",\n'
        '\t\t"system_info":\t"Linux bufferlab 5.4.0-bufferlab #1 SMP x86_64"\n\t},\n'
        '\t"intervals":\t[],\n\t"end":\t{\n\t},\n'
        '\t"error":\t"error - unable to connect to server: Connection refused"\n}\n')


def test_client_interrupted():
    result = dict(UDP_RESULT, interrupted=True, receiver=None)
    text = iperf3.client_text(result, UDP_CMD, LAB)
    assert text.endswith("[  5]   0.00-3.00   sec  0.00 Bytes  0.00 bits/sec  0.000 ms  0/0 (0%)"
                         "  receiver\niperf3: interrupt - the client has terminated\n")
    obj = json.loads(iperf3.client_json(result, UDP_CMD, LAB))
    assert obj["error"] == "interrupt - the client has terminated"
    assert obj["end"]["sum"]["end"] == 3.000065


# ---------------------------------------------------------------------------
# iperf3 TCP: the docs/semantics/formats.md §1.5 example (§11 item 1)
#
# `iperf3 -c 10.0.0.3 -t 3 -J` from h1 in Lab 14. TEST_START reaches the
# client 2.0001 ms into the run (timestamp 18:03:21 = epoch 1586887401); the
# three stats instants are 1.000154, 2.000211 and 3.000187 s after it (sub-µs
# parts are truncated as clock_gettime → iperf_time does), so the float32
# interval lengths are 1.000154, 1.000057 and 0.999976; the server's stream
# ran 3.04431 s and read 308 015 832 B. mean_rtt = ⌊(38412+41833+43960)/3⌋.

EXPECTED_TCP_JSON = """\
{
\t"start":\t{
\t\t"connected":\t[{
\t\t\t\t"socket":\t5,
\t\t\t\t"local_host":\t"10.0.0.1",
\t\t\t\t"local_port":\t47136,
\t\t\t\t"remote_host":\t"10.0.0.3",
\t\t\t\t"remote_port":\t5201
\t\t\t}],
\t\t"version":\t"iperf 3.7",
\t\t"system_info":\t"@UNAME@",
\t\t"timestamp":\t{
\t\t\t"time":\t"Tue, 14 Apr 2020 18:03:21 GMT",
\t\t\t"timesecs":\t1586887401
\t\t},
\t\t"connecting_to":\t{
\t\t\t"host":\t"10.0.0.3",
\t\t\t"port":\t5201
\t\t},
\t\t"cookie":\t"x3k2fzq7m4tq5lqj6ycn7vchbq2g2pwe3yrd",
\t\t"tcp_mss_default":\t1448,
\t\t"sock_bufsize":\t0,
\t\t"sndbuf_actual":\t87380,
\t\t"rcvbuf_actual":\t87380,
\t\t"test_start":\t{
\t\t\t"protocol":\t"TCP",
\t\t\t"num_streams":\t1,
\t\t\t"blksize":\t131072,
\t\t\t"omit":\t0,
\t\t\t"duration":\t3,
\t\t\t"bytes":\t0,
\t\t\t"blocks":\t0,
\t\t\t"reverse":\t0,
\t\t\t"tos":\t0
\t\t}
\t},
\t"intervals":\t[{
\t\t\t"streams":\t[{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t0,
\t\t\t\t\t"end":\t1.000154,
\t\t\t\t\t"seconds":\t1.0001540184020996,
\t\t\t\t\t"bytes":\t84434432,
\t\t\t\t\t"bits_per_second":\t675371436.37054646,
\t\t\t\t\t"retransmits":\t217,
\t\t\t\t\t"snd_cwnd":\t1856336,
\t\t\t\t\t"rtt":\t38412,
\t\t\t\t\t"rttvar":\t6120,
\t\t\t\t\t"pmtu":\t1500,
\t\t\t\t\t"omitted":\tfalse,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}],
\t\t\t"sum":\t{
\t\t\t\t"start":\t0,
\t\t\t\t"end":\t1.000154,
\t\t\t\t"seconds":\t1.0001540184020996,
\t\t\t\t"bytes":\t84434432,
\t\t\t\t"bits_per_second":\t675371436.37054646,
\t\t\t\t"retransmits":\t217,
\t\t\t\t"omitted":\tfalse,
\t\t\t\t"sender":\ttrue
\t\t\t}
\t\t}, {
\t\t\t"streams":\t[{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t1.000154,
\t\t\t\t\t"end":\t2.000211,
\t\t\t\t\t"seconds":\t1.0000569820404053,
\t\t\t\t\t"bytes":\t112459776,
\t\t\t\t\t"bits_per_second":\t899626945.42104638,
\t\t\t\t\t"retransmits":\t0,
\t\t\t\t\t"snd_cwnd":\t2057608,
\t\t\t\t\t"rtt":\t41833,
\t\t\t\t\t"rttvar":\t1532,
\t\t\t\t\t"pmtu":\t1500,
\t\t\t\t\t"omitted":\tfalse,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}],
\t\t\t"sum":\t{
\t\t\t\t"start":\t1.000154,
\t\t\t\t"end":\t2.000211,
\t\t\t\t"seconds":\t1.0000569820404053,
\t\t\t\t"bytes":\t112459776,
\t\t\t\t"bits_per_second":\t899626945.42104638,
\t\t\t\t"retransmits":\t0,
\t\t\t\t"omitted":\tfalse,
\t\t\t\t"sender":\ttrue
\t\t\t}
\t\t}, {
\t\t\t"streams":\t[{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t2.000211,
\t\t\t\t\t"end":\t3.000187,
\t\t\t\t\t"seconds":\t0.99997597932815552,
\t\t\t\t\t"bytes":\t113246208,
\t\t\t\t\t"bits_per_second":\t905991426.52275038,
\t\t\t\t\t"retransmits":\t0,
\t\t\t\t\t"snd_cwnd":\t2244400,
\t\t\t\t\t"rtt":\t43960,
\t\t\t\t\t"rttvar":\t1109,
\t\t\t\t\t"pmtu":\t1500,
\t\t\t\t\t"omitted":\tfalse,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}],
\t\t\t"sum":\t{
\t\t\t\t"start":\t2.000211,
\t\t\t\t"end":\t3.000187,
\t\t\t\t"seconds":\t0.99997597932815552,
\t\t\t\t"bytes":\t113246208,
\t\t\t\t"bits_per_second":\t905991426.52275038,
\t\t\t\t"retransmits":\t0,
\t\t\t\t"omitted":\tfalse,
\t\t\t\t"sender":\ttrue
\t\t\t}
\t\t}],
\t"end":\t{
\t\t"streams":\t[{
\t\t\t\t"sender":\t{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t0,
\t\t\t\t\t"end":\t3.000187,
\t\t\t\t\t"seconds":\t3.000187,
\t\t\t\t\t"bytes":\t310140416,
\t\t\t\t\t"bits_per_second":\t826989560.31740689,
\t\t\t\t\t"retransmits":\t217,
\t\t\t\t\t"max_snd_cwnd":\t2244400,
\t\t\t\t\t"max_rtt":\t43960,
\t\t\t\t\t"min_rtt":\t38412,
\t\t\t\t\t"mean_rtt":\t41401,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t},
\t\t\t\t"receiver":\t{
\t\t\t\t\t"socket":\t5,
\t\t\t\t\t"start":\t0,
\t\t\t\t\t"end":\t3.04431,
\t\t\t\t\t"seconds":\t3.000187,
\t\t\t\t\t"bytes":\t308015832,
\t\t\t\t\t"bits_per_second":\t809420412.50726771,
\t\t\t\t\t"sender":\ttrue
\t\t\t\t}
\t\t\t}],
\t\t"sum_sent":\t{
\t\t\t"start":\t0,
\t\t\t"end":\t3.000187,
\t\t\t"seconds":\t3.000187,
\t\t\t"bytes":\t310140416,
\t\t\t"bits_per_second":\t826989560.31740689,
\t\t\t"retransmits":\t217,
\t\t\t"sender":\ttrue
\t\t},
\t\t"sum_received":\t{
\t\t\t"start":\t0,
\t\t\t"end":\t3.04431,
\t\t\t"seconds":\t3.04431,
\t\t\t"bytes":\t308015832,
\t\t\t"bits_per_second":\t809420412.50726771,
\t\t\t"sender":\ttrue
\t\t},
\t\t"cpu_utilization_percent":\t{
\t\t\t"host_total":\t4.083657123876451,
\t\t\t"host_user":\t0.32419706893150113,
\t\t\t"host_system":\t3.7594590282081639,
\t\t\t"remote_total":\t7.9139462518692021,
\t\t\t"remote_user":\t0.632183406829834,
\t\t\t"remote_system":\t7.2817628450393679
\t\t},
\t\t"sender_tcp_congestion":\t"cubic",
\t\t"receiver_tcp_congestion":\t"cubic"
\t}
}
"""
EXPECTED_TCP_JSON = EXPECTED_TCP_JSON.replace("@UNAME@", HANDOUT_UNAME)
EXPECTED_TCP_TEXT = (
    "Connecting to host 10.0.0.3, port 5201\n"
    "[  5] local 10.0.0.1 port 47136 connected to 10.0.0.3 port 5201\n"
    "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd\n"
    "[  5]   0.00-1.00   sec  80.5 MBytes   675 Mbits/sec  217   1.77 MBytes       \n"
    "[  5]   1.00-2.00   sec   107 MBytes   900 Mbits/sec    0   1.96 MBytes       \n"
    "[  5]   2.00-3.00   sec   108 MBytes   906 Mbits/sec    0   2.14 MBytes       \n"
    "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
    "[ ID] Interval           Transfer     Bitrate         Retr\n"
    "[  5]   0.00-3.00   sec   296 MBytes   827 Mbits/sec  217             sender\n"
    "[  5]   0.00-3.04   sec   294 MBytes   809 Mbits/sec                  receiver\n"
    "\n"
    "iperf Done.\n"
)

LAB_TCP = dataclasses.replace(LAB_HANDOUT, epoch=1586887401)
T_NS = 2_000_100          # client TEST_START (no -O: also the stream's start_time)
SRV_NS = 1_400_050        # server stream start_time
TCP_ENDS = [1_000_154_300, 2_000_211_700, 3_000_187_200]  # after T_NS
TCP_IVS = [  # bytes, retransmits, snd_cwnd, snd_wnd, rtt, rttvar
    (84434432, 217, 1856336, 3145728, 38412, 6120),
    (112459776, 0, 2057608, 3145728, 41833, 1532),
    (113246208, 0, 2244400, 3145728, 43960, 1109),
]


def _tcp_iv(a_ns, b_ns, nbytes, retr, cwnd, wnd, rtt, rttvar, omitted=False):
    return {"start_ns": a_ns, "end_ns": b_ns, "bytes": nbytes, "retransmits": retr, "snd_cwnd": cwnd,
            "snd_wnd": wnd, "rtt_us": rtt, "rttvar_us": rttvar, "pmtu": 1500, "omitted": omitted}


def _tcp_result():
    starts = [0] + TCP_ENDS[:-1]
    ivs = [_tcp_iv(T_NS + a, T_NS + b, *vals) for a, b, vals in zip(starts, TCP_ENDS, TCP_IVS, strict=True)]
    return {
        "error": None, "interrupted": False, "protocol": "tcp", "reverse": False,
        "local_ip": "10.0.0.1", "ctrl_port": 47134, "remote_ip": "10.0.0.3", "remote_port": 5201,
        "cookie": "x3k2fzq7m4tq5lqj6ycn7vchbq2g2pwe3yrd", "tcp_mss_default": 1448,
        "sndbuf_actual": 87380, "rcvbuf_actual": 87380,
        "sender_congestion": "cubic", "receiver_congestion": "cubic",
        "test_start_ns": T_NS, "start_ns": T_NS,
        "streams": [{
            "local_port": 47136,
            "intervals": ivs,
            "sender": {"bytes": 310140416, "retransmits": 217, "max_snd_cwnd": 2244400,
                       "max_snd_wnd": 3145728, "max_rtt_us": 43960, "min_rtt_us": 38412,
                       "mean_rtt_us": 41401, "start_ns": T_NS, "end_ns": T_NS + TCP_ENDS[-1]},
            "receiver": {"bytes": 308015832, "start_ns": SRV_NS, "end_ns": SRV_NS + 3_044_310_400},
        }],
        "cpu_utilization_percent": {
            "host_total": 4.083657123876451, "host_user": 0.32419706893150113,
            "host_system": 3.7594590282081639, "remote_total": 7.9139462518692021,
            "remote_user": 0.632183406829834, "remote_system": 7.2817628450393679},
    }


TCP_CMD = client("iperf3 -c 10.0.0.3 -t 3")


def test_tcp_example_json_byte_exact():
    assert iperf3.client_json(_tcp_result(), TCP_CMD, LAB_TCP) == EXPECTED_TCP_JSON


def test_tcp_example_text_byte_exact():
    assert iperf3.client_text(_tcp_result(), TCP_CMD, LAB_TCP) == EXPECTED_TCP_TEXT
    titled = iperf3.client_text(_tcp_result(), dataclasses.replace(TCP_CMD, title="h1"), LAB_TCP)
    assert titled == "".join("h1:  " + line for line in EXPECTED_TCP_TEXT.splitlines(True))


def test_tcp_example_derived_numbers():
    f32 = iperf3.float32
    assert [cjson.format_number(f32(x)) for x in (1.000154, 1.000057, 0.999976)] == [
        "1.0001540184020996", "1.0000569820404053", "0.99997597932815552"]
    assert cjson.format_number(84434432 / f32(1.000154) * 8) == "675371436.37054646"
    assert cjson.format_number(310140416 / 3.000187 * 8) == "826989560.31740689"
    assert cjson.format_number(308015832 / 3.04431 * 8) == "809420412.50726771"
    assert (38412 + 41833 + 43960) // 3 == 41401
    assert all(cwnd % 1448 == 0 for _, _, cwnd, _, _, _ in TCP_IVS)
    obj = json.loads(EXPECTED_TCP_JSON)
    assert obj["end"]["streams"][0]["receiver"]["seconds"] == obj["end"]["sum_sent"]["seconds"]
    assert obj["end"]["sum_received"]["seconds"] == 3.04431


def test_tcp_iperf310_snd_wnd_and_iperf312_target_bitrate():
    p310 = dataclasses.replace(LAB_TCP, iperf3_version=(3, 10))
    obj = json.loads(iperf3.client_json(_tcp_result(), TCP_CMD, p310))
    iv = obj["intervals"][0]["streams"][0]
    assert list(iv) == ["socket", "start", "end", "seconds", "bytes", "bits_per_second", "retransmits",
                        "snd_cwnd", "snd_wnd", "rtt", "rttvar", "pmtu", "omitted", "sender"]
    assert iv["snd_wnd"] == 3145728
    snd = obj["end"]["streams"][0]["sender"]
    assert list(snd)[6:10] == ["retransmits", "max_snd_cwnd", "max_snd_wnd", "max_rtt"]
    assert snd["max_snd_wnd"] == 3145728
    assert "target_bitrate" not in obj["start"]
    modern = iperf3.client_json(_tcp_result(), TCP_CMD, MODERN)
    keys = list(json.loads(modern)["start"])
    assert keys[keys.index("cookie"):keys.index("cookie") + 5] == [
        "cookie", "tcp_mss_default", "target_bitrate", "sock_bufsize", "sndbuf_actual"]
    assert '\t\t"tcp_mss_default":\t1448,\n\t\t"target_bitrate":\t0,\n' in modern
    ts = json.loads(modern)["start"]["test_start"]
    assert list(ts)[-3:] == ["reverse", "tos", "target_bitrate"] and ts["protocol"] == "TCP"
    assert "snd_wnd" in json.loads(modern)["intervals"][0]["streams"][0]
    # 3.7 (the reference layout) has neither key
    assert '"snd_wnd"' not in EXPECTED_TCP_JSON and '"max_snd_wnd"' not in EXPECTED_TCP_JSON


def test_tcp_iperf36_has_no_sender_keys():
    p36 = dataclasses.replace(LAB_TCP, iperf3_version=(3, 6))
    doc = iperf3.client_json(_tcp_result(), TCP_CMD, p36)
    assert '"sender":\ttrue' not in doc and '"sender":\tfalse' not in doc
    assert doc.count('"sender":\t{') == 1  # the end.streams[].sender object itself stays
    assert json.loads(doc)["end"]["streams"][0]["sender"]["retransmits"] == 217


def test_tcp_window_and_title_keys():
    cmd = client("iperf3 -c 10.0.0.3 -t 3 -w 1M -T Lab14")
    doc = iperf3.client_json(_tcp_result(), cmd, LAB_TCP)
    obj = json.loads(doc)
    assert obj["start"]["sock_bufsize"] == 1048576
    assert list(obj)[-1] == "title" and obj["title"] == "Lab14"


# ---------------------------------------------------------------------------
# iperf3 TCP: Lab 14 handout lines from an engine result (§11 item 2, §1.8)


def _lab14_result():
    """10 s, socket 15: 13 212 057 B / 322 retr / cwnd 118·1448 in the first second."""
    t0 = 5_000_000
    ivs = [_tcp_iv(t0, t0 + 1_000_000_000, 13_212_057, 322, 118 * 1448, 0, 41_000, 3_000)]
    rest = 92_600_000 - 13_212_057
    for k in range(1, 10):
        nbytes = rest // 9 + (rest % 9 if k == 9 else 0)
        end = t0 + (k + 1) * 1_000_000_000 + (200_000 if k == 9 else 0)
        ivs.append(_tcp_iv(ivs[-1]["end_ns"], end, nbytes, 260 if k == 1 else 0, 150 * 1448, 0,
                           200_000, 5_000))
    result = _tcp_result()
    result.update(test_start_ns=t0, start_ns=t0, cpu_utilization_percent=None)
    result["streams"] = [{
        "local_port": 60380, "intervals": ivs,
        "sender": {"bytes": 92_600_000, "retransmits": 582, "max_snd_cwnd": 150 * 1448,
                   "max_snd_wnd": 0, "max_rtt_us": 200_000, "min_rtt_us": 41_000,
                   "mean_rtt_us": 184_100, "start_ns": t0, "end_ns": ivs[-1]["end_ns"]},
        "receiver": {"bytes": 90_660_000, "start_ns": 4_000_000, "end_ns": 4_000_000 + 10_041_234_000},
    }]
    return result


def test_tcp_lab14_handout_lines_from_result():
    p15 = dataclasses.replace(LAB, iperf3_socket_base=15)
    cmd = dataclasses.replace(TCP_CMD, duration_s=10)
    lines = iperf3.client_text(_lab14_result(), cmd, p15).splitlines()
    assert lines[1] == "[ 15] local 10.0.0.1 port 60380 connected to 10.0.0.3 port 5201"
    assert lines[3] == "[ 15]   0.00-1.00   sec  12.6 MBytes   106 Mbits/sec  322    167 KBytes       "
    assert lines[12] == "[ 15]   9.00-10.00  sec  8.41 MBytes  70.6 Mbits/sec    0    212 KBytes       "
    assert lines[-4:] == [
        "[ 15]   0.00-10.00  sec  88.3 MBytes  74.1 Mbits/sec  582             sender",
        "[ 15]   0.00-10.04  sec  86.5 MBytes  72.2 Mbits/sec                  receiver",
        "",
        "iperf Done."]
    obj = json.loads(iperf3.client_json(_lab14_result(), cmd, p15))
    assert obj["end"]["sum_sent"]["seconds"] == 10.0002  # plot_iperf.sh relies on ⌊seconds⌋ = 10
    assert obj["end"]["streams"][0]["receiver"]["end"] == 10.041234


# ---------------------------------------------------------------------------
# iperf3 TCP: -P 2 -O 1 (docs/semantics/formats.md §1.6, "Observed real layouts" of §1.8)

P2_T0 = 3_000_000
P2_OMIT_END = P2_T0 + 1_000_510_000   # omit timer: start_time reset (post-omit intervals restart at 0)
P2_ROWS = {  # socket: (omitted bytes, [post-omit bytes], receiver bytes)
    5: (1_191_500_000, [1_182_500_000, 1_154_500_000], 2_380_500_000),
    7: (1_229_700_000, [1_188_000_000, 1_189_000_000], 2_420_700_000),
}


def _p2_result():
    streams = []
    for i, (omit_bytes, post, rbytes) in enumerate(P2_ROWS.values()):
        skew = 2_000 * i  # the stats callback reads each stream's clock in turn
        ivs = [_tcp_iv(P2_T0, P2_T0 + 1_000_500_000 + skew, omit_bytes, 0, 1023 * 1024, 0, 30, 5,
                       omitted=True)]
        a = ivs[0]["end_ns"]
        for k, nbytes in enumerate(post):
            b = P2_OMIT_END + (k + 1) * 1_000_000_000 + (300_000 if k == 1 else 0) + skew
            ivs.append(_tcp_iv(a, b, nbytes, 0, 1023 * 1024, 0, 40, 8))
            a = b
        streams.append({
            "local_port": 51000 + 2 * i, "intervals": ivs,
            "sender": {"bytes": sum(post), "retransmits": 0, "max_snd_cwnd": 1023 * 1024,
                       "max_snd_wnd": 0, "max_rtt_us": 40, "min_rtt_us": 30, "mean_rtt_us": 36,
                       "start_ns": P2_OMIT_END, "end_ns": a},
            "receiver": {"bytes": rbytes, "start_ns": 7_000_000, "end_ns": 7_000_000 + 2_039_000_000},
        })
    result = _tcp_result()
    result.update(test_start_ns=P2_T0, start_ns=P2_OMIT_END, streams=streams,
                  remote_ip="127.0.0.1", local_ip="127.0.0.1", cpu_utilization_percent=None)
    return result


P2_CMD = client("iperf3 -c 127.0.0.1 -t 2 -O 1 -P 2")


def test_tcp_parallel_omit_text_layout():
    text = iperf3.client_text(_p2_result(), P2_CMD, LAB)
    lines = text.splitlines()
    assert lines[:3] == ["Connecting to host 127.0.0.1, port 5201",
                         "[  5] local 127.0.0.1 port 51000 connected to 127.0.0.1 port 5201",
                         "[  7] local 127.0.0.1 port 51002 connected to 127.0.0.1 port 5201"]
    assert lines[3:9] == [
        "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd",
        "[  5]   0.00-1.00   sec  1.11 GBytes  9.53 Gbits/sec    0   1023 KBytes       (omitted)",
        "[  7]   0.00-1.00   sec  1.15 GBytes  9.83 Gbits/sec    0   1023 KBytes       (omitted)",
        "[SUM]   0.00-1.00   sec  2.25 GBytes  19.4 Gbits/sec    0             (omitted)",
        "- - - - - - - - - - - - - - - - - - - - - - - - -",
        "[  5]   0.00-1.00   sec  1.10 GBytes  9.46 Gbits/sec    0   1023 KBytes       ",
    ]
    assert lines[9].startswith("[  7]   0.00-1.00   sec ") and lines[10].startswith("[SUM]   0.00-1.00 ")
    assert lines[11].startswith("- - -") and lines[12].startswith("[  5]   1.00-2.00 ")
    assert lines[-10:] == [
        "- - - - - - - - - - - - - - - - - - - - - - - - -",
        "[ ID] Interval           Transfer     Bitrate         Retr",
        "[  5]   0.00-2.00   sec  2.18 GBytes  9.35 Gbits/sec    0             sender",
        "[  5]   0.00-2.04   sec  2.22 GBytes  9.34 Gbits/sec                  receiver",
        "[  7]   0.00-2.00   sec  2.21 GBytes  9.51 Gbits/sec    0             sender",
        "[  7]   0.00-2.04   sec  2.25 GBytes  9.50 Gbits/sec                  receiver",
        "[SUM]   0.00-2.00   sec  4.39 GBytes  18.9 Gbits/sec    0             sender",
        "[SUM]   0.00-2.04   sec  4.47 GBytes  18.8 Gbits/sec                  receiver",
        "",
        "iperf Done.",
    ]
    assert text.count("[ ID]") == 2 and text.count("[SUM]") == 5 and len(lines) == 25


def test_tcp_parallel_omit_json():
    doc = iperf3.client_json(_p2_result(), P2_CMD, LAB)
    obj = json.loads(doc)
    assert [c["socket"] for c in obj["start"]["connected"]] == [5, 7]
    # cJSON appends the socket-buffer triple once per data connection (3.7–3.13)
    assert doc.count('\t\t"sock_bufsize":\t0,\n\t\t"sndbuf_actual":\t87380,\n'
                     '\t\t"rcvbuf_actual":\t87380,\n') == 2
    assert doc.index('"rcvbuf_actual"') < doc.index('"test_start"')
    assert obj["start"]["test_start"]["omit"] == 1 and obj["start"]["test_start"]["num_streams"] == 2
    assert [iv["sum"]["omitted"] for iv in obj["intervals"]] == [True, False, False]
    first, second = obj["intervals"][0], obj["intervals"][1]
    # post-omit intervals restart at |end of the omitted one − reset instant| (iperf_time_diff)
    assert [s["start"] for s in second["streams"]] == [0.00001, 0.000008]
    assert first["streams"][1]["end"] == 1.000502
    assert first["sum"]["bytes"] == 1_191_500_000 + 1_229_700_000
    assert first["sum"]["seconds"] == first["streams"][0]["seconds"] == iperf3.float32(1.0005)
    assert first["sum"]["bits_per_second"] == (1_191_500_000 + 1_229_700_000) / iperf3.float32(1.0005) * 8
    assert list(first["sum"]) == ["start", "end", "seconds", "bytes", "bits_per_second", "retransmits",
                                  "omitted", "sender"]
    end = obj["end"]
    assert [s["sender"]["end"] for s in end["streams"]] == [2.0003, 2.0003]   # first stream's time
    assert [s["receiver"]["seconds"] for s in end["streams"]] == [2.0003, 2.0003]
    assert end["sum_sent"]["bytes"] == 2_337_000_000 + 2_377_000_000
    assert end["sum_received"] == {"start": 0, "end": 2.039, "seconds": 2.039, "bytes": 4_801_200_000,
                                   "bits_per_second": 4_801_200_000 / 2.039 * 8, "sender": True}
    assert end["sender_tcp_congestion"] == "cubic" and end["receiver_tcp_congestion"] == "cubic"
    p314 = dataclasses.replace(LAB, iperf3_version=(3, 14))
    assert iperf3.client_json(_p2_result(), P2_CMD, p314).count('"sock_bufsize"') == 1


def test_tcp_short_final_block_dropped_only_if_every_stream_is_short_and_empty():
    result = _p2_result()
    for st in result["streams"]:
        a = st["intervals"][-1]["end_ns"]
        st["intervals"].append(_tcp_iv(a, a + 50_000_000, 0, 0, 1023 * 1024, 0, 40, 8))
    assert iperf3.client_text(result, P2_CMD, LAB) == iperf3.client_text(_p2_result(), P2_CMD, LAB)
    assert len(json.loads(iperf3.client_json(result, P2_CMD, LAB))["intervals"]) == 3
    result["streams"][1]["intervals"][-1]["bytes"] = 1448
    obj = json.loads(iperf3.client_json(result, P2_CMD, LAB))
    assert len(obj["intervals"]) == 4
    assert obj["intervals"][3]["sum"]["bytes"] == 1448 and obj["intervals"][3]["streams"][0]["bytes"] == 0
    text = iperf3.client_text(result, P2_CMD, LAB)
    assert "[  5]   2.00-2.05   sec  0.00 Bytes  0.00 bits/sec    0   1023 KBytes       \n" in text
    assert "[SUM]   2.00-2.05   sec  1.41 KBytes   232 Kbits/sec    0             \n" in text


# ---------------------------------------------------------------------------
# iperf3 TCP: -R on the client, interrupts, protocol checks


def _reverse_result():
    """The §1.5 run reversed: the server sends, the client's intervals are receiver intervals."""
    result = _tcp_result()
    st = result["streams"][0]
    st["intervals"] = [{"start_ns": iv["start_ns"], "end_ns": iv["end_ns"], "bytes": iv["bytes"] - 1448,
                        "omitted": False} for iv in st["intervals"]]
    st["receiver"] = {"bytes": 308015832, "start_ns": T_NS, "end_ns": T_NS + 3_044_310_000}
    st["sender"] = {"bytes": 310140416, "retransmits": 217, "max_snd_cwnd": 2244400, "max_snd_wnd": 0,
                    "max_rtt_us": 43960, "min_rtt_us": 38412, "mean_rtt_us": 41401,
                    "start_ns": SRV_NS, "end_ns": SRV_NS + 3_000_187_000}
    result["reverse"] = True
    return result


REV_CMD = client("iperf3 -c 10.0.0.3 -t 3 -R")


def test_tcp_reverse_client_text():
    assert iperf3.client_text(_reverse_result(), REV_CMD, LAB_TCP) == (
        "Connecting to host 10.0.0.3, port 5201\n"
        "Reverse mode, remote host 10.0.0.3 is sending\n"
        "[  5] local 10.0.0.1 port 47136 connected to 10.0.0.3 port 5201\n"
        "[ ID] Interval           Transfer     Bitrate\n"
        "[  5]   0.00-1.00   sec  80.5 MBytes   675 Mbits/sec                  \n"
        "[  5]   1.00-2.00   sec   107 MBytes   900 Mbits/sec                  \n"
        "[  5]   2.00-3.00   sec   108 MBytes   906 Mbits/sec                  \n"
        "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
        "[ ID] Interval           Transfer     Bitrate         Retr\n"
        "[  5]   0.00-3.00   sec   296 MBytes   827 Mbits/sec  217             sender\n"
        "[  5]   0.00-3.04   sec   294 MBytes   809 Mbits/sec                  receiver\n"
        "\n"
        "iperf Done.\n")


def test_tcp_reverse_client_json():
    obj = json.loads(iperf3.client_json(_reverse_result(), REV_CMD, LAB_TCP))
    assert obj["start"]["test_start"]["reverse"] == 1
    iv = obj["intervals"][0]
    assert list(iv["streams"][0]) == ["socket", "start", "end", "seconds", "bytes", "bits_per_second",
                                      "omitted", "sender"]
    assert list(iv["sum"]) == ["start", "end", "seconds", "bytes", "bits_per_second", "omitted", "sender"]
    assert iv["streams"][0]["sender"] is False and iv["sum"]["sender"] is False
    snd = obj["end"]["streams"][0]["sender"]
    # the results exchange carries bytes, retransmits and times only (get_results)
    assert snd == {"socket": 5, "start": 0, "end": 3.000187, "seconds": 3.000187, "bytes": 310140416,
                   "bits_per_second": 310140416 / 3.000187 * 8, "retransmits": 217, "max_snd_cwnd": 0,
                   "max_rtt": 0, "min_rtt": 0, "mean_rtt": 0, "sender": False}
    rcv = obj["end"]["streams"][0]["receiver"]
    assert rcv["end"] == rcv["seconds"] == 3.04431 and rcv["sender"] is False
    assert obj["end"]["sum_sent"]["retransmits"] == 217 and obj["end"]["sum_sent"]["sender"] is False
    assert obj["end"]["sum_received"]["seconds"] == 3.04431


def test_tcp_client_interrupted():
    result = _tcp_result()
    result["interrupted"] = True
    result["streams"][0]["receiver"] = None  # no results exchange happened
    text = iperf3.client_text(result, TCP_CMD, LAB_TCP)
    assert text.endswith(
        "[  5]   0.00-3.00   sec   296 MBytes   827 Mbits/sec  217             sender\n"
        "[  5]   0.00-3.00   sec  0.00 Bytes  0.00 bits/sec                  receiver\n"
        "iperf3: interrupt - the client has terminated\n")
    obj = json.loads(iperf3.client_json(result, TCP_CMD, LAB_TCP))
    assert obj["error"] == "interrupt - the client has terminated"
    assert obj["end"]["sum_received"]["end"] == 3.000187 and obj["end"]["sum_received"]["bytes"] == 0
    assert "receiver_tcp_congestion" not in obj["end"]  # the peer's algorithm comes with the exchange
    assert obj["end"]["sender_tcp_congestion"] == "cubic"


def test_tcp_client_error_and_protocol_checks():
    err = {"error": "unable to connect to server: Connection refused"}
    assert iperf3.client_text(err, TCP_CMD, LAB) == (
        "iperf3: error - unable to connect to server: Connection refused\n")
    assert json.loads(iperf3.client_json(err, TCP_CMD, LAB))["error"].startswith("error - unable")
    with pytest.raises(ValueError, match="sctp"):
        iperf3.client_json(_tcp_result(), dataclasses.replace(TCP_CMD, protocol="sctp"), LAB)
    with pytest.raises(ValueError, match="-R"):
        iperf3.client_text(UDP_RESULT, dataclasses.replace(UDP_CMD, reverse=True), LAB)


# ---------------------------------------------------------------------------
# iperf3 TCP: server side (docs/semantics/formats.md §1.8 server block, §1.6)

SRV_ENDS = [1_000_100_000, 2_000_200_000, 3_000_250_000, 3_044_310_000]
SRV_BYTES = [82_823_000, 111_951_000, 112_196_328, 1_045_504]   # Σ = 308 015 832


def _tcp_server_test(reverse=False, streams=None, complete=True):
    if streams is None:
        starts = [0] + SRV_ENDS[:-1]
        ivs = [{"start_ns": SRV_NS + a, "end_ns": SRV_NS + b, "bytes": n, "omitted": False}
               for a, b, n in zip(starts, SRV_ENDS, SRV_BYTES, strict=True)]
        streams = [{"client_data_port": 47136, "intervals": ivs,
                    "total": {"bytes": sum(SRV_BYTES), "start_ns": SRV_NS, "end_ns": SRV_NS + SRV_ENDS[-1]}}]
    return {"client_ip": "10.0.0.1", "client_ctrl_port": 47134, "client_data_port": 47136,
            "local_ip": "10.0.0.3", "protocol": "tcp", "test_start_ns": SRV_NS, "start_ns": SRV_NS,
            "omit_ns": 0, "streams": streams, "complete": complete, "reverse": reverse,
            "cookie": "x3k2fzq7m4tq5lqj6ycn7vchbq2g2pwe3yrd", "congestion": "cubic",
            "sndbuf_actual": 87380, "rcvbuf_actual": 87380,
            "params": {"num_streams": len(streams), "blksize": 131072, "omit": 0, "duration": 3,
                       "bytes": 0, "blocks": 0, "tos": 0, "rate": 0}}


TCP_BANNER = ("-----------------------------------------------------------\n"
              "Server listening on 5201\n"
              "-----------------------------------------------------------\n")


def test_tcp_server_text_handout_block():
    result = {"port": 5201, "start_ns": 0, "interrupted": False, "tests": [_tcp_server_test()]}
    assert iperf3.server_text(result, LAB) == (
        TCP_BANNER
        + "Accepted connection from 10.0.0.1, port 47134\n"
        "[  5] local 10.0.0.3 port 5201 connected to 10.0.0.1 port 47136\n"
        "[ ID] Interval           Transfer     Bitrate\n"
        "[  5]   0.00-1.00   sec  79.0 MBytes   663 Mbits/sec                  \n"
        "[  5]   1.00-2.00   sec   107 MBytes   896 Mbits/sec                  \n"
        "[  5]   2.00-3.00   sec   107 MBytes   898 Mbits/sec                  \n"
        "[  5]   3.00-3.04   sec  1021 KBytes   190 Mbits/sec                  \n"
        "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
        "[ ID] Interval           Transfer     Bitrate\n"
        "[  5]   0.00-3.04   sec   294 MBytes   809 Mbits/sec                  receiver\n"
        + TCP_BANNER)


def test_tcp_server_short_empty_final_interval_dropped_and_interrupt():
    test = _tcp_server_test(complete=False)
    test["streams"][0]["intervals"][-1]["bytes"] = 0
    test["streams"][0]["total"] = None  # cut by Ctrl-C: summarised from the intervals
    result = {"port": 5201, "start_ns": 0, "interrupted": True, "tests": [test]}
    text = iperf3.server_text(result, LAB)
    assert "3.00-3.04" not in text.split("- - -")[0]
    assert text.endswith("[  5]   0.00-3.04   sec   293 MBytes   807 Mbits/sec                  receiver\n"
                         "iperf3: interrupt - the server has terminated\n")
    obj = json.loads(iperf3.server_json(result, LAB))
    assert obj["error"] == "interrupt - the server has terminated" and len(obj["intervals"]) == 3


def test_tcp_server_json_mirror_image():
    result = {"port": 5201, "start_ns": 0, "interrupted": False, "tests": [_tcp_server_test()]}
    doc = iperf3.server_json(result, LAB_TCP)
    obj = json.loads(doc)
    assert list(obj["start"]) == [
        "connected", "version", "system_info", "sock_bufsize", "sndbuf_actual", "rcvbuf_actual",
        "timestamp", "accepted_connection", "cookie", "tcp_mss_default", "test_start"]
    assert obj["start"]["tcp_mss_default"] == 0 and obj["start"]["test_start"]["protocol"] == "TCP"
    assert obj["start"]["connected"] == [{"socket": 5, "local_host": "10.0.0.3", "local_port": 5201,
                                          "remote_host": "10.0.0.1", "remote_port": 47136}]
    assert len(obj["intervals"]) == 4
    iv = obj["intervals"][3]
    assert list(iv["streams"][0]) == ["socket", "start", "end", "seconds", "bytes", "bits_per_second",
                                      "omitted", "sender"]
    assert iv["streams"][0]["sender"] is False and iv["sum"]["seconds"] == iperf3.float32(0.04406)
    end = obj["end"]
    # printed at TEST_END, before the results exchange: sender_time falls back to receiver_time
    assert end["streams"][0]["sender"] == {"socket": 5, "start": 0, "end": 3.04431, "seconds": 3.04431,
                                           "bytes": 0, "bits_per_second": 0, "sender": False}
    assert end["streams"][0]["receiver"]["bytes"] == 308015832
    assert end["sum_sent"] == {"start": 0, "end": 3.04431, "seconds": 3.04431, "bytes": 0,
                               "bits_per_second": 0, "sender": False}
    assert end["sum_received"]["bits_per_second"] == 308015832 / 3.04431 * 8
    assert "sender_tcp_congestion" not in end and end["receiver_tcp_congestion"] == "cubic"
    modern = json.loads(iperf3.server_json(result, MODERN))["start"]
    assert list(modern)[9:11] == ["tcp_mss_default", "target_bitrate"]


def _server_parallel_test():
    streams = []
    for i, port in enumerate((47136, 47138)):
        ivs = []
        a = 0
        for k, b in enumerate(SRV_ENDS):
            ivs.append({"start_ns": SRV_NS + a + 1000 * i, "end_ns": SRV_NS + b + 1000 * i,
                        "bytes": SRV_BYTES[k] // 2, "omitted": False})
            a = b
        streams.append({"client_data_port": port, "intervals": ivs,
                        "total": {"bytes": sum(iv["bytes"] for iv in ivs), "start_ns": SRV_NS,
                                  "end_ns": SRV_NS + SRV_ENDS[-1] + 1000 * i}})
    return _tcp_server_test(streams=streams)


def test_tcp_server_parallel_sum_lines():
    result = {"port": 5201, "start_ns": 0, "interrupted": False, "one_off": True,
              "tests": [_server_parallel_test()]}
    lines = iperf3.server_text(result, LAB).splitlines()
    assert lines[4:6] == ["[  5] local 10.0.0.3 port 5201 connected to 10.0.0.1 port 47136",
                          "[  8] local 10.0.0.3 port 5201 connected to 10.0.0.1 port 47138"]
    assert lines[6:10] == [
        "[ ID] Interval           Transfer     Bitrate",
        "[  5]   0.00-1.00   sec  39.5 MBytes   331 Mbits/sec                  ",
        "[  8]   0.00-1.00   sec  39.5 MBytes   331 Mbits/sec                  ",
        "[SUM]   0.00-1.00   sec  79.0 MBytes   663 Mbits/sec                  "]
    assert lines[10] == "- - - - - - - - - - - - - - - - - - - - - - - - -"
    assert lines[-5:] == [
        "- - - - - - - - - - - - - - - - - - - - - - - - -",
        "[ ID] Interval           Transfer     Bitrate",
        "[  5]   0.00-3.04   sec   147 MBytes   405 Mbits/sec                  receiver",
        "[  8]   0.00-3.04   sec   147 MBytes   405 Mbits/sec                  receiver",
        "[SUM]   0.00-3.04   sec   294 MBytes   809 Mbits/sec                  receiver"]
    obj = json.loads(iperf3.server_json(result, LAB))
    assert [s["socket"] for s in obj["intervals"][0]["streams"]] == [5, 8]
    assert obj["end"]["sum_received"]["bytes"] == sum(b // 2 for b in SRV_BYTES) * 2


def test_tcp_server_reverse_sends():
    streams = [{"client_data_port": 47136,
                "intervals": [_tcp_iv(SRV_NS + a, SRV_NS + b, *vals)
                              for a, b, vals in zip([0] + TCP_ENDS[:-1], TCP_ENDS, TCP_IVS, strict=True)],
                "total": {"bytes": 310140416, "retransmits": 217, "max_snd_cwnd": 2244400,
                          "max_snd_wnd": 0, "max_rtt_us": 43960, "min_rtt_us": 38412,
                          "mean_rtt_us": 41401, "start_ns": SRV_NS, "end_ns": SRV_NS + TCP_ENDS[-1]}}]
    test = _tcp_server_test(reverse=True, streams=streams)
    result = {"port": 5201, "start_ns": 0, "interrupted": False, "tests": [test]}
    text = iperf3.server_text(result, LAB)
    body = text.split("port 47136\n")[1]
    assert body.startswith(EXPECTED_TCP_TEXT.split("port 5201\n", 2)[2].split("- - -")[0])
    assert body.endswith(
        "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
        "[ ID] Interval           Transfer     Bitrate         Retr\n"
        "[  5]   0.00-3.00   sec   296 MBytes   827 Mbits/sec  217             sender\n" + TCP_BANNER)
    obj = json.loads(iperf3.server_json(result, LAB))
    assert obj["start"]["test_start"]["reverse"] == 1
    assert obj["intervals"][0]["streams"][0]["snd_cwnd"] == 1856336
    assert obj["intervals"][0]["streams"][0]["sender"] is True
    snd = obj["end"]["streams"][0]["sender"]
    assert snd["mean_rtt"] == 41401 and snd["max_snd_cwnd"] == 2244400 and snd["sender"] is True
    assert obj["end"]["sum_sent"]["retransmits"] == 217
    assert obj["end"]["sender_tcp_congestion"] == "cubic" and "receiver_tcp_congestion" not in obj["end"]


def test_tcp_server_stream_without_port_is_an_error():
    test = _server_parallel_test()
    del test["streams"][1]["client_data_port"]
    with pytest.raises(ValueError, match="client_data_port"):
        iperf3.server_text({"port": 5201, "start_ns": 0, "tests": [test]}, LAB)


# ---------------------------------------------------------------------------
# cJSON printer


def test_cjson_layout():
    doc = {"a": [{"x": 1}, {"y": [1, 2.5]}], "b": {}, "c": "q\"\\\n\x01é", "d": None,
           "e": True, "f": float("nan"), "g": 10631422962, "h": 1e16, "i": -0.0}
    assert cjson.dumps(doc) == (
        '{\n\t"a":\t[{\n\t\t\t"x":\t1\n\t\t}, {\n\t\t\t"y":\t[1, 2.5]\n\t\t}],\n'
        '\t"b":\t{\n\t},\n\t"c":\t"q\\"\\\\\\n\\u0001é",\n\t"d":\tnull,\n\t"e":\ttrue,\n'
        '\t"f":\tnull,\n\t"g":\t10631422962,\n\t"h":\t1e+16,\n\t"i":\t-0\n}\n')
    assert cjson.format_number(0.1) == "0.1"
    assert cjson.format_number(1 / 3) == "0.33333333333333331"
    assert cjson.dumps([]) == "[]\n"


# ---------------------------------------------------------------------------
# ping (docs/semantics/formats.md §2, §11 item 3)


def _ping_result(rtts_us, transmitted=None, last_send_ns=3_004_012_000, dups=(), interrupted=False):
    replies = []
    for i, t in enumerate(rtts_us):
        replies.append({"seq": i + 1, "ttl": 64, "rtt_ns": t * 1000 + 417, "dup": False})
    for seq, t in dups:
        replies.append({"seq": seq, "ttl": 64, "rtt_ns": t * 1000, "dup": True})
    return {"dst": "10.0.0.3", "size": 56,
            "transmitted": len(rtts_us) if transmitted is None else transmitted,
            "start_ns": 0, "last_send_ns": last_send_ns, "replies": replies,
            "interrupted": interrupted}


HANDOUT_PING = (
    "PING 10.0.0.3 (10.0.0.3) 56(84) bytes of data.\n"
    "64 bytes from 10.0.0.3: icmp_seq=1 ttl=64 time=41.3 ms\n"
    "64 bytes from 10.0.0.3: icmp_seq=2 ttl=64 time=20.1 ms\n"
    "64 bytes from 10.0.0.3: icmp_seq=3 ttl=64 time=20.1 ms\n"
    "64 bytes from 10.0.0.3: icmp_seq=4 ttl=64 time=20.1 ms\n"
    "\n"
    "--- 10.0.0.3 ping statistics ---\n"
    "4 packets transmitted, 4 received, 0% packet loss, time 7ms\n"
    "rtt min/avg/max/mdev = 20.080/25.390/41.266/9.166 ms\n"
)


def test_ping_lab_mode_handout_block():
    result = _ping_result([41266, 20107, 20107, 20080])
    assert ping.ping_text(result, "10.0.0.3", LAB) == HANDOUT_PING
    assert ping.ping_exit_status(result) == 0


def test_ping_modern_block():
    result = _ping_result([41266, 20107, 20107, 20080])
    assert ping.ping_text(result, "10.0.0.3", MODERN) == HANDOUT_PING.replace("time 7ms",
                                                                              "time 3004ms")


def test_ping_90_pings_time_bug():
    result = _ping_result([20107] * 90, last_send_ns=89_014_000_000)
    assert ", time 103ms\n" in ping.ping_text(result, "10.0.0.3", LAB)
    assert ", time 89014ms\n" in ping.ping_text(result, "10.0.0.3", MODERN)


def test_ping_time_bands():
    s18 = "s20180629"
    assert ping.triptime_text(29960, s18) == "29.10"
    assert ping.triptime_text(29960, "modern") == "30.0"
    assert ping.triptime_text(29960, "s20161105") == "29.9"
    assert ping.triptime_text(1996, s18) == "1.100"
    assert ping.triptime_text(1996, "modern") == "2.00"
    assert ping.triptime_text(99960, s18) == "99.10"
    assert ping.triptime_text(99960, "modern") == "100"
    assert ping.triptime_text(99960, "s20190709") == "100.0"
    assert ping.triptime_text(869, s18) == "0.869"
    assert ping.triptime_text(123456, s18) == "123"
    assert ping.triptime_text(41266, s18) == "41.3"
    with pytest.raises(ValueError):
        ping.triptime_text(1, "busybox")


def test_ping_29_10_line():
    result = _ping_result([20107] * 86 + [29960])
    text = ping.ping_text(result, "10.0.0.3", LAB)
    assert "64 bytes from 10.0.0.3: icmp_seq=87 ttl=64 time=29.10 ms\n" in text


def test_llsqrt_is_iputils_newton():
    assert ping.llsqrt(84015913) == 9166
    assert ping.llsqrt(8) == 3  # a+1 a perfect square: returns sqrt(a+1), as iputils does
    assert ping.llsqrt(15) == 4
    assert ping.llsqrt(16) == 4
    assert ping.llsqrt(0) == 0
    for a in range(1, 2000):
        r = ping.llsqrt(a)
        assert r == math.isqrt(a) or (r * r == a + 1)


def test_ping_no_replies():
    result = _ping_result([], transmitted=3, last_send_ns=2_002_600_000)
    result["dst"] = "10.0.0.9"
    expected = (
        "PING 10.0.0.9 (10.0.0.9) 56(84) bytes of data.\n"
        "\n"
        "--- 10.0.0.9 ping statistics ---\n"
        "3 packets transmitted, 0 received, 100% packet loss, time 2003ms\n"
        "\n"
    )
    assert ping.ping_text(result, "10.0.0.9", MODERN) == expected
    assert ping.ping_text(result, "10.0.0.9", LAB) == expected.replace("2003ms", "5ms")
    assert ping.ping_exit_status(result) == 1


def test_ping_duplicates():
    result = _ping_result([20107, 20080], last_send_ns=1_001_000_000, dups=[(1, 20500)])
    text = ping.ping_text(result, "h3", LAB)
    assert text.startswith("PING h3 (10.0.0.3) 56(84) bytes of data.\n")
    assert "64 bytes from 10.0.0.3: icmp_seq=1 ttl=64 time=20.5 ms (DUP!)\n" in text
    # lab2019 elapsed-time bug: 1.001 s -> (1000*1 + 1000 + 500) / 1000 = 2
    assert "2 packets transmitted, 2 received, +1 duplicates, 0% packet loss, time 2ms\n" in text
    rtts = [20107, 20080, 20500]
    avg = sum(rtts) // 3
    mdev = math.isqrt(sum(t * t for t in rtts) // 3 - avg * avg)
    assert text.endswith("rtt min/avg/max/mdev = 20.080/%d.%03d/20.500/0.%03d ms\n"
                         % (avg // 1000, avg % 1000, mdev))
    assert ping.ping_exit_status(result) == 0


def test_ping_interrupted_and_loss_percent():
    result = _ping_result([20107] * 8, transmitted=9, last_send_ns=8_000_900_000,
                          interrupted=True)
    text = ping.ping_text(result, "10.0.0.3", MODERN)
    assert "ttl=64 time=20.1 ms\n^C\n--- 10.0.0.3 ping statistics ---\n" in text
    assert "9 packets transmitted, 8 received, 11.1111% packet loss, time 8001ms\n" in text
    old = dataclasses.replace(LAB, ping_style="s20161105")
    assert ", 11% packet loss, time 8000ms\n" in ping.ping_text(result, "10.0.0.3", old)


def test_ping_quiet_and_exit_with_deadline():
    result = _ping_result([20107, 20080])
    text = ping.ping_text(result, "10.0.0.3", LAB, quiet=True)
    assert "bytes from" not in text
    assert text.startswith("PING 10.0.0.3 (10.0.0.3) 56(84) bytes of data.\n\n--- ")
    assert ping.ping_exit_status(dict(result, deadline_ns=5_000_000_000, count=3)) == 1
    assert ping.ping_exit_status(dict(result, deadline_ns=5_000_000_000, count=2)) == 0


# ---------------------------------------------------------------------------
# tc (docs/semantics/formats.md §3, §11 item 4; docs/semantics/qdiscs.md E3-E6)


def _stats(nbytes=0, packets=0, drops=0, overlimits=0, backlog=0, qlen=0, requeues=0):
    return {"bytes": nbytes, "packets": packets, "drops": drops, "overlimits": overlimits,
            "requeues": requeues, "backlog": backlog, "qlen": qlen}


def _netem(handle, latency=0, loss=0, stats=None, parent=None):
    return {"kind": "netem", "handle": handle, "parent": parent, "anonymous": False,
            "options": {"limit": 1000, "latency": latency, "jitter": 0,
                        "loss": {"model": "random", "p": loss}, "gap": 0, "duplicate": 0,
                        "correlation": None, "reorder": None, "corrupt": None, "rate": None,
                        "ecn": None, "slot": None, "distribution": None},
            "stats": stats or _stats()}


def _tbf(handle, parent, rate, burst, limit, stats=None):
    return {"kind": "tbf", "handle": handle, "parent": parent, "anonymous": False,
            "options": {"rate": rate, "burst": burst, "limit": limit, "peakrate": None,
                        "mtu": None, "mpu": 0, "overhead": 0, "atm": False},
            "stats": stats or _stats()}


def test_tc_sizes_rates_times():
    assert tc_util.sprint_size(26214400) == "25Mb"
    assert tc_util.sprint_size(2621440) == "2560Kb"
    assert tc_util.sprint_size(2184533) == "2184533b"
    assert tc_util.sprint_size(500000) == "500000b"
    assert tc_util.sprint_size(10240) == "10Kb"
    assert tc_util.sprint_size(409600) == "400Kb"
    assert tc_util.sprint_size(1048600) == "1Mb"
    assert tc_util.sprint_size(0) == "0b"
    assert tc_util.sprint_rate(125_000_000) == "1Gbit"
    assert tc_util.sprint_rate(12_500_000) == "100Mbit"
    assert tc_util.sprint_rate(1_000_000) == "8Mbit"
    assert tc_util.sprint_rate(112_500) == "900Kbit"
    assert tc_util.sprint_rate(1_234_567 // 8 + 1) == "1234Kbit"
    assert tc_util.sprint_rate(100) == "800bit"
    assert tc_util.sprint_time(20000, False) == "20.0ms"
    assert tc_util.sprint_time(20000, True) == "20ms"
    assert tc_util.sprint_time(205715.2, False) == "205.7ms"
    assert tc_util.sprint_time(2093152, True) == "2.09s"
    assert tc_util.sprint_time(999, False) == "999us"
    assert tc_util.sprint_percent(429497) == "0.01%"
    assert tc_util.sprint_percent(4294967295) == "100%"


@pytest.mark.parametrize("rate,burst,limit,lab,modern", [
    (125_000_000, 500000, 26214400, "lat 205.7ms ", "lat 206ms "),     # E3
    (125_000_000, 500000, 160000, "limit 160000b ", "limit 160000b "),  # E4
    (125_000_000, 500000, 2621440, "lat 17.0ms ", "lat 17ms "),         # E4
    (125_000_000, 500000, 2500000, "lat 16.0ms ", "lat 16ms "),         # E4 (Lab 7)
    (12_500_000, 50000, 26214400, "lat 2.1s ", "lat 2.09s "),           # E5
    (1_000_000, 10240, 204800, "lat 194.6ms ", "lat 195ms "),           # E6
])
def test_tbf_lat_or_limit(rate, burst, limit, lab, modern):
    block = _tbf(1, None, rate, burst, limit)
    head = "qdisc tbf 1: root refcnt 2 rate %s burst %s " % (tc_util.sprint_rate(rate),
                                                           tc_util.sprint_size(burst))
    assert tc_show_text([block], LAB, stats=False) == head + lab + "\n"
    assert tc_show_text([block], MODERN, stats=False) == head + modern + "\n"


def test_tbf_latency_value():
    assert tbf_latency_us({"rate": 125_000_000, "burst": 500000, "limit": 26214400},
                             False) == pytest.approx(205715.2)
    assert tbf_latency_us({"rate": 125_000_000, "burst": 500000, "limit": 160000},
                             True) == pytest.approx(-2720.0)


def test_lab14_rendering():
    blocks = [
        _netem(1, latency=20_000_000, stats=_stats(93145838, 61547, 322)),
        _tbf(2, [1, 0], 125_000_000, 500000, 160000, _stats(93145838, 61547, 322, 5104)),
        {"kind": "bfifo", "handle": 0, "parent": [2, 1], "anonymous": True,
         "options": {"limit": 160000}, "stats": _stats()},
    ]
    expected = (
        "qdisc netem 1: root refcnt 2 limit 1000 delay 20.0ms\n"
        " Sent 93145838 bytes 61547 pkt (dropped 322, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "qdisc tbf 2: parent 1: rate 1Gbit burst 500000b limit 160000b \n"
        " Sent 93145838 bytes 61547 pkt (dropped 322, overlimits 5104 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
    )
    assert tc_show_text(blocks, LAB) == expected
    assert tc_show_text(json.dumps(blocks), LAB) == expected
    invisible = tc_show_text(blocks, LAB, invisible=True)
    assert invisible == expected + (
        "qdisc bfifo 0: parent 2:1 limit 160000b\n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n")
    modern = tc_show_text(blocks, MODERN, stats=False)
    assert modern == ("qdisc netem 1: root refcnt 2 limit 1000 delay 20ms\n"
                      "qdisc tbf 2: parent 1: rate 1Gbit burst 500000b limit 160000b \n")


def test_lab16_rendering():
    blocks = [
        _tbf(1, None, 125_000_000, 500000, 26214400,
             _stats(10631422962, 7023452, 1843, 2411233)),
        {"kind": "red", "handle": 2, "parent": [1, 0], "anonymous": False,
         "options": {"limit": 26214400, "min": 2184533, "max": 8738133, "ecn": False,
                     "harddrop": False, "adaptive": True, "nodrop": False, "wlog": 13,
                     "plog": 22, "scell_log": 13, "max_p": 85899345},
         "stats": _stats(10631422962, 7023452, 1843, 1843),
         "xstats": {"marked": 0, "early": 1843, "pdrop": 0, "other": 0}},
    ]
    expected = (
        "qdisc tbf 1: root refcnt 2 rate 1Gbit burst 500000b lat 205.7ms \n"
        " Sent 10631422962 bytes 7023452 pkt (dropped 1843, overlimits 2411233 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "qdisc red 2: parent 1: limit 25Mb min 2184533b max 8738133b adaptive \n"
        " Sent 10631422962 bytes 7023452 pkt (dropped 1843, overlimits 1843 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  marked 0 early 1843 pdrop 0 other 0\n"
    )
    assert tc_show_text(blocks, LAB) == expected
    modern = tc_show_text(blocks, MODERN)
    assert "  marked 0 early 1843 pdrop 0 other 0 \n" in modern
    detailed = tc_show_text(blocks, LAB, stats=False, details=True)
    assert detailed.splitlines()[1] == ("qdisc red 2: parent 1: limit 25Mb min 2184533b max 8738133b "
                                        "adaptive ewma 13 probability 0.02 Scell_log 13")
    changed = [_tbf(1, None, 12_500_000, 50000, 26214400)] + blocks[1:]
    assert tc_show_text(changed, LAB, stats=False).splitlines()[0] == (
        "qdisc tbf 1: root refcnt 2 rate 100Mbit burst 50000b lat 2.1s ")
    s1 = tc_show_text([_netem(0x8001, latency=20_000_000)], LAB, stats=False)
    assert s1 == "qdisc netem 8001: root refcnt 2 limit 1000 delay 20.0ms\n"


def test_lab7_rendering():
    before = tc_show_text([_netem(1, loss=429497)], LAB, stats=False)
    assert before == "qdisc netem 1: root refcnt 2 limit 1000 loss 0.01%\n"
    blocks = [_netem(1, latency=30_000_000, loss=429497),
              _tbf(2, [1, 0], 125_000_000, 500000, 2500000)]
    assert tc_show_text(blocks, LAB, stats=False) == (
        "qdisc netem 1: root refcnt 2 limit 1000 delay 30.0ms loss 0.01%\n"
        "qdisc tbf 2: parent 1: rate 1Gbit burst 500000b lat 16.0ms \n")


def test_diffserv_rendering():
    blocks = [_tbf(1, None, 1_000_000, 10240, 204800),
              {"kind": "red", "handle": 0x8001, "parent": [1, 0], "anonymous": False,
               "options": {"limit": 409600, "qth_min": 16384, "qth_max": 32768},
               "stats": _stats()}]
    assert tc_show_text(blocks, LAB, stats=False) == (
        "qdisc tbf 1: root refcnt 2 rate 8Mbit burst 10Kb lat 194.6ms \n"
        "qdisc red 8001: parent 1: limit 400Kb min 16Kb max 32Kb \n")


def test_cpm_red_and_blue_rendering():
    coeff = {"classes": [{"key": 0x32, "num": 5, "den": 10}, {"key": 0x46, "num": 7, "den": 10}],
             "default": [9, 10], "match_dscp": False}
    red = {"kind": "red", "handle": 0x8001, "parent": [1, 0], "anonymous": False,
           "options": {"limit": 409600, "qth_min": 16384, "qth_max": 32768, "wlog": 1, "plog": 17,
                       "scell_log": 11, "max_p": 858993459, "dscp_coeff": coeff},
           "stats": _stats(),
           "xstats": {"marked": 0, "early": 7, "pdrop": 0, "other": 0,
                      "classes": [{"key": "0x32", "passed": 5, "marked": 0, "early": 1, "pdrop": 0},
                                  {"key": "0x46", "passed": 4, "marked": 0, "early": 2, "pdrop": 0},
                                  {"key": "default", "passed": 3, "marked": 0, "early": 4, "pdrop": 0}]}}
    text = tc_show_text([red], LAB)
    assert text.splitlines()[0] == (
        "qdisc red 8001: parent 1: limit 400Kb min 16Kb max 32Kb dscp-coeff 0x32:0.5,0x46:0.7,default:0.9 ")
    assert text.endswith("  marked 0 early 7 pdrop 0 other 0\n"
                         "  class 0x32 passed 5 marked 0 early 1 pdrop 0\n"
                         "  class 0x46 passed 4 marked 0 early 2 pdrop 0\n"
                         "  class default passed 3 marked 0 early 4 pdrop 0\n")
    assert tc_show_text([red], LAB, stats=False, details=True) == (
        "qdisc red 8001: parent 1: limit 400Kb min 16Kb max 32Kb ewma 1 probability 0.2 Scell_log 11 "
        "dscp-coeff 0x32:0.5,0x46:0.7,default:0.9 \n")
    blue = {"kind": "blue", "handle": 2, "parent": [1, 0], "anonymous": False,
            "options": {"limit": 1000, "increment": 10737418, "decrement": 1073742,
                        "freeze_inc": 100_000_000, "freeze_dec": 100_000_000, "shared": True,
                        "qthresh": None, "ecn": True, "dscp_coeff": None},
            "stats": _stats(),
            "xstats": {"pmark": 0.0025, "early": 3, "overflow": 1, "marked": 2}}
    assert tc_show_text([blue], LAB) == (
        "qdisc blue 2: parent 1: limit 1000p increment 0.0025 decrement 0.00025 freeze 100.0ms ecn \n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  pmark 0.0025 early 3 overflow 1 marked 2\n")


def test_tc_default_and_fifo_kinds():
    noq = {"kind": "noqueue", "handle": 0, "parent": None, "anonymous": False,
           "options": {"kind": "noqueue"}, "stats": _stats()}
    assert tc_show_text([noq], LAB) == (
        "qdisc noqueue 0: root refcnt 2 \n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n")
    pfifo = {"kind": "pfifo", "handle": 1, "parent": None, "options": {"limit": None},
             "stats": _stats(backlog=3028, qlen=2, drops=1)}
    assert tc_show_text([pfifo], LAB) == (
        "qdisc pfifo 1: root refcnt 2 limit 1000p\n"
        " Sent 0 bytes 0 pkt (dropped 1, overlimits 0 requeues 0) \n"
        " backlog 3028b 2p requeues 0\n")
    bfifo = {"kind": "bfifo", "handle": 3, "parent": [1, 1], "options": {"limit": 26214400},
             "stats": _stats(backlog=2621440, qlen=1731)}
    assert tc_show_text([bfifo], LAB).splitlines() == [
        "qdisc bfifo 3: parent 1:1 limit 25Mb",
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) ",
        " backlog 2560Kb 1731p requeues 0"]
    fast = {"kind": "pfifo_fast", "handle": 0, "parent": None, "options": {}, "stats": _stats()}
    assert tc_show_text([fast], LAB, stats=False) == (
        "qdisc pfifo_fast 0: root refcnt 2 bands 3 priomap  1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1\n")


def test_netem_option_text():
    block = _netem(1, latency=100_000_000)
    opts = block["options"]
    opts.update(jitter=10_000_000, correlation={"delay": 1073741824, "loss": 0, "duplicate": 0},
                duplicate=42949673, reorder={"p": 1073741824, "corr": 0}, gap=1,
                rate={"rate": 1_000_000, "packet_overhead": -14, "cell_size": 0,
                      "cell_overhead": 0}, ecn=True, loss={"model": "random", "p": 42949673})
    assert tc_show_text([block], LAB, stats=False) == (
        "qdisc netem 1: root refcnt 2 limit 1000 delay 100.0ms  10.0ms 25% loss 1%"
        " duplicate 1% reorder 25% rate 8Mbit packetoverhead -14 ecn  gap 1\n")
    assert tc_show_text([block], MODERN, stats=False) == (
        "qdisc netem 1: root refcnt 2 limit 1000 delay 100ms  10ms 25% loss 1%"
        " duplicate 1% reorder 25% rate 8Mbit packetoverhead -14 ecn  gap 1\n")
    # lab2019: 1.1 ms was quantised by tc to 17187 ticks = 1 099 968 ns → 1099 µs
    assert "delay 1.1ms" in tc_show_text([_netem(1, latency=1_099_968)], LAB, stats=False)
    gi = _netem(1)
    gi["options"]["loss"] = {"model": "gemodel", "p": 42949673, "r": 4252017622,
                             "h": 0, "k1": 0}
    assert "loss gemodel p 1% r 99% 1-h 100% 1-k 0%" in tc_show_text([gi], LAB, stats=False)


def test_tc_unknown_kind_is_an_error():
    block = {"kind": "choke", "handle": 1, "parent": None, "options": {}, "stats": _stats()}
    with pytest.raises(ValueError, match="choke"):
        tc_show_text([block], LAB)


# ---------------------------------------------------------------------------
# plot_q.sh data file (docs/semantics/formats.md §6)


def test_q_dat():
    samples = [[1_100_000_000, 1_048_600, 5], [1_250_000_000, 2_621_440, 1731],
               [1_300_000_400, 0, 0], [2_000_000_000, 26_214_400, 17314]]
    assert queue.q_dat(samples, 1_000_000_000) == (
        "0.100 1048576\n0.250 2621440\n0.300 0\n1.000 26214400\n")
    assert queue.parse_size("2184533b") == 2184533


def test_tc_codel_and_fq_codel_blocks():
    codel = {"kind": "codel", "handle": 3, "parent": [2, 0],
             "options": {"limit": 1000, "target": 4999, "interval": 99999, "ce_threshold": None,
                         "ecn": False},
             "stats": _stats(1514, 1, 2, 0, 3028, 2),
             "xstats": {"count": 3, "lastcount": 1, "ldelay": 7200, "dropping": True, "drop_next": 31500,
                        "maxpacket": 1514, "ecn_mark": 0, "drop_overlimit": 0, "ce_mark": 0}}
    text = tc_show_text([codel], LAB)
    assert text.startswith("qdisc codel 3: parent 2: limit 1000p target 5.0ms interval 100.0ms \n")
    assert text.endswith(
        "  count 3 lastcount 1 ldelay 7.2ms dropping drop_next 31.5ms\n"
        "  maxpacket 1514 ecn_mark 0 drop_overlimit 0\n")
    fq = {"kind": "fq_codel", "handle": 3, "parent": [2, 0],
          "options": {"limit": 10240, "flows": 1024, "quantum": 1514, "target": 4999, "interval": 99999,
                      "ce_threshold": None, "memory_limit": 33554432, "ecn": True, "drop_batch": 64},
          "stats": _stats(),
          "xstats": {"maxpacket": 1514, "drop_overlimit": 0, "new_flow_count": 2, "ecn_mark": 1,
                     "ce_mark": 0, "memory_used": 0, "drop_overmemory": 0, "new_flows_len": 0,
                     "old_flows_len": 1}}
    head = ("qdisc fq_codel 3: parent 2: limit 10240p flows 1024 quantum 1514 target 5.0ms "
            "interval 100.0ms memory_limit 32Mb ecn ")
    assert tc_show_text([fq], LAB).startswith(head + "\n")
    assert tc_show_text([fq], MODERN).startswith(
        "qdisc fq_codel 3: parent 2: limit 10240p flows 1024 quantum 1514 target 5ms "
        "interval 100ms memory_limit 32Mb ecn drop_batch 64 \n")
    assert tc_show_text([fq], LAB).endswith(
        "  maxpacket 1514 drop_overlimit 0 new_flow_count 2 ecn_mark 1 memory_used 0 drop_overmemory 0\n"
        "  new_flows_len 0 old_flows_len 1\n")


def test_tc_pie_block():
    pie = {"kind": "pie", "handle": 3, "parent": [2, 0],
           "options": {"limit": 1000, "target": 15000, "tupdate": 16000, "alpha": 2, "beta": 20,
                       "ecn": False, "bytemode": False, "dq_rate_estimator": True},
           "stats": _stats(),
           "xstats": {"prob": 0.0125, "delay": 14200, "avg_dq_rate": 1250000, "packets_in": 10,
                      "overlimit": 0, "dropped": 2, "maxq": 7, "ecn_mark": 0}}
    text = tc_show_text([pie], LAB)
    assert text.startswith(
        "qdisc pie 3: parent 2: limit 1000p target 15.0ms tupdate 16.0ms alpha 2 beta 20 "
        "dq_rate_estimator \n")
    assert text.endswith(
        "  prob 0.0125 delay 14.2ms avg_dq_rate 1250000\n"
        "  pkts_in 10 overlimit 0 dropped 2 maxq 7 ecn_mark 0\n")
