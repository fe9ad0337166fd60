"""RED, CPM-RED and BLUE end to end (docs/semantics/qdiscs.md §5–§7, §9.3): the tc line parsed
as tc does, consumed by the engine, printed back by ``tc -s qdisc show``, and
two system experiments -- a Lab 16-like RED under a tbf with TCP bulk flows,
and the CPM report's congested case with classful vs plain RED."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario

CPM_TOPO = (
    '[topology]\nhosts = ["host1", "host2"]\nrouters = ["router"]\nlinks = [\n'
    '  { a = "host1", b = "router", a_intf = "eth0", b_intf = "eth2", '
    'a_ip = "192.168.24.21/24", b_ip = "192.168.24.22/24", wire_rate = "20mbit" },\n'
    '  { a = "router", b = "host2", a_intf = "eth1", b_intf = "eth0", '
    'a_ip = "192.168.25.22/24", b_ip = "192.168.25.24/24", wire_rate = "10mbit" },\n]\n'
)

CPM_RED_OPTS = "limit 400kb min 16kb max 32kb avgpkt 1000 burst 17 probability 0.2 bandwidth 8mbit"


def run(path: Path, out: Path, seed: int | None = None) -> dict:
    sc = load_scenario(path)
    if seed is not None:
        sc.seed = seed
    return run_scenario(sc, results_root=out, progress=False)


def assert_conserved(summary: dict) -> None:
    p = summary["packets"]
    assert p["created"] == p["delivered"] + p["dropped"] + p["live"] + p["segmented"], p


def cpm_scenario(kind_line: str, jitter: bool) -> str:
    """The report's congested case: three 3.5 Mbit/s UDP flows (-S 0x32/0x46/0x00)
    into the router's 8 Mbit/s tbf with the given RED-family child.

    The simulated iperf3 senders are perfectly periodic and share one 20 Mbit/s
    wire, so without jitter the three flows arrive phase-locked and the flow
    that always arrives last in a triple sees the largest backlog (and most of
    RED's class-blind hard drops) -- Floyd & Jacobson's "phase effects". Real
    hosts have scheduling jitter; a netem jitter on host1's egress (uniform
    ±2 ms around 5 ms) stands in for it so that classes are compared, not phases.
    """
    j = '  "host1: tc qdisc add dev eth0 root netem delay 5ms 2ms distribution uniform",\n' if jitter else ""
    return f"""
name = "cpm"
seed = 1
{CPM_TOPO}
[[part]]
name = "congested"
cmds = [
  "router: ./tc qdisc add dev eth1 root handle 1: tbf rate 8mbit burst 10k limit 200k",
  "router: ./tc qdisc add dev eth1 parent 1: {kind_line}",
{j}  "host2: iperf3 -s -p 5010 & iperf3 -s -p 5011 & iperf3 -s -p 5012",
  "host1: iperf3 -c 192.168.25.24 -p 5010 -u -b 3.5m -S 0x32 -t 75 -T Class2 &",
  "host1: sleep 0.0011",
  "host1: iperf3 -c 192.168.25.24 -p 5011 -u -b 3.5m -S 0x46 -t 75 -T Class1 &",
  "host1: sleep 0.0011",
  "host1: iperf3 -c 192.168.25.24 -p 5012 -u -b 3.5m -S 0x00 -t 75 -T Class0",
  "router: sleep 77; tc -s qdisc show dev eth1",
]
"""


def receiver_losses(text: str) -> dict[str, tuple[int, int]]:
    """{"Class2": (lost, total), ...} from the clients' receiver lines."""
    out = {}
    for cls, lost, total in re.findall(r"(Class\d):\s+\[.*?(\d+)/(\d+) \([\d.]+%\)\s+receiver", text):
        out[cls] = (int(lost), int(total))
    return out


@pytest.fixture(scope="module")
def cpm_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, Path]]:
    out = tmp_path_factory.mktemp("cpm")
    runs = {}
    for name, line, jitter in [
        ("classful", f"red_csc573 {CPM_RED_OPTS}", True),
        ("plain", f"red {CPM_RED_OPTS}", True),
        ("classful-nojitter", f"red_csc573 {CPM_RED_OPTS}", False),
        ("cpm-blue", "cpm_blue limit 100", True),
    ]:
        path = out / f"{name}.toml"
        path.write_text(cpm_scenario(line, jitter), encoding="utf-8")
        runs[name] = (run(path, out / name), out / name / name / "congested")
    return runs


def test_cpm_red_gives_class_0x32_the_fewest_drops_and_0x00_the_most(cpm_runs):
    summary, root = cpm_runs["classful"]
    losses = receiver_losses((root / "host1/terminal.log").read_text())
    assert set(losses) == {"Class0", "Class1", "Class2"}
    lost = {k: v[0] for k, v in losses.items()}
    assert lost["Class2"] < lost["Class1"] < lost["Class0"], lost
    red = summary["interfaces"]["eth1"]["qdiscs"][1]
    assert red["kind"] == "red" and red["handle"] == 0x8001
    classes = {c["key"]: c for c in red["xstats"]["classes"]}
    # iperf3's loss = RED's per-class drops, up to the datagrams still in flight
    # when the clients stop (a few at the end of the run)
    for cls, key in [("Class2", "0x32"), ("Class1", "0x46"), ("Class0", "default")]:
        assert abs(classes[key]["early"] - lost[cls]) <= 5, (cls, classes[key], lost)
    assert red["xstats"]["pdrop"] == 0
    assert red["xstats"]["early"] == red["stats"]["drops"]
    # the printed statistics carry the map and one line per class (docs/semantics/qdiscs.md §7)
    log = (root / "router/terminal.log").read_text()
    assert ("qdisc red 8001: parent 1: limit 400Kb min 16Kb max 32Kb "
            "dscp-coeff 0x32:0.5,0x46:0.7,default:0.9 \n") in log
    c = classes["0x32"]
    assert f"  class 0x32 passed {c['passed']} marked 0 early {c['early']} pdrop 0\n" in log
    assert_conserved(summary)


def test_cpm_red_without_jitter_still_protects_0x32(cpm_runs):
    summary, _ = cpm_runs["classful-nojitter"]
    cl = {c["key"]: c for c in summary["interfaces"]["eth1"]["qdiscs"][1]["xstats"]["classes"]}
    # probabilistic (in-band) drops follow the coefficients; hard drops are class-blind
    prob = {k: c["early"] - c["forced"] for k, c in cl.items()}
    assert prob["0x32"] < prob["0x46"] < prob["default"], prob
    assert cl["0x32"]["early"] < min(cl["0x46"]["early"], cl["default"]["early"])


def test_plain_red_treats_the_classes_alike(cpm_runs):
    summary, root = cpm_runs["plain"]
    losses = receiver_losses((root / "host1/terminal.log").read_text())
    lost = [v[0] for v in losses.values()]
    sent = [v[1] for v in losses.values()]
    assert max(sent) - min(sent) <= 2
    total = sum(lost)
    # H0: a drop hits each of three equally loaded flows with probability 1/3,
    # so each class count is Binomial(total, 1/3); allow 4 standard deviations.
    sigma = math.sqrt(total * (1 / 3) * (2 / 3))
    assert all(abs(d - total / 3) < 4 * sigma for d in lost), (lost, 4 * sigma)
    red = summary["interfaces"]["eth1"]["qdiscs"][1]
    assert "classes" not in red["xstats"] and abs(red["xstats"]["early"] - total) <= 10
    # about a quarter of 10.5 Mbit/s offered must go to fit 8 Mbit/s
    assert 0.2 < total / sum(sent) < 0.3


def test_cpm_blue_orders_the_classes_and_learns_a_probability(cpm_runs):
    summary, root = cpm_runs["cpm-blue"]
    blue = summary["interfaces"]["eth1"]["qdiscs"][1]
    assert blue["kind"] == "blue"
    x = blue["xstats"]
    assert x["pmark"] > 0.1 and x["overflow"] > 0
    early = {c["key"]: c["early"] for c in x["classes"]}
    assert early["0x32"] < early["0x46"] < early["default"], early
    log = (root / "router/terminal.log").read_text()
    assert re.search(r"qdisc blue 8001: parent 1: limit 100p increment 0.0025 decrement 0.00025 "
                     r"freeze 100.0ms dscp-coeff 0x32:0.5,0x46:0.7,default:0.9 \n", log), log
    assert "  pmark " in log and "  class default passed" in log


LAB16_LIKE = """
name = "l16"
seed = {seed}
[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
[[part]]
name = "p"
duration = "20s"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root netem delay 20ms limit 100000",
  "admin: tc qdisc add dev s2-eth2 root handle 1: tbf rate 100mbit burst 50000 limit 2621440",
  "admin: tc qdisc add dev s2-eth2 parent 1: handle 2: red limit 2621440 max 873813 min 218453 {red}",
  "h3: sysctl -w net.ipv4.tcp_rmem='10240 87380 52428800'",
  "h1: sysctl -w net.ipv4.tcp_wmem='10240 87380 52428800'",
  "admin: plot_q.sh s2-eth2 &",
  "h3: {sinks}",
  "h1: {bulks}",
  "admin: sleep 20.3; tc -s qdisc show dev s2-eth2",
]
"""


def test_lab16_like_red_under_tbf_keeps_the_average_between_min_and_max(tmp_path):
    """Lab 16 scaled to 100 Mbit/s: thresholds ÷10 (min 218 453 B = 17.5 ms, max
    873 813 B = 69.9 ms of queue), burst = 1 + min div avpkt (Wlog 1, so the
    average is the backlog at arrivals), eight TCP bulk flows, 20 ms RTT."""
    n = 8
    text = LAB16_LIKE.format(
        seed=1,
        red="burst 219 avpkt 1000 bandwidth 100mbit adaptive",
        sinks=" & ".join(f"sink -p {5001 + i}" for i in range(n)),
        bulks=" & ".join(f"bulk -c 10.0.0.3 -p {5001 + i} -t 20" for i in range(n)),
    )
    path = tmp_path / "l16.toml"
    path.write_text(text, encoding="utf-8")
    summary = run(path, tmp_path)
    root = tmp_path / "l16" / "p"
    rows = [line.split() for line in (root / "admin/q_s2-eth2.dat").read_text().splitlines() if line.strip()]
    samples = [(float(t), int(float(b))) for t, b, *_ in rows]
    steady = [b for t, b in samples if 3.0 <= t <= 20.0]
    mean = sum(steady) / len(steady)
    assert 218_453 < mean < 873_813, mean
    assert max(b for _, b in samples) < 873_813
    ifc = summary["interfaces"]["s2-eth2"]
    # every drop was RED's probabilistic one: the average never reached max
    # (no forced drop) and the real queue never filled (no pdrop / tail drop)
    assert set(ifc["drops"]) <= {"early_drop"}, ifc["drops"]
    red = ifc["qdiscs"][1]
    assert red["xstats"]["pdrop"] == 0 and red["xstats"]["early"] == red["stats"]["drops"] > 0
    assert ifc["qdiscs"][0]["stats"]["drops"] == red["stats"]["drops"], "RED drops count in the tbf"
    goodput = sum(
        int(b) * 8 / float(s)
        for b, s in re.findall(r"received \d+ packets, (\d+) bytes on tcp port \d+ in ([\d.]+) s",
                               (root / "h3/terminal.log").read_text())
    )
    assert goodput > 0.9 * 100e6 * 1448 / 1514, goodput
    log = (root / "admin/terminal.log").read_text()
    assert "qdisc red 2: parent 1: limit 2560Kb min 218453b max 873813b adaptive \n" in log
    # `tc -s` ran before the flows' last packets: it shows the early drops up to then
    printed = int(re.search(r"  marked 0 early (\d+) pdrop 0 other 0\n", log)[1])
    assert 0 < printed <= red["xstats"]["early"] <= printed + 5, (printed, red["xstats"])
    assert_conserved(summary)
