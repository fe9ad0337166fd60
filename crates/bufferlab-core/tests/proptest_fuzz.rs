//! Property tests of the engine's entry points (issue 16, docs/fuzzing.md).
//!
//! - Spec deserialisation: any JSON-ish text given to `serde_json::from_str`
//!   as a `TcRequest`, `AppSpec` or `SimConfig`, to `Simulator::from_json`,
//!   `tc` or `start_app` is a value or an error, never a panic.
//! - The engine fed random valid configurations (Lab 14's small topology,
//!   a random netem → tbf/fifo chain on a random interface, a few random
//!   applications) for a bounded number of events never panics, and packet
//!   conservation holds: created = delivered + dropped + live + segmented.
//!
//! `PROPTEST_CASES=5000 cargo test -p bufferlab-core --test proptest_fuzz`
//! runs a longer campaign (the default is 32 engine cases, 256 spec cases).

use bufferlab_core::app::{App, AppSpec};
use bufferlab_core::engine::SimConfig;
use bufferlab_core::qdisc::spec::TcRequest;
use bufferlab_core::time::SimTime;
use bufferlab_core::Simulator;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::BTreeSet;

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

// ------------------------------------------------------------------ JSON-ish input

/// Keys that name no field of the schema (a unit variant's name, fields of
/// other tools), for the unknown-field paths; [`schema_words`] gives the rest.
const OTHER_KEYS: &[&str] = &["root", "min", "probability"];
/// Words of requests besides the schema's constants ([`schema_words`]) and
/// the names [`registered`] lists: nodes, devices and addresses.
const STRINGS: &[&str] = &[
    "ifb0",
    "h1",
    "h3",
    "s1",
    "s1-eth2",
    "h1-eth0",
    "10.0.0.3",
    "10.0.0.256",
    "",
];

/// Every property name and every string constant (`enum`, `const`) of the
/// engine's schema (`schema::input_schema`): the keys and words of every
/// request and enum, so the dictionary follows the engine (a hand list of
/// keys lacked htb's).
fn schema_words() -> (Vec<String>, Vec<String>) {
    fn walk(v: &Value, keys: &mut BTreeSet<String>, words: &mut BTreeSet<String>) {
        match v {
            Value::Object(o) => {
                if let Some(Value::Object(props)) = o.get("properties") {
                    keys.extend(props.keys().cloned());
                }
                let listed = o
                    .get("enum")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten();
                let consts = listed.chain(o.get("const")).filter_map(Value::as_str);
                words.extend(consts.map(str::to_owned));
                o.values().for_each(|x| walk(x, keys, words));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, keys, words)),
            _ => {}
        }
    }
    let (mut keys, mut words) = (BTreeSet::new(), BTreeSet::new());
    walk(
        &bufferlab_core::schema::input_schema(),
        &mut keys,
        &mut words,
    );
    keys.extend(OTHER_KEYS.iter().map(|k| k.to_string()));
    (keys.into_iter().collect(), words.into_iter().collect())
}

/// What the engine registers (schema::registry, App::KINDS): every qdisc
/// kind, congestion control and application, so the dictionary misses none.
fn registered() -> Vec<String> {
    let reg = bufferlab_core::schema::registry();
    let names = (reg.congestion_controls.iter()).chain(App::KINDS);
    reg.qdiscs
        .into_iter()
        .chain(names.map(|n| n.to_string()))
        .collect()
}

#[test]
fn the_dictionary_has_the_keys_and_words_of_every_request() {
    let (keys, words) = schema_words();
    let has = |list: &[String], w: &str| list.iter().any(|k| k == w);
    // htb's keys and a u32 filter's, which the hand list lacked; a flower filter's; verbs,
    // an action, a loss model, a cake flow mode, a classifier and a flower port range
    let htb = [
        "r2q",
        "direct_qlen",
        "leaf_limit",
        "classes",
        "filters",
        "cbuffer",
    ];
    let flower = [
        "flowid", "ip_proto", "dst_port", "ip_tos", "ip_flags", "indev", "skip_hw",
    ];
    for key in htb.iter().chain(&flower) {
        assert!(has(&keys, key), "{key}");
    }
    for word in [
        "add",
        "delete",
        "mirred",
        "gemodel",
        "triple-isolate",
        "flower",
        "range",
    ] {
        assert!(has(&words, word), "{word}");
    }
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        prop_oneof![
            Just(0u64),
            Just(1),
            Just(u32::MAX as u64),
            Just(u64::MAX),
            Just(1 << 32)
        ]
        .prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(
            [
                STRINGS.iter().map(|w| w.to_string()).collect(),
                schema_words().1,
                registered()
            ]
            .concat()
        )
        .prop_map(Value::from),
        ".{0,8}".prop_map(Value::from),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(schema_words().0), inner), 0..8)
                .prop_map(|kv| { Value::Object(kv.into_iter().collect()) }),
        ]
    })
}

/// JSON text: a serialised value, possibly cut or with a byte changed.
fn json_text() -> impl Strategy<Value = String> {
    (
        json_value(),
        any::<u8>(),
        any::<prop::sample::Index>(),
        0u8..4,
    )
        .prop_map(|(v, b, at, how)| {
            let mut s = v.to_string();
            if s.is_empty() {
                return s;
            }
            let i = at.index(s.len());
            let i = (0..=i).rev().find(|&j| s.is_char_boundary(j)).unwrap_or(0);
            match how {
                0 => s.truncate(i),
                1 => s.insert(i, (b % 0x7f) as char),
                _ => {}
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    #[test]
    fn spec_deserialisation_never_panics(text in json_text()) {
        let _ = serde_json::from_str::<TcRequest>(&text);
        let _ = serde_json::from_str::<AppSpec>(&text);
        let _ = serde_json::from_str::<SimConfig>(&text);
        let _ = Simulator::from_json(&text);
    }

    #[test]
    fn tc_and_start_app_with_any_spec_never_panic(v in json_value(), tc_like in any::<bool>()) {
        let mut sim = lab14();
        if tc_like {
            if let Ok(req) = serde_json::from_value::<TcRequest>(v.clone()) {
                let _ = sim.tc(&req);
            }
        }
        let text = v.to_string();
        if let Ok(id) = sim.start_app("h1", &text) {
            let _ = sim.run_bounded(SimTime(100 * MS), 20_000);
            let _ = sim.app_result(id);
            let _ = sim.stop_app(id);
        }
        assert_conservation(&sim);
    }
}

// ------------------------------------------------------------------ random valid configs

fn lab14() -> Simulator {
    let cfg = json!({
        "seed": 1,
        "nodes": [
            {"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}, {"name": "h3", "kind": "host"},
            {"name": "s1", "kind": "switch"}, {"name": "s2", "kind": "switch"}
        ],
        "links": [
            {"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"}, "b": {"node": "s1", "intf": "s1-eth1"}},
            {"a": {"node": "s1", "intf": "s1-eth2"}, "b": {"node": "s2", "intf": "s2-eth1"}},
            {"a": {"node": "s2", "intf": "s2-eth2"}, "b": {"node": "h3", "intf": "h3-eth0", "ip": "10.0.0.3"}},
            {"a": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"}, "b": {"node": "s1", "intf": "s1-eth3"}}
        ],
    });
    Simulator::from_json(&cfg.to_string()).unwrap()
}

fn netem() -> impl Strategy<Value = Value> {
    (
        1u32..2000,
        0u64..50 * MS,
        0u64..5 * MS,
        prop_oneof![Just(0u32), 0u32..u32::MAX / 10, Just(u32::MAX)],
        0u32..5,
        prop_oneof![Just(0u32), 0u32..u32::MAX / 20],
    )
        .prop_map(|(limit, latency, jitter, p, gap, duplicate)| {
            json!({"kind": "netem", "limit": limit, "latency": latency, "jitter": jitter,
                   "loss": {"model": "random", "p": p}, "gap": gap, "duplicate": duplicate})
        })
}

fn cake() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop_oneof![Just(0u64), 1_000u64..20_000_000]),
        prop::sample::select(
            &[
                "besteffort",
                "diffserv3",
                "diffserv4",
                "diffserv8",
                "precedence",
            ][..],
        ),
        prop::sample::select(
            &[
                "flowblind",
                "srchost",
                "dsthost",
                "hosts",
                "flows",
                "dual-srchost",
                "dual-dsthost",
                "triple-isolate",
            ][..],
        ),
        prop::option::of(-64i32..=256),
        prop::sample::select(&["noatm", "atm", "ptm"][..]),
        prop::sample::select(&["none", "filter", "aggressive"][..]),
        prop::option::of(1u32..4_000_000),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_map(
            |(bw, ds, fm, oh, atm, ack, mem, (ingress, wash, split, autorate))| {
                json!({"kind": "cake", "bandwidth": bw, "diffserv": ds, "flowmode": fm,
                   "overhead": oh, "atm": atm, "ack_filter": ack, "memlimit": mem,
                   "ingress": ingress, "wash": wash, "split_gso": split, "autorate": autorate})
            },
        )
}

fn leaf_qdisc() -> impl Strategy<Value = Value> {
    prop_oneof![
        (1_000u64..200_000_000, 1_600u32..200_000, 1_600u32..2_000_000)
            .prop_map(|(rate, burst, limit)| json!({"kind": "tbf", "rate": rate, "burst": burst, "limit": limit})),
        prop::option::of(1u32..2000).prop_map(|l| json!({"kind": "pfifo", "limit": l})),
        prop::option::of(1u32..3_000_000).prop_map(|l| json!({"kind": "bfifo", "limit": l})),
        prop::option::of(1u32..2000).prop_map(|l| json!({"kind": "pfifo_head_drop", "limit": l})),
        netem(),
        (
            prop::option::of(1u32..3000),
            prop::option::of(1u32..200),
            prop::option::of(10_000u32..200_000_000),
            prop::option::of(any::<bool>()),
            prop::option::of(0u32..20_000),
        )
            .prop_map(|(limit, flow_limit, maxrate, pacing, ce)| {
                json!({"kind": "fq", "limit": limit, "flow_limit": flow_limit, "maxrate": maxrate,
                       "pacing": pacing, "ce_threshold": ce})
            }),
        (2u32..300, 0u32..128, any::<bool>(), 0i32..3, any::<bool>(), any::<bool>())
            .prop_map(|(limit, depth, headdrop, perturb, red, ecn)| {
                let red = red.then(|| json!({"qth_min": 3000, "qth_max": 9000, "wlog": 3, "plog": 20,
                                             "max_p": 85_899_345u32, "ecn": ecn, "harddrop": false}));
                json!({"kind": "sfq", "limit": limit, "depth": depth, "headdrop": headdrop,
                       "perturb": perturb, "red": red})
            }),
        (prop::option::of(1u32..2000), prop::option::of(1u32..1025), prop::option::of(any::<bool>()))
            .prop_map(|(limit, flows, ecn)| json!({"kind": "fq_pie", "limit": limit, "flows": flows, "ecn": ecn})),
        cake(),
    ]
}

/// 0..=2 tc requests on one interface: a root, optionally a child under it.
fn chain() -> impl Strategy<Value = Vec<Value>> {
    (
        prop::sample::select(&["s1-eth2", "s2-eth2", "h1-eth0", "s1-eth1"][..]),
        prop::option::of(leaf_qdisc()),
        prop::option::of(leaf_qdisc()),
        any::<bool>(),
    )
        .prop_map(|(dev, root, child, netem_root)| {
            let mut reqs = vec![];
            if let Some(q) = root {
                let q = if netem_root {
                    json!({"kind": "netem", "limit": 1000, "latency": 5 * MS,
                    "jitter": 0, "loss": {"model": "random", "p": 0}, "gap": 0, "duplicate": 0})
                } else {
                    q
                };
                reqs.push(
                    json!({"verb": "add", "dev": dev, "parent": "root", "handle": 1, "qdisc": q}),
                );
                if let Some(c) = child {
                    reqs.push(json!({"verb": "add", "dev": dev,
                        "parent": {"class": {"major": 1, "minor": 0}}, "handle": 2, "qdisc": c}));
                }
            }
            reqs
        })
}

fn app() -> impl Strategy<Value = (&'static str, Value)> {
    prop_oneof![
        (1u32..20, 1u64..200, 0u32..3000).prop_map(|(c, i, size)| (
            "h1",
            json!({"kind": "ping",
            "dst": "10.0.0.3", "count": c, "interval_ns": i * MS, "size": size})
        )),
        (
            prop::sample::select(&["cbr", "poisson"][..]),
            1_000u64..50_000_000,
            1u32..9000,
            1u64..3
        )
            .prop_map(|(pat, r, size, d)| (
                "h1",
                json!({"kind": "udp_source", "pattern": pat,
                "dst": "10.0.0.3", "port": 5001, "rate_bps": r, "size": size, "duration_ns": d * S})
            )),
        (1u64..2_000_000).prop_map(|b| (
            "h2",
            json!({"kind": "bulk", "dst": "10.0.0.3", "port": 5002,
            "bytes": b})
        )),
        (1u64..1000).prop_map(|i| (
            "h1",
            json!({"kind": "qmon", "dev": "s1-eth2", "interval_ns": i * MS})
        )),
    ]
}

fn assert_conservation(sim: &Simulator) {
    let s = sim.summary();
    let p = &s["packets"];
    let n = |k: &str| p[k].as_u64().unwrap();
    assert_eq!(
        n("created"),
        n("delivered") + n("dropped") + n("live") + n("segmented"),
        "conservation: {p}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(32)))]

    #[test]
    fn random_valid_configs_run_without_panic_and_conserve_packets(
        chains in prop::collection::vec(chain(), 1..3),
        apps in prop::collection::vec(app(), 1..4),
        stop_some in any::<bool>(),
    ) {
        let mut sim = lab14();
        for r in chains.iter().flatten() {
            let req: TcRequest = serde_json::from_value(r.clone()).unwrap();
            let _ = sim.tc(&req); // a refused request (e.g. a child under a classless root) is fine
        }
        let udp_sink = json!({"kind": "sink", "port": 5001, "proto": "udp"}).to_string();
        let tcp_sink = json!({"kind": "sink", "port": 5002, "proto": "tcp"}).to_string();
        sim.start_app("h3", &udp_sink).unwrap();
        sim.start_app("h3", &tcp_sink).unwrap();
        let mut ids = vec![];
        for (node, spec) in &apps {
            ids.push(sim.start_app(node, &spec.to_string()).unwrap());
        }
        // a bounded number of events, in stretches as the runner takes them
        let mut budget: u64 = 60_000;
        while budget > 0 {
            let before = sim.events_processed();
            match sim.run_bounded(SimTime(sim.now().as_nanos() + 500 * MS), budget.min(20_000)) {
                Ok(_) => {}
                Err(_) => break, // e.g. simulated time stalled: an error, not a panic
            }
            let used = sim.events_processed() - before;
            if used == 0 && sim.next_event_time().is_none() {
                break;
            }
            budget = budget.saturating_sub(used.max(1));
            if stop_some && budget < 30_000 {
                for &id in &ids {
                    let _ = sim.stop_app(id);
                }
            }
            assert_conservation(&sim);
        }
        for &id in &ids {
            let _ = sim.app_result(id);
        }
        let _ = sim.summary();
        assert_conservation(&sim);
    }
}
