"""``bufferlab mininet SCRIPT.py [ARGS]``: run a Mininet script in simulated time.

The script runs in its results folder (``results/<script>/``, where its own
relative paths land) with ``sys.argv`` set as for ``python SCRIPT.py ARGS``.
``import mininet.X`` finds ``bufferlab.mininet.X``, so a script runs unmodified
or with its imports changed. Calls made from the script's own files (those
under its folder) are routed into the simulation: ``time.sleep``/``time.time``
(and ``monotonic``/``perf_counter``) advance and read simulated time, and
``os.system``/``subprocess`` run a simulated tool (tc, sysctl, ping, iperf3,
...) in the root namespace (the ``admin`` terminal); any other program is an
error naming the command. Libraries the script imports keep the real ones.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import shlex
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import BufferlabError
from ..outputs.report import after_run
from ..run.programs import PROGRAMS
from ..run.scheduler import signal_name, signals_deferred, signals_raise
from ..results_folder import acquire, fresh, release, write_marker
from ..safefs import remove_tree, write_atomic
from . import clock
from . import net as net_mod
from .session import Job, MininetError, Session
from .util import Popen

#: the modules a script may import as ``mininet.X``
MODULES = ("net", "topo", "node", "link", "cli", "log", "util", "clean", "topolib", "clock")


def _words(cmd: Any) -> tuple[str, str]:
    """(the command line, its program) of an os.system/subprocess argument."""
    line = cmd if isinstance(cmd, str) else " ".join(shlex.quote(str(a)) for a in cmd)
    words = shlex.split(line) if line.strip() else [""]
    return line, words[0]


def _session(line: str) -> Session:
    if not clock._current:
        raise MininetError(f"`{line}`: no network is running; the script runs simulated tools only between "
                           "net.start() and net.stop()")
    return clock._current[0]


def _simulated(cmd: Any) -> str:
    """The command line, if its program is a simulated tool; else a clear error."""
    line, prog = _words(cmd)
    if prog not in PROGRAMS:
        raise MininetError(f"`{line}`: {prog} is not a simulated tool, so the script cannot run it under "
                           f"bufferlab mininet (simulated: {', '.join(sorted(PROGRAMS))})")
    return line


def _start(cmd: Any) -> Job:
    line = _simulated(cmd)
    return _session(line).start("admin", line)


def _system(cmd: str) -> int:
    job = _start(cmd)
    status = job.wait()
    sys.stdout.write(job.output())
    return status << 8  # os.system returns a wait status


def _run(args: Any, *, capture_output: bool = False, stdout: Any = None, check: bool = False,
         text: bool | None = None, universal_newlines: bool | None = None, encoding: str | None = None,
         **_kwargs: Any) -> subprocess.CompletedProcess[Any]:
    job = _start(args)
    status = job.wait()
    out: Any = job.output()
    as_text = bool(text or universal_newlines or encoding)
    if capture_output or stdout == subprocess.PIPE:
        out = out if as_text else out.encode()
    else:
        sys.stdout.write(out)
        out = None
    if check and status:
        raise subprocess.CalledProcessError(status, args, out)
    return subprocess.CompletedProcess(args, status, out, None)


def _call(args: Any, **kwargs: Any) -> int:
    return _run(args, **kwargs).returncode


def _check_call(args: Any, **kwargs: Any) -> int:
    return _run(args, check=True, **kwargs).returncode


def _check_output(args: Any, **kwargs: Any) -> Any:
    return _run(args, check=True, stdout=subprocess.PIPE, **kwargs).stdout


def _popen(args: Any, **kwargs: Any) -> Popen:
    line = _simulated(args)
    return Popen(_session(line), "admin", line, **kwargs)


@contextmanager
def simulated_process(script_dir: Path) -> Iterator[None]:
    """Route the script's own time and process calls into the simulation (see the module doc)."""
    here = str(script_dir.resolve()) + os.sep
    patches: list[tuple[Any, str, Callable[..., Any]]] = [
        (time, "sleep", clock.sleep), (time, "time", clock.time), (time, "monotonic", clock.time),
        (time, "perf_counter", clock.time), (os, "system", _system), (subprocess, "run", _run),
        (subprocess, "call", _call), (subprocess, "check_call", _check_call),
        (subprocess, "check_output", _check_output), (subprocess, "Popen", _popen),
    ]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]

    def routed(real: Callable[..., Any], simulated: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1).f_code.co_filename
            fn = simulated if os.path.abspath(caller).startswith(here) else real
            return fn(*args, **kwargs)
        return call

    for (mod, name, simulated), (_, _, real) in zip(patches, saved, strict=True):
        setattr(mod, name, routed(real, simulated))
    try:
        yield
    finally:
        for mod, name, real in saved:
            setattr(mod, name, real)


@contextmanager
def mininet_modules() -> Iterator[None]:
    """``import mininet.net`` finds ``bufferlab.mininet.net`` while the script runs."""
    added = {}
    pkg = importlib.import_module(__package__ or "bufferlab.mininet")
    added["mininet"] = pkg
    for m in MODULES:
        added[f"mininet.{m}"] = importlib.import_module(f"{pkg.__name__}.{m}")
    saved = {k: sys.modules.get(k) for k in added}
    sys.modules.update(added)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _fresh(root: Path, script: Path) -> Path | None:
    """The results folder afresh, locked and marked (results_folder.py): the previous run's
    waits as ``<script>.prev`` until this one completes (:func:`_done`); a folder bufferlab
    did not write, or the script's own, is never replaced. Returns ``.prev`` if any."""
    acquire(root)
    try:
        return fresh(root, "mininet", f"choose another folder with -o (results go into <-o>/{root.name}), "
                     f"or move {root} away yourself", [script])
    except BaseException:
        release(root)
        raise


def _done(root: Path, prev: Path | None, completed: bool) -> None:
    """A completed script's results replace the previous run's; a failed one's never do."""
    write_marker(root, "mininet", complete=completed)
    if completed and prev is not None:
        remove_tree(prev)
    release(root)


def run_script(script: Path, args: list[str], results: Path, seed: int = 1, report: bool = True) -> int:
    """Run ``script``; its exit status (SystemExit's code), 2 for a bufferlab error, 1 when it
    raised, 128 + the signal when SIGINT or SIGTERM stopped it. However it ends, the network
    it left running is stopped (what runs Ctrl-C'd) and the results are written: summary.json
    (with ``error`` or ``interrupted``), the tables and the report."""
    script = script.resolve()
    if not script.is_file():
        raise BufferlabError(f"{script}: no such script")
    slug = script.stem
    root = results.resolve() / slug
    prev = _fresh(root, script)
    net_mod.results_in(results.resolve(), slug, seed, fresh=False)
    clock.reset()
    cwd, argv = os.getcwd(), sys.argv
    status = 0
    error: str | None = None
    interrupted: str | None = None
    signals_raise()  # SIGINT/SIGTERM raise Interrupted wherever the script (or the engine) is
    try:
        os.chdir(root)
        sys.argv = [str(script), *args]
        with mininet_modules(), simulated_process(script.parent):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BufferlabError as e:
        error = f"{_script_line(e, script)}error: {e}"
        print(error, file=sys.stderr)
        status = 2
    except KeyboardInterrupt as e:
        interrupted = signal_name(e)
        status = 128 + getattr(e, "signum", 2)
    except Exception as e:  # the script's own mistake: its traceback, as python prints it
        _print_script_traceback(e, script)
        error = f"{_script_line(e, script)}{type(e).__name__}: {e}"
        status = 1
    finally:
        with signals_deferred():  # a second signal waits until everything is written
            os.chdir(cwd)
            sys.argv = argv
            for s in list(clock._current):  # a network the script left running
                clock.detach(s)
                s.close(error, interrupted)
            net_mod.results_in(Path("results"), "mininet")
            if error is not None or interrupted is not None:
                _note_end(root, error, interrupted)
            if (root / "summary.json").is_file():
                after_run(root, report=report, echo=lambda s: print(s, file=sys.stderr))
            _done(root, prev, status == 0)
    if interrupted is not None:
        print(f"bufferlab: interrupted by {interrupted}: what the script ran until then is in {root}",
              file=sys.stderr)
    print(f"{script.name}: results in {root}", file=sys.stderr)
    return status


def _print_script_traceback(e: BaseException, script: Path) -> None:
    """The traceback from the script's first frame on (``python SCRIPT.py`` prints that)."""
    tb = e.__traceback__
    while tb is not None and Path(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb or e.__traceback__, file=sys.stderr)


def _note_end(root: Path, error: str | None, interrupted: str | None) -> None:
    """``error``/``interrupted`` in summary.json, also when the script had stopped its network."""
    path = root / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(summary, dict):
        return
    summary["error"] = summary.get("error") or error
    if interrupted is not None:
        summary["interrupted"] = interrupted
    write_atomic(path, json.dumps(summary, indent=2) + "\n")


def _script_line(e: BaseException, script: Path) -> str:
    """``SCRIPT:LINE: `` of the script's innermost line in the traceback."""
    where = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == script]
    return f"{script.name}:{where[-1].lineno}: " if where else ""


__all__ = ["run_script", "simulated_process", "mininet_modules"]
