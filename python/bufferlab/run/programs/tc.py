"""``tc``: qdiscs, classes and filters (parsers: commands/tc/; the engine's qdisc/api.rs)."""

from __future__ import annotations

from typing import Any

from ...commands.shell import Word
from ...commands.tc import TcQdiscRequest, TcShow, htb, parse_tc, tc_show_text
from ...commands.tc.filter_show import TcFilterShow, filter_show_text
from ...commands.tc.htb import TcClassShow
from ...commands.tc.ingress import HookFilterRequest
from ...errors import CommandError, Diagnostics
from ...profile import Profile
from ..context import PrepareCtx, Prepared, Program, RunCtx
from ..engine import TcFailure
from ..tc_shadow import send_tc


def tc_request_for_engine(words: list[Word], profile: Profile, engine_dev: str) -> dict[str, Any]:
    """Parse a tc line already known to be valid (TCLink options) into the engine's request."""
    req = parse_tc(words, Diagnostics(), profile)
    assert isinstance(req, TcQdiscRequest)
    d = req.to_dict()
    d["dev"] = engine_dev
    return d


def _prep_tc(pc: PrepareCtx, words: list[Word]) -> Prepared:
    parsed = parse_tc(words, pc.diag, pc.profile)
    if parsed.dev is None:
        dev = None
    else:
        dev = pc.engine_dev(parsed.dev, parsed.dev_col)
    if isinstance(parsed, TcShow):
        show = parsed
        # (engine name, name to print): tc prints `dev NAME` when no device was named
        devs = (
            [(dev, None)]
            if dev
            else [
                (i.engine_name, i.name)
                for i in pc.topo.interfaces
                if (pc.terminal == "admin" and pc.topo.node_kinds[i.node] == "switch")
                or i.node == pc.terminal
            ]
        )

        def run_show(rt: RunCtx) -> int:
            try:
                text = [
                    tc_show_text(
                        rt.engine.qdisc_show(d),
                        rt.runner.sc.profile,
                        stats=show.stats,
                        details=show.details,
                        invisible=show.invisible,
                        dev=name,
                    )
                    for d, name in devs
                ]
            except TcFailure:
                # an ifb whose `ip link add` failed when it ran
                rt.io.err(f'Cannot find device "{parsed.dev}"')
                return 1
            rt.io.out("".join(text))
            return 0

        return Prepared.at_once(run_show)
    if isinstance(parsed, TcClassShow):
        class_show = parsed

        def run_class_show(rt: RunCtx) -> int:
            blocks = rt.engine.class_show(dev) if dev else []
            if htb.cake_on_a_class(blocks):
                rt.io.err("tc class show: the flows of a cake grafted on a class are not supported yet")
                return 1
            modern = rt.runner.sc.profile.tc_modern_print
            rt.io.out(htb.class_show_text(blocks, class_show.stats, class_show.details, modern))
            return 0

        return Prepared.at_once(run_class_show)
    if isinstance(parsed, TcFilterShow):
        filter_show = parsed

        def run_filter_show(rt: RunCtx) -> int:
            if dev is None:
                # tc_dump_tfilter: no device, nothing to dump
                return 0
            try:
                dump = rt.engine.filter_show(dev, filter_show.parent)
            except TcFailure:
                rt.io.err(f'Cannot find device "{parsed.dev}"')
                return 1
            # mirred's target by the name this namespace knows it by (tc prints ll_index_to_name)
            names = {i.engine_name: i.name for i in pc.topo.interfaces}
            names.update((e, n) for n, e in pc.topo.virtual.get(pc.terminal, {}).items())
            for tp in dump["tps"]:
                for f in tp["filters"]:
                    for a in f["actions"]:
                        if a["kind"] == "mirred":
                            a["dev"] = names.get(a["dev"], a["dev"])
            rt.io.out(filter_show_text(dump, filter_show, rt.runner.sc.profile.tc_modern_print))
            return 0

        return Prepared.at_once(run_filter_show)
    if isinstance(parsed, HookFilterRequest):
        # mirred's target is a device of the same namespace (tc resolves it to an ifindex)
        targets = iter([pc.engine_dev(name, col) for name, col in parsed.mirred])
        for action in (parsed.filter or {}).get("actions", []):
            if action["kind"] == "mirred":
                action["dev"] = next(targets)
    # one engine request per line, whatever the tree holds (no read-back)
    request = {**parsed.to_dict(), "dev": dev}
    if pc.shadow is not None and dev is not None:
        refused = pc.shadow.refusal(parsed, request)
        if refused is not None:
            at = next((w for w in words if w.text == "duplicate"), None) or next(
                (w for w in words if w.text == "netem"), words[0]
            )
            first, _, rest = refused.partition("\n")
            raise CommandError(
                f"tc: {first}" + (f" ({rest})" if rest else ""),
                col=at.col,
                expected="at most one netem on a device when a netem duplicates: Linux refuses the "
                "pair (sch_netem.c), as each would copy the other's copies without end",
                suggestion="give one netem all the impairments (e.g. netem delay 10ms duplicate 1%), "
                "or duplicate on another device",
            )

    def run_modify(rt: RunCtx) -> int:
        try:
            warning = send_tc(rt.engine, parsed, request)
        except TcFailure as e:
            rt.io.err(str(e).replace(f'"{dev}"', f'"{parsed.dev}"') if dev else str(e))
            return 2
        if warning:
            rt.io.err(warning + "\n")
        return 0

    return Prepared.at_once(run_modify)


PROGRAMS = (
    Program(
        "tc", _prep_tc, "`tc qdisc|class|filter add/change/replace/del/show` (with `-s`)", configures=True
    ),
)
