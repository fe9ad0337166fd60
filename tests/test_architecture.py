"""The Python package's import graph keeps the layers of docs/internals.md ("Layers").

Every module of python/bufferlab is parsed with ``ast``; its imports of bufferlab
modules (at module level, under ``if TYPE_CHECKING:``, and inside functions) make
the graph checked here:

- every module belongs to one layer of :data:`LAYERS`;
- no import inside a function (the usual way to dodge a cycle), except where a command loads
  what it runs only when it runs it (start-up is paid once: ``bufferlab --version`` must not
  load the runner, pyarrow, pandas or matplotlib; tests/test_startup.py), listed below;
- no cycle, type-only imports included (a cycle hidden under ``TYPE_CHECKING`` is
  still two modules that cannot be understood one without the other);
- every import points to the importer's layer or one below.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bufferlab.run import programs

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "bufferlab"

#: lowest first; a module belongs to the layer of the longest prefix that names it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("bufferlab._core", "bufferlab.registry", "bufferlab.errors", "bufferlab.units",
                    "bufferlab.profile", "bufferlab.safefs", "bufferlab.results_folder", "bufferlab.version")),
    ("parsers", ("bufferlab.commands",)),
    ("scenario", ("bufferlab.scenario",)),
    ("formats", ("bufferlab.formats",)),
    ("outputs", ("bufferlab.outputs",)),
    ("run", ("bufferlab.run",)),
    ("real", ("bufferlab.real",)),
    ("sweep", ("bufferlab.sweep",)),
    ("mininet", ("bufferlab.mininet",)),
    ("bench", ("bufferlab.serve",)),
    ("entry points", ("bufferlab.cli", "bufferlab")),
]

#: function-local imports of bufferlab modules that are allowed, with the reason
FUNCTION_LOCAL_ALLOWED: dict[tuple[str, str], str] = {
    ("bufferlab.run.observation", "bufferlab.outputs.queue_traces"): "numpy, only for a traced run",
    ("bufferlab.sweep.executors", "bufferlab.sweep.runs"): "the runner, when a sweep's run starts",
    ("bufferlab.run", "bufferlab.run.notebook"): "bufferlab.run(...) loads the runner when called, so "
                                                 "that importing bufferlab.run.x stays light",
}
#: the command dispatchers: each command imports its modules when it runs (start-up)
LAZY_DISPATCHERS = {"bufferlab.cli", "bufferlab.sweep.cli", "bufferlab.mininet.commands"}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    #: "module" (runs on import), "type" (under ``if TYPE_CHECKING:``) or "function"
    where: str


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    found = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    found.update({_module_name(p): p for p in PACKAGE.glob("*.pyi")})  # the compiled engine's stubs
    return found


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The bufferlab modules an import statement names."""
    modules = _modules()
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".")[: len(module.split(".")) + (1 if is_package else 0) - node.level]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        names = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
    return sorted({n for n in names if n in modules})


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


@cache
def _imports() -> list[Import]:
    found: list[Import] = []
    for module, path in _modules().items():
        if path.suffix != ".py":
            continue

        def visit(node: ast.AST, where: str, module: str = module, path: Path = path) -> None:
            for child in ast.iter_child_nodes(node):
                inner = where
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    inner = "function"
                elif isinstance(child, ast.If) and where == "module" and _is_type_checking(child):
                    inner = "type"
                if isinstance(child, ast.Import | ast.ImportFrom):
                    for target in _targets(module, path.name == "__init__.py", child):
                        if target != module:
                            found.append(Import(module, target, child.lineno, inner))
                visit(child, inner)

        visit(ast.parse(path.read_text(), str(path)), "module")
    # the registry imports a program's module by name when it is first looked up
    found += [Import(programs.__name__, f"{programs.__name__}.{module}", 0, "registry")
              for module, _ in programs.INDEX]
    return found


def _layer(module: str) -> int:
    best = max(((len(prefix), rank) for rank, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
                if module == prefix or module.startswith(prefix + ".")), default=None)
    assert best is not None, f"{module} is in no layer of LAYERS: place it (and in docs/internals.md)"
    return best[1]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return cycles


def test_the_graph_sees_the_package() -> None:
    assert "bufferlab.run.scheduler" in _modules() and "bufferlab.cli" in _modules()
    assert any(i.importer == "bufferlab.cli" and i.imported == "bufferlab.run.scheduler" for i in _imports())


def test_every_module_has_a_layer() -> None:
    for module in _modules():
        _layer(module)


def test_no_function_local_imports() -> None:
    local = [f"{i.importer}:{i.line} imports {i.imported}" for i in _imports()
             if i.where == "function" and (i.importer, i.imported) not in FUNCTION_LOCAL_ALLOWED
             and i.importer not in LAZY_DISPATCHERS]
    assert local == []


def test_no_import_cycles() -> None:
    edges: dict[str, set[str]] = {}
    for i in _imports():
        edges.setdefault(i.importer, set()).add(i.imported)
    assert _cycles(edges) == []


def test_layers_import_downwards() -> None:
    upward = [f"{i.importer}:{i.line} ({LAYERS[_layer(i.importer)][0]}) imports {i.imported} "
              f"({LAYERS[_layer(i.imported)][0]}) at {i.where} level"
              for i in _imports() if _layer(i.imported) > _layer(i.importer)]
    assert upward == []


def _documented_programs() -> list[str]:
    """The programs docs/internals.md "Commands" lists: each item starts with them, in code
    spans, up to the colon and blank that end them (``- `ping`, `iperf3`, `iperf` (iperf 2): ...``;
    bash's `:` is one of the programs)."""
    text = (PACKAGE.parent.parent / "docs" / "internals.md").read_text(encoding="utf-8")
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    names = []
    for item in re.findall(r"^- (.*?): ", section, re.MULTILINE):
        names += re.findall(r"`([^`]+)`", item)
    return names


def test_the_registry_and_the_docs_list_the_same_programs() -> None:
    """A program is registered (run/programs/__init__.py) exactly when docs/internals.md
    "Commands" lists it, once (docs/internals.md "How to add a command")."""
    documented = _documented_programs()
    assert sorted(documented) == sorted(set(documented)), "a program listed twice"
    registered = set(programs.PROGRAMS)
    assert registered - set(documented) == set(), 'registered, not in docs/internals.md "Commands"'
    assert set(documented) - registered == set(), 'in docs/internals.md "Commands", not registered'



def test_every_program_module_is_registered() -> None:
    """Each module of run/programs/ is in the registry's INDEX, which names its records in
    their order (the registry imports a module only when one of its programs is looked up)."""
    modules = {m for m in _modules() if m.startswith("bufferlab.run.programs.")}
    assert {f"bufferlab.run.programs.{m}" for m, _ in programs.INDEX} == modules
    for module, names in programs.INDEX:
        records = programs.program_module(module).PROGRAMS
        assert tuple(p.name for p in records) == names, f"run/programs/{module}.py"
        assert all(p.name and p.summary for p in records)
    assert [p.name for p in programs.PROGRAMS.values()] == list(programs.PROGRAMS)
