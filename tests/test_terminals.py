"""Terminals across parts, the gap between parts, failures and the printed
result summary (issue 11 items 1-4; docs/internals.md "How lines run")."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bufferlab.cli import main

TOPO = """\
[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""
NETEM = "admin: tc qdisc add dev s1-eth2 root netem delay 10ms"


def part(name: str, *cmds: str, extra: str = "") -> str:
    body = ",\n".join(f"  {json.dumps(c)}" for c in cmds)
    return f'[[part]]\nname = "{name}"\n{extra}cmds = [\n{body},\n]\n'


def scenario(*parts: str, sim: str = "", top: str = "") -> str:
    sim_table = f"[sim]\n{sim}\n" if sim else ""
    return f'name = "t"\nseed = 1\n{top}{sim_table}{TOPO}\n' + "\n".join(parts)


def run(write_scenario, tmp_path: Path, text: str, *args: str) -> tuple[int, Path]:
    path = write_scenario(text)
    status = main(["run", "--no-progress", "--no-report", "-o", str(tmp_path / "out"), *args, str(path)])
    return status, tmp_path / "out" / "t"


def summary(root: Path) -> dict:
    return json.loads((root / "summary.json").read_text())


# ---------------------------------------------------------------- item 1: terminals persist


def test_server_started_in_one_part_serves_the_next(write_scenario, tmp_path, capsys):
    status, root = run(write_scenario, tmp_path, scenario(
        part("one", NETEM, "h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -t 1"),
        part("two", "h1: iperf3 -c 10.0.0.3 -t 1 -J > two.json"),  # no server typed: part one's runs on
    ))
    assert status == 0, capsys.readouterr().err
    two = json.loads((root / "two/h1/two.json").read_text())
    assert "error" not in two and two["end"]["sum_received"]["bytes"] > 0
    # the server's output is in the terminal it was typed in, and it served both tests
    log = (root / "one/h3/terminal.log").read_text()
    assert log.count("Accepted connection from 10.0.0.1") == 2
    assert log.rstrip().endswith("iperf3: interrupt - the server has terminated")
    # it ran until the scenario's end, and belongs to the last part's summary
    s = summary(root)
    server = next(f for f in s["flows"] if f.get("command") == "iperf3 -s")
    assert server["part"] == "one"
    assert not (root / "two/h3").exists()


def test_typing_a_line_interrupts_the_running_command_first(write_scenario, tmp_path, capsys):
    status, root = run(write_scenario, tmp_path, scenario(
        part("watch", NETEM, "h2: ping 10.0.0.3", extra='duration = "3s"\n'),
        part("next", "h2: ping 10.0.0.3 -c 2"),
    ))
    assert status == 0, capsys.readouterr().err
    first = (root / "watch/h2/terminal.log").read_text()
    # the endless ping ran through the part (3 s) and the 5 s gap, and was Ctrl-C'd when
    # h2 typed its next line: its statistics are printed then, in its own log
    sent = int(re.search(r"(\d+) packets transmitted", first)[1])
    assert sent == 8, first
    second = (root / "next/h2/terminal.log").read_text()
    assert "2 packets transmitted, 2 received" in second
    s = summary(root)
    # the first ping ended at the start of part "next": it is in that part's result summary
    assert [r["command"] for r in s["parts"][1]["results"]["ping"]] == ["ping 10.0.0.3", "ping 10.0.0.3 -c 2"]
    assert s["parts"][1]["start_ns"] == s["parts"][0]["end_ns"] + 5 * 10**9


def test_next_line_in_the_same_part_waits_for_the_finite_commands(write_scenario, tmp_path, capsys):
    # within a part the old behaviour stands: the endless command is Ctrl-C'd once the
    # part's finite commands are done, so the terminal's next line can run
    status, root = run(write_scenario, tmp_path, scenario(
        part("p", NETEM, "h2: ping 10.0.0.3", "h1: sleep 2.5", "h2: echo next"),
    ))
    assert status == 0, capsys.readouterr().err
    log = (root / "p/h2/terminal.log").read_text()
    assert "3 packets transmitted" in log and log.rstrip().endswith("next")


def test_interrupt_key_stops_terminals_at_the_part_end(write_scenario, tmp_path, capsys):
    text = scenario(
        part("one", NETEM, "h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -t 1", extra='interrupt = ["h3"]\n'),
        part("two", "h1: iperf3 -c 10.0.0.3 -t 1"),
    )
    status, root = run(write_scenario, tmp_path, text)
    err = capsys.readouterr().err
    # the server was Ctrl-C'd at the end of part one: part two's client is refused
    assert status == 1
    assert "iperf3: error - unable to connect to server: Connection refused" in err
    lines = text.splitlines()
    line = next(i for i, ln in enumerate(lines, 1) if ln.strip() == '"h1: iperf3 -c 10.0.0.3 -t 1",'
                and i > lines.index('name = "two"'))
    assert re.search(
        rf"t\.toml:{line}:\d+: h1: part 'two': `h1: iperf3 -c 10.0.0.3 -t 1` exited with status 1", err
    )
    failures = summary(root)["failures"]
    assert [(f["node"], f["part"], f["allowed"]) for f in failures] == [("h1", "two", False)]


def test_interrupt_all_and_bad_names(write_scenario, tmp_path, capsys):
    status, root = run(
        write_scenario,
        tmp_path,
        scenario(
            part(
                "one",
                NETEM,
                "h2: ping 10.0.0.3 &",
                "h3: iperf3 -s",
                "h1: sleep 1.5",
                extra='interrupt = "all"\n',
            ),
            part("two", "h1: sleep 1"),
        ),
    )
    assert status == 0, capsys.readouterr().err
    assert "2 packets transmitted" in (root / "one/h2/terminal.log").read_text()
    bad = write_scenario(scenario(part("one", "h1: sleep 1", extra='interrupt = ["h9"]\n')), "bad.toml")
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.toml:" in err and "unknown terminal 'h9'" in err and "expected: one of admin, h1" in err


# ---------------------------------------------------------------- item 2: the gap, endless-only parts


def test_part_of_only_endless_lines_needs_a_duration(write_scenario, capsys):
    text = scenario(part("watch", "h1: ping 10.0.0.3", "h2: ping 10.0.0.3"))
    path = write_scenario(text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    line = text.splitlines().index('  "h1: ping 10.0.0.3",') + 1
    assert f"t.toml:{line}:8: error: part 'watch': every line runs until interrupted" in err
    assert "expected: a duration for the part" in err and 'hint: add duration = "30s"' in err
    assert "Traceback" not in err
    ok = write_scenario(scenario(part("watch", "h1: ping 10.0.0.3", extra='duration = "2s"\n')), "ok.toml")
    assert main(["check", str(ok)]) == 0


@pytest.mark.parametrize("gap", ["", 'part_gap = "0s"'])
def test_the_gap_drains_a_10_bdp_queue_before_the_next_part(write_scenario, tmp_path, capsys, gap):
    # 10 Mbit/s, 20 ms: BDP = 25 kB, a 10-BDP tbf queue of 250 kB that a bulk TCP flow fills;
    # the part ends after 4 s with a Ctrl-C to h1's endless client, on the full queue (an
    # iperf3 that ends on its own leaves none: its server resets the connection at TEST_END,
    # and its results cross the queue after that)
    bufs = "'10240 87380 52428800'"
    text = scenario(
        part("fill",
             "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 100000",
             "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 10mbit burst 5000 limit 250000",
             f"h1: sysctl -w net.ipv4.tcp_wmem={bufs}", f"h3: sysctl -w net.ipv4.tcp_rmem={bufs}",
             "h3: iperf3 -s &", "h1: iperf3 -c 10.0.0.3 -t 0 &", extra='duration = "4s"\ninterrupt = ["h1"]\n'),
        part("next", "admin: tc -s qdisc show dev s1-eth2", "h2: ping 10.0.0.3 -c 1"),
        top='[trace]\nqueues = ["s1-eth2"]\n', sim=gap,
    )
    status, root = run(write_scenario, tmp_path, text)
    assert status == 0, capsys.readouterr().err
    s = summary(root)
    assert s["parts"][0]["peak_backlog"]["s1-eth2"]["bytes"] > 200_000  # the queue was full
    trace = pq.read_table(root / "next/queue_trace_s1-eth2.parquet").to_pandas()
    shown = (root / "next/admin/terminal.log").read_text()
    start = s["parts"][1]["start_ns"] / 1e9
    first = trace.iloc[0]
    assert first["time_s"] >= start
    if gap:  # back to back: the next part starts on the full queue
        assert first["backlog_bytes"] > 100_000 and "backlog 0b 0p" not in shown
        assert s["parts"][1]["start_ns"] == s["parts"][0]["end_ns"]
    else:  # 5 s of idle time: empty when the part starts (its first record is its own ping)
        assert first["backlog_packets"] <= 1 and first["event"] == "enqueue"
        assert "backlog 0b 0p" in shown
        assert s["parts"][1]["start_ns"] == s["parts"][0]["end_ns"] + 5 * 10**9


def test_part_gap_must_be_a_duration(write_scenario, capsys):
    path = write_scenario(scenario(part("p", "h1: sleep 1"), sim='part_gap = "-1s"'))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert 't.toml:4:1: error: [sim] part_gap: invalid duration "-1s"' in err
    assert 'expected: a duration such as "5s", or "0s" for back-to-back parts' in err


# ---------------------------------------------------------------- item 3: failures surface


REFUSED = ("h1: iperf3 -c 10.0.0.3 -t 1 -J > out.json",)


def test_refused_connection_fails_the_run_and_names_node_part_and_line(write_scenario, tmp_path, capsys):
    text = scenario(part("p", NETEM, *REFUSED, "h1: plot_iperf.sh out.json"))
    status, _ = run(write_scenario, tmp_path, text)
    err = capsys.readouterr().err
    assert status == 1
    line = text.splitlines().index(f"  {json.dumps(REFUSED[0])},") + 1
    assert f"t.toml:{line}:8: h1: part 'p': `{REFUSED[0]}` exited with status 1" in err
    assert "iperf3: error - unable to connect to server: Connection refused" in err
    # plot_iperf.sh on the error JSON fails too, with its own message
    assert "2 commands failed:" in err and "`h1: plot_iperf.sh out.json` exited with status 1" in err


def test_allow_fail_and_or_true_keep_exit_zero(write_scenario, tmp_path, capsys):
    allowed = scenario(part("p", NETEM, *REFUSED, extra=f"allow_fail = [{json.dumps(REFUSED[0])}]\n"))
    status, root = run(write_scenario, tmp_path, allowed)
    err = capsys.readouterr().err
    assert status == 0 and "1 commands failed" not in err and "(1 allowed by allow_fail)" in err
    assert summary(root)["failures"][0]["allowed"] is True
    status, root = run(
        write_scenario, tmp_path, scenario(part("p", NETEM, REFUSED[0] + " || echo no server"))
    )
    assert status == 0 and "failed" not in capsys.readouterr().err
    assert summary(root)["failures"] == []
    assert (root / "p/h1/terminal.log").read_text().rstrip().endswith("no server")
    bad = write_scenario(
        scenario(part("p", "h1: sleep 1", extra='allow_fail = ["h1: slep 1"]\n')), "bad.toml"
    )
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert (
        "allow_fail entry 'h1: slep 1' is not a line of this part" in err
        and "did you mean 'h1: sleep 1'" in err
    )


def test_tc_refusal_is_a_failure(write_scenario, tmp_path, capsys):
    status, _ = run(write_scenario, tmp_path, scenario(part("p", NETEM, NETEM)))
    err = capsys.readouterr().err
    assert status == 1 and "RTNETLINK answers: File exists" in err


def test_total_loss_and_an_unused_server_are_warnings(write_scenario, tmp_path, capsys):
    status, root = run(
        write_scenario,
        tmp_path,
        scenario(
            part(
                "p",
                "admin: tc qdisc add dev s1-eth2 root netem loss 100%",
                "h3: iperf3 -s &",
                "h1: ping 10.0.0.3 -c 2",
            )
        ),
    )
    err = capsys.readouterr().err
    # ping exits 1 without replies: a failure as well as the warning
    assert status == 1
    warnings = summary(root)["warnings"]
    assert any("ping 10.0.0.3: 100% packet loss (2 transmitted, none answered)" in w for w in warnings)
    assert any("h3: iperf3 -s (port 5201) never saw a client" in w for w in warnings)
    assert "100% packet loss (2 transmitted" in err


# ---------------------------------------------------------------- item 4: the printed summary


def test_printed_summary_equals_summary_json(write_scenario, tmp_path, capsys):
    text = scenario(
        part("p",
             "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms",
             "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 20mbit burst 5000 limit 30000",
             "h3: iperf3 -s &", "h1: iperf3 -c 10.0.0.3 -t 2", "h2: ping 10.0.0.3 -c 4 -i 0.5"),
        part("u", "h1: iperf3 -c 10.0.0.3 -u -b 30M -t 1"),
        top='[trace]\nqueues = ["s1-eth2"]\n',  # the peak backlog comes from the queue trace
    )
    status, root = run(write_scenario, tmp_path, text)
    out, err = capsys.readouterr()
    assert status == 0, err
    s = summary(root)
    numbers = []
    for p in s["parts"]:
        res = p["results"]
        block = out.split(f"part {p['name']}: results\n")[1].split("\npart ")[0]  # results: stdout
        for r in res["iperf3"]:
            extra = (
                f"{r['retransmits']} retransmits" if r["protocol"] == "tcp" else f"{r['lost']} datagrams lost"
            )
            assert f"{r['command']}: {r['goodput_mbps']:.2f} Mbit/s goodput, {extra}" in block
            numbers.append(r["goodput_mbps"])
        for r in res["ping"]:
            assert (f"rtt min/avg/max {r['min_ms']:.3f}/{r['avg_ms']:.3f}/{r['max_ms']:.3f} ms, "
                    f"{r['loss_pct']:.2f}% loss ({r['transmitted']} sent, {r['received']} received)") in block
        for q in res["qdiscs"]:
            assert f"{q['interface']} {q['qdiscs']}: " in block
            assert (
                f"peak backlog {q['peak_backlog_bytes']} bytes / {q['peak_backlog_packets']} packets" in block
            )
            for reason, n in q["drops"].items():
                assert f"{reason} {n}" in block
    # what was measured: TCP near the 20 Mbit/s rate, UDP over it with drops at the tbf
    tcp, udp = numbers
    assert 15 < tcp <= 20 and 15 < udp <= 20
    q = s["parts"][1]["results"]["qdiscs"][0]
    assert q["interface"] == "s1-eth2" and q["qdiscs"] == "netem → tbf" and q["drops"]["queue_full"] > 0
    # the netem root holds its delay line (the 30 Mbit/s offered x 10 ms = 37.5 kB) and the tbf's 30 kB queue;
    # iperf3 paces on its 1 ms timer, so a 10 ms window may hold one tick's catch-up burst more
    # (30 Mbit/s x 1 ms = 3.75 kB) and a frame at each edge
    assert 30000 < q["peak_backlog_bytes"] <= 30000 + 37500 + 3750 + 2 * 1514


def test_quiet_prints_no_summary(write_scenario, tmp_path, capsys):
    status, _ = run(write_scenario, tmp_path, scenario(part("p", NETEM, "h1: ping 10.0.0.3 -c 1")), "-q")
    assert status == 0 and capsys.readouterr() == ("", "")
