"""Plots written next to the data files (matplotlib, non-interactive backend)."""

from __future__ import annotations

from pathlib import Path

from ..safefs import savefig


def plot_queue(samples: list[list[int]], start_ns: int, dev: str, path: Path) -> None:
    """Queue occupancy over time, as ``plot_q.sh`` draws it (docs/semantics/formats.md §6)."""
    from matplotlib.figure import Figure

    t = [(s[0] - start_ns) / 1e9 for s in samples]
    b = [s[1] for s in samples]
    fig = Figure(figsize=(8, 4.5))
    # fixed margins that hold 6-digit tick labels (a million bytes and more get an offset,
    # "1e6"): the "tight" layout measured every label again, 40 % of the drawing's time
    fig.subplots_adjust(left=0.125, right=0.98, top=0.92, bottom=0.13)
    ax = fig.subplots()
    ax.plot(t, b, lw=1.2)
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Queue occupancy (bytes)")
    ax.set_title(f"Queue occupancy of {dev}")
    ax.grid(True, alpha=0.4)
    # an empty queue gets a scale of one full frame, not matplotlib's ±0.05 B
    ax.set_ylim(bottom=0, top=max(max(b, default=0) * 1.05, 1514))
    savefig(fig, path, dpi=110)
