"""``cake``, tc/q_cake.c (docs/semantics/qdiscs.md §14).

Parsing follows ``cake_parse_opt``: exact keywords (no prefixes), the last of
conflicting keywords wins, the framing presets add to the overhead and set the
cell mode, ``rtt TIME`` sets the target to rtt/20, a second rtt preset is
iproute2's ``duparg`` error; only the attributes tc would send are set (None =
not sent). Printing: ``cake_print_opt`` for the options the kernel dumps
(``cake_dump``: every attribute, ``raw`` while no overhead is configured) and
``cake_print_xstats`` for ``tc -s`` (memory, capacity estimate, packet sizes,
the per-tin table in the kernel's tin order). ``tc class show`` lists the flows
on a list (``class_show_lines``).
"""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_rate, parse_size, parse_time_us
from .._common import c_int_full, c_strtol, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecCake as CakeSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_rate, sprint_size, sprint_time

#: the rtt presets of q_cake.c: name -> (target µs, interval µs)
PRESETS: dict[str, tuple[int, int]] = {
    "datacentre": (5, 100),
    "lan": (50, 1000),
    "metro": (500, 10000),
    "regional": (1500, 30000),
    "internet": (5000, 100000),
    "oceanic": (15000, 300000),
    "satellite": (50000, 1000000),
    "interplanetary": (50000000, 1000000000),
}
DIFFSERV = {
    "besteffort": "besteffort",
    "precedence": "precedence",
    "diffserv8": "diffserv8",
    "diffserv4": "diffserv4",
    "diffserv": "diffserv4",
    "diffserv3": "diffserv3",
}
FLOWMODES = (
    "flowblind", "srchost", "dsthost", "hosts", "flows", "dual-srchost", "dual-dsthost", "triple-isolate",
)
#: framing presets: name -> (cell mode or None = unchanged, overhead added, mpu or None)
FRAMING: dict[str, tuple[str | None, int, int | None]] = {
    "ipoa-vcmux": ("atm", 8, None),
    "ipoa-llcsnap": ("atm", 16, None),
    "bridged-vcmux": ("atm", 24, None),
    "bridged-llcsnap": ("atm", 32, None),
    "pppoa-vcmux": ("atm", 10, None),
    "pppoa-llc": ("atm", 14, None),
    "pppoe-vcmux": ("atm", 32, None),
    "pppoe-llcsnap": ("atm", 40, None),
    "pppoe-ptm": ("ptm", 30, None),
    "bridged-ptm": ("ptm", 22, None),
    "ethernet": (None, 38, 84),
    "ether-vlan": (None, 4, None),
    "docsis": ("noatm", 18, 64),
}
FLAGS = {
    "nat": ("nat", True), "nonat": ("nat", False),
    "wash": ("wash", True), "nowash": ("wash", False),
    "split-gso": ("split_gso", True), "no-split-gso": ("split_gso", False),
    "ingress": ("ingress", True), "egress": ("ingress", False),
    "no-ack-filter": ("ack_filter", "none"), "ack-filter": ("ack_filter", "filter"),
    "ack-filter-aggressive": ("ack_filter", "aggressive"),
    "ptm": ("atm", "ptm"), "atm": ("atm", "atm"), "noatm": ("atm", "noatm"),
}
#: every keyword cake_parse_opt knows (the fuzz dictionaries cover these)
KEYWORDS = (
    ["bandwidth", "unlimited", "autorate-ingress", "rtt", "overhead", "mpu", "memlimit", "fwmark", "raw",
     "conservative", "via-ethernet", "help"]
    + list(PRESETS) + list(DIFFSERV) + list(FLOWMODES) + list(FRAMING) + list(FLAGS)
)

CAKE_USAGE = (
    "Usage: ... cake [ bandwidth RATE | unlimited* | autorate-ingress ]\n"
    "                [ rtt TIME | datacentre | lan | metro | regional |\n"
    "                  internet* | oceanic | satellite | interplanetary ]\n"
    "                [ besteffort | diffserv8 | diffserv4 | diffserv3* ]\n"
    "                [ flowblind | srchost | dsthost | hosts | flows |\n"
    "                  dual-srchost | dual-dsthost | triple-isolate* ]\n"
    "                [ nat | nonat* ]\n"
    "                [ wash | nowash* ]\n"
    "                [ split-gso* | no-split-gso ]\n"
    "                [ ack-filter | ack-filter-aggressive | no-ack-filter* ]\n"
    "                [ memlimit LIMIT ]\n"
    "                [ fwmark MASK ]\n"
    "                [ ptm | atm | noatm* ] [ overhead N | conservative | raw* ]\n"
    "                [ mpu N ] [ ingress | egress* ]\n"
    "                (* marks defaults)"
)


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> CakeSpec:
    spec = CakeSpec()
    bandwidth = 0
    unlimited = False
    overhead = 0
    overhead_set = False
    mpu = 0
    preset_set: str | None = None
    interval = target = 0
    nat_word: Word | None = None
    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "bandwidth":
            v = cur.value(w, "bandwidth RATE")
            bandwidth = read_unit(parse_rate, v, 'Illegal "bandwidth"')
            unlimited = False
            spec.autorate = False
        elif t == "unlimited":
            bandwidth = 0
            unlimited = True
            spec.autorate = False
        elif t == "autorate-ingress":
            spec.autorate = True
        elif t == "rtt":
            v = cur.value(w, "rtt TIME")
            interval = read_unit(parse_time_us, v, 'Illegal "rtt"')
            target = interval // 20 or 1
        elif t in PRESETS:
            if preset_set is not None:
                raise CommandError(
                    f'Error: duplicate "{t}": "{preset_set}" is the second value.',
                    col=w.col, expected="one rtt preset",
                )
            preset_set = t
            target, interval = PRESETS[t]
        elif t in DIFFSERV:
            spec.diffserv = DIFFSERV[t]
        elif t in FLOWMODES:
            spec.flowmode = t
        elif t in FLAGS:
            attr, value = FLAGS[t]
            setattr(spec, attr, value)
            if t == "nat":
                nat_word = w
        elif t == "raw":
            spec.atm = "noatm"
            overhead = 0
            overhead_set = True
            spec.raw = True
        elif t == "conservative":
            spec.atm = "atm"
            overhead = 48
            overhead_set = True
        elif t in FRAMING:
            cell, add, preset_mpu = FRAMING[t]
            if cell is not None:
                spec.atm = cell
            overhead += add
            overhead_set = True
            if preset_mpu is not None:
                mpu = preset_mpu
        elif t == "via-ethernet":
            pass  # ignored by tc (kept for old scripts)
        elif t == "overhead":
            v = cur.value(w, "overhead N")
            n, rest = c_strtol(v.text, 10)
            if n is None or rest or not v.text or not -64 <= n <= 256:
                raise CommandError('Illegal "overhead", valid range is -64 to 256\\n', col=v.col,
                                   expected="overhead N with N from -64 to 256")
            overhead = n
            overhead_set = True
        elif t == "mpu":
            v = cur.value(w, "mpu N")
            n, rest = c_strtol(v.text, 10)
            if n is None or rest or not v.text or not 0 <= n <= 256:
                raise CommandError('Illegal "mpu", valid range is 0 to 256\\n', col=v.col,
                                   expected="mpu N with N from 0 to 256")
            mpu = n
        elif t == "memlimit":
            v = cur.value(w, "memlimit LIMIT")
            spec.memlimit = read_unit(parse_size, v, f'Illegal value for "memlimit": "{v.text}"') or None
        elif t == "fwmark":
            v = cur.value(w, "fwmark MASK")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError(f'Illegal value for "fwmark": "{v.text}"', col=v.col,
                                   expected="fwmark MASK, e.g. 0xff")
            spec.fwmark = n or None
        elif t == "help":
            raise CommandError(CAKE_USAGE, col=w.col)
        else:
            raise CommandError(f'What is "{t}"?', col=w.col, expected=CAKE_USAGE,
                               suggestion=suggestion_for(t, KEYWORDS))
    if bandwidth or unlimited:
        spec.bandwidth = bandwidth
    if overhead_set:
        spec.overhead = overhead
    if mpu > 0:
        spec.mpu = mpu
    if interval:
        spec.rtt = interval
    if target:
        spec.target = target
    if nat_word is not None and spec.nat:
        diag.warn("cake nat: conntrack is not modelled; flows and hosts are told apart by the addresses and "
                  "ports each packet carries (no NAT happens in a bufferlab network)", col=nat_word.col)
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_cake.c ``cake_print_opt`` for what ``cake_dump`` sends (every attribute)."""
    bw = int(opts.get("bandwidth", 0))
    out = "bandwidth %s " % (sprint_rate(bw) if bw else "unlimited")
    if opts.get("autorate"):
        out += "autorate-ingress "
    out += "%s " % opts.get("diffserv", "diffserv3")
    out += "%s " % opts.get("flowmode", "triple-isolate")
    out += "nat " if opts.get("nat") else "nonat "
    out += "wash " if opts.get("wash") else "nowash "
    if opts.get("ingress"):
        out += "ingress "
    ack = opts.get("ack_filter", "none")
    out += {"aggressive": "ack-filter-aggressive ", "filter": "ack-filter "}.get(ack, "no-ack-filter ")
    out += "split-gso " if opts.get("split_gso", True) else "no-split-gso "
    rtt = int(opts.get("rtt", 100000))
    if rtt:
        out += "rtt %s " % sprint_time(rtt, modern)
    raw = bool(opts.get("raw", True))
    if raw:
        out += "raw "
    atm = opts.get("atm", "noatm")
    if atm in ("atm", "ptm"):
        out += atm + " "
    elif not raw:
        out += "noatm "
    out += "overhead %d " % int(opts.get("overhead", 0))
    if int(opts.get("mpu", 0)):
        out += "mpu %d " % int(opts["mpu"])
    if int(opts.get("memlimit", 0)):
        out += ("memlimit %s " if modern else "memlimit %s") % sprint_size(int(opts["memlimit"]))
    if int(opts.get("fwmark", 0)):
        out += "fwmark 0x%x " % int(opts["fwmark"])
    return out


_TIN_ROWS = (
    ("  target  ", "target_us", "time"),
    ("  interval", "interval_us", "time"),
    ("  pk_delay", "peak_delay_us", "time"),
    ("  av_delay", "avg_delay_us", "time"),
    ("  sp_delay", "base_delay_us", "time"),
    ("  backlog ", "backlog_bytes", "size"),
    ("  pkts    ", "sent_packets", "n"),
    ("  bytes   ", "sent_bytes", "n"),
    ("  way_inds", "way_indirect_hits", "n"),
    ("  way_miss", "way_misses", "n"),
    ("  way_cols", "way_collisions", "n"),
    ("  drops   ", "drops", "n"),
    ("  marks   ", "ecn_mark", "n"),
    ("  ack_drop", "ack_drops", "n"),
    ("  sp_flows", "sparse_flows", "n"),
    ("  bk_flows", "bulk_flows", "n"),
    ("  un_flows", "unresponsive_flows", "n"),
    ("  max_len ", "max_pkt_len", "n"),
    ("  quantum ", "flow_quantum", "n"),
)


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    """tc/q_cake.c ``cake_print_xstats`` (text output); tc ends the block with a newline."""
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = " memory used: %s of %s\n" % (sprint_size(g("memory_used")), sprint_size(g("memory_limit")))
    out += " capacity estimate: %s\n" % sprint_rate(g("capacity_estimate"))
    out += " min/max network layer size: %12u /%8u\n" % (g("min_network_size"), g("max_network_size"))
    out += " min/max overhead-adjusted size: %8u /%8u\n" % (g("min_adj_size"), g("max_adj_size"))
    out += " average network hdr offset: %12u\n\n" % g("avg_hdr_offset")
    tins = list(x.get("tins") or [])
    if not tins:
        return out
    n = len(tins)
    if n == 3:
        out += "                   Bulk  Best Effort        Voice\n"
    elif n == 4:
        out += "                   Bulk  Best Effort        Video        Voice\n"
    else:
        out += "          " + "".join("        Tin %u" % i for i in range(n)) + "\n"
    out += "  thresh  " + "".join(" %12s" % sprint_rate(int(t["threshold_rate"])) for t in tins) + "\n"
    for name, key, how in _TIN_ROWS:
        cells = []
        for t in tins:
            v = int(t.get(key, 0))
            if how == "time":
                cells.append(" %12s" % sprint_time(v, modern))
            elif how == "size":
                cells.append(" %12s" % sprint_size(v))
            else:
                cells.append(" %12u" % v)
        out += name + "".join(cells) + "\n"
    return out + "\n"


def _class_xstats(c: dict[str, Any], modern: bool) -> str:
    """The class branch of ``cake_print_xstats``: deficit and count, ``dropping`` and
    the next signal only while dropping, BLUE's probability always (the kernel sends
    it for every flow) and its timer only when the probability is not 0. A negative
    time keeps iproute2's sign handling: drop_next is negated before ``sprint_time``,
    blue_timer is not (its ``__u32`` wraps)."""
    out = "  deficit %d count %u" % (int(c["deficit"]), int(c["count"]))
    if c["dropping"]:
        out += " dropping"
        drop_next = int(c["drop_next_us"])
        if drop_next < 0:
            out += " drop_next -%s" % sprint_time(-drop_next, modern)
        else:
            out += " drop_next %s" % sprint_time(drop_next, modern)
    out += " blue_prob %u" % int(c["p_drop"])
    if "blue_timer_us" in c:
        blue_timer = int(c["blue_timer_us"])
        out += (" blue_timer -%s" if blue_timer < 0 else " blue_timer %s") % sprint_time(blue_timer, modern)
    return out


def class_show_lines(block: dict[str, Any], stats: bool, modern: bool) -> str:
    """``tc [-s] class show`` of one cake: a class per flow on a list (the engine's
    ``class_show``: sch_cake.c ``cake_walk``, tins in dump order then queues), printed
    by tc/tc_class.c ``print_class``. ``cake_dump_class`` only sets the handle's minor,
    so the parent is the qdisc (``parent MAJ:``) and no options follow;
    ``cake_dump_class_stats`` sends queue statistics alone, so tc/tc_util.c
    ``print_tcstats2_attr`` prints no ``Sent`` line: the ``(dropped …)`` part, then the
    backlog line."""
    major = int(block["handle"])
    out = []
    for c in (block.get("xstats") or {}).get("classes", []):
        line = "class cake %x:%x parent %x: \n" % (major, int(c["minor"]), major)
        if stats:
            line += " (dropped %u, overlimits 0 requeues 0) \n" % int(c["drops"])
            line += " backlog %s %up requeues 0\n" % (sprint_size(int(c["backlog"])), int(c["qlen"]))
            line += _class_xstats(c, modern) + "\n"
        out.append(line)
    return "".join(out)


KINDS = (QdiscKind("cake", _parse_opt, _print_opt, _print_xstats),)
