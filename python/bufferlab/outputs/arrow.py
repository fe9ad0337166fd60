"""Arrow arrays built from their buffers, for the tables and the queue traces of a run.

``pa.array`` (of a list or a numpy array), ``pa.table`` of numpy columns and compute
functions given a Python scalar all import pandas (~0.15 s) to look for pandas objects
among the values. A run's rows hold plain str, int, float, bool and numpy arrays, so
these helpers build the same arrays directly, and ``bufferlab run`` never loads pandas
(tests/test_startup.py); the files written are byte for byte the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

S, I64, F64, B, I8 = pa.string(), pa.int64(), pa.float64(), pa.bool_(), pa.int8()

#: the Python values each column type takes as they are (None is null in every type)
_PLAIN = {S: (str,), I64: (int,), F64: (float, int), B: (bool,)}
#: numpy's type for each fixed-width Arrow type built from a numpy array
_NUMPY = {I64: np.int64, F64: np.float64, I8: np.int8}


def array(values: list[Any], typ: pa.DataType) -> pa.Array:
    """``pa.array(values, typ)`` for a string, int64, float64 or bool column, built from its
    buffers when every value is a plain str, int, float or bool (or None). Anything else
    (numpy scalars, an int that a float cannot hold exactly, a string that is not valid
    UTF-8) goes to ``pa.array`` and its checks."""
    plain = _PLAIN[typ]
    if not all(v is None or (type(v) in plain and (typ != F64 or type(v) is float or abs(v) <= 1 << 53))
               for v in values):
        return pa.array(values, typ)
    n = len(values)
    valid = [v is not None for v in values]
    nulls = n - sum(valid)
    bitmap = None if nulls == 0 else pa.py_buffer(np.packbits(np.array(valid, bool), bitorder="little"))
    if typ == S:
        try:
            data = [b"" if v is None else v.encode() for v in values]
        except UnicodeEncodeError:
            return pa.array(values, typ)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        if offsets[-1] >= 1 << 31:
            return pa.array(values, typ)
        buffers = [bitmap, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(data))]
    elif typ == B:
        buffers = [bitmap, pa.py_buffer(np.packbits(np.array([v is True for v in values], bool),
                                                    bitorder="little"))]
    else:
        buffers = [bitmap, pa.py_buffer(np.array([0 if v is None else v for v in values], _NUMPY[typ]))]
    return pa.Array.from_buffers(typ, n, buffers, null_count=nulls)


def numeric(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A numpy array as an int8, int64 or float64 Arrow array without nulls (NaN stays a
    value, as ``pa.array`` of a numpy array keeps it)."""
    data = np.ascontiguousarray(values, dtype=_NUMPY[typ])
    return pa.Array.from_buffers(typ, len(data), [None, pa.py_buffer(data)])


def repeat(text: str, n: int) -> pa.Array:
    """A string column of ``n`` copies of ``text``."""
    raw = text.encode()
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    if n and offsets[-1] >= 1 << 31:
        return pa.array([text] * n, S)
    return pa.Array.from_buffers(S, n, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(raw * n)])


def scalar(value: Any, typ: pa.DataType) -> pa.Scalar:
    """``pa.scalar(value, typ)`` for a compute function's argument."""
    return array([value], typ)[0]
