"""Flow completion times of ``flows`` workloads: the per-command record file, the
per-size-bucket summary and the FCT-vs-size plot.

A ``flows -c`` command writes ``fct_<app>.csv`` (one row per flow, columns
:data:`CSV_COLUMNS`) and ``fct_<app>.png`` into its terminal's folder when it ends;
summary.json lists the CSV under its part's ``fct`` key; the run's ``fct`` table
(tables.py) concatenates them. Buckets follow the convention of the flow-scheduling
literature (pFabric, DCTCP): small flows below 100 KB, medium 100 KB–10 MB, large
10 MB and above, in decimal bytes (1 KB = 1000 B).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from ..safefs import open_atomic, savefig

__all__ = ["BUCKETS", "CSV_COLUMNS", "quantile", "fct_rows", "fct_summary", "write_fct_csv", "read_fct_csv",
           "plot_fct"]

#: (label, lower bound inclusive, upper bound exclusive) in bytes
BUCKETS: tuple[tuple[str, float, float], ...] = (
    ("< 100 KB", 0, 100_000),
    ("100 KB–10 MB", 100_000, 10_000_000),
    (">= 10 MB", 10_000_000, math.inf),
)
CSV_COLUMNS = ("flow", "start_s", "size_bytes", "fct_s", "retransmits", "completed")


def quantile(values: list[float], q: float) -> float | None:
    """The q-quantile by linear interpolation (numpy's default), None for no values."""
    if not values:
        return None
    v = sorted(values)
    k = (len(v) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def fct_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's ``flows_client`` result as one dict per flow (CSV_COLUMNS)."""
    f = result.get("flows", {})
    return [{"flow": i, "start_s": s / 1e9, "size_bytes": size, "fct_s": None if t is None else t / 1e9,
             "retransmits": r, "completed": t is not None}
            for i, s, size, t, r in zip(f.get("id", []), f.get("start_ns", []), f.get("size", []),
                                        f.get("fct_ns", []), f.get("retransmits", []), strict=True)]


def fct_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per size bucket: flows, completed, mean/p50/p99 FCT in ms (0.001) of the completed."""
    out = []
    for label, lo, hi in BUCKETS:
        inside = [r for r in rows if lo <= r["size_bytes"] < hi]
        fcts = [r["fct_s"] * 1e3 for r in inside if r["completed"]]

        def ms(v: float | None) -> float | None:
            return None if v is None else round(v, 3)

        out.append({"bucket": label, "flows": len(inside), "completed": len(fcts),
                    "mean_ms": ms(sum(fcts) / len(fcts)) if fcts else None,
                    "p50_ms": ms(quantile(fcts, 0.5)), "p99_ms": ms(quantile(fcts, 0.99))})
    return out


def write_fct_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    with open_atomic(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow([r["flow"], f"{r['start_s']:.9f}", r["size_bytes"],
                        "" if r["fct_s"] is None else f"{r['fct_s']:.9f}", r["retransmits"],
                        int(r["completed"])])


def read_fct_csv(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8", newline="") as f:
        return [{"flow": int(r["flow"]), "start_s": float(r["start_s"]), "size_bytes": int(r["size_bytes"]),
                 "fct_s": float(r["fct_s"]) if r["fct_s"] else None, "retransmits": int(r["retransmits"]),
                 "completed": r["completed"] == "1"} for r in csv.DictReader(f)]


def plot_fct(series: dict[str, list[dict[str, Any]]], path: Path, title: str) -> None:
    """FCT against flow size, log-log: every completed flow as a dot, and the median per
    factor-of-2 size bin as a line, one colour per series (a command, or a part)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.8))
    for i, (label, rows) in enumerate(series.items()):
        done = [(r["size_bytes"], r["fct_s"] * 1e3) for r in rows if r["completed"]]
        if not done:
            continue
        colour = f"C{i % 10}"
        ax.scatter([d[0] for d in done], [d[1] for d in done], s=4, alpha=0.25, color=colour, lw=0)
        bins: dict[int, list[float]] = {}
        for size, fct in done:
            bins.setdefault(int(math.log2(max(size, 1))), []).append(fct)
        medians = [(2.0 ** (k + 0.5), m) for k in sorted(bins) if (m := quantile(bins[k], 0.5)) is not None]
        ax.plot([x for x, _ in medians], [m for _, m in medians], color=colour, lw=1.8,
                label=f"{label} (median)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Flow size (bytes)")
    ax.set_ylabel("Flow completion time (ms)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.set_layout_engine("tight")  # laid out at its first write (safefs.savefig)
    savefig(fig, path, dpi=110)
    plt.close(fig)
