"""``ingress`` and ``clsact`` (tc/q_ingress.c, tc/q_clsact.c) and the filters that hang on
them (docs/semantics/qdiscs.md §21).

``tc filter {add|delete} dev D {parent ffff:|ingress|egress} protocol {ip|all} [prio N]
{u32 match … | matchall | flower KEYS} [flowid X:Y] [action] …`` as tc/tc_filter.c, tc/f_u32.c,
tc/f_matchall.c and (flower.py) tc/f_flower.c read it, with the actions of tc/m_action.c:
``mirred egress redirect|mirror dev DEV`` (tc/m_mirred.c), ``police`` (tc/m_police.c
``act_parse_police``: rate, burst, mtu, peakrate, overhead, mpu, linklayer and the
``conform-exceed EXCEED[/CONFORM]`` verdicts) and the plain verdicts of tc/m_gact.c (``action
drop``). Each ``tc filter`` line is one engine request (``HookFilterRequest.to_dict``, sent by
``Engine.tc_hook_filter``): the engine adds or removes the filter and answers as the kernel does;
a ``tc qdisc change|replace`` of the same kind keeps the filters. ``bpf``, ``basic``, ``fw``,
``mirred ingress``, ``avrate``, ``pkts_rate``, ``goto chain`` and ``index`` raise "not supported
yet"; ``tc actions`` is not supported yet either (``tc filter show``: filter_show.py).

Printing: ``ingress_print_opt`` prints a row of dashes; clsact prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from ...units import parse_rate, parse_size
from .._common import c_int_full, matches
from ..shell import Word
from . import _schema
from ._schema import QdiscSpecClsact as ClsactSpec
from ._schema import QdiscSpecIngress as IngressSpec
from .cursor import Cursor, read_classid, read_unit
from .flower import parse_flower
from .htb import _parse_match as _parse_ip_match
from .kind import QdiscKind
from .tc_util import cell_log, xmittime

#: psched tick in ns (``PSCHED_TICKS2NS``)
_NS_PER_TICK = 64
#: gact verdict words (tc/tc_util.c ``action_a2n``) -> the engine's name
_CONTROLS = {
    "reclassify": "reclassify",
    "drop": "drop",
    "shot": "drop",
    "continue": "continue",
    "pass": "ok",
    "ok": "ok",
    "pipe": "pipe",
}
_FILTER_EXPECTED = (
    "tc filter add dev D parent ffff: protocol all prio N u32 match u32 0 0 "
    "action mirred egress redirect dev ifb0 | … matchall action police rate R burst B drop | "
    "… protocol ip flower ip_proto tcp dst_port 5201 action drop"
)


def _parse_ingress(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> IngressSpec:
    # q_ingress.c ingress_parse: only "handle X" may follow (and is ignored)
    while not cur.done():
        w = cur.take()
        if w.text == "handle":
            cur.value(w, "handle ffff:")
            continue
        raise CommandError(f'What is "{w.text}"?\nUsage: ... ingress', col=w.col, expected="ingress")
    return IngressSpec()


def _parse_clsact(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> ClsactSpec:
    if not cur.done():
        w = cur.take()
        raise CommandError(f'What is "{w.text}"?\nUsage: ... clsact', col=w.col, expected="clsact")
    return ClsactSpec()


def _print_ingress(opts: dict[str, Any], modern: bool, details: bool) -> str:
    return "---------------- "


def _print_clsact(opts: dict[str, Any], modern: bool, details: bool) -> str:
    return ""


KINDS = (
    QdiscKind("ingress", _parse_ingress, _print_ingress),
    QdiscKind("clsact", _parse_clsact, _print_clsact),
)


# ------------------------------------------------------------------ tc filter


@dataclass(kw_only=True)
class HookFilterRequest(_schema.HookFilterRequest):
    """``tc filter {add|delete} dev D {parent ffff:|ingress|egress} …``: the engine's
    ``HookFilterRequest`` (``hook`` "ingress" for ffff: and ffff:fff2, "egress" for ffff:fff3;
    ``filter`` the ``HookFilter`` of ingress.rs, mirred devices as typed, which
    run/programs/tc.py resolves)."""

    #: (device name, column) of every mirred target, in order
    mirred: list[tuple[str, int | None]] = field(default_factory=list)
    dev_col: int | None = None
    verb_col: int | None = None
    #: the qdisc major (always ffff)
    major: int = 0xFFFF


def is_hook_filter(words: list[Word], i: int) -> bool:
    """Does this ``tc filter`` line address an ingress/clsact hook?"""
    for k in range(i, len(words)):
        t = words[k].text
        if t in ("ingress", "egress"):
            return True
        if t == "parent" and k + 1 < len(words):
            return words[k + 1].text.lower().startswith("ffff:")
    return False


def parse_filter(words: list[Word], i: int, profile: Profile) -> HookFilterRequest:
    cur = Cursor(words, i)
    verb_w = cur.take()
    verb = next((v for v in ("add", "delete") if matches(verb_w.text, v)), None)
    if verb is None:
        raise NotSupportedError(
            f'tc filter "{verb_w.text}" is not supported yet', col=verb_w.col, expected=_FILTER_EXPECTED
        )
    modern = bool(profile.tc_modern_print)
    dev: Word | None = None
    hook: str | None = None
    protocol: str | None = None
    prio = 0
    classifier: str | None = None
    matches_: list[dict[str, Any]] = []
    flower: dict[str, Any] | None = None
    classid: int | None = None
    actions: list[dict[str, Any]] = []
    mirred: list[tuple[str, int | None]] = []
    while not cur.done():
        w = cur.take()
        t = w.text
        if classifier is None:
            if t == "dev":
                dev = cur.value(w, "dev DEVICE")
            elif t in ("ingress", "egress"):
                hook = t
            elif t == "parent":
                v = cur.value(w, "parent ffff:")
                cid = read_classid(v)
                minor = cid & 0xFFFF
                if cid >> 16 != 0xFFFF or minor not in (0, 0xFFF2, 0xFFF3):
                    raise CommandError(
                        "Error: Specified class doesn't exist.",
                        col=v.col,
                        expected="parent ffff: (or ingress, egress)",
                    )
                hook = "egress" if minor == 0xFFF3 else "ingress"
            elif t == "protocol":
                v = cur.value(w, "protocol ip|all")
                if v.text not in ("ip", "all"):
                    raise NotSupportedError(
                        f"tc filter protocol {v.text} is not supported yet",
                        col=v.col,
                        expected="protocol ip|all",
                    )
                protocol = v.text
            elif t in ("prio", "pref", "priority", "preference"):
                v = cur.value(w, "prio N")
                n = c_int_full(v.text, 0)
                if n is None or not 0 <= n <= 0xFFFF:
                    raise CommandError(
                        f'Illegal "priority" "{v.text}"', col=v.col, expected="a number 1..65535"
                    )
                prio = n
            elif t in ("u32", "matchall"):
                classifier = t
            elif t == "flower":
                classifier = t
                fl = parse_flower(
                    cur,
                    protocol,
                    hook == "ingress",
                    modern,
                    lambda a, c: _parse_action(a, c, modern, mirred),
                    w,
                )
                flower, classid, actions = fl.key, fl.classid, fl.actions
            elif t in ("bpf", "basic", "fw", "route", "cgroup", "flow", "tcindex", "rsvp"):
                raise NotSupportedError(
                    f"tc filter {t} is not supported yet", col=w.col, expected="u32, matchall or flower"
                )
            elif t in ("handle", "chain", "block", "estimator", "root"):
                raise NotSupportedError(
                    f'tc filter "{t}" is not supported yet', col=w.col, expected=_FILTER_EXPECTED
                )
            else:
                raise CommandError(
                    f'Unknown filter "{t}", hence option "{t}" is unparsable',
                    col=w.col,
                    expected=_FILTER_EXPECTED,
                )
            continue
        if t == "match" and classifier == "u32":
            matches_.append(_parse_match(w, cur))
        elif t in ("flowid", "classid"):
            classid = read_classid(cur.value(w, "flowid X:Y"))
        elif t == "action" or t == "actions":
            actions.append(_parse_action(w, cur, modern, mirred))
        elif t == "police" and classifier == "u32":
            actions.append(_parse_police(w, cur, modern))
        elif t in ("skip_hw", "skip_sw"):
            continue
        else:
            raise NotSupportedError(
                f'{classifier} option "{t}" is not supported yet', col=w.col, expected=_FILTER_EXPECTED
            )
    if dev is None:
        raise CommandError(
            'Not enough information: "dev" argument is required.', col=verb_w.col, expected=_FILTER_EXPECTED
        )
    if hook is None:
        raise CommandError(
            "tc filter needs parent ffff: (or ingress, egress)", col=verb_w.col, expected=_FILTER_EXPECTED
        )
    if verb == "delete":
        return HookFilterRequest(
            verb="delete", dev=dev.text, hook=hook, prio=prio, dev_col=dev.col, verb_col=verb_w.col
        )
    if classifier is None or protocol is None:
        raise CommandError(
            "Error: Filter kind and protocol must be specified.", col=verb_w.col, expected=_FILTER_EXPECTED
        )
    if classifier == "u32" and not matches_:
        raise CommandError(
            "u32 needs at least one match (match u32 0 0 for every packet)",
            col=verb_w.col,
            expected=_FILTER_EXPECTED,
        )
    flt = {
        "prio": prio,
        "protocol_all": protocol == "all",
        "classifier": classifier,
        "matches": matches_,
        **({"flower": flower} if flower is not None else {}),
        "classid": classid,
        "actions": actions,
    }
    return HookFilterRequest(
        verb="add", dev=dev.text, hook=hook, filter=flt, mirred=mirred, dev_col=dev.col, verb_col=verb_w.col
    )


def _parse_match(w: Word, cur: Cursor) -> dict[str, Any]:
    """``match u32 VALUE MASK [at 0]`` with a zero mask (every packet), or the
    ``match ip …`` forms htb.py reads."""
    nxt = cur.peek()
    if nxt is not None and nxt.text == "u32":
        cur.take()
        v = cur.value(nxt, "VALUE MASK")
        m = cur.value(v, "MASK")
        value, mask = c_int_full(v.text, 0), c_int_full(m.text, 0)
        if value is None or mask is None or not 0 <= value <= 0xFFFFFFFF or not 0 <= mask <= 0xFFFFFFFF:
            raise CommandError('Illegal "match u32" value', col=v.col, expected="VALUE MASK, e.g. 0 0")
        at = cur.peek()
        if at is not None and at.text == "at":
            cur.take()
            off = cur.value(at, "at OFFSET")
            if c_int_full(off.text, 0) != 0:
                raise NotSupportedError(
                    "u32 match u32 … at OFFSET other than 0 is not supported yet",
                    col=off.col,
                    expected="match u32 0 0 [at 0]",
                )
        if mask != 0:
            raise NotSupportedError(
                "u32 match u32 with a non-zero mask is not supported yet",
                col=m.col,
                expected="match u32 0 0, or match ip src|dst|sport|dport|tos",
            )
        # pack_key: the value is masked (kept as 0), the key sits at offset 0
        return {"field": "any", "value": 0, "mask": 0}
    return dict(_parse_ip_match(w, cur))


def _control(w: Word) -> str | None:
    for word, name in _CONTROLS.items():
        if matches(w.text, word):
            return name
    return None


def _parse_action(w: Word, cur: Cursor, modern: bool, mirred: list[tuple[str, int | None]]) -> dict[str, Any]:
    kind = cur.value(w, "action KIND")
    if kind.text == "mirred":
        direction = cur.value(kind, "egress")
        if direction.text != "egress":
            raise NotSupportedError(
                f"mirred {direction.text} is not supported yet",
                col=direction.col,
                expected="mirred egress redirect|mirror",
            )
        how = cur.value(direction, "redirect|mirror")
        if how.text not in ("redirect", "mirror"):
            raise NotSupportedError(
                f"mirred egress {how.text} is not supported yet",
                col=how.col,
                expected="mirred egress redirect|mirror dev DEVICE",
            )
        d = cur.value(how, "dev DEVICE")
        if d.text != "dev":
            raise CommandError(f'mirred: bad value "{d.text}"', col=d.col, expected="dev DEVICE")
        name = cur.value(d, "DEVICE")
        mirred.append((name.text, name.col))
        ctl = cur.peek()
        if ctl is not None and _control(ctl) is not None:
            raise NotSupportedError(
                f"a verdict after mirred {how.text} ({ctl.text}) is not supported yet", col=ctl.col
            )
        if how.text == "mirror":
            return {"kind": "mirred", "dev": name.text, "mirror": True}
        return {"kind": "mirred", "dev": name.text}
    if kind.text == "police":
        return _parse_police(kind, cur, modern)
    if kind.text == "gact":
        kind = cur.value(kind, "drop|pass|continue|pipe|reclassify")
    ctl = _control(kind)
    if ctl is not None:
        return {"kind": "gact", "control": ctl}
    raise NotSupportedError(
        f"action {kind.text} is not supported yet",
        col=kind.col,
        expected="mirred, police or a verdict (drop, pass)",
    )


def _size_cell(v: Word, what: str) -> tuple[int, int | None]:
    size_t, slash, cell_t = v.text.partition("/")
    size = read_unit(parse_size, Word(size_t, v.col), f'Illegal "{what}"')
    cell = None
    if slash:
        c = c_int_full(cell_t, 0)
        if c is None or c <= 0 or c & (c - 1):
            raise CommandError(f'Illegal "{what}"', col=v.col, expected="SIZE/CELL, CELL a power of two")
        cell = c.bit_length() - 1
    return size, cell


def _parse_police(w: Word, cur: Cursor, modern: bool) -> dict[str, Any]:
    """``act_parse_police``: the options up to the first word it does not know."""
    rate = peak = 0
    burst = mtu = mpu = overhead = 0
    burst_cell: int | None = None
    atm = False
    exceed, conform = "reclassify", "ok"
    seen: set[str] = set()

    def once(name: str, at: Word) -> None:
        if name in seen:
            raise CommandError(f'Error: duplicate "{name}": "{at.text}" is the second value.', col=at.col)
        seen.add(name)

    ok = 0
    while not cur.done():
        nxt = cur.peek()
        assert nxt is not None
        t = nxt.text
        if matches(t, "burst") or t in ("buffer", "maxburst"):
            cur.take()
            v = cur.value(nxt, "burst BYTES")
            once("buffer/burst", v)
            burst, burst_cell = _size_cell(v, "buffer")
        elif t in ("mtu", "minburst"):
            cur.take()
            v = cur.value(nxt, "mtu BYTES")
            once("mtu/minburst", v)
            mtu, _ = _size_cell(v, "mtu")
        elif t == "mpu":
            cur.take()
            v = cur.value(nxt, "mpu BYTES")
            once("mpu", v)
            mpu = read_unit(parse_size, v, f'Illegal "mpu": "{v.text}"')
        elif t == "rate":
            cur.take()
            v = cur.value(nxt, "rate RATE")
            once("rate", v)
            rate = read_unit(parse_rate, v, f'Illegal "rate": "{v.text}"')
        elif matches(t, "peakrate"):
            cur.take()
            v = cur.value(nxt, "peakrate RATE")
            once("peakrate", v)
            peak = read_unit(parse_rate, v, f'Illegal "peakrate": "{v.text}"')
        elif matches(t, "overhead"):
            cur.take()
            v = cur.value(nxt, "overhead BYTES")
            n = c_int_full(v.text, 10)
            if n is None or not 0 <= n <= 0xFFFF:
                raise CommandError(f'Illegal "overhead": "{v.text}"', col=v.col, expected="0..65535")
            overhead = n
        elif matches(t, "linklayer"):
            cur.take()
            v = cur.value(nxt, "linklayer ethernet|atm|adsl")
            if v.text not in ("ethernet", "atm", "adsl"):
                raise CommandError(
                    f'Illegal "linklayer": "{v.text}"', col=v.col, expected="ethernet, atm or adsl"
                )
            atm = v.text != "ethernet"
        elif t == "conform-exceed":
            cur.take()
            v = cur.value(nxt, "conform-exceed EXCEED[/CONFORM]")
            ex_t, slash, co_t = v.text.partition("/")
            ex = _control(Word(ex_t, v.col))
            co = _control(Word(co_t, v.col)) if slash else conform
            if ex is None or co is None:
                raise NotSupportedError(
                    f'police verdict "{v.text}" is not supported yet',
                    col=v.col,
                    expected="conform-exceed drop|pass|continue|pipe|reclassify[/…]",
                )
            exceed, conform = ex, co
        elif _control(nxt) is not None and t not in ("action",):
            cur.take()
            exceed = _control(nxt) or exceed
        elif t in ("avrate", "pkts_rate", "pkts_burst", "index", "goto", "jump"):
            raise NotSupportedError(
                f'police "{t}" is not supported yet',
                col=nxt.col,
                expected="police rate R burst B [mtu M] [peakrate P] [conform-exceed …]",
            )
        else:
            break
        ok += 1
    if not ok:
        raise CommandError(
            "bad action parameters: police needs rate and burst", col=w.col, expected="police rate R burst B"
        )
    if not rate and not mtu:
        raise CommandError("'rate' or 'avrate' or 'mtu' or 'pkts_rate' MUST be specified.", col=w.col)
    if rate and not burst:
        raise CommandError("'burst' requires 'rate'.", col=w.col)
    if peak:
        if not rate:
            raise CommandError("'peakrate' requires 'rate'.", col=w.col)
        if not mtu:
            raise CommandError("'mtu' is required, if 'peakrate' is requested.", col=w.col)
    # tcf_police_init: no mtu -> 255 << cell_log of the rate table (mtu 0 -> 2047), else u32 max
    kernel_mtu = mtu
    if not mtu and rate:
        kernel_mtu = 255 << (burst_cell if burst_cell is not None else cell_log(0))
    return {
        "kind": "police",
        "rate": rate,
        "burst_ns": xmittime(rate, burst, modern) * _NS_PER_TICK if rate else 0,
        "mtu": kernel_mtu,
        "peakrate": peak or None,
        "overhead": overhead,
        "mpu": mpu,
        "atm": atm,
        "exceed": exceed,
        "conform": conform,
    }


__all__ = [
    "KINDS",
    "IngressSpec",
    "ClsactSpec",
    "HookFilterRequest",
    "parse_filter",
    "is_hook_filter",
]
