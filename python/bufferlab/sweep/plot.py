"""``bufferlab sweep plot``: the mean over seeds with a 95 % confidence interval.

Each row of ``sweep.parquet`` that matches (status "ok", ``--where``) is one
sample; the interval is the Student t one (stats.py).
Writes a PNG and a PDF per call and (re)writes ``DIR/sweep.html`` with every
plot in ``DIR/plots/``, in the style of the run report (outputs/report.py).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402

from ..errors import BufferlabError  # noqa: E402
from ..outputs.report import page, png_figure, table  # noqa: E402
from ..safefs import ensure_dir, open_atomic, savefig, write_atomic  # noqa: E402
from .stats import mean_ci, summarise, t975  # noqa: E402, F401 - the statistics, without matplotlib


def _load(folder: Path, columns: list[str], where: str | None) -> pd.DataFrame:
    path = folder / "sweep.parquet"
    if not path.is_file():
        raise BufferlabError(f"error: {path}: no such file\n  hint: DIR is the results/<sweep> folder "
                             "that `bufferlab sweep FILE.toml` wrote")
    try:
        frame = pd.read_parquet(path)
        frame = frame[frame["status"] == "ok"]
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException) as e:  # damaged, or not ours
        raise BufferlabError(f"error: {path}: cannot read it as a sweep's table ({type(e).__name__}: "
                             f"{str(e)[:200]})\n  hint: run `bufferlab sweep FILE.toml` again: it writes "
                             "sweep.parquet anew from the runs") from None
    for c in columns:
        if c not in frame.columns:
            raise BufferlabError(f"error: {path} has no column {c!r}\n  expected: one of "
                                 + ", ".join(frame.columns))
    if where:
        try:
            frame = frame.query(where)
        except Exception as e:  # pandas raises many kinds for a bad query
            raise BufferlabError(f"error: --where {where!r}: {e}\n  hint: a pandas query such as "
                                 "\"node == 'n8' and load > 0.25\"") from None
    if frame.empty:
        raise BufferlabError(f"error: no finished run in {path} matches")
    return frame


def plot_sweep(folder: Path, x: str, y: str, by: str | None, facet: str | None, where: str | None,
               out: Path | None, logx: bool = False) -> list[Path]:
    frame = _load(folder, [c for c in (x, y, by, facet) if c], where)
    stats = summarise(frame, x, y, by, facet)
    out = out or folder / "plots"
    ensure_dir(out)
    facets = list(stats[facet].drop_duplicates()) if facet else [None]
    fig, axes = plt.subplots(1, len(facets), figsize=(4.5 * len(facets), 3.6), sharey=True, squeeze=False)
    for ax, fv in zip(axes[0], facets, strict=True):
        sub = stats if fv is None else stats[stats[facet] == fv]
        for bv, line in (sub.groupby(by, sort=True) if by else [(None, sub)]):
            line = line.sort_values(x)
            ax.errorbar(line[x], line["mean"], yerr=line["ci95"].fillna(0), marker="o", capsize=3,
                        label=None if bv is None else f"{by}={bv}")
        ax.set_xlabel(x)
        if logx:
            ax.set_xscale("log")
        title = ("" if fv is None else f"{facet} = {fv}") + (f"  [{where}]" if where else "")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        if by:
            ax.legend(fontsize=8)
    axes[0][0].set_ylabel(f"{y} (mean, 95 % CI)")
    fig.set_layout_engine("tight")  # laid out at its first write (safefs.savefig)
    stem = "-".join([f"{y}-vs-{x}"] + ([f"by-{by}"] if by else []) + ([f"facet-{facet}"] if facet else [])
                    + ([re.sub(r"[^A-Za-z0-9.]+", "_", where).strip("_")] if where else []))
    written = [out / f"{stem}.png", out / f"{stem}.pdf"]
    for p in written:
        savefig(fig, p, dpi=120)  # never through a link (safefs.py)
    plt.close(fig)
    with open_atomic(out / f"{stem}.csv", "w") as f:
        stats.to_csv(f, index=False)
    written.append(out / f"{stem}.csv")
    written.append(write_page(folder, out))
    return written


def write_page(folder: Path, plots: Path) -> Path:
    """``sweep.html``: every plot of ``plots`` with its table of means and intervals."""
    parts = [f"<h1>Sweep {html.escape(folder.name)}</h1>",
             "<p>Each point is the mean over the seeds (and the rows selected) with its 95 % "
             "confidence interval (Student t).</p>"]
    for png in sorted(plots.glob("*.png")):
        parts.append(f"<section><h2>{html.escape(png.stem)}</h2>{png_figure(png, png.name)}")
        csv = png.with_suffix(".csv")
        if csv.is_file():
            stats = pd.read_csv(csv)
            parts.append(table(list(stats.columns), stats.round(4).astype(object).values.tolist(), left=0))
        parts.append("</section>")
    path = folder / "sweep.html"
    write_atomic(path, page(f"Sweep {folder.name}", "".join(parts)))
    return path
