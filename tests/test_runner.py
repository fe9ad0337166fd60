"""The scenario runner: terminals, lines, parts and the shell around the commands
(docs/internals.md "How lines run"), checked through what each terminal printed, the files
it wrote and the part times in summary.json."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.cli import main
from bufferlab.errors import BufferlabError, ScenarioError

TOPO = """[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""
NS = 1_000_000_000


def part(name: str, *cmds: str, extra: str = "") -> str:
    items = "".join(f"  {json.dumps(c)},\n" for c in cmds)
    return f'[[part]]\nname = "{name}"\n{extra}cmds = [\n{items}]\n'


#: the runner's semantics are checked to the nanosecond, so these scenarios turn the
#: hosts' stack time off (host.rs; tested in crates/bufferlab-core/tests/engine.rs and
#: tests/test_handout_labs.py); `host_time=True` keeps it
NO_HOST_TIME = "host_packet_ns = 0\nhost_byte_ps = 0\nhost_wakeup_ns = 0\n"


def scenario(*cmds: str, sim: str = "", extra: str = "", host_time: bool = False) -> str:
    sim = sim if host_time else NO_HOST_TIME + sim
    return f'name = "t"\nseed = 1\n[sim]\n{sim}\n{TOPO}\n' + part("p", *cmds, extra=extra)


def run(path: Path, out: Path) -> dict:
    return run_scenario(load_scenario(path), results_root=out, progress=False)


class Result:
    """A finished run: terminal logs and files of part ``p`` (by default)."""

    def __init__(self, summary: dict, root: Path) -> None:
        self.summary = summary
        self.root = root

    def log(self, term: str, part: str = "p") -> str:
        return (self.root / part / term / "terminal.log").read_text()

    def file(self, rel: str, part: str = "p") -> str:
        return (self.root / part / rel).read_text()

    def end_ns(self, part: str = "p") -> int:
        return next(p["end_ns"] for p in self.summary["parts"] if p["name"] == part)


@pytest.fixture
def lab(write_scenario, tmp_path):
    """Run a scenario (the commands of part ``p``, or a whole ``text``) into a fresh folder."""
    runs = iter(range(100))

    def go(
        *cmds: str, sim: str = "", extra: str = "", text: str | None = None, host_time: bool = False
    ) -> Result:
        path = write_scenario(
            text if text is not None else scenario(*cmds, sim=sim, extra=extra, host_time=host_time)
        )
        out = tmp_path / f"out{next(runs)}"
        return Result(run(path, out), out / path.stem)

    return go


# s1-eth2 faces s2: h1/h2 -> h3 cross the netem, so an RTT is 10 ms (20 ms for a first ping: ARP)
NETEM = "admin: sudo tc qdisc add dev s1-eth2 root netem delay 10ms"
REFUSED = "iperf3: error - unable to connect to server: Connection refused\n"


# ---------------------------------------------------------------------- the shell


def test_tc_add_twice_fails_and_stops_an_and_chain_but_not_a_semicolon(lab):
    add = "tc qdisc add dev s1-eth2 root netem delay 10ms"
    r = lab(f"admin: {add}", f"admin: sudo {add} && echo not-run", f"admin: ./{add}; echo runs")
    assert r.log("admin") == (
        f"$ {add}\n"
        f"$ sudo {add} && echo not-run\n"
        "RTNETLINK answers: File exists\n"
        f"$ ./{add}; echo runs\n"
        "RTNETLINK answers: File exists\n"
        "runs\n"
    )


def test_redirections_truncate_and_append_as_bash(lab):
    r = lab("h1: echo a > f; echo b > f; echo c >> f; echo d >>g; true > h", "h1: echo old > e; true > e")
    assert r.file("h1/f") == "b\nc\n"
    assert r.file("h1/g") == "d\n"
    assert r.file("h1/h") == "", "`> h` creates the file even if the command prints nothing"
    assert r.file("h1/e") == "", "and empties it"
    assert r.log("h1").count("\n") == 2  # only the echoed lines: output went to the files


def test_a_failed_redirection_skips_the_command(lab):
    r = lab("h1: mkdir d; echo x > d && echo not-run; echo y > nodir/f; echo z > ../../x; echo w > /etc/x")
    assert r.log("h1").splitlines()[1:] == [
        "bash: d: Is a directory",
        "bash: nodir/f: No such file or directory",
        "bash: ../../x: Permission denied (outside the node's results folder)",
        "bash: /etc/x: Permission denied (outside the node's results folder)",
    ]
    assert not (r.root / "x").exists()


def test_cd_into_a_missing_folder_fails(lab):
    r = lab("h1: cd nothere && echo not-run; echo ran > f", "h1: cd ..; cd /tmp")
    assert r.log("h1").splitlines()[1:] == [
        "bash: cd: nothere: No such file or directory",
        "$ cd ..; cd /tmp",
        "bash: cd: ..: No such file or directory",
        "bash: cd: /tmp: No such file or directory",
    ]
    assert r.file("h1/f") == "ran\n"


def test_mkdir_p_and_cd_carry_over_to_the_next_line_of_the_terminal(lab):
    r = lab(
        "h1: mkdir -p a/b/c && cd a/b && echo hi > f.txt",
        "h1: echo there > g.txt; cd; echo home > h.txt",
        "h1: mkdir a; mkdir x/y; mkdir -p a",
    )
    assert r.file("h1/a/b/f.txt") == "hi\n"
    assert r.file("h1/a/b/g.txt") == "there\n"
    assert r.file("h1/h.txt") == "home\n"
    assert (r.root / "p/h1/a/b/c").is_dir()
    assert r.log("h1").splitlines()[-2:] == [
        "mkdir: cannot create directory 'a': File exists",
        "mkdir: cannot create directory 'x/y': No such file or directory",
    ]


def test_sleep_delays_the_rest_of_the_line(lab):
    r = lab(NETEM, "h1: sleep 2; ping 10.0.0.3 -c 1", "h2: sleep 500ms && sleep 0.25")
    rtt = re.findall(r"time=([\d.]+) ms", r.log("h1"))
    assert rtt == ["20.0"]  # 2 x 10 ms: ARP then the echo, both across the netem
    # the part ends when the ping's reply arrives: it was sent at t = 2 s
    assert r.end_ns() == 2 * NS + 20_000_000


def test_background_jobs_run_beside_the_terminal_and_the_part_waits_for_them(lab):
    r = lab(NETEM, "h1: sleep 5 &", "h1: ping 10.0.0.3 -c 1 > p.txt & echo started", "h2: echo other")
    assert r.log("h1") == "$ sleep 5 &\n$ ping 10.0.0.3 -c 1 > p.txt & echo started\nstarted\n"
    assert "1 packets transmitted, 1 received" in r.file("h1/p.txt")
    # the ping ran at t = 0 beside the sleep (after it, the part would end at 5.02 s),
    # and the part waited for the finite background sleep
    assert r.end_ns() == 5 * NS


def test_lines_of_one_terminal_run_in_order(lab):
    r = lab(NETEM, "h1: ping 10.0.0.3 -c 2 > a.txt", "h1: ping 10.0.0.3 -c 1 > b.txt", "h2: sleep 1")
    # a: sends at 0 and 1.0001 s, last reply 10 ms later; then b: one ping, 10 ms
    assert r.end_ns() == 1_000_100_000 + 10_000_000 + 10_000_000
    assert "time=20.0 ms" in r.file("h1/a.txt") and "time=10.0 ms" in r.file("h1/b.txt")


# ---------------------------------------------------------------------- one instant, file order


def test_a_server_written_before_its_client_serves_it(lab):
    r = lab("h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -u -t 1 && echo done")
    assert "Accepted connection from 10.0.0.1" in r.log("h3")
    assert r.log("h1").endswith("iperf Done.\ndone\n")


def test_a_client_written_before_its_server_is_refused(lab):
    # At one instant lines start in file order: the client tries to connect before the
    # server listens, exactly as if it had been typed first in a real terminal.
    r = lab("h1: iperf3 -c 10.0.0.3 -u -t 1 && echo not-run", "h3: iperf3 -s")
    assert r.log("h1") == "$ iperf3 -c 10.0.0.3 -u -t 1 && echo not-run\n" + REFUSED
    assert "Accepted connection" not in r.log("h3")
    # a client that waits for the server's start is served
    r = lab("h1: sleep 0.001; iperf3 -c 10.0.0.3 -u -t 1 > c.txt", "h3: iperf3 -s")
    assert r.file("h1/c.txt").endswith("iperf Done.\n")
    # with the hosts' stack time the SYN spends microseconds in h1's stack: the
    # server typed at the same instant listens by the time it arrives
    r = lab("h1: iperf3 -c 10.0.0.3 -u -t 1 > c.txt", "h3: iperf3 -s", host_time=True)
    assert r.file("h1/c.txt").endswith("iperf Done.\n")


def test_configuration_lines_written_first_take_effect_first(lab):
    r = lab("h1: ping 10.0.0.3 -c 1 > before.txt", NETEM, "h2: ping 10.0.0.3 -c 1 > after.txt")
    assert "time=0.000 ms" in r.file("h1/before.txt")
    assert "time=20.0 ms" in r.file("h2/after.txt")


# ---------------------------------------------------------------------- endless commands, parts


def test_endless_commands_are_interrupted_as_by_ctrl_c_at_the_end_of_the_part(lab):
    r = lab("h3: iperf3 -s", "h3: echo after", "h2: ping 10.0.0.3", "h1: iperf3 -c 10.0.0.3 -u -t 2")
    server = r.log("h3")
    assert server.endswith(
        "Server listening on 5201\n"
        "-----------------------------------------------------------\n"
        "iperf3: interrupt - the server has terminated\n"
        "$ echo after\nafter\n"
    )
    ping = r.log("h2")
    # sent at 0 and 1.0001 s; the third would leave at 2.0002 s, after the Ctrl-C at 2 s
    assert "\n^C\n--- 10.0.0.3 ping statistics ---\n2 packets transmitted, 2 received" in ping
    assert r.end_ns() == 2 * NS


def test_duration_keeps_an_endless_ping_running(lab):
    r = lab(NETEM, "h1: ping 10.0.0.3", extra='duration = "5s"\n')
    text = r.log("h1")
    assert re.findall(r"icmp_seq=(\d+)", text) == ["1", "2", "3", "4", "5"]
    assert "^C\n--- 10.0.0.3 ping statistics ---\n5 packets transmitted, 5 received, 0% packet loss" in text
    assert r.end_ns() == 5 * NS


def test_parts_have_their_own_folders_and_the_network_carries_over(lab):
    text = (
        f'name = "t"\n[sim]\n{NO_HOST_TIME}{TOPO}\n'
        + part("one", NETEM, "h1: echo 1 > out.txt")
        + part("two", NETEM, "h1: echo 2 > out.txt; ping 10.0.0.3 -c 1 -q > p.txt")
        + part("..", "h1: echo 3 > out.txt")
    )
    r = lab(text=text)
    assert r.file("h1/out.txt", "one") == "1\n" and r.file("h1/out.txt", "two") == "2\n"
    assert "RTNETLINK answers: File exists" in r.log("admin", "two")
    # part one's netem still delays part two's ping (2 x 10 ms: ARP, then the echo)
    assert "rtt min/avg/max/mdev = 20.000/" in r.file("h1/p.txt", "two")
    assert [p["name"] for p in r.summary["parts"]] == ["one", "two", "scenario"]
    assert r.file("h1/out.txt", "scenario") == "3\n", "a part named '..' stays inside the results"


def test_stop_at_caps_a_part_and_names_the_still_running_lines(write_scenario, tmp_path):
    text = scenario("h1: ping 10.0.0.3 -c 100 &", "h2: sleep 60", "h3: iperf3 -s", sim='stop_at = "10s"')
    path = write_scenario(text)
    with pytest.raises(BufferlabError) as e:
        run(path, tmp_path)
    lines = text.splitlines()
    at = [f"{path}:{i + 1}:{ln.index(':') + 3}" for i, ln in enumerate(lines) if ln.startswith('  "h')]
    assert str(e.value).splitlines()[:3] == [
        f"{path}:{lines.index('[[part]]') + 1}: error: part 'p' did not finish within stop_at = 10 s "
        "of simulated time; still running:",
        f"    {at[0]}: ping 10.0.0.3 -c 100 &",
        f"    {at[1]}: sleep 60",
    ]
    summary = json.loads((tmp_path / "t/summary.json").read_text())
    assert summary["error"] == str(e.value) and summary["simulated_s"] == 10.0
    # the terminals' logs of the part are kept: they show where it got stuck
    assert "icmp_seq=10 " in (tmp_path / "t/p/h1/terminal.log").read_text()


# ---------------------------------------------------------------------- iperf3


def test_iperf3_client_without_server_is_refused(lab):
    r = lab("h1: iperf3 -c 10.0.0.3 -u && echo not-run; echo next")
    assert r.log("h1") == "$ iperf3 -c 10.0.0.3 -u && echo not-run; echo next\n" + REFUSED + "next\n"


def test_iperf3_daemon_returns_at_once_and_logs_to_its_logfile(lab):
    r = lab(
        "h3: iperf3 -s -D --logfile s.log",
        "h3: mkdir d && cd d && echo next",
        "h1: sleep 1; iperf3 -c 10.0.0.3 -u -t 1 > c.txt",
    )
    assert r.log("h3") == "$ iperf3 -s -D --logfile s.log\n$ mkdir d && cd d && echo next\nnext\n"
    assert r.file("h1/c.txt").endswith("iperf Done.\n")
    # the log file was opened where the daemon started, before the terminal's cd
    log = r.file("h3/s.log")
    assert "Accepted connection from 10.0.0.1" in log
    assert log.endswith("iperf3: interrupt - the server has terminated\n")
    assert not (r.root / "p/h3/d/s.log").exists()
    assert r.end_ns() == 2 * NS, "a daemon does not keep the part alive"

    r = lab("h3: iperf3 -s -D", "h1: iperf3 -c 10.0.0.3 -u -t 1 > c.txt")
    assert r.log("h3") == "$ iperf3 -s -D\n", "without --logfile a daemon's output goes nowhere"
    assert r.file("h1/c.txt").endswith("iperf Done.\n")


def test_iperf3_one_off_server_serves_one_client(lab):
    r = lab(
        "h3: iperf3 -s -1 && echo server-done",
        "h1: iperf3 -c 10.0.0.3 -u -t 1 > a.txt; iperf3 -c 10.0.0.3 -u -t 1",
    )
    assert r.file("h1/a.txt").endswith("iperf Done.\n")
    assert r.log("h1").endswith(REFUSED)
    assert r.log("h3").endswith("receiver\nserver-done\n")
    assert "interrupt" not in r.log("h3")


def test_iperf3_bytes_and_time_zero(lab):
    # -n: a byte count instead of a time (iperf3 then sets the duration to 0)
    r = lab("h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -u -n 14480 -J > n.json")
    doc = json.loads(r.file("h1/n.json"))
    assert doc["end"]["sum"]["packets"] == 10  # ten 1448-byte datagrams
    assert doc["end"]["sum"]["bytes"] == 14480
    # -t 0: until interrupted, here by the end of the part
    r = lab("h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -u -t 0 -b 1M > t0.txt", extra='duration = "3s"\n')
    text = r.file("h1/t0.txt")
    assert re.findall(r"\]\s+(\d\.\d\d-\d\.\d\d)\s+sec", text)[:3] == ["0.00-1.00", "1.00-2.00", "2.00-3.00"]
    assert text.endswith("iperf3: interrupt - the client has terminated\n")
    assert r.end_ns() == 3 * NS


def test_iperf3_logfile_must_stay_in_the_node_folder(lab):
    r = lab("h3: iperf3 -s -1 --logfile ../../../x.log && echo not-run")
    assert r.log("h3").splitlines()[1:] == [
        "iperf3: error - unable to open log file: Permission denied (outside the node's results folder)"
    ]


def test_a_port_in_use_is_reported_once_by_the_program(lab):
    r = lab("h3: sink -u & sink -u", "h1: sleep 1")
    assert "sink: UDP port 5001 is already in use on this host\n" in r.log("h3")
    assert "sink: sink:" not in r.log("h3")


# ---------------------------------------------------------------------- profile, determinism


@pytest.mark.parametrize(
    "profile, shown, elapsed", [("lab2019", "14.10", "1ms"), ("modern", "15.0", "1000ms")]
)
def test_profile_changes_the_ping_output(profile, shown, elapsed, lab):
    # 14.98 ms one way: the second ping's RTT is 14.979 ms (netem's 64 ns ticks), which
    # iputils s20180629 prints with its carry bug as 14.10 and iputils 2021+ as 15.0
    r = lab(
        "admin: tc qdisc add dev s1-eth2 root netem delay 14.98ms",
        "h1: ping 10.0.0.3 -c 2",
        sim=f'profile = "{profile}"',
    )
    text = r.log("h1")
    assert re.findall(r"icmp_seq=2 ttl=64 time=(\S+) ms", text) == [shown]
    assert f"2 packets transmitted, 2 received, 0% packet loss, time {elapsed}\n" in text


def test_sim_overrides_a_single_knob_of_the_profile(lab):
    r = lab(
        "admin: tc qdisc add dev s1-eth2 root netem delay 14.98ms",
        "h1: ping 10.0.0.3 -c 2",
        sim='profile = "lab2019"\nping_style = "modern"',
    )
    assert "icmp_seq=2 ttl=64 time=15.0 ms" in r.log("h1")


def test_sim_red_adaptive_timer_overrides_the_profile(write_scenario):
    for value in ("true", "false"):
        text = scenario("h1: ping 10.0.0.3 -c 1", sim=f"red_adaptive_timer = {value}")
        sc = load_scenario(write_scenario(text))
        assert sc.profile.red_adaptive_timer is (value == "true")
    with pytest.raises(ScenarioError, match="red_adaptive_timer: expected true or false"):
        load_scenario(write_scenario(scenario("h1: ping 10.0.0.3 -c 1", sim='red_adaptive_timer = "yes"')))


def test_bufferlab_run_twice_gives_byte_identical_results(write_scenario, tmp_path, capsys):
    path = write_scenario(
        scenario(
            "admin: tc qdisc add dev s1-eth2 root netem delay 5ms 2ms loss 5%",
            "h3: iperf3 -s",
            "admin: plot_q.sh s1-eth2 &",
            "h1: iperf3 -c 10.0.0.3 -u -b 2M -t 2 -J > c.json",
            "h2: ping 10.0.0.3 -c 3 -i 0.5 > p.txt",
            "admin: sleep 2.5; tc -s qdisc show dev s1-eth2",
        )
    )

    def tree(root: Path) -> dict[str, str]:
        return {
            str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    before = time.time()
    for out in ("a", "b"):
        assert main(["run", "-q", "-o", str(tmp_path / out), str(path)]) == 0
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    # run.json is the one wall-clock file (docs/tables.md): when each run started, how long it took
    runs = [json.loads((tmp_path / out / "t" / "run.json").read_text()) for out in ("a", "b")]
    assert before <= runs[0]["started_unix"] <= runs[1]["started_unix"] <= time.time()
    assert a.pop("t/run.json") and b.pop("t/run.json")
    assert a == b
    assert {"t/summary.json", "t/p/h1/c.json", "t/p/h2/p.txt", "t/p/admin/q_s1-eth2.dat"} <= a.keys()
    assert capsys.readouterr() == ("", "")


def test_tcp_small_queues_keep_a_senders_own_qdisc_short_but_not_a_switchs(lab):
    """TCP Small Queues (docs/semantics/tcp.md §6.4): a socket may hold about two of its skbs in
    its own host, so a sender's own tbf stays short (Linux 6.18: 154 kB peak with limit 3 MB,
    docs/kernel-oracle.md); the same tbf on the switch's interface, past the orphaning veth,
    fills towards its limit. Nothing is warned about either."""
    own = lab("h1: tc qdisc add dev h1-eth0 root tbf rate 50mbit burst 20k limit 3000000",
              "h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -t 3", sim='profile = "modern"')
    peak = own.summary["parts"][0]["peak_backlog"]["h1-eth0"]["bytes"]
    assert 60_000 < peak < 220_000, peak
    switch = lab("admin: tc qdisc add dev s1-eth2 root tbf rate 50mbit burst 20k limit 3000000",
                 "h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -t 3", sim='profile = "modern"')
    assert switch.summary["parts"][0]["peak_backlog"]["s1-eth2"]["bytes"] > 512 * 1024
    assert not [w for r in (own, switch) for w in r.summary["warnings"] if "Small Queues" in w]
