"""The scenario's ``[capture]`` and ``[trace]`` tables (observation of a run).

::

    [capture]                    # packet capture of whole interfaces, whole run
    interfaces = ["r1-eth1"]     # engine interface names, or "all"
    snaplen = 128                # bytes per frame kept (default 262144, as tcpdump)
    format = "pcap"              # "pcap" (µs), "pcap_ns" or "pcapng"
    filter = "udp"               # optional pcap-filter subset (see commands/capture.py)

    [trace]                      # exact per-change queue series, per part
    queues = ["s1-eth2"]         # or "all" (every interface with a qdisc)
    min_interval = "1ms"         # optional: one record of each kind per interval (all traces,
                                 # plot_q.sh's too); not given: every change of the listed
                                 # queues, and 1 ms for the ones only plot_q.sh watches

Names are checked against the topology by the runner (it knows the
interfaces); everything else here, with the key's position on error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import CommandError
from ..units import parse_duration_ns
from .source import SourceMap, check_keys, error_at, key_error

CAPTURE_KEYS = {"interfaces", "snaplen", "format", "filter", "segment_gso"}
TRACE_KEYS = {"queues", "min_interval"}
FORMATS = {"pcap": ".pcap", "pcap_ns": ".pcap", "pcapng": ".pcapng"}


@dataclass
class CaptureOptions:
    #: engine interface names, or ["all"]
    interfaces: list[str]
    snaplen: int
    format: str
    filter: str
    line: int | None
    #: write GSO aggregates as their segments (default: one large frame each)
    segment_gso: bool = False


@dataclass
class TraceOptions:
    #: engine interface names, or ["all"]
    queues: list[str]
    #: None: not given (exact for the listed queues, plot_q.sh's default for its own)
    min_interval_ns: int | None
    line: int | None


def _names(src: SourceMap, table: dict, key: str, where: str, line: int | None) -> list[str]:

    v = table.get(key, [])
    if v == "all":
        return ["all"]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise key_error(src, f"{where} {key} must be a list of interface names or \"all\"", key, line,
                       expected=f'e.g. {key} = ["s1-eth2"] or {key} = "all"')
    return list(v)


def build_capture(raw: Any, src: SourceMap) -> CaptureOptions | None:

    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise error_at(src, "[capture] must be a table", key="capture")
    line = src.header_line("[capture]", 0)
    check_keys(src, raw, CAPTURE_KEYS, "[capture]", line=line)
    interfaces = _names(src, raw, "interfaces", "[capture]", line)
    snaplen = raw.get("snaplen", 262144)
    if not isinstance(snaplen, int) or isinstance(snaplen, bool) or not 1 <= snaplen <= 262144:
        raise key_error(src, "[capture] snaplen must be an integer from 1 to 262144", "snaplen", line,
                       expected="e.g. snaplen = 128 (headers only)")
    fmt = raw.get("format", "pcap")
    if not isinstance(fmt, str) or fmt not in FORMATS:
        raise key_error(src, f"[capture] format {fmt!r} is not supported", "format", line,
                       expected=", ".join(sorted(FORMATS)))
    flt = raw.get("filter", "")
    if not isinstance(flt, str):
        raise key_error(src, "[capture] filter must be a string", "filter", line,
                       expected='e.g. filter = "udp"')
    segment_gso = raw.get("segment_gso", False)
    if not isinstance(segment_gso, bool):
        raise key_error(src, "[capture] segment_gso must be true or false", "segment_gso", line)
    return CaptureOptions(interfaces, snaplen, fmt, flt, line, segment_gso)


def build_trace(raw: Any, src: SourceMap) -> TraceOptions | None:

    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise error_at(src, "[trace] must be a table", key="trace")
    line = src.header_line("[trace]", 0)
    check_keys(src, raw, TRACE_KEYS, "[trace]", line=line)
    queues = _names(src, raw, "queues", "[trace]", line)
    mi = raw.get("min_interval")
    try:
        if mi is None:
            min_ns = None
        elif isinstance(mi, str):
            min_ns = parse_duration_ns(mi, 0)
        elif isinstance(mi, (int, float)) and not isinstance(mi, bool) and mi >= 0:
            min_ns = round(mi * 1e9)
        else:
            raise ValueError
    except (ValueError, CommandError):
        raise key_error(src, f"[trace] min_interval {mi!r} is not a duration", "min_interval", line,
                       expected='a duration such as "1ms" (0 = every change)') from None
    return TraceOptions(queues, min_ns, line)
