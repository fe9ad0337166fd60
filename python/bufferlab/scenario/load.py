"""Load a scenario file (TOML, docs/internals.md "Scenario file") into a validated model.

TOML positions: :mod:`tomllib` reports syntax errors with a line and column but
gives no positions for values, so :class:`SourceMap` finds keys and command
strings in the raw text, in file order, to point errors at the right line and
column.
"""

from __future__ import annotations

import difflib
import functools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..commands.sysctl import SUPPORTED_CC
from ..errors import CommandError, ScenarioError
from ..profile import PROFILES, Profile, profile_fields, with_overrides
from ..units import parse_duration_ns
from .host_noise import build_host_noise
from .mn_file import load_mn
from .observe import CaptureOptions, TraceOptions, build_capture, build_trace
from .params import Override, Value, resolve_params, substitute_text
from .source import SourceMap, check_keys, error_at, key_error, suggest

TOP_KEYS = {"name", "seed", "sim", "topology", "part", "hosts", "capture", "trace", "params", "expect"}
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
    "host_packet_ns",
    "host_byte_ps",
    "host_wakeup_ns",
    "max_tcp_header",
    "iperf3_send_loop_us",
    "part_gap",
    "host_noise",
    "reader_wakeup",
    "app_setup",
}
DURATION_KEYS = ("queue_sample_interval", "stop_at")
TOPOLOGY_KEYS = {"hosts", "switches", "routers", "links", "mn"}
PART_KEYS = {"name", "cmds", "duration", "stop", "interrupt", "allow_fail"}
#: idle time before each part after the first (docs/internals.md "How lines run"): a student takes
#: minutes between handout sections, so queues have drained and timers have fired; 5 s
#: empties a 10·BDP (25 MB) queue at 100 Mbit/s twice over and leaves TCP idle past its RTO
DEFAULT_PART_GAP_S = 5.0
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
    #: file column (1-based) of each character of ``text`` (differs from ``col + k``
    #: after a TOML escape such as ``\\"``); empty if unknown
    cols: tuple[int, ...] = ()

    def where(self, col_in_text: int | None = None) -> str:
        """``FILE:LINE:COL`` of the command's character ``col_in_text`` (default: its first)."""
        k = col_in_text or 0
        if k < len(self.cols):
            col = self.cols[k]
        elif self.cols:
            col = self.cols[-1] + 1 + k - len(self.cols)
        else:
            col = self.col + k
        return f"{self.file}:{self.line}:{col}"


@dataclass
class Part:
    """One ``[[part]]``: a handout section, its command lines in file order."""

    name: str
    commands: list[Command]
    #: minimum duration (seconds) before endless commands are interrupted
    duration: float | None
    line: int
    #: ns-3's ``Simulator::Stop``: seconds after the part's start at which every
    #: application still running is interrupted (as by Ctrl-C); None = no such stop
    stop: float | None = None
    #: terminals whose commands are interrupted (Ctrl-C) when the part ends; ["all"] = every terminal
    interrupt: list[str] = field(default_factory=list)
    #: indexes (Command.index) of lines whose failure is expected (``allow_fail``)
    allow_fail: set[int] = field(default_factory=set)


@dataclass
class LinkSpec:
    """One ``[topology] links`` entry: its two ends and optional TCLink/wire settings."""

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
    col: int | None = None
    #: (line, column) of each value written in the file, by key ("a", "b", "delay", ...)
    positions: dict[str, tuple[int, int]] = field(default_factory=dict)

    def pos(self, key: str) -> tuple[int, int | None]:
        """(line, column) of ``key``'s value in the file, else of the link itself."""
        return self.positions.get(key, (self.line, self.col))


@dataclass
class Scenario:
    """A validated scenario, as :func:`load_scenario` returns it and :func:`run_scenario` runs it.

    Attributes:
        path: the scenario file.
        name: its ``name``; ``slug`` is the folder name derived from it (``results/<slug>/``).
        seed: the seed of every random process.
        profile: tool and kernel versions (``[sim] profile`` plus overrides).
        hosts, switches, routers, links: the topology, Mininet's conventions.
        parts: the ``[[part]]`` tables, in file order, their command lines located in the file.
        warnings: what the loader noticed but accepted (printed by ``bufferlab check``/``run``).
    """

    path: Path
    name: str
    slug: str
    seed: int
    profile: Profile
    arp: bool
    #: TSO/GSO on every interface at start (``[sim] gso``; ``ethtool -K`` per interface)
    gso: bool
    hosts: list[str]
    switches: list[str]
    routers: list[str]
    links: list[LinkSpec]
    parts: list[Part]
    warnings: list[str] = field(default_factory=list)
    #: per-host TCP defaults ([hosts.X] tcp = {...}), validated, in engine terms
    host_tcp: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per-host receive-path timing noise ([sim] host_noise, [hosts.X] noise), in engine terms
    host_noise: dict[str, dict[str, int]] = field(default_factory=dict)
    #: per-host reading processes' wake-up latency ([sim] reader_wakeup, [hosts.X] reader_wakeup)
    reader_wakeup: dict[str, dict[str, int]] = field(default_factory=dict)
    #: per-host server programs' set-up work ([sim] app_setup, [hosts.X] app_setup)
    app_setup: dict[str, dict[str, int]] = field(default_factory=dict)
    #: [capture] and [trace] (scenario/observe.py)
    capture: CaptureOptions | None = None
    trace: TraceOptions | None = None
    #: ``[sim] part_gap``: seconds the network runs idle before each part after the first
    part_gap: float = DEFAULT_PART_GAP_S
    #: ``[params]`` after overrides (scenario/params.py), and the TOML text with them substituted
    params: dict[str, Value] = field(default_factory=dict)
    text: str = ""
    #: the file column of each character of the lines ${...} changed (SourceMap's colmap)
    colmap: dict[int, list[int]] = field(default_factory=dict)
    #: the TOML text as written (before ${...} substitution), from the file or ``source``
    source: str | None = None


def parse_duration_s(text: str) -> float:
    """A duration such as "100ms", "90s" or "1.5" (seconds), in seconds; ValueError if malformed."""
    try:
        return parse_duration_ns(text) / 1e9
    except CommandError as e:
        raise ValueError(e.message) from None


#: what a run writes beside its part folders: a part's folder may not take their place
#: (expectations.json and results.json: outputs/grading.py)
RUN_FILES = {"summary.json", "run.json", "report.html", "tables", "expectations.json", "results.json"}
#: a part's folder name: the file systems' 255 bytes, less room for a temporary suffix
MAX_PART_NAME_BYTES = 200


def _slug(name: str) -> str:
    # no leading/trailing dots either: a part named ".." must not write outside its folder
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return s or "scenario"


#: tomllib message start -> what usually causes it
_TOML_HINTS = [
    (
        "Unclosed array",
        'separate items with "," and close with "]"; a " inside a string is written \\" '
        "(or write the command in single quotes: 'h1: echo \"x\"')",
    ),
    ("Unclosed inline table", 'separate items with "," and close with "}" on the same line'),
    ("Invalid value", 'text values need quotes: name = "lab", delay = "5ms"'),
    ("Unescaped '\\'", "write \\\\ for a backslash, or use a single-quoted string"),
    ("Cannot overwrite a value", "a key is set twice in the same table"),
    ("Cannot declare", "a table is declared twice; repeated sections are [[part]] (double brackets)"),
    ("Expected ']]'", "a part section is written [[part]]"),
    ("Expected ']'", "a table header is written [name]"),
]


#: Limits checked before the TOML parser sees the text (tomllib recurses once per nesting
#: level and re-walks every prefix of a dotted key, so a deep file is a RecursionError or
#: minutes of CPU). Real scenarios nest 3 deep (links = [{...}]) and use 2-part keys.
MAX_SCENARIO_BYTES = 16 * 1024 * 1024
MAX_NESTING = 64
MAX_KEY_PARTS = 64
#: one command line: Linux's MAX_ARG_STRLEN (32 pages = 128 KiB), the longest single
#: argument the kernel passes to a program, so a longer line cannot be one typed command
MAX_COMMAND_CHARS = 131072
#: seeds are u64 in the engine (rng.rs)
MAX_SEED = 2**64 - 1
#: Mininet's ipBase 10.0.0.0/8 numbers at most 2^24 - 1 hosts (util.py ipAdd)
MAX_HOSTS = 2**24 - 1
#: the engine's TCP socket settings ([hosts.X] tcp) are u32 (app/tcp.rs TcpSpec)
U32_MAX = 2**32 - 1


def seed_arg(text: str) -> int:
    """``--seed N`` (argparse type): an integer from 0 to 2^64 - 1, as the engine's seed."""
    import argparse

    try:
        v: int | None = int(text, 10)
    except ValueError:
        v = None
    if v is None or not 0 <= v <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"invalid seed {text!r}: expected an integer from 0 to {MAX_SEED}")
    return v


def _line_col(text: str, at: int) -> tuple[int, int]:
    """1-based line and column of offset ``at`` of ``text`` (str or bytes)."""
    nl = "\n" if isinstance(text, str) else b"\n"
    return text.count(nl, 0, at) + 1, at - (text.rfind(nl, 0, at) + 1) + 1  # type: ignore[arg-type]


def read_toml(path: Path, what: str = "scenario") -> tuple[str, dict[str, Any]]:
    """The text and the table of a TOML file (a scenario or a sweep file) read with the
    scenario's guards: at most 16 MiB, UTF-8, nesting and dotted keys bounded (so tomllib
    can neither recurse too deep nor take minutes); every failure a ScenarioError with
    its position."""
    file = str(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        near = near_path(path) if isinstance(e, FileNotFoundError) else None
        raise ScenarioError(f"cannot read the {what}: {e.strerror}", file=file, suggestion=near) from None
    if path.suffix.lower() in NOT_TOML:
        kind, hint = NOT_TOML[path.suffix.lower()]
        raise ScenarioError(f"this is {kind}, not a {what} (TOML)", file=file, suggestion=hint.format(file))
    text = _decode(raw, file, what)
    _check_structure(text, file)
    return text, _parse_toml(text, file)


#: files people give `bufferlab run` that are not scenarios: (what it is, the hint)
NOT_TOML = {
    ".py": ("a Python script", "run a Mininet script with: bufferlab mininet {0}"),
    ".mn": ("a MiniEdit drawing", "bufferlab convert {0} writes a scenario from it; or name it in a "
            "scenario's [topology] mn = \"...\""),
}


def near_path(path: Path) -> str | None:
    """"did you mean ...?" for a path that does not exist: component by component, the closest
    name (difflib) in the deepest folder that does, if that makes a file."""
    fixed = Path(path.anchor) if path.is_absolute() else Path()
    parts = path.parts[1:] if path.is_absolute() else path.parts
    changed = False
    for i, name in enumerate(parts):
        if (fixed / name).exists() or name in (".", ".."):
            fixed = fixed / name
            continue
        try:
            names = [p.name for _, p in zip(range(5000), fixed.iterdir(), strict=False)
                     if i == len(parts) - 1 or p.is_dir()]
        except OSError:
            return None
        match = difflib.get_close_matches(name, names, n=1)
        if not match:
            return None
        fixed, changed = fixed / match[0], True
    return f"did you mean {str(fixed)!r}?" if changed and fixed.is_file() else None


def _decode(raw: bytes, file: str, what: str = "scenario") -> str:
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ScenarioError(
            f"the {what} is more than {MAX_SCENARIO_BYTES} bytes long (16 MiB)",
            file=file,
            expected=f"a {what} of at most 16 MiB",
            suggestion="is this the right file? A scenario with thousands of hosts is well under 1 MiB",
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line, col = _line_col(raw, e.start)  # type: ignore[arg-type]
        raise ScenarioError(
            f"the {what} is not UTF-8 text: byte 0x{raw[e.start]:02x} at byte offset {e.start} "
            f"({e.reason})",
            file=file,
            line=line,
            col=col,
            expected="a UTF-8 text file (TOML files are UTF-8)",
            suggestion="save the file as UTF-8 in the editor, or remove the character",
        ) from None


_SCAN = re.compile(r"""\"\"\"|'''|["'#\[\]{},=\n.]""")
# possessive runs (Python ≥ 3.11): linear time and one repetition per run, so neither an
# unterminated string nor a 15 MB one costs exponential time or memory
_BASIC_REST = re.compile(r'(?:[^\\"\n]++|\\.)*+"')
_ML_BASIC_REST = re.compile(r'(?:[^\\"]++|\\[\s\S]|"(?!""))*+"""')


def _check_structure(text: str, file: str) -> None:
    """Reject nesting deeper than MAX_NESTING and dotted keys of more than MAX_KEY_PARTS
    parts, with the position, in one linear pass (strings and comments are skipped)."""
    depth = dots = i = 0
    n = len(text)

    def err(what: str, at: int, expected: str) -> ScenarioError:
        line, col = _line_col(text, at)
        return ScenarioError(what, file=file, line=line, col=col, expected=expected,
                             suggestion='a scenario needs only tables, arrays of tables and short arrays '
                             '(links = [["h1", "s1"]])')

    while i < n:
        m = _SCAN.search(text, i)
        if m is None:
            return
        tok, i = m.group(0), m.end()
        if tok in ('"', '"""'):
            sm = (_BASIC_REST if tok == '"' else _ML_BASIC_REST).match(text, i)
            if sm is None:
                return  # unterminated: tomllib reports it with its position
            i = sm.end()
        elif tok in ("'", "'''"):
            j = text.find(tok, i)
            if j < 0:
                return
            i = j + len(tok)
        elif tok == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif tok in "[{":
            depth += 1
            dots = 0
            if depth > MAX_NESTING:
                raise err(f"arrays and inline tables nested more than {MAX_NESTING} deep", m.start(),
                          f"at most {MAX_NESTING} levels of [ ] and {{ }}")
        elif tok in "]}":
            depth = max(depth - 1, 0)
            dots = 0
        elif tok == ".":
            dots += 1
            if dots >= MAX_KEY_PARTS:
                raise err(f"a dotted key of more than {MAX_KEY_PARTS} parts", m.start(),
                          f"keys of at most {MAX_KEY_PARTS} parts (a.b.c)")
        else:  # , = newline
            dots = 0


@dataclass(frozen=True)
class ScenarioFile:
    """A scenario file read and parsed once, to be built with several ``[params]`` values
    (a sweep's points: :func:`load_scenario` with ``read``)."""

    path: Path
    text: str
    data: dict[str, Any]


def read_scenario(path: str | Path) -> ScenarioFile:
    """Read a scenario file and parse its TOML (errors with their position)."""
    path = Path(path)
    text, data = read_toml(path)
    return ScenarioFile(path, text, data)


def load_scenario(path: str | Path, overrides: list[Override] | None = None,
                  read: ScenarioFile | None = None, *, source: str | None = None) -> Scenario:
    """Read and validate a scenario file (TOML) without running it.

    Every key, topology name and command line is checked here, as ``bufferlab check`` does.

    Args:
        path: the ``.toml`` file.
        overrides: values replacing defaults of its ``[params]`` table (``--set name=value``).
        read: the file as :func:`read_scenario` read it already (it is not read again).
        source: the scenario's text, read instead of the file (an editor's unsaved buffer, a
            notebook cell); ``path`` still names it in messages, and relative paths in it
            (``mn = "..."``, ``empirical:FILE``) are relative to ``path``'s folder. Its results
            folder is named after the file, or after its ``name`` if no such file exists.

    Returns:
        The validated :class:`Scenario`.

    Raises:
        ScenarioError: the file is unreadable, not TOML, or has an unknown key or a bad value;
            its message names the file, line and column, what was expected and a suggestion.
        CommandError: a command line is malformed (located in the file the same way);
            NotSupportedError for a real option bufferlab does not model yet.
    """
    path = Path(path)
    file = str(path)
    if source is not None:  # the editor's buffer (bufferlab serve) or a notebook cell: the file's guards
        text = _decode(source.encode("utf-8", "surrogatepass"), file)  # its size and encoding
        _check_structure(text, file)
        data = _parse_toml(text, file)
    else:
        text, data = (read.text, read.data) if read is not None else read_toml(path)
    raw_text = text
    params = resolve_params(data, text, file, overrides or [])
    colmap: dict[int, list[int]] = {}
    if "${" in text:
        text, colmap = substitute_text(text, file, params)
        data = _parse_toml(text, file)
    src = SourceMap(text, file, colmap)
    sc = _build(data, src, path)
    sc.params, sc.text, sc.colmap, sc.source = params, text, colmap, raw_text
    if source is not None and not path.is_file():  # a text of no file (a notebook cell): named by its name
        sc.slug = _slug(sc.name)
    return sc


def _parse_toml(text: str, file: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except ValueError as e:
        if isinstance(e, tomllib.TOMLDecodeError):
            raise _toml_error(e, text, file) from None
        # not TOML's own error: int() refused a number of more than 4300 digits
        m = re.search(r"[0-9_]{4300,}", text)
        line, col = _line_col(text, m.start()) if m else (None, None)
        raise ScenarioError(f"a number of {len(m.group(0)) if m else 'thousands of'} digits", file=file,
                            line=line, col=col, expected="a number of at most 4300 digits",
                            suggestion="is this the right file?") from None


def _toml_error(e: tomllib.TOMLDecodeError, text: str, file: str) -> ScenarioError:
    m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
    msg = re.sub(r"\s*\((at line \d+, column \d+|at end of document)\)", "", str(e))
    if m:
        line, col = int(m.group(1)), int(m.group(2))
    else:  # "at end of document": the last line, after its last character
        lines = text.rstrip().splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    return ScenarioError(
        f"invalid TOML: {msg}",
        file=file,
        line=line,
        col=col,
        expected="TOML syntax (strings in quotes, arrays in [ ], one key = value per line)",
        suggestion=next((h for start, h in _TOML_HINTS if msg.startswith(start)), None)
        or "check the quotes, brackets and commas just before this position",
    )


def _str_list(src: SourceMap, table: dict, key: str, where: str) -> list[str]:
    v = table.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise error_at(src, f"{where}.{key} must be a list of names", key=key, expected='e.g. ["h1", "h2"]')
    return v


def _build(data: dict, src: SourceMap, path: Path) -> Scenario:
    check_keys(src, data, TOP_KEYS, "the scenario")
    name = data.get("name", path.stem)
    if not isinstance(name, str):
        raise error_at(src, "name must be a string", key="name")
    seed = data.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= MAX_SEED:
        raise error_at(src, f"seed must be an integer from 0 to {MAX_SEED}",
                            key="seed", expected="e.g. seed = 1")
    profile, arp, gso = _build_sim(data.get("sim", {}), src)
    topo = data.get("topology")
    if not isinstance(topo, dict):
        raise error_at(
            src,
            "the scenario needs a [topology] table",
            line=None,
            expected="[topology] with hosts = [...], switches = [...], links = [[...], ...]",
        )
    topo_line = src.header_line("[topology]", 0)
    check_keys(src, topo, TOPOLOGY_KEYS, "[topology]", line=topo_line)
    mn_warnings: list[str] = []
    if "mn" in topo:
        topo, mn_warnings = _topology_from_mn(src, topo, path)
    hosts = _str_list(src, topo, "hosts", "topology")
    switches = _str_list(src, topo, "switches", "topology")
    routers = _str_list(src, topo, "routers", "topology")
    if not hosts:
        raise error_at(src, "the topology has no hosts", key="hosts", expected='hosts = ["h1", "h2"]')
    if len(hosts) > MAX_HOSTS:
        raise error_at(src, f"{len(hosts)} hosts do not fit Mininet's ipBase 10.0.0.0/8", key="hosts",
                   expected=f"at most {MAX_HOSTS} hosts (10.0.0.1 to 10.255.255.255)")
    names = hosts + switches + routers
    declared: set[str] = set()
    for n in names:
        if n in declared:
            raise error_at(src, f"node {n!r} is declared twice", key="hosts")
        declared.add(n)
        if n == "admin":
            raise error_at(src, "'admin' is the machine's own terminal and cannot be a node name",
                                key="hosts")
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", n):
            raise error_at(src, f"node name {n!r} must be a letter followed by letters, digits or _",
                                key="hosts")
    links = topo["mn_links"] if "mn_links" in topo else _build_links(topo.get("links", []), src, set(names))
    parts = _build_parts(data.get("part", []), src, set(names))
    return Scenario(
        path=path,
        name=name,
        slug=_slug(path.stem),
        seed=seed,
        profile=profile,
        arp=arp,
        gso=gso,
        hosts=hosts,
        switches=switches,
        routers=routers,
        links=links,
        parts=parts,
        host_tcp=_build_host_tcp(data.get("hosts", {}), src, set(hosts + routers)),
        host_noise=build_host_noise(data.get("sim", {}), data.get("hosts", {}), src, hosts),
        reader_wakeup=build_host_noise(data.get("sim", {}), data.get("hosts", {}), src, hosts,
                                       "reader_wakeup", "reader_wakeup"),
        app_setup=build_host_noise(data.get("sim", {}), data.get("hosts", {}), src, hosts,
                                   "app_setup", "app_setup"),
        capture=build_capture(data.get("capture"), src),
        trace=build_trace(data.get("trace"), src),
        part_gap=_part_gap(data.get("sim", {}), src),
        warnings=mn_warnings,
    )


def _topology_from_mn(src: SourceMap, topo: dict[str, Any], path: Path) -> tuple[dict[str, Any], list[str]]:
    """``[topology] mn = "Lab 14.mn"``: the MiniEdit file's nodes and links (scenario/mn_file.py),
    its path relative to the scenario."""
    mn = topo["mn"]
    if not isinstance(mn, str) or not mn:
        raise error_at(src, "[topology] mn must name a MiniEdit file", key="mn", expected='mn = "Lab 14.mn"')
    others = sorted(k for k in ("hosts", "switches", "routers", "links") if k in topo)
    if others:
        raise error_at(src, f"[topology] mn replaces hosts, switches, routers and links; remove {others[0]}",
                       key=others[0], expected='either mn = "file.mn" or hosts/switches/links')
    mn_topo = load_mn(path.parent / mn)
    # errors found later (TCLink checks) point at the scenario's mn line
    line, col = src.key_pos("mn") or (src.header_line("[topology]", 0), None)
    links = [
        LinkSpec(a=lk.src, b=lk.dest, bw=lk.bw, delay=lk.delay, loss=lk.loss,
                 max_queue_size=lk.max_queue_size, jitter=lk.jitter, line=line, col=col)
        for lk in mn_topo.links
    ]
    # a host's address (file or ipBase + nodeNum) on its first link, as Mininet configures it
    addressed: set[str] = set()
    for link in links:
        for side, node in (("a", link.a), ("b", link.b)):
            if node in mn_topo.host_ips and node not in addressed:
                setattr(link, f"{side}_ip", mn_topo.host_ips[node])
                addressed.add(node)
    return {"hosts": mn_topo.hosts, "switches": mn_topo.switches, "mn_links": links}, mn_topo.warnings


def _part_gap(sim: dict[str, Any], src: SourceMap) -> float:
    """``[sim] part_gap`` in seconds; "0s" runs the parts back to back."""
    v = sim.get("part_gap")
    if v is None:
        return DEFAULT_PART_GAP_S
    try:
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ValueError(f"{v!r} is not a duration")
        s = parse_duration_s(str(v))
        if s < 0:
            raise ValueError("must not be negative")
        return s
    except ValueError as e:
        raise key_error(src, f"[sim] part_gap: {e}", "part_gap", src.header_line("[sim]", 0),
                       expected='a duration such as "5s", or "0s" for back-to-back parts') from None


HOST_KEYS = {"tcp", "noise", "reader_wakeup", "app_setup"}
TCP_KEYS = {"flavour", "mss", "min_rto", "rcvbuf", "sndbuf", "init_cwnd", "congestion"}
#: ns-3's TcpSocket defaults (src/internet/model/tcp-socket.cc) in the engine's terms:
#: SegmentSize 536, MinRto 1 s, InitialCwnd 1, Snd/RcvBufSize 131072, TcpNewReno, no
#: receive-buffer autotuning, the whole free buffer advertised as the window.
NS3_DEFAULTS = {"mss": 536, "min_rto": 1.0, "init_cwnd": 1, "rcvbuf": 131072, "sndbuf": 131072,
                "congestion": "reno"}


def _build_host_tcp(raw: Any, src: SourceMap, names: set[str]) -> dict[str, dict[str, Any]]:
    """``[hosts.X] tcp = { flavour = "ns3", mss = 536, min_rto = "1s", rcvbuf = 4000 }``.

    ``mss`` is the payload of a full segment, ``rcvbuf``/``sndbuf`` the socket
    buffers in bytes (not a setsockopt request), ``min_rto`` a duration,
    ``init_cwnd`` in segments. ``flavour = "ns3"`` starts from ns-3's defaults.
    """
    if not isinstance(raw, dict):
        raise error_at(src, "[hosts] must hold one table per host", key="hosts",
                   expected='[hosts.h1]\ntcp = { flavour = "ns3" }')
    out: dict[str, dict[str, Any]] = {}
    for host, table in raw.items():
        line = src.header_line(f"[hosts.{host}]", 0)
        if host not in names:
            raise error_at(src, f"[hosts.{host}]: no host or router named {host!r}", line=line,
                       suggestion=suggest(host, names))
        if not isinstance(table, dict):
            raise error_at(src, f"[hosts.{host}] must be a table", line=line)
        check_keys(src, table, HOST_KEYS, f"[hosts.{host}]", line=line)
        if "tcp" not in table:
            continue
        tcp = table["tcp"]
        if not isinstance(tcp, dict):
            raise error_at(src, f"[hosts.{host}] tcp must be a table", line=line,
                       expected='tcp = { flavour = "ns3", mss = 536 }')
        for k in tcp:
            if k not in TCP_KEYS:
                raise error_at(src, f"unknown key {k!r} in [hosts.{host}] tcp", line=line,
                           expected=", ".join(sorted(TCP_KEYS)), suggestion=suggest(k, TCP_KEYS))
        flavour = tcp.get("flavour", "linux")
        if flavour not in ("linux", "ns3"):
            raise error_at(src, f"[hosts.{host}] tcp flavour {flavour!r}",
                                line=line, expected='"linux" or "ns3"')
        merged: dict[str, Any] = dict(NS3_DEFAULTS) if flavour == "ns3" else {}
        merged["flavour"] = flavour
        for k, v in tcp.items():
            if k == "flavour":
                continue
            if k == "min_rto":
                try:
                    if not isinstance(v, str | int | float) or isinstance(v, bool):
                        raise ValueError(f"{v!r} is not a duration")
                    v = parse_duration_s(str(v))
                except ValueError as e:
                    raise error_at(src, f"[hosts.{host}] tcp min_rto: {e}", line=line,
                               expected='a duration such as "200ms" or "1s"') from None
            elif k == "congestion":
                if v not in SUPPORTED_CC:
                    raise error_at(src, f"[hosts.{host}] tcp congestion {v!r}", line=line,
                               expected=f"{', '.join(SUPPORTED_CC[:-1])} or {SUPPORTED_CC[-1]}")
            elif not isinstance(v, int) or isinstance(v, bool) or not 0 < v <= U32_MAX:
                raise error_at(src, f"[hosts.{host}] tcp {k} must be an integer from 1 to {U32_MAX}",
                                    line=line,
                           expected=f"{k} = N, 1 <= N <= {U32_MAX} (the engine keeps it in 32 bits)")
            merged[k] = v
        out[host] = merged
    return out


def _build_sim(sim: Any, src: SourceMap) -> tuple[Profile, bool, bool]:
    if not isinstance(sim, dict):
        raise error_at(src, "[sim] must be a table", key="sim")
    line = src.header_line("[sim]", 0)
    check_keys(src, sim, SIM_KEYS, "[sim]", line=line)
    pname = sim.get("profile", "lab2019")
    if not isinstance(pname, str) or pname not in PROFILES:
        raise key_error(
            src,
            f"unknown profile {pname!r}",
            "profile",
            line,
            expected=" or ".join(PROFILES),
            suggestion=suggest(str(pname), set(PROFILES)),
        )
    overrides: dict[str, Any] = {}
    known = set(profile_fields())
    for k, v in sim.items():
        if k in ("profile", "arp", "gso", "part_gap", "host_noise", "reader_wakeup", "app_setup"):
            continue
        try:
            overrides[k] = _convert_sim_value(k, v)
        except ValueError as e:
            expected = 'a duration such as "100ms" or "300s"' if k in DURATION_KEYS else None
            suggestion = None
            if k == "max_tcp_header":
                expected = f"max_tcp_header = {MAX_TCP_HEADER_BUILDS[1]} (one of " + ", ".join(
                    map(str, MAX_TCP_HEADER_BUILDS)) + ")"
                suggestion = ("a kernel whose `ss -tmi` shows tb = 4608 x cwnd (CUBIC, Reno) has 192 or 256; "
                              "one with tb = 8704 x cwnd has 320")
            raise key_error(src, f"[sim] {k}: {e}", k, line, expected=expected,
                            suggestion=suggestion) from None
        assert k in known
    switches = []
    for k in ("arp", "gso"):
        on = sim.get(k, True)
        if not isinstance(on, bool):
            raise key_error(src, f"[sim] {k} must be true or false", k, line)
        switches.append(on)
    arp, gso = switches
    return with_overrides(PROFILES[pname], overrides), arp, gso


#: [sim] integer knobs and their largest values: per-packet host costs and loop times
#: of at most 1 s (the engine keeps them as u64 ns/ps; a longer cost is no host), a file
#: descriptor is a C int, and the epoch must print as a date (year 9999 at most)
SIM_INT_MAX = {
    "ping_send_lag_us": 1_000_000,
    "iperf3_send_loop_us": 1_000_000,
    "host_packet_ns": 1_000_000_000,
    "host_wakeup_ns": 1_000_000_000,
    "host_byte_ps": 1_000_000_000,
    "iperf3_socket_base": 2**31 - 1,
    "epoch": 253402300799,
}


#: the values an x86-64 kernel's MAX_TCP_HEADER takes: L1_CACHE_ALIGN(128 + MAX_HEADER), with
#: LL_MAX_HEADER 32, 96 or 128 and 48 more with IP tunnels (include/net/tcp.h,
#: include/linux/netdevice.h); crates/bufferlab-core/src/tcp/config.rs has the same list
MAX_TCP_HEADER_BUILDS = (192, 256, 320)


def _convert_sim_value(key: str, v: Any) -> Any:
    if key in DURATION_KEYS:
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
    if key in ("netem_time_ns", "tc_modern_print", "netem_modern_accounting", "red_adaptive_timer"):
        if not isinstance(v, bool):
            raise ValueError("expected true or false")
        return v
    if key in SIM_INT_MAX:
        top = SIM_INT_MAX[key]
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= top:
            raise ValueError(f"expected an integer from 0 to {top}")
        return v
    if key == "max_tcp_header":
        if isinstance(v, bool) or v not in MAX_TCP_HEADER_BUILDS:
            raise ValueError(f"expected {', '.join(map(str, MAX_TCP_HEADER_BUILDS[:-1]))} or "
                             f"{MAX_TCP_HEADER_BUILDS[-1]} bytes, got {v!r}")
        return v
    if key == "system_info":
        if not isinstance(v, str):
            raise ValueError("expected a string")
        return v
    raise ValueError("unknown key")


def _build_links(raw: Any, src: SourceMap, names: set[str]) -> list[LinkSpec]:
    if not isinstance(raw, list):
        raise error_at(
            src,
            "topology.links must be a list",
            key="links",
            expected='links = [["h1", "s1"], {a = "s1", b = "h2", bw = 10}]',
        )
    first = src.key_line("links") or 0
    src.cursor = (max(first - 1, 0), 0)
    line, col = first, None
    out: list[LinkSpec] = []
    for i, item in enumerate(raw):
        # where each string of this link is written (the links are scanned in order)
        values = item if isinstance(item, list) else list(item.values()) if isinstance(item, dict) else []
        keys = ["a", "b"] if isinstance(item, list) else list(item) if isinstance(item, dict) else []
        positions: dict[str, tuple[int, int]] = {}
        for k, v in zip(keys, values, strict=False):
            found = src.find_string(v) if isinstance(v, str) else None
            if found:
                positions[k] = found
        if positions:
            line, col = next(iter(positions.values()))
        err = functools.partial(_link_err, src, positions, line, col)
        if isinstance(item, list):
            if len(item) != 2 or not all(isinstance(x, str) for x in item):
                raise err(f"link {i + 1} must name exactly two nodes", expected='["h1", "s1"]')
            spec = LinkSpec(a=item[0], b=item[1], line=line, col=col, positions=positions)
        elif isinstance(item, dict):
            for k in item:
                if k not in LINK_KEYS:
                    kpos = src.inline_key_pos(k, line)
                    raise ScenarioError(
                        f"unknown key {k!r} in link {i + 1}",
                        file=src.file,
                        line=kpos[0] if kpos else line,
                        col=kpos[1] if kpos else col,
                        expected=", ".join(sorted(LINK_KEYS)),
                        suggestion=suggest(k, LINK_KEYS),
                    )
            if "a" not in item or "b" not in item:
                raise err(f"link {i + 1} needs both ends: a = ..., b = ...", expected='{a = "h1", b = "s1"}')
            try:
                spec = LinkSpec(line=line, col=col, positions=positions, **item)
            except TypeError as e:  # pragma: no cover - keys checked above
                raise err(f"link {i + 1}: {e}") from None
            _check_link_types(spec, i, err)
        else:
            raise err(f"link {i + 1} must be a pair of names or a table", expected='["h1", "s1"]')
        for key, end in (("a", spec.a), ("b", spec.b)):
            if end not in names:
                raise err(
                    f"link {i + 1} names unknown node {end!r}",
                    key,
                    expected="one of " + ", ".join(sorted(names)),
                    suggestion=suggest(end, names),
                )
        if spec.a == spec.b:
            raise err(f"link {i + 1} connects {spec.a!r} to itself", "b")
        out.append(spec)
    return out


def _link_err(
    src: SourceMap,
    positions: dict[str, tuple[int, int]],
    line: int,
    col: int | None,
    message: str,
    key: str | None = None,
    **kw: Any,
) -> ScenarioError:
    """An error about a link, at the value of ``key`` if known, else at the link."""
    at = positions.get(key) if key else None
    if key and at is None:
        at = src.inline_key_pos(key, line)
    ln, cl = at if at else (line, col)
    return ScenarioError(message, file=src.file, line=ln, col=cl, **kw)


def _check_link_types(spec: LinkSpec, i: int, err: Any) -> None:
    def bad(key: str, what: str) -> ScenarioError:
        return err(f"link {i + 1}: {key} must be {what}", key)

    for key in ("a", "b", "a_intf", "b_intf", "a_ip", "b_ip", "delay", "jitter", "wire_rate", "wire_delay"):
        v = getattr(spec, key)
        if v is not None and not isinstance(v, str):
            raise bad(key, 'a string (e.g. delay = "5ms")')
    for key in ("a_intf", "b_intf"):
        v = getattr(spec, key)
        # Linux interface names: at most 15 characters, no blanks, '/' or ':' (dev_valid_name)
        if v is not None and not re.fullmatch(r"[A-Za-z0-9_.-]{1,15}", v):
            raise bad(key, "an interface name of 1 to 15 letters, digits, '_', '.' or '-' (e.g. \"eth1\")")
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
        raise error_at(
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
        check_keys(src, part, PART_KEYS, f"part {p_i + 1}", line=line)
        pname = part.get("name", f"part{p_i + 1}")
        if not isinstance(pname, str) or not pname:
            raise key_error(src, f"part {p_i + 1}: name must be a non-empty string", "name", line)
        slug = _slug(pname)
        if slug.lower() in RUN_FILES:
            raise key_error(src, f"part {pname!r}: its folder would be the run's own {slug}", "name", line,
                            expected="a name other than " + ", ".join(sorted(RUN_FILES)))
        if len(slug.encode()) > MAX_PART_NAME_BYTES:
            raise key_error(src, f"part {p_i + 1}: its name is {len(slug.encode())} bytes long; its results "
                            "folder needs a shorter one", "name", line,
                            expected=f"a part name of at most {MAX_PART_NAME_BYTES} bytes")
        if slug in seen:
            raise key_error(src, f"two parts are named {pname!r}; output folders would collide", "name", line)
        seen.add(slug)
        duration, stop = (_part_duration(src, part, pname, key, line) for key in ("duration", "stop"))
        cmds = part.get("cmds", [])
        if not isinstance(cmds, list) or not all(isinstance(c, str) for c in cmds):
            raise key_error(
                src,
                f"part {pname!r}: cmds must be a list of strings",
                "cmds",
                line,
                expected='cmds = ["h1: ping 10.0.0.2 -c 4"]',
            )
        src.cursor = (line, 0)
        commands = []
        for k, c in enumerate(cmds):
            if len(c) > MAX_COMMAND_CHARS:
                raise _too_long(src, c, k, pname, line)
            pos = src.find_string_cols(c)
            # file column of every character of the string (after TOML escapes)
            cols = pos[1] if pos else []
            cl, cc = (pos[0], pos[2]) if pos else (line, 1)
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
                    expected="one of " + ", ".join(sorted(names) + ["admin"]),
                    suggestion=suggest(term, names | {"admin"}),
                )
            text_cols = tuple(cols[m.end() :]) if len(cols) == len(c) else ()
            commands.append(Command(term, c[m.end() :], cl, cc + m.end(), index, src.file, text_cols))
            index += 1
        interrupt = _part_interrupt(src, part, pname, line, names)
        allow_fail = _part_allow_fail(src, part, pname, line, cmds, commands)
        parts.append(Part(slug, commands, duration, line, stop, interrupt, allow_fail))
    return parts


def _too_long(src: SourceMap, c: str, k: int, pname: str, line: int) -> ScenarioError:
    """A command longer than MAX_COMMAND_CHARS, at the line its text starts on (found by
    its first characters, without decoding the whole string), else at ``cmds``."""
    head = c[:32]
    li = src.cursor[0]
    for i in range(li, len(src.lines)):
        j = src.lines[i].find(head) if head else -1
        if j >= 0:
            src.cursor = (i + 1, 0)
            return ScenarioError(
                f"part {pname!r}: command {k + 1} is {len(c)} characters long (maximum {MAX_COMMAND_CHARS})",
                file=src.file, line=i + 1, col=j + 1,
                expected=f"a command line of at most {MAX_COMMAND_CHARS} characters (Linux's MAX_ARG_STRLEN)",
                suggestion="split it into several lines",
            )
    return key_error(src, f"part {pname!r}: command {k + 1} is {len(c)} characters long "
                    f"(maximum {MAX_COMMAND_CHARS})", "cmds", line,
                    expected=f"a command line of at most {MAX_COMMAND_CHARS} characters")


def _part_interrupt(
    src: SourceMap, part: dict[str, Any], pname: str, line: int, names: set[str]
) -> list[str]:
    """``interrupt = ["h3", "admin"]`` or ``"all"``: terminals Ctrl-C'd at the part's end."""
    v = part.get("interrupt", [])
    if v == "all":
        return ["all"]
    terminals = names | {"admin"}
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise key_error(src, f"part {pname!r}: interrupt must be a list of terminals or \"all\"", "interrupt",
                       line, expected='interrupt = ["h3"] or interrupt = "all"')
    for t in v:
        if t not in terminals:
            raise key_error(src, f"part {pname!r}: interrupt names unknown terminal {t!r}", "interrupt", line,
                           expected="one of " + ", ".join(sorted(terminals)),
                           suggestion=suggest(t, terminals))
    return v


def _part_allow_fail(
    src: SourceMap, part: dict[str, Any], pname: str, line: int, cmds: list[str], commands: list[Command]
) -> set[int]:
    """``allow_fail = ["h1: iperf3 -c 10.0.0.9"]``: lines of this part (written exactly as in
    ``cmds``) whose non-zero exit is expected, so ``bufferlab run`` still exits 0."""
    v = part.get("allow_fail", [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise key_error(src, f"part {pname!r}: allow_fail must be a list of command lines",
                             "allow_fail", line,
                       expected='allow_fail = ["h1: iperf3 -c 10.0.0.3"] (lines of this part\'s cmds)')
    out: set[int] = set()
    for entry in v:
        hits = [c.index for raw, c in zip(cmds, commands, strict=True) if raw.strip() == entry.strip()]
        if not hits:
            raise key_error(src, f"part {pname!r}: allow_fail entry {entry!r} is not a line of this part",
                           "allow_fail", line, expected="a line of cmds, written exactly as there",
                           suggestion=suggest(entry, set(cmds)))
        out.update(hits)
    return out


def _part_duration(src: SourceMap, part: dict[str, Any], pname: str, key: str, line: int) -> float | None:
    """A part's ``duration`` or ``stop`` in seconds (None if absent)."""
    v = part.get(key)
    if v is None:
        return None
    try:
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ValueError(f"{v!r} is not a duration")
        s = parse_duration_s(str(v))
        if key == "stop" and s <= 0:
            raise ValueError("must be positive")
        return s
    except ValueError as e:
        raise key_error(
            src,
            f"part {pname!r}: {key}: {e}",
            key,
            line,
            expected='a duration such as "30s", "500ms" or 90 (seconds)',
        ) from None
