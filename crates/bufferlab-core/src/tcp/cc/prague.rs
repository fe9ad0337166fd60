//! `prague` — TCP Prague, the L4S congestion control (RFC 9331 Appendix A,
//! RFC 9332), as the L4S team's Linux tree implements it: net/ipv4/
//! tcp_prague.c of github L4STeam/linux at commit 893e147 (module version
//! 0.7). Written from that file's behaviour, function by function (names
//! cited); no code or comment is copied.
//!
//! What it adds to DCTCP:
//! - a fractional window (`frac_cwnd`, 2^20 units per packet) and a finer
//!   alpha (2^24 units, kept ×16 so the EWMA's remainder survives); cwnd is
//!   `frac_cwnd` rounded up, at least 2, moved by ±1 packet per ACK;
//! - the EWMA `alpha ← alpha − alpha/16 + F` (g = 1/16, F the fraction of
//!   the round's delivered packets that carried CE), updated once per round
//!   (`snd_una` passing the `snd_nxt` of the round's start) and, once
//!   RTT-independent, at most once per 25 ms (`prague_should_update_ewma`);
//! - a CE episode (entering CWR) cuts `frac_cwnd` by `alpha/2`, at most once
//!   per 25 ms when RTT-independent (`prague_enter_cwr`); loss halves it;
//! - additive increase only for the ACKed packets that were not marked
//!   (`acked − ece_delta`), so growth goes on while marks arrive;
//! - RTT independence (`prague_ai_ack_increase`): 4 rounds after slow start,
//!   below the 25 ms target RTT the increase per ACK is scaled by
//!   (RTT/25 ms)², so a short-RTT flow grows as if its RTT were 25 ms;
//! - its own pacing rate (`prague_update_pacing_rate`): mtu·max(cwnd,
//!   in flight)/srtt (doubled in slow start), and TSO bursts of at most
//!   2^−12 s (250 µs) at that rate (the `tso_segs` hook);
//! - Accurate ECN and ECT(1) (`TCP_CONG_NEEDS_ACCECN`,
//!   `TCP_CONG_WANTS_ECT_1`, `TCP_CONG_NO_FALLBACK_RFC3168`): without ECN
//!   on the connection `prague_init` switches to `prague-reno`.
//!
//! Module parameters: the defaults of [`PragueParams`]. `prague_cwnd_mode`
//! 2 switches to the rate-based window (`cwnd_mode` 1) below 4 MTUs of
//! window once CE was seen, as the file does. Not modelled: the MSS
//! reduction `prague_update_alpha` makes at rates where a window of 2
//! packets per 25 ms is too much (it needs `tcp_sync_mss` from inside the
//! module: below roughly 1 Mbit/s); `snd_cwnd_stamp` updates (only cwnd
//! validation after idle reads it). This version has no classic-ECN
//! bottleneck detection (earlier Prague versions had one).

use super::{
    before, stamp_us_delta, tcp_reno_ssthresh, tcp_reno_undo_cwnd, tcp_slow_start, CaEvent,
    CaState, CcInfo, CcProfile, CcSock, CongControl, CongestionOps, RateSample,
    TCP_CONG_NEEDS_ACCECN, TCP_CONG_NEEDS_ECN, TCP_CONG_NON_RESTRICTED,
    TCP_CONG_NO_FALLBACK_RFC3168, TCP_CONG_WANTS_ECT_1,
};
use crate::rng::ComponentRng;

const MIN_CWND_RTT: u32 = 2;
/// 100 kbit/s in bytes/s
const MINIMUM_RATE: u64 = 12_500;
/// alpha's fixed point: 2^24 = 1
pub const PRAGUE_ALPHA_BITS: u32 = 24;
pub const PRAGUE_MAX_ALPHA: u64 = 1 << PRAGUE_ALPHA_BITS;
/// the fractional window's fixed point: 2^20 = 1 packet
pub const CWND_UNIT: u32 = 20;
pub const ONE_CWND: u64 = 1 << CWND_UNIT;
/// g = 1/2^4
pub const PRAGUE_SHIFT_G: u32 = 4;
/// scaling stops above 100 ms of srtt (the arithmetic would overflow)
const MAX_SCALED_RTT_US: u64 = 100_000;
const MTU_SYS: u64 = 1500;
/// ±4/128 ≈ 3 % pacing variation in rate mode
const RATE_OFFSET: u64 = 4;
const OFFSET_UNIT: u32 = 7;
const HSRTT_SHIFT: u32 = 7;
const RTT2SEC_SHIFT: u32 = 23;

/// Module parameters (`/sys/module/tcp_prague/parameters/`), defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PragueParams {
    /// `prague_burst_shift`: longest TSO burst, 2^−shift s (12: ~250 µs)
    pub burst_shift: u32,
    /// `prague_max_tso_segs`: cap on the TSO burst (0 = none)
    pub max_tso_segs: u32,
    /// `prague_rtt_transition`: rounds after slow start before RTT independence
    pub rtt_transition: u32,
    /// `prague_rtt_target`: the RTT a shorter flow behaves as, µs
    pub rtt_target_us: u32,
    /// `prague_alpha_mode`: 0 halves the window at the first mark and
    /// starts alpha at 0; 1 starts alpha at 1
    pub alpha_mode: u32,
    /// `prague_cwnd_mode`: 0 fractional window, 1 rate based, 2 switch
    pub cwnd_mode: u32,
    /// `prague_cwnd_transit`: the switch point, in 1500-byte MTUs
    pub cwnd_transit: u32,
}

impl Default for PragueParams {
    fn default() -> Self {
        PragueParams {
            burst_shift: 12,
            max_tso_segs: 0,
            rtt_transition: 4,
            rtt_target_us: 25_000,
            alpha_mode: 0,
            cwnd_mode: 2,
            cwnd_transit: 4,
        }
    }
}

/// `struct prague`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prague {
    pub params: PragueParams,
    cwr_stamp: u64,
    alpha_stamp: u64,
    /// alpha × 16, 2^24 units
    pub upscaled_alpha: u64,
    /// increase per non-CE packet acked, 2^20 units
    pub ai_ack_increase: u64,
    hsrtt_us: u64,
    /// the window, 2^20 units per packet
    pub frac_cwnd: u64,
    /// internal pacing rate, bytes/s
    pub rate_bytes: u64,
    loss_rate_bytes: u64,
    loss_cwnd: u32,
    pub max_tso_burst: u32,
    old_delivered: u32,
    old_delivered_ce: u32,
    next_seq: u32,
    /// rounds since slow start ended
    pub round: u32,
    pub saw_ce: bool,
    alpha_mode: bool,
    cwnd_mode_transit: bool,
    /// 0 fractional window, 1 rate based
    pub cwnd_mode: u8,
    in_loss: bool,
    /// `prague_init` found no ECN: the socket runs `prague-reno`
    reno_fallback: bool,
}

/// `mul_u64_u64_shr`.
#[inline]
fn mul_shr(a: u64, b: u64, shift: u32) -> u64 {
    ((a as u128 * b as u128) >> shift) as u64
}

/// `DIV64_U64_ROUND_CLOSEST`.
#[inline]
fn div_round_closest(x: u64, d: u64) -> u64 {
    (x + d / 2) / d
}

impl Prague {
    /// A Prague instance with explicit module parameters.
    pub fn with_params(params: PragueParams) -> Prague {
        Prague {
            params,
            ..Prague::default()
        }
    }

    /// Whether `prague_init` fell back to `prague-reno` (no ECN).
    pub fn is_reno_fallback(&self) -> bool {
        self.reno_fallback
    }

    /// alpha in 2^24 units (what `ss` prints as `prague_alpha`).
    pub fn alpha(&self) -> u64 {
        self.upscaled_alpha >> PRAGUE_SHIFT_G
    }

    /// `tcp_mss_to_mtu`.
    #[inline]
    fn mss_to_mtu(tp: &CcSock, mss: u32) -> u64 {
        (mss + tp.tcp_header_len + 20) as u64
    }

    /// `prague_target_rtt`: µs << 3.
    #[inline]
    fn target_rtt(&self) -> u64 {
        (self.params.rtt_target_us as u64) << 3
    }

    /// `prague_is_rtt_indep`.
    fn is_rtt_indep(&self, tp: &CcSock) -> bool {
        !tp.in_slow_start() && self.round >= self.params.rtt_transition
    }

    fn elapsed_since_alpha_update(&self, tp: &CcSock) -> u64 {
        stamp_us_delta(tp.now_us, self.alpha_stamp)
    }

    /// `prague_should_update_ewma`: the round is over and, once
    /// RTT-independent, the target RTT has passed too.
    fn should_update_ewma(&self, tp: &CcSock) -> bool {
        let e2e = !before(tp.snd_una, self.next_seq);
        e2e && (!self.is_rtt_indep(tp)
            || (self.target_rtt() >> 3) <= self.elapsed_since_alpha_update(tp))
    }

    /// `prague_rate_scaled_ai_ack_increase`: 2^20 · (rtt/target)², rounded
    /// to nearest; `rtt` and the target in µs << 3.
    pub fn rate_scaled_ai_ack_increase(rtt: u64, target: u64) -> u64 {
        if rtt >= target {
            return ONE_CWND;
        }
        div_round_closest((rtt << CWND_UNIT) * rtt, target * target)
    }

    /// `prague_frac_cwnd_to_snd_cwnd`: rounded up, at least 2, clamped.
    pub fn frac_cwnd_to_snd_cwnd(frac_cwnd: u64, clamp: u32) -> u32 {
        (((frac_cwnd + ONE_CWND - 1) >> CWND_UNIT) as u32)
            .max(MIN_CWND_RTT)
            .min(clamp)
    }

    fn virtual_rtt(&self, tp: &CcSock) -> u64 {
        self.target_rtt().max(tp.srtt_us as u64)
    }

    /// `prague_pacing_rate_to_frac_cwnd`.
    fn pacing_rate_to_frac_cwnd(&self, tp: &CcSock) -> u64 {
        let mtu = Self::mss_to_mtu(tp, tp.mss_cache);
        let rtt = match self.hsrtt_us >> HSRTT_SHIFT {
            0 => tp.srtt_us as u64,
            r => r,
        };
        mul_shr(self.rate_bytes, rtt, RTT2SEC_SHIFT - CWND_UNIT).div_ceil(mtu)
    }

    /// `prague_frac_cwnd_to_pacing_rate`: mtu · frac_cwnd / srtt, bytes/s.
    fn frac_cwnd_to_pacing_rate(&self, tp: &CcSock) -> u64 {
        let mut rate = (1_000_000u64 << 3) * Self::mss_to_mtu(tp, tp.mss_cache);
        if tp.srtt_us != 0 {
            rate /= tp.srtt_us as u64;
        }
        mul_shr(rate, self.frac_cwnd, CWND_UNIT).max(MINIMUM_RATE)
    }

    /// `prague_ai_ack_increase`.
    fn update_ai_ack_increase(&mut self, tp: &CcSock) {
        let rtt = tp.srtt_us as u64;
        self.ai_ack_increase = if self.round < self.params.rtt_transition
            || rtt == 0
            || rtt > (MAX_SCALED_RTT_US << 3)
        {
            ONE_CWND
        } else {
            Self::rate_scaled_ai_ack_increase(rtt, self.target_rtt())
        };
    }

    /// `prague_update_pacing_rate`.
    fn update_pacing_rate(&mut self, tp: &mut CcSock) {
        let mtu = Self::mss_to_mtu(tp, tp.mss_cache);
        let mut rate = if self.is_rtt_indep(tp) && self.cwnd_mode == 1 {
            let offset = mul_shr(RATE_OFFSET, self.rate_bytes, OFFSET_UNIT);
            if (self.virtual_rtt(tp) >> 4) <= self.elapsed_since_alpha_update(tp) {
                self.rate_bytes - offset
            } else {
                self.rate_bytes + offset
            }
        } else {
            let max_inflight = ((self.frac_cwnd >> CWND_UNIT) as u32).max(tp.packets_in_flight);
            let mut r = (1_000_000u64 << 3) * mtu;
            if tp.srtt_us != 0 {
                r /= tp.srtt_us as u64;
            }
            let r = (r * max_inflight as u64).max(MINIMUM_RATE);
            self.rate_bytes = r;
            r
        };
        if tp.snd_cwnd < tp.snd_ssthresh / 2 {
            rate <<= 1;
        }
        rate = rate.min(tp.max_pacing_rate);
        let burst = rate / mtu;
        self.max_tso_burst = ((burst >> self.params.burst_shift) as u32).max(1);
        tp.pacing_rate = rate;
    }

    /// `prague_new_round`.
    fn new_round(&mut self, tp: &CcSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered_ce = tp.delivered_ce;
        self.old_delivered = tp.delivered;
        if !tp.in_slow_start() {
            self.round = self.round.wrapping_add(1);
            if self.round == 0 {
                self.round = self.params.rtt_transition;
            }
        }
        self.update_ai_ack_increase(tp);
    }

    /// The EWMA step: `upscaled ← upscaled − upscaled/16 + F`, F = CE
    /// packets · 2^24 / delivered packets (integer division), capped at
    /// alpha = 1.
    pub fn alpha_step(upscaled: u64, ce: u32, delivered: u32) -> u64 {
        let f = if ce != 0 {
            ((ce as u64) << PRAGUE_ALPHA_BITS) / delivered.max(1) as u64
        } else {
            0
        };
        (upscaled - (upscaled >> PRAGUE_SHIFT_G) + f).min(PRAGUE_MAX_ALPHA << PRAGUE_SHIFT_G)
    }

    /// `prague_update_alpha` (without the MSS reduction, module doc).
    fn update_alpha(&mut self, tp: &CcSock) {
        if self.saw_ce {
            self.upscaled_alpha = Self::alpha_step(
                self.upscaled_alpha,
                tp.delivered_ce.wrapping_sub(self.old_delivered_ce),
                tp.delivered.wrapping_sub(self.old_delivered),
            );
            self.alpha_stamp = tp.now_us;
        }
        self.hsrtt_us = self.hsrtt_us + tp.srtt_us as u64 - (self.hsrtt_us >> HSRTT_SHIFT);
        self.new_round(tp);
    }

    /// `prague_update_cwnd`.
    fn update_cwnd(&mut self, tp: &mut CcSock, rs: &RateSample) {
        let mut acked = rs.acked_sacked as i64;
        if rs.ece_delta > 0 {
            if !self.saw_ce && !self.alpha_mode {
                // the first mark: an AQM is on the path, halve the window
                self.frac_cwnd = (self.frac_cwnd + 1) >> 1;
            }
            self.saw_ce = true;
            acked -= rs.ece_delta as i64;
        }
        if acked > 0 && !self.in_loss && tp.is_cwnd_limited {
            let mut acked = acked as u64;
            let mut grow = true;
            if tp.in_slow_start() {
                acked = tcp_slow_start(tp, acked as u32) as u64;
                self.frac_cwnd = (tp.snd_cwnd as u64) << CWND_UNIT;
                if acked == 0 {
                    self.update_ai_ack_increase(tp);
                    grow = false;
                }
            }
            if grow {
                let mtu = Self::mss_to_mtu(tp, tp.mss_cache);
                if self.is_rtt_indep(tp) && self.cwnd_mode == 1 {
                    let vrtt = self.virtual_rtt(tp);
                    let increase = ((acked * MTU_SYS) << RTT2SEC_SHIFT) / vrtt;
                    let new_cwnd = ((self.rate_bytes as u128 * vrtt as u128)
                        .div_ceil((mtu as u128) << RTT2SEC_SHIFT))
                        as u64;
                    if new_cwnd != 0 {
                        self.rate_bytes += div_round_closest(increase, new_cwnd);
                    }
                    self.frac_cwnd =
                        (self.frac_cwnd + acked).max(self.pacing_rate_to_frac_cwnd(tp));
                } else {
                    let mut increase = acked * self.ai_ack_increase;
                    if self.frac_cwnd != 0 {
                        increase = div_round_closest(increase << CWND_UNIT, self.frac_cwnd);
                    }
                    increase = increase * MTU_SYS / mtu;
                    self.frac_cwnd += acked.max(increase);
                    let rate = self.frac_cwnd_to_pacing_rate(tp);
                    self.rate_bytes = (self.rate_bytes + acked).max(rate);
                }
            } else {
                return;
            }
        }
        // step-wise toward the fractional window
        let target = Self::frac_cwnd_to_snd_cwnd(self.frac_cwnd, tp.snd_cwnd_clamp);
        if tp.snd_cwnd > target {
            tp.snd_cwnd -= 1;
            tp.snd_ssthresh = tp.snd_cwnd;
            self.update_ai_ack_increase(tp);
        } else if tp.snd_cwnd < target {
            tp.snd_cwnd += 1;
            self.update_ai_ack_increase(tp);
        }
    }

    /// `prague_enter_loss`: halve the window (or the rate).
    fn enter_loss(&mut self, tp: &CcSock) {
        self.loss_cwnd = tp.snd_cwnd;
        self.loss_rate_bytes = self.rate_bytes;
        if self.is_rtt_indep(tp) && self.cwnd_mode == 1 {
            self.rate_bytes -= self.rate_bytes >> 1;
            self.frac_cwnd = self.pacing_rate_to_frac_cwnd(tp);
        } else {
            self.frac_cwnd -= self.frac_cwnd >> 1;
            self.rate_bytes = self.frac_cwnd_to_pacing_rate(tp);
        }
        self.in_loss = true;
    }

    /// The CWR cut: `frac_cwnd · alpha / 2`, rounded to nearest.
    pub fn cwr_reduction(frac_cwnd: u64, alpha: u64) -> u64 {
        (alpha * frac_cwnd + PRAGUE_MAX_ALPHA) >> (PRAGUE_ALPHA_BITS + 1)
    }

    /// `prague_enter_cwr`.
    fn enter_cwr(&mut self, tp: &CcSock) {
        if self.is_rtt_indep(tp)
            && (self.target_rtt() >> 3) > stamp_us_delta(tp.now_us, self.cwr_stamp)
        {
            return;
        }
        self.cwr_stamp = tp.now_us;
        let alpha = self.alpha();
        if self.is_rtt_indep(tp) && self.cwnd_mode == 1 {
            let reduction = mul_shr(self.rate_bytes, alpha, PRAGUE_ALPHA_BITS + 1);
            self.rate_bytes = self.rate_bytes.saturating_sub(reduction).max(MINIMUM_RATE);
            self.frac_cwnd = self.pacing_rate_to_frac_cwnd(tp);
        } else {
            self.frac_cwnd -= Self::cwr_reduction(self.frac_cwnd, alpha);
            self.rate_bytes = self.frac_cwnd_to_pacing_rate(tp);
        }
    }

    /// `prague_cong_control`.
    fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) {
        self.update_cwnd(tp, rs);
        if self.should_update_ewma(tp) {
            self.update_alpha(tp);
        }
        self.update_pacing_rate(tp);
        if self.cwnd_mode_transit {
            let mtu = Self::mss_to_mtu(tp, tp.mss_cache);
            let cwnd_bytes = tp.snd_cwnd as u64 * mtu;
            let transit = self.params.cwnd_transit as u64 * MTU_SYS;
            if self.saw_ce && cwnd_bytes <= transit {
                self.cwnd_mode = 1;
                self.frac_cwnd = self.pacing_rate_to_frac_cwnd(tp);
            } else {
                self.cwnd_mode = 0;
                self.rate_bytes = self.frac_cwnd_to_pacing_rate(tp);
            }
        }
    }
}

/// `prague` (`struct tcp_congestion_ops prague`), and `prague_reno` after a
/// fallback.
impl CongestionOps for Prague {
    const NAME: &'static str = "prague";
    const FLAGS: u32 = TCP_CONG_NEEDS_ECN
        | TCP_CONG_NEEDS_ACCECN
        | TCP_CONG_WANTS_ECT_1
        | TCP_CONG_NO_FALLBACK_RFC3168
        | TCP_CONG_NON_RESTRICTED;
    const CONG_CONTROL: Option<CongControl<Self>> = Some(Prague::cong_control);

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Prague {
        Prague::with_params(PragueParams::default())
    }

    fn flags(&self) -> u32 {
        super::reno_fallback_ops(self.reno_fallback, Self::FLAGS, Self::NAME, "prague-reno").0
    }

    fn ops_name(&self) -> &'static str {
        super::reno_fallback_ops(self.reno_fallback, Self::FLAGS, Self::NAME, "prague-reno").1
    }

    fn cong_control_active(&self) -> bool {
        !self.reno_fallback
    }

    /// `prague_init`.
    fn init(&mut self, tp: &mut CcSock) {
        if !tp.ecn_ok {
            self.reno_fallback = true;
            return;
        }
        tp.pacing_status_needed = true;
        self.alpha_stamp = tp.now_us;
        self.alpha_mode = self.params.alpha_mode & 1 != 0;
        self.upscaled_alpha = if self.alpha_mode {
            PRAGUE_MAX_ALPHA << PRAGUE_SHIFT_G
        } else {
            0
        };
        self.frac_cwnd = (tp.snd_cwnd as u64) << CWND_UNIT;
        self.max_tso_burst = 1;
        let mtu = Self::mss_to_mtu(tp, tp.mss_cache);
        self.rate_bytes = if tp.srtt_us != 0 {
            let r = (1_000_000u64 << 3) * mtu / tp.srtt_us as u64;
            (r * tp.snd_cwnd.max(tp.packets_in_flight) as u64).max(MINIMUM_RATE)
        } else {
            MINIMUM_RATE
        };
        self.update_pacing_rate(tp);
        self.loss_rate_bytes = 0;
        self.round = 0;
        self.saw_ce = tp.delivered_ce != 0;
        self.hsrtt_us = if tp.srtt_us != 0 {
            (tp.srtt_us as u64) << HSRTT_SHIFT
        } else {
            1 << (HSRTT_SHIFT + 3)
        };
        self.cwnd_mode_transit = self.params.cwnd_mode & 2 != 0;
        self.cwnd_mode = (self.params.cwnd_mode & 1) as u8;
        self.new_round(tp);
    }

    /// `prague_ssthresh` keeps ssthresh; `tcp_reno_ssthresh` for
    /// `prague-reno`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.reno_fallback {
            return tcp_reno_ssthresh(tp);
        }
        tp.snd_ssthresh
    }

    /// `tcp_reno_cong_avoid` (`prague-reno` only: `prague` has
    /// `cong_control`).
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, acked: u32) {
        super::tcp_reno_cong_avoid(tp, acked)
    }

    /// `prague_state`.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if self.reno_fallback || new_state == tp.ca_state {
            return;
        }
        match new_state {
            CaState::Recovery => self.enter_loss(tp),
            CaState::Cwr => self.enter_cwr(tp),
            CaState::Open => self.in_loss = false,
            _ => {}
        }
    }

    /// `prague_cwnd_event`.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if !self.reno_fallback && ev == CaEvent::Loss {
            self.enter_loss(tp);
        }
    }

    /// `prague_cwnd_undo`.
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        if self.reno_fallback {
            return tcp_reno_undo_cwnd(tp);
        }
        self.in_loss = false;
        self.rate_bytes = self.rate_bytes.max(self.loss_rate_bytes);
        self.frac_cwnd = self.pacing_rate_to_frac_cwnd(tp);
        self.loss_cwnd.max(tp.snd_cwnd)
    }

    /// `prague_tso_segs`.
    fn tso_segs(&self, _tp: &CcSock) -> Option<u32> {
        if self.reno_fallback {
            return None;
        }
        let mut segs = self.max_tso_burst;
        if self.params.max_tso_segs != 0 {
            segs = segs.min(self.params.max_tso_segs);
        }
        Some(segs)
    }

    /// `prague_get_info`.
    fn get_info(&self, _tp: &CcSock) -> Option<CcInfo> {
        Some(CcInfo::Prague {
            enabled: !self.reno_fallback,
            alpha: if self.reno_fallback { 0 } else { self.alpha() },
            max_burst: self.max_tso_burst,
            round: self.round,
            rate_bytes: self.rate_bytes,
            frac_cwnd: self.frac_cwnd,
            rtt_target: self.target_rtt() as u32,
        })
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("alpha", self.alpha() as f64 / PRAGUE_MAX_ALPHA as f64));
        out.push(("frac_cwnd", self.frac_cwnd as f64 / ONE_CWND as f64));
        out.push(("rate_bytes", self.rate_bytes as f64));
        out.push(("round", self.round as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::super::Cc;
    use super::*;

    fn prague(srtt_us: u32) -> (Prague, CcSock) {
        let mut p = Prague::create(CcProfile::Modern, ComponentRng::new(0, "t"));
        let mut tp = CcSock {
            ecn_ok: true,
            srtt_us: srtt_us << 3,
            is_cwnd_limited: true,
            snd_una: 1000,
            snd_nxt: 1000,
            ..CcSock::default()
        };
        p.init(&mut tp);
        (p, tp)
    }

    /// alpha's EWMA at g = 1/16 on the ×16 upscaled value, F in 2^24 units.
    #[test]
    fn alpha_ewma_vectors() {
        // from 0, 1 of 4 packets marked: F = 2^24/4 = 4194304;
        // upscaled 0 − 0 + 4194304 → alpha = 4194304 >> 4 = 262144 (1/64)
        let u = Prague::alpha_step(0, 1, 4);
        assert_eq!(u, 4_194_304);
        assert_eq!(u >> 4, 262_144);
        // next round without marks: 4194304 − 262144 = 3932160 (alpha 15/16 of before)
        let u2 = Prague::alpha_step(u, 0, 10);
        assert_eq!(u2, 3_932_160);
        assert_eq!(u2 >> 4, 245_760);
        // all marked from 0: upscaled 2^24 → alpha 2^20 = 1/16 after one round
        assert_eq!(Prague::alpha_step(0, 8, 8) >> 4, 1 << 20);
        // the cap: alpha 1 (upscaled 2^28) with all marked stays 2^28
        let max = PRAGUE_MAX_ALPHA << PRAGUE_SHIFT_G;
        assert_eq!(Prague::alpha_step(max, 5, 5), max);
        // 1 of 3: F = 16777216/3 = 5592405 (rounded down)
        assert_eq!(Prague::alpha_step(0, 1, 3), 5_592_405);
        // delivered 0 counts as 1
        assert_eq!(Prague::alpha_step(0, 1, 0), 1 << 24);
        // the remainder survives: 17 − 17/16 = 16 (upscaled), where an
        // unscaled alpha of 1 would have decayed to 1 − 0 = 1 forever
        assert_eq!(Prague::alpha_step(17, 0, 1), 16);
    }

    /// The CWR cut is frac_cwnd · alpha / 2, rounded to nearest.
    #[test]
    fn cwr_cut_vectors() {
        // 100 packets (100·2^20), alpha 1/2 (2^23): cut 25 packets
        let w = 100 * ONE_CWND;
        assert_eq!(Prague::cwr_reduction(w, 1 << 23), 25 * ONE_CWND);
        // alpha 1: half
        assert_eq!(Prague::cwr_reduction(w, PRAGUE_MAX_ALPHA), 50 * ONE_CWND);
        // 3 units at alpha 1/2^24 → (3 + 2^24) >> 25 = 0; 2^24 units · 1 → 2^23 exact
        assert_eq!(Prague::cwr_reduction(3, 1), 0);
        assert_eq!(Prague::cwr_reduction(1 << 24, PRAGUE_MAX_ALPHA), 1 << 23);
    }

    /// RTT independence: below 25 ms the increase per ACK is scaled by
    /// (rtt/25 ms)², rounded to nearest.
    #[test]
    fn rtt_scaling_vectors() {
        let target = 25_000u64 << 3;
        // 5 ms: (5/25)² = 1/25 of 2^20 = 41943.04 → 41943
        assert_eq!(
            Prague::rate_scaled_ai_ack_increase(5_000 << 3, target),
            41_943
        );
        // 12.5 ms: 1/4 → 262144
        assert_eq!(
            Prague::rate_scaled_ai_ack_increase(12_500 << 3, target),
            262_144
        );
        // at and above the target: unscaled
        assert_eq!(
            Prague::rate_scaled_ai_ack_increase(target, target),
            ONE_CWND
        );
        assert_eq!(
            Prague::rate_scaled_ai_ack_increase(40_000 << 3, target),
            ONE_CWND
        );
        // the window rounds up, at least 2
        assert_eq!(
            Prague::frac_cwnd_to_snd_cwnd(10 * ONE_CWND + 1, u32::MAX),
            11
        );
        assert_eq!(Prague::frac_cwnd_to_snd_cwnd(ONE_CWND / 2, u32::MAX), 2);
        assert_eq!(Prague::frac_cwnd_to_snd_cwnd(100 * ONE_CWND, 50), 50);
    }

    #[test]
    fn init_paces_and_falls_back_without_ecn() {
        let (p, tp) = prague(20_000);
        // rate = 8e6·1500/160000 · 10 = 750000 bytes/s; cwnd 10 < ∞/2: ×2
        assert_eq!(p.rate_bytes, 750_000);
        assert_eq!(tp.pacing_rate, 1_500_000);
        // burst 1500000/1500 = 1000 segs/s >> 12 = 0 → 1
        assert_eq!(p.max_tso_burst, 1);
        assert!(tp.pacing_status_needed);
        assert_eq!(p.frac_cwnd, 10 * ONE_CWND);
        let mut cc = Cc::from_name("prague").unwrap();
        let mut no_ecn = CcSock::default();
        cc.init(&mut no_ecn);
        assert_eq!(cc.ops_name(), "prague-reno");
        assert!(!cc.needs_ecn() && !cc.has_cong_control());
        let mut ecn = CcSock {
            ecn_ok: true,
            ..CcSock::default()
        };
        let mut cc = Cc::from_name("prague").unwrap();
        cc.init(&mut ecn);
        assert!(cc.needs_accecn() && cc.wants_ect1() && cc.has_cong_control());
    }

    /// Marks shrink the growth and the first mark halves the window
    /// (`prague_alpha_mode` 0); CWR cuts by alpha/2.
    #[test]
    fn marks_and_cwr_on_the_fractional_window() {
        let (mut p, mut tp) = prague(20_000);
        tp.snd_ssthresh = 10; // congestion avoidance
        let rs = RateSample {
            acked_sacked: 2,
            ece_delta: 1,
            ..RateSample::default()
        };
        p.update_cwnd(&mut tp, &rs);
        // first mark: (10·2^20 + 1) >> 1 = 5·2^20 (the +1 is lost); then
        // 1 unmarked packet: increase 1·2^20·2^20/(5·2^20) = 209715.2 →
        // 209715, ×1500/1500: frac 5·2^20 + 209715
        assert!(p.saw_ce);
        assert_eq!(p.frac_cwnd, 5 * ONE_CWND + 209_715);
        // cwnd steps down by one toward 6, ssthresh follows
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (9, 9));
        // alpha 1/2 → CWR cut of a quarter-ish: (2^23·frac + 2^24) >> 25
        p.upscaled_alpha = (1 << 23) << 4;
        let before = p.frac_cwnd;
        tp.ca_state = CaState::Open;
        p.set_state(&mut tp, CaState::Cwr);
        assert_eq!(
            p.frac_cwnd,
            before - ((before * (1 << 23) + (1 << 24)) >> 25)
        );
    }

    #[test]
    fn tso_burst_is_250us_of_the_pacing_rate() {
        let (mut p, mut tp) = prague(1_000);
        tp.snd_cwnd = 1000;
        tp.snd_ssthresh = 500;
        p.frac_cwnd = 1000 * ONE_CWND;
        p.update_pacing_rate(&mut tp);
        // 8e6·1500/8000 · 1000 = 1.5e9 bytes/s; /1500 = 1e6 segs/s >> 12 = 244
        assert_eq!(tp.pacing_rate, 1_500_000_000);
        assert_eq!(p.tso_segs(&tp), Some(244));
    }
}
