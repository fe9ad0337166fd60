"""report.html: self-contained, deterministic, and rendered by a real headless Chromium."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from results_scenario import SCENARIO

from bufferlab.cli import main

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
SECTIONS = [
    "scenario",
    "results",
    "topology",
    "warnings",
    "parts",
    "tc",
    "iperf3",
    "ping",
    "classes",
    "flows",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    sc = tmp / "t.toml"
    sc.write_text(SCENARIO, encoding="utf-8")
    assert main(["run", str(sc), "-o", str(tmp / "out"), "-q", "--no-progress"]) == 0
    return tmp / "out" / "t"


def test_report_written_by_run_and_self_contained(run_dir: Path) -> None:
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    # nothing to fetch: no scripts, stylesheets or remote images
    assert "<script" not in html and "<link" not in html
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", html)
    pngs = sorted(run_dir.rglob("*.png"))
    # per part: plot_q.sh's 100 ms plot and the exact queue trace of the same interface
    assert sorted(p.name for p in pngs) == ["q_s1-eth2.png"] * 2 + ["queue_trace_s1-eth2.png"] * 2, pngs
    assert html.count('src="data:image/png;base64,') == len(pngs)
    for s in SECTIONS:
        assert f'id="{s}"' in html
    assert "$ tc -s qdisc show dev s1-eth2" in html and "qdisc tbf 2: parent 1: rate 20Mbit" in html
    assert "iperf3 -c 10.0.0.3 -t 3 -J &gt; out.json" in html  # the timeline
    assert 'name = &quot;droptail&quot;' in html  # the TOML text, escaped


def test_report_is_deterministic(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "t"
    shutil.copytree(run_dir, copy)
    (copy / "report.html").unlink()
    assert main(["report", str(copy)]) == 0
    assert (copy / "report.html").read_bytes() == (run_dir / "report.html").read_bytes()


def _browser():
    sync = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (test extra)")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium)")
    return sync


def test_report_in_headless_chromium(run_dir: Path, tmp_path: Path) -> None:
    sync = _browser()
    errors: list[str] = []
    failed: list[str] = []
    remote: list[str] = []
    with sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("data:", "file:"))
                    else None)
            page.goto((run_dir / "report.html").as_uri(), wait_until="load")
            imgs = page.eval_on_selector_all(
                "img", "els => els.map(e => [e.complete, e.naturalWidth, e.naturalHeight])")
            n_png = len(list(run_dir.rglob("*.png")))
            assert len(imgs) == n_png and all(c and w > 0 and h > 0 for c, w, h in imgs), imgs
            for s in SECTIONS:
                assert page.locator(f"section#{s}").count() == 1, s
            svg_text = page.inner_text("section#topology")
            assert all(n in svg_text for n in ("h1", "h2", "h3", "s1", "s2", "s1-eth2"))
            assert "netem 10ms" in svg_text and "tbf 20 Mbit/s" in svg_text
            box = page.locator("section#topology svg").bounding_box()
            assert box is not None and box["width"] > 300 and box["height"] > 100
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert errors == [] and failed == [] and remote == []
    from PIL import Image

    img = Image.open(shot).convert("L")
    assert img.size[0] == 1280 and img.size[1] > 1500
    lo, hi = img.getextrema()
    assert hi - lo > 100  # text and plots, not a blank page
    hist = img.histogram()
    assert max(hist) < 0.97 * sum(hist)


def test_report_shows_the_printed_result_summary(run_dir: Path) -> None:
    import json

    from bufferlab.outputs.result_lines import result_lines

    html = (run_dir / "report.html").read_text(encoding="utf-8")
    top = html.split('<section id="results">')[1].split("</section>")[0]
    parts = json.loads((run_dir / "summary.json").read_text())["parts"]
    lines = [ln for p in parts for ln in result_lines(p["results"])]
    assert lines and all(_html_escape(ln) in top for ln in lines)
    # tables scroll inside their own box
    assert html.count('<div class="tbl"><table>') == html.count("<table>")


def _html_escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def test_the_two_queue_plots_say_what_each_counts(run_dir: Path) -> None:
    """plot_q.sh reads the leaf (tbf under netem), the trace every qdisc of the interface: the
    captions say so, so a flat plot_q.sh line beside a full trace is not a puzzle (issue 23)."""
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    captions = re.findall(r"<figcaption>([^<]*)</figcaption>", html)
    assert sum(c.endswith("q_s1-eth2.png: plot_q.sh, the backlog of the last qdisc tc -s prints (the leaf)")
               for c in captions) == 2
    assert sum(c.endswith("queue_trace_s1-eth2.png: every qdisc of the interface, root and children together")
               for c in captions) == 2


def test_no_link_crosses_a_node_card(run_dir: Path) -> None:
    """A switch's card (its ports and qdisc chains) sits where no link's line passes, so its
    qdisc chain is never read as another link's label (issue 23: s1's card lay on h2's link)."""
    from bufferlab.outputs.topology_svg import _crosses

    svg = re.search(r"<svg.*?</svg>", (run_dir / "report.html").read_text(encoding="utf-8"), re.S).group(0)
    num = r'"([-\d.]+)"'
    lines = [((float(a), float(b)), (float(c), float(d)))
             for a, b, c, d in re.findall(rf"<line x1={num} y1={num} x2={num} y2={num}", svg)]
    card = re.compile(rf'<rect x={num} y={num} width={num} height={num} rx="4"')
    # each card's rect is followed by its own lines of text, up to the next card
    pieces = card.split(svg)[1:]
    cards = [(float(x), float(y), float(x) + float(w), float(y) + float(h), "#a14a00" in texts)
             for x, y, w, h, texts in zip(*(iter(pieces),) * 5, strict=False)]
    with_qdiscs = [c[:4] for c in cards if c[4]]
    assert len(lines) == 4 and len(cards) == 5 and len(with_qdiscs) == 1
    assert [(c, seg) for c in with_qdiscs for seg in lines if _crosses(c, seg)] == []
    # the check itself: a line through the middle of a card is seen
    c = with_qdiscs[0]
    assert _crosses(c, ((c[0] - 5, (c[1] + c[3]) / 2), (c[2] + 5, (c[1] + c[3]) / 2)))


def test_a_long_table_shows_its_first_rows_and_says_where_the_rest_are() -> None:
    """Campaign 5: a 256-host pingall's 65 000 pings made a report of 65 000-row tables that took
    longer to write than the 15 s a SIGTERM gives; the report shows the first rows."""
    from bufferlab.outputs.report import MAX_ROWS, table

    rows = [[f"h{i}", i] for i in range(MAX_ROWS + 5)]
    html = table(["host", "n"], rows, every_row_in="tables/ping.csv")
    assert html.count("<tr>") == MAX_ROWS + 1  # the header and the first rows
    assert f"The first {MAX_ROWS:,} of {MAX_ROWS + 5:,} rows; every row is in tables/ping.csv" in html
    short = table(["host", "n"], rows[:3])
    assert short.count("<tr>") == 4 and "The first" not in short
