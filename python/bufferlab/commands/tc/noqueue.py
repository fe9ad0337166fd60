"""``noqueue``: no queue at all (veths' default). tc has no module for it: options are refused
by tc/tc.c ``parse_noqopt`` and ``tc qdisc show`` prints none."""

from __future__ import annotations

from typing import Any

from ...errors import Diagnostics
from ...profile import Profile
from ..shell import Word
from ._schema import QdiscSpecNoqueue as NoqueueSpec
from .cursor import Cursor, parse_noqopt
from .kind import QdiscKind


def _parse_opt(kind_word: Word, cur: Cursor, diag: Diagnostics, profile: Profile) -> NoqueueSpec:
    parse_noqopt(kind_word.text, cur)
    return NoqueueSpec()


def _print_opt(opts: dict[str, Any], modern: bool, details: bool) -> str:
    return ""


KINDS = (QdiscKind("noqueue", _parse_opt, _print_opt),)
