"""``bufferlab mininet SCRIPT.py [ARGS]``: run a Mininet script in simulated time.

The script runs in its results folder (``results/<script>/``, where its own
relative paths land) with ``sys.argv`` set as for ``python SCRIPT.py ARGS``.
``import mininet.X`` finds ``bufferlab.mininet.X``, so a script runs unmodified
or with its imports changed. Calls made from the script's own files (those
under its folder) are routed into the simulation: ``time.sleep``/``time.time``
(and ``monotonic``/``perf_counter``) advance and read simulated time, and
``os.system``/``os.popen``/``subprocess`` (``run``, ``Popen``, ``getoutput``, ...),
``os.spawn*`` with ``P_WAIT`` and ``pty.spawn`` run a simulated tool (tc, sysctl,
ping, iperf3, ...) in the root namespace (the ``admin`` terminal); any other
program is an error naming the command, and so are the calls that need a real
process (``os.exec*``, ``os.posix_spawn``, ``os.spawn*`` with ``P_NOWAIT``,
asyncio's subprocesses). Libraries the script imports keep the real ones, and
so does bufferlab itself, even installed in a ``.venv`` inside the script's folder.
"""

from __future__ import annotations

import asyncio
import importlib
import io
import json
import os
import runpy
import shlex
import subprocess
import sys
import time
import tokenize
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import pty
except ImportError:  # pragma: no cover - not on Windows
    pty = None  # type: ignore[assignment]

from ..errors import BufferlabError
from ..outputs.report import after_run
from ..results_folder import acquire, discard, fresh, release, write_marker
from ..run.programs import PROGRAMS
from ..run.scheduler import signal_name, signals_deferred, signals_raise
from ..safefs import ENVIRONMENT_ERRORS, not_a_file, write_json_atomic
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


def _getstatusoutput(cmd: Any) -> tuple[int, str]:
    job = _start(cmd)
    status = job.wait()
    out = job.output()
    return status, out[:-1] if out.endswith("\n") else out


def _getoutput(cmd: Any) -> str:
    return _getstatusoutput(cmd)[1]


class _PopenFile(io.StringIO):
    """What ``os.popen(cmd)`` returns: the output to read; ``close()`` gives the wait status
    (None for 0), as os.popen's file does."""

    def __init__(self, text: str, status: int) -> None:
        super().__init__(text)
        self._status = status

    def close(self) -> int | None:  # type: ignore[override]
        super().close()
        return self._status << 8 if self._status else None


def _os_popen(cmd: str, mode: str = "r", buffering: int = -1) -> _PopenFile:
    if mode != "r":
        raise MininetError(f"os.popen({cmd!r}, {mode!r}): only reading a simulated tool's output is "
                           "supported under bufferlab mininet")
    status, out = _getstatusoutput(cmd)
    return _PopenFile(out + "\n" if out else out, status)


def _argv_line(file: Any, args: Any) -> str:
    """The command line of an exec/spawn argument vector (the program named by ``file``)."""
    words = [os.path.basename(os.fsdecode(file)), *(os.fsdecode(a) for a in list(args)[1:])]
    return " ".join(shlex.quote(w) for w in words)


def _spawnv(mode: int, file: Any, args: Any, *_env: Any) -> int:
    """os.spawn*: P_WAIT runs the simulated tool and returns its exit status; a spawn that
    returns a process id (P_NOWAIT) has no process to return."""
    line = _argv_line(file, args)
    if mode != os.P_WAIT:
        raise MininetError(f"os.spawn*(`{line}`) without P_WAIT: there is no real process whose id it "
                           "could return under bufferlab mininet; use subprocess.Popen or a node's popen()")
    job = _start(line)
    status = job.wait()
    sys.stdout.write(job.output())
    return status


def _spawnl(mode: int, file: Any, *args: Any) -> int:
    return _spawnv(mode, file, args)


def _spawnle(mode: int, file: Any, *args: Any) -> int:
    return _spawnv(mode, file, args[:-1])


def _pty_spawn(argv: Any, *_args: Any, **_kwargs: Any) -> int:
    words = [argv] if isinstance(argv, str) else list(argv)
    job = _start(_argv_line(words[0], words))
    status = job.wait()
    sys.stdout.write(job.output())
    return status << 8  # a wait status, as pty.spawn returns


def _refused(call: str, why: str) -> Callable[..., Any]:
    def refuse(*args: Any, **_kwargs: Any) -> Any:
        what = " ".join(repr(a) for a in args[:3])
        raise MininetError(f"{call}({what}): {why} under bufferlab mininet; run simulated tools with "
                           "os.system, subprocess or a node's cmd()/popen()")
    return refuse


#: every other way Python offers to start a program: routed to the simulation when it can wait
#: for the tool's end (spawn with P_WAIT, pty.spawn, getoutput), refused when it needs a real process
_REPLACES = "it would replace the Python process with a real program"
_REAL_PID = "it returns the process id of a real program"
_ROUTES: list[tuple[Any, str, Callable[..., Any]]] = [
    (subprocess, "getoutput", _getoutput), (subprocess, "getstatusoutput", _getstatusoutput),
    (os, "popen", _os_popen), (pty, "spawn", _pty_spawn),
    *[(os, name, _spawnv) for name in ("spawnv", "spawnve", "spawnvp", "spawnvpe")],
    *[(os, name, _spawnl) for name in ("spawnl", "spawnlp")],
    *[(os, name, _spawnle) for name in ("spawnle", "spawnlpe")],
    *[(os, name, _refused(f"os.{name}", _REPLACES)) for name in
      ("execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp", "execvpe")],
    *[(os, name, _refused(f"os.{name}", _REAL_PID)) for name in ("posix_spawn", "posix_spawnp")],
    (asyncio, "create_subprocess_exec", _refused("asyncio.create_subprocess_exec", _REAL_PID)),
    (asyncio, "create_subprocess_shell", _refused("asyncio.create_subprocess_shell", _REAL_PID)),
]


def script_files(script_dir: Path) -> Callable[[str], bool]:
    """Whether a code file is one of the script's own: under its folder, but neither
    bufferlab itself (an editable install beside the script) nor an installed library (a
    ``.venv`` in the script's folder): those keep the real clock, so that run.json's
    "started" and every other clock of bufferlab's own read the wall clock."""
    here = str(script_dir.resolve()) + os.sep
    # bufferlab, the environment, and the interpreter's standard library (a venv's base)
    prefixes = (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix)
    others = [Path(__file__).resolve().parent.parent, *(Path(p) for p in prefixes)]
    # only folders inside the script's: a script kept in a library's folder is still the script
    skip = tuple(o for o in {str(p.resolve()) + os.sep for p in others} if o.startswith(here) and o != here)

    def own(filename: str) -> bool:
        path = os.path.abspath(filename)
        if not path.startswith(here) or path.startswith(skip):
            return False
        parts = path[len(here):].split(os.sep)
        return not any(p in ("site-packages", "dist-packages") for p in parts)
    return own


@contextmanager
def simulated_process(script_dir: Path) -> Iterator[None]:
    """Route the script's own time and process calls into the simulation (see the module doc)."""
    own = script_files(script_dir)
    patches: list[tuple[Any, str, Callable[..., Any]]] = [
        (time, "sleep", clock.sleep), (time, "time", clock.time), (time, "monotonic", clock.time),
        (time, "perf_counter", clock.time), (os, "system", _system), (subprocess, "run", _run),
        (subprocess, "call", _call), (subprocess, "check_call", _check_call),
        (subprocess, "check_output", _check_output), (subprocess, "Popen", _popen),
        *[(mod, name, fn) for mod, name, fn in _ROUTES if hasattr(mod, name)],
    ]
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]

    def routed(real: Callable[..., Any], simulated: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            fn = simulated if own(sys._getframe(1).f_code.co_filename) else real
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
        discard(prev)
    release(root)


def run_script(script: Path, args: list[str], results: Path, seed: int = 1, report: bool = True) -> int:
    """Run ``script``; its exit status (SystemExit's code), 2 for a bufferlab error, 1 when it
    raised, 128 + the signal when SIGINT or SIGTERM stopped it. However it ends, the network
    it left running is stopped (what runs Ctrl-C'd) and the results are written: summary.json
    (with ``error`` or ``interrupted``), the tables and the report."""
    script = script.resolve()
    check_script(script, "script")
    slug = script.stem
    root = results.resolve() / slug
    # before the folder is touched: SIGTERM's default would kill the process in the middle of
    # replacing it (fuzz_signals.py campaign 6 left a half-written marker); Interrupted leaves
    # it whole (_fresh releases the lock, cli.main says "interrupted")
    signals_raise()
    prev = _fresh(root, script)
    net_mod.results_in(results.resolve(), slug, seed, fresh=False)
    clock.reset()
    cwd, argv = os.getcwd(), sys.argv
    status = 0
    error: str | None = None
    #: the script line that stopped it, as summary.json lists a failed command
    failure: dict[str, Any] | None = None
    interrupted: str | None = None
    environment: OSError | None = None
    try:  # SIGINT/SIGTERM raise Interrupted wherever the script (or the engine) is
        os.chdir(root)
        sys.argv = [str(script), *args]
        with mininet_modules(), simulated_process(script.parent):
            runpy.run_path(str(script), run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, int | None):  # sys.exit("message"): python prints it
            print(e.code, file=sys.stderr)
    except BufferlabError as e:
        error = f"{_script_line(e, script)}error: {e}"
        print(error, file=sys.stderr)
        status = 2
        failure = _script_failure(e, script, status, str(e))
    except KeyboardInterrupt as e:
        interrupted = signal_name(e)
        status = 128 + getattr(e, "signum", 2)
    except Exception as e:  # the script's own mistake: its traceback, as python prints it
        if isinstance(e, OSError) and e.errno in ENVIRONMENT_ERRORS:
            environment = e  # a full disk, a read-only folder: said (cli.py) once the rest is written
        else:
            _print_script_traceback(e, script)
        error = f"{_script_line(e, script)}{type(e).__name__}: {e}"
        status = 1
        failure = _script_failure(e, script, status, f"{type(e).__name__}: {e}")
    finally:
        with signals_deferred():  # a second signal waits until everything is written
            os.chdir(cwd)
            sys.argv = argv
            for s in list(clock._current):  # a network the script left running
                clock.detach(s)
                s.close(error, interrupted)
            clock.reset()  # the next network of this process (a script or the API) starts at 0
            net_mod.results_in(Path("results"), "mininet")
            if error is not None or interrupted is not None:
                _note_end(root, error, interrupted, failure)
            if (root / "summary.json").is_file():
                after_run(root, report=report, echo=lambda s: print(s, file=sys.stderr))
            _done(root, prev, status == 0)
    if environment is not None:
        raise environment
    if interrupted is not None:
        print(f"bufferlab: interrupted by {interrupted}: what the script ran until then is in {root}",
              file=sys.stderr)
    print(f"{script.name}: results in {root}")  # the closing line on stdout, as bufferlab run's
    return status


#: the largest Python file run (a script, an mn --custom file): far beyond any lab's
MAX_SCRIPT_BYTES = 16 * 1024 * 1024


def check_script(path: Path, what: str) -> None:
    """A readable Python file of a sane size, else an error saying what ``path`` is (a folder,
    /dev/zero, which runpy would read for ever, ...)."""
    if not path.is_file():
        why = not_a_file(path)
        raise BufferlabError(f"{path}: {'no such ' + what if why == 'no such file' else why}")
    if path.stat().st_size > MAX_SCRIPT_BYTES:
        raise BufferlabError(f"{path}: more than {MAX_SCRIPT_BYTES >> 20} MiB: not a Mininet {what}")
    # what python cannot even read as source (runpy raised it with bufferlab's frames, no place)
    raw = path.read_bytes()
    if b"\0" in raw:
        line = raw.count(b"\n", 0, raw.index(b"\0")) + 1
        raise BufferlabError(f"{path}:{line}: error: a NUL byte, which Python source cannot hold")
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(raw).readline)[0]
        raw.decode(encoding)
    except SyntaxError as e:  # a coding declaration python does not know
        raise BufferlabError(f"{path}:{e.lineno or 1}: error: {e.msg}") from None
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise BufferlabError(f"{path}:{line}: error: not {encoding} text: byte 0x{raw[e.start]:02x} at byte "
                             f"offset {e.start} (python reads a script as UTF-8 unless it declares a "
                             "coding)") from None


def _print_script_traceback(e: BaseException, script: Path) -> None:
    """The traceback from the script's first frame on (``python SCRIPT.py`` prints that); for
    the script's own SyntaxError, only where it is (no frame of bufferlab's, as python)."""
    tb = e.__traceback__
    while tb is not None and Path(tb.tb_frame.f_code.co_filename) != script:
        tb = tb.tb_next
    if tb is None and _syntax_line(e, script) is not None:
        traceback.print_exception(type(e), e, None, file=sys.stderr)
        return
    traceback.print_exception(type(e), e, tb or e.__traceback__, file=sys.stderr)


def _syntax_line(e: BaseException, script: Path) -> int | None:
    """The line of a SyntaxError in the script itself (it has no frame there)."""
    if isinstance(e, SyntaxError) and e.filename and e.lineno and Path(e.filename).resolve() == script:
        return e.lineno
    return None


def _note_end(root: Path, error: str | None, interrupted: str | None,
              failure: dict[str, Any] | None = None) -> None:
    """``error``/``interrupted`` in summary.json, also when the script had stopped its network;
    the script line that stopped it among the ``failures``."""
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
    failures = summary.setdefault("failures", [])
    if failure is not None and isinstance(failures, list) and failure not in failures:
        failures.append(failure)
    write_json_atomic(path, summary)


def _script_failure(e: BaseException, script: Path, status: int, message: str) -> dict[str, Any]:
    """The script's line that raised ``e`` as a summary.json failure (the keys of a failed
    command's: run/scheduler.py ``Failure``)."""
    where = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == script]
    line = where[-1].lineno if where else _syntax_line(e, script)
    text = (where[-1].line or "").strip() if where else (getattr(e, "text", None) or "").strip()
    return {"node": "script", "part": "mininet", "where": f"{script.name}:{line}" if line else script.name,
            "command": text or script.name, "status": status, "message": message, "allowed": False}


def _script_line(e: BaseException, script: Path) -> str:
    """``SCRIPT:LINE: `` of the script's innermost line in the traceback."""
    where = [f for f in traceback.extract_tb(e.__traceback__) if Path(f.filename).resolve() == script]
    line = where[-1].lineno if where else _syntax_line(e, script)
    return f"{script.name}:{line}: " if line else ""


__all__ = ["run_script", "simulated_process", "mininet_modules"]
