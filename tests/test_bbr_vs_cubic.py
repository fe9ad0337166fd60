"""BBR vs CUBIC across buffer sizes (issue 26 item 7; Ware et al., "Modeling BBR's
Interactions with Loss-Based Congestion Control", IMC 2019): one BBR flow (v1 ``bbr`` or
v3 ``bbr3``) and one CUBIC flow share 50 Mbit/s with 40 ms of RTT
(scenarios/bbr-vs-cubic.toml, sweeps/bbr-vs-cubic.toml). The lesson: BBRv1's share of the
link falls as the buffer grows — above half at one BDP or less, below half in deep buffers —
and BBRv3, which backs off on loss (inflight_hi, beta), is near an even split in shallow
buffers and also loses ground as the buffer deepens (docs/models.md "BBR vs CUBIC"). Also:
``bbr3`` through the Mininet API (sysctl, iperf3 -C)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.scenario.params import Override

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "bbr-vs-cubic.toml"
UNIT = {"K": 1e-3, "M": 1.0, "G": 1e3}


def share(tmp: Path, cc: str, bdp: float, secs: int) -> float:
    """The BBR flow's share of the two flows' goodput (iperf3's receiver lines)."""
    sets = [Override("cc", cc, "--set"), Override("bdp", bdp, "--set"), Override("secs", secs, "--set")]
    root = tmp / f"{cc}-{bdp}-{secs}"
    run_scenario(load_scenario(SCENARIO, sets), results_root=root, progress=False)
    rates = []
    for host in ("h1", "h2"):
        log = (root / "bbr-vs-cubic" / "share" / host / "terminal.log").read_text()
        m = re.search(r"sec\s+\S+ \w?Bytes\s+([\d.]+) (\w)bits/sec\s+receiver", log)
        assert m, log[-500:]
        rates.append(float(m[1]) * UNIT[m[2]])
    assert 40.0 <= sum(rates) <= 48.0, ("the link stays full", rates)
    return rates[0] / sum(rates)


def test_bbr_v1_takes_most_of_a_shallow_buffer_and_less_of_a_deep_one(tmp_path: Path) -> None:
    """The short version: 20 s at 1 and 8 BDP of buffer."""
    shallow, deep = share(tmp_path, "bbr", 1, 20), share(tmp_path, "bbr", 8, 20)
    assert shallow > 0.5, shallow
    assert deep < 0.5, deep
    assert deep < shallow - 0.2, (shallow, deep)


@pytest.mark.slow
def test_the_share_grid_of_docs_models(tmp_path: Path) -> None:
    """The grid of docs/models.md "BBR vs CUBIC": 60 s per point, twelve points (about 15 s on one core)."""
    buffers = (0.5, 1, 2, 4, 8, 16)
    grid = {cc: [share(tmp_path, cc, b, 60) for b in buffers] for cc in ("bbr", "bbr3")}
    v1, v3 = grid["bbr"], grid["bbr3"]
    # BBRv1: above half at <= 1 BDP, falling with every doubling of the buffer
    assert v1[0] > 0.5 and v1[1] > 0.5, v1
    assert all(a > b for a, b in zip(v1, v1[1:], strict=False)), v1
    assert v1[-1] < 0.25, v1
    # BBRv3: near an even split in shallow buffers (far from v1's grab), falling in deep ones
    assert all(0.4 <= s <= 0.65 for s in v3[:3]), v3
    assert v3[0] < v1[0] - 0.2, (v1, v3)
    assert v3[-1] < v3[0] - 0.15, v3


def test_bbr3_through_the_mininet_api(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Selectable as on a BBRv3 kernel: listed by sysctl, set by sysctl or iperf3 -C."""
    from bufferlab.cli import main

    script = tmp_path / "m.py"
    script.write_text(
        "from mininet.net import Mininet\n"
        "from mininet.topo import SingleSwitchTopo\n"
        "net = Mininet(topo=SingleSwitchTopo(2))\n"
        "net.start()\n"
        "h1, h2 = net.get('h1', 'h2')\n"
        "print('available:', h1.cmd('sysctl -n net.ipv4.tcp_available_congestion_control').strip())\n"
        "h1.cmd('sysctl -w net.ipv4.tcp_congestion_control=bbr3')\n"
        "print('set:', h1.cmd('sysctl -n net.ipv4.tcp_congestion_control').strip())\n"
        "h2.cmd('iperf3 -s -D')\n"
        "print('iperf3:', h1.cmd('iperf3 -c %s -t 2 -C bbr3' % h2.IP()).count('receiver'))\n"
        "net.stop()\n", encoding="utf-8")
    assert main(["mininet", "-o", str(tmp_path / "r"), "--no-report", str(script)]) == 0
    out = capsys.readouterr().out
    assert "bbr3" in re.search(r"available: (.*)", out)[1].split()
    assert "set: bbr3" in out
    assert "iperf3: 1" in out
