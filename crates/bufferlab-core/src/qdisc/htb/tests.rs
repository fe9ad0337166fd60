//! HTB component tests: hand-computed token arithmetic, rate/ceil sharing,
//! DRR by quantum, the default class and the direct queue, a netem leaf.

use super::*;
use crate::qdisc::spec::{NetemSpec, U32Filter, U32Match};
use crate::qdisc::tree::harness::Env;

const MBIT: u64 = 125_000; // bytes/s

/// A class with iproute2's default 1600 B bursts turned into ns.
fn class(classid: u16, parent: u16, rate: u64, ceil: u64) -> HtbClassSpec {
    HtbClassSpec {
        classid,
        parent,
        rate,
        ceil,
        buffer: 1600 * 1_000_000_000 / rate,
        cbuffer: 1600 * 1_000_000_000 / ceil,
        prio: 0,
        quantum: 0,
        leaf: None,
    }
}

fn dport_filter(port: u16, flowid: u16) -> U32Filter {
    U32Filter {
        prio: 1,
        matches: vec![U32Match {
            field: U32Field::Dport,
            value: port as u32,
            mask: 0xffff,
        }],
        flowid,
        flower: None,
    }
}

fn htb(default: u16, classes: Vec<HtbClassSpec>, filters: Vec<U32Filter>) -> Htb {
    let spec = HtbSpec {
        default,
        r2q: 10,
        direct_qlen: 1000,
        leaf_limit: 1000,
        classes,
        filters,
    };
    let env = BuildEnv {
        seed: 1,
        stream: "test",
        profile: Default::default(),
        now: SimTime::ZERO,
        at_root: true,
    };
    Htb::new(&spec, &env).unwrap()
}

fn push(h: &mut Htb, env: &mut Env, t: u64, dport: u16, len: u32) -> Verdict {
    let id = env.pkt(len);
    env.arena.get_mut(id).dst_port = dport;
    let mut reduce = Reduce::default();
    h.enqueue(&mut env.ctx(t), &mut reduce, id, &mut [])
}

/// Keep every port in `ports` backlogged with 1500 B frames for `secs`
/// seconds; returns the bytes sent per port and the departure log.
fn saturate(h: &mut Htb, env: &mut Env, ports: &[u16], secs: u64) -> Vec<u64> {
    let mut sent = vec![0u64; ports.len()];
    let (mut t, end) = (0u64, secs * 1_000_000_000);
    let mut queued = vec![0usize; ports.len()];
    while t < end {
        for (k, &p) in ports.iter().enumerate() {
            while queued[k] < 20 {
                assert_eq!(push(h, env, t, p, 1500), Verdict::Queued);
                queued[k] += 1;
            }
        }
        let mut ctx = env.ctx(t);
        let mut reduce = Reduce::default();
        let got = h.dequeue(&mut ctx, &mut reduce, &mut []);
        let wd = ctx.watchdog;
        match got {
            Some(id) => {
                let k = ports
                    .iter()
                    .position(|&p| p == env.arena.get(id).dst_port)
                    .unwrap();
                sent[k] += env.arena.len_of(id) as u64;
                queued[k] -= 1;
                env.arena.free(id);
            }
            None => t = wd.expect("backlogged htb arms its watchdog").as_nanos(),
        }
    }
    sent
}

fn mbit(bytes: u64, secs: u64) -> f64 {
    bytes as f64 * 8.0 / secs as f64 / 1e6
}

fn assert_near(got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= want * tol,
        "got {got:.4}, want {want:.4} ± {:.1} %",
        tol * 100.0
    );
}

#[test]
fn tokens_are_time_hand_computed() {
    // 1 Mbit/s = 125 000 B/s: 1500 B cost 12 ms exactly; buffer 20 ms.
    let mut c = class(1, 0, MBIT, MBIT);
    c.buffer = 20_000_000;
    c.cbuffer = 20_000_000;
    let mut h = htb(1, vec![c], vec![]);
    let mut env = Env::default();
    push(&mut h, &mut env, 0, 1, 1500);
    push(&mut h, &mut env, 0, 1, 1500);
    push(&mut h, &mut env, 0, 1, 1500);
    let mut reduce = Reduce::default();
    // t=0: 20 − 12 = 8 ms; again 8 − 12 = −4 ms: CANT_SEND, one overlimit.
    for _ in 0..2 {
        assert!(h.dequeue(&mut env.ctx(0), &mut reduce, &mut []).is_some());
    }
    assert_eq!(h.classes()[0].tokens, -4_000_000);
    assert_eq!(h.classes()[0].ctokens, -4_000_000);
    assert_eq!(h.stats().overlimits, 1);
    let mut ctx = env.ctx(0);
    assert!(h.dequeue(&mut ctx, &mut reduce, &mut []).is_none());
    // ready when the −4 ms have refilled
    assert_eq!(ctx.watchdog, Some(SimTime::from_nanos(4_000_000)));
    let x = h.xstats();
    // the kernel dumps ticks of 64 ns: −4 000 000 >> 6 = −62 500
    assert_eq!(x["classes"][0]["tokens"], -62_500);
    assert_eq!(x["classes"][0]["lends"], 2);
    // t=4 ms: −4 + 4 = 0 ≥ 0 → sends; 0 − 12 = −12 ms
    assert!(h
        .dequeue(&mut env.ctx(4_000_000), &mut reduce, &mut [])
        .is_some());
    assert_eq!(h.classes()[0].tokens, -12_000_000);
    // a refill is capped at the bucket: after 1 s idle, 20 ms − 12 ms
    push(&mut h, &mut env, 1_004_000_000, 1, 1500);
    assert!(h
        .dequeue(&mut env.ctx(1_004_000_000), &mut reduce, &mut [])
        .is_some());
    assert_eq!(h.classes()[0].tokens, 8_000_000);
}

#[test]
fn a_class_sending_skbs_beyond_its_burst_counts_an_overlimit_per_dequeue() {
    // htb_change_class_mode counts each change into CANT_SEND. 10 Mbit/s with
    // the default 1600 B burst (1.28 ms) and 15 140 B skbs (10 segments:
    // 12.112 ms each): every dequeue drives ctokens below zero; the event at
    // the instant they are back to zero (htb_do_events, run as htb_dequeue
    // reaches the level) makes the class CAN_SEND again, so the next dequeue
    // counts again. Linux 6.18 counted 657 for 700 dequeued skbs, most of
    // 45 segments (docs/kernel-oracle.md, "Fidelity matrix").
    let mut h = htb(10, vec![class(10, 0, 10 * MBIT, 10 * MBIT)], vec![]);
    let mut env = Env::default();
    for _ in 0..5 {
        push(&mut h, &mut env, 0, 1, 15_140);
    }
    let mut reduce = Reduce::default();
    let mut t = 0;
    let mut sent_at = Vec::new();
    while sent_at.len() < 5 {
        let mut ctx = env.ctx(t);
        match h.dequeue(&mut ctx, &mut reduce, &mut []) {
            Some(_) => sent_at.push(t),
            None => t = ctx.watchdog.unwrap().as_nanos(),
        }
    }
    // 0, then 12.112 ms apart after the first 1.28 ms of burst: 10.832 ms
    assert_eq!(
        sent_at,
        vec![0, 10_832_000, 22_944_000, 35_056_000, 47_168_000]
    );
    assert_eq!(h.stats().overlimits, 5);
    assert_eq!(h.classes()[0].stats.overlimits, 5);
}

/// Serve `h` as a veth does after each arrival: dequeue until it returns
/// nothing (the last call is the batch's failed one). Returns the packets sent.
fn drain(h: &mut Htb, env: &mut Env, t: u64) -> (usize, Option<SimTime>) {
    let mut reduce = Reduce::default();
    let mut sent = 0;
    loop {
        let mut ctx = env.ctx(t);
        match h.dequeue(&mut ctx, &mut reduce, &mut []) {
            Some(id) => {
                env.arena.free(id);
                sent += 1;
            }
            None => return (sent, ctx.watchdog),
        }
    }
}

/// A 10 Mbit/s parent (1:1, the default 1.28 ms bucket) and one 10 Mbit/s
/// leaf under it (1:10) whose buckets are `leaf_bucket_ns` deep.
fn parent_and_leaf(leaf_bucket_ns: u64) -> Htb {
    let mut leaf = class(10, 1, 10 * MBIT, 10 * MBIT);
    leaf.buffer = leaf_bucket_ns;
    leaf.cbuffer = leaf_bucket_ns;
    htb(10, vec![class(1, 0, 10 * MBIT, 10 * MBIT), leaf], vec![])
}

#[test]
fn a_parent_charged_by_a_leaf_sending_at_its_own_level_compares_with_its_stale_mode() {
    // htb_charge_class counts a change into CANT_SEND from the mode the class
    // holds (htb_change_class_mode); a leaf sending at level 0 ran the events
    // of level 0 only, and an empty htb runs none (htb_dequeue returns at
    // once). 15 140 B cost 12.112 ms at 10 Mbit/s; the leaf's 100 ms buckets
    // keep it CAN_SEND throughout.
    let mut h = parent_and_leaf(100_000_000);
    let mut env = Env::default();
    // t = 0: the parent goes 1.28 − 12.112 = −10.832 ms: CANT_SEND, counted;
    // a second skb takes it to −22.944 ms
    for _ in 0..2 {
        push(&mut h, &mut env, 0, 1, 15_140);
        assert_eq!(drain(&mut h, &mut env, 0), (1, None), "empty: no watchdog");
    }
    assert_eq!(h.classes()[0].tokens, -22_944_000);
    // t = 25 ms: the parent's tokens would be back at 2.056 ms, but a dequeue
    // of the empty tree leaves its mode CANT_SEND
    assert_eq!(drain(&mut h, &mut env, 25_000_000), (0, None));
    // t = 30 ms: min(−22.944 + 30, 1.28) − 12.112 = −10.832 ms, CANT_SEND
    // again: not a change, not counted
    push(&mut h, &mut env, 30_000_000, 1, 15_140);
    assert_eq!(drain(&mut h, &mut env, 30_000_000).0, 1);
    assert_eq!(h.classes()[0].tokens, -10_832_000);
    let counted: Vec<u64> = h.classes().iter().map(|c| c.stats.overlimits).collect();
    assert_eq!(counted, vec![1, 0]);
    assert_eq!(h.stats().overlimits, 1);
}

#[test]
fn the_watchdog_wakes_at_a_parents_mode_change_and_that_refresh_counts_later() {
    // htb_dequeue arms its watchdog for the next event of any level
    // (next_event), so a blocked htb also wakes when only its parent becomes
    // CAN_SEND; that wake-up runs every level's events (htb_do_events) and the
    // parent's next charge, from a leaf sending at level 0, counts again.
    // Leaf buckets 0.64 ms, parent 1.28 ms, skbs 12.112 ms.
    let mut h = parent_and_leaf(640_000);
    let mut env = Env::default();
    push(&mut h, &mut env, 0, 1, 15_140);
    push(&mut h, &mut env, 0, 1, 15_140);
    // t = 0: leaf 0.64 − 12.112 = −11.472 ms, parent −10.832 ms: both
    // CANT_SEND, two overlimits; the parent changes first
    assert_eq!(
        drain(&mut h, &mut env, 0),
        (1, Some(SimTime::from_nanos(10_832_000)))
    );
    assert_eq!(h.stats().overlimits, 2);
    // t = 10.832 ms: the parent is CAN_SEND, the leaf still CANT_SEND
    assert_eq!(
        drain(&mut h, &mut env, 10_832_000),
        (0, Some(SimTime::from_nanos(11_472_000)))
    );
    // t = 11.472 ms: the leaf sends at level 0; it goes to −12.112 ms and the
    // parent to min(−10.832 + 11.472, 1.28) − 12.112 = −11.472 ms: both
    // change into CANT_SEND, both count
    assert_eq!(drain(&mut h, &mut env, 11_472_000).0, 1);
    assert_eq!(h.classes()[0].tokens, -11_472_000);
    let counted: Vec<u64> = h.classes().iter().map(|c| c.stats.overlimits).collect();
    assert_eq!(counted, vec![2, 2]);
    assert_eq!(h.stats().overlimits, 4);
}

#[test]
fn single_class_shapes_to_its_rate() {
    let mut h = htb(10, vec![class(10, 0, 5 * MBIT, 5 * MBIT)], vec![]);
    let mut env = Env::default();
    let sent = saturate(&mut h, &mut env, &[1], 10);
    assert_near(mbit(sent[0], 10), 5.0, 0.002);
}

#[test]
fn siblings_get_their_rates_and_share_the_rest_by_quantum() {
    // Parent 10 Mbit; children 2 and 6 Mbit, both may borrow up to 10.
    // Each gets its rate; the spare 2 Mbit is lent round robin by quantum
    // (rate/r2q: 25 000 vs 75 000 B, 1 : 3): 2 + 0.5 and 6 + 1.5.
    let classes = vec![
        class(1, 0, 10 * MBIT, 10 * MBIT),
        class(10, 1, 2 * MBIT, 10 * MBIT),
        class(20, 1, 6 * MBIT, 10 * MBIT),
    ];
    let filters = vec![dport_filter(1, 10), dport_filter(2, 20)];
    let mut h = htb(0, classes, filters);
    let mut env = Env::default();
    let sent = saturate(&mut h, &mut env, &[1, 2], 10);
    assert_near(mbit(sent[0], 10), 2.5, 0.02);
    assert_near(mbit(sent[1], 10), 7.5, 0.02);
    let x = h.xstats();
    assert!(x["classes"][1]["borrows"].as_u64().unwrap() > 0);
    assert_eq!(x["classes"][0]["level"], 7);
    assert_eq!(x["classes"][1]["level"], 0);
}

#[test]
fn a_lone_class_borrows_up_to_its_ceil_and_no_further_than_the_parent() {
    // 1 Mbit guaranteed, ceil 3 Mbit, parent 10 Mbit idle otherwise: 3 Mbit.
    // With ceil 20 Mbit the parent's 10 Mbit bind instead.
    for (ceil, want) in [(3 * MBIT, 3.0), (20 * MBIT, 10.0)] {
        let classes = vec![
            class(1, 0, 10 * MBIT, 10 * MBIT),
            class(10, 1, MBIT, ceil),
            class(20, 1, 6 * MBIT, 10 * MBIT),
        ];
        let mut h = htb(10, classes, vec![]);
        let mut env = Env::default();
        let sent = saturate(&mut h, &mut env, &[1], 5);
        assert_near(mbit(sent[0], 5), want, 0.01);
    }
}

#[test]
fn drr_shares_spare_rate_by_quantum() {
    // Both children have a token rate (8 kbit) next to nothing, so almost
    // all of the parent's 8 Mbit is borrowed and split 1 : 3 by quantum.
    let mut a = class(10, 1, 1000, 8 * MBIT);
    let mut b = class(20, 1, 1000, 8 * MBIT);
    a.quantum = 1500;
    b.quantum = 4500;
    let classes = vec![class(1, 0, 8 * MBIT, 8 * MBIT), a, b];
    let filters = vec![dport_filter(1, 10), dport_filter(2, 20)];
    let mut h = htb(0, classes, filters);
    let mut env = Env::default();
    let sent = saturate(&mut h, &mut env, &[1, 2], 5);
    let total = (sent[0] + sent[1]) as f64;
    assert_near(sent[0] as f64 / total, 0.25, 0.02);
    assert_near(mbit(sent[0] + sent[1], 5), 8.0, 0.01);
}

#[test]
fn quantum_is_rate_over_r2q_clamped_with_the_kernel_warning() {
    // 64 kbit = 8000 B/s: 800 < 1000 → 1000; 1 Gbit: 12.5 MB → 200 000.
    let h = htb(
        0,
        vec![
            class(1, 0, 8000, 8000),
            class(2, 0, 10 * MBIT, 10 * MBIT),
            class(3, 0, 1000 * MBIT, 1000 * MBIT),
        ],
        vec![],
    );
    let q: Vec<u32> = h.classes().iter().map(|c| c.quantum).collect();
    assert_eq!(q, vec![1000, 125_000, 200_000]);
    assert_eq!(h.warnings(), [(1, "small"), (3, "big")]);
}

#[test]
fn unclassified_traffic_uses_the_default_class_else_the_direct_queue() {
    let mut env = Env::default();
    let mut h = htb(10, vec![class(10, 0, MBIT, MBIT)], vec![]);
    push(&mut h, &mut env, 0, 7, 1000);
    assert_eq!(h.classes()[0].backlog(), (1, 1000));
    assert_eq!(h.direct_packets(), 0);

    let mut h = htb(0, vec![class(10, 0, MBIT, MBIT)], vec![]);
    push(&mut h, &mut env, 0, 7, 1000);
    assert_eq!(h.classes()[0].backlog(), (0, 0));
    assert_eq!(h.direct_packets(), 1);
    assert_eq!(h.xstats()["direct_packets_stat"], 1);
    // the direct queue is not shaped
    let mut reduce = Reduce::default();
    assert!(h.dequeue(&mut env.ctx(0), &mut reduce, &mut []).is_some());
}

#[test]
fn a_filter_to_a_missing_class_falls_back_to_default() {
    let mut env = Env::default();
    let mut h = htb(
        10,
        vec![class(10, 0, MBIT, MBIT)],
        vec![dport_filter(5, 99)],
    );
    push(&mut h, &mut env, 0, 5, 500);
    assert_eq!(h.classes()[0].backlog(), (1, 500));
}

#[test]
fn a_netem_leaf_delays_inside_the_class() {
    let mut c = class(10, 0, 10 * MBIT, 10 * MBIT);
    c.leaf = Some(HtbLeaf {
        handle: 0x10,
        spec: Box::new(QdiscSpec::Netem(NetemSpec::delay_only(10_000_000))),
        child: None,
    });
    let mut h = htb(10, vec![c], vec![]);
    let mut env = Env::default();
    push(&mut h, &mut env, 0, 1, 1500);
    let mut reduce = Reduce::default();
    let mut ctx = env.ctx(0);
    assert!(h.dequeue(&mut ctx, &mut reduce, &mut []).is_none());
    assert_eq!(ctx.watchdog, Some(SimTime::from_nanos(10_000_000)));
    let got = h.dequeue(&mut env.ctx(10_000_000), &mut reduce, &mut []);
    assert!(got.is_some());
    assert_eq!(h.stats().qlen, 0);
    assert_eq!(h.xstats()["classes"][0]["leaf"][0]["kind"], "netem");
}

/// `tc class VERB dev x [parent 1:P] classid 1:MINOR [htb rate RATE]`.
fn class_req(verb: ClassVerb, minor: u16, parent: Option<u16>, rate: u64) -> ClassRequest {
    ClassRequest {
        verb,
        dev: "x".into(),
        major: 1,
        minor,
        parent,
        class: (verb != ClassVerb::Delete).then(|| {
            let c = class(minor, parent.unwrap_or(0), rate, rate);
            ClassSpec::Htb(HtbClassOpts {
                rate: c.rate,
                ceil: c.ceil,
                buffer: c.buffer,
                cbuffer: c.cbuffer,
                prio: c.prio,
                quantum: c.quantum,
            })
        }),
    }
}

#[test]
fn deleting_a_class_purges_its_queue_only() {
    let mut env = Env::default();
    let mut h = htb(
        10,
        vec![class(10, 0, MBIT, MBIT), class(20, 0, MBIT, MBIT)],
        vec![dport_filter(2, 20)],
    );
    push(&mut h, &mut env, 0, 1, 1000);
    push(&mut h, &mut env, 0, 2, 700);
    let del = class_req(ClassVerb::Delete, 20, None, 0);
    let changed = h.class_verb(&del, &mut env.ctx(5)).unwrap();
    assert_eq!(changed.purged.packets, 1);
    assert_eq!(changed.purged.bytes, 700);
    assert_eq!(
        (h.stats().qlen, h.stats().backlog, h.stats().drops),
        (1, 1000, 1)
    );
    assert_eq!(h.classes()[0].backlog(), (1, 1000));
    // a class under a missing parent is refused and nothing changes
    let bad = class_req(ClassVerb::Add, 0x30, Some(0x77), MBIT);
    let e = h.class_verb(&bad, &mut env.ctx(5)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Error: htb: parent class 77 of class 30 does not exist.\nRTNETLINK answers: Invalid argument"
    );
    assert_eq!(h.classes().len(), 1);
}

#[test]
fn deleting_a_class_before_a_backlogged_one_keeps_serving_it() {
    // the dequeue keeps the indices of backlogged and waiting classes: a
    // deletion shifts the classes after it, and those sets with them
    let mut env = Env::default();
    let mut h = htb(
        10,
        vec![
            class(10, 0, MBIT, MBIT),
            class(20, 0, MBIT, MBIT),
            class(30, 0, MBIT, MBIT),
        ],
        vec![dport_filter(2, 20), dport_filter(3, 30)],
    );
    for port in [1, 2, 3, 3] {
        push(&mut h, &mut env, 0, port, 1000);
    }
    let mut reduce = Reduce::default();
    let first = h.dequeue(&mut env.ctx(0), &mut reduce, &mut []).unwrap();
    assert_eq!(env.arena.get(first).dst_port, 1); // class 10 (lowest classid first)
    let del = class_req(ClassVerb::Delete, 20, None, 0);
    assert_eq!(
        h.class_verb(&del, &mut env.ctx(0)).unwrap().purged.packets,
        1
    );
    // class 10 now waits for tokens (1 Mbit/s, 1000 B sent): class 30, now
    // at index 1, sends both of its packets once it may
    let mut ports = Vec::new();
    let mut t = 0;
    while ports.len() < 2 {
        let mut ctx = env.ctx(t);
        match h.dequeue(&mut ctx, &mut reduce, &mut []) {
            Some(id) => ports.push(env.arena.get(id).dst_port),
            None => {
                t = ctx
                    .watchdog
                    .expect("a backlog arms the watchdog")
                    .as_nanos()
            }
        }
    }
    assert_eq!(ports, vec![3, 3]);
    assert_eq!(h.stats().qlen, 0);
    assert_eq!(h.dequeue(&mut env.ctx(t), &mut reduce, &mut []), None);
}

#[test]
fn a_qdisc_change_starts_a_new_class_table() {
    // sch_htb.c has no change op; bufferlab keeps its document rule: the
    // request's classes (none from tc) replace the table, queues purged
    let mut env = Env::default();
    let mut h = htb(
        10,
        vec![class(10, 0, MBIT, MBIT)],
        vec![dport_filter(2, 10)],
    );
    push(&mut h, &mut env, 0, 1, 1000);
    let spec = HtbSpec {
        default: 0x20,
        r2q: 10,
        direct_qlen: 1000,
        leaf_limit: 1000,
        classes: vec![],
        filters: vec![],
    };
    let changed = h
        .change(&QdiscSpec::Htb(spec), &mut env.ctx(5), None)
        .unwrap();
    assert_eq!((changed.purged.packets, changed.purged.bytes), (1, 1000));
    assert!(h.classes().is_empty());
    assert_eq!(h.options()["default"], 0x20);
    assert_eq!(h.options()["filters"], serde_json::json!([]));
    assert_eq!((h.stats().qlen, h.stats().drops), (0, 1));
}

#[test]
fn a_qdisc_grafted_below_the_leaf_replaces_its_default_child() {
    // class → tbf 6: → netem 10: (Mininet's TCLink shape with red in tbf's place)
    let tbf = crate::qdisc::spec::TbfSpec {
        rate: 10 * MBIT,
        burst: 15_000,
        limit: 100_000,
        peakrate: None,
        mtu: None,
        mpu: 0,
        overhead: 0,
        atm: false,
    };
    let mut c = class(1, 0, 10 * MBIT, 10 * MBIT);
    c.leaf = Some(HtbLeaf {
        handle: 6,
        spec: Box::new(QdiscSpec::Tbf(tbf)),
        child: Some(Box::new(HtbLeaf {
            handle: 0x10,
            spec: Box::new(QdiscSpec::Netem(NetemSpec::delay_only(10_000_000))),
            child: None,
        })),
    });
    let mut h = htb(1, vec![c], vec![]);
    let kinds: Vec<_> = h.classes()[0].leaf.iter().map(|n| n.q.kind()).collect();
    assert_eq!(kinds, ["tbf", "netem"]);
    let mut env = Env::default();
    push(&mut h, &mut env, 0, 1, 1500);
    let mut reduce = Reduce::default();
    let mut ctx = env.ctx(0);
    assert!(h.dequeue(&mut ctx, &mut reduce, &mut []).is_none());
    assert_eq!(ctx.watchdog, Some(SimTime::from_nanos(10_000_000)));
    assert!(h
        .dequeue(&mut env.ctx(10_000_000), &mut reduce, &mut [])
        .is_some());
    assert_eq!(h.xstats()["classes"][0]["leaf"][1]["handle"], 0x10);
}
