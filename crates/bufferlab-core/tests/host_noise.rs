//! The engine's checks of `options.host_noise` (host_noise.rs): it names hosts only, and
//! each distribution is ordered.

use bufferlab_core::Simulator;
use serde_json::{json, Value};

fn build(host_noise: Value) -> Result<Simulator, String> {
    let cfg = json!({
        "seed": 1,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}, {"name": "s1", "kind": "switch"}],
        "links": [
            {"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"}, "b": {"node": "s1", "intf": "s1-eth1"}},
            {"a": {"node": "s1", "intf": "s1-eth2"}, "b": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"}}
        ],
        "options": {"host_noise": host_noise},
    });
    Simulator::from_json(&cfg.to_string()).map_err(|e| e.to_string())
}

fn spec() -> Value {
    json!({"median_ns": 5_000, "p99_ns": 600_000, "max_ns": 1_500_000})
}

#[test]
fn noise_is_accepted_on_hosts() {
    assert!(build(json!({"h1": spec(), "h2": spec()})).is_ok());
    assert!(build(json!({})).is_ok());
}

#[test]
fn noise_on_a_switch_or_an_unknown_node_is_refused() {
    for name in ["s1", "h9"] {
        let err = build(json!({ name: spec() })).err().unwrap();
        assert!(err.contains(&format!("no host named \"{name}\"")), "{err}");
    }
}

#[test]
fn an_unordered_distribution_is_refused() {
    let bad = json!({"h2": {"median_ns": 5_000, "p99_ns": 600_000, "max_ns": 1_000}});
    let err = build(bad).err().unwrap();
    assert!(
        err.contains("host noise of h2") && err.contains("<= max"),
        "{err}"
    );
}
