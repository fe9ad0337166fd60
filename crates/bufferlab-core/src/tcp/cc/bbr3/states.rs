//! BBRv3's state machine: STARTUP and its exits (bandwidth plateau, loss,
//! ECN), DRAIN, the PROBE_BW cycle DOWN → CRUISE → REFILL → UP with its
//! randomised wait and Reno-coexistence bound, and PROBE_RTT with the min_rtt
//! filter; each state's gains. Follows tcp_bbr.c of the google/bbr `v3`
//! branch (`bbr_update_cycle_phase`, `bbr_start_bw_probe_*`,
//! `bbr_check_time_to_probe_bw`, `bbr_check_full_bw_reached`,
//! `bbr_check_loss_too_high_in_startup`, `bbr_check_drain`,
//! `bbr_update_min_rtt`, `bbr_update_gains`).

use super::super::bbr::common::BBR_SCALE;
use super::super::{after, msecs_to_jiffies, stamp_us_delta, CaState, CcSock, RateSample, HZ};
use super::{AckPhase, Bbr3, Bbr3Mode, Phase, Signal};
use super::{
    BBR_UNIT, BW_PROBE_BASE_US, BW_PROBE_CWND_GAIN, BW_PROBE_MAX_ROUNDS, BW_PROBE_RAND_ROUNDS,
    BW_PROBE_RAND_US, CWND_GAIN, DRAIN_GAIN, ECN_REPROBE_GAIN, ECN_THRESH, FULL_BW_CNT,
    FULL_BW_THRESH, FULL_ECN_CNT, FULL_LOSS_CNT, MIN_RTT_WIN_SEC, PACING_GAIN, PROBE_RTT_WIN_MS,
    STARTUP_CWND_GAIN, STARTUP_PACING_GAIN,
};

impl Bbr3 {
    /// `bbr_update_min_rtt`: a 5 s window (`probe_rtt_min_us`) schedules
    /// PROBE_RTT, the 10 s one keeps min_rtt.
    pub(super) fn update_min_rtt(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let expire = self
            .probe_rtt_min_stamp
            .wrapping_add(msecs_to_jiffies(PROBE_RTT_WIN_MS));
        let probe_rtt_expired = after(tp.jiffies, expire);
        if rs.rtt_us >= 0
            && (rs.rtt_us < self.probe_rtt_min_us as i64
                || (probe_rtt_expired && !rs.is_ack_delayed))
        {
            self.probe_rtt_min_us = rs.rtt_us as u32;
            self.probe_rtt_min_stamp = tp.jiffies;
        }
        let expire = self.min_rtt_stamp.wrapping_add(MIN_RTT_WIN_SEC * HZ);
        if self.probe_rtt_min_us <= self.min_rtt_us || after(tp.jiffies, expire) {
            self.min_rtt_us = self.probe_rtt_min_us;
            self.min_rtt_stamp = self.probe_rtt_min_stamp;
        }
        if probe_rtt_expired && !self.idle_restart && self.mode != Bbr3Mode::ProbeRtt {
            self.mode = Bbr3Mode::ProbeRtt;
            self.save_cwnd(tp);
            self.probe_rtt.done_stamp = 0;
            self.ack_phase = AckPhase::ProbeStopping;
            self.next_rtt_delivered = tp.delivered;
        }
        if self.mode == Bbr3Mode::ProbeRtt {
            let target = self.probe_rtt_cwnd();
            if self
                .probe_rtt
                .hold(tp, &mut self.next_rtt_delivered, self.round_start, target)
            {
                self.check_probe_rtt_done(tp);
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_check_probe_rtt_done`.
    pub(super) fn check_probe_rtt_done(&mut self, tp: &mut CcSock) {
        if !self.probe_rtt.expired(tp.jiffies) {
            return;
        }
        self.probe_rtt_min_stamp = tp.jiffies;
        tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(tp);
    }

    /// `bbr_exit_probe_rtt`: to PROBE_BW (DOWN then at once CRUISE) or STARTUP.
    fn exit_probe_rtt(&mut self, tp: &CcSock) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Bbr3Mode::ProbeBw;
            self.start_bw_probe_down(tp);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Bbr3Mode::Startup;
        }
    }

    /// `bbr_update_gains`.
    pub(super) fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            Bbr3Mode::Startup => (STARTUP_PACING_GAIN, STARTUP_CWND_GAIN),
            Bbr3Mode::Drain => (DRAIN_GAIN, STARTUP_CWND_GAIN),
            Bbr3Mode::ProbeBw => {
                let mut cwnd = CWND_GAIN;
                if self.cycle_idx == Phase::Up {
                    cwnd += BBR_UNIT * BW_PROBE_CWND_GAIN / 4;
                }
                (PACING_GAIN[self.cycle_idx as usize], cwnd)
            }
            Bbr3Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// `bbr_reset_full_bw`.
    pub(super) fn reset_full_bw(&mut self) {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.full_bw_now = false;
    }

    /// `bbr_target_inflight`: min(BDP with budget, cwnd).
    pub(super) fn target_inflight(&self, tp: &CcSock) -> u32 {
        self.inflight(tp, self.bw(), BBR_UNIT).min(tp.snd_cwnd)
    }

    /// `bbr_is_probing_bandwidth`: STARTUP, REFILL or UP.
    pub(super) fn is_probing_bandwidth(&self) -> bool {
        self.mode == Bbr3Mode::Startup
            || (self.mode == Bbr3Mode::ProbeBw
                && matches!(self.cycle_idx, Phase::Refill | Phase::Up))
    }

    /// `bbr_has_elapsed_in_phase`.
    fn has_elapsed_in_phase(&self, tp: &CcSock, interval_us: u32) -> bool {
        stamp_us_delta(tp.now_us, self.cycle_mstamp + interval_us as u64) > 0
    }

    /// `bbr_handle_queue_too_high_in_startup`: the pipe is full; inflight_hi
    /// starts at the larger of the BDP and the latest round's delivery.
    fn handle_queue_too_high_in_startup(&mut self, tp: &CcSock) {
        self.full_bw_reached = true;
        let bdp = self.inflight(tp, self.max_bw(), BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    /// `bbr_check_ecn_too_high_in_startup`.
    pub(super) fn check_ecn_too_high_in_startup(&mut self, tp: &CcSock, ce_ratio: u32) {
        if self.full_bw_reached || !self.ecn_eligible {
            return;
        }
        if ce_ratio >= ECN_THRESH {
            self.startup_ecn_rounds = (self.startup_ecn_rounds + 1) & 3;
        } else {
            self.startup_ecn_rounds = 0;
        }
        if self.startup_ecn_rounds >= FULL_ECN_CNT {
            self.handle_queue_too_high_in_startup(tp);
        }
    }

    /// `bbr_check_loss_too_high_in_startup`: at the end of a recovery round
    /// with ≥ 6 loss events and loss above 2 %, the pipe is full.
    pub(super) fn check_loss_too_high_in_startup(&mut self, tp: &CcSock, rs: &RateSample) {
        if self.full_bw_reached {
            return;
        }
        if rs.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.loss_round_start
            && tp.ca_state == CaState::Recovery
            && self.loss_events_in_round >= FULL_LOSS_CNT
            && self.is_inflight_too_high(&Signal::from(rs))
        {
            self.handle_queue_too_high_in_startup(tp);
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    /// `bbr_check_full_bw_reached`: a plateau is 3 rounds in which no
    /// sample reached 1.25 × `full_bw` (the sample itself, not the filter,
    /// as in v1).
    pub(super) fn check_full_bw_reached(&mut self, rs: &RateSample, bw: u32) {
        if self.full_bw_now || rs.is_app_limited {
            return;
        }
        let thresh = ((self.full_bw as u64 * FULL_BW_THRESH as u64) >> BBR_SCALE) as u32;
        if bw >= thresh {
            self.reset_full_bw();
            self.full_bw = bw;
            return;
        }
        if !self.round_start {
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_now = self.full_bw_cnt >= FULL_BW_CNT;
        self.full_bw_reached |= self.full_bw_now;
    }

    /// `bbr_check_drain`.
    pub(super) fn check_drain(&mut self, tp: &mut CcSock) {
        if self.mode == Bbr3Mode::Startup && self.full_bw_reached {
            self.mode = Bbr3Mode::Drain;
            tp.snd_ssthresh = self.inflight(tp, self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Bbr3Mode::Drain
            && self.packets_in_net_at_edt(tp, tp.packets_in_flight)
                <= self.inflight(tp, self.max_bw(), BBR_UNIT)
        {
            self.mode = Bbr3Mode::ProbeBw;
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_is_reno_coexistence_probe_time`: probe once as many rounds have
    /// passed as a Reno flow at our BDP (at most 63) would take.
    pub(super) fn is_reno_coexistence_probe_time(&self, tp: &CcSock) -> bool {
        let rounds = BW_PROBE_MAX_ROUNDS.min(self.target_inflight(tp));
        self.rounds_since_probe >= rounds
    }

    /// `bbr_pick_probe_wait`: 0–1 random rounds; 2–3 s of wall clock.
    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.range_u64(0, BW_PROBE_RAND_ROUNDS - 1) as u32;
        self.probe_wait_us = BW_PROBE_BASE_US + self.rng.range_u64(0, BW_PROBE_RAND_US - 1) as u32;
    }

    /// `bbr_start_bw_probe_refill`.
    pub(super) fn start_bw_probe_refill(&mut self, tp: &CcSock, bw_probe_up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = bw_probe_up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_idx = Phase::Refill;
    }

    /// `bbr_start_bw_probe_up`.
    fn start_bw_probe_up(&mut self, tp: &CcSock, bw: u32) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_mstamp = tp.now_us;
        self.reset_full_bw();
        self.full_bw = bw;
        self.cycle_idx = Phase::Up;
        self.raise_inflight_hi_slope(tp);
    }

    /// `bbr_start_bw_probe_down`.
    pub(super) fn start_bw_probe_down(&mut self, tp: &CcSock) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = u32::MAX;
        self.pick_probe_wait();
        self.cycle_mstamp = tp.now_us;
        self.ack_phase = AckPhase::ProbeStopping;
        self.next_rtt_delivered = tp.delivered;
        self.cycle_idx = Phase::Down;
    }

    /// `bbr_start_bw_probe_cruise`.
    fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != u32::MAX {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.cycle_idx = Phase::Cruise;
    }

    /// `bbr_check_time_to_probe_bw`: after an ECN-only cycle re-probe at
    /// once; else after the random wall-clock wait or the Reno rounds.
    fn check_time_to_probe_bw(&mut self, tp: &CcSock) -> bool {
        if self.ecn_eligible
            && self.ecn_in_cycle
            && !self.loss_in_cycle
            && tp.ca_state == CaState::Open
        {
            let v = (self.inflight_hi as u64 * ECN_REPROBE_GAIN as u64) >> BBR_SCALE;
            let n = if v == 0 { 0 } else { 63 - v.leading_zeros() };
            self.start_bw_probe_refill(tp, n);
            return true;
        }
        if self.has_elapsed_in_phase(tp, self.probe_wait_us)
            || self.is_reno_coexistence_probe_time(tp)
        {
            self.start_bw_probe_refill(tp, 0);
            return true;
        }
        false
    }

    /// `bbr_check_time_to_cruise`: in-flight is under both the headroom
    /// level and the BDP.
    fn check_time_to_cruise(&self, tp: &CcSock, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(tp, bw, BBR_UNIT)
    }

    /// `bbr_update_cycle_phase`: the PROBE_BW state machine.
    pub(super) fn update_cycle_phase(&mut self, tp: &CcSock, rs: &RateSample, bw_sample: u32) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(tp, rs) {
            return;
        }
        if self.mode != Bbr3Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(tp, rs.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            Phase::Cruise => {
                self.check_time_to_probe_bw(tp);
            }
            Phase::Refill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(tp, bw_sample);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else if tp.is_cwnd_limited && tp.snd_cwnd >= self.inflight_hi {
                    // inflight_hi limits the growth: restart the plateau test
                    self.reset_full_bw();
                    self.full_bw = bw_sample;
                } else if self.full_bw_now {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(tp);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(tp) {
                    return;
                }
                if self.check_time_to_cruise(tp, inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }
}
