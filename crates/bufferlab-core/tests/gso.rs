//! Engine-level GSO checks (issue 10): a TCP bulk flow through a tbf
//! conserves packet records and segments, a tbf's `Sent … pkt` counts
//! segments while the device transmits records, and `options.gso = false`
//! gives one segment per record.

use bufferlab_core::time::SimTime;
use bufferlab_core::Simulator;
use serde_json::{json, Value};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// h1 -- s1 -- s2 -- h3 (Lab 14's chain without h2). The seed sets the
/// phase of the TCP clock (tcp/clock.rs), which decides how fast the
/// receiver's window grows in slow start: at seed 2 slow start outruns the
/// tbf with 64 KB aggregates (9 split, 169 drops); at seeds 1, 3, 5–8 the
/// window holds it below that (no split, 2 drops).
fn chain(options: Value) -> Simulator {
    let cfg = json!({
        "seed": 2,
        "nodes": [
            {"name": "h1", "kind": "host"}, {"name": "h3", "kind": "host"},
            {"name": "s1", "kind": "switch"}, {"name": "s2", "kind": "switch"}
        ],
        "links": [
            {"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"}, "b": {"node": "s1", "intf": "s1-eth1"}},
            {"a": {"node": "s1", "intf": "s1-eth2"}, "b": {"node": "s2", "intf": "s2-eth1"}},
            {"a": {"node": "s2", "intf": "s2-eth2"}, "b": {"node": "h3", "intf": "h3-eth0", "ip": "10.0.0.3"}}
        ],
        "options": options,
    });
    Simulator::from_json(&cfg.to_string()).unwrap()
}

fn tc(sim: &mut Simulator, req: Value) {
    sim.tc(&serde_json::from_value(req).unwrap()).unwrap();
}

/// E5's shaper on s1-eth2 (`tbf rate 100mbit burst 50000 limit 200000`:
/// max_size 50 000, so 64 KB aggregates are split, smaller ones pass
/// whole) and 10 ms of netem delay towards h3.
fn shaped(options: Value) -> Simulator {
    let mut sim = chain(options);
    tc(
        &mut sim,
        json!({"verb": "add", "dev": "s1-eth2", "parent": "root", "handle": 1,
               "qdisc": {"kind": "tbf", "rate": 12_500_000u64, "burst": 50_000, "limit": 200_000}}),
    );
    tc(
        &mut sim,
        json!({"verb": "add", "dev": "s2-eth2", "parent": "root", "handle": 1, "qdisc": {
            "kind": "netem", "limit": 1000, "latency": 10 * MS, "jitter": 0,
            "loss": {"model": "random", "p": 0}, "gap": 0, "duplicate": 0}}),
    );
    sim
}

/// Start a TCP sink on h3 and a bulk sender on h1 for `dur` ns.
fn bulk(sim: &mut Simulator, dur: u64) -> (u32, u32) {
    let sink = json!({"kind": "sink", "port": 5001, "proto": "tcp"}).to_string();
    let sink = sim.start_app("h3", &sink).unwrap();
    let spec = json!({"kind": "bulk", "dst": "10.0.0.3", "port": 5001, "duration_ns": dur});
    let src = sim.start_app("h1", &spec.to_string()).unwrap();
    (sink, src)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

/// Both identities of the summary: records (an aggregate replaced by its
/// segments leaves as `segmented`) and segments (splitting changes nothing).
fn assert_conserved(sim: &Simulator) -> Value {
    let s = sim.summary();
    let p = &s["packets"];
    assert_eq!(
        u(&p["created"]),
        u(&p["delivered"]) + u(&p["dropped"]) + u(&p["live"]) + u(&p["segmented"]),
        "records: {p}"
    );
    assert_eq!(
        u(&p["live"]),
        u(&p["held"]),
        "live records are held somewhere: {p}"
    );
    let g = &s["segments"];
    assert_eq!(
        u(&g["created"]),
        u(&g["delivered"]) + u(&g["dropped"]) + u(&g["live"]),
        "segments: {g}"
    );
    s
}

fn tbf_stats(s: &Value) -> (u64, u64, u64) {
    let q = &s["interfaces"]["s1-eth2"]["qdiscs"][0];
    assert_eq!(q["kind"], "tbf");
    (
        u(&q["stats"]["packets"]),
        u(&q["stats"]["bytes"]),
        u(&q["stats"]["drops"]),
    )
}

#[test]
fn gso_bulk_flow_through_a_tbf_conserves_records_and_segments() {
    let mut sim = shaped(json!({}));
    let (sink, src) = bulk(&mut sim, 2 * S);
    // mid-flow: packets live in the tbf, on the wires and in the netem
    sim.run(SimTime(700 * MS)).unwrap();
    let s = assert_conserved(&sim);
    assert!(u(&s["packets"]["live"]) > 0);
    // steady state between 1 s and 2 s: the shaper's payload rate,
    // 1448 / 1514 × 100 Mbit/s = 95.64 Mbit/s, plus at most one bucket
    // (50 000 B = 0.4 Mbit) of burst in the second
    sim.run(SimTime(S)).unwrap();
    let b1 = u(&sim.app_result(sink).unwrap()["bytes"]);
    sim.run(SimTime(2 * S)).unwrap();
    let b2 = u(&sim.app_result(sink).unwrap()["bytes"]);
    let mbps = (b2 - b1) as f64 * 8.0 / 1e6;
    assert!((85.0..=96.1).contains(&mbps), "{mbps} Mbit/s");
    assert_conserved(&sim);
    while !sim.app_finished(src).unwrap() {
        sim.run(SimTime(sim.now().as_nanos() + S)).unwrap();
    }
    sim.run(SimTime(sim.now().as_nanos() + S)).unwrap();
    sim.stop_app(sink).unwrap();
    let s = assert_conserved(&sim);
    let p = &s["packets"];
    let g = &s["segments"];
    // aggregates exist: more segments than records left h1
    let h1 = &s["interfaces"]["h1-eth0"];
    assert!(u(&g["created"]) > 2 * u(&h1["tx_packets"]), "{g} {h1}");
    // tbf split the 64 KB aggregates of slow start (len > 50 000)
    assert!(u(&p["segmented"]) > 0, "{p}");
    // the tbf's Sent … pkt counts segments; s1-eth2 (TSO on) transmits the
    // records the tbf dequeued, so pkt > records
    let (pkts, bytes, _) = tbf_stats(&s);
    let ifc = &s["interfaces"]["s1-eth2"];
    let records = u(&ifc["tx_packets"]);
    assert_eq!(
        u(&ifc["tx_bytes"]),
        bytes,
        "the device sends what the tbf sent"
    );
    assert!(pkts > records, "Sent {pkts} pkt for {records} records");
}

#[test]
fn gso_off_gives_one_segment_per_record() {
    let mut sim = shaped(json!({"gso": false}));
    let (sink, src) = bulk(&mut sim, S);
    sim.run(SimTime(500 * MS)).unwrap();
    assert_conserved(&sim);
    while !sim.app_finished(src).unwrap() {
        sim.run(SimTime(sim.now().as_nanos() + S)).unwrap();
    }
    sim.run(SimTime(sim.now().as_nanos() + S)).unwrap();
    sim.stop_app(sink).unwrap();
    let s = assert_conserved(&sim);
    let p = &s["packets"];
    let g = &s["segments"];
    assert_eq!(u(&p["segmented"]), 0, "{p}");
    // one segment per record, everywhere
    assert_eq!(u(&g["created"]), u(&p["created"]), "{p} {g}");
    assert_eq!(u(&g["delivered"]), u(&p["delivered"]), "{p} {g}");
    assert_eq!(u(&g["dropped"]), u(&p["dropped"]), "{p} {g}");
    let (pkts, _, _) = tbf_stats(&s);
    let records = u(&s["interfaces"]["s1-eth2"]["tx_packets"]);
    assert_eq!(pkts, records);
    for ifc in s["interfaces"].as_object().unwrap().values() {
        assert_eq!(
            ifc["offloads"],
            json!({"tso": false, "gso": false, "gro": false})
        );
    }
    assert!(u(&sim.app_result(sink).unwrap()["bytes"]) > 5_000_000);
}

#[test]
fn netem_sent_pkt_counts_segments_with_gso_on_and_records_with_gso_off() {
    // no shaper, 300 ms of bulk over a 10 ms netem: with GSO on, netem's
    // `Sent … pkt` (segments) exceeds the records it sent several times;
    // with GSO off they are equal
    let run = |gso: bool| {
        let mut sim = chain(json!({"gso": gso}));
        tc(
            &mut sim,
            json!({"verb": "add", "dev": "s2-eth2", "parent": "root", "handle": 1, "qdisc": {
                "kind": "netem", "limit": 1000, "latency": 10 * MS, "jitter": 0,
                "loss": {"model": "random", "p": 0}, "gap": 0, "duplicate": 0}}),
        );
        let (sink, src) = bulk(&mut sim, 300 * MS);
        while !sim.app_finished(src).unwrap() {
            sim.run(SimTime(sim.now().as_nanos() + S)).unwrap();
        }
        sim.run(SimTime(sim.now().as_nanos() + S)).unwrap();
        sim.stop_app(sink).unwrap();
        let s = assert_conserved(&sim);
        (s, u(&sim.app_result(sink).unwrap()["bytes"]))
    };
    let (on, _) = run(true);
    let (off, _) = run(false);
    let recs = |s: &Value| u(&s["interfaces"]["s2-eth2"]["tx_packets"]);
    let segs_on = u(&on["interfaces"]["s2-eth2"]["qdiscs"][0]["stats"]["packets"]);
    // netem's Sent … pkt counts segments: with GSO on, more than its records
    assert!(
        segs_on > 2 * recs(&on),
        "{segs_on} segments in {} records",
        recs(&on)
    );
    let segs_off = u(&off["interfaces"]["s2-eth2"]["qdiscs"][0]["stats"]["packets"]);
    assert_eq!(segs_off, recs(&off));
    assert_eq!(u(&on["packets"]["segmented"]), 0, "no tbf, no segmentation");
}
