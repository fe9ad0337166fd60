"""Bad TCP input in scenarios: congestion-control names (iperf3 -C, bulk -C)."""

from __future__ import annotations

import re

import pytest

from bufferlab.cli import main
from conftest import TWO_HOSTS

SCENARIO = ("""name = "cc"
""" + TWO_HOSTS + """[[part]]
name = "p"
cmds = ["h2: iperf3 -s", "{line}"]
""")


@pytest.mark.parametrize(
    "line, message, hint",
    [
        ("h1: iperf3 -c 10.0.0.2 -C bbr2", "congestion control bbr2 is not modelled yet", None),
        ("h1: iperf3 -c 10.0.0.2 -C cubc", "unable to set TCP_CONGESTION: cubc: no such congestion control",
         "did you mean cubic?"),
        ("h1: bulk -c 10.0.0.2 -C bbr2", "congestion control bbr2 is not modelled yet", None),
    ],
)
def test_unknown_congestion_controls_are_named_with_their_position(tmp_path, capsys, line, message, hint):
    path = tmp_path / "cc.toml"
    path.write_text(SCENARIO.format(line=line))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    cc = line.split("-C ")[1]
    col = len('cmds = ["h2: iperf3 -s", "') + line.index(cc) + 1
    assert err.startswith(f"{path}:8:{col}: error: {message}")
    assert "expected: reno or cubic or htcp or bbr or dctcp or vegas or westwood or bic or highspeed" in err
    if hint:
        assert f"hint: {hint}" in err


def test_a_plain_veth_path_runs_tcp_at_the_hosts_speed(tmp_path, capsys):
    # No qdisc anywhere: plain veths, no delay, no rate limit. With the hosts'
    # stack time (host.rs, issue 10: 2.25 µs per packet + 0.61 ns per byte on
    # each of the sender's and receiver's stacks) the round trip is no longer
    # zero and TCP runs at what the CPUs allow. Its ceiling from first
    # principles: a 45-segment aggregate (65 160 B of payload, 68 130 B as
    # the stack counts it) costs 2.25 µs + 0.61 ns x 68 130 = 43.8 µs per
    # stack, so one stack moves at most 65 160 x 8 / 43.8 µs = 11.9 Gbit/s of
    # payload; a Mininet VM reads ~10-20 Gbit/s over veths. Below it: slow
    # start from 10 segments and the 1 s run's edges; asserted: above a
    # quarter of the ceiling, i.e. finite and plausible, not collapsed.
    path = tmp_path / "veth.toml"
    path.write_text(SCENARIO.format(line="h1: bulk -c 10.0.0.2 -t 1").replace("iperf3 -s", "sink"))
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    capsys.readouterr()
    log = next((tmp_path / "out").rglob("h2/terminal.log")).read_text()
    m = re.search(r"sink: received \d+ packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s", log)
    assert m, log
    rate = int(m.group(1)) * 8 / float(m.group(2))
    agg_payload, agg_bytes = 45 * 1448, 45 * 1514
    ceiling = agg_payload * 8 / ((2250 + 0.61 * agg_bytes) * 1e-9)
    assert 0.25 * ceiling <= rate <= ceiling, (rate / 1e9, ceiling / 1e9)


def test_a_zero_rtt_tcp_path_is_an_error_not_a_hang(tmp_path, capsys):
    # no qdisc anywhere and the hosts' stack time off ([sim] knobs): a zero RTT
    path = tmp_path / "zero.toml"
    text = SCENARIO.format(line="h1: bulk -c 10.0.0.2 -t 1").replace("iperf3 -s", "sink")
    text = text.replace(
        "[topology]", "[sim]\nhost_packet_ns = 0\nhost_byte_ps = 0\nhost_wakeup_ns = 0\n[topology]"
    )
    path.write_text(text)
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "simulated time stopped advancing" in err
    assert "Traceback" not in err
