//! Hand-computed vectors for `red_ns3` (docs/semantics/qdiscs.md §5.10, E16) and a
//! statistical check of the count rule.

use super::*;
use crate::qdisc::spec::{RedNs3Mode, RedNs3Spec, RedNs3Variant};
use crate::qdisc::tree::harness::Env;

const MS: u64 = 1_000_000;

/// The study's queue (E16), as coded: LInterm 0.1 ⇒ max_p = 10.
fn e16(linterm: Option<f64>, max_p: Option<f64>) -> RedNs3Spec {
    RedNs3Spec {
        variant: RedNs3Variant::V2015,
        mode: RedNs3Mode::Bytes,
        limit: 800,
        min_th: 50.0,
        max_th: 150.0,
        qw: 0.01,
        max_p,
        linterm,
        ..RedNs3Spec::default()
    }
}

fn packets(variant: RedNs3Variant, qw: f64, max_p: f64) -> RedNs3Spec {
    RedNs3Spec {
        variant,
        mode: RedNs3Mode::Packets,
        limit: 1000,
        qw,
        max_p: Some(max_p),
        linterm: None,
        ..RedNs3Spec::default()
    }
}

fn reduce(s: &RedNs3Spec) -> RedNs3 {
    RedNs3::new(s, 1, "t", SimTime::ZERO).unwrap()
}

#[test]
fn e16_faithful_and_intended_readings() {
    let mut f = reduce(&e16(Some(0.1), None));
    assert_eq!(f.params().max_p, 10.0);
    assert_eq!((f.params().min_th, f.params().max_th), (50.0, 150.0));
    f.q_avg = 100.0;
    // 10·(100−50)/100 = 5, capped
    assert_eq!(f.calc_pnew(), 1.0);
    let mut i = reduce(&e16(None, Some(0.1)));
    i.q_avg = 100.0;
    assert!((i.calc_pnew() - 0.05).abs() < 1e-15);
    // gentle ramp between maxTh and 2·maxTh: (0.9/150)·225 − 0.8 = 0.55
    i.q_avg = 225.0;
    assert!((i.calc_pnew() - 0.55).abs() < 1e-12);
    i.q_avg = 299.0;
    assert!(i.calc_pnew() < 1.0);
    // faithful gentle ramp: vC = −9/150, vD = 19 ⇒ at 200: 7, capped
    f.q_avg = 200.0;
    assert_eq!(f.calc_pnew(), 1.0);
    // without gentle the cliff is at maxTh
    let mut s = e16(None, Some(0.1));
    s.gentle = false;
    let mut ng = reduce(&s);
    ng.q_avg = 150.0;
    assert_eq!(ng.calc_pnew(), 1.0);
    ng.q_avg = 149.0;
    assert!((ng.calc_pnew() - 0.099).abs() < 1e-12);
}

#[test]
fn wait_and_nowait_count_rules() {
    let mut r = reduce(&packets(RedNs3Variant::Qdisc, 0.002, 0.1));
    let pb = 0.05;
    for (count, pa) in [
        (1, 0.0),
        (19, 0.0),
        (20, 0.05),
        (30, 0.1),
        (39, 0.05 / 0.05),
        (40, 1.0),
    ] {
        r.count = count;
        assert!(
            (r.modify_p(pb, 1000) - pa).abs() < 1e-9,
            "wait count {count}"
        );
    }
    r.spec.wait = false;
    for (count, pa) in [(0, 0.05), (10, 0.1), (18, 0.5), (20, 1.0), (25, 1.0)] {
        r.count = count;
        assert!(
            (r.modify_p(pb, 1000) - pa).abs() < 1e-9,
            "nowait count {count}"
        );
    }
}

#[test]
fn byte_mode_counts_mean_packets_and_scales_by_size() {
    let mut r = reduce(&e16(None, Some(0.1)));
    // count = count_bytes div MeanPktSize (500)
    r.count_bytes = 9_999;
    assert_eq!(r.modify_p(0.05, 1000), 0.0);
    r.count_bytes = 10_000;
    // pa = 0.05/(2 − 1) = 0.05, then ×1000/500
    assert!((r.modify_p(0.05, 1000) - 0.1).abs() < 1e-12);
    assert!((r.modify_p(0.05, 250) - 0.025).abs() < 1e-12);
    r.count_bytes = 20_000;
    // pa = 1 is not scaled
    assert_eq!(r.modify_p(0.05, 250), 1.0);
}

#[test]
fn automatic_queue_weights() {
    let mut s = packets(RedNs3Variant::Qdisc, 0.0, 0.02);
    s.bandwidth = 1_000_000; // C = 250 packets/s
    let ptc: f64 = 250.0;
    assert_eq!(reduce(&s).params().ptc, ptc);
    assert_eq!(reduce(&s).params().qw, 1.0 - (-1.0 / ptc).exp());
    s.qw = -2.0;
    assert_eq!(reduce(&s).params().qw, 1.0 - (-10.0 / ptc).exp());
    // −1: RTT = max(0.1, 3·(delay + 1/C)); 3·(0.05 + 0.004) = 0.162
    s.qw = -1.0;
    s.link_delay = 50 * MS;
    let rtt = 3.0 * (0.05 + 1.0 / ptc);
    assert_eq!(
        reduce(&s).params().qw,
        1.0 - (-1.0 / (10.0 * rtt * ptc)).exp()
    );
    s.link_delay = 10 * MS; // 3·0.014 = 0.042 → 0.1
    assert_eq!(
        reduce(&s).params().qw,
        1.0 - (-1.0 / (10.0 * 0.1 * ptc)).exp()
    );
    s.qw = -3.0;
    assert!(RedNs3::new(&s, 1, "t", SimTime::ZERO).is_err());
}

#[test]
fn idle_period_counts_virtual_arrivals() {
    for variant in [RedNs3Variant::V2015, RedNs3Variant::Qdisc] {
        let mut s = packets(variant, 0.01, 0.02);
        s.bandwidth = 1_000_000; // 250 packets/s
        let mut env = Env::default();
        let mut r = reduce(&s);
        r.q_avg = 10.0;
        r.idle = false;
        assert!(r.dequeue(&mut env.ctx(1_000 * MS)).is_none());
        assert_eq!(r.idle_arrivals(1_100 * MS), 25);
        let id = env.pkt(1000);
        assert_eq!(r.enqueue(&mut env.ctx(1_100 * MS), id), Verdict::Queued);
        // n = 0: avg = 10·0.99^26
        let expect = 10.0 * 0.99f64.powi(26);
        assert!((r.avg() - expect).abs() < 1e-12, "{variant:?} {}", r.avg());
        if variant == RedNs3Variant::V2015 {
            let mut a = 10.0f64;
            for _ in 0..26 {
                a *= 1.0 - 0.01;
            }
            assert_eq!(r.avg(), a, "the 2015 loop multiplies step by step");
        }
        // not idle any more: the next arrival is one plain EWMA step with n = 1
        let id = env.pkt(1000);
        r.enqueue(&mut env.ctx(2_000 * MS), id);
        assert!((r.avg() - (expect * 0.99 + 0.01)).abs() < 1e-12);
    }
}

/// With qW = 1 the average is the instantaneous queue before the arrival.
#[test]
fn first_packet_above_min_is_exempt_and_single_packet_guard() {
    let mut env = Env::default();
    let mut r = reduce(&packets(RedNs3Variant::Qdisc, 1.0, 1.0));
    r.scripted.extend([0.0; 64]); // a draw of 0 drops whenever pa > 0 … or = 0
    let mut verdicts = vec![];
    for _ in 0..9 {
        let id = env.pkt(1000);
        verdicts.push(r.enqueue(&mut env.ctx(0), id));
    }
    // arrivals see n = 0..8; minTh 5: the 6th (n = 5) is the exempt first one
    assert!(verdicts[..6].iter().all(|v| *v == Verdict::Queued));
    // one draw per decision after the exempt packet (arrivals 7, 8, 9 all see n = 6)
    assert_eq!(
        r.scripted.len(),
        61,
        "no draw below minTh or for the exempt packet"
    );
    // then the count rule: count 2, pb = (6−5)/10 = 0.1, c·pb = 0.2 < 1 ⇒ pa 0,
    // but u = 0 ≤ 0 drops (ns-3 compares u ≤ pa)
    assert_eq!(verdicts[6], Verdict::Dropped(DropReason::EarlyDrop));
    assert_eq!(r.counters.unforced_drop, 3);
    // n > 1 guard: a high average alone (queue nearly empty) never drops
    let mut r = reduce(&packets(RedNs3Variant::Qdisc, 0.5, 1.0));
    r.q_avg = 100.0;
    let id = env.pkt(1000);
    assert_eq!(r.enqueue(&mut env.ctx(0), id), Verdict::Queued);
}

#[test]
fn forced_region_ecn_and_harddrop() {
    let mut s = packets(RedNs3Variant::Qdisc, 1.0, 0.1);
    s.ecn = true;
    let mut env = Env::default();
    for harddrop in [true, false] {
        s.harddrop = harddrop;
        let mut r = reduce(&s);
        let mut out = vec![];
        // fill to 31 packets: the arrival at n = 30 = 2·maxTh is forced
        for _ in 0..31 {
            let id = env.pkt(1000);
            env.arena.get_mut(id).tos = 0x02; // ECT(0)
            r.scripted.push_back(1.0); // never an early drop
            out.push(r.enqueue(&mut env.ctx(0), id));
        }
        if harddrop {
            assert_eq!(out[30], Verdict::Dropped(DropReason::ForcedDrop));
            assert_eq!((r.counters.forced_drop, r.counters.forced_mark), (1, 0));
        } else {
            assert_eq!(out[30], Verdict::Queued);
            assert_eq!((r.counters.forced_drop, r.counters.forced_mark), (0, 1));
        }
    }
    // a Not-ECT packet is dropped even with ecn and noharddrop
    let mut r = reduce(&s);
    r.scripted.extend([1.0; 40]);
    for _ in 0..30 {
        let id = env.pkt(1000);
        env.arena.get_mut(id).tos = 0x02;
        r.enqueue(&mut env.ctx(0), id);
    }
    let id = env.pkt(1000);
    assert_eq!(
        r.enqueue(&mut env.ctx(0), id),
        Verdict::Dropped(DropReason::ForcedDrop)
    );
}

#[test]
fn hard_limits_of_both_variants() {
    let mut env = Env::default();
    // 2015: admitted while fewer than 800 B are queued (n ≥ limit ⇒ forced)
    let mut r = reduce(&e16(Some(0.1), None));
    let mut out = vec![];
    for _ in 0..3 {
        let id = env.pkt(500);
        out.push(r.enqueue(&mut env.ctx(0), id));
    }
    assert_eq!(out[..2], [Verdict::Queued, Verdict::Queued]);
    assert_eq!(out[2], Verdict::Dropped(DropReason::QueueFull));
    let x = r.xstats();
    assert_eq!(
        (x["qlim_drop"].as_u64(), x["forced_drop"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        (x["pdrop"].as_u64(), x["early"].as_u64()),
        (Some(1), Some(0))
    );
    // qdisc: the internal queue refuses n + size > MaxSize
    let mut s = e16(Some(0.1), None);
    s.variant = RedNs3Variant::Qdisc;
    let mut r = reduce(&s);
    let id = env.pkt(500);
    assert_eq!(r.enqueue(&mut env.ctx(0), id), Verdict::Queued);
    let id = env.pkt(500);
    assert_eq!(
        r.enqueue(&mut env.ctx(0), id),
        Verdict::Dropped(DropReason::QueueFull)
    );
    assert_eq!(r.xstats()["forced_drop"].as_u64(), Some(0));
    assert_eq!(r.stats().drops, 1);
}

#[test]
fn ared_aimd_steps() {
    let mut s = packets(RedNs3Variant::Qdisc, 1.0, 0.1);
    s.adapt_max_p = true;
    let mut r = reduce(&s);
    // bottom = min(0.01, 8·500·0.1/1.5e6)
    assert!((r.params().bottom - 8.0 * 500.0 * 0.1 / 1.5e6).abs() < 1e-18);
    // band [5 + 4, 15 − 4]; avg 8 after the 0.5 s interval: ×0.9
    r.estimate(8, 0, 600 * MS);
    assert!((r.params().max_p - 0.09).abs() < 1e-15);
    // within the interval since the last change: nothing
    r.estimate(12, 0, 1_000 * MS);
    assert!((r.params().max_p - 0.09).abs() < 1e-15);
    // avg 12 > 11: + min(alpha 0.01, max_p/4)
    r.estimate(12, 0, 1_200 * MS);
    assert!((r.params().max_p - 0.1).abs() < 1e-15);
    // inside the band: unchanged, and last_set stays (so the next step may come at once)
    r.estimate(10, 0, 1_800 * MS);
    assert!((r.params().max_p - 0.1).abs() < 1e-15);
    r.estimate(12, 0, 1_801 * MS);
    assert!((r.params().max_p - 0.11).abs() < 1e-15);
    // small max_p: the increase is max_p/4
    r.p.max_p = 0.02;
    r.estimate(12, 0, 2_400 * MS);
    assert!((r.params().max_p - 0.025).abs() < 1e-15);
}

#[test]
fn ared_auto_thresholds_and_weight() {
    let mut s = packets(RedNs3Variant::Qdisc, 0.5, 0.1);
    s.ared = true;
    let p = reduce(&s).params().clone();
    // C = 375 packets/s: target 5 ms = 1.875 packets → minTh stays 5
    assert_eq!((p.min_th, p.max_th), (5.0, 15.0));
    assert_eq!(p.qw, 1.0 - (-1.0f64 / 375.0).exp());
    assert!(p.adapt_max_p);
    s.bandwidth = 100_000_000; // 25 000 packets/s: target 125 packets → 62.5
    s.mode = RedNs3Mode::Bytes;
    let p = reduce(&s).params().clone();
    assert_eq!((p.min_th, p.max_th), (62.5 * 500.0, 187.5 * 500.0));
    s.feng = true;
    assert!(RedNs3::new(&s, 1, "t", SimTime::ZERO).is_err());
}

#[test]
fn feng_adaptive_steps_once_per_region() {
    let mut s = packets(RedNs3Variant::Qdisc, 1.0, 0.3);
    s.feng = true;
    let mut r = reduce(&s);
    r.estimate(2, 0, 0); // below (status starts Above): /3
    assert!((r.params().max_p - 0.1).abs() < 1e-15);
    r.estimate(3, 0, 1);
    assert!((r.params().max_p - 0.1).abs() < 1e-15);
    r.estimate(10, 0, 2); // between
    r.estimate(20, 0, 3); // above: ×2
    assert!((r.params().max_p - 0.2).abs() < 1e-15);
    r.estimate(20, 0, 4);
    assert!((r.params().max_p - 0.2).abs() < 1e-15);
}

#[test]
fn nlred_squares_the_ramp() {
    let mut s = packets(RedNs3Variant::Qdisc, 1.0, 0.1);
    s.nlred = true;
    let mut r = reduce(&s);
    r.q_avg = 10.0; // x = 0.5 → 1.5·0.25·0.1
    assert!((r.calc_pnew() - 0.0375).abs() < 1e-15);
}

#[test]
fn option_combinations_are_checked() {
    let mut s = e16(Some(0.1), None);
    s.ecn = true;
    assert!(
        RedNs3::new(&s, 1, "t", SimTime::ZERO).is_err(),
        "2015 has no ECN"
    );
    let mut s = e16(Some(0.1), Some(0.1));
    assert!(RedNs3::new(&s, 1, "t", SimTime::ZERO).is_err());
    s.linterm = None;
    s.max_p = Some(1.5);
    assert!(RedNs3::new(&s, 1, "t", SimTime::ZERO).is_err());
    let mut s = e16(Some(0.1), None);
    s.min_th = 200.0;
    assert!(RedNs3::new(&s, 1, "t", SimTime::ZERO).is_err());
}

/// Expected early-drop fraction at a constant average: a renewal process
/// whose k-th packet after a drop is dropped with pa(k).
fn expected_fraction(r: &RedNs3, pb: f64) -> f64 {
    let mut r2 = RedNs3::new(&r.spec, 1, "x", SimTime::ZERO).unwrap();
    let (mut survive, mut mean_gap) = (1.0, 0.0);
    for k in 1..100_000u32 {
        r2.count = k;
        let pa = r2.modify_p(pb, 1000);
        mean_gap += k as f64 * survive * pa;
        survive *= 1.0 - pa;
        if survive < 1e-15 {
            break;
        }
    }
    1.0 / mean_gap
}

#[test]
fn drop_fraction_matches_the_count_rule() {
    for wait in [true, false] {
        let mut s = packets(RedNs3Variant::Qdisc, 1.0, 0.1);
        s.wait = wait;
        let mut env = Env::default();
        let mut r = RedNs3::new(&s, 7, "component", SimTime::ZERO).unwrap();
        // hold the queue at 10 packets: avg = 10, pb = 0.1·(10−5)/10 = 0.05
        for _ in 0..10 {
            let id = env.pkt(1000);
            r.enqueue(&mut env.ctx(0), id);
        }
        let (n, mut dropped) = (200_000u64, 0u64);
        for k in 0..n {
            let id = env.pkt(1000);
            match r.enqueue(&mut env.ctx(k), id) {
                Verdict::Queued => {
                    let out = r.dequeue(&mut env.ctx(k)).unwrap();
                    env.arena.free(out);
                }
                Verdict::Dropped(_) => dropped += 1,
            }
        }
        let got = dropped as f64 / n as f64;
        let want = expected_fraction(&r, 0.05);
        // count restarts at 1 after a drop, so gaps are uniform on
        // [1/pb, 2/pb − 1] with wait (≈ 1/29.5) and on [1, 1/pb − 1] without (2·pb)
        let approx = if wait { 1.0 / 29.5 } else { 0.1 };
        assert!((want - approx).abs() / approx < 0.05, "{want} vs {approx}");
        // binomial standard error with a renewal correction; 5 sigma
        let sigma = (want * (1.0 - want) / n as f64).sqrt();
        assert!(
            (got - want).abs() < 5.0 * sigma,
            "wait={wait}: {got} vs {want}"
        );
        assert_eq!(r.stats().drops, dropped);
    }
}

/// The shortcuts of `keep_factor` give `powf`'s own values, bit for bit.
#[test]
fn keep_factor_matches_the_power() {
    for keep in [0.0, 1.0 - 0.002, 0.5, 1.0 - 1.0 / 3.0, 1.0] {
        for m in [0, 1, 2, 25, 1000] {
            let want = f64::powf(keep, m as f64 + 1.0);
            assert_eq!(
                super::keep_factor(keep, m).to_bits(),
                want.to_bits(),
                "{keep} {m}"
            );
        }
    }
}
