"""The mean over seeds and its 95 % confidence interval, for ``bufferlab sweep plot`` and the
sweeps of ``bufferlab serve`` (pandas only: no plotting library).

The interval is the Student t one, mean ± t(0.975, n−1)·s/√n. The t quantiles come from
the table below (scipy is not a dependency); past 30 degrees of freedom the next smaller
tabulated one is used, which errs wide.
"""

from __future__ import annotations

import math

import pandas as pd

#: two-sided 95 % Student t quantiles t(0.975, df) (any statistics table, e.g. NIST/SEMATECH
#: e-Handbook 1.3.6.7.2), df 1..30 then 40, 60, 120 and the normal limit
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
         10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110,
         18: 2.101, 19: 2.093, 20: 2.086, 21: 2.080, 22: 2.074, 23: 2.069, 24: 2.064, 25: 2.060,
         26: 2.056, 27: 2.052, 28: 2.048, 29: 2.045, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def t975(df: int) -> float:
    if df < 1:
        raise ValueError("a confidence interval needs at least two samples")
    if df > 120:
        return 1.960
    return _T975[max(k for k in _T975 if k <= df)]


def mean_ci(values: pd.Series) -> tuple[float, float, int]:
    """(mean, half-width of the 95 % interval, n); the half-width is NaN for one sample."""
    n = int(values.count())
    m = float(values.mean())
    if n < 2:
        return m, math.nan, n
    return m, t975(n - 1) * float(values.std(ddof=1)) / math.sqrt(n), n


def summarise(frame: pd.DataFrame, x: str, y: str, by: str | None, facet: str | None) -> pd.DataFrame:
    keys = [k for k in (facet, by, x) if k]
    rows = []
    for key, g in frame.groupby(keys, sort=True, dropna=False):
        m, half, n = mean_ci(g[y])
        rows.append({**dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
                     "mean": m, "ci95": half, "n": n})
    return pd.DataFrame(rows)
