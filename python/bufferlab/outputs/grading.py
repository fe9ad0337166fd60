"""Expectations evaluated on a run's results, and the files a grade writes (docs/teaching.md).

The values come from the results folder: summary.json's per-part ``results`` (goodput,
retransmits, ping RTTs, drops, peak backlog), the pings' own output for RTT percentiles and
the ``flows`` records for flow completion times, so an expectation reads exactly the
numbers ``bufferlab run`` printed. A value the run cannot give (no iperf3 client on the
node in that part, a queue that was not traced, a part that does not exist) fails the
expectation with a message saying why, never an exception. A part that ended early (an
error, a signal, ``--max-wall``) is measured all the same, on what ended in it, and says so.

Written: ``expectations.json`` and an ``expectations`` entry in summary.json (every value,
per part), and a Gradescope ``results.json`` (its autograder specification: top-level
``score`` and ``output``, and ``tests`` of ``name``, ``score``, ``max_score``, ``status``,
``output``, ``visibility``). Nothing in them depends on the wall clock or the machine, so
the same submission and seed give byte-identical files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..safefs import write_json_atomic
from ..scenario.expect import FUNCTIONS, Expectation, Names, check_args
from ..scenario.params import ExprError, Function, Value, _Tok, evaluate_calls
from .fct import quantile, read_fct_csv
from .results import _ping_runs, read_capped


class Missing(Exception):
    """A value the run does not have (the expectation fails, saying why)."""


@dataclass
class Outcome:
    """One expectation evaluated: its value in each part and whether it held in each."""

    x: Expectation
    passed: bool
    score: float
    values: dict[str, float | None] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    @property
    def output(self) -> str:
        text = "\n".join(self.lines)
        if not self.passed and self.x.hint:
            text += f"\nhint: {self.x.hint}"
        return text


def _fmt(v: Value) -> str:
    if isinstance(v, float):
        return f"{v:.6g}" if abs(v) < 1e6 else f"{v:.0f}"
    return str(v)


def run_names(summary: dict[str, Any]) -> Names:
    """The nodes, interfaces and parts of a finished run (its summary.json)."""
    topo = summary.get("topology") or {}
    nodes = {n["name"] for n in topo.get("nodes", []) if isinstance(n, dict) and "name" in n}
    ifaces = {end["intf"] for lk in topo.get("links", []) for end in (lk.get("a"), lk.get("b"))
              if isinstance(end, dict) and end.get("intf")}
    ifaces |= set(summary.get("interfaces", {}))
    return Names(nodes, ifaces, [p["name"] for p in summary.get("parts", [])])


class PartData:
    """The functions of FUNCTIONS over one part of a results folder."""

    def __init__(self, root: Path, part: dict[str, Any], names: Names) -> None:
        self.root = root
        self.part = part
        self.res = part.get("results") or {}
        self.names = names
        #: (call as written, value, unit) of every call made, for the output
        self.calls: list[tuple[str, Value, str]] = []

    def functions(self) -> dict[str, Function]:
        def make(fname: str) -> Function:
            kind, unit, _ = FUNCTIONS[fname]

            def f(t: _Tok, args: list[tuple[Value, int]]) -> Value:
                try:
                    check_args(fname, kind, t, args, self.names)
                except ExprError as e:  # a name the run lacks: the submission's, not the rubric's
                    raise Missing(e.message) from None
                v = getattr(self, "_" + fname)(*[a for a, _ in args])
                if kind in ("node", "iface"):
                    self.calls.append((f'{fname}("{args[0][0]}")', v, unit))
                return v
            return f
        return {n: make(n) for n in FUNCTIONS}

    # ---------------------------------------------------------------- iperf3
    def _iperf3(self, node: str, key: str, what: str) -> float:
        rows = [r for r in self.res.get("iperf3", []) if r.get("node") == node]
        if not rows:
            raise Missing(f"no iperf3 client on {node} ended in part {self.part['name']}")
        vals = [r[key] for r in rows if r.get(key) is not None]
        if not vals:
            errors = "; ".join(str(r["error"]) for r in rows if r.get("error"))
            raise Missing(f"{node}'s iperf3 client reported no {what}" + (f" ({errors})" if errors else ""))
        return sum(vals)

    def _goodput(self, node: str) -> float:
        return round(self._iperf3(node, "goodput_mbps", "goodput"), 2)

    def _retransmits(self, node: str) -> float:
        return self._iperf3(node, "retransmits", "retransmits (UDP?)")

    def _lost(self, node: str) -> float:
        return self._iperf3(node, "lost", "lost datagrams (TCP?)")

    # ---------------------------------------------------------------- ping
    def _pings(self, node: str) -> list[dict[str, Any]]:
        rows = [r for r in self.res.get("ping", []) if r.get("node") == node]
        if not rows:
            raise Missing(f"no ping on {node} ended in part {self.part['name']}")
        if not any(r.get("received") for r in rows):
            raise Missing(f"{node}'s ping got no reply in part {self.part['name']}")
        return [r for r in rows if r.get("received")]

    def _ping_min(self, node: str) -> float:
        return min(r["min_ms"] for r in self._pings(node))

    def _ping_max(self, node: str) -> float:
        return max(r["max_ms"] for r in self._pings(node))

    def _ping_avg(self, node: str) -> float:
        rows = self._pings(node)
        return round(sum(r["avg_ms"] * r["received"] for r in rows) / sum(r["received"] for r in rows), 3)

    def _ping_loss(self, node: str) -> float:
        rows = [r for r in self.res.get("ping", []) if r.get("node") == node]
        tx = sum(r.get("transmitted") or 0 for r in rows)
        if not tx:
            raise Missing(f"no ping on {node} sent a request in part {self.part['name']}")
        return round(100 * (tx - sum(r.get("received") or 0 for r in rows)) / tx, 2)

    def _rtts(self, node: str) -> list[float]:
        self._pings(node)
        folder = self.root / self.part["name"] / node
        rtts: list[float] = []
        files = sorted(f for f in folder.rglob("*") if f.is_file()) if folder.is_dir() else []
        for f in files:
            try:
                text = read_capped(f)
            except (OSError, ValueError):
                continue
            if "PING " in text:
                rtts += [rtt for run in _ping_runs(text, "", "", node) for _, _, rtt in run.replies]
        if not rtts:
            raise Missing(f"{node}'s pings printed no reply lines in part {self.part['name']} (ping -q?)")
        return rtts

    def _ping_p50(self, node: str) -> float:
        return round(quantile(self._rtts(node), 0.5) or 0.0, 3)

    def _ping_p99(self, node: str) -> float:
        return round(quantile(self._rtts(node), 0.99) or 0.0, 3)

    # ---------------------------------------------------------------- queues
    def _queue(self, iface: str) -> dict[str, Any] | None:
        return next((q for q in self.res.get("qdiscs", []) if q.get("interface") == iface), None)

    def _drops(self, iface: str) -> float:
        q = self._queue(iface)
        return q["dropped"] if q else 0

    def _peak(self, iface: str, key: str) -> float:
        q = self._queue(iface)
        if q is None or q.get(key) is None:
            raise Missing(f"the queue of {iface} was not traced in part {self.part['name']}: add "
                          f'"admin: plot_q.sh {iface} &" to the part or [trace] queues = ["{iface}"]')
        return q[key]

    def _peak_backlog(self, iface: str) -> float:
        return self._peak(iface, "peak_backlog_bytes")

    def _peak_backlog_packets(self, iface: str) -> float:
        return self._peak(iface, "peak_backlog_packets")

    # ---------------------------------------------------------------- flows
    def _fcts(self, node: str) -> list[float]:
        out: list[float] = []
        found = False
        for rel in self.part.get("fct", []):
            pieces = Path(rel).parts
            if len(pieces) > 2 and pieces[1] == node:
                found = True
                try:
                    rows = read_fct_csv(self.root / rel)
                except (OSError, KeyError, ValueError) as e:
                    raise Missing(f"cannot read {rel}: {e}") from None
                out += [r["fct_s"] * 1e3 for r in rows if r["completed"] and r["fct_s"] is not None]
        if not found:
            raise Missing(f"no flows -c on {node} ended in part {self.part['name']}")
        if not out:
            raise Missing(f"no flow of {node}'s flows -c completed in part {self.part['name']}")
        return out

    def _fct_avg(self, node: str) -> float:
        fcts = self._fcts(node)
        return round(sum(fcts) / len(fcts), 3)

    def _fct_p50(self, node: str) -> float:
        return round(quantile(self._fcts(node), 0.5) or 0.0, 3)

    def _fct_p99(self, node: str) -> float:
        return round(quantile(self._fcts(node), 0.99) or 0.0, 3)

    # ---------------------------------------------------------------- numbers
    def _jain(self, *xs: float) -> float:
        sq = sum(x * x for x in xs)
        if sq == 0:
            raise Missing("jain(): every argument is 0, so fairness is undefined")
        return round(sum(xs) ** 2 / (len(xs) * sq), 4)

    def _min(self, *xs: float) -> float:
        return min(xs)

    def _max(self, *xs: float) -> float:
        return max(xs)

    def _abs(self, x: float) -> float:
        return abs(x)


def evaluate(root: Path, summary: dict[str, Any], expectations: list[Expectation],
             params: dict[str, Value] | None = None) -> list[Outcome]:
    """Each expectation in each of its parts (every part of the run when it names none)."""
    names = run_names(summary)
    by_name = {p["name"]: p for p in summary.get("parts", [])}
    outcomes = []
    for x in expectations:
        parts = x.parts or list(by_name)
        o = Outcome(x, True, 0.0)
        if not parts:
            o.passed = False
            o.lines.append("the run has no parts")
        for pname in parts:
            ok, line, value = _one(root, by_name.get(pname), pname, x, names, params or {})
            o.values[pname] = value
            o.lines.append(f"part {pname}: {line}")
            o.passed = o.passed and ok
        o.score = x.points if o.passed else 0
        outcomes.append(o)
    return outcomes


def _one(root: Path, part: dict[str, Any] | None, pname: str, x: Expectation, names: Names,
         params: dict[str, Value]) -> tuple[bool, str, float | None]:
    """(held, what to print, the value) of ``x`` in one part."""
    if part is None:
        return False, f"the run has no part named {pname!r} (parts: {', '.join(names.parts or [])})", None
    ok, line, value = _measure(root, part, x, names, params)
    why = part.get("error") or part.get("interrupted") or part.get("stopped")
    if why:  # what ended before it still counts, as the run printed it
        line += f" (the part ended early: {why})"
    return ok, line, value


def _measure(root: Path, part: dict[str, Any], x: Expectation, names: Names,
             params: dict[str, Value]) -> tuple[bool, str, float | None]:
    data = PartData(root, part, names)
    try:
        v = evaluate_calls(x.expr, params, data.functions())
    except Missing as e:
        return False, f"{x.expr}: {e}: FAIL", None
    except ExprError as e:
        return False, f"{x.expr}: {e.message}: FAIL", None
    if isinstance(v, str):
        return False, f"{x.expr} is the string {v!r}, not a number: FAIL", None
    value = float(v)
    seen = list(dict.fromkeys(data.calls))  # each call once, in the order written
    calls = ", ".join(f"{c} = {_fmt(cv)}{' ' + u if u else ''}" for c, cv, u in seen)
    if x.min is None and x.max is None:
        ok = bool(v)
        line = f"{x.expr} is {'true' if ok else 'false'}" + (f" ({calls})" if calls else "")
    else:
        ok = (x.min is None or value >= x.min) and (x.max is None or value <= x.max)
        shown = calls if len(seen) == 1 and seen[0][0] == x.expr.strip() else \
            f"{x.expr} = {_fmt(v)}" + (f" ({calls})" if calls else "")
        line = f"{shown}, expected {x.bounds_text()}"
    return ok, f"{line}: {'pass' if ok else 'FAIL'}", value


@dataclass
class Requirement:
    """A rubric's ``[require]`` check on a submission (a Gradescope test of 0 points)."""

    name: str
    passed: bool
    output: str


def expectations_doc(outcomes: list[Outcome], requirements: list[Requirement] | None = None,
                     error: str | None = None, notes: list[str] | None = None) -> dict[str, Any]:
    """expectations.json (and summary.json's ``expectations``): every value, per part. A broken
    requirement scores 0; an ``error`` (the submission did not load, its run or script ended
    in an error) is said, and what was measured before it still counts."""
    reqs = requirements or []
    broken = any(not r.passed for r in reqs)
    score = 0 if broken else sum(o.score for o in outcomes)
    return {
        "score": score,
        "max_score": sum(o.x.points for o in outcomes),
        "passed": sum(o.passed for o in outcomes),
        "failed": sum(not o.passed for o in outcomes),
        **({"error": error} if error is not None else {}),
        **({"notes": notes} if notes else {}),
        "requirements": [vars(r) for r in reqs],
        "expectations": [
            {"name": o.x.name, "expr": o.x.expr, "parts": o.x.parts or "all", "min": o.x.min, "max": o.x.max,
             "points": o.x.points, "score": o.score if not broken else 0, "passed": o.passed,
             "values": o.values, "output": o.output, "hint": o.x.hint, "visibility": o.x.visibility,
             "where": o.x.where}
            for o in outcomes],
    }


def gradescope_doc(doc: dict[str, Any], title: str) -> dict[str, Any]:
    """results.json in Gradescope's autograder format from :func:`expectations_doc`."""
    tests = [{"name": f"required: {r['name']}", "score": 0, "max_score": 0,
              "status": "passed" if r["passed"] else "failed", "output": r["output"], "visibility": "visible"}
             for r in doc["requirements"]]
    tests += [{"name": e["name"], "score": e["score"], "max_score": e["points"],
               "status": "passed" if e["passed"] else "failed", "output": e["output"],
               "visibility": e["visibility"]} for e in doc["expectations"]]
    head = [f"{title}: {doc['passed']} of {doc['passed'] + doc['failed']} expectations met, "
            f"{_fmt(doc['score'])}/{_fmt(doc['max_score'])} points"]
    if doc.get("error"):
        head.append(f"Error: {doc['error']}")
    if any(not r["passed"] for r in doc["requirements"]):
        head.append("A requirement is not met (see the required: tests), so the score is 0.")
    head += doc.get("notes", [])
    return {"score": doc["score"], "output": "\n".join(head), "tests": tests}


def text(doc: dict[str, Any]) -> str:
    """What ``bufferlab run``/``grade`` print (stdout)."""
    n = doc["passed"] + doc["failed"]
    points = f"{_fmt(doc['score'])}/{_fmt(doc['max_score'])} points"
    out = [f"expectations: {doc['passed']} of {n} passed, {points}"]
    if doc.get("error"):
        out.append(f"  error: {doc['error']}")
    out += [f"  {n}" for n in doc.get("notes", [])]
    for r in doc["requirements"]:
        first, *rest = r["output"].splitlines() or [""]
        out.append(f"  {'pass' if r['passed'] else 'FAIL'}  required: {r['name']}: {first}")
        out += [f"        {ln}" for ln in rest]
    for e in doc["expectations"]:
        lines = e["output"].splitlines() or [""]
        mark = "pass" if e["passed"] else "FAIL"
        out.append(f"  {mark}  {_fmt(e['score'])}/{_fmt(e['points'])}  {e['name']}")
        out += [f"        {ln}" for ln in lines]
    return "\n".join(out)


def write_files(root: Path, doc: dict[str, Any], title: str, results_json: Path | None = None) -> list[Path]:
    """expectations.json, summary.json's ``expectations`` (if the run wrote one) and results.json."""
    written = []
    write_json_atomic(root / "expectations.json", doc)
    written.append(root / "expectations.json")
    summ = root / "summary.json"
    if summ.is_file():
        summary = json.loads(read_capped(summ))
        summary["expectations"] = doc
        write_json_atomic(summ, summary)
    out = results_json or root / "results.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out, gradescope_doc(doc, title))
    written.append(out)
    return written


def check_run(root: Path, summary: dict[str, Any], expectations: list[Expectation], params: dict[str, Value],
              title: str, result: Any = print) -> bool:
    """A scenario's ``[[expect]]`` entries checked on its run (``bufferlab run``, ``bufferlab.run``):
    written to summary.json, expectations.json and results.json, their text handed to ``result``.
    Whether all held (True when there are none)."""
    if not expectations:
        return True
    doc = expectations_doc(evaluate(root, summary, expectations, params))
    write_files(root, doc, title)
    result(text(doc))
    return not doc["failed"]
