"""Command-line parsers: shell splitting, tc/iperf3/ping number readers, tc,
sysctl, iperf3, ping and the traffic generators.

Run from the repository root: PYTHONPATH=python python -m pytest tests/test_parsers.py -q
"""

from __future__ import annotations

import json
import pathlib
import sys
import types

import pytest

# The package __init__ imports the native engine (bufferlab._core); these
# parsers do not need it. If it is not built, load the subpackages from the
# source tree as a namespace package.
try:  # pragma: no cover - depends on whether the extension is built
    import bufferlab  # noqa: F401
except ImportError:  # pragma: no cover
    _pkg = types.ModuleType("bufferlab")
    _pkg.__path__ = [str(pathlib.Path(__file__).resolve().parents[1] / "python" / "bufferlab")]
    sys.modules["bufferlab"] = _pkg

from bufferlab import units  # noqa: E402
from bufferlab.commands import generators as gen  # noqa: E402
from bufferlab.commands.iperf3 import Iperf3Client, Iperf3Server, ensure_supported, parse_iperf3  # noqa: E402
from bufferlab.commands.ping import PingCommand, parse_ping  # noqa: E402
from bufferlab.commands.shell import Job, Word, parse_shell  # noqa: E402
from bufferlab.commands.sysctl import (  # noqa: E402
    execute_sysctl,
    format_sysctl_echo,
    parse_sysctl,
    sysctl_defaults,
)
from bufferlab.commands.tc import TcQdiscRequest, TcShow, parse_tc  # noqa: E402
from bufferlab.commands.tc.registry import MODELLED_QDISCS  # noqa: E402
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError  # noqa: E402
from bufferlab.profile import PROFILES, Profile, with_overrides  # noqa: E402

SCENARIOS = pathlib.Path(__file__).resolve().parent / "data" / "handouts"
LAB2019 = PROFILES["lab2019"]
MODERN = PROFILES["modern"]


def W(line: str) -> list[Word]:
    """The words of the single command in ``line``."""
    jobs = parse_shell(line)
    assert len(jobs) == 1 and len(jobs[0].commands) == 1
    return jobs[0].commands[0].words


def col(line: str, token: str, nth: int = 0) -> int:
    i = -1
    for _ in range(nth + 1):
        i = line.index(token, i + 1)
    return i


def tc(line: str, profile: Profile = LAB2019, diag: Diagnostics | None = None):
    return parse_tc(W(line), diag or Diagnostics(), profile)


def tc_json(line: str, profile: Profile = LAB2019) -> dict:
    r = tc(line, profile)
    assert isinstance(r, TcQdiscRequest)
    return json.loads(r.to_json())


def tc_err(line: str, cls=CommandError, profile: Profile = LAB2019) -> CommandError:
    with pytest.raises(cls) as ei:
        tc(line, profile)
    return ei.value


# =====================================================================================
# handout lines (tests/data/handouts/*.txt)


def _handout_commands():
    out = []
    for f in sorted(SCENARIOS.glob("*.txt")):
        for n, line in enumerate(f.read_text().splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            _, _, cmd = line.partition(": ")
            for job in parse_shell(cmd):
                for c in job.commands:
                    if c.name in ("tc", "sysctl", "iperf3", "ping"):
                        out.append(pytest.param(c, id=f"{f.stem}:{n}:{c.text}"))
    return out


HANDOUT = _handout_commands()


def test_handout_lines_found():
    assert len(HANDOUT) >= 50


@pytest.mark.parametrize("cmd", HANDOUT)
def test_every_handout_line_parses(cmd):
    """Every handout tc/sysctl/iperf3/ping line parses (RED lines with warnings for
    the handouts' spellings ``avgpkt``/``adaptative`` and the ``red_csc573`` kind)."""
    diag = Diagnostics()
    if cmd.name == "tc":
        req = parse_tc(cmd.words, diag, LAB2019)
        assert isinstance(req, TcQdiscRequest)
        if " red" in cmd.text:
            assert req.qdisc is not None and req.qdisc.to_dict()["kind"] == "red"
            assert diag.warnings
    elif cmd.name == "sysctl":
        parse_sysctl(cmd.words, diag)
    elif cmd.name == "iperf3":
        parse_iperf3(cmd.words, diag, LAB2019)
    else:
        parse_ping(cmd.words, diag)


TBF = {"peakrate": None, "mtu": None, "mpu": 0, "overhead": 0, "atm": False}
NETEM_DEFAULTS = {
    "kind": "netem",
    "limit": 1000,
    "latency": 0,
    "jitter": 0,
    "loss": {"model": "random", "p": 0},
    "gap": 0,
    "duplicate": 0,
    "correlation": None,
    "reorder": None,
    "corrupt": None,
    "rate": None,
    "ecn": None,
    "slot": None,
    "distribution": None,
}


def netem(**kw) -> dict:
    d = dict(NETEM_DEFAULTS)
    d.update(kw)
    return d


@pytest.mark.parametrize(
    "line, expected",
    [
        (
            "./tc qdisc add dev eth1 root handle 1: tbf rate 8mbit burst 10k limit 200k",
            {
                "verb": "add",
                "dev": "eth1",
                "parent": "root",
                "handle": 1,
                "qdisc": {"kind": "tbf", "rate": 1000000, "burst": 10240, "limit": 204800, **TBF},
            },
        ),
        (
            "sudo tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms",
            {
                "verb": "add",
                "dev": "s1-eth2",
                "parent": "root",
                "handle": 1,
                "qdisc": netem(latency=20000000),
            },
        ),
        (
            "sudo tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 160000",
            {
                "verb": "add",
                "dev": "s1-eth2",
                "parent": {"class": {"major": 1, "minor": 0}},
                "handle": 2,
                "qdisc": {"kind": "tbf", "rate": 125000000, "burst": 500000, "limit": 160000, **TBF},
            },
        ),
        (
            "sudo tc qdisc change dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2621440",
            {
                "verb": "change",
                "dev": "s1-eth2",
                "parent": {"class": {"major": 1, "minor": 0}},
                "handle": 2,
                "qdisc": {"kind": "tbf", "rate": 125000000, "burst": 500000, "limit": 2621440, **TBF},
            },
        ),
        (
            "sudo tc qdisc add dev s1-eth1 root netem delay 20ms",
            {
                "verb": "add",
                "dev": "s1-eth1",
                "parent": "root",
                "handle": None,
                "qdisc": netem(latency=20000000),
            },
        ),
        (
            "sudo tc qdisc change dev s2-eth2 root handle 1: tbf rate 100mbit burst 50000 limit 26214400",
            {
                "verb": "change",
                "dev": "s2-eth2",
                "parent": "root",
                "handle": 1,
                "qdisc": {"kind": "tbf", "rate": 12500000, "burst": 50000, "limit": 26214400, **TBF},
            },
        ),
        (
            "sudo tc qdisc add dev s1-eth2 root handle 1: netem loss 0.01%",
            {
                "verb": "add",
                "dev": "s1-eth2",
                "parent": "root",
                "handle": 1,
                "qdisc": netem(loss={"model": "random", "p": 429497}),
            },
        ),
        (
            "sudo tc qdisc change dev s1-eth2 root handle 1: netem loss 0.01% delay 30ms",
            {
                "verb": "change",
                "dev": "s1-eth2",
                "parent": "root",
                "handle": 1,
                "qdisc": netem(latency=30000000, loss={"model": "random", "p": 429497}),
            },
        ),
    ],
)
def test_handout_tc_json(line, expected):
    assert tc_json(line) == expected


def test_tc_json_is_serde_compact_in_field_order():
    r = tc("tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 2500000")
    assert r.to_json() == (
        '{"verb":"add","dev":"s1-eth2","parent":{"class":{"major":1,"minor":0}},"handle":2,'
        '"qdisc":{"kind":"tbf","rate":125000000,"burst":500000,"limit":2500000,"peakrate":null,'
        '"mtu":null,"mpu":0,"overhead":0,"atm":false}}'
    )
    r = tc("tc qdisc del dev s1-eth2 root")
    assert r.to_json() == '{"verb":"delete","dev":"s1-eth2","parent":"root","handle":null,"qdisc":null}'
    # checked against serde_json with a copy of crates/bufferlab-core/src/qdisc/spec.rs
    r = tc(
        "tc qdisc add dev x root netem delay 100ms 10ms 25% distribution normal loss 1% 30% duplicate 1% "
        "corrupt 0.1% 5% reorder 25% 50% gap 5 rate 8mbit -14 48 5 slot 1ms 2ms packets 10 bytes 10k ecn"
    )
    assert r.to_json() == (
        '{"verb":"add","dev":"x","parent":"root","handle":null,"qdisc":{"kind":"netem","limit":1000,'
        '"latency":100000000,"jitter":10000000,"loss":{"model":"random","p":42949673},"gap":5,'
        '"duplicate":42949673,"correlation":{"delay":1073741824,"loss":1288490188,"duplicate":0},'
        '"reorder":{"p":1073741824,"corr":2147483648},"corrupt":{"p":4294967,"corr":214748365},'
        '"rate":{"rate":1000000,"packet_overhead":-14,"cell_size":48,"cell_overhead":5},"ecn":true,'
        '"slot":{"min_delay":1000000,"max_delay":2000000,"dist":null,"packets":10,"bytes":10240},'
        '"distribution":"normal"}}'
    )


# =====================================================================================
# shell


def test_shell_handout_forms():
    jobs = parse_shell("iperf3 -c 10.0.0.3 -t 90 -J > out.json")
    (cmd,) = jobs[0].commands
    assert [w.text for w in cmd.words] == ["iperf3", "-c", "10.0.0.3", "-t", "90", "-J"]
    assert cmd.redirect.op == ">" and cmd.redirect.target == Word("out.json", 30)
    assert cmd.text == "iperf3 -c 10.0.0.3 -t 90 -J > out.json"

    jobs = parse_shell("plot_iperf.sh out.json && cd results")
    assert len(jobs) == 1 and [c.name for c in jobs[0].commands] == ["plot_iperf.sh", "cd"]
    assert jobs[0].background is False

    jobs = parse_shell("iperf3 -s -p 5010 & iperf3 -s -p 5011 & iperf3 -s -p 5012")
    assert [j.background for j in jobs] == [True, True, False]
    assert [j.commands[0].words[3].text for j in jobs] == ["5010", "5011", "5012"]
    assert jobs[1].commands[0].words[0].col == 20


def test_shell_quotes_and_columns():
    line = "h1: sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'"[4:]
    words = W(line)
    assert words[2] == Word("net.ipv4.tcp_rmem=10240 87380 52428800", 10)
    words = W('echo "a \\"b\\" \\\\ $" \'it\'"s"')
    assert words[1].text == 'a "b" \\ $'
    assert words[2].text == "its"
    assert W("echo a\\ b")[1].text == "a b"


def test_shell_redirect_forms():
    for line, op, target in [
        ("iperf3 -s >out.json", ">", "out.json"),
        ("iperf3 -s >>log.txt", ">>", "log.txt"),
        ("iperf3 -s >> 'my log'", ">>", "my log"),
        ("> out.json iperf3 -s", ">", "out.json"),
    ]:
        cmd = parse_shell(line)[0].commands[0]
        assert cmd.redirect.op == op and cmd.redirect.target.text == target
        assert [w.text for w in cmd.words] == ["iperf3", "-s"]
    assert parse_shell("iperf3 -s >out.json")[0].commands[0].redirect.target.col == 11


def test_shell_sudo_and_dot_slash():
    for line in (
        "sudo tc qdisc show",
        "sudo -E tc qdisc show",
        "sudo -u root tc qdisc show",
        "sudo -- tc qdisc show",
        "./tc qdisc show",
        "sudo -E ./tc qdisc show",
    ):
        words = W(line)
        assert [w.text for w in words] == ["tc", "qdisc", "show"], line
        assert words[0].col == line.index("tc")
    cmd = parse_shell("sudo plot_q.sh s1-eth2")[0].commands[0]
    assert cmd.name == "plot_q.sh" and cmd.text == "sudo plot_q.sh s1-eth2"


def test_shell_sequences():
    jobs = parse_shell("a && b; c & d")
    assert [([c.name for c in j.commands], j.background) for j in jobs] == [
        (["a", "b"], False),
        (["c"], True),
        (["d"], False),
    ]
    assert parse_shell("a;") == [Job([parse_shell("a")[0].commands[0]], False)]
    # bash's left-to-right && / || chain: the operators are kept for the runner
    (job,) = parse_shell("a && b || c")
    assert [c.name for c in job.commands] == ["a", "b", "c"] and job.ops == ["&&", "||"]
    assert parse_shell("") == [] and parse_shell("   # comment") == []
    assert [w.text for w in W("echo a#b # comment")] == ["echo", "a#b"]


@pytest.mark.parametrize(
    "line, token, text",
    [
        ("ping 10.0.0.3 | tee out", "|", "pipes (|) are not supported"),
        ("cat < in", "<", "input redirection (<) is not supported"),
        ("echo $(date)", "$", "command substitution $(...) is not supported"),
        ("echo `date`", "`", "command substitution `...` is not supported"),
        ('echo "$(date)"', "$", "command substitution $(...) is not supported"),
        ("echo $HOME", "$", "shell variables ($NAME) are not supported"),
        ("ls *.json", "*", "the glob character '*' is not supported"),
        ("ls out?.json", "?", "the glob character '?' is not supported"),
        ("iperf3 -s 2> err", "2", "file-descriptor redirections (such as 2>) are not supported"),
        ("iperf3 -s &> err", "&>", "the &> redirection is not supported"),
        ("(cd x)", "(", "subshells ( ... ) are not supported"),
        ("A=1 iperf3 -s", "A", "environment assignments (NAME=value before a command) are not supported"),
        ("a > x > y", "> y", "more than one redirection per command is not supported"),
    ],
)
def test_shell_not_supported(line, token, text):
    with pytest.raises(CommandError) as ei:
        parse_shell(line)
    assert ei.value.message == text
    assert ei.value.col == line.index(token)


@pytest.mark.parametrize(
    "line, message, where",
    [
        ("echo 'abc", "unterminated single quote", 5),
        ('echo "abc', "unterminated double quote", 5),
        ("a &&", "the line ends after `&&'", 4),
        ("&& a", "syntax error near unexpected token `&&'", 0),
        ("a ; ; b", "syntax error near unexpected token `;'", 4),
        ("iperf3 -s >", "syntax error near unexpected token `newline'", 10),
        ("a > && b", "syntax error near unexpected token `&&'", 4),
        ("sudo", "sudo needs a command to run", 0),
        ("> out", "a redirection needs a command", 0),
    ],
)
def test_shell_syntax_errors(line, message, where):
    with pytest.raises(CommandError) as ei:
        parse_shell(line)
    assert ei.value.message == message and ei.value.col == where


def test_shell_quoted_glob_is_fine():
    assert W("echo '*' \"?\"")[1:] == [Word("*", 5), Word("?", 9)]


# =====================================================================================
# units (docs/semantics/qdiscs.md §1.1, E1)


@pytest.mark.parametrize(
    "text, value",
    [
        ("10k", 10240),
        ("200k", 204800),
        ("400kb", 409600),
        ("16kb", 16384),
        ("32kb", 32768),
        ("500000", 500000),
        ("26214400", 26214400),
        ("1mbit", 131072),
        ("1kbit", 128),
        ("1gbit", 134217728),
        ("2m", 2097152),
        ("1GB", 1073741824),
        ("0.5k", 512),
        ("1000b", 1000),
        ("1.9", 1),
        ("0x10", 16),
    ],
)
def test_e1_sizes(text, value):
    assert units.parse_size(text) == value


@pytest.mark.parametrize(
    "text, value",
    [
        ("1gbit", 125_000_000),
        ("100mbit", 12_500_000),
        ("8mbit", 1_000_000),
        ("10Mbit", 1_250_000),
        ("1mbps", 1_000_000),
        ("1000", 125),
        ("1kibit", 128),
        ("1Gibit", 134217728),
        ("1tbit", 125_000_000_000),
        ("8bit", 1),
        ("1KBps", 1000),
    ],
)
def test_e1_rates(text, value):
    assert units.parse_rate(text) == value


def test_e1_times_and_percents():
    assert units.parse_time_us("20ms") == 20000
    assert units.parse_time_us("1.5s") == 1500000
    assert units.parse_time_us("250") == 250
    assert units.parse_time_us("3usecs") == 3
    assert units.parse_percent("0.01%") == 429497
    assert units.parse_percent("1%") == 42949673
    assert units.parse_percent("100%") == 4294967295
    assert units.parse_percent("25") == 1073741824  # the % sign is optional
    assert units.parse_percent("0") == 0


def test_e1_netem_time_lab2019_ticks():
    assert units.parse_netem_time("1.1ms", ns_mode=False) == 1_099_968  # 17187 ticks
    assert units.parse_netem_time("20ms", ns_mode=False) == 20_000_000  # 312500 ticks
    assert units.parse_netem_time("100", ns_mode=False) == 99_968  # bare = µs, quantised
    assert units.parse_netem_time("30ms", ns_mode=False) == 30_000_000


def test_netem_time_modern_ns():
    assert units.parse_netem_time("1.1ms", ns_mode=True) == 1_100_000
    assert units.parse_netem_time("100", ns_mode=True) == 100  # bare = ns (iproute2 >= 6.9)
    assert units.parse_netem_time("5ns", ns_mode=True) == 5
    assert units.parse_time_ns64("2us") == 2000


def test_netem_time_too_large():
    with pytest.raises(CommandError) as ei:
        units.parse_netem_time("300s", ns_mode=False, col=7)
    assert ei.value.message == "Illegal 300000000 time (too large)" and ei.value.col == 7


def test_strtod_prefix():
    assert units.strtod_prefix("1e3x") == (1000.0, "x")
    assert units.strtod_prefix("0x10k") == (16.0, "k")
    assert units.strtod_prefix(".5%") == (0.5, "%")
    assert units.strtod_prefix("1e") == (1.0, "e")
    assert units.strtod_prefix("abc") == (None, "abc")


@pytest.mark.parametrize(
    "fn, text, message, expected_part, hint_part",
    [
        (units.parse_size, "10x", 'invalid size "10x": unknown unit "x"', "10k (= 10240)", "k/kb"),
        (units.parse_size, "1mbps", 'invalid size "1mbps": unknown unit "mbps"', "500000", "rate unit"),
        (units.parse_size, "abc", 'invalid size "abc"', "a size in bytes", "write a number"),
        (units.parse_size, "5g", 'size "5g" is too large (maximum 4294967295 bytes)', "a size", None),
        (units.parse_rate, "1g", 'invalid rate "1g": unknown unit "g"', "1gbit", "1gbit"),
        (units.parse_rate, "fast", 'invalid rate "fast"', "100mbit", "use 1gbit, 100mbit, 8mbit"),
        (
            units.parse_rate,
            "10mbits",
            'invalid rate "10mbits": unknown unit "mbits"',
            "8mbit",
            'write "mbit"',
        ),
        (units.parse_rate, "50%", 'rate "50%" is a percentage of the device speed', "1gbit", "absolute"),
        (units.parse_time_us, "5min", 'invalid time "5min": unknown unit "min"', "20ms", "300s"),
        (units.parse_time_us, "x", 'invalid time "x"', "20ms", "20ms"),
        (units.parse_percent, "101%", 'percentage "101%" is out of range', "between 0 and 100", None),
        (units.parse_percent, "1%%", 'invalid percentage "1%%"', "0.01%", "single trailing %"),
        (units.parse_percent, "abc", 'invalid percentage "abc"', "0.01%", "0.01%"),
        (units.parse_probability, "2%", 'invalid probability "2%"', "between 0 and 1", "write 0.02"),
        (units.parse_probability, "1.5", 'probability "1.5" is out of range', "between 0 and 1", None),
        (units.parse_iperf_rate, "10Mbit", 'invalid rate "10Mbit": unknown unit "Mbit"', "0.9m", "write 10M"),
        (units.parse_iperf_rate, "fast", 'invalid rate "fast"', "bits/s", None),
        (units.parse_iperf_size, "10MB", 'invalid size "10MB": unknown unit "MB"', "×1024", "write 10M"),
        (units.parse_duration_ns, "5min", 'invalid duration "5min"', "500ms", "write 5m"),
        (units.parse_duration_ns, "2sec", 'invalid duration "2sec"', "500ms", "write 2s"),
        (units.parse_duration_ns, "-1", 'invalid duration "-1"', "500ms", None),
    ],
)
def test_unit_errors(fn, text, message, expected_part, hint_part):
    with pytest.raises(CommandError) as ei:
        fn(text, col=12)
    e = ei.value
    assert e.message == message
    assert e.col == 12
    assert expected_part in e.expected
    if hint_part is None:
        assert e.suggestion is None
    else:
        assert hint_part in e.suggestion


def test_probability_and_iperf_units():
    assert units.parse_probability("0.2") == 0.2
    assert units.parse_iperf_rate("0.9m") == 900_000
    assert units.parse_iperf_rate("0.9M") == 900_000
    assert units.parse_iperf_rate("1G") == 1_000_000_000
    assert units.parse_iperf_rate("1M", legacy_1024=True) == 1_048_576
    assert units.parse_iperf_rate("100") == 100
    assert units.parse_iperf_size("10M") == 10 * 1024 * 1024
    assert units.parse_iperf_size("64K") == 65536
    assert units.parse_iperf_size("1448") == 1448


@pytest.mark.parametrize(
    "text, ns",
    [
        ("1", 10**9),
        ("0.5", 5 * 10**8),
        ("2s", 2 * 10**9),
        ("500ms", 5 * 10**8),
        ("1m", 60 * 10**9),
        ("0.1", 10**8),
        ("250us", 250_000),
        ("1h", 3600 * 10**9),
        (".5s", 5 * 10**8),
    ],
)
def test_durations(text, ns):
    assert units.parse_duration_ns(text) == ns


# =====================================================================================
# tc: verbs, handles, show


@pytest.mark.parametrize(
    "verb, expected",
    [
        ("a", "add"),
        ("add", "add"),
        ("c", "change"),
        ("ch", "change"),
        ("r", "replace"),
        ("repl", "replace"),
        ("l", "link"),
        ("li", "link"),
        ("d", "delete"),
        ("del", "delete"),
        ("delete", "delete"),
    ],
)
def test_tc_verb_prefixes(verb, expected):
    r = tc(f"tc qdisc {verb} dev s1-eth2 root pfifo")
    assert r.verb == expected


@pytest.mark.parametrize("verb", ["show", "sh", "s", "ls", "list", "lis", "lst"])
def test_tc_show_verbs(verb):
    r = tc(f"tc qdisc {verb} dev s1-eth2")
    assert isinstance(r, TcShow) and r.dev == "s1-eth2" and not r.stats


def test_tc_show_options():
    r = tc("tc -s -d qdisc show dev s2-eth2 invisible")
    assert (r.stats, r.details, r.invisible, r.dev, r.dev_col) == (True, True, True, "s2-eth2", 24)
    r = tc("tc -statistics qdisc ls")
    assert r.stats and r.dev is None
    r = tc("tc --stats qdisc")
    assert isinstance(r, TcShow) and r.stats
    r = tc("tc qdisc show dev x handle 1:")
    assert r.handle == 1
    r = tc("tc qdisc show dev x root")
    assert r.parent is not None
    e = tc_err("tc qdisc show dev x bogus")
    assert e.message == 'What is "bogus"? Try "tc qdisc help".' and e.col == 20


def test_tc_parent_and_handle_forms():
    assert tc_json("tc qdisc add dev x parent 1:1 handle 10: netem")["parent"] == {
        "class": {"major": 1, "minor": 1}
    }
    assert tc_json("tc qdisc add dev x parent 10: handle a: netem")["parent"] == {
        "class": {"major": 16, "minor": 0}
    }
    assert tc_json("tc qdisc add dev x parent 10: handle a: netem")["handle"] == 10
    assert tc_json("tc qdisc add dev x parent :5 netem")["parent"] == {"class": {"major": 0, "minor": 5}}
    assert tc_json("tc qdisc add dev x parent root netem")["parent"] == "root"
    assert tc_json("tc qdisc add dev x handle 1 root netem")["handle"] == 1
    assert tc_json("tc qdisc change dev x handle 1: netem delay 1ms")["parent"] is None
    assert tc_json("tc qdisc add dev x handle none root netem")["handle"] is None


@pytest.mark.parametrize(
    "line, token, message",
    [
        (
            "tc qdisc add dev x handle 1x: root netem",
            "1x:",
            'Error: argument "1x:" is wrong: invalid qdisc ID',
        ),
        (
            "tc qdisc add dev x handle 10000: root netem",
            "10000:",
            'Error: argument "10000:" is wrong: invalid qdisc ID',
        ),
        ("tc qdisc add dev x parent 1:z netem", "1:z", 'Error: argument "1:z" is wrong: invalid parent ID'),
        ("tc qdisc add dev x parent 1: root netem", "root", 'Error: "root" is duplicate parent ID'),
        (
            "tc qdisc add dev x root parent 1: netem",
            "1:",
            'Error: duplicate "parent": "1:" is the second value.',
        ),
        ("tc qdisc add dev x dev y root netem", "y", 'Error: duplicate "dev": "y" is the second value.'),
        (
            "tc qdisc add dev x root handle 1: handle 2: netem",
            "handle",
            'Error: duplicate "handle": "handle" is the second value.',
        ),
        ("tc qdisc add dev", "dev", 'Command line is not complete. Try option "help"'),
        ("tc qdisc add root netem", "add", "RTNETLINK answers: No such device"),
        ("tc qdisc add dev x root", "add", "tc qdisc add needs a qdisc kind"),
        ("tc qdisc frob dev x", "frob", 'Command "frob" is unknown, try "tc qdisc help".'),
        ("tc qdiscs show", "qdiscs", 'Object "qdiscs" is unknown, try "tc help".'),
        ("tc -z qdisc show", "-z", 'Option "-z" is unknown, try "tc -help".'),
        ("tc", "tc", "Usage: tc [ OPTIONS ] OBJECT { COMMAND | help }"),
    ],
)
def test_tc_command_errors(line, token, message):
    e = tc_err(line)
    assert e.message == message
    assert e.col == line.rindex(token)


def test_tc_missing_dev_and_kind_have_expected():
    assert "dev DEVICE" in tc_err("tc qdisc add root netem").expected
    assert "netem" in tc_err("tc qdisc add dev x root").expected


@pytest.mark.parametrize(
    "line, token, message",
    [
        (
            "tc class add dev x parent 1: classid 1:1 qfq weight 1",
            "qfq",
            'tc class "qfq" is not supported yet (classes of htb, drr, ets, hfsc are modelled)',
        ),
        ("tc filter add dev x parent 1: basic", "basic", 'tc filter "basic" is not supported yet'),
        ("tc chain add dev x", "chain", "tc chain is not supported yet"),
        ("tc -j qdisc show", "-j", "tc option -j is not supported yet"),
        ("tc qdisc show dev x ingress", "ingress", "tc qdisc show ingress is not supported yet"),
        (
            "tc qdisc add dev x root estimator 1s 8s netem",
            "estimator",
            "tc qdisc estimator is not supported yet",
        ),
        ("tc qdisc add dev x root stab overhead 4 netem", "stab", "tc qdisc stab is not supported yet"),
    ],
)
def test_tc_not_supported(line, token, message):
    e = tc_err(line, NotSupportedError)
    assert e.message == message and e.col == line.index(token)


@pytest.mark.parametrize(
    "kind",
    [
        "gred",
        "qfq",
    ],
)
def test_tc_unmodelled_kinds(kind):
    line = f"tc qdisc add dev eth1 parent 1: {kind} limit 1000"
    e = tc_err(line, NotSupportedError)
    assert e.message == f"qdisc {kind} is not supported yet"
    assert e.col == line.index(kind)


def test_tc_red_handout_lines_compute_tcs_kernel_parameters():
    """E11/E12 (docs/semantics/qdiscs.md §5.9): Wlog, Plog, max_P, Scell_log and Stab as tc computes them."""
    line = (
        "tc qdisc add dev s2-eth2 parent 1: handle 2: red limit 26214400 max 8738133 min 2184533 "
        "burst 2185 avpkt 1000 bandwidth 1gbit adaptative"
    )
    diag = Diagnostics()
    q = tc(line, diag=diag).qdisc.to_dict()
    assert (q["limit"], q["qth_min"], q["qth_max"]) == (26214400, 2184533, 8738133)
    assert (q["wlog"], q["plog"], q["max_p"], q["scell_log"]) == (1, 29, 85899345, 4)
    assert q["adaptive"] and q["adaptive_timer"]
    assert [q["stab"][i] for i in (0, 11, 12, 22, 23, 248, 254, 255)] == [0, 0, 1, 1, 2, 22, 22, 31]
    assert [str(w) for w in diag.warnings] == [
        'warning: "adaptative" is accepted by tc as a synonym; the documented spelling is "adaptive"'
    ]
    assert diag.warnings[0].col == line.index("adaptative")
    # [modern] (iproute2 >= 5.7): the flag travels outside the qopt byte, no timer
    q = tc(line, MODERN).qdisc.to_dict()
    assert q["adaptive"] and not q["adaptive_timer"]
    # the [sim] knob red_adaptive_timer overrides either profile
    q = tc(line, with_overrides(LAB2019, {"red_adaptive_timer": False})).qdisc.to_dict()
    assert q["adaptive"] and not q["adaptive_timer"]
    q = tc(line, with_overrides(MODERN, {"red_adaptive_timer": True})).qdisc.to_dict()
    assert q["adaptive"] and q["adaptive_timer"]

    line = (
        "tc qdisc add dev eth1 parent 1: red limit 400kb min 16kb max 32kb avgpkt 1000 burst 17 "
        "probability 0.2 bandwidth 8mbit"
    )
    diag = Diagnostics()
    q = tc(line, diag=diag).qdisc.to_dict()
    assert (q["limit"], q["qth_min"], q["qth_max"]) == (409600, 16384, 32768)
    assert (q["wlog"], q["plog"], q["max_p"], q["scell_log"]) == (1, 17, 858993459, 11)
    assert [q["stab"][i] for i in (11, 12, 253, 254, 255)] == [0, 1, 22, 23, 31]
    assert q["dscp_coeff"] is None and not q["adaptive"]
    assert "read as \"avpkt\"" in diag.warnings[0].message and diag.warnings[0].col == line.index("avgpkt")

    # the report's module: red with the report's coefficient table, with a warning
    diag = Diagnostics()
    q = tc(line.replace(" red ", " red_csc573 "), diag=diag).qdisc.to_dict()
    assert q["kind"] == "red" and q["wlog"] == 1
    assert q["dscp_coeff"] == {
        "classes": [{"key": 0x32, "num": 5, "den": 10}, {"key": 0x46, "num": 7, "den": 10}],
        "default": [9, 10],
        "match_dscp": False,
    }
    assert any("red_csc573" in w.message for w in diag.warnings)


def test_tc_red_defaults_and_mininet_line():
    diag = Diagnostics()
    q = tc("tc qdisc add dev x root red limit 400000 avpkt 1000", diag=diag).qdisc.to_dict()
    # max = limit div 4, min = max div 3, burst = (2 min + max) div (3 avpkt) = 55
    assert (q["qth_max"], q["qth_min"]) == (100000, 33333)
    assert q["max_p"] == int(0.02 * 2**32)
    assert [w.message for w in diag.warnings] == ["RED: set bandwidth to 10Mbit"]
    q = tc("tc qdisc add dev x root red limit 400000 min 30000 avpkt 1000 bandwidth 1mbit").qdisc.to_dict()
    assert (q["qth_min"], q["qth_max"]) == (30000, 90000)
    # E23: Mininet's line, probability 1 overflows max_P to 0 (kernel derives it from Plog)
    q = tc(
        "tc qdisc add dev x parent 5:1 handle 6: red limit 1000000 min 30000 max 35000 avpkt 1500 "
        "burst 20 bandwidth 10mbit probability 1"
    ).qdisc.to_dict()
    assert (q["wlog"], q["plog"], q["max_p"]) == (1, 13, 0)
    diag = Diagnostics()
    q = tc("tc qdisc add dev x root red limit 60000 min 2000 max 6000 avpkt 100 burst 200", diag=diag)
    assert q.qdisc.wlog == 10
    assert "RED: WARNING. Burst 200 seems to be too large." in [w.message for w in diag.warnings]
    # the handout's own burst formula (2·min+max)/(3·avpkt) gives Wlog 12: tc warns, and
    # the kernel refuses it (bitlen(max) + Wlog = 24 + 12 >= 32)
    e = tc_err("tc qdisc add dev x root red limit 26214400 min 2184533 max 8738133 avpkt 1000 burst 4369 "
               "bandwidth 1gbit")
    assert e.message == "RTNETLINK answers: Invalid argument"


@pytest.mark.parametrize(
    "line,token,message",
    [
        (
            "tc qdisc add dev eth1 parent 1: red limit 400kb min 16kb max 32kb avpkt 1000 burst 16",
            "red",
            "tc_red_eval_ewma() burst 16 is too small ? Try burst 17\n"
            "RED: failed to calculate EWMA constant.",
        ),
        ("tc qdisc add dev x root red limit 400kb min 16kb max 32kb", "red",
         "RED: Required parameter (limit, avpkt) is missing"),
        ("tc qdisc add dev x root red min 16kb max 32kb avpkt 1000", "red",
         "RED: Required parameter (limit, avpkt) is missing"),
        ("tc qdisc add dev x root red limit 400kb min 32kb max 16kb avpkt 1000 burst 40", "red",
         "RED: failed to calculate probability. (max is below min)"),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 probability 2%", "2%", 'Illegal "probability"'),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 probability 1.5", "1.5",
         "RED: probability 1.5 is outside 0..1"),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 probability 0", "red",
         "RED: failed to calculate probability."),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 bandwidth 40gbit", "40gbit",
         'Illegal "bandwidth"'),
        ("tc qdisc add dev x root red limit 4x avpkt 1000", "4x", 'Illegal "limit"'),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 burst 1.5", "1.5", 'Illegal "burst"'),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 lim 5", "lim 5",
         'What is "lim"?\n'
         "Usage: ... red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS]\n"
         "               [adaptive] [probability PROBABILITY] [bandwidth KBPS]\n"
         "               [ecn] [harddrop] [nodrop]"),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 nodrop", "red",
         "RTNETLINK answers: Invalid argument"),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 dscp-coeff 0x32:0.5", "0x32:0.5",
         'red: "dscp-coeff" needs a "default:COEFF" entry'),
        ("tc qdisc add dev x root red limit 400kb avpkt 1000 dscp-coeff 0x32:x,default:1", "0x32:x",
         'red: illegal "dscp-coeff" entry "0x32:x"'),
        ("tc qdisc add dev x root blue limit 0", "0", 'blue: illegal value for "limit": "0"'),
        ("tc qdisc add dev x root blue increment 2", "2", 'blue: illegal value for "increment": "2"'),
        ("tc qdisc add dev x root blue foo", "foo", 'blue: unknown parameter "foo"'),
    ],
)
def test_tc_red_and_blue_errors(line, token, message):
    e = tc_err(line)
    assert e.message == message
    assert e.col == line.index(token)


def test_tc_red_min_above_limit_is_warned():
    diag = Diagnostics()
    tc("tc qdisc add dev x root red limit 10000 min 16kb max 32kb avpkt 1000 burst 17 bandwidth 8mbit",
       diag=diag)
    assert any("above limit" in w.message for w in diag.warnings)


def test_tc_cpm_and_blue_syntax():
    q = tc(
        "tc qdisc add dev eth1 parent 1: red limit 400kb min 16kb max 32kb avpkt 1000 burst 17 "
        "probability 0.2 bandwidth 8mbit ecn dscp-coeff 12:0.25,default:1 dscp-match dscp"
    ).qdisc.to_dict()
    assert q["ecn"] and q["dscp_coeff"] == {
        "classes": [{"key": 12, "num": 25, "den": 100}], "default": [1, 1], "match_dscp": True}
    q = tc("tc qdisc add dev eth1 parent 1: cpm_red limit 400kb avpkt 1000 bandwidth 8mbit").qdisc.to_dict()
    assert q["kind"] == "red" and q["dscp_coeff"]["default"] == [9, 10]
    q = tc("tc qdisc add dev eth1 parent 1: blue").qdisc.to_dict()
    assert q == {"kind": "blue", "limit": 1000, "increment": 10737418, "decrement": 1073742,
                 "freeze_inc": 100_000_000, "freeze_dec": 100_000_000, "shared": True, "qthresh": None,
                 "ecn": False, "dscp_coeff": None}
    q = tc("tc qdisc add dev eth1 parent 1: cpm_blue limit 200 increment 0.01 decrement 0.001 "
           "freeze_inc 50ms freeze_dec 20ms qthresh 100 ecn").qdisc.to_dict()
    assert (q["limit"], q["increment"], q["decrement"]) == (200, round(0.01 * 2**32), round(0.001 * 2**32))
    assert (q["freeze_inc"], q["freeze_dec"], q["shared"], q["qthresh"], q["ecn"]) == (
        50_000_000, 20_000_000, False, 100, True)
    assert q["dscp_coeff"]["classes"][0] == {"key": 0x32, "num": 5, "den": 10}
    e = tc_err("tc qdisc add dev x root blue bytemode", NotSupportedError)
    assert e.message == "blue bytemode is not supported yet"


def test_tc_unknown_kind():
    line = "tc qdisc add dev x root tbfb rate 1mbit"
    e = tc_err(line)
    assert e.message == 'Unknown qdisc "tbfb", hence option "rate" is unparsable'
    assert e.col == line.index("tbfb")
    assert e.suggestion == "did you mean 'tbf'?"
    e = tc_err("tc qdisc add dev x root netm")
    assert e.message == "Error: Specified qdisc kind is unknown."
    assert e.suggestion == "did you mean 'netem'?"


# =====================================================================================
# tc: fifo, noqueue, pfifo_fast


def test_tc_fifos():
    assert tc_json("tc qdisc add dev x root pfifo limit 10")["qdisc"] == {"kind": "pfifo", "limit": 10}
    assert tc_json("tc qdisc add dev x root bfifo limit 3000")["qdisc"] == {"kind": "bfifo", "limit": 3000}
    assert tc_json("tc qdisc add dev x root bfifo limit 1k")["qdisc"] == {"kind": "bfifo", "limit": 1024}
    assert tc_json("tc qdisc add dev x root pfifo_head_drop")["qdisc"] == {
        "kind": "pfifo_head_drop",
        "limit": None,
    }
    assert tc_json("tc qdisc add dev x root noqueue")["qdisc"] == {"kind": "noqueue"}
    assert tc_json("tc qdisc replace dev x root pfifo_fast")["qdisc"] == {"kind": "pfifo_fast"}


@pytest.mark.parametrize(
    "line, token, message",
    [
        ("tc qdisc add dev x root pfifo lim 10", "lim", 'pfifo: unknown parameter "lim"'),
        ("tc qdisc add dev x root bfifo limit abc", "abc", 'bfifo: Illegal value for "limit": "abc"'),
        (
            "tc qdisc add dev x root noqueue limit 5",
            "limit",
            'Unknown qdisc "noqueue", hence option "limit" is unparsable',
        ),
        (
            "tc qdisc add dev x root pfifo_fast bands 3",
            "bands",
            "qdisc 'pfifo_fast' does not support option parsing",
        ),
    ],
)
def test_tc_fifo_errors(line, token, message):
    e = tc_err(line)
    assert e.message == message and e.col == line.index(token)


def test_tc_fifo_suggestion():
    assert tc_err("tc qdisc add dev x root pfifo limt 10").suggestion == "did you mean 'limit'?"


# =====================================================================================
# tc: tbf (docs/semantics/qdiscs.md §3.1)


def test_tbf_prefix_rules():
    # limit/latency/burst/peakrate/overhead/linklayer accept prefixes; rate does not
    q = tc_json("tc qdisc add dev x root tbf rate 1mbit bu 10k li 20k")["qdisc"]
    assert (q["burst"], q["limit"]) == (10240, 20480)
    q = tc_json("tc qdisc add dev x root tbf rate 1mbit b 10k lat 50ms")["qdisc"]
    assert q["limit"] == 125000 * 50000 // 1000000 + 10240
    q = tc_json(
        "tc qdisc add dev x root tbf rate 10mbit buffer 10k/8 limit 20k pe 20mbit mtu 1514/8 mpu 64 "
        "o 4 lin atm"
    )["qdisc"]
    assert q == {
        "kind": "tbf",
        "rate": 1250000,
        "burst": 10240,
        "limit": 20480,
        "peakrate": 2500000,
        "mtu": 1514,
        "mpu": 64,
        "overhead": 4,
        "atm": True,
    }
    assert tc_json("tc qdisc add dev x root tbf rate 1mbit maxburst 5k limit 9k")["qdisc"]["burst"] == 5120
    assert (
        tc_json("tc qdisc add dev x root tbf rate 1mbit burst 5k limit 9k mtu 1514")["qdisc"]["mtu"] is None
    )
    assert tc_json("tc qdisc add dev x root tbf rate 1mbit burst 5k limit 9k linklayer adsl")["qdisc"]["atm"]
    e = tc_err("tc qdisc add dev x root tbf ra 1mbit burst 10k limit 1k")
    assert e.message == 'tbf: unknown parameter "ra"' and e.suggestion == "did you mean 'rate'?"


def test_tbf_latency_to_limit():
    # Mininet TCLink use_tbf line: rate 10Mbit burst 15000 latency 12ms
    q = tc_json("tc qdisc add dev x root handle 5: tbf rate 10Mbit burst 15000 latency 12ms")["qdisc"]
    assert q["limit"] == 1250000 * 12000 // 1000000 + 15000 == 30000
    # with peakrate: the smaller of rate*lat+burst and peak*lat+mtu
    q = tc_json("tc qdisc add dev x root tbf rate 10mbit burst 20000 latency 10ms peakrate 11mbit mtu 1514")[
        "qdisc"
    ]
    assert q["limit"] == min(12500 + 20000, 13750 + 1514) == 15264


TBF_EXPECTED = "tbf rate RATE burst SIZE (limit SIZE | latency TIME)"


@pytest.mark.parametrize(
    "line, token, message",
    [
        ("tc qdisc add dev x root tbf burst 10k limit 20k", "tbf", 'tbf: the "rate" parameter is mandatory.'),
        (
            "tc qdisc add dev x root tbf rate 1mbit limit 20k",
            "tbf",
            'tbf: the "burst" parameter is mandatory.',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 10k",
            "tbf",
            'tbf: either "limit" or "latency" is required.',
        ),
        (
            "tc qdisc add dev x root tbf limit 20k",
            "tbf",
            'tbf: the "rate" parameter is mandatory.\ntbf: the "burst" parameter is mandatory.',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 1k limit 9k peakrate 2mbit",
            "tbf",
            'tbf: when "peakrate" is specified, "mtu" must also be specified.',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 1k latency 5ms limit 9k",
            "limit",
            'tbf: specifying both "latency" and "limit" is not allowed',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 1k limit 9k latency 5ms",
            "latency",
            'tbf: specifying both "limit" and "/latency" is not allowed',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit rate 2mbit burst 1k limit 9k",
            "rate 2",
            'tbf: duplicate "rate" specification',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 1k buffer 2k limit 9k",
            "buffer",
            'tbf: duplicate "buffer/burst/maxburst" specification',
        ),
        (
            "tc qdisc add dev x root tbf rate 1gbps burst 1k limit 9k foo",
            "foo",
            'tbf: unknown parameter "foo"',
        ),
        (
            "tc qdisc add dev x root tbf rate 1g burst 10k limit 9k",
            "1g",
            'tbf: illegal value for "rate": "1g"',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 10q limit 9k",
            "10q",
            'tbf: illegal value for "burst": "10q"',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 10k/3 limit 9k",
            "3",
            'tbf: illegal value for "burst": "10k/3"',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 10k limit 9k overhead 70000",
            "70000",
            'tbf: illegal value for "overhead": "70000"',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 10k limit 9k linklayer wifi",
            "wifi",
            'tbf: illegal value for "linklayer": "wifi"',
        ),
        (
            "tc qdisc add dev x root tbf rate 1mbit burst 10k limit",
            "limit",
            'Command line is not complete. Try option "help"',
        ),
    ],
)
def test_tbf_errors(line, token, message):
    e = tc_err(line)
    assert e.message == message
    assert e.col == line.index(token)


def test_tbf_error_hints():
    e = tc_err("tc qdisc add dev x root tbf rate 1g burst 10k limit 9k")
    assert "1gbit" in e.suggestion and "1gbit" in e.expected
    e = tc_err("tc qdisc add dev x root tbf burst 10k limit 20k")
    assert e.expected.startswith(TBF_EXPECTED)
    assert e.suggestion == "e.g. tbf rate 1gbit burst 500000 limit 26214400"


# =====================================================================================
# tc: netem (docs/semantics/qdiscs.md §4.1)


def test_netem_defaults_and_e8():
    q = tc_json("tc qdisc add dev x root netem")["qdisc"]
    assert q == NETEM_DEFAULTS
    assert tc_json("tc qdisc add dev x root netem loss 0.01%")["qdisc"]["loss"] == {
        "model": "random",
        "p": 429497,
    }


@pytest.mark.parametrize(
    "opts, key, value",
    [
        ("lat 10ms", "latency", 10_000_000),
        ("del 10ms", "latency", 10_000_000),
        ("d 10ms", "latency", 10_000_000),
        ("lo 1%", "loss", {"model": "random", "p": 42949673}),
        ("drop 1%", "loss", {"model": "random", "p": 42949673}),
        ("loss random 1%", "loss", {"model": "random", "p": 42949673}),
        ("l 10", "limit", 10),
        ("limit 2k", "limit", 2048),
        ("du 1%", "duplicate", 42949673),
        ("c 1%", "corrupt", {"p": 42949673, "corr": 0}),
        ("delay 1ms r 25%", "reorder", {"p": 1073741824, "corr": 0}),
        ("ra 8mbit", "rate", {"rate": 1000000, "packet_overhead": 0, "cell_size": 0, "cell_overhead": 0}),
        (
            "rate 8mbit -14",
            "rate",
            {"rate": 1000000, "packet_overhead": -14, "cell_size": 0, "cell_overhead": 0},
        ),
        ("delay 10ms 2ms di pareto", "distribution", "pareto"),
        ("delay 10ms 2ms distribution uniform", "distribution", "uniform"),
        ("loss 1% e", "ecn", True),
        (
            "s 1ms",
            "slot",
            {"min_delay": 1_000_000, "max_delay": 1_000_000, "dist": None, "packets": None, "bytes": None},
        ),
        (
            "slot distribution normal 2ms 1ms packets 5",
            "slot",
            {
                "min_delay": 0,
                "max_delay": 0,
                "dist": ["normal", 2_000_000, 1_000_000],
                "packets": 5,
                "bytes": None,
            },
        ),
    ],
)
def test_netem_keywords(opts, key, value):
    assert tc_json(f"tc qdisc add dev x root netem {opts}")["qdisc"][key] == value


def test_netem_reorder_sets_gap_1_and_positional_numbers():
    q = tc_json("tc qdisc add dev x root netem delay 10ms reorder 25% 50%")["qdisc"]
    assert q["gap"] == 1 and q["reorder"] == {"p": 1073741824, "corr": 2147483648}
    assert q["correlation"] == {"delay": 0, "loss": 0, "duplicate": 0}
    q = tc_json("tc qdisc add dev x root netem delay 100ms 10ms 25%")["qdisc"]
    assert (q["latency"], q["jitter"], q["correlation"]["delay"]) == (100_000_000, 10_000_000, 1073741824)
    q = tc_json("tc qdisc add dev x root netem delay 100ms loss 1%")["qdisc"]  # "loss" is no jitter
    assert q["jitter"] == 0 and q["correlation"] is None


def test_netem_loss_models():
    q = tc_json("tc qdisc add dev x root netem loss state 1%")["qdisc"]["loss"]
    assert q == {"model": "state", "p13": 42949673, "p31": 4252017622, "p32": 0, "p23": 4294967295, "p14": 0}
    q = tc_json("tc qdisc add dev x root netem loss state 1% 90% 5% 50% 1%")["qdisc"]["loss"]
    assert q == {
        "model": "state",
        "p13": 42949673,
        "p31": 3865470566,
        "p32": 214748365,
        "p23": 2147483648,
        "p14": 42949673,
    }
    q = tc_json("tc qdisc add dev x root netem loss gemodel 1%")["qdisc"]["loss"]
    assert q == {"model": "gemodel", "p": 42949673, "r": 4252017622, "h": 0, "k1": 0}
    q = tc_json("tc qdisc add dev x root netem loss gemodel 1% 10% 70% 0.1%")["qdisc"]["loss"]
    assert q == {
        "model": "gemodel",
        "p": 42949673,
        "r": 429496730,
        "h": 4294967295 - 3006477106,
        "k1": 4294967,
    }


def test_netem_time_profiles():
    line = "tc qdisc add dev x root netem delay 1.1ms 100"
    q = tc_json(line, LAB2019)["qdisc"]
    assert (q["latency"], q["jitter"]) == (1_099_968, 99_968)
    q = tc_json(line, MODERN)["qdisc"]
    assert (q["latency"], q["jitter"]) == (1_100_000, 100)


def test_netem_duplicate_correlation_alone_is_dropped_with_warning():
    diag = Diagnostics()
    r = tc("tc qdisc add dev x root netem duplicate 1% 25%", diag=diag)
    assert r.qdisc.correlation is None
    assert len(diag.warnings) == 1 and diag.warnings[0].col == col(
        "tc qdisc add dev x root netem duplicate 1% 25%", "25%"
    )
    q = tc_json("tc qdisc add dev x root netem loss 1% 10% duplicate 1% 25%")["qdisc"]
    assert q["correlation"] == {"delay": 0, "loss": 429496730, "duplicate": 1073741824}


@pytest.mark.parametrize(
    "opts, token, message",
    [
        ("reorder 25%", "netem", "reordering not possible without specifying some delay"),
        ("delay 1ms gap 5", "gap", "gap specified without reorder probability"),
        ("ecn", "ecn", "ecn requested without loss model"),
        (
            "delay 10ms distribution normal",
            "distribution",
            "distribution specified but no latency and jitter values",
        ),
        ("loss 1% loss 2%", "loss 2", 'Illegal "duplicate loss argument"'),
        ("loss .5%", ".5%", "Unknown loss parameter: .5%"),
        ("loss sometimes", "sometimes", "Unknown loss parameter: sometimes"),
        ("jitter 5ms", "jitter", 'What is "jitter"?'),
        ("delay 20", "delay", None),
        ("delay 20xs", "20xs", 'Illegal "latency"'),
        ("loss 200%", "200%", 'Illegal "loss percent"'),
        ("limit x", "x", 'Illegal "limit"'),
        ("gap -1", "-1", 'Illegal "gap"'),
        (
            "delay 10ms 2ms distribution weird",
            "weird",
            "No distribution data for weird (/usr/lib/tc//weird.dist: No such file or directory)",
        ),
        ("slot 2ms 1ms", "1ms", 'Illegal "slot max_delay"'),
        ("slot distribution normal 1ms 0", "0", "Non-positive jitter"),
        ("slot fast", "fast", "Unknown slot parameter: fast"),
        ("delay", "delay", 'Command line is not complete. Try option "help"'),
    ],
)
def test_netem_errors(opts, token, message):
    line = f"tc qdisc add dev x root netem {opts}"
    if message is None:  # valid: bare number is µs in lab2019
        assert tc_json(line)["qdisc"]["latency"] == 19968
        return
    e = tc_err(line)
    assert e.message == message
    assert e.col == line.index(token, line.index("netem") if token != "netem" else 0)


def test_netem_error_hints():
    e = tc_err("tc qdisc add dev x root netem loss .5%")
    assert e.suggestion == "write 0.5% (tc needs a leading digit)"
    e = tc_err("tc qdisc add dev x root netem delya 20ms")
    assert e.suggestion == "did you mean 'delay'?"
    e = tc_err("tc qdisc add dev x root netem delay 10ms 2ms distribution norml")
    assert e.suggestion == "did you mean 'normal'?"


def test_netem_not_supported():
    e = tc_err("tc qdisc add dev x root netem rate 50%", NotSupportedError)
    assert e.col == col("tc qdisc add dev x root netem rate 50%", "50%")
    e = tc_err("tc qdisc add dev x root netem seed 5", NotSupportedError)
    assert e.message == "netem seed is not supported yet"


def test_delete_may_carry_a_kind():
    q = tc_json("tc qdisc del dev x root netem")
    assert q["verb"] == "delete" and q["qdisc"]["kind"] == "netem"


# =====================================================================================
# sysctl (docs/semantics/formats.md §4)


def test_sysctl_handout_writes_and_echo():
    for line, echo in [
        ("sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'", "net.ipv4.tcp_rmem = 10240 87380 52428800\n"),
        ("sysctl -w net.ipv4.tcp_congestion_control=bbr", "net.ipv4.tcp_congestion_control = bbr\n"),
        (
            "sysctl -w net.ipv4.tcp_wmem='10240  87380 150000000'",
            "net.ipv4.tcp_wmem = 10240  87380 150000000\n",
        ),
    ]:
        cmd = parse_sysctl(W(line), Diagnostics())
        assert format_sysctl_echo(cmd, {}) == echo
    cmd = parse_sysctl(W("sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'"), Diagnostics())
    assert cmd.items[0].value == (10240, 87380, 52428800) and cmd.items[0].col == 10
    assert cmd.writes() == [("net.ipv4.tcp_rmem", (10240, 87380, 52428800))]


def test_sysctl_reads_and_flags():
    store = {"net.ipv4.tcp_rmem": (4096, 87380, 6291456), "net.ipv4.tcp_congestion_control": "cubic"}
    cmd = parse_sysctl(W("sysctl net.ipv4.tcp_rmem"), Diagnostics())
    assert format_sysctl_echo(cmd, store) == "net.ipv4.tcp_rmem = 4096\t87380\t6291456\n"
    cmd = parse_sysctl(W("sysctl -n net.ipv4.tcp_congestion_control"), Diagnostics())
    assert format_sysctl_echo(cmd, store) == "cubic\n"
    cmd = parse_sysctl(W("sysctl net/ipv4/tcp_congestion_control -N"), Diagnostics())
    assert format_sysctl_echo(cmd, store) == "net.ipv4.tcp_congestion_control\n"
    cmd = parse_sysctl(W("sysctl -q -w net.ipv4.tcp_congestion_control=reno"), Diagnostics())
    assert format_sysctl_echo(cmd, store) == ""
    # procps: an argument with "=" is a write even without -w; later reads see it
    cmd = parse_sysctl(
        W("sysctl net.ipv4.tcp_congestion_control=reno net.ipv4.tcp_congestion_control"), Diagnostics()
    )
    assert [it.is_write for it in cmd.items] == [True, False]
    assert format_sysctl_echo(cmd, store) == (
        "net.ipv4.tcp_congestion_control = reno\nnet.ipv4.tcp_congestion_control = reno\n"
    )
    assert store["net.ipv4.tcp_congestion_control"] == "cubic"  # not mutated


def test_sysctl_execute_applies_writes_and_defaults():
    store: dict = {}
    out, err, status = execute_sysctl(parse_sysctl(W("sysctl -w net.ipv4.tcp_ecn=1"), Diagnostics()), store)
    assert (out, err, status) == ("net.ipv4.tcp_ecn = 1\n", "", 0) and store == {"net.ipv4.tcp_ecn": 1}
    out, _, _ = execute_sysctl(
        parse_sysctl(W("sysctl net.ipv4.tcp_rmem net.ipv4.tcp_ecn"), Diagnostics()), store
    )
    assert out == "net.ipv4.tcp_rmem = 4096\t87380\t6291456\nnet.ipv4.tcp_ecn = 1\n"
    assert sysctl_defaults(modern=True)["net.ipv4.tcp_rmem"] == (4096, 131072, 6291456)


@pytest.mark.parametrize(
    "value, parsed",
    [
        ("net.ipv4.tcp_ecn=2", 2),
        ("net.ipv4.tcp_sack=0", 0),
        ("net.ipv4.tcp_adv_win_scale=-2", -2),
        ("net.core.rmem_max=0x1000", 4096),
        ("net.core.default_qdisc=pfifo", "pfifo"),
        ("net.ipv4.tcp_congestion_control=htcp", "htcp"),
        ("net.ipv4.tcp_rmem=' 1 2 3 '", (1, 2, 3)),
    ],
)
def test_sysctl_values(value, parsed):
    assert parse_sysctl(W(f"sysctl -w {value}"), Diagnostics()).items[0].value == parsed


@pytest.mark.parametrize("kind", MODELLED_QDISCS)
def test_sysctl_default_qdisc_takes_every_kind_tc_takes(kind):
    assert parse_sysctl(W(f"sysctl -w net.core.default_qdisc={kind}"), Diagnostics()).items[0].value == kind


def test_sysctl_lab7_prose_typo():
    line = "sysctl -w net.ipv4.tcp wmem='10240 87380 150000000'"
    with pytest.raises(CommandError) as ei:
        parse_sysctl(W(line), Diagnostics())
    e = ei.value
    assert e.message == 'sysctl: "net.ipv4.tcp" must be of the form name=value'
    assert e.col == line.index("net.ipv4.tcp")
    assert e.suggestion.startswith("did you mean net.ipv4.tcp_wmem='10240 87380 150000000'")


@pytest.mark.parametrize(
    "line, token, message, cls",
    [
        (
            "sysctl -w net.ipv4.tcp_rmem='10,240 87,380 150,000,000'",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_rmem": Invalid argument',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_rmem='1 2 3 4'",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_rmem": Invalid argument',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_rmem='0 2 3'",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_rmem": Invalid argument',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_rmem=4096",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_rmem": bufferlab needs all three values',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_wmem='87380 4096 6291456'",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_wmem": values must satisfy MIN <= DEFAULT <= MAX',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_ecn=6",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_ecn": Invalid argument',
            CommandError,
        ),
        (
            # Linux 6.18+: the minimum option rules are not modelled
            "sysctl -w net.ipv4.tcp_ecn_option=1",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_ecn_option": tcp_ecn_option=1 '
            "(the minimum AccECN option rules) is not supported yet",
            NotSupportedError,
        ),
        (
            "sysctl -w net.ipv4.tcp_sack=2",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_sack": Invalid argument',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_adv_win_scale=40",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_adv_win_scale": Invalid argument',
            CommandError,
        ),
        (
            "sysctl -w net.core.wmem_max=lots",
            "net.",
            'sysctl: setting key "net.core.wmem_max": Invalid argument',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_congestion_control=cubc",
            "net.",
            'sysctl: setting key "net.ipv4.tcp_congestion_control": No such file or directory',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_congestion_control=bbr2",
            "net.",
            "congestion control bbr2 is not supported yet",
            NotSupportedError,
        ),
        (
            "sysctl -w net.core.default_qdisc=hhf",
            "net.",
            "default qdisc hhf is not supported yet",
            NotSupportedError,
        ),
        (
            "sysctl -w net.core.default_qdisc=nope",
            "net.",
            'sysctl: setting key "net.core.default_qdisc": No such file or directory',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_rmem",
            "net.",
            'sysctl: "net.ipv4.tcp_rmem" must be of the form name=value',
            CommandError,
        ),
        (
            "sysctl -w net.ipv4.tcp_ecn=",
            "net.",
            'sysctl: malformed setting "net.ipv4.tcp_ecn="',
            CommandError,
        ),
        ("sysctl -w =1", "=1", 'sysctl: malformed setting "=1"', CommandError),
        (
            "sysctl net.ipv4.tcp_fin_timeout",
            "net.",
            'key "net.ipv4.tcp_fin_timeout" is not modelled',
            CommandError,
        ),
        ("sysctl -w net.ipv4.tcp_rmen=1", "net.", 'key "net.ipv4.tcp_rmen" is not modelled', CommandError),
        ("sysctl", "sysctl", "sysctl: no variables specified", CommandError),
        ("sysctl -N -q net.ipv4.tcp_ecn", "sysctl", "sysctl: options -N and -q cannot coexist", CommandError),
        ("sysctl -a", "-a", "sysctl -a is not supported", NotSupportedError),
        ("sysctl -p /etc/sysctl.conf", "-p", "sysctl -p is not supported", NotSupportedError),
        ("sysctl -Z net.ipv4.tcp_ecn", "-Z", "sysctl: invalid option -- 'Z'", CommandError),
    ],
)
def test_sysctl_errors(line, token, message, cls):
    with pytest.raises(cls) as ei:
        parse_sysctl(W(line), Diagnostics())
    assert ei.value.message == message
    assert ei.value.col == line.index(token)


def test_sysctl_error_hints():
    with pytest.raises(CommandError) as ei:
        parse_sysctl(W("sysctl -w net.ipv4.tcp_rmem='10,240 87,380 150,000,000'"), Diagnostics())
    assert ei.value.suggestion == "write the numbers without thousands separators: 10240 87380 150000000"
    with pytest.raises(CommandError) as ei:
        parse_sysctl(W("sysctl -w net.ipv4.tcp_rmen=1"), Diagnostics())
    assert ei.value.suggestion == "did you mean net.ipv4.tcp_rmem?"
    assert "net.core.default_qdisc" in ei.value.expected
    with pytest.raises(CommandError) as ei:
        parse_sysctl(W("sysctl -w net.ipv4.tcp_congestion_control=cubc"), Diagnostics())
    assert (
        ei.value.suggestion == "did you mean cubic?"
        and ei.value.expected
        == "one of reno, cubic, htcp, bbr, dctcp, vegas, westwood, bic, highspeed, scalable, illinois, yeah, "
        "hybla, veno, nv, lp, cdg, prague, bbr3"
    )
    with pytest.raises(NotSupportedError) as ei:
        parse_sysctl(W("sysctl -w net.ipv4.tcp_congestion_control=bbr2"), Diagnostics())
    assert (
        ei.value.expected
        == "one of reno, cubic, htcp, bbr, dctcp, vegas, westwood, bic, highspeed, scalable, illinois, yeah, "
        "hybla, veno, nv, lp, cdg, prague, bbr3"
    )


# =====================================================================================
# iperf3


def ip3(line: str, profile: Profile = LAB2019, diag: Diagnostics | None = None, resolve=None):
    return parse_iperf3(W(line), diag or Diagnostics(), profile, resolve)


def ip3_err(line: str, cls=CommandError, profile: Profile = LAB2019, resolve=None) -> CommandError:
    with pytest.raises(cls) as ei:
        ip3(line, profile, resolve=resolve)
    return ei.value


def test_iperf3_cpm_udp_client():
    line = "iperf3 -c 192.168.25.24 -p 5010 -u -b 0.9m -S 0x32 -t 75 -T Class2"
    c = ip3(line)
    assert isinstance(c, Iperf3Client)
    assert (c.host, c.host_col, c.protocol, c.port, c.rate_bps, c.tos, c.duration_s, c.title) == (
        "192.168.25.24",
        10,
        "udp",
        5010,
        900_000,
        0x32,
        75,
        "Class2",
    )
    assert (c.blksize, c.blksize_given, c.bytes, c.omit_s, c.interval_s, c.json) == (
        1448,
        False,
        None,
        0,
        1.0,
        False,
    )
    ensure_supported(c)
    assert ip3("iperf3 -c 10.0.0.2 -u -S 0x46").tos == 70
    assert ip3("iperf3 -c 10.0.0.2 -u -S 0x00").tos == 0
    assert ip3("iperf3 -c 10.0.0.2 -u -S 050").tos == 40
    assert ip3("iperf3 -c 10.0.0.2 -u -S 50").tos == 50


def test_iperf3_servers():
    s = ip3("iperf3 -s -p 5010")
    assert isinstance(s, Iperf3Server) and s.port == 5010 and not s.one_off
    s = ip3("iperf3 -s")
    assert s.port == 5201 and s.interval_s == 1.0
    s = ip3("iperf3 --server --one-off --daemon -J --logfile srv.log -i 0.5")
    assert (s.one_off, s.daemon, s.json, s.logfile, s.interval_s) == (True, True, True, "srv.log", 0.5)
    s = ip3("iperf3 -s1D")
    assert s.one_off and s.daemon


def test_iperf3_tcp_client_parses_and_reverse_udp_is_not_supported_yet():
    line = "iperf3 -c 10.0.0.3 -t 90 -J"
    c = ip3(line)
    assert (c.protocol, c.duration_s, c.json, c.blksize, c.rate_bps) == ("tcp", 90, True, 131072, 0)
    ensure_supported(c)
    c = ip3("iperf3 -c 10.0.0.2 -P 4 -R -w 1M -C bbr -N")
    assert (c.parallel, c.reverse, c.window, c.congestion, c.no_delay) == (4, True, 1 << 20, "bbr", True)
    ensure_supported(c)
    with pytest.raises(NotSupportedError) as ei:
        ensure_supported(ip3("iperf3 -c 10.0.0.2 -u -R"))
    assert ei.value.message == "iperf3 -u -R (reverse UDP) is not supported yet"
    ensure_supported(ip3("iperf3 -c 10.0.0.2 -b 10M"))  # the throttle, between blocks
    for line in ("iperf3 -c 10.0.0.2 -b 10M -R", "iperf3 -c 10.0.0.2 -b 10M/4"):
        with pytest.raises(NotSupportedError) as ei:
            ensure_supported(ip3(line))
        assert ei.value.message == ("iperf3 -b over TCP with -R (a throttled server) or a /BURST is not "
                                    "supported yet"), line


def test_iperf3_dash_zero_typo():
    line = "iperf3 -c 10.0.0.2 -t 20 -0 10"
    diag = Diagnostics()
    c = ip3(line, diag=diag)
    assert c.omit_s == 10 and c.duration_s == 20
    assert len(diag.warnings) == 1
    w = diag.warnings[0]
    assert w.col == line.index("-0")
    assert "-O" in w.message and "-0" in w.message


def test_iperf3_long_options():
    c = ip3(
        "iperf3 --client 10.0.0.2 --udp --bitrate 2M --length 1000 --time 5 --port 5001 --tos 0x10 "
        "--title t --json --interval 2 --omit 1 --logfile c.log"
    )
    assert (
        c.host,
        c.protocol,
        c.rate_bps,
        c.blksize,
        c.blksize_given,
        c.duration_s,
        c.port,
        c.tos,
        c.title,
        c.json,
        c.interval_s,
        c.omit_s,
        c.logfile,
    ) == ("10.0.0.2", "udp", 2_000_000, 1000, True, 5, 5001, 16, "t", True, 2.0, 1, "c.log")
    assert ip3("iperf3 -c 10.0.0.2 -u --bandwidth=3M").rate_bps == 3_000_000
    assert ip3("iperf3 -c 10.0.0.2 -u --band 3M").rate_bps == 3_000_000  # unique prefix
    assert ip3("iperf3 -c 10.0.0.2 -u --bytes 10M").bytes == 10 * 1024 * 1024
    c = ip3("iperf3 -c 10.0.0.2 --parallel 2 --reverse --window 64K --congestion reno")
    assert (c.parallel, c.reverse, c.window, c.congestion) == (2, True, 65536, "reno")
    assert ip3("iperf3 -c10.0.0.2 -ut5").duration_s == 5  # clustered short options


def test_iperf3_defaults_by_version():
    assert ip3("iperf3 -c 10.0.0.2 -u").rate_bps == 1048576
    assert ip3("iperf3 -c 10.0.0.2 -u").blksize == 1448
    old = Profile(iperf3_version=(3, 0))
    assert ip3("iperf3 -c 10.0.0.2 -u", old).blksize == 8192
    assert ip3("iperf3 -c 10.0.0.2 -u -b 1M", old).rate_bps == 1048576  # 3.0.x: 1024-based
    assert ip3("iperf3 -c 10.0.0.2 -u -b 1M", Profile(iperf3_version=(3, 1))).rate_bps == 1_000_000
    assert ip3("iperf3 -c 10.0.0.2 -u -b 1M", MODERN).rate_bps == 1_000_000
    c = ip3("iperf3 -c 10.0.0.2 -u -n 1M")
    assert c.duration_s == 0 and c.bytes == 1048576


@pytest.mark.parametrize(
    "line, token, message",
    [
        ("iperf3 -s -c 10.0.0.2", "-c", "parameter error - cannot be both server and client"),
        ("iperf3 -c 10.0.0.2 -s", "-s", "parameter error - cannot be both server and client"),
        ("iperf3 -u -t 5", "iperf3", "parameter error - must either be a client (-c) or server (-s)"),
        (
            "iperf3 -c 10.0.0.2 -t 5 -n 1M",
            "-n",
            "parameter error - only one test end condition (-t, -n, -k) may be specified",
        ),
        ("iperf3 -s -u", "-u", "parameter error - some option you are trying to set is client only"),
        ("iperf3 -s -t 10", "-t", "parameter error - some option you are trying to set is client only"),
        ("iperf3 -c 10.0.0.2 -1", "-1", "parameter error - some option you are trying to set is server only"),
        (
            "iperf3 -c 10.0.0.2 -S 256",
            "256",
            "parameter error - bad TOS value (must be between 0 and 255 inclusive)",
        ),
        (
            "iperf3 -c 10.0.0.2 -S dscp",
            "dscp",
            "parameter error - bad TOS value (must be between 0 and 255 inclusive)",
        ),
        (
            "iperf3 -c 10.0.0.2 -t 90000",
            "90000",
            "parameter error - test duration too long (maximum = 86400 seconds)",
        ),
        ("iperf3 -c 10.0.0.2 -O 61", "61", "parameter error - bogus value for --omit"),
        (
            "iperf3 -c 10.0.0.2 -i 0.05",
            "0.05",
            "parameter error - invalid report interval (min = 0.1, max = 60 seconds)",
        ),
        (
            "iperf3 -c 10.0.0.2 -p 70000",
            "70000",
            "parameter error - port number must be between 1 and 65535 inclusive",
        ),
        (
            "iperf3 -c 10.0.0.2 -P 200",
            "200",
            "parameter error - number of parallel streams too large (maximum = 128)",
        ),
        (
            "iperf3 -c 10.0.0.2 -w 1G",
            "1G",
            "parameter error - socket buffer size too large (maximum = 536870912 bytes)",
        ),
        (
            "iperf3 -c 10.0.0.2 -u -l 8",
            "8",
            "parameter error - block size invalid (minimum = 16 bytes, maximum = 65507 bytes)",
        ),
        (
            "iperf3 -c 10.0.0.2 -u -l 64K",
            "64K",
            "parameter error - block size invalid (minimum = 16 bytes, maximum = 65507 bytes)",
        ),
        (
            "iperf3 -c 10.0.0.2 -l 2M",
            "2M",
            "parameter error - block size too large (maximum = 1048576 bytes)",
        ),
        ("iperf3 -c 10.0.0.2 -u -b 1M/0", "0", "parameter error - invalid burst count (maximum = 1000)"),
        (
            "iperf3 -c 10.0.0.2 -f x",
            "x",
            "parameter error - bad format specifier (valid formats are in the set [kmgtKMGT])",
        ),
        ("iperf3 -c 10.0.0.2 -t 1.5", "1.5", "iperf3: invalid time '1.5' for -t"),
        (
            "iperf3 -c 10.0.0.2 -u -b 10Mbit",
            "10Mbit",
            'iperf3: invalid rate "10Mbit": unknown unit "Mbit" for -b',
        ),
        ("iperf3 -c 10.0.0.2 -x", "-x", "iperf3: invalid option -- 'x'"),
        ("iperf3 -c 10.0.0.2 --frobnicate", "--", "iperf3: unrecognized option '--frobnicate'"),
        (
            "iperf3 -c 10.0.0.2 --b 1M",
            "--b",
            "iperf3: option '--b' is ambiguous; possibilities: '--bitrate' "
            "'--bandwidth' '--bytes' '--blockcount' '--bidir' '--bind'",
        ),
        ("iperf3 -c 10.0.0.2 --udp=yes", "--udp", "iperf3: option '--udp' doesn't allow an argument"),
        ("iperf3 -c 10.0.0.2 -t", "-t", "iperf3: option requires an argument -- 't'"),
        ("iperf3 -c 10.0.0.2 --time", "--time", "iperf3: option '--time' requires an argument"),
        ("iperf3 -c", "-c", "iperf3: option requires an argument -- 'c'"),
        ("iperf3 10.0.0.2 -c 10.0.0.3", "10.0.0.2", "iperf3: unexpected argument '10.0.0.2'"),
        (
            "iperf3 -c h3 -u",
            "h3",
            "iperf3: error - unable to connect to server: h3: Name or service not known",
        ),
    ],
)
def test_iperf3_errors(line, token, message):
    e = ip3_err(line)
    assert e.message == message
    assert e.col == line.rindex(token)


def test_iperf3_error_positions_precise():
    line = "iperf3 -c 10.0.0.2 -uJx"
    e = ip3_err(line)
    assert e.message == "iperf3: invalid option -- 'x'" and e.col == line.index("x")
    assert "-b RATE" in e.expected  # lists the supported options
    e = ip3_err("iperf3 -c 10.0.0.2 --frobnicate")
    assert "-u" in e.expected


@pytest.mark.parametrize(
    "line, token, message",
    [
        ("iperf3 -c 10.0.0.2 -B 10.0.0.1", "-B", "iperf3 -B (bind) is not supported"),
        ("iperf3 -c 10.0.0.2 --bidir", "--bidir", "iperf3 --bidir is not supported"),
        ("iperf3 -c 10.0.0.2 -6", "-6", "iperf3 -6 (IPv6) is not supported"),
        ("iperf3 -v", "-v", "iperf3 -v (version) is not supported"),
    ],
)
def test_iperf3_not_supported(line, token, message):
    e = ip3_err(line, NotSupportedError)
    assert e.message == message
    assert e.col == line.index(token)


def test_iperf3_ensure_supported_udp_limits():
    for line, msg in [
        ("iperf3 -c 10.0.0.2 -u -R", "iperf3 -u -R (reverse UDP) is not supported yet"),
        ("iperf3 -c 10.0.0.2 -u -P 2", "iperf3 -u -P (parallel UDP streams) is not supported yet"),
        ("iperf3 -c 10.0.0.2 -u -k 100", "iperf3 -k (block count) is not supported yet"),
    ]:
        with pytest.raises(NotSupportedError) as ei:
            ensure_supported(ip3(line))
        assert ei.value.message == msg
    ensure_supported(ip3("iperf3 -s -D"))


def test_iperf3_host_name_hint():
    e = ip3_err("iperf3 -c h3 -u", resolve={"h3": "10.0.0.3"}.get)
    assert e.suggestion == "iperf3 needs an address inside a terminal; h3 is 10.0.0.3"
    assert e.expected == "an IPv4 address such as 10.0.0.3"


def test_iperf3_hints():
    e = ip3_err("iperf3 -c 10.0.0.2 -t 1.5")
    assert e.suggestion == "iperf3 -t takes whole numbers; iperf3 would read '1.5' as 1"
    e = ip3_err("iperf3 -c 10.0.0.2 -u -b 10Mbit")
    assert e.suggestion.startswith("write 10M")
    diag = Diagnostics()
    assert ip3("iperf3 -c 10.0.0.2 -u -S 08", diag=diag).tos == 0  # strtol stops at the 8, like iperf3
    assert "ignores '8'" in diag.warnings[0].message


# =====================================================================================
# ping (docs/semantics/formats.md §2)


def ping(line: str, resolve=None) -> PingCommand:
    return parse_ping(W(line), Diagnostics(), resolve)


def ping_err(line: str, cls=CommandError, resolve=None) -> CommandError:
    with pytest.raises(cls) as ei:
        ping(line, resolve)
    return ei.value


def test_ping_handout_lines():
    p = ping("ping 10.0.0.3")
    assert (
        p.target,
        p.target_col,
        p.count,
        p.interval_s,
        p.size,
        p.deadline_s,
        p.timeout_s,
        p.quiet,
        p.tos,
    ) == ("10.0.0.3", 5, None, 1.0, 56, None, None, False, 0)
    p = ping("ping 10.0.0.3 -c 90")
    assert p.count == 90
    p = ping("ping -c 4 10.0.0.3")
    assert p.count == 4 and p.target == "10.0.0.3"


def test_ping_options():
    p = ping("ping -q -i 0.2 -s 1000 -w 10 -W 2 -Q 0x10 -c 5 10.0.0.3")
    assert (p.quiet, p.interval_s, p.size, p.deadline_s, p.timeout_s, p.tos, p.count) == (
        True,
        0.2,
        1000,
        10.0,
        2.0,
        16,
        5,
    )
    assert p.interval_ns == 200_000_000
    assert ping("ping 10.0.0.3 -Q 184").tos == 184
    assert ping("ping -c5 -i0.5 10.0.0.1").count == 5


@pytest.mark.parametrize(
    "line, token, message",
    [
        ("ping -c 0 10.0.0.3", "0", "ping: bad number of packets to transmit."),
        ("ping -c x 10.0.0.3", "x", "ping: bad number of packets to transmit."),
        ("ping -i -1 10.0.0.3", "-1", "ping: bad timing interval"),
        ("ping -i fast 10.0.0.3", "fast", "ping: bad timing interval"),
        ("ping -s -5 10.0.0.3", "-5", "ping: illegal negative packet size -5."),
        ("ping -s 70000 10.0.0.3", "70000", "ping: packet size 70000 is too large. Maximum is 65507"),
        ("ping -w -1 10.0.0.3", "-1", "ping: bad wait time."),
        ("ping -W x 10.0.0.3", "x", "ping: bad linger time."),
        ("ping -Q 0xZZ 10.0.0.3", "0xZZ", 'ping: "0xZZ" bad value for TOS'),
        ("ping -Q 300 10.0.0.3", "300", "ping: the decimal value of TOS bits must be in range 0-255"),
        ("ping -c 3", "ping", "ping: usage error: Destination address required"),
        ("ping -k 10.0.0.3", "-k", "ping: invalid option -- 'k'"),
        ("ping -c", "-c", "ping: option requires an argument -- 'c'"),
        ("ping h3", "h3", "ping: h3: Name or service not known"),
        ("ping 10.0.0.300", "10.0.0.300", "ping: 10.0.0.300: Name or service not known"),
    ],
)
def test_ping_errors(line, token, message):
    e = ping_err(line)
    assert e.message == message
    assert e.col == line.index(token, 4 if token != "ping" else 0)


def test_ping_not_supported_and_hints():
    e = ping_err("ping -f 10.0.0.3", NotSupportedError)
    assert e.message == "ping -f is not supported" and e.col == 5
    e = ping_err("ping -I h1-eth0 10.0.0.3", NotSupportedError)
    assert e.message == "ping -I is not supported"
    e = ping_err("ping 10.0.0.1 10.0.0.3", NotSupportedError)
    assert e.col == 5
    e = ping_err("ping h3 -c 4", resolve={"h3": "10.0.0.3"}.get)
    assert e.suggestion == "ping needs an address inside a terminal; h3 is 10.0.0.3"
    assert e.col == 5
    assert ping_err("ping h9", resolve={"h3": "10.0.0.3"}.get).suggestion is None


# =====================================================================================
# generators (docs/internals.md "Commands")


def g(line: str, resolve=None):
    return gen.parse_generator(W(line), Diagnostics(), resolve)


def g_err(line: str, cls=CommandError) -> CommandError:
    with pytest.raises(cls) as ei:
        g(line)
    return ei.value


def test_generators_parse():
    c = g("cbr -c 10.0.0.7 -u -r 1M")
    assert (
        c.pattern,
        c.dest,
        c.dest_col,
        c.rate_bps,
        c.port,
        c.size,
        c.duration_ns,
        c.bytes,
        c.tos,
        c.protocol,
    ) == ("cbr", "10.0.0.7", 7, 1_000_000, 5001, 1448, None, None, 0, "udp")
    assert gen.is_endless(c)
    c = g("poisson -c 10.0.0.7 -u -r 900k -l 1000 -t 15 -n 1M -p 6000 -S 0x32")
    assert (c.pattern, c.rate_bps, c.size, c.duration_ns, c.bytes, c.port, c.tos) == (
        "poisson",
        900_000,
        1000,
        15 * 10**9,
        1 << 20,
        6000,
        50,
    )
    assert not gen.is_endless(c)
    c = g("onoff -c 10.0.0.7 -u -r 10mbit --on 0.5 --off 500ms -t 15")
    assert (c.rate_bps, c.on_ns, c.off_ns) == (10_000_000, 5 * 10**8, 5 * 10**8)
    c = g("onoff -c 10.0.0.7 -u -r 1M")
    assert (c.on_ns, c.off_ns) == (10**9, 10**9)  # ns-3 OnOffApplication defaults
    assert gen.engine_spec(c) == {
        "kind": "udp_source",
        "pattern": "onoff",
        "dst": "10.0.0.7",
        "port": 5001,
        "rate_bps": 1_000_000,
        "size": 1448,
        "duration_ns": None,
        "bytes": None,
        "on_ns": 10**9,
        "off_ns": 10**9,
        "tos": 0,
        "size_dist": "fixed",
    }
    s = g("sink -p 5002 -u")
    assert (s.port, s.proto) == (5002, "udp") and gen.engine_spec(s) == {
        "kind": "sink",
        "port": 5002,
        "proto": "udp",
    }
    assert gen.is_endless(s)
    b = g("bulk -c 10.0.0.8 -n 1000000 -C reno -t 15")
    assert (b.dest, b.bytes, b.congestion, b.duration_ns, b.port) == (
        "10.0.0.8",
        1_000_000,
        "reno",
        15 * 10**9,
        5001,
    )


@pytest.mark.parametrize(
    "text, bps",
    [
        ("10M", 10_000_000),
        ("900k", 900_000),
        ("0.9m", 900_000),
        ("1G", 10**9),
        ("2500", 2500),
        ("10mbit", 10_000_000),
        ("500kbit", 500_000),
        ("1gbit", 10**9),
        ("2mibit", 2 * 1024 * 1024),
        ("64bit", 64),
    ],
)
def test_generator_rates(text, bps):
    assert gen.parse_generator_rate(text) == bps


def test_generator_support_checks():
    cmd = g("cbr -c 10.0.0.7 -r 1M")
    msg = "cbr sends UDP only; add -u (use bulk for a TCP transfer)"
    with pytest.raises(NotSupportedError) as ei:
        gen.ensure_supported(cmd)
    assert ei.value.message == msg and ei.value.col == 0
    with pytest.raises(NotSupportedError):
        gen.engine_spec(cmd)
    # TCP: bulk and a sink without -u (their socket settings are added by the runner)
    assert gen.engine_spec(g("bulk -c 10.0.0.8 -n 1M")) == {
        "kind": "bulk", "dst": "10.0.0.8", "port": 5001, "bytes": 1048576, "duration_ns": None}
    assert gen.engine_spec(g("sink -p 5001")) == {"kind": "sink", "port": 5001, "proto": "tcp"}


@pytest.mark.parametrize(
    "line, token, message",
    [
        ("cbr -u -r 1M", "cbr", "cbr: -c DEST is required"),
        ("cbr -c 10.0.0.7 -u", "cbr", "cbr: -r RATE is required"),
        (
            "cbr -c 10.0.0.7 -u -r 10Mbps",
            "10Mbps",
            'cbr: invalid rate "10Mbps": byte units are not accepted here',
        ),
        ("cbr -c 10.0.0.7 -u -r 0", "0", "cbr: the rate must be above 0"),
        ("cbr -c 10.0.0.7 -u -r fast", "fast", 'cbr: invalid rate "fast"'),
        ("cbr -c 10.0.0.7 -u -r 1M -l 70000", "70000", "cbr: invalid datagram size 70000"),
        ("cbr -c 10.0.0.7 -u -r 1M -t 5min", "5min", 'cbr: invalid duration "5min"'),
        ("cbr -c 10.0.0.7 -u -r 1M -p 0", "0", "cbr: invalid port '0'"),
        ("cbr -c 10.0.0.7 -u -r 1M -S 300", "300", "cbr: bad TOS value '300'"),
        ("cbr -c n7 -u -r 1M", "n7", "cbr: n7: Name or service not known"),
        ("cbr -c 10.0.0.7 -u -r 1M extra", "extra", "cbr: unexpected argument 'extra'"),
        ("onoff -c 10.0.0.7 -u -r 1M --on 0", "0", "onoff: --on must be longer than 0"),
        ("cbr -c 10.0.0.7 -u -r 1M --on 1", "--on", "cbr: unrecognized option '--on'"),
        ("sink -x", "-x", "sink: invalid option -- 'x'"),
    ],
)
def test_generator_errors(line, token, message):
    e = g_err(line)
    assert e.message == message
    assert e.col == line.rindex(token)


def test_generator_hints():
    e = g_err("cbr -c 10.0.0.7 -u -r 10Mbps")
    assert e.suggestion == "write bits/s, e.g. 10Mbit (tc reads 'Mbps' as bytes per second)"
    e = g_err("cbr -c 10.0.0.7 -u")
    assert e.suggestion == "e.g. cbr -c 10.0.0.7 -u -r 1M"
    assert e.expected == (
        "cbr -c DEST -u -r RATE [-l SIZE] [--size-dist fixed|exp] [-t T] [-n BYTES] [-p PORT] [-S TOS] "
        "[--jitter T]"
    )


def test_generator_report_text():
    c = g("cbr -c 10.0.0.7 -u -r 1M -t 15")
    assert gen.report_text(c, {"packets": 1036, "bytes": 1500128, "start_ns": 0, "end_ns": 15 * 10**9}) == (
        "cbr: sent 1036 packets, 1500128 bytes to 10.0.0.7:5001 in 15.000 s (800068 bit/s)\n"
    )
    s = g("sink -u")
    assert gen.report_text(
        s, {"packets": 2, "bytes": 2896, "start_ns": 0, "end_ns": 2 * 10**9, "first_ns": 1, "last_ns": 2}
    ) == ("sink: received 2 packets, 2896 bytes on udp port 5001 in 2.000 s: goodput 11584 bit/s\n")


# codel / fq_codel (docs/semantics/qdiscs.md §8.1-8.2): netlink attributes, times in µs, None = not given


def test_tc_codel_options_in_kernel_units():
    line = "tc qdisc add dev s1-eth2 parent 2: handle 3: codel limit 500 target 3ms interval 50ms ecn"
    q = tc_json(line)["qdisc"]
    assert q == {"kind": "codel", "limit": 500, "target": 3000, "interval": 50000, "ce_threshold": None,
                 "ecn": True}
    q = tc_json("tc qdisc add dev s1-eth2 root codel")["qdisc"]
    assert q == {"kind": "codel", "limit": None, "target": None, "interval": None, "ce_threshold": None,
                 "ecn": None}
    q = tc_json("tc qdisc change dev s1-eth2 root codel noecn ce_threshold 1ms")["qdisc"]
    assert (q["ecn"], q["ce_threshold"]) == (False, 1000)


def test_tc_fq_codel_options_in_kernel_units():
    q = tc_json(
        "tc qdisc add dev s1-eth2 parent 2: fq_codel limit 1000 flows 64 quantum 300 target 10ms "
        "memory_limit 4mb drop_batch 8 noecn"
    )["qdisc"]
    assert q == {"kind": "fq_codel", "limit": 1000, "flows": 64, "target": 10000, "interval": None,
                 "quantum": 300, "ecn": False, "ce_threshold": None, "memory_limit": 4 << 20,
                 "drop_batch": 8}


def test_tc_codel_errors():
    line = "tc qdisc add dev s1-eth2 root codel tagret 5ms"
    e = tc_err(line)
    assert e.message == 'What is "tagret"?' and e.col == line.index("tagret")
    assert e.suggestion and "target" in e.suggestion
    e = tc_err("tc qdisc add dev s1-eth2 root codel target soon")
    assert e.message == 'Illegal "target"'
    e = tc_err("tc qdisc add dev s1-eth2 root fq_codel flows 0")
    assert "flows" in e.message
    line = "tc qdisc add dev s1-eth2 root fq_codel ce_threshold_selector 0x1/0x3"
    e = tc_err(line, NotSupportedError)
    assert e.message == "fq_codel ce_threshold_selector is not supported yet"


def test_tc_pie_options_and_profile_default():
    line = "tc qdisc add dev s1-eth2 parent 2: pie limit 500 target 20ms tupdate 30ms alpha 4 beta 32 ecn"
    line += " bytemode"
    q = tc_json(line, MODERN)["qdisc"]
    assert q == {"kind": "pie", "limit": 500, "target": 20000, "tupdate": 30000, "alpha": 4, "beta": 32,
                 "ecn": True, "bytemode": True, "dq_rate_estimator": None}
    # [lab2019] kernels only had the drain-rate estimator (docs/semantics/qdiscs.md §11)
    assert tc_json("tc qdisc add dev s1-eth2 root pie")["qdisc"]["dq_rate_estimator"] is True
    e = tc_err("tc qdisc add dev s1-eth2 root pie alpha 33")
    assert e.message == 'Illegal "alpha"'
