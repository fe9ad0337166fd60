"""Mininet naming and addressing, and TCLink options as qdiscs.

Conventions (mininet/net.py, mininet/node.py, mininet/link.py; docs/semantics/qdiscs.md §9):
- host ``hX`` gets ``10.0.0.N`` where N is its position in the hosts list
  (Mininet's ``ipBase`` 10.0.0.0/8, assigned in ``addHost`` order);
- interface names are ``<node>-eth<k>``, numbered per node in link order,
  from 0 on hosts and routers (Mininet ``Node.portBase``) and from 1 on
  switches (``Switch.portBase``); a link table may name them (``a_intf``);
- switch ports live in the machine's root namespace (the ``admin``
  terminal); host and router interfaces only in their own node's terminal;
- ``bw``/``delay``/``jitter``/``loss``/``max_queue_size`` become the qdiscs
  ``TCIntf.config`` installs with ``use_tbf``: ``tbf rate <bw>Mbit burst 15000
  latency <15·8/bw>ms`` as root ``5:`` and ``netem`` as ``10:`` under it (or
  as root), on both interfaces of the link. htb is not modelled.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from ..commands.shell import Word
from ..commands.tc import parse_tc
from ..errors import CommandError, Diagnostics, ScenarioError
from ..units import U64_MAX, parse_duration_ns, parse_netem_time, parse_rate
from .load import LinkSpec, Scenario


@dataclass
class Interface:
    node: str
    name: str
    #: globally unique name used by the engine
    engine_name: str
    ip: str | None


@dataclass
class BuiltTopology:
    engine_config: dict
    interfaces: list[Interface]
    #: node -> its interfaces, in link order
    by_node: dict[str, list[Interface]]
    node_kinds: dict[str, str]
    #: (interface engine name, tc command line) for every TCLink option, in order
    tclink_commands: list[tuple[str, str, str]] = field(default_factory=list)
    #: devices made by ``ip link add NAME type ifb``: terminal -> name -> engine name
    virtual: dict[str, dict[str, str]] = field(default_factory=dict)

    def add_virtual(self, terminal: str, name: str) -> str:
        """Register ``name`` (an ifb) in ``terminal``'s namespace; its engine name."""
        engine_name = f"{terminal}:{name}"
        self.virtual.setdefault(terminal, {})[name] = engine_name
        return engine_name

    def host_ip(self, node: str) -> str | None:
        for i in self.by_node.get(node, []):
            if i.ip:
                return i.ip
        return None

    def resolve_dev(self, terminal: str, dev: str) -> str | None:
        """Engine name of ``dev`` as seen from ``terminal``'s namespace."""
        made = self.virtual.get(terminal, {}).get(dev)
        if made is not None:
            return made
        if terminal == "admin":
            for i in self.interfaces:
                if i.name == dev and self.node_kinds[i.node] == "switch":
                    return i.engine_name
            return None
        for i in self.by_node.get(terminal, []):
            if i.name == dev:
                return i.engine_name
        return None

    def owner_of(self, dev: str) -> str | None:
        for i in self.interfaces:
            if i.name == dev:
                return i.node
        return None

    def address_owner(self, ip: str) -> str | None:
        for i in self.interfaces:
            if i.ip == ip:
                return i.node
        return None


def _at(link: LinkSpec, key: str) -> dict[str, int | None]:
    """``line=``/``col=`` of a link's value (or of the link) for a ScenarioError."""
    line, col = link.pos(key)
    return {"line": line, "col": col}


def _ip(value: str, file: str, link: LinkSpec, what: str) -> str:
    try:
        return str(ipaddress.IPv4Interface(value).ip)
    except ValueError:
        raise ScenarioError(
            f"{what}: {value!r} is not an IPv4 address",
            file=file,
            **_at(link, what),
            expected='an address such as "192.168.24.21/24" or "10.0.0.5"',
        ) from None


#: Mininet's default ``ipBase`` 10.0.0.0/8: host k (1-based, addHost order) is ``ipAdd(k)``
IP_BASE = 0x0A000000
IP_PREFIX_LEN = 8
#: ``ipAdd`` asserts ``i <= 0xffffffff >> prefixLen``: 16 777 215 hosts in 10.0.0.0/8
MAX_HOSTS = 0xFFFFFFFF >> IP_PREFIX_LEN


def mininet_host_ip(k: int) -> str:
    """mininet/util.py ``ipAdd(k)`` with the default ipBase: 10.0.0.1 … 10.0.0.255, 10.0.1.0,
    10.0.1.1, … (Mininet numbers the whole /8 in order, .0 and .255 included)."""
    if not 1 <= k <= MAX_HOSTS:
        raise ValueError(f"host number {k} is outside 1..{MAX_HOSTS} (Mininet's ipBase 10.0.0.0/8)")
    return str(ipaddress.IPv4Address((IP_BASE & ~(0xFFFFFFFF >> IP_PREFIX_LEN)) + k))


def build_topology(sc: Scenario) -> BuiltTopology:
    file = str(sc.path)
    kinds = {
        **{h: "host" for h in sc.hosts},
        **{s: "switch" for s in sc.switches},
        **{r: "router" for r in sc.routers},
    }
    default_ip = {h: mininet_host_ip(k + 1) for k, h in enumerate(sc.hosts)}
    next_port = {n: (1 if kinds[n] == "switch" else 0) for n in kinds}
    by_node: dict[str, list[Interface]] = {n: [] for n in kinds}
    #: (node, interface name) taken so far: a switch of 20 000 ports checks each name in O(1)
    taken: set[tuple[str, str]] = set()
    links_json = []
    ifaces: list[Interface] = []
    used_ips: dict[str, str] = {}

    def endpoint(node: str, intf: str | None, ip: str | None, link: LinkSpec, side: str) -> Interface:
        name = intf or f"{node}-eth{next_port[node]}"
        next_port[node] += 1
        if (node, name) in taken:
            raise ScenarioError(
                f"{node} has two interfaces named {name!r}", file=file, **_at(link, f"{side}_intf")
            )
        kind = kinds[node]
        if kind == "switch":
            if ip is not None:
                raise ScenarioError(
                    f"{side}_ip: switch {node} forwards at layer 2 and has no address",
                    file=file,
                    **_at(link, f"{side}_ip"),
                    suggestion="make it a router (routers = [...]) if it should route by IP",
                )
        elif ip is not None:
            ip = _ip(ip, file, link, f"{side}_ip")
        elif kind == "host" and not by_node[node]:
            ip = default_ip[node]
        else:
            what = "router" if kind == "router" else "host with several links"
            raise ScenarioError(
                f"{node}'s interface {name} needs an address ({what})",
                file=file,
                **_at(link, side),
                expected=f'a link table with {side}_ip, e.g. {{ a = "{link.a}", b = "{link.b}", '
                f'{side}_ip = "192.168.1.1/24" }}',
            )
        if ip is not None:
            if ip in used_ips:
                raise ScenarioError(
                    f"address {ip} is used by both {used_ips[ip]} and {node}",
                    file=file,
                    **_at(link, f"{side}_ip"),
                )
            used_ips[ip] = node
        i = Interface(node=node, name=name, engine_name=name, ip=ip)
        by_node[node].append(i)
        taken.add((node, name))
        ifaces.append(i)
        return i

    commands: list[tuple[str, str, str]] = []
    pending: list[tuple[LinkSpec, Interface, Interface]] = []
    for link in sc.links:
        a = endpoint(link.a, link.a_intf, link.a_ip, link, "a")
        b = endpoint(link.b, link.b_intf, link.b_ip, link, "b")
        pending.append((link, a, b))
    # Names that repeat across nodes (eth0 on two hosts) get the node prefix in the engine.
    counts: dict[str, int] = {}
    for i in ifaces:
        counts[i.name] = counts.get(i.name, 0) + 1
    for i in ifaces:
        if counts[i.name] > 1:
            i.engine_name = f"{i.node}/{i.name}"
    for link, a, b in pending:
        links_json.append(
            {
                "a": {"node": a.node, "intf": a.engine_name, "ip": a.ip},
                "b": {"node": b.node, "intf": b.engine_name, "ip": b.ip},
                **_wire(link, file),
            }
        )
        lines = tclink_lines(link, file)
        _check_tclink(link, lines, file, sc)
        for intf in (a, b):
            for line in lines:
                commands.append((intf.node, intf.engine_name, line))
    config = {
        "seed": sc.seed,
        "nodes": [{"name": n, "kind": k} for n, k in kinds.items()],
        "links": links_json,
        "options": {
            "arp": sc.arp,
            "gso": sc.gso,
            "host_cost": {
                "packet_ns": sc.profile.host_packet_ns,
                "byte_ps": sc.profile.host_byte_ps,
                "wakeup_ns": sc.profile.host_wakeup_ns,
            },
            "netem_modern_accounting": sc.profile.netem_modern_accounting,
            "netem_dup_after_limit": sc.profile.netem_modern_accounting,
            **({"host_noise": sc.host_noise} if sc.host_noise else {}),
            **({"reader_wakeup": sc.reader_wakeup} if sc.reader_wakeup else {}),
            **({"app_setup": sc.app_setup} if sc.app_setup else {}),
            **({"max_tcp_header": sc.profile.max_tcp_header}
               if sc.profile.max_tcp_header is not None else {}),
        },
    }
    return BuiltTopology(config, ifaces, by_node, kinds, commands)


def _wire(link: LinkSpec, file: str) -> dict[str, int]:
    """``wire_rate``/``wire_delay``: a physical link (serialisation + propagation)."""
    out = {}
    key = "wire_rate"
    try:
        if link.wire_rate is not None:
            out["rate_bps"] = parse_rate(link.wire_rate) * 8
            if out["rate_bps"] <= 0:
                raise CommandError("wire_rate must be positive")
            if out["rate_bps"] > U64_MAX:  # the engine's link rate is u64 bits/s
                raise CommandError(f"wire_rate {link.wire_rate!r} is too large (maximum {U64_MAX} bits/s)")
        key = "wire_delay"
        if link.wire_delay is not None:
            out["delay_ns"] = parse_duration_ns(link.wire_delay)
    except CommandError as e:
        raise ScenarioError(
            f"link {link.a}-{link.b}: {key}: {e.message}",
            file=file,
            **_at(link, key),
            expected=e.expected or 'wire_rate = "10mbit", wire_delay = "5ms"',
            suggestion=e.suggestion,
        ) from None
    return out


def _check_tclink(link: LinkSpec, lines: list[str], file: str, sc: Scenario) -> None:
    """Parse the tc lines of a link's TCLink options now, so that a bad ``delay`` is
    reported at the link (by ``bufferlab check`` too), not when the run starts."""
    for key in ("delay", "jitter"):
        value = getattr(link, key)
        if value is None:
            continue
        try:
            parse_netem_time(value, sc.profile.netem_time_ns)
        except CommandError as e:
            raise ScenarioError(
                f"link {link.a}-{link.b}: {key} = {value!r}: {e.message}",
                file=file,
                **_at(link, key),
                expected=e.expected,
                suggestion=e.suggestion,
            ) from None
    for args in lines:
        words = [Word(w, 0) for w in f"tc qdisc add dev X {args}".split()]
        try:
            parse_tc(words, Diagnostics(), sc.profile)
        except CommandError as e:
            raise ScenarioError(
                f"link {link.a}-{link.b}: its options give the invalid tc line 'tc qdisc add {args}': "
                f"{e.message}",
                file=file,
                line=link.line,
                col=link.col,
                expected=e.expected,
                suggestion=e.suggestion,
            ) from None


def _fmt(x: float) -> str:
    return f"{x:f}"


def tclink_lines(link: LinkSpec, file: str) -> list[str]:
    """The tc arguments (after ``tc qdisc add dev IF``) TCIntf.config would run."""
    lines = []
    parent = "root"
    if link.bw is not None:
        if not 0 < link.bw <= 1000:
            raise ScenarioError(
                f"bw = {link.bw}: Mininet accepts 0 < bw <= 1000 (Mbit/s) and silently skips shaping "
                "otherwise",
                file=file,
                **_at(link, "bw"),
                suggestion="for faster links add a tbf with a tc line in a part",
            )
        latency_ms = 15 * 8 / link.bw
        lines.append(f"root handle 5: tbf rate {_fmt(link.bw)}Mbit burst 15000 latency {_fmt(latency_ms)}ms")
        parent = "parent 5:1"
    netem = []
    if link.delay is not None:
        netem.append(f"delay {link.delay}")
    if link.jitter is not None:
        if link.delay is None:
            raise ScenarioError(
                "jitter needs a delay (netem delay D JITTER)", file=file, **_at(link, "jitter")
            )
        netem.append(link.jitter)
    if link.loss is not None:
        if link.loss > 100:
            raise ScenarioError(
                f"loss = {link.loss}: a percentage between 0 and 100", file=file, **_at(link, "loss")
            )
        netem.append(f"loss {int(link.loss)}")  # Mininet formats loss with %d
    if link.max_queue_size is not None:
        netem.append(f"limit {link.max_queue_size}")
    if netem:
        lines.append(f"{parent} handle 10: netem " + " ".join(netem))
    return lines
