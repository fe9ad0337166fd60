"""``bufferlab export --flent RESULTS_DIR [-o OUT]`` (docs/semantics/formats.md §7), checked with
flent's own loader.

Run: python -m pytest -q tests/test_flent.py
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.outputs import flent as fl

flent_resultset = pytest.importorskip("flent.resultset", reason="flent is not installed (pip install flent)")

TOPO = """
[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""
DELAY = '"admin: tc qdisc add dev s1-eth2 root netem delay 5ms", '

SCENARIO = f"""
name = "flent export"
seed = 1
# the RTTs of the recorded run (one of them printed with iputils' carry as "x.10"):
# per-segment packets and no host stack time
[sim]
gso = false
host_packet_ns = 0
host_byte_ps = 0
host_wakeup_ns = 0
{TOPO}
[[part]]
name = "setup"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 100mbit burst 50000 limit 300000",
]

[[part]]
name = "one"
cmds = [
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -t 4 -J > out.json",
  "h2: ping 10.0.0.3 -c 20 -i 0.2",
]

[[part]]
name = "two"
cmds = [
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -t 3 -i 0.2 -P 2 -J --logfile p2.json",
  "h2: sleep 1; ping 10.0.0.3 -c 5 > ping.txt",
]

[[part]]
name = "udp"
cmds = [
  "h3: iperf3 -s",
  "h1: iperf3 -c 10.0.0.3 -u -b 10M -t 3 -J > udp.json",
]
"""


def _run(tmp: Path, text: str, name: str = "s") -> Path:
    toml = tmp / f"{name}.toml"
    toml.write_text(text)
    assert main(["run", str(toml), "-o", str(tmp / "r"), "-q", "--no-report"]) == 0
    return tmp / "r" / name


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    return _run(tmp_path_factory.mktemp("flent"), SCENARIO)


@pytest.fixture(scope="module")
def exported(results, tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("flent_out")
    assert main(["export", "--flent", str(results), "-o", str(out)]) == 0
    files = {p.name.split(".")[-3].split("_", 1)[1]: p for p in out.glob("*.flent.gz")}
    assert sorted(files) == ["one", "two", "udp"]
    return files


def _summary(results: Path) -> dict:
    return json.loads((results / "summary.json").read_text())


def _flow(results: Path, part: str, kind: str) -> dict:
    return next(f for f in _summary(results)["flows"] if f["part"] == part and f["kind"] == kind)


def _raw(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def test_file_layout_and_metadata(exported):
    path = exported["one"]
    assert re.fullmatch(r"tcp_1up-\d{4}-\d\d-\d\dT\d{6}\.\d{6}\.s_one\.flent\.gz", path.name)
    obj = _raw(path)
    assert obj["version"] == 4 and sorted(obj) == ["metadata", "raw_values", "results", "version", "x_values"]
    meta = obj["metadata"]
    for key in (
        "NAME",
        "HOST",
        "HOSTS",
        "TIME",
        "LOCAL_HOST",
        "TITLE",
        "NOTE",
        "LENGTH",
        "TOTAL_LENGTH",
        "STEP_SIZE",
        "TEST_PARAMETERS",
        "FLENT_VERSION",
        "IP_VERSION",
        "BATCH_NAME",
        "BATCH_TIME",
        "BATCH_TITLE",
        "BATCH_UUID",
        "DATA_FILENAME",
        "HTTP_GETTER_URLLIST",
        "HTTP_GETTER_DNS",
        "HTTP_GETTER_WORKERS",
        "T0",
        "SERIES_META",
    ):
        assert key in meta, key
    assert meta["NAME"] == "tcp_1up" and meta["HOST"] == "10.0.0.3" and meta["LOCAL_HOST"] == "h1"
    assert meta["LENGTH"] == 4 and meta["STEP_SIZE"] == 0.2 and meta["DATA_FILENAME"] == path.name
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", meta["T0"])
    assert meta["SERIES_META"] == {"TCP upload": {"UNITS": "Mbits/s"}, "Ping (ms) ICMP": {"UNITS": "ms"}}
    xs = obj["x_values"]
    assert xs[0] == 0.0 and all(abs(b - a - 0.2) < 1e-9 for a, b in zip(xs, xs[1:], strict=False))
    assert all(len(v) == len(xs) for v in obj["results"].values())
    # json.dumps(indent=2, sort_keys=True), as flent writes it
    assert gzip.decompress(path.read_bytes()).decode() == json.dumps(obj, indent=2, sort_keys=True)


def test_tcp_upload_matches_the_iperf3_intervals(results, exported):
    rs = flent_resultset.load(str(exported["one"]))
    doc = json.loads((results / "one/h1/out.json").read_text())
    streams = [iv["streams"][0] for iv in doc["intervals"]]
    raw = list(rs.raw_series("TCP upload"))
    assert [v for _, v in raw] == [s["bits_per_second"] / 1e6 for s in streams]
    # the client started the part, at T0: sample times are the interval ends
    assert [round(t, 6) for t, _ in raw] == [s["end"] for s in streams]
    got = rs.series("TCP upload")
    for s in streams[:-1]:  # grid points on interval ends carry the interval's value exactly
        assert got[round(s["end"] / 0.2)] == pytest.approx(s["bits_per_second"] / 1e6, rel=1e-12)
    assert got[0] is None  # before the first interval ended


def test_ping_samples_come_from_the_ping_output(results, exported):
    rs = flent_resultset.load(str(exported["one"]))
    text = (results / "one/h2/terminal.log").read_text()
    replies = re.findall(r"icmp_seq=(\d+) ttl=\d+ time=([\d.]+) ms", text)
    assert len(replies) == 20
    items = rs.raw_values["Ping (ms) ICMP"]
    assert [it["seq"] for it in items] == [int(s) for s, _ in replies]
    # all RTTs here are 10-100 ms: one decimal, where iputils s20180629 prints a carry as "28.10" (= 29.0 ms)
    assert all(10 <= float(t) < 100 for _, t in replies) and any(t.endswith(".10") for _, t in replies)
    want = [int(t.split(".")[0]) + int(t.split(".")[1]) / 10 for _, t in replies]
    assert [it["val"] for it in items] == pytest.approx(want, abs=1e-9)
    # probe k leaves at (k-1)·(0.2 s + 100 µs send lag) after ping's start (= T0), the reply RTT later
    for it in items:
        assert it["t"] - rs.t0 == pytest.approx((it["seq"] - 1) * 0.2001 + it["val"] / 1000, abs=1e-6)


def test_flent_command_line_reads_the_files(exported):
    for part, name, series in (
        ("one", "tcp_1up", ["Ping (ms) ICMP", "TCP upload"]),
        ("udp", "udp_flood", ["UDP upload"]),
    ):
        r = subprocess.run(
            [sys.executable, "-m", "flent", "-i", str(exported[part]), "-f", "csv"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        k = next(i for i, line in enumerate(lines) if line.startswith(name + ","))  # after the banner
        header = lines[k].split(",")
        assert sorted(header[1:]) == series
        rows = [line.split(",") for line in lines[k + 1 :]]
        col = header.index(series[-1])
        values = [float(r[col]) for r in rows if r[col]]
        assert len(values) >= 10 and all(v > 0 for v in values)


def test_flent_plots_the_file(exported, tmp_path):
    png = tmp_path / "totals.png"
    r = subprocess.run(
        [sys.executable, "-m", "flent", "-i", str(exported["one"]), "-p", "totals", "-o", str(png)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert png.read_bytes().startswith(b"\x89PNG")


def test_parallel_streams_become_tcp_2up(results, exported):
    rs = flent_resultset.load(str(exported["two"]))
    assert rs.meta("NAME") == "tcp_2up"
    assert sorted(rs.series_names) == [
        "Ping (ms) ICMP",
        "TCP upload avg",
        "TCP upload fairness",
        "TCP upload sum",
        "TCP upload::1",
        "TCP upload::2",
    ]
    doc = json.loads((results / "two/h1/p2.json").read_text())
    for k in (0, 1):
        vals = [iv["streams"][k]["bits_per_second"] / 1e6 for iv in doc["intervals"]]
        assert [v for _, v in rs.raw_series(f"TCP upload::{k + 1}")] == vals  # -i 0.2: flent's own resolution
    a, b, total = rs.series("TCP upload::1"), rs.series("TCP upload::2"), rs.series("TCP upload sum")
    for x, y, z in zip(a, b, total, strict=True):
        assert z == (None if x is None and y is None else pytest.approx((x or 0) + (y or 0)))
    assert any(v is not None for v in total)
    # ping started one second after iperf3 (sleep 1): its samples start at x ≈ 1 s
    first_t, _ = next(rs.raw_series("Ping (ms) ICMP"))
    assert 1.0 < first_t < 1.1
    ping = _flow(results, "two", "ping")
    client = _flow(results, "two", "iperf3_client")
    assert ping["start_ns"] - client["start_ns"] == 1_000_000_000


def test_udp_becomes_udp_flood(results, exported):
    rs = flent_resultset.load(str(exported["udp"]))
    assert rs.meta("NAME") == "udp_flood" and rs.series_names == ["UDP upload"]
    doc = json.loads((results / "udp/h1/udp.json").read_text())
    assert [v for _, v in rs.raw_series("UDP upload")] == [
        iv["sum"]["bits_per_second"] / 1e6 for iv in doc["intervals"]
    ]


def test_export_is_deterministic_and_defaults_next_to_the_results(results, tmp_path):
    copy = tmp_path / "s"
    shutil.copytree(results, copy)
    assert main(["export", "--flent", str(copy)]) == 0
    first = {p.name: p.read_bytes() for p in copy.glob("*.flent.gz")}
    assert len(first) == 3
    assert main(["export", "--flent", str(tmp_path)]) == 0  # the parent of scenario folders works too
    assert {p.name: p.read_bytes() for p in copy.glob("*.flent.gz")} == first


def test_results_without_start_times_fall_back_to_the_part_start(results, exported, tmp_path):
    copy = tmp_path / "s"
    shutil.copytree(results, copy)
    summary = _summary(copy)
    for f in summary["flows"]:
        f.pop("start_ns", None)
        f.pop("output", None)
    (copy / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "o"
    assert main(["export", "--flent", str(copy), "-o", str(out)]) == 0
    new = flent_resultset.load(str(next(out.glob("*_one.flent.gz"))))
    old = flent_resultset.load(str(exported["one"]))
    assert new.series("TCP upload") == old.series("TCP upload")  # part "one" starts both at the part start
    assert new.series("Ping (ms) ICMP") == old.series("Ping (ms) ICMP")


# --- bad input: message, exit status 2, everything else still written ---------------


def _export(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["export", "--flent", *map(str, args)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return rc, out, err


def test_not_a_results_folder(tmp_path, capsys):
    rc, _, err = _export(capsys, tmp_path / "missing")
    assert rc == 2 and "missing: no such folder" in err and "hint: bufferlab run" in err
    rc, _, err = _export(capsys, tmp_path)
    assert rc == 2 and "no summary.json here or in its sub-folders" in err and "expected:" in err


def test_results_without_iperf3(tmp_path, capsys):
    res = _run(tmp_path, f'name = "p"\n{TOPO}\n[[part]]\nname = "a"\ncmds = ["h1: ping 10.0.0.3 -c 2"]\n')
    rc, out, err = _export(capsys, res)
    assert rc == 2 and out == ""
    assert "no iperf3 client ran in these results" in err and "hint:" in err and "-J > out.json" in err


def test_iperf3_without_json(tmp_path, capsys):
    res = _run(
        tmp_path,
        f'name = "p"\n{TOPO}\n[[part]]\nname = "a"\n'
        f'cmds = [{DELAY}"h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -t 1"]\n',
    )
    rc, out, err = _export(capsys, res)
    assert rc == 2 and out == ""
    assert "ran without -J" in err and "no iperf3 client wrote JSON (-J)" in err


def test_truncated_json_in_one_part_others_still_written(results, tmp_path, capsys):
    copy = tmp_path / "s"
    shutil.copytree(results, copy)
    bad = copy / "one/h1/out.json"
    bad.write_text(bad.read_text()[:500])
    rc, out, err = _export(capsys, copy, "-o", tmp_path / "o")
    assert rc == 2
    assert str(bad) in err and "truncated JSON" in err and "expected:" in err and "hint:" in err
    assert sorted(Path(p).name.split(".")[-3] for p in out.split()) == ["s_two", "s_udp"]


def test_quiet_ping_has_no_samples(tmp_path, capsys):
    res = _run(
        tmp_path,
        f'name = "p"\n{TOPO}\n[[part]]\nname = "a"\n'
        f'cmds = [{DELAY}"h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -t 2 -J > o.json", '
        '"h2: ping -q 10.0.0.3 -c 2"]\n',
    )
    rc, out, err = _export(capsys, res)
    assert rc == 2 and "no ping samples: ping -q prints no per-reply lines (drop -q)" in err
    written = Path(out.strip())
    assert written.name.startswith("tcp_1up_noping-")  # the TCP data is still exported
    rs = flent_resultset.load(str(written))
    assert rs.series_names == ["TCP upload"]


def test_not_a_summary(tmp_path, capsys):
    (tmp_path / "summary.json").write_text("{")
    rc, _, err = _export(capsys, tmp_path)
    assert rc == 2 and "summary.json: error: cannot read it as JSON" in err and "hint:" in err


# --- pieces ---------------------------------------------------------------------------


def test_resample_follows_flents_aggregator():
    got = fl.resample([(1.05, 10.0), (2.05, 20.0)], 14)
    assert got[:5] == [None] * 5  # more than half a step before the first sample
    assert got[5] == 10.0  # 1.0: within half a step of the first sample -> its value
    assert got[6] == pytest.approx(11.5) and got[10] == pytest.approx(19.5)  # linear in between
    assert got[11] == 20.0 and got[12:] == [None, None]  # past the last sample: its value once
    s2 = [(0.0, 1.0), (1.0, 2.0), (2.5, 5.0)]
    got = fl.resample(s2, 15)
    assert got[:5] == pytest.approx([1.0, 1.2, 1.4, 1.6, 1.8])
    assert got[5:8] == [None] * 3  # 1.0-1.4: the next sample (2.5) is more than 5 steps away
    assert got[8] == pytest.approx(3.2) and got[12] == pytest.approx(4.8)
    assert got[13] == 5.0 and got[14] is None  # past the last sample: its value once
    far = fl.resample([(0.0, 1.0), (3.0, 2.0)], 16)
    assert far[5] is None and far[10] == pytest.approx(5 / 3)  # next sample farther than 5 steps: gap


def test_ping_time_text_back_to_microseconds():
    text = (
        "64 bytes from 10.0.0.3: icmp_seq=1 ttl=64 time=34.10 ms\n"  # s20180629 carry: 35.0 ms
        "64 bytes from 10.0.0.3: icmp_seq=2 ttl=64 time=120 ms\n"
        "64 bytes from 10.0.0.3: icmp_seq=3 ttl=64 time=0.045 ms\n"
        "64 bytes from 10.0.0.3: icmp_seq=3 ttl=64 time=0.050 ms (DUP!)\n"
        "64 bytes from 10.0.0.3: icmp_seq=4 ttl=64 time=5.100 ms\n"
    )
    assert fl.parse_ping_replies(text) == [(1, 35000), (2, 120000), (3, 45), (4, 6000)]


@pytest.mark.parametrize(
    "ups, downs, udp, ping, want",
    [
        (1, 0, False, True, ("tcp_1up", {})),
        (1, 0, False, False, ("tcp_1up_noping", {})),
        (0, 1, False, True, ("tcp_1down", {})),
        (4, 0, False, True, ("tcp_4up", {})),
        (3, 0, False, True, ("tcp_nup", {"upload_streams": 3})),
        (0, 3, False, True, ("tcp_ndown", {"download_streams": 3})),
        (1, 1, False, True, ("tcp_bidirectional", {})),
        (1, 0, True, True, ("udp_flood", {})),
    ],
)
def test_flent_test_names(ups, downs, udp, ping, want):
    assert fl._test_name(ups, downs, udp, ping) == want


def test_flow_mixes_no_flent_test_describes():
    assert "2 upload and 1 download" in fl._test_name(2, 1, False, True)
    assert "UDP" in fl._test_name(2, 0, True, True)


def test_timestamps_are_the_runs_wall_clock_start_plus_simulated_time(results, exported, tmp_path):
    from datetime import UTC, datetime

    started = json.loads((results / "run.json").read_text())["started_unix"]
    meta = _raw(exported["one"])["metadata"]
    t0 = min(f["start_ns"] for f in _summary(results)["flows"] if f["part"] == "one") / 1e9
    time = datetime.strptime(meta["TIME"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
    assert time == pytest.approx(started + t0, abs=1e-6) and meta["T0"] == meta["TIME"]
    # a real date (the run happened just now), not a fixed one
    assert abs(time - datetime.now(UTC).timestamp()) < 3600
    assert exported["one"].name.startswith(
        "tcp_1up-" + datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%dT")
    )
    # simulated time stays in the data: x values from 0 in steps, raw samples = start + simulated t
    raw = _raw(exported["one"])
    assert raw["x_values"][:2] == [0.0, 0.2]
    assert all(started < it["t"] - t0 < started + 60 for it in raw["raw_values"]["TCP upload"])
    # the same results folder exports to the same bytes
    again = tmp_path / "again"
    assert main(["export", "--flent", str(results), "-o", str(again)]) == 0
    assert (again / exported["one"].name).read_bytes() == exported["one"].read_bytes()
