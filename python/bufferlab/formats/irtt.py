"""irtt 0.9 client JSON (``irtt client -o FILE``; docs/semantics/formats.md §14).

Read in irtt's sources (heistp/irtt; nothing copied):

* ``irtt_client.go`` ``writeResultJSON`` -- Go's ``json.Encoder`` with four-space indentation
  (keys in struct order, map keys sorted, a final newline); ``-o -`` writes to stdout,
  ``-o NAME.json`` plain, any other name gzipped (``.json.gz`` added or substituted);
* ``result.go`` -- the document: ``version``, ``system_info``, ``config``, ``send_err`` /
  ``receive_err`` (left out when nil), ``stats``, ``round_trips``; each round trip's
  ``seqno``, ``lost`` (the strings ``false``, ``true``, ``true_down``, ``true_up``),
  ``timestamps`` (client and server receive/send as ``{wall, monotonic}``, empty objects when
  absent; ``late``), ``delay`` and ``ipdv`` (maps: ``receive``, ``rtt``, ``send`` when valid);
  the statistics computed in ``newResult`` (loss percentages, expected packets from the span of
  sends and the interval, send and receive rates);
* ``recorder.go`` ``DurationStats`` -- ``total``, ``n``, ``min``, ``max``, then ``mean``,
  ``median`` (only when computed: rtt and delays and IPDVs), ``stddev``, ``variance`` (sample
  variance, Welford), all integer nanoseconds (Go truncates the float mean);
* ``bitrate.go`` -- ``{"bps", "string"}`` with ``bps``/``Kbps``/``Mbps`` … text;
* ``params.go``, ``cconfig.go``, ``version.go``, ``sysinfo.go`` -- the config and version keys.

What a simulation cannot have is fixed: send-call and timer-error statistics are zero (the
simulated clock sends exactly on time), the server processing time is zero, ``wait`` is the
time waited after the last send (irtt's ``3x4s`` waiter: three times the largest RTT, 4 s
with no reply), the OS is ``linux``, the Go version ``go1.18.1`` (Ubuntu 22.04's irtt 0.9.0).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Probe", "IrttRun", "irtt_json", "bitrate_text", "IRTT_VERSION"]

IRTT_VERSION = "0.9.0"


@dataclass
class Probe:
    seq: int
    sent_ns: int  # simulated
    server_ns: int | None = None  # server receive (= its send) instant, simulated
    recv_ns: int | None = None  # back at the client, simulated
    late: bool = False


@dataclass
class IrttRun:
    local: str  # "10.0.0.1:43210"
    remote: str  # "10.0.0.2:2112"
    supplied_remote: str  # as typed
    duration_ns: int
    interval_ns: int
    length: int  # payload bytes per packet (at least irtt's header for these options)
    dscp: int
    start_ns: int
    end_ns: int
    epoch_s: float  # wall clock of simulated time 0
    hostname: str
    probes: list[Probe] = field(default_factory=list)
    duplicates: int = 0
    server_received: int = 0
    server_start_ns: int = 0
    fill: str = "none"
    supplied_length: int = 0


class _Stats:
    """irtt's DurationStats: running mean and sum of squares (Welford), median set afterwards."""

    def __init__(self) -> None:
        self.n = 0
        self.total = 0
        self.min = 0
        self.max = 0
        self.mean = 0.0
        self.s = 0.0
        self.median: float | None = None

    def push(self, d: int) -> None:
        if self.n == 0:
            self.min = self.max = self.total = d
        else:
            self.min = min(self.min, d)
            self.max = max(self.max, d)
            self.total += d
        self.n += 1
        old = self.mean
        self.mean += (d - old) / self.n
        self.s += (d - old) * (d - self.mean)

    def doc(self) -> dict[str, Any]:
        var = self.s / (self.n - 1) if self.n > 1 else 0.0
        out: dict[str, Any] = {
            "total": self.total,
            "n": self.n,
            "min": self.min,
            "max": self.max,
            "mean": int(self.mean),
        }
        if self.median is not None and int(self.median) != 0:
            out["median"] = int(self.median)
        out["stddev"] = int(math.sqrt(var))
        out["variance"] = int(var)
        return out


def _median(values: list[int]) -> float | None:
    if not values:
        return None
    v = sorted(values)
    n = len(v)
    return float(v[n // 2]) if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0


def bitrate_text(bps: int) -> str:
    if bps < 1000:
        return f"{bps} bps"
    for limit, div, unit, digits in (
        (1e6, 1e3, "Kbps", 1),
        (1e9, 1e6, "Mbps", 2),
        (1e12, 1e9, "Gbps", 3),
        (1e15, 1e12, "Tbps", 3),
    ):
        if bps < limit:
            return f"{bps / div:.{digits}f} {unit}"
    return f"{bps / 1e15:.3f} Pbps"


def _bitrate(nbytes: int, span_ns: int) -> dict[str, Any]:
    bps = int(nbytes * 8 / (span_ns / 1e9)) if span_ns > 0 else 0
    return {"bps": bps, "string": bitrate_text(bps)}


def _params(run: IrttRun, length: int) -> dict[str, Any]:
    return {
        "proto_version": 1,
        "duration": run.duration_ns,
        "interval": run.interval_ns,
        "length": length,
        "received_stats": "both",
        "stamp_at": "both",
        "clock": "both",
        "dscp": run.dscp,
        "server_fill": "",
    }


def _config(run: IrttRun, supplied: bool) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "local_address": ":0" if supplied else run.local,
        "remote_address": run.supplied_remote if supplied else run.remote,
        "open_timeouts": "1s,2s,4s,8s",
        "params": _params(run, run.supplied_length if supplied else run.length),
        "loose": False,
        "ip_version": "IPv4+6" if supplied else "IPv4",
        "df": 0,
        "ttl": 0,
        "timer": "comp",
        "time_source": "go",
        "waiter": "3x4s",
        "filler": run.fill,
        "fill_one": False,
        "server_fill": "",
        "thread_lock": False,
    }
    return doc


def _wall(run: IrttRun, t_ns: int) -> int:
    return int(round(run.epoch_s * 1e9)) + t_ns


def irtt_json(run: IrttRun) -> str:
    """The JSON document irtt writes with ``-o``."""
    rtt, sd, rd = _Stats(), _Stats(), _Stats()
    ipdv, ipdv_s, ipdv_r = _Stats(), _Stats(), _Stats()
    trips: list[dict[str, Any]] = []
    rtts: list[int] = []
    sds: list[int] = []
    rds: list[int] = []
    ipdvs: list[int] = []
    ipdv_ss: list[int] = []
    ipdv_rs: list[int] = []
    prev: Probe | None = None
    received = [p for p in run.probes if p.recv_ns is not None]
    for p in run.probes:
        client: dict[str, Any] = {
            "receive": {},
            "send": {"wall": _wall(run, p.sent_ns), "monotonic": p.sent_ns - run.start_ns},
        }
        server: dict[str, Any] = {"receive": {}, "send": {}}
        delay: dict[str, int] = {}
        dv: dict[str, int] = {}
        if p.recv_ns is not None:
            client["receive"] = {"wall": _wall(run, p.recv_ns), "monotonic": p.recv_ns - run.start_ns}
            r = p.recv_ns - p.sent_ns
            delay["rtt"] = r
            rtt.push(r)
            rtts.append(r)
            if p.server_ns is not None:
                stamp = {"wall": _wall(run, p.server_ns), "monotonic": p.server_ns - run.server_start_ns}
                server = {"receive": stamp, "send": dict(stamp)}
                delay["send"] = p.server_ns - p.sent_ns
                delay["receive"] = p.recv_ns - p.server_ns
                sd.push(delay["send"])
                rd.push(delay["receive"])
                sds.append(delay["send"])
                rds.append(delay["receive"])
            if prev is not None and prev.recv_ns is not None and prev.seq == p.seq - 1:
                dv["rtt"] = r - (prev.recv_ns - prev.sent_ns)
                ipdv.push(abs(dv["rtt"]))
                ipdvs.append(abs(dv["rtt"]))
                if p.server_ns is not None and prev.server_ns is not None:
                    dv["send"] = (p.server_ns - p.sent_ns) - (prev.server_ns - prev.sent_ns)
                    dv["receive"] = (p.recv_ns - p.server_ns) - (prev.recv_ns - prev.server_ns)
                    ipdv_s.push(abs(dv["send"]))
                    ipdv_r.push(abs(dv["receive"]))
                    ipdv_ss.append(abs(dv["send"]))
                    ipdv_rs.append(abs(dv["receive"]))
        lost = "false" if p.recv_ns is not None else ("true_down" if p.server_ns is not None else "true_up")
        trips.append(
            {
                "seqno": p.seq,
                "lost": lost,
                "timestamps": {"client": client, "server": server, "late": p.late},
                "delay": dict(sorted(delay.items())),
                "ipdv": dict(sorted(dv.items())),
            }
        )
        prev = p
    for stats, values in (
        (rtt, rtts),
        (sd, sds),
        (rd, rds),
        (ipdv, ipdvs),
        (ipdv_s, ipdv_ss),
        (ipdv_r, ipdv_rs),
    ):
        stats.median = _median(values)
    sent = len(run.probes)
    n_recv = len(received) + run.duplicates
    first_send = run.probes[0].sent_ns if run.probes else run.start_ns
    last_send = run.probes[-1].sent_ns if run.probes else run.start_ns
    expected = (last_send - first_send) // run.interval_ns + 1 if run.probes else 0
    expected = max(expected, sent)
    recv_times = sorted(p.recv_ns for p in received if p.recv_ns is not None)
    span_recv = recv_times[-1] - recv_times[0] if recv_times else 0
    loss = 100.0 * (sent - len(received)) / sent if received else 100.0
    up = 100.0 * (sent - run.server_received) / sent if run.server_received else 0.0
    down = 100.0 * (run.server_received - n_recv) / run.server_received if run.server_received else 0.0
    max_rtt = max(rtts) if rtts else 0
    wait = 3 * max_rtt if rtts else 4_000_000_000
    call = _Stats()
    stats: dict[str, Any] = {
        "start_time": {"wall": _wall(run, run.start_ns), "monotonic": 0},
        "send_call": call.doc(),
        "timer_error": call.doc(),
        "rtt": rtt.doc(),
        "send_delay": sd.doc(),
        "receive_delay": rd.doc(),
        "server_packets_received": run.server_received,
        "bytes_sent": sent * run.length,
        "bytes_received": n_recv * run.length,
        "duplicates": run.duplicates,
        "late_packets": sum(1 for p in run.probes if p.late),
        "wait": wait,
        "duration": run.end_ns - run.start_ns,
        "expected_packets_sent": expected,
        "packets_sent": sent,
        "packets_received": n_recv,
        "packet_loss_percent": loss,
        "upstream_loss_percent": up,
        "downstream_loss_percent": down,
        "duplicate_percent": 100.0 * run.duplicates / n_recv if n_recv else 0.0,
        "late_packets_percent": 100.0 * stats_late(run) / n_recv if n_recv else 0.0,
        "ipdv_send": ipdv_s.doc(),
        "ipdv_receive": ipdv_r.doc(),
        "ipdv_round_trip": ipdv.doc(),
        "server_processing_time": _server_time(len(received)),
        "timer_err_percent": 0.0,
        "timer_misses": expected - sent,
        "timer_miss_percent": 100.0 * (expected - sent) / expected if expected else 0.0,
        "send_rate": _bitrate(sent * run.length, last_send - first_send),
        "receive_rate": _bitrate(n_recv * run.length, span_recv),
    }
    config = _config(run, supplied=False)
    config["supplied"] = _config(run, supplied=True)
    doc = {
        "version": {"irtt": IRTT_VERSION, "protocol": 1, "json_format": 1},
        "system_info": {"os": "linux", "cpus": 2, "go_version": "go1.18.1", "hostname": run.hostname},
        "config": config,
        "stats": stats,
        "round_trips": trips,
    }
    return _go_json(doc) + "\n"


def stats_late(run: IrttRun) -> int:
    return sum(1 for p in run.probes if p.late)


def _server_time(n: int) -> dict[str, Any]:
    s = _Stats()
    for _ in range(n):
        s.push(0)
    return s.doc()


def _go_float(v: float) -> str:
    """Go's encoding/json float64 text: the shortest repr, integers without a point, exponent
    form only outside [1e-6, 1e21)."""
    if v == int(v) and abs(v) < 1e21:
        return str(int(v))
    text = repr(v)
    if "e" in text:
        mant, exp = text.split("e")
        sign = exp[0] if exp[0] in "+-" else "+"
        digits = exp.lstrip("+-").lstrip("0") or "0"
        if abs(v) >= 1e-6:
            return f"{v:.17g}"
        return f"{mant}e{sign}{digits.zfill(2)}"
    return text


def _go_json(value: Any, indent: int = 0) -> str:
    pad = "    " * (indent + 1)
    end = "    " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{pad}{json.dumps(k)}: {_go_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{end}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{pad}{_go_json(v, indent + 1)}" for v in value) + f"\n{end}]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if value is None:
        return "null"
    return json.dumps(value)
