"""Oracle: the real Linux tbf on a switch port, against bufferlab's simulation
of the same configuration.

As in Mininet, the shaping qdisc sits on a port of a switch between the two
hosts (here a Linux bridge in a third namespace), not on the sending host's
own interface: there, Linux would make the UDP socket block on its full send
buffer instead of dropping — a host-local backpressure bufferlab does not
model (docs/models.md).

Needs root, `ip netns` and Debian's `iperf3` (.ci/run installs it); skipped,
with the reason, when any is missing. The namespaces use addresses that exist
only inside them and are removed afterwards.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

from bufferlab import load_scenario, run_scenario
from conftest import TWO_HOSTS

RATE = "10mbit"
BURST = "15k"
LIMIT = "150k"
OFFERED = "15M"
SECONDS = 4


def _sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, check=check, timeout=60)


def _unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root for network namespaces"
    for tool in ("ip", "tc", "iperf3"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    probe = f"blp{uuid.uuid4().hex[:6]}"
    if _sh("ip", "netns", "add", probe, check=False).returncode != 0:
        return "network namespaces are not available here"
    _sh("ip", "netns", "del", probe, check=False)
    return None


@pytest.fixture(scope="module")
def kernel_pair():
    """Hosts a and b, each joined by a veth to a bridge in namespace s; yields
    (a, b, s, the bridge port facing b)."""
    why = _unavailable()
    if why:
        pytest.skip(why)
    tag = uuid.uuid4().hex[:6]
    a, b, sw = f"bla{tag}", f"blb{tag}", f"bls{tag}"
    for ns in (a, b, sw):
        _sh("ip", "netns", "add", ns)
    try:
        _sh("ip", "-n", sw, "link", "add", "br0", "type", "bridge")
        _sh("ip", "-n", sw, "link", "set", "br0", "up")
        for ns, addr, port in ((a, "10.77.0.1/24", "s1-eth1"), (b, "10.77.0.2/24", "s1-eth2")):
            _sh("ip", "link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", sw)
            _sh("ip", "-n", ns, "addr", "add", addr, "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            _sh("ip", "-n", sw, "link", "set", port, "master", "br0")
            _sh("ip", "-n", sw, "link", "set", port, "up")
        yield a, b, sw, "s1-eth2"
    finally:
        for ns in (a, b, sw):
            _sh("ip", "netns", "del", ns, check=False)


def _real_run(a: str, b: str, sw: str, port: str) -> tuple[float, str]:
    _sh("ip", "netns", "exec", sw, "tc", "qdisc", "add", "dev", port, "root", "tbf",
        "rate", RATE, "burst", BURST, "limit", LIMIT)
    server = subprocess.Popen(["ip", "netns", "exec", b, "iperf3", "-s", "-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        out = _sh("ip", "netns", "exec", a, "iperf3", "-c", "10.77.0.2", "-u", "-b", OFFERED,
                  "-t", str(SECONDS), "-J").stdout
    finally:
        server.wait(timeout=30)
    tc = _sh("ip", "netns", "exec", sw, "tc", "-s", "qdisc", "show", "dev", port).stdout
    return _received_bps(json.loads(out)), tc


def _received_bps(doc: dict) -> float:
    """Payload the receiver got (sent − lost datagrams) over the receiver's time."""
    s = doc["end"]["sum"]
    return (s["bytes"] - s["lost_packets"] * doc["start"]["test_start"]["blksize"]) * 8 / s["seconds"]


def _simulated_run(write_scenario, tmp_path) -> float:
    path = write_scenario(f"""
name = "kernel oracle"
{TWO_HOSTS}[[part]]
name = "p"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root tbf rate {RATE} burst {BURST} limit {LIMIT}",
  "h2: iperf3 -s -1",
  "h1: iperf3 -c 10.0.0.2 -u -b {OFFERED} -t {SECONDS} -J > out.json",
]
""")
    run_scenario(load_scenario(path), results_root=tmp_path, progress=False)
    return _received_bps(json.loads((tmp_path / "t/p/h1/out.json").read_text()))


def test_udp_through_tbf_matches_the_real_kernel(kernel_pair, write_scenario, tmp_path):
    real_bps, tc_text = _real_run(*kernel_pair)
    print(f"real {real_bps:.0f} bit/s")
    sim_bps = _simulated_run(write_scenario, tmp_path)
    print(f"simulated {sim_bps:.0f} bit/s")
    # Both must deliver the shaped rate in payload terms: 10 Mbit/s of 1490-byte frames.
    expected = 10e6 * 1448 / 1490
    assert sim_bps == pytest.approx(expected, rel=0.02)
    assert real_bps == pytest.approx(sim_bps, rel=0.03), (real_bps, sim_bps, tc_text)
    assert re.search(r"dropped [1-9]\d*", tc_text), "the real tbf drops the excess too"
