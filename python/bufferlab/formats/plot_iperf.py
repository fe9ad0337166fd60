"""``plot_iperf.sh out.json`` (iperf3_plotter, legacy version the labs use), reproduced.

docs/semantics/formats.md §5. The shell pipeline being mimicked (``plot_iperf.sh`` runs
``preprocessor.sh <json> .`` in the current directory, then ``cd results;
gnuplot /usr/bin/*.plt``):

1. ``jq empty`` must accept the file (else "not a valid JSON file", nothing
   is written). jq 1.6 reads a *stream* of JSON values, so an empty file is
   accepted (and then yields nothing).
2. ``jq -r '.intervals[].streams[] | [.socket, .start, .end, .seconds,
   .bytes, .bits_per_second, .retransmits, .snd_cwnd, .rtt, .rttvar, .pmtu,
   .omitted] | @csv'``: one record per stream per interval; ``null`` (a
   missing key) is an empty field, booleans ``true``/``false``, numbers in
   jq 1.6's shortest round-trip form (``jvp_dtoa_fmt``: ``3``, ``1.000154``,
   ``675371436.3705465``, ``1e-05``, ``1e+17``), strings quoted with ``""``.
3. ``echo $res | sed 's/ /\\n/g' | sort > iperf.csv``: the unquoted ``echo``
   joins every whitespace-separated word with one space, ``sed`` turns the
   spaces into newlines, ``sort`` orders the lines byte-wise (C locale); no
   record at all still gives one empty line.
4. ``num = jq '.end.sum_sent.seconds' | cut -d. -f1`` (the integer part) is
   the number of lines per flow: ``split -l num`` cuts ``iperf.csv`` into
   ``results/1.dat``, ``2.dat``, … (``results/*`` is emptied first).
5. Each ``.dat`` is rewritten by ``awk -F, '{print ($1, int($2), int($3),
   ($5/1024)/1024, $6/1024/1024, $7, $8/1024, $9, $10, $11, $12)}' | sort -n
   -k 2``: untouched fields are copied as text (so missing ones stay empty),
   computed numbers print as integers when integral, else ``%.6g`` (awk's
   ``OFMT``); the numeric sort on the key "field 2 to end of line" breaks
   ties by comparing whole lines byte-wise.
6. Seven plots, one line per ``.dat`` file (``ls -1 *.dat`` order, legend =
   file name), x = column 2 "Time (sec)", grid, legend outside on the right;
   written with matplotlib (Agg) as ``results/<name>.pdf`` plus a PNG of
   each. A plot whose column has no numeric value in any file (gnuplot:
   "Skipping data file with no valid points") is not written.

Deviations, on purpose: when the split cannot happen (no
``end.sum_sent.seconds``, e.g. UDP or ``-J`` error output) the real script
leaves a stray empty file literally named ``results/*.dat`` and PDFs gnuplot
could not draw; here nothing is written under ``results/`` and
:class:`PlotError` says why. Locale: the real ``sort`` follows the shell's
locale; this reproduces ``LC_ALL=C`` (identical for the numeric records of
one flow; see docs/semantics/formats.md §5).

Problems are reported with :class:`PlotError` *after* everything that could
be produced was written; ``PlotError.produced`` lists those files.

:func:`plot_json` (``bufferlab plot FILE.json``, last section) reuses the
same rows and plots for any iperf3 JSON, grouping records by stream instead
of the script's line-count split.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..safefs import ensure_dir, not_a_file, savefig, write_atomic

__all__ = ["PlotError", "PlotResult", "PLOTS", "plot_iperf", "plot_json", "load_iperf3_docs", "jq_number",
           "awk_number", "csv_records", "dat_lines"]

#: (output name, y column (1-based, as in the .dat), y label, title, y axis from 0)
PLOTS: tuple[tuple[str, int, str, str, bool], ...] = (
    ("throughput", 5, "Mbps", "Throughput over time", False),
    ("cwnd", 7, "Cwnd", "Sent Cwnd over time", False),
    ("RTT", 8, "RTT", "RTT over time", False),
    ("RTT_Var", 9, "RTT Var", "RTT Var over time", True),
    ("retransmits", 6, "Retransmits", "Retransmits over time", False),
    ("bytes", 4, "MBytes", "Sent data over time", False),
    ("MTU", 10, "MTU", "MTU over time", True),
)

_CSV_KEYS = ("socket", "start", "end", "seconds", "bytes", "bits_per_second", "retransmits", "snd_cwnd",
             "rtt", "rttvar", "pmtu", "omitted")
_DBL_MAX = sys.float_info.max
_AWK_MAX_INT = 2**31 - 1  # mawk prints integral values up to INT_MAX with "%d"


class PlotError(Exception):
    """What went wrong, naming the file; ``produced`` = the files written anyway."""

    def __init__(self, message: str, produced: list[Path] | tuple[Path, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.produced = list(produced)


# --- jq 1.6 -----------------------------------------------------------------------


def jq_number(x: float) -> str:
    """A number as jq 1.6 prints it (``jv_dump_term`` → ``jvp_dtoa_fmt``).

    Shortest round-trip digits (David Gay's ``dtoa`` mode 0, as Python's
    ``repr``); exponent form when the decimal exponent is ≤ −4 or more than
    15 places past the last digit; infinities clamp to ±DBL_MAX.
    """
    x = float(x)
    if math.isnan(x):
        return "null"
    if math.isinf(x):
        x = math.copysign(_DBL_MAX, x)
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    sign = "-" if x < 0 else ""
    tup = Decimal(repr(abs(x))).as_tuple()
    digits = "".join(str(d) for d in tup.digits).rstrip("0") or "0"
    exp = int(tup.exponent) + (len(tup.digits) - len(digits))
    nd = len(digits)
    decpt = nd + exp
    if decpt <= -4 or decpt > nd + 15:
        e = decpt - 1
        mant = digits[0] + ("." + digits[1:] if nd > 1 else "")
        return "%s%se%s%02d" % (sign, mant, "-" if e < 0 else "+", abs(e))
    if decpt <= 0:
        return sign + "0." + "0" * (-decpt) + digits
    if decpt >= nd:
        return sign + digits + "0" * (decpt - nd)
    return sign + digits[:decpt] + "." + digits[decpt:]


def _jq_dump(v: Any) -> str:
    """``jq`` (not ``-r``) output of one value, compact enough for ``cut`` purposes."""
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, (int, float)):
        return jq_number(v)
    return json.dumps(v, indent=2, ensure_ascii=False)


class _JqError(Exception):
    pass


def _jq_kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _jq_index(v: Any, key: str) -> Any:
    if v is None:
        return None
    if isinstance(v, dict):
        return v.get(key)
    raise _JqError(f'Cannot index {_jq_kind(v)} with "{key}"')


def _jq_iterate(v: Any) -> list[Any]:
    if isinstance(v, list):
        return v
    if isinstance(v, dict):
        return list(v.values())
    raise _JqError(f"Cannot iterate over {_jq_kind(v)}")


def _csv_field(v: Any) -> str:
    if v is None:
        return ""
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return "" if isinstance(v, float) and math.isnan(v) else jq_number(v)
    if isinstance(v, str):
        return '"' + v.replace('"', '""') + '"'
    raise _JqError(f"{_jq_kind(v)} is not valid in a csv row")


def csv_records(doc: Any) -> tuple[list[str], str | None]:
    """The ``@csv`` lines jq prints for one document, and jq's error if it stopped."""
    out: list[str] = []
    try:
        for interval in _jq_iterate(_jq_index(doc, "intervals")):
            for stream in _jq_iterate(_jq_index(interval, "streams")):
                out.append(",".join(_csv_field(_jq_index(stream, k)) for k in _CSV_KEYS))
    except _JqError as e:
        return out, str(e)
    return out, None


def _parse_stream(text: str) -> list[Any]:
    """All JSON values of a file, as jq reads them (whitespace-separated stream)."""
    dec = json.JSONDecoder()
    values = []
    pos = 0
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return values
        try:
            value, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            raise
        except RecursionError:  # thousands of [[[[: as jq, an error at that place
            raise json.JSONDecodeError("JSON nested too deep", text, pos) from None
        except ValueError:  # int() refused a number of more than 4300 digits
            long = re.compile(r"\d{4300,}").search(text, pos)
            at = long.start() if long else pos
            raise json.JSONDecodeError("a number with too many digits", text, at) from None
        values.append(value)


# --- awk / sort -------------------------------------------------------------------

_NUM_PREFIX = re.compile(r"[ \t\n]*[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _awk_strtod(field: str) -> float:
    """awk's string → number: the longest leading decimal number, else 0."""
    m = _NUM_PREFIX.match(field)
    return float(m.group(0)) if m else 0.0


def awk_number(v: float) -> str:
    """How awk ``print`` writes a computed number: integral → ``%d``, else ``OFMT`` (``%.6g``)."""
    if math.isfinite(v) and v == int(v) and abs(v) <= _AWK_MAX_INT:
        return "%d" % int(v)
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return "%.6g" % v


def _awk_row(line: str, exact_time: bool = False, keep_blank: bool = False) -> str:
    """One awk output row, plus two ``bufferlab plot`` departures from the script:
    ``exact_time`` keeps start/end fractions (``-i`` below 1 s), ``keep_blank``
    leaves a computed column empty when its source field is (awk would print 0,
    e.g. a cwnd of 0 for UDP)."""
    f = line.split(",")

    def fld(i: int) -> str:
        return f[i - 1] if i <= len(f) else ""

    def num(i: int) -> float:
        return _awk_strtod(fld(i))

    def computed(i: int, v: float) -> str:
        return "" if keep_blank and fld(i) == "" else awk_number(v)

    parts = [
        fld(1),
        awk_number(num(2) if exact_time else float(math.trunc(num(2)))),
        awk_number(num(3) if exact_time else float(math.trunc(num(3)))),
        computed(5, (num(5) / 1024) / 1024),
        computed(6, num(6) / 1024 / 1024),
        fld(7),
        computed(8, num(8) / 1024),
        fld(9),
        fld(10),
        fld(11),
        fld(12),
    ]
    return " ".join(parts)


_SORT_NUM = re.compile(r"[ \t]*(-?)(\d*)(?:\.(\d*))?")


def _sort_key_field2(line: str) -> Decimal:
    """``sort -n -k 2`` key: the leading number of "field 2 to end of line" (C locale)."""
    i = 0
    n = len(line)
    while i < n and line[i] in " \t":  # field 1: leading blanks, then non-blanks
        i += 1
    while i < n and line[i] not in " \t":
        i += 1
    m = _SORT_NUM.match(line, i)
    if not m or not (m.group(2) or m.group(3)):
        return Decimal(0)
    text = (m.group(1) or "") + (m.group(2) or "0") + "." + (m.group(3) or "0")
    return Decimal(text)


def dat_lines(chunk: list[str], exact_time: bool = False, keep_blank: bool = False) -> list[str]:
    """One ``.dat`` file from its ``iperf.csv`` lines: the awk rewrite, then ``sort -n -k 2``."""
    rows = [_awk_row(line, exact_time, keep_blank) for line in chunk]
    return sorted(rows, key=lambda r: (_sort_key_field2(r), r.encode()))


# --- the script -------------------------------------------------------------------


@dataclass
class _Series:
    name: str
    x: list[float]
    y: list[float]


def _gnuplot_value(text: str) -> float | None:
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _series(dat: Path, col: int) -> _Series:
    xs: list[float] = []
    ys: list[float] = []
    for line in dat.read_text().splitlines():
        cells = line.split(" ")  # `set datafile separator " "`: every space separates
        if len(cells) < max(2, col):
            continue
        x = _gnuplot_value(cells[1])
        y = _gnuplot_value(cells[col - 1])
        if x is None or y is None:
            continue
        xs.append(x)
        ys.append(y)
    return _Series(dat.name, xs, ys)


def _draw(series: list[_Series], ylabel: str, title: str, y_from_zero: bool, pdf: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.0, 3.5))
    for s in series:
        ax.plot(s.x, s.y, lw=1.2, label=s.name)
    ax.set_xlabel("Time (sec)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True)
    if y_from_zero:
        ax.set_ylim(bottom=0)
    # `set key reverse Left outside`: outside on the right, sample before the left-aligned name
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=True)
    fig.set_layout_engine("tight")  # laid out at its first write (safefs.savefig)
    savefig(fig, pdf, metadata={"CreationDate": None, "ModDate": None})
    savefig(fig, png, dpi=110)
    plt.close(fig)


def _split_count(docs: list[Any]) -> tuple[int | None, str | None]:
    """``jq '.end.sum_sent.seconds' | cut -d. -f1`` as ``split -l`` would take it."""
    outs: list[str] = []
    for doc in docs:
        try:
            outs.append(_jq_dump(_jq_index(_jq_index(_jq_index(doc, "end"), "sum_sent"), "seconds")))
        except _JqError as e:
            return None, f"jq: {e}"
    cut = "\n".join(line.split(".", 1)[0] for text in outs for line in text.split("\n"))
    words = cut.split()
    if len(words) != 1:
        shown = ", ".join(outs) if outs else "nothing"
        return None, f".end.sum_sent.seconds gives {shown}"
    if not words[0].isdigit() or int(words[0]) < 1:
        return None, f".end.sum_sent.seconds is {outs[0]} (integer part {words[0]!r})"
    return int(words[0]), None


def _decode_problem(text: str, e: json.JSONDecodeError) -> str:
    """"truncated JSON (...)" when the text stops early, else "not valid JSON (...)"."""
    stripped = text.strip()
    truncated = stripped.startswith(("{", "[")) and (
        e.pos >= len(text.rstrip()) or e.msg.startswith("Unterminated string")
        or not stripped.endswith(("}", "]")))
    what = "truncated JSON" if truncated else "not valid JSON"
    return f"{what} ({e.msg} at line {e.lineno} column {e.colno})"


def _protocol(doc: Any) -> str | None:
    try:
        proto = doc["start"]["test_start"]["protocol"]
    except (KeyError, TypeError):
        return None
    return proto if isinstance(proto, str) else None


def _clear_results(results: Path) -> None:
    """``mkdir -p results; rm -rf results/*`` (dot files survive the glob)."""
    ensure_dir(results)  # a symlink named results is replaced, never emptied through
    for entry in sorted(results.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def plot_iperf(json_path: Path, workdir: Path) -> list[Path]:
    """Run ``plot_iperf.sh json_path`` in ``workdir``; returns the files written.

    Writes ``workdir/iperf.csv``, ``workdir/results/N.dat`` and, in
    ``workdir/results``, ``throughput``, ``cwnd``, ``RTT``, ``RTT_Var``,
    ``retransmits``, ``bytes`` and ``MTU`` as ``.pdf`` and ``.png``. The
    returned list is in that order (csv, .dat files by number, then each
    plot's PDF and PNG). Raises :class:`PlotError` naming the file and the
    problem (not a file, not JSON / truncated, empty, not iperf3 output, a
    UDP test, no TCP fields, a missing or unusable ``end.sum_sent.seconds``)
    after writing whatever could still be produced.
    """
    workdir = Path(workdir)
    json_path = Path(json_path)
    src = json_path if json_path.is_absolute() else workdir / json_path
    name = str(json_path)
    if not src.is_file():
        raise PlotError(f"plot_iperf: {name}: is not a file")
    with src.open("rb") as f:
        raw = f.read(MAX_JSON_BYTES + 1)
    if len(raw) > MAX_JSON_BYTES:
        raise PlotError(f"plot_iperf: {name}: more than {MAX_JSON_BYTES >> 20} MiB: not an iperf3 output")
    text = raw.decode("utf-8", errors="replace")
    try:
        docs = _parse_stream(text)
    except json.JSONDecodeError as e:
        raise PlotError(f"plot_iperf: {name}: {_decode_problem(text, e)}; nothing written") from None

    problems: list[str] = []
    produced: list[Path] = []
    if not docs:
        problems.append("empty file (no JSON document)")

    # preprocessor.sh: iperf.csv
    records: list[str] = []
    for doc in docs:
        lines, err = csv_records(doc)
        records += lines
        if err is not None:
            problems.append(f"not iperf3 JSON output (jq: {err})")
    words = "\n".join(records).split()
    csv_text = "".join(w + "\n" for w in sorted(words, key=lambda w: w.encode())) if words else "\n"
    ensure_dir(workdir)
    csv_path = workdir / "iperf.csv"
    write_atomic(csv_path, csv_text)
    produced.append(csv_path)

    for doc in docs:
        if isinstance(doc, dict) and isinstance(doc.get("error"), str):
            problems.append(f"iperf3 reported an error: {doc['error']}")
    if len(docs) > 1:
        problems.append(f"{len(docs)} JSON documents in one file (iperf3 -s -J output?)")
    udp = any(_protocol(d) == "UDP" for d in docs)
    if udp:
        problems.append("UDP test: no TCP fields (retransmits, snd_cwnd, rtt, rttvar, pmtu) and no "
                        "end.sum_sent")
    elif records and all(r.split(",")[6:11] == [""] * 5 for r in records):
        problems.append("intervals carry no TCP sender fields (retransmits, snd_cwnd, rtt, rttvar, pmtu): "
                        "receiver-side JSON (iperf3 -s -J or -R)?")

    # split -l num; results/N.dat
    results = workdir / "results"
    _clear_results(results)
    num, why = _split_count(docs)
    dats: list[Path] = []
    if num is None:
        if docs and not udp:
            problems.append(f"cannot split iperf.csv into flows: {why}")
    else:
        lines = csv_text.split("\n")[:-1]
        for k in range(0, len(lines), num):
            dat = results / f"{k // num + 1}.dat"
            write_atomic(dat, "".join(row + "\n" for row in dat_lines(lines[k:k + num])))
            dats.append(dat)
        produced += dats

    # gnuplot /usr/bin/*.plt
    if dats:
        ordered = sorted(dats, key=lambda p: p.name.encode())  # ls -1 *.dat
        missing = []
        for stem, col, ylabel, title, from_zero in PLOTS:
            series = [_series(d, col) for d in ordered]
            if not any(s.x for s in series):
                missing.append(stem)
                continue
            pdf, png = results / f"{stem}.pdf", results / f"{stem}.png"
            _draw(series, ylabel, title, from_zero, pdf, png)
            produced += [pdf, png]
        if missing:
            problems.append("no data to plot for " + ", ".join(f"{m}.pdf" for m in missing))

    if problems:
        raise PlotError(f"plot_iperf: {name}: " + "; ".join(dict.fromkeys(problems)), produced)
    return produced


# --- bufferlab plot FILE.json ----------------------------------------------------
#
# The same data files and plots, from any iperf3 JSON and without the script's
# accidents: records are grouped by stream (``socket``) instead of split by
# line count, so UDP, ``-R``, server-side (``iperf3 -s -J``), ``-O`` and
# ``-P`` runs all plot. Field presence checked against iperf3's
# ``iperf_api.c`` JSON emitters (3.0: no ``rttvar``/``pmtu``/``sender``;
# 3.2+: ``rttvar``, ``pmtu``; 3.10+: ``snd_wnd``; TCP_INFO fields only in TCP
# sender intervals; ``-s -J`` without ``-1`` writes one document per test).

#: .dat column → the iperf3 interval key it comes from (for the "skipped" notes)
_PLOT_KEY = {"throughput": "bits_per_second", "cwnd": "snd_cwnd", "RTT": "rtt", "RTT_Var": "rttvar",
             "retransmits": "retransmits", "bytes": "bytes", "MTU": "pmtu"}
_DAT_NAME = re.compile(r"(?:\d+|sum)\.dat")

_EXPECTED_JSON = "the JSON document iperf3 writes with -J (keys start, intervals, end)"
_HINT_JSON = "iperf3 -c HOST -J > out.json (client) or iperf3 -s -1 -J > server.json (server)"


@dataclass
class PlotResult:
    """What ``plot_json`` wrote, and notes about plots it left out on purpose."""

    produced: list[Path]
    notes: list[str]


def _user_error(name: str, what: str, expected: str = _EXPECTED_JSON, hint: str = _HINT_JSON) -> str:
    return f"error: {name}: {what}\n  expected: {expected}\n  hint: {hint}"


#: the largest iperf3 output read: an hour of -i 0.1 intervals of -P 128 is well below
MAX_JSON_BYTES = 256 * 1024 * 1024


def load_iperf3_docs(json_path: Path) -> list[dict[str, Any]]:
    """Every iperf3 document in ``json_path``; :class:`PlotError` if there is none usable.

    The message names the file, what was wrong and expected, and a hint.
    """
    name = str(json_path)
    if not json_path.is_file():
        raise PlotError(_user_error(name, not_a_file(json_path)))
    try:
        with json_path.open("rb") as f:
            raw = f.read(MAX_JSON_BYTES + 1)
    except OSError as e:
        raise PlotError(_user_error(name, f"cannot read it: {e.strerror}")) from None
    if len(raw) > MAX_JSON_BYTES:
        raise PlotError(_user_error(name, f"more than {MAX_JSON_BYTES >> 20} MiB: not an iperf3 output"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PlotError(_user_error(name, "not a text file (binary data)")) from None
    if not text.strip():
        raise PlotError(_user_error(name, "empty file", hint="was iperf3 interrupted before it wrote its "
                                    "output? Run it again: " + _HINT_JSON))
    try:
        docs = _parse_stream(text)
    except json.JSONDecodeError as e:
        raise PlotError(_user_error(name, _decode_problem(text, e))) from None
    good: list[dict[str, Any]] = []
    errors: list[str] = []
    for doc in docs:
        if not isinstance(doc, dict):
            errors.append(f"a JSON {_jq_kind(doc)}, not an object")
        elif not isinstance(doc.get("intervals"), list) or not isinstance(doc.get("start"), dict):
            if isinstance(doc.get("error"), str):
                errors.append(f"iperf3 reported an error and measured nothing: {doc['error']}")
            else:
                keys = ", ".join(list(doc)[:6]) or "none"
                errors.append(f"not iperf3 output: no start/intervals keys (keys: {keys})")
        else:
            good.append(doc)
    if not good:
        raise PlotError(_user_error(name, "; ".join(dict.fromkeys(errors))))
    return good


def _stream_rows(doc: dict[str, Any]) -> tuple[dict[Any, list[str]], list[str], int, list[str]]:
    """CSV records (plot_iperf.sh's columns) per socket, the ``sum`` records, omitted count, problems."""
    per_socket: dict[Any, list[str]] = {}
    sums: list[str] = []
    omitted = 0
    problems: list[str] = []
    for k, interval in enumerate(doc["intervals"]):
        streams = interval.get("streams") if isinstance(interval, dict) else None
        if not isinstance(streams, list):
            problems.append(f"intervals[{k}] has no streams list")
            continue
        for s in streams:
            if not isinstance(s, dict):
                problems.append(f"intervals[{k}].streams holds a {_jq_kind(s)}")
                continue
            if s.get("omitted") is True:  # -O warm-up: iperf3's own summary leaves it out too
                omitted += 1
                continue
            try:
                row = ",".join(_csv_field(s.get(key)) for key in _CSV_KEYS)
            except _JqError as e:
                problems.append(f"intervals[{k}].streams: {e}")
                continue
            per_socket.setdefault(s.get("socket"), []).append(row)
        total = interval.get("sum") if isinstance(interval, dict) else None
        if isinstance(total, dict) and total.get("omitted") is not True:
            try:
                sums.append(",".join(["sum"] + [_csv_field(total.get(key)) for key in _CSV_KEYS[1:]]))
            except _JqError as e:
                problems.append(f"intervals[{k}].sum: {e}")
    return per_socket, sums, omitted, problems


def _sub_second(rows: list[str]) -> bool:
    """Reporting interval shorter than 1 s (``-i 0.2``): keep fractional times on the x axis."""
    for row in rows[:-1]:  # the final interval may be short on any run
        f = row.split(",")
        try:
            if float(f[2]) - float(f[1]) < 0.99:
                return True
        except (ValueError, IndexError):
            continue
    return False


def _why_missing(doc: dict[str, Any], keys: list[str]) -> str:
    proto = _protocol(doc)
    if proto == "UDP":
        return "UDP test: iperf3 reports TCP_INFO fields only for TCP senders"
    senders = [s.get("sender") for iv in doc["intervals"] if isinstance(iv, dict)
               for s in iv.get("streams") or [] if isinstance(s, dict)]
    has_tcp = any(isinstance(s, dict) and "snd_cwnd" in s for iv in doc["intervals"] if isinstance(iv, dict)
                  for s in iv.get("streams") or [])
    receiver = (senders and all(x is False for x in senders) or doc["start"].get("connecting_to") is None
                or (doc["start"].get("test_start") or {}).get("reverse"))
    if not has_tcp and receiver:
        return ("receiver-side intervals (iperf3 -s -J, or the client with -R) carry no TCP_INFO fields; "
                "plot the sending side's JSON for them")
    if set(keys) <= {"rttvar", "pmtu"}:
        version = doc["start"].get("version") or "this iperf3"
        return f"{version} does not report them (iperf3 added rttvar and pmtu in 3.2)"
    return "no interval carries them"


def _clear_own_files(out_dir: Path) -> None:
    """Remove what an earlier ``bufferlab plot`` wrote here (only our file names)."""
    if not out_dir.is_dir():
        return
    own = {f"{stem}.{ext}" for stem, *_ in PLOTS for ext in ("pdf", "png")}
    for entry in out_dir.iterdir():
        if entry.is_file() and (entry.name in own or _DAT_NAME.fullmatch(entry.name)):
            entry.unlink()


def _plot_doc(doc: dict[str, Any], out_dir: Path, label: str) -> tuple[list[Path], list[str], list[str]]:
    produced: list[Path] = []
    notes: list[str] = []
    per_socket, sums, omitted, problems = _stream_rows(doc)
    if isinstance(doc.get("error"), str):
        problems.append(f"iperf3 reported an error: {doc['error']} (plotting the intervals it measured)")
    if omitted:
        notes.append(f"{label}: left out {omitted} omitted interval record(s) (-O warm-up)")
    if not per_socket:
        problems.append("no intervals to plot (the test measured nothing)")
        return produced, notes, problems
    ensure_dir(out_dir)
    _clear_own_files(out_dir)
    exact = any(_sub_second(rows) for rows in per_socket.values())
    dats: list[Path] = []
    chunks = list(per_socket.values()) + ([sums] if len(per_socket) > 1 and sums else [])
    for n, rows in enumerate(chunks, 1):
        dat = out_dir / ("sum.dat" if n > len(per_socket) else f"{n}.dat")
        write_atomic(dat, "".join(line + "\n" for line in dat_lines(rows, exact, keep_blank=True)))
        dats.append(dat)
    produced += dats
    skipped: list[str] = []
    for stem, col, ylabel, title, from_zero in PLOTS:
        series = [_series(d, col) for d in dats]
        if not any(s.x for s in series):
            skipped.append(stem)
            continue
        pdf, png = out_dir / f"{stem}.pdf", out_dir / f"{stem}.png"
        _draw([s for s in series if s.x], ylabel, title, from_zero, pdf, png)
        produced += [pdf, png]
    if skipped:
        keys = [_PLOT_KEY[s] for s in skipped]
        notes.append(f"{label}: no {', '.join(s + '.pdf' for s in skipped)}: the intervals have no "
                     f"{', '.join(keys)} ({_why_missing(doc, keys)})")
    return produced, notes, problems


def plot_json(json_path: Path, out_dir: Path | None = None) -> PlotResult:
    """``bufferlab plot``: data files and plots of any iperf3 JSON (3.0 to 3.1x).

    Writes into ``out_dir`` (default: ``results/`` next to the JSON, as
    ``plot_iperf.sh`` does) ``N.dat`` per stream in creation order (same
    columns as the script's; times truncated to whole seconds unless the
    reporting interval is shorter than 1 s), ``sum.dat`` for ``-P`` runs (the
    intervals' ``sum``), and the seven plots as PDF and PNG. A file with
    several tests (``iperf3 -s -J``) gets one ``testN/`` folder per test.
    Plots whose field no interval has (UDP, receiver side, iperf3 3.0/3.1)
    are skipped with a note. Bad input raises :class:`PlotError` after
    writing whatever could still be produced.
    """
    json_path = Path(json_path)
    docs = load_iperf3_docs(json_path)
    out_dir = Path(out_dir) if out_dir is not None else json_path.parent / "results"
    produced: list[Path] = []
    notes: list[str] = []
    problems: list[str] = []
    if len(docs) > 1:
        notes.append(f"{json_path}: {len(docs)} tests in one file (iperf3 -s -J); one folder each: "
                     + ", ".join(str(out_dir / f"test{k}") for k in range(1, len(docs) + 1)))
    for k, doc in enumerate(docs, 1):
        where = out_dir if len(docs) == 1 else out_dir / f"test{k}"
        label = str(json_path) if len(docs) == 1 else f"{json_path} (test {k})"
        try:
            files, doc_notes, doc_problems = _plot_doc(doc, where, label)
        except OSError as e:
            raise PlotError(f"error: cannot write into {where}: {e.strerror}\n"
                            "  hint: choose another folder with -o", produced) from None
        produced += files
        notes += doc_notes
        problems += [f"{label}: {p}" for p in doc_problems]
    if problems:
        lines = [f"error: {p}" for p in dict.fromkeys(problems)] + [f"note: {n}" for n in notes]
        lines.append(f"  expected: {_EXPECTED_JSON}\n  hint: {_HINT_JSON}")
        raise PlotError("\n".join(lines), produced)
    return PlotResult(produced, notes)
