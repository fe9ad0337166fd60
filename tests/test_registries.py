"""Python names what the engine registers, and nothing else: bufferlab.registry reads
``_core.registry()`` (Rust's schema::Registry, docs/internals.md "Registries"), and the
parsers and printers that keep their own per-kind code agree with it."""

from __future__ import annotations

import pytest

from bufferlab import registry
from bufferlab.commands.shell import parse_shell
from bufferlab.commands.sysctl import LINUX_CC, SUPPORTED_CC, execute_sysctl, parse_sysctl, sysctl_defaults
from bufferlab.commands.tc.registry import QDISC_KINDS
from bufferlab.errors import CommandError, Diagnostics, NotSupportedError

#: parser-only kinds: each builds another kind's spec (red_csc573 and cpm_red a red, cpm_blue a
#: blue; docs/semantics/qdiscs.md §7), so the engine has no kind of that name
PARSER_ALIASES = {"red_csc573", "cpm_red", "cpm_blue"}


def sysctl(line: str, store: dict) -> tuple[str, str, int]:
    return execute_sysctl(parse_sysctl(parse_shell(line)[0].commands[0].words, Diagnostics()), store)


def test_every_registered_congestion_control_is_accepted_and_listed_and_nothing_else():
    assert SUPPORTED_CC == registry.CONGESTION_CONTROLS and "cubic" in SUPPORTED_CC
    for modern in (False, True):
        listed = sysctl_defaults(modern)["net.ipv4.tcp_available_congestion_control"]
        assert listed == " ".join(registry.CONGESTION_CONTROLS)
    for name in registry.CONGESTION_CONTROLS:
        store: dict = {}
        assert sysctl(f"sysctl -w net.ipv4.tcp_congestion_control={name}", store)[2] == 0, name
        assert store == {"net.ipv4.tcp_congestion_control": name}
    # a Linux module the engine lacks is not supported, any other name is the kernel's
    # ENOENT; either way the message lists exactly the registered ones
    expected = ", ".join(registry.CONGESTION_CONTROLS)
    with pytest.raises(NotSupportedError) as unsupported:
        sysctl(f"sysctl -w net.ipv4.tcp_congestion_control={LINUX_CC[0]}", {})
    with pytest.raises(CommandError, match="No such file or directory") as unknown:
        sysctl("sysctl -w net.ipv4.tcp_congestion_control=nosuch", {})
    assert unsupported.value.expected == unknown.value.expected == "one of " + expected


def test_the_tc_parser_has_exactly_the_engines_qdisc_kinds():
    assert set(QDISC_KINDS) - PARSER_ALIASES == set(registry.QDISCS)
    # an alias prints as the kind it builds: only the engine's kinds have printers
    assert {k for k, q in QDISC_KINDS.items() if q.print_opt is not None} == set(registry.QDISCS)


def test_class_facts_come_from_the_engine():
    assert registry.CLASS_OWNERS == ("htb", "prio", "drr", "ets", "hfsc")
    assert set(registry.CLASS_VERB_KINDS) <= set(registry.CLASS_OWNERS) <= set(registry.QDISCS)
