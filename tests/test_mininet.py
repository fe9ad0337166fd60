"""bufferlab.mininet: Mininet's API, `bufferlab mininet SCRIPT.py`, `bufferlab mn` and the CLI.

The system test runs examples/mininet/bufferbloat.py (the classic assignment's
shape) and checks the ping RTT against queueing theory; the others check tc
lines against mininet/link.py's TCIntf.config, Mininet's printed formats and
the errors of bad API arguments.
"""

from __future__ import annotations

import io
import json
import os
import re
import runpy
from collections.abc import Iterator
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.mininet import clock
from bufferlab.mininet import net as net_mod
from bufferlab.mininet.cli import CLI
from bufferlab.mininet.link import TCLink, tc_lines
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.session import MininetError
from bufferlab.mininet.topo import SingleSwitchTopo
from bufferlab.mininet.topolib import TreeTopo
from bufferlab.scenario.mn_file import load_mn

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "mininet" / "bufferbloat.py"


@pytest.fixture(autouse=True)
def results(tmp_path: Path) -> Iterator[Path]:
    net_mod.results_in(tmp_path / "results", "mininet")
    clock.reset()  # whatever ran before in this process, each test's network starts at 0
    yield tmp_path / "results"
    for session in list(clock._current):  # a network a failed test left running
        clock.detach(session)


def two_hosts(**link: object) -> Mininet:
    net = Mininet(link=TCLink)
    h1, h2, s1 = net.addHost("h1"), net.addHost("h2"), net.addSwitch("s1")
    net.addLink(h1, s1, **link)
    net.addLink(s1, h2)
    return net


# ------------------------------------------------------------------ TCLink's tc lines


def test_tclink_lines_follow_mininet_tcintf_config() -> None:
    # mininet/link.py: bwCmds (htb default, tbf, red/ecn) then delayCmds (netem handle 10:)
    assert tc_lines("e0", bw=10) == [
        "tc qdisc del dev e0 root",
        "tc qdisc add dev e0 root handle 5:0 htb default 1",
        "tc class add dev e0 parent 5:0 classid 5:1 htb rate 10.000000Mbit burst 15k",
    ]
    # tbf: latency 15 * 8 / bw ms; an interface showing noqueue is not cleared first
    assert tc_lines("e0", bw=10, use_tbf=True, delay="5ms", max_queue_size=100, show="qdisc noqueue 0:") == [
        "tc qdisc add dev e0 root handle 5: tbf rate 10.000000Mbit burst 15000 latency 12.000000ms",
        "tc qdisc add dev e0 parent 5:1 handle 10: netem delay 5ms limit 100",
    ]
    assert tc_lines("e0", bw=2, use_tbf=True, enable_ecn=True, show="noqueue")[1] == (
        "tc qdisc add dev e0 parent 5:1 handle 6: red limit 1000000 min 30000 max 35000 avpkt 1500 "
        "burst 20 bandwidth 2.000000mbit probability 1 ecn")
    assert tc_lines("e0", bw=2, use_tbf=True, enable_red=True, delay="1ms", show="noqueue")[2] == (
        "tc qdisc add dev e0 parent 6: handle 10: netem delay 1ms")
    # netem alone at the root; loss with %.5f, jitter after the delay
    assert tc_lines("e0", delay="10ms", jitter="2ms", loss=1, show="noqueue") == [
        "tc qdisc add dev e0 root handle 10: netem delay 10ms 2ms loss 1.00000"]
    # nothing to shape: Mininet returns early and runs no tc at all
    assert tc_lines("e0") == [] and tc_lines("e0", delay=None, loss=0) == []


def test_tclink_bw_over_1000_is_ignored_with_mininets_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert tc_lines("e0", bw=2000, delay="1ms", show="noqueue") == [
        "tc qdisc add dev e0 root handle 10: netem delay 1ms"]
    assert capsys.readouterr().out == "Bandwidth limit 2000.0 is outside supported range 0..1000 - ignoring\n"


def test_tclink_hfsc_lines_are_mininets() -> None:
    # mininet/link.py TCIntf.bwCmds with use_hfsc
    assert tc_lines("e0", bw=10, use_hfsc=True, delay="5ms", show="noqueue") == [
        "tc qdisc add dev e0 root handle 5:0 hfsc default 1",
        "tc class add dev e0 parent 5:0 classid 5:1 hfsc sc rate 10.000000Mbit ul rate 10.000000Mbit",
        "tc qdisc add dev e0 parent 5:1 handle 10: netem delay 5ms",
    ]


def test_tclink_tree_as_tc_shows_it() -> None:
    net = two_hosts(bw=10, delay="5ms", max_queue_size=100, use_tbf=True)
    net.start()
    h1, s1 = net.get("h1", "s1")
    expected = [
        "qdisc tbf 5: root refcnt 2 rate 10Mbit burst 15000b lat 12.0ms ",
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) ",
        " backlog 0b 0p requeues 0",
        "qdisc netem 10: parent 5:1 limit 100 delay 5.0ms",
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) ",
        " backlog 0b 0p requeues 0",
    ]
    # both ends of the link, the switch's through the root namespace
    assert s1.cmd("tc -s qdisc show dev s1-eth1").splitlines() == expected
    assert h1.cmd("tc -s qdisc show dev h1-eth0").splitlines() == expected
    assert s1.cmd("tc qdisc show dev s1-eth2").splitlines() == ["qdisc noqueue 0: root refcnt 2 "]
    net.stop()


def test_tclink_default_htb_tree() -> None:
    net = two_hosts(bw=10, delay="5ms", max_queue_size=100)
    net.start()
    shown = net.get("h1").cmd("tc qdisc show dev h1-eth0").splitlines()
    # the lab2019 profile's iproute2 prints the default class in decimal (6.x: 0x1)
    assert shown[0] == "qdisc htb 5: root refcnt 2 r2q 10 default 1 direct_packets_stat 0 direct_qlen 1000"
    assert shown[1] == "qdisc netem 10: parent 5:1 limit 100 delay 5.0ms"
    classes = net.get("h1").cmd("tc class show dev h1-eth0")
    assert classes.splitlines() == [
        "class htb 5:1 root leaf 10: prio 0 rate 10Mbit ceil 10Mbit burst 15Kb cburst 1600b "]
    net.stop()


# ------------------------------------------------------------------ the API


def test_names_addresses_and_connections(capsys: pytest.CaptureFixture[str]) -> None:
    net = Mininet(topo=TreeTopo(depth=2, fanout=2))
    assert [h.name for h in net.hosts] == ["h1", "h2", "h3", "h4"]
    assert [h.IP() for h in net.hosts] == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]
    assert net.get("s1").intfNames() == ["s1-eth1", "s1-eth2"]
    assert net["h3"].defaultIntf().name == "h3-eth0"
    net.start()
    capsys.readouterr()
    CLI(net, stdin=io.StringIO("net\nnodes\nexit\n"))
    assert capsys.readouterr().out.splitlines() == [
        "h1 h1-eth0:s2-eth1", "h2 h2-eth0:s2-eth2", "h3 h3-eth0:s3-eth1", "h4 h4-eth0:s3-eth2",
        "s1 s1-eth1:s2-eth3 s1-eth2:s3-eth3", "s2 s2-eth1:h1-eth0 s2-eth2:h2-eth0 s2-eth3:s1-eth1",
        "s3 s3-eth1:h3-eth0 s3-eth2:h4-eth0 s3-eth3:s1-eth2", "c0",
        "available nodes are: ", "c0 h1 h2 h3 h4 s1 s2 s3",
    ]
    net.stop()


def test_cmd_popen_and_clock_run_in_simulated_time(capsys: pytest.CaptureFixture[str]) -> None:
    net = Mininet(topo=SingleSwitchTopo(2), link=TCLink)
    net.start()
    h1, h2 = net.get("h1", "h2")
    assert clock.time() == 0.0
    out = h1.cmd("ping -c 3", h2.IP())
    assert "3 packets transmitted, 3 received" in out
    assert 2.0 <= clock.time() < 2.01  # three pings a second apart
    assert h1.cmd("ping -c 100 10.0.0.2 &") == "" and clock.time() < 2.01  # `&` returns at once
    other = h1.popen("ping -c 30 10.0.0.2")
    proc = h1.popen("ping -i 0.1 10.0.0.2")
    assert proc.poll() is None
    clock.sleep(1.05)
    proc.terminate()
    assert other.poll() is None  # a process of its own: terminating another leaves it running
    text = proc.communicate()[0].decode()
    assert proc.returncode is not None and "11 packets transmitted, 11 received" in text
    capsys.readouterr()
    assert net.pingPair() == 0.0
    assert capsys.readouterr().out == "h1 -> h2 \nh2 -> h1 \n*** Results: 0% dropped (2/2 received)\n"
    net.stop()


def test_bad_arguments_raise_clear_errors() -> None:
    net = two_hosts()
    with pytest.raises(MininetError, match=r"bw='fast': expected a number \(e.g. bw=10 for 10 Mbit/s\)"):
        net.addLink("h1", "h2", bw="fast")
    with pytest.raises(MininetError, match=r"no node named 'h9' in the network \(nodes: c0, h1, h2, s1\)|"
                       r"no node named 'h9' in the network \(nodes: h1, h2, s1\)"):
        net.get("h9")
    with pytest.raises(MininetError, match="delay=5: expected a string with a unit"):
        net.addLink("h1", "s1", delay=5)
    plain = Mininet()
    with pytest.raises(MininetError, match="use link=TCLink"):
        plain.addLink(plain.addHost("h3"), plain.addHost("h4"), bw=10)
    with pytest.raises(MininetError, match="the network is not started"):
        net.get("h1").cmd("ping -c 1 10.0.0.2")
    net.start()
    with pytest.raises(MininetError, match="l4Type='SCTP'"):
        net.iperf(l4Type="SCTP")
    net.stop()


def test_net_iperf_runs_iperf2_as_mininet_does(capsys: pytest.CaptureFixture[str]) -> None:
    net = two_hosts(bw=10, delay="5ms", max_queue_size=100)
    net.start()
    capsys.readouterr()
    server, client = net.iperf(seconds=3)
    out = capsys.readouterr().out
    assert out.startswith("*** Iperf: testing TCP bandwidth between h1 and h2 \n*** Results: [")
    # the 10 Mbit/s HTB class: the server's goodput is just under the shaped rate
    # (1448-byte payloads of 1514-byte frames: 9.56 Mbit/s), the client's counts what it wrote
    assert re.fullmatch(r"9\.[3-6] Mbits/sec", server), server
    assert client.endswith("Mbits/sec")
    udp = net.iperf(l4Type="UDP", udpBw="2M", seconds=2)
    assert udp[0] == "2M" and re.fullmatch(r"2\.\d Mbits/sec", udp[1]), udp  # iperf 2's M is 2^20
    net.stop()


# ------------------------------------------------------------------ bufferlab mn and bufferlab mininet


def test_mn_linear3_pingall_prints_mininets_lines(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mn", "--topo", "linear,3", "--test", "pingall", "-o", str(results)]) == 0
    out = capsys.readouterr().out
    assert ("*** Ping: testing ping reachability\nh1 -> h2 h3 \nh2 -> h1 h3 \nh3 -> h1 h2 \n"
            "*** Results: 0% dropped (6/6 received)\n") in out
    assert "*** Adding links:\n(h1, s1) (h2, s2) (h3, s3) (s2, s1) (s3, s2) \n" in out
    assert (results / "mn" / "summary.json").is_file()


def test_mn_custom_topology(tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    custom = tmp_path / "custom.py"
    custom.write_text(
        "from mininet.topo import Topo\n"
        "class Pair(Topo):\n"
        "    def build(self, n=2):\n"
        "        s = self.addSwitch('s1')\n"
        "        for k in range(1, n + 1):\n"
        "            self.addLink(self.addHost('h%d' % k), s, bw=10, delay='1ms', use_tbf=True)\n"
        "topos = {'pair': Pair}\n", encoding="utf-8")
    args = ["mn", "--custom", str(custom), "--topo", "pair,3", "--link", "tc", "--test", "pingall",
            "-o", str(results)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "h1 -> h2 h3 \n" in out and "*** Results: 0% dropped (6/6 received)\n" in out
    assert "(10.00Mbit 1ms delay) " in out


def test_mn_rejects_unknown_topology(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mn", "--topo", "ring,3", "-o", str(results)]) == 2
    assert "unknown topology 'ring'" in capsys.readouterr().err


def test_script_calling_a_real_program_gets_an_error_naming_it(tmp_path: Path, results: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text(
        "import os\n"
        "from mininet.net import Mininet\n"  # an unmodified import works too
        "from mininet.topo import SingleSwitchTopo\n"
        "net = Mininet(topo=SingleSwitchTopo(2))\n"
        "net.start()\n"
        "os.system('sysctl -w net.ipv4.tcp_congestion_control=reno')\n"
        "os.system('ovs-vsctl show')\n", encoding="utf-8")
    assert main(["mininet", "-o", str(results), str(script)]) == 2
    err = capsys.readouterr().err
    assert "s.py:7: error: `ovs-vsctl show`: ovs-vsctl is not a simulated tool" in err
    assert (results / "s" / "summary.json").is_file()


def _bufferbloat(results: Path, maxq: int, capsys: pytest.CaptureFixture[str]) -> tuple[float, float]:
    assert main(["mininet", "-o", str(results), "--no-report", str(EXAMPLE), "--maxq", str(maxq)]) == 0
    m = re.search(r"mean RTT ([\d.]+) ms over (\d+) pings; mean backlog (\d+) bytes", capsys.readouterr().out)
    assert m is not None and int(m.group(2)) >= 70
    return float(m.group(1)), float(m.group(3))


def test_bufferbloat_rtt_follows_the_backlog(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """RTT ≈ base + (backlog − rate·d)/rate: base 4 × 5 ms of netem delay; the bottleneck's
    backlog (tbf + its netem child, s0-eth2) also counts the packets in netem's 5 ms delay
    line, which add no wait of their own (rate·d = 6250 bytes at 10 Mbit/s). Within 10 %."""
    rate = 10e6 / 8
    rtts = {}
    for maxq in (20, 100):
        rtt, backlog = _bufferbloat(results, maxq, capsys)
        expected = 20 + (backlog - rate * 0.005) / rate * 1000
        assert rtt == pytest.approx(expected, rel=0.10), (maxq, rtt, backlog)
        rtts[maxq] = rtt
    assert rtts[100] > 2.5 * rtts[20]
    assert (results / "bufferbloat" / "bufferbloat.png").is_file()
    first = (results / "bufferbloat" / "ping.txt").read_text()
    _bufferbloat(results, 100, capsys)  # same seed, same outputs
    assert (results / "bufferbloat" / "ping.txt").read_text() == first


def test_the_webfetch_example_fetches_slower_behind_a_longer_queue(results: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """examples/mininet/bufferbloat_webfetch.py, the classic assignment's pattern (iperf, ping,
    a loop of curl fetches from `python webserver.py`, a queue monitor) unchanged: a 100 KB
    page over 1.5 Mbit/s takes longer behind 100 packets of queue than behind 20."""
    script = EXAMPLE.parent / "bufferbloat_webfetch.py"
    assert main(["mininet", "-o", str(results), "--no-report", str(script), "--time", "20"]) == 0
    out = capsys.readouterr().out
    means = {int(q): (int(n), float(m), float(qlen)) for q, n, m, qlen in re.findall(
        r"maxq (\d+): (\d+) fetches, mean ([\d.]+) s, stdev [\d.]+ s; mean queue ([\d.]+) packets", out)}
    assert set(means) == {20, 100}
    assert means[100][1] > 2 * means[20][1] and means[100][2] > means[20][2]
    # the page alone needs 100 KB / 1.5 Mbit/s = 0.55 s of the link: every fetch takes longer
    assert min(m for _, m, _ in means.values()) > 0.55
    folder = results / "bufferbloat_webfetch"
    rows = (folder / "webfetch.csv").read_text().splitlines()
    assert rows[0] == "maxq,t_s,fetch_s" and len(rows) == 1 + sum(n for n, _, _ in means.values())
    assert (folder / "webfetch.png").is_file()


def test_the_notebook_example_tabulates_rtt_against_queue_size(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    table = runpy.run_path(str(EXAMPLE.parent / "notebook.py"))["table"]
    assert list(table.index) == [10, 20, 50, 100]
    # RTT = 20 ms + the backlog's drain time, within 10 %; more queue, more delay
    ratio = table["rtt_mean_ms"] / table["predicted_rtt_ms"]
    assert ratio.between(0.9, 1.1).all(), table
    assert table["rtt_mean_ms"].is_monotonic_increasing


def test_from_mn_builds_the_miniedit_drawing() -> None:
    drawing_path = ROOT / "tests" / "data" / "lab.mn"
    drawing = load_mn(drawing_path)
    net = Mininet.from_mn(drawing_path)
    assert [h.name for h in net.hosts] == drawing.hosts
    assert [s.name for s in net.switches] == drawing.switches
    assert len(net.links) == len(drawing.links)
    net.start()
    ips = {h: ip.split("/")[0] for h, ip in drawing.host_ips.items()}
    assert {h.name: h.IP() for h in net.hosts} == ips
    first, last = net.hosts[0], net.hosts[-1]
    assert "1 received" in first.cmd(f"ping -c 1 {last.IP()}")
    net.stop()


def test_cli_iperf_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    net = Mininet(topo=SingleSwitchTopo(2))
    net.start()
    CLI(net, stdin=io.StringIO("iperf h2 h1\niperfudp 1M h1 h2\niperfudp\niperf h1\nexit\n"))
    net.stop()
    out = capsys.readouterr().out
    assert "*** Iperf: testing TCP bandwidth between h2 and h1 \n" in out
    assert "*** Iperf: testing UDP bandwidth between h1 and h2 \n" in out
    assert "invalid number of args: iperfudp bw src dst\nbw examples: 10M\n" in out
    assert "invalid number of args: iperf src dst\n" in out


def test_each_script_run_starts_at_time_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs in one process print the same times (a clock carried over from the first run
    rounds ``time() - start`` differently)."""
    script = tmp_path / "t.py"
    script.write_text("import time\nfrom bufferlab.mininet.net import Mininet\nnet = Mininet()\n"
                      "net.addLink(net.addHost('h1'), net.addSwitch('s1'))\nnet.start()\n"
                      "time.sleep(0.3)\nprint('t =', repr(time.time()))\n"
                      "net.stop()\n", encoding="utf-8")
    times = []
    for run in ("a", "b"):
        assert main(["mininet", "-o", str(tmp_path / run), "--no-report", str(script)]) == 0
        times.append([line for line in capsys.readouterr().out.splitlines() if line.startswith("t =")])
    assert times[0] == times[1] == [f"t = {0.3!r}"]


KILL_SCRIPT = """\
from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo
from mininet.link import TCLink

net = Mininet(topo=SingleSwitchTopo(3), link=TCLink)
net.start()
h1, h2, h3 = net.get('h1', 'h2', 'h3')
h3.cmd('iperf -s &')
h3.cmd('ping 10.0.0.2 > ping.txt &')
print('client:', h1.cmd('iperf -c', h3.IP(), '-t 2').count('Bandwidth'))
print('jobs:', h3.cmd('jobs'))
print('killed:', h3.cmd('kill %iperf'))
print('after:', h3.cmd('jobs'))
h3.cmd('kill -INT %ping')
print('ps:', h3.cmd('ps'))
net.stop()
print('stopped')
"""


def test_a_script_killing_a_background_iperf_runs_to_net_stop(tmp_path: Path, results: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`h3.cmd('kill %iperf')` (the classic assignment's clean-up) signals the shell's job:
    iperf 2 catches SIGTERM and prints its server report, the job is Done, the script goes on."""
    script = tmp_path / "kills.py"
    script.write_text(KILL_SCRIPT, encoding="utf-8")
    assert main(["mininet", "-o", str(results), "--no-report", str(script)]) == 0
    out = capsys.readouterr().out
    assert "client: 1\n" in out
    assert ("jobs: [1]-  Running                 iperf -s &\n"
            "[2]+  Running                 ping 10.0.0.2 > ping.txt &\n") in out
    assert "killed: [  4] local 10.0.0.3 port 5001 connected with 10.0.0.1 port" in out
    assert "after: [1]-  Done                    iperf -s\n[2]+  Running" in out
    assert "\nstopped\n" in out  # net.stop() ran
    assert (
        "    PID TTY          TIME CMD\n   4000 pts/3    00:00:00 bash\n   4003 pts/3    00:00:00 ps\n" in out
    )
    ping = (results / "kills" / "ping.txt").read_text()
    assert ping.startswith("PING 10.0.0.2") and "^C" not in ping and "packets transmitted" in ping
    summary = json.loads((results / "kills" / "summary.json").read_text())
    assert summary["error"] is None and summary["failures"] == []


ROUTED_CALLS = """import os, pty, subprocess
from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo
net = Mininet(topo=SingleSwitchTopo(2))
net.start()
print("getoutput:", repr(subprocess.getoutput("sysctl net.ipv4.tcp_congestion_control")))
print("getstatusoutput:", subprocess.getstatusoutput("tc qdisc del dev s1-eth1 root"))
f = os.popen("sysctl net.ipv4.tcp_congestion_control")
print("popen:", repr(f.read()), f.close())
print("popen:", os.popen("tc qdisc del dev s1-eth1 root").close())
print("spawnlp:", os.spawnlp(os.P_WAIT, "sysctl", "sysctl", "-w", "net.ipv4.tcp_congestion_control=reno"))
print("spawnv:", os.spawnv(os.P_WAIT, "/sbin/sysctl", ["sysctl", "-n", "net.ipv4.tcp_congestion_control"]))
print("pty:", pty.spawn(["tc", "qdisc", "del", "dev", "s1-eth1", "root"]))
net.stop()
"""


def test_getoutput_popen_spawn_and_pty_run_simulated_tools(tmp_path: Path, results: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text(ROUTED_CALLS, encoding="utf-8")
    assert main(["mininet", "-o", str(results), str(script)]) == 0
    out = capsys.readouterr().out
    assert "getoutput: 'net.ipv4.tcp_congestion_control = cubic'\n" in out
    assert "getstatusoutput: (2, 'RTNETLINK answers: No such file or directory')\n" in out
    assert "popen: 'net.ipv4.tcp_congestion_control = cubic\\n' None\npopen: 512\n" in out
    assert "net.ipv4.tcp_congestion_control = reno\nspawnlp: 0\nreno\nspawnv: 0\n" in out
    assert "RTNETLINK answers: No such file or directory\npty: 512\n" in out


@pytest.mark.parametrize("call", [
    "subprocess.getoutput('touch MARK')", "subprocess.getstatusoutput('touch MARK')",
    "os.popen('touch MARK').read()", "os.spawnlp(os.P_WAIT, 'touch', 'touch', 'MARK')",
    "os.spawnl(os.P_NOWAIT, '/usr/bin/touch', 'touch', 'MARK')",
    "os.spawnvpe(os.P_WAIT, 'touch', ['touch', 'MARK'], {})",
    "os.execvp('touch', ['touch', 'MARK'])", "os.execl('/usr/bin/touch', 'touch', 'MARK')",
    "os.posix_spawnp('touch', ['touch', 'MARK'], dict(os.environ))", "pty.spawn(['touch', 'MARK'])",
    "asyncio.run(asyncio.create_subprocess_exec('touch', 'MARK'))",
])
def test_no_way_to_start_a_real_program(tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str],
                                        call: str) -> None:
    script = tmp_path / "s.py"
    mark = tmp_path / "MARK"
    script.write_text("import asyncio, os, pty, subprocess\n"
                      "from mininet.net import Mininet\nfrom mininet.topo import SingleSwitchTopo\n"
                      "net = Mininet(topo=SingleSwitchTopo(2))\nnet.start()\n"
                      f"{call.replace('MARK', str(mark))}\n", encoding="utf-8")
    assert main(["mininet", "-o", str(results), str(script)]) == 2
    err = capsys.readouterr().err
    assert "s.py:6: error: " in err and "under bufferlab mininet" in err, err
    assert not mark.exists()


def test_bufferlab_keeps_the_real_clock_when_installed_inside_the_scripts_folder(tmp_path: Path) -> None:
    """A .venv in the script's folder holding bufferlab (and a library): their clocks stay real,
    run.json's "started" is today, not 1970."""
    import subprocess
    import sys

    import bufferlab

    lab = tmp_path / "lab"
    site = lab / ".venv" / "lib" / "python3" / "site-packages"
    site.mkdir(parents=True)
    (site / "bufferlab").symlink_to(Path(bufferlab.__file__).parent, target_is_directory=True)
    (site / "wallclock.py").write_text("import time\ndef now():\n    return time.time()\n", encoding="utf-8")
    (lab / "lab.py").write_text("import time, wallclock\nfrom mininet.net import Mininet\n"
                                "from mininet.topo import SingleSwitchTopo\n"
                                "net = Mininet(topo=SingleSwitchTopo(2))\nnet.start()\ntime.sleep(5)\n"
                                "print(round(time.time()), wallclock.now() > 1.6e9)\nnet.stop()\n",
                                encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(site)}
    p = subprocess.run([sys.executable, "-m", "bufferlab.cli", "mininet", "-o", "out", "lab/lab.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    # the script's clock simulated, the library's real; then bufferlab's closing line (stdout)
    assert p.stdout.splitlines()[-2:] == ["5 True", f"lab.py: results in {tmp_path / 'out' / 'lab'}"]
    run = json.loads((tmp_path / "out" / "lab" / "run.json").read_text())
    assert run["started"] >= "2025" and run["started_unix"] > 1.6e9


@pytest.mark.parametrize(("args", "message"), [
    (["--topo", "linear,abc"], "--topo linear,abc: 'abc' is not a whole number; expected linear,N[,M]"),
    (["--topo", "single,0"], "--topo single,0: 0 is not at least 1; expected single,N"),
    (["--topo", "tree,depth=2,fanout=x"], "'x' is not a whole number; expected tree,depth=D,fanout=F"),
    (["--link", "tc,max_queue_size=0"], "max_queue_size=0: a queue of 0 packets drops every packet"),
    (["--link", "tc,max_queue_size=1.5"], "max_queue_size=1.5: not a packet count"),
    (["--topo", "single,3,4"], "positional arguments but 3 were given; expected single,N (N hosts"),
    # tools/fuzz_inputs.py (campaign 5): a TCLink option's error named the interface, not --link;
    # a tree 5000 levels deep was a RecursionError, a topology of 10¹¹ hosts never ended
    (["--link", "tc,jitter=3"], "--link tc,jitter=3: h1-eth0: jitter=3: expected a string with a unit"),
    (["--topo", "tree,depth=5000,fanout=1"], "--topo tree,depth=5000,fanout=1: a tree 5000 levels deep; at most"),
    (["--topo", "single,100000000000"], "--topo single,100000000000: more than 10,000 hosts and switches"),
    (["--topo", "tree,3,40"], "--topo tree,3,40: more than 10,000 hosts and switches"),
])
def test_mn_arguments_say_what_is_wrong(results: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                        message: str) -> None:
    assert main(["mn", *args, "--test", "pingall", "-o", str(results)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_mn_iperf_test_needs_two_hosts(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tools/fuzz_inputs.py (campaign 5): `--topo single,1 --test iperf` ran the server and the
    client on h1 ("sendCmd while a command still runs"), an error naming neither argument."""
    assert main(["mn", "--topo", "single,1", "--test", "iperf", "-o", str(results)]) == 2
    assert "--test iperf: needs two hosts; --topo single,1 has 1" in capsys.readouterr().err


@pytest.mark.parametrize(("content", "message"), [
    (b"import os\nx = 1\x00\n", ":2: error: a NUL byte, which Python source cannot hold"),
    (b"import os\n# \x80\n", ":2: error: not utf-8 text: byte 0x80 at byte offset 12"),
    (b"# -*- coding: nope -*-\nx = 1\n", ":1: error: unknown encoding: nope"),
])
def test_a_script_python_cannot_read_is_an_error_at_its_line(tmp_path: Path, results: Path,
                                                            capsys: pytest.CaptureFixture[str], content: bytes,
                                                            message: str) -> None:
    """tools/fuzz_inputs.py (campaign 5): a NUL byte or a byte that is not UTF-8 in a script made
    runpy raise with bufferlab's frames and no place (a traceback)."""
    script = tmp_path / "bad.py"
    script.write_bytes(content)
    assert main(["mininet", "-o", str(results), str(script)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{script}{message}") and "Traceback" not in err, err


def test_a_syntax_error_in_a_script_is_printed_as_python_prints_it(tmp_path: Path, results: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """tools/fuzz_inputs.py (campaign 5): a script that does not compile printed a traceback of
    bufferlab's and runpy's frames; python prints only where the error is."""
    script = tmp_path / "bad.py"
    script.write_text("from mininet.net import Mininet\nnet = Mininet(\nprint(2)\n", encoding="utf-8")
    assert main(["mininet", "-o", str(results), str(script)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f'  File "{script}", line 2\n') and "SyntaxError: '(' was never closed" in err, err
    assert "Traceback" not in err and "bufferlab" not in err


def test_a_script_stopping_on_an_error_is_a_failure_with_its_line(tmp_path: Path, results: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """summary.json's error and failures name the script line, report.html shows it, and
    the tables' note does not ask for an iperf test when iperf 2 ran."""
    script = tmp_path / "stops.py"
    script.write_text(
        "from mininet.net import Mininet\n"
        "from mininet.topo import SingleSwitchTopo\n"
        "net = Mininet(topo=SingleSwitchTopo(2))\n"
        "net.start()\n"
        "h1, h2 = net.get('h1', 'h2')\n"
        "h2.cmd('iperf -s &')\n"
        "h1.cmd('iperf -c 10.0.0.2 -t 1')\n"
        "h1.cmd('traceroute 10.0.0.2')\n"
        "net.stop()\n", encoding="utf-8")
    assert main(["mininet", "-o", str(results), str(script)]) == 2
    capsys.readouterr()
    summary = json.loads((results / "stops" / "summary.json").read_text())
    assert "traceroute: command not found" in summary["error"]
    [failure] = summary["failures"]
    assert failure["where"] == "stops.py:8" and failure["command"] == "h1.cmd('traceroute 10.0.0.2')"
    assert failure["status"] == 2 and "traceroute: command not found" in failure["message"]
    report = (results / "stops" / "report.html").read_text()
    assert "stops.py:8: script: part &#x27;mininet&#x27;" in report or "stops.py:8: script: part" in report
    assert "add an iperf3 test" not in report and "iperf 2 ran (`iperf -c 10.0.0.2 -t 1`)" in report


def test_popen_signals_and_pids(capsys: pytest.CaptureFixture[str]) -> None:
    """popen processes have deterministic PIDs, kill() is SIGKILL (nothing printed) and
    send_signal(SIGTERM) reaches ping as the real one takes it (it dies silently)."""
    net = Mininet(topo=SingleSwitchTopo(2), link=TCLink)
    net.start()
    h1 = net.get("h1")
    assert h1.pid == 2000
    h1.cmd("sleep 100 &")
    assert h1.lastPid == 2001 and h1.cmd("echo $!") == "2001\n" and h1.cmd("kill $!") == ""
    p = h1.popen("ping 10.0.0.2", text=True)
    q = h1.popen("ping -i 0.5 10.0.0.2", text=True)
    assert (p.pid, q.pid) == (2002, 2003)
    clock.sleep(1.5)
    p.kill()
    q.send_signal(15)
    assert p.wait() == 137 and q.wait() == 143
    assert "PING" not in p.communicate()[0] and "PING" not in q.communicate()[0]
    assert "ping" not in h1.cmd("ps -e")
    net.stop()


@pytest.mark.parametrize(("args", "message"), [
    (["mininet", "/dev/zero"], "/dev/zero: is a character device, not a file"),
    (["mn", "--custom", "/dev/zero"], "/dev/zero: is a character device, not a file"),
    (["mn", "--custom", "BAD"], "BAD:2: invalid Python: '(' was never closed"),
    (["mn", "--custom", "RAISES"], "RAISES:1: ModuleNotFoundError: No module named 'nosuchmodule'"),
    # campaign 5 (tools/fuzz_inputs.py --mn): a custom topology whose build() raises
    (["mn", "--custom", "BUILD", "--topo", "pair,3"],
     "--topo pair,3: BUILD:4: NameError: name 'n' is not defined"),
])
def test_what_is_not_a_script_is_said_never_read_for_ever(tmp_path: Path, results: Path,
                                                          capsys: pytest.CaptureFixture[str], args: list[str],
                                                          message: str) -> None:
    (tmp_path / "bad.py").write_text("topos = {}\nx = (\n", encoding="utf-8")
    (tmp_path / "raises.py").write_text("import nosuchmodule\n", encoding="utf-8")
    build = ("from mininet.topo import Topo\nclass Pair(Topo):\n    def build(self, k=2):\n"
             "        self.addHost(f'h{n}')\ntopos = {'pair': Pair}\n")
    (tmp_path / "build.py").write_text(build, encoding="utf-8")
    names = {k: str(tmp_path / f"{k.lower()}.py") for k in ("BAD", "RAISES", "BUILD")}
    args = [names.get(a, a) for a in args]
    argv = [*args, "-o", str(results)] if args[0] == "mn" else [args[0], "-o", str(results), args[1]]
    assert main(argv) == 2
    err = capsys.readouterr().err
    for k, v in names.items():
        message = message.replace(k, v)
    assert message in err and "Traceback" not in err


def test_sys_exit_with_a_message_prints_it(tmp_path: Path, results: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text("import sys\nsys.exit('usage: s.py N')\n", encoding="utf-8")
    assert main(["mininet", "-o", str(results), str(script)]) == 1
    assert "usage: s.py N\n" in capsys.readouterr().err


def test_the_standard_library_keeps_the_real_clock_for_a_script_above_the_interpreter() -> None:
    """A script in the home folder, the interpreter under it (pyenv): its standard library is
    not the script's."""
    import sys
    import threading

    from bufferlab.mininet.script import script_files

    home = Path(sys.base_prefix).resolve().parent
    own = script_files(home)
    assert own(str(home / "lab.py")) and own(str(home / "helpers" / "net.py"))
    assert not own(str(Path(threading.__file__).resolve()))
    assert not own(str(home / "lib" / "site-packages" / "numpy" / "x.py"))


def test_a_full_disk_under_a_script_is_said_once_without_a_traceback(
        tmp_path: Path, results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "s.py"
    script.write_text("import errno, os\nraise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), 'big.dat')\n",
                      encoding="utf-8")
    assert main(["mininet", "-o", str(results), str(script)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: big.dat: No space left on device\n  kept: ") and "Traceback" not in err


def test_hfsc_tclink_lesson(tmp_path, monkeypatch, capsys: pytest.CaptureFixture[str]) -> None:
    """examples/mininet/hfsc_tclink.py: Mininet's use_hfsc link shapes a TCP flow as its
    htb link does (the ul curve is the shaper), and ls curves 8 : 2 under the link's
    class split the rate 8 : 2 while ul still caps the sum (issue 25, lesson)."""
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(EXAMPLE.parent / "hfsc_tclink.py"), run_name="__main__")
    out = capsys.readouterr().out
    rates = {k: float(v) for k, v in re.findall(r"(hfsc|htb) link: iperf TCP ([\d.]+) Mbit/s", out)}
    assert rates["hfsc"] == pytest.approx(rates["htb"], rel=0.02) and 9.3 <= rates["hfsc"] <= 9.7, out
    assert "class hfsc 5:1 parent 5: sc m1 0bit d 0us m2 10Mbit ul m1 0bit d 0us m2 10Mbit \n" in out
    m = re.search(r"ls 8:2 split: ([\d.]+) / ([\d.]+) Mbit/s", out)
    assert m is not None, out
    a, b = float(m.group(1)), float(m.group(2))
    assert a == pytest.approx(8.0, rel=0.05) and b == pytest.approx(2.0, rel=0.1), (a, b)
    assert a + b <= 10.2


def test_mn_pingall_is_bounded(results: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Campaign 5: tree,5,4's 1 024 hosts (1 047 552 pings) ran past every timeout, then ran out
    of memory reading its summary.json back; 256 hosts (65 280 pings) stay allowed."""
    assert main(["mn", "--topo", "tree,5,4", "--test", "pingall", "-o", str(results)]) == 2
    err = capsys.readouterr().err
    assert "--test pingall: --topo tree,5,4 has 1,024 hosts, 1,047,552 pings; at most 100,000" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(("link", "message"), [
    # campaign 5 (tools/fuzz_inputs.py --mn): a traceback, and errors naming a tc line never written
    ("tc,bw=2,speedup=x", "--link tc,bw=2,speedup=x: h1-eth0: speedup='x': expected a number"),
    ("tc,delay=x", "--link tc,delay=x: Illegal \"latency\" (in the line it makes: "),
    ("tc,bw=10,jitter=x", "--link tc,bw=10,jitter=x: What is \"x\"? (in the line it makes: "),
])
def test_mn_link_values_tc_refuses_name_the_link_option(results: Path, capsys: pytest.CaptureFixture[str],
                                                        link: str, message: str) -> None:
    assert main(["mn", "--topo", "minimal", "--link", link, "--test", "pingall", "-o", str(results)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err, err
