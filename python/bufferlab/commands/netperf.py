"""``netperf`` and ``netserver`` command lines (netperf 2.7).

netperf parses its global options with ``getopt`` over ``src/netsh.c``'s
``GLOBAL_CMD_LINE_ARGS`` and, after ``--``, the test's own over ``src/nettest_omni.c``'s
``OMNI_ARGS`` (read, not copied). Modelled:

* global: ``-H HOST`` (the control host), ``-p PORT`` (netserver's port, 12865), ``-t TEST``
  (TCP_STREAM, TCP_MAERTS, TCP_RR, UDP_RR), ``-l SECONDS`` (a positive test length; a negative
  one is a byte or transaction count, not supported yet), ``-D [-]INTERVAL`` (demo mode; a
  negative interval is flent's "always timestamp" mode), ``-f k|m|g|K|M|G|b|B``, ``-P 0|1``
  (banner and titles), ``-v 0|1|2`` (verbosity 2 is not supported yet), ``-Y LOCAL,REMOTE``
  (TOS of the data connection's two ends, numbers or DSCP names), ``-4``, ``-F FILE`` (the
  payload fill file: accepted, payload bytes are not modelled);
* test-specific: ``-k [SELECTORS]`` (keyval output of the listed output selectors, comma
  separated), ``-K LOCAL[,REMOTE]`` (congestion control; one name sets both), ``-H HOST`` (the
  data connection's remote), ``-m SIZE`` / ``-M SIZE`` (send and receive sizes), ``-r
  REQ[,RESP]`` (request and response sizes of an RR test), ``-e SECONDS`` (UDP_RR receive
  timeout).

``netserver [-p PORT] [-D] [-4] [-f]``: without ``-D`` it daemonises (the line returns at once
and the server runs on); with ``-D`` it stays in the foreground.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bufferlab.errors import CommandError, NotSupportedError

from ._common import Resolver, check_host, suggestion_for
from ._getopt import Getopt, OptSpec
from .flent_tests import FlentTestError, tos_of
from .shell import Word

__all__ = [
    "NetperfCommand",
    "NetserverCommand",
    "parse_netperf",
    "parse_netserver",
    "TESTS",
    "NETSERVER_PORT",
]

TESTS = ("TCP_STREAM", "TCP_MAERTS", "TCP_RR", "UDP_RR")
_KNOWN_TESTS = TESTS + (
    "TCP_CRR",
    "TCP_CC",
    "UDP_STREAM",
    "TCP_SENDFILE",
    "OMNI",
    "SCTP_STREAM",
    "SCTP_RR",
    "DLCO_STREAM",
    "DLCL_RR",
    "STREAM_STREAM",
    "STREAM_RR",
    "DG_STREAM",
    "DG_RR",
    "LOC_CPU",
    "REM_CPU",
    "TCP_ARR",
)
NETSERVER_PORT = 12865
#: the -k output selectors modelled (formats/netperf.py OUTPUT_VARS prints each)
SELECTORS = (
    "THROUGHPUT",
    "THROUGHPUT_UNITS",
    "ELAPSED_TIME",
    "PROTOCOL",
    "DIRECTION",
    "LOCAL_CONG_CONTROL",
    "REMOTE_CONG_CONTROL",
    "TRANSPORT_MSS",
    "LOCAL_TRANSPORT_RETRANS",
    "REMOTE_TRANSPORT_RETRANS",
    "LOCAL_SOCKET_TOS",
    "REMOTE_SOCKET_TOS",
    "LOCAL_SEND_SIZE",
    "LOCAL_RECV_SIZE",
    "REMOTE_SEND_SIZE",
    "REMOTE_RECV_SIZE",
    "LOCAL_BYTES_SENT",
    "LOCAL_BYTES_RECVD",
    "REMOTE_BYTES_SENT",
    "REMOTE_BYTES_RECVD",
    "LSS_SIZE",
    "LSR_SIZE",
    "RSS_SIZE",
    "RSR_SIZE",
    "REQUEST_SIZE",
    "RESPONSE_SIZE",
    "RT_LATENCY",
    "TRANSACTION_RATE",
    "MEAN_LATENCY",
    "MIN_LATENCY",
    "MAX_LATENCY",
)
_EXPECTED = (
    "netperf -H HOST [-t TCP_STREAM|TCP_MAERTS|TCP_RR|UDP_RR] [-l SECONDS] [-D INTERVAL] [-f m] "
    "[-Y TOS,TOS] [-- -k SELECTORS -K CC -m SIZE -r REQ,RESP]"
)

_GLOBAL = [OptSpec(k, k, arg=True) for k in "HptlDfPvYF"] + [OptSpec("4", "4")]
_GLOBAL_OTHER = {c: True for c in "AabBiIkKLnOoswWyTZ"} | {c: False for c in "CcdhjNrSV6"}
_GLOBAL += [OptSpec("other:" + c, c, arg=a) for c, a in _GLOBAL_OTHER.items()]
_TEST = [OptSpec(k, k, arg=True) for k in "KHmMre"] + [OptSpec("k", "k"), OptSpec("4", "4")]
_TEST_OTHER = {c: True for c in "bdGijlLoOpPqRsStTuwW"} | {c: False for c in "aBcCDfFghINnUV6"}
_TEST += [OptSpec("other:" + c, c, arg=a) for c, a in _TEST_OTHER.items()]


@dataclass
class NetperfCommand:
    host: str = "localhost"
    host_col: int = 0
    data_host: str | None = None
    port: int = NETSERVER_PORT
    test: str = "TCP_STREAM"
    length_s: float = 10.0
    demo_interval_s: float | None = None  # -D
    fmt: str = "m"
    headers: bool = True  # -P
    verbosity: int = 1
    local_tos: int = 0
    remote_tos: int = 0
    keyval: bool = False
    selectors: list[str] = field(default_factory=list)
    selectors_col: int = 0
    local_cc: str | None = None
    remote_cc: str | None = None
    cc_col: int = 0
    send_size: int | None = None
    recv_size: int | None = None
    request: int = 1
    response: int = 1
    timeout_s: float | None = None

    @property
    def rr(self) -> bool:
        return self.test.endswith("_RR")


@dataclass
class NetserverCommand:
    port: int = NETSERVER_PORT
    foreground: bool = False


def _number(w: Word, what: str) -> float:
    try:
        return float(w.text)
    except ValueError:
        raise CommandError(
            f"netperf: {what}: '{w.text}' is not a number", col=w.col, expected=_EXPECTED
        ) from None


def _pair(text: str) -> tuple[str, str]:
    """netperf's ``break_args``: ``a,b`` -> (a, b); ``a`` -> (a, a); ``,b`` -> ("", b)."""
    if "," in text:
        a, _, b = text.partition(",")
        return a, b
    return text, text


def _size(w: Word, text: str) -> int:
    """netperf's ``convert``: a number with an optional k/m/g (×1024ⁿ) or K/M/G suffix."""
    mult = {"k": 1024, "m": 1024**2, "g": 1024**3, "K": 1024, "M": 1024**2, "G": 1024**3}
    body, factor = (text[:-1], mult[text[-1]]) if text and text[-1] in mult else (text, 1)
    if not body.isdigit():
        raise CommandError(
            f"netperf: '{text}' is not a size", col=w.col, expected="a size such as 64, 16K or 1M"
        )
    return int(body) * factor


def parse_netperf(words: list[Word], resolve: Resolver | None = None) -> NetperfCommand:
    """Parse ``netperf ...`` (``words[0]`` is ``netperf``)."""
    split = next((i for i, w in enumerate(words) if w.text == "--"), len(words))
    glob_opts, operands = Getopt("netperf", _GLOBAL, expected=_EXPECTED).parse(words[1:split])
    if operands:
        raise CommandError(
            f"netperf: unexpected argument '{operands[0].text}'", col=operands[0].col, expected=_EXPECTED
        )
    cmd = NetperfCommand(host_col=words[0].col)
    host_word: Word | None = None
    for o in glob_opts:
        v = o.value
        if o.key.startswith("other:"):
            raise NotSupportedError(
                f"netperf {o.spelled} is not supported yet", col=o.col, expected=_EXPECTED
            )
        if v is None:
            continue
        if o.key == "H":
            host_word = v
        elif o.key == "p":
            port = v.text.partition(",")[0]
            if not port.isdigit() or not 0 < int(port) < 65536:
                raise CommandError(f"netperf: bad port '{v.text}'", col=v.col, expected="-p PORT (1..65535)")
            cmd.port = int(port)
        elif o.key == "t":
            test = v.text.upper()
            if test not in _KNOWN_TESTS:
                raise CommandError(
                    f"netperf: the test {v.text} is not known",
                    col=v.col,
                    expected=", ".join(TESTS),
                    suggestion=suggestion_for(test, TESTS),
                )
            if test not in TESTS:
                raise NotSupportedError(
                    f"netperf -t {test} is not supported yet", col=v.col, expected=", ".join(TESTS)
                )
            cmd.test = test
        elif o.key == "l":
            length = _number(v, "-l")
            if length <= 0:
                raise NotSupportedError(
                    f"netperf -l {v.text}: a byte or transaction count (-l ≤ 0) is not supported yet",
                    col=v.col,
                    expected="-l SECONDS (positive)",
                )
            cmd.length_s = length
        elif o.key == "D":
            interval = _number(v, "-D")
            if interval == 0:
                raise CommandError("netperf: -D 0 is not a demo interval", col=v.col, expected="-D SECONDS")
            cmd.demo_interval_s = abs(interval)
        elif o.key == "f":
            if v.text not in ("k", "m", "g", "K", "M", "G", "b", "B"):
                raise CommandError(
                    f"netperf: -f {v.text}: unknown format",
                    col=v.col,
                    expected="-f k, m, g (bits) or K, M, G (bytes)",
                )
            cmd.fmt = v.text
        elif o.key == "P":
            cmd.headers = v.text not in ("0",)
        elif o.key == "v":
            if v.text not in ("0", "1", "2"):
                raise CommandError(f"netperf: -v {v.text}", col=v.col, expected="-v 0, 1 or 2")
            if v.text == "2":
                raise NotSupportedError(
                    "netperf -v 2 is not supported yet", col=v.col, expected="-v 0 or -v 1"
                )
            cmd.verbosity = int(v.text)
        elif o.key == "Y":
            local, remote = _pair(v.text)
            try:
                cmd.local_tos = tos_of(local) if local else 0
                cmd.remote_tos = tos_of(remote) if remote else 0
            except FlentTestError as e:
                raise CommandError(
                    f"netperf: -Y {v.text}: {e}", col=v.col, expected="-Y TOS,TOS (0xb8 or EF)"
                ) from None
    if host_word is None:
        raise NotSupportedError(
            "netperf without -H (a test against localhost) is not supported yet",
            col=words[0].col,
            expected=_EXPECTED,
        )
    cmd.host = check_host(host_word, "netperf", resolve, f"netperf: host {host_word.text} not found")
    cmd.host_col = host_word.col
    _test_options(cmd, words[split + 1 :], resolve)
    return cmd


def _test_options(cmd: NetperfCommand, words: list[Word], resolve: Resolver | None) -> None:
    i = 0
    rest: list[Word] = []
    while i < len(words):  # -k takes an optional list, the next word unless it starts with '-'
        w = words[i]
        if w.text == "-k" and i + 1 < len(words) and not words[i + 1].text.startswith("-"):
            cmd.keyval = True
            cmd.selectors = [s for s in words[i + 1].text.split(",") if s]
            cmd.selectors_col = words[i + 1].col
            i += 2
            continue
        rest.append(w)
        i += 1
    opts, operands = Getopt("netperf", _TEST, expected=_EXPECTED).parse(rest)
    if operands:
        raise CommandError(
            f"netperf: unexpected argument '{operands[0].text}'", col=operands[0].col, expected=_EXPECTED
        )
    for o in opts:
        v = o.value
        if o.key.startswith("other:"):
            raise NotSupportedError(
                f"netperf test option {o.spelled} is not supported yet", col=o.col, expected=_EXPECTED
            )
        if o.key == "k":
            cmd.keyval = True
        elif v is None:
            continue
        elif o.key == "K":
            local, remote = _pair(v.text)
            cmd.local_cc, cmd.remote_cc, cmd.cc_col = local or None, remote or None, v.col
        elif o.key == "H":
            cmd.data_host = check_host(v, "netperf", resolve, f"netperf: host {v.text} not found")
        elif o.key in ("m", "M"):
            size = _size(v, _pair(v.text)[0])
            if o.key == "m":
                cmd.send_size = size
            else:
                cmd.recv_size = size
        elif o.key == "r":
            req, resp = _pair(v.text)
            cmd.request = _size(v, req) if req else cmd.request
            cmd.response = _size(v, resp) if resp else cmd.response
            if cmd.request < 1 or cmd.response < 1:
                raise CommandError(
                    "netperf: -r sizes must be at least 1 byte", col=v.col, expected="-r REQ,RESP"
                )
        elif o.key == "e":
            cmd.timeout_s = _number(v, "-e")
    if cmd.keyval and not cmd.selectors:
        raise NotSupportedError(
            "netperf -k without a list of output selectors is not supported yet",
            col=next((w.col for w in words if w.text == "-k"), 0),
            expected="-k THROUGHPUT,ELAPSED_TIME,... (" + ", ".join(SELECTORS) + ")",
        )
    for name in cmd.selectors:
        if name not in SELECTORS:
            raise NotSupportedError(
                f"netperf output selector {name} is not supported yet",
                col=cmd.selectors_col,
                expected=", ".join(SELECTORS),
                suggestion=suggestion_for(name, SELECTORS),
            )


def parse_netserver(words: list[Word]) -> NetserverCommand:
    opts, operands = Getopt(
        "netserver",
        [
            OptSpec("p", "p", arg=True),
            OptSpec("D", "D"),
            OptSpec("4", "4"),
            OptSpec("f", "f"),
            OptSpec("other:L", "L", arg=True),
            OptSpec("other:v", "v", arg=True),
            OptSpec("other:d", "d"),
            OptSpec("other:6", "6"),
            OptSpec("other:N", "N"),
            OptSpec("other:Z", "Z", arg=True),
        ],
        expected="netserver [-p PORT] [-D] [-4]",
    ).parse(words[1:])
    if operands:
        raise CommandError(
            f"netserver: unexpected argument '{operands[0].text}'",
            col=operands[0].col,
            expected="netserver [-p PORT] [-D] [-4]",
        )
    cmd = NetserverCommand()
    for o in opts:
        if o.key.startswith("other:"):
            raise NotSupportedError(
                f"netserver {o.spelled} is not supported yet",
                col=o.col,
                expected="netserver [-p PORT] [-D] [-4]",
            )
        if o.key == "p" and o.value is not None:
            if not o.value.text.isdigit() or not 0 < int(o.value.text) < 65536:
                raise CommandError(
                    f"netserver: bad port '{o.value.text}'", col=o.value.col, expected="-p PORT"
                )
            cmd.port = int(o.value.text)
        elif o.key == "D":
            cmd.foreground = True
    return cmd
