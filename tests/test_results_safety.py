"""Issue 16, "Must have" 3 and 4: nothing lost, results folders safe and fresh.

- SIGINT/SIGTERM end ``bufferlab run`` (no terminal) within 0.5 s, with the finished
  parts, the interrupted part marked and the report written; exit 130/143.
- A run-time error in part 2 keeps part 1's results, and the report shows the error.
- Every output kind: a symlink planted where the file or folder goes is replaced,
  never followed (nothing is written outside the results folder).
- A run writes a fresh folder: nothing of an earlier run survives (a removed part's
  plots do not show in report.html); the previous folder is ``<scenario>.prev`` meanwhile.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bufferlab import load_scenario
from bufferlab.outputs.report import after_run
from bufferlab.run.engine import Engine, EngineError
from bufferlab.run.scheduler import Runner

TOPOLOGY = """[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""

#: part 1 ends at once; part 2 runs for minutes of wall time (a 10 Gbit/s TCP test of 600 s)
LONG = f"""name = "sig"
seed = 1
{TOPOLOGY}
[[part]]
name = "first"
cmds = ["h3: iperf3 -s &", "h1: ping 10.0.0.3 -c 2"]

[[part]]
name = "long"
cmds = ["h1: iperf3 -c 10.0.0.3 -t 600 > long.txt"]
"""


def _run_cli(scenario: Path, out: Path, sig: int, ignore_sigint: bool = False) -> tuple[int, float, str]:
    """Start ``bufferlab run`` without a terminal (own session, no stdin), send ``sig`` once
    the long part has run for a while, and return (exit status, seconds from the signal
    to the exit, stderr)."""
    def pre() -> None:
        if ignore_sigint:  # as for a background job of a non-interactive shell
            signal.signal(signal.SIGINT, signal.SIG_IGN)

    p = subprocess.Popen(
        [sys.executable, "-m", "bufferlab.cli", "run", str(scenario), "-o", str(out), "-q"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True, preexec_fn=pre,
    )
    summary = out / "sig" / "summary.json"
    deadline = time.monotonic() + 60
    while not summary.is_file():  # written when part "first" ends
        assert p.poll() is None, p.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(1.0)  # one second of wall time into the long part
    assert p.poll() is None
    t0 = time.perf_counter()
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, time.perf_counter() - t0, err.decode()


@pytest.mark.parametrize(("sig", "status", "ignored"), [
    (signal.SIGINT, 130, False), (signal.SIGTERM, 143, False), (signal.SIGINT, 130, True),
])
def test_a_signal_stops_the_run_at_once_and_keeps_everything(tmp_path, sig, status, ignored):
    scenario = tmp_path / "sig.toml"
    scenario.write_text(LONG)
    out = tmp_path / "out"
    rc, latency, err = _run_cli(scenario, out, sig, ignore_sigint=ignored)
    name = signal.Signals(sig).name
    assert rc == status, err
    # at once for a person; a 2-core machine busy with other work takes up to ~0.9 s
    assert latency < 2.0, f"{latency:.3f} s from {name} to the exit"
    assert f"interrupted by {name}" in err
    root = out / "sig"
    s = json.loads((root / "summary.json").read_text())
    assert s["interrupted"] == name
    first, long = s["parts"]
    assert first["name"] == "first" and "interrupted" not in first
    assert "2 received" in (root / "first" / "h1" / "terminal.log").read_text()
    assert first["results"]
    assert long["name"] == "long" and long["interrupted"] == name
    assert long["end_ns"] > long["start_ns"] + 1_000_000_000  # it ran for a while, and that is kept
    # the client was Ctrl-C'd as in a terminal: iperf3's partial summary, then its interrupt line
    text = (root / "long" / "h1" / "long.txt").read_text()
    assert "sender" in text and "receiver" in text
    assert text.rstrip().endswith("iperf3: interrupt - the client has terminated")
    assert (root / "tables" / "intervals.parquet").is_file()
    html = (root / "report.html").read_text()
    assert f"interrupted by {name} during part long" in html
    assert json.loads((root / "run.json").read_text())["wall_s"] > 0


def test_a_run_time_error_in_part_2_keeps_part_1(tmp_path):
    """Part 2 cannot finish within stop_at: exit 2, part 1 intact, the report shows why."""
    scenario = tmp_path / "err.toml"
    scenario.write_text(f"""name = "err"
seed = 1
[sim]
stop_at = "20s"
{TOPOLOGY}
[[part]]
name = "one"
cmds = ["h1: ping 10.0.0.3 -c 3"]

[[part]]
name = "two"
cmds = ["h1: ping 10.0.0.3 -c 100"]
""")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "bufferlab.cli", "run", str(scenario), "-o", str(out), "-q"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "did not finish within stop_at" in p.stderr
    root = out / "err"
    s = json.loads((root / "summary.json").read_text())
    one, two = s["parts"]
    assert one["name"] == "one" and one["results"] and "error" not in one
    assert "3 received" in (root / "one" / "h1" / "terminal.log").read_text()
    assert "did not finish within stop_at" in two["error"] and "did not finish" in s["error"]
    assert "packets transmitted" in (root / "two" / "h1" / "terminal.log").read_text()  # ping's statistics
    html = (root / "report.html").read_text()
    assert "did not finish within stop_at" in html and "failed" in html


def test_an_engine_error_in_part_2_keeps_part_1(tmp_path, monkeypatch):
    """Any run-time error (here the engine failing mid-part) is recorded, then raised."""
    scenario = tmp_path / "t.toml"
    scenario.write_text(f"""name = "boom"
seed = 1
{TOPOLOGY}
[[part]]
name = "one"
cmds = ["h1: ping 10.0.0.3 -c 2"]

[[part]]
name = "two"
cmds = ["h1: ping 10.0.0.3 -c 20"]
""")
    real = Engine.run

    def failing(self, until_ns):
        if self.now_ns > 15_000_000_000:
            raise EngineError("engine: simulated failure")
        return real(self, until_ns)

    monkeypatch.setattr(Engine, "run", failing)
    r = Runner(load_scenario(scenario), tmp_path / "out")
    with pytest.raises(EngineError, match="simulated failure"):
        r.run()
    after_run(r.root)
    s = json.loads((r.root / "summary.json").read_text())
    assert [p["name"] for p in s["parts"]] == ["one", "two"]
    assert s["parts"][0]["results"] and "error" not in s["parts"][0]
    # the engine's message, located at the part and its running lines (issue 16: a position)
    assert s["parts"][1]["error"] == s["error"]
    assert s["error"].startswith(f"{scenario}:12: error: part 'two': engine: simulated failure")
    assert "simulated failure" in (r.root / "report.html").read_text()


# ---------------------------------------------------------------- symlinks

OBSERVED = f"""name = "obs"
seed = 1
{TOPOLOGY}
[capture]
interfaces = ["s1-eth2"]

[trace]
queues = ["s1-eth2"]

[[part]]
name = "p1"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root tbf rate 50mbit burst 20k limit 200k",
  "h3: iperf3 -s &",
  "admin: plot_q.sh s1-eth2 &",
  "h1: tcpdump -i h1-eth0 -w cap.pcap &",
  "h1: iperf3 -c 10.0.0.3 -t 2 -J > out.json",
  "h1: echo more >> app.txt",
  "h2: ping 10.0.0.3 -c 2",
]
"""

#: every kind of output, relative to results/<scenario>/: (path, what it is)
OUTPUTS = [
    ("summary.json", "file"), ("run.json", "file"), ("report.html", "file"),
    ("tables", "dir"), ("capture_s1-eth2.pcap", "file"),
    ("p1", "dir"), ("p1/h1", "dir"), ("p1/h1/terminal.log", "file"),
    ("p1/h1/out.json", "file"), ("p1/h1/app.txt", "file"), ("p1/h1/cap.pcap", "file"),
    ("p1/admin/q_s1-eth2.dat", "file"), ("p1/admin/q_s1-eth2.png", "file"), ("p1/queue_s1-eth2.csv", "file"),
    ("p1/queue_trace_s1-eth2.parquet", "file"), ("p1/queue_trace_s1-eth2.png", "file"),
    ("p1/queue_trace_s1-eth2.pdf", "file"), ("p1/.queue_trace_s1-eth2.bin", "file"),
]


def _outside(tmp_path: Path) -> Path:
    o = tmp_path / "outside"
    o.mkdir()
    (o / "target").write_text("precious\n")
    (o / "dir").mkdir()
    (o / "dir" / "keep").write_text("precious\n")
    return o


def _untouched(o: Path) -> None:
    assert sorted(p.relative_to(o).as_posix() for p in o.rglob("*")) == ["dir", "dir/keep", "target"]
    assert (o / "target").read_text() == "precious\n" and (o / "dir" / "keep").read_text() == "precious\n"


def _plant(root: Path, rel: str, kind: str, o: Path) -> None:
    link = root / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(o / ("dir" if kind == "dir" else "target"), target_is_directory=kind == "dir")


#: one run per planted folder link (what lies below it cannot be planted as well), one for
#: every file link at once
PLANTINGS = [[(rel, kind)] for rel, kind in OUTPUTS if kind == "dir"] + [[o for o in OUTPUTS if o[1] == "file"]]


@pytest.mark.parametrize("planted", PLANTINGS, ids=[p[0][0] if len(p) == 1 else "every-file" for p in PLANTINGS])
def test_a_symlink_where_an_output_goes_is_replaced_not_followed(tmp_path, monkeypatch, planted):
    """The links are planted in the fresh folder as the run starts (as another process
    could): the run replaces each by the real output; their targets are never touched."""
    scenario = tmp_path / "obs.toml"
    scenario.write_text(OBSERVED)
    o = _outside(tmp_path)
    fresh = Runner._fresh_root

    def fresh_then_plant(self):
        fresh(self)
        for rel, kind in planted:
            _plant(self.root, rel, kind, o)

    monkeypatch.setattr(Runner, "_fresh_root", fresh_then_plant)
    r = Runner(load_scenario(scenario), tmp_path / "out", echo=lambda s: None)
    r.check()
    r.run()
    after_run(r.root)
    _untouched(o)
    for rel, kind in planted:
        out = r.root / rel
        assert not out.is_symlink(), rel
        if rel.endswith(".bin"):  # the queue trace's temporary file: converted, then removed
            assert not out.exists()
        else:
            assert out.is_dir() if kind == "dir" else out.stat().st_size > 0, rel
    assert not [p for p in r.root.rglob("*") if p.is_symlink()]


def test_report_and_tables_replace_planted_links(tmp_path):
    """``bufferlab report`` rewrites an existing folder: links at its outputs are replaced."""
    scenario = tmp_path / "obs.toml"
    scenario.write_text(OBSERVED)
    r = Runner(load_scenario(scenario), tmp_path / "out")
    r.run()
    after_run(r.root)
    o = _outside(tmp_path)
    for rel in ("report.html", "tables/intervals.parquet", "tables/ping.csv", "tables/queue_events.parquet"):
        (r.root / rel).unlink()
        _plant(r.root, rel, "file", o)
    after_run(r.root)
    _untouched(o)
    for rel in ("report.html", "tables/intervals.parquet", "tables/ping.csv", "tables/queue_events.parquet"):
        assert not (r.root / rel).is_symlink() and (r.root / rel).stat().st_size > 0


def test_the_results_folder_itself_a_symlink(tmp_path):
    """results/<scenario> pointing elsewhere: the link is moved aside, then removed."""
    scenario = tmp_path / "obs.toml"
    scenario.write_text(OBSERVED)
    o = _outside(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "obs").symlink_to(o / "dir", target_is_directory=True)
    r = Runner(load_scenario(scenario), tmp_path / "out")
    r.run()
    _untouched(o)
    assert r.root.is_dir() and not r.root.is_symlink() and (r.root / "summary.json").is_file()
    assert not os.path.lexists(tmp_path / "out" / "obs.prev")


# ---------------------------------------------------------------- fresh folders

TWO_PARTS = f"""name = "fresh"
seed = 1
{TOPOLOGY}
[[part]]
name = "a"
cmds = ["h1: ping 10.0.0.3 -c 2"]

[[part]]
name = "b"
cmds = ["admin: plot_q.sh s1-eth2 &", "h1: ping 10.0.0.3 -c 2"]
"""


def test_a_rerun_leaves_nothing_stale(tmp_path, monkeypatch):
    scenario = tmp_path / "fresh.toml"
    scenario.write_text(TWO_PARTS)
    out = tmp_path / "out"
    r = Runner(load_scenario(scenario), out)
    r.run()
    after_run(r.root)
    root = r.root
    assert (root / "b" / "admin" / "q_s1-eth2.png").is_file()
    assert "b/admin/q_s1-eth2.png" in (root / "report.html").read_text()
    (root / "stray.txt").write_text("from an earlier run\n")
    # part b removed from the scenario
    scenario.write_text(TWO_PARTS.split('[[part]]\nname = "b"')[0])
    fresh = Runner._fresh_root
    seen: dict[str, bool] = {}

    def fresh_and_look(self):
        fresh(self)
        prev = self.root.with_name("fresh.prev")
        seen["prev"] = (prev / "b" / "admin" / "q_s1-eth2.png").is_file()  # kept until the run completes
        seen["empty"] = [p.name for p in self.root.iterdir()] == [".bufferlab-results"]  # only its marker

    monkeypatch.setattr(Runner, "_fresh_root", fresh_and_look)
    r2 = Runner(load_scenario(scenario), out)
    r2.run()
    after_run(r2.root)
    assert seen == {"prev": True, "empty": True}
    kept = sorted(p.name for p in root.iterdir())
    assert kept == [".bufferlab-results", "a", "report.html", "run.json", "summary.json", "tables"]
    assert "q_s1-eth2" not in (root / "report.html").read_text()
    assert [p["name"] for p in json.loads((root / "summary.json").read_text())["parts"]] == ["a"]
    assert not (out / "fresh.prev").exists()
    assert sorted(p.name for p in out.iterdir()) == ["fresh"]


def test_an_interrupted_run_keeps_the_previous_one_as_prev(tmp_path, monkeypatch):
    """Until a run completes, the previous complete one stays as <scenario>.prev."""
    scenario = tmp_path / "fresh.toml"
    scenario.write_text(TWO_PARTS)
    out = tmp_path / "out"
    Runner(load_scenario(scenario), out).run()
    real = Engine.run
    pressed = []

    def ctrl_c(self, until_ns):
        if self.now_ns > 6_500_000_000 and not pressed:  # in part b (part a ends at 1 s, then the gap)
            pressed.append(1)
            raise KeyboardInterrupt
        return real(self, until_ns)

    monkeypatch.setattr(Engine, "run", ctrl_c)
    r = Runner(load_scenario(scenario), out)
    with pytest.raises(KeyboardInterrupt):
        r.run()
    s = json.loads((out / "fresh" / "summary.json").read_text())
    assert s["interrupted"] == "SIGINT" and [p.get("interrupted") for p in s["parts"]] == [None, "SIGINT"]
    prev = json.loads((out / "fresh.prev" / "summary.json").read_text())
    assert "interrupted" not in prev and len(prev["parts"]) == 2


def test_a_signal_before_the_first_part_says_nothing_ran_and_touches_nothing(tmp_path, monkeypatch, capsys):
    """tools/fuzz_signals.py (campaign 5): SIGINT while a run made its folder printed "the
    finished parts and the interrupted one ... are in ROOT" when nothing had run, and wrote the
    previous run's tables and report again."""
    from bufferlab.cli import main
    from bufferlab.run.scheduler import Interrupted

    scenario = tmp_path / "sig.toml"
    scenario.write_text(f'name = "sig"\nseed = 1\n{TOPOLOGY}\n[[part]]\nname = "p"\n'
                        'cmds = ["h1: ping 10.0.0.3 -c 1"]\n')
    out = tmp_path / "out"
    assert main(["run", "-q", str(scenario), "-o", str(out)]) == 0
    before = {p: p.stat().st_mtime_ns for p in (out / "sig").rglob("*")}

    def interrupted(self):  # noqa: ANN001 - the signal as it lands in open_run
        raise Interrupted(signal.SIGINT)

    monkeypatch.setattr(Runner, "open_run", interrupted)
    assert main(["run", "-q", str(scenario), "-o", str(out)]) == 130
    err = capsys.readouterr().err
    assert (f"interrupted by SIGINT before the first part began: nothing was run; the last complete run is in "
            f"{out / 'sig'}") in err and "finished parts" not in err
    assert {p: p.stat().st_mtime_ns for p in (out / "sig").rglob("*")} == before


def test_a_link_or_folder_where_a_plot_was_is_left_out_of_the_report(tmp_path):
    """tools/fuzz_inputs.py (campaign 6, results target): a plot replaced by a dangling link
    made `report` a FileNotFoundError traceback. A planted link, folder or file of another kind
    named *.png is not a plot the run drew: the report leaves it out, the other plots stay."""
    scenario = tmp_path / "obs.toml"
    scenario.write_text(OBSERVED)
    r = Runner(load_scenario(scenario), tmp_path / "out")
    r.run()
    after_run(r.root)
    plots = sorted(p for p in r.root.rglob("*.png") if "tables" not in p.relative_to(r.root).parts)
    assert len(plots) >= 2, plots
    dangling, folder = plots[0], plots[1]
    dangling.unlink()
    dangling.symlink_to(tmp_path / "nowhere")
    folder.unlink()
    folder.mkdir()
    after_run(r.root)
    html = (r.root / "report.html").read_text()
    shown = html.count("data:image/png;base64,")
    assert shown >= len(plots) - 2
    for gone in (dangling, folder):
        assert f"<figcaption>{gone.relative_to(r.root).as_posix()}" not in html
