//! TCP through the engine: bulk transfers over a shaped bottleneck, checked
//! against first-principles expectations.

use bufferlab_core::time::SimTime;
use bufferlab_core::Simulator;
use serde_json::{json, Value};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// h1 -- s1 -- s2 -- h3 with netem `delay` (ms) and a tbf of `rate_bps` and
/// `limit` bytes on s1-eth2, as in Lab 14.
fn dumbbell(seed: u64, delay_ms: u64, rate_bps: u64, limit: u32) -> Simulator {
    let cfg = json!({
        "seed": seed,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h3", "kind": "host"},
                  {"name": "s1", "kind": "switch"}, {"name": "s2", "kind": "switch"}],
        "links": [
            {"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"}, "b": {"node": "s1", "intf": "s1-eth1"}},
            {"a": {"node": "s1", "intf": "s1-eth2"}, "b": {"node": "s2", "intf": "s2-eth1"}},
            {"a": {"node": "s2", "intf": "s2-eth2"}, "b": {"node": "h3", "intf": "h3-eth0", "ip": "10.0.0.3"}}
        ]
    });
    let mut sim = Simulator::from_json(&cfg.to_string()).unwrap();
    let netem = json!({"verb": "add", "dev": "s1-eth2", "parent": "root", "handle": 1, "qdisc": {
        "kind": "netem", "limit": 100000, "latency": delay_ms * MS, "jitter": 0,
        "loss": {"model": "random", "p": 0}, "gap": 0, "duplicate": 0}});
    sim.tc(&serde_json::from_value(netem).unwrap()).unwrap();
    let tbf = json!({"verb": "add", "dev": "s1-eth2", "parent": {"class": {"major": 1, "minor": 0}},
        "handle": 2, "qdisc": {"kind": "tbf", "rate": rate_bps / 8, "burst": 15000, "limit": limit}});
    sim.tc(&serde_json::from_value(tbf).unwrap()).unwrap();
    sim
}

fn bulk(
    sim: &mut Simulator,
    bytes: Option<u64>,
    seconds: Option<u64>,
    cc: &str,
    tcp: Value,
) -> (Value, Value) {
    let mut tcp = tcp;
    tcp["congestion"] = json!(cc);
    let sink = sim
        .start_app(
            "h3",
            &json!({"kind": "sink", "port": 5001, "proto": "tcp", "tcp": tcp}).to_string(),
        )
        .unwrap();
    let spec = json!({"kind": "bulk", "dst": "10.0.0.3", "port": 5001, "bytes": bytes,
                      "duration_ns": seconds.map(|s| s * S), "tcp": tcp});
    let src = sim.start_app("h1", &spec.to_string()).unwrap();
    while !sim.app_finished(src).unwrap() && sim.now().as_nanos() < 600 * S {
        sim.run(SimTime(600 * S));
    }
    sim.stop_app(sink).unwrap();
    (sim.app_result(src).unwrap(), sim.app_result(sink).unwrap())
}

#[test]

#[test]
fn scratch_engine_tiny() {
    let lim: u32 = std::env::var("LIM").map(|v| v.parse().unwrap()).unwrap_or(15140);
    let mut sim = dumbbell(1, 20, 100_000_000, lim);
    let q = sim.start_app("h1", &json!({"kind": "qmon", "dev": "s1-eth2", "interval_ns": 20_000}).to_string()).unwrap();
    let tcp = json!({"rmem": [10240, 87380, 52428800], "wmem": [10240, 87380, 52428800]});
    let (src, sink) = bulk(&mut sim, None, Some(2), "reno", tcp);
    sim.stop_app(q).unwrap();
    let r = sim.app_result(q).unwrap();
    let s = r["samples"].as_array().unwrap();
    let mut prev = 0;
    for x in s.iter() {
        let b = x[1].as_u64().unwrap();
        if b != prev { eprintln!("{} {} {}", x[0], b, x[2]); prev = b; }
    }
    eprintln!("{src}\n{sink}");
}
