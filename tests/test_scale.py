"""Many flows: correctness at scale (issue 13), not speed (benches/suite.py).

1 000 Reno flows share a 1 Gbit/s bottleneck (20 ms one way, a 10·BDP tbf
buffer: ~20 segments of queue per flow, so that windows are not so small that
timeouts decide the shares) for 20 s.
"""

from __future__ import annotations

import re

from test_system import LAB14_TOPO, assert_conserved, run

from bufferlab.run.context import WaitApp, WaitUntil
from bufferlab.run.waiting import Waiting

N_FLOWS = 1000
SECONDS = 20
RATE_BPS = 1e9
#: goodput of a full-size frame: 1448 payload bytes per 1514-byte frame
GOODPUT_BPS = RATE_BPS * 1448 / 1514


def test_a_thousand_reno_flows_share_the_bottleneck_fairly_and_every_byte_is_counted(
    write_scenario, tmp_path
):
    senders = ",\n".join(
        f'  "{"h1" if i % 2 == 0 else "h2"}: bulk -c 10.0.0.3 -t {SECONDS} -C reno &"' for i in range(N_FLOWS)
    )
    path = write_scenario(f"""
name = "many"
{LAB14_TOPO}
[[part]]
name = "run"
interrupt = ["h3"]
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 20ms limit 100000",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 1gbit burst 500000 limit 25000000",
  "h3: sink",
{senders}
]
""")
    summary = run(path, tmp_path)
    logs = "".join((tmp_path / f"t/run/{h}/terminal.log").read_text() for h in ("h1", "h2"))
    flows = re.findall(r"bulk: sent (\d+) bytes \((\d+) acknowledged, \d+ retransmitted segments\) "
                       r"to 10\.0\.0\.3:5001 in ([\d.]+) s", logs)
    assert len(flows) == N_FLOWS
    # every byte written was acknowledged (plus the SYN and the FIN)
    assert all(int(acked) == int(sent) + 2 for sent, acked, _ in flows)
    rates = [int(sent) * 8 / float(secs) for sent, _, secs in flows]
    jain = sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))
    assert jain >= 0.9, jain
    sink = re.search(r"sink: received \d+ packets, (\d+) bytes on tcp port 5001 in ([\d.]+) s",
                     (tmp_path / "t/run/h3/terminal.log").read_text())
    assert sink, "the sink reports what it received"
    received, lifetime = int(sink.group(1)), float(sink.group(2))
    assert received == sum(int(sent) for sent, _, _ in flows)
    # goodput ≤ the link's, and the flows keep the link busy
    assert 0.9 * GOODPUT_BPS <= received * 8 / lifetime <= GOODPUT_BPS
    assert_conserved(summary)


class _Owner:
    def __init__(self, terminal: str, foreground: bool) -> None:
        self.terminal, self.foreground = terminal, foreground


def _entry(seq: int, wait: object, terminal: str = "h1", foreground: bool = False) -> tuple:
    return (seq, seq, f"job{seq}", wait, _Owner(terminal, foreground))


def test_the_wait_set_wakes_what_a_scan_would_in_arrival_order():
    w = Waiting()
    w.add(_entry(0, WaitApp(7, endless=False)))
    w.add(_entry(1, WaitUntil(500)))
    w.add(_entry(2, WaitApp(8, endless=True), foreground=True))
    w.add(_entry(3, WaitUntil(100)))
    w.add(_entry(4, WaitApp(7, endless=False), terminal="h2", foreground=True))
    assert len(w) == 5 and w.has_finite()
    assert w.next_instant() == 100
    # app 7 ended and the clock reached 100: entries 0, 3, 4 in arrival order
    assert [e[1] for e in w.take({7}, 100)] == [0, 3, 4]
    assert [e[1] for e in w] == [1, 2]
    assert [e[1] for e in w.foreground("h1")] == [2]
    assert w.foreground("h2") == []
    assert w.next_instant() == 500
    assert [e[1] for e in w.take({8}, 499)] == [2]
    assert w.has_finite(), "entry 1 (an instant) is still awaited"
    assert [e[1] for e in w.take((), 500)] == [1]
    assert not w.has_finite() and len(w) == 0 and w.next_instant() is None


def test_only_endless_applications_leave_the_part_nothing_to_wait_for():
    w = Waiting()
    w.add(_entry(0, WaitApp(1, endless=True)))
    assert not w.has_finite()
    w.add(_entry(1, WaitApp(2, endless=False)))
    assert w.has_finite()
    w.clear()
    assert len(w) == 0 and not w.has_finite() and w.next_instant() is None
