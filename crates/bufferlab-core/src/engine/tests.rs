//! The engine's own unit tests: the per-instant limits, the qdisc run's
//! batches, TCP Small Queues hand-back, a host outrunning its stack, quiet
//! transmission ends kept out of the event queue.

use super::*;
use crate::packet::{Payload, Proto, TsqRelease};
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;

/// h1 -- s1 -- h2 on veths; `host_cost` as given.
fn pair(host_cost: Value) -> Simulator {
    let cfg = json!({
        "seed": 1,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                  {"name": "s1", "kind": "switch"}],
        "links": [
            {"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"}, "b": {"node": "s1", "intf": "s1-eth1"}},
            {"a": {"node": "s1", "intf": "s1-eth2"}, "b": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"}}
        ],
        "options": {"host_cost": host_cost},
    });
    Simulator::from_json(&cfg.to_string()).unwrap()
}

fn no_cost() -> Value {
    json!({"packet_ns": 0, "byte_ps": 0, "wakeup_ns": 0})
}

/// A cbr whose datagrams all fall on one nanosecond: 1-byte datagrams at
/// u64::MAX bit/s are 4·10⁻¹⁰ ns apart.
fn flood(sim: &mut Simulator) -> u32 {
    let spec = json!({"kind": "udp_source", "pattern": "cbr", "dst": "10.0.0.2", "port": 9,
                      "rate_bps": u64::MAX, "size": 1, "duration_ns": S});
    sim.start_app("h1", &spec.to_string()).unwrap()
}

#[test]
fn work_without_time_passing_stops_naming_the_component() {
    let mut sim = pair(no_cost());
    sim.work_cap = 5_000;
    flood(&mut sim);
    let err = sim.run(SimTime::from_nanos(S)).unwrap_err();
    let Error::Stalled(msg) = err else {
        panic!("{err:?}")
    };
    assert!(
        msg.starts_with("simulated time stopped advancing at "),
        "{msg}"
    );
    assert!(
        msg.contains("more than 5000 events in that one instant"),
        "{msg}"
    );
    assert!(msg.contains("application 0 (udp_source) on h1"), "{msg}");
    assert_eq!(sim.now(), SimTime::ZERO);
}

#[test]
fn a_qdisc_handing_out_packets_without_end_is_named() {
    // every packet a qdisc hands out counts: 300 through a pfifo at one
    // instant
    let mut sim = pair(no_cost());
    sim.work_cap = 100;
    let tc = json!({"verb": "add", "dev": "h1-eth0", "parent": "root", "handle": 1,
                    "qdisc": {"kind": "pfifo", "limit": 1000}});
    sim.tc(&serde_json::from_value(tc).unwrap()).unwrap();
    let ifc = sim.topo.iface_by_name("h1-eth0").unwrap();
    for _ in 0..300 {
        let p = Packet {
            src: Ipv4::parse("10.0.0.1").unwrap(),
            dst: Ipv4::parse("10.0.0.2").unwrap(),
            proto: Proto::Udp,
            tos: 0,
            ttl: 64,
            len: 100,
            src_port: 1,
            dst_port: 9,
            payload: Payload::Data,
            seq: 0,
            sent_at: SimTime::ZERO,
            flow: Packet::NO_FLOW,
            corrupt: false,
            local: false,
            gso_segs: 1,
            gso_size: 0,
            tsq: 0,
            tstamp: None,
        };
        let id = sim.arena.alloc(p);
        sim.iface_xmit(ifc, id);
    }
    let err = sim.check_stuck().unwrap_err().to_string();
    assert!(
        err.contains("in the qdiscs of h1-eth0 (root pfifo 1:)"),
        "{err}"
    );
}

/// A 1514-byte UDP frame from h1 to h2, as a socket of application 0
/// would hand it to h1's stack (charged `tsq` bytes of send memory).
fn frame(tsq: u32) -> Packet {
    Packet {
        src: Ipv4::parse("10.0.0.1").unwrap(),
        dst: Ipv4::parse("10.0.0.2").unwrap(),
        proto: Proto::Udp,
        tos: 0,
        ttl: 64,
        len: 1514,
        src_port: 40000,
        dst_port: 9,
        payload: Payload::Data,
        seq: 0,
        sent_at: SimTime::ZERO,
        flow: 0,
        corrupt: false,
        local: true,
        gso_segs: 1,
        gso_size: 0,
        tsq,
        tstamp: None,
    }
}

/// `tbf rate 1000000 burst 1514`: one frame of tokens, 1 514 000 ns per frame.
fn one_frame_tbf(sim: &mut Simulator, dev: &str) {
    let tc = json!({"verb": "add", "dev": dev, "parent": "root", "handle": 1,
                    "qdisc": {"kind": "tbf", "rate": 1_000_000, "burst": 1514, "limit": 100_000}});
    sim.tc(&serde_json::from_value(tc).unwrap()).unwrap();
}

#[test]
fn a_backlogged_tbf_on_a_veth_counts_two_overlimits_per_release_and_one_per_arrival() {
    // Ten frames handed to h1-eth0 at t = 0. The first takes the bucket's
    // one frame of tokens; its batch's extra dequeue and the next restart
    // find the queue empty (tbf counts nothing then). Frames 2..10 arrive
    // throttled: one failed dequeue each (9). The watchdog releases
    // frames 2..10 at k × 1.514 ms; after each of 2..9 the batch's extra
    // dequeue and the next restart fail (2 × 8), after the 10th the queue
    // is empty (0): 9 + 16 = 25 = 3N − 5 (2N − 3 = 17 with one dequeue
    // per kick, as the model had before).
    let mut sim = pair(no_cost());
    sim.options.arp = false;
    one_frame_tbf(&mut sim, "h1-eth0");
    let ifc = sim.topo.iface_by_name("h1-eth0").unwrap();
    for _ in 0..10 {
        let id = sim.arena.alloc(frame(0));
        sim.iface_xmit(ifc, id);
    }
    sim.run(SimTime::from_nanos(S)).unwrap();
    let tbf = sim.ifaces[ifc].tree.show()[0].stats;
    assert_eq!((tbf.packets, tbf.overlimits), (10, 25));
    assert_eq!(sim.ifaces[ifc].tx_packets, 10);
}

#[test]
fn a_packets_send_memory_comes_back_when_it_leaves_the_host() {
    // TCP Small Queues (docs/semantics/tcp.md §6.4): a charged frame held
    // by h1's tbf keeps its charge until the tbf sends it; it is then given
    // back for the socket (application 0, port 40000, to 10.0.0.2:9).
    let mut sim = pair(no_cost());
    sim.options.arp = false;
    one_frame_tbf(&mut sim, "h1-eth0");
    let ifc = sim.topo.iface_by_name("h1-eth0").unwrap();
    for _ in 0..2 {
        let id = sim.arena.alloc(frame(2410));
        sim.iface_xmit(ifc, id);
    }
    // the first left at once, the second waits for tokens
    let released = sim.arena.take_tsq();
    let expect = TsqRelease {
        flow: 0,
        local_port: 40000,
        remote: (Ipv4::parse("10.0.0.2").unwrap(), 9),
        bytes: 2410,
    };
    assert_eq!(released, vec![expect]);
    // the watchdog's instant: the tokens for the second frame are there
    assert_eq!(
        sim.ifaces[ifc].watchdog_at,
        Some(SimTime::from_nanos(1_514_000))
    );
    sim.now = SimTime::from_nanos(1_513_999);
    sim.kick(ifc);
    assert_eq!(
        sim.arena.take_tsq(),
        vec![],
        "still held a nanosecond early"
    );
    sim.now = SimTime::from_nanos(1_514_000);
    sim.kick(ifc);
    assert_eq!(
        sim.arena.take_tsq(),
        vec![expect],
        "given back as it leaves"
    );
}

#[test]
fn zero_delay_arrivals_count_against_a_stretch() {
    // every stretch of 64 units returns, however long time stands still
    let mut sim = pair(no_cost());
    flood(&mut sim);
    for _ in 0..50 {
        assert_eq!(sim.run_bounded(SimTime::from_nanos(S), 64).unwrap(), None);
        assert_eq!(sim.now(), SimTime::ZERO);
    }
    // 3200 units: events and arrivals, about 3 per datagram (its timer, two hops)
    let h2 = sim.topo.iface_by_name("h2-eth0").unwrap();
    let received = sim.ifaces[h2].rx_packets;
    assert!((500..=3200).contains(&received), "{received}");
}

#[test]
fn a_host_sending_faster_than_its_stack_stops_the_run() {
    // 10⁸ datagrams/s against ~3·10⁵ a host processes: after about a
    // second of backlog (some 3·10⁵ packets) the run stops, naming h1
    let mut sim = pair(json!({}));
    let spec = json!({"kind": "udp_source", "pattern": "cbr", "dst": "10.0.0.2", "port": 9,
                      "rate_bps": 1_000_000_000_000u64, "size": 1250, "duration_ns": S});
    sim.start_app("h1", &spec.to_string()).unwrap();
    let err = sim.run(SimTime::from_nanos(S)).unwrap_err().to_string();
    assert!(
        err.starts_with("h1's applications send more packets than its network stack can process"),
        "{err}"
    );
    assert!(err.contains("1 s behind"), "{err}");
    assert!(sim.now() < SimTime::from_nanos(S / 100), "{}", sim.now());
}

/// h1 ==10G== s1, and h2, h3 --1G-- s1 (10 µs wires, no ARP, no GSO, no
/// host cost), ns-3's RED on s1's ports with qw 0.05 (the idle periods that
/// empty dequeues start weigh in its average, which the summary shows); TCP
/// from h3 to h1 and from h2 to h3, started together so that many events
/// fall on the same nanosecond, and Poisson UDP at 700 Mbit/s from h1 to h2,
/// which empties and fills s1's port to h2 again and again. `queue_every`
/// queues every `LinkFree`.
fn red_dumbbell(queue_every: bool) -> Simulator {
    let wire = |a: &str, ai: &str, b: &str, bi: &str, ip: &str, gbps: u64| {
        json!({"a": {"node": a, "intf": ai, "ip": ip}, "b": {"node": b, "intf": bi},
               "rate_bps": gbps * 1_000_000_000, "delay_ns": 10_000})
    };
    let cfg = json!({
        "seed": 7,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                  {"name": "h3", "kind": "host"}, {"name": "s1", "kind": "switch"}],
        "links": [wire("h1", "h1-eth0", "s1", "s1-eth1", "10.0.0.1", 10),
                  wire("h2", "h2-eth0", "s1", "s1-eth2", "10.0.0.2", 1),
                  wire("h3", "h3-eth0", "s1", "s1-eth3", "10.0.0.3", 1)],
        "options": {"arp": false, "gso": false, "host_cost": no_cost()},
    });
    let mut sim = Simulator::from_json(&cfg.to_string()).unwrap();
    sim.queue_every_link_free = queue_every;
    let mut red = serde_json::to_value(crate::qdisc::spec::RedNs3Spec {
        qw: 0.05,
        bandwidth: 1_000_000_000,
        link_delay: 10_000,
        ..Default::default()
    })
    .unwrap();
    red["kind"] = json!("red_ns3");
    for dev in ["s1-eth1", "s1-eth2", "s1-eth3"] {
        let tc = json!({"verb": "add", "dev": dev, "parent": "root", "handle": 1, "qdisc": red});
        sim.tc(&serde_json::from_value(tc).unwrap()).unwrap();
    }
    for (from, to, addr) in [("h3", "h1", "10.0.0.1"), ("h2", "h3", "10.0.0.3")] {
        let sink = json!({"kind": "sink", "port": 5001, "proto": "tcp"});
        sim.start_app(to, &sink.to_string()).unwrap();
        let bulk = json!({"kind": "bulk", "dst": addr, "port": 5001, "duration_ns": S});
        sim.start_app(from, &bulk.to_string()).unwrap();
    }
    let sink = json!({"kind": "sink", "port": 9, "proto": "udp"});
    sim.start_app("h2", &sink.to_string()).unwrap();
    let poisson = json!({"kind": "udp_source", "pattern": "poisson", "dst": "10.0.0.2", "port": 9,
                         "rate_bps": 700_000_000, "size": 1472, "duration_ns": S});
    sim.start_app("h1", &poisson.to_string()).unwrap();
    sim
}

/// Run to 100 ms in stretches of the given budgets (cycled): after each
/// stretch, (instant, events so far); then the summary.
fn stretches(sim: &mut Simulator, budgets: &[u64]) -> (Vec<(SimTime, u64)>, Value) {
    let end = SimTime::from_nanos(100_000_000);
    let mut stops = vec![];
    for &b in budgets.iter().cycle() {
        let out = sim.run_bounded(end, b).unwrap();
        stops.push((sim.now(), sim.events_processed()));
        if out.is_some() && sim.now() >= end {
            break;
        }
    }
    (stops, sim.summary())
}

#[test]
fn quiet_link_frees_change_no_run() {
    let (reference_stops, reference) = stretches(&mut red_dumbbell(true), &[u64::MAX]);
    let mut sim = red_dumbbell(false);
    let (stops, summary) = stretches(&mut sim, &[u64::MAX]);
    assert_eq!(summary, reference);
    assert_eq!(stops, reference_stops);
    // ports that are not the bottleneck: most of their transmission ends are quiet
    let outside = sim.events.run_outside();
    let events = sim.events_processed();
    assert!(outside * 10 > events, "{outside} of {events}");
    // a budget can run out among them: every stretch stops after the same
    // events as the reference's, including stretches of one
    let budgets = [1, 3, 2, 1, 50, 7, 1, 400];
    let (reference_stops, reference) = stretches(&mut red_dumbbell(true), &budgets);
    let (stops, summary) = stretches(&mut red_dumbbell(false), &budgets);
    assert_eq!(summary, reference);
    assert_eq!(stops, reference_stops);
}
