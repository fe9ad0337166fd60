"""Web fetch command lines: ``curl``, ``wget``, ``python -m http.server`` (or a server
script), and the file makers ``dd`` and ``head -c``.

* curl 7.81 (``src/tool_getparam.c``): ``-o FILE``/``--output``, ``-s``/``--silent``,
  ``-S``/``--show-error``, ``-w FORMAT``/``--write-out`` (``@FILE`` reads it from a file),
  ``-m SECONDS``/``--max-time``, ``-0``/``--http1.0``, ``--http1.1``, one ``http://`` URL.
  Without ``-s`` curl draws its progress meter on stderr, which is not modelled yet.
* wget 1.21: ``-O FILE``, ``-q``, ``-nv``, ``-T SECONDS``, one URL (the default verbose
  report with its progress bar is not modelled yet).
* ``python[3] -m http.server [PORT] [-b ADDR] [-d DIR]`` (Python 3) and ``python -m
  SimpleHTTPServer [PORT]`` (Python 2) serve the terminal's current folder on port 8000 by
  default; ``python[3] FILE.py`` runs a server script: the classic bufferbloat assignment's
  ``webserver.py`` (``SimpleHTTPServer``/``http.server`` with ``SocketServer.TCPServer`` on a
  ``PORT`` constant). The script is read to find its port; any other Python program is refused.
* ``dd if=/dev/zero|/dev/urandom of=FILE bs=SIZE count=N [status=none]`` and ``head -c SIZE
  /dev/zero|/dev/urandom`` (with ``> FILE``) make files of a given size (GNU suffixes: K=1024,
  kB=1000, M, MB, G, GB; dd also ``c`` ``w`` ``b``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from bufferlab.errors import CommandError, NotSupportedError

from ._common import Resolver, check_host
from ._getopt import Getopt, OptSpec
from .shell import Word

__all__ = [
    "Url",
    "CurlCommand",
    "WgetCommand",
    "HttpServerCommand",
    "DdCommand",
    "HeadCommand",
    "parse_url",
    "parse_curl",
    "parse_wget",
    "parse_python",
    "parse_dd",
    "parse_head",
    "gnu_size",
    "server_script_port",
]

_CURL_EXPECTED = "curl -o FILE -s [-w FORMAT] [-m SECONDS] http://ADDRESS[:PORT]/PATH"
_WGET_EXPECTED = "wget -q|-nv -O FILE http://ADDRESS[:PORT]/PATH"


@dataclass
class Url:
    text: str
    host: str
    port: int
    path: str
    col: int


@dataclass
class CurlCommand:
    url: Url
    output: str | None = None
    silent: bool = False
    show_error: bool = False
    write_out: str | None = None
    write_out_file: str | None = None
    max_time_s: float | None = None
    http10: bool = False


@dataclass
class WgetCommand:
    url: Url
    output: str | None = None
    quiet: bool = False
    timeout_s: float | None = None


@dataclass
class HttpServerCommand:
    port: int = 8000
    directory: str | None = None
    script: str | None = None
    python2: bool = False


@dataclass
class DdCommand:
    source: str
    output: str
    nbytes: int
    block: int
    count: int
    quiet: bool = False


@dataclass
class HeadCommand:
    source: str
    nbytes: int


def parse_url(w: Word, tool: str, resolve: Resolver | None) -> Url:
    m = re.fullmatch(r"(?:(https?)://)?([^/:]+)(?::(\d+))?(/.*)?", w.text)
    if m is None:
        raise CommandError(
            f"{tool}: malformed URL {w.text!r}", col=w.col, expected="http://ADDRESS[:PORT]/PATH"
        )
    scheme = m.group(1) or "http"
    if scheme != "http":
        raise NotSupportedError(
            f"{tool}: {scheme}:// is not supported yet (TLS is not modelled)",
            col=w.col,
            expected="http://ADDRESS[:PORT]/PATH",
        )
    host = check_host(
        Word(m.group(2), w.col + (len(scheme) + 3 if m.group(1) else 0)),
        tool,
        resolve,
        f"{tool}: Could not resolve host: {m.group(2)}",
    )
    port = int(m.group(3)) if m.group(3) else 80
    if not 0 < port < 65536:
        raise CommandError(f"{tool}: port {port} out of range", col=w.col, expected="a port 1..65535")
    return Url(w.text, host, port, m.group(4) or "/", w.col)


def _seconds(w: Word, tool: str, opt: str) -> float:
    try:
        v = float(w.text)
    except ValueError:
        raise CommandError(
            f"{tool}: {opt}: expected a proper numerical parameter", col=w.col, expected=f"{opt} SECONDS"
        ) from None
    if v < 0:
        raise CommandError(f"{tool}: {opt}: expected a positive number", col=w.col, expected=f"{opt} SECONDS")
    return v


_CURL = [
    OptSpec("o", "o", ("output",), arg=True),
    OptSpec("s", "s", ("silent",)),
    OptSpec("S", "S", ("show-error",)),
    OptSpec("w", "w", ("write-out",), arg=True),
    OptSpec("m", "m", ("max-time",), arg=True),
    OptSpec("0", "0", ("http1.0",)),
    OptSpec("http11", None, ("http1.1",)),
]
_CURL_OTHER = {
    ("O", "remote-name"): False,
    ("L", "location"): False,
    ("I", "head"): False,
    ("i", "include"): False,
    ("v", "verbose"): False,
    ("d", "data"): True,
    ("X", "request"): True,
    ("H", "header"): True,
    ("A", "user-agent"): True,
    ("k", "insecure"): False,
    ("x", "proxy"): True,
    ("r", "range"): True,
    ("C", "continue-at"): True,
    ("f", "fail"): False,
    ("u", "user"): True,
    ("b", "cookie"): True,
    ("e", "referer"): True,
    ("Y", "speed-limit"): True,
    ("y", "speed-time"): True,
    (None, "limit-rate"): True,
    (None, "connect-timeout"): True,
    (None, "retry"): True,
    (None, "compressed"): False,
    ("Z", "parallel"): False,
    (None, "http2"): False,
    (None, "interface"): True,
    ("4", "ipv4"): False,
    ("6", "ipv6"): False,
}
_CURL += [OptSpec(f"other:{long}", short, (long,), arg=a) for (short, long), a in _CURL_OTHER.items()]


def parse_curl(words: list[Word], resolve: Resolver | None = None) -> CurlCommand:
    opts, operands = Getopt("curl", _CURL, expected=_CURL_EXPECTED).parse(words[1:])
    if not operands:
        raise CommandError("curl: no URL specified!", col=words[0].col, expected=_CURL_EXPECTED)
    if len(operands) > 1:
        raise NotSupportedError(
            "curl with several URLs is not supported yet", col=operands[1].col, expected=_CURL_EXPECTED
        )
    cmd = CurlCommand(url=parse_url(operands[0], "curl", resolve))
    for o in opts:
        v = o.value
        if o.key.startswith("other:"):
            raise NotSupportedError(
                f"curl {o.spelled} is not supported yet", col=o.col, expected=_CURL_EXPECTED
            )
        if o.key == "o" and v is not None:
            cmd.output = v.text
        elif o.key == "s":
            cmd.silent = True
        elif o.key == "S":
            cmd.show_error = True
        elif o.key == "w" and v is not None:
            if v.text.startswith("@"):
                cmd.write_out_file = v.text[1:]
            else:
                cmd.write_out = v.text
        elif o.key == "m" and v is not None:
            cmd.max_time_s = _seconds(v, "curl", "--max-time")
        elif o.key == "0":
            cmd.http10 = True
    _refuse(
        not cmd.silent,
        words,
        "curl's progress meter (without -s)",
        _CURL_EXPECTED,
        "add -s, as the bufferbloat assignment does",
    )
    _refuse(
        cmd.output is None,
        words,
        "curl writing the page to the terminal",
        _CURL_EXPECTED,
        "give -o FILE, e.g. -o /dev/null",
    )
    return cmd


def _refuse(cond: bool, words: list[Word], what: str, expected: str, hint: str) -> None:
    """What a tool does that is not modelled yet, at the program's column."""
    if cond:
        raise NotSupportedError(
            f"{what} is not supported yet", col=words[0].col, expected=expected, suggestion=hint
        )


def parse_wget(words: list[Word], resolve: Resolver | None = None) -> WgetCommand:
    # wget's -nv is one option spelled with two letters: take it out before getopt
    quiet_nv = [w for w in words[1:] if w.text in ("-nv", "--no-verbose")]
    rest = [w for w in words[1:] if w.text not in ("-nv", "--no-verbose")]
    specs = [
        OptSpec("O", "O", ("output-document",), arg=True),
        OptSpec("q", "q", ("quiet",)),
        OptSpec("T", "T", ("timeout",), arg=True),
    ]
    specs += [
        OptSpec(f"other:{k}", k, (), arg=a)
        for k, a in (
            ("c", False),
            ("r", False),
            ("b", False),
            ("o", True),
            ("t", True),
            ("P", True),
            ("N", False),
        )
    ]
    opts, operands = Getopt("wget", specs, expected=_WGET_EXPECTED).parse(rest)
    if len(operands) != 1:
        raise CommandError(
            "wget: missing URL" if not operands else "wget with several URLs is not supported yet",
            col=operands[1].col if len(operands) > 1 else words[0].col,
            expected=_WGET_EXPECTED,
        )
    cmd = WgetCommand(url=parse_url(operands[0], "wget", resolve))
    for o in opts:
        v = o.value
        if o.key.startswith("other:"):
            raise NotSupportedError(
                f"wget {o.spelled} is not supported yet", col=o.col, expected=_WGET_EXPECTED
            )
        if o.key == "O" and v is not None:
            cmd.output = v.text
        elif o.key == "q":
            cmd.quiet = True
        elif o.key == "T" and v is not None:
            cmd.timeout_s = _seconds(v, "wget", "-T")
    _refuse(
        not cmd.quiet and not quiet_nv,
        words,
        "wget's verbose report (with its progress bar)",
        _WGET_EXPECTED,
        "add -q (nothing printed) or -nv (one line)",
    )
    _refuse(cmd.output is None, words, "wget saving under the URL's name", _WGET_EXPECTED, "give -O FILE")
    return cmd


def server_script_port(source: str) -> int | None:
    """The port a SimpleHTTPServer-style script serves on: it must build a ``TCPServer`` (or
    ``HTTPServer``) around ``SimpleHTTPRequestHandler``; the port is the ``PORT`` constant (or
    the literal in the server's address), 8000 if the script reads ``sys.argv``. None: not a
    web server script."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
    }
    if "SimpleHTTPRequestHandler" not in names or not names & {
        "TCPServer",
        "HTTPServer",
        "ThreadingHTTPServer",
    }:
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "PORT" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            return node.value.value
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Tuple)
            and len(node.elts) == 2
            and isinstance(node.elts[1], ast.Constant)
            and isinstance(node.elts[1].value, int)
        ):
            return node.elts[1].value
    return 8000


def parse_python(words: list[Word], script_dirs: list[Path]) -> HttpServerCommand:
    """``python -m http.server ...`` or ``python SCRIPT.py``."""
    args = words[1:]
    expected = "python3 -m http.server [PORT] [-b ADDRESS] [-d DIR], or python webserver.py"
    if not args:
        raise NotSupportedError("an interactive python is not supported", col=words[0].col, expected=expected)
    if args[0].text == "-m":
        if len(args) < 2:
            raise CommandError(
                "python: Argument expected for the -m option", col=args[0].col, expected=expected
            )
        module = args[1].text
        if module not in ("http.server", "SimpleHTTPServer"):
            raise NotSupportedError(
                f"python -m {module} is not supported (bufferlab models the web server only)",
                col=args[1].col,
                expected=expected,
            )
        cmd = HttpServerCommand(python2=module == "SimpleHTTPServer")
        rest = args[2:]
        i = 0
        while i < len(rest):
            w = rest[i]
            if w.text in ("-b", "--bind", "-d", "--directory") and i + 1 < len(rest):
                if w.text in ("-d", "--directory"):
                    cmd.directory = rest[i + 1].text
                i += 2
                continue
            if w.text.startswith("-"):
                raise NotSupportedError(
                    f"python -m {module} {w.text} is not supported yet", col=w.col, expected=expected
                )
            if not w.text.isdigit() or not 0 < int(w.text) < 65536:
                raise CommandError(
                    f"http.server: argument port: invalid int value: '{w.text}'", col=w.col, expected=expected
                )
            cmd.port = int(w.text)
            i += 1
        return cmd
    if args[0].text.startswith("-"):
        raise NotSupportedError(f"python {args[0].text} is not supported", col=args[0].col, expected=expected)
    script = args[0]
    if not script.text.endswith(".py"):
        raise NotSupportedError(
            f"python {script.text}: only web server scripts are modelled", col=script.col, expected=expected
        )
    for d in script_dirs:
        path = d / script.text
        if path.is_file():
            port = server_script_port(path.read_text(encoding="utf-8", errors="replace"))
            if port is None:
                raise NotSupportedError(
                    f"python {script.text}: bufferlab runs only web server scripts "
                    "(SimpleHTTPRequestHandler with a TCPServer); this one is not",
                    col=script.col,
                    expected=expected,
                )
            return HttpServerCommand(port=port, script=script.text)
    raise CommandError(
        f"python: can't open file '{script.text}': [Errno 2] No such file or directory",
        col=script.col,
        expected=expected,
        suggestion="put the script beside the Mininet script or scenario, or use python3 -m http.server 80",
    )


_GNU = {
    "": 1,
    "c": 1,
    "w": 2,
    "b": 512,
    "K": 1024,
    "k": 1024,
    "KiB": 1024,
    "kB": 1000,
    "M": 1024**2,
    "MiB": 1024**2,
    "MB": 1000**2,
    "G": 1024**3,
    "GiB": 1024**3,
    "GB": 1000**3,
}


def gnu_size(w: Word, text: str, tool: str) -> int:
    m = re.fullmatch(r"(\d+)([A-Za-z]*)", text)
    if m is None or m.group(2) not in _GNU:
        raise CommandError(
            f"{tool}: invalid number: '{text}'", col=w.col, expected="a size such as 100K or 1M"
        )
    return int(m.group(1)) * _GNU[m.group(2)]


def parse_dd(words: list[Word]) -> DdCommand:
    values: dict[str, Word] = {}
    for w in words[1:]:
        key, eq, _ = w.text.partition("=")
        if not eq or key not in ("if", "of", "bs", "count", "status"):
            raise NotSupportedError(
                f"dd {w.text} is not supported yet",
                col=w.col,
                expected="dd if=/dev/zero of=FILE bs=SIZE count=N [status=none]",
            )
        values[key] = w
    for key in ("if", "of"):
        if key not in values:
            raise NotSupportedError(
                f"dd without {key}= is not supported yet",
                col=words[0].col,
                expected="dd if=/dev/zero of=FILE bs=SIZE count=N",
            )
    source = values["if"].text[3:]
    if source not in ("/dev/zero", "/dev/urandom", "/dev/random"):
        raise NotSupportedError(
            f"dd if={source}: only /dev/zero and /dev/urandom are modelled",
            col=values["if"].col,
            expected="dd if=/dev/zero of=FILE bs=SIZE count=N",
        )
    block = gnu_size(values["bs"], values["bs"].text[3:], "dd") if "bs" in values else 512
    if "count" not in values:
        raise NotSupportedError(
            "dd without count= (copying until the source ends) is not supported",
            col=words[0].col,
            expected="dd if=/dev/zero of=FILE bs=SIZE count=N",
        )
    count = gnu_size(values["count"], values["count"].text[6:], "dd")
    status = values["status"].text[7:] if "status" in values else ""
    if status not in ("", "none", "noxfer", "progress"):
        raise CommandError(
            f"dd: invalid status level: '{status}'",
            col=values["status"].col,
            expected="status=none, noxfer or progress",
        )
    if block * count > 1 << 30:
        raise NotSupportedError(
            "dd: files over 1 GiB are not supported in a results folder",
            col=values["count"].col,
            expected="a smaller count or bs",
        )
    return DdCommand(source, values["of"].text[3:], block * count, block, count, quiet=status == "none")


def parse_head(words: list[Word]) -> HeadCommand:
    args = words[1:]
    if len(args) == 2 and args[0].text.startswith("-c") and len(args[0].text) > 2:
        size_word, src = Word(args[0].text[2:], args[0].col + 2), args[1]
    elif len(args) == 3 and args[0].text in ("-c", "--bytes"):
        size_word, src = args[1], args[2]
    elif len(args) == 2 and args[0].text.startswith("--bytes="):
        size_word, src = Word(args[0].text[8:], args[0].col + 8), args[1]
    else:
        raise NotSupportedError(
            "head is modelled only as head -c SIZE /dev/zero|/dev/urandom (> FILE)",
            col=words[0].col,
            expected="head -c SIZE /dev/zero > FILE",
        )
    if src.text not in ("/dev/zero", "/dev/urandom", "/dev/random"):
        raise NotSupportedError(
            f"head -c of {src.text} is not supported yet",
            col=src.col,
            expected="head -c SIZE /dev/zero > FILE",
        )
    nbytes = gnu_size(size_word, size_word.text, "head")
    if nbytes > 1 << 30:
        raise NotSupportedError(
            "head -c over 1 GiB is not supported in a results folder",
            col=size_word.col,
            expected="a smaller size",
        )
    return HeadCommand(src.text, nbytes)
