"""Resource budgets checked before a run (docs/fuzzing.md, "Resource budgets").

``plot_q.sh`` keeps every sample of its queue in memory until it is
interrupted (the engine's queue monitor, then the ``.dat``/``.csv`` files and
the plot are made from the whole series). A monitor typed in part *k* can run
until the scenario ends, so its worst case is

    samples = ⌊(Σ_{j ≥ k} stop_at + (parts after k) × part_gap) / queue_sample_interval⌋ + 1

(``stop_at`` caps every part's simulated length; default 3600 s). Each monitor
may keep at most :data:`MAX_SAMPLES_PER_MONITOR` samples (the engine's own cap,
``qmon::MAX_SAMPLES``: 24 bytes each in the engine, about 0.3 KB each while the
result becomes JSON, Python lists and text, so ≤ ~300 MB), and all monitors of
a scenario together at most :data:`MAX_SAMPLES_TOTAL` (what the engine holds at
once: ≤ ~100 MB). A scenario over either budget is an error at check time,
with the line of the monitor and the smallest interval (or largest stop_at)
that fits.

``flows -c`` keeps a record of every flow it starts (40 bytes in the engine, about
0.3 KB while the result becomes the ``fct`` table): its expected arrivals, ``--rate`` ×
``-t`` (without ``-t``, × the part's ``duration`` or ``stop_at``: it stops with its
part), may be at most :data:`MAX_FLOW_ARRIVALS` (the engine stops a client's arrivals
at twice that, ``flows::MAX_FLOW_ARRIVALS``; Poisson arrivals never get there).

``ping`` keeps every reply (16 bytes in the engine, about 0.3 KB once formatted): its
replies, at most ``-c`` and at most one per ``-i`` for as long as it may run (``-w``, or
to the scenario's end as for plot_q.sh above), may be at most :data:`MAX_PING_REPLIES`
(the engine ends a ping at twice that, ``ping::MAX_REPLIES``).

Queue traces (``[trace]``, and plot_q.sh's own 1 ms trace) are streamed to
disk by the engine (56-byte records through a 256 KB buffer): their memory
does not grow with the run, so they have no check-time budget.
"""

from __future__ import annotations

import math

from ..commands.flows import arrival_rate
from ..commands.ping import parse_ping
from ..errors import CommandError, Diagnostics, ScenarioError
from ..scenario.load import Scenario
from .context import PreparedLine

#: the most samples one plot_q.sh keeps (= the engine's qmon::MAX_SAMPLES)
MAX_SAMPLES_PER_MONITOR = 1_000_000
#: the most samples all plot_q.sh of a scenario may keep together
MAX_SAMPLES_TOTAL = 4_000_000
#: the most flows one ``flows -c`` may be expected to start (half the engine's cap)
MAX_FLOW_ARRIVALS = 1_000_000
#: the most replies one ``ping`` may keep (half the engine's cap)
MAX_PING_REPLIES = 1_000_000


def _is_plot_q(words: list) -> bool:  # type: ignore[type-arg]
    return bool(words) and words[0].text.rsplit("/", 1)[-1] == "plot_q.sh"


def check_sample_budget(sc: Scenario, lines: dict[str, list[PreparedLine]], default_stop_at_s: float) -> None:
    """Raise if the prepared ``lines`` (per part) hold plot_q.sh over the budgets above."""
    interval = sc.profile.queue_sample_interval
    if not interval or interval <= 0:
        return  # the loader rejects it; nothing to bound here
    stop_at = sc.profile.stop_at or default_stop_at_s
    n = len(sc.parts)
    total = 0
    for k, part in enumerate(sc.parts):
        span_s = (n - k) * stop_at + (n - k - 1) * sc.part_gap
        bound = int(span_s / interval) + 1
        for pl in lines.get(part.name, []):
            for simple, _ in pl.simple_commands():
                if not _is_plot_q(simple.words):
                    continue
                total += bound
                c = pl.command
                if bound > MAX_SAMPLES_PER_MONITOR or total > MAX_SAMPLES_TOTAL:
                    over_total = bound <= MAX_SAMPLES_PER_MONITOR
                    cap = MAX_SAMPLES_TOTAL if over_total else MAX_SAMPLES_PER_MONITOR
                    need = (total if over_total else bound) / cap * interval
                    raise ScenarioError(
                        f"plot_q.sh could keep up to {bound:,} queue samples"
                        + (f" ({total:,} with the scenario's other plot_q.sh)" if over_total else "")
                        + f": it may run {span_s:g} s (to the scenario's end: {n - k} part(s) of at most "
                        f"stop_at = {stop_at:g} s, and the part gaps) at one sample every "
                        f"queue_sample_interval = {interval:g} s",
                        file=str(sc.path),
                        line=c.line,
                        col=c.col,
                        expected=f"at most {cap:,} samples "
                        + ("for all plot_q.sh together" if over_total else "per plot_q.sh")
                        + " (samples = time it may run / queue_sample_interval; docs/fuzzing.md)",
                        suggestion=f'raise [sim] queue_sample_interval to at least "{_fmt_s(need)}", or '
                        "lower [sim] stop_at to what the parts need",
                    )


def check_flow_budget(sc: Scenario, lines: dict[str, list[PreparedLine]], default_stop_at_s: float) -> None:
    """Raise, at its ``--rate``, for a ``flows -c`` expected to start more than
    :data:`MAX_FLOW_ARRIVALS` flows."""
    stop_at = sc.profile.stop_at or default_stop_at_s
    for part in sc.parts:
        for pl in lines.get(part.name, []):
            for simple, _ in pl.simple_commands():
                if not simple.words or simple.words[0].text != "flows":
                    continue
                found = arrival_rate(simple.words)
                if found is None:
                    continue
                rate, t_ns, rate_w = found
                span_s = t_ns / 1e9 if t_ns is not None else (part.duration or stop_at)
                expected = rate * span_s
                if expected <= MAX_FLOW_ARRIVALS:
                    continue
                how = (
                    f"for -t {span_s:g} s"
                    if t_ns is not None
                    else f"until its part ends ({'duration' if part.duration else 'stop_at'} = "
                         f"{span_s:g} s)"
                )
                c = pl.command
                raise CommandError(
                    f"flows: --rate {rate_w.text} {how} would start about {expected:,.0f} flows",
                    col=rate_w.col,
                    expected=f"at most {MAX_FLOW_ARRIVALS:,} flows per flows command (rate × time; each "
                    "flow keeps a record for the fct table)",
                    suggestion=f"lower --rate to at most {MAX_FLOW_ARRIVALS / span_s:g}/s, or "
                    + ("shorten -t" if t_ns is not None else "give it a shorter -t"),
                ).locate(c.where(rate_w.col), c.text)


def check_ping_budget(sc: Scenario, lines: dict[str, list[PreparedLine]], default_stop_at_s: float) -> None:
    """Raise, at its ``-i`` (or the command), for a ``ping`` that could keep more than
    :data:`MAX_PING_REPLIES` replies."""
    stop_at = sc.profile.stop_at or default_stop_at_s
    n = len(sc.parts)
    for k, part in enumerate(sc.parts):
        to_end_s = (n - k) * stop_at + (n - k - 1) * sc.part_gap
        for pl in lines.get(part.name, []):
            for simple, _ in pl.simple_commands():
                words = simple.words
                if not words or words[0].text != "ping":
                    continue
                try:
                    cmd = parse_ping(words, Diagnostics())
                except CommandError:
                    continue
                if cmd.interval_s <= 0:
                    continue
                span_s = cmd.deadline_s if cmd.deadline_s is not None else to_end_s
                bound = int(span_s / cmd.interval_s) + 1
                if cmd.count is not None:
                    bound = min(bound, cmd.count)
                if bound <= MAX_PING_REPLIES:
                    continue
                i_word = next((w for a, w in zip(words, words[1:], strict=False) if a.text == "-i"), None)
                how = "-w" if cmd.deadline_s is not None else "until the scenario ends"
                c = pl.command
                raise CommandError(
                    f"ping could keep up to {bound:,} replies: one every -i {cmd.interval_s:g} s for "
                    f"{span_s:g} s ({how})",
                    col=(i_word or words[0]).col,
                    expected=f"at most {MAX_PING_REPLIES:,} replies per ping (-c, or time it may run / "
                             f"-i)",
                    suggestion=f"give it -c (at most {MAX_PING_REPLIES:,}) or a -w deadline, or a longer "
                               f"-i",
                ).locate(c.where((i_word or words[0]).col), c.text)


def _fmt_s(s: float) -> str:
    """``s`` seconds, rounded up to two decimals of the largest unit that fits."""
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= f:
            return f"{math.ceil(s / f * 100) / 100:g}{unit}"
    return f"{math.ceil(s * 1e9)}ns"
