"""safefs's writers beyond the no-follow rule: summary.json's two forms and the figures
``bufferlab grade`` writes after results.json."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from bufferlab import safefs  # noqa: E402
from bufferlab.safefs import figures_later, savefig, write_json_atomic  # noqa: E402


def test_a_small_document_is_written_indented_as_json_dumps_does(tmp_path: Path) -> None:
    doc = {"a": [1, 2.5, None, True], 3: {"x": "é"}, "empty": {}, "nan": float("nan")}
    write_json_atomic(tmp_path / "s.json", doc)
    assert (tmp_path / "s.json").read_text() == json.dumps(doc, indent=2) + "\n"


@pytest.mark.parametrize("doc", [
    {"classes": [{"classid": i, "rate": 125000, "name": f"1:{i:x}"} for i in range(40_000)], 7: None},
    [{"flow": i} for i in range(120_000)],
])
def test_a_large_document_is_written_compact_with_the_same_content(tmp_path: Path, doc) -> None:
    path = tmp_path / "big.json"
    write_json_atomic(path, doc)
    text = path.read_text()
    assert len(json.dumps(doc)) > safefs.INDENT_LIMIT
    assert text == json.dumps(doc) + "\n"  # one line: json's compact form, byte for byte
    assert "\n" not in text[:-1]


def _figure():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    ax.set_ylabel("a label the layout makes room for")
    fig.set_layout_engine("tight")
    plt.close(fig)  # the callers close their figures before figures_later writes them
    return fig


def test_figures_later_writes_at_the_exit_in_order(tmp_path: Path) -> None:
    written: list[str] = []
    real = safefs._write_figure

    def spy(fig, path, kwargs):
        written.append(Path(path).name)
        real(fig, path, kwargs)

    safefs._write_figure = spy
    try:
        with figures_later():
            savefig(_figure(), tmp_path / "b.png", dpi=50)
            savefig(_figure(), tmp_path / "a.pdf")
            assert not (tmp_path / "b.png").exists() and not (tmp_path / "a.pdf").exists()
        assert written == ["b.png", "a.pdf"]
        assert (tmp_path / "b.png").read_bytes().startswith(b"\x89PNG")
        assert (tmp_path / "a.pdf").read_bytes().startswith(b"%PDF")
        savefig(_figure(), tmp_path / "now.png", dpi=50)  # outside: at once
        assert (tmp_path / "now.png").exists()
    finally:
        safefs._write_figure = real


def test_figures_later_writes_what_it_kept_when_an_exception_ends_the_block(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt), figures_later():
        savefig(_figure(), tmp_path / "kept.png", dpi=50)
        raise KeyboardInterrupt
    assert (tmp_path / "kept.png").exists()


def test_figures_later_keeps_at_most_its_bound(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(safefs, "MAX_LATER_FIGURES", 1)
    with figures_later():
        savefig(_figure(), tmp_path / "first.png", dpi=50)
        savefig(_figure(), tmp_path / "second.png", dpi=50)
        assert not (tmp_path / "first.png").exists()
        assert (tmp_path / "second.png").exists()  # past the bound: written at once
    assert (tmp_path / "first.png").exists()


def test_a_tight_figure_is_laid_out_once_and_kept_so(tmp_path: Path) -> None:
    fig = _figure()
    left = fig.subplotpars.left
    savefig(fig, tmp_path / "one.pdf")
    laid_out = fig.subplotpars.left
    assert laid_out != left  # the layout made room for the label
    assert type(fig.get_layout_engine()).__name__ != "TightLayoutEngine"
    savefig(fig, tmp_path / "one.png", dpi=50)
    assert fig.subplotpars.left == laid_out
