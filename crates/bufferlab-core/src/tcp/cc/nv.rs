//! `nv` — TCP-NV ("New Vegas") as Linux runs it (net/ipv4/tcp_nv.c:
//! `tcpnv_reset`, `tcpnv_init`, `nv_get_bounded_rtt`, `tcpnv_cong_avoid`,
//! `tcpnv_recalc_ssthresh`, `tcpnv_state`, `tcpnv_acked`, `tcpnv_get_info`;
//! Brakmo, Netdev 1.1, 2016; docs/semantics/tcp.md §18.10).
//!
//! Units: packets, bytes, µs, jiffies; rates in 100 bit/s.
//! Module parameters (defaults): `nv_pad` 10, `nv_pad_buffer` 2,
//! `nv_reset_period` 5 s, `nv_min_cwnd` 2, `nv_cong_dec_mult` 30 % (38/128),
//! `nv_ssthresh_factor` 8 (= 1), `nv_rtt_factor` 128 (EWMA ½),
//! `nv_loss_dec_factor` 819/1024, `nv_cwnd_growth_rate_neg` 8,
//! `nv_cwnd_growth_rate_pos` 0, `nv_dec_eval_min_calls` 60,
//! `nv_inc_eval_min_calls` 20, `nv_ssthresh_eval_min_calls` 30,
//! `nv_stop_rtt_cnt` 10, `nv_rtt_min_cnt` 2. No BPF base RTT.
//!
//! Once per RTT NV compares cwnd with the window the best rate of that RTT
//! would need at the minimum RTT plus `nv_pad` packets: above it (after at
//! least 2 RTTs and 60 samples, 30 in slow start) it is congested — growth
//! stops, ssthresh = that window and cwnd drops by 30 % of the excess;
//! under it by more than `nv_pad_buffer` growth (Reno's) is allowed again.
//! The minimum RTT is re-learnt every 3.75–6.25 s (random). Loss: ×0.8.
//! Undo is Reno's.

use super::{
    before, tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start, AckSample, CaState, CcInfo,
    CcProfile, CcSock, CongestionOps, HZ, TCP_INFINITE_SSTHRESH,
};
use crate::rng::ComponentRng;

const NV_PAD: u32 = 10;
const NV_PAD_BUFFER: u32 = 2;
const NV_RESET_PERIOD: u32 = 5;
const NV_MIN_CWND_PARAM: u32 = 2;
const NV_CONG_DEC_MULT: u32 = 30 * 128 / 100;
const NV_SSTHRESH_FACTOR: u32 = 8;
const NV_RTT_FACTOR: u64 = 128;
const NV_LOSS_DEC_FACTOR: u32 = 819;
const NV_CWND_GROWTH_RATE_NEG: i32 = 8;
const NV_CWND_GROWTH_RATE_POS: i32 = 0;
const NV_DEC_EVAL_MIN_CALLS: u8 = 60;
const NV_INC_EVAL_MIN_CALLS: u8 = 20;
const NV_SSTHRESH_EVAL_MIN_CALLS: u8 = 30;
const NV_STOP_RTT_CNT: u8 = 10;
const NV_RTT_MIN_CNT: u8 = 2;

const NV_INIT_RTT: u32 = u32::MAX;
const NV_MIN_CWND: u8 = 4;
const NV_MIN_CWND_GROW: u8 = 2;
const NV_TSO_CWND_BOUND: u8 = 80;

/// `struct tcpnv`.
#[derive(Clone, Debug)]
pub struct Nv {
    rng: ComponentRng,
    min_rtt_reset_jiffies: u32,
    /// < 0: less than one packet per RTT
    cwnd_growth_factor: i8,
    allow_cwnd_growth: bool,
    reset: bool,
    catchup: bool,
    eval_call_cnt: u8,
    /// NV's own minimum cwnd for decisions (grows with TSO/LRO)
    min_cwnd: u8,
    rtt_cnt: u8,
    last_rtt: u32,
    min_rtt: u32,
    min_rtt_new: u32,
    base_rtt: u32,
    lower_bound_rtt: u32,
    rtt_max_rate: u32,
    rtt_start_seq: u32,
    last_snd_una: u32,
    no_cong_cnt: u32,
}

impl Nv {
    fn new(rng: ComponentRng) -> Nv {
        Nv {
            rng,
            min_rtt_reset_jiffies: 0,
            cwnd_growth_factor: 0,
            allow_cwnd_growth: false,
            reset: false,
            catchup: false,
            eval_call_cnt: 0,
            min_cwnd: 0,
            rtt_cnt: 0,
            last_rtt: 0,
            min_rtt: 0,
            min_rtt_new: 0,
            base_rtt: 0,
            lower_bound_rtt: 0,
            rtt_max_rate: 0,
            rtt_start_seq: 0,
            last_snd_una: 0,
            no_cong_cnt: 0,
        }
    }

    /// `tcpnv_reset`.
    fn nv_reset(&mut self, tp: &CcSock) {
        self.reset = false;
        self.no_cong_cnt = 0;
        self.rtt_cnt = 0;
        self.last_rtt = 0;
        self.rtt_max_rate = 0;
        self.rtt_start_seq = tp.snd_una;
        self.eval_call_cnt = 0;
        self.last_snd_una = tp.snd_una;
    }

    /// `nv_get_bounded_rtt` (both bounds 0 without a BPF base RTT).
    fn bounded_rtt(&self, val: u32) -> u32 {
        if self.lower_bound_rtt > 0 && val < self.lower_bound_rtt {
            self.lower_bound_rtt
        } else if self.base_rtt > 0 && val > self.base_rtt {
            self.base_rtt
        } else {
            val
        }
    }
}

impl CongestionOps for Nv {
    const NAME: &'static str = "nv";

    fn create(_profile: CcProfile, rng: ComponentRng) -> Nv {
        Nv::new(rng)
    }

    /// `tcpnv_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.nv_reset(tp);
        self.base_rtt = 0;
        self.lower_bound_rtt = 0;
        self.allow_cwnd_growth = true;
        self.min_rtt_reset_jiffies = tp.jiffies.wrapping_add(2 * HZ);
        self.min_rtt = NV_INIT_RTT;
        self.min_rtt_new = NV_INIT_RTT;
        self.min_cwnd = NV_MIN_CWND;
        self.catchup = false;
        self.cwnd_growth_factor = 0;
    }

    /// `tcpnv_recalc_ssthresh`: ×819/1024.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        (tp.snd_cwnd.wrapping_mul(NV_LOSS_DEC_FACTOR) >> 10).max(2)
    }

    /// `tcpnv_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, mut acked: u32) {
        if !tp.is_cwnd_limited || !self.allow_cwnd_growth {
            return;
        }
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        let cnt = if self.cwnd_growth_factor < 0 {
            tp.snd_cwnd << (-self.cwnd_growth_factor) as u32
        } else {
            (tp.snd_cwnd >> self.cwnd_growth_factor as u32).max(4)
        };
        tcp_cong_avoid_ai(tp, cnt, acked);
    }

    /// `tcpnv_state`.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Open && self.reset {
            self.nv_reset(tp);
        } else if matches!(new_state, CaState::Loss | CaState::Cwr | CaState::Recovery) {
            self.reset = true;
            self.allow_cwnd_growth = false;
            if new_state == CaState::Loss {
                if self.cwnd_growth_factor > 0 {
                    self.cwnd_growth_factor = 0;
                }
                if NV_CWND_GROWTH_RATE_NEG > 0 && self.cwnd_growth_factor > -8 {
                    self.cwnd_growth_factor -= 1;
                }
            }
        }
    }

    /// `tcpnv_acked`: the congestion-avoidance decision (the kernel's two
    /// growth-factor branches kept apart).
    #[allow(clippy::if_same_then_else)]
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        if sample.rtt_us < 0 {
            return;
        }
        if !matches!(tp.ca_state, CaState::Open | CaState::Disorder) {
            return;
        }
        if self.catchup && tp.snd_cwnd >= NV_MIN_CWND_PARAM {
            self.catchup = false;
            self.allow_cwnd_growth = false;
        }
        let bytes_acked = tp.snd_una.wrapping_sub(self.last_snd_una);
        self.last_snd_una = tp.snd_una;
        if sample.in_flight == 0 {
            return;
        }
        let rtt_us = sample.rtt_us as i32 as u32;
        let mut avg_rtt = if self.last_rtt > 0 {
            ((rtt_us as u64 * NV_RTT_FACTOR + self.last_rtt as u64 * (256 - NV_RTT_FACTOR)) >> 8)
                as u32
        } else {
            self.min_rtt = rtt_us << 1;
            rtt_us
        };
        self.last_rtt = avg_rtt;
        // rate in 100 bit/s
        let rate = (sample.in_flight as u64 * 80_000 / avg_rtt.max(1) as u64) as u32;
        if self.rtt_max_rate < rate {
            self.rtt_max_rate = rate;
        }
        self.eval_call_cnt = self.eval_call_cnt.saturating_add(1);
        avg_rtt = self.bounded_rtt(avg_rtt);
        if avg_rtt < self.min_rtt {
            self.min_rtt = avg_rtt;
        }
        if avg_rtt < self.min_rtt_new {
            self.min_rtt_new = avg_rtt;
        }
        let now = tp.jiffies;
        if (now.wrapping_sub(self.min_rtt_reset_jiffies) as i32) >= 0 {
            // a warm reset: 3/4 to 5/4 of nv_reset_period, at random
            self.min_rtt = self.min_rtt_new;
            self.min_rtt_new = NV_INIT_RTT;
            let rand = self.rng.next_u32() & 0xff;
            self.min_rtt_reset_jiffies =
                now.wrapping_add((NV_RESET_PERIOD * (384 + rand) * HZ) >> 9);
            self.min_cwnd = (self.min_cwnd / 2).max(NV_MIN_CWND);
        }
        if !before(self.rtt_start_seq, tp.snd_una) {
            return;
        }
        // once per RTT
        self.rtt_start_seq = tp.snd_nxt;
        self.rtt_cnt = self.rtt_cnt.saturating_add(1);
        // a single call per RTT: cwnd too small to see (TSO/LRO); grow it
        if self.eval_call_cnt == 1
            && bytes_acked
                >= (self.min_cwnd as u32)
                    .wrapping_sub(1)
                    .wrapping_mul(tp.mss_cache)
            && self.min_cwnd < NV_TSO_CWND_BOUND + 1
        {
            self.min_cwnd = (self.min_cwnd + NV_MIN_CWND_GROW).min(NV_TSO_CWND_BOUND + 1);
            self.rtt_start_seq = tp
                .snd_nxt
                .wrapping_add((self.min_cwnd as u32).wrapping_mul(tp.mss_cache));
            self.eval_call_cnt = 0;
            self.allow_cwnd_growth = true;
            return;
        }
        // the window the best rate needs at min_rtt
        let cwnd_by_slope = ((self.rtt_max_rate as u64 * self.min_rtt as u64)
            / (80_000 * tp.mss_cache as u64)) as u32;
        let max_win = cwnd_by_slope.wrapping_add(NV_PAD);
        if tp.snd_cwnd > max_win {
            if self.rtt_cnt < NV_RTT_MIN_CNT {
                return;
            } else if tp.snd_ssthresh == TCP_INFINITE_SSTHRESH {
                if self.eval_call_cnt < NV_SSTHRESH_EVAL_MIN_CALLS {
                    return;
                }
            } else if self.eval_call_cnt < NV_DEC_EVAL_MIN_CALLS {
                if self.allow_cwnd_growth && self.rtt_cnt > NV_STOP_RTT_CNT {
                    self.allow_cwnd_growth = false;
                }
                return;
            }
            // congested
            self.allow_cwnd_growth = false;
            tp.snd_ssthresh = NV_SSTHRESH_FACTOR.wrapping_mul(max_win) >> 3;
            if tp.snd_cwnd - max_win > 2 {
                let dec = 2u32.max(((tp.snd_cwnd - max_win) * NV_CONG_DEC_MULT) >> 7);
                tp.snd_cwnd -= dec;
            } else if NV_CONG_DEC_MULT > 0 {
                tp.snd_cwnd = max_win;
            }
            if self.cwnd_growth_factor > 0 {
                self.cwnd_growth_factor = 0;
            }
            self.no_cong_cnt = 0;
        } else if tp.snd_cwnd <= max_win.wrapping_sub(NV_PAD_BUFFER) {
            // not congested: growth allowed
            if self.eval_call_cnt < NV_INC_EVAL_MIN_CALLS {
                return;
            }
            self.allow_cwnd_growth = true;
            self.no_cong_cnt += 1;
            if self.cwnd_growth_factor < 0
                && NV_CWND_GROWTH_RATE_NEG > 0
                && self.no_cong_cnt > NV_CWND_GROWTH_RATE_NEG as u32
            {
                self.cwnd_growth_factor += 1;
                self.no_cong_cnt = 0;
            } else if self.cwnd_growth_factor >= 0
                && NV_CWND_GROWTH_RATE_POS > 0
                && self.no_cong_cnt > NV_CWND_GROWTH_RATE_POS as u32
            {
                self.cwnd_growth_factor += 1;
                self.no_cong_cnt = 0;
            }
        } else {
            return;
        }
        self.eval_call_cnt = 0;
        self.rtt_cnt = 0;
        self.rtt_max_rate = 0;
        if tp.snd_cwnd < NV_MIN_CWND_PARAM {
            tp.snd_cwnd = NV_MIN_CWND_PARAM;
        }
    }

    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    /// `tcpnv_get_info`.
    fn get_info(&self, _tp: &CcSock) -> Option<CcInfo> {
        Some(CcInfo::Vegas {
            enabled: 1,
            rttcnt: self.rtt_cnt as u32,
            rtt: self.last_rtt,
            minrtt: self.min_rtt,
        })
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("min_rtt_us", self.min_rtt as f64));
        out.push(("allow_growth", self.allow_cwnd_growth as u32 as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nv() -> Nv {
        Nv::new(ComponentRng::new(1, "test"))
    }

    fn ca(cwnd: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 20,
            is_cwnd_limited: true,
            mss_cache: 1000,
            ..CcSock::default()
        }
    }

    fn ack(n: &mut Nv, tp: &mut CcSock, rtt: i64, bytes: u32) {
        n.pkts_acked(
            tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: rtt,
                in_flight: bytes,
            },
        );
    }

    /// RTT EWMA ½: 10 000 then 20 000 → 15 000. Rate = 40 000 bytes ·
    /// 80 000 / 10 000 µs = 320 000 (×100 bit/s = 32 Mbit/s).
    #[test]
    fn rate_and_rtt_average() {
        let mut n = nv();
        let mut tp = ca(40);
        n.init(&mut tp);
        ack(&mut n, &mut tp, 10_000, 40_000);
        assert_eq!(
            (n.last_rtt, n.min_rtt, n.rtt_max_rate),
            (10_000, 10_000, 320_000)
        );
        ack(&mut n, &mut tp, 20_000, 40_000);
        assert_eq!(
            (n.last_rtt, n.min_rtt, n.rtt_max_rate),
            (15_000, 10_000, 320_000)
        );
        assert_eq!(n.eval_call_cnt, 2);
        // no sample, or in_flight 0: nothing measured
        ack(&mut n, &mut tp, -1, 40_000);
        ack(&mut n, &mut tp, 10_000, 0);
        assert_eq!(n.eval_call_cnt, 2);
    }

    /// Max rate 200 000 (20 Mbit/s) at min RTT 10 000 µs, mss 1000:
    /// cwnd_by_slope = 200 000·10 000/(80 000·1000) = 25, max_win 35. With
    /// cwnd 60 (ssthresh set, 60 samples, 2 RTTs): ssthresh = 35, cwnd −=
    /// max(2, 25·38/128 = 7) → 53, growth stopped.
    #[test]
    fn congestion_decision_cuts_thirty_percent_of_the_excess() {
        let mut n = nv();
        let mut tp = ca(60);
        n.init(&mut tp);
        n.min_rtt = 10_000;
        n.last_rtt = 10_000;
        n.rtt_max_rate = 200_000;
        n.eval_call_cnt = 59;
        n.rtt_cnt = 1;
        tp.snd_una = 1;
        tp.snd_nxt = 100_000;
        // in_flight 10 000 bytes at 10 ms: rate 80 000, below the max
        ack(&mut n, &mut tp, 10_000, 10_000);
        assert_eq!((tp.snd_ssthresh, tp.snd_cwnd), (35, 53));
        assert!(!n.allow_cwnd_growth);
        assert_eq!((n.eval_call_cnt, n.rtt_cnt, n.rtt_max_rate), (0, 0, 0));
        assert_eq!(n.rtt_start_seq, 100_000);
        // cwnd 30 ≤ 35 − 2 with 20 samples: growth allowed again
        let mut tp = ca(30);
        n.rtt_max_rate = 200_000;
        n.eval_call_cnt = 19;
        tp.snd_una = 100_001;
        ack(&mut n, &mut tp, 10_000, 10_000);
        assert!(n.allow_cwnd_growth);
        assert_eq!(n.no_cong_cnt, 1);
    }

    #[test]
    fn loss_state_stops_growth_and_slows_the_rate() {
        let mut n = nv();
        let mut tp = ca(40);
        n.init(&mut tp);
        n.set_state(&mut tp, CaState::Loss);
        assert_eq!(
            (n.allow_cwnd_growth, n.reset, n.cwnd_growth_factor),
            (false, true, -1)
        );
        n.cong_avoid(&mut tp, 0, 1);
        assert_eq!(tp.snd_cwnd_cnt, 0);
        // growth factor −1: one packet per 2·cwnd acked
        n.allow_cwnd_growth = true;
        for _ in 0..80 {
            n.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 41);
        assert_eq!(n.ssthresh(&ca(100)), 79);
        tp.snd_una = 777;
        n.set_state(&mut tp, CaState::Open);
        assert_eq!((n.reset, n.rtt_start_seq), (false, 777));
    }
}
