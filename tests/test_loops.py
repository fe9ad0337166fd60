"""``while``/``until`` loops in scenario lines (issue 24 item 4): a handout's
``while true; do ss -tin >> ss.txt; sleep 0.1; done &`` as bash runs it.

The parser's structures and its errors (bash's wording, with the column); `bufferlab check`
validating the commands inside a loop as it validates the others; and runs whose files hold
what the loop wrote, counted by hand from the sleeps: one `ss` snapshot per 0.5 s of a flow, a
`done > FILE` opened once, an `until` that ends when its condition comes true, `kill %1`, a
foreground loop Ctrl-C'd at the part's end, and the guard against a loop at one instant.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bufferlab.cli import main
from bufferlab.commands.shell import Job, Loop, SimpleCommand, parse_shell, simple_commands
from bufferlab.errors import CommandError
from conftest import TWO_HOSTS

# ---------------------------------------------------------------- parsing


def texts(job: Job) -> list[str]:
    return [c.text for c in job.commands]


def test_a_background_loop_is_one_job_holding_its_condition_and_body():
    line = "while true; do ss -tin >> ss.txt; sleep 0.1; done &"
    [job] = parse_shell(line)
    assert job.background and job.ops == []
    [loop] = job.commands
    assert isinstance(loop, Loop) and not loop.until and loop.col == 0 and loop.redirect is None
    assert loop.text == "while true; do ss -tin >> ss.txt; sleep 0.1; done"
    assert [texts(j) for j in loop.condition] == [["true"]]
    assert [texts(j) for j in loop.body] == [["ss -tin >> ss.txt"], ["sleep 0.1"]]
    ss = loop.body[0].commands[0]
    assert isinstance(ss, SimpleCommand) and ss.redirect is not None
    assert (ss.redirect.op, ss.redirect.target.text, ss.redirect.col) == (">>", "ss.txt", 23)
    assert [w.col for w in ss.words] == [15, 18]
    assert not any(j.background for j in loop.condition + loop.body)


def test_done_takes_a_redirection_and_the_loop_chains_like_a_command():
    [job] = parse_shell("while :; do tc -s qdisc show dev s1-eth2; sleep 0.5; done > q.txt &")
    [loop] = job.commands
    assert isinstance(loop, Loop) and loop.redirect is not None
    assert (loop.redirect.op, loop.redirect.target.text, loop.redirect.col) == (">", "q.txt", 58)
    assert loop.text.endswith("done > q.txt") and job.background
    [job] = parse_shell("until ping -c 1 -W 1 10.0.0.2; do sleep 1; done && iperf3 -c 10.0.0.2 -t 5")
    until, iperf3 = job.commands
    assert isinstance(until, Loop) and until.until and not job.background and job.ops == ["&&"]
    assert isinstance(iperf3, SimpleCommand) and iperf3.words[0].col == 51
    # the lists are && / || chains separated by ;
    a, b = parse_shell("while ping -c 1 h || true; do ss && sleep 1; echo; done; echo out")
    [loop] = a.commands
    assert isinstance(loop, Loop) and loop.condition[0].ops == ["||"] and loop.body[0].ops == ["&&"]
    assert texts(b) == ["echo out"]
    assert [c.text for c in simple_commands([a, b])] == ["ping -c 1 h", "true", "ss", "sleep 1", "echo",
                                                         "echo out"]


def test_reserved_words_are_words_elsewhere():
    # `done` as an argument, and a quoted `while`, are plain words (bash: reserved only where a
    # command starts, and never quoted)
    [job] = parse_shell("echo while do done")
    assert [w.text for w in job.commands[0].words] == ["echo", "while", "do", "done"]
    with pytest.raises(CommandError, match="syntax error: unexpected end of file"):
        parse_shell("while true; do sleep 1 done")


@pytest.mark.parametrize(
    ("line", "message", "col"),
    [
        ("while true; do done", "syntax error near unexpected token `done'", 15),  # empty body
        ("while true; done", "syntax error near unexpected token `done'", 12),  # no do
        ("while ; do ss; done", "syntax error near unexpected token `;'", 6),  # empty condition
        ("while do ss; done", "syntax error near unexpected token `do'", 6),
        ("while true && do ss; done", "syntax error near unexpected token `do'", 14),
        ("do ss", "syntax error near unexpected token `do'", 0),  # do without while
        ("ss; done", "syntax error near unexpected token `done'", 4),
        ("while true; do ss; sleep 1", "syntax error: unexpected end of file", 26),  # no done
        ("while true", "syntax error: unexpected end of file", 10),
        ("while true; do ss; done foo", "syntax error near unexpected token `foo'", 24),
        ("while true; do ss; done >", "syntax error near unexpected token `newline'", 24),
        ("while true; do ss; done > a > b", "more than one redirection per command is not supported", 28),
        ("while true; do while :; do ss; done; done", "a loop inside a loop is not supported", 15),
        ("while true; do ss & done", "a background job (&) inside a loop is not supported", 18),
        ("while true; do if true; then ss; fi; done", "the compound command `if` is not supported", 15),
        ("for i in 1 2; do ss; done", "the compound command `for` is not supported", 0),
        ("case x in x ss; esac", "the compound command `case` is not supported", 0),
        ("{ ss; }", "the compound command `{` is not supported", 0),
    ],
)
def test_malformed_loops_and_other_compound_commands_are_positioned_errors(line, message, col):
    with pytest.raises(CommandError) as e:
        parse_shell(line)
    assert e.value.message == message and e.value.col == col


LOOP_TOKENS = ["while", "until", "do", "done", "true", ":", "ss", "-ti", "sleep", "1", ";", "&&", "||", "&", ">",
               ">>", "f.txt", "for", "if", "'done'"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(LOOP_TOKENS), max_size=16))
def test_any_mix_of_loop_words_parses_or_is_a_positioned_error(tokens):
    line = " ".join(tokens)
    try:
        jobs = parse_shell(line)
    except CommandError as e:
        assert e.col is not None and 0 <= e.col <= len(line), (line, e.col)
        return
    loops = [c for j in jobs for c in j.commands if isinstance(c, Loop)]
    for loop in loops:  # a loop is its own text, from its keyword to done (or its redirection)
        assert line[loop.col:].startswith(loop.text) and loop.text.split()[0] in ("while", "until")
        assert loop.condition and loop.body


# ---------------------------------------------------------------- checking


def scenario(*cmds: str, links: str = "", parts: str = "") -> str:
    body = ",\n".join(f"  {json.dumps(c)}" for c in cmds)
    topo = TWO_HOSTS if not links else TWO_HOSTS.replace('links = [["h1", "s1"], ["s1", "h2"]]', links)
    return f'name = "t"\nseed = 1\n{topo}\n[[part]]\nname = "p"\ncmds = [\n{body},\n]\n{parts}'


def run(write_scenario, tmp_path: Path, text: str) -> tuple[int, Path]:
    status = main(["run", "--no-progress", "--no-report", "-q", "-o", str(tmp_path / "out"),
                   str(write_scenario(text))])
    return status, tmp_path / "out" / "t"


def summary(root: Path) -> dict:
    return json.loads((root / "summary.json").read_text())


@pytest.mark.parametrize(
    ("line", "col", "message"),
    [
        # the handout's line is accepted ...
        ("h1: while true; do ss -ti dst 10.0.0.2 >> ss.txt; sleep 0.1; done &", None, ""),
        # ... and each command inside a loop is checked where it stands: the file's column is
        # the line's (0-based) column + 8 (`  "h1: ` and 1-based columns)
        ("h1: while true; do ss -tp; sleep 1; done &", 8 + 20,  # the p of -tp
         "ss: option -p (the processes' file descriptors) is not supported yet"),
        ("h1: until ping -c 1 10.0.0.2; do slep 1; done", 8 + 29, "slep: command not found"),
        ("h1: while ping -c 1 -Q 10.0.0.2; do sleep 1; done", 8 + 19, 'ping: "10.0.0.2" bad value for TOS'),
        ("h1: while :; do sleep 1; done > a.txt && iperf3 -c 10.0.0.2 --bogus", 8 + 56,
         "iperf3: unrecognized option '--bogus'"),
    ],
)
def test_check_validates_every_command_inside_a_loop(write_scenario, capsys, line, col, message):
    path = write_scenario(scenario("h2: iperf3 -s &", line))
    status = main(["check", str(path)])
    err = capsys.readouterr().err
    if col is None:
        assert status == 0, err
        return
    assert status == 2
    assert f"{path}:12:{col}: error: {message}" in err


def test_a_part_of_only_an_endless_loop_needs_a_duration(write_scenario, capsys):
    path = write_scenario(scenario("h1: while true; do ss -ti; sleep 1; done"))
    assert main(["check", str(path)]) == 2
    assert "every line runs until interrupted" in capsys.readouterr().err
    # a loop that can end (its condition may fail) is not endless
    path = write_scenario(scenario("h1: until ping -c 1 -W 1 10.0.0.2; do sleep 1; done"), "u.toml")
    assert main(["check", str(path)]) == 0


# ---------------------------------------------------------------- running


def snapshots(text: str) -> list[str]:
    """`ss` output appended again and again: one snapshot per header line."""
    return ["State" + s for s in text.split("State")[1:]]


def test_ss_sampled_in_a_background_loop_beside_a_flow(write_scenario, tmp_path):
    # h1 -> s1 at 20 Mbit/s and 10 ms: cwnd grows in slow start, then follows the queue
    status, root = run(write_scenario, tmp_path, scenario(
        "h2: iperf3 -s &",
        "h1: while true; do ss -tin >> ss.txt; sleep 0.5; done &",
        "h1: iperf3 -c 10.0.0.2 -t 4 -J > out.json",
        links='links = [{a = "h1", b = "s1", bw = 20, delay = "10ms"}, ["s1", "h2"]]',
    ))
    assert status == 0
    part = summary(root)["parts"][0]
    end_s = (part["end_ns"] - part["start_ns"]) / 1e9
    # the loop holds no part: it ends when iperf3 ends, a little after its 4 s (its results
    # exchange crosses the queue the flow built on h1 -> s1 twice)
    assert 4.0 < end_s < 5.0
    shots = snapshots((root / "p/h1/ss.txt").read_text())
    # one snapshot at t = 0, 0.5, ..., up to the part's end, where the scenario's end Ctrl-Cs
    # the loop in its sleep
    assert len(shots) == int(end_s / 0.5) + 1 == 10
    # at t = 0 the loop ran before iperf3 was typed (lines start in file order): no socket
    assert shots[0].count("\n") == 1
    # from t = 0.5 to 4.0 the data connection is there with its TCP info
    cwnds = [re.findall(r" cwnd:(\d+)", s) for s in shots[1:-1]]
    assert all(len(c) >= 1 for c in cwnds)
    data = [max(int(x) for x in c) for c in cwnds]
    assert len(set(data)) > 1  # cwnd moves as the flow runs
    assert all("ESTAB" in s and "10.0.0.2:5201" in s for s in shots[1:-1])
    # at 4.5 s it is gone: the server closed its socket on TEST_END and reset the connection
    # its data still reached (docs/semantics/tcp.md §3.1)
    assert shots[-1].count("\n") == 1
    log = (root / "p/h1/terminal.log").read_text()
    assert log == ("$ while true; do ss -tin >> ss.txt; sleep 0.5; done &\n"
                   "$ iperf3 -c 10.0.0.2 -t 4 -J > out.json\n")


def test_done_redirect_is_opened_once_and_kill_ends_the_job(write_scenario, tmp_path):
    status, root = run(write_scenario, tmp_path, scenario(
        "h1: echo old > d.txt",
        "h1: while true; do date +%s.%N; echo hi >> own.txt; sleep 1; done > d.txt &",
        "h1: echo pid $!; ps",
        "h1: sleep 2.5; kill %1; sleep 0.1; jobs",
    ))
    assert status == 0
    # `> d.txt` truncated d.txt once, when the loop started ("old" is gone), and every
    # iteration's date (t = 0, 1, 2; killed at 2.5) is kept; `>> own.txt` went its own way
    stamps = [float(x) for x in (root / "p/h1/d.txt").read_text().split()]
    assert [round(b - a, 9) for a, b in zip(stamps, stamps[1:], strict=False)] == [1.0, 1.0]
    assert (root / "p/h1/own.txt").read_text() == "hi\nhi\nhi\n"
    log = (root / "p/h1/terminal.log").read_text().splitlines()
    # h1's shell is PID 2000 (pts/1); the loop's subshell takes $! = 2001, its `date` 2002
    # (ended), `sleep` 2003; `ps` itself 2004
    assert log[2:10] == [
        "$ echo pid $!; ps",
        "pid 2001",
        "    PID TTY          TIME CMD",
        "   2000 pts/1    00:00:00 bash",
        "   2001 pts/1    00:00:00 bash",
        "   2003 pts/1    00:00:00 sleep",
        "   2004 pts/1    00:00:00 ps",
        "$ sleep 2.5; kill %1; sleep 0.1; jobs",
    ]
    assert log[10] == "[1]+  Terminated              while true; do date +%s.%N; echo hi >> own.txt; sleep 1; done > d.txt"
    assert summary(root)["failures"] == []


def test_until_runs_its_body_until_the_condition_holds(write_scenario, tmp_path):
    status, root = run(write_scenario, tmp_path, scenario(
        "h1: sleep 2.5 && echo up > flag.txt &",
        # the condition fails at t = 0, 1, 2 and holds at 3; the body's last status (cat: 1)
        # is the loop's
        "h1: until cat flag.txt; do sleep 1; cat nope.txt; done || date +%s.%N > t.txt",
        # a body that never runs: status 0
        "h1: until true; do sleep 1; done && echo never ran",
        "h1: date +%s.%N > end.txt",
    ))
    assert status == 0 and summary(root)["failures"] == []
    log = (root / "p/h1/terminal.log").read_text()
    assert log.count("cat: flag.txt: No such file or directory") == 3
    assert log.count("cat: nope.txt: No such file or directory") == 3
    assert "up\n" in log and "never ran\n" in log
    t = float((root / "p/h1/t.txt").read_text())
    assert float((root / "p/h1/end.txt").read_text()) == t  # no time passed in `until true`
    part = summary(root)["parts"][0]
    assert (part["end_ns"] - part["start_ns"]) == 3_000_000_000


def test_a_foreground_endless_loop_is_interrupted_like_ping(write_scenario, tmp_path):
    status, root = run(write_scenario, tmp_path, scenario(
        # h1's loop runs until the part's finite commands are done (h2's sleep, 1 s), then
        # is Ctrl-C'd in its sleep, so that h1's next line runs: ticks at 0.3, 0.6, 0.9
        "h1: while :; do sleep 0.3; echo tick; done",
        "h1: echo after",
        "h2: sleep 1",
        # a background loop goes on into the next part (5 s of part_gap later) until the end
        "h2: while true; do date +%s.%N >> d.txt; sleep 1; done &",
        parts='[[part]]\nname = "q"\ncmds = ["h2: sleep 1.5"]\n',
    ))
    assert status == 0
    log = (root / "p/h1/terminal.log").read_text()
    assert log == "$ while :; do sleep 0.3; echo tick; done\ntick\ntick\ntick\n$ echo after\nafter\n"
    parts = summary(root)["parts"]
    assert [(p["end_ns"] - parts[0]["start_ns"]) / 1e9 for p in parts] == [1.0, 7.5]
    # typed at t = 1: dates at 1, 2, ..., 7 (the scenario ends at 7.5)
    assert len((root / "p/h2/d.txt").read_text().split()) == 7


def test_a_loop_at_one_instant_is_stopped_as_a_failure(write_scenario, tmp_path, capsys):
    text = scenario("h1: while true; do echo x; done", "h1: echo next")
    status, root = run(write_scenario, tmp_path, text)
    assert status == 1
    [failure] = summary(root)["failures"]
    assert failure["where"].endswith("t.toml:11:8") and failure["status"] == 1
    assert failure["command"] == "h1: while true; do echo x; done"
    message = ("bufferlab: the loop `while true; do echo x; done` turned 10000 times at t = 0.000000 s "
               "with no simulated time passing: stopped (put a `sleep` in its body, e.g. sleep 0.1)")
    assert failure["message"] == message
    log = (root / "p/h1/terminal.log").read_text()
    assert log == "$ while true; do echo x; done\n" + "x\n" * 10_000 + message + "\n$ echo next\nnext\n"
    assert "1 command failed" in capsys.readouterr().err


def test_a_signal_other_than_sigint_ends_the_command_not_the_foreground_loop(write_scenario, tmp_path):
    status, root = run(write_scenario, tmp_path, scenario(
        "h1: sleep 2.5 && echo up > flag.txt &",
        "h1: until cat flag.txt; do sleep 1; done; echo out",
        # h1's shell is 2000: the job's sleep 2001, then cat 2002, sleep 2003 (0 to 1), cat 2004,
        # sleep 2005 (1 to 2), killed at 1.5: bash prints Terminated and turns again (cat 2006 at
        # 1.5, sleep 2007 to 2.5, when the background job's echo, typed first, runs first)
        "h2: sleep 1.5; kill 2005",
    ))
    assert status == 0 and summary(root)["failures"] == []
    assert (root / "p/h1/terminal.log").read_text() == (
        "$ sleep 2.5 && echo up > flag.txt &\n"
        "$ until cat flag.txt; do sleep 1; done; echo out\n"
        + "cat: flag.txt: No such file or directory\n" * 2
        + "Terminated\n"
        + "cat: flag.txt: No such file or directory\n"
        + "up\nout\n"
    )
