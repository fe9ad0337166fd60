"""The installed distribution's version (``bufferlab --version``, Flent's ``VERSION``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("bufferlab")
except PackageNotFoundError:  # running from a source tree without installing
    __version__ = "0.0.0+src"
