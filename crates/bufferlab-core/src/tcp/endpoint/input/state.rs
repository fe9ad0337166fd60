//! Connection set-up and tear-down on input, net/ipv4/tcp_input.c
//! (docs/semantics/tcp.md §3–4): `tcp_rcv_synsent_state_process`, `tcp_rcv_state_process`
//! with its RFC 793 sequence check (`tcp_validate_incoming`), the passive
//! open's completion, `tcp_fin`, and the buffer sizing done on establishment
//! (`tcp_init_transfer`, `tcp_init_buffer_space`, `tcp_sndbuf_expand`,
//! `tcp_check_space`).

use crate::packet::{tcp_flags, TcpHeader, ECN_CE, ECN_MASK};
use crate::tcp::accecn::{self, EcnMode};
use crate::tcp::config::{SKB_SHINFO, SKB_STRUCT, TCP_TIMEWAIT};
use crate::tcp::endpoint::{flag, TcpEndpoint, TcpState};
use crate::tcp::seq::after;
use crate::tcp::timers::TcpTimer;

impl TcpEndpoint {
    // =====================================================================
    // connection set-up and tear-down (tcp_rcv_state_process)
    // =====================================================================

    /// `tcp_rcv_synsent_state_process` for the active opener.
    pub(in crate::tcp) fn rcv_synsent(&mut self, hdr: &TcpHeader, payload_len: u32, ecn: u8) {
        let f = hdr.flags;
        if f & tcp_flags::ACK != 0 {
            // the ACK must cover exactly our SYN
            if !after(hdr.ack, self.iss) || after(hdr.ack, self.snd_nxt) {
                return; // (a RST would be sent in reply)
            }
            if f & tcp_flags::RST != 0 {
                self.done();
                return;
            }
            if f & tcp_flags::SYN == 0 {
                return;
            }
            // SYN-ACK: options, ECN answer (tcp_ecn_rcv_synack)
            self.parse_syn_options(hdr);
            if self.ts_ok {
                self.ts_recent = hdr.tsval;
            }
            // tcp_ecn_rcv_synack: what the SYN asked (send_syn's mode) and
            // the answer's ACE decide the mode
            self.ecn_mode = self.rcv_synack_ecn(hdr, ecn);
            self.ecn_ok = self.ecn_mode != EcnMode::Disabled;
            if !self.wscale_ok {
                self.rcv.rcv_wscale = 0;
                self.rcv.window_clamp = self.rcv.window_clamp.min(65535);
            }
            self.rcv.rcv_nxt = hdr.seq.wrapping_add(1);
            self.rcv.rcv_wup = self.rcv.rcv_nxt;
            self.rcv.copied_seq = self.rcv.rcv_nxt;
            self.rcv.space_seq = self.rcv.rcv_nxt;
            // RFC 1323: the SYN-ACK window is not scaled
            self.snd_wnd = hdr.window as u32;
            self.snd_wl1 = hdr.seq;
            self.max_window = self.snd_wnd;
            self.accecn_update_mss();
            self.sync_mss();
            self.rcv.initialize_rcv_mss(self.advmss, self.mss_cache);
            // tcp_try_undo_spurious_syn: the SYN-ACK echoes the first SYN
            if self.undo.is_armed()
                && self.retrans_stamp != 0
                && self.saw_tstamp
                && self.retrans_stamp == self.rcv_tsecr
            {
                self.undo.marker = 0;
            }
            // tcp_ack(sk, skb, FLAG_SLOWPATH): acknowledges the SYN, first RTT sample
            let _ = self.tcp_ack(hdr, 0, flag::SLOWPATH);
            self.finish_connect();
            // the handshake's ACK goes out at once (on AccECN reflecting the
            // SYN-ACK's ECN field), then any queued data
            self.accecn_reflect = self.ecn_mode == EcnMode::AccEcn;
            self.send_ack();
            self.push_pending_frames(false);
            let _ = payload_len;
        } else if f & tcp_flags::SYN != 0 && f & tcp_flags::RST == 0 {
            // simultaneous open: not modelled
        }
    }

    /// `tcp_ecn_rcv_synack` (include/net/tcp_ecn.h; RFC 9768 Table 2): the
    /// mode from what the SYN asked and the SYN-ACK's ACE. An AccECN
    /// request answered 000 or 111 gets no ECN, 001 or 101 classic ECN
    /// (none for a module that refuses it, Prague's
    /// `TCP_CONG_NO_FALLBACK_RFC3168`), anything else AccECN; a classic
    /// request keeps ECN on ECE without CWR.
    fn rcv_synack_ecn(&mut self, hdr: &TcpHeader, ecn: u8) -> EcnMode {
        let f = hdr.flags;
        match self.ecn_mode {
            EcnMode::Rfc3168 if f & tcp_flags::ECE != 0 && f & tcp_flags::CWR == 0 => {
                EcnMode::Rfc3168
            }
            EcnMode::Pending => match hdr.ace() {
                0b000 | 0b111 => EcnMode::Disabled,
                0b001 | 0b101 if self.cc.no_fallback_rfc3168() => EcnMode::Disabled,
                0b001 | 0b101 => EcnMode::Rfc3168,
                ace => {
                    let a = &mut self.accecn;
                    a.syn_ect_rcv = ecn & ECN_MASK;
                    if hdr.accecn.present() && a.saw_opt < accecn::OPT_COUNTER_SEEN {
                        a.saw_opt = accecn::option_init(&hdr.accecn);
                        if a.saw_opt == accecn::OPT_FAIL_SEEN {
                            a.fail_mode |= accecn::OPT_FAIL_RECV;
                        }
                        a.opt_demand = 2;
                    }
                    if ecn & ECN_MASK == ECN_CE && self.validate_syn_feedback(ace) {
                        let a = &mut self.accecn;
                        a.received_ce += 1;
                        a.received_ce_pending += 1;
                    }
                    EcnMode::AccEcn
                }
            },
            _ => EcnMode::Disabled,
        }
    }

    /// `tcp_accecn_validate_syn_feedback`: with `tcp_ecn_fallback`, a
    /// reflected ECN field our SYN (SYN-ACK) could not have turned into
    /// marks ACE as broken: we send Not-ECT from then on.
    fn validate_syn_feedback(&mut self, ace: u8) -> bool {
        if !self.cfg.ecn_fallback {
            return true;
        }
        let seen = accecn::extract_syn_ect(ace);
        if !accecn::ect_transition_valid(self.accecn.syn_ect_snt, seen) {
            self.accecn.fail_mode |= accecn::ACE_FAIL_RECV;
            return false;
        }
        true
    }

    /// `tcp_accecn_third_ack` (RFC 9768 Table 4): the listener checks the
    /// handshake's last ACK, which reflects the SYN-ACK's ECN field.
    fn accecn_third_ack(&mut self, hdr: &TcpHeader, payload_len: u32) {
        // tcp_create_openreq_child: the ACK's option tells whether the
        // client sends options (`tcp_accecn_saw_opt_fail_recv`)
        if hdr.accecn.present() {
            let saw = accecn::option_init(&hdr.accecn);
            self.accecn.saw_opt = saw;
            if saw == accecn::OPT_FAIL_SEEN {
                self.accecn.fail_mode |= accecn::OPT_FAIL_RECV;
            }
            self.accecn_update_mss();
        }
        match hdr.ace() {
            0 => self.accecn.fail_mode |= accecn::ACE_FAIL_RECV,
            0b111 | 0b101 | 0b001 => {}
            ace => {
                if payload_len == 0
                    && self.validate_syn_feedback(ace)
                    && accecn::extract_syn_ect(ace) == ECN_CE
                    && self.rate.delivered_ce == 0
                {
                    self.rate.delivered_ce += 1;
                }
            }
        }
    }

    /// `tcp_finish_connect` / the SYN-RECV → ESTABLISHED arm: both end in
    /// `tcp_init_transfer` (initial cwnd, CC init, buffer space).
    pub(super) fn finish_connect(&mut self) {
        self.set_state(TcpState::Established);
        self.rcv.lrcvtime = self.jiffies();
        self.init_transfer();
        self.lsndtime = self.jiffies();
        self.update_pacing_rate();
    }

    /// `tcp_init_transfer`.
    pub(super) fn init_transfer(&mut self) {
        // more than one SYN/SYN-ACK retransmission: cwnd 1 (RFC 6298 §5.7)
        if self.total_retrans > 1 && self.undo.is_armed() {
            self.set_cwnd(1);
        } else {
            let c = self.cfg.init_cwnd.max(1);
            self.set_cwnd(c);
        }
        self.snd_cwnd_stamp = self.jiffies();
        self.cc_sync();
        self.cc.init(&mut self.cs);
        if self.cfg.requests_pacing() {
            self.cs.pacing_status_needed = true;
        }
        self.init_buffer_space();
    }

    /// `tcp_init_buffer_space`.
    pub(super) fn init_buffer_space(&mut self) {
        if !self.sndbuf_locked {
            self.sndbuf_expand();
        }
        let now_us = self.now_us;
        self.rcv.init_buffer_space(now_us);
    }

    /// `tcp_sndbuf_expand` (docs/semantics/tcp.md §6.2).
    pub(in crate::tcp) fn sndbuf_expand(&mut self) {
        let per_mss = self.sndbuf_per_mss();
        let nr_segs = self
            .cfg
            .init_cwnd
            .max(10)
            .max(self.cwnd())
            .max(self.reordering + 1);
        let sndmem = (self.cc.sndbuf_expand() as u64) * nr_segs as u64 * per_mss as u64;
        if (self.sndbuf as u64) < sndmem {
            self.sndbuf = sndmem.min(self.cfg.wmem[2] as u64) as u32;
        }
    }

    /// `tcp_sndbuf_expand`'s `per_mss`: the memory one MSS of payload takes in
    /// the send buffer, with the kernel build's `MAX_TCP_HEADER` of headroom.
    pub(in crate::tcp) fn sndbuf_per_mss(&self) -> u32 {
        let head = self.mss_clamp.max(self.mss_cache) + self.cfg.max_tcp_header + SKB_SHINFO;
        head.next_power_of_two() + SKB_STRUCT
    }

    /// `tcp_check_space` → `tcp_new_space`: after sending, if the
    /// application was blocked on a full buffer and cwnd is not full.
    pub(in crate::tcp) fn check_space(&mut self) {
        if self.nospace && !self.sndbuf_locked && self.in_flight() < self.cwnd() {
            self.sndbuf_expand();
            self.snd_cwnd_stamp = self.jiffies();
        }
        if self.nospace && self.writable() {
            self.nospace = false;
        }
    }

    /// Segments of states after SYN-SENT (`tcp_rcv_state_process`, with
    /// `tcp_rcv_established`'s slow path for ESTABLISHED).
    pub(in crate::tcp) fn rcv_state_process(&mut self, hdr: &TcpHeader, payload_len: u32, ecn: u8) {
        let f = hdr.flags;
        let syn = f & tcp_flags::SYN != 0;
        let fin = f & tcp_flags::FIN != 0;
        let seq = hdr.seq;
        let end_seq = seq
            .wrapping_add(payload_len)
            .wrapping_add(syn as u32)
            .wrapping_add(fin as u32);

        if self.state == TcpState::TimeWait {
            // tcp_timewait_state_process: a retransmitted FIN means our ACK
            // was lost; ACK it again
            if fin {
                self.send_ack();
            }
            return;
        }
        if self.state == TcpState::SynReceived && syn && f & tcp_flags::ACK == 0 {
            // the peer retransmitted its SYN: answer with our SYN-ACK again
            if seq.wrapping_add(1) == self.rcv.rcv_nxt {
                self.send_synack();
            }
            return;
        }
        // tcp_validate_incoming: sequence check (RFC 793 p. 69)
        if !self.rcv.sequence_ok(seq, end_seq) {
            if f & tcp_flags::RST == 0 {
                self.send_dupack(seq, end_seq);
            } else if self.reset_check(seq) {
                self.done();
            }
            self.drop_skb(payload_len);
            return;
        }
        if f & tcp_flags::RST != 0 {
            // RFC 5961 §3.2 as Linux extends it: a reset at rcv_nxt, or just
            // below it once the peer's FIN is in (not modelled: the challenge
            // ACK answering any other reset in the window)
            if seq == self.rcv.rcv_nxt || self.reset_check(seq) {
                self.done();
            }
            return;
        }
        if syn {
            // a SYN in window: challenge ACK (RFC 5961 §4.2)
            self.send_ack();
            self.drop_skb(payload_len);
            return;
        }
        if f & tcp_flags::ACK == 0 {
            self.drop_skb(payload_len);
            return;
        }
        let flags = flag::SLOWPATH | flag::UPDATE_TS_RECENT;
        if self.state == TcpState::SynReceived {
            // the ACK of our SYN-ACK completes the passive open
            if !after(hdr.ack, self.snd_una) || after(hdr.ack, self.snd_nxt) {
                return;
            }
            self.establish_passive(hdr);
            if self.ecn_mode == EcnMode::AccEcn {
                self.accecn_third_ack(hdr, payload_len);
            }
        }
        let acceptable = self.tcp_ack(hdr, payload_len, flags).is_ok();
        if !acceptable {
            return;
        }
        match self.state {
            TcpState::FinWait1 if self.our_fin_acked() => {
                self.set_state(TcpState::FinWait2);
            }
            TcpState::Closing if self.our_fin_acked() => {
                self.enter_time_wait();
                return;
            }
            TcpState::LastAck if self.our_fin_acked() => {
                self.done();
                return;
            }
            _ => {}
        }
        self.rcv_rtt_measure_ts(seq, end_seq, payload_len);
        // step 7: data after the application closed the socket aborts the
        // connection (RFC 1122 §4.2.2.13; tcp_rcv_state_process)
        if matches!(self.state, TcpState::FinWait1 | TcpState::FinWait2)
            && self.rcv_shutdown
            && payload_len > 0
            && after(seq.wrapping_add(payload_len), self.rcv.rcv_nxt)
        {
            self.mib.abort_on_data += 1;
            self.send_reset_reply(hdr, payload_len);
            self.done();
            return;
        }
        // step 7: the segment text
        if matches!(
            self.state,
            TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2
        ) {
            self.data_queue(hdr, seq, payload_len, fin, ecn);
        }
        if self.state == TcpState::TimeWait {
            return;
        }
        self.data_snd_check();
        self.ack_snd_check();
    }

    /// SYN-RECEIVED → ESTABLISHED (`tcp_rcv_state_process`, TCP_SYN_RECV).
    pub(super) fn establish_passive(&mut self, hdr: &TcpHeader) {
        // tcp_create_openreq_child: SYN-ACK retransmissions count, and arm undo
        self.total_retrans = self.synack_retrans;
        if self.synack_retrans > 0 {
            self.undo.marker = self.snd_una;
            self.retrans_stamp = self.ts_now();
        }
        self.timers.clear_xmit();
        // tcp_synack_rtt_meas: SYN-ACK → ACK, unless the SYN-ACK was retransmitted
        let rtt = if self.synack_retrans == 0 && self.synack_sent_us != 0 {
            (self.now_us - self.synack_sent_us) as i64
        } else {
            -1
        };
        let mut rs = crate::tcp::rate::RateAcc::default();
        self.ack_update_rtt(flag::SYN_ACKED, rtt, -1, rtt, &mut rs);
        self.rate.delivered += 1; // SYN-ACK delivery is not tracked in tcp_ack
        self.finish_connect();
        self.snd_una = hdr.ack;
        self.snd_wnd = (hdr.window as u32) << self.snd_wscale;
        self.snd_wl1 = hdr.seq;
        if self.snd_wnd > self.max_window {
            self.max_window = self.snd_wnd;
        }
        self.sync_mss();
    }

    /// `tcp_reset_check`: a reset whose sequence number is the peer's FIN
    /// (its sender had not seen our ACK of it) is taken once the FIN is in.
    fn reset_check(&self, seq: u32) -> bool {
        seq == self.rcv.rcv_nxt.wrapping_sub(1)
            && matches!(
                self.state,
                TcpState::CloseWait | TcpState::LastAck | TcpState::Closing
            )
    }

    /// `tcp_done`: the connection is gone (a reset, a failed open, the end
    /// of TIME-WAIT or LAST-ACK); no timer of it runs again.
    pub(in crate::tcp) fn done(&mut self) {
        self.set_state(TcpState::Closed);
        self.timers.clear_all();
    }

    pub(super) fn our_fin_acked(&self) -> bool {
        self.fin_queued && self.snd_una == self.write_seq
    }

    pub(in crate::tcp) fn enter_time_wait(&mut self) {
        self.set_state(TcpState::TimeWait);
        self.timers.clear_all();
        self.timers.set(TcpTimer::TimeWait, self.now + TCP_TIMEWAIT);
    }

    /// The peer's FIN was consumed in sequence (`tcp_fin`).
    pub(in crate::tcp) fn on_fin(&mut self) {
        self.rcv.schedule_ack();
        self.rcv.fin_received = true;
        match self.state {
            TcpState::SynReceived | TcpState::Established => {
                self.set_state(TcpState::CloseWait);
                self.rcv.enter_pingpong();
            }
            TcpState::FinWait1 => {
                // simultaneous close
                self.send_ack();
                self.set_state(TcpState::Closing);
            }
            TcpState::FinWait2 => {
                self.send_ack();
                self.enter_time_wait();
            }
            _ => {}
        }
    }
}
