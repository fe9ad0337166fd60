"""ingress / clsact, ifb, mirred and police (docs/semantics/qdiscs.md §21): tc and ip
parsing against iproute2's, the show text, and the home-link lesson
(scenarios/home-link-ifb.toml).

Run from the repository root: PYTHONPATH=python python -m pytest tests/test_ingress.py -q
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest
from pcaps import frames

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.netinfo import parse_ip
from bufferlab.commands.shell import parse_shell
from bufferlab.commands.tc import parse_tc, tc_show_text
from bufferlab.commands.tc.ingress import HookFilterRequest
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from bufferlab.profile import PROFILES
from bufferlab.run.engine import TcFailure
from conftest import ROOT, TWO_HOSTS, TcEngine


def words(line: str):
    return parse_shell(line)[0].commands[0].words


def parse(line: str, profile: str = "modern"):
    return parse_tc(words(line), Diagnostics(), PROFILES[profile])


def test_ingress_word_is_parent_and_kind():
    r = parse("tc qdisc add dev eth0 handle ffff: ingress").to_dict()
    assert r == {
        "verb": "add",
        "dev": "eth0",
        "parent": {"class": {"major": 0xFFFF, "minor": 0xFFF1}},
        "handle": 0xFFFF,
        "qdisc": {"kind": "ingress", "ingress": [], "egress": []},
    }
    assert parse("tc qdisc add dev eth0 clsact").to_dict()["qdisc"]["kind"] == "clsact"
    assert parse("tc qdisc del dev eth0 ingress").verb == "delete"
    with pytest.raises(CommandError, match='"ingress" is a duplicate parent ID'):
        parse("tc qdisc add dev eth0 root ingress")
    with pytest.raises(CommandError, match='What is "limit"'):
        parse("tc qdisc add dev eth0 ingress limit 5")


def test_sqm_filter_line_verbatim():
    r = parse(
        "tc filter add dev eth0 parent ffff: protocol all prio 10 u32 match u32 0 0 flowid 1:1 "
        "action mirred egress redirect dev ifb4eth0"
    )
    assert isinstance(r, HookFilterRequest)
    assert r.hook == "ingress" and r.mirred == [("ifb4eth0", 120)]
    assert r.filter == {
        "prio": 10,
        "protocol_all": True,
        "classifier": "u32",
        "matches": [{"field": "any", "value": 0, "mask": 0}],
        "classid": 0x10001,
        "actions": [{"kind": "mirred", "dev": "ifb4eth0"}],
    }


def test_police_in_kernel_units():
    r = parse(
        "tc filter add dev eth0 parent ffff: protocol ip u32 match ip src 0.0.0.0/0 "
        "police rate 1mbit burst 10k drop flowid :1"
    )
    # 10240 B at 125 000 B/s: 81.92 ms = 1 280 000 ticks of 64 ns; mtu 255 << 3
    assert r.filter["actions"] == [
        {
            "kind": "police",
            "rate": 125000,
            "burst_ns": 1_280_000 * 64,
            "mtu": 2040,
            "peakrate": None,
            "overhead": 0,
            "mpu": 0,
            "atm": False,
            "exceed": "drop",
            "conform": "ok",
        }
    ]
    r = parse(
        "tc filter add dev eth0 ingress protocol all matchall action police rate 5mbit burst 20k "
        "conform-exceed continue/pipe action drop"
    )
    pol, drop = r.filter["actions"]
    assert (pol["exceed"], pol["conform"]) == ("continue", "pipe")
    assert drop == {"kind": "gact", "control": "drop"}
    # the default exceed verdict is reclassify
    r = parse("tc filter add dev eth0 ingress protocol all matchall action police rate 5mbit burst 20k")
    assert r.filter["actions"][0]["exceed"] == "reclassify"


@pytest.mark.parametrize(
    "line,message",
    [
        (
            "tc filter add dev eth0 ingress protocol all matchall action police rate 1mbit",
            "'burst' requires 'rate'.",
        ),
        (
            "tc filter add dev eth0 ingress protocol all matchall action police rate 1mbit burst 10k "
            "peakrate 2mbit",
            "'mtu' is required, if 'peakrate' is requested.",
        ),
        ("tc filter add dev eth0 ingress matchall action drop", "Filter kind and protocol must be specified"),
        # fuzz.py campaign 6: a flowid that is no hex number was a ValueError traceback
        ("tc filter add dev eth0 parent ffff: protocol all prio 10 u32 match u32 0 0 flowid flowid 1:1",
         'Illegal "classid" "flowid"'),
        ("tc filter add dev eth0 ingress protocol all matchall flowid x:1", 'Illegal "classid" "x:1"'),
    ],
)
def test_police_and_filter_errors_are_tcs(line, message):
    with pytest.raises(CommandError, match=re.escape(message)):
        parse(line)


@pytest.mark.parametrize(
    "line,word",
    [
        ("tc filter add dev eth0 ingress protocol all bpf action drop", "bpf"),
        (
            "tc filter add dev eth0 ingress protocol all matchall action mirred ingress redirect dev ifb0",
            "ingress redirect",
        ),
        ("tc filter add dev eth0 parent ffff: protocol all u32 match u32 0 0 at 8 action drop", "8 action"),
        ("tc filter add dev eth0 ingress protocol all matchall action police avrate 1mbit", "avrate"),
        ("tc filter add dev eth0 ingress protocol ipv6 matchall action drop", "ipv6"),
        ("tc filter add dev eth0 parent ffff: protocol all u32 match u32 0x45 0xff at 0 action drop", "0xff"),
    ],
)
def test_partial_features_say_not_supported_yet(line, word):
    with pytest.raises(NotSupportedError, match="not supported yet") as e:
        parse(line)
    assert line[e.value.col :].startswith(word), (e.value.col, line)


def test_filter_verbs_are_engine_requests():
    add = parse("tc filter add dev x parent ffff: protocol all matchall action drop")
    assert add.to_dict() == {"verb": "add", "dev": "x", "hook": "ingress", "prio": 0, "filter": add.filter}
    eng = TcEngine()
    with pytest.raises(TcFailure) as e:
        eng("tc filter add dev x parent ffff: protocol all matchall action drop")
    assert str(e.value) == "Error: Parent Qdisc doesn't exists.\nWe have an error talking to the kernel"
    eng("tc qdisc add dev x handle ffff: ingress")
    eng("tc filter add dev x parent ffff: protocol all matchall action drop")
    assert eng.block("ingress")["options"]["ingress"][0]["prio"] == 0xC000
    # tcf_auto_prio: one below the lowest prio from 0x8000 up (a lower one does not count)
    eng("tc filter add dev x parent ffff: protocol all matchall action drop")
    eng("tc filter add dev x parent ffff: protocol all prio 7 matchall action drop")
    eng("tc filter add dev x parent ffff: protocol all prio 60000 matchall action drop")
    eng("tc filter add dev x parent ffff: protocol all matchall action drop")
    prios = [f["prio"] for f in eng.block("ingress")["options"]["ingress"]]
    assert prios == [0xC000, 0xBFFF, 7, 60000, 0xBFFE]
    for p in (7, 60000, 0xBFFE):
        eng(f"tc filter del dev x parent ffff: prio {p}")
    with pytest.raises(TcFailure, match="Filter with specified priority/protocol not found"):
        eng("tc filter del dev x parent ffff: prio 7")
    eng("tc filter add dev x parent ffff: protocol all prio 32768 matchall action drop")
    with pytest.raises(TcFailure, match="Lowest ID from auto-alloc range already in use"):
        eng("tc filter add dev x parent ffff: protocol all matchall action drop")
    eng("tc filter del dev x parent ffff: prio 32768")
    with pytest.raises(TcFailure, match="Specified class doesn't exist"):
        eng("tc filter add dev x egress protocol all matchall action drop")
    eng("tc filter del dev x parent ffff: prio 49151")
    assert [f["prio"] for f in eng.block("ingress")["options"]["ingress"]] == [0xC000]
    eng("tc filter del dev x parent ffff:")
    assert eng.block("ingress")["options"]["ingress"] == []


def test_replace_of_the_same_kind_keeps_the_filters():
    eng = TcEngine()
    eng("tc qdisc add dev x ingress")
    eng("tc filter add dev x parent ffff: protocol all prio 1 matchall action drop")
    kept = eng.block("ingress")["options"]["ingress"]
    eng("tc qdisc replace dev x ingress")
    assert eng.block("ingress")["options"]["ingress"] == kept != []
    with pytest.raises(TcFailure, match="File exists"):
        eng("tc qdisc add dev x ingress")


def test_ingress_show_text():
    block = {
        "kind": "ingress",
        "handle": 0xFFFF,
        "parent": [0xFFFF, 0xFFF1],
        "options": {},
        "stats": {"bytes": 1028, "packets": 1, "drops": 0},
    }
    assert tc_show_text([block], PROFILES["modern"]) == (
        "qdisc ingress ffff: parent ffff:fff1 ---------------- \n"
        " Sent 1028 bytes 1 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
    )
    assert tc_show_text([dict(block, kind="clsact")], PROFILES["modern"], stats=False) == (
        "qdisc clsact ffff: parent ffff:fff1 \n"
    )


def test_ip_link_add_ifb():
    cmd = parse_ip(words("ip link add name ifb4eth0 type ifb"))
    assert (cmd.command, cmd.dev, cmd.link_kind) == ("add", "ifb4eth0", "ifb")
    assert parse_ip(words("ip link add ifb0 type ifb")).dev == "ifb0"
    with pytest.raises(NotSupportedError, match="type veth is not supported yet"):
        parse_ip(words("ip link add v0 type veth"))
    with pytest.raises(CommandError, match="not a valid ifname"):
        parse_ip(words("ip link add ifb-with-a-long-name type ifb"))


def test_ifb_in_a_host_namespace(tmp_path: Path):
    sc = tmp_path / "ifb.toml"
    sc.write_text(f"""name = "ifb"
{TWO_HOSTS}
[[part]]
name = "p"
cmds = [
  "h2: ip link add ifb0 type ifb; ip link show ifb0; ip link set dev ifb0 up; ip -br link",
  "h2: tc qdisc add dev h2-eth0 ingress; tc qdisc add dev ifb0 root tbf rate 1mbit burst 5k latency 50ms",
  "h2: tc filter add dev h2-eth0 parent ffff: protocol ip matchall action mirred egress redirect dev ifb0",
  "h2: ip link add ifb0 type ifb",
  "h1: ping -c 3 -i 0.2 10.0.0.2",
  "h2: sleep 1; tc -s qdisc show dev ifb0; tc qdisc show dev h2-eth0",
]
""")
    run_scenario(load_scenario(sc), results_root=tmp_path / "out", progress=False)
    log = (tmp_path / "out" / "ifb" / "p" / "h2" / "terminal.log").read_text()
    down = "ifb0: <BROADCAST,NOARP> mtu 1500 qdisc pfifo_fast state DOWN mode DEFAULT group default qlen 32"
    assert down in log, log
    assert re.search(r"ifb0 +UNKNOWN +02:00", log), log
    assert "RTNETLINK answers: File exists" in log
    # the echo requests went through the ifb's tbf (ARP, protocol ip, did not)
    tbf = r"qdisc tbf 8001: root refcnt 2 rate 1Mbit burst 5Kb lat 50.0ms \n Sent 294 bytes 3 pkt"
    assert re.search(tbf, log), log
    assert "qdisc ingress ffff: parent ffff:fff1 ---------------- \n" in log
    assert "3 received" in (tmp_path / "out" / "ifb" / "p" / "h1" / "terminal.log").read_text()


# ------------------------------------------------------------------ the lesson


def _pings(log: str) -> list[float]:
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", log)]


@pytest.fixture(scope="module")
def lesson(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ifb")
    run_scenario(load_scenario(ROOT / "scenarios" / "home-link-ifb.toml"), results_root=root, progress=False)
    return root / "home-link-ifb"


def test_shaping_both_directions_keeps_the_latency_low(lesson: Path):
    rtt = {
        p: statistics.median(_pings((lesson / p / "h1" / "terminal.log").read_text()))
        for p in ("bloated", "egress-only", "sqm")
    }
    # idle RTT 20 ms; the ISP's 250 ms queues fill in both directions
    assert rtt["bloated"] > 200, rtt
    # egress shaping empties the upload queue; the download one still fills
    assert rtt["egress-only"] > 150, rtt
    # with the ingress side shaped through the ifb the RTT stays near the idle one
    assert rtt["sqm"] < 45, rtt
    show = (lesson / "sqm" / "admin" / "terminal.log").read_text()
    m = re.search(
        r"qdisc ingress ffff: parent ffff:fff1 ---------------- \n Sent (\d+) bytes (\d+) pkt", show
    )
    assert m and int(m[2]) > 10000, show
    assert "qdisc fq_codel" in show and "qdisc tbf 1: root" in show


def test_both_transfers_go_on_at_the_shaped_rates(lesson: Path):
    log = (lesson / "sqm" / "h1" / "terminal.log").read_text()
    rates = [float(x) for x in re.findall(r"([\d.]+) Mbits/sec\s+receiver", log)]
    assert len(rates) == 2, log
    up, down = sorted(rates)
    assert 3.8 < up < 4.6, rates
    assert 15.5 < down < 18.1, rates


def test_mirror_and_tcpdump_on_the_ifb(tmp_path: Path):
    """``mirred egress mirror`` (act_mirred.c: a clone to the target's transmit path, the
    packet goes on with pipe) to an ifb, whose ``ifb_xmit`` drops a copy nothing redirected;
    ``tcpdump -i ifb0`` sees every packet the ifb's qdisc releases (``dev_queue_xmit_nit``
    before ``ifb_xmit``), copies and redirected packets alike."""
    for how in ("mirror", "redirect"):
        sc = tmp_path / f"{how}.toml"
        sc.write_text(f"""name = "{how}"
[sim]
profile = "modern"
{TWO_HOSTS}
[[part]]
name = "p"
cmds = [
  "h2: ip link add ifb0 type ifb; ip link set dev ifb0 up",
  "h2: tc qdisc add dev h2-eth0 ingress; tc qdisc add dev ifb0 root tbf rate 1mbit burst 5k latency 50ms",
  "h2: tc filter add dev h2-eth0 parent ffff: protocol ip u32 match ip dst 10.0.0.2/32 action mirred egress {how} dev ifb0",
  "h2: tcpdump -i ifb0 -w ifb.pcap &",
  "h1: ping -c 3 -i 0.2 10.0.0.2",
  "h2: sleep 1; tc -s filter show dev h2-eth0 ingress; tc -s qdisc show dev ifb0; ip -s link show ifb0",
]
""")
        run_scenario(load_scenario(sc), results_root=tmp_path / "out", progress=False)
    for how, verdict, rx, tx in (("mirror", "Mirror", 3, 0), ("redirect", "Redirect", 3, 3)):
        part = tmp_path / "out" / how / "p"
        assert "3 received" in (part / "h1" / "terminal.log").read_text()
        log = (part / "h2" / "terminal.log").read_text()
        stolen = "pipe" if how == "mirror" else "stolen"
        assert f"mirred (Egress {verdict} to device ifb0) {stolen}\n" in log, log
        # the echo requests: 84 bytes at the hook, 98 with the Ethernet header on the ifb
        assert "\tSent 252 bytes 3 pkt (dropped 0, overlimits 0 requeues 0) \n" in log, log
        assert re.search(r"qdisc tbf 8001: root refcnt 2 .*\n Sent 294 bytes 3 pkt", log), log
        counters = re.search(r"RX: .*\n +(\d+) +(\d+) .*\n.*TX: .*\n +(\d+) +(\d+)", log)
        assert counters is not None, log
        assert (int(counters[2]), int(counters[4])) == (rx, tx), log
        assert "3 packets captured" in log
        seen = frames(part / "h2" / "ifb.pcap")
        assert [(f.src, f.dst, f.proto) for f in seen] == [("10.0.0.1", "10.0.0.2", 1)] * 3
