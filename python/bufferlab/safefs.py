"""Writing results without ever going through a symlink.

Every file ``bufferlab run`` (and ``report``/``export``) writes under a results
folder is opened here, with ``O_NOFOLLOW`` on its last component; folders are
created by :func:`ensure_dir`, which walks them from the results folder down
with ``lstat``. The policy for a symlink found where an output goes (planted
by someone else; no command a scenario can type makes one) is to **replace
the link**: the link is removed -- its target is never opened, written or
removed -- and a real file or folder is created in its place. So nothing is
ever written outside the results folder through a link. (The results folder
itself is always a fresh one, see ``Runner.run``; ``-o``'s own path is the
user's and is followed like any path given on the command line.)

The Rust core does the same for the pcap and queue trace files it writes
(``capture::create_output``).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

#: 0 where the platform has no O_NOFOLLOW (Windows): the lstat check below still applies
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: Windows: no CRLF translation by the C runtime, outputs are byte for byte the Linux tools'
_BINARY = getattr(os, "O_BINARY", 0)
#: 0 on Windows, which has no FIFOs in the file system
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: what open(2) says for O_NOFOLLOW on a link: ELOOP (Linux, macOS), EMLINK (FreeBSD)
_LINK_ERRNOS = {errno.ELOOP, getattr(errno, "EMLINK", errno.ELOOP)}


def _is_fifo(path: Path | str) -> bool:
    try:
        return stat.S_ISFIFO(os.lstat(path).st_mode)
    except OSError:
        return False


def _drop_link(path: Path) -> None:
    """Remove ``path`` if it is a symlink (never its target)."""
    try:
        if os.path.islink(path):
            os.unlink(path)
    except FileNotFoundError:
        pass


def ensure_dir(path: Path, root: Path | None = None) -> Path:
    """``mkdir -p path`` where every component below ``root`` (default: only
    ``path`` itself) is a real folder: a symlink there is replaced by a new
    folder. A regular file in the way raises as ``mkdir`` does."""
    path = Path(path)
    if root is None:
        comps = [path]
    else:
        rel = path.relative_to(root)
        comps = [root.joinpath(*rel.parts[: k + 1]) for k in range(len(rel.parts))]
        if not root.is_dir():
            root.mkdir(parents=True, exist_ok=True)
    if comps and not comps[0].parent.exists():
        comps[0].parent.mkdir(parents=True, exist_ok=True)
    for c in comps:
        _drop_link(c)
        try:
            os.mkdir(c)
        except FileExistsError:
            if os.path.islink(c):  # a link planted between the two calls
                raise
            if not c.is_dir():
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(c)) from None
    return path


def open_write(path: Path | str, mode: str = "w", encoding: str | None = "utf-8",
               newline: str | None = "\n") -> IO[Any]:
    """``open(path, mode)`` for writing (``w``, ``a``, ``wb``, ``ab``) that never
    follows a symlink at ``path``: a link there is replaced by the new file. ``x``/``xb``
    create a new file only (``FileExistsError`` if anything, a link included, is there)."""
    if mode not in ("w", "a", "wb", "ab", "x", "xb"):
        raise ValueError(f"open_write: mode {mode!r}")
    flags = os.O_WRONLY | os.O_CREAT | _CLOEXEC | _BINARY | O_NOFOLLOW
    flags |= os.O_APPEND if "a" in mode else os.O_EXCL if "x" in mode else os.O_TRUNC
    if not O_NOFOLLOW and "x" not in mode:
        _drop_link(Path(path))
    try:
        # non-blocking: opening a FIFO planted at the path would wait for a reader for ever
        fd = os.open(path, flags | _NONBLOCK, 0o666)
    except OSError as e:
        link = e.errno in _LINK_ERRNOS and os.path.islink(path)
        replaceable = link or (e.errno == errno.ENXIO and _is_fifo(path))  # ENXIO: a FIFO, no reader
        if not replaceable or "x" in mode:
            raise
        os.unlink(path)
        fd = os.open(path, flags | os.O_EXCL | _NONBLOCK, 0o666)
    if stat.S_ISFIFO(os.fstat(fd).st_mode):  # a FIFO with a reader: not ours to feed, replaced
        os.close(fd)
        os.unlink(path)
        fd = os.open(path, flags | os.O_EXCL, 0o666)
    if _NONBLOCK:
        os.set_blocking(fd, True)
    if "b" in mode:
        return os.fdopen(fd, mode)
    return os.fdopen(fd, mode, encoding=encoding, newline=newline)


def write_text(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    with open_write(path, "w", encoding=encoding) as f:
        f.write(text)


@contextmanager
def open_atomic(path: Path | str, mode: str = "wb", encoding: str | None = "utf-8",
                newline: str | None = "\n") -> Iterator[IO[Any]]:
    """:func:`open_write` (``w`` or ``wb``) of a file written whole or not at all: into a
    hidden temporary file next to ``path``, renamed over it when the block ends (a rename
    replaces a link at ``path``, never its target), removed if the block raises (SIGINT,
    SIGTERM, a full disk). So ``path`` is always the previous complete version or the new
    one; a process killed outright (SIGKILL) can leave only the ``.NAME.tmp``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    _drop_link(tmp)
    f = None
    try:  # from the open on: a signal landing right after the file is made removes it too
        f = open_write(tmp, mode, encoding, newline)
        yield f
        f.close()
        try:
            os.replace(tmp, path)
        except OSError as e:  # a folder where the file goes: the error names it, not the temporary
            raise OSError(e.errno, e.strerror, str(path)) from None
    except BaseException:
        if f is not None:
            f.close()
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    """Write ``path`` whole or not at all (:func:`open_atomic`). summary.json, run.json,
    report.html, the tables and plots are written so: a command stopped while writing them
    leaves the previous complete version."""
    with open_atomic(path, "w", encoding=encoding) as f:
        f.write(text)


def write_json_atomic(path: Path | str, doc: Any, indent: int = 2) -> None:
    """``json.dumps(doc, indent=indent) + "\\n"`` written as :func:`write_atomic` writes. A
    document whose compact form passes :data:`INDENT_LIMIT` characters (the summary.json of
    thousands of htb classes or flows) is written compact, on one line, one top-level item
    at a time: json's indenting encoder is pure Python, an order of magnitude slower than
    its compact one (16 MB took 2.5 s of a 4 000-class run), and no one reads megabytes by
    eye. A large document is never more than one top-level item in memory as text."""
    pieces = _compact_pieces(doc)
    head: list[str] = []
    size = 0
    for piece in pieces:
        head.append(piece)
        size += len(piece)
        if size > INDENT_LIMIT:
            break
    else:
        write_atomic(path, json.dumps(doc, indent=indent) + "\n")
        return
    with open_atomic(path, "w") as f:
        f.write("".join(head))
        for piece in pieces:
            f.write(piece)
        f.write("\n")


#: characters of compact JSON above which :func:`write_json_atomic` does not indent
INDENT_LIMIT = 1 << 20


def _compact_pieces(doc: Any) -> Iterator[str]:
    """``json.dumps(doc)`` in pieces, one per top-level item (C-accelerated each)."""
    if isinstance(doc, dict) and doc:
        yield "{"
        for n, (key, value) in enumerate(doc.items()):
            # a one-item dict gives json's own key conversion (ints, floats, None as strings)
            yield (", " if n else "") + json.dumps({key: value})[1:-1]
        yield "}"
    elif isinstance(doc, list) and doc:
        yield "["
        for n, value in enumerate(doc):
            yield (", " if n else "") + json.dumps(value)
        yield "]"
    else:
        yield json.dumps(doc)


def remove_tree(path: Path) -> None:
    """Remove ``path`` (a folder, file or link) without following links: a link
    is unlinked, a folder removed with ``shutil.rmtree`` (which does not follow
    links inside it)."""
    if os.path.islink(path) or (path.exists() and not path.is_dir()):
        os.unlink(path)
    elif path.exists():
        shutil.rmtree(path)


def savefig(fig: Any, path: Path | str, **kwargs: Any) -> None:
    """``fig.savefig(path)`` through :func:`open_atomic` (the format from the suffix); kept
    for later inside :func:`figures_later`. A figure with the "tight" layout engine is laid
    out at its first write and kept so: its PNG and PDF cost one layout, and none is spent
    before :func:`figures_later` writes it."""
    if _later is not None and len(_later) < MAX_LATER_FIGURES:
        _later.append((fig, path, kwargs))
    else:
        _write_figure(fig, path, kwargs)


def _write_figure(fig: Any, path: Path | str, kwargs: dict[str, Any]) -> None:
    with open_atomic(path, "wb") as f:
        fig.savefig(f, format=Path(path).suffix.lstrip(".").lower(), **kwargs)
    # by name: matplotlib is imported by the callers, never at bufferlab's start-up
    if type(fig.get_layout_engine()).__name__ == "TightLayoutEngine":
        fig.set_layout_engine("none")  # the subplot parameters stay as the layout set them


#: figures :func:`figures_later` keeps at most (each holds its data and artists); later ones
#: are written at once
MAX_LATER_FIGURES = 200
#: the figures kept by :func:`figures_later`, in order, or None: written at once
_later: list[tuple[Any, Path | str, dict[str, Any]]] | None = None


@contextmanager
def figures_later() -> Iterator[None]:
    """Inside, :func:`savefig` keeps each figure (matplotlib draws one after ``plt.close``
    too) and the exit writes them all, in order, also when an exception ends the block.
    ``bufferlab grade`` runs the submission inside and leaves after results.json: drawing
    is most of a graded lab's time, and an autograder waits for results.json alone."""
    global _later
    _later = []
    try:
        yield
    finally:
        kept, _later = _later, None
        for fig, path, kwargs in kept:
            _write_figure(fig, path, kwargs)


#: what the machine, not the input, can refuse at any write: a full disk or quota, a read-only
#: file system, a name longer than the file system allows, no permission, a failing disk
ENVIRONMENT_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.ENAMETOOLONG, errno.EACCES, errno.EPERM,
                      errno.EFBIG, errno.EIO}
#: what a results folder someone changed can put in the way of a read or a write: a folder
#: where a file goes (or the reverse), a symlink pointing at itself
IN_THE_WAY = {errno.EISDIR, errno.ENOTDIR, errno.ELOOP}


def special_file(root: Path) -> Path | None:
    """The first FIFO, socket or device in the folder (or a link to one): bufferlab writes
    none, and opening one to read blocks (a FIFO) or never ends (/dev/zero)."""
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            p = Path(folder) / name
            try:
                mode = os.stat(p).st_mode
            except OSError:  # a dangling link: nothing to read
                continue
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return p
    return None


def not_a_file(path: Path | str) -> str:
    """Why ``path`` is not a regular file to read, for a message: ``no such file``, ``is a
    folder``, ``is a character device, not a file`` (/dev/zero, which would never end), ..."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "no such file"
    for test, what in ((stat.S_ISDIR, "is a folder"), (stat.S_ISCHR, "is a character device, not a file"),
                       (stat.S_ISBLK, "is a block device, not a file"),
                       (stat.S_ISFIFO, "is a pipe (FIFO), not a file"),
                       (stat.S_ISSOCK, "is a socket, not a file")):
        if test(mode):
            return what
    return "is not a regular file" if not stat.S_ISREG(mode) else "is a file"
