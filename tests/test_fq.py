"""fq, sfq and fq_pie (docs/semantics/qdiscs.md §15-17): tc's parsing, defaults and errors
(iproute2 tc/q_fq.c, q_sfq.c, q_fq_pie.c), the `tc -s qdisc show` text in both iproute2
layouts, and small runs: a hog and a thin flow behind tbf → sfq / fq_pie, and a TCP
sender whose root fq paces it (maxrate)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands.shell import Word, parse_shell
from bufferlab.commands.sysctl import parse_sysctl
from bufferlab.commands.tc import TcQdiscRequest, parse_tc, tc_show_text
from bufferlab.commands.tc.registry import KNOWN_UNMODELLED_QDISCS, MODELLED_QDISCS
from bufferlab.errors import CommandError, Diagnostics
from bufferlab.profile import PROFILES
from conftest import TWO_HOSTS, hog_and_thin, sink_received

ROOT = Path(__file__).resolve().parents[1]

LAB2019 = PROFILES["lab2019"]
MODERN = PROFILES["modern"]


def words(line: str) -> list[Word]:
    return parse_shell(line)[0].commands[0].words


def q(opts: str, profile=MODERN, diag: Diagnostics | None = None) -> dict:
    r = parse_tc(words(f"tc qdisc add dev eth0 root {opts}"), diag or Diagnostics(), profile)
    assert isinstance(r, TcQdiscRequest)
    return json.loads(r.to_json())["qdisc"]


def err(opts: str, profile=MODERN) -> tuple[CommandError, str]:
    line = f"tc qdisc add dev eth0 root {opts}"
    with pytest.raises(CommandError) as ei:
        parse_tc(words(line), Diagnostics(), profile)
    e = ei.value
    return e, line[e.col:] if e.col is not None else ""


def _stats(bytes_=0, packets=0, drops=0, overlimits=0, backlog=0, qlen=0):
    return {"bytes": bytes_, "packets": packets, "drops": drops, "overlimits": overlimits,
            "requeues": 0, "backlog": backlog, "qlen": qlen}


#: whole lines (tests/test_schema.py checks what they build against the engine's schema)
SAMPLES = [
    "tc qdisc add dev eth0 root fq maxrate 10mbit ce_threshold 1ms horizon_cap bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 weights 65536 65536 65536",
    "tc qdisc add dev eth0 root sfq perturb 10 headdrop redflowlimit 100000 min 8000 max 20000 probability 0.1 ecn harddrop",
    "tc qdisc change dev eth0 root sfq limit 64 depth 32 quantum 3000",
    "tc qdisc add dev eth0 root fq_pie limit 500 flows 64 target 5ms ecn bytemode dq_rate_estimator",
]


def test_sample_lines_parse():
    for line in SAMPLES:
        assert isinstance(parse_tc(words(line), Diagnostics(), MODERN), TcQdiscRequest), line


def test_the_kinds_are_modelled_and_sysctl_takes_them():
    for k in ("fq", "sfq", "fq_pie"):
        assert k in MODELLED_QDISCS and k not in KNOWN_UNMODELLED_QDISCS
        cmd = parse_sysctl(words(f"sysctl -w net.core.default_qdisc={k}"), Diagnostics())
        assert cmd is not None


# ------------------------------------------------------------------ fq


def test_fq_options_in_kernel_units():
    d = q("fq limit 2000 flow_limit 50 quantum 1514 initial_quantum 3028 maxrate 10mbit buckets 300 "
          "nopacing refill_delay 10ms low_rate_threshold 1mbit orphan_mask 255 ce_threshold 2ms "
          "timer_slack 20us horizon 1s horizon_cap bands 3 priomap 0 1 2 2 1 2 0 0 1 1 1 1 1 1 1 1 "
          "weights 65536 65536 65536")
    assert d == {"kind": "fq", "limit": 2000, "flow_limit": 50, "quantum": 1514, "initial_quantum": 3028,
                 "pacing": False, "maxrate": 1_250_000, "defrate": None, "buckets_log": 9,
                 "refill_delay": 10_000, "orphan_mask": 255, "low_rate_threshold": 125_000,
                 "ce_threshold": 2000, "timer_slack": 20_000, "horizon": 1_000_000, "horizon_drop": False,
                 "priomap": [0, 1, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
                 "weights": [65536, 65536, 65536]}
    assert q("fq") == {k: None for k in d if k != "kind"} | {"kind": "fq"}
    # q_fq.c ilog2 rounds up: 1024 → 10, 1025 → 11
    assert (q("fq buckets 1024")["buckets_log"], q("fq buckets 1025")["buckets_log"]) == (10, 11)


def test_fq_errors_as_q_fq_c():
    e, at = err("fq limit x")
    assert e.message == 'Illegal "limit"' and at.startswith("x")
    e, _ = err("fq orphan_mask -")
    assert e.message == 'Illegal "initial_quantum"'  # sic, q_fq.c
    e, _ = err("fq bands 4 priomap")
    assert e.message == '"bands" must be 3'
    e, _ = err("fq bands 3 priomap 1 2 3")
    assert e.message == '"priomap" element 3 too big'
    e, _ = err("fq bands 3 priomap 1 2")
    assert e.message == "Not enough elements in priomap"
    e, _ = err("fq weights 100 200 300")
    assert e.message == '"weight" element 100 too small'
    e, at = err("fq flowlimit 3")
    assert e.message == 'What is "flowlimit"?' and e.suggestion and "flow_limit" in e.suggestion
    # iproute2 4.15 had none of the later keywords
    e, _ = err("fq horizon 1s", LAB2019)
    assert e.message == 'What is "horizon"?'


FQ_OPTS = {"limit": 10000, "flow_limit": 100, "quantum": 3028, "initial_quantum": 15140, "pacing": True,
           "maxrate": 4294967295, "refill_delay": 40000, "orphan_mask": 1023, "low_rate_threshold": 68750,
           "ce_threshold": 4294967295, "buckets_log": 10, "timer_slack": 10000, "horizon": 10000000,
           "horizon_drop": True, "priomap": [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
           "weights": [589824, 196608, 65536]}


def test_fq_show_both_layouts():
    x = {"gc_flows": 0, "highprio_packets": 0, "fastpath_packets": 12, "tcp_retrans": 0, "throttled": 7,
         "flows_plimit": 2, "pkts_too_long": 0, "allocation_errors": 0, "time_next_delayed_flow": -5,
         "flows": 3, "inactive_flows": 1, "throttled_flows": 0, "unthrottle_latency_ns": 2500, "ce_mark": 0,
         "horizon_drops": 0, "horizon_caps": 0, "band_drops": [0, 4, 0], "band_pkt_count": [0, 5, 0]}
    block = {"kind": "fq", "handle": 0x8001, "parent": None, "options": FQ_OPTS, "stats": _stats(),
             "xstats": x}
    assert tc_show_text([block], MODERN) == (
        "qdisc fq 8001: root refcnt 2 limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 "
        "bands 3 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1 weights 589824 196608 65536 "
        "quantum 3028b initial_quantum 15140b low_rate_threshold 550Kbit refill_delay 40ms "
        "timer_slack 10us horizon 10s horizon_drop \n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  flows 3 (inactive 1 throttled 0) band0_pkts 0 band1_pkts 5 band2_pkts 0\n"
        "  gc 0 highprio 0 fastpath 12 throttled 7 latency 2.5us flows_plimit 2\n"
        " band1_drops 4\n")
    assert tc_show_text([block], LAB2019) == (
        "qdisc fq 8001: root refcnt 2 limit 10000p flow_limit 100p buckets 1024 orphan_mask 1023 "
        "quantum 3028 initial_quantum 15140 low_rate_threshold 550Kbit refill_delay 40.0ms \n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  3 flows (1 inactive, 0 throttled)\n"
        "  0 gc, 0 highprio, 7 throttled, 2500 ns latency, 2 flows_plimit\n")
    opts = dict(FQ_OPTS, pacing=False, maxrate=1_250_000, ce_threshold=2000)
    text = tc_show_text([dict(block, options=opts)], MODERN, stats=False)
    assert "orphan_mask 1023 nopacing bands 3" in text
    assert "initial_quantum 15140b maxrate 10Mbit low_rate_threshold" in text
    assert "refill_delay 40ms ce_threshold 2ms timer_slack" in text


# ------------------------------------------------------------------ sfq


def test_sfq_options_and_red_derivation():
    d = q("sfq limit 3000 perturb 10 quantum 3000 divisor 4096 flows 256 depth 64 headdrop")
    assert d == {"kind": "sfq", "quantum": 3000, "perturb": 10, "limit": 3000, "divisor": 4096, "flows": 256,
                 "depth": 64, "headdrop": True, "red": None}
    assert q("sfq") == {"kind": "sfq", "quantum": 0, "perturb": 0, "limit": 0, "divisor": 0, "flows": 0,
                        "depth": 0, "headdrop": False, "red": None}
    # redflowlimit 100000: max 25000, min 8333, burst (2·8333 + 25000) / 3000 = 13, Wlog and Plog
    # as tc_red_eval_ewma / tc_red_eval_P give them, max_P = 0.02·2³²
    r = q("sfq redflowlimit 100000 ecn")["red"]
    assert r == {"qth_min": 8333, "qth_max": 25000, "wlog": 3, "plog": 20, "max_p": 85899345, "ecn": True,
                 "harddrop": False}


def test_sfq_errors_as_q_sfq_c():
    assert err("sfq limit 1")[0].message == 'Illegal "limit", must be > 1'
    assert err("sfq depth x")[0].message == 'Illegal "flows"'  # sic, q_sfq.c
    assert err("sfq ecn")[0].message == "Required parameter (redflowlimit) is missing"
    assert err("sfq redflowlimit 1000 min 500 max 400")[0].message == '"min" is not smaller than "max"'
    assert err("sfq redflowlimit 1000 max 4000")[0].message == '"max" is larger than "limit"'
    assert err("sfq divisor 1000")[0].message == "RTNETLINK answers: Invalid argument"
    assert err("sfq perturbe 10")[0].message == 'What is "perturbe"?'


def test_sfq_show_with_red_counters():
    opts = {"quantum": 1514, "perturb": 10, "limit": 127, "divisor": 1024, "flows": 128, "depth": 127,
            "headdrop": False, "red": {"qth_min": 8333, "qth_max": 25000, "wlog": 3, "plog": 20,
                                       "max_p": 85899345, "ecn": True, "harddrop": False}}
    x = {"prob_drop": 3, "forced_drop": 1, "prob_mark": 5, "forced_mark": 0, "prob_mark_head": 0,
         "forced_mark_head": 0}
    block = {"kind": "sfq", "handle": 2, "parent": [1, 0], "options": opts, "stats": _stats(), "xstats": x}
    assert tc_show_text([block], MODERN) == (
        "qdisc sfq 2: parent 1: limit 127p quantum 1514b depth 127 divisor 1024 perturb 10sec \n"
        " ewma 3 min 8333b max 25000b probability 0.02 ecn \n"
        " prob_mark 5 prob_mark_head 0 prob_drop 3\n"
        " forced_mark 0 forced_mark_head 0 forced_drop 1\n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n")
    plain = dict(opts, red=None, perturb=0)
    assert tc_show_text([dict(block, options=plain)], LAB2019, stats=False, details=True) == (
        "qdisc sfq 2: parent 1: limit 127p quantum 1514b depth 127 flows 128/1024 divisor 1024 \n")


# ------------------------------------------------------------------ fq_pie


def test_fq_pie_options_and_errors():
    d = q("fq_pie limit 500 flows 64 target 10ms tupdate 20ms alpha 4 beta 30 quantum 3000 "
          "memory_limit 1mb ecn_prob 20 ecn bytemode dq_rate_estimator")
    assert d == {"kind": "fq_pie", "limit": 500, "flows": 64, "target": 10000, "tupdate": 20000, "alpha": 4,
                 "beta": 30, "quantum": 3000, "memory_limit": 1 << 20, "ecn_prob": 20, "ecn": True,
                 "bytemode": True, "dq_rate_estimator": True}
    # a zero is not sent: the kernel keeps its default
    assert q("fq_pie limit 0 alpha 0")["limit"] is None
    assert err("fq_pie alpha 33")[0].message == 'Illegal "alpha"'
    assert err("fq_pie ecn_prob 100")[0].message == 'Illegal "ecn_prob"'
    assert err("fq_pie flows 70000")[0].message.startswith("Error: sch_fq_pie: Number of flows")


def test_fq_pie_show():
    opts = {"limit": 10240, "flows": 1024, "target": 15000, "tupdate": 16000, "alpha": 2, "beta": 20,
            "quantum": 1514, "memory_limit": 33554432, "ecn_prob": 10, "ecn": False, "bytemode": False,
            "dq_rate_estimator": False}
    x = {"packets_in": 10, "dropped": 2, "overlimit": 1, "overmemory": 0, "ecn_mark": 3, "new_flow_count": 2,
         "new_flows_len": 0, "old_flows_len": 1, "memory_usage": 4564}
    block = {
        "kind": "fq_pie",
        "handle": 0x8001,
        "parent": None,
        "options": opts,
        "stats": _stats(),
        "xstats": x,
    }
    assert tc_show_text([block], MODERN) == (
        "qdisc fq_pie 8001: root refcnt 2 limit 10240p flows 1024 target 15ms tupdate 16ms alpha 2 beta 20 "
        "quantum 1514b memory_limit 32Mb ecn_prob 10 \n"
        " Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n"
        " backlog 0b 0p requeues 0\n"
        "  pkts_in 10 overlimit 1 overmemory 0 dropped 2 ecn_mark 3\n"
        "  new_flow_count 2 new_flows_len 0 old_flows_len 1 memory_used 4564\n")


# ------------------------------------------------------------------ runs

SCENARIO = hog_and_thin("fqs", "tc qdisc add dev s1-eth3 parent 1: handle 2: KIND", head='[sim]\nprofile = "modern"\n')


@pytest.mark.parametrize("kind", ["sfq", "fq_pie", "fq"])
def test_a_thin_flow_keeps_its_share_behind_a_hog(tmp_path: Path, kind: str):
    p = tmp_path / "s.toml"
    p.write_text(SCENARIO.replace("KIND", kind), encoding="utf-8")
    run_scenario(load_scenario(p), results_root=tmp_path / "runs", progress=False)
    part = tmp_path / "runs" / "s" / "hog"
    out = (part / "admin" / "terminal.log").read_text()
    assert f"qdisc {kind} 2: parent 1: " in out
    thin = sink_received((part / "h3" / "thin.txt").read_text())
    hog = sink_received((part / "h3" / "hog.txt").read_text())
    # 102 thin frames offered; the 1 Mbit/s link carries < 493 frames of 1014 B in 4 s
    assert thin >= 100, (thin, out)
    assert 400 < hog < 493, hog
    summary = json.loads((part.parent / "summary.json").read_text())
    drops = summary["parts"][0]["drops"]["s1-eth3"]
    want = {"sfq": "queue_full", "fq_pie": "early_drop", "fq": "flow_limit"}[kind]
    assert drops.get(want, {}).get("packets", 0) > 0, drops


FQ_TCP = ("""name = "fqtcp"
seed = 1
[sim]
profile = "modern"
""" + TWO_HOSTS + """
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root netem delay 10ms",
  "h1: tc qdisc add dev h1-eth0 root fq maxrate 20mbit",
  "h2: iperf3 -s",
  "h1: iperf3 -c 10.0.0.2 -t 3 -J > out.json",
  "h1: tc -s qdisc show dev h1-eth0",
]
""")


def test_fq_maxrate_paces_a_tcp_sender(tmp_path: Path):
    p = tmp_path / "f.toml"
    p.write_text(FQ_TCP, encoding="utf-8")
    run_scenario(load_scenario(p), results_root=tmp_path / "runs", progress=False)
    part = tmp_path / "runs" / "f" / "p"
    res = json.loads((part / "h1" / "out.json").read_text())
    bps = res["end"]["sum_received"]["bits_per_second"]
    assert 15e6 < bps < 20.5e6, bps
    out = (part / "h1" / "terminal.log").read_text()
    assert re.search(r"qdisc fq [0-9a-f]+: root refcnt 2 limit 10000p flow_limit 100p buckets 1024", out), out
    assert "maxrate 20Mbit" in out
    assert re.search(r"  flows \d+ \(inactive \d+ throttled \d+\)", out), out
    # TCP Small Queues keep what the socket has in fq to about 1 ms of its rate: nothing reaches flow_limit
    assert "(dropped 0," in out and "flows_plimit" not in out, out
    assert res["end"]["sum_sent"]["retransmits"] == 0


FQ_RATE = ("""name = "fqrate"
seed = 1
[sim]
profile = "modern"
""" + TWO_HOSTS + """
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root netem delay 10ms rate 100mbit",
  "h2: iperf3 -s -D",
  "h1: iperf3 -c 10.0.0.2 -t 3 -J > free.json",
  "h1: iperf3 -c 10.0.0.2 -t 3 -J --fq-rate 20M > own.json",
  "h1: tc qdisc add dev h1-eth0 root fq",
  "h1: iperf3 -c 10.0.0.2 -t 3 -J --fq-rate 20M > fq.json",
  "h2: tc qdisc add dev h2-eth0 root fq",
  "h1: iperf3 -c 10.0.0.2 -t 3 -J -R --fq-rate 30M > reverse.json",
]
""")


def test_iperf3_fq_rate_caps_the_sender_with_or_without_fq(tmp_path: Path):
    """--fq-rate is SO_MAX_PACING_RATE: it caps sk_pacing_rate and asks for pacing, which TCP does
    itself without an fq (net/core/sock.c sk_setsockopt; Linux 4.13 "tcp: internal implementation for
    pacing") and fq does with one; with -R the server sets it on its sending socket (iperf_tcp_accept).
    The rate counts payload bytes (tcp_update_skb_after_send paces skb->len of the queued skb)."""
    p = tmp_path / "r.toml"
    p.write_text(FQ_RATE, encoding="utf-8")
    run_scenario(load_scenario(p), results_root=tmp_path / "runs", progress=False)
    part = tmp_path / "runs" / "r" / "p" / "h1"
    rate = {name: json.loads((part / f"{name}.json").read_text())["end"]["sum_received"]["bits_per_second"]
            for name in ("free", "own", "fq", "reverse")}
    assert 80e6 < rate["free"] < 100e6, rate  # the 100 Mbit/s link, not a pacing rate, is the limit
    for name, cap in (("own", 20e6), ("fq", 20e6), ("reverse", 30e6)):
        # the first 10 segments go unpaced and each late skb gets up to half its time as credit
        assert 0.97 * cap < rate[name] < 1.01 * cap, (name, rate)


@pytest.fixture(scope="module")
def pacing_lesson(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """scenarios/bbr-fq-pacing.toml's results per part (iperf3 row, ping row, bottleneck row), each
    with the retransmissions of iperf3's first one-second interval (slow start) as "slow_start_rtx"."""
    out = tmp_path_factory.mktemp("pacing")
    summary = run_scenario(load_scenario(ROOT / "scenarios/bbr-fq-pacing.toml"), results_root=out,
                           progress=False)
    parts = {}
    for p in summary["parts"]:
        report = json.loads((out / "bbr-fq-pacing" / p["name"] / "h1" / "iperf.json").read_text())
        parts[p["name"]] = p["results"] | {"slow_start_rtx": report["intervals"][0]["sum"]["retransmits"]}
    return parts


def test_lesson_fq_paces_cubic_and_leaves_bbr_as_it_was(pacing_lesson: dict[str, dict]) -> None:
    def flow(part: str) -> tuple[float, int, float]:
        r = pacing_lesson[part]
        (tcp,), (ping,) = r["iperf3"], r["ping"]
        return tcp["goodput_mbps"], tcp["retransmits"], ping["max_ms"]

    rates = {part: flow(part) for part in ("cubic", "cubic-fq", "bbr", "bbr-fq")}
    print(rates)
    for part, (goodput, _, worst) in rates.items():
        assert 70 < goodput <= 100, (part, goodput)  # a 100 Mbit/s bottleneck, kept busy
        assert worst >= 20.0, (part, worst)  # never below the 20 ms of netem
    (cubic, cubic_rtx, cubic_worst), (paced, paced_rtx, paced_worst) = rates["cubic"], rates["cubic-fq"]
    # fq paces CUBIC: its slow-start bursts stop overflowing the 1/8-BDP buffer (one lost skb
    # instead of five); each later sawtooth peak still overflows it, paced or not
    burst, paced_burst = pacing_lesson["cubic"]["slow_start_rtx"], pacing_lesson["cubic-fq"]["slow_start_rtx"]
    assert 0 < paced_burst <= burst / 3, (burst, paced_burst)
    assert paced_rtx < cubic_rtx, (cubic_rtx, paced_rtx)
    assert paced_worst < cubic_worst - 5, (cubic_worst, paced_worst)
    assert paced >= cubic, (cubic, paced)
    # BBR paces itself without fq: fq changes its goodput by < 2 % and its losses by < 30 %
    (bbr, bbr_rtx, _), (bbr_fq, bbr_fq_rtx, _) = rates["bbr"], rates["bbr-fq"]
    assert abs(bbr - bbr_fq) < 0.02 * bbr, (bbr, bbr_fq)
    assert abs(bbr_rtx - bbr_fq_rtx) < 0.3 * bbr_rtx, (bbr_rtx, bbr_fq_rtx)
    # BBRv1 with cwnd 2 BDP over a buffer of 1/8 BDP loses far more than CUBIC does
    assert bbr_rtx > 10 * cubic_rtx, (bbr_rtx, cubic_rtx)
