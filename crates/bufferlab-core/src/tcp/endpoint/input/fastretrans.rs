//! Size: one state machine, as in tcp_input.c: `tcp_fastretrans_alert` and the
//! Open/Disorder/CWR/Recovery/Loss states it moves between.
//!
//! The loss-recovery state machine of net/ipv4/tcp_input.c (docs/semantics/tcp.md §9):
//! `tcp_fastretrans_alert`, `tcp_process_loss`, `tcp_try_undo_*`,
//! `tcp_enter_recovery`, `tcp_enter_loss`, `tcp_cwnd_reduction` (PRR),
//! `tcp_enter_cwr`, `tcp_process_tlp_ack`, `tcp_cong_control`, the RACK
//! glue of net/ipv4/tcp_recovery.c and `tcp_xmit_retransmit_queue`
//! (tcp_output.c), driving the pieces in `tcp/recovery/` with socket state.
//!
//! Profiles: PRR's slow-start branch differs (lab2019: only after
//! retransmitted data is acked without a lost retransmission, else the
//! conservative `min(delta, newly_acked_sacked)`; modern: RFC 6937's
//! `SND.UNA advanced and nothing newly lost`, docs/semantics/tcp.md §9.4).

use crate::packet::SKB_TRUESIZE_OVERHEAD;
use crate::tcp::accecn::EcnMode;
use crate::tcp::cc::{usecs_to_jiffies, CaEvent, CaState, TCP_INFINITE_SSTHRESH};
use crate::tcp::endpoint::{flag, Rexmit, TcpEndpoint, TcpState};
use crate::tcp::rate::RateAcc;
use crate::tcp::recovery::{
    PrrAck, ReoWndInputs, EVER_RETRANS, LOST, SACKED_ACKED, SACKED_RETRANS,
};
use crate::tcp::rtt::TCP_TIMEOUT_MIN_US;
use crate::tcp::seq::{after, before};
use crate::tcp::timers::TcpTimer;

impl TcpEndpoint {
    // =====================================================================
    // the recovery state machine (tcp_fastretrans_alert, docs/semantics/tcp.md §9.1)
    // =====================================================================

    /// `tcp_init_undo`.
    pub(super) fn init_undo(&mut self) {
        let tlp_retrans_out = self.tlp_high_seq != 0 && self.tlp_retrans;
        self.undo
            .start(self.snd_una, self.sb.retrans_out, tlp_retrans_out);
    }

    /// `tcp_any_retrans_done`.
    pub(super) fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0
            || self
                .sb
                .q
                .front()
                .is_some_and(|h| h.sacked & EVER_RETRANS != 0)
    }

    /// `tcp_packet_delayed`.
    pub(super) fn packet_delayed(&self) -> bool {
        if self.retrans_stamp != 0 {
            return self.tsopt_ecr_before(self.retrans_stamp);
        }
        if !self.sack_ok && !before(self.snd_una, self.high_seq) {
            return false;
        }
        if self.state == TcpState::SynSent {
            return false;
        }
        true
    }

    /// `tcp_may_undo`.
    pub(super) fn may_undo(&self) -> bool {
        self.undo.may_undo(|| self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`.
    pub(super) fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            for s in self.sb.q.iter_mut() {
                s.sacked &= !LOST;
            }
            self.sb.lost_out = 0;
            self.sb.retransmit_hint = None;
        }
        if self.undo.prior_ssthresh != 0 {
            self.cc_sync();
            let c = self.cc.undo_cwnd(&mut self.cs);
            self.set_cwnd(c);
            if self.undo.prior_ssthresh > self.cs.snd_ssthresh {
                self.cs.snd_ssthresh = self.undo.prior_ssthresh;
                self.ecn_queue_cwr = false; // tcp_ecn_withdraw_cwr
            }
        }
        self.snd_cwnd_stamp = self.jiffies();
        self.undo.marker = 0;
        self.rack.advanced = true; // force RACK to re-examine losses
    }

    /// `tcp_is_non_sack_preventing_reopen`.
    pub(super) fn non_sack_preventing_reopen(&mut self) -> bool {
        if self.snd_una == self.high_seq && !self.sack_ok {
            if !self.any_retrans_done() {
                self.retrans_stamp = 0;
            }
            return true;
        }
        false
    }

    /// `tcp_try_undo_recovery`.
    pub(super) fn try_undo_recovery(&mut self) -> bool {
        if self.may_undo() {
            self.undo_cwnd_reduction(false);
            if self.ca_state() == CaState::Loss {
                self.mib.loss_undo += 1;
            } else {
                self.mib.full_undo += 1;
            }
        } else {
            self.rack.on_recovery_done();
        }
        if self.non_sack_preventing_reopen() {
            return true;
        }
        self.set_ca_state(CaState::Open);
        self.is_sack_reneg = false;
        false
    }

    /// `tcp_try_undo_dsack`.
    pub(super) fn try_undo_dsack(&mut self) -> bool {
        if self.undo.all_retransmits_dsacked() {
            self.rack.on_dsack_undo();
            self.undo_cwnd_reduction(false);
            self.mib.dsack_undo += 1;
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss`.
    pub(super) fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            self.undo_cwnd_reduction(true);
            self.mib.loss_undo += 1;
            if frto_undo {
                self.mib.spurious_rtos += 1;
            }
            self.retransmits = 0;
            if self.non_sack_preventing_reopen() {
                return true;
            }
            if frto_undo || self.sack_ok {
                self.set_ca_state(CaState::Open);
                self.is_sack_reneg = false;
            }
            return true;
        }
        false
    }

    /// `tcp_try_undo_partial`.
    pub(super) fn try_undo_partial(&mut self, prior_snd_una: u32) -> bool {
        if self.undo.is_armed() && self.packet_delayed() {
            self.check_sack_reordering(prior_snd_una, true);
            if self.sb.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp = 0;
            }
            self.undo_cwnd_reduction(true);
            self.mib.partial_undo += 1;
            self.try_keep_open();
        }
        false
    }

    /// `tcp_init_cwnd_reduction`.
    pub(super) fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        self.cs.snd_cwnd_cnt = 0;
        self.cs.prior_cwnd = self.cwnd();
        self.prr.start();
        self.cs.snd_ssthresh = self.cc_ssthresh();
        // tcp_ecn_queue_cwr: never in AccECN mode
        if self.ecn_mode == EcnMode::Rfc3168 {
            self.ecn_queue_cwr = true;
        }
    }

    /// `tcp_cwnd_reduction`: PRR (RFC 6937, docs/semantics/tcp.md §9.4).
    pub(super) fn cwnd_reduction(&mut self, newly_acked_sacked: i32, newly_lost: i32, fl: u32) {
        let ack = PrrAck {
            newly_acked_sacked,
            newly_lost,
            snd_una_advanced: fl & flag::SND_UNA_ADVANCED != 0,
            retrans_acked_none_lost: fl & (flag::RETRANS_DATA_ACKED | flag::LOST_RETRANS)
                == flag::RETRANS_DATA_ACKED,
        };
        let in_flight = self.in_flight();
        if let Some(cwnd) = self.prr.cwnd_on_ack(
            self.cfg.profile,
            self.cs.prior_cwnd,
            self.cs.snd_ssthresh,
            in_flight,
            &ack,
        ) {
            self.set_cwnd(cwnd);
        }
    }

    /// `tcp_end_cwnd_reduction`.
    pub(super) fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.cs.snd_ssthresh < TCP_INFINITE_SSTHRESH
            && (self.ca_state() == CaState::Cwr || self.undo.is_armed())
        {
            let s = self.cs.snd_ssthresh;
            self.set_cwnd(s);
            self.snd_cwnd_stamp = self.jiffies();
        }
        self.ca_event(CaEvent::CompleteCwr);
    }

    /// `tcp_enter_cwr`: ECN (or local) congestion, no undo.
    pub(in crate::tcp) fn enter_cwr(&mut self) {
        self.undo.prior_ssthresh = 0;
        if self.ca_state() < CaState::Cwr {
            self.undo.marker = 0;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_try_keep_open`.
    pub(super) fn try_keep_open(&mut self) {
        let mut state = CaState::Open;
        if self.sb.sacked_out + self.sb.lost_out > 0 || self.any_retrans_done() {
            state = CaState::Disorder;
        }
        if self.ca_state() != state {
            self.set_ca_state(state);
            self.high_seq = self.snd_nxt;
        }
    }

    /// `tcp_try_to_open`.
    pub(super) fn try_to_open(&mut self, fl: u32) {
        if !self.any_retrans_done() {
            self.retrans_stamp = 0;
        }
        if fl & flag::ECE != 0 {
            self.enter_cwr();
        }
        if self.ca_state() != CaState::Cwr {
            self.try_keep_open();
        }
    }

    /// `tcp_enter_recovery`.
    pub(super) fn enter_recovery(&mut self, ece_ack: bool) {
        if self.sack_ok {
            self.mib.sack_recovery += 1;
        } else {
            self.mib.reno_recovery += 1;
        }
        if !self.any_retrans_done() {
            self.retrans_stamp = 0; // tcp_retrans_stamp_cleanup
        }
        self.undo.prior_ssthresh = 0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            if !ece_ack {
                self.undo.prior_ssthresh = self.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_timeout_mark_lost`.
    pub(super) fn timeout_mark_lost(&mut self) {
        let is_reneg = self
            .sb
            .q
            .front()
            .is_some_and(|h| h.sacked & SACKED_ACKED != 0);
        if is_reneg {
            self.sb.sacked_out = 0;
            self.is_sack_reneg = true;
        } else if !self.sack_ok {
            self.sb.sacked_out = 0;
        }
        let now = self.now_us;
        for idx in 0..self.sb.q.len() {
            if is_reneg {
                self.sb.q[idx].sacked &= !SACKED_ACKED;
            } else if idx != 0 {
                // tcp_rack_skb_timeout(tp, skb, 0) > 0: too recent to declare
                let s = self.sb.q[idx];
                let remaining = self.rack.rtt_us as i64 - now.saturating_sub(s.xmit_us) as i64;
                if remaining > 0 {
                    continue;
                }
            }
            if self.sb.mark_lost(idx) {
                self.add_lost(1);
            }
        }
        self.sb.retransmit_hint = None;
    }

    /// `tcp_enter_loss` (docs/semantics/tcp.md §9.5).
    pub(in crate::tcp) fn enter_loss(&mut self) {
        let new_recovery = self.ca_state() < CaState::Recovery;
        self.timeout_mark_lost();
        if self.ca_state() <= CaState::Disorder
            || !after(self.high_seq, self.snd_una)
            || (self.ca_state() == CaState::Loss && self.retransmits == 0)
        {
            self.undo.prior_ssthresh = self.current_ssthresh();
            self.cs.prior_cwnd = self.cwnd();
            self.cs.snd_ssthresh = self.cc_ssthresh();
            self.ca_event(CaEvent::Loss);
            self.init_undo();
        }
        let c = self.in_flight() + 1;
        self.set_cwnd(c);
        self.cs.snd_cwnd_cnt = 0;
        self.snd_cwnd_stamp = self.jiffies();
        if self.ca_state() <= CaState::Disorder && self.sb.sacked_out >= 3 {
            self.reordering = self.reordering.min(3);
        }
        self.set_ca_state(CaState::Loss);
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        if self.ecn_mode == EcnMode::Rfc3168 {
            self.ecn_queue_cwr = true;
        }
        // F-RTO (tcp_frto = 2) unless this is a repeated timeout mid-recovery
        self.frto = new_recovery || self.retransmits > 0;
    }

    /// `tcp_process_loss`.
    pub(super) fn process_loss(&mut self, fl: u32, num_dupack: u32) {
        let recovered = !before(self.snd_una, self.high_seq);
        if fl & flag::SND_UNA_ADVANCED != 0 && self.try_undo_loss(false) {
            return;
        }
        if self.frto {
            // F-RTO RFC 5682 §3.1 (SACK-enhanced)
            if fl & flag::ORIG_SACK_ACKED != 0 && self.try_undo_loss(true) {
                return;
            }
            if after(self.snd_nxt, self.high_seq) {
                if fl & flag::DATA_SACKED != 0 || num_dupack > 0 {
                    self.frto = false; // step 3.a: the loss was real
                }
            } else if fl & flag::SND_UNA_ADVANCED != 0 && !recovered {
                self.high_seq = self.snd_nxt;
                // step 2.b: send new data instead of retransmitting
                if self.unsent_seq() > 0 && after(self.wnd_end(), self.snd_nxt) {
                    self.rexmit = Rexmit::New;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery();
            return;
        }
        if !self.sack_ok {
            if after(self.snd_nxt, self.high_seq) && num_dupack > 0 {
                self.add_reno_sack(num_dupack, fl & flag::ECE != 0);
            } else if fl & flag::SND_UNA_ADVANCED != 0 {
                self.sb.sacked_out = 0;
            }
        }
        self.rexmit = Rexmit::Lost;
    }

    /// `tcp_identify_packet_loss`.
    pub(super) fn identify_packet_loss(&mut self, fl: &mut u32) {
        if self.sb.q.is_empty() {
            return;
        }
        if !self.sack_ok {
            self.newreno_mark_lost(*fl & flag::SND_UNA_ADVANCED != 0);
        } else {
            let prior_retrans = self.sb.retrans_out;
            if self.rack_mark_lost() {
                *fl &= !flag::SET_XMIT_TIMER;
            }
            if prior_retrans > self.sb.retrans_out {
                *fl |= flag::LOST_RETRANS;
            }
        }
    }

    /// `tcp_time_to_recover`: has loss detection marked anything lost?
    pub(super) fn time_to_recover(&self) -> bool {
        self.sb.lost_out != 0
    }

    /// `tcp_fastretrans_alert`.
    pub(super) fn fastretrans_alert(&mut self, prior_snd_una: u32, num_dupack: u32, fl: &mut u32) {
        let ece_ack = *fl & flag::ECE != 0;
        if self.sb.packets_out == 0 && self.sb.sacked_out > 0 {
            self.sb.sacked_out = 0;
        }
        // A. ECE: no undo of this reduction
        if ece_ack {
            self.undo.prior_ssthresh = 0;
        }
        // B. SACK reneging: give the receiver max(RTT/2, 10 ms)
        if *fl & flag::SACK_RENEGING != 0 && *fl & flag::SND_UNA_ADVANCED != 0 {
            let delay =
                usecs_to_jiffies(self.rtt.srtt_us >> 4).max(crate::tcp::cc::msecs_to_jiffies(10));
            self.reset_xmit_timer(TcpTimer::Retransmit, delay, false);
            *fl &= !flag::SET_XMIT_TIMER;
            return;
        }
        // D. state exit when high_seq is acked
        if self.ca_state() == CaState::Open {
            self.retrans_stamp = 0;
        } else if !before(self.snd_una, self.high_seq) {
            match self.ca_state() {
                // hold CWR until something above high_seq is acked
                CaState::Cwr if self.snd_una != self.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_ca_state(CaState::Open);
                }
                CaState::Recovery => {
                    if !self.sack_ok {
                        self.sb.sacked_out = 0;
                    }
                    if self.try_undo_recovery() {
                        return;
                    }
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        // E. process the state
        let mut fall_through = false;
        match self.ca_state() {
            CaState::Recovery => {
                if *fl & flag::SND_UNA_ADVANCED == 0 {
                    if !self.sack_ok {
                        self.add_reno_sack(num_dupack, ece_ack);
                    }
                } else if self.try_undo_partial(prior_snd_una) {
                    return;
                }
                if self.try_undo_dsack() {
                    self.try_to_open(*fl);
                }
                self.identify_packet_loss(fl);
                if self.ca_state() != CaState::Recovery {
                    if !self.time_to_recover() {
                        return;
                    }
                    self.enter_recovery(ece_ack);
                }
            }
            CaState::Loss => {
                self.process_loss(*fl, num_dupack);
                self.identify_packet_loss(fl);
                if !(self.ca_state() == CaState::Open || *fl & flag::LOST_RETRANS != 0) {
                    return;
                }
                fall_through = true;
            }
            _ => fall_through = true,
        }
        if fall_through {
            if !self.sack_ok {
                if *fl & flag::SND_UNA_ADVANCED != 0 {
                    self.sb.sacked_out = 0;
                }
                self.add_reno_sack(num_dupack, ece_ack);
            }
            if self.ca_state() <= CaState::Disorder {
                self.try_undo_dsack();
            }
            self.identify_packet_loss(fl);
            if !self.time_to_recover() {
                self.try_to_open(*fl);
                return;
            }
            self.enter_recovery(ece_ack);
        }
        if self.rexmit != Rexmit::New {
            self.rexmit = Rexmit::Lost;
        }
    }

    /// `tcp_process_tlp_ack` (docs/semantics/tcp.md §9.3).
    pub(super) fn process_tlp_ack(&mut self, ack: u32, fl: u32) {
        if before(ack, self.tlp_high_seq) {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = 0; // a probe of new data was acked
        } else if fl & flag::DSACK_TLP != 0 {
            self.tlp_high_seq = 0; // the original and the probe arrived
        } else if after(ack, self.tlp_high_seq) {
            // the probe repaired a loss: one-shot reduction
            self.mib.loss_probe_recovery += 1;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
            self.end_cwnd_reduction();
            self.try_keep_open();
        } else if fl & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DATA_SACKED) == 0 {
            self.tlp_high_seq = 0; // pure dupack: no loss
        }
    }

    // =====================================================================
    // RACK (net/ipv4/tcp_recovery.c)
    // =====================================================================

    /// `tcp_rack_reo_wnd`.
    pub(super) fn rack_reo_wnd(&self) -> u32 {
        self.rack.reo_wnd(&ReoWndInputs {
            reordering_seen: self.reord_seen > 0,
            in_recovery: self.ca_state() >= CaState::Recovery,
            sacked_out: self.sb.sacked_out,
            reordering: self.reordering,
            min_rtt_us: self.min_rtt_us(),
            srtt_us_x8: self.rtt.srtt_us,
        })
    }

    /// `tcp_rack_detect_loss`.
    pub(super) fn rack_detect_loss(&mut self) -> u32 {
        let reo_wnd = self.rack_reo_wnd();
        let (lost, timeout) = self.rack.detect_loss(&mut self.sb, reo_wnd, self.now_us);
        self.add_lost(lost);
        timeout
    }

    /// `tcp_rack_mark_lost`; true if a reordering timer was armed.
    pub(super) fn rack_mark_lost(&mut self) -> bool {
        if !self.rack.advanced {
            return false;
        }
        self.rack.advanced = false;
        let timeout = self.rack_detect_loss();
        if timeout > 0 {
            let when = usecs_to_jiffies(timeout + TCP_TIMEOUT_MIN_US).min(self.icsk_rto);
            self.reset_xmit_timer(TcpTimer::ReoTimeout, when, false);
            return true;
        }
        false
    }

    /// `tcp_rack_reo_timeout`: the reordering window expired.
    pub(in crate::tcp) fn rack_reo_timeout(&mut self) {
        let lost0 = self.lost;
        let prior_inflight = self.in_flight();
        self.rack_detect_loss();
        if prior_inflight != self.in_flight() {
            if self.ca_state() != CaState::Recovery {
                self.enter_recovery(false);
                if !self.cc.has_cong_control() {
                    let newly_lost = self.lost.wrapping_sub(lost0) as i32;
                    self.cwnd_reduction(1, newly_lost, 0);
                }
            }
            self.xmit_retransmit_queue();
        }
        if !matches!(self.timers.pending_xmit(), Some((TcpTimer::Retransmit, _))) {
            self.rearm_rto();
        }
    }

    /// `tcp_newreno_mark_lost` (non-SACK, RFC 6582).
    pub(super) fn newreno_mark_lost(&mut self, snd_una_advanced: bool) {
        let state = self.ca_state();
        if (state < CaState::Recovery && self.sb.sacked_out >= self.reordering)
            || (state == CaState::Recovery && snd_una_advanced)
        {
            if self.sb.q.front().is_some_and(|h| h.sacked & LOST != 0) {
                return;
            }
            if self.sb.mark_lost(0) {
                self.add_lost(1);
            }
        }
    }

    // =====================================================================
    // congestion control step and retransmission (docs/semantics/tcp.md §8 steps 11–12)
    // =====================================================================

    /// `tcp_cong_control`.
    pub(super) fn cong_control(&mut self, ack: u32, acked_sacked: u32, fl: u32, rs: &RateAcc) {
        if self.cc.has_cong_control() {
            self.cc_sync();
            let mut r = rs.to_cc(self.lost);
            r.ece_delta = self.ece_delta;
            r.is_ece = fl & flag::ECE != 0;
            self.cc.cong_control(&mut self.cs, &r);
            self.rate.app_limited = self.cs.app_limited;
            return;
        }
        if self.in_cwnd_reduction() {
            self.cwnd_reduction(acked_sacked as i32, rs.losses, fl);
        } else if self.may_raise_cwnd(fl) {
            self.cc_sync();
            self.cc.cong_avoid(&mut self.cs, ack, acked_sacked);
            self.snd_cwnd_stamp = self.jiffies();
            if self.cs.enter_cwr {
                // the module called tcp_enter_cwr (CDG's delay backoff)
                self.cs.enter_cwr = false;
                self.enter_cwr();
            }
        }
        self.update_pacing_rate();
    }

    /// `tcp_xmit_recovery`.
    pub(in crate::tcp) fn xmit_recovery(&mut self) {
        let rexmit = std::mem::replace(&mut self.rexmit, Rexmit::None);
        if rexmit == Rexmit::None || self.state == TcpState::SynSent {
            return;
        }
        if rexmit == Rexmit::New {
            self.write_xmit(true, 0);
            if after(self.snd_nxt, self.high_seq) {
                return;
            }
            self.frto = false;
        }
        self.xmit_retransmit_queue();
    }

    /// `tcp_xmit_retransmit_queue`: retransmit LOST segments, lowest first,
    /// while cwnd allows (docs/semantics/tcp.md §6.5). Each pass sends one
    /// skb, as `tcp_retransmit_skb(sk, skb, segs)` does: the lost segment
    /// and the lost ones right after it, up to the free cwnd and the TSO
    /// goal (`segs = min(cwnd − in_flight, max_segs)`), so the pacing and
    /// TSQ checks come once per skb, not once per segment.
    pub(in crate::tcp) fn xmit_retransmit_queue(&mut self) {
        if self.sb.packets_out == 0 {
            return;
        }
        let mut idx = match self.sb.retransmit_hint {
            Some(h) if after(h, self.snd_una) || h == self.snd_una => self.sb.first_ending_after(h),
            _ => 0,
        };
        let mut hole = false;
        let mut rearm = false;
        let max_segs = self.tso_segs() as usize;
        while idx < self.sb.q.len() {
            if self.pacing_check() {
                break;
            }
            if !hole {
                self.sb.retransmit_hint = Some(self.sb.q[idx].seq);
            }
            let room = self.cwnd() as i64 - self.in_flight() as i64;
            if room <= 0 {
                break;
            }
            let sacked = self.sb.q[idx].sacked;
            if self.sb.retrans_out >= self.sb.lost_out {
                break;
            } else if sacked & LOST == 0 {
                if !hole && sacked & (SACKED_RETRANS | SACKED_ACKED) == 0 {
                    hole = true;
                }
                idx += 1;
                continue;
            }
            if sacked & (SACKED_ACKED | SACKED_RETRANS) != 0 {
                idx += 1;
                continue;
            }
            let segs = self.sb.lost_run(idx, (room as usize).min(max_segs));
            // TSQ for a retransmission: twice the usual limit (factor 1)
            let truesize = segs as u32 * self.mss_cache + SKB_TRUESIZE_OVERHEAD;
            if self.small_queue_check(truesize, 1) {
                break;
            }
            let sent = self.retransmit_seg(idx, segs);
            if sent == 0 {
                break;
            }
            if self.ca_state() != CaState::Loss {
                self.mib.fast_retrans += sent as u32;
            } else {
                self.mib.slow_start_retrans += sent as u32;
            }
            if self.in_cwnd_reduction() {
                self.prr.on_sent(sent as u32);
            }
            if idx == 0 && !matches!(self.timers.pending_xmit(), Some((TcpTimer::ReoTimeout, _))) {
                rearm = true;
            }
            idx += sent;
        }
        if rearm {
            let rto = self.icsk_rto;
            self.reset_xmit_timer(TcpTimer::Retransmit, rto, true);
        }
    }
}
