"""bufferlab: a fast, deterministic packet-level simulator for bufferbloat,
AQM and TCP congestion-control labs, driven by the labs' own command lines.

    from bufferlab import load_scenario, run_scenario
    summary = run_scenario(load_scenario("scenarios/udp-tbf-netem.toml"))

load_scenario validates a scenario file (TOML: topology, then parts of
"<terminal>: <command line>"); run_scenario runs it and writes
results/<scenario>/ (the tools' own outputs, summary.json, tables, report.html)
and returns summary.json's contents. Every mistake in the input raises a
BufferlabError subclass whose message names the file, line and column.
The `bufferlab` command (bufferlab.cli) does the same from a shell.
"""

from __future__ import annotations

from .errors import BufferlabError, CommandError, NotSupportedError, ScenarioError
from .run.scheduler import run_scenario
from .scenario.load import load_scenario
from .version import __version__

__all__ = [
    "BufferlabError",
    "CommandError",
    "NotSupportedError",
    "ScenarioError",
    "load_scenario",
    "run_scenario",
    "__version__",
]
