//! What BBR v1 (this module, mainline `tcp_bbr.c`) and BBR v3 (`super::super::bbr3`,
//! google/bbr v3 `tcp_bbr.c`) compute alike: the ACK-aggregation estimate
//! (`bbr_update_ack_aggregation`, `bbr_ack_aggregation_cwnd`), the pacing
//! rate (`bbr_rate_bytes_per_sec`, `bbr_init_pacing_rate_from_rtt`,
//! `bbr_set_pacing_rate`), `bbr_packets_in_net_at_edt` and `bbr_save_cwnd`.

use super::super::{after, msecs_to_jiffies, stamp_us_delta, CaState, CcSock, RateSample};

/// Minimum time in PROBE_RTT at its cwnd, ms (`bbr_probe_rtt_mode_ms`, both versions).
pub const PROBE_RTT_MODE_MS: u32 = 200;

/// `BW_SCALE`: bandwidth is packets/µs << 24.
pub const BW_SCALE: u32 = 24;
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE`: gains are << 8.
pub const BBR_SCALE: u32 = 8;
/// Gain on the ACK-aggregation allowance (`bbr_extra_acked_gain`, 1.0).
const EXTRA_ACKED_GAIN: u32 = 1 << BBR_SCALE;
/// Restart the ACK epoch after this many acked packets
/// (`bbr_ack_epoch_acked_reset_thresh`).
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
/// The aggregation allowance is at most this much bw, µs (`bbr_extra_acked_max_us`).
const EXTRA_ACKED_MAX_US: u64 = 100_000;

/// The ACK-aggregation estimate: packets acked in the current epoch beyond
/// bw × epoch length, max-filtered over two half-windows of rounds and
/// capped at cwnd (the `ack_epoch_*` and `extra_acked*` fields of `struct bbr`).
#[derive(Clone, Debug, Default)]
pub struct AckAggregation {
    /// start of the ACK-sampling epoch, µs
    pub epoch_mstamp: u64,
    /// max packets acked beyond the expected, per half-window (u16 as the kernel)
    pub extra_acked: [u16; 2],
    /// packets (s)acked in the epoch (20 bits)
    pub epoch_acked: u32,
    /// age of `extra_acked[win_idx]`, rounds (5 bits)
    pub win_rtts: u32,
    pub win_idx: usize,
}

impl AckAggregation {
    /// `bbr_init`'s reset: an empty filter, an epoch starting now.
    pub fn new(now_us: u64) -> Self {
        AckAggregation {
            epoch_mstamp: now_us,
            ..AckAggregation::default()
        }
    }

    /// `bbr_extra_acked`: the max of the two half-windows.
    pub fn max(&self) -> u16 {
        self.extra_acked[0].max(self.extra_acked[1])
    }

    /// A new epoch from `now_us` (restart after idle).
    pub fn restart_epoch(&mut self, now_us: u64) {
        self.epoch_mstamp = now_us;
        self.epoch_acked = 0;
    }

    /// `bbr_ack_aggregation_cwnd`: the allowance at bw `bw`, at most
    /// 100 ms of it.
    pub fn cwnd(&self, bw: u32) -> u32 {
        let max_aggr_cwnd = (bw as u64 * EXTRA_ACKED_MAX_US / BW_UNIT) as u32;
        ((EXTRA_ACKED_GAIN * self.max() as u32) >> BBR_SCALE).min(max_aggr_cwnd)
    }

    /// `bbr_update_ack_aggregation` at bw `bw`; a round start ages the
    /// current half-window, which is replaced after `win_rtts_thresh` rounds.
    pub fn update(
        &mut self,
        tp: &CcSock,
        rs: &RateSample,
        bw: u32,
        round_start: bool,
        win_rtts_thresh: u32,
    ) {
        if rs.acked_sacked == 0 || rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(0x1f);
            if self.win_rtts >= win_rtts_thresh {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let epoch_us = stamp_us_delta(tp.delivered_mstamp, self.epoch_mstamp) as u32;
        let mut expected_acked = (bw as u64 * epoch_us as u64 / BW_UNIT) as u32;
        if self.epoch_acked <= expected_acked
            || self.epoch_acked.wrapping_add(rs.acked_sacked) >= ACK_EPOCH_ACKED_RESET_THRESH
        {
            self.epoch_acked = 0;
            self.epoch_mstamp = tp.delivered_mstamp;
            expected_acked = 0;
        }
        self.epoch_acked = self.epoch_acked.wrapping_add(rs.acked_sacked).min(0xf_ffff);
        let extra = self
            .epoch_acked
            .wrapping_sub(expected_acked)
            .min(tp.snd_cwnd);
        let slot = &mut self.extra_acked[self.win_idx];
        if extra > *slot as u32 {
            *slot = extra as u16;
        }
    }
}

/// `bbr_rate_bytes_per_sec`: `rate` (pkts/µs << 24) × mss × gain, less
/// `margin` percent, in bytes/s. Multiplication order as the kernel's (no
/// u64 overflow up to ~2.9 Tbit/s at gain 2.89).
pub fn rate_bytes_per_sec(mss: u32, rate: u64, gain: u32, margin: u64) -> u64 {
    let mut rate = rate.wrapping_mul(mss as u64);
    rate = rate.wrapping_mul(gain as u64);
    rate >>= BBR_SCALE;
    rate = rate.wrapping_mul(1_000_000 / 100 * (100 - margin));
    rate >> BW_SCALE
}

/// The pacing-rate rules both versions share; each says its STARTUP gain,
/// its `bbr_bw_to_pacing_rate` and where it keeps `has_seen_rtt` and
/// `full_bw_reached`.
pub trait Pacing {
    /// the gain of the initial rate (v1 `bbr_high_gain`, v3 `startup_pacing_gain`)
    const STARTUP_GAIN: u32;
    /// `bbr_bw_to_pacing_rate`: bytes/s for `bw` × `gain`
    fn bw_to_pacing_rate(tp: &CcSock, bw: u32, gain: u32) -> u64;
    /// `has_seen_rtt`
    fn seen_rtt(&mut self) -> &mut bool;
    /// `bbr_full_bw_reached`
    fn pipe_full(&self) -> bool;

    /// `bbr_init_pacing_rate_from_rtt`: STARTUP gain × cwnd / srtt (1 ms
    /// before any RTT sample).
    fn init_pacing_rate_from_rtt(&mut self, tp: &mut CcSock) {
        let rtt_us = if tp.srtt_us != 0 {
            *self.seen_rtt() = true;
            (tp.srtt_us >> 3).max(1)
        } else {
            1_000
        };
        let bw = tp.snd_cwnd as u64 * BW_UNIT / rtt_us as u64;
        tp.pacing_rate = Self::bw_to_pacing_rate(tp, bw as u32, Self::STARTUP_GAIN);
    }

    /// `bbr_set_pacing_rate`: pace at bw × gain; before the pipe is full the
    /// rate only rises; the first RTT sample re-initialises it from srtt.
    fn set_pacing_rate(&mut self, tp: &mut CcSock, bw: u32, gain: u32) {
        let rate = Self::bw_to_pacing_rate(tp, bw, gain);
        if !*self.seen_rtt() && tp.srtt_us != 0 {
            self.init_pacing_rate_from_rtt(tp);
        }
        if self.pipe_full() || rate > tp.pacing_rate {
            tp.pacing_rate = rate;
        }
    }
}

/// PROBE_RTT's clock: `probe_rtt_done_stamp` (jiffies, 0 = not armed) and
/// `probe_rtt_round_done`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeRttTimer {
    pub done_stamp: u32,
    pub round_done: bool,
}

impl ProbeRttTimer {
    /// In PROBE_RTT, once per ACK (`bbr_update_min_rtt`'s tail): mark the
    /// flow app-limited so these rounds do not lower the bw estimate; once
    /// in flight is down to `cwnd_target` arm the 200 ms timer and start a
    /// round (`next_rtt_delivered`). True once that round has passed
    /// (`bbr_check_probe_rtt_done` then checks the timer).
    pub fn hold(
        &mut self,
        tp: &mut CcSock,
        next_rtt_delivered: &mut u32,
        round_start: bool,
        cwnd_target: u32,
    ) -> bool {
        let al = tp.delivered.wrapping_add(tp.packets_in_flight);
        tp.app_limited = if al != 0 { al } else { 1 };
        if self.done_stamp == 0 && tp.packets_in_flight <= cwnd_target {
            self.done_stamp = tp.jiffies.wrapping_add(msecs_to_jiffies(PROBE_RTT_MODE_MS));
            self.round_done = false;
            *next_rtt_delivered = tp.delivered;
            return false;
        }
        if self.done_stamp != 0 {
            self.round_done |= round_start;
            return self.round_done;
        }
        false
    }

    /// The timer has run out (`probe_rtt_done_stamp && after(jiffies, it)`).
    pub fn expired(&self, jiffies: u32) -> bool {
        self.done_stamp != 0 && after(jiffies, self.done_stamp)
    }
}

/// `bbr_packets_in_net_at_edt`: in-flight at the next packet's earliest
/// departure time, less what `bw` delivers until then (plus that packet's
/// burst, `tso_goal`, when `pacing_gain` is raising in-flight).
pub fn packets_in_net_at_edt(
    tp: &CcSock,
    bw: u32,
    pacing_gain: u32,
    tso_goal: impl FnOnce() -> u32,
    inflight_now: u32,
) -> u32 {
    let now_ns = tp.clock_ns;
    let edt_ns = tp.wstamp_ns.max(now_ns);
    let interval_us = (edt_ns - now_ns) / 1_000;
    let interval_delivered = ((bw as u64 * interval_us) >> BW_SCALE) as u32;
    let mut inflight_at_edt = inflight_now;
    if pacing_gain > 1 << BBR_SCALE {
        inflight_at_edt = inflight_at_edt.wrapping_add(tso_goal());
    }
    inflight_at_edt.saturating_sub(interval_delivered)
}

/// `bbr_save_cwnd`: the last good cwnd (the larger one while recovery or
/// PROBE_RTT has cut it).
pub fn saved_cwnd(prior_cwnd: u32, prev_ca_state: CaState, in_probe_rtt: bool, cwnd: u32) -> u32 {
    if prev_ca_state < CaState::Recovery && !in_probe_rtt {
        cwnd
    } else {
        prior_cwnd.max(cwnd)
    }
}
