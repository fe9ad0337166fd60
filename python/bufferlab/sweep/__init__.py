"""Sweeps: one scenario run over a grid of ``[params]`` values × seeds (docs/sweeps.md).

``spec`` reads a sweep file into runs, ``runs`` executes one run and names it,
``executors`` spreads runs over a process pool, Dask or Ray, ``collect`` turns
the finished runs' files into ``sweep.parquet``, ``plot`` draws means with
confidence intervals, ``cli`` is ``bufferlab sweep``.
"""
