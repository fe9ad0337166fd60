"""``htb`` (tc/q_htb.c) with ``tc class`` (tc/tc_class.c) and the ``u32`` matches of
``tc filter`` (tc/f_u32.c; ``flower``: flower.py) that steer packets into its classes.

Each ``tc class`` line becomes one engine request (``TcClassRequest.to_dict``: the
``ClassRequest`` of crates/bufferlab-core/src/qdisc/spec.rs, sent by
``Engine.tc_class``), each ``tc filter`` line one ``FilterRequest``, and a ``tc qdisc …
parent M:N`` under a class an ordinary ``TcRequest`` that the engine grafts
(qdisc/class_api/); the engine owns the classes and answers as the kernel does, so
no line reads the tree back. Class options as q_htb.c ``htb_parse_class_opt`` computes
them: ``ceil`` defaults to ``rate``; ``burst``/``cburst`` default to ``rate/HZ + mtu``
(HZ = 10⁹ on a high-resolution-timer kernel, mtu 1600) and reach the kernel as
``tc_calc_xmittime`` ticks (×64 ns). Printing follows ``htb_print_opt``/
``htb_print_xstats`` as iproute2 6.1 prints them (checked against a real kernel,
docs/kernel-oracle.md); classes are listed in the kernel's class-hash order. The
``tc class`` verbs of drr, ets and hfsc are parsed here too (their option parsers in
drr.py, ets.py, hfsc.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ... import registry
from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from ...units import U32_MAX, parse_rate, parse_size
from .._common import c_int_full, matches, suggestion_for
from ..shell import Word
from . import _schema
from . import cake as _cake
from . import drr as _drr
from . import ets as _ets
from . import hfsc as _hfsc
from ._schema import QdiscSpecHtb as HtbSpec
from .cursor import Cursor, read_unit
from .flower import parse_flower
from .kind import QdiscKind
from .prio import class_show_lines as prio_class_show_lines
from .tc_util import sprint_rate, sprint_size, xmitsize, xmittime

#: q_htb.c: the default ``mtu`` in ``burst = rate / HZ + mtu``, and HZ itself
_DEFAULT_MTU = 1600
_HZ = 1_000_000_000
#: the device's txqueuelen (Mininet veths): the direct queue and default pfifo leaves
TXQUEUELEN = 1000
_NS_PER_TICK = 64


_QDISC_EXPECTED = "htb [default MINOR] [r2q N] [direct_qlen P]"
_CLASS_EXPECTED = "htb rate RATE [ceil RATE] [burst SIZE] [cburst SIZE] [prio N] [quantum BYTES] [mtu BYTES]"


def _number(v: Word, base: int, what: str, expected: str) -> int:
    n = c_int_full(v.text, base)
    if n is None or not 0 <= n <= U32_MAX:
        raise CommandError(f'Illegal "{what}"', col=v.col, expected=expected)
    return n


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> HtbSpec:
    """``htb_parse_opt``."""
    spec = HtbSpec(direct_qlen=TXQUEUELEN, leaf_limit=TXQUEUELEN)
    while not cur.done():
        w = cur.take()
        t = w.text
        if matches(t, "r2q"):
            spec.r2q = _number(cur.value(w, "r2q N"), 10, "r2q", "a positive integer, e.g. r2q 10")
        elif matches(t, "default"):
            v = cur.value(w, "default MINOR")
            spec.default = _number(v, 16, "default", "a class minor in hexadecimal, e.g. default 10")
            if spec.default > 0xFFFF:
                raise CommandError('Illegal "default"', col=v.col, expected="a minor up to ffff")
        elif matches(t, "direct_qlen"):
            spec.direct_qlen = _number(cur.value(w, "direct_qlen P"), 10, "direct_qlen", "a packet count")
        elif t in ("offload", "debug"):
            raise NotSupportedError(f"htb {t} is not supported yet", col=w.col, expected=_QDISC_EXPECTED)
        else:
            raise CommandError(
                f'What is "{t}"?',
                col=w.col,
                expected=_QDISC_EXPECTED,
                suggestion=suggestion_for(t, ["default", "r2q", "direct_qlen"]),
            )
    if spec.r2q == 0:
        raise CommandError('Illegal "r2q"', col=kind_word.col, expected="r2q greater than 0")
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """``htb_print_opt`` for the qdisc (``direct_packets_stat`` comes from the xstats, see show.py)."""
    default = int(opts.get("default", 0))
    out = "r2q %d default %s direct_packets_stat %d" % (
        int(opts.get("r2q", 10)),
        ("%#x" % default) if modern else ("%x" % default),
        int(opts.get("direct_packets_stat", 0)),
    )
    if details:
        out += " ver 3.17"
    return out + " direct_qlen %d" % int(opts.get("direct_qlen", TXQUEUELEN))


KINDS = (QdiscKind("htb", _parse_opt, _print_opt),)

#: ``tc class … KIND OPTIONS`` of the kinds other than htb (their ``parse_copt``)
CLASS_OPTION_PARSERS = {
    "drr": _drr.parse_class_opt,
    "ets": _ets.parse_class_opt,
    "hfsc": _hfsc.parse_class_opt,
}


# ------------------------------------------------------------------ tc class


@dataclass(kw_only=True)
class TcClassRequest(_schema.ClassRequest):
    """``tc class {add|change|replace|delete} dev D parent P classid C [KIND OPTIONS]``: the
    engine's ``ClassRequest`` (``dev`` as typed; the caller puts the engine's), ``class_``
    the kind and its options (``HtbClassSpec``, ...)."""

    dev_col: int | None = None
    verb_col: int | None = None


@dataclass(kw_only=True)
class TcFilterRequest(_schema.FilterRequest):
    """``tc filter {add|delete} dev D parent M: [protocol ip] [prio N] u32 match … flowid M:N``:
    the engine's ``FilterRequest`` (``filter`` the ``U32Filter``; None: delete all filters)."""

    dev_col: int | None = None
    verb_col: int | None = None


@dataclass
class TcClassShow:
    dev: str | None
    stats: bool = False
    details: bool = False
    dev_col: int | None = None


def _hex_id(v: Word, what: str) -> tuple[int, int]:
    """``get_tc_classid`` for ``M:N`` (or ``M:``)."""
    major_t, colon, minor_t = v.text.partition(":")
    try:
        major = int(major_t, 16) if major_t else 0
        minor = int(minor_t, 16) if minor_t else 0
    except ValueError:
        major = minor = -1
    if not colon or not 0 <= major <= 0xFFFF or not 0 <= minor <= 0xFFFF:
        raise CommandError(
            f'Error: argument "{v.text}" is wrong: invalid {what}',
            col=v.col,
            expected="a class id such as 1:10 (hexadecimal major:minor)",
        )
    return major, minor


def parse_class(
    words: list[Word], i: int, flags: dict[str, bool], profile: Profile
) -> TcClassRequest | TcClassShow:
    """``tc class ...`` from ``words[i]`` (the verb)."""
    cur = Cursor(words, i)
    if cur.done():
        return TcClassShow(None, **_show_flags(flags))
    verb_w = cur.take()
    vt = verb_w.text
    if matches(vt, "list") or matches(vt, "show") or matches(vt, "lst"):
        show = TcClassShow(None, **_show_flags(flags))
        while not cur.done():
            w = cur.take()
            if w.text == "dev":
                v = cur.value(w, "dev DEVICE")
                show.dev, show.dev_col = v.text, v.col
            else:
                raise NotSupportedError(
                    f'tc class show "{w.text}" is not supported yet',
                    col=w.col,
                    expected="tc class show dev DEVICE",
                )
        return show
    verb = next((v for v in ("add", "change", "replace", "delete") if matches(vt, v)), None)
    if verb is None:
        raise CommandError(
            f'Command "{vt}" is unknown, try "tc class help".',
            col=verb_w.col,
            expected="add, change, replace, del or show",
            suggestion=suggestion_for(vt, ["add", "change", "replace", "del", "show"]),
        )
    dev: Word | None = None
    parent: tuple[int, int] | None = None
    classid: tuple[int, int] | None = None
    options: dict[str, Any] | None = None
    kind = "htb"
    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "dev":
            dev = cur.value(w, "dev DEVICE")
        elif t == "classid":
            classid = _hex_id(cur.value(w, "classid M:N"), "class ID")
        elif t == "parent":
            parent = _hex_id(cur.value(w, "parent M:N"), "parent ID")
        elif t == "root":
            raise NotSupportedError(
                "tc class ... root is not supported yet", col=w.col, expected="parent M: or parent M:N"
            )
        elif t == "htb":
            options = _parse_class_opt(w, cur, profile.tc_modern_print)
        elif t in CLASS_OPTION_PARSERS:
            kind = t
            options = CLASS_OPTION_PARSERS[t](w, cur, profile)
        else:
            raise NotSupportedError(
                f'tc class "{t}" is not supported yet '
                f'(classes of {", ".join(CLASS_VERB_KINDS)} are modelled)',
                col=w.col,
                expected="tc class add dev D parent M:[N] classid M:N htb rate RATE ...",
                suggestion=suggestion_for(t, ["dev", "parent", "classid", "htb"]),
            )
    if dev is None:
        raise CommandError("Cannot find device", col=verb_w.col, expected="dev DEVICE")
    if classid is None or (parent is None and verb not in ("delete", "change")):
        raise CommandError(
            f"tc class {verb} needs {'classid' if classid is None else 'parent'}",
            col=verb_w.col,
            expected="parent M:[N] classid M:N",
        )
    if parent is not None and parent[0] != classid[0]:
        raise CommandError(
            "Error: the parent and the class belong to different qdiscs.",
            col=verb_w.col,
            expected=f"parent {classid[0]:x}:… to match classid {classid[0]:x}:{classid[1]:x}",
        )
    if verb != "delete" and options is None:
        raise CommandError(f"tc class {verb} needs a class kind", col=verb_w.col, expected=_CLASS_EXPECTED)
    return TcClassRequest(
        verb=verb,
        dev=dev.text,
        major=classid[0],
        minor=classid[1],
        parent=parent[1] if parent else None,
        class_=None if verb == "delete" else {"kind": kind, **(options or {})},
        dev_col=dev.col,
        verb_col=verb_w.col,
    )


def _show_flags(flags: dict[str, bool]) -> dict[str, bool]:
    return {"stats": flags.get("stats", False), "details": flags.get("details", False)}


def _parse_class_opt(kind_word: Word, cur: Cursor, modern: bool) -> dict[str, Any]:
    """``htb_parse_class_opt``: the class's spec in kernel units (``modern``: the
    rounding of ``tc_calc_xmittime``, tc_util.py)."""
    rate = ceil = 0
    burst = cburst = 0
    mtu = _DEFAULT_MTU
    prio = quantum = 0
    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "rate":
            v = cur.value(w, "rate RATE")
            rate = read_unit(parse_rate, v, f'Illegal "rate": "{v.text}"')
        elif t == "ceil":
            v = cur.value(w, "ceil RATE")
            ceil = read_unit(parse_rate, v, f'Illegal "ceil": "{v.text}"')
        elif t in ("burst", "buffer", "maxburst"):
            v = cur.value(w, "burst SIZE")
            burst = read_unit(parse_size, v, f'Illegal "buffer": "{v.text}"')
        elif t in ("cburst", "cbuffer", "cmaxburst"):
            v = cur.value(w, "cburst SIZE")
            cburst = read_unit(parse_size, v, f'Illegal "cbuffer": "{v.text}"')
        elif t == "prio":
            prio = _number(cur.value(w, "prio N"), 10, "prio", "a priority 0..7")
        elif t == "quantum":
            quantum = read_unit(parse_size, cur.value(w, "quantum BYTES"), 'Illegal "quantum"')
        elif t == "mtu":
            mtu = _number(cur.value(w, "mtu BYTES"), 10, "mtu", "a size in bytes")
        elif t in ("mpu", "overhead", "linklayer"):
            raise NotSupportedError(f"htb {t} is not supported yet", col=w.col, expected=_CLASS_EXPECTED)
        else:
            raise CommandError(
                f'What is "{t}"?',
                col=w.col,
                expected=_CLASS_EXPECTED,
                suggestion=suggestion_for(t, ["rate", "ceil", "burst", "cburst", "prio", "quantum", "mtu"]),
            )
    if rate == 0:
        raise CommandError('"rate" is required.', col=kind_word.col, expected=_CLASS_EXPECTED)
    ceil = ceil or rate
    burst = burst or rate // _HZ + mtu
    cburst = cburst or ceil // _HZ + mtu
    return {
        "rate": rate,
        "ceil": ceil,
        "buffer": xmittime(rate, burst, modern) * _NS_PER_TICK,
        "cbuffer": xmittime(ceil, cburst, modern) * _NS_PER_TICK,
        "prio": prio,
        "quantum": quantum,
    }


# ------------------------------------------------------------------ tc filter


_FILTER_EXPECTED = (
    "tc filter add dev D parent M: protocol ip prio N u32 match ip {src|dst} A/LEN | "
    "match ip {sport|dport} N 0xffff | match ip tos V M ... flowid M:N | "
    "… protocol ip prio N flower ip_proto tcp dst_port N classid M:N"
)


def parse_filter(words: list[Word], i: int, modern: bool) -> TcFilterRequest:
    cur = Cursor(words, i)
    verb_w = cur.take()
    verb = next((v for v in ("add", "delete") if matches(verb_w.text, v)), None)
    if verb is None:
        raise NotSupportedError(
            f'tc filter "{verb_w.text}" is not supported yet', col=verb_w.col, expected=_FILTER_EXPECTED
        )
    dev: Word | None = None
    major: int | None = None
    prio = 0
    matches_: list[dict[str, int | str]] = []
    flowid: int | None = None
    protocol: str | None = None
    flower: dict[str, Any] | None = None
    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "dev":
            dev = cur.value(w, "dev DEVICE")
        elif t == "parent":
            v = cur.value(w, "parent M:")
            major, minor = _hex_id(v, "parent ID")
            if minor:
                raise NotSupportedError(
                    "filters on an inner htb class are not supported yet", col=v.col, expected="parent M:"
                )
        elif t == "protocol":
            v = cur.value(w, "protocol ip")
            if v.text != "ip":
                raise NotSupportedError(f"tc filter protocol {v.text} is not supported yet", col=v.col)
            protocol = v.text
        elif t in ("prio", "pref", "priority", "preference"):
            prio = _number(cur.value(w, "prio N"), 0, "prio", "a filter priority")
        elif t == "u32":
            pass
        elif t == "flower":
            fl = parse_flower(cur, protocol, False, modern, None, w)
            flower = fl.key
            flowid = None if fl.classid is None else fl.classid & 0xFFFF
        elif t == "match":
            matches_.append(_parse_match(w, cur))
        elif t in ("flowid", "classid"):
            flowid = _hex_id(cur.value(w, "flowid M:N"), "class ID")[1]
        else:
            raise NotSupportedError(
                f'tc filter "{t}" is not supported yet', col=w.col, expected=_FILTER_EXPECTED
            )
    if dev is None or major is None:
        raise CommandError("tc filter needs dev and parent", col=verb_w.col, expected=_FILTER_EXPECTED)
    if verb == "delete":
        if prio:
            # tc_del_tfilter removes that prio's tcf_proto only; the engine keeps no handles to
            # renumber what would stay
            raise NotSupportedError(
                "tc filter del … prio N on a qdisc is not supported yet",
                col=verb_w.col,
                expected="tc filter del dev D parent M: (every filter there)",
            )
        return TcFilterRequest(verb="delete", dev=dev.text, major=major, dev_col=dev.col, verb_col=verb_w.col)
    if flower is not None:
        if protocol is None:
            message = "Error: Filter kind and protocol must be specified."
            raise CommandError(message, col=verb_w.col, expected=_FILTER_EXPECTED)
        if flowid is None:
            raise NotSupportedError(
                "a qdisc's flower filter without classid is not supported yet",
                col=verb_w.col,
                expected="flower KEYS classid M:N",
            )
    elif not matches_ or flowid is None:
        raise CommandError("u32 needs match ... and flowid M:N", col=verb_w.col, expected=_FILTER_EXPECTED)
    return TcFilterRequest(
        verb="add",
        dev=dev.text,
        major=major,
        filter={
            "prio": prio,
            "matches": matches_,
            "flowid": flowid,
            **({"flower": flower} if flower is not None else {}),
        },
        dev_col=dev.col,
        verb_col=verb_w.col,
    )


def _parse_match(w: Word, cur: Cursor) -> dict[str, int | str]:
    """``match ip FIELD ...`` of f_u32.c (``parse_ip``)."""
    proto = cur.value(w, "match ip FIELD VALUE")
    if proto.text != "ip":
        raise NotSupportedError(
            f"u32 match {proto.text} is not supported yet", col=proto.col, expected="match ip"
        )
    f = cur.value(proto, "src|dst|sport|dport|tos")
    if f.text in ("src", "dst"):
        v = cur.value(f, "A.B.C.D/LEN")
        addr, _, plen_t = v.text.partition("/")
        parts = addr.split(".")
        plen = c_int_full(plen_t, 10) if plen_t else 32
        octets_ok = len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts)
        if not octets_ok or plen is None or not 0 <= plen <= 32:
            raise CommandError(
                f'Illegal "match ip {f.text}" value "{v.text}"', col=v.col, expected="A.B.C.D/LEN"
            )
        value = int.from_bytes(bytes(int(p) for p in parts), "big")
        mask = (U32_MAX << (32 - plen)) & U32_MAX
        return {"field": f.text, "value": value & mask, "mask": mask}
    if f.text in ("sport", "dport", "tos", "dsfield"):
        v = cur.value(f, "VALUE MASK")
        m = cur.value(v, "MASK")
        limit = 0xFFFF if "port" in f.text else 0xFF
        value, mask = c_int_full(v.text, 0), c_int_full(m.text, 0)
        if value is None or mask is None or not 0 <= value <= limit or not 0 <= mask <= limit:
            raise CommandError(
                f'Illegal "match ip {f.text}" value', col=v.col, expected=f"VALUE MASK, each up to {limit:#x}"
            )
        return {"field": "tos" if f.text == "dsfield" else f.text, "value": value & mask, "mask": mask}
    raise NotSupportedError(
        f"u32 match ip {f.text} is not supported yet", col=f.col, expected="src, dst, sport, dport or tos"
    )


# ------------------------------------------------------------------ tc class show


#: kinds that own classes with grafted leaf chains (htb.py, prio.py, drr.py, ets.py, hfsc.py)
CLASSFUL_KINDS = registry.CLASS_OWNERS
#: kinds whose classes ``tc class add|change|delete`` configures
CLASS_VERB_KINDS = registry.CLASS_VERB_KINDS


def _hash_order(classes: list[dict[str, Any]], major: int) -> list[dict[str, Any]]:
    """``qdisc_class_hash`` walk: 16 buckets of (id ^ id>>8 ^ …>>4) & 15, newest first in a bucket."""

    def bucket(minor: int) -> int:
        cid = (major << 16) | minor
        cid ^= cid >> 8
        cid ^= cid >> 4
        return cid & 15

    indexed = list(enumerate(classes))
    indexed.sort(key=lambda ic: (bucket(ic[1]["classid"]), -ic[0]))
    return [c for _, c in indexed]


def _stats_text(c: dict[str, Any]) -> str:
    """``print_tcstats_attr`` of a class."""
    out = " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues 0) \n" % (
        c["bytes"],
        c["packets"],
        c["drops"],
        c["overlimits"],
    )
    return out + " backlog %s %dp requeues 0\n" % (sprint_size(int(c["backlog"])), c["qlen"])


def _other_class_text(block: dict[str, Any], stats: bool, modern: bool) -> str:
    """``print_class`` (tc/tc_class.c) for the classes of a drr, ets or hfsc: kind,
    classid, ``root`` or ``parent``, ``leaf`` of a named leaf qdisc, the kind's class
    options, then with ``-s`` the counters and the kind's xstats (drr, hfsc)."""
    kind, major = block["kind"], int(block["handle"])
    classes = (block.get("xstats") or {}).get("classes", [])
    if kind != "ets":
        classes = _hash_order(classes, major)
    out = []
    for c in classes:
        minor = int(c["classid"])
        line = "class %s %x:%s " % (kind, major, "%x" % minor if minor else "")
        if c.get("root") or kind != "hfsc":
            line += "root "
        else:
            p = int(c["parent"])
            line += "parent %x:%s " % (major, "%x" % p if p else "")
        leaf = (c.get("leaf") or [None])[0]
        if leaf and not leaf["anonymous"] and leaf["handle"]:
            line += "leaf %x: " % leaf["handle"]
        if kind == "drr":
            line += _drr.class_line(c)
        elif kind == "ets":
            line += _ets.class_line(c)
        else:
            line += _hfsc.class_line(c, modern)
        line += "\n"
        if stats:
            # print_class: the counters, then the kind's xstats and a newline (drr's
            # printer ends its line without one, hfsc's with one: a blank line follows)
            line += _stats_text(c)
            if kind == "drr":
                line += _drr.class_xstats(c) + "\n"
            elif kind == "hfsc":
                line += _hfsc.class_xstats(c) + "\n"
        out.append(line)
    return "".join(out)


def class_show_text(blocks: list[dict[str, Any]], stats: bool, details: bool, modern: bool) -> str:
    """``tc [-s] [-d] class show dev D`` for every htb, prio, dualpi2, drr, ets, hfsc and
    cake on the device (``blocks``: the engine's ``class_show``)."""
    out = []
    for block in blocks:
        if block["kind"] == "prio":
            out.append(prio_class_show_lines(block, stats))
            continue
        if block["kind"] == "cake":
            out.append(_cake.class_show_lines(block, stats, modern))
            continue
        if block["kind"] == "dualpi2":
            # dualpi2_walk reports classes 1 and 2, but dualpi2 has no class dump op:
            # tc_fill_tclass leaves handle and parent at the qdisc's, and the stats nest
            # is empty (tc prints only the newline after it)
            major = int(block["handle"])
            out.append(("class dualpi2 %x: parent %x: \n" % (major, major) + ("\n" if stats else "")) * 2)
            continue
        if block["kind"] in CLASS_VERB_KINDS and block["kind"] != "htb":
            out.append(_other_class_text(block, stats, modern))
            continue
        if block["kind"] != "htb":
            continue
        major = int(block["handle"])
        for c in _hash_order((block.get("xstats") or {}).get("classes", []), major):
            line = "class htb %x:%x " % (major, c["classid"])
            line += "root " if c["parent"] == 0 else "parent %x:%x " % (major, c["parent"])
            leaf = (c.get("leaf") or [None])[0]
            if leaf and not leaf["anonymous"] and leaf["handle"]:
                line += "leaf %x: " % leaf["handle"]
            if c["level"] == 0:
                line += "prio %d " % c["prio"]
            if details:
                line += "quantum %d " % c["quantum"]
            rate, ceil = int(c["rate"]), int(c["ceil"])
            line += "rate %s ceil %s " % (sprint_rate(rate), sprint_rate(ceil))
            burst = xmitsize(rate, int(c["buffer"]) // _NS_PER_TICK, modern)
            cburst = xmitsize(ceil, int(c["cbuffer"]) // _NS_PER_TICK, modern)
            if details:
                line += "linklayer ethernet burst %s/1 mpu 0b cburst %s/1 mpu 0b level %d " % (
                    sprint_size(burst),
                    sprint_size(cburst),
                    c["level"],
                )
            else:
                line += "burst %s cburst %s " % (sprint_size(burst), sprint_size(cburst))
            line += "\n"
            if stats:
                line += " Sent %d bytes %d pkt (dropped %d, overlimits %d requeues 0) \n" % (
                    c["bytes"],
                    c["packets"],
                    c["drops"],
                    c["overlimits"],
                )
                line += " backlog %s %dp requeues 0\n" % (sprint_size(int(c["backlog"])), c["qlen"])
                line += " lended: %d borrowed: %d giants: %d\n" % (c["lends"], c["borrows"], c["giants"])
                line += " tokens: %d ctokens: %d\n\n" % (c["tokens"], c["ctokens"])
            out.append(line)
    return "".join(out)


def cake_on_a_class(blocks: list[dict[str, Any]]) -> bool:
    """Whether a cake is grafted on a class of a device's qdisc: the engine's
    ``class_show`` walks only the qdiscs of the device's chain, so such a cake's flows
    cannot be listed (``tc class show`` says so instead)."""
    return any(
        leaf["kind"] == "cake"
        for block in blocks
        if block["kind"] == "prio" or block["kind"] in CLASSFUL_KINDS
        for leaf in leaf_blocks(block)
    )


def leaf_blocks(block: dict[str, Any]) -> list[dict[str, Any]]:
    """The qdiscs grafted on the classes of an htb or prio block (each leaf chain, top
    first), as ``tc qdisc show`` blocks."""
    out = []
    for c in (block.get("xstats") or {}).get("classes", []):
        parent = [int(block["handle"]), c["classid"]]
        for node in c.get("leaf") or []:
            out.append(dict(node, parent=parent, xstats=node.get("xstats") or None))
            parent = [node["handle"], 0]
    return out
