"""``tc qdisc ...`` command lines -> validated requests in the kernel's units.

Mirrors iproute2 (qdiscs.md §0 lists the tags read):

* ``tc/tc.c`` -- global options (``-s``, ``-d``, ``-r``, ``-p``, ``-i``) and
  object selection, all by ``matches()`` prefix in tc's order;
* ``tc/tc_qdisc.c`` -- verbs (``a``dd, ``c``hange, ``r``eplace, ``l``ink,
  ``d``elete, ``list``/``show``/``lst``; first match in that order wins) and
  ``dev``/``handle``/``root``/``parent`` parsing, including its error texts;
* ``tc/tc_util.c`` -- ``get_qdisc_handle`` (hex major, ``:`` or end),
  ``get_tc_classid`` (hex ``maj:min``), ``parse_percent``;
* ``tc/q_fifo.c`` (pfifo, bfifo, pfifo_head_drop; exact ``limit``);
* ``tc/q_tbf.c`` -- keywords, prefix rules, mandatory checks, ``latency`` →
  ``limit`` conversion and its error messages;
* ``tc/q_red.c``, ``tc/tc_red.c`` -- RED keywords (exact), defaults, and the
  Wlog / Plog / max_P / Scell_log + idle-damping table tc computes;
* ``tc/q_sfb.c`` -- sfb keywords (exact), tc's defaults, ``max``/``target``
  derivation and Q0.16 probabilities ``trunc(F·65535 + 0.5)``;
* SIM kinds ``blue`` / ``cpm_blue`` and the CPM map ``dscp-coeff`` of
  qdiscs.md §6.1/§7 (``red_csc573``/``cpm_red`` = red with the report's map);
* ``tc/q_netem.c`` -- every keyword with ``matches()`` prefixes in source
  order, optional positional numbers (next word starts with a digit, or ``-``
  for the overheads), defaults and final checks;
* ``lib/utils.c``/``lib/utils_math.c`` number readers (see :mod:`bufferlab.units`).

:meth:`TcQdiscRequest.to_json` produces exactly the serde JSON of
``crates/bufferlab-core/src/qdisc/spec.rs`` (``TcRequest``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bufferlab.errors import CommandError, Diagnostics, NotSupportedError
from bufferlab.profile import Profile
from bufferlab.units import (
    U32_MAX,
    parse_netem_time,
    parse_percent,
    parse_percent_fraction,
    parse_rate,
    parse_rate_bits,
    parse_size,
    parse_time_ns64,
    parse_time_us,
    percent_to_u32,
    strtod_prefix,
)

from ._common import c_int_full, matches, suggestion_for
from .shell import Word

__all__ = [
    "ParentRoot",
    "ParentClass",
    "ParentSpec",
    "NoqueueSpec",
    "FifoSpec",
    "PfifoFastSpec",
    "TbfSpec",
    "NetemLossRandom",
    "NetemLossState",
    "NetemLossGemodel",
    "NetemCorrelation",
    "NetemPercent",
    "NetemRate",
    "NetemSlot",
    "NetemSpec",
    "DscpCoeff",
    "RedSpec",
    "BlueSpec",
    "CodelSpec",
    "FqCodelSpec",
    "PieSpec",
    "RedNs3Spec",
    "SfbSpec",
    "red_eval_ewma",
    "red_eval_p",
    "red_eval_idle_damping",
    "QdiscSpec",
    "TcQdiscRequest",
    "TcShow",
    "parse_tc",
    "MODELLED_QDISCS",
    "KNOWN_UNMODELLED_QDISCS",
]

# ---------------------------------------------------------------------------
# request data (field order = spec.rs field order, so JSON matches serde's)


@dataclass(frozen=True)
class ParentRoot:
    def to_json_value(self) -> Any:
        return "root"


@dataclass(frozen=True)
class ParentClass:
    major: int
    minor: int

    def to_json_value(self) -> Any:
        return {"class": {"major": self.major, "minor": self.minor}}


ParentSpec = ParentRoot | ParentClass


@dataclass
class NoqueueSpec:
    kind: str = "noqueue"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "noqueue"}


@dataclass
class FifoSpec:
    """pfifo / bfifo / pfifo_head_drop; ``limit`` None = kernel default."""

    kind: str
    limit: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "limit": self.limit}


@dataclass
class PfifoFastSpec:
    kind: str = "pfifo_fast"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "pfifo_fast"}


@dataclass
class TbfSpec:
    """What the kernel receives (qdiscs.md §3.2); ``latency`` already turned into ``limit``."""

    rate: int  # bytes/s
    burst: int  # bytes
    limit: int  # bytes
    peakrate: int | None = None  # bytes/s
    mtu: int | None = None  # bytes (only with peakrate)
    mpu: int = 0
    overhead: int = 0
    atm: bool = False
    kind: str = field(default="tbf", repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "tbf",
            "rate": self.rate,
            "burst": self.burst,
            "limit": self.limit,
            "peakrate": self.peakrate,
            "mtu": self.mtu,
            "mpu": self.mpu,
            "overhead": self.overhead,
            "atm": self.atm,
        }


@dataclass
class NetemLossRandom:
    p: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"model": "random", "p": self.p}


@dataclass
class NetemLossState:
    p13: int
    p31: int
    p32: int
    p23: int
    p14: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": "state",
            "p13": self.p13,
            "p31": self.p31,
            "p32": self.p32,
            "p23": self.p23,
            "p14": self.p14,
        }


@dataclass
class NetemLossGemodel:
    p: int
    r: int
    h: int
    k1: int

    def to_dict(self) -> dict[str, Any]:
        return {"model": "gemodel", "p": self.p, "r": self.r, "h": self.h, "k1": self.k1}


NetemLoss = NetemLossRandom | NetemLossState | NetemLossGemodel


@dataclass
class NetemCorrelation:
    delay: int = 0
    loss: int = 0
    duplicate: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"delay": self.delay, "loss": self.loss, "duplicate": self.duplicate}


@dataclass
class NetemPercent:
    p: int = 0
    corr: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"p": self.p, "corr": self.corr}


@dataclass
class NetemRate:
    rate: int  # bytes/s
    packet_overhead: int = 0
    cell_size: int = 0
    cell_overhead: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "packet_overhead": self.packet_overhead,
            "cell_size": self.cell_size,
            "cell_overhead": self.cell_overhead,
        }


@dataclass
class NetemSlot:
    min_delay: int = 0  # ns
    max_delay: int = 0  # ns
    dist: tuple[str, int, int] | None = None  # (distribution, delay ns, jitter ns)
    packets: int | None = None
    bytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_delay": self.min_delay,
            "max_delay": self.max_delay,
            "dist": list(self.dist) if self.dist is not None else None,
            "packets": self.packets,
            "bytes": self.bytes,
        }


@dataclass
class NetemSpec:
    """netem as the kernel receives it (qdiscs.md §4.1, §4.8). ``None`` = not given."""

    limit: int = 1000
    latency: int = 0  # ns
    jitter: int = 0  # ns
    loss: NetemLoss = field(default_factory=NetemLossRandom)
    gap: int = 0
    duplicate: int = 0
    correlation: NetemCorrelation | None = None
    reorder: NetemPercent | None = None
    corrupt: NetemPercent | None = None
    rate: NetemRate | None = None
    ecn: bool | None = None
    slot: NetemSlot | None = None
    distribution: str | None = None
    kind: str = field(default="netem", repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "netem",
            "limit": self.limit,
            "latency": self.latency,
            "jitter": self.jitter,
            "loss": self.loss.to_dict(),
            "gap": self.gap,
            "duplicate": self.duplicate,
            "correlation": self.correlation.to_dict() if self.correlation else None,
            "reorder": self.reorder.to_dict() if self.reorder else None,
            "corrupt": self.corrupt.to_dict() if self.corrupt else None,
            "rate": self.rate.to_dict() if self.rate else None,
            "ecn": self.ecn,
            "slot": self.slot.to_dict() if self.slot else None,
            "distribution": self.distribution,
        }


@dataclass
class DscpCoeff:
    """CPM coefficient map (qdiscs.md §7): ``classes`` = [(key, num, den)], ``default`` = (num, den)."""

    classes: list[tuple[int, int, int]]
    default: tuple[int, int]
    match_dscp: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "classes": [{"key": k, "num": n, "den": d} for k, n, d in self.classes],
            "default": list(self.default),
            "match_dscp": self.match_dscp,
        }


#: the CPM report's table (qdiscs.md §7): 0x32 → 0.5, 0x46 → 0.7, others → 0.9
REPORT_DSCP_COEFF = "0x32:0.5,0x46:0.7,default:0.9"


@dataclass
class RedSpec:
    """red as the kernel receives it (qdiscs.md §5.2–5.3), computed as tc does."""

    limit: int
    qth_min: int
    qth_max: int
    wlog: int
    plog: int
    scell_log: int
    stab: list[int]
    max_p: int
    ecn: bool = False
    harddrop: bool = False
    adaptive: bool = False
    nodrop: bool = False
    #: the adaptive flag travels in the qopt flags byte (iproute2 <= 5.6): timer runs
    adaptive_timer: bool = False
    dscp_coeff: DscpCoeff | None = None
    kind: str = "red"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "red",
            "limit": self.limit,
            "qth_min": self.qth_min,
            "qth_max": self.qth_max,
            "wlog": self.wlog,
            "plog": self.plog,
            "scell_log": self.scell_log,
            "stab": list(self.stab),
            "max_p": self.max_p,
            "ecn": self.ecn,
            "harddrop": self.harddrop,
            "adaptive": self.adaptive,
            "nodrop": self.nodrop,
            "adaptive_timer": self.adaptive_timer,
            "dscp_coeff": self.dscp_coeff.to_dict() if self.dscp_coeff else None,
        }


@dataclass
class BlueSpec:
    """blue (SIM, qdiscs.md §6.1): probabilities as rint(d·2³²), hold times in ns."""

    limit: int = 1000
    increment: int = 10737418
    decrement: int = 1073742
    freeze_inc: int = 100_000_000
    freeze_dec: int = 100_000_000
    shared: bool = True
    qthresh: int | None = None
    ecn: bool = False
    dscp_coeff: DscpCoeff | None = None
    kind: str = "blue"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "blue",
            "limit": self.limit,
            "increment": self.increment,
            "decrement": self.decrement,
            "freeze_inc": self.freeze_inc,
            "freeze_dec": self.freeze_dec,
            "shared": self.shared,
            "qthresh": self.qthresh,
            "ecn": self.ecn,
            "dscp_coeff": self.dscp_coeff.to_dict() if self.dscp_coeff else None,
        }


@dataclass
class SfbSpec:
    """sfb (qdiscs.md §6.2) as ``struct tc_sfb_qopt``: tc's defaults filled in,
    times in ms, probabilities Q0.16, ``limit`` 0 = the device's txqueuelen."""

    rehash: int = 600_000
    db: int = 60_000
    limit: int = 0
    max: int = 25
    target: int = 20
    increment: int = 33
    decrement: int = 3
    penalty_rate: int = 10
    penalty_burst: int = 20
    kind: str = "sfb"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": "sfb"}
        for k in ("rehash", "db", "limit", "max", "target", "increment", "decrement", "penalty_rate",
                  "penalty_burst"):
            d[k] = getattr(self, k)
        return d


@dataclass
class CodelSpec:
    """codel (qdiscs.md §8.1) as netlink attributes: times in µs; None = not given."""

    limit: int | None = None
    target: int | None = None
    interval: int | None = None
    ce_threshold: int | None = None
    ecn: bool | None = None
    kind: str = "codel"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "codel",
            "limit": self.limit,
            "target": self.target,
            "interval": self.interval,
            "ce_threshold": self.ce_threshold,
            "ecn": self.ecn,
        }


@dataclass
class FqCodelSpec:
    """fq_codel (qdiscs.md §8.2): times in µs, sizes in bytes; None = not given."""

    limit: int | None = None
    flows: int | None = None
    target: int | None = None
    interval: int | None = None
    quantum: int | None = None
    ecn: bool | None = None
    ce_threshold: int | None = None
    memory_limit: int | None = None
    drop_batch: int | None = None
    kind: str = "fq_codel"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": "fq_codel"}
        for k in ("limit", "flows", "target", "interval", "quantum", "ecn", "ce_threshold", "memory_limit",
                  "drop_batch"):
            d[k] = getattr(self, k)
        return d


@dataclass
class PieSpec:
    """pie (qdiscs.md §8.3): times in µs, alpha/beta as given (0..32); None = not given."""

    limit: int | None = None
    target: int | None = None
    tupdate: int | None = None
    alpha: int | None = None
    beta: int | None = None
    ecn: bool | None = None
    bytemode: bool | None = None
    dq_rate_estimator: bool | None = None
    kind: str = "pie"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": "pie"}
        for k in ("limit", "target", "tupdate", "alpha", "beta", "ecn", "bytemode", "dq_rate_estimator"):
            d[k] = getattr(self, k)
        return d


@dataclass
class RedNs3Spec:
    """red_ns3 (SIM, qdiscs.md §5.10): ns-3's RED attributes; thresholds and
    limit in the mode's unit, times in ns, bandwidth in bit/s; exactly one of
    ``max_p`` / ``linterm`` (max_p = 1/linterm, ns-3's reading)."""

    variant: str = "qdisc"  # "2015" | "qdisc"
    mode: str = "packets"  # "packets" | "bytes"
    limit: int = 25
    min_th: float = 5.0
    max_th: float = 15.0
    qw: float = 0.002
    max_p: float | None = None
    linterm: float | None = 50.0
    mean_pkt_size: int = 500
    gentle: bool = True
    wait: bool = True
    ecn: bool = False
    harddrop: bool = True
    ns1compat: bool = False
    bandwidth: int = 1_500_000
    link_delay: int = 20_000_000
    ared: bool = False
    adapt_max_p: bool = False
    target_delay: int = 5_000_000
    interval: int = 500_000_000
    top: float = 0.5
    bottom: float = 0.0
    alpha: float = 0.01
    beta: float = 0.9
    rtt: int = 100_000_000
    feng: bool = False
    feng_alpha: float = 3.0
    feng_beta: float = 2.0
    nlred: bool = False
    kind: str = "red_ns3"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": "red_ns3"}
        for k in self.__dataclass_fields__:
            if k != "kind":
                d[k] = getattr(self, k)
        return d


QdiscSpec = (
    NoqueueSpec | FifoSpec | PfifoFastSpec | TbfSpec | NetemSpec | RedSpec | BlueSpec
    | CodelSpec | FqCodelSpec | PieSpec | RedNs3Spec | SfbSpec
)

_VERB_JSON = {"add": "add", "change": "change", "replace": "replace", "link": "link", "delete": "delete"}


@dataclass
class TcQdiscRequest:
    """One ``tc qdisc {add|change|replace|link|delete} ...``."""

    verb: str  # "add" | "change" | "replace" | "link" | "delete"
    dev: str
    parent: ParentSpec | None = None  # None: neither root nor parent given
    handle: int | None = None  # major of "handle X:"
    qdisc: QdiscSpec | None = None  # None only for delete
    dev_col: int | None = None
    kind_col: int | None = None
    verb_col: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "verb": _VERB_JSON[self.verb],
            "dev": self.dev,
            "parent": self.parent.to_json_value() if self.parent is not None else None,
            "handle": self.handle,
            "qdisc": self.qdisc.to_dict() if self.qdisc is not None else None,
        }

    def to_json(self) -> str:
        """The ``TcRequest`` JSON the engine's ``Simulator.tc()`` takes."""
        return json.dumps(self.to_dict(), separators=(",", ":"))


@dataclass
class TcShow:
    """``tc [-s] [-d] qdisc {show|ls|list} [dev D] [root|handle H|parent P] [invisible]``."""

    dev: str | None = None
    stats: bool = False
    details: bool = False
    raw: bool = False
    pretty: bool = False
    iec: bool = False
    invisible: bool = False
    #: filters of ``tc qdisc show`` (iproute2 >= 4.x): root / parent / handle
    parent: ParentSpec | None = None
    handle: int | None = None
    dev_col: int | None = None


# ---------------------------------------------------------------------------
# qdisc kinds

MODELLED_QDISCS = (
    "noqueue",
    "pfifo",
    "bfifo",
    "pfifo_head_drop",
    "pfifo_fast",
    "tbf",
    "netem",
    "red",
    "red_csc573",
    "cpm_red",
    "blue",
    "cpm_blue",
    "codel",
    "fq_codel",
    "pie",
    "red_ns3",
    "sfb",
)

#: real Linux qdiscs, and the SIM kinds of qdiscs.md §5.10/§6/§7, not modelled yet
KNOWN_UNMODELLED_QDISCS = (
    "gred",
    "choke",
    "fq_pie",
    "cake",
    "fq",
    "sfq",
    "htb",
    "hfsc",
    "prio",
    "drr",
    "qfq",
    "ets",
    "cbq",
    "cbs",
    "etf",
    "taprio",
    "mq",
    "mqprio",
    "multiq",
    "skbprio",
    "hhf",
    "plug",
    "dsmark",
    "atm",
    "ingress",
    "clsact",
    "teql",
    "dualpi2",
)

_NOT_COMPLETE = 'Command line is not complete. Try option "help"'


class _Cursor:
    def __init__(self, words: list[Word], i: int = 0) -> None:
        self.words = words
        self.i = i

    def done(self) -> bool:
        return self.i >= len(self.words)

    def peek(self, k: int = 0) -> Word | None:
        j = self.i + k
        return self.words[j] if j < len(self.words) else None

    def take(self) -> Word:
        w = self.words[self.i]
        self.i += 1
        return w

    def value(self, keyword: Word, expected: str | None = None) -> Word:
        """NEXT_ARG(): the word after ``keyword`` or tc's "not complete" error."""
        if self.done():
            raise CommandError(
                _NOT_COMPLETE, col=keyword.col, expected=expected or f"a value after {keyword.text!r}"
            )
        return self.take()


def _rewrap(err: CommandError, message: str, col: int | None = None) -> CommandError:
    cls = NotSupportedError if isinstance(err, NotSupportedError) else CommandError
    return cls(message, col=err.col if col is None else col, expected=err.expected, suggestion=err.suggestion)


def _unit(fn: Callable[..., Any], word: Word, message: str, *args: Any, **kw: Any) -> Any:
    """Run a units reader; on error keep its column/expected/hint, use tc's message."""
    try:
        return fn(word.text, *args, col=word.col, **kw)
    except CommandError as err:
        raise _rewrap(err, message) from None


# ---------------------------------------------------------------------------
# handles


def _qdisc_handle(word: Word) -> int | None:
    """``get_qdisc_handle``: hex major < 0x10000 then ``:`` or end; ``none`` = 0."""
    t = word.text
    if t == "none":
        return None
    j = 0
    while j < len(t) and t[j] in "0123456789abcdefABCDEF":
        j += 1
    if j == 0 or (j < len(t) and t[j] != ":"):
        raise CommandError(
            f'Error: argument "{t}" is wrong: invalid qdisc ID',
            col=word.col,
            expected="a handle such as 1: or 8001: (hexadecimal major number and a colon)",
        )
    major = int(t[:j], 16)
    if major >= 1 << 16:
        raise CommandError(
            f'Error: argument "{t}" is wrong: invalid qdisc ID',
            col=word.col,
            expected="a major number between 1: and ffff:",
        )
    return major or None


def _classid(word: Word, what: str = "invalid parent ID") -> ParentSpec | None:
    """``get_tc_classid``: ``root``, ``none``, ``maj:``, ``maj:min``, ``:min`` or a bare hex number."""
    t = word.text
    if t == "root":
        return ParentRoot()
    if t == "none":
        return None
    bad = CommandError(
        f'Error: argument "{t}" is wrong: {what}',
        col=word.col,
        expected="a class id such as 1: or 1:1 (hexadecimal), or root",
    )
    hexd = "0123456789abcdefABCDEF"
    j = 0
    while j < len(t) and t[j] in hexd:
        j += 1
    if j == 0 and not t.startswith(":"):
        raise bad
    major = int(t[:j], 16) if j else 0
    if j < len(t) and t[j] == ":":
        if major >= 1 << 16:
            raise bad
        rest = t[j + 1 :]
        k = 0
        while k < len(rest) and rest[k] in hexd:
            k += 1
        if k != len(rest):
            raise bad
        minor = int(rest, 16) if rest else 0
        if minor >= 1 << 16:
            raise bad
    elif j == len(t):
        # a bare number is the raw 32-bit class id
        if major > U32_MAX:
            raise bad
        major, minor = major >> 16, major & 0xFFFF
    else:
        raise bad
    if major == 0xFFFF and minor == 0xFFFF:
        return ParentRoot()
    if major == 0 and minor == 0:
        return None
    return ParentClass(major, minor)


# ---------------------------------------------------------------------------
# kind parsers


def _parse_fifo(kind: str, kind_word: Word, cur: _Cursor) -> FifoSpec:
    limit: int | None = None
    while not cur.done():
        w = cur.take()
        if w.text == "limit":
            v = cur.value(w, "limit NUMBER")
            limit = _unit(parse_size, v, f'{kind}: Illegal value for "limit": "{v.text}"')
        elif w.text == "help":
            raise CommandError("Usage: ... <[p|b]fifo | pfifo_head_drop> [ limit NUMBER ]", col=w.col)
        else:
            raise CommandError(
                f'{kind}: unknown parameter "{w.text}"',
                col=w.col,
                expected="limit NUMBER",
                suggestion=suggestion_for(w.text, ["limit"]),
            )
    return FifoSpec(kind=kind, limit=limit)


_TBF_USAGE = (
    "Usage: ... tbf limit BYTES burst BYTES[/BYTES] rate KBPS [ mtu BYTES[/BYTES] ] "
    "[ peakrate KBPS ] [ latency TIME ] [ overhead BYTES ] [ linklayer TYPE ]"
)
_TBF_EXPECTED = (
    "tbf rate RATE burst SIZE (limit SIZE | latency TIME) [peakrate RATE mtu SIZE] [mpu SIZE] "
    "[overhead N] [linklayer ethernet|atm|adsl]"
)
_TBF_KEYWORDS = [
    "limit",
    "latency",
    "burst",
    "buffer",
    "maxburst",
    "mtu",
    "minburst",
    "mpu",
    "rate",
    "peakrate",
    "overhead",
    "linklayer",
]


def _size_and_cell(word: Word, param: str) -> int:
    """``get_size_and_cell``: SIZE[/CELL], CELL a power of two (ignored by the model)."""
    text = word.text
    msg = f'tbf: illegal value for "{param}": "{text}"'
    size_text, slash, cell_text = text.partition("/")
    size = _unit(parse_size, Word(size_text, word.col), msg)
    if slash:
        cell = c_int_full(cell_text, 0)
        if cell is None or cell <= 0 or cell & (cell - 1) or cell >= 1 << 31:
            raise CommandError(
                msg,
                col=word.col + len(size_text) + 1,
                expected="SIZE/CELL with CELL a power of two, e.g. 10k/8",
            )
    return size


def _parse_tbf(kind_word: Word, cur: _Cursor) -> TbfSpec:
    limit = latency = burst = mtu = mpu = 0
    rate = peakrate = 0
    overhead = 0
    atm = False
    given: set[str] = set()

    def dup(name: str, w: Word, label: str | None = None) -> None:
        if name in given:
            raise CommandError(f'tbf: duplicate "{label or name}" specification', col=w.col)
        given.add(name)

    while not cur.done():
        w = cur.take()
        t = w.text
        if matches(t, "limit"):
            v = cur.value(w, "limit SIZE")
            dup("limit", w)
            if "latency" in given:
                raise CommandError('tbf: specifying both "latency" and "limit" is not allowed', col=w.col)
            limit = _unit(parse_size, v, f'tbf: illegal value for "limit": "{v.text}"')
        elif matches(t, "latency"):
            v = cur.value(w, "latency TIME")
            dup("latency", w)
            if "limit" in given:
                raise CommandError('tbf: specifying both "limit" and "/latency" is not allowed', col=w.col)
            latency = _unit(parse_time_us, v, f'tbf: illegal value for "latency": "{v.text}"')
        elif matches(t, "burst") or t in ("buffer", "maxburst"):
            v = cur.value(w, f"{t} SIZE")
            dup("burst", w, "buffer/burst/maxburst")
            burst = _size_and_cell(v, t)
        elif t in ("mtu", "minburst"):
            v = cur.value(w, f"{t} SIZE")
            dup("mtu", w, "mtu/minburst")
            mtu = _size_and_cell(v, t)
        elif t == "mpu":
            v = cur.value(w, "mpu SIZE")
            dup("mpu", w)
            mpu = _unit(parse_size, v, f'tbf: illegal value for "mpu": "{v.text}"')
        elif t == "rate":
            v = cur.value(w, "rate RATE")
            dup("rate", w)
            rate = _unit(parse_rate, v, f'tbf: illegal value for "rate": "{v.text}"')
        elif matches(t, "peakrate"):
            v = cur.value(w, "peakrate RATE")
            dup("peakrate", w)
            peakrate = _unit(parse_rate, v, f'tbf: illegal value for "peakrate": "{v.text}"')
        elif matches(t, "overhead"):
            v = cur.value(w, "overhead BYTES")
            dup("overhead", w)
            n = c_int_full(v.text, 10)
            if n is None or not 0 <= n <= 0xFFFF:
                raise CommandError(
                    f'tbf: illegal value for "overhead": "{v.text}"',
                    col=v.col,
                    expected="an integer between 0 and 65535",
                )
            overhead = n
        elif matches(t, "linklayer"):
            v = cur.value(w, "linklayer ethernet|atm|adsl")
            if matches(v.text, "ethernet"):
                atm = False
            elif matches(v.text, "atm") or matches(v.text, "adsl"):
                atm = True
            else:
                raise CommandError(
                    f'tbf: illegal value for "linklayer": "{v.text}"',
                    col=v.col,
                    expected="ethernet, atm or adsl",
                    suggestion=suggestion_for(v.text, ["ethernet", "atm", "adsl"]),
                )
        elif t == "help":
            raise CommandError(_TBF_USAGE, col=w.col, expected=_TBF_EXPECTED)
        else:
            raise CommandError(
                f'tbf: unknown parameter "{t}"',
                col=w.col,
                expected=_TBF_EXPECTED,
                suggestion=suggestion_for(t, _TBF_KEYWORDS),
            )

    problems = []
    if rate == 0:
        problems.append('tbf: the "rate" parameter is mandatory.')
    if not burst:
        problems.append('tbf: the "burst" parameter is mandatory.')
    if peakrate and not mtu:
        problems.append('tbf: when "peakrate" is specified, "mtu" must also be specified.')
    if limit == 0 and latency == 0:
        problems.append('tbf: either "limit" or "latency" is required.')
    if problems:
        raise CommandError(
            "\n".join(problems),
            col=kind_word.col,
            expected=_TBF_EXPECTED,
            suggestion="e.g. tbf rate 1gbit burst 500000 limit 26214400",
        )

    if limit == 0:
        lim = float(rate) * float(latency) / 1000000 + burst
        if peakrate:
            lim2 = float(peakrate) * float(latency) / 1000000 + mtu
            if lim2 < lim:
                lim = lim2
        if lim > U32_MAX:
            raise CommandError(
                f"tbf: latency {latency}us gives a limit above 4294967295 bytes",
                col=kind_word.col,
                expected=_TBF_EXPECTED,
            )
        limit = int(lim)

    return TbfSpec(
        rate=rate,
        burst=burst,
        limit=limit,
        peakrate=peakrate or None,
        mtu=mtu if peakrate else None,
        mpu=mpu,
        overhead=overhead,
        atm=atm,
    )


_NETEM_EXPECTED = (
    "netem [limit PACKETS] [delay TIME [JITTER [CORR]]] [distribution uniform|normal|pareto|paretonormal] "
    "[loss [random] PCT [CORR] | loss state P13 [P31 [P32 [P23 [P14]]]] | "
    "loss gemodel P [R [1-H [1-K]]]] [ecn] "
    "[duplicate PCT [CORR]] [corrupt PCT [CORR]] [reorder PCT [CORR] [gap N]] "
    "[rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]] [slot MIN [MAX] [packets N] [bytes SIZE]]"
)
_NETEM_KEYWORDS = [
    "limit",
    "latency",
    "delay",
    "loss",
    "drop",
    "ecn",
    "reorder",
    "corrupt",
    "gap",
    "duplicate",
    "distribution",
    "rate",
    "slot",
]
_NETEM_DISTRIBUTIONS = ("uniform", "normal", "pareto", "paretonormal")


def _netem_distribution(word: Word) -> str:
    if word.text in _NETEM_DISTRIBUTIONS:
        return word.text
    raise CommandError(
        f"No distribution data for {word.text} (/usr/lib/tc//{word.text}.dist: No such file or directory)",
        col=word.col,
        expected="uniform, normal, pareto or paretonormal",
        suggestion=suggestion_for(word.text, _NETEM_DISTRIBUTIONS),
    )


def _parse_netem(kind_word: Word, cur: _Cursor, diag: Diagnostics, ns_mode: bool) -> NetemSpec:
    spec = NetemSpec()
    loss_p = 0
    loss_model: NetemLoss | None = None
    cor = NetemCorrelation()
    corr_present = False
    dup_corr_word: Word | None = None
    reorder: NetemPercent | None = None
    corrupt: NetemPercent | None = None
    ecn_word: Word | None = None
    dist_word: Word | None = None
    gap_word: Word | None = None

    def next_is_number(signed: bool = False) -> bool:
        w = cur.peek()
        if w is None or not w.text:
            return False
        return w.text[0].isdigit() or (signed and w.text[0] == "-")

    def pct(word: Word, label: str) -> int:
        return _unit(parse_percent, word, f'Illegal "{label}"')

    def tm(word: Word, label: str) -> int:
        return _unit(parse_netem_time, word, f'Illegal "{label}"', ns_mode)

    while not cur.done():
        w = cur.take()
        t = w.text
        if matches(t, "limit"):
            v = cur.value(w, "limit PACKETS")
            spec.limit = _unit(parse_size, v, 'Illegal "limit"')
        elif matches(t, "latency") or matches(t, "delay"):
            v = cur.value(w, "delay TIME [JITTER [CORRELATION]]")
            spec.latency = tm(v, "latency")
            if next_is_number():
                spec.jitter = tm(cur.take(), "latency")
                if next_is_number():
                    corr_present = True
                    cor.delay = pct(cur.take(), "latency")
        elif matches(t, "loss") or matches(t, "drop"):
            if loss_p > 0 or loss_model is not None:
                raise CommandError(
                    'Illegal "duplicate loss argument"',
                    col=w.col,
                    expected="a single loss clause",
                )
            v = cur.value(w, "loss [random] PERCENT [CORRELATION]")
            if v.text[:1].isdigit() or v.text == "random":
                if v.text == "random":
                    v = cur.value(v, "loss random PERCENT")
                loss_p = pct(v, "loss percent")
                if next_is_number():
                    corr_present = True
                    cor.loss = pct(cur.take(), "loss correllation")
            elif v.text == "state":
                p = cur.value(v, "loss state P13 [P31 [P32 [P23 [P14]]]]")
                p13 = _unit(parse_percent_fraction, p, 'Illegal "loss p13"')
                vals = [percent_to_u32(p13), percent_to_u32(1.0 - p13), 0, percent_to_u32(1.0), 0]
                for idx, label in enumerate(("loss p31", "loss p32", "loss p23", "loss p14"), start=1):
                    if not next_is_number():
                        break
                    vals[idx] = pct(cur.take(), label)
                loss_model = NetemLossState(*vals)
            elif v.text == "gemodel":
                p = cur.value(v, "loss gemodel P [R [1-H [1-K]]]")
                pf = _unit(parse_percent_fraction, p, 'Illegal "loss gemodel p"')
                ge = [percent_to_u32(pf), percent_to_u32(1.0 - pf), 0, 0]
                if next_is_number():
                    ge[1] = pct(cur.take(), "loss gemodel r")
                    if next_is_number():
                        ge[2] = U32_MAX - pct(cur.take(), "loss gemodel h")
                        if next_is_number():
                            ge[3] = pct(cur.take(), "loss gemodel k")
                loss_model = NetemLossGemodel(*ge)
            else:
                hint = None
                if v.text.startswith("."):
                    hint = f"write 0{v.text} (tc needs a leading digit)"
                else:
                    hint = suggestion_for(v.text, ["random", "state", "gemodel"])
                raise CommandError(
                    f"Unknown loss parameter: {v.text}",
                    col=v.col,
                    expected="loss PERCENT, loss random PERCENT, loss state P13 ..., loss gemodel P ...",
                    suggestion=hint,
                )
        elif matches(t, "ecn"):
            ecn_word = w
        elif matches(t, "reorder"):
            v = cur.value(w, "reorder PERCENT [CORRELATION] [gap N]")
            reorder = NetemPercent(pct(v, "reorder"), 0)
            if next_is_number():
                corr_present = True
                reorder.corr = pct(cur.take(), "reorder")
        elif matches(t, "corrupt"):
            v = cur.value(w, "corrupt PERCENT [CORRELATION]")
            corrupt = NetemPercent(pct(v, "corrupt"), 0)
            if next_is_number():
                corr_present = True
                corrupt.corr = pct(cur.take(), "corrupt")
        elif matches(t, "gap"):
            v = cur.value(w, "gap DISTANCE")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError('Illegal "gap"', col=v.col, expected="an unsigned integer")
            spec.gap = n
            gap_word = w
        elif matches(t, "duplicate"):
            v = cur.value(w, "duplicate PERCENT [CORRELATION]")
            spec.duplicate = pct(v, "duplicate")
            if next_is_number():
                dup_corr_word = cur.take()
                cor.duplicate = pct(dup_corr_word, "duplicate")
        elif matches(t, "distribution"):
            v = cur.value(w, "distribution uniform|normal|pareto|paretonormal")
            spec.distribution = _netem_distribution(v)
            dist_word = w
        elif matches(t, "rate"):
            v = cur.value(w, "rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]")
            if "%" in v.text:
                raise NotSupportedError(
                    "netem rate as a percentage of the device speed is not supported yet",
                    col=v.col,
                    expected="an absolute rate such as 8mbit",
                )
            r = NetemRate(_unit(parse_rate, v, 'Illegal "rate"'))
            if next_is_number(signed=True):
                x = cur.take()
                n = c_int_full(x.text, 0)
                if n is None or not -(2**31) <= n < 2**31:
                    raise CommandError(
                        'Illegal "rate"', col=x.col, expected="PACKETOVERHEAD: a signed integer"
                    )
                r.packet_overhead = n
            if next_is_number():
                x = cur.take()
                n = c_int_full(x.text, 0)
                if n is None or not 0 <= n <= U32_MAX:
                    raise CommandError('Illegal "rate"', col=x.col, expected="CELLSIZE: an unsigned integer")
                r.cell_size = n
            if next_is_number(signed=True):
                x = cur.take()
                n = c_int_full(x.text, 0)
                if n is None or not -(2**31) <= n < 2**31:
                    raise CommandError('Illegal "rate"', col=x.col, expected="CELLOVERHEAD: a signed integer")
                r.cell_overhead = n
            spec.rate = r
        elif matches(t, "slot"):
            slot = NetemSlot()
            if next_is_number():
                v = cur.take()
                slot.min_delay = _unit(parse_time_ns64, v, 'Illegal "slot min_delay"')
                if next_is_number():
                    v2 = cur.take()
                    slot.max_delay = _unit(parse_time_ns64, v2, 'Illegal "slot max_delay"')
                    if slot.max_delay < slot.min_delay:
                        raise CommandError(
                            'Illegal "slot max_delay"',
                            col=v2.col,
                            expected="MAX_DELAY >= MIN_DELAY",
                        )
                else:
                    slot.max_delay = slot.min_delay
            else:
                v = cur.value(w, "slot MIN_DELAY [MAX_DELAY] | slot distribution TYPE DELAY JITTER")
                if v.text != "distribution":
                    raise CommandError(
                        f"Unknown slot parameter: {v.text}",
                        col=v.col,
                        expected="slot MIN_DELAY [MAX_DELAY] | slot distribution TYPE DELAY JITTER",
                    )
                d = _netem_distribution(cur.value(v, "slot distribution TYPE DELAY JITTER"))
                dl = cur.value(v, "slot distribution TYPE DELAY JITTER")
                delay = _unit(parse_time_ns64, dl, 'Illegal "slot delay"')
                jt = cur.value(v, "slot distribution TYPE DELAY JITTER")
                jitter = _unit(parse_time_ns64, jt, 'Illegal "slot jitter"')
                if jitter <= 0:
                    raise CommandError("Non-positive jitter", col=jt.col, expected="a positive jitter")
                slot.dist = (d, delay, jitter)
            nxt = cur.peek()
            if nxt is not None and matches(nxt.text, "packets"):
                kw = cur.take()
                x = cur.peek()
                n = c_int_full(x.text, 0) if x is not None else None
                if n is None or not 0 <= n < 2**31:
                    raise CommandError(
                        'Illegal "slot packets"',
                        col=(x or kw).col,
                        expected="packets N (a non-negative integer)",
                    )
                cur.take()
                slot.packets = n
            nxt = cur.peek()
            if nxt is not None and matches(nxt.text, "bytes"):
                kw = cur.take()
                x = cur.peek()
                if x is None:
                    raise CommandError('Illegal "slot bytes"', col=kw.col, expected="bytes SIZE")
                slot.bytes = _unit(parse_size, x, 'Illegal "slot bytes"')
                cur.take()
            spec.slot = slot
        elif t == "seed":
            raise NotSupportedError("netem seed is not supported yet", col=w.col)
        elif t == "help":
            raise CommandError("Usage: ... netem " + _NETEM_EXPECTED[6:], col=w.col)
        else:
            raise CommandError(
                f'What is "{t}"?',
                col=w.col,
                expected=_NETEM_EXPECTED,
                suggestion=suggestion_for(t, _NETEM_KEYWORDS),
            )

    # final checks, in q_netem.c order
    if reorder is not None and reorder.p:
        if spec.latency == 0:
            raise CommandError(
                "reordering not possible without specifying some delay",
                col=kind_word.col,
                expected="netem delay TIME reorder PERCENT",
            )
        if spec.gap == 0:
            spec.gap = 1
    elif spec.gap > 0:
        raise CommandError(
            "gap specified without reorder probability",
            col=gap_word.col if gap_word else kind_word.col,
            expected="netem delay TIME reorder PERCENT gap N",
        )
    if ecn_word is not None and loss_p <= 0 and loss_model is None:
        raise CommandError(
            "ecn requested without loss model",
            col=ecn_word.col,
            expected="netem loss PERCENT ecn",
        )
    if dist_word is not None and (spec.latency == 0 or spec.jitter == 0):
        raise CommandError(
            "distribution specified but no latency and jitter values",
            col=dist_word.col,
            expected="netem delay TIME JITTER distribution TYPE",
        )

    spec.loss = loss_model if loss_model is not None else NetemLossRandom(loss_p)
    if corr_present:
        spec.correlation = cor
    elif dup_corr_word is not None:
        diag.warn(
            "tc sends the duplicate correlation only together with a delay, loss, reorder "
            "or corrupt correlation; this one is ignored, as tc ignores it",
            dup_corr_word.col,
        )
    spec.reorder = reorder
    spec.corrupt = corrupt
    spec.ecn = True if ecn_word is not None else None
    return spec


# ---------------------------------------------------------------------------
# red (tc/q_red.c, tc/tc_red.c) and the SIM kinds blue / CPM (qdiscs.md §6-7)

_RED_USAGE = (
    "Usage: ... red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS]\n"
    "               [adaptive] [probability PROBABILITY] [bandwidth KBPS]\n"
    "               [ecn] [harddrop] [nodrop]"
)
_RED_EXPECTED = (
    "red limit BYTES [min BYTES] [max BYTES] avpkt BYTES [burst PACKETS] [probability P] "
    "[bandwidth RATE] [ecn] [harddrop] [nodrop] [adaptive]"
)
_RED_KEYWORDS = [
    "limit",
    "min",
    "max",
    "burst",
    "avpkt",
    "probability",
    "bandwidth",
    "ecn",
    "harddrop",
    "nodrop",
    "adaptive",
    "dscp-coeff",
    "dscp-match",
]


def red_eval_ewma(qmin: int, burst: int, avpkt: int) -> int:
    """``tc_red_eval_ewma``: the smallest Wlog in 1..31 whose EWMA reaches the
    threshold within ``burst`` packets; -1 if the burst is too small (a < 1)
    or no Wlog fits."""
    a = float(burst) + 1 - float(qmin) / avpkt
    if a < 1.0:
        return -1
    w = 0.5
    for wlog in range(1, 32):
        if a <= (1 - (1 - w) ** burst) / w:
            return wlog
        w /= 2
    return -1


def red_eval_p(qmin: int, qmax: int, prob: float) -> int:
    """``tc_red_eval_P``: Plog = doublings of prob/(max-min) needed to exceed 1."""
    i = qmax - qmin
    if i == 0:
        return 0
    if i < 0:
        return -1
    p = prob / i
    for n in range(32):
        if p > 1.0:
            return n
        p *= 2
    return -1


def red_eval_idle_damping(wlog: int, avpkt: int, rate: int) -> tuple[int, list[int]]:
    """``tc_red_eval_idle_damping``: (Scell_log, Stab[256]); Scell_log -1 on failure.

    xmit(avpkt) in 64-ns psched ticks = ceil(avpkt/rate · 1e6 · 15.625)
    (qdiscs.md §5.2 step 4)."""
    xmit = math.ceil(avpkt / rate * 1e6 * 15.625)
    if xmit <= 0:
        return -1, []
    lw = -math.log(1.0 - 1.0 / (1 << wlog)) / xmit
    maxtime = 31 / lw
    clog = next((c for c in range(32) if maxtime / (1 << c) < 512), -1)
    if clog < 0:
        return -1, []
    stab = [0] * 256
    for i in range(1, 255):
        stab[i] = min(31, int((i << clog) * lw))
    stab[255] = 31
    return clog, stab


def _parse_dscp_coeff(v: Word, kind: str) -> DscpCoeff:
    """``K:C,K:C,...,default:C``: K a hex DS byte (or decimal DSCP with
    ``dscp-match dscp``, resolved later), C a decimal >= 0."""
    classes: list[tuple[int, int, int]] = []
    default: tuple[int, int] | None = None
    seen: set[int] = set()
    col = v.col
    for part in v.text.split(","):
        key, colon, coeff = part.partition(":")
        bad = CommandError(
            f'{kind}: illegal "dscp-coeff" entry "{part}"',
            col=col,
            expected="KEY:COEFF,...,default:COEFF, e.g. " + REPORT_DSCP_COEFF,
        )
        col += len(part) + 1
        if not colon or not coeff:
            raise bad
        whole, dot, frac = coeff.partition(".")
        if not (whole or frac) or not (whole + frac).isdigit() or (dot and not frac and not whole):
            raise bad
        den = 10 ** len(frac)
        num = int(whole or "0") * den + int(frac or "0")
        while den > 1 and num % 10 == 0:
            num //= 10
            den //= 10
        if key == "default":
            if default is not None:
                raise CommandError(f'{kind}: "default" given twice in "dscp-coeff"', col=v.col)
            default = (num, den)
            continue
        k = c_int_full(key, 0)
        if k is None or not 0 <= k <= 0xFF or k in seen:
            raise bad
        seen.add(k)
        classes.append((k, num, den))
    if default is None:
        raise CommandError(
            f'{kind}: "dscp-coeff" needs a "default:COEFF" entry',
            col=v.col,
            expected="KEY:COEFF,...,default:COEFF, e.g. " + REPORT_DSCP_COEFF,
        )
    return DscpCoeff(classes=classes, default=default)


def _cpm_options(w: Word, cur: _Cursor, kind: str, state: dict[str, Any]) -> bool:
    """``dscp-coeff LIST`` / ``dscp-match byte|dscp``; False if ``w`` is neither."""
    if w.text == "dscp-coeff":
        v = cur.value(w, "dscp-coeff KEY:COEFF,...,default:COEFF")
        state["coeff"] = _parse_dscp_coeff(v, kind)
        state["coeff_col"] = v.col
        return True
    if w.text == "dscp-match":
        v = cur.value(w, "dscp-match byte|dscp")
        if v.text not in ("byte", "dscp"):
            raise CommandError(
                f'{kind}: illegal value for "dscp-match": "{v.text}"', col=v.col, expected="byte or dscp"
            )
        state["match_dscp"] = v.text == "dscp"
        return True
    return False


def _finish_cpm(state: dict[str, Any], kind: str) -> DscpCoeff | None:
    coeff: DscpCoeff | None = state.get("coeff")
    if coeff is None:
        return None
    if state.get("match_dscp"):
        for k, _, _ in coeff.classes:
            if k > 63:
                raise CommandError(
                    f"{kind}: DSCP {k} out of range 0..63 (dscp-match dscp)", col=state.get("coeff_col")
                )
        coeff.match_dscp = True
    return coeff


def _parse_red(
    kind_word: Word, cur: _Cursor, diag: Diagnostics, profile: Profile, cpm_default: bool
) -> RedSpec:
    limit = qmin = qmax = avpkt = burst = 0
    rate = 0
    probability = 0.02
    ecn = harddrop = adaptive = nodrop = False
    state: dict[str, Any] = {}
    if cpm_default:
        state["coeff"] = _parse_dscp_coeff(Word(REPORT_DSCP_COEFF, kind_word.col), kind_word.text)

    def size(w: Word, name: str) -> int:
        v = cur.value(w, f"{name} SIZE")
        return int(_unit(parse_size, v, f'Illegal "{name}"'))

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "limit":
            limit = size(w, "limit")
        elif t == "min":
            qmin = size(w, "min")
        elif t == "max":
            qmax = size(w, "max")
        elif t in ("avpkt", "avgpkt"):
            if t == "avgpkt":
                diag.warn(
                    '"avgpkt" is not a tc keyword (tc says: What is "avgpkt"?); read as "avpkt"', col=w.col
                )
            avpkt = size(w, "avpkt")
        elif t == "burst":
            v = cur.value(w, "burst PACKETS")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError('Illegal "burst"', col=v.col, expected="a packet count, e.g. burst 17")
            burst = n
        elif t == "probability":
            v = cur.value(w, "probability P")
            try:
                probability = float(v.text)
            except ValueError:
                raise CommandError(
                    'Illegal "probability"', col=v.col, expected="a fraction between 0 and 1, e.g. 0.02"
                ) from None
            if not 0.0 <= probability <= 1.0:
                raise CommandError(
                    f'RED: probability {v.text} is outside 0..1',
                    col=v.col,
                    expected="a fraction between 0 and 1 (no % sign), e.g. 0.02",
                )
        elif t == "bandwidth":
            v = cur.value(w, "bandwidth RATE")
            rate = int(_unit(parse_rate, v, 'Illegal "bandwidth"', bits32=True))
        elif t == "ecn":
            ecn = True
        elif t == "harddrop":
            harddrop = True
        elif t == "nodrop":
            nodrop = True
        elif t in ("adaptive", "adaptative"):
            if t == "adaptative":
                diag.warn(
                    '"adaptative" is accepted by tc as a synonym; the documented spelling is "adaptive"',
                    col=w.col,
                )
            adaptive = True
        elif _cpm_options(w, cur, kind_word.text, state):
            pass
        elif t == "qevent":
            raise NotSupportedError("red qevent is not supported yet", col=w.col, expected=_RED_EXPECTED)
        elif t == "help":
            raise CommandError(_RED_USAGE, col=w.col, expected=_RED_EXPECTED)
        else:
            raise CommandError(
                f'What is "{t}"?\n{_RED_USAGE}',
                col=w.col,
                expected=_RED_EXPECTED,
                suggestion=suggestion_for(t, _RED_KEYWORDS),
            )

    if not limit or not avpkt:
        raise CommandError(
            "RED: Required parameter (limit, avpkt) is missing",
            col=kind_word.col,
            expected=_RED_EXPECTED,
            suggestion="e.g. red limit 400kb min 16kb max 32kb avpkt 1000 burst 17 "
            "probability 0.2 bandwidth 8mbit",
        )
    if not qmax:
        qmax = qmin * 3 if qmin else limit // 4
    if not qmin:
        qmin = qmax // 3
    if not burst:
        burst = (2 * qmin + qmax) // (3 * avpkt)
    if not rate:
        rate = 1250000
        diag.warn("RED: set bandwidth to 10Mbit", col=kind_word.col)
    wlog = red_eval_ewma(qmin, burst, avpkt)
    if wlog < 0:
        a = float(burst) + 1 - float(qmin) / avpkt
        msg = "RED: failed to calculate EWMA constant."
        if a < 1.0:
            msg = (f"tc_red_eval_ewma() burst {burst} is too small ? Try burst {1 + qmin // avpkt}\n" + msg)
        raise CommandError(msg, col=kind_word.col, expected=_RED_EXPECTED,
                           suggestion=f"burst {1 + qmin // avpkt}" if a < 1.0 else None)
    if wlog >= 10:
        diag.warn(f"RED: WARNING. Burst {burst} seems to be too large.", col=kind_word.col)
    plog = red_eval_p(qmin, qmax, probability)
    if plog < 0:
        why = " (max is below min)" if qmax < qmin else ""
        raise CommandError(f"RED: failed to calculate probability.{why}", col=kind_word.col,
                           expected="min ≤ max and 0 < probability ≤ 1")
    scell_log, stab = red_eval_idle_damping(wlog, avpkt, rate)
    if scell_log < 0:
        raise CommandError("RED: failed to calculate idle damping table.", col=kind_word.col)
    if qmin > limit:
        diag.warn(f"RED: min threshold {qmin} is above limit {limit}: the average can never reach it",
                  col=kind_word.col)
    # trunc(p·2³²) as u32; p = 1.0 overflows to 0 on x86-64 (the kernel then uses Plog)
    max_p = int(probability * 2.0**32)
    if max_p > U32_MAX:
        max_p = 0
    # kernel checks (red_check_params / nodrop without ecn): RTNETLINK EINVAL
    if qmin.bit_length() + wlog >= 32 or qmax.bit_length() + wlog >= 32:
        raise CommandError("RTNETLINK answers: Invalid argument", col=kind_word.col,
                           expected="thresholds small enough for the EWMA constant (bitlen(max)+Wlog < 32)")
    if nodrop and not ecn:
        raise CommandError("RTNETLINK answers: Invalid argument", col=kind_word.col,
                           expected="nodrop only together with ecn")
    return RedSpec(
        limit=limit,
        qth_min=qmin,
        qth_max=qmax,
        wlog=wlog,
        plog=plog,
        scell_log=scell_log,
        stab=stab,
        max_p=max_p,
        ecn=ecn,
        harddrop=harddrop,
        adaptive=adaptive,
        nodrop=nodrop,
        adaptive_timer=adaptive and profile.red_adaptive_timer,
        dscp_coeff=_finish_cpm(state, kind_word.text),
    )


_BLUE_EXPECTED = (
    "blue [limit PACKETS] [increment D1] [decrement D2] [freeze TIME | freeze_inc TIME freeze_dec TIME] "
    "[qthresh PACKETS] [ecn] [dscp-coeff KEY:C,...,default:C]"
)
_BLUE_KEYWORDS = ["limit", "increment", "decrement", "freeze", "freeze_inc", "freeze_dec", "qthresh", "ecn",
                  "bytemode", "dscp-coeff", "dscp-match"]


def _parse_blue(kind_word: Word, cur: _Cursor, cpm_default: bool) -> BlueSpec:
    kind = kind_word.text
    spec = BlueSpec()
    state: dict[str, Any] = {}
    if cpm_default:
        state["coeff"] = _parse_dscp_coeff(Word(REPORT_DSCP_COEFF, kind_word.col), kind)
    freeze_split = False

    def count(w: Word) -> int:
        v = cur.value(w, f"{w.text} PACKETS")
        n = c_int_full(v.text, 0)
        if n is None or not 1 <= n <= U32_MAX:
            raise CommandError(f'{kind}: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected="a packet count >= 1")
        return n

    def prob(w: Word) -> int:
        v = cur.value(w, f"{w.text} FRACTION")
        try:
            x = float(v.text)
        except ValueError:
            x = -1.0
        if not 0.0 <= x <= 1.0:
            raise CommandError(f'{kind}: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected="a fraction between 0 and 1, e.g. 0.0025")
        return min(U32_MAX, int(round(x * 2.0**32)))

    def tm(w: Word) -> int:
        v = cur.value(w, f"{w.text} TIME")
        return int(_unit(parse_time_us, v, f'{kind}: illegal value for "{w.text}": "{v.text}"')) * 1000

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "limit":
            spec.limit = count(w)
        elif t == "increment":
            spec.increment = prob(w)
        elif t == "decrement":
            spec.decrement = prob(w)
        elif t == "freeze":
            spec.freeze_inc = spec.freeze_dec = tm(w)
        elif t in ("freeze_inc", "freeze_dec"):
            freeze_split = True
            setattr(spec, t, tm(w))
        elif t == "qthresh":
            spec.qthresh = count(w)
        elif t == "ecn":
            spec.ecn = True
        elif t == "bytemode":
            raise NotSupportedError(
                f"{kind} bytemode is not supported yet", col=w.col, expected=_BLUE_EXPECTED
            )
        elif _cpm_options(w, cur, kind, state):
            pass
        else:
            raise CommandError(
                f'{kind}: unknown parameter "{t}"',
                col=w.col,
                expected=_BLUE_EXPECTED,
                suggestion=suggestion_for(t, _BLUE_KEYWORDS),
            )
    spec.shared = not freeze_split
    spec.dscp_coeff = _finish_cpm(state, kind)
    return spec


# codel / fq_codel (tc/q_codel.c, tc/q_fq_codel.c)

_CODEL_USAGE = (
    "codel [ limit PACKETS ] [ target TIME ] [ interval TIME ] [ ecn | noecn ] [ ce_threshold TIME ]"
)
_FQ_CODEL_USAGE = (
    "fq_codel [ limit PACKETS ] [ flows NUMBER ] [ memory_limit BYTES ] [ target TIME ] [ interval TIME ] "
    "[ quantum BYTES ] [ [no]ecn ] [ ce_threshold TIME ] [ drop_batch SIZE ]"
)


def _parse_codel_family(kind_word: Word, cur: _Cursor) -> CodelSpec | FqCodelSpec:
    kind = kind_word.text
    fq = kind == "fq_codel"
    usage = _FQ_CODEL_USAGE if fq else _CODEL_USAGE
    spec: CodelSpec | FqCodelSpec = FqCodelSpec() if fq else CodelSpec()
    counts = ("limit", "flows", "quantum", "drop_batch") if fq else ("limit",)
    times = ("target", "interval", "ce_threshold")
    keywords = list(counts) + list(times) + ["ecn", "noecn"]
    if fq:
        keywords += ["memory_limit", "ce_threshold_selector"]

    while not cur.done():
        w = cur.take()
        t = w.text
        if t in counts:
            v = cur.value(w, f"{t} NUMBER")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=usage)
            setattr(spec, t, n)
        elif t in times:
            v = cur.value(w, f"{t} TIME")
            us = int(_unit(parse_time_us, v, f'Illegal "{t}"'))
            setattr(spec, t, min(us, U32_MAX))
        elif fq and t == "memory_limit":
            v = cur.value(w, "memory_limit BYTES")
            spec.memory_limit = int(_unit(parse_size, v, 'Illegal "memory_limit"'))  # type: ignore[union-attr]
        elif t == "ecn":
            spec.ecn = True
        elif t == "noecn":
            spec.ecn = False
        elif fq and t == "ce_threshold_selector":
            raise NotSupportedError(
                "fq_codel ce_threshold_selector is not supported yet", col=w.col, expected=usage
            )
        else:
            raise CommandError(
                f'What is "{t}"?', col=w.col, expected=usage, suggestion=suggestion_for(t, keywords)
            )
    if fq:
        assert isinstance(spec, FqCodelSpec)
        if spec.flows is not None and not 1 <= spec.flows <= 65536:
            raise CommandError("Error: fq_codel: flows must be 1..65536", col=kind_word.col, expected=usage)
    if spec.limit == 0:
        raise CommandError(f"Error: {kind}: limit must be at least 1", col=kind_word.col, expected=usage)
    return spec


_PIE_USAGE = (
    "pie [ limit PACKETS ] [ target TIME ] [ tupdate TIME ] [ alpha ALPHA ] [ beta BETA ] "
    "[ bytemode | nobytemode ] [ ecn | noecn ] [ dq_rate_estimator | no_dq_rate_estimator ]"
)
_PIE_FLAGS = {
    "ecn": ("ecn", True), "noecn": ("ecn", False), "bytemode": ("bytemode", True),
    "nobytemode": ("bytemode", False), "dq_rate_estimator": ("dq_rate_estimator", True),
    "no_dq_rate_estimator": ("dq_rate_estimator", False),
}


def _parse_pie(kind_word: Word, cur: _Cursor, profile: Profile) -> PieSpec:
    """tc/q_pie.c. [lab2019] kernels (before the 2020 rework) only had the
    drain-rate estimator (qdiscs.md §11 ``pie_delay``), so it is the default there."""
    spec = PieSpec()
    if not profile.tc_modern_print:
        spec.dq_rate_estimator = True
    keywords = ["limit", "target", "tupdate", "alpha", "beta", *_PIE_FLAGS]
    while not cur.done():
        w = cur.take()
        t = w.text
        if t in ("limit", "alpha", "beta"):
            v = cur.value(w, f"{t} NUMBER")
            n = c_int_full(v.text, 0)
            hi = U32_MAX if t == "limit" else 32
            if n is None or not 0 <= n <= hi:
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=_PIE_USAGE)
            setattr(spec, t, n)
        elif t in ("target", "tupdate"):
            v = cur.value(w, f"{t} TIME")
            setattr(spec, t, min(int(_unit(parse_time_us, v, f'Illegal "{t}"')), U32_MAX))
        elif t in _PIE_FLAGS:
            name, val = _PIE_FLAGS[t]
            setattr(spec, name, val)
        else:
            raise CommandError(
                f'What is "{t}"?', col=w.col, expected=_PIE_USAGE, suggestion=suggestion_for(t, keywords)
            )
    if spec.limit == 0:
        raise CommandError("Error: pie: limit must be at least 1", col=kind_word.col, expected=_PIE_USAGE)
    return spec


# sfb (tc/q_sfb.c): exact keywords, every value through NEXT_ARG + get_u32 /
# get_prob; unknown words print tc's explain() text

_SFB_USAGE = (
    "Usage: ... sfb [ rehash SECS ] [ db SECS ] [ limit PACKETS ] [ max PACKETS ] [ target PACKETS ] "
    "[ increment FLOAT ] [ decrement FLOAT ] [ penalty_rate PPS ] [ penalty_burst PACKETS ]"
)
_SFB_U32 = {"rehash": "rehash", "db": "db", "limit": "limit", "max": "max", "target": "target",
            "penalty_rate": "penalty_rate", "penalty_burst": "penalty_burst"}
_SFB_PROBS = ("increment", "decrement")
#: what each value means (tc's usage says SECS for rehash/db, but tc sends them as ms)
_SFB_EXPECTED = {
    "rehash": "an interval in milliseconds (an integer; 0 = never rehash)",
    "db": "a double-buffering time in milliseconds (an integer)",
    "limit": "a packet count (0 = txqueuelen)",
    "max": "a packet count per bin",
    "target": "a packet count per bin",
    "penalty_rate": "packets per second (an integer)",
    "penalty_burst": "a packet count",
    "increment": "a probability between 0 and 1, e.g. 0.0005",
    "decrement": "a probability between 0 and 1, e.g. 0.00005",
}
SFB_MAX_PROB = 65535


def sfb_prob(x: float) -> int:
    """tc's ``get_prob``: ``(__u32)(F · 65535 + 0.5)``."""
    return int(x * SFB_MAX_PROB + 0.5)


def _parse_sfb(kind_word: Word, cur: _Cursor, diag: Diagnostics) -> SfbSpec:
    spec = SfbSpec()
    spec.max = spec.target = 0  # tc derives them after the loop
    keywords = list(_SFB_U32) + list(_SFB_PROBS)
    while not cur.done():
        w = cur.take()
        t = w.text
        if t in _SFB_U32:
            v = cur.value(w, f"{t} {_SFB_EXPECTED[t]}")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= U32_MAX:
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=_SFB_EXPECTED[t])
            setattr(spec, _SFB_U32[t], n)
        elif t in _SFB_PROBS:
            v = cur.value(w, f"{t} FLOAT")
            x, rest = strtod_prefix(v.text)
            if x is None or not 0.0 <= x <= 1.0:  # NaN fails both tests here (tc would let it through)
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=_SFB_EXPECTED[t])
            if rest:
                diag.warn(f'sfb {t}: "{rest}" after the number is ignored, as tc does', col=v.col)
            setattr(spec, t, sfb_prob(x))
        else:
            raise CommandError(
                f'What is "{t}"?', col=w.col, expected=_SFB_USAGE, suggestion=suggestion_for(t, keywords)
            )
    # tc derives the missing one in __u32 arithmetic (wraps for huge values)
    if spec.max == 0:
        spec.max = ((spec.target * 5 + 1) & U32_MAX) // 4 if spec.target >= 1 else 25
    if spec.target == 0:
        spec.target = ((spec.max * 4 + 3) & U32_MAX) // 5
    return spec


# red_ns3 (SIM, qdiscs.md §5.10): ns-3's RED attributes, one keyword each

_RED_NS3_EXPECTED = (
    "red_ns3 [variant 2015|qdisc] [mode packets|bytes] limit N minth X maxth Y [qw W] (maxp P | linterm L) "
    "[meanpktsize 500] [gentle|nogentle] [wait|nowait] [ecn] [harddrop|noharddrop] [ns1compat] "
    "[bandwidth RATE] [linkdelay TIME] [ared] [adaptmaxp] [target TIME] [interval TIME] [top F] "
    "[bottom F] [alpha F] [beta F] [rtt TIME] [feng [fengalpha F] [fengbeta F]] [nlred]"
)
_RED_NS3_FLAGS = {
    "gentle": ("gentle", True), "nogentle": ("gentle", False), "wait": ("wait", True),
    "nowait": ("wait", False), "ecn": ("ecn", True), "harddrop": ("harddrop", True),
    "noharddrop": ("harddrop", False), "ns1compat": ("ns1compat", True), "ared": ("ared", True),
    "adaptmaxp": ("adapt_max_p", True), "feng": ("feng", True), "nlred": ("nlred", True),
}
_RED_NS3_TIMES = {"linkdelay": "link_delay", "target": "target_delay", "interval": "interval", "rtt": "rtt"}
_RED_NS3_FRACTIONS = {"top": "top", "bottom": "bottom", "alpha": "alpha", "beta": "beta"}
#: RedQueueDisc-only attributes (ns3::RedQueue of 2015 has none of them)
_RED_NS3_QDISC_ONLY = ("ecn", "noharddrop", "harddrop", "ared", "adaptmaxp", "feng", "fengalpha", "fengbeta",
                       "nlred", "target", "interval", "top", "bottom", "alpha", "beta", "rtt")
_RED_NS3_KEYWORDS = ["variant", "mode", "limit", "minth", "maxth", "qw", "maxp", "linterm", "meanpktsize",
                     "bandwidth", "fengalpha", "fengbeta", *_RED_NS3_FLAGS, *_RED_NS3_TIMES,
                     *_RED_NS3_FRACTIONS]
_QW_EXPECTED = "a weight in (0, 1], or 0 / -1 / -2 for ns-3's automatic settings"


def _parse_red_ns3(kind_word: Word, cur: _Cursor, diag: Diagnostics) -> RedNs3Spec:
    spec = RedNs3Spec()
    seen: dict[str, Word] = {}  # keyword -> the keyword's word (for positions)

    def number(w: Word, what: str, expected: str) -> float:
        v = cur.value(w, f"{w.text} {what}")
        try:
            x = float(v.text)
        except ValueError:
            x = math.nan
        if not math.isfinite(x):
            raise CommandError(f'red_ns3: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected=expected)
        seen[w.text + ":value"] = v
        return x

    def count(w: Word) -> int:
        v = cur.value(w, f"{w.text} N")
        n = c_int_full(v.text, 0)
        if n is None or not 1 <= n <= U32_MAX:
            raise CommandError(f'red_ns3: illegal value for "{w.text}": "{v.text}"', col=v.col,
                               expected="a whole number >= 1")
        return n

    limit_word: Word | None = None
    while not cur.done():
        w = cur.take()
        t = w.text
        seen[t] = w
        if t == "variant":
            v = cur.value(w, "variant 2015|qdisc")
            if v.text not in ("2015", "qdisc"):
                raise CommandError(f'red_ns3: unknown variant "{v.text}"', col=v.col,
                                   expected="2015 (ns3::RedQueue) or qdisc (ns3::RedQueueDisc)")
            spec.variant = v.text
        elif t == "mode":
            v = cur.value(w, "mode packets|bytes")
            if v.text not in ("packets", "bytes"):
                raise CommandError(f'red_ns3: unknown mode "{v.text}"', col=v.col,
                                   expected="packets or bytes",
                                   suggestion=suggestion_for(v.text, ["packets", "bytes"]))
            spec.mode = v.text
        elif t == "limit":
            limit_word = cur.value(w, "limit N (packets, or bytes with mode bytes)")
        elif t in ("minth", "maxth"):
            x = number(w, "X", "a threshold >= 0 in the mode's unit (packets or bytes), e.g. minth 5")
            if x < 0:
                raise CommandError(f"red_ns3: {t} must not be negative", col=seen[t + ":value"].col)
            setattr(spec, "min_th" if t == "minth" else "max_th", x)
        elif t == "qw":
            x = number(w, "W", _QW_EXPECTED)
            if not (0.0 < x <= 1.0 or x in (0.0, -1.0, -2.0)):
                raise CommandError(f"red_ns3: qw {seen['qw:value'].text} is outside (0, 1]",
                                   col=seen["qw:value"].col, expected=_QW_EXPECTED)
            spec.qw = x
        elif t == "maxp":
            x = number(w, "P", "a probability between 0 and 1, e.g. maxp 0.1")
            if not 0.0 <= x <= 1.0:
                txt = seen["maxp:value"].text
                raise CommandError(
                    f"red_ns3: maxp {txt} is outside 0..1", col=seen["maxp:value"].col,
                    expected="a probability between 0 and 1",
                    suggestion=f"ns-3's LInterm attribute is 1/max_p: write linterm {txt} "
                    "to reproduce a script that passed this value as LInterm")
            spec.max_p, spec.linterm = x, None
        elif t == "linterm":
            x = number(w, "L", "ns-3's LInterm (max_p = 1/L), e.g. linterm 50")
            if x <= 0:
                raise CommandError(f"red_ns3: linterm {seen['linterm:value'].text} must be above 0",
                                   col=seen["linterm:value"].col, expected="ns-3's LInterm (max_p = 1/L) > 0")
            spec.linterm, spec.max_p = x, None
        elif t == "meanpktsize":
            spec.mean_pkt_size = count(w)
        elif t == "bandwidth":
            v = cur.value(w, "bandwidth RATE")
            if v.text.lower().endswith("bps"):
                raise CommandError(
                    f'red_ns3: bandwidth "{v.text}": byte units are not accepted here', col=v.col,
                    expected="a rate in bits/s, e.g. bandwidth 1.5mbit",
                    suggestion=f"write {v.text[:-3]}bit: ns-3's \"Mbps\" is megabits/s, "
                    "tc's \"mbps\" megabytes/s")
            spec.bandwidth = int(_unit(parse_rate_bits, v, f'red_ns3: illegal "bandwidth" "{v.text}"'))
            if spec.bandwidth <= 0:
                raise CommandError("red_ns3: bandwidth must be above 0", col=v.col)
        elif t in _RED_NS3_TIMES:
            v = cur.value(w, f"{t} TIME")
            ns = int(_unit(parse_time_ns64, v, f'red_ns3: illegal "{t}" "{v.text}"'))
            setattr(spec, _RED_NS3_TIMES[t], ns)
        elif t in _RED_NS3_FRACTIONS:
            x = number(w, "F", "a number between 0 and 1")
            if not 0.0 <= x <= 1.0:
                raise CommandError(f"red_ns3: {t} must be between 0 and 1", col=seen[t + ":value"].col,
                                   expected="a number between 0 and 1 (ns-3's checker)")
            setattr(spec, _RED_NS3_FRACTIONS[t], x)
        elif t in ("fengalpha", "fengbeta"):
            x = number(w, "F", "a factor > 0, e.g. fengalpha 3 fengbeta 2")
            if x <= 0:
                raise CommandError(f"red_ns3: {t} must be above 0", col=seen[t + ":value"].col)
            setattr(spec, "feng_alpha" if t == "fengalpha" else "feng_beta", x)
        elif t in _RED_NS3_FLAGS:
            name, val = _RED_NS3_FLAGS[t]
            setattr(spec, name, val)
        else:
            raise CommandError(f'red_ns3: unknown option "{t}"', col=w.col, expected=_RED_NS3_EXPECTED,
                               suggestion=suggestion_for(t, _RED_NS3_KEYWORDS))

    if "maxp" in seen and "linterm" in seen:
        raise CommandError("red_ns3: give either maxp or linterm, not both", col=seen["linterm"].col,
                           expected="maxp P (the probability) or linterm L (ns-3's LInterm, max_p = 1/L)")
    if spec.variant == "2015":
        for k in _RED_NS3_QDISC_ONLY:
            if k in seen:
                raise CommandError(
                    f"red_ns3: {k} needs variant qdisc (ns3::RedQueue of 2015 has no such attribute)",
                    col=seen[k].col, expected=_RED_NS3_EXPECTED, suggestion="add variant qdisc")
    if ("ared" in seen or "adaptmaxp" in seen) and "feng" in seen:
        raise CommandError("red_ns3: ared/adaptmaxp and feng cannot be used together", col=seen["feng"].col,
                           expected="one adaptation: ared (or adaptmaxp) or feng")
    bytes_mode = spec.mode == "bytes"
    if limit_word is None:
        if bytes_mode:
            raise CommandError(
                "red_ns3: mode bytes needs a limit in bytes (ns-3's default of 25 would then mean 25 bytes)",
                col=kind_word.col, expected=_RED_NS3_EXPECTED, suggestion="e.g. limit 800 or limit 64kb")
    elif bytes_mode:
        spec.limit = int(_unit(parse_size, limit_word, f'red_ns3: illegal "limit" "{limit_word.text}"'))
    else:
        n = c_int_full(limit_word.text, 0)
        if n is None or not 1 <= n <= U32_MAX:
            raise CommandError(f'red_ns3: illegal "limit" "{limit_word.text}"', col=limit_word.col,
                               expected="a packet count >= 1 (mode packets)",
                               suggestion="add mode bytes for a limit in bytes")
        spec.limit = n
    if spec.limit < 1:
        raise CommandError("red_ns3: limit must be at least 1", col=(limit_word or kind_word).col)
    if spec.ared:
        for k in ("minth", "maxth", "qw"):
            if k in seen:
                diag.warn(f"red_ns3: ared sets {k} automatically (ns-3 overrides the value given)",
                          col=seen[k].col)
    elif not (spec.min_th == 0 and spec.max_th == 0):
        if spec.min_th > spec.max_th:
            w = seen.get("maxth:value") or seen.get("minth:value") or kind_word
            raise CommandError(f"red_ns3: thresholds out of order: minth {spec.min_th:g} > "
                               f"maxth {spec.max_th:g}", col=w.col,
                               expected="minth <= maxth (0 and 0 = ns-3's automatic thresholds)")
        if spec.min_th > spec.limit:
            w = seen.get("minth:value") or kind_word
            unit = "bytes" if bytes_mode else "packets"
            raise CommandError(f"red_ns3: minth {spec.min_th:g} is above limit {spec.limit} ({unit}): "
                               "the queue can never reach it", col=w.col, expected="minth <= limit",
                               suggestion=None if bytes_mode else
                               "thresholds count bytes only with mode bytes")
    return spec


def _parse_nofopt(kind: str, cur: _Cursor) -> None:
    """Kinds without an option parser in tc (generic ``parse_nofopt``)."""
    if not cur.done():
        w = cur.peek()
        assert w is not None
        if kind == "pfifo_fast":
            raise CommandError(f"qdisc '{kind}' does not support option parsing", col=w.col)
        raise CommandError(
            f'Unknown qdisc "{kind}", hence option "{w.text}" is unparsable',
            col=w.col,
            expected=f"{kind} takes no options",
        )


def _parse_kind(kind_word: Word, cur: _Cursor, diag: Diagnostics, profile: Profile) -> QdiscSpec:
    kind = kind_word.text
    if kind in ("pfifo", "bfifo", "pfifo_head_drop"):
        return _parse_fifo(kind, kind_word, cur)
    if kind == "tbf":
        return _parse_tbf(kind_word, cur)
    if kind == "netem":
        return _parse_netem(kind_word, cur, diag, profile.netem_time_ns)
    if kind == "red":
        return _parse_red(kind_word, cur, diag, profile, cpm_default=False)
    if kind in ("red_csc573", "cpm_red"):
        if kind == "red_csc573":
            diag.warn(
                "red_csc573 is the CPM report's out-of-tree module (real tc: Unknown qdisc); "
                f"modelled as red with dscp-coeff {REPORT_DSCP_COEFF}",
                col=kind_word.col,
            )
        return _parse_red(kind_word, cur, diag, profile, cpm_default=True)
    if kind in ("blue", "cpm_blue"):
        return _parse_blue(kind_word, cur, cpm_default=kind == "cpm_blue")
    if kind in ("codel", "fq_codel"):
        return _parse_codel_family(kind_word, cur)
    if kind == "pie":
        return _parse_pie(kind_word, cur, profile)
    if kind == "red_ns3":
        return _parse_red_ns3(kind_word, cur, diag)
    if kind == "sfb":
        return _parse_sfb(kind_word, cur, diag)
    if kind == "noqueue":
        _parse_nofopt(kind, cur)
        return NoqueueSpec()
    if kind == "pfifo_fast":
        _parse_nofopt(kind, cur)
        return PfifoFastSpec()
    if kind in KNOWN_UNMODELLED_QDISCS:
        raise NotSupportedError(
            f"qdisc {kind} is not supported yet",
            col=kind_word.col,
            expected="one of the modelled qdiscs: " + ", ".join(MODELLED_QDISCS),
        )
    hint = suggestion_for(kind, MODELLED_QDISCS + KNOWN_UNMODELLED_QDISCS)
    if not cur.done():
        opt = cur.peek()
        assert opt is not None
        raise CommandError(
            f'Unknown qdisc "{kind}", hence option "{opt.text}" is unparsable',
            col=kind_word.col,
            expected="a qdisc kind: " + ", ".join(MODELLED_QDISCS),
            suggestion=hint,
        )
    raise CommandError(
        "Error: Specified qdisc kind is unknown.",
        col=kind_word.col,
        expected="a qdisc kind: " + ", ".join(MODELLED_QDISCS),
        suggestion=hint,
    )


# ---------------------------------------------------------------------------
# tc / tc qdisc


_TC_USAGE = "Usage: tc [ OPTIONS ] OBJECT { COMMAND | help }"
_QDISC_USAGE = (
    "Usage: tc qdisc [ add | del | replace | change | show ] dev STRING "
    "[ handle QHANDLE ] [ root | parent CLASSID ] [ QDISC_KIND [ OPTIONS ] ]"
)

# tc.c global options in tc's matching order: (name, attribute or None = not supported)
_TC_OPTIONS: list[tuple[tuple[str, ...], str | None]] = [
    (("-stats", "-statistics"), "stats"),
    (("-details",), "details"),
    (("-raw",), "raw"),
    (("-pretty",), "pretty"),
    (("-graph",), None),
    (("-Version",), None),
    (("-iec",), "iec"),
    (("-help",), None),
    (("-force",), None),
    (("-batch",), None),
    (("-netns",), None),
    (("-names", "-nm"), None),
    (("-cf", "-conf"), None),
    (("-timestamp",), None),
    (("-tshort",), None),
    (("-echo",), None),
    (("-json",), None),
    (("-oneline",), None),
    (("-brief",), None),
]

_VERBS = [
    ("add", "add"),
    ("change", "change"),
    ("replace", "replace"),
    ("link", "link"),
    ("delete", "delete"),
]


def parse_tc(words: list[Word], diag: Diagnostics, profile: Profile | None = None) -> TcQdiscRequest | TcShow:
    """Parse a ``tc`` command line (``words[0]`` is ``tc``).

    Returns a :class:`TcQdiscRequest` for add/change/replace/link/delete, or
    a :class:`TcShow` for ``qdisc show``/``ls``/``list`` (and bare ``tc qdisc``).
    """
    profile = profile or Profile()
    flags: dict[str, bool] = {}
    i = 1
    while i < len(words) and words[i].text.startswith("-") and len(words[i].text) > 1:
        w = words[i]
        t = w.text[1:] if w.text.startswith("--") else w.text
        for names, attr in _TC_OPTIONS:
            if any(matches(t, n) for n in names):
                if attr is None:
                    raise NotSupportedError(
                        f"tc option {w.text} is not supported yet", col=w.col, expected="-s, -d, -r, -p, -i"
                    )
                flags[attr] = True
                break
        else:
            raise CommandError(
                f'Option "{w.text}" is unknown, try "tc -help".',
                col=w.col,
                expected="-s (statistics), -d (details), -r, -p, -i",
            )
        i += 1
    if i >= len(words):
        raise CommandError(_TC_USAGE, col=words[0].col if words else None, expected="tc qdisc ...")
    obj = words[i]
    if matches(obj.text, "qdisc"):
        pass
    elif any(matches(obj.text, o) for o in ("class", "filter", "chain", "actions", "monitor", "exec")):
        full = next(
            o for o in ("class", "filter", "chain", "actions", "monitor", "exec") if matches(obj.text, o)
        )
        raise NotSupportedError(f"tc {full} is not supported yet", col=obj.col, expected="tc qdisc ...")
    elif matches(obj.text, "help"):
        raise CommandError(_TC_USAGE, col=obj.col, expected="tc qdisc ...")
    else:
        raise CommandError(
            f'Object "{obj.text}" is unknown, try "tc help".',
            col=obj.col,
            expected="qdisc",
            suggestion=suggestion_for(obj.text, ["qdisc", "class", "filter"]),
        )
    cur = _Cursor(words, i + 1)
    if cur.done():
        return TcShow(**flags)
    verb_w = cur.take()
    vt = verb_w.text
    for prefix, verb in _VERBS:
        if matches(vt, prefix):
            return _parse_modify(verb, verb_w, cur, diag, profile)
    if matches(vt, "list") or matches(vt, "show") or matches(vt, "lst"):
        return _parse_show(cur, flags)
    if matches(vt, "help"):
        raise CommandError(_QDISC_USAGE, col=verb_w.col, expected="add, change, replace, link, del or show")
    raise CommandError(
        f'Command "{vt}" is unknown, try "tc qdisc help".',
        col=verb_w.col,
        expected="add, change, replace, link, del or show",
        suggestion=suggestion_for(vt, ["add", "change", "replace", "link", "del", "delete", "show", "list"]),
    )


def _parse_modify(
    verb: str, verb_w: Word, cur: _Cursor, diag: Diagnostics, profile: Profile
) -> TcQdiscRequest:
    dev: Word | None = None
    handle: int | None = None
    handle_given = False
    parent: ParentSpec | None = None
    parent_given = False
    kind_word: Word | None = None
    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "dev":
            v = cur.value(w, "dev DEVICE")
            if dev is not None:
                raise CommandError(f'Error: duplicate "dev": "{v.text}" is the second value.', col=v.col)
            dev = v
        elif t == "handle":
            if handle_given:
                raise CommandError(f'Error: duplicate "handle": "{t}" is the second value.', col=w.col)
            v = cur.value(w, "handle MAJOR:")
            handle = _qdisc_handle(v)
            handle_given = True
        elif t == "root":
            if parent_given:
                raise CommandError('Error: "root" is duplicate parent ID', col=w.col)
            parent = ParentRoot()
            parent_given = True
        elif t in ("clsact", "ingress"):
            raise NotSupportedError(
                f"tc qdisc {t} is not supported yet", col=w.col, expected="root or parent CLASSID"
            )
        elif t == "parent":
            v = cur.value(w, "parent CLASSID")
            if parent_given:
                raise CommandError(f'Error: duplicate "parent": "{v.text}" is the second value.', col=v.col)
            parent = _classid(v)
            parent_given = parent is not None
        elif (
            matches(t, "estimator")
            or matches(t, "stab")
            or matches(t, "ingress_block")
            or matches(t, "egress_block")
        ):
            full = next(k for k in ("estimator", "stab", "ingress_block", "egress_block") if matches(t, k))
            raise NotSupportedError(f"tc qdisc {full} is not supported yet", col=w.col)
        elif matches(t, "help"):
            raise CommandError(_QDISC_USAGE, col=w.col)
        else:
            kind_word = w
            break

    qdisc: QdiscSpec | None = None
    if kind_word is not None:
        qdisc = _parse_kind(kind_word, cur, diag, profile)
    if dev is None:
        raise CommandError(
            "RTNETLINK answers: No such device",
            col=verb_w.col,
            expected="dev DEVICE, e.g. tc qdisc add dev s1-eth2 root netem delay 20ms",
        )
    if qdisc is None and verb != "delete":
        raise CommandError(
            f"tc qdisc {verb} needs a qdisc kind",
            col=verb_w.col,
            expected="a qdisc kind after root/parent/handle: " + ", ".join(MODELLED_QDISCS),
        )
    return TcQdiscRequest(
        verb=verb,
        dev=dev.text,
        parent=parent,
        handle=handle,
        qdisc=qdisc,
        dev_col=dev.col,
        kind_col=kind_word.col if kind_word else None,
        verb_col=verb_w.col,
    )


def _parse_show(cur: _Cursor, flags: dict[str, bool]) -> TcShow:
    show = TcShow(**flags)
    filt_given = False

    def one_filter(w: Word) -> None:
        nonlocal filt_given
        if filt_given:
            what = "handle" if show.handle is not None else "parent"
            raise CommandError(f'Error: argument "{w.text}" is wrong: {what} is already specified', col=w.col)
        filt_given = True

    while not cur.done():
        w = cur.take()
        t = w.text
        if t == "dev":
            v = cur.value(w, "dev DEVICE")
            show.dev = v.text
            show.dev_col = v.col
        elif t == "root":
            one_filter(w)
            show.parent = ParentRoot()
        elif t in ("ingress", "clsact"):
            raise NotSupportedError(f"tc qdisc show {t} is not supported yet", col=w.col)
        elif matches(t, "parent"):
            one_filter(w)
            v = cur.value(w, "parent CLASSID")
            show.parent = _classid(v)
        elif matches(t, "handle"):
            one_filter(w)
            v = cur.value(w, "handle MAJOR:")
            show.handle = _qdisc_handle(v)
        elif matches(t, "help"):
            raise CommandError(_QDISC_USAGE, col=w.col)
        elif t == "invisible":
            show.invisible = True
        else:
            raise CommandError(
                f'What is "{t}"? Try "tc qdisc help".',
                col=w.col,
                expected="show [dev DEVICE] [root | handle H | parent P] [invisible]",
                suggestion=suggestion_for(t, ["dev", "root", "parent", "handle", "invisible"]),
            )
    return show
