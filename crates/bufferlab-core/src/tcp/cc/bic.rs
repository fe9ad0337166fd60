//! `bic` — BIC-TCP as Linux runs it (net/ipv4/tcp_bic.c: `bictcp_reset`,
//! `bictcp_init`, `bictcp_update`, `bictcp_cong_avoid`,
//! `bictcp_recalc_ssthresh`, `bictcp_state`, `bictcp_acked`; Xu, Harfoush &
//! Rhee, INFOCOM 2004; docs/semantics/tcp.md §18.3).
//!
//! Units: packets, jiffies. Module parameters (defaults): `fast_convergence`
//! 1, `max_increment` 16, `low_window` 14, `beta` 819/1024, `initial_ssthresh`
//! 0 (none), `smooth_part` 20; `BICTCP_B` 4.
//!
//! Above `low_window`, cwnd approaches the window of the last loss
//! (`last_max_cwnd`) by binary search: the per-RTT increase is a quarter of
//! the remaining distance, at most `max_increment` and at least
//! B/`smooth_part` near the target; past it, "max probing" grows slowly
//! first, then linearly. The increase is expressed as `cnt`, acks per +1,
//! corrected by the measured packets-per-ACK ratio (`delayed_ack`, << 4).
//! Loss: cwnd·819/1024 (Reno's halving at or below `low_window`), with fast
//! convergence lowering the remembered maximum when it was not reached.
//!
//! [lab2019] (before Linux 5.6's stretch-ACK fixes): every ACK counts as
//! one packet towards `cnt`, and acks left over when slow start reaches
//! ssthresh are lost.

use super::{
    tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start, AckSample, CaState, CcProfile, CcSock,
    CongestionOps, HZ,
};
use crate::rng::ComponentRng;

/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_B`: binary search divides the distance by this.
const BICTCP_B: u32 = 4;
/// `ACK_RATIO_SHIFT`.
const ACK_RATIO_SHIFT: u32 = 4;

/// BIC's module parameters (Linux defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BicParams {
    pub fast_convergence: bool,
    pub max_increment: u32,
    pub low_window: u32,
    pub beta: u32,
    pub initial_ssthresh: u32,
    pub smooth_part: u32,
}

impl Default for BicParams {
    fn default() -> Self {
        BicParams {
            fast_convergence: true,
            max_increment: 16,
            low_window: 14,
            beta: 819,
            initial_ssthresh: 0,
            smooth_part: 20,
        }
    }
}

/// `struct bictcp`.
#[derive(Clone, Debug)]
pub struct Bic {
    params: BicParams,
    profile: CcProfile,
    /// acks per +1 packet
    cnt: u32,
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: u32,
    epoch_start: u32,
    /// packets per ACK << 4
    delayed_ack: u32,
}

impl Default for Bic {
    fn default() -> Self {
        Bic::with_params(BicParams::default())
    }
}

impl Bic {
    pub fn with_params(params: BicParams) -> Bic {
        let mut b = Bic {
            params,
            profile: CcProfile::Modern,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            epoch_start: 0,
            delayed_ack: 0,
        };
        b.reset();
        b
    }

    /// `bictcp_reset`.
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.epoch_start = 0;
        self.delayed_ack = 2 << ACK_RATIO_SHIFT;
    }

    /// `bictcp_update`: `cnt` for the current cwnd (at most once per HZ/32
    /// jiffies while cwnd is unchanged).
    fn update(&mut self, cwnd: u32, now: u32) {
        let p = &self.params;
        if self.last_cwnd == cwnd && (now.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32 {
            return;
        }
        self.last_cwnd = cwnd;
        self.last_time = now;
        if self.epoch_start == 0 {
            self.epoch_start = now;
        }
        if cwnd <= p.low_window {
            self.cnt = cwnd;
            return;
        }
        if cwnd < self.last_max_cwnd {
            // binary search towards last_max_cwnd
            let dist = (self.last_max_cwnd - cwnd) / BICTCP_B;
            self.cnt = if dist > p.max_increment {
                cwnd / p.max_increment
            } else if dist <= 1 {
                cwnd.wrapping_mul(p.smooth_part) / BICTCP_B
            } else {
                cwnd / dist
            };
        } else if cwnd < self.last_max_cwnd.wrapping_add(BICTCP_B) {
            // max probing: slow start near the old maximum
            self.cnt = cwnd.wrapping_mul(p.smooth_part) / BICTCP_B;
        } else if cwnd
            < self
                .last_max_cwnd
                .wrapping_add(p.max_increment * (BICTCP_B - 1))
        {
            self.cnt = cwnd.wrapping_mul(BICTCP_B - 1) / (cwnd - self.last_max_cwnd);
        } else {
            self.cnt = cwnd / p.max_increment;
        }
        // no loss yet: at most 5 % growth per RTT
        if self.last_max_cwnd == 0 && self.cnt > 20 {
            self.cnt = 20;
        }
        self.cnt = (self.cnt << ACK_RATIO_SHIFT) / self.delayed_ack;
        if self.cnt == 0 {
            self.cnt = 1;
        }
    }
}

impl CongestionOps for Bic {
    const NAME: &'static str = "bic";

    fn create(profile: CcProfile, _rng: ComponentRng) -> Bic {
        Bic {
            profile,
            ..Bic::default()
        }
    }

    /// `bictcp_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.reset();
        if self.params.initial_ssthresh != 0 {
            tp.snd_ssthresh = self.params.initial_ssthresh;
        }
    }

    /// `bictcp_recalc_ssthresh`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        let p = &self.params;
        let cwnd = tp.snd_cwnd;
        self.epoch_start = 0;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && p.fast_convergence {
            cwnd.wrapping_mul(BETA_SCALE + p.beta) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        if cwnd <= p.low_window {
            (cwnd >> 1).max(2)
        } else {
            (cwnd.wrapping_mul(p.beta) / BETA_SCALE).max(2)
        }
    }

    /// `bictcp_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, mut acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if self.profile == CcProfile::Lab2019 {
            if tp.in_slow_start() {
                tcp_slow_start(tp, acked);
            } else {
                self.update(tp.snd_cwnd, tp.jiffies);
                tcp_cong_avoid_ai(tp, self.cnt, 1);
            }
            return;
        }
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tp.snd_cwnd, tp.jiffies);
        tcp_cong_avoid_ai(tp, self.cnt, acked);
    }

    /// `bictcp_state`: an RTO forgets everything.
    fn set_state(&mut self, _tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
        }
    }

    /// `bictcp_acked`: ratio = 15/16 ratio + packets acked, in Open.
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        if tp.ca_state == CaState::Open {
            self.delayed_ack = self.delayed_ack.wrapping_add(
                sample
                    .pkts_acked
                    .wrapping_sub(self.delayed_ack >> ACK_RATIO_SHIFT),
            );
        }
    }

    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("last_max_cwnd", self.last_max_cwnd as f64));
        out.push(("cnt", self.cnt as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(cwnd: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 10,
            is_cwnd_limited: true,
            jiffies: 1000,
            ..CcSock::default()
        }
    }

    /// `cnt` for delayed_ack = 32 (2 packets per ACK, the initial value):
    /// the window-based value is halved by the << 4 / 32 correction.
    #[test]
    fn binary_search_increments() {
        let cnt = |last_max: u32, cwnd: u32| {
            let mut b = Bic {
                last_max_cwnd: last_max,
                ..Bic::default()
            };
            b.update(cwnd, 1000);
            b.cnt
        };
        // at or below low_window: Reno, cnt = cwnd (no ACK-ratio correction)
        assert_eq!(cnt(0, 14), 14);
        // dist = (200 − 100)/4 = 25 > 16: linear, 100/16 = 6 → 3
        assert_eq!(cnt(200, 100), 3);
        // dist = (140 − 100)/4 = 10: cnt = 100/10 = 10 → 5
        assert_eq!(cnt(140, 100), 5);
        // dist = 1: cnt = 100·20/4 = 500 → 250 (almost flat near Wmax)
        assert_eq!(cnt(105, 100), 250);
        // just past Wmax (< Wmax + 4): 500 → 250
        assert_eq!(cnt(98, 100), 250);
        // Wmax + 4 ≤ cwnd < Wmax + 48: cnt = 100·3/(100 − 90) = 30 → 15
        assert_eq!(cnt(90, 100), 15);
        // far past: linear 100/16 = 6 → 3
        assert_eq!(cnt(40, 100), 3);
        // before any loss (last_max 0): ≥ 5 %/RTT, cnt ≤ 20 → 10
        assert_eq!(cnt(0, 1000), 10);
    }

    #[test]
    fn update_is_rate_limited_while_cwnd_is_unchanged() {
        let mut b = Bic {
            last_max_cwnd: 140,
            ..Bic::default()
        };
        b.update(100, 1000);
        b.last_max_cwnd = 200;
        b.update(100, 1007); // HZ/32 = 7 jiffies: not yet
        assert_eq!(b.cnt, 5);
        b.update(100, 1008);
        assert_eq!(b.cnt, 3);
        assert_eq!(b.epoch_start, 1000);
    }

    /// cwnd 100 after Wmax 120: fast convergence remembers 100·1843/2048 =
    /// 89 and the window drops to 100·819/1024 = 79; at 14: Reno's 7.
    #[test]
    fn loss_multiplies_by_beta_with_fast_convergence() {
        let mut b = Bic {
            last_max_cwnd: 120,
            ..Bic::default()
        };
        assert_eq!(b.ssthresh(&ca(100)), 79);
        assert_eq!(b.last_max_cwnd, 89);
        assert_eq!(b.ssthresh(&ca(150)), 119);
        assert_eq!(b.last_max_cwnd, 150);
        assert_eq!(b.ssthresh(&ca(14)), 7);
        assert_eq!(b.ssthresh(&ca(3)), 2);
    }

    #[test]
    fn ack_ratio_is_a_sixteenth_ewma_in_open_only() {
        let mut b = Bic::default();
        let mut tp = ca(20);
        let s = |n| AckSample {
            pkts_acked: n,
            rtt_us: 1,
            in_flight: 0,
        };
        // 32 + 1 − 2 = 31; 31 + 1 − 1 = 31
        b.pkts_acked(&mut tp, &s(1));
        assert_eq!(b.delayed_ack, 31);
        b.pkts_acked(&mut tp, &s(1));
        assert_eq!(b.delayed_ack, 31);
        tp.ca_state = CaState::Recovery;
        b.pkts_acked(&mut tp, &s(10));
        assert_eq!(b.delayed_ack, 31);
        b.set_state(&mut tp, CaState::Loss);
        assert_eq!(b.delayed_ack, 32);
    }

    #[test]
    fn congestion_avoidance_uses_cnt_with_ai() {
        let mut b = Bic::default();
        let mut tp = ca(100);
        tp.snd_ssthresh = 50;
        b.last_max_cwnd = 140; // cnt 5
        for _ in 0..5 {
            b.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (101, 0));
        // slow start leftovers go to AI: 10 → 14 (ssthresh 14), 2 left
        let mut b = Bic::default();
        let mut tp = ca(10);
        tp.snd_ssthresh = 14;
        b.cong_avoid(&mut tp, 0, 6);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (14, 2));
    }

    /// [lab2019]: a 2-packet ACK counts one towards cnt, leftovers are lost.
    #[test]
    fn lab2019_counts_acks() {
        let mut b = Bic::create(CcProfile::Lab2019, ComponentRng::new(0, "t"));
        let mut tp = ca(100);
        tp.snd_ssthresh = 50;
        b.last_max_cwnd = 140; // cnt 5
        for _ in 0..4 {
            b.cong_avoid(&mut tp, 0, 2);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (100, 4));
        let mut b = Bic::create(CcProfile::Lab2019, ComponentRng::new(0, "t"));
        let mut tp = ca(10);
        tp.snd_ssthresh = 14;
        b.cong_avoid(&mut tp, 0, 6);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (14, 0));
    }
}
