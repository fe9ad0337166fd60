"""What a host's shell prints about its network: ``ip``, ``ifconfig``, ``arp``, ``hostname``.

``ip [-4] [-br|-brief] [-s] OBJECT [COMMAND] [ARGS]`` as iproute2's ``ip`` parses it
(``ip/ip.c``: an object may be abbreviated, ``a``/``addr``/``address``, ``l``/``link``,
``r``/``route``, ``n``/``neigh``/``neighbour``; the command defaults to ``show``,
also ``list``/``lst``): ``ip addr|link show [dev] [DEV] [up]``, ``ip route show``,
``ip neigh show [dev DEV]``, ``ip link set [dev] DEV up|down`` and ``ip link add NAME type ifb``. ``ifconfig
[-a] [IFACE]``
(net-tools), ``ifconfig IFACE up|down``, ``arp [-n] [-a] [-e] [-i IFACE] [HOST]``
(net-tools), ``hostname`` (the machine's name: Mininet's hosts share its UTS namespace). Formats:
formats/netinfo.py.

Deviations: IPv6 is not modelled, so no ``inet6`` addresses are listed (``-6`` is
refused); ``ip link set DEV down`` / ``ifconfig DEV down`` take only that end down
(it drops what it would send or receive, counted as ``link_down``; the veth peer is not
shown as NO-CARRIER); ``up`` on an interface that is up does nothing, as in Linux; addresses and routes
cannot be changed (``ip addr add``,
``ip route add``, ``ifconfig DEV ADDR``); the neighbour table lists the on-link
addresses the node has exchanged packets with (see run/programs/netinfo.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CommandError, NotSupportedError
from .shell import Word

OBJECTS = {"address": "addr", "link": "link", "route": "route", "neighbour": "neigh", "neighbor": "neigh"}
#: iproute2 matches an object by prefix, checked in this order (``ip/ip.c`` cmds[])
_ORDER = ["address", "link", "route", "neighbour", "neighbor"]
_OTHER_OBJECTS = {"rule", "maddress", "mroute", "tunnel", "tuntap", "xfrm", "netns", "monitor", "ntable",
                  "tcp_metrics", "token", "netconf", "ila", "vrf", "sr", "nexthop", "mptcp", "ioam",
                  "stats", "macsec", "l2tp", "fou", "mrule", "addrlabel"}


@dataclass
class Ip:
    obj: str
    command: str = "show"
    dev: str | None = None
    dev_col: int | None = None
    brief: bool = False
    #: ``-s``: the link counters (``ip -s link``)
    stats: bool = False
    inet_only: bool = False
    up_only: bool = False
    #: ``ip link set DEV up|down``
    state: str | None = None
    #: ``ip link add NAME type KIND``: the kind (only ``ifb``)
    link_kind: str | None = None


def _object(w: Word) -> str:
    for name in _ORDER:
        if name.startswith(w.text) and (len(w.text) > 0):
            return OBJECTS[name]
    if w.text in ("addr", "a"):
        return "addr"
    if w.text in _OTHER_OBJECTS:
        raise NotSupportedError(f"ip {w.text} is not supported yet", col=w.col,
                                expected="ip addr|link|route|neigh [show]")
    raise CommandError(f'Object "{w.text}" is unknown, try "ip help".', col=w.col,
                       expected="addr, link, route or neigh")


def parse_ip(words: list[Word]) -> Ip:
    args = words[1:]
    k = 0
    opts = Ip("")
    while k < len(args) and args[k].text.startswith("-") and len(args[k].text) > 1:
        t = args[k].text.lstrip("-")
        if t in ("br", "brief"):
            opts.brief = True
        elif t in ("s", "stats", "statistics"):
            if opts.stats:
                raise NotSupportedError("ip -s -s (error counters) is not supported yet", col=args[k].col,
                                        expected="ip -s link show")
            opts.stats = True
        elif t == "4":
            opts.inet_only = True
        elif t in ("c", "color", "d", "details", "n") or t.startswith("color="):
            pass  # no colours on a log; details add nothing modelled
        elif t in ("6", "j", "json", "o", "oneline", "f", "family", "b", "batch", "net", "netns"):
            raise NotSupportedError(f"ip {args[k].text} is not supported yet", col=args[k].col,
                                    expected="ip [-4] [-br] addr|link|route|neigh [show]")
        else:
            raise CommandError(f'Option "{args[k].text}" is unknown, try "ip -help".', col=args[k].col)
        k += 1
    if k >= len(args):
        raise CommandError("Usage: ip [ OPTIONS ] OBJECT { COMMAND | help }", col=words[0].col,
                           expected="ip addr|link|route|neigh [show]", suggestion="e.g. ip addr show")
    cmd = opts
    cmd.obj = _object(args[k])
    rest = args[k + 1:]
    if rest and rest[0].text in ("show", "list", "lst", "sh", "ls", "l"):
        rest = rest[1:]
    elif rest and rest[0].text == "set" and cmd.obj == "link":
        return _link_set(cmd, words, rest[1:])
    elif rest and rest[0].text == "add" and cmd.obj == "link":
        return _link_add(cmd, words, rest[1:])
    elif rest and rest[0].text in ("del", "delete") and cmd.obj == "link":
        raise NotSupportedError("ip link delete is not supported yet: a device made by ip link add stays for "
                                "the run", col=rest[0].col, expected="ip link add NAME type ifb")
    elif rest and not (cmd.obj in ("addr", "link") and rest[0].text in ("dev", "up")) and not (
            cmd.obj in ("addr", "link") and len(rest) == 1):
        raise NotSupportedError(f"ip {cmd.obj} {rest[0].text} is not supported yet", col=rest[0].col,
                                expected=f"ip {cmd.obj} show" + (" | ip link set DEV up|down"
                                                                  if cmd.obj == "link" else ""),
                                suggestion="addresses and routes are fixed by the topology")
    j = 0
    while j < len(rest):
        w = rest[j]
        if w.text == "dev" and j + 1 < len(rest):
            cmd.dev, cmd.dev_col = rest[j + 1].text, rest[j + 1].col
            j += 2
        elif w.text == "up" and cmd.obj in ("addr", "link"):
            cmd.up_only = True
            j += 1
        elif cmd.dev is None and cmd.obj in ("addr", "link"):
            cmd.dev, cmd.dev_col = w.text, w.col
            j += 1
        else:
            raise NotSupportedError(f"ip {cmd.obj} show {w.text} is not supported yet", col=w.col,
                                    expected=f"ip {cmd.obj} show [dev DEV]")
    return cmd


#: IFNAMSIZ - 1
_IFNAME_MAX = 15


def _link_add(cmd: Ip, words: list[Word], rest: list[Word]) -> Ip:
    """``ip link add [name] NAME type ifb`` (ip/iplink.c ``iplink_parse``; ``dev NAME``
    names it too). Other link types and options are not supported yet."""
    cmd.command = "add"
    j = 0
    kind_w: Word | None = None
    while j < len(rest):
        w = rest[j]
        if w.text in ("name", "dev") and j + 1 < len(rest):
            cmd.dev, cmd.dev_col = rest[j + 1].text, rest[j + 1].col
            j += 2
        elif w.text == "type" and j + 1 < len(rest):
            kind_w = rest[j + 1]
            j += 2
            if j < len(rest):
                raise NotSupportedError(
                    f"ip link add … type {kind_w.text} {rest[j].text} is not supported yet",
                    col=rest[j].col,
                    expected="ip link add NAME type ifb",
                )
        elif cmd.dev is None and w.text not in ("name", "dev", "type"):
            cmd.dev, cmd.dev_col = w.text, w.col
            j += 1
        else:
            raise NotSupportedError(f"ip link add {w.text} is not supported yet", col=w.col,
                                    expected="ip link add NAME type ifb")
    if kind_w is None:
        raise CommandError("Not enough information: \"type\" argument is required", col=words[0].col,
                           expected="ip link add NAME type ifb")
    if kind_w.text != "ifb":
        raise NotSupportedError(f"ip link add … type {kind_w.text} is not supported yet", col=kind_w.col,
                                expected="type ifb (the links are the topology's)")
    if cmd.dev is None:
        raise CommandError("Not enough information: \"dev\" argument is required.", col=words[0].col,
                           expected="ip link add NAME type ifb")
    if (
        len(cmd.dev) > _IFNAME_MAX
        or not cmd.dev
        or any(c in cmd.dev for c in "/: ")
        or cmd.dev in (".", "..")
    ):
        raise CommandError(
            f'Error: argument "{cmd.dev}" is wrong: "name" not a valid ifname',
            col=cmd.dev_col,
            expected="a name of at most 15 characters without / or :",
        )
    cmd.link_kind = "ifb"
    return cmd


def _link_set(cmd: Ip, words: list[Word], rest: list[Word]) -> Ip:
    cmd.command = "set"
    j = 0
    while j < len(rest):
        w = rest[j]
        if w.text == "dev" and j + 1 < len(rest):
            cmd.dev, cmd.dev_col = rest[j + 1].text, rest[j + 1].col
            j += 2
        elif w.text in ("up", "down"):
            cmd.state = w.text
            j += 1
        elif cmd.dev is None:
            cmd.dev, cmd.dev_col = w.text, w.col
            j += 1
        else:
            raise NotSupportedError(f"ip link set {w.text} is not supported yet", col=w.col,
                                    expected="ip link set DEV up|down")
    if cmd.dev is None or cmd.state is None:
        raise CommandError("ip link set: expected a device and up or down", col=words[0].col,
                           expected="ip link set DEV up|down")
    return cmd


@dataclass
class Ifconfig:
    all: bool = False
    dev: str | None = None
    dev_col: int | None = None
    #: ``ifconfig IFACE up|down``
    state: str | None = None


def parse_ifconfig(words: list[Word]) -> Ifconfig:
    cmd = Ifconfig()
    args = list(words[1:])
    if args and args[0].text == "-a":
        cmd.all = True
        args = args[1:]
    if args:
        cmd.dev, cmd.dev_col = args[0].text, args[0].col
        cmd.all = True
        extra = args[1:]
        if extra and [w.text for w in extra] in (["up"], ["down"]):
            cmd.state = extra[0].text
            return cmd
        if extra:
            w = extra[0]
            raise NotSupportedError(
                f"ifconfig {cmd.dev} {w.text}: changing an interface is not supported yet",
                col=w.col,
                expected="ifconfig [-a] [IFACE]",
                suggestion="addresses are fixed by the topology (a link's a_ip/b_ip)",
            )
    return cmd


@dataclass
class Arp:
    bsd: bool = False
    numeric: bool = False
    dev: str | None = None
    host: str | None = None


def parse_arp(words: list[Word]) -> Arp:
    cmd = Arp()
    args = words[1:]
    k = 0
    while k < len(args):
        w = args[k]
        t = w.text
        if t.startswith("-") and len(t) > 1:
            for j, ch in enumerate(t[1:]):
                if ch == "n":
                    cmd.numeric = True
                elif ch == "a":
                    cmd.bsd = True
                elif ch == "e":
                    cmd.bsd = False
                elif ch == "v":
                    pass
                elif ch == "i":
                    value = t[2 + j:]
                    if not value:
                        if k + 1 >= len(args):
                            raise CommandError("arp: option requires an argument -- 'i'", col=w.col)
                        k += 1
                        value = args[k].text
                    cmd.dev = value
                    break
                elif ch in "dsf":
                    raise NotSupportedError(f"arp -{ch} (changing the ARP cache) is not supported yet",
                                            col=w.col, expected="arp [-n] [-a] [-i IFACE] [HOST]")
                else:
                    raise CommandError(f"arp: invalid option -- '{ch}'", col=w.col,
                                       expected="arp [-n] [-a] [-i IFACE] [HOST]")
        elif cmd.host is None:
            cmd.host = t
        else:
            raise CommandError(f"arp: unexpected argument {t}", col=w.col, expected="arp [-n] [HOST]")
        k += 1
    return cmd


def parse_hostname(words: list[Word]) -> None:
    if len(words) > 1:
        w = words[1]
        raise NotSupportedError(f"hostname {w.text}: only printing the node's name is supported", col=w.col,
                                expected="hostname")


__all__ = ["Ip", "Ifconfig", "Arp", "parse_ip", "parse_ifconfig", "parse_arp", "parse_hostname"]
