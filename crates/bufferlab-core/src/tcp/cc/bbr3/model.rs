//! BBRv3's model of the path: the bandwidth samples and their max filter
//! over two PROBE_BW cycles, the ACK-aggregation estimate, the loss and ECN
//! signals of a round (`ecn_alpha`), and the bounds they set — `inflight_hi`
//! (long-term, raised while probing, cut on trouble), `bw_lo`/`inflight_lo`
//! (short-term) — with the cwnd bounded by them. Follows tcp_bbr.c of the
//! google/bbr `v3` branch (`bbr_update_congestion_signals`,
//! `bbr_adapt_lower_bounds`, `bbr_adapt_upper_bounds`,
//! `bbr_is_inflight_too_high`, `bbr_probe_inflight_hi_upward`,
//! `bbr_inflight_hi_from_lost_skb`, `bbr_update_ecn_alpha`).

use super::super::bbr::common::{BBR_SCALE, BW_UNIT};
use super::super::{before, CcSock, RateSample};
use super::{AckPhase, Bbr3, Bbr3Mode, Phase};
use super::{
    BBR_UNIT, BETA, CWND_MIN_TARGET, ECN_ALPHA_GAIN, ECN_FACTOR, ECN_MAX_RTT_US, ECN_THRESH,
    EXTRA_ACKED_WIN_RTTS, INFLIGHT_HEADROOM, LOSS_THRESH,
};

/// A loss or ECN signal judged against the thresholds
/// (`bbr_is_inflight_too_high`'s inputs; the fields of `struct
/// rate_sample` it reads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signal {
    pub tx_in_flight: u32,
    pub lost: i32,
    pub delivered: i32,
    pub delivered_ce: i32,
    pub is_app_limited: bool,
}

impl From<&RateSample> for Signal {
    fn from(rs: &RateSample) -> Signal {
        Signal {
            tx_in_flight: rs.tx_in_flight,
            lost: rs.lost,
            delivered: rs.delivered,
            delivered_ce: rs.delivered_ce,
            is_app_limited: rs.is_app_limited,
        }
    }
}

/// `bbr_inflight_hi_from_lost_skb`: the in-flight level at which the loss
/// rate crossed `LOSS_THRESH`, for a lost packet (one segment) sent with
/// `tx_in_flight` in flight when `lost` packets had been marked lost since
/// (itself included); `u32::MAX` for an inconsistent snapshot.
pub fn inflight_hi_from_lost_skb(tx_in_flight: u32, lost: i32) -> u32 {
    let pcount = 1i64;
    let inflight_prev = tx_in_flight as i64 - pcount;
    let lost_prev = lost as i64 - pcount;
    if inflight_prev < 0 || lost_prev < 0 {
        return u32::MAX;
    }
    // the budget of losses the flight before it allowed, rounded up
    let budget = ((inflight_prev as u64 * LOSS_THRESH as u64) + BBR_UNIT as u64 - 1) >> BBR_SCALE;
    let prefix = if lost_prev as u64 >= budget {
        0
    } else {
        ((budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT - LOSS_THRESH) as u64
    };
    (inflight_prev as u64 + prefix) as u32
}

impl Bbr3 {
    /// `bbr_calculate_bw_sample`: delivered / interval, rounded up.
    pub(super) fn bw_sample(rs: &RateSample) -> u32 {
        if rs.interval_us > 0 && rs.delivered >= 0 {
            (rs.delivered as u64 * BW_UNIT).div_ceil(rs.interval_us as u64) as u32
        } else {
            0
        }
    }

    /// `bbr_update_ack_aggregation` (window: 1 round before the pipe is
    /// full, 5 after).
    pub(super) fn update_ack_aggregation(&mut self, tp: &CcSock, rs: &RateSample) {
        let win = if self.full_bw_reached {
            EXTRA_ACKED_WIN_RTTS
        } else {
            1
        };
        let bw = self.bw();
        self.aggr.update(tp, rs, bw, self.round_start, win);
    }

    /// `bbr_advance_max_bw_filter`: a new cycle-long half (kept if the
    /// current half has no sample).
    pub(super) fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    /// `bbr_update_ecn_alpha`: once a round, alpha ← (1 − g)·alpha +
    /// g·CE fraction of the round (g = 1/16); returns that fraction << 8.
    pub(super) fn update_ecn_alpha(&mut self, tp: &CcSock) -> Option<u32> {
        if !self.ecn_eligible && Self::can_use_ecn(tp) && self.min_rtt_us <= ECN_MAX_RTT_US {
            self.ecn_eligible = true;
        }
        if !self.ecn_eligible {
            return None;
        }
        let delivered = tp.delivered.wrapping_sub(self.alpha_last_delivered) as i32;
        let delivered_ce = tp.delivered_ce.wrapping_sub(self.alpha_last_delivered_ce) as i32;
        if delivered <= 0 || delivered_ce < 0 {
            return None;
        }
        let ce_ratio = ((delivered_ce as u64) << BBR_SCALE) / delivered as u64;
        let mut alpha = ((BBR_UNIT - ECN_ALPHA_GAIN) as u64 * self.ecn_alpha as u64) >> BBR_SCALE;
        alpha += (ECN_ALPHA_GAIN as u64 * ce_ratio) >> BBR_SCALE;
        self.ecn_alpha = alpha.min(BBR_UNIT as u64) as u32;
        self.alpha_last_delivered = tp.delivered;
        self.alpha_last_delivered_ce = tp.delivered_ce;
        self.check_ecn_too_high_in_startup(tp, ce_ratio as u32);
        Some(ce_ratio as u32)
    }

    /// `bbr_raise_inflight_hi_slope`: each PROBE_UP round doubles the
    /// growth: inflight_hi +1 per cwnd/2^rounds packets acked.
    pub(super) fn raise_inflight_hi_slope(&mut self, tp: &CcSock) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (tp.snd_cwnd / growth_this_round).max(1);
    }

    /// `bbr_probe_inflight_hi_upward`.
    pub(super) fn probe_inflight_hi_upward(&mut self, tp: &CcSock, rs: &RateSample) {
        if !tp.is_cwnd_limited || tp.snd_cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks = self.bw_probe_up_acks.wrapping_add(rs.acked_sacked);
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.wrapping_add(delta);
        }
        if self.round_start {
            self.raise_inflight_hi_slope(tp);
        }
    }

    /// `bbr_is_inflight_too_high`: loss above 2 % of what was in flight, or
    /// (ECN-eligible) CE above half of what was delivered.
    pub fn is_inflight_too_high(&self, s: &Signal) -> bool {
        if s.lost > 0 && s.tx_in_flight != 0 {
            let loss_thresh = (s.tx_in_flight as u64 * LOSS_THRESH as u64) >> BBR_SCALE;
            if s.lost as u64 > loss_thresh {
                return true;
            }
        }
        if s.delivered_ce > 0 && s.delivered > 0 && self.ecn_eligible {
            let ecn_thresh = (s.delivered as u64 * ECN_THRESH as u64) >> BBR_SCALE;
            if s.delivered_ce as u64 > ecn_thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_with_headroom`: 15 % (at least 1) under inflight_hi,
    /// at least 4.
    pub(super) fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == u32::MAX {
            return u32::MAX;
        }
        let headroom = ((self.inflight_hi as u64 * INFLIGHT_HEADROOM as u64) >> BBR_SCALE) as u32;
        let headroom = headroom.max(1);
        (self.inflight_hi.wrapping_sub(headroom) as i32).max(CWND_MIN_TARGET as i32) as u32
    }

    /// `bbr_bound_cwnd_for_inflight_model`: cap cwnd at inflight_hi while
    /// probing (or in DOWN/REFILL), at the headroom level in CRUISE and
    /// PROBE_RTT, and at inflight_lo always.
    pub(super) fn bound_cwnd_for_inflight_model(&mut self, tp: &mut CcSock) {
        if !self.initialized {
            return;
        }
        let mut cap = u32::MAX;
        if self.mode == Bbr3Mode::ProbeBw && self.cycle_idx != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Bbr3Mode::ProbeRtt
            || (self.mode == Bbr3Mode::ProbeBw && self.cycle_idx == Phase::Cruise)
        {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo).max(CWND_MIN_TARGET);
        tp.snd_cwnd = tp.snd_cwnd.min(cap);
    }

    /// `bbr_ecn_cut`: 1 − ecn_factor × ecn_alpha.
    pub(super) fn ecn_cut(&self) -> u32 {
        BBR_UNIT - ((self.ecn_alpha * ECN_FACTOR) >> BBR_SCALE)
    }

    /// `bbr_init_lower_bounds`.
    fn init_lower_bounds(&mut self, tp: &CcSock, init_bw: bool) {
        if init_bw && self.bw_lo == u32::MAX {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == u32::MAX {
            self.inflight_lo = tp.snd_cwnd;
        }
    }

    /// `bbr_adapt_lower_bounds`: outside probing, once per round, cut
    /// bw_lo and inflight_lo by beta after a loss (not below the latest
    /// round's delivery) and inflight_lo by the ECN cut after marks.
    pub(super) fn adapt_lower_bounds(&mut self, tp: &CcSock) {
        if self.is_probing_bandwidth() {
            return;
        }
        let mut ecn_inflight_lo = u32::MAX;
        if self.ecn_in_round {
            self.init_lower_bounds(tp, false);
            ecn_inflight_lo =
                ((self.inflight_lo as u64 * self.ecn_cut() as u64) >> BBR_SCALE) as u32;
        }
        if self.loss_in_round {
            self.init_lower_bounds(tp, true);
            let loss_cut = (BBR_UNIT - BETA) as u64;
            self.bw_lo = self
                .bw_latest
                .max(((self.bw_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
            self.inflight_lo = self
                .inflight_latest
                .max(((self.inflight_lo as u64 * loss_cut) >> BBR_SCALE) as u32);
        }
        self.inflight_lo = self.inflight_lo.min(ecn_inflight_lo);
        self.bw_lo = self.bw_lo.max(1);
    }

    /// `bbr_reset_lower_bounds`.
    pub(super) fn reset_lower_bounds(&mut self) {
        self.bw_lo = u32::MAX;
        self.inflight_lo = u32::MAX;
    }

    /// `bbr_reset_congestion_signals`.
    pub(super) fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.ecn_in_round = false;
        self.loss_in_cycle = false;
        self.ecn_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    /// `bbr_update_latest_delivery_signals`: this round's max bw and
    /// delivered volume; the loss round's boundary.
    pub(super) fn update_latest_delivery_signals(&mut self, tp: &CcSock, rs: &RateSample, bw: u32) {
        self.loss_round_start = false;
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(bw);
        self.inflight_latest = self.inflight_latest.max(rs.delivered as u32);
        if !before(rs.prior_delivered, self.loss_round_delivered) {
            self.loss_round_delivered = tp.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals`: a new loss round restarts the
    /// latest-round filters from this sample.
    pub(super) fn advance_latest_delivery_signals(&mut self, rs: &RateSample, bw: u32) {
        if self.loss_round_start {
            self.bw_latest = bw;
            self.inflight_latest = rs.delivered as u32;
        }
    }

    /// `bbr_update_congestion_signals`: the bw_hi sample, this round's
    /// loss, and once per loss round the lower bounds.
    pub(super) fn update_congestion_signals(&mut self, tp: &CcSock, rs: &RateSample, bw: u32) {
        if rs.interval_us <= 0 || rs.acked_sacked == 0 {
            return;
        }
        if !rs.is_app_limited || bw >= self.max_bw() {
            self.bw_hi[1] = self.bw_hi[1].max(bw);
        }
        self.loss_in_round |= rs.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(tp);
        self.loss_in_round = false;
        self.ecn_in_round = false;
    }

    /// `bbr_handle_inflight_too_high`: once per probe, inflight_hi ←
    /// max(the in-flight level of the sample, (1 − beta) × target); PROBE_UP
    /// turns to DOWN.
    pub(super) fn handle_inflight_too_high(&mut self, tp: &CcSock, s: &Signal) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !s.is_app_limited {
            let cut = (self.target_inflight(tp) as u64 * (BBR_UNIT - BETA) as u64) >> BBR_SCALE;
            self.inflight_hi = s.tx_in_flight.max(cut as u32);
        }
        if self.mode == Bbr3Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(tp);
        }
    }

    /// `bbr_adapt_upper_bounds`; true if it decided a phase change.
    pub(super) fn adapt_upper_bounds(&mut self, tp: &CcSock, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Bbr3Mode::ProbeBw && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == Bbr3Mode::ProbeBw
                && self.stopped_risky_probe
                && !self.prev_probe_too_high
            {
                self.start_bw_probe_refill(tp, 0);
                return true;
            }
        }
        let s = Signal::from(rs);
        if self.is_inflight_too_high(&s) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(tp, &s);
            }
        } else {
            if self.inflight_hi == u32::MAX {
                return false;
            }
            if rs.tx_in_flight > self.inflight_hi {
                self.inflight_hi = rs.tx_in_flight;
            }
            if self.mode == Bbr3Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(tp, rs);
            }
        }
        false
    }
}
