"""Signals in every long command (issue 30, item 4): SIGINT and SIGTERM stop `sweep` with its
pool workers, `mininet` and `mn`, the finished results kept and the state resumable; workers
die with the sweep, SIGKILL included; Ctrl-C while the command is still importing prints one
line, no traceback. Each test starts the CLI as a user would (a process of its own)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from conftest import TWO_HOSTS

#: four runs on two workers: the two short ones finish within a second, the long ones run on
LONG_SCENARIO = TWO_HOSTS + """
[params]
t = 1

[[part]]
name = "p"
cmds = ["h2: iperf3 -s &", "h1: iperf3 -c 10.0.0.2 -t ${t} > c.txt"]
"""
SWEEP = """scenario = "long.toml"
[grid]
t = [1, 2, 600, 601]
"""


def _cli(*args: str, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "bufferlab.cli", *args], cwd=cwd,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _wait_for(ready, proc: subprocess.Popen[bytes], timeout: float = 30.0,  # noqa: ANN001
              poll_s: float = 0.02) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(poll_s)


def _gone(pids: list[int], timeout: float = 3.0) -> list[int]:
    """The processes among ``pids`` still alive after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive
                 if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.05)
    return alive


def _sweep_running(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, list[int]]:
    """A sweep whose two short runs are finished and whose two workers run the long ones."""
    (tmp_path / "long.toml").write_text(LONG_SCENARIO, encoding="utf-8")
    (tmp_path / "sw.toml").write_text(SWEEP, encoding="utf-8")
    proc = _cli("sweep", "sw.toml", "-o", "out", "-j", "2", "--no-progress", cwd=tmp_path)
    runs = tmp_path / "out" / "sw" / "runs"

    def two_done_two_running() -> bool:
        done = [p for p in runs.glob("*") if p.suffix != ".partial" and (p / "run.json").is_file()]
        return len(done) == 2 and len(list(runs.glob("*.partial"))) == 2

    _wait_for(two_done_two_running, proc)
    workers = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    assert len(workers) >= 2
    return proc, runs, workers


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_sweep_and_its_workers_keeping_the_finished_runs(tmp_path, sig, status):
    proc, runs, workers = _sweep_running(tmp_path)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=10)
    assert proc.returncode == status, err.decode()
    assert f"sweep interrupted by {signal.Signals(sig).name}" in err.decode()
    assert "Traceback" not in err.decode()
    assert _gone(workers) == []
    done = [json.loads((p / "run.json").read_text()) for p in runs.glob("*") if p.suffix != ".partial"]
    assert sorted(r["overrides"]["t"] for r in done) == [1, 2] and {r["status"] for r in done} == {"ok"}
    assert (runs.parent / "sweep.parquet").is_file()
    # resumable: the same command would run only the two missing runs
    dry = subprocess.run([sys.executable, "-m", "bufferlab.cli", "sweep", "sw.toml", "-o", "out",
                          "--dry-run"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert "4 runs, 2 to run" in dry.stdout, dry.stderr


def test_the_workers_die_with_a_killed_sweep(tmp_path):
    proc, _runs, workers = _sweep_running(tmp_path)
    assert all(os.getpgid(w) != os.getpgid(proc.pid) for w in workers), "workers in their own group"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert _gone(workers) == []


@pytest.mark.parametrize("delay", [0.2, 0.35, 0.5, 0.7, 0.9])
def test_ctrl_c_while_the_command_imports_prints_no_traceback(tmp_path, delay):
    (tmp_path / "t.toml").write_text(LONG_SCENARIO, encoding="utf-8")
    proc = _cli("check", "t.toml", cwd=tmp_path)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, out = proc.communicate(timeout=30)
    err = out.decode()
    if "Traceback" in err and "bufferlab" not in err:
        pytest.skip("the signal landed in the interpreter's own start-up, before bufferlab's first line")
    assert "Traceback" not in err and "Exception ignored" not in err, err
    if proc.returncode == -signal.SIGINT and not err:
        return  # the check had ended: the signal came while the interpreter shut down
    assert proc.returncode in (0, 130), err
    if proc.returncode == 130:
        assert err.strip() == "bufferlab: interrupted"


#: a script that starts a ping to a file, then waits for its CLI's input (the signal comes then)
PING_SCRIPT = """from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo
from mininet.cli import CLI
import time
net = Mininet(topo=SingleSwitchTopo(2))
net.start()
h1 = net.get("h1")
h1.cmd("ping 10.0.0.2 -i 0.2 > ping.txt &")
time.sleep(3)
print("ready", flush=True)
CLI(net)
net.stop()
"""
#: a script that never ends on its own, in simulated time
SLEEPER = PING_SCRIPT.replace("CLI(net)", "while True:\n    time.sleep(1)")


@pytest.mark.parametrize(("script", "sig", "status"), [
    (PING_SCRIPT, signal.SIGTERM, 143), (PING_SCRIPT, signal.SIGINT, 130), (SLEEPER, signal.SIGTERM, 143),
])
def test_a_signal_stops_a_mininet_script_with_its_results_written(tmp_path, script, sig, status):
    (tmp_path / "lab.py").write_text(script, encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "bufferlab.cli", "mininet", "-o", "out", "lab.py"],
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"ready\n", proc.communicate()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    name = signal.Signals(sig).name
    assert proc.returncode == status, err.decode()
    assert f"interrupted by {name}" in err.decode() and "Traceback" not in err.decode()
    root = tmp_path / "out" / "lab"
    ping = (root / "ping.txt").read_text()
    assert "icmp_seq=15 " in ping and "packets transmitted" in ping  # Ctrl-C'd: its statistics
    s = json.loads((root / "summary.json").read_text())
    assert s["interrupted"] == name and s["parts"][0]["interrupted"] == name
    assert (root / "tables" / "ping.parquet").is_file() and (root / "report.html").is_file()


def test_a_signal_stops_mn_with_its_results_written(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "bufferlab.cli", "mn", "--topo", "single,2", "-o", "out"],
                            cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"h1 ping -c 2 h2\nh1 echo done\n")
    proc.stdin.flush()
    _wait_for(lambda: b"done" in proc.stdout.readline(), proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err.decode()
    s = json.loads((tmp_path / "out" / "mn" / "summary.json").read_text())
    assert s["interrupted"] == "SIGTERM"
    assert (tmp_path / "out" / "mn" / "report.html").is_file()


def test_an_exception_in_a_mininet_script_still_writes_tables_and_report(tmp_path):
    (tmp_path / "bad.py").write_text(PING_SCRIPT.replace("CLI(net)", "1 / 0"), encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "bufferlab.cli", "mininet", "-o", "out", "bad.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr.startswith("Traceback") and 'bad.py", line 11' in p.stderr and "bufferlab" not in \
        p.stderr.split("ZeroDivisionError")[0]
    root = tmp_path / "out" / "bad"
    s = json.loads((root / "summary.json").read_text())
    assert s["error"] == "bad.py:11: ZeroDivisionError: division by zero"
    assert s["parts"][0]["error"] == s["error"]
    # the script's own failure, with its line (issue 23, item 6)
    assert [(f["where"], f["command"], f["status"]) for f in s["failures"]] == [("bad.py:11", "1 / 0", 1)]
    assert (root / "tables" / "ping.parquet").is_file() and (root / "report.html").is_file()


def test_a_worker_killed_from_outside_is_a_clean_error_and_the_sweep_resumes(tmp_path):
    proc, runs, workers = _sweep_running(tmp_path)
    os.kill(workers[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 2, err.decode()
    assert "a worker process of the sweep died" in err.decode() and "Traceback" not in err.decode()
    assert _gone(workers) == []
    done = [p for p in runs.glob("*") if p.suffix != ".partial"]
    assert len(done) == 2 and (runs.parent / "sweep.parquet").is_file()


# ---------------------------------------------------------------- report, compare, export (item 4)

#: a run whose tables, report, comparison and flent export take seconds to write: an iperf3
#: JSON of 6000 intervals, a traced queue of ~10^5 events
WRITERS = TWO_HOSTS + """[[part]]
name = "a"
cmds = ["s1: tc qdisc add dev s1-eth2 root tbf rate 50mbit burst 32kbit latency 50ms", "h2: iperf3 -s &",
        "h1: ping -c 20 -i 0.2 10.0.0.2 > ping.txt &", "h1: iperf3 -c 10.0.0.2 -u -b 60M -t 5 -J > c.json"]

[[part]]
name = "b"
cmds = ["h1: iperf3 -c 10.0.0.2 -u -b 1M -t 600 -i 0.1 -J > long.json"]

[trace]
queues = ["s1-eth2"]
"""


@pytest.fixture(scope="module")
def written_run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("writers")
    (d / "big.toml").write_text(WRITERS, encoding="utf-8")
    subprocess.run([sys.executable, "-m", "bufferlab.cli", "run", "-q", "--no-report", "big.toml", "-o", "out"],
                   cwd=d, check=True, timeout=600)
    return d / "out" / "big"


def _temporary(folder: Path) -> list[Path]:
    """safefs.open_atomic's files being written (.NAME.tmp)."""
    return [p for p in folder.rglob(".*.tmp")]


@pytest.mark.parametrize(("command", "sig", "status"), [
    ("report", signal.SIGTERM, 143), ("report", signal.SIGINT, 130), ("compare", signal.SIGTERM, 143),
    ("export", signal.SIGTERM, 143),
])
def test_a_signal_stops_a_writer_leaving_every_file_whole(written_run, tmp_path, command, sig, status):
    """report, compare and export --flent (issue 30): SIGTERM (or SIGINT) while they write ends
    them with 128 + the signal and a message; the file being written is not left half-written
    (each is written under .NAME.tmp and renamed once whole), and the results folder's lock goes.
    Before: SIGTERM killed them mid-file (a truncated table, plot or .flent.gz in place)."""
    import pyarrow.parquet as pq

    run = tmp_path / "big"
    shutil.copytree(written_run, run)
    args, watch = {
        "report": (["report", str(run)], run),
        "compare": (["compare", str(run), str(run / "a"), "-o", str(tmp_path / "cmp")], tmp_path / "cmp"),
        "export": (["export", "--flent", str(run), "-o", str(tmp_path / "fl")], tmp_path / "fl"),
    }[command]
    proc = _cli(*args, cwd=tmp_path)
    # a file is being written; export's are small and quick: part a's is written (part b's long
    # iperf3 output still to read). compare's plots take ~50 ms each and its other files far
    # less: its signal goes while the first plot is written, so that it lands while the command
    # is at work (during the last plot it may finish first, and a signal after the work is done
    # is ignored by design: cli.main)
    def ready() -> bool:
        if command == "compare":
            return any(watch.glob(".*.png.tmp")) and not any(watch.glob("*.png"))
        return bool(_temporary(watch) or (command == "export" and any(watch.glob("*.flent.gz"))))

    _wait_for(ready, proc, timeout=120, poll_s=0.002)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    name = signal.Signals(sig).name
    assert proc.returncode == status, err.decode()
    assert f"bufferlab: {command} interrupted by {name}" in err.decode() and "Traceback" not in err.decode()
    assert _temporary(watch) == [] and not (tmp_path / ".big.lock").exists()
    for p in watch.rglob("*"):  # what is there is whole
        if p.suffix == ".parquet":
            pq.read_metadata(p)
        elif p.suffix == ".html":
            assert p.read_bytes().rstrip().endswith(b"</html>"), p
        elif p.suffix == ".gz":
            assert json.loads(gzip.decompress(p.read_bytes())), p
        elif p.suffix == ".png":
            assert p.read_bytes().endswith(b"IEND\xaeB`\x82"), p


ONE_PING = f'name = "ok"\nseed = 1\n{TWO_HOSTS}\n[[part]]\nname = "p"\ncmds = ["h1: ping 10.0.0.2 -c 1"]\n'


def test_a_signal_while_the_locks_go_is_an_interrupt_not_a_traceback(tmp_path, monkeypatch, capsys):
    """tools/fuzz_signals.py (campaign 5): SIGTERM landing in main's last release_all (after the
    command's own handling) left main as an Interrupted traceback."""
    from bufferlab import cli
    from bufferlab.run.scheduler import Interrupted

    scenario = tmp_path / "ok.toml"
    scenario.write_text(ONE_PING)
    calls = []
    release_all = cli.release_all

    def interrupted_once() -> None:
        calls.append(1)
        if len(calls) == 1:
            raise Interrupted(signal.SIGTERM)
        release_all()

    monkeypatch.setattr(cli, "release_all", interrupted_once)
    assert cli.main(["check", str(scenario)]) == 143
    assert "bufferlab: interrupted" in capsys.readouterr().err and len(calls) == 2


def test_the_command_ignores_signals_once_its_work_is_written(tmp_path):
    """Campaign 5: SIGINT/SIGTERM during the interpreter's teardown printed "Exception ignored"
    or killed the process by the default action; once main() returns, the program ignores them."""
    scenario = tmp_path / "ok.toml"
    scenario.write_text(ONE_PING)
    code = ("import signal, sys\nsys.argv = ['bufferlab', 'check', sys.argv[1]]\n"
            "from bufferlab.cli import main\nstatus = main()\n"
            "print(status, int(signal.getsignal(signal.SIGINT)), int(signal.getsignal(signal.SIGTERM)))\n")
    r = subprocess.run([sys.executable, "-c", code, str(scenario)], capture_output=True, text=True,
                       timeout=120)
    ignored = str(int(signal.SIG_IGN))
    assert r.stdout.splitlines()[-1].split() == ["0", ignored, ignored], r.stdout + r.stderr


def test_a_signal_that_breaks_an_extension_import_is_an_interrupt(tmp_path, monkeypatch, capsys):
    """Campaign 5: SIGINT while matplotlib's Agg extension initialised (compare's first plot)
    came out as 'ImportError: initialization failed' with a traceback."""
    from bufferlab import cli
    from bufferlab.run import scheduler

    def import_broken_by_a_signal(args):  # noqa: ANN001 - _dispatch's place
        scheduler._Signals.received = signal.SIGINT
        raise ImportError("initialization failed")

    monkeypatch.setattr(cli, "_dispatch", import_broken_by_a_signal)
    monkeypatch.setattr(scheduler._Signals, "received", None)
    assert cli.main(["check", "x.toml"]) == 130
    assert "bufferlab: interrupted" in capsys.readouterr().err
    monkeypatch.setattr(cli, "_dispatch", lambda args: (_ for _ in ()).throw(ImportError("no module x")))
    scheduler._Signals.received = None
    with pytest.raises(ImportError):  # without a signal it is the real error it is
        cli.main(["check", "x.toml"])


def test_a_signal_between_the_queue_event_writers_leaves_no_open_writer(written_run, tmp_path, monkeypatch,
                                                                         capsys):
    """tools/fuzz_signals.py (campaign 6): SIGTERM landing in `report` after the queue events'
    ParquetWriter was made and before its CSVWriter was left the Parquet writer open; collected
    later, it flushed into its removed temporary: "Exception ignored in ParquetWriter.__del__ ...
    ValueError: write to closed file"."""
    import gc

    import pyarrow.csv as pacsv

    from bufferlab import cli
    from bufferlab.outputs import tables
    from bufferlab.run.scheduler import Interrupted

    run = tmp_path / "big"
    shutil.copytree(written_run, run)
    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)

    def interrupted(*args, **kwargs):
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(tables.pacsv, "CSVWriter", interrupted)
    assert cli.main(["report", str(run)]) == 143
    monkeypatch.setattr(tables.pacsv, "CSVWriter", pacsv.CSVWriter)
    gc.collect()
    assert unraisable == []
    assert "report interrupted by SIGTERM" in capsys.readouterr().err
    assert _temporary(run) == []


def test_mininet_takes_signals_before_it_replaces_its_results_folder(tmp_path, monkeypatch, capsys):
    """tools/fuzz_signals.py (campaign 6): SIGTERM 59 ms into `bufferlab mininet` killed it by
    the default action while it replaced its results folder, leaving a half-written marker
    (.bufferlab-results.tmp): the handlers came only after the folder. Now a signal there is an
    interrupt: exit 143, the marker whole, the lock gone."""
    from bufferlab import cli
    from bufferlab.mininet import script as script_mod
    from bufferlab.run.scheduler import Interrupted

    (tmp_path / "api.py").write_text(PING_SCRIPT, encoding="utf-8")
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    fresh = script_mod.fresh

    def fresh_then_signal(*args, **kwargs):
        fresh(*args, **kwargs)
        # the signal as it lands: the handler installed by then turns it into an interrupt
        handler = signal.getsignal(signal.SIGTERM)
        assert handler not in (signal.SIG_DFL, None), "SIGTERM's default action would kill the process here"
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(script_mod, "fresh", fresh_then_signal)
    try:
        assert cli.main(["mininet", "-o", str(tmp_path / "out"), str(tmp_path / "api.py")]) == 143
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert "bufferlab: interrupted" in capsys.readouterr().err
    assert _temporary(tmp_path / "out") == []
    assert not list((tmp_path / "out").glob(".*.lock"))
