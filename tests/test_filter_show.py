"""``tc filter show`` (python/bufferlab/commands/tc/filter_show.py over the engine's dump,
crates/bufferlab-core/src/qdisc/filter_show.rs): the text byte for byte against captures of the
real ``tc`` and hand-derived vectors, the parser's errors, and the action counters after traffic.

The captures in tests/data/tc_filter_show/ are iproute2 6.1 on a Linux 6.18 kernel (u32, mirred,
ingress, clsact, htb and ifb built; no matchall, police, gact or prio), taken in a network
namespace with a veth ``x`` and an ``ifb0``: each ``tc`` line as typed, each ``$ tc … show``
followed by what it printed (a second's pause after every ``del``: the kernel frees a deleted
filter's actions after an RCU grace period, and an index is free again only then). iproute2 6.1
prints ``*flowid`` for a terminal selector (its inverted test, fixed by iproute2 commit
2854d69a "u32: fix TC_U32_TERMINAL printing" before 6.9); the ``modern`` profile is 6.9 and
later, so the comparison reads the captures with that one fix.

Run from the repository root: PYTHONPATH=python python -m pytest tests/test_filter_show.py -q
"""

from __future__ import annotations

import re

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.shell import parse_shell
from bufferlab.commands.tc import parse_tc
from bufferlab.commands.tc.filter_show import TcFilterShow, filter_show_text
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from conftest import ROOT, TWO_HOSTS, TcEngine

DATA = ROOT / "tests" / "data" / "tc_filter_show"


def parse(line: str, profile: TcEngine):
    return parse_tc(parse_shell(line)[0].commands[0].words, Diagnostics(), profile.profile)


def show(t: TcEngine, line: str) -> str:
    p = parse(line, t)
    assert isinstance(p, TcFilterShow)
    assert p.dev is not None
    return filter_show_text(t.engine.filter_show(p.dev, p.parent), p, t.profile.tc_modern_print)


def engine(profile: str = "modern") -> TcEngine:
    t = TcEngine(profile)
    t.engine.add_ifb("h1", "ifb0")
    return t


def replay(name: str) -> list[tuple[str, str, str]]:
    """(show line, what the real tc printed, what bufferlab prints) for each show of a capture."""
    t = engine()
    out = []
    lines = (DATA / f"{name}.txt").read_text().splitlines(keepends=True)
    k = 0
    while k < len(lines):
        line = lines[k].rstrip("\n")
        k += 1
        if not line.startswith("$ "):
            t(line)
            continue
        expected = []
        while k < len(lines) and not lines[k].startswith(("$ ", "tc ")):
            expected.append(lines[k])
            k += 1
        real = "".join(expected).replace("*flowid", "flowid")
        out.append((line[2:], real, show(t, line[2:])))
    return out


@pytest.mark.parametrize("name", ["classful", "ingress", "clsact"])
def test_show_matches_the_real_tc(name: str):
    shows = replay(name)
    assert shows
    for line, real, ours in shows:
        assert ours == real, line


POLICE_MATCHALL = [
    "tc qdisc add dev x ingress",
    "tc filter add dev x parent ffff: protocol all prio 2 matchall action police rate 1mbit burst 10k mtu 2k drop "
    "action mirred egress redirect dev ifb0",
    "tc filter add dev x parent ffff: protocol ip prio 3 u32 match ip dst 10.0.0.2/32 "
    "action police rate 2mbit burst 20k conform-exceed continue/pipe action drop",
]


def test_matchall_police_and_gact_modern():
    """Hand-derived from iproute2 6.9: matchall_print_opt (``handle 0x1``, ``\\n  not_in_hw``),
    print_police (a leading space, ``burst`` from the kernel's ticks, the conform verdict after a
    ``/`` as it is not pass, ``\\tref 1 bind 1 `` with its space), print_mirred, print_gact with
    CONFIG_GACT_PROB's ``random type none pass val 0``; each printer ends its line and
    tc_dump_action starts the next action on a new one; police and gact number their own
    indexes from 1."""
    t = engine()
    for line in POLICE_MATCHALL:
        t(line)
    head2 = "filter parent ffff: protocol all pref 2 matchall chain 0 "
    head3 = "filter parent ffff: protocol ip pref 3 u32 chain 0 "
    assert show(t, "tc filter show dev x ingress") == (
        f"{head2}\n"
        f"{head2}handle 0x1 \n  not_in_hw\n"
        "\taction order 1:  police 0x1 rate 1Mbit burst 10Kb mtu 2Kb action drop overhead 0b \n"
        "\tref 1 bind 1 \n\n"
        "\taction order 2: mirred (Egress Redirect to device ifb0) stolen\n"
        "\tindex 1 ref 1 bind 1\n\n"
        f"{head3}\n"
        f"{head3}fh 800: ht divisor 1 \n"
        f"{head3}fh 800::800 order 2048 key ht 800 bkt 0 terminal flowid not_in_hw \n"
        "  match 0a000002/ffffffff at 16\n"
        "\taction order 1:  police 0x2 rate 2Mbit burst 20Kb mtu 2Kb action continue/pipe overhead 0b \n"
        "\tref 1 bind 1 \n\n"
        "\taction order 2: gact action drop\n"
        "\t random type none pass val 0\n"
        "\t index 1 ref 1 bind 1\n\n"
    )


def test_lab2019_prints_as_iproute2_4_15():
    """iproute2 4.15: ``terminal flowid ???``, mirred's `` \\tindex`` line and trailing ``\\n ``,
    police's ``ref 1 bind 1`` without a trailing space, no ``rule hit`` on matchall."""
    t = engine("lab2019")
    for line in POLICE_MATCHALL:
        t(line)
    out = show(t, "tc -s filter show dev x ingress")
    assert "matchall chain 0 handle 0x1 \n  not_in_hw\n\taction order 1:  police 0x1 " in out
    assert "overhead 0b \n\tref 1 bind 1\n\tAction statistics:\n" in out
    assert "stolen\n \tindex 1 ref 1 bind 1\n \tAction statistics:\n" in out
    assert "key ht 800 bkt 0 terminal flowid ??? not_in_hw \n" in out


def test_show_line_parsing():
    t = engine()
    p = parse("tc -s filter ls dev x parent ffff:fff3 pref 4 protocol all chain 0", t)
    assert (p.dev, p.parent, p.prio, p.protocol, p.stats) == ("x", 0xFFFFFFF3, 4, "all", True)
    assert parse("tc filter", t) == TcFilterShow()
    assert parse("tc filter show dev x root", t).parent == 0xFFFFFFFF
    with pytest.raises(CommandError, match='"egress" is duplicate parent ID') as e:
        parse("tc filter show dev x ingress egress", t)
    assert e.value.col == 29  # the second parent word
    with pytest.raises(CommandError, match='What is "flowid"'):
        parse("tc filter show dev x flowid 1:1", t)
    with pytest.raises(CommandError, match="invalid parent ID"):
        parse("tc filter show dev x parent 1", t)
    with pytest.raises(NotSupportedError, match="chain N"):
        parse("tc filter show dev x chain 1", t)
    with pytest.raises(NotSupportedError, match='"handle" is not supported yet'):
        parse("tc filter show dev x handle 800::800", t)
    with pytest.raises(NotSupportedError, match="-p filter show"):
        parse("tc -p filter show dev x", t)


def test_counters_after_a_download_through_the_ifb(tmp_path):
    """Ingress shaping: h2's receive hook sends what is for 10.0.0.2 through ifb0's tbf. The
    mirred counts the packets the filter matched, the same ones the hook's qdisc counts (``Sent``
    of ``tc -s qdisc show … ingress``) and, every one redirected, the ifb's tbf; the
    never-matching filter's actions count nothing. Ages: installed at 0 s, shown at 3 s or
    later (``installed 3 sec``), used by the last echo request."""
    sc = tmp_path / "f.toml"
    sc.write_text(f"""name = "f"
[sim]
profile = "modern"
{TWO_HOSTS}
[[part]]
name = "p"
cmds = [
  "h2: ip link add ifb0 type ifb; ip link set dev ifb0 up",
  "h2: tc qdisc add dev h2-eth0 ingress; tc qdisc add dev ifb0 root tbf rate 1mbit burst 5k latency 50ms",
  "h2: tc filter add dev h2-eth0 parent ffff: protocol ip prio 1 u32 match ip src 10.9.0.0/16 action drop",
  "h2: tc filter add dev h2-eth0 parent ffff: protocol ip prio 2 u32 match ip dst 10.0.0.2/32 action mirred egress redirect dev ifb0",
  "h1: ping -c 5 -i 0.2 10.0.0.2",
  "h2: sleep 3; tc -s filter show dev h2-eth0 ingress; tc -s qdisc show dev h2-eth0; tc -s qdisc show dev ifb0",
]
""")
    run_scenario(load_scenario(sc), results_root=tmp_path / "out", progress=False)
    log = (tmp_path / "out" / "f" / "p" / "h2" / "terminal.log").read_text()
    hook = re.search(r"qdisc ingress ffff: parent ffff:fff1 ---------------- \n Sent (\d+) bytes (\d+) pkt", log)
    tbf = re.search(r"qdisc tbf 8001: root refcnt 2 .*\n Sent (\d+) bytes (\d+) pkt", log)
    assert hook and tbf, log
    # every frame in: the echo requests (84 bytes at the hook, without the Ethernet header)
    # and h1's ARP request (28), which no filter of protocol ip sees
    assert (int(hook[1]), int(hook[2])) == (5 * 84 + 28, 6)
    sent, pkts = 5 * 84, 5
    # redirected with the Ethernet header pushed back: 98 bytes each on the ifb
    assert (int(tbf[1]), int(tbf[2])) == (5 * 98, 5)
    drop, mirred = re.findall(r"\tSent (\d+) bytes (\d+) pkt \(dropped (\d+)", log)
    assert drop == ("0", "0", "0")
    assert mirred == (str(sent), str(pkts), "0")
    assert "Egress Redirect to device ifb0" in log
    assert re.search(r"\tindex 1 ref 1 bind 1 installed 3 sec used \d sec firstused \d sec\n", log), log
