"""The repository stands alone: nothing in it reads or cites a file outside it.

Code comments, docs, scenarios and user-facing messages cite the project's own pages
(``docs/semantics/qdiscs.md §5.10``, ``docs/semantics/tcp.md §9.4``, ``… P9``); these tests fail
when a tracked file points outside the tree, names a Markdown document the tree lacks, or cites a
section or label its page does not have. ``.ci/run`` also runs the suite in a clone placed where
nothing sits beside it, so a dependency on a neighbouring folder cannot hide.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT

#: what a citation of a folder beside the repository looks like (built so this file does not match)
OUTSIDE = re.compile(r"\.\./" + "shared" + r"\b|\b" + "shared" + r"/(specs|scenarios)/")
BINARY = (".so", ".png", ".pdf", ".parquet", ".gz", ".pcap", ".pcapng", ".svg", ".ico", ".woff2")
SEMANTICS = ROOT / "docs" / "semantics"
MD_NAME = re.compile(r"(?<![\w/.-])([\w./-]+\.md)\b")
CITATION = re.compile(r"docs/semantics/(qdiscs|tcp|formats)\.md((?:[^)\n]{0,60}))")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")
LABEL = re.compile(r"\b([PE]\d+)\b")


def tracked_text_files() -> dict[str, str]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    files = {}
    for name in names:
        if name.endswith(BINARY) or not (ROOT / name).is_file():
            continue
        try:
            files[name] = (ROOT / name).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
    return files


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    found = tracked_text_files()
    assert "README.md" in found and len(found) > 100
    return found


def generated_pages() -> set[str]:
    """Pages docs/gen_pages.py writes at build time (tools/docs_reference.py), relative to docs/."""
    sys.path.insert(0, str(ROOT / "tools"))
    import docs_reference

    return set(docs_reference.PAGES)


def test_no_tracked_file_points_outside_the_repository(files):
    offenders = [f"{name}:{text.count(chr(10), 0, m.start()) + 1}"
                 for name, text in files.items() for m in OUTSIDE.finditer(text)]
    assert offenders == []


def test_every_markdown_document_named_exists(files):
    generated = generated_pages()
    assert generated, "docs/gen_pages.py names no generated page"
    # code (a test's list of a folder's files, a build script's loop) may name a tracked file by its
    # bare name; a Markdown page must give a path that resolves
    tracked_basenames = {name.rsplit("/", 1)[-1] for name in files}
    missing = []
    for name, text in files.items():
        here = (ROOT / name).parent
        for m in MD_NAME.finditer(text):
            cited = m.group(1)
            if not name.endswith(".md") and "/" not in cited and cited in tracked_basenames:
                continue
            places = [ROOT / cited, here / cited, ROOT / "docs" / cited, ROOT / "docs" / "reference" / cited]
            rel_generated = {str((here / cited).resolve().relative_to((ROOT / "docs").resolve()))
                             if (here / cited).resolve().is_relative_to((ROOT / "docs").resolve())
                             else cited, cited, cited.removeprefix("docs/")}
            if not any(p.exists() for p in places) and not rel_generated & generated:
                missing.append(f"{name}: {cited}")
    assert missing == []


def page_anchors(page: str) -> tuple[set[str], set[str]]:
    text = (SEMANTICS / f"{page}.md").read_text(encoding="utf-8")
    sections = set(re.findall(r"^#+ (\d+(?:\.\d+)*)\.? ", text, re.M))
    labels = set(re.findall(r"\*\*([PE]\d+)\b", text))
    return sections, labels


def test_every_semantics_citation_resolves(files):
    anchors = {page: page_anchors(page) for page in ("qdiscs", "tcp", "formats")}
    unresolved = []
    count = 0
    for name, text in files.items():
        for m in CITATION.finditer(text):
            page, tail = m.group(1), m.group(2)
            # the citation's own section/label list ends at the next file name
            tail = re.split(r"\.md\b|\bdocs/", tail)[0]
            sections, labels = anchors[page]
            for sec in SECTION.findall(tail):
                count += 1
                if sec not in sections:
                    unresolved.append(f"{name}: {page}.md §{sec}")
            for label in LABEL.findall(tail):
                count += 1
                if label not in labels:
                    unresolved.append(f"{name}: {page}.md {label}")
    assert count > 150, "the scan found too few citations to be working"
    assert unresolved == []


def test_every_internals_citation_names_a_heading(files):
    """``docs/internals.md "How lines run"`` names a heading of that page."""
    text = (ROOT / "docs" / "internals.md").read_text(encoding="utf-8")
    headings = [h.strip().lower() for h in re.findall(r"^#+ (.+)$", text, re.M)]
    cited = [(name, re.sub(r"\s*\n\s*(//[!/]?|#)?\s*", " ", m.group(1)).lower())
             for name, body in files.items() for m in re.finditer(r'docs/internals\.md "([^"]+)"', body)]
    assert len(cited) > 10
    assert [c for c in cited if not any(h.startswith(c[1]) for h in headings)] == []


def test_the_citation_scan_catches_a_missing_section():
    """The resolver itself: a section the page lacks is reported, one it has is not."""
    sections, _ = page_anchors("qdiscs")
    assert "5.10" in sections and "99.1" not in sections
    tail = CITATION.match("docs/semantics/" + "qdiscs" + ".md §99.1, P9)").group(2)
    assert SECTION.findall(tail) == ["99.1"] and LABEL.findall(tail) == ["P9"]
