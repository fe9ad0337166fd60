"""bufferlab.mininet: Mininet's Python API in simulated time (issue 15 items 1-3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bufferlab.commands.tc.registry import QDISC_KINDS
from bufferlab.mininet import clock
from bufferlab.mininet.link import TCIntf, TCLink
from bufferlab.mininet.log import setLogLevel
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.node import Host
from bufferlab.mininet.session import MininetError
from bufferlab.mininet.topo import LinearTopo, SingleSwitchTopo
from bufferlab.mininet.topolib import TreeTopo
from bufferlab.scenario.mn_file import load_mn

HTB = pytest.mark.skipif("htb" not in QDISC_KINDS, reason="HTB not merged yet")


@pytest.fixture(autouse=True)
def results(tmp_path, monkeypatch):
    """Results in a temporary folder; a network left running by a failed test is stopped."""
    monkeypatch.setattr(Mininet, "results_root", tmp_path)
    setLogLevel("output")
    yield tmp_path
    if clock._session is not None:
        clock._session.close()
        clock.attach(None)


def _net(**kw) -> Mininet:
    net = Mininet(**kw)
    net.start()
    return net


def test_linear3_pingall_prints_mininets_lines(capsys):
    net = _net(topo=LinearTopo(3))
    assert net.pingAll() == 0.0
    net.stop()
    assert capsys.readouterr().out.splitlines() == [
        "*** Ping: testing ping reachability",
        "h1 -> h2 h3 ",
        "h2 -> h1 h3 ",
        "h3 -> h1 h2 ",
        "*** Results: 0% dropped (6/6 received)",
    ]


def test_names_addresses_and_interfaces_follow_mininet():
    net = _net(topo=TreeTopo(depth=2, fanout=2), autoSetMacs=True)
    assert [h.name for h in net.hosts] == ["h1", "h2", "h3", "h4"]
    assert [s.name for s in net.switches] == ["s1", "s2", "s3"]
    h4 = net.get("h4")
    assert (h4.IP(), h4.MAC(), h4.defaultIntf().name) == ("10.0.0.4", "00:00:00:00:00:04", "h4-eth0")
    assert net["s1"].intfNames() == ["s1-eth1", "s1-eth2"]
    assert net.get("s2").intfNames() == ["s2-eth1", "s2-eth2", "s2-eth3"]
    net.stop()


def test_cmd_returns_when_the_line_ends_in_simulated_time():
    net = _net(topo=SingleSwitchTopo(2))
    h1, h2 = net.get("h1", "h2")
    t0 = clock.time()
    out = h1.cmd("ping -c 3", h2.IP())
    assert "3 packets transmitted, 3 received" in out
    assert 2.0 <= clock.time() - t0 < 2.1  # three pings one second apart
    assert h1.cmd("ping -c 100 10.0.0.2 &") == ""  # returns at once
    assert clock.time() - t0 < 2.1
    clock.sleep(1.5)
    assert 3.5 <= clock.time() - t0 < 3.6
    net.stop()


def test_popen_like_subprocess():
    net = _net(topo=SingleSwitchTopo(2))
    p = net.get("h1").popen("ping -c 2 10.0.0.2")
    assert p.poll() is None and p.returncode is None
    out, err = p.communicate()
    assert "2 received" in out and err == "" and p.returncode == 0
    net.stop()


def test_endless_cmd_is_an_error_not_a_hang():
    net = _net(topo=SingleSwitchTopo(2))
    with pytest.raises(MininetError, match="runs until interrupted"):
        net.get("h1").cmd("ping 10.0.0.2")
    net.stop()


@pytest.mark.parametrize("params, lines, said", [
    ({"bw": 10, "use_tbf": True},
     ["tc qdisc add dev h1-eth0 root handle 5: tbf rate 10.000000Mbit burst 15000 latency 12.000000ms"],
     "(10.00Mbit) "),
    ({"bw": 10}, ["tc qdisc add dev h1-eth0 root handle 5:0 htb default 1",
                  "tc class add dev h1-eth0 parent 5:0 classid 5:1 htb rate 10.000000Mbit burst 15k"],
     "(10.00Mbit) "),
    ({"delay": "5ms", "max_queue_size": 100},
     ["tc qdisc add dev h1-eth0  root  handle 10: netem delay 5ms limit 100"], "(5ms delay) "),
    ({"bw": 2, "use_tbf": True, "enable_ecn": True, "loss": 1, "jitter": "1ms", "delay": "2ms"},
     ["tc qdisc add dev h1-eth0 root handle 5: tbf rate 2.000000Mbit burst 15000 latency 60.000000ms",
      "tc qdisc add dev h1-eth0 parent 5:1 handle 6: red limit 1000000 min 30000 max 35000 avpkt 1500 "
      "burst 20 bandwidth 2.000000mbit probability 1 ecn",
      "tc qdisc add dev h1-eth0  parent 6:  handle 10: netem delay 2ms 1ms loss 1.00000 "],
     "(2.00Mbit 2ms delay 1ms jitter 1.00000% loss ECN) "),
])
def test_tcintf_lines_are_mininets(params, lines, said):
    intf = TCIntf("h1-eth0", Host("h1"))
    assert intf.tc_lines(**params) == (lines, said)


def test_bw_above_1000_is_ignored_with_mininets_message(capsys):
    intf = TCIntf("h1-eth0", Host("h1"))
    netem = "tc qdisc add dev h1-eth0  root  handle 10: netem delay 1ms "
    assert intf.tc_lines(bw=2000, delay="1ms")[0] == [netem]
    assert "Bandwidth limit 2000 is outside supported range 0..1000 - ignoring\n" in capsys.readouterr().out


def test_no_shaping_option_changes_nothing():
    intf = TCIntf("h1-eth0", Host("h1"))
    assert intf.plan() is None
    assert intf.plan(use_tbf=True, enable_red=True) is None


def test_tclink_tbf_tree_on_both_ends():
    net = Mininet(topo=SingleSwitchTopo(2))
    net.addHost("h3")
    net.addLink("h3", "s1", cls=TCLink, bw=10, delay="5ms", max_queue_size=50, use_tbf=True)
    net.start()
    tree = ["qdisc tbf 5: root refcnt 2 rate 10Mbit burst 15000b lat 12.0ms ",
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) ",
            " backlog 0b 0p requeues 0",
            "qdisc netem 10: parent 5:1 limit 50 delay 5.0ms",
            " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) ",
            " backlog 0b 0p requeues 0"]
    assert net.get("h3").cmd("tc -s qdisc show dev h3-eth0").splitlines() == tree
    assert net.get("s1").cmd("tc -s qdisc show dev s1-eth3").splitlines() == tree
    rtt = net.get("h3").cmd("ping -c 3 10.0.0.1")
    assert "rtt min/avg/max/mdev = 10.0" in rtt  # 5 ms netem on each end, no shaping on h1's link
    net.stop()


@HTB
def test_tclink_default_htb_tree():
    net = _net(topo=SingleSwitchTopo(2), link=TCLink)
    net.stop()
    net = Mininet(topo=SingleSwitchTopo(2))
    net.addHost("h3")
    net.addLink("h3", "s1", cls=TCLink, bw=10, delay="5ms")
    net.start()
    shown = net.get("h3").cmd("tc qdisc show dev h3-eth0").splitlines()
    assert shown[0].startswith("qdisc htb 5: root")
    assert shown[1].startswith("qdisc netem 10: parent 5:1")
    assert "class htb 5:1 root" in net.get("h3").cmd("tc class show dev h3-eth0")
    net.stop()


@pytest.mark.skipif("htb" in QDISC_KINDS, reason="HTB is merged: the default path runs")
def test_tclink_default_htb_says_not_supported_yet():
    net = Mininet(topo=SingleSwitchTopo(2))
    net.addHost("h3")
    net.addLink("h3", "s1", cls=TCLink, bw=10)
    with pytest.raises(MininetError, match="HTB is not supported yet; pass use_tbf=True"):
        net.start()


@pytest.mark.parametrize("call, match", [
    (lambda net: net.addLink("h1", "s1", cls=TCLink, bw="fast"), r"bw='fast': expected bw=10 \(Mbit/s\)"),
    (lambda net: net.addLink("h1", "s1", cls=TCLink, max_queue_size=1.5), "max_queue_size=1.5"),
    (lambda net: net.addLink("h1", "s1", cls=TCLink, bandwidth=10), "unknown link parameter bandwidth=10"),
    (lambda net: net.addLink("h1", "s1", bw=10), "need link=TCLink"),
    (lambda net: net.addLink("h1", "s9"), "no node named 's9'"),
    (lambda net: net.get("h9"), r"net.get\('h9'\): no node named 'h9'; nodes are c0, h1, h2, s1"),
    (lambda net: net.addHost("h1"), "a node named 'h1' already exists"),
    (lambda net: net.addHost("h5", ip="ten"), "expected an address"),
    (lambda net: net.iperf(), "iperf 2 .* not supported yet"),
])
def test_bad_api_arguments_raise_clear_errors(call, match):
    net = Mininet(topo=SingleSwitchTopo(2))
    with pytest.raises(MininetError, match=match):
        call(net)


def test_bad_command_line_names_the_node_and_command():
    net = _net(topo=SingleSwitchTopo(2))
    with pytest.raises(MininetError, match="h1"):
        net.get("h1").cmd("tc qdisc add dev h1-eth0 root bogus")
    net.stop()


def test_results_folder_has_terminal_logs_and_summary(results):
    net = _net(topo=SingleSwitchTopo(2))
    net.get("h1").cmd("ping -c 1 10.0.0.2")
    net.stop()
    log = (results / "mininet" / "mininet" / "h1" / "terminal.log").read_text()
    assert log.startswith("$ ping -c 1 10.0.0.2\nPING 10.0.0.2")
    assert (results / "mininet" / "summary.json").is_file()


def test_same_script_same_output():
    def run() -> str:
        net = Mininet(topo=SingleSwitchTopo(2), link=TCLink)
        net.start()
        out = net.get("h1").cmd("ping -c 5 -i 0.2 10.0.0.2")
        net.stop()
        return out
    assert run() == run()


def test_from_mn_builds_the_miniedit_topology():
    mn = Path(__file__).resolve().parent / "data" / "lab.mn"
    topo = load_mn(mn)
    net = Mininet.from_mn(mn, use_tbf="htb" not in QDISC_KINDS)
    assert [h.name for h in net.hosts] == topo.hosts
    assert [s.name for s in net.switches] == topo.switches
    ips = {h: ip.split("/")[0] for h, ip in topo.host_ips.items()}
    assert {h: net.get(h).IP() for h in topo.hosts} == ips
    net.start()
    first, last = net.hosts[0], net.hosts[-1]
    assert "1 received" in first.cmd(f"ping -c 1 {last.IP()}")
    net.stop()


def test_sendcmd_monitor_sendint():
    net = _net(topo=SingleSwitchTopo(2))
    h1 = net.get("h1")
    t0 = clock.time()
    h1.sendCmd("ping 10.0.0.2")
    assert h1.waiting
    # 1.5 s of simulated time pass; a program's lines reach the terminal when it ends
    assert h1.monitor(timeoutms=1500) == "" and 1.5 <= clock.time() - t0 < 1.6
    with pytest.raises(MininetError, match="previous command still runs"):
        h1.sendCmd("ping -c 1 10.0.0.2")
    h1.sendInt()  # Ctrl-C: ping prints its statistics
    rest = h1.waitOutput()
    assert not h1.waiting and rest.count("bytes from 10.0.0.2") == 2
    assert "2 packets transmitted, 2 received" in rest
    net.stop()


def test_sleep_before_start_only_moves_the_clock():
    t0 = clock.time()
    clock.sleep(3)
    assert clock.time() - t0 == pytest.approx(3)
    with pytest.raises(MininetError, match="expected a number of seconds"):
        clock.sleep("1s")
