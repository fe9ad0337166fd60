//! Oracle tests: a Poisson UDP source into a fixed-rate wire is an M/G/1
//! queue, whose mean waiting time is given by the Pollaczek–Khinchine formula
//! `Wq = λ·E[S²] / (2(1−ρ))`. With fixed-size packets that is M/D/1
//! (`Wq = ρ·S / (2(1−ρ))`); with exponentially distributed payloads the
//! service time is nearly exponential and the formula is the M/M/1 one plus
//! the constant header's share (computed exactly below).
//!
//! The sink measures the mean one-way delay; waiting time = delay − E[S]
//! (the packet's own serialisation; the wire has no propagation delay and
//! the veth-free path adds nothing else).

use bufferlab_core::time::SimTime;
use bufferlab_core::Simulator;
use serde_json::json;

const S: u64 = 1_000_000_000;
const WIRE_BPS: f64 = 10e6;
/// Ethernet + IPv4 + UDP headers around the payload.
const HEADERS: f64 = 42.0;

fn queue(seed: u64, size_dist: &str, payload: u32, rho: f64, seconds: u64) -> (f64, u64) {
    let cfg = json!({
        "seed": seed,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"}],
        "links": [{"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"},
                   "b": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"},
                   "rate_bps": WIRE_BPS as u64}]
    });
    let mut sim = Simulator::from_json(&cfg.to_string()).unwrap();
    let mean_service = (payload as f64 + HEADERS) * 8.0 / WIRE_BPS;
    // λ = ρ / E[S]; the source's mean gap is payload·8 / rate_bps
    let rate_bps = (payload as f64 * 8.0 * rho / mean_service).round() as u64;
    let sink = sim
        .start_app(
            "h2",
            &json!({"kind": "sink", "port": 9, "proto": "udp"}).to_string(),
        )
        .unwrap();
    let src = json!({"kind": "udp_source", "pattern": "poisson", "dst": "10.0.0.2", "port": 9,
                     "rate_bps": rate_bps, "size": payload, "duration_ns": seconds * S,
                     "size_dist": size_dist});
    let src = sim.start_app("h1", &src.to_string()).unwrap();
    while !sim.app_finished(src).unwrap() {
        sim.run(SimTime((seconds + 10) * S)).unwrap();
    }
    sim.run(SimTime(sim.now().as_nanos() + S)).unwrap();
    sim.stop_app(sink).unwrap();
    let r = sim.app_result(sink).unwrap();
    let summary = sim.summary();
    let dropped = summary["packets"]["dropped"].as_u64().unwrap();
    (
        r["mean_delay_ns"].as_f64().unwrap() / 1e9 - mean_service,
        dropped,
    )
}

#[test]
fn md1_mean_waiting_time_matches_theory_within_3_percent() {
    let (payload, rho) = (1000u32, 0.5);
    let s = (payload as f64 + HEADERS) * 8.0 / WIRE_BPS;
    let theory = rho * s / (2.0 * (1.0 - rho));
    let (wq, dropped) = queue(11, "fixed", payload, rho, 400);
    assert_eq!(dropped, 0, "the queue never overflows at rho = 0.5");
    let err = (wq - theory).abs() / theory;
    eprintln!(
        "measured {wq:.6e} s, theory {theory:.6e} s, {:.2}% off",
        err * 100.0
    );
    assert!(
        err < 0.03,
        "M/D/1: measured {wq:.6e} s, theory {theory:.6e} s ({:.2}% off)",
        err * 100.0
    );
}

#[test]
fn mm1_mean_waiting_time_matches_theory_within_3_percent() {
    let (payload, rho) = (1000u32, 0.5);
    let k = 8.0 / WIRE_BPS;
    let m = payload as f64;
    let es = (m + HEADERS) * k;
    // E[(X + h)²] for X ~ Exp(mean m): m² + (m + h)²
    let es2 = k * k * (m * m + (m + HEADERS) * (m + HEADERS));
    let lambda = rho / es;
    let theory = lambda * es2 / (2.0 * (1.0 - rho));
    let (wq, _) = queue(12, "exponential", payload, rho, 400);
    let err = (wq - theory).abs() / theory;
    eprintln!(
        "measured {wq:.6e} s, theory {theory:.6e} s, {:.2}% off",
        err * 100.0
    );
    assert!(
        err < 0.03,
        "M/M/1: measured {wq:.6e} s, theory {theory:.6e} s ({:.2}% off)",
        err * 100.0
    );
}
