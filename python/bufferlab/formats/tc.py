"""``tc [-s] [-d] qdisc show dev X`` text from the engine's ``qdisc_show`` blocks.

Reproduces iproute2 (formats.md §3; qdiscs.md §3.4, §4.1, §5.7):

* ``tc/tc_qdisc.c`` ``print_qdisc``: ``qdisc KIND MAJ: root|parent X:Y
  [refcnt N ]OPTIONS`` then, with ``-s``, the statistics lines and the
  kind's xstats;
* ``tc/tc_util.c``: ``print_tcstats2_attr`` (`` Sent … pkt (dropped …,
  overlimits … requeues …) `` with its trailing blank, `` backlog SIZE
  Np requeues N``), ``sprint_rate`` (bit/s, 1000-steps while divisible or
  ≥ 10⁶), ``sprint_size`` (``Mb``/``Kb``/``b`` with rint, round-half-even),
  ``sprint_time`` (µs argument is a ``__u32``: the double is truncated;
  [lab2019] ``%.1fs``/``%.1fms``, [modern, iproute2 ≥ 5.7] ``%.3g``),
  ``print_time64`` (netem times in ns, modern), ``sprint_ticks``;
* ``tc/tc_core.c``: ``tc_calc_xmittime`` / ``tc_calc_xmitsize`` /
  ``tc_core_tick2time`` (psched tick = 1/15.625 µs). [lab2019] (iproute2
  4.15 … 6.13) they truncate to whole µs and whole ticks; [modern] the
  2025 rounding fix: ticks = ceil(burst/rate·1e6·15.625), tick→µs in double
  (formats.md/qdiscs.md state the ceil form);
* ``tc/q_tbf.c`` ``tbf_print_opt``: ``rate R burst B [peakrate P minburst M]
  lat T `` where T = 1e6·limit/rate − tick2time(buffer) (peak analogue,
  larger wins), or ``limit SIZE `` when T < 0; the printed burst is
  ``tc_calc_xmitsize(rate, buffer_ticks)``; ``-d`` adds ``/cell mpu`` and
  ``linklayer ethernet``;
* ``tc/q_netem.c`` ``netem_print_opt``: ``limit N`` then delay (+ two spaces
  + jitter [+ corr]), loss (random, ``state``, ``gemodel``), duplicate,
  reorder, corrupt, rate, slot, `` ecn ``, gap; percentages ``%g%%`` of
  u32/(2³²−1); [lab2019] delays come back from the kernel as 64-ns ticks
  and print through ``sprint_ticks``, [modern] as ns via ``print_time64``;
* ``tc/q_sfb.c`` ``sfb_print_opt``/``sfb_print_xstats``: [lab2019] (before
  iproute2 5.6) ``limit L max M target T`` + newline + ``  increment %.5f
  decrement %.5f penalty rate R burst B (Rms Dms)``; [modern] ``rehash T db T
  limit Lp max Mp target Tp increment %g decrement %g penalty_rate Rpps
  penalty_burst Bp ``; xstats ``  earlydrop … marked M`` then ``  maxqlen L
  maxprob F avgprob F`` (probabilities Q0.16 / 65535);
* ``tc/q_red.c`` (``limit min max `` + flags, ``-d`` ewma/probability/
  Scell_log, xstats ``  marked … early … pdrop … other …``), ``tc/q_fifo.c``
  (``limit Np`` / ``limit SIZE``), ``tc/q_prio.c`` for ``pfifo_fast``
  (``bands 3 priomap  1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1``); ``noqueue`` has
  no options.

Blocks follow docs/internals.md: ``{"kind", "handle", "parent": [maj, min] |
null, "anonymous", "options", "stats"}``; ``options`` is the kind's spec from
crates/bufferlab-core/src/qdisc/spec.rs in kernel units. Two optional keys
are honoured: ``refcnt`` (default 2 for a root, 1 otherwise) and
``xstats`` (red: ``{"marked", "early", "pdrop", "other"[, "classes"]}``;
blue: ``{"pmark", "early", "overflow", "marked"[, "classes"]}``). ``red``
options (the engine's ``RedSpec`` JSON, ``max_p`` = current value) are read
as ``limit``, ``min``/``qth_min``,
``max``/``qth_max`` (bytes), ``ecn``/``harddrop``/``adaptive``/``nodrop``
(bools) and, for ``-d``, ``wlog``, ``max_p`` (u32), ``plog``, ``scell_log``.
Any other kind raises ``ValueError``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

__all__ = [
    "tc_show_text",
    "sprint_size",
    "sprint_rate",
    "sprint_time",
    "sprint_time64",
    "sprint_percent",
    "tbf_latency_us",
]

UINT32_MAX = 4294967295
TICKS_PER_US = 15.625  # /proc/net/psched: 1000/64


def _rint(x: float) -> float:
    return float(round(x))  # Python rounds half to even, like rint()


def sprint_size(sz: int) -> str:
    """``sprint_size``: 26214400 → ``25Mb``, 2621440 → ``2560Kb``, 2184533 → ``2184533b``."""
    sz = int(sz) & 0xFFFFFFFF  # __u32 argument
    tmp = float(sz)
    mb = 1024 * 1024
    if sz >= mb and abs(mb * _rint(tmp / mb) - sz) < 1024:
        return "%gMb" % _rint(tmp / mb)
    if sz >= 1024 and abs(1024 * _rint(tmp / 1024) - sz) < 16:
        return "%gKb" % _rint(tmp / 1024)
    return "%db" % sz


def sprint_rate(bytes_per_s: int) -> str:
    """``sprint_rate`` of a rate in bytes/s (printed in bit/s)."""
    rate = int(bytes_per_s) * 8
    units = ("", "K", "M", "G", "T")
    i = 0
    while i < len(units) - 1:
        if rate < 1000:
            break
        if rate % 1000 != 0 and rate < 1000 * 1000:
            break
        rate //= 1000
        i += 1
    return "%.0f%sbit" % (float(rate), units[i])


def _u32(x: float) -> int:
    """C conversion of a non-negative double to ``__u32`` (truncation)."""
    return int(math.trunc(x)) & 0xFFFFFFFF


def sprint_time(us: float, modern: bool) -> str:
    """``sprint_time``: the argument is a ``__u32`` number of µs."""
    t = _u32(us)
    tmp = float(t)
    if tmp >= 1e6:
        return ("%.3gs" if modern else "%.1fs") % (tmp / 1e6)
    if tmp >= 1e3:
        return ("%.3gms" if modern else "%.1fms") % (tmp / 1e3)
    return "%dus" % t


def sprint_time64(ns: int) -> str:
    """``print_time64`` (iproute2 ≥ 4.16 netem times, ns)."""
    ns = int(ns)
    tmp = float(ns)
    if ns >= 1_000_000_000:
        return "%.3gs" % (tmp / 1e9)
    if ns >= 1_000_000:
        return "%.3gms" % (tmp / 1e6)
    if ns >= 1_000:
        return "%.3gus" % (tmp / 1e3)
    return "%dns" % ns


def sprint_percent(per: int) -> str:
    """``sprint_percent`` of a u32 probability: 429497 → ``0.01%``."""
    return "%g%%" % (100.0 * int(per) / UINT32_MAX)


# --- tc_core.c ----------------------------------------------------------------


def _xmittime(rate: int, size: int, modern: bool) -> int:
    """``tc_calc_xmittime``: psched ticks to send ``size`` bytes at ``rate`` B/s."""
    t = 1e6 * (float(size) / float(rate))
    if modern:
        val = math.ceil(t * TICKS_PER_US)
        return min(int(val), UINT32_MAX)
    return _u32(_u32(t) * TICKS_PER_US)


def _tick2time(ticks: int, modern: bool) -> float:
    if modern:
        return ticks / TICKS_PER_US
    return float(_u32(ticks / TICKS_PER_US))


def _xmitsize(rate: int, ticks: int, modern: bool) -> int:
    """``tc_calc_xmitsize``: bytes sent at ``rate`` during ``ticks``."""
    return int(math.trunc(float(rate) * _tick2time(ticks, modern) / 1e6))


def _cell_log(mtu: int) -> int:
    """``tc_calc_rtable`` with cell_log −1 (mtu 0 → 2047)."""
    mtu = mtu or 2047
    cell_log = 0
    while (mtu >> cell_log) > 255:
        cell_log += 1
    return cell_log


def tbf_latency_us(opts: dict[str, Any], modern: bool) -> float:
    """The ``lat`` value ``tbf_print_opt`` computes (may be negative)."""
    rate = int(opts["rate"])
    buffer_ticks = _xmittime(rate, int(opts["burst"]), modern)
    latency = 1e6 * (int(opts["limit"]) / float(rate)) - _tick2time(buffer_ticks, modern)
    prate = opts.get("peakrate")
    if prate:
        mtu_ticks = _xmittime(int(prate), int(opts.get("mtu") or 0), modern)
        lat2 = 1e6 * (int(opts["limit"]) / float(prate)) - _tick2time(mtu_ticks, modern)
        latency = max(latency, lat2)
    return latency


# --- per-kind option text ------------------------------------------------------------


def _tbf(opts: dict[str, Any], modern: bool, details: bool) -> str:
    rate = int(opts["rate"])
    mpu = int(opts.get("mpu") or 0)
    prate = int(opts.get("peakrate") or 0)
    mtu = int(opts.get("mtu") or 0)
    cell = 1 << _cell_log(mtu)
    buffer_ticks = _xmittime(rate, int(opts["burst"]), modern)
    burst = _xmitsize(rate, buffer_ticks, modern)
    out = "rate %s " % sprint_rate(rate)
    if details:
        out += "burst %s/%d mpu %s " % (sprint_size(burst), cell, sprint_size(mpu))
    else:
        out += "burst %s " % sprint_size(burst)
    if prate:
        out += "peakrate %s " % sprint_rate(prate)
        if mtu or mpu:
            mtu_p = _xmitsize(prate, _xmittime(prate, mtu, modern), modern)
            if details:
                out += "mtu %s/%d mpu %s " % (sprint_size(mtu_p), cell, sprint_size(mpu))
            else:
                out += "minburst %s " % sprint_size(mtu_p)
    latency = tbf_latency_us(opts, modern)
    if latency >= 0.0:
        out += "lat %s " % sprint_time(latency, modern)
    else:
        out += "limit %s " % sprint_size(int(opts["limit"]))
    overhead = int(opts.get("overhead") or 0)
    if overhead:
        out += "overhead %d" % overhead
    if opts.get("atm") or details:
        out += "linklayer %s " % ("atm" if opts.get("atm") else "ethernet")
    return out


def _netem_time(ns: int, modern: bool) -> str:
    if modern:
        return sprint_time64(ns)
    ticks = min(int(ns) >> 6, UINT32_MAX)  # kernel PSCHED_NS2TICKS into a u32
    return sprint_time(_tick2time(ticks, False), False)


def _netem(opts: dict[str, Any], modern: bool, details: bool) -> str:
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


def _red(opts: dict[str, Any], modern: bool, details: bool) -> str:
    qmin = opts.get("qth_min", opts.get("min"))
    qmax = opts.get("qth_max", opts.get("max"))
    out = "limit %s min %s max %s " % (sprint_size(int(opts["limit"])), sprint_size(int(qmin)),
                                       sprint_size(int(qmax)))
    if opts.get("ecn"):
        out += "ecn "
    if opts.get("harddrop"):
        out += "harddrop "
    if opts.get("adaptive"):
        out += "adaptive "
    if modern and opts.get("nodrop"):
        out += "nodrop "
    if details:
        out += "ewma %d " % int(opts.get("wlog", 0))
        max_p = int(opts.get("max_p") or 0)
        if max_p:
            out += "probability %g " % (max_p / 2.0**32)
        else:
            out += "Plog %d " % int(opts.get("plog", 0))
        out += "Scell_log %d" % int(opts.get("scell_log", 0))
        if opts.get("dscp_coeff"):
            out += " "
    if opts.get("dscp_coeff"):
        out += "dscp-coeff %s " % _dscp_coeff_text(opts["dscp_coeff"])
    return out


def _coeff(num: int, den: int) -> str:
    return "%g" % (int(num) / int(den))


def _dscp_coeff_text(m: dict[str, Any]) -> str:
    """The CPM map as it was typed (qdiscs.md §7): ``0x32:0.5,...,default:0.9``."""
    dscp = bool(m.get("match_dscp"))
    parts = [("%d" if dscp else "0x%02x") % int(c["key"]) + ":" + _coeff(c["num"], c["den"])
             for c in m.get("classes") or []]
    num, den = m.get("default") or (1, 1)
    parts.append("default:" + _coeff(num, den))
    out = ",".join(parts)
    if dscp:
        out += " dscp-match dscp"
    return out


def _class_xstats(x: dict[str, Any]) -> str:
    """SIM per-class lines ``  class 0x32 passed N marked M early E pdrop P``."""
    out = ""
    for c in x.get("classes") or []:
        out += "  class %s passed %d marked %d early %d pdrop %d\n" % (
            c.get("key"), int(c.get("passed", 0)), int(c.get("marked", 0)), int(c.get("early", 0)),
            int(c.get("pdrop", 0)))
    return out


def _blue(opts: dict[str, Any], modern: bool) -> str:
    out = "limit %dp increment %g decrement %g " % (
        int(opts.get("limit", 1000)), int(opts.get("increment", 0)) / 2.0**32,
        int(opts.get("decrement", 0)) / 2.0**32)
    fi, fd = int(opts.get("freeze_inc", 0)), int(opts.get("freeze_dec", 0))
    if opts.get("shared", True):
        out += "freeze %s " % sprint_time(fi / 1000, modern)
    else:
        out += "freeze_inc %s freeze_dec %s " % (
            sprint_time(fi / 1000, modern), sprint_time(fd / 1000, modern))
    if opts.get("qthresh") is not None:
        out += "qthresh %dp " % int(opts["qthresh"])
    if opts.get("ecn"):
        out += "ecn "
    if opts.get("dscp_coeff"):
        out += "dscp-coeff %s " % _dscp_coeff_text(opts["dscp_coeff"])
    return out


def _blue_xstats(block: dict[str, Any]) -> str:
    x = block.get("xstats") or {}
    line = "  pmark %g early %d overflow %d marked %d\n" % (
        float(x.get("pmark", 0.0)), int(x.get("early", 0)), int(x.get("overflow", 0)),
        int(x.get("marked", 0)))
    return line + _class_xstats(x)


def _codel_common(opts: dict[str, Any], modern: bool) -> str:
    out = "target %s " % sprint_time(int(opts.get("target", 5000)), modern)
    if opts.get("ce_threshold") is not None:
        out += "ce_threshold %s " % sprint_time(int(opts["ce_threshold"]), modern)
    return out + "interval %s " % sprint_time(int(opts.get("interval", 100000)), modern)


def _codel(opts: dict[str, Any], modern: bool) -> str:
    """tc/q_codel.c ``codel_print_opt``."""
    out = "limit %dp " % int(opts.get("limit", 1000)) + _codel_common(opts, modern)
    if opts.get("ecn"):
        out += "ecn "
    return out


def _fq_codel(opts: dict[str, Any], modern: bool) -> str:
    """tc/q_fq_codel.c ``fq_codel_print_opt`` (``drop_batch`` from iproute2 v5 on = modern)."""
    out = "limit %dp flows %d quantum %d " % (
        int(opts.get("limit", 10240)), int(opts.get("flows", 1024)), int(opts.get("quantum", 1514)))
    out += _codel_common(opts, modern)
    out += "memory_limit %s " % sprint_size(int(opts.get("memory_limit", 32 << 20)))
    if opts.get("ecn", True):
        out += "ecn "
    if modern:
        out += "drop_batch %d " % int(opts.get("drop_batch", 64))
    return out


def _codel_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = "  count %d lastcount %d ldelay %s" % (g("count"), g("lastcount"), sprint_time(g("ldelay"), modern))
    if x.get("dropping"):
        out += " dropping"
    dn = g("drop_next")
    if dn < 0:
        out += " drop_next -%s" % sprint_time(-dn, modern)
    else:
        out += " drop_next %s" % sprint_time(dn, modern)
    out += "\n  maxpacket %d ecn_mark %d drop_overlimit %d" % (
        g("maxpacket"), g("ecn_mark"), g("drop_overlimit"))
    if g("ce_mark"):
        out += " ce_mark %d" % g("ce_mark")
    return out + "\n"


def _fq_codel_xstats(block: dict[str, Any]) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = "  maxpacket %d drop_overlimit %d new_flow_count %d ecn_mark %d" % (
        g("maxpacket"), g("drop_overlimit"), g("new_flow_count"), g("ecn_mark"))
    if g("ce_mark"):
        out += " ce_mark %d" % g("ce_mark")
    if "memory_used" in x:
        out += " memory_used %d" % g("memory_used")
    if "drop_overmemory" in x:
        out += " drop_overmemory %d" % g("drop_overmemory")
    out += "\n  new_flows_len %d old_flows_len %d\n" % (g("new_flows_len"), g("old_flows_len"))
    return out


def _pie(opts: dict[str, Any], modern: bool) -> str:
    """tc/q_pie.c ``pie_print_opt``."""
    out = "limit %dp target %s tupdate %s alpha %d beta %d " % (
        int(opts.get("limit", 1000)), sprint_time(int(opts.get("target", 15000)), modern),
        sprint_time(int(opts.get("tupdate", 16000)), modern), int(opts.get("alpha", 2)),
        int(opts.get("beta", 20)))
    for flag in ("ecn", "bytemode", "dq_rate_estimator"):
        if opts.get(flag):
            out += flag + " "
    return out


def _pie_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = "  prob %g delay %s" % (float(x.get("prob", 0.0)), sprint_time(g("delay"), modern))
    if "avg_dq_rate" in x:
        out += " avg_dq_rate %d" % g("avg_dq_rate")
    out += "\n  pkts_in %d overlimit %d dropped %d maxq %d ecn_mark %d\n" % (
        g("packets_in"), g("overlimit"), g("dropped"), g("maxq"), g("ecn_mark"))
    return out


def _red_ns3(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """SIM ``red_ns3`` (qdiscs.md §5.10): the attributes as typed, in ns-3's terms."""
    bytes_mode = opts.get("mode") == "bytes"
    limit = int(opts.get("limit", 25))
    out = "variant %s mode %s limit %s minth %g maxth %g qw %g " % (
        opts.get("variant", "qdisc"), opts.get("mode", "packets"),
        sprint_size(limit) if bytes_mode else "%dp" % limit, float(opts.get("min_th", 5.0)),
        float(opts.get("max_th", 15.0)), float(opts.get("qw", 0.002)))
    if opts.get("linterm") is not None:
        out += "linterm %g " % float(opts["linterm"])
    else:
        out += "maxp %g " % float(opts.get("max_p") or 0.0)
    out += "meanpktsize %d %s %s " % (int(opts.get("mean_pkt_size", 500)),
                                      "gentle" if opts.get("gentle", True) else "nogentle",
                                      "wait" if opts.get("wait", True) else "nowait")
    out += "bandwidth %s linkdelay %s " % (sprint_rate(int(opts.get("bandwidth", 1500000)) // 8),
                                           sprint_time(int(opts.get("link_delay", 20000000)) / 1000, modern))
    if opts.get("ecn"):
        out += "ecn " + ("" if opts.get("harddrop", True) else "noharddrop ")
    for flag, name in (("ns1compat", "ns1compat"), ("ared", "ared"), ("adapt_max_p", "adaptmaxp"),
                       ("feng", "feng"), ("nlred", "nlred")):
        if opts.get(flag):
            out += name + " "
    if details and (opts.get("ared") or opts.get("adapt_max_p")):
        out += "target %s interval %s top %g bottom %g alpha %g beta %g rtt %s " % (
            sprint_time(int(opts.get("target_delay", 5000000)) / 1000, modern),
            sprint_time(int(opts.get("interval", 500000000)) / 1000, modern), float(opts.get("top", 0.5)),
            float(opts.get("bottom", 0.0)), float(opts.get("alpha", 0.01)), float(opts.get("beta", 0.9)),
            sprint_time(int(opts.get("rtt", 100000000)) / 1000, modern))
    if details and opts.get("feng"):
        out += "fengalpha %g fengbeta %g " % (float(opts.get("feng_alpha", 3.0)),
                                              float(opts.get("feng_beta", 2.0)))
    return out


def _red_ns3_xstats(block: dict[str, Any], modern: bool) -> str:
    """Linux red's line (marked = ECN marks, early = unforced + forced drops, pdrop = hard-limit
    drops), then ns-3's own counters (2015: forced_drop includes qlim_drop, as ns-3 counts) and
    the live average, max_p and effective weight/thresholds."""
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = _red_xstats(block, modern)
    out += "  unforced_drop %d forced_drop %d qlim_drop %d unforced_mark %d forced_mark %d\n" % (
        g("unforced_drop"), g("forced_drop"), g("qlim_drop"), g("unforced_mark"), g("forced_mark"))
    out += "  avg %g cur_max_p %g qw %g minth %g maxth %g\n" % tuple(
        float(x.get(k, 0.0)) for k in ("avg", "cur_max_p", "qw", "min_th", "max_th"))
    return out


def _c_int(v: Any) -> int:
    """A ``__u32`` printed with ``%d``."""
    x = int(v) & 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


def _sfb(opts: dict[str, Any], modern: bool) -> str:
    g = lambda k: int(opts.get(k, 0)) & 0xFFFFFFFF  # noqa: E731
    inc, dec = g("increment") / 65535.0, g("decrement") / 65535.0
    if not modern:
        return ("limit %d max %d target %d\n  increment %.5f decrement %.5f penalty rate %d burst %d "
                "(%ums %ums)") % (_c_int(g("limit")), _c_int(g("max")), _c_int(g("target")), inc, dec,
                                  _c_int(g("penalty_rate")), _c_int(g("penalty_burst")), g("rehash"), g("db"))
    # the ms values are multiplied by 1000 in __u32 before sprint_time
    out = "rehash %s db %s " % (sprint_time(g("rehash") * 1000, True), sprint_time(g("db") * 1000, True))
    out += "limit %up max %up target %up " % (g("limit"), g("max"), g("target"))
    out += "increment %g decrement %g " % (inc, dec)
    return out + "penalty_rate %upps penalty_burst %up " % (g("penalty_rate"), g("penalty_burst"))


def _sfb_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0)) & 0xFFFFFFFF  # noqa: E731
    out = "  earlydrop %u penaltydrop %u bucketdrop %u queuedrop %u childdrop %u marked %u\n" % (
        g("earlydrop"), g("penaltydrop"), g("bucketdrop"), g("queuedrop"), g("childdrop"), g("marked"))
    fmt = "  maxqlen %u maxprob %g avgprob %g\n" if modern else "  maxqlen %u maxprob %.5f avgprob %.5f \n"
    return out + fmt % (g("maxqlen"), g("maxprob") / 65535.0, g("avgprob") / 65535.0)


def _red_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    vals = tuple(int(x.get(k, 0)) for k in ("marked", "early", "pdrop", "other"))
    if modern:
        return "  marked %d early %d pdrop %d other %d \n" % vals + _class_xstats(x)
    return "  marked %d early %d pdrop %d other %d\n" % vals + _class_xstats(x)


def _options_text(kind: str, opts: dict[str, Any], modern: bool, details: bool) -> str:
    if kind == "noqueue":
        return ""
    if kind in ("pfifo", "pfifo_head_drop"):
        limit = opts.get("limit")
        return "limit %dp" % (1000 if limit is None else int(limit))
    if kind == "bfifo":
        limit = opts.get("limit")
        return "limit %s" % sprint_size(1514000 if limit is None else int(limit))
    if kind == "pfifo_fast":
        bands = int(opts.get("bands", 3))
        priomap = opts.get("priomap") or [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1]
        return "bands %d priomap " % bands + "".join(" %d" % int(p) for p in priomap)
    if kind == "tbf":
        return _tbf(opts, modern, details)
    if kind == "netem":
        return _netem(opts, modern, details)
    if kind == "red":
        return _red(opts, modern, details)
    if kind == "blue":
        return _blue(opts, modern)
    if kind == "codel":
        return _codel(opts, modern)
    if kind == "fq_codel":
        return _fq_codel(opts, modern)
    if kind == "pie":
        return _pie(opts, modern)
    if kind == "red_ns3":
        return _red_ns3(opts, modern, details)
    if kind == "sfb":
        return _sfb(opts, modern)
    raise ValueError(
        f"tc_show_text: qdisc kind {kind!r} has no printer yet "
        "(known: noqueue, pfifo, bfifo, pfifo_head_drop, pfifo_fast, tbf, netem, red, blue, "
        "codel, fq_codel, pie, red_ns3, sfb)")


def _classid(parent: Any) -> str:
    major, minor = int(parent[0]), int(parent[1])
    if minor == 0:
        return "%x:" % major
    if major == 0:
        return ":%x" % minor
    return "%x:%x" % (major, minor)


def _block_text(block: dict[str, Any], modern: bool, stats: bool, details: bool, dev: str | None) -> str:
    kind = block["kind"]
    opts = dict(block.get("options") or {})
    parent = block.get("parent")
    line = "qdisc %s %x: " % (kind, int(block.get("handle", 0)))
    if dev is not None:
        line += "dev %s " % dev
    line += "root " if parent is None else "parent %s " % _classid(parent)
    refcnt = int(block.get("refcnt", 2 if parent is None else 1))
    if refcnt != 1:
        line += "refcnt %d " % refcnt
    line += _options_text(kind, opts, modern, details) + "\n"
    if not stats:
        return line
    st = block.get("stats") or {}
    g = lambda k: int(st.get(k, 0))  # noqa: E731
    line += " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues %d) \n" % (
        g("bytes"), g("packets"), g("drops"), g("overlimits"), g("requeues"))
    line += " backlog %s %dp requeues %d\n" % (sprint_size(g("backlog")), g("qlen"), g("requeues"))
    if kind == "red":
        line += _red_xstats(block, modern)
    elif kind == "blue":
        line += _blue_xstats(block)
    elif kind == "codel":
        line += _codel_xstats(block, modern)
    elif kind == "fq_codel":
        line += _fq_codel_xstats(block)
    elif kind == "pie":
        line += _pie_xstats(block, modern)
    elif kind == "red_ns3":
        line += _red_ns3_xstats(block, modern)
    elif kind == "sfb":
        line += _sfb_xstats(block, modern)
    return line


def tc_show_text(blocks: Iterable[dict[str, Any]] | str, profile: Any, stats: bool = True,
                 details: bool = False, invisible: bool = False, dev: str | None = None) -> str:
    """``tc [-s] [-d] qdisc show dev X [invisible]`` for the engine's blocks.

    ``blocks`` is the list (or the JSON text) returned by
    ``Simulator.qdisc_show``; anonymous default children are shown only
    with ``invisible=True``. ``dev`` is given when ``tc qdisc show`` named no
    device: tc then prints ``dev NAME`` in every block's first line.
    """
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    modern = bool(profile.tc_modern_print)
    out = []
    for block in blocks:
        if block.get("anonymous") and not invisible:
            continue
        out.append(_block_text(block, modern, stats, details, dev))
    return "".join(out)
