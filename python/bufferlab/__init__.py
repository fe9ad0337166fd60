"""bufferlab: a fast, deterministic packet-level simulator for bufferbloat,
AQM and TCP congestion-control labs, driven by the labs' own command lines.

    from bufferlab import load_scenario, run_scenario
    summary = run_scenario(load_scenario("scenarios/udp-tbf-netem.toml"))
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
