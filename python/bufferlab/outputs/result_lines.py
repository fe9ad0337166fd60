"""The part's result summary (summary.json ``results``, run/part_results.py) as text:
printed after each part by ``bufferlab run`` and shown at the top of report.html."""

from __future__ import annotations

from typing import Any


def _num(v: Any, fmt: str) -> str:
    return "–" if v is None else fmt.format(v)


def result_lines(res: dict[str, Any]) -> list[str]:
    """One line per iperf3 client, ping and interface, and a block per flow workload
    (the same text the report shows)."""
    out = []
    for r in res.get("iperf3", []):
        head = f"{r['node']}: {r['command']}"
        if r.get("error"):
            out.append(f"{head}: error: {r['error']}")
            continue
        extra = (f"{_num(r['retransmits'], '{}')} retransmits" if r["protocol"] == "tcp"
                 else f"{_num(r['lost'], '{}')} datagrams lost")
        out.append(f"{head}: {_num(r['goodput_mbps'], '{:.2f}')} Mbit/s goodput, {extra}")
    for r in res.get("ping", []):
        out.append(f"{r['node']}: {r['command']}: rtt min/avg/max {_num(r['min_ms'], '{:.3f}')}/"
                   f"{_num(r['avg_ms'], '{:.3f}')}/{_num(r['max_ms'], '{:.3f}')} ms, "
                   f"{_num(r['loss_pct'], '{:.2f}')}% loss "
                   f"({r['transmitted']} sent, {r['received']} received)")
    for r in res.get("fct", []):
        out.append(f"{r['node']}: {r['command']}: flow completion times")
        for b in r["buckets"]:
            if b["flows"]:
                out.append(f"  {b['bucket']:>13}: {b['completed']}/{b['flows']} completed, FCT mean "
                           f"{_num(b['mean_ms'], '{:.3f}')} ms, p50 {_num(b['p50_ms'], '{:.3f}')} ms, "
                           f"p99 {_num(b['p99_ms'], '{:.3f}')} ms")
    for r in res.get("flent", []):
        out.append(f"{r['node']}: flent {r['test']}: {r['file']} (mean per series, as flent's summary)")
        for name, m in r["means"].items():
            out.append(f"  {name:>24}: {_num(m['mean'], '{:.2f}')} {m['units']}")
    for q in res.get("qdiscs", []):
        why = ", ".join(f"{k} {v}" for k, v in q["drops"].items())
        drops = f"{q['dropped']} drops ({why})" if q["dropped"] else "no drops"
        peak = ("peak backlog not traced" if q["peak_backlog_bytes"] is None else
                f"peak backlog {q['peak_backlog_bytes']} bytes / {q['peak_backlog_packets']} packets")
        out.append(f"{q['interface']} {q['qdiscs'] or '(no qdisc)'}: {drops}, {peak}")
    return out


def results_text(part: str, res: dict[str, Any]) -> str:
    lines = result_lines(res)
    return "\n".join([f"part {part}: results"] + [f"  {ln}" for ln in lines]) if lines else ""
