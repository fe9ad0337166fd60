//! `htcp` — H-TCP (net/ipv4/tcp_htcp.c; docs/semantics/tcp.md §11.3; Leith & Shorten,
//! "H-TCP: TCP for high-speed and long-distance networks", PFLDnet 2004).
//!
//! Units. Windows in packets; `alpha` and `beta` are fixed point << 7
//! (128 = 1.0); RTTs (`min_rtt`, `max_rtt`) and all times are **jiffies**
//! (HZ 250, RTT samples rounded up by `usecs_to_jiffies`); the throughput
//! estimates `Bi`, `minB`, `maxB` are packets per second.
//!
//! Defaults (tcp_htcp.c): `ALPHA_BASE` 128 (1 packet/RTT), `BETA_MIN` 64
//! (0.5), `BETA_MAX` 102 (≈ 0.8), `use_rtt_scaling` and
//! `use_bandwidth_switch` on.
//!
//! The increase per RTT grows with Δ, the time since the last congestion
//! event: α = 2(1 − β)·f(Δ), f = 1 + 10(Δ−1) + ((Δ−1)/2)^2 for Δ > 1 s
//! (integer-truncated), scaled by minRTT/100 ms; the decrease factor
//! β = minRTT/maxRTT in [0.5, 0.8], or 0.5 while the achieved throughput is
//! still changing by more than ±20 % between congestion events.

use super::{
    msecs_to_jiffies, tcp_reno_undo_cwnd, tcp_slow_start, usecs_to_jiffies, AckSample, CaState,
    CcProfile, CcSock, CongestionOps, HZ,
};
use crate::rng::ComponentRng;

/// `ALPHA_BASE`: 1.0 << 7.
const ALPHA_BASE: u32 = 1 << 7;
/// `BETA_MIN`: 0.5 << 7.
const BETA_MIN: u8 = 1 << 6;
/// `BETA_MAX`: ≈ 0.8 << 7.
const BETA_MAX: u8 = 102;

/// H-TCP's module parameters (Linux defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HtcpParams {
    /// scale α by minRTT/100 ms (clamped to [0.5, 10])
    pub use_rtt_scaling: bool,
    /// fall back to β = 0.5 while throughput moves by more than 20 %
    pub use_bandwidth_switch: bool,
}

impl Default for HtcpParams {
    fn default() -> Self {
        HtcpParams {
            use_rtt_scaling: true,
            use_bandwidth_switch: true,
        }
    }
}

/// H-TCP's per-connection state (`struct htcp`).
#[derive(Clone, Debug)]
pub struct Htcp {
    params: HtcpParams,
    /// increase per RTT, packets << 7
    alpha: u32,
    /// decrease factor << 7
    beta: u8,
    /// adaptive β enabled (set after one congestion event)
    modeswitch: bool,
    /// packets acked by the last ACK in Open (u16 as in the kernel)
    pkts_acked: u16,
    /// packets acked since `lasttime` (throughput measurement)
    packetcount: u32,
    /// minimum RTT, jiffies (0 = none)
    min_rtt: u32,
    /// maximum RTT (a congestion-free estimate), jiffies
    max_rtt: u32,
    /// jiffies of the last congestion event (or of its end)
    last_cong: u32,
    /// saved for undo (0 = nothing saved)
    undo_last_cong: u32,
    undo_max_rtt: u32,
    undo_old_max_b: u32,
    /// throughput estimates, packets/s
    min_b: u32,
    max_b: u32,
    old_max_b: u32,
    bi: u32,
    /// start of the throughput measurement, jiffies
    lasttime: u32,
}

/// `between(seq1, seq2, seq3)` (include/net/tcp.h): seq2 ≤ seq1 ≤ seq3 in
/// 32-bit modular arithmetic.
fn between(seq1: u32, seq2: u32, seq3: u32) -> bool {
    seq3.wrapping_sub(seq2) >= seq1.wrapping_sub(seq2)
}

impl Htcp {
    pub fn new(params: HtcpParams) -> Htcp {
        Htcp {
            params,
            alpha: ALPHA_BASE,
            beta: BETA_MIN,
            modeswitch: false,
            pkts_acked: 1,
            packetcount: 0,
            min_rtt: 0,
            max_rtt: 0,
            last_cong: 0,
            undo_last_cong: 0,
            undo_max_rtt: 0,
            undo_old_max_b: 0,
            min_b: 0,
            max_b: 0,
            old_max_b: 0,
            bi: 0,
            lasttime: 0,
        }
    }

    /// α, packets per RTT << 7.
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// β << 7.
    pub fn beta(&self) -> u32 {
        self.beta as u32
    }

    /// `htcp_cong_time`: jiffies since the last congestion event.
    fn cong_time(&self, jiffies: u32) -> u32 {
        jiffies.wrapping_sub(self.last_cong)
    }

    /// `htcp_reset`: a congestion episode starts (CWR, Recovery, Loss):
    /// save what undo restores, restart the Δ clock.
    fn reset(&mut self, jiffies: u32) {
        self.undo_last_cong = self.last_cong;
        self.undo_max_rtt = self.max_rtt;
        self.undo_old_max_b = self.old_max_b;
        self.last_cong = jiffies;
    }

    /// `measure_rtt`: minRTT ever; in Open, maxRTT follows increases of at
    /// most 20 ms at a time (larger jumps are taken for noise).
    fn measure_rtt(&mut self, tp: &CcSock, srtt: u32) {
        if self.min_rtt > srtt || self.min_rtt == 0 {
            self.min_rtt = srtt;
        }
        if tp.ca_state == CaState::Open {
            if self.max_rtt < self.min_rtt {
                self.max_rtt = self.min_rtt;
            }
            if self.max_rtt < srtt && srtt <= self.max_rtt.wrapping_add(msecs_to_jiffies(20)) {
                self.max_rtt = srtt;
            }
        }
    }

    /// `htcp_beta_update`: β = minRTT/maxRTT clamped to [0.5, 0.8] once
    /// the mode switch is on and minRTT > 10 ms; the bandwidth switch
    /// resets to 0.5 (and the mode off) when maxB moved by more than
    /// ±20 % since the previous congestion event.
    fn beta_update(&mut self, min_rtt: u32, max_rtt: u32) {
        if self.params.use_bandwidth_switch {
            let max_b = self.max_b;
            let old_max_b = self.old_max_b;
            self.old_max_b = self.max_b;
            if !between(
                max_b.wrapping_mul(5),
                old_max_b.wrapping_mul(4),
                old_max_b.wrapping_mul(6),
            ) {
                self.beta = BETA_MIN;
                self.modeswitch = false;
                return;
            }
        }
        if self.modeswitch && min_rtt > msecs_to_jiffies(10) && max_rtt != 0 {
            self.beta = ((min_rtt << 7) / max_rtt) as u8; // u8 field
            self.beta = self.beta.clamp(BETA_MIN, BETA_MAX);
        } else {
            self.beta = BETA_MIN;
            self.modeswitch = true;
        }
    }

    /// `htcp_alpha_update`: α = 2·f(Δ)·(1 − β), with
    /// f(Δ) = 1 + (10·d + (d/2)^2/HZ)/HZ for d = Δ − 1 s in jiffies
    /// (integer), times minRTT/100 ms clamped to [0.5, 10] when RTT
    /// scaling is on.
    fn alpha_update(&mut self, jiffies: u32) {
        let min_rtt = self.min_rtt;
        let mut factor: u32 = 1;
        let mut diff = self.cong_time(jiffies);
        if diff > HZ {
            diff -= HZ;
            factor = 1
                + (10u32
                    .wrapping_mul(diff)
                    .wrapping_add((diff / 2).wrapping_mul(diff / 2) / HZ))
                    / HZ;
        }
        if self.params.use_rtt_scaling && min_rtt != 0 {
            // 1.0 = 8: HZ·8/(10·minRTT) is (100 ms/minRTT) << 3
            let scale = ((HZ << 3) / (10 * min_rtt)).clamp(1 << 2, 10 << 3);
            factor = (factor << 3) / scale;
            if factor == 0 {
                factor = 1;
            }
        }
        self.alpha = 2u32
            .wrapping_mul(factor)
            .wrapping_mul(ALPHA_BASE - self.beta as u32);
        if self.alpha == 0 {
            self.alpha = ALPHA_BASE;
        }
    }

    /// `htcp_param_update`: at a congestion event, update β then α, and
    /// let maxRTT fade 5 % towards minRTT (routing changes).
    fn param_update(&mut self, jiffies: u32) {
        let (min_rtt, max_rtt) = (self.min_rtt, self.max_rtt);
        self.beta_update(min_rtt, max_rtt);
        self.alpha_update(jiffies);
        if min_rtt > 0 && max_rtt > min_rtt {
            self.max_rtt = min_rtt + (max_rtt - min_rtt).wrapping_mul(95) / 100;
        }
    }
}

/// `htcp` (`tcp_congestion_ops` in tcp_htcp.c).
impl CongestionOps for Htcp {
    const NAME: &'static str = "htcp";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Htcp {
        Htcp::new(HtcpParams::default())
    }

    /// `htcp_init`.
    fn init(&mut self, tp: &mut CcSock) {
        *self = Htcp::new(self.params);
        self.last_cong = tp.jiffies;
    }

    /// `htcp_recalc_ssthresh`: ssthresh = β·cwnd (at least 2).
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.param_update(tp.jiffies);
        (tp.snd_cwnd.wrapping_mul(self.beta as u32) >> 7).max(2)
    }

    /// `htcp_cong_avoid`: slow start (leftover discarded), else +1 packet
    /// once `snd_cwnd_cnt·α ≥ cwnd` (i.e. α packets per RTT), counting the
    /// packets of the last Open ACK and refreshing α at every step.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            tcp_slow_start(tp, acked);
        } else {
            if (tp.snd_cwnd_cnt.wrapping_mul(self.alpha) >> 7) >= tp.snd_cwnd {
                if tp.snd_cwnd < tp.snd_cwnd_clamp {
                    tp.snd_cwnd += 1;
                }
                tp.snd_cwnd_cnt = 0;
                self.alpha_update(tp.jiffies);
            } else {
                tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(self.pkts_acked as u32);
            }
            self.pkts_acked = 1;
        }
    }

    /// `htcp_state`: entering CWR/Recovery/Loss starts an episode (Δ = 0);
    /// returning to Open after an episode that was not undone restarts the
    /// Δ clock at its end.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        match new_state {
            CaState::Open => {
                if self.undo_last_cong != 0 {
                    self.last_cong = tp.jiffies;
                    self.undo_last_cong = 0;
                }
            }
            CaState::Cwr | CaState::Recovery | CaState::Loss => self.reset(tp.jiffies),
            CaState::Disorder => {}
        }
    }

    /// `measure_achieved_throughput` (the `pkts_acked` hook): RTT tracking
    /// and, in Open/Disorder, one throughput sample per window of packets
    /// (at least minRTT long): Bi is smoothed ¾ old + ¼ new, except within
    /// 3 RTTs of a congestion event where it restarts.
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        let now = tp.jiffies;
        if tp.ca_state == CaState::Open {
            self.pkts_acked = sample.pkts_acked as u16;
        }
        let rtt_us = sample.rtt_us as i32; // s32 in struct ack_sample
        if rtt_us > 0 {
            self.measure_rtt(tp, usecs_to_jiffies(rtt_us as u32));
        }
        if !self.params.use_bandwidth_switch {
            return;
        }
        if !matches!(tp.ca_state, CaState::Open | CaState::Disorder) {
            self.packetcount = 0;
            self.lasttime = now;
            return;
        }
        self.packetcount = self.packetcount.wrapping_add(sample.pkts_acked);
        let a = match self.alpha >> 7 {
            0 => 1,
            a => a,
        };
        let elapsed = now.wrapping_sub(self.lasttime);
        if self.packetcount >= tp.snd_cwnd.wrapping_sub(a)
            && elapsed >= self.min_rtt
            && self.min_rtt > 0
        {
            let cur_bi = self.packetcount.wrapping_mul(HZ) / elapsed;
            if self.cong_time(now) / self.min_rtt <= 3 {
                // just after a backoff
                self.min_b = cur_bi;
                self.max_b = cur_bi;
                self.bi = cur_bi;
            } else {
                self.bi = (3u32.wrapping_mul(self.bi).wrapping_add(cur_bi)) / 4;
                if self.bi > self.max_b {
                    self.max_b = self.bi;
                }
                if self.min_b > self.max_b {
                    self.min_b = self.max_b;
                }
            }
            self.packetcount = 0;
            self.lasttime = now;
        }
    }

    /// `htcp_cwnd_undo`: restore the saved Δ clock and RTT/bandwidth
    /// memory, then Reno's undo (max(cwnd, prior_cwnd)).
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        if self.undo_last_cong != 0 {
            self.last_cong = self.undo_last_cong;
            self.max_rtt = self.undo_max_rtt;
            self.old_max_b = self.undo_old_max_b;
            self.undo_last_cong = 0;
        }
        tcp_reno_undo_cwnd(tp)
    }

    /// Trace values: α and β as fractions, RTTs in ms, throughput estimate.
    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        let ms_per_jiffy = 1_000.0 / HZ as f64;
        out.extend_from_slice(&[
            ("htcp_alpha", self.alpha as f64 / 128.0),
            ("htcp_beta", self.beta as f64 / 128.0),
            ("htcp_min_rtt_ms", self.min_rtt as f64 * ms_per_jiffy),
            ("htcp_max_rtt_ms", self.max_rtt as f64 * ms_per_jiffy),
            ("htcp_bw_pps", self.bi as f64),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::{Fluid, Path};
    use super::super::{Cc, INITIAL_JIFFIES};
    use super::*;

    const J0: u32 = INITIAL_JIFFIES + 10_000;

    fn sock(cwnd: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 2,
            is_cwnd_limited: true,
            jiffies: J0,
            ..CcSock::default()
        }
    }

    /// α after `since` jiffies since the last congestion event, with
    /// minRTT `min_rtt` jiffies and β `beta`.
    fn alpha_at(since: u32, min_rtt: u32, beta: u8) -> u32 {
        let mut h = Htcp::new(HtcpParams::default());
        h.last_cong = J0 - since;
        h.min_rtt = min_rtt;
        h.beta = beta;
        h.alpha_update(J0);
        h.alpha
    }

    #[test]
    fn alpha_grows_quadratically_after_the_first_second() {
        // minRTT 25 jiffies = 100 ms: scale (250<<3)/(10·25) = 8 = 1.0.
        // β = 0.5: α = 2·f·64 = 128·f, f ≈ 1 + 10Δ + Δ²/4 (Δ = time − 1 s)
        assert_eq!(alpha_at(0, 25, BETA_MIN), 128); // f = 1
        assert_eq!(alpha_at(250, 25, BETA_MIN), 128); // 1 s: not > HZ
                                                      // 2 s: d = 250, f = 1 + (2500 + 125·125/250 = 62)/250 = 1 + 10 = 11
                                                      // (the continuous 11.25 truncated)
        assert_eq!(alpha_at(500, 25, BETA_MIN), 1_408);
        // 3 s: d = 500, f = 1 + (5000 + 250)/250 = 22 (= 1 + 20 + 1)
        assert_eq!(alpha_at(750, 25, BETA_MIN), 2_816);
        // 5 s: d = 1000, f = 1 + (10 000 + 1000)/250 = 45 (= 1 + 40 + 4)
        assert_eq!(alpha_at(1_250, 25, BETA_MIN), 5_760);
        // β = 0.8 (102): α = 2·45·26 = 2340
        assert_eq!(alpha_at(1_250, 25, BETA_MAX), 2_340);
    }

    #[test]
    fn alpha_scales_with_min_rtt_within_half_and_ten() {
        // f = 45 (5 s). minRTT 40 ms (10 jiffies): scale 2000/100 = 20,
        // f = 360/20 = 18 = 45·0.4
        assert_eq!(alpha_at(1_250, 10, BETA_MIN), 18 * 128);
        // minRTT 1 s: scale 2000/2500 = 0 → clamped to 4 (0.5): f = 90
        assert_eq!(alpha_at(1_250, 250, BETA_MIN), 90 * 128);
        // minRTT 4 ms: scale 200 → clamped to 80 (10): f = 360/80 = 4
        assert_eq!(alpha_at(1_250, 1, BETA_MIN), 4 * 128);
        // f = 1 at minRTT 4 ms: 8/80 = 0 → 1
        assert_eq!(alpha_at(0, 1, BETA_MIN), 128);
        // no RTT sample yet: unscaled
        assert_eq!(alpha_at(1_250, 0, BETA_MIN), 45 * 128);
    }

    #[test]
    fn beta_is_min_over_max_rtt_once_the_mode_switch_is_on() {
        let mut h = Htcp::new(HtcpParams::default());
        h.max_b = 100;
        h.old_max_b = 100;
        // first event: mode switch turns on, β stays 0.5
        h.beta_update(20, 25);
        assert_eq!((h.beta, h.modeswitch), (BETA_MIN, true));
        // (20<<7)/25 = 102.4 → 102
        h.beta_update(20, 25);
        assert_eq!(h.beta, 102);
        // 2560/30 = 85
        h.beta_update(20, 30);
        assert_eq!(h.beta, 85);
        // 2560/50 = 51 → clamped to 64
        h.beta_update(20, 50);
        assert_eq!(h.beta, BETA_MIN);
        // equal RTTs: 128 → clamped to 102
        h.beta_update(20, 20);
        assert_eq!(h.beta, BETA_MAX);
        // minRTT 12 ms (3 jiffies) is not > msecs_to_jiffies(10) = 3
        h.beta_update(3, 4);
        assert_eq!(h.beta, BETA_MIN);
    }

    #[test]
    fn bandwidth_switch_resets_beta_when_throughput_moves_over_20_percent() {
        let mut h = Htcp::new(HtcpParams::default());
        h.modeswitch = true;
        h.old_max_b = 100;
        // 5·130 = 650 ∉ [400, 600]: β 0.5, mode off, old_maxB ← 130
        h.max_b = 130;
        h.beta_update(20, 25);
        assert_eq!((h.beta, h.modeswitch, h.old_max_b), (BETA_MIN, false, 130));
        // 5·160 = 800 ∉ [520, 780] (old 130): still off, old_maxB ← 160
        h.max_b = 160;
        h.beta_update(20, 25);
        assert_eq!((h.modeswitch, h.old_max_b), (false, 160));
        // 5·150 = 750 ∈ [640, 960]: mode switch comes back on (β 0.5 once)
        h.max_b = 150;
        h.beta_update(20, 25);
        assert_eq!((h.beta, h.modeswitch), (BETA_MIN, true));
        // 750 ∈ [600, 900] again: β = 2560/25 = 102
        h.beta_update(20, 25);
        assert_eq!(h.beta, 102);
    }

    #[test]
    fn ssthresh_applies_beta_and_fades_max_rtt() {
        let mut h = Htcp::new(HtcpParams::default());
        h.last_cong = J0;
        h.modeswitch = true;
        h.min_rtt = 20;
        h.max_rtt = 30;
        // β = 2560/30 = 85; ssthresh = 100·85 >> 7 = 8500/128 = 66
        assert_eq!(h.ssthresh(&sock(100)), 66);
        assert_eq!(h.beta, 85);
        // maxRTT = 20 + 10·95/100 = 29
        assert_eq!(h.max_rtt, 29);
        // floor 2
        assert_eq!(h.ssthresh(&sock(2)), 2);
    }

    #[test]
    fn congestion_avoidance_adds_alpha_packets_per_rtt() {
        // α = 1408 (11 packets/RTT, 2 s after the last event, minRTT 100 ms)
        // at cwnd 100: +1 once cnt·1408>>7 ≥ 100, i.e. cnt 10 (110), checked
        // before counting, so every 11th ACK
        let mut h = Htcp::new(HtcpParams::default());
        h.last_cong = J0 - 500;
        h.min_rtt = 25;
        h.alpha_update(J0);
        assert_eq!(h.alpha, 1_408);
        let mut tp = sock(100);
        for _ in 0..10 {
            h.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (100, 10));
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (101, 0));
    }

    #[test]
    fn open_acks_count_their_packets_once() {
        // a 4-packet ACK in Open adds 4 to the counter; the count then
        // falls back to 1 for ACKs without a pkts_acked call
        let mut h = Htcp::new(HtcpParams::default());
        let mut tp = sock(100);
        h.pkts_acked(
            &mut tp,
            &AckSample {
                pkts_acked: 4,
                rtt_us: -1,
                in_flight: 50,
            },
        );
        h.cong_avoid(&mut tp, 0, 4);
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!(tp.snd_cwnd_cnt, 5);
    }

    #[test]
    fn slow_start_discards_the_leftover() {
        let mut h = Htcp::new(HtcpParams::default());
        let mut tp = sock(10);
        tp.snd_ssthresh = 12;
        h.cong_avoid(&mut tp, 0, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 0));
    }

    #[test]
    fn rtt_tracking_in_jiffies_ignores_jumps_over_20ms() {
        let mut h = Htcp::new(HtcpParams {
            use_bandwidth_switch: false,
            ..HtcpParams::default()
        });
        let mut tp = sock(10);
        let mut rtt = |h: &mut Htcp, us| {
            h.pkts_acked(
                &mut tp,
                &AckSample {
                    pkts_acked: 1,
                    rtt_us: us,
                    in_flight: 10,
                },
            )
        };
        rtt(&mut h, 100_000); // 25 jiffies
        assert_eq!((h.min_rtt, h.max_rtt), (25, 25));
        rtt(&mut h, 110_001); // 28 (rounded up): within 25 + 5
        assert_eq!(h.max_rtt, 28);
        rtt(&mut h, 160_000); // 40 > 28 + 5: a spike, ignored
        assert_eq!(h.max_rtt, 28);
        rtt(&mut h, 132_000); // 33 ≤ 28 + 5
        assert_eq!(h.max_rtt, 33);
        rtt(&mut h, 96_000); // 24: new minimum
        assert_eq!((h.min_rtt, h.max_rtt), (24, 33));
    }

    #[test]
    fn throughput_sample_per_window_restarts_after_congestion() {
        // cwnd 10, α 1.0: a sample needs 10 − 1 = 9 packets and ≥ minRTT
        let mut h = Htcp::new(HtcpParams::default());
        let mut tp = sock(10);
        h.init(&mut tp);
        h.min_rtt = 25;
        h.lasttime = J0;
        let one = AckSample {
            pkts_acked: 1,
            rtt_us: -1,
            in_flight: 10,
        };
        for _ in 0..10 {
            h.pkts_acked(&mut tp, &one);
        }
        assert_eq!(h.packetcount, 10); // not yet: 0 jiffies elapsed
        tp.jiffies = J0 + 25;
        h.pkts_acked(&mut tp, &one);
        // 11 packets in 25 jiffies: 11·250/25 = 110 packets/s; within 3 RTTs
        // of the congestion event (init), so minB = maxB = Bi = 110
        assert_eq!((h.bi, h.min_b, h.max_b, h.packetcount), (110, 110, 110, 0));
        // 10 RTTs later: Bi = (3·110 + 90)/4 = 105
        tp.jiffies = J0 + 275;
        h.lasttime = J0 + 250;
        for _ in 0..9 {
            h.pkts_acked(&mut tp, &one);
        }
        assert_eq!(h.bi, (330 + 9 * 250 / 25) / 4);
        assert_eq!(h.max_b, 110);
        // outside Open/Disorder the measurement restarts
        tp.ca_state = CaState::Recovery;
        h.pkts_acked(&mut tp, &one);
        assert_eq!((h.packetcount, h.lasttime), (0, J0 + 275));
    }

    #[test]
    fn undo_restores_the_congestion_clock() {
        let mut h = Htcp::new(HtcpParams::default());
        let mut tp = sock(50);
        h.last_cong = J0 - 1_000;
        h.max_rtt = 30;
        h.set_state(&mut tp, CaState::Recovery);
        assert_eq!((h.last_cong, h.undo_last_cong), (J0, J0 - 1_000));
        h.max_rtt = 27;
        tp.prior_cwnd = 80;
        assert_eq!(h.undo_cwnd(&tp), 80);
        assert_eq!(
            (h.last_cong, h.max_rtt, h.undo_last_cong),
            (J0 - 1_000, 30, 0)
        );
        // back to Open after an undo: the clock is kept
        tp.jiffies = J0 + 5;
        h.set_state(&mut tp, CaState::Open);
        assert_eq!(h.last_cong, J0 - 1_000);
    }

    #[test]
    fn open_after_a_real_episode_restarts_the_clock_at_its_end() {
        let mut h = Htcp::new(HtcpParams::default());
        let mut tp = sock(50);
        h.last_cong = J0 - 1_000;
        h.set_state(&mut tp, CaState::Recovery);
        tp.jiffies = J0 + 30;
        h.set_state(&mut tp, CaState::Open);
        assert_eq!((h.last_cong, h.undo_last_cong), (J0 + 30, 0));
    }

    /// Fluid run: 10 000 packets/s, 100 ms base RTT (BDP 1000 packets), a
    /// 250-packet buffer (maxRTT ≈ 1.25 minRTT). H-TCP settles at
    /// β = minRTT/maxRTT ≈ 0.8 and refills the pipe within seconds, where
    /// Reno would need hundreds of RTTs.
    #[test]
    fn fluid_htcp_backs_off_by_min_over_max_rtt_and_recovers_fast() {
        let path = Path {
            rate_pps: 10_000,
            base_rtt_us: 100_000,
            buffer_pkts: 250,
        };
        let mut f = Fluid::new(Cc::from_name("htcp").unwrap(), path);
        f.run_for_us(60_000_000);
        let ev = &f.recoveries;
        assert!(ev.len() >= 5, "{ev:?}");
        // the first event has β 0.5 (mode switch off), later ones ≈ 0.8
        assert_eq!(ev[0].ssthresh, ev[0].cwnd_before / 2);
        let last = ev[ev.len() - 1];
        let ratio = last.ssthresh as f64 / last.cwnd_before as f64;
        assert!((0.7..=0.8).contains(&ratio), "{ev:?}");
        // cycles of a few seconds (Reno: ~300 RTTs ≈ 30+ s)
        for w in ev[2..].windows(2) {
            let gap = (w[1].at_us - w[0].at_us) as f64 / 1e6;
            assert!((1.0..10.0).contains(&gap), "{gap} s");
        }
    }
}
