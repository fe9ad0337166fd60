"""The notebook API (issue 29): ``bufferlab.run`` on a file or a text with ``[params]``, its
results as DataFrames and inline HTML, ``bufferlab.compare``, the ``%%bufferlab`` magic, and
the shipped notebook examples/notebooks/lab14.ipynb executed end to end with nbclient."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import bufferlab
from bufferlab.errors import ScenarioError
from conftest import ROOT, TWO_HOSTS

TEXT = f"""name = "nb"
seed = 1

[params]
n = 3

{TWO_HOSTS}
[[part]]
name = "a"
cmds = ["h1: ping -c ${{n}} -i 0.2 10.0.0.2"]

[[part]]
name = "b"
cmds = [
  "h2: iperf3 -s &",
  "h1: iperf3 -c 10.0.0.2 -t 2",
  "h1: ping -c 4 -i 0.2 10.0.0.2",
]
"""


def test_run_a_text_with_params_returns_results_with_dataframes(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    res = bufferlab.run(TEXT, n=5)
    assert res.root == Path("results") / "nb" and res.parts == ["a", "b"] and res.complete
    assert "part a: results" in capsys.readouterr().out  # not quiet: each part's results, as the command
    ping = res.tables["ping"]
    assert type(ping).__name__ == "DataFrame" and res.ping is ping
    assert list(ping.groupby("part").size()) == [5, 4]  # n = 5 in part a
    assert res.intervals[res.intervals.role == "client"]["part"].unique().tolist() == ["b"]
    html = res._repr_html_()
    assert "<h3>nb</h3>" in html and "data:image/png;base64," in html and ".tables['ping']" in html
    assert "h1: ping -c 5 -i 0.2 10.0.0.2" in html
    with pytest.raises(AttributeError, match="tables: intervals"):
        res.pings  # noqa: B018 - a near miss names the tables
    # the same folder opened again; the comparison of its two parts
    again = bufferlab.Results(res.root)
    assert again.summary == res.summary
    cmp = bufferlab.compare(res.root / "a", res.root / "b")
    assert cmp.table["run"].tolist() == ["a", "b"] and "ping RTT mean ms" in cmp._repr_html_()
    assert (cmp.output / "compare.csv").is_file()


def test_run_is_the_run_package_made_callable(tmp_path, monkeypatch):
    import bufferlab.run.scheduler  # noqa: F401 - sets bufferlab.run to the package

    monkeypatch.chdir(tmp_path)
    assert callable(bufferlab.run) and bufferlab.run.scheduler.Runner
    (tmp_path / "s.toml").write_text(TEXT.replace('"nb"', '"file"'), encoding="utf-8")
    res = bufferlab.run(tmp_path / "s.toml", quiet=True, output="out")
    assert res.root == Path("out") / "s" and len(res.ping) == 7  # named after the file, as run names it


def test_a_mistake_in_a_text_is_located(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as e:
        bufferlab.run(TEXT, m=1)
    assert str(e.value).startswith("<text>:4: error: bufferlab.run sets 'm', which the scenario's [params] "
                                   "does not declare")
    with pytest.raises(bufferlab.CommandError) as e:
        bufferlab.run(TEXT.replace("h1: ping -c ${n}", "h1: pong -c ${n}"))
    assert str(e.value).startswith("<text>:14:14: error: pong: command not found")
    assert not (tmp_path / "results").exists()  # nothing ran


def test_the_cell_magic(tmp_path, monkeypatch, capsys):
    shell_mod = pytest.importorskip("IPython.core.interactiveshell", reason="IPython is not installed")
    monkeypatch.chdir(tmp_path)
    ip = shell_mod.InteractiveShell.instance()
    try:
        ip.run_line_magic("load_ext", "bufferlab")
        res = ip.run_cell_magic("bufferlab", "--set n=2 --name kept -q", TEXT)
        assert res is ip.user_ns["kept"] and len(res.ping[res.ping.part == "a"]) == 2
        wrong = TEXT.replace("h1: ping -c ${n}", "h1: pong -c ${n}")
        assert ip.run_cell_magic("bufferlab", "-q", wrong) is None
        # the mistake, located, without a traceback
        assert "<cell>:14:14: error: pong" in capsys.readouterr().err
    finally:
        shell_mod.InteractiveShell.clear_instance()


def test_the_shipped_notebook_runs_end_to_end(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install '.[test]')")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install '.[test]')")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install '.[test]')")
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    shutil.copytree(ROOT / "examples" / "notebooks", tmp_path / "examples" / "notebooks",
                    ignore=shutil.ignore_patterns("results"))
    where = tmp_path / "examples" / "notebooks"
    nb = nbformat.read(where / "lab14.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # shipped without outputs
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(where)}})
    # the kernel imports this bufferlab (a source tree's, when the tests run from one)
    here = str(Path(bufferlab.__file__).resolve().parent.parent)
    client.execute(env={**os.environ, "PYTHONPATH": os.pathsep.join(
        [here, *filter(None, [os.environ.get("PYTHONPATH")])]), "MPLBACKEND": "Agg"})
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert [o for o in outputs if o.output_type == "error"] == []
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("<h3>Lab 14: bufferbloat</h3>" in h and "data:image/png" in h for h in html)
    assert any("ping RTT mean ms" in h and "1bdp" in h and "10bdp" in h for h in html)  # compare
    assert (where / "results" / "lab14-bufferbloat" / "tables" / "ping.parquet").is_file()
    assert (where / "results" / "bloat-in-a-cell" / "summary.json").is_file()
    texts = [o["data"]["text/html"] for c in nb.cells[3:4] for o in c.outputs
             if "text/html" in o.get("data", {})]
    assert texts and all(p in texts[0] for p in ("setup", "1bdp", "10bdp"))  # the RTT per part
