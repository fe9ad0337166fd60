"""Where a sweep's runs execute: a local process pool, a Dask cluster or Ray.

Each executor yields run records as runs complete (``as_completed`` /
``ray.wait``), never in submission order, so progress and caching follow the
work actually done. Dask and Ray are optional extras; asking for one that is
not installed is an error that says how to install it. Workers must see the
same results folder (one machine, or a shared filesystem) and an installed
bufferlab of the same version.
"""

from __future__ import annotations

import ctypes
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from .. import results_folder
from ..errors import BufferlabError

if TYPE_CHECKING:
    from .runs import RunJob

Records = Generator[dict[str, Any], None, None]
EXECUTORS = ("local", "dask", "ray")


def execute(job: RunJob) -> dict[str, Any]:
    """runs.execute, imported when a run starts: `bufferlab sweep -h` (whose parser lists the
    executors) does not load the runner, pyarrow and numpy."""
    from .runs import execute as execute_run

    return execute_run(job)


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
    with ProcessPoolExecutor(max_workers=workers, initializer=worker_init, initargs=(os.getpid(),)) as pool:
        # the first submit forks every worker from this thread: SIGINT and SIGTERM wait until
        # then, so none lands in a child still running the sweep's handlers (worker_init
        # unblocks them there once it set their defaults); here they act right after
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, WORKER_SIGNALS)
        try:
            futures = [pool.submit(execute, job) for job in jobs]
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        try:
            for f in as_completed(futures):
                yield f.result()
        except BrokenProcessPool:
            stop_workers(pool)
            raise BufferlabError(
                "error: a worker process of the sweep died (killed from outside, or out of memory); the "
                "finished runs are kept\n  hint: run the same command again to run the missing ones (with "
                "a smaller -j if memory is short)") from None
        except BaseException:  # a signal, or the sweep closing this generator: stop the runs now
            stop_workers(pool)
            raise
        finally:
            for f in futures:
                f.cancel()


#: the signals a worker takes back to their defaults (the sweep stops its workers itself)
WORKER_SIGNALS = {signal.SIGINT, signal.SIGTERM}
#: Linux's prctl option: the signal a process gets when the thread that forked it ends
PR_SET_PDEATHSIG = 1
#: how often a worker checks that the sweep that started it is still alive
WATCH_PARENT_S = 0.25


def worker_init(parent: int) -> None:
    """Set up a pool worker. Its own process group, so a terminal's Ctrl-C reaches the sweep
    alone and the sweep stops its workers itself (:func:`stop_workers`); SIGINT and SIGTERM
    back to their defaults (fork copied the sweep's handlers, which would turn them into an
    exception the pool hands back as a result); and an exit as soon as the sweep is gone,
    even killed with SIGKILL (``PR_SET_PDEATHSIG`` on Linux, and a watchdog thread
    everywhere, which also covers a worker forked by a thread that has ended). Its copy of
    the sweep's lock file is closed, so a killed sweep's lock is free once the sweep is gone."""
    try:
        os.setpgid(0, 0)
    except OSError:  # pragma: no cover - a session leader already
        pass
    for sig in WORKER_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, WORKER_SIGNALS)  # blocked across the fork (local)
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no prctl: the watchdog alone
            pass
    if os.getppid() != parent:  # the sweep died before this worker was ready
        os._exit(1)
    results_folder.close_inherited()  # the sweep's lock dies with the sweep, not with its workers
    threading.Thread(target=_watch_parent, args=(parent,), name="bufferlab-watch-sweep", daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_PARENT_S)
    os._exit(1)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers, each with its process group; their unfinished runs stay
    ``<run-id>.partial`` folders, which the next sweep removes before running them again."""
    procs = list(getattr(pool, "_processes", None) or {})
    for pid in procs:
        for kill in (os.killpg, os.kill):  # killpg fails for a worker still setting itself up
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    pool.shutdown(wait=True, cancel_futures=True)


#: how long a Dask cluster may have no worker (starting, or all lost) before the sweep gives up
DASK_NO_WORKER_S = 120.0


def dask(jobs: list[RunJob], workers: int, address: str | None) -> Records:
    distributed = _extra("dask.distributed", "dask")
    cluster = None
    if address is None:
        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
    try:
        with distributed.Client(address or cluster) as client:
            futures = client.map(execute, jobs, pure=False)
            try:
                yield from _dask_results(distributed, client, futures)
            finally:
                client.cancel(futures)
    finally:  # an interrupted sweep closes its own cluster too (its worker processes end)
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
