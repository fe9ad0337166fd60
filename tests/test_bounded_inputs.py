"""Every parser and evaluator bounded, with positioned errors (issue 30, item 7): nesting,
digits and sizes that made Python itself fail (RecursionError, ValueError from int()'s
4300-digit limit, OverflowError) are refused with the file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlab.errors import BufferlabError, ScenarioError
from bufferlab.run.scheduler import Runner
from bufferlab.scenario.load import load_scenario
from bufferlab.scenario.params import MAX_EXPR_DEPTH, ExprError, condition, evaluate
from bufferlab.sweep.spec import load_sweep
from conftest import TWO_HOSTS

DIGITS = "9" * 5000


def _scenario(tmp_path: Path, cmd: str, params: str = "[params]\nx = 1\n", head: str = "") -> Path:
    p = tmp_path / "t.toml"
    p.write_text(f'{head}{params}{TWO_HOSTS}[[part]]\nname = "a"\ncmds = ["{cmd}"]\n', encoding="utf-8")
    return p


@pytest.mark.parametrize(("expr", "message"), [
    ("(" * 300 + "1" + ")" * 300, f"nested more than {MAX_EXPR_DEPTH} deep"),
    ("-" * 300 + "1", f"nested more than {MAX_EXPR_DEPTH} deep"),
    (DIGITS, "a number of 5000 characters"),
    ("9" * 400 + " * 0.5", "a number of 400 characters"),
    (" * ".join(["9" * 90] * 3), "has more than 100 digits"),
])
def test_expressions_are_bounded(expr, message):
    with pytest.raises(ExprError, match=message):
        evaluate(expr, {})
    assert evaluate("(" * MAX_EXPR_DEPTH + "1" + ")" * MAX_EXPR_DEPTH, {}) == 1


def test_a_sweep_condition_is_bounded():
    with pytest.raises(ExprError, match="nested more than"):
        condition("not " * 300 + "x", {"x": 1})
    with pytest.raises(ExprError, match="nested more than"):
        condition("(" * 300 + "x < 2" + ")" * 300, {"x": 1})


@pytest.mark.parametrize(("expr", "col"), [("(" * 300 + "1" + ")" * 300, 24 + MAX_EXPR_DEPTH),
                                           (DIGITS, 24), ("9" * 400 + " * 0.5", 24)])
def test_a_bounded_expression_in_a_scenario_has_its_position(tmp_path, expr, col):
    with pytest.raises(ScenarioError) as e:
        load_scenario(_scenario(tmp_path, f"h1: ping -c ${{{expr}}} 10.0.0.2"))
    assert (e.value.line, e.value.col) == (9, col)
    assert len(str(e.value).splitlines()[0]) < 200  # the expression is shortened in the message


@pytest.mark.parametrize("cmd", [
    f"h1: ping -c {DIGITS} 10.0.0.2", f"h1: ping 10.0.{DIGITS}.2", f"h1: iperf3 -c 10.0.0.2 -p {DIGITS}",
    f"h1: iperf3 -c 10.0.0.2 -n {DIGITS}", f"h1: iperf -c 10.0.0.2 -w {DIGITS}",
    f"s1: tc qdisc add dev s1-eth2 root pfifo limit {DIGITS}",
    f"s1: tc qdisc add dev s1-eth2 root fq_codel flows {DIGITS}",
    f"s1: tc qdisc add dev s1-eth2 root netem delay 10ms limit {DIGITS}",
    f"h1: sysctl -w net.ipv4.tcp_rmem='4096 {DIGITS} 6291456'",
])
def test_a_5000_digit_number_in_a_command_is_a_located_error(tmp_path, cmd):
    with pytest.raises(BufferlabError) as e:
        Runner(load_scenario(_scenario(tmp_path, cmd, params=""))).check()
    assert ":7:" in str(e.value)  # the command's line


def test_a_5000_digit_number_in_the_toml_is_a_located_error(tmp_path):
    with pytest.raises(ScenarioError) as e:
        load_scenario(_scenario(tmp_path, "h1: ping -c 1 10.0.0.2", head=f"seed = {DIGITS}\n"))
    assert (e.value.line, e.value.col) == (1, 8) and "5000 digits" in e.value.message


@pytest.mark.parametrize(("name", "message"), [
    ("summary.json", "its folder would be the run's own summary.json"),
    ("Tables", "its folder would be the run's own Tables"),
    ("p" * 300, "its name is 300 bytes long"),
])
def test_a_part_name_that_cannot_be_its_folder(tmp_path, name, message):
    p = _scenario(tmp_path, "h1: ping -c 1 10.0.0.2").read_text().replace('name = "a"', f'name = "{name}"')
    (tmp_path / "t.toml").write_text(p)
    with pytest.raises(ScenarioError) as e:
        load_scenario(tmp_path / "t.toml")
    assert message in e.value.message and e.value.line == 8  # the name = line


SCEN = TWO_HOSTS + '[params]\nt = 1\n[[part]]\nname = "p"\ncmds = ["h1: ping -c ${t} 10.0.0.2"]\n'


def _sweep(tmp_path: Path, body: str) -> Path:
    (tmp_path / "s.toml").write_text(SCEN, encoding="utf-8")
    f = tmp_path / "sw.toml"
    f.write_text(f'scenario = "s.toml"\n{body}\n[grid]\nt = [1, 2]\n', encoding="utf-8")
    return f


@pytest.mark.parametrize(("body", "line", "col", "message"), [
    ("parts = []", 2, 1, "parts must be a non-empty list of part names"),
    ('parts = ["p", "nope"]', 2, 15, "s.toml has no part 'nope'"),
    ('where = "t > 1 and nosuch < 3"', 2, 20, "unknown parameter 'nosuch'"),
    (f'where = "{"(" * 300}t{")" * 300}"', 2, 10 + MAX_EXPR_DEPTH, "nested more than"),
    (f'where = "{DIGITS} > t"', 2, 10, "a number of 5000 characters"),
    (f"x = {'[' * 300}{']' * 300}", 2, 69, "nested more than 64 deep"),
    ("a" + ".a" * 100 + " = 1", 2, 128, "a dotted key of more than 64 parts"),
])
def test_sweep_files_are_bounded_and_located(tmp_path, body, line, col, message):
    with pytest.raises(ScenarioError) as e:
        load_sweep(_sweep(tmp_path, body), [])
    assert message in e.value.message
    assert (e.value.line, e.value.col) == (line, col)


@pytest.mark.parametrize(("text", "line", "col", "message"), [
    ('scenario = "s.toml"\nseeds = 4294967295\n', 2, 1, "seeds = 4294967295: more runs than a sweep may have"),
    ('scenario = "s.toml"\nseeds = 1000\n[grid]\nt = [' + ", ".join(map(str, range(1, 201))) + "]\n", 3, None,
     "the sweep has 200,000 runs (200 points x 1,000 seeds), more than 100,000"),
    ('scenario = "s.toml;"\n', 1, 1, "scenario = 's.toml;': no such file"),
    ('name = "x"\nscenario = "."\n', 2, 1, "scenario = '.': is a folder"),
])
def test_a_sweep_too_big_or_of_a_missing_scenario_is_a_located_error(tmp_path, text, line, col, message):
    """tools/fuzz_inputs.py (campaign 5): `seeds = 4294967295` made a list of 4·10⁹ seeds
    (MemoryError, a traceback); a grid of millions of points was prepared run by run for
    hours; a scenario path that does not exist was an error about that path, not about the
    sweep file's line naming it."""
    f = _sweep(tmp_path, "")
    f.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as e:
        load_sweep(f, [])
    assert message in e.value.message
    assert (e.value.file, e.value.line, e.value.col) == (str(f), line, col)


def test_a_dry_run_of_a_big_sweep_takes_linear_time(tmp_path, capsys, monkeypatch):
    """tools/fuzz_inputs.py (campaign 5): a shipped sweep mutated to `seeds = 1000` (18 000 runs)
    ran past the fuzzer's minute before its dry-run printed: the scenario was loaded once per
    run, not per point, and each run was looked up in the list of runs to do (quadratic)."""
    import time

    from bufferlab.cli import main
    from bufferlab.sweep import runs

    loads = []
    real = runs.load_scenario
    monkeypatch.setattr(runs, "load_scenario", lambda *a, **k: loads.append(1) or real(*a, **k))
    f = _sweep(tmp_path, "seeds = 10000")  # 2 points x 10 000 seeds
    t0 = time.perf_counter()
    assert main(["sweep", str(f), "-o", str(tmp_path / "out"), "--dry-run"]) == 0
    assert time.perf_counter() - t0 < 60  # quadratic: 2·10⁸ comparisons, minutes
    assert capsys.readouterr().out.endswith(f"20000 runs, 20000 to run, results in {tmp_path / 'out' / 'sw'}\n")
    assert len(loads) == 2


def test_a_sweep_file_that_is_not_utf8_or_too_big(tmp_path):
    f = _sweep(tmp_path, "")
    f.write_bytes("scenario = 's.toml'\n".encode("utf-16"))
    with pytest.raises(ScenarioError, match="the sweep file is not UTF-8 text"):
        load_sweep(f, [])
    with pytest.raises(ScenarioError, match="the sweep file is more than"):
        load_sweep(Path("/dev/zero"), [])


# ---------------------------------------------------------------- damaged results folders

LAB = TWO_HOSTS + """[[part]]
name = "a"
cmds = ["s1: tc qdisc add dev s1-eth2 root tbf rate 10mbit burst 32kbit latency 50ms", "h2: iperf3 -s &",
        "h1: ping -c 3 10.0.0.2 > ping.txt &", "h1: iperf3 -c 10.0.0.2 -t 2 -J > c.json"]

[trace]
queues = ["s1-eth2"]
"""


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory) -> Path:
    from bufferlab.cli import main

    d = tmp_path_factory.mktemp("lab")
    (d / "lab.toml").write_text(LAB, encoding="utf-8")
    assert main(["run", "-q", str(d / "lab.toml"), "-o", str(d / "out")]) == 0
    return d / "out" / "lab"


def _copy(run: Path, tmp_path: Path) -> Path:
    import shutil

    dst = tmp_path / "runs" / "lab"
    shutil.copytree(run, dst)
    return dst


def _readers(run: Path, tmp_path: Path, capsys) -> list[tuple[int, str]]:  # noqa: ANN001
    """(status, stderr) of report, compare and export --flent on ``run``."""
    from bufferlab.cli import main

    out = []
    for args in (["report", str(run)], ["compare", str(run), "-o", str(tmp_path / "cmp")],
                 ["export", "--flent", str(run), "-o", str(tmp_path / "fl")]):
        status = main(args)
        out.append((status, capsys.readouterr().err))
    return out


@pytest.mark.parametrize(("edit", "message"), [
    (lambda s: s["flows"][0].update(start_ns={}), "flows[0].start_ns is {}, not an integer"),
    (lambda s: s["flows"][0].update(output=1.5), "flows[0].output is 1.5, not a string"),
    (lambda s: s.update(flows=True), "flows is true, not a list"),
    (lambda s: s["parts"][0].update(name="../x"), "parts[0].name '../x' is not a folder name"),
    (lambda s: s["parts"][0].update(queues=[{"a": 1}]), "parts[0].queues is not a list of file names"),
    (lambda s: s["flows"][0].update(received_packets=10**30), "beyond the 64-bit range"),
])
def test_an_edited_summary_is_a_clean_error_naming_the_field(finished_run, tmp_path, capsys, edit, message):
    import json

    run = _copy(finished_run, tmp_path)
    s = json.loads((run / "summary.json").read_text())
    edit(s)
    (run / "summary.json").write_text(json.dumps(s))
    for status, err in _readers(run, tmp_path, capsys):
        assert status == 2 and message in err and "Traceback" not in err, err


def test_deep_or_huge_json_in_a_results_folder(finished_run, tmp_path, capsys):
    run = _copy(finished_run, tmp_path)
    (run / "summary.json").write_text("[" * 100_000 + "]" * 100_000)
    for status, err in _readers(run, tmp_path, capsys):
        assert status == 2 and "cannot read it as JSON (nested too deep)" in err, err
    (run / "summary.json").write_bytes(b'{"scenario": "\xff"}')
    for status, err in _readers(run, tmp_path, capsys):
        assert status == 2 and "cannot read it as JSON" in err, err


def test_an_edited_iperf3_output_or_a_damaged_table_is_a_clean_error(finished_run, tmp_path, capsys):
    import json

    from bufferlab.cli import main

    run = _copy(finished_run, tmp_path)
    c = json.loads((run / "a" / "h1" / "c.json").read_text())
    c["intervals"][1]["streams"][0]["snd_cwnd"] = [1, 2]
    (run / "a" / "h1" / "c.json").write_text(json.dumps(c))
    assert main(["compare", str(run), "-o", str(tmp_path / "cmp")]) == 2
    err = capsys.readouterr().err
    assert "is not what `bufferlab run` wrote (TypeError" in err and "Traceback" not in err
    run = _copy(finished_run, tmp_path / "2")
    (run / "a" / "queue_trace_s1-eth2.parquet").write_bytes(b"PAR1 not a table")
    assert main(["compare", str(run), "-o", str(tmp_path / "cmp2")]) == 2
    err = capsys.readouterr().err
    assert "is not what `bufferlab run` wrote" in err and "Traceback" not in err


@pytest.mark.parametrize(("column", "compare_status"), [("time_s", 0), ("sojourn_s", 2)])
def test_a_queue_trace_damaged_past_its_footer_is_a_note_or_a_clean_error(finished_run, tmp_path, capsys,
                                                                          column, compare_status):
    """tools/fuzz_inputs.py (campaign 5): bits flipped in a queue trace's pages, its footer
    intact: report (and compare, for the columns it reads) raised pyarrow's OSError while
    reading the batches. Now report notes the trace (and writes everything else), compare
    names it."""
    import pyarrow.parquet as pq

    run = _copy(finished_run, tmp_path)
    trace = run / "a" / "queue_trace_s1-eth2.parquet"
    group = pq.ParquetFile(trace).metadata.row_group(0)
    chunk = next(group.column(k) for k in range(group.num_columns) if group.column(k).path_in_schema == column)
    at = chunk.dictionary_page_offset or chunk.data_page_offset
    data = bytearray(trace.read_bytes())
    data[at:at + 16] = b"\xff" * 16  # the first page header
    trace.write_bytes(bytes(data))
    (report, r_err), (compare, c_err), (export, e_err) = _readers(run, tmp_path, capsys)
    assert report == 0 and f"note: {trace}: cannot read the queue trace" in r_err, r_err
    assert (run / "report.html").is_file() and (run / "tables" / "flows.parquet").is_file()
    assert compare == compare_status and (compare == 0 or str(trace) in c_err), c_err
    assert export == 0, e_err
    assert "Traceback" not in r_err + c_err + e_err


@pytest.mark.parametrize(("where", "make"), [
    ("tables/drops.parquet", lambda p: (p.unlink(), p.mkdir())),  # a folder where report writes a table
    ("a/h2/terminal.log", lambda p: (p.unlink(), p.symlink_to(p.parent))),  # a log that is a folder
])
def test_a_folder_in_the_way_is_a_clean_error(finished_run, tmp_path, capsys, where, make):
    """tools/fuzz_inputs.py (campaign 5): report raised IsADirectoryError (a traceback)."""
    from bufferlab.cli import main

    run = _copy(finished_run, tmp_path)
    make(run / where)
    assert main(["report", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"error: {run / where}: Is a directory" in err and "hint: a folder is where bufferlab" in err, err
    assert not list(run.rglob(".*.tmp")), "the table being written is removed, not left half-written"


def test_a_fifo_in_a_results_folder_is_an_error_not_a_hang(finished_run, tmp_path):
    """tools/fuzz_inputs.py (campaign 5): a FIFO in place of a queue trace made report wait for
    ever, even after SIGTERM (pyarrow retries the interrupted open). Every reader now refuses a
    folder holding a FIFO, socket or device (or a link to one), naming it."""
    import os
    import subprocess
    import sys

    run = _copy(finished_run, tmp_path)
    trace = run / "a" / "queue_trace_s1-eth2.parquet"
    trace.unlink()
    os.mkfifo(trace)
    (run / "b").mkdir(exist_ok=True)
    for args in (["report", str(run)], ["compare", str(run), "-o", str(tmp_path / "cmp")],
                 ["export", "--flent", str(run), "-o", str(tmp_path / "fl")]):
        p = subprocess.run([sys.executable, "-m", "bufferlab.cli", *args], capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 2 and f"{trace}: error: is a pipe (FIFO), not a file" in p.stderr, p.stderr


def test_sweep_plot_of_a_damaged_table_is_a_clean_error(tmp_path, capsys):
    """tools/fuzz_inputs.py (campaign 5): `sweep plot` of a truncated, bit-flipped or foreign
    sweep.parquet raised pyarrow's errors (a traceback)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bufferlab.cli import main

    f = _sweep(tmp_path, "seeds = 1")
    assert main(["sweep", str(f), "-o", str(tmp_path / "out"), "-j", "1", "--no-progress"]) == 0
    table = tmp_path / "out" / "sw" / "sweep.parquet"
    whole = table.read_bytes()
    flipped = bytearray(whole)
    flipped[4:20] = b"\xff" * 16
    for data in (whole[:3], bytes(flipped), None):
        if data is None:  # a Parquet table of another kind: no status column
            pq.write_table(pa.table({"x": [1]}), table)
        else:
            table.write_bytes(data)
        capsys.readouterr()
        assert main(["sweep", "plot", str(table.parent), "--x", "t", "--y", "goodput_bps"]) == 2
        err = capsys.readouterr().err
        assert f"error: {table}: cannot read it as a sweep's table" in err and "Traceback" not in err, err


def test_plot_says_what_a_path_is_and_reads_a_bounded_amount(tmp_path, capsys):
    import os

    from bufferlab.cli import main

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    digits = tmp_path / "digits.json"
    digits.write_text('{"start": ' + DIGITS + "}")
    for path, message in ((Path("/dev/zero"), "/dev/zero: is a character device, not a file"),
                          (fifo, "fifo: is a pipe (FIFO), not a file"), (tmp_path, "is a folder"),
                          (tmp_path / "nope.json", "nope.json: no such file"),
                          (deep, "JSON nested too deep at line 1 column 1"),
                          (digits, "a number with too many digits at line 1 column 11")):
        assert main(["plot", str(path), "-o", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err


@pytest.mark.parametrize("damage", [
    lambda root: (root / "tables" / "flows.parquet").unlink(),
    lambda root: (root / "tables" / "drops.parquet").write_bytes(b"PAR1 truncated"),
    lambda root: (root.parent / "run.json").write_text('{"status": "ok"}'),
    lambda root: (root.parent / "run.json").write_text("[" * 100_000),
])
def test_a_damaged_finished_sweep_run_is_run_again(tmp_path, capsys, damage):
    import pandas as pd

    from bufferlab.cli import main

    f = _sweep(tmp_path, "seeds = 1")
    args = ["sweep", str(f), "-o", str(tmp_path / "out"), "-j", "1", "--no-progress"]
    assert main(args) == 0
    runs = sorted((tmp_path / "out" / "sw" / "runs").iterdir())
    damage(runs[0] / "s")
    capsys.readouterr()
    assert main(args) == 0
    assert "(1 cached, 1 run)" in capsys.readouterr().out
    frame = pd.read_parquet(tmp_path / "out" / "sw" / "sweep.parquet")
    assert set(frame["status"]) == {"ok"} and sorted(set(frame["t"])) == [1, 2]


def test_fifos_planted_in_a_finished_sweep_are_replaced_not_waited_on(tmp_path):
    """tools/fuzz_inputs.py (campaign 6, results input 118 of seed 36): a FIFO in place of the
    sweep's own tables/ping.parquet made the next `sweep` wait for a reader for ever (SIGTERM
    too). A FIFO where a run's record or table was is now a damaged run, run again, and one
    where the sweep writes is replaced by the file."""
    import os
    import subprocess
    import sys

    import pandas as pd

    from bufferlab.cli import main

    f = _sweep(tmp_path, "seeds = 1")
    args = ["sweep", str(f), "-o", str(tmp_path / "out"), "-j", "1", "--no-progress"]
    assert main(args) == 0
    out = tmp_path / "out" / "sw"
    first, second = sorted((out / "runs").iterdir())
    planted = [out / "tables" / "ping.parquet", first / "s" / "tables" / "flows.parquet", second / "run.json"]
    for path in planted:
        path.unlink()
        os.mkfifo(path)
    p = subprocess.run([sys.executable, "-m", "bufferlab.cli", *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "(0 cached, 2 run)" in p.stdout, (p.stdout, p.stderr)
    assert all(path.is_file() for path in planted)
    frame = pd.read_parquet(out / "sweep.parquet")
    assert sorted(frame["status"]) == ["ok", "ok"] and not pd.read_parquet(planted[0]).empty


def test_a_run_damaged_while_the_sweep_collects_is_a_row_not_a_crash(tmp_path, capsys, monkeypatch):
    import pandas as pd

    from bufferlab.cli import main
    from bufferlab.sweep import runs

    f = _sweep(tmp_path, "seeds = 1")
    args = ["sweep", str(f), "-o", str(tmp_path / "out"), "-j", "1", "--no-progress"]
    assert main(args) == 0
    first = sorted((tmp_path / "out" / "sw" / "runs").iterdir())[0]
    (first / "s" / "summary.json").write_text("{")
    monkeypatch.setattr(runs, "RUN_OUTPUTS", ("tables/flows.parquet",))  # the check misses it
    assert main(args) == 0
    frame = pd.read_parquet(tmp_path / "out" / "sw" / "sweep.parquet")
    assert sorted(frame["status"]) == ["damaged", "ok"]
    error = frame[frame["status"] == "damaged"]["error"].iloc[0]
    assert error.startswith("ValueError: ") and "s/summary.json: Expecting property name" in error


@pytest.mark.parametrize(("code", "hint"), [(28, "free some space"), (30, "choose a writable folder"),
                                            (36, "use shorter names")])
def test_a_full_or_read_only_disk_names_the_path_and_what_was_kept(tmp_path, capsys, monkeypatch, code, hint):
    import errno
    import os

    from bufferlab.cli import main
    from bufferlab.outputs import report

    def full(root: Path, **_kw: object) -> float:
        path = root / "tables" / "ping.parquet"
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(report, "after_run", full)
    (tmp_path / "lab.toml").write_text(LAB, encoding="utf-8")
    assert main(["run", "-q", str(tmp_path / "lab.toml"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"error: {tmp_path / 'out' / 'lab' / 'tables' / 'ping.parquet'}: {os.strerror(code)}\n" in err
    assert f"kept: everything written before it is kept in {tmp_path / 'out'}" in err and hint in err
    assert "Traceback" not in err and code in (errno.ENOSPC, errno.EROFS, errno.ENAMETOOLONG)
    assert (tmp_path / "out" / "lab" / "summary.json").is_file()


def test_export_at_a_file_says_a_file_is_in_the_way(finished_run, tmp_path, capsys):
    from bufferlab.cli import main

    (tmp_path / "afile").write_text("mine")
    for out in (tmp_path / "afile", tmp_path / "afile" / "x"):
        assert main(["export", "--flent", str(finished_run), "-o", str(out)]) == 2
        assert f"error: {out}: a file is in the way of the output folder" in capsys.readouterr().err
    assert (tmp_path / "afile").read_text() == "mine"


@pytest.mark.parametrize(("body", "message"), [
    (f'name = "{"n" * 300}"',
     "name must be a folder name (no '/', not starting with '.', at most 200 bytes)"),
    ('where = ""', "in where = '': an empty condition"),
])
def test_sweep_name_and_condition_messages(tmp_path, body, message):
    with pytest.raises(ScenarioError) as e:
        load_sweep(_sweep(tmp_path, body), [])
    assert message in str(e.value)


def test_random_expressions_raise_only_expr_errors():
    import random

    rng = random.Random(30)
    atoms = ["1", "0", "x", "s", "1e308", "1e-308", "9" * 99, ".5", "'a'", "(", ")", "-", "+", "*", "/",
             "//", "<", "==", "and", "or", "not", " ", "$", "1.", "nope"]
    for _ in range(3000):
        expr = "".join(rng.choice(atoms) for _ in range(rng.randint(0, 40)))
        for cond in (False, True):
            try:
                (condition if cond else evaluate)(expr, {"x": 3, "s": "str"})
            except ExprError:
                pass


def test_a_line_of_many_jobs_is_not_copied_per_job(tmp_path):
    """Issue 30 item 6: a line of N `ping … &` jobs lists each ping in summary.json with its
    own job, not the whole line N times (a 5 000-job line made a 576 MB summary)."""
    import json

    jobs = 200
    line = "ping 10.0.0.2 -c 1 -q & " * jobs
    path = tmp_path / "many.toml"
    path.write_text(TWO_HOSTS + f'[[part]]\nname = "p"\ncmds = ["h1: {line.strip()}"]\n', encoding="utf-8")
    Runner(load_scenario(path), tmp_path / "results").run()
    summary_path = tmp_path / "results" / "many" / "summary.json"
    summary = json.loads(summary_path.read_text())
    pings = [f for f in summary["flows"] if f["kind"] == "ping"]
    assert len(pings) == jobs
    assert {(f["command"], f["simple"]) for f in pings} == {("ping 10.0.0.2 -c 1 -q",) * 2}
    # linear in the line: far below one copy of the line per job
    assert summary_path.stat().st_size < jobs * len(line) / 4
