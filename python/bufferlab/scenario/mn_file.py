"""MiniEdit ``.mn`` files: the topology a student drew, as a scenario topology.

The format is what mininet/examples/miniedit.py ``saveTopology`` writes (checked
against its ``loadTopology`` and ``buildNodes``): a JSON object with
``version``, ``hosts`` and ``switches`` (``{"number", "x", "y", "opts"}``),
``controllers``, ``links`` (``{"src", "dest", "opts"}``) and ``application``
(preferences, ``ipBase`` among them). What the network model uses:

- hosts in file order (the order MiniEdit adds them); a host's address is its
  ``opts.ip`` or, when empty, ``ipBase`` + ``nodeNum`` (``ipAdd`` in buildNodes),
  with ``ipBase``'s prefix length, on its first link's interface;
- switches: ``legacySwitch`` and the OpenFlow types are learning switches (an
  OpenFlow switch with MiniEdit's default controller behaves as one);
  ``legacyRouter`` is not supported yet (Mininet gives it one address; the
  other subnets are set up by hand): convert the file and add the addresses;
- links in file order (interface numbering, as Mininet's), with ``opts``
  ``bw``/``delay``/``loss``/``max_queue_size``/``jitter`` as TCLink options;
- a host's ``defaultRoute``: routes are computed (shortest paths), so a
  default route is checked (a gateway on the host's own subnet, as Linux
  requires) and the computed routes leave through that subnet's router.

Keys that only matter to a real machine (canvas positions, controllers, CPU
scheduling, sFlow/NetFlow, terminal type) are accepted; the ones that would
change behaviour bufferlab does not model (``startCommand``, VLAN or external
interfaces, ``speedup``, ...) warn when set, and unknown keys warn.
"""

from __future__ import annotations

import codecs
import ipaddress
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CommandError, ScenarioError
from ..units import parse_netem_time

#: keys MiniEdit writes that bufferlab reads or that have no effect on a simulated network
TOP_KEYS = {"version", "hosts", "switches", "controllers", "links", "application"}
NODE_KEYS = {"number", "x", "y", "opts"}
HOST_OPTS = {"hostname", "nodeNum", "sched", "ip", "defaultRoute", "cpu", "cores"}
SWITCH_OPTS = {"hostname", "nodeNum", "switchType", "dpid", "controllers", "netflow", "sflow",
               "switchIP", "dpctl"}
LINK_KEYS = {"src", "dest", "opts"}
LINK_OPTS = {"bw", "delay", "loss", "max_queue_size", "jitter"}
APP_KEYS = {"ipBase", "startCLI", "terminalType", "switchType", "dpctl", "sflow", "netflow",
            "openFlowVersions"}
#: set to a non-empty value, these change what a real run does and are not modelled
UNMODELLED = {
    "startCommand": "commands run when the host starts",
    "stopCommand": "commands run when the host stops",
    "vlanInterfaces": "VLAN interfaces",
    "externalInterfaces": "interfaces attached to the real machine",
    "privateDirectory": "private directories",
    "speedup": "the switch-side bandwidth override",
}
SWITCH_TYPES = {"default", "ovs", "user", "userns", "ivs", "legacySwitch", "legacyRouter"}
DEFAULT_IP_BASE = "10.0.0.0/8"


@dataclass
class MnLink:
    src: str
    dest: str
    bw: float | None = None
    delay: str | None = None
    loss: float | None = None
    max_queue_size: int | None = None
    jitter: str | None = None
    line: int = 1
    col: int = 1


@dataclass
class MnTopology:
    """A MiniEdit drawing in the scenario's terms."""

    path: Path
    hosts: list[str]
    switches: list[str]
    links: list[MnLink]
    #: host -> "address/prefix" of its first interface
    host_ips: dict[str, str]
    #: host -> gateway address written in the file (validated against the links)
    default_routes: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


class _Text:
    """Positions in the file's text, for errors about decoded values."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.text = path, text

    def pos(self, offset: int) -> tuple[int, int]:
        line = self.text.count("\n", 0, offset) + 1
        return line, offset - (self.text.rfind("\n", 0, offset) + 1) + 1

    def find(self, key: str, value: Any = None, start: int = 0) -> int:
        """Offset of ``"key": value`` (or of ``"key"``) at or after ``start``; -1 if absent."""
        pattern = rf'"{re.escape(key)}"\s*:'
        if value is not None:
            pattern += r"\s*" + re.escape(json.dumps(value))
        m = re.compile(pattern).search(self.text, start)
        return m.start() if m else -1

    def error(self, message: str, offset: int = 0, **kw: Any) -> ScenarioError:
        line, col = self.pos(max(offset, 0))
        return ScenarioError(message, file=str(self.path), line=line, col=col, **kw)


#: a MiniEdit drawing of a thousand nodes is well under 1 MiB
MAX_MN_BYTES = 16 * 1024 * 1024


def _read_text(path: Path) -> str:
    """The file's text: at most MAX_MN_BYTES read (``/dev/zero`` ends), UTF-8, else an error."""
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_MN_BYTES + 1)
    except OSError as e:
        raise ScenarioError(f"cannot read the MiniEdit file: {e.strerror or e}", file=str(path),
                            expected="a .mn file saved by MiniEdit (File > Save)") from None
    if len(raw) > MAX_MN_BYTES:
        raise ScenarioError(f"not a MiniEdit file: more than {MAX_MN_BYTES} bytes (16 MiB)", file=str(path),
                            expected="a .mn file saved by MiniEdit (File > Save)")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ScenarioError("not a MiniEdit file: UTF-16 text", file=str(path),
                            expected="the UTF-8 JSON MiniEdit writes (File > Save)",
                            suggestion="save it again as UTF-8 (an editor's encoding setting)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        col = e.start - (raw.rfind(b"\n", 0, e.start) + 1) + 1
        raise ScenarioError(f"not a MiniEdit file: byte 0x{raw[e.start]:02x} is not UTF-8 text",
                            file=str(path), line=line, col=col,
                            expected="the UTF-8 JSON MiniEdit writes (File > Save)") from None


def load_mn(path: str | Path) -> MnTopology:
    """Read a MiniEdit ``.mn`` file; errors name the file, line and column."""
    path = Path(path)
    text = _read_text(path)
    src = _Text(path, text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise ScenarioError(f"not a MiniEdit file: invalid JSON ({e.msg})", file=str(path),
                            line=e.lineno, col=e.colno,
                            expected="the JSON MiniEdit writes (File > Save)") from None
    except (ValueError, RecursionError) as e:  # a number of more than 4300 digits; thousands of [[[[
        why = "JSON nested too deep" if isinstance(e, RecursionError) else "a number with too many digits"
        raise ScenarioError(f"not a MiniEdit file: {why}", file=str(path),
                            expected="the JSON MiniEdit writes (File > Save)") from None
    if not isinstance(doc, dict):
        raise src.error("not a MiniEdit file: the top level must be a JSON object",
                        expected='{"version": "2", "hosts": [...], "switches": [...], "links": [...]}')
    topo = MnTopology(path=path, hosts=[], switches=[], links=[], host_ips={})
    _unknown(src, doc, TOP_KEYS, "the file", 0, topo.warnings)
    version = str(doc.get("version", "2"))
    if version not in ("1", "2"):
        raise src.error(f"MiniEdit file version {version!r} is not supported", src.find("version"),
                        expected='"1" or "2" (what MiniEdit 2.x writes)')
    app = _table(src, doc, "application", 0)
    _unknown(src, app, APP_KEYS, "application", src.find("application"), topo.warnings)
    base = _ip_base(src, app.get("ipBase", DEFAULT_IP_BASE))
    hosts = _nodes(src, doc, "hosts", HOST_OPTS, topo.warnings)
    switches = _nodes(src, doc, "switches", SWITCH_OPTS, topo.warnings)
    names: dict[str, int] = {}
    for opts, at in hosts + switches:
        name = opts["hostname"]
        if name in names:
            raise src.error(f"node {name!r} appears twice", at, expected="one node per hostname")
        names[name] = at
    addresses: dict[str, tuple[str, int]] = {}
    for opts, at in hosts:
        topo.hosts.append(opts["hostname"])
        addresses[opts["hostname"]] = (_host_ip(src, opts, base, at), at)
    for opts, at in switches:
        kind = str(opts.get("switchType", "default"))
        if kind not in SWITCH_TYPES:
            raise src.error(f"switch {opts['hostname']!r}: unknown switchType {kind!r}",
                            src.find("switchType", kind, at), expected=", ".join(sorted(SWITCH_TYPES)))
        if kind == "legacyRouter":
            # Mininet gives a LegacyRouter one ipBase address; its other subnets are set up by hand
            raise src.error(f"switch {opts['hostname']!r}: legacyRouter is not supported yet in .mn files",
                            src.find("switchType", kind, at),
                            expected="convert the file (bufferlab convert FILE.mn) and give the router's "
                            "interfaces addresses in the scenario's links (a_ip/b_ip)")
        topo.switches.append(opts["hostname"])
    topo.links = _links(src, doc, set(names), topo.warnings)
    for host in topo.hosts:
        ip, at = addresses[host]
        if not any(host in (lk.src, lk.dest) for lk in topo.links):
            topo.warnings.append(f"{path}: host {host!r} has no link; it is left out of the network")
            continue
        topo.host_ips[host] = ip
    for opts, at in hosts:
        gw = str(opts.get("defaultRoute") or "")
        if gw:
            _check_gateway(src, topo, opts["hostname"], gw, src.find("defaultRoute", gw, at))
            topo.default_routes[opts["hostname"]] = gw
    topo.hosts = [h for h in topo.hosts if h in topo.host_ips]
    if not topo.hosts:  # a scenario needs one; convert would write a scenario check refuses
        raise src.error("no host of the drawing is linked to the network", max(src.find("hosts"), 0),
                        expected="a host with a link (Mininet runs only what is linked)")
    return topo


def _unknown(src: _Text, table: dict, known: set[str], where: str, at: int, warnings: list[str]) -> None:
    for k, v in table.items():
        if k in UNMODELLED:
            if v not in (None, "", [], {}, 0, "0"):
                line, col = src.pos(src.find(k, None, max(at, 0)))
                warnings.append(f"{src.path}:{line}:{col}: {where}: {k} ({UNMODELLED[k]}) is not "
                                "modelled by bufferlab and is ignored")
        elif k not in known:
            line, col = src.pos(src.find(k, None, max(at, 0)))
            warnings.append(f"{src.path}:{line}:{col}: {where}: unknown key {k!r} ignored")


def _table(src: _Text, doc: dict, key: str, at: int) -> dict:
    v = doc.get(key, {})
    if not isinstance(v, dict):
        raise src.error(f"{key!r} must be a JSON object", src.find(key, None, at))
    return v


def _ip_base(src: _Text, raw: Any) -> ipaddress.IPv4Network:
    try:
        return ipaddress.IPv4Network(str(raw), strict=False)
    except ValueError:
        raise src.error(f"application ipBase {raw!r} is not an IPv4 network", src.find("ipBase"),
                        expected='"10.0.0.0/8"') from None


def _nodes(src: _Text, doc: dict, key: str, known_opts: set[str],
           warnings: list[str]) -> list[tuple[dict, int]]:
    """The ``hosts`` or ``switches`` list: each node's opts and where its text starts."""
    raw = doc.get(key, [])
    if not isinstance(raw, list):
        raise src.error(f"{key!r} must be a JSON list", src.find(key))
    out: list[tuple[dict, int]] = []
    cursor = max(src.find(key), 0)
    kind = key[:-1] if key != "switches" else "switch"
    for i, node in enumerate(raw):
        if not isinstance(node, dict) or not isinstance(node.get("opts"), dict):
            raise src.error(f"{kind} {i + 1} must be an object with an 'opts' object", cursor,
                            expected='{"number": "1", "x": "100.0", "y": "100.0", "opts": {...}}')
        opts = node["opts"]
        name = opts.get("hostname")
        # the node's keys lie after the previous node's hostname (MiniEdit sorts them)
        start = cursor
        at = src.find("hostname", name, cursor) if isinstance(name, str) else cursor
        cursor = max(at, cursor)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
            raise src.error(f"{kind} {i + 1}: hostname {name!r} must be a letter followed by letters, "
                            "digits or _", at, expected='"hostname": "h1"')
        if name == "admin":
            raise src.error("'admin' is the machine's own terminal and cannot be a node name", at)
        if "nodeNum" not in opts:
            try:
                opts["nodeNum"] = int(node.get("number", i + 1))
            except (TypeError, ValueError, OverflowError):
                raise src.error(f"{kind} {name!r}: number {node.get('number')!r} is not an integer",
                                at) from None
        _unknown(src, {k: v for k, v in node.items() if k != "opts"}, NODE_KEYS, f"{kind} {name!r}",
                 start, warnings)
        _unknown(src, opts, known_opts, f"{kind} {name!r}", start, warnings)
        out.append((opts, start))
    return out


def _host_ip(src: _Text, opts: dict, base: ipaddress.IPv4Network, at: int) -> str:
    """``opts.ip`` (with ipBase's prefix when it has none) or ipBase + nodeNum."""
    raw = str(opts.get("ip") or "")
    if raw:
        text = raw if "/" in raw else f"{raw}/{base.prefixlen}"
        try:
            iface = ipaddress.IPv4Interface(text)
        except ValueError:
            raise src.error(f"host {opts['hostname']!r}: ip {raw!r} is not an IPv4 address",
                            src.find("ip", raw, at), expected='"10.0.0.1" or "10.0.0.1/8"') from None
        return str(iface)
    try:
        n = int(opts["nodeNum"])
    except (TypeError, ValueError, OverflowError):  # int(1e999): infinity
        raise src.error(f"host {opts['hostname']!r}: nodeNum {opts['nodeNum']!r} is not an integer",
                        at) from None
    if not 0 < n < base.num_addresses - 1:
        raise src.error(f"host {opts['hostname']!r}: nodeNum {n} does not fit ipBase {base}", at)
    return f"{base.network_address + n}/{base.prefixlen}"


def _number(src: _Text, opts: dict, key: str, at: int, integer: bool = False) -> float | int | None:
    v = opts.get(key)
    if v in (None, ""):
        return None
    try:  # never true -> 1 or 1.5 -> 1 without a word: MiniEdit writes numbers (or their text)
        num = None if isinstance(v, bool) or len(str(v)) > 40 else float(v)
    except (TypeError, ValueError):
        num = None
    if num is not None and integer:
        num = int(num) if num.is_integer() else None
    if num is None or not math.isfinite(num) or num < 0 or (integer and num == 0):
        what = "a positive integer" if integer else "a non-negative number"
        raise src.error(f"link option {key} = {json.dumps(v)} must be {what}", src.find(key, None, at))
    return num


def _links(src: _Text, doc: dict, names: set[str], warnings: list[str]) -> list[MnLink]:
    raw = doc.get("links", [])
    if not isinstance(raw, list):
        raise src.error("'links' must be a JSON list", src.find("links"))
    out: list[MnLink] = []
    cursor = max(src.find("links"), 0)
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise src.error(f"link {i + 1} must be an object", cursor,
                            expected='{"src": "h1", "dest": "s1", "opts": {}}')
        # the link's keys lie after the previous link's "src" (MiniEdit sorts them: dest, opts, src)
        previous = cursor
        at = src.find("src", item.get("src"), cursor) if isinstance(item.get("src"), str) else cursor
        cursor = max(at, cursor)
        ends = (item.get("src"), item.get("dest"))
        for key, end in zip(("src", "dest"), ends, strict=True):
            if not isinstance(end, str) or end not in names:
                where = src.find(key, end, previous) if isinstance(end, str) else -1
                raise src.error(f"link {i + 1}: {key} {end!r} is not a host or switch of the file",
                                where if where >= 0 else at, expected="one of " + ", ".join(sorted(names)))
        if ends[0] == ends[1]:
            raise src.error(f"link {i + 1} connects {ends[0]!r} to itself", at)
        opts = item.get("opts", {})
        if not isinstance(opts, dict):
            raise src.error(f"link {i + 1}: opts must be an object", at)
        _unknown(src, {k: v for k, v in item.items() if k != "opts"}, LINK_KEYS, f"link {i + 1}", at,
                 warnings)
        _unknown(src, opts, LINK_OPTS, f"link {i + 1}", previous, warnings)
        line, col = src.pos(at)
        link = MnLink(src=ends[0], dest=ends[1], line=line, col=col,
                      bw=_number(src, opts, "bw", previous), loss=_number(src, opts, "loss", previous),
                      max_queue_size=_number(src, opts, "max_queue_size", previous, integer=True))  # type: ignore[arg-type]
        if link.loss is not None and link.loss > 100:
            raise src.error(f"link {i + 1}: loss {link.loss:g} is a percentage (0 to 100)",
                            src.find("loss", None, previous))
        if link.bw is not None and not 0 < link.bw <= 1000:  # as the scenario's links (topology.py)
            raise src.error(f"link {i + 1}: bw {link.bw:g}: Mininet accepts 0 < bw <= 1000 (Mbit/s) and "
                            "silently skips shaping otherwise", src.find("bw", None, previous),
                            expected="a rate in Mbit/s, at most 1000")
        for key in ("delay", "jitter"):
            v = opts.get(key)
            if v not in (None, ""):
                try:  # as the scenario reads it (the lab's tc: s, ms, us; below 274.8 s)
                    parse_netem_time(str(v), ns_mode=False)
                except (CommandError, ValueError) as e:
                    why = f" ({e.message})" if isinstance(e, CommandError) else ""
                    raise src.error(f"link {i + 1}: {key} {v!r} is not a time{why}",
                                    src.find(key, None, previous), expected='a time such as "10ms"') from None
                setattr(link, key, str(v))
        if link.jitter is not None and link.delay is None:
            raise src.error(f"link {i + 1}: jitter needs a delay (netem delay D JITTER)",
                            src.find("jitter", None, previous), expected='"delay": "10ms" beside it')
        out.append(link)
    return out


def _check_gateway(src: _Text, topo: MnTopology, host: str, gw: str, at: int) -> None:
    """A default route must name an address on the host's own subnet (as Linux requires);
    the computed routes then leave through that subnet's router, as the route would."""
    try:
        gw_ip = ipaddress.IPv4Address(gw)
    except ValueError:
        raise src.error(f"host {host!r}: defaultRoute {gw!r} is not an IPv4 address", at,
                        expected='"10.0.0.254"') from None
    own = topo.host_ips.get(host)
    if own is None or gw_ip in ipaddress.IPv4Interface(own).network:
        return
    raise src.error(f"host {host!r}: defaultRoute via {gw} is outside the host's subnet {own}", at,
                    expected="a gateway on the host's subnet (Linux refuses others: invalid gateway)")


def to_scenario_toml(topo: MnTopology) -> str:
    """The scenario TOML equivalent to a MiniEdit file (``bufferlab convert``): its nodes, its
    links with their TCLink options and the hosts' addresses, and one part to start from."""
    addressed: set[str] = set()
    links = []
    for lk in topo.links:
        fields = [f"a = {json.dumps(lk.src)}", f"b = {json.dumps(lk.dest)}"]
        for side, node in (("a", lk.src), ("b", lk.dest)):
            if node in topo.host_ips and node not in addressed:
                fields.append(f"{side}_ip = {json.dumps(topo.host_ips[node])}")
                addressed.add(node)
        for key in ("bw", "delay", "jitter", "loss", "max_queue_size"):
            v = getattr(lk, key)
            if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
                v = int(v)  # 10, not 10.0 (nor, as format(v, "g") wrote, 7.87076e+06 for 7870757)
            if v is not None:
                fields.append(f"{key} = {json.dumps(v)}")
        links.append("  { " + ", ".join(fields) + " },")
    lines = [
        f"# Converted from {topo.path.name} (a MiniEdit file) by bufferlab convert.",
        *(f"# warning: {w}" for w in topo.warnings),
        f"name = {json.dumps(topo.path.stem)}",
        "seed = 1",
        "",
        "[topology]",
        f"hosts = {json.dumps(topo.hosts)}",
        f"switches = {json.dumps(topo.switches)}",
        "links = [",
        *links,
        "]",
        "",
    ]
    if len(topo.hosts) >= 2:
        first, last = topo.hosts[0], topo.hosts[-1]
        dst = topo.host_ips[last].split("/")[0]
        lines += [
            "# the lab's own lines go here; this part checks that the network forwards",
            "[[part]]",
            'name = "ping"',
            f"cmds = [{json.dumps(f'{first}: ping -c 3 {dst}')}]",
            "",
        ]
    return "\n".join(lines)
