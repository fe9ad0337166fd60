"""``ip``, ``ifconfig``, ``arp`` and ``hostname`` on a simulated node (parsers:
commands/netinfo.py; text: formats/netinfo.py).

A node's namespace holds ``lo`` and its interfaces; the ``admin`` terminal (the
machine's root namespace) holds ``lo`` and the switches' ports. Interface indexes
are global, in link order (the first link's ends are 2 and 3, ``lo`` is 1 in every
namespace), so a veth's ``@ifN`` names its peer; the peer's namespace id is 0 for
the root namespace and, seen from there, the host's place in the hosts list. MAC
addresses are the engine's (``02:00:00:00:HI:LO``, HI:LO = the interface's place in
link order + 1, as in pcap captures). Counters are the engine's per-interface
packets and bytes (an aggregate counts once, as a veth counts an skb). Prefix
lengths are those of the topology (``a_ip = "192.168.1.1/24"``; Mininet's /8 by
default). The qdisc is the interface's root qdisc (``noqueue`` until ``tc`` adds
one). ``ip route`` lists the connected subnets: the engine forwards along shortest
paths without routing tables (docs/internals.md), so no default or static route is
listed even where packets reach other subnets.

The neighbour table (``arp``, ``ip neigh``) is not the engine's ARP cache, which
it does not expose: it lists the on-link addresses the node has sent packets to or
received a request from, by the applications started so far (a ping, an iperf3
client and its server, ...), ``REACHABLE`` while one of them runs or ended less
than 30 s ago (Linux's base_reachable_time), ``STALE`` after.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ...commands import netinfo as netinfo_cmd
from ...commands.shell import Word
from ...errors import CommandError
from ...formats import netinfo as fmt
from ..context import NS, PrepareCtx, Prepared, Program, RunCtx
from ..engine import TcFailure

#: Linux's net.ipv4.neigh.default.base_reachable_time_ms
REACHABLE_NS = 30 * NS


def _mac(k: int) -> str:
    n = k + 1
    return f"02:00:00:00:{n >> 8 & 0xFF:02x}:{n & 0xFF:02x}"


def _prefixes(rt: RunCtx) -> dict[int, int]:
    """Interface place (link order) → prefix length of its address."""
    out: dict[int, int] = {}
    for k, link in enumerate(rt.runner.sc.links):
        for side, ip in ((0, link.a_ip), (1, link.b_ip)):
            out[2 * k + side] = int(ip.split("/", 1)[1]) if ip and "/" in ip else 8
    return out


def interfaces(rt: RunCtx, terminal: str) -> list[fmt.Iface]:
    """The interfaces ``terminal``'s namespace holds, ``lo`` first, with their state now."""
    runner: Any = rt.runner
    topo = runner.topo
    kinds = topo.node_kinds
    hosts = [n for n, k in kinds.items() if k != "switch"]
    all_ifaces = topo.interfaces
    place = {id(i): k for k, i in enumerate(all_ifaces)}
    peer_of: dict[int, int] = {}
    for k in range(0, len(all_ifaces) - 1, 2):
        peer_of[k], peer_of[k + 1] = k + 1, k
    prefixes = _prefixes(rt)
    stats = rt.engine.summary()["interfaces"]

    def ns_of(node: str) -> str:
        return "admin" if kinds[node] == "switch" else node

    out = [fmt.loopback()]
    for i in all_ifaces:
        if ns_of(i.node) != terminal:
            continue
        k = place[id(i)]
        peer = all_ifaces[peer_of[k]]
        same_ns = ns_of(peer.node) == terminal
        if same_ns:
            nsid = None
        elif terminal == "admin":
            nsid = hosts.index(peer.node) if peer.node in hosts else 0
        else:
            nsid = (
                0
                if ns_of(peer.node) == "admin"
                else 1
                + sorted(
                    {ns_of(all_ifaces[peer_of[place[id(j)]]].node) for j in topo.by_node[terminal]}
                    - {"admin"}
                ).index(ns_of(peer.node))
            )
        blocks = rt.engine.qdisc_show(i.engine_name)
        st = stats.get(i.engine_name, {})
        out.append(
            fmt.Iface(
                index=k + 2,
                name=i.name,
                mac=_mac(k),
                ip=i.ip,
                prefix=prefixes.get(k, 8),
                qdisc=blocks[0]["kind"] if blocks else "noqueue",
                peer_index=peer_of[k] + 2,
                peer_name=peer.name if same_ns else None,
                netnsid=nsid,
                down=i.engine_name in rt.engine.links_down,
                rx_packets=int(st.get("rx_packets", 0)),
                rx_bytes=int(st.get("rx_bytes", 0)),
                tx_packets=int(st.get("tx_packets", 0)),
                tx_bytes=int(st.get("tx_bytes", 0)),
            )
        )
    for k, (term, name, engine_name) in enumerate(rt.engine.ifbs):
        if term != terminal:
            continue
        blocks = rt.engine.qdisc_show(engine_name)
        st = stats.get(engine_name, {})
        at = len(all_ifaces) + k
        out.append(
            fmt.Iface(
                index=at + 2,
                name=name,
                mac=_mac(at),
                ip=None,
                prefix=0,
                qdisc=blocks[0]["kind"] if blocks else "noqueue",
                ifb=True,
                down=engine_name not in rt.engine.ifb_up,
                rx_packets=int(st.get("rx_packets", 0)),
                rx_bytes=int(st.get("rx_bytes", 0)),
                tx_packets=int(st.get("tx_packets", 0)),
                tx_bytes=int(st.get("tx_bytes", 0)),
            )
        )
    return out


def neighbours(rt: RunCtx, terminal: str) -> list[fmt.Neighbour]:
    """The node's neighbour table, as the module doc describes it."""
    runner: Any = rt.runner
    topo = runner.topo
    mine = [i for i in interfaces(rt, terminal) if not i.loopback and i.ip]
    macs = {i.ip: _mac(k) for k, i in enumerate(topo.interfaces) if i.ip}
    node_ip = {n: topo.host_ip(n) for n in topo.node_kinds}
    seen: dict[str, tuple[str, int]] = {}  # address -> (dev, last activity ns)
    now = rt.now_ns
    for a in runner.apps:
        if a is None or "dst" not in a.spec:
            continue
        dst = str(a.spec["dst"])
        ends = rt.engine.app_finished(a.app_id)
        last = now if not ends else int(rt.engine.app_result(a.app_id).get("end_ns", now) or now)
        if a.terminal == terminal:
            other = dst
        elif topo.address_owner(dst) == terminal and node_ip.get(a.terminal):
            other = node_ip[a.terminal]
        else:
            continue
        dev = next((i.name for i in mine if ipaddress.IPv4Address(other) in i.network()), None)
        if dev is None or other not in macs or other in (i.ip for i in mine):
            continue
        if other not in seen or seen[other][1] < last:
            seen[other] = (dev, last)
    return [
        fmt.Neighbour(ip, dev, macs[ip], now - last < REACHABLE_NS)
        for ip, (dev, last) in sorted(seen.items(), key=lambda kv: ipaddress.IPv4Address(kv[0]))
    ]


def _no_device(rt: RunCtx, name: str, ifaces: list[fmt.Iface]) -> bool:
    if any(i.name == name for i in ifaces):
        return False
    rt.io.err(f'Device "{name}" does not exist.')
    return True


def set_link(rt: RunCtx, dev: str | None, up: bool) -> None:
    """``ip link set DEV up|down`` on an interface of the terminal's namespace."""
    kinds = rt.runner.topo.node_kinds
    for i in rt.runner.topo.interfaces:
        if i.name == dev and ("admin" if kinds[i.node] == "switch" else i.node) == rt.term.name:
            rt.engine.set_link_up(i.engine_name, up)


def _prep_ip(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = netinfo_cmd.parse_ip(words)
    if cmd.command == "add":
        return _prep_link_add(pc, cmd)
    virtual = pc.topo.virtual.get(pc.terminal, {})

    def run(rt: RunCtx) -> int:
        if cmd.command == "set" and cmd.dev in virtual:  # an ifb
            (rt.engine.ifb_up.add if cmd.state == "up" else rt.engine.ifb_up.discard)(virtual[cmd.dev])
            rt.engine.set_link_up(virtual[cmd.dev], cmd.state == "up")
            return 0
        ifaces = interfaces(rt, rt.term.name)
        if cmd.dev is not None and cmd.obj in ("addr", "link") and _no_device(rt, cmd.dev, ifaces):
            return 1
        chosen = [i for i in ifaces if cmd.dev is None or i.name == cmd.dev]
        if cmd.command == "set":
            set_link(rt, cmd.dev, cmd.state == "up")
            return 0
        if cmd.obj == "addr":
            rt.io.out(fmt.ip_addr_text(chosen, cmd.brief, cmd.inet_only))
        elif cmd.obj == "link":
            rt.io.out(fmt.ip_link_text(chosen, cmd.brief, cmd.stats, rt.runner.sc.profile.name == "modern"))
        elif cmd.obj == "route":
            rt.io.out(fmt.ip_route_text(ifaces))
        else:
            entries = [n for n in neighbours(rt, rt.term.name) if cmd.dev is None or n.dev == cmd.dev]
            rt.io.out(fmt.ip_neigh_text(entries, rt.runner.sc.profile.name == "modern"))
        return 0

    return Prepared.at_once(run)


def _prep_link_add(pc: PrepareCtx, cmd: Any) -> Prepared:
    """``ip link add NAME type ifb``: the device is known to the lines after this one
    (tc dev NAME) from the check on; the engine makes it when the line runs."""
    name = cmd.dev
    if pc.topo.resolve_dev(pc.terminal, name) is not None and name not in pc.topo.virtual.get(
        pc.terminal, {}
    ):
        raise CommandError(
            "RTNETLINK answers: File exists",
            col=cmd.dev_col,
            expected="a name no interface of this namespace has",
        )
    node = pc.terminal
    if pc.terminal == "admin":
        switches = [n for n, k in pc.topo.node_kinds.items() if k == "switch"]
        if not switches:
            raise CommandError(
                "ip link add in the admin terminal needs a switch (the root namespace holds "
                "the switches' ports)",
                col=cmd.dev_col,
            )
        node = switches[0]
    engine_name = pc.topo.add_virtual(pc.terminal, name)

    def run(rt: RunCtx) -> int:
        try:
            rt.engine.add_ifb(node, engine_name, pc.terminal, name)
        except TcFailure as e:
            rt.io.err("RTNETLINK answers: File exists" if "File exists" in str(e) else str(e))
            return 2
        return 0

    return Prepared.at_once(run)


def _prep_ifconfig(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = netinfo_cmd.parse_ifconfig(words)

    def run(rt: RunCtx) -> int:
        ifaces = interfaces(rt, rt.term.name)
        if cmd.dev is not None:
            ifaces = [i for i in ifaces if i.name == cmd.dev]
            if not ifaces:
                rt.io.err(f"{cmd.dev}: error fetching interface information: Device not found")
                return 1
            if cmd.state is not None:
                set_link(rt, cmd.dev, cmd.state == "up")
                return 0
        if not cmd.all:  # without -a, net-tools lists only the interfaces that are up
            ifaces = [i for i in ifaces if not i.down]
        rt.io.out(fmt.ifconfig_text(ifaces))
        return 0

    return Prepared.at_once(run)


def _prep_arp(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = netinfo_cmd.parse_arp(words)

    def run(rt: RunCtx) -> int:
        entries = neighbours(rt, rt.term.name)
        if cmd.dev is not None:
            entries = [n for n in entries if n.dev == cmd.dev]
        if cmd.host is not None:
            entries = [n for n in entries if n.ip == cmd.host]
            if not entries:
                rt.io.out(f"{cmd.host} ({cmd.host}) -- no entry\n")
                return 1
        elif cmd.dev is not None and not entries:
            rt.io.out(f"arp: in {len(neighbours(rt, rt.term.name))} entries no match found.\n")
            return 0
        rt.io.out(fmt.arp_text(entries, cmd.bsd))
        return 0

    return Prepared.at_once(run)


def _prep_hostname(pc: PrepareCtx, words: list[Word]) -> Prepared:
    netinfo_cmd.parse_hostname(words)

    def run(rt: RunCtx) -> int:
        # Mininet's hosts share the machine's UTS namespace: every node prints the machine's
        # name (the one iperf3's system_info gives it)
        info = rt.runner.sc.profile.system_info.split()
        rt.io.out((info[1] if len(info) > 1 else "bufferlab") + "\n")
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program(
        "ip",
        _prep_ip,
        "`ip addr|link|route|neigh [show]`, `ip link set DEV up|down`, `ip link add NAME type ifb`",
    ),
    Program("ifconfig", _prep_ifconfig, "`ifconfig [-a] [DEV [up|down]]` (net-tools)"),
    Program("arp", _prep_arp, "`arp [-an] [-i DEV] [HOST]`: the neighbour table (net-tools)"),
    Program("hostname", _prep_hostname, "the machine's name (Mininet's hosts share it)"),
)
