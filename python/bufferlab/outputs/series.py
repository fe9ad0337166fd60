"""The time series of a run, ready to plot: `bufferlab serve`'s interactive charts and the
notebook view's figures (run/notebook.py) draw these same series.

They come from the run's tables (docs/tables.md). A run under way has no tables yet: the
same rows are then built in memory from the parts summary.json lists so far
(:func:`tables.table_rows`, :func:`tables.queue_event_batches`), so a page can draw each
part as soon as it ends. Long series (a traced queue changes up to ~250 000 times a
simulated second) are thinned to at most :data:`MAX_POINTS` points: each time bucket keeps
its smallest and largest value, so a peak is never lost.

One chart per quantity, one series per part and source (an iperf3 test, a ping, an
interface), each on the time since its own start (test, ping, plot_q.sh or part), as
`bufferlab compare` draws them, so parts and runs overlay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .result_lines import result_lines
from .results import DAMAGE, Problem, Run, load_run, scan_outputs
from .tables import SCHEMAS, queue_event_batches, table, table_rows

#: points per series at most (each of MAX_POINTS // 2 time buckets keeps its min and max): two
#: per pixel column of a chart 600 pixels wide, more than a page or a notebook figure shows
MAX_POINTS = 1200

#: key, title, x axis, y axis of every chart, in the order pages show them
CHARTS: list[tuple[str, str, str, str]] = [
    ("throughput", "Throughput (iperf3 intervals)", "time since the test started (s)", "Mbit/s"),
    ("ping", "Ping RTT", "time since the ping started (s)", "RTT (ms)"),
    ("backlog", "Queue backlog", "time since the part (plot_q.sh) started (s)", "bytes"),
    ("sojourn", "Queue sojourn time (dequeued packets)", "time since the part started (s)", "ms"),
    ("cwnd", "Congestion window (iperf3)", "time since the test started (s)", "KBytes"),
    ("tcp_rtt", "TCP smoothed RTT (iperf3)", "time since the test started (s)", "RTT (ms)"),
    ("drops", "Drops and ECN marks (cumulative)", "time since the part started (s)", "packets"),
    ("fct", "Flow completion times (CDF)", "flow completion time (ms)", "fraction of flows"),
]
#: the tables the charts read, and the columns of queue_events they need
_TABLES = ("intervals", "ping", "queue_samples", "fct")
_EVENT_COLUMNS = ("part", "iface", "part_time_s", "event", "backlog_bytes", "drops", "marks", "sojourn_s")


@dataclass
class Series:
    label: str
    x: list[float | None]
    y: list[float | None]


@dataclass
class Chart:
    key: str
    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)

    def doc(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "x": self.xlabel, "y": self.ylabel,
                "series": [{"label": s.label, "x": s.x, "y": s.y} for s in self.series]}


def _clean(values: Any) -> list[float | None]:
    """Floats for JSON: NaN and infinities become null."""
    return [None if v is None or not math.isfinite(v) else float(v) for v in np.asarray(values, dtype=float)]


def thin(x: np.ndarray, y: np.ndarray, n: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """At most ``n`` points of a series sorted by ``x``: per time bucket its min and its max,
    in time order (points whose value is not finite are left out)."""
    if len(x) <= n:
        return x, y
    finite = np.flatnonzero(np.isfinite(y))
    if len(finite) == 0:
        return x[:0], y[:0]
    xs, ys = x[finite], y[finite]
    span = xs[-1] - xs[0]
    buckets = n // 2
    b = np.zeros(len(xs), dtype=np.int64) if span <= 0 else \
        np.minimum(((xs - xs[0]) / span * buckets).astype(np.int64), buckets - 1)
    order = np.lexsort((ys, b))  # by bucket, then by value
    sb = b[order]
    first = np.flatnonzero(np.r_[True, sb[1:] != sb[:-1]])
    last = np.r_[first[1:], len(sb)] - 1
    keep = finite[np.unique(np.concatenate((order[first], order[last])))]
    return x[keep], y[keep]


def _series(label: str, x: Any, y: Any) -> Series:
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    order = np.argsort(xs, kind="stable")
    xs, ys = thin(xs[order], ys[order])
    return Series(label, _clean(xs), _clean(ys))


# ---------------------------------------------------------------- reading the tables


def _read_tables(root: Path) -> dict[str, pa.Table] | None:
    """The run's written tables, or None if any is missing or unreadable (a run under way,
    or its tables being written)."""
    folder = root / "tables"
    try:
        found = {name: pq.read_table(folder / f"{name}.parquet") for name in _TABLES}
        found["queue_events"] = pq.read_table(folder / "queue_events.parquet", columns=list(_EVENT_COLUMNS))
    except (OSError, pa.ArrowException, ValueError):
        return None
    return found


def _build_tables(run: Run, problems: list[Problem]) -> dict[str, pa.Table]:
    """The same tables built in memory from the files of the parts summary.json lists."""
    try:
        out = scan_outputs(run)
        rows = table_rows(run, out, problems)
    except DAMAGE as e:  # a tool's output still being written (a server that outlives its part)
        problems.append(Problem(str(run.root), f"some outputs cannot be read yet ({type(e).__name__})",
                                "the outputs of the parts that ended", "wait for the run to end"))
        rows = {name: [] for name in _TABLES}
    found = {name: table(name, rows[name]) for name in _TABLES}
    batches = list(queue_event_batches(run, problems, columns=("time_s", "event", "backlog_bytes", "drops",
                                                               "marks", "sojourn_s")))
    ev = pa.Table.from_batches(batches, schema=SCHEMAS["queue_events"]) if batches else \
        SCHEMAS["queue_events"].empty_table()
    found["queue_events"] = ev.select(list(_EVENT_COLUMNS))
    return found


def load_tables(root: Path, problems: list[Problem], live: bool = False) -> tuple[Run, dict[str, pa.Table]]:
    """The run and its tables: read from ``tables/`` unless ``live`` (or they are not all
    there), else built from its files."""
    run = load_run(root)
    tables = None if live else _read_tables(run.root)
    return run, tables if tables is not None else _build_tables(run, problems)


# ---------------------------------------------------------------- charts


def _rows(t: pa.Table, parts: set[str] | None) -> list[dict[str, Any]]:
    return [r for r in t.to_pylist() if parts is None or r["part"] in parts]


def _name(prefix: str, *words: Any) -> str:
    return " · ".join(w for w in (prefix, *(str(x) for x in words if x not in (None, ""))) if w)


def _iperf3_charts(t: pa.Table, parts: set[str] | None, prefix: str, charts: dict[str, Chart],
                   show: bool) -> None:
    tests: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in _rows(t, parts):
        if r["role"] == "client" and not r["omitted"]:
            tests.setdefault((r["part"], r["host"], r["file"], r["test"]), []).append(r)
    for (part, host, file, test), rows in tests.items():
        what = f"{host}/{Path(file).name}" + (f" #{test + 1}" if test else "")
        name = _name(prefix, part if show else None, what)
        sums = [r for r in rows if r["row"] == "sum"]
        streams = [r for r in rows if r["row"] == "stream"]
        tput = [(r["end_s"], r["bits_per_second"] / 1e6) for r in (sums or streams)
                if r["bits_per_second"] is not None]
        if tput:
            charts["throughput"].series.append(_series(name, *zip(*tput, strict=True)))
        sockets = sorted({r["socket"] for r in streams if r["snd_cwnd"] is not None})
        for sock in sockets:
            own = [r for r in streams if r["socket"] == sock]
            label = name if len(sockets) == 1 else f"{name} · stream {sock}"
            cw = [(r["end_s"], r["snd_cwnd"] / 1024) for r in own if r["snd_cwnd"] is not None]
            rtt = [(r["end_s"], r["rtt_us"] / 1000) for r in own if r["rtt_us"] is not None]
            if cw:
                charts["cwnd"].series.append(_series(label, *zip(*cw, strict=True)))
            if rtt:
                charts["tcp_rtt"].series.append(_series(label, *zip(*rtt, strict=True)))


def _ping_chart(t: pa.Table, parts: set[str] | None, prefix: str, chart: Chart, show: bool) -> None:
    runs: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in _rows(t, parts):
        runs.setdefault((r["part"], r["host"], r["file"], r["run"], r["dest"]), []).append(r)
    for (part, host, _file, _run, dest), rows in runs.items():
        label = _name(prefix, part if show else None, f"{host} → {dest}")
        chart.series.append(_series(label, [r["rel_s"] for r in rows], [r["rtt_ms"] for r in rows]))


def _queue_charts(samples: pa.Table, events: pa.Table, parts: set[str] | None, prefix: str,
                  charts: dict[str, Chart], show: bool) -> None:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in _rows(samples, parts):
        groups.setdefault((r["part"], r["iface"]), []).append(r)
    for (part, iface), rows in groups.items():
        label = _name(prefix, part if show else None, iface, "plot_q.sh")
        charts["backlog"].series.append(_series(label, [r["time_s"] for r in rows],
                                                [r["backlog_bytes"] for r in rows]))
    if events.num_rows == 0:
        return
    import pyarrow.compute as pc

    # (part, iface) as integer codes: one comparison per row and key, in numpy
    parts_enc = pc.dictionary_encode(events.column("part").combine_chunks())
    ifaces_enc = pc.dictionary_encode(events.column("iface").combine_chunks())
    part_names, iface_names = parts_enc.dictionary.to_pylist(), ifaces_enc.dictionary.to_pylist()
    code = (parts_enc.indices.to_numpy(zero_copy_only=False).astype(np.int64) * len(iface_names)
            + ifaces_enc.indices.to_numpy(zero_copy_only=False))
    t = events.column("part_time_s").to_numpy(zero_copy_only=False).astype(float)
    dequeue = pc.equal(events.column("event"), "dequeue").to_numpy(zero_copy_only=False)
    backlog = events.column("backlog_bytes").to_numpy(zero_copy_only=False).astype(float)
    drops = events.column("drops").to_numpy(zero_copy_only=False).astype(float)
    marks = events.column("marks").to_numpy(zero_copy_only=False).astype(float)
    sojourn = events.column("sojourn_s").to_numpy(zero_copy_only=False).astype(float)
    _, first = np.unique(code, return_index=True)
    for k in code[np.sort(first)]:  # in the order the traces come
        part, iface = part_names[k // len(iface_names)], iface_names[k % len(iface_names)]
        if parts is not None and part not in parts:
            continue
        sel = code == k
        name = _name(prefix, part if show else None, iface)
        charts["backlog"].series.append(_series(f"{name} (trace)", t[sel], backlog[sel]))
        deq = sel & dequeue
        if deq.any():
            charts["sojourn"].series.append(_series(name, t[deq], sojourn[deq] * 1e3))
        if np.nanmax(drops[sel], initial=0) > 0:
            charts["drops"].series.append(_series(f"{name} drops", t[sel], drops[sel]))
        if np.nanmax(marks[sel], initial=0) > 0:
            charts["drops"].series.append(_series(f"{name} marks", t[sel], marks[sel]))


def _fct_chart(t: pa.Table, parts: set[str] | None, prefix: str, chart: Chart, show: bool) -> None:
    groups: dict[tuple[Any, ...], list[float]] = {}
    for r in _rows(t, parts):
        if r["completed"] and r["fct_s"] is not None:
            groups.setdefault((r["part"], r["host"], r["file"]), []).append(r["fct_s"] * 1e3)
    for (part, host, _file), fcts in groups.items():
        x = np.sort(np.asarray(fcts, dtype=float))
        y = np.arange(1, len(x) + 1) / len(x)
        if len(x) > MAX_POINTS:  # evenly spaced quantiles
            idx = np.unique(np.linspace(0, len(x) - 1, MAX_POINTS).round().astype(int))
            x, y = x[idx], y[idx]
        chart.series.append(Series(_name(prefix, part if show else None, host), _clean(x), _clean(y)))


def charts(tables: dict[str, pa.Table], parts: list[str] | None = None, prefix: str = "") -> list[Chart]:
    """Every chart of :data:`CHARTS` from ``tables`` (only ``parts`` if given; ``prefix`` starts
    each series' label: the run's, when several are overlaid)."""
    wanted = set(parts) if parts is not None else None
    made = {key: Chart(key, title, xl, yl) for key, title, xl, yl in CHARTS}
    show = wanted is None or len(wanted) > 1  # one part picked: its name is the prefix's already
    _iperf3_charts(tables["intervals"], wanted, prefix, made, show)
    _ping_chart(tables["ping"], wanted, prefix, made["ping"], show)
    _queue_charts(tables["queue_samples"], tables["queue_events"], wanted, prefix, made, show)
    _fct_chart(tables["fct"], wanted, prefix, made["fct"], show)
    return list(made.values())


def overview(run: Run) -> dict[str, Any]:
    """What a page shows above the charts: the run's state and each part's result lines."""
    s = run.summary
    parts = [{"name": p["name"], "start_s": p["start_ns"] / 1e9, "end_s": p["end_ns"] / 1e9,
              "lines": result_lines(p.get("results") or {}), "interrupted": p.get("interrupted"),
              "error": p.get("error"), "stopped": p.get("stopped")} for p in run.parts]
    return {"scenario": s["scenario"], "simulated_s": s.get("simulated_s"), "events": s.get("events"),
            "parts": parts, "interrupted": s.get("interrupted"), "error": s.get("error"),
            "stopped": s.get("stopped"), "warnings": s.get("warnings", []),
            "failures": [f"{f.get('where', '?')}: {f.get('node', '?')}: `{f.get('command', '')}` exited with "
                         f"status {f.get('status')}" for f in s.get("failures", []) if isinstance(f, dict)]}


def run_series(root: Path, parts: list[str] | None = None, prefix: str = "",
               live: bool = False) -> dict[str, Any]:
    """The overview and charts of the run in ``root`` as one JSON-ready document."""
    problems: list[Problem] = []
    run, tables = load_tables(root, problems, live)
    return {"overview": overview(run), "charts": [c.doc() for c in charts(tables, parts, prefix)],
            "problems": [str(p) for p in problems if p.kind == "bad"]}


def figure(chart_docs: list[dict[str, Any]], columns: int = 2) -> Any:
    """A matplotlib figure of the non-empty charts (the notebook view's static picture)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [c for c in chart_docs if c["series"]]
    rows = max(1, math.ceil(len(shown) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(6.2 * columns, 3.1 * rows), squeeze=False)
    for ax, c in zip(axes.flat, shown, strict=False):
        for s in c["series"]:
            x = [np.nan if v is None else v for v in s["x"]]
            y = [np.nan if v is None else v for v in s["y"]]
            style = "steps-post" if c["key"] == "fct" else "default"
            ax.plot(x, y, lw=1.1, label=s["label"], drawstyle=style)
        ax.set_title(c["title"], fontsize=10)
        ax.set_xlabel(c["x"], fontsize=8)
        ax.set_ylabel(c["y"], fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(True, alpha=0.35)
        if len(c["series"]) <= 8:
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(shown):]:
        ax.set_visible(False)
    fig.set_layout_engine("tight")  # laid out at its first write (safefs.savefig)
    return fig
