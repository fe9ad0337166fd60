"""Property tests for every parser (issue 16, must have 5a; docs/fuzzing.md).

Property: any input gives a result or a BufferlabError that says where the
problem is (a command line's column, a scenario's file and line); never
another exception. The default run is fast (``FUZZ_EXAMPLES`` examples per
test, 150 unless the environment says otherwise:
``BUFFERLAB_FUZZ_EXAMPLES=20000 python -m pytest tests/test_fuzz_parsers.py``).
"""

from __future__ import annotations

import os
import string
import sys
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from bufferlab import units  # noqa: E402
from bufferlab.commands.shell import parse_shell  # noqa: E402
from bufferlab.errors import BufferlabError, CommandError, ScenarioError  # noqa: E402
from bufferlab.run.scheduler import Runner  # noqa: E402
from bufferlab.scenario.load import Command, load_scenario  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402

FUZZ_EXAMPLES = int(os.environ.get("BUFFERLAB_FUZZ_EXAMPLES", "150"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
    derandomize=os.environ.get("BUFFERLAB_FUZZ_RANDOM") is None,
)

BASE = """name = "fuzz base"
seed = 1

[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]

[[part]]
name = "p"
duration = "1s"
cmds = ["h1: true"]
"""

# ---------------------------------------------------------------------- strategies

numbers = st.one_of(
    st.sampled_from(fuzz.INTERESTING_NUMBERS),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
)
quantities = st.builds(lambda n, u: n + u, numbers, st.sampled_from(fuzz.UNITS))
junk = st.text(alphabet=string.printable + "\u00e9\u00b5\x00\U0001f600", max_size=12)
tokens = st.one_of(
    st.sampled_from(fuzz.KEYWORDS), numbers, quantities, junk, st.sampled_from(fuzz.SHELL_NOISE)
)


def line_of(prog: list[str]) -> st.SearchStrategy[str]:
    """A command line: a program (with its usual words) and random tokens."""
    return st.builds(
        lambda head, rest: " ".join([*head, *rest]),
        st.sampled_from([p.split() for p in prog]),
        st.lists(tokens, max_size=12),
    )


TC = ["tc qdisc add dev s1-eth2 root", "tc qdisc change dev s1-eth2 root", "tc qdisc replace dev s1-eth2",
      "tc qdisc add dev s1-eth2 parent 1:1 handle 10:", "tc qdisc del dev s1-eth2 root", "tc -s qdisc show",
      "tc qdisc add dev s1-eth2 root handle 1: netem", "tc qdisc add dev s1-eth2 root tbf", "tc class add",
      "tc qdisc add dev s1-eth2 root red", "./tc qdisc add dev s1-eth2 root"]
SYSCTL = ["sysctl -w", "sysctl", "sysctl -w net.ipv4.tcp_congestion_control=", "sysctl -w net.core.rmem_max=",
          "sysctl -w net.ipv4.tcp_rmem=", "sysctl -p", "sysctl -a", "sysctl -w net.ipv4.tcp_ecn=",
          "sysctl -w net.ipv4.tcp_ecn_fallback=", "sysctl -w net.ipv4.tcp_congestion_control=dctcp"]
IPERF3 = ["iperf3 -c 10.0.0.3", "iperf3 -s", "iperf3 -c 10.0.0.3 -u -b", "iperf3 -c 10.0.0.3 -t",
          "iperf3 -c h3 -J", "iperf3 -c 10.0.0.3 -R -P", "iperf3", "iperf3 -c 10.0.0.3 -C dctcp"]
PING = ["ping 10.0.0.3", "ping -c", "ping 10.0.0.3 -c 3 -i", "ping -s", "ping h3 -c 2", "ping"]
GENERATORS = ["cbr 10.0.0.3 -r", "poisson 10.0.0.3 -r", "onoff 10.0.0.3 -r", "bulk 10.0.0.3 -n",
              "sink -p", "sink", "cbr", "bulk"]
#: flent and the tools it drives, and the web fetches (issue 28)
FLENT_TOOLS = ["flent rrul -H 10.0.0.2", "flent tcp_nup -H 10.0.0.2 --test-parameter upload_streams=",
               "flent -i", "flent rtt_fair -H 10.0.0.2 -H 10.0.0.3", "netperf -H 10.0.0.2 -t",
               "netperf -P 0 -v 0 -D -0.2 -H 10.0.0.2 -- -k", "netserver -p", "irtt client -Q -o - 10.0.0.2",
               "irtt server -b", "irtt client -d", "fping -D -p 200 -c", "fping",
               "curl -o /dev/null -s -w %{time_total} http://10.0.0.1/", "curl -s -o f", "wget -q -O f",
               "python3 -m http.server", "python", "dd if=/dev/zero of=f bs=", "head -c"]
OTHERS = ["tcpdump -i h1-eth0", "tshark -i h1-eth0", "ethtool -K h1-eth0", "plot_q.sh", "plot_iperf.sh",
          "echo", "sleep", "mkdir -p", "cd", "sudo"]


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    p = tmp_path_factory.mktemp("fz") / "base.toml"
    p.write_text(BASE, encoding="utf-8")
    r = Runner(load_scenario(p))
    r.check()
    return r


def _prepare(runner: Runner, terminal: str, text: str) -> None:
    """Runner.prepare_line (shell parsing, dispatch, the program's parser) on one line."""
    c = Command(terminal=terminal, text=text, line=12, col=10, index=0, file="fuzz.toml")
    try:
        runner.prepare_line(c)
    except CommandError as e:
        assert e.where is not None and e.where.startswith("fuzz.toml:12:"), (text, str(e))
        assert str(e).startswith("fuzz.toml:12:"), (text, str(e))
    except BufferlabError as e:
        assert "fuzz.toml" in str(e), (text, str(e))


def _line_property(runner: Runner, terminal: str, text: str) -> None:
    _prepare(runner, terminal, text)


# ---------------------------------------------------------------------- one test per parser


@FUZZ
@given(text=line_of(TC))
def test_tc_lines(runner: Runner, text: str) -> None:
    _line_property(runner, "admin", text)


@FUZZ
@given(text=line_of(SYSCTL))
def test_sysctl_lines(runner: Runner, text: str) -> None:
    _line_property(runner, "h1", text)


@FUZZ
@given(text=line_of(IPERF3))
def test_iperf3_lines(runner: Runner, text: str) -> None:
    _line_property(runner, "h1", text)


@FUZZ
@given(text=line_of(PING))
def test_ping_lines(runner: Runner, text: str) -> None:
    _line_property(runner, "h1", text)


@FUZZ
@given(text=line_of(GENERATORS))
def test_generator_lines(runner: Runner, text: str) -> None:
    _line_property(runner, "h1", text)


@FUZZ
@given(text=line_of(FLENT_TOOLS))
def test_flent_and_web_tool_lines(runner: Runner, text: str) -> None:
    _line_property(runner, "h1", text)


@FUZZ
@given(text=line_of(OTHERS), terminal=st.sampled_from(["h1", "admin"]))
def test_other_program_lines(runner: Runner, text: str, terminal: str) -> None:
    _line_property(runner, terminal, text)


@FUZZ
@given(text=st.one_of(st.text(max_size=80), st.lists(tokens, max_size=15).map(" ".join)))
def test_shell_lines(text: str) -> None:
    """The shell splitter alone: jobs, or a CommandError with a column inside the line."""
    try:
        parse_shell(text)
    except CommandError as e:
        assert e.col is None or 0 <= e.col <= len(text), (text, e.col)


UNIT_PARSERS = [
    units.parse_size, units.parse_rate, units.parse_rate_bits, units.parse_time_us, units.parse_time_ns64,
    units.parse_percent, units.parse_percent_fraction, units.parse_probability, units.parse_iperf_rate,
    units.parse_iperf_size, units.parse_duration_ns,
]


@FUZZ
@given(text=st.one_of(quantities, junk, numbers), k=st.integers(0, len(UNIT_PARSERS) - 1))
def test_units(text: str, k: int) -> None:
    """Every unit parser: a number, or a CommandError pointing at the word (column 5 here)."""
    try:
        v = UNIT_PARSERS[k](text, 5)
    except CommandError as e:
        assert e.col == 5, (UNIT_PARSERS[k].__name__, text, e.col)
        return
    assert isinstance(v, int | float), (UNIT_PARSERS[k].__name__, text, v)


@FUZZ
@given(text=st.one_of(quantities, junk, numbers), ns=st.booleans())
def test_netem_time(text: str, ns: bool) -> None:
    try:
        units.parse_netem_time(text, ns, 3)
    except CommandError as e:
        assert e.col == 3


# ---------------------------------------------------------------------- the scenario loader


_MUT = fuzz.Mutator(fuzz.load_seeds())


def _load_property(tmp: Path, data: bytes) -> None:
    p = tmp / "s.toml"
    p.write_bytes(data)
    try:
        sc = load_scenario(p)
        Runner(sc).check()
    except ScenarioError as e:
        assert str(e).startswith(str(p)), str(e)
    except BufferlabError as e:
        assert str(p) in str(e), str(e)


@FUZZ
@given(i=st.integers(0, 2**40))
def test_scenario_loader_mutated(tmp_path: Path, i: int) -> None:
    """tools/fuzz.py's mutations of the shipped scenarios, loaded and checked."""
    _load_property(tmp_path, _MUT.make(16, i)[1])


toml_values = st.recursive(
    st.one_of(st.booleans(), st.integers(-(2**64), 2**64), st.floats(), st.text(max_size=10), quantities),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "x"]), inner,
                                                               max_size=3),
    max_leaves=12,
)


def _toml_value(v: object) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return (
            "nan" if v != v else ("inf" if v == float("inf") else ("-inf" if v == float("-inf") else repr(v)))
        )
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    assert isinstance(v, dict)
    return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"


SCENARIO_KEYS = {
    "sim": ["queue_sample_interval", "stop_at", "part_gap", "gso", "host_packet_ns", "host_noise", "profile",
            "seed", "zz"],
    "topology": ["hosts", "switches", "links", "routers", "zz"],
    "part": ["name", "duration", "stop", "interrupt", "allow_fail", "cmds", "zz"],
    "trace": ["queues", "min_interval"],
    "capture": ["interfaces", "snaplen", "filter", "format"],
}


@FUZZ
@given(
    table=st.sampled_from(sorted(SCENARIO_KEYS)),
    data=st.data(),
)
def test_scenario_loader_typed_values(tmp_path: Path, table: str, data: st.DataObject) -> None:
    """A key of a scenario table set to a value of any TOML type."""
    key = data.draw(st.sampled_from(SCENARIO_KEYS[table]))
    value = _toml_value(data.draw(toml_values))
    text = BASE
    if table == "part":
        text = text.replace('duration = "1s"', f'duration = "1s"\n{key} = {value}' if key != "duration"
                            else f"duration = {value}")
    elif table == "topology":
        text = text.replace("[topology]", f"[topology]\n{key} = {value}") if key != "zz" else text
        text = _replace_key(text, key, value)
    else:
        text = text.replace("[topology]", f"[{table}]\n{key} = {value}\n\n[topology]")
    _load_property(tmp_path, text.encode("utf-8", "surrogatepass"))


def _replace_key(text: str, key: str, value: str) -> str:
    lines = [ln for ln in text.split("\n") if not ln.startswith(f"{key} = ")]
    i = lines.index("[topology]")
    lines.insert(i + 1, f"{key} = {value}")
    return "\n".join(lines)
