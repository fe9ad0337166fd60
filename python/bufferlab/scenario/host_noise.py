"""Hosts' timing distributions (docs/models.md "Host timing noise"; the engine's
crates/bufferlab-core/src/host_noise.rs):

- ``[sim] host_noise`` and ``[hosts.X] noise``: how late each host's stack gets to the packets
  it receives;
- ``[sim] reader_wakeup`` and ``[hosts.X] reader_wakeup``: how long a reading process (iperf3's
  data reader) takes to run once its socket is readable; the read then takes everything that
  arrived meanwhile;
- ``[sim] app_setup`` and ``[hosts.X] app_setup``: a server program's own work between its last
  stream's arrival and the test's start (iperf3's server: reading the cookies, setting the
  streams up, then TEST_START and TEST_RUNNING).

``[sim] host_noise = { median = "6us", p99 = "400us", max = "1.5ms" }`` gives every host a
latency drawn from a lognormal distribution with that median and 99th percentile, clamped at
``max``; ``[hosts.X] noise = { ... }`` sets one host's, ``noise = false`` makes one host
punctual. ``reader_wakeup`` and ``app_setup`` take the same forms. Unset (the default), hosts are punctual and
no draw is made.
"""

from __future__ import annotations

from typing import Any

from ..errors import CommandError
from ..units import parse_duration_ns
from .source import SourceMap, error_at, key_error, suggest

NOISE_KEYS = ("median", "p99", "max")
EXAMPLE = '{ median = "6us", p99 = "400us", max = "1.5ms" }'
#: a latency beyond a second is no host at all (the engine's host costs are capped alike)
MAX_NOISE_NS = 1_000_000_000


def parse_noise(value: Any, src: SourceMap, where: str, key: str, line: int | None) -> dict[str, int] | None:
    """One distribution in the engine's terms (``median_ns``, ``p99_ns``, ``max_ns``); ``false``: none."""
    expected = f"{key} = {EXAMPLE}, or {key} = false"
    if value is False:
        return None
    if not isinstance(value, dict):
        raise key_error(src, f"{where} {key} must be a table or false", key, line, expected=expected)
    for k in value:
        if k not in NOISE_KEYS:
            raise key_error(src, f"unknown key {k!r} in {where} {key}", key, line, expected=expected,
                            suggestion=suggest(str(k), set(NOISE_KEYS)))
    out: dict[str, int] = {}
    for k in NOISE_KEYS:
        if k not in value:
            raise key_error(src, f"{where} {key} needs {k}", key, line, expected=expected)
        v = value[k]
        try:
            if not isinstance(v, str) or not v:
                raise CommandError(f"{v!r} is not a duration")
            ns = parse_duration_ns(v)
        except CommandError as e:
            raise key_error(src, f"{where} {key} {k}: {e.message}", key, line,
                            expected='a duration such as "6us" or "1.5ms"') from None
        if not 0 < ns <= MAX_NOISE_NS:
            raise key_error(src, f"{where} {key} {k} must be more than 0 and at most 1s", key, line,
                            expected=expected)
        out[f"{k}_ns"] = ns
    if not out["median_ns"] <= out["p99_ns"] <= out["max_ns"]:
        raise key_error(src, f"{where} {key}: needs median <= p99 <= max", key, line, expected=expected)
    return out


def build_host_noise(
    sim: dict, hosts_table: Any, src: SourceMap, hosts: list[str],
    sim_key: str = "host_noise", host_key: str = "noise",
) -> dict[str, dict[str, int]]:
    """Each host's distribution: ``[sim] <sim_key>`` for all, ``[hosts.X] <host_key>`` per host."""
    default = parse_noise(sim[sim_key], src, "[sim]", sim_key,
                          src.header_line("[sim]", 0)) if sim_key in sim else None
    out = {h: default for h in hosts if default is not None}
    for host, table in (hosts_table.items() if isinstance(hosts_table, dict) else ()):
        if not isinstance(table, dict) or host_key not in table:
            continue
        line = src.header_line(f"[hosts.{host}]", 0)
        if host not in hosts:
            raise error_at(src, f"[hosts.{host}] {host_key}: {host} is a router; host timing is modelled "
                           "for hosts only (not supported yet for routers)", line=line)
        spec = parse_noise(table[host_key], src, f"[hosts.{host}]", host_key, line)
        if spec is None:
            out.pop(host, None)
        else:
            out[host] = spec
    return out
