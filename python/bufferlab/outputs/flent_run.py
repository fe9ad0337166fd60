"""The data file a ``flent`` command writes (``*.flent.gz``, version 4), its summary, and the
parsing of the tools' outputs into flent's series (docs/semantics/formats.md §7).

Flent runs its tools and parses their output (``runners.py``: ``NetperfDemoRunner.parse``,
``IrttRunner.parse``, ``PingRunner`` with its two regular expressions, ``IperfCsvRunner.parse``);
the functions here apply the same rules, restated, to the outputs bufferlab's netperf, irtt, fping
and iperf write, so the simulated run passes through the same text a real one does. Aggregation
follows ``aggregators.py`` ``TimeseriesAggregator`` (T0 = the earliest first sample of any series;
⌈(t_max − T0)/STEP⌉ grid points; :func:`bufferlab.outputs.flent.resample` for the rules) and the
computed series ``runners.py`` ``ComputingRunner`` (per grid point over the sources that have a
value; ``SERIES_META`` of a computed series carries the same function of its sources'
``MEAN_VALUE`` and their ``UNITS``). The summary is ``formatters.py`` ``SummaryFormatter``:
series sorted by name, the mean (the series' ``MEAN_VALUE`` when the tool reported one, else the
mean of the raw samples), the median and 99th percentile of the raw samples (of the grid values
for a computed series, printed N/A there), and the number of data points.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..commands.flent_tests import FlentTest, sources_of
from ..safefs import open_write
from .flent import resample

__all__ = [
    "Measured",
    "parse_netperf_demo",
    "parse_irtt",
    "parse_ping_lines",
    "parse_iperf_csv",
    "build_document",
    "write_document",
    "summary_text",
    "series_means",
    "data_filename",
]


@dataclass
class Measured:
    """One measured series: raw samples (``t`` epoch seconds, ``val``, extras) and its metadata.
    ``results`` holds the per-key samples of a tool with several results (irtt for VoIP)."""

    raw: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    results: dict[str, list[tuple[float, float]]] | None = None


def parse_netperf_demo(stdout: str, test: str) -> Measured:
    """``NetperfDemoRunner.parse``: the keyval interim results, skipping a sample whose interval is
    more than ten times longer or shorter than the running average (EWMA, α 0.5), and the
    end-of-test keys as metadata."""
    data: dict[str, Any] = {}
    for line in stdout.splitlines():
        k, sep, v = line.strip().partition("=")
        if not sep:
            continue
        if k.endswith("]"):
            name, _, _ = k.partition("[")
            data.setdefault(name, []).append(v)
        else:
            data[k] = v
    out = Measured()
    avg = None
    for dur_s, t_s, v_s in zip(
        data.get("NETPERF_INTERVAL", []),
        data.get("NETPERF_ENDING", []),
        data.get("NETPERF_INTERIM_RESULT", []),
        strict=False,
    ):
        dur, t, value = float(dur_s), float(t_s), float(v_s)
        if test == "UDP_RR":
            value = 1000.0 / value if value else math.inf
        avg = dur if avg is None else avg
        if avg / 10 < dur < avg * 10:
            out.raw.append({"dur": dur, "t": t, "val": value})
            avg = 0.5 * avg + 0.5 * dur
    if "THROUGHPUT" in data:
        mean = float(data["THROUGHPUT"])
        m = out.meta
        m["MEAN_VALUE"] = (1000.0 / mean if mean else None) if test == "UDP_RR" else mean
        m["ELAPSED_TIME"] = float(data.get("ELAPSED_TIME", 0))
        m["UPSTREAM_TOS"] = int(data.get("LOCAL_SOCKET_TOS", "0"), 0)
        m["DOWNSTREAM_TOS"] = int(data.get("REMOTE_SOCKET_TOS", "0"), 0)
        if data.get("PROTOCOL") == "TCP":
            m["TCP_MSS"] = int(data.get("TRANSPORT_MSS", 0))
            send = data.get("DIRECTION") == "Send"
            side, other = ("LOCAL", "REMOTE") if send else ("REMOTE", "LOCAL")
            m["CONG_CONTROL"] = data.get(f"{side}_CONG_CONTROL")
            retrans = data.get(f"{side}_TRANSPORT_RETRANS")
            m["TCP_RETRANSMIT"] = retrans if send else int(retrans or 0)
            m["SEND_SIZE"] = int(data.get(f"{side}_SEND_SIZE", -1))
            m["RECV_SIZE"] = int(data.get(f"{other}_RECV_SIZE", -1))
            m["BYTES_SENT"] = int(data.get(f"{side}_BYTES_SENT", -1))
            m["BYTES_RECVD"] = int(data.get(f"{other}_BYTES_RECVD", -1))
            m["DATA_TOS"] = m["UPSTREAM_TOS" if send else "DOWNSTREAM_TOS"]
    return out


def parse_irtt(text: str, sample_every: float = 0.0, multi: bool = False) -> Measured:
    """``IrttRunner.parse``: per round trip ``seq``, and for a reply ``t`` (client receive),
    ``val`` (RTT ms), one-way delays and IPDVs; a lost probe keeps ``lost``/``lost_dir`` and its
    send time. With ``multi`` (VoIP) the rtt, delay, jitter and loss results at most every
    ``sample_every`` seconds."""
    doc = json.loads(text)
    stats = doc["stats"]

    def ms(v: float) -> float:
        return v / 1e6

    out = Measured(
        meta={
            "RTT_MEAN": ms(stats["rtt"]["mean"]),
            "RTT_MEDIAN": ms(stats["rtt"].get("median", 0)),
            "RTT_MAX": ms(stats["rtt"]["max"]),
            "RTT_MIN": ms(stats["rtt"]["min"]),
            "OWD_UP_MEAN": ms(stats["send_delay"]["mean"]),
            "OWD_DOWN_MEAN": ms(stats["receive_delay"]["mean"]),
            "IPDV_MEAN": ms(stats["ipdv_round_trip"]["mean"]),
            "IPDV_UP_MEAN": ms(stats["ipdv_send"]["mean"]),
            "IPDV_DOWN_MEAN": ms(stats["ipdv_receive"]["mean"]),
        }
    )
    out.meta["MEAN_VALUE"] = out.meta["RTT_MEAN"]
    out.meta["PACKETS_SENT"] = stats["packets_sent"]
    out.meta["PACKETS_RECEIVED"] = stats["packets_received"]
    out.meta["PACKET_LOSS_RATE"] = stats["packet_loss_percent"] / 100.0
    out.meta["SEND_RATE"] = stats["send_rate"]["bps"] / 1e6
    out.meta["RECEIVE_RATE"] = stats["receive_rate"]["bps"] / 1e6
    results: dict[str, list[tuple[float, float]]] = {"rtt": [], "delay": [], "jitter": [], "loss": []}
    next_sample = 0.0
    lost = 0
    for pkt in doc["round_trips"]:
        dp: dict[str, Any] = {"seq": pkt["seqno"]}
        if pkt["lost"] == "false":
            dp["t"] = pkt["timestamps"]["client"]["receive"]["wall"] / 1e9
            dp["val"] = ms(pkt["delay"]["rtt"])
            dp["owd_up"] = ms(pkt["delay"]["send"])
            dp["owd_down"] = ms(pkt["delay"]["receive"])
            if all(k in pkt["ipdv"] for k in ("send", "receive", "rtt")):
                dp["ipdv_up"] = ms(pkt["ipdv"]["send"])
                dp["ipdv_down"] = ms(pkt["ipdv"]["receive"])
                dp["ipdv"] = ms(pkt["ipdv"]["rtt"])
            if dp["t"] >= next_sample:
                results["rtt"].append((dp["t"], dp["val"]))
                results["delay"].append((dp["t"], dp["owd_up"]))
                results["jitter"].append((dp["t"], abs(dp.get("ipdv_up", 0))))
                results["loss"].append((dp["t"], lost))
                lost = 0
                next_sample = dp["t"] + sample_every
        else:
            dp["lost"] = True
            dp["lost_dir"] = pkt["lost"].replace("true_", "").replace("true", "") or None
            dp["t"] = pkt["timestamps"]["client"]["send"]["wall"] / 1e9
            lost += 1
        out.raw.append(dp)
    if multi:
        out.results = results
    return out


_PING_RES = (
    re.compile(
        r"^\[(?P<t>[0-9]+\.[0-9]+)\](?:.*icmp_.eq=(?P<seq>[0-9]+))?.*time=(?P<val>[0-9]+(?:\.[0-9]+)?) ms$"
    ),
    re.compile(
        r"^\[(?P<t>[0-9]+\.[0-9]+)\].*:(?: \[(?P<seq>[0-9]+)\])?.*, (?P<val>[0-9]+(?:\.[0-9]+)?) ms \(.*\)$"
    ),
)
_PING_META = re.compile(
    r"^.*min/avg/max(?:/mdev)? = (?P<MIN_VALUE>[0-9]+(?:\.[0-9]+)?)/"
    r"(?P<MEAN_VALUE>[0-9]+(?:\.[0-9]+)?)/(?P<MAX_VALUE>[0-9]+(?:\.[0-9]+)?).*$"
)


def parse_ping_lines(text: str) -> Measured:
    """``PingRunner`` (a ``RegexpRunner``): a sample per ``-D``-stamped reply line (ping's or
    fping's), metadata from the ``min/avg/max`` line (fping prints it on stderr, which flent
    parses too)."""
    out = Measured()
    for line in text.splitlines():
        for rx in _PING_RES:
            m = rx.match(line)
            if m:
                item: dict[str, Any] = {"t": float(m.group("t")), "val": float(m.group("val"))}
                if m.group("seq") is not None:
                    item["seq"] = float(m.group("seq"))
                out.raw.append(item)
                break
        m2 = _PING_META.match(line)
        if m2:
            out.meta.update({k: float(v) for k, v in m2.groupdict().items()})
    return out


def parse_iperf_csv(text: str) -> Measured:
    """``IperfCsvRunner.parse``: a sample per CSV line of at least nine fields (its time
    ``YYYYMMDDHHMMSS.mmm``, UTC here; its bandwidth, field 9, in Mbit/s) but the last, which is
    the whole test's and becomes ``MEAN_VALUE``."""
    out = Measured()
    rows = []
    for line in text.splitlines():
        parts = line.split(",")
        if len(parts) < 9 or parts[0] == "time":
            continue
        try:
            sec, mil = parts[0].split(":")[-1].split(".")
            t = datetime.strptime(sec, "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp() + float(mil) / 1000
            rows.append((t, float(parts[8]) / 1e6))
        except ValueError:
            continue
    for t, v in rows[:-1]:
        out.raw.append({"t": t, "val": v})
    if rows:
        out.meta["MEAN_VALUE"] = rows[-1][1]
    return out


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def data_filename(name: str, epoch_s: float, title: str | None) -> str:
    when = datetime.fromtimestamp(epoch_s, tz=UTC).replace(tzinfo=None)
    base = f"{name}-{when.isoformat(timespec='microseconds').replace(':', '')}"
    if title:
        base += "." + re.sub(r"[^A-Za-z0-9-]", "_", title)
    return base + ".flent.gz"


def _compute(kind: str, values: list[float]) -> float | None:
    if kind == "sum":
        return math.fsum(values)
    if kind == "average":
        return math.fsum(values) / len(values)
    if kind == "fairness":
        sq = math.fsum(v * v for v in values)
        return math.fsum(values) ** 2 / (len(values) * sq) if sq else None
    return None


def build_document(
    test: FlentTest,
    measured: dict[str, Measured],
    *,
    local_host: str,
    title: str | None,
    note: str,
    version: str,
    started_s: float,
) -> dict[str, Any]:
    """The data file's dict: samples resampled onto the step grid, computed series, metadata."""
    series: dict[str, list[tuple[float, float]]] = {}
    for name, m in measured.items():
        if m.results is not None:
            for key, pts in m.results.items():
                series[f"{name}::{key}"] = pts
        else:
            series[name] = [(float(r["t"]), float(r["val"])) for r in m.raw if "val" in r]
    firsts = [pts[0][0] for pts in series.values() if pts]
    lasts = [pts[-1][0] for pts in series.values() if pts]
    t0 = min(firsts) if firsts else started_s
    steps = max(1, math.ceil((max(lasts) - t0) / test.step)) if lasts else 1
    x_values = [round(test.step * k, 6) for k in range(steps)]
    results: dict[str, list[float | None]] = {
        name: resample([(round(t - t0, 9), v) for t, v in pts], steps, test.step)
        for name, pts in series.items()
    }
    raw: dict[str, list[dict[str, Any]]] = {}
    meta: dict[str, dict[str, Any]] = {}
    order = list(test.data_sets)
    # measured series first, then the computed ones in their order (flent computes after the run)
    for name, ds in sorted(test.data_sets.items(), key=lambda kv: kv[1].computed):
        idx = order.index(name)
        if name in measured:
            raw[name] = measured[name].raw
            meta[name] = {
                "RUNNER": _RUNNER_CLASS.get(ds.runner, "ProcessRunner"),
                "IDX": idx,
                "UNITS": ds.units,
                **measured[name].meta,
            }
        elif ds.computed:
            raw[name] = []
            meta[name] = {"RUNNER": _RUNNER_CLASS[ds.runner], "IDX": idx, "COMPUTED_LATE": False}
            keys = (
                sources_of(test, ds) if ds.runner != "diff_min" else [s for s in ds.apply_to.expand(results)]
            )  # type: ignore[union-attr]
            keys = [k for k in keys if k in results]
            if ds.runner == "diff_min":
                col = results.get(keys[0], []) if keys else []
                present = [v for v in col if v is not None]
                low = min(present) if present else 0.0
                results[name] = [None if v is None else v - low for v in col] if present else [None] * steps
            else:
                cols = [results[k] for k in keys]
                results[name] = (
                    [
                        _compute(ds.runner, [v for v in row if v is not None])
                        if any(v is not None for v in row)
                        else None
                        for row in zip(*cols, strict=True)
                    ]
                    if cols
                    else [None] * steps
                )
                means = [meta[k]["MEAN_VALUE"] for k in keys if meta.get(k, {}).get("MEAN_VALUE") is not None]
                if means:
                    meta[name]["MEAN_VALUE"] = _compute(ds.runner, means)
            units = sorted({meta[k]["UNITS"] for k in keys if "UNITS" in meta.get(k, {})})
            if units:
                meta[name]["UNITS"] = units[0] if len(units) == 1 else units
        else:  # a "null" runner: no data of its own (VoIP::bitrate without D-ITG)
            raw[name] = []
            meta[name] = {"RUNNER": "NullRunner", "IDX": idx, "UNITS": ds.units}
    metadata: dict[str, Any] = {
        "NAME": test.name,
        "HOST": test.hosts[0],
        "HOSTS": test.hosts,
        "TIME": _iso(started_s),
        "T0": _iso(t0),
        "LOCAL_HOST": local_host,
        "TITLE": title or "",
        "NOTE": note,
        "LENGTH": int(test.length),
        "TOTAL_LENGTH": int(test.total_length),
        "STEP_SIZE": test.step,
        "TEST_PARAMETERS": test.parameters,
        "FLENT_VERSION": version,
        "IP_VERSION": 4,
        "BATCH_NAME": None,
        "BATCH_TIME": None,
        "BATCH_TITLE": None,
        "BATCH_UUID": None,
        "DATA_FILENAME": data_filename(test.name, started_s, title),
        "HTTP_GETTER_URLLIST": None,
        "HTTP_GETTER_DNS": None,
        "HTTP_GETTER_WORKERS": None,
        "SERIES_META": meta,
        "FAILED_RUNNERS": sum(1 for n in measured if not series.get(n) and measured[n].results is None),
    }
    return {"metadata": metadata, "raw_values": raw, "results": results, "version": 4, "x_values": x_values}


_RUNNER_CLASS = {
    "netperf": "NetperfDemoRunner",
    "udp_rtt": "UdpRttRunner",
    "ping": "PingRunner",
    "iperf_udp": "IperfCsvRunner",
    "voip": "VoipRunner",
    "average": "AverageRunner",
    "sum": "SumRunner",
    "fairness": "FairnessRunner",
    "diff_min": "DiffMinRunner",
}


def write_document(doc: dict[str, Any], path: Path) -> Path:
    """``json.dumps(indent=2, sort_keys=True)`` gzipped (mtime 0, so the bytes are the run's)."""
    data = json.dumps(doc, indent=2, sort_keys=True).encode("utf-8")
    with open_write(path, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
        gz.write(data)
    return path


def _reduce(values: list[float], how: str) -> float | None:
    if not values:
        return None
    v = sorted(values)
    if how == "median":
        n = len(v)
        return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2
    k = (len(v) - 1) * 0.99
    lo = math.floor(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def series_means(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per series: mean, median, 99th percentile, data points and units, as flent's summary."""
    out: dict[str, dict[str, Any]] = {}
    meta = doc["metadata"].get("SERIES_META", {})
    for name in sorted(doc["results"]):
        raw = [float(i["val"]) for i in doc["raw_values"].get(name) or [] if i.get("val") is not None]
        grid = [float(v) for v in doc["results"][name] if v is not None]
        values = raw or grid
        m = meta.get(name, {})
        mean = m.get("MEAN_VALUE")
        n = len(doc["results"][name])  # flent counts the grid points when the tool reported a mean
        if not isinstance(mean, (int, float)) or not mean:
            mean = math.fsum(values) / len(values) if values else None
            n = len(values)
        computed = "COMPUTED_LATE" in m
        out[name] = {
            "mean": mean,
            "median": None if computed else _reduce(values, "median"),
            "p99": None if computed else _reduce(values, "p99"),
            "n": n,
            "units": m.get("UNITS") if isinstance(m.get("UNITS"), str) else "",
        }
    return out


def summary_text(doc: dict[str, Any]) -> str:
    """flent's default output (the summary formatter) for one data file."""
    md = doc["metadata"]
    when = str(md["TIME"])[:19].replace("T", " ")
    text = f"\nSummary of {md['NAME']} test run from {when}"
    if md.get("TITLE"):
        text += f"\n  Title: '{md['TITLE']}'"
    text += "\n\n"
    stats = series_means(doc)
    if not stats:
        return text
    width = 12
    name_w = max(len(n) for n in stats)
    unit_w = max(len(s["units"]) for s in stats.values())
    head = f"{'avg':>{width}s} {'median':>{width}s} {'99th %':>{width}s}"
    text += f"{'':{name_w + 3}s} {head} {'# data pts':>{width + unit_w}s}\n"
    for name, s in stats.items():
        text += f" {name:<{name_w}s} : "
        if s["mean"] is None:
            text += "No data.\n"
            continue
        text += f"{s['mean']:{width}.2f} "
        text += f"{s['median']:{width}.2f} " if s["median"] is not None else f"{'N/A':>{width}} "
        text += (
            f"{s['p99']:{width}.2f} {s['units']}"
            if s["p99"] is not None
            else f"{'N/A':>{width}} {s['units']}"
        )
        text += f"{s['n']:{width + unit_w - len(s['units'])}d}\n"
    return text
