//! Timer handlers, net/ipv4/tcp_timer.c (tcp.md §5, §9.3): the
//! retransmission timer with backoff, RACK-TLP's loss probe, the zero-window
//! probe, delayed and compressed ACKs, armed through the table in
//! tcp/timers.rs (`inet_csk_reset_xmit_timer`).

use super::{TcpEndpoint, TcpState};
use crate::tcp::cc::{usecs_to_jiffies, CaState, CcProfile, HZ};
use crate::tcp::config::{TCP_SYNACK_RETRIES, TCP_SYN_RETRIES};
use crate::tcp::rtt::{
    jiffies_to_usecs, TCP_RTO_MAX, TCP_TIMEOUT_INIT, TCP_TIMEOUT_MIN, TCP_TIMEOUT_MIN_US,
};
use crate::tcp::seq::{after, before};
use crate::tcp::timers::{jiffies_deadline, TcpTimer, NS_PER_JIFFY};

impl TcpEndpoint {
    // =====================================================================
    // timers (net/ipv4/tcp_timer.c)
    // =====================================================================

    /// `tcp_reset_xmit_timer`: arm an `icsk_pending` event `when` jiffies
    /// ahead (plus the pacing delay), capped at `TCP_RTO_MAX`.
    pub(in crate::tcp) fn reset_xmit_timer(
        &mut self,
        what: TcpTimer,
        mut when: u32,
        pace_delay: bool,
    ) {
        if pace_delay {
            let delay = self.wstamp_ns.saturating_sub(self.now.as_nanos());
            when = when.saturating_add((delay / NS_PER_JIFFY) as u32);
        }
        let when = when.min(TCP_RTO_MAX);
        let at = jiffies_deadline(self.now, when);
        self.timers.set_xmit(what, at);
    }

    /// `tcp_rto_delta_us`: how far in the future the RTO of the head is.
    pub(in crate::tcp) fn rto_delta_us(&self) -> i64 {
        match self.sb.q.front() {
            Some(h) => {
                let rto_at = h.xmit_us + jiffies_to_usecs(self.icsk_rto) as u64;
                rto_at as i64 - self.now_us as i64
            }
            None => jiffies_to_usecs(self.icsk_rto) as i64,
        }
    }

    /// `tcp_rearm_rto`.
    pub(in crate::tcp) fn rearm_rto(&mut self) {
        if self.sb.packets_out == 0 {
            self.timers.clear_xmit();
            return;
        }
        let mut rto = self.icsk_rto;
        if matches!(
            self.timers.pending_xmit(),
            Some((TcpTimer::ReoTimeout | TcpTimer::LossProbe, _))
        ) {
            let delta = self.rto_delta_us();
            rto = usecs_to_jiffies(delta.max(1).min(u32::MAX as i64) as u32);
        }
        self.reset_xmit_timer(TcpTimer::Retransmit, rto, true);
    }

    /// `tcp_set_xmit_timer`: a loss probe if allowed, else the RTO.
    pub(in crate::tcp) fn set_xmit_timer(&mut self) {
        if !self.schedule_loss_probe(true) {
            self.rearm_rto();
        }
    }

    /// `tcp_schedule_loss_probe` (tcp.md §9.3).
    pub(in crate::tcp) fn schedule_loss_probe(&mut self, advancing_rto: bool) -> bool {
        if self.sb.packets_out == 0
            || !self.sack_ok
            || !matches!(self.ca_state(), CaState::Open | CaState::Cwr)
            || !matches!(
                self.state,
                TcpState::Established
                    | TcpState::FinWait1
                    | TcpState::CloseWait
                    | TcpState::LastAck
                    | TcpState::Closing
                    | TcpState::FinWait2
            )
        {
            return false;
        }
        let mut timeout = if self.rtt.srtt_us != 0 {
            let one = self.sb.packets_out == 1;
            match self.cfg.profile {
                CcProfile::Lab2019 => {
                    usecs_to_jiffies(self.rtt.srtt_us >> 2)
                        + if one {
                            usecs_to_jiffies(self.rtt.rto_min_us)
                        } else {
                            TCP_TIMEOUT_MIN
                        }
                }
                CcProfile::Modern => {
                    let extra = if one {
                        self.rtt.rto_min_us
                    } else {
                        TCP_TIMEOUT_MIN_US
                    };
                    usecs_to_jiffies((self.rtt.srtt_us >> 2) + extra)
                }
            }
        } else {
            TCP_TIMEOUT_INIT
        };
        let rto_delta_us = if advancing_rto {
            jiffies_to_usecs(self.icsk_rto) as i64
        } else {
            self.rto_delta_us()
        };
        if rto_delta_us > 0 {
            timeout = timeout.min(usecs_to_jiffies(rto_delta_us.min(u32::MAX as i64) as u32));
        }
        self.reset_xmit_timer(TcpTimer::LossProbe, timeout, true);
        true
    }

    /// `tcp_send_loss_probe`: new data if the window allows, else the last
    /// segment again (tcp.md §9.3).
    pub(super) fn send_loss_probe(&mut self) {
        if self.tlp_high_seq != 0 || self.sb.packets_out == 0 {
            self.rearm_rto();
            return;
        }
        self.tlp_retrans = false;
        let mut probe_sent = false;
        let unsent = self.unsent_seq();
        if unsent > 0 {
            let len = self.unsent_bytes().min(self.mss_cache);
            let end = self.snd_nxt.wrapping_add(len.max(1));
            if !after(end, self.wnd_end()) {
                let pcount = self.sb.packets_out;
                self.write_xmit(true, 2);
                if self.sb.packets_out > pcount {
                    probe_sent = true;
                } else {
                    self.rearm_rto();
                    return;
                }
            }
        }
        if !probe_sent {
            let idx = self.sb.q.len() - 1;
            if !self.retransmit_raw(idx) {
                self.rearm_rto();
                return;
            }
            self.tlp_retrans = true;
        }
        self.tlp_high_seq = self.snd_nxt;
        // reset so that tcp_rearm_rto restarts the RTO from now
        self.timers.clear_xmit();
        self.rearm_rto();
    }

    /// `tcp_retransmit_timer` (tcp.md §5 "RTO expiry").
    pub(super) fn retransmit_timer(&mut self) {
        match self.state {
            TcpState::SynReceived => {
                // the request sock's SYN-ACK timer (inet_rtx_syn_ack)
                if self.synack_retrans >= TCP_SYNACK_RETRIES {
                    self.set_state(TcpState::Closed);
                    self.timers.clear_all();
                    return;
                }
                self.synack_retrans += 1;
                self.send_synack();
                let when = (TCP_TIMEOUT_INIT << self.synack_retrans).min(TCP_RTO_MAX);
                self.timers
                    .set_xmit(TcpTimer::Retransmit, jiffies_deadline(self.now, when));
                return;
            }
            TcpState::Closed | TcpState::TimeWait => return,
            _ => {}
        }
        if self.sb.packets_out == 0 {
            return;
        }
        if self.state == TcpState::SynSent && self.retransmits >= TCP_SYN_RETRIES {
            self.set_state(TcpState::Closed);
            self.timers.clear_all();
            return;
        }
        if self.snd_wnd == 0 && self.state != TcpState::SynSent {
            // the receiver shrank its window to zero: retransmissions probe
            self.enter_loss();
            self.retransmit_seg(0);
        } else {
            self.enter_loss();
            // tcp_update_rto_stats
            self.retransmits += 1;
            self.total_rto += 1;
            self.retransmit_seg(0);
        }
        // out_reset_timer: exponential backoff (modern: SYNs start linear)
        let linear_syn = self.cfg.profile == CcProfile::Modern
            && self.state == TcpState::SynSent
            && self.total_rto <= 4;
        if !linear_syn {
            self.backoff += 1;
            self.icsk_rto = (self.icsk_rto << 1).min(TCP_RTO_MAX);
        }
        let rto = self.icsk_rto;
        self.reset_xmit_timer(TcpTimer::Retransmit, rto, false);
    }

    /// `tcp_probe_timer` → `tcp_send_probe0` (zero-window probing).
    pub(super) fn probe_timer(&mut self) {
        if self.sb.packets_out > 0 || self.unsent_seq() == 0 {
            self.probes_out = 0;
            return;
        }
        // tcp_write_wakeup: send what the window allows (even less than an
        // MSS), else a bare probe below snd_una
        let wnd_room = self.wnd_end().wrapping_sub(self.snd_nxt) as i32;
        if wnd_room > 0 {
            let data = self.unsent_bytes();
            let len = data.min(self.mss_cache).min(wnd_room as u32);
            let fin = self.fin_queued && len == data && (wnd_room as u32) > len;
            if len > 0 || fin {
                self.send_new_skb(len, fin);
            } else {
                self.xmit_probe_skb();
            }
        } else {
            self.xmit_probe_skb();
        }
        if self.sb.packets_out > 0 || self.unsent_seq() == 0 {
            self.probes_out = 0;
            self.backoff = 0;
            return;
        }
        self.probes_out += 1;
        if self.backoff < 15 {
            self.backoff += 1;
        }
        let when = ((self.probe0_base() as u64) << self.backoff).min(TCP_RTO_MAX as u64) as u32;
        self.reset_xmit_timer(TcpTimer::Probe0, when, true);
    }

    /// The pacing timer (`tcp_pace_kick` → `tcp_tsq_write`).
    pub(super) fn tsq_write(&mut self) {
        if !matches!(
            self.state,
            TcpState::Established
                | TcpState::FinWait1
                | TcpState::Closing
                | TcpState::CloseWait
                | TcpState::LastAck
        ) {
            return;
        }
        if self.sb.lost_out > self.sb.retrans_out && self.cwnd() > self.in_flight() {
            self.xmit_retransmit_queue();
        }
        self.write_xmit(false, 0);
    }

    /// `tcp_delack_timer_handler`.
    pub(super) fn delack_timer(&mut self) {
        if matches!(self.state, TcpState::Closed | TcpState::Listen) {
            return;
        }
        if self.rcv.ack_pending & crate::tcp::rcv::ACK_TIMER == 0 {
            return;
        }
        self.rcv.ack_pending &= !crate::tcp::rcv::ACK_TIMER;
        if self.rcv.ack_pending & crate::tcp::rcv::ACK_SCHED != 0 {
            if !self.rcv.in_pingpong() {
                // delayed ACK missed: inflate ATO
                self.rcv.ato = (self.rcv.ato << 1).min(self.icsk_rto);
            } else {
                self.rcv.exit_pingpong();
                self.rcv.ato = crate::tcp::rcv::TCP_ATO_MIN;
            }
            self.send_ack();
        }
    }

    /// `tcp_compressed_ack_kick`: release the coalesced SACKs.
    pub(super) fn compressed_ack_timer(&mut self) {
        if self.rcv.compressed_ack > 0 {
            self.rcv.compressed_ack -= 1;
            self.send_ack();
        }
    }

    /// `tcp_send_delayed_ack`: arm the delayed-ACK timer (tcp.md §7.3).
    pub(in crate::tcp) fn send_delayed_ack(&mut self) {
        let mut ato = self.rcv.ato;
        if ato > crate::tcp::rcv::TCP_DELACK_MIN {
            let mut max_ato = HZ / 2;
            if self.rcv.in_pingpong() || self.rcv.ack_pending & crate::tcp::rcv::ACK_PUSHED != 0 {
                max_ato = crate::tcp::rcv::TCP_DELACK_MAX;
            }
            if self.rtt.srtt_us != 0 {
                let rtt =
                    usecs_to_jiffies(self.rtt.srtt_us >> 3).max(crate::tcp::rcv::TCP_DELACK_MIN);
                if rtt < max_ato {
                    max_ato = rtt;
                }
            }
            ato = ato.min(max_ato);
        }
        if self.cfg.profile == CcProfile::Modern {
            // tcp_delack_max: min(TCP_DELACK_MAX, rto_min − 1 jiffy)
            let rto_min_j = usecs_to_jiffies(self.rtt.rto_min_us).max(2);
            ato = ato.min(crate::tcp::rcv::TCP_DELACK_MAX.min(rto_min_j - 1));
        }
        let now_j = self.jiffies();
        let mut timeout = now_j.wrapping_add(ato);
        if self.rcv.ack_pending & crate::tcp::rcv::ACK_TIMER != 0 {
            let cur = self.rcv.delack_timeout;
            // the pending timer is about to fire: ACK now
            if !after(cur, now_j.wrapping_add(ato >> 2)) {
                self.send_ack();
                return;
            }
            if !before(timeout, cur) {
                timeout = cur;
            }
        }
        self.rcv.ack_pending |= crate::tcp::rcv::ACK_SCHED | crate::tcp::rcv::ACK_TIMER;
        self.rcv.delack_timeout = timeout;
        let when = timeout.wrapping_sub(now_j);
        self.timers
            .set(TcpTimer::DelayedAck, jiffies_deadline(self.now, when));
    }
}
