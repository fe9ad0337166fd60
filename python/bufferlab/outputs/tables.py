"""``<out>/<scenario>/tables/``: Parquet and CSV tables of a run (docs/tables.md).

Each table has a fixed pyarrow schema, so a run without ping still writes an
empty ``ping`` table with the right columns, and the same run always writes
byte-identical files. ``queue_events`` can be large (one row per queue change):
it is copied from the per-part traces one record batch at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..safefs import ensure_dir, open_atomic
from . import arrow
from .fct import quantile, read_fct_csv
from .results import NS, Outputs, Problem, Run, app_for, ping_interval_s, scan_outputs

S, I64, F64, B = pa.string(), pa.int64(), pa.float64(), pa.bool_()

SCHEMAS: dict[str, pa.Schema] = {
    "intervals": pa.schema([
        ("part", S), ("host", S), ("file", S), ("test", I64), ("role", S), ("protocol", S), ("source", S),
        ("row", S), ("socket", I64), ("sender", B), ("omitted", B), ("start_s", F64), ("end_s", F64),
        ("seconds", F64), ("bytes", I64), ("bits_per_second", F64), ("retransmits", I64),
        ("snd_cwnd", I64), ("snd_wnd", I64), ("rtt_us", I64), ("rttvar_us", I64), ("pmtu", I64),
        ("packets", I64), ("lost_packets", I64), ("lost_percent", F64), ("jitter_ms", F64),
        ("out_of_order", I64),
    ]),
    "ping": pa.schema([
        ("part", S), ("host", S), ("file", S), ("run", I64), ("dest", S), ("seq", I64),
        ("time_s", F64), ("rel_s", F64), ("rtt_ms", F64), ("ttl", I64),
    ]),
    "queue_samples": pa.schema([
        ("part", S), ("iface", S), ("time_s", F64), ("backlog_bytes", I64), ("backlog_packets", I64),
    ]),
    "queue_events": pa.schema([
        ("part", S), ("iface", S), ("time_s", F64), ("part_time_s", F64), ("event", S),
        ("backlog_bytes", I64), ("backlog_packets", I64), ("drops", I64), ("marks", I64),
        ("sojourn_s", F64),
    ]),
    "drops": pa.schema([
        ("source", S), ("part", S), ("iface", S), ("node", S), ("time_s", F64), ("event", S),
        ("reason", S), ("packets", I64), ("bytes", I64), ("backlog_bytes", I64), ("backlog_packets", I64),
    ]),
    "flows": pa.schema([
        ("source", S), ("part", S), ("app", I64), ("kind", S), ("node", S), ("terminal", S),
        ("command", S), ("file", S), ("protocol", S), ("tos", S), ("start_s", F64),
        ("sent_bytes", I64), ("received_bytes", I64), ("sent_packets", I64), ("received_packets", I64),
        ("lost_packets", I64), ("loss_pct", F64), ("goodput_bps", F64), ("retransmits", I64),
        ("rtt_mean_ms", F64), ("rtt_p99_ms", F64),
    ]),
    "fct": pa.schema([
        ("part", S), ("host", S), ("file", S), ("flow", I64), ("start_s", F64), ("size_bytes", I64),
        ("fct_s", F64), ("retransmits", I64), ("completed", B),
    ]),
}

#: columns of a queue trace written by the engine's tracer (summary.json "queue_traces")
TRACE_COLUMNS = ("time_s", "event", "backlog_bytes", "backlog_packets", "drops", "marks", "sojourn_s")
_PARQUET_OPTS = {"compression": "zstd", "write_statistics": True}


@dataclass
class TablesResult:
    folder: Path
    rows: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    outputs: Outputs | None = None


def table(name: str, rows: list[dict[str, Any]]) -> pa.Table:
    """The table ``name`` (a key of :data:`SCHEMAS`) of these rows, with its schema."""
    schema = SCHEMAS[name]
    columns = [arrow.array([r.get(f.name) for r in rows], f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def _write(folder: Path, name: str, table: pa.Table) -> None:
    with open_atomic(folder / f"{name}.parquet", "wb") as f:  # whole, or the previous one (SIGTERM)
        pq.write_table(table, f, **_PARQUET_OPTS)
    with open_atomic(folder / f"{name}.csv", "wb") as f:
        pacsv.write_csv(table, f)


def p99(values: list[float]) -> float | None:
    """The 99th percentile by linear interpolation (numpy's default), None for no values."""
    return quantile(values, 0.99)


def _interval_rows(out: Outputs) -> list[dict[str, Any]]:
    rows = []
    for t in out.iperf3:
        base = {"part": t.part, "host": t.host, "file": t.file, "test": t.index, "role": t.role,
                "protocol": t.protocol, "source": t.source}
        for r in t.rows:
            rows.append({
                **base, "row": r["row"], "socket": r.get("socket"), "sender": r.get("sender"),
                "omitted": r.get("omitted"), "start_s": r.get("start"), "end_s": r.get("end"),
                "seconds": r.get("seconds"), "bytes": r.get("bytes"),
                "bits_per_second": r.get("bits_per_second"), "retransmits": r.get("retransmits"),
                "snd_cwnd": r.get("snd_cwnd"), "snd_wnd": r.get("snd_wnd"), "rtt_us": r.get("rtt"),
                "rttvar_us": r.get("rttvar"), "pmtu": r.get("pmtu"), "packets": r.get("packets"),
                "lost_packets": r.get("lost_packets"), "lost_percent": r.get("lost_percent"),
                "jitter_ms": r.get("jitter_ms"), "out_of_order": r.get("out_of_order"),
            })
    return rows


def _ping_rows(run: Run, out: Outputs) -> list[dict[str, Any]]:
    rows = []
    for pr in out.pings:
        app = app_for(run, "ping", pr.file, pr.index)
        interval = ping_interval_s(app["command"]) if app else 1.0
        start = app["start_ns"] / NS if app and "start_ns" in app else None
        for seq, ttl, rtt in pr.replies:
            rel = (seq - 1) * interval
            rows.append({
                "part": pr.part, "host": pr.host, "file": pr.file, "run": pr.index, "dest": pr.dest,
                "seq": seq, "time_s": None if start is None else round(start + rel, 9), "rel_s": rel,
                "rtt_ms": rtt, "ttl": ttl,
            })
    return rows


def queue_sample_rows(run: Run, problems: list[Problem]) -> list[dict[str, Any]]:
    rows = []
    for p in run.parts:
        for rel in p.get("queues", []):
            path = run.root / rel
            iface = Path(rel).stem.removeprefix("queue_")
            try:
                lines = path.read_text(encoding="utf-8").splitlines()[1:]
            except OSError as e:
                problems.append(Problem(str(path), f"cannot read the queue samples ({e.strerror})",
                                        "the CSV plot_q.sh wrote (time_s,backlog_bytes,backlog_packets)",
                                        "re-run the scenario"))
                continue
            if not lines:
                problems.append(Problem(str(path), f"interface {iface} has no queue samples",
                                        "at least one 100 ms sample of plot_q.sh",
                                        "let plot_q.sh run for longer than one sample interval"))
                continue
            for ln in lines:
                t, b, q = ln.split(",")
                rows.append({"part": p["name"], "iface": iface, "time_s": float(t),
                             "backlog_bytes": int(b), "backlog_packets": int(q)})
    return rows


def queue_traces(run: Run) -> list[tuple[str, str, Path]]:
    """(part, iface, path) of every exact queue trace the run lists."""
    found = []
    for p in run.parts:
        for rel in p.get("queue_traces", []):
            iface = Path(rel).stem.removeprefix("queue_trace_")
            found.append((p["name"], iface, run.root / rel))
    return found


def _unreadable_trace(path: Path, e: Exception) -> Problem:
    return Problem(str(path), f"cannot read the queue trace ({e})",
                   "a Parquet file with columns " + ", ".join(TRACE_COLUMNS), "re-run the scenario")


def queue_event_batches(run: Run, problems: list[Problem],
                        columns: tuple[str, ...] = TRACE_COLUMNS) -> Iterator[pa.RecordBatch]:
    """Every queue trace of ``run`` as record batches of the queue_events schema (``columns``:
    the trace columns to read, the others come back null), one batch of up to 65 536 rows at a
    time, in the order summary.json lists the traces."""
    schema = SCHEMAS["queue_events"]
    for part, iface, path in queue_traces(run):
        try:
            pf = pq.ParquetFile(path)
        except (OSError, pa.ArrowException) as e:
            problems.append(_unreadable_trace(path, e))
            continue
        missing = [c for c in TRACE_COLUMNS if c not in pf.schema_arrow.names]
        if missing:
            problems.append(Problem(str(path), "the queue trace lacks " + ", ".join(missing),
                                    "columns " + ", ".join(TRACE_COLUMNS), "re-run the scenario"))
            continue
        if pf.metadata.num_rows == 0:
            problems.append(Problem(str(path), f"interface {iface} has no queue events in part {part}",
                                    "at least one enqueue/dequeue/drop/mark", "check that traffic "
                                    "crossed this interface during the part"))
        start_s = run.part(part)["start_ns"] / NS
        import pyarrow.compute as pc  # 0.05 s to import: only for a run with traces

        wanted = [c for c in TRACE_COLUMNS if c in columns or c == "time_s"]
        try:  # a trace damaged past its footer fails here: the rows before it are kept
            for batch in pf.iter_batches(batch_size=65536, columns=wanted):
                k = batch.num_rows

                def col(name: str, typ: pa.DataType, batch: pa.RecordBatch = batch, k: int = k,
                        wanted: list[str] = wanted) -> pa.Array:
                    return batch.column(name).cast(typ) if name in wanted else pa.nulls(k, typ)

                t = batch.column("time_s").cast(F64)
                yield pa.record_batch([
                    arrow.repeat(part, k), arrow.repeat(iface, k), t,
                    pc.subtract(t, arrow.scalar(start_s, F64)), col("event", S),
                    *(col(c, I64) for c in ("backlog_bytes", "backlog_packets", "drops", "marks")),
                    col("sojourn_s", F64),
                ], schema=schema)
        except (OSError, pa.ArrowException) as e:
            problems.append(_unreadable_trace(path, e))


def _copy_queue_events(run: Run, folder: Path, problems: list[Problem]) -> tuple[int, list[dict[str, Any]]]:
    """Stream every trace into queue_events.parquet/.csv; return the row count and the drop/mark rows."""
    schema = SCHEMAS["queue_events"]
    n = 0
    drops: list[dict[str, Any]] = []
    with open_atomic(folder / "queue_events.parquet") as pf_out, \
            open_atomic(folder / "queue_events.csv") as cf_out:  # whole, or the previous ones
        # made inside the try: a writer left open when a signal lands between the two would
        # flush into its closed temporary when collected ("Exception ignored ... write to
        # closed file", found by fuzz_signals.py)
        pw: pq.ParquetWriter | None = None
        cw: pacsv.CSVWriter | None = None
        try:
            pw = pq.ParquetWriter(pf_out, schema, **_PARQUET_OPTS)
            cw = pacsv.CSVWriter(cf_out, schema)
            for out in queue_event_batches(run, problems):
                import pyarrow.compute as pc

                pw.write_batch(out)
                cw.write_batch(out)
                n += out.num_rows
                ev = out.column("event")
                marked = pc.or_(pc.equal(ev, arrow.scalar("drop", S)), pc.equal(ev, arrow.scalar("mark", S)))
                sel = out.filter(marked)
                for r in sel.to_pylist():
                    drops.append({"source": "event", "part": r["part"], "iface": r["iface"],
                                  "time_s": r["time_s"], "event": r["event"], "packets": 1,
                                  "backlog_bytes": r["backlog_bytes"],
                                  "backlog_packets": r["backlog_packets"]})
        finally:
            for writer in (pw, cw):
                if writer is not None:
                    writer.close()
    return n, drops


def _counter_drop_rows(run: Run) -> list[dict[str, Any]]:
    """Per-part counters (summary.json parts[].drops), then the whole run's (part null)."""
    rows = []
    for p in run.parts:
        for iface, reasons in sorted(p.get("drops", {}).items()):
            node = run.summary["interfaces"].get(iface, {}).get("node")
            for reason, c in sorted(reasons.items()):
                rows.append({"source": "counter", "part": p["name"], "iface": iface, "node": node,
                             "reason": reason, "packets": c.get("packets"), "bytes": c.get("bytes")})
    for iface, info in sorted(run.summary["interfaces"].items()):
        for reason, c in sorted(info.get("drops", {}).items()):
            rows.append({"source": "counter", "iface": iface, "node": info.get("node"), "reason": reason,
                         "packets": c.get("packets"), "bytes": c.get("bytes")})
    for node, info in sorted(run.summary.get("nodes", {}).items()):
        for reason, c in sorted(info.get("drops", {}).items()):
            rows.append({"source": "counter", "node": node, "reason": reason,
                         "packets": c.get("packets"), "bytes": c.get("bytes")})
    return rows


def _flow_rows(run: Run, out: Outputs) -> list[dict[str, Any]]:
    rows = []
    clients: dict[str, int] = {}
    by_app: dict[int, Any] = {}
    for t in out.iperf3:
        if t.role == "client":
            k = clients.get(t.file, 0)
            clients[t.file] = k + 1
            app = app_for(run, "iperf3_client", t.file, k)
            if app is not None:
                by_app[app["app"]] = t
    pings: dict[int, Any] = {}
    for pr in out.pings:
        app = app_for(run, "ping", pr.file, pr.index)
        if app is not None:
            pings[app["app"]] = pr
    for f in run.summary["flows"]:
        row = {"source": "flow", "part": f.get("part"), "app": f.get("app"), "kind": f.get("kind"),
               "node": f.get("node"), "terminal": f.get("terminal"), "command": f.get("command"),
               "file": f.get("output"), "sent_bytes": f.get("sent_bytes"),
               "received_bytes": f.get("received_bytes"), "sent_packets": f.get("sent_packets"),
               "received_packets": f.get("received_packets"),
               "start_s": f["start_ns"] / NS if "start_ns" in f else None}
        t = by_app.get(f.get("app"))
        if t is not None:
            rtts = [r["rtt"] / 1000 for r in t.rows if r["row"] == "stream" and r.get("rtt")]
            row.update(protocol=t.protocol, goodput_bps=t.goodput_bps, retransmits=t.retransmits,
                       rtt_mean_ms=None if t.mean_rtt_us is None else t.mean_rtt_us / 1000,
                       rtt_p99_ms=p99(rtts))
            if t.protocol == "udp" and t.packets:
                row.update(lost_packets=t.lost_packets, loss_pct=100 * (t.lost_packets or 0) / t.packets)
        pr = pings.get(f.get("app"))
        if pr is not None:
            rtts = [r[2] for r in pr.replies]
            row.update(protocol="icmp", rtt_mean_ms=sum(rtts) / len(rtts) if rtts else None,
                       rtt_p99_ms=p99(rtts))
            if pr.transmitted is not None:
                lost = pr.transmitted - (pr.received or 0)
                pct = 100 * lost / pr.transmitted if pr.transmitted else None
                row.update(lost_packets=lost, loss_pct=pct)
        rows.append(row)
    for p in run.parts:
        for c in p.get("classes", []):
            rows.append({"source": "class", "part": p["name"], "protocol": "udp", "tos": c.get("tos"),
                         "sent_packets": c.get("sent"), "received_packets": c.get("received"),
                         "lost_packets": c.get("dropped"), "loss_pct": c.get("dropped_pct")})
    return rows


def fct_table_rows(run: Run, problems: list[Problem]) -> list[dict[str, Any]]:
    """Every flow of every ``flows -c`` (the part's ``fct`` files, outputs/fct.py)."""
    rows = []
    for p in run.parts:
        for rel in p.get("fct", []):
            path = run.root / rel
            try:
                flows = read_fct_csv(path)
            except (OSError, KeyError, ValueError) as e:
                problems.append(Problem(str(path), f"cannot read the flow records ({e})",
                                        "the CSV a flows command wrote (" + ", ".join(
                                            ("flow", "start_s", "size_bytes", "fct_s", "retransmits",
                                             "completed")) + ")", "re-run the scenario"))
                continue
            host = Path(rel).parts[1] if len(Path(rel).parts) > 2 else None
            rows.extend({"part": p["name"], "host": host, "file": rel, **f} for f in flows)
    return rows


def _iperf2_commands(run: Run) -> list[str]:
    """The ``iperf`` (2) commands that sent traffic in the run (a note must not tell the
    user to add a test that ran)."""
    found = []
    for f in run.summary.get("flows", []):
        simple = str(f.get("simple") or f.get("command") or "")
        words = simple.split()
        program = words[1] if words[:1] == ["sudo"] and len(words) > 1 else (words[0] if words else "")
        if program == "iperf" and simple not in found:
            found.append(simple)
    return sorted(found, key=lambda c: " -c " not in f" {c} ")  # a client first


def table_rows(run: Run, out: Outputs, problems: list[Problem]) -> dict[str, list[dict[str, Any]]]:
    """The rows of every table but queue_events (:func:`queue_event_batches`), built from the
    run's files in memory: ``drops`` has the counter rows only (the event rows are the
    queue_events' drops and marks). A run under way (bufferlab serve) has the parts summary.json
    lists so far."""
    return {"intervals": _interval_rows(out), "ping": _ping_rows(run, out),
            "queue_samples": queue_sample_rows(run, problems), "drops": _counter_drop_rows(run),
            "flows": _flow_rows(run, out), "fct": fct_table_rows(run, problems)}


def write_tables(run: Run) -> TablesResult:
    """Write every table of ``run`` into ``<run>/tables/``; problems are returned, not raised."""
    folder = run.root / "tables"
    ensure_dir(folder)  # a symlink there is replaced by a folder (safefs.py)
    res = TablesResult(folder)
    out = scan_outputs(run)
    res.outputs = out
    tables = {
        "intervals": _interval_rows(out),
        "ping": _ping_rows(run, out),
        "queue_samples": queue_sample_rows(run, res.problems),
    }
    n_events, event_drops = _copy_queue_events(run, folder, res.problems)
    res.rows["queue_events"] = n_events
    tables["drops"] = event_drops + _counter_drop_rows(run)
    tables["flows"] = _flow_rows(run, out)
    tables["fct"] = fct_table_rows(run, res.problems)
    for name, rows in tables.items():
        _write(folder, name, table(name, rows))
        res.rows[name] = len(rows)
    if not out.iperf3:
        iperf2 = _iperf2_commands(run)
        effect = ("the intervals table (built from iperf3's reports) is empty; iperf 2 ran "
                  f"(`{iperf2[0]}`): its reports are in the terminal logs, not tabulated" if iperf2 else
                  "the intervals table is empty; add an iperf3 test to the scenario")
        res.problems.append(Problem(str(run.root), "the run has no iperf3 output",
                                    "an iperf3 client or server in some part (its JSON or text output)",
                                    effect, "absent"))
    if not out.pings:
        res.problems.append(Problem(str(run.root), "the run has no ping output",
                                    "a ping command in some part", "the ping table is empty", "absent"))
    return res
