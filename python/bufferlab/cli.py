"""The ``bufferlab`` command: run, check, report, compare, plot, export.

Every user mistake ends with a message naming the place and exit status 2;
never a traceback.

``plot`` and ``export`` work on files a run (or a real tool) already wrote:
written files on stdout, one per line; ``note:`` lines (plots or series left
out on purpose) and ``error:`` messages on stderr; exit status 2 when anything
was wrong with the input, after everything that could be produced was written.
"""

from __future__ import annotations

import argparse
import errno
import gc
import json
import os
import signal
import sys
from pathlib import Path

from .errors import BufferlabError
from .mininet import commands as mininet_commands
from .results_folder import FolderError, acquire, complete, release_all
from .safefs import ENVIRONMENT_ERRORS, IN_THE_WAY, open_write, write_atomic
from .sweep.cli import add_set_option, add_sweep_parser
from .version import __version__

# Each command imports what it needs when it runs (the runner, the writers, pandas, pyarrow,
# matplotlib): `bufferlab --version` and `bufferlab check` do not pay for the others.


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="bufferlab",
        description="Run network lab handouts (tc, sysctl, iperf3, ping, plot scripts) in a fast, "
        "deterministic packet-level simulation.",
    )
    p.add_argument("--version", action="version", version=f"bufferlab {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        help="run a scenario and write its results",
        description="Run every part of SCENARIO and write results/<scenario>/... Exit status: 0, 1 if a "
        "command failed (listed at the end; a part's allow_fail lists the lines allowed to fail), 2 for a "
        "mistake in the scenario, 3 if --max-wall or --max-events ended the run early (everything up to "
        "then written; the part it stopped in is marked \"stopped\" in summary.json), 4 if the run went "
        "well but one of the scenario's [[expect]] entries failed (expectations.json, results.json).",
    )
    run.add_argument("scenario", type=Path, help="scenario file (.toml)")
    run.add_argument(
        "-o", "--output", type=Path, default=Path("results"), help="results folder (default: ./results)"
    )
    run.add_argument("--seed", type=_seed_arg, help="override the scenario's seed (0 to 2^64-1)")
    add_set_option(run)
    run.add_argument("-q", "--quiet", action="store_true",
                     help="print nothing but errors (no progress, no result summary after each part)")
    run.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    run.add_argument("--no-report", action="store_true", help="write the tables but not report.html")
    run.add_argument("--progress-json", action="store_true",
                     help="report progress as JSON lines on stderr, for a program watching the run (as "
                     "bufferlab serve does): {\"event\": \"part\"|\"progress\"|\"summary\", ...}")
    run.add_argument("--max-wall", type=_positive_float, metavar="SECONDS",
                     help="end the run cleanly after this much wall-clock time (checked every 100 ms of "
                     "simulated time); exit status 3")
    run.add_argument("--real", action="store_true",
                     help="run the lines for real, in real time, with the real tools on this machine's Linux "
                     "kernel in private network namespaces (root; results/<scenario>-real; docs/real.md)")
    run.add_argument("--max-events", type=_positive_int, metavar="N",
                     help="end the run cleanly once the engine has processed N events (checked every "
                     "100 ms of simulated time); exit status 3")
    check = sub.add_parser(
        "check",
        help="validate a scenario without running it",
        description="Parse SCENARIO and every command line in it; report the first error.",
    )
    check.add_argument("scenario", type=Path, help="scenario file (.toml)")
    add_set_option(check)
    check.add_argument("--rubric", type=Path, metavar="RUBRIC.toml",
                       help="also check a grading rubric's expectations against the scenario (parts, nodes, "
                       "interfaces)")
    grade = sub.add_parser(
        "grade",
        help="run a student's scenario or Mininet script and grade it with a rubric",
        description="Run SUBMISSION (a scenario .toml, or a Mininet script .py as `bufferlab mininet` runs "
        "it) with the seed of the rubric, check the rubric's [require] and [[expect]] entries on its "
        'results, and write expectations.json, summary.json\'s "expectations" and a Gradescope '
        "results.json into <-o>/<submission>/ (docs/teaching.md). Exit status: 0 if everything holds, 4 if a "
        "requirement or "
        "expectation failed or the submission did not run (results.json written all the same), 2 for a "
        "mistake in the rubric (nothing run).",
    )
    grade.add_argument("submission", type=Path, metavar="SUBMISSION",
                       help="scenario (.toml) or Mininet script (.py)")
    grade.add_argument("--rubric", type=Path, required=True, metavar="RUBRIC.toml", help="the rubric")
    grade.add_argument("-o", "--output", type=Path, default=Path("results"),
                       help="results folder (default: ./results)")
    grade.add_argument("--seed", type=_seed_arg, help="override the rubric's (and the submission's) seed")
    grade.add_argument("--results-json", type=Path, metavar="FILE",
                       help="where to write results.json (default: <-o>/<submission>/results.json; an "
                       "autograder's is /autograder/results/results.json)")
    grade.add_argument("--no-report", action="store_true", help="write the tables but not report.html")
    grade.add_argument("-q", "--quiet", action="store_true", help="print only the grade")
    add_sweep_parser(sub)
    report = sub.add_parser(
        "report",
        help="(re)write the tables and the HTML report of a run",
        description="Write RESULTS_DIR/tables/ and RESULTS_DIR/report.html (self-contained).",
    )
    report.add_argument("results", type=Path, metavar="RESULTS_DIR", help="results/<scenario> of a run")
    compare = sub.add_parser(
        "compare",
        help="overlay the plots and tabulate the metrics of several runs or parts",
        description="Compare runs: each RUN is a results folder (results/<scenario>), a part inside one "
        "(results/<scenario>/<part>) or one iperf3 output file inside a part.",
    )
    compare.add_argument("runs", type=Path, nargs="+", metavar="RUN", help="results folder, part or file")
    compare.add_argument(
        "-o", "--output", type=Path,
        help="output folder (default: results/compare-<A>-vs-<B>..., named after the RUNs)"
    )
    plot = sub.add_parser(
        "plot",
        help="plot any iperf3 JSON (throughput, cwnd, RTT, ... as plot_iperf.sh)",
        description="Write the data files (N.dat per stream, sum.dat for -P) and the throughput, cwnd, "
        "RTT, RTT_Var, retransmits, bytes and MTU plots (PDF and PNG) of an iperf3 -J output, ours or a "
        "real iperf3's (3.0-3.1x; TCP or UDP; client or server; -P; -R).",
    )
    plot.add_argument("json", type=Path, metavar="FILE.json", help="iperf3 -J output")
    plot.add_argument("-o", "--output", type=Path, metavar="DIR",
                      help="output folder (default: results/ next to FILE.json, like plot_iperf.sh)")
    export = sub.add_parser(
        "export",
        help="export a run's results to another tool's format (flent)",
        description="Write one .flent.gz per part that ran an iperf3 client with -J (its throughput, and "
        "the part's ping RTTs), loadable with flent -i FILE.",
    )
    export.add_argument("--flent", type=Path, required=True, metavar="RESULTS_DIR",
                        help="results/<scenario> of a run (or the folder holding several)")
    export.add_argument("-o", "--output", type=Path, metavar="OUT",
                        help="output folder (default: each scenario's results folder)")
    convert = sub.add_parser(
        "convert",
        help="convert a MiniEdit .mn file into a scenario",
        description="Write the scenario TOML equivalent to a MiniEdit drawing (its hosts, switches, links "
        "with their TCLink options, the hosts' addresses) with one part to start from. A scenario can also "
        'use the file directly: [topology] mn = "FILE.mn".',
    )
    convert.add_argument("mn", type=Path, metavar="FILE.mn", help="a topology saved by MiniEdit")
    convert.add_argument("-o", "--output", type=Path, metavar="OUT.toml",
                         help="where to write it (default: FILE.toml next to FILE.mn; - for stdout)")
    convert.add_argument("--force", action="store_true", help="replace OUT.toml if it exists (never FILE.mn)")
    mininet_commands.add_parsers(sub)
    serve = sub.add_parser(
        "serve",
        help="a lab bench in the browser: edit, check, run, plot, compare and sweep (docs/bench.md)",
        description="Serve DIR (its scenarios, Mininet scripts, sweep files and results/) as a local web "
        "page on 127.0.0.1 only, at a URL with a random token, as Jupyter does: an editor that checks as you "
        "type, runs with their progress and interactive plots, comparisons and sweeps. Runs write "
        "DIR/results/ as `bufferlab run` does. Ctrl-C stops it (and the runs under way, as Ctrl-C stops a "
        "run: their finished parts are kept).",
    )
    serve.add_argument("dir", type=Path, nargs="?", default=Path("."), metavar="DIR",
                       help="the folder to serve (default: the current one)")
    serve.add_argument("--port", type=int, default=8765, metavar="N",
                       help="port on 127.0.0.1 (default 8765; 0: any free port)")
    serve.add_argument("--open", action="store_true", help="open the page in the default browser")
    return p


def _seed_arg(text: str) -> int:
    from .scenario.load import seed_arg

    return seed_arg(text)


def _cli_convert(mn: Path, output: Path | None, force: bool = False) -> int:
    from .scenario.mn_file import load_mn, to_scenario_toml

    topo = load_mn(mn)
    text = to_scenario_toml(topo)
    _check_converted(mn, text)
    for w in topo.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if output is not None and str(output) == "-":
        sys.stdout.write(text)
        return 0
    out = output or mn.with_suffix(".toml")
    _write_converted(out, mn, text, force)
    print(f"{out}: scenario written ({len(topo.hosts)} hosts, {len(topo.switches)} switches, "
          f"{len(topo.links)} links)")
    return 0


def _interruptible_writer(args: argparse.Namespace) -> int:
    """report, compare, plot, export: SIGINT and SIGTERM (with or without a terminal) end them
    with exit 130/143; each file they write is whole, the previous version or the new one
    (safefs.open_atomic: written under a temporary name, renamed once complete)."""
    from .run.scheduler import signal_name, signals_raise

    signals_raise()
    try:
        if args.command == "report":
            from .outputs.report import cli_report

            if args.results.is_dir() and not args.results.is_symlink():
                acquire(args.results)  # it rewrites tables/ and report.html: not while a run writes them
            return cli_report(args.results)
        if args.command == "compare":
            from .outputs.compare import cli_compare, default_output

            return cli_compare(args.runs, args.output or default_output(args.runs))
        if args.command == "plot":
            return _cli_plot(args.json, args.output)
        return _cli_export_flent(args.flent, args.output)
    except KeyboardInterrupt as e:
        print(f"bufferlab: {args.command} interrupted by {signal_name(e)}: every file it wrote is whole (the "
              "one it was writing is as it was before); run it again to write them all", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)


def _check_converted(mn: Path, text: str) -> None:
    """What convert writes is a scenario ``check`` accepts: a problem that shows only there (a
    host with two links and one address, a link shaped beyond what tc takes) is an error
    naming the .mn file, and nothing is written."""
    from .errors import ScenarioError
    from .run.scheduler import Runner
    from .scenario.load import load_scenario

    try:
        Runner(load_scenario(mn.with_suffix(".toml"), source=text)).check()
    except BufferlabError as e:
        why = getattr(e, "message", str(e))
        raise ScenarioError(f"the drawing converts to a scenario bufferlab refuses: {why}",
                            file=str(mn), expected=getattr(e, "expected", None),
                            suggestion=getattr(e, "suggestion", None)) from None


def _write_converted(out: Path, source: Path, text: str, force: bool) -> None:
    """Never over the input, never over an existing file without --force, never through
    a link (a link at OUT is replaced with --force, else it counts as an existing file)."""
    hint = "choose another name with -o OUT.toml"
    if os.path.lexists(out) and (out.resolve() == source.resolve()
                                 or (out.exists() and os.path.samefile(out, source))):
        raise BufferlabError(f"error: {out}: is the input file itself; convert never overwrites its input\n"
                             f"  hint: {hint}")
    if out.is_dir():
        raise BufferlabError(f"error: {out}: is a folder, not a file\n  hint: {hint}")
    exists = (
        f"error: {out}: exists; convert does not overwrite it\n  hint: pass --force to replace it, or {hint}"
    )
    if os.path.lexists(out) and not force:
        raise BufferlabError(exists)
    try:
        if force:
            write_atomic(out, text)
        else:
            with open_write(out, "x") as f:  # made in between: still not overwritten
                f.write(text)
    except FileExistsError:
        raise BufferlabError(exists) from None
    except OSError as e:
        raise BufferlabError(f"error: {out}: cannot write it ({e.strerror})\n  hint: {hint}") from None


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (v > 0 and v < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive finite number: {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return v


#: allocations between two young-generation collections of the program (CPython: 700)
GC_THRESHOLD = 50_000
#: exit status of a run ended early by --max-wall or --max-events
EXIT_STOPPED = 3
#: exit status of a run (or grade) that went well but an [[expect]] entry failed (outputs/grading.py)
EXIT_EXPECTATIONS = 4


def main(argv: list[str] | None = None) -> int:
    """``bufferlab ARGV``'s exit status (``argv`` None: the program itself, from sys.argv)."""
    if argv is None:
        # A command builds large, long-lived trees (summaries, tables) and little cyclic
        # garbage: the default threshold (700) ran full collections over them again and
        # again, 12-15 % of a 4 000-class run's CPU (benches/htb_classes.py).
        gc.set_threshold(GC_THRESHOLD, 20, 100)
    try:
        status = _main(argv)
        if argv is None:
            # the work is done and written: a signal now would only break the interpreter's
            # teardown ("Exception ignored", or a death by the default action once Python has
            # put the defaults back), so the process ends with the command's status
            _ignore_signals()
        return status
    except KeyboardInterrupt as e:  # a signal while the locks went, after the command's own handling
        _ignore_signals()
        release_all()
        print("bufferlab: interrupted", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)


def _ignore_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def _main(argv: list[str] | None) -> int:
    # the command's SIGINT handler (bufferlab/__init__.py) stays until a command installs its
    # own: a quiet exit 130 while a module is imported, KeyboardInterrupt anywhere else
    try:
        words = sys.argv[1:] if argv is None else argv
        if words[:1] == ["sweep"]:  # its options, -h included, are parsed by sweep/cli.py
            args = argparse.Namespace(command="sweep", args=list(words[1:]))
        else:
            args = _parser().parse_args(argv)
    except KeyboardInterrupt:
        print("bufferlab: interrupted", file=sys.stderr)
        return 130
    if args.command is None:
        _parser().print_help()
        return 2
    try:
        status = _dispatch(args)
        if argv is None and args.command == "run" and status in (130, 143):
            # interrupted, everything written: skip the interpreter's teardown (0.1-0.2 s of
            # freeing pandas/pyarrow) so the process ends well within 0.5 s of the signal
            sys.stdout.flush()
            sys.stderr.flush()
            release_all()
            os._exit(status)
        return status
    except BufferlabError as e:
        print(str(e), file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # SIGINT (130) or SIGTERM (143) outside a run's parts
        print("bufferlab: interrupted", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except OSError as e:
        if e.errno not in ENVIRONMENT_ERRORS | IN_THE_WAY:
            raise
        print(_environment_error(e, args), file=sys.stderr)
        return 2
    except ImportError:  # a signal that landed while an extension module initialised
        from .run.scheduler import interrupted_by

        signum = interrupted_by()
        if signum is None:
            raise
        print("bufferlab: interrupted", file=sys.stderr)
        return 128 + signum
    finally:  # the results folders' locks (results_folder.py): their files go
        release_all()


def _environment_error(e: OSError, args: argparse.Namespace) -> str:
    """The message for an environment error: the path, why, and what was kept."""
    if e.errno in IN_THE_WAY:  # a results folder someone changed (issue 30's fuzzing)
        what = {errno.EISDIR: "a folder is where bufferlab reads or writes a file",
                errno.ENOTDIR: "a file is where bufferlab expects a folder"}.get(e.errno or 0,
                                                                                "a symbolic link loops")
        return (f"error: {e.filename or '?'}: {e.strerror}\n  hint: {what}: move it away, or re-run to "
                "write the results anew")
    out = getattr(args, "results", None) or getattr(args, "output", None) or getattr(args, "flent", None)
    if args.command == "sweep":  # its own options: -o OUT, by default ./results
        words = args.args
        out = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")), "results")
    kept = (f"everything written before it is kept in {out}" if out is not None
            else "everything written before it is kept")
    if args.command in ("run", "sweep", "mininet", "mn"):
        kept += " (a previous complete run's results too); `bufferlab report` writes a run's tables and " \
                "report again once there is room"
    hint = {errno.ENAMETOOLONG: "use shorter names (a file name has at most 255 bytes)",
            errno.EROFS: "choose a writable folder with -o", errno.EACCES: "choose a writable folder with -o",
            errno.EPERM: "choose a writable folder with -o"}.get(e.errno or 0, "free some space, or choose "
                                                                             "another disk with -o")
    return f"error: {e.filename or out or '?'}: {e.strerror}\n  kept: {kept}\n  hint: {hint}"


#: the commands that write files from a run's results (or an iperf3 output)
WRITERS = ("report", "compare", "plot", "export")


def _dispatch(args: argparse.Namespace) -> int:
    if args.command in WRITERS:
        return _interruptible_writer(args)
    if args.command == "convert":
        return _cli_convert(args.mn, args.output, args.force)
    if args.command == "sweep":
        from .sweep.cli import cli_sweep

        return cli_sweep(args.args)
    if args.command == "serve":
        from .serve.app import serve

        return serve(args.dir, args.port, args.open)
    if args.command in mininet_commands.COMMANDS:
        return mininet_commands.dispatch(args)
    if args.command == "grade":
        from .grade import grade

        return grade(args.submission, args.rubric, args.output, args.seed, args.results_json,
                     report=not args.no_report, quiet=args.quiet)
    from .run.scheduler import Runner, signal_name, signals_deferred, signals_raise
    from .scenario.expect import Names, load_rubric, scenario_expectations
    from .scenario.load import load_scenario
    from .sweep.cli import set_overrides

    sc = load_scenario(args.scenario, set_overrides(args.set))
    expectations = scenario_expectations(sc)
    if args.command == "check":
        r = Runner(sc)
        r.check()
        for w in r.warnings:
            print(w, file=sys.stderr)
        n = sum(len(p.commands) for p in sc.parts)
        graded = f", {len(expectations)} expectations" if expectations else ""
        print(
            f"{args.scenario}: OK ({len(sc.parts)} parts, {n} command lines, "
            f"{len(sc.hosts) + len(sc.switches) + len(sc.routers)} nodes{graded})"
        )
        if args.rubric is not None:
            rubric = load_rubric(args.rubric, Names.of(sc))
            print(f"{args.rubric}: OK ({len(rubric.expectations)} expectations, checked against "
                  f"{args.scenario})")
        return 0
    from .outputs.report import after_run  # pyarrow: imported before the run, so that after a
    # signal only the writing remains

    if args.seed is not None:
        sc.seed = args.seed
    if args.real:
        return _cli_real(sc, args, after_run, expectations)
    # results (each part's summary, the closing line) on stdout; progress and diagnostics on stderr
    echo = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr))
    result = (lambda s: None) if args.quiet else print
    progress = False if (args.no_progress or args.quiet) else None
    r = Runner(sc, args.output, progress=progress, echo=echo, result=result)
    r.max_wall_s = args.max_wall
    r.max_events = args.max_events
    if args.progress_json:
        r.on_event = _print_event
    # SIGINT/SIGTERM raise Interrupted (from inside the engine within milliseconds): the
    # runner writes what it has, the interrupted part marked; then the report; exit 130/143
    signals_raise()
    r.check()
    try:  # the -o folder; the runner makes <scenario> in it afresh
        r.root.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = "Not a directory" if isinstance(e, FileExistsError) else e.strerror
        raise BufferlabError(
            f"error: cannot create the results folder {r.root}: {why}\n"
            "  hint: choose another folder with -o/--output"
        ) from None
    acquire(r.root)  # one writer, from the run to its report (results_folder.py)
    try:
        summary = r.run()
    except KeyboardInterrupt as e:  # summary.json is written: the tables and the report too
        if r.interrupted is None:  # while its folder was being made, before a part began
            prev = r.root.with_name(r.root.name + ".prev")
            kept = next((f for f in (prev, r.root) if f.is_dir() and complete(f)), None)
            print(f"bufferlab: interrupted by {signal_name(e)} before the first part began: nothing was run"
                  + (f"; the last complete run is in {kept}" if kept else ""), file=sys.stderr)
            return 128 + getattr(e, "signum", 2)
        with signals_deferred():
            _after_run_quietly(after_run, r.root, not args.no_report, echo)
        print(f"bufferlab: interrupted by {signal_name(e)}: the finished parts and the interrupted one "
              f"(marked \"interrupted\" in summary.json) are in {r.root}", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except FolderError:  # not a folder to replace: nothing was written
        raise
    except Exception:  # a run-time error in a part: the earlier parts and the error are in the report
        with signals_deferred():
            if (r.root / "summary.json").is_file():
                _after_run_quietly(after_run, r.root, not args.no_report, echo)
        raise
    with signals_deferred():  # before the report, which shows them
        met = _expectations(r.root, summary, expectations, sc, result)
    with signals_deferred():
        extra_s = after_run(r.root, report=not args.no_report, echo=echo)
    if not args.quiet:
        print(
            f"{sc.name}: {summary['simulated_s']:.3f} s simulated in {r.wall_s:.2f} s wall "
            f"(+{extra_s:.2f} s tables/report), {summary['events']} events; results in {r.root}"
        )
    status = _report_failures(r.failures)
    if r.stopped:
        print(f"bufferlab: run stopped early: {r.stopped}; results so far in {r.root}", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_EXPECTATIONS if status == 0 and not met else status


def _print_event(event: dict) -> None:
    """``run --progress-json``: one JSON object per line on stderr, at once."""
    print(json.dumps(event), file=sys.stderr, flush=True)


def _expectations(root: Path, summary: dict, expectations: list, sc, result) -> bool:  # noqa: ANN001
    """A scenario's ``[[expect]]`` entries checked on its run (outputs/grading.py). Whether all held."""
    if not expectations:
        return True
    from .outputs import grading

    return grading.check_run(root, summary, expectations, sc.params, sc.name, result)


def _cli_real(sc, args: argparse.Namespace, after_run, expectations: list) -> int:  # noqa: ANN001
    """``bufferlab run --real``: the same lines on the kernel (real/), the same outputs."""
    from .real.runner import RealRunner
    from .run.scheduler import signal_name, signals_deferred, signals_raise

    echo = (lambda s: None) if args.quiet else (lambda s: print(s, file=sys.stderr))
    result = (lambda s: None) if args.quiet else print
    r = RealRunner(sc, args.output, echo=echo, result=result)
    r.max_wall_s = args.max_wall
    r.check()
    r.root.parent.mkdir(parents=True, exist_ok=True)
    signals_raise()  # SIGINT/SIGTERM: every process stopped, every namespace removed, then 130/143
    try:
        summary = r.run()
    except KeyboardInterrupt as e:
        with signals_deferred():
            if (r.root / "summary.json").is_file():
                _after_run_quietly(after_run, r.root, not args.no_report, echo)
        print(f"bufferlab: interrupted by {signal_name(e)}: every namespace and process removed; results "
              f"so far in {r.root}", file=sys.stderr)
        return 128 + getattr(e, "signum", 2)
    except Exception:
        with signals_deferred():
            if (r.root / "summary.json").is_file():
                _after_run_quietly(after_run, r.root, not args.no_report, echo)
        raise
    with signals_deferred():
        met = _expectations(r.root, summary, expectations, sc, result)
        after_run(r.root, report=not args.no_report, echo=echo)
    if not args.quiet:
        print(f"{sc.name}: {summary['simulated_s']:.3f} s in real time on Linux {summary['real']['kernel']}; "
              f"results in {r.root}")
    status = _report_failures(r.failures)
    if r.stopped:
        print(f"bufferlab: run stopped early: {r.stopped}; results so far in {r.root}", file=sys.stderr)
        return EXIT_STOPPED
    return EXIT_EXPECTATIONS if status == 0 and not met else status


def _show(paths: list[Path]) -> None:
    for p in paths:
        print(p)


def _cli_plot(json_path: Path, out_dir: Path | None) -> int:
    """``bufferlab plot FILE.json [-o DIR]``: an iperf3 JSON file plotted as plot_iperf.sh does."""
    from .formats.plot_iperf import PlotError, plot_json

    try:
        res = plot_json(json_path, out_dir)
    except PlotError as e:
        _show(e.produced)
        print(e.message, file=sys.stderr)
        return 2
    except OSError as e:
        raise BufferlabError(
            f"error: {e.filename or json_path}: {e.strerror}\n"
            "  hint: check the file's permissions, or choose another folder with -o"
        ) from None
    _show(res.produced)
    for n in res.notes:
        print(f"note: {n}", file=sys.stderr)
    return 0


def _cli_export_flent(results_dir: Path, out_dir: Path | None) -> int:
    """``bufferlab export --flent RESULTS_DIR [-o OUT]``."""
    from .outputs.flent import export_flent

    try:
        rep = export_flent(results_dir, out_dir)
    except OSError as e:
        # -o at a file (or under one): mkdir's "File exists" would not say which is in the way
        in_the_way = isinstance(e, FileExistsError | NotADirectoryError)
        why = "a file is in the way of the output folder" if in_the_way else e.strerror
        raise BufferlabError(
            f"error: {e.filename or results_dir}: {why}\n"
            "  hint: check the permissions, or choose another folder with -o"
        ) from None
    _show(rep.produced)
    for n in rep.notes:
        print(f"note: {n}", file=sys.stderr)
    for p in rep.problems:
        print(p if p.startswith("error:") or ": error: " in p else f"error: {p}", file=sys.stderr)
    return 2 if rep.problems else 0


def _after_run_quietly(after_run, root: Path, report: bool, echo) -> None:  # noqa: ANN001
    """The tables and report of a run that ended early; a problem here must not hide
    why the run ended."""
    try:
        after_run(root, report=report, echo=echo)
    except Exception as e:
        print(f"bufferlab: could not write the tables/report of {root}: {e}", file=sys.stderr)


def _report_failures(failures: list) -> int:
    """Commands that exited non-zero, on stderr (even with -q: they are errors);
    1 if any was not allowed."""
    if not failures:
        return 0
    bad = [f for f in failures if not f.allowed]
    print(f"{len(failures)} command{'s' if len(failures) > 1 else ''} failed"
          + (f" ({len(failures) - len(bad)} allowed by allow_fail)" if len(bad) < len(failures) else "")
          + ":", file=sys.stderr)
    for f in failures:
        print(f"  {f}", file=sys.stderr)
    if bad:
        print("  hint: the terminal.log of each command's node folder has its whole output; "
              "list a line under its part's allow_fail = [...] if the failure is expected, "
              "or end the line with || true", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
