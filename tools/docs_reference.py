"""The documentation site's generated reference pages (docs/gen_pages.py writes them at build time).

Everything here is read from the code, so the pages cannot drift from it: the scenario keys
from the loader's key sets (with the descriptions below, which tests/test_docs.py keeps
complete), the engine's requests from ``bufferlab._core.schema()``, each command's options
from its parser's option table, every program from its record (run/programs/), every qdisc
kind from the tc registry, the CLI from argparse.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import re
from typing import Any

from bufferlab import _core, cli, commands
from bufferlab.commands import (
    capture,
    ethtool,
    generators,
    iperf3,
    netinfo,
    ns3,
    ping,
    procs,
    shell,
    sysctl,
    tc,
)
from bufferlab.commands._getopt import OptSpec
from bufferlab.commands.tc import registry
from bufferlab.formats import netinfo as netinfo_fmt
from bufferlab.formats import procs as procs_fmt
from bufferlab.run import procs as procs_run
from bufferlab.run import programs
from bufferlab.run.programs import netinfo as netinfo_run
from bufferlab.run.programs import procs as procs_programs
from bufferlab.scenario import expect, load, mn_file, observe

#: table -> the loader's accepted keys (scenario/load.py, scenario/observe.py check_keys sets)
LOADER_KEYS: dict[str, set[str]] = {
    "top level": load.TOP_KEYS,
    "[sim]": load.SIM_KEYS,
    "[topology]": load.TOPOLOGY_KEYS,
    "[topology] links (table form)": load.LINK_KEYS,
    "[hosts.NAME]": load.HOST_KEYS,
    "[hosts.NAME] tcp": load.TCP_KEYS,
    "[capture]": observe.CAPTURE_KEYS,
    "[trace]": observe.TRACE_KEYS,
    "[[part]]": load.PART_KEYS,
    "[[expect]]": expect.EXPECT_KEYS,
    "rubric (bufferlab grade --rubric)": expect.RUBRIC_KEYS,
    "rubric [require]": expect.REQUIRE_KEYS,
}

_PROFILE_KNOB = "a knob of the profile, overriding it (python/bufferlab/profile.py)"

#: table -> key -> what it means. tests/test_docs.py: exactly the loader's keys.
KEY_DOCS: dict[str, dict[str, str]] = {
    "top level": {
        "name": "the scenario's title (results go to `results/<slug of name>/`)",
        "seed": "integer seed of every random process; same seed, same outputs",
        "sim": "the `[sim]` table",
        "topology": "the `[topology]` table",
        "hosts": "per-host settings, `[hosts.NAME]`",
        "capture": "the `[capture]` table: pcap of whole interfaces",
        "trace": "the `[trace]` table: exact queue traces",
        "part": "the `[[part]]` array: the handout's sections, run one after another",
        "params": "the `[params]` table: named values with defaults, used as `${name}` or "
        "`${expr}` in any string (docs/sweeps.md); `run --set name=value` overrides them",
        "expect": "the `[[expect]]` array: expectations checked after the run (docs/teaching.md)",
    },
    "[sim]": {
        "profile": '`"lab2019"` (default) or `"modern"`: tool and kernel versions',
        "queue_sample_interval": "sampling period of `plot_q.sh` (duration)",
        "stop_at": "cap on one part's simulated length (duration)",
        "part_gap": 'idle time before each part after the first (duration, default `"5s"`)',
        "gso": "TSO/GSO aggregates as on a Mininet VM (default true)",
        "arp": "resolve addresses with ARP before the first packet (default true)",
        "host_packet_ns": "host stack time per packet and direction (ns)",
        "host_byte_ps": "host stack time per byte (ps)",
        "host_wakeup_ns": "time to wake ping (ns)",
        "host_noise": 'every host\'s receive-path timing noise, lognormal: `{ median = "5us", p99 = '
        '"600us", max = "1.5ms" }` (unset: punctual hosts; docs/models.md "Host timing noise")',
        "max_tcp_header": "the simulated kernel build's `MAX_TCP_HEADER`: 192, 256 or 320 (unset: 320, "
        "as distribution kernels; it sizes the send buffer, docs/semantics/tcp.md §6.2)",
        "reader_wakeup": "every host's reading processes' scheduling latency, a table as `host_noise` "
        '(unset: a reader runs at each arrival; docs/models.md "Process timing")',
        "app_setup": "every host's server programs' set-up work before a test starts (iperf3: last "
        'cookie to TEST_START), a table as `host_noise` (unset: none; docs/models.md "Process timing")',
        "iperf3_version": _PROFILE_KNOB + ', e.g. `"3.12"`',
        "ping_style": _PROFILE_KNOB + ": iputils output style",
        "netem_time_ns": _PROFILE_KNOB + ": netem's time resolution",
        "tc_modern_print": _PROFILE_KNOB + ": iproute2 6.x `tc` output",
        "netem_modern_accounting": _PROFILE_KNOB + ": netem's backlog accounting of Linux 6.x",
        "ping_send_lag_us": _PROFILE_KNOB + ": ping's send delay",
        "iperf3_socket_base": _PROFILE_KNOB + ": first socket number iperf3 prints",
        "system_info": _PROFILE_KNOB + ": the `uname` string in iperf3 JSON",
        "epoch": _PROFILE_KNOB + ": wall-clock time of simulated time 0 (Unix seconds)",
        "red_adaptive_timer": _PROFILE_KNOB + ": RED's adaptive timer as the kernel runs it",
        "iperf3_send_loop_us": _PROFILE_KNOB + ": iperf3's send loop period",
    },
    "[topology]": {
        "hosts": "host names in order: host hN is 10.0.0.N (Mininet's ipAdd)",
        "switches": "switch names",
        "routers": "router names (forward IP between their interfaces)",
        "links": "pairs `[a, b]` or tables (below); the k-th link of switch sX is sX-eth<k>",
        "mn": 'a MiniEdit drawing instead of hosts/switches/links: `mn = "Lab 14.mn"` (below)',
    },
    "[topology] links (table form)": {
        "a": "one end (node name)",
        "b": "the other end",
        "a_intf": "interface name on `a` (default Mininet's)",
        "b_intf": "interface name on `b`",
        "a_ip": "address/prefix on `a`",
        "b_ip": "address/prefix on `b`",
        "bw": "Mininet TCLink bandwidth (Mbit/s)",
        "delay": "TCLink delay (duration)",
        "jitter": "TCLink jitter (duration)",
        "loss": "TCLink loss (percent)",
        "max_queue_size": "TCLink queue size (packets)",
        "wire_rate": "a physical wire's rate (tc rate syntax)",
        "wire_delay": "a physical wire's propagation delay (duration)",
    },
    "[hosts.NAME]": {
        "tcp": "TCP defaults of the host, applied before sysctls and `-C`/`-w`",
        "noise": "the host's timing noise, a table as `[sim] host_noise`, or `false` for none",
        "reader_wakeup": "the host's readers' scheduling latency, as `[sim] reader_wakeup`, or `false`",
        "app_setup": "the host's server programs' set-up work, as `[sim] app_setup`, or `false`",
    },
    "[hosts.NAME] tcp": {
        "flavour": '`"linux"` (default) or `"ns3"` (ns-3\'s TcpSocketBase)',
        "mss": "maximum segment size (bytes)",
        "min_rto": "minimum retransmission timeout (duration)",
        "rcvbuf": "receive buffer (bytes)",
        "sndbuf": "send buffer (bytes)",
        "init_cwnd": "initial congestion window (segments)",
        "congestion": "congestion control: " + ", ".join(sysctl.SUPPORTED_CC),
    },
    "[capture]": {
        "interfaces": 'interface names or `"all"`: `results/<scenario>/capture_<iface>.pcap`',
        "snaplen": "bytes kept per frame (default 262144)",
        "format": '`"pcap"`, `"pcap_ns"` or `"pcapng"`',
        "filter": "a tcpdump filter of the supported subset (see Commands)",
        "segment_gso": "write a GSO aggregate's segments instead of one large frame",
    },
    "[trace]": {
        "queues": 'interface names or `"all"`: `<part>/queue_trace_<iface>.parquet`',
        "min_interval": "thinning: records of a kind at least this far apart (duration)",
    },
    "[[part]]": {
        "name": "the part's name (its results folder)",
        "cmds": 'command lines `"<terminal>: <shell line>"`',
        "duration": "keep the part alive at least this long (duration)",
        "stop": "ns-3's Simulator::Stop: Ctrl-C every application still running then",
        "interrupt": 'terminals (or `"all"`) to Ctrl-C when the part ends',
        "allow_fail": "lines of this part expected to fail",
    },
    "[[expect]]": {
        "name": "the expectation's name (a test's name in results.json; unique)",
        "expr": "an expression over a part's results: the `[params]` language plus `goodput(\"h1\")`, "
        "`ping_avg(\"h2\")`, `drops(\"s1-eth2\")`, `jain(...)` ... (docs/teaching.md); a value with "
        "`min`/`max`, or a comparison",
        "part": "the part (or list of parts) it is checked in; omitted: every part, each must pass",
        "min": "the smallest passing value (inclusive)",
        "max": "the largest passing value (inclusive)",
        "points": "points when it holds in every part checked, else 0 (default 1)",
        "hint": "a line shown with a failure",
        "visibility": 'Gradescope visibility of its test: `"visible"` (default), `"hidden"`, '
        '`"after_due_date"` or `"after_published"`',
    },
    "rubric (bufferlab grade --rubric)": {
        "name": "the assignment's title (results.json's output)",
        "seed": "the seed every submission runs with (overrides the submission's own)",
        "expect": "`[[expect]]` entries, as in a scenario",
        "require": "the `[require]` table: what a submission must keep",
    },
    "rubric [require]": {
        "parts": "part names the submission must have",
        "topology": "a scenario (path relative to the rubric) whose nodes, links and link settings the "
        "submission's must equal",
        "forbid": "top-level tables or dotted keys (`sim`, `sim.gso`, `hosts.h1`) the submission must "
        "not set",
    },
}


def scenario_page() -> str:
    out = [
        "# Scenario format",
        "",
        "Generated from the loader's key sets (`python/bufferlab/scenario/load.py`,",
        "`scenario/observe.py`) and the engine's JSON Schema (`bufferlab._core.schema()`).",
        "An unknown key is an error naming its line and column, with a suggestion.",
        "[Getting started](../index.md#a-scenario) shows them in use.",
    ]
    for table, keys in LOADER_KEYS.items():
        docs = KEY_DOCS.get(table, {})
        out += ["", f"## {table}", "", "| key | meaning |", "|---|---|"]
        out += [f"| `{k}` | {docs.get(k, '**undocumented**')} |" for k in sorted(keys)]
    out += ["", "## MiniEdit files (`mn = FILE.mn`)", ""] + _doc(mn_file) + _mn_keys()
    out += [
        "",
        "## Engine requests",
        "",
        "What the Python layer sends the engine (serde JSON; see docs/internals.md). Each type, its",
        "fields and their JSON types, from the schema the engine validates against:",
    ]
    schema = json.loads(_core.schema())
    for name, d in sorted(schema.get("$defs", {}).items()):
        out += ["", f"### {name}", ""]
        if d.get("description"):
            out += [d["description"].replace("\n", " "), ""]
        variants = d.get("oneOf") or d.get("anyOf") or [d]
        for v in variants:
            props = v.get("properties")
            if not props:
                if "enum" in v or "const" in v:
                    out.append(f"- one of: {', '.join(f'`{x}`' for x in v.get('enum', [v.get('const')]))}")
                continue
            tag = props.get("kind", {}).get("const")
            fields = ", ".join(f"`{k}`: {_json_type(p)}" for k, p in props.items() if k != "kind")
            out.append(f"- {f'`kind = {tag}`: ' if tag else ''}{fields or '(no fields)'}")
    return "\n".join(out) + "\n"


def _json_type(p: dict[str, Any]) -> str:
    if "$ref" in p:
        return p["$ref"].rsplit("/", 1)[-1]
    t = p.get("type") or ("|".join(_json_type(x) for x in p["anyOf"]) if "anyOf" in p else "any")
    return "|".join(t) if isinstance(t, list) else t


def _options(specs: list[OptSpec], refused: set[str] | dict[str, Any] = frozenset()) -> list[str]:
    out = ["| option | value | status |", "|---|---|---|"]
    for s in specs:
        names = ", ".join([f"`-{s.short}`"] * bool(s.short) + [f"`--{n}`" for n in s.long])
        status = "refused: not supported yet" if s.key in refused else "supported"
        out.append(f"| {names} | {'yes' if s.arg else ''} | {status} |")
    return out


_ROLE = re.compile(r":(?:class|func|meth|mod|attr):`(~?)([\w.]+)`")


def _doc(obj: Any) -> list[str]:
    """A module's docstring as Markdown: RST double backquotes and roles become code spans,
    a literal block's ``::`` a colon (the block is indented, so Markdown keeps it as code)."""
    text = (inspect.getdoc(obj) or "").replace("``", "`").replace("::\n", ":\n")
    text = _ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)
    return [text, ""]


#: what the parsers accept but the model refuses in context (README "Not supported yet")
CONTEXT_LIMITS = [
    "UDP `iperf3 -R` and TCP `iperf3 -b` are refused as not supported yet.",
    "`tcpdump` and `tshark` only write files (`-w`); printing packets is not supported.",
    "`ethtool -K` models the features `tso`, `gso` and `gro` only.",
]


#: the .mn keys the network model reads (the others of each table are accepted without effect)
_MN_HONOURED = {
    "hosts[].opts": ({"hostname", "nodeNum", "ip", "defaultRoute"}, mn_file.HOST_OPTS),
    "switches[].opts": ({"hostname", "nodeNum", "switchType"}, mn_file.SWITCH_OPTS),
    "links[]": ({"src", "dest", "opts"}, mn_file.LINK_KEYS),
    "links[].opts": (mn_file.LINK_OPTS, mn_file.LINK_OPTS),
    "application": ({"ipBase"}, mn_file.APP_KEYS),
}


def _mn_keys() -> list[str]:
    """Which keys of a MiniEdit file bufferlab honours, accepts, or warns about."""
    out = ["| table | honoured | accepted, no effect |", "|---|---|---|"]
    for table, (used, known) in _MN_HONOURED.items():
        row = [", ".join(f"`{k}`" for k in sorted(keys)) or "-" for keys in (used, known - used)]
        out.append(f"| `{table}` | {row[0]} | {row[1]} |")
    out += [
        "",
        "Warned about when set (a real run would behave differently): "
        + ", ".join(f"`{k}` ({why})" for k, why in mn_file.UNMODELLED.items())
        + "; any unknown key is warned about and ignored.",
        "",
    ]
    return out


def commands_page() -> str:
    out = [
        "# Commands",
        "",
        "Generated from the parsers (`python/bufferlab/commands/`). Each section starts with the",
        "parser's own description, which names the real tool's source it follows and its deviations.",
        "An option marked *refused* is a real option of the tool that bufferlab parses only to",
        "say clearly that it is not supported yet.",
        "",
        "## Known limits",
        "",
    ]
    out += [f"- {line}" for line in CONTEXT_LIMITS]
    out += ["", "## Programs", "", "What a line may run (`python/bufferlab/run/programs/`: one record per",
            "program):", "", "| command | what it does |", "|---|---|"]
    out += [f"| `{name}` | {p.summary} |" for name, p in programs.PROGRAMS.items()] + [""]
    out += ["## Shell features", ""] + _doc(shell)
    out += ["## tc qdisc", ""]
    out += _doc(tc)
    out += [
        "Known but not modelled (a clear error): "
        + ", ".join(f"`{k}`" for k in registry.KNOWN_UNMODELLED_QDISCS),
        "",
    ]
    seen: set[str] = set()
    for name, kind in registry.QDISC_KINDS.items():
        module = inspect.getmodule(kind.parse_opt)
        out += [f"### {name}", ""]
        if module.__name__ not in seen:
            seen.add(module.__name__)
            out += _doc(module)
            for attr, value in vars(module).items():
                if attr.endswith(("_EXPECTED", "_USAGE")) and isinstance(value, str):
                    out += ["```text", value, "```", ""]
        else:
            out += [f"Parsed as in the section of `{module.__name__.rsplit('.', 1)[-1]}` above.", ""]
    out += ["## sysctl", ""] + _doc(sysctl)
    out += (
        ["| key | value |", "|---|---|"]
        + [f"| `{k}` | {v} |" for k, v in sysctl.MODELLED_KEYS.items()]
        + [""]
    )
    out += ["## iperf3", ""] + _doc(iperf3) + _options(iperf3._SPECS, iperf3._UNSUPPORTED) + [""]
    out += ["## ping", ""] + _doc(ping) + _options(ping._SPECS)
    out += ["", "Other iputils options (refused): " + ", ".join(f"`-{k}`" for k in ping._OTHER), ""]
    out += ["## Generators: " + ", ".join(generators.GENERATORS), ""] + _doc(generators)
    out += ["```text", *generators._USAGE.values(), "```", ""]
    out += ["## ns3-goodput", ""] + _doc(ns3)
    out += ["## Capture: tcpdump, tshark", ""] + _doc(capture)
    out += [
        "Filter subset: `" + capture.SUBSET + "`",
        "",
        "Refused filter keywords: " + ", ".join(f"`{k}`" for k in sorted(capture.UNSUPPORTED)),
        "",
    ]
    out += ["## ethtool", ""] + _doc(ethtool)
    out += ["## Processes and jobs: " + ", ".join(f"`{p.name}`" for p in procs_programs.PROGRAMS), ""]
    out += _doc(procs) + _doc(procs_run) + _doc(procs_fmt)
    out += ["## Host network: " + ", ".join(f"`{p.name}`" for p in netinfo_run.PROGRAMS), ""]
    out += _doc(netinfo) + _doc(netinfo_run) + _doc(netinfo_fmt)
    for module in _other_command_modules():  # a command added later gets its section at once
        out += [f"## {module.__name__.rsplit('.', 1)[-1]}", ""] + _doc(module)
        specs = getattr(module, "_SPECS", None)
        if isinstance(specs, list) and all(isinstance(s, OptSpec) for s in specs):
            out += _options(specs, getattr(module, "_UNSUPPORTED", set())) + [""]
    return "\n".join(out) + "\n"


#: the command modules commands_page() describes by hand (shell and the helpers have no command)
_DESCRIBED = (shell, tc, sysctl, iperf3, ping, generators, ns3, capture, ethtool, procs, netinfo)


def _other_command_modules() -> list[Any]:
    names = {m.__name__ for m in _DESCRIBED}
    found = pkgutil.iter_modules(commands.__path__, commands.__name__ + ".")
    return [
        importlib.import_module(m.name)
        for m in found
        if m.name not in names and not m.name.rsplit(".", 1)[-1].startswith("_")
    ]


def cli_page() -> str:
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal width
    parser = cli._parser()
    out = [
        "# Command line",
        "",
        "Generated from `bufferlab`'s argparse parser (`python/bufferlab/cli.py`).",
        "",
        "```text",
        parser.format_help().rstrip(),
        "```",
    ]
    for action in parser._subparsers._group_actions:  # the sub-commands
        for name, sub in action.choices.items():
            out += ["", f"## bufferlab {name}", "", "```text", sub.format_help().rstrip(), "```"]
    return "\n".join(out) + "\n"


PAGES = {
    "reference/scenario.md": scenario_page,
    "reference/commands.md": commands_page,
    "reference/cli.md": cli_page,
}
