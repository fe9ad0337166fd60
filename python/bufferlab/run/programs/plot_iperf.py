"""``plot_iperf.sh FILE.json``: the handouts' plotting script, reconstructed
(formats/plot_iperf.py, docs/semantics/formats.md §5)."""

from __future__ import annotations

from pathlib import Path

from ...commands.shell import Word
from ...errors import CommandError
from ...formats.plot_iperf import PlotError, plot_iperf
from ..context import PrepareCtx, Prepared, Program, RunCtx, resolved_in_home


def _prep_plot_iperf(pc: PrepareCtx, words: list[Word]) -> Prepared:
    """``plot_iperf.sh FILE.json``: iperf.csv, results/N.dat and the seven plots, in the
    terminal's current folder."""
    if len(words) != 2:
        raise CommandError(
            "plot_iperf.sh takes one iperf3 JSON file",
            col=words[0].col,
            expected="plot_iperf.sh FILE.json",
            suggestion="e.g. h1: iperf3 -c 10.0.0.3 -J > out.json, then h1: plot_iperf.sh out.json",
        )
    name = words[1].text

    def run(rt: RunCtx) -> int:
        if resolved_in_home(rt.term, rt.term.cwd / name) is None:
            rt.io.err(f"plot_iperf.sh: {name}: outside the node's results folder")
            return 1
        try:
            plot_iperf(Path(name), rt.term.cwd)
        except PlotError as e:
            rt.io.err(e.message)
            return 1
        except OSError as e:  # e.g. a file named results where the script makes its folder
            where = Path(e.filename).name if e.filename else name
            if where == "results" and isinstance(e, FileExistsError | NotADirectoryError):
                rt.io.err("mkdir: cannot create directory 'results': File exists")
            else:
                rt.io.err(f"plot_iperf.sh: {where}: {e.strerror or e}")
            return 1
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program(
        "plot_iperf.sh",
        _prep_plot_iperf,
        "`plot_iperf.sh FILE.json`: iperf.csv, results/N.dat and the handout's seven plots",
    ),
)
