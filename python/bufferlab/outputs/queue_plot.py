"""Plots written next to the data files (matplotlib, non-interactive backend)."""

from __future__ import annotations

from pathlib import Path

from ..safefs import savefig


def plot_queue(samples: list[list[int]], start_ns: int, dev: str, path: Path) -> None:
    """Queue occupancy over time, as ``plot_q.sh`` draws it (docs/semantics/formats.md §6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [(s[0] - start_ns) / 1e9 for s in samples]
    b = [s[1] for s in samples]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(t, b, lw=1.2)
    ax.set_xlabel("Time (s)")
    ax.set_ylabel("Queue occupancy (bytes)")
    ax.set_title(f"Queue occupancy of {dev}")
    ax.grid(True, alpha=0.4)
    # an empty queue gets a scale of one full frame, not matplotlib's ±0.05 B
    ax.set_ylim(bottom=0, top=max(max(b, default=0) * 1.05, 1514))
    fig.set_layout_engine("tight")  # laid out at its first write (safefs.savefig)
    savefig(fig, path, dpi=110)
    plt.close(fig)
