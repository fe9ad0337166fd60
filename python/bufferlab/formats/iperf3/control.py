"""What the control connection's exchange decides in both outputs: the ``test_start``
object (iperf_api.c ``iperf_on_test_start``), the error document (``iperf_json_finish``), the
server's reporting interval (from the client's parameters)."""

from __future__ import annotations

from typing import Any

from ...commands.iperf3 import Iperf3Client
from .. import cjson
from .common import _has_target_bitrate, _version_string


def _error_document(profile: Any, error: str, title: str | None) -> str:
    doc: dict[str, Any] = {
        "start": {"connected": [], "version": _version_string(profile),
                  "system_info": profile.system_info},
        "intervals": [],
        "end": {},
        "error": error,
    }
    if title:
        doc["title"] = title
    return cjson.dumps(doc)


def _test_start(protocol: str, num_streams: int, blksize: int, omit: int, duration: int,
                nbytes: int, blocks: int, tos: int, rate: int, profile: Any,
                reverse: bool = False) -> dict[str, Any]:
    ts: dict[str, Any] = {
        "protocol": protocol.upper(),
        "num_streams": int(num_streams),
        "blksize": int(blksize),
        "omit": int(omit),
        "duration": int(duration),
        "bytes": int(nbytes),
        "blocks": int(blocks),
        "reverse": 1 if reverse else 0,
        "tos": int(tos),
    }
    if _has_target_bitrate(profile):
        ts["target_bitrate"] = int(rate)
    return ts


def _client_test_start(client: Iperf3Client, profile: Any) -> dict[str, Any]:
    """``test_start`` as the client fills it from its own settings (``iperf_on_test_start``)."""
    return _test_start(client.protocol, client.parallel, client.blksize, client.omit_s,
                       client.duration_s, client.bytes or 0, client.blocks or 0, client.tos,
                       client.rate_bps, profile, client.reverse)


def _server_interval_s(result: dict[str, Any]) -> float:
    return int(result.get("interval_ns", 1_000_000_000)) / 1e9
