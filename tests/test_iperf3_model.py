"""One model of the iperf3 client (issue 12): ``Iperf3Client`` is what the
parser returns, what the engine receives (``to_request``) and what the output
echoes. The engine owns the request's schema (app/iperf3.rs ``ClientSpec``,
``bufferlab._core.schema()``); here the model's fields that cross into Rust
cover exactly its ``iperf3_client`` properties, so a field added on one side
only fails.

Run: PYTHONPATH=python python -m pytest tests/test_iperf3_model.py -q
"""

from __future__ import annotations

import dataclasses
import json

import jsonschema

from bufferlab import _core
from bufferlab.commands.iperf3 import Iperf3Client, parse_iperf3
from bufferlab.commands.shell import parse_shell
from bufferlab.errors import Diagnostics
from bufferlab.profile import PROFILES

SCHEMA = json.loads(_core.schema())
LAB = PROFILES["lab2019"]
UDP_LINE = "iperf3 -c 10.0.0.2 -u -b 2M/5 -l 1000 -t 5 -O 1 -i 0.5 -S 0x20 --pacing-timer 500"
TCP_LINE = "iperf3 -c 10.0.0.3 -n 1M -P 2 -R -w 256K -C bbr"
HOST_TCP = {"profile": "lab2019", "congestion": "cubic"}


def client(line: str) -> Iperf3Client:
    parsed = parse_iperf3(parse_shell(line)[0].commands[0].words, Diagnostics(), LAB)
    assert isinstance(parsed, Iperf3Client)
    return parsed


def schema_properties() -> set[str]:
    (spec,) = [alt for alt in SCHEMA["$defs"]["AppSpec"]["oneOf"]
               if alt["properties"]["kind"].get("const") == "iperf3_client"]
    return set(spec["properties"])


def sent_fields() -> dict[str, str]:
    """Model field -> the request key it feeds."""
    fields = dataclasses.fields(Iperf3Client)
    return {f.name: f.metadata["request"] for f in fields if "request" in f.metadata}


def test_the_fields_sent_cover_exactly_the_schema_properties() -> None:
    assert set(sent_fields().values()) | {"kind"} == schema_properties()


def test_the_request_has_exactly_the_keys_the_fields_name() -> None:
    udp = client(UDP_LINE).to_request(LAB, HOST_TCP)
    tcp = client(TCP_LINE).to_request(LAB, HOST_TCP)
    assert set(udp) | set(tcp) == set(sent_fields().values()) | {"kind"}


def test_requests_match_the_schema() -> None:
    validator = jsonschema.Draft202012Validator({"$ref": "#/$defs/AppSpec", "$defs": SCHEMA["$defs"]})
    for line in (UDP_LINE, TCP_LINE, "iperf3 -c 10.0.0.2", "iperf3 -c 10.0.0.2 -u"):
        assert list(validator.iter_errors(client(line).to_request(LAB, HOST_TCP))) == [], line


def test_request_in_the_engines_units() -> None:
    udp = client(UDP_LINE).to_request(LAB, HOST_TCP)
    assert udp == {
        "kind": "iperf3_client", "dst": "10.0.0.2", "port": 5201, "protocol": "udp",
        "rate_bps": 2_000_000, "blksize": 1000, "duration_ns": 5_000_000_000, "bytes": None,
        "omit_ns": 1_000_000_000, "interval_ns": 500_000_000, "tos": 0x20,
        "pacing": {"timer_us": 500, "burst": 5, "send_ns": 6000, "slack_ns": 50_000},
    }
    tcp = client(TCP_LINE).to_request(LAB, HOST_TCP)
    assert {k: tcp[k] for k in ("rate_bps", "blksize", "duration_ns", "bytes", "parallel", "window",
                                "reverse")} == {
        "rate_bps": 0, "blksize": 131072, "duration_ns": 0, "bytes": 1 << 20, "parallel": 2,
        "window": 256 << 10, "reverse": True}
    # -C and -w on top of the host's socket settings (iperf_tcp_connect)
    assert tcp["tcp"] == {"profile": "lab2019", "congestion": "bbr", "sndbuf": 256 << 10,
                          "rcvbuf": 256 << 10}
    assert HOST_TCP == {"profile": "lab2019", "congestion": "cubic"}, "the host's settings are not changed"


def test_until_interrupted_is_minus_t_0_without_minus_n() -> None:
    assert client("iperf3 -c 10.0.0.2 -t 0").until_interrupted
    assert not client("iperf3 -c 10.0.0.2 -n 1M").until_interrupted  # -n: no time limit, ends
    assert not client("iperf3 -c 10.0.0.2").until_interrupted
