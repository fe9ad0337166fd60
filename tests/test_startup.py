"""Start-up is paid once: the ``bufferlab`` command loads the heavy libraries (matplotlib,
pandas, pyarrow, numpy, rich) only in the commands that use them. Each check runs a
fresh interpreter and looks at ``sys.modules``; the times themselves are measured by
benches/startup.py, not here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import bufferlab
from conftest import SCENARIOS, TWO_HOSTS

HEAVY = ("matplotlib", "pandas", "pyarrow", "numpy", "rich")


def loaded_after(code: str, cwd: Path | None = None) -> list[str]:
    """The heavy top-level modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=cwd, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_cli_loads_no_heavy_library() -> None:
    assert loaded_after("import bufferlab.cli") == []


def test_import_bufferlab_is_light_and_its_api_still_there() -> None:
    assert loaded_after("import bufferlab\nassert callable(bufferlab.load_scenario)") == []


def test_version_and_help_load_no_heavy_library() -> None:
    code = ("import contextlib, io\nfrom bufferlab.cli import main\n"
            "for argv in (['--version'], ['--help'], ['run', '--help'], ['sweep', '--help']):\n"
            "    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
            "        main(argv)")
    assert loaded_after(code) == []


def test_check_loads_no_heavy_library() -> None:
    lab14 = str(SCENARIOS / "lab14-bufferbloat.toml")
    code = f"from bufferlab.cli import main\nassert main(['check', {lab14!r}]) == 0"
    assert loaded_after(code) == []


def test_a_run_without_report_loads_neither_pandas_nor_matplotlib(tmp_path: Path) -> None:
    """The tables need pyarrow (and so numpy); pandas, which pa.array imports to look for
    pandas objects, and matplotlib, for plots no command here draws, stay out."""
    (tmp_path / "t.toml").write_text(
        f'name = "t"\nseed = 1\n{TWO_HOSTS}\n[[part]]\nname = "p"\ncmds = [\n'
        '  "h2: iperf3 -s",\n  "h1: iperf3 -c 10.0.0.2 -u -b 5M -t 1",\n  "h1: ping -c 2 10.0.0.2",\n]\n',
        encoding="utf-8")
    code = "from bufferlab.cli import main\nassert main(['run', '-q', '--no-report', 't.toml']) == 0"
    assert loaded_after(code, cwd=tmp_path) == ["numpy", "pyarrow"]
    assert (tmp_path / "results" / "t" / "tables" / "intervals.parquet").is_file()


def test_a_traced_run_loads_no_pandas(tmp_path: Path) -> None:
    """Queue traces (Parquet and plots): matplotlib draws, pyarrow writes; pandas, which
    pa.array, pa.table, pq.read_table and compute functions given Python scalars import,
    stays out (outputs/arrow.py)."""
    (tmp_path / "t.toml").write_text(
        f'name = "t"\nseed = 1\n{TWO_HOSTS}\n[trace]\nqueues = ["s1-eth2"]\n\n[[part]]\nname = "p"\n'
        'cmds = [\n  "admin: tc qdisc add dev s1-eth2 root tbf rate 5mbit burst 5k limit 20k",\n'
        '  "h2: iperf3 -s &",\n  "h1: iperf3 -c 10.0.0.2 -u -b 8M -t 1",\n]\n', encoding="utf-8")
    code = "from bufferlab.cli import main\nassert main(['run', '-q', '--no-report', 't.toml']) == 0"
    assert "pandas" not in loaded_after(code, cwd=tmp_path)
    root = tmp_path / "results" / "t"
    assert (root / "p" / "queue_trace_s1-eth2.parquet").is_file()
    assert (root / "tables" / "queue_events.parquet").is_file()


def test_the_runner_imports_only_the_programs_a_scenario_uses(tmp_path: Path) -> None:
    """The programs' registry imports a tool's module when a line first names one of its
    programs (run/programs/__init__.py INDEX): a run of iperf3 and ping loads neither flent's
    module nor the web fetches', and an unknown name still lists every program."""
    (tmp_path / "t.toml").write_text(
        f'name = "t"\nseed = 1\n{TWO_HOSTS}\n[[part]]\nname = "p"\ncmds = [\n'
        '  "h2: iperf3 -s",\n  "h1: iperf3 -c 10.0.0.2 -t 1",\n  "h1: ping -c 2 10.0.0.2",\n]\n',
        encoding="utf-8")
    probe = ("from bufferlab.cli import main\nimport sys\n"
             "assert main(['run', '-q', '--no-report', 't.toml']) == 0\n"
             "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('bufferlab.run.programs.')))")
    # the child imports the bufferlab this test imported (the source tree's, or the installed one)
    env = {**os.environ, "PYTHONPATH": str(Path(bufferlab.__file__).resolve().parent.parent)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    # shell's `cat` prints /proc/net/snmp as nstat's module does
    assert done.stdout.splitlines()[-1] == str(sorted(["iperf3", "nstat", "ping", "shell", "tc"]))
    from bufferlab.errors import CommandError
    from bufferlab.run import programs

    assert "flent" in programs.PROGRAMS and "nosuch" not in programs.PROGRAMS
    (tmp_path / "u.toml").write_text(
        f'name = "u"\nseed = 1\n{TWO_HOSTS}\n[[part]]\nname = "p"\ncmds = ["h1: pign -c 1 10.0.0.2"]\n',
        encoding="utf-8")
    from bufferlab import load_scenario
    from bufferlab.run.scheduler import Runner

    try:
        Runner(load_scenario(tmp_path / "u.toml"), tmp_path / "r", progress=False).check()
    except CommandError as e:
        assert "did you mean ping?" in str(e) and "one of " in str(e) and "xdg-open" in str(e)
    else:
        raise AssertionError("pign accepted")
