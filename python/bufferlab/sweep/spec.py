"""A sweep file (TOML) read into the list of runs it stands for.

Keys: ``scenario`` (path relative to the sweep file), ``name`` (results folder;
default the file's stem), ``seeds`` (N meaning 1..N, or a list), ``[grid]``
(cross product of lists), ``[[zip]]`` (lists advanced together), ``parts``
(the scenario's parts to run) and ``where`` (a condition over the parameters).
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from ..safefs import not_a_file
from ..scenario.load import (
    MAX_PART_NAME_BYTES,
    MAX_SEED,
    ScenarioFile,
    load_scenario,
    near_path,
    read_scenario,
    read_toml,
)
from ..scenario.params import ExprError, Override, Value, condition, shorten
from ..scenario.source import SourceMap, check_keys, error_at, key_error, suggest

SWEEP_KEYS = {"scenario", "name", "seeds", "grid", "zip", "parts", "where"}
#: the most runs a sweep may have (points x seeds): far beyond a lab's, and still a list of
#: jobs (each a loaded scenario) that fits in memory; `seeds = 4294967295` was a MemoryError
MAX_SWEEP_RUNS = 100_000


@dataclass
class SweepSpec:
    file: Path
    name: str
    scenario: Path
    seeds: list[int]
    #: one dict of parameter values per point of the grid (before seeds), in file order
    points: list[dict[str, Value]]
    #: the scenario file, read once: each point's runs are built from it (runs.prepare)
    source: ScenarioFile
    #: "FILE:LINE:COL" of each swept parameter's key, for errors about its values
    origins: dict[str, str] = field(default_factory=dict)
    parts: list[str] | None = None
    where: str | None = None


def load_sweep(path: Path, fixed: list[Override]) -> SweepSpec:
    """Read and check the sweep file; ``fixed`` are ``--set`` values applied to every run. A
    ``--set`` of a swept parameter narrows its axis to that value: a slice of the sweep, whose
    runs are the full sweep's (the same identities, so finished ones are kept)."""
    file = str(path)
    # the scenario's guards: size, UTF-8, nesting and dotted keys bounded, errors with positions
    text, data = read_toml(path, "sweep file")
    src = SourceMap(text, file)
    check_keys(src, data, SWEEP_KEYS, "the sweep file")
    scen = data.get("scenario")
    if not isinstance(scen, str):
        raise error_at(src, "the sweep file needs scenario = \"path/to/scenario.toml\" (relative to it)",
                       key="scenario" if "scenario" in data else None, line=None if "scenario" in data else 1)
    scenario = path.parent / scen
    if not scenario.is_file():  # the mistake is this line of the sweep file
        near = near_path(scenario)
        raise error_at(src, f"scenario = {shorten(scen)!r}: {not_a_file(scenario)} ({scenario})",
                       key="scenario", expected="the path of a scenario file, relative to the sweep file",
                       suggestion=near)
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name or "/" in name or name.startswith(".") \
            or len(name.encode()) > MAX_PART_NAME_BYTES:
        raise error_at(src, "name must be a folder name (no '/', not starting with '.', at most "
                       f"{MAX_PART_NAME_BYTES} bytes)", key="name")
    seeds = _seeds(src, data.get("seeds", 1))
    axes = _axes(src, data)
    source = read_scenario(scenario)
    base_scenario = load_scenario(scenario, read=source)
    defaults = base_scenario.params
    origins: dict[str, str] = {}
    for key, line in axes.names():
        pos = src.key_pos(key, line - 1) or src.inline_key_pos(key, line)
        origins[key] = f"{file}:{pos[0]}:{pos[1]}" if pos else f"{file}:{line}"
        if key not in defaults:
            raise ScenarioError(f"{key!r} is not a parameter of {scenario}", file=file,
                                line=pos[0] if pos else line, col=pos[1] if pos else None,
                                expected="one of its [params]: " + (", ".join(sorted(defaults)) or "(none)"),
                                suggestion=suggest(key, set(defaults))
                                or f"declare {key} under [params] in the scenario, or drop it here")
        for o in fixed:
            if o.name == key and not axes.narrow(key, o.value):
                raise ScenarioError(f"--set {key}={o.value}: no row of this [[zip]] has {key} = {o.value}",
                                    file=file, line=pos[0] if pos else line, col=pos[1] if pos else None,
                                    expected=f"{key} one of " + ", ".join(map(str, axes.values(key))),
                                    suggestion=f"a [[zip]] advances its lists together: --set picks one "
                                    f"of its rows by {key}")
    runs = axes.size() * len(seeds)
    if runs > MAX_SWEEP_RUNS:
        raise error_at(src, f"the sweep has {runs:,} runs ({axes.size():,} points x {len(seeds):,} seeds), "
                       f"more than {MAX_SWEEP_RUNS:,}", line=axes.zips[0][1] if axes.zips and not axes.grid
                       else axes.grid_line, expected=f"at most {MAX_SWEEP_RUNS:,} runs",
                       suggestion="split it into several sweeps, or run a slice with --set NAME=VALUE")
    where = data.get("where")
    if where is not None and not isinstance(where, str):
        raise error_at(src, "where must be a string condition", key="where",
                       expected='e.g. where = "minth < maxth"')
    base = {**defaults, **{o.name: o.value for o in fixed}}
    points = []
    for p in axes.points():
        if where is None or _keep(src, where, {**base, **p}):
            points.append(p)
    parts = data.get("parts")
    names = [p.name for p in base_scenario.parts]
    if parts is not None and (not isinstance(parts, list) or not all(isinstance(x, str) for x in parts)
                              or not parts):
        raise error_at(src, "parts must be a non-empty list of part names" + (
            " (an empty list would run nothing; leave parts out to run every part)" if parts == [] else ""),
            key="parts", expected=f"parts = {json.dumps(names[:3])}")
    for p in parts or []:
        if p not in names:
            line, col = _in_value(src, "parts", f'"{p}"', f"'{p}'")
            raise ScenarioError(f"the scenario {scenario} has no part {p!r}", file=file, line=line, col=col,
                                expected="some of its parts: " + ", ".join(names),
                                suggestion=suggest(p, set(names)))
    return SweepSpec(path, name, scenario, seeds, points, source, origins, parts, where)


def _keep(src: SourceMap, where: str, env: dict[str, Value]) -> bool:
    try:
        return condition(where, env)
    except ExprError as e:
        line, col = _in_value(src, "where", '"', "'")
        if col is not None and (line, col) != src.key_pos("where"):
            col += 1 + e.offset  # the opening quote, then the offset inside the condition
        raise ScenarioError(f"in where = {shorten(where)!r}: {e.message}", file=src.file, line=line, col=col,
                            expected=e.expected or "a condition such as minth < maxth and load > 0.25",
                            suggestion=e.suggestion) from None


def _in_value(src: SourceMap, key: str, *needles: str) -> tuple[int | None, int | None]:
    """Line and column (1-based) of the first of ``needles`` after ``key =`` on its line (the
    key's own position if none is there; (None, None) without the key)."""
    pos = src.key_pos(key)
    if pos is None:
        return None, None
    text = src.lines[pos[0] - 1]
    eq = text.find("=", pos[1] - 1)
    found = [i for i in (text.find(n, eq) for n in needles) if i >= 0]
    return (pos[0], min(found) + 1) if found else pos


def _seeds(src: SourceMap, raw: Any) -> list[int]:
    def ok(s: Any) -> bool:
        return isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= MAX_SEED

    if ok(raw) and raw > MAX_SWEEP_RUNS:
        raise error_at(src, f"seeds = {raw}: more runs than a sweep may have", key="seeds",
                       expected=f"at most {MAX_SWEEP_RUNS:,} seeds (a sweep has at most "
                       f"{MAX_SWEEP_RUNS:,} runs)")
    if ok(raw) and raw >= 1:
        return list(range(1, raw + 1))
    if isinstance(raw, list) and raw and all(ok(s) for s in raw) and len(set(raw)) == len(raw):
        return list(raw)
    raise error_at(src, "seeds must be a count N (seeds 1..N) or a list of distinct seeds", key="seeds",
                   expected="seeds = 10 or seeds = [1, 7, 42]")


@dataclass
class _Axes:
    grid: dict[str, list[Value]]
    grid_line: int
    zips: list[tuple[dict[str, list[Value]], int]]

    def names(self) -> list[tuple[str, int]]:
        return [(k, self.grid_line) for k in self.grid] + [(k, ln) for z, ln in self.zips for k in z]

    def values(self, key: str) -> list[Value]:
        return self.grid[key] if key in self.grid else next(z[key] for z, _ in self.zips if key in z)

    def narrow(self, key: str, value: Value) -> bool:
        """Keep only ``key = value`` (``--set`` of a swept parameter); False if it is zipped and
        no row of its [[zip]] has that value."""
        if key in self.grid:
            self.grid[key] = [value]
            return True
        for z, _ in self.zips:
            if key in z:
                rows = [i for i, v in enumerate(z[key]) if v == value]
                if not rows:
                    return False
                for k in z:
                    z[k] = [z[k][i] for i in rows]
        return True

    def size(self) -> int:
        """How many points :meth:`points` makes (without making them)."""
        return math.prod([len(v) for v in self.grid.values()]
                         + [len(next(iter(z.values()))) for z, _ in self.zips])

    def points(self) -> list[dict[str, Value]]:
        groups: list[list[dict[str, Value]]] = [[{k: v} for v in vals] for k, vals in self.grid.items()]
        for z, _ in self.zips:
            n = len(next(iter(z.values())))
            groups.append([{k: vals[i] for k, vals in z.items()} for i in range(n)])
        return [{k: v for d in combo for k, v in d.items()} for combo in itertools.product(*groups)]


def _axes(src: SourceMap, data: dict) -> _Axes:
    grid = data.get("grid", {})
    grid_line = src.header_line("[grid]", 0) or 1
    if not isinstance(grid, dict):
        raise error_at(src, "grid must be a table", line=grid_line, expected="[grid] qlen = [400, 800]")
    seen: set[str] = set()
    _check_lists(src, grid, grid_line, seen)
    zips_raw = data.get("zip", [])
    if not isinstance(zips_raw, list):
        raise error_at(src, "zip must be an array of tables", key="zip", expected="[[zip]] minth = [...]")
    zips = []
    for i, z in enumerate(zips_raw):
        line = src.header_line("[[zip]]", i) or 1
        if not isinstance(z, dict) or not z:
            raise error_at(src, "each [[zip]] needs name = [values] lines", line=line)
        _check_lists(src, z, line, seen)
        lengths = {len(v) for v in z.values()}
        if len(lengths) > 1:
            raise error_at(src, "the lists of a [[zip]] must have the same length "
                           f"(got {', '.join(f'{k}: {len(v)}' for k, v in z.items())})", line=line,
                           suggestion="a [[zip]] advances its lists together; use [grid] for a cross product")
        zips.append((z, line))
    return _Axes(grid, grid_line, zips)


def _check_lists(src: SourceMap, table: dict, line: int, seen: set[str]) -> None:
    for k, v in table.items():
        good = isinstance(v, list) and v and all(
            isinstance(x, int | float | str) and not isinstance(x, bool) for x in v)
        if not good:
            raise key_error(src, f"{k} must be a non-empty list of numbers or strings", k, line,
                            expected=f"{k} = [100, 200, 400]")
        if k in seen:
            raise key_error(src, f"{k} is swept twice", k, line, suggestion="sweep each parameter once")
        seen.add(k)
