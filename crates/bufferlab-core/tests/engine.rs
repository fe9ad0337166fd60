//! System tests of the engine: whole paths with applications, checked against
//! first-principles expectations (propagation, shaping rate, accounting).

use bufferlab_core::Simulator;
use serde_json::{json, Value};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

/// Lab 14's topology: h1,h2 -- s1 -- s2 -- h3 with links [h1,s1] [s1,s2] [s2,h3] [h2,s1].
/// Lab 14's topology without host processing time: these tests check
/// netem/tbf/ARP timing to the nanosecond (host.rs has its own tests below).
fn lab14(seed: u64) -> Simulator {
    lab14_with(
        seed,
        json!({"host_cost": {"packet_ns": 0, "byte_ps": 0, "wakeup_ns": 0}}),
    )
}

fn lab14_with(seed: u64, options: Value) -> Simulator {
    let cfg = json!({
        "seed": seed,
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
        "options": options,
    });
    Simulator::from_json(&cfg.to_string()).unwrap()
}

fn rtts_of(sim: &Simulator, app: u32) -> Vec<u64> {
    sim.app_result(app).unwrap()["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["rtt_ns"].as_u64().unwrap())
        .collect()
}

#[test]
fn host_processing_time_gives_plain_veths_a_round_trip() {
    // default costs (host.rs): one 98-byte echo frame costs
    // 2250 + 98 × 0.61 = 2309 ns per stack pass; a ping crosses four passes
    // (h1 send, h3 receive, h3 send, h1 receive) and wakes ping once: 27 µs
    let mut sim = lab14_with(1, json!({}));
    let app = sim.start_app("h1", &ping(3)).unwrap();
    sim.run(bufferlab_core::time::SimTime(10 * S)).unwrap();
    let rtts = rtts_of(&sim, app);
    assert_eq!(rtts[1..], [4 * 2309 + 27_000, 4 * 2309 + 27_000]);
    assert_conservation(&sim);
}

#[test]
fn tcp_over_plain_veths_runs_at_a_finite_rate() {
    // no delay, no shaper: without host processing time this would move data
    // without simulated time passing (tests/tcp.rs); with it, the slowest
    // stage — one 45-segment aggregate (68 130 B) per 2250 + 41 559 ns at
    // the receiving CPU — bounds the payload rate near
    // 65 160 B / 43.8 µs ≈ 11.9 Gbit/s
    let mut sim = lab14_with(1, json!({}));
    let sink = json!({"kind": "sink", "port": 5001, "proto": "tcp"}).to_string();
    let sink = sim.start_app("h3", &sink).unwrap();
    let spec = json!({"kind": "bulk", "dst": "10.0.0.3", "port": 5001, "duration_ns": S});
    let src = sim.start_app("h1", &spec.to_string()).unwrap();
    while !sim.app_finished(src).unwrap() {
        sim.run(bufferlab_core::time::SimTime(10 * S)).unwrap();
    }
    sim.stop_app(sink).unwrap();
    let bytes = sim.app_result(sink).unwrap()["bytes"].as_u64().unwrap();
    let gbps = bytes as f64 * 8.0 / 1e9;
    assert!((8.0..=11.95).contains(&gbps), "{gbps} Gbit/s in 1 s");
    assert_conservation(&sim);
}

fn tc(sim: &mut Simulator, req: Value) {
    sim.tc(&serde_json::from_value(req).unwrap()).unwrap();
}

fn netem_delay(dev: &str, delay_ns: u64, loss: u32) -> Value {
    json!({"verb": "add", "dev": dev, "parent": "root", "handle": 1, "qdisc": {
        "kind": "netem", "limit": 1000, "latency": delay_ns, "jitter": 0,
        "loss": {"model": "random", "p": loss}, "gap": 0, "duplicate": 0}})
}

fn tbf_child(dev: &str, rate_bytes: u64, burst: u32, limit: u32) -> Value {
    json!({"verb": "add", "dev": dev, "parent": {"class": {"major": 1, "minor": 0}}, "handle": 2,
           "qdisc": {"kind": "tbf", "rate": rate_bytes, "burst": burst, "limit": limit}})
}

/// Run until every listed application finished (or `limit`), then return their results.
fn run_until_done(sim: &mut Simulator, apps: &[u32], limit: u64) -> Vec<Value> {
    while apps.iter().any(|&a| !sim.app_finished(a).unwrap()) && sim.now().as_nanos() < limit {
        sim.run(bufferlab_core::time::SimTime(limit)).unwrap();
    }
    apps.iter().map(|&a| sim.app_result(a).unwrap()).collect()
}

fn assert_conservation(sim: &Simulator) {
    let s = sim.summary();
    let p = &s["packets"];
    let created = p["created"].as_u64().unwrap();
    let delivered = p["delivered"].as_u64().unwrap();
    let dropped = p["dropped"].as_u64().unwrap();
    let live = p["live"].as_u64().unwrap();
    let segmented = p["segmented"].as_u64().unwrap();
    assert_eq!(
        created,
        delivered + dropped + live + segmented,
        "every packet record is delivered, dropped, live or split into segments: {p}"
    );
    let g = &s["segments"];
    let n = |k: &str| g[k].as_u64().unwrap();
    assert_eq!(
        n("created"),
        n("delivered") + n("dropped") + n("live"),
        "every segment is delivered, dropped or live: {g}"
    );
    assert_eq!(
        live,
        p["held"].as_u64().unwrap(),
        "live packets are all somewhere: {p}"
    );
}

fn ping(count: u32) -> String {
    json!({"kind": "ping", "dst": "10.0.0.3", "count": count, "interval_ns": S, "size": 56})
        .to_string()
}

#[test]
fn ping_rtt_is_the_one_way_netem_delay_and_the_first_pays_arp() {
    let mut sim = lab14(1);
    tc(&mut sim, netem_delay("s1-eth2", 20 * MS, 0));
    let app = sim.start_app("h1", &ping(4)).unwrap();
    let r = &run_until_done(&mut sim, &[app], 60 * S)[0];
    let rtts: Vec<u64> = r["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["rtt_ns"].as_u64().unwrap())
        .collect();
    // ARP request crosses the 20 ms netem, the reply does not; then the echo request does.
    assert_eq!(rtts, vec![40 * MS, 20 * MS, 20 * MS, 20 * MS]);
    assert_eq!(r["transmitted"], 4);
    assert_conservation(&sim);
}

#[test]
fn netem_on_both_directions_doubles_the_rtt() {
    let mut sim = lab14(1);
    tc(&mut sim, netem_delay("s1-eth2", 20 * MS, 0));
    tc(&mut sim, netem_delay("s2-eth1", 20 * MS, 0));
    let app = sim.start_app("h2", &ping(3)).unwrap();
    let r = &run_until_done(&mut sim, &[app], 60 * S)[0];
    let rtts: Vec<u64> = r["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["rtt_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(rtts, vec![80 * MS, 40 * MS, 40 * MS]);
}

/// CBR UDP over a tbf: the receiver gets min(offered, shaped) in payload terms.
fn cbr_through_tbf(offered_bps: u64, shaped_bytes_per_s: u64) -> (f64, f64, Simulator) {
    let mut sim = lab14(3);
    tc(&mut sim, netem_delay("s1-eth2", 10 * MS, 0));
    tc(
        &mut sim,
        tbf_child("s1-eth2", shaped_bytes_per_s, 15_000, 200_000),
    );
    let sink = sim
        .start_app(
            "h3",
            &json!({"kind": "sink", "port": 5001, "proto": "udp"}).to_string(),
        )
        .unwrap();
    let src = sim
        .start_app(
            "h1",
            &json!({"kind": "udp_source", "pattern": "cbr", "dst": "10.0.0.3", "port": 5001,
                    "rate_bps": offered_bps, "size": 1448, "duration_ns": 10 * S})
            .to_string(),
        )
        .unwrap();
    run_until_done(&mut sim, &[src], 30 * S);
    sim.run(bufferlab_core::time::SimTime(sim.now().as_nanos() + S))
        .unwrap(); // drain the queue
    sim.stop_app(sink).unwrap();
    let r = sim.app_result(sink).unwrap();
    // goodput over the sink's busy period
    let bytes = r["bytes"].as_u64().unwrap() as f64;
    let span = (r["last_ns"].as_u64().unwrap() - r["first_ns"].as_u64().unwrap()) as f64 / 1e9;
    (bytes * 8.0 / span, bytes, sim)
}

#[test]
fn cbr_below_the_shaped_rate_gets_through_entirely() {
    // 5 Mbit/s of payload offered into a 10 Mbit/s tbf: nothing is lost.
    let (rate, bytes, sim) = cbr_through_tbf(5_000_000, 1_250_000);
    assert_eq!(
        bytes as u64,
        10 * 5_000_000 / 8 / 1448 * 1448 + 1448,
        "every datagram arrives"
    );
    assert!((rate - 5e6).abs() / 5e6 < 0.002, "{rate}");
    assert_conservation(&sim);
}

#[test]
fn cbr_above_the_shaped_rate_is_cut_to_the_rate_in_payload_terms() {
    // 20 Mbit/s offered into 10 Mbit/s (1 250 000 B/s of frames): the receiver
    // gets 10 Mbit/s of frames, i.e. 10e6 * 1448/1490 of UDP payload.
    let (rate, _, sim) = cbr_through_tbf(20_000_000, 1_250_000);
    let expected = 10e6 * 1448.0 / 1490.0;
    assert!(
        (rate - expected).abs() / expected < 0.005,
        "{rate} vs {expected}"
    );
    let s = sim.summary();
    let drops = &s["interfaces"]["s1-eth2"]["drops"]["queue_full"]["packets"];
    assert!(
        drops.as_u64().unwrap() > 1000,
        "the excess is tail-dropped: {drops}"
    );
    assert_conservation(&sim);
}

#[test]
fn same_seed_same_results_and_different_seed_different_losses() {
    let run = |seed| {
        let mut sim = lab14(seed);
        tc(&mut sim, netem_delay("s1-eth2", 5 * MS, 42_949_673)); // loss 1%
        let src = sim
            .start_app(
                "h1",
                &json!({"kind": "udp_source", "pattern": "poisson", "dst": "10.0.0.3", "port": 9,
                        "rate_bps": 2_000_000, "size": 500, "duration_ns": 5 * S})
                .to_string(),
            )
            .unwrap();
        let p = sim.start_app("h2", &ping(5)).unwrap();
        run_until_done(&mut sim, &[src, p], 60 * S);
        sim.summary().to_string()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn iperf3_udp_test_counts_what_the_receiver_got() {
    let mut sim = lab14(5);
    tc(&mut sim, netem_delay("s1-eth2", 20 * MS, 0));
    let server = sim
        .start_app(
            "h3",
            &json!({"kind": "iperf3_server", "port": 5201, "interval_ns": S}).to_string(),
        )
        .unwrap();
    let client = sim
        .start_app(
            "h1",
            &json!({"kind": "iperf3_client", "dst": "10.0.0.3", "port": 5201, "protocol": "udp",
                    "rate_bps": 900_000, "blksize": 1448, "duration_ns": 3 * S, "interval_ns": S})
            .to_string(),
        )
        .unwrap();
    let r = &run_until_done(&mut sim, &[client], 60 * S)[0];
    assert_eq!(r["error"], Value::Null);
    // floor(0.9e6 * 3 / (8 * 1448)) + 1 = 234 datagrams (docs/semantics/formats.md §1.7)
    assert_eq!(r["sender"]["packets"], 234);
    assert_eq!(r["receiver"]["packets"], 234);
    assert_eq!(r["receiver"]["lost"], 0);
    let intervals = r["intervals"].as_array().unwrap();
    assert_eq!(intervals.len(), 3);
    assert_eq!(intervals[0]["packets"], 78);
    // receiver_time = duration + TEST_START's trip to the client (0) + TEST_END's trip (20 ms)
    let recv = &r["receiver"];
    let receiver_time = recv["end_ns"].as_u64().unwrap() - recv["start_ns"].as_u64().unwrap();
    assert_eq!(receiver_time, 3 * S + 20 * MS);
    sim.stop_app(server).unwrap();
    let s = sim.app_result(server).unwrap();
    assert_eq!(s["tests"].as_array().unwrap().len(), 1);
    assert_eq!(s["interrupted"], true);
    assert_conservation(&sim);
}

#[test]
fn iperf3_client_without_server_is_refused() {
    let mut sim = lab14(1);
    let client = sim
        .start_app(
            "h1",
            &json!({"kind": "iperf3_client", "dst": "10.0.0.3", "port": 5201, "protocol": "udp",
                    "rate_bps": 1_048_576, "blksize": 1448, "duration_ns": 10 * S, "interval_ns": S})
            .to_string(),
        )
        .unwrap();
    let r = &run_until_done(&mut sim, &[client], 60 * S)[0];
    assert_eq!(
        r["error"],
        "unable to connect to server: Connection refused"
    );
}

#[test]
fn bad_config_and_specs_are_errors_not_panics() {
    assert!(Simulator::from_json("{").is_err());
    assert!(Simulator::from_json(r#"{"seed": 1, "nodes": [], "links": [], "bogus": 1}"#).is_err());
    let mut sim = lab14(1);
    assert!(sim.start_app("nobody", &ping(1)).is_err());
    assert!(
        sim.start_app("s1", &ping(1)).is_err(),
        "switches run no applications"
    );
    assert!(sim.start_app("h1", r#"{"kind": "ping"}"#).is_err());
    assert!(sim
        .start_app("h1", r#"{"kind": "qmon", "dev": "eth9", "interval_ns": 1}"#)
        .is_err());
    let err = sim
        .tc(&serde_json::from_value(netem_delay("nope0", 0, 0)).unwrap())
        .unwrap_err();
    assert_eq!(err.to_string(), "Cannot find device \"nope0\"");
    let srv = json!({"kind": "iperf3_server", "port": 5201, "interval_ns": S}).to_string();
    sim.start_app("h3", &srv).unwrap();
    assert!(sim
        .start_app("h3", &srv)
        .unwrap_err()
        .to_string()
        .contains("Address already in use"));
}

#[test]
fn a_host_pings_itself_through_its_own_stack() {
    let mut sim = lab14(1);
    let spec = json!({"kind": "ping", "dst": "10.0.0.1", "count": 2, "interval_ns": S, "size": 56});
    let app = sim.start_app("h1", &spec.to_string()).unwrap();
    // the first reply comes back inside start_app; the second one second later
    assert_eq!(
        sim.run(bufferlab_core::time::SimTime(60 * S)).unwrap(),
        vec![app]
    );
    assert_eq!(sim.now().as_nanos(), S);
    let r = sim.app_result(app).unwrap();
    let rtts: Vec<u64> = r["replies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["rtt_ns"].as_u64().unwrap())
        .collect();
    assert_eq!(rtts, vec![0, 0]);
    assert_conservation(&sim);
}

#[test]
fn an_address_without_a_route_is_unreachable_at_start() {
    let mut sim = lab14(1);
    let spec = json!({"kind": "ping", "dst": "8.8.8.8", "count": 1, "interval_ns": S, "size": 56});
    let err = sim.start_app("h1", &spec.to_string()).unwrap_err();
    assert_eq!(err.to_string(), "Network is unreachable");
}

#[test]
fn an_application_finishing_inside_start_app_is_reported_by_the_next_run() {
    let mut sim = lab14(1);
    let spec = json!({"kind": "ping", "dst": "10.0.0.1", "count": 1, "interval_ns": S, "size": 56});
    let app = sim.start_app("h1", &spec.to_string()).unwrap();
    assert_eq!(
        sim.run(bufferlab_core::time::SimTime(60 * S)).unwrap(),
        vec![app]
    );
    assert_eq!(sim.now().as_nanos(), 0, "nothing else to wait for");
}

#[test]
fn ping_with_a_lost_reply_waits_twice_the_slowest_rtt_not_ten_seconds() {
    let mut sim = lab14(1);
    // resolve ARP first, then lose half of the requests towards h3
    let first = sim.start_app("h1", &ping(1)).unwrap();
    run_until_done(&mut sim, &[first], 60 * S);
    let mut lossy = netem_delay("s1-eth2", 10 * MS, u32::MAX / 2);
    lossy["verb"] = json!("replace");
    tc(&mut sim, lossy);
    let spec = json!({"kind": "ping", "dst": "10.0.0.3", "count": 10, "interval_ns": 100 * MS, "size": 56});
    let app = sim.start_app("h1", &spec.to_string()).unwrap();
    let r = &run_until_done(&mut sim, &[app], 60 * S)[0];
    let replies = r["replies"].as_array().unwrap().len();
    assert!(0 < replies && replies < 10, "{replies}");
    // after the last probe: max(2 x slowest RTT (10 ms), interval 100 ms) = 100 ms
    let last = r["last_send_ns"].as_u64().unwrap();
    assert_eq!(sim.now().as_nanos(), last + 100 * MS);
}

/// The embedder's side of an observer's output: a buffer the test keeps.
#[derive(Clone, Default)]
struct SharedBuf(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_capture_streams_into_the_embedders_output_opened_only_for_a_valid_request() {
    let mut sim = lab14(1);
    let refused = sim.capture_start(
        r#"{"dev": "eth9", "path": "x.pcap", "format": "pcap"}"#,
        |_| panic!("output opened for a refused capture"),
    );
    assert_eq!(
        refused.unwrap_err().to_string(),
        "eth9: No such device exists"
    );
    let buf = SharedBuf::default();
    let out = buf.clone();
    let id = sim
        .capture_start(
            r#"{"dev": "h1-eth0", "path": "h1.pcap", "format": "pcap", "count": 2}"#,
            move |path| {
                assert_eq!(path, "h1.pcap");
                Ok(Box::new(out))
            },
        )
        .unwrap();
    sim.start_app("h1", &ping(3)).unwrap();
    sim.run(bufferlab_core::time::SimTime(10 * S)).unwrap();
    assert_eq!(sim.capture_stop(id).unwrap()["captured"], 2);
    let b = buf.0.lock().unwrap();
    assert_eq!(b[0..4], [0xd4, 0xc3, 0xb2, 0xa1], "pcap magic");
    // two records after the 24-byte header: 16-byte record header + caplen each
    let caplen = |at: usize| u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
    let second = 24 + 16 + caplen(24);
    assert_eq!(b.len(), second + 16 + caplen(second));
}

#[test]
fn an_output_the_embedder_cannot_open_is_reported_in_the_users_words() {
    let mut sim = lab14(1);
    let err = sim
        .trace_start("h1-eth0", "out/q.bin", 0, |_| {
            Err(std::io::ErrorKind::NotFound.into())
        })
        .unwrap_err();
    assert_eq!(err.to_string(), "out/q.bin: No such file or directory");
}
