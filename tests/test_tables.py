"""<out>/<scenario>/tables/: every table against the files it was built from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from results_scenario import QUIET, SCENARIO

from bufferlab.cli import main
from bufferlab.outputs.results import load_run
from bufferlab.outputs.tables import SCHEMAS, write_tables

TABLES = ["intervals", "ping", "queue_samples", "queue_events", "drops", "flows"]


def _run(tmp: Path, text: str, name: str, *extra: str) -> Path:
    sc = tmp / f"{name}.toml"
    sc.write_text(text, encoding="utf-8")
    assert main(["run", str(sc), "-o", str(tmp / "out"), "-q", "--no-progress", *extra]) == 0
    return tmp / "out" / name


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("tables"), SCENARIO, "t", "--no-report")


def _t(run_dir: Path, name: str) -> pd.DataFrame:
    return pd.read_parquet(run_dir / "tables" / f"{name}.parquet")


def test_every_table_loads_with_its_schema_and_matching_csv(run_dir: Path) -> None:
    for name in TABLES:
        df = _t(run_dir, name)
        assert list(df.columns) == SCHEMAS[name].names
        assert pq.read_schema(run_dir / "tables" / f"{name}.parquet").equals(SCHEMAS[name])
        csv = pd.read_csv(run_dir / "tables" / f"{name}.csv")
        assert list(csv.columns) == list(df.columns) and len(csv) == len(df)
    assert not (run_dir / "report.html").exists()  # --no-report


def test_intervals_from_iperf3_json(run_dir: Path) -> None:
    doc = json.loads((run_dir / "droptail/h1/out.json").read_text())
    iv = _t(run_dir, "intervals")
    js = iv[iv.file == "droptail/h1/out.json"]
    streams, sums = js[js.row == "stream"], js[js.row == "sum"]
    assert len(streams) == len(doc["intervals"]) == len(sums) == 3
    assert (js.role == "client").all() and (js.protocol == "tcp").all() and (js.source == "json").all()
    assert streams.bytes.sum() == doc["end"]["sum_sent"]["bytes"]
    first = doc["intervals"][0]["streams"][0]
    row = streams.iloc[0]
    assert (row.socket, row.rtt_us, row.snd_cwnd, row.retransmits, row.pmtu) == (
        first["socket"], first["rtt"], first["snd_cwnd"], first["retransmits"], first["pmtu"])
    assert streams.lost_packets.isna().all() and streams.jitter_ms.isna().all()  # TCP: UDP fields null


def test_intervals_from_iperf3_text(run_dir: Path) -> None:
    iv = _t(run_dir, "intervals")
    srv = iv[(iv.part == "udp") & (iv.role == "server")]
    log = (run_dir / "udp/h3/terminal.log").read_text()
    lines = [ln for ln in log.splitlines() if ln.startswith("[  5]") and "ms" in ln and "receiver" not in ln]
    assert len(srv) == len(lines) > 0
    assert (srv.source == "text").all() and (srv.protocol == "udp").all()
    assert srv.lost_packets.notna().all() and srv.jitter_ms.notna().all()
    assert srv.lost_packets.sum() > 0  # 30 Mbit/s into 20 Mbit/s
    cli = iv[(iv.part == "red") & (iv.role == "client")]
    assert len(cli) == 3 and cli.snd_cwnd.notna().all() and cli.sender.all()


def test_ping_rows_and_send_times(run_dir: Path) -> None:
    ping = _t(run_dir, "ping")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sorted(ping.file.unique()) == ["droptail/h2/terminal.log", "red/h2/ping.txt"]
    red = ping[ping.part == "red"]
    assert list(red.seq) == [1, 2, 3, 4, 5] and (red.dest == "10.0.0.3").all() and (red.ttl == 64).all()
    start = next(f["start_ns"] for f in summary["flows"] if f["kind"] == "ping" and f["part"] == "red") / 1e9
    assert np.allclose(red.time_s, start + 0.5 * (red.seq - 1))
    # netem's 10 ms on s1-eth2 delays one direction; the part gap drained the queue, so
    # part red's first reply sees the bare path
    assert (ping.rtt_ms >= 10.0).all() and ping[ping.part == "red"].rtt_ms.iloc[0] == 10.0
    text = (run_dir / "red/h2/ping.txt").read_text()
    assert [f"time={v:.1f} ms" in text or f"time={v:g} ms" in text for v in red.rtt_ms] == [True] * 5


def test_queue_samples_equal_the_csv(run_dir: Path) -> None:
    qs = _t(run_dir, "queue_samples")
    csv = pd.read_csv(run_dir / "red/queue_s1-eth2.csv")
    red = qs[qs.part == "red"].reset_index(drop=True)
    assert (red.iface == "s1-eth2").all()
    assert np.array_equal(red.backlog_bytes, csv.backlog_bytes) and np.allclose(red.time_s, csv.time_s)
    assert red.backlog_bytes.max() > 0


def test_drop_counters_per_part_add_up(run_dir: Path) -> None:
    drops = _t(run_dir, "drops")
    summary = json.loads((run_dir / "summary.json").read_text())
    total = summary["interfaces"]["s1-eth2"]["drops"]["queue_full"]["packets"]
    per_part = drops[(drops.source == "counter") & drops.part.notna()]
    assert per_part.packets.sum() == total > 0
    assert drops[(drops.source == "counter") & drops.part.isna()].packets.sum() == total


def test_flows(run_dir: Path) -> None:
    flows = _t(run_dir, "flows")
    doc = json.loads((run_dir / "droptail/h1/out.json").read_text())
    tcp = flows[(flows.kind == "iperf3_client") & (flows.part == "droptail")].iloc[0]
    assert tcp.goodput_bps == doc["end"]["sum_received"]["bits_per_second"]
    assert tcp.retransmits == doc["end"]["sum_sent"]["retransmits"]
    assert tcp.rtt_mean_ms == pytest.approx(doc["end"]["streams"][0]["sender"]["mean_rtt"] / 1000)
    ping = _t(run_dir, "ping")
    pf = flows[(flows.kind == "ping") & (flows.part == "red")].iloc[0]
    assert pf.rtt_mean_ms == pytest.approx(ping[ping.part == "red"].rtt_ms.mean())
    assert pf.lost_packets == 0
    udp = flows[(flows.kind == "iperf3_client") & (flows.part == "udp")].iloc[0]
    cls = flows[flows.source == "class"].iloc[0]
    assert udp.protocol == "udp" and udp.lost_packets > 0 and cls.tos == "0x00" and cls.lost_packets > 0


def _trace(path: Path, t0: float, n: int) -> None:
    """A synthetic trace with the engine's schema: enqueue/dequeue pairs, a drop every 10th."""
    ev, t, bb, bp, dr, mk, so = [], [], [], [], [], [], []
    drops = marks = 0
    for i in range(n):
        kind = {9: "drop", 4: "mark"}.get(i % 10, "enqueue" if i % 2 == 0 else "dequeue")
        drops += kind == "drop"
        marks += kind == "mark"
        ev.append(kind)
        t.append(t0 + i * 1e-4)
        bb.append(1500 * (i % 7))
        bp.append(i % 7)
        dr.append(drops)
        mk.append(marks)
        so.append(0.002 if kind == "dequeue" else float("nan"))
    pq.write_table(pa.table({"time_s": t, "event": ev, "backlog_bytes": pa.array(bb, pa.int64()),
                             "backlog_packets": pa.array(bp, pa.int64()), "drops": pa.array(dr, pa.int64()),
                             "marks": pa.array(mk, pa.int64()), "sojourn_s": so}), path, row_group_size=1000)


@pytest.fixture(scope="module")
def traced(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the run whose summary lists exact queue traces, as the tracer writes them."""
    d = tmp_path_factory.mktemp("traced") / "t"
    shutil.copytree(run_dir, d)
    summary = json.loads((d / "summary.json").read_text())
    for p, n in zip(summary["parts"][:2], (2500, 300), strict=True):
        _trace(d / p["name"] / "queue_trace_s1-eth2.parquet", p["start_ns"] / 1e9, n)
        p["queue_traces"] = [f"{p['name']}/queue_trace_s1-eth2.parquet"]
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def test_queue_events_streamed_from_the_traces(traced: Path) -> None:
    res = write_tables(load_run(traced))
    assert res.problems == [] or all(p.kind == "absent" for p in res.problems)
    qe = _t(traced, "queue_events")
    assert len(qe) == res.rows["queue_events"] == 2800
    # one row group per record batch copied, not one table built in memory
    assert pq.ParquetFile(traced / "tables/queue_events.parquet").metadata.num_row_groups >= 2
    summary = json.loads((traced / "summary.json").read_text())
    red = qe[qe.part == "red"]
    assert red.part_time_s.iloc[0] == pytest.approx(0.0)
    assert red.time_s.iloc[0] == pytest.approx(summary["parts"][1]["start_ns"] / 1e9)
    deq = qe.event == "dequeue"
    assert qe.sojourn_s[deq].eq(0.002).all() and qe.sojourn_s[~deq].isna().all()
    drops = _t(traced, "drops")
    ev = drops[drops.source == "event"]
    assert len(ev) == 2 * (250 + 30) and set(ev.event) == {"drop", "mark"}
    assert (ev.packets == 1).all() and ev.backlog_bytes.notna().all()
    assert len(pd.read_csv(traced / "tables/queue_events.csv")) == 2800


def test_bad_trace_and_empty_samples_are_reported_and_the_rest_written(traced: Path, tmp_path: Path) -> None:
    d = tmp_path / "t"
    shutil.copytree(traced, d)
    pq.write_table(pa.table({"time_s": [0.0]}), d / "red/queue_trace_s1-eth2.parquet")
    (d / "droptail/queue_s1-eth2.csv").write_text("time_s,backlog_bytes,backlog_packets\n")
    res = write_tables(load_run(d))
    text = "\n".join(str(p) for p in res.problems)
    assert "red/queue_trace_s1-eth2.parquet" in text and "lacks event" in text
    assert "droptail/queue_s1-eth2.csv" in text and "has no queue samples" in text and "hint:" in text
    assert len(_t(d, "queue_events")) == 2500  # the good trace is still copied
    assert len(_t(d, "intervals")) > 0 and set(_t(d, "queue_samples").part) == {"red"}


def test_same_run_same_tables(run_dir: Path, tmp_path: Path) -> None:
    again = _run(tmp_path, SCENARIO, "t", "--no-report")
    for name in TABLES:
        for ext in ("parquet", "csv"):
            a = (run_dir / "tables" / f"{name}.{ext}").read_bytes()
            assert a == (again / "tables" / f"{name}.{ext}").read_bytes(), f"{name}.{ext}"


def test_run_without_iperf3_or_ping_writes_empty_tables(tmp_path: Path, capsys: pytest.CaptureFixture
                                                        ) -> None:
    d = _run(tmp_path, QUIET, "quiet")
    assert capsys.readouterr().err == ""  # not a mistake for `run`
    for name in TABLES:
        assert list(_t(d, name).columns) == SCHEMAS[name].names
    assert len(_t(d, "intervals")) == 0 and len(_t(d, "ping")) == 0
    # the report is written (status 0) and says what is missing, as notes on stderr and in the page
    assert main(["report", str(d)]) == 0
    err = capsys.readouterr().err
    assert "note:" in err and "error" not in err
    assert "no iperf3 output" in err and "no ping output" in err and str(d) in err and "Traceback" not in err
    html = (d / "report.html").read_text()
    assert html.count('<div class="note">note: ') == 2 and "no ping output" in html


@pytest.mark.parametrize("case", ["missing", "empty", "not-ours", "not-json", "file"])
def test_bad_results_dir(case: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    d = tmp_path / "r"
    if case != "missing":
        d.mkdir()
    if case == "not-ours":
        (d / "summary.json").write_text('{"results": []}')
    if case == "not-json":
        (d / "summary.json").write_text("summary: yes")
    if case == "file":
        d.rmdir()
        d.write_text("x")
    assert main(["report", str(d)]) == 2
    err = capsys.readouterr().err
    assert str(d) in err and "expected:" in err and "hint:" in err and "Traceback" not in err
