"""ns-3's RED (`red_ns3`, docs/semantics/qdiscs.md §5.10, E16): the tc syntax and its errors,
the `tc -s` layout, `ns3-goodput`, and the RED-vs-DropTail study replayed
(scenarios/red-vs-droptail.toml) with physical checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.ns3 import goodput_block, parse_ns3_goodput
from bufferlab.commands.shell import Word, parse_shell
from bufferlab.commands.tc import TcQdiscRequest, parse_tc, tc_show_text
from bufferlab.commands.tc.red_ns3 import RedNs3Spec
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError, ScenarioError
from bufferlab.profile import PROFILES
from bufferlab.run.scheduler import Runner

ROOT = Path(__file__).resolve().parents[1]
STUDY = ROOT / "scenarios" / "red-vs-droptail.toml"
E16 = "red_ns3 variant 2015 mode bytes limit 800 minth 50 maxth 150 qw 0.01"
LAB2019 = PROFILES["lab2019"]


def words(line: str) -> list[Word]:
    return parse_shell(line)[0].commands[0].words


def spec(opts: str) -> RedNs3Spec:
    r = parse_tc(words(f"tc qdisc add dev eth0 root {opts}"), Diagnostics(), LAB2019)
    assert isinstance(r, TcQdiscRequest) and isinstance(r.qdisc, RedNs3Spec)
    return r.qdisc


def err(opts: str, cls: type[CommandError] = CommandError) -> tuple[CommandError, str]:
    line = f"tc qdisc add dev eth0 root {opts}"
    with pytest.raises(cls) as ei:
        parse_tc(words(line), Diagnostics(), LAB2019)
    e = ei.value
    assert e.col is not None
    return e, line[e.col:]


# ------------------------------------------------------------------ parsing


def test_study_lines_parse_to_ns3_attributes():
    f = spec(E16 + " linterm 0.1")
    d = f.to_dict()
    assert d["kind"] == "red_ns3"
    assert (d["variant"], d["mode"], d["limit"], d["min_th"], d["max_th"], d["qw"]) == (
        "2015", "bytes", 800, 50.0, 150.0, 0.01)
    assert (d["linterm"], d["max_p"]) == (0.1, None)
    i = spec(E16 + " maxp 0.1")
    assert (i.linterm, i.max_p) == (None, 0.1)
    # ns-3's defaults otherwise
    assert (f.mean_pkt_size, f.gentle, f.wait) == (500, True, True)
    assert (f.bandwidth, f.link_delay) == (1_500_000, 20_000_000)


def test_defaults_and_options():
    d = spec("red_ns3")
    assert (d.variant, d.mode, d.limit, d.min_th, d.max_th, d.qw, d.linterm) == (
        "qdisc", "packets", 25, 5.0, 15.0, 0.002, 50.0)
    s = spec("red_ns3 limit 100 minth 10 maxth 30 qw -1 maxp 0.05 meanpktsize 1000 nogentle nowait ecn "
             "noharddrop ns1compat bandwidth 10mbit linkdelay 5ms adaptmaxp target 10ms interval 1s top 0.4 "
             "bottom 0.001 alpha 0.02 beta 0.85 rtt 50ms nlred")
    assert (s.gentle, s.wait, s.ecn, s.harddrop, s.ns1compat, s.nlred, s.adapt_max_p) == (
        False, False, True, False, True, True, True)
    assert (s.bandwidth, s.link_delay, s.target_delay, s.interval, s.rtt) == (
        10_000_000, 5_000_000, 10_000_000, 1_000_000_000, 50_000_000)
    assert (s.top, s.bottom, s.alpha, s.beta, s.qw, s.mean_pkt_size) == (0.4, 0.001, 0.02, 0.85, -1.0, 1000)
    assert spec("red_ns3 mode bytes limit 64kb").limit == 65536
    f = spec("red_ns3 feng fengalpha 4 fengbeta 3")
    assert (f.feng, f.feng_alpha, f.feng_beta) == (True, 4.0, 3.0)
    # ARED overrides thresholds and weight, with a warning
    diag = Diagnostics()
    parse_tc(words("tc qdisc add dev eth0 root red_ns3 ared minth 7"), diag, LAB2019)
    assert "ared sets minth automatically" in diag.warnings[0].message


@pytest.mark.parametrize(
    "opts, message, at, hint",
    [
        ("red_ns3 minth 20 maxth 10", "thresholds out of order", "10", None),
        ("red_ns3 limit 10 minth 20 maxth 30", "minth 20 is above limit 10", "20", "mode bytes"),
        ("red_ns3 maxp 10", "maxp 10 is outside 0..1", "10", "linterm 10"),
        ("red_ns3 maxp 0.1 linterm 10", "either maxp or linterm", "linterm", None),
        ("red_ns3 linterm 0", "must be above 0", "0", None),
        ("red_ns3 qw 2", "qw 2 is outside (0, 1]", "2", None),
        ("red_ns3 minth abc", 'illegal value for "minth"', "abc", None),
        ("red_ns3 maxth_ 20", 'unknown option "maxth_"', "maxth_", "did you mean 'maxth'?"),
        ("red_ns3 variant 2015 ecn", "ecn needs variant qdisc", "ecn", "variant qdisc"),
        ("red_ns3 ared feng", "cannot be used together", "feng", None),
        ("red_ns3 mode bytes minth 50", "mode bytes needs a limit", "red_ns3", "limit 800"),
        ("red_ns3 bandwidth 1.5Mbps", "byte units are not accepted", "1.5Mbps", "1.5Mbit"),
        ("red_ns3 variant 2016", 'unknown variant "2016"', "2016", None),
        ("red_ns3 top 2", "top must be between 0 and 1", "2", None),
        ("red_ns3 limit 2.5", 'illegal "limit"', "2.5", "mode bytes"),
        ("red_ns3 minth", "not complete", "minth", None),
    ],
)
def test_bad_input_names_the_word_and_what_was_expected(opts, message, at, hint):
    e, rest = err(opts)
    assert message in e.message
    assert rest.startswith(at), (rest, at)
    assert e.expected or e.suggestion
    if hint:
        assert hint in (e.suggestion or "") + (e.expected or "")


def test_errors_in_a_scenario_carry_file_line_and_column(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(
        'name = "x"\n[topology]\nhosts = ["h1", "h2"]\nlinks = [["h1", "h2"]]\n'
        '[[part]]\nname = "p"\ncmds = ["h1: tc qdisc add dev h1-eth0 root red_ns3 minth 20 maxth 10"]\n',
        encoding="utf-8",
    )
    r = Runner(load_scenario(p), results_root=tmp_path / "out", progress=False)
    with pytest.raises(CommandError) as ei:
        r.check()
    text = str(ei.value)
    col = 'cmds = ["h1: tc qdisc add dev h1-eth0 root red_ns3 minth 20 maxth '.__len__() + 1
    assert text.startswith(f"{p}:7:{col}: error: red_ns3: thresholds out of order"), text
    assert "expected: minth <= maxth" in text
    # a stop that is not a duration
    p.write_text(p.read_text().replace('name = "p"', 'name = "p"\nstop = "soon"'), encoding="utf-8")
    with pytest.raises(ScenarioError, match="stop"):
        load_scenario(p)


def test_unmodelled_kinds_are_still_refused_clearly():
    e, _ = err("gred", NotSupportedError)
    assert "not supported yet" in e.message


# ------------------------------------------------------------------ tc -s


def test_tc_show_layout():
    block = {
        "kind": "red_ns3", "handle": 1, "parent": None,
        "options": spec(E16 + " linterm 0.1").to_dict(),
        "stats": {"bytes": 925430, "packets": 1607, "drops": 180, "overlimits": 110, "backlog": 0, "qlen": 0},
        "xstats": {"marked": 0, "early": 110, "pdrop": 70, "other": 0, "unforced_drop": 110,
                   "forced_drop": 70, "qlim_drop": 70, "unforced_mark": 0, "forced_mark": 0,
                   "avg": 117.24, "cur_max_p": 10.0, "qw": 0.01, "min_th": 50.0, "max_th": 150.0},
    }
    assert tc_show_text([block], LAB2019) == (
        "qdisc red_ns3 1: root refcnt 2 variant 2015 mode bytes limit 800b minth 50 maxth 150 qw 0.01 "
        "linterm 0.1 meanpktsize 500 gentle wait bandwidth 1500Kbit linkdelay 20.0ms \n"
        " Sent 925430 bytes 1607 pkt (dropped 180, overlimits 110 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  marked 0 early 110 pdrop 70 other 0\n"
        "  unforced_drop 110 forced_drop 70 qlim_drop 70 unforced_mark 0 forced_mark 0\n"
        "  avg 117.24 cur_max_p 10 qw 0.01 minth 50 maxth 150\n"
    )
    block["options"] = spec("red_ns3 limit 40 maxp 0.1 ecn noharddrop adaptmaxp").to_dict()
    text = tc_show_text([block], LAB2019, stats=False, details=True)
    assert text.startswith("qdisc red_ns3 1: root refcnt 2 variant qdisc mode packets limit 40p minth 5 "
                           "maxth 15 qw 0.002 maxp 0.1 meanpktsize 500 gentle wait ")
    assert "ecn noharddrop adaptmaxp target 5.0ms interval 500.0ms top 0.5 bottom 0 alpha 0.01 beta 0.9 " \
        in text


# ------------------------------------------------------------------ ns3-goodput


def test_goodput_block_is_the_ns3_programs_output():
    assert goodput_block([("TCP1", 109880), ("UDP", 442880)], 15.0) == (
        "\nTCP1:\n\tTotal Bytes Received:109880\n\tGoodput:7325 Bytes/seconds\n"
        "\nUDP:\n\tTotal Bytes Received:442880\n\tGoodput:29525 Bytes/seconds\n\nIt worked!\n"
    )
    assert "\tTotal_Bytes_Received:1\n" in goodput_block([("X", 1)], 15.0, "_")
    cmd = parse_ns3_goodput(words("ns3-goodput -t 15 TCP1=n8:9 UDP=n7:9/udp A=n7"), {"n7", "n8"})
    assert [(e.label, e.node, e.port, e.proto) for e in cmd.entries] == [
        ("TCP1", "n8", 9, None), ("UDP", "n7", 9, "udp"), ("A", "n7", 5001, None)]
    assert cmd.seconds_ns == 15_000_000_000
    for line, msg in [("ns3-goodput TCP1=n99:9", "no node named 'n99'"), ("ns3-goodput", "at least one sink"),
                      ("ns3-goodput TCP1", "cannot read"), ("ns3-goodput -t", "needs a value")]:
        with pytest.raises(CommandError, match=msg):
            parse_ns3_goodput(words(line), {"n7", "n8"})


# ------------------------------------------------------------------ the study


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("study")
    return run_scenario(load_scenario(STUDY), results_root=out, progress=False), out / "red-vs-droptail"


def _drops(tc_text: str) -> tuple[int, int]:
    m = re.search(r"dropped (\d+),", tc_text)
    e = re.search(r"early (\d+)", tc_text)
    assert m, tc_text
    return int(m.group(1)), int(e.group(1)) if e else 0


def test_study_goodputs_are_physical(study):
    summary, root = study
    parts = {p["name"]: p for p in summary["parts"]}
    assert list(parts) == ["droptail", "red-faithful", "red-intended"]
    for k, (name, p) in enumerate(parts.items()):
        # the part's stop (ns-3's Simulator::Stop) ends it at 15 s
        assert (p["start_ns"], p["end_ns"]) == (15e9 * k, 15e9 * (k + 1)), name
        sinks = {s["host"]: s for s in p["sinks"]}
        assert set(sinks) == {"n7", "n8", "n9"}
        # everything crossed the 1 Mbit/s n3 -> n0 wire: payload below 125 000 B/s
        total = sum(s["goodput_Bps"] for s in sinks.values())
        assert 20_000 < total < 125_000, (name, total)
        # UDP: at most what the on/off source offers (0.5 Mbit/s half the time = 31 250 B/s)
        assert 0 < sinks["n7"]["goodput_Bps"] <= 31_250
        # TCP: receive-window bound 4000 B per base RTT (84 ms via n5/n8, 76 ms via n6/n9)
        assert 0 < sinks["n8"]["goodput_Bps"] < 4000 / 0.084
        assert 0 < sinks["n9"]["goodput_Bps"] < 4000 / 0.076
        # the printed block agrees with the table: floor(bytes / 15)
        block = (root / name / "admin" / "terminal.log").read_text()
        for label, host in (("TCP1", "n8"), ("TCP2", "n9"), ("UDP", "n7")):
            rx = sinks[host]["bytes"]
            want = f"\n{label}:\n\tTotal Bytes Received:{rx}\n\tGoodput:{rx * 10 // 150} Bytes/seconds\n"
            assert want in block
        assert block.endswith("\nIt worked!\n")
    p = summary["packets"]
    assert p["created"] == p["delivered"] + p["dropped"] + p["live"] + p["segmented"], p


def test_study_faithful_reading_drops_more_than_intended(study):
    _, root = study
    faithful = (root / "red-faithful" / "n3" / "terminal.log").read_text()
    intended = (root / "red-intended" / "n3" / "terminal.log").read_text()
    (f_drops, f_early), (i_drops, i_early) = _drops(faithful), _drops(intended)
    assert "linterm 0.1" in faithful and "cur_max_p 10 " in faithful
    assert "maxp 0.1" in intended and "cur_max_p 0.1 " in intended
    # max_p = 10: every eligible packet is early-dropped; max_p = 0.1 with the wait rule almost never
    assert f_early > 10 * max(i_early, 1)
    assert f_drops > i_drops
    droptail = (root / "droptail" / "n3" / "terminal.log").read_text()
    assert "qdisc bfifo" in droptail and _drops(droptail)[0] > 0


def test_study_is_deterministic(study, tmp_path):
    summary, root = study
    again = run_scenario(load_scenario(STUDY), results_root=tmp_path, progress=False)
    assert json.dumps(again["parts"]) == json.dumps(summary["parts"])
    assert again["packets"] == summary["packets"]
    for part in ("droptail", "red-faithful", "red-intended"):
        for node in ("admin", "n3"):
            a = (root / part / node / "terminal.log").read_text()
            b = (tmp_path / "red-vs-droptail" / part / node / "terminal.log").read_text()
            assert a == b
