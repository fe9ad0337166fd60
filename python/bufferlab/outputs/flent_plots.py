"""Flent's standard plots drawn natively (``flent ... -p PLOT -o FILE``), in Flent's look.

The plot definitions come from :mod:`bufferlab.commands.flent_tests`; what a plot type draws and
how it looks follows flent's ``plotters.py`` (read, not copied):

* the style: grey (``#E6E6E6``) axes with white grid lines and no frame, ticks without marks,
  lines 1 pt wide, the ColorBrewer "Dark2" colour cycle, legends without a frame outside the
  axes to the right (``upper left`` at x = 1.02, 1.11 with a second axis), in small type,
  titled by the plot's ``legend_title``; a 6.4 × 4.8 in figure at 100 dpi;
* the title (``suptitle``, 14 pt): the test's description, the plot's description and the
  run's title on three lines; under the plot the annotation ``Local/remote: L/R - Time: T -
  Length/step: Ns/S.SSs`` in 8 pt;
* ``timeseries``: each series' raw samples against seconds since T0 (the computed series'
  values on the step grid), smoothing by a moving average of an odd number of points,
  ``dual_axes`` putting ``axis: 2`` series on a right axis, the y range scaled to the
  ``scaling`` percentiles (default 0–100) with 1 % of the range as margin, x from the first
  point to ``TOTAL_LENGTH``; x label ``Time (s)``, y labels the units (or ``axis_labels``);
* ``cdf``: the empirical CDF of each series (points sorted, probabilities k/n), x rounded out to
  tens, y from 0 to 1 labelled ``Cumulative probability``;
* ``box``: one box per series (``cutoff`` applied), the box in the series' colour, median red,
  whiskers solid, outliers ``b+``, dotted separators, labels under the boxes;
* ``bar``: the mean of each series with its standard deviation as the error bar, alpha 0.75;
* ``meta``: the sub-plots stacked vertically with a shared time axis;
* ``box_combine`` / ``bar_combine`` of a single file (udp_flood's ``totals``): each series
  reduced by its ``combine_mode`` (``mean``), one box or bar per series.

``cutoff`` (start, end) keeps samples from ``start`` to ``TOTAL_LENGTH + end`` seconds.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..commands.flent_tests import FlentTest, Plot, PlotSeries, expand_series
from ..errors import BufferlabError
from ..safefs import savefig

__all__ = ["FlentPlotError", "draw_plot", "COLOURS", "STYLE", "supported_plots"]

COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"]
STYLE = {
    "axes.axisbelow": True,
    "axes.edgecolor": "white",
    "axes.facecolor": "#E6E6E6",
    "axes.formatter.useoffset": False,
    "axes.grid": True,
    "axes.labelcolor": "black",
    "axes.linewidth": 0.0,
    "figure.edgecolor": "white",
    "figure.facecolor": "white",
    "figure.frameon": False,
    "grid.color": "white",
    "grid.linestyle": "-",
    "grid.linewidth": 1,
    "legend.frameon": False,
    "legend.numpoints": 1,
    "lines.color": "black",
    "lines.linewidth": 1,
    "lines.solid_capstyle": "round",
    "pdf.fonttype": 42,
    "text.color": "black",
    "xtick.color": "black",
    "xtick.direction": "out",
    "xtick.major.size": 0.0,
    "xtick.minor.size": 0.0,
    "ytick.color": "black",
    "ytick.direction": "out",
    "ytick.major.size": 0.0,
    "ytick.minor.size": 0.0,
}
_NATIVE = ("timeseries", "cdf", "box", "bar", "meta", "box_combine", "bar_combine")


class FlentPlotError(BufferlabError):
    """A plot that cannot be drawn (unknown, or a kind bufferlab does not draw)."""


def supported_plots(test: FlentTest) -> list[str]:
    return [
        name
        for name, p in test.plots.items()
        if p.type in _NATIVE and all(test.plots[s].type in _NATIVE for s in p.subplots)
    ]


class _Data:
    """A loaded flent data file (the dict of a ``.flent.gz``)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.meta = doc["metadata"]
        self.x = [float(v) for v in doc["x_values"]]
        t0 = self.meta.get("T0")
        self.t0 = _epoch(t0) if isinstance(t0, str) else 0.0
        self.total = float(self.meta.get("TOTAL_LENGTH") or (self.x[-1] if self.x else 0.0))

    def points(self, name: str, gaps: bool = False) -> tuple[list[float], list[float]]:
        """The raw samples (seconds since T0, value); a series without any (a computed one) on
        the step grid, with NaN for the grid's gaps when ``gaps`` (a line breaks there)."""
        raw = self.doc["raw_values"].get(name) or []
        pts = [(float(i["t"]) - self.t0, float(i["val"])) for i in raw if "val" in i and i["val"] is not None]
        if not pts:
            res = self.doc["results"].get(name) or []
            pts = [
                (x, math.nan if v is None else float(v))
                for x, v in zip(self.x, res, strict=False)
                if gaps or v is not None
            ]
            if not any(not math.isnan(v) for _, v in pts):
                pts = []
        return [p[0] for p in pts], [p[1] for p in pts]

    def cut(self, name: str, cutoff: tuple[float, float] | None) -> tuple[list[float], list[float]]:
        xs, ys = self.points(name)
        if cutoff is None:
            return xs, ys
        start, end = cutoff
        if end <= 0:
            end += self.total
        keep = [(x, y) for x, y in zip(xs, ys, strict=True) if start <= x <= end]
        return [k[0] for k in keep], [k[1] for k in keep]


def _epoch(text: str) -> float:
    return datetime.strptime(text.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC).timestamp()


def _percentile(values: list[float], q: float) -> float:
    v = sorted(values)
    if not v:
        return math.nan
    k = (len(v) - 1) * q / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def _smooth(ys: list[float], n: int) -> list[float]:
    if n % 2 != 1:
        n += 1
    if n > len(ys):
        return ys
    half = n // 2
    padded = [0.0] * half + ys + [0.0] * half  # numpy's convolve(mode="same") pads with zeros
    return [sum(padded[i : i + n]) / n for i in range(len(ys))]


def _scale(axis: Any, values: list[float], btm: float, top: float) -> None:
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return
    hi, lo = _percentile(finite, top), _percentile(finite, btm)
    if hi == lo or math.isnan(hi) or math.isnan(lo):
        return
    space = (hi - lo) * 0.01
    axis.set_ylim(lo - space, hi + space)


def _units(test: FlentTest, name: str) -> str:
    ds = test.data_sets.get(name)
    return ds.units if ds is not None else ""


def _kwargs(s: PlotSeries, label: str, colour: str) -> dict[str, Any]:
    kw: dict[str, Any] = {"label": label, "color": s.color or colour}
    if s.linewidth is not None:
        kw["linewidth"] = s.linewidth
    return kw


def _legend(axes: list[Any], title: str | None) -> Any:
    handles: list[Any] = []
    labels: list[str] = []
    for a in axes:
        h, l_ = a.get_legend_handles_labels()
        handles += h
        labels += l_
    if not labels:
        return None
    offset = 1.11 if len(axes) > 1 else 1.02
    kw = {"title": title} if title else {}
    return axes[0].legend(
        handles,
        [x.strip() for x in labels],
        bbox_to_anchor=(offset, 1.0),
        loc="upper left",
        borderaxespad=0.0,
        prop={"size": "small"},
        **kw,
    )


def _axes(axis: Any, plot: Plot) -> list[Any]:
    """The plot's axes: a second y axis on the right for ``dual_axes`` (no grid on either)."""
    axes = [axis]
    if plot.dual_axes:
        second = axis.twinx()
        second.grid(False)
        axis.grid(False)
        axes.append(second)
    return axes


def _timeseries(fig: Any, axis: Any, test: FlentTest, plot: Plot, data: _Data) -> list[Any]:
    axes = _axes(axis, plot)
    for a in axes:
        a.minorticks_on()
    series = expand_series(test, plot)
    units: list[str | None] = [None] * len(axes)
    for s, name, _ in series:
        units[1 if s.axis == 2 and len(axes) > 1 else 0] = _units(test, name)
    axis.set_xlabel("Time (s)")
    for i, a in enumerate(axes):
        label = plot.axis_labels[i] if i < len(plot.axis_labels) and plot.axis_labels[i] else units[i]
        a.set_ylabel(label or "")
    colours = iter(COLOURS * 8)
    collected: list[list[float]] = [[] for _ in axes]
    x_min, x_max = math.inf, 0.0
    for s, name, label in series:
        xs, ys = data.cut(name, plot.cutoff) if plot.cutoff else data.points(name, gaps=True)
        if not xs:
            continue
        if s.smoothing:
            ys = _smooth(ys, s.smoothing)
        a = 1 if s.axis == 2 and len(axes) > 1 else 0
        axes[a].plot(xs, ys, **_kwargs(s, label, next(colours)))
        collected[a] += ys
        finite = [x for x, y in zip(xs, ys, strict=True) if not math.isnan(y)]
        if finite:
            x_min, x_max = min(x_min, finite[0]), max(x_max, finite[-1])
    if (
        x_min < math.inf
    ):  # flent: from the first point (or the automatic limit above 0) to TOTAL_LENGTH or more
        lo, hi = axis.get_xlim()
        axis.set_xlim(min(x_min, lo) if lo > 0 else x_min, max(x_max, data.total, hi))
    btm, top = plot.scaling or (0, 100)
    for a, values in zip(axes, collected, strict=True):
        _scale(a, values, btm, top)
    return axes


def _cdf(fig: Any, axis: Any, test: FlentTest, plot: Plot, data: _Data) -> list[Any]:
    series = expand_series(test, plot)
    unit = _units(test, series[0][1]) if series else ""
    axis.set_xlabel(plot.axis_labels[0] if plot.axis_labels and plot.axis_labels[0] else unit)
    axis.set_ylabel("Cumulative probability")
    axis.set_ylim(0, 1)
    axis.minorticks_on()
    colours = iter(COLOURS * 8)
    lo, hi = math.inf, 0.0
    for s, name, label in series:
        _, ys = data.cut(name, plot.cutoff)
        if not ys:
            continue
        xs = sorted(ys)
        probs = [(k + 1) / len(xs) for k in range(len(xs))]
        axis.plot(xs, probs, **_kwargs(s, label, next(colours)))
        lo, hi = min(lo, xs[0]), max(hi, xs[-1])
    if hi > 10:
        hi += 10 - hi % 10
    if hi > 0:
        axis.set_xlim(right=hi)
    if lo < hi:
        if lo > 10:
            lo -= lo % 10
        if lo > 100:
            lo -= lo % 100
        axis.set_xlim(left=lo)
    return [axis]


def _reduced(plot: Plot, data: _Data, name: str, s: PlotSeries) -> list[float]:
    _, ys = data.cut(name, plot.cutoff)
    if plot.type.endswith("_combine") and ys:
        mode = s.combine_mode or "mean"
        if mode != "mean":
            raise FlentPlotError(f"combine mode {mode!r} is not supported yet (bufferlab draws 'mean')")
        return [sum(ys) / len(ys)]
    return ys


def _box_or_bar(fig: Any, axis: Any, test: FlentTest, plot: Plot, data: _Data) -> list[Any]:
    axes = _axes(axis, plot)
    series = expand_series(test, plot)
    for i, a in enumerate(axes):
        unit = next((_units(test, n) for s, n, _ in series if (s.axis == 2) == (i == 1)), "")
        label = plot.axis_labels[i] if i < len(plot.axis_labels) and plot.axis_labels[i] else unit
        a.set_ylabel(label or "")
        a.grid(False, axis="x")
    ticks: list[int] = []
    labels: list[str] = []
    texts: list[Any] = []
    collected: list[list[float]] = [[] for _ in axes]
    pos = 1
    bar = plot.type.startswith("bar")
    for i, (s, name, label) in enumerate(series):
        values = _reduced(plot, data, name, s)
        if s.smoothing and not plot.type.endswith("_combine"):
            values = [v for v in _smooth(values, s.smoothing) if not math.isnan(v)]
        if not values:
            continue
        a = axes[1] if s.axis == 2 and len(axes) > 1 else axes[0]
        collected[1 if a is not axes[0] else 0] += values
        # one data file: every box in the first colour (flent colours by file); bars by series
        colour = COLOURS[i % len(COLOURS)] if bar else COLOURS[0]
        if bar:
            mean = sum(values) / len(values)
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
            a.bar(
                [pos - 0.5],
                [mean],
                yerr=[std],
                ecolor="k",
                color=colour,
                alpha=0.75,
                width=1.0,
                align="edge",
                capsize=2,
            )
        else:
            bp = a.boxplot([values], positions=[pos], sym="b+")
            for key in ("boxes", "caps", "whiskers"):
                for art in bp[key]:
                    art.set_color(colour)
                    art.set_linestyle("-")
            for art in bp["fliers"]:
                art.set_markeredgecolor(colour)
        a.axvline(x=pos + 1, color="black", linewidth=0.5, linestyle=":")
        texts.append(axis.text(pos, 14, label, ha="center"))
        ticks.append(pos)
        labels.append(label)
        pos += 2
    if not bar:
        for a, values in zip(axes, collected, strict=True):
            _scale(a, values, 0, 100)
    low, high = axis.get_ylim()
    for t in texts:  # the series' names sit just above the plot
        t.set_position((t.get_position()[0], high + abs(high - low) * 0.01))
    axis.set_xlim(0, max(pos - 1, 1))
    axis.set_xticks(ticks)
    axis.set_xticks([], minor=True)
    axis.set_xticklabels([])  # flent labels the ticks with the files' names: one file, no labels
    axis.set_xlabel("")
    return []


_DRAW = {
    "timeseries": _timeseries,
    "cdf": _cdf,
    "box": _box_or_bar,
    "bar": _box_or_bar,
    "box_combine": _box_or_bar,
    "bar_combine": _box_or_bar,
}


def _check(test: FlentTest, name: str) -> Plot:
    plot = test.plots.get(name)
    if plot is None:
        raise FlentPlotError(
            f"Unable to find plot configuration '{name}' (test {test.name} has: {', '.join(test.plots)})"
        )
    kinds = [plot.type] + [test.plots[s].type for s in plot.subplots if s in test.plots]
    bad = [k for k in kinds if k not in _NATIVE]
    if bad:
        raise FlentPlotError(
            f"plot '{name}' of type {bad[0]} is not supported yet (bufferlab draws "
            f"{', '.join(_NATIVE)}); the .flent.gz file loads in flent for it"
        )
    return plot


def draw_plot(
    test: FlentTest, doc: dict[str, Any], plot_name: str, path: Path, title: str | None = None
) -> None:
    """Draw ``plot_name`` of ``test`` from the data file ``doc`` into ``path`` (png, svg, pdf)."""
    plot = _check(test, plot_name)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = _Data(doc)
    with matplotlib.rc_context(STYLE):
        fig = plt.figure(figsize=(6.4, 4.8), dpi=100)
        extra: list[Any] = []
        if plot.type == "meta":
            subs = [test.plots[s] for s in plot.subplots]
            first = None
            for k, sub in enumerate(subs):
                axis = fig.add_subplot(len(subs), 1, k + 1, sharex=first)
                first = first or axis
                axes = _DRAW[sub.type](fig, axis, test, sub, data)
                if axes:
                    leg = _legend(axes, sub.legend_title)
                    if leg is not None:
                        extra.append(leg)
                if k < len(subs) - 1:
                    axis.set_xlabel("")
        else:
            axis = fig.add_subplot(1, 1, 1)
            axes = _DRAW[plot.type](fig, axis, test, plot, data)
            if axes:
                leg = _legend(axes, plot.legend_title)
                if leg is not None:
                    extra.append(leg)
        legends = [e for e in extra]
        meta = data.meta
        heading = title if title is not None else test.description
        text = heading + "\n" + plot.description
        if meta.get("TITLE"):
            text += "\n" + str(meta["TITLE"])
        height = fig.get_figheight()
        heading_art = fig.suptitle(text, fontsize=14, y=1 - 0.04 / height)
        when = str(meta.get("TIME", "")).rstrip("Z")
        note = (
            f"Local/remote: {meta.get('LOCAL_HOST', '')}/{meta.get('HOST', '')} - Time: {when} - "
            f"Length/step: {int(meta.get('LENGTH') or 0)}s/{float(meta.get('STEP_SIZE') or 0.2):.2f}s"
        )
        note_art = fig.text(
            0.5, 0.04 / height, note, horizontalalignment="center", verticalalignment="bottom", fontsize=8
        )
        _layout(fig, legends, heading_art, note_art)
        savefig(fig, path, dpi=100)
        plt.close(fig)


def _layout(fig: Any, legends: list[Any], heading: Any, note: Any) -> None:
    """Make room, inside the 6.4 × 4.8 in figure, for the title above, the annotation below and
    the legends on the right (flent's own layout step does the same)."""
    r = fig.canvas.get_renderer()  # the text extents need a renderer, not a full draw
    w, h = fig.bbox.width, fig.bbox.height
    pad = 0.08 * fig.dpi
    axes = fig.get_axes()
    left = max(
        (
            a.yaxis.get_tightbbox(r).width
            for a in axes
            if a.yaxis.get_label_position() == "left" and a.yaxis.get_tightbbox(r) is not None
        ),
        default=0.0,
    )
    right_axis = max(
        (
            a.yaxis.get_tightbbox(r).width
            for a in axes
            if a.yaxis.get_label_position() == "right" and a.yaxis.get_tightbbox(r) is not None
        ),
        default=0.0,
    )
    legend_w = max((leg.get_window_extent(r).width for leg in legends), default=0.0)
    lowest = min(a.get_position().y0 for a in axes) if axes else 0.0
    bottom_axis = max(
        (
            a.xaxis.get_tightbbox(r).height
            for a in axes
            if a.get_position().y0 == lowest
            and a.xaxis.get_visible()
            and a.xaxis.get_tightbbox(r) is not None
        ),
        default=0.0,
    )
    texts_above = max((t.get_window_extent(r).height for a in axes for t in a.texts), default=0.0)
    top = heading.get_window_extent(r).height + texts_above + 2 * pad
    bottom = note.get_window_extent(r).height + bottom_axis + 2 * pad
    right = legend_w + right_axis + pad
    fig.subplots_adjust(
        left=min(0.4, (left + pad) / w),
        right=max(0.5, 1 - right / w),
        top=max(0.5, 1 - top / h),
        bottom=min(0.4, bottom / h),
        hspace=0.25,
    )
