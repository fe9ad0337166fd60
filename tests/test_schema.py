"""One schema per boundary type, owned by Rust (issue 12).

``bufferlab._core.schema()`` is the JSON Schema the core derives from the very
types serde reads its requests into, every object closed. Here (a) every request
the Python layer hands the engine -- while running the shipped scenarios (the
handouts' command lines), a capture and a classes scenario, and for every ``tc qdisc``,
``tc class`` and ``tc filter`` line of the handouts, scenarios and tests -- validates
against it, and (b) the core
refuses a key it does not know, naming it. The tc parsers' request types
(python/bufferlab/commands/tc/_schema.py) are generated from it by
tools/gen_schema_types.py; (c) the committed module is what the script writes now.

Run from the repository root: PYTHONPATH=python python -m pytest tests/test_schema.py -q
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bufferlab import _core, load_scenario, run_scenario
from bufferlab.commands.shell import parse_shell
from bufferlab.commands.tc import TcQdiscRequest, _schema, parse_tc
from bufferlab.errors import BufferlabError, Diagnostics
from bufferlab.profile import PROFILES
from conftest import ROOT, SCENARIOS, TWO_HOSTS

sys.path.insert(0, str(ROOT / "tools"))
import gen_schema_types  # noqa: E402

SCHEMA = json.loads(_core.schema())
#: the definition each JSON-taking engine entry point deserialises
ENTRY_POINTS = {
    "Simulator": "SimConfig",
    "tc": "TcRequest",
    "tc_class": "ClassRequest",
    "tc_filter": "FilterRequest",
    "tc_hook_filter": "HookFilterRequest",
    "start_app": "AppSpec",
    "set_listener_tcp": "TcpSpec",
    "capture_start": "CaptureSpec",
}
#: the handouts' command lines (test data, as tests/test_parsers.py finds them)
HANDOUTS = ROOT / "tests" / "data" / "handouts"

CAPTURE_SCENARIO = f"""{TWO_HOSTS}
[capture]
interfaces = ["s1-eth2"]
snaplen = 128

[[part]]
name = "capture"
cmds = [
  "h2: tcpdump -i h2-eth0 -w h2.pcap -c 3 icmp &",
  "h1: tshark -i h1-eth0 -w h1.cap -f 'icmp and ip[1] == 0' &",
  "h1: ping -c 3 10.0.0.2",
]
"""


#: class, u32 filter and graft lines (the shipped scenarios have no u32 filter at a qdisc)
CLASSES_SCENARIO = f"""{TWO_HOSTS}
[[part]]
name = "classes"
cmds = [
  "admin: tc qdisc add dev s1-eth2 root handle 1: htb default 10",
  "admin: tc class add dev s1-eth2 parent 1: classid 1:10 htb rate 5mbit",
  "admin: tc filter add dev s1-eth2 parent 1: protocol ip prio 1 u32 match ip dport 5201 0xffff flowid 1:10",
  "admin: tc qdisc add dev s1-eth2 parent 1:10 handle 10: fq_codel",
  "admin: tc class del dev s1-eth2 classid 1:10",
]
"""


def validator(definition: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": SCHEMA["$defs"]})


def schema_errors(definition: str, request: Any) -> list[str]:
    errors = validator(definition).iter_errors(request)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


@dataclass
class Crossing:
    """One request handed to the engine: the entry point, its JSON, and for
    ``start_app`` the node (to replay it)."""

    entry: str
    text: str
    node: str | None = None


def recording_simulator(crossings: list[Crossing]) -> type:
    """The native ``Simulator`` with every JSON argument recorded on its way in."""
    native = _core.Simulator

    class Recording:
        def __init__(self, config_json: str) -> None:
            crossings.append(Crossing("Simulator", config_json))
            self._sim = native(config_json)

        def tc(self, request_json: str) -> None:
            crossings.append(Crossing("tc", request_json))
            self._sim.tc(request_json)

        def tc_class(self, request_json: str) -> str | None:
            crossings.append(Crossing("tc_class", request_json))
            return self._sim.tc_class(request_json)

        def tc_filter(self, request_json: str) -> None:
            crossings.append(Crossing("tc_filter", request_json))
            self._sim.tc_filter(request_json)

        def tc_hook_filter(self, request_json: str) -> None:
            crossings.append(Crossing("tc_hook_filter", request_json))
            self._sim.tc_hook_filter(request_json)

        def start_app(self, node: str, spec_json: str) -> int:
            crossings.append(Crossing("start_app", spec_json, node))
            return self._sim.start_app(node, spec_json)

        def set_listener_tcp(self, app_id: int, spec_json: str) -> None:
            crossings.append(Crossing("set_listener_tcp", spec_json))
            self._sim.set_listener_tcp(app_id, spec_json)

        def capture_start(self, spec_json: str) -> int:
            crossings.append(Crossing("capture_start", spec_json))
            return self._sim.capture_start(spec_json)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._sim, name)

    return Recording


@pytest.fixture(scope="module")
def crossings(tmp_path_factory: pytest.TempPathFactory) -> list[Crossing]:
    """Every request the shipped scenarios, a capture and a classes scenario hand the engine."""
    tmp = tmp_path_factory.mktemp("schema")
    (tmp / "capture.toml").write_text(CAPTURE_SCENARIO, encoding="utf-8")
    (tmp / "classes.toml").write_text(CLASSES_SCENARIO, encoding="utf-8")
    seen: list[Crossing] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_core, "Simulator", recording_simulator(seen))
        for scenario in [*sorted(SCENARIOS.glob("*.toml")), tmp / "capture.toml", tmp / "classes.toml"]:
            run_scenario(load_scenario(scenario), results_root=tmp / "results", progress=False)
    return seen


def test_the_schema_is_a_valid_draft_2020_12_schema_with_a_definition_per_entry_point() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert set(ENTRY_POINTS.values()) <= set(SCHEMA["$defs"])


def kinds(definition: str, tag: str) -> set[str]:
    """The tags of a tagged enum's alternatives."""
    return {alt["properties"][tag]["const"] for alt in SCHEMA["$defs"][definition]["oneOf"]}


def test_every_request_of_the_scenarios_matches_the_schema(crossings: list[Crossing]) -> None:
    assert {c.entry for c in crossings} == set(ENTRY_POINTS), "every entry point exercised"
    apps = {json.loads(c.text)["kind"] for c in crossings if c.entry == "start_app"}
    assert apps == kinds("AppSpec", "kind"), "every application exercised"
    for c in crossings:
        assert schema_errors(ENTRY_POINTS[c.entry], json.loads(c.text)) == [], (c.entry, c.text)


def tc_lines() -> list[str]:
    """Every ``tc qdisc`` modification in the handouts, shipped scenarios and
    tests' sample lines (up to the end of the quoted string or line)."""
    pattern = re.compile(r"\btc qdisc (?:add|change|replace|link|del|delete) [^\"'\n]*")
    files = [*HANDOUTS.glob("*.txt"), *SCENARIOS.glob("*.toml"), *Path(__file__).parent.glob("*.py")]
    texts = [f.read_text(encoding="utf-8") for f in files]
    return sorted({m.group(0).strip() for text in texts for m in pattern.finditer(text)})


def test_every_tc_request_the_parser_builds_from_sample_lines_matches_the_schema() -> None:
    built = set()
    requests = 0
    for line in tc_lines():
        for profile in PROFILES.values():
            try:
                req = parse_tc(parse_shell(line)[0].commands[0].words, Diagnostics(), profile)
            except BufferlabError:
                continue  # a sample of what tc refuses
            assert isinstance(req, TcQdiscRequest), line
            assert req.qdisc is None or isinstance(req.qdisc, _schema.QdiscSpec), "a generated type"
            d = req.to_dict()
            assert schema_errors("TcRequest", d) == [], (line, d)
            requests += 1
            built.add((d["qdisc"] or {}).get("kind"))
    missing = kinds("QdiscSpec", "kind") - built
    assert not missing, f"no sample line builds {sorted(missing)}"
    assert requests > 100


def test_every_class_and_filter_request_of_the_sample_lines_matches_the_schema() -> None:
    """``tc class`` and ``tc filter`` lines of the handouts, scenarios and tests: each
    verb's request (``to_dict``) against its entry point's definition."""
    pattern = re.compile(r"\btc (?:class|filter) (?:add|change|replace|del|delete) [^\"'\n]*")
    files = [*HANDOUTS.glob("*.txt"), *SCENARIOS.glob("*.toml"), *Path(__file__).parent.glob("*.py")]
    texts = [f.read_text(encoding="utf-8") for f in files]
    lines = sorted({m.group(0).strip() for text in texts for m in pattern.finditer(text)})
    definition = {"TcClassRequest": "ClassRequest", "TcFilterRequest": "FilterRequest",
                  "HookFilterRequest": "HookFilterRequest"}
    built: dict[str, int] = {}
    for line in lines:
        try:
            req = parse_tc(parse_shell(line)[0].commands[0].words, Diagnostics(), PROFILES["modern"])
        except BufferlabError:
            continue  # a sample of what tc refuses
        name = definition[type(req).__name__]
        assert schema_errors(name, req.to_dict()) == [], (line, req.to_dict())
        built[name] = built.get(name, 0) + 1
    assert set(built) == set(definition.values()) and min(built.values()) >= 5, built


def test_the_generated_request_types_are_what_the_script_writes_now() -> None:
    committed = gen_schema_types.OUTPUT.read_text(encoding="utf-8")
    assert committed == gen_schema_types.render(SCHEMA), (
        f"{gen_schema_types.OUTPUT.relative_to(ROOT)} is not what the engine's schema gives: "
        f"run {gen_schema_types.COMMAND}"
    )


def test_the_generated_types_follow_the_schema() -> None:
    """Each generated class: its ``JSON_KEYS`` the schema's ``x-order`` (every property, in
    serde's order), the ones serde may leave out with a default, the others without."""
    defs = SCHEMA["$defs"]
    classes = {name: cls for name, cls in vars(_schema).items()
               if isinstance(cls, type) and cls.__module__ == _schema.__name__}
    made = [(class_name, schema, schema["x-order"][0] if "oneOf" in defs[name] else None)
            for name in gen_schema_types.GENERATED
            for class_name, schema in gen_schema_types.alternatives(defs, name)]
    assert sorted(name for name, _, _ in made) == sorted(classes) and len(classes) > 35
    for name, schema, tag in made:
        cls = classes[name]
        assert list(cls.JSON_KEYS) == schema["x-order"] and set(schema["x-order"]) == set(schema["properties"])
        for f in dataclasses.fields(cls):
            key = f.name.removesuffix("_")
            has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            assert has_default == (key not in schema.get("required", []) or key == tag), (name, key)
            assert not f.init if key == tag else f.init


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_the_core_refuses_a_renamed_key_and_names_it(crossings: list[Crossing], entry: str) -> None:
    sent = next(c for c in crossings if c.entry == entry)
    request = json.loads(sent.text)
    # an older or misspelt name of a field (the tag stays, so the variant is known)
    key = next(k for k in request if k != "kind")
    renamed = {("renamed_" + k if k == key else k): v for k, v in request.items()}
    assert schema_errors(ENTRY_POINTS[entry], renamed), "the schema refuses it too"
    sim = _core.Simulator(next(c.text for c in crossings if c.entry == "Simulator"))
    app = next(c for c in crossings if c.entry == "start_app")
    send = {
        "Simulator": _core.Simulator,
        "tc": sim.tc,
        "tc_class": sim.tc_class,
        "tc_filter": sim.tc_filter,
        "tc_hook_filter": sim.tc_hook_filter,
        "start_app": lambda j: sim.start_app(sent.node, j),
        "set_listener_tcp": lambda j: sim.set_listener_tcp(sim.start_app(app.node, app.text), j),
        "capture_start": sim.capture_start,
    }[entry]
    with pytest.raises(_core.SchemaError, match=f"unknown field `renamed_{key}`, expected"):
        send(json.dumps(renamed))
