"""bufferlab's own traffic generators, ns-3 style: ``cbr``, ``poisson``, ``onoff``, ``sink``,
``bulk`` (parser and report text: commands/generators.py; engine: app/udp_source.rs,
app/sink.rs, app/bulk.rs)."""

from __future__ import annotations

from ...commands import generators as gen_cmd
from ...commands.shell import Word
from ...errors import CommandError
from ..context import Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp
from ..engine import AppStartError
from ..sockets import check_congestion, tcp_spec

#: how far a host's sending stack may fall behind its applications (engine/host_time.rs MAX_STACK_BACKLOG)
MAX_STACK_BACKLOG_S = 1.0


def _check_stack_backlog(pc: PrepareCtx, words: list[Word], cmd: gen_cmd.GeneratorCommand) -> None:
    """A cbr/poisson with a known length (-t, -n) that offers more datagrams than the host's
    stack processes falls behind by (offered × cost − 1) per second; the engine stops the run
    once a host is MAX_STACK_BACKLOG_S behind, so check refuses it first (several generators
    on one host add up: only the run sees that)."""
    if not isinstance(cmd, gen_cmd.UdpSourceCommand) or cmd.pattern == "onoff" or cmd.protocol != "udp":
        return
    frame = cmd.size + 42  # UDP, IPv4 and Ethernet headers: the engine's packet length
    cost_s = (pc.profile.host_packet_ns + frame * pc.profile.host_byte_ps / 1000) / 1e9
    offered = cmd.rate_bps / (cmd.size * 8)
    length_s = (
        cmd.duration_ns / 1e9
        if cmd.duration_ns is not None
        else cmd.bytes * 8 / cmd.rate_bps
        if cmd.bytes is not None
        else None
    )
    if length_s is None or cost_s <= 0:
        return
    behind_s = length_s * (offered * cost_s - 1)
    if behind_s <= MAX_STACK_BACKLOG_S:
        return
    rate_w = next((w for a, w in zip(words, words[1:], strict=False) if a.text in ("-r", "--rate")), words[0])
    prog = words[0].text
    raise CommandError(
        f"{prog}: -r {rate_w.text} offers {offered:,.0f} datagrams/s, more than a host's stack "
        f"processes ({1 / cost_s:,.0f}/s of {frame}-byte frames): over {length_s:.3g} s it would fall "
        f"{behind_s:.3g} s behind",
        col=rate_w.col,
        expected=f"a rate the sending host keeps up with (it may fall at most {MAX_STACK_BACKLOG_S:g} s "
        f"behind; "
        "[sim] host_packet_ns and host_byte_ps set its cost)",
        suggestion=f"at most about {(1 + MAX_STACK_BACKLOG_S / length_s) / cost_s * cmd.size * 8 / 1e9:.3g} "
        "Gbit/s here, or send for less time (-t, -n)",
    )


def _prep_generator(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], words[0].text)
    cmd = gen_cmd.parse_generator(words, pc.diag)
    _check_stack_backlog(pc, words, cmd)
    congestion = getattr(cmd, "congestion", None)
    check_congestion(congestion, words)
    spec = gen_cmd.engine_spec(cmd)
    endless = gen_cmd.is_endless(cmd)
    sink = cmd if isinstance(cmd, gen_cmd.SinkCommand) else None
    tcp = isinstance(cmd, gen_cmd.BulkCommand) or sink is not None and sink.proto == "tcp"

    def run(rt: RunCtx) -> Gen:
        if tcp:
            spec["tcp"] = tcp_spec(rt, node, congestion=congestion)
        try:
            app = rt.start_app(node, spec)
        except AppStartError as e:
            prog = words[0].text
            rt.io.err(str(e) if str(e).startswith(f"{prog}:") else f"{prog}: {e}")
            return 1
        if sink is not None:
            rt.note_sink(app, node, sink.port, sink.proto)
            if tcp:
                rt.note_listener(app, node, congestion)
        duration = spec.get("duration_ns")
        yield WaitApp(app, endless, rt.now_ns + duration if duration else None)
        rt.io.out(gen_cmd.report_text(cmd, rt.engine.app_result(app)))
        return 0

    return Prepared(run, endless)


PROGRAMS = (
    Program("cbr", _prep_generator, "UDP datagrams evenly spaced at a rate"),
    Program("poisson", _prep_generator, "UDP datagrams with exponential gaps at a mean rate"),
    Program(
        "onoff",
        _prep_generator,
        "UDP at a rate during on periods, silent during off periods (ns-3 OnOffApplication)",
    ),
    Program("sink", _prep_generator, "counts the bytes it receives, TCP or UDP (ns-3 PacketSink)"),
    Program("bulk", _prep_generator, "a TCP bulk transfer (ns-3 BulkSendApplication)"),
)
