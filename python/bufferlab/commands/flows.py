"""``flows``: a flow-workload generator and its server (bufferlab's own command).

* ``flows -c DEST --rate R/s --size DIST [-t T] [-C CC] [-p PORT] [-S TOS]`` -- Poisson
  arrivals of R flows per simulated second; each flow is a new TCP connection to
  DEST:PORT that sends a size drawn from DIST and closes (the engine's
  ``flows_client``, crates/bufferlab-core/src/app/flows.rs);
* ``flows -s [-p PORT]`` -- accepts every flow on PORT and reads it (``flows_server``).

DIST is one of

* ``fixed:N`` -- every flow N bytes;
* ``exp:mean=M`` -- exponential with mean M;
* ``pareto:mean=M,shape=A`` -- Pareto type I with tail index A > 1 and mean M
  (scale M·(A−1)/A);
* ``lognormal:mu=MU,sigma=S`` -- exp(MU + S·Z), Z standard normal: MU and S are the
  mean and standard deviation of the *natural log of the size in bytes* (numpy's
  ``lognormal(mean=MU, sigma=S)``; the median size is e^MU);
* ``empirical:FILE`` -- a CDF file as the web-search (DCTCP) and data-mining (VL2)
  workloads are published: one ``SIZE CDF`` pair per line, ``#`` comments and blank
  lines ignored, sizes non-decreasing, CDF values non-decreasing in [0, 1] and the
  last one 1; sizes between two points are interpolated linearly. FILE is relative
  to the scenario file's folder.

Sizes (N, M and the CDF file's sizes) are bytes with an optional unit: ``b``,
``k``/``kb`` (×1024), ``m``/``mb`` (×1024²), ``g``/``gb`` (×1024³), case-insensitive,
as tc's byte sizes and iperf3's ``-n`` count them. The rate is flows per second:
``1000``, ``1000/s``, ``2.5k/s`` (k = ×1000). ``-t`` stops the arrivals after T (the
command ends when its last flow has); without it, flows arrive until the part ends.
The port defaults to 5001 as for the other generators.

Each flow's record (id, start, size, completion time, retransmits, completed) goes
into the run's ``fct`` table (docs/tables.md); a flow is complete when its last byte
is acknowledged, so its FCT counts the handshake's round trip, the data's
serialisation and queueing, and the last byte's round trip.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bufferlab.errors import CommandError, Diagnostics, ScenarioError
from bufferlab.units import parse_duration_ns, strtod_prefix

from ._common import Resolver, check_host, port_value, prog_value, tos_value
from ._getopt import Getopt, Opt, OptSpec
from .shell import Word

__all__ = ["FlowsClient", "FlowsServer", "parse_flows", "arrival_rate", "parse_flow_size", "parse_size_dist",
           "read_cdf_file", "is_endless", "report_text", "DISTRIBUTIONS"]

DEFAULT_PORT = 5001
USAGE = "flows -c DEST --rate R/s --size DIST [-t T] [-C CC] [-p PORT] [-S TOS] | flows -s [-p PORT]"
DIST_EXPECTED = ("fixed:N, exp:mean=M, pareto:mean=M,shape=A, lognormal:mu=MU,sigma=S "
                 "or empirical:FILE")
#: each distribution's parameters, in the order they are written
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "fixed": (),
    "exp": ("mean",),
    "pareto": ("mean", "shape"),
    "lognormal": ("mu", "sigma"),
    "empirical": (),
}
SIZE_EXPECTED = "a size in bytes: 1000, 64k, 1.5mb, 2M (k/kb, m/mb, g/gb are ×1024)"
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}
_RATE = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([kKmM]?)(?:/s)?")


@dataclass
class FlowsClient:
    dest: str
    dest_col: int
    rate_per_s: float
    #: the engine's ``FlowSizeDist`` (``{"dist": "exp", "mean": ...}``)
    size: dict[str, Any]
    size_text: str
    port: int = DEFAULT_PORT
    duration_ns: int | None = None
    congestion: str | None = None
    tos: int = 0

    def to_spec(self) -> dict[str, Any]:
        """The engine's ``flows_client`` spec; the caller adds ``tcp``."""
        return {"kind": "flows_client", "dst": self.dest, "port": self.port, "rate_per_s": self.rate_per_s,
                "size": self.size, "duration_ns": self.duration_ns, "tos": self.tos}


@dataclass
class FlowsServer:
    port: int = DEFAULT_PORT

    def to_spec(self) -> dict[str, Any]:
        return {"kind": "flows_server", "port": self.port}


def parse_flow_size(text: str, col: int | None = None, what: str = "size") -> float:
    """A size in bytes with an optional byte unit (see the module docstring)."""
    value, rest = strtod_prefix(text)
    unit = rest.lower()
    if value is None or unit not in _SIZE_UNITS:
        hint = None
        if value is not None and unit.endswith("bit"):
            hint = "flow sizes are bytes: write e.g. 64k or 1mb"
        elif value is not None:
            hint = f'unknown unit "{rest}": use b, k/kb, m/mb or g/gb'
        raise CommandError(f'flows: invalid {what} "{text}"', col=col, expected=SIZE_EXPECTED,
                           suggestion=hint)
    size = value * _SIZE_UNITS[unit]
    if not math.isfinite(size) or size <= 0:
        raise CommandError(f'flows: {what} "{text}" must be above 0 bytes', col=col, expected=SIZE_EXPECTED)
    return size


def read_cdf_file(path: Path, shown: str) -> list[tuple[float, float]]:
    """The (size, cdf) points of an empirical CDF file; errors name ``shown``:LINE:COL."""

    def fail(line: int, col: int, message: str, expected: str, hint: str | None = None) -> ScenarioError:
        return ScenarioError(message, file=shown, line=line, col=col, expected=expected, suggestion=hint)

    expected = "one 'SIZE CDF' pair per line, e.g. '10k 0.15' (# starts a comment)"
    points: list[tuple[float, float]] = []
    text = path.read_text(encoding="utf-8")
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        words = [(m.group(0), m.start() + 1) for m in re.finditer(r"\S+", line)]
        if not words:
            continue
        if len(words) != 2:
            col = words[2][1] if len(words) > 2 else words[0][1]
            raise fail(n, col, f"expected 2 columns (size, cdf), found {len(words)}", expected,
                       "the web-search/data-mining files with 3 columns (size, ignored, cdf) need the "
                       "middle column removed" if len(words) == 3 else None)
        (size_t, size_c), (p_t, p_c) = words
        try:
            size = parse_flow_size(size_t, size_c)
        except CommandError as e:
            raise fail(n, size_c, e.message.removeprefix("flows: "), SIZE_EXPECTED, e.suggestion) from None
        p, rest = strtod_prefix(p_t)
        if p is None or rest or not 0.0 <= p <= 1.0:
            percent = p is not None and not rest and p > 1
            raise fail(n, p_c, f'invalid cumulative probability "{p_t}"', "a number in [0, 1]",
                       "a percentage must be divided by 100" if percent else None)
        if points and (size < points[-1][0] or p < points[-1][1]):
            raise fail(n, size_c if size < points[-1][0] else p_c,
                       "sizes and probabilities must not decrease from one line to the next", expected)
        points.append((size, p))
    if not points:
        raise fail(1, 1, "the CDF file has no points", expected)
    if points[-1][1] != 1.0:
        raise fail(len(text.splitlines()), 1, f"the CDF ends at {points[-1][1]}, not at 1", expected,
                   "add a last line whose cdf is 1 (the largest flow size)")
    return points


def parse_size_dist(word: Word, base_dir: Path | None) -> dict[str, Any]:
    """``--size DIST`` -> the engine's ``FlowSizeDist``."""
    text, col = word.text, word.col
    name, sep, args = text.partition(":")
    if name not in DISTRIBUTIONS:
        close = difflib.get_close_matches(name, list(DISTRIBUTIONS), n=1)
        raise CommandError(f'flows: unknown size distribution "{name}"', col=col, expected=DIST_EXPECTED,
                           suggestion=f"did you mean {close[0]}?" if close else None)
    arg_col = col + len(name) + len(sep)
    if name == "fixed":
        return {"dist": "fixed", "bytes": round(parse_flow_size(args, arg_col))}
    if name == "empirical":
        if not args:
            raise CommandError("flows: empirical needs a CDF file", col=col, expected="empirical:FILE")
        path = Path(args)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise CommandError(f"flows: {args}: No such file", col=arg_col, expected="empirical:FILE",
                               suggestion=f"FILE is relative to the scenario's folder ({base_dir or '.'})")
        return {"dist": "empirical", "points": read_cdf_file(path, args)}
    wanted = DISTRIBUTIONS[name]
    example = f"{name}:" + ",".join(f"{k}=..." for k in wanted)
    values: dict[str, float] = {}
    pos = arg_col
    for item in args.split(",") if args else []:
        key, eq, val = item.partition("=")
        if key not in wanted or not eq:
            unknown = key not in wanted
            close = difflib.get_close_matches(key, list(wanted), n=1) if unknown else []
            raise CommandError(f'flows: {name} has no parameter "{key}"' if unknown
                               else f"flows: {key} needs a value", col=pos, expected=example,
                               suggestion=f"did you mean {close[0]}?" if close else None)
        vcol = pos + len(key) + 1
        if key in ("mean",):
            values[key] = parse_flow_size(val, vcol, what=key)
        else:
            v, rest = strtod_prefix(val)
            if v is None or rest or not math.isfinite(v):
                raise CommandError(f'flows: invalid {key} "{val}"', col=vcol, expected=example)
            values[key] = v
        pos += len(item) + 1
    missing = [k for k in wanted if k not in values]
    if missing:
        raise CommandError(f"flows: {name} needs {', '.join(missing)}", col=col, expected=example)
    if name == "pareto" and values["shape"] <= 1:
        raise CommandError(f"flows: pareto shape {values['shape']:g} has no finite mean", col=col,
                           expected="shape > 1", suggestion="web-like heavy tails use 1.05 to 2")
    if name == "lognormal" and values["sigma"] < 0:
        raise CommandError("flows: lognormal sigma must be >= 0", col=col, expected=example)
    return {"dist": name, **values}


def _rate(w: Word) -> float:
    m = _RATE.fullmatch(w.text)
    if not m:
        raise CommandError(f'flows: invalid rate "{w.text}"', col=w.col,
                           expected="flows per second: 1000, 1000/s, 2.5k/s")
    rate = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6}[m.group(2).lower()]
    if rate <= 0:
        raise CommandError("flows: the rate must be above 0 flows/s", col=w.col, expected="e.g. --rate 100/s")
    return rate


_SPECS = [
    OptSpec("c", "c", ("client",), arg=True),
    OptSpec("s", "s", ("server",)),
    OptSpec("p", "p", ("port",), arg=True),
    OptSpec("t", "t", ("time",), arg=True),
    OptSpec("C", "C", ("congestion",), arg=True),
    OptSpec("S", "S", ("tos",), arg=True),
    OptSpec("rate", None, ("rate",), arg=True),
    OptSpec("size", None, ("size",), arg=True),
]


def parse_flows(words: list[Word], diag: Diagnostics, resolve: Resolver | None = None,
                base_dir: Path | None = None) -> FlowsClient | FlowsServer:
    """Parse a ``flows`` line (``words[0]`` is ``flows``)."""
    opts, operands = Getopt("flows", _SPECS, expected=USAGE).parse(words[1:])
    if operands:
        raise CommandError(f"flows: unexpected argument {operands[0].text!r}", col=operands[0].col,
                           expected=USAGE, suggestion="the destination goes after -c")
    vals: dict[str, Opt] = {o.key: o for o in opts}

    def value(key: str) -> Word:
        w = vals[key].value
        assert w is not None
        return w

    port = port_value("flows", value("p")) if "p" in vals else DEFAULT_PORT
    if "s" in vals:
        extra = [k for k in ("c", "t", "C", "S", "rate", "size") if k in vals]
        if extra:
            o = vals[extra[0]]
            raise CommandError(f"flows -s takes only -p, not {o.spelled}", col=o.col, expected=USAGE)
        return FlowsServer(port=port)
    if "c" not in vals:
        raise CommandError("flows: -c DEST or -s is required", col=words[0].col, expected=USAGE)
    dest = value("c")
    check_host(dest, "flows", resolve, f"flows: {dest.text}: Name or service not known")
    for key, example in (("rate", "--rate 100/s"), ("size", "--size exp:mean=100k")):
        if key not in vals:
            raise CommandError(f"flows: --{key} is required", col=words[0].col, expected=USAGE,
                               suggestion=f"e.g. flows -c {dest.text} --rate 100/s --size exp:mean=100k"
                               if key == "rate" else f"e.g. {example}")
    duration = prog_value("flows", parse_duration_ns, value("t")) if "t" in vals else None
    if duration == 0:
        raise CommandError("flows: -t must be longer than 0", col=value("t").col, expected=USAGE)
    tos = tos_value("flows", value("S")) if "S" in vals else 0
    return FlowsClient(dest=dest.text, dest_col=dest.col, rate_per_s=_rate(value("rate")),
                       size=parse_size_dist(value("size"), base_dir), size_text=value("size").text,
                       port=port, duration_ns=duration,
                       congestion=value("C").text if "C" in vals else None, tos=tos)


def arrival_rate(words: list[Word]) -> tuple[float, int | None, Word] | None:
    """(flows per second, ``-t`` in ns or None, the rate's word) of a ``flows -c`` line that
    parses (run/budget.py bounds rate × duration), else None."""
    try:
        opts, _ = Getopt("flows", _SPECS, expected=USAGE).parse(words[1:])
        vals = {o.key: o.value for o in opts}
        rate_w, t_w = vals.get("rate"), vals.get("t")
        if "s" in vals or rate_w is None:
            return None
        t = prog_value("flows", parse_duration_ns, t_w) if t_w is not None else None
        return _rate(rate_w), t, rate_w
    except CommandError:
        return None


def is_endless(cmd: FlowsClient | FlowsServer) -> bool:
    return isinstance(cmd, FlowsServer) or cmd.duration_ns is None


def report_text(cmd: FlowsClient | FlowsServer, result: dict[str, Any]) -> str:
    """The line ``flows`` prints when it ends (bufferlab's own format)."""
    if isinstance(cmd, FlowsServer):
        return (f"flows -s: {result.get('connections', 0)} flows accepted on port {cmd.port}, "
                f"{result.get('bytes', 0)} bytes received\n")
    fct = [f for f in result.get("flows", {}).get("fct_ns", []) if f is not None]
    mean = f", mean FCT {sum(fct) / len(fct) / 1e6:.3f} ms" if fct else ""
    return (f"flows: {result.get('arrivals', 0)} flows to {cmd.dest}:{cmd.port} ({cmd.size_text}), "
            f"{result.get('completed', 0)} completed{mean}\n")
