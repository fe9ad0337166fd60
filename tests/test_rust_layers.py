"""The engine crate's module graph keeps its layers (docs/internals.md "Engine layers").

Every production ``.rs`` file of crates/bufferlab-core/src (a file's ``#[cfg(test)]`` tail
and the ``*_tests.rs``/``tests.rs`` files left out) is read for the paths it names:
``use crate::…``/``use super::…`` items (grouped ones included) and ``crate::…`` paths in
code and attributes (a serde ``deserialize_with = "crate::…"`` is a dependency too), and
``super::…`` paths in code (``super::prio::PfifoFast``). Each
path resolves to the longest module that exists. From that graph:

- every top-level module belongs to one layer of :data:`LAYERS`, and imports only from
  layers below its own;
- no cycle between modules, at any depth — except the edge from a module to its own
  ancestors (a parent declares its children: Rust's module tree), and any cycle listed in
  :data:`KNOWN_CYCLES` with the reason it is still there.

And no production file of any crate (crates/*/src, read the same way) is longer than
:data:`MAX_LINES` unless its module doc says why it stays one file in a ``//! Size:`` line
(docs/internals.md "Engine layers").
"""

from __future__ import annotations

import itertools
import re
from functools import cache
from pathlib import Path

CRATES = Path(__file__).resolve().parent.parent / "crates"
SRC = CRATES / "bufferlab-core" / "src"

#: production lines a file may have without a written reason
MAX_LINES = 700
#: how a file's module doc gives that reason
SIZE_REASON = "//! Size:"

#: lowest first
LAYERS: list[tuple[str, set[str]]] = [
    ("foundation", {"time", "error", "rng", "prefetch", "closed", "counters"}),
    ("packets", {"packet"}),
    ("models", {"sched", "topology", "host", "host_noise", "tcp", "qdisc"}),
    ("observers and applications", {"capture", "app", "mib"}),
    ("the engine", {"engine"}),
    ("the request schema", {"schema"}),
]

#: strongly connected groups of modules allowed for now, with the reason (none)
KNOWN_CYCLES: dict[frozenset[str], str] = {}

_USE = re.compile(r"\buse\s+((?:crate|super|self)(?:::\w+)*)(?:::\{(.*?)\})?\s*;", re.S)
_PATH = re.compile(r"\b(?:crate|super)(?:::\w+)+")


def _module(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return "::".join(parts)


def _production(text: str) -> str:
    """The text without its ``#[cfg(test)]`` items (a ``use`` line, or a block to its
    closing brace: the tests module, a test-only function or impl)."""
    out, pos = [], 0
    while (cut := text.find("#[cfg(test)]", pos)) >= 0:
        out.append(text[pos:cut])
        rest = cut + len("#[cfg(test)]")
        semicolon, brace = text.find(";", rest), text.find("{", rest)
        if brace < 0 or 0 <= semicolon < brace:
            pos = semicolon + 1
            continue
        depth, i = 0, brace
        while i < len(text):
            depth += (text[i] == "{") - (text[i] == "}")
            i += 1
            if depth == 0:
                break
        pos = i
    out.append(text[pos:])
    return "".join(out)


def _without_comments(text: str) -> str:
    """The text without its ``//`` comments (doc comments included), which name paths
    without depending on them; a ``//`` inside a string (an odd number of quotes before it
    on its line) is kept."""
    lines = []
    for line in text.splitlines():
        cut = line.find("//")
        while cut >= 0 and line[:cut].count('"') % 2:
            cut = line.find("//", cut + 2)
        lines.append(line if cut < 0 else line[:cut])
    return "\n".join(lines)


def _is_test_file(path: Path) -> bool:
    return path.name.endswith("_tests.rs") or path.name == "tests.rs"


@cache
def sources() -> dict[str, tuple[Path, str]]:
    return {
        _module(p): (p, _without_comments(_production(p.read_text(encoding="utf-8"))))
        for p in sorted(SRC.rglob("*.rs"))
        if not _is_test_file(p)
    }


def too_long(text: str) -> int | None:
    """The production line count of a file's text when above :data:`MAX_LINES` and its
    leading module doc (the first ``//!`` lines) gives no ``//! Size:`` reason."""
    lines = _production(text).count("\n")
    doc = itertools.takewhile(lambda line: line.startswith("//!"), text.splitlines())
    if lines <= MAX_LINES or any(line.startswith(SIZE_REASON) for line in doc):
        return None
    return lines


def _group_items(group: str) -> list[str]:
    """The first path segment(s) of each item of ``{a, b::c, d::{e, f}}``."""
    items, depth, current = [], 0, ""
    for ch in group:
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
            continue
        depth += (ch == "{") - (ch == "}")
        current += ch
    items.append(current)
    return [it.split("::{")[0].split(" as ")[0].strip() for it in items if it.strip()]


def _resolve(importer: str, path: str) -> str | None:
    """The longest existing module a path names, seen from ``importer``."""
    segs = path.split("::")
    here = importer.split("::") if importer else []
    if segs[0] == "crate":
        base, segs = [], segs[1:]
    elif segs[0] == "self":
        base, segs = here, segs[1:]
    else:  # super, possibly repeated: each one climbs from the module to its parent
        ups = 0
        while segs and segs[0] == "super":
            ups, segs = ups + 1, segs[1:]
        base = here[: len(here) - ups]
    full = base + segs
    for n in range(len(full), 0, -1):
        if "::".join(full[:n]) in sources():
            return "::".join(full[:n])
    return None


@cache
def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, (_path, text) in sources().items():
        named: list[str] = []
        for use in _USE.finditer(text):
            head = use.group(1)
            named.append(head)
            named += [f"{head}::{item}" for item in _group_items(use.group(2) or "")]
        named += _PATH.findall(text)
        deps = set()
        for p in named:
            target = _resolve(module, p)
            if target and target != module and not module.startswith(target + "::"):
                deps.add(target)
        edges[module] = deps
    return edges


def _layer_of(module: str) -> int | None:
    top = module.split("::")[0]
    return next((i for i, (_, mods) in enumerate(LAYERS) if top in mods), None)


def strongly_connected(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's algorithm, iteratively: every group of two or more modules on a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[frozenset[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(frozenset(group))
    return groups


def test_the_graph_sees_the_crate() -> None:
    edges = graph()
    assert {"engine", "qdisc::tree", "tcp", "app"} <= edges.keys()
    # a grouped use, a super path and an attribute path are all seen; a test-only use is not
    assert "qdisc::ops" in edges["qdisc::tree"] and "closed" in edges["capture::filter"]
    assert "qdisc::spec" not in edges["qdisc::tree"]


def test_every_top_level_module_has_a_layer() -> None:
    missing = sorted({m.split("::")[0] for m in graph() if m and _layer_of(m) is None})
    assert not missing, f"add these modules to a layer of LAYERS: {missing}"


def test_modules_import_from_lower_layers_only() -> None:
    wrong = []
    for module, deps in graph().items():
        if not module:
            continue  # lib.rs re-exports
        mine = _layer_of(module)
        for dep in deps:
            theirs = _layer_of(dep)
            same_top = dep.split("::")[0] == module.split("::")[0]
            if not same_top and theirs is not None and mine is not None and theirs >= mine:
                wrong.append(f"{module} ({LAYERS[mine][0]}) uses {dep} ({LAYERS[theirs][0]})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_module_cycles_beyond_the_known_one() -> None:
    cycles = strongly_connected({m: d for m, d in graph().items() if m})
    unexpected = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not unexpected, f"modules that depend on each other: {unexpected}"
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"a known cycle is gone: remove it from KNOWN_CYCLES: {gone}"


def test_test_only_items_are_left_out() -> None:
    text = "use a;\n#[cfg(test)]\nuse b;\nfn f() {}\n#[cfg(test)]\nmod tests {\n fn g() { h() }\n}\n"
    text += "fn k() {}\n"
    assert _production(text) == "use a;\n\nfn f() {}\n\nfn k() {}\n"


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(edges) == [frozenset({"a", "b", "c"})]


def test_no_production_file_is_long_without_a_reason() -> None:
    long = []
    for path in sorted(CRATES.glob("*/src/**/*.rs")):
        if not _is_test_file(path) and (n := too_long(path.read_text(encoding="utf-8"))):
            long.append(f"{path.relative_to(CRATES)}: {n} lines")
    assert not long, (
        f"above {MAX_LINES} production lines: split the file along its concepts, or say why "
        f"it stays one file in a '{SIZE_REASON}' line of its module doc:\n" + "\n".join(long)
    )


def test_the_size_check_counts_production_lines_and_reads_the_reason() -> None:
    body = "fn f() {}\n" * (MAX_LINES + 1)
    tests = "#[cfg(test)]\nmod tests {\n" + "fn t() {}\n" * MAX_LINES + "}\n"
    assert too_long("//! A model.\n" + body) == MAX_LINES + 2
    # 699 lines and the blank line a tests module leaves: within the limit
    assert too_long("//! A model.\n" + "fn f() {}\n" * (MAX_LINES - 2) + tests) is None
    assert too_long("//! A model.\n//! Size: one algorithm, as sch_x.c.\n" + body) is None
    # the reason belongs to the module doc at the top, not to a comment further down
    assert too_long("//! A model.\n\n//! Size: late.\n" + body) == MAX_LINES + 4
