"""The everyday shell commands of a simulated host (issue 23, must-have 6): kill, pkill,
killall, wait, jobs, ps, ip, ifconfig, arp, hostname, cat, date.

Output formats are checked against text written by hand from the tools' layouts
(iproute2 ip/ipaddress.c, ip/iproute.c, ip/ipneigh.c; net-tools lib/interface.c, arp.c;
procps-ng ps; bash's jobs), behaviour by running scenarios that signal endless commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.commands import procs
from bufferlab.commands.shell import parse_shell
from bufferlab.errors import CommandError, NotSupportedError
from bufferlab.formats import netinfo
from bufferlab.formats import procs as procs_fmt
from bufferlab.run.programs import PROGRAMS
from conftest import TWO_HOSTS


def words(line: str):
    return parse_shell(line)[0].commands[0].words


# ---------------------------------------------------------------- formats


def test_ip_addr_and_link_follow_iproute2s_layout():
    eth = netinfo.Iface(2, "h1-eth0", "02:00:00:00:00:01", "10.0.0.1", 8, "noqueue", peer_index=3, netnsid=0)
    ifaces = [netinfo.loopback(), eth]
    assert netinfo.ip_addr_text(ifaces, brief=False, inet_only=False) == (
        "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n"
        "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n"
        "    inet 127.0.0.1/8 scope host lo\n"
        "       valid_lft forever preferred_lft forever\n"
        "2: h1-eth0@if3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP group default qlen 1000\n"
        "    link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff link-netnsid 0\n"
        "    inet 10.0.0.1/8 brd 10.255.255.255 scope global h1-eth0\n"
        "       valid_lft forever preferred_lft forever\n"
    )
    assert netinfo.ip_addr_text(ifaces, brief=True, inet_only=False) == (
        "lo               UNKNOWN        127.0.0.1/8 \n"
        "h1-eth0@if3      UP             10.0.0.1/8 \n")
    assert netinfo.ip_link_text([eth], brief=False) == (
        "2: h1-eth0@if3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT "
        "group default qlen 1000\n"
        "    link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff link-netnsid 0\n")
    assert netinfo.ip_link_text([eth], brief=True) == (
        "h1-eth0@if3      UP             02:00:00:00:00:01 <BROADCAST,MULTICAST,UP,LOWER_UP> \n")
    routed = netinfo.Iface(4, "r1-eth1", "02:00:00:00:00:03", "192.168.1.1", 24, "netem", peer_index=5)
    assert netinfo.ip_route_text([netinfo.loopback(), eth, routed]) == (
        "10.0.0.0/8 dev h1-eth0 proto kernel scope link src 10.0.0.1 \n"
        "192.168.1.0/24 dev r1-eth1 proto kernel scope link src 192.168.1.1 \n")


def test_ip_s_link_counters_in_both_iproute2_layouts():
    eth = netinfo.Iface(2, "h1-eth0", "02:00:00:00:00:01", "10.0.0.1", 8, "noqueue", peer_index=3, netnsid=0,
                        rx_packets=3, rx_bytes=238, tx_packets=12345678, tx_bytes=18_000_000_000)
    head = (
        "2: h1-eth0@if3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT "
        "group default qlen 1000\n    link/ether 02:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff link-netnsid 0\n"
    )
    assert netinfo.ip_link_text([eth], brief=False, stats=True, modern=False) == head + (
        "    RX: bytes  packets  errors  dropped overrun mcast   \n"
        "    238        3        0       0       0       0       \n"
        "    TX: bytes  packets  errors  dropped carrier collsns \n"
        "    18000000000 12345678 0       0       0       0       \n")
    assert netinfo.ip_link_text([eth], brief=False, stats=True, modern=True) == head + (
        "    RX:   bytes  packets errors dropped  missed   mcast           \n"
        "            238        3      0       0       0       0 \n"
        "    TX:   bytes  packets errors dropped carrier collsns           \n"
        "    18000000000 12345678      0       0       0       0 \n")


def test_neighbours_as_ip_neigh_and_arp_print_them():
    n = [netinfo.Neighbour("10.0.0.2", "h1-eth0", "02:00:00:00:00:03", True),
         netinfo.Neighbour("10.0.0.3", "h1-eth0", "02:00:00:00:00:05", False)]
    assert netinfo.ip_neigh_text(n, modern=False) == (
        "10.0.0.2 dev h1-eth0 lladdr 02:00:00:00:00:03 REACHABLE\n"
        "10.0.0.3 dev h1-eth0 lladdr 02:00:00:00:00:05 STALE\n")
    assert (
        netinfo.ip_neigh_text(n[:1], modern=True)
        == "10.0.0.2 dev h1-eth0 lladdr 02:00:00:00:00:03 REACHABLE \n"
    )
    assert netinfo.arp_text(n[:1], bsd=False) == (
        "Address                  HWtype  HWaddress           Flags Mask            Iface\n"
        "10.0.0.2                 ether   02:00:00:00:00:03   C                     h1-eth0\n")
    assert netinfo.arp_text(n[:1], bsd=True) == "? (10.0.0.2) at 02:00:00:00:00:03 [ether] on h1-eth0\n"
    assert netinfo.arp_text([], bsd=False) == ""  # no header above an empty table


def test_ifconfig_follows_net_tools_layout():
    eth = netinfo.Iface(2, "h1-eth0", "02:00:00:00:00:01", "10.0.0.1", 8, "noqueue", rx_packets=3,
                        rx_bytes=238, tx_packets=1500, tx_bytes=2_250_000)
    assert netinfo.ifconfig_text([netinfo.loopback(), eth]) == (
        "h1-eth0: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu 1500\n"
        "        inet 10.0.0.1  netmask 255.0.0.0  broadcast 10.255.255.255\n"
        "        ether 02:00:00:00:00:01  txqueuelen 1000  (Ethernet)\n"
        "        RX packets 3  bytes 238 (238.0 B)\n"
        "        RX errors 0  dropped 0  overruns 0  frame 0\n"
        "        TX packets 1500  bytes 2250000 (2.1 MiB)\n"
        "        TX errors 0  dropped 0 overruns 0  carrier 0  collisions 0\n"
        "\n"
        "lo: flags=73<UP,LOOPBACK,RUNNING>  mtu 65536\n"
        "        inet 127.0.0.1  netmask 255.0.0.0\n"
        "        loop  txqueuelen 1000  (Local Loopback)\n"
        "        RX packets 0  bytes 0 (0.0 B)\n"
        "        RX errors 0  dropped 0  overruns 0  frame 0\n"
        "        TX packets 0  bytes 0 (0.0 B)\n"
        "        TX errors 0  dropped 0 overruns 0  carrier 0  collisions 0\n"
        "\n")


def test_ps_and_jobs_follow_procps_and_bash():
    rows = [procs_fmt.PsRow(2000, 1, "pts/1", "bash", "bash", 0.0),
            procs_fmt.PsRow(2001, 2000, "pts/1", "iperf3", "iperf3 -s", 1.0)]
    assert procs_fmt.ps_text(rows, full=False, epoch=0) == (
        "    PID TTY          TIME CMD\n"
        "   2000 pts/1    00:00:00 bash\n"
        "   2001 pts/1    00:00:00 iperf3\n")
    assert procs_fmt.ps_text(rows[1:], full=True, epoch=3600) == (
        "UID          PID    PPID  C STIME TTY          TIME CMD\n"
        "root        2001    2000  0 01:00 pts/1    00:00:00 iperf3 -s\n")
    assert procs_fmt.ps_text(rows[:1] + [procs_fmt.PsRow(2001, 2000, "pts/1", "iperf3", "iperf3 -s", 1.0)],
                             full=False, epoch=0, bsd=True) == (
        "USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND\n"
        "root        2000  0.0  0.0      0     0 pts/1    S    00:00   0:00 bash\n"
        "root        2001  0.0  0.0      0     0 pts/1    S    00:00   0:00 iperf3 -s\n")
    assert (
        procs_fmt.job_line(1, "+", "Running", "iperf3 -s", True)
        == "[1]+  Running                 iperf3 -s &\n"
    )
    assert procs_fmt.job_line(2, "-", "Terminated", "ping 10.0.0.2", False, pid=2002) == (
        "[2]-  2002 Terminated              ping 10.0.0.2\n")


def test_what_a_tool_had_printed_when_a_signal_it_does_not_catch_ends_it():
    ping = ("PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n"
            "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.036 ms\n"
            "\n--- 10.0.0.2 ping statistics ---\n"
            "1 packets transmitted, 1 received, 0% packet loss, time 0ms\n")
    assert PROGRAMS["ping"].printed_before(ping) == (
        "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n"
        "64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.036 ms\n")
    client = ("Connecting to host 10.0.0.2, port 5201\n"
              "[ ID] Interval           Transfer     Bitrate\n"
              "[  5]   0.00-1.00   sec  1.19 MBytes  10.0 Mbits/sec\n"
              "[  5]   1.00-1.50   sec   610 KBytes  10.0 Mbits/sec\n"
              "- - - - - - - - - - - - - - - - - - - - - - - - -\n"
              "[  5]   0.00-1.50   sec  1.79 MBytes  10.0 Mbits/sec                  sender\n"
              "iperf3: interrupt - the client has terminated\n")
    assert PROGRAMS["iperf3"].printed_before(client) == (
        "Connecting to host 10.0.0.2, port 5201\n"
        "[ ID] Interval           Transfer     Bitrate\n"
        "[  5]   0.00-1.00   sec  1.19 MBytes  10.0 Mbits/sec\n")
    assert PROGRAMS["iperf"].printed_before is None  # iperf 2 prints its report at its end


def test_kill_parses_bashs_forms():
    assert procs.parse_kill(words("kill %iperf")).signal == 15
    k = procs.parse_kill(words("kill -9 %1 2003"))
    assert k.signal == 9 and [(t.text, t.pid) for t in k.targets] == [("%1", None), ("2003", 2003)]
    assert procs.parse_kill(words("kill -INT %1")).signal == 2
    assert procs.parse_kill(words("kill -SIGTERM %1")).signal == 15
    assert procs.parse_kill(words("kill -s int %1")).signal == 2
    assert procs.parse_kill(words("kill -n 1 %1")).signal == 1
    with pytest.raises(CommandError, match="FOO: invalid signal specification"):
        procs.parse_kill(words("kill -FOO %1"))
    with pytest.raises(CommandError, match="arguments must be process or job IDs"):
        procs.parse_kill(words("kill iperf"))
    with pytest.raises(NotSupportedError, match="stopping and continuing"):
        procs.parse_kill(words("kill -STOP %1"))
    assert procs.parse_pkill(words("pkill -9 -f 'iperf3 -s'")).signal == 9
    assert procs.parse_killall(words("killall -s INT ping")).signal == 2


# ---------------------------------------------------------------- behaviour


def scenario(*cmds: str, duration: str = "") -> str:
    body = ",\n".join(f"  {json.dumps(c)}" for c in cmds)
    extra = f'duration = "{duration}"\n' if duration else ""
    return f'name = "t"\nseed = 1\n{TWO_HOSTS}\n[[part]]\nname = "p"\n{extra}cmds = [\n{body},\n]\n'


def run(write_scenario, tmp_path: Path, text: str) -> tuple[int, Path]:
    status = main(["run", "--no-progress", "--no-report", "-q", "-o", str(tmp_path / "out"),
                   str(write_scenario(text))])
    return status, tmp_path / "out" / "t"


def test_kill_stops_an_endless_server_and_ping(write_scenario, tmp_path):
    status, root = run(write_scenario, tmp_path, scenario(
        "h2: iperf3 -s &",
        "h1: ping 10.0.0.2 > ping.txt &",
        "h1: sleep 3; kill -INT %1; sleep 0.1; jobs",
        "h2: sleep 4; pkill iperf3; sleep 0.1; ps",
    ))
    assert status == 0
    s = json.loads((root / "summary.json").read_text())
    assert s["failures"] == [] and s["simulated_s"] == pytest.approx(4.1, abs=0.01), s["failures"]
    ping = (root / "p" / "h1" / "ping.txt").read_text()
    assert "3 packets transmitted, 3 received" in ping and "^C" not in ping
    h1 = (root / "p" / "h1" / "terminal.log").read_text()
    assert "[1]+  Done                    ping 10.0.0.2 > ping.txt\n" in h1
    h2 = (root / "p" / "h2" / "terminal.log").read_text()
    assert "iperf3: interrupt - the server has terminated" in h2
    assert h2.endswith("    PID TTY          TIME CMD\n   3000 pts/2    00:00:00 bash\n"
                       "   3005 pts/2    00:00:00 ps\n")


def test_sigkill_and_sigterm_print_nothing_and_kill_reports_missing_jobs(write_scenario, tmp_path):
    status, root = run(write_scenario, tmp_path, scenario(
        "h1: ping 10.0.0.2 &",
        "h1: sleep 2.5; kill %1; kill %1; kill %7 || true; kill 9999 || true",
        "h2: sleep 100 &",
        "h2: sleep 3; killall -9 sleep; killall nothing || true",
    ))
    assert status == 0
    h1 = (root / "p" / "h1" / "terminal.log").read_text()
    # ping dies of SIGTERM (iputils catches INT and ALRM only): the replies it printed stay on
    # the terminal, no statistics follow
    assert "PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.\n64 bytes from 10.0.0.2: icmp_seq=1" in h1
    assert "icmp_seq=3 " in h1 and "icmp_seq=4 " not in h1 and "statistics" not in h1
    assert "bash: kill: %7: no such job\n" in h1 and "bash: kill: (9999) - No such process\n" in h1
    h2 = (root / "p" / "h2" / "terminal.log").read_text()
    assert "nothing: no process found\n" in h2


def test_a_link_set_down_drops_until_it_is_up_again(write_scenario, tmp_path):
    """``ip link set DEV down`` (and ``ifconfig DEV down``): the device neither sends nor receives,
    its drops are counted as link_down, ``ip link`` shows it DOWN without UP, ``ifconfig`` leaves
    it out unless -a; ``up`` brings the link back (issue 23, item 6)."""
    status, root = run(write_scenario, tmp_path, scenario(
        # h2's link is down from 2 s to 7 s: h1's second ping (3–6 s) is lost, its third (9 s) not
        "h1: ping -c 2 10.0.0.2",
        "h2: sleep 2; ip link set h2-eth0 down",
        "h2: ip link show h2-eth0",
        "h2: ifconfig",
        "h1: sleep 2; ping -c 3 -W 1 10.0.0.2 > lost.txt || true",
        "h2: sleep 5; ifconfig h2-eth0 up; ip -br link",
        "h1: sleep 3; ping -c 2 10.0.0.2 > back.txt",
    ))
    assert status == 0
    h2 = (root / "p" / "h2" / "terminal.log").read_text()
    out = {block.split("\n", 1)[0]: block for block in h2.split("$ ")}
    assert (
        "h2-eth0@if4: <BROADCAST,MULTICAST> mtu 1500 qdisc noqueue state DOWN" in out["ip link show h2-eth0"]
    )
    assert "lo: flags" in out["ifconfig"] and "h2-eth0" not in out["ifconfig"]  # without -a: up ones only
    assert "<BROADCAST,MULTICAST,UP,LOWER_UP>" in out["sleep 5; ifconfig h2-eth0 up; ip -br link"]
    assert (
        "3 packets transmitted, 0 received, 100% packet loss" in (root / "p" / "h1" / "lost.txt").read_text()
    )
    assert "2 packets transmitted, 2 received, 0% packet loss" in (root / "p" / "h1" / "back.txt").read_text()
    summary = json.loads((root / "summary.json").read_text())
    drops = summary["interfaces"]["h2-eth0"]["drops"]
    assert drops["link_down"]["packets"] >= 3, drops


def test_ifconfig_lists_a_downed_interface_only_with_a():
    up = netinfo.Iface(2, "h1-eth0", "00:00:00:00:00:01", "10.0.0.1", 8, "noqueue")
    down = netinfo.Iface(2, "h1-eth0", "00:00:00:00:00:01", "10.0.0.1", 8, "noqueue", down=True)
    assert netinfo.ifconfig_text([up]).startswith("h1-eth0: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>")
    assert netinfo.ifconfig_text([down]).startswith("h1-eth0: flags=4098<BROADCAST,MULTICAST>  mtu 1500")
    assert (down.state, down.flags) == ("DOWN", "BROADCAST,MULTICAST")


def test_host_shows_its_interfaces_routes_and_neighbours(write_scenario, tmp_path):
    status, root = run(write_scenario, tmp_path, scenario(
        "h1: ping -c 1 10.0.0.2", "h1: ip -br addr", "h1: ip route", "h1: arp -n", "h1: hostname",
        "admin: ip -br link", "h2: ip neigh",
    ))
    assert status == 0
    h1 = (root / "p" / "h1" / "terminal.log").read_text()
    assert (
        "$ ip -br addr\nlo               UNKNOWN        127.0.0.1/8 \nh1-eth0@if3      UP             10.0.0.1/8 \n"
        in h1
    )
    assert "$ ip route\n10.0.0.0/8 dev h1-eth0 proto kernel scope link src 10.0.0.1 \n" in h1
    assert "10.0.0.2                 ether   02:00:00:00:00:04   C                     h1-eth0\n" in h1
    assert "$ hostname\nbufferlab\n" in h1
    admin = (root / "p" / "admin" / "terminal.log").read_text()
    assert "s1-eth1@if2      UP             02:00:00:00:00:02 <BROADCAST,MULTICAST,UP,LOWER_UP> \n" in admin
    h2 = (root / "p" / "h2" / "terminal.log").read_text()
    assert "10.0.0.1 dev h2-eth0 lladdr 02:00:00:00:00:01 REACHABLE\n" in h2


def test_a_foreground_command_killed_from_another_terminal(write_scenario, tmp_path):
    """bash prints the signal's description for a foreground command a signal ended; a
    redirected ping (block-buffered) leaves an empty file; iperf3 killed by SIGKILL keeps
    its interval lines but prints no summary."""
    status, root = run(write_scenario, tmp_path, scenario(
        "h2: iperf3 -s &",
        "h1: ping 10.0.0.2",
        "h2: sleep 0.5; ping 10.0.0.1 > quiet.txt",
        "admin: sleep 2.5; pkill ping",
        "h1: iperf3 -c 10.0.0.2 -t 30",
        "admin: sleep 5.2; pkill -9 -x iperf3 -n",
    ))
    assert status == 0
    h1 = (root / "p" / "h1" / "terminal.log").read_text()
    assert "icmp_seq=3 " in h1 and "statistics" not in h1 and "\nTerminated\n$ iperf3" in h1
    assert "[  5]   4.00-5.00   sec" in h1 and "5.00-5.20" not in h1 and "- - - - -" not in h1
    assert h1.endswith("Killed\n")
    assert (root / "p" / "h2" / "quiet.txt").read_text() == ""
    assert "Terminated" in (root / "p" / "h2" / "terminal.log").read_text()


def test_last_background_pid(write_scenario, tmp_path, capsys):
    """`$!` is the PID of the last background job, known at once (`cmd & echo $!`), for
    echo, kill and wait; other programs refuse it clearly."""
    status, root = run(write_scenario, tmp_path, scenario(
        "h1: sleep 30 & echo $!; kill $!; wait $! || echo killed",
    ))
    h1 = (root / "p" / "h1" / "terminal.log").read_text()
    assert status == 0 and "\n2001\nkilled\n" in h1, h1
    assert json.loads((root / "summary.json").read_text())["simulated_s"] < 1
    capsys.readouterr()
    assert main(["check", str(write_scenario(scenario("h1: ping $!"), "u.toml"))]) == 2
    assert (
        "$! (the last background job's PID) is supported in echo, kill and wait only"
        in capsys.readouterr().err
    )


def test_ctrl_c_of_wait_leaves_the_background_job_running(write_scenario, tmp_path):
    """Typing the next line Ctrl-C's the foreground `wait` (status 130), not the job it
    waits for: the server still answers the client of the next part."""
    text = scenario("h2: iperf3 -s &", "h2: wait", duration="1s")
    text += '\n[[part]]\nname = "q"\ncmds = ["h2: jobs", "h1: iperf3 -c 10.0.0.2 -t 1"]\n'
    status, root = run(write_scenario, tmp_path, text)
    assert status == 0
    assert "[1]+  Running                 iperf3 -s &" in (root / "q" / "h2" / "terminal.log").read_text()
    assert "receiver" in (root / "q" / "h1" / "terminal.log").read_text()
