"""The native module's type stubs (python/bufferlab/_core.pyi) match the binding."""

from __future__ import annotations

import subprocess
import sys


def test_core_stubs_match_the_native_module():
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "bufferlab._core"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
