"""Issue 30, "Must have" 1-3: never destroy what is not ours.

- Only a folder bufferlab marked (``.bufferlab-results``), or an older one it recognises
  by its files, is ever replaced; ``-o`` resolving to anything else is an error naming it
  (``run -o .`` beside ``lab/lab.toml`` deleted ``lab/``; ``mininet`` the script's folder).
- The last complete run survives any number of partial ones.
- ``convert`` never overwrites without ``--force``, never its input.
- Every file any command writes goes through safefs (an AST scan of the package, then
  planted symlinks for sweep, compare and convert).
- One writer per results folder: a second run or sweep is refused naming the holder; a
  dead holder's lock is taken over.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bufferlab import load_scenario
from bufferlab.cli import main
from bufferlab.results_folder import MARKER, kind_of, lock_path, read_marker, write_marker
from bufferlab.run.engine import Engine
from bufferlab.run.scheduler import Runner

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "bufferlab"

TOPOLOGY = """[topology]
hosts = ["h1", "h2", "h3"]
switches = ["s1", "s2"]
links = [["h1", "s1"], ["s1", "s2"], ["s2", "h3"], ["h2", "s1"]]
"""

#: one quick part (a second of simulated time)
ONE = f"""name = "own"
seed = 1
[params]
n = 2
{TOPOLOGY}
[[part]]
name = "a"
cmds = ["h1: ping 10.0.0.3 -c ${{n}}"]
"""

#: part b starts at 6 s of simulated time (part a, then the gap)
TWO = ONE + """
[[part]]
name = "b"
cmds = ["h1: ping 10.0.0.3 -c 2"]
"""


def _scenario(folder: Path, text: str = ONE, name: str = "own.toml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    return folder / name


def _tree(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): (p.read_text() if p.is_file() else "/")
            for p in sorted(folder.rglob("*"))}


def _run(scenario: Path, out: Path, *args: str) -> int:
    return main(["run", str(scenario), "-o", str(out), "-q", "--no-report", *args])


# ---------------------------------------------------------------- ownership


def test_run_o_dot_beside_the_scenario_folder_is_refused(tmp_path, monkeypatch, capsys):
    """The issue's reproduction: `bufferlab run lab/lab.toml -o .` deleted lab/."""
    lab = tmp_path / "lab"
    _scenario(lab, ONE.replace('name = "own"\n', ""), "lab.toml")
    (lab / "notes.txt").write_text("my notes\n")
    before = _tree(lab)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "-q", "lab/lab.toml", "-o", "."]) == 2
    err = capsys.readouterr().err
    assert "error: lab: is a folder bufferlab did not write (it holds lab.toml, notes.txt)" in err
    assert "hint: choose another folder with -o" in err and "Traceback" not in err
    assert _tree(lab) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab"]  # no lock file, no .prev


def test_mininet_o_dot_never_deletes_the_scripts_folder(tmp_path, monkeypatch, capsys):
    lab = tmp_path / "lab"
    lab.mkdir()
    (lab / "lab.py").write_text("raise SystemExit(0)\n")
    before = _tree(lab)
    monkeypatch.chdir(tmp_path)
    assert main(["mininet", "-o", ".", "lab/lab.py"]) == 2
    assert "is a folder bufferlab did not write (it holds lab.py)" in capsys.readouterr().err
    assert _tree(lab) == before
    # its own results folder, made once and marked, holds the script: not replaced either
    out = tmp_path / "out"
    assert main(["mininet", "-o", str(out), "lab/lab.py"]) == 0
    assert read_marker(out / "lab") == {"tool": "bufferlab", "version": read_marker(out / "lab")["version"],
                                        "kind": "mininet", "complete": True}
    (out / "lab" / "lab.py").write_text("raise SystemExit(0)\n")
    assert main(["mininet", "-o", str(out), str(out / "lab" / "lab.py")]) == 2
    assert "which this Mininet run reads" in capsys.readouterr().err
    assert (out / "lab" / "lab.py").is_file()


@pytest.mark.parametrize(("plant", "message"), [
    ("file", "is a file, not a results folder"),
    ("sweep", "holds a bufferlab sweep, which a run does not replace"),
    ("compare", "holds a bufferlab comparison, which a run does not replace"),
    ("user", "is a folder bufferlab did not write (it holds data.csv)"),
])
def test_what_a_run_does_not_replace(tmp_path, capsys, plant, message):
    sc = _scenario(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    root = out / "own"
    if plant == "file":
        root.write_text("mine\n")
    else:
        root.mkdir()
        (root / "data.csv").write_text("1,2\n")
        if plant != "user":
            write_marker(root, plant)
    before = _tree(out)
    assert _run(sc, out) == 2
    err = capsys.readouterr().err
    assert f"error: {root}: {message}" in err and "hint:" in err
    assert _tree(out) == before


def test_the_scenario_inside_its_own_results_folder_is_not_replaced(tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(_scenario(tmp_path / "src"), out) == 0
    sc = _scenario(out / "own")  # saved into the (marked) results folder
    assert _run(sc, out) == 2
    assert "holds" in capsys.readouterr().err
    assert sc.is_file() and not (out / "own.prev").exists()


def test_an_empty_folder_or_an_older_bufferlabs_results_are_replaced(tmp_path):
    sc = _scenario(tmp_path / "src")
    out = tmp_path / "out"
    (out / "own").mkdir(parents=True)
    assert _run(sc, out) == 0
    # a run folder of a version without the marker: recognised by run.json
    for f in ("own/" + MARKER,):
        (out / f).unlink()
    (out / "own" / "stray.txt").write_text("from that run\n")
    assert kind_of(out / "own") == "run"
    assert _run(sc, out) == 0
    assert not (out / "own" / "stray.txt").exists() and not (out / "own.prev").exists()
    # and by summary.json alone (a run killed before it wrote run.json)
    (out / "own" / MARKER).unlink()
    (out / "own" / "run.json").unlink()
    assert kind_of(out / "own") == "run"
    assert _run(sc, out) == 0
    assert read_marker(out / "own")["complete"] is True and sorted(p.name for p in out.iterdir()) == ["own"]


def test_a_symlink_at_the_results_place_is_unlinked_never_followed(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "own").symlink_to(victim, target_is_directory=True)
    assert _run(_scenario(tmp_path / "src"), out) == 0
    assert _tree(victim) == {"keep": "precious\n"}
    assert not (out / "own").is_symlink() and (out / "own" / "summary.json").is_file()


# ---------------------------------------------------------------- the last complete run


def _interrupted_run(sc: Path, out: Path, monkeypatch) -> None:
    """A run Ctrl-C'd in its part b."""
    real = Engine.run

    def ctrl_c(self, until_ns):
        if self.now_ns > 6_500_000_000:
            raise KeyboardInterrupt
        return real(self, until_ns)

    monkeypatch.setattr(Engine, "run", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        Runner(load_scenario(sc), out).run()
    monkeypatch.setattr(Engine, "run", real)


def test_partial_runs_never_push_out_the_last_complete_one(tmp_path, monkeypatch):
    sc = _scenario(tmp_path / "src", TWO)
    out = tmp_path / "out"
    Runner(load_scenario(sc), out).run()
    complete = json.loads((out / "own" / "summary.json").read_text())
    assert read_marker(out / "own")["complete"] is True
    for _ in range(3):  # interrupted again and again: the complete run stays as .prev
        _interrupted_run(sc, out, monkeypatch)
        assert read_marker(out / "own")["complete"] is False
        assert json.loads((out / "own" / "summary.json").read_text())["interrupted"] == "SIGINT"
        assert json.loads((out / "own.prev" / "summary.json").read_text()) == complete
        assert read_marker(out / "own.prev")["complete"] is True
    Runner(load_scenario(sc), out).run()  # complete again: the older one goes
    assert sorted(p.name for p in out.iterdir()) == ["own"]
    assert json.loads((out / "own" / "summary.json").read_text()) == complete


def test_an_older_partial_run_is_recognised_by_its_summary(tmp_path, monkeypatch):
    """No marker (an older bufferlab): a summary.json with "interrupted" is a partial run."""
    sc = _scenario(tmp_path / "src", TWO)
    out = tmp_path / "out"
    Runner(load_scenario(sc), out).run()
    _interrupted_run(sc, out, monkeypatch)
    for root in (out / "own", out / "own.prev"):
        (root / MARKER).unlink()
    _interrupted_run(sc, out, monkeypatch)
    assert "interrupted" not in json.loads((out / "own.prev" / "summary.json").read_text())


# ---------------------------------------------------------------- convert

MN = Path(__file__).parent / "data" / "lab.mn"


def test_convert_never_overwrites_without_force_nor_its_input(tmp_path, capsys):
    mn = tmp_path / "lab.mn"
    mn.write_bytes(MN.read_bytes())
    mine = tmp_path / "lab.toml"
    mine.write_text("# written by hand\n")
    assert main(["convert", str(mn)]) == 2
    err = capsys.readouterr().err
    assert f"error: {mine}: exists; convert does not overwrite it" in err and "--force" in err
    assert mine.read_text() == "# written by hand\n"
    assert main(["convert", str(mn), "--force"]) == 0
    assert mine.read_text().startswith("# Converted from lab.mn")
    # its own input, named .toml, or given as -o: never, --force or not
    named = tmp_path / "drawing.toml"
    named.write_bytes(MN.read_bytes())
    for argv in (["convert", str(named)], ["convert", str(mn), "-o", str(mn), "--force"]):
        assert main(argv) == 2
        assert "is the input file itself" in capsys.readouterr().err
    assert named.read_bytes() == MN.read_bytes() and mn.read_bytes() == MN.read_bytes()


def test_convert_never_writes_through_a_symlink(tmp_path, capsys):
    victim = tmp_path / "victim.toml"
    victim.write_text("precious\n")
    link = tmp_path / "out.toml"
    link.symlink_to(victim)
    assert main(["convert", str(MN), "-o", str(link)]) == 2  # a link is something there
    assert main(["convert", str(MN), "-o", str(link), "--force"]) == 0
    assert victim.read_text() == "precious\n"
    assert not link.is_symlink() and link.read_text().startswith("# Converted")


# ---------------------------------------------------------------- no write through a link

#: (module, call) -> why it may write or delete outside safefs
ALLOWED = {
    ("safefs.py", "os.open"): "the no-follow writer itself",
    ("safefs.py", "shutil.rmtree"): "remove_tree: a link is unlinked first, rmtree does not follow links",
    ("safefs.py", "rename"): "write_atomic's os.replace: a rename replaces a link, never its target",
    ("results_folder.py", "rename"): "a marked run folder becomes <name>.prev (results_folder.fresh)",
    ("formats/plot_iperf.py", "shutil.rmtree"): "plot_iperf.sh's `rm -rf results/*` in the folder "
                                                 "ensure_dir made; links are unlinked, not followed",
    ("real/delayline.py", "os.open"): "opens the kernel's /dev/net/tun device (a tap for the delay "
                                      "line of run --real), not a file in a results folder",
    ("sweep/runs.py", "rename"): "<run-id>.partial becomes <run-id> in the sweep's own runs/ "
                                 "(remove_tree cleared the place first)",
}

#: writers that take a destination: name -> (position, keyword) of the destination argument
DEST = {"to_parquet": (0, "path"), "to_csv": (0, "path_or_buf"), "to_json": (0, "path_or_buf"),
        "to_feather": (0, "path"), "to_excel": (0, "excel_writer"), "to_pickle": (0, "path"),
        "to_html": (0, "buf"), "savefig": (0, "fname"), "write_table": (1, "where"),
        "write_csv": (1, "output_file"), "ParquetWriter": (0, "where"), "CSVWriter": (0, "sink"),
        "write_feather": (1, "dest"), "imsave": (0, "fname"), "savez": (0, "file"), "tofile": (0, "fid"),
        "dump": (1, "fp"), "savetxt": (0, "fname"), "save": (0, "file")}
_WRITE_FLAGS = {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"}


def _arg(call: ast.Call, pos: int, kw: str) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == kw:
            return k.value
    return call.args[pos] if len(call.args) > pos else None


def _writes_mode(mode: ast.expr | None) -> bool:
    if mode is None:
        return False
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                and not set(mode.value) & set("wax+"))


def _plain_writes(py: Path) -> list[tuple[int, str, str]]:
    """(line, call kind, source) of every write or delete in ``py`` not through safefs."""
    tree = ast.parse(py.read_text(encoding="utf-8"))
    from_safefs = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                   and (n.module or "").split(".")[-1] == "safefs" for a in n.names}
    if py.name == "safefs.py":
        from_safefs.add("open_write")
    # names bound to a file object safefs opened (or an in-memory buffer)
    safe: set[str] = {"sys"}
    for n in ast.walk(tree):
        pairs = ([(i.optional_vars, i.context_expr) for i in n.items] if isinstance(n, ast.With)
                 else [(t, n.value) for t in n.targets] if isinstance(n, ast.Assign) else [])
        for target, value in pairs:
            if isinstance(target, ast.Name) and isinstance(value, ast.Call):
                fn = ast.unparse(value.func)
                opener = fn.split(".")[-1] in ("open_write", "open_atomic")
                if (opener or fn.split(".")[-1] in ("BytesIO", "StringIO")) and \
                        (not opener or fn in from_safefs or fn.startswith("safefs.")):
                    safe.add(target.id)
    found = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Call):
            continue
        fn = ast.unparse(n.func)
        last = fn.split(".")[-1]
        bad = None
        if isinstance(n.func, ast.Name) and n.func.id in from_safefs:
            continue  # safefs's own writers
        if fn == "open" or fn in ("gzip.open", "bz2.open", "lzma.open", "io.open", "codecs.open"):
            bad = "open" if _writes_mode(_arg(n, 1, "mode")) else None
        elif fn == "os.open":
            names = {x.attr if isinstance(x, ast.Attribute) else getattr(x, "id", "")
                     for x in ast.walk(n.args[1])} if len(n.args) > 1 else set()
            bad = "os.open" if names & _WRITE_FLAGS else None
        elif last == "open" and isinstance(n.func, ast.Attribute):
            bad = "open" if _writes_mode(_arg(n, 0, "mode")) else None
        elif last in ("write_text", "write_bytes", "touch", "symlink_to", "hardlink_to") and \
                isinstance(n.func, ast.Attribute) or fn in ("os.symlink", "os.link"):
            bad = last
        elif last in ("GzipFile", "ZipFile", "TarFile"):  # on a path unless given a file object
            bad = last if _arg(n, 3, "fileobj") is None and _writes_mode(_arg(n, 1, "mode")) else None
        elif last in DEST:
            dest = _arg(n, *DEST[last])
            if dest is not None and not (isinstance(dest, ast.Name) and dest.id in safe):
                bad = last
        elif fn in ("shutil.rmtree", "shutil.move", "shutil.copy", "shutil.copy2", "shutil.copyfile",
                    "shutil.copytree"):
            bad = fn
        elif last in ("rename", "replace") and (fn.startswith("os.") or isinstance(n.func, ast.Attribute)
                                                and last == "rename"):
            bad = "rename"
        if bad:
            found.append((n.lineno, bad, ast.unparse(n)))
    return found


def test_every_write_goes_through_safefs():
    """No module of the package writes (or removes a tree) with a plain open/write_text/
    to_parquet/savefig/... on a path: a symlink planted there would be followed."""
    offenders = []
    for py in sorted(PACKAGE.rglob("*.py")):
        rel = py.relative_to(PACKAGE).as_posix()
        for line, kind, src in _plain_writes(py):
            if (rel, kind) not in ALLOWED:
                offenders.append(f"python/bufferlab/{rel}:{line}: {src}")
    assert offenders == [], "write through safefs (open_write, write_text, write_atomic, savefig, " \
                            "ensure_dir, remove_tree):\n" + "\n".join(offenders)


def test_the_scan_sees_plain_writes(tmp_path):
    py = tmp_path / "m.py"
    py.write_text("from pathlib import Path\nimport shutil, os\nfrom ..safefs import open_write, savefig\n"
                  "def f(p, df, fig, t):\n"
                  "    open(p, 'w'); p.open('a'); p.write_text('x'); p.write_bytes(b'')\n"
                  "    df.to_parquet(p / 'x'); fig.savefig(str(p)); pq.write_table(t, p); shutil.rmtree(p)\n"
                  "    os.open(p, os.O_WRONLY | os.O_CREAT); p.rename(p)\n"
                  "    with open_write(p, 'wb') as f:\n        df.to_parquet(f); pq.write_table(t, f)\n"
                  "    savefig(fig, p); open(p); p.open('rb'); df.to_csv()\n"
                  "    p.touch(); np.savetxt(p, t); gzip.GzipFile(p, 'wb'); gzip.GzipFile('', 'wb', 9, f)\n")
    kinds = [k for _, k, _ in _plain_writes(py)]
    assert kinds == ["open", "open", "write_text", "write_bytes", "to_parquet", "savefig", "write_table",
                     "shutil.rmtree", "os.open", "rename", "touch", "savetxt", "GzipFile"]


# ---------------------------------------------------------------- sweep, compare: planted links

SWEEP = """scenario = "{scenario}"
name = "own"
seeds = 1
[grid]
n = [2]
"""


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim"
    v.mkdir()
    (v / "target").write_text("precious\n")
    (v / "dir").mkdir()
    (v / "dir" / "keep").write_text("precious\n")
    return v


def _untouched(v: Path) -> None:
    assert _tree(v) == {"dir": "/", "dir/keep": "precious\n", "target": "precious\n"}


def _sweep(tmp_path: Path, *args: str) -> int:
    sc = _scenario(tmp_path / "src")
    f = tmp_path / "src" / "s.toml"
    f.write_text(SWEEP.format(scenario=sc.as_posix()))
    return main(["sweep", str(f), "-o", str(tmp_path / "out"), "--no-progress", "-j", "1", *args])


def test_sweep_never_writes_through_planted_links(tmp_path, capsys):
    v = _victim(tmp_path)
    folder = tmp_path / "out" / "own"
    folder.mkdir(parents=True)
    write_marker(folder, "sweep")
    (folder / "sweep.parquet").symlink_to(v / "target")
    (folder / "tables").symlink_to(v / "dir", target_is_directory=True)
    (folder / "runs").symlink_to(v / "dir", target_is_directory=True)
    assert _sweep(tmp_path) == 0
    _untouched(v)
    for name in ("sweep.parquet", "tables", "runs"):
        assert not (folder / name).is_symlink()
    assert (folder / "tables" / "flows.parquet").is_file()
    # links at a run's folder, finished and under way, and in the tables: --force reruns through them
    (run_id,) = [p.name for p in (folder / "runs").iterdir()]
    runs = folder / "runs"
    os.rename(runs / run_id, tmp_path / "moved")
    (runs / run_id).symlink_to(v / "dir", target_is_directory=True)
    (runs / f"{run_id}.partial").symlink_to(v / "dir", target_is_directory=True)
    (folder / "tables" / "flows.parquet").unlink()
    (folder / "tables" / "flows.parquet").symlink_to(v / "target")
    assert _sweep(tmp_path, "--force") == 0
    _untouched(v)
    assert not [p for p in folder.rglob("*") if p.is_symlink()]
    # the sweep folder itself a link
    os.rename(folder, tmp_path / "old")
    folder.symlink_to(v / "dir", target_is_directory=True)
    assert _sweep(tmp_path) == 0
    _untouched(v)
    assert read_marker(folder)["kind"] == "sweep"
    # sweep plot's page and plots
    (folder / "sweep.html").symlink_to(v / "target")
    (folder / "plots").mkdir()
    (folder / "plots" / "goodput_bps-vs-n.png").symlink_to(v / "target")
    assert main(["sweep", "plot", str(folder), "--x", "n", "--y", "goodput_bps"]) == 0
    _untouched(v)
    assert not [p for p in folder.rglob("*") if p.is_symlink()]


def test_sweep_into_a_folder_it_did_not_write_is_refused(tmp_path, capsys):
    folder = tmp_path / "out" / "own"
    folder.mkdir(parents=True)
    (folder / "thesis.tex").write_text("mine\n")
    assert _sweep(tmp_path) == 2
    err = capsys.readouterr().err
    assert f"error: {folder}: is a folder bufferlab did not write (it holds thesis.tex)" in err
    assert _tree(folder) == {"thesis.tex": "mine\n"}


def test_compare_o_is_a_marked_folder_and_never_writes_through_links(tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(_scenario(tmp_path / "src"), out) == 0
    dest = tmp_path / "cmp"
    dest.mkdir()
    (dest / "mine.txt").write_text("mine\n")
    assert main(["compare", str(out / "own"), "-o", str(dest)]) == 2
    err = capsys.readouterr().err
    assert f"error: {dest}: is a folder bufferlab did not write (it holds mine.txt)" in err
    (dest / "mine.txt").unlink()
    v = _victim(tmp_path)
    for name in ("compare.html", "compare.csv", "ping_rtt.png"):
        (dest / name).symlink_to(v / "target")
    assert main(["compare", str(out / "own"), "-o", str(dest)]) == 0
    _untouched(v)
    assert read_marker(dest)["kind"] == "compare"
    assert not [p for p in dest.rglob("*") if p.is_symlink()]
    assert (dest / "ping_rtt.png").stat().st_size > 0


# ---------------------------------------------------------------- one writer

HOLD = """import sys, time
from pathlib import Path
from bufferlab.results_folder import acquire
acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(120)
"""


def test_a_second_writer_is_refused_naming_the_holder_and_a_dead_ones_lock_taken_over(tmp_path, capsys):
    out = tmp_path / "out"
    sc = _scenario(tmp_path / "src")
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(out / "own")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert _run(sc, out) == 2
        err = capsys.readouterr().err
        assert f"error: {out / 'own'}: is being written by another bufferlab (pid {holder.pid}, `" in err
        assert "started 20" in err and "hint: wait until it ends" in err
        assert _sweep(tmp_path) == 2  # a sweep named like it writes the same folder
        assert f"pid {holder.pid}" in capsys.readouterr().err
        assert not (out / "own").exists()
    finally:
        holder.kill()  # SIGKILL: its lock file stays behind
        holder.wait()
    assert lock_path(out / "own").is_file()
    assert _run(sc, out) == 0  # the kernel dropped the dead holder's lock: taken over
    assert not lock_path(out / "own").exists()  # and removed at the end


def test_a_lock_file_planted_as_a_link_is_replaced(tmp_path):
    v = _victim(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    lock_path(out / "own").symlink_to(v / "target")
    assert _run(_scenario(tmp_path / "src"), out) == 0
    _untouched(v)
    assert sorted(p.name for p in out.iterdir()) == ["own"]


def test_o_through_a_file_is_an_error_naming_it(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("mine\n")
    sc = _scenario(tmp_path / "src")
    (tmp_path / "src" / "s.toml").write_text(SWEEP.format(scenario=sc.as_posix()))
    assert _run(sc, tmp_path / "out") == 0
    for argv in (["sweep", str(tmp_path / "src" / "s.toml"), "-o", str(f), "--no-progress"],
                 ["run", str(sc), "-o", str(f), "-q"],
                 ["compare", str(tmp_path / "out" / "own"), "-o", str(f / "x")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert str(f) in err and "Traceback" not in err, argv
    assert f.read_text() == "mine\n"


def test_older_folders_are_recognised_by_their_files(tmp_path):
    cases = {"run": {"run.json": '{"started": "x", "started_unix": 1.0, "wall_s": 1.0}'},
             "run-summary": {"summary.json": '{"scenario": "s", "parts": []}'},
             "sweep": {"sweep.parquet": "PAR1"}, "sweep-runs": {"runs/0123456789abcdef.partial/x": ""},
             "compare": {"compare.html": "<!DOCTYPE html>"}, "user": {"run.json": "[1]", "notes.txt": ""}}
    for name, files in cases.items():
        for rel, text in files.items():
            (tmp_path / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / rel).write_text(text)
    assert {n: kind_of(tmp_path / n) for n in cases} == {
        "run": "run", "run-summary": "run", "sweep": "sweep", "sweep-runs": "sweep", "compare": "compare",
        "user": None}


def test_mn_never_replaces_a_folder_it_did_not_write(tmp_path, capsys):
    (tmp_path / "mn").mkdir()
    (tmp_path / "mn" / "topo.py").write_text("# mine\n")
    assert main(["mn", "--topo", "linear,2", "--test", "pingall", "-o", str(tmp_path)]) == 2
    assert "is a folder bufferlab did not write (it holds topo.py)" in capsys.readouterr().err
    assert _tree(tmp_path / "mn") == {"topo.py": "# mine\n"}


def test_the_api_writes_where_it_did_after_a_refused_mn(tmp_path, monkeypatch, capsys):
    """``bufferlab mn -o X`` that stopped on X's folder left the Mininet API of the same process
    pointed at X/mn, so the next ``Mininet().start()`` met the same refusal."""
    from bufferlab.mininet.net import Mininet

    (tmp_path / "mn").mkdir()
    (tmp_path / "mn" / "topo.py").write_text("# mine\n")
    assert main(["mn", "--topo", "linear,2", "--test", "pingall", "-o", str(tmp_path)]) == 2
    monkeypatch.chdir(tmp_path / "mn")
    net = Mininet()
    net.addLink(net.addHost("h1"), net.addHost("h2"))
    net.start()
    net.stop()
    assert (tmp_path / "mn" / "results" / "mininet" / "summary.json").is_file()
    assert _tree(tmp_path / "mn")["topo.py"] == "# mine\n"


LONG = f"""name = "own"
seed = 1
{TOPOLOGY}
[[part]]
name = "first"
cmds = ["h3: iperf3 -s &", "h1: ping 10.0.0.3 -c 2"]

[[part]]
name = "long"
cmds = ["h1: iperf3 -c 10.0.0.3 -t 600 > long.txt"]
"""


def test_two_runs_into_one_folder_at_once(tmp_path, capsys):
    """The second run stops at once naming the first, which goes on undisturbed; the
    previous complete run is still there when the first is stopped."""
    sc = _scenario(tmp_path / "src")
    out = tmp_path / "out"
    assert _run(sc, out) == 0
    complete = (out / "own" / "summary.json").read_text()
    long = _scenario(tmp_path / "long", LONG)  # results in out/own too
    first = subprocess.Popen([sys.executable, "-m", "bufferlab.cli", "run", str(long), "-o", str(out), "-q"],
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / "own" / "first").is_dir():  # part "first" under way
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.02)
        assert _run(sc, out) == 2
        err = capsys.readouterr().err
        assert f"is being written by another bufferlab (pid {first.pid}, `bufferlab run {long}" in err
        assert _sweep(tmp_path) == 2 and f"pid {first.pid}" in capsys.readouterr().err
        assert main(["report", str(out / "own")]) == 2  # it would rewrite the tables under the run
        assert f"pid {first.pid}" in capsys.readouterr().err
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        _, first_err = first.communicate(timeout=60)
    assert first.returncode == 143, first_err
    assert (out / "own.prev" / "summary.json").read_text() == complete
    assert not lock_path(out / "own").exists()


ORPHAN = """import os, sys, time
from pathlib import Path
from bufferlab.results_folder import acquire
acquire(Path(sys.argv[1]))
if os.fork():
    os._exit(0)  # the holder ends; its child (a sweep's worker, say) keeps the lock
print(os.getpid(), flush=True)
time.sleep(120)
"""


def test_a_lock_kept_by_a_dead_holders_children_says_so(tmp_path, capsys):
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", ORPHAN, str(out / "own")], stdout=subprocess.PIPE)
    assert holder.stdout is not None
    child = int(holder.stdout.readline())
    holder.wait()
    try:
        assert _run(_scenario(tmp_path / "src"), out) == 2
        assert f"(pid {holder.pid}, no longer running: processes it started still hold the lock" in \
            capsys.readouterr().err
    finally:
        os.kill(child, signal.SIGKILL)


KILLED_SWEEP = """import os, sys, time
from pathlib import Path
from bufferlab import results_folder
from bufferlab.sweep.executors import worker_init
results_folder.acquire(Path(sys.argv[1]))
parent = os.getpid()
ready_r, ready_w = os.pipe()
if os.fork() == 0:
    worker_init(parent)  # a sweep's pool worker, forked with the sweep's lock file open
    os.write(ready_w, b"x")
    time.sleep(120)
    os._exit(0)
os.read(ready_r, 1)
for held in results_folder._HELD.values():
    os.close(held.f.fileno())  # what the kernel does for a sweep killed with SIGKILL
print("closed", flush=True)
time.sleep(120)
"""


def test_a_killed_sweeps_lock_is_not_kept_by_its_workers(tmp_path):
    """tools/fuzz_signals.py (campaign 6, trial 356 of seed 33): right after SIGKILL to a sweep
    its lock was still held, by a worker not yet gone: fork had shared the lock's open file
    with it. Workers now close their copy, so the lock dies with the sweep itself."""
    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", KILLED_SWEEP, str(out / "own")], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"closed\n"
        assert _run(_scenario(tmp_path / "src"), out) == 0  # the worker, still alive, holds nothing
    finally:
        holder.kill()
        holder.wait()


def test_a_prev_folder_bufferlab_did_not_write_is_left_alone(tmp_path, capsys):
    sc = _scenario(tmp_path / "src")
    out = tmp_path / "out"
    (out / "own.prev").mkdir(parents=True)
    (out / "own.prev" / "mine.txt").write_text("mine\n")
    assert _run(sc, out) == 0  # nothing to move there: the run goes on, own.prev untouched
    assert _tree(out / "own.prev") == {"mine.txt": "mine\n"}
    assert _run(sc, out) == 2  # now the run would move its previous folder there: refused
    assert f"error: {out / 'own.prev'}: is a folder bufferlab did not write" in capsys.readouterr().err
    assert _tree(out / "own.prev") == {"mine.txt": "mine\n"} and (out / "own" / "summary.json").is_file()


def test_a_signal_while_taking_the_lock_leaves_no_lock_file(tmp_path, monkeypatch):
    """tools/fuzz_signals.py (campaign 5): SIGTERM while acquire wrote the holder's line (after
    its flock) left .<name>.lock behind: the lock was registered only once written."""
    from bufferlab import results_folder
    from bufferlab.run.scheduler import Interrupted

    def interrupted() -> str:
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(results_folder, "_command", interrupted)
    with pytest.raises(Interrupted):
        results_folder.acquire(tmp_path / "lab")
    results_folder.release_all()
    assert not lock_path(tmp_path / "lab").exists()


def test_a_removal_cut_short_leaves_a_partial_run_not_a_complete_one(tmp_path, monkeypatch):
    """tools/fuzz_signals.py (campaign 5): SIGKILL while a completed run removed the previous
    one left ``<name>.prev`` marked complete with its summary.json already gone."""
    from bufferlab import results_folder

    prev = tmp_path / "lab.prev"
    prev.mkdir()
    results_folder.write_marker(prev, "run", complete=True)
    (prev / "summary.json").write_text("{}")

    def killed(path) -> None:  # noqa: ANN001 - the removal stops before the first file goes
        raise KeyboardInterrupt

    monkeypatch.setattr(results_folder, "remove_tree", killed)
    with pytest.raises(KeyboardInterrupt):
        results_folder.discard(prev)
    assert results_folder.read_marker(prev)["complete"] is False and not results_folder.complete(prev)
    monkeypatch.undo()
    results_folder.discard(prev)
    assert not prev.exists()


SLOW_TO_SAY = """import fcntl, json, os, sys, time
f = open(sys.argv[1], "a")
fcntl.flock(f.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(0.15)  # a holder between its flock and writing who it is
f.write(json.dumps({"pid": os.getpid(), "command": "bufferlab run slow.toml", "started": "now"}) + "\\n")
f.flush()
time.sleep(30)
"""


def test_a_writer_refused_in_the_holders_first_moment_still_names_it(tmp_path, capsys):
    """tools/fuzz_signals.py (campaign 6): a `report` 48 ms after a `run` of the same folder was
    refused with "another process (it has not said which yet)": the run held the lock and had not
    written who it is. The refused writer waits a moment for that."""
    from bufferlab.results_folder import FolderError, acquire, lock_path

    folder = tmp_path / "out" / "own"
    lock = lock_path(folder)
    lock.parent.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", SLOW_TO_SAY, str(lock)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        with pytest.raises(FolderError) as e:
            acquire(folder)
        assert f"pid {holder.pid}, `bufferlab run slow.toml`" in str(e.value)
    finally:
        holder.kill()
        holder.wait()
