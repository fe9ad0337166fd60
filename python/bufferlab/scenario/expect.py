"""Expectations: a scenario's ``[[expect]]`` entries and a grading rubric (docs/teaching.md).

An expectation names an expression over a part's results, written in the ``[params]``
expression language (scenario/params.py) with the functions of :data:`FUNCTIONS` added::

    [[expect]]
    name = "goodput near line rate with a 1·BDP buffer"
    part = "1bdp"                 # or a list of parts; omitted: every part
    expr = 'goodput("h1")'        # Mbit/s
    min = 900                     # a range (min and/or max) ...
    points = 2
    hint = "is the tbf limit 2621440 bytes?"

    [[expect]]
    name = "bufferbloat"
    part = "10bdp"
    expr = 'ping_avg("h2") >= 150'   # ... or a comparison (and/or/not)
    points = 3

Everything a run need not happen for is checked here, before it (``bufferlab check``): the
keys and their types, the expression's syntax, its functions and their arguments' kinds,
the nodes and interfaces it names (against the scenario's topology) and the parts. Each
error is positioned at the file's line and column. outputs/grading.py evaluates them
after the run.

An expectation holds in a part when its value lies in ``[min, max]`` (either bound may be
left out) or, without bounds, when its comparison is true. Without ``part`` it is checked
in every part of the run and holds when it holds in each; its points are all or nothing.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ScenarioError
from .load import Scenario, load_scenario, read_toml
from .params import ExprError, Function, Value, _Tok, _tokens, evaluate_calls, shorten
from .source import SourceMap, check_keys, error_at, key_error, suggest
from .topology import build_topology

EXPECT_KEYS = {"name", "expr", "part", "min", "max", "points", "hint", "visibility"}
#: a rubric (``bufferlab grade --rubric``): its own keys, and those of its ``[require]`` table
RUBRIC_KEYS = {"name", "seed", "expect", "require"}
REQUIRE_KEYS = {"parts", "topology", "forbid"}
#: Gradescope's visibilities of a test (its autograder results.json specification)
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")

#: function -> (kind of its arguments, unit, meaning); "node": one node name, "iface": one
#: interface name, "numbers": one or more numbers
FUNCTIONS: dict[str, tuple[str, str, str]] = {
    "goodput": ("node", "Mbit/s", "goodput of the node's iperf3 (and iperf) clients that ended in the part, "
                "summed (summary.json `results.iperf3`)"),
    "retransmits": ("node", "segments", "TCP retransmissions of those clients, summed"),
    "lost": ("node", "datagrams", "UDP datagrams those clients lost, summed"),
    "ping_min": ("node", "ms", "the smallest RTT of the node's pings in the part"),
    "ping_avg": ("node", "ms", "the mean RTT of the replies of the node's pings in the part"),
    "ping_max": ("node", "ms", "the largest RTT of the node's pings in the part"),
    "ping_p50": ("node", "ms", "the median RTT of the replies (from the pings' output)"),
    "ping_p99": ("node", "ms", "the 99th percentile RTT of the replies (from the pings' output)"),
    "ping_loss": ("node", "%", "the requests of the node's pings left unanswered"),
    "drops": ("iface", "packets", "packets the interface's qdiscs dropped in the part (0 when none)"),
    "peak_backlog": ("iface", "bytes", "peak backlog of the interface's qdiscs (needs a queue trace: "
                     "plot_q.sh or [trace] queues)"),
    "peak_backlog_packets": ("iface", "packets", "peak backlog in packets (needs a queue trace)"),
    "fct_avg": ("node", "ms", "mean flow completion time of the node's `flows -c` (completed flows)"),
    "fct_p50": ("node", "ms", "median flow completion time"),
    "fct_p99": ("node", "ms", "99th percentile flow completion time"),
    "jain": ("numbers", "", "Jain's fairness index (Σx)² / (n·Σx²) of its arguments, 0 to 1"),
    "min": ("numbers", "", "the smallest argument"),
    "max": ("numbers", "", "the largest argument"),
    "abs": ("number", "", "the absolute value"),
}


@dataclass
class Expectation:
    """One ``[[expect]]`` entry, validated."""

    name: str
    expr: str
    #: the parts it is checked in; empty: every part of the run
    parts: list[str]
    min: float | None
    max: float | None
    points: float
    hint: str | None
    visibility: str
    #: FILE:LINE:COL of its expression, for messages
    where: str
    #: (line, 1-based column of each character of expr), for errors found after loading
    line: int = 0
    cols: list[int] = field(default_factory=list)

    def bounds_text(self) -> str:
        """``in [900, 1000]``, ``≥ 900``, ``≤ 50`` or ``true``: what passing means."""
        if self.min is not None and self.max is not None:
            return f"in [{_num(self.min)}, {_num(self.max)}]"
        if self.min is not None:
            return f"≥ {_num(self.min)}"
        if self.max is not None:
            return f"≤ {_num(self.max)}"
        return "true"


def _num(v: float) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


@dataclass
class Rubric:
    """A rubric file: expectations, and what a submission must keep."""

    path: Path
    name: str
    seed: int | None
    expectations: list[Expectation]
    #: parts the submission must have
    parts: list[str]
    #: a scenario whose topology the submission's must equal (None: any topology)
    topology: Path | None
    #: top-level tables or dotted keys (``sim.gso``) a submission's scenario must not set
    forbid: list[str]


class Names:
    """The nodes, interfaces and parts an expectation may name; None: unknown before the run
    (a Mininet script builds its topology as it runs), checked when it is evaluated."""

    def __init__(self, nodes: set[str] | None, ifaces: set[str] | None, parts: list[str] | None) -> None:
        self.nodes = nodes
        self.ifaces = ifaces
        self.parts = parts

    @classmethod
    def of(cls, sc: Scenario) -> Names:
        topo = build_topology(sc)
        return cls(set(sc.hosts + sc.switches + sc.routers), {i.name for i in topo.interfaces},
                   [p.name for p in sc.parts])


def check_functions(names: Names) -> dict[str, Function]:
    """FUNCTIONS as the parser calls them while checking: each argument's kind and name
    checked (an :class:`ExprError` at the argument), the value a stand-in 1."""
    def make(fname: str, kind: str) -> Function:
        def f(t: _Tok, args: list[tuple[Value, int]]) -> Value:
            check_args(fname, kind, t, args, names)
            return 1
        return f
    return {n: make(n, kind) for n, (kind, _, _) in FUNCTIONS.items()}


def check_args(fname: str, kind: str, t: _Tok, args: list[tuple[Value, int]], names: Names) -> None:
    """The arguments of ``fname``: their number and kind, the node or interface named."""
    if kind in ("node", "iface", "number") and len(args) != 1:
        what = {"node": 'a node name, e.g. goodput("h1")',
                "iface": 'an interface name, e.g. drops("s1-eth2")', "number": "one number"}[kind]
        raise ExprError(f"{fname} takes one argument, not {len(args)}", t.at, expected=what)
    if kind == "numbers" and not args:
        raise ExprError(f"{fname} needs at least one argument", t.at,
                        expected=f'numbers, e.g. {fname}(goodput("h1"), goodput("h2"))')
    if kind in ("node", "iface"):
        v, at = args[0]
        if not isinstance(v, str):
            raise ExprError(f"{fname} takes a quoted {'node' if kind == 'node' else 'interface'} name", at,
                            expected=f'{fname}("h1")' if kind == "node" else f'{fname}("s1-eth2")')
        known = names.nodes if kind == "node" else names.ifaces
        if known is not None and v not in known:
            raise ExprError(f"the scenario has no {'node' if kind == 'node' else 'interface'} {v!r}", at,
                            expected="one of " + ", ".join(sorted(known)), suggestion=suggest(v, known))
        return
    for v, at in args:
        if isinstance(v, str):
            raise ExprError(f"{fname} takes numbers, not the string {v!r}", at,
                            expected=f'numbers, e.g. {fname}(goodput("h1"), goodput("h2"))')


def _is_condition(expr: str) -> bool:
    try:
        toks = _tokens(expr)
    except ExprError:
        return False
    return any((t.kind == "op" and t.text in ("<", "<=", ">", ">=", "==", "!=")) or
               (t.kind == "name" and t.text in ("and", "or", "not")) for t in toks)


def build_expectations(raw: Any, src: SourceMap, names: Names, params: dict[str, Value],
                       what: str = "[[expect]]") -> list[Expectation]:
    """The ``[[expect]]`` array of a scenario or rubric, validated (positioned errors)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise error_at(src, "expect must be an array of tables", key="expect",
                       expected='[[expect]]\nname = "..."\nexpr = \'goodput("h1")\'\nmin = 900')
    out: list[Expectation] = []
    seen: set[str] = set()
    for i, e in enumerate(raw):
        line = src.header_line("[[expect]]", i) or 0
        check_keys(src, e, EXPECT_KEYS, f"{what} {i + 1}", line=line)

        def err(message: str, key: str, **kw: Any) -> ScenarioError:
            return key_error(src, f"{what} {i + 1}: {message}", key, line, **kw)  # noqa: B023

        name = e.get("name")
        if not isinstance(name, str) or not name.strip():
            raise err("name must be a non-empty string", "name", expected='name = "goodput near line rate"')
        if name in seen:
            raise err(f"two expectations are named {name!r}; a grade lists each by its name", "name")
        seen.add(name)
        expr = e.get("expr")
        if not isinstance(expr, str) or not expr.strip():
            raise err("expr must be a non-empty string", "expr",
                      expected="an expression over the part's results, e.g. expr = 'goodput(\"h1\")'")
        bounds: list[float | None] = []
        for k in ("min", "max"):
            v = e.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int | float)):
                raise err(f"{k} must be a number", k, expected=f"{k} = 900")
            bounds.append(v)
        lo, hi = bounds
        if lo is not None and hi is not None and lo > hi:
            raise err(f"min = {lo} is above max = {hi}", "max", expected="min ≤ max")
        points = e.get("points", 1)
        if isinstance(points, bool) or not isinstance(points, int | float) or points < 0:
            raise err("points must be a non-negative number", "points", expected="points = 2")
        hint = e.get("hint")
        if hint is not None and not isinstance(hint, str):
            raise err("hint must be a string", "hint")
        vis = e.get("visibility", "visible")
        if vis not in VISIBILITIES:
            raise err(f"visibility {vis!r}", "visibility",
                      expected=" or ".join(f'"{v}"' for v in VISIBILITIES),
                      suggestion=suggest(str(vis), list(VISIBILITIES)))
        parts = _parts(e, names, err)
        # the expression's position, for its errors
        src.cursor = (max(line - 1, 0), 0)
        kpos = src.key_pos("expr", max(line - 1, 0))
        if kpos:
            src.cursor = (kpos[0] - 1, 0)
        pos = src.find_string_cols(expr)
        eline, cols = (pos[0], pos[1]) if pos and len(pos[1]) == len(expr) else ((kpos or (line, 1))[0], [])
        where = f"{src.file}:{eline}:{cols[0] if cols else (kpos[1] if kpos else 1)}"
        x = Expectation(name, expr, parts, lo, hi, points, hint, vis, where, eline, cols)
        check_expr(x, src.file, names, params)
        if lo is None and hi is None and not _is_condition(expr):
            raise err(f"expr {shorten(expr)!r} is a value, not a test", "expr",
                      expected="min and/or max for it, or a comparison such as "
                      "expr = 'ping_avg(\"h2\") >= 150'")
        if (lo is not None or hi is not None) and _is_condition(expr):
            raise err("a comparison with min/max", "expr",
                      expected="either a value with min/max, or a comparison without them")
        out.append(x)
    return out


def _parts(e: dict[str, Any], names: Names, err: Any) -> list[str]:
    raw = e.get("part", [])
    parts = [raw] if isinstance(raw, str) else raw
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise err("part must be a part's name or a list of them", "part", expected='part = "1bdp"')
    for p in parts:
        if names.parts is not None and p not in names.parts:
            raise err(f"no part named {p!r}", "part", expected="one of " + ", ".join(names.parts),
                      suggestion=suggest(p, names.parts))
    return parts


def check_expr(x: Expectation, file: str, names: Names, params: dict[str, Value]) -> None:
    """Parse ``x.expr`` with the checking functions: a ScenarioError at the offending character."""
    try:
        evaluate_calls(x.expr, params, check_functions(names))
    except ExprError as e:
        if e.message == "division by zero":  # the stand-in values, not the expression
            return
        raise expr_error(x, file, e) from None


def expr_error(x: Expectation, file: str, e: ExprError) -> ScenarioError:
    k = min(e.offset, max(len(x.expr) - 1, 0))
    col = x.cols[k] if k < len(x.cols) else None
    return ScenarioError(f"expectation {x.name!r}: in {shorten(x.expr)!r}: {e.message}", file=file,
                         line=x.line or None, col=col, expected=e.expected, suggestion=e.suggestion)


def scenario_expectations(sc: Scenario) -> list[Expectation]:
    """A loaded scenario's ``[[expect]]`` entries, checked against its topology and parts."""
    if "expect" not in sc.text:  # most scenarios: no second parse of the file
        return []
    data = tomllib.loads(sc.text)
    if "expect" not in data:
        return []
    src = SourceMap(sc.text, str(sc.path), sc.colmap)
    return build_expectations(data["expect"], src, Names.of(sc), sc.params)


def load_rubric(path: Path, against: Names | None = None) -> Rubric:
    """A rubric file (``bufferlab grade --rubric``), validated; its expectations are checked
    for syntax, functions and argument kinds, and against the topology it requires if any
    (or the scenario ``against``: ``bufferlab check SCENARIO --rubric RUBRIC``)."""
    text, data = read_toml(path, "rubric")
    file = str(path)
    src = SourceMap(text, file)
    check_keys(src, data, RUBRIC_KEYS, "the rubric")
    name = data.get("name", path.stem)
    if not isinstance(name, str):
        raise error_at(src, "name must be a string", key="name")
    seed = data.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64):
        raise error_at(src, "seed must be an integer from 0 to 2^64 - 1", key="seed", expected="seed = 1")
    req = data.get("require", {})
    line = src.header_line("[require]", 0)
    if not isinstance(req, dict):
        raise error_at(src, "require must be a table", key="require",
                       expected='[require]\nparts = ["1bdp"]')
    check_keys(src, req, REQUIRE_KEYS, "[require]", line=line)
    lists: list[list[str]] = []
    for k in ("parts", "forbid"):
        v = req.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
            raise key_error(src, f"[require] {k} must be a list of names", k, line,
                            expected='parts = ["1bdp", "10bdp"]' if k == "parts"
                            else 'forbid = ["sim", "hosts"]')
        lists.append(v)
    parts, forbid = lists
    topology = None
    names = Names(None, None, None)
    if "topology" in req:
        t = req["topology"]
        if not isinstance(t, str) or not t:
            raise key_error(src, "[require] topology must name a scenario file", "topology", line,
                            expected='topology = "../../scenarios/lab14-bufferbloat.toml"')
        topology = path.parent / t
        try:
            from_sc = load_scenario(topology)
        except ScenarioError as e:
            pos = src.key_pos("topology", (line or 1) - 1)
            raise ScenarioError(f"[require] topology: {e.message} ({e.file}"
                                f"{':' + str(e.line) if e.line else ''})", file=file,
                                line=pos[0] if pos else line, col=pos[1] if pos else None,
                                expected="a scenario file (TOML) that loads",
                                suggestion=e.suggestion) from None
        n = Names.of(from_sc)
        names = Names(n.nodes, n.ifaces, None)
    if against is not None:
        names = against
        for p in parts:
            if against.parts is not None and p not in against.parts:
                raise key_error(src, f"[require] parts names {p!r}, which the scenario lacks", "parts", line,
                                expected="one of " + ", ".join(against.parts),
                                suggestion=suggest(p, against.parts))
    expectations = build_expectations(data.get("expect"), src, names, {})
    return Rubric(path, name, seed, expectations, parts, topology, forbid)


def forbidden_keys(sc_text: str, forbid: list[str]) -> list[str]:
    """The entries of ``forbid`` (``sim``, ``sim.gso``, ``hosts.h1``) a scenario sets."""
    data = tomllib.loads(sc_text) if sc_text else {}
    found = []
    for key in forbid:
        node: Any = data
        for piece in re.split(r"\.", key):
            if not isinstance(node, dict) or piece not in node:
                break
            node = node[piece]
        else:
            found.append(key)
    return found
