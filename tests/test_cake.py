"""CAKE (issue 25 item 2; docs/semantics/qdiscs.md §14): tc/q_cake.c's parser and its
error texts, ``cake_print_opt`` / ``cake_print_xstats`` text, the fuzz dictionaries,
and the lesson scenario scenarios/cake-host-fairness.toml (per-host fairness: fq_codel
gives h1's 8 flows 8/9 of the link, CAKE triple-isolate gives each host half).

Run from the repository root: PYTHONPATH=python python -m pytest tests/test_cake.py -q
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from bufferlab import _core, load_scenario, run_scenario
from bufferlab.commands.shell import parse_shell
from bufferlab.commands.tc import TcQdiscRequest, cake, parse_tc
from bufferlab.commands.tc.htb import class_show_text
from bufferlab.commands.tc.show import tc_show_text
from bufferlab.errors import CommandError, Diagnostics
from bufferlab.profile import PROFILES

ROOT = Path(__file__).resolve().parents[1]
LAB = PROFILES["lab2019"]
MODERN = PROFILES["modern"]
sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402

from conftest import TWO_HOSTS  # noqa: E402

BASE = "tc qdisc add dev s1-eth2 root "


def q(opts: str, diag: Diagnostics | None = None) -> dict:
    r = parse_tc(parse_shell(BASE + opts)[0].commands[0].words, diag or Diagnostics(), LAB)
    assert isinstance(r, TcQdiscRequest)
    return json.loads(r.to_json())["qdisc"]


def err(opts: str) -> CommandError:
    with pytest.raises(CommandError) as ei:
        q(opts)
    return ei.value


NONE = {"kind": "cake", "bandwidth": None, "diffserv": None, "atm": None, "flowmode": None, "overhead": None,
        "raw": False, "mpu": None, "rtt": None, "target": None, "autorate": None, "memlimit": None,
        "fwmark": None, "nat": None, "wash": None, "split_gso": None, "ingress": None, "ack_filter": None}


def test_cake_sends_only_the_attributes_given():
    assert q("cake") == NONE
    assert q("cake bandwidth 10mbit") == dict(NONE, bandwidth=1_250_000, autorate=False)
    assert q("cake unlimited") == dict(NONE, bandwidth=0, autorate=False)
    assert q("cake autorate-ingress") == dict(NONE, autorate=True)
    # the last of conflicting words wins
    assert q("cake bandwidth 10mbit autorate-ingress")["autorate"] is True
    assert q("cake autorate-ingress bandwidth 10mbit")["autorate"] is False


def test_cake_every_option_in_kernel_units():
    got = q("cake bandwidth 20Mbit diffserv4 dual-srchost nat wash ack-filter-aggressive pppoe-ptm "
            "ether-vlan mpu 72 rtt 50ms memlimit 8mb fwmark 0xff ingress no-split-gso")
    assert got == dict(NONE, bandwidth=2_500_000, diffserv="diffserv4", atm="ptm", flowmode="dual-srchost",
                       overhead=34, mpu=72, rtt=50_000, target=2_500, autorate=False, memlimit=8 << 20,
                       fwmark=0xFF, nat=True, wash=True, split_gso=False, ingress=True,
                       ack_filter="aggressive")
    # `diffserv` is diffserv4; the flow modes and tins by name
    assert q("cake diffserv")["diffserv"] == "diffserv4"
    for mode in cake.FLOWMODES:
        assert q(f"cake {mode}")["flowmode"] == mode
    # rtt presets: (target, interval) µs
    assert (q("cake lan")["target"], q("cake lan")["rtt"]) == (50, 1000)
    assert (q("cake interplanetary")["target"], q("cake interplanetary")["rtt"]) == (
        50_000_000,
        1_000_000_000,
    )
    # rtt TIME: target = rtt / 20, at least 1 µs
    assert (q("cake rtt 10us")["rtt"], q("cake rtt 10us")["target"]) == (10, 1)


def test_cake_framing_presets():
    assert {k: q("cake raw")[k] for k in ("atm", "overhead", "raw")} == {"atm": "noatm", "overhead": 0,
                                                                         "raw": True}
    assert {k: q("cake conservative")[k] for k in ("atm", "overhead")} == {"atm": "atm", "overhead": 48}
    assert {k: q("cake ethernet")[k] for k in ("atm", "overhead", "mpu")} == {"atm": None, "overhead": 38,
                                                                              "mpu": 84}
    assert {k: q("cake docsis")[k] for k in ("atm", "overhead", "mpu")} == {"atm": "noatm", "overhead": 18,
                                                                            "mpu": 64}
    # presets add up; `overhead N` replaces the sum; `mpu 0` is not sent
    assert q("cake pppoe-llcsnap ether-vlan")["overhead"] == 44
    assert q("cake bridged-ptm overhead 10")["overhead"] == 10
    assert q("cake ethernet mpu 0")["mpu"] is None
    assert q("cake overhead -64")["overhead"] == -64
    assert q("cake via-ethernet") == NONE
    assert q("cake memlimit 0")["memlimit"] is None


def test_cake_errors_are_iproute2s():
    e = err("cake bandwith 10mbit")
    assert e.message == 'What is "bandwith"?'
    assert e.col == len(BASE + "cake ")
    assert e.suggestion and "bandwidth" in e.suggestion
    assert e.expected.startswith("Usage: ... cake [ bandwidth RATE | unlimited* | autorate-ingress ]")
    assert err("cake bandwidth fast").message == 'Illegal "bandwidth"'
    assert err("cake rtt soon").message == 'Illegal "rtt"'
    # q_cake.c prints a literal backslash-n here
    assert err("cake overhead 300").message == 'Illegal "overhead", valid range is -64 to 256\\n'
    assert err("cake overhead 1.5").message == 'Illegal "overhead", valid range is -64 to 256\\n'
    assert err("cake mpu -1").message == 'Illegal "mpu", valid range is 0 to 256\\n'
    assert err("cake memlimit 1x").message == 'Illegal value for "memlimit": "1x"'
    assert err("cake fwmark zz").message == 'Illegal value for "fwmark": "zz"'
    assert err("cake lan internet").message == 'Error: duplicate "internet": "lan" is the second value.'
    assert err("cake bandwidth").message.startswith("Command line is not complete")
    # exact keywords only (no prefixes)
    assert err("cake band 10mbit").message == 'What is "band"?'


def test_cake_nat_is_accepted_with_a_warning():
    diag = Diagnostics()
    assert q("cake nat", diag)["nat"] is True
    assert len(diag.warnings) == 1 and "conntrack is not modelled" in diag.warnings[0].message
    diag = Diagnostics()
    q("cake nonat", diag)
    assert not diag.warnings


def test_fuzz_dictionaries_cover_every_cake_keyword():
    assert set(cake.KEYWORDS) <= set(fuzz.KEYWORDS)
    rs = (ROOT / "crates/bufferlab-core/tests/proptest_fuzz.rs").read_text()
    assert '"cake"' in rs


def _block(options: dict, xstats: dict, stats: dict | None = None) -> dict:
    return {"kind": "cake", "handle": 0x8001, "parent": None, "options": options,
            "stats": stats or {"bytes": 0, "packets": 0, "drops": 0, "overlimits": 0, "requeues": 0,
                               "backlog": 0, "qlen": 0},
            "xstats": xstats}


def _engine_block(spec: dict) -> dict:
    """A cake built by the engine on a two-host network, as ``qdisc_show`` reports it."""
    sim = _core.Simulator(json.dumps({
        "seed": 1,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}],
        "links": [{"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"},
                   "b": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"}, "rate_bps": 0, "delay_ns": 0}]}))
    sim.tc(json.dumps({"verb": "add", "dev": "h1-eth0", "parent": "root", "handle": 0x8001, "qdisc": spec}))
    return json.loads(sim.qdisc_show("h1-eth0"))[0]


DEFAULT_TABLE_MODERN = """\
 memory used: 0b of 15140Kb
 capacity estimate: 0bit
 min/max network layer size:        65535 /       0
 min/max overhead-adjusted size:    65535 /       0
 average network hdr offset:            0

                   Bulk  Best Effort        Voice
  thresh           0bit         0bit         0bit
  target            5ms          5ms          5ms
  interval        100ms        100ms        100ms
  pk_delay          0us          0us          0us
  av_delay          0us          0us          0us
  sp_delay          0us          0us          0us
  backlog            0b           0b           0b
  pkts                0            0            0
  bytes               0            0            0
  way_inds            0            0            0
  way_miss            0            0            0
  way_cols            0            0            0
  drops               0            0            0
  marks               0            0            0
  ack_drop            0            0            0
  sp_flows            0            0            0
  bk_flows            0            0            0
  un_flows            0            0            0
  max_len             0            0            0
  quantum          1514         1514         1514

"""


def test_cake_default_show_text():
    block = _engine_block({"kind": "cake"})
    text = tc_show_text([block], MODERN)
    head = ("qdisc cake 8001: root refcnt 2 bandwidth unlimited diffserv3 triple-isolate nonat nowash "
            "no-ack-filter split-gso rtt 100ms raw overhead 0 \n"
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
            " backlog 0b 0p requeues 0\n")
    assert text == head + DEFAULT_TABLE_MODERN
    # lab2019's %.1f times
    lab = tc_show_text([block], LAB)
    assert "rtt 100.0ms raw overhead 0 \n" in lab
    assert "  target          5.0ms        5.0ms        5.0ms\n" in lab


def test_cake_shaped_show_text():
    spec = q("cake bandwidth 10mbit besteffort dual-dsthost ack-filter ethernet ingress memlimit 4mb "
             "fwmark 0xf0 wash")
    block = _engine_block(spec)
    text = tc_show_text([block], MODERN)
    assert text.startswith(
        "qdisc cake 8001: root refcnt 2 bandwidth 10Mbit besteffort dual-dsthost nonat wash ingress "
        "ack-filter split-gso rtt 100ms noatm overhead 38 mpu 84 memlimit 4Mb fwmark 0xf0 \n")
    assert " memory used: 0b of 4Mb\n capacity estimate: 10Mbit\n" in text
    assert "                  Tin 0\n  thresh         10Mbit\n  target            5ms\n" in text
    # 1 250 000 >> 12 = 305
    assert text.endswith("  quantum           305\n\n")
    # diffserv4: four columns; diffserv8 and precedence: Tin 0..7
    t4 = tc_show_text([_engine_block(q("cake bandwidth 100mbit diffserv4"))], MODERN)
    assert "                   Bulk  Best Effort        Video        Voice\n" in t4
    assert "  thresh       6250Kbit      100Mbit       50Mbit       25Mbit\n" in t4
    t8 = tc_show_text([_engine_block(q("cake precedence atm overhead 10"))], MODERN)
    assert "          " + "".join(f"        Tin {i}" for i in range(8)) + "\n" in t8
    assert "rtt 100ms atm overhead 10 \n" in t8
    # atm with raw: no "noatm"
    tr = tc_show_text([_engine_block(q("cake raw"))], MODERN)
    assert "rtt 100ms raw overhead 0 \n" in tr


def test_cake_class_show_text():
    """print_class + print_tcstats2_attr (queue stats only) + cake_print_xstats' class branch."""
    flows = [
        {"minor": 0x3c5, "qlen": 2, "backlog": 3028, "drops": 0, "deficit": -486, "count": 0,
         "dropping": False, "p_drop": 0},
        {"minor": 0x401, "qlen": 7, "backlog": 10598, "drops": 3, "deficit": 1514, "count": 4,
         "dropping": True, "p_drop": 16777216, "drop_next_us": -1500, "blue_timer_us": 2500000},
        {"minor": 0x402, "qlen": 0, "backlog": 0, "drops": 0, "deficit": 28, "count": 1,
         "dropping": True, "p_drop": 0, "drop_next_us": 250},
    ]
    block = _block({}, {"classes": flows})
    assert class_show_text([block], False, False, True) == (
        "class cake 8001:3c5 parent 8001: \n"
        "class cake 8001:401 parent 8001: \n"
        "class cake 8001:402 parent 8001: \n")
    assert class_show_text([block], True, False, True) == (
        "class cake 8001:3c5 parent 8001: \n"
        " (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 3028b 2p requeues 0\n"
        "  deficit -486 count 0 blue_prob 0\n"
        "class cake 8001:401 parent 8001: \n"
        " (dropped 3, overlimits 0 requeues 0) \n"
        " backlog 10598b 7p requeues 0\n"
        "  deficit 1514 count 4 dropping drop_next -1.5ms blue_prob 16777216 blue_timer 2.5s\n"
        "class cake 8001:402 parent 8001: \n"
        " (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  deficit 28 count 1 dropping drop_next 250us blue_prob 0\n")
    # lab2019's sprint_time: %.1f
    assert "drop_next -1.5ms blue_prob 16777216 blue_timer 2.5s\n" in class_show_text([block], True, False, False)
    assert "drop_next 1.0ms" in class_show_text(
        [_block({}, {"classes": [dict(flows[2], drop_next_us=1000)]})], True, False, False)
    # an idle cake lists no class
    assert class_show_text([_engine_block({"kind": "cake"})], True, False, True) == ""


CLASS_SCENARIO = ("""name = "cake-classes"
seed = 3
""" + TWO_HOSTS + """
[[part]]
name = "cake"
duration = "4s"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: cake bandwidth 10mbit besteffort flows",
  "h2: iperf3 -s -p 5001 -D",
  "h2: iperf3 -s -p 5002 -D",
  "h1: iperf3 -c 10.0.0.2 -p 5001 -t 3 > a.txt &",
  "h1: iperf3 -c 10.0.0.2 -p 5002 -t 3 > b.txt &",
  "admin: sleep 2; tc class show dev s1-eth2; tc -s class show dev s1-eth2; tc -s qdisc show dev s1-eth2",
]
""")


def test_cake_class_show_lists_the_active_flows(tmp_path: Path) -> None:
    p = tmp_path / "cake-classes.toml"
    p.write_text(CLASS_SCENARIO, encoding="utf-8")
    run_scenario(load_scenario(p), results_root=tmp_path / "runs", progress=False)
    log = (tmp_path / "runs" / "cake-classes" / "cake" / "admin" / "terminal.log").read_text()
    heads = re.findall(r"^class cake 1:([0-9a-f]+) parent 1: $", log, re.M)
    stats = re.findall(
        r"^class cake 1:([0-9a-f]+) parent 1: \n \(dropped (\d+), overlimits 0 requeues 0\) \n"
        r" backlog (\d+)b (\d+)p requeues 0\n  deficit (-?\d+) count (\d+)( dropping drop_next \S+)?"
        r" blue_prob (\d+)(?: blue_timer \S+)?\n",
        log, re.M)
    minors = [int(m, 16) for m, *_ in stats]
    # the plain and the -s listing of one instant name the same classes, in queue order, one tin
    assert heads == [m for m, *_ in stats] + [m for m, *_ in stats], log
    assert minors == sorted(minors) and all(1 <= m <= 1024 for m in minors), log
    # both iperf3 data flows are backlogged behind the 10 Mbit/s shaper
    assert sum(int(qlen) > 0 for _, _, _, qlen, *_ in stats) >= 2, log
    # the flows' packets and bytes are the qdisc's, and every listed flow is counted
    # as sparse or bulk in the tin table printed at the same instant
    qd = re.search(r"^qdisc cake 1: .*\n.*\(dropped (\d+),.*\n backlog (\d+)b (\d+)p requeues 0$", log, re.M)
    assert qd, log
    # per-flow mode: every drop is some flow's
    assert sum(int(d) for _, d, *_ in stats) == int(qd.group(1))
    assert sum(int(b) for _, _, b, *_ in stats) == int(qd.group(2))
    assert sum(int(n) for _, _, _, n, *_ in stats) == int(qd.group(3))
    sp = int(re.search(r"^  sp_flows +(\d+)$", log, re.M).group(1))
    bk = int(re.search(r"^  bk_flows +(\d+)$", log, re.M).group(1))
    assert len(stats) == sp + bk, log


LEAF_SCENARIO = ("""name = "cake-leaf"
""" + TWO_HOSTS + """
[[part]]
name = "leaf"
duration = "1s"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: prio",
  "admin: tc qdisc add dev s1-eth2 parent 1:1 handle 10: cake",
  "admin: tc class show dev s1-eth2",
]
""")


def test_cake_class_show_of_a_grafted_cake_is_not_supported(tmp_path: Path) -> None:
    p = tmp_path / "cake-leaf.toml"
    p.write_text(LEAF_SCENARIO, encoding="utf-8")
    run_scenario(load_scenario(p), results_root=tmp_path / "runs", progress=False)
    log = (tmp_path / "runs" / "cake-leaf" / "leaf" / "admin" / "terminal.log").read_text()
    assert "tc class show: the flows of a cake grafted on a class are not supported yet" in log, log
    assert "class prio" not in log, log


def test_sysctl_default_qdisc_accepts_cake():
    from bufferlab.commands.sysctl import execute_sysctl, parse_sysctl, sysctl_defaults

    values = sysctl_defaults(LAB)
    req = parse_sysctl(
        parse_shell("sysctl -w net.core.default_qdisc=cake")[0].commands[0].words, Diagnostics()
    )
    out, _, rc = execute_sysctl(req, values)
    assert (out, rc) == ("net.core.default_qdisc = cake\n", 0)


# ------------------------------------------------------------------ the lesson


def _received(log: str) -> int:
    m = re.search(r"sink: received \d+ packets, (\d+) bytes on tcp port \d+", log)
    assert m, log
    return int(m.group(1))


@pytest.fixture(scope="module")
def lesson(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cake")
    run_scenario(load_scenario(ROOT / "scenarios/cake-host-fairness.toml"), results_root=out, progress=False)
    (run,) = [p for p in out.iterdir() if p.is_dir()]
    return run


def host_share(run: Path, part: str) -> tuple[float, float]:
    """(h1's share of the bytes h3 and h4 received, total goodput Mbit/s over 20 s)."""
    a = _received((run / part / "h3/terminal.log").read_text())
    b = _received((run / part / "h4/terminal.log").read_text())
    return a / (a + b), (a + b) * 8 / 20e6


def test_lesson_fq_codel_shares_per_flow_cake_per_host(lesson: Path) -> None:
    fq, fq_rate = host_share(lesson, "fq_codel")
    ck, ck_rate = host_share(lesson, "cake")
    print(f"h1 share: fq_codel {fq:.3f} ({fq_rate:.2f} Mbit/s), cake {ck:.3f} ({ck_rate:.2f} Mbit/s)")
    # fq_codel: nine flows, one ninth each: h1 8/9 = 0.889
    assert 0.83 < fq < 0.93, fq
    # CAKE triple-isolate: each host half (h2's one CUBIC flow leaves some of its half
    # to h1 after each COBALT drop: measured 0.556-0.568 over seeds 1-3)
    assert 0.40 < ck < 0.62, ck
    assert fq - ck > 0.25, (fq, ck)
    # both keep the link busy
    assert fq_rate > 8.0 and ck_rate > 8.0, (fq_rate, ck_rate)
    show = (lesson / "cake/admin/terminal.log").read_text()
    assert "qdisc cake 8" in show and "bandwidth 10Mbit diffserv3 triple-isolate" in show
    assert "                   Bulk  Best Effort        Voice\n" in show
    m = re.search(r"  bk_flows +(\d+) +(\d+) +(\d+)", show)
    assert m and int(m.group(2)) >= 2, show
