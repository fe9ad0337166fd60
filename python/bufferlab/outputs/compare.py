"""``bufferlab compare RUN_A RUN_B …``: the same plots overlaid, and one row of metrics per run.

A RUN is a scenario's results folder, a part inside one (``…/lab16-red/red``)
or a file or node folder inside a part (``…/30ms/h1/bbr.json``), so drop-tail
vs RED (two parts) and Reno vs BBR (two files of one part) compare alike.
Writes ``compare.csv``, ``compare.html`` (self-contained) and one PNG per
plot into the output folder, and prints the table.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from ..results_folder import claim
from ..safefs import open_atomic, savefig, write_atomic
from .report import _e, page, png_figure, table
from .results import (
    DAMAGE,
    Iperf3Test,
    PingRun,
    Problem,
    ResultsError,
    Run,
    app_for,
    damaged,
    load_run,
    ping_interval_s,
    scan_outputs,
)
from .tables import queue_sample_rows, queue_traces


@dataclass
class Selection:
    path: Path
    run: Run
    part: str | None
    #: a file or node folder inside the part (relative to the scenario folder), or None
    file: str | None
    label: str = ""
    tests: list[Iperf3Test] = field(default_factory=list)
    pings: list[PingRun] = field(default_factory=list)
    #: (part, iface) -> (times s, backlog bytes)
    queues: dict[tuple[str, str], tuple[list[float], list[int]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def has(self, part: str, file: str) -> bool:
        if self.part is not None and part != self.part:
            return False
        return self.file is None or file == self.file or file.startswith(self.file.rstrip("/") + "/")

    @property
    def parts(self) -> list[str]:
        return [p["name"] for p in self.run.parts if self.part in (None, p["name"])]


def resolve(path: Path) -> Selection:
    """Which run, part and file ``path`` names."""
    if not path.exists():
        raise ResultsError(path, "no such file or folder",
                           "a results folder (results/<scenario>), a part inside it, or a file in a part",
                           "run the scenario first, or check the path")
    apath = path.resolve()
    start = apath if apath.is_dir() else apath.parent
    for anc in [start, *start.parents][:5]:
        if (anc / "summary.json").is_file():
            run = load_run(anc)
            rel = apath.relative_to(anc).parts
            break
    else:
        return Selection(path, load_run(path), None, None)  # an -o folder holding one scenario, or an error
    part = rel[0] if rel else None
    if part is not None and part not in {p["name"] for p in run.parts}:
        names = ", ".join(p["name"] for p in run.parts)
        raise ResultsError(path, f"{part!r} is not a part of {run.summary['scenario']!r}",
                           f"a part folder of {run.root}: {names}", "name one of those parts")
    return Selection(path, run, part, "/".join(rel) if len(rel) > 1 else None)


def _labels(sels: list[Selection]) -> None:
    paths = [str(s.path.resolve()) for s in sels]
    common = os.path.commonpath(paths) if len(paths) > 1 else os.path.dirname(paths[0])
    labels = [os.path.relpath(p, common) if p != common else os.path.basename(p) for p in paths]
    if len(set(labels)) < len(labels):
        labels = [str(s.path) for s in sels]
    for s, lab in zip(sels, labels, strict=True):
        s.label = lab


def _drain_bps(run: Run, part: str, iface: str) -> float | None:
    """The rate a queue on ``iface`` drains at in ``part`` (its shaper's rate as the part left it,
    else the link's), for delay estimates."""
    qdiscs = run.part(part).get("qdiscs", {}).get(iface)
    if qdiscs is None:  # summary.json of an older bufferlab: the end-of-run state
        qdiscs = run.summary["interfaces"].get(iface, {}).get("qdiscs", [])
    for q in reversed(qdiscs):
        rate = q.get("options", {}).get("rate")
        if rate:
            return float(rate) * 8
    for lk in run.summary.get("topology", {}).get("links", []):
        if iface in (lk["a"]["intf"], lk["b"]["intf"]) and lk.get("rate_bps"):
            return float(lk["rate_bps"])
    return None


def _queue_delay(sel: Selection) -> tuple[float | None, float | None, str]:
    """Mean and p99 queueing delay (ms): exact sojourn times if traced, else backlog / drain rate."""
    soj = []
    for part, _iface, path in queue_traces(sel.run):
        if part not in sel.parts or sel.file is not None or not path.is_file():
            continue
        try:
            for b in pq.ParquetFile(path).iter_batches(columns=["event", "sojourn_s"], batch_size=1 << 18):
                ev = b.column("event").to_numpy(zero_copy_only=False)
                s = b.column("sojourn_s").to_numpy(zero_copy_only=False)
                soj.append(s[(ev == "dequeue") & ~np.isnan(s)])
        except OSError as e:  # pyarrow's for pages damaged past the footer: DAMAGE, naming the file
            raise ValueError(f"{path}: {e}") from None
    if soj and sum(len(a) for a in soj):
        a = np.concatenate(soj) * 1e3
        return float(a.mean()), float(np.percentile(a, 99)), "sojourn (queue_events)"
    est = []
    for (part, iface), (_t, b) in sel.queues.items():
        rate = _drain_bps(sel.run, part, iface)
        if rate:
            est.append(np.asarray(b, dtype=float) * 8 / rate * 1e3)
    if est and sum(len(a) for a in est):
        a = np.concatenate(est)
        return float(a.mean()), float(np.percentile(a, 99)), "backlog / rate (100 ms samples)"
    return None, None, ""


def _client_series(t: Iperf3Test) -> list[dict[str, Any]]:
    """The client's own interval rows: sums if it printed them, else its streams."""
    rows = [r for r in t.rows if r["row"] == "sum"] or [r for r in t.rows if r["row"] == "stream"]
    return [r for r in rows if not r.get("omitted")]


def _stats(v: list[float]) -> tuple[float | None, float | None]:
    if not v:
        return None, None
    return float(np.mean(v)), float(np.percentile(v, 99))


def metrics(sel: Selection) -> dict[str, Any]:
    clients = [t for t in sel.tests if t.role == "client"]
    goodputs = [t.goodput_bps for t in clients if t.goodput_bps is not None]
    ping_rtt = [r[2] for p in sel.pings for r in p.replies]
    tcp_rtt = [r["rtt"] / 1000 for t in clients for r in t.rows if r["row"] == "stream" and r.get("rtt")]
    pm, pp = _stats(ping_rtt)
    tm, tp = _stats(tcp_rtt)
    retr = [t.retransmits for t in clients if t.retransmits is not None]
    lost = [t.lost_packets for t in clients if t.lost_packets is not None]
    drops = purged = None
    if sel.file is None and all("drops" in p for p in sel.run.parts):
        # packets a tc command threw away (a child qdisc replaced while it held
        # the previous part's backlog) are not the queue's own drops
        counts = [(reason, c["packets"]) for p in sel.run.parts if p["name"] in sel.parts
                  for reasons in p.get("drops", {}).values() for reason, c in reasons.items()]
        drops = sum(n for reason, n in counts if reason != "purged")
        purged = sum(n for reason, n in counts if reason == "purged")
    qm, qp, qsrc = _queue_delay(sel)
    return {
        "run": sel.label, "iperf3_tests": len(clients),
        "goodput_mbps": float(np.mean(goodputs)) / 1e6 if goodputs else None,
        "ping_rtt_mean_ms": pm, "ping_rtt_p99_ms": pp, "tcp_rtt_mean_ms": tm, "tcp_rtt_p99_ms": tp,
        "retransmits": sum(retr) if retr else None, "udp_lost": sum(lost) if lost else None,
        "drops": drops, "purged": purged,
        "queue_delay_mean_ms": qm, "queue_delay_p99_ms": qp, "queue_delay_source": qsrc,
    }


COLUMNS = [
    ("run", "run", "{}"), ("iperf3_tests", "iperf3 tests", "{}"),
    ("goodput_mbps", "goodput Mbit/s", "{:.2f}"),
    ("ping_rtt_mean_ms", "ping RTT mean ms", "{:.2f}"), ("ping_rtt_p99_ms", "ping RTT p99 ms", "{:.2f}"),
    ("tcp_rtt_mean_ms", "TCP RTT mean ms", "{:.2f}"), ("tcp_rtt_p99_ms", "TCP RTT p99 ms", "{:.2f}"),
    ("retransmits", "retransmits", "{}"), ("udp_lost", "UDP lost", "{}"), ("drops", "drops", "{}"),
    ("purged", "purged by tc", "{}"),
    ("queue_delay_mean_ms", "queue delay mean ms", "{:.2f}"),
    ("queue_delay_p99_ms", "queue delay p99 ms", "{:.2f}"),
    ("queue_delay_source", "queue delay from", "{}"),
]


def _cell(v: Any, fmt: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return fmt.format(v)


def _plot(sels: list[Selection], out: Path) -> list[tuple[Path, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def series_label(sel: Selection, n: int, extra: str) -> str:
        return sel.label if n == 1 else f"{sel.label} · {extra}"

    specs = [
        ("throughput", "Throughput (iperf3 client intervals)", "Time since test start (s)", "Mbit/s"),
        ("ping_rtt", "Ping RTT", "Time since ping start (s)", "RTT (ms)"),
        ("tcp_rtt", "TCP smoothed RTT (iperf3)", "Time since test start (s)", "RTT (ms)"),
        ("cwnd", "Congestion window (iperf3)", "Time since test start (s)", "cwnd (KBytes)"),
        ("queue", "Queue backlog", "Time since sampling start (s)", "Backlog (bytes)"),
    ]
    made = []
    for key, title, xl, yl in specs:
        fig, ax = plt.subplots(figsize=(8.5, 4.6))
        n_lines = 0
        for sel in sels:
            clients = [t for t in sel.tests if t.role == "client"]
            if key in ("throughput", "tcp_rtt", "cwnd"):
                for t in clients:
                    rows = _client_series(t)
                    if key == "throughput":
                        pts = [(r["end"], r["bits_per_second"] / 1e6) for r in rows
                               if r.get("bits_per_second") is not None]
                    else:
                        field_, scale = ("rtt", 1e-3) if key == "tcp_rtt" else ("snd_cwnd", 1 / 1024)
                        srows = [r for r in t.rows if r["row"] == "stream" and not r.get("omitted")]
                        pts = [(r["end"], r[field_] * scale) for r in srows if r.get(field_) is not None]
                    if pts:
                        x, y = zip(*pts, strict=True)
                        ax.plot(x, y, lw=1.3, label=series_label(sel, len(clients), t.file))
                        n_lines += 1
            elif key == "ping_rtt":
                for p in sel.pings:
                    if p.replies:
                        app = app_for(sel.run, "ping", p.file, p.index)
                        step = ping_interval_s(app["command"]) if app else 1.0
                        x = [(seq - 1) * step for seq, _, _ in p.replies]
                        y = [r for _, _, r in p.replies]
                        ax.plot(x, y, lw=1.3, marker=".", ms=3,
                                label=series_label(sel, len(sel.pings), f"{p.file} → {p.dest}"))
                        n_lines += 1
            else:
                for (part, iface), (t, b) in sorted(sel.queues.items()):
                    ax.plot(t, b, lw=1.2, label=series_label(sel, len(sel.queues), f"{part} {iface}"))
                    n_lines += 1
        if n_lines:
            ax.set_title(title)
            ax.set_xlabel(xl)
            ax.set_ylabel(yl)
            ax.grid(True, alpha=0.4)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=8)
            fig.set_layout_engine("tight")  # laid out at its first write (safefs.savefig)
            p = out / f"{key}.png"
            savefig(fig, p, dpi=100, metadata={"Software": None})  # never through a link (safefs.py)
            made.append((p, title))
        plt.close(fig)
    return made


def default_output(paths: list[Path], results: Path = Path("results")) -> Path:
    """Where ``compare`` writes without ``-o``: ``results/compare-<A>-vs-<B>...``, each name the
    RUN's path below the folder the RUNs share (``results/compare-droptail-vs-red`` for
    ``results/lab16-red/droptail results/lab16-red/red``)."""
    full = [os.path.abspath(p) for p in paths]
    common = os.path.commonpath(full) if len(full) > 1 else os.path.dirname(full[0])
    names = [os.path.relpath(p, common) if p != common else os.path.basename(p) for p in full]
    slug = "-vs-".join(re.sub(r"[^A-Za-z0-9._-]+", "_", Path(n).with_suffix("").as_posix().replace("/", "_"))
                       for n in names).strip("._") or "runs"
    if len(slug) > 100:  # a folder name stays short and still tells the comparisons apart
        slug = f"{slug[:80]}-{hashlib.sha256(slug.encode()).hexdigest()[:8]}"
    return results / f"compare-{slug}"


def compare(paths: list[Path], out: Path) -> tuple[list[dict[str, Any]], list[Problem], list[Path]]:
    sels = [resolve(p) for p in paths]
    _labels(sels)
    problems: list[Problem] = []
    cache: dict[Path, Any] = {}
    for sel in sels:
        key = sel.run.root.resolve()
        if key not in cache:
            qp: list[Problem] = []
            try:
                cache[key] = (scan_outputs(sel.run), queue_sample_rows(sel.run, qp), qp)
            except DAMAGE as e:  # a hand-edited file: its message, as `report` gives it
                raise damaged(sel.run.root, e) from None
        outputs, qrows, qprob = cache[key]
        problems += [p for p in qprob if any(p.path.startswith(str(sel.run.root / n)) for n in sel.parts)]
        sel.tests = [t for t in outputs.iperf3 if sel.has(t.part, t.file)]
        sel.pings = [p for p in outputs.pings if sel.has(p.part, p.file)]
        if sel.file is None:
            for r in qrows:
                if r["part"] in sel.parts:
                    t, b = sel.queues.setdefault((r["part"], r["iface"]), ([], []))
                    t.append(r["time_s"])
                    b.append(r["backlog_bytes"])
        if not sel.tests and not sel.pings:
            problems.append(Problem(str(sel.path), "has no iperf3 or ping output to compare",
                                    "a run, part or file with an iperf3 test or a ping",
                                    "pick the part that runs the experiment (e.g. results/lab16-red/red)"))
    try:
        # a folder of its own, marked; never one bufferlab did not write (results_folder.py)
        claim(out, "compare", "choose another folder with -o (compare writes compare.html, compare.csv "
              "and its plots there)")
    except OSError as e:
        raise ResultsError(out, f"cannot create the output folder ({e.strerror})", "a writable folder",
                           "choose another folder with -o") from None
    rows = []
    for s in sels:
        try:
            rows.append(metrics(s))
        except DAMAGE as e:
            raise damaged(s.run.root, e) from None
    with open_atomic(out / "compare.csv", "w") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([c for c, _, _ in COLUMNS])
        for r in rows:
            w.writerow(["" if r[c] is None else (f"{r[c]:.6g}" if isinstance(r[c], float) else r[c])
                        for c, _, _ in COLUMNS])
    try:
        plots = _plot(sels, out)
    except DAMAGE as e:  # a value of an edited iperf3 output that cannot be plotted
        raise damaged(Path(", ".join(str(s.path) for s in sels)), e) from None
    body = ["<h1>bufferlab compare</h1>", "<h2>Runs</h2>",
            table(["label", "path", "scenario", "part", "file"],
                  [[s.label, str(s.path), s.run.summary["scenario"], s.part or "(all)", s.file or "(all)"]
                   for s in sels], left=5),
            "<h2>Metrics</h2>",
            table([h for _, h, _ in COLUMNS], [[_cell(r[c], f) for c, _, f in COLUMNS] for r in rows]),
            "<p class='muted'>goodput: mean over the run's iperf3 client tests of each test's goodput "
            "(payload bytes received × 8 / the receiver's interval, the bitrate of iperf3's receiver "
            "line, as in the run's summary and report); "
            "RTT p99 over ping replies and over iperf3's per-interval TCP RTT; drops: the parts' qdisc "
            "drop counters (all interfaces; not split per file) except packets purged by a tc command, "
            "counted apart; queue delay: exact sojourn times when "
            "the queue was traced, else the 100 ms backlog samples divided by the interface's shaping "
            "rate.</p>",
            "<h2>Plots</h2>", "".join(png_figure(p, t) for p, t in plots) or "<p>No data to plot.</p>"]
    if problems:
        body.insert(1, "".join(f'<div class="warn">{_e(p)}</div>' for p in problems))
    write_atomic(out / "compare.html", page("bufferlab compare", "".join(body)))
    return rows, problems, [p for p, _ in plots]


def cli_compare(paths: list[Path], out: Path) -> int:
    from rich.console import Console
    from rich.table import Table

    rows, problems, plots = compare(paths, out)
    t = Table(title="bufferlab compare")
    for c, h, _ in COLUMNS:
        t.add_column(h, justify="left" if c in ("run", "queue_delay_source") else "right",
                     no_wrap=c == "run")
    for r in rows:
        t.add_row(*[_cell(r[c], f) for c, _, f in COLUMNS])
    Console(width=200).print(t)
    print(f"wrote {out / 'compare.csv'}, {out / 'compare.html'} and {len(plots)} plots")
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    return 2 if problems else 0
