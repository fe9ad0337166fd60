"""report.html's layout in a real headless Chromium, at 1280 and 800 px (issue 11, item 7).

For three shipped scenarios and a synthetic one with long node names and long
addresses: the page never scrolls sideways (tables and the topology scroll in
their own boxes), no two texts of the topology SVG overlap (the browser's own
getBBox of every <text>) and none is cut off by the picture's edge, each
interface's qdisc chain is shown part by part, the plots of a grid are drawn
the same size, and the console stays free of errors.

Uses the Debian chromium (/usr/bin/chromium, installed by .ci/run) through the
playwright Python package (the test extra); playwright's own browser download
is not needed. Set BUFFERLAB_REPORT_SHOTS to a folder to get screenshots of each page there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from bufferlab.cli import main

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
WIDTHS = (1280, 800)
SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

# long names (node names allow letters, digits and _), long addresses, a node with three
# links, an angled link, and a qdisc chain that changes between parts
LONG = """\
name = "long names"
seed = 1

[topology]
hosts = ["sender_host_with_a_long_name", "receiver_host_long_name", "third"]
routers = ["core_router_number_one", "r2"]
links = [
  { a = "sender_host_with_a_long_name", b = "core_router_number_one", a_ip = "192.168.125.254/24", b_ip = "192.168.125.1/24", wire_rate = "100mbit", wire_delay = "5ms" },
  { a = "core_router_number_one", b = "r2", a_ip = "172.31.255.253/30", b_ip = "172.31.255.254/30", wire_rate = "10mbit", wire_delay = "20ms" },
  { a = "r2", b = "receiver_host_long_name", a_ip = "10.200.100.1/24", b_ip = "10.200.100.222/24", wire_rate = "100mbit" },
  { a = "third", b = "core_router_number_one", a_ip = "192.168.126.200/24", b_ip = "192.168.126.1/24", wire_rate = "100mbit" },
]

[[part]]
name = "a_part_with_a_rather_long_name"
duration = "1s"
cmds = [
  "core_router_number_one: tc qdisc add dev core_router_number_one-eth1 root handle 1: netem delay 10ms 2ms loss 0.1%",
  "core_router_number_one: tc qdisc add dev core_router_number_one-eth1 parent 1: handle 2: tbf rate 8mbit burst 10k limit 200k",
  "sender_host_with_a_long_name: ping 10.200.100.222 -c 3 -i 0.2",
]

[[part]]
name = "second"
duration = "1s"
cmds = [
  "core_router_number_one: tc qdisc change dev core_router_number_one-eth1 parent 1: handle 2: tbf rate 4mbit burst 10k limit 100k",
  "third: ping 10.200.100.222 -c 3 -i 0.2",
]
"""

# what the topology must say: per scenario, texts of its SVG (qdisc chains part by part)
EXPECT = {
    "udp-tbf-netem": ["s1-eth2", "h3-eth0 10.0.0.3", "netem 20ms → tbf 10 Mbit/s 150Kb"],
    "cpm-red": ["host2/eth0 192.168.25.24", "eth1 192.168.25.22", "plain-red:", "classful-red:",
                "tbf 8 Mbit/s 200Kb → red 16Kb–32Kb\n", "tbf 8 Mbit/s 200Kb → red 16Kb–32Kb per-DS"],
    # the densest shipped topology: six hosts, four routers, a qdisc on every router link
    "red-vs-droptail": ["n3-eth0 10.1.1.2", "n9-eth0 10.1.9.2", "droptail: bfifo 800b", "red_ns3 50–150p"],
    "long": ["sender_host_with_a_long_name-eth0 192.168.125.254", "receiver_host_long_name",
             "a_part_with_a_rather_long_name:", "netem 10ms ±2ms loss 0.1%", "second:",
             "tbf 8 Mbit/s 200Kb", "tbf 4 Mbit/s 100Kb"],
}

# every <text> of the topology: its content and getBBox (the SVG's own units), and the viewBox
TEXT_BOXES = """svg => {
  const vb = svg.viewBox.baseVal;
  return {view: [vb.x, vb.y, vb.width, vb.height],
          texts: [...svg.querySelectorAll('text')].map(t => {
            const b = t.getBBox(); return [t.textContent, b.x, b.y, b.width, b.height]; })};
}"""
# rendered sizes of the images of each plot grid
GRID_SIZES = """els => els.map(g => [...g.querySelectorAll('img')].map(i => {
  const r = i.getBoundingClientRect(); return [r.width, r.height]; }))"""


@pytest.fixture(scope="module")
def sync_api() -> Any:
    sync = pytest.importorskip("playwright.sync_api",
                               reason="playwright is not installed (pip install '.[test]')")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed (Debian package chromium; .ci/run installs it)")
    return sync


@pytest.fixture(scope="module")
def browser(sync_api: Any) -> Any:
    with sync_api.sync_playwright() as pw:
        try:
            b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        except Exception as e:  # noqa: BLE001 - a chromium that does not start (no sandbox rights, ...)
            pytest.skip(f"{CHROMIUM} does not start under playwright: {e}")
        yield b
        b.close()


@pytest.fixture(scope="module", params=sorted(EXPECT))
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    name = request.param
    tmp = tmp_path_factory.mktemp(name)
    if name == "long":
        sc = tmp / "long.toml"
        sc.write_text(LONG, encoding="utf-8")
    else:
        sc = SCENARIOS / f"{name}.toml"
    main(["run", str(sc), "-o", str(tmp / "out"), "-q", "--no-progress"])  # exit status: not this test's
    html = tmp / "out" / sc.stem / "report.html"
    assert html.is_file(), f"{sc.name}: no report written"
    return name, html


def _overlaps(texts: list[list[Any]]) -> list[str]:
    bad = []
    for i, (ta, xa, ya, wa, ha) in enumerate(texts):
        for tb, xb, yb, wb, hb in texts[i + 1:]:
            ox = min(xa + wa, xb + wb) - max(xa, xb)
            oy = min(ya + ha, yb + hb) - max(ya, yb)
            if ox > 0.01 and oy > 0.01:
                bad.append(f"{ta!r} and {tb!r} overlap by {ox:.1f} x {oy:.1f}")
    return bad


@pytest.mark.parametrize("width", WIDTHS)
def test_report_layout_in_chromium(
    browser: Any, report: tuple[str, Path], width: int
) -> None:
    name, html = report
    errors: list[str] = []
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(html.as_uri(), wait_until="load")

        # no horizontal page scroll: wide tables and the topology scroll inside their boxes
        sw, cw = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert sw <= cw, f"{name} at {width}px: the page scrolls sideways ({sw} > {cw})"

        # the topology's texts: none overlaps another, none is cut off at the picture's edge
        svg = page.locator("section#topology svg")
        assert svg.count() == 1
        boxes = svg.evaluate(TEXT_BOXES)
        texts = boxes["texts"]
        vx, vy, vw, vh = boxes["view"]
        assert len(texts) > 5
        assert _overlaps(texts) == [], f"{name} at {width}px"
        outside = [t for t, x, y, w, h in texts if x < vx or y < vy or x + w > vx + vw or y + h > vy + vh]
        assert outside == [], f"{name} at {width}px: cut off by the SVG's edge"
        said = "\n".join(t for t, *_ in texts)
        for want in EXPECT[name]:
            assert want in said, f"{name}: {want!r} not in the topology:\n{said}"

        # every plot of a grid is drawn the same size
        grids = page.eval_on_selector_all("div.plots", GRID_SIZES)
        for sizes in grids:
            assert len({(round(w), round(h)) for w, h in sizes}) == 1, f"{name} at {width}px: {sizes}"
            assert all(w > 200 for w, _ in sizes), sizes
        if name == "udp-tbf-netem":
            assert len(grids) == 2  # under-rate and over-rate each plot their queue

        # screenshots to look at (a full page takes seconds): only when asked for
        if os.environ.get("BUFFERLAB_REPORT_SHOTS"):
            shots = Path(os.environ["BUFFERLAB_REPORT_SHOTS"])
            shots.mkdir(parents=True, exist_ok=True)
            page.locator("section#topology").screenshot(path=str(shots / f"{name}-topology-{width}.png"))
            page.screenshot(path=str(shots / f"{name}-{width}.png"), full_page=True)
    finally:
        page.close()
    assert errors == [], f"{name} at {width}px: console errors {errors}"


def test_chromium_is_available_in_ci() -> None:
    """.ci/run installs the browser this test uses; if CI stops installing it, the layout
    tests above would skip silently."""
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert "chromium" in ci
