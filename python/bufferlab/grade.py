"""``bufferlab grade SUBMISSION --rubric RUBRIC.toml``: run a student's scenario or Mininet
script and check the rubric's expectations on its results (docs/teaching.md).

A rubric's own mistakes (a bad expression, an unknown function, a part or node its required
topology lacks) are errors with their position, exit status 2, before anything runs. A
submission's are the student's: one that does not load, breaks a requirement, fails a
command or crashes is still graded, with score 0 where it must be and a message saying
why, so an autograder always gets its results.json. Exit status 0 when every requirement
and expectation holds, 4 otherwise.

results.json is written as soon as the expectations are evaluated, before the tables and
the report (which an autograder does not read).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .errors import BufferlabError
from .mininet.script import run_script
from .outputs import grading
from .outputs.report import after_run
from .outputs.results import read_capped
from .results_folder import FolderError, acquire
from .run.scheduler import Runner, signals_deferred, signals_raise
from .safefs import figures_later
from .scenario.expect import Rubric, forbidden_keys, load_rubric
from .scenario.load import Scenario, _slug, load_scenario
from .scenario.topology import build_topology

#: exit status of a grade whose expectations or requirements failed (cli.py's for a run)
EXIT_EXPECTATIONS = 4


def topology_key(nodes: list[dict[str, Any]], links: list[dict[str, Any]],
                 tclink: list[Any]) -> dict[str, list[str]]:
    """A topology as comparable text: its nodes, links (ends, interfaces, addresses) and
    TCLink qdiscs, each sorted, so the order things were declared in does not matter."""
    return {"nodes": sorted(f"{n.get('name')} ({n.get('kind')})" for n in nodes),
            "links": sorted(json.dumps(lk, sort_keys=True) for lk in links),
            "tclink": sorted(json.dumps(c) for c in tclink)}


def scenario_topology(sc: Scenario) -> dict[str, list[str]]:
    topo = build_topology(sc)
    return topology_key(topo.engine_config["nodes"], topo.engine_config["links"],
                        [list(c) for c in topo.tclink_commands])


def _topology_requirement(rubric: Rubric, got: dict[str, list[str]],
                          settings: bool = True) -> grading.Requirement:
    """The submission's topology against the rubric's scenario: nodes and links (ends,
    interfaces, addresses), and with ``settings`` the TCLink qdiscs (a Mininet script types
    them as tc lines while it runs, so its summary does not list them)."""
    assert rubric.topology is not None
    want = scenario_topology(load_scenario(rubric.topology))
    diffs = []
    kinds = (("nodes", "nodes"), ("links", "links"), ("tclink", "TCLink settings"))
    for k, what in kinds if settings else kinds[:2]:
        missing = [x for x in want[k] if x not in got[k]]
        extra = [x for x in got[k] if x not in want[k]]
        if missing:
            diffs.append(f"{what} missing: {'; '.join(missing)}")
        if extra:
            diffs.append(f"{what} not in the handout's topology: {'; '.join(extra)}")
    name = f"the topology is {rubric.topology.name}'s"
    same = "same nodes, links and link settings" if settings else "same nodes and links"
    return grading.Requirement(name, not diffs, "\n".join(diffs) or same)


def _part_requirements(rubric: Rubric, parts: list[str]) -> list[grading.Requirement]:
    return [grading.Requirement(f"part {p}", p in parts,
                                "present" if p in parts else
                                f"the submission has no part named {p!r} (its parts: {', '.join(parts)})")
            for p in rubric.parts]


def grade(submission: Path, rubric_path: Path, output: Path, seed: int | None = None,
          results_json: Path | None = None, report: bool = True, quiet: bool = False) -> int:
    """Grade ``submission`` (a scenario .toml or a Mininet .py) with the rubric; 0 or 4."""
    rubric = load_rubric(rubric_path)  # the instructor's mistakes: exit 2, nothing written
    echo: Callable[[str], None] = (lambda s: None) if quiet else (lambda s: print(s, file=sys.stderr))
    if submission.suffix.lower() == ".py":
        root, doc = _grade_script(submission, rubric, output, seed, report)
        written = grading.write_files(root, doc, rubric.name, results_json)
    else:
        with figures_later():  # the run's figures, then its tables and report, after results.json
            root, doc, finish = _grade_scenario(submission, rubric, output, seed, quiet, echo)
            written = grading.write_files(root, doc, rubric.name, results_json)
        if finish is not None:
            with signals_deferred():
                after_run(finish, report=report, echo=echo)
    print(grading.text(doc))
    for p in written:
        print(p)
    ok = not doc.get("error") and not doc["failed"] and all(r["passed"] for r in doc["requirements"])
    return 0 if ok else EXIT_EXPECTATIONS


def _grade_scenario(path: Path, rubric: Rubric, output: Path, seed: int | None, quiet: bool,
                    echo: Callable[[str], None]) -> tuple[Path, dict[str, Any], Path | None]:
    """(results folder, expectations document, folder whose tables are still to write)."""
    try:
        sc = load_scenario(path)
        sc.seed = seed if seed is not None else rubric.seed if rubric.seed is not None else sc.seed
        reqs = _part_requirements(rubric, [p.name for p in sc.parts])
        if rubric.topology is not None:
            reqs.append(_topology_requirement(rubric, scenario_topology(sc)))
        found = forbidden_keys(sc.text, rubric.forbid)
        if rubric.forbid:
            reqs.append(grading.Requirement(
                "settings left as given", not found,
                f"the submission sets {', '.join(found)}, which this assignment fixes" if found
                else "none of " + ", ".join(rubric.forbid) + " is set"))
        r = Runner(sc, output, progress=False, echo=echo, result=(lambda s: None) if quiet else print)
        r.check()
    except BufferlabError as e:  # the submission does not load: graded 0, with the message
        root = output / _slug(path.stem)
        root.mkdir(parents=True, exist_ok=True)
        return root, grading.expectations_doc(_none(rubric), error=_short(e, path)), None
    signals_raise()
    r.root.parent.mkdir(parents=True, exist_ok=True)
    acquire(r.root)
    error = None
    try:
        summary = r.run()
    except FolderError:  # -o leads to a folder bufferlab may not replace: the grader's mistake
        raise
    except BufferlabError as e:
        error = _short(e, path)
    except KeyboardInterrupt:
        raise
    except Exception as e:  # an engine error in a part: what ran is graded, the error said
        error = f"{type(e).__name__}: {e}"
    if error is not None:
        summ = r.root / "summary.json"
        if not summ.is_file():
            return r.root, grading.expectations_doc(_none(rubric), reqs, error), None
        summary = json.loads(read_capped(summ))
    # failed commands are said, not scored: the expectations judge what the run achieved
    notes = [f"command failed: {_relative(str(f), path)}" for f in r.failures if not f.allowed]
    outcomes = grading.evaluate(r.root, summary, rubric.expectations)
    return r.root, grading.expectations_doc(outcomes, reqs, error, notes), r.root


def _grade_script(path: Path, rubric: Rubric, output: Path, seed: int | None,
                  report: bool) -> tuple[Path, dict[str, Any]]:
    """A Mininet script run as ``bufferlab mininet`` runs it, then graded."""
    chosen = seed if seed is not None else rubric.seed if rubric.seed is not None else 1
    status = run_script(path, [], output, chosen, report=report)
    root = output.resolve() / path.resolve().stem
    summ = root / "summary.json"
    if not summ.is_file():
        return root, grading.expectations_doc(_none(rubric), error=f"the script exited with status {status} "
                                              "before it started a network")
    summary = json.loads(read_capped(summ))
    reqs = _part_requirements(rubric, [p["name"] for p in summary.get("parts", [])])
    if rubric.topology is not None:
        t = summary.get("topology") or {}
        reqs.append(_topology_requirement(rubric, topology_key(t.get("nodes", []), t.get("links", []), []),
                                          settings=False))
    error = summary.get("error") or (f"the script exited with status {status}" if status else None)
    outcomes = grading.evaluate(root, summary, rubric.expectations)
    return root, grading.expectations_doc(outcomes, reqs, error)


def _none(rubric: Rubric) -> list[grading.Outcome]:
    """Every expectation failed: the submission never ran."""
    return [grading.Outcome(x, False, 0, lines=["not evaluated: the submission did not run"])
            for x in rubric.expectations]


def _relative(text: str, path: Path) -> str:
    """A message with the submission's absolute path shortened to its name (results.json is
    the same wherever the autograder keeps the file)."""
    return text.replace(str(path.resolve()), path.name).replace(str(path), path.name)


def _short(e: BaseException, path: Path) -> str:
    return _relative(str(e), path)
