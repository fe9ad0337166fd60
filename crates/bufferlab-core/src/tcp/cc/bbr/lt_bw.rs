//! BBR v1's long-term bandwidth sampling: over intervals of 4–16 rounds
//! with heavy loss, an estimate of a token-bucket policer's rate; two
//! consistent intervals make BBR pace at that rate for 48 rounds. Follows
//! net/ipv4/tcp_bbr.c (`bbr_lt_bw_sampling`, `bbr_lt_bw_interval_done`,
//! `bbr_reset_lt_bw_sampling`, `bbr_reset_lt_bw_sampling_interval`).

use super::super::{CcSock, RateSample};
use super::common::{BBR_SCALE, BW_UNIT};
use super::{Bbr, BbrMode, BBR_UNIT};
use super::{LT_BW_DIFF, LT_BW_MAX_RTTS, LT_BW_RATIO, LT_INTVL_MIN_RTTS, LT_LOSS_THRESH};

impl Bbr {
    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_bw_sampling_interval(&mut self, tp: &CcSock) {
        self.lt_last_stamp = (tp.delivered_mstamp / 1_000) as u32;
        self.lt_last_delivered = tp.delivered;
        self.lt_last_lost = tp.lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    pub(super) fn reset_lt_bw_sampling(&mut self, tp: &CcSock) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_interval_done`: if this interval's bw agrees with the
    /// previous one (within 1/8 or 4 kbit/s), a policer is assumed: pace
    /// at their average with gain 1.0.
    pub(super) fn lt_bw_interval_done(&mut self, tp: &CcSock, bw: u32) {
        if self.lt_bw != 0 {
            // the kernel's abs() of a u32 difference reads it as s32
            let diff = (bw.wrapping_sub(self.lt_bw) as i32).wrapping_abs() as u32;
            if diff.wrapping_mul(BBR_UNIT) <= LT_BW_RATIO.wrapping_mul(self.lt_bw)
                || Self::rate_bytes_per_sec(tp, diff as u64, BBR_UNIT) <= LT_BW_DIFF
            {
                self.lt_bw = bw.wrapping_add(self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tp);
    }

    /// `bbr_lt_bw_sampling`: token-bucket policer detection. Sampling
    /// starts at the first loss; an interval of 4–16 rounds ends at a loss
    /// once lost/delivered ≥ 50/256, giving bw = delivered / elapsed.
    /// While using `lt_bw`, count 48 rounds of PROBE_BW, then start over.
    pub(super) fn lt_bw_sampling(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tp);
                    self.reset_probe_bw_mode(tp);
                }
            }
            return;
        }
        if !self.lt_is_sampling {
            if rs.losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tp);
            self.lt_is_sampling = true;
        }
        if rs.is_app_limited {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt = (self.lt_rtt_cnt + 1) & 0x7f;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        if rs.losses == 0 {
            return;
        }
        let lost = tp.lost.wrapping_sub(self.lt_last_lost);
        let delivered = tp.delivered.wrapping_sub(self.lt_last_delivered);
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH.wrapping_mul(delivered) {
            return;
        }
        let mut t = ((tp.delivered_mstamp / 1_000) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return; // less than 1 ms: wait
        }
        if t >= u32::MAX / 1_000 {
            self.reset_lt_bw_sampling(tp);
            return;
        }
        t *= 1_000;
        let bw = delivered as u64 * BW_UNIT / t as u64;
        self.lt_bw_interval_done(tp, bw as u32);
    }
}
