"""Python's list of congestion controls is the engine's registration list (tcp/cc/mod.rs)."""

from __future__ import annotations

from bufferlab import _core
from bufferlab.commands import sysctl


def test_supported_cc_is_the_engines_registration_list_in_order():
    assert sysctl.SUPPORTED_CC == tuple(_core.congestion_controls())
