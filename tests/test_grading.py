"""Expectations and grading (docs/teaching.md; scenario/expect.py, outputs/grading.py, grade.py).

The small scenario below has values computed from first principles: 5 Mbit/s of UDP through
a 10 Mbit/s tbf arrives whole; 15 Mbit/s offered leaves as 10 Mbit/s of frames = 9.72 Mbit/s
of payload (1448 of 1490 bytes), the rest tail-dropped; ping's RTT is netem's 10 ms, plus,
behind a full 150 KB buffer drained at 10 Mbit/s, 122.9 ms of queueing.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.outputs import grading
from bufferlab.scenario.expect import FUNCTIONS, VISIBILITIES, Expectation

ROOT = Path(__file__).resolve().parent.parent

SCENARIO = """\
name = "grading"
seed = 1

[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1"]
links = [["h1", "s1"], ["s1", "h3"], ["h2", "s1"]]

[[part]]
name = "under"
interrupt = ["admin", "h3"]
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 10mbit burst 15k limit 150k",
  "h3: iperf3 -s",
  "admin: plot_q.sh s1-eth2 &",
  "h1: iperf3 -c 10.0.0.3 -u -b 5M -t 4",
  "h2: ping 10.0.0.3 -c 10 -i 0.2",
]

[[part]]
name = "over"
cmds = [
  "h3: iperf3 -s",
  "admin: plot_q.sh s1-eth2 &",
  "h1: iperf3 -c 10.0.0.3 -u -b 15M -t 4",
  "h2: sleep 2 && ping 10.0.0.3 -c 5 -i 0.2",
]
"""

EXPECT = """
[[expect]]
name = "under the rate: all of it arrives"
part = "under"
expr = 'goodput("h1")'
min = 4.9
max = 5.1
points = 2

[[expect]]
name = "RTT is netem's delay"
part = "under"
expr = 'ping_min("h2") >= 10 and ping_min("h2") < 10.5'
points = 1

[[expect]]
name = "over the rate: the tbf's rate in payload"
part = "over"
expr = 'goodput("h1")'
min = 9.6
max = 9.8
points = 3

[[expect]]
name = "over the rate: queueing delay of a full buffer"
part = "over"
expr = 'ping_avg("h2") - 10'
min = 115
max = 130
points = 2

[[expect]]
name = "nothing dropped under the rate, drops over it"
expr = 'drops("s1-eth2") >= 0'
points = 1

[[expect]]
name = "wrong on purpose: no drops over the rate"
part = "over"
expr = 'drops("s1-eth2") == 0'
points = 4
hint = "the tbf drops what its 150 KB cannot hold"
"""


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err


@pytest.fixture(scope="module")
def graded_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path, str]:
    tmp = tmp_path_factory.mktemp("run")
    path = tmp / "grading.toml"
    path.write_text(SCENARIO + EXPECT, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["run", "-q", "--no-report", "-o", str(tmp / "out"), str(path)])
    return rc, tmp / "out" / "grading", out.getvalue()


def test_expectations_pass_and_fail_as_computed_by_hand(graded_run: tuple[int, Path, str]) -> None:
    rc, root, _ = graded_run
    assert rc == 4  # one expectation fails; nothing else went wrong
    doc = json.loads((root / "expectations.json").read_text())
    by = {e["name"]: e for e in doc["expectations"]}
    assert [e["passed"] for e in doc["expectations"]] == [True, True, True, True, True, False]
    assert 4.9 <= by["under the rate: all of it arrives"]["values"]["under"] <= 5.1
    assert 9.6 <= by["over the rate: the tbf's rate in payload"]["values"]["over"] <= 9.8
    assert by["wrong on purpose: no drops over the rate"]["values"]["over"] == 0  # the comparison: false
    # no part named: every part, one value each
    assert set(by["nothing dropped under the rate, drops over it"]["values"]) == {"under", "over"}
    # points summed over what passed: 2 + 1 + 3 + 2 + 1, of 13
    assert (doc["score"], doc["max_score"], doc["passed"], doc["failed"]) == (9, 13, 5, 1)
    failed = by["wrong on purpose: no drops over the rate"]
    assert failed["score"] == 0
    assert failed["output"].endswith("hint: the tbf drops what its 150 KB cannot hold")
    assert re.search(r'drops\("s1-eth2"\) = [1-9]\d* packets', failed["output"])
    # the values are the run's own numbers
    summary = json.loads((root / "summary.json").read_text())
    over = next(p for p in summary["parts"] if p["name"] == "over")["results"]
    rate = by["over the rate: the tbf's rate in payload"]["values"]["over"]
    assert rate == over["iperf3"][0]["goodput_mbps"]
    assert summary["expectations"] == doc


def test_run_prints_the_expectations_on_stdout(graded_run: tuple[int, Path, str]) -> None:
    # -q: nothing printed, even the grade (the files have it)
    assert graded_run[2] == ""


def _check_results_json(doc: dict) -> None:
    """Gradescope's autograder results.json: top-level score and output, tests of name,
    score, max_score, status, output, visibility, and nothing else."""
    assert set(doc) == {"score", "output", "tests"}
    assert isinstance(doc["score"], int | float) and isinstance(doc["output"], str)
    for t in doc["tests"]:
        assert set(t) == {"name", "score", "max_score", "status", "output", "visibility"}
        assert isinstance(t["name"], str) and isinstance(t["output"], str)
        assert isinstance(t["score"], int | float) and isinstance(t["max_score"], int | float)
        assert 0 <= t["score"] <= t["max_score"]
        assert t["status"] in ("passed", "failed")
        assert t["visibility"] in VISIBILITIES


def test_results_json_follows_gradescopes_format(graded_run: tuple[int, Path, str]) -> None:
    doc = json.loads((graded_run[1] / "results.json").read_text())
    _check_results_json(doc)
    assert doc["score"] == sum(t["score"] for t in doc["tests"]) == 9
    assert [t["status"] for t in doc["tests"]].count("failed") == 1
    assert doc["output"].startswith("grading: 5 of 6 expectations met, 9/13 points")


def test_a_failed_command_keeps_exit_status_1(write_scenario) -> None:
    path = write_scenario(
        'name = "x"\n[topology]\nhosts = ["h1", "h2"]\nswitches = ["s1"]\n'
        'links = [["h1", "s1"], ["s1", "h2"]]\n'
        '[[part]]\nname = "p"\ncmds = ["h1: iperf3 -c 10.0.0.2 -t 1", "h2: ping 10.0.0.1 -c 2"]\n'
        "[[expect]]\nname = \"fails\"\nexpr = 'ping_avg(\"h2\")'\nmax = 0\n")
    assert main(["run", "-q", "--no-report", "-o", str(path.parent / "out"), str(path)]) == 1
    doc = json.loads((path.parent / "out" / "t" / "expectations.json").read_text())
    assert doc["failed"] == 1


# ---------------------------------------------------------------- functions, by hand

def _fake_run(tmp_path: Path) -> tuple[Path, dict]:
    """A results folder written by hand: two iperf3 clients, two pings, a queue, flows."""
    part = {"name": "p", "start_ns": 0, "end_ns": 1, "fct": ["p/h1/fct_7.csv"], "results": {
        "iperf3": [{"node": "h1", "goodput_mbps": 6.0, "retransmits": 3, "lost": None, "error": None},
                   {"node": "h2", "goodput_mbps": 2.0, "retransmits": 1, "lost": None, "error": None}],
        "ping": [{"node": "h3", "transmitted": 4, "received": 4, "min_ms": 10.0, "avg_ms": 20.0,
                  "max_ms": 40.0},
                 {"node": "h3", "transmitted": 2, "received": 1, "min_ms": 5.0, "avg_ms": 50.0,
                  "max_ms": 50.0}],
        "qdiscs": [{"interface": "s1-eth2", "dropped": 7, "peak_backlog_bytes": None,
                    "peak_backlog_packets": None}]}}
    summary = {"parts": [part], "interfaces": {"s1-eth1": {}, "s1-eth2": {}},
               "topology": {"nodes": [{"name": n, "kind": "host"} for n in ("h1", "h2", "h3")], "links": []}}
    (tmp_path / "p" / "h3").mkdir(parents=True)
    replies = "".join(f"64 bytes from 10.0.0.1: icmp_seq={i} ttl=64 time={i}.0 ms\n" for i in range(1, 101))
    head = "PING 10.0.0.1 (10.0.0.1) 56(84) bytes of data.\n"
    (tmp_path / "p" / "h3" / "terminal.log").write_text(head + replies)
    (tmp_path / "p" / "h1").mkdir(parents=True)
    rows = "".join(f"{i},0.0,1000,{i / 1000},0,1\n" for i in range(1, 11))
    columns = "flow,start_s,size_bytes,fct_s,retransmits,completed\n"
    (tmp_path / "p" / "h1" / "fct_7.csv").write_text(columns + rows)
    return tmp_path, summary


def _x(expr: str, lo: float | None = None, hi: float | None = None) -> Expectation:
    return Expectation("e", expr, [], lo, hi, 1, None, "visible", "r.toml:1:1")


@pytest.mark.parametrize(("expr", "value"), [
    ('jain(goodput("h1"), goodput("h2"))', 0.8),  # (6 + 2)² / (2 · (36 + 4)) = 64 / 80
    ('goodput("h1") + goodput("h2")', 8.0),
    ('retransmits("h1") * 2', 6.0),
    ('ping_avg("h3")', 26.0),  # (4 · 20 + 1 · 50) / 5 replies
    ('ping_min("h3")', 5.0),
    ('ping_max("h3")', 50.0),
    ('ping_loss("h3")', 16.67),  # 1 of 6 unanswered
    ('ping_p99("h3")', 99.01),  # 1..100 ms: numpy's linear quantile at 0.99
    ('ping_p50("h3")', 50.5),
    ('drops("s1-eth2")', 7.0),
    ('drops("s1-eth1")', 0.0),  # an interface without drops
    ('fct_avg("h1")', 5.5),  # 1..10 ms
    ('fct_p99("h1")', 9.91),
    ('max(1, 2 * 3, 4) - min(2, abs(-1))', 5.0),
])
def test_each_function_by_hand(tmp_path: Path, expr: str, value: float) -> None:
    root, summary = _fake_run(tmp_path)
    (o,) = grading.evaluate(root, summary, [_x(expr, -1e9, 1e9)])
    assert o.passed and o.values == {"p": pytest.approx(value)}


@pytest.mark.parametrize(("expr", "why"), [
    ('peak_backlog("s1-eth2")', "was not traced in part p"),
    ('goodput("h3")', "no iperf3 client on h3 ended in part p"),
    ('ping_avg("h1")', "no ping on h1 ended in part p"),
    ('goodput("h9")', "the scenario has no node 'h9'"),
    ('jain(0, 0)', "every argument is 0"),
    ('1 / (goodput("h1") - 6)', "division by zero"),
])
def test_what_the_run_lacks_fails_the_expectation_with_a_reason(tmp_path: Path, expr: str, why: str) -> None:
    root, summary = _fake_run(tmp_path)
    (o,) = grading.evaluate(root, summary, [_x(expr, 0)])
    assert not o.passed and o.score == 0 and why in o.output


def test_a_missing_part_fails(tmp_path: Path) -> None:
    root, summary = _fake_run(tmp_path)
    x = _x('goodput("h1")', 0)
    x.parts = ["nope"]
    (o,) = grading.evaluate(root, summary, [x])
    assert not o.passed and "no part named 'nope'" in o.output


def test_every_function_is_documented() -> None:
    page = (ROOT / "docs" / "teaching.md").read_text()
    for name in FUNCTIONS:
        assert f"`{name}(" in page, name


# ---------------------------------------------------------------- positioned errors

BAD = [
    # (the expr line as written, message, the column's character)
    ("expr = 'goodput(\"h1\") +'", "unexpected the end", None),
    ("expr = 'goodptu(\"h1\")'", "unknown function 'goodptu'", "g"),
    ("expr = 'goodput(\"h7\")'", "the scenario has no node 'h7'", '"'),
    ("expr = 'drops(\"s1-eth9\")'", "the scenario has no interface 's1-eth9'", '"'),
    ("expr = 'drops(3)'", "takes a quoted interface name", "3"),
    ("expr = 'jain(\"h1\")'", "takes numbers", '"'),
]


@pytest.mark.parametrize(("line", "message", "char"), BAD)
def test_a_bad_expression_is_a_positioned_error(write_scenario, capsys, line: str, message: str,
                                                char: str | None) -> None:
    text = SCENARIO + f'\n[[expect]]\nname = "x"\n{line}\nmin = 1\n'
    path = write_scenario(text)
    assert main(["check", str(path)]) == 2
    err = _err(capsys)
    assert "Traceback" not in err and message in err, err
    m = re.match(rf"{re.escape(str(path))}:(\d+):(\d+): error: ", err)
    assert m, err
    row = text.splitlines()[int(m[1]) - 1]
    assert row == line
    if char is not None:
        assert row[int(m[2]) - 1] == char


def test_an_unknown_function_suggests_the_right_one(write_scenario, capsys) -> None:
    path = write_scenario(SCENARIO + "\n[[expect]]\nname = \"x\"\nexpr = 'ping_av(\"h2\")'\nmax = 1\n")
    assert main(["check", str(path)]) == 2
    assert "did you mean 'ping_avg'?" in _err(capsys)


def test_an_unknown_part_is_a_positioned_error(write_scenario, capsys) -> None:
    text = SCENARIO + "\n[[expect]]\nname = \"x\"\npart = \"ovr\"\nexpr = 'goodput(\"h1\")'\nmin = 1\n"
    path = write_scenario(text)
    assert main(["check", str(path)]) == 2
    err = _err(capsys)
    line = text.splitlines().index('part = "ovr"') + 1
    assert f"{path}:{line}:1: error: [[expect]] 1: no part named 'ovr'" in err
    assert "did you mean 'over'?" in err


@pytest.mark.parametrize(("entry", "message"), [
    ("expr = 'goodput(\"h1\")'\n", "is a value, not a test"),
    ("expr = 'goodput(\"h1\") > 1'\nmin = 1\n", "a comparison with min/max"),
    ("expr = 'goodput(\"h1\")'\nmin = 2\nmax = 1\n", "is above max"),
    ("expr = 'goodput(\"h1\")'\nmin = 1\npoints = -1\n", "points must be a non-negative number"),
    ("expr = 'goodput(\"h1\")'\nmin = 1\nvisibility = \"secret\"\n", "visibility 'secret'"),
    ("expr = 'goodput(\"h1\")'\nminn = 1\n", "did you mean 'min'?"),
])
def test_a_malformed_entry_is_a_positioned_error(write_scenario, capsys, entry: str, message: str) -> None:
    path = write_scenario(SCENARIO + f'\n[[expect]]\nname = "x"\n{entry}')
    assert main(["check", str(path)]) == 2
    err = _err(capsys)
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: error: ", err) and message in err, err


def test_check_counts_the_expectations(write_scenario, capsys) -> None:
    path = write_scenario(SCENARIO + EXPECT)
    assert main(["check", str(path)]) == 0
    assert "6 expectations)" in capsys.readouterr().out


# ---------------------------------------------------------------- bufferlab grade

RUBRIC = """\
name = "grading lab"
seed = 3

[require]
parts = ["under", "over"]
forbid = ["sim"]

[[expect]]
name = "goodput under the rate"
part = "under"
expr = 'goodput("h1")'
min = 4.9
points = 2

[[expect]]
name = "bufferbloat over the rate"
part = "over"
expr = 'ping_avg("h2") > 100'
points = 3
visibility = "after_due_date"
"""


def test_grade_a_scenario_and_its_determinism(tmp_path: Path, capsys) -> None:
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO, encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    docs = []
    for run in ("a", "b"):
        rc = main(["grade", str(sub), "--rubric", str(rubric), "-o", str(tmp_path / run), "-q",
                   "--no-report"])
        assert rc == 0
        docs.append((tmp_path / run / "student" / "results.json").read_bytes())
    out = capsys.readouterr().out
    assert "expectations: 2 of 2 passed, 5/5 points" in out
    assert docs[0] == docs[1]  # same seed, same bytes
    doc = json.loads(docs[0])
    _check_results_json(doc)
    assert doc["score"] == 5
    assert [t["name"] for t in doc["tests"]] == ["required: part under", "required: part over",
                                                 "required: settings left as given", "goodput under the rate",
                                                 "bufferbloat over the rate"]
    assert doc["tests"][-1]["visibility"] == "after_due_date"
    assert json.loads((tmp_path / "a" / "student" / "summary.json").read_text())["seed"] == 3  # the rubric's


def test_grade_breaking_a_requirement_scores_zero(tmp_path: Path, capsys) -> None:
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO.replace('name = "over"', 'name = "overload"')
                   .replace("seed = 1\n", 'seed = 1\n[sim]\npart_gap = "1s"\n'), encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    out_json = tmp_path / "autograder" / "results" / "results.json"
    rc = main(["grade", str(sub), "--rubric", str(rubric), "-o", str(tmp_path / "o"), "-q", "--no-report",
               "--results-json", str(out_json)])
    assert rc == 4
    doc = json.loads(out_json.read_text())
    _check_results_json(doc)
    assert doc["score"] == 0
    tests = {t["name"]: t for t in doc["tests"]}
    assert tests["required: part over"]["status"] == "failed"
    assert "its parts: under, overload" in tests["required: part over"]["output"]
    assert "sets sim" in tests["required: settings left as given"]["output"]
    assert "no part named 'over'" in tests["bufferbloat over the rate"]["output"]
    assert "A requirement is not met" in doc["output"]
    capsys.readouterr()


def test_grade_a_submission_that_does_not_load(tmp_path: Path, capsys) -> None:
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO.replace("tbf rate 10mbit", "tbf rat 10mbit"), encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    assert main(["grade", str(sub), "--rubric", str(rubric), "-o", str(tmp_path / "o"), "-q"]) == 4
    doc = json.loads((tmp_path / "o" / "student" / "results.json").read_text())
    _check_results_json(doc)
    assert doc["score"] == 0 and all(t["status"] == "failed" for t in doc["tests"][-2:])
    assert "Error: student.toml:" in doc["output"]  # no absolute path
    assert "not evaluated: the submission did not run" in doc["tests"][-1]["output"]
    assert str(tmp_path) not in json.dumps(doc)
    capsys.readouterr()


def test_a_bad_rubric_is_a_positioned_error_and_nothing_runs(tmp_path: Path, capsys) -> None:
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO, encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC.replace("ping_avg(", "ping_avgg("), encoding="utf-8")
    assert main(["grade", str(sub), "--rubric", str(rubric), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    line = RUBRIC.splitlines().index("expr = 'ping_avg(\"h2\") > 100'") + 1
    assert f"{rubric}:{line}:9: error: expectation 'bufferbloat over the rate'" in err
    assert "did you mean 'ping_avg'?" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_check_a_rubric_against_a_scenario(tmp_path: Path, capsys) -> None:
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO, encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC.replace('goodput("h1")', 'goodput("h4")'), encoding="utf-8")
    assert main(["check", str(sub), "--rubric", str(rubric)]) == 2
    err = capsys.readouterr().err
    line = RUBRIC.splitlines().index("expr = 'goodput(\"h1\")'") + 1
    assert f"{rubric}:{line}:17: error: " in err and "the scenario has no node 'h4'" in err


MININET_SCRIPT = """\
from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo
from mininet.link import TCLink

net = Mininet(topo=SingleSwitchTopo(2), link=TCLink)
net.start()
h1, h2 = net.get('h1', 'h2')
h1.cmd('tc qdisc add dev h1-eth0 root netem delay 5ms')
print(h1.cmd('ping -c 5 -i 0.2 10.0.0.2'))
net.stop()
"""

MININET_RUBRIC = """\
name = "ping lab"

[require]
parts = ["mininet"]
topology = "handout.toml"

[[expect]]
name = "RTT is the 5 ms netem delay"
expr = 'ping_p50("h1")'      # the first reply also waited for ARP: 10 ms
min = 5
max = 5.5
points = 2

[[expect]]
name = "wrong on purpose"
expr = 'ping_loss("h1") > 0'
points = 1
"""


#: the handout's topology, as the rubric requires it of the script
HANDOUT = """\
name = "h"
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["h2", "s1"]]
[[part]]
cmds = ["h1: ping 10.0.0.2 -c 1"]
"""


def test_grade_a_mininet_script(tmp_path: Path, capsys) -> None:
    (tmp_path / "handout.toml").write_text(HANDOUT, encoding="utf-8")
    script = tmp_path / "lab.py"
    script.write_text(MININET_SCRIPT, encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(MININET_RUBRIC, encoding="utf-8")
    rc = main(["grade", str(script), "--rubric", str(rubric), "-o", str(tmp_path / "o"), "--no-report"])
    assert rc == 4
    root = tmp_path / "o" / "lab"
    doc = json.loads((root / "results.json").read_text())
    _check_results_json(doc)
    assert doc["score"] == 2
    tests = {t["name"]: t for t in doc["tests"]}
    assert tests["RTT is the 5 ms netem delay"]["status"] == "passed"
    assert "part mininet: " in tests["RTT is the 5 ms netem delay"]["output"]
    assert tests["wrong on purpose"]["status"] == "failed"
    assert tests["required: the topology is handout.toml's"]["status"] == "passed"
    assert json.loads((root / "summary.json").read_text())["expectations"]["score"] == 2
    capsys.readouterr()


def test_the_shipped_rubric_checks_against_lab14(capsys) -> None:
    assert main(["check", str(ROOT / "scenarios" / "lab14-bufferbloat.toml"), "--rubric",
                 str(ROOT / "examples" / "grading" / "lab14-rubric.toml")]) == 0
    assert "6 expectations, checked against" in capsys.readouterr().out


def test_the_report_shows_the_expectations(graded_run: tuple[int, Path, str], capsys) -> None:
    root = graded_run[1]
    assert main(["report", str(root)]) == 0
    page = (root / "report.html").read_text()
    assert "<h3>expectations</h3>" in page and "5 of 6 passed, 9/13 points" in page
    capsys.readouterr()


def test_a_script_that_crashes_after_measuring_keeps_what_it_measured(tmp_path: Path, capsys) -> None:
    (tmp_path / "handout.toml").write_text(HANDOUT, encoding="utf-8")
    script = tmp_path / "lab.py"
    script.write_text(MININET_SCRIPT.replace("net.stop()\n", "raise RuntimeError('student bug')\n"),
                      encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(MININET_RUBRIC, encoding="utf-8")
    rc = main(["grade", str(script), "--rubric", str(rubric), "-o", str(tmp_path / "o"), "--no-report"])
    assert rc == 4
    doc = json.loads((tmp_path / "o" / "lab" / "results.json").read_text())
    _check_results_json(doc)
    assert doc["score"] == 2 and "RuntimeError: student bug" in doc["output"]
    capsys.readouterr()


def test_grade_requires_the_handouts_topology(tmp_path: Path, capsys) -> None:
    (tmp_path / "handout.toml").write_text(SCENARIO, encoding="utf-8")
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO.replace('["s1", "h3"]', '{ a = "s1", b = "h3", bw = 100 }'), encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC.replace('forbid = ["sim"]', 'topology = "handout.toml"'), encoding="utf-8")
    rc = main(["grade", str(sub), "--rubric", str(rubric), "-o", str(tmp_path / "o"), "-q", "--no-report"])
    assert rc == 4
    doc = json.loads((tmp_path / "o" / "student" / "results.json").read_text())
    (req,) = [t for t in doc["tests"] if t["name"] == "required: the topology is handout.toml's"]
    assert req["status"] == "failed" and "TCLink settings not in the handout's topology" in req["output"]
    assert doc["score"] == 0
    capsys.readouterr()


def test_an_expression_with_params_points_at_the_files_column(write_scenario, capsys) -> None:
    text = SCENARIO.replace('seed = 1\n', 'seed = 1\n[params]\nrate = 4.9\n') + (
        "\n[[expect]]\nname = \"x\"\npart = \"under\"\nexpr = '${rate} < goodptu(\"h1\")'\n")
    path = write_scenario(text)
    assert main(["check", str(path)]) == 2
    line = text.splitlines().index("expr = '${rate} < goodptu(\"h1\")'") + 1
    assert f"{path}:{line}:19: error: expectation 'x': in '4.9 < goodptu(\"h1\")'" in capsys.readouterr().err


def test_a_failed_command_is_said_in_the_grade(tmp_path: Path, capsys) -> None:
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO.replace('"h2: ping 10.0.0.3 -c 10 -i 0.2",',
                                    '"h2: ping 10.0.0.3 -c 10 -i 0.2",\n  "h2: iperf3 -c 10.0.0.1 -t 1",'),
                   encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    rc = main(["grade", str(sub), "--rubric", str(rubric), "-o", str(tmp_path / "o"), "-q", "--no-report"])
    assert rc == 0  # the outcomes are met: the grade is full
    doc = json.loads((tmp_path / "o" / "student" / "results.json").read_text())
    assert doc["score"] == 5
    assert "command failed: student.toml:" in doc["output"] and str(tmp_path) not in doc["output"]
    capsys.readouterr()


def test_grade_writes_the_runs_figures_after_results_json(tmp_path: Path, monkeypatch, capsys) -> None:
    """An autograder waits for results.json: the figures (plot_q.sh's here) come after it,
    and all of them are there when grade exits."""
    sub = tmp_path / "student.toml"
    sub.write_text(SCENARIO, encoding="utf-8")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text(RUBRIC, encoding="utf-8")
    at_results_json: list[list[Path]] = []
    real = grading.write_files

    def write_files(root: Path, *args, **kwargs):
        at_results_json.append(sorted(root.rglob("*.png")))
        return real(root, *args, **kwargs)

    monkeypatch.setattr(grading, "write_files", write_files)
    assert main(["grade", str(sub), "--rubric", str(rubric), "-o", str(tmp_path / "out"), "-q",
                 "--no-report"]) == 0
    assert at_results_json == [[]]
    figures = sorted((tmp_path / "out" / "student").rglob("*.png"))
    assert len(figures) >= 2, figures  # a queue figure per part
