"""``tc filter … flower KEYS`` (tc/f_flower.c ``flower_parse_opt``), for the receive and
transmit hooks (ingress.py) and for the qdiscs that own classes (htb.py ``parse_filter``), and
filter_show.py prints it (``flower_print_opt``).

Keys: ``ip_proto`` (tcp, udp, sctp, icmp or a hex number; needs ``protocol ip``), ``src_ip`` /
``dst_ip`` with a prefix length, ``src_port`` / ``dst_port`` as ``N``, ``N/MASK`` or ``MIN-MAX``
(need ``ip_proto`` tcp, udp or sctp first), ``ip_tos`` / ``ip_ttl`` with an optional ``/MASK``,
``ip_flags [no]frag/[no]firstfrag``, ``indev DEV`` (a receive hook's filters), ``skip_hw``,
``verbose``, ``classid``/``flowid`` and ``action …`` (ingress.py's actions). Words are read as
f_flower.c reads them: first match in its order, most by prefix (``matches``), and its error
texts (``Illegal "dst_port"``, ``Illegal "eth_type" for ip proto``, ``What is "x"?``). The
keys f_flower.c knows that the model has nothing for (MAC addresses, VLAN, MPLS, tunnels,
conntrack, ICMP type/code, TCP flags, …) raise "not supported yet"; ``skip_sw`` is refused as
the kernel refuses it on a device without offload. The kernel keeps ``ip_tos``/``ip_ttl`` only
for an IP ``eth_type`` (net/sched/cls_flower.c ``fl_set_key``): with ``protocol all`` they are
parsed and dropped. The ``lab2019`` profile (iproute2 4.15, which had neither port ranges nor
masks) is not supported yet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...errors import CommandError, NotSupportedError
from .._common import c_int_full, matches, suggestion_for
from ..shell import Word
from .cursor import Cursor, read_classid

#: IP protocol numbers by f_flower.c's names (``flower_parse_ip_proto``, prefix-matched in order)
IP_PROTOS = (("tcp", 6), ("udp", 17), ("sctp", 132), ("icmp", 1))
_PORT_PROTOS = (6, 17, 132)
#: ``flags_str``: the ``ip_flags`` names and their ``TCA_FLOWER_KEY_FLAGS_*`` bits
IP_FLAGS = (("frag", 1), ("firstfrag", 2))
_SUPPORTED = (
    "classid", "flowid", "ip_flags", "verbose", "skip_hw", "skip_sw", "indev",
    "ip_proto", "ip_tos", "ip_ttl", "dst_ip", "src_ip", "dst_port", "src_port", "action",
)  # fmt: skip
#: every word ``flower_parse_opt`` knows, in its order; ``True``: compared whole (``strcmp``),
#: else a prefix selects it (``matches``)
_WORDS: tuple[tuple[str, bool], ...] = tuple(
    (w, w in ("num_of_vlans", "pppoe_sid", "ppp_proto", "gtp_opts", "l2tpv3_sid", "spi", "cfm"))
    for w in (
        "classid", "flowid", "hw_tc", "ip_flags", "verbose", "skip_hw", "skip_sw", "ct_state",
        "ct_zone", "ct_mark", "ct_label", "indev", "num_of_vlans", "vlan_id", "vlan_prio",
        "vlan_ethtype", "cvlan_id", "cvlan_prio", "cvlan_ethtype", "mpls", "mpls_label",
        "mpls_tc", "mpls_bos", "mpls_ttl", "dst_mac", "src_mac", "ip_proto", "ip_tos", "ip_ttl",
        "dst_ip", "src_ip", "dst_port", "src_port", "tcp_flags", "type", "code", "arp_tip",
        "arp_sip", "arp_op", "arp_tha", "arp_sha", "pppoe_sid", "ppp_proto", "enc_dst_ip",
        "enc_src_ip", "enc_key_id", "enc_dst_port", "enc_tos", "enc_ttl", "geneve_opts",
        "vxlan_opts", "erspan_opts", "gtp_opts", "l2tpv3_sid", "spi", "cfm", "action",
    )
)  # fmt: skip
_EXPECTED = (
    "flower [ip_proto tcp|udp|sctp|icmp] [src_ip|dst_ip A.B.C.D[/LEN]] "
    "[src_port|dst_port N[/MASK] | MIN-MAX] [ip_tos|ip_ttl V[/MASK]] [ip_flags [no]frag] "
    "[indev DEV] [skip_hw] [classid X:Y] [action …]"
)


@dataclass
class Flower:
    """What ``flower_parse_opt`` sends: the keys (the engine's ``FlowerKey``), the classid,
    the actions (``actions`` of ingress.py)."""

    key: dict[str, Any] = field(default_factory=dict)
    classid: int | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)


def _word(w: Word) -> str:
    """The f_flower.c word ``w`` selects: the first in its order that it matches."""
    for name, whole in _WORDS:
        if w.text == name or (not whole and matches(w.text, name)):
            return name
    raise CommandError(
        f'What is "{w.text}"?',
        col=w.col,
        expected=_EXPECTED,
        suggestion=suggestion_for(w.text, [n for n, _ in _WORDS]),
    )


def _illegal(what: str, v: Word, expected: str, before: str = "") -> CommandError:
    return CommandError(f'{before}Illegal "{what}"', col=v.col, expected=expected)


def _u8(text: str, base: int) -> int | None:
    n = c_int_full(text, base)
    return n if n is not None and 0 <= n <= 0xFF else None


def _u16(text: str, base: int) -> int | None:
    n = c_int_full(text, base)
    return n if n is not None and 0 <= n <= 0xFFFF else None


def _ipv4(text: str) -> int | None:
    """utils.c ``get_addr_ipv4``: up to four parts, each a C number (base 0) up to 255."""
    parts = text.split(".")
    if len(parts) > 4:
        return None
    octets = [c_int_full(p, 0) for p in parts]
    if any(o is None or not 0 <= o <= 255 for o in octets):
        return None
    return int.from_bytes(bytes([*(o or 0 for o in octets), 0, 0, 0][:4]), "big")


def _prefix(text: str) -> tuple[int, int] | None:
    """``get_prefix`` of an IPv4 address: (address, mask); ``default``/``any``/``all`` are
    0/0, ``/LEN`` a length up to 32 or a contiguous dotted mask."""
    if text in ("default", "any", "all"):
        return 0, 0
    addr_t, slash, len_t = text.partition("/")
    addr = _ipv4(addr_t)
    if addr is None:
        return None
    if not slash:
        return addr, 0xFFFFFFFF
    plen = c_int_full(len_t, 0) if "." not in len_t else None
    if "." in len_t:
        mask = _ipv4(len_t)
        ones = bin(mask).count("1") if mask is not None else -1
        if mask is None or mask != (0xFFFFFFFF << (32 - ones)) & 0xFFFFFFFF:
            return None
        plen = ones
    if plen is None or not 0 <= plen <= 32:
        return None
    return addr, (0xFFFFFFFF << (32 - plen)) & 0xFFFFFFFF


def _ip_proto(v: Word, eth: str | None) -> int:
    """``flower_parse_ip_proto``: the names need an IP ``eth_type``; a number is hex."""
    expected = "tcp, udp, sctp, icmp or a hex number 0..ff, after protocol ip"
    if eth != "ip":
        raise _illegal("ip_proto", v, expected, 'Illegal "eth_type" for ip proto\n')
    for name, number in IP_PROTOS:
        if matches(v.text, name):
            return number
    if matches(v.text, "icmpv6"):
        raise _illegal("ip_proto", v, expected, 'Illegal "eth_type" for ip proto\n')
    n = _u8(v.text, 16)
    if n is None:
        raise _illegal("ip_proto", v, expected)
    return n


def _tos_ttl(what: str, v: Word) -> dict[str, int]:
    """``flower_parse_ip_tos_ttl``: the value decimal, else hex; the mask hex (default 0xff)."""
    value_t, slash, mask_t = v.text.partition("/")
    value = _u8(value_t, 10)
    if value is None:
        value = _u8(value_t, 16)
    mask = _u8(mask_t, 16) if slash else 0xFF
    if value is None or mask is None:
        raise _illegal(what, v, f"{what} VALUE[/MASK], e.g. 0x10/0xfc")
    return {"value": value, "mask": mask}


def _port(what: str, v: Word, ip_proto: int | None) -> dict[str, Any]:
    """``flower_parse_port``: ``MIN-MAX`` (min > 0, max > min), ``N`` (decimal, not 0) or
    ``N/MASK`` (C numbers); each for an ``ip_proto`` of tcp, udp or sctp given before it."""
    expected = f"{what} N, N/MASK or MIN-MAX, after ip_proto tcp|udp|sctp"
    low_t, dash, high_t = v.text.partition("-")
    low, high = _u16(low_t, 10), (_u16(high_t, 10) if dash else 0)
    if low is None or high is None:
        if "/" not in v.text:
            raise _illegal(what, v, expected)
        value_t, _, mask_t = v.text.partition("/")
        value, mask = _u16(value_t, 0), _u16(mask_t, 0)
        if value is None or mask is None or ip_proto not in _PORT_PROTOS:
            raise _illegal(what, v, expected)
        return {"kind": "masked", "value": value, "mask": mask}
    if low and high:
        if high <= low:
            raise _illegal(what, v, expected, "max value should be greater than min value\n")
        if ip_proto not in _PORT_PROTOS:
            raise _illegal(what, v, expected)
        return {"kind": "range", "min": low, "max": high}
    if not low or ip_proto not in _PORT_PROTOS:
        raise _illegal(what, v, expected)
    return {"kind": "masked", "value": low, "mask": 0xFFFF}


def _ip_flags(v: Word) -> dict[str, int]:
    """``flower_parse_matching_flags``: ``/``-separated names, each maybe ``no``-prefixed."""
    value = mask = 0
    for token in v.text.split("/"):
        if not token:
            continue  # strtok skips empty tokens
        name = token[2:] if token.startswith("no") else token
        bit = dict(IP_FLAGS).get(name)
        if bit is None:
            raise _illegal("ip_flags", v, "ip_flags [no]frag[/[no]firstfrag]")
        value = value & ~bit if token.startswith("no") else value | bit
        mask |= bit
    return {"value": value, "mask": mask}


def parse_flower(
    cur: Cursor,
    protocol: str | None,
    receive_hook: bool,
    modern: bool,
    parse_action: Callable[[Word, Cursor], dict[str, Any]] | None,
    kind_word: Word,
) -> Flower:
    """``flower_parse_opt`` over the rest of the line; ``protocol`` the filter's (``ip``,
    ``all`` or None), ``receive_hook`` whether ``indev`` can hold, ``parse_action`` reads one
    ``action …`` (ingress.py ``_parse_action``; None where the qdisc's filters take none)."""
    if not modern:
        raise NotSupportedError(
            "tc filter flower on the lab2019 profile (iproute2 4.15) is not supported yet",
            col=kind_word.col,
            expected="profile modern",
        )
    out = Flower()
    key = out.key
    skip_sw = False
    while not cur.done():
        w = cur.take()
        name = _word(w)
        if name not in _SUPPORTED:
            raise NotSupportedError(
                f"flower {name} is not supported yet", col=w.col, expected=_EXPECTED
            )
        if name == "action":
            if parse_action is None:
                raise NotSupportedError(
                    "actions on a qdisc's flower filters are not supported yet",
                    col=w.col,
                    expected="flower KEYS classid X:Y",
                )
            out.actions.append(parse_action(w, cur))
        elif name in ("classid", "flowid"):
            out.classid = read_classid(cur.value(w, "classid X:Y"))
        elif name == "verbose":
            continue  # offload error reports only
        elif name == "skip_hw":
            key["skip_hw"] = True
        elif name == "skip_sw":
            skip_sw = True
        elif name == "indev":
            v = cur.value(w, "indev DEV")
            if not receive_hook:
                raise NotSupportedError(
                    "flower indev outside a receive hook is not supported yet",
                    col=w.col,
                    expected="indev on a filter at parent ffff: or ingress",
                )
            if not 0 < len(v.text) < 16 or "/" in v.text or any(c.isspace() for c in v.text):
                raise CommandError(
                    f'Error: argument "{v.text}" is wrong: "indev" not a valid ifname',
                    col=v.col,
                    expected="a device name of 1..15 characters",
                )
            key["indev"] = v.text
        else:
            v = cur.value(w, f"{name} VALUE")
            if name == "ip_proto":
                key["ip_proto"] = _ip_proto(v, protocol)
            elif name in ("ip_tos", "ip_ttl"):
                masked = _tos_ttl(name, v)
                if protocol == "ip":  # fl_set_key: only for an IP eth_type
                    key[name] = masked
            elif name in ("src_ip", "dst_ip"):
                prefix = _prefix(v.text) if protocol in ("ip", None) else None
                if prefix is None:
                    raise _illegal(name, v, f"{name} A.B.C.D[/LEN], after protocol ip")
                key[name] = {"value": prefix[0], "mask": prefix[1]}
            elif name in ("src_port", "dst_port"):
                key[name] = _port(name, v, key.get("ip_proto"))
            else:
                key["ip_flags"] = _ip_flags(v)
    if skip_sw:
        # tc_flags_valid refuses both; without an offloading device tc_setup_cb_add fails
        errno = "Invalid argument" if key.get("skip_hw") else "Operation not supported"
        raise CommandError(
            f"RTNETLINK answers: {errno}\nWe have an error talking to the kernel",
            col=kind_word.col,
            expected="no skip_sw: the simulated devices offload nothing",
        )
    return out


__all__ = ["Flower", "parse_flower", "IP_PROTOS", "IP_FLAGS"]
