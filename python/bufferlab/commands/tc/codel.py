"""``codel`` and ``fq_codel`` (tc/q_codel.c, tc/q_fq_codel.c): one parser for both, as the
kernel shares its CoDel core between them."""

from __future__ import annotations

from typing import Any

from ...errors import CommandError, Diagnostics, NotSupportedError
from ...profile import Profile
from ...units import U32_MAX, parse_size, parse_time_us
from .._common import c_int_full, suggestion_for
from ..shell import Word
from ._schema import QdiscSpecCodel as CodelSpec
from ._schema import QdiscSpecFqCodel as FqCodelSpec
from .cursor import Cursor, read_unit
from .kind import QdiscKind
from .tc_util import sprint_size, sprint_time

_CODEL_USAGE = (
    "codel [ limit PACKETS ] [ target TIME ] [ interval TIME ] [ ecn | noecn ] [ ce_threshold TIME ]"
)
_FQ_CODEL_USAGE = (
    "fq_codel [ limit PACKETS ] [ flows NUMBER ] [ memory_limit BYTES ] [ target TIME ] [ interval TIME ] "
    "[ quantum BYTES ] [ [no]ecn ] [ ce_threshold TIME ] [ drop_batch SIZE ]"
)


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> CodelSpec | FqCodelSpec:
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
            us = int(read_unit(parse_time_us, v, f'Illegal "{t}"'))
            setattr(spec, t, min(us, U32_MAX))
        elif fq and t == "memory_limit":
            v = cur.value(w, "memory_limit BYTES")
            spec.memory_limit = int(read_unit(parse_size, v, 'Illegal "memory_limit"'))  # type: ignore[union-attr]
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


def _codel_common(opts: dict[str, Any], modern: bool) -> str:
    out = "target %s " % sprint_time(int(opts.get("target", 5000)), modern)
    if opts.get("ce_threshold") is not None:
        out += "ce_threshold %s " % sprint_time(int(opts["ce_threshold"]), modern)
    return out + "interval %s " % sprint_time(int(opts.get("interval", 100000)), modern)


def _print_codel_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_codel.c ``codel_print_opt``."""
    out = "limit %dp " % int(opts.get("limit", 1000)) + _codel_common(opts, modern)
    if opts.get("ecn"):
        out += "ecn "
    return out


def _print_fq_codel_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    """tc/q_fq_codel.c ``fq_codel_print_opt`` (``drop_batch`` from iproute2 v5 on = modern)."""
    out = "limit %dp flows %d quantum %d " % (
        int(opts.get("limit", 10240)), int(opts.get("flows", 1024)), int(opts.get("quantum", 1514)))
    out += _codel_common(opts, modern)
    out += "memory_limit %s " % sprint_size(int(opts.get("memory_limit", 32 << 20)))
    if opts.get("ecn", True):
        out += "ecn "
    if modern:
        out += "drop_batch %d " % int(opts.get("drop_batch", 64))
    return out


def _print_codel_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = "  count %d lastcount %d ldelay %s" % (g("count"), g("lastcount"), sprint_time(g("ldelay"), modern))
    if x.get("dropping"):
        out += " dropping"
    dn = g("drop_next")
    if dn < 0:
        out += " drop_next -%s" % sprint_time(-dn, modern)
    else:
        out += " drop_next %s" % sprint_time(dn, modern)
    out += "\n  maxpacket %d ecn_mark %d drop_overlimit %d" % (
        g("maxpacket"), g("ecn_mark"), g("drop_overlimit"))
    if g("ce_mark"):
        out += " ce_mark %d" % g("ce_mark")
    return out + "\n"


def _print_fq_codel_xstats(block: dict[str, Any], modern: bool) -> str:
    x = block.get("xstats") or {}
    g = lambda k: int(x.get(k, 0))  # noqa: E731
    out = "  maxpacket %d drop_overlimit %d new_flow_count %d ecn_mark %d" % (
        g("maxpacket"), g("drop_overlimit"), g("new_flow_count"), g("ecn_mark"))
    if g("ce_mark"):
        out += " ce_mark %d" % g("ce_mark")
    if "memory_used" in x:
        out += " memory_used %d" % g("memory_used")
    if "drop_overmemory" in x:
        out += " drop_overmemory %d" % g("drop_overmemory")
    out += "\n  new_flows_len %d old_flows_len %d\n" % (g("new_flows_len"), g("old_flows_len"))
    return out


KINDS = (
    QdiscKind("codel", _parse_opt, _print_codel_opt, _print_codel_xstats),
    QdiscKind("fq_codel", _parse_opt, _print_fq_codel_opt, _print_fq_codel_xstats),
)
