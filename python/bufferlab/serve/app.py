"""``bufferlab serve [DIR]``: a lab bench in the browser over a folder of scenarios, Mininet
scripts, sweep files and results (docs/bench.md).

The standard library's threading HTTP server, bound to 127.0.0.1 only. As Jupyter does, it
prints a URL with a random token; a request without the token (in the URL, the cookie the
first page sets, or an ``X-Bufferlab-Token`` header) is refused, and so is one whose Host is
not this server (DNS rebinding). Every path a page names goes through :class:`Sandbox` (never
outside DIR) and every write through safefs. Runs and sweeps are ordinary ``bufferlab``
commands in processes of their own (jobs.py): a run's progress streams to the page as
Server-Sent Events while the page stays free, and its results land in ``DIR/results/`` as from
a terminal. Charts come from the results' tables (outputs/series.py) and are drawn in the page
by uPlot, which ships in the wheel (static/VENDORED.md): no network needed.
"""

from __future__ import annotations

import hmac
import json
import mimetypes
import os
import secrets
import shutil
import signal
import socket
import stat
import sys
import threading
import tomllib
import webbrowser
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ..errors import BufferlabError
from ..outputs import compare as compare_mod
from ..outputs.results import DAMAGE, ResultsError
from ..outputs.series import CHARTS, charts, load_tables, overview
from ..results_folder import kind_of, read_marker
from ..safefs import O_NOFOLLOW
from ..scenario.load import load_scenario
from ..scenario.params import Override, coerce
from ..sweep import collect
from ..sweep.spec import load_sweep
from ..sweep.stats import summarise
from .checking import check_python, check_scenario, check_toml
from .jobs import Job, Jobs
from .sandbox import Refused, Sandbox

STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_PORT = 8765
#: where runs and sweeps started here write (relative to the served folder), as `-o results`
RESULTS = "results"
#: folders never listed (nor searched for files)
_SKIP = {"results", "node_modules", "__pycache__", "target", "site", "build", "dist"}
_MAX_LISTED = 2000
_MAX_BODY = 20 * 1024 * 1024
_PAGE_CSP = ("default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
             "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
             "form-action 'none'")
#: a results file shown as it is (report.html): no script runs, no origin of ours
_FILE_CSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'"
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".txt": "text/plain; charset=utf-8",
          ".md": "text/plain; charset=utf-8", ".toml": "text/plain; charset=utf-8",
          ".py": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8",
          ".json": "application/json", ".csv": "text/plain; charset=utf-8",
          ".dat": "text/plain; charset=utf-8"}


class Bench:
    """What the handlers share: the folder, the token, the jobs."""

    def __init__(self, root: Path, port: int, token: str | None = None) -> None:
        self.sandbox = Sandbox(root)
        self.root = self.sandbox.root
        self.token = token or secrets.token_urlsafe(32)
        self.port = port
        self.jobs = Jobs(self.root)
        self.static = {p.name for p in STATIC.iterdir() if p.is_file()}

    @property
    def cookie(self) -> str:
        return f"bufferlab-serve-{self.port}"

    # ------------------------------------------------------------ listing

    def tree(self) -> dict[str, Any]:
        files: dict[str, list[dict[str, Any]]] = {"scenarios": [], "scripts": [], "sweeps": []}
        n = 0
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP
                             and not os.path.islink(os.path.join(folder, d)))
            for name in sorted(names):
                path = Path(folder) / name
                if path.suffix not in (".toml", ".py") or path.is_symlink() or n >= _MAX_LISTED:
                    continue
                kind = _file_kind(path)
                if kind is not None:
                    n += 1
                    files[kind].append({"path": self.sandbox.relative(path), "name": name})
        return {"root": str(self.root), **files, "results": self.results(), "jobs": self.jobs.list(),
                "charts": [{"key": k, "title": t} for k, t, _, _ in CHARTS]}

    def results(self) -> list[dict[str, Any]]:
        base = self.root / RESULTS
        if not base.is_dir() or base.is_symlink():
            return []
        found = []
        for d in sorted(base.iterdir(), key=lambda p: p.name):
            if not d.is_dir() or d.is_symlink() or d.name.endswith(".prev"):
                continue
            kind = kind_of(d)
            if kind is None:
                continue
            entry: dict[str, Any] = {"path": f"{RESULTS}/{d.name}", "name": d.name, "kind": kind}
            if kind in ("run", "mininet"):
                marker = read_marker(d) or {}
                entry["complete"] = marker.get("complete")
                try:
                    summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
                    entry["scenario"] = summary.get("scenario")
                    entry["parts"] = [p.get("name") for p in summary.get("parts", []) if isinstance(p, dict)]
                except (OSError, ValueError, AttributeError):
                    entry["parts"] = []
            found.append(entry)
        return found

    # ------------------------------------------------------------ actions

    def check(self, rel: str, text: str) -> dict[str, Any]:
        path = self.sandbox.resolve(rel)
        if path.suffix == ".py":
            return check_python(path, text)
        if _toml_kind(text) == "sweeps":
            return check_toml(path, text)
        return check_scenario(path, text)

    def start(self, rel: str, params: dict[str, Any]) -> tuple[Job, bool]:
        path = self.sandbox.resolve(rel)
        if not path.is_file():
            raise Refused(f"{rel}: no such file", 404)
        src = self.sandbox.relative(path)
        if path.suffix == ".py":
            return self.jobs.start("mininet", src, f"{RESULTS}/{path.stem}", ["mininet", src, "-o", RESULTS])
        overrides = [Override(k, coerce(str(v)), "--set") for k, v in params.items()]
        sc = load_scenario(path, overrides)  # a mistake: its message, nothing started
        sets = [w for k, v in params.items() for w in ("--set", f"{k}={v}")]
        return self.jobs.start("run", src, f"{RESULTS}/{sc.slug}",
                               ["run", src, "-o", RESULTS, "--progress-json", "--no-progress", *sets])

    def start_sweep(self, rel: str) -> tuple[Job, bool, int]:
        path = self.sandbox.resolve(rel)
        spec = load_sweep(path, [])
        src = self.sandbox.relative(path)
        job, new = self.jobs.start("sweep", src, f"{RESULTS}/{spec.name}",
                                   ["sweep", src, "-o", RESULTS, "--no-progress"])
        return job, new, len(spec.points) * len(spec.seeds)

    def series(self, selections: list[str], live: bool | None) -> dict[str, Any]:
        """The charts of one selection (a run or a part of one), or of several overlaid."""
        running = self.jobs.running_results()
        sels = [compare_mod.resolve(self.sandbox.resolve(rel)) for rel in selections]
        labels = _labels([self.sandbox.relative(s.path) for s in sels]) if len(sels) > 1 else [""]
        made: dict[str, dict[str, Any]] = {}
        cache: dict[Path, Any] = {}
        overviews, problems = [], []
        for sel, label in zip(sels, labels, strict=True):
            root = sel.run.root
            if root not in cache:
                probs: list[Any] = []
                under_way = live if live is not None else self.sandbox.relative(root) in running
                cache[root] = load_tables(root, probs, live=under_way)
                problems += [str(p) for p in probs if p.kind == "bad"]
            run, tables = cache[root]
            overviews.append({"selection": self.sandbox.relative(sel.path), "label": label,
                              "results": self.sandbox.relative(root), **overview(run)})
            for c in charts(tables, [sel.part] if sel.part else None, label):
                doc = c.doc()
                if c.key in made:
                    made[c.key]["series"] += doc["series"]
                else:
                    made[c.key] = doc
        return {"overviews": overviews, "charts": list(made.values()), "problems": problems}

    def compare(self, selections: list[str]) -> dict[str, Any]:
        paths = [self.sandbox.resolve(rel) for rel in selections]
        if len(paths) < 2:
            raise Refused("pick at least two runs or parts to compare", 400)
        out = compare_mod.default_output(paths, self.root / RESULTS)
        rows, problems, _plots = compare_mod.compare(paths, out)
        return {"headers": [h for _, h, _ in compare_mod.COLUMNS],
                "rows": [[compare_mod._cell(r[c], f) for c, _, f in compare_mod.COLUMNS] for r in rows],
                "problems": [str(p) for p in problems], "output": self.sandbox.relative(out)}

    def sweep_frame(self, rel: str) -> Any:
        folder = self.sandbox.resolve(rel)
        if kind_of(folder) != "sweep":
            raise Refused(f"{rel}: not a sweep's results folder", 404)
        done = (folder / "sweep.parquet").is_file() and rel not in self.jobs.running_results()
        return collect.read_frame(folder) if done else collect.finished_frame(folder)

    def sweep_info(self, rel: str) -> dict[str, Any]:
        frame = self.sweep_frame(rel)
        params = collect.param_columns(self.sandbox.resolve(rel))
        numeric = [c for c in frame.columns if c not in params and c not in ("seed", "wall_s")
                   and str(frame[c].dtype).startswith(("int", "float", "uint", "Int", "Float"))]
        status = frame["status"] if "status" in frame.columns else None
        ok = frame if status is None else frame[status == "ok"]
        failed = 0 if status is None else int(frame[status != "ok"]["run_id"].nunique())
        return {"params": params, "columns": numeric, "runs": int(ok["run_id"].nunique()) if len(ok) else 0,
                "rows": len(frame), "failed": failed,
                "others": [c for c in frame.columns if c not in params and c not in numeric]}

    def sweep_plot(self, rel: str, x: str, y: str, by: str | None) -> dict[str, Any]:
        frame = self.sweep_frame(rel)
        frame = frame[frame["status"] == "ok"] if "status" in frame.columns else frame
        for c in (x, y, by):
            if c and c not in frame.columns:
                raise Refused(f"no column {c!r} in this sweep (yet)", 400)
        if frame.empty:
            return {"x": x, "y": y, "lines": [], "ticks": None}
        stats = summarise(frame, x, y, by or None, None)
        values = sorted(stats[x].drop_duplicates().tolist(), key=_sort_key)
        numeric = all(isinstance(v, int | float) for v in values)
        pos = {v: (float(v) if numeric else float(i)) for i, v in enumerate(values)}
        lines = []
        for bv, g in (stats.groupby(by, sort=True) if by else [(None, stats)]):
            g = g.assign(_x=[pos[v] for v in g[x]]).sort_values("_x")
            mean, ci = g["mean"].astype(float), g["ci95"].astype(float).fillna(0.0)
            lines.append({"label": y if bv is None else f"{by}={bv}", "x": _floats(g["_x"]),
                          "mean": _floats(mean), "lo": _floats(mean - ci), "hi": _floats(mean + ci),
                          "n": [int(v) for v in g["n"]]})
        return {"x": x, "y": y, "lines": lines, "ticks": None if numeric else [str(v) for v in values]}


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, int | float) else (1, str(v))


def _floats(s: Any) -> list[float | None]:
    return [None if v != v else float(v) for v in s]


def _labels(rels: list[str]) -> list[str]:
    """Short names of overlaid selections: each path below the folder they share."""
    common = os.path.commonpath(rels) if len(rels) > 1 else ""
    labels = [os.path.relpath(r, common) if common and r != common else os.path.basename(r) for r in rels]
    return labels if len(set(labels)) == len(labels) else rels


def _toml_kind(text: str) -> str | None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "scenarios"  # the editor shows where it is wrong
    if isinstance(data.get("scenario"), str):
        return "sweeps"
    if "part" in data or "topology" in data or "name" in data:
        return "scenarios"
    return None


def _file_kind(path: Path) -> str | None:
    try:
        with path.open("rb") as f:
            head = f.read(1 << 20)
    except OSError:
        return None
    text = head.decode("utf-8", "replace")
    if path.suffix == ".py":
        return "scripts" if "mininet" in text.lower() else None
    return _toml_kind(text)


# ---------------------------------------------------------------- HTTP


class Handler(BaseHTTPRequestHandler):
    bench: Bench
    protocol_version = "HTTP/1.1"
    server_version = "bufferlab-serve"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        pass  # the terminal shows the URL and errors, not every request

    # ------------------------------------------------------------ answers

    def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, doc: Any) -> None:
        self._send(status, json.dumps(doc, allow_nan=False).encode(), "application/json")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    # ------------------------------------------------------------ gatekeeping

    def _host_ok(self) -> bool:
        host = (self.headers.get("Host") or "").lower()
        return host in (f"127.0.0.1:{self.bench.port}", f"localhost:{self.bench.port}")

    def _token(self) -> str | None:
        q = parse_qs(urlsplit(self.path).query)
        if q.get("token"):
            return q["token"][0]
        if self.headers.get("X-Bufferlab-Token"):
            return self.headers["X-Bufferlab-Token"]
        cookie = SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie") or "")
        except Exception:  # noqa: BLE001 - a malformed cookie header is no token
            return None
        m = cookie.get(self.bench.cookie)
        return m.value if m else None

    def _allowed(self) -> bool:
        if not self._host_ok():
            self._error(403, "this server answers only to http://127.0.0.1:PORT/ (Host refused)")
            return False
        tok = self._token()
        if not tok or not hmac.compare_digest(tok.encode(), self.bench.token.encode()):
            self._error(403, "a token is needed: open the URL `bufferlab serve` printed (with ?token=...)")
            return False
        if self.command == "POST":
            origin = self.headers.get("Origin")
            if origin and origin.lower() not in (f"http://127.0.0.1:{self.bench.port}",
                                                 f"http://localhost:{self.bench.port}"):
                self._error(403, "a request from another site is refused")
                return False
        return True

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        if n > _MAX_BODY:
            raise Refused("request too large", 413)
        if "application/json" not in (self.headers.get("Content-Type") or ""):
            raise Refused("a JSON body is expected (Content-Type: application/json)", 415)
        try:
            doc = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            raise Refused("the body is not JSON", 400) from None
        if not isinstance(doc, dict):
            raise Refused("the body is not a JSON object", 400)
        return doc

    # ------------------------------------------------------------ dispatch

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._dispatch(self._get)

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch(self._get)

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch(self._post)

    def _dispatch(self, fn: Any) -> None:
        if not self._allowed():
            return
        try:
            fn(urlsplit(self.path))
        except Refused as e:
            self._error(e.status, str(e))
        except ResultsError as e:
            self._error(404, str(e))
        except BufferlabError as e:  # a scenario's, sweep's or comparison's mistake: its message
            self._error(400, str(e))
        except DAMAGE as e:
            self._error(500, f"{type(e).__name__}: {e}")
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _get(self, url: Any) -> None:
        q = parse_qs(url.query)
        path = url.path
        if path == "/":
            if "token" in q:  # the printed URL: the cookie takes over, the token leaves the URL bar
                self._send(302, b"", "text/plain", {
                    "Location": "/", "Set-Cookie": f"{self.bench.cookie}={self.bench.token}; HttpOnly; "
                    "SameSite=Strict; Path=/"})
                return
            self._static("index.html")
        elif path == "/favicon.ico":
            self._send(204, b"", "text/plain")
        elif path.startswith("/static/"):
            self._static(unquote(path[len("/static/"):]))
        elif path.startswith("/files/"):
            self._file(unquote(path[len("/files/"):]))
        elif path == "/api/tree":
            self._json(200, self.bench.tree())
        elif path == "/api/file":
            rel = q.get("path", [""])[0]
            self._json(200, {"path": rel, "text": self.bench.sandbox.read_text(rel)})
        elif path == "/api/jobs":
            self._json(200, self.bench.jobs.list())
        elif path.startswith("/api/jobs/") and path.endswith("/events"):
            self._events(path.split("/")[3], q)
        elif path == "/api/series":
            live = {"1": True, "0": False}.get(q.get("live", [""])[0])
            self._json(200, self.bench.series(q.get("sel", []), live))
        elif path == "/api/sweep":
            self._json(200, self.bench.sweep_info(q.get("dir", [""])[0]))
        elif path == "/api/sweep/plot":
            self._json(200, self.bench.sweep_plot(q.get("dir", [""])[0], q.get("x", [""])[0],
                                                  q.get("y", [""])[0], q.get("by", [""])[0] or None))
        else:
            self._error(404, f"{path}: no such page")

    def _post(self, url: Any) -> None:
        path = url.path
        if path.startswith("/api/jobs/") and path.endswith("/stop"):
            job = self.bench.jobs.get(path.split("/")[3])
            if job is None:
                raise Refused("no such job", 404)
            self._json(200, {"stopped": job.stop(), **job.info()})
            return
        body = self._body()
        if path == "/api/check":
            self._json(200, self.bench.check(str(body.get("path", "")), str(body.get("text", ""))))
        elif path == "/api/file":
            rel = str(body.get("path", ""))
            self.bench.sandbox.save_text(rel, str(body.get("text", "")), (".toml", ".py"))
            self._json(200, {"saved": rel})
        elif path == "/api/run":
            params = body.get("set") or {}
            if not isinstance(params, dict):
                raise Refused("set: an object of parameter values", 400)
            job, new = self.bench.start(str(body.get("path", "")), params)
            self._json(200 if new else 409, {"job": job.info(), "started": new})
        elif path == "/api/sweep":
            job, new, total = self.bench.start_sweep(str(body.get("path", "")))
            self._json(200 if new else 409, {"job": job.info(), "started": new, "total": total})
        elif path == "/api/compare":
            sels = body.get("paths")
            if not isinstance(sels, list) or not all(isinstance(s, str) for s in sels):
                raise Refused("paths: a list of results folders or parts", 400)
            self._json(200, self.bench.compare(sels))
        else:
            self._error(404, f"{path}: no such action")

    # ------------------------------------------------------------ files

    def _static(self, name: str) -> None:
        if name not in self.bench.static:  # a fixed set of names: nothing else is reachable
            raise Refused(f"/static/{name}: no such file", 404)
        data = (STATIC / name).read_bytes()
        headers = {"Content-Security-Policy": _PAGE_CSP} if name.endswith(".html") else {}
        self._send(200, data, _TYPES.get(Path(name).suffix, "application/octet-stream"), headers)

    def _file(self, rel: str) -> None:
        path = self.bench.sandbox.resolve(rel)
        try:
            fd = os.open(path, os.O_RDONLY | O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            raise Refused(f"{rel}: no such file", 404) from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise Refused(f"{rel}: not a file", 404)
            ctype = _TYPES.get(path.suffix.lower()) or mimetypes.guess_type(path.name)[0] or \
                "application/octet-stream"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(st.st_size))
            self.send_header("Content-Security-Policy", _FILE_CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if self.command != "HEAD":
                shutil.copyfileobj(f, self.wfile, 1 << 16)

    # ------------------------------------------------------------ server-sent events

    def _events(self, job_id: str, q: dict[str, list[str]]) -> None:
        job = self.bench.jobs.get(job_id)
        if job is None:
            raise Refused("no such job", 404)
        last = self.headers.get("Last-Event-ID") or q.get("from", [""])[0]
        n = int(last) + 1 if last.lstrip("-").isdigit() and self.headers.get("Last-Event-ID") else \
            int(last) if last.isdigit() else 0
        if job.over and n >= len(job.events):
            self._send(204, b"", "text/plain")  # over and all seen: the browser stops reconnecting
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.send_header("Connection", "close")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.close_connection = True
        self.wfile.write(b"retry: 1000\n\n")
        self.wfile.flush()
        while True:
            events = job.since(n, timeout=10.0)
            if not events:
                if job.over:
                    return
                self.wfile.write(b": waiting\n\n")
                self.wfile.flush()
                continue
            chunk = "".join(f"id: {ev['seq']}\ndata: {json.dumps(ev)}\n\n" for ev in events)
            self.wfile.write(chunk.encode())
            self.wfile.flush()
            n = events[-1]["seq"] + 1
            if events[-1]["event"] == "end":
                return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(root: Path, port: int = DEFAULT_PORT, token: str | None = None) -> tuple[_Server, Bench]:
    """The server on 127.0.0.1:``port`` (0: any free port), not started yet."""
    if not Path(root).is_dir():
        raise BufferlabError(f"error: {root}: not a folder\n  hint: bufferlab serve DIR serves a folder of "
                             "scenarios, Mininet scripts and results (default: the current one)")
    try:
        server = _Server(("127.0.0.1", port), Handler)
    except OSError as e:
        raise BufferlabError(f"error: cannot listen on 127.0.0.1:{port} ({e.strerror})\n  hint: choose "
                             "another port with --port N (0: any free port)") from None
    bench = Bench(root, server.server_address[1], token)
    handler = type("BoundHandler", (Handler,), {"bench": bench})
    server.RequestHandlerClass = handler
    return server, bench


def serve(root: Path, port: int = DEFAULT_PORT, open_browser: bool = False) -> int:
    """``bufferlab serve``: until Ctrl-C, which stops the runs under way as Ctrl-C stops a run
    (their finished parts kept) and then the server."""
    server, bench = make_server(root, port)
    url = f"http://127.0.0.1:{bench.port}/?token={bench.token}"
    print(f"bufferlab serve: {bench.root}\n    {url}\n(only from this machine; Ctrl-C stops it)", flush=True)
    if open_browser:
        webbrowser.open_new_tab(url)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    signal.signal(signal.SIGTERM, _terminate)
    try:
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stopped = bench.jobs.stop_all()
        server.shutdown()
        server.server_close()
        for job in stopped:
            print(f"bufferlab serve: stopped {job.kind} of {job.source}; what it finished is in "
                  f"{bench.root / job.results}", file=sys.stderr)
    print("bufferlab serve: stopped", file=sys.stderr)
    return 130


def _terminate(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the server as Ctrl-C does


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
