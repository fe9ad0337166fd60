"""A newcomer's first hour (issue 23): each stumble seen on a fresh clone, fixed and kept fixed.

`bufferlab sweep --help` without a FILE; `sweep plot --help` printing "95 %"; `sweep --set` of a
swept parameter narrowing its axis; a Mininet script given to `run`; a mistyped scenario path;
where `compare` writes without -o; results on stdout, progress and diagnostics on stderr."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest

from bufferlab.cli import main
from bufferlab.errors import ScenarioError
from bufferlab.scenario.params import Override
from bufferlab.sweep.progress import Progress
from bufferlab.sweep.runs import prepare
from bufferlab.sweep.spec import load_sweep
from conftest import ROOT, SCENARIOS, TWO_HOSTS

SWEEP = f"""scenario = "{SCENARIOS.as_posix()}/red-vs-droptail.toml"
seeds = 2
parts = ["red-intended"]
[grid]
load = [0.25, 0.5, 0.75]
qlen = [600, 800]
"""


# ---------------------------------------------------------------- sweep

@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_sweep_help_without_a_file(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["sweep", flag])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: bufferlab sweep") and "FILE.toml" in out and "sweep plot" in out


def test_sweep_options_before_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.toml").write_text(SWEEP, encoding="utf-8")
    assert main(["sweep", "-j", "1", "--dry-run", str(tmp_path / "s.toml"), "-o", str(tmp_path)]) == 0
    assert "12 runs, 12 to run" in capsys.readouterr().out


def test_sweep_plot_help_prints_one_percent_sign(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["sweep", "plot", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "95 % confidence" in out and "%%" not in out


def test_set_of_a_swept_parameter_narrows_its_axis_to_the_same_runs(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(SWEEP, encoding="utf-8")
    full = load_sweep(f, [])
    narrow = load_sweep(f, [Override("load", 0.5, "--set")])
    assert len(full.points) == 6
    assert narrow.points == [p for p in full.points if p["load"] == 0.5]

    def run_ids(points: list, fixed: dict) -> list[str]:
        return [job.run_id for p in points
                for job in prepare(full.scenario, {**fixed, **p}, {}, [1], full.parts, tmp_path, full.source)]

    # the slice's runs are the full sweep's: a finished full sweep answers it from its cache
    assert run_ids(narrow.points, {"load": 0.5}) == run_ids(narrow.points, {})
    # a value off the grid is a one-value axis too
    assert [p["load"] for p in load_sweep(f, [Override("load", 0.3, "--set")]).points] == [0.3, 0.3]


def test_set_of_a_zipped_parameter_picks_its_rows(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    grid = "[grid]\nload = [0.25, 0.5, 0.75]\nqlen = [600, 800]\n"
    zipped = "[[zip]]\nload = [0.25, 0.5, 0.75]\nqlen = [600, 700, 800]\n"
    f.write_text(SWEEP.replace(grid, zipped), encoding="utf-8")
    assert load_sweep(f, [Override("qlen", 700, "--set")]).points == [{"load": 0.5, "qlen": 700}]
    with pytest.raises(ScenarioError) as e:
        load_sweep(f, [Override("qlen", 650, "--set")])
    assert "no row of this [[zip]] has qlen = 650" in str(e.value) and "600, 700, 800" in str(e.value)


def test_docs_sweeps_plot_the_folders_the_sweep_files_make() -> None:
    """docs/sweeps.md once plotted results/red-vs-droptail-qw; the sweep is ...-wq."""
    text = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")
    stems = {p.stem for p in (ROOT / "sweeps").glob("*.toml")}
    named = set(re.findall(r"results/(red-vs-droptail-[a-z]+)", text))
    assert named and named <= stems


# ---------------------------------------------------------------- run and check: the wrong file

def test_run_of_a_mininet_script_points_at_bufferlab_mininet(capsys: pytest.CaptureFixture[str]) -> None:
    script = ROOT / "examples" / "mininet" / "bufferbloat.py"
    assert main(["run", str(script)]) == 2
    err = capsys.readouterr().err
    assert "is a Python script, not a scenario" in err and f"bufferlab mininet {script}" in err
    assert "invalid TOML" not in err


@pytest.mark.parametrize("typed,meant", [
    ("scenarios/lab14-bufferblot.toml", "scenarios/lab14-bufferbloat.toml"),
    ("scenario/lab14-bufferbloat.toml", "scenarios/lab14-bufferbloat.toml"),
    ("scenarios/udp-tbf-netme.toml", "scenarios/udp-tbf-netem.toml"),
])
def test_a_mistyped_scenario_path_gets_a_did_you_mean(typed: str, meant: str, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    for cmd in ("run", "check"):
        assert main([cmd, typed]) == 2
        err = capsys.readouterr().err
        assert "No such file or directory" in err and f"hint: did you mean {meant!r}?" in err


def test_no_did_you_mean_when_nothing_is_near(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "nothing-like-it.toml")]) == 2
    assert "did you mean" not in capsys.readouterr().err


# ---------------------------------------------------------------- where output goes

TWO_PARTS = ("""name = "t"
seed = 1
""" + TWO_HOSTS + """
[[part]]
name = "a"
cmds = ["h2: iperf3 -s &", "h1: iperf3 -c 10.0.0.2 -u -b 2M -t 1", "h1: ping -c 2 10.0.0.2"]

[[part]]
name = "b"
cmds = ["h1: iperf3 -c 10.0.0.2 -u -b 4M -t 1 -S 0x20", "h1: iperf3 -c 10.0.0.2 -u -b 4M -t 1 -S 0x40"]
""")


def test_compare_without_o_writes_under_results_and_says_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("t.toml").write_text(TWO_PARTS, encoding="utf-8")
    assert main(["run", "-q", "--no-report", "t.toml"]) == 0
    assert main(["compare", "results/t/a", "results/t/b"]) == 0
    out = capsys.readouterr().out
    dest = Path("results") / "compare-a-vs-b"
    assert (dest / "compare.csv").is_file() and (dest / "compare.html").is_file()
    assert out.rstrip().splitlines()[-1].startswith(f"wrote {dest / 'compare.csv'}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "t.toml"]  # no ./compare


def test_gitignore_keeps_the_docs_site_out_of_git_status() -> None:
    lines = (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert "/site/" in lines or "site/" in lines


def test_run_prints_results_on_stdout_and_progress_on_stderr(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Every part's result summary (and the DS byte table) and the closing line are results;
    the part headers and the warnings are progress and diagnostics."""
    (tmp_path / "t.toml").write_text(TWO_PARTS, encoding="utf-8")
    argv = ["run", "--no-progress", "--no-report", "-o", str(tmp_path / "r"), str(tmp_path / "t.toml")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "part a: results\n" in out and "part b: results\n" in out
    assert "part b: UDP iperf3 datagrams per DS byte" in out
    assert out.rstrip().splitlines()[-1].endswith(f"results in {tmp_path / 'r' / 't'}")
    assert "Mbit/s goodput" in out and "Mbit/s goodput" not in err
    assert err.splitlines()[:1] == ["== part a (t = 0.000 s)"] and "== part b" in err
    assert "== part" not in out and "results in" not in err


def test_mininet_prints_its_closing_line_on_stdout_as_run_does(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "two.py"
    script.write_text("from mininet.net import Mininet\nfrom mininet.topo import SingleSwitchTopo\n"
                      "net = Mininet(topo=SingleSwitchTopo(2))\nnet.start()\nnet.pingAll()\nnet.stop()\n",
                      encoding="utf-8")
    assert main(["mininet", "-o", str(tmp_path / "r"), "--no-report", str(script)]) == 0
    out, err = capsys.readouterr()
    assert out.rstrip().splitlines()[-1] == f"two.py: results in {tmp_path / 'r' / 'two'}"
    assert "results in" not in err


def test_getting_started_python_example_prints_what_the_page_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/index.md's example printed [] (the first part runs no iperf3)."""
    page = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    m = re.search(r"```python\n(from bufferlab import load_scenario, run_scenario\n.*?)```\n\n"
                  r"prints\n\n```text\n(.*?)```", page, re.S)
    assert m, "docs/index.md: the Python example and the lines it prints"
    (tmp_path / "scenarios").mkdir()
    shutil.copy(SCENARIOS / "udp-tbf-netem.toml", tmp_path / "scenarios")
    monkeypatch.chdir(tmp_path)
    exec(compile(m[1], "docs/index.md", "exec"), {})
    assert capsys.readouterr().out == m[2]


def _requirements(path: Path) -> set[str]:
    """The requirement lines of a pip requirements file, ``-r`` files included."""
    found: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("-r "):
            found |= _requirements(path.parent / line[3:].strip())
        elif line:
            found.add(line.replace(" ", ""))
    return found


def test_tests_requirements_are_the_test_extra_so_the_engine_is_built_once() -> None:
    """After `pip install .`, `pip install '.[test]'` built the Rust engine again; the README's
    second command installs tests/requirements.txt instead, which must list what the extra does."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]

    def expand(names: list[str]) -> set[str]:
        out: set[str] = set()
        for n in names:
            n = n.replace(" ", "")
            if n.startswith("bufferlab["):
                out |= expand(extras[n[len("bufferlab["):-1]])
            else:
                out.add(n)
        return out

    assert _requirements(ROOT / "tests" / "requirements.txt") == expand(extras["test"])
    assert _requirements(ROOT / "docs" / "requirements.txt") == expand(extras["docs"])
    tests_own = _requirements(ROOT / "tests" / "requirements.txt")
    assert not any(r.startswith((".", "bufferlab")) for r in tests_own)


def test_sweep_progress_display_goes_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """The rich bar wrote to stdout, among the results."""
    with Progress(2, 1, 1, plain=False) as prog:
        prog.done({"status": "ok", "overrides": {"load": 0.5}, "run_id": "r1", "seed": 1, "wall_s": 0.1})
    with Progress(2, 1, 1, plain=True) as prog:
        prog.done({"status": "ok", "overrides": {"load": 0.5}, "run_id": "r1", "seed": 1, "wall_s": 0.1})
    out, err = capsys.readouterr()
    assert out == "" and "[1/2] r1 seed=1 load=0.5: ok" in err
