"""Host timing noise: ``[sim] host_noise`` and ``[hosts.X] noise`` (docs/models.md "Host timing
noise"; crates/bufferlab-core/src/host_noise.rs has the draws' own unit tests)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.cli import main
from bufferlab.real.preflight import read_plan
from bufferlab.run.scheduler import Runner
from bufferlab.scenario.topology import build_topology

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import ack_clock  # noqa: E402

from conftest import TWO_HOSTS  # noqa: E402

NOISE = '{ median = "5us", p99 = "600us", max = "1.5ms" }'
#: 2 s of CUBIC through a 20 Mbit/s tbf, a capture on the receiver
PART = """
[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root tbf rate 20mbit burst 32k limit 200k",
  "h2: iperf3 -s &",
  "h2: tshark -i h2-eth0 -s 96 -w h2.pcap &",
  "h1: iperf3 -c 10.0.0.2 -t 2 -C cubic -J > iperf.json",
]
"""


def scenario(sim: str = "", hosts: str = "", seed: int = 1) -> str:
    return f'name = "t"\nseed = {seed}\n[sim]\n{sim}\n{TWO_HOSTS}{hosts}{PART}'


@pytest.mark.parametrize(
    ("sim", "hosts", "where", "message", "hint"),
    [
        (f"host_noise = {NOISE.replace('p99', 'p90')}", "", "t.toml:4:", "unknown key 'p90' in [sim] host_noise",
         "did you mean 'p99'?"),
        ('host_noise = { median = "5us", p99 = "600us" }', "", "t.toml:4:", "[sim] host_noise needs max",
         'host_noise = { median = "6us", p99 = "400us", max = "1.5ms" }'),
        ('host_noise = { median = "5 us", p99 = "600us", max = "1ms" }', "", "t.toml:4:",
         '[sim] host_noise median: invalid duration "5 us"', 'a duration such as "6us" or "1.5ms"'),
        ('host_noise = { median = "50us", p99 = "6us", max = "1ms" }', "", "t.toml:4:",
         "[sim] host_noise: needs median <= p99 <= max", "or host_noise = false"),
        ('host_noise = "5us"', "", "t.toml:4:", "[sim] host_noise must be a table or false", "max = "),
        ("", '[hosts.h2]\nnoise = { median = "0s", p99 = "1us", max = "1us" }\n', "t.toml:10:",
         "[hosts.h2] noise median must be more than 0 and at most 1s", "noise = false"),
        ("", f"[hosts.h2]\nnoize = {NOISE}\n", "t.toml:10:", "unknown key 'noize' in [hosts.h2]",
         "did you mean 'noise'?"),
    ],
)
def test_a_bad_noise_names_the_file_line_and_key(write_scenario, capsys, sim, hosts, where, message, hint):
    assert main(["check", str(write_scenario(scenario(sim, hosts)))]) == 2
    err = capsys.readouterr().err
    assert f"{where}" in err and message in err, err
    assert hint in err, err


def noise_option(write_scenario, sim: str = "", hosts: str = "") -> dict | None:
    sc = load_scenario(write_scenario(scenario(sim, hosts)))
    return build_topology(sc).engine_config["options"].get("host_noise")


def test_unset_passes_nothing_to_the_engine_and_hosts_may_opt_in_or_out(write_scenario):
    assert noise_option(write_scenario) is None
    spec = {"median_ns": 5_000, "p99_ns": 600_000, "max_ns": 1_500_000}
    assert noise_option(write_scenario, f"host_noise = {NOISE}") == {"h1": spec, "h2": spec}
    assert noise_option(write_scenario, f"host_noise = {NOISE}", "[hosts.h1]\nnoise = false\n") == {"h2": spec}
    assert noise_option(write_scenario, "", f"[hosts.h2]\nnoise = {NOISE}\n") == {"h2": spec}


def run(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    run_scenario(load_scenario(path), results_root=tmp_path / name, progress=False)
    return tmp_path / name / name / "p" / "h2"


@pytest.mark.skipif(shutil.which("tshark") is None, reason="reads the capture with tshark")
def test_the_receivers_acks_leave_late_in_order_and_as_the_seed_draws(tmp_path: Path):
    quiet = run(tmp_path, "quiet", scenario())
    noisy = run(tmp_path, "noisy", scenario(f"host_noise = {NOISE}"))
    again = run(tmp_path, "again", scenario(f"host_noise = {NOISE}"))
    other = run(tmp_path, "other", scenario(f"host_noise = {NOISE}", seed=2))
    pcap = lambda d: (d / "h2.pcap").read_bytes()  # noqa: E731
    assert pcap(noisy) == pcap(again), "the same seed draws the same latencies"
    assert pcap(noisy) != pcap(other) and pcap(noisy) != pcap(quiet)
    flows = {d: ack_clock.read_flow(d / "h2.pcap") for d in (quiet, noisy)}
    turnaround = {d: sorted(ack_clock.turnaround_us(f, f.start)) for d, f in flows.items()}
    q = {d: (t[len(t) // 2], t[int(0.9 * (len(t) - 1))]) for d, t in turnaround.items()}
    # punctual: two stack passes (~6 µs); noisy: the drawn median (5 µs more) and tail (the
    # tenth beyond p90 is lost in the duplicate ACKs of a loss, which wait for a hole)
    assert q[quiet][1] < 10, q
    assert 8 < q[noisy][0] < 20 and 50 < q[noisy][1] < 1600, q
    # one socket's ACKs leave in order: their ACK numbers never go back
    acks = [a for _, a in flows[noisy].acks]
    assert acks == sorted(acks)


def test_the_noise_fit_takes_the_stacks_own_time_off() -> None:
    """tools/ack_clock.py --fit-noise: turnarounds of 6 + 0…100 µs are 6 µs of stack and a noise
    whose median is 50, p99 99 and maximum 100 µs."""
    assert ack_clock.fit_noise([6.0 + k for k in range(101)], 6.0) == (50.0, 99.0, 100.0)


def test_a_kernel_run_notes_that_the_noise_is_the_simulations_only(write_scenario):
    r = Runner(load_scenario(write_scenario(scenario("", f"[hosts.h2]\nnoise = {NOISE}\n"))))
    r.check()
    plan = read_plan(r.sc, r.topo, r.lines)
    assert plan.problems == []
    assert any("host noise" in n and "on h2" in n and "their own" in n for n in plan.notes), plan.notes


# ---------------------------------------------------------------- process timing

WAKEUP = '{ median = "15us", p99 = "110us", max = "2ms" }'
SETUP = '{ median = "3ms", p99 = "6ms", max = "20ms" }'


@pytest.mark.parametrize("key", ["reader_wakeup", "app_setup"])
def test_process_timing_takes_the_noises_forms_and_errors(write_scenario, capsys, key):
    sc = load_scenario(write_scenario(scenario(f"{key} = {WAKEUP}", "[hosts.h1]\n" + f"{key} = false\n")))
    options = build_topology(sc).engine_config["options"]
    assert options[key] == {"h2": {"median_ns": 15_000, "p99_ns": 110_000, "max_ns": 2_000_000}}
    assert "host_noise" not in options
    bad = scenario("", f'[hosts.h2]\n{key} = {{ median = "9ms", p99 = "1ms", max = "20ms" }}\n')
    assert main(["check", str(write_scenario(bad))]) == 2
    err = capsys.readouterr().err
    assert "t.toml:10:" in err and f"[hosts.h2] {key}: needs median <= p99 <= max" in err, err


def test_a_woken_reader_and_a_slow_set_up_move_the_run_as_the_seed_draws(tmp_path: Path):
    """Each distribution draws on a stream of its host's own: the same seed gives the same run,
    and turning them on changes what the receiver does (its reads, hence its DRS steps)."""
    timing = f"reader_wakeup = {WAKEUP}\napp_setup = {SETUP}\n"
    iperf = lambda d: (d.parent / "h1" / "iperf.json").read_text()  # noqa: E731
    punctual = iperf(run(tmp_path, "punctual", scenario()))
    timed = iperf(run(tmp_path, "timed", scenario("", "[hosts.h2]\n" + timing)))
    again = iperf(run(tmp_path, "again", scenario("", "[hosts.h2]\n" + timing)))
    assert timed == again
    assert timed != punctual


def test_a_kernel_run_notes_that_process_timing_is_the_simulations_only(write_scenario):
    text = scenario("", f"[hosts.h2]\nreader_wakeup = {WAKEUP}\napp_setup = {SETUP}\n")
    r = Runner(load_scenario(write_scenario(text)))
    r.check()
    plan = read_plan(r.sc, r.topo, r.lines)
    assert plan.problems == []
    for key in ("reader_wakeup", "app_setup"):
        assert any(key in n and "on h2" in n and "their own" in n for n in plan.notes), plan.notes
