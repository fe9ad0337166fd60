//! Timer handlers, net/ipv4/tcp_timer.c (docs/semantics/tcp.md §5, §9.3): the
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

    /// `tcp_schedule_loss_probe` (docs/semantics/tcp.md §9.3).
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
    /// segment again (docs/semantics/tcp.md §9.3).
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
        self.mib.loss_probes += 1;
        self.tlp_high_seq = self.snd_nxt;
        // reset so that tcp_rearm_rto restarts the RTO from now
        self.timers.clear_xmit();
        self.rearm_rto();
    }

    /// `tcp_retransmit_timer` (docs/semantics/tcp.md §5 "RTO expiry").
    pub(super) fn retransmit_timer(&mut self) {
        match self.state {
            TcpState::SynReceived => {
                // the request sock's SYN-ACK timer (inet_rtx_syn_ack)
                if self.synack_retrans >= TCP_SYNACK_RETRIES {
                    self.done();
                    return;
                }
                self.synack_retrans += 1;
                // tcp_syn_ack_timeout, tcp_rtx_synack
                self.mib.timeouts += 1;
                self.mib.retrans_segs += 1;
                self.mib.syn_retrans += 1;
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
            self.mib.timeouts += 1;
            self.done();
            return;
        }
        if self.snd_wnd == 0 && self.state != TcpState::SynSent {
            // the receiver shrank its window to zero: retransmissions probe
            self.enter_loss();
            self.retransmit_seg(0, 1);
        } else {
            self.count_timeout();
            self.enter_loss();
            // tcp_update_rto_stats
            self.retransmits += 1;
            self.total_rto += 1;
            self.retransmit_seg(0, 1);
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

    /// `tcp_retransmit_timer`'s counters: every RTO, and on the first of an
    /// episode what it interrupted.
    fn count_timeout(&mut self) {
        let m = &mut self.mib;
        m.timeouts += 1;
        if self.retransmits != 0 {
            return;
        }
        let sack = self.sack_ok;
        match self.cs.ca_state {
            CaState::Recovery if sack => m.sack_recovery_fail += 1,
            CaState::Recovery => m.reno_recovery_fail += 1,
            CaState::Loss => m.loss_failures += 1,
            _ if self.cs.ca_state == CaState::Disorder || self.sb.sacked_out > 0 => {
                if sack {
                    m.sack_failures += 1
                } else {
                    m.reno_failures += 1
                }
            }
            _ => {}
        }
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
            self.mib.delayed_acks += 1;
        }
    }

    /// `tcp_compressed_ack_kick`: release the coalesced SACKs.
    pub(super) fn compressed_ack_timer(&mut self) {
        if self.rcv.compressed_ack > 0 {
            self.rcv.compressed_ack -= 1;
            self.send_ack();
        }
    }

    /// `tcp_send_delayed_ack`: arm the delayed-ACK timer (docs/semantics/tcp.md §7.3).
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

#[cfg(test)]
mod tests {
    use super::super::Segment;
    use crate::packet::tcp_flags;
    use crate::tcp::harness::*;
    use crate::time::{Rate, SimDuration, SimTime};

    /// Data segments covered by each new cumulative ACK of the server, with
    /// the ACK's send time.
    fn acks_of_b(p: &Pair) -> Vec<(SimTime, u32)> {
        let mut out = Vec::new();
        let mut acked = p.segs_from_b().next().unwrap().seg.hdr.ack;
        for s in p.segs_from_b().skip(1) {
            let a = s.seg.hdr.ack;
            if a != acked {
                out.push((s.t, a.wrapping_sub(acked).div_ceil(1448)));
                acked = a;
            }
        }
        out
    }

    #[test]
    fn delayed_ack_every_second_segment_after_quickacks() {
        // a fixed 128 KiB receive buffer (SO_RCVBUF 64 KiB): the window stops
        // growing early, so ACKs settle to one per two segments
        let mut b = cfg("reno");
        b.rcvbuf = Some(65536);
        let mut a = cfg("reno");
        a.wmem = [4096, 1 << 20, 4 << 20]; // the whole write fits the send buffer
        let mut p = Pair::new(a, b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        // 81 full segments in one write (an odd count: the last waits)
        p.to_write = 81 * 1448;
        p.run_until(ms(3000));
        assert_eq!(p.read, 81 * 1448);
        let acks = acks_of_b(&p);
        let per: Vec<u32> = acks.iter().map(|a| a.1).collect();
        // quickack mode first: rcv_wnd 28960 / (2 × 1448) = 10 credits, topped
        // up while grow_window opens rcv_ssthresh
        assert!(per[..10].iter().all(|&n| n == 1));
        // then every second full segment
        let tail = &per[per.len() - 20..per.len() - 1];
        assert!(tail.iter().all(|&n| n == 2), "{tail:?}");
        // the odd last segment waits for the delayed-ACK timer: ato = 40 ms
        // jiffy-quantised (10 ticks after the tick it arrived in), capped by
        // the RTT estimate once ato has grown (tcp_send_delayed_ack)
        let t_arr = p
            .arrivals
            .iter()
            .rfind(|s| s.from_a && s.seg.payload_len > 0)
            .unwrap()
            .t;
        let (t_ack, n) = *acks.last().unwrap();
        assert_eq!(n, 1);
        let tick = 4_000_000;
        let delay_ticks = t_ack.as_nanos() / tick - t_arr.as_nanos() / tick;
        assert!((10..=25).contains(&delay_ticks), "{delay_ticks}");
        assert_eq!(t_ack.as_nanos() % tick, 0);
        // and every ACK not sent on a segment's arrival was a timer ACK ≥ 36 ms later
        let arrivals: Vec<SimTime> = p
            .arrivals
            .iter()
            .filter(|s| s.from_a)
            .map(|s| s.t)
            .collect();
        let timer_acks: Vec<_> = acks.iter().filter(|a| !arrivals.contains(&a.0)).collect();
        assert!(!timer_acks.is_empty());
        for a in timer_acks {
            let prev = arrivals.iter().rfind(|&&t| t < a.0).unwrap();
            assert!(
                a.0 - *prev >= SimDuration::from_millis(36),
                "{} {}",
                a.0,
                prev
            );
        }
    }

    #[test]
    fn repeated_rtos_back_off_exponentially_and_reset_on_an_rtt_sample() {
        // a path that dies at t = 1 s for 4 s: the RTO retransmission is
        // lost again and again, each time after twice the previous RTO
        use std::cell::Cell;
        use std::rc::Rc;
        let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p.ab.limit = 100;
        p.to_write = u64::MAX;
        let clock = Rc::new(Cell::new(SimTime::ZERO));
        let c2 = clock.clone();
        p.ab.drop = Some(Box::new(move |_s: &Segment| {
            let t = c2.get();
            t >= ms(1000) && t < ms(5000)
        }));
        let mut rtos = Vec::new();
        let mut last_backoff = 0;
        while p.now < ms(8000) {
            clock.set(p.now);
            p.run_for(SimDuration::from_micros(500));
            let i = p.a.info();
            if i.backoff > last_backoff {
                rtos.push((p.now, i.backoff, i.rto));
            }
            last_backoff = i.backoff;
        }
        // backoff 1, 2, 3, 4 with the RTO doubling each time
        assert!(rtos.len() >= 4, "{rtos:?}");
        for w in rtos.windows(2) {
            assert_eq!(w[1].1, w[0].1 + 1);
            assert_eq!(w[1].2, 2 * w[0].2);
            // the next RTO fires one (doubled) RTO after the previous one
            let gap = (w[1].0 - w[0].0).as_nanos() as i64;
            assert!((gap - w[0].2 as i64 * 1000).abs() <= 4_500_000, "{rtos:?}");
        }
        // after the outage, an RTT sample resets the backoff
        let i = p.a.info();
        assert_eq!((i.backoff, i.ca_state), (0, 0));
        assert!(i.rto < 400_000);
    }

    #[test]
    fn a_lost_syn_is_retransmitted_after_one_second() {
        let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
        let mut first = true;
        p.ab.drop = Some(Box::new(move |s: &Segment| {
            let syn = s.hdr.flags & tcp_flags::SYN != 0;
            let d = syn && first;
            if syn {
                first = false;
            }
            d
        }));
        p.to_write = 10 * 1448;
        p.run_until(ms(3000));
        let syns: Vec<SimTime> = p
            .log
            .iter()
            .filter(|s| s.from_a && s.seg.hdr.flags & tcp_flags::SYN != 0)
            .map(|s| s.t)
            .collect();
        assert_eq!(syns, vec![ms(0), ms(1000)]);
        let i = p.a.info();
        // Linux counts the SYN retransmission; with one retransmission the
        // initial window stays 10 (cwnd 1 needs more than one)
        assert_eq!(i.total_retrans, 1);
        assert_eq!(p.read, 10 * 1448);
        // the RTT comes from the retransmitted SYN's timestamp echo
        assert_eq!(i.rtt, 20_000);
    }
}
