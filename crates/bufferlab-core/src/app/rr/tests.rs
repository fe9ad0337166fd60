//! Request/response over a two-host wire (app/test_support.rs).

use super::*;
use crate::app::test_support::{at_ms, Wire, MS};
use crate::app::{App, Application};
use crate::rng::ComponentRng;
use crate::time::SimDuration;

const PORT: u16 = 80;

fn client(mode: RrMode, proto: RrProto) -> RrClientSpec {
    RrClientSpec {
        dst: "10.0.0.2".into(),
        port: PORT,
        proto,
        mode,
        request: 100,
        response: 1000,
        count: Some(1),
        duration_ns: None,
        interval_ns: None,
        tick_ns: None,
        timeout_ns: None,
        close_after: false,
        log: false,
        record: true,
        tos: 0,
        server_tos: None,
        server_congestion: None,
        tcp: TcpSpec::default(),
    }
}

fn server(proto: RrProto) -> App {
    App::RrServer(
        RrServer::new(
            RrServerSpec {
                port: PORT,
                proto,
                backlog: None,
                tcp: TcpSpec::default(),
            },
            ComponentRng::new(3, "server"),
        )
        .unwrap(),
    )
}

/// Client on host 0, server on host 1, `delay_ms` one way, 50 Mbit/s per sender.
fn run(spec: RrClientSpec, delay_ms: u64, until_ms: u64) -> Wire {
    let proto = spec.proto;
    let c = App::RrClient(RrClient::new(spec, ComponentRng::new(7, "client")).unwrap());
    let mut wire =
        Wire::new(vec![c, server(proto)], SimDuration::from_millis(delay_ms)).with_rate(50_000_000);
    wire.start(1);
    wire.start(0);
    wire.run_until(at_ms(until_ms));
    wire
}

fn frame_ns(payload: u64) -> u64 {
    // Ethernet + IPv4 + TCP with timestamps, at 50 Mbit/s
    (payload + 14 + 20 + 32) * 8 * 1_000_000_000 / 50_000_000
}

#[test]
fn a_fetch_takes_the_handshake_then_one_round_trip_and_the_response_transfer() {
    let mut spec = client(RrMode::Closed, RrProto::Tcp);
    spec.close_after = true;
    spec.log = true;
    let wire = run(spec, 5, 1000);
    let r = wire.result(0);
    assert_eq!(r["error"], serde_json::Value::Null);
    assert_eq!(
        (r["bytes_written"].as_u64(), r["bytes_read"].as_u64()),
        (Some(100), Some(1000))
    );
    assert_eq!(r["completed"], 1);
    let connected = r["connected_ns"].as_u64().unwrap();
    // SYN and SYN-ACK: one round trip of 10 ms plus two 66/74-byte frames
    assert!((10 * MS..11 * MS).contains(&connected), "{connected}");
    let sent = r["tx"]["sent_ns"][0].as_u64().unwrap();
    let done = r["tx"]["done_ns"][0].as_u64().unwrap();
    // the request leaves at connect(), is written once established; the reply needs a
    // round trip after the handshake plus the 100- and 1000-byte frames' serialisation
    let expect = connected + 10 * MS + frame_ns(100) + frame_ns(1000);
    assert!(
        done >= expect && done < expect + MS,
        "done {done}, expected about {expect}"
    );
    assert_eq!(sent, 0);
    assert_eq!(
        r["end_ns"].as_u64(),
        Some(done),
        "curl reports at the last byte"
    );
    let s = wire.result(1);
    assert_eq!(s["log"]["bytes"], serde_json::json!([1000]));
    assert_eq!(s["conns"]["read"], serde_json::json!([100]));
    assert_eq!(s["conns"]["written"], serde_json::json!([1000]));
    assert!(wire.bench.rr.posted.is_empty(), "the exchange was taken");
}

#[test]
fn a_large_response_arrives_whole_and_in_order() {
    let mut spec = client(RrMode::Closed, RrProto::Tcp);
    spec.response = 1_000_000;
    spec.close_after = true;
    let r = run(spec, 2, 5000).result(0);
    assert_eq!(r["bytes_read"].as_u64(), Some(1_000_000));
    let first = r["tx"]["first_ns"][0].as_u64().unwrap();
    let done = r["tx"]["done_ns"][0].as_u64().unwrap();
    // a megabyte at 50 Mbit/s takes at least 160 ms
    assert!(done - first >= 160 * MS, "{}", done - first);
}

#[test]
fn back_to_back_transactions_count_and_tick() {
    let mut spec = client(RrMode::Closed, RrProto::Tcp);
    spec.request = 1;
    spec.response = 1;
    spec.count = None;
    spec.duration_ns = Some(1000 * MS);
    spec.tick_ns = Some(200 * MS);
    spec.record = false;
    let r = run(spec, 5, 3000).result(0);
    // each transaction is one 10 ms round trip (plus two tiny frames)
    let n = r["completed"].as_u64().unwrap();
    assert!((95..=100).contains(&n), "{n}");
    let ticks = r["ticks"].as_array().unwrap();
    assert!(ticks.len() >= 4, "{ticks:?}");
    assert!(ticks
        .iter()
        .all(|t| (19..=21).contains(&t[1].as_u64().unwrap())));
}

#[test]
fn a_stream_writes_for_its_duration_and_the_server_reads_all_of_it() {
    let mut spec = client(RrMode::Stream, RrProto::Tcp);
    spec.duration_ns = Some(1000 * MS);
    spec.tick_ns = Some(200 * MS);
    let wire = run(spec, 5, 5000);
    let r = wire.result(0);
    let written = r["bytes_written"].as_u64().unwrap();
    let end = r["end_ns"].as_u64().unwrap();
    // what was written (some of it still in the send buffer at the close) all arrives,
    // no faster than 50 Mbit/s of frames
    assert_eq!(
        wire.result(1)["conns"]["read"],
        serde_json::json!([written])
    );
    assert!(
        written > 4_000_000 && written * 8 * 1_000_000_000 / end <= 50_000_000,
        "{written} {end}"
    );
    assert!(end >= 1000 * MS);
    assert!(!r["ticks"].as_array().unwrap().is_empty());
}

#[test]
fn maerts_has_the_server_write_for_the_duration_then_close() {
    let mut spec = client(RrMode::Maerts, RrProto::Tcp);
    spec.duration_ns = Some(500 * MS);
    let wire = run(spec, 5, 5000);
    let r = wire.result(0);
    let read = r["bytes_read"].as_u64().unwrap();
    assert_eq!(
        wire.result(1)["conns"]["written"],
        serde_json::json!([read])
    );
    let end = r["end_ns"].as_u64().unwrap();
    // the server stops writing at 500 ms after the accept; its send buffer drains after
    assert!((520 * MS..1000 * MS).contains(&end), "{end}");
    assert!(
        read > 2_000_000 && read * 8 * 1_000_000_000 / end <= 50_000_000,
        "{read} {end}"
    );
}

#[test]
fn the_server_sends_in_the_class_the_client_asked_for() {
    let mut spec = client(RrMode::Maerts, RrProto::Tcp);
    spec.duration_ns = Some(100 * MS);
    spec.tos = 0xb8;
    spec.server_tos = Some(0x20);
    spec.server_congestion = Some("reno".into());
    let wire = run(spec, 5, 2000);
    let from = |host: usize| -> Vec<u8> {
        wire.log
            .iter()
            .filter(|(_, h, p)| *h == host && p.payload_len() > 0)
            .map(|(_, _, p)| p.tos & !3)
            .collect()
    };
    let (sent, answered) = (from(0), from(1));
    assert!(
        !answered.is_empty() && answered.iter().all(|&t| t == 0x20),
        "{answered:?}"
    );
    assert!(sent.iter().all(|&t| t == 0xb8), "{sent:?}");
    let mut bad = client(RrMode::Stream, RrProto::Tcp);
    bad.duration_ns = Some(MS);
    bad.server_congestion = Some("nope".into());
    assert!(
        RrClient::new(bad, ComponentRng::new(0, "x")).is_err(),
        "an unknown congestion control is refused"
    );
}

#[test]
fn paced_udp_probes_record_one_way_delays_and_the_server_count() {
    let mut spec = client(RrMode::Paced, RrProto::Udp);
    spec.request = 60;
    spec.response = 0;
    spec.count = None;
    spec.duration_ns = Some(1000 * MS);
    spec.interval_ns = Some(200 * MS);
    spec.tos = 0xb8;
    let wire = run(spec, 5, 10_000);
    let r = wire.result(0);
    assert_eq!(r["requests"], 5);
    assert_eq!(
        (r["replies"].as_u64(), r["server_received"].as_u64()),
        (Some(5), Some(5))
    );
    let sent = r["tx"]["sent_ns"].as_array().unwrap();
    assert_eq!(sent[4].as_u64(), Some(800 * MS));
    let rtt = r["tx"]["done_ns"][0].as_u64().unwrap() - sent[0].as_u64().unwrap();
    let one_way = r["tx"]["server_ns"][0].as_u64().unwrap() - sent[0].as_u64().unwrap();
    let udp_frame = (60 + 14 + 20 + 8) * 8 * 1_000_000_000 / 50_000_000;
    assert_eq!(rtt, 2 * (5 * MS + udp_frame));
    assert_eq!(one_way, 5 * MS + udp_frame);
    // everything answered by the end of the test: no wait after it (irtt's waiter)
    assert_eq!(r["end_ns"].as_u64(), Some(1000 * MS));
    let echoed: Vec<u8> = wire
        .log
        .iter()
        .filter(|(_, h, _)| *h == 1)
        .map(|(_, _, p)| p.tos)
        .collect();
    assert!(
        echoed.iter().all(|&t| t == 0xb8),
        "the server answers in the request's class"
    );
}

#[test]
fn udp_rr_gives_up_on_a_lost_reply_after_its_timeout() {
    let mut spec = client(RrMode::Closed, RrProto::Udp);
    spec.request = 1;
    spec.response = 1;
    spec.count = None;
    spec.duration_ns = Some(1000 * MS);
    spec.timeout_ns = Some(100 * MS);
    let c = App::RrClient(RrClient::new(spec, ComponentRng::new(7, "client")).unwrap());
    let mut lost = false;
    let mut wire =
        Wire::new(vec![c, server(RrProto::Udp)], SimDuration::from_millis(5)).with_loss(move |p| {
            // lose the server's third reply
            let third = p.src_port == PORT && p.seq & 0xFFFF_FFFF == 2 && !lost;
            lost |= third;
            third
        });
    wire.start(1);
    wire.start(0);
    wire.run_until(at_ms(3000));
    let r = wire.result(0);
    let n = r["completed"].as_u64().unwrap();
    // 10 ms per transaction, 100 ms lost once
    assert!((88..=91).contains(&n), "{n}");
    assert_eq!(r["requests"].as_u64(), Some(n + 1));
}

#[test]
fn the_board_hands_each_exchange_out_once_in_order() {
    let mut b = RrBoard::default();
    let ex = |r| Exchange {
        request: r,
        response: 1,
        response_for: None,
        close_after: false,
        log: false,
        tos: 0,
        congestion: None,
    };
    let c = (Ipv4(1), 40_000);
    b.post(c, 80, ex(1));
    b.post(c, 80, ex(2));
    assert_eq!(b.take(c, 81), None);
    assert_eq!(b.take(c, 80).map(|e| e.request), Some(1));
    assert_eq!(b.take(c, 80).map(|e| e.request), Some(2));
    assert_eq!(b.take(c, 80), None);
    assert!(b.posted.is_empty());
}

#[test]
fn specs_that_cannot_run_are_refused() {
    let err = |spec: RrClientSpec| {
        RrClient::new(spec, ComponentRng::new(0, "x"))
            .err()
            .unwrap()
            .to_string()
    };
    let mut s = client(RrMode::Paced, RrProto::Udp);
    s.duration_ns = Some(1);
    assert!(err(s).contains("positive interval_ns"));
    assert!(err(client(RrMode::Stream, RrProto::Udp)).contains("run over TCP"));
    let mut s = client(RrMode::Closed, RrProto::Udp);
    s.request = 70_000;
    assert!(err(s).contains("1..65507"));
}
