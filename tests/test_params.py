"""[params] and ${expr}: the evaluator (hand-computed vectors, everything else rejected),
substitution into scenarios, --set, and errors that point at file:line:col."""

from __future__ import annotations

import pytest

from bufferlab.cli import main
from bufferlab.errors import ScenarioError
from bufferlab.scenario.load import load_scenario
from bufferlab.scenario.params import ExprError, Override, condition, evaluate, format_value, parse_set
from conftest import SCENARIOS, TWO_HOSTS

ENV = {"qlen": 100, "load": 0.5, "qdisc": "red"}


@pytest.mark.parametrize("expr, value", [
    ("qlen", 100), ("qlen * 1500", 150000), ("load * 1000", 500.0), ("7 // 2", 3), ("7 / 2", 3.5),
    ("-(1 + 2) * 3", -9), ("2 + 3 * 4", 14), ("(2 + 3) * 4", 20), ("10 - 4 - 3", 3), ("1e3 / 4", 250.0),
    ("qlen // 3 * 3", 99), (" qdisc ", "red"), ("-load", -0.5), (".5 + 1", 1.5),
])
def test_evaluates_arithmetic(expr, value):
    got = evaluate(expr, ENV)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("value, text", [(500.0, "500"), (0.1, "0.1"), (150000, "150000"), ("red", "red"),
                                         (166666.66666666666, "166666.66666666666")])
def test_formats_values(value, text):
    assert format_value(value) == text


@pytest.mark.parametrize("expr, offset", [
    ("qlen.real", 4), ("qlen(1)", 4), ("'x'", 0), ('"x"', 0), ("2 ** 3", 3), ("__import__", 0),
    ("qlen if 1 else 2", 5), ("[1]", 0), ("qlen < 2", 5), ("qdisc * 2", 6), ("1 / 0", 2), ("", 0),
    ("(1 + 2", 6), ("1 +", 3), ("nope", 0), ("lambda: 1", 6), ("qlen; 1", 4),
])
def test_rejects_everything_else(expr, offset):
    with pytest.raises(ExprError) as e:
        evaluate(expr, ENV)
    assert e.value.offset == offset


def test_conditions_for_where():
    assert condition("qlen >= 100 and qdisc == 'red'", ENV)
    assert not condition("not qlen == 100 or load > 1", ENV)
    assert condition("qlen * load != 49", ENV)
    with pytest.raises(ExprError):
        condition("qlen.x", ENV)


def test_parse_set():
    assert parse_set("qlen=50") == ("qlen", 50)
    assert parse_set("load=0.25") == ("load", 0.25)
    assert parse_set("qdisc=codel") == ("qdisc", "codel")
    with pytest.raises(ValueError):
        parse_set("1x=2")


SCEN = """[params]
qlen = 100
load = 0.5
qdisc = "pfifo"

""" + TWO_HOSTS + """
[[part]]
name = "p"
cmds = ["s1: tc qdisc replace dev s1-eth2 root ${qdisc} limit ${qlen * 2}",
        "h1: ping -c 1 -i ${load / 5} 10.0.0.2"]
"""


def _cmds(path, overrides=()):
    sc = load_scenario(path, [Override(k, v, "--set") for k, v in overrides])
    return [c.text for c in sc.parts[0].commands]


def test_substitutes_defaults_and_overrides(write_scenario):
    path = write_scenario(SCEN)
    assert _cmds(path) == ["tc qdisc replace dev s1-eth2 root pfifo limit 200", "ping -c 1 -i 0.1 10.0.0.2"]
    assert _cmds(path, [("qlen", 7), ("qdisc", "bfifo")]) == [
        "tc qdisc replace dev s1-eth2 root bfifo limit 14", "ping -c 1 -i 0.1 10.0.0.2"]


def test_unknown_name_points_at_it(write_scenario):
    path = write_scenario(SCEN.replace("${qlen * 2}", "${qlne * 2}"))
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    line = SCEN.splitlines().index(next(x for x in SCEN.splitlines() if "qlen * 2" in x)) + 1
    col = SCEN.splitlines()[line - 1].index("qlen * 2") + 1
    assert (e.value.line, e.value.col) == (line, col)
    assert "unknown parameter 'qlne'" in str(e.value) and "did you mean 'qlen'" in str(e.value)


def test_type_error_and_bad_overrides(write_scenario):
    path = write_scenario(SCEN.replace("${qlen * 2}", "${qdisc * 2}"))
    with pytest.raises(ScenarioError, match="cannot apply"):
        load_scenario(path)
    good = write_scenario(SCEN, "good.toml")
    with pytest.raises(ScenarioError, match="does not declare") as e:
        load_scenario(good, [Override("qlem", 1, "--set")])
    assert e.value.line == 1 and "did you mean 'qlen'" in str(e.value)
    with pytest.raises(ScenarioError, match="its default is a number") as e:
        load_scenario(good, [Override("qlen", "big", "--set")])
    assert (e.value.line, e.value.col) == (2, 1)


def test_multiline_strings_not_supported(write_scenario):
    path = write_scenario(SCEN.replace('"h1: ping -c 1 -i ${load / 5} 10.0.0.2"', '"""h1: ping ${qlen}"""'))
    with pytest.raises(ScenarioError, match="not supported yet"):
        load_scenario(path)


def test_cli_set_and_check(write_scenario, capsys):
    path = write_scenario(SCEN)
    assert main(["check", str(path), "--set", "qlen=50"]) == 0
    assert main(["check", str(path), "--set", "nope=1"]) == 2
    assert "sets 'nope'" in capsys.readouterr().err


def test_shipped_study_keeps_its_commands():
    sc = load_scenario(SCENARIOS / "red-vs-droptail.toml")
    cmds = [c.text for p in sc.parts for c in p.commands]
    assert "bfifo limit 800" in cmds[0]
    assert any("-r 500000 " in c for c in cmds)
    assert any("limit 800 minth 50 maxth 150 qw 0.01 maxp 0.1" in c for c in cmds)


def test_errors_after_substitution_point_at_the_files_columns(write_scenario, capsys):
    # the substituted value is longer than "${qlen * 2}": a later error must still name the
    # file's column of the word at fault, not the column in the substituted text
    text = SCEN.replace("limit ${qlen * 2}", "limit ${qlen * 2000} brust 5")
    path = write_scenario(text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if "brust" in ln)
    assert f"t.toml:{line}:{text.splitlines()[line - 1].index('brust') + 1}:" in err, err
