"""Web fetches: ``python -m http.server`` (or a ``webserver.py`` script), ``curl``, ``wget``,
and the file makers ``dd`` and ``head -c`` (docs/flent.md, "Web fetches").

Parsers: commands/web.py; bytes and texts: formats/http.py; engine: app/rr/. A web server is
a TCP ``rr_server`` on its port serving its terminal's directory (the node's results folder, or
``--directory``); a fetch is an ``rr_client`` in ``closed`` mode with one transaction whose
request is curl's (or wget's) GET and whose response is what Python's ``SimpleHTTPRequestHandler``
sends for the file as it is when the request arrives: its status line and headers, then the file
(or a 404 page). HTTP/1.0: the server closes after the response. curl's ``-w`` times are from the
transfer's start: ``time_connect`` when the handshake completes, ``time_starttransfer`` at the
first response byte, ``time_total`` at the last.
"""

from __future__ import annotations

import random
import shutil
import sys
import time
import weakref
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ...commands import web as web_cmd
from ...commands.shell import Word
from ...formats import http as http_fmt
from ...safefs import ensure_dir, open_write
from ..context import NS, Gen, PrepareCtx, Prepared, Program, RunCtx, WaitApp, inside_home, resolved_in_home
from ..engine import AppStartError
from ..services import Service, epoch_s, find, register
from ..sockets import tcp_spec


def _epoch(rt: RunCtx) -> float:
    return float(rt.runner.sc.profile.epoch)


# ============================================================ the server


def _prep_python(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], words[0].text)
    # the scenario's folder, and a Mininet script's (``bufferlab mininet`` runs it with sys.argv
    # as ``python SCRIPT.py`` would: the assignment keeps webserver.py beside its script)
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0].endswith(".py") else None
    dirs = [d for d in (pc.base_dir, script.parent if script is not None else None) if d is not None]
    cmd = web_cmd.parse_python(words, dirs)
    ip = pc.topo.host_ip(node) or "0.0.0.0"

    def run(rt: RunCtx) -> Gen:
        folder = rt.term.cwd
        if cmd.directory is not None:
            folder = resolved_in_home(rt.term, rt.term.cwd / cmd.directory)
        if folder is None or not folder.is_dir():
            rt.io.err(f"python: {cmd.directory}: No such file or directory\n")
            return 1
        # socketserver.TCPServer listens with request_queue_size = 5 (Lib/socketserver.py),
        # http.server's and a webserver.py's HTTPServer alike: ss -l shows Send-Q 5
        spec = {"kind": "rr_server", "port": cmd.port, "proto": "tcp", "backlog": 5,
                "tcp": tcp_spec(rt, node, None)}
        try:
            app = rt.start_app(node, spec)
        except AppStartError:
            rt.io.err("OSError: [Errno 98] Address already in use\n")
            return 1
        rt.note_listener(app, node)
        register(rt, Service("http", ip, "tcp", cmd.port, app, node, rt.term.name, folder, rt.now_ns))
        if cmd.script is None:
            where = f" (http://0.0.0.0:{cmd.port}/)" if not cmd.python2 else ""
            rt.io.out(f"Serving HTTP on 0.0.0.0 port {cmd.port}{where} ...\n")
        yield WaitApp(app, True)
        log = rt.engine.app_result(app).get("log", {})
        asked = _LOGGED.get(rt.runner, {})
        epoch = epoch_s(rt)
        for client, at in zip(log.get("client", []), log.get("at_ns", []), strict=True):
            path, code = asked.get((client, int(at)), ("/", 200))
            rt.io.err(http_fmt.http_log_line(client, path, code, epoch + int(at) / NS))
        if cmd.script is None and not cmd.python2:
            rt.io.out("\nKeyboard interrupt received, exiting.\n")
        return 0

    return Prepared(run, endless=True)


#: what each request asked for, per run: (client address, request instant) -> (path, status), so
#: the server's log names the path (the engine's log has the client and the instant)
_LOGGED: weakref.WeakKeyDictionary[Any, dict[tuple[str, int], tuple[str, int]]] = weakref.WeakKeyDictionary()


# ============================================================ fetching


def _resolve(svc: Service, path: str) -> tuple[Path | None, int]:
    """The file a path names in the server's folder (``translate_path``), and the status."""
    assert svc.folder is not None
    clean = unquote(path.split("?", 1)[0].split("#", 1)[0])
    parts = [p for p in clean.split("/") if p and p not in (".", "..")]
    target = svc.folder.joinpath(*parts) if parts else svc.folder
    if target.is_dir():
        index = next((target / n for n in ("index.html", "index.htm") if (target / n).is_file()), None)
        return (index, 200) if index is not None else (None, 403)
    return (target, 200) if target.is_file() else (None, 404)


def _fetch_spec(
    rt: RunCtx, node: str, url: web_cmd.Url, request: int, response: int, timeout_s: float | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "kind": "rr_client",
        "dst": url.host,
        "port": url.port,
        "proto": "tcp",
        "mode": "closed",
        "request": request,
        "response": response,
        "count": 1,
        "close_after": True,
        "log": True,
        "record": True,
        "tcp": tcp_spec(rt, node, None),
    }
    if timeout_s:
        spec["timeout_ns"] = round(timeout_s * NS)
    return spec


class _Fetch:
    """One GET: what the server will send, then the engine's record of it."""

    def __init__(self, rt: RunCtx, url: web_cmd.Url, agent: str) -> None:
        self.url = url
        self.svc = find(rt, url.host, "tcp", url.port, "http")
        self.code = 0
        self.file: Path | None = None
        self.body = 0
        self.head = b""
        host = url.host if url.port == 80 else f"{url.host}:{url.port}"
        self.request = (http_fmt.wget_request_bytes(host, url.path) if agent.startswith("Wget")
                        else http_fmt.request_bytes(host, url.path, agent))
        if self.svc is not None:
            self.file, self.code = _resolve(self.svc, url.path)
            epoch = epoch_s(rt) + rt.now_ns / NS
            if self.file is not None:
                self.body = self.file.stat().st_size
                # the type is guessed from the file served (a folder's index.html is text/html)
                self.head = http_fmt.response_head(self.file.name, self.body, epoch)
            else:
                self.head, page = http_fmt.error_page(self.code if self.code != 403 else 404, epoch)
                self.code = 404
                self.body = len(page)
        self.app = -1
        self.result: dict[str, Any] = {}

    @property
    def response(self) -> int:
        return len(self.head) + self.body if self.svc is not None else 1

    def start(self, rt: RunCtx, node: str, timeout_s: float | None) -> str | None:
        try:
            self.app = rt.start_app(
                node, _fetch_spec(rt, node, self.url, self.request, self.response, timeout_s)
            )
        except AppStartError as e:
            return str(e)
        return None

    def finish(self, rt: RunCtx) -> None:
        self.result = rt.engine.app_result(self.app)
        if self.svc is not None and not self.result.get("error"):
            start = int(self.result["start_ns"])
            # the server's log line: its request instant is when the request's bytes had arrived
            log = rt.engine.app_result(self.svc.app).get("log", {})
            port = int(self.result["local_port"])
            for c, p, t in zip(
                log.get("client", []), log.get("client_port", []), log.get("at_ns", []), strict=True
            ):
                if p == port and int(t) >= start:
                    _LOGGED.setdefault(rt.runner, {})[(c, int(t))] = (self.url.path, self.code)

    def times(self) -> dict[str, int | None]:
        r = self.result
        start = int(r["start_ns"])
        tx = r.get("tx", {})
        first = tx.get("first_ns", [None])[0] if tx.get("first_ns") else None
        done = tx.get("done_ns", [None])[0] if tx.get("done_ns") else None
        connected = r.get("connected_ns")
        total = (int(done) if done is not None else int(r["end_ns"])) - start
        return {
            "time_namelookup": 0,
            "time_appconnect": 0,
            "time_redirect": 0,
            "time_connect": int(connected) - start if connected is not None else 0,
            "time_pretransfer": int(connected) - start if connected is not None else 0,
            "time_starttransfer": int(first) - start if first is not None else 0,
            "time_total": total,
        }

    def store(self, rt: RunCtx, dest: str) -> str | None:
        """Write the body where ``-o``/``-O`` says (``/dev/null``: nowhere); an error text or None."""
        if dest in ("/dev/null", "-"):
            return None
        path = inside_home(rt.term, rt.term.cwd / dest)
        if path is None:
            return f"{dest}: outside the node's results folder"
        ensure_dir(path.parent)
        with open_write(path, "wb") as out:
            if self.file is not None:
                with open(self.file, "rb") as src:
                    shutil.copyfileobj(src, out)
        return None


def _prep_curl(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "curl")
    cmd = web_cmd.parse_curl(words, resolve=pc.resolve_host)
    fmt_file = None
    if cmd.write_out_file is not None:
        fmt_file = cmd.write_out_file

    def run(rt: RunCtx) -> Gen:
        fmt = cmd.write_out
        if fmt_file is not None:
            path = resolved_in_home(rt.term, rt.term.cwd / fmt_file)
            if path is None or not path.is_file():
                rt.io.err(f"Warning: Failed to read {fmt_file}\n")
                fmt = ""
            else:
                fmt = path.read_text(encoding="utf-8", errors="replace")
        f = _Fetch(rt, cmd.url, f"curl/{http_fmt.CURL_VERSION}")
        why = f.start(rt, node, cmd.max_time_s)
        if why is not None:
            if cmd.show_error:
                rt.io.err(f"curl: (7) Failed to connect to {cmd.url.host} port {cmd.url.port}: {why}\n")
            _write_out(rt, fmt, f, 7)
            return 7
        expected = rt.now_ns + round((cmd.max_time_s or 1) * NS)
        yield WaitApp(f.app, False, expected)
        f.finish(rt)
        err = f.result.get("error")
        status = 0
        if err:
            status = 28 if "timed out" in str(err) and "Operation" in str(err) else 7
            if status == 7 and "reset" in str(err):
                status = 56
            if cmd.show_error:
                what = (
                    f"Failed to connect to {cmd.url.host} port {cmd.url.port}: {err}"
                    if status == 7
                    else str(err)
                    if status == 28
                    else f"Recv failure: {err}"
                )
                rt.io.err(f"curl: ({status}) {what}\n")
        elif cmd.output is not None:
            problem = f.store(rt, cmd.output)
            if problem is not None:
                if cmd.show_error:
                    rt.io.err(f"curl: (23) Failure writing output to destination ({problem})\n")
                status = 23
        _write_out(rt, fmt, f, status)
        return status

    return Prepared(run, endless=False)


def _write_out(rt: RunCtx, fmt: str | None, f: _Fetch, status: int) -> None:
    if not fmt:
        return
    values: dict[str, object] = {
        "exitcode": status,
        "url": f.url.text,
        "url_effective": f.url.text,
        "remote_ip": f.url.host,
        "remote_port": f.url.port,
        "method": "GET",
        "scheme": "HTTP",
        "num_redirects": 0,
        "size_upload": 0,
        "speed_upload": 0,
    }
    if f.result:
        times = f.times()
        ok = not f.result.get("error")
        values.update(times)
        size = f.body if ok else max(0, int(f.result.get("bytes_read", 0)) - len(f.head))
        values.update(
            {
                "size_download": size,
                "size_header": len(f.head) if ok else 0,
                "size_request": f.request,
                "speed_download": size * NS // times["time_total"] if times["time_total"] else 0,  # type: ignore[operator]
                "http_code": f.code if ok else 0,
                "response_code": f.code if ok else 0,
                "num_connects": 1,
                "local_port": f.result.get("local_port"),
                "http_version": "1" if ok else "0",
                "content_type": http_fmt.content_type(f.url.path) if ok and f.code == 200 else None,
            }
        )
    else:
        values.update({"http_code": 0, "response_code": 0, "size_download": 0, "time_total": 0})
    out, err = http_fmt.write_out(fmt, values)
    rt.io.out(out)
    rt.io.err(err)


def _prep_wget(pc: PrepareCtx, words: list[Word]) -> Prepared:
    node = pc.require_node(words[0], "wget")
    cmd = web_cmd.parse_wget(words, resolve=pc.resolve_host)

    def run(rt: RunCtx) -> Gen:
        f = _Fetch(rt, cmd.url, "Wget/1.21.2")
        why = f.start(rt, node, cmd.timeout_s)
        if why is not None:
            return 4
        yield WaitApp(f.app, False, None)
        f.finish(rt)
        if f.result.get("error"):
            return 4
        if f.code == 404:
            if not cmd.quiet:
                rt.io.err(f"{cmd.url.text}:\n{_stamp(rt)} ERROR 404: File not found.\n")
            return 8
        assert cmd.output is not None
        problem = f.store(rt, cmd.output)
        if problem is not None:
            rt.io.err(f"{cmd.output}: {problem}\n")
            return 3
        if not cmd.quiet:
            rt.io.err(http_fmt.wget_nv_line(cmd.url.text, f.body, cmd.output, epoch_s(rt) + rt.now_ns / NS))
        return 0

    return Prepared(run, endless=False)


def _stamp(rt: RunCtx) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch_s(rt) + rt.now_ns / NS))


# ============================================================ making files


def _fill(source: str, n: int, seed: str) -> bytes:
    """What /dev/zero or /dev/urandom gives: zeros, or bytes from a generator seeded by the
    command (the same run gives the same file)."""
    if source == "/dev/zero":
        return bytes(n)
    return random.Random(seed).randbytes(n)


def _prep_dd(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = web_cmd.parse_dd(words)
    line = " ".join(w.text for w in words)

    def run(rt: RunCtx) -> int:
        path = inside_home(rt.term, rt.term.cwd / cmd.output)
        if path is None:
            rt.io.err(f"dd: failed to open '{cmd.output}': Permission denied\n")
            return 1
        ensure_dir(path.parent)
        with open_write(path, "wb") as f:
            f.write(_fill(cmd.source, cmd.nbytes, f"{rt.runner.sc.seed}:{line}"))
        if not cmd.quiet:
            n = cmd.nbytes
            secs = n / 1e9 + 1e-5  # a memory-speed copy, deterministic
            rt.io.err(
                f"{cmd.count}+0 records in\n{cmd.count}+0 records out\n"
                f"{n} bytes{_dd_sizes(n)} copied, {secs:.6g} s, {_dd_rate(n / secs)}\n"
            )
        return 0

    return Prepared.at_once(run)


def _dd_sizes(n: int) -> str:
    """GNU dd's ``(102 kB, 100 KiB)`` after the byte count (none below 1000 bytes)."""
    if n < 1000:
        return ""
    si = _human(n, 1000, ["kB", "MB", "GB", "TB"])
    iec = _human(n, 1024, ["KiB", "MiB", "GiB", "TiB"])
    return f" ({si}, {iec})" if n >= 1024 else f" ({si})"


def _human(n: float, base: int, units: list[str]) -> str:
    v = float(n)
    for u in units:
        v /= base
        if v < base:
            return f"{v:.1f} {u}" if v < 10 else f"{v:.0f} {u}"
    return f"{v:.0f} {units[-1]}"


def _dd_rate(bps: float) -> str:
    return _human(bps, 1000, ["kB/s", "MB/s", "GB/s", "TB/s"])


def _prep_head(pc: PrepareCtx, words: list[Word]) -> Prepared:
    cmd = web_cmd.parse_head(words)
    line = " ".join(w.text for w in words)

    def run(rt: RunCtx) -> int:
        data = _fill(cmd.source, cmd.nbytes, f"{rt.runner.sc.seed}:{line}")
        if rt.io.path is not None:  # head -c N /dev/zero > FILE: the bytes go to the file as they are
            with open_write(rt.io.path, "ab") as f:
                f.write(data)
        else:
            rt.io.out(data.decode("latin-1"))
        return 0

    return Prepared.at_once(run)


PROGRAMS = (
    Program(
        "python",
        _prep_python,
        "`python -m http.server [PORT]` or a SimpleHTTPServer script "
        "(`python webserver.py`): a web server of the terminal's folder",
    ),
    Program("python3", _prep_python, "as `python`"),
    Program("curl", _prep_curl, "curl 7.81 `-o FILE -s [-w FORMAT] [-m SECONDS] URL` over the simulated TCP"),
    Program("wget", _prep_wget, "wget 1.21 `-q|-nv -O FILE URL`"),
    Program("dd", _prep_dd, "`dd if=/dev/zero|/dev/urandom of=FILE bs=SIZE count=N` (a file of that size)"),
    Program("head", _prep_head, "`head -c SIZE /dev/zero|/dev/urandom` (with `> FILE`)"),
)
