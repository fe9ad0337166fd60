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
SECTIONS = ["scenario", "results", "topology", "warnings", "parts", "tc", "iperf3", "ping", "classes", "flows"]


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
