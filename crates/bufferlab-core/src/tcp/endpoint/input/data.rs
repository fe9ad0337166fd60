//! The receive path of net/ipv4/tcp_input.c (docs/semantics/tcp.md §7) on the socket:
//! `tcp_data_queue` and its out-of-order queue, `tcp_event_data_recv`,
//! receive-buffer autotuning (`tcp_rcv_space_adjust`), `__tcp_ack_snd_check`
//! and `tcp_cleanup_rbuf` (tcp.c), over the receiver state in tcp/rcv.rs.

use crate::packet::TcpHeader;
use crate::tcp::cc::{CaEvent, CcProfile, CcRcv};
use crate::tcp::endpoint::TcpEndpoint;
use crate::tcp::rcv::{
    ACK_NOW, ACK_PUSHED, ACK_PUSHED2, ACK_SCHED, ACK_TIMER, TCP_ATO_MIN, TCP_COMP_SACK_DELAY_NS,
    TCP_COMP_SACK_NR, TCP_FASTRETRANS_THRESH, TCP_MAX_QUICKACKS,
};
use crate::tcp::seq::{after, before};
use crate::tcp::timers::TcpTimer;

impl TcpEndpoint {
    /// `tcp_data_queue`: queue the segment text (docs/semantics/tcp.md §7).
    pub(in crate::tcp) fn data_queue(
        &mut self,
        hdr: &TcpHeader,
        seq: u32,
        len: u32,
        fin: bool,
        ecn: u8,
    ) {
        let end_seq = seq.wrapping_add(len).wrapping_add(fin as u32);
        if seq == end_seq {
            return;
        }
        self.rcv.dsack = false;
        let truesize = self.rcv.skb_truesize(len);
        let rcv_nxt = self.rcv.rcv_nxt;
        if seq == rcv_nxt || (before(seq, rcv_nxt) && after(end_seq, rcv_nxt)) {
            if seq != rcv_nxt {
                // partial: seq < rcv_nxt < end_seq
                self.dsack_set(seq, rcv_nxt);
            }
            if self.rcv.receive_window() == 0 && !(len == 0 && fin) {
                self.out_of_window();
                self.drop_skb(len);
                return;
            }
            // tcp_try_rmem_schedule: a full buffer drops all but the first skb
            if self.rcv.rmem_alloc + truesize > self.rcv.rcvbuf && !self.rcv.inq.is_empty() {
                self.rcv.ack_pending |= ACK_NOW | ACK_SCHED;
                self.drop_skb(len);
                return;
            }
            self.last_data_recv = self.jiffies();
            let new_bytes = end_seq.wrapping_sub(self.rcv.rcv_nxt);
            self.rcv.bytes_received += new_bytes as u64 - fin as u64;
            self.rcv.rcv_nxt = end_seq;
            self.rcv.rmem_alloc += truesize;
            self.rcv.inq.push_back((end_seq, truesize));
            if fin {
                self.rcv.fin_seq = Some(end_seq.wrapping_sub(1));
            }
            if len > 0 {
                self.event_data_recv(hdr, len, truesize, ecn);
            }
            if fin {
                self.on_fin();
            }
            if !self.rcv.ooo.is_empty() {
                self.ofo_queue();
                // RFC 5681 4.2: a filled hole is ACKed at once
                if self.rcv.ooo.is_empty() {
                    self.rcv.ack_pending |= ACK_NOW;
                }
            }
            if self.rcv.num_sacks > 0 {
                self.rcv.sack_remove();
            }
            return;
        }
        if !after(end_seq, rcv_nxt) {
            // a retransmission of data we have: D-SACK and ACK at once
            self.dsack_set(seq, end_seq);
            self.out_of_window();
            self.drop_skb(len);
            return;
        }
        if !before(seq, rcv_nxt.wrapping_add(self.rcv.receive_window())) {
            self.out_of_window();
            self.drop_skb(len);
            return;
        }
        self.data_queue_ofo(seq, end_seq, len, truesize, fin, hdr.flags, ecn);
    }

    /// `tcp_dsack_set`: report `[seq, end_seq)` as a duplicate, counted as
    /// old (below `rcv_nxt`) or out-of-order.
    fn dsack_set(&mut self, seq: u32, end_seq: u32) {
        if self.sack_ok {
            if before(seq, self.rcv.rcv_nxt) {
                self.mib.dsack_old_sent += 1;
            } else {
                self.mib.dsack_ofo_sent += 1;
            }
        }
        self.rcv.dsack_set(self.sack_ok, seq, end_seq);
    }

    /// Segments in a received skb of `len` bytes (`gso_segs`).
    fn skb_segs(&self, len: u32) -> u32 {
        let gso = self.rcv.skb_gso_size;
        if gso > 0 {
            len.div_ceil(gso).max(1)
        } else {
            1
        }
    }

    /// `tcp_drop_reason` → `sk_drops_add`: a dropped skb counts its segments.
    pub(in crate::tcp) fn drop_skb(&mut self, len: u32) {
        self.sk_drops = self.sk_drops.wrapping_add(self.skb_segs(len));
    }

    /// `out_of_window`: quickack mode and an ACK owed.
    fn out_of_window(&mut self) {
        self.rcv.enter_quickack_mode(TCP_MAX_QUICKACKS);
        self.rcv.schedule_ack();
    }

    /// `tcp_data_queue_ofo`.
    #[allow(clippy::too_many_arguments)]
    fn data_queue_ofo(
        &mut self,
        seq: u32,
        end_seq: u32,
        len: u32,
        truesize: u32,
        fin: bool,
        flags: u8,
        ecn: u8,
    ) {
        self.data_ecn_check(ecn);
        if self.rcv.rmem_alloc + truesize > self.rcv.rcvbuf {
            self.drop_skb(len);
            return; // TCPOFODrop
        }
        self.rcv
            .measure_rcv_mss(len, truesize, flags, self.tcp_header_len());
        self.rcv.schedule_ack();
        self.rcv_ooopack = self.rcv_ooopack.wrapping_add(self.skb_segs(len));
        self.mib.ofo_queue += 1;
        let sack_ok = self.sack_ok;
        let added = self.rcv.ofo_insert(sack_ok, seq, end_seq, truesize, fin);
        if !added {
            self.drop_skb(len); // all its bits were already held: TCPOFOMerge
        }
        if sack_ok {
            let flush = self.rcv.sack_new_ofo(seq, end_seq);
            if flush && self.rcv.compressed_ack > 0 {
                self.rcv.compressed_ack = 0;
                self.send_ack();
                self.rcv.schedule_ack();
            }
            if added {
                self.rcv.grow_window(len, truesize);
            }
        }
        if self.cfg.profile == CcProfile::Modern {
            // out-of-order data: room for it, the space unchanged
            self.rcvbuf_grow(self.rcv.space);
        }
    }

    /// `tcp_ofo_queue`: move runs that `rcv_nxt` reached into the receive queue.
    fn ofo_queue(&mut self) {
        let sack_ok = self.sack_ok;
        let dsack_high = self.rcv.rcv_nxt;
        while let Some(&r) = self.rcv.ooo.front() {
            if after(r.seq, self.rcv.rcv_nxt) {
                break;
            }
            if before(r.seq, dsack_high) {
                let d = if before(r.end, dsack_high) {
                    r.end
                } else {
                    dsack_high
                };
                self.rcv.dsack_extend(sack_ok, r.seq, d);
            }
            self.rcv.ooo.pop_front();
            if !after(r.end, self.rcv.rcv_nxt) {
                self.rcv.rmem_alloc -= r.truesize;
                self.drop_skb(r.end.wrapping_sub(r.seq)); // all of it arrived in order meanwhile
                continue;
            }
            let new_bytes = r.end.wrapping_sub(self.rcv.rcv_nxt);
            self.rcv.bytes_received += new_bytes as u64 - r.fin as u64;
            self.rcv.rcv_nxt = r.end;
            self.rcv.inq.push_back((r.end, r.truesize));
            if r.fin {
                self.rcv.fin_seq = Some(r.end.wrapping_sub(1));
                self.on_fin();
                break;
            }
        }
    }

    /// TCP header length of incoming data (`tp->tcp_header_len`).
    fn tcp_header_len(&self) -> u32 {
        20 + if self.ts_ok { 12 } else { 0 }
    }

    /// `tcp_event_data_recv`: delayed-ACK engine and window growth.
    fn event_data_recv(&mut self, hdr: &TcpHeader, len: u32, truesize: u32, ecn: u8) {
        self.rcv.schedule_ack();
        let hl = self.tcp_header_len();
        self.rcv.measure_rcv_mss(len, truesize, hdr.flags, hl);
        let now_us = self.now_us;
        self.rcv.rcv_rtt_measure(now_us);
        let now = self.jiffies();
        if self.rcv.ato == 0 {
            // the first data segment: quickack credits and ato 40 ms
            self.rcv.incr_quickack(TCP_MAX_QUICKACKS);
            self.rcv.ato = TCP_ATO_MIN;
        } else {
            let m = now.wrapping_sub(self.rcv.lrcvtime);
            if m <= TCP_ATO_MIN / 2 {
                self.rcv.ato = (self.rcv.ato >> 1) + TCP_ATO_MIN / 2;
            } else if m < self.rcv.ato {
                self.rcv.ato = ((self.rcv.ato >> 1) + m).min(self.icsk_rto);
            } else if m > self.icsk_rto {
                // the sender apparently failed to restart its window
                self.rcv.incr_quickack(TCP_MAX_QUICKACKS);
            }
        }
        self.rcv.lrcvtime = now;
        self.data_ecn_check(ecn);
        if len >= 128 {
            self.rcv.grow_window(len, truesize);
        }
    }

    /// `tcp_ecn_check_ce` (tcp_input.c): on an ECN connection, a CE mark
    /// demands CWR and an ACK soon; a module that needs ECN hears of every
    /// ECT or CE data segment (`CA_EVENT_ECN_IS_CE` / `_NO_CE`) and may
    /// take over ECE itself (DCTCP); a Not-ECT segment after ECT ones is
    /// probably a retransmission and is ACKed quickly.
    /// On an AccECN connection (`tcp_data_ecn_check` of 6.18) only the
    /// module's events remain: ACE reports the marks.
    fn data_ecn_check(&mut self, ecn: u8) {
        use crate::packet::{ECN_CE, ECN_MASK};
        if !self.ecn_ok {
            return;
        }
        let rfc3168 = self.ecn_mode == crate::tcp::accecn::EcnMode::Rfc3168;
        match ecn & ECN_MASK {
            0 => {
                if self.rcv.ecn_seen {
                    self.rcv.enter_quickack_mode(2);
                }
            }
            ECN_CE => {
                if self.cc.needs_ecn() {
                    self.ecn_ca_event(CaEvent::EcnIsCe);
                }
                if !self.rcv.demand_cwr && rfc3168 {
                    self.rcv.enter_quickack_mode(2);
                    self.rcv.demand_cwr = true;
                }
                if rfc3168 {
                    self.rcv.ecn_seen = true;
                }
            }
            _ => {
                if self.cc.needs_ecn() {
                    self.ecn_ca_event(CaEvent::EcnNoCe);
                }
                if rfc3168 {
                    self.rcv.ecn_seen = true;
                }
            }
        }
    }

    /// Raise an ECN event on the module with the receiver's state in
    /// `CcSock::rcv`, then carry out what it asked: the special ACK
    /// (`__tcp_send_ack(sk, prior_rcv_nxt)`), ECE on or off, `ICSK_ACK_NOW`.
    fn ecn_ca_event(&mut self, ev: CaEvent) {
        self.cc_sync();
        self.cs.rcv = CcRcv {
            rcv_nxt: self.rcv.rcv_nxt,
            delack_pending: self.rcv.ack_pending & ACK_TIMER != 0,
            demand_cwr: self.rcv.demand_cwr,
            ..CcRcv::default()
        };
        self.cc.cwnd_event(&mut self.cs, ev);
        let r = self.cs.rcv;
        if let Some((ack, ece)) = r.special_ack {
            self.send_special_ack(ack, ece, r.special_ack_clears_delack);
        }
        self.rcv.demand_cwr = r.demand_cwr;
        if r.ack_now {
            self.rcv.ack_pending |= ACK_NOW;
        }
    }

    /// An ACK of `ack` (not `rcv_nxt`) with ECE = `ece`: DCTCP's report of
    /// the data before a CE state change. [modern] (`__tcp_send_ack` with
    /// another `rcv_nxt`) leaves the delayed ACK and quick-ACK state alone;
    /// [lab2019] (`tcp_send_ack` with `rcv_nxt` swapped) is an ordinary ACK
    /// sent (`tcp_event_ack_sent`).
    fn send_special_ack(&mut self, ack: u32, ece: bool, ordinary: bool) {
        let rcv_nxt = self.rcv.rcv_nxt;
        let demand_cwr = self.rcv.demand_cwr;
        self.rcv.rcv_nxt = ack;
        self.rcv.demand_cwr = ece;
        let seq = self.acceptable_seq();
        let hdr = self.build_header(seq, crate::packet::tcp_flags::ACK);
        self.rcv.rcv_nxt = rcv_nxt;
        self.rcv.demand_cwr = demand_cwr;
        let ect = self.ect_always();
        if ordinary {
            self.emit(hdr, 0, ect);
        } else {
            // tcp_select_window moved rcv_wup to the real rcv_nxt
            self.rcv.rcv_wup = rcv_nxt;
            self.emit_no_ack_event(hdr, 0, ect);
        }
    }

    /// `tcp_rcvbuf_grow` (modern) with `rcvq_space.space` moving from its
    /// current value to `newval`: a window of twice the bytes copied in the
    /// last RTT, and, since DRS learns of a doubling a round late (6.18, "tcp:
    /// fix too slow tcp_rcvbuf_grow() action"), twice that again scaled by the
    /// round's growth — 2w + 4w·(new − old)/old — plus what waits out of order.
    fn rcvbuf_grow(&mut self, newval: u32) {
        let oldval = self.rcv.space as u64;
        self.rcv.space = newval;
        if !self.rcv.moderate_rcvbuf || self.rcv.rcvbuf_locked {
            return;
        }
        let newval = newval as u64;
        let mut rcvwin = newval << 1;
        if let Some(grow) = (rcvwin * newval.saturating_sub(oldval)).checked_div(oldval) {
            rcvwin += grow << 1;
        }
        if let Some(last) = self.rcv.ooo.back() {
            rcvwin += last.end.wrapping_sub(self.rcv.rcv_nxt) as u64;
        }
        let rcvbuf = self.rcv.space_from_win(rcvwin).min(self.rcv.rmem2 as u64) as u32;
        if rcvbuf > self.rcv.rcvbuf {
            self.rcv.rcvbuf = rcvbuf;
            self.rcv.window_clamp = self.rcv.win_from_space(rcvbuf as i64).max(0) as u32;
        }
    }

    /// `tcp_rcv_space_adjust` (DRS, docs/semantics/tcp.md §7.2): run when the application reads.
    pub(in crate::tcp) fn rcv_space_adjust(&mut self) {
        let now = self.now_us;
        let time = now.saturating_sub(self.rcv.space_time);
        if time < (self.rcv.rcv_rtt_us >> 3) as u64 || self.rcv.rcv_rtt_us == 0 {
            return;
        }
        let mut copied = self.rcv.copied_seq.wrapping_sub(self.rcv.space_seq) as i64;
        if self.cfg.profile == CcProfile::Modern {
            copied -= self.rcv.rcv_nxt.wrapping_sub(self.rcv.copied_seq) as i64;
        }
        if copied > self.rcv.space as i64 {
            let copied = copied as u64;
            match self.cfg.profile {
                CcProfile::Lab2019 => {
                    if self.rcv.moderate_rcvbuf && !self.rcv.rcvbuf_locked {
                        let advmss = self.rcv.advmss as u64;
                        let space = self.rcv.space.max(1) as u64;
                        let mut rcvwin = (copied << 1) + 16 * advmss;
                        let grow = rcvwin * (copied - space) / space;
                        rcvwin += grow << 1;
                        // SKB_TRUESIZE(advmss + MAX_TCP_HEADER), bumped until it
                        // holds an advmss of window
                        let mut rcvmem = (self.rcv.advmss + self.cfg.max_tcp_header).div_ceil(64)
                            * 64
                            + crate::tcp::config::SKB_STRUCT
                            + crate::tcp::config::SKB_SHINFO;
                        while self.rcv.win_from_space(rcvmem as i64) < self.rcv.advmss as i64 {
                            rcvmem += 128;
                        }
                        let rcvbuf =
                            ((rcvwin / advmss) * rcvmem as u64).min(self.rcv.rmem2 as u64) as u32;
                        if rcvbuf > self.rcv.rcvbuf {
                            self.rcv.rcvbuf = rcvbuf;
                            self.rcv.window_clamp =
                                self.rcv.win_from_space(rcvbuf as i64).max(0) as u32;
                        }
                    }
                    self.rcv.space = copied as u32;
                }
                CcProfile::Modern => self.rcvbuf_grow(copied as u32),
            }
        }
        self.rcv.space_seq = self.rcv.copied_seq;
        self.rcv.space_time = now;
    }

    /// `tcp_rcv_rtt_measure_ts`: receiver RTT from the echoed timestamp.
    pub(in crate::tcp) fn rcv_rtt_measure_ts(&mut self, seq: u32, end_seq: u32, _len: u32) {
        if !self.saw_tstamp || self.rcv_tsecr == self.rcv.rcv_rtt_last_tsecr {
            return;
        }
        self.rcv.rcv_rtt_last_tsecr = self.rcv_tsecr;
        if end_seq.wrapping_sub(seq) >= self.rcv.rcv_mss {
            let delta = self.ts_now().wrapping_sub(self.rcv_tsecr);
            if delta < (i32::MAX as u32) / 1000 {
                let delta = match self.cfg.profile {
                    CcProfile::Lab2019 => delta.max(1),
                    CcProfile::Modern => delta,
                };
                if delta > 0 {
                    self.rcv.rcv_rtt_update(delta * 1000, false);
                }
            }
        }
    }

    /// `tcp_send_dupack`: answer an unacceptable segment.
    pub(in crate::tcp) fn send_dupack(&mut self, seq: u32, end_seq: u32) {
        if end_seq != seq && before(seq, self.rcv.rcv_nxt) {
            self.rcv.enter_quickack_mode(TCP_MAX_QUICKACKS);
            let end = if after(end_seq, self.rcv.rcv_nxt) {
                self.rcv.rcv_nxt
            } else {
                end_seq
            };
            self.dsack_set(seq, end);
        }
        self.send_ack();
    }

    /// `tcp_ack_snd_check` / `__tcp_ack_snd_check(sk, 1)`.
    pub(in crate::tcp) fn ack_snd_check(&mut self) {
        if self.rcv.ack_pending & ACK_SCHED == 0 {
            return; // a data segment carried the ACK already
        }
        let more_than_one = self.rcv.rcv_nxt.wrapping_sub(self.rcv.rcv_wup) > self.rcv.rcv_mss;
        let now = (more_than_one
            && (self.rcv.rcv_nxt.wrapping_sub(self.rcv.copied_seq) < 1
                || self.select_window_raw() >= self.rcv.rcv_wnd))
            || self.rcv.in_quickack_mode()
            || self.rcv.ack_pending & ACK_NOW != 0;
        if now {
            self.send_ack();
            return;
        }
        if self.rcv.ooo.is_empty() {
            self.send_delayed_ack();
            return;
        }
        if !self.sack_ok || self.rcv.compressed_ack >= TCP_COMP_SACK_NR {
            self.send_ack();
            return;
        }
        // SACK compression: the first dupacks for a rcv_nxt go at once
        if self.rcv.compressed_ack_rcv_nxt != self.rcv.rcv_nxt {
            self.rcv.compressed_ack_rcv_nxt = self.rcv.rcv_nxt;
            self.rcv.dup_ack_counter = 0;
        }
        if self.rcv.dup_ack_counter < TCP_FASTRETRANS_THRESH {
            self.rcv.dup_ack_counter += 1;
            self.send_ack();
            return;
        }
        self.rcv.compressed_ack += 1;
        if self.timers.get(TcpTimer::CompressedAck).is_some() {
            return;
        }
        // 5 % of the RTT, at most 1 ms
        let mut rtt = self.rcv.rcv_rtt_us as u64;
        if self.rtt.srtt_us != 0 && (self.rtt.srtt_us as u64) < rtt {
            rtt = self.rtt.srtt_us as u64;
        }
        let delay = TCP_COMP_SACK_DELAY_NS.min(rtt * (1000 >> 3) / 20);
        self.timers.set(
            TcpTimer::CompressedAck,
            self.now + crate::time::SimDuration::from_nanos(delay),
        );
    }

    /// `tcp_cleanup_rbuf`: after a read, ACK if one is overdue or the
    /// window can grow a lot.
    pub(in crate::tcp) fn cleanup_rbuf(&mut self, copied: u32) {
        if matches!(
            self.state,
            crate::tcp::endpoint::TcpState::Closed | crate::tcp::endpoint::TcpState::SynSent
        ) {
            return;
        }
        let mut time_to_ack = false;
        if self.rcv.ack_pending & ACK_SCHED != 0 {
            let p = self.rcv.ack_pending;
            if self.rcv.rcv_nxt.wrapping_sub(self.rcv.rcv_wup) > self.rcv.rcv_mss
                || (copied > 0
                    && (p & ACK_PUSHED2 != 0 || (p & ACK_PUSHED != 0 && !self.rcv.in_pingpong()))
                    && self.rcv.rmem_alloc == 0)
            {
                time_to_ack = true;
            }
        }
        if copied > 0 && !time_to_ack && !self.rcv.fin_received {
            let now_win = self.rcv.receive_window();
            if 2 * now_win <= self.rcv.window_clamp {
                let new_win = self.select_window_raw();
                if new_win > 0 && new_win >= 2 * now_win {
                    time_to_ack = true;
                }
            }
        }
        if time_to_ack {
            self.send_ack();
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::cc::CcProfile;
    use crate::tcp::config::TcpConfig;
    use crate::tcp::harness::*;
    use crate::time::{Rate, SimDuration};

    #[test]
    fn every_spurious_retransmission_is_a_receiver_drop_in_skmem() {
        // The receiver's ACKs 5..=60 are lost: the sender's timers resend data the
        // receiver already holds, and tcp_data_queue drops each copy as old data
        // (sk_drops_add: `ss -m`'s d). Nothing else is lost, so every
        // retransmitted segment is one dropped segment.
        let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
        p.to_write = 300_000;
        let mut acks = 0;
        p.ba.drop = Some(Box::new(move |_| {
            acks += 1;
            (5..=60).contains(&acks)
        }));
        p.run_until(ms(3000));
        let retrans = p.a.info().total_retrans;
        let m = p.b().meminfo();
        assert!(retrans > 0, "the sender retransmitted");
        assert_eq!(m.drops, retrans);
        assert_eq!(p.a.meminfo().drops, 0, "the sender dropped nothing");
        assert_eq!(
            (m.rmem_alloc, m.wmem_queued),
            (0, 0),
            "all read, nothing to send"
        );
    }

    #[test]
    fn receive_autotuning_grows_rcv_space_and_the_buffer_up_to_rmem_max() {
        // lab2019 DRS: the buffer is sized in units of 3008 B (the truesize of
        // an advmss skb, bumped until half of it holds an advmss) per advmss of
        // window; the window clamp is half the buffer; tcp_rmem[2] caps it
        let mut c = cfg("cubic");
        c.rmem = [4096, 87380, 2 << 20];
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.ab.rate = Some(Rate::from_bps(100_000_000));
        p.ab.limit = 1000;
        p.to_write = u64::MAX;
        p.run_until(ms(35));
        let r0 = p.b().info();
        assert_eq!(
            (r0.rcv_space, r0.rcvbuf),
            (14_600, 87_380),
            "10 × advmss, tcp_rmem[1]"
        );
        let mut spaces = vec![r0.rcv_space];
        let mut bufs = vec![r0.rcvbuf];
        for k in 1..=60 {
            p.run_until(ms(35 + 25 * k));
            let b = p.b().info();
            if b.rcv_space != *spaces.last().unwrap() {
                spaces.push(b.rcv_space);
            }
            if b.rcvbuf != *bufs.last().unwrap() {
                bufs.push(b.rcvbuf);
            }
            let r = &p.b().rcv;
            assert_eq!(
                r.window_clamp,
                r.rcvbuf / 2,
                "clamp = win_from_space(rcvbuf)"
            );
        }
        assert!(spaces.windows(2).all(|w| w[1] > w[0]), "{spaces:?}");
        assert!(*spaces.last().unwrap() > 20 * 14_600, "{spaces:?}");
        // every grown buffer below the cap is a whole number of 3008-byte units
        for &b in &bufs[1..bufs.len() - 1] {
            assert_eq!(b % 3008, 0, "{bufs:?}");
        }
        assert_eq!(*bufs.last().unwrap(), 2 << 20, "capped at tcp_rmem[2]");
        // the offered window approaches the cap's half, 1 MiB, less what is
        // queued unread (wscale 6 for a 2 MiB tcp_rmem[2])
        assert_eq!(r0.rcv_wscale, 6);
        let w = (p.segs_from_b().last().unwrap().seg.hdr.window as u32) << 6;
        assert!(w <= 1 << 20 && w > (1 << 20) - 4 * 1448, "{w}");
    }

    #[test]
    fn modern_rcvbuf_grow_adds_the_rounds_growth_twice() {
        // 6.18 tcp_rcvbuf_grow, values from a kernel trace: the space grows
        // 31856 → 66608 with scaling_ratio 229. rcvwin = 2·66608 = 133216,
        // plus 2·(133216·34752 / 31856) = 2·145326 → 423868; rcvbuf =
        // 423868·256 / 229 = 473843, window_clamp = 473843·229 >> 8 = 423867.
        // The pre-6.18 rule (2·copied only) would have given 148922.
        let mut p = Pair::sym(
            TcpConfig::for_profile(CcProfile::Modern),
            SimDuration::from_millis(10),
        );
        let a = &mut p.a;
        a.rcv.set_scaling_ratio(229);
        a.rcv.rmem2 = 6 << 20;
        a.rcv.rcvbuf = 131_072;
        a.rcv.space = 31_856;
        a.rcvbuf_grow(66_608);
        assert_eq!(
            (a.rcv.space, a.rcv.rcvbuf, a.rcv.window_clamp),
            (66_608, 473_843, 423_867)
        );
        // out-of-order arrivals call it with the space unchanged: 2·space
        // (297 844 B of buffer) is below what it has, so nothing moves
        a.rcvbuf_grow(66_608);
        assert_eq!((a.rcv.space, a.rcv.rcvbuf), (66_608, 473_843));
        // tcp_rmem[2] caps it
        a.rcv.rmem2 = 1 << 20;
        a.rcvbuf_grow(200_000);
        assert_eq!(a.rcv.rcvbuf, 1 << 20);
    }

    #[test]
    fn a_read_that_finds_nothing_takes_no_drs_step() {
        // tcp_recvmsg_locked runs tcp_rcv_space_adjust after each copy, so a
        // receiver waiting on a recovery hole measures nothing until the hole
        // fills (a 6.18 trace: no call between the last in-order read and the
        // retransmission, 102 ms later). The state below is one where a step
        // is due: 300 kB read since the last measurement, 200 ms ago, against
        // a 96 ms RTT estimate and a 100 kB space.
        let mut p = Pair::sym(
            TcpConfig::for_profile(CcProfile::Modern),
            SimDuration::from_millis(10),
        );
        p.run_until(ms(50));
        let b = p.b.as_mut().expect("connected");
        b.rcv.rcv_rtt_us = 96_000 << 3;
        b.rcv.space = 100_000;
        b.rcv.space_seq = b.rcv.copied_seq.wrapping_sub(300_000);
        b.rcv.space_time = 0;
        let before = (b.rcv.space, b.rcv.space_seq, b.rcv.rcvbuf);
        assert_eq!(b.read(ms(200), u64::MAX), 0, "nothing in order to read");
        assert_eq!((b.rcv.space, b.rcv.space_seq, b.rcv.rcvbuf), before);
        // the same state measured: the step was due
        b.rcv_space_adjust();
        assert_eq!(b.rcv.space, 300_000);
        assert!(b.rcv.rcvbuf > before.2);
    }

    #[test]
    fn a_small_receive_buffer_caps_throughput_at_rwnd_per_rtt() {
        // iperf3 -w 16K at the receiver: sk_rcvbuf 32768 (locked), so the
        // window is not scaled (wscale 0, the clamp bounds the scale too);
        // clamp 16384 − advmss reserve = 14924, offered in whole rcv_mss:
        // 14480 B = ten segments per 100 ms RTT = 144 800 B/s
        let mut b = cfg("cubic");
        b.rcvbuf = Some(16_384);
        let mut p = Pair::new(cfg("cubic"), b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(100_000_000));
        p.to_write = u64::MAX;
        p.run_until(ms(2000));
        let r = &p.b().rcv;
        assert_eq!(
            (r.rcvbuf, r.window_clamp, r.rcv_ssthresh),
            (32_768, 14_924, 14_924)
        );
        assert_eq!(p.b().info().rcv_wscale, 0);
        assert_eq!(p.segs_from_b().last().unwrap().seg.hdr.window, 14_480);
        let read0 = p.read;
        p.run_until(ms(6000));
        let rate = (p.read - read0) as f64 / 4.0;
        assert!((rate - 144_800.0).abs() < 0.01 * 144_800.0, "{rate}");
        let a = p.a.info();
        assert_eq!(a.total_retrans, 0);
        assert_eq!(a.snd_wnd, 14_480);
    }

    #[test]
    fn a_receiver_that_stops_reading_closes_the_window_and_reopens_it() {
        // the server application does not read: its 87380-byte buffer fills,
        // the window falls to zero and the sender probes; once the
        // application drains the buffer a window update restarts the flow
        let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p.to_write = u64::MAX;
        p.b_reads = false;
        p.run_until(ms(3000));
        let a = p.a.info();
        assert_eq!(a.snd_wnd, 0, "zero window");
        assert_eq!(a.unacked, 0, "everything sent was acked");
        let queued = p.b().readable();
        assert!(queued > 30_000 && queued < 87_380, "{queued}");
        // zero-window probes went out (bare ACKs below snd_una) and were answered
        let probes = p
            .log
            .iter()
            .filter(|s| s.from_a && s.seg.payload_len == 0 && s.t > ms(500))
            .count();
        assert!(probes >= 2, "{probes}");
        assert_eq!(a.total_retrans, 0);
        // the application reads: an ACK announces the window, data flows again
        p.b_reads = true;
        let now = p.now;
        let n = p.b.as_mut().unwrap().read(now, u64::MAX);
        p.read += n;
        p.run_until(ms(5000));
        assert!(p.read > queued + 1_000_000, "{}", p.read);
    }
}
