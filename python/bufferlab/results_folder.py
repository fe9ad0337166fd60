"""Results folders are bufferlab's own: a marker, what may be replaced, one writer.

Every folder a command makes for its results (a run's or a Mininet script's
``<-o>/<name>/``, a sweep's ``<-o>/<sweep>/``, ``compare -o DIR``) carries
:data:`MARKER`, a small JSON file bufferlab wrote: its version, the folder's
kind and, for runs, whether the run completed. Only such a folder is ever
replaced or deleted. A folder in the way that bufferlab did not write and that
holds anything is an error naming it; nothing in it is touched (``-o .`` next
to ``lab/lab.toml`` used to delete ``lab/``).

Folders written before the marker existed are recognised by their files: a
run's by ``run.json`` (or ``summary.json``), a sweep's by ``sweep.parquet`` or
its ``runs/<run-id>`` folders, a comparison's by ``compare.html``/``.csv``.

A run replaces its folder through ``<name>.prev`` (:func:`fresh`): the previous
run waits there until the new one completes. A partial run (interrupted,
failed, stopped, killed) never pushes out a complete one: if the folder holds a
partial run and ``.prev`` a complete one, the partial one goes.

One writer per folder: :func:`writing` holds an ``flock`` on ``.<name>.lock``
beside the folder (beside, because the folder itself is renamed and replaced)
with the holder's pid, command and start time in it, which a second writer's
error names. The kernel drops the lock of a process that dies, so a stale lock
file is simply taken over. No locking where ``fcntl`` is missing (Windows).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .errors import BufferlabError
from .safefs import O_NOFOLLOW, open_write, remove_tree, write_atomic
from .version import __version__

try:
    import fcntl
except ImportError:  # Windows: no flock; one writer per folder is then the user's care
    fcntl = None  # type: ignore[assignment]

MARKER = ".bufferlab-results"
KINDS = ("run", "mininet", "sweep", "compare")
#: kinds that may replace each other at one place: a run's and a Mininet script's results
#: are alike (results/<name>); a sweep or a comparison is never replaced by a run
_FAMILY = {"run": "run", "mininet": "run", "sweep": "sweep", "compare": "compare"}
#: each kind in messages
_NOUN = {"run": "run", "mininet": "Mininet run", "sweep": "sweep", "compare": "comparison"}
#: a sweep's run folders (sweep/runs.py: sha256 prefix), finished or under way
_RUN_ID = re.compile(r"[0-9a-f]{16}(\.partial)?")
#: what is read of a marker, lock or run.json at most (they are a few hundred bytes)
_SMALL = 1 << 16
#: an older run's summary.json, read whole (only for folders without the marker)
_SUMMARY = 1 << 30
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class FolderError(BufferlabError):
    """A results folder that may not be used: ``error: PATH: WHAT`` and a hint."""

    def __init__(self, path: Path | str, what: str, hint: str) -> None:
        super().__init__(f"error: {path}: {what}\n  hint: {hint}")
        self.path = Path(path)


def _read_json(path: Path, limit: int = _SMALL) -> Any:
    """A JSON file's contents, never through a link, never from a FIFO or device (which
    could block or not end); None if absent, unreadable or longer than ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = f.read(limit + 1)
            return json.loads(data.decode("utf-8")) if len(data) <= limit else None
    except (OSError, ValueError, RecursionError):
        return None


def read_marker(folder: Path) -> dict[str, Any] | None:
    doc = _read_json(folder / MARKER)
    return doc if isinstance(doc, dict) and doc.get("kind") in KINDS else None


def write_marker(folder: Path, kind: str, complete: bool | None = None) -> None:
    doc: dict[str, Any] = {"tool": "bufferlab", "version": __version__, "kind": kind}
    if complete is not None:
        doc["complete"] = complete
    write_atomic(folder / MARKER, json.dumps(doc) + "\n")


def _legacy_kind(folder: Path) -> str | None:
    """The kind of a folder an older bufferlab wrote (no marker), by its files."""
    run = _read_json(folder / "run.json")
    if isinstance(run, dict) and "started_unix" in run:
        return "run"
    summary = _read_json(folder / "summary.json", _SUMMARY)
    if isinstance(summary, dict) and "parts" in summary and "scenario" in summary:
        return "run"
    if (folder / "sweep.parquet").is_file():
        return "sweep"
    runs = folder / "runs"
    if runs.is_dir() and not runs.is_symlink() and any(_RUN_ID.fullmatch(e.name) for e in os.scandir(runs)):
        return "sweep"
    if (folder / "compare.html").is_file() or (folder / "compare.csv").is_file():
        return "compare"
    return None


def kind_of(folder: Path) -> str | None:
    """``run``, ``mininet``, ``sweep`` or ``compare`` for a folder bufferlab wrote, else None."""
    m = read_marker(folder)
    return m["kind"] if m is not None else _legacy_kind(folder)


def complete(folder: Path) -> bool:
    """The folder holds a run that completed (marker; for an older folder, a summary.json
    that records no interruption, stop or error)."""
    m = read_marker(folder)
    if m is not None:
        return m.get("complete") is True
    s = _read_json(folder / "summary.json", _SUMMARY)
    return (isinstance(s, dict) and s.get("error") is None
            and not any(k in s for k in ("interrupted", "stopped")))


def _holds(folder: Path) -> str:
    names = sorted(e.name for e in os.scandir(folder))
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return ", ".join(names[:3]) + more


def _inside(path: Path, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def check_usable(folder: Path, kind: str, hint: str, inputs: Iterable[Path] = ()) -> None:
    """Raise :class:`FolderError` unless a ``kind`` command may replace or write into
    ``folder``: it is absent, a symlink (only the link itself would go), an empty folder,
    or a folder bufferlab wrote of the same family. ``inputs`` (the scenario, the script)
    may never be inside it."""
    if not os.path.lexists(folder) or os.path.islink(folder):
        return
    if not folder.is_dir():
        raise FolderError(folder, f"is a file, not a results folder; the {_NOUN[kind]} needs a folder there",
                          hint)
    found = kind_of(folder)
    if found is None and any(os.scandir(folder)):
        raise FolderError(folder, f"is a folder bufferlab did not write (it holds {_holds(folder)}); "
                          f"the {_NOUN[kind]} leaves it alone", hint)
    if found is not None and _FAMILY[found] != _FAMILY[kind]:
        raise FolderError(folder, f"holds a bufferlab {_NOUN[found]}, which a {_NOUN[kind]} does not replace",
                          hint)
    for f in inputs:
        if _inside(f, folder):
            raise FolderError(folder, f"holds {f}, which this {_NOUN[kind]} reads; its results would "
                              "replace it",
                              f"move {Path(f).name} out of {folder}, or {hint}")


@contextmanager
def _os_errors(folder: Path, what: str, hint: str) -> Iterator[None]:
    """An OSError in the block (a file in the way, read-only, no space, name too long) as
    a :class:`FolderError` naming the path."""
    try:
        yield
    except OSError as e:
        why = "a file is in the way" if isinstance(e, FileExistsError) else e.strerror
        raise FolderError(e.filename or folder, f"cannot {what} ({why})", hint) from None


def fresh(root: Path, kind: str, hint: str, inputs: Iterable[Path] = ()) -> Path | None:
    """Make ``root`` a new, empty, marked folder (not complete yet). What was there, once
    :func:`check_usable` allows it, becomes ``<root>.prev`` (a link is only unlinked),
    unless it is a partial run and ``.prev`` a complete one: then the partial one goes.
    Returns ``.prev`` if it exists (the caller removes it when its run completes)."""
    with _os_errors(root, "make the results folder", hint):
        return _fresh(root, kind, hint, list(inputs))


def _fresh(root: Path, kind: str, hint: str, inputs: list[Path]) -> Path | None:
    prev = root.with_name(root.name + ".prev")
    check_usable(root, kind, hint, inputs)
    present = os.path.lexists(root)
    if present or os.path.lexists(prev):
        try:
            check_usable(prev, kind, hint, inputs)
        except FolderError:
            if present:
                raise
            return _make(root, kind, None)  # not ours and nothing to move there: left alone
    root.parent.mkdir(parents=True, exist_ok=True)
    if os.path.islink(root):
        os.unlink(root)  # never followed: its target stays as it is
    elif present:
        if not complete(root) and os.path.isdir(prev) and not os.path.islink(prev) and complete(prev):
            remove_tree(root)  # a partial run gives way: the last complete one stays as .prev
        else:
            if os.path.lexists(prev):
                discard(prev)
            os.rename(root, prev)
    return _make(root, kind, prev if os.path.lexists(prev) else None)


def discard(folder: Path) -> None:
    """Remove a results folder bufferlab wrote (the previous run a completed one replaces).
    Its marker says "not complete" first: a removal cut short (SIGKILL, power) leaves a
    partial run, which the next run replaces, never a "complete" one with files missing."""
    if not os.path.islink(folder) and os.path.isdir(folder):
        marker = read_marker(folder)
        if marker is not None and marker.get("complete") is True:
            write_marker(folder, marker["kind"], complete=False)
    remove_tree(folder)


def _make(root: Path, kind: str, prev: Path | None) -> Path | None:
    root.parent.mkdir(parents=True, exist_ok=True)
    os.mkdir(root)
    write_marker(root, kind, complete=False)
    return prev


def claim(folder: Path, kind: str, hint: str) -> None:
    """A folder to write into, kept across commands (a sweep's, compare's): made and
    marked if absent (or an empty folder, or a link, which is replaced); an older
    bufferlab's folder of this kind gets its marker; anything else is an error."""
    with _os_errors(folder, "make the results folder", hint):
        check_usable(folder, kind, hint)
        if os.path.islink(folder):
            os.unlink(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if read_marker(folder) is None:
            write_marker(folder, kind)


# ---------------------------------------------------------------- one writer


class _Held:
    def __init__(self, path: Path, f: IO[Any] | None) -> None:
        self.path, self.f, self.count, self.pid = path, f, 1, os.getpid()


#: locks this process holds (lock file path -> holder); taking one again only counts
_HELD: dict[str, _Held] = {}


def lock_path(folder: Path) -> Path:
    return folder.with_name(f".{folder.name}.lock")


def _command() -> str:
    argv0 = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    prog = "bufferlab" if argv0 in ("bufferlab", "cli.py", "__main__.py") else argv0
    return shlex.join([prog, *sys.argv[1:]])


def _holder(path: Path) -> str:
    # the holder writes who it is just after it takes the lock: a second writer that came in
    # between waits a moment for that (fuzz_signals.py: a `report` 48 ms after a `run`)
    deadline = time.monotonic() + HOLDER_WAIT_S
    while not _names_its_holder(doc := _read_json(path)) and time.monotonic() < deadline:
        time.sleep(0.01)
    if not _names_its_holder(doc):
        return "another process (it has not said which yet)"
    pid = doc["pid"]
    try:
        os.kill(pid, 0)
        alive = ""
    except ProcessLookupError:
        alive = ", no longer running: processes it started still hold the lock"
    except OSError:
        alive = ""
    return f"pid {pid}{alive}, `{doc.get('command', '?')}`, started {doc.get('started', '?')}"


#: how long a refused writer waits for the lock's holder to say who it is
HOLDER_WAIT_S = 0.5


def _names_its_holder(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("pid"), int)


def acquire(folder: Path) -> None:
    """Become ``folder``'s one writer, or raise :class:`FolderError` naming the holder."""
    with _os_errors(folder, "lock the results folder", "choose another folder with -o"):
        _acquire(folder)


def _acquire(folder: Path) -> None:
    path = lock_path(folder)
    key = os.path.abspath(path)
    held = _HELD.get(key)
    if held is not None and held.pid == os.getpid():
        held.count += 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        _HELD[key] = _Held(path, None)
        return
    for _ in range(20):
        f = open_write(path, "a")  # a link planted there is replaced, never followed
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                _HELD[key] = _Held(path, f)  # no flock here (ENOLCK: some network file systems)
                return
            f.close()
            raise FolderError(folder, f"is being written by another bufferlab ({_holder(path)})",
                              "wait until it ends, or stop it; two commands writing one results "
                              "folder would mix and delete each other's files") from None
        # the previous holder may have removed the file between our open and flock
        try:
            same = os.path.samestat(os.stat(path, follow_symlinks=False), os.fstat(f.fileno()))
        except FileNotFoundError:
            same = False
        if not same:
            f.close()
            continue
        _HELD[key] = _Held(path, f)  # held from here: a signal now still has release_all remove it
        os.ftruncate(f.fileno(), 0)
        f.write(json.dumps({"pid": os.getpid(), "command": _command(),
                            "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")}) + "\n")
        f.flush()
        return
    raise FolderError(folder, "could not lock it (its lock file keeps being replaced)",
                      f"remove {path} if no bufferlab is writing there")


def release(folder: Path) -> None:
    key = os.path.abspath(lock_path(folder))
    held = _HELD.get(key)
    if held is None or held.pid != os.getpid():
        return
    held.count -= 1
    if held.count:
        return
    del _HELD[key]
    if held.f is None:
        return
    try:
        # removed while still locked, so no other process can be holding that file
        if os.path.samestat(os.stat(held.path, follow_symlinks=False), os.fstat(held.f.fileno())):
            os.unlink(held.path)
    except OSError:
        pass
    held.f.close()


def close_inherited() -> None:
    """In a forked child (a sweep's pool worker): close its copies of the parent's lock files.
    A flock belongs to the open file, which fork shares: the child's copy would keep the
    parent's lock held after the parent was killed, until the child ends too (flock(2)).
    Closing a copy, unlike LOCK_UN, leaves the parent's lock in place."""
    for key, held in list(_HELD.items()):
        if held.pid != os.getpid():
            del _HELD[key]
            if held.f is not None:
                held.f.close()  # flushed when written: closing writes nothing


def release_all() -> None:
    """Let go of every lock this process holds (``bufferlab``'s end: its lock files go)."""
    for held in [h for h in _HELD.values() if h.pid == os.getpid()]:
        held.count = 1
        release(held.path.with_name(held.path.name[1:-len(".lock")]))


@contextmanager
def writing(folder: Path) -> Iterator[None]:
    """Hold ``folder``'s lock for the block (see :func:`acquire`)."""
    acquire(folder)
    try:
        yield
    finally:
        release(folder)


__all__ = ["MARKER", "FolderError", "acquire", "check_usable", "claim", "complete", "discard", "fresh",
           "kind_of", "lock_path", "read_marker", "release", "release_all", "write_marker", "writing"]
