"""Where a sweep's runs execute: a local process pool, a Dask cluster or Ray.

Each executor yields run records as runs complete (``as_completed`` /
``ray.wait``), never in submission order, so progress and caching follow the
work actually done. Dask and Ray are optional extras; asking for one that is
not installed is an error that says how to install it. Workers must see the
same results folder (one machine, or a shared filesystem) and an installed
bufferlab of the same version.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from ..errors import BufferlabError
from .runs import RunJob, execute

Records = Iterator[dict[str, Any]]
EXECUTORS = ("local", "dask", "ray")


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _extra(module: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise BufferlabError(
            f"error: --executor {extra} needs {module.split('.')[0]} ({e})\n"
            f"  hint: pip install 'bufferlab[{extra}]' (or use the default local executor)"
        ) from None


def local(jobs: list[RunJob], workers: int, address: str | None) -> Records:
    if address is not None:
        raise BufferlabError("error: --address is for --executor dask or ray, not the local pool")
    if workers == 1:  # no pool: the same results, one process, easier to debug
        for job in jobs:
            yield execute(job)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(execute, job) for job in jobs]
        try:
            for f in as_completed(futures):
                yield f.result()
        finally:
            for f in futures:
                f.cancel()


#: how long a Dask cluster may have no worker (starting, or all lost) before the sweep gives up
DASK_NO_WORKER_S = 120.0


def dask(jobs: list[RunJob], workers: int, address: str | None) -> Records:
    distributed = _extra("dask.distributed", "dask")
    cluster = None
    if address is None:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    with distributed.Client(address or cluster) as client:
        futures = client.map(execute, jobs, pure=False)
        try:
            yield from _dask_results(distributed, client, futures)
        finally:
            client.cancel(futures)
    if cluster is not None:
        cluster.close()


def _dask_results(distributed: Any, client: Any, futures: list[Any]) -> Records:
    """Results as they complete; an error, not a hang, when the cluster has had no worker for
    ``DASK_NO_WORKER_S`` (workers that never started or all died: Dask would wait forever)."""
    pending = distributed.as_completed(futures)
    idle_since = time.monotonic()
    while not pending.is_empty():
        batch = pending.next_batch(block=False)
        for f in batch:
            yield f.result()
        if batch or client.scheduler_info().get("workers"):
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > DASK_NO_WORKER_S:
            raise BufferlabError(f"error: the Dask cluster has had no worker for {DASK_NO_WORKER_S:g} s; "
                                 "the finished runs are kept\n  hint: check the workers' logs, then run "
                                 "the same command again to run the missing ones")
        if not batch:
            time.sleep(0.05)


def ray(jobs: list[RunJob], workers: int, address: str | None) -> Records:
    ray_mod = _extra("ray", "ray")
    ray_mod.init(address=address, num_cpus=None if address else workers, ignore_reinit_error=True,
                 include_dashboard=False, log_to_driver=False)
    remote = ray_mod.remote(num_cpus=1)(execute)
    pending = [remote.remote(job) for job in jobs]
    try:
        while pending:
            done, pending = ray_mod.wait(pending, num_returns=1)
            yield ray_mod.get(done[0])
    finally:
        for ref in pending:
            ray_mod.cancel(ref)


def executor(name: str) -> Callable[[list[RunJob], int, str | None], Records]:
    return {"local": local, "dask": dask, "ray": ray}[name]
