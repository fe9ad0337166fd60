"""drr, ets and hfsc (issue 25, item 3): ``tc qdisc``/``tc class`` parsed as iproute2
parses them (tc/q_drr.c, q_ets.c, q_hfsc.c) with the kernel's defaults, their
``tc qdisc show`` / ``tc -s class show`` text (print functions of the same files,
``print_class`` of tc/tc_class.c), the class verbs as the engine answers them, and a
scenario measuring the shares of two TCP flows in two classes of
each kind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.shell import Word, parse_shell
from bufferlab.commands.tc import TcQdiscRequest, parse_tc, tc_show_text
from bufferlab.commands.tc.drr import DrrSpec
from bufferlab.commands.tc.ets import EtsSpec
from bufferlab.commands.tc.hfsc import HfscSpec
from bufferlab.commands.tc.htb import TcClassRequest, class_show_text
from bufferlab.errors import CommandError, Diagnostics
from bufferlab.profile import PROFILES
from bufferlab.run.engine import TcFailure
from conftest import TcEngine

MODERN = PROFILES["modern"]


def words(line: str) -> list[Word]:
    return parse_shell(line)[0].commands[0].words


def parse(line: str):
    return parse_tc(words(line), Diagnostics(), MODERN)


def err(line: str) -> tuple[str, str]:
    with pytest.raises(CommandError) as ei:
        parse(line)
    assert ei.value.col is not None
    return ei.value.message, line[ei.value.col :]


# ------------------------------------------------------------------ parsing


def test_drr_qdisc_and_class():
    r = parse("tc qdisc add dev x root handle 1: drr")
    assert isinstance(r, TcQdiscRequest) and isinstance(r.qdisc, DrrSpec)
    assert r.qdisc.to_dict() == {"kind": "drr", "leaf_limit": 1000, "classes": [], "filters": []}
    c = parse("tc class add dev x parent 1: classid 1:1 drr quantum 3k")
    assert isinstance(c, TcClassRequest)
    assert (c.minor, c.class_) == (1, {"kind": "drr", "quantum": 3072})
    assert parse("tc class add dev x parent 1: classid 1:2 drr").class_ == {"kind": "drr"}
    assert err("tc qdisc add dev x root drr quantum 1") == ('What is "quantum"?', "quantum 1")
    assert err("tc class add dev x parent 1: classid 1:1 drr quantum x")[0] == 'Illegal "quantum"'


def test_ets_defaults_follow_the_kernel():
    q = parse("tc qdisc add dev x root handle 1: ets bands 4 strict 1 quanta 3000").qdisc
    assert isinstance(q, EtsSpec)
    # bands without a quantum get psched_mtu; unmapped priorities the last band
    assert (q.bands, q.strict, q.quanta, q.priomap) == (4, 1, [3000, 1514, 1514], [3] * 16)
    q = parse("tc qdisc add dev x root ets quanta 2000 1000 priomap 1 0").qdisc
    assert (q.bands, q.quanta, q.priomap) == (2, [2000, 1000], [1, 0] + [1] * 14)
    q = parse("tc qdisc add dev x root ets strict 3").qdisc
    assert (q.bands, q.quanta) == (3, [])


@pytest.mark.parametrize(
    "line, message, at",
    [
        ("tc qdisc add dev x root ets",
         'One of "bands", "quanta" or "strict" needs to be specified', "ets"),
        ("tc qdisc add dev x root ets bands 17", 'The number of "bands" must be <= 16', "17"),
        ("tc qdisc add dev x root ets bands 2 strict 1 quanta 1 2",
         "Not enough total bands to cover all the strict bands and quanta", "ets bands"),
        ("tc qdisc add dev x root ets bands 2 bands 3", 'Duplicate "bands"', "bands 3"),
        ("tc qdisc add dev x root ets quanta 0", '"quanta" must be > 0', "0"),
        ("tc qdisc add dev x root ets bands 2 priomap 0 2",
         '"priomap" element is out of bounds', "ets bands"),
        ("tc qdisc add dev x root ets bands 2 foo", 'What is "foo"?', "foo"),
    ],
)
def test_ets_errors(line, message, at):
    got, where = err(line)
    assert got == message and where.startswith(at)


def test_hfsc_curves_both_forms():
    q = parse("tc qdisc add dev x root handle 1: hfsc default 20").qdisc
    assert isinstance(q, HfscSpec) and q.default == 0x20
    c = parse("tc class add dev x parent 1: classid 1:1 hfsc sc rate 10mbit ul rate 10mbit")
    # Mininet's line: hfsc_get_sc2 with umax = dmax = 0 is a convex m1 0 d 0 curve
    assert c.class_ == {
        "kind": "hfsc",
        "rsc": {"m1": 0, "d": 0, "m2": 1_250_000},
        "fsc": {"m1": 0, "d": 0, "m2": 1_250_000},
        "usc": {"m1": 0, "d": 0, "m2": 1_250_000},
    }
    c = parse("tc class add dev x parent 1:1 classid 1:10 hfsc rt m1 2mbit d 10ms m2 1mbit ls m2 500kbit")
    assert c.class_ == {"kind": "hfsc", "rsc": {"m1": 250_000, "d": 10_000, "m2": 125_000},
                         "fsc": {"m1": 0, "d": 0, "m2": 62_500}}
    # umax 1500 B in dmax 5 ms is 300 000 B/s > rate: concave, m1 = umax/dmax, d = dmax
    c = parse("tc class add dev x parent 1: classid 1:2 hfsc rt umax 1500b dmax 5ms rate 1mbit")
    assert c.class_["rsc"] == {"m1": 300_000, "d": 5000, "m2": 125_000}
    # umax/dmax flatter than rate: convex, d = dmax − umax/rate (1500 B at 1 MB/s = 1.5 ms)
    c = parse("tc class add dev x parent 1: classid 1:3 hfsc rt umax 1500b dmax 5ms rate 8mbit")
    assert c.class_["rsc"] == {"m1": 0, "d": 3500, "m2": 1_000_000}


@pytest.mark.parametrize(
    "line, message",
    [
        ("tc class add dev x parent 1: classid 1:1 hfsc ul rate 1mbit",
         "HFSC: Upper-limit Service Curve without Link-Share Service Curve"),
        ("tc class add dev x parent 1: classid 1:1 hfsc", "HFSC: no parameters given"),
        ("tc class add dev x parent 1: classid 1:1 hfsc rt m1 0 d 1ms m2 0",
         "HFSC: Service Curve has two zero slopes"),
        ("tc class add dev x parent 1: classid 1:1 hfsc rt umax 1500 rate 1mbit",
         "HFSC: umax given but dmax is zero."),
        ("tc class add dev x parent 1: classid 1:1 hfsc rt foo 1", 'HFSC: Illegal "rt"'),
        ("tc class add dev x parent 1: classid 1:1 hfsc bogus", 'HFSC: What is "bogus" ?'),
        ("tc qdisc add dev x root hfsc default 1 default 2", 'HFSC: Double "default"'),
    ],
)
def test_hfsc_errors(line, message):
    assert err(line)[0] == message


# ------------------------------------------------------------------ show text


def test_qdisc_show_lines():
    def line(spec, handle=1):
        block = {"kind": spec.kind, "handle": handle, "parent": None, "options": spec.to_dict(),
                 "stats": {}, "xstats": {"classes": []}}
        return tc_show_text([block], MODERN, stats=False)

    assert line(parse("tc qdisc add dev x root drr").qdisc) == "qdisc drr 1: root refcnt 2 \n"
    # tc-ets(8)'s example
    ets = parse("tc qdisc add dev x root ets bands 8 strict 3 quanta 1514 1514 1514 3028 1514 "
                "priomap 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7").qdisc
    assert line(ets) == ("qdisc ets 1: root refcnt 2 bands 8 strict 3 quanta 1514 1514 1514 3028 1514 "
                         "priomap 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 7 \n")
    assert line(parse("tc qdisc add dev x root ets bands 2 strict 2").qdisc) == (
        "qdisc ets 1: root refcnt 2 bands 2 strict 2 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 \n")
    assert line(parse("tc qdisc add dev x root hfsc default 1a").qdisc, 5) == (
        "qdisc hfsc 5: root refcnt 2 default 1a \n")
    assert line(parse("tc qdisc add dev x root hfsc").qdisc, 5) == "qdisc hfsc 5: root refcnt 2 \n"


def _cls(**kw):
    base = {"bytes": 3000, "packets": 2, "drops": 0, "overlimits": 0, "qlen": 1, "backlog": 1500,
            "leaf": [{"kind": "pfifo", "handle": 0, "anonymous": True}]}
    return dict(base, **kw)


def test_class_show_text():
    drr = {"kind": "drr", "handle": 1, "parent": None, "options": {},
           "xstats": {"classes": [_cls(classid=1, parent=0, quantum=1514, deficit=514)]}}
    assert class_show_text([drr], True, False, True) == (
        "class drr 1:1 root quantum 1514b \n"
        " Sent 3000 bytes 2 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 1500b 1p requeues 0\n"
        " deficit 514b \n")
    ets = {"kind": "ets", "handle": 1, "parent": None, "options": {},
           "xstats": {"classes": [_cls(classid=1, parent=0, quantum=0, deficit=0),
                                  _cls(classid=2, parent=0, quantum=3000, deficit=0,
                                       leaf=[{"kind": "fq_codel", "handle": 0x20, "anonymous": False}])]}}
    assert class_show_text([ets], False, False, True) == (
        "class ets 1:1 root \nclass ets 1:2 root leaf 20: quantum 3000 \n")
    # no xstats: no blank line after the counters
    assert class_show_text([ets], True, False, True).startswith(
        "class ets 1:1 root \n Sent 3000 bytes 2 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 1500b 1p requeues 0\nclass ets 1:2 root leaf 20: quantum 3000 \n")
    curve = {"m1": 0, "d": 0, "m2": 1_250_000}
    hfsc = {"kind": "hfsc", "handle": 5, "parent": None, "options": {},
            "xstats": {"classes": [
                _cls(classid=0, root=True, parent=0, level=1, period=0, work=0, rtwork=0,
                     rsc=None, fsc=None, usc=None, qlen=0, backlog=0, leaf=[]),
                _cls(classid=1, root=False, parent=0, level=0, period=1, work=3000, rtwork=1500,
                     rsc=curve, fsc=curve, usc=curve),
                _cls(classid=2, root=False, parent=0, level=0, period=0, work=0, rtwork=0,
                     rsc={"m1": 250_000, "d": 10_000, "m2": 125_000}, fsc=None, usc=None)]}}
    text = class_show_text([hfsc], True, False, True)
    assert text.splitlines()[0] == "class hfsc 5: root "
    assert "class hfsc 5:1 parent 5: sc m1 0bit d 0us m2 10Mbit ul m1 0bit d 0us m2 10Mbit \n" in text
    assert " period 1 work 3000 bytes rtwork 1500 bytes level 0 \n\n" in text
    assert "class hfsc 5:2 parent 5: rt m1 2Mbit d 10ms m2 1Mbit \n" in text
    assert " period 0 level 1 \n\n" in text


# ------------------------------------------------------------------ class verbs


def test_class_verbs_follow_each_kernel():
    drr = TcEngine()
    drr("tc qdisc add dev x root handle 1: drr")
    drr("tc class add dev x parent 1: classid 1:1 drr")
    assert drr.block("drr")["options"]["classes"] == [{"classid": 1, "quantum": 1514, "leaf": None}]
    with pytest.raises(TcFailure, match="File exists"):
        drr("tc class add dev x parent 1: classid 1:1 drr")
    drr("tc class change dev x classid 1:1 drr quantum 9000")
    assert drr.block("drr")["options"]["classes"][0]["quantum"] == 9000
    for line, text in [
        ("tc class add dev x parent 1: classid 1:2 hfsc ls rate 1mbit",
         "RTNETLINK answers: Invalid argument"),
        ("tc class add dev x parent 1: classid 1:2 drr quantum 0",
         "Error: Specified DRR quantum cannot be zero.\nRTNETLINK answers: Invalid argument"),
        ("tc class change dev x classid 1:2 drr", "RTNETLINK answers: No such file or directory"),
        ("tc class del dev x classid 1:2", "Error: Specified class not found."),
    ]:
        with pytest.raises(TcFailure) as e:
            drr(line)
        assert str(e.value) == text, line
    # a leaf grafted on a drr class
    drr("tc qdisc add dev x parent 1:1 handle 10: fq_codel")
    assert drr.block("drr")["options"]["classes"][0]["leaf"]["handle"] == 0x10

    ets = TcEngine()
    ets("tc qdisc add dev x root handle 1: ets bands 3 strict 1")
    ets("tc class change dev x classid 1:3 ets quantum 4000")
    assert ets.block("ets")["options"]["quanta"] == [1514, 4000]
    for line, msg in [
        ("tc class change dev x classid 1:1 ets quantum 4000",
         "Strict bands do not have a configurable quantum"),
        ("tc class change dev x classid 1:4 ets quantum 4000", "Fine-grained class addition"),
        ("tc class add dev x parent 1: classid 1:2 ets", "File exists"),
        ("tc class del dev x classid 1:2", "Operation not supported"),
    ]:
        with pytest.raises(TcFailure, match=msg):
            ets(line)
    ets("tc qdisc add dev x parent 1:2 handle 20: pfifo limit 5")
    leaf = {"handle": 0x20, "spec": {"kind": "pfifo", "limit": 5}, "child": None}
    assert ets.block("ets")["options"]["classes"] == [{"classid": 2, "leaf": leaf}]
    # tc qdisc change keeps the bands' leaves
    ets("tc qdisc change dev x root ets bands 2")
    opts = ets.block("ets")["options"]
    assert opts["classes"] == [{"classid": 2, "leaf": leaf}] and opts["bands"] == 2

    hfsc = TcEngine()
    hfsc("tc qdisc add dev x root handle 1: hfsc default 1")
    hfsc("tc class add dev x parent 1: classid 1:1 hfsc ls rate 1mbit")
    hfsc("tc class add dev x parent 1:1 classid 1:2 hfsc ls rate 1mbit")
    with pytest.raises(TcFailure, match="Device or resource busy"):
        hfsc("tc class del dev x classid 1:1")
    with pytest.raises(TcFailure, match="^RTNETLINK answers: Invalid argument$"):
        hfsc("tc class change dev x parent 1: classid 1:2 hfsc ls rate 2mbit")
    # only the curves given change
    hfsc("tc class change dev x classid 1:2 hfsc ls rate 2mbit ul rate 1mbit")
    c2 = hfsc.block("hfsc")["options"]["classes"][1]
    assert c2["usc"] == {"m1": 0, "d": 0, "m2": 125_000} and c2["fsc"] == {"m1": 0, "d": 0, "m2": 250_000}
    assert c2["rsc"] is None
    # tc qdisc change keeps the classes
    hfsc("tc qdisc change dev x root handle 1: hfsc default 2")
    opts = hfsc.block("hfsc")["options"]
    assert opts["default"] == 2 and [c["classid"] for c in opts["classes"]] == [1, 2]


# ------------------------------------------------------------------ scenario: shares measured

SCENARIO = """name = "classful"
seed = 5
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], { a = "s1", b = "h2", wire_rate = "10mbit" }]

[[part]]
name = "drr"
duration = "7s"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: drr",
  "admin: tc class add dev s1-eth2 parent 1: classid 1:1 drr quantum 4542",
  "admin: tc class add dev s1-eth2 parent 1: classid 1:2 drr quantum 1514",
  "admin: tc filter add dev s1-eth2 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:1",
  "admin: tc filter add dev s1-eth2 parent 1: protocol ip prio 2 u32 match ip dst 0.0.0.0/0 flowid 1:2",
  "h2: iperf3 -s -p 5001 -D",
  "h2: iperf3 -s -p 5002 -D",
  "h1: iperf3 -c 10.0.0.2 -p 5001 -t 6 > a.txt &",
  "h1: iperf3 -c 10.0.0.2 -p 5002 -t 6 > b.txt &",
  "admin: sleep 2; tc -s class show dev s1-eth2; sleep 4; tc -s class show dev s1-eth2",
  "admin: tc -s qdisc show dev s1-eth2",
]

[[part]]
name = "ets"
duration = "7s"
cmds = [
  "admin: tc qdisc del dev s1-eth2 root",
  "admin: tc qdisc add dev s1-eth2 root handle 1: ets bands 3 strict 1 quanta 3028 1514",
  "admin: tc filter add dev s1-eth2 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:2",
  "h2: iperf3 -s -p 5001 -D",
  "h2: iperf3 -s -p 5002 -D",
  "h1: iperf3 -c 10.0.0.2 -p 5001 -t 6 > a.txt &",
  "h1: iperf3 -c 10.0.0.2 -p 5002 -t 6 > b.txt &",
  "admin: sleep 2; tc -s class show dev s1-eth2; sleep 4; tc -s class show dev s1-eth2",
  "admin: tc qdisc show dev s1-eth2",
]

[[part]]
name = "hfsc"
duration = "7s"
cmds = [
  "admin: tc qdisc del dev s1-eth2 root",
  "admin: tc qdisc add dev s1-eth2 root handle 1: hfsc default 20",
  "admin: tc class add dev s1-eth2 parent 1: classid 1:1 hfsc sc rate 8mbit ul rate 8mbit",
  "admin: tc class add dev s1-eth2 parent 1:1 classid 1:10 hfsc ls rate 6mbit",
  "admin: tc class add dev s1-eth2 parent 1:1 classid 1:20 hfsc ls rate 2mbit",
  "admin: tc qdisc add dev s1-eth2 parent 1:20 handle 20: pfifo limit 100",
  "admin: tc filter add dev s1-eth2 parent 1: protocol ip prio 1 u32 match ip dport 5001 0xffff flowid 1:10",
  "h2: iperf3 -s -p 5001 -D",
  "h2: iperf3 -s -p 5002 -D",
  "h1: iperf3 -c 10.0.0.2 -p 5001 -t 6 > a.txt &",
  "h1: iperf3 -c 10.0.0.2 -p 5002 -t 6 > b.txt &",
  "admin: sleep 2; tc -s class show dev s1-eth2; sleep 4; tc -s class show dev s1-eth2",
  "admin: tc qdisc show dev s1-eth2",
]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("classful")
    p = root / "classful.toml"
    p.write_text(SCENARIO, encoding="utf-8")
    run_scenario(load_scenario(p), results_root=root / "runs", progress=False)
    return root / "runs" / "classful"


def _rates(log: str, kind: str, a: str, b: str) -> tuple[float, float]:
    def sent(cid):
        return [int(m) for m in re.findall(rf"class {kind} {cid} .*\n Sent (\d+) bytes", log)]

    a0, a1 = sent(a)
    b0, b1 = sent(b)
    return (a1 - a0) * 8 / 4e6, (b1 - b0) * 8 / 4e6


def test_drr_quanta_share_the_link(runs: Path):
    log = (runs / "drr" / "admin" / "terminal.log").read_text()
    ra, rb = _rates(log, "drr", "1:1", "1:2")
    # 10 Mbit/s wire split 3 : 1 by the quanta
    assert abs(ra + rb - 10.0) <= 0.3, log
    assert abs(ra / rb - 3.0) <= 0.3, (ra, rb)
    assert "class drr 1:1 root quantum 4542b \n" in log


def test_ets_bands_share_by_quanta(runs: Path):
    log = (runs / "ets" / "admin" / "terminal.log").read_text()
    ra, rb = _rates(log, "ets", "1:2", "1:3")
    assert abs(ra + rb - 10.0) <= 0.4, log
    assert abs(ra / rb - 2.0) <= 0.25, (ra, rb)
    # flow 2 is unfiltered: priomap[0], the last band
    assert "qdisc ets 1: root refcnt 2 bands 3 strict 1 quanta 3028 1514 priomap 2 2" in log


def test_hfsc_upper_limit_and_link_sharing(runs: Path):
    log = (runs / "hfsc" / "admin" / "terminal.log").read_text()
    ra, rb = _rates(log, "hfsc", "1:10", "1:20")
    # the parent's ul holds both at 8 Mbit/s; ls splits it 6 : 2
    assert abs(ra + rb - 8.0) <= 0.25, log
    assert abs(ra - 6.0) <= 0.4 and abs(rb - 2.0) <= 0.4, (ra, rb)
    assert "class hfsc 1:20 parent 1:1 leaf 20: ls m1 0bit d 0us m2 2Mbit \n" in log
    assert "qdisc pfifo 20: parent 1:20 limit 100p" in log
