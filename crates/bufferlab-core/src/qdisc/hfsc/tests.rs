//! HFSC: the kernel's fixed-point curve arithmetic by hand, init_ed /
//! update_ed of a two-piece real-time curve, rtsc_min's intersection,
//! link-sharing shares measured, an upper limit shaping, real-time
//! guarantees under link-sharing load, the default class.

use super::*;
use crate::qdisc::classful::testkit::{assert_near, build_env, dport_filter, pop, push, saturate};
use crate::qdisc::ops::ClassOps;
use crate::qdisc::spec::{ClassRequest, ClassSpec, ClassVerb, HfscClassOpts};
use crate::qdisc::tree::harness::Env;

const MBIT: u32 = 125_000; // bytes/s

fn sc(m1: u32, d: u32, m2: u32) -> ServiceCurve {
    ServiceCurve { m1, d, m2 }
}

fn class(classid: u16, parent: u16) -> HfscClassSpec {
    HfscClassSpec {
        classid,
        parent,
        rsc: None,
        fsc: None,
        usc: None,
        leaf: None,
    }
}

fn hfsc(default: u16, classes: Vec<HfscClassSpec>) -> Hfsc {
    let filters = classes
        .iter()
        .map(|c| dport_filter(c.classid, c.classid))
        .collect();
    let spec = HfscSpec {
        default,
        leaf_limit: 1000,
        classes,
        filters,
    };
    Hfsc::new(&spec, &build_env()).unwrap()
}

#[test]
fn fixed_point_conversions_by_hand() {
    // 2 Mbit/s = 250 000 B/s; a tick is 64 ns, 15 625 000 ticks/s.
    // sm = ⌈250 000 · 2^24 / 15 625 000⌉ = ⌈268 435.456⌉
    assert_eq!(m2sm(250_000), 268_436);
    // ism = ⌈15 625 000 · 2^14 / 250 000⌉ = 1 024 000 exactly
    assert_eq!(m2ism(250_000), 1_024_000);
    assert_eq!(m2sm(125_000), 134_218); // ⌈134 217.728⌉
    assert_eq!(m2ism(125_000), 2_048_000);
    assert_eq!(m2ism(0), INFINITY);
    // 10 ms = 156 250 ticks exactly
    assert_eq!(d2dx(10_000), 156_250);
    assert_eq!(d2dx(1), 16); // ⌈15.625⌉
                             // dumped back, rounded down: 268 436 · 15 625 000 / 2^24 = 250 000.5
    assert_eq!(sm2m(268_436), 250_000);
    assert_eq!(dx2d(156_250), 10_000);
    // dy of the first segment: 156 250 · 268 436 >> 24 = ⌊2500.0037⌋
    let isc = Isc::new(&sc(250_000, 10_000, 125_000));
    assert_eq!(isc.dy, 2500);
    // 1500 bytes at sm1: 1500 · 1 024 000 >> 14 = 93 750 ticks = 6 ms
    assert_eq!(seg_y2x(1500, isc.ism1), 93_750);
    assert_eq!(seg_x2y(1000, isc.sm1), 16); // ⌊16.00002⌋
}

#[test]
fn rtsc_min_intersection_by_hand() {
    let isc = Isc::new(&sc(250_000, 10_000, 125_000));
    let mut r = Rtsc::new(&isc, 1000, 0);
    // started later and higher: y1 = x2y(50 000) = ⌊49 000 · 268 436 / 2^24⌋ = 784;
    // y2 = x2y(206 250) = 2500 + ⌊49 000 · 134 218 / 2^24⌋ = 2892 < 700 + 2500:
    // the curves cross; dx = ⌊84 · 2^24 / 134 218⌋ = 10 499, plus what is left
    // of the old first segment (157 250 − 50 000) = 117 749; dy = ⌊117 749 ·
    // 268 436 / 2^24⌋ = 1883
    r.min_with(&isc, 50_000, 700);
    assert_eq!((r.x, r.y, r.dx, r.dy), (50_000, 700, 117_749, 1883));
    // a curve entirely above: unchanged
    let before = r;
    r.min_with(&isc, 50_000, 10_000);
    assert_eq!(r, before);
}

#[test]
fn eligible_and_deadline_of_a_two_piece_curve() {
    // rt m1 2 Mbit d 10 ms m2 1 Mbit (concave): eligible = deadline curve
    let mut c = class(1, 0);
    c.rsc = Some(sc(2 * MBIT, 10_000, MBIT));
    let mut h = hfsc(1, vec![c]);
    let mut env = Env::default();
    // t = 1000 ticks = 64 µs: the deadline curve restarts at (1000, 0)
    push(&mut h, &mut env, 64_000, 1, 1500);
    push(&mut h, &mut env, 64_000, 1, 1500);
    let cl = &h.classes()[1];
    assert_eq!(
        (cl.deadline.x, cl.deadline.y, cl.deadline.dx, cl.deadline.dy),
        (1000, 0, 156_250, 2500)
    );
    assert_eq!(cl.e, 1000);
    // d = 1000 + 1500 bytes at m1 (93 750 ticks)
    assert_eq!(cl.d, 94_750);
    assert_eq!(pop(&mut h, &mut env, 64_000), Ok((1, 1500)));
    let cl = &h.classes()[1];
    assert_eq!(cl.cumul, 1500);
    // e: 1500 bytes on the first segment; d: 3000 bytes cross into the
    // second, 156 250 + 500 · 2 048 000 >> 14 = 156 250 + 62 500
    assert_eq!(cl.e, 94_750);
    assert_eq!(cl.d, 1000 + 156_250 + 62_500);
    // not eligible before e: the watchdog is armed at e (in ns), one overlimit
    assert_eq!(pop(&mut h, &mut env, 64_000), Err(Some(94_750 * 64)));
    assert_eq!(h.stats().overlimits, 1);
    assert_eq!(pop(&mut h, &mut env, 94_750 * 64), Ok((1, 1500)));
    assert_eq!(
        h.classes()[1].el,
        None,
        "an empty class leaves the eligible tree"
    );
    let x = h.xstats();
    assert_eq!(x["classes"][1]["rtwork"], 3000);
    assert_eq!(x["classes"][1]["work"], 3000);
    assert_eq!(x["classes"][1]["rsc"]["m1"], 250_000);
    assert_eq!(x["classes"][1]["rsc"]["d"], 10_000);
}

#[test]
fn convex_curve_eligible_is_linear() {
    // rt m1 0 d 5 ms m2 1 Mbit (convex): eligible has no first segment
    let mut c = class(1, 0);
    c.rsc = Some(sc(0, 5000, MBIT));
    let mut h = hfsc(1, vec![c]);
    let mut env = Env::default();
    push(&mut h, &mut env, 0, 1, 1500);
    let cl = &h.classes()[1];
    assert_eq!((cl.eligible.dx, cl.eligible.dy), (0, 0));
    assert_eq!(cl.e, 0);
    // deadline: the 5 ms (78 125 ticks) of zero slope, then 1500 B at 1 Mbit
    // = 1500 · 2 048 000 >> 14 = 187 500 ticks
    assert_eq!(cl.d, 78_125 + 187_500);
}

#[test]
fn link_sharing_splits_by_m2() {
    // two leaves under the root: ls 3 Mbit and 1 Mbit on a 10 Mbit line
    let mut a = class(1, 0);
    a.fsc = Some(sc(0, 0, 3 * MBIT));
    let mut b = class(2, 0);
    b.fsc = Some(sc(0, 0, MBIT));
    let mut h = hfsc(0, vec![a, b]);
    let mut env = Env::default();
    let sent = saturate(&mut h, &mut env, &[1, 2], 1500, 1_250_000, 4);
    assert_near(sent[0] as f64 / sent[1] as f64, 3.0, 0.01);
    // work-conserving: the line is full
    assert_near((sent[0] + sent[1]) as f64, 5_000_000.0, 0.01);
    assert!(h.classes()[1].vtperiod >= 1);
}

#[test]
fn upper_limit_shapes_like_mininet_tclink() {
    // Mininet's use_hfsc: class 5:1 hfsc sc rate 10Mbit ul rate 10Mbit,
    // default 1, on a 100 Mbit line: the ul curve holds it at 10 Mbit/s
    let mut c = class(1, 0);
    c.rsc = Some(sc(0, 0, 10 * MBIT));
    c.fsc = Some(sc(0, 0, 10 * MBIT));
    c.usc = Some(sc(0, 0, 10 * MBIT));
    let mut h = hfsc(1, vec![c]);
    let mut env = Env::default();
    let sent = saturate(&mut h, &mut env, &[1], 1500, 12_500_000, 2);
    assert_near(sent[0] as f64 * 8.0 / 2.0 / 1e6, 10.0, 0.01);
}

#[test]
fn real_time_guarantee_beats_link_sharing() {
    // class 1: rt 2 Mbit, ls 1 Mbit; class 2: ls 9 Mbit; both under a
    // parent limited to 4 Mbit (ls + ul). Class 1 gets its 2 Mbit real
    // time even though link sharing alone would give it 1/10 of the rest.
    let mut p = class(0x10, 0);
    p.fsc = Some(sc(0, 0, 4 * MBIT));
    p.usc = Some(sc(0, 0, 4 * MBIT));
    let mut c1 = class(1, 0x10);
    c1.rsc = Some(sc(0, 0, 2 * MBIT));
    c1.fsc = Some(sc(0, 0, MBIT));
    let mut c2 = class(2, 0x10);
    c2.fsc = Some(sc(0, 0, 9 * MBIT));
    let mut h = hfsc(0, vec![p, c1, c2]);
    let mut env = Env::default();
    let sent = saturate(&mut h, &mut env, &[1, 2], 1500, 12_500_000, 4);
    let rate = |b: u64| b as f64 * 8.0 / 4.0 / 1e6;
    assert!(
        rate(sent[0]) >= 2.0 * 0.99,
        "rt class got {}",
        rate(sent[0])
    );
    assert_near(rate(sent[0]) + rate(sent[1]), 4.0, 0.02);
    let x = h.xstats();
    assert_eq!(x["classes"][1]["level"], 1);
    assert_eq!(x["classes"][0]["level"], 2);
}

#[test]
fn default_class_and_unclassified() {
    let mut c = class(1, 0);
    c.fsc = Some(sc(0, 0, MBIT));
    let mut h = hfsc(0, vec![c.clone()]);
    let mut env = Env::default();
    assert_eq!(
        push(&mut h, &mut env, 0, 9, 100),
        Verdict::Dropped(DropReason::Unclassified)
    );
    assert_eq!(h.stats().drops, 1);
    let mut h = hfsc(1, vec![c]);
    assert_eq!(push(&mut h, &mut env, 0, 9, 100), Verdict::Queued);
}

#[test]
fn class_rules_of_hfsc_change_class() {
    let env = build_env();
    let mk = |classes: Vec<HfscClassSpec>| {
        Hfsc::new(
            &HfscSpec {
                default: 0,
                leaf_limit: 10,
                classes,
                filters: vec![],
            },
            &env,
        )
    };
    // a new class needs rt or ls
    let mut u = class(1, 0);
    u.usc = Some(sc(0, 0, MBIT));
    assert_eq!(
        mk(vec![u]).unwrap_err().to_string(),
        "RTNETLINK answers: Invalid argument"
    );
    // a parent without ls takes no children
    let mut p = class(1, 0);
    p.rsc = Some(sc(0, 0, MBIT));
    let mut c = class(2, 1);
    c.rsc = Some(sc(0, 0, MBIT));
    assert!(mk(vec![p.clone(), c.clone()]).is_err());
    // an unknown parent: ENOENT
    c.parent = 7;
    assert_eq!(mk(vec![c]).unwrap_err(), TcError::NotFound);
}

#[test]
fn changing_a_backlogged_class_restarts_its_curve_now() {
    // rt m2 1 Mbit; one 1500-byte packet at t = 0: d = 1500 · 2 048 000 >> 14
    let mut c = class(1, 0);
    c.rsc = Some(sc(0, 0, MBIT));
    let mut h = hfsc(1, vec![c.clone()]);
    let mut env = Env::default();
    push(&mut h, &mut env, 0, 1, 1500);
    assert_eq!((h.classes()[1].e, h.classes()[1].d), (0, 187_500));
    // `tc class change … rt m2 2mbit` at tick 1000: the deadline curve restarts
    // at (1000, cumul 0) and the head (1500 B) is rescheduled: d = 1000 + 93 750
    let change = ClassRequest {
        verb: ClassVerb::Change,
        dev: "x".into(),
        major: 1,
        minor: 1,
        parent: None,
        class: Some(ClassSpec::Hfsc(HfscClassOpts {
            rsc: Some(sc(0, 0, 2 * MBIT)),
            fsc: None,
            usc: None,
        })),
    };
    h.class_verb(&change, &mut env.ctx(64_000)).unwrap();
    assert_eq!((h.classes()[1].e, h.classes()[1].d), (1000, 94_750));
    assert_eq!(h.stats().qlen, 1, "a curve change keeps the queue");
    assert_eq!(h.options()["classes"][0]["rsc"]["m2"], 2 * MBIT);
}
