"""A newcomer's first hour (issue 23): each stumble seen on a fresh clone, fixed and kept fixed.

`bufferlab sweep --help` without a FILE; `sweep plot --help` printing "95 %"; `sweep --set` of a
swept parameter narrowing its axis; a Mininet script given to `run`; a mistyped scenario path;
where `compare` writes without -o; results on stdout, progress and diagnostics on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, SCENARIOS

from bufferlab.cli import main
from bufferlab.errors import ScenarioError
from bufferlab.scenario.params import Override
from bufferlab.sweep.runs import prepare
from bufferlab.sweep.spec import load_sweep

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
        return [prepare(full.scenario, {**fixed, **p}, {}, 1, full.parts, tmp_path).run_id for p in points]

    # the slice's runs are the full sweep's: a finished full sweep answers it from its cache
    assert run_ids(narrow.points, {"load": 0.5}) == run_ids(narrow.points, {})
    # a value off the grid is a one-value axis too
    assert [p["load"] for p in load_sweep(f, [Override("load", 0.3, "--set")]).points] == [0.3, 0.3]


def test_set_of_a_zipped_parameter_picks_its_rows(tmp_path: Path) -> None:
    f = tmp_path / "s.toml"
    f.write_text(SWEEP.replace("[grid]\nload = [0.25, 0.5, 0.75]\nqlen = [600, 800]\n",
                               "[[zip]]\nload = [0.25, 0.5, 0.75]\nqlen = [600, 700, 800]\n"), encoding="utf-8")
    assert load_sweep(f, [Override("qlen", 700, "--set")]).points == [{"load": 0.5, "qlen": 700}]
    with pytest.raises(ScenarioError) as e:
        load_sweep(f, [Override("qlen", 650, "--set")])
    assert "no row of this [[zip]] has qlen = 650" in str(e.value) and "600, 700, 800" in str(e.value)


def test_docs_sweeps_plot_the_folders_the_sweep_files_make() -> None:
    """docs/sweeps.md once plotted results/red-vs-droptail-qw; the sweep is ...-wq."""
    text = (ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8")
    stems = {p.stem for p in (ROOT / "sweeps").glob("*.toml")}
    import re

    named = set(re.findall(r"results/(red-vs-droptail-[a-z]+)", text))
    assert named and named <= stems
