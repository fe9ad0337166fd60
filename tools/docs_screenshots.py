"""Take the screenshots of docs/bench.md and docs/notebooks.md (docs/img/bench/).

    PYTHONPATH=python python tools/docs_screenshots.py      # about a minute

Serves a scratch copy of scenarios/ (and a small sweep file) with ``bufferlab serve``'s own
server, drives the Debian chromium through playwright (as tests/test_report_browser.py does;
``apt-get install -y chromium``, ``pip install playwright``) and shoots: the editor with an
error marked, Lab 14 run with its progress and charts, the results and the comparison of its
1-BDP and 10-BDP parts, a sweep's plot; then the notebook view of the same run
(``Results._repr_html_``). Images are quantized to 256 colours so the repository stays small.
"""

from __future__ import annotations

import html
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from bufferlab.outputs.notebook import Results  # noqa: E402
from bufferlab.serve.app import make_server  # noqa: E402

OUT = ROOT / "docs" / "img" / "bench"
CHROMIUM = "/usr/bin/chromium"
SWEEP = """# a small slice of sweeps/red-vs-droptail-qlen.toml for the screenshot
scenario = "../scenarios/red-vs-droptail.toml"
name = "qlen-small"
seeds = 3

[grid]
load = [0.75]
qlen = [400, 800, 1600, 3200]
"""


def shrink(path: Path) -> None:
    Image.open(path).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(
        path, optimize=True)
    print(f"{path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)")


def main() -> int:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        print(f"error: {CHROMIUM} is missing: apt-get install -y chromium", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench-shots-"))
    work = scratch / "lab"  # the page shows the folder's name
    work.mkdir()
    try:
        shutil.copytree(ROOT / "scenarios", work / "scenarios")
        (work / "sweeps").mkdir()
        (work / "sweeps" / "qlen-small.toml").write_text(SWEEP, encoding="utf-8")
        server, bench = make_server(work, 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox",
                                                                         "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.goto(f"http://127.0.0.1:{bench.port}/?token={bench.token}")
            shoot_bench(page, work)
            page.close()
            shoot_notebook(browser, work)
            browser.close()
        server.shutdown()
    finally:
        os.chdir(ROOT)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


def shoot_bench(page, work: Path) -> None:  # noqa: ANN001 - playwright's Page
    page.click("li[data-path='scenarios/lab14-bufferbloat.toml']")
    page.wait_for_function("() => window.bench.checks > 0")
    text = page.input_value("#src")
    page.fill("#src", text.replace("burst 500000 limit 160000", "brust 500000 limit 160000"))
    page.wait_for_selector("#gutter div.error")
    # the error's line in view (line 37 of 67), as after scrolling to it
    page.evaluate("() => { const t = document.getElementById('src'); t.scrollTop = 24 * t.scrollHeight / 68;"
                  " t.dispatchEvent(new Event('scroll')); }")
    page.screenshot(path=OUT / "editor.png")
    shrink(OUT / "editor.png")

    page.fill("#src", text)
    page.wait_for_function("() => !document.querySelector('#gutter div.error')")
    page.click("#run")
    page.wait_for_selector("#run-charts .chart canvas", timeout=120_000)
    page.wait_for_selector(".state.done", timeout=300_000)
    page.wait_for_function("() => document.querySelectorAll('#run-charts .chart canvas').length >= 7")
    page.screenshot(path=OUT / "run.png")
    shrink(OUT / "run.png")

    page.evaluate("() => { document.querySelector('header').style.position = 'static'; }")  # not over a shot
    page.click("button[data-tab=results]")
    page.wait_for_function("() => document.querySelectorAll('#res-charts .chart canvas').length >= 7")
    page.uncheck("#part-chips input[value='setup']")
    page.uncheck("#part-chips input[value='100mtu']")
    page.wait_for_timeout(300)
    page.wait_for_function("() => document.querySelectorAll('#res-charts .chart canvas').length >= 6")
    page.locator("#res-charts").scroll_into_view_if_needed()
    box = page.locator("#res-charts .chart[data-key='ping'] canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + box["height"] * 0.5)  # values in the legend
    page.locator("#res-charts").screenshot(path=OUT / "results.png")
    shrink(OUT / "results.png")

    page.click("button[data-tab=compare]")
    page.check("input[value='results/lab14-bufferbloat/1bdp']")
    page.check("input[value='results/lab14-bufferbloat/10bdp']")
    page.click("#compare-go")
    page.wait_for_function("() => document.querySelectorAll('#compare-charts .chart canvas').length >= 6")
    page.evaluate("() => window.scrollTo(0, 0)")
    page.locator("#tab-compare").screenshot(path=OUT / "compare.png", timeout=60_000)
    shrink(OUT / "compare.png")

    page.click("button[data-tab=sweep]")
    page.select_option("#sweep-file", "sweeps/qlen-small.toml")
    page.click("#sweep-go")
    page.wait_for_function("() => /sweep done/.test(document.getElementById('sweep-progress').textContent)",
                           timeout=600_000)
    page.select_option("#sweep-x", "qlen")
    page.select_option("#sweep-y", "goodput_bps")
    page.select_option("#sweep-by", "part")
    page.wait_for_timeout(1000)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.locator("#tab-sweep").screenshot(path=OUT / "sweep.png")
    shrink(OUT / "sweep.png")


def shoot_notebook(browser, work: Path) -> None:  # noqa: ANN001
    os.chdir(work)  # the results' path as a notebook beside them shows it: relative
    res = Results(Path("results") / "lab14-bufferbloat")
    cell = ('<div style="font:13px monospace;color:#333;background:#f5f5f5;padding:6px;'
            'border:1px solid #ddd">'
            "In [1]: lab = bufferlab.run(&quot;scenarios/lab14-bufferbloat.toml&quot;)<br>"
            "&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;lab</div>")
    page_html = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape('notebook')}</title>"
                 "</head><body style='font:14px system-ui;margin:16px;max-width:1100px'>"
                 f"{cell}<div style='padding:8px 4px'>{res._repr_html_()}</div></body></html>")
    file = work / "notebook.html"
    file.write_text(page_html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1140, "height": 900})
    page.goto(file.as_uri())
    page.screenshot(path=OUT / "notebook.png", full_page=False)
    shrink(OUT / "notebook.png")
    page.close()


if __name__ == "__main__":
    sys.exit(main())
