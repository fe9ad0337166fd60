//! The JSON Schema of every request the engine deserialises, derived from the
//! very types serde reads them into, so the Python side can validate what it
//! builds against what Rust accepts (tests/test_schema.py) and the two cannot
//! drift. Every object is closed (`deny_unknown_fields`, hence
//! `"additionalProperties": false`); a field with a serde default is optional.

use crate::app::{tcp::TcpSpec, AppSpec};
use crate::capture::CaptureSpec;
use crate::engine::SimConfig;
use crate::qdisc::spec::{ClassRequest, FilterRequest, HookFilterRequest, TcRequest};
use schemars::generate::SchemaSettings;
use serde_json::{json, Value};

/// One JSON Schema (draft 2020-12) document whose `$defs` hold, among the
/// types they use, one definition per entry point: `SimConfig`
/// (`Simulator::from_json`), `TcRequest` (`tc`), `ClassRequest`
/// (`tc_class`), `FilterRequest` (`tc_filter`), `HookFilterRequest`
/// (`tc_hook_filter`), `AppSpec` (`start_app`),
/// `TcpSpec` (`set_listener_tcp`), `CaptureSpec` (`capture_start`).
pub fn input_schema() -> Value {
    let mut generator = SchemaSettings::draft2020_12().into_generator();
    generator.subschema_for::<SimConfig>();
    generator.subschema_for::<TcRequest>();
    generator.subschema_for::<ClassRequest>();
    generator.subschema_for::<FilterRequest>();
    generator.subschema_for::<HookFilterRequest>();
    generator.subschema_for::<AppSpec>();
    generator.subschema_for::<TcpSpec>();
    generator.subschema_for::<CaptureSpec>();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "bufferlab engine requests",
        "$defs": generator.take_definitions(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
