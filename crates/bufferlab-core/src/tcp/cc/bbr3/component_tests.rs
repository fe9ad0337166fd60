//! One bbr3 flow through the endpoint harness's rate-limited drop-tail
//! bottleneck (tcp/harness.rs): the model end to end.

use crate::tcp::harness::*;
use crate::time::{Rate, SimDuration};

/// 50 Mbit/s, 40 ms RTT: a BDP of 165 full-size packets.
const BDP_PKTS: usize = 165;

/// Payload bytes/s of a full 50 Mbit/s link.
const GOODPUT: f64 = 50e6 / 8.0 * 1448.0 / 1514.0;

struct Run {
    /// payload delivered from 3 s to 10 s, bytes/s
    rate: f64,
    /// largest queue from 3 s on, packets
    max_queue: usize,
    /// queue drops from 3 s on
    drops: u64,
    /// (cwnd, inflight_hi, phase) every 10 ms from 3 s
    samples: Vec<(u32, f64, f64)>,
    retrans: u32,
}

fn run(limit: usize) -> Run {
    let mut c = cfg("bbr3");
    c.rmem = [4096, 87380, 32 << 20];
    c.wmem = [4096, 16384, 32 << 20];
    let mut p = Pair::sym(c, SimDuration::from_millis(20));
    p.ab.rate = Some(Rate::from_bps(50_000_000));
    p.ab.limit = limit;
    p.to_write = u64::MAX;
    p.run_until(ms(3_000));
    let (read0, drops0) = (p.read, p.ab.queue_drops);
    p.ab.max_queue = 0;
    let mut samples = Vec::new();
    for t in (3_010..=10_000).step_by(10) {
        p.run_until(ms(t));
        let m = p.a.cc().metrics();
        let get = |k: &str| m.iter().find(|(n, _)| *n == k).unwrap().1;
        samples.push((
            p.a.info().snd_cwnd,
            get("bbr_inflight_hi"),
            get("bbr_phase"),
        ));
    }
    Run {
        rate: (p.read - read0) as f64 / 7.0,
        max_queue: p.ab.max_queue,
        drops: p.ab.queue_drops - drops0,
        samples,
        retrans: p.a.info().total_retrans,
    }
}

/// A 2-BDP buffer: after STARTUP the flow keeps ≥ 90 % of the link
/// (measured 97.4 %) and never fills the buffer: the queue stays under
/// one BDP (measured peak 151 packets) and nothing is dropped, so
/// inflight_hi is never set.
#[test]
fn fills_the_link_with_a_queue_under_one_bdp() {
    let r = run(2 * BDP_PKTS);
    assert!(r.rate >= 0.9 * GOODPUT, "{} of {GOODPUT}", r.rate);
    assert!(r.max_queue <= BDP_PKTS, "queue {}", r.max_queue);
    assert_eq!(r.drops, 0);
    assert!(r.samples.iter().all(|s| s.1 < 0.0), "inflight_hi unset");
}

/// A quarter-BDP buffer (41 packets): the first probes lose packets,
/// `inflight_hi` is set from the in-flight level where loss passed 2 %
/// and from then on holds near what the path holds (BDP + buffer = 206;
/// measured 207–222); cwnd never exceeds it, the link stays ≥ 90 % used
/// (measured 97.4 %) and losses stay rare (measured 35 drops in
/// 7 s, 0.12 % of the packets).
#[test]
fn with_loss_it_holds_inflight_hi_at_the_path_capacity() {
    let limit = BDP_PKTS / 4;
    let r = run(limit);
    let pipe = (BDP_PKTS + limit) as f64;
    assert!(r.rate >= 0.9 * GOODPUT, "{} of {GOODPUT}", r.rate);
    assert!(r.retrans > 0, "the shallow buffer overflowed in STARTUP");
    for &(cwnd, hi, _) in &r.samples {
        assert!((0.9 * pipe..=1.15 * pipe).contains(&hi), "inflight_hi {hi}");
        assert!(cwnd as f64 <= hi, "cwnd {cwnd} > inflight_hi {hi}");
    }
    let packets = 7.0 * GOODPUT / 1448.0;
    assert!((r.drops as f64) < 0.005 * packets, "{} drops", r.drops);
}

/// 100 Mbit/s with 2 ms of RTT (ECN logic is for min_rtt ≤ 5 ms), a
/// 300-packet buffer marking CE above 20 queued packets; from 2 s to
/// 6 s: (share of the link, max queue, drops, metrics).
fn ecn_run(ecn: u8) -> (f64, usize, u64, Vec<(&'static str, f64)>) {
    let mut c = cfg("bbr3");
    c.ecn = ecn;
    c.rmem = [4096, 87380, 32 << 20];
    c.wmem = [4096, 16384, 32 << 20];
    let mut p = Pair::sym(c, SimDuration::from_millis(1));
    p.ab.rate = Some(Rate::from_bps(100_000_000));
    p.ab.limit = 300;
    p.ab.ce_threshold = Some(20);
    p.to_write = u64::MAX;
    p.run_until(ms(2_000));
    let (read0, drops0) = (p.read, p.ab.queue_drops);
    p.ab.max_queue = 0;
    p.run_until(ms(6_000));
    let share = (p.read - read0) as f64 / 4.0 / (100e6 / 8.0 * 1448.0 / 1514.0);
    (
        share,
        p.ab.max_queue,
        p.ab.queue_drops - drops0,
        p.a.cc().metrics(),
    )
}

/// With ECN the marks bound the queue near the threshold (measured
/// peak 31 packets, 97.2 % of the link, no drop): `ecn_alpha` settles
/// well below its initial 1.0 (0.17) and `inflight_lo` is cut by it
/// (34 packets against a BDP of 16.5 + 20 queued); without ECN (and
/// no loss) alpha stays 1.0 and `inflight_lo` unset.
#[test]
fn ecn_marks_hold_the_queue_near_the_marking_threshold() {
    let (share, max_queue, drops, m) = ecn_run(1);
    let get = |k: &str| m.iter().find(|(n, _)| *n == k).unwrap().1;
    assert!(share >= 0.9, "{share}");
    assert!(max_queue <= 40, "queue {max_queue}");
    assert_eq!(drops, 0);
    let alpha = get("bbr_ecn_alpha");
    assert!(alpha > 0.0 && alpha < 0.5, "ecn_alpha {alpha}");
    assert!(get("bbr_inflight_lo") > 0.0, "inflight_lo set by ECN");
    let (_, _, plain_drops, plain) = ecn_run(0);
    let plain_get = |k: &str| plain.iter().find(|(n, _)| *n == k).unwrap().1;
    assert_eq!(plain_drops, 0);
    assert_eq!(
        plain_get("bbr_ecn_alpha"),
        1.0,
        "no ECN: alpha never updated"
    );
    assert_eq!(plain_get("bbr_inflight_lo"), -1.0, "no ECN, no loss: unset");
}
