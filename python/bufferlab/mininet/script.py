"""``bufferlab mininet SCRIPT.py [ARGS]``: run an unmodified Mininet script in simulated time.

The script's imports say ``bufferlab.mininet`` instead of ``mininet``. While it runs,
``time.sleep``/``time.time`` read and advance simulated time (clock.py), and
``os.system``, ``os.popen`` and ``subprocess``'s ``run``/``call``/``check_call``/
``check_output``/``Popen`` run a simulated tool (tc, sysctl, ping, iperf3, ...) in the
network's root namespace; any other program is an error naming the command.
"""

from __future__ import annotations

import io
import os
import runpy
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..run.programs import PROGRAMS
from . import clock
from .net import Mininet
from .node import ROOT, Node
from .session import MininetError


class RootNode(Node):
    """The root namespace (where a script's own os.system lines run)."""

    in_namespace = False


def _line(args: Any, where: str) -> str:
    text = shlex.join(str(a) for a in args) if isinstance(args, list | tuple) else str(args)
    words = shlex.split(text)
    # VAR=value prefixes (LANG=C ping ...) do not change what runs
    while words and "=" in words[0] and not words[0].startswith("="):
        words.pop(0)
    if not words:
        raise MininetError(f"{where}({text!r}): an empty command line")
    program = os.path.basename(words[0])
    if program not in PROGRAMS:
        raise MininetError(
            f"{where}({text!r}): {program!r} is not a simulated tool, so it cannot run inside the "
            f"simulation; simulated tools: {', '.join(sorted(PROGRAMS))}")
    return " ".join(shlex.quote(w) for w in [program, *words[1:]])


def _root() -> RootNode:
    clock.current()  # a clear error when no network runs
    return RootNode(ROOT)


def _system(command: str) -> int:
    out = _root().cmd(_line(command, "os.system"))
    sys.stdout.write(out)
    return 0


def _os_popen(command: str, mode: str = "r", buffering: int = -1) -> io.StringIO:
    return io.StringIO(_root().cmd(_line(command, "os.popen")))


class _CompletedRun:
    """What run/check_output see of a finished line."""

    def __init__(self, args: Any, kwargs: dict[str, Any], where: str) -> None:
        node = _root()
        out = node.cmd(_line(args, where))
        self.returncode = node.status
        text = kwargs.get("text") or kwargs.get("universal_newlines") or kwargs.get("encoding")
        self.stdout: Any = out if text else out.encode()
        self.args = args

    def completed(self, capture: bool) -> subprocess.CompletedProcess[Any]:
        out = self.stdout if capture else None
        return subprocess.CompletedProcess(self.args, self.returncode or 0, out, None)


def _run(args: Any, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    r = _CompletedRun(args, kwargs, "subprocess.run")
    capture = bool(kwargs.get("capture_output")) or kwargs.get("stdout") == subprocess.PIPE
    if not capture:
        sys.stdout.write(r.stdout if isinstance(r.stdout, str) else r.stdout.decode())
    if kwargs.get("check") and r.returncode:
        raise subprocess.CalledProcessError(r.returncode or 0, args, r.stdout)
    return r.completed(capture)


def _call(args: Any, **kwargs: Any) -> int:
    return _run(args, **kwargs).returncode


def _check_call(args: Any, **kwargs: Any) -> int:
    return _run(args, check=True, **kwargs).returncode


def _check_output(args: Any, **kwargs: Any) -> Any:
    return _run(args, check=True, capture_output=True, **kwargs).stdout


def _popen(args: Any, *rest: Any, **kwargs: Any) -> Any:
    return _root().popen(_line(args, "subprocess.Popen"))


#: (module, attribute, replacement) while a script runs
_PATCHES: list[tuple[Any, str, Any]] = [
    (time, "sleep", clock.sleep), (time, "time", clock.time),
    (os, "system", _system), (os, "popen", _os_popen),
    (subprocess, "run", _run), (subprocess, "call", _call), (subprocess, "check_call", _check_call),
    (subprocess, "check_output", _check_output), (subprocess, "Popen", _popen),
]


@contextmanager
def simulated_world() -> Iterator[None]:
    saved = [(mod, name, getattr(mod, name)) for mod, name, _ in _PATCHES]
    try:
        for mod, name, repl in _PATCHES:
            setattr(mod, name, repl)
        yield
    finally:
        for mod, name, orig in saved:
            setattr(mod, name, orig)


def run_script(path: Path, args: list[str], results_root: Path | None = None) -> int:
    """Run ``path`` as ``__main__`` with ``args``; networks it starts write results/<script>."""
    if not path.is_file():
        raise MininetError(f"{path}: no such script")
    argv = sys.argv
    sys.argv = [str(path), *args]
    Mininet.results_root, Mininet.name = results_root, path.stem
    status = 0
    try:
        with simulated_world():
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
        if clock._session is not None:  # the script forgot net.stop(): its results are still written
            clock._session.close()
            clock.attach(None)
        Mininet.results_root, Mininet.name = None, "mininet"
    return status


__all__ = ["run_script", "simulated_world"]
