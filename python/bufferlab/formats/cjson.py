"""JSON text exactly as iperf3's bundled cJSON prints it (``cJSON_Print``).

Reproduces the formatted printer of cJSON 1.5.x as shipped in iperf3
3.6-3.12 (``src/cjson.c``: ``print_value``, ``print_object``,
``print_array``, ``print_number``, ``print_string_ptr``) and the final
``fprintf(outfile, "%s\\n", ...)`` of ``iperf_json_finish`` in
``src/iperf_api.c``; layout rules in docs/semantics/formats.md §1.4:

* objects: ``{`` newline, one member per line indented by (depth+1) TABs,
  ``"key":`` TAB value, members separated by ``,`` newline, closing brace on
  its own line indented by depth TABs (an empty object is ``{`` newline
  depth-TABs ``}``);
* arrays: on one line, elements joined by ``, ``; an element is printed one
  level deeper than the array, hence ``[{`` ... ``}, {`` ... ``}]``;
* numbers: cJSON keeps every number as a C ``double``: NaN/Inf print
  ``null``; otherwise ``%1.15g``, or ``%1.17g`` when the 15-digit text does
  not read back as the same double. Python ``int`` values are therefore
  converted to ``float`` first (integral values print without decimals,
  e.g. ``0``, ``1448``; integers beyond 2**53 lose precision exactly as in
  cJSON);
* strings: ``"`` and ``\\`` escaped, ``\\b \\f \\n \\r \\t`` by name, other
  control characters as ``\\u00XX``, everything else (including non-ASCII
  UTF-8) passed through;
* dict insertion order is preserved (iperf3 never sorts keys).

``dumps`` returns the whole document followed by one newline, like iperf3.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["dumps", "format_number", "format_string"]

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def format_number(value: int | float) -> str:
    """cJSON ``print_number``: ``%1.15g`` unless it does not round-trip."""
    d = float(value)
    if math.isnan(d) or math.isinf(d):
        return "null"
    text = "%1.15g" % d
    if float(text) != d:
        text = "%1.17g" % d
    return text


def format_string(text: str) -> str:
    """cJSON ``print_string_ptr``."""
    out = ['"']
    for ch in text:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ord(ch) < 32:
            out.append("\\u%04x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _emit(value: Any, depth: int) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return format_number(value)
    if isinstance(value, str):
        return format_string(value)
    if isinstance(value, dict):
        if not value:
            return "{\n" + "\t" * depth + "}"
        inner = "\t" * (depth + 1)
        members = [
            inner + format_string(str(k)) + ":\t" + _emit(v, depth + 1) for k, v in value.items()
        ]
        return "{\n" + ",\n".join(members) + "\n" + "\t" * depth + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_emit(v, depth + 1) for v in value) + "]"
    raise TypeError(f"cjson.dumps: cannot serialise {type(value).__name__}")


def dumps(obj: Any) -> str:
    """The document as ``cJSON_Print`` formats it, plus the trailing newline."""
    return _emit(obj, 0) + "\n"
