//! `dctcp` — Data Center TCP (Alizadeh et al., SIGCOMM 2010; RFC 8257) as
//! Linux's net/ipv4/tcp_dctcp.c and tcp_dctcp.h implement it: Reno's window
//! growth, a cut by `alpha/2` once per window of CE marks, and the receiver's
//! CE state machine that reports marks packet by packet despite delayed ACKs.
//! Written from the kernel's behaviour, function by function (names cited);
//! no kernel code is copied.
//!
//! The estimator (`dctcp_update_alpha`, the `in_ack_event` hook): once per
//! window of data (`snd_una` reaching the `next_seq` recorded at the last
//! update), `alpha ← alpha − alpha·g + g·F` in fixed point, alpha in units of
//! 1/1024 ([`DCTCP_MAX_ALPHA`]), g = 2^−`shift_g`, F the fraction of the
//! window acknowledged with ECE. Integer arithmetic exactly as the kernel's:
//! the decay `min_not_zero(alpha, alpha >> g)` lets alpha reach 0 (below
//! 2^g it drops to 0 in one step), the increase is `(ce << (10 − g)) / total`
//! rounded down, capped at 1024.
//!
//! Kernel versions ([`CcProfile`]):
//! - [lab2019] (Linux 4.15, Ubuntu 18.04): F counts bytes: each ACK adds
//!   `snd_una − prior_snd_una` to the total (and to the ECN count when it
//!   carried ECE); an ACK that does not advance `snd_una` counts as
//!   `icsk_ack.rcv_mss` bytes unless it updated the window
//!   (`CA_ACK_WIN_UPDATE`). A loss (fast recovery or RTO) sets ssthresh by
//!   the same `cwnd·(1 − alpha/2)` as a CE episode; the module parameter
//!   `dctcp_clamp_alpha_on_loss` (off by default) sets alpha to its maximum
//!   on an RTO. The receiver's CE state change sends the delayed ACK for
//!   the old state at once (`tcp_send_ack` with `rcv_nxt` swapped, which
//!   cancels the delayed-ACK timer) and does not force the next ACK.
//! - [modern] (Linux 5.1+): F counts packets from `tp->delivered` /
//!   `tp->delivered_ce`; a loss reacts as Reno (`dctcp_react_to_loss`:
//!   ssthresh = cwnd/2, on entering Recovery and on `CA_EVENT_LOSS`); the
//!   CE state change sends the pending delayed ACK for the old state
//!   (`__tcp_send_ack(sk, prior_rcv_nxt)`, the delayed ACK stays scheduled)
//!   and then ACKs the current segment at once (`ICSK_ACK_NOW`).
//!
//! Without ECN on the connection (`dctcp_init` finding no `TCP_ECN_OK`) the
//! socket switches to `dctcp-reno`: Reno's ssthresh and undo, no ECN events,
//! and its packets are no longer ECT.

use super::reno::Reno;
use super::{
    before, CaEvent, CaState, CcInfo, CcProfile, CcSock, CongestionOps, CA_ACK_ECE,
    CA_ACK_WIN_UPDATE, TCP_CONG_NEEDS_ECN,
};
use crate::rng::ComponentRng;

/// `DCTCP_MAX_ALPHA`: alpha = 1 in the module's fixed point.
pub const DCTCP_MAX_ALPHA: u32 = 1024;

/// The module parameters (`/sys/module/tcp_dctcp/parameters/`), defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DctcpParams {
    /// `dctcp_shift_g`: g = 1/2^shift_g (4: g = 1/16); 0..=10
    pub shift_g: u32,
    /// `dctcp_alpha_on_init`: alpha at connection start (1024 = 1)
    pub alpha_on_init: u32,
    /// `dctcp_clamp_alpha_on_loss` ([lab2019] only): an RTO sets alpha to 1
    pub clamp_alpha_on_loss: bool,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams {
            shift_g: 4,
            alpha_on_init: DCTCP_MAX_ALPHA,
            clamp_alpha_on_loss: false,
        }
    }
}

/// `struct dctcp` (both kernel versions' fields).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dctcp {
    pub params: DctcpParams,
    profile: CcProfile,
    /// alpha, 1/1024 units
    pub alpha: u32,
    /// `snd_nxt` when the current observation window started
    pub next_seq: u32,
    /// receiver: 1 if the last data segment carried CE
    pub ce_state: u32,
    /// receiver: `rcv_nxt` after the previous data segment
    pub prior_rcv_nxt: u32,
    /// cwnd at the last reduction (`dctcp_cwnd_undo` restores it)
    pub loss_cwnd: u32,
    // [modern]: the window's start in tp->delivered / delivered_ce
    old_delivered: u32,
    old_delivered_ce: u32,
    // [lab2019]: bytes acked in the window, with ECE, and the last snd_una
    acked_bytes_ecn: u32,
    acked_bytes_total: u32,
    prior_snd_una: u32,
    /// `dctcp_init` found no ECN: the socket runs `dctcp_reno`
    reno_fallback: bool,
}

impl Dctcp {
    /// A DCTCP instance with explicit module parameters.
    pub fn with_params(profile: CcProfile, params: DctcpParams) -> Dctcp {
        Dctcp {
            params,
            profile,
            alpha: 0,
            next_seq: 0,
            ce_state: 0,
            prior_rcv_nxt: 0,
            loss_cwnd: 0,
            old_delivered: 0,
            old_delivered_ce: 0,
            acked_bytes_ecn: 0,
            acked_bytes_total: 0,
            prior_snd_una: 0,
            reno_fallback: false,
        }
    }

    /// Whether `dctcp_init` fell back to `dctcp-reno` (no ECN negotiated).
    pub fn is_reno_fallback(&self) -> bool {
        self.reno_fallback
    }

    /// `dctcp_reset`: a new observation window starts at `snd_nxt`.
    fn reset(&mut self, tp: &CcSock) {
        self.next_seq = tp.snd_nxt;
        self.old_delivered = tp.delivered;
        self.old_delivered_ce = tp.delivered_ce;
        self.acked_bytes_ecn = 0;
        self.acked_bytes_total = 0;
    }

    /// The EWMA step: decay by `alpha >> g` (all of alpha when that is 0,
    /// the kernel's `min_not_zero`), then add `(ce << (10 − g)) / total`.
    pub fn alpha_step(alpha: u32, shift_g: u32, ce: u64, total: u32) -> u32 {
        Self::alpha_step_shifted(alpha, shift_g, ce != 0, ce << (10 - shift_g), total)
    }

    /// [`Dctcp::alpha_step`] with the marked count already shifted by
    /// `10 − g` (the [modern] kernel shifts a u32, which wraps).
    fn alpha_step_shifted(alpha: u32, shift_g: u32, marked: bool, num: u64, total: u32) -> u32 {
        let decay = alpha >> shift_g;
        let mut a = alpha - if decay == 0 { alpha } else { decay.min(alpha) };
        if marked {
            let inc = num / total.max(1) as u64;
            a = (a as u64 + inc).min(DCTCP_MAX_ALPHA as u64) as u32;
        }
        a
    }

    /// `dctcp_react_to_loss` ([modern]): Reno's halving.
    fn react_to_loss(&mut self, tp: &mut CcSock) {
        self.loss_cwnd = tp.snd_cwnd;
        tp.snd_ssthresh = (tp.snd_cwnd >> 1).max(2);
    }

    /// `dctcp_ece_ack_update` (tcp_dctcp.h) and [lab2019]'s
    /// `dctcp_ce_state_0_to_1` / `_1_to_0`: the receiver's CE state machine.
    fn ece_ack_update(&mut self, tp: &mut CcSock, is_ce: bool) {
        let new_state = is_ce as u32;
        let rcv = &mut tp.rcv;
        if self.ce_state != new_state {
            if rcv.delack_pending {
                // the ACK held back covers data of the old state: send it now
                // with the old state's ECE
                rcv.special_ack = Some((self.prior_rcv_nxt, self.ce_state == 1));
                rcv.special_ack_clears_delack = self.profile == CcProfile::Lab2019;
            }
            if self.profile == CcProfile::Modern {
                rcv.ack_now = true;
            }
        }
        self.prior_rcv_nxt = rcv.rcv_nxt;
        self.ce_state = new_state;
        rcv.demand_cwr = is_ce;
    }

    /// [lab2019] `dctcp_update_alpha`: bytes.
    fn update_alpha_bytes(&mut self, tp: &CcSock, flags: u32) {
        let mut acked = tp.snd_una.wrapping_sub(self.prior_snd_una);
        if acked == 0 && flags & CA_ACK_WIN_UPDATE == 0 {
            acked = tp.rcv_mss;
        }
        if acked != 0 {
            self.acked_bytes_total = self.acked_bytes_total.wrapping_add(acked);
            self.prior_snd_una = tp.snd_una;
            if flags & CA_ACK_ECE != 0 {
                self.acked_bytes_ecn = self.acked_bytes_ecn.wrapping_add(acked);
            }
        }
        if !before(tp.snd_una, self.next_seq) {
            self.alpha = Self::alpha_step(
                self.alpha,
                self.params.shift_g,
                self.acked_bytes_ecn as u64,
                self.acked_bytes_total,
            );
            self.reset(tp);
        }
    }

    /// [modern] `dctcp_update_alpha`: packets.
    fn update_alpha_delivered(&mut self, tp: &CcSock) {
        if !before(tp.snd_una, self.next_seq) {
            let ce = tp.delivered_ce.wrapping_sub(self.old_delivered_ce);
            let total = tp.delivered.wrapping_sub(self.old_delivered);
            // the kernel shifts a u32: wraps past 2^(22+g) marks
            let num = (ce << (10 - self.params.shift_g)) as u64;
            self.alpha =
                Self::alpha_step_shifted(self.alpha, self.params.shift_g, ce != 0, num, total);
            self.reset(tp);
        }
    }
}

/// `dctcp` (`struct tcp_congestion_ops dctcp`), and `dctcp_reno` after a
/// fallback.
impl CongestionOps for Dctcp {
    const NAME: &'static str = "dctcp";
    const FLAGS: u32 = TCP_CONG_NEEDS_ECN;

    fn create(profile: CcProfile, _rng: ComponentRng) -> Dctcp {
        Dctcp::with_params(profile, DctcpParams::default())
    }

    /// `dctcp_init`.
    fn init(&mut self, tp: &mut CcSock) {
        if tp.ecn_ok {
            self.prior_snd_una = tp.snd_una;
            self.prior_rcv_nxt = tp.rcv.rcv_nxt;
            self.alpha = self.params.alpha_on_init.min(DCTCP_MAX_ALPHA);
            self.loss_cwnd = 0;
            self.ce_state = 0;
            self.reset(tp);
        } else {
            self.reno_fallback = true;
        }
    }

    fn flags(&self) -> u32 {
        super::reno_fallback_ops(self.reno_fallback, Self::FLAGS, Self::NAME, "dctcp-reno").0
    }

    fn ops_name(&self) -> &'static str {
        super::reno_fallback_ops(self.reno_fallback, Self::FLAGS, Self::NAME, "dctcp-reno").1
    }

    /// `dctcp_ssthresh`: cwnd − cwnd·alpha/2048, at least 2.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.reno_fallback {
            return (tp.snd_cwnd >> 1).max(2);
        }
        self.loss_cwnd = tp.snd_cwnd;
        let cut = tp.snd_cwnd.wrapping_mul(self.alpha) >> 11;
        tp.snd_cwnd.wrapping_sub(cut).max(2)
    }

    /// `tcp_reno_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, ack: u32, acked: u32) {
        Reno.cong_avoid(tp, ack, acked)
    }

    /// `dctcp_state`.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if self.reno_fallback {
            return;
        }
        match self.profile {
            CcProfile::Modern => {
                if new_state == CaState::Recovery && new_state != tp.ca_state {
                    self.react_to_loss(tp);
                }
            }
            CcProfile::Lab2019 => {
                if self.params.clamp_alpha_on_loss && new_state == CaState::Loss {
                    self.alpha = DCTCP_MAX_ALPHA;
                }
            }
        }
    }

    /// `dctcp_cwnd_event`.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if self.reno_fallback {
            return;
        }
        match ev {
            CaEvent::EcnIsCe | CaEvent::EcnNoCe => self.ece_ack_update(tp, ev == CaEvent::EcnIsCe),
            CaEvent::Loss if self.profile == CcProfile::Modern => self.react_to_loss(tp),
            _ => {}
        }
    }

    /// `dctcp_update_alpha`.
    #[inline]
    fn in_ack_event(&mut self, tp: &mut CcSock, flags: u32) {
        if self.reno_fallback {
            return;
        }
        match self.profile {
            CcProfile::Lab2019 => self.update_alpha_bytes(tp, flags),
            CcProfile::Modern => self.update_alpha_delivered(tp),
        }
    }

    /// `dctcp_cwnd_undo` (`tcp_reno_undo_cwnd` for `dctcp_reno`).
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        if self.reno_fallback {
            return super::tcp_reno_undo_cwnd(tp);
        }
        tp.snd_cwnd.max(self.loss_cwnd)
    }

    /// `dctcp_get_info`: `ss -i` prints it as
    /// `dctcp:(ce_state:…,alpha:…,ab_ecn:…,ab_tot:…)`, or `dctcp:fallback_mode`.
    fn get_info(&self, tp: &CcSock) -> Option<CcInfo> {
        if self.reno_fallback {
            return Some(CcInfo::Dctcp {
                enabled: false,
                ce_state: 0,
                alpha: 0,
                ab_ecn: 0,
                ab_tot: 0,
            });
        }
        let (ab_ecn, ab_tot) = match self.profile {
            CcProfile::Lab2019 => (self.acked_bytes_ecn, self.acked_bytes_total),
            CcProfile::Modern => (
                tp.mss_cache
                    .wrapping_mul(tp.delivered_ce.wrapping_sub(self.old_delivered_ce)),
                tp.mss_cache
                    .wrapping_mul(tp.delivered.wrapping_sub(self.old_delivered)),
            ),
        };
        Some(CcInfo::Dctcp {
            enabled: true,
            ce_state: self.ce_state as u16,
            alpha: self.alpha,
            ab_ecn,
            ab_tot,
        })
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("alpha", self.alpha as f64 / DCTCP_MAX_ALPHA as f64));
        out.push(("ce_state", self.ce_state as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cc, CcRcv, CA_ACK_SLOWPATH};
    use super::*;

    fn dctcp(profile: CcProfile) -> (Dctcp, CcSock) {
        let mut d = Dctcp::create(profile, ComponentRng::new(0, "t"));
        let mut tp = CcSock {
            ecn_ok: true,
            snd_una: 1000,
            snd_nxt: 1000,
            ..CcSock::default()
        };
        d.init(&mut tp);
        (d, tp)
    }

    /// Hand-computed EWMA steps at g = 1/16 (shift 4): decay alpha >> 4,
    /// then add (ce << 6) / total.
    #[test]
    fn alpha_step_is_the_kernels_integer_ewma() {
        // 1024, no marks: 1024 − 64 = 960
        assert_eq!(Dctcp::alpha_step(1024, 4, 0, 100), 960);
        // 960, 10 of 100 marked: 960 − 60 = 900; + 640/100 = 6 → 906
        assert_eq!(Dctcp::alpha_step(960, 4, 10, 100), 906);
        // every packet marked from 1024: 960 + 64 = 1024 (the cap)
        assert_eq!(Dctcp::alpha_step(1024, 4, 100, 100), 1024);
        // 15 >> 4 = 0: min_not_zero takes alpha itself, alpha drops to 0
        assert_eq!(Dctcp::alpha_step(15, 4, 0, 10), 0);
        assert_eq!(Dctcp::alpha_step(16, 4, 0, 10), 15);
        assert_eq!(Dctcp::alpha_step(0, 4, 0, 10), 0);
        // 0 with 1 of 3 marked: 64/3 = 21
        assert_eq!(Dctcp::alpha_step(0, 4, 1, 3), 21);
        // a zero total counts as 1 (max(1U, …)): 2 << 6 = 128
        assert_eq!(Dctcp::alpha_step(0, 4, 2, 0), 128);
        // g = 1/2 (shift 1): 500 − 250 = 250; + (5 << 9)/10 = 256 → 506
        assert_eq!(Dctcp::alpha_step(500, 1, 5, 10), 506);
        // g = 1 (shift 0): all of alpha decays, F·1024 replaces it
        assert_eq!(Dctcp::alpha_step(700, 0, 1, 4), 256);
    }

    #[test]
    fn modern_alpha_updates_once_per_window_from_delivered_counts() {
        let (mut d, mut tp) = dctcp(CcProfile::Modern);
        assert_eq!(d.alpha, 1024);
        // the window [1000, 1000) is already over at init: the first ACK
        // closes it; 20 delivered, 5 CE
        tp.snd_nxt = 30_000;
        tp.snd_una = 2448;
        tp.delivered = 20;
        tp.delivered_ce = 5;
        d.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        // 1024 − 64 + (5 << 6)/20 = 960 + 16 = 976
        assert_eq!(d.alpha, 976);
        assert_eq!(d.next_seq, 30_000);
        // ACKs inside the window change nothing
        tp.snd_una = 20_000;
        tp.delivered = 40;
        tp.delivered_ce = 5;
        d.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!(d.alpha, 976);
        // window closes: 30 delivered since, none marked → 976 − 61 = 915
        tp.snd_una = 30_000;
        tp.delivered = 50;
        d.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!(d.alpha, 915);
    }

    #[test]
    fn lab2019_alpha_counts_bytes_and_dupacks_as_rcv_mss() {
        let (mut d, mut tp) = dctcp(CcProfile::Lab2019);
        tp.snd_nxt = 1000 + 10 * 1448;
        tp.rcv_mss = 536;
        // the first ACK closes the empty initial window: 1448 bytes, ECE
        tp.snd_una = 1000 + 1448;
        d.in_ack_event(&mut tp, CA_ACK_SLOWPATH | CA_ACK_WIN_UPDATE | CA_ACK_ECE);
        // 1024 − 64 + (1448 << 6)/1448 = 960 + 64 = 1024
        assert_eq!(d.alpha, 1024);
        assert_eq!(d.next_seq, 1000 + 10 * 1448);
        // a duplicate ACK with ECE and no window update: 536 bytes, marked
        d.in_ack_event(&mut tp, CA_ACK_SLOWPATH | CA_ACK_ECE);
        // a duplicate ACK that only updated the window: not counted
        d.in_ack_event(&mut tp, CA_ACK_SLOWPATH | CA_ACK_WIN_UPDATE);
        assert_eq!(
            d.get_info(&tp),
            Some(CcInfo::Dctcp {
                enabled: true,
                ce_state: 0,
                alpha: 1024,
                ab_ecn: 536,
                ab_tot: 536,
            })
        );
        // the rest of the window, 9 · 1448 = 13032 bytes, unmarked: F =
        // 536 / 13568; 1024 − 64 + (536 << 6)/13568 = 960 + 2 = 962
        tp.snd_una = 1000 + 10 * 1448;
        d.in_ack_event(&mut tp, CA_ACK_SLOWPATH | CA_ACK_WIN_UPDATE);
        assert_eq!(d.alpha, 962);
    }

    #[test]
    fn ssthresh_cuts_by_half_alpha_and_undo_restores_loss_cwnd() {
        let (mut d, mut tp) = dctcp(CcProfile::Modern);
        tp.snd_cwnd = 100;
        d.alpha = 1024; // F = 1 → halve
        assert_eq!(d.ssthresh(&tp), 50);
        d.alpha = 512; // 100 − 100·512/2048 = 100 − 25
        assert_eq!(d.ssthresh(&tp), 75);
        d.alpha = 0;
        assert_eq!(d.ssthresh(&tp), 100);
        tp.snd_cwnd = 2;
        d.alpha = 1024;
        assert_eq!(d.ssthresh(&tp), 2);
        // 3 − 3·1024/2048 = 3 − 1 = 2; floor 2
        tp.snd_cwnd = 3;
        assert_eq!(d.ssthresh(&tp), 2);
        assert_eq!(d.loss_cwnd, 3);
        tp.snd_cwnd = 1;
        assert_eq!(d.undo_cwnd(&tp), 3);
    }

    #[test]
    fn modern_loss_halves_like_reno_lab2019_uses_alpha() {
        let (mut d, mut tp) = dctcp(CcProfile::Modern);
        d.alpha = 128;
        tp.snd_cwnd = 80;
        tp.snd_ssthresh = d.ssthresh(&tp); // 80 − 5 = 75
        assert_eq!(tp.snd_ssthresh, 75);
        d.set_state(&mut tp, CaState::Recovery);
        assert_eq!(tp.snd_ssthresh, 40);
        let (mut d, mut tp) = dctcp(CcProfile::Lab2019);
        d.alpha = 128;
        tp.snd_cwnd = 80;
        tp.snd_ssthresh = d.ssthresh(&tp);
        d.set_state(&mut tp, CaState::Recovery);
        d.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!(tp.snd_ssthresh, 75);
        // dctcp_clamp_alpha_on_loss: an RTO (Loss state) sets alpha to 1
        d.params.clamp_alpha_on_loss = true;
        d.set_state(&mut tp, CaState::Loss);
        assert_eq!(d.alpha, DCTCP_MAX_ALPHA);
    }

    #[test]
    fn ce_state_change_flushes_the_delayed_ack_with_the_old_state() {
        for profile in [CcProfile::Lab2019, CcProfile::Modern] {
            let (mut d, mut tp) = dctcp(profile);
            // first segment, not CE, no delayed ACK pending: no change
            tp.rcv.rcv_nxt = 5000;
            d.cwnd_event(&mut tp, CaEvent::EcnNoCe);
            assert_eq!(tp.rcv.special_ack, None);
            assert!(!tp.rcv.ack_now && !tp.rcv.demand_cwr);
            // next segment CE while its predecessor's ACK is delayed: that
            // ACK (for 5000, ECE off) goes first, then ECE is demanded
            tp.rcv.rcv_nxt = 6448;
            tp.rcv.delack_pending = true;
            d.cwnd_event(&mut tp, CaEvent::EcnIsCe);
            assert_eq!(tp.rcv.special_ack, Some((5000, false)));
            assert_eq!(
                tp.rcv.special_ack_clears_delack,
                profile == CcProfile::Lab2019
            );
            assert_eq!(tp.rcv.ack_now, profile == CcProfile::Modern);
            assert!(tp.rcv.demand_cwr);
            assert_eq!((d.ce_state, d.prior_rcv_nxt), (1, 6448));
            // CE again: no change of state, no special ACK
            tp.rcv = CcRcv {
                rcv_nxt: 7896,
                delack_pending: true,
                demand_cwr: true,
                ..CcRcv::default()
            };
            d.cwnd_event(&mut tp, CaEvent::EcnIsCe);
            assert_eq!(tp.rcv.special_ack, None);
            assert!(tp.rcv.demand_cwr);
            // back to not-CE: the pending ACK reports CE for up to 7896
            tp.rcv.rcv_nxt = 9344;
            d.cwnd_event(&mut tp, CaEvent::EcnNoCe);
            assert_eq!(tp.rcv.special_ack, Some((7896, true)));
            assert!(!tp.rcv.demand_cwr);
        }
    }

    #[test]
    fn without_ecn_the_socket_falls_back_to_dctcp_reno() {
        let mut cc = Cc::from_name("dctcp").unwrap();
        assert!(cc.needs_ecn());
        let mut tp = CcSock {
            snd_cwnd: 40,
            ..CcSock::default()
        };
        cc.init(&mut tp);
        assert!(!cc.needs_ecn());
        assert_eq!(cc.ops_name(), "dctcp-reno");
        assert_eq!(cc.ssthresh(&mut tp), 20);
        assert!(matches!(
            cc.get_info(&tp),
            Some(CcInfo::Dctcp { enabled: false, .. })
        ));
    }

    // ---- end to end, over the test harness (tcp/harness.rs)

    use crate::packet::tcp_flags;
    use crate::tcp::harness::{cfg, ms, Pair};
    use crate::time::{Rate, SimDuration};

    fn dctcp_pair(profile: CcProfile, k: usize, bytes: u64) -> Pair {
        dctcp_pair_at_phase(profile, k, bytes, 0)
    }

    /// [`dctcp_pair`] whose hosts' TCP clock is `clock_phase_us` past a
    /// whole millisecond (tcp/clock.rs).
    fn dctcp_pair_at_phase(profile: CcProfile, k: usize, bytes: u64, clock_phase_us: u32) -> Pair {
        let c = crate::tcp::TcpConfig {
            congestion: "dctcp".into(),
            clock_phase_us,
            ..crate::tcp::TcpConfig::for_profile(profile)
        };
        let mut p = Pair::sym(c, SimDuration::from_millis(5));
        p.ab.rate = Some(Rate::from_bps(100_000_000));
        p.ab.limit = 1000;
        p.ab.ce_threshold = Some(k);
        p.to_write = bytes;
        p
    }

    /// The receiver's ACKs that acknowledge data of both CE states: (with
    /// ECE, the unmarked segments they cover; without, the marked ones).
    fn mixed_acks(p: &Pair) -> (u64, u64) {
        let mut ce_by_end = std::collections::HashMap::new();
        let mut snd_una = None;
        let (mut ece_on_unmarked, mut marked_without_ece) = (0, 0);
        for s in &p.arrivals {
            let h = s.seg.hdr;
            if s.from_a {
                let fin = (h.flags & tcp_flags::FIN != 0) as u32;
                if s.seg.payload_len + fin > 0 {
                    let end = h.seq.wrapping_add(s.seg.payload_len + fin);
                    ce_by_end.insert(end, (h.seq, s.seg.ecn == crate::packet::ECN_CE));
                }
                continue;
            }
            let una = *snd_una.get_or_insert(h.ack);
            if !before(una, h.ack) {
                continue;
            }
            let ece = h.flags & tcp_flags::ECE != 0;
            let mut end = h.ack;
            while end != una {
                let (seq, ce) = ce_by_end[&end];
                match (ece, ce) {
                    (true, false) => ece_on_unmarked += 1,
                    (false, true) => marked_without_ece += 1,
                    _ => {}
                }
                end = seq;
            }
            snd_una = Some(h.ack);
        }
        (ece_on_unmarked, marked_without_ece)
    }

    /// Every CE mark made on the path is seen by the receiver
    /// (`tcpi_received_ce`), and the sender counts as `delivered_ce` the
    /// segments ECE ACKs acknowledge. The CE state machine splits delayed
    /// ACKs at every change, so under [modern] an ECE ACK covers marked
    /// segments only and the three counts agree, whatever the phase of the
    /// hosts' TCP clock. [lab2019] (4.15) does not always split: the special
    /// ACK is an ordinary `tcp_send_ack`, whose `tcp_event_ack_sent` clears
    /// the delayed ACK the current segment had just scheduled
    /// (`inet_csk_schedule_ack`), and `CA_EVENT_NON_DELAYED_ACK` clears
    /// `delayed_ack_reserved`; when the next segment changes the state
    /// back, nothing is pending, no special ACK goes out, and the ACK that
    /// follows covers a segment of each state (4.18's "tcp: do not cancel
    /// delay-AcK on DCTCP special ACK" fixed it). While the queue sits at K
    /// and marks alternate, such ACKs alternate ECE on and off, so
    /// `delivered_ce` is off from the marks by what the last pair leaves:
    /// the clock's phase moves the marks, and at 0.45 ms the sender counts
    /// 1476 for 1475 marks, at 0.8 ms 1558 for 1559.
    #[test]
    fn ce_marks_are_conserved_from_queue_to_receiver_to_ece() {
        for profile in [CcProfile::Lab2019, CcProfile::Modern] {
            for clock_phase_us in [0, 450, 800] {
                let mut p = dctcp_pair_at_phase(profile, 20, 30_000_000, clock_phase_us);
                p.record = true;
                p.run_until(ms(4000));
                let (a, b) = (p.a.info(), p.b().info());
                let run = format!("{profile:?} at {clock_phase_us} µs");
                assert_eq!(a.bytes_acked, 30_000_000 + 1, "{run}: transfer done");
                assert_eq!(a.total_retrans, 0, "{run}");
                let marked = p.ab.ce_marked;
                assert!(marked > 100, "{run}: {marked}");
                assert_eq!(b.received_ce as u64, marked, "{run}");
                let (ece_on_unmarked, marked_without_ece) = mixed_acks(&p);
                assert_eq!(
                    a.delivered_ce as u64 + marked_without_ece,
                    marked + ece_on_unmarked,
                    "{run}"
                );
                if profile == CcProfile::Modern {
                    assert_eq!((ece_on_unmarked, marked_without_ece), (0, 0), "{run}");
                } else {
                    assert!(ece_on_unmarked > 0 && marked_without_ece > 0, "{run}");
                    let off = a.delivered_ce as i64 - marked as i64;
                    assert!(off.abs() <= 1, "{run}: {off}");
                }
                assert!(a.options & 8 != 0 && b.options & 8 != 0);
                assert!(matches!(
                    a.cc_info,
                    Some(CcInfo::Dctcp { enabled: true, .. })
                ));
            }
        }
    }

    /// One DCTCP flow, 100 Mbit/s, 10 ms RTT (C·RTT ≈ 83 packets), marking
    /// at K = 20 (> C·RTT/7, the paper's no-underflow bound): the link
    /// stays full, nothing is lost and the queue never builds far past K.
    #[test]
    fn one_flow_fills_the_link_with_the_queue_held_near_k() {
        for profile in [CcProfile::Lab2019, CcProfile::Modern] {
            let mut p = dctcp_pair(profile, 20, u64::MAX);
            p.run_until(ms(2000));
            let acked0 = p.a.bytes_acked();
            p.ab.max_queue = 0;
            p.run_until(ms(5000));
            let rate = (p.a.bytes_acked() - acked0) as f64 * 8.0 / 3.0;
            // goodput of a full link: 1448 of every 1514 bytes (TS option)
            let full = 100e6 * 1448.0 / 1514.0;
            assert!(rate > 0.97 * full, "{profile:?}: {rate}");
            assert_eq!(p.ab.queue_drops, 0);
            // Q_max = K + N (+ a delayed-ACK pair) by the paper's analysis
            assert!(p.ab.max_queue <= 20 + 4, "{profile:?}: {}", p.ab.max_queue);
            let alpha = p.a.cc().metrics()[0].1;
            // α ≈ sqrt(2/W*) = sqrt(2/103) ≈ 0.14 at N = 1
            assert!((0.03..0.4).contains(&alpha), "{profile:?}: {alpha}");
        }
    }

    /// A DCTCP SYN is ECT(0) and asks for ECN whatever tcp_ecn says; a
    /// classic listener (tcp_ecn = 2) refuses an ECT SYN (RFC 3168
    /// §6.1.1), so the sender falls back to `dctcp-reno` and stops
    /// sending ECT; a DCTCP listener accepts it.
    #[test]
    fn dctcp_negotiates_ecn_with_a_dctcp_peer_and_falls_back_otherwise() {
        let mut a = cfg("dctcp");
        a.ecn = 0;
        let mut p = Pair::new(a.clone(), cfg("cubic"), SimDuration::from_millis(5));
        p.to_write = 100_000;
        p.run_until(ms(500));
        let syn = p.log[0].seg;
        let ece_cwr = tcp_flags::ECE | tcp_flags::CWR;
        assert_eq!(syn.hdr.flags & ece_cwr, ece_cwr);
        assert!(syn.ecn != 0);
        assert_eq!(p.a.cc().ops_name(), "dctcp-reno");
        assert!(p.data_from_a().all(|s| s.seg.ecn == 0));
        assert!(p.segs_from_b().next().unwrap().seg.ecn == 0);
        let mut p = Pair::new(a, cfg("dctcp"), SimDuration::from_millis(5));
        p.to_write = 100_000;
        p.run_until(ms(500));
        assert_eq!(p.a.cc().ops_name(), "dctcp");
        assert!(p.a.info().options & 8 != 0);
        // every packet of both ends is ECT(0): SYN-ACK, pure ACKs, data
        assert!(p.log.iter().all(|s| s.seg.ecn != 0));
    }

    /// tcp_ecn_fallback: with it (the default) a retransmitted SYN no
    /// longer asks for ECN; without it, it still does.
    #[test]
    fn retransmitted_syn_drops_ece_cwr_only_with_tcp_ecn_fallback() {
        for fallback in [true, false] {
            let mut a = cfg("reno");
            a.ecn = 1;
            a.ecn_fallback = fallback;
            let mut p = Pair::sym(a, SimDuration::from_millis(5));
            let mut first = true;
            p.ab.drop = Some(Box::new(move |s: &crate::tcp::Segment| {
                let syn = s.hdr.flags & tcp_flags::SYN != 0;
                let d = syn && first;
                if syn {
                    first = false;
                }
                d
            }));
            p.run_until(ms(3000));
            let syns: Vec<u8> = p
                .log
                .iter()
                .filter(|s| s.from_a && s.seg.hdr.flags & tcp_flags::SYN != 0)
                .map(|s| s.seg.hdr.flags & (tcp_flags::ECE | tcp_flags::CWR))
                .collect();
            assert_eq!(syns.len(), 2);
            assert_eq!(syns[0], tcp_flags::ECE | tcp_flags::CWR);
            assert_eq!(syns[1] == 0, fallback);
            assert_eq!(p.a.info().options & 8 != 0, !fallback);
        }
    }

    /// One CE-marked segment between unmarked ones. [modern]: the receiver
    /// ACKs the data before it at once without ECE, then the marked segment
    /// at once with ECE: the sender counts exactly one CE packet whatever
    /// the delayed-ACK phase. [lab2019] (4.15): the special ACK is an
    /// ordinary `tcp_send_ack`, which cancels the scheduled ACK of the
    /// marked segment itself; the next, unmarked segment then acknowledges
    /// both without ECE, and the mark is lost when a delayed ACK was
    /// pending (fixed in 4.18 by "tcp: do not cancel delay-AcK on DCTCP
    /// special ACK").
    #[test]
    fn a_lone_ce_mark_is_reported_by_modern_and_may_be_lost_by_4_15() {
        let mut seen = Vec::new();
        for profile in [CcProfile::Lab2019, CcProfile::Modern] {
            for k in [300u32, 301] {
                let c = crate::tcp::TcpConfig {
                    congestion: "dctcp".into(),
                    ..crate::tcp::TcpConfig::for_profile(profile)
                };
                let mut p = Pair::sym(c, SimDuration::from_millis(5));
                p.to_write = 600 * 1448;
                let iss = p.a.iss();
                let mut done = false;
                p.ab.ce_rule = Some(Box::new(move |s: &crate::tcp::Segment| {
                    let n = s.hdr.seq.wrapping_sub(iss.wrapping_add(1)) / 1448;
                    let hit = s.payload_len > 0 && n == k && !done;
                    done |= hit;
                    hit
                }));
                p.run_until(ms(2000));
                assert_eq!(p.ab.ce_marked, 1);
                assert_eq!(p.b().info().received_ce, 1);
                seen.push((profile, k, p.a.info().delivered_ce));
            }
        }
        assert!(
            seen.iter()
                .filter(|s| s.0 == CcProfile::Modern)
                .all(|s| s.2 == 1),
            "{seen:?}"
        );
        assert!(
            seen.iter().any(|s| s.0 == CcProfile::Lab2019 && s.2 == 0),
            "{seen:?}"
        );
    }
}
