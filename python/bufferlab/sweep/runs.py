"""One run of a sweep: its identity, its folder, and executing it.

A run is an ordinary ``bufferlab run`` written to ``<sweep>/runs/<run-id>/``.
Its identity hashes what decides its outputs: the scenario text after
substitution and the parameters, the parts it runs, its seed and the bufferlab
version; a folder with a ``run.json`` of status "ok" is a finished run and is
never redone unless asked (``--force``). A run is written under ``<run-id>.partial`` and renamed
when done, so a killed sweep leaves no half-run that looks finished.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from ..errors import BufferlabError
from ..outputs.report import after_run
from ..run.scheduler import Runner
from ..safefs import remove_tree, write_atomic
from ..scenario.load import Scenario, ScenarioFile, load_scenario
from ..scenario.params import Override, Value
from ..version import __version__

RUN_FILE = "run.json"


@dataclass
class RunJob:
    """Everything a worker needs (plain data: it travels to other processes and machines)."""

    run_id: str
    scenario: str
    params: dict[str, Value]
    #: the parameters given from outside the scenario (the sweep point and --set)
    overrides: dict[str, Value]
    seed: int
    parts: list[str] | None
    folder: str
    #: the scenario as :func:`prepare` built it, the point's parameters substituted and its
    #: parts selected (the worker does not load it again); not in the run's record
    loaded: Scenario = field(repr=False, compare=False)


def run_identity(sc: Scenario, seed: int, parts: list[str] | None) -> str:
    h = hashlib.sha256()
    # the parameters too: a declared parameter that no string uses leaves the text unchanged,
    # and two points must still be two runs (each run.json holds its own values)
    for piece in (__version__, str(seed), json.dumps(parts), json.dumps(sc.params, sort_keys=True), sc.text):
        h.update(piece.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def prepare(scenario: Path, overrides: dict[str, Value], origin: dict[str, str], seeds: list[int],
            parts: list[str] | None, runs_dir: Path, read: ScenarioFile) -> list[RunJob]:
    """The jobs of one point, one per seed, its scenario built once from the file as ``read``
    (so a bad substitution is reported now, with its place)."""
    sc = load_scenario(scenario, [Override(k, v, origin.get(k, "--set")) for k, v in overrides.items()], read)
    _select_parts(sc, parts)
    return [RunJob(run_identity(sc, seed, parts), str(scenario), sc.params, overrides, seed, parts,
                   str(runs_dir), sc) for seed in seeds]


def finished(job: RunJob) -> dict[str, Any] | None:
    """The record of a finished (status "ok") run whose files are all there, or None: a run
    damaged since (a table deleted, run.json edited) is run again, not read for ever."""
    run_dir = Path(job.folder) / job.run_id
    rec = read_record(run_dir)
    if rec is None or rec.get("status") != "ok" or not isinstance(rec.get("root"), str):
        return None
    root = run_dir / rec["root"]
    if not all((root / f).is_file() for f in RUN_OUTPUTS):
        return None
    try:  # the tables' footers (a few hundred bytes each): a truncated or overwritten table shows
        for f in RUN_OUTPUTS[1:]:
            pq.read_metadata(root / f)
    except (OSError, ValueError):
        return None
    return rec


#: the files of a finished run that the sweep's tables are made of (collect.py)
RUN_OUTPUTS = ("summary.json", "tables/flows.parquet", "tables/drops.parquet")
#: the keys of run.json the sweep reads, and their types
_RECORD_TYPES: dict[str, Any] = {"run_id": str, "seed": int, "params": dict, "status": str,
                                 "wall_s": (int, float)}


def read_record(run_dir: Path) -> dict[str, Any] | None:
    """The run's run.json, or None if there is none or it is not one the sweep wrote."""
    path = run_dir / RUN_FILE
    if not path.is_file():  # none, or a FIFO or device planted there (reading it would block)
        return None
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(rec, dict) or not all(isinstance(rec.get(k), t) for k, t in _RECORD_TYPES.items()):
        return None
    return rec


def execute(job: RunJob) -> dict[str, Any]:
    """Run ``job`` (in a worker) and return its record; a failure is recorded, not raised."""
    final = Path(job.folder) / job.run_id
    partial = final.with_name(job.run_id + ".partial")
    remove_tree(partial)  # a link there is unlinked, never followed (safefs.py)
    partial.mkdir(parents=True)
    t0 = time.perf_counter()
    record: dict[str, Any] = {f.name: getattr(job, f.name) for f in fields(job) if f.name != "loaded"}
    record.update(status="ok", error=None, root=None)
    try:
        r = Runner(replace(job.loaded, seed=job.seed), partial, progress=False)
        r.check()
        r.run()
        after_run(r.root, report=False)
        record["root"] = r.root.name
        bad = [str(f) for f in r.failures if not f.allowed]
        if bad or r.stopped:
            record.update(status="failed", error="; ".join(bad) or f"stopped: {r.stopped}")
    except BufferlabError as e:
        record.update(status="failed", error=str(e))
    except Exception as e:  # an engine error in one run must not end the sweep
        record.update(status="failed", error=f"{type(e).__name__}: {e}")
    record["wall_s"] = time.perf_counter() - t0
    write_atomic(partial / RUN_FILE, json.dumps(record, indent=1, sort_keys=True))
    remove_tree(final)
    partial.rename(final)
    return record


def _select_parts(sc: Scenario, parts: list[str] | None) -> None:
    if parts is None:
        return
    names = [p.name for p in sc.parts]
    missing = [p for p in parts if p not in names]
    if missing:
        raise BufferlabError(f"error: the scenario has no part {missing[0]!r} (parts: {', '.join(names)})")
    sc.parts = [p for p in sc.parts if p.name in parts]
