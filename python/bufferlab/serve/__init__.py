"""``bufferlab serve``: the lab bench in the browser (docs/bench.md). app.py serves the page and
its API, checking.py checks an editor's buffer, jobs.py runs and watches commands, sandbox.py
keeps every path inside the served folder; static/ holds the page and the vendored uPlot."""
