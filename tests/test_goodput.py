"""One definition of goodput wherever a run shows it: payload bytes received × 8 / the
receiver's interval, the bitrate of iperf3's receiver line. The console summary, summary.json,
the tool's own outputs (text receiver line, JSON ``end.sum_received``), the report, the tables
and ``compare`` agree for a run (UDP 15 Mbit/s into a 10 Mbit/s tbf, where the sender's and
the receiver's interval differ). And iperf3's UDP JSON per version: ``end.sum_sent`` and
``end.sum_received`` from iperf3 3.11 (esnet/iperf PR #1174; checked against a real 3.12)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from test_formats import UDP_CMD, UDP_RESULT

from bufferlab.cli import main
from bufferlab.formats import iperf3
from bufferlab.formats.iperf3 import common as iperf3_common
from bufferlab.outputs.compare import compare
from bufferlab.outputs.report import GOODPUT_NOTE
from bufferlab.outputs.results import load_run, scan_outputs
from bufferlab.profile import PROFILES
from conftest import TWO_HOSTS

REAL_3_12 = Path(__file__).parent / "data" / "iperf3-3.12"
CLIENTS = [
    "iperf3 -c 10.0.0.2 -u -b 15M -t 3 -J > udp.json",
    "iperf3 -c 10.0.0.2 -u -b 15M -t 3",
    "iperf3 -c 10.0.0.2 -t 3 -J > tcp.json",
    "iperf3 -c 10.0.0.2 -t 3",
]


def scenario(profile: str) -> str:
    cmds = ["admin: tc qdisc add dev s1-eth2 root tbf rate 10mbit burst 15k limit 150k", "h2: iperf3 -s",
            *(f"h1: {c}" for c in CLIENTS)]
    items = "".join(f"  {json.dumps(c)},\n" for c in cmds)
    return (f'name = "goodput"\nseed = 1\n[sim]\nprofile = "{profile}"\n{TWO_HOSTS}\n'
            f'[[part]]\nname = "p"\ncmds = [\n{items}]\n')


def text_receiver_mbps(log: str) -> list[float]:
    """The bitrate of every receiver summary line of a terminal.log, in Mbit/s."""
    out = []
    for m in re.finditer(r"sec\s+[\d.]+ [KMG]?Bytes\s+([\d.]+) ([KMG]?)bits/sec.*receiver$", log, re.M):
        out.append(float(m[1]) * {"": 1e-6, "K": 1e-3, "M": 1.0, "G": 1e3}[m[2]])
    return out


@pytest.mark.parametrize("profile", ["lab2019", "modern"])
def test_every_goodput_of_a_run_is_the_receiver_line(profile: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "goodput.toml"
    path.write_text(scenario(profile), encoding="utf-8")
    assert main(["run", str(path), "-o", str(tmp_path / "results"), "--no-progress"]) == 0
    console = capsys.readouterr()
    root = tmp_path / "results" / "goodput"
    summary = json.loads((root / "summary.json").read_text(encoding="utf-8"))
    rows = {r["command"]: r for r in summary["parts"][0]["results"]["iperf3"]}
    assert sorted(rows) == sorted(CLIENTS)
    goodput = {c: rows[c]["goodput_mbps"] for c in CLIENTS}
    # the point of the check: at 15 Mbit/s into 10 the receiver's interval outlasts the sender's
    assert 9.0 < goodput[CLIENTS[0]] < 9.8

    # the console summary prints summary.json's figure
    for c in CLIENTS:
        assert f"{c}: {goodput[c]:.2f} Mbit/s goodput" in console.out + console.err

    # iperf3's own outputs: the JSON receiver sums exactly, the text lines to their three digits
    udp = json.loads((root / "p/h1/udp.json").read_text(encoding="utf-8"))
    tcp = json.loads((root / "p/h1/tcp.json").read_text(encoding="utf-8"))
    assert round(tcp["end"]["sum_received"]["bits_per_second"] / 1e6, 2) == goodput[CLIENTS[2]]
    if profile == "modern":
        assert round(udp["end"]["sum_received"]["bits_per_second"] / 1e6, 2) == goodput[CLIENTS[0]]
    text = text_receiver_mbps((root / "p/h1/terminal.log").read_text(encoding="utf-8"))
    assert len(text) == 2
    for printed, c in zip(text, (CLIENTS[1], CLIENTS[3]), strict=True):
        digits = 2 if printed < 9.995 else 1 if printed < 99.95 else 0
        assert abs(printed - goodput[c]) <= 0.5 * 10 ** -digits + 0.005

    # the report, the tables and compare read the files: the same figures
    tests = scan_outputs(load_run(root)).iperf3
    clients = [t for t in tests if t.role == "client"]
    json_tests = {t.file: t for t in clients if t.source == "json"}
    assert round(json_tests["p/h1/udp.json"].goodput_bps / 1e6, 2) == goodput[CLIENTS[0]]
    assert round(json_tests["p/h1/tcp.json"].goodput_bps / 1e6, 2) == goodput[CLIENTS[2]]
    text_tests = [t for t in clients if t.source == "text"]
    assert [round(t.goodput_bps / 1e6, 6) for t in text_tests] == [round(v, 6) for v in text]
    html = (root / "report.html").read_text(encoding="utf-8")
    for c in (CLIENTS[0], CLIENTS[2]):
        assert f'<td class="">{goodput[c]:,.2f}</td>' in html
    assert GOODPUT_NOTE in html
    flows = pq.read_table(root / "tables/flows.parquet").to_pylist()
    table = {f["file"]: f["goodput_bps"] for f in flows if f["goodput_bps"] is not None}
    assert table["p/h1/udp.json"] == json_tests["p/h1/udp.json"].goodput_bps
    assert table["p/h1/tcp.json"] == json_tests["p/h1/tcp.json"].goodput_bps
    for name, c in (("udp.json", CLIENTS[0]), ("tcp.json", CLIENTS[2])):
        rows_cmp, _, _ = compare([root / "p/h1" / name], tmp_path / f"compare-{name}")
        assert round(rows_cmp[0]["goodput_mbps"], 2) == goodput[c]


# ---------------------------------------------------------------- iperf3's UDP JSON per version


def end_of(profile: object) -> dict:
    return json.loads(iperf3.client_json(UDP_RESULT, UDP_CMD, profile))["end"]


def test_udp_json_has_sum_sent_and_sum_received_from_3_11() -> None:
    real = json.loads((REAL_3_12 / "cli_udp.json").read_text(encoding="utf-8"))["end"]
    modern = end_of(PROFILES["modern"])
    assert PROFILES["modern"].iperf3_version == (3, 12)
    assert list(modern) == list(real)
    assert list(real) == ["streams", "sum", "sum_sent", "sum_received", "cpu_utilization_percent"]
    for key in ("sum_sent", "sum_received"):
        assert list(modern[key]) == list(real[key])
    at_3_11 = dataclasses.replace(PROFILES["lab2019"], iperf3_version=(3, 11))
    at_3_10 = dataclasses.replace(PROFILES["lab2019"], iperf3_version=(3, 10))
    assert "sum_received" in end_of(at_3_11)
    for older in (at_3_10, PROFILES["lab2019"]):
        end = end_of(older)
        assert "sum_sent" not in end and "sum_received" not in end


def test_udp_sum_sent_and_sum_received_are_the_text_summary_lines() -> None:
    """sum_sent = the sender line, sum_received = the receiver line (bytes, seconds, datagrams,
    loss, jitter), "sender" fixed true/false, bitrate = bytes * 8 / seconds."""
    modern = PROFILES["modern"]
    end = end_of(modern)
    sent, received = end["sum_sent"], end["sum_received"]
    assert (sent["sender"], received["sender"]) == (True, False)
    assert sent["bytes"] == end["sum"]["bytes"] == 338832
    assert sent["seconds"] == end["streams"][0]["udp"]["seconds"]
    assert (sent["jitter_ms"], sent["lost_packets"], sent["lost_percent"]) == (0, 0, 0)
    assert received["seconds"] == end["sum"]["seconds"]
    assert (received["lost_packets"], received["packets"]) == (5, 234)
    assert received["jitter_ms"] == end["sum"]["jitter_ms"]
    for s in (sent, received):
        assert s["bits_per_second"] == pytest.approx(s["bytes"] * 8 / s["seconds"], rel=1e-15)
    text = iperf3.client_text(UDP_RESULT, UDP_CMD, modern)
    line = [ln for ln in text.splitlines() if ln.endswith("receiver")][0]
    assert iperf3.unit_snprintf(received["bytes"], "A") in line
    assert iperf3.unit_snprintf(received["bits_per_second"] / 8, "a") in line
    assert f"{received['lost_packets']}/{received['packets']}" in line
    totals = iperf3.receiver_totals(UDP_RESULT, "udp")
    assert totals == (received["bytes"], received["seconds"])
    assert iperf3.goodput_bps(*totals) == received["bits_per_second"]


def test_server_udp_json_has_the_sums_too() -> None:
    real = json.loads((REAL_3_12 / "srv_udp.json").read_text(encoding="utf-8"))["end"]
    assert list(real)[:4] == ["streams", "sum", "sum_sent", "sum_received"]
    assert real["sum_received"]["sender"] is False and real["sum_sent"]["sender"] is True


def key_paths(doc: object, path: str = "") -> list[str]:
    """Every key of a JSON document (parsed with object_pairs_hook=list, so repeated keys
    stay), in order, with its path; a list contributes its first element."""
    out: list[str] = []
    if isinstance(doc, list) and doc and all(isinstance(p, tuple) for p in doc):
        for k, v in doc:
            out += [f"{path}/{k}", *key_paths(v, f"{path}/{k}")]
    elif isinstance(doc, list) and doc:
        out += key_paths(doc[0], path + "[]")
    return out


def documents(text: str) -> list[object]:
    dec, i, out = json.JSONDecoder(object_pairs_hook=list), 0, []
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        doc, i = dec.raw_decode(text, i)
        out.append(doc)
    return out


def test_modern_profile_json_has_real_iperf3_3_12s_keys_in_order(tmp_path: Path) -> None:
    """Client UDP/TCP/-P 2/-R and server UDP documents: the same keys, repeated ones included,
    in the same order as Debian's iperf3 3.12 (tests/data/iperf3-3.12); the TCP server's start."""
    cmds = ["h2: iperf3 -s -J > srv.json &", "h1: iperf3 -c 10.0.0.2 -t 2 -J -u -b 10M > cli_udp.json",
            "h1: iperf3 -c 10.0.0.2 -t 2 -J > cli_tcp.json",
            "h1: iperf3 -c 10.0.0.2 -t 2 -J -P 2 > cli_p2.json",
            "h1: iperf3 -c 10.0.0.2 -t 2 -J -R > cli_rev.json"]
    items = "".join(f"  {json.dumps(c)},\n" for c in cmds)
    (tmp_path / "k.toml").write_text(f'name = "k"\nseed = 1\n[sim]\nprofile = "modern"\n{TWO_HOSTS}\n'
                                     f'[[part]]\nname = "p"\ncmds = [\n{items}]\n', encoding="utf-8")
    assert main(["run", "-q", "--no-report", "-o", str(tmp_path / "r"), str(tmp_path / "k.toml")]) == 0
    part = tmp_path / "r" / "k" / "p"
    server = documents((part / "h2" / "srv.json").read_text(encoding="utf-8"))
    ours = {name: documents((part / "h1" / f"{name}.json").read_text(encoding="utf-8"))[0]
            for name in ("cli_udp", "cli_tcp", "cli_p2", "cli_rev")}
    ours["srv_udp"] = server[0]
    for name, doc in ours.items():
        real = documents((REAL_3_12 / f"{name}.json").read_text(encoding="utf-8"))[0]
        assert key_paths(doc) == key_paths(real), name
    real_tcp = documents((REAL_3_12 / "srv_tcp.json").read_text(encoding="utf-8"))[0]
    assert key_paths(dict(server[1])["start"]) == key_paths(dict(real_tcp)["start"])


def test_target_bitrate_per_version() -> None:
    """iperf_on_connect: from 3.11 always (and test_start too); 3.7-3.10 only TCP with -b."""
    for version, on_connect, in_test_start in (((3, 7), True, False), ((3, 10), True, False),
                                               ((3, 11), True, True), ((3, 6), False, False)):
        profile = dataclasses.replace(PROFILES["lab2019"], iperf3_version=version)
        assert iperf3_common._on_connect_rate(profile, "tcp", 5_000_000) is on_connect, version
        assert iperf3_common._has_target_bitrate(profile) is in_test_start, version
    lab = PROFILES["lab2019"]
    assert not iperf3_common._on_connect_rate(lab, "udp", 1_000_000) and not iperf3_common._on_connect_rate(lab, "tcp", 0)
