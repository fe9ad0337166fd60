//! `illinois` — TCP-Illinois as Linux runs it (net/ipv4/tcp_illinois.c:
//! `rtt_reset`, `tcp_illinois_init`, `tcp_illinois_acked`, `max_delay`,
//! `avg_delay`, `alpha`, `beta`, `update_params`, `tcp_illinois_state`,
//! `tcp_illinois_cong_avoid`, `tcp_illinois_ssthresh`, `tcp_illinois_info`;
//! Liu, Başar & Srikant, Performance Evaluation 65(6), 2008;
//! docs/semantics/tcp.md §18.6).
//!
//! Units: packets; RTTs and delays in µs; α fixed point << 7, β << 6.
//! Module parameters (defaults): `win_thresh` 15, `theta` 5.
//!
//! Loss-based AIMD whose α and β follow the queueing delay, recomputed
//! once per RTT from the RTT samples of that RTT: with da the average and
//! dm the largest queueing delay seen (RTT − base RTT), α falls from 10
//! (da ≤ dm/100) along a hyperbola to 0.3 (da = dm), and β rises linearly
//! from 1/8 (da ≤ dm/10) to 1/2 (da ≥ 8dm/10). Back to 10 needs `theta`
//! consecutive low-delay RTTs. Below `win_thresh` packets, or after an RTO,
//! it is Reno (α 1, β 1/2). Undo is Reno's.

use super::{
    after, tcp_reno_undo_cwnd, tcp_slow_start, AckSample, CaState, CcInfo, CcProfile, CcSock,
    CongestionOps,
};
use crate::rng::ComponentRng;

const ALPHA_SHIFT: u32 = 7;
const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// ≈ 0.3 (38/128)
const ALPHA_MIN: u32 = (3 * ALPHA_SCALE) / 10;
/// 10.0
const ALPHA_MAX: u32 = 10 * ALPHA_SCALE;
/// 1.0
const ALPHA_BASE: u32 = ALPHA_SCALE;
/// RTT samples are capped so that delay·`ALPHA_MAX` fits in 32 bits (3.3 s).
const RTT_MAX: u32 = u32::MAX / ALPHA_MAX;
const BETA_SHIFT: u32 = 6;
const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// 0.125
const BETA_MIN: u32 = BETA_SCALE / 8;
/// 0.5
const BETA_MAX: u32 = BETA_SCALE / 2;
const BETA_BASE: u32 = BETA_MAX;

/// Illinois' module parameters (Linux defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IllinoisParams {
    /// below this cwnd, Reno's α and β
    pub win_thresh: u32,
    /// low-delay RTTs before α returns to its maximum
    pub theta: u32,
}

impl Default for IllinoisParams {
    fn default() -> Self {
        IllinoisParams {
            win_thresh: 15,
            theta: 5,
        }
    }
}

/// `struct illinois`.
#[derive(Clone, Debug, Default)]
pub struct Illinois {
    params: IllinoisParams,
    sum_rtt: u64,
    cnt_rtt: u16,
    base_rtt: u32,
    max_rtt: u32,
    end_seq: u32,
    alpha: u32,
    beta: u32,
    acked: u16,
    rtt_above: bool,
    rtt_low: u8,
}

impl Illinois {
    /// (α << 7, β << 6).
    pub fn alpha_beta(&self) -> (u32, u32) {
        (self.alpha, self.beta)
    }

    /// `rtt_reset`: a new measurement RTT ends at `snd_nxt`.
    fn rtt_reset(&mut self, tp: &CcSock) {
        self.end_seq = tp.snd_nxt;
        self.cnt_rtt = 0;
        self.sum_rtt = 0;
    }

    /// `alpha`: α from the average (`da`) and maximum (`dm`) queueing delay.
    fn alpha(&mut self, mut da: u32, mut dm: u32) -> u32 {
        let d1 = dm / 100;
        if da <= d1 {
            if !self.rtt_above {
                return ALPHA_MAX;
            }
            self.rtt_low = self.rtt_low.wrapping_add(1);
            if (self.rtt_low as u32) < self.params.theta {
                return self.alpha;
            }
            self.rtt_low = 0;
            self.rtt_above = false;
            return ALPHA_MAX;
        }
        self.rtt_above = true;
        dm -= d1;
        da -= d1;
        dm.wrapping_mul(ALPHA_MAX)
            / dm.wrapping_add(da.wrapping_mul(ALPHA_MAX - ALPHA_MIN) / ALPHA_MIN)
    }

    /// `update_params`: once per RTT.
    fn update_params(&mut self, tp: &CcSock) {
        if tp.snd_cwnd < self.params.win_thresh {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
        } else if self.cnt_rtt > 0 {
            let dm = self.max_rtt.wrapping_sub(self.base_rtt);
            let da = (self.sum_rtt / self.cnt_rtt as u64).wrapping_sub(self.base_rtt as u64) as u32;
            self.alpha = self.alpha(da, dm);
            self.beta = beta(da, dm);
        }
        self.rtt_reset(tp);
    }
}

/// `beta`: β from the average and maximum queueing delay.
fn beta(da: u32, dm: u32) -> u32 {
    let d2 = dm / 10;
    if da <= d2 {
        return BETA_MIN;
    }
    let d3 = (8 * dm) / 10;
    if da >= d3 || d3 <= d2 {
        return BETA_MAX;
    }
    (BETA_MIN
        .wrapping_mul(d3)
        .wrapping_sub(BETA_MAX.wrapping_mul(d2))
        .wrapping_add((BETA_MAX - BETA_MIN).wrapping_mul(da)))
        / (d3 - d2)
}

impl CongestionOps for Illinois {
    const NAME: &'static str = "illinois";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Illinois {
        Illinois::default()
    }

    /// `tcp_illinois_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.alpha = ALPHA_MAX;
        self.beta = BETA_BASE;
        self.base_rtt = 0x7fff_ffff;
        self.max_rtt = 0;
        self.acked = 0;
        self.rtt_low = 0;
        self.rtt_above = false;
        self.rtt_reset(tp);
    }

    /// `tcp_illinois_ssthresh`: cwnd − cwnd·β.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        tp.snd_cwnd
            .wrapping_sub(tp.snd_cwnd.wrapping_mul(self.beta) >> BETA_SHIFT)
            .max(2)
    }

    /// `tcp_illinois_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, ack: u32, acked: u32) {
        if after(ack, self.end_seq) {
            self.update_params(tp);
        }
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            tcp_slow_start(tp, acked);
            return;
        }
        // the packets of this ACK (from pkts_acked), then 1 per call
        tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(self.acked as u32);
        self.acked = 1;
        let delta = tp.snd_cwnd_cnt.wrapping_mul(self.alpha) >> ALPHA_SHIFT;
        if delta >= tp.snd_cwnd {
            tp.snd_cwnd = (tp.snd_cwnd + delta / tp.snd_cwnd).min(tp.snd_cwnd_clamp);
            tp.snd_cwnd_cnt = 0;
        }
    }

    /// `tcp_illinois_state`: an RTO returns to Reno's α and β.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.alpha = ALPHA_BASE;
            self.beta = BETA_BASE;
            self.rtt_low = 0;
            self.rtt_above = false;
            self.rtt_reset(tp);
        }
    }

    /// `tcp_illinois_acked`.
    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &AckSample) {
        self.acked = sample.pkts_acked as u16;
        if sample.rtt_us < 0 {
            return;
        }
        let rtt = (sample.rtt_us as i32 as u32).min(RTT_MAX);
        if self.base_rtt > rtt {
            self.base_rtt = rtt;
        }
        if self.max_rtt < rtt {
            self.max_rtt = rtt;
        }
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
        self.sum_rtt += rtt as u64;
    }

    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    /// `tcp_illinois_info`: the average RTT of this RTT, the base RTT.
    fn get_info(&self, _tp: &CcSock) -> Option<CcInfo> {
        let rtt = if self.cnt_rtt > 0 {
            (self.sum_rtt / self.cnt_rtt as u64) as u32
        } else {
            0
        };
        Some(CcInfo::Vegas {
            enabled: 1,
            rttcnt: self.cnt_rtt as u32,
            rtt,
            minrtt: self.base_rtt,
        })
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("alpha", self.alpha as f64 / ALPHA_SCALE as f64));
        out.push(("beta", self.beta as f64 / BETA_SCALE as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(cwnd: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 2,
            snd_nxt: 9000,
            is_cwnd_limited: true,
            ..CcSock::default()
        }
    }

    /// dm = 10 000 µs: d1 = 100. da = 100 → 10.0 (1280); da = 1100:
    /// 9900·1280/(9900 + 1000·1242/38) = 12 672 000/(9900 + 32 684) = 297
    /// (2.3); da = 10 000: 12 672 000/(9900 + 323 573) = 38 (0.3).
    #[test]
    fn alpha_from_delay() {
        let mut i = Illinois {
            alpha: 999,
            ..Illinois::default()
        };
        assert_eq!(i.alpha(100, 10_000), ALPHA_MAX);
        assert_eq!(i.alpha(1_100, 10_000), 297);
        assert!(i.rtt_above);
        assert_eq!(i.alpha(10_000, 10_000), 38);
        // after high delay, low delay keeps α for theta − 1 = 4 RTTs
        i.alpha = 38;
        for _ in 0..4 {
            assert_eq!(i.alpha(0, 10_000), 38);
        }
        assert_eq!(i.alpha(0, 10_000), ALPHA_MAX);
        assert!(!i.rtt_above);
    }

    /// dm = 10 000: d2 = 1000, d3 = 8000. da ≤ 1000 → 8 (1/8); ≥ 8000 →
    /// 32 (1/2); da = 4500: (64 000 − 32 000 + 108 000)/7000 = 20.
    #[test]
    fn beta_from_delay() {
        assert_eq!(beta(1_000, 10_000), 8);
        assert_eq!(beta(8_000, 10_000), 32);
        assert_eq!(beta(4_500, 10_000), 20);
        assert_eq!(beta(1_001, 10_000), 8); // (64000 − 32000 + 24024)/7000
                                            // dm 9: d2 = 0, d3 = 7: (8·7 − 0 + 24·5)/7 = 176/7 = 25
        assert_eq!(beta(5, 9), 25);
    }

    #[test]
    fn params_update_once_per_rtt_from_the_samples() {
        let mut i = Illinois::default();
        let mut tp = ca(100);
        i.init(&mut tp);
        assert_eq!(i.end_seq, 9000);
        for rtt in [20_000, 30_000, 25_000] {
            i.pkts_acked(
                &mut tp,
                &AckSample {
                    pkts_acked: 2,
                    rtt_us: rtt,
                    in_flight: 0,
                },
            );
        }
        // base 20 000, max 30 000: dm 10 000, da = 25 000 − 20 000 = 5000
        tp.snd_nxt = 12_000;
        i.cong_avoid(&mut tp, 9001, 2);
        let da = 5_000u32;
        let want_alpha = 9_900 * 1_280 / (9_900 + (da - 100) * 1_242 / 38);
        assert_eq!(i.alpha_beta(), (want_alpha, beta(da, 10_000)));
        // 12 672 000/(9900 + 160 152) = 74; (64 000 − 32 000 + 120 000)/7000 = 21
        assert_eq!(i.alpha_beta(), (74, 21));
        assert_eq!((i.end_seq, i.cnt_rtt), (12_000, 0));
        // ssthresh: 100 − 100·21/64 = 100 − 32 = 68
        assert_eq!(i.ssthresh(&tp), 68);
        // small windows: Reno's values
        let mut tp = ca(10);
        i.cong_avoid(&mut tp, 12_001, 1);
        assert_eq!(i.alpha_beta(), (ALPHA_BASE, BETA_BASE));
    }

    /// α = 10: cnt grows by the packets of the ACK; with 2 per ACK at cwnd
    /// 100, delta = cnt·1280/128 reaches 100 after cnt = 10: +1.
    #[test]
    fn increase_is_alpha_per_rtt() {
        let mut i = Illinois::default();
        let mut tp = ca(100);
        i.init(&mut tp);
        i.end_seq = u32::MAX / 2; // no parameter update
        for n in 1..=5 {
            i.acked = 2;
            i.cong_avoid(&mut tp, 0, 2);
            if n < 5 {
                assert_eq!(tp.snd_cwnd, 100);
            }
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (101, 0));
        // the RTO resets to Reno's α/β
        i.set_state(&mut tp, CaState::Loss);
        assert_eq!(i.alpha_beta(), (128, 32));
        assert_eq!(i.ssthresh(&ca(100)), 50);
    }
}
