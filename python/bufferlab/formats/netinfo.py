"""The text of ``ip addr|link|route|neigh show``, ``ifconfig`` and ``arp``.

Layouts followed (read in the tools' sources, not copied):

- iproute2 ``ip/ipaddress.c`` (v4.15.0 for ``lab2019``, v6.9.0 for ``modern``; the
  same layout for what is printed here): ``print_linkinfo`` gives
  ``IDX: NAME@ifPEER: <FLAGS> mtu M qdisc Q state S [mode DEFAULT ]group default qlen N``
  then ``    link/ether MAC brd ff:ff:ff:ff:ff:ff link-netnsid K``, the flags in
  ``print_link_flags`` order (LOOPBACK, BROADCAST, MULTICAST, ..., UP, LOWER_UP);
  ``print_addrinfo`` gives ``    inet A/P brd B scope global NAME`` and
  ``       valid_lft forever preferred_lft forever``; ``-br``: the name (with
  ``@PEER``) padded to 16, the state to 14, then each address ``A/P `` (addr) or
  the MAC and the flags (link).
- iproute2 ``print_link_stats64`` (``ip -s link``): v4.15 prints ``RX: bytes  packets  errors
  dropped overrun mcast`` over numbers left-aligned in columns of 10, 8, 7, 7, 7, 7; v6.x
  ``RX: bytes packets errors dropped missed mcast`` over numbers right-aligned in columns as
  wide as the widest number (at least 10, 7, 6, 7, 7, 7). Counters the engine does not keep
  (errors, drops at the device, multicast) are 0.
- iproute2 ``ip/iproute.c`` ``print_route``: ``NET/P dev D proto kernel scope link
  src A `` (each field followed by a space).
- iproute2 ``ip/ipneigh.c`` ``print_neigh``: ``A dev D lladdr MAC STATE`` (v6.9 prints a
  space after the state too).
- net-tools ``lib/interface.c`` ``ife_print_long`` (git of 2018-06, Ubuntu's
  1.60+git2018): ``NAME: flags=N<UP,BROADCAST,RUNNING,MULTICAST>  mtu M``, the
  ``inet``/``netmask``/``broadcast`` line, ``ether MAC  txqueuelen N  (Ethernet)``
  (``loop  txqueuelen N  (Local Loopback)``), the RX/TX lines with bytes scaled in
  KiB/MiB/GiB to one decimal, truncated; interfaces sorted by name, a blank line after
  each.
- net-tools ``arp.c``: ``arp_disp_2`` (the default ``-e`` table: ``%-23.23s  %-8.8s%-20.20s%-6.6s%-15.15s %s``
  under its header, printed only above a first entry) and ``arp_disp`` (``-a``:
  ``? (A) at MAC [ether] on D``).

IPv6 is not modelled: no ``inet6`` lines.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass


@dataclass
class Iface:
    index: int
    name: str
    mac: str
    ip: str | None
    prefix: int
    qdisc: str
    #: the veth peer: (its ifindex, its name if in the same namespace, else None; the
    #: peer namespace's id)
    peer_index: int | None = None
    peer_name: str | None = None
    netnsid: int | None = None
    loopback: bool = False
    rx_packets: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    tx_dropped: int = 0
    #: an ifb (``ip link add NAME type ifb``): NOARP, state UNKNOWN when up, DOWN until then
    ifb: bool = False
    down: bool = False

    @property
    def mtu(self) -> int:
        return 65536 if self.loopback else 1500

    @property
    def label(self) -> str:
        """The name as ``ip`` prints it: ``h1-eth0@if3``, ``s1-eth3@s2-eth1``."""
        if self.peer_index is None:
            return self.name
        return f"{self.name}@{self.peer_name or f'if{self.peer_index}'}"

    @property
    def state(self) -> str:
        if self.ifb or self.down:
            return "DOWN" if self.down else "UNKNOWN"
        return "UNKNOWN" if self.loopback else "UP"

    @property
    def flags(self) -> str:
        if self.ifb:
            return "BROADCAST,NOARP" if self.down else "BROADCAST,NOARP,UP,LOWER_UP"
        if self.down:  # iproute2 prints no UP, LOWER_UP for a device set down
            return "BROADCAST,MULTICAST"
        return "LOOPBACK,UP,LOWER_UP" if self.loopback else "BROADCAST,MULTICAST,UP,LOWER_UP"

    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(f"{self.ip}/{self.prefix}", strict=False)

    def broadcast(self) -> str:
        return str(self.network().broadcast_address)


def loopback() -> Iface:
    return Iface(1, "lo", "00:00:00:00:00:00", "127.0.0.1", 8, "noqueue", loopback=True)


def _link_lines(i: Iface, link_mode: bool) -> list[str]:
    mode = "mode DEFAULT " if link_mode else ""
    first = (f"{i.index}: {i.label}: <{i.flags}> mtu {i.mtu} qdisc {i.qdisc} state {i.state} "
             f"{mode}group default qlen {32 if i.ifb else 1000}")
    kind = "loopback" if i.loopback else "ether"
    brd = "00:00:00:00:00:00" if i.loopback else "ff:ff:ff:ff:ff:ff"
    nsid = f" link-netnsid {i.netnsid}" if i.netnsid is not None else ""
    return [first, f"    link/{kind} {i.mac} brd {brd}{nsid}"]


def _inet_lines(i: Iface) -> list[str]:
    if i.ip is None:
        return []
    if i.loopback:
        head = f"    inet {i.ip}/{i.prefix} scope host {i.name}"
    else:
        head = f"    inet {i.ip}/{i.prefix} brd {i.broadcast()} scope global {i.name}"
    return [head, "       valid_lft forever preferred_lft forever"]


def ip_addr_text(ifaces: list[Iface], brief: bool, inet_only: bool) -> str:
    out = []
    for i in ifaces:
        if brief:
            addrs = f"{i.ip}/{i.prefix} " if i.ip else ""
            if inet_only and not addrs:
                continue
            out.append(f"{i.label:<16} {i.state:<14} {addrs}")
            continue
        if inet_only and i.ip is None:
            continue
        out += (_link_lines(i, False) if not inet_only else [_link_lines(i, False)[0]]) + _inet_lines(i)
    return "".join(line + "\n" for line in out)


def _stats_lines(i: Iface, modern: bool) -> list[str]:
    """``ip -s link``'s counters (``print_link_stats64``): v4.15 left-aligns the numbers in
    fixed columns; v6.x right-aligns them in columns as wide as the largest number."""
    rx = [i.rx_bytes, i.rx_packets, 0, 0, 0, 0]
    tx = [i.tx_bytes, i.tx_packets, 0, 0, 0, 0]
    if not modern:
        widths = [10, 8, 7, 7, 7, 7]
        return ["    RX: bytes  packets  errors  dropped overrun mcast   ",
                "    " + "".join(f"{v:<{w}} " for v, w in zip(rx, widths, strict=True)),
                "    TX: bytes  packets  errors  dropped carrier collsns ",
                "    " + "".join(f"{v:<{w}} " for v, w in zip(tx, widths, strict=True))]
    cols = [10, 7, 6, 7, 7, 7]
    for values in (rx, tx):
        cols = [max(c, len(str(v))) for c, v in zip(cols, values, strict=True)]
    heads = (("bytes", "packets", "errors", "dropped", "missed", "mcast"),
             ("bytes", "packets", "errors", "dropped", "carrier", "collsns"))
    out = []
    for side, head, values in (("RX", heads[0], rx), ("TX", heads[1], tx)):
        names = " ".join(
            f"{h:>{c - 4 if k == 0 else c}}" for k, (h, c) in enumerate(zip(head, cols, strict=True))
        )
        out.append(f"    {side}: {names} {'':>10}")
        out.append("    " + "".join(f"{v:>{c}} " for v, c in zip(values, cols, strict=True)))
    return out


def ip_link_text(ifaces: list[Iface], brief: bool, stats: bool = False, modern: bool = False) -> str:
    if brief:
        return "".join(f"{i.label:<16} {i.state:<14} {i.mac} <{i.flags}> \n" for i in ifaces)
    return "".join(line + "\n" for i in ifaces
                   for line in _link_lines(i, True) + (_stats_lines(i, modern) if stats else []))


def ip_route_text(ifaces: list[Iface], default: tuple[str, str] | None = None) -> str:
    out = []
    if default is not None:
        out.append(f"default via {default[0]} dev {default[1]} \n")
    for i in ifaces:
        if i.loopback or i.ip is None:
            continue
        out.append(f"{i.network()} dev {i.name} proto kernel scope link src {i.ip} \n")
    return "".join(out)


@dataclass(frozen=True)
class Neighbour:
    ip: str
    dev: str
    mac: str
    reachable: bool


def ip_neigh_text(entries: list[Neighbour], modern: bool) -> str:
    end = " \n" if modern else "\n"
    return "".join(f"{n.ip} dev {n.dev} lladdr {n.mac} {'REACHABLE' if n.reachable else 'STALE'}{end}"
                   for n in entries)


def arp_text(entries: list[Neighbour], bsd: bool) -> str:
    if bsd:
        return "".join(f"? ({n.ip}) at {n.mac} [ether] on {n.dev}\n" for n in entries)
    if not entries:
        return ""
    head = "Address                  HWtype  HWaddress           Flags Mask            Iface\n"
    return head + "".join(f"{n.ip:<23.23}  {'ether':<8.8}{n.mac:<20.20}{'C':<6.6}{'':<15.15} {n.dev}\n"
                          for n in entries)


def _scaled(value: int) -> str:
    """net-tools' byte count with one decimal, truncated (``12.3 KiB``)."""
    short, unit = value * 10, "B"
    for limit, name in (
        (1 << 50, "PiB"),
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ):
        if value > limit:
            short, unit = value * 10 // limit, name
            break
    return f"{short // 10}.{short % 10} {unit}"


def _natural(name: str) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def ifconfig_text(ifaces: list[Iface]) -> str:
    out = []
    for i in sorted(ifaces, key=lambda x: _natural(x.name)):
        if i.loopback:
            out.append(f"{i.name}: flags=73<UP,LOOPBACK,RUNNING>  mtu {i.mtu}")
        elif i.down:  # IFF_BROADCAST|IFF_MULTICAST = 4098, as net-tools prints a device set down
            out.append(f"{i.name}: flags=4098<BROADCAST,MULTICAST>  mtu {i.mtu}")
        else:
            out.append(f"{i.name}: flags=4163<UP,BROADCAST,RUNNING,MULTICAST>  mtu {i.mtu}")
        if i.ip is not None:
            mask = str(i.network().netmask)
            brd = "" if i.loopback else f"  broadcast {i.broadcast()}"
            out.append(f"        inet {i.ip}  netmask {mask}{brd}")
        if i.loopback:
            out.append("        loop  txqueuelen 1000  (Local Loopback)")
        else:
            out.append(f"        ether {i.mac}  txqueuelen 1000  (Ethernet)")
        out.append(f"        RX packets {i.rx_packets}  bytes {i.rx_bytes} ({_scaled(i.rx_bytes)})")
        out.append("        RX errors 0  dropped 0  overruns 0  frame 0")
        out.append(f"        TX packets {i.tx_packets}  bytes {i.tx_bytes} ({_scaled(i.tx_bytes)})")
        out.append(f"        TX errors 0  dropped {i.tx_dropped} overruns 0  carrier 0  collisions 0")
        out.append("")
    return "".join(line + "\n" for line in out)


__all__ = ["Iface", "Neighbour", "loopback", "ip_addr_text", "ip_link_text", "ip_route_text", "ip_neigh_text",
           "arp_text", "ifconfig_text"]
