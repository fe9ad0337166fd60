"""Flow workloads (`flows`), `bulk -P` and flow completion times (issue 13).

The shipped scenarios/fct-aqm.toml is run once (about 4 s) for its physical
checks; small scenarios check the size distributions (a hand-written
Kolmogorov–Smirnov test, scipy is not a dependency), determinism, the
parser's errors and `bulk -P`.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.flows import parse_flows
from bufferlab.commands.shell import parse_shell
from bufferlab.errors import BufferlabError, CommandError, Diagnostics, ScenarioError
from bufferlab.outputs.fct import fct_summary
from bufferlab.outputs.report import tables_and_report
from bufferlab.outputs.results import load_run
from bufferlab.run.scheduler import Runner

ROOT = Path(__file__).resolve().parent.parent
FCT_AQM = ROOT / "scenarios" / "fct-aqm.toml"
RATE_BPS = 100e6  # the scenario's bottleneck
BASE_RTT_S = 0.020  # netem 20 ms on the way to h3, nothing back
TBF_BURST = 50_000
AQM_PARTS = ("red", "codel", "fq_codel", "pie")

DUMBBELL = """
[topology]
hosts = ["h1", "h2", "h3", "h4", "h5"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h5"], ["h2", "s1"], ["h3", "s1"], ["h4", "s1"]]
"""


def _words(line: str):  # type: ignore[no-untyped-def]
    return parse_shell(line)[0].commands[0].words


def _run(path: Path, out: Path) -> dict[str, Any]:
    """Run a scenario and write its tables and report, as `bufferlab run` does."""
    summary = run_scenario(load_scenario(path), results_root=out, progress=False)
    (root,) = [p for p in out.iterdir() if (p / "summary.json").is_file()]
    tables_and_report(load_run(root))
    return summary


# ------------------------------------------------------------------ the shipped scenario


@pytest.fixture(scope="module")
def aqm(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("fct")
    return _run(FCT_AQM, out), out / "fct-aqm"


def _fct_table(root: Path) -> list[dict[str, Any]]:
    return pq.read_table(root / "tables" / "fct.parquet").to_pylist()


def test_every_flow_is_a_row_and_every_flow_completed_with_its_bytes(aqm) -> None:
    summary, root = aqm
    rows = _fct_table(root)
    assert not summary.get("failures")
    for part in summary["parts"]:
        mine = [r for r in rows if r["part"] == part["name"]]
        (res,) = part["results"]["fct"]
        buckets = res["buckets"]
        # the table has one row per flow, the summary counts the same completed ones
        assert sum(b["flows"] for b in buckets) == len(mine) > 400
        assert sum(b["completed"] for b in buckets) == sum(r["completed"] for r in mine) == len(mine)
        log = (root / part["name"] / "h2" / "terminal.log").read_text()
        assert re.search(rf"flows: {len(mine)} flows to 10\.0\.0\.3:5002 .*, {len(mine)} completed", log)
    # the server (started in the first part, running through all) received exactly the
    # bytes of every flow
    server = (root / "droptail" / "h3" / "terminal.log").read_text()
    m = re.search(r"flows -s: (\d+) flows accepted on port 5002, (\d+) bytes received", server)
    assert m, server
    assert (int(m.group(1)), int(m.group(2))) == (len(rows), sum(r["size_bytes"] for r in rows))


def test_no_flow_beats_two_round_trips_plus_its_serialisation(aqm) -> None:
    """Sender-side FCT: the handshake's round trip, then the data's and its ACK's;
    the payload takes size·8/100 Mbit/s at the bottleneck, except for what the tbf's
    50 000-byte bucket lets through at once."""
    rows = _fct_table(aqm[1])
    slack = [r["fct_s"] - (2 * BASE_RTT_S + max(0, r["size_bytes"] - TBF_BURST) * 8 / RATE_BPS) for r in rows]
    assert min(slack) >= 0, min(slack)
    # and the least loaded flows come close to it (within 5 ms)
    assert min(slack) < 0.005


def _median_small_fct(rows: list[dict[str, Any]], part: str,
                      window: tuple[float, float] = (0, math.inf)) -> float:
    """Median FCT of flows that fit in the initial window (10 segments) and started in ``window``."""
    small = sorted(r["fct_s"] for r in rows if r["part"] == part and r["size_bytes"] <= 10 * 1448
                   and window[0] <= r["start_s"] < window[1])
    assert len(small) > 100
    return small[len(small) // 2]


def test_behind_a_full_drop_tail_buffer_short_flows_wait_the_queue_twice(aqm) -> None:
    """The SYN and the data (one window) each queue behind the bulk flows: FCT ≈
    2 RTT + 2 × the mean queueing delay (plot_q.sh's 100 ms samples), within 20 %
    (the queue swings with CUBIC's sawtooth). From 1 s (the bulk flows have filled
    the buffer) to 10 s (they stop), in the first part (its times are the part's)."""
    summary, root = aqm
    rows = _fct_table(root)
    samples = pq.read_table(root / "tables" / "queue_samples.parquet").to_pylist()
    backlog = [s["backlog_bytes"] for s in samples if s["part"] == "droptail" and 1 <= s["time_s"] < 10]
    queue_s = sum(backlog) / len(backlog) * 8 / RATE_BPS
    assert queue_s > 0.1, "the 2.5 MB (200 ms) drop-tail buffer stays mostly full behind two CUBIC flows"
    expected = 2 * BASE_RTT_S + 2 * queue_s
    got = _median_small_fct(rows, "droptail", (1, 10))
    assert abs(got - expected) <= 0.2 * expected, (got, expected)


def test_every_aqm_cuts_the_short_flows_completion_time(aqm) -> None:
    rows = _fct_table(aqm[1])
    droptail = _median_small_fct(rows, "droptail")
    for part in AQM_PARTS:
        assert _median_small_fct(rows, part) < droptail / 3, part
    # FQ-CoDel isolates the short flows in their own queues: its 99th percentile of
    # the < 100 KB bucket is the best of all
    summary = aqm[0]
    p99 = {p["name"]: p["results"]["fct"][0]["buckets"][0]["p99_ms"] for p in summary["parts"]}
    assert min(p99, key=lambda k: p99[k]) == "fq_codel", p99


def test_the_report_has_the_fct_section_and_plot(aqm) -> None:
    root = aqm[1]
    page = (root / "report.html").read_text()
    assert 'id="fct"' in page and "FCT vs flow size" in page
    assert (root / "tables" / "fct_vs_size.png").stat().st_size > 10_000
    assert (root / "tables" / "fct.csv").read_text().startswith(
        '"part","host","file","flow","start_s","size_bytes","fct_s","retransmits","completed"')


# ------------------------------------------------------------------ size distributions


CDF = """# size cdf
1k 0
4k 0.5
64k 0.9
1m 1
"""


def _ks_statistic(sample: list[float], cdf) -> float:  # type: ignore[no-untyped-def]
    """sup |F_n(x) − F(x)| over the sample points (both sides of each step)."""
    xs = sorted(sample)
    n = len(xs)
    return max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))


def _empirical_cdf(x: float) -> float:
    pts = [(1024, 0.0), (4096, 0.5), (65536, 0.9), (1 << 20, 1.0)]
    for (s0, p0), (s1, p1) in zip(pts, pts[1:], strict=False):
        if x <= s1:
            return p0 + (p1 - p0) * max(0.0, x - s0) / (s1 - s0)
    return 1.0


DISTS = {
    # (--size, CDF of the size in bytes)
    "exp": ("exp:mean=20k", lambda x: 1 - math.exp(-x / 20480)),
    "pareto": ("pareto:mean=30k,shape=1.5", lambda x: 1 - (10240 / x) ** 1.5 if x > 10240 else 0.0),
    "lognormal": ("lognormal:mu=9,sigma=1", lambda x: 0.5 * math.erfc(-(math.log(x) - 9) / math.sqrt(2))),
    "empirical": ("empirical:sizes.cdf", _empirical_cdf),
}


@pytest.fixture(scope="module")
def sizes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[int]]:
    """1 s of 2000 flows/s per distribution (tiny sizes on a fast path: quick)."""
    d = tmp_path_factory.mktemp("sizes")
    (d / "sizes.cdf").write_text(CDF)
    cmds = ['"h5: flows -s -p 6000 & flows -s -p 6001 & flows -s -p 6002 & flows -s -p 6003"',
            '"admin: tc qdisc add dev s1-eth2 root netem delay 1ms"']
    for i, (spec, _) in enumerate(DISTS.values()):
        cmds.append(f'"h{i + 1}: flows -c 10.0.0.5 -p {6000 + i} --rate 2000/s --size {spec} -t 1"')
    (d / "s.toml").write_text('name = "sizes"\nseed = 3\n' + DUMBBELL + '[[part]]\nname = "p"\ncmds = [\n'
                              + ",\n".join(cmds) + "\n]\n")
    run_scenario(load_scenario(d / "s.toml"), results_root=d / "r", progress=False)
    out = {}
    for i, name in enumerate(DISTS):
        (f,) = (d / "r" / "s" / "p" / f"h{i + 1}").glob("fct_*.csv")
        out[name] = [int(r["size_bytes"]) for r in csv.DictReader(f.open())]
    return out


@pytest.mark.parametrize("name", list(DISTS))
def test_flow_sizes_follow_their_distribution_by_a_ks_test(sizes, name) -> None:
    """Kolmogorov–Smirnov at significance 0.01: reject if D > 1.628/√n (the
    asymptotic critical value). Sizes are whole bytes; rounding moves the CDF by
    less than 10⁻³ here, far below the ~0.036 critical value of n ≈ 2000."""
    sample = sizes[name]
    assert 1800 < len(sample) < 2200, len(sample)  # Poisson(2000): sd 45
    d = _ks_statistic(sample, DISTS[name][1])
    assert d < 1.628 / math.sqrt(len(sample)), (name, d)
    # and the test has power: the exponential's sample is not the Pareto's
    if name == "exp":
        assert _ks_statistic(sample, DISTS["pareto"][1]) > 3 / math.sqrt(len(sample))


def test_the_same_seed_gives_an_identical_fct_table(tmp_path: Path) -> None:
    text = ('name = "det"\nseed = 5\n' + DUMBBELL + '[[part]]\nname = "p"\ncmds = [\n'
            '"admin: tc qdisc add dev s1-eth2 root netem delay 5ms",\n'
            '"admin: tc qdisc add dev s2-eth1 root tbf rate 20mbit burst 20000 limit 100000",\n'
            '"h5: flows -s & sink -p 7000",\n"h2: bulk -c 10.0.0.5 -p 7000 -t 2",\n'
            '"h1: flows -c 10.0.0.5 --rate 200/s --size pareto:mean=20k,shape=1.3 -t 2"]\n')
    (tmp_path / "d.toml").write_text(text)
    tables = []
    for run in ("a", "b"):
        _run(tmp_path / "d.toml", tmp_path / run)
        tables.append((tmp_path / run / "d" / "tables" / "fct.csv").read_bytes())
    assert tables[0] == tables[1]
    assert tables[0].count(b"\n") > 300


def test_summary_buckets_split_at_100_kb_and_10_mb() -> None:
    rows = [{"size_bytes": s, "fct_s": f, "completed": c} for s, f, c in
            [(99_999, 0.01, True), (100_000, 0.02, True), (9_999_999, 0.03, True), (10_000_000, 1.0, True),
             (50, None, False), (20, 0.03, True)]]
    b = fct_summary(rows)
    assert [(x["flows"], x["completed"]) for x in b] == [(3, 2), (2, 2), (1, 1)]
    # mean and linear-interpolation quantiles of 10 ms and 30 ms
    assert (b[0]["mean_ms"], b[0]["p50_ms"], b[0]["p99_ms"]) == (20.0, 20.0, 29.8)
    assert b[2]["p50_ms"] == 1000.0


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize("line, message, hint", [
    ("flows -c 10.0.0.5 --rate 10/s --size expo:mean=1k", 'unknown size distribution "expo"',
     "did you mean exp?"),
    ("flows -c 10.0.0.5 --rate 10/s --size pareto:mean=1k", "pareto needs shape", None),
    ("flows -c 10.0.0.5 --rate 10/s --size pareto:mean=1k,shape=1", "no finite mean", "1.05 to 2"),
    ("flows -c 10.0.0.5 --rate 10/s --size exp:men=1k", 'exp has no parameter "men"', "did you mean mean?"),
    ("flows -c 10.0.0.5 --rate 10/s --size exp:mean=1kbit", 'invalid mean "1kbit"', "sizes are bytes"),
    ("flows -c 10.0.0.5 --rate 10/s --size empirical:nope.cdf", "nope.cdf: No such file", "relative to"),
    ("flows -c 10.0.0.5 --rate fast --size fixed:1k", 'invalid rate "fast"', None),
    ("flows -c 10.0.0.5 --size fixed:1k", "--rate is required", None),
    ("flows -s -t 5", "flows -s takes only -p", None),
])
def test_bad_flows_lines_name_the_column_and_a_fix(line: str, message: str, hint: str | None) -> None:
    with pytest.raises(CommandError) as e:
        parse_flows(_words(line), Diagnostics(), base_dir=Path("/nonexistent"))
    assert message in e.value.message
    if hint:
        assert hint in (e.value.suggestion or "")
    assert e.value.col is not None


def test_errors_in_a_scenario_name_file_line_and_column(tmp_path: Path) -> None:
    line = "h1: flows -c 10.0.0.5 --rate 10/s --size weibull:k=1"
    (tmp_path / "s.toml").write_text(f'name = "e"\n{DUMBBELL}[[part]]\nname = "p"\ncmds = ["{line}"]\n')
    with pytest.raises(BufferlabError) as e:
        Runner(load_scenario(tmp_path / "s.toml")).check()
    col = line.split(": ", 1)[1].index("weibull")
    assert re.search(r"s\.toml:\d+:\d+: error: flows: unknown size distribution", str(e.value))
    assert " " * (4 + col) + "^" in str(e.value), str(e.value)


def test_a_bad_cdf_file_is_reported_at_its_own_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "w.cdf").write_text("# web\n1k 0.1\n2k 0.05\n")
    with pytest.raises(ScenarioError) as e:
        parse_flows(_words("flows -c 10.0.0.5 --rate 10/s --size empirical:w.cdf"), Diagnostics(),
                    base_dir=tmp_path)
    assert str(e.value).startswith("w.cdf:3:4: error: sizes and probabilities must not decrease")
    (tmp_path / "w.cdf").write_text("1k 0.5\n2k 50\n")
    with pytest.raises(ScenarioError, match=r"w\.cdf:2:4: error: invalid cumulative probability") as e:
        parse_flows(_words("flows -c 10.0.0.5 --rate 10/s --size empirical:w.cdf"), Diagnostics(),
                    base_dir=tmp_path)
    assert "divided by 100" in str(e.value)
    (tmp_path / "w.cdf").write_text("1k 0.5\n2k 0.9\n")
    with pytest.raises(ScenarioError, match=r"w\.cdf:2:1: error: the CDF ends at 0.9, not at 1"):
        parse_flows(_words("flows -c 10.0.0.5 --rate 10/s --size empirical:w.cdf"), Diagnostics(),
                    base_dir=tmp_path)


# ------------------------------------------------------------------ bulk -P


def test_bulk_parallel_connections_share_the_byte_budget(tmp_path: Path) -> None:
    text = ('name = "par"\nseed = 1\n' + DUMBBELL + '[[part]]\nname = "p"\ncmds = [\n'
            '"admin: tc qdisc add dev s1-eth2 root netem delay 5ms rate 100mbit",\n'
            '"h5: sink",\n"h1: bulk -c 10.0.0.5 -P 200 -n 20M"]\n')
    (tmp_path / "p.toml").write_text(text)
    summary = run_scenario(load_scenario(tmp_path / "p.toml"), results_root=tmp_path, progress=False)
    log = (tmp_path / "p" / "p" / "h1" / "terminal.log").read_text()
    m = re.search(r"bulk: sent (\d+) bytes over 200 connections \((\d+) acknowledged", log)
    assert m, log
    # -n is the total, as iperf3's; each connection's SYN and FIN count one acknowledged byte each
    assert (int(m.group(1)), int(m.group(2))) == (20 * 2**20, 20 * 2**20 + 2 * 200)
    (sink,) = summary["parts"][0]["sinks"]
    assert sink["bytes"] == 20 * 2**20
    with pytest.raises(CommandError, match="between 1 and 20000"):
        from bufferlab.commands.generators import parse_generator
        parse_generator(_words("bulk -c 10.0.0.5 -P 0"), Diagnostics())


def test_flows_takes_a_congestion_control_and_refuses_an_unknown_one(tmp_path: Path) -> None:
    cmd = parse_flows(_words("flows -c 10.0.0.5 --rate 10/s --size fixed:1k -C reno -p 6000 -t 1"),
                      Diagnostics())
    assert (cmd.congestion, cmd.port, cmd.duration_ns) == ("reno", 6000, 10**9)  # type: ignore[union-attr]
    line = "h1: flows -c 10.0.0.5 --rate 10/s --size fixed:1k -C bbr2"
    (tmp_path / "s.toml").write_text(f'name = "e"\n{DUMBBELL}[[part]]\nname = "p"\ncmds = ["{line}"]\n')
    with pytest.raises(BufferlabError, match="bbr2"):
        Runner(load_scenario(tmp_path / "s.toml")).check()
