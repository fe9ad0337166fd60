"""fping 5.1 output (docs/semantics/formats.md §13), from the engine's ping result.

Read in fping's ``src/fping.c`` (schweikert/fping, tag v5.1; nothing copied):

* ``sprint_tm`` -- a time in ms printed with 3 decimals below 1 ms, 2 below 10, 1 below 100,
  none below 10⁶ ms;
* ``wait_for_reply`` -- with ``-c``/``-C``/``-l`` each reply prints ``HOST : [SEQ], N bytes,
  T ms (AVG avg, L% loss)`` to stdout, ``[%.5f] `` (the receive wall time) in front with
  ``-D``; N is the ICMP message length (8 + data bytes); the host column is padded to the
  longest target name; loss is ``(sent − received)·100 / sent`` in integer arithmetic at the
  time of the reply;
* ``main_loop`` -- a probe whose timeout (``-t``, 500 ms by default; with ``-c`` fping ≥ 4.0
  waits that long only after the last probe) passes without a reply prints ``HOST : [SEQ],
  timed out (AVG avg, L% loss)`` (``NaN avg`` before the first reply);
* ``print_per_system_stats`` -- at the end, to stderr: an empty line (``-c`` prints per-reply
  lines), then ``HOST : xmt/rcv/%loss = S/R/L%`` and, if any reply came,
  ``, min/avg/max = MIN/AVG/MAX``.

Exit status: 0 when every target answered, 1 otherwise.
"""

from __future__ import annotations

from typing import Any

__all__ = ["sprint_tm", "fping_text", "fping_exit_status"]


def sprint_tm(ns: int) -> str:
    t = ns / 1e6
    if t < 0:
        return f"{t:.2g}"
    if t < 1:
        return f"{t:.3f}"
    if t < 10:
        return f"{t:.2f}"
    if t < 100:
        return f"{t:.1f}"
    if t < 1_000_000:
        return f"{t:.0f}"
    return f"{t:.3e}"


def fping_text(
    result: dict[str, Any],
    host: str,
    *,
    period_ns: int,
    timeout_ns: int,
    end_ns: int,
    timestamps: bool,
    epoch_s: float,
    quiet: bool = False,
) -> tuple[str, str]:
    """(stdout, stderr) of ``fping -c N [-D] HOST`` for the engine's ping ``result`` (docs/internals.md
    ``ping``): probe k (from 1) left at ``start_ns + (k−1)·period_ns``; a reply arrives ``rtt_ns``
    later; a probe without a reply is reported timed out ``timeout_ns`` after it left, if that is
    before ``end_ns`` (when the run stopped). ``epoch_s`` is simulated time 0's wall clock."""
    start = int(result["start_ns"])
    sent_ns = [start + k * period_ns for k in range(int(result["transmitted"]))]
    size = int(result.get("size", 56))
    replies: dict[int, int] = {}
    for r in result.get("replies") or []:
        if not r.get("dup"):
            replies.setdefault(int(r["seq"]), int(r["rtt_ns"]))
    events: list[tuple[int, int, int | None]] = []  # (time, seq, rtt or None)
    for i, t in enumerate(sent_ns):
        rtt = replies.get(i + 1)
        if rtt is not None and rtt <= timeout_ns:
            events.append((t + rtt, i + 1, rtt))
        elif t + timeout_ns <= end_ns:
            events.append((t + timeout_ns, i + 1, None))
    events.sort()
    out: list[str] = []
    n_recv = 0
    total = 0
    rtts: list[int] = []
    for when, seq, rtt in events:
        sent_by_then = sum(1 for t in sent_ns if t <= when)
        stamp = f"[{epoch_s + when / 1e9:.5f}] " if timestamps else ""
        if rtt is not None:
            n_recv += 1
            total += rtt
            rtts.append(rtt)
            loss = (sent_by_then - n_recv) * 100 // sent_by_then
            line = (
                f"{stamp}{host} : [{seq - 1}], {size + 8} bytes, {sprint_tm(rtt)} ms "
                f"({sprint_tm(total // n_recv)} avg, {loss}% loss)"
            )
        else:
            avg = f"{sprint_tm(total // n_recv)} avg" if n_recv else "NaN avg"
            loss = (sent_by_then - n_recv) * 100 // sent_by_then
            line = f"{stamp}{host} : [{seq - 1}], timed out ({avg}, {loss}% loss)"
        if not quiet:
            out.append(line + "\n")
    sent = len(sent_ns)
    err = "\n" if not quiet else ""
    loss = (sent - n_recv) * 100 // sent if sent else 0
    err += f"{host} : xmt/rcv/%loss = {sent}/{n_recv}/{loss}%"
    if rtts:
        err += f", min/avg/max = {sprint_tm(min(rtts))}/{sprint_tm(total // n_recv)}/{sprint_tm(max(rtts))}"
    return "".join(out), err + "\n"


def fping_exit_status(result: dict[str, Any]) -> int:
    return 0 if any(not r.get("dup") for r in result.get("replies") or []) else 1
