"""MiniEdit .mn files: load, convert, run (issue 15, item 7).

tests/data/lab.mn holds every key MiniEdit 2.x writes (mininet/examples/miniedit.py
saveTopology: hosts, switches, controllers, links with opts, application), in its
layout (sort_keys, indent 4).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bufferlab import load_scenario, run_scenario
from bufferlab.cli import main
from bufferlab.errors import ScenarioError
from bufferlab.scenario.mn_file import load_mn, to_scenario_toml

LAB = Path(__file__).parent / "data" / "lab.mn"


def _rtts(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"time=([\d.]+) ms", text)]


def test_a_miniedit_file_gives_mininets_nodes_addresses_and_link_options():
    t = load_mn(LAB)
    assert (t.hosts, t.switches) == (["h1", "h2", "h3"], ["s1", "s2"])
    # h1 has no ip: ipBase + nodeNum; h2's has no prefix: ipBase's; h3's is used as written
    assert t.host_ips == {"h1": "10.0.0.1/8", "h2": "10.0.0.2/8", "h3": "10.0.0.3/8"}
    assert t.default_routes == {"h2": "10.0.0.254"}
    bottleneck = t.links[2]
    assert (bottleneck.src, bottleneck.dest, bottleneck.bw, bottleneck.delay, bottleneck.max_queue_size) == (
        "s1", "s2", 100.0, "10ms", 100)
    assert t.warnings == [], "every key MiniEdit writes is known; empty unmodelled ones do not warn"


def _scenario(tmp_path: Path, topology: str) -> Path:
    shutil.copy(LAB, tmp_path / "lab.mn")
    path = tmp_path / "s.toml"
    path.write_text(f'name = "s"\nseed = 1\n[topology]\n{topology}\n[[part]]\nname = "p"\n'
                    'cmds = ["h1: ping -c 3 10.0.0.3"]\n')
    return path


def test_load_convert_and_run_give_the_same_network(tmp_path):
    direct = _scenario(tmp_path, 'mn = "lab.mn"')
    run_scenario(load_scenario(direct), results_root=tmp_path / "a", progress=False)
    converted = tmp_path / "converted.toml"
    assert main(["convert", str(tmp_path / "lab.mn"), "-o", str(converted)]) == 0
    text = converted.read_text()
    assert text.count('a = "') == 4 and 'delay = "10ms"' in text and 'a_ip = "10.0.0.1/8"' in text
    sc = load_scenario(converted)
    run_scenario(sc, results_root=tmp_path / "b", progress=False)
    a = (tmp_path / "a/s/p/h1/terminal.log").read_text()
    b = (tmp_path / "b/converted/ping/h1/terminal.log").read_text()
    assert _rtts(a) == _rtts(b) and len(_rtts(a)) == 3
    # TCLink delay 10 ms on both ends of s1-s2: the RTT is at least 2 x 10 ms
    assert min(_rtts(a)) >= 20.0


def _bad(tmp_path: Path, mutate) -> str:
    doc = json.loads(LAB.read_text())
    mutate(doc)
    p = tmp_path / "bad.mn"
    p.write_text(json.dumps(doc, sort_keys=True, indent=4, separators=(",", ": ")))
    with pytest.raises(ScenarioError) as e:
        load_mn(p)
    return str(e.value)


def test_malformed_files_get_file_line_and_column(tmp_path):
    p = tmp_path / "broken.mn"
    p.write_text('{\n    "hosts": [\n        {"opts": {"hostname": "h1"}},\n    ]\n}\n')
    with pytest.raises(ScenarioError) as e:
        load_mn(p)
    assert re.search(r"broken\.mn:4:5: error: not a MiniEdit file: invalid JSON", str(e.value)), str(e.value)

    def unknown_end(doc):
        doc["links"][3]["dest"] = "h9"
    msg = _bad(tmp_path, unknown_end)
    line = next(i for i, t in enumerate((tmp_path / "bad.mn").read_text().splitlines(), 1) if '"h9"' in t)
    assert f"bad.mn:{line}:" in msg and "dest 'h9' is not a host or switch" in msg and "one of h1, h2" in msg

    def bad_ip(doc):
        doc["hosts"][0]["opts"]["ip"] = "10.0.0.300"
    assert "ip '10.0.0.300' is not an IPv4 address" in _bad(tmp_path, bad_ip)

    def router(doc):
        doc["switches"][1]["opts"]["switchType"] = "legacyRouter"
    assert "legacyRouter is not supported yet" in _bad(tmp_path, router)

    def far_gateway(doc):
        doc["hosts"][1]["opts"]["defaultRoute"] = "192.168.1.1"
    assert "outside the host's subnet" in _bad(tmp_path, far_gateway)

    def bad_delay(doc):
        doc["links"][2]["opts"]["delay"] = "ten ms"
    assert "delay 'ten ms' is not a time" in _bad(tmp_path, bad_delay)


def test_unknown_and_unmodelled_keys_warn_with_their_position(tmp_path):
    doc = json.loads(LAB.read_text())
    doc["hosts"][0]["opts"]["startCommand"] = "iperf -s &"
    doc["links"][0]["opts"]["colour"] = "red"
    p = tmp_path / "w.mn"
    p.write_text(json.dumps(doc, sort_keys=True, indent=4, separators=(",", ": ")))
    warnings = load_mn(p).warnings
    assert len(warnings) == 2
    assert any(re.search(r"w\.mn:\d+:\d+: host 'h1': startCommand .* not modelled", w) for w in warnings)
    assert any("link 1: unknown key 'colour' ignored" in w for w in warnings)
    # a scenario using it shows them with the commands' warnings
    shutil.copy(p, tmp_path / "lab.mn")
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[topology]\nmn = "lab.mn"\n[[part]]\nname = "p"\ncmds = ["h1: sleep 1"]\n')
    assert load_scenario(path).warnings == [w.replace("w.mn", "lab.mn") for w in warnings]


def test_mn_replaces_the_node_lists(tmp_path):
    path = _scenario(tmp_path, 'mn = "lab.mn"\nhosts = ["h1"]')
    with pytest.raises(ScenarioError, match=r"s\.toml:5:1: error: \[topology\] mn replaces hosts"):
        load_scenario(path)
    missing = _scenario(tmp_path, 'mn = "nothere.mn"')
    with pytest.raises(ScenarioError, match="cannot read the MiniEdit file"):
        load_scenario(missing)


def test_the_converted_scenario_names_the_source_and_checks(tmp_path):
    text = to_scenario_toml(load_mn(LAB))
    assert text.startswith("# Converted from lab.mn")
    out = tmp_path / "c.toml"
    out.write_text(text)
    assert main(["check", str(out)]) == 0


@pytest.mark.parametrize(("key", "value", "message"), [
    ("bw", True, "link option bw = true must be a non-negative number"),
    ("max_queue_size", 1.5, "link option max_queue_size = 1.5 must be a positive integer"),
    ("max_queue_size", False, "link option max_queue_size = false must be a positive integer"),
    ("loss", "nan", 'link option loss = "nan" must be a non-negative number'),
])
def test_link_options_are_never_silently_rounded(tmp_path, key, value, message):
    def odd(doc):
        doc["links"][2]["opts"][key] = value
    assert message in _bad(tmp_path, odd)
    assert main(["convert", str(tmp_path / "bad.mn"), "-o", str(tmp_path / "bad.toml")]) == 2
    assert not (tmp_path / "bad.toml").exists()


@pytest.mark.parametrize(("content", "message"), [
    ("\ufeff{}".encode("utf-16"), "not a MiniEdit file: UTF-16 text"),
    (b'{"version": "2", "hosts": [\xca\xfe]}',
     "bin.mn:1:28: error: not a MiniEdit file: byte 0xca is not UTF-8"),
    (b"[" * 100_000 + b"]" * 100_000, "not a MiniEdit file: JSON nested too deep"),
    (b'{"version": ' + b"9" * 5000 + b"}", "not a MiniEdit file: a number with too many digits"),
])
def test_convert_refuses_what_is_not_a_miniedit_file(tmp_path, capsys, content, message):
    p = tmp_path / "bin.mn"
    p.write_bytes(content)
    assert main(["convert", str(p), "-o", "-"]) == 2
    assert message in capsys.readouterr().err


def test_convert_reads_at_most_16_mib(capsys):
    assert main(["convert", "/dev/zero", "-o", "-"]) == 2
    assert "/dev/zero: error: not a MiniEdit file: more than 16777216 bytes" in capsys.readouterr().err


# ---------------------------------------------------------------- found by tools/fuzz_inputs.py (mnfile)


def _two_links(doc):
    # h3 on a second switch as well: Mininet addresses only its first interface, a scenario
    # needs every host interface addressed
    doc["links"].append({"src": "s1", "dest": "h3", "opts": {}})


@pytest.mark.parametrize(("edit", "message"), [
    (lambda doc: doc["links"][2]["opts"].update(delay="10ns"),
     "link 3: delay '10ns' is not a time (invalid time \"10ns\""),
    (lambda doc: doc["links"][2]["opts"].update(delay="2153435313596"),
     "link 3: delay '2153435313596' is not a time"),
    (lambda doc: doc["links"][2]["opts"].update(bw=65535),
     "link 3: bw 65535: Mininet accepts 0 < bw <= 1000"),
    (lambda doc: doc["links"][2]["opts"].update(delay="", jitter="1ms"), "link 3: jitter needs a delay"),
    (lambda doc: doc["links"][2].update(src={"opts": {}}), "link 3: src {'opts': {}} is not a host or switch"),
    (lambda doc: doc.update(links=[]), "no host of the drawing is linked to the network"),
    (_two_links,
     "the drawing converts to a scenario bufferlab refuses: h3's interface h3-eth1 needs an address"),
    (lambda doc: doc["hosts"][0]["opts"].update(nodeNum=float("-inf")),
     "host 'h1': nodeNum -inf is not an integer"),  # json.dumps writes -Infinity; int() overflowed
    (lambda doc: (doc["hosts"][0].update(number=float("inf")), doc["hosts"][0]["opts"].pop("nodeNum")),
     "host 'h1': number inf is not an integer"),
    (lambda doc: doc["links"][2]["opts"].update(max_queue_size=2**71),
     "the drawing converts to a scenario bufferlab refuses: link s1-s2: its options give the invalid tc "
     "line"),
])
def test_convert_writes_only_scenarios_that_check_accepts(tmp_path, capsys, edit, message):
    """tools/fuzz_inputs.py (campaign 5): convert wrote scenarios `check` then refused (a delay
    in ns, bw over 1000, jitter without delay, no linked host, a host with two links, a netem
    limit beyond tc's), and a link end of another type was a TypeError. Now each is an error
    naming the .mn file, and nothing is written."""
    doc = json.loads(LAB.read_text())
    edit(doc)
    p = tmp_path / "bad.mn"
    p.write_text(json.dumps(doc, indent=4))
    assert main(["convert", str(p), "-o", str(tmp_path / "bad.toml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{p}") and message in err and "Traceback" not in err, err
    assert not (tmp_path / "bad.toml").exists()


def test_convert_writes_link_options_exactly(tmp_path):
    """format(v, "g") wrote max_queue_size 7870757 as 7.87076e+06, a float check refused."""
    doc = json.loads(LAB.read_text())
    doc["links"][2]["opts"] = {"max_queue_size": 7870757, "bw": 12.345678, "delay": "5ms"}
    p = tmp_path / "exact.mn"
    p.write_text(json.dumps(doc))
    assert main(["convert", str(p)]) == 0
    text = (tmp_path / "exact.toml").read_text()
    assert "max_queue_size = 7870757" in text and "bw = 12.345678" in text
    assert main(["check", str(tmp_path / "exact.toml")]) == 0
