"""plot_iperf.sh reproduction (docs/semantics/formats.md §5, §11 item 5).

The expected ``iperf.csv`` and ``results/*.dat`` texts below are what the
real ``preprocessor.sh`` wrote (jq 1.6, mawk, GNU coreutils, ``LC_ALL=C``)
for the same JSON documents.

Run: PYTHONPATH=python python -m pytest tests/test_plot_iperf.py -q
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import test_formats as tf  # the iperf3 engine results and the §1.5 example document

from bufferlab.formats import iperf3
from bufferlab.formats import plot_iperf as pi

PLOT_NAMES = ["throughput", "cwnd", "RTT", "RTT_Var", "retransmits", "bytes", "MTU"]

EXAMPLE_CSV = (
    "5,0,1.000154,1.0001540184020996,84434432,675371436.3705465,217,1856336,38412,6120,1500,false\n"
    "5,1.000154,2.000211,1.0000569820404053,112459776,899626945.4210464,0,2057608,41833,1532,1500,false\n"
    "5,2.000211,3.000187,0.9999759793281555,113246208,905991426.5227504,0,2244400,43960,1109,1500,false\n"
)
EXAMPLE_DAT = (
    "5 0 1 80.5229 644.084 217 1812.83 38412 6120 1500 false\n"
    "5 1 2 107.25 857.951 0 2009.38 41833 1532 1500 false\n"
    "5 2 3 108 864.021 0 2191.8 43960 1109 1500 false\n"
)


def _write(tmp_path: Path, text: str, name: str = "out.json") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_example_dat_first_row(tmp_path):
    """§11 item 5: the §1.5 JSON gives results/1.dat with 3 rows."""
    _write(tmp_path, tf.EXPECTED_TCP_JSON)
    produced = pi.plot_iperf(Path("out.json"), tmp_path)
    dat = tmp_path / "results" / "1.dat"
    rows = dat.read_text().splitlines()
    assert len(rows) == 3
    assert rows[0] == "5 0 1 80.5229 644.084 217 1812.83 38412 6120 1500 false"
    assert dat.read_text() == EXAMPLE_DAT
    assert (tmp_path / "iperf.csv").read_text() == EXAMPLE_CSV
    assert sorted(p.name for p in (tmp_path / "results").glob("*.dat")) == ["1.dat"]
    plots = [tmp_path / "results" / f"{n}.{ext}" for n in PLOT_NAMES for ext in ("pdf", "png")]
    assert produced == [tmp_path / "iperf.csv", dat] + plots


def test_pdfs_and_pngs_are_valid(tmp_path):
    json_path = _write(tmp_path, tf.EXPECTED_TCP_JSON)
    pi.plot_iperf(json_path, tmp_path / "work")  # absolute JSON path, fresh working folder
    results = tmp_path / "work" / "results"
    for name in PLOT_NAMES:
        pdf = (results / f"{name}.pdf").read_bytes()
        assert pdf.startswith(b"%PDF") and pdf.rstrip().endswith(b"%%EOF") and len(pdf) > 1000
        assert (results / f"{name}.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert b"CreationDate" not in (results / "RTT.pdf").read_bytes()  # reproducible bytes


def test_plot_table_matches_the_plt_scripts():
    assert [(n, c, y, t, z) for n, c, y, t, z in pi.PLOTS] == [
        ("throughput", 5, "Mbps", "Throughput over time", False),
        ("cwnd", 7, "Cwnd", "Sent Cwnd over time", False),
        ("RTT", 8, "RTT", "RTT over time", False),
        ("RTT_Var", 9, "RTT Var", "RTT Var over time", True),
        ("retransmits", 6, "Retransmits", "Retransmits over time", False),
        ("bytes", 4, "MBytes", "Sent data over time", False),
        ("MTU", 10, "MTU", "MTU over time", True),
    ]


def test_parallel_omit_split_uses_duration_lines(tmp_path):
    """-P 2 -O 1 -t 2: 6 records, ⌊sum_sent.seconds⌋ = 2 lines per file → streams mixed (§5)."""
    _write(tmp_path, iperf3.client_json(tf._p2_result(), tf.P2_CMD, tf.LAB))
    pi.plot_iperf(Path("out.json"), tmp_path)
    assert (tmp_path / "iperf.csv").read_text() == (
        "5,0,1.0005,1.000499963760376,1191500000,9527236726.900026,0,1047552,30,5,1500,true\n"
        "5,1,2.0003,1.0003000497817993,1154500000,9233229571.481773,0,1047552,40,8,1500,false\n"
        "5,1e-05,1,1.0000100135803223,1182500000,9459905272.478712,0,1047552,40,8,1500,false\n"
        "7,0,1.000502,1.0005019903182983,1229700000,9832664097.819815,0,1047552,30,5,1500,true\n"
        "7,1.000002,2.000302,1.0003000497817993,1189000000,9509146782.582788,0,1047552,40,8,1500,false\n"
        "7,8e-06,1.000002,1.0000100135803223,1188000000,9503904831.885592,0,1047552,40,8,1500,false\n")
    results = tmp_path / "results"
    assert {p.name: p.read_text() for p in results.glob("*.dat")} == {
        "1.dat": "5 0 1 1136.3 9085.88 0 1023 30 5 1500 true\n"
                 "5 1 2 1101.02 8805.49 0 1023 40 8 1500 false\n",
        "2.dat": "5 0 1 1127.72 9021.67 0 1023 40 8 1500 false\n"
                 "7 0 1 1172.73 9377.16 0 1023 30 5 1500 true\n",
        "3.dat": "7 0 1 1132.97 9063.63 0 1023 40 8 1500 false\n"
                 "7 1 2 1133.92 9068.63 0 1023 40 8 1500 false\n",
    }


def test_long_run_lexicographic_csv_numeric_dat(tmp_path):
    """Past 10 s the csv order is byte order ("5,10…" before "5,2…"); each .dat is numeric."""
    cmd = dataclasses.replace(tf.TCP_CMD, duration_s=12)
    result = tf._tcp_result()
    t0 = result["start_ns"]
    ivs = [tf._tcp_iv(t0 + k * 1_000_000_000 + 100_000 * (k > 0), t0 + (k + 1) * 1_000_000_000 + 100_000,
                      1_000_000 * (k + 1), k, 1448 * (10 + k), 0, 20_000 + k, 100 + k) for k in range(12)]
    result["streams"][0].update(intervals=ivs)
    result["streams"][0]["sender"].update(end_ns=ivs[-1]["end_ns"])
    _write(tmp_path, iperf3.client_json(result, cmd, tf.LAB))
    pi.plot_iperf(Path("out.json"), tmp_path)
    starts = [line.split(",")[1] for line in (tmp_path / "iperf.csv").read_text().splitlines()]
    assert starts == ["0", "1.0001", "10.0001", "11.0001"] + [f"{k}.0001" for k in range(2, 10)]
    rows = (tmp_path / "results" / "1.dat").read_text().splitlines()
    assert [int(r.split()[1]) for r in rows] == list(range(12))
    assert rows[11] == "5 11 12 11.4441 91.5527 11 29.6953 20011 111 1500 false"


def test_results_folder_is_emptied_first(tmp_path):
    results = tmp_path / "results"
    (results / "old").mkdir(parents=True)
    (results / "7.dat").write_text("stale\n")
    (results / ".keep").write_text("")
    _write(tmp_path, tf.EXPECTED_TCP_JSON)
    pi.plot_iperf(Path("out.json"), tmp_path)
    names = sorted(p.name for p in results.iterdir())
    assert ".keep" in names and "7.dat" not in names and "old" not in names
    assert "1.dat" in names and "throughput.pdf" in names


def test_jq_number_formatting():
    """Outputs of jq 1.6 `@csv` for the same values."""
    cases = {1e17: "1e+17", 1e16: "1e+16", 123e15: "123000000000000000",
             12345678901234567890: "12345678901234567000", 0.0001: "0.0001", 0.00001: "1e-05",
             1.5e-7: "1.5e-07", 100: "100", 1e300: "1e+300", -0.0: "-0", 3.0: "3",
             675371436.37054646: "675371436.3705465", 1.0001540184020996: "1.0001540184020996",
             float("inf"): "1.7976931348623157e+308", -2.5: "-2.5", 0.5: "0.5"}
    for value, text in cases.items():
        assert pi.jq_number(value) == text, value
    assert pi.csv_records({"intervals": [{"streams": [{"socket": 5, "omitted": True, "rtt": None,
                                                       "start": "a,b\"c"}]}]}) == (
        ['5,"a,b""c",,,,,,,,,,true'], None)


def test_awk_number_formatting():
    assert pi.awk_number(84434432 / 1024 / 1024) == "80.5229"
    assert pi.awk_number(108.0) == "108"
    assert pi.awk_number(2244400 / 1024) == "2191.8"
    assert pi.awk_number(1234567.8) == "1.23457e+06"
    assert pi.awk_number(0.0) == "0"
    assert pi.dat_lines(["5,2.5,3.5,,1048576,,,,,,,false", "5,1e-05,1,,,,,,,,,x"]) == [
        "5 0 1 0 0  0    x", "5 2 3 1 0  0    false"]


# --- errors ---------------------------------------------------------------------


def test_not_a_file(tmp_path):
    with pytest.raises(pi.PlotError, match=r"missing\.json: is not a file") as e:
        pi.plot_iperf(Path("missing.json"), tmp_path)
    assert e.value.produced == [] and not (tmp_path / "iperf.csv").exists()


def test_truncated_json_writes_nothing(tmp_path):
    _write(tmp_path, tf.EXPECTED_TCP_JSON[:2000])
    with pytest.raises(pi.PlotError, match=r"out\.json: truncated JSON") as e:
        pi.plot_iperf(Path("out.json"), tmp_path)
    assert e.value.produced == [] and not (tmp_path / "iperf.csv").exists()
    _write(tmp_path, "{\"start\": }")
    with pytest.raises(pi.PlotError, match=r"out\.json: not valid JSON"):
        pi.plot_iperf(Path("out.json"), tmp_path)


def test_empty_file(tmp_path):
    _write(tmp_path, "")
    with pytest.raises(pi.PlotError, match=r"out\.json: empty file") as e:
        pi.plot_iperf(Path("out.json"), tmp_path)
    assert (tmp_path / "iperf.csv").read_text() == "\n"  # echo of nothing: one empty line
    assert e.value.produced == [tmp_path / "iperf.csv"]
    assert list((tmp_path / "results").iterdir()) == []


def test_json_that_is_not_iperf3(tmp_path):
    _write(tmp_path, '{"foo": 1}\n')
    with pytest.raises(pi.PlotError, match=r"out\.json: not iperf3 JSON output \(jq: Cannot iterate over "
                                           r"null\).*sum_sent\.seconds is null"):
        pi.plot_iperf(Path("out.json"), tmp_path)
    _write(tmp_path, "[1, 2]\n")
    with pytest.raises(pi.PlotError, match='Cannot index array with "intervals"'):
        pi.plot_iperf(Path("out.json"), tmp_path)


def test_udp_json(tmp_path):
    _write(tmp_path, iperf3.client_json(tf.UDP_RESULT, tf.UDP_CMD, tf.LAB))
    with pytest.raises(pi.PlotError, match=r"out\.json: UDP test: no TCP fields") as e:
        pi.plot_iperf(Path("out.json"), tmp_path)
    assert (tmp_path / "iperf.csv").read_text().splitlines()[0] == (
        "5,0,1.000089,1.0000890493392944,112944,903471.5464557168,,,,,,false")
    assert e.value.produced == [tmp_path / "iperf.csv"]
    assert list((tmp_path / "results").iterdir()) == []


def test_receiver_side_json_plots_what_it_can(tmp_path):
    """iperf3 -s -J: no TCP fields, but sum_sent exists: throughput/bytes (and cwnd at 0) plotted."""
    server = {"port": 5201, "start_ns": 0, "interrupted": False, "tests": [tf._tcp_server_test()]}
    _write(tmp_path, iperf3.server_json(server, tf.LAB))
    with pytest.raises(pi.PlotError) as e:
        pi.plot_iperf(Path("out.json"), tmp_path)
    msg = e.value.message
    assert msg.startswith("plot_iperf: out.json: intervals carry no TCP sender fields")
    assert "no data to plot for RTT.pdf, RTT_Var.pdf, retransmits.pdf, MTU.pdf" in msg
    results = tmp_path / "results"
    # ⌊3.04431⌋ = 3 lines per file: the short final interval spills into 2.dat
    assert (results / "1.dat").read_text() == ("5 0 1 78.9862 631.826  0    false\n"
                                               "5 1 2 106.765 854.033  0    false\n"
                                               "5 2 3 106.999 855.947  0    false\n")
    assert (results / "2.dat").read_text() == "5 3 3 0.99707 181.039  0    false\n"
    names = [p.name for p in e.value.produced]
    assert names == ["iperf.csv", "1.dat", "2.dat", "throughput.pdf", "throughput.png", "cwnd.pdf",
                     "cwnd.png", "bytes.pdf", "bytes.png"]
    assert all(p.exists() for p in e.value.produced)
    assert (results / "throughput.pdf").read_bytes().startswith(b"%PDF")


def test_error_document_and_several_documents(tmp_path):
    _write(tmp_path, iperf3.client_json({"error": "unable to connect to server: Connection refused"},
                                        tf.TCP_CMD, tf.LAB))
    with pytest.raises(pi.PlotError, match="iperf3 reported an error: error - unable to connect"):
        pi.plot_iperf(Path("out.json"), tmp_path)
    _write(tmp_path, tf.EXPECTED_TCP_JSON * 2)
    with pytest.raises(pi.PlotError, match=r"2 JSON documents.*sum_sent\.seconds gives 3\.000187, 3\.000187"):
        pi.plot_iperf(Path("out.json"), tmp_path)
    assert len((tmp_path / "iperf.csv").read_text().splitlines()) == 6
    json.loads(tf.EXPECTED_TCP_JSON)  # the document itself is fine
