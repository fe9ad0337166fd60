"""``bufferlab serve`` (issue 29): the token, paths that never leave the served folder, the check
API's positioned diagnostics, runs (one at a time per scenario, Stop keeping the finished
parts), and the page itself in a real headless Chromium: open, an error marked at its line,
fixed, run, charts drawn, two parts compared.

The browser half uses the Debian chromium through playwright, with test_report_browser.py's
fixtures, and skips, saying why, where either is missing."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import test_report_browser

from bufferlab.serve.app import make_server
from conftest import SCENARIOS, TWO_HOSTS

#: two quick parts: pings, then a short UDP test through a tbf
QUICK = ("""name = "quick"
seed = 1

""" + TWO_HOSTS + """
[[part]]
name = "first"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms",
  "h1: ping -c 5 -i 0.2 10.0.0.2",
]

[[part]]
name = "second"
cmds = [
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 10mbit burst 10k limit 30k",
  "h2: iperf3 -s &",
  "admin: plot_q.sh s1-eth2 &",
  "h1: iperf3 -c 10.0.0.2 -u -b 12M -t 3 -J > udp.json",
  "h1: ping -c 10 -i 0.2 10.0.0.2",
]
""")
#: a first part that ends at once, then one that takes long enough in wall time to be stopped
SLOW = QUICK.replace('name = "quick"', 'name = "slow"').replace(
    '"h1: iperf3 -c 10.0.0.2 -u -b 12M -t 3 -J > udp.json"', '"h1: iperf3 -c 10.0.0.2 -t 3000"').replace(
    'rate 10mbit burst 10k limit 30k', 'rate 1gbit burst 500000 limit 2621440').replace(
    "delay 10ms", "delay 20ms")


class Served:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.server, self.bench = make_server(root, 0)
        self.port = self.bench.port
        self.token = self.bench.token
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def request(self, method: str, path: str, body: Any = None, token: bool = True,
                headers: dict[str, str] | None = None) -> tuple[int, Any]:
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        h = {"X-Bufferlab-Token": self.token} if token else {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)  # the path goes out as written: no normalising
        r = c.getresponse()
        raw = r.read()
        c.close()
        try:
            return r.status, json.loads(raw) if raw else None
        except ValueError:
            return r.status, raw

    def events(self, job_id: str, until: str = "end", timeout: float = 120,
               part: str | None = None) -> list[dict[str, Any]]:
        """The job's events (replayed from the start) up to the first ``until`` one (of ``part``)."""
        deadline = time.monotonic() + timeout
        job = self.bench.jobs.get(job_id)
        assert job is not None
        n = 0
        seen: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            new = job.since(n, 1.0)
            seen += new
            n += len(new)
            if any(e["event"] == until and part in (None, e.get("part")) for e in new):
                return seen
        raise AssertionError(f"no {until!r} event within {timeout} s: {seen[-5:]}")

    def close(self) -> None:
        self.bench.jobs.stop_all()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served(tmp_path: Path) -> Any:
    root = tmp_path / "lab"
    (root / "scenarios").mkdir(parents=True)
    (root / "scenarios" / "quick.toml").write_text(QUICK, encoding="utf-8")
    (root / "scenarios" / "slow.toml").write_text(SLOW, encoding="utf-8")
    (root / "scenarios" / "lab14-bufferbloat.toml").write_text(
        (SCENARIOS / "lab14-bufferbloat.toml").read_text(encoding="utf-8"), encoding="utf-8")
    s = Served(root)
    yield s
    s.close()


# ---------------------------------------------------------------- the token


def test_a_request_without_the_token_is_refused(served: Served) -> None:
    for path in ("/", "/api/tree", "/static/bench.js", "/api/file?path=scenarios/quick.toml"):
        status, doc = served.request("GET", path, token=False)
        assert status == 403, path
        assert "token" in doc["error"]
    status, _ = served.request("GET", "/api/tree", headers={"X-Bufferlab-Token": "x" + served.token})
    assert status == 403
    status, doc = served.request("GET", "/api/tree")
    assert status == 200 and [f["path"] for f in doc["scenarios"]] == [
        "scenarios/lab14-bufferbloat.toml", "scenarios/quick.toml", "scenarios/slow.toml"]


def test_the_printed_url_sets_a_cookie_that_serves_the_page(served: Served) -> None:
    c = http.client.HTTPConnection("127.0.0.1", served.port, timeout=10)
    c.request("GET", f"/?token={served.token}")
    r = c.getresponse()
    r.read()
    assert r.status == 302 and r.getheader("Location") == "/"
    cookie = r.getheader("Set-Cookie")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    c.request("GET", "/", headers={"Cookie": cookie.split(";")[0]})
    r = c.getresponse()
    page = r.read().decode()
    assert r.status == 200 and "bench.js" in page
    assert "script-src 'self'" in r.getheader("Content-Security-Policy")
    c.close()


def test_another_host_name_or_site_is_refused(served: Served) -> None:
    status, doc = served.request("GET", "/api/tree", headers={"Host": f"evil.example:{served.port}"})
    assert status == 403 and "Host" in doc["error"]
    status, _ = served.request("POST", "/api/check", {"path": "scenarios/quick.toml", "text": ""},
                               headers={"Origin": "http://evil.example"})
    assert status == 403


def test_it_listens_on_the_loopback_only(served: Served) -> None:
    assert served.server.server_address[0] == "127.0.0.1"


# ---------------------------------------------------------------- paths


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "secret.txt"
    secret.write_text("precious\n")
    return secret


@pytest.mark.parametrize("path", [
    "../secret.txt", "scenarios/../../secret.txt", "%2e%2e/secret.txt", "%2E%2E%2Fsecret.txt",
    "..%2fsecret.txt", "/etc/passwd", "{outside}", "C:\\x", "scenarios\\..\\..\\secret.txt",
    "link/secret.txt",
    "linked.txt",
])
def test_paths_out_of_the_folder_are_refused(served: Served, outside: Path, path: str) -> None:
    os.symlink(outside.parent, served.root / "link")  # a link inside that leads out
    os.symlink(outside, served.root / "linked.txt")
    path = path.replace("{outside}", str(outside))
    for url in (f"/api/file?path={path}", f"/files/{path}"):
        status, doc = served.request("GET", url)
        assert status in (403, 404), url
        assert b"precious" not in json.dumps(doc).encode(), url
    status, _ = served.request("POST", "/api/file", {"path": path.replace("%2e", ".").replace("%2E", "."),
                                                     "text": "overwritten"})
    assert status in (403, 404)
    assert outside.read_text() == "precious\n"
    status, _ = served.request("POST", "/api/run", {"path": path})
    assert status in (403, 404)


def test_a_raw_dot_dot_in_the_url_is_refused(served: Served, outside: Path) -> None:
    """http.client sends the path as written; the server decodes %2e%2e and refuses it."""
    for raw in ("/files/../secret.txt", "/files/%2e%2e/secret.txt",
                "/files/scenarios/%2E%2E/%2E%2E/secret.txt",
                "/static/../../secret.txt", "/static/%2e%2e%2fapp.py"):
        status, doc = served.request("GET", raw)
        assert status in (403, 404), raw
        assert "precious" not in json.dumps(doc), raw


def test_a_link_inside_the_folder_is_followed_and_files_are_written_there(served: Served) -> None:
    os.symlink(served.root / "scenarios", served.root / "alias")
    status, doc = served.request("GET", "/api/file?path=alias/quick.toml")
    assert status == 200 and doc["text"] == QUICK
    status, _ = served.request("POST", "/api/file", {"path": "scenarios/new.toml", "text": QUICK})
    assert status == 200 and (served.root / "scenarios" / "new.toml").read_text() == QUICK
    status, doc = served.request("POST", "/api/file", {"path": "scenarios/x.sh", "text": "rm -rf /"})
    assert status == 403 and "only .toml, .py" in doc["error"]


# ---------------------------------------------------------------- check


def test_check_marks_the_error_at_its_line_and_column_and_passes_once_fixed(served: Served) -> None:
    text = (served.root / "scenarios" / "lab14-bufferbloat.toml").read_text()
    bad = text.replace("burst 500000 limit 160000", "brust 500000 limit 160000")
    lab14 = "scenarios/lab14-bufferbloat.toml"
    status, doc = served.request("POST", "/api/check", {"path": lab14, "text": bad})
    assert status == 200 and not doc["ok"]
    (err,) = [d for d in doc["diagnostics"] if d["severity"] == "error"]
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "brust" in ln)
    assert (err["line"], err["col"]) == (line, bad.splitlines()[line - 1].index("brust") + 1)
    assert err["hint"] == "did you mean 'burst'?"
    status, doc = served.request("POST", "/api/check", {"path": lab14, "text": text})
    assert doc == {"ok": True, "summary": "OK (4 parts, 22 command lines, 5 nodes)", "diagnostics": []}
    # a TOML mistake: its line and column too
    status, doc = served.request("POST", "/api/check", {"path": "scenarios/quick.toml",
                                                        "text": QUICK.replace('["h1", "h2"]', '["h1", "h2"')})
    (err,) = doc["diagnostics"]
    assert (err["line"], err["col"]) == (6, 1) and "TOML" in err["message"]  # where TOML notices it


# ---------------------------------------------------------------- runs


def test_a_run_streams_its_parts_and_its_charts_come_from_the_tables(served: Served) -> None:
    status, doc = served.request("POST", "/api/run", {"path": "scenarios/quick.toml"})
    assert status == 200 and doc["started"]
    events = served.events(doc["job"]["id"])
    kinds = [e["event"] for e in events]
    assert [e["part"] for e in events if e["event"] == "part"] == ["first", "second"]
    assert [e["parts"] for e in events if e["event"] == "summary"][-1] == ["first", "second"]
    assert kinds[-1] == "end" and events[-1]["status"] == 0
    assert (served.root / "results" / "quick" / "tables" / "ping.parquet").is_file()
    status, final = served.request("GET", "/api/series?sel=results/quick&live=0")
    status, live = served.request("GET", "/api/series?sel=results/quick&live=1")
    assert final["charts"] == live["charts"]  # the tables, and the same rows built from the files
    charts = {c["key"]: c for c in final["charts"]}
    assert [s["label"] for s in charts["ping"]["series"]] == ["first · h1 → 10.0.0.2",
                                                              "second · h1 → 10.0.0.2"]
    assert len(charts["ping"]["series"][1]["y"]) == 10
    assert charts["throughput"]["series"] and charts["backlog"]["series"]
    status, cmp = served.request("POST", "/api/compare",
                                 {"paths": ["results/quick/first", "results/quick/second"]})
    assert status == 200 and [r[0] for r in cmp["rows"]] == ["first", "second"]
    assert (served.root / cmp["output"] / "compare.csv").is_file()


def test_one_run_at_a_time_per_scenario_and_stop_keeps_the_finished_parts(served: Served) -> None:
    status, doc = served.request("POST", "/api/run", {"path": "scenarios/slow.toml"})
    assert status == 200
    job = doc["job"]["id"]
    served.events(job, until="summary")  # the first part is written
    served.events(job, until="part", part="second")  # and the second has begun (under load it may lag)
    status, again = served.request("POST", "/api/run", {"path": "scenarios/slow.toml"})
    assert status == 409 and again["job"]["id"] == job
    status, stopped = served.request("POST", f"/api/jobs/{job}/stop")
    assert status == 200 and stopped["stopped"]
    events = served.events(job)
    assert events[-1]["state"] == "stopped" and events[-1]["status"] == 130
    summary = json.loads((served.root / "results" / "slow" / "summary.json").read_text())
    assert summary["interrupted"] == "SIGINT"
    assert [p["name"] for p in summary["parts"]] == ["first", "second"], events
    first, second = summary["parts"]
    assert first["name"] == "first" and "interrupted" not in first and first["results"]["ping"]
    assert second["interrupted"] == "SIGINT"
    assert (served.root / "results" / "slow" / "tables" / "ping.parquet").is_file()
    status, doc = served.request("POST", "/api/run", {"path": "scenarios/slow.toml"})
    assert status == 200 and doc["job"]["id"] != job  # over: a new run may start
    served.request("POST", f"/api/jobs/{doc['job']['id']}/stop")


def test_events_replay_to_a_page_that_comes_back(served: Served) -> None:
    status, doc = served.request("POST", "/api/run", {"path": "scenarios/quick.toml"})
    job = doc["job"]["id"]
    served.events(job)
    c = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    c.request("GET", f"/api/jobs/{job}/events", headers={"X-Bufferlab-Token": served.token})
    r = c.getresponse()
    body = r.read().decode()
    assert r.status == 200 and r.getheader("Content-Type") == "text/event-stream"
    sent = [json.loads(ln[len("data: "):]) for ln in body.splitlines() if ln.startswith("data: ")]
    assert sent[0]["event"] == "start" and sent[-1]["event"] == "end"
    last = sent[-1]["seq"]
    c.request("GET", f"/api/jobs/{job}/events", headers={"X-Bufferlab-Token": served.token,
                                                          "Last-Event-ID": str(last)})
    r = c.getresponse()
    r.read()
    assert r.status == 204  # all seen and over: the browser stops reconnecting
    c.close()


# ---------------------------------------------------------------- in Chromium

#: test_report_browser.py's Chromium (module-scoped; skips saying why without playwright or chromium)
sync_api = test_report_browser.sync_api
browser = test_report_browser.browser


def test_the_bench_in_chromium(served: Served, browser: Any) -> None:
    errors: list[str] = []
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"http://127.0.0.1:{served.port}/?token={served.token}")
        page.click("li[data-path='scenarios/quick.toml']")
        page.wait_for_function("() => window.bench.checks > 0")
        assert page.inner_text("#check-status").startswith("OK (2 parts")
        # an error typed: marked at its line (gutter) and on the word, listed with its hint
        text = page.input_value("#src")
        page.fill("#src", text.replace("tbf rate 10mbit", "tbf rat 10mbit"))
        page.wait_for_selector("#gutter div.error")
        line = 1 + next(i for i, ln in enumerate(text.splitlines()) if "tbf rate" in ln)
        assert page.inner_text("#gutter div.error") == str(line)
        assert page.eval_on_selector_all(".mark-error", "els => els.map(e => e.textContent)") == ["rat"]
        assert f"line {line}, column" in page.inner_text("#diags")
        # fixed: the marks go, then Run (which saves first) streams the parts and draws charts
        page.fill("#src", text)
        page.wait_for_function("() => !document.querySelector('#gutter div.error')")
        page.click("#run")
        page.wait_for_selector("#run-charts .chart[data-key='ping'] canvas", timeout=60_000)
        page.wait_for_selector(".state.done", timeout=60_000)
        keys = page.eval_on_selector_all("#run-charts .chart", "els => els.map(e => e.dataset.key)")
        assert {"ping", "throughput", "backlog"} <= set(keys)
        # a legend entry hides its series (uPlot's own toggle)
        page.click("#run-charts .chart[data-key='ping'] .u-legend .u-series:nth-child(2) .u-label")
        assert page.eval_on_selector("#run-charts .chart[data-key='ping'] .u-legend .u-series:nth-child(2)",
                                     "e => e.classList.contains('u-off')")
        # compare: both parts overlaid, with compare's table
        page.click("button[data-tab=compare]")
        page.check("input[value='results/quick/first']")
        page.check("input[value='results/quick/second']")
        page.click("#compare-go")
        page.wait_for_selector("#compare-charts .chart canvas")
        table = page.inner_text("#compare-table")
        assert "ping RTT mean ms" in table and "first" in table and "second" in table
        assert errors == []
    finally:
        page.close()


# ---------------------------------------------------------------- the wheel's static files


def test_the_page_and_uplot_ship_with_their_license_and_checksums() -> None:
    """maturin puts every file of python/bufferlab that git does not ignore into the wheel
    (tools/build_wheel.sh checks the built wheel); the vendored files are the ones recorded."""
    import hashlib
    import re
    import shutil
    import subprocess

    from bufferlab.serve.app import STATIC

    names = sorted(p.name for p in STATIC.iterdir())
    assert {"index.html", "bench.js", "bench.css", "uPlot.iife.min.js", "uPlot.min.css", "LICENSE.uPlot.txt",
            "VENDORED.md"} <= set(names)
    if shutil.which("git") and (Path(__file__).resolve().parent.parent / ".git").exists():
        ignored = subprocess.run(["git", "check-ignore", *[str(STATIC / n) for n in names]],
                                 capture_output=True, text=True)
        assert ignored.stdout == ""
    table = (STATIC / "VENDORED.md").read_text(encoding="utf-8")
    recorded = re.findall(r"^\| `([^`]+)` \|.*\| `([0-9a-f]{64})` \|$", table, re.M)
    assert [n for n, _ in recorded] == ["uPlot.iife.min.js", "uPlot.min.css"]
    for name, digest in recorded:
        assert hashlib.sha256((STATIC / name).read_bytes()).hexdigest() == digest, name
    assert "MIT License" in (STATIC / "LICENSE.uPlot.txt").read_text()
    assert "v1.6.32" in (STATIC / "uPlot.iife.min.js").read_text()[:80]
    page = (STATIC / "index.html").read_text()
    assert "http" not in page.replace("http-equiv", "")  # nothing from the network


def test_thinning_keeps_every_peak_and_the_time_order() -> None:
    import numpy as np

    from bufferlab.outputs.series import thin

    x = np.arange(100_000) / 1000.0
    y = np.sin(x) * 100
    y[31_337] = 1e6  # a spike one sample wide
    y[77_777] = -1e6
    y[50_000] = np.nan  # a gap is left out, never drawn as a value
    tx, ty = thin(x, y, 2000)
    assert len(tx) <= 2000 and np.all(np.diff(tx) > 0)
    assert ty.max() == 1e6 and ty.min() == -1e6 and np.isfinite(ty).all()
    assert tx[np.argmax(ty)] == x[31_337]
    small = np.arange(10.0)
    assert thin(small, small)[0] is small  # short series as they are


def test_progress_json_leaves_the_outputs_as_they_are(tmp_path: Path, capsys: Any) -> None:
    """Watching pauses and resumes the engine only: the same bytes with and without it."""
    from bufferlab.cli import main

    sc = tmp_path / "quick.toml"
    sc.write_text(QUICK, encoding="utf-8")
    assert main(["run", str(sc), "-o", str(tmp_path / "plain"), "-q", "--no-report"]) == 0
    capsys.readouterr()
    watched = ["run", str(sc), "-o", str(tmp_path / "watched"), "-q", "--no-report", "--progress-json"]
    assert main(watched) == 0
    events = [json.loads(ln) for ln in capsys.readouterr().err.splitlines() if ln.startswith('{"event"')]
    assert [e["part"] for e in events if e["event"] == "part"] == ["first", "second"]
    assert [e["parts"] for e in events if e["event"] == "summary"] == [["first"], ["first", "second"]]
    progress = [e for e in events if e["event"] == "progress"]
    assert all(0 <= e["done_s"] <= e["total_s"] + 1e-9 for e in progress)

    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
                if p.is_file() and p.name != "run.json" and p.suffix not in (".png", ".pdf")}

    plain, watched = files(tmp_path / "plain" / "quick"), files(tmp_path / "watched" / "quick")
    assert plain.keys() == watched.keys() and "summary.json" in plain
    differing = [k for k in plain if plain[k] != watched[k]]
    assert differing == []
