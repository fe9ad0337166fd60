"""Bad TCP input in scenarios: congestion-control names (iperf3 -C, bulk -C)."""

from __future__ import annotations

import pytest

from bufferlab.cli import main

SCENARIO = """name = "cc"
[topology]
hosts = ["h1", "h2"]
switches = ["s1"]
links = [["h1", "s1"], ["s1", "h2"]]
[[part]]
name = "p"
cmds = ["h2: iperf3 -s", "{line}"]
"""


@pytest.mark.parametrize(
    "line, message, hint",
    [
        ("h1: iperf3 -c 10.0.0.2 -C vegas", "congestion control vegas is not modelled yet", None),
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
    assert "expected: reno or cubic or htcp or bbr" in err
    if hint:
        assert f"hint: {hint}" in err


def test_a_zero_rtt_tcp_path_is_an_error_not_a_hang(tmp_path, capsys):
    # no qdisc anywhere: plain veths, no delay, no rate limit
    path = tmp_path / "zero.toml"
    path.write_text(SCENARIO.format(line="h1: bulk -c 10.0.0.2 -t 1").replace("iperf3 -s", "sink"))
    assert main(["run", str(path), "-o", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "simulated time stopped advancing" in err
    assert "Traceback" not in err
