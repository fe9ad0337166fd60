"""``netem``, tc/q_netem.c.

Parsing: every keyword with ``matches()`` prefixes in source order, optional
positional numbers (next word starts with a digit, or ``-`` for the overheads),
defaults and final checks. Printing (``netem_print_opt``): ``limit N`` then delay
(+ two spaces + jitter [+ corr]), loss (random, ``state``, ``gemodel``), duplicate,
reorder, corrupt, rate, slot, `` ecn ``, gap; percentages ``%g%%`` of u32/(2³²−1);
[lab2019] delays come back from the kernel as 64-ns ticks and print through
``sprint_ticks``, [modern] as ns via ``print_time64``.
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from ...units import (
    U32_MAX,
    parse_netem_time,
    parse_percent,
    parse_percent_fraction,
    parse_rate,
    parse_size,
    parse_time_ns64,
    percent_to_u32,
)
from .._common import c_int_full, matches, suggestion_for
from ..shell import Word
from ._schema import (
    NetemCorrelation,
    NetemLoss,
    NetemLossGemodel,
    NetemLossRandom,
    NetemLossState,
    NetemPercent,
    NetemRate,
    NetemSlot,
)
from ._schema import QdiscSpecNetem as NetemSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import UINT32_MAX, sprint_percent, sprint_rate, sprint_time, sprint_time64, tick2time

_NETEM_EXPECTED = (
    "netem [limit PACKETS] [delay TIME [JITTER [CORR]]] [distribution uniform|normal|pareto|paretonormal] "
    "[loss [random] PCT [CORR] | loss state P13 [P31 [P32 [P23 [P14]]]] | "
    "loss gemodel P [R [1-H [1-K]]]] [ecn] "
    "[duplicate PCT [CORR]] [corrupt PCT [CORR]] [reorder PCT [CORR] [gap N]] "
    "[rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]] [slot MIN [MAX] [packets N] [bytes SIZE]]"
)
_NETEM_KEYWORDS = [
    "limit",
    "latency",
    "delay",
    "loss",
    "drop",
    "ecn",
    "reorder",
    "corrupt",
    "gap",
    "duplicate",
    "distribution",
    "rate",
    "slot",
]
_NETEM_DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")


def _netem_distribution(word: Word) -> str:
    if word.text in _NETEM_DISTRIBUTIONS:
        return word.text
    raise CommandError(
        f"No distribution data for {word.text} (/usr/lib/tc//{word.text}.dist: No such file or directory)",
        col=word.col,
        expected="uniform, normal, pareto or paretonormal",
        suggestion=suggestion_for(word.text, _NETEM_DISTRIBUTIONS),
    )


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> NetemSpec:
    ns_mode = profile.netem_time_ns
    # tc's fixed block before the options (q_netem.c netem_parse_opt); the loss model is set last
    spec = NetemSpec(limit=1000, latency=0, jitter=0, loss=NetemLossRandom(p=0), gap=0, duplicate=0)
    loss_p = 0
    loss_model: NetemLoss | None = None
    cor = NetemCorrelation(delay=0, loss=0, duplicate=0)
    corr_present = False
    dup_corr_word: Word | None = None
    reorder: NetemPercent | None = None
    corrupt: NetemPercent | None = None
    ecn_word: Word | None = None
    dist_word: Word | None = None
    gap_word: Word | None = None

    def next_is_number(signed: bool = False) -> bool:
        w = cur.peek()
        if w is None or not w.text:
            return False
        return w.text[0].isdigit() or (signed and w.text[0] == "-")

    def pct(word: Word, label: str) -> int:
        return read_unit(parse_percent, word, f'Illegal "{label}"')

    def tm(word: Word, label: str) -> int:
        return read_unit(parse_netem_time, word, f'Illegal "{label}"', ns_mode)

    while not cur.done():
        w = cur.take()
        t = w.text
        if matches(t, "limit"):
            v = cur.value(w, "limit PACKETS")
            spec.limit = read_unit(parse_size, v, 'Illegal "limit"')
        elif matches(t, "latency") or matches(t, "delay"):
            v = cur.value(w, "delay TIME [JITTER [CORRELATION]]")
            spec.latency = tm(v, "latency")
            if next_is_number():
                spec.jitter = tm(cur.take(), "latency")
                if next_is_number():
                    corr_present = True
                    cor.delay = pct(cur.take(), "latency")
        elif matches(t, "loss") or matches(t, "drop"):
            if loss_p > 0 or loss_model is not None:
                raise CommandError(
                    'Illegal "duplicate loss argument"',
                    col=w.col,
                    expected="a single loss clause",
                )
            v = cur.value(w, "loss [random] PERCENT [CORRELATION]")
            if v.text[:1].isdigit() or v.text == "random":
                if v.text == "random":
                    v = cur.value(v, "loss random PERCENT")
                loss_p = pct(v, "loss percent")
                if next_is_number():
                    corr_present = True
                    cor.loss = pct(cur.take(), "loss correllation")
            elif v.text == "state":
                p = cur.value(v, "loss state P13 [P31 [P32 [P23 [P14]]]]")
                p13 = read_unit(parse_percent_fraction, p, 'Illegal "loss p13"')
                vals = [percent_to_u32(p13), percent_to_u32(1.0 - p13), 0, percent_to_u32(1.0), 0]
                for idx, label in enumerate(("loss p31", "loss p32", "loss p23", "loss p14"), start=1):
                    if not next_is_number():
                        break
                    vals[idx] = pct(cur.take(), label)
                loss_model = NetemLossState(p13=vals[0], p31=vals[1], p32=vals[2], p23=vals[3], p14=vals[4])
            elif v.text == "gemodel":
                p = cur.value(v, "loss gemodel P [R [1-H [1-K]]]")
                pf = read_unit(parse_percent_fraction, p, 'Illegal "loss gemodel p"')
                ge = [percent_to_u32(pf), percent_to_u32(1.0 - pf), 0, 0]
                if next_is_number():
                    ge[1] = pct(cur.take(), "loss gemodel r")
                    if next_is_number():
                        ge[2] = U32_MAX - pct(cur.take(), "loss gemodel h")
                        if next_is_number():
                            ge[3] = pct(cur.take(), "loss gemodel k")
                loss_model = NetemLossGemodel(p=ge[0], r=ge[1], h=ge[2], k1=ge[3])
            else:
                hint = None
                if v.text.startswith("."):
                    hint = f"write 0{v.text} (tc needs a leading digit)"
                else:
                    hint = suggestion_for(v.text, ["random", "state", "gemodel"])
                raise CommandError(
                    f"Unknown loss parameter: {v.text}",
                    col=v.col,
                    expected="loss PERCENT, loss random PERCENT, loss state P13 ..., loss gemodel P ...",
                    suggestion=hint,
                )
        elif matches(t, "ecn"):
            ecn_word = w
        elif matches(t, "reorder"):
            v = cur.value(w, "reorder PERCENT [CORRELATION] [gap N]")
            reorder = NetemPercent(p=pct(v, "reorder"), corr=0)
            if next_is_number():
                corr_present = True
                reorder.corr = pct(cur.take(), "reorder")
        elif matches(t, "corrupt"):
            v = cur.value(w, "corrupt PERCENT [CORRELATION]")
            corrupt = NetemPercent(p=pct(v, "corrupt"), corr=0)
            if next_is_number():
                corr_present = True
                corrupt.corr = pct(cur.take(), "corrupt")
        elif matches(t, "gap"):
            v = cur.value(w, "gap DISTANCE")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError('Illegal "gap"', col=v.col, expected="an unsigned integer")
            spec.gap = n
            gap_word = w
        elif matches(t, "duplicate"):
            v = cur.value(w, "duplicate PERCENT [CORRELATION]")
            spec.duplicate = pct(v, "duplicate")
            if next_is_number():
                dup_corr_word = cur.take()
                cor.duplicate = pct(dup_corr_word, "duplicate")
        elif matches(t, "distribution"):
            v = cur.value(w, "distribution uniform|normal|pareto|paretonormal")
            spec.distribution = _netem_distribution(v)
            dist_word = w
        elif matches(t, "rate"):
            v = cur.value(w, "rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]")
            if "%" in v.text:
                raise NotSupportedError(
                    "netem rate as a percentage of the device speed is not supported yet",
                    col=v.col,
                    expected="an absolute rate such as 8mbit",
                )
            r = NetemRate(
                rate=read_unit(parse_rate, v, 'Illegal "rate"'),
                packet_overhead=0,
                cell_size=0,
                cell_overhead=0,
            )
            if next_is_number(signed=True):
                x = cur.take()
                n = c_int_full(x.text, 0)
                if n is None or not -(2**31) <= n < 2**31:
                    raise CommandError(
                        'Illegal "rate"', col=x.col, expected="PACKETOVERHEAD: a signed integer"
                    )
                r.packet_overhead = n
            if next_is_number():
                x = cur.take()
                n = c_int_full(x.text, 0)
                if n is None or not 0 <= n <= U32_MAX:
                    raise CommandError('Illegal "rate"', col=x.col, expected="CELLSIZE: an unsigned integer")
                r.cell_size = n
            if next_is_number(signed=True):
                x = cur.take()
                n = c_int_full(x.text, 0)
                if n is None or not -(2**31) <= n < 2**31:
                    raise CommandError('Illegal "rate"', col=x.col, expected="CELLOVERHEAD: a signed integer")
                r.cell_overhead = n
            spec.rate = r
        elif matches(t, "slot"):
            slot = NetemSlot(min_delay=0, max_delay=0)
            if next_is_number():
                v = cur.take()
                slot.min_delay = read_unit(parse_time_ns64, v, 'Illegal "slot min_delay"')
                if next_is_number():
                    v2 = cur.take()
                    slot.max_delay = read_unit(parse_time_ns64, v2, 'Illegal "slot max_delay"')
                    if slot.max_delay < slot.min_delay:
                        raise CommandError(
                            'Illegal "slot max_delay"',
                            col=v2.col,
                            expected="MAX_DELAY >= MIN_DELAY",
                        )
                else:
                    slot.max_delay = slot.min_delay
            else:
                v = cur.value(w, "slot MIN_DELAY [MAX_DELAY] | slot distribution TYPE DELAY JITTER")
                if v.text != "distribution":
                    raise CommandError(
                        f"Unknown slot parameter: {v.text}",
                        col=v.col,
                        expected="slot MIN_DELAY [MAX_DELAY] | slot distribution TYPE DELAY JITTER",
                    )
                d = _netem_distribution(cur.value(v, "slot distribution TYPE DELAY JITTER"))
                dl = cur.value(v, "slot distribution TYPE DELAY JITTER")
                delay = read_unit(parse_time_ns64, dl, 'Illegal "slot delay"')
                jt = cur.value(v, "slot distribution TYPE DELAY JITTER")
                jitter = read_unit(parse_time_ns64, jt, 'Illegal "slot jitter"')
                if jitter <= 0:
                    raise CommandError("Non-positive jitter", col=jt.col, expected="a positive jitter")
                slot.dist = (d, delay, jitter)
            nxt = cur.peek()
            if nxt is not None and matches(nxt.text, "packets"):
                kw = cur.take()
                x = cur.peek()
                n = c_int_full(x.text, 0) if x is not None else None
                if n is None or not 0 <= n < 2**31:
                    raise CommandError(
                        'Illegal "slot packets"',
                        col=(x or kw).col,
                        expected="packets N (a non-negative integer)",
                    )
                cur.take()
                slot.packets = n
            nxt = cur.peek()
            if nxt is not None and matches(nxt.text, "bytes"):
                kw = cur.take()
                x = cur.peek()
                if x is None:
                    raise CommandError('Illegal "slot bytes"', col=kw.col, expected="bytes SIZE")
                slot.bytes = read_unit(parse_size, x, 'Illegal "slot bytes"')
                cur.take()
            spec.slot = slot
        elif t == "seed":
            raise NotSupportedError("netem seed is not supported yet", col=w.col)
        elif t == "help":
            raise CommandError("Usage: ... netem " + _NETEM_EXPECTED[6:], col=w.col)
        else:
            raise CommandError(
                f'What is "{t}"?',
                col=w.col,
                expected=_NETEM_EXPECTED,
                suggestion=suggestion_for(t, _NETEM_KEYWORDS),
            )

    # final checks, in q_netem.c order
    if reorder is not None and reorder.p:
        if spec.latency == 0:
            raise CommandError(
                "reordering not possible without specifying some delay",
                col=kind_word.col,
                expected="netem delay TIME reorder PERCENT",
            )
        if spec.gap == 0:
            spec.gap = 1
    elif spec.gap > 0:
        raise CommandError(
            "gap specified without reorder probability",
            col=gap_word.col if gap_word else kind_word.col,
            expected="netem delay TIME reorder PERCENT gap N",
        )
    if ecn_word is not None and loss_p <= 0 and loss_model is None:
        raise CommandError(
            "ecn requested without loss model",
            col=ecn_word.col,
            expected="netem loss PERCENT ecn",
        )
    if dist_word is not None and (spec.latency == 0 or spec.jitter == 0):
        raise CommandError(
            "distribution specified but no latency and jitter values",
            col=dist_word.col,
            expected="netem delay TIME JITTER distribution TYPE",
        )

    spec.loss = loss_model if loss_model is not None else NetemLossRandom(p=loss_p)
    if corr_present:
        spec.correlation = cor
    elif dup_corr_word is not None:
        diag.warn(
            "tc sends the duplicate correlation only together with a delay, loss, reorder "
            "or corrupt correlation; this one is ignored, as tc ignores it",
            dup_corr_word.col,
        )
    spec.reorder = reorder
    spec.corrupt = corrupt
    spec.ecn = True if ecn_word is not None else None
    return spec


def _netem_time(ns: int, modern: bool) -> str:
    if modern:
        return sprint_time64(ns)
    ticks = min(int(ns) >> 6, UINT32_MAX)  # kernel PSCHED_NS2TICKS into a u32
    return sprint_time(tick2time(ticks, False), False)


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    out = "limit %d" % int(opts.get("limit", 1000))
    corr = opts.get("correlation") or {}
    latency = int(opts.get("latency") or 0)
    jitter = int(opts.get("jitter") or 0)
    if latency:
        out += " delay %s" % _netem_time(latency, modern)
        if jitter:
            out += "  %s" % _netem_time(jitter, modern)
            if corr.get("delay"):
                out += " %s" % sprint_percent(corr["delay"])
    loss = opts.get("loss") or {"model": "random", "p": 0}
    model = loss.get("model", "random")
    if model == "random":
        if int(loss.get("p") or 0):
            out += " loss %s" % sprint_percent(loss["p"])
            if corr.get("loss"):
                out += " %s" % sprint_percent(corr["loss"])
    elif model == "state":
        out += " loss state p13 %s p31 %s p32 %s p23 %s p14 %s" % tuple(
            sprint_percent(loss[k]) for k in ("p13", "p31", "p32", "p23", "p14"))
    elif model == "gemodel":
        out += " loss gemodel p %s r %s 1-h %s 1-k %s" % (
            sprint_percent(loss["p"]), sprint_percent(loss["r"]),
            sprint_percent(UINT32_MAX - int(loss["h"])), sprint_percent(loss["k1"]))
    else:
        raise ValueError(f"netem: unknown loss model {model!r}")
    dup = int(opts.get("duplicate") or 0)
    if dup:
        out += " duplicate %s" % sprint_percent(dup)
        if corr.get("duplicate"):
            out += " %s" % sprint_percent(corr["duplicate"])
    for name in ("reorder", "corrupt"):
        pc = opts.get(name) or {}
        if int(pc.get("p") or 0):
            out += " %s %s" % (name, sprint_percent(pc["p"]))
            if pc.get("corr"):
                out += " %s" % sprint_percent(pc["corr"])
    rate = opts.get("rate") or {}
    if int(rate.get("rate") or 0):
        out += " rate %s" % sprint_rate(rate["rate"])
        if rate.get("packet_overhead"):
            out += " packetoverhead %d" % int(rate["packet_overhead"])
        if rate.get("cell_size"):
            out += " cellsize %d" % int(rate["cell_size"])
        if rate.get("cell_overhead"):
            out += " celloverhead %d" % int(rate["cell_overhead"])
    slot = opts.get("slot")
    if slot:
        dist = slot.get("dist")
        if dist and int(dist[2] or 0) > 0:
            out += " slot distribution %s %s" % (sprint_time64(dist[1]), sprint_time64(dist[2]))
        else:
            out += " slot %s %s" % (sprint_time64(slot.get("min_delay", 0)),
                                    sprint_time64(slot.get("max_delay", 0)))
        if slot.get("packets"):
            out += " packets %d" % int(slot["packets"])
        if slot.get("bytes"):
            out += " bytes %d" % int(slot["bytes"])
    if opts.get("ecn"):
        out += " ecn "
    if int(opts.get("gap") or 0):
        out += " gap %d" % int(opts["gap"])
    if modern and details and opts.get("seed") is not None:
        out += " seed %d" % int(opts["seed"])
    return out


KINDS = (QdiscKind("netem", _parse_opt, _print_opt),)
