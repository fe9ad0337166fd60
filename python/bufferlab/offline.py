"""Commands that work on files a run (or a real tool) already wrote: ``plot`` and ``export``.

Output convention shared with the rest of the CLI: written files on stdout,
one per line; ``note:`` lines (plots or series left out on purpose) and
``error:`` messages on stderr; exit status 2 when anything was wrong with the
input, after everything that could be produced was written.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .errors import BufferlabError


def _show(paths: list[Path]) -> None:
    for p in paths:
        print(p)


def cli_plot(json_path: Path, out_dir: Path | None) -> int:
    """``bufferlab plot FILE.json [-o DIR]``."""
    from .formats.plot_iperf import PlotError, plot_json

    try:
        res = plot_json(json_path, out_dir)
    except PlotError as e:
        _show(e.produced)
        print(e.message, file=sys.stderr)
        return 2
    except OSError as e:
        raise BufferlabError(
            f"error: {e.filename or json_path}: {e.strerror}\n"
            "  hint: check the file's permissions, or choose another folder with -o"
        ) from None
    _show(res.produced)
    for n in res.notes:
        print(f"note: {n}", file=sys.stderr)
    return 0


def cli_export_flent(results_dir: Path, out_dir: Path | None) -> int:
    """``bufferlab export --flent RESULTS_DIR [-o OUT]``."""
    from .formats.flent import export_flent

    try:
        rep = export_flent(results_dir, out_dir)
    except OSError as e:
        raise BufferlabError(
            f"error: {e.filename or results_dir}: {e.strerror}\n"
            "  hint: check the permissions, or choose another folder with -o"
        ) from None
    _show(rep.produced)
    for n in rep.notes:
        print(f"note: {n}", file=sys.stderr)
    for p in rep.problems:
        print(p if p.startswith("error:") or ": error: " in p else f"error: {p}", file=sys.stderr)
    return 2 if rep.problems else 0
