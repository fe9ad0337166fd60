"""Flent's tests as data, the tools' output formats, the data file of a flent run and the native
plots (docs/semantics/formats.md §7, §12–15; docs/flent.md).

Run: python -m pytest -q tests/test_flent_native.py
"""

from __future__ import annotations

import gzip
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlab.commands.flent_tests import MARKINGS, TESTS, FlentTestError, Glob, build_test, tos_of
from bufferlab.formats import fping as fpf
from bufferlab.formats import http as hf
from bufferlab.formats import irtt as irf
from bufferlab.formats import netperf as nf
from bufferlab.outputs import flent_run as fr
from bufferlab.outputs.flent_plots import FlentPlotError, draw_plot, supported_plots

EPOCH = 1_700_000_000.0


# --------------------------------------------------------------------- test definitions (flent/tests/*.conf)


def test_rrul_has_flents_eight_flows_their_markings_and_probes() -> None:
    t = build_test("rrul", ["10.0.0.2"], 60)
    measured = {d.name: d for d in t.measured()}
    assert [n for n in measured if n.startswith("TCP upload")] == [
        "TCP upload BE",
        "TCP upload BK",
        "TCP upload CS5",
        "TCP upload EF",
    ]
    assert [n for n in measured if n.startswith("TCP download")] == [
        "TCP download BE",
        "TCP download BK",
        "TCP download CS5",
        "TCP download EF",
    ]
    tos = {n: tos_of(d.marking) for n, d in measured.items()}
    assert (tos["TCP upload BE"], tos["TCP upload BK"], tos["TCP upload CS5"], tos["TCP upload EF"]) == (
        0x00,
        0x20,
        0xA0,
        0xB8,
    )
    assert tos["TCP download EF"] == 0xB8 and tos["Ping (ms) UDP EF"] == 0xB8 and tos["Ping (ms) UDP BE"] == 0
    assert {measured[n].test for n in measured if n.startswith("TCP upload")} == {"TCP_STREAM"}
    assert {measured[n].test for n in measured if n.startswith("TCP download")} == {"TCP_MAERTS"}
    assert [n for n in measured if n.startswith("Ping")] == [
        "Ping (ms) UDP EF",
        "Ping (ms) UDP BK",
        "Ping (ms) UDP BE",
        "Ping (ms) ICMP",
    ]
    # probes run the whole test from 0, loads after DELAY for LENGTH
    icmp, up = measured["Ping (ms) ICMP"], measured["TCP upload BE"]
    assert (t.start_s(icmp), t.length_s(icmp), t.start_s(up), t.length_s(up)) == (0, 70, 5, 60)
    assert (
        measured["Ping (ms) UDP EF"].id == "10.0.0.2 UDP EF"
        and measured["Ping (ms) ICMP"].id == "10.0.0.2 ICMP"
    )
    assert t.default_plot == "all_scaled" and t.plots["all_scaled"].subplots == (
        "download_scaled",
        "upload_scaled",
        "ping_scaled",
    )


def test_tests_follow_their_conf_files() -> None:
    cs8 = build_test("rrul_cs8", ["10.0.0.2"])
    ups = [d for d in cs8.measured() if d.test == "TCP_STREAM"]
    assert [tos_of(d.marking) for d in ups] == [MARKINGS[f"CS{k}"] for k in range(8)]
    smack = build_test("cubic_bbr", ["10.0.0.2"])
    assert [(d.name, d.cc) for d in smack.measured() if d.test == "TCP_STREAM"] == [
        ("TCP upload Cubic BE", "cubic"),
        ("TCP upload BBR BE", "bbr"),
        ("TCP upload Cubic CS1", "cubic"),
        ("TCP upload BBR CS1", "bbr"),
    ]
    nup = build_test("tcp_nup", ["10.0.0.2"], params={"upload_streams": "3", "cc_algos": "reno,cubic"})
    streams = [d for d in nup.measured() if d.runner == "netperf"]
    assert [(d.name, d.cc, d.id) for d in streams] == [
        ("TCP upload::1", "reno", "1"),
        ("TCP upload::2", "cubic", "2"),
        ("TCP upload::3", None, "3"),
    ]
    assert nup.parameters == {"upload_streams": "3", "cc_algos": "reno,cubic"}
    fair = build_test("rtt_fair", ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"])
    assert [d.name for d in fair.measured() if d.runner == "netperf"][:2] == [
        "TCP upload BE1 10.0.0.2",
        "TCP download BE1 10.0.0.2",
    ]
    assert [tos_of(d.marking) for d in fair.measured() if d.test == "TCP_STREAM"] == [0, 0, 0x20, 0x20]
    ping = build_test("ping", ["10.0.0.2"], 30)
    assert (ping.total_length, ping.delay) == (30, 0)
    voip = build_test("voip", ["10.0.0.2"], 30)
    assert (voip.data_sets["VoIP"].interval, voip.data_sets["VoIP"].size) == (0.02, 172)
    flood = build_test("udp_flood", ["10.0.0.2"], params={"udp_bandwidth": "5M"})
    assert flood.data_sets["UDP upload"].bandwidth == "5M"


def test_missing_parameters_and_hosts_are_flents_errors() -> None:
    with pytest.raises(FlentTestError, match="Missing required test parameter: upload_streams"):
        build_test("tcp_nup", ["10.0.0.2"])
    with pytest.raises(FlentTestError, match="Need 4 hosts, only 1 specified"):
        build_test("rtt_fair", ["10.0.0.2"])
    with pytest.raises(FlentTestError, match="Invalid marking: XX"):
        tos_of("XX")


def test_globs_do_not_cross_double_colons() -> None:
    names = ["TCP upload::1", "TCP upload avg", "TCP upload sum"]
    assert Glob("TCP upload*", ("TCP upload sum",)).expand(names) == ["TCP upload avg"]
    assert Glob("TCP upload::*").expand(names) == ["TCP upload::1"]
    assert Glob("TCP**").expand(names) == names


def test_every_test_builds_and_its_default_plot_is_drawable() -> None:
    hosts = [f"10.0.0.{k}" for k in range(2, 8)]
    for name in TESTS:
        t = build_test(name, hosts, 10, params={"upload_streams": "2", "download_streams": "2"})
        assert t.measured(), name
        assert t.default_plot in t.plots, name
        assert supported_plots(t), name


# --------------------------------------------------------------------- output formats


def test_netperf_demo_lines_follow_demo_interval_display() -> None:
    text = nf.interim_keyval(3, 9.4567, "m", 0.2004, 1700000000.2345678)
    assert text == (
        "NETPERF_INTERIM_RESULT[3]=9.46\nNETPERF_UNITS[3]=10^6bits/s\n"
        "NETPERF_INTERVAL[3]=0.200\nNETPERF_ENDING[3]=1700000000.234\n"
    )
    assert nf.interim_human(9.4567, "m", 0.2004, 1700000000.2345678) == (
        "Interim result:    9.46 10^6bits/s over 0.200 seconds ending at 1700000000.234\n"
    )
    assert nf.throughput(1_250_000, 1.0, "m") == 10.0 and nf.throughput(1024 * 1024, 1.0, "M") == 1.0


def _netperf_result(test: str = "TCP_STREAM") -> nf.NetperfResult:
    return nf.NetperfResult(
        test,
        "m",
        10.0,
        9.39,
        "TCP",
        "Send",
        16384,
        87380,
        16384,
        87380,
        11739136,
        0,
        0,
        11739136,
        16384,
        87380,
        16384,
        87380,
        transport_mss=1448,
        local_retrans=3,
        remote_retrans=0,
        local_tos=0x20,
        remote_tos=0x20,
        local_cc="cubic",
        remote_cc="cubic",
    )


def test_netperf_keyval_and_human_report_follow_nettest_omni() -> None:
    r = _netperf_result()
    assert nf.final_keyval(
        r,
        [
            "THROUGHPUT",
            "LOCAL_CONG_CONTROL",
            "LOCAL_SOCKET_TOS",
            "ELAPSED_TIME",
            "LOCAL_BYTES_SENT",
            "TRANSPORT_MSS",
        ],
    ) == (
        "THROUGHPUT=9.39\nLOCAL_CONG_CONTROL=cubic\nLOCAL_SOCKET_TOS=0x20\nELAPSED_TIME=10.00\n"
        "LOCAL_BYTES_SENT=11739136\nTRANSPORT_MSS=1448\n"
    )
    assert nf.banner("TCP_STREAM", "10.0.0.2", "10.0.0.2") == (
        "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET "
        "to 10.0.0.2 () port 0 AF_INET : demo\n"
    )
    assert nf.human_report(r).splitlines()[-1] == " 87380  16384  16384    10.00       9.39   "
    rr = nf.NetperfResult(
        "TCP_RR", "x", 10.0, 4321.5, "TCP", "Send|Recv", 1, 1, 1, 1, 0, 0, 0, 0, 16384, 87380, 16384, 87380
    )
    assert nf.human_report(rr).splitlines()[-2:] == [
        "16384  87380  1        1       10.00    4321.50   ",
        "16384  87380 ",
    ]


def test_netperf_demo_output_parses_as_flent_parses_it() -> None:
    text = "".join(
        nf.interim_keyval(k, 10.0 + k, "m", d, EPOCH + 0.2 * (k + 1))
        for k, d in enumerate([0.2, 0.2, 5.0, 0.21])
    )
    text += nf.final_keyval(
        _netperf_result(),
        [
            "THROUGHPUT",
            "LOCAL_CONG_CONTROL",
            "REMOTE_CONG_CONTROL",
            "TRANSPORT_MSS",
            "LOCAL_TRANSPORT_RETRANS",
            "LOCAL_SOCKET_TOS",
            "REMOTE_SOCKET_TOS",
            "DIRECTION",
            "ELAPSED_TIME",
            "PROTOCOL",
            "LOCAL_SEND_SIZE",
            "REMOTE_RECV_SIZE",
            "LOCAL_BYTES_SENT",
            "REMOTE_BYTES_RECVD",
        ],
    )
    m = fr.parse_netperf_demo(text, "TCP_STREAM")
    # the 5 s interval is more than ten times the running average: left out, as flent does
    assert [r["val"] for r in m.raw] == [10.0, 11.0, 13.0]
    assert m.meta["MEAN_VALUE"] == 9.39 and m.meta["CONG_CONTROL"] == "cubic" and m.meta["DATA_TOS"] == 0x20
    assert m.meta["TCP_MSS"] == 1448 and m.meta["BYTES_SENT"] == 11739136


def test_fping_lines_follow_wait_for_reply_and_parse_as_flent_parses_them() -> None:
    assert [fpf.sprint_tm(ns) for ns in (456_000, 2_345_000, 23_450_000, 234_500_000)] == [
        "0.456",
        "2.35",
        "23.4",
        "234",
    ]  # %.1f of 23.45 rounds to even in C and Python alike
    result = {
        "start_ns": 0,
        "transmitted": 3,
        "size": 56,
        "replies": [
            {"seq": 1, "rtt_ns": 20_500_000, "dup": False},
            {"seq": 3, "rtt_ns": 21_000_000, "dup": False},
        ],
    }
    out, err = fpf.fping_text(
        result,
        "10.0.0.2",
        period_ns=200_000_000,
        timeout_ns=500_000_000,
        end_ns=2_000_000_000,
        timestamps=True,
        epoch_s=EPOCH,
    )
    assert out.splitlines() == [
        "[1700000000.02050] 10.0.0.2 : [0], 64 bytes, 20.5 ms (20.5 avg, 0% loss)",
        "[1700000000.42100] 10.0.0.2 : [2], 64 bytes, 21.0 ms (20.8 avg, 33% loss)",
        "[1700000000.70000] 10.0.0.2 : [1], timed out (20.8 avg, 33% loss)",
    ]
    assert err == "\n10.0.0.2 : xmt/rcv/%loss = 3/2/33%, min/avg/max = 20.5/20.8/21.0\n"
    m = fr.parse_ping_lines(out + err)
    assert [(r["seq"], r["val"]) for r in m.raw] == [(0.0, 20.5), (2.0, 21.0)]
    assert m.meta == {"MIN_VALUE": 20.5, "MEAN_VALUE": 20.8, "MAX_VALUE": 21.0}


def _irtt_run() -> irf.IrttRun:
    ms = 1_000_000
    probes = [
        irf.Probe(0, 0, 10 * ms, 21 * ms),
        irf.Probe(1, 200 * ms, 212 * ms, 223 * ms),
        irf.Probe(2, 400 * ms, None, None),
        irf.Probe(3, 600 * ms, 611 * ms, None),
    ]
    return irf.IrttRun(
        "10.0.0.1:40000",
        "10.0.0.2:2112",
        "10.0.0.2",
        800 * ms,
        200 * ms,
        60,
        0xB8,
        0,
        900 * ms,
        EPOCH,
        "h1",
        probes,
        server_received=3,
    )


def test_irtt_json_follows_result_go_and_parses_as_flent_parses_it() -> None:
    text = irf.irtt_json(_irtt_run())
    assert text.startswith('{\n    "version": {\n        "irtt": "0.9.0",')
    doc = json.loads(text)
    assert list(doc) == ["version", "system_info", "config", "stats", "round_trips"]
    stats = doc["stats"]
    assert (stats["packets_sent"], stats["packets_received"], stats["server_packets_received"]) == (4, 2, 3)
    assert stats["rtt"] == {
        "total": 44_000_000,
        "n": 2,
        "min": 21_000_000,
        "max": 23_000_000,
        "mean": 22_000_000,
        "median": 22_000_000,
        "stddev": 1_414_213,
        "variance": 2_000_000_000_000,
    }
    assert stats["packet_loss_percent"] == 50.0 and stats["upstream_loss_percent"] == 25.0
    trips = doc["round_trips"]
    assert [t["lost"] for t in trips] == ["false", "false", "true_up", "true_down"]
    assert trips[1]["delay"] == {"receive": 11_000_000, "rtt": 23_000_000, "send": 12_000_000}
    assert trips[1]["ipdv"] == {"receive": 0, "rtt": 2_000_000, "send": 2_000_000}
    assert trips[0]["timestamps"]["client"]["send"]["wall"] == int(EPOCH * 1e9)
    assert doc["config"]["params"]["dscp"] == 0xB8 and doc["config"]["params"]["length"] == 60
    m = fr.parse_irtt(text)
    assert [(r["seq"], r.get("val")) for r in m.raw] == [(0, 21.0), (1, 23.0), (2, None), (3, None)]
    assert m.meta["MEAN_VALUE"] == 22.0 and m.meta["PACKET_LOSS_RATE"] == 0.5
    assert irf.bitrate_text(2878) == "2.9 Kbps" and irf.bitrate_text(999) == "999 bps"


def test_curl_write_out_follows_our_write_out() -> None:
    values = {
        "time_total": 123_456_789,
        "time_connect": 10_000_500,
        "size_download": 1024,
        "http_code": 200,
        "speed_download": 8294,
    }
    assert hf.write_out("%{time_total}", values) == ("0.123456", "")
    assert hf.write_out(r"%{http_code} %{size_download} %{speed_download}\n", values) == (
        "200 1024 8294\n",
        "",
    )
    assert hf.write_out("%{TIME_CONNECT}%%%x %{nope}", values) == (
        "0.010000%%x ",
        "curl: unknown --write-out variable: 'nope'\n",
    )
    assert hf.write_out("a%{stderr}b", values) == ("a", "b")


def test_http_byte_counts_are_pythons_own() -> None:
    head = hf.response_head("/index.html", 1234, EPOCH)
    assert head.startswith(b"HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6 Python/3.10.12\r\nDate: ")
    assert b"Content-type: text/html\r\nContent-Length: 1234\r\n" in head and head.endswith(b"\r\n\r\n")
    assert hf.request_bytes("10.0.0.1", "/index.html") == len(
        b"GET /index.html HTTP/1.1\r\nHost: 10.0.0.1\r\nUser-Agent: curl/7.81.0\r\nAccept: */*\r\n\r\n"
    )
    head404, body = hf.error_page(404, EPOCH)
    assert head404.startswith(b"HTTP/1.0 404 File not found\r\n") and b"Error code: 404" in body
    assert f"Content-Length: {len(body)}\r\n".encode() in head404
    assert hf.http_log_line("10.0.0.2", "/index.html", 200, EPOCH) == (
        '10.0.0.2 - - [14/Nov/2023 22:13:20] "GET /index.html HTTP/1.1" 200 -\n'
    )


# --------------------------------------------------------------------- a flent run's data file and plots


def _synthetic_run(name: str, hosts: list[str], length: int = 10, **params: str) -> tuple[object, dict]:
    """A run whose tools printed known values: each TCP flow 5 + k Mbit/s, pings 20 ms, UDP 22 ms."""
    t = build_test(name, hosts, length, params=params)
    measured = {}
    for k, ds in enumerate(t.measured()):
        start, span = t.start_s(ds), t.length_s(ds)
        n = round(span / 0.2)
        if ds.runner == "netperf":
            text = "".join(
                nf.interim_keyval(i, 5.0 + k, "m", 0.2, EPOCH + start + 0.2 * (i + 1)) for i in range(n)
            )
            text += f"THROUGHPUT={5.0 + k:.2f}\n"
            measured[ds.name] = fr.parse_netperf_demo(text, ds.test or "")
        elif ds.runner == "ping":
            res = {
                "start_ns": int(start * 1e9),
                "transmitted": n + 1,
                "size": 56,
                "replies": [{"seq": i + 1, "rtt_ns": 20_000_000, "dup": False} for i in range(n + 1)],
            }
            out, err = fpf.fping_text(
                res,
                hosts[ds.host],
                period_ns=200_000_000,
                timeout_ns=10**12,
                end_ns=10**12,
                timestamps=True,
                epoch_s=EPOCH,
            )
            measured[ds.name] = fr.parse_ping_lines(out + err)
        elif ds.runner == "udp_rtt":
            ms = 1_000_000
            probes = [
                irf.Probe(
                    i,
                    int(start * 1e9) + 200 * ms * i,
                    int(start * 1e9) + 200 * ms * i + 11 * ms,
                    int(start * 1e9) + 200 * ms * i + 22 * ms,
                )
                for i in range(n)
            ]
            run = irf.IrttRun(
                "10.0.0.1:40000",
                f"{hosts[0]}:2112",
                hosts[0],
                int(span * 1e9),
                200 * ms,
                60,
                0,
                int(start * 1e9),
                int((start + span) * 1e9),
                EPOCH,
                "h1",
                probes,
                server_received=n,
            )
            measured[ds.name] = fr.parse_irtt(irf.irtt_json(run))
    doc = fr.build_document(
        t, measured, local_host="h1", title="unit test", note="", version="bufferlab test", started_s=EPOCH
    )
    return t, doc


def test_document_series_computed_values_and_metadata() -> None:
    t, doc = _synthetic_run("rrul", ["10.0.0.2"])
    md = doc["metadata"]
    assert (
        md["NAME"] == "rrul" and md["HOST"] == "10.0.0.2" and md["LENGTH"] == 10 and md["TOTAL_LENGTH"] == 20
    )
    assert md["STEP_SIZE"] == 0.2 and md["T0"] == "2023-11-14T22:13:20.020000Z"
    assert md["DATA_FILENAME"] == "rrul-2023-11-14T221320.000000.unit_test.flent.gz"
    assert set(doc["results"]) >= {
        "TCP upload BE",
        "TCP download EF",
        "TCP upload avg",
        "TCP totals",
        "Ping (ms) UDP EF",
        "Ping (ms) ICMP",
        "Ping (ms) avg",
    }
    assert (
        md["SERIES_META"]["TCP upload BE"]["UNITS"] == "Mbits/s"
        and md["SERIES_META"]["Ping (ms) ICMP"]["UNITS"] == "ms"
    )
    x = doc["x_values"]
    assert x[:3] == [0.0, 0.2, 0.4] and len(x) == math.ceil((20.0 - 0.02) / 0.2)
    i = x.index(10.0)
    ups = [doc["results"][f"TCP upload {m}"][i] for m in ("BE", "BK", "CS5", "EF")]
    assert ups == pytest.approx([5.0, 6.0, 7.0, 8.0])
    assert doc["results"]["TCP upload sum"][i] == pytest.approx(26.0)
    assert doc["results"]["TCP upload avg"][i] == pytest.approx(6.5)
    assert doc["results"]["TCP totals"][i] == pytest.approx(26.0 + 42.0)
    assert doc["results"]["Ping (ms) avg"][i] == pytest.approx((22 * 3 + 20) / 4)
    assert md["SERIES_META"]["TCP upload sum"]["MEAN_VALUE"] == pytest.approx(26.0)
    summary = fr.summary_text(doc)
    assert " TCP upload BE    :         5.00         5.00         5.00 Mbits/s" in summary
    assert fr.series_means(doc)["Ping (ms) ICMP"]["mean"] == pytest.approx(20.0)


def test_data_file_loads_in_the_real_flent(tmp_path: Path) -> None:
    pytest.importorskip("flent.resultset", reason="flent is not installed (pip install flent)")
    from flent import resultset

    for name, hosts, params in (
        ("rrul", ["10.0.0.2"], {}),
        ("tcp_nup", ["10.0.0.2"], {"upload_streams": "3"}),
        ("rtt_fair4be", [f"10.0.0.{k}" for k in range(2, 6)], {}),
    ):
        t, doc = _synthetic_run(name, hosts, **params)
        path = fr.write_document(doc, tmp_path / doc["metadata"]["DATA_FILENAME"])
        with gzip.open(path, "rt") as f:
            assert json.load(f) == json.loads(json.dumps(doc))
        r = resultset.load(str(path))
        assert r.meta("NAME") == name and sorted(r.series_names) == sorted(doc["results"])
        assert r.meta("SERIES_META")[t.measured()[0].name]["UNITS"] in ("Mbits/s", "ms")
        png = tmp_path / f"{name}.png"
        plot = "all_scaled" if "all_scaled" in t.plots else t.default_plot  # type: ignore[attr-defined]
        run = subprocess.run(
            [sys.executable, "-m", "flent", "-i", str(path), "-p", plot, "-o", str(png)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert run.returncode == 0 and "ERROR" not in run.stderr, run.stderr
        assert png.stat().st_size > 10_000
        summary = subprocess.run(
            [sys.executable, "-m", "flent", "-i", str(path)], capture_output=True, text=True, timeout=300
        )
        ours = {line.split(":")[0].strip() for line in fr.summary_text(doc).splitlines() if " : " in line}
        theirs = {line.split(":")[0].strip() for line in summary.stdout.splitlines() if " : " in line}
        assert ours == theirs


def test_native_plots_are_drawn_and_unknown_ones_refused(tmp_path: Path) -> None:
    t, doc = _synthetic_run("rrul", ["10.0.0.2"])
    for plot in ("all_scaled", "totals", "ping_cdf", "box_totals", "bar_totals"):
        draw_plot(t, doc, plot, tmp_path / f"{plot}.png")  # type: ignore[arg-type]
        assert (tmp_path / f"{plot}.png").stat().st_size > 5_000, plot
    from PIL import Image

    assert Image.open(tmp_path / "totals.png").size == (640, 480)
    with pytest.raises(FlentPlotError, match="Unable to find plot configuration 'nope'"):
        draw_plot(t, doc, "nope", tmp_path / "x.png")  # type: ignore[arg-type]
