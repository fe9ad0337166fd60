"""Issue 16: never a traceback. Every reproducer of the robustness probe as a regression
test, and the check-equals-run property: what ``bufferlab check`` accepts, ``bufferlab
run`` runs or fails only for run-time reasons, with a position."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.errors import BufferlabError
from bufferlab.run.scheduler import Runner
from bufferlab.scenario.load import MAX_COMMAND_CHARS, MAX_SCENARIO_BYTES, load_scenario
from bufferlab.scenario.topology import mininet_host_ip
from conftest import TWO_HOSTS

TOPO = ("""name = "t"
{sim}
""" + TWO_HOSTS + """
[[part]]
name = "p"
cmds = [
{cmds}
]
""")
Cap = pytest.CaptureFixture[str]
#: file:line:col at the start of an error message
POSITION = re.compile(r"^\S+\.toml:\d+:\d+: error: ", re.M)


def scenario(tmp_path: Path, *cmds: str, sim: str = "", name: str = "t.toml") -> Path:
    body = ",\n".join("  " + json.dumps(c) for c in cmds)
    p = tmp_path / name
    p.write_text(TOPO.format(sim=sim, cmds=body), encoding="utf-8")
    return p


def run_cli(args: list[str], capsys: Cap) -> tuple[int, str, str]:
    status = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


# ---------------------------------------------------------------- numbers (Why 2 and 3)

#: (command, what the message must contain: the bound)
OUT_OF_RANGE = [
    ("h1: ping 10.0.0.2 -c 4294967296", "2147483647"),
    ("h1: ping 10.0.0.2 -c 2147483648", "2147483647"),
    ("h1: ping 10.0.0.2 -w 1e300", "2147483647"),
    ("h1: ping 10.0.0.2 -c 1 -W 1e30", "2147483647"),
    ("h1: cbr -c 10.0.0.2 -u -r 1e30 -t 1", "18446744073709551615 bits/s"),
    ("h1: cbr -c 10.0.0.2 -u -r 1e400 -t 1", "18446744073709551615 bits/s"),
    ("h1: poisson -c 10.0.0.2 -u -r 1e400 -t 1", "18446744073709551615 bits/s"),
    ("h1: onoff -c 10.0.0.2 -u -r 1e400 -t 1", "18446744073709551615 bits/s"),
    ("h1: cbr -c 10.0.0.2 -u -r 1e30mbit -t 1", "18446744073709551615 bits/s"),
    ("h1: cbr -c 10.0.0.2 -u -r 1M -n 1e400", "18446744073709551615 bytes"),
    ("h1: bulk -c 10.0.0.2 -n 18446744073709551616", "18446744073709551615 bytes"),
    ("h1: bulk -c 10.0.0.2 -n 1e400", "18446744073709551615 bytes"),
    ("h1: iperf3 -c 10.0.0.2 -n 1e23", "18446744073709551615 bytes"),
    ("h1: iperf3 -c 10.0.0.2 -u -b 1e400", "18446744073709551615 bits/s"),
    ("h1: iperf3 -c 10.0.0.2 -u -b 1e20", "18446744073709551615 bits/s"),
    ("h1: tcpdump -i h1-eth0 -w a.pcap -s 99999999999999999999 -c 1", "262144"),
    ("h1: tcpdump -i h1-eth0 -w a.pcap -c 99999999999999999999", "2147483647"),
    ("h1: tcpdump -i h1-eth0 -w a.pcap -c 5 less 99999999999999999999", "4294967295"),
    ("h1: tshark -i h1-eth0 -w a.pcap -c 99999999999999999999", "2147483647"),
    ("h1: cbr -c 10.0.0.2 -u -r 1M -t 99999999999999999999d", "18446744073 s"),
    ("h1: sleep 99999999999999999999999d", "18446744073 s"),
]


@pytest.mark.parametrize("line,bound", OUT_OF_RANGE)
def test_out_of_range_numbers_are_check_errors_with_the_bound(
    tmp_path: Path, capsys: Cap, line: str, bound: str
) -> None:
    status, _, err = run_cli(["check", str(scenario(tmp_path, line))], capsys)
    assert status == 2, err
    assert POSITION.search(err), err
    assert bound in err, err


@pytest.mark.parametrize("rate", ["inf", "nan", "-inf", "1e400", "1e400k"])
def test_non_finite_rates_are_errors_not_overflow(tmp_path: Path, capsys: Cap,
                                                  rate: str) -> None:
    for line in (f"h1: cbr -c 10.0.0.2 -u -r {rate} -t 1", f"h1: iperf3 -c 10.0.0.2 -u -b {rate}"):
        status, _, err = run_cli(["check", str(scenario(tmp_path, line))], capsys)
        assert status == 2 and POSITION.search(err), err


def test_the_largest_values_pass_check_and_reach_the_engine(tmp_path: Path,
                                                           capsys: Cap) -> None:
    """The bounds are the largest values the engine takes: at the bound, the spec crosses."""
    p = scenario(
        tmp_path,
        "h1: tcpdump -i h1-eth0 -w a.pcap -s 262144 -c 1 less 4294967295 &",
        "h2: sink -u &",
        "h1: ping 10.0.0.2 -c 2 -w 2147483647",
        "h1: cbr -c 10.0.0.2 -u -r 1M -t 1 -n 18446744073709551615",
        sim='[sim]\nstop_at = "5s"',
    )
    status, _, err = run_cli(["run", "-q", "-o", str(tmp_path / "out"), str(p)], capsys)
    assert status == 0, err


# ---------------------------------------------------------------- addresses (Mininet ipBase)


def test_mininet_ipadd_numbering() -> None:
    # mininet/util.py ipAdd(i) with ipBase 10.0.0.0/8: the /8 is numbered in order
    assert [mininet_host_ip(k) for k in (1, 2, 254, 255, 256, 257, 65536, 2**24 - 1)] == [
        "10.0.0.1", "10.0.0.2", "10.0.0.254", "10.0.0.255", "10.0.1.0", "10.0.1.1", "10.1.0.0",
        "10.255.255.255",
    ]
    with pytest.raises(ValueError):
        mininet_host_ip(2**24)


def test_more_than_253_hosts_run(tmp_path: Path, capsys: Cap) -> None:
    n = 300
    hosts = ", ".join(f'"h{i}"' for i in range(1, n + 1))
    links = ", ".join(f'["h{i}", "s1"]' for i in range(1, n + 1))
    p = tmp_path / "many.toml"
    p.write_text(
        f'name = "many"\n[topology]\nhosts = [{hosts}]\nswitches = ["s1"]\nlinks = [{links}]\n'
        '[[part]]\nname = "p"\ncmds = ["h1: ping 10.0.1.44 -c 1", "h300: ping 10.0.0.255 -c 1"]\n',
        encoding="utf-8",
    )
    status, _, err = run_cli(["run", "-q", "-o", str(tmp_path / "out"), str(p)], capsys)
    assert status == 0, err
    log = (tmp_path / "out/many/p/h1/terminal.log").read_text()
    assert "64 bytes from 10.0.1.44" in log  # h300 = ipAdd(300)
    assert "64 bytes from 10.0.0.255" in (tmp_path / "out/many/p/h300/terminal.log").read_text()


# ---------------------------------------------------------------- --seed


@pytest.mark.parametrize("seed", ["-1", "18446744073709551616", "x"])
def test_bad_seed_option_is_a_usage_error_with_the_range(tmp_path: Path, capsys: Cap,
                                                         seed: str) -> None:
    p = scenario(tmp_path, "h1: ping 10.0.0.2 -c 1")
    with pytest.raises(SystemExit) as e:
        main(["run", "--seed", seed, str(p)])
    assert e.value.code == 2
    assert "0 to 18446744073709551615" in capsys.readouterr().err


def test_bad_seed_in_the_file_names_the_range(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "h1: ping 10.0.0.2 -c 1")
    p.write_text("seed = -1\n" + p.read_text().replace('name = "t"\n', ""), encoding="utf-8")
    status, _, err = run_cli(["check", str(p)], capsys)
    assert status == 2 and "18446744073709551615" in err and ":1:1: error" in err


# ---------------------------------------------------------------- the file itself (Why 4 and 5)

BASE = '[topology]\nhosts=["h1","h2"]\nswitches=["s1"]\nlinks=[["h1","s1"],["s1","h2"]]\n' \
       '[[part]]\nname="p"\ncmds=["h1: ping 10.0.0.2 -c 1"]\n'


@pytest.mark.parametrize(
    "text,message",
    [
        ("x = " + "[" * 1000 + "]" * 1000 + "\n" + BASE, "nested more than 64 deep"),
        ("x = " + "{a=" * 50000 + "1" + "}" * 50000 + "\n" + BASE, "nested more than 64 deep"),
        (BASE + "[" + ".".join(["a"] * 100000) + "]\n", "dotted key of more than 64 parts"),
        (BASE + "x = {" + ".".join(["a"] * 1000) + " = 1}\n", "dotted key of more than 64 parts"),
    ],
    ids=["arrays-1000", "inline-tables-50000", "header-100000", "dotted-key-1000"],
)
def test_deep_toml_is_rejected_quickly(tmp_path: Path, capsys: Cap, text: str,
                                       message: str) -> None:
    p = tmp_path / "deep.toml"
    p.write_text(text, encoding="utf-8")
    t0 = time.perf_counter()
    status, _, err = run_cli(["check", str(p)], capsys)
    assert time.perf_counter() - t0 < 5
    assert status == 2 and message in err and POSITION.search(err), err


def test_strings_and_comments_do_not_count_as_nesting(tmp_path: Path, capsys: Cap) -> None:
    p = tmp_path / "ok.toml"
    deep = "[" * 200 + "." * 200
    p.write_text(f"# {deep}\nname = \"{deep}\"\n" + f"[sim]\nsystem_info = '''{deep}'''\n" + BASE,
                 encoding="utf-8")
    status, out, err = run_cli(["check", str(p)], capsys)
    assert status == 0, err


def test_non_utf8_file_names_the_byte_offset(tmp_path: Path, capsys: Cap) -> None:
    p = tmp_path / "latin1.toml"
    p.write_bytes(b'name = "caf\xe9"\n' + BASE.encode())
    status, _, err = run_cli(["check", str(p)], capsys)
    assert status == 2
    assert "latin1.toml:1:12: error: the scenario is not UTF-8 text: byte 0xe9 at byte offset 11" in err


def test_oversized_file_is_rejected_before_parsing(tmp_path: Path, capsys: Cap) -> None:
    p = tmp_path / "big.toml"
    huge = '"h1: echo ' + "x" * (MAX_SCENARIO_BYTES + 10) + '"'
    p.write_text(BASE.replace('"h1: ping 10.0.0.2 -c 1"', huge),
                 encoding="utf-8")
    status, _, err = run_cli(["check", str(p)], capsys)
    assert status == 2 and "16 MiB" in err


def test_long_command_is_rejected_with_its_position(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "h1: ping 10.0.0.2 -c 1", "h1: echo " + "x" * MAX_COMMAND_CHARS)
    status, _, err = run_cli(["check", str(p)], capsys)
    assert status == 2 and "t.toml:12:4: error: part 'p': command 2 is" in err and "131072" in err, err


def test_a_15_mb_command_is_checked_in_bounded_memory(tmp_path: Path) -> None:
    """Issue 16: one 50 MB command took 4.3 GB in check. Now the file limit or the line
    limit refuses it at once; a 15 MB one (under the file limit) runs under a 1.5 GB cap."""
    p = scenario(tmp_path, "h1: echo " + "x" * 15_000_000)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_DATA, (1_500_000_000,) * 2); "
            "from bufferlab.cli import main; sys.exit(main(['check', sys.argv[1]]))")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "characters long (maximum 131072)" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- ordinary lines (Why 5)


def test_mkdir_through_a_file_is_mkdirs_own_error(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "h1: echo a > f; mkdir -p f/g")
    status, _, err = run_cli(["run", "-q", "-o", str(tmp_path / "out"), str(p)], capsys)
    assert status == 1
    assert "mkdir: cannot create directory 'f/g': Not a directory" in err


def test_nul_in_a_file_name_is_a_check_error(tmp_path: Path, capsys: Cap) -> None:
    for line in ('h1: echo a > "x\x00y"', "h1: mkdir a\x00b", "h1: cd a\x00b"):
        status, _, err = run_cli(["check", str(scenario(tmp_path, line))], capsys)
        assert status == 2 and "NUL" in err and POSITION.search(err), err


def test_plot_iperf_with_a_file_named_results(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "h2: iperf3 -s -1", "h1: iperf3 -c 10.0.0.2 -t 1 -J > a.json",
                 "h1: echo x > results", "h1: plot_iperf.sh a.json")
    status, _, err = run_cli(["run", "-q", "-o", str(tmp_path / "out"), str(p)], capsys)
    assert status == 1
    assert "mkdir: cannot create directory 'results': File exists" in err
    assert (tmp_path / "out/t/p/h1/results").read_text() == "x\n"


# ---------------------------------------------------------------- the report (Why 1 and 5)


def test_netem_rate_does_not_crash_the_report(tmp_path: Path, capsys: Cap) -> None:
    p = scenario(tmp_path, "admin: tc qdisc add dev s1-eth2 root netem rate 100mbit",
                 "h1: ping 10.0.0.2 -c 1")
    status, _, err = run_cli(["run", "-q", "-o", str(tmp_path / "out"), str(p)], capsys)
    assert status == 0, err
    assert "netem" in (tmp_path / "out/t/report.html").read_text()


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("run")
    p = scenario(tmp, "admin: tc qdisc add dev s1-eth2 root netem delay 5ms rate 10mbit",
                 "h2: iperf3 -s -1", "h1: iperf3 -c 10.0.0.2 -u -b 1M -t 1 -J > u.json",
                 "h1: ping 10.0.0.2 -c 2")
    assert main(["run", "-q", "--no-report", "-o", str(tmp / "out"), str(p)]) == 0
    return tmp / "out" / "t"


def _paths(o: object, p: tuple = ()):  # type: ignore[type-arg]
    yield p
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _paths(v, (*p, k))
    elif isinstance(o, list):
        for i, v in enumerate(o[:1]):
            yield from _paths(v, (*p, i))


def test_report_on_an_edited_summary_names_the_file(finished_run: Path, tmp_path: Path,
                                                   capsys: Cap) -> None:
    """Every value of summary.json replaced by a wrong type: the report is written or the
    error names summary.json (was: ValueError/TypeError/KeyError tracebacks)."""
    base = json.loads((finished_run / "summary.json").read_text())
    paths = [p for p in _paths(base) if p and p[0] not in ("scenario_toml",)]
    folder = tmp_path / "edited"
    shutil.copytree(finished_run, folder)
    errors = 0
    for p in paths[::3]:
        for v in ("x", -1, None, {}):
            doc = json.loads(json.dumps(base))
            cur = doc
            for k in p[:-1]:
                cur = cur[k]
            cur[p[-1]] = v
            (folder / "summary.json").write_text(json.dumps(doc))
            try:
                main(["report", str(folder)])
            except SystemExit:  # pragma: no cover - main returns
                raise
            out, err = capsys.readouterr()
            assert "Traceback" not in err
            if "error:" in err:
                errors += 1
                assert "summary.json: error:" in err, (p, v, err)
    assert errors  # some edits are refused, by name
    (folder / "summary.json").write_text('{"parts": [1], "seed": ')
    assert main(["report", str(folder)]) == 2
    assert "summary.json: error:" in capsys.readouterr().err


# ---------------------------------------------------------------- TCP with no delay (Why 3)


def test_tcp_on_a_plain_veth_path_runs_at_the_hosts_speed(tmp_path: Path,
                                                         capsys: Cap) -> None:
    p = scenario(tmp_path, "h2: iperf3 -s -1", "h1: iperf3 -c 10.0.0.2 -t 1", "h2: sink &",
                 "h1: bulk -c 10.0.0.2 -n 1000000")
    status, _, err = run_cli(["run", "-q", "-o", str(tmp_path / "out"), str(p)], capsys)
    assert status == 0, err
    log = (tmp_path / "out/t/p/h1/terminal.log").read_text()
    rate = re.search(r"([\d.]+) Gbits/sec\s+\d*\s+sender", log)
    assert rate and 1 < float(rate.group(1)) < 100, log  # finite: the hosts' per-packet time


def test_tcp_on_a_zero_rtt_path_without_host_time_fails_with_a_position(
    tmp_path: Path, capsys: Cap
) -> None:
    p = scenario(tmp_path, "h2: iperf3 -s -1", "h1: iperf3 -c 10.0.0.2 -t 1",
                 sim="[sim]\nhost_packet_ns = 0\nhost_byte_ps = 0\nhost_wakeup_ns = 0")
    status, _, err = run_cli(["run", "-q", "-o", str(tmp_path / "out"), str(p)], capsys)
    assert status == 2
    assert re.search(r"t\.toml:\d+: error: part 'p': simulated time stopped advancing", err), err
    assert re.search(r"t\.toml:\d+:\d+: iperf3 -c 10.0.0.2 -t 1", err), err


# ---------------------------------------------------------------- scenario values


@pytest.mark.parametrize(
    "sim,needle",
    [
        ('[sim]\nhost_packet_ns = 99999999999999999999', "0 to 1000000000"),
        ('[sim]\nepoch = 99999999999999', "0 to 253402300799"),
        ('[sim]\npart_gap = "99999999999999999999999d"', "too long"),
        ('[sim]\nstop_at = "99999999999999999999999d"', "too long"),
        ('[hosts.h1]\ntcp = { rcvbuf = 99999999999 }', "1 to 4294967295"),
        ('[hosts.h1]\ntcp = { min_rto = [] }', "min_rto"),
    ],
)
def test_scenario_numbers_are_bounded(tmp_path: Path, capsys: Cap, sim: str,
                                      needle: str) -> None:
    p = scenario(tmp_path, "h1: ping 10.0.0.2 -c 1", sim=sim)
    status, _, err = run_cli(["check", str(p)], capsys)
    assert status == 2 and needle in err, err


def test_wire_rate_beyond_u64_is_an_error(tmp_path: Path, capsys: Cap) -> None:
    p = tmp_path / "w.toml"
    p.write_text('[topology]\nhosts=["h1","h2"]\nlinks=[{a="h1", b="h2", a_ip="10.0.0.1/8", '
                 'b_ip="10.0.0.2/8", wire_rate="18446744073709551615bps"}]\n'
                 '[[part]]\ncmds=["h1: ping 10.0.0.2 -c 1"]\n', encoding="utf-8")
    status, _, err = run_cli(["check", str(p)], capsys)
    assert status == 2 and "wire_rate" in err and POSITION.search(err), err


# ---------------------------------------------------------------- check = run (property)

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

#: numbers around every bound the parsers enforce, and the malformed ones
NUMBERS = ["0", "1", "2", "-1", "1.5", "1e3", "1e400", "inf", "nan", "-inf", "0x10", "255", "256",
           "65507", "65508", "262144", "262145", "2147483647", "2147483648", "4294967295",
           "4294967296", "18446744073709551615", "18446744073709551616", "99999999999999999999",
           "1e30", "", "x", "10M", "1k", "1G", "10mbit", "5ms", "1s", "100ms", "2d"]
#: small values for what would make the run long (counts, durations, rates)
SMALL = ["1", "2", "0", "-1", "0.5", "1e400", "nan", "x", "", "1k", "10M", "2147483648",
         "18446744073709551616", "1e30"]

TEMPLATES = [
    "h1: ping 10.0.0.2 -c {s} -i 0.{n1}",
    "h1: ping 10.0.0.2 -c 2 -s {n}",
    "h1: ping 10.0.0.2 -c 2 -w {n} -W {n1}",
    "h1: ping 10.0.0.2 -c 2 -Q {n}",
    "h1: iperf3 -c 10.0.0.2 -u -b {s} -t 1 -l {n}",
    "h1: iperf3 -c 10.0.0.2 -n {s}",
    "h1: iperf3 -c 10.0.0.2 -t {s} -P {n} -w {n1}",
    "h1: cbr -c 10.0.0.2 -u -r {s} -t 1 -l {n}",
    "h1: poisson -c 10.0.0.2 -u -r {s} -n {n} -t 1",
    "h1: onoff -c 10.0.0.2 -u -r {s} -t 1 --on {n1} --off {n}",
    "h1: bulk -c 10.0.0.2 -n {s} -t 1",
    "h1: cbr -c 10.0.0.2 -u -r 1M -t {s} -S {n} --jitter {n1}",
    "h1: tcpdump -i h1-eth0 -w c.pcap -s {n} -c {n1} less {n} &",
    "h1: tshark -i h1-eth0 -w c.pcap -c {n} -s {n1} &",
    "h1: sleep {s}",
    "admin: tc qdisc add dev s1-eth2 root netem delay {n} rate {n1} limit {n}",
    "admin: tc qdisc add dev s1-eth2 root tbf rate {n} burst {n1} limit {n}",
    "admin: tc qdisc add dev s1-eth2 root netem loss {n}% duplicate {n1}",
    "h1: sysctl -w net.core.rmem_max={n}",
    "h1: sysctl -w net.ipv4.tcp_rmem='{n1} {n} {n}'",
    "h1: mkdir -p {n}/{n1} && cd {n} && echo {n1} > {n1}",
]


@st.composite
def command_lines(draw: st.DrawFn) -> str:
    template = draw(st.sampled_from(TEMPLATES))
    return template.format(n=draw(st.sampled_from(NUMBERS)), n1=draw(st.sampled_from(NUMBERS)),
                           s=draw(st.sampled_from(SMALL)))


def _check(path: Path) -> Runner | None:
    """The scenario's Runner after ``check``; None if check refused it (with a position)."""
    try:
        r = Runner(load_scenario(path), path.parent / "out")
        r.check()
    except BufferlabError as e:
        assert POSITION.search(str(e)) or str(e).startswith(f"{path}:"), str(e)
        return None
    return r


@hypothesis.settings(max_examples=300, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(lines=st.lists(command_lines(), min_size=1, max_size=3))
def test_check_never_tracebacks(tmp_path: Path, lines: list[str]) -> None:
    _check(scenario(tmp_path, *lines))


@hypothesis.settings(max_examples=40, deadline=None,
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(lines=st.lists(command_lines(), min_size=1, max_size=3))
def test_what_check_accepts_runs_or_fails_with_a_position(tmp_path: Path, lines: list[str]) -> None:
    folder = tmp_path / f"c{time.perf_counter_ns()}"
    folder.mkdir()
    path = scenario(folder, "h2: iperf3 -s &", "h2: sink -u &", *lines, sim='[sim]\nstop_at = "3s"')
    r = _check(path)
    if r is None:
        return
    if hasattr(r, "max_events"):
        r.max_events = 2_000_000  # a huge accepted rate ends the run cleanly, not by the test's timeout
    try:
        r.run()
    except BufferlabError as e:  # run-time reasons only, and with a position
        assert re.match(rf"{re.escape(str(path))}:\d+(:\d+)?: error: ", str(e)), str(e)
    except Exception as e:  # noqa: BLE001 - RunStopped (--max-events) is a clean end
        assert type(e).__name__ == "RunStopped", repr(e)
    for f in r.failures:  # a command that exited non-zero says where it was typed
        assert re.match(rf"{re.escape(str(path))}:\d+:\d+", str(f)), str(f)
