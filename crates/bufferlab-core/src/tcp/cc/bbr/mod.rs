//! `bbr` — BBR v1 (net/ipv4/tcp_bbr.c; docs/semantics/tcp.md §11.4; Cardwell et al.,
//! "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016).
//!
//! Units. Bandwidth in packets per µs << 24 (`BW_UNIT`; 1 unit ≈ 715 bit/s
//! at 1500-byte packets); gains << 8 (`BBR_UNIT` 256 = 1.0); windows in
//! packets; `min_rtt_us` µs; `min_rtt_stamp`, `probe_rtt_done_stamp`
//! jiffies; `cycle_mstamp`, `ack_epoch_mstamp` µs (`tcp_mstamp` clock);
//! `lt_last_stamp` ms; the bw filter's clock is the packet-timed round
//! count `rtt_cnt`.
//!
//! Constants (tcp_bbr.c): high_gain 2885/1000·256+1 = 739 (≈ 2/ln 2),
//! drain_gain 256·1000/2885 = 88, cwnd_gain 512, PROBE_BW pacing cycle
//! [320, 192, 256 ×6], bw window 10 rounds, min_rtt window 10 s, PROBE_RTT
//! at 4 packets for ≥ 200 ms and one round, full pipe after 3 rounds of
//! < 25 % growth, pacing 1 % below bw, TSO floor 1.2 Mbit/s, long-term
//! (policer) sampling over 4–16 rounds at ≥ 50/256 loss, bw agreement
//! within 1/8 or 4 kbit/s, held 48 rounds; ACK aggregation window 5 rounds,
//! gain 1.0, capped at 100 ms of bw (≥ 5.1, both profiles).
//!
//! One call per ACK ([`Bbr::cong_control`], `bbr_main`): update the model
//! (bw filter, ACK aggregation, gain cycle, full-pipe and drain checks,
//! min_rtt / PROBE_RTT, gains), then set the pacing rate and cwnd. BBR
//! requests internal pacing (`pacing_status_needed`), does not cut cwnd on
//! loss (`ssthresh` only remembers cwnd) and ignores ECN.
//!
//! Versions. The code follows 4.20+ (EDT pacing, `bbr_packets_in_net_at_edt`)
//! with ACK aggregation (5.1) and the 5.4 quantization fix (+2 packets only
//! in the 1.25× phase). `lab2019` and `modern` differ only in the round
//! counter's start at init (`next_rtt_delivered` = 0 before 6.x, the
//! current `delivered` after). The random initial PROBE_BW phase is drawn
//! from the [`ComponentRng`] given at construction.
//!
//! Files: this one holds the state, the cwnd and pacing arithmetic, the bw
//! filter and `cong_control`; states.rs the state machine; lt_bw.rs the
//! long-term (policer) bandwidth sampling; common.rs what v1 and v3 share.

use super::{
    before, CaEvent, CaState, CcInfo, CcProfile, CcSock, CongControl, CongestionOps, RateSample,
    TCP_INIT_CWND,
};
use crate::rng::ComponentRng;
use crate::tcp::minmax::MinMax;

pub(super) mod common;
mod lt_bw;
mod states;
use common::{AckAggregation, Pacing, ProbeRttTimer, BBR_SCALE, BW_SCALE, BW_UNIT};
/// 1.0 as a gain.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// Phases in the PROBE_BW pacing-gain cycle (`CYCLE_LEN`).
const CYCLE_LEN: u32 = 8;
/// Window of the bw max filter, rounds (`bbr_bw_rtts`).
const BW_RTTS: u32 = CYCLE_LEN + 2;
/// Window of the min_rtt filter, s (`bbr_min_rtt_win_sec`).
const MIN_RTT_WIN_SEC: u32 = 10;
/// Below this pacing rate TSO bursts are 1 segment, bit/s (`bbr_min_tso_rate`).
const MIN_TSO_RATE: u64 = 1_200_000;
/// Pace this many percent below the estimated bw (`bbr_pacing_margin_percent`).
const PACING_MARGIN_PERCENT: u64 = 1;
/// STARTUP pacing and cwnd gain: 2/ln 2 (`bbr_high_gain`).
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// DRAIN pacing gain: 1/high_gain (`bbr_drain_gain`).
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// PROBE_BW cwnd gain (`bbr_cwnd_gain`).
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// PROBE_BW pacing gains by phase (`bbr_pacing_gain`): probe, drain, cruise.
pub const PACING_GAIN: [u32; CYCLE_LEN as usize] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// The initial phase is drawn among this many (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Minimum cwnd, packets (`bbr_cwnd_min_target`).
const CWND_MIN_TARGET: u32 = 4;
/// Growth that counts as "still filling the pipe": 1.25 (`bbr_full_bw_thresh`).
const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// Rounds without that growth before the pipe is full (`bbr_full_bw_cnt`).
const FULL_BW_CNT: u32 = 3;
/// Long-term sampling: minimum interval, rounds (`bbr_lt_intvl_min_rtts`).
const LT_INTVL_MIN_RTTS: u32 = 4;
/// Long-term sampling: lossy if lost/delivered ≥ 50/256 (`bbr_lt_loss_thresh`).
const LT_LOSS_THRESH: u32 = 50;
/// Two intervals agree if their bw ratio is within 1/8 (`bbr_lt_bw_ratio`)...
const LT_BW_RATIO: u32 = BBR_UNIT / 8;
/// ...or within 4 kbit/s, in bytes/s (`bbr_lt_bw_diff`).
const LT_BW_DIFF: u64 = 4000 / 8;
/// Rounds to use the long-term bw once a policer is detected (`bbr_lt_bw_max_rtts`).
const LT_BW_MAX_RTTS: u32 = 48;
/// Rounds per half of the extra_acked filter (`bbr_extra_acked_win_rtts`).
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// `GSO_MAX_SIZE` (`GSO_LEGACY_MAX_SIZE` in 6.x).
const GSO_MAX_SIZE: u64 = 65_536;
/// `MAX_TCP_HEADER` on x86-64 distribution kernels:
/// L1_CACHE_ALIGN(128 + MAX_HEADER 176) = 320 bytes (docs/semantics/tcp.md §6.2).
const MAX_TCP_HEADER: u64 = 320;

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum BbrMode {
    /// ramp up the sending rate rapidly to fill the pipe
    #[default]
    Startup = 0,
    /// drain the queue created in STARTUP
    Drain = 1,
    /// discover and share bw: pace around the estimate, cycling the gain
    ProbeBw = 2,
    /// cut in-flight to the minimum to re-measure min_rtt
    ProbeRtt = 3,
}

/// BBR's per-connection state (`struct bbr`).
#[derive(Clone, Debug)]
pub struct Bbr {
    profile: CcProfile,
    rng: ComponentRng,
    /// min RTT in the 10 s window, µs (`u32::MAX` = none)
    min_rtt_us: u32,
    /// jiffies of `min_rtt_us`
    min_rtt_stamp: u32,
    probe_rtt: ProbeRttTimer,
    /// max recent delivery rate, pkts/µs << 24, over `BW_RTTS` rounds
    bw: MinMax,
    /// packet-timed rounds elapsed
    rtt_cnt: u32,
    /// `tp.delivered` at which the current round ends
    next_rtt_delivered: u32,
    /// start of the current gain-cycle phase, µs
    cycle_mstamp: u64,
    mode: BbrMode,
    /// `ca_state` seen on the previous ACK
    prev_ca_state: CaState,
    /// first round of recovery: send one packet per packet acked
    packet_conservation: bool,
    /// this ACK starts a new round
    round_start: bool,
    /// restarting after idle
    idle_restart: bool,
    /// taking long-term samples
    lt_is_sampling: bool,
    /// rounds in the long-term interval (7 bits in the kernel)
    lt_rtt_cnt: u32,
    /// pace at the long-term bw (policer detected)
    lt_use_bw: bool,
    /// long-term delivery rate, pkts/µs << 24
    lt_bw: u32,
    /// long-term interval start: `tp.delivered`
    lt_last_delivered: u32,
    /// long-term interval start: `delivered_mstamp`, ms
    lt_last_stamp: u32,
    /// long-term interval start: `tp.lost`
    lt_last_lost: u32,
    /// current pacing gain << 8
    pacing_gain: u32,
    /// current cwnd gain << 8
    cwnd_gain: u32,
    full_bw_reached: bool,
    /// rounds without 25 % bw growth
    full_bw_cnt: u32,
    /// index into `PACING_GAIN`
    cycle_idx: u32,
    has_seen_rtt: bool,
    /// cwnd before loss recovery or PROBE_RTT, packets
    prior_cwnd: u32,
    /// recent bw, to tell whether the pipe is full, pkts/µs << 24
    full_bw: u32,
    /// ACK aggregation (`ack_epoch_*`, `extra_acked*`)
    aggr: AckAggregation,
}

/// `bbr_min_tso_segs` (the `min_tso_segs` hook): 1 below 1.2 Mbit/s of
/// pacing, else 2.
pub fn min_tso_segs(tp: &CcSock) -> u32 {
    if tp.pacing_rate < MIN_TSO_RATE >> 3 {
        1
    } else {
        2
    }
}

impl Bbr {
    /// An uninitialised BBR (zeroed like `icsk_ca_priv`); `init` follows.
    pub fn new(profile: CcProfile, rng: ComponentRng) -> Bbr {
        Bbr {
            profile,
            rng,
            min_rtt_us: 0,
            min_rtt_stamp: 0,
            probe_rtt: ProbeRttTimer::default(),
            bw: MinMax::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: BbrMode::Startup,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            aggr: AckAggregation::default(),
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }

    /// Current pacing gain << 8.
    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    /// Current cwnd gain << 8.
    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }

    /// Index of the PROBE_BW phase.
    pub fn cycle_idx(&self) -> u32 {
        self.cycle_idx
    }

    /// `bbr_full_bw_reached`: STARTUP estimated the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// min RTT of the 10 s window, µs.
    pub fn min_rtt_us(&self) -> u32 {
        self.min_rtt_us
    }

    /// `bbr_max_bw`: the windowed max delivery rate, pkts/µs << 24.
    pub fn max_bw(&self) -> u32 {
        self.bw.get()
    }

    /// `bbr_bw`: the bw the model uses (long-term bw while policed).
    pub fn bw(&self) -> u32 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.max_bw()
        }
    }

    /// `bbr_extra_acked`: max ACK-aggregation excess over the last 5–10 rounds.
    fn extra_acked(&self) -> u16 {
        self.aggr.max()
    }

    /// `bbr_rate_bytes_per_sec`: `rate` (pkts/µs << 24) × mss × gain, less
    /// the pacing margin, in bytes/s. Multiplication order as the kernel's
    /// (no u64 overflow up to ~2.9 Tbit/s at gain 2.89).
    fn rate_bytes_per_sec(tp: &CcSock, rate: u64, gain: u32) -> u64 {
        common::rate_bytes_per_sec(tp.mss_cache, rate, gain, PACING_MARGIN_PERCENT)
    }

    /// `bbr_tso_segs_goal`: about 1 ms of data per TSO burst
    /// (`sk_pacing_shift` 10), at most 64 KB and 127 segments.
    fn tso_segs_goal(tp: &CcSock) -> u32 {
        let bytes = (tp.pacing_rate >> 10).min(GSO_MAX_SIZE - 1 - MAX_TCP_HEADER);
        let segs = ((bytes / tp.mss_cache as u64) as u32).max(min_tso_segs(tp));
        segs.min(0x7f)
    }

    /// `bbr_save_cwnd`: remember the last good cwnd (the larger one while
    /// recovery or PROBE_RTT has cut it).
    fn save_cwnd(&mut self, tp: &CcSock) {
        let probe_rtt = self.mode == BbrMode::ProbeRtt;
        self.prior_cwnd =
            common::saved_cwnd(self.prior_cwnd, self.prev_ca_state, probe_rtt, tp.snd_cwnd);
    }

    /// `bbr_bdp`: ⌈bw × min_rtt × gain⌉ packets (`TCP_INIT_CWND` before any
    /// RTT sample).
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return TCP_INIT_CWND;
        }
        let w = bw as u64 * self.min_rtt_us as u64;
        // apply the gain, drop the BW_SCALE shift, round up
        (w.wrapping_mul(gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT) as u32
    }

    /// `bbr_quantization_budget`: room for 3 TSO bursts (qdisc, TSO engine,
    /// receiver GRO), rounded up to even; +2 in the 1.25× phase so probing
    /// raises in-flight even for tiny BDPs.
    fn quantization_budget(&self, tp: &CcSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.wrapping_add(3 * Self::tso_segs_goal(tp));
        cwnd = cwnd.wrapping_add(1) & !1;
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`: the in-flight target for `bw` and `gain`.
    fn inflight(&self, tp: &CcSock, bw: u32, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt`: in-flight at the next packet's earliest
    /// departure time, less what bw delivers until then (plus that
    /// packet's burst when the gain is raising in-flight).
    fn packets_in_net_at_edt(&self, tp: &CcSock, inflight_now: u32) -> u32 {
        let tso_goal = || Self::tso_segs_goal(tp);
        common::packets_in_net_at_edt(tp, self.bw(), self.pacing_gain, tso_goal, inflight_now)
    }

    /// `bbr_ack_aggregation_cwnd`: extra cwnd for ACK aggregation, once the
    /// pipe is full: the recent max excess, at most 100 ms of bw.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if !self.full_bw_reached {
            return 0;
        }
        self.aggr.cwnd(self.bw())
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: deduct losses; on the first
    /// round of Recovery send one packet per packet acked (packet
    /// conservation); on leaving recovery restore the cwnd saved before it.
    /// Returns the cwnd and whether packet conservation decides it.
    fn set_cwnd_to_recover_or_restore(
        &mut self,
        tp: &CcSock,
        rs: &RateSample,
        acked: u32,
    ) -> (bool, u32) {
        let prev_state = self.prev_ca_state;
        let state = tp.ca_state;
        let mut cwnd = tp.snd_cwnd;
        if rs.losses > 0 {
            cwnd = (cwnd.wrapping_sub(rs.losses as u32) as i32).max(1) as u32;
        }
        if state == CaState::Recovery && prev_state != CaState::Recovery {
            self.packet_conservation = true;
            self.next_rtt_delivered = tp.delivered; // start a round now
            cwnd = tp.packets_in_flight.wrapping_add(acked);
        } else if prev_state >= CaState::Recovery && state < CaState::Recovery {
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (true, cwnd.max(tp.packets_in_flight.wrapping_add(acked)));
        }
        (false, cwnd)
    }

    /// `bbr_set_cwnd`: slow-start towards the target (BDP × gain + ACK
    /// aggregation allowance + quantization budget) while bw grows or
    /// after losses, snap down to it once the pipe is full; at least 4,
    /// exactly ≤ 4 in PROBE_RTT.
    fn set_cwnd(&mut self, tp: &mut CcSock, rs: &RateSample, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.snd_cwnd;
        if acked != 0 {
            let (conservation, c) = self.set_cwnd_to_recover_or_restore(tp, rs, acked);
            cwnd = c;
            if !conservation {
                let mut target = self.bdp(bw, gain);
                target = target.wrapping_add(self.ack_aggregation_cwnd());
                target = self.quantization_budget(tp, target);
                if self.full_bw_reached {
                    cwnd = cwnd.wrapping_add(acked).min(target);
                } else if cwnd < target || tp.delivered < TCP_INIT_CWND {
                    cwnd = cwnd.wrapping_add(acked);
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
        if self.mode == BbrMode::ProbeRtt {
            tp.snd_cwnd = tp.snd_cwnd.min(CWND_MIN_TARGET);
        }
    }

    /// `bbr_update_bw`: count packet-timed rounds and feed the delivery
    /// rate into the 10-round max filter (app-limited samples only if they
    /// raise it).
    fn update_bw(&mut self, tp: &CcSock, rs: &RateSample) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval_us <= 0 {
            return;
        }
        if !before(rs.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = tp.delivered;
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tp, rs);
        let bw = rs.delivered as u64 * BW_UNIT / rs.interval_us as u64;
        if !rs.is_app_limited || bw >= self.max_bw() as u64 {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw as u32);
        }
    }

    /// `bbr_update_ack_aggregation`: excess of packets acked in the
    /// current epoch over bw × epoch length, max-filtered over two
    /// half-windows of 5 rounds and capped at cwnd.
    fn update_ack_aggregation(&mut self, tp: &CcSock, rs: &RateSample) {
        let bw = self.bw();
        self.aggr
            .update(tp, rs, bw, self.round_start, EXTRA_ACKED_WIN_RTTS);
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_bw(tp, rs);
        self.update_ack_aggregation(tp, rs);
        self.update_cycle_phase(tp, rs);
        self.check_full_bw_reached(rs);
        self.check_drain(tp);
        self.update_min_rtt(tp, rs);
        self.update_gains();
    }

    /// `bbr_main` (the `cong_control` hook): update the model, then pacing
    /// rate and cwnd.
    pub fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_model(tp, rs);
        let bw = self.bw();
        self.set_pacing_rate(tp, bw, self.pacing_gain);
        self.set_cwnd(tp, rs, rs.acked_sacked, bw, self.cwnd_gain);
    }
}

impl Pacing for Bbr {
    const STARTUP_GAIN: u32 = HIGH_GAIN;

    /// `bbr_bw_to_pacing_rate`: bytes/s, at most `max_pacing_rate`.
    fn bw_to_pacing_rate(tp: &CcSock, bw: u32, gain: u32) -> u64 {
        Self::rate_bytes_per_sec(tp, bw as u64, gain).min(tp.max_pacing_rate)
    }

    fn seen_rtt(&mut self) -> &mut bool {
        &mut self.has_seen_rtt
    }

    fn pipe_full(&self) -> bool {
        self.full_bw_reached
    }
}

/// `tcp_bbr_cong_ops` (tcp_bbr.c); no `cong_avoid` and no `pkts_acked`:
/// `cong_control` does the work.
impl CongestionOps for Bbr {
    const NAME: &'static str = "bbr";

    fn create(profile: CcProfile, rng: ComponentRng) -> Bbr {
        Bbr::new(profile, rng)
    }

    /// `bbr_init`: STARTUP, infinite ssthresh, min_rtt from the handshake,
    /// pacing at high_gain × cwnd / srtt, internal pacing requested.
    fn init(&mut self, tp: &mut CcSock) {
        self.prior_cwnd = 0;
        tp.snd_ssthresh = super::TCP_INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = match self.profile {
            CcProfile::Lab2019 => 0,
            CcProfile::Modern => tp.delivered,
        };
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt = ProbeRttTimer::default();
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies;
        self.bw.reset(self.rtt_cnt, 0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tp);
        self.reset_startup_mode();
        self.aggr = AckAggregation::new(tp.now_us);
        tp.pacing_status_needed = true;
    }

    /// `bbr_ssthresh`: BBR does not reduce on loss; remember cwnd for the
    /// end of recovery and keep ssthresh.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.save_cwnd(tp);
        tp.snd_ssthresh
    }

    /// `bbr_set_state`: an RTO ends a round, restarts full-pipe growth
    /// tracking and counts as a loss for policer sampling.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            let rs = RateSample {
                delivered: 0,
                interval_us: 0,
                rtt_us: 0,
                losses: 1,
                ..RateSample::default()
            };
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(tp, &rs);
        }
    }

    /// `bbr_cwnd_event`: restarting from idle while app-limited: pace at
    /// 1.0 × bw in PROBE_BW, maybe leave PROBE_RTT.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev == CaEvent::TxStart && tp.app_limited != 0 {
            self.idle_restart = true;
            self.aggr.restart_epoch(tp.now_us);
            if self.mode == BbrMode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            } else if self.mode == BbrMode::ProbeRtt {
                self.check_probe_rtt_done(tp);
            }
        }
    }

    /// `bbr_undo_cwnd`: a spurious reduction: restart full-pipe detection
    /// and policer sampling; cwnd stays.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tp);
        tp.snd_cwnd
    }

    /// `bbr_main`: see [`Bbr::cong_control`].
    const CONG_CONTROL: Option<CongControl<Bbr>> = Some(Bbr::cong_control);

    /// `bbr_sndbuf_expand`: 3 × cwnd, since BBR may slow-start even
    /// during recovery.
    fn sndbuf_expand(&self) -> u32 {
        3
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(&self, tp: &CcSock) -> u32 {
        min_tso_segs(tp)
    }

    /// `bbr_get_info`: `struct tcp_bbr_info` for `ss -i` (bw in bytes/s
    /// at the current MSS, min_rtt in µs, gains in BBR_UNIT = 256).
    fn get_info(&self, tp: &CcSock) -> Option<CcInfo> {
        let bw = (self.bw() as u64 * tp.mss_cache as u64 * 1_000_000) >> BW_SCALE;
        Some(CcInfo::Bbr {
            bw,
            min_rtt: self.min_rtt_us,
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
        })
    }

    /// Trace values: mode, gains, the bw estimate (bit/s at this MSS),
    /// min_rtt, phase, pipe-full and policer flags, ACK aggregation.
    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.extend_from_slice(&[
            ("bbr_mode", self.mode as u8 as f64),
            ("bbr_pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64),
            ("bbr_cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64),
            ("bbr_bw_pkts_per_us", self.bw() as f64 / BW_UNIT as f64),
            ("bbr_min_rtt_us", self.min_rtt_us as f64),
            ("bbr_cycle_idx", self.cycle_idx as f64),
            ("bbr_full_bw_reached", self.full_bw_reached as u8 as f64),
            ("bbr_lt_use_bw", self.lt_use_bw as u8 as f64),
            ("bbr_rtt_cnt", self.rtt_cnt as f64),
            ("bbr_extra_acked", self.extra_acked() as f64),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::{Fluid, Path};
    use super::super::{Cc, INITIAL_JIFFIES, TCP_INFINITE_SSTHRESH};
    use super::*;
    use std::collections::BTreeSet;

    const J0: u32 = INITIAL_JIFFIES + 1_000;

    /// A BBR just initialised on a connection whose handshake measured
    /// 20 ms (srtt and min_rtt), at jiffies J0.
    fn started(profile: CcProfile) -> (Bbr, CcSock) {
        let mut tp = CcSock {
            srtt_us: 20_000 << 3,
            min_rtt_us: 20_000,
            jiffies: J0,
            now_us: 4_000_000,
            clock_ns: 4_000_000_000,
            delivered_mstamp: 4_000_000,
            ..CcSock::default()
        };
        let mut b = Bbr::new(profile, ComponentRng::new(1, "bbr"));
        b.init(&mut tp);
        (b, tp)
    }

    /// One ACK delivering `d` packets, sampled over `interval_us`, with RTT
    /// `rtt_us`; `new_round` decides whether it ends a packet-timed round.
    fn ack(b: &mut Bbr, tp: &mut CcSock, d: u32, interval_us: i64, rtt_us: i64, new_round: bool) {
        tp.delivered += d;
        let prior_delivered = if new_round {
            tp.delivered - d
        } else {
            b.next_rtt_delivered.wrapping_sub(1)
        };
        let rs = RateSample {
            prior_delivered,
            delivered: d as i32,
            interval_us,
            rtt_us,
            acked_sacked: d,
            prior_in_flight: tp.packets_in_flight,
            ..RateSample::default()
        };
        b.cong_control(tp, &rs);
    }

    #[test]
    fn gains_are_the_kernels_fixed_point_constants() {
        assert_eq!(HIGH_GAIN, 739); // 256·2885/1000 = 738 (+1): 2.887 ≈ 2/ln 2
        assert_eq!(DRAIN_GAIN, 88); // 256 000/2885 = 88.7 → 88
        assert_eq!(CWND_GAIN, 512);
        assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
        assert_eq!(FULL_BW_THRESH, 320); // 1.25
        assert_eq!(BW_RTTS, 10);
    }

    #[test]
    fn init_paces_at_high_gain_times_the_initial_window_over_srtt() {
        let (b, tp) = started(CcProfile::Modern);
        // bw = 10·2^24/20 000 = 8388; 8388·1448·739>>8 ·990 000 >> 24
        assert_eq!(tp.pacing_rate, 2_068_934);
        assert!(tp.pacing_status_needed);
        assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        assert_eq!(
            (b.mode, b.min_rtt_us, b.min_rtt_stamp),
            (BbrMode::Startup, 20_000, J0)
        );
        // no RTT sample yet: a nominal 1 ms, bw = 167 772
        let mut tp = CcSock::default();
        let mut b = Bbr::new(CcProfile::Modern, ComponentRng::new(1, "bbr"));
        b.init(&mut tp);
        assert_eq!(tp.pacing_rate, 41_381_651);
        assert!(!b.has_seen_rtt);
        assert_eq!(b.bdp(1_000_000, BBR_UNIT), TCP_INIT_CWND);
    }

    #[test]
    fn pacing_rate_is_bw_times_gain_one_percent_below() {
        let tp = CcSock::default(); // mss 1448
                                    // 0.1 packet/µs = 1 677 721 units: 0.1·1448·10^6·0.99 = 143 352 000
                                    // ideally; the kernel's order of operations gives 143 351 948
        assert_eq!(
            Bbr::rate_bytes_per_sec(&tp, 1_677_721, BBR_UNIT),
            143_351_948
        );
        assert_eq!(Bbr::rate_bytes_per_sec(&tp, 1_677_721, 320), 179_189_935);
        assert_eq!(
            Bbr::rate_bytes_per_sec(&tp, 1_677_721, HIGH_GAIN),
            413_816_758
        );
        // SO_MAX_PACING_RATE caps it
        let capped = CcSock {
            max_pacing_rate: 100_000_000,
            ..CcSock::default()
        };
        assert_eq!(
            Bbr::bw_to_pacing_rate(&capped, 1_677_721, BBR_UNIT),
            100_000_000
        );
    }

    #[test]
    fn startup_never_lowers_the_pacing_rate() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.set_pacing_rate(&mut tp, 1_000, HIGH_GAIN);
        assert_eq!(tp.pacing_rate, 2_068_934);
        b.full_bw_reached = true;
        b.set_pacing_rate(&mut tp, 1_000, HIGH_GAIN);
        assert!(tp.pacing_rate < 2_068_934);
    }

    #[test]
    fn probe_bw_starts_anywhere_but_the_drain_phase_and_cycles_in_order() {
        let tp = CcSock::default();
        let mut starts = BTreeSet::new();
        for seed in 0..200 {
            let mut b = Bbr::new(CcProfile::Modern, ComponentRng::new(seed, "bbr"));
            b.reset_probe_bw_mode(&tp);
            assert_eq!(b.mode, BbrMode::ProbeBw);
            starts.insert(b.cycle_idx);
        }
        // 7 − U{0..6}, advanced once: {2, …, 7, 0}; never 1 (the 0.75 phase)
        assert_eq!(starts, BTreeSet::from([0, 2, 3, 4, 5, 6, 7]));

        let mut b = Bbr::new(CcProfile::Modern, ComponentRng::new(1, "bbr"));
        b.mode = BbrMode::ProbeBw;
        let mut gains = Vec::new();
        for _ in 0..9 {
            b.update_gains();
            gains.push(b.pacing_gain);
            b.advance_cycle_phase(&tp);
        }
        assert_eq!(gains, [320, 192, 256, 256, 256, 256, 256, 256, 320]);
        assert_eq!(b.cwnd_gain, CWND_GAIN);
    }

    #[test]
    fn a_phase_lasts_one_min_rtt_and_probing_waits_for_inflight() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.mode = BbrMode::ProbeBw;
        b.bw.reset(0, 167_772); // 0.01 packet/µs
        b.cycle_idx = 2;
        b.pacing_gain = BBR_UNIT;
        b.cycle_mstamp = tp.delivered_mstamp;
        let rs = RateSample {
            prior_in_flight: 10,
            ..RateSample::default()
        };
        tp.delivered_mstamp += 20_000; // exactly min_rtt: not yet
        assert!(!b.is_next_cycle_phase(&tp, &rs));
        tp.delivered_mstamp += 1;
        assert!(b.is_next_cycle_phase(&tp, &rs));
        // 1.25×: needs in-flight ≥ inflight(bw, 320): bdp ⌈0.01·20 000·1.25⌉
        // = 250, + 3·2 TSO = 256, +2 in phase 0 = 258; in-flight counts +2
        // for the packet leaving at EDT
        b.cycle_idx = 0;
        b.pacing_gain = 320;
        assert_eq!(b.inflight(&tp, 167_772, 320), 258);
        let rs = RateSample {
            prior_in_flight: 255,
            ..RateSample::default()
        };
        assert!(!b.is_next_cycle_phase(&tp, &rs));
        let rs = RateSample {
            prior_in_flight: 256,
            ..RateSample::default()
        };
        assert!(b.is_next_cycle_phase(&tp, &rs));
        // …or a loss
        let rs = RateSample {
            prior_in_flight: 10,
            losses: 1,
            ..RateSample::default()
        };
        assert!(b.is_next_cycle_phase(&tp, &rs));
        // 0.75×: ends early once in-flight ≤ inflight(bw, 256) = 200 + 6
        b.cycle_idx = 1;
        b.pacing_gain = 192;
        b.cycle_mstamp = tp.delivered_mstamp;
        let rs = RateSample {
            prior_in_flight: 206,
            ..RateSample::default()
        };
        assert!(b.is_next_cycle_phase(&tp, &rs));
        let rs = RateSample {
            prior_in_flight: 207,
            ..RateSample::default()
        };
        assert!(!b.is_next_cycle_phase(&tp, &rs));
    }

    #[test]
    fn full_bw_after_three_rounds_of_less_than_25_percent_growth() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        tp.packets_in_flight = 1_000; // keeps DRAIN from ending at once
                                      // bw = d·2^24/10^6: 100 → 1677, 200 → 3355, 240 → 4026
        ack(&mut b, &mut tp, 100, 1_000_000, 20_000, true);
        assert_eq!((b.full_bw, b.full_bw_cnt), (1_677, 0));
        ack(&mut b, &mut tp, 200, 1_000_000, 20_000, true);
        assert_eq!((b.full_bw, b.full_bw_cnt), (3_355, 0)); // ≥ 1677·1.25 = 2096
                                                            // 4026 < 3355·320>>8 = 4193: no significant growth, three times
        ack(&mut b, &mut tp, 240, 1_000_000, 20_000, true);
        assert_eq!(
            (b.full_bw, b.full_bw_cnt, b.mode),
            (3_355, 1, BbrMode::Startup)
        );
        // app-limited rounds do not count
        tp.delivered += 240;
        let rs = RateSample {
            prior_delivered: tp.delivered - 240,
            delivered: 240,
            interval_us: 1_000_000,
            rtt_us: 20_000,
            acked_sacked: 240,
            is_app_limited: true,
            ..RateSample::default()
        };
        b.cong_control(&mut tp, &rs);
        assert_eq!(b.full_bw_cnt, 1);
        // nor do ACKs within a round
        ack(&mut b, &mut tp, 240, 1_000_000, 20_000, false);
        assert_eq!(b.full_bw_cnt, 1);
        ack(&mut b, &mut tp, 240, 1_000_000, 20_000, true);
        assert_eq!((b.full_bw_cnt, b.mode), (2, BbrMode::Startup));
        ack(&mut b, &mut tp, 240, 1_000_000, 20_000, true);
        assert!(b.full_bw_reached);
        assert_eq!(b.mode, BbrMode::Drain);
        assert_eq!((b.pacing_gain, b.cwnd_gain), (DRAIN_GAIN, HIGH_GAIN));
        // ssthresh = inflight(4026, 1.0): ⌈4026·20 000/2^24⌉ = 5, + 3·2 TSO
        // segments = 11, rounded up to even: 12
        assert_eq!(tp.snd_ssthresh, 12);
        // DRAIN paces at 88/256 of 4026: 118 249 B/s < 1.2 Mbit/s, so the
        // TSO goal is now 1 and the 1.0× target 5 + 3 = 8 (even)
        assert_eq!(tp.pacing_rate, 118_249);
        tp.packets_in_flight = 9;
        ack(&mut b, &mut tp, 1, 1_000_000, 20_000, false);
        assert_eq!(b.mode, BbrMode::Drain);
        tp.packets_in_flight = 8;
        ack(&mut b, &mut tp, 1, 1_000_000, 20_000, false);
        assert_eq!(b.mode, BbrMode::ProbeBw);
        assert_ne!(b.cycle_idx, 1);
    }

    #[test]
    fn bw_filter_keeps_the_best_round_for_ten_rounds() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        ack(&mut b, &mut tp, 200, 1_000_000, 20_000, true); // round 1: 3355
        assert_eq!((b.rtt_cnt, b.max_bw()), (1, 3_355));
        for r in 2..=11 {
            ack(&mut b, &mut tp, 100, 1_000_000, 20_000, true); // 1677
            assert_eq!((b.rtt_cnt, b.max_bw()), (r, 3_355), "round {r}");
        }
        ack(&mut b, &mut tp, 100, 1_000_000, 20_000, true);
        assert_eq!((b.rtt_cnt, b.max_bw()), (12, 1_677));
    }

    #[test]
    fn app_limited_samples_only_count_when_they_raise_the_max() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        ack(&mut b, &mut tp, 200, 1_000_000, 20_000, true);
        let mut rs = RateSample {
            delivered: 100,
            interval_us: 1_000_000,
            rtt_us: 20_000,
            acked_sacked: 100,
            is_app_limited: true,
            ..RateSample::default()
        };
        tp.delivered += 100;
        rs.prior_delivered = tp.delivered - 100;
        b.update_bw(&tp, &rs);
        assert_eq!(b.bw.get(), 3_355);
        // the filter's 2nd choice was not touched either: after the window
        // the app-limited 1677 is gone
        rs.delivered = 300; // 5033 > 3355: taken although app-limited
        b.update_bw(&tp, &rs);
        assert_eq!(b.max_bw(), 5_033);
        // invalid samples are ignored entirely
        b.update_bw(
            &tp,
            &RateSample {
                interval_us: -1,
                delivered: 900,
                ..rs
            },
        );
        assert_eq!(b.max_bw(), 5_033);
    }

    #[test]
    fn probe_rtt_after_10_s_without_a_lower_rtt_holds_cwnd_at_4() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.full_bw_reached = true;
        b.mode = BbrMode::ProbeBw;
        b.cycle_idx = 2;
        b.pacing_gain = BBR_UNIT;
        tp.snd_cwnd = 100;
        tp.packets_in_flight = 100;
        tp.snd_ssthresh = 80;
        // bw 10 packets/ms: 10·2^24/1000 = 167 772; target cwnd ⌈0.01·25 000
        // ·2⌉ = 500 + 6 > 100
        tp.jiffies = J0 + 2_500; // exactly 10 s: not expired
        ack(&mut b, &mut tp, 10, 1_000, 25_000, true);
        assert_eq!((b.mode, b.min_rtt_us), (BbrMode::ProbeBw, 20_000));
        assert_eq!(tp.snd_cwnd, 110);
        tp.jiffies = J0 + 2_501;
        ack(&mut b, &mut tp, 10, 1_000, 25_000, false);
        assert_eq!(b.mode, BbrMode::ProbeRtt);
        // the expired filter takes the current sample as the new min
        assert_eq!((b.min_rtt_us, b.min_rtt_stamp), (25_000, J0 + 2_501));
        assert_eq!(b.prior_cwnd, 110);
        assert_eq!(tp.snd_cwnd, 4);
        assert_eq!((b.pacing_gain, b.cwnd_gain), (BBR_UNIT, BBR_UNIT));
        assert_eq!(tp.app_limited, tp.delivered + 100);
        assert_eq!(b.probe_rtt.done_stamp, 0); // in-flight still 100
                                               // in-flight reaches 4: 200 ms (50 jiffies) start now
        tp.packets_in_flight = 4;
        tp.jiffies = J0 + 2_510;
        ack(&mut b, &mut tp, 10, 1_000, 25_000, false);
        assert_eq!(b.probe_rtt.done_stamp, J0 + 2_560);
        assert_eq!(tp.snd_cwnd, 4);
        // a round passes, but 200 ms have not
        tp.jiffies = J0 + 2_530;
        ack(&mut b, &mut tp, 10, 1_000, 25_000, true);
        assert!(b.probe_rtt.round_done);
        assert_eq!(b.mode, BbrMode::ProbeRtt);
        tp.jiffies = J0 + 2_560; // not after the stamp
        ack(&mut b, &mut tp, 10, 1_000, 25_000, false);
        assert_eq!(b.mode, BbrMode::ProbeRtt);
        tp.jiffies = J0 + 2_561;
        ack(&mut b, &mut tp, 10, 1_000, 25_000, false);
        assert_eq!(b.mode, BbrMode::ProbeBw);
        assert_eq!(b.min_rtt_stamp, J0 + 2_561);
        // cwnd restored to the saved 110, then +10 acked (below target)
        assert_eq!(tp.snd_cwnd, 120);
    }

    #[test]
    fn probe_rtt_is_skipped_while_restarting_from_idle() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.mode = BbrMode::ProbeBw;
        b.full_bw_reached = true;
        tp.app_limited = 5;
        b.cwnd_event(&mut tp, CaEvent::TxStart);
        assert!(b.idle_restart);
        tp.jiffies = J0 + 2_501;
        // an ACK that delivers nothing keeps the idle restart
        b.cong_control(&mut tp, &RateSample::default());
        assert_eq!(b.mode, BbrMode::ProbeBw);
        ack(&mut b, &mut tp, 1, 1_000, 25_000, true);
        assert!(!b.idle_restart);
    }

    #[test]
    fn idle_restart_in_probe_bw_paces_at_one_times_bw() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.mode = BbrMode::ProbeBw;
        b.full_bw_reached = true;
        b.bw.reset(0, 1_677_721);
        tp.pacing_rate = 999_999_999;
        b.cwnd_event(&mut tp, CaEvent::TxStart); // not app-limited: nothing
        assert_eq!(tp.pacing_rate, 999_999_999);
        tp.app_limited = 7;
        b.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(tp.pacing_rate, 143_351_948);
        assert_eq!(b.aggr.epoch_mstamp, tp.now_us);
    }

    #[test]
    fn quantization_budget_gives_the_lab7_cwnd_on_a_no_delay_path() {
        // 1 Gb/s tbf: 82 562 packets/s = 1 385 160 units; pacing at 1.0 ×
        // that is 118 MB/s: TSO goal min(118e6 >> 10, 65 215)/1448 = 45
        let (mut b, mut tp) = started(CcProfile::Modern);
        let bw = 1_385_160;
        tp.pacing_rate = Bbr::rate_bytes_per_sec(&tp, bw, BBR_UNIT);
        assert_eq!(tp.pacing_rate, 118_354_234);
        assert_eq!(Bbr::tso_segs_goal(&tp), 45);
        // min_rtt 30 µs: bdp ⌈1 385 160·30·2/2^24⌉ = 5; 5 + 135 = 140 (even)
        // = 202 720 bytes ≈ 198 KiB, the handout's 195–198 KB (docs/semantics/tcp.md §11.4)
        b.min_rtt_us = 30;
        b.mode = BbrMode::ProbeBw;
        b.cycle_idx = 2;
        assert_eq!(b.inflight(&tp, bw as u32, CWND_GAIN), 140);
        // 20 ms: bdp 3303 + 135 = 3438; +2 in the 1.25× phase
        b.min_rtt_us = 20_000;
        assert_eq!(b.inflight(&tp, bw as u32, CWND_GAIN), 3_438);
        b.cycle_idx = 0;
        assert_eq!(b.inflight(&tp, bw as u32, CWND_GAIN), 3_440);
    }

    #[test]
    fn tso_segments_drop_to_one_below_1_2_mbit() {
        let mut tp = CcSock {
            pacing_rate: 149_999,
            ..CcSock::default()
        };
        assert_eq!((min_tso_segs(&tp), Bbr::tso_segs_goal(&tp)), (1, 1));
        tp.pacing_rate = 150_000;
        assert_eq!((min_tso_segs(&tp), Bbr::tso_segs_goal(&tp)), (2, 2));
        tp.pacing_rate = 10_000_000_000; // capped at 127
        tp.mss_cache = 100;
        assert_eq!(Bbr::tso_segs_goal(&tp), 127);
        let cc = Cc::from_name("bbr").unwrap();
        assert_eq!(cc.min_tso_segs(&tp), 2);
        assert_eq!(Cc::from_name("cubic").unwrap().min_tso_segs(&tp), 2);
    }

    #[test]
    fn inflight_at_edt_subtracts_what_bw_delivers_until_departure() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.bw.reset(0, 167_772); // 0.01 packet/µs
        b.pacing_gain = BBR_UNIT;
        tp.wstamp_ns = tp.clock_ns + 500_000; // next departure in 500 µs
                                              // 167 772·500 >> 24 = 4 packets delivered meanwhile
        assert_eq!(b.packets_in_net_at_edt(&tp, 30), 26);
        b.pacing_gain = 320; // raising in-flight: + the EDT burst (2)
        assert_eq!(b.packets_in_net_at_edt(&tp, 30), 28);
        assert_eq!(b.packets_in_net_at_edt(&tp, 1), 0);
        tp.wstamp_ns = 0; // departure in the past: nothing subtracted
        b.pacing_gain = BBR_UNIT;
        assert_eq!(b.packets_in_net_at_edt(&tp, 30), 30);
    }

    #[test]
    fn ack_aggregation_adds_the_excess_acked_to_the_cwnd_target() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.full_bw_reached = true;
        b.bw.reset(0, 167_772); // 10 packets/ms
        tp.snd_cwnd = 200;
        let rs = |n: u32| RateSample {
            delivered: n as i32,
            interval_us: 1_000,
            acked_sacked: n,
            ..RateSample::default()
        };
        // 1 ms after the epoch start 10 were expected; none counted yet, so
        // the epoch restarts here and all 50 are excess
        tp.delivered_mstamp += 1_000;
        b.update_ack_aggregation(&tp, &rs(50));
        assert_eq!((b.aggr.epoch_acked, b.aggr.extra_acked[0]), (50, 50));
        // same instant, 30 more: 80 excess
        b.update_ack_aggregation(&tp, &rs(30));
        assert_eq!(b.aggr.extra_acked[0], 80);
        // 5 ms later 10 more: expected 167 772·5000>>24 = 50, excess 40
        tp.delivered_mstamp += 5_000;
        b.update_ack_aggregation(&tp, &rs(10));
        assert_eq!((b.aggr.epoch_acked, b.aggr.extra_acked[0]), (90, 80));
        // the allowance: min(80, bw·100 ms = 1000)
        assert_eq!(b.ack_aggregation_cwnd(), 80);
        // capped by cwnd when recorded, by 100 ms of bw when used
        b.bw.reset(0, 1_677); // 0.1 packet/ms: 100 ms = 9 packets
        assert_eq!(b.ack_aggregation_cwnd(), 9);
        // none before the pipe is full
        b.full_bw_reached = false;
        assert_eq!(b.ack_aggregation_cwnd(), 0);
    }

    #[test]
    fn extra_acked_window_flips_every_five_rounds() {
        let (mut b, tp) = started(CcProfile::Modern);
        b.aggr.extra_acked = [30, 0];
        let rs = RateSample {
            delivered: 1,
            interval_us: 1_000,
            acked_sacked: 1,
            ..RateSample::default()
        };
        b.round_start = true;
        for _ in 0..4 {
            b.update_ack_aggregation(&tp, &rs);
        }
        assert_eq!((b.aggr.win_idx, b.aggr.win_rtts), (0, 4));
        b.update_ack_aggregation(&tp, &rs);
        assert_eq!((b.aggr.win_idx, b.aggr.win_rtts), (1, 0));
        assert_eq!(b.extra_acked(), 30); // the old half still counts
        for _ in 0..5 {
            b.update_ack_aggregation(&tp, &rs);
        }
        assert_eq!(b.aggr.win_idx, 0);
        assert!(b.extra_acked() < 30); // 5–10 rounds later it is gone
    }

    #[test]
    fn recovery_conserves_packets_for_a_round_then_restores_cwnd() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.full_bw_reached = true;
        b.mode = BbrMode::ProbeBw;
        b.cycle_idx = 2;
        b.bw.reset(0, 167_772);
        tp.snd_cwnd = 100;
        tp.snd_ssthresh = 77;
        // entering recovery: ssthresh keeps its value, cwnd is saved
        assert_eq!(b.ssthresh(&tp), 77);
        assert_eq!(b.prior_cwnd, 100);
        tp.ca_state = CaState::Recovery;
        tp.packets_in_flight = 50;
        let rs = RateSample {
            prior_delivered: b.next_rtt_delivered.wrapping_sub(1),
            delivered: 2,
            interval_us: 1_000,
            rtt_us: 20_000,
            acked_sacked: 2,
            losses: 3,
            ..RateSample::default()
        };
        tp.delivered += 2;
        b.cong_control(&mut tp, &rs);
        // first round of recovery: cwnd = in-flight + acked = 52
        assert!(b.packet_conservation);
        assert_eq!(tp.snd_cwnd, 52);
        assert_eq!(b.next_rtt_delivered, tp.delivered);
        // within the round: never below in-flight + acked
        tp.packets_in_flight = 51;
        ack(&mut b, &mut tp, 1, 1_000, 20_000, false);
        assert_eq!(tp.snd_cwnd, 52);
        // next round: conservation ends, cwnd grows by acked toward target
        ack(&mut b, &mut tp, 2, 1_000, 20_000, true);
        assert!(!b.packet_conservation);
        assert_eq!(tp.snd_cwnd, 54);
        // recovery over: back to the saved 100 (+1 acked)
        tp.ca_state = CaState::Open;
        ack(&mut b, &mut tp, 1, 1_000, 20_000, false);
        assert_eq!(tp.snd_cwnd, 101);
    }

    #[test]
    fn losses_are_deducted_from_cwnd_but_not_below_one() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        tp.snd_cwnd = 3;
        let rs = RateSample {
            losses: 5,
            ..RateSample::default()
        };
        let (_, cwnd) = b.set_cwnd_to_recover_or_restore(&tp, &rs, 1);
        assert_eq!(cwnd, 1);
    }

    #[test]
    fn rto_ends_the_round_and_starts_policer_sampling() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.full_bw = 5_000;
        b.set_state(&mut tp, CaState::Loss);
        assert_eq!(b.prev_ca_state, CaState::Loss);
        assert_eq!(b.full_bw, 0);
        assert!(b.round_start && b.lt_is_sampling);
        assert_eq!(b.lt_rtt_cnt, 1);
        b.set_state(&mut tp, CaState::Recovery); // no effect
        assert_eq!(b.prev_ca_state, CaState::Loss);
    }

    #[test]
    fn undo_restarts_full_pipe_detection_and_keeps_cwnd() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        b.full_bw = 5_000;
        b.full_bw_cnt = 2;
        b.lt_use_bw = true;
        b.lt_bw = 9;
        tp.snd_cwnd = 33;
        assert_eq!(b.undo_cwnd(&tp), 33);
        assert_eq!(
            (b.full_bw, b.full_bw_cnt, b.lt_use_bw, b.lt_bw),
            (0, 0, false, 0)
        );
    }

    #[test]
    fn policer_intervals_agree_within_an_eighth_or_4_kbit() {
        let (mut b, tp) = started(CcProfile::Modern);
        b.lt_bw = 1_000;
        b.lt_bw_interval_done(&tp, 1_100); // 100·256 ≤ 32·1000
        assert!(b.lt_use_bw);
        assert_eq!((b.lt_bw, b.pacing_gain), (1_050, BBR_UNIT));
        let (mut b, tp) = started(CcProfile::Modern);
        b.lt_bw = 1_000;
        // 200·256 > 32 000 and 200 units = 17 088 B/s > 500 B/s
        b.lt_bw_interval_done(&tp, 1_200);
        assert!(!b.lt_use_bw);
        assert_eq!(b.lt_bw, 1_200);
        let (mut b, tp) = started(CcProfile::Modern);
        b.lt_bw = 10;
        // 5 units = 427 B/s ≤ 500 B/s (4 kbit/s): consistent
        b.lt_bw_interval_done(&tp, 15);
        assert_eq!((b.lt_use_bw, b.lt_bw), (true, 12));
        let (mut b, tp) = started(CcProfile::Modern);
        b.lt_bw = 10;
        b.lt_bw_interval_done(&tp, 16); // 6 units = 512 B/s: not
        assert!(!b.lt_use_bw);
        // a lower bw: the difference is taken as |s32|
        let (mut b, tp) = started(CcProfile::Modern);
        b.lt_bw = 1_100;
        b.lt_bw_interval_done(&tp, 1_000); // 100·256 ≤ 32·1100
        assert_eq!((b.lt_use_bw, b.lt_bw), (true, 1_050));
    }

    #[test]
    fn policer_detection_over_two_lossy_intervals() {
        let (mut b, mut tp) = started(CcProfile::Modern);
        let step = |b: &mut Bbr, tp: &mut CcSock, ms: u64, d: u32, lost: u32, round: bool| {
            tp.delivered_mstamp += ms * 1_000;
            tp.delivered += d;
            tp.lost += lost;
            b.round_start = round;
            b.lt_bw_sampling(
                tp,
                &RateSample {
                    losses: lost as i32,
                    ..RateSample::default()
                },
            );
        };
        // the first loss starts sampling at this instant
        step(&mut b, &mut tp, 0, 0, 1, false);
        assert!(b.lt_is_sampling);
        // four rounds of 25 ms, 250 delivered and 50 lost each: after the
        // fourth, 1000 delivered / 200 lost (200·256 ≥ 50·1000) in 100 ms:
        // bw = 1000·2^24/100 000 = 167 772
        for r in 0..4 {
            step(&mut b, &mut tp, 25, 250, 50, true);
            if r < 3 {
                assert_eq!(b.lt_bw, 0);
            }
        }
        assert_eq!((b.lt_bw, b.lt_use_bw, b.lt_rtt_cnt), (167_772, false, 0));
        // a second interval at 1100 per 100 ms: 184 549, within 1/8
        for _ in 0..4 {
            step(&mut b, &mut tp, 25, 275, 60, true);
        }
        assert!(b.lt_use_bw);
        assert_eq!(b.lt_bw, (167_772 + 184_549) >> 1);
        assert_eq!(b.bw(), 176_160);
        // PROBE_BW paces at 1.0 while policed...
        b.mode = BbrMode::ProbeBw;
        b.cycle_idx = 0;
        b.update_gains();
        assert_eq!(b.pacing_gain, BBR_UNIT);
        // ...for 48 rounds
        for _ in 0..47 {
            step(&mut b, &mut tp, 25, 250, 0, true);
        }
        assert!(b.lt_use_bw);
        step(&mut b, &mut tp, 25, 250, 0, true);
        assert!(!b.lt_use_bw);
        assert_eq!(b.mode, BbrMode::ProbeBw);
    }

    #[test]
    fn policer_sampling_restarts_when_app_limited_or_too_long() {
        let (mut b, tp) = started(CcProfile::Modern);
        let loss = RateSample {
            losses: 1,
            ..RateSample::default()
        };
        b.lt_bw_sampling(&tp, &loss);
        assert!(b.lt_is_sampling);
        b.lt_bw_sampling(
            &tp,
            &RateSample {
                is_app_limited: true,
                ..RateSample::default()
            },
        );
        assert!(!b.lt_is_sampling);
        b.lt_bw_sampling(&tp, &loss);
        b.round_start = true;
        for _ in 0..16 {
            b.lt_bw_sampling(&tp, &RateSample::default());
        }
        assert_eq!(b.lt_rtt_cnt, 16);
        b.lt_bw_sampling(&tp, &RateSample::default());
        assert!(!b.lt_is_sampling);
    }

    #[test]
    fn profiles_differ_only_in_the_first_round_boundary() {
        let mut tp = CcSock {
            delivered: 3,
            ..CcSock::default()
        };
        let mut lab = Bbr::new(CcProfile::Lab2019, ComponentRng::new(1, "bbr"));
        lab.init(&mut tp);
        let mut modern = Bbr::new(CcProfile::Modern, ComponentRng::new(1, "bbr"));
        modern.init(&mut tp);
        assert_eq!((lab.next_rtt_delivered, modern.next_rtt_delivered), (0, 3));
    }

    #[test]
    fn metrics_name_the_model() {
        let (b, _) = started(CcProfile::Modern);
        let cc = Cc::Bbr(b);
        let m = cc.metrics();
        assert!(m.contains(&("bbr_mode", 0.0)));
        assert!(m.contains(&("bbr_min_rtt_us", 20_000.0)));
    }

    /// Fluid run: 10 000 packets/s (≈ 116 Mbit/s of payload), 40 ms base
    /// RTT (BDP 400), a 200-packet buffer. BBR leaves STARTUP within a
    /// second, runs at the bottleneck rate with little queue, and after
    /// 10 s without a lower RTT dips into PROBE_RTT at 4 packets for
    /// ≥ 200 ms.
    #[test]
    fn fluid_bbr_fills_the_pipe_and_probes_rtt_every_10_s() {
        let path = Path {
            rate_pps: 10_000,
            base_rtt_us: 40_000,
            buffer_pkts: 200,
        };
        let mut f = Fluid::new(Cc::from_name("bbr").unwrap(), path);
        let start = f.now_us();
        let mut modes = Vec::new();
        let mut probe_rtt_at = Vec::new();
        for _ in 0..1_400 {
            f.run_for_us(10_000);
            let Cc::Bbr(b) = &f.cc else { unreachable!() };
            if modes.last() != Some(&b.mode()) {
                modes.push(b.mode());
                if b.mode() == BbrMode::ProbeRtt {
                    probe_rtt_at.push(f.now_us() - start);
                }
            }
        }
        assert_eq!(
            modes[..3],
            [BbrMode::Startup, BbrMode::Drain, BbrMode::ProbeBw],
            "{modes:?}"
        );
        // one PROBE_RTT, ~10 s after the handshake's min_rtt
        assert_eq!(probe_rtt_at.len(), 1, "{modes:?}");
        assert!(
            (10_000_000..10_500_000).contains(&probe_rtt_at[0]),
            "{probe_rtt_at:?}"
        );
        let dip: Vec<_> = f
            .samples
            .iter()
            .filter(|s| s.cwnd == 4 && s.state == CaState::Open)
            .collect();
        let dip_len = dip.last().unwrap().at_us - dip[0].at_us;
        assert!((200_000..300_000).contains(&dip_len), "{dip_len}");
        // utilisation over 14 s: ≥ 95 % of 140 000 packets
        assert!(f.tp.delivered >= 133_000, "{}", f.tp.delivered);
        // after STARTUP the queue stays small: RTT within 40 ms + half a BDP
        let late = f.samples.iter().filter(|s| s.at_us > start + 3_000_000);
        assert!(late.clone().all(|s| s.rtt_us < 60_000));
        assert!(late.clone().any(|s| s.in_flight > 400));
        // STARTUP overshoots BDP + buffer (600) and loses; later, nothing
        assert!(
            f.recoveries.iter().all(|r| r.at_us < start + 1_000_000),
            "{:?}",
            f.recoveries
        );
        assert_eq!(f.samples.last().unwrap().ssthresh, f.tp.snd_ssthresh);
    }
}
