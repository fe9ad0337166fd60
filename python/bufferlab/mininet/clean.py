"""mininet/clean.py: nothing to clean in a simulation (no namespaces or veths are made)."""

from __future__ import annotations

from .log import info


def cleanup() -> None:
    info("*** Cleanup complete (bufferlab: nothing left behind by a simulated network)\n")


class Cleanup:
    cleanup = staticmethod(cleanup)


__all__ = ["cleanup", "Cleanup"]
