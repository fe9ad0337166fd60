"""The engine as the Python layer sees it: the native ``Simulator`` with JSON
converted to dicts and the engine's exceptions mapped once, here."""

from __future__ import annotations

import json
from typing import Any

from .. import _core
from ..errors import BufferlabError


class EngineError(BufferlabError):
    """The engine refused a request the Python layer built (a bug, or a
    topology the engine cannot build); the message says what."""


class TcFailure(Exception):
    """A tc request the kernel would refuse; ``str()`` is tc's own text."""


class AppStartError(Exception):
    """An application could not start (port in use, unknown device, ...)."""


def capture_handle(capture_id: int) -> int:
    """The wait handle of a capture: negative, so it never equals an application id."""
    return -1 - capture_id


def capture_of(handle: int) -> int:
    return -1 - handle


class Engine:
    def __init__(self, config: dict[str, Any]) -> None:
        try:
            self._sim = _core.Simulator(json.dumps(config))
        except _core.CoreError as e:
            raise EngineError(str(e)) from None
        #: ifb devices in creation order: (terminal, name, engine name); and those set up
        self.ifbs: list[tuple[str, str, str]] = []
        self.ifb_up: set[str] = set()
        #: devices set down (``ip link set DEV down``), by engine name
        self.links_down: set[str] = set()
        #: nstat's history file (``/tmp/.nstat.u0``: one for the machine, every host's root
        #: user shares it, as Mininet's hosts share the file system); None until written
        self.nstat_history: dict[str, int] | None = None

    @property
    def now_ns(self) -> int:
        return self._sim.now_ns()

    def tc(self, request: dict[str, Any]) -> None:
        """``tc qdisc …`` (``TcRequest``; a graft when its parent is a class)."""
        self._tc(self._sim.tc, request)

    def tc_class(self, request: dict[str, Any]) -> str:
        """``tc class …`` (``ClassRequest``): the kernel's warning for tc to print, or ""."""
        return self._tc(self._sim.tc_class, request) or ""

    def tc_filter(self, request: dict[str, Any]) -> None:
        """``tc filter …`` on a qdisc's u32 filters (``FilterRequest``)."""
        self._tc(self._sim.tc_filter, request)

    def tc_hook_filter(self, request: dict[str, Any]) -> None:
        """``tc filter …`` at an ingress/clsact hook (``HookFilterRequest``)."""
        self._tc(self._sim.tc_hook_filter, request)

    @staticmethod
    def _tc(verb: Any, request: dict[str, Any]) -> Any:
        try:
            return verb(json.dumps(request))
        except _core.TcRequestError as e:
            raise TcFailure(str(e)) from None
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def filter_show(self, dev: str, parent: int | None) -> dict[str, Any]:
        """``tc filter show dev DEV [parent P]``: the engine's ``FilterDump`` (the block's
        classid and its ``tcf_proto``s, crates/bufferlab-core/src/qdisc/filter_show.rs)."""
        try:
            return json.loads(self._sim.filter_show(dev, parent))
        except _core.TcRequestError as e:
            raise TcFailure(str(e)) from None

    def qdisc_show(self, dev: str) -> list[dict[str, Any]]:
        try:
            return json.loads(self._sim.qdisc_show(dev))
        except _core.TcRequestError as e:
            raise TcFailure(str(e)) from None

    def class_show(self, dev: str) -> list[dict[str, Any]]:
        """``qdisc_show`` with the classes a qdisc lists only when ``tc class show`` asks
        (cake's flows, under ``xstats["classes"]``)."""
        try:
            return json.loads(self._sim.class_show(dev))
        except _core.TcRequestError as e:
            raise TcFailure(str(e)) from None

    def sockets(self, node: str) -> list[dict[str, Any]]:
        """What ``ss -a`` lists on ``node`` (the engine's app/sockets/diag.rs)."""
        try:
            return json.loads(self._sim.sockets(node))
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def netstat(self, node: str) -> dict[str, dict[str, int]]:
        """``node``'s SNMP counters by group and name (the engine's mib.rs); counters
        the model does not count are absent."""
        try:
            return json.loads(self._sim.netstat(node))
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def add_ifb(self, node: str, name: str, terminal: str = "", shown: str = "") -> None:
        """``ip link add NAME type ifb`` in ``node``'s namespace (``name``: the engine's;
        ``terminal``/``shown``: the namespace and the name ``ip link`` lists it by)."""
        try:
            self._sim.add_ifb(node, name)
        except _core.CoreError as e:
            raise TcFailure(str(e)) from None
        self.ifbs.append((terminal, shown or name, name))

    def set_link_up(self, dev: str, up: bool) -> None:
        """``ip link set DEV up|down``: a downed device drops what it would send or receive."""
        try:
            self._sim.set_link_up(dev, up)
        except _core.CoreError as e:
            raise EngineError(str(e)) from None
        (self.links_down.discard if up else self.links_down.add)(dev)

    def set_offload(self, dev: str, feature: str, on: bool) -> None:
        """``ethtool -K DEV FEATURE on|off`` (tso, gso, gro off)."""
        try:
            self._sim.set_offload(dev, feature, on)
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def offloads(self, dev: str) -> dict[str, bool]:
        """The segmentation offloads of ``dev``: ``{"tso", "gso", "gro"}``."""
        try:
            return json.loads(self._sim.offloads(dev))
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def start_app(self, node: str, spec: dict[str, Any]) -> int:
        try:
            return self._sim.start_app(node, json.dumps(spec))
        except _core.AppError as e:
            raise AppStartError(str(e)) from None
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def peak_backlogs(self) -> dict[str, dict[str, int]]:
        """``{dev: {"bytes", "packets"}}``: the most each interface's qdiscs held since the
        last ``reset_peak_backlogs``."""
        return json.loads(self._sim.peak_backlogs())

    def reset_peak_backlogs(self) -> None:
        self._sim.reset_peak_backlogs()

    def set_listener_tcp(self, app_id: int, spec: dict[str, Any]) -> None:
        """A listening TCP application takes ``spec`` for connections it accepts from now on."""
        try:
            self._sim.set_listener_tcp(app_id, json.dumps(spec))
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def stop_app(self, app_id: int) -> None:
        if app_id < 0:
            self.capture_stop(capture_of(app_id))
            return
        self._sim.stop_app(app_id)

    def app_finished(self, app_id: int) -> bool:
        if app_id < 0:
            return self._sim.capture_done(capture_of(app_id))
        return self._sim.app_finished(app_id)

    def run(self, until_ns: int, max_events: int | None = None) -> list[int] | None:
        """Finished applications, and captures that reached their ``-c`` count
        (as their wait handles, see ``capture_handle``); None if ``max_events``
        events were dispatched first (call again to go on: nothing is lost)."""
        try:
            done = self._sim.run(until_ns, max_events)
        except _core.CoreError as e:  # simulated time cannot advance
            raise EngineError(str(e)) from None
        if done is None:
            return None
        return done + [capture_handle(c) for c in self._sim.take_finished_captures()]

    # Packet captures and queue traces (docs/internals.md "Observation"). They
    # are not applications (an application id would shift every later
    # application's random stream); a capture is waited for through a negative
    # handle that ``run``, ``stop_app`` and ``app_finished`` understand.

    def capture_start(self, spec: dict[str, Any]) -> int:
        try:
            return self._sim.capture_start(json.dumps(spec))
        except _core.AppError as e:
            raise AppStartError(str(e)) from None
        except _core.CoreError as e:
            raise EngineError(str(e)) from None

    def capture_stop(self, capture_id: int) -> dict[str, Any]:
        return json.loads(self._sim.capture_stop(capture_id))

    def trace_start(self, dev: str, path: str, min_interval_ns: int = 0) -> int:
        try:
            return self._sim.trace_start(dev, path, min_interval_ns)
        except _core.AppError as e:
            raise AppStartError(str(e)) from None

    def trace_stop(self, trace_id: int) -> dict[str, Any]:
        return json.loads(self._sim.trace_stop(trace_id))

    def next_event_ns(self) -> int | None:
        return self._sim.next_event_ns()

    def events_processed(self) -> int:
        return self._sim.events_processed()

    def app_result(self, app_id: int) -> dict[str, Any]:
        return json.loads(self._sim.app_result(app_id))

    def summary(self) -> dict[str, Any]:
        return json.loads(self._sim.summary())
