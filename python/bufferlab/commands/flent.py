"""``flent`` command lines (flent 2.1's ``settings.py`` argument parser, restated).

``flent [options] TEST [HOST ...]`` or ``flent -H HOST ... TEST``: the test name is the first
positional word that names a test; the other positional words are hosts, as are ``-H`` values
(``-H`` may repeat; rtt_fair needs one per host). Options modelled:

``-H/--host HOST``, ``-l/--length SECONDS`` (int, default 60), ``-s/--step-size SECONDS``
(float, default 0.2), ``-d/--delay SECONDS`` (int, default 5), ``-t/--title-extra TEXT``,
``-n/--note TEXT``, ``-o/--output FILE``, ``-p/--plot NAME``, ``-f/--format summary|plot``,
``-D/--data-dir DIR`` (default ``.``), ``--test-parameter KEY=VALUE`` (repeatable; the key is
lower-cased), ``-i/--input FILE`` (plot or summarise a data file instead of running a test),
``-4/--ipv4``, ``-q/--quiet``, ``-v/--verbose``.

Other flent options are refused as "not supported yet" with their column; argparse's own errors
(an unknown option, a missing or malformed value) keep argparse's wording, ``flent: error: …``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bufferlab.errors import CommandError, NotSupportedError

from ._common import Resolver, check_host, suggestion_for
from ._getopt import Getopt, OptSpec
from .flent_tests import KNOWN_UNMODELLED, TESTS
from .shell import Word

__all__ = ["FlentCommand", "parse_flent", "FORMATS"]

FORMATS = ("summary", "plot")
_UNMODELLED_FORMATS = ("csv", "stats", "org_table", "metadata", "plot_only", "json")

_SPECS = [
    OptSpec("H", "H", ("host",), arg=True),
    OptSpec("l", "l", ("length",), arg=True),
    OptSpec("s", "s", ("step-size",), arg=True),
    OptSpec("d", "d", ("delay",), arg=True),
    OptSpec("t", "t", ("title-extra",), arg=True),
    OptSpec("n", "n", ("note",), arg=True),
    OptSpec("o", "o", ("output",), arg=True),
    OptSpec("p", "p", ("plot",), arg=True),
    OptSpec("f", "f", ("format",), arg=True),
    OptSpec("D", "D", ("data-dir",), arg=True),
    OptSpec("param", None, ("test-parameter",), arg=True),
    OptSpec("i", "i", ("input",), arg=True),
    OptSpec("4", "4", ("ipv4",)),
    OptSpec("q", "q", ("quiet",)),
    OptSpec("v", "v", ("verbose",)),
]
#: real flent options refused as not supported yet (key -> takes a value)
_OTHER = {
    ("6", ("ipv6",)): False,
    ("x", ("extended-metadata",)): False,
    ("r", ("rcfile",)): True,
    ("b", ("batch",)): True,
    ("B", ("batch-file",)): True,
    ("L", ("log-file",)): True,
    ("V", ("version",)): False,
    (None, ("remote-metadata",)): True,
    (None, ("gui",)): False,
    (None, ("new-gui-instance",)): False,
    (None, ("gui-no-defer",)): False,
    (None, ("batch-override",)): True,
    (None, ("batch-dry-run",)): False,
    (None, ("batch-verbose",)): False,
    (None, ("batch-no-shuffle",)): False,
    (None, ("batch-no-timestamp",)): False,
    (None, ("batch-repetitions",)): True,
    (None, ("batch-title",)): True,
    (None, ("batch-resume",)): True,
    (None, ("local-bind",)): True,
    (None, ("remote-host",)): True,
    (None, ("socket-timeout",)): True,
    (None, ("send-size",)): True,
    (None, ("test-payload",)): True,
    (None, ("swap-up-down",)): False,
    (None, ("socket-stats",)): False,
    (None, ("marking-name",)): True,
    (None, ("control-host",)): True,
    (None, ("control-local-bind",)): True,
    (None, ("netperf-control-port",)): True,
    (None, ("ditg-control-port",)): True,
    (None, ("ditg-control-secret",)): True,
    (None, ("http-getter-urllist",)): True,
    (None, ("http-getter-dns-servers",)): True,
    (None, ("http-getter-timeout",)): True,
    (None, ("http-getter-workers",)): True,
    (None, ("irtt-sampling-interval",)): True,
    (None, ("cache-file",)): True,
    (None, ("debug-error",)): False,
}
_SPECS += [OptSpec(f"other:{long[0]}", short, long, arg=v) for (short, long), v in _OTHER.items()]
_EXPECTED = (
    "flent TEST -H HOST [-l LENGTH] [-s STEP] [-d DELAY] [-t TITLE] [-o FILE] [-p PLOT] [-D DIR] "
    "[--test-parameter KEY=VALUE]"
)


@dataclass
class FlentCommand:
    test: str | None  # None with -i
    hosts: list[str] = field(default_factory=list)  # addresses
    host_cols: list[int] = field(default_factory=list)
    length: int = 60
    step: float = 0.2
    delay: int = 5
    title: str = ""
    note: str = ""
    output: str | None = None
    plot: str | None = None
    plot_col: int = 0
    fmt: str = "summary"
    data_dir: str = "."
    params: dict[str, str] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    quiet: bool = False
    col: int = 0


def _argparse_error(msg: str, col: int) -> CommandError:
    return CommandError(f"flent: error: {msg}", col=col, expected=_EXPECTED)


def _int(w: Word, opt: str) -> int:
    try:
        return int(w.text)
    except ValueError:
        raise _argparse_error(f"argument {opt}: invalid int value: '{w.text}'", w.col) from None


def _float(w: Word, opt: str) -> float:
    try:
        return float(w.text)
    except ValueError:
        raise _argparse_error(f"argument {opt}: invalid float value: '{w.text}'", w.col) from None


def parse_flent(words: list[Word], resolve: Resolver | None = None) -> FlentCommand:
    """Parse ``flent ...`` (``words[0]`` is ``flent``)."""
    opts, operands = Getopt("flent", _SPECS, expected=_EXPECTED).parse(words[1:])
    cmd = FlentCommand(test=None, col=words[0].col)
    host_words: list[Word] = []
    for o in opts:
        v = o.value
        if o.key.startswith("other:"):
            raise NotSupportedError(f"flent {o.spelled} is not supported yet", col=o.col, expected=_EXPECTED)
        if o.key == "H":
            assert v is not None
            host_words.append(v)
        elif o.key == "l":
            assert v is not None
            cmd.length = _int(v, "-l/--length")
            if cmd.length <= 0:
                raise _argparse_error(
                    f"argument -l/--length: the test length must be positive, not {cmd.length}", v.col
                )
        elif o.key == "s":
            assert v is not None
            cmd.step = _float(v, "-s/--step-size")
            if not cmd.step > 0:
                raise _argparse_error(
                    f"argument -s/--step-size: the step must be positive, not {v.text}", v.col
                )
        elif o.key == "d":
            assert v is not None
            cmd.delay = _int(v, "-d/--delay")
            if cmd.delay < 0:
                raise _argparse_error(
                    f"argument -d/--delay: the delay cannot be negative ({cmd.delay})", v.col
                )
        elif o.key in ("t", "n", "o", "D"):
            assert v is not None
            setattr(cmd, {"t": "title", "n": "note", "o": "output", "D": "data_dir"}[o.key], v.text)
        elif o.key == "p":
            assert v is not None
            cmd.plot, cmd.plot_col = v.text, v.col
            cmd.fmt = "plot"
        elif o.key == "f":
            assert v is not None
            if v.text in _UNMODELLED_FORMATS:
                raise NotSupportedError(
                    f"flent -f {v.text} is not supported yet",
                    col=v.col,
                    expected="-f summary or -f plot (with -p PLOT)",
                )
            if v.text not in FORMATS:
                raise _argparse_error(f"argument -f/--format: invalid choice: '{v.text}'", v.col)
            cmd.fmt = v.text
        elif o.key == "param":
            assert v is not None
            key, eq, value = v.text.partition("=")
            if not eq or not key:
                raise _argparse_error(f"argument --test-parameter: invalid keyval value: '{v.text}'", v.col)
            cmd.params[key.lower()] = value
        elif o.key == "i":
            assert v is not None
            cmd.inputs.append(v.text)
        elif o.key == "q":
            cmd.quiet = True
    for w in operands:
        if cmd.test is None and not cmd.inputs and (w.text in TESTS or w.text in KNOWN_UNMODELLED):
            if w.text in KNOWN_UNMODELLED:
                raise NotSupportedError(
                    f"flent test {w.text} is not supported yet",
                    col=w.col,
                    expected="one of " + ", ".join(TESTS),
                )
            cmd.test = w.text
        else:
            host_words.append(w)
    if cmd.inputs:
        if host_words:
            raise _argparse_error(f"unrecognized arguments: {host_words[0].text}", host_words[0].col)
        if cmd.fmt == "plot" and cmd.plot is None:
            raise _argparse_error("-f plot needs a plot (-p NAME)", words[0].col)
        return cmd
    if cmd.test is None:
        first = next((w for w in host_words if not w.text[:1].isdigit()), None)
        raise CommandError(
            "flent: no test given" if first is None else f"flent: unknown test '{first.text}'",
            col=first.col if first is not None else words[0].col,
            expected="one of " + ", ".join(TESTS),
            suggestion=suggestion_for(first.text, TESTS) if first is not None else None,
        )
    if not host_words:
        raise CommandError(
            "flent: no host given",
            col=words[0].col,
            expected=_EXPECTED,
            suggestion="e.g. flent rrul -H 10.0.0.2 -l 60",
        )
    for w in host_words:
        cmd.hosts.append(check_host(w, "flent", resolve, f"flent: {w.text}: Name or service not known"))
        cmd.host_cols.append(w.col)
    if cmd.fmt == "plot" and cmd.plot is None:
        raise _argparse_error("-f plot needs a plot (-p NAME)", words[0].col)
    return cmd
