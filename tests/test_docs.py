"""The documentation site: the scenario reference lists exactly the keys the loader accepts,
every scenario and command the pages show checks and runs, and ``mkdocs build --strict``
passes (no warnings, no broken links)."""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bufferlab import scenario
from bufferlab.cli import main
from bufferlab.scenario import load, mn_file, observe
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import docs_reference  # noqa: E402

DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))


def _module_key_sets(module: object) -> dict[str, set[str]]:
    """The module's ``*_KEYS`` sets: the tables check_keys validates against."""
    return {n: v for n, v in vars(module).items() if n.endswith("_KEYS") and isinstance(v, set)}


def test_every_loader_key_set_is_in_the_reference():
    """A new table's key set (any ``*_KEYS`` set of the scenario package) must be added to
    tools/docs_reference.py's LOADER_KEYS and KEY_DOCS."""
    referenced = [id(keys) for keys in docs_reference.LOADER_KEYS.values()]
    found = pkgutil.iter_modules(scenario.__path__, "bufferlab.scenario.")
    # mn_file's key sets are those of MiniEdit's JSON, described by its docstring on the page
    modules = [importlib.import_module(m.name) for m in found if m.name != mn_file.__name__]
    assert load in modules and observe in modules
    for module in modules:
        for name, keys in _module_key_sets(module).items():
            assert id(keys) in referenced, f"{module.__name__}.{name} is missing from LOADER_KEYS"


def test_scenario_reference_lists_exactly_the_accepted_keys():
    assert docs_reference.KEY_DOCS.keys() == docs_reference.LOADER_KEYS.keys()
    for table, keys in docs_reference.LOADER_KEYS.items():
        assert set(docs_reference.KEY_DOCS[table]) == keys, table
    page = docs_reference.scenario_page()
    assert "**undocumented**" not in page
    listed: dict[str, set[str]] = {}
    for section in page.split("\n## ")[1:]:
        title, _, body = section.partition("\n")
        listed[title] = set(re.findall(r"^\| `([a-z0-9_]+)` \|", body, re.M))
    for table, keys in docs_reference.LOADER_KEYS.items():
        assert listed[table] == keys, table


def test_the_loader_refuses_a_key_the_reference_lacks(write_scenario, capsys):
    text = (ROOT / "scenarios" / "udp-tbf-netem.toml").read_text()
    path = write_scenario(text.replace("[topology]", "[sim]\nqueue_sampl_interval = \"1s\"\n\n[topology]", 1))
    assert main(["check", str(path)]) == 2
    assert "did you mean 'queue_sample_interval'" in capsys.readouterr().err


def _shown_commands(page: Path) -> list[str]:
    """The ``bufferlab ...`` lines of the page's ``sh`` blocks."""
    blocks = re.findall(r"^```sh\n(.*?)^```", page.read_text(), re.M | re.S)
    return [ln for b in blocks for ln in b.splitlines() if ln.startswith("bufferlab ")]


def _included_scenarios(page: Path) -> list[str]:
    return re.findall(r'^--8<-- "(scenarios/[^"]+\.toml)"', page.read_text(), re.M)


SHOWN = [(p.relative_to(ROOT).as_posix(), c) for p in PAGES for c in _shown_commands(p)]


def test_the_tutorials_show_commands():
    tutorials = {p for p, _ in SHOWN if p.startswith("docs/tutorials/")}
    assert len(tutorials) == 5


@pytest.mark.parametrize(
    "path", sorted({s for p in PAGES for s in _included_scenarios(p)} | {
        a for _, c in SHOWN for a in shlex.split(c) if a.endswith(".toml")})
)
def test_every_scenario_the_docs_show_checks(path, capsys):
    assert main(["check", str(ROOT / path)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("page", sorted({p for p, _ in SHOWN}))
def test_every_command_the_docs_show_runs(page, tmp_path, monkeypatch):
    """Each page's commands in order, from a copy of the repository's scenarios (all pages: ~15 s)."""
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    monkeypatch.chdir(tmp_path)
    for _, command in (s for s in SHOWN if s[0] == page):
        assert main([*shlex.split(command)[1:], *(["-q"] if " run " in f" {command} " else [])]) == 0, command


def _python_blocks() -> list[str]:
    return [b for p in PAGES for b in re.findall(r"^```python\n(.*?)^```", p.read_text(), re.M | re.S)]


def test_python_examples_parse_and_use_the_public_api():
    import bufferlab

    for block in _python_blocks():
        tree = ast.parse(block)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "bufferlab":
                assert all(a.name in bufferlab.__all__ for a in node.names), block


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="no docs extra: pip install -r docs/requirements.txt")
    pytest.importorskip("material", reason="mkdocs-material is not installed")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    generated = ("reference/scenario", "reference/commands", "reference/cli", "reference/api")
    for page in (*generated, "tutorials/lab14"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page


def test_docs_requirements_match_the_docs_extra():
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["docs"]
    lines = (DOCS / "requirements.txt").read_text().splitlines()
    listed = [ln for ln in lines if ln and not ln.startswith("#")]
    assert listed == extra
