//! `bbr3` — BBR v3, Google's `net/ipv4/tcp_bbr.c` of the google/bbr
//! repository, branch `v3` (the file at commit 001a430b3ddb, `BBR_VERSION`
//! 3; docs/models.md "BBRv3"), registered beside mainline `bbr` (v1, the
//! [`super::bbr`] module). Written from reading that file; the names in
//! backquotes are its functions.
//!
//! Units as v1's: bandwidth in packets/µs << 24 (`BW_UNIT`), gains and
//! fractions << 8 (`BBR_UNIT` = 256 = 1.0), windows in packets, the min_rtt
//! and PROBE_RTT stamps in jiffies, the PROBE_BW phase clock
//! (`cycle_mstamp`) and the ACK-aggregation epoch in µs.
//!
//! The model. A max filter over the last two PROBE_BW cycles (`bw_hi`)
//! and a per-round lower bound (`bw_lo`) bound the bandwidth; `inflight_hi`
//! (long-term, raised while probing without trouble, cut by `beta` = 0.3 or
//! to the in-flight level at which loss exceeded `loss_thresh` = 2 % or CE
//! marks exceeded `ecn_thresh` = 50 %) and `inflight_lo` (short-term, cut by
//! `beta` on a lossy round and by `ecn_factor` × `ecn_alpha` on a marked
//! one, outside probing) bound the in-flight data. PROBE_BW cycles DOWN
//! (pacing 0.91) → CRUISE (1.0, in-flight held 15 % under `inflight_hi`) →
//! REFILL (1.0, one round, lower bounds reset) → UP (1.25, cwnd gain 2.25,
//! `inflight_hi` growing by 1, 2, 4… packets per round) → DOWN, the wait
//! before REFILL being min(2–3 s, ~63 rounds or the BDP in rounds, so a
//! Reno flow at that BDP would probe as often). STARTUP (pacing 2.77, cwnd
//! 2.0) ends on a bandwidth plateau (3 rounds < 25 % growth), on ≥ 6 loss
//! events in a recovery round with loss above 2 %, or on 2 rounds with CE
//! above 50 %. PROBE_RTT every 5 s without a lower RTT, at half the BDP for
//! max(200 ms, one round). ACK aggregation (`extra_acked`) as in v1, its
//! window 1 round in STARTUP.
//!
//! Differences from the kernel (docs/models.md): the `TCP_ECN_LOW` route
//! flag is taken to hold whenever the connection negotiated ECN (the
//! `ecn_low` route feature is not modelled), so the ECN logic runs for an
//! ECN connection whose min_rtt is ≤ 5 ms (`bbr_ecn_max_rtt_us`); the
//! receiver side of `bbr_precise_ece_ack` (DCTCP-style ACKs) and
//! `fast_ack_mode` are not modelled; PLB (re-hashing the flow label) and
//! `CA_EVENT_TLP_RECOVERY` (no TLP events here) are left out; the fast
//! path for app-limited ACKs is not taken (it only skips work, the result
//! is the slow path's).
//!
//! Files: this one holds the state, the cwnd and pacing arithmetic and the
//! `cong_control` step that drives the rest; model.rs the path model and its
//! bounds; states.rs the state machine.

mod model;
mod states;

pub use model::{inflight_hi_from_lost_skb, Signal};

use super::bbr::common::{self, AckAggregation, Pacing, ProbeRttTimer, BBR_SCALE, BW_UNIT};
use super::{
    before, CaEvent, CaState, CcInfo, CcProfile, CcSock, CongControl, CongestionOps, LostSkb,
    RateSample, TCP_INFINITE_SSTHRESH,
};
use crate::rng::ComponentRng;

/// 1.0 in the << 8 fixed point of gains and fractions.
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;

/// min_rtt filter window, s (`bbr_min_rtt_win_sec`).
const MIN_RTT_WIN_SEC: u32 = 10;
/// the `probe_rtt_min_us` window, and so the PROBE_RTT interval, ms.
const PROBE_RTT_WIN_MS: u32 = 5000;
/// PROBE_RTT cwnd as a fraction of the BDP: 0.5.
pub const PROBE_RTT_CWND_GAIN: u32 = BBR_UNIT / 2;
/// halve the RTT-based TSO allowance per 2^9 µs of min_rtt.
const TSO_RTT_SHIFT: u32 = 9;
/// pace 1 % under the bw estimate.
const PACING_MARGIN_PERCENT: u64 = 1;
/// STARTUP pacing gain, 2.77 + 1/256 (= 710).
pub const STARTUP_PACING_GAIN: u32 = BBR_UNIT * 277 / 100 + 1;
/// STARTUP cwnd gain, 2.0.
pub const STARTUP_CWND_GAIN: u32 = BBR_UNIT * 2;
/// DRAIN pacing gain, 1/2.885 (= 88).
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// PROBE_BW cwnd gain, 2.0.
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// PROBE_BW pacing gains by phase: UP 1.25, DOWN 0.91, CRUISE, REFILL 1.0.
pub const PACING_GAIN: [u32; 4] = [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT];
/// cwnd floor, packets (`bbr_cwnd_min_target`).
const CWND_MIN_TARGET: u32 = 4;
/// a round with < 25 % bw growth counts towards a plateau.
const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// rounds of plateau that end STARTUP / PROBE_UP.
const FULL_BW_CNT: u32 = 3;
/// rounds per half of the extra_acked filter after STARTUP.
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// ECN logic only at a min_rtt up to this, µs (`bbr_ecn_max_rtt_us`).
const ECN_MAX_RTT_US: u32 = 5000;
/// multiplicative cut on a lossy round: 0.3.
pub const BETA: u32 = BBR_UNIT * 30 / 100;
/// EWMA gain of `ecn_alpha`: 1/16.
pub const ECN_ALPHA_GAIN: u32 = BBR_UNIT / 16;
/// `ecn_alpha` at start: 1.0.
const ECN_ALPHA_INIT: u32 = BBR_UNIT;
/// `inflight_lo` cut on a marked round: ecn_factor × ecn_alpha, 1/3.
pub const ECN_FACTOR: u32 = BBR_UNIT / 3;
/// CE fraction above which in-flight is too high: 0.5.
pub const ECN_THRESH: u32 = BBR_UNIT / 2;
/// after a marked but loss-free cycle, re-probe this fraction of inflight_hi.
const ECN_REPROBE_GAIN: u32 = BBR_UNIT / 2;
/// loss fraction above which in-flight is too high: 2 % (= 5/256).
pub const LOSS_THRESH: u32 = BBR_UNIT * 2 / 100;
/// loss events in a STARTUP recovery round that may end STARTUP.
const FULL_LOSS_CNT: u32 = 6;
/// rounds with CE above `ECN_THRESH` that end STARTUP.
const FULL_ECN_CNT: u32 = 2;
/// headroom left under inflight_hi in CRUISE: 15 %.
pub const INFLIGHT_HEADROOM: u32 = BBR_UNIT * 15 / 100;
/// extra cwnd gain in PROBE_UP, in quarters: 1 (0.25).
const BW_PROBE_CWND_GAIN: u32 = 1;
/// longest Reno-coexistence wait, rounds.
const BW_PROBE_MAX_ROUNDS: u32 = 63;
/// random rounds added to that wait (0..2).
const BW_PROBE_RAND_ROUNDS: u64 = 2;
/// wall-clock wait before probing: 2 s …
const BW_PROBE_BASE_US: u32 = 2_000_000;
/// … plus up to 1 s at random.
const BW_PROBE_RAND_US: u64 = 1_000_000;
/// `GSO_LEGACY_MAX_SIZE`.
const GSO_LEGACY_MAX_SIZE: u64 = 65_536;
/// `MAX_TCP_HEADER` on x86-64.
const MAX_TCP_HEADER: u64 = 320;
/// `sysctl_tcp_min_tso_segs` default.
const MIN_TSO_SEGS: u32 = 2;

/// `enum bbr_mode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Bbr3Mode {
    #[default]
    Startup = 0,
    Drain = 1,
    ProbeBw = 2,
    ProbeRtt = 3,
}

/// `enum bbr_pacing_gain_phase`: the PROBE_BW phases, as `cycle_idx`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Phase {
    #[default]
    Up = 0,
    Down = 1,
    Cruise = 2,
    Refill = 3,
}

/// `enum bbr_ack_phase`: what the ACKs arriving now say about probing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
enum AckPhase {
    #[default]
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// BBRv3's per-connection state (`struct bbr` of the v3 branch).
#[derive(Clone, Debug)]
pub struct Bbr3 {
    rng: ComponentRng,
    initialized: bool,
    min_rtt_us: u32,
    min_rtt_stamp: u32,
    probe_rtt: ProbeRttTimer,
    probe_rtt_min_us: u32,
    probe_rtt_min_stamp: u32,
    next_rtt_delivered: u32,
    cycle_mstamp: u64,
    mode: Bbr3Mode,
    prev_ca_state: CaState,
    round_start: bool,
    bw_probe_up_rounds: u32,
    idle_restart: bool,
    init_cwnd: u32,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    cycle_idx: Phase,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    full_bw: u32,
    aggr: AckAggregation,
    full_bw_now: bool,
    startup_ecn_rounds: u32,
    loss_in_cycle: bool,
    ecn_in_cycle: bool,
    loss_round_delivered: u32,
    undo_bw_lo: u32,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    bw_latest: u32,
    bw_lo: u32,
    bw_hi: [u32; 2],
    inflight_latest: u32,
    inflight_lo: u32,
    inflight_hi: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    probe_wait_us: u32,
    ecn_eligible: bool,
    ecn_alpha: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    rounds_since_probe: u32,
    loss_round_start: bool,
    loss_in_round: bool,
    ecn_in_round: bool,
    ack_phase: AckPhase,
    loss_events_in_round: u32,
    alpha_last_delivered: u32,
    alpha_last_delivered_ce: u32,
}

/// `bbr_bdp` with the min_rtt and the no-sample fallback spelt out:
/// ⌈bw × min_rtt × gain⌉ packets.
pub fn bdp(bw: u32, min_rtt_us: u32, gain: u32) -> u32 {
    let w = bw as u64 * min_rtt_us as u64;
    (w.wrapping_mul(gain as u64) >> BBR_SCALE).div_ceil(BW_UNIT) as u32
}

/// `bbr_tso_segs_generic` for `mss` and `gso_max`: ~1 ms of the pacing
/// rate plus 64 KB halved per 512 µs of min_rtt, at least 2 segments.
fn tso_segs_generic(tp: &CcSock, min_rtt_us: u32, mss: u32, gso_max: u64) -> u32 {
    let mut bytes = tp.pacing_rate >> 10;
    let r = min_rtt_us >> TSO_RTT_SHIFT;
    if r < 32 {
        bytes = bytes.saturating_add(GSO_LEGACY_MAX_SIZE >> r);
    }
    let bytes = bytes.min(gso_max - 1 - MAX_TCP_HEADER);
    ((bytes / mss.max(1) as u64) as u32).max(MIN_TSO_SEGS)
}

impl Bbr3 {
    /// Zeroed state (`icsk_ca_priv`); `init` follows.
    pub fn new(rng: ComponentRng) -> Bbr3 {
        Bbr3 {
            rng,
            initialized: false,
            min_rtt_us: 0,
            min_rtt_stamp: 0,
            probe_rtt: ProbeRttTimer::default(),
            probe_rtt_min_us: 0,
            probe_rtt_min_stamp: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: 0,
            mode: Bbr3Mode::Startup,
            prev_ca_state: CaState::Open,
            round_start: false,
            bw_probe_up_rounds: 0,
            idle_restart: false,
            init_cwnd: 0,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            full_bw_cnt: 0,
            cycle_idx: Phase::Up,
            has_seen_rtt: false,
            prior_cwnd: 0,
            full_bw: 0,
            aggr: AckAggregation::default(),
            full_bw_now: false,
            startup_ecn_rounds: 0,
            loss_in_cycle: false,
            ecn_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: 0,
            bw_hi: [0; 2],
            inflight_latest: 0,
            inflight_lo: 0,
            inflight_hi: 0,
            bw_probe_up_cnt: 0,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            ecn_eligible: false,
            ecn_alpha: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            ecn_in_round: false,
            ack_phase: AckPhase::Init,
            loss_events_in_round: 0,
            alpha_last_delivered: 0,
            alpha_last_delivered_ce: 0,
        }
    }

    pub fn mode(&self) -> Bbr3Mode {
        self.mode
    }

    /// The PROBE_BW phase (`cycle_idx`).
    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }

    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// `inflight_hi`, packets (`u32::MAX` = unset).
    pub fn inflight_hi(&self) -> u32 {
        self.inflight_hi
    }

    /// `inflight_lo`, packets (`u32::MAX` = unset).
    pub fn inflight_lo(&self) -> u32 {
        self.inflight_lo
    }

    /// `ecn_alpha` << 8.
    pub fn ecn_alpha(&self) -> u32 {
        self.ecn_alpha
    }

    /// `bbr_max_bw`: the max of the two cycle-long halves of `bw_hi`.
    pub fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }

    /// `bbr_bw`: the model's bw, `bw_hi` bounded by `bw_lo`.
    pub fn bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo)
    }

    /// ECN negotiated (`TCP_ECN_OK`; `TCP_ECN_LOW` assumed, see the module
    /// comment): `bbr_can_use_ecn`.
    fn can_use_ecn(tp: &CcSock) -> bool {
        tp.ecn_ok
    }

    /// `bbr_tso_segs_goal`.
    fn tso_segs_goal(&self, tp: &CcSock) -> u32 {
        tso_segs_generic(tp, self.min_rtt_us, tp.mss_cache, GSO_LEGACY_MAX_SIZE)
    }

    /// `bbr_save_cwnd`.
    fn save_cwnd(&mut self, tp: &CcSock) {
        let probe_rtt = self.mode == Bbr3Mode::ProbeRtt;
        self.prior_cwnd =
            common::saved_cwnd(self.prior_cwnd, self.prev_ca_state, probe_rtt, tp.snd_cwnd);
    }

    /// `bbr_bdp` (the initial cwnd before any RTT sample).
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        if self.min_rtt_us == u32::MAX {
            return self.init_cwnd;
        }
        bdp(bw, self.min_rtt_us, gain)
    }

    /// `bbr_quantization_budget`: at least 3 TSO bursts and 4 packets; +2
    /// in PROBE_UP so that even tiny BDPs probe above the BDP.
    fn quantization_budget(&self, tp: &CcSock, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.max(3 * self.tso_segs_goal(tp)).max(CWND_MIN_TARGET);
        if self.mode == Bbr3Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd = cwnd.wrapping_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, tp: &CcSock, bw: u32, gain: u32) -> u32 {
        let bdp = self.bdp(bw, gain);
        self.quantization_budget(tp, bdp)
    }

    /// `bbr_packets_in_net_at_edt`.
    fn packets_in_net_at_edt(&self, tp: &CcSock, inflight_now: u32) -> u32 {
        let tso_goal = || self.tso_segs_goal(tp);
        common::packets_in_net_at_edt(tp, self.bw(), self.pacing_gain, tso_goal, inflight_now)
    }

    /// `bbr_ack_aggregation_cwnd` (v3 grants it in STARTUP too).
    fn ack_aggregation_cwnd(&self) -> u32 {
        self.aggr.cwnd(self.bw())
    }

    /// `bbr_probe_rtt_cwnd`: half the BDP, at least 4.
    fn probe_rtt_cwnd(&self) -> u32 {
        self.bdp(self.bw(), PROBE_RTT_CWND_GAIN)
            .max(CWND_MIN_TARGET)
    }

    /// `bbr_set_cwnd`: towards BDP × gain + aggregation allowance; before
    /// the pipe is full cwnd only grows; PROBE_RTT caps it.
    fn set_cwnd(&mut self, tp: &mut CcSock, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = tp.snd_cwnd;
        if acked != 0 {
            let mut target = self.bdp(bw, gain);
            target = target.wrapping_add(self.ack_aggregation_cwnd());
            target = self.quantization_budget(tp, target);
            if self.full_bw_reached {
                cwnd = cwnd.wrapping_add(acked).min(target);
            } else if cwnd < target || cwnd < 2 * self.init_cwnd {
                cwnd = cwnd.wrapping_add(acked);
            }
            cwnd = cwnd.max(CWND_MIN_TARGET);
        }
        tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
        if self.mode == Bbr3Mode::ProbeRtt {
            tp.snd_cwnd = tp.snd_cwnd.min(self.probe_rtt_cwnd());
        }
    }

    /// `bbr_update_round_start`.
    fn update_round_start(&mut self, tp: &CcSock, rs: &RateSample) {
        self.round_start = false;
        if rs.interval_us > 0 && !before(rs.prior_delivered, self.next_rtt_delivered) {
            self.next_rtt_delivered = tp.delivered;
            self.round_start = true;
        }
    }

    /// `bbr_main` (`cong_control`).
    pub fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_round_start(tp, rs);
        if self.round_start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            self.update_ecn_alpha(tp);
        }
        self.ecn_in_round |= self.ecn_eligible && rs.is_ece;
        let bw = Self::bw_sample(rs);
        self.update_latest_delivery_signals(tp, rs, bw);

        // bbr_update_model
        self.update_congestion_signals(tp, rs, bw);
        self.update_ack_aggregation(tp, rs);
        self.check_loss_too_high_in_startup(tp, rs);
        self.check_full_bw_reached(rs, bw);
        self.check_drain(tp);
        self.update_cycle_phase(tp, rs, bw);
        self.update_min_rtt(tp, rs);

        self.update_gains();
        let model_bw = self.bw();
        self.set_pacing_rate(tp, model_bw, self.pacing_gain);
        self.set_cwnd(tp, rs.acked_sacked, model_bw, self.cwnd_gain);
        self.bound_cwnd_for_inflight_model(tp);

        self.advance_latest_delivery_signals(rs, bw);
        self.prev_ca_state = tp.ca_state;
        self.loss_in_cycle |= rs.lost > 0;
        self.ecn_in_cycle |= rs.delivered_ce > 0;
    }

    /// `bbr_note_loss`.
    fn note_loss(&mut self, tp: &CcSock) {
        if !self.loss_in_round {
            self.loss_round_delivered = tp.delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }
}

impl Pacing for Bbr3 {
    const STARTUP_GAIN: u32 = STARTUP_PACING_GAIN;

    /// `bbr_bw_to_pacing_rate` (v3 floors the rate at 1 byte/s).
    fn bw_to_pacing_rate(tp: &CcSock, bw: u32, gain: u32) -> u64 {
        common::rate_bytes_per_sec(tp.mss_cache, bw as u64, gain, PACING_MARGIN_PERCENT)
            .max(1)
            .min(tp.max_pacing_rate)
    }

    fn seen_rtt(&mut self) -> &mut bool {
        &mut self.has_seen_rtt
    }

    fn pipe_full(&self) -> bool {
        self.full_bw_reached
    }
}

/// `tcp_bbr_cong_ops` of the v3 branch (there named "bbr").
impl CongestionOps for Bbr3 {
    const NAME: &'static str = "bbr3";

    fn create(_profile: CcProfile, rng: ComponentRng) -> Bbr3 {
        Bbr3::new(rng)
    }

    /// `bbr_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.initialized = true;
        self.init_cwnd = tp.snd_cwnd.min(0x7f);
        self.prior_cwnd = tp.prior_cwnd;
        tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        self.next_rtt_delivered = tp.delivered;
        self.prev_ca_state = CaState::Open;
        self.probe_rtt = ProbeRttTimer::default();
        self.probe_rtt_min_us = tp.min_rtt_us;
        self.probe_rtt_min_stamp = tp.jiffies;
        self.min_rtt_us = tp.min_rtt_us;
        self.min_rtt_stamp = tp.jiffies;
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tp);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.cycle_mstamp = 0;
        self.cycle_idx = Phase::Up;
        self.mode = Bbr3Mode::Startup;
        self.aggr = AckAggregation::new(tp.now_us);
        tp.pacing_status_needed = true;
        // the ECN mark rate is sampled from the end of the first flight
        self.loss_round_delivered = tp.delivered.wrapping_add(1);
        self.loss_round_start = false;
        self.undo_bw_lo = 0;
        self.undo_inflight_lo = 0;
        self.undo_inflight_hi = 0;
        self.loss_events_in_round = 0;
        self.startup_ecn_rounds = 0;
        self.reset_congestion_signals();
        self.bw_lo = u32::MAX;
        self.bw_hi = [0; 2];
        self.inflight_lo = u32::MAX;
        self.inflight_hi = u32::MAX;
        self.reset_full_bw();
        self.bw_probe_up_cnt = u32::MAX;
        self.bw_probe_up_acks = 0;
        self.bw_probe_up_rounds = 0;
        self.probe_wait_us = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Init;
        self.rounds_since_probe = 0;
        self.bw_probe_samples = false;
        self.prev_probe_too_high = false;
        self.ecn_eligible = false;
        self.ecn_alpha = ECN_ALPHA_INIT;
        self.alpha_last_delivered = 0;
        self.alpha_last_delivered_ce = 0;
    }

    /// `bbr_ssthresh`: remember cwnd and the loss-adapted bounds for undo.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        self.save_cwnd(tp);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        tp.snd_ssthresh
    }

    /// `bbr_set_state`: an RTO restarts the plateau test and gives
    /// inflight_lo the pre-RTO cwnd; leaving Loss restores cwnd.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == u32::MAX {
                self.inflight_lo = tp.snd_cwnd.max(self.prior_cwnd);
            }
        } else if self.prev_ca_state == CaState::Loss {
            tp.snd_cwnd = tp.snd_cwnd.max(self.prior_cwnd);
        }
    }

    /// `bbr_cwnd_event`: restart from idle (the receiver's CE events of
    /// `bbr_precise_ece_ack` are not modelled).
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev == CaEvent::TxStart && tp.app_limited != 0 {
            self.idle_restart = true;
            self.aggr.restart_epoch(tp.now_us);
            if self.mode == Bbr3Mode::ProbeBw {
                let bw = self.bw();
                self.set_pacing_rate(tp, bw, BBR_UNIT);
            } else if self.mode == Bbr3Mode::ProbeRtt {
                self.check_probe_rtt_done(tp);
            }
        }
    }

    /// `bbr_undo_cwnd`: a spurious loss episode: back to the bounds saved
    /// by `ssthresh`.
    fn undo_cwnd(&mut self, _tp: &CcSock) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.prior_cwnd
    }

    const CONG_CONTROL: Option<CongControl<Bbr3>> = Some(Bbr3::cong_control);

    fn sndbuf_expand(&self) -> u32 {
        3
    }

    /// `bbr_tso_segs`.
    fn tso_segs(&self, tp: &CcSock) -> Option<u32> {
        Some(self.tso_segs_goal(tp))
    }

    const SKB_MARKED_LOST: bool = true;

    /// `bbr_skb_marked_lost`: while probing, find whether the flight up to
    /// this lost packet already lost more than 2 % and if so cut
    /// inflight_hi to where that happened.
    fn skb_marked_lost(&mut self, tp: &mut CcSock, skb: &LostSkb) {
        self.note_loss(tp);
        if !self.bw_probe_samples || !skb.has_snapshot {
            return;
        }
        let mut s = Signal {
            tx_in_flight: skb.tx_in_flight,
            lost: skb.lost as i32,
            is_app_limited: skb.is_app_limited,
            ..Signal::default()
        };
        if self.is_inflight_too_high(&s) {
            s.tx_in_flight = inflight_hi_from_lost_skb(s.tx_in_flight, s.lost);
            self.handle_inflight_too_high(tp, &s);
        }
    }

    /// `bbr_get_info`: the `struct tcp_bbr_info` fields `ss -i` prints (bw =
    /// `bbr_bw_bytes_per_sec(bbr_bw)`, bytes/s at the current MSS, at least 1;
    /// min_rtt in µs; gains in BBR_UNIT = 256). v3's further fields (bw_hi,
    /// bw_lo, inflight_hi/lo, phase) are printed by no released iproute2.
    fn get_info(&self, tp: &CcSock) -> Option<CcInfo> {
        let bw = common::rate_bytes_per_sec(tp.mss_cache, self.bw() as u64, BBR_UNIT, 0).max(1);
        Some(CcInfo::Bbr {
            bw,
            min_rtt: self.min_rtt_us,
            pacing_gain: self.pacing_gain,
            cwnd_gain: self.cwnd_gain,
        })
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        let opt = |v: u32| if v == u32::MAX { -1.0 } else { v as f64 };
        out.extend_from_slice(&[
            ("bbr_mode", self.mode as u8 as f64),
            ("bbr_phase", self.cycle_idx as u8 as f64),
            ("bbr_pacing_gain", self.pacing_gain as f64 / BBR_UNIT as f64),
            ("bbr_cwnd_gain", self.cwnd_gain as f64 / BBR_UNIT as f64),
            ("bbr_bw_pkts_per_us", self.bw() as f64 / BW_UNIT as f64),
            (
                "bbr_bw_hi_pkts_per_us",
                self.max_bw() as f64 / BW_UNIT as f64,
            ),
            ("bbr_min_rtt_us", self.min_rtt_us as f64),
            ("bbr_inflight_hi", opt(self.inflight_hi)),
            ("bbr_inflight_lo", opt(self.inflight_lo)),
            ("bbr_ecn_alpha", self.ecn_alpha as f64 / BBR_UNIT as f64),
            ("bbr_full_bw_reached", self.full_bw_reached as u8 as f64),
            ("bbr_extra_acked", self.aggr.max() as f64),
        ]);
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod component_tests;
