"""``[sim] max_tcp_header``: the kernel build's MAX_TCP_HEADER (docs/semantics/tcp.md §6.2;
crates/bufferlab-core/src/tcp/endpoint/sendmsg.rs has the send buffer's hand-computed vectors)."""

from __future__ import annotations

import pytest

from bufferlab import load_scenario
from bufferlab.cli import main
from bufferlab.real.preflight import read_plan
from bufferlab.run.scheduler import Runner
from bufferlab.scenario.topology import build_topology
from conftest import TWO_HOSTS

PART = """
[[part]]
name = "p"
cmds = ["h2: iperf3 -s &", "h1: iperf3 -c 10.0.0.2 -t 1"]
"""


def scenario(sim: str) -> str:
    return f'name = "t"\nseed = 1\n[sim]\n{sim}\n{TWO_HOSTS}{PART}'


@pytest.mark.parametrize("value", ["200", "0", "true", '"256"', "512"])
def test_a_value_no_kernel_build_has_names_the_key_the_builds_and_how_to_tell(write_scenario, capsys, value):
    assert main(["check", str(write_scenario(scenario(f"max_tcp_header = {value}")))]) == 2
    err = capsys.readouterr().err
    assert "t.toml:4:" in err and "[sim] max_tcp_header: expected 192, 256 or 320 bytes" in err, err
    assert "max_tcp_header = 256" in err and "tb = 4608 x cwnd" in err, err


def test_unset_leaves_the_engine_its_default_and_a_value_reaches_it(write_scenario):
    def option(sim: str) -> int | None:
        sc = load_scenario(write_scenario(scenario(sim)))
        return build_topology(sc).engine_config["options"].get("max_tcp_header")

    assert option("") is None
    assert option("max_tcp_header = 256") == 256


def test_a_kernel_run_notes_that_the_kernel_has_its_own_build(write_scenario):
    for sim, noted in (("", False), ("max_tcp_header = 256", True)):
        r = Runner(load_scenario(write_scenario(scenario(sim))))
        r.check()
        plan = read_plan(r.sc, r.topo, r.lines)
        assert plan.problems == []
        notes = [n for n in plan.notes if "max_tcp_header" in n]
        assert bool(notes) == noted, plan.notes
        if noted:
            assert "max_tcp_header = 256" in notes[0] and "MAX_TCP_HEADER it was built with" in notes[0]
