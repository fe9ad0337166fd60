"""``tcpdump -w`` and ``tshark -w`` in scenario terminals.

The engine writes the file (crates/bufferlab-core/src/capture) while the part
runs; this module checks the command line, opens the capture, and prints
what the real tools print on stderr: tcpdump(8) 4.99's ``listening on``
line and its three counters when interrupted or after ``-c`` packets;
tshark's ``Capturing on`` and ``N packets captured``. Like ``iperf3 -s`` a
capture never ends by itself: the part interrupts it.
"""

from __future__ import annotations

from typing import Any

from ...commands import capture as capture_cmd
from ...commands.shell import Word
from ..context import Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp, inside_home
from ..engine import AppStartError, capture_handle


def _prep_tcpdump(pc: PrepareCtx, words: list[Word]) -> Prepared:
    return _prepare(pc, capture_cmd.parse_tcpdump(words, pc.resolve_host))


def _prep_tshark(pc: PrepareCtx, words: list[Word]) -> Prepared:
    return _prepare(pc, capture_cmd.parse_tshark(words, pc.resolve_host))


def _prepare(pc: PrepareCtx, cmd: capture_cmd.CaptureCmd) -> Prepared:
    dev = pc.engine_dev(cmd.iface.text, cmd.iface.col)
    shown = cmd.iface.text

    def run(rt: RunCtx) -> Gen:
        path = inside_home(rt.term, rt.term.cwd / cmd.file.text)
        if path is None:
            rt.io.err(f"{cmd.prog}: {cmd.file.text}: Permission denied (outside the node's results folder)")
            return 1
        spec: dict[str, Any] = {
            "dev": dev,
            "path": str(path),
            "format": cmd.fmt,
            "snaplen": cmd.snaplen,
            "count": cmd.count,
            "filter": cmd.filter,
            "segment_gso": cmd.segment_gso,
        }
        try:
            cid = rt.engine.capture_start(spec)
        except AppStartError as e:
            rt.io.err(f"{cmd.prog}: {str(e).replace(str(path), cmd.file.text)}")
            return 1
        if cmd.prog == "tcpdump":
            rt.io.err(
                f"tcpdump: listening on {shown}, link-type EN10MB (Ethernet), "
                f"snapshot length {cmd.snaplen} bytes"
            )
        else:
            rt.io.err(f"Capturing on '{shown}'")
        rt.runner.observation.note_capture(path)
        yield WaitApp(capture_handle(cid), cmd.count is None)
        stats = rt.engine.capture_stop(cid)
        if stats["error"]:
            rt.io.err(f"{cmd.prog}: {cmd.file.text}: {stats['error']}")
            return 1
        if cmd.prog == "tcpdump":
            rt.io.err(
                f"{stats['captured']} packets captured\n"
                f"{stats['matched']} packets received by filter\n"
                "0 packets dropped by kernel"
            )
        else:
            rt.io.err(f"{stats['captured']} packets captured")
        return 0

    return Prepared(run, endless=cmd.count is None)


#: both end as on Ctrl-C on SIGHUP, SIGINT, SIGPIPE and SIGTERM
_CATCHES = frozenset({1, 2, 13, 15})

PROGRAMS = (
    Program(
        "tcpdump",
        _prep_tcpdump,
        "`tcpdump -i IFACE -w FILE [FILTER]`: a pcap capture",
        catches=_CATCHES,
        continues=frozenset({10}),
    ),
    Program("tshark", _prep_tshark, "`tshark -i IFACE -w FILE [FILTER]`: a pcapng capture", catches=_CATCHES),
)
