"""flent, netperf/netserver, irtt and fping run in scenarios (docs/flent.md): rrul's flows and
probes on the wire with their markings, the tools' outputs in their real formats, the data file
read by the real flent, and the commands' errors at their line and column.

Run: python -m pytest -q tests/test_flent_tools.py
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from pcaps import frames

from bufferlab.cli import main

#: h1 -- s1 -- s2 -- h2: 20 Mbit/s tbfs each way (s1-eth2 uploads, s2-eth1 downloads), 10 ms
#: of netem towards each host, so the base RTT is 20 ms
TOPO = """[topology]
hosts = ["h1", "h2"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h2"]]
"""
SHAPE = [
    "admin: tc qdisc add dev s1-eth2 root tbf rate 20mbit burst 20kb limit 200000",
    "admin: tc qdisc add dev s2-eth1 root tbf rate 20mbit burst 20kb limit 200000",
    "admin: tc qdisc add dev s1-eth1 root netem delay 10ms",
    "admin: tc qdisc add dev s2-eth2 root netem delay 10ms",
]


def scenario(*cmds: str) -> str:
    body = ",\n".join(f"  {json.dumps(c)}" for c in [*SHAPE, *cmds])
    return f'name = "t"\nseed = 1\n{TOPO}\n[[part]]\nname = "p"\ncmds = [\n{body},\n]\n'


def run(write_scenario, tmp_path: Path, text: str) -> tuple[int, Path]:
    status = main(
        ["run", "--no-progress", "--no-report", "-q", "-o", str(tmp_path / "out"), str(write_scenario(text))]
    )
    return status, tmp_path / "out" / "t" / "p"


@pytest.fixture(scope="module")
def rrul(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """flent rrul -l 5 from h1 to h2 (netserver and an irtt server there), captured at h1-eth0."""
    tmp = tmp_path_factory.mktemp("rrul")
    (tmp / "t.toml").write_text(
        scenario(
            "h1: tcpdump -i h1-eth0 -w rrul.pcap &",
            "h2: netserver",
            "h2: irtt server &",
            "h1: flent rrul -H 10.0.0.2 -l 5 -t unit",
        ),
        encoding="utf-8",
    )
    assert (
        main(["run", "--no-progress", "--no-report", "-q", "-o", str(tmp / "out"), str(tmp / "t.toml")]) == 0
    )
    return tmp / "out" / "t"


def test_rrul_puts_eight_tcp_flows_and_its_probes_on_the_wire_with_their_markings(rrul: Path) -> None:
    caught = frames(rrul / "p" / "h1" / "rrul.pcap")
    up = defaultdict(set)
    down = defaultdict(set)
    for f in caught:
        if f.proto == 6 and f.payload > 0 and f.dport == 12865:
            up[f.sport].add(f.tos & ~3)
        elif f.proto == 6 and f.payload > 0 and f.sport == 12865:
            down[f.dport].add(f.tos & ~3)
    # four uploads and four downloads, one marking each: BE, BK (CS1), CS5, EF
    assert sorted(next(iter(t)) for t in up.values()) == [0x00, 0x20, 0xA0, 0xB8]
    assert sorted(next(iter(t)) for t in down.values()) == [0x00, 0x20, 0xA0, 0xB8]
    assert all(len(t) == 1 for t in [*up.values(), *down.values()])
    probes = defaultdict(set)
    for f in caught:
        if f.proto == 17 and f.dport == 2112:
            probes[f.sport].add(f.tos)
    assert sorted(next(iter(t)) for t in probes.values()) == [0x00, 0x20, 0xB8]  # UDP BE, BK, EF
    replies = {f.tos for f in caught if f.proto == 17 and f.sport == 2112}
    assert replies == {0x00, 0x20, 0xB8}, "irtt's server answers in the probe's class"
    pings = [f for f in caught if f.proto == 1 and f.src == "10.0.0.1"]
    # fping -p 200 -c N over TOTAL_LENGTH 15 s, N = 15 // 0.2 + 1 in flent's floating point (75)
    # (the first one waits for ARP's answer)
    assert len(pings) == 75 and pings[2].t - pings[1].t == pytest.approx(0.2, abs=1e-6)
    first_tcp = min(f.t for f in caught if f.proto == 6)
    assert first_tcp == pytest.approx(5.0, abs=0.01), "the flows start after DELAY"


def test_rrul_writes_flents_data_file_and_summary(rrul: Path) -> None:
    home = rrul / "p" / "h1"
    files = list(home.glob("rrul-*.unit.flent.gz"))
    assert len(files) == 1
    with gzip.open(files[0], "rt") as f:
        doc = json.load(f)
    md = doc["metadata"]
    assert (md["NAME"], md["HOST"], md["LENGTH"], md["TOTAL_LENGTH"], md["STEP_SIZE"]) == (
        "rrul",
        "10.0.0.2",
        5,
        15,
        0.2,
    )
    series = set(doc["results"])
    for name in (
        "TCP upload BE",
        "TCP upload BK",
        "TCP upload CS5",
        "TCP upload EF",
        "TCP download EF",
        "TCP upload sum",
        "TCP download sum",
        "TCP totals",
        "Ping (ms) UDP EF",
        "Ping (ms) UDP BK",
        "Ping (ms) UDP BE",
        "Ping (ms) ICMP",
        "Ping (ms) avg",
    ):
        assert name in series and any(v is not None for v in doc["results"][name]), name
    meta = md["SERIES_META"]
    assert meta["TCP upload EF"]["UPSTREAM_TOS"] == 0xB8 and meta["TCP download BK"]["DOWNSTREAM_TOS"] == 0x20
    assert (
        meta["TCP upload BE"]["RUNNER"] == "NetperfDemoRunner" and meta["TCP upload BE"]["UNITS"] == "Mbits/s"
    )
    # each direction's sum is at most the 20 Mbit/s link, and near it
    sums = {d: meta[f"TCP {d} sum"]["MEAN_VALUE"] for d in ("upload", "download")}
    assert all(12 < v <= 20 for v in sums.values()), sums
    # probes see at least the 20 ms base RTT
    assert all(v >= 20 for v in doc["results"]["Ping (ms) ICMP"] if v is not None)
    log = (home / "terminal.log").read_text()
    assert "Starting rrul test. Expected run time: 15 seconds." in log
    assert re.search(r" TCP upload sum   :\s+\d+\.\d\d\s+N/A\s+N/A Mbits/s\s+\d+\n", log)
    summary = json.loads((rrul / "summary.json").read_text())
    row = summary["parts"][0]["results"]["flent"][0]
    assert row["test"] == "rrul" and row["file"] == f"p/h1/{files[0].name}"
    assert row["means"]["TCP upload sum"]["mean"] == pytest.approx(sums["upload"], abs=0.001)
    assert summary["parts"][0]["results"]["ping"] == [], "flent's fping is no ping row of its own"


def test_rrul_data_file_loads_in_the_real_flent(rrul: Path, tmp_path: Path) -> None:
    resultset = pytest.importorskip("flent.resultset", reason="flent is not installed (pip install flent)")
    path = next((rrul / "p" / "h1").glob("rrul-*.flent.gz"))
    r = resultset.load(str(path))
    assert r.meta("NAME") == "rrul" and "TCP upload EF" in r.series_names
    assert r.meta("SERIES_META")["Ping (ms) ICMP"]["UNITS"] == "ms"
    png = tmp_path / "all.png"
    done = subprocess.run(
        [sys.executable, "-m", "flent", "-i", str(path), "-p", "all_scaled", "-o", str(png)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "ERROR" not in done.stderr, done.stderr
    assert png.stat().st_size > 10_000


def test_flent_replots_a_data_file_and_draws_at_the_run(write_scenario, tmp_path: Path) -> None:
    status, home = run(
        write_scenario,
        tmp_path,
        scenario(
            "h2: netserver",
            "h1: flent tcp_nup --test-parameter upload_streams=2 -H 10.0.0.2 -l 3 -p totals -o totals.png "
            "-D data",
        ),
    )
    assert status == 0
    data = next((home / "h1" / "data").glob("tcp_nup-*.flent.gz"))
    assert (home / "h1" / "totals.png").stat().st_size > 5_000
    with gzip.open(data, "rt") as f:
        doc = json.load(f)
    assert doc["metadata"]["TEST_PARAMETERS"] == {"upload_streams": "2"}
    assert {"TCP upload::1", "TCP upload::2", "TCP upload fairness"} <= set(doc["results"])
    # no irtt server: flent's UDP probe falls back on netperf UDP_RR
    # the data file's name: the test, the run's start on the profile's clock, the title
    status, home2 = run(
        write_scenario,
        tmp_path / "b",
        scenario(
            "h2: netserver",
            "h1: flent ping -H 10.0.0.2 -l 2",
            "h1: flent -i ping-2020-04-14T181005.000000.flent.gz -p ping_cdf -o again.png",
            f"h1: flent -i {data.name} -p ping -o nothing.png",
        ),
    )
    assert status != 0  # the tcp_nup file is not in this run's folder: flent's own error
    log = (home2 / "h1" / "terminal.log").read_text()
    assert f"ERROR: Unable to find file: {data.name}" in log
    assert " Ping (ms) UDP  :" in log and " Ping (ms) ICMP :" in log
    assert (home2 / "h1" / "again.png").stat().st_size > 5_000


def test_udp_flood_runs_iperf_2s_udp_flood(write_scenario, tmp_path: Path) -> None:
    status, home = run(
        write_scenario,
        tmp_path,
        scenario(
            "h2: iperf -s -u &",
            "h1: flent udp_flood -H 10.0.0.2 -l 3 --test-parameter udp_bandwidth=5M",
        ),
    )
    assert status == 0
    with gzip.open(next((home / "h1").glob("udp_flood-*.flent.gz")), "rt") as f:
        doc = json.load(f)
    meta = doc["metadata"]["SERIES_META"]["UDP upload"]
    assert meta["RUNNER"] == "IperfCsvRunner" and meta["UNITS"] == "Mbits/s"
    values = [v["val"] for v in doc["raw_values"]["UDP upload"]]
    # iperf 2's -b 5M: 5 × 2^20 bit/s, in flent's Mbit/s
    assert len(values) == 15 and all(v == pytest.approx(5.24288, rel=0.03) for v in values)


def test_netperf_reports_as_netperf_does(write_scenario, tmp_path: Path) -> None:
    status, home = run(
        write_scenario,
        tmp_path,
        scenario(
            "h2: netserver",
            "h1: netperf -H 10.0.0.2 -l 2",
            "h1: netperf -P 0 -v 0 -D -0.5 -H 10.0.0.2 -t TCP_MAERTS -l 2 -Y CS1,CS1 -- -k "
            "THROUGHPUT,THROUGHPUT_UNITS,DIRECTION,REMOTE_SOCKET_TOS,PROTOCOL,REMOTE_CONG_CONTROL -K reno",
            "h1: netperf -H 10.0.0.2 -t TCP_RR -l 1",
            "h1: netperf -H 10.0.0.2 -t UDP_RR -l 1 -- -r 64,64",
        ),
    )
    assert status == 0
    log = (home / "h1" / "terminal.log").read_text()
    assert (
        "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 10.0.0.2 () port 0 AF_INET : "
        "demo\nRecv   Send    Send                          \n"
    ) in log
    m = re.search(r"^ 87380  16384  16384    (\d+\.\d\d)\s+(\d+\.\d\d)   $", log, re.MULTILINE)
    assert m is not None, log
    # the elapsed time runs until what the send buffer held is delivered (netperf waits for the
    # remote's close); the throughput is of a 20 Mbit/s link
    assert 2.0 <= float(m.group(1)) < 3.0 and 15 < float(m.group(2)) <= 20.0
    interims = re.findall(
        r"NETPERF_INTERIM_RESULT\[(\d+)\]=(\d+\.\d\d)\nNETPERF_UNITS\[\1\]=10\^6bits/s\n"
        r"NETPERF_INTERVAL\[\1\]=(\d\.\d\d\d)\nNETPERF_ENDING\[\1\]=(\d+\.\d{3})\n",
        log,
    )
    assert len(interims) >= 3 and all(float(i[2]) >= 0.5 for i in interims)
    assert [int(i[0]) for i in interims] == list(range(len(interims)))
    assert (
        "THROUGHPUT_UNITS=10^6bits/s\nDIRECTION=Receive\nREMOTE_SOCKET_TOS=0x20\nPROTOCOL=TCP\n"
        "REMOTE_CONG_CONTROL=reno\n" in log
    )
    rr = re.findall(
        r"MIGRATED (TCP|UDP) REQUEST/RESPONSE TEST .* : demo : first burst 0\nLocal /Remote\n"
        r"Socket Size   Request  Resp.   Elapsed  Trans.\n.*\n.*\n\n"
        r"16384  87380  (\d+)\s+(\d+)\s+(\d+\.\d\d)\s+(\d+\.\d\d)",
        log,
    )
    assert [(p, req, resp) for p, req, resp, _, _ in rr] == [("TCP", "1", "1"), ("UDP", "64", "64")]
    for _, _, _, _, rate in rr:  # one transaction per 20 ms round trip
        assert 40 < float(rate) <= 50


def test_netperf_without_a_netserver_fails_as_netperf_does(write_scenario, tmp_path: Path) -> None:
    status, home = run(write_scenario, tmp_path, scenario("h1: netperf -H 10.0.0.2 -l 1"))
    assert status != 0
    assert (
        "establish control: are you sure there is a netserver listening on 10.0.0.2 at port 12865?\n"
        "establish_control could not establish the control connection from 0.0.0.0 port 0 address family "
        "AF_INET to 10.0.0.2 port 12865 address family AF_INET\n"
    ) in (home / "h1" / "terminal.log").read_text()


def test_irtt_writes_its_json(write_scenario, tmp_path: Path) -> None:
    status, home = run(
        write_scenario,
        tmp_path,
        scenario(
            "h2: irtt server &",
            "h1: irtt client -Q -o irtt.json -d 2s -i 100ms --dscp=0xb8 10.0.0.2",
            "h1: irtt client -Q -o zipped -d 1s -i 200ms 10.0.0.2",
        ),
    )
    assert status == 0
    doc = json.loads((home / "h1" / "irtt.json").read_text())
    assert doc["config"]["params"]["dscp"] == 0xB8 and doc["config"]["remote_address"] == "10.0.0.2:2112"
    assert doc["stats"]["packets_sent"] == 20 and doc["stats"]["packets_received"] == 20
    rtts = [t["delay"]["rtt"] for t in doc["round_trips"]]
    # 20 ms plus two 102-byte frames; the first probe also waits for ARP (irtt's open handshake,
    # which would have resolved it first, is not modelled)
    assert all(20_000_000 <= r < 21_000_000 for r in rtts[1:]), rtts
    one_way = doc["round_trips"][0]["delay"]
    assert one_way["send"] + one_way["receive"] == one_way["rtt"]
    with gzip.open(home / "h1" / "zipped.json.gz", "rt") as f:
        assert json.load(f)["stats"]["packets_sent"] == 5


def test_fping_prints_its_lines_and_summary(write_scenario, tmp_path: Path) -> None:
    status, home = run(write_scenario, tmp_path, scenario("h1: fping -D -p 100 -c 5 10.0.0.2"))
    assert status == 0
    log = (home / "h1" / "terminal.log").read_text()
    lines = re.findall(
        r"^\[(\d+\.\d{5})\] 10\.0\.0\.2 : \[(\d)\], 64 bytes, (\d+\.\d) ms \((\d+\.\d) avg, 0% loss\)$",
        log,
        re.MULTILINE,
    )
    assert [int(x[1]) for x in lines] == [0, 1, 2, 3, 4]
    # receive instants a period apart (the first reply later: its request waited for ARP)
    assert float(lines[2][0]) - float(lines[1][0]) == pytest.approx(0.1, abs=1e-5)
    assert [x[2] for x in lines[1:]] == ["20.0"] * 4 and lines[0][2] == "40.0"
    assert re.search(
        r"^10\.0\.0\.2 : xmt/rcv/%loss = 5/5/0%, min/avg/max = 20\.0/24\.0/40\.0$", log, re.MULTILINE
    )


@pytest.mark.parametrize(
    ("line", "at", "message"),
    [
        ("flent rrrul -H 10.0.0.2", "rrrul", "flent: unknown test 'rrrul'"),
        ("flent tcp_nup -H 10.0.0.2", "tcp_nup", "Missing required test parameter: upload_streams"),
        ("flent rrul -H 10.0.0.2 -p nope -o x.png", "nope", "Unable to find plot configuration 'nope'"),
        ("flent rrul -H 10.0.0.2 --swap-up-down", "--swap", "flent --swap-up-down is not supported yet"),
        ("flent rrul -H 10.0.0.2 -l x", "x", "argument -l/--length: invalid int value: 'x'"),
        ("netperf -H 10.0.0.2 -t TCP_CRR", "TCP_CRR", "netperf -t TCP_CRR is not supported yet"),
        ("netperf -H 10.0.0.2 -- -k NOPE", "NOPE", "netperf output selector NOPE is not supported yet"),
        ("irtt client 10.0.0.2", "client", "irtt client's human-readable report is not supported yet"),
        ("irtt client -Q -d 1x 10.0.0.2", "1x", 'invalid argument "1x" for "d" flag'),
        ("fping 10.0.0.2", "fping", "fping without -c"),
        ("fping -c 3 -x 10.0.0.2", "-x", "fping -x is not supported yet"),
        ("curl http://10.0.0.1/", "curl", "curl's progress meter (without -s) is not supported yet"),
        ("curl -s -o f https://10.0.0.1/", "https", "https:// is not supported yet"),
        (
            "wget -O f http://10.0.0.1/",
            "wget",
            "wget's verbose report (with its progress bar) is not supported yet",
        ),
        ("python -m SimpleHTTPServer 99999", "99999", "invalid int value: '99999'"),
        ("python other.py", "other.py", "can't open file 'other.py'"),
        ("dd if=/dev/sda of=x bs=1 count=1", "if=", "only /dev/zero and /dev/urandom are modelled"),
    ],
)
def test_tool_errors_name_their_line_and_column(
    write_scenario, capsys: pytest.CaptureFixture[str], line: str, at: str, message: str
) -> None:
    path = write_scenario(scenario(f"h1: {line}"))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    text = path.read_text().splitlines()
    lineno = next(i for i, t in enumerate(text, 1) if line in t)
    col = text[lineno - 1].index(line) + line.index(at) + 1
    assert f"t.toml:{lineno}:{col}: error:" in err and message in err, err
