//! Unit vectors of docs/semantics/qdiscs.md §5.9 (E11–E15), the drop-probability curve on
//! a fixed backlog, counters, CPM scaling, and tbf over RED.

use super::*;
use crate::qdisc::spec::{DscpClass, DscpCoeff, QdiscSpec, TbfSpec};
use crate::qdisc::tree::harness::{run, Env};
use crate::qdisc::{AnyQdisc, AutoHandles, QdiscProfile, QdiscTree};
use crate::qdisc::{ParentSpec, TcRequest, TcVerb};

const MS: u64 = 1_000_000;

/// tc_red_eval_idle_damping, as the Python parser does it (test helper).
fn stab(wlog: u8, rate_bps: f64, avpkt: f64) -> (u8, Vec<u8>) {
    let xmit = (avpkt / rate_bps * 1e6 * 15.625).ceil();
    let lw = -(1.0 - 1.0 / (1u64 << wlog) as f64).ln() / xmit;
    let maxtime = 31.0 / lw;
    let c = (0..32)
        .find(|&c| maxtime / ((1u64 << c) as f64) < 512.0)
        .unwrap();
    let mut t = vec![0u8; 256];
    for (i, v) in t.iter_mut().enumerate().take(255).skip(1) {
        *v = ((i as f64) * ((1u64 << c) as f64) * lw).min(31.0) as u8;
    }
    t[255] = 31;
    (c as u8, t)
}

/// E11: Lab 16 `red limit 26214400 max 8738133 min 2184533 burst 2185 avpkt
/// 1000 bandwidth 1gbit adaptive` as tc sends it.
pub(crate) fn lab16() -> RedSpec {
    let (c, t) = stab(1, 125_000_000.0, 1000.0);
    RedSpec {
        limit: 26_214_400,
        qth_min: 2_184_533,
        qth_max: 8_738_133,
        wlog: 1,
        plog: 29,
        scell_log: c,
        stab: t,
        max_p: 85_899_345,
        ecn: false,
        harddrop: false,
        adaptive: true,
        nodrop: false,
        adaptive_timer: true,
        dscp_coeff: None,
    }
}

/// E12: the CPM report's `red limit 400kb min 16kb max 32kb avpkt 1000 burst
/// 17 probability 0.2 bandwidth 8mbit`.
pub(crate) fn cpm() -> RedSpec {
    let (c, t) = stab(1, 1_000_000.0, 1000.0);
    RedSpec {
        limit: 409_600,
        qth_min: 16_384,
        qth_max: 32_768,
        wlog: 1,
        plog: 17,
        scell_log: c,
        stab: t,
        max_p: 858_993_459,
        ecn: false,
        harddrop: false,
        adaptive: false,
        nodrop: false,
        adaptive_timer: false,
        dscp_coeff: None,
    }
}

fn report_map() -> DscpCoeff {
    DscpCoeff {
        classes: vec![
            DscpClass {
                key: 0x32,
                num: 5,
                den: 10,
            },
            DscpClass {
                key: 0x46,
                num: 7,
                den: 10,
            },
        ],
        default: (9, 10),
        match_dscp: false,
    }
}

#[test]
fn e11_kernel_parameters() {
    let s = lab16();
    assert_eq!(s.scell_log, 4);
    // Stab ranges of E11: 0–11→0, 12–22→1, …, 248–254→22, 255→31
    assert_eq!(&s.stab[0..13], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(
        (s.stab[22], s.stab[23], s.stab[247], s.stab[248]),
        (1, 2, 21, 22)
    );
    assert_eq!((s.stab[254], s.stab[255]), (22, 31));
    let p = RedParms::new(&s).unwrap();
    assert_eq!((p.qth_min_s, p.qth_max_s), (4_369_066, 17_476_266));
    assert_eq!((p.delta, p.max_p_delta), (6_553_600, 13));
    assert_eq!((p.target_min, p.target_max), (4_805_973, 6_116_693));
    assert_eq!(p.scell_max, 4_080);
    assert_eq!(p.random(u32::MAX), 330_382_099);
}

#[test]
fn e12_kernel_parameters() {
    let s = cpm();
    assert_eq!(s.scell_log, 11);
    assert_eq!(
        (s.stab[11], s.stab[12], s.stab[253], s.stab[254]),
        (0, 1, 22, 23)
    );
    let p = RedParms::new(&s).unwrap();
    assert_eq!((p.qth_min_s, p.qth_max_s), (32_768, 65_536));
    assert_eq!((p.delta, p.max_p_delta), (16_384, 52_428));
    assert_eq!((p.target_min, p.target_max), (22_936, 26_212));
    assert_eq!(p.scell_max, 522_240);
    // exact floor division: (2³²−1) div 52 428 = 81 921 (the spec's table
    // says 0 … 81 920, which is the [cpm2014] multiply-shift range)
    assert_eq!(p.random(u32::MAX), 81_921);
    assert_eq!(((u32::MAX as u64 * 81_921) >> 32) as u32, 81_920);
}

#[test]
fn e23_probability_one_derives_max_p_from_plog() {
    let (c, t) = stab(1, 1_250_000.0, 1500.0);
    let s = RedSpec {
        limit: 1_000_000,
        qth_min: 30_000,
        qth_max: 35_000,
        plog: 13,
        scell_log: c,
        stab: t,
        max_p: 0,
        adaptive: false,
        adaptive_timer: false,
        ..lab16()
    };
    let p = RedParms::new(&s).unwrap();
    assert_eq!((p.max_p, p.max_p_delta), (2_621_435_000, 524_287));
}

#[test]
fn kernel_validation() {
    let mut s = cpm();
    s.qth_max = 100;
    assert!(RedParms::new(&s).is_err());
    let mut s = cpm();
    s.wlog = 20;
    assert!(RedParms::new(&s).is_err(), "bitlen(max)+Wlog ≥ 32");
    let mut s = cpm();
    s.nodrop = true;
    assert!(RedParms::new(&s).is_err(), "nodrop without ecn");
    let mut s = cpm();
    s.stab[3] = 32;
    assert!(RedParms::new(&s).is_err());
}

#[test]
fn e13_arithmetic_trace() {
    let mut r = Red::new(&lab16(), 1, "t", SimTime::ZERO).unwrap();
    r.idle_since = None;
    r.scripted.extend([0x1234_5678, 0x00AB_CDEF, 0x89AB_CDEF]);
    let t = SimTime::from_nanos(1);
    let mut verdicts = vec![];
    let mut trace = vec![];
    for _ in 0..33 {
        verdicts.push(r.decide(t, 3_000_000, (1, 1)));
        trace.push((r.qavg, r.qcount, r.qr));
    }
    assert_eq!(trace[0], (3_000_000, -1, 0));
    assert_eq!(trace[1], (4_500_000, 0, 23_493_838));
    assert_eq!(trace[2], (5_250_000, 1, 23_493_838));
    assert_eq!(trace[5], (5_906_250, 4, 23_493_838));
    assert_eq!(trace[29].0, 6_000_000);
    assert_eq!(trace[30], (6_000_000, 0, 866_105));
    assert_eq!(trace[31], (6_000_000, 1, 866_105));
    assert_eq!(trace[32], (6_000_000, 0, 177_672_151));
    let probs: Vec<usize> = (0..33)
        .filter(|&i| verdicts[i] == RedVerdict::Prob)
        .map(|i| i + 1)
        .collect();
    assert_eq!(probs, vec![31, 33]);
}

#[test]
fn e13_counters_through_a_tbf_parent() {
    // The same decisions counted by the qdisc: feed a tree whose RED sees a
    // fixed 3 000 000 B backlog by pre-loading its child and never draining.
    let mut env = Env::default();
    let mut tree = tbf_over_red(&mut env, 1_000, lab16());
    let preload: Vec<(u64, u32)> = vec![(0, 1500); 2000];
    // Preload 2000 × 1500 = 3 000 000 B straight into the bfifo child.
    for &(_, len) in &preload {
        let id = env.pkt(len);
        let mut ctx = env.ctx(0);
        let mut reduce = Reduce::default();
        let nodes = tree_nodes(&mut tree);
        tree::enqueue_chain(&mut nodes[2..], &mut ctx, &mut reduce, id);
    }
    {
        let r = red_mut(&mut tree);
        r.idle_since = None;
        r.scripted.extend([0x1234_5678, 0x00AB_CDEF, 0x89AB_CDEF]);
    }
    for _ in 0..33 {
        let id = env.pkt(0);
        // zero-length probes keep the child backlog at exactly 3 000 000 B
        tree.enqueue(&mut env.ctx(1), id);
    }
    assert_eq!(tree.show()[0].stats.drops, 2, "tbf parent dropped 2");
    let r = red_ref(&tree);
    assert_eq!(r.stats().overlimits, 2);
    assert_eq!(r.xstats()["early"], 2);
    assert_eq!(r.stats().drops, 2);
    assert_eq!(env.drops.packets[DropReason::EarlyDrop.index()], 2);
}

fn tree_nodes(tree: &mut QdiscTree) -> &mut [Node] {
    tree.nodes_mut()
}

#[test]
fn e14_adaptive_sequences() {
    let mut p = RedParms::new(&lab16()).unwrap();
    let mut seq = vec![];
    for _ in 0..8 {
        p.adapt(0);
        seq.push((p.max_p, p.max_p_delta));
    }
    assert_eq!(
        seq,
        vec![
            (77_309_406, 12),
            (69_578_460, 11),
            (62_620_614, 10),
            (56_358_549, 9),
            (50_722_686, 8),
            (45_650_412, 7),
            (41_085_369, 6),
            (41_085_369, 6),
        ]
    );
    let mut p = RedParms::new(&lab16()).unwrap();
    let mut seq = vec![];
    for _ in 0..60 {
        p.adapt(7_000_000);
        seq.push(p.max_p);
    }
    assert_eq!(
        &seq[..6],
        &[
            107_374_181,
            134_217_726,
            167_772_157,
            209_715_196,
            252_664_869,
            295_614_542
        ]
    );
    assert_eq!((seq[49], p.max_p_delta), (2_185_400_154, 333));
    assert_eq!(seq[59], 2_185_400_154);
}

#[test]
fn e14_timer_runs_every_500ms_only_when_armed() {
    let mut r = Red::new(&lab16(), 1, "t", SimTime::ZERO).unwrap();
    // idle since 0 with qavg 0: below target_min at every tick
    r.catch_up(SimTime::from_nanos(1_600 * MS));
    assert_eq!(r.parms.max_p, 62_620_614, "ticks at 500, 1000, 1500 ms");
    let mut s = lab16();
    s.adaptive_timer = false; // [modern]: iproute2 ≥ 5.7 never arms it
    let mut r = Red::new(&s, 1, "t", SimTime::ZERO).unwrap();
    r.catch_up(SimTime::from_nanos(10_000 * MS));
    assert_eq!(r.parms.max_p, 85_899_345);
    assert_eq!(r.options()["adaptive"], true);
}

#[test]
fn e15_idle_decay() {
    let p = RedParms::new(&lab16()).unwrap();
    let q = 6_000_000;
    assert_eq!(p.idle_decay(q, 5_000), 4_125_000);
    assert_eq!(p.idle_decay(q, 100_000), 3_000_000);
    assert_eq!(p.idle_decay(q, 1_000_000), 187_500);
    assert_eq!(p.idle_decay(q, 4_080_000), 0);
    assert_eq!(p.idle_decay(q, 60_000_000_000), 0);
    // the arrival that ends an idle period only applies the decay
    let mut r = Red::new(&lab16(), 1, "t", SimTime::ZERO).unwrap();
    r.idle_since = None;
    r.qavg = q;
    r.idle_since = Some(SimTime::from_nanos(10 * MS));
    r.decide(SimTime::from_nanos(11 * MS), 5_000_000, (1, 1));
    assert_eq!((r.qavg, r.idle_since), (187_500, None));
}

/// Exact mean packets between PROB verdicts for in-band per-count lhs `l`:
/// after a mark the gap is max(1, ceil(qR/l)) with qR = floor(U/mpd).
fn mean_gap(l: u64, mpd: u32, coeff: (u32, u32)) -> f64 {
    let full = (u32::MAX as u64 + 1) / mpd as u64; // values with mpd draws each
    let rmax = u32::MAX / mpd;
    let mut sum = 0.0;
    let mut w = 0.0;
    for q in 0..=rmax as u64 {
        let weight = if q < full {
            mpd as f64
        } else {
            ((u32::MAX as u64 + 1) - full * mpd as u64) as f64
        };
        // smallest n ≥ 1 with n·l·num ≥ q·den
        let lhs = l * coeff.0 as u64;
        let n = (q * coeff.1 as u64).div_ceil(lhs).max(1);
        sum += weight * n as f64;
        w += weight;
    }
    sum / w
}

#[test]
fn drop_probability_curve_on_a_fixed_backlog() {
    let s = cpm();
    let mpd = RedParms::new(&s).unwrap().max_p_delta;
    for (backlog, coeff) in [
        (18_000u64, (1, 1)),
        (20_000, (1, 1)),
        (24_576, (1, 1)),
        (30_000, (1, 1)),
        (24_576, (5, 10)),
        (24_576, (7, 10)),
        (24_576, (9, 10)),
    ] {
        let mut r = Red::new(&s, 7, "curve", SimTime::ZERO).unwrap();
        r.idle_since = None;
        let t = SimTime::from_nanos(1);
        // warm the average up to the backlog
        for _ in 0..64 {
            r.decide(t, backlog, coeff);
        }
        let n = 400_000;
        let marks = (0..n)
            .filter(|_| r.decide(t, backlog, coeff) == RedVerdict::Prob)
            .count();
        let l = backlog - s.qth_min as u64;
        let expect = 1.0 / mean_gap(l, mpd, coeff);
        let got = marks as f64 / n as f64;
        // binomial-ish: gaps are bounded, variance below p(1-p)/n
        let tol = 4.0 * (expect * (1.0 - expect) / n as f64).sqrt() + 1e-4;
        assert!(
            (got - expect).abs() < tol,
            "backlog {backlog} coeff {coeff:?}: got {got}, expected {expect} ± {tol}"
        );
        // the textbook reading: about 2·Pb/(1+Pb) with Pb = max_p·(avg−min)/(max−min)
        let pb = mpd as f64 * 16_384.0 / 4_294_967_296.0 * l as f64 / 16_384.0 * coeff.0 as f64
            / coeff.1 as f64;
        assert!(
            (expect - 2.0 * pb / (1.0 + pb)).abs() < 0.01,
            "{expect} vs {pb}"
        );
    }
}

#[test]
fn below_min_never_above_max_always() {
    let mut r = Red::new(&cpm(), 1, "t", SimTime::ZERO).unwrap();
    r.idle_since = None;
    let t = SimTime::from_nanos(1);
    for _ in 0..1000 {
        assert_eq!(r.decide(t, 16_000, (1, 1)), RedVerdict::Pass);
    }
    for _ in 0..200 {
        r.decide(t, 40_000, (1, 1));
    }
    for _ in 0..1000 {
        assert_eq!(r.decide(t, 40_000, (1, 1)), RedVerdict::Hard);
    }
    assert_eq!(r.qcount, -1);
}

fn tbf_over_red(env: &mut Env, rate: u64, red: RedSpec) -> QdiscTree {
    let mut tree = QdiscTree::new("eth1", 3, QdiscProfile::default());
    let mut auto = AutoHandles::default();
    let reqs = [
        TcRequest {
            verb: TcVerb::Add,
            dev: "eth1".into(),
            parent: Some(ParentSpec::Root),
            handle: Some(1),
            qdisc: Some(QdiscSpec::Tbf(TbfSpec {
                rate,
                burst: 10_240,
                limit: 204_800,
                peakrate: None,
                mtu: None,
                mpu: 0,
                overhead: 0,
                atm: false,
            })),
        },
        TcRequest {
            verb: TcVerb::Add,
            dev: "eth1".into(),
            parent: Some(ParentSpec::Class { major: 1, minor: 0 }),
            handle: None,
            qdisc: Some(QdiscSpec::Red(red)),
        },
    ];
    for r in &reqs {
        tree.apply(r, &mut env.ctx(0), &mut auto).unwrap();
    }
    tree
}

fn red_ref(tree: &QdiscTree) -> &Red {
    match tree.node_qdisc(1) {
        Some(AnyQdisc::Red(r)) => r,
        _ => panic!("no red at 1"),
    }
}

fn red_mut(tree: &mut QdiscTree) -> &mut Red {
    match tree.node_qdisc_mut(1) {
        Some(AnyQdisc::Red(r)) => r,
        _ => panic!("no red at 1"),
    }
}

#[test]
fn tbf_over_red_component() {
    let mut env = Env::default();
    let mut tree = tbf_over_red(&mut env, 1_000_000, cpm());
    let show = tree.show();
    assert_eq!(show.len(), 3);
    assert_eq!((show[1].kind, show[1].handle), ("red", 0x8001));
    assert_eq!((show[2].kind, show[2].anonymous), ("bfifo", true));
    assert_eq!(show[2].options["limit"], 409_600);
    // 12 Mbit/s of 1000-byte frames into 8 Mbit/s for 2 s
    let gap = 666_667u64;
    let arrivals: Vec<(u64, u32)> = (0..3000).map(|i| (i * gap, 1000)).collect();
    let out = run(&mut tree, &mut env, &arrivals, false, 2_500 * MS);
    let r = red_ref(&tree);
    // RED was peeked, never dequeued while empty: no idle period after start
    assert!(r.idle_since.is_none());
    let x = r.xstats();
    let tbf = tree.show()[0].stats;
    let rs = *r.stats();
    assert_eq!(tbf.drops, rs.drops, "every RED drop is a tbf drop");
    assert_eq!(
        rs.drops,
        x["early"].as_u64().unwrap() + x["pdrop"].as_u64().unwrap()
    );
    assert!(rs.overlimits >= x["early"].as_u64().unwrap());
    assert_eq!(
        x["pdrop"], 0,
        "the average keeps the queue far below 400 KB"
    );
    assert_eq!(out.len() as u64 + rs.drops + rs.qlen, 3000);
    // the drain is the tbf's 8 Mbit/s: ~1000 frames/s after the burst
    let sent_by_2s = out.iter().filter(|&&(t, _)| t <= 2_000 * MS).count();
    assert!((1990..=2020).contains(&sent_by_2s), "{sent_by_2s}");
    // ~1/3 of the offered load must go: RED drops it, average sits in band
    assert!((900..=1100).contains(&rs.drops), "{}", rs.drops);
    let avg = r.qavg_scaled() >> 1;
    assert!((16_384..32_768).contains(&avg), "avg {avg}");
}

#[test]
fn ecn_marks_harddrop_and_nodrop() {
    let mut s = cpm();
    s.ecn = true;
    let mut env = Env::default();
    let mut tree = tbf_over_red(&mut env, 1_000_000, s.clone());
    // a standing queue of ECT packets above max: hard marks, none dropped
    for i in 0..200 {
        let id = env.pkt(1000);
        env.arena.get_mut(id).tos = 0x02;
        tree.enqueue(&mut env.ctx(i), id);
    }
    let x = red_ref(&tree).xstats();
    assert!(x["marked"].as_u64().unwrap() > 100);
    assert_eq!(x["early"], 0);
    // Not-ECT packets in the same state are dropped (forced_drop)
    for i in 0..10 {
        let id = env.pkt(1000);
        tree.enqueue(&mut env.ctx(300 + i), id);
    }
    assert_eq!(red_ref(&tree).xs.forced_drop, 10);
    // harddrop: hard marks become drops even for ECT packets
    s.harddrop = true;
    let mut tree = tbf_over_red(&mut env, 1_000_000, s.clone());
    for i in 0..200 {
        let id = env.pkt(1000);
        env.arena.get_mut(id).tos = 0x02;
        tree.enqueue(&mut env.ctx(i), id);
    }
    assert!(red_ref(&tree).xs.forced_drop > 100);
    assert_eq!(red_ref(&tree).xs.forced_mark, 0);
    // nodrop keeps non-ECT packets: nothing is early-dropped
    s.harddrop = false;
    s.nodrop = true;
    let mut tree = tbf_over_red(&mut env, 1_000_000, s);
    for i in 0..300 {
        let id = env.pkt(1000);
        tree.enqueue(&mut env.ctx(i), id);
    }
    let r = red_ref(&tree);
    assert_eq!(r.xstats()["early"], 0);
    assert!(r.stats().overlimits > 100);
    assert_eq!(r.stats().qlen, 300);
}

#[test]
fn pdrop_when_the_real_queue_is_full() {
    let mut s = cpm();
    s.limit = 5_000;
    s.qth_min = 100_000;
    s.qth_max = 200_000;
    let mut env = Env::default();
    let mut tree = tbf_over_red(&mut env, 1_000_000, s);
    for i in 0..10 {
        let id = env.pkt(1000);
        tree.enqueue(&mut env.ctx(i), id);
    }
    let r = red_ref(&tree);
    assert_eq!(
        (r.xstats()["pdrop"].as_u64(), r.stats().drops),
        (Some(5), 5)
    );
    assert_eq!(tree.show()[0].stats.drops, 5);
    assert_eq!(env.drops.packets[DropReason::QueueFull.index()], 5);
}

#[test]
fn change_purges_the_child_and_resets_the_average() {
    let mut env = Env::default();
    let mut tree = tbf_over_red(&mut env, 1_000_000, cpm());
    for i in 0..20 {
        let id = env.pkt(1000);
        tree.enqueue(&mut env.ctx(i), id);
    }
    assert_eq!(red_ref(&tree).stats().qlen, 20);
    let before = red_ref(&tree).qavg_scaled();
    assert!(before > 0);
    let req = TcRequest {
        verb: TcVerb::Change,
        dev: "eth1".into(),
        parent: Some(ParentSpec::Class { major: 1, minor: 0 }),
        handle: None,
        qdisc: Some(QdiscSpec::Red(cpm())),
    };
    tree.apply(&req, &mut env.ctx(100), &mut AutoHandles::default())
        .unwrap();
    let r = red_ref(&tree);
    assert_eq!(
        (r.stats().qlen, r.stats().backlog, r.stats().drops),
        (0, 0, 20)
    );
    assert_eq!((r.qavg_scaled(), r.qcount()), (0, -1));
    assert_eq!(r.idle_since, Some(SimTime::from_nanos(100)));
    assert_eq!(tree.show()[0].stats.qlen, 0);
    assert_eq!(tree.show()[0].stats.drops, 20);
    assert_eq!(tree.show()[2].stats.qlen, 0);
    assert_eq!(env.drops.packets[DropReason::Purged.index()], 20);
    // a refused change changes nothing
    let mut bad = cpm();
    bad.qth_max = 1;
    let req = TcRequest {
        qdisc: Some(QdiscSpec::Red(bad)),
        ..req
    };
    assert!(tree
        .apply(&req, &mut env.ctx(200), &mut AutoHandles::default())
        .is_err());
    assert_eq!(red_ref(&tree).spec().qth_max, 32_768);
}

#[test]
fn idle_starts_only_on_an_empty_dequeue_at_the_root() {
    let mut env = Env::default();
    let mut tree = QdiscTree::new("eth1", 3, QdiscProfile::default());
    let req = TcRequest {
        verb: TcVerb::Add,
        dev: "eth1".into(),
        parent: Some(ParentSpec::Root),
        handle: Some(2),
        qdisc: Some(QdiscSpec::Red(lab16())),
    };
    tree.apply(&req, &mut env.ctx(0), &mut AutoHandles::default())
        .unwrap();
    let id = env.pkt(1514);
    tree.enqueue(&mut env.ctx(MS), id);
    let r = match tree.node_qdisc(0) {
        Some(AnyQdisc::Red(r)) => r,
        _ => panic!(),
    };
    assert!(r.idle_since.is_none());
    let p = tree.dequeue(&mut env.ctx(2 * MS)).unwrap();
    env.arena.free(p);
    assert!(tree.dequeue(&mut env.ctx(2 * MS)).is_none());
    let r = match tree.node_qdisc(0) {
        Some(AnyQdisc::Red(r)) => r,
        _ => panic!(),
    };
    assert_eq!(r.idle_since, Some(SimTime::from_nanos(2 * MS)));
}

#[test]
fn cpm_classes_share_bookkeeping_and_scale_the_test() {
    let mut s = cpm();
    s.dscp_coeff = Some(report_map());
    let mut r = Red::new(&s, 1, "t", SimTime::ZERO).unwrap();
    r.idle_since = None;
    let t = SimTime::from_nanos(1);
    // E19: halfway (avg 24 576 B), qcount 5 → lhs 40 960
    for _ in 0..40 {
        r.decide(t, 24_576, (1, 1));
    }
    assert_eq!((r.qavg - 32_768) >> 1, 8_192);
    for (qr, coeff, want) in [
        (50_000, (9, 10), RedVerdict::Pass),
        (30_000, (9, 10), RedVerdict::Prob),
        (30_000, (7, 10), RedVerdict::Pass),
        (30_000, (5, 10), RedVerdict::Pass),
    ] {
        r.qcount = 4;
        r.qr = qr;
        assert_eq!(r.decide(t, 24_576, coeff), want, "qR {qr} coeff {coeff:?}");
    }
    // per-class counters through the tree
    let mut env = Env::default();
    let mut tree = tbf_over_red(&mut env, 1_000_000, s);
    let mut lcg: u64 = 12345;
    for i in 0..30_000u64 {
        let id = env.pkt(1000);
        lcg = lcg.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        env.arena.get_mut(id).tos = [0x32, 0x46, 0x00][((lcg >> 33) % 3) as usize];
        // 12 Mbit/s offered into 8 Mbit/s
        tree.enqueue(&mut env.ctx(i * 666_667), id);
        loop {
            let mut ctx = env.ctx(i * 666_667);
            match tree.dequeue(&mut ctx) {
                Some(p) => env.arena.free(p),
                None => break,
            }
        }
    }
    let x = red_ref(&tree).xstats();
    let c = &x["classes"];
    assert_eq!(c[0]["key"], "0x32");
    assert_eq!(c[2]["key"], "default");
    let early: Vec<u64> = (0..3).map(|k| c[k]["early"].as_u64().unwrap()).collect();
    assert!(early[0] < early[1] && early[1] < early[2], "{early:?}");
    assert_eq!(early.iter().sum::<u64>(), x["early"].as_u64().unwrap());
}
