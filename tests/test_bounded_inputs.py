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


def test_a_sweep_file_that_is_not_utf8_or_too_big(tmp_path):
    f = _sweep(tmp_path, "")
    f.write_bytes("scenario = 's.toml'\n".encode("utf-16"))
    with pytest.raises(ScenarioError, match="the sweep file is not UTF-8 text"):
        load_sweep(f, [])
    with pytest.raises(ScenarioError, match="the sweep file is more than"):
        load_sweep(Path("/dev/zero"), [])
