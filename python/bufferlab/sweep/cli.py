"""``bufferlab sweep FILE.toml`` and ``bufferlab sweep plot DIR``; ``--set`` of run/check too."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import BufferlabError
from ..results_folder import acquire, claim
from ..safefs import ensure_dir, remove_tree
from ..scenario.params import Override, parse_set

if TYPE_CHECKING:
    from .runs import RunJob

# the runs, their tables (pandas) and the plots (matplotlib) are imported where a sweep
# uses them: add_set_option and add_sweep_parser build every `bufferlab` command line


def _set_arg(text: str) -> tuple[str, Any]:
    try:
        return parse_set(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_set_option(p: argparse.ArgumentParser,
                   help: str = "override a default of the scenario's [params] table (repeatable)") -> None:
    p.add_argument("--set", type=_set_arg, action="append", default=[], metavar="NAME=VALUE", help=help)


def set_overrides(pairs: list[tuple[str, Any]]) -> list[Override]:
    return [Override(k, v, "--set") for k, v in pairs]


def add_sweep_parser(sub: Any) -> None:
    p = sub.add_parser("sweep", help="run a scenario over parameter values and seeds; plot the results",
                       description="bufferlab sweep FILE.toml [options] | bufferlab sweep plot DIR "
                       "--x NAME --y COLUMN (see `bufferlab sweep -h`, `bufferlab sweep plot -h`)",
                       add_help=False)
    p.add_argument("args", nargs=argparse.REMAINDER)


def _run_parser() -> argparse.ArgumentParser:
    from .executors import EXECUTORS, usable_cores

    p = argparse.ArgumentParser(prog="bufferlab sweep", description="Run every point × seed of a sweep "
                                "file, each an ordinary run in OUT/<sweep>/runs/<run-id>/, finished runs "
                                "kept and skipped; then write OUT/<sweep>/sweep.parquet. Exit 1 if a run "
                                "failed (listed at the end), 2 for a mistake in the files.",
                                epilog="bufferlab sweep plot DIR --x NAME --y COLUMN plots a sweep's results "
                                "(bufferlab sweep plot -h).")
    p.add_argument("file", type=Path, metavar="FILE.toml", help="sweep file")
    p.add_argument("-o", "--output", type=Path, default=Path("results"),
                   help="results folder (default: ./results)")
    p.add_argument("-j", "--jobs", type=int, default=usable_cores(),
                   help=f"runs at once (default: usable cores, here {usable_cores()})")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local process pool (default), dask.distributed or ray")
    p.add_argument("--address", help="scheduler address of an existing Dask or Ray cluster")
    p.add_argument("--dry-run", action="store_true", help="print the runs (and which are done), run nothing")
    p.add_argument("--force", action="store_true", help="rerun runs already finished")
    p.add_argument("--no-progress", action="store_true", help="plain lines instead of a progress display")
    add_set_option(p, "override a default of the scenario's [params] table in every run; of a swept "
                   "parameter: run only that value of its axis (repeatable)")
    return p


def _plot_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bufferlab sweep plot", description="Plot a sweep's results: the "
                                "mean of Y over seeds at each X with its 95 % confidence interval "
                                "(Student t); PNG, PDF and DIR/sweep.html.")
    p.add_argument("dir", type=Path, metavar="DIR", help="results/<sweep> of `bufferlab sweep`")
    p.add_argument("--x", required=True, help="parameter on the x axis")
    p.add_argument("--y", required=True, help="column of sweep.parquet (e.g. goodput_bps)")
    p.add_argument("--by", help="one line per value of this column (e.g. part or node)")
    p.add_argument("--facet", help="one panel per value of this column (e.g. load)")
    p.add_argument("--where", help="keep rows matching this pandas query (e.g. \"node == 'n8'\")")
    p.add_argument("--logx", action="store_true", help="logarithmic x axis")
    p.add_argument("-o", "--output", type=Path, help="output folder (default: DIR/plots)")
    return p


def cli_sweep(argv: list[str]) -> int:
    if argv[:1] == ["plot"]:
        from ..run.scheduler import signals_raise
        from .plot import plot_sweep

        signals_raise()  # SIGINT/SIGTERM: exit 130/143, each file whole (safefs.open_atomic)

        a = _plot_parser().parse_args(argv[1:])
        for path in plot_sweep(a.dir, a.x, a.y, a.by, a.facet, a.where, a.output, a.logx):
            print(path)
        return 0
    args = _run_parser().parse_args(argv)
    from ..run.scheduler import signal_name, signals_deferred, signals_raise
    from .collect import write_results
    from .runs import finished, prepare
    from .spec import load_sweep

    # SIGINT and SIGTERM (with or without a terminal) raise from here on (exit 130/143, never a
    # process killed half-way); once runs execute, the pool's workers, in process groups of
    # their own, are killed (executors.stop_workers) and their runs left .partial
    signals_raise()
    if args.jobs < 1:
        raise BufferlabError("error: -j must be at least 1")
    spec = load_sweep(args.file, set_overrides(args.set))
    out = args.output / spec.name
    runs_dir = out / "runs"
    fixed = dict(args.set)
    jobs = [job for point in spec.points for job in prepare(
        spec.scenario, {**fixed, **point}, spec.origins, spec.seeds, spec.parts, runs_dir, spec.source)]
    todo = [j for j in jobs if args.force or finished(j) is None]
    if args.dry_run:
        to_run = {j.run_id for j in todo}  # (`j in todo`, a list of dataclasses, was quadratic)
        for j in jobs:
            state = "to run" if j.run_id in to_run else "done"
            print(f"{j.run_id}  seed={j.seed}  " + " ".join(f"{k}={v}" for k, v in j.overrides.items())
                  + f"  [{state}]")
        print(f"{len(jobs)} runs, {len(todo)} to run, results in {out}")
        return 0
    # one sweep at a time writes the folder, and only a folder bufferlab made (results_folder.py)
    acquire(out)
    claim(out, "sweep", "choose another folder with -o, or move it away yourself")
    ensure_dir(runs_dir, out)
    for stale in runs_dir.glob("*.partial"):  # left by a killed sweep
        remove_tree(stale)
    try:
        failed = _execute(todo, args, len(jobs))
    except KeyboardInterrupt as e:  # every finished run is kept: the same command runs the rest
        with signals_deferred():
            write_results(out, jobs)
        print(f"bufferlab: sweep interrupted by {signal_name(e)}; the finished runs are in {runs_dir} "
              f"and in {out / 'sweep.parquet'}; run the same command again to run only the missing ones",
              file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except BufferlabError:  # a worker died, a cluster lost: sweep.parquet of the finished runs, then why
        with signals_deferred():
            write_results(out, jobs)
        raise
    with signals_deferred():  # a signal now waits until sweep.parquet is whole
        table = write_results(out, jobs)
    print(f"{spec.name}: {len(jobs)} runs ({len(jobs) - len(todo)} cached, {len(todo)} run); {table}")
    if failed:
        print(f"{len(failed)} run{'s' if len(failed) > 1 else ''} failed:", file=sys.stderr)
        for rec in failed:
            first = (rec.get("error") or "").strip().splitlines()[:1]
            print(f"  {runs_dir / rec['run_id']}: {first[0] if first else 'failed'}", file=sys.stderr)
        return 1
    return 0


def _execute(todo: list[RunJob], args: argparse.Namespace, total: int) -> list[dict[str, Any]]:
    failed: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    workers = min(args.jobs, max(len(todo), 1))
    plain = args.no_progress or not sys.stderr.isatty()
    from .executors import executor
    from .progress import Progress

    records = executor(args.executor)(todo, workers, args.address)
    try:
        with Progress(len(todo), total - len(todo), workers, plain) as prog:
            for rec in records:
                prog.done(rec)
                if rec["status"] != "ok":
                    failed.append(rec)
    finally:  # now, not when the traceback lets go of it: an interrupt stops the workers at once
        records.close()
    print(f"{len(todo)} runs in {time.perf_counter() - t0:.1f} s wall", file=sys.stderr)
    return failed
