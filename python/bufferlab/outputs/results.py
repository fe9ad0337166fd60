"""Reading a results folder back: summary.json, iperf3 output (JSON or text), ping text.

Shared by the tables, the HTML report and ``bufferlab compare``. Everything
here reads files ``bufferlab run`` wrote; a folder that is not ours raises
:class:`ResultsError` with the path, what was expected and a hint. Problems
that only affect one table or plot (no ping in the run, an interface with no
samples) are collected as :class:`Problem` so every other output is still
produced.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import BufferlabError
from ..formats.iperf3 import goodput_bps
from ..safefs import not_a_file, special_file

NS = 1_000_000_000

#: files that are never tool output (plots, data files, captures, our own tables)
_SKIP_SUFFIXES = {".png", ".pdf", ".svg", ".dat", ".csv", ".parquet", ".pcap", ".pcapng", ".gz", ".html"}


class ResultsError(BufferlabError):
    """A results folder (or a file in it) is missing or not what bufferlab writes."""

    def __init__(self, path: Path | str, message: str, expected: str, hint: str) -> None:
        super().__init__(message)
        self.path = str(path)
        self.message = message
        self.expected = expected
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.path}: error: {self.message}\n  expected: {self.expected}\n  hint: {self.hint}"


#: what a reader meets deep inside a hand-edited results file (a value of another type or
#: shape, a damaged Parquet table: pyarrow's ArrowInvalid is a ValueError, text that is not
#: UTF-8, JSON nested thousands deep): :func:`damaged` turns it into a message
DAMAGE = (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError, RecursionError)


def damaged(root: Path, e: BaseException) -> ResultsError:
    """The error for a results folder a file of which was edited or damaged."""
    where = getattr(e, "filename", None) or root
    return ResultsError(where, f"a file of this run is not what `bufferlab run` wrote ({type(e).__name__}: "
                        f"{str(e)[:200]})", "the files `bufferlab run` wrote into it, unedited",
                        f"re-run the scenario to rewrite {root} (or undo the edit)")


@dataclass(frozen=True)
class Problem:
    """Something one output could not show; the others are still written."""

    path: str
    message: str
    expected: str
    hint: str
    #: "absent": the run has no such data (no ping in it); "bad": a file is missing or empty
    kind: str = "bad"

    def __str__(self) -> str:
        return f"{self.path}: {self.message}\n  expected: {self.expected}\n  hint: {self.hint}"


@dataclass
class Run:
    """One scenario's results folder (``<out>/<scenario>``) and its summary.json."""

    root: Path
    summary: dict[str, Any]

    @property
    def parts(self) -> list[dict[str, Any]]:
        return self.summary["parts"]

    def part(self, name: str) -> dict[str, Any]:
        return next(p for p in self.parts if p["name"] == name)

    @cached_property
    def apps_by_output(self) -> dict[tuple[str, str], list[dict[str, Any]]]:
        """The summary's flow records by (kind, output file), in their order (one pass: a table
        asks once per ping or test, and a 243-host pingall has 58 000 of them)."""
        index: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for f in self.summary.get("flows", []):
            if isinstance(f, dict) and isinstance(f.get("kind"), str) and isinstance(f.get("output"), str):
                index.setdefault((f["kind"], f["output"]), []).append(f)
        return index


#: the types of the summary.json values the readers use (a hand-edited file is checked
#: against them, so that its error names the field instead of failing deep in a table)
_TOP_TYPES: dict[str, type | tuple[type, ...]] = {
    "scenario": str, "parts": list, "interfaces": dict, "flows": list, "nodes": dict, "packets": dict,
    "failures": list, "warnings": list, "captures": list, "topology": dict, "simulated_s": (int, float)}
_PART_TYPES: dict[str, type | tuple[type, ...]] = {
    "name": str, "start_ns": int, "end_ns": int, "queues": list, "queue_traces": list, "captures": list,
    "peak_backlog": dict, "drops": dict, "qdiscs": dict, "results": dict, "classes": list, "sinks": list}
_FLOW_TYPES: dict[str, type | tuple[type, ...]] = {
    "app": int, "kind": str, "node": str, "part": str, "terminal": str, "command": str, "start_ns": int,
    "output": str, "simple": str,
    "received_bytes": int, "received_packets": int, "sent_bytes": int, "sent_packets": int}
_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object",
               (int, float): "a number"}


def _wrong_type(doc: dict[str, Any], types: dict[str, Any], where: str) -> str | None:
    for key, want in types.items():
        v = doc.get(key)
        if key in doc and (not isinstance(v, want) or (isinstance(v, bool) and want is not bool)):
            return f"{where}{key} is {json.dumps(v)[:40]}, not {_TYPE_NAMES[want]}"
    return None


def _shape_error(doc: dict[str, Any]) -> str | None:
    """The first value of summary.json that is not what `bufferlab run` writes, named by its path."""
    bad = _wrong_type(doc, _TOP_TYPES, "")
    if bad:
        return bad
    for i, p in enumerate(doc["parts"]):
        bad = bad or _wrong_type(p, _PART_TYPES, f"parts[{i}].")
        if not bad and (p["name"] in ("", ".", "..") or "/" in p["name"] or "\\" in p["name"]):
            bad = f"parts[{i}].name {p['name']!r} is not a folder name"
        for key in ("queues", "queue_traces"):
            if not bad and not all(isinstance(q, str) for q in p.get(key, [])):
                bad = f"parts[{i}].{key} is not a list of file names"
    for i, f in enumerate(doc["flows"]):
        bad = bad or (f"flows[{i}] is not an object" if not isinstance(f, dict) else
                      _wrong_type(f, _FLOW_TYPES, f"flows[{i}]."))
    # integers as the tables store them (int64), however deep
    stack: list[Any] = [doc]
    while stack and not bad:
        v = stack.pop()
        if isinstance(v, dict):
            stack += v.values()
        elif isinstance(v, list):
            stack += v
        elif isinstance(v, int) and not -2**63 <= v < 2**63:
            bad = f"it holds the integer {v}, beyond the 64-bit range of its tables"
    return bad


def _check_summary(path: Path, doc: Any) -> None:
    bad = None
    if not isinstance(doc, dict):
        bad = "its top level is not an object"
    else:
        missing = [k for k in ("scenario", "parts", "interfaces", "flows") if k not in doc]
        if missing:
            bad = "it has no " + ", ".join(repr(k) for k in missing)
        elif not isinstance(doc["parts"], list) or not all(
            isinstance(p, dict) and {"name", "start_ns", "end_ns"} <= p.keys() for p in doc["parts"]
        ):
            bad = "its 'parts' are not a list of {name, start_ns, end_ns}"
        else:
            bad = _shape_error(doc)
    if bad:
        raise ResultsError(
            path,
            f"not a bufferlab summary.json ({bad})",
            "the summary.json that `bufferlab run` writes into <results>/<scenario>/",
            "point at a folder written by `bufferlab run`, e.g. results/lab14-bufferbloat",
        )


def load_run(path: Path) -> Run:
    """The scenario results folder ``path`` (or the only one inside an ``-o`` folder)."""
    path = Path(path)
    if not path.exists():
        raise ResultsError(
            path, "no such folder", "a results folder written by `bufferlab run`",
            "run the scenario first: bufferlab run SCENARIO.toml -o OUT, then use OUT/<scenario>",
        )
    if not path.is_dir():
        raise ResultsError(
            path, "not a folder", "a results folder (<out>/<scenario>) containing summary.json",
            "give the folder, not a file inside it",
        )
    summ = path / "summary.json"
    if not summ.is_file():
        inner = sorted(p.parent for p in path.glob("*/summary.json"))
        if len(inner) == 1:
            return load_run(inner[0])
        if len(inner) > 1:
            names = ", ".join(str(p) for p in inner)
            raise ResultsError(
                path, "holds the results of several scenarios", "one scenario's folder",
                f"choose one of: {names}",
            )
        what = "is empty" if not any(path.iterdir()) else "has no summary.json"
        raise ResultsError(
            path, f"the folder {what}", "a results folder (<out>/<scenario>) containing summary.json",
            "run the scenario first (bufferlab run SCENARIO.toml -o OUT) or check the path",
        )
    try:
        doc = json.loads(read_capped(summ))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        why = "nested too deep" if isinstance(e, RecursionError) else str(e)
        raise ResultsError(
            summ, f"cannot read it as JSON ({why})", "the summary.json that `bufferlab run` writes",
            "re-run the scenario to rewrite it",
        ) from None
    _check_summary(summ, doc)
    odd = special_file(path)
    if odd is not None:
        raise ResultsError(odd, f"{not_a_file(odd)}: a reader would wait on it for ever",
                           "the files and folders `bufferlab run` wrote",
                           "remove it (or re-run the scenario)")
    return Run(path, doc)


# ---------------------------------------------------------------- iperf3

@dataclass
class Iperf3Test:
    """One iperf3 test as found in an output file (JSON document or text block)."""

    file: str  # relative to the scenario folder
    part: str
    host: str
    index: int  # k-th test in that file (0-based)
    role: str  # client | server
    protocol: str  # tcp | udp
    source: str  # json | text
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: goodput (bit/s): payload bytes received × 8 / the receiver's interval, the figures of
    #: iperf3's receiver line (formats/iperf3/ ``goodput_bps``; from a text output, to its three
    #: significant digits); bytes sent and received, retransmits, UDP losses
    goodput_bps: float | None = None
    sent_bytes: int | None = None
    received_bytes: int | None = None
    retransmits: int | None = None
    lost_packets: int | None = None
    packets: int | None = None
    mean_rtt_us: float | None = None
    error: str | None = None


_INTERVAL_FIELDS = (
    "socket", "start", "end", "seconds", "bytes", "bits_per_second", "retransmits", "snd_cwnd",
    "snd_wnd", "rtt", "rttvar", "pmtu", "omitted", "sender", "packets", "lost_packets",
    "lost_percent", "jitter_ms", "out_of_order",
)


def json_documents(text: str) -> list[Any] | None:
    """Every JSON value in ``text`` (``>>`` appends documents), or None if it is not JSON."""
    dec = json.JSONDecoder()
    docs = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return docs
        try:
            obj, i = dec.raw_decode(text, i)
        except (ValueError, RecursionError):
            return None
        docs.append(obj)


#: the largest file a reader takes in whole (summary.json, a tool's output): far beyond what a
#: run writes, and a file of that size (or /dev/zero put in its place) is not read to the end
MAX_READ_BYTES = 256 * 1024 * 1024


def read_capped(path: Path, limit: int = MAX_READ_BYTES) -> str:
    """The UTF-8 text of ``path``; ValueError beyond ``limit`` bytes (read no further)."""
    with path.open("rb") as f:
        # a regular file says its size, and is refused unread; a device (size 0) is read to the limit
        size = os.fstat(f.fileno()).st_size
        raw = f.read(limit + 1) if size <= limit else b""
    if max(size, len(raw)) > limit:
        raise ValueError(f"more than {limit} bytes")
    return raw.decode("utf-8")


def _is_iperf3_doc(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("start"), dict) and (
        "intervals" in doc or "end" in doc or "error" in doc
    )


def _test_from_json(doc: dict[str, Any], file: str, part: str, host: str, index: int) -> Iperf3Test:
    start = doc.get("start", {})
    role = "server" if "accepted_connection" in start else "client"
    proto = str(start.get("test_start", {}).get("protocol", "TCP")).lower()
    t = Iperf3Test(file, part, host, index, role, proto, "json", error=doc.get("error"))
    for iv in doc.get("intervals", []):
        for st in iv.get("streams", []):
            t.rows.append({"row": "stream", **{k: st.get(k) for k in _INTERVAL_FIELDS}})
        if isinstance(iv.get("sum"), dict):
            t.rows.append({"row": "sum", **{k: iv["sum"].get(k) for k in _INTERVAL_FIELDS if k != "socket"}})
    end = doc.get("end", {})
    if proto == "tcp":
        snt, rcv = end.get("sum_sent", {}), end.get("sum_received", {})
        t.sent_bytes, t.received_bytes = snt.get("bytes"), rcv.get("bytes")
        t.retransmits = snt.get("retransmits")
        t.goodput_bps = rcv.get("bits_per_second")
        rtts = [s["sender"]["mean_rtt"] for s in end.get("streams", []) if "mean_rtt" in s.get("sender", {})]
        t.mean_rtt_us = sum(rtts) / len(rtts) if rtts else None
    else:
        s = end.get("sum", {})
        t.sent_bytes, t.packets, t.lost_packets = s.get("bytes"), s.get("packets"), s.get("lost_packets")
        rcv = end.get("sum_received")
        if isinstance(rcv, dict) and rcv.get("bytes") is not None:  # iperf3 3.11+: the receiver's own
            t.received_bytes = rcv["bytes"]
            t.goodput_bps = goodput_bps(rcv["bytes"], rcv.get("seconds") or 0.0)
        elif t.sent_bytes is not None and t.packets:
            # before 3.11 "sum" holds the sender's bytes over the receiver's interval: the datagrams
            # that arrived, at the test's one datagram size, are the receiver's bytes
            t.received_bytes = round(t.sent_bytes * (t.packets - (t.lost_packets or 0)) / t.packets)
            t.goodput_bps = goodput_bps(t.received_bytes, s.get("seconds") or 0.0)
    return t


_UNITS = {"": 1, "K": 1, "M": 2, "G": 3, "T": 4}
_LINE = re.compile(
    r"\[\s*(?P<id>\d+|SUM)\]\s+(?P<st>\d+\.\d+)-\s*(?P<et>\d+\.\d+)\s+sec\s+"
    r"(?P<xfer>[\d.]+)\s+(?P<xu>[KMGT]?)Bytes\s+(?P<bw>[\d.]+)\s+(?P<bu>[KMGT]?)bits/sec(?P<rest>.*)$"
)
_UDP_RECV = re.compile(
    r"\s+(?P<jit>[\d.]+) ms\s+(?P<lost>-?\d+)/(?P<tot>\d+)\s+\((?P<pct>[-\d.e+]+|nan|-?inf)%\)"
)
_TCP_SEND = re.compile(r"\s+(?P<retr>\d+)\s+(?P<cw>[\d.]+)\s+(?P<cu>[KMGT]?)Bytes")
_INT = re.compile(r"\s+(?P<n>\d+)\b")


def _text_tests(text: str, file: str, part: str, host: str, first_index: int) -> list[Iperf3Test]:
    """iperf3's human-readable output: interval lines and the sender/receiver summary.

    Values carry the text's precision (``8.88 MBytes``), so bytes and bit rates
    are rounded to three significant digits, as printed.
    """
    tests: list[Iperf3Test] = []
    cur: Iperf3Test | None = None
    header = ""
    summary = False
    for line in text.splitlines():
        if "Connecting to host" in line or "Accepted connection from" in line:
            role = "client" if "Connecting" in line else "server"
            cur = Iperf3Test(file, part, host, first_index + len(tests), role, "tcp", "text")
            tests.append(cur)
            summary = False
            continue
        if cur is None:
            continue
        if "[ ID]" in line:
            header = line
            if "Datagrams" in line:
                cur.protocol = "udp"
            continue
        if line.startswith("- - - -"):
            summary = True
            continue
        if line.startswith("iperf3: error") and cur.error is None:
            cur.error = line.split("error - ", 1)[-1].strip()
            continue
        m = _LINE.search(line)
        if not m:
            continue
        nbytes = round(float(m["xfer"]) * 1024 ** _UNITS[m["xu"]])
        bps = float(m["bw"]) * 1000 ** _UNITS[m["bu"]]
        rest = m["rest"]
        tag = rest.split()[-1] if rest.split() and rest.split()[-1] in ("sender", "receiver") else ""
        if summary or tag:
            if tag == "receiver" or ("Jitter" in header and tag != "sender"):
                cur.received_bytes, cur.goodput_bps = nbytes, bps
            else:
                cur.sent_bytes = nbytes
            r = _TCP_SEND.match(rest) or _INT.match(rest)
            if tag == "sender" and r is not None and "retr" in r.groupdict():
                cur.retransmits = int(r["retr"])
            elif tag == "sender" and "Retr" in header and _INT.match(rest):
                cur.retransmits = int(_INT.match(rest)["n"])  # type: ignore[index]
            u = _UDP_RECV.match(rest)
            if u is not None and tag != "sender":
                cur.lost_packets, cur.packets = int(u["lost"]), int(u["tot"])
            continue
        st, et = float(m["st"]), float(m["et"])
        row: dict[str, Any] = {k: None for k in _INTERVAL_FIELDS}
        row.update(
            row="sum" if m["id"] == "SUM" else "stream", socket=None if m["id"] == "SUM" else int(m["id"]),
            start=st, end=et, seconds=round(et - st, 6), bytes=nbytes, bits_per_second=bps,
            omitted="(omitted)" in rest,
        )
        if "Retr" in header:
            row["sender"] = True
            r = _TCP_SEND.match(rest)
            if r:
                row["retransmits"] = int(r["retr"])
                row["snd_cwnd"] = round(float(r["cw"]) * 1024 ** _UNITS[r["cu"]])
        elif "Jitter" in header:
            row["sender"] = False
            u = _UDP_RECV.match(rest)
            if u:
                row.update(jitter_ms=float(u["jit"]), lost_packets=int(u["lost"]), packets=int(u["tot"]),
                           lost_percent=float(u["pct"]))
        elif "Datagrams" in header:
            row["sender"] = True
            i = _INT.match(rest)
            if i:
                row["packets"] = int(i["n"])
        else:
            row["sender"] = False
        cur.rows.append(row)
    return tests


# ---------------------------------------------------------------- ping

@dataclass
class PingRun:
    file: str
    part: str
    host: str
    index: int
    dest: str
    replies: list[tuple[int, int, float]] = field(default_factory=list)  # seq, ttl, rtt ms
    transmitted: int | None = None
    received: int | None = None


_PING_HEAD = re.compile(r"^PING (\S+) \((\S+?)\)")
_PING_REPLY = re.compile(r"icmp_seq=(\d+) ttl=(\d+) time=([\d.]+) ms")
_PING_STATS = re.compile(r"^(\d+) packets transmitted, (\d+) received")


def _ping_runs(text: str, file: str, part: str, host: str) -> list[PingRun]:
    runs: list[PingRun] = []
    for line in text.splitlines():
        h = _PING_HEAD.match(line)
        if h:
            runs.append(PingRun(file, part, host, len(runs), h[2]))
            continue
        if not runs:
            continue
        r = _PING_REPLY.search(line)
        if r and "(DUP!)" not in line:
            runs[-1].replies.append((int(r[1]), int(r[2]), float(r[3])))
            continue
        s = _PING_STATS.match(line)
        if s:
            runs[-1].transmitted, runs[-1].received = int(s[1]), int(s[2])
    return runs


# ---------------------------------------------------------------- scanning

@dataclass
class Outputs:
    iperf3: list[Iperf3Test]
    pings: list[PingRun]


def scan_outputs(run: Run) -> Outputs:
    """Every iperf3 test and ping found in the parts' node folders, in a fixed order."""
    tests: list[Iperf3Test] = []
    pings: list[PingRun] = []
    for p in run.parts:
        pdir = run.root / p["name"]
        if not pdir.is_dir():
            continue
        for host_dir in sorted(d for d in pdir.iterdir() if d.is_dir()):
            for f in sorted(host_dir.rglob("*")):
                if not f.is_file() or f.suffix.lower() in _SKIP_SUFFIXES:
                    continue
                rel = f.relative_to(run.root).as_posix()
                try:
                    text = read_capped(f)
                except (OSError, ValueError):  # not UTF-8 (a binary file), or beyond MAX_READ_BYTES
                    continue
                docs = json_documents(text) if text.lstrip()[:1] == "{" else None
                if docs is not None:
                    ip = [d for d in docs if _is_iperf3_doc(d)]
                    tests += [_test_from_json(d, rel, p["name"], host_dir.name, k) for k, d in enumerate(ip)]
                    continue
                if "iperf3" in text or "Interval" in text:
                    tests += _text_tests(text, rel, p["name"], host_dir.name, 0)
                if "PING " in text:
                    pings += _ping_runs(text, rel, p["name"], host_dir.name)
    return Outputs(tests, pings)


def ping_interval_s(command: str) -> float:
    """``-i`` of a ping command line (1 s by default), for the send times of its requests."""
    m = re.search(r"(?:^|\s)-i\s*([\d.]+)", command)
    try:
        return float(m[1]) if m else 1.0
    except ValueError:
        return 1.0


def app_for(run: Run, kind: str, file: str, index: int) -> dict[str, Any] | None:
    """The summary's flow record of the ``index``-th ``kind`` application writing to ``file``."""
    same = run.apps_by_output.get((kind, file), [])
    return same[index] if index < len(same) else None
