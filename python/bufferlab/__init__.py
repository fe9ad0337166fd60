"""bufferlab: a fast, deterministic packet-level simulator for bufferbloat,
AQM and TCP congestion-control labs, driven by the labs' own command lines.

    from bufferlab import load_scenario, run_scenario
    summary = run_scenario(load_scenario("scenarios/udp-tbf-netem.toml"))

    import bufferlab
    lab = bufferlab.run("scenarios/lab14-bufferbloat.toml")   # in a notebook: shown inline
    lab.ping                                                  # each table a pandas DataFrame

load_scenario validates a scenario file (TOML: topology, then parts of
"<terminal>: <command line>"); run_scenario runs it and writes
results/<scenario>/ (the tools' own outputs, summary.json, tables, report.html)
and returns summary.json's contents. Every mistake in the input raises a
BufferlabError subclass whose message names the file, line and column.
The `bufferlab` command (bufferlab.cli) does the same from a shell.
"""

from __future__ import annotations

import os as _os
import signal as _signal
import sys as _sys
from typing import Any


def _interrupted_while_importing(signum: int, frame: Any) -> None:
    """The ``bufferlab`` command's SIGINT handler until a command installs its own: Ctrl-C
    while a module is being imported (the first ~0.8 s of every command, and a command's
    own imports later: pandas, pyarrow, matplotlib) prints one line and exits 130, where
    Python would print a traceback from deep inside a library (or "Exception ignored" from
    importlib's lock); anywhere else it raises KeyboardInterrupt as Python's own handler does
    (``cli.main`` turns that into the same line and status)."""
    f = frame
    while f is not None:
        if f.f_code.co_filename.startswith("<frozen importlib"):
            _os.write(2, b"bufferlab: interrupted\n")
            _os._exit(130)
        f = f.f_back
    _signal.default_int_handler(signum, frame)


def _is_the_command() -> bool:
    """Imported for the ``bufferlab`` script or ``python -m bufferlab.cli``, not by a library user."""
    argv = getattr(_sys, "orig_argv", [])
    script = _os.path.basename(_sys.argv[0]) if _sys.argv else ""
    return script.partition(".")[0] in ("bufferlab", "bufferlab-script") or any(
        a == "-m" and b == "bufferlab.cli" for a, b in zip(argv, argv[1:], strict=False))


# first of all: only for the command, and only where Ctrl-C would raise (a background job
# ignores SIGINT, and goes on ignoring it)
if _is_the_command() and _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
    _signal.signal(_signal.SIGINT, _interrupted_while_importing)

from typing import TYPE_CHECKING  # noqa: E402

from .errors import BufferlabError, CommandError, NotSupportedError, ScenarioError  # noqa: E402
from .version import __version__  # noqa: E402

if TYPE_CHECKING:
    from .outputs.notebook import Results, compare
    from .run.notebook import load_ipython_extension  # noqa: F401 - %load_ext bufferlab
    from .run.scheduler import run_scenario
    from .scenario.load import load_scenario

#: names imported on first use, so that ``import bufferlab`` (and ``bufferlab --version``)
#: does not load the runner and its dependencies
_LAZY = {"run_scenario": ".run.scheduler", "load_scenario": ".scenario.load",
         "Results": ".outputs.notebook", "compare": ".outputs.notebook",
         "load_ipython_extension": ".run.notebook"}


def __getattr__(name: str) -> Any:
    from importlib import import_module

    if name == "run":  # the package bufferlab.run, callable: bufferlab.run(path_or_text, **params)
        return import_module(".run", __name__)
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "BufferlabError",
    "Results",
    "compare",
    "run",
    "CommandError",
    "NotSupportedError",
    "ScenarioError",
    "load_scenario",
    "run_scenario",
    "__version__",
]
