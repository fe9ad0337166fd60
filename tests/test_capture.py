"""Packet capture (tcpdump/tshark -w, [capture]) and exact queue traces
([trace], plot_q.sh): files read back with tshark and pyarrow, compared with
the simulator's own counters."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bufferlab.commands.capture import compile_filter, parse_tcpdump, parse_tshark
from bufferlab.commands.shell import parse_shell
from bufferlab.errors import CommandError, NotSupportedError, ScenarioError
from bufferlab.run.scheduler import run_scenario
from bufferlab.scenario.load import load_scenario
from conftest import TWO_HOSTS

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(TSHARK is None, reason="tshark is not installed (Debian package tshark)")


def words(line: str):  # type: ignore[no-untyped-def]
    return parse_shell(line)[0].commands[0].words


def flt(text: str):  # type: ignore[no-untyped-def]
    w = words("tcpdump -i x -w f " + text)
    return parse_tcpdump(w).filter


# ---------------------------------------------------------------------- filter compiler


def test_filter_subset_compiles_to_the_engine_tree() -> None:
    assert flt("") == {"op": "true"}
    assert flt("udp") == {"op": "proto", "layer": "udp"}
    assert flt("src host 10.0.0.1 and dst port 5201") == {
        "op": "and",
        "args": [
            {"op": "host", "dir": "src", "addr": "10.0.0.1"},
            {"op": "port", "dir": "dst", "layer": None, "port": 5201},
        ],
    }
    assert flt("'ip[1] == 0x32'") == {
        "op": "byte", "layer": "ip", "offset": 1, "size": 1, "mask": None, "cmp": "==", "value": 0x32,
    }
    assert flt("'tcp[13] & 0x12 != 0'")["mask"] == 0x12
    assert flt("'ip[2:2] > 1000'")["size"] == 2
    # pcap-filter(7): an ID after or/and reuses the previous qualifiers
    assert flt("host 10.0.0.1 or 10.0.0.2")["args"][1] == {"op": "host", "dir": "any", "addr": "10.0.0.2"}
    assert flt("'!(tcp || udp)'") == {
        "op": "not",
        "arg": {"op": "or", "args": [{"op": "proto", "layer": "tcp"}, {"op": "proto", "layer": "udp"}]},
    }
    assert flt("net 10.0.0")["prefix"] == 24
    assert flt("less 100") == {"op": "len", "cmp": "<=", "value": 100}
    assert flt("udp port 5001")["layer"] == "udp"
    assert flt("ip host 10.0.0.3")["args"][0] == {"op": "proto", "layer": "ip"}


@pytest.mark.parametrize(
    ("text", "bad"),
    [("ip6", "ip6"), ("ether host 1:2:3:4:5:6", "ether"), ("portrange 1-5", "portrange"),
     ("udp and vlan", "vlan"), ("'ip[1] + 1 == 2'", "+")],
)
def test_unsupported_filter_words_name_their_column(text: str, bad: str) -> None:
    line = "tcpdump -i x -w f " + text
    with pytest.raises(NotSupportedError) as e:
        parse_tcpdump(words(line))
    assert "not supported yet" in e.value.message
    assert line[e.value.col:].startswith(bad), (line, e.value.col)


def test_filter_syntax_errors() -> None:
    cases = [("'tcp and ('", None), ("'host'", None), ("'port 99999'", "99999"),
             ("'tcp host 1.2.3.4'", "tcp")]
    for text, at in cases:
        line = "tcpdump -i x -w f " + text
        with pytest.raises(CommandError) as e:
            parse_tcpdump(words(line))
        assert e.value.col is not None
        if at:
            assert line[e.value.col:].startswith(at)


def test_command_lines() -> None:
    c = parse_tcpdump(words("tcpdump -n -i h1-eth0 -s 128 -c 10 -w out.pcap udp"))
    assert (c.iface.text, c.file.text, c.snaplen, c.count, c.fmt) == ("h1-eth0", "out.pcap", 128, 10, "pcap")
    assert parse_tcpdump(words("tcpdump -ih1-eth0 -wf.pcap -s0 --nano")).snaplen == 262144
    assert parse_tcpdump(words("tcpdump -i h1-eth0 -w f --nano")).fmt == "pcap_ns"
    t = parse_tshark(words("tshark -i eth1 -w /capture1.cap -f 'udp and ip[1] == 0x32'"))
    assert t.fmt == "pcapng" and t.filter["op"] == "and"
    with pytest.raises(NotSupportedError, match="without -w"):
        parse_tcpdump(words("tcpdump -i h1-eth0"))
    with pytest.raises(NotSupportedError, match="-X is not supported"):
        parse_tcpdump(words("tcpdump -i h1-eth0 -X -w f"))
    with pytest.raises(NotSupportedError, match="-V is not supported"):
        parse_tshark(words("tshark -i eth1 -V -w f"))
    assert compile_filter("x", [], 0) == {"op": "true"}


# ---------------------------------------------------------------------- system: capture

SCENARIO = """
name = "capture check"
seed = 3

[topology]
hosts = ["h1", "h2"]
routers = ["r1"]
links = [
  {{ a = "h1", b = "r1", a_ip = "10.0.1.1/24", b_ip = "10.0.1.254/24" }},
  {{ a = "r1", b = "h2", a_ip = "10.0.2.254/24", b_ip = "10.0.2.2/24", wire_rate = "10mbit" }},
]
{extra}
[[part]]
name = "p1"
cmds = [
  {tcpdump}
  "r1: tc qdisc add dev r1-eth1 root tbf rate 5mbit burst 10k limit 30k",
  "h2: iperf3 -s -p 5201 & iperf3 -s -p 5202",
  "h1: ping -c 3 10.0.2.2",
  "h1: iperf3 -c 10.0.2.2 -p 5201 -u -b 3m -S 0x32 -t 2 & iperf3 -c 10.0.2.2 -p 5202 -u -b 3m -S 0x46 -t 2",
  "h1: iperf3 -c 10.0.2.2 -t 2 -C reno",
]
"""

TCPDUMP = """"h2: tcpdump -i h2-eth0 -w h2.pcap -s 200 &",
  "h1: tshark -i h1-eth0 -w h1.cap -f 'udp and ip[1] == 0x32' &",
  "r1: tcpdump -i r1-eth1 -c 5 -w first5.pcap icmp && echo after &","""
EXTRA = """
[capture]
interfaces = ["r1-eth1"]
snaplen = 128

[trace]
queues = ["r1-eth1"]
"""


def run(tmp: Path, name: str, tcpdump: str = TCPDUMP, extra: str = EXTRA) -> tuple[Path, dict]:
    sc = tmp / f"{name}.toml"
    sc.write_text(SCENARIO.format(tcpdump=tcpdump, extra=extra))
    summary = run_scenario(load_scenario(sc), tmp / "results", progress=False)
    return tmp / "results" / name, summary


def tshark(path: Path, *args: str) -> list[str]:
    assert TSHARK is not None
    out = subprocess.run([TSHARK, "-r", str(path), "-n", *args], capture_output=True, text=True, check=True)
    return [line for line in out.stdout.splitlines() if line]


def fields(path: Path, display: str, *names: str) -> list[list[str]]:
    args = ["-T", "fields"] + [a for n in names for a in ("-e", n)]
    if display:
        args += ["-Y", display]
    return [line.split("\t") for line in tshark(path, *args)]


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    return run(tmp_path_factory.mktemp("cap"), "cap")


@needs_tshark
def test_capture_files_read_back_with_tshark(captured: tuple[Path, dict]) -> None:
    root, summary = captured
    part = root / "p1"
    ifs = summary["interfaces"]
    # every frame that left or arrived on the interface, once
    whole = root / "capture_r1-eth1.pcap"
    assert len(tshark(whole)) == ifs["r1-eth1"]["tx_packets"] + ifs["r1-eth1"]["rx_packets"]
    assert summary["captures"][0]["packets"] == len(tshark(whole))
    h2 = part / "h2" / "h2.pcap"
    assert len(tshark(h2)) == ifs["h2-eth0"]["tx_packets"] + ifs["h2-eth0"]["rx_packets"]
    # snap length 128 / 200; orig_len = 14 + IP total length
    caps = fields(whole, "udp.dstport == 5201 && udp.length > 1000",
                  "frame.cap_len", "frame.len", "ip.len", "ip.dsfield")
    assert caps and all(c == ["128", "1490", "1476", "0x32"] for c in caps)
    # the per-DS-byte table: datagrams sent by h1 with 0x32 = frames in h1's filtered pcapng;
    # received ones = frames on h2's interface
    classes = {r["tos"]: r for r in summary["parts"][0]["classes"]}
    h1 = part / "h1" / "h1.cap"
    assert h1.read_bytes()[:4] == b"\x0a\x0d\x0d\x0a", "tshark writes pcapng"
    assert len(tshark(h1)) == classes["0x32"]["sent"]
    for tos in ("0x32", "0x46"):
        got = len(tshark(h2, "-Y", f"ip.proto == 17 && ip.dsfield == {tos}"))
        assert got == classes[tos]["received"], tos
    # ICMP echo id/seq, TCP options as Linux lays them out
    seqs = fields(h2, "icmp.type == 8", "icmp.seq")
    assert [s[0] for s in seqs] == ["1", "2", "3"]
    syn = fields(h2, "tcp.flags.syn == 1 && tcp.flags.ack == 0 && tcp.dstport == 5201",
                 "tcp.options.mss_val", "tcp.options.wscale.shift", "tcp.options.sack_perm")
    assert syn and syn[0][0] == "1460" and syn[0][1] != "" and syn[0][2] != ""
    # one SYN-ACK per SYN (the server once answered the accepted SYN twice)
    synack = fields(h2, "tcp.flags.syn == 1 && tcp.flags.ack == 1", "tcp.srcport")
    assert len(synack) == len(syn) == 1
    assert fields(h2, "tcp.len > 0 && tcp.dstport == 5201", "tcp.options.timestamp.tsval")[0][0] != ""
    assert fields(h2, "tcp.options.sack_le", "tcp.options.sack_le"), "SACK blocks after tbf drops"
    # every checksum verifies
    bad = tshark(h2, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
                 "-o", "udp.check_checksum:TRUE",
                 "-Y", "ip.checksum.status == 0 || tcp.checksum.status == 0 || udp.checksum.status == 0"
                 " || icmp.checksum.status == 0")
    assert bad == []


@needs_tshark
def test_tcpdump_count_and_tool_output(captured: tuple[Path, dict]) -> None:
    root, summary = captured
    part = root / "p1"
    assert len(tshark(part / "r1" / "first5.pcap")) == 5
    r1 = (part / "r1" / "terminal.log").read_text()
    assert "tcpdump: listening on r1-eth1, link-type EN10MB (Ethernet), snapshot length 262144 bytes\n" in r1
    # -c 5: tcpdump exits after the 5th packet and `&&` runs the next command
    assert "5 packets captured\n5 packets received by filter\n0 packets dropped by kernel\nafter\n" in r1
    h2 = (part / "h2" / "terminal.log").read_text()
    n = len(tshark(part / "h2" / "h2.pcap"))
    assert f"{n} packets captured\n{n} packets received by filter\n0 packets dropped by kernel" in h2
    h1 = (part / "h1" / "terminal.log").read_text()
    assert "Capturing on 'h1-eth0'" in h1
    entry = summary["parts"][0]
    assert sorted(entry["captures"]) == ["p1/h1/h1.cap", "p1/h2/h2.pcap", "p1/r1/first5.pcap"]
    assert entry["queue_traces"] == ["p1/queue_trace_r1-eth1.parquet"]


def _comparable(root: Path) -> tuple[str, dict]:
    s = json.loads((root / "summary.json").read_text())
    for k in ("captures", "scenario_toml", "file"):
        s.pop(k, None)
    for p in s["parts"]:
        p.pop("captures", None)
        p.pop("queue_traces", None)
        p.pop("peak_backlog", None)  # read from the queue traces, which only the capture run has
        for rows in p.get("results", {}).values():  # positions: the tcpdump line shifts the others
            for row in rows:
                for k in ("where", "peak_backlog_bytes", "peak_backlog_packets"):
                    row.pop(k, None)
            rows[:] = [r for r in rows if r.get("dropped", 1)]  # traced-only interfaces are listed
    logs = "".join(
        line
        for f in sorted((root / "p1").glob("*/terminal.log"))
        for line in f.read_text().splitlines(keepends=True)
        if not any(w in line for w in ("tcpdump", "tshark", "Capturing", "packets captured",
                                        "received by filter", "dropped by kernel", "after"))
    )
    return logs, s


def test_capture_does_not_perturb_the_simulation_and_is_deterministic(
    tmp_path: Path, captured: tuple[Path, dict]
) -> None:
    root, _ = captured
    plain, _ = run(tmp_path, "cap", tcpdump="", extra="")
    assert _comparable(plain) == _comparable(root)
    (tmp_path / "again").mkdir()
    again, _ = run(tmp_path / "again", "cap")
    for rel in ("capture_r1-eth1.pcap", "p1/h2/h2.pcap", "p1/h1/h1.cap", "p1/queue_trace_r1-eth1.parquet"):
        assert (again / rel).read_bytes() == (root / rel).read_bytes(), rel


def test_capture_errors_have_positions(tmp_path: Path) -> None:
    bad = EXTRA.replace('snaplen = 128', 'snaplen = 128\nfilter = "udp and portrange 1-2"')
    with pytest.raises(ScenarioError, match="not supported yet") as e:
        run(tmp_path, "bad", tcpdump="", extra=bad)
    assert e.value.line is not None
    with pytest.raises(ScenarioError, match="no interface 'r1-eth9'"):
        run(tmp_path, "bad2", tcpdump="", extra='[trace]\nqueues = ["r1-eth9"]\n')
    with pytest.raises(CommandError, match="Cannot find device") as e2:
        run(tmp_path, "bad3", tcpdump='"h1: tcpdump -i h2-eth0 -w x.pcap &",', extra="")
    assert "h2-eth0" in str(e2.value)


# ---------------------------------------------------------------------- system: queue trace

TRACE = ("""
name = "trace check"
seed = 1

""" + TWO_HOSTS + """
[trace]
queues = "all"
{min_interval}

[[part]]
name = "cbr"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root tbf rate 8mbit burst 1514 limit 30000",
  "admin: plot_q.sh s1-eth2 &",
  "h2: sink -u",
  "h1: cbr -c 10.0.0.2 -u -r 12mbit -l 1448 -t 1",
]
""")


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    tmp = tmp_path_factory.mktemp("trace")
    sc = tmp / "trace.toml"
    sc.write_text(TRACE.format(min_interval=""))
    return tmp / "results" / "trace", run_scenario(load_scenario(sc), tmp / "results", progress=False)


def test_queue_trace_schema_conservation_and_exact_delays(traced: tuple[Path, dict]) -> None:
    root, summary = traced
    entry = summary["parts"][0]
    # "all": only interfaces whose root qdisc changed get a file
    assert entry["queue_traces"] == ["cbr/queue_trace_s1-eth2.parquet"]
    path = root / entry["queue_traces"][0]
    assert path.with_suffix(".png").is_file() and path.with_suffix(".pdf").is_file()
    t = pq.read_table(path)
    assert [(f.name, str(f.type)) for f in t.schema] == [
        ("time_s", "double"), ("event", "string"), ("backlog_bytes", "int64"), ("backlog_packets", "int64"),
        ("drops", "int64"), ("marks", "int64"), ("sojourn_s", "double"),
    ]
    rows = t.to_pylist()
    ev = [r["event"] for r in rows]
    n_enq, n_deq = ev.count("enqueue"), ev.count("dequeue")
    last = rows[-1]
    assert last["drops"] > 0, "12 Mbit/s into 8 Mbit/s with a 30 kB limit overflows"
    # the qdisc's own counters agree (the part ends with the cbr, the queue still full)
    q = summary["interfaces"]["s1-eth2"]["qdiscs"][0]["stats"]
    assert n_enq - n_deq - last["drops"] == last["backlog_packets"] == q["qlen"] > 0
    assert (n_deq, last["drops"]) == (q["packets"], q["drops"])
    assert max(r["backlog_bytes"] for r in rows) <= 30000
    # FIFO: the k-th dequeued packet is the k-th accepted one; its sojourn is the
    # time between the two records, and equals the bytes ahead of it / rate
    # (tbf sends one 1490-byte frame per 1490*8/8e6 s = 1.49 ms) within one frame time
    frame_s = 1490 * 8 / 8e6
    accepted, prev = [], None
    for i, r in enumerate(rows):
        if r["event"] == "enqueue" and not (i + 1 < len(rows) and rows[i + 1]["event"] == "drop"
                                            and rows[i + 1]["time_s"] == r["time_s"]):
            accepted.append((r["time_s"], (prev or {"backlog_bytes": 0})["backlog_bytes"]))
        prev = r
    deqs = [r for r in rows if r["event"] == "dequeue"]
    assert len(deqs) == len(accepted) - q["qlen"]
    for (t_in, ahead), d in zip(accepted, deqs, strict=False):
        assert math.isclose(d["sojourn_s"], d["time_s"] - t_in, abs_tol=1e-9)
        assert ahead * 8 / 8e6 - 1e-6 <= d["sojourn_s"] <= ahead * 8 / 8e6 + frame_s + 1e-6
    assert all(math.isnan(r["sojourn_s"]) for r in rows if r["event"] != "dequeue")
    # in the saturated phase departures are exactly one frame time apart
    gaps = [b["time_s"] - a["time_s"] for a, b in zip(deqs[20:200], deqs[21:201], strict=True)]
    assert all(abs(g - frame_s) < 2e-9 for g in gaps), set(gaps)


def test_queue_trace_agrees_with_plot_q_samples(traced: tuple[Path, dict]) -> None:
    root, summary = traced
    rows = pq.read_table(root / "cbr" / "queue_trace_s1-eth2.parquet").to_pylist()
    csv = (root / "cbr" / "queue_s1-eth2.csv").read_text().splitlines()[1:]
    start = summary["parts"][0]["start_ns"] / 1e9
    checked = 0
    for line in csv:
        ts, b, p = line.split(",")
        t = float(ts) + start
        before = [r for r in rows if r["time_s"] < t - 1e-12]
        upto = [r for r in rows if r["time_s"] <= t + 1e-12]
        states = {(x[-1]["backlog_bytes"], x[-1]["backlog_packets"]) if x else (0, 0) for x in (before, upto)}
        assert (int(b), int(p)) in states, (t, b, p, states)
        checked += int(b) > 0
    assert checked >= 5


def test_queue_trace_thinning(tmp_path: Path) -> None:
    sc = tmp_path / "trace.toml"
    sc.write_text(TRACE.format(min_interval='min_interval = "10ms"'))
    summary = run_scenario(load_scenario(sc), tmp_path / "results", progress=False)
    rows = pq.read_table(tmp_path / "results" / "trace" / summary["parts"][0]["queue_traces"][0]).to_pylist()
    assert_thinned(rows, 0.01)
    # about 1 s of arrivals, departures and drops, each kind in 10 ms slots
    for kind in ("enqueue", "dequeue", "drop"):
        assert 50 < sum(r["event"] == kind for r in rows) <= 110, kind


def assert_thinned(rows: list[dict], interval_s: float) -> None:
    """Records of one kind are at least ``interval_s`` apart."""
    for kind in ("enqueue", "dequeue", "drop", "mark"):
        times = [r["time_s"] for r in rows if r["event"] == kind]
        assert all(b - a >= interval_s - 1e-12 for a, b in zip(times, times[1:], strict=False)), kind


def test_plot_q_trace_is_thinned_to_one_millisecond_by_default(tmp_path: Path) -> None:
    """Without [trace], the queue plot_q.sh watches is traced one record per
    ms at most; the cumulative drop column stays exact."""
    sc = tmp_path / "trace.toml"
    sc.write_text(TRACE.format(min_interval="").replace('[trace]\nqueues = "all"\n', ""))
    summary = run_scenario(load_scenario(sc), tmp_path / "results", progress=False)
    (rel,) = summary["parts"][0]["queue_traces"]
    rows = pq.read_table(tmp_path / "results" / "trace" / rel).to_pylist()
    assert_thinned(rows, 0.001)
    # 1 s of 12 Mbit/s CBR: ~1000 arrivals (one per ms: about all kept) and
    # ~670 departures (one per 1.49 ms: all kept but for the initial burst,
    # with their sojourn times)
    deq = [r for r in rows if r["event"] == "dequeue"]
    assert 500 < sum(r["event"] == "enqueue" for r in rows) <= 1010
    q = summary["interfaces"]["s1-eth2"]["qdiscs"][0]["stats"]
    assert q["packets"] - 2 <= len(deq) <= q["packets"] and all(r["sojourn_s"] >= 0 for r in deq)
    q = summary["interfaces"]["s1-eth2"]["qdiscs"][0]["stats"]
    # the queue drains after the last drop, so a later record carries the final count
    assert rows[-1]["drops"] == q["drops"] > 0


def test_queue_trace_counts_a_netem_delay_line_and_its_child_queue(tmp_path: Path) -> None:
    """netem 10 ms as root with the tbf below it (Lab 14's layout): the trace
    holds both the delay line and the tbf queue, plot_q.sh samples the tbf."""
    sc = tmp_path / "trace.toml"
    text = TRACE.format(min_interval="").replace(
        '"admin: tc qdisc add dev s1-eth2 root tbf rate 8mbit burst 1514 limit 30000",',
        '"admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms",\n'
        '  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 8mbit burst 1514 limit 30000",')
    sc.write_text(text)
    summary = run_scenario(load_scenario(sc), tmp_path / "results", progress=False)
    root = tmp_path / "results" / "trace" / "cbr"
    rows = pq.read_table(root / "queue_trace_s1-eth2.parquet").to_pylist()
    ev = [r["event"] for r in rows]
    last = rows[-1]
    assert ev.count("enqueue") - ev.count("dequeue") - last["drops"] == last["backlog_packets"]
    assert all(r["sojourn_s"] >= 0.010 - 1e-9 for r in rows if r["event"] == "dequeue")
    # in the saturated middle the tbf holds its 30 000 B (20 frames of 1490 B) and
    # the delay line 10 ms of 12 Mbit/s arrivals (about 10 frames)
    start = summary["parts"][0]["start_ns"] / 1e9
    mid = [r for r in rows if start + 0.5 <= r["time_s"] <= start + 0.9]
    assert mid and all(20 + 8 <= r["backlog_packets"] <= 20 + 12 for r in mid), {
        r["backlog_packets"] for r in mid}
    samples = [line.split(",") for line in (root / "queue_s1-eth2.csv").read_text().splitlines()[1:]]
    tbf_mid = [int(b) for t, b, _ in samples if 0.5 <= float(t) <= 0.9]
    assert tbf_mid and all(28_000 <= b <= 30_000 for b in tbf_mid), tbf_mid


GSO_SCENARIO = f"""
name = "gso capture"
seed = 1
{TWO_HOSTS}[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: netem delay 5ms",
  "admin: tc qdisc add dev s1-eth2 parent 1: handle 2: tbf rate 100mbit burst 50000 limit 1000000",
  "h1: tcpdump -i h1-eth0 -w agg.pcap &",
  "h1: tcpdump -i h1-eth0 -w seg.pcap --segment-gso &",
  "h2: tcpdump -i h2-eth0 -w rx.pcap &",
  "h2: iperf3 -s",
  "h1: iperf3 -c 10.0.0.2 -t 1",
]
"""


@needs_tshark
def test_gso_aggregates_are_one_large_frame_and_segment_on_request(tmp_path: Path) -> None:
    """issue 10 item 7: an aggregate is one frame, as tcpdump shows it on a veth with
    GSO; --segment-gso writes its segments; tshark reads both without a malformed
    packet, a bad checksum or a sequence gap the data did not have."""
    path = tmp_path / "gso.toml"
    path.write_text(GSO_SCENARIO, encoding="utf-8")
    summary = run_scenario(load_scenario(path), results_root=tmp_path, progress=False)
    h1 = tmp_path / "gso" / "p" / "h1"
    agg = fields(h1 / "agg.pcap", "tcp.len > 0 && tcp.dstport == 5201", "frame.len", "tcp.len", "ip.len")
    seg = fields(h1 / "seg.pcap", "tcp.len > 0 && tcp.dstport == 5201", "frame.len", "tcp.len")
    # one frame per aggregate: one 66-byte header (14 + 20 + 32) and all the payload,
    # and the IP total length says so; the large ones hold many 1448-byte segments
    assert all(int(f) == 66 + int(t) and int(ip) == int(f) - 14 for f, t, ip in agg)
    assert max(int(t) for _, t, _ in agg) >= 10 * 1448
    # the same bytes as segments: none longer than one MSS, the payload totals agree
    assert all(int(t) <= 1448 and int(f) == 66 + int(t) for f, t in seg)
    assert sum(int(t) for _, t in seg) == sum(int(t) for _, t, _ in agg)
    assert len(seg) > 5 * len(agg)
    for name in ("agg.pcap", "seg.pcap"):
        bad = tshark(h1 / name, "-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE",
                     "-Y", "_ws.malformed || _ws.expert.severity == error || ip.checksum.status == 0"
                     " || tcp.checksum.status == 0")
        assert bad == [], (name, bad[:3])
    # tbf (burst 50 000 B) splits aggregates above 33 segments before its queue: h2 receives
    # no frame larger than the burst
    rx = fields(tmp_path / "gso" / "p" / "h2" / "rx.pcap", "tcp.len > 0", "frame.len")
    assert rx and max(int(f) for (f,) in rx) <= 50_000
    assert summary["packets"]["segmented"] > 0
