"""The compact result summary of a part, gathered from the engine: printed after
the part by ``bufferlab run`` (not with ``-q``, text in outputs/result_lines.py),
stored as the part's ``results`` in summary.json and shown at the top of
report.html, from the same numbers.

- ``iperf3``: every iperf3 client that ended during the part: goodput =
  payload bytes the receiver got × 8 / the receiver's interval, the figures of
  iperf3's ``receiver`` line (formats/iperf3.py ``receiver_totals``), in Mbit/s
  rounded to 0.01; TCP retransmits; UDP datagrams lost.
- ``ping``: every ping that ended during the part: min/avg/max RTT of the
  replies (ms, 0.001) and the loss in % (0.01) of the requests sent.
- ``fct``: every ``flows -c`` that ended during the part: per size bucket
  (outputs/fct.py: < 100 KB, 100 KB–10 MB, ≥ 10 MB) the flows that arrived, those
  that completed, and the mean, median and 99th percentile of their completion
  times in ms (0.001).
- ``qdiscs``: every interface whose qdiscs dropped packets in the part or whose
  queue was traced in it: its qdisc chain, drops by reason and the peak backlog
  of its whole qdisc tree from the part's queue trace (``plot_q.sh`` or ``[trace]
  queues``; null without a trace: the engine keeps no high-water mark).

An application belongs to the part during which it ended (a server started in
part 1 and interrupted by the scenario's end is in the last part's summary),
named by the line it was typed on.
"""

from __future__ import annotations

from typing import Any

from ..formats.iperf3 import goodput_bps, receiver_totals
from ..outputs.fct import fct_rows, fct_summary
from .context import AppRecord
from .engine import Engine


def _iperf3_row(a: AppRecord, r: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"node": a.terminal, "where": a.where, "command": a.simple or a.command,
                           "protocol": a.spec.get("protocol", "tcp"), "dst": a.spec.get("dst"),
                           "goodput_mbps": None, "retransmits": None, "lost": None, "error": r.get("error")}
    if r.get("error"):
        return row
    tcp = r.get("protocol") == "tcp" or "streams" in r
    if tcp:
        streams = r.get("streams", [])
        row["retransmits"] = sum(int((s.get("sender") or {}).get("retransmits", 0)) for s in streams)
    else:
        rx = r.get("receiver") or {}
        row["lost"] = int(rx.get("lost", 0)) if rx else None
    totals = receiver_totals(r, "tcp" if tcp else "udp", bool(a.spec.get("reverse")))
    bps = goodput_bps(*totals) if totals else None
    if bps is not None:
        row["goodput_mbps"] = round(bps / 1e6, 2)
    return row


def _ping_row(a: AppRecord, r: dict[str, Any]) -> dict[str, Any]:
    replies = [x for x in r.get("replies", []) if not x.get("dup")]
    rtts = [x["rtt_ns"] / 1e6 for x in replies]
    tx = int(r.get("transmitted", 0))
    received = len({x["seq"] for x in replies})
    return {"node": a.terminal, "where": a.where, "command": a.simple or a.command, "dst": r.get("dst"),
            "transmitted": tx, "received": received,
            "loss_pct": round(100 * (tx - received) / tx, 2) if tx else None,
            "min_ms": round(min(rtts), 3) if rtts else None,
            "avg_ms": round(sum(rtts) / len(rtts), 3) if rtts else None,
            "max_ms": round(max(rtts), 3) if rtts else None}


def qdisc_chain(blocks: list[dict[str, Any]]) -> str:
    """``netem → tbf``: the interface's qdiscs in tree order (the kernel's own defaults left out)."""
    kinds = [q["kind"] for q in blocks if not q.get("anonymous") and q.get("kind") not in ("noqueue", None)]
    return " → ".join(kinds)


def part_results(
    eng: Engine, ended: list[AppRecord], report: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """(the part's ``results``, warnings about what ended in it)."""
    iperf3, pings, fct, warnings = [], [], [], []
    for a in ended:
        r = eng.app_result(a.app_id)
        if a.kind == "iperf3_client":
            iperf3.append(_iperf3_row(a, r))
        elif a.kind == "ping":
            row = _ping_row(a, r)
            pings.append(row)
            if row["transmitted"] and not row["received"]:
                warnings.append(f"warning: {a.where}: {a.terminal}: ping {row['dst']}: 100% packet loss "
                                f"({row['transmitted']} transmitted, none answered)")
        elif a.kind == "flows_client":
            fct.append({"node": a.terminal, "where": a.where, "command": a.simple or a.command,
                        "buckets": fct_summary(fct_rows(r))})
        elif a.kind == "iperf3_server" and not r.get("tests"):
            # iperf 2 servers run on the same application
            prog = "iperf" if (a.simple or a.command).startswith("iperf ") else "iperf3"
            warnings.append(f"warning: {a.where}: {a.terminal}: {prog} -s (port {r.get('port')}) never saw a "
                            "client before it was stopped")
    qdiscs = []
    peaks = report.get("peak_backlog", {})
    for dev in sorted(set(report.get("drops", {})) | set(peaks)):
        drops = {reason: c["packets"] for reason, c in sorted(report.get("drops", {}).get(dev, {}).items())}
        peak = peaks.get(dev, {})
        qdiscs.append({"interface": dev, "qdiscs": qdisc_chain(report.get("qdiscs", {}).get(dev, [])),
                       "drops": drops, "dropped": sum(drops.values()),
                       "peak_backlog_bytes": peak.get("bytes"), "peak_backlog_packets": peak.get("packets")})
    res: dict[str, Any] = {"iperf3": iperf3, "ping": pings, "qdiscs": qdiscs}
    if fct:  # only then: the shipped scenarios' summaries stay as they were
        res["fct"] = fct
    return res, warnings
