//! `hybla` — TCP Hybla as Linux runs it (net/ipv4/tcp_hybla.c:
//! `hybla_recalc_param`, `hybla_init`, `hybla_state`, `hybla_fraction`,
//! `hybla_cong_avoid`; Caini & Firrincieli, Int. J. Satellite Commun. 22(5),
//! 2004; docs/semantics/tcp.md §18.8).
//!
//! Units: packets; `srtt_us` µs << 3; ρ fixed point << 3, ρ² << 7,
//! increments << 7. Module parameter: `rtt0` 25 ms.
//!
//! Hybla makes a long-RTT flow grow as a flow with RTT `rtt0` would:
//! ρ = max(RTT/rtt0, 1) from the smallest smoothed RTT seen; slow start
//! adds 2^ρ − 1 packets per ACK, congestion avoidance ρ²/cwnd (fractions
//! carried in `snd_cwnd_cents`). The initial window is ρ packets (cwnd 1
//! under 25 ms); the clamp is 65 535. Outside Open it is Reno; loss
//! handling is Reno's.

use super::{tcp_reno_cong_avoid, tcp_reno_ssthresh, CaState, CcProfile, CcSock, CongestionOps};
use crate::rng::ComponentRng;

/// Hybla's module parameter (Linux default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HyblaParams {
    /// reference RTT, ms
    pub rtt0: u32,
}

impl Default for HyblaParams {
    fn default() -> Self {
        HyblaParams { rtt0: 25 }
    }
}

/// `hybla_fraction`: 2^(k/8) << 7 for k = 0..7.
const FRACTIONS: [u32; 8] = [128, 139, 152, 165, 181, 197, 215, 234];

/// `struct hybla`.
#[derive(Clone, Debug, Default)]
pub struct Hybla {
    params: HyblaParams,
    hybla_en: bool,
    snd_cwnd_cents: u32,
    rho: u32,
    rho2: u32,
    rho_3ls: u32,
    rho2_7ls: u32,
    minrtt_us: u32,
}

impl Hybla {
    /// ρ << 3.
    pub fn rho_3ls(&self) -> u32 {
        self.rho_3ls
    }

    /// `hybla_recalc_param`.
    fn recalc_param(&mut self, tp: &CcSock) {
        self.rho_3ls = (tp.srtt_us / (self.params.rtt0 * 1000)).max(8);
        self.rho = self.rho_3ls >> 3;
        self.rho2_7ls = self.rho_3ls.wrapping_mul(self.rho_3ls) << 1;
        self.rho2 = self.rho2_7ls >> 7;
    }
}

fn fraction(odds: u32) -> u32 {
    FRACTIONS.get(odds as usize).copied().unwrap_or(128)
}

impl CongestionOps for Hybla {
    const NAME: &'static str = "hybla";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Hybla {
        Hybla::default()
    }

    /// `hybla_init`: the first ρ from the handshake's srtt; cwnd = ρ.
    fn init(&mut self, tp: &mut CcSock) {
        self.rho = 0;
        self.rho2 = 0;
        self.rho_3ls = 0;
        self.rho2_7ls = 0;
        self.snd_cwnd_cents = 0;
        self.hybla_en = true;
        tp.snd_cwnd = 2;
        tp.snd_cwnd_clamp = 65_535;
        self.recalc_param(tp);
        self.minrtt_us = tp.srtt_us;
        tp.snd_cwnd = self.rho;
    }

    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// `hybla_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, acked: u32) {
        if tp.srtt_us < self.minrtt_us {
            self.recalc_param(tp);
            self.minrtt_us = tp.srtt_us;
        }
        if !tp.is_cwnd_limited {
            return;
        }
        if !self.hybla_en {
            tcp_reno_cong_avoid(tp, acked);
            return;
        }
        if self.rho == 0 {
            self.recalc_param(tp);
        }
        let rho_fractions = self.rho_3ls - (self.rho << 3);
        let slow_start = tp.in_slow_start();
        let increment = if slow_start {
            // 2^ρ − 1 packets, << 7: 2^int · 2^frac − 1
            (1u32 << self.rho.min(16)).wrapping_mul(fraction(rho_fractions)) - 128
        } else {
            // ρ²/cwnd, << 7
            let inc = self.rho2_7ls / tp.snd_cwnd;
            if inc < 128 {
                tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(1);
            }
            inc
        };
        let odd = increment % 128;
        tp.snd_cwnd = tp.snd_cwnd.wrapping_add(increment >> 7);
        self.snd_cwnd_cents += odd;
        while self.snd_cwnd_cents >= 128 {
            tp.snd_cwnd = tp.snd_cwnd.wrapping_add(1);
            self.snd_cwnd_cents -= 128;
            tp.snd_cwnd_cnt = 0;
        }
        // no increment at all for a window's worth of ACKs: +1
        if increment == 0 && odd == 0 && tp.snd_cwnd_cnt >= tp.snd_cwnd {
            tp.snd_cwnd = tp.snd_cwnd.wrapping_add(1);
            tp.snd_cwnd_cnt = 0;
        }
        if slow_start {
            tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_ssthresh);
        }
        tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_cwnd_clamp);
    }

    /// `hybla_state`: Hybla only in Open.
    fn set_state(&mut self, _tp: &mut CcSock, new_state: CaState) {
        self.hybla_en = new_state == CaState::Open;
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("rho", self.rho_3ls as f64 / 8.0));
    }
}

#[cfg(test)]
mod tests {
    use super::super::TCP_INFINITE_SSTHRESH;
    use super::*;

    fn ca(cwnd: u32, srtt_ms: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            srtt_us: (srtt_ms * 1000) << 3,
            is_cwnd_limited: true,
            ..CcSock::default()
        }
    }

    /// srtt 600 ms: ρ<<3 = 4 800 000/25 000 = 192 → ρ 24, ρ²<<7 = 192²·2 =
    /// 73 728 (576 << 7); srtt 40 ms: 320 000/25 000 = 12 → ρ 1.5
    /// (integer 1), ρ² << 7 = 288 (2.25); under 25 ms ρ = 1.
    #[test]
    fn rho_from_the_smoothed_rtt() {
        let mut h = Hybla::default();
        let mut tp = ca(10, 600);
        h.init(&mut tp);
        assert_eq!(
            (h.rho_3ls, h.rho, h.rho2_7ls, h.rho2),
            (192, 24, 73_728, 576)
        );
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_clamp), (24, 65_535));
        let mut tp = ca(10, 40);
        h.init(&mut tp);
        assert_eq!((h.rho_3ls, h.rho, h.rho2_7ls, h.rho2), (12, 1, 288, 2));
        assert_eq!(tp.snd_cwnd, 1);
        let mut tp = ca(10, 10);
        h.init(&mut tp);
        assert_eq!((h.rho_3ls, h.rho), (8, 1));
    }

    /// ρ = 1.5 (rho_3ls 12, fraction index 4 → 181): slow start adds
    /// 2·181 − 128 = 234 (1.83 packets) per ACK: +1 and 106 cents, then +1
    /// and 212 − 128 = 84 cents → +2 on the second ACK.
    #[test]
    fn slow_start_adds_two_to_the_rho_minus_one() {
        let mut h = Hybla::default();
        let mut tp = ca(10, 40);
        h.init(&mut tp);
        tp.snd_cwnd = 10;
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd, h.snd_cwnd_cents), (11, 106));
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd, h.snd_cwnd_cents), (13, 84));
        // ρ = 24 at 600 ms: 2^16 (capped) · 128 − 128 per ACK → +65 535,
        // clamped at ssthresh
        let mut tp = ca(24, 600);
        h.init(&mut tp);
        tp.snd_ssthresh = 100;
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!(tp.snd_cwnd, 100);
    }

    /// Congestion avoidance at ρ² = 2.25 (288 << 7 units), cwnd 100:
    /// 288/100 = 2 per ACK (< 128: the idle counter also counts); 64 ACKs
    /// make 128 cents: +1.
    #[test]
    fn congestion_avoidance_adds_rho_squared_per_rtt() {
        let mut h = Hybla::default();
        let mut tp = ca(10, 40);
        h.init(&mut tp);
        tp.snd_cwnd = 100;
        tp.snd_ssthresh = 50;
        for _ in 0..63 {
            h.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(
            (tp.snd_cwnd, h.snd_cwnd_cents, tp.snd_cwnd_cnt),
            (100, 126, 63)
        );
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!(
            (tp.snd_cwnd, h.snd_cwnd_cents, tp.snd_cwnd_cnt),
            (101, 0, 0)
        );
        // outside Open: Reno (counter +1 at w = 101)
        h.set_state(&mut tp, CaState::Recovery);
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (101, 1));
    }

    #[test]
    fn a_smaller_srtt_recomputes_rho() {
        let mut h = Hybla::default();
        let mut tp = ca(10, 600);
        h.init(&mut tp);
        tp.srtt_us = 100_000 << 3; // 100 ms: ρ = 4
        tp.is_cwnd_limited = false;
        h.cong_avoid(&mut tp, 0, 1);
        assert_eq!((h.rho, h.minrtt_us), (4, 800_000));
    }
}
