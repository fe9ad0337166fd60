"""Flent data files (``*.flent.gz``, file format version 4) from bufferlab results.

docs/semantics/formats.md §7. What was checked in flent 2.3's source (read, not copied):

* ``resultset.py`` -- the file is ``json.dumps(obj, indent=2, sort_keys=True)``
  gzipped, with ``metadata``, ``raw_values``, ``results``, ``version`` and
  ``x_values``; ``RECORDED_SETTINGS`` lists the metadata keys; ``T0``,
  ``TIME`` and ``BATCH_TIME`` are ISO strings (a trailing ``Z`` = UTC, no
  timezone guessing); ``results`` series have one value per x value; the
  file name is ``NAME-<TIME.isoformat() without colons>[.<TITLE with
  [^A-Za-z0-9-] replaced by _>].flent.gz``.
* ``aggregators.py`` (``TimeseriesAggregator``) -- how raw samples become
  ``results``: grid ``x = STEP_SIZE·k`` from ``T0``; each grid point
  interpolates linearly between the samples around it when the next sample is
  at most 5 steps away (half a step before the first sample); past the last
  sample its value is used once, then gaps. :func:`resample` follows these
  rules so a file written here holds what flent would have computed.
* ``runners.py`` (``ComputingRunner``) -- the ``avg``/``sum``/``fairness``
  series of multi-flow tests are computed per grid point from the flows that
  have a value there (fairness = Jain's index (Σx)²/(n·Σx²)).
* ``tests/*.conf`` -- series names: ``tcp_1up`` "TCP upload" + "Ping (ms)
  ICMP"; ``tcp_1up_noping``; ``tcp_1down`` "TCP download"; ``tcp_Nup`` /
  ``tcp_nup`` (``upload_streams``) "TCP upload::1..N" + avg/sum/fairness;
  ``tcp_Ndown`` / ``tcp_ndown`` likewise; ``tcp_bidirectional``; ``udp_flood``
  "UDP upload".

Mapping from a bufferlab run (one file per part that ran an iperf3 client
with ``-J``):

* TCP: each interval of each stream of the client's JSON gives one raw sample
  ``{t: end of the interval, val: bits_per_second / 10⁶}`` (flent's
  Mbit/s). With ``iperf3 -i 0.2`` that is flent's own 0.2 s resolution;
  otherwise the intervals' values, resampled onto the 0.2 s grid as flent
  does. Omitted (``-O``) intervals are left out.
* Ping: the part's ping's replies, parsed from its text output (bufferlab's
  ping, like iputils without ``-D``, prints no timestamps). The reply time is
  reconstructed as ping's start + (seq−1)·(interval + the profile's per-send
  lag) + RTT, the way the engine schedules echo requests. ``time=`` values
  are read back to µs, including iputils s20180629's carry quirk (``34.10``
  = 35.0 ms).
* Times: the runner records each application's simulated start
  (``summary.json`` flows, ``start_ns``); iperf3 interval times are taken
  relative to the client's start, so the TCP series is early by the
  connection set-up (a few RTTs) -- the JSON has no sub-second test start.
  Results from before ``start_ns`` was recorded fall back to the part's start.
  Absolute times (raw samples' ``t``, ``T0``, ``TIME`` and the file name) are
  the run's wall-clock start (``run.json``'s ``started_unix``; for results
  without one, the time summary.json was written) plus the simulated time, as
  flent stamps a real test; the series and ``x_values`` stay simulated time.
  These are the only wall-clock fields: exporting the same results folder
  twice gives the same bytes, two runs of a scenario differ only here.
  ``T0`` is the earliest exported application start.
* ``LENGTH`` is the iperf3 ``-t`` duration; ``TOTAL_LENGTH`` the span of the
  data (flent's idle ``DELAY`` before and after the test does not exist here).
* UDP: a single UDP upload flow becomes ``udp_flood`` (client-side sending
  rate, as flent's iperf runner reports it); other UDP combinations, and flow
  mixes no flent test describes, are refused for that part.
"""

from __future__ import annotations

import bisect
import gzip
import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..commands.ping import parse_ping
from ..commands.shell import parse_shell, simple_commands
from ..errors import BufferlabError, Diagnostics
from ..formats.plot_iperf import PlotError, load_iperf3_docs
from ..profile import PROFILES
from ..safefs import open_atomic
from ..version import __version__
from .results import DAMAGE, ResultsError, damaged, load_run

__all__ = ["FlentError", "FlentExport", "export_flent", "resample", "parse_ping_replies", "STEP_SIZE"]

STEP_SIZE = 0.2
NS = 1_000_000_000
#: flent test names that exist for N upload (download) streams; others use tcp_nup/tcp_ndown
_NAMED_UP = {2: "tcp_2up", 4: "tcp_4up", 6: "tcp_6up", 8: "tcp_8up", 12: "tcp_12up", 50: "tcp_50up"}
_NAMED_DOWN = {2: "tcp_2down", 4: "tcp_4down", 6: "tcp_6down", 8: "tcp_8down", 12: "tcp_12down"}
PING_SERIES = "Ping (ms) ICMP"


class FlentError(BufferlabError):
    """The results folder cannot be exported at all."""


@dataclass
class FlentExport:
    produced: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# --- resampling (flent's TimeseriesAggregator rules) ------------------------------


def resample(samples: list[tuple[float, float]], n: int, step: float = STEP_SIZE) -> list[float | None]:
    """Values on the grid ``step·k`` (k < n) from time-sorted ``(t, value)`` samples (t relative to T0)."""
    out: list[float | None] = []
    last: float | None = None
    times = [ts for ts, _ in samples]
    for k in range(n):
        t = round(step * k, 9)
        i: int | None = bisect.bisect_right(times, t)  # the first sample after t
        if i == len(times):
            i = None
        value: float | None = None
        if not samples:
            pass
        elif i is None:  # past the last sample: its value once, if close enough
            tn, vn = samples[-1]
            if abs(t - tn) <= 5 * step and last not in (vn, None):
                value = vn
        elif i == 0:  # before the first sample: only half a step early
            tn, vn = samples[0]
            if abs(t - tn) <= 0.5 * step:
                value = vn
        else:
            (tp, vp), (tn, vn) = samples[i - 1], samples[i]
            if abs(t - tn) <= 5 * step:
                value = vp + (vn - vp) / (tn - tp) * (t - tp)
        out.append(value)
        last = value
    return out


def _computed(columns: list[list[float | None]], kind: str) -> list[float | None]:
    res: list[float | None] = []
    for row in zip(*columns, strict=True):
        vals = [v for v in row if v is not None]
        if not vals:
            res.append(None)
        elif kind == "sum":
            res.append(math.fsum(vals))
        elif kind == "avg":
            res.append(math.fsum(vals) / len(vals))
        else:
            sq = math.fsum(v * v for v in vals)
            res.append(math.fsum(vals) ** 2 / (len(vals) * sq) if sq else None)
    return res


# --- ping text ----------------------------------------------------------------------

_REPLY = re.compile(
    r"^(?:\[\d+\.\d+\] )?\d+ bytes from [^:]+: icmp_seq=(\d+)(?: ttl=\d+)? time=(\d+)(?:\.(\d+))? ms"
)


def _triptime_us(whole: str, frac: str | None) -> int:
    """``time=`` back to µs. iputils prints 0/1/2/3 decimals for ≥100/≥10/≥1/<1 ms; s20180629's
    rounding carry can add a digit (``34.10``), which still counts in units of the band's last digit."""
    w = int(whole)
    digits = 0 if w >= 100 else 1 if w >= 10 else 2 if w >= 1 else 3
    f = int(frac) if frac else 0
    return w * 1000 + f * 10 ** (3 - digits)


def parse_ping_replies(text: str) -> list[tuple[int, int]]:
    """``(icmp_seq, rtt µs)`` of every reply line (duplicates included) in one ping's output."""
    out = []
    for line in text.splitlines():
        m = _REPLY.match(line)
        if m and "(DUP!)" not in line:
            out.append((int(m.group(1)), _triptime_us(m.group(2), m.group(3))))
    return out


def _ping_block(text: str, command: str) -> str | None:
    """The output of ping ``command`` in a terminal.log: from its ``PING`` banner to the statistics."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln == f"$ {command}"), 0)
    banner = next((i for i in range(start, len(lines)) if lines[i].startswith("PING ")), None)
    if banner is None:
        return None
    end = next(
        (i for i in range(banner, len(lines)) if lines[i].startswith("rtt ") or lines[i].startswith("$ ")),
        len(lines),
    )
    return "\n".join(lines[banner : end + 1]) + "\n"


# --- reading a results folder -------------------------------------------------------


@dataclass
class _Flow:
    name: str  # series name
    samples: list[tuple[float, float]]  # (seconds since the simulation start, value)
    extra: list[dict[str, Any]] | None = None  # raw items' other keys (ping: seq)
    start_s: float | None = None  # when the application started (ping)


@dataclass
class _Client:
    flow: dict[str, Any]
    doc: dict[str, Any]
    path: Path
    base_s: float


def _scenario_dirs(results_dir: Path) -> list[Path]:
    if not results_dir.is_dir():
        what = "no such folder" if not results_dir.exists() else "not a folder"
        raise FlentError(
            f"error: {results_dir}: {what}\n"
            "  expected: a results folder written by `bufferlab run` (with summary.json)\n"
            "  hint: bufferlab run SCENARIO.toml -o DIR, then bufferlab export --flent DIR"
        )
    if (results_dir / "summary.json").is_file():
        return [results_dir]
    found = sorted(p.parent for p in results_dir.glob("*/summary.json"))
    if not found:
        raise FlentError(
            f"error: {results_dir}: no summary.json here or in its sub-folders\n"
            "  expected: results/<scenario>/ as `bufferlab run` writes it, or its parent\n"
            "  hint: bufferlab run SCENARIO.toml -o DIR, then bufferlab export --flent DIR"
        )
    return found


def _words(command: str) -> list[str]:
    try:
        return [w.text for c in simple_commands(parse_shell(command)) for w in c.words]
    except BufferlabError:
        return command.split()


def _output_path(scen: Path, flow: dict[str, Any], part: str) -> Path:
    """Where the application's standard output went (summary ``output``, else from its command)."""
    if flow.get("output"):
        return scen / flow["output"]
    home = scen / part / str(flow.get("terminal") or flow.get("node"))
    try:
        for c in simple_commands(parse_shell(str(flow.get("command", "")))):
            if c.redirect is not None:
                return home / c.redirect.target.text
    except BufferlabError:
        pass
    return home / "terminal.log"


def _logfile(words: list[str]) -> str | None:
    for i, w in enumerate(words):
        if w == "--logfile" and i + 1 < len(words):
            return words[i + 1]
        if w.startswith("--logfile="):
            return w.split("=", 1)[1]
    return None


def _ping_interval_s(command: str) -> float:
    for c in simple_commands(parse_shell(command)):
        if c.name == "ping":
            return parse_ping(c.words, Diagnostics()).interval_s
    return 1.0


def _send_lag_s(summary: dict[str, Any]) -> float:
    prof = PROFILES.get(str(summary.get("profile")))
    return (prof.ping_send_lag_us if prof is not None else 0) / 1e6


def _tcp_streams(doc: dict[str, Any], base_s: float) -> list[list[tuple[float, float]]]:
    per_socket: dict[Any, list[tuple[float, float]]] = {}
    for interval in doc.get("intervals") or []:
        for s in (interval.get("streams") or []) if isinstance(interval, dict) else []:
            if not isinstance(s, dict) or s.get("omitted") is True:
                continue
            end, bps = s.get("end"), s.get("bits_per_second")
            if isinstance(end, (int, float)) and isinstance(bps, (int, float)):
                per_socket.setdefault(s.get("socket"), []).append((base_s + float(end), float(bps) / 1e6))
    return [sorted(v) for v in per_socket.values()]


def _test_name(ups: int, downs: int, udp: bool, has_ping: bool) -> tuple[str, dict[str, Any]] | str:
    """(flent test NAME, TEST_PARAMETERS), or why no flent test fits."""
    if udp:
        return (
            ("udp_flood", {})
            if ups == 1 and downs == 0
            else ("UDP flows other than a single upload (several UDP flows, -R, or UDP with TCP)")
        )
    if ups and downs:
        return (
            ("tcp_bidirectional", {})
            if ups == downs == 1
            else (f"{ups} upload and {downs} download TCP streams together")
        )
    if ups == 1:
        return ("tcp_1up", {}) if has_ping else ("tcp_1up_noping", {})
    if downs == 1:
        return "tcp_1down", {}
    if ups:
        return _NAMED_UP.get(ups, "tcp_nup"), ({} if ups in _NAMED_UP else {"upload_streams": ups})
    return _NAMED_DOWN.get(downs, "tcp_ndown"), ({} if downs in _NAMED_DOWN else {"download_streams": downs})


def run_started(scen: Path) -> float:
    """The run's wall-clock start (UNIX seconds): simulated time 0 in exported timestamps."""
    try:
        started = json.loads((scen / "run.json").read_text(encoding="utf-8")).get("started_unix")
    except (OSError, ValueError):
        started = None
    if isinstance(started, (int, float)) and not isinstance(started, bool):
        return float(started)
    return (scen / "summary.json").stat().st_mtime  # written by a bufferlab without run.json


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def export_flent(results_dir: Path, out_dir: Path | None = None) -> FlentExport:
    """Write one ``.flent.gz`` per part with an iperf3 ``-J`` client run; see the module notes.

    ``out_dir`` defaults to each scenario's results folder. Raises
    :class:`FlentError` when ``results_dir`` is not a results folder; part-level
    problems are collected in ``FlentExport.problems`` while the other parts
    are still written.
    """
    results_dir = Path(results_dir)
    rep = FlentExport()
    clients_seen = 0
    for scen in _scenario_dirs(results_dir):
        try:
            summary = load_run(scen).summary  # the checks and messages of `report` and `compare`
        except ResultsError as e:
            rep.problems.append(str(e))
            continue
        parts = summary["parts"]
        flows = [f for f in summary["flows"] if isinstance(f, dict)]
        for part in parts:
            try:
                clients_seen += _export_part(scen, summary, part, flows, out_dir, rep)
            except DAMAGE as e:  # a hand-edited file: the other parts are still exported
                rep.problems.append(str(damaged(scen, e)))
    hint = "hint: flent files need an iperf3 test with JSON output, e.g. h1: iperf3 -c IP -t 30 -J > out.json"
    if clients_seen == 0 and not rep.problems:
        rep.problems.append(
            f"{results_dir}: no iperf3 client ran in these results: nothing to export; {hint}"
        )
    elif not rep.produced and not rep.problems:
        rep.problems.append(f"{results_dir}: no iperf3 client wrote JSON (-J): nothing to export; {hint}")
    return rep


def _export_part(
    scen: Path,
    summary: dict[str, Any],
    part: dict[str, Any],
    flows: list[dict[str, Any]],
    out_dir: Path | None,
    rep: FlentExport,
) -> int:
    """Export one part; returns how many iperf3 clients it had."""
    pname = str(part.get("name"))
    label = f"{scen.name}/{pname}"
    part_start_s = int(part.get("start_ns", 0)) / NS
    mine = [f for f in flows if f.get("part") == pname]
    iperfs = [f for f in mine if f.get("kind") == "iperf3_client"]
    if not iperfs:
        return 0
    clients: list[_Client] = []
    for f in iperfs:
        cmd = str(f.get("command", ""))
        words = _words(cmd)
        if "-J" not in words and "--json" not in words:
            rep.notes.append(
                f"{label}: `{cmd}` on {f.get('terminal')} ran without -J: its text output has no "
                "per-interval data to export (add -J > out.json)"
            )
            continue
        logfile = _logfile(words)
        path = (scen / pname / str(f.get("terminal")) / logfile) if logfile else _output_path(scen, f, pname)
        try:
            docs = load_iperf3_docs(path)
        except PlotError as e:
            rep.problems.append(f"{label}: {e.message.removeprefix('error: ')}")
            continue
        doc = docs[-1]
        if len(docs) > 1:  # iperf3 --logfile appends: the last test is this part's
            rep.notes.append(
                f"{label}: {path} holds {len(docs)} iperf3 tests (--logfile appends to the file); "
                "exported the last one"
            )
        base = int(f["start_ns"]) / NS if "start_ns" in f else part_start_s
        clients.append(_Client(f, doc, path, base))
    if not clients:
        return len(iperfs)

    udp = any(
        str((c.doc["start"].get("test_start") or {}).get("protocol", "TCP")).upper() == "UDP" for c in clients
    )
    ups: list[list[tuple[float, float]]] = []
    downs: list[list[tuple[float, float]]] = []
    for c in clients:
        streams = _tcp_streams(c.doc, c.base_s)
        (downs if (c.doc["start"].get("test_start") or {}).get("reverse") else ups).extend(streams)
    if not any(ups + downs):
        rep.problems.append(
            f"{label}: {clients[0].path}: the iperf3 JSON has no intervals with bits_per_second "
            "(the test measured nothing); hint: check the run's terminal.log for iperf3 errors"
        )
        return len(iperfs)

    pings = [f for f in mine if f.get("kind") == "ping"]
    ping_flow = _ping_flow(scen, summary, pname, label, pings, part_start_s, rep)
    choice = _test_name(len(ups), len(downs), udp, ping_flow is not None)
    if isinstance(choice, str):
        rep.problems.append(
            f"{label}: no flent test describes {choice}; nothing written for this part "
            "(hint: flent has tcp_1up, tcp_Nup, tcp_Ndown, tcp_bidirectional and udp_flood)"
        )
        return len(iperfs)
    name, params = choice

    series: list[_Flow] = []
    computed_of: str | None = None
    if udp:
        series.append(_Flow("UDP upload", ups[0]))
    else:
        for direction, streams in (("upload", ups), ("download", downs)):
            if len(streams) == 1:
                series.append(_Flow(f"TCP {direction}", streams[0]))
            elif streams:
                series += [_Flow(f"TCP {direction}::{k}", s) for k, s in enumerate(streams, 1)]
                computed_of = direction
    if ping_flow is not None:
        series.append(ping_flow)
    path = _write(scen, summary, pname, clients, series, computed_of, name, params, out_dir)
    rep.produced.append(path)
    return len(iperfs)


def _ping_flow(
    scen: Path,
    summary: dict[str, Any],
    pname: str,
    label: str,
    pings: list[dict[str, Any]],
    part_start_s: float,
    rep: FlentExport,
) -> _Flow | None:
    if not pings:
        rep.notes.append(f"{label}: no ping ran in this part; exported without a {PING_SERIES!r} series")
        return None
    if len(pings) > 1:
        rest = ", ".join(f"{p.get('terminal')}: {p.get('command')}" for p in pings[1:])
        rep.notes.append(
            f"{label}: flent's tests have one ICMP ping series; exported "
            f"{pings[0].get('terminal')}'s, not {rest}"
        )
    p = pings[0]
    cmd = str(p.get("command", ""))
    out = _output_path(scen, p, pname)
    where = f"{label}: {p.get('terminal')}: {cmd}"
    try:
        text = out.read_text(encoding="utf-8")
    except OSError as e:
        rep.problems.append(
            f"{where}: cannot read its output {out} ({e.strerror}); exported without ping "
            "(hint: run the scenario again)"
        )
        return None
    block = _ping_block(text, cmd) if out.name == "terminal.log" else text
    replies = parse_ping_replies(block or "")
    if not replies:
        why = (
            "ping -q prints no per-reply lines (drop -q)"
            if "-q" in _words(cmd)
            else "no reply lines in its output (all probes lost, or the output was cut)"
        )
        rep.problems.append(f"{where}: no ping samples: {why}; exported without ping ({out})")
        return None
    try:
        period = _ping_interval_s(cmd) + _send_lag_s(summary)
    except BufferlabError:
        period = 1.0
    start = int(p["start_ns"]) / NS if "start_ns" in p else part_start_s
    rows = sorted((start + (seq - 1) * period + us / 1e6, us / 1000, seq) for seq, us in replies)
    return _Flow(PING_SERIES, [(t, v) for t, v, _ in rows], [{"seq": seq} for _, _, seq in rows], start)


def _write(
    scen: Path,
    summary: dict[str, Any],
    pname: str,
    clients: list[_Client],
    series: list[_Flow],
    computed_of: str | None,
    name: str,
    params: dict[str, Any],
    out_dir: Path | None,
) -> Path:
    first = clients[0]
    epoch = run_started(scen)
    t0 = min([c.base_s for c in clients] + [f.start_s for f in series if f.start_s is not None])
    t_max = max(s[-1][0] for f in series for s in [f.samples] if s)
    n = max(1, math.ceil((t_max - t0) / STEP_SIZE - 1e-9) + 1)
    x_values = [round(STEP_SIZE * k, 6) for k in range(n)]

    results: dict[str, list[float | None]] = {}
    raw: dict[str, list[dict[str, Any]]] = {}
    meta: dict[str, dict[str, Any]] = {}
    for f in series:
        # relative times rounded to the ns, so an interval ending on a grid point hits it exactly
        results[f.name] = resample([(round(t - t0, 9), v) for t, v in f.samples], n)
        items = [{"t": epoch + t, "val": v} for t, v in f.samples]
        for item, extra in zip(items, f.extra or [{}] * len(items), strict=True):
            item.update(extra)
        raw[f.name] = items
        meta[f.name] = {"UNITS": "ms" if f.name == PING_SERIES else "Mbits/s"}
    if computed_of is not None:
        cols = [results[f.name] for f in series if f.name.startswith(f"TCP {computed_of}::")]
        for kind, unit in (("avg", "Mbits/s"), ("sum", "Mbits/s"), ("fairness", "Idx")):
            key = f"TCP {computed_of} {kind}"
            results[key] = _computed(cols, kind)
            raw[key] = []  # computed series have no raw samples in flent's files either
            meta[key] = {"UNITS": unit}

    scen_name = str(summary.get("scenario") or scen.name)
    title = f"{scen.name} {pname}"
    when = datetime.fromtimestamp(epoch + t0, tz=UTC).replace(tzinfo=None)
    fname = (
        f"{name}-{when.isoformat(timespec='microseconds').replace(':', '')}."
        f"{re.sub(r'[^A-Za-z0-9-]', '_', title)}.flent.gz"
    )
    dest_dir = Path(out_dir) if out_dir is not None else scen
    sources = ", ".join(
        str(c.path.relative_to(scen)) if c.path.is_relative_to(scen) else str(c.path) for c in clients
    )
    durations = [(c.doc["start"].get("test_start") or {}).get("duration") for c in clients]
    hosts = list(
        dict.fromkeys(str((c.doc["start"].get("connecting_to") or {}).get("host", "")) for c in clients)
    )
    metadata: dict[str, Any] = {
        "NAME": name,
        "HOST": hosts[0],
        "HOSTS": hosts,
        "TIME": _iso(epoch + t0),
        "T0": _iso(epoch + t0),
        "LOCAL_HOST": str(first.flow.get("terminal") or first.flow.get("node") or ""),
        "TITLE": title,
        "NOTE": f"simulated by bufferlab {__version__}: {scen_name}, part {pname}; from {sources}",
        "LENGTH": max((d for d in durations if isinstance(d, (int, float))), default=round(t_max - t0)),
        "TOTAL_LENGTH": x_values[-1],
        "STEP_SIZE": STEP_SIZE,
        "TEST_PARAMETERS": params,
        "FLENT_VERSION": f"bufferlab {__version__}",
        "IP_VERSION": 4,
        "BATCH_NAME": None,
        "BATCH_TIME": None,
        "BATCH_TITLE": None,
        "BATCH_UUID": None,
        "DATA_FILENAME": fname,
        "HTTP_GETTER_URLLIST": None,
        "HTTP_GETTER_DNS": None,
        "HTTP_GETTER_WORKERS": None,
        "SERIES_META": meta,
    }
    obj = {"metadata": metadata, "raw_values": raw, "results": results, "version": 4, "x_values": x_values}
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / fname
    data = json.dumps(obj, indent=2, sort_keys=True).encode("utf-8")
    with open_atomic(dest, "wb") as fh, gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0) as gz:
        gz.write(data)  # mtime 0: the same results give the same bytes
    return dest
