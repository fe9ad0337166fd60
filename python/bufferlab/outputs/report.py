"""``<out>/<scenario>/report.html``: one self-contained page per run.

No network access is needed to view it: CSS is inline, plots are embedded as
base64 PNG, the topology is an inline SVG laid out here. The page depends
only on the results folder, so the same run gives the same bytes (no
generation timestamp).
"""

from __future__ import annotations

import base64
import html
import re
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..commands.tc import tc_show_text
from ..profile import PROFILES
from ..safefs import write_atomic
from .fct import fct_summary, plot_fct
from .grading import text as grading_text
from .result_lines import result_lines
from .results import DAMAGE, NS, Outputs, Problem, ResultsError, Run, load_run
from .tables import TablesResult, fct_table_rows, p99, write_tables
from .topology_svg import topology_svg

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d232b;
background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:18px 24px 60px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:19px;margin:30px 0 8px;border-bottom:2px solid #d5dae1}
h3{font-size:16px;margin:18px 0 6px}
nav a{margin-right:12px}
.tbl{max-width:100%;overflow-x:auto;margin:6px 0 12px}
table{border-collapse:collapse;background:#fff}
td,th{border:1px solid #d5dae1;padding:3px 8px;text-align:right;white-space:nowrap}
td.l{white-space:normal;overflow-wrap:anywhere;min-width:6em}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
th{background:#eef1f5}td.l,th.l{text-align:left}
pre{background:#fff;border:1px solid #d5dae1;padding:8px;overflow-x:auto;font-size:12.5px;line-height:1.3}
figure{display:inline-block;margin:6px 10px 10px 0;background:#fff;border:1px solid #d5dae1;padding:6px}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#555;overflow-wrap:anywhere}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,420px),1fr));
  gap:10px;margin:8px 0 14px}
.plots figure{display:block;margin:0;min-width:0}
.plots img{width:100%;height:auto;aspect-ratio:16/11;object-fit:contain}
.warn{background:#fff6e0;border-left:4px solid #e0a100;padding:6px 10px;margin:6px 0;white-space:pre-wrap}
.err{background:#fde8e8;border-left:4px solid #c62828;padding:6px 10px;margin:6px 0;white-space:pre-wrap}
.note{background:#eef4fb;border-left:4px solid #5b8fd1;padding:6px 10px;margin:6px 0;white-space:pre-wrap}
.muted{color:#666}svg text{font-family:system-ui,sans-serif}
.topo{max-width:100%;overflow-x:auto;margin:6px 0 12px}svg.topology{display:block;max-width:100%;height:auto}
svg.topology text{font-family:"DejaVu Sans Mono",Menlo,Consolas,"Liberation Mono",monospace}
details{margin:4px 0}summary{cursor:pointer}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _num(v: Any, fmt: str = "{:,.0f}") -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    return fmt.format(v)


#: the rows a report's table shows (a 256-host pingall has 65 000 pings and flows: a page
#: that long is unreadable and takes seconds to write); the tables/ files hold them all
MAX_ROWS = 1000


def table(headers: list[str], rows: list[list[Any]], left: int = 1, every_row_in: str = "") -> str:
    """An HTML table; the first ``left`` columns are text (left-aligned). Past
    :data:`MAX_ROWS` rows it shows the first ones and says where the rest are
    (``every_row_in``, e.g. ``tables/ping.csv``)."""
    note = ""
    if len(rows) > MAX_ROWS:
        where = f"; every row is in {every_row_in}" if every_row_in else ""
        note = f"<p class='muted'>The first {MAX_ROWS:,} of {len(rows):,} rows{_e(where)}.</p>"
        rows = rows[:MAX_ROWS]
    h = "".join(f'<th class="{"l" if i < left else ""}">{_e(c)}</th>' for i, c in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{_e(c)}</td>' for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    # the box scrolls, never the page
    return f'<div class="tbl"><table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table></div>{note}'



def png_figure(path: Path, caption: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{_e(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>")


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS}</style></head><body><main>{body}</main></body></html>\n")


# ---------------------------------------------------------------- topology: topology_svg.py

# ---------------------------------------------------------------- sections

def _pngs(root: Path, under: Path) -> list[Path]:
    """The plots the run drew: regular files only. bufferlab writes no link, folder or FIFO
    named *.png; one planted there (a dangling link, fuzz_inputs.py's results target) is not a
    plot, and reading it would fail or read what is not the run's."""
    return sorted(p for p in under.rglob("*.png")
                  if "tables" not in p.relative_to(root).parts[:1] and stat.S_ISREG(p.lstat().st_mode))


def _plot_grid(root: Path, pngs: list[Path]) -> str:
    """Plots in a grid of equal cells: every image is drawn in the same box (fitted, not
    stretched), whatever its pixel size, so a part's plots line up."""
    if not pngs:
        return ""
    figures = "".join(png_figure(q, _plot_caption(q.relative_to(root).as_posix())) for q in pngs)
    return f'<div class="plots">{figures}</div>'


def _plot_caption(rel: str) -> str:
    """The file's path, and for the two queue plots what each one counts: they differ on
    purpose when an interface has a qdisc chain (netem → tbf holds packets in netem's delay
    line that plot_q.sh, reading the leaf as the handouts' script does, never sees)."""
    name = rel.rsplit("/", 1)[-1]
    if name.startswith("q_") and "/admin/" in f"/{rel}":
        return f"{rel}: plot_q.sh, the backlog of the last qdisc tc -s prints (the leaf)"
    if name.startswith("queue_trace_"):
        return f"{rel}: every qdisc of the interface, root and children together"
    return rel


def _timeline(run: Run, part: dict[str, Any]) -> str:
    name = part["name"]
    apps = sorted((f for f in run.summary["flows"] if f.get("part") == name and "start_ns" in f),
                  key=lambda f: (f["start_ns"], f["app"]))
    html_ = []
    if apps:
        # each job of an `a & b & c` line once, by itself (flows record the whole line too)
        rows = [[f"{(f['start_ns'] - part['start_ns']) / NS:.3f}", f.get("terminal", ""),
                 f.get("simple") or f.get("command", ""), f.get("output", "")] for f in apps]
        html_.append(table(["start (s into part)", "terminal", "command", "output"], rows, left=4,
                           every_row_in="summary.json's flows"))
    pdir = run.root / name
    terms = sorted(d for d in pdir.iterdir() if d.is_dir()) if pdir.is_dir() else []
    for d in terms:
        log = d / "terminal.log"
        if log.is_file():
            text = log.read_text(encoding="utf-8", errors="replace")
            n = text.count("\n")
            lines = f"{n} line" + ("" if n == 1 else "s")
            html_.append(f"<details><summary>terminal <b>{_e(d.name)}</b> ({lines})</summary>"
                         f"<pre>{_e(text)}</pre></details>")
    return "".join(html_)


def _tc_blocks(heading: str, qdiscs: dict[str, list[dict[str, Any]]], drops: dict[str, Any],
               profile: Any) -> str:
    parts = []
    for iface, blocks in sorted(qdiscs.items()):
        if not any(b.get("kind") != "noqueue" for b in blocks):
            continue
        try:
            text = tc_show_text(blocks, profile, stats=True)
        except (KeyError, TypeError, ValueError) as e:  # a qdisc kind this printer does not know
            text = f"(cannot print: {e})\n"
        reasons = sorted(drops.get(iface, {}).items())
        why = ", ".join(f"{r}: {c.get('packets', 0):,} pkts" for r, c in reasons) or "none"
        parts.append(f"<pre>$ tc -s qdisc show dev {_e(iface)}\n{_e(text)}</pre>"
                     f"<p class='muted'>drops by reason: {_e(why)}</p>")
    return f"<h3>{_e(heading)}</h3>" + ("".join(parts) or "<p class='muted'>No qdiscs.</p>")


def _tc_section(run: Run) -> str:
    prof = PROFILES.get(str(run.summary.get("profile")), PROFILES["lab2019"])
    out = []
    if all("qdiscs" in p for p in run.parts):
        for p in run.parts:  # counters are cumulative since the qdisc was added; drops are the part's
            if "tc" in p:  # a --real run: the kernel's own `tc -s qdisc show` text
                out.append(f"<h3>end of part {_e(p['name'])}</h3>" + ("".join(
                    f"<pre>$ tc -s qdisc show dev {_e(dev)}\n{_e(text)}</pre>" for dev, text in sorted(
                        p["tc"].items())) or "<p class='muted'>No qdiscs.</p>"))
                continue
            out.append(_tc_blocks(f"end of part {p['name']}", p["qdiscs"], p.get("drops", {}), prof))
    else:
        ifs = run.summary["interfaces"]
        out.append(_tc_blocks("end of the run", {k: v.get("qdiscs", []) for k, v in ifs.items()},
                              {k: v.get("drops", {}) for k, v in ifs.items()}, prof))
    shown = []
    for p in run.parts:  # tc -s output the scenario itself printed
        pdir = run.root / p["name"]
        for log in sorted(pdir.glob("*/terminal.log")) if pdir.is_dir() else []:
            text = log.read_text(encoding="utf-8", errors="replace")
            for m in re.finditer(r"^\$ [^\n]*tc -s[^\n]*\n(?:(?!\$ )[^\n]*\n)*", text, re.M):
                shown.append(f"<h3>{_e(log.relative_to(run.root).as_posix())}</h3><pre>{_e(m[0])}</pre>")
    if shown:
        out.append("<h3>Printed by the scenario</h3>" + "".join(shown))
    return "".join(out)


def _iperf3_section(out: Outputs) -> str:
    if not out.iperf3:
        return "<p class='muted'>No iperf3 output in this run.</p>"
    rows = []
    for t in out.iperf3:
        rtts = [r["rtt"] / 1000 for r in t.rows if r["row"] == "stream" and r.get("rtt")]
        rows.append([t.part, t.host, t.file, t.role, t.protocol, _num(t.sent_bytes), _num(t.received_bytes),
                     _num(None if t.goodput_bps is None else t.goodput_bps / 1e6, "{:,.2f}"),
                     _num(t.retransmits), _num(t.lost_packets),
                     _num(None if t.mean_rtt_us is None else t.mean_rtt_us / 1000, "{:.2f}"),
                     _num(p99(rtts), "{:.2f}"), t.error or ""])
    return table(["part", "host", "file", "role", "proto", "sent B", "received B", "goodput Mbit/s",
                  "retr", "lost", "mean RTT ms", "p99 RTT ms", "error"], rows, left=5) + (
        f"<p class='muted'>{GOODPUT_NOTE}</p>")


#: what "goodput" means wherever the report, the console, summary.json, the tables and compare show it
GOODPUT_NOTE = ("goodput: payload bytes received × 8 / the receiver's interval, the bitrate of iperf3's "
                "receiver line (for UDP before iperf3 3.11, whose JSON has no receiver bytes: the "
                "datagrams received × their size); from a text output, to its three significant digits.")


def _ping_section(out: Outputs) -> str:
    if not out.pings:
        return "<p class='muted'>No ping output in this run.</p>"
    rows = []
    for pr in out.pings:
        rtt = [r[2] for r in pr.replies]
        rows.append([pr.part, pr.host, pr.file, pr.dest, _num(pr.transmitted), _num(pr.received),
                     _num(min(rtt) if rtt else None, "{:.2f}"),
                     _num(sum(rtt) / len(rtt) if rtt else None, "{:.2f}"),
                     _num(p99(rtt), "{:.2f}"), _num(max(rtt) if rtt else None, "{:.2f}")])
    heads = ["part", "host", "file", "dest", "sent", "received", "min ms", "mean ms", "p99 ms", "max ms"]
    return table(heads, rows, left=4, every_row_in="tables/ping.csv")


def _results_section(run: Run) -> str:
    """Each part's result summary, the lines ``bufferlab run`` printed after it (summary.json)."""
    out = []
    for p in run.parts:
        if "results" not in p:
            continue
        lines = result_lines(p["results"])
        out.append(f"<h3>part {_e(p['name'])}</h3>"
                   + (f"<pre>{_e(chr(10).join(lines))}</pre>" if lines
                      else "<p class='muted'>Nothing ended.</p>"))
    graded = run.summary.get("expectations")
    if isinstance(graded, dict):  # [[expect]] or a grade's rubric (outputs/grading.py)
        try:
            out.append(f"<h3>expectations</h3><pre>{_e(grading_text(graded))}</pre>")
        except DAMAGE:
            out.append("<p class='muted'>summary.json's expectations are not what bufferlab wrote.</p>")
    return "".join(out) or "<p class='muted'>This summary.json has no result summaries (an older run).</p>"


def _classes_section(run: Run) -> str:
    rows = [[p["name"], c.get("tos"), c.get("dscp"), _num(c.get("sent")), _num(c.get("received")),
             _num(c.get("dropped")), _num(c.get("dropped_pct"), "{:.3f}")]
            for p in run.parts for c in p.get("classes", [])]
    if not rows:
        return "<p class='muted'>No UDP iperf3 datagrams per DS byte in this run.</p>"
    return table(["part", "DS byte", "DSCP", "sent", "received", "dropped", "dropped %"], rows, left=2)


def _flows_section(run: Run) -> str:
    rows = [[f.get("part", ""), f.get("app"), f.get("kind"), f.get("node"), f.get("command", ""),
             _num(f.get("sent_packets")), _num(f.get("received_packets")), _num(f.get("sent_bytes")),
             _num(f.get("received_bytes"))] for f in run.summary["flows"]]
    return table(["part", "app", "kind", "node", "command", "sent pkts", "recv pkts", "sent B", "recv B"],
                 rows, left=5, every_row_in="tables/flows.csv")


def _fct_section(run: Run) -> str:
    """Flow completion times per part and size bucket, and every part's flows in one
    FCT-vs-size plot (tables/fct_vs_size.png), so parts that differ only in the
    queue discipline compare at a glance."""
    flows = fct_table_rows(run, [])
    by_part: dict[str, list[dict[str, Any]]] = {}
    for f in flows:
        by_part.setdefault(f["part"], []).append(f)
    rows = [[part, b["bucket"], _num(b["flows"]), _num(b["completed"]), _num(b["mean_ms"], "{:.3f}"),
             _num(b["p50_ms"], "{:.3f}"), _num(b["p99_ms"], "{:.3f}")]
            for part, fs in by_part.items() for b in fct_summary(fs) if b["flows"]]
    path = run.root / "tables" / "fct_vs_size.png"
    plot_fct(by_part, path, "Flow completion time vs size, per part")
    return (table(["part", "size", "flows", "completed", "mean ms", "p50 ms", "p99 ms"], rows, left=2)
            + png_figure(path, "FCT vs flow size: dots are flows, lines the median per size octave"))


def build_report(run: Run, out: Outputs, problems: list[Problem]) -> str:
    s = run.summary
    title = f"bufferlab report: {s.get('scenario')}"
    b = [f"<h1>{_e(s.get('scenario'))}</h1>"]
    # the FCT section only for a run with a flows workload (other reports stay as they were)
    has_fct = any(p.get("fct") for p in run.parts)
    nav = ["scenario", "results", "topology", "warnings", "parts", "tc", "iperf3", "ping", "classes", "flows"]
    nav += ["fct"] if has_fct else []
    b.append("<nav>" + "".join(f'<a href="#{n}">{n}</a>' for n in nav) + "</nav>")
    b.append('<section id="scenario"><h2>Scenario</h2>')
    b.append(table(["name", "file", "seed", "profile", "simulated s", "events"],
                   [[s.get("scenario"), s.get("file"), s.get("seed"), s.get("profile"),
                     _num(s.get("simulated_s"), "{:.3f}"), _num(s.get("events"))]], left=4))
    if s.get("error"):
        b.append(f'<div class="err">{_e(s["error"])}</div>')
    if s.get("interrupted"):
        cut = [p["name"] for p in s.get("parts", []) if p.get("interrupted")]
        b.append(f'<div class="err">interrupted by {_e(s["interrupted"])}'
                 + (f' during part {_e(cut[0])} (its results up to then are below)' if cut else "")
                 + "; the parts after it did not run</div>")
    if s.get("scenario_toml"):
        b.append(f"<details><summary>scenario file</summary><pre>{_e(s['scenario_toml'])}</pre></details>")
    b.append("</section>")
    b.append(f'<section id="results"><h2>Results</h2>{_results_section(run)}</section>')
    b.append(f'<section id="topology"><h2>Topology</h2>{topology_svg(s)}</section>')
    warns = "".join(f'<div class="warn">{_e(w)}</div>' for w in s.get("warnings", []))
    fails = "".join(f'<div class="err">{_e(_failure_text(f))}</div>' for f in s.get("failures", []))
    # what the run lacks (no ping in it, an empty file): notes, the rest of the page is complete
    notes = "".join(f'<div class="note">note: {_e(p)}</div>' for p in problems)
    b.append('<section id="warnings"><h2>Failures, warnings and notes</h2>'
             + (fails + warns + notes or "<p class='muted'>None.</p>") + "</section>")
    b.append('<section id="parts"><h2>Parts</h2>')
    for p in run.parts:
        b.append(f'<h3 id="part-{_e(p["name"])}">part {_e(p["name"])} '
                 f'<span class="muted">{p["start_ns"] / NS:.3f}–{p["end_ns"] / NS:.3f} s</span>'
                 + (f' <span class="err">interrupted ({_e(p["interrupted"])})</span>'
                    if p.get("interrupted") else "")
                 + (' <span class="err">failed</span>' if p.get("error") else "") + "</h3>")
        b.append(_timeline(run, p))
        pdir = run.root / p["name"]
        b.append(_plot_grid(run.root, _pngs(run.root, pdir) if pdir.is_dir() else []))
    others = [q for q in _pngs(run.root, run.root)
              if q.relative_to(run.root).parts[0] not in {p["name"] for p in run.parts}]
    if others:
        b.append("<h3>Other plots</h3>" + _plot_grid(run.root, others))
    b.append("</section>")
    b.append(f'<section id="tc"><h2>tc -s statistics</h2>{_tc_section(run)}</section>')
    b.append(f'<section id="iperf3"><h2>iperf3</h2>{_iperf3_section(out)}</section>')
    b.append(f'<section id="ping"><h2>ping</h2>{_ping_section(out)}</section>')
    b.append(f'<section id="classes"><h2>Per-class delivery</h2>{_classes_section(run)}</section>')
    b.append(f'<section id="flows"><h2>Flows</h2>{_flows_section(run)}</section>')
    if has_fct:
        b.append(f'<section id="fct"><h2>Flow completion times</h2>{_fct_section(run)}</section>')
    return page(title, "".join(b))


def _failure_text(f: dict[str, Any]) -> str:
    ok = " (allowed by allow_fail)" if f.get("allowed") else ""
    return (f"{f.get('where')}: {f.get('node')}: part {f.get('part')!r}: `{f.get('command')}` exited with "
            f"status {f.get('status')}{ok}\n{f.get('message') or '(it printed no message)'}")


def write_report(run: Run, out: Outputs, problems: list[Problem]) -> Path:
    path = run.root / "report.html"
    write_atomic(path, build_report(run, out, problems))  # never through a symlink (safefs.py)
    return path


def tables_and_report(run: Run, report: bool = True) -> tuple[TablesResult, Path | None]:
    """What ``bufferlab run`` writes after the simulation: the tables, then the report."""
    res = write_tables(run)
    assert res.outputs is not None
    path = write_report(run, res.outputs, res.problems) if report else None
    return res, path


def after_run(root: Path, report: bool = True, echo: Callable[[str], None] = lambda s: None) -> float:
    """Tables (and the report) at the end of ``bufferlab run``; returns the seconds it took.

    A run without ping is not a mistake here, so only broken or empty files are echoed.
    """
    t0 = time.perf_counter()
    res, _ = tables_and_report(load_run(root), report)
    for p in res.problems:
        if p.kind == "bad":
            echo(f"note: {p}")
    return time.perf_counter() - t0


def cli_report(path: Path) -> int:
    """``bufferlab report RESULTS_DIR``: status 0 once the report is written. What a
    run lacks (no ping in it, an empty file) is a note, here and in the report;
    a folder that is not a run's raises ResultsError (status 2)."""
    run = load_run(path)
    try:
        res, html_path = tables_and_report(run)
    except DAMAGE as e:
        # an edited summary.json: a value of the wrong type or shape somewhere in it
        raise ResultsError(
            run.root / "summary.json",
            f"a value in it is not what `bufferlab run` writes ({type(e).__name__}: {e})",
            "the summary.json that `bufferlab run` wrote, unedited",
            "re-run the scenario to rewrite it (or undo the edit)",
        ) from None
    print(f"{html_path} ({html_path.stat().st_size // 1024} KiB); tables in {res.folder}")  # type: ignore[union-attr]
    for p in res.problems:
        print(f"note: {p}", file=sys.stderr)
    return 0
