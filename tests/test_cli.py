"""The ``bufferlab`` command line: run/check/--version/--help, and every class of
bad input ending in a located message (file:line:col, caret, what was expected,
a hint) with exit status 2 and no traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlab import __version__
from bufferlab.cli import main

TOPO = """[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""


def scenario(*cmds: str, sim: str = "", topo: str = TOPO, part: str = "") -> str:
    """A Lab 14-shaped scenario with one part running ``cmds`` (one per line of the file)."""
    items = "".join(f"  {json.dumps(c, ensure_ascii=False)},\n" for c in cmds)
    sim_table = f"[sim]\n{sim}\n" if sim else ""
    return f'name = "t"\nseed = 1\n{sim_table}{topo}\n[[part]]\nname = "p"\n{part}cmds = [\n{items}]\n'


def pos(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    """1-based line and column of the ``nth`` occurrence of ``needle`` in ``text``."""
    i = -1
    for _ in range(nth + 1):
        i = text.index(needle, i + 1)
    before = text[:i]
    return before.count("\n") + 1, i - (before.rfind("\n") + 1) + 1


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["check", str(path)])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_command_error(
    err: str, path: Path, text: str, cmd: str, word: str, message: str, expected: str | None, hint: str | None
) -> None:
    """The whole located message: head with file:line:col of ``word``, the command, the
    caret under ``word``, then the expected/hint lines."""
    line, col = pos(text, word)
    lines = err.rstrip("\n").split("\n")
    assert lines[0] == f"{path}:{line}:{col}: error: {message}", err
    assert lines[1] == f"    {cmd}", err
    assert lines[2] == "    " + " " * cmd.index(word) + "^", err
    rest = lines[3:]
    if expected is not None:
        assert rest and rest[0].startswith("  expected: ") and expected in rest[0], err
        rest = rest[1:]
    else:
        assert not any(r.startswith("  expected: ") for r in rest), err
    assert rest == ([f"  hint: {hint}"] if hint else []), err


# ---------------------------------------------------------------------- --help, --version


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"bufferlab {__version__}"


@pytest.mark.parametrize(
    "argv, words",
    [
        ([], ["run", "check", "--version"]),
        (["run"], ["scenario", "--output", "--seed", "--quiet", "--no-progress"]),
        (["check"], ["scenario", "report the first error"]),
    ],
)
def test_help_on_every_subcommand(argv, words, capsys):
    with pytest.raises(SystemExit) as e:
        main([*argv, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: bufferlab")
    for w in words:
        assert w in out


def test_no_subcommand_prints_help_and_fails(capsys):
    assert main([]) == 2
    assert "usage: bufferlab" in capsys.readouterr().out


def test_check_reports_parts_lines_and_nodes(write_scenario, capsys):
    path = write_scenario(scenario("h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -u -t 1", "h2: sleep 1"))
    rc, out, err = check(path, capsys)
    assert (rc, err) == (0, "")
    assert out == f"{path}: OK (1 parts, 3 command lines, 5 nodes)\n"


def test_run_prints_a_summary_line_and_writes_results(write_scenario, tmp_path, capsys):
    path = write_scenario(scenario("h1: ping 10.0.0.3 -c 2"))
    assert main(["run", "--no-progress", "-o", str(tmp_path / "r"), str(path)]) == 0
    out, err = capsys.readouterr()
    # results on stdout: the part's result summary (tests/test_terminals.py checks its numbers),
    # then the closing line; the part's header (progress) on stderr
    assert re.match(r"part p: results\n  h1: ping 10\.0\.0\.3 -c 2: rtt min/avg/max [\d.]+/[\d.]+/[\d.]+ ms, "
                    r"0\.00% loss \(2 sent, 2 received\)\nt: 1\.000 s simulated in ", out), out
    assert out.rstrip().endswith(f"results in {tmp_path / 'r' / 't'}")
    assert err == "== part p (t = 0.000 s)\n"
    assert (tmp_path / "r/t/p/h1/terminal.log").read_text().startswith("$ ping 10.0.0.3 -c 2\nPING ")
    assert json.loads((tmp_path / "r/t/summary.json").read_text())["seed"] == 1


def test_run_quiet_prints_nothing_and_seed_overrides(write_scenario, tmp_path, capsys):
    path = write_scenario(scenario("h1: ping 10.0.0.3 -c 1"))
    assert main(["run", "-q", "--seed", "7", "-o", str(tmp_path / "r"), str(path)]) == 0
    assert capsys.readouterr() == ("", "")
    assert json.loads((tmp_path / "r/t/summary.json").read_text())["seed"] == 7


# ---------------------------------------------------------------------- the scenario file


def test_malformed_toml(write_scenario, capsys):
    text = 'name = "t"\n[topology\nhosts = ["h1"]\n'
    path = write_scenario(text)
    rc, out, err = check(path, capsys)
    assert (rc, out) == (2, "")
    assert err.splitlines() == [
        f"{path}:2:10: error: invalid TOML: Expected ']' at the end of a table declaration",
        "  expected: TOML syntax (strings in quotes, arrays in [ ], one key = value per line)",
        "  hint: a table header is written [name]",
    ]


def test_unescaped_quote_inside_a_command(write_scenario, capsys):
    text = scenario("h1: true").replace('"h1: true"', '"h1: iperf3 -T "x" -s"')
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, _ = pos(text, "iperf3")
    assert rc == 2
    assert err.startswith(f"{path}:{line}:")
    assert "error: invalid TOML: Unclosed array" in err
    assert 'hint: separate items with "," and close with "]"; a " inside a string is written \\"' in err


def test_toml_error_at_end_of_document_still_names_a_line(write_scenario, capsys):
    path = write_scenario('name = "t"\ncmds = ["a",\n')
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert err.startswith(f"{path}:2:13: error: invalid TOML: Invalid value\n")


def test_unknown_node_in_a_link(write_scenario, capsys):
    topo = TOPO.replace(
        'links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]',
        'links = [\n  ["h1", "s1"],\n  ["s1", "s2"],\n  ["s2", "hh3"],\n]',
    )
    text = scenario("h1: true", topo=topo)
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, col = pos(text, "hh3")
    assert rc == 2
    assert err.splitlines() == [
        f"{path}:{line}:{col}: error: link 3 names unknown node 'hh3'",
        "  expected: one of h1, h2, h3, s1, s2",
        "  hint: did you mean 'h3'?",
    ]


def test_unknown_key_in_a_link_table(write_scenario, capsys):
    topo = TOPO.replace('["h2", "s1"]', '{ a = "h2", b = "s1", bw = 10, dealy = "5ms" }')
    text = scenario("h1: true", topo=topo)
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, col = pos(text, "dealy")
    assert rc == 2
    assert err.splitlines()[0] == f"{path}:{line}:{col}: error: unknown key 'dealy' in link 4"
    assert err.splitlines()[-1] == "  hint: did you mean 'delay'?"


def test_a_bad_tclink_delay_is_found_by_check_at_the_link(write_scenario, capsys):
    topo = TOPO.replace('["h2", "s1"]', '{ a = "h2", b = "s1", delay = "5xs" }')
    text = scenario("h1: true", topo=topo)
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, col = pos(text, "5xs")
    assert rc == 2
    assert err.splitlines() == [
        f'{path}:{line}:{col}: error: link h2-s1: delay = \'5xs\': invalid time "5xs": unknown unit "xs"',
        "  expected: a time: 20ms, 1.5s, 500us (a bare number is µs)",
        "  hint: times take s, ms, us",
    ]


def test_unknown_sim_key_suggests_the_right_one(write_scenario, capsys):
    text = scenario("h1: true", sim='profile = "lab2019"\nstop_att = "10s"')
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, col = pos(text, "stop_att")
    assert rc == 2
    lines = err.splitlines()
    assert lines[0] == f"{path}:{line}:{col}: error: unknown key 'stop_att' in [sim]"
    assert lines[1].startswith("  expected: app_setup, arp, epoch, ") and "stop_at" in lines[1]
    assert lines[2] == "  hint: did you mean 'stop_at'?"


@pytest.mark.parametrize("value, shown", [('"moden"', "'moden'"), ("[]", "[]"), ("3", "3")])
def test_unknown_profile(value, shown, write_scenario, capsys):
    text = scenario("h1: true", sim=f"profile = {value}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, col = pos(text, "profile")
    assert rc == 2
    assert err.splitlines()[:2] == [
        f"{path}:{line}:{col}: error: unknown profile {shown}",
        "  expected: lab2019 or modern",
    ]


def test_unknown_terminal(write_scenario, capsys):
    text = scenario("h1: true", "hh2: ping 10.0.0.3 -c 1")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, col = pos(text, "hh2:")
    assert rc == 2
    assert err.splitlines() == [
        f"{path}:{line}:{col}: error: unknown terminal 'hh2'",
        "  expected: one of h1, h2, h3, s1, s2, admin",
        "  hint: did you mean 'h2'?",
    ]


def test_a_command_without_terminal(write_scenario, capsys):
    text = scenario("ping 10.0.0.3 -c 1")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, col = pos(text, "ping")
    assert rc == 2
    assert (
        err.splitlines()[0]
        == f"{path}:{line}:{col}: error: a command must start with the terminal it is typed in"
    )


# ---------------------------------------------------------------------- command lines


def test_unknown_program_with_did_you_mean(write_scenario, capsys):
    text = scenario("h1: sleep 1; pingg 10.0.0.3 -c 1")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err,
        path,
        text,
        "sleep 1; pingg 10.0.0.3 -c 1",
        "pingg",
        "pingg: command not found (not modelled by bufferlab)",
        "one of :, arp, bulk, cat, cbr, cd, curl, date, dd, echo, ethtool, flent, flows, fping, head,",
        "did you mean ping?",
    )


def test_tc_unknown_option(write_scenario, capsys):
    cmd = "tc qdisc add dev s1-eth2 root tbf rate 1gbit brust 500000 limit 3000"
    text = scenario(f"admin: sudo {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err,
        path,
        text,
        f"sudo {cmd}",
        "brust",
        'tbf: unknown parameter "brust"',
        "tbf rate RATE burst SIZE (limit SIZE | latency TIME)",
        "did you mean 'burst'?",
    )


def test_tc_bad_rate_unit(write_scenario, capsys):
    cmd = "tc qdisc add dev s1-eth2 root tbf rate 1gbat burst 500000 limit 3000"
    text = scenario(f"admin: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err,
        path,
        text,
        cmd,
        "1gbat",
        'tbf: illegal value for "rate": "1gbat"',
        "a rate: 1gbit, 100mbit",
        "use 1gbit, 100mbit, 8mbit",
    )


def test_tc_bad_time_unit(write_scenario, capsys):
    cmd = "./tc qdisc add dev s1-eth2 root netem delay 20parsecs"
    text = scenario(f"admin: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err, path, text, cmd, "20parsecs", 'Illegal "latency"', "a time: 20ms, 1.5s", "times take s, ms, us"
    )


def test_unknown_interface(write_scenario, capsys):
    cmd = "tc qdisc add dev s1-eht2 root netem delay 10ms"
    text = scenario(f"admin: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err,
        path,
        text,
        cmd,
        "s1-eht2",
        'Cannot find device "s1-eht2"',
        "one of s1-eth1, s1-eth2, s2-eth1, s2-eth2, s1-eth3",
        "did you mean s1-eth2?",
    )


@pytest.mark.parametrize(
    "terminal, dev, where",
    [
        ("h1", "s1-eth2", "the admin terminal"),
        ("admin", "h3-eth0", "h3's terminal"),
        ("h1", "h3-eth0", "h3's terminal"),
    ],
)
def test_tc_on_another_nodes_interface_says_whose_terminal(terminal, dev, where, write_scenario, capsys):
    cmd = f"tc qdisc add dev {dev} root netem delay 10ms"
    text = scenario(f"{terminal}: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    owner = dev.split("-")[0]
    assert_command_error(
        err,
        path,
        text,
        cmd,
        dev,
        f'Cannot find device "{dev}"',
        None,
        f"{dev} belongs to {owner}: run the line in {where}",
    )


def test_the_column_counts_toml_escapes(write_scenario, capsys):
    # `\"` takes two characters in the file and one in the command
    text = scenario('h1: echo "quoted" ; pingg 10.0.0.3')
    path = write_scenario(text)
    assert '\\"quoted\\"' in text
    rc, _, err = check(path, capsys)
    line, col = pos(text, "pingg")
    assert rc == 2
    assert err.startswith(f"{path}:{line}:{col}: error: pingg: command not found")


def test_iperf3_unsupported_and_unknown_options(write_scenario, capsys):
    cmd = "iperf3 -c 10.0.0.3 -u --bidir"
    text = scenario(f"h1: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err,
        path,
        text,
        cmd,
        "--bidir",
        "iperf3 --bidir is not supported",
        "supported options: -s, -c HOST",
        None,
    )

    cmd = "iperf3 -c 10.0.0.3 -u --formt m"
    text = scenario(f"h1: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err,
        path,
        text,
        cmd,
        "--formt",
        "iperf3: unrecognized option '--formt'",
        "supported options:",
        "did you mean '--format'?",
    )


@pytest.mark.parametrize(
    "cmd, word, message",
    [
        ("iperf3 -s -i 0", "-i", "iperf3 -i 0 (no interval reports) is not supported yet"),
        ("iperf3 -c 10.0.0.3 -u -i 0 -t 1", "-i", "iperf3 -i 0 (no interval reports) is not supported yet"),
        ("iperf3 -c 10.0.0.3 -u -b 0", "-b", "iperf3 -u -b 0 (an unlimited UDP rate) is not supported yet"),
        ("ping 10.0.0.3 -c 3 -i 0", "-i", "ping -i 0 (as fast as replies come) is not supported yet"),
    ],
)
def test_real_values_the_engine_cannot_run_are_refused_at_check(cmd, word, message, write_scenario, capsys):
    text = scenario(f"h1: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(err, path, text, cmd, word, message, "", None)


def test_an_error_in_a_later_part_stops_the_run_before_it_starts(write_scenario, tmp_path, capsys):
    text = scenario("h1: ping 10.0.0.3 -c 1") + '[[part]]\nname = "q"\ncmds = ["h2: ping -Z 10.0.0.3"]\n'
    path = write_scenario(text)
    assert main(["run", "-o", str(tmp_path / "r"), str(path)]) == 2
    line, col = pos(text, "-Z")
    assert capsys.readouterr().err.startswith(f"{path}:{line}:{col}: error: ping: invalid option -- 'Z'\n")
    assert not (tmp_path / "r").exists()


def test_ping_unsupported_flag(write_scenario, capsys):
    cmd = "ping -Z 10.0.0.3"
    text = scenario(f"h2: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(err, path, text, cmd, "-Z", "ping: invalid option -- 'Z'", "ping [-c COUNT]", None)


def test_sysctl_with_a_space_inside_the_key_is_an_error_as_in_real_sysctl(write_scenario, capsys):
    cmd = "sysctl -w net.ipv4.tcp wmem='10240 87380 150000000'"
    text = scenario(f"h1: {cmd}")
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    assert rc == 2
    assert_command_error(
        err,
        path,
        text,
        cmd,
        "net.ipv4.tcp",
        'sysctl: "net.ipv4.tcp" must be of the form name=value',
        "KEY=VALUE",
        "did you mean net.ipv4.tcp_wmem='10240 87380 150000000'? (no space inside the key)",
    )


def test_red_with_the_handout_typos_is_accepted_with_warnings(write_scenario, capsys):
    cmd = (
        "tc qdisc add dev s2-eth2 parent 1: handle 2: red limit 26214400 max 8738133 min 2184533 "
        "burst 2185 avgpkt 1000 bandwidth 1gbit adaptative"
    )
    text = scenario(
        "admin: tc qdisc add dev s2-eth2 root handle 1: tbf rate 1gbit burst 500000 limit 3000",
        f"admin: sudo {cmd}",
    )
    path = write_scenario(text)
    rc, out, err = check(path, capsys)
    assert rc == 0 and "OK" in out
    line, col = pos(text, "avgpkt")
    assert f"{path}:{line}:{col}: warning: " in err and 'read as "avpkt"' in err
    line, col = pos(text, "adaptative")
    assert f"{path}:{line}:{col}: warning: " in err and 'spelling is "adaptive"' in err


def test_iperf3_dash_zero_is_read_as_omit_with_a_warning(write_scenario, capsys):
    text = scenario("h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -u -t 2 -0 1")
    path = write_scenario(text)
    rc, out, err = check(path, capsys)
    line, col = pos(text, "-0")
    assert rc == 0 and "OK" in out
    assert err == f"{path}:{line}:{col}: warning: iperf3 has no -0 option; read as -O (omit), write -O\n"


def test_run_echoes_warnings_and_applies_the_alias(write_scenario, tmp_path, capsys):
    text = scenario("h3: iperf3 -s", "h1: iperf3 -c 10.0.0.3 -u -t 2 -0 1 -J > c.json")
    path = write_scenario(text)
    assert main(["run", "--no-progress", "-o", str(tmp_path), str(path)]) == 0
    assert "warning: iperf3 has no -0 option" in capsys.readouterr().err
    doc = json.loads((tmp_path / "t/p/h1/c.json").read_text())
    assert doc["start"]["test_start"]["omit"] == 1


def test_part_duration_longer_than_stop_at(write_scenario, capsys):
    text = scenario("h1: ping 10.0.0.3", sim='stop_at = "5s"', part='duration = "10s"\n')
    path = write_scenario(text)
    rc, _, err = check(path, capsys)
    line, _ = pos(text, "[[part]]")
    assert rc == 2
    assert err.splitlines() == [
        f"{path}:{line}: error: part 'p': duration = 10 s is longer than stop_at = 5 s",
        "  expected: a duration no longer than [sim] stop_at",
        '  hint: raise [sim] stop_at, e.g. stop_at = "10s"',
    ]


def test_missing_scenario_file(tmp_path, capsys):
    rc = main(["run", str(tmp_path / "nope.toml")])
    assert rc == 2
    assert (
        capsys.readouterr().err
        == f"{tmp_path / 'nope.toml'}: error: cannot read the scenario: No such file or directory\n"
    )


def test_a_results_folder_that_cannot_be_created(write_scenario, tmp_path, capsys):
    path = write_scenario(scenario("h1: true"))
    (tmp_path / "file").write_text("")
    assert main(["run", "-o", str(tmp_path / "file"), str(path)]) == 2
    assert capsys.readouterr().err == (
        f"error: cannot create the results folder {tmp_path / 'file' / 't'}: Not a directory\n"
        "  hint: choose another folder with -o/--output\n"
    )


# ---------------------------------------------------------------------- as a real process


def _bufferlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bufferlab.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_bad_input_exits_2_without_traceback(write_scenario, tmp_path):
    cmd = "tc qdisc add dev s1-eth2 root tbf rate 1gbit brust 500000 limit 3000"
    text = scenario(f"admin: {cmd}")
    path = write_scenario(text)
    p = _bufferlab("run", "-o", str(tmp_path / "r"), str(path), cwd=tmp_path)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr
    line, col = pos(text, "brust")
    assert p.stderr.startswith(f'{path}:{line}:{col}: error: tbf: unknown parameter "brust"\n')
    assert not (tmp_path / "r").exists()


def test_a_part_that_never_ends_exits_2_naming_the_line(write_scenario, tmp_path):
    # the server is endless (not waited for); the ping would need 101 s
    text = scenario("h3: iperf3 -s", "h1: sleep 1; ping 10.0.0.3 -c 100", sim='stop_at = "30s"')
    path = write_scenario(text)
    p = _bufferlab("run", "-q", "-o", str(tmp_path / "r"), str(path), cwd=tmp_path)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    line, col = pos(text, "sleep 1")
    part_line, _ = pos(text, "[[part]]")
    assert p.stderr.splitlines() == [
        f"{path}:{part_line}: error: part 'p' did not finish within stop_at = 30 s of simulated time; "
        "still running:",
        f"    {path}:{line}:{col}: sleep 1; ping 10.0.0.3 -c 100",
        "  hint: a client whose server never answers waits forever; raise [sim] stop_at if the "
        "experiment is really that long",
    ]
    summary = json.loads((tmp_path / "r/t/summary.json").read_text())
    assert summary["error"].startswith(f"{path}:{part_line}: error: part 'p' did not finish")


def test_shell_errors_at_run_time_are_the_terminals_not_the_clis(write_scenario, tmp_path):
    # bash prints these into the terminal and goes on; bufferlab must not crash on them
    text = scenario("h1: mkdir d; echo x > d; echo y > ../../../escape.txt; echo z > /tmp/x-bufferlab-test")
    path = write_scenario(text)
    p = _bufferlab("run", "-q", "-o", str(tmp_path / "r"), str(path), cwd=tmp_path)
    assert (p.returncode, p.stderr) == (0, "")
    log = (tmp_path / "r/t/p/h1/terminal.log").read_text().splitlines()
    assert log[1:] == [
        "bash: d: Is a directory",
        "bash: ../../../escape.txt: Permission denied (outside the node's results folder)",
        "bash: /tmp/x-bufferlab-test: Permission denied (outside the node's results folder)",
    ]
    assert not (tmp_path / "escape.txt").exists()


# ---------------------------------------------------------------------- progress display


def _progress_scenario(write_scenario) -> Path:
    return write_scenario(
        scenario(
            "admin: tc qdisc add dev s1-eth2 root netem delay 10ms",
            "h1: ping 10.0.0.3",
            part='duration = "20s"\n',
        )
    )


#: the progress bar's "3.0/20.0 s simulated" column (the final summary line says "20.000 s simulated")
PROGRESS = re.compile(r"\d+\.\d/20\.0 s simulated")


def test_progress_is_shown_on_a_terminal(write_scenario, tmp_path):
    import pty
    import select

    path = _progress_scenario(write_scenario)
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.chdir(tmp_path)
            env = {**os.environ, "TERM": "xterm-256color"}  # rich draws nothing on a "dumb" terminal
            argv = [sys.executable, "-m", "bufferlab.cli", "run", "-o", "r", str(path)]
            os.execve(sys.executable, argv, env)
        finally:
            os._exit(127)
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = out.decode("utf-8", "replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "part p" in text and PROGRESS.search(text), text
    assert "t: 20.000 s simulated in" in text
    assert (tmp_path / "r/t/p/h1/terminal.log").exists()


def test_no_progress_without_a_terminal(write_scenario, tmp_path):
    path = _progress_scenario(write_scenario)
    p = _bufferlab("run", "-o", "r", str(path), cwd=tmp_path)
    assert p.returncode == 0
    assert p.stderr.startswith("== part p (t = 0.000 s)\n")
    assert "\x1b" not in p.stdout + p.stderr and not PROGRESS.search(p.stdout + p.stderr)
    assert p.stdout.startswith("part p: results\n") and "\nt: 20.000 s simulated in" in p.stdout
