"""Results in a notebook: :class:`Results` (what ``bufferlab.run`` returns, or any results
folder) and :func:`compare` (``bufferlab.compare``), each shown inline by ``_repr_html_``.

A :class:`Results` shows the run's state, each part's result lines, one figure of its time
series (outputs/series.py: the charts `bufferlab serve` draws, here as a PNG, so the
notebook shows them wherever it is opened) and the first rows of its tables; every table is
a pandas DataFrame, ``res.tables["ping"]`` or ``res.ping`` (docs/tables.md).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from . import compare as compare_mod
from .report import png_figure, table
from .results import Run, load_run
from .series import charts, figure, load_tables, run_series
from .tables import SCHEMAS

_STYLE = ("<style>.bufferlab-nb table{border-collapse:collapse;font-size:12px;margin:4px 0}"
          ".bufferlab-nb td,.bufferlab-nb th{border:1px solid #ccd;padding:1px 6px;text-align:right}"
          ".bufferlab-nb td.l,.bufferlab-nb th.l{text-align:left}.bufferlab-nb pre{margin:0;font-size:12px}"
          ".bufferlab-nb img{max-width:100%}.bufferlab-nb .warn{color:#a33}</style>")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


class Tables(Mapping[str, Any]):
    """A run's tables by name, each read as a pandas DataFrame the first time it is asked for."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name not in SCHEMAS:
            raise KeyError(f"{name!r}: not a table of a run (tables: {', '.join(SCHEMAS)})")
        if name not in self._cache:
            import pandas as pd

            path = self.root / "tables" / f"{name}.parquet"
            if not path.is_file():
                raise KeyError(f"{path}: not written (a run writes its tables when it ends; "
                               f"`bufferlab report {self.root}` writes them again)")
            self._cache[name] = pd.read_parquet(path)
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(SCHEMAS)

    def __len__(self) -> int:
        return len(SCHEMAS)

    def rows(self, name: str) -> int:
        import pyarrow.parquet as pq

        path = self.root / "tables" / f"{name}.parquet"
        return pq.read_metadata(path).num_rows if path.is_file() else 0


class Results:
    """A run's results folder (``results/<scenario>``): its summary, tables and charts.

    ``tables`` maps each table's name (docs/tables.md) to a DataFrame, also reachable as an
    attribute (``res.ping``, ``res.intervals``, ``res.queue_events``...); ``summary`` is
    summary.json; ``figure()`` draws the charts with matplotlib; in a notebook the object
    shows itself.
    """

    def __init__(self, root: str | Path) -> None:
        self._run: Run = load_run(Path(root))
        self.root = self._run.root
        self.tables = Tables(self.root)

    @property
    def summary(self) -> dict[str, Any]:
        return self._run.summary

    @property
    def parts(self) -> list[str]:
        return [p["name"] for p in self._run.parts]

    @property
    def complete(self) -> bool:
        s = self.summary
        return not any(s.get(k) for k in ("error", "interrupted", "stopped"))

    def __getattr__(self, name: str) -> Any:
        if name in SCHEMAS:
            return self.tables[name]
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r} "
                             f"(tables: {', '.join(SCHEMAS)})")

    def series(self, parts: list[str] | None = None) -> dict[str, Any]:
        """The run's time series as `bufferlab serve` plots them (outputs/series.py)."""
        doc = run_series(self.root)
        if parts is not None:
            _, tables = load_tables(self.root, [])
            doc["charts"] = [c.doc() for c in charts(tables, parts)]
        return doc

    def figure(self, parts: list[str] | None = None) -> Any:
        """A matplotlib figure of the run's charts (or of ``parts``)."""
        return figure(self.series(parts)["charts"])

    def __repr__(self) -> str:
        return (f"<bufferlab.Results {self.summary.get('scenario')!r} in {self.root}: "
                f"parts {', '.join(self.parts)}>")

    def _repr_html_(self) -> str:
        s = self.summary
        state = ("complete" if self.complete else
                 f"interrupted by {s['interrupted']}" if s.get("interrupted") else
                 f"stopped: {s['stopped']}" if s.get("stopped") else "ended by an error")
        doc = run_series(self.root)
        parts = [[p["name"], "<br>".join(_e(x) for x in p["lines"]) or "–"] for p in doc["overview"]["parts"]]
        rows = "".join(f"<tr><td class='l'><b>{_e(n)}</b></td><td class='l'><pre>{lines}</pre></td></tr>"
                       for n, lines in parts)
        out = [_STYLE, "<div class='bufferlab-nb'>",
               f"<h3>{_e(s.get('scenario'))}</h3><p>{s.get('simulated_s', 0):.3f} s simulated, "
               f"{s.get('events', 0):,} events, {_e(state)}; results in <code>{_e(self.root)}</code></p>",
               f"<table><tr><th class='l'>part</th><th class='l'>results</th></tr>{rows}</table>"]
        for f in doc["overview"]["failures"]:
            out.append(f"<p class='warn'>{_e(f)}</p>")
        fig = figure(doc["charts"])
        out.append(f"<img alt='charts of {_e(s.get('scenario'))}' src='data:image/png;base64,{_png(fig)}'>")
        listing = []
        for name in SCHEMAS:
            n = self.tables.rows(name)
            if n:
                head = self.tables[name].head(5)
                listing.append(f"<details><summary><code>.tables[{name!r}]</code> ({n:,} rows)</summary>"
                               f"{head.to_html(index=False, max_cols=12)}</details>")
        out.append("<p>Tables (pandas DataFrames):</p>" + "".join(listing))
        out.append("</div>")
        return "".join(out)


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


class Comparison:
    """``bufferlab compare``'s table (``table``, a DataFrame) and plots of several runs or
    parts; written to ``output`` (compare.csv, compare.html) as the command writes them."""

    def __init__(self, rows: list[dict[str, Any]], problems: list[Any], plots: list[Path],
                 output: Path) -> None:
        import pandas as pd

        self.table = pd.DataFrame(rows)
        self.problems = [str(p) for p in problems]
        self.plots = plots
        self.output = output

    def __repr__(self) -> str:
        return f"<bufferlab.Comparison of {len(self.table)} runs in {self.output}>\n{self.table.to_string()}"

    def _repr_html_(self) -> str:
        head = [h for _, h, _ in compare_mod.COLUMNS]
        cells = [[compare_mod._cell(r[c], f) for c, _, f in compare_mod.COLUMNS]
                 for r in self.table.to_dict("records")]
        out = [_STYLE, "<div class='bufferlab-nb'>", f"<p>Written to <code>{_e(self.output)}</code></p>",
               table(head, cells)]
        out += [f"<p class='warn'>{_e(p)}</p>" for p in self.problems]
        out += [png_figure(p, p.stem) for p in self.plots]
        out.append("</div>")
        return "".join(out)


def compare(*runs: Results | str | Path, output: str | Path | None = None) -> Comparison:
    """Overlay and tabulate runs or parts, as ``bufferlab compare`` does: each a
    :class:`Results`, a results folder, a part folder inside one or an iperf3 file."""
    paths = [r.root if isinstance(r, Results) else Path(r) for r in runs]
    if len(paths) < 1:
        raise ValueError("compare needs at least one run")
    out = Path(output) if output is not None else compare_mod.default_output(paths)
    rows, problems, plots = compare_mod.compare(paths, out)
    return Comparison(rows, problems, plots, out)
