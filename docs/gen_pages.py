"""mkdocs-gen-files script: write the generated reference pages at build time (tools/docs_reference.py)."""

import sys
from pathlib import Path

import mkdocs_gen_files

root = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(root / "tools"))
try:  # the installed package (CI installs the wheel), else the source tree with a built _core
    import bufferlab  # noqa: F401
except ImportError:
    sys.path.insert(0, str(root / "python"))

import docs_reference  # noqa: E402

for page, render in docs_reference.PAGES.items():
    with mkdocs_gen_files.open(page, "w") as f:
        f.write(render())
