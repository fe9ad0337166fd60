"""mininet/clean.py's interface: nothing outlives a simulation, so there is nothing to clean."""

from __future__ import annotations


def cleanup() -> None:
    """Mininet removes leftover interfaces and processes; a simulation leaves none."""


class Cleanup:
    @classmethod
    def cleanup(cls, verbose: bool = True) -> None:
        cleanup()


__all__ = ["cleanup", "Cleanup"]
