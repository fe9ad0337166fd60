"""`bufferlab mininet SCRIPT.py`, `bufferlab mn` and the mininet> CLI (issue 15 items 2, 6, 8)."""

from __future__ import annotations

import io
import re
import runpy
import sys
import time
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.mininet import clock
from bufferlab.mininet.cli import CLI
from bufferlab.mininet.log import setLogLevel
from bufferlab.mininet.net import Mininet
from bufferlab.mininet.topo import SingleSwitchTopo

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "mininet" / "bufferbloat.py"


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(Mininet, "write_report", False)
    setLogLevel("output")
    yield
    if clock._session is not None:
        clock._session.close(report=False)
        clock.attach(None)


def _bufferbloat(tmp_path, capsys, maxq: int) -> tuple[float, float]:
    """(mean RTT of the second half in ms, mean backlog of the second half in bytes)."""
    assert main(["mininet", "--results", str(tmp_path), str(EXAMPLE), "--maxq", str(maxq), "--tbf",
                 "--time", "6"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    m = re.fullmatch(rf"maxq {maxq}: mean RTT [\d.]+ ms \(second half ([\d.]+) ms\), "
                     r"mean backlog (\d+) bytes", line)
    assert m, line
    return float(m.group(1)), float(m.group(2))


def test_bufferbloat_example_rtt_follows_the_backlog(tmp_path, capsys):
    """RTT = base (2 x 5 ms netem) + backlog / rate: within 20 % (the ping samples the queue
    at its own instants, the monitor every 100 ms)."""
    rtts = {}
    for maxq in (20, 100):
        rtt, backlog = _bufferbloat(tmp_path, capsys, maxq)
        expected = 2 * 5 + backlog * 8 / 10e6 * 1e3
        assert rtt == pytest.approx(expected, rel=0.20), (maxq, rtt, expected)
        rtts[maxq] = rtt
    assert rtts[100] > 3 * rtts[20]
    assert time.sleep is not clock.sleep and time.time is not clock.time  # restored after the run
    log = (tmp_path / "bufferbloat" / "mininet" / "admin" / "terminal.log").read_text()
    assert "$ tc qdisc add dev s0-eth2  parent 5:1  handle 10: netem delay 5ms limit 100\n" in log


def test_script_running_a_real_program_is_an_error_naming_it(tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("from bufferlab.mininet.net import Mininet\nfrom bufferlab.mininet.topo import "
                      "SingleSwitchTopo\nimport os\nnet = Mininet(topo=SingleSwitchTopo(2))\nnet.start()\n"
                      "os.system('rm -rf /tmp/x')\n")
    assert main(["mininet", "--results", str(tmp_path), str(script)]) == 2
    err = capsys.readouterr().err
    assert "os.system('rm -rf /tmp/x'): 'rm' is not a simulated tool" in err
    assert clock._session is None and sys.argv[0] != str(script)


def test_script_gets_its_arguments_and_subprocess_output(tmp_path, capsys):
    script = tmp_path / "s.py"
    script.write_text("import subprocess, sys, time\nfrom bufferlab.mininet.net import Mininet\n"
                      "from bufferlab.mininet.topo import SingleSwitchTopo\n"
                      "net = Mininet(topo=SingleSwitchTopo(2))\nnet.start()\nt = time.time()\n"
                      "time.sleep(float(sys.argv[1]))\n"
                      "out = subprocess.check_output('tc qdisc show dev s1-eth1', shell=True, text=True)\n"
                      "print(round(time.time() - t, 3), out.split()[1])\nnet.stop()\n")
    assert main(["mininet", "--results", str(tmp_path), str(script), "2.5"]) == 0
    assert "2.5 noqueue" in capsys.readouterr().out.splitlines()


def test_mn_linear3_pingall(tmp_path, capsys):
    assert main(["mn", "--results", str(tmp_path), "--topo", "linear,3", "--test", "pingall"]) == 0
    out = capsys.readouterr().out
    assert ("*** Ping: testing ping reachability\nh1 -> h2 h3 \nh2 -> h1 h3 \nh3 -> h1 h2 \n"
            "*** Results: 0% dropped (6/6 received)\n") in out
    assert "*** Adding links:\n(h1, s1) (h2, s2) (h3, s3) (s2, s1) (s3, s2) \n" in out


def test_mn_tree_with_tc_links_and_custom_topology(tmp_path, capsys):
    assert main(["mn", "--results", str(tmp_path), "--topo", "tree,depth=2,fanout=2", "--link",
                 "tc,bw=10,delay=1ms,use_tbf", "--test", "pingpair"]) == 0
    out = capsys.readouterr().out
    assert "(10.00Mbit 1ms delay) (10.00Mbit 1ms delay) (s1, s2)" in out
    assert "h1 -> h2 \nh2 -> h1 \n*** Results: 0% dropped (2/2 received)" in out
    custom = tmp_path / "custom.py"
    custom.write_text("from bufferlab.mininet.topo import Topo\nclass Two(Topo):\n    def build(self):\n"
                      "        self.addLink(self.addHost('a'), self.addHost('b'))\ntopos = {'two': Two}\n")
    assert main(["mn", "--results", str(tmp_path), "--custom", str(custom), "--topo", "two", "--test",
                 "pingall"]) == 0
    assert "a -> b \nb -> a \n" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--topo", "ring,3"], "unknown topology 'ring'"),
    (["--test", "bogus"], "--test bogus: expected one of"),
    (["--link", "fast"], "--link fast: expected default or tc"),
    (["--link", "tc,bw=fast"], "bw='fast': expected bw=10"),
    (["--test", "iperf"], "iperf 2 .*not supported yet"),
])
def test_mn_bad_arguments(tmp_path, capsys, argv, message):
    assert main(["mn", "--results", str(tmp_path), *argv]) == 2
    assert re.search(message, capsys.readouterr().err)


def test_cli_fed_from_stdin(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(Mininet, "results_root", tmp_path)
    net = Mininet(topo=SingleSwitchTopo(2))
    net.start()
    capsys.readouterr()
    CLI(net, stdin=io.StringIO("h1 ping -c 1 h2\nnodes\nnet\nlinks\ndump\npingall\nnope\nh1 tc qdisc bogus\n"
                                   "exit\nnodes\n"))
    net.stop()
    out = capsys.readouterr().out
    assert "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data." in out
    assert "available nodes are: \nc0 h1 h2 s1\n" in out
    assert "s1 lo:  s1-eth1:h1-eth0 s1-eth2:h2-eth0\nh1 h1-eth0:s1-eth1\nh2 h2-eth0:s1-eth2\n" in out
    assert "h1-eth0<->s1-eth1 (OK OK) \nh2-eth0<->s1-eth2 (OK OK) \n" in out
    assert "<Host h1: h1-eth0:10.0.0.1 pid=1001>\n" in out
    assert "*** Results: 0% dropped (2/2 received)" in out
    assert "*** Unknown command: nope\n" in out
    assert "*** Error:" in out  # the bad tc line is reported and the CLI goes on to exit
    assert out.count("available nodes are") == 1  # nothing after exit


def test_notebook_example_table(tmp_path, monkeypatch, capsys):
    """examples/mininet/queue_sweep.py: the API from plain Python, a pandas table of RTTs that
    grow with the queue."""
    monkeypatch.setattr(Mininet, "results_root", tmp_path)
    runpy.run_path(str(EXAMPLE.with_name("queue_sweep.py")))
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    rtts = [float(r[1]) for r in rows]
    assert [int(r[0]) for r in rows] == [10, 25, 50, 100]
    assert rtts == sorted(rtts) and rtts[-1] > 5 * rtts[0]
