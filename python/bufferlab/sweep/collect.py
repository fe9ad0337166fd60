"""``<sweep>/sweep.parquet`` and ``<sweep>/tables/``, from the files the runs wrote.

Nothing is re-simulated: each finished run's ``run.json`` and ``tables/``
(docs/tables.md) are read back. Rows follow the sweep file's order of runs,
not the order they completed, so the same sweep gives the same table whatever
the executor and however often it was interrupted (``wall_s`` aside).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..safefs import ensure_dir, not_a_file, open_write, special_file
from .runs import RunJob, read_record

#: flows of the flows table that carry a measurement (sinks come from summary.json, which
#: counts their payload bytes as the ns-3 programs' goodput does)
MEASURED = ("iperf3_client", "ping")
FLOW_COLUMNS = ["part", "kind", "node", "terminal", "command", "protocol", "sent_bytes", "received_bytes",
                "goodput_bps", "retransmits", "rtt_mean_ms", "rtt_p99_ms", "lost_packets", "loss_pct"]


def _run_columns(rec: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": rec["run_id"], "seed": rec["seed"], **rec["params"]}


def _rows(rec: dict[str, Any], root: Path) -> list[dict[str, Any]]:
    base = {**_run_columns(rec), "status": rec["status"], "error": rec.get("error"), "wall_s": rec["wall_s"]}
    if rec["status"] != "ok":
        return [base]
    odd = special_file(root)
    if odd is not None:  # opening a FIFO to read would wait for ever: the run is damaged
        raise ValueError(f"{odd}: {not_a_file(odd)}")
    flows = pd.read_parquet(root / "tables" / "flows.parquet")
    drops = pd.read_parquet(root / "tables" / "drops.parquet")
    drops = drops[(drops["source"] == "counter") & drops["part"].notna()]
    per_part: dict[str, dict[str, Any]] = {}
    for d in drops.itertuples():
        cols = per_part.setdefault(d.part, {})
        cols[f"drops_{d.iface}_{d.reason}"] = cols.get(f"drops_{d.iface}_{d.reason}", 0) + int(d.packets or 0)
    measured = flows[(flows["source"] == "flow") & flows["kind"].isin(MEASURED)]
    rows = [{**base, "flow": f.command, **{c: getattr(f, c) for c in FLOW_COLUMNS}}
            for f in measured.itertuples()]
    try:
        summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    except ValueError as e:  # named, for the row of a damaged run
        raise ValueError(f"{root / 'summary.json'}: {e}") from None
    for part in summary["parts"]:
        rows += [{**base, "flow": f"{s['host']}:{s['port']}", "part": part["name"], "kind": "sink",
                  "node": s["host"], "protocol": s["proto"], "received_bytes": s["bytes"],
                  "received_packets": s["packets"], "goodput_bps": 8 * s["goodput_Bps"]}
                 for s in part.get("sinks", [])]
    order = {p["name"]: i for i, p in enumerate(summary["parts"])}
    rows.sort(key=lambda r: order.get(r["part"], -1))  # stable: each part's flows in table order
    return [{**r, **per_part.get(r["part"], {})} for r in rows]


def write_results(out: Path, jobs: list[RunJob]) -> Path:
    """Write ``out/sweep.parquet`` and ``out/tables/*.parquet``; return the former's path."""
    rows: list[dict[str, Any]] = []
    tables: dict[str, list[pd.DataFrame]] = {}
    for job in jobs:
        rec = read_record(out / "runs" / job.run_id)
        if rec is None:  # not run (the sweep was interrupted)
            continue
        root = out / "runs" / job.run_id / str(rec.get("root") or "")
        try:
            run_rows = _rows(rec, root)
            run_tables = []
            if rec["status"] == "ok":
                for t in sorted((root / "tables").glob("*.parquet")):
                    df = pd.read_parquet(t)
                    for k, v in reversed(_run_columns(rec).items()):
                        df.insert(0, k, v)
                    run_tables.append((t.stem, df))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
            # damaged since it finished: one row saying so (the next sweep runs it again)
            where = f"{e.filename}: " if isinstance(e, OSError) and e.filename else ""
            run_rows = [{**_run_columns(rec), "status": "damaged", "wall_s": rec["wall_s"],
                         "error": f"{where}{type(e).__name__}: {e}"}]
            run_tables = []
        rows += run_rows
        for stem, df in run_tables:
            tables.setdefault(stem, []).append(df)
    ensure_dir(out / "tables", out)
    for name, parts in tables.items():
        with open_write(out / "tables" / f"{name}.parquet", "wb") as f:  # never through a link
            _parquet_safe(pd.concat(parts, ignore_index=True)).to_parquet(f, index=False)
    frame = _parquet_safe(pd.DataFrame(rows))
    drop_cols = sorted(c for c in frame.columns if c.startswith("drops_"))
    frame[drop_cols] = frame[drop_cols].fillna(0).astype("int64") if drop_cols else frame[drop_cols]
    path = out / "sweep.parquet"
    with open_write(path, "wb") as f:
        frame.to_parquet(f, index=False)
    return path


#: the integers a Parquet column holds (int64)
_INT64 = range(-(2**63), 2**63)


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A column holding a whole number beyond int64 (a sweep value such as t = 10**21, which
    the scenario refuses, but which its run's row still names) as text, every value of it."""
    for col in frame.columns:
        values = frame[col]
        if values.dtype == object and any(isinstance(v, int) and not isinstance(v, bool) and v not in _INT64
                                          for v in values):
            frame[col] = [None if v is None else str(v) for v in values]
    return frame


def read_frame(out: Path) -> pd.DataFrame:
    """``out/sweep.parquet`` (a sweep that ended)."""
    return pd.read_parquet(out / "sweep.parquet")


def finished_frame(out: Path) -> pd.DataFrame:
    """The rows sweep.parquet will have for the runs finished so far (a sweep under way:
    bufferlab serve watches it fill), in run-id order."""
    rows: list[dict[str, Any]] = []
    runs = out / "runs"
    for run_dir in sorted(runs.iterdir()) if runs.is_dir() and not runs.is_symlink() else []:
        rec = None if run_dir.name.endswith(".partial") else read_record(run_dir)
        if rec is None:
            continue
        try:
            rows += _rows(rec, run_dir / str(rec.get("root") or ""))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            rows.append({**_run_columns(rec), "status": "damaged", "wall_s": rec["wall_s"]})
    return pd.DataFrame(rows, columns=None if rows else ["run_id", "seed", "status"])


def param_columns(out: Path) -> list[str]:
    """The swept parameters' names (from a finished run's record)."""
    runs = out / "runs"
    for run_dir in sorted(runs.iterdir()) if runs.is_dir() and not runs.is_symlink() else []:
        rec = read_record(run_dir)
        if rec is not None:
            return list(rec["params"])
    return []
