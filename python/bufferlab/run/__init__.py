"""Running a scenario: the scheduler (terminals, lines, parts), the contexts commands run in,
the programs a line can run, captures, queue traces and the engine wrapper.

The package is also callable: ``bufferlab.run(path_or_text, **params)`` runs a scenario from
Python or a notebook and returns its results (run/notebook.py). A module attribute cannot be
both, because importing ``bufferlab.run.scheduler`` sets ``bufferlab.run`` to this package: so
the package itself is the function.
"""

from __future__ import annotations

import sys
import types
from typing import Any


class _CallablePackage(types.ModuleType):
    def __call__(self, source: Any, /, **kwargs: Any) -> Any:
        """``bufferlab.run(path_or_text, *, output="results", seed=None, report=True, quiet=False,
        **params)``: see :func:`bufferlab.run.notebook.run`."""
        from .notebook import run  # the runner, only when called: importing the package stays light

        return run(source, **kwargs)


sys.modules[__name__].__class__ = _CallablePackage
