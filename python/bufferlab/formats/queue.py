"""``q_<iface>.dat`` as written by the (reconstructed) ``plot_q.sh`` (docs/semantics/formats.md §6).

plot_q.sh samples ``tc -s qdisc show dev <iface>`` every
``queue_sample_interval``, takes the backlog of the *last* qdisc block (the
leaf), parses the ``sprint_size`` text (``<n>b``, ``<n>Kb`` = n·1024,
``<n>Mb`` = n·1048576) back to bytes and appends ``%.3f %d`` — seconds since
the start of the capture, bytes. The engine's ``qmon`` result already holds
the leaf backlog in bytes; it is passed through iproute2's ``sprint_size``
(tc/tc_util.c, see :mod:`bufferlab.commands.tc.tc_util`) and parsed back so the file
carries exactly the precision the real script sees (e.g. 1 048 600 B is
printed ``1Mb`` and recorded as 1 048 576).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..commands.tc.tc_util import sprint_size

__all__ = ["q_dat", "q_csv", "parse_size"]


def parse_size(text: str) -> int:
    """Inverse of ``sprint_size`` as plot_q.sh applies it."""
    for suffix, mult in (("Mb", 1048576), ("Kb", 1024), ("b", 1)):
        if text.endswith(suffix):
            return int(round(float(text[: -len(suffix)]) * mult))
    raise ValueError(f"not a tc size: {text!r}")


def q_dat(samples: Iterable[Sequence[int]], start_ns: int) -> str:
    """Lines ``%.3f %d`` from qmon samples ``[t_ns, backlog_bytes, qlen]``."""
    lines = []
    for sample in samples:
        t_ns, backlog = int(sample[0]), int(sample[1])
        lines.append("%.3f %d\n" % ((t_ns - int(start_ns)) / 1e9, parse_size(sprint_size(backlog))))
    return "".join(lines)


def q_csv(samples: Iterable[Sequence[int]], start_ns: int) -> str:
    """The exact samples (no tc rounding) as CSV: time since start, bytes, packets."""
    lines = ["time_s,backlog_bytes,backlog_packets\n"]
    for t_ns, backlog, qlen in samples:
        lines.append("%.9f,%d,%d\n" % ((int(t_ns) - int(start_ns)) / 1e9, int(backlog), int(qlen)))
    return "".join(lines)
