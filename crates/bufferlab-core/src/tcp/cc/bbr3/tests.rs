//! BBRv3's arithmetic and state changes against hand-computed vectors.

use super::super::{msecs_to_jiffies, INITIAL_JIFFIES};
use super::*;

const J0: u32 = INITIAL_JIFFIES + 1_000;

/// A BBRv3 just initialised after a 40 ms handshake, at jiffies J0.
fn started() -> (Bbr3, CcSock) {
    let mut tp = CcSock {
        srtt_us: 40_000 << 3,
        min_rtt_us: 40_000,
        jiffies: J0,
        now_us: 4_000_000,
        clock_ns: 4_000_000_000,
        delivered_mstamp: 4_000_000,
        is_cwnd_limited: true,
        ..CcSock::default()
    };
    let mut b = Bbr3::new(ComponentRng::new(1, "bbr3"));
    b.init(&mut tp);
    (b, tp)
}

#[test]
fn get_info_reports_the_models_bw_at_least_one_byte_per_second() {
    // ss -i's bbr:(bw,mrtt,pacing_gain,cwnd_gain): no bw sample yet is 1 B/s
    // (bbr_rate_bytes_per_sec's floor); then bbr_bw = min(bw_hi, bw_lo)
    let (mut b, mut tp) = started();
    tp.mss_cache = 1448;
    let Some(CcInfo::Bbr {
        bw,
        min_rtt,
        pacing_gain,
        cwnd_gain,
    }) = b.get_info(&tp)
    else {
        panic!("bbr3 fills struct tcp_bbr_info");
    };
    assert_eq!(bw, 1);
    assert_eq!(
        (min_rtt, pacing_gain, cwnd_gain),
        (b.min_rtt_us, b.pacing_gain, b.cwnd_gain)
    );
    // 1 packet per 100 µs (167 772 in pkts/µs << 24): 1448 × 10 000 B/s less
    // the truncations
    b.bw_hi = [(BW_UNIT / 100) as u32, 0];
    b.bw_lo = u32::MAX;
    let Some(CcInfo::Bbr { bw, .. }) = b.get_info(&tp) else {
        unreachable!()
    };
    assert_eq!(bw, 14_479_986);
    b.bw_lo = (BW_UNIT / 200) as u32;
    let Some(CcInfo::Bbr { bw, .. }) = b.get_info(&tp) else {
        unreachable!()
    };
    assert_eq!(bw, 7_239_993);
}

/// One ACK delivering `d` packets over `interval_us`; `new_round` makes
/// it end a packet-timed round (and a loss round).
fn ack(b: &mut Bbr3, tp: &mut CcSock, d: u32, interval_us: i64, new_round: bool) -> RateSample {
    tp.delivered += d;
    let prior_delivered = if new_round {
        tp.delivered - d
    } else {
        b.next_rtt_delivered.wrapping_sub(1)
    };
    let rs = RateSample {
        prior_delivered,
        delivered: d as i32,
        interval_us,
        rtt_us: 40_000,
        acked_sacked: d,
        prior_in_flight: tp.packets_in_flight,
        tx_in_flight: tp.packets_in_flight,
        ..RateSample::default()
    };
    b.cong_control(tp, &rs);
    rs
}

#[test]
fn gains_are_the_kernels_fixed_point_constants() {
    // 256·277/100 = 709 (+1): 2.77 ≈ 4 ln 2; 256·1000/2885 = 88
    assert_eq!(
        (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN, DRAIN_GAIN),
        (710, 512, 88)
    );
    // UP 1.25, DOWN 256·91/100 = 232, CRUISE and REFILL 1.0
    assert_eq!(PACING_GAIN, [320, 232, 256, 256]);
    // beta 0.3 → 76, loss_thresh 2 % → 5, ecn_thresh 0.5, ecn_factor 1/3
    // → 85, alpha gain 1/16, headroom 15 % → 38, PROBE_RTT cwnd 0.5
    assert_eq!(
        (BETA, LOSS_THRESH, ECN_THRESH, ECN_FACTOR),
        (76, 5, 128, 85)
    );
    assert_eq!(
        (ECN_ALPHA_GAIN, INFLIGHT_HEADROOM, PROBE_RTT_CWND_GAIN),
        (16, 38, 128)
    );
    let (mut b, _) = started();
    b.mode = Bbr3Mode::ProbeBw;
    for (phase, pacing, cwnd) in [
        (Phase::Up, 320, 576), // cwnd gain 2 + 1/4 while probing up
        (Phase::Down, 232, 512),
        (Phase::Cruise, 256, 512),
        (Phase::Refill, 256, 512),
    ] {
        b.cycle_idx = phase;
        b.update_gains();
        assert_eq!((b.pacing_gain, b.cwnd_gain), (pacing, cwnd), "{phase:?}");
    }
    b.mode = Bbr3Mode::ProbeRtt;
    b.update_gains();
    assert_eq!((b.pacing_gain, b.cwnd_gain), (256, 256));
}

#[test]
fn bdp_is_bw_times_min_rtt_times_gain_rounded_up() {
    // bw 2^20 (1/16 packet per µs) × 40 ms = 2500 packets
    assert_eq!(bdp(1 << 20, 40_000, BBR_UNIT), 2_500);
    assert_eq!(bdp(1 << 20, 40_000, PROBE_RTT_CWND_GAIN), 1_250);
    // 2500 × 710/256 = 6933.59 → 6934
    assert_eq!(bdp(1 << 20, 40_000, STARTUP_PACING_GAIN), 6_934);
    assert_eq!(bdp(1 << 20, 40_000, 576), 5_625);
}

#[test]
fn bw_sample_rounds_up_and_the_filter_spans_two_cycles() {
    let (mut b, mut tp) = started();
    // ⌈10 · 2^24 / 40 000⌉ = ⌈4194.3⌉
    let rs = ack(&mut b, &mut tp, 10, 40_000, true);
    assert_eq!(Bbr3::bw_sample(&rs), 4_195);
    assert_eq!(b.max_bw(), 4_195);
    assert_eq!(b.bw(), 4_195, "bw_lo unset (~0) does not bound");
    for d in [30, 20] {
        ack(&mut b, &mut tp, d, 40_000, false);
    }
    assert_eq!(b.bw_hi, [0, 12_583]); // ⌈30 · 2^24 / 40 000⌉
    b.advance_max_bw_filter();
    assert_eq!(b.bw_hi, [12_583, 0]);
    ack(&mut b, &mut tp, 15, 40_000, false);
    assert_eq!(b.max_bw(), 12_583, "the previous cycle still counts");
    b.advance_max_bw_filter();
    assert_eq!(b.max_bw(), 6_292);
    b.advance_max_bw_filter(); // no sample: the old half stays
    assert_eq!(b.max_bw(), 6_292);
    b.bw_lo = 5_000;
    assert_eq!(b.bw(), 5_000);
}

#[test]
fn startup_exits_on_a_bandwidth_plateau_of_three_rounds() {
    let (mut b, mut tp) = started();
    tp.packets_in_flight = 10_000; // keeps DRAIN from ending at once
    ack(&mut b, &mut tp, 100, 1_000_000, true); // 1678
    ack(&mut b, &mut tp, 200, 1_000_000, true); // 3356 ≥ 1.25 × 1678
    assert_eq!((b.full_bw, b.full_bw_cnt), (3_356, 0));
    for n in 1..=2 {
        ack(&mut b, &mut tp, 240, 1_000_000, true); // 4027 < 3356·1.25 = 4195
        assert_eq!((b.full_bw_cnt, b.mode), (n, Bbr3Mode::Startup));
    }
    ack(&mut b, &mut tp, 240, 1_000_000, true);
    assert!(b.full_bw_reached && b.full_bw_now);
    assert_eq!(b.mode, Bbr3Mode::Drain);
    assert_eq!(
        (b.pacing_gain, b.cwnd_gain),
        (DRAIN_GAIN, STARTUP_CWND_GAIN)
    );
    tp.packets_in_flight = 4;
    ack(&mut b, &mut tp, 1, 1_000_000, false);
    // DRAIN → PROBE_BW DOWN, and on the same ACK (in-flight already
    // under the BDP) DOWN → CRUISE
    assert_eq!((b.mode, b.cycle_idx), (Bbr3Mode::ProbeBw, Phase::Cruise));
    assert_eq!(b.bw_probe_up_cnt, u32::MAX);
    assert!((2_000_000..3_000_000).contains(&b.probe_wait_us));
}

#[test]
fn ecn_alpha_is_a_one_sixteenth_ewma_per_round() {
    let (mut b, mut tp) = started();
    tp.ecn_ok = true;
    b.min_rtt_us = 2_000; // ECN logic only below 5 ms of min_rtt
    assert_eq!(b.ecn_alpha, 256);
    tp.delivered = 100;
    tp.delivered_ce = 25; // CE ratio 25·256/100 = 64
    assert_eq!(b.update_ecn_alpha(&tp), Some(64));
    // 240·256/256 + 16·64/256 = 240 + 4
    assert_eq!(b.ecn_alpha, 244);
    // ecn_cut = 1 − 85/256·alpha: 256 − 244·85/256 = 256 − 81
    assert_eq!(b.ecn_cut(), 175);
    // a path with more than 5 ms of min_rtt never uses ECN
    let (mut c, mut tp2) = started();
    tp2.ecn_ok = true;
    tp2.delivered = 100;
    assert_eq!(c.update_ecn_alpha(&tp2), None);
    assert!(!c.ecn_eligible);
}

#[test]
fn startup_exits_after_two_rounds_of_ce_above_half() {
    let (mut b, mut tp) = started();
    tp.ecn_ok = true;
    b.min_rtt_us = 2_000;
    for (n, (d, ce)) in [(100, 60), (200, 140)].into_iter().enumerate() {
        tp.delivered = d;
        tp.delivered_ce = ce;
        b.update_ecn_alpha(&tp);
        assert_eq!(b.startup_ecn_rounds, n as u32 + 1);
    }
    assert!(b.full_bw_reached);
    // inflight_hi = max(BDP with budget, inflight_latest): with no bw
    // sample yet, the budget of 3 TSO bursts: ~1 ms of the initial
    // pacing rate (978 B) + 64 KB >> (2000 >> 9) = 9170 B = 6 segments
    assert_eq!(b.tso_segs_goal(&tp), 6);
    assert_eq!(b.inflight_hi, 18);
}

#[test]
fn inflight_is_too_high_above_2_percent_loss_or_half_ce() {
    let (mut b, _) = started();
    let s = |tx_in_flight, lost, delivered, delivered_ce| Signal {
        tx_in_flight,
        lost,
        delivered,
        delivered_ce,
        is_app_limited: false,
    };
    // 2 % of 200 = 200·5 >> 8 = 3: 3 lost is not too high, 4 is
    assert!(!b.is_inflight_too_high(&s(200, 3, 0, 0)));
    assert!(b.is_inflight_too_high(&s(200, 4, 0, 0)));
    // CE counts only once ECN-eligible: 51 of 100 > 100·128 >> 8 = 50
    assert!(!b.is_inflight_too_high(&s(0, 0, 100, 51)));
    b.ecn_eligible = true;
    assert!(b.is_inflight_too_high(&s(0, 0, 100, 51)));
    assert!(!b.is_inflight_too_high(&s(0, 0, 100, 50)));
}

#[test]
fn inflight_hi_from_a_lost_packet_solves_for_the_loss_threshold() {
    // 300 in flight, 6 lost: before it 299 in flight, 5 lost; budget
    // ⌈299·5/256⌉ = 6, so 1 more loss fits: prefix ⌊(1 << 8)/251⌋ = 1
    assert_eq!(inflight_hi_from_lost_skb(300, 6), 300);
    // 200 in flight, 5 lost: budget ⌈199·5/256⌉ = 4 = lost before: 199
    assert_eq!(inflight_hi_from_lost_skb(200, 5), 199);
    // 1000 in flight, 3 lost: budget ⌈999·5/256⌉ = 20, (20 − 2)·256/251 = 18
    assert_eq!(inflight_hi_from_lost_skb(1_000, 3), 1_017);
    assert_eq!(inflight_hi_from_lost_skb(0, 3), u32::MAX);
}

/// A flow in PROBE_BW UP with cwnd 100 and bw 2^20 (BDP 2500).
fn probing_up() -> (Bbr3, CcSock) {
    let (mut b, mut tp) = started();
    b.full_bw_reached = true;
    b.mode = Bbr3Mode::ProbeBw;
    b.cycle_idx = Phase::Up;
    b.bw_hi = [1 << 20, 0];
    b.bw_probe_samples = true;
    tp.snd_cwnd = 100;
    tp.delivered = 1_000;
    tp.lost = 10;
    (b, tp)
}

#[test]
fn a_loss_while_probing_sets_inflight_hi_and_goes_down() {
    let (mut b, mut tp) = probing_up();
    let skb = |tx_in_flight, lost| LostSkb {
        tx_in_flight,
        lost,
        is_app_limited: false,
        has_snapshot: true,
    };
    // 5 losses since it was sent (of 300: not above 2 %): noted only
    b.skb_marked_lost(&mut tp, &skb(300, 5));
    assert!(b.loss_in_round && b.loss_in_cycle);
    assert_eq!((b.inflight_hi, b.cycle_idx), (u32::MAX, Phase::Up));
    // the sixth: inflight_hi = max(300, target 100 · (256 − 76) >> 8 = 70)
    b.skb_marked_lost(&mut tp, &skb(300, 6));
    assert_eq!(b.inflight_hi, 300);
    assert_eq!(b.cycle_idx, Phase::Down);
    assert!(b.prev_probe_too_high && !b.bw_probe_samples);
    // once per probe: a further loss changes nothing
    b.skb_marked_lost(&mut tp, &skb(50, 20));
    assert_eq!(b.inflight_hi, 300);
    // a loss at a lower level is floored at (1 − beta) × target
    let (mut c, mut tp) = probing_up();
    c.skb_marked_lost(&mut tp, &skb(40, 6));
    assert_eq!(c.inflight_hi, 70);
    // a SACKed-then-lost segment (no snapshot) is only noted
    let (mut d, mut tp) = probing_up();
    d.skb_marked_lost(
        &mut tp,
        &LostSkb {
            has_snapshot: false,
            ..skb(300, 6)
        },
    );
    assert_eq!(d.inflight_hi, u32::MAX);
}

#[test]
fn inflight_hi_grows_one_two_four_packets_per_round_in_probe_up() {
    let (mut b, mut tp) = probing_up();
    b.inflight_hi = 100;
    b.bw_probe_up_rounds = 0;
    b.raise_inflight_hi_slope(&tp); // 1 packet per cwnd/1 = 100 acked
    assert_eq!((b.bw_probe_up_cnt, b.bw_probe_up_rounds), (100, 1));
    let rs = RateSample {
        acked_sacked: 250,
        ..RateSample::default()
    };
    b.probe_inflight_hi_upward(&tp, &rs);
    assert_eq!((b.inflight_hi, b.bw_probe_up_acks), (102, 50));
    b.raise_inflight_hi_slope(&tp); // doubling: cwnd/2
    assert_eq!(b.bw_probe_up_cnt, 50);
    // not cwnd-limited: no growth
    tp.is_cwnd_limited = false;
    b.probe_inflight_hi_upward(&tp, &rs);
    assert_eq!(b.inflight_hi, 102);
}

#[test]
fn lower_bounds_cut_by_beta_on_loss_and_by_alpha_on_ecn() {
    let (mut b, mut tp) = probing_up();
    b.cycle_idx = Phase::Cruise; // not probing: lower bounds adapt
    tp.snd_cwnd = 100;
    b.inflight_latest = 50;
    b.bw_latest = 1 << 18;
    b.loss_in_round = true;
    b.adapt_lower_bounds(&tp);
    // inflight_lo = max(50, 100·180 >> 8 = 70); bw_lo = max(2^18, 2^20·0.7)
    assert_eq!(b.inflight_lo, 70);
    assert_eq!(b.bw_lo, (((1u64 << 20) * 180) >> 8) as u32);
    b.loss_in_round = false;
    b.ecn_in_round = true;
    b.ecn_alpha = 256; // cut 1 − 85/256: 70·171 >> 8 = 46
    b.adapt_lower_bounds(&tp);
    assert_eq!(b.inflight_lo, 46);
    // while probing they stay
    b.cycle_idx = Phase::Refill;
    b.adapt_lower_bounds(&tp);
    assert_eq!(b.inflight_lo, 46);
}

#[test]
fn cruise_keeps_15_percent_headroom_under_inflight_hi() {
    let (mut b, mut tp) = probing_up();
    b.inflight_hi = 100;
    assert_eq!(b.inflight_with_headroom(), 86); // 100 − 100·38 >> 8
    b.cycle_idx = Phase::Cruise;
    tp.snd_cwnd = 500;
    b.bound_cwnd_for_inflight_model(&mut tp);
    assert_eq!(tp.snd_cwnd, 86);
    b.cycle_idx = Phase::Up;
    tp.snd_cwnd = 500;
    b.bound_cwnd_for_inflight_model(&mut tp);
    assert_eq!(tp.snd_cwnd, 100);
    b.inflight_lo = 60;
    b.bound_cwnd_for_inflight_model(&mut tp);
    assert_eq!(tp.snd_cwnd, 60);
}

#[test]
fn probe_bw_cycles_down_cruise_refill_up() {
    let (mut b, mut tp) = probing_up();
    b.inflight_hi = 3_000;
    b.cycle_idx = Phase::Down;
    b.cycle_mstamp = tp.now_us;
    b.probe_wait_us = 2_500_000;
    b.rounds_since_probe = 0;
    tp.snd_cwnd = 3_000;
    // in-flight 2600 > BDP 2500 + budget: stay DOWN
    tp.packets_in_flight = 2_600;
    ack(&mut b, &mut tp, 10, 40_000, false);
    assert_eq!(b.cycle_idx, Phase::Down);
    // drained to 2000 (under both the headroom level 2555 and the BDP): CRUISE
    tp.packets_in_flight = 2_000;
    ack(&mut b, &mut tp, 10, 40_000, false);
    assert_eq!(b.cycle_idx, Phase::Cruise);
    // the wall-clock wait runs out: REFILL, lower bounds reset
    tp.now_us += 2_500_001;
    b.inflight_lo = 10;
    ack(&mut b, &mut tp, 10, 40_000, false);
    assert_eq!((b.cycle_idx, b.inflight_lo), (Phase::Refill, u32::MAX));
    // one round later: UP, with cwnd gain 2.25
    ack(&mut b, &mut tp, 10, 40_000, true);
    assert_eq!(b.cycle_idx, Phase::Up);
    assert!(b.bw_probe_samples);
    assert_eq!((b.pacing_gain, b.cwnd_gain), (320, 576));
}

#[test]
fn reno_coexistence_probes_after_bdp_rounds_at_most_63() {
    let (mut b, mut tp) = probing_up();
    tp.snd_cwnd = 30; // target inflight = min(BDP, cwnd) = 30 rounds
    b.rounds_since_probe = 29;
    assert!(!b.is_reno_coexistence_probe_time(&tp));
    b.rounds_since_probe = 30;
    assert!(b.is_reno_coexistence_probe_time(&tp));
    tp.snd_cwnd = 5_000;
    b.rounds_since_probe = 62;
    assert!(!b.is_reno_coexistence_probe_time(&tp));
    b.rounds_since_probe = 63;
    assert!(b.is_reno_coexistence_probe_time(&tp));
}

#[test]
fn probe_rtt_every_5_s_holds_half_the_bdp() {
    let (mut b, mut tp) = probing_up();
    b.cycle_idx = Phase::Cruise;
    b.min_rtt_us = 40_000;
    b.probe_rtt_min_us = 40_000;
    tp.snd_cwnd = 3_000;
    tp.packets_in_flight = 2_500;
    // 5 s and a jiffy later, no lower RTT: PROBE_RTT
    tp.jiffies = J0 + msecs_to_jiffies(5_000) + 1;
    ack(&mut b, &mut tp, 10, 40_000, false);
    assert_eq!(b.mode, Bbr3Mode::ProbeRtt);
    // cwnd ≤ BDP/2 = 1250 (bw 2^20 × 40 ms × 0.5)
    assert_eq!(tp.snd_cwnd, 1_250);
    assert_eq!(b.prior_cwnd, 3_000);
    // in-flight down to 1250: 200 ms and a round, then back to CRUISE
    tp.packets_in_flight = 1_250;
    ack(&mut b, &mut tp, 10, 40_000, false);
    assert_ne!(b.probe_rtt.done_stamp, 0);
    tp.jiffies += msecs_to_jiffies(200) + 1;
    ack(&mut b, &mut tp, 10, 40_000, true);
    assert_eq!((b.mode, b.cycle_idx), (Bbr3Mode::ProbeBw, Phase::Cruise));
    assert!(tp.snd_cwnd >= 2_500, "cwnd restored: {}", tp.snd_cwnd);
}

#[test]
fn extra_acked_window_is_one_round_in_startup() {
    let (mut b, mut tp) = started();
    b.aggr.extra_acked = [30, 0];
    b.round_start = true;
    let rs = RateSample {
        acked_sacked: 1,
        delivered: 1,
        interval_us: 1,
        ..RateSample::default()
    };
    b.update_ack_aggregation(&tp, &rs);
    assert_eq!((b.aggr.win_idx, b.aggr.win_rtts), (1, 0));
    b.full_bw_reached = true;
    for n in 1..5 {
        b.update_ack_aggregation(&tp, &rs);
        assert_eq!(b.aggr.win_rtts, n);
    }
    b.update_ack_aggregation(&tp, &rs);
    assert_eq!((b.aggr.win_idx, b.aggr.win_rtts), (0, 0));
    tp.snd_cwnd = 10;
    let _ = tp;
}

#[test]
fn ssthresh_saves_and_undo_restores_the_bounds() {
    let (mut b, tp) = probing_up();
    b.inflight_hi = 200;
    b.inflight_lo = 150;
    b.bw_lo = 5_000;
    b.ssthresh(&tp);
    b.inflight_hi = 100;
    b.inflight_lo = 80;
    b.bw_lo = 1_000;
    assert_eq!(b.undo_cwnd(&tp), 100, "prior_cwnd saved by ssthresh");
    assert_eq!((b.inflight_hi, b.inflight_lo, b.bw_lo), (200, 150, 5_000));
}

#[test]
fn registered_beside_v1_with_the_skb_marked_lost_hook() {
    let cc = super::super::Cc::from_name("bbr3").unwrap();
    assert_eq!(cc.name(), "bbr3");
    assert!(cc.has_cong_control() && cc.wants_skb_marked_lost());
    assert!(!super::super::Cc::from_name("bbr")
        .unwrap()
        .wants_skb_marked_lost());
}
