//! Size: `tcp_ack` with its SACK walk and `tcp_clean_rtx_queue`, as in
//! tcp_input.c: one pass over the retransmission queue per ACK whose steps share its state.
//!
//! The ACK path of net/ipv4/tcp_input.c (docs/semantics/tcp.md §8): `tcp_ack`, the SACK
//! walk (`tcp_sacktag_write_queue`/`tcp_sacktag_one`), `tcp_clean_rtx_queue`
//! and the RTT samples (`tcp_ack_update_rtt`). The SACK walk skips ranges the
//! previous ACK already tagged (Linux's `recv_sack_cache`), so per-ACK work is
//! proportional to what changed, not to the window.

use crate::packet::{tcp_flags, TcpHeader};
use crate::tcp::accecn::{self, EcnMode};
use crate::tcp::cc::{AckSample, CaState};
use crate::tcp::config::TCP_MAX_REORDERING;
use crate::tcp::endpoint::{flag, Rexmit, TcpEndpoint};
use crate::tcp::rate::RateAcc;
use crate::tcp::recovery::sack::{self, SackTagState, SackWindow};
use crate::tcp::recovery::{Seg, LOST, RETRANS, SACKED_ACKED, SACKED_RETRANS};
use crate::tcp::rtt::jiffies_to_usecs;
use crate::tcp::seq::{after, before};
use crate::tcp::timers::TcpTimer;

impl TcpEndpoint {
    // =====================================================================
    // tcp_ack (docs/semantics/tcp.md §8)
    // =====================================================================

    /// `tcp_ack`. `Err` = the ACK is unacceptable (discard the segment).
    pub(in crate::tcp) fn tcp_ack(
        &mut self,
        hdr: &TcpHeader,
        payload_len: u32,
        mut fl: u32,
    ) -> Result<u32, ()> {
        let prior_snd_una = self.snd_una;
        let is_sack_reneg = self.is_sack_reneg;
        let ack_seq = hdr.seq;
        let ack = hdr.ack;
        let prior_packets = self.sb.packets_out;
        let delivered0 = self.rate.delivered;
        let lost0 = self.lost;
        self.rexmit = Rexmit::None;
        let mut rs = RateAcc::default();
        let mut st = SackTagState::default();
        let mut num_dupack = 0u32;
        let has_sack = hdr.sack_len > 0 && self.sack_ok;

        if before(ack, prior_snd_una) {
            // RFC 5961 5.2: ignore ACKs for data never sent
            let max_window = (self.max_window as u64).min(self.bytes_acked) as u32;
            if before(ack, prior_snd_una.wrapping_sub(max_window)) {
                return Err(());
            }
            // old_ack: SACK information may still be fresh
            if has_sack {
                fl |= self.sacktag_write_queue(hdr, prior_snd_una, &mut st, &mut rs);
                self.fastretrans_alert(prior_snd_una, num_dupack, &mut fl);
                self.xmit_recovery();
            }
            return Ok(fl);
        }
        if after(ack, self.snd_nxt) {
            return Err(());
        }
        if after(ack, prior_snd_una) {
            fl |= flag::SND_UNA_ADVANCED;
            self.retransmits = 0;
        }
        let prior_fack = if self.sack_ok {
            self.highest_sack_seq()
        } else {
            self.snd_una
        };
        rs.prior_in_flight = self.in_flight();
        if fl & flag::UPDATE_TS_RECENT != 0 {
            self.replace_ts_recent(hdr.seq);
        }
        let data = payload_len > 0 || hdr.flags & (tcp_flags::SYN | tcp_flags::FIN) != 0;
        if data {
            fl |= flag::DATA;
        }
        fl |= self.ack_update_window(hdr, ack, ack_seq);
        if has_sack {
            fl |= self.sacktag_write_queue(hdr, prior_snd_una, &mut st, &mut rs);
        }
        // tcp_ecn_rcv_ecn_echo: ECE means congestion only in classic mode
        let rfc3168 = self.ecn_mode == EcnMode::Rfc3168;
        if hdr.flags & tcp_flags::ECE != 0 && hdr.flags & tcp_flags::SYN == 0 && rfc3168 {
            fl |= flag::ECE;
        }
        if st.sack_delivered > 0 {
            self.count_delivered(st.sack_delivered, fl & flag::ECE != 0);
        }
        // [lab2019] tcp_in_ack_event before the queue is cleaned
        let modern = self.cfg.profile == crate::tcp::cc::CcProfile::Modern;
        if !modern {
            self.in_ack_event(fl);
        }
        // tcp_ecn_accept_cwr: the sender has reduced; stop echoing
        if hdr.flags & tcp_flags::CWR != 0 && rfc3168 {
            self.rcv.demand_cwr = false;
            if payload_len > 0 {
                self.rcv.ack_pending |= crate::tcp::rcv::ACK_NOW;
            }
        }
        self.probes_out = 0;
        self.rcv_tstamp = self.jiffies();
        if prior_packets == 0 {
            // no_queue
            self.accecn_process(hdr, delivered0, prior_snd_una, &st, &mut fl);
            if modern {
                self.in_ack_event(fl);
            }
            if fl & flag::DSACKING_ACK != 0 {
                self.fastretrans_alert(prior_snd_una, num_dupack, &mut fl);
            }
            self.ack_probe();
            if self.tlp_high_seq != 0 {
                self.process_tlp_ack(ack, fl);
            }
            return Ok(fl);
        }
        fl |= self.clean_rtx_queue(
            prior_fack,
            prior_snd_una,
            &mut st,
            &mut rs,
            fl & flag::ECE != 0,
        );
        self.rack
            .update_reo_wnd(rs.prior_delivered, self.rate.delivered);
        self.accecn_process(hdr, delivered0, prior_snd_una, &st, &mut fl);
        // [modern] (6.14+) tcp_in_ack_event after tcp_clean_rtx_queue
        if modern {
            self.in_ack_event(fl);
        }
        if self.tlp_high_seq != 0 {
            self.process_tlp_ack(ack, fl);
        }
        if self.ack_is_dubious(fl) {
            if fl & (flag::SND_UNA_ADVANCED | flag::NOT_DUP | flag::DSACKING_ACK) == 0 {
                num_dupack = 1;
            }
            self.fastretrans_alert(prior_snd_una, num_dupack, &mut fl);
        }
        if fl & flag::SET_XMIT_TIMER != 0 {
            self.set_xmit_timer();
        }
        let delivered = self.rate.delivered.wrapping_sub(delivered0);
        let lost = self.lost.wrapping_sub(lost0);
        rs.is_ack_delayed = fl & flag::ACK_MAYBE_DELAYED != 0;
        let now_us = self.now_us;
        let min_rtt = self.min_rtt_us();
        self.rate
            .gen(&mut rs, delivered, lost, is_sack_reneg, now_us, min_rtt);
        self.cong_control(ack, delivered, fl, &rs);
        self.xmit_recovery();
        Ok(fl)
    }

    /// `tcp_accecn_process` (AccECN connections): the option's byte
    /// counters, then the CE packets this ACK reports through ACE; they are
    /// counted as `delivered_ce` and raise `FLAG_ECE` (CWR follows as for
    /// classic ECE). Reordered ACKs (no forward progress) and the SYN's
    /// ACK report nothing. Sets `ece_delta` for the rate sample (a classic
    /// ECE ACK reports all it delivered, as the L4S kernels fill
    /// `rs->ece_delta`).
    fn accecn_process(
        &mut self,
        hdr: &TcpHeader,
        delivered0: u32,
        prior_snd_una: u32,
        st: &SackTagState,
        fl: &mut u32,
    ) {
        let delivered = self.rate.delivered.wrapping_sub(delivered0);
        self.ece_delta = 0;
        if self.ecn_mode != EcnMode::AccEcn {
            if *fl & flag::ECE != 0 {
                self.ece_delta = delivered;
            }
            return;
        }
        if *fl & flag::FORWARD_PROGRESS == 0 {
            return;
        }
        let mss = self.mss_cache + self.accecn_opt_len;
        let bytes = self
            .snd_una
            .wrapping_sub(prior_snd_una)
            .wrapping_add(st.sack_delivered.wrapping_mul(self.mss_cache));
        let old_ceb = self.accecn.delivered_ce_bytes();
        let saw = self.accecn.saw_opt;
        let valid = self
            .accecn
            .process_option(&hdr.accecn, bytes, self.bytes_sent);
        if saw == accecn::OPT_NOT_SEEN && self.accecn.saw_opt != accecn::OPT_NOT_SEEN {
            self.accecn_update_mss();
        }
        if *fl & flag::SYN_ACKED != 0 {
            return;
        }
        if self.accecn.received_ce_pending >= accecn::ACE_MAX_DELTA {
            self.rcv.ack_pending |= crate::tcp::rcv::ACK_NOW;
        }
        let d_ceb = self.accecn.delivered_ce_bytes().wrapping_sub(old_ceb);
        let delta = accecn::ace_delta(
            hdr.ace(),
            self.rate.delivered_ce,
            delivered,
            valid,
            d_ceb,
            mss,
        );
        if delta > 0 {
            self.rate.delivered_ce = self.rate.delivered_ce.wrapping_add(delta);
            *fl |= flag::ECE;
            self.ece_delta = delta;
        }
    }

    /// `tcp_ack_is_dubious`.
    pub(super) fn ack_is_dubious(&self, fl: u32) -> bool {
        fl & flag::NOT_DUP == 0 || fl & flag::CA_ALERT != 0 || self.ca_state() != CaState::Open
    }

    /// `tcp_may_raise_cwnd`.
    pub(super) fn may_raise_cwnd(&self, fl: u32) -> bool {
        if self.reordering > 3 {
            return fl & flag::FORWARD_PROGRESS != 0;
        }
        fl & flag::DATA_ACKED != 0
    }

    /// `tcp_count_delivered`.
    /// Every call is inside `tcp_ack`, whose `tcp_newly_delivered` counts
    /// `TCPDelivered` (and `TCPDeliveredCE` on an ECE ACK): the same
    /// numbers (mib.rs reads them from here).
    pub(super) fn count_delivered(&mut self, n: u32, ece: bool) {
        self.rate.delivered = self.rate.delivered.wrapping_add(n);
        if ece {
            self.rate.delivered_ce = self.rate.delivered_ce.wrapping_add(n);
        }
    }

    /// `tcp_replace_ts_recent`.
    pub(super) fn replace_ts_recent(&mut self, seq: u32) {
        if self.saw_tstamp && !after(seq, self.rcv.rcv_wup) {
            self.ts_recent = self.rcv_tsval;
        }
    }

    /// `tcp_ack_update_window` + `tcp_snd_una_update`.
    pub(super) fn ack_update_window(&mut self, hdr: &TcpHeader, ack: u32, ack_seq: u32) -> u32 {
        let mut fl = 0;
        let mut nwin = hdr.window as u32;
        if hdr.flags & tcp_flags::SYN == 0 {
            nwin <<= self.snd_wscale;
        }
        // tcp_may_update_window
        if after(ack, self.snd_una)
            || after(ack_seq, self.snd_wl1)
            || (ack_seq == self.snd_wl1 && (nwin > self.snd_wnd || nwin == 0))
        {
            fl |= flag::WIN_UPDATE;
            self.snd_wl1 = ack_seq;
            if self.snd_wnd != nwin {
                self.snd_wnd = nwin;
                if self.unsent_seq() > 0 {
                    self.slow_start_after_idle_check();
                }
                if nwin > self.max_window {
                    self.max_window = nwin;
                    self.sync_mss();
                }
            }
        }
        let delta = ack.wrapping_sub(self.snd_una);
        self.bytes_acked += delta as u64;
        self.snd_una = ack;
        fl
    }

    /// `tcp_ack_probe`: an ACK with nothing outstanding may open the window.
    pub(super) fn ack_probe(&mut self) {
        if self.unsent_seq() == 0 {
            return;
        }
        let len = self.unsent_bytes().min(self.mss_cache).max(1);
        if !after(self.snd_nxt.wrapping_add(len), self.wnd_end()) {
            self.backoff = 0;
            if matches!(self.timers.pending_xmit(), Some((TcpTimer::Probe0, _))) {
                self.timers.clear_xmit();
            }
        } else {
            let base = self.icsk_rto.max(crate::tcp::rtt::TCP_RTO_MIN);
            let when =
                ((base as u64) << self.backoff).min(crate::tcp::rtt::TCP_RTO_MAX as u64) as u32;
            self.reset_xmit_timer(TcpTimer::Probe0, when, true);
        }
    }

    /// `tcp_highest_sack_seq`.
    pub(in crate::tcp) fn highest_sack_seq(&self) -> u32 {
        if self.sb.sacked_out == 0 {
            self.snd_una
        } else {
            self.sb.highest_sack_end
        }
    }

    // =====================================================================
    // SACK processing
    // =====================================================================

    /// `tcp_sacktag_write_queue`.
    pub(super) fn sacktag_write_queue(
        &mut self,
        hdr: &TcpHeader,
        prior_snd_una: u32,
        st: &mut SackTagState,
        rs: &mut RateAcc,
    ) -> u32 {
        st.flag = 0;
        st.reord = self.snd_nxt;
        if self.sb.sacked_out == 0 {
            self.sb.highest_sack_end = self.snd_una;
        }
        let n = (hdr.sack_len as usize).min(3);
        let blocks = &hdr.sack[..n];
        let found_dup = self.check_dsack(blocks, hdr.ack, prior_snd_una, st);
        if before(hdr.ack, prior_snd_una.wrapping_sub(self.max_window)) {
            return 0;
        }
        if self.sb.packets_out == 0 {
            return st.flag;
        }
        let window = SackWindow {
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            undo_marker: self.undo.marker,
            max_window: self.max_window,
        };
        let mut sp = [(0u32, 0u32, false); 3];
        let mut used = 0;
        for (i, &(s, e)) in blocks.iter().enumerate() {
            let dup = i == 0 && found_dup;
            if !window.block_valid(dup, s, e) {
                continue;
            }
            if !after(e, prior_snd_una) {
                continue; // very old
            }
            sp[used] = (s, e, dup);
            used += 1;
        }
        let sp = &mut sp[..used];
        sack::sort_blocks(sp);
        let use_cache = self.sb.sacked_out > 0;
        let cache = self.sb.sack_cache;
        let cache_len = if use_cache { self.sb.sack_cache_len } else { 0 };
        for &(s, e, dup) in sp.iter() {
            if dup {
                self.sacktag_range(s, e, true, st, rs);
                continue;
            }
            sack::for_each_uncached(s, e, &cache[..cache_len], |from, to| {
                self.sacktag_range(from, to, false, st, rs);
            });
        }
        // remember the used blocks for the next ACK
        let mut nc = [(0u32, 0u32); 4];
        let mut k = 0;
        for &(s, e, dup) in sp.iter() {
            if !dup {
                nc[k] = (s, e);
                k += 1;
            }
        }
        self.sb.sack_cache = nc;
        self.sb.sack_cache_len = k;
        if self.ca_state() != CaState::Loss || self.undo.is_armed() {
            self.check_sack_reordering(st.reord, false);
        }
        st.flag
    }

    /// `tcp_check_dsack`: is the first block a D-SACK (RFC 2883)?
    pub(super) fn check_dsack(
        &mut self,
        blocks: &[(u32, u32)],
        ack: u32,
        prior_snd_una: u32,
        st: &mut SackTagState,
    ) -> bool {
        if !sack::first_block_is_dsack(blocks, ack) {
            return false;
        }
        let (s0, e0) = blocks[0];
        if before(s0, ack) {
            self.mib.dsack_recv += 1;
        } else {
            self.mib.dsack_ofo_recv += 1;
        }
        let dup_segs = self.dsack_seen(s0, e0, st);
        if dup_segs == 0 {
            return false;
        }
        if !after(e0, prior_snd_una) {
            self.undo.on_dsack(e0, dup_segs);
        }
        true
    }

    /// `tcp_dsack_seen`.
    pub(super) fn dsack_seen(&mut self, start: u32, end: u32, st: &mut SackTagState) -> u32 {
        let dup_segs = sack::dsack_segments(start, end, self.max_window, self.mss_cache);
        if dup_segs == 0 {
            return 0;
        }
        // a one-segment D-SACK of the TLP probe (`tlp_high_seq`)
        if dup_segs == 1 && self.tlp_high_seq != 0 && self.tlp_high_seq == end {
            st.flag |= flag::DSACK_TLP;
        }
        self.dsack_dups = self.dsack_dups.wrapping_add(dup_segs);
        if self.dsack_dups > self.total_retrans {
            return 0;
        }
        if self.reord_seen > 0 && st.flag & flag::DSACK_TLP == 0 {
            self.rack.dsack_seen = true;
        }
        st.flag |= flag::DSACKING_ACK;
        st.sack_delivered += dup_segs;
        dup_segs
    }

    /// Tag every segment lying wholly inside `[start, end)` (`tcp_sacktag_walk`).
    pub(super) fn sacktag_range(
        &mut self,
        start: u32,
        end: u32,
        dup: bool,
        st: &mut SackTagState,
        rs: &mut RateAcc,
    ) {
        let mut idx = self.sb.first_ending_after(start);
        while idx < self.sb.q.len() {
            let seg = self.sb.q[idx];
            if !before(seg.seq, end) {
                break;
            }
            // tcp_match_skb_to_sack with pcount 1: only whole segments
            if !after(start, seg.seq) && !before(end, seg.end_seq) {
                self.sacktag_one(idx, dup, st);
                let seg = self.sb.q[idx];
                let sacked = seg.sacked & SACKED_ACKED != 0;
                if self.rate.on_delivered(
                    rs,
                    &seg.tx,
                    seg.xmit_us,
                    seg.end_seq,
                    seg.sacked & RETRANS != 0,
                    sacked,
                ) {
                    self.sb.q[idx].tx.delivered_mstamp = 0;
                }
                if sacked {
                    self.sb.q[idx].in_tsorted = false;
                }
                // tcp_advance_highest_sack
                if !before(seg.seq, self.highest_sack_seq()) {
                    self.sb.highest_sack_end = seg.end_seq;
                }
            }
            idx += 1;
        }
    }

    /// `tcp_sacktag_one` for the segment at `idx`.
    pub(super) fn sacktag_one(&mut self, idx: usize, dup: bool, st: &mut SackTagState) {
        let seg = self.sb.q[idx];
        let mut sacked = seg.sacked;
        let (start, end) = (seg.seq, seg.end_seq);
        // account D-SACK for a retransmitted segment
        if dup && sacked & RETRANS != 0 {
            self.undo.on_dsack(end, 1);
            if sacked & SACKED_ACKED != 0 && before(start, st.reord) {
                st.reord = start;
            }
        }
        if !after(end, self.snd_una) {
            return;
        }
        if sacked & SACKED_ACKED == 0 {
            self.rack_advance(sacked, end, seg.xmit_us);
            if sacked & SACKED_RETRANS != 0 {
                // a retransmission not marked lost is believed still in flight
                if sacked & LOST != 0 {
                    sacked &= !(LOST | SACKED_RETRANS);
                    self.sb.lost_out -= 1;
                    self.sb.retrans_out -= 1;
                }
            } else {
                if sacked & RETRANS == 0 {
                    // a never-retransmitted segment in a hole: reordering
                    if before(start, self.highest_sack_seq()) && before(start, st.reord) {
                        st.reord = start;
                    }
                    if !after(end, self.high_seq) {
                        st.flag |= flag::ORIG_SACK_ACKED;
                    }
                    if st.first_sackt == 0 {
                        st.first_sackt = seg.xmit_us;
                    }
                    st.last_sackt = seg.xmit_us;
                }
                if sacked & LOST != 0 {
                    sacked &= !LOST;
                    self.sb.lost_out -= 1;
                }
            }
            sacked |= SACKED_ACKED;
            st.flag |= flag::DATA_SACKED;
            self.sb.sacked_out += 1;
            st.sack_delivered += 1;
        }
        if dup && sacked & SACKED_RETRANS != 0 {
            sacked &= !SACKED_RETRANS;
            self.sb.retrans_out -= 1;
        }
        self.sb.q[idx].sacked = sacked;
    }

    /// `tcp_check_sack_reordering`.
    pub(super) fn check_sack_reordering(&mut self, low_seq: u32, _ts: bool) {
        let fack = self.highest_sack_seq();
        if !before(low_seq, fack) {
            return;
        }
        let metric = fack.wrapping_sub(low_seq);
        let mss = self.mss_cache;
        if metric > self.reordering * mss && mss > 0 {
            self.reordering = metric.div_ceil(mss).min(TCP_MAX_REORDERING);
        }
        self.reord_seen += 1;
    }

    /// `tcp_rack_advance`.
    pub(super) fn rack_advance(&mut self, sacked: u8, end_seq: u32, xmit_us: u64) {
        let min_rtt_us = self.min_rtt_us();
        self.rack.advance(
            sacked & RETRANS != 0,
            end_seq,
            xmit_us,
            self.now_us,
            min_rtt_us,
        );
    }

    // =====================================================================
    // cumulative ACK: tcp_clean_rtx_queue, RTT samples
    // =====================================================================

    /// `tcp_clean_rtx_queue`.
    pub(super) fn clean_rtx_queue(
        &mut self,
        prior_fack: u32,
        prior_snd_una: u32,
        st: &mut SackTagState,
        rs: &mut RateAcc,
        ece: bool,
    ) -> u32 {
        let prior_sacked = self.sb.sacked_out;
        let mut reord = self.snd_nxt;
        let mut first_ackt = 0u64;
        let mut last_ackt = 0u64;
        let mut pkts_acked = 0u32;
        let mut fl = 0u32;
        let mut seq_rtt: i64 = -1;
        let mut sack_rtt: i64 = -1;
        let mut ca_rtt: i64 = -1;
        while let Some(seg) = self.sb.q.front().copied() {
            if after(seg.end_seq, self.snd_una) {
                break; // not (wholly) acked; pcount 1 skbs are never split
            }
            let sacked = seg.sacked;
            if sacked & RETRANS != 0 {
                if sacked & SACKED_RETRANS != 0 {
                    self.sb.retrans_out -= 1;
                }
                fl |= flag::RETRANS_DATA_ACKED;
            } else if sacked & SACKED_ACKED == 0 {
                last_ackt = seg.xmit_us;
                if first_ackt == 0 {
                    first_ackt = last_ackt;
                }
                if before(seg.seq, reord) {
                    reord = seg.seq;
                }
                if !after(seg.end_seq, self.high_seq) {
                    fl |= flag::ORIG_SACK_ACKED;
                }
            }
            if sacked & SACKED_ACKED != 0 {
                self.sb.sacked_out -= 1;
            } else if self.sack_ok {
                self.count_delivered(1, ece);
                if !self.skb_spurious_retrans(&seg) {
                    self.rack_advance(sacked, seg.end_seq, seg.xmit_us);
                }
            }
            if sacked & LOST != 0 {
                self.sb.lost_out -= 1;
            }
            self.sb.packets_out -= 1;
            pkts_acked += 1;
            let _ = self.rate.on_delivered(
                rs,
                &seg.tx,
                seg.xmit_us,
                seg.end_seq,
                sacked & RETRANS != 0,
                false,
            );
            if seg.flags & tcp_flags::SYN == 0 {
                fl |= flag::DATA_ACKED;
            } else {
                fl |= flag::SYN_ACKED;
                self.retrans_stamp = 0;
            }
            self.sb.q.pop_front();
        }
        if let Some(h) = self.sb.retransmit_hint {
            if !after(h, self.snd_una) && self.sb.q.front().is_none_or(|f| f.seq != h) {
                self.sb.retransmit_hint = None;
            }
        }
        if pkts_acked > 0 {
            self.sb.prune_tsorted();
        }
        if let Some(head) = self.sb.q.front() {
            if head.sacked & SACKED_ACKED != 0 {
                fl |= flag::SACK_RENEGING;
            }
        }
        if first_ackt != 0 && fl & flag::RETRANS_DATA_ACKED == 0 {
            seq_rtt = self.now_us.saturating_sub(first_ackt) as i64;
            ca_rtt = self.now_us.saturating_sub(last_ackt) as i64;
            if pkts_acked == 1
                && prior_sacked == 0
                && self.snd_una.wrapping_sub(prior_snd_una) < self.mss_cache
                && rs.prior_delivered.wrapping_add(1) == self.rate.delivered
                && fl & (flag::CA_ALERT | flag::SYN_ACKED) == 0
            {
                fl |= flag::ACK_MAYBE_DELAYED;
            }
        }
        if st.first_sackt != 0 {
            sack_rtt = self.now_us.saturating_sub(st.first_sackt) as i64;
            ca_rtt = self.now_us.saturating_sub(st.last_sackt) as i64;
        }
        let rtt_update = self.ack_update_rtt(fl | st.flag, seq_rtt, sack_rtt, ca_rtt, rs);
        if fl & flag::ACKED != 0 {
            fl |= flag::SET_XMIT_TIMER;
            if !self.sack_ok {
                self.remove_reno_sacks(pkts_acked, ece);
                if fl & flag::RETRANS_DATA_ACKED != 0 {
                    fl &= !flag::ORIG_SACK_ACKED;
                }
            } else if before(reord, prior_fack) {
                self.check_sack_reordering(reord, false);
            }
        } else if let Some(head) = self.sb.q.front() {
            if rtt_update
                && sack_rtt >= 0
                && sack_rtt > self.now_us.saturating_sub(head.xmit_us) as i64
            {
                fl |= flag::SET_XMIT_TIMER;
            }
        }
        // ca_ops->pkts_acked
        let sample = AckSample {
            pkts_acked,
            rtt_us: rs.rtt_us,
            in_flight: self
                .mss_cache
                .wrapping_mul(self.rate.delivered.wrapping_sub(rs.prior_delivered)),
        };
        self.cc_sync();
        self.cc.pkts_acked(&mut self.cs, &sample);
        fl
    }

    /// `tcp_skb_spurious_retrans`: the echoed timestamp predates the
    /// retransmission, so the original was acked.
    pub(super) fn skb_spurious_retrans(&self, seg: &Seg) -> bool {
        seg.sacked & RETRANS != 0 && self.tsopt_ecr_before((seg.xmit_us / 1000) as u32)
    }

    /// `tcp_tsopt_ecr_before`.
    pub(super) fn tsopt_ecr_before(&self, when: u32) -> bool {
        self.saw_tstamp && self.rcv_tsecr != 0 && before(self.rcv_tsecr, when)
    }

    /// `tcp_rtt_tsopt_us`.
    pub(super) fn rtt_tsopt_us(&self, min_delta: u32) -> i64 {
        let mut delta = self.ts_now().wrapping_sub(self.rcv_tsecr);
        if delta < (i32::MAX as u32) / 1000 {
            if delta == 0 {
                delta = min_delta;
            }
            delta as i64 * 1000
        } else {
            -1
        }
    }

    /// `tcp_ack_update_rtt` (docs/semantics/tcp.md §5 "RTT sample per ACK").
    pub(in crate::tcp) fn ack_update_rtt(
        &mut self,
        fl: u32,
        mut seq_rtt: i64,
        sack_rtt: i64,
        mut ca_rtt: i64,
        rs: &mut RateAcc,
    ) -> bool {
        if seq_rtt < 0 {
            seq_rtt = sack_rtt;
        }
        if seq_rtt < 0 && self.saw_tstamp && self.rcv_tsecr != 0 && fl & flag::ACKED != 0 {
            seq_rtt = self.rtt_tsopt_us(1);
            ca_rtt = seq_rtt;
        }
        rs.rtt_us = ca_rtt;
        if seq_rtt < 0 {
            return false;
        }
        self.update_rtt_min(ca_rtt, fl);
        self.rtt.sample(seq_rtt, self.snd_una, self.snd_nxt);
        self.icsk_rto = self.rtt.rto_jiffies();
        self.backoff = 0;
        true
    }

    /// `tcp_update_rtt_min`.
    pub(super) fn update_rtt_min(&mut self, rtt_us: i64, fl: u32) {
        let rtt = rtt_us.max(0) as u32;
        if fl & flag::ACK_MAYBE_DELAYED != 0 && rtt > self.min_rtt_us() {
            return;
        }
        let wlen = 300 * crate::tcp::cc::HZ;
        let v = if rtt != 0 { rtt } else { jiffies_to_usecs(1) };
        let j = self.jiffies();
        self.rtt_min.running_min(wlen, j, v);
    }

    // =====================================================================
    // non-SACK (Reno) dupack accounting
    // =====================================================================

    /// `tcp_limit_reno_sacked`.
    pub(super) fn limit_reno_sacked(&mut self) -> bool {
        let holes = self.sb.lost_out.max(1).min(self.sb.packets_out);
        if self.sb.sacked_out + holes > self.sb.packets_out {
            self.sb.sacked_out = self.sb.packets_out - holes;
            return true;
        }
        false
    }

    /// `tcp_check_reno_reordering`.
    pub(super) fn check_reno_reordering(&mut self, addend: u32) {
        if !self.limit_reno_sacked() {
            return;
        }
        self.reordering = (self.sb.packets_out + addend).min(TCP_MAX_REORDERING);
        self.reord_seen += 1;
    }

    /// `tcp_add_reno_sack`.
    pub(super) fn add_reno_sack(&mut self, num_dupack: u32, ece: bool) {
        if num_dupack == 0 {
            return;
        }
        let prior = self.sb.sacked_out;
        self.sb.sacked_out += num_dupack;
        self.check_reno_reordering(0);
        let delivered = self.sb.sacked_out as i64 - prior as i64;
        if delivered > 0 {
            self.count_delivered(delivered as u32, ece);
        }
    }

    /// `tcp_remove_reno_sacks`.
    pub(super) fn remove_reno_sacks(&mut self, acked: u32, ece: bool) {
        if acked > 0 {
            let n = (acked as i64 - self.sb.sacked_out as i64).max(1) as u32;
            self.count_delivered(n, ece);
            if acked > self.sb.sacked_out {
                self.sb.sacked_out = 0;
            } else {
                self.sb.sacked_out -= acked - 1;
            }
        }
        self.check_reno_reordering(acked);
    }
}
