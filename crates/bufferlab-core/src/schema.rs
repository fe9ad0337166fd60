//! The JSON Schema of every request the engine deserialises, derived from the
//! very types serde reads them into, so the Python side can validate what it
//! builds against what Rust accepts (tests/test_schema.py) and the two cannot
//! drift. Every object is closed (`deny_unknown_fields`, hence
//! `"additionalProperties": false`); a field with a serde default is optional.
//! Beside it, [`registry`]: the names the engine's registries give, for the
//! layers that must name them too.

use crate::app::{tcp::TcpSpec, AppSpec};
use crate::capture::CaptureSpec;
use crate::engine::SimConfig;
use crate::qdisc::spec::{ClassRequest, FilterRequest, HookFilterRequest, TcRequest};
use crate::tcp::cc::Cc;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde_json::{json, Value};

/// One JSON Schema (draft 2020-12) document whose `$defs` hold, among the
/// types they use, one definition per entry point: `SimConfig`
/// (`Simulator::from_json`), `TcRequest` (`tc`), `ClassRequest`
/// (`tc_class`), `FilterRequest` (`tc_filter`), `HookFilterRequest`
/// (`tc_hook_filter`), `AppSpec` (`start_app`),
/// `TcpSpec` (`set_listener_tcp`), `CaptureSpec` (`capture_start`).
///
/// Every object with `properties` also has `x-order`: its keys in the order
/// serde writes them (the Rust declaration order, a tag first), which the
/// `properties` map, sorted by name, loses. tools/gen_schema_types.py gives
/// the Python request types their fields in that order, so what Python sends
/// reads as what serde would write.
pub fn input_schema() -> Value {
    let mut defs = definitions(SchemaSettings::draft2020_12());
    // serialising, serde writes every field: the contract lists them all as
    // `required`, in declaration order
    let written = definitions(SchemaSettings::draft2020_12().for_serialize());
    add_field_order(&mut defs, &written);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "bufferlab engine requests",
        "$defs": defs,
    })
}

/// The `$defs` of the entry points' types under `settings`' contract.
fn definitions(settings: SchemaSettings) -> Value {
    let mut generator = settings.into_generator();
    generator.subschema_for::<SimConfig>();
    generator.subschema_for::<TcRequest>();
    generator.subschema_for::<ClassRequest>();
    generator.subschema_for::<FilterRequest>();
    generator.subschema_for::<HookFilterRequest>();
    generator.subschema_for::<AppSpec>();
    generator.subschema_for::<TcpSpec>();
    generator.subschema_for::<CaptureSpec>();
    Value::Object(generator.take_definitions(true))
}

/// Walks the deserialising schema `read` beside the serialising one
/// `written` (the same types, so the same shape) and gives every object
/// schema `x-order`, the `required` list of its twin in `written`.
fn add_field_order(read: &mut Value, written: &Value) {
    match (read, written) {
        (Value::Object(r), Value::Object(w)) => {
            if r.contains_key("properties") {
                let order = w.get("required").cloned().unwrap_or_else(|| json!([]));
                r.insert("x-order".to_owned(), order);
            }
            for (key, sub) in r.iter_mut() {
                if let Some(twin) = w.get(key) {
                    add_field_order(sub, twin);
                }
            }
        }
        (Value::Array(r), Value::Array(w)) => {
            for (sub, twin) in r.iter_mut().zip(w) {
                add_field_order(sub, twin);
            }
        }
        _ => {}
    }
}

/// What the engine registers, for the Python package's parsers, messages
/// and `tc` printers and for the fuzzers, so that none of them keeps a copy
/// (docs/internals.md "Registries"). Each list is in registration order,
/// which the messages that list them keep.
#[derive(Debug, Serialize)]
pub struct Registry {
    /// `register_congestion_controls!` ([`Cc::NAMES`]), as
    /// `tcp_available_congestion_control` lists them
    pub congestion_controls: &'static [&'static str],
    /// every qdisc kind a `tc` request may name (`QdiscSpec`'s tags)
    pub qdiscs: Vec<String>,
    /// the kinds whose spec lists classes, each with its grafted leaf chain
    /// (the kinds with [`ClassOps`](crate::qdisc::ops::ClassOps))
    pub class_owners: Vec<String>,
    /// the kinds whose classes `tc class add|change|delete` configures
    /// (`ClassSpec`'s tags)
    pub class_verbs: Vec<String>,
}

/// The [`Registry`]. The qdisc lists are read off [`input_schema`], whose
/// tags are the kinds serde accepts, so they cannot disagree with it.
pub fn registry() -> Registry {
    let schema = input_schema();
    let tags = |def: &str, keep: fn(&Value) -> bool| -> Vec<String> {
        (schema["$defs"][def]["oneOf"].as_array())
            .expect("a tagged enum is a oneOf")
            .iter()
            .filter(|v| keep(v))
            .map(|v| {
                v["properties"]["kind"]["const"]
                    .as_str()
                    .expect("tagged by kind")
                    .to_owned()
            })
            .collect()
    };
    Registry {
        congestion_controls: Cc::NAMES,
        qdiscs: tags("QdiscSpec", |_| true),
        class_owners: tags("QdiscSpec", |v| v["properties"].get("classes").is_some()),
        class_verbs: tags("ClassSpec", |_| true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::spec::QdiscSpec;
    use crate::qdisc::Qdisc;

    #[test]
    fn every_entry_point_has_a_closed_definition() {
        let schema = input_schema();
        for name in [
            "SimConfig",
            "TcRequest",
            "ClassRequest",
            "FilterRequest",
            "HookFilterRequest",
            "TcpSpec",
            "CaptureSpec",
        ] {
            let def = &schema["$defs"][name];
            assert_eq!(def["additionalProperties"], false, "{name}: {def}");
        }
        // tagged by `kind`: one closed alternative per registered application,
        // whose tag is the application's `KIND`
        let apps = schema["$defs"]["AppSpec"]["oneOf"].as_array().unwrap();
        assert_eq!(apps.len(), 11);
        for app in apps {
            assert_eq!(app["additionalProperties"], false, "{app}");
        }
        let tags: Vec<&str> = apps
            .iter()
            .map(|a| a["properties"]["kind"]["const"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(tags, crate::app::App::KINDS);
    }

    #[test]
    fn every_object_lists_each_of_its_properties_once_in_serde_order() {
        fn check(schema: &Value, objects: &mut usize) {
            match schema {
                Value::Object(o) => {
                    if let Some(Value::Object(props)) = o.get("properties") {
                        let order: Vec<&str> = (o["x-order"].as_array())
                            .expect("x-order beside properties")
                            .iter()
                            .map(|k| k.as_str().expect("a key"))
                            .collect();
                        let mut sorted = order.clone();
                        sorted.sort_unstable();
                        assert_eq!(sorted, props.keys().map(String::as_str).collect::<Vec<_>>());
                        *objects += 1;
                    }
                    o.values().for_each(|v| check(v, objects));
                }
                Value::Array(a) => a.iter().for_each(|v| check(v, objects)),
                _ => {}
            }
        }
        let schema = input_schema();
        let mut objects = 0;
        check(&schema, &mut objects);
        assert!(objects > 50, "{objects}");
        // what serde writes, key by key
        let tbf = schema["$defs"]["QdiscSpec"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["properties"]["kind"]["const"] == "tbf")
            .unwrap();
        let spec: QdiscSpec = serde_json::from_value(json!({
            "kind": "tbf", "rate": 1, "burst": 2, "limit": 3
        }))
        .unwrap();
        let text = serde_json::to_string(&spec).unwrap();
        let order: Vec<&str> = tbf["x-order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap())
            .collect();
        assert_eq!(order[..2], ["kind", "rate"]);
        let at: Vec<usize> = (order.iter())
            .map(|k| {
                text.find(&format!("\"{k}\":"))
                    .expect("every field written")
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{order:?} {text}");
    }

    #[test]
    fn the_registry_lists_what_the_engine_builds() {
        let reg = registry();
        assert_eq!(reg.congestion_controls, Cc::NAMES);
        assert!(reg.qdiscs.iter().any(|k| k == "pfifo_fast") && reg.qdiscs.len() > 20);
        assert_eq!(reg.class_verbs, ["htb", "drr", "ets", "hfsc"]);
        // a kind owns classes exactly when the qdisc it builds has class ops:
        // the owners from the least spec each takes, every other kind whose
        // spec needs no more than its name
        let priomap = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
        let owners = [
            json!({"kind": "htb", "direct_qlen": 1000, "leaf_limit": 1000}),
            json!({"kind": "prio", "bands": 3, "priomap": priomap}),
            json!({"kind": "drr", "leaf_limit": 1000}),
            json!({"kind": "ets", "bands": 3, "priomap": priomap, "leaf_limit": 1000}),
            json!({"kind": "hfsc", "leaf_limit": 1000}),
        ];
        let env = crate::qdisc::ops::BuildEnv {
            seed: 1,
            stream: "registry",
            profile: Default::default(),
            now: crate::time::SimTime::ZERO,
            at_root: true,
        };
        let (mut owning, mut plain) = (Vec::new(), 0);
        for kind in &reg.qdiscs {
            let least = owners.iter().find(|o| o["kind"] == kind.as_str());
            let spec = least.cloned().unwrap_or_else(|| json!({ "kind": kind }));
            let Ok(spec) = serde_json::from_value(spec) else {
                continue;
            };
            let Ok(mut built) = crate::qdisc::AnyQdisc::build(&spec, &env) else {
                continue;
            };
            if Qdisc::class_ops(&mut built.qdisc).is_some() {
                owning.push(kind.as_str());
            } else {
                plain += 1;
            }
        }
        assert_eq!(reg.class_owners, owning);
        assert_eq!(owning, ["htb", "prio", "drr", "ets", "hfsc"]);
        assert!(plain >= 10, "{plain} kinds built from their name alone");
    }

    #[test]
    fn a_variant_without_fields_refuses_an_unknown_key_too() {
        let tc = |qdisc: &str| {
            let req =
                format!(r#"{{"verb": "add", "dev": "eth0", "parent": "root", "qdisc": {qdisc}}}"#);
            serde_json::from_str::<TcRequest>(&req).map_err(|e| e.to_string())
        };
        assert!(tc(r#"{"kind": "noqueue"}"#).is_ok());
        let err = tc(r#"{"kind": "pfifo_fast", "limit": 5}"#).unwrap_err();
        assert!(err.starts_with("unknown field `limit`"), "{err}");
        let filter = |f: &str| serde_json::from_str::<crate::capture::filter::Filter>(f).is_ok();
        assert!(filter(r#"{"op": "true"}"#));
        assert!(!filter(r#"{"op": "true", "arg": {"op": "true"}}"#));
    }
}
