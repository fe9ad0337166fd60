"""The compact result summary of a part, gathered from the engine: printed after
the part by ``bufferlab run`` (not with ``-q``, text in outputs/result_lines.py),
stored as the part's ``results`` in summary.json and shown at the top of
report.html, from the same numbers.

Each application that ended during the part adds its rows (``AppRecord.summarise``,
given by the program that started it, run/programs/):

- ``iperf3``: every iperf3 (and iperf 2) client (run/programs/iperf3.py);
- ``ping``: every ping (run/programs/ping.py);
- ``fct``: every ``flows -c`` (run/programs/flows.py), only in a part that has one;

and the part adds

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

from .context import AppRecord, PartSummary
from .engine import Engine


def qdisc_chain(blocks: list[dict[str, Any]]) -> str:
    """``netem → tbf``: the interface's qdiscs in tree order (the kernel's own defaults left out)."""
    kinds = [q["kind"] for q in blocks if not q.get("anonymous") and q.get("kind") not in ("noqueue", None)]
    return " → ".join(kinds)


def part_results(
    eng: Engine, ended: list[AppRecord], report: dict[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """(the part's ``results``, warnings about what ended in it)."""
    summary = PartSummary()
    for a in ended:
        if a.summarise is not None:
            a.summarise(a, eng.app_result(a.app_id), summary)
    qdiscs = []
    peaks = report.get("peak_backlog", {})
    for dev in sorted(set(report.get("drops", {})) | set(peaks)):
        drops = {reason: c["packets"] for reason, c in sorted(report.get("drops", {}).get(dev, {}).items())}
        peak = peaks.get(dev, {})
        qdiscs.append({"interface": dev, "qdiscs": qdisc_chain(report.get("qdiscs", {}).get(dev, [])),
                       "drops": drops, "dropped": sum(drops.values()),
                       "peak_backlog_bytes": peak.get("bytes"), "peak_backlog_packets": peak.get("packets")})
    sections = summary.sections
    res: dict[str, Any] = {"iperf3": sections.pop("iperf3"), "ping": sections.pop("ping"), "qdiscs": qdiscs}
    res.update(sections)  # the others only where a part has rows: the shipped summaries stay as they were
    return res, summary.warnings
