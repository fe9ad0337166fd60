"""``tc [-s] [-d] filter {show|list|ls} dev D [root|ingress|egress|parent P] [protocol ip|all]
[pref N] [chain 0]`` (tc/tc_filter.c ``tc_filter_list``) and its output (docs/semantics/formats.md
"tc filter show").

The engine dumps the filters (``Engine.filter_show``, crates/bufferlab-core/src/qdisc/filter_show.rs:
the block's classid and its ``tcf_proto``s with their handles, u32 keys, actions, counters and
ages); this module prints them as iproute2 does: tc/tc_filter.c ``print_filter`` (one line per
dumped message: the ``tcf_proto`` header, then u32's hash table and its nodes, or matchall's
filter), tc/f_u32.c ``u32_print_opt`` and ``print_raw``, tc/f_matchall.c ``matchall_print_opt``,
tc/f_flower.c ``flower_print_opt`` (6.x; flower.py refuses lab2019), tc/m_action.c
``tc_print_one_action``, tc/m_mirred.c ``print_mirred``, tc/m_police.c ``print_police``,
tc/m_gact.c ``print_gact`` and tc/tc_util.c ``print_tm`` and ``print_tcstats2_attr``.
``lab2019`` prints as iproute2 4.15, ``modern`` as 6.9 and later; the differences: u32's
``terminal flowid ???`` (4.15) or ``terminal flowid`` (6.x), mirred's index line (`` \\tindex``
and a trailing ``\\n `` in 4.15), police's ``ref 1 bind 1`` without the trailing space (4.15),
matchall's ``(rule hit N)`` and the actions' ``firstused`` age (6.x only).

u32 runs without ``CONFIG_CLS_U32_PERF`` and ``CONFIG_CLS_U32_MARK`` (as Debian's and this
project's reference kernels: no ``rule hit`` counters on u32 lines); every filter is
``not_in_hw`` (no offload). ``handle``, ``block``, ``chain N`` other than 0 and the ``-r``,
``-p`` and ``-iec`` flags are not supported yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import CommandError, NotSupportedError
from .._common import c_int_full, matches
from ..shell import Word
from .cursor import Cursor
from .flower import IP_FLAGS, IP_PROTOS
from .tc_util import sprint_rate, sprint_size, xmitsize

#: ``TC_H_CLSACT`` minors
_INGRESS = 0xFFFF_FFF2
_EGRESS = 0xFFFF_FFF3
#: psched tick in ns (``PSCHED_TICKS2NS``)
_NS_PER_TICK = 64
#: the engine's verdict names -> ``action_n2a``
_CONTROL_NAMES = {
    "ok": "pass",
    "drop": "drop",
    "continue": "continue",
    "pipe": "pipe",
    "reclassify": "reclassify",
}
_EXPECTED = "tc filter show dev D [root | ingress | egress | parent M:] [protocol ip|all] [pref N]"


@dataclass
class TcFilterShow:
    """What ``tc_filter_list`` sends and remembers (``filter_parent``, ``filter_prio``,
    ``filter_protocol``: what ``print_filter`` then leaves out)."""

    dev: str | None = None
    dev_col: int | None = None
    #: ``tcm_parent`` (``root`` is ``TC_H_ROOT``, which the engine takes as no parent)
    parent: int | None = None
    prio: int = 0
    #: "ip" or "all"
    protocol: str | None = None
    stats: bool = False
    details: bool = False


def _classid(v: Word) -> int:
    """``get_tc_classid`` (``root`` and ``none`` are not parents here)."""
    major_t, colon, minor_t = v.text.partition(":")
    try:
        major = int(major_t, 16) if major_t else 0
        minor = int(minor_t, 16) if minor_t else 0
    except ValueError:
        major = minor = -1
    if not colon or not 0 <= major <= 0xFFFF or not 0 <= minor <= 0xFFFF:
        raise CommandError(
            f'Error: argument "{v.text}" is wrong: invalid parent ID', col=v.col, expected="parent M: or M:N"
        )
    return (major << 16) | minor


def parse_filter_show(words: list[Word], i: int, flags: dict[str, bool]) -> TcFilterShow:
    """``tc_filter_list``: ``words[i]`` is the first word after ``show``."""
    for flag in ("raw", "pretty", "iec"):
        if flags.get(flag):
            raise NotSupportedError(f"tc -{flag[0]} filter show is not supported yet", col=words[0].col)
    show = TcFilterShow(stats=flags.get("stats", False), details=flags.get("details", False))
    cur = Cursor(words, i)

    def set_parent(value: int, w: Word, name: str) -> None:
        if show.parent is not None:
            raise CommandError(f'Error: "{name}" is duplicate parent ID', col=w.col, expected=_EXPECTED)
        show.parent = value

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "dev":
            v = cur.value(w, "dev DEVICE")
            if show.dev is not None:
                raise CommandError(f'Error: duplicate "dev": "{v.text}" is the second value.', col=v.col)
            show.dev, show.dev_col = v.text, v.col
        elif t == "root":
            set_parent(0xFFFF_FFFF, w, "root")
        elif t == "ingress":
            set_parent(_INGRESS, w, "ingress")
        elif t == "egress":
            set_parent(_EGRESS, w, "egress")
        elif t == "parent":
            v = cur.value(w, "parent M:")
            if show.parent is not None:
                raise CommandError(f'Error: duplicate "parent": "{v.text}" is the second value.', col=v.col)
            show.parent = _classid(v)
        elif matches(t, "preference") or matches(t, "priority"):
            v = cur.value(w, "pref N")
            n = c_int_full(v.text, 0)
            if show.prio:
                raise CommandError(f'Error: duplicate "priority": "{v.text}" is the second value.', col=v.col)
            if n is None or not 0 <= n <= 0xFFFFFFFF:
                raise CommandError(f'Error: argument "{v.text}" is wrong: invalid preference', col=v.col)
            show.prio = n
        elif matches(t, "protocol"):
            v = cur.value(w, "protocol ip|all")
            if v.text not in ("ip", "all"):
                raise NotSupportedError(
                    f"tc filter show protocol {v.text} is not supported yet", col=v.col, expected="ip or all"
                )
            show.protocol = v.text
        elif matches(t, "chain"):
            v = cur.value(w, "chain 0")
            if c_int_full(v.text, 0) != 0:
                raise NotSupportedError(
                    "tc filter show chain N (N != 0) is not supported yet", col=v.col, expected="chain 0"
                )
        elif t == "handle" or matches(t, "block"):
            raise NotSupportedError(
                f'tc filter show "{t}" is not supported yet', col=w.col, expected=_EXPECTED
            )
        else:
            raise CommandError(f' What is "{t}"? Try "tc filter help"', col=w.col, expected=_EXPECTED)
    return show


# ------------------------------------------------------------------ printing


def classid_text(h: int) -> str:
    """``print_tc_classid``."""
    if h == 0xFFFF_FFFF:
        return "root"
    if h == 0:
        return "none"
    major, minor = h >> 16, h & 0xFFFF
    if major == 0:
        return ":%x" % minor
    if minor == 0:
        return "%x:" % major
    return "%x:%x" % (major, minor)


def u32_handle_text(h: int) -> str:
    """f_u32.c ``sprint_u32_handle``: ``htid:hash:node``."""
    htid, bucket, node = h >> 20, (h >> 12) & 0xFF, h & 0xFFF
    out = "%x:" % htid if htid else ""
    if node or bucket:
        out += "%x" % bucket if bucket else ""
        out += ":%x" % node if node else ""
    return out


def _tm_text(tm: dict[str, int], modern: bool) -> str:
    """``print_tm`` (USER_HZ 100; ``firstused`` since iproute2 5.x)."""
    out = ""
    if tm["install"]:
        out += " installed %d sec" % (tm["install"] // 100)
    if tm["lastuse"]:
        out += " used %d sec" % (tm["lastuse"] // 100)
    if modern and tm["firstuse"]:
        out += " firstused %d sec" % (tm["firstuse"] // 100)
    return out


def _action_text(a: dict[str, Any], stats: bool, details: bool, modern: bool) -> str:
    """One ``tc_print_one_action``: the kind's printer, then ``Action statistics``."""
    kind = a["kind"]
    tm = _tm_text(a["tm"], modern) if stats else ""
    if kind == "mirred":
        # mirred_n2a, and tc's default verdict: stolen for a redirect, pipe for a mirror
        how = "Mirror" if a.get("mirror") else "Redirect"
        verdict = "pipe" if a.get("mirror") else "stolen"
        out = "mirred (Egress %s to device %s) %s" % (how, a["dev"], verdict)
        out += ("\n\tindex %d ref 1 bind 1" if modern else "\n \tindex %d ref 1 bind 1") % a["index"]
        out += tm + ("\n" if modern else "\n ")
    elif kind == "gact":
        out = "gact action %s" % _CONTROL_NAMES[a["control"]]
        out += "\n\t random type none pass val 0"
        out += "\n\t index %d ref 1 bind 1" % a["index"] + tm + "\n"
    else:
        out = _police_text(a, details, modern) + tm + "\n"
    if stats:
        s = a["stats"]
        out += "\tAction statistics:\n"
        out += "\tSent %d bytes %d pkt (dropped %d, overlimits %d requeues 0) \n" % (
            s["bytes"],
            s["packets"],
            s["drops"],
            s["overlimits"],
        )
        out += "\tbacklog 0b 0p requeues 0\n"
    return out


def _police_text(a: dict[str, Any], details: bool, modern: bool) -> str:
    """``print_police`` up to the ages (the kernel's ``tc_police``: rate, burst in ticks, mtu;
    the conform verdict only when it is not ``pass``: ``TCA_POLICE_RESULT`` is dumped non-zero)."""
    rate = int(a["rate"])
    out = " police 0x%x rate %s " % (a["index"], sprint_rate(rate))
    out += "burst %s " % sprint_size(xmitsize(rate, int(a["burst_ns"]) // _NS_PER_TICK, modern))
    out += "mtu %s " % sprint_size(int(a["mtu"]) if a["mtu"] else 0xFFFFFFFF)
    if a.get("peakrate"):
        out += "peakrate %s " % sprint_rate(int(a["peakrate"]))
    out += "action %s" % _CONTROL_NAMES[a["exceed"]]
    out += "/%s " % _CONTROL_NAMES[a["conform"]] if a["conform"] != "ok" else " "
    out += "overhead %db " % a["overhead"]
    if a.get("atm") or details:
        out += "linklayer %s " % ("atm" if a.get("atm") else "ethernet")
    return out + ("\n\tref 1 bind 1 " if modern else "\n\tref 1 bind 1")


def _actions_text(actions: list[dict[str, Any]], stats: bool, details: bool, modern: bool) -> str:
    """``tc_print_action``: ``action order N:`` from 1."""
    return "".join(
        "\n\taction order %d: " % (n + 1) + _action_text(a, stats, details, modern)
        for n, a in enumerate(actions)
    )


def _u32_text(f: dict[str, Any], stats: bool, details: bool, modern: bool) -> str:
    """``u32_print_opt`` of a node."""
    h = int(f["handle"])
    out = "fh %s order %d key ht %x bkt 0 " % (u32_handle_text(h), h & 0xFFF, h >> 20)
    if f["classid"] is not None:
        out += "flowid %s " % classid_text(int(f["classid"]))
    elif f["terminal"]:
        out += "terminal flowid " if modern else "terminal flowid ??? "
    out += "not_in_hw "
    for k in f["keys"]:
        out += "\n  match %08x/%08x at %d" % (k["val"], k["mask"], k["off"])
    return out + _actions_text(f["actions"], stats, details, modern)


def _matchall_text(f: dict[str, Any], stats: bool, details: bool, modern: bool) -> str:
    """``matchall_print_opt`` (``(rule hit N)``: the packets it matched, ``TCA_MATCHALL_PCNT``)."""
    out = "handle 0x%x " % f["handle"]
    if f["classid"] is not None:
        out += "flowid %s " % classid_text(int(f["classid"]))
    out += "\n  not_in_hw"
    if modern and stats:
        out += " (rule hit %d)" % f["hits"]
    return out + _actions_text(f["actions"], stats, details, modern)


def _masked_u8_text(name: str, m: dict[str, int] | None) -> str:
    """``print_masked_u8``: the value in decimal, a mask other than 0xff in hex."""
    if not m or not m["mask"]:
        return ""
    return f"\n  {name} {m['value']}" + (f"/0x{m['mask']:x}" if m["mask"] != 0xFF else "")


def _ip_text(name: str, m: dict[str, int] | None) -> str:
    """``flower_print_ip_addr``: the address as given, ``/LEN`` below 32."""
    if not m or not m["mask"]:
        return ""
    addr = ".".join(str(b) for b in int(m["value"]).to_bytes(4, "big"))
    bits = bin(m["mask"]).count("1")
    return f"\n  {name} {addr}" + (f"/{bits}" if bits < 32 else "")


def _flower_text(f: dict[str, Any], protocol_all: bool, stats: bool, details: bool, modern: bool) -> str:
    """f_flower.c ``flower_print_opt`` (iproute2 6.x): ``handle``, ``classid``, ``indev``, the
    keys in its order (each ``print_nl`` then two spaces; a key whose mask is zero the kernel
    does not dump), the flags (``not_in_hw``: nothing is offloaded), the actions."""
    k = f["flower"] or {}
    out = "handle 0x%x " % f["handle"]
    if f["classid"] is not None:
        out += "classid %s " % classid_text(int(f["classid"]))
    if k.get("indev"):
        out += "\n  indev %s" % k["indev"]
    if not protocol_all:
        out += "\n  eth_type ipv4"
    if k.get("ip_proto") is not None:
        names = {n: name for name, n in IP_PROTOS}
        out += "\n  ip_proto %s" % names.get(k["ip_proto"], "%02x" % k["ip_proto"])
    out += _masked_u8_text("ip_tos", k.get("ip_tos")) + _masked_u8_text("ip_ttl", k.get("ip_ttl"))
    out += _ip_text("dst_ip", k.get("dst_ip")) + _ip_text("src_ip", k.get("src_ip"))
    ports = [(name, k.get(name)) for name in ("dst_port", "src_port")]
    for name, p in ports:
        if p and p["kind"] == "masked" and p["mask"]:
            out += f"\n  {name} {p['value']}" + (f"/0x{p['mask']:x}" if p["mask"] != 0xFFFF else "")
    for name, p in ports:
        if p and p["kind"] == "range":
            out += f"\n  {name} {p['min']}-{p['max']}"
    flags = k.get("ip_flags")
    if flags and flags["mask"]:
        shown = [n if flags["value"] & bit else "no" + n for n, bit in IP_FLAGS if flags["mask"] & bit]
        out += "\n  ip_flags " + "/".join(shown)
    if k.get("skip_hw"):
        out += "\n  skip_hw"
    return out + "\n  not_in_hw" + _actions_text(f["actions"], stats, details, modern)


def filter_show_text(dump: dict[str, Any], show: TcFilterShow, modern: bool) -> str:
    """``print_filter`` for every message of the engine's dump (``FilterDump``)."""
    out = []
    parent = int(dump["parent"])
    for tp in dump["tps"]:
        protocol = "all" if tp["protocol_all"] else "ip"
        if show.prio and show.prio != tp["prio"]:
            continue
        if show.protocol and show.protocol != protocol:
            continue
        head = "filter "
        if show.parent is None or show.parent != parent:
            head += "parent %s " % classid_text(parent)
        if show.protocol is None:
            head += "protocol %s " % protocol
        if not show.prio:
            head += "pref %d " % tp["prio"]
        head += "%s chain 0 " % tp["kind"]
        out.append(head + "\n")
        ht = None
        for f in tp["filters"]:
            if tp["kind"] == "matchall":
                out.append(head + _matchall_text(f, show.stats, show.details, modern) + "\n")
                continue
            if tp["kind"] == "flower":
                text = _flower_text(f, tp["protocol_all"], show.stats, show.details, modern)
                out.append(head + text + "\n")
                continue
            if f["handle"] & 0xFFF00000 != ht:
                ht = f["handle"] & 0xFFF00000
                out.append(head + "fh %s ht divisor 1 \n" % u32_handle_text(ht))
            out.append(head + _u32_text(f, show.stats, show.details, modern) + "\n")
    return "".join(out)


__all__ = ["TcFilterShow", "parse_filter_show", "filter_show_text", "classid_text", "u32_handle_text"]
