//! BBR v1's state machine: STARTUP until the pipe is full, DRAIN, PROBE_BW's
//! eight-phase gain cycle, PROBE_RTT when the min_rtt estimate expires, and
//! each state's gains. Follows net/ipv4/tcp_bbr.c (`bbr_update_cycle_phase`,
//! `bbr_is_next_cycle_phase`, `bbr_reset_mode`, `bbr_check_full_bw_reached`,
//! `bbr_check_drain`, `bbr_update_min_rtt`, `bbr_check_probe_rtt_done`,
//! `bbr_update_gains`).

use super::super::{after, stamp_us_delta, CcSock, RateSample, HZ};
use super::common::{BBR_SCALE, PROBE_RTT_MODE_MS};
use super::{Bbr, BbrMode, BBR_UNIT, CWND_GAIN, CWND_MIN_TARGET, CYCLE_LEN, CYCLE_RAND};
use super::{DRAIN_GAIN, FULL_BW_CNT, FULL_BW_THRESH, HIGH_GAIN, MIN_RTT_WIN_SEC, PACING_GAIN};

impl Bbr {
    /// `bbr_is_next_cycle_phase`: a phase lasts one min_rtt; the 1.25×
    /// phase also waits until in-flight reaches 1.25 × BDP (or a loss), the
    /// 0.75× phase ends early once in-flight has drained to the BDP.
    pub(super) fn is_next_cycle_phase(&self, tp: &CcSock, rs: &RateSample) -> bool {
        let is_full_length =
            stamp_us_delta(tp.delivered_mstamp, self.cycle_mstamp) > self.min_rtt_us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses != 0 || inflight >= self.inflight(tp, bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    pub(super) fn advance_cycle_phase(&mut self, tp: &CcSock) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = tp.delivered_mstamp;
    }

    /// `bbr_update_cycle_phase`: gain cycling in PROBE_BW.
    pub(super) fn update_cycle_phase(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(tp, rs) {
            self.advance_cycle_phase(tp);
        }
    }

    /// `bbr_reset_startup_mode`.
    pub(super) fn reset_startup_mode(&mut self) {
        self.mode = BbrMode::Startup;
    }

    /// `bbr_reset_probe_bw_mode`: enter PROBE_BW at a random phase other
    /// than the 0.75× one: index 7 − U{0..6}, then advanced once, i.e. one
    /// of 2..7 or 0.
    pub(super) fn reset_probe_bw_mode(&mut self, tp: &CcSock) {
        self.mode = BbrMode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.range_u64(0, CYCLE_RAND - 1) as u32;
        self.advance_cycle_phase(tp);
    }

    /// `bbr_reset_mode`: STARTUP until the pipe was found full, then PROBE_BW.
    fn reset_mode(&mut self, tp: &CcSock) {
        if !self.full_bw_reached {
            self.reset_startup_mode();
        } else {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_check_full_bw_reached`: the pipe is full after 3 non-app-limited
    /// rounds in which the max bw grew by less than 25 %.
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw_thresh = ((self.full_bw as u64 * FULL_BW_THRESH as u64) >> BBR_SCALE) as u32;
        if self.max_bw() >= bw_thresh {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`: STARTUP → DRAIN once the pipe is full (ssthresh
    /// is set to the 1.0× in-flight target, visible in tcp_info); DRAIN →
    /// PROBE_BW once in-flight at the next departure is down to it.
    pub(super) fn check_drain(&mut self, tp: &mut CcSock) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
        }
        if self.mode == BbrMode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight)
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.reset_probe_bw_mode(tp);
        }
    }

    /// `bbr_check_probe_rtt_done`: after the PROBE_RTT time, restart the
    /// min_rtt window, restore cwnd, return to STARTUP or PROBE_BW.
    pub(super) fn check_probe_rtt_done(&mut self, tp: &mut CcSock) {
        if !self.probe_rtt.expired(tp.jiffies) {
            return;
        }
        self.min_rtt_stamp = tp.jiffies;
        tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        self.reset_mode(tp);
    }

    /// `bbr_update_min_rtt`: the 10 s min_rtt filter; when it expires
    /// (no RTT at or below it for 10 s) enter PROBE_RTT: hold in-flight at
    /// 4 packets for max(200 ms, one round), marking the flow app-limited
    /// so those rounds do not lower the bw estimate.
    pub(super) fn update_min_rtt(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let filter_expired = after(
            tp.jiffies,
            self.min_rtt_stamp.wrapping_add(MIN_RTT_WIN_SEC * HZ),
        );
        if rs.rtt_us >= 0
            && (rs.rtt_us < self.min_rtt_us as i64 || (filter_expired && !rs.is_ack_delayed))
        {
            self.min_rtt_us = rs.rtt_us as u32;
            self.min_rtt_stamp = tp.jiffies;
        }

        if PROBE_RTT_MODE_MS > 0
            && filter_expired
            && !self.idle_restart
            && self.mode != BbrMode::ProbeRtt
        {
            self.mode = BbrMode::ProbeRtt;
            self.save_cwnd(tp);
            self.probe_rtt.done_stamp = 0;
        }

        if self.mode == BbrMode::ProbeRtt {
            let target = CWND_MIN_TARGET;
            if self
                .probe_rtt
                .hold(tp, &mut self.next_rtt_delivered, self.round_start, target)
            {
                self.check_probe_rtt_done(tp);
            }
        }
        // an idle restart ends with the first ACK of new data
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    pub(super) fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrMode::ProbeBw => (
                if self.lt_use_bw {
                    BBR_UNIT
                } else {
                    PACING_GAIN[self.cycle_idx as usize]
                },
                CWND_GAIN,
            ),
            BbrMode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }
}
