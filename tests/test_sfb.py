"""Stochastic Fair Blue (`sfb`, docs/semantics/qdiscs.md §6.2, E18): tc's parsing, defaults and
errors (tc/q_sfb.c), the `tc -s qdisc show` text in both iproute2 layouts, and
a small scenario: an unresponsive UDP flow and a thin one through tbf → sfb."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.shell import Word, parse_shell
from bufferlab.commands.tc import TcQdiscRequest, parse_tc, tc_show_text
from bufferlab.commands.tc.registry import MODELLED_QDISCS
from bufferlab.commands.tc.sfb import SfbSpec, sfb_prob
from bufferlab.errors import CommandError, Diagnostics
from bufferlab.profile import PROFILES
from bufferlab.run.scheduler import Runner
from conftest import hog_and_thin, sink_received

LAB2019 = PROFILES["lab2019"]
MODERN = PROFILES["modern"]


def words(line: str) -> list[Word]:
    return parse_shell(line)[0].commands[0].words


def spec(opts: str, diag: Diagnostics | None = None) -> SfbSpec:
    r = parse_tc(words(f"tc qdisc add dev eth0 root {opts}"), diag or Diagnostics(), LAB2019)
    assert isinstance(r, TcQdiscRequest) and isinstance(r.qdisc, SfbSpec)
    return r.qdisc


def err(opts: str) -> tuple[CommandError, str]:
    line = f"tc qdisc add dev eth0 root {opts}"
    with pytest.raises(CommandError) as ei:
        parse_tc(words(line), Diagnostics(), LAB2019)
    e = ei.value
    assert e.col is not None
    return e, line[e.col:]


# ------------------------------------------------------------------ parsing


def test_e18_tc_defaults():
    d = spec("sfb").to_dict()
    assert d == {"kind": "sfb", "rehash": 600_000, "db": 60_000, "limit": 0, "max": 25, "target": 20,
                 "increment": 33, "decrement": 3, "penalty_rate": 10, "penalty_burst": 20}
    assert "sfb" in MODELLED_QDISCS


def test_e18_probabilities_are_q16_rounded_like_tc():
    assert spec("sfb increment 0.0025").increment == 164
    assert (sfb_prob(0.0005), sfb_prob(0.00005), sfb_prob(1.0), sfb_prob(0.0)) == (33, 3, 65535, 0)
    s = spec("sfb increment 1 decrement 0.5")
    assert (s.increment, s.decrement) == (65535, 32768)


def test_max_and_target_derive_from_each_other():
    assert (spec("sfb target 40").max, spec("sfb target 40").target) == (50, 40)  # (5·40 + 1) div 4
    assert (spec("sfb max 10").max, spec("sfb max 10").target) == (10, 8)  # (4·10 + 3) div 5
    assert (spec("sfb max 30 target 5").max, spec("sfb max 30 target 5").target) == (30, 5)
    assert (spec("sfb target 0").max, spec("sfb target 0").target) == (25, 20)


def test_integers_take_c_prefixes_and_every_option():
    s = spec("sfb rehash 0x3e8 db 100 limit 0 max 50 target 30 penalty_rate 5 penalty_burst 010")
    assert (s.rehash, s.db, s.limit, s.max, s.target, s.penalty_rate, s.penalty_burst) == (
        1000, 100, 0, 50, 30, 5, 8)


def test_trailing_text_after_a_probability_warns():
    diag = Diagnostics()
    assert spec("sfb increment 0.01x", diag).increment == 655
    assert 'sfb increment: "x" after the number is ignored' in diag.warnings[0].message


@pytest.mark.parametrize(
    "opts, message, at, expected",
    [
        ("sfb limit -1", 'Illegal "limit"', "-1", "packet count"),
        ("sfb rehash 10s", 'Illegal "rehash"', "10s", "milliseconds"),
        ("sfb target 4294967296", 'Illegal "target"', "4294967296", "packet count"),
        ("sfb increment 1.5", 'Illegal "increment"', "1.5", "between 0 and 1"),
        ("sfb decrement -0.1", 'Illegal "decrement"', "-0.1", "between 0 and 1"),
        ("sfb increment nan", 'Illegal "increment"', "nan", "between 0 and 1"),
        ("sfb penalty_rate", "not complete", "penalty_rate", "penalty_rate"),
        ("sfb penalty 10", 'What is "penalty"?', "penalty", "Usage: ... sfb [ rehash SECS ]"),
        ("sfb Limit 10", 'What is "Limit"?', "Limit", "penalty_burst PACKETS"),
    ],
)
def test_bad_input_names_the_word_and_what_was_expected(opts, message, at, expected):
    e, rest = err(opts)
    assert message in e.message
    assert rest.startswith(at), (rest, at)
    assert expected in (e.expected or "")


def test_unknown_word_suggests_the_keyword():
    e, _ = err("sfb penalty_brust 5")
    assert e.suggestion and "penalty_burst" in e.suggestion


# ------------------------------------------------------------------ tc -s


def block(**x: int) -> list[dict]:
    xs = {"earlydrop": 7, "penaltydrop": 3, "bucketdrop": 2, "queuedrop": 0, "childdrop": 0,
          "marked": 4, "maxqlen": 25, "maxprob": 65535, "avgprob": 33}
    xs.update(x)
    opts = {"rehash": 600000, "db": 60000, "limit": 1000, "max": 25, "target": 20, "increment": 33,
            "decrement": 3, "penalty_rate": 10, "penalty_burst": 20}
    return [{"kind": "sfb", "handle": 1, "parent": None, "options": opts,
             "stats": {"bytes": 151400, "packets": 100, "drops": 12, "overlimits": 5, "backlog": 0,
                       "qlen": 0},
             "xstats": xs}]


def test_tc_show_lab2019_layout():
    assert tc_show_text(block(), LAB2019) == (
        "qdisc sfb 1: root refcnt 2 limit 1000 max 25 target 20\n"
        "  increment 0.00050 decrement 0.00005 penalty rate 10 burst 20 (600000ms 60000ms)\n"
        " Sent 151400 bytes 100 pkt (dropped 12, overlimits 5 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  earlydrop 7 penaltydrop 3 bucketdrop 2 queuedrop 0 childdrop 0 marked 4\n"
        "  maxqlen 25 maxprob 1.00000 avgprob 0.00050 \n"
    )


def test_tc_show_modern_layout():
    text = tc_show_text(block(avgprob=3), MODERN, stats=True)
    assert text.startswith(
        "qdisc sfb 1: root refcnt 2 rehash 600s db 60s limit 1000p max 25p target 20p "
        "increment 0.000503548 decrement 4.57771e-05 penalty_rate 10pps penalty_burst 20p \n")
    assert text.endswith(
        "  earlydrop 7 penaltydrop 3 bucketdrop 2 queuedrop 0 childdrop 0 marked 4\n"
        "  maxqlen 25 maxprob 1 avgprob 4.57771e-05\n")


# ------------------------------------------------------------------ a run

SCENARIO = hog_and_thin("sfb", "tc qdisc add dev s1-eth3 parent 1: handle 2: sfb")


def test_scenario_boxes_the_hog_and_spares_the_thin_flow(tmp_path: Path):
    p = tmp_path / "sfb.toml"
    p.write_text(SCENARIO, encoding="utf-8")
    t0 = time.monotonic()
    run_scenario(load_scenario(p), results_root=tmp_path / "runs", progress=False)
    assert time.monotonic() - t0 < 3.0
    part = tmp_path / "runs" / "sfb" / "hog"
    out = (part / "admin" / "terminal.log").read_text()
    m = re.search(r"earlydrop (\d+) penaltydrop (\d+) bucketdrop (\d+) queuedrop (\d+) childdrop (\d+) "
                  r"marked (\d+)\n  maxqlen (\d+) maxprob ([\d.]+) avgprob ([\d.]+)", out)
    assert m, out
    early, penalty = int(m.group(1)), int(m.group(2))
    assert early > 0 and penalty > 0, out
    assert "qdisc sfb 2: parent 1: limit 1000 max 25 target 20" in out
    hog = sink_received((part / "h3" / "hog.txt").read_text())
    thin = sink_received((part / "h3" / "thin.txt").read_text())
    # the thin flow sent 102 frames (40 kbit/s for 3.5 s); at most one may be lost
    assert thin >= 101, thin
    # the hog offered ~18 000 frames; the 1 Mbit/s link carries < 460 in 3.6 s
    assert 50 < hog < 460, hog


def test_scenario_errors_carry_file_line_and_column(tmp_path: Path):
    p = tmp_path / "bad.toml"
    p.write_text(
        'name = "x"\n[topology]\nhosts = ["h1", "h2"]\nlinks = [["h1", "h2"]]\n'
        '[[part]]\nname = "p"\ncmds = ["h1: tc qdisc add dev h1-eth0 root sfb increment 2"]\n',
        encoding="utf-8",
    )
    with pytest.raises(CommandError) as ei:
        Runner(load_scenario(p), results_root=tmp_path / "out", progress=False).check()
    text = str(ei.value)
    col = len('cmds = ["h1: tc qdisc add dev h1-eth0 root sfb increment ') + 1
    assert text.startswith(f"{p}:7:{col}: error: Illegal \"increment\""), text
    assert "between 0 and 1" in text
