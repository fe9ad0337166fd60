"""``bufferlab.run(...)`` and the ``%%bufferlab`` cell magic: a scenario run from Python or a
notebook, its results returned as a :class:`~bufferlab.outputs.notebook.Results`.

``bufferlab.run`` is the package ``bufferlab.run`` itself, made callable (run/__init__.py):
``import bufferlab.run.scheduler`` and ``bufferlab.run(...)`` both work, whichever comes
first. A run here is ``bufferlab run``'s: the same runner, results folder (``results/``
unless ``output`` says otherwise), tables, report and ``[[expect]]`` checks.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..errors import BufferlabError
from ..outputs.grading import check_run
from ..outputs.notebook import Results
from ..outputs.report import after_run
from ..scenario.expect import scenario_expectations
from ..scenario.load import Scenario, load_scenario
from ..scenario.params import Override, parse_set
from .scheduler import Runner


def _scenario(source: str | Path, params: dict[str, Any], name: str) -> Scenario:
    overrides = [Override(k, v, "bufferlab.run") for k, v in params.items()]
    if isinstance(source, str) and ("\n" in source or "[[part]]" in source):
        return load_scenario(Path(name), overrides, source=source)
    return load_scenario(Path(source), overrides)


def run(source: str | Path, /, *, output: str | Path = "results", seed: int | None = None,
        report: bool = True, quiet: bool = False, **params: Any) -> Results:
    """Run a scenario and return its results.

    Args:
        source: a scenario file, or a scenario's text (a string of several lines).
        output: the results folder (``results/<scenario>/`` goes into it), as ``run -o``.
        seed: overrides the scenario's seed.
        report: write report.html too.
        quiet: print nothing (else each part's result lines, as ``bufferlab run`` prints them).
        **params: values for the scenario's ``[params]`` (as ``--set name=value``).

    Returns:
        The :class:`Results` of the run (shown inline in a notebook).

    Raises:
        ScenarioError, CommandError: a mistake in the scenario (nothing run).
        KeyboardInterrupt: the kernel was interrupted (the finished parts, the tables and the
            report are written first, as after Ctrl-C in ``bufferlab run``).
    """
    sc = _scenario(source, params, "<text>")
    return _run(sc, Path(output), seed, report, quiet)


def _run(sc: Scenario, output: Path, seed: int | None, report: bool, quiet: bool) -> Results:
    if seed is not None:
        sc.seed = seed
    expectations = scenario_expectations(sc)
    say = (lambda s: None) if quiet else print
    r = Runner(sc, output, progress=False, echo=say, result=say)
    r.check()
    output.mkdir(parents=True, exist_ok=True)
    try:
        summary = r.run()
    except KeyboardInterrupt:
        after_run(r.root, report=report)
        raise
    check_run(r.root, summary, expectations, sc.params, sc.name, say)
    after_run(r.root, report=report, echo=say)
    for f in r.failures:
        print(f, file=sys.stderr)
    return Results(r.root)


def _magic_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%bufferlab", description="Run the scenario written in the cell.")
    p.add_argument("-o", "--output", default="results", help="results folder (default: results)")
    p.add_argument("--seed", type=int, help="override the scenario's seed")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="a value for the scenario's [params] (repeatable)")
    p.add_argument("--name", metavar="VAR", help="also store the Results in this variable")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing while it runs")
    p.add_argument("--no-report", action="store_true", help="write the tables but not report.html")
    return p


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext bufferlab``: registers the ``%%bufferlab`` cell magic."""

    def bufferlab(line: str, cell: str) -> Results | None:
        try:
            args = _magic_parser().parse_args(shlex.split(line))
        except SystemExit:
            return None  # argparse printed the usage
        try:
            params = dict(parse_set(s) for s in args.set)
            sc = _scenario(cell if "\n" in cell else cell + "\n", params, "<cell>")
            res = _run(sc, Path(args.output), args.seed, not args.no_report, args.quiet)
        except (BufferlabError, ValueError) as e:
            print(str(e), file=sys.stderr)  # the mistake, its line and column: no traceback
            return None
        if args.name:
            ipython.user_ns[args.name] = res
        return res

    ipython.register_magic_function(bufferlab, magic_kind="cell", magic_name="bufferlab")
