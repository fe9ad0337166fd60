"""What the runner observes besides the commands: the scenario's ``[capture]``
(whole-run packet captures) and queue traces (``[trace] queues`` and every
interface a ``plot_q.sh`` watches), per part.

Files (relative to ``results/<scenario>/``):

- ``capture_<iface>.pcap`` (or ``.pcapng``): ``[capture]``, the whole run;
  listed in summary.json under ``"captures"``.
- ``<part>/queue_trace_<iface>.parquet`` + ``.png`` + ``.pdf``: one per traced
  interface per part (schema in :mod:`bufferlab.outputs.queue_traces`); listed in the
  part's entry under ``"queue_traces"``. ``tcpdump``/``tshark`` files of a
  part are listed there under ``"captures"``.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from ..commands.capture import compile_filter
from ..commands.shell import Word
from ..errors import CommandError, ScenarioError
from ..safefs import ensure_dir
from ..scenario.load import Scenario
from ..scenario.observe import FORMATS
from ..scenario.topology import BuiltTopology
from .engine import Engine

#: the default thinning of plot_q.sh's own queue trace (run/programs/plot_q.py)
PLOT_Q_TRACE_INTERVAL_NS = 1_000_000


class Observation:
    def __init__(self, sc: Scenario, topo: BuiltTopology, root: Path) -> None:
        self.sc = sc
        self.topo = topo
        self.root = root
        #: the run's engine, from start_run on
        self.engine: Engine | None = None
        self.capture_filter: dict[str, Any] = {"op": "true"}
        #: whole-run captures: (engine id, interface, file)
        self.run_captures: list[tuple[int, str, Path]] = []
        self.run_capture_report: list[dict[str, Any]] = []
        #: the current part's traces: interface -> (engine id, binary file, thinning interval ns)
        self.traces: dict[str, tuple[int, Path, int]] = {}
        self.part_dir: Path | None = None
        self.part_captures: list[str] = []
        #: traced because of [trace] queues = "all": no file if the root never changed
        self._implicit: set[str] = set()

    # ------------------------------------------------------------ checking

    def _ifaces(self, names: list[str], key: str, table: str, line: int | None) -> list[str]:
        known = [i.name for i in self.topo.interfaces]
        if names == ["all"]:
            return known
        for n in names:
            if n not in known:
                close = difflib.get_close_matches(n, known, n=1)
                raise ScenarioError(
                    f"{table} {key}: no interface {n!r} in the topology",
                    file=str(self.sc.path),
                    line=line,
                    expected="one of " + ", ".join(known),
                    suggestion=f"did you mean {close[0]}?" if close else None,
                )
        return names

    def check(self) -> None:
        """Validate ``[capture]``/``[trace]`` against the built topology."""
        sc = self.sc
        if sc.capture is not None:
            self._ifaces(sc.capture.interfaces, "interfaces", "[capture]", sc.capture.line)
            try:
                self.capture_filter = compile_filter(
                    "[capture] filter", [Word(sc.capture.filter, 0)], len(sc.capture.filter),
                    lambda name: self.topo.host_ip(name) if name in self.topo.node_kinds else None,
                )
            except CommandError as e:
                col = "" if e.col is None else f" (column {e.col + 1} of the filter)"
                raise ScenarioError(
                    f"{e.message}{col}", file=str(sc.path), line=sc.capture.line,
                    expected=e.expected, suggestion=e.suggestion,
                ) from None
        if sc.trace is not None:
            self._ifaces(sc.trace.queues, "queues", "[trace]", sc.trace.line)

    # ------------------------------------------------------------ whole run

    def start_run(self, eng: Engine) -> None:
        self.engine = eng
        sc = self.sc
        if sc.capture is None:
            return
        for dev in self._ifaces(sc.capture.interfaces, "interfaces", "[capture]", sc.capture.line):
            path = self.root / f"capture_{dev}{FORMATS[sc.capture.format]}"
            cid = eng.capture_start({"dev": dev, "path": str(path), "format": sc.capture.format,
                                     "snaplen": sc.capture.snaplen, "count": None,
                                     "filter": self.capture_filter,
                                     "segment_gso": sc.capture.segment_gso})
            self.run_captures.append((cid, dev, path))

    def end_run(self) -> None:
        eng = self.engine
        assert eng is not None
        self.end_part()  # a part that timed out left its traces open
        for cid, dev, path in self.run_captures:
            st = eng.capture_stop(cid)
            self.run_capture_report.append({"interface": dev, "file": path.name, "packets": st["captured"],
                                            "error": st["error"]})
        self.run_captures = []

    # ------------------------------------------------------------ per part

    def start_part(self, part_dir: Path, watched: list[str] = ()) -> None:  # type: ignore[assignment]
        """``watched``: interfaces a ``plot_q.sh`` typed in an earlier part still
        watches; their queue is traced in this part too, as when it started."""
        self.part_dir = part_dir
        self.part_captures = []
        sc = self.sc
        if sc.trace is not None:
            for dev in self._ifaces(sc.trace.queues, "queues", "[trace]", sc.trace.line):
                self.trace_iface(dev, explicit=sc.trace.queues != ["all"])
        for dev in watched:
            self.trace_iface(dev, default_min_ns=PLOT_Q_TRACE_INTERVAL_NS)

    def trace_iface(self, dev: str, explicit: bool = True, default_min_ns: int = 0) -> None:
        """Trace ``dev``'s root qdisc until the part ends (once per part), one
        record per change or, thinned, per ``[trace] min_interval`` (else
        ``default_min_ns``)."""
        eng = self.engine
        assert eng is not None and self.part_dir is not None
        if dev in self.traces:
            if explicit:
                self._implicit.discard(dev)
            return
        ensure_dir(self.part_dir, self.root)
        tmp = self.part_dir / f".queue_trace_{dev}.bin"
        trace = self.sc.trace
        min_ns = trace.min_interval_ns if trace is not None and trace.min_interval_ns is not None \
            else default_min_ns
        tid = eng.trace_start(dev, str(tmp), min_ns)
        self.traces[dev] = (tid, tmp, min_ns)
        if not explicit:
            self._implicit.add(dev)

    def note_capture(self, path: Path) -> None:
        self.part_captures.append(path.resolve().relative_to(self.root.resolve()).as_posix())

    def end_part(self) -> dict[str, Any]:
        """Close the part's traces, write their Parquet files and plots; the
        part entry's ``queue_traces`` and ``captures``."""
        eng = self.engine
        assert eng is not None
        if self.traces:  # numpy, pyarrow: only a traced part loads the converter
            from ..outputs.queue_traces import convert
        files = []
        peaks: dict[str, dict[str, int]] = {}
        for dev, (tid, tmp, min_ns) in sorted(self.traces.items()):
            st = eng.trace_stop(tid)
            if st["error"]:
                raise ScenarioError(f"queue trace of {dev}: {tmp}: {st['error']}", file=str(self.sc.path))
            out = tmp.with_name(f"queue_trace_{dev}.parquet")
            rows = convert(tmp, out, dev, plot=not (dev in self._implicit and st["counts"]["records"] == 0),
                           min_interval_ns=min_ns)
            if rows == 0 and dev in self._implicit:
                out.unlink()  # "all": an interface whose root never changed (noqueue) has no file
                continue
            files.append(out.relative_to(self.root).as_posix())
            if rows:
                peaks[dev] = _peak(out)
        self.traces = {}
        self._implicit = set()
        captures, self.part_captures = self.part_captures, []
        return {"queue_traces": files, "captures": captures, "peak_backlog": peaks}


def _peak(trace: Path) -> dict[str, int]:
    """The largest backlog (bytes, packets) a queue trace recorded: the whole qdisc tree of
    the interface; a thinned trace (plot_q.sh's, 1 ms) may miss a peak between records."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    # ParquetFile, not read_table: that one imports pyarrow.dataset, and with it pandas
    with pq.ParquetFile(trace) as f:
        t = f.read(columns=["backlog_bytes", "backlog_packets"])
    return {"bytes": int(pc.max(t["backlog_bytes"]).as_py() or 0),
            "packets": int(pc.max(t["backlog_packets"]).as_py() or 0)}
