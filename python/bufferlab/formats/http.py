"""Web fetch outputs: curl's ``-w`` write-out, wget's ``-nv`` line, and what Python's
``http.server`` sends and logs (docs/semantics/formats.md §15).

* curl 7.81 (Ubuntu 22.04), ``src/tool_writeout.c`` ``ourWriteOut``: ``%{name}`` variables
  (names compared case-insensitively), ``%%`` for ``%``, ``\\n`` ``\\r`` ``\\t`` escapes, any
  other ``\\x`` and ``%x`` printed as is, an unknown name warned about on stderr (``curl:
  unknown --write-out variable: 'NAME'``) and left out; ``writeTime`` prints seconds and
  microseconds ``S.UUUUUU`` (truncated), ``writeOffset`` integers (``size_download``,
  ``speed_download`` = bytes per second over the whole transfer, ``lib/progress.c``
  ``trspeed``), ``writeLong`` integers and ``http_code`` as ``%03ld``.
* curl's request (``lib/http.c``): ``GET PATH HTTP/1.1``, ``Host``, ``User-Agent:
  curl/7.81.0``, ``Accept: */*``, each line ending ``\\r\\n``, then an empty line.
* Python's ``http/server.py`` (``SimpleHTTPRequestHandler``, HTTP/1.0): ``send_head`` answers
  ``200 OK`` with ``Server``, ``Date``, ``Content-type``, ``Content-Length`` and
  ``Last-Modified``, then the file; a missing file gets ``send_error(404, "File not found")``
  (``Server``, ``Date``, ``Connection: close``, ``Content-Type: text/html;charset=utf-8``,
  ``Content-Length``, then the stdlib's error page); ``log_message`` writes ``HOST - - [date]
  "REQUEST" CODE SIZE`` to stderr (``-`` for the size of a 200, the code's size otherwise is
  also ``-``). The header and page texts are built with the stdlib's own ``http.server`` and
  ``email.utils`` here, so their lengths are exactly Python's.
* wget 1.21 ``-nv``: ``YYYY-MM-DD HH:MM:SS URL:URL [LEN/LEN] -> "FILE" [1]`` on stderr.
"""

from __future__ import annotations

import email.utils
import http.server
import mimetypes
import posixpath
import time

__all__ = [
    "CURL_VERSION",
    "request_bytes",
    "response_head",
    "error_page",
    "write_out",
    "http_log_line",
    "wget_nv_line",
    "WRITE_OUT_VARIABLES",
    "content_type",
]

CURL_VERSION = "7.81.0"
PYTHON_VERSION = "3.10.12"
SERVER_HEADER = f"SimpleHTTP/0.6 Python/{PYTHON_VERSION}"
_MIME = mimetypes.MimeTypes(filenames=())


def request_bytes(host: str, path: str, agent: str = f"curl/{CURL_VERSION}") -> int:
    """Bytes of curl's GET request for ``path`` on ``host``."""
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}", f"User-Agent: {agent}", "Accept: */*", "", ""]
    return len("\r\n".join(lines).encode())


def wget_request_bytes(host: str, path: str) -> int:
    """Bytes of wget 1.21's GET (``src/http.c``: its headers in this order)."""
    lines = [f"GET {path} HTTP/1.1", "User-Agent: Wget/1.21.2", "Accept: */*", "Accept-Encoding: identity",
             f"Host: {host}", "Connection: Keep-Alive", "", ""]
    return len("\r\n".join(lines).encode())


def content_type(path: str) -> str:
    """``SimpleHTTPRequestHandler.guess_type`` with the built-in table only (no /etc/mime.types,
    so every machine agrees)."""
    base, ext = posixpath.splitext(path)
    table = {
        "": "application/octet-stream",
        ".gz": "application/gzip",
        ".Z": "application/octet-stream",
        ".bz2": "application/x-bzip2",
        ".xz": "application/x-xz",
    }
    if ext in table:
        return table[ext]
    guess, _ = _MIME.guess_type(path)
    return guess or "application/octet-stream"


def _date(epoch_s: float) -> str:
    return email.utils.formatdate(epoch_s, usegmt=True)


def response_head(path: str, size: int, epoch_s: float) -> bytes:
    """Status line and headers of a 200 for a file of ``size`` bytes."""
    headers = [
        "HTTP/1.0 200 OK",
        f"Server: {SERVER_HEADER}",
        f"Date: {_date(epoch_s)}",
        f"Content-type: {content_type(path)}",
        f"Content-Length: {size}",
        f"Last-Modified: {_date(epoch_s)}",
        "",
        "",
    ]
    return "\r\n".join(headers).encode("latin-1")


def error_page(code: int, epoch_s: float) -> tuple[bytes, bytes]:
    """(head, body) of ``send_error(code)`` as http.server sends it."""
    short, explain = http.server.BaseHTTPRequestHandler.responses[code]
    message = "File not found" if code == 404 else short
    body = (
        http.server.DEFAULT_ERROR_MESSAGE % {"code": code, "message": message, "explain": explain}
    ).encode("UTF-8", "replace")
    headers = [
        f"HTTP/1.0 {code} {message}",
        f"Server: {SERVER_HEADER}",
        f"Date: {_date(epoch_s)}",
        "Connection: close",
        f"Content-Type: {http.server.DEFAULT_ERROR_CONTENT_TYPE}",
        f"Content-Length: {len(body)}",
        "",
        "",
    ]
    return "\r\n".join(headers).encode("latin-1"), body


def _log_date(epoch_s: float) -> str:
    """``log_date_time_string``: ``DD/Mon/YYYY HH:MM:SS`` (local time; UTC in a simulation)."""
    t = time.gmtime(epoch_s)
    month = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")[t.tm_mon - 1]
    return f"{t.tm_mday:02d}/{month}/{t.tm_year:04d} {t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"


def http_log_line(client: str, path: str, code: int, epoch_s: float) -> str:
    """The stderr line http.server logs for one request (``log_request``; a 404 is logged by
    ``send_error`` first as ``code 404, message File not found``)."""
    line = f'{client} - - [{_log_date(epoch_s)}] "GET {path} HTTP/1.1" {code} -\n'
    if code == 404:
        line = f"{client} - - [{_log_date(epoch_s)}] code 404, message File not found\n" + line
    return line


def _time(ns: int) -> str:
    us = ns // 1000
    return f"{us // 1_000_000}.{us % 1_000_000:06d}"


#: curl write-out variables bufferlab knows the value of (name -> key of ``values`` and kind)
WRITE_OUT_VARIABLES = {
    "time_total": "time",
    "time_connect": "time",
    "time_starttransfer": "time",
    "time_namelookup": "time",
    "time_pretransfer": "time",
    "time_appconnect": "time",
    "time_redirect": "time",
    "size_download": "int",
    "size_upload": "int",
    "size_header": "int",
    "size_request": "int",
    "speed_download": "int",
    "speed_upload": "int",
    "http_code": "code",
    "response_code": "code",
    "num_connects": "int",
    "num_redirects": "int",
    "exitcode": "int",
    "remote_ip": "str",
    "remote_port": "int",
    "local_ip": "str",
    "local_port": "int",
    "url_effective": "str",
    "url": "str",
    "content_type": "str",
    "http_version": "str",
    "method": "str",
    "scheme": "str",
    "filename_effective": "str",
}


def write_out(fmt: str, values: dict[str, object]) -> tuple[str, str]:
    """(stdout, stderr) of curl's ``-w FORMAT`` with ``values`` (time values in ns)."""
    out: list[str] = []
    err: list[str] = []
    stream = out
    i = 0
    n = len(fmt)
    while i < n:
        c = fmt[i]
        if c == "%" and i + 1 < n:
            if fmt[i + 1] == "%":
                stream.append("%")
                i += 2
                continue
            if fmt[i + 1] == "{":
                end = fmt.find("}", i)
                if end < 0:
                    stream.append("%{")
                    i += 2
                    continue
                name = fmt[i + 2 : end]
                key = name.lower()
                if key == "stdout":
                    stream = out
                elif key == "stderr":
                    stream = err
                elif key in WRITE_OUT_VARIABLES:
                    kind = WRITE_OUT_VARIABLES[key]
                    value = values.get(key)
                    if value is not None:
                        if kind == "time":
                            stream.append(_time(int(value)))  # type: ignore[call-overload]
                        elif kind == "code":
                            stream.append(f"{int(value):03d}")  # type: ignore[call-overload]
                        else:
                            stream.append(str(value))
                else:
                    err.append(f"curl: unknown --write-out variable: '{name}'\n")
                i = end + 1
                continue
            stream.append(c + fmt[i + 1])
            i += 2
            continue
        if c == "\\" and i + 1 < n:
            stream.append({"n": "\n", "r": "\r", "t": "\t"}.get(fmt[i + 1], c + fmt[i + 1]))
            i += 2
            continue
        stream.append(c)
        i += 1
    return "".join(out), "".join(err)


def wget_nv_line(url: str, size: int, dest: str, epoch_s: float) -> str:
    t = time.gmtime(epoch_s)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", t)
    return f'{stamp} URL:{url} [{size}/{size}] -> "{dest}" [1]\n'
