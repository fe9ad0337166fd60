"""HTB (issue 15, item 4): ``tc qdisc … htb``, ``tc class … htb``, ``tc filter … u32``
parsed as iproute2 6.1 parses them (tc/q_htb.c, tc/f_u32.c), the ``tc class show``
and ``tc qdisc show`` text as a real kernel prints it (docs/kernel-oracle.md), errors
with file:line:col, and a scenario: a TCP flow shaped by one class, and two classes
sharing a parent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.shell import Word, parse_shell
from bufferlab.commands.tc import TcQdiscRequest, parse_tc
from bufferlab.commands.tc.htb import (
    HtbSpec,
    TcClassRequest,
    TcClassShow,
    TcFilterRequest,
    class_show_text,
)
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from bufferlab.profile import PROFILES
from bufferlab.run.engine import Engine, TcFailure
from bufferlab.run.scheduler import Runner
from conftest import TWO_HOSTS, TcEngine

LAB2019 = PROFILES["lab2019"]


def words(line: str) -> list[Word]:
    return parse_shell(line)[0].commands[0].words


def parse(line: str):
    return parse_tc(words(line), Diagnostics(), LAB2019)


def err(line: str, cls=CommandError) -> tuple[CommandError, str]:
    with pytest.raises(cls) as ei:
        parse(line)
    assert ei.value.col is not None
    return ei.value, line[ei.value.col :]


# ------------------------------------------------------------------ parsing


def test_qdisc_options_and_defaults():
    r = parse("tc qdisc add dev s1-eth2 root handle 5: htb default 20")
    assert isinstance(r, TcQdiscRequest) and isinstance(r.qdisc, HtbSpec)
    assert r.qdisc.to_dict() == {
        "kind": "htb", "default": 0x20, "r2q": 10, "direct_qlen": 1000, "leaf_limit": 1000,
        "classes": [], "filters": [],
    }
    q = parse("tc qdisc add dev x root handle 1: htb r2q 5 direct_qlen 10").qdisc
    assert (q.default, q.r2q, q.direct_qlen) == (0, 5, 10)


def test_class_defaults_follow_q_htb():
    # ceil = rate; burst = rate/HZ + 1600 with HZ = 1e9 → 1600 B, sent as
    # tc_calc_xmittime ticks: 1600 B at 1.25 MB/s = 1280 µs = 20000 ticks (×64 ns).
    r = parse("tc class add dev x parent 5: classid 5:1 htb rate 10mbit")
    assert isinstance(r, TcClassRequest)
    assert (r.major, r.minor, r.parent) == (5, 1, 0)
    assert r.class_ == {"kind": "htb", "rate": 1_250_000, "ceil": 1_250_000, "buffer": 1_280_000,
                        "cbuffer": 1_280_000, "prio": 0, "quantum": 0}
    r = parse("tc class add dev x parent 5:1 classid 5:10 htb rate 2mbit ceil 10mbit burst 15k prio 1")
    assert (r.parent, r.minor, r.class_["ceil"], r.class_["prio"]) == (1, 0x10, 1_250_000, 1)
    # 15k = 15360 B at 250 kB/s = 61440 µs = 960000 ticks
    assert r.class_["buffer"] == 960_000 * 64
    # 6mbit: 1600 B take 2133.3 µs; iproute2 ≤ 6.13 truncates to 2133 µs → 33328 ticks
    # (printed back as burst 1599b, as Linux 6.1 + iproute2 6.1 print it); the modern
    # rounding gives ceil(33333.3) = 33334 ticks
    line = "tc class add dev x parent 5: classid 5:20 htb rate 6mbit"
    assert parse(line).class_["buffer"] == 33328 * 64
    modern = parse_tc(words(line), Diagnostics(), PROFILES["modern"])
    assert modern.class_["buffer"] == 33334 * 64


def test_filter_matches():
    r = parse("tc filter add dev x parent 5: protocol ip prio 1 u32 match ip dst 10.0.0.0/8 "
              "match ip dport 5001 0xffff flowid 5:10")
    assert isinstance(r, TcFilterRequest)
    assert r.filter == {"prio": 1, "flowid": 0x10, "matches": [
        {"field": "dst", "value": 0x0A000000, "mask": 0xFF000000},
        {"field": "dport", "value": 5001, "mask": 0xFFFF}]}
    r = parse("tc filter add dev x parent 5: u32 match ip tos 0x10 0xff flowid 5:2")
    assert r.filter["matches"] == [{"field": "tos", "value": 0x10, "mask": 0xFF}]


def test_class_show_is_a_show():
    r = parse("tc -s class show dev s1-eth2")
    assert isinstance(r, TcClassShow) and r.stats and r.dev == "s1-eth2"


@pytest.mark.parametrize(
    "line, at, message",
    [
        ("tc class add dev x parent 5: classid 5:1 htb ceil 1mbit", "htb", '"rate" is required.'),
        ("tc class add dev x parent 5: classid 5:1 htb rate 1mbit cburts 3k", "cburts", 'What is "cburts"?'),
        ("tc class add dev x parent 5: classid 5:1 htb rate fast", "fast", 'Illegal "rate": "fast"'),
        ("tc class add dev x parent 5: classid 6:1 htb rate 1mbit", "add",
         "Error: the parent and the class belong to different qdiscs."),
        ("tc class add dev x parent 5: classid 51 htb rate 1mbit", "51",
         'Error: argument "51" is wrong: invalid class ID'),
        ("tc qdisc add dev x root htb default zz", "zz", 'Illegal "default"'),
        ("tc filter add dev x parent 5: u32 match ip dst 10.0.0.300/8 flowid 5:1", "10.0.0.300/8",
         'Illegal "match ip dst" value "10.0.0.300/8"'),
    ],
)
def test_errors_point_at_the_word(line, at, message):
    e, rest = err(line)
    assert e.message == message
    assert rest.startswith(at)
    assert e.expected


@pytest.mark.parametrize(
    "line, at",
    [
        ("tc class add dev x parent 5: classid 5:1 htb rate 1mbit linklayer atm", "linklayer"),
        ("tc filter add dev x parent 5: u32 match ip protocol 6 0xff flowid 5:1", "protocol 6"),
        ("tc filter add dev x parent 5: protocol ipv6 u32 flowid 5:1", "ipv6"),
        ("tc filter show dev x handle 800::800", "handle"),
        ("tc qdisc add dev x root htb offload", "offload"),
    ],
)
def test_unsupported_options_say_so(line, at):
    e, rest = err(line, NotSupportedError)
    assert "not supported yet" in e.message and rest.startswith(at)


# ------------------------------------------------------------------ printing


def _class(classid, parent, rate, level=0, **kw):
    c = {"classid": classid, "parent": parent, "level": level, "prio": 0, "quantum": rate // 10,
         "rate": rate, "ceil": rate, "buffer": 1600 * 10**9 // rate // 64 * 64,
         "cbuffer": 1600 * 10**9 // rate // 64 * 64, "bytes": 0, "packets": 0, "drops": 0,
         "overlimits": 0, "qlen": 0, "backlog": 0, "lends": 0, "borrows": 0, "giants": 0,
         "tokens": 1600 * 10**9 // rate >> 6, "ctokens": 1600 * 10**9 // rate >> 6, "leaf": None}
    c.update(kw)
    return c


def test_class_show_matches_the_kernel_oracle_text():
    """Text and order (the kernel's class hash: 5:10 before 5:1 in bucket 1) of
    iproute2 6.1 on Linux for the same configuration (docs/kernel-oracle.md)."""
    block = {"kind": "htb", "handle": 5, "parent": None, "options": {}, "xstats": {"classes": [
        _class(1, 0, 1_250_000, level=7),
        _class(2, 0, 8000),
        _class(0x10, 1, 250_000, prio=1, ceil=1_250_000, cbuffer=1_280_000, ctokens=20000),
        _class(0x20, 1, 750_000, ceil=1_250_000, cbuffer=1_280_000),
    ]}}
    assert class_show_text([block], stats=False, details=False, modern=False) == (
        "class htb 5:10 parent 5:1 prio 1 rate 2Mbit ceil 10Mbit burst 1600b cburst 1600b \n"
        "class htb 5:1 root rate 10Mbit ceil 10Mbit burst 1600b cburst 1600b \n"
        "class htb 5:20 parent 5:1 prio 0 rate 6Mbit ceil 10Mbit burst 1599b cburst 1600b \n"
        "class htb 5:2 root prio 0 rate 64Kbit ceil 64Kbit burst 1600b cburst 1600b \n"
    )
    text = class_show_text([block], stats=True, details=False, modern=False)
    assert (
        "class htb 5:2 root prio 0 rate 64Kbit ceil 64Kbit burst 1600b cburst 1600b \n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        " lended: 0 borrowed: 0 giants: 0\n"
        " tokens: 3125000 ctokens: 3125000\n\n"
    ) in text
    assert " tokens: 100000 ctokens: 20000\n" in text


def test_class_filter_and_graft_lines_are_one_engine_request_each():
    r = parse("tc class add dev x parent 5:1 classid 5:10 htb rate 2mbit ceil 10mbit")
    assert r.to_dict() == {"verb": "add", "dev": "x", "major": 5, "minor": 0x10, "parent": 1, "class": {
        "kind": "htb", "rate": 250_000, "ceil": 1_250_000, "buffer": 6_400_000, "cbuffer": 1_280_000,
        "prio": 0, "quantum": 0}}
    assert parse("tc class del dev x classid 5:10").to_dict()["class"] is None
    f = parse("tc filter add dev x parent 5: u32 match ip dport 5001 0xffff flowid 5:10").to_dict()
    assert f == {"verb": "add", "dev": "x", "major": 5, "filter": {
        "prio": 0, "matches": [{"field": "dport", "value": 5001, "mask": 0xFFFF}], "flowid": 0x10}}
    eng = TcEngine("lab2019")
    eng("tc qdisc add dev x root handle 5: htb")
    assert eng("tc class add dev x parent 5: classid 5:1 htb rate 10mbit") == ""
    assert [c["classid"] for c in eng.block("htb")["options"]["classes"]] == [1]
    # a qdisc grafted on the class becomes its leaf
    eng("tc qdisc add dev x parent 5:1 handle 10: netem delay 5ms")
    leaf = eng.block("htb")["options"]["classes"][0]["leaf"]
    assert leaf["handle"] == 0x10 and leaf["spec"]["kind"] == "netem"
    # and a qdisc under that leaf's handle becomes its child (TCLink: red 6: then netem 10:)
    eng("tc qdisc add dev x parent 10: handle 20: pfifo limit 5")
    child = eng.block("htb")["options"]["classes"][0]["leaf"]["child"]
    assert child["handle"] == 0x20 and child["spec"] == {"kind": "pfifo", "limit": 5}
    eng("tc filter add dev x parent 5: u32 match ip dport 5001 0xffff flowid 5:1")
    assert eng.block("htb")["options"]["filters"][0]["flowid"] == 1
    # tcf_auto_prio: 0xC000, then one below the lowest prio from 0x8000 up
    eng("tc filter add dev x parent 5: u32 match ip dport 5002 0xffff flowid 5:1")
    assert [f["prio"] for f in eng.block("htb")["options"]["filters"]] == [49152, 49151]
    eng("tc filter del dev x parent 5:")
    assert eng.block("htb")["options"]["filters"] == []


def test_class_verbs_answer_as_tc_prints():
    eng = TcEngine("lab2019")
    eng("tc qdisc add dev x root handle 1: htb default 10")
    eng("tc class add dev x parent 1: classid 1:1 htb rate 10mbit")
    eng("tc class add dev x parent 1:1 classid 1:10 htb rate 5mbit")
    eng("tc qdisc add dev x parent 1:10 handle 10: pfifo limit 5")
    for line, text in [
        ("tc class add dev x parent 1:1 classid 1:10 htb rate 5mbit", "RTNETLINK answers: File exists"),
        ("tc class change dev x classid 1:20 htb rate 5mbit", "Error: Specified class not found."),
        ("tc class del dev x classid 1:20", "Error: Specified class not found."),
        ("tc class del dev x classid 1:1", "Error: Class has children."),
        ("tc class add dev x parent 2: classid 2:1 htb rate 1mbit", "Error: Specified qdisc not found."),
        ("tc class add dev x parent 1:7 classid 1:8 htb rate 1mbit",
         "Error: htb: parent class 7 of class 8 does not exist.\nRTNETLINK answers: Invalid argument"),
        ("tc class add dev x parent 1: classid 1:9 drr", "RTNETLINK answers: Invalid argument"),
        ("tc qdisc add dev x parent 1:5 handle 5: pfifo", "Error: Specified class not found."),
        ("tc qdisc add dev x parent 1:10 handle 11: pfifo", "Error: Exclusivity flag on, cannot modify."),
        ("tc filter add dev x parent 3: u32 match ip dport 1 0xffff flowid 3:1",
         "Error: Specified qdisc not found."),
        ("tc class add dev y parent 1: classid 1:2 htb rate 1mbit", "Error: Specified qdisc not found."),
    ]:
        with pytest.raises(TcFailure) as e:
            eng(line)
        assert str(e.value) == text, line
    # the kernel's quantum clamp (64kbit / r2q 10 = 800 B) is tc's warning, for that class only
    assert eng("tc class add dev x parent 1:1 classid 1:2 htb rate 64kbit") == (
        "Warning: sch_htb: quantum of class 10002 is small. Consider r2q change.")
    assert eng("tc class change dev x classid 1:10 htb rate 5mbit") == ""
    assert eng("tc class change dev x classid 1:2 htb rate 64kbit quantum 1500") == ""
    # deleting the last child makes the parent a leaf again
    eng("tc class del dev x classid 1:2")
    eng("tc class del dev x classid 1:10")
    classes = eng.block("htb")["xstats"]["classes"]
    assert [(c["classid"], c["level"], c["leaf"][0]["kind"]) for c in classes] == [(1, 0, "pfifo")]


def test_a_class_line_never_reads_the_tree_back(write_scenario, tmp_path: Path, monkeypatch):
    """tc class/filter lines and grafts are engine requests: ``qdisc_show`` (which dumps
    the whole tree) is never called for them."""

    def refuse(self: Engine, dev: str) -> None:
        raise AssertionError(f"qdisc_show({dev}) called")

    monkeypatch.setattr(Engine, "qdisc_show", refuse)
    p = write_scenario(f"""name = "no-read-back"
{TWO_HOSTS}
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: htb default 10",
  "admin: tc class add dev s1-eth2 parent 1: classid 1:1 htb rate 10mbit",
  "admin: tc class add dev s1-eth2 parent 1:1 classid 1:10 htb rate 64kbit ceil 10mbit",
  "admin: tc class change dev s1-eth2 classid 1:10 htb rate 5mbit ceil 10mbit",
  "admin: tc filter add dev s1-eth2 parent 1: protocol ip prio 1 u32 match ip dport 5201 0xffff flowid 1:10",
  "admin: tc qdisc add dev s1-eth2 parent 1:10 handle 10: fq_codel",
  "admin: tc qdisc change dev s1-eth2 parent 1:10 handle 10: fq_codel limit 100",
  "admin: tc class add dev s1-eth2 parent 1:1 classid 1:20 htb rate 1mbit",
  "admin: tc class del dev s1-eth2 classid 1:20",
  "admin: tc filter del dev s1-eth2 parent 1:",
  "h1: ping -c 2 -i 0.2 10.0.0.2",
]
""")
    run_scenario(load_scenario(p), results_root=tmp_path / "out", progress=False)
    out = tmp_path / "out" / p.stem
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failures"] == []
    assert "quantum of class 10010 is small" in (out / "p" / "admin" / "terminal.log").read_text()
    htb = summary["interfaces"]["s1-eth2"]["qdiscs"][0]
    assert [c["classid"] for c in htb["options"]["classes"]] == [1, 0x10]
    leaf = htb["options"]["classes"][1]["leaf"]
    assert (leaf["handle"], leaf["spec"]["kind"], leaf["spec"]["limit"]) == (0x10, "fq_codel", 100)


class _Recorder:
    """Stands for the native simulator: every call, with the bytes of JSON it exchanged."""

    def __init__(self, sim: object) -> None:
        self._sim = sim
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name: str):
        method = getattr(self._sim, name)

        def call(*args):
            out = method(*args)
            size = sum(len(a) for a in (*args, out) if isinstance(a, str))
            self.calls.append((name, size))
            return out

        return call


def test_a_tc_line_costs_the_same_whatever_the_tree_holds():
    """Scaling regression, counted rather than timed: the engine calls a tc line makes
    and the JSON they exchange are the same with 10 classes as with 600."""

    def exchange(classes: int) -> list[tuple[str, int]]:
        eng = TcEngine()
        eng("tc qdisc add dev x root handle 1: htb default 100")
        eng("tc class add dev x parent 1: classid 1:1 htb rate 1gbit")
        for minor in range(0x100, 0x100 + classes):
            eng(f"tc class add dev x parent 1:1 classid 1:{minor:x} htb rate 1mbit ceil 1gbit")
            eng(f"tc filter add dev x parent 1: u32 match ip dport {minor} 0xffff flowid 1:{minor:x}")
            eng(f"tc qdisc add dev x parent 1:{minor:x} handle {minor:x}: pfifo limit 10")
        recorder = _Recorder(eng.engine._sim)
        eng.engine._sim = recorder
        minor = 0x100 + classes  # as many digits for both sizes (hex and decimal): the same bytes
        eng(f"tc class add dev x parent 1:1 classid 1:{minor:x} htb rate 1mbit ceil 1gbit")
        eng(f"tc class change dev x classid 1:{minor:x} htb rate 2mbit ceil 1gbit")
        eng(f"tc filter add dev x parent 1: u32 match ip dport {minor} 0xffff flowid 1:{minor:x}")
        eng(f"tc qdisc add dev x parent 1:{minor:x} handle {minor:x}: pfifo limit 10")
        eng(f"tc qdisc del dev x parent 1:{minor:x}")
        eng(f"tc class del dev x classid 1:{minor:x}")
        return recorder.calls

    small, large = exchange(10), exchange(600)
    assert [name for name, _ in small] == ["tc_class", "tc_class", "tc_filter", "tc", "tc", "tc_class"]
    assert small == large


# ------------------------------------------------------------------ scenarios

#: mininet/link.py TCIntf.bwCmds with bw=10, enable_ecn=True
MININET_RED = (
    "tc qdisc add dev s1-eth2 parent 5:1 handle 6: red limit 1000000 min 30000 max 35000 avpkt 1500 "
    "burst 20 bandwidth 10.000000mbit probability 1 ecn"
)
SCENARIO = f"""name = "htb"
seed = 3
{TWO_HOSTS}
[[part]]
name = "one"
duration = "7s"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 5: htb default 10",
  "admin: tc class add dev s1-eth2 parent 5: classid 5:10 htb rate 5mbit",
  "admin: tc class add dev s1-eth2 parent 5: classid 5:2 htb rate 64kbit",
  "h2: iperf3 -s -D",
  "h1: iperf3 -c 10.0.0.2 -t 6 > tcp.txt &",
  "admin: sleep 2; tc -s class show dev s1-eth2; sleep 4; tc -s class show dev s1-eth2",
]

[[part]]
name = "share"
duration = "7s"
cmds = [
  "admin: tc qdisc del dev s1-eth2 root",
  "admin: tc qdisc add dev s1-eth2 root handle 5: htb default 20",
  "admin: tc class add dev s1-eth2 parent 5: classid 5:1 htb rate 10mbit",
  "admin: tc class add dev s1-eth2 parent 5:1 classid 5:10 htb rate 2mbit ceil 10mbit",
  "admin: tc class add dev s1-eth2 parent 5:1 classid 5:20 htb rate 6mbit ceil 10mbit",
  "admin: tc qdisc add dev s1-eth2 parent 5:20 handle 20: netem delay 5ms",
  "admin: tc filter add dev s1-eth2 parent 5: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 5:10",
  "h2: iperf3 -s -p 5001 -D",
  "h2: iperf3 -s -p 5002 -D",
  "h1: iperf3 -c 10.0.0.2 -p 5001 -t 6 > a.txt &",
  "h1: iperf3 -c 10.0.0.2 -p 5002 -t 6 > b.txt &",
  "admin: sleep 2; tc -s class show dev s1-eth2; sleep 4; tc -s class show dev s1-eth2",
  "admin: tc qdisc show dev s1-eth2",
]

[[part]]
name = "tclink"
duration = "3s"
cmds = [
  "admin: tc qdisc del dev s1-eth2 root",
  "admin: tc qdisc add dev s1-eth2 root handle 5:0 htb default 1",
  "admin: tc class add dev s1-eth2 parent 5:0 classid 5:1 htb rate 10.000000Mbit burst 15k",
  "admin: {MININET_RED}",
  "admin: tc qdisc add dev s1-eth2 parent 6: handle 10: netem delay 5ms limit 1000",
  "h1: ping -c 3 10.0.0.2",
  "admin: sleep 2.5; tc -s qdisc show dev s1-eth2",
]
"""


def _sent(log: str, classid: str) -> list[int]:
    return [int(m) for m in re.findall(rf"class htb {classid} .*\n Sent (\d+) bytes", log)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("htb")
    p = root / "htb.toml"
    p.write_text(SCENARIO, encoding="utf-8")
    run_scenario(load_scenario(p), results_root=root / "runs", progress=False)
    return root / "runs" / "htb"


def test_one_class_shapes_tcp_to_its_rate(runs: Path):
    log = (runs / "one" / "admin" / "terminal.log").read_text()
    a, b = _sent(log, "5:10")
    rate = (b - a) * 8 / 4.0 / 1e6  # Mbit/s between t=2 s and t=6 s
    assert abs(rate - 5.0) <= 5.0 * 0.02, log
    # 64kbit / r2q 10 = 800 B < 1000: the kernel clamps and warns, as Linux 6.1 did
    assert "Warning: sch_htb: quantum of class 50002 is small. Consider r2q change.\n" in log


def test_two_classes_share_the_parent_by_rate_and_quantum(runs: Path):
    # each its rate (2, 6), the spare 2 Mbit by quantum 1:3 → 2.5 and 7.5
    log = (runs / "share" / "admin" / "terminal.log").read_text()
    a0, a1 = _sent(log, "5:10")
    b0, b1 = _sent(log, "5:20")
    ra, rb = (a1 - a0) * 8 / 4e6, (b1 - b0) * 8 / 4e6
    assert abs(ra + rb - 10.0) <= 0.2, log
    assert abs(ra - 2.5) <= 0.25 and abs(rb - 7.5) <= 0.25, (ra, rb)
    assert "qdisc netem 20: parent 5:20 limit 1000 delay 5.0ms" in log
    assert "qdisc htb 5: root refcnt 2 r2q 10 default 20 direct_packets_stat 0 direct_qlen 1000" in log
    assert "class htb 5:20 parent 5:1 leaf 20: prio 0 rate 6Mbit ceil 10Mbit" in log


def test_scenario_errors_carry_file_line_and_column(tmp_path: Path):
    p = tmp_path / "bad.toml"
    p.write_text(
        'name = "x"\n[topology]\nhosts = ["h1", "h2"]\nlinks = [["h1", "h2"]]\n'
        '[[part]]\nname = "p"\n'
        'cmds = ["h1: tc class add dev h1-eth0 parent 1: classid 1:1 htb rate 1mbit prio x"]\n',
        encoding="utf-8",
    )
    with pytest.raises(CommandError) as ei:
        Runner(load_scenario(p), results_root=tmp_path / "out", progress=False).check()
    text = str(ei.value)
    col = len('cmds = ["h1: tc class add dev h1-eth0 parent 1: classid 1:1 htb rate 1mbit prio ') + 1
    assert text.startswith(f'{p}:7:{col}: error: Illegal "prio"'), text


def test_mininet_tclink_tree_red_and_netem_under_the_class(runs: Path):
    """mininet/link.py TCIntf with bw=10, delay='5ms', enable_ecn=True: netem is
    grafted under red, red under class 5:1; pings cross the 5 ms netem."""
    log = (runs / "tclink" / "admin" / "terminal.log").read_text()
    assert "qdisc red 6: parent 5:1 limit 1000000b min 30000b max 35000b ecn" in log, log
    assert "qdisc netem 10: parent 6: limit 1000 delay 5.0ms\n Sent 294 bytes 3 pkt" in log, log
    assert log.count(" Sent 294 bytes 3 pkt (dropped 0, overlimits 0 requeues 0) ") == 3, log
    pings = (runs / "tclink" / "h1" / "terminal.log").read_text()
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", pings)]
    assert len(rtts) == 3 and all(5.0 <= r < 6.0 for r in rtts), pings
