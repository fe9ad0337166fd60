"""Exact queue traces: the engine's binary records → Parquet + a plot.

The engine streams one fixed 56-byte record per change of a traced
interface's root qdisc (crates/bufferlab-core/src/capture/trace.rs) into a
temporary file; :func:`convert` turns it chunk-wise into
``queue_trace_<iface>.parquet`` and draws ``queue_trace_<iface>.png``/``.pdf``
in the same pass, so a 90 s gigabit trace (millions of rows) never sits in
memory whole.

Parquet schema (a contract other modules read; docs/internals.md):

=================  =======  =====================================================
``time_s``         float64  seconds since the scenario start (simulated)
``event``          string   ``enqueue`` | ``dequeue`` | ``drop`` | ``mark``
``backlog_bytes``  int64    bytes the interface's qdiscs hold after the event
``backlog_packets`` int64   packets they hold (the whole tree: netem + child)
``drops``          int64    cumulative drops on the interface since the trace began
``marks``          int64    cumulative ECT→CE marks since the trace began
``sojourn_s``      float64  dequeue: time the packet spent in the root; else NaN
=================  =======  =====================================================
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..safefs import open_atomic, savefig
from . import arrow

RECORD = np.dtype(
    [
        ("t_ns", "<u8"),
        ("backlog_bytes", "<u8"),
        ("backlog_packets", "<u8"),
        ("drops", "<u8"),
        ("marks", "<u8"),
        ("sojourn_ns", "<i8"),
        ("kind", "u1"),
        ("pad", "V7"),
    ]
)
assert RECORD.itemsize == 56
EVENTS = ("enqueue", "dequeue", "drop", "mark")
CHUNK_ROWS = 1 << 20
#: up to this many rows the plot draws every change; above, per-bin envelopes
EXACT_PLOT_ROWS = 20_000
PLOT_BINS = 4000


def schema():  # type: ignore[no-untyped-def]
    import pyarrow as pa

    return pa.schema(
        [
            ("time_s", pa.float64()),
            ("event", pa.string()),
            ("backlog_bytes", pa.int64()),
            ("backlog_packets", pa.int64()),
            ("drops", pa.int64()),
            ("marks", pa.int64()),
            ("sojourn_s", pa.float64()),
        ]
    )


@dataclass
class _Plot:
    """What the plot needs, reduced while converting."""

    rows: int
    t0: float = 0.0
    t1: float = 0.0
    exact: list[np.ndarray] = field(default_factory=list)
    # per-bin reductions (large traces)
    bmax: np.ndarray | None = None
    bmin: np.ndarray | None = None
    pmax: np.ndarray | None = None
    smax: np.ndarray | None = None
    drops: np.ndarray | None = None
    marks: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.rows > EXACT_PLOT_ROWS:
            self.bmax = np.full(PLOT_BINS, -1, np.int64)
            self.bmin = np.full(PLOT_BINS, np.iinfo(np.int64).max, np.int64)
            self.pmax = np.full(PLOT_BINS, -1, np.int64)
            self.smax = np.full(PLOT_BINS, np.nan)
            self.drops = np.full(PLOT_BINS, -1, np.int64)
            self.marks = np.full(PLOT_BINS, -1, np.int64)

    def add(self, a: np.ndarray) -> None:
        if self.bmax is None:
            self.exact.append(a.copy())
            return
        assert self.bmin is not None and self.pmax is not None and self.smax is not None
        assert self.drops is not None and self.marks is not None
        t = a["t_ns"] / 1e9
        span = max(self.t1 - self.t0, 1e-12)
        b = np.minimum(((t - self.t0) / span * PLOT_BINS).astype(np.int64), PLOT_BINS - 1)
        # time never decreases, so each bin is one contiguous run: reduceat per run
        starts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        bins = b[starts]

        def fold(dst: np.ndarray, col: np.ndarray, op: np.ufunc) -> None:
            dst[bins] = op(dst[bins], op.reduceat(col, starts))

        fold(self.bmax, a["backlog_bytes"].astype(np.int64), np.maximum)
        fold(self.bmin, a["backlog_bytes"].astype(np.int64), np.minimum)
        fold(self.pmax, a["backlog_packets"].astype(np.int64), np.maximum)
        fold(self.drops, a["drops"].astype(np.int64), np.maximum)
        fold(self.marks, a["marks"].astype(np.int64), np.maximum)
        soj = np.where(a["kind"] == 1, a["sojourn_ns"] / 1e9, -1.0)
        cur = np.where(np.isnan(self.smax), -1.0, self.smax)
        fold(cur, soj, np.maximum)
        self.smax = np.where(cur < 0, np.nan, cur)


def convert(bin_path: Path, parquet_path: Path, dev: str, plot: bool = True, min_interval_ns: int = 0) -> int:
    """Write the Parquet file (and the plots) for one trace recorded with
    thinning interval ``min_interval_ns`` (0: every change); returns the row
    count. The binary file is removed afterwards."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = arrow.array(list(EVENTS), arrow.S)
    size = bin_path.stat().st_size
    rows = size // RECORD.itemsize
    pl = _Plot(rows)
    with bin_path.open("rb") as f:
        if rows:
            first = np.frombuffer(f.read(RECORD.itemsize), RECORD)
            f.seek((rows - 1) * RECORD.itemsize)
            last = np.frombuffer(f.read(RECORD.itemsize), RECORD)
            pl.t0, pl.t1 = first["t_ns"][0] / 1e9, last["t_ns"][0] / 1e9
            f.seek(0)
        with open_atomic(parquet_path, "wb") as sink, pq.ParquetWriter(sink, schema()) as w:
            while True:
                buf = f.read(CHUNK_ROWS * RECORD.itemsize)
                if not buf:
                    break
                a = np.frombuffer(buf, RECORD)
                soj = a["sojourn_ns"]
                event = pa.DictionaryArray.from_arrays(arrow.numeric(a["kind"], arrow.I8), names)
                counts = ("backlog_bytes", "backlog_packets", "drops", "marks")
                table = pa.Table.from_arrays(
                    [
                        arrow.numeric(a["t_ns"] / 1e9, arrow.F64),
                        event.cast(pa.string()),
                        *(arrow.numeric(a[c], arrow.I64) for c in counts),
                        arrow.numeric(np.where(soj >= 0, soj / 1e9, np.nan), arrow.F64),
                    ],
                    schema=schema(),
                )
                w.write_table(table)
                if plot:
                    pl.add(a)
            if rows == 0:
                w.write_table(schema().empty_table())
    bin_path.unlink()
    if plot:
        _draw(pl, dev, parquet_path.with_suffix(""), min_interval_ns)
    return rows


def _draw(pl: _Plot, dev: str, stem: Path, min_interval_ns: int) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 8))
    # fixed margins that hold 6-digit tick labels on both sides (a million and more get an
    # offset, "1e6"): the "tight" layout measured every label again at the first write
    fig.subplots_adjust(left=0.125, right=0.89, top=0.935, bottom=0.075, hspace=0.12)
    ax_b, ax_s, ax_d = fig.subplots(3, 1, sharex=True)
    ax_p = ax_b.twinx()
    if pl.bmax is None:
        a = np.concatenate(pl.exact) if pl.exact else np.zeros(0, RECORD)
        t = a["t_ns"] / 1e9
        ax_b.step(t, a["backlog_bytes"], where="post", lw=1.0, color="C0", label="bytes")
        ax_p.step(t, a["backlog_packets"], where="post", lw=0.8, color="C1", alpha=0.7, label="packets")
        deq = a["kind"] == 1
        # one marker per dequeue: an image in the PDF, where thousands of vector dots were
        # a fifth of its writing time
        ax_s.plot(t[deq], a["sojourn_ns"][deq] / 1e6, ".", ms=2, color="C2", rasterized=True)
        ax_d.step(t, a["drops"], where="post", color="C3", label="drops")
        ax_d.step(t, a["marks"], where="post", color="C4", label="ECN marks")
        exact = "every record" if min_interval_ns else "every change"
    else:
        assert pl.bmin is not None and pl.pmax is not None and pl.smax is not None
        assert pl.drops is not None and pl.marks is not None
        edges = np.linspace(pl.t0, pl.t1, PLOT_BINS + 1)[:-1]
        seen = pl.bmax >= 0
        t = edges[seen]
        ax_b.fill_between(t, pl.bmin[seen], pl.bmax[seen], step="post", color="C0", alpha=0.5, label="bytes")
        ax_p.step(t, pl.pmax[seen], where="post", lw=0.8, color="C1", alpha=0.7, label="packets (max)")
        ax_s.plot(edges, pl.smax * 1e3, lw=0.8, color="C2")
        ax_d.step(t, pl.drops[seen], where="post", color="C3", label="drops")
        ax_d.step(t, pl.marks[seen], where="post", color="C4", label="ECN marks")
        unit = "records" if min_interval_ns else "changes"
        exact = f"min/max per {(pl.t1 - pl.t0) / PLOT_BINS * 1e3:.3g} ms of {pl.rows} {unit}"
    if min_interval_ns:
        exact += f"; records of a kind ≥ {min_interval_ns / 1e6:g} ms apart"
    ax_b.set_title(f"Queue of {dev} (all its qdiscs)\n{exact}", fontsize="medium")
    ax_b.set_ylabel("Backlog (bytes)")
    ax_p.set_ylabel("Backlog (packets)")
    ax_s.set_ylabel("Sojourn time (ms)")
    ax_d.set_ylabel("Cumulative count")
    ax_d.set_xlabel("Time since scenario start (s)")
    for ax in (ax_b, ax_s, ax_d):
        ax.grid(True, alpha=0.4)
        ax.set_ylim(bottom=0)
    ax_p.set_ylim(bottom=0)
    # an empty panel gets a readable integer scale, not matplotlib's ±0.05
    for ax in (ax_b, ax_p, ax_d):
        if ax.get_ylim()[1] < 1:
            ax.set_ylim(0, 1)
    # headroom above the data, so the legend never covers a plateau at the top of the panel
    for ax in (ax_b, ax_p):
        ax.set_ylim(0, ax.get_ylim()[1] * 1.3)
    h1, l1 = ax_b.get_legend_handles_labels()
    h2, l2 = ax_p.get_legend_handles_labels()
    ax_b.legend(h1 + h2, l1 + l2, loc="upper right", fontsize="small", ncol=2)
    ax_d.legend(loc="upper left", fontsize="small")
    savefig(fig, stem.with_suffix(".png"), dpi=110)
    # no creation date: the same run gives byte-identical files
    savefig(fig, stem.with_suffix(".pdf"), metadata={"CreationDate": None})
