"""Load a scenario file (TOML, DESIGN.md "Scenario file") into a validated model.

TOML positions: :mod:`tomllib` reports syntax errors with a line and column but
gives no positions for values, so :class:`SourceMap` finds keys and command
strings in the raw text, in file order, to point errors at the right line and
column.
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CommandError, ScenarioError
from ..profile import PROFILES, Profile, profile_fields, with_overrides
from ..units import parse_duration_ns

TOP_KEYS = {"name", "seed", "sim", "topology", "part", "hosts"}
SIM_KEYS = {
    "profile",
    "queue_sample_interval",
    "stop_at",
    "iperf3_version",
    "ping_style",
    "netem_time_ns",
    "tc_modern_print",
    "netem_modern_accounting",
    "ping_send_lag_us",
    "iperf3_socket_base",
    "system_info",
    "epoch",
    "arp",
    "gso",
    "red_adaptive_timer",
}
TOPOLOGY_KEYS = {"hosts", "switches", "routers", "links"}
PART_KEYS = {"name", "cmds", "duration"}
LINK_KEYS = {
    "a",
    "b",
    "a_intf",
    "b_intf",
    "a_ip",
    "b_ip",
    "bw",
    "delay",
    "jitter",
    "loss",
    "max_queue_size",
    "wire_rate",
    "wire_delay",
}
#: [sim] keys reserved for models that arrive with later issues
NOT_YET = {
    "gso": "GSO super-packets are not supported yet (packets are MTU-sized)",
    "red_adaptive_timer": "RED is not supported yet (it arrives with the AQM issue)",
}


@dataclass
class Command:
    """One entry of a part's ``cmds``: ``"<terminal>: <shell line>"``."""

    terminal: str
    text: str
    #: position of the shell line's first character in the scenario file
    line: int
    col: int
    index: int
    file: str

    def where(self, col_in_text: int | None = None) -> str:
        col = self.col + (col_in_text or 0)
        return f"{self.file}:{self.line}:{col}"


@dataclass
class Part:
    name: str
    commands: list[Command]
    #: minimum duration (seconds) before endless commands are interrupted
    duration: float | None
    line: int


@dataclass
class LinkSpec:
    a: str
    b: str
    a_intf: str | None = None
    b_intf: str | None = None
    a_ip: str | None = None
    b_ip: str | None = None
    bw: float | None = None
    delay: str | None = None
    jitter: str | None = None
    loss: float | None = None
    max_queue_size: int | None = None
    #: a physical wire instead of a veth: serialisation rate (tc rate syntax) and propagation delay
    wire_rate: str | None = None
    wire_delay: str | None = None
    line: int = 0


@dataclass
class Scenario:
    path: Path
    name: str
    slug: str
    seed: int
    profile: Profile
    arp: bool
    hosts: list[str]
    switches: list[str]
    routers: list[str]
    links: list[LinkSpec]
    parts: list[Part]
    warnings: list[str] = field(default_factory=list)


class SourceMap:
    """Finds keys and string values in the raw TOML text, scanning forward."""

    def __init__(self, text: str, file: str) -> None:
        self.lines = text.splitlines()
        self.file = file
        self.cursor = (0, 0)  # (line index, column) where the next search starts

    def key_line(self, key: str, start_line: int = 0) -> int | None:
        pat = re.compile(rf"^\s*(\"{re.escape(key)}\"|{re.escape(key)})\s*=")
        for i in range(start_line, len(self.lines)):
            if pat.search(self.lines[i]):
                return i + 1
        return None

    def header_line(self, header: str, occurrence: int) -> int | None:
        seen = -1
        for i, ln in enumerate(self.lines):
            if ln.strip().startswith(header):
                seen += 1
                if seen == occurrence:
                    return i + 1
        return None

    def find_string(self, value: str) -> tuple[int, int] | None:
        """Line and column (1-based) of the next occurrence of ``value`` as written."""
        candidates = [value, json.dumps(value)[1:-1]]
        li, col = self.cursor
        while li < len(self.lines):
            text = self.lines[li]
            best = None
            for c in candidates:
                j = text.find(c, col)
                if j >= 0 and (best is None or j < best):
                    best = j
            if best is not None:
                self.cursor = (li, best + len(value))
                return li + 1, best + 1
            li, col = li + 1, 0
        return None


def parse_duration_s(text: str) -> float:
    """A duration such as "100ms", "90s" or "1.5" (seconds), in seconds; ValueError if malformed."""
    try:
        return parse_duration_ns(text) / 1e9
    except CommandError as e:
        raise ValueError(e.message) from None


def _suggest(word: str, choices: set[str] | list[str]) -> str | None:
    match = difflib.get_close_matches(word, list(choices), n=1)
    return f"did you mean {match[0]!r}?" if match else None


def _slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
    return s or "scenario"


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScenarioError(f"cannot read the scenario: {e.strerror}", file=file) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
        raise ScenarioError(
            f"invalid TOML: {msg}",
            file=file,
            line=int(m.group(1)) if m else None,
            col=int(m.group(2)) if m else None,
            expected="TOML syntax (strings in quotes, arrays in [ ], one key = value per line)",
        ) from None
    src = SourceMap(text, file)
    return _build(data, src, path)


def _err(
    src: SourceMap, message: str, key: str | None = None, line: int | None = None, **kw: Any
) -> ScenarioError:
    if line is None and key is not None:
        line = src.key_line(key)
    return ScenarioError(message, file=src.file, line=line, **kw)


def _check_keys(src: SourceMap, table: dict, allowed: set[str], where: str, line: int | None = None) -> None:
    for k in table:
        if k not in allowed:
            raise _err(
                src,
                f"unknown key {k!r} in {where}",
                key=k,
                line=src.key_line(k, (line or 1) - 1) if line else None,
                expected=", ".join(sorted(allowed)),
                suggestion=_suggest(k, allowed),
            )


def _str_list(src: SourceMap, table: dict, key: str, where: str) -> list[str]:
    v = table.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _err(src, f"{where}.{key} must be a list of names", key=key, expected='e.g. ["h1", "h2"]')
    return v


def _build(data: dict, src: SourceMap, path: Path) -> Scenario:
    _check_keys(src, data, TOP_KEYS, "the scenario")
    name = data.get("name", path.stem)
    if not isinstance(name, str):
        raise _err(src, "name must be a string", key="name")
    seed = data.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise _err(src, "seed must be a non-negative integer", key="seed", expected="e.g. seed = 1")
    if "hosts" in data:
        raise _err(
            src,
            "per-host settings ([hosts.X]) are not supported yet (TCP defaults arrive with the TCP issue)",
            line=src.header_line("[hosts.", 0),
        )
    profile, arp = _build_sim(data.get("sim", {}), src)
    topo = data.get("topology")
    if not isinstance(topo, dict):
        raise _err(
            src,
            "the scenario needs a [topology] table",
            line=None,
            expected="[topology] with hosts = [...], switches = [...], links = [[...], ...]",
        )
    topo_line = src.header_line("[topology]", 0)
    _check_keys(src, topo, TOPOLOGY_KEYS, "[topology]", line=topo_line)
    hosts = _str_list(src, topo, "hosts", "topology")
    switches = _str_list(src, topo, "switches", "topology")
    routers = _str_list(src, topo, "routers", "topology")
    if not hosts:
        raise _err(src, "the topology has no hosts", key="hosts", expected='hosts = ["h1", "h2"]')
    names = hosts + switches + routers
    for n in names:
        if names.count(n) > 1:
            raise _err(src, f"node {n!r} is declared twice", key="hosts")
        if n == "admin":
            raise _err(src, "'admin' is the machine's own terminal and cannot be a node name", key="hosts")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", n):
            raise _err(src, f"node name {n!r} must be a letter followed by letters, digits or _", key="hosts")
    links = _build_links(topo.get("links", []), src, set(names))
    parts = _build_parts(data.get("part", []), src, set(names))
    return Scenario(
        path=path,
        name=name,
        slug=_slug(path.stem),
        seed=seed,
        profile=profile,
        arp=arp,
        hosts=hosts,
        switches=switches,
        routers=routers,
        links=links,
        parts=parts,
    )


def _build_sim(sim: Any, src: SourceMap) -> tuple[Profile, bool]:
    if not isinstance(sim, dict):
        raise _err(src, "[sim] must be a table", key="sim")
    line = src.header_line("[sim]", 0)
    _check_keys(src, sim, SIM_KEYS, "[sim]", line=line)
    for k, why in NOT_YET.items():
        if k in sim:
            raise _err(src, f"[sim] {k}: {why}", line=src.key_line(k, (line or 1) - 1))
    pname = sim.get("profile", "lab2019")
    if pname not in PROFILES:
        raise _err(
            src,
            f"unknown profile {pname!r}",
            key="profile",
            expected=" or ".join(PROFILES),
            suggestion=_suggest(str(pname), set(PROFILES)),
        )
    overrides: dict[str, Any] = {}
    known = set(profile_fields())
    for k, v in sim.items():
        if k in ("profile", "arp"):
            continue
        kline = src.key_line(k, (line or 1) - 1)
        try:
            overrides[k] = _convert_sim_value(k, v)
        except ValueError as e:
            raise _err(src, f"[sim] {k}: {e}", line=kline) from None
        assert k in known
    arp = sim.get("arp", True)
    if not isinstance(arp, bool):
        raise _err(src, "[sim] arp must be true or false", key="arp")
    return with_overrides(PROFILES[pname], overrides), arp


def _convert_sim_value(key: str, v: Any) -> Any:
    if key in ("queue_sample_interval", "stop_at"):
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ValueError('expected a duration such as "100ms" or "300s"')
        s = parse_duration_s(str(v))
        if s <= 0:
            raise ValueError("must be positive")
        return s
    if key == "iperf3_version":
        m = re.fullmatch(r"3\.(\d+)(?:\.\d+)?", str(v))
        if not m:
            raise ValueError('expected an iperf3 version such as "3.7" or "3.12"')
        return (3, int(m.group(1)))
    if key == "ping_style":
        if v not in ("s20180629", "modern"):
            raise ValueError('expected "s20180629" or "modern"')
        return v
    if key in ("netem_time_ns", "tc_modern_print", "netem_modern_accounting"):
        if not isinstance(v, bool):
            raise ValueError("expected true or false")
        return v
    if key in ("ping_send_lag_us", "iperf3_socket_base", "epoch"):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError("expected a non-negative integer")
        return v
    if key == "system_info":
        if not isinstance(v, str):
            raise ValueError("expected a string")
        return v
    raise ValueError("unknown key")


def _build_links(raw: Any, src: SourceMap, names: set[str]) -> list[LinkSpec]:
    if not isinstance(raw, list):
        raise _err(
            src,
            "topology.links must be a list",
            key="links",
            expected='links = [["h1", "s1"], {a = "s1", b = "h2", bw = 10}]',
        )
    first = src.key_line("links") or 0
    out: list[LinkSpec] = []
    for i, item in enumerate(raw):
        line = first
        if isinstance(item, list):
            if len(item) != 2 or not all(isinstance(x, str) for x in item):
                raise _err(
                    src, f"link {i + 1} must name exactly two nodes", line=line, expected='["h1", "s1"]'
                )
            spec = LinkSpec(a=item[0], b=item[1], line=line)
        elif isinstance(item, dict):
            for k in item:
                if k not in LINK_KEYS:
                    raise _err(
                        src,
                        f"unknown key {k!r} in link {i + 1}",
                        line=line,
                        expected=", ".join(sorted(LINK_KEYS)),
                        suggestion=_suggest(k, LINK_KEYS),
                    )
            if "a" not in item or "b" not in item:
                raise _err(src, f"link {i + 1} needs both ends: a = ..., b = ...", line=line)
            try:
                spec = LinkSpec(line=line, **item)
            except TypeError as e:  # pragma: no cover - keys checked above
                raise _err(src, f"link {i + 1}: {e}", line=line) from None
            _check_link_types(spec, i, src)
        else:
            raise _err(src, f"link {i + 1} must be a pair of names or a table", line=line)
        for end in (spec.a, spec.b):
            if end not in names:
                raise _err(
                    src,
                    f"link {i + 1} names unknown node {end!r}",
                    line=line,
                    expected="a node listed in hosts, switches or routers",
                    suggestion=_suggest(end, names),
                )
        if spec.a == spec.b:
            raise _err(src, f"link {i + 1} connects {spec.a!r} to itself", line=line)
        out.append(spec)
    return out


def _check_link_types(spec: LinkSpec, i: int, src: SourceMap) -> None:
    def bad(key: str, what: str) -> ScenarioError:
        return _err(src, f"link {i + 1}: {key} must be {what}", line=spec.line)

    for key in ("a", "b", "a_intf", "b_intf", "a_ip", "b_ip", "delay", "jitter", "wire_rate", "wire_delay"):
        v = getattr(spec, key)
        if v is not None and not isinstance(v, str):
            raise bad(key, 'a string (e.g. delay = "5ms")')
    for key in ("bw", "loss"):
        v = getattr(spec, key)
        if v is not None and (not isinstance(v, int | float) or isinstance(v, bool) or v < 0):
            raise bad(key, "a non-negative number")
    if spec.max_queue_size is not None and (
        not isinstance(spec.max_queue_size, int)
        or isinstance(spec.max_queue_size, bool)
        or spec.max_queue_size <= 0
    ):
        raise bad("max_queue_size", "a positive integer (packets)")


def _build_parts(raw: Any, src: SourceMap, names: set[str]) -> list[Part]:
    if not isinstance(raw, list) or not raw:
        raise _err(
            src,
            "the scenario has no [[part]] sections",
            line=None,
            expected='[[part]]\nname = "..."\ncmds = ["h1: ping 10.0.0.2 -c 4"]',
        )
    parts: list[Part] = []
    seen: set[str] = set()
    index = 0
    for p_i, part in enumerate(raw):
        line = src.header_line("[[part]]", p_i) or 0
        _check_keys(src, part, PART_KEYS, f"part {p_i + 1}", line=line)
        pname = part.get("name", f"part{p_i + 1}")
        if not isinstance(pname, str) or not pname:
            raise _err(src, f"part {p_i + 1}: name must be a non-empty string", line=line)
        slug = _slug(pname)
        if slug in seen:
            raise _err(src, f"two parts are named {pname!r}; output folders would collide", line=line)
        seen.add(slug)
        duration = part.get("duration")
        if duration is not None:
            try:
                duration = parse_duration_s(str(duration))
            except ValueError as e:
                raise _err(src, f"part {pname!r}: duration: {e}", line=line) from None
        cmds = part.get("cmds", [])
        if not isinstance(cmds, list) or not all(isinstance(c, str) for c in cmds):
            raise _err(
                src,
                f"part {pname!r}: cmds must be a list of strings",
                line=line,
                expected='cmds = ["h1: ping 10.0.0.2 -c 4"]',
            )
        src.cursor = (line, 0)
        commands = []
        for c in cmds:
            pos = src.find_string(c)
            cl, cc = pos if pos else (line, 1)
            m = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*:\s?", c)
            if not m:
                raise ScenarioError(
                    "a command must start with the terminal it is typed in",
                    file=src.file,
                    line=cl,
                    col=cc,
                    expected='"<node>: <command>" or "admin: <command>"',
                    suggestion='e.g. "h1: ping 10.0.0.3 -c 4"',
                )
            term = m.group(1)
            if term != "admin" and term not in names:
                raise ScenarioError(
                    f"unknown terminal {term!r}",
                    file=src.file,
                    line=cl,
                    col=cc,
                    expected="a node name or admin",
                    suggestion=_suggest(term, names | {"admin"}),
                )
            commands.append(Command(term, c[m.end() :], cl, cc + m.end(), index, src.file))
            index += 1
        parts.append(Part(slug, commands, duration, line))
    return parts
