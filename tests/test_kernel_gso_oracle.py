"""Oracle for issue 10: TSO/GSO aggregates through a real tbf + pfifo, against bufferlab.

The experiment (tools/kernel_gso_oracle.py, results and analysis in
docs/kernel-oracle.md): h1 -> bridge s1 -> h2 in network namespaces, on the
switch port s1-eth2 `tbf rate 100mbit burst B limit 1000000` with a child
`pfifo limit N`, no delay line (netem is not in the kernel the data were taken
on: the round trip is the queue the flow builds), one `iperf3 -C cubic -t 5`
flow h1 -> h2, offloads at their defaults ("gso on") or
`ethtool -K h1-eth0 tso off gso off` on the sender ("gso off"), and one probe
with the offloads off on the switch ports only (the qdisc still sees
aggregates). bufferlab runs the same lines as a scenario: gso on is its
default, gso off is the same `ethtool` line on the same interface (and, once
more, `[sim] gso = false`). The kernel's counters are read after the iperf3
server has exited, when the shaper's queue has drained; the scenario's part
lasts 2 s longer than the flow for the same reason (a part otherwise ends with
the client, leaving the tail of the flow in the queue, uncounted by `Sent`; an `admin: sleep`
holds it, as `duration` does not once every command has finished).

What is compared, and why these bounds. "Kernel range" is [min, max] over the
kernel runs: the three recorded repetitions (tests/data/kernel_oracle/
gso_oracle.json) or the single live run.

- Receiver goodput within 3 % of the kernel range. The tbf fixes it at
  100 Mbit/s x 1448/1514 = 95.6 Mbit/s of payload once the queue is never
  empty; the kernel's own spread is <= 1.6 % (0.1 % in 13 of 14 cases). 3 %
  leaves room for start-up and the end of the test (about 50 ms of a 5 s run)
  and nothing else: a model that starves the link after each loss, or that
  shapes at the wrong size, misses it.
- tc `Sent ... pkt` (segments) and `Sent ... bytes` of the pfifo within 3 % of
  the kernel range. Both are what iperf3 wrote in 5 s plus the retransmissions,
  i.e. goodput x time (same 3 %), and they are where a model that counts
  entries instead of segments in `pkt`, or leaves the per-segment headers out
  of an aggregate's bytes (`len + (segs-1) x hdr_len`), is off by 20-40x or
  by 4 %: bytes per segment are 1512-1513 in every kernel case.
- Drops (the tbf's `dropped`, the pfifo's drops plus the splitting tbf's) in
  the same order of magnitude: within [min/3 - 5, max x 3 + 5]. Drops come from
  a handful of loss episodes whose size depends on what is in flight at the
  instant of overflow; the kernel's own repetitions differ by up to 6x when
  counts are small (9..57) and 2x otherwise. The point of the oracle is the
  40x between gso on and off at `pfifo limit 10` (33 vs 1132 drops,
  burst 200000), which these bounds separate; +-5 absorbs zero and single-digit
  counts.
- Mean segments per queue entry leaving the shaper (tc Sent pkt / skbs the
  port transmitted; bufferlab: Sent pkt / dequeue events of the queue trace)
  within 25 % of the kernel range. With gso off it is exactly 1.0; with gso on
  it is set by tcp_tso_autosize (45 segments at the 64 KB cap), the ACK clock,
  and tbf's splitting of aggregates above max_size = burst (E5); the kernel's
  repetitions stay within 12 % (30.4..35.6). Not checked for the switch-port
  probe, where the port segments after the qdisc and its packet counter no
  longer counts entries.
- iperf3's mean RTT (tcp_info srtt, the queueing delay here) within a factor 2
  of the kernel range. The queue in entries times the entry size is the whole
  RTT in this topology, so this is where counting aggregates shows first
  (22 ms vs 1 ms at limit 10); host processing (tens of us) is below the bound.

The comparison against the recorded data needs only bufferlab. The live tests
need root, network namespaces, veth, tbf, cubic, iperf3 and ethtool; they are
skipped with the reason otherwise. A live case takes about 6 s and compares one
kernel run, whose Sent pkt varies by ±5 % from run to run: every live case is
opt-in (`--runslow`); the recorded three-run ranges are the default oracle.
Known model gaps are strict xfails naming the gap (KNOWN_GAPS).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bufferlab import load_scenario, run_scenario
from conftest import TWO_HOSTS

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "kernel_oracle" / "gso_oracle.json"


def _load_tool():
    tool = ROOT / "tools" / "kernel_gso_oracle.py"
    spec = importlib.util.spec_from_file_location("kernel_gso_oracle", tool)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


oracle = _load_tool()
RECORDED: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))

# bounds (module docstring)
GOODPUT_REL = 0.03
SENT_REL = 0.03
DROP_FACTOR, DROP_SLACK = 3.0, 5
SEGS_REL = 0.25
RTT_FACTOR = 2.0

CASES = [oracle.standard_case(b, n, g)
         for b in oracle.BURSTS for n in oracle.LIMITS for g in ("on", "off")]
PROBE = oracle.Case(max(oracle.BURSTS), min(oracle.LIMITS), "off", ("s1-eth1", "s1-eth2"))
CASES.append(PROBE)
@dataclass
class Numbers:
    """The compared quantities of one run (kernel or bufferlab)."""

    receiver_mbps: float
    #: what reached the receiver during the test: unlike its Mbit/s, this does not depend on
    #: when TEST_END reaches the server (over a 10-packet pfifo a control message is lost
    #: about as often as a data segment, ~2.4 %, and the server's clock then runs on until it
    #: is resent, in both worlds)
    receiver_bytes: int
    sent_pkt: int
    sent_bytes: int
    dropped: int
    segs_per_entry: float | None
    mean_rtt_ms: float | None
    retransmits: int


def _kernel_numbers(run: dict[str, Any]) -> Numbers:
    return Numbers(
        receiver_mbps=run["receiver_bps"] / 1e6,
        receiver_bytes=run["receiver_bytes"],
        sent_pkt=run["pfifo"]["packets"],
        sent_bytes=run["pfifo"]["bytes"],
        dropped=run["tbf"]["drops"],
        segs_per_entry=run["derived"]["segs_per_entry_out"],
        mean_rtt_ms=(run["rtt_us"]["mean_rtt"] or 0) / 1000 or None,
        retransmits=run["retransmits"],
    )


def scenario_text(case: Any, switch: str = "ethtool") -> str:
    """The kernel experiment as a bufferlab scenario (same lines, Mininet names).
    Offloads off by the same `ethtool -K` lines (switch "ethtool"), or, for the
    plain gso-off case, by `[sim] gso = false` (switch "sim": every interface,
    which the kernel's all-interfaces probe shows is the same experiment)."""
    host_of = {"h1-eth0": "h1", "h2-eth0": "h2"}
    sim_gso = ""
    if switch == "sim":
        assert case.off_ifaces == ("h1-eth0",)
        sim_gso, lines = "gso = false\n", []
    else:
        lines = [f"{host_of.get(dev, 'admin')}: ethtool -K {dev} tso off gso off" for dev in case.off_ifaces]
    for h in ("h1", "h2"):
        lines += [f"{h}: sysctl -w net.ipv4.tcp_rmem='{oracle.TCP_RMEM}'",
                  f"{h}: sysctl -w net.ipv4.tcp_wmem='{oracle.TCP_WMEM}'"]
    lines += [
        f"admin: tc qdisc add dev s1-eth2 root handle 1: tbf rate {oracle.RATE} burst {case.burst} "
        f"limit {oracle.TBF_LIMIT}",
        f"admin: tc qdisc add dev s1-eth2 parent 1: handle 2: pfifo limit {case.limit}",
        "h2: iperf3 -s -1",
        f"h1: iperf3 -c 10.0.0.2 -C cubic -t {oracle.SECONDS:g} -J > out.json",
        f"admin: sleep {oracle.SECONDS + 2:g}",
    ]
    cmds = ",\n".join(f'  "{c}"' for c in lines)
    return f"""name = "kernel gso oracle {case.key}"
seed = 1
[sim]
profile = "modern"
{sim_gso}[trace]
queues = ["s1-eth2"]
{TWO_HOSTS}[[part]]
name = "p"
cmds = [
{cmds},
]
"""


def simulate(case: Any, write_scenario, tmp_path: Path, switch: str = "ethtool") -> Numbers:
    path = write_scenario(scenario_text(case, switch), name="gso.toml")
    out = tmp_path / "results"
    run_scenario(load_scenario(path), results_root=out, progress=False)
    res = out / path.stem
    doc = json.loads((res / "p" / "h1" / "out.json").read_text())
    summary = json.loads((res / "summary.json").read_text())
    qd = {q["kind"]: q["stats"] for q in summary["parts"][0]["qdiscs"]["s1-eth2"]}
    import pyarrow.parquet as pq  # a bufferlab dependency (tables)

    trace = next(res.rglob("queue_trace_s1-eth2.parquet"))
    events = pq.read_table(trace, columns=["event"]).column("event").to_pylist()
    dequeues = sum(1 for e in events if e == "dequeue")
    stream = doc["end"]["streams"][0]["sender"]
    return Numbers(
        receiver_mbps=doc["end"]["sum_received"]["bits_per_second"] / 1e6,
        receiver_bytes=doc["end"]["sum_received"]["bytes"],
        sent_pkt=qd["pfifo"]["packets"],
        sent_bytes=qd["pfifo"]["bytes"],
        dropped=qd["tbf"]["drops"],
        segs_per_entry=qd["pfifo"]["packets"] / dequeues if dequeues else None,
        mean_rtt_ms=(stream.get("mean_rtt") or 0) / 1000 or None,
        retransmits=doc["end"]["sum_sent"].get("retransmits", 0),
    )


def _rng(vals: list[float]) -> tuple[float, float]:
    return min(vals), max(vals)


def compare(case: Any, kernel: list[Numbers], sim: Numbers) -> list[str]:
    """Every bound the simulation misses, as readable lines (empty = agreement)."""
    bad: list[str] = []

    def rel(name: str, get, tol: float) -> None:
        lo, hi = _rng([get(k) for k in kernel])
        v = get(sim)
        if not lo * (1 - tol) <= v <= hi * (1 + tol):
            bad.append(f"{name}: bufferlab {v:.6g}, kernel {lo:.6g}..{hi:.6g} (+-{tol:.0%})")

    rel("receiver bytes", lambda n: n.receiver_bytes, GOODPUT_REL)
    rel("Sent pkt", lambda n: n.sent_pkt, SENT_REL)
    rel("Sent bytes", lambda n: n.sent_bytes, SENT_REL)
    lo, hi = _rng([k.dropped for k in kernel])
    if not lo / DROP_FACTOR - DROP_SLACK <= sim.dropped <= hi * DROP_FACTOR + DROP_SLACK:
        bad.append(f"dropped: bufferlab {sim.dropped}, kernel {lo}..{hi} (x/{DROP_FACTOR:g} +-{DROP_SLACK})")
    if case.key != PROBE.key:
        if sim.segs_per_entry is None:
            bad.append("segments per entry: bufferlab's queue trace has no dequeue")
        else:
            rel("segments per entry", lambda n: n.segs_per_entry or 0.0, SEGS_REL)
    kr = [k.mean_rtt_ms for k in kernel if k.mean_rtt_ms]
    if kr:
        lo, hi = _rng(kr)
        v = sim.mean_rtt_ms or 0.0
        if not lo / RTT_FACTOR <= v <= hi * RTT_FACTOR:
            bad.append(f"mean RTT ms: bufferlab {v:.3g}, kernel {lo:.3g}..{hi:.3g} (x/{RTT_FACTOR:g})")
    return bad


def _report(case: Any, kernel: list[Numbers], sim: Numbers) -> str:
    rows = [f"{case.key}:"] + [f"  kernel    {k}" for k in kernel] + [f"  bufferlab {sim}"]
    return "\n".join(rows)


def test_recorded_data_is_this_experiment():
    """The committed JSON was taken with the configuration this module replays."""
    cfg = RECORDED["config"]
    assert cfg["rate"] == oracle.RATE and cfg["tbf_limit"] == oracle.TBF_LIMIT
    assert cfg["seconds"] == oracle.SECONDS and cfg["tcp_rmem"] == oracle.TCP_RMEM
    assert {c.key for c in CASES} <= set(RECORDED["cases"])
    assert all(len(RECORDED["cases"][c.key]["runs"]) >= 3 for c in CASES)


def test_recorded_kernel_counts_aggregates_as_one_entry():
    """What the recorded kernel data say about aggregates, independently of bufferlab
    (the facts the simulator has to reproduce): with TSO/GSO on and a tbf that does
    not split (burst 200000 > a 64 KB aggregate), an entry carries tens of
    segments, `Sent pkt` still counts segments (1512-1513 bytes per pkt, as with
    gso off), and `pfifo limit 10` drops an order of magnitude fewer entries; the
    same holds when only the switch ports have their offloads off."""
    def runs(key: str) -> list[dict[str, Any]]:
        return RECORDED["cases"][key]["runs"]

    on, off = runs("burst200000-limit10-gsoon"), runs("burst200000-limit10-gsooff")
    assert min(r["derived"]["segs_per_entry_out"] for r in on) > 20
    assert all(r["derived"]["segs_per_entry_out"] == pytest.approx(1.0, abs=0.01) for r in off)
    for r in on + off:
        assert r["pfifo"]["bytes"] / r["pfifo"]["packets"] == pytest.approx(1512.5, abs=1.5)
    assert max(r["tbf"]["drops"] for r in on) * 10 < min(r["tbf"]["drops"] for r in off)
    probe = runs(PROBE.key)
    assert max(r["tbf"]["drops"] for r in probe) * 10 < min(r["tbf"]["drops"] for r in off)


SIM_SWITCH = [(c, "ethtool") for c in CASES] + [
    (c, "sim") for c in CASES if c.gso == "off" and c.off_ifaces == ("h1-eth0",)]

#: Known model gaps against this kernel (docs/kernel-oracle.md "Known gaps"). Strict: a
#: change that closes one makes its case pass, and the mark must then go (the limit-10,
#: GSO-off cases' lost TEST_END went with issue 27's changes — a veth's qdisc dequeuing in
#: batches, 6.18's tcp_rcvbuf_grow, TSQ — which one was not bisected: the receiver's
#: goodput is now the kernel's within 0.01 %).
_SIZE = ("skb size when not cwnd-limited: bufferlab sends 45-segment skbs (the [modern] min-RTT "
         "bonus at a veth's tens of µs), the kernel ~30 with many above tbf's 33-segment max_size")
_PROBE = ("offloads off on the switch ports only: bufferlab drops ~250 entries, the kernel 32-50 "
          "(its sender keeps its ~24-segment skbs under the denser ACK clock)")
KNOWN_GAPS = {
    "burst50000-limit1000-gsoon": _SIZE,
    "burst200000-limit50-gsoon": _SIZE,
    PROBE.key: _PROBE,
}


def _with_gap(case: Any, *values: Any, live: bool = False) -> Any:
    gap = KNOWN_GAPS.get(case.key)
    marks = [pytest.mark.xfail(reason=gap, strict=not live)] if gap else []
    if live:
        # one live run of a few seconds per case varies by more than the bounds allow around a
        # single measurement (Sent pkt ±5 % between runs): opt-in, the recorded runs are the oracle
        marks.append(pytest.mark.slow)
    return pytest.param(case, *values, marks=marks)


@pytest.mark.parametrize(("case", "switch"), [_with_gap(c, w) for c, w in SIM_SWITCH],
                         ids=[f"{c.key}-{w}" for c, w in SIM_SWITCH])
def test_bufferlab_matches_recorded_kernel(case, switch, write_scenario, tmp_path):
    kernel = [_kernel_numbers(r) for r in RECORDED["cases"][case.key]["runs"]]
    sim = simulate(case, write_scenario, tmp_path, switch)
    print(_report(case, kernel, sim))
    bad = compare(case, kernel, sim)
    assert not bad, _report(case, kernel, sim) + "\n" + "\n".join(bad)


@pytest.fixture(scope="module")
def live_kernel():
    why = oracle.unavailable()
    if why:
        pytest.skip(f"live kernel run: {why}")
    return oracle.run_once


@pytest.mark.parametrize("case", [_with_gap(c, live=True) for c in CASES], ids=lambda c: c.key)
def test_bufferlab_matches_live_kernel(case, live_kernel, write_scenario, tmp_path):
    run = live_kernel(case, oracle.SECONDS)
    k = _kernel_numbers(run)
    # the kernel first: this machine's kernel reproduces the recorded physics
    assert k.sent_bytes / k.sent_pkt == pytest.approx(1512.5, abs=1.5)
    assert k.receiver_mbps == pytest.approx(100 * 1448 / 1514, rel=GOODPUT_REL)
    if case.gso == "off" and case.off_ifaces == ("h1-eth0",):
        assert k.segs_per_entry == pytest.approx(1.0, abs=0.01)
    sim = simulate(case, write_scenario, tmp_path)
    print(_report(case, [k], sim))
    bad = compare(case, [k], sim)
    assert not bad, _report(case, [k], sim) + "\n" + "\n".join(bad)
