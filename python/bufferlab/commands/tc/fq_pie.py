"""``fq_pie`` (tc/q_fq_pie.c ``fq_pie_parse_opt``, ``fq_pie_print_opt``, ``fq_pie_print_xstats``;
docs/semantics/qdiscs.md §17). A zero value is not sent (the kernel's default stays)."""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ...units import U32_MAX, parse_size, parse_time_us
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecFqPie as FqPieSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_size, sprint_time

_USAGE = (
    "Usage: ... fq_pie [ limit PACKETS ] [ flows NUMBER ] [ target TIME ] [ tupdate TIME ] "
    "[ alpha NUMBER ] [ beta NUMBER ] [ quantum BYTES ] [ memory_limit BYTES ] "
    "[ ecn_prob PERCENTAGE ] [ [no]ecn ] [ [no]bytemode ] [ [no_]dq_rate_estimator ]"
)
_FLAGS = {
    "ecn": ("ecn", True), "noecn": ("ecn", False), "bytemode": ("bytemode", True),
    "nobytemode": ("bytemode", False), "dq_rate_estimator": ("dq_rate_estimator", True),
    "no_dq_rate_estimator": ("dq_rate_estimator", False),
}
#: get_unsigned keywords and their upper bound (q_fq_pie.c ALPHA_MAX, BETA_MAX, ecn_prob < 100)
_UINTS = {"limit": U32_MAX, "flows": U32_MAX, "alpha": 32, "beta": 32, "ecn_prob": 99}
_KEYWORDS = [*_UINTS, "target", "tupdate", "quantum", "memory_limit", *_FLAGS, "help"]


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> FqPieSpec:
    spec = FqPieSpec()
    while not cur.done():
        w = cur.take()
        t = w.text
        if t in _UINTS:
            v = cur.value(w, f"{t} NUMBER")
            n = c_int_full(v.text, 0)
            if n is None or not 0 <= n <= _UINTS[t]:
                raise CommandError(f'Illegal "{t}"', col=v.col, expected=_USAGE)
            setattr(spec, t, n or None)
        elif t in ("target", "tupdate"):
            v = cur.value(w, f"{t} TIME")
            us = min(int(read_unit(parse_time_us, v, f'Illegal "{t}"')), U32_MAX)
            setattr(spec, t, us or None)
        elif t in ("quantum", "memory_limit"):
            v = cur.value(w, f"{t} BYTES")
            setattr(spec, t, int(read_unit(parse_size, v, f'Illegal "{t}"')) or None)
        elif t in _FLAGS:
            name, val = _FLAGS[t]
            setattr(spec, name, val)
        elif t == "help":
            raise CommandError(_USAGE, col=w.col, expected=_USAGE)
        else:
            raise CommandError(f'What is "{t}"?', col=w.col, expected=_USAGE,
                               suggestion=suggestion_for(t, _KEYWORDS))
    if spec.flows is not None and spec.flows > 65536:
        raise CommandError("Error: sch_fq_pie: Number of flows must range in [1..65536].",
                           col=kind_word.col, expected=_USAGE)
    return spec


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_fq_pie.c ``fq_pie_print_opt``."""
    g = lambda k, d: int(opts.get(k, d))  # noqa: E731
    out = (
        "limit %dp flows %d target %s tupdate %s alpha %d beta %d quantum %s memory_limit %s ecn_prob %d "
        % (
            g("limit", 10240),
            g("flows", 1024),
            sprint_time(g("target", 15000), modern),
            sprint_time(g("tupdate", 16000), modern),
            g("alpha", 2),
            g("beta", 20),
            sprint_size(g("quantum", 1514)),
            sprint_size(g("memory_limit", 32 << 20)),
            g("ecn_prob", 10),
        )
    )
    for flag in ("ecn", "bytemode", "dq_rate_estimator"):
        if opts.get(flag):
            out += flag + " "
    return out


def _print_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    return ("  pkts_in %d overlimit %d overmemory %d dropped %d ecn_mark %d\n"
            "  new_flow_count %d new_flows_len %d old_flows_len %d memory_used %d\n") % (
        g("packets_in"), g("overlimit"), g("overmemory"), g("dropped"), g("ecn_mark"),
        g("new_flow_count"), g("new_flows_len"), g("old_flows_len"), g("memory_usage"))


KINDS = (QdiscKind("fq_pie", _parse_opt, _print_opt, _print_xstats),)
