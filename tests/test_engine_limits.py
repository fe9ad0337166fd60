"""Issue 30, items 5, 6 and 8: the engine can always be stopped, resources are bounded
before they are allocated (``check`` refuses what ``run`` would), and ping's icmp_seq
wraps as in iputils. Every refusal names FILE:LINE:COL, exits 2 and prints no traceback."""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path

import pytest

from bufferlab import _core
from bufferlab.cli import main
from bufferlab.outputs.topology_svg import _Boxes, _crosses, _overlap, _Segments
from bufferlab.run.engine import Engine, TcFailure
from conftest import TWO_HOSTS

TOPO = ("""name = "t"
{sim}
""" + TWO_HOSTS + """
[[part]]
name = "p"
{part}
cmds = [
{cmds}
]
""")
Cap = pytest.CaptureFixture[str]


def scenario(tmp_path: Path, *cmds: str, sim: str = "", part: str = "") -> Path:
    body = ",\n".join("  " + json.dumps(c) for c in cmds)
    p = tmp_path / "t.toml"
    p.write_text(TOPO.format(sim=sim, part=part, cmds=body), encoding="utf-8")
    return p


def both(tmp_path: Path, p: Path, capsys: Cap) -> tuple[str, str]:
    """``check`` and ``run`` of ``p``: both exit 2; their messages."""
    errs = []
    for args in (["check", str(p)], ["run", "-q", "-o", str(tmp_path / "out"), str(p)]):
        status = main(args)
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert status == 2, (args[0], err)
        errs.append(err)
    return errs[0], errs[1]


def col_of(p: Path, needle: str) -> str:
    """``t.toml:LINE:COL`` of the first ``needle`` in the file (1-based, as errors print it)."""
    for i, line in enumerate(p.read_text().splitlines(), 1):
        if needle in line:
            return f"t.toml:{i}:{line.index(needle) + 1}"
    raise AssertionError(needle)


# ---------------------------------------------------------------- item 5: the nested duplicating netem

NESTED = ("admin: tc qdisc add dev s1-eth2 root handle 1: netem duplicate 100%",
          "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: netem duplicate 100%",
          "h1: ping 10.0.0.2 -c 2")


def test_nested_duplicating_netems_are_refused_at_check_and_run(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, *NESTED)
    for err in both(tmp_path, p, capsys):
        second = col_of(p, NESTED[1]).split(":")[1]
        assert re.search(
            rf"t\.toml:{second}:\d+: error: tc: Error: netem: cannot mix duplicating "
            r"netems with other netems in tree\. \(RTNETLINK answers: Invalid argument\)",
            err,
        ), err
        assert "    tc qdisc add dev s1-eth2 parent 1: handle 2: netem duplicate 100%" in err
        assert "sch_netem.c" in err


@pytest.mark.parametrize("lines", [
    # a plain netem next to a duplicating one, either order, with a tbf between
    ("admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms",
     "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1mbit burst 10k limit 30k",
     "admin: tc qdisc add dev s1-eth2 parent 2: handle 3: netem duplicate 5%"),
    ("admin: tc qdisc add dev s1-eth2 root handle 1: netem duplicate 5%",
     "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: netem delay 10ms"),
    # a change that makes one of two netems duplicate
    ("admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms",
     "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: netem delay 1ms",
     "admin: tc qdisc change dev s1-eth2 handle 2: netem delay 1ms duplicate 1%"),
])
def test_a_duplicating_netem_shares_no_tree_with_another_netem(tmp_path: Path, capsys: Cap,
                                                                lines: tuple[str, ...]) -> None:
    p = scenario(tmp_path, *lines)
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = col_of(p, lines[-1].split(": ", 1)[1]).split(":")[1]
    assert re.search(rf"t\.toml:{line}:\d+: error: tc: Error: netem: cannot mix", err), err


def test_one_duplicating_netem_per_device_still_runs(tmp_path: Path, capsys: Cap) -> None:
    # the lab case: one netem with duplication, and netems on other devices
    p = scenario(tmp_path,
                 "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 1ms duplicate 100%",
                 "admin: tc qdisc add dev s1-eth1 root handle 1: netem delay 1ms",
                 "admin: tc qdisc del dev s1-eth2 root",
                 "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 1ms",
                 "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: netem delay 1ms",
                 "h1: ping 10.0.0.2 -c 2")
    assert main(["run", "-q", "-o", str(tmp_path / "out"), str(p)]) == 0, capsys.readouterr().err


def test_the_engine_refuses_the_nested_netem_itself() -> None:
    # a Mininet script's tc goes straight to the engine: the same refusal, tc's text
    eng = Engine({"seed": 1, "nodes": [{"name": "h1", "kind": "host"}, {"name": "s1", "kind": "switch"}],
                  "links": [{"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"},
                             "b": {"node": "s1", "intf": "s1-eth1"}}]})
    netem = {"kind": "netem", "limit": 1000, "latency": 0, "jitter": 0,
             "loss": {"model": "random", "p": 0}, "gap": 0, "duplicate": 4294967295}
    eng.tc({"verb": "add", "dev": "s1-eth1", "parent": "root", "handle": 1, "qdisc": netem})
    with pytest.raises(TcFailure) as e:
        eng.tc({"verb": "add", "dev": "s1-eth1", "parent": {"class": {"major": 1, "minor": 0}},
                "handle": 2, "qdisc": netem})
    assert str(e.value) == ("Error: netem: cannot mix duplicating netems with other netems in tree.\n"
                            "RTNETLINK answers: Invalid argument")


def test_a_run_stuck_at_one_instant_stops_naming_the_component(tmp_path: Path, capsys: Cap) -> None:
    # the cap on work at one instant, reached through the engine directly: 1-byte datagrams at
    # u64::MAX bit/s all fall on one nanosecond (the command parser refuses such a rate)
    sim = _core.Simulator(
        json.dumps(
            {
                "seed": 1,
                "nodes": [
                    {"name": "h1", "kind": "host"},
                    {"name": "h2", "kind": "host"},
                    {"name": "s1", "kind": "switch"},
                ],
                "links": [
                    {
                        "a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"},
                        "b": {"node": "s1", "intf": "s1-eth1"},
                    },
                    {
                        "a": {"node": "s1", "intf": "s1-eth2"},
                        "b": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"},
                    },
                ],
                "options": {"host_cost": {"packet_ns": 0, "byte_ps": 0, "wakeup_ns": 0}},
            }
        )
    )
    # a delay line in front, so nothing crosses the network at that instant
    sim.tc(json.dumps({"verb": "add", "dev": "h1-eth0", "parent": "root", "handle": 1,
                       "qdisc": {"kind": "netem", "limit": 1000, "latency": 10**6, "jitter": 0,
                                 "loss": {"model": "random", "p": 0}, "gap": 0, "duplicate": 0}}))
    sim.start_app("h1", json.dumps({"kind": "udp_source", "pattern": "cbr", "dst": "10.0.0.2", "port": 9,
                                    "rate_bps": 2**64 - 1, "size": 1, "duration_ns": 10**9}))
    t0 = time.perf_counter()
    with pytest.raises(_core.StalledError) as e:
        sim.run(10**9)
    assert time.perf_counter() - t0 < 60
    assert re.match(
        r"simulated time stopped advancing at 0(\.0+)?\S*: more than 10000000 events in that "
        r"one instant, the last of them in application 0 \(udp_source\) on h1",
        str(e.value),
    ), e.value


# ---------------------------------------------------------------- item 6: bounds before allocation


@pytest.mark.parametrize("cmd,needle", [
    ("h1: cbr -c 10.0.0.2 -u -r 1e15 -t 0.01", "cbr: -r 1e15 sends a 1448-byte datagram every 0.0116 ns"),
    ("h1: poisson -c 10.0.0.2 -u -r 1T -t 1 -l 100", "poisson: -r 1T sends a 100-byte datagram every 0.8 ns"),
    ("h1: onoff -c 10.0.0.2 -u -r 1e14 -t 1", "onoff: -r 1e14 sends a 1448-byte datagram every 0.116 ns"),
])
def test_a_rate_finer_than_the_clock_is_refused_at_its_word(tmp_path: Path, capsys: Cap, cmd: str,
                                                            needle: str) -> None:
    p = scenario(tmp_path, "h2: sink -u &", cmd)
    rate = cmd.split("-r ")[1].split()[0]
    for err in both(tmp_path, p, capsys):
        line, col = col_of(p, rate).split(":")[1:]
        assert f"t.toml:{line}:{col}: error: {needle}" in err, err
        assert "at most one datagram per nanosecond" in err


def test_a_host_sending_faster_than_its_stack_ends_the_part_with_an_error(
    tmp_path: Path, capsys: Cap
) -> None:
    # 1 Tbit/s of 1448-byte datagrams (86 M/s) against a stack of ~3·10⁵/s: after 1 s of
    # backlog the run stops instead of queueing 10⁸ packets
    # backlog the run stops instead of queueing 10⁸ packets (no -t: only the run can tell)
    p = scenario(tmp_path, "h2: sink -u &", "h1: cbr -c 10.0.0.2 -u -r 1T", part='duration = "10s"')
    status = main(["run", "-q", "-o", str(tmp_path / "out"), str(p)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert status == 2, err
    assert re.search(r"t\.toml:\d+: error: part 'p': h1's applications send more packets than its network "
                     r"stack can process", err), err
    assert re.search(r"t\.toml:\d+:\d+: cbr -c 10\.0\.0\.2 -u -r 1T", err), err


@pytest.mark.parametrize(
    "cmd,needle",
    [
        (
            "h1: cbr -c 10.0.0.2 -u -r 1T -t 10",
            "cbr: -r 1T offers 86,325,967 datagrams/s, more than a host's stack "
            "processes (316,566/s of 1490-byte frames): over 10 s it would fall 2.72e+03 s behind",
        ),
        ("h1: poisson -c 10.0.0.2 -u -r 4.1G -t 10", "poisson: -r 4.1G offers"),
        (
            "h1: cbr -c 10.0.0.2 -u -r 10G -n 10G",
            "cbr: -r 10G offers 863,260 datagrams/s, more than a host's stack "
            "processes (316,566/s of 1490-byte frames): over 8.59 s it would fall 14.8 s behind",
        ),
    ],
)
def test_a_generator_its_host_cannot_keep_up_with_is_refused_at_check(tmp_path: Path, capsys: Cap,
                                                                      cmd: str, needle: str) -> None:
    p = scenario(tmp_path, "h2: sink -u &", cmd)
    rate = cmd.split("-r ")[1].split()[0]
    for err in both(tmp_path, p, capsys):
        line, col = col_of(p, "-r " + rate).split(":")[1:]
        assert f"t.toml:{line}:{int(col) + 3}: error: {needle}" in err, err
        assert "it may fall at most 1 s behind" in err


def test_a_generator_just_within_its_hosts_stack_runs(tmp_path: Path, capsys: Cap) -> None:
    # 4 Gbit/s of 1448-byte datagrams: 345 304/s against 316 566/s, 0.9 s behind after 10 s
    p = scenario(tmp_path, "h2: sink -u &", "h1: cbr -c 10.0.0.2 -u -r 4G -t 10")
    assert main(["run", "-q", "--no-report", "-o", str(tmp_path / "out"), str(p)]) == 0, (
        capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "cmd,part,needle",
    [
        (
            "h1: flows -c 10.0.0.2 --rate 1000000/s --size exp:mean=100k -t 10",
            "",
            "flows: --rate 1000000/s for -t 10 s would start about 10,000,000 flows",
        ),
        (
            "h1: flows -c 10.0.0.2 --rate 1000/s --size exp:mean=100k",
            "",
            "flows: --rate 1000/s until its part ends (stop_at = 3600 s) would start about 3,600,000 flows",
        ),
        (
            "h1: flows -c 10.0.0.2 --rate 100k/s --size fixed:1k",
            'duration = "30s"',
            "flows: --rate 100k/s until its part ends (duration = 30 s) would start about 3,000,000 flows",
        ),
    ],
)
def test_flow_arrivals_are_bounded_at_check_time(tmp_path: Path, capsys: Cap, cmd: str, part: str,
                                                 needle: str) -> None:
    p = scenario(tmp_path, "h2: flows -s &", cmd, part=part)
    rate = cmd.split("--rate ")[1].split()[0]
    for err in both(tmp_path, p, capsys):
        line, col = col_of(p, rate).split(":")[1:]
        assert f"t.toml:{line}:{col}: error: {needle}" in err, err
        assert "at most 1,000,000 flows per flows command" in err


def test_flows_within_the_bound_still_check(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "h2: flows -s &", "h1: flows -c 10.0.0.2 --rate 270/s --size fixed:1k")
    assert main(["check", str(p)]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- item 8: ping's icmp_seq wraps


def test_ping_past_65536_requests_has_no_false_duplicates_or_loss(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "h1: ping 10.0.0.2 -c 70000 -i 0.001 -q")
    assert main(["run", "-q", "-o", str(tmp_path / "out"), str(p)]) == 0, capsys.readouterr().err
    log = (tmp_path / "out/t/p/h1/terminal.log").read_text()
    assert "70000 packets transmitted, 70000 received, 0% packet loss" in log, log[-500:]
    assert "duplicates" not in log


# ---------------------------------------------------------------- the report's topology at scale


def test_the_topology_drawings_box_index_answers_as_a_scan() -> None:
    # label placement asks "does this box overlap any placed box?" once per candidate spot;
    # the grid index must answer exactly as the scan over every box did
    rng = random.Random(7)
    placed: list[tuple[float, float, float, float]] = []
    index = _Boxes()
    for _ in range(3000):
        x, y = rng.uniform(-50, 3000), rng.uniform(-50, 3000)
        b = (x, y, x + rng.uniform(0, 400), y + rng.uniform(0, 40))
        assert index.overlaps(b) == any(_overlap(b, o) for o in placed)
        if rng.random() < 0.5:
            placed.append(b)
            index.add(b)


def test_an_interface_name_given_twice_is_still_refused(tmp_path: Path, capsys: Cap) -> None:
    # the per-node name check is a set lookup now (a 20 000-port switch was quadratic)
    p = tmp_path / "t.toml"
    p.write_text('name = "t"\n[topology]\nhosts = ["h1", "h2"]\nswitches = ["s1"]\n'
                 'links = [{a = "h1", b = "s1", b_intf = "s1-x"}, {a = "h2", b = "s1", b_intf = "s1-x"}]\n'
                 '[[part]]\nname = "p"\ncmds = ["h1: ping 10.0.0.2 -c 1"]\n', encoding="utf-8")
    assert main(["check", str(p)]) == 2
    err = capsys.readouterr().err
    assert "s1 has two interfaces named 's1-x'" in err, err


@pytest.mark.parametrize(
    "cmd,needle",
    [
        (
            "h1: ping 10.0.0.2 -i 0.001 &",
            "ping could keep up to 3,600,001 replies: one every -i 0.001 s for 3600 s "
            "(until the scenario ends)",
        ),
        ("h1: ping 10.0.0.2 -c 2000000 -i 0.0001", "ping could keep up to 2,000,000 replies"),
        (
            "h1: ping 10.0.0.2 -i 0.0001 -w 1000",
            "ping could keep up to 10,000,001 replies: one every -i 0.0001 s for 1000 s (-w)",
        ),
    ],
)
def test_ping_replies_are_bounded_at_check_time(tmp_path: Path, capsys: Cap, cmd: str, needle: str) -> None:
    p = scenario(tmp_path, cmd, "h2: ping 10.0.0.1 -c 1")
    interval = cmd.split("-i ")[1].split()[0]
    for err in both(tmp_path, p, capsys):
        line, col = col_of(p, interval).split(":")[1:]
        assert f"t.toml:{line}:{col}: error: {needle}" in err, err
        assert "at most 1,000,000 replies per ping" in err


def test_pings_within_the_bound_still_check(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "h1: ping 10.0.0.2 -i 0.001 -w 100", "h1: ping 10.0.0.2 -c 1000000 -i 0.0001")
    assert main(["check", str(p)]) == 0, capsys.readouterr().err


# ---------------------------------------------------------------- limits where time stands still


def test_max_wall_holds_inside_one_instant(tmp_path: Path, capsys: Cap) -> None:
    # TCP on a zero-RTT path moves data at t = 0 until the engine's 2·10⁶-packet cap (exit 2);
    # the instant a line starts is run in stretches too, so --max-wall ends it first (exit 3)
    p = scenario(tmp_path, "h2: sink &", "h1: bulk -c 10.0.0.2 -t 100",
                 sim="[sim]\nhost_packet_ns = 0\nhost_byte_ps = 0\nhost_wakeup_ns = 0")
    status = main(["run", "-q", "--no-report", "--max-wall", "0.05", "-o", str(tmp_path / "out"), str(p)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert status == 3, err
    assert "--max-wall 0.05 s reached" in err
    summary = json.loads((tmp_path / "out/t/summary.json").read_text())
    assert "--max-wall" in summary["stopped"]


def test_the_topology_drawings_link_index_answers_as_a_scan() -> None:
    # "does a link's line cross this card?" once per card spot, through the grid of cells
    # each line passes through: the same answers as testing every link
    rng = random.Random(11)
    nodes = [f"n{i}" for i in range(60)]
    pos = {n: (rng.uniform(0, 3000), rng.uniform(0, 3000)) for n in nodes}
    pos["n0"] = pos["n1"][0], 500.0  # a vertical and a horizontal line
    pos["n2"] = 700.0, pos["n3"][1]
    links = [(a, b) for a, b in zip(nodes, nodes[1:] + nodes[:1], strict=True)] + [("n0", "n1"), ("n2", "n3")]
    segs = [((pos[a], pos[b]), (a, b)) for a, b in links]
    index = _Segments(segs)
    for _ in range(3000):
        x, y = rng.uniform(-100, 3100), rng.uniform(-100, 3100)
        box = (x, y, x + rng.uniform(1, 300), y + rng.uniform(1, 80))
        skip = rng.choice([None, *nodes])
        brute = any(_crosses(box, seg) for seg, ends in segs if skip not in ends)
        assert index.crosses(box, skip) == brute
