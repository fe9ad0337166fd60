"""The servers the scenario's commands started, by address: which netserver, irtt server or web
server answers on a host's port, and what a web server serves.

A client command (netperf, irtt, flent, curl, wget) looks its server up here when it runs: a
real client learns the same by connecting (netperf's control connection, irtt's open
handshake, the HTTP request naming a file of the server's folder). The table belongs to one
run (the runner), and a server whose application has ended is no longer found.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .context import PrepareCtx, RunCtx

__all__ = ["Service", "register", "find", "host_ip", "epoch_s"]


@dataclass
class Service:
    kind: str  # "netserver", "irtt", "http"
    ip: str
    proto: str  # "tcp" or "udp"
    port: int
    app: int
    node: str
    terminal: str
    #: a web server's folder (its terminal's directory when it started, or --directory)
    folder: Path | None = None
    started_ns: int = 0


_TABLES: weakref.WeakKeyDictionary[Any, dict[tuple[str, str, int], Service]] = weakref.WeakKeyDictionary()


def register(rt: RunCtx, svc: Service) -> None:
    _TABLES.setdefault(rt.runner, {})[(svc.ip, svc.proto, svc.port)] = svc


def find(rt: RunCtx, ip: str, proto: str, port: int, kind: str | None = None) -> Service | None:
    svc = _TABLES.get(rt.runner, {}).get((ip, proto, port))
    if svc is None or rt.engine.app_finished(svc.app) or (kind is not None and svc.kind != kind):
        return None
    return svc


def host_ip(pc: PrepareCtx, node: str) -> str:
    """``node``'s address (where its servers listen, what its clients send from)."""
    ip = pc.topo.host_ip(node)
    return ip if ip is not None else "0.0.0.0"


def epoch_s(rt: RunCtx) -> float:
    """Wall-clock seconds of simulated time 0: the profile's epoch, as ``date`` shows it (the
    tools' timestamps: netperf's interim results, fping's ``-D``, irtt's wall clock, flent's)."""
    return float(rt.runner.sc.profile.epoch)
