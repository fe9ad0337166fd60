"""bufferlab compare: parts and files of runs, overlaid plots, the metrics table, bad input."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from results_scenario import QUIET, SCENARIO

from bufferlab.cli import main


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("compare")
    for name, text in (("t", SCENARIO), ("quiet", QUIET)):
        sc = tmp / f"{name}.toml"
        sc.write_text(text, encoding="utf-8")
        assert main(["run", str(sc), "-o", str(tmp / "out"), "-q", "--no-progress", "--no-report"]) == 0
    return tmp / "out"


def _rows(folder: Path) -> list[dict[str, str]]:
    with (folder / "compare.csv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_compare_parts(out: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    dest = tmp_path / "cmp"
    assert main(["compare", str(out / "t/droptail"), str(out / "t/red"), "-o", str(dest)]) == 0
    printed = capsys.readouterr().out
    rows = _rows(dest)
    assert [r["run"] for r in rows] == ["droptail", "red"]
    assert "droptail" in printed and "goodput" in printed
    flows = pd.read_parquet(out / "t/tables/flows.parquet")
    for r in rows:
        f = flows[(flows.kind == "iperf3_client") & (flows.part == r["run"])].iloc[0]
        assert float(r["goodput_mbps"]) == pytest.approx(f.goodput_bps / 1e6, rel=1e-5)
        p = flows[(flows.kind == "ping") & (flows.part == r["run"])].iloc[0]
        assert float(r["ping_rtt_mean_ms"]) == pytest.approx(p.rtt_mean_ms, rel=1e-5)
    summary = json.loads((out / "t/summary.json").read_text())
    def count(part: dict, purged: bool) -> int:
        return sum(c["packets"] for d in part["drops"].values() for reason, c in d.items()
                   if (reason == "purged") == purged)

    parts = {p["name"]: p for p in summary["parts"]}
    assert [int(r["drops"]) for r in rows] == [count(parts[n], False) for n in ("droptail", "red")]
    assert [int(r["purged"]) for r in rows] == [count(parts[n], True) for n in ("droptail", "red")]
    # the small droptail buffer queues less than the big one: its delay estimate is lower
    assert float(rows[0]["queue_delay_p99_ms"]) < float(rows[1]["queue_delay_p99_ms"])
    # plot_q.sh traces its interface exactly: the sojourn in the root netem
    # (10 ms) plus at most the 60 000 B tbf buffer at 20 Mbit/s (24 ms)
    assert rows[0]["queue_delay_source"] == "sojourn (queue_events)"
    mean, p99 = float(rows[0]["queue_delay_mean_ms"]), float(rows[0]["queue_delay_p99_ms"])
    assert 10.0 <= mean <= p99 <= 10 + 24 + 1
    for name in ("throughput", "ping_rtt", "tcp_rtt", "cwnd", "queue"):
        assert (dest / f"{name}.png").stat().st_size > 5000
    html = (dest / "compare.html").read_text()
    assert html.count('src="data:image/png;base64,') == 5 and "<script" not in html


def test_compare_estimates_the_queue_delay_without_traces(out: Path, tmp_path: Path) -> None:
    run = tmp_path / "t"
    shutil.copytree(out / "t", run)
    for trace in run.rglob("queue_trace_*.parquet"):
        trace.unlink()
    dest = tmp_path / "cmp"
    assert main(["compare", str(run / "droptail"), "-o", str(dest)]) == 0
    (row,) = _rows(dest)
    assert row["queue_delay_source"].startswith("backlog / rate")
    # the samples see the tbf's backlog only: 60 000 B at 20 Mbit/s drain in 24 ms
    assert 0 < float(row["queue_delay_p99_ms"]) <= 24.0 + 1e-6


def test_compare_files_of_one_part_and_whole_runs(out: Path, tmp_path: Path) -> None:
    dest = tmp_path / "cmp"
    a, b = out / "t/droptail/h1/out.json", out / "t/udp"
    assert main(["compare", str(a), str(b), str(out / "t"), "-o", str(dest)]) == 0
    rows = _rows(dest)
    assert [r["run"] for r in rows] == ["droptail/h1/out.json", "udp", "t"]
    assert rows[0]["iperf3_tests"] == "1" and rows[0]["ping_rtt_mean_ms"] == "" and rows[0]["drops"] == ""
    assert int(rows[1]["udp_lost"]) > 0 and rows[1]["tcp_rtt_mean_ms"] == ""
    assert rows[2]["iperf3_tests"] == "3"


def test_compare_bad_input(out: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    dest = tmp_path / "cmp"
    assert main(["compare", str(out / "t/droptail"), str(out / "quiet/only"), "-o", str(dest)]) == 2
    err = capsys.readouterr().err
    assert str(out / "quiet/only") in err and "no iperf3 or ping" in err and "hint:" in err
    assert "Traceback" not in err
    # everything else is still written
    assert [r["run"] for r in _rows(dest)] == ["t/droptail", "quiet/only"]
    assert (dest / "throughput.png").is_file()
    assert main(["compare", str(out / "t/nopart"), "-o", str(dest)]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (out / "t/stray").mkdir()
    try:
        assert main(["compare", str(out / "t/stray"), "-o", str(dest)]) == 2
        err = capsys.readouterr().err
        assert "'stray' is not a part of 't'" in err and "droptail, red, udp" in err
    finally:
        (out / "t/stray").rmdir()
