"""iperf3 UDP pacing as iperf3 does it (issue 10, item 6): the parser's
``--pacing-timer`` and ``-b RATE/BURST``, the generators' ``--jitter``, and
end-to-end runs -- bursts a queue can or cannot absorb, and the CPM-RED
congested case ordering the classes' drop shares by their coefficients.

The throttle's send instants are unit-tested in
crates/bufferlab-core/src/app/iperf3.rs (hand-computed vectors)."""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.commands import generators as gen
from bufferlab.commands.iperf3 import Iperf3Client, ensure_supported, parse_iperf3
from bufferlab.commands.shell import parse_shell
from bufferlab.errors import BufferlabError, CommandError, Diagnostics, NotSupportedError
from bufferlab.profile import PROFILES, Profile
from conftest import TWO_HOSTS

LAB2019 = PROFILES["lab2019"]
MODERN = PROFILES["modern"]
OLD = Profile(iperf3_version=(3, 1))
ROOT = Path(__file__).resolve().parent.parent


def words(line: str):
    return parse_shell(line)[0].commands[0].words


def ip3(line: str, profile: Profile = LAB2019, diag: Diagnostics | None = None) -> Iperf3Client:
    c = parse_iperf3(words(line), diag or Diagnostics(), profile)
    assert isinstance(c, Iperf3Client)
    return c


def ip3_err(line: str, profile: Profile = LAB2019) -> CommandError:
    with pytest.raises(CommandError) as ei:
        parse_iperf3(words(line), Diagnostics(), profile)
    return ei.value


# ------------------------------------------------------------------ parsing


def test_pacing_timer_defaults_follow_the_iperf3_version():
    # 3.2+ default 1000 µs (iperf_defaults); 3.0/3.1: a fixed 0.1 s timer
    assert ip3("iperf3 -c 10.0.0.2 -u").pacing_timer_us == 1000
    assert ip3("iperf3 -c 10.0.0.2 -u", MODERN).pacing_timer_us == 1000
    assert ip3("iperf3 -c 10.0.0.2 -u", OLD).pacing_timer_us == 100_000
    c = ip3("iperf3 -c 10.0.0.2 -u --pacing-timer 250")
    assert (c.pacing_timer_us, c.pacing_timer_given) == (250, True)


def test_pacing_timer_reads_like_unit_atoi():
    assert ip3("iperf3 -c 10.0.0.2 -u --pacing-timer 1k").pacing_timer_us == 1024
    assert ip3("iperf3 -c 10.0.0.2 -u --pacing-timer=2000").pacing_timer_us == 2000
    assert ip3("iperf3 -c 10.0.0.2 -u --pacing 500").pacing_timer_us == 500  # unique prefix
    diag = Diagnostics()
    assert ip3("iperf3 -c 10.0.0.2 -u --pacing-timer 2.5", diag=diag).pacing_timer_us == 2
    assert "as 2 µs" in diag.warnings[0].message
    diag = Diagnostics()
    assert ip3("iperf3 -c 10.0.0.2 -u --pacing-timer 0", diag=diag).pacing_timer_us == 0
    assert "busy loop" in diag.warnings[0].message


@pytest.mark.parametrize(
    "line, profile, token, message",
    [
        (
            "iperf3 -c 10.0.0.2 -u --pacing-timer 1ms",
            LAB2019,
            "1ms",
            "iperf3: invalid pacing timer '1ms' for --pacing-timer",
        ),
        (
            "iperf3 -c 10.0.0.2 -u --pacing-timer fast",
            LAB2019,
            "fast",
            "iperf3: invalid pacing timer 'fast' for --pacing-timer",
        ),
        (
            "iperf3 -c 10.0.0.2 -u --pacing-timer 4g",
            LAB2019,
            "4g",
            "iperf3: pacing timer '4g' out of range for --pacing-timer",
        ),
        # 3.0/3.1 have no such option: glibc getopt's own message
        (
            "iperf3 -c 10.0.0.2 -u --pacing-timer 500",
            OLD,
            "--pacing-timer",
            "iperf3: unrecognized option '--pacing-timer'",
        ),
        (
            "iperf3 -c 10.0.0.2 -u -b 1M/1001",
            LAB2019,
            "1001",
            "parameter error - invalid burst count (maximum = 1000)",
        ),
        (
            "iperf3 -c 10.0.0.2 -u -b 1M/x",
            LAB2019,
            "x",
            "parameter error - invalid burst count (maximum = 1000)",
        ),
    ],
)
def test_pacing_errors(line, profile, token, message):
    e = ip3_err(line, profile)
    assert e.message == message
    assert e.col == line.rindex(token)
    assert e.expected  # every error says what was expected


def test_pacing_timer_is_a_client_option():
    line = "iperf3 -s --pacing-timer 500"
    e = ip3_err(line)
    assert e.message == "parameter error - some option you are trying to set is client only"
    assert e.col == line.index("--pacing-timer")


def test_pacing_timer_error_says_microseconds():
    e = ip3_err("iperf3 -c 10.0.0.2 -u --pacing-timer 1ms")
    assert e.expected == "--pacing-timer MICROSECONDS (an integer; default 1000)"
    assert e.suggestion == "the timer is in microseconds: 1000 is 1 ms"


def test_rate_slash_burst_is_accepted_in_every_version():
    c = ip3("iperf3 -c 10.0.0.2 -u -b 3.5m/10")
    assert (c.rate_bps, c.burst) == (3_500_000, 10)
    assert ip3("iperf3 -c 10.0.0.2 -u -b 1M/4", OLD).burst == 4
    assert ip3("iperf3 -c 10.0.0.2 -u -b 1M").burst == 0
    # iperf3 leaves the burst alone when a later -b has no /BURST
    c = ip3("iperf3 -c 10.0.0.2 -u -b 1M/10 -b 2M")
    assert (c.rate_bps, c.burst) == (2_000_000, 10)


def test_engine_pacing_spec_carries_the_options_and_the_host_constants():
    c = ip3("iperf3 -c 10.0.0.2 -u -b 2M/5 --pacing-timer 2000")
    assert c.to_request(LAB2019, {})["pacing"] == {
        "timer_us": 2000, "burst": 5, "send_ns": 6000, "slack_ns": 50_000}
    slow = Profile(iperf3_send_loop_us=20)
    assert ip3("iperf3 -c 10.0.0.2 -u", OLD).to_request(slow, {})["pacing"] == {
        "timer_us": 100_000,
        "burst": 0,
        "send_ns": 20_000,
        "slack_ns": 50_000,
    }


def test_generator_jitter_option():
    c = gen.parse_generator(words("cbr -c 10.0.0.7 -u -r 1M --jitter 2ms"), Diagnostics())
    assert isinstance(c, gen.UdpSourceCommand) and c.jitter_ns == 2_000_000
    assert gen.engine_spec(c)["jitter_ns"] == 2_000_000
    c = gen.parse_generator(words("poisson -c 10.0.0.7 -u -r 1M --jitter 250us"), Diagnostics())
    assert c.jitter_ns == 250_000
    c = gen.parse_generator(words("onoff -c 10.0.0.7 -u -r 1M"), Diagnostics())
    assert c.jitter_ns == 0 and "jitter_ns" not in gen.engine_spec(c)
    with pytest.raises(CommandError) as ei:
        gen.parse_generator(words("cbr -c 10.0.0.7 -u -r 1M --jitter fast"), Diagnostics())
    assert ei.value.message == 'cbr: invalid duration "fast"'
    assert ei.value.expected.startswith("a duration")
    with pytest.raises(CommandError) as ei:
        gen.parse_generator(words("sink -p 5001 -u --jitter 1ms"), Diagnostics())
    assert ei.value.message == "sink: unrecognized option '--jitter'"


# ------------------------------------------------------------------ end to end

SMALL_QUEUE = ("""
name = "pacing"
seed = 1
""" + TWO_HOSTS + """[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root tbf rate 2mbit burst 3000 limit 15000",
  "h2: iperf3 -s -1",
  "h1: {client}",
]
""")


def receiver_loss(log: str) -> tuple[int, int]:
    m = re.search(r"(\d+)/(\d+) \([\d.e+-]+%\)\s+receiver", log)
    assert m, log
    return int(m.group(1)), int(m.group(2))


def run_text(text: str, tmp: Path, name: str, seed: int | None = None) -> tuple[dict, Path]:
    path = tmp / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    sc = load_scenario(path)
    if seed is not None:
        sc.seed = seed
    summary = run_scenario(sc, results_root=tmp / name, progress=False)
    return summary, tmp / name / name


@pytest.mark.parametrize(
    "options, low, high",
    [
        # 1.8 Mbit/s paced on the 1 ms timer: 1.85 Mbit/s of frames < 2 Mbit/s, no queue
        ("-b 1.8M", 0.0, 0.0),
        # -b 1M/50: 50 datagrams back to back every 50·11584 bit / 1 Mbit/s = 0.58 s.
        # tbf admits its 3000-byte bucket (2 frames) and queues 15000 B (10 frames of
        # 1490 B) while one more drains: ~13 of 50 pass, loss ≈ 37/50 = 74 %
        ("-b 1M/50", 0.65, 0.8),
        # iperf3 3.0/3.1's 0.1 s timer at 1.8 Mbit/s: 15.5 datagrams owed per tick go
        # back to back; ~12.5 fit, loss ≈ 3/15.5 ≈ 20 %
        ("-b 1.8M --pacing-timer 100000", 0.12, 0.3),
    ],
)
def test_bursts_meet_a_small_queue_as_the_pacing_decides(tmp_path, options, low, high):
    client = f"iperf3 -c 10.0.0.2 -u -t 5 {options}"
    _, root = run_text(SMALL_QUEUE.format(client=client), tmp_path, "small")
    lost, total = receiver_loss((root / "p/h1/terminal.log").read_text())
    assert total > 0
    assert low <= lost / total <= high, (options, lost, total)


def cpm_congested(duration: int) -> str:
    """The shipped congested study's classful-RED part, its lines verbatim (the
    tbf and the servers from the first part, the test shortened from 75 s)."""
    text = (ROOT / "scenarios/cpm-red-congested.toml").read_text(encoding="utf-8")
    sc = tomllib.loads(text)
    parts = {p["name"]: p["cmds"] for p in sc["part"]}
    first = parts["red"]
    cmds = [first[0], next(c for c in first if "iperf3 -s" in c)] + [
        c for c in parts["classful-red"] if "tc qdisc del" not in c
    ]
    cmds = [c.replace("-t 75", f"-t {duration}").replace("sleep 76", f"sleep {duration + 1}") for c in cmds]
    topo = text[text.index("[topology]") : text.index("[[part]]")]
    body = ",\n  ".join(f'"{c}"' for c in cmds)
    return f'name = "cpm"\nseed = 1\n{topo}\n[[part]]\nname = "congested"\ncmds = [\n  {body},\n]\n'


def class_drops(summary: dict) -> dict[str, tuple[int, int]]:
    """{class key: (dropped, arrived)} from the classful RED's xstats."""
    red = summary["interfaces"]["eth1"]["qdiscs"][1]
    assert red["kind"] == "red" and "classes" in red["xstats"]
    return {
        c["key"]: (c["early"] + c["pdrop"], c["passed"] + c["early"] + c["pdrop"])
        for c in red["xstats"]["classes"]
    }


def test_cpm_red_congested_orders_the_drop_shares_by_the_class_coefficients(tmp_path):
    """Three 3.5 Mbit/s iperf3 flows (DS 0x32, 0x46, 0x00; CPM coefficients 0.5,
    0.7, 0.9 on RED's marking probability, qdisc/cpm.rs) into the router's
    8 Mbit/s tbf. A higher coefficient marks more: the drop share must rise
    0x32 < 0x46 < 0x00 for every seed.

    20 s per seed (about 0.3 s of wall time each): each class offers ~6000
    datagrams, so a share near 0.35 has a binomial standard error of ~0.6
    points per seed; the pooled 0x46/0x00 gap must exceed 3 standard errors.
    """
    text = cpm_congested(20)
    seeds = [1, 2, 3, 4, 5]
    shares: dict[int, dict[str, float]] = {}
    pooled = {k: [0, 0] for k in ("0x32", "0x46", "default")}
    total_dropped = total_arrived = 0
    for seed in seeds:
        summary, _ = run_text(text, tmp_path, f"cpm{seed}", seed)
        drops = class_drops(summary)
        shares[seed] = {k: d / n for k, (d, n) in drops.items()}
        for k, (d, n) in drops.items():
            pooled[k][0] += d
            pooled[k][1] += n
            total_dropped += d
            total_arrived += n
    rounded = {s: {k: round(v, 4) for k, v in r.items()} for s, r in shares.items()}
    print("per-class drop share by seed:", rounded)
    for seed, r in shares.items():
        assert r["0x32"] < r["0x46"] < r["default"], (seed, r)
    p46 = pooled["0x46"][0] / pooled["0x46"][1]
    p00 = pooled["default"][0] / pooled["default"][1]
    se = math.sqrt(p46 * (1 - p46) / pooled["0x46"][1] + p00 * (1 - p00) / pooled["default"][1])
    assert p00 - p46 > 3 * se, (p46, p00, se)
    # what must go: 10.5 Mbit/s of payload is 906.4 datagrams/s of 1490-byte frames,
    # the tbf passes 8e6 / (8·1490) = 671.1 frames/s, so 26.0 % are dropped
    expected = 1 - (8e6 / (8 * 1490)) / (3 * 3.5e6 / (8 * 1448))
    assert abs(total_dropped / total_arrived - expected) < 0.01, (total_dropped / total_arrived, expected)


def test_cpm_red_runs_are_deterministic(tmp_path):
    text = cpm_congested(3)
    a, _ = run_text(text, tmp_path, "a", 7)
    b, _ = run_text(text, tmp_path, "b", 7)
    c, _ = run_text(text, tmp_path, "c", 8)
    assert class_drops(a) == class_drops(b)
    assert class_drops(a) != class_drops(c)


def test_send_loop_time_is_a_sim_knob(tmp_path):
    # [sim] iperf3_send_loop_us (profile.py) is accepted and bounded like the other loop times
    ok = SMALL_QUEUE.format(client="iperf3 -c 10.0.0.2 -u -t 1").replace(
        'seed = 1\n', 'seed = 1\n[sim]\niperf3_send_loop_us = 4\n', 1)
    path = tmp_path / "loop.toml"
    path.write_text(ok, encoding="utf-8")
    assert load_scenario(path).profile.iperf3_send_loop_us == 4
    path.write_text(ok.replace("= 4", "= 5000000"), encoding="utf-8")
    with pytest.raises(BufferlabError, match="iperf3_send_loop_us"):
        load_scenario(path)


# ---------------------------------------------------------------- --fq-rate (SO_MAX_PACING_RATE)

def test_fq_rate_is_so_max_pacing_rate_in_bytes():
    """iperf_tcp_connect sets SO_MAX_PACING_RATE to --fq-rate / 8 (bytes/s), and not at all when that
    is 0; the rate reads as -b's (unit_atof_rate: k/m/g ×1000)."""
    host = {"profile": "modern"}
    tcp = parse_iperf3(words("iperf3 -c 10.0.0.2 --fq-rate 20M"), Diagnostics(), MODERN)
    assert tcp.fq_rate_bps == 20_000_000
    assert tcp.to_request(MODERN, host)["tcp"] == {"profile": "modern", "max_pacing_rate": 2_500_000}
    tiny = parse_iperf3(words("iperf3 -c 10.0.0.2 --fq-rate 7"), Diagnostics(), MODERN)
    assert "max_pacing_rate" not in tiny.to_request(MODERN, host)["tcp"]


@pytest.mark.parametrize(
    ("line", "profile", "token", "message"),
    [
        ("iperf3 -s --fq-rate 1M", LAB2019, "--fq-rate",
         "parameter error - some option you are trying to set is client only"),
        ("iperf3 -c 10.0.0.2 --fq-rate fast", LAB2019, "fast", 'iperf3: invalid rate "fast" for --fq-rate'),
        ("iperf3 -c 10.0.0.2 --fq-rate 1M", OLD, "--fq-rate", "iperf3: unrecognized option '--fq-rate'"),
        ("iperf3 -c 10.0.0.2 -b 1M", OLD, "-b", "iperf3 3.0/3.1's -b over TCP (fq socket pacing as well as the "
         "throttle) is not supported yet"),
    ],
)
def test_fq_rate_errors(line, profile, token, message):
    e = ip3_err(line, profile)
    assert e.message == message
    assert e.col == line.index(token)


def test_fq_rate_on_udp_is_refused_as_not_supported_yet():
    cmd = parse_iperf3(words("iperf3 -c 10.0.0.2 -u --fq-rate 1M"), Diagnostics(), MODERN)
    with pytest.raises(NotSupportedError, match=r"-u --fq-rate .* is not supported yet"):
        ensure_supported(cmd)


# ---------------------------------------------------------------- -b over TCP (the throttle)

TCP_RATE = ("""name = "tcprate"
seed = 1
[sim]
profile = "PROFILE"
""" + TWO_HOSTS + """
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root netem delay 10ms rate 100mbit",
  "h2: iperf3 -s -D",
  "h1: iperf3 -c 10.0.0.2 -t 5 -b 10M > ten.txt",
  "h1: iperf3 -c 10.0.0.2 -t 5 -b 30M -P 2 -J > two.json",
  "h1: iperf3 -c 10.0.0.2 -t 5 -b 200M -J > over.json",
]
""")


@pytest.mark.parametrize("profile", ["lab2019", "modern"])
def test_tcp_rate_is_iperf3s_throttle_between_blocks(tmp_path, profile):
    """-b over TCP (iperf_send, iperf_check_throttle): each stream writes a whole block while its
    average since TEST_START is below the rate, so a second holds 9 or 10 blocks of 128 KiB at
    10 Mbit/s (1.12 or 1.25 MBytes, as real iperf3 prints); -b is per stream; a rate above the
    link's leaves TCP, not the throttle, in charge."""
    p = tmp_path / "r.toml"
    p.write_text(TCP_RATE.replace("PROFILE", profile), encoding="utf-8")
    run_scenario(load_scenario(p), results_root=tmp_path / "runs", progress=False)
    out = tmp_path / "runs" / "r" / "p" / "h1"
    text = (out / "ten.txt").read_text()
    per_second = re.findall(r"\]\s+\d+\.00-\d+\.00\s+sec\s+([\d.]+) MBytes", text)
    assert len(per_second) == 6 and set(per_second[:5]) <= {"1.12", "1.25"}, text
    received = float(re.search(r"([\d.]+) Mbits/sec\s+receiver", text)[1])
    assert 9.9 <= received <= 10.2, text
    two = json.loads((out / "two.json").read_text())
    assert two["start"]["target_bitrate"] == 30_000_000  # 3.7 too: TCP with -b (esnet/iperf #776)
    rates = [s["sender"]["bits_per_second"] for s in two["end"]["streams"]]
    assert all(29.5e6 <= r <= 30.5e6 for r in rates), rates
    over = json.loads((out / "over.json").read_text())["end"]["sum_received"]["bits_per_second"]
    assert 90e6 <= over <= 100e6, over
