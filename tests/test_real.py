"""``bufferlab run --real``: the scenario on this machine's kernel (docs/real.md).

Skipped, with the reason, without root, network namespaces, ``tc`` or ``iperf3``. Every
test checks that nothing is left behind: no namespace of the run (``blr<pid>-*``) and no
process of it (each scenario's iperf3 uses a port of its own, looked for in ``ps``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from functools import cache
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.cli import main
from bufferlab.real import netns
from bufferlab.real.preflight import RealError, check_machine, read_plan
from bufferlab.run.scheduler import Runner
from conftest import TWO_HOSTS


@cache
def _unavailable() -> str | None:
    if sys.platform != "linux":
        return "needs Linux"
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    for tool in ("ip", "tc", "iperf3"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = f"blt{uuid.uuid4().hex[:6]}"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode != 0:
        return "network namespaces are not available here"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


needs_kernel = pytest.mark.skipif(_unavailable() is not None, reason=str(_unavailable()))


def _scenario(port: int, extra: str = "", h1: str | None = None, sim: str = "") -> str:
    h1 = h1 or f"h1: iperf3 -c 10.0.0.2 -p {port} -t 2 -J > o.json"
    return f"""
name = "real"
{sim}
{TWO_HOSTS}[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root tbf rate 10mbit burst 15k limit 150k",
  "h2: iperf3 -s -p {port}",
  "admin: plot_q.sh s1-eth2 &",
  "{h1}",
  {extra}
]
"""


def _bufferlab(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "bufferlab.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def _ours(pid: int) -> list[str]:
    return [ns for ns in netns.netns_list() if ns.startswith(f"{netns.PREFIX}{pid}-")]


def _procs_with(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if marker in ln and "ps -eo" not in ln]


def _run_real(path: Path, tmp_path: Path, port: int) -> str:
    """``bufferlab run --real`` of ``path`` into ``tmp_path/results``: it succeeds and leaves
    nothing behind; its standard output."""
    p = _bufferlab("run", "--real", str(path), "-o", str(tmp_path / "results"), "--no-report")
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    _nothing_left(p.pid, port)
    return out


def _nothing_left(pid: int, port: int) -> None:
    assert _ours(pid) == []
    # and nothing was ever made in the machine's own namespace
    root_links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    assert not re.search(r"^(h\d+-eth|s\d+-eth|s\d+ )", root_links, re.M), root_links
    assert _procs_with(f"-p {port}") == []
    assert _procs_with(f"{netns.PREFIX}{pid}-") == []  # the delay lines name their namespaces


@needs_kernel
def test_tbf_goodput_outputs_and_compare(write_scenario, tmp_path):
    port = 5390
    path = write_scenario(_scenario(port))
    out = _run_real(path, tmp_path, port)
    root = tmp_path / "results" / "t-real"
    doc = json.loads((root / "p/h1/o.json").read_text())
    goodput = doc["end"]["sum_received"]["bits_per_second"]
    print(f"real goodput {goodput / 1e6:.2f} Mbit/s; {out}")
    assert 8e6 <= goodput <= 10e6
    summary = json.loads((root / "summary.json").read_text())
    part = summary["parts"][0]
    assert "tbf" in part["tc"]["s1-eth2"] and part["qdiscs"]["s1-eth2"][0]["kind"] == "tbf"
    assert part["queues"] == ["p/queue_s1-eth2.csv"] and (root / "p/admin/q_s1-eth2.dat").is_file()
    assert part["results"]["iperf3"][0]["goodput_mbps"] == pytest.approx(goodput / 1e6, abs=0.01)
    assert (root / "tables/intervals.parquet").is_file()
    # the simulated run of the same file, side by side
    run_scenario(load_scenario(path), results_root=tmp_path / "results", progress=False)
    c = _bufferlab("compare", str(tmp_path / "results/t"), str(root), "-o", str(tmp_path / "cmp"))
    cout, cerr = c.communicate(timeout=60)
    assert c.returncode == 0, cerr
    rows = (tmp_path / "cmp/compare.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[2].startswith("t-real,1,")
    # the report shows the kernel's own tc -s text
    assert main(["report", str(root)]) == 0
    assert "qdisc tbf" in (root / "report.html").read_text()


@needs_kernel
def test_sigterm_removes_every_namespace_and_process(write_scenario, tmp_path):
    port = 5391
    path = write_scenario(_scenario(port, h1="h1: sleep 30"))
    p = _bufferlab("run", "--real", str(path), "-o", str(tmp_path / "results"), "--no-report")
    end = time.monotonic() + 20
    while time.monotonic() < end and not (_ours(p.pid) and _procs_with(f"-p {port}")):
        time.sleep(0.1)
    assert _ours(p.pid), "the run built its namespaces"
    time.sleep(0.3)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 143, err
    _nothing_left(p.pid, port)
    summary = json.loads((tmp_path / "results/t-real/summary.json").read_text())
    assert summary["interrupted"] == "SIGTERM" and summary["parts"][0]["interrupted"] == "SIGTERM"


@needs_kernel
def test_a_run_time_error_cleans_up_too(write_scenario, tmp_path):
    port = 5392
    path = write_scenario(_scenario(port, h1="h1: sleep 10", sim='[sim]\nstop_at = "1s"'))
    p = _bufferlab("run", "--real", str(path), "-o", str(tmp_path / "results"), "--no-report")
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "did not finish within stop_at" in err and ":8: sleep 10" in err, err
    _nothing_left(p.pid, port)


@needs_kernel
def test_kill_9_leftovers_go_with_the_next_run(write_scenario, tmp_path):
    port = 5393
    path = write_scenario(_scenario(port, h1="h1: sleep 30"))
    p = _bufferlab("run", "--real", str(path), "-o", str(tmp_path / "results"), "--no-report")
    end = time.monotonic() + 20
    while time.monotonic() < end and not (_ours(p.pid) and _procs_with(f"-p {port}")):
        time.sleep(0.1)
    p.kill()
    p.communicate(timeout=10)
    assert _ours(p.pid), "SIGKILL leaves the namespaces"
    gone = netns.reap_orphans()  # what the next run does first
    assert set(_ours(p.pid)) == set() and gone
    assert _procs_with(f"-p {port}") == []


@needs_kernel
def test_a_qdisc_kind_the_kernel_lacks_is_named_before_anything_starts(write_scenario, tmp_path):
    path = write_scenario(_scenario(5394, extra='"admin: tc qdisc add dev s1-eth1 root red limit 400000 '
                                    'min 30000 max 90000 avpkt 1000 burst 55 bandwidth 10mbit", '
                                    '"h1: iperf3 -c 10.0.0.2 -p 5394 -t 1 -C htcp",'))
    r = Runner(load_scenario(path))
    r.check()
    plan = read_plan(r.sc, r.topo, r.lines)
    try:
        check_machine(plan, f"blr{os.getpid()}")
    except RealError as e:
        message = str(e)
    else:
        pytest.skip("this kernel builds red")
    assert "this kernel has no red qdisc" in message and "t.toml:" in message
    available = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    assert ("no htcp congestion control" in message) == ("htcp" not in available)
    p = _bufferlab("run", "--real", str(path), "-o", str(tmp_path / "results"))
    _, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "no red qdisc" in err
    assert not (tmp_path / "results/t-real").exists() and _ours(p.pid) == []


@needs_kernel
@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_netem_delay_is_a_delay_line_where_the_kernel_has_no_netem(write_scenario, tmp_path):
    """Lab 14's pattern: netem at the root, the tbf under it (which becomes the root behind
    the delay line where the kernel has no netem)."""
    port = 5395
    path = write_scenario(f"""
name = "real"
{TWO_HOSTS}[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 10mbit burst 15k limit 150k",
  "h2: iperf3 -s -p {port}",
  "h1: iperf3 -c 10.0.0.2 -p {port} -t 2 -J > o.json",
  "h1: ping 10.0.0.2 -c 4 -i 0.2",
]
""")
    _run_real(path, tmp_path, port)
    summary = json.loads((tmp_path / "results/t-real/summary.json").read_text())
    res = summary["parts"][0]["results"]
    if "no netem" in json.dumps(summary["real"]["notes"]):
        assert "qdisc tbf 2: root" in summary["parts"][0]["tc"]["s1-eth2"]
    assert 8 <= res["iperf3"][0]["goodput_mbps"] <= 10, res
    # the first reply also waited for ARP, whose answer crossed the delay too
    assert res["ping"][0]["received"] == 4 and 19.9 <= res["ping"][0]["min_ms"] <= 25, res


def test_not_root_is_a_clear_error(write_scenario, monkeypatch):
    path = write_scenario(_scenario(5396))
    r = Runner(load_scenario(path))
    r.check()
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(RealError, match="needs root"):
        check_machine(read_plan(r.sc, r.topo, r.lines), "blr0")


def test_the_socket_tools_run_for_real(write_scenario):
    """ss, netstat and nstat read the namespace's own sockets and counters: real tools with
    --real (nstat's history kept in the terminal's folder, not the machine's /tmp)."""
    path = write_scenario(_scenario(5395, extra='"h1: ss -tin", "h1: netstat -st", "h1: nstat -a",'))
    r = Runner(load_scenario(path))
    r.check()
    plan = read_plan(r.sc, r.topo, r.lines)
    assert plan.problems == []
    assert {"ss", "netstat", "nstat"} <= set(plan.programs)


def test_lines_that_would_reach_the_machine_are_refused(write_scenario, monkeypatch):
    path = write_scenario(_scenario(5397, extra='"h1: pkill iperf3",'))
    r = Runner(load_scenario(path))
    r.check()
    plan = read_plan(r.sc, r.topo, r.lines)
    assert any("pkill" in p and "machine" in p for p in plan.problems)
    if os.geteuid() == 0 and _unavailable() is None:
        plan.problems = []
        plan.sysctls["kernel.sched_child_runs_first"] = "t.toml:1:1"  # not a namespace's own
        with pytest.raises(RealError, match="only net"):
            check_machine(plan, f"blr{os.getpid()}")


@needs_kernel
@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_terminals_across_parts_and_sysctls_stay_in_their_namespace(write_scenario, tmp_path):
    """A server typed in part one serves part three; an endless ping ends with its part's
    `interrupt`; a TCLink delay on both ends; a host's sysctl never reaches the machine's."""
    port = 5398
    machine_cc = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text()
    # the hosts start with cubic, or reno where the machine does not allow a namespace
    # cubic (real/netns.py DEFAULT_CC); the sysctl picks another one a namespace may choose
    allowed = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control").read_text().split()
    hosts_cc = "cubic" if "cubic" in allowed else "reno"
    others = [cc for cc in ["reno", *allowed] if cc != hosts_cc]
    if not others:
        pytest.skip("this machine lets a namespace choose no congestion control but its default")
    other = others[0]
    path = write_scenario(f"""
name = "multi"
[sim]
part_gap = "0.3s"
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], {{ a = "s1", b = "h2", delay = "5ms" }}]
[[part]]
name = "one"
cmds = ["h2: iperf3 -s -p {port}", "h1: iperf3 -c 10.0.0.2 -p {port} -u -b 5M -t 1 -J > udp.json"]
[[part]]
name = "two"
duration = "1.2s"
interrupt = ["h1"]
cmds = ["h1: sysctl -w net.ipv4.tcp_congestion_control={other}", "h1: ping 10.0.0.2 -i 0.5"]
[[part]]
name = "three"
cmds = ["h1: iperf3 -c 10.0.0.2 -p {port} -t 1 -J > tcp.json && echo done"]
""")
    _run_real(path, tmp_path, port)
    assert Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text() == machine_cc
    root = tmp_path / "results/t-real"
    tcp = json.loads((root / "three/h1/tcp.json").read_text())
    assert tcp["end"]["sender_tcp_congestion"] == other  # the namespace's own default
    server = (root / "one/h2/terminal.log").read_text()
    assert server.count("Accepted connection") == 2  # the one server served part three too
    ping = json.loads((root / "summary.json").read_text())["parts"][1]["results"]["ping"][0]
    assert ping["transmitted"] >= 2 and 10 <= ping["min_ms"] <= 15, ping
    assert (root / "three/h1/terminal.log").read_text().endswith("done\n")


@needs_kernel
@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_mininet_api_on_the_kernel(tmp_path):
    """``Mininet(topo, real=True)``: the script's lines run for real; net.stop() removes all."""
    from bufferlab.mininet.link import TCLink
    from bufferlab.mininet.net import Mininet, results_in
    from bufferlab.mininet.topo import Topo

    class Two(Topo):
        def build(self):
            h1, h2, s1 = self.addHost("h1"), self.addHost("h2"), self.addSwitch("s1")
            self.addLink(h1, s1)
            self.addLink(s1, h2, delay="5ms")

    results_in(tmp_path, "mn")
    net = Mininet(Two(), link=TCLink, real=True)
    net.start()
    try:
        h1, h2 = net.get("h1", "h2")
        out = h1.cmd("ping -c 3 -i 0.2", h2.IP())
        assert "3 received" in out
        rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out)]
        assert 9.9 <= min(rtts) <= 15, out  # 5 ms each way, the link's delay on both ends
        assert _ours(os.getpid())
    finally:
        net.stop()
    assert _ours(os.getpid()) == []
    assert (tmp_path / "mn-real/mininet/h1/terminal.log").read_text().startswith("$ ping")


@needs_kernel
@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_interfaces_named_alike_on_two_hosts(write_scenario, tmp_path):
    """Two hosts' eth0 (the engine's h1/eth0 and h2/eth0): each line reaches its own."""
    path = write_scenario("""
name = "eth0s"
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [{ a = "h1", b = "s1", a_intf = "eth0" }, { a = "h2", b = "s1", a_intf = "eth0" }]
[[part]]
name = "p"
cmds = [
  "h2: tc qdisc add dev eth0 root netem delay 10ms",
  "h1: tc qdisc add dev eth0 root tbf rate 10mbit burst 15k limit 100k",
  "h1: ping 10.0.0.2 -c 3 -i 0.2",
]
""")
    p = _bufferlab("run", "--real", str(path), "-o", str(tmp_path / "results"), "--no-report", "-q")
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert _ours(p.pid) == []
    part = json.loads((tmp_path / "results/t-real/summary.json").read_text())["parts"][0]
    assert list(part["qdiscs"]) == ["h1/eth0"] and "tbf" in part["tc"]["h1/eth0"]
    assert 9.9 <= part["results"]["ping"][0]["min_ms"] <= 15


@needs_kernel
@pytest.mark.skipif(shutil.which("ping") is None, reason="ping is not installed")
def test_mn_real(tmp_path):
    p = _bufferlab("mn", "--real", "--topo", "linear,3", "--link", "tc,delay=2ms", "--test", "pingall",
                   "-o", str(tmp_path))
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert "0% dropped (6/6 received)" in out + err and "(real time)" in out + err
    assert _ours(p.pid) == [] and (tmp_path / "mn-real/report.html").is_file()


@needs_kernel
def test_files_outside_the_node_folder_are_refused(write_scenario, tmp_path):
    """The tools run as root: as in a simulated run, what a line reads or writes stays
    in its node's results folder."""
    outside = tmp_path / "outside"
    path = write_scenario(f"""
name = "paths"
[topology]
hosts = ["h1", "h2"]
links = [["h1", "h2"]]
[[part]]
name = "p"
cmds = ["h1: mkdir {outside} || true", "h1: cat ../../t.toml || true",
        "h1: iperf3 -c 10.0.0.2 --logfile {outside}.log || true", "h1: echo hi > ../x || true",
        "h1: mkdir -p a/b && echo made"]
""")
    p = _bufferlab("run", "--real", str(path), "-o", str(tmp_path / "results"), "--no-report", "-q")
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    assert not outside.exists() and not Path(f"{outside}.log").exists()
    log = (tmp_path / "results/t-real/p/h1/terminal.log").read_text()
    assert log.count("outside the node's results folder") == 4 and log.endswith("made\n"), log
    assert not (tmp_path / "results/t-real/p/x").exists() and (tmp_path / "results/t-real/p/h1/a/b").is_dir()


@needs_kernel
def test_a_terminals_tc_lines_are_done_before_a_flow_typed_after_them_starts(write_scenario, tmp_path):
    """tc takes no time in the simulation: a flow typed after an htb's classes finds them in
    place. Twelve class lines make the window wide: a runner that started the client's
    terminal once the admin's first line had started sent its first second unclassified,
    at line rate past the 10 Mbit/s parent (htb's direct_packets_stat; the fidelity case
    htb-split lost two of three kernel runs that way)."""
    port = 5391
    spares = ",\n".join(
        f'  "admin: tc class add dev s1-eth2 parent 1:1 classid 1:{30 + k} htb rate 1mbit"'
        for k in range(10))
    path = write_scenario(f"""
{TWO_HOSTS}
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: htb default 20",
  "admin: tc class add dev s1-eth2 parent 1: classid 1:1 htb rate 10mbit",
{spares},
  "admin: tc class add dev s1-eth2 parent 1:1 classid 1:20 htb rate 10mbit",
  "h2: iperf3 -s -p {port} &",
  "h1: iperf3 -c 10.0.0.2 -p {port} -t 2 -C cubic -J > o.json",
]
""")
    _run_real(path, tmp_path, port)
    (root,) = (tmp_path / "results").iterdir()
    doc = json.loads((root / "p/h1/o.json").read_text())
    assert doc["end"]["sum_received"]["bits_per_second"] <= 10e6
    (htb,) = json.loads((root / "summary.json").read_text())["parts"][0]["qdiscs"]["s1-eth2"][:1]
    # a namespace's own IPv6 chatter may pass while the classes are made: a few packets, no flow
    assert htb["options"]["direct_packets_stat"] < 20, htb
