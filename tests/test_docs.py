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
from bufferlab.run.programs import PROGRAMS
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


SHELL_LANGS = ("sh", "bash", "console", "shell")
#: README.md and every page: their shell blocks are what a reader copies
SHOWN_IN = [ROOT / "README.md", *PAGES]


def _shell_blocks(page: Path) -> list[tuple[str, str]]:
    """(language, body) of each fenced block of the page."""
    return re.findall(r"^```(\w*)\n(.*?)^```", page.read_text(), re.M | re.S)


def _commands_of_block(body: str) -> list[str]:
    """The ``bufferlab …`` commands a shell would run for this block, in order: ``$ `` prompts
    dropped, ``\\`` continuations joined, ``a && b`` and ``a; b`` split, and a ``for f in GLOB;
    do … $f; done`` loop expanded over the repository's files."""
    text = re.sub(r"\s*\\\n\s*", " ", body)
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip().removeprefix("$ ")
        loop = re.fullmatch(r"for (\w+) in (\S+); do (.*); done", line)
        if loop:
            var, pattern, cmd = loop.groups()
            out += [
                cmd.replace(f"${var}", f.relative_to(ROOT).as_posix()) for f in sorted(ROOT.glob(pattern))
            ]
            continue
        out += [c.strip() for c in re.split(r"&&|;", line)]
    return [c for c in out if c.startswith("bufferlab ")]


def _shown_commands(page: Path) -> list[str]:
    return [c for lang, body in _shell_blocks(page) if lang in SHELL_LANGS for c in _commands_of_block(body)]


def _included_scenarios(page: Path) -> list[str]:
    return re.findall(r'^--8<-- "(scenarios/[^"]+\.toml)"', page.read_text(), re.M)


SHOWN = [(p.relative_to(ROOT).as_posix(), c) for p in SHOWN_IN for c in _shown_commands(p)]


def test_every_block_that_runs_bufferlab_says_its_language():
    """An untagged block would escape the command test below: commands go in ``sh``/``console``
    blocks (run by the test), synopses in ``text`` blocks."""
    untagged = [f"{p.relative_to(ROOT)}: {body.splitlines()[0]}" for p in SHOWN_IN
                for lang, body in _shell_blocks(p) if not lang and re.search(r"^\$? ?bufferlab ", body, re.M)]
    assert untagged == []


def test_the_command_block_reader():
    body = (
        "$ bufferlab mn --topo linear,3\npip install . && bufferlab run a.toml\n"
        "for f in sweeps/red-vs-droptail-*.toml; do bufferlab sweep $f; done\nbufferlab sweep plot x \\\n  --logx\n"
    )
    commands = _commands_of_block(body)
    assert commands[:2] == ["bufferlab mn --topo linear,3", "bufferlab run a.toml"]
    assert "bufferlab sweep sweeps/red-vs-droptail-wq.toml" in commands
    assert commands[-1] == "bufferlab sweep plot x --logx"


def test_the_tutorials_show_commands():
    tutorials = {p for p, _ in SHOWN if p.startswith("docs/tutorials/")}
    assert len(tutorials) == 5
    assert any(p == "README.md" for p, _ in SHOWN)


@pytest.mark.parametrize(
    "path", sorted({s for p in PAGES for s in _included_scenarios(p)} | {
        a for _, c in SHOWN for a in shlex.split(c) if a.endswith(".toml") and a.startswith("scenarios/")})
)
def test_every_scenario_the_docs_show_checks(path, capsys):
    assert main(["check", str(ROOT / path)]) == 0, capsys.readouterr().err


def _prepare(command: list[str]) -> list[str]:
    """What the test adds to a shown command to keep it quick: ``-q`` for ``run``; a sweep is
    listed (``--dry-run``), not run (960 runs), and a ``sweep plot`` then reads a small sweep of
    the same name made from the same file narrowed to one point."""
    if command[0] == "run":
        return [*command, "-q"]
    if command[0] == "sweep" and command[1] != "plot":
        return [*command, "--dry-run"]
    return command


def _results_needed(command: list[str]) -> None:
    """A page may read results another page made (``compare results/lab16-red/...``): run the
    scenario that writes them first, as a reader who followed the tutorial would have."""
    for arg in command:
        m = re.match(r"results/([\w.-]+)", arg)
        if not m or Path(arg).exists():
            continue
        scenario_file = Path("scenarios") / f"{m.group(1)}.toml"
        sweep_file = Path("sweeps") / f"{m.group(1)}.toml"
        if scenario_file.is_file():
            assert main(["run", "-q", str(scenario_file)]) == 0, scenario_file
        elif sweep_file.is_file():
            _tiny_sweep(sweep_file)


def _tiny_sweep(sweep_file: Path) -> None:
    """The sweep narrowed to the first value of each grid axis and one seed."""
    import tomllib

    spec = tomllib.loads(sweep_file.read_text())
    narrowed = sweep_file.read_text().replace(f"seeds = {spec.get('seeds', 1)}", "seeds = 1")
    for axis, values in spec.get("grid", {}).items():
        narrowed = re.sub(rf"^{axis} = \[.*\]$", f"{axis} = [{values[0]!r}]", narrowed, flags=re.M)
    sweep_file.write_text(narrowed)
    assert main(["sweep", str(sweep_file), "-j", "1", "--no-progress"]) == 0, sweep_file


@pytest.mark.parametrize("page", sorted({p for p, _ in SHOWN}))
def test_every_command_the_docs_show_runs(page, tmp_path, monkeypatch):
    """Each page's commands in order, from a copy of the repository's scenarios, sweeps and
    examples (all pages: about a minute)."""
    for folder in ("scenarios", "sweeps", "examples"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    for _, command in (s for s in SHOWN if s[0] == page):
        words = shlex.split(command)[1:]
        _results_needed(words)
        assert main(_prepare(words)) == 0, command


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
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    # strict mode aborts on mkdocs' own warnings; plugins (griffe, gen-files) may only log theirs
    warnings = [ln for ln in (r.stdout + r.stderr).splitlines() if re.match(r"\s*(\x1b\[[\d;]*m)*WARNING", ln)
                and "MkDocs may break support" not in ln]
    assert warnings == []
    generated = ("reference/scenario", "reference/commands", "reference/cli", "reference/api")
    for page in (*generated, "tutorials/lab14"):
        assert (tmp_path / "site" / page / "index.html").is_file(), page


def test_docs_requirements_match_the_docs_extra():
    import tomllib

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["docs"]
    lines = (DOCS / "requirements.txt").read_text().splitlines()
    listed = [ln for ln in lines if ln and not ln.startswith("#")]
    assert listed == extra


def test_the_command_reference_lists_every_program():
    """Each program a scenario line may run (run/programs/ PROGRAMS) has its place in the
    generated command reference."""
    page = docs_reference.commands_page()
    missing = [p for p in PROGRAMS if f"`{p}" not in page and f"## {p}" not in page]
    assert missing == []
