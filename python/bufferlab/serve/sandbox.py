"""Paths a page may name: always inside the served folder, never out of it.

A page names files by their path relative to the folder ``bufferlab serve`` serves (DIR),
written with ``/``. :meth:`Sandbox.resolve` refuses, before touching the disk, an empty
path, a NUL, an absolute path (``/etc/passwd``, ``C:\\x``, ``\\\\server\\x``), a backslash
and any ``..`` component (the URL's ``%2e%2e`` is decoded by then, so it is refused too);
then the path is resolved with every symlink followed and must still be inside DIR (a link
inside DIR that points out of it is refused as if it were ``..``). Reads open the resolved
path with ``O_NOFOLLOW``; writes go through safefs (``write_atomic``), never through a link.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..errors import BufferlabError
from ..safefs import O_NOFOLLOW, ensure_dir, write_atomic

#: the largest file a page may read or write through the server (a scenario's own limit)
MAX_FILE_BYTES = 16 * 1024 * 1024
_DRIVE = re.compile(r"^[A-Za-z]:")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class Refused(BufferlabError):
    """A path a page may not use; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class Sandbox:
    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    def resolve(self, rel: str) -> Path:
        """The real path of ``rel`` inside the served folder, or :class:`Refused`."""
        if not isinstance(rel, str) or not rel or "\x00" in rel:
            raise Refused("no path given")
        if rel.startswith(("/", "\\")) or _DRIVE.match(rel) or "\\" in rel:
            raise Refused(f"{rel}: an absolute path or a backslash; paths are relative to the served folder")
        words = rel.split("/")
        if ".." in words:
            raise Refused(f"{rel}: '..' leads out of the served folder")
        real = Path(os.path.realpath(self.root.joinpath(*[w for w in words if w not in ("", ".")])))
        if real != self.root and self.root not in real.parents:
            raise Refused(f"{rel}: a symbolic link that leads out of the served folder")
        return real

    def relative(self, path: Path) -> str:
        """``path`` (inside the served folder) as a page names it."""
        rel = Path(os.path.realpath(path)).relative_to(self.root).as_posix()
        return "" if rel == "." else rel

    def read_bytes(self, rel: str, limit: int = MAX_FILE_BYTES) -> bytes:
        """The bytes of a regular file inside the served folder (opened without following a
        link, so a link swapped in after :meth:`resolve` is refused)."""
        path = self.resolve(rel)
        try:
            fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            raise Refused(f"{rel}: no such file", 404) from None
        except OSError as e:
            raise Refused(f"{rel}: cannot open it ({e.strerror})") from None
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise Refused(f"{rel}: not a file", 404)
            data = f.read(limit + 1)
        if len(data) > limit:
            raise Refused(f"{rel}: larger than {limit >> 20} MiB", 413)
        return data

    def read_text(self, rel: str) -> str:
        try:
            return self.read_bytes(rel).decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{rel}: not UTF-8 text", 415) from None

    def save_text(self, rel: str, text: str, suffixes: tuple[str, ...]) -> Path:
        """Write a text file (one of ``suffixes``) inside the served folder, whole or not at all,
        never through a link (safefs.write_atomic); its folder is made if missing."""
        path = self.resolve(rel)
        if path.suffix.lower() not in suffixes:
            raise Refused(f"{rel}: only {', '.join(suffixes)} files are written here")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused(f"{rel}: the text is not valid Unicode", 415) from None
        if len(data) > MAX_FILE_BYTES:
            raise Refused(f"{rel}: larger than {MAX_FILE_BYTES >> 20} MiB", 413)
        if path.is_dir():
            raise Refused(f"{rel}: is a folder")
        ensure_dir(path.parent, self.root)
        write_atomic(path, text)
        return path
