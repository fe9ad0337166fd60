//! ACK processing and loss recovery (tcp.md §8–9): the retransmission queue
//! with its SACK scoreboard, RACK-TLP, PRR, RTO → Loss, F-RTO and undo.
//!
//! Ports (not copies) of net/ipv4/tcp_input.c — `tcp_ack`,
//! `tcp_sacktag_write_queue`/`tcp_sacktag_one`, `tcp_clean_rtx_queue`,
//! `tcp_ack_update_rtt`, `tcp_fastretrans_alert`, `tcp_process_loss`,
//! `tcp_try_undo_*`, `tcp_enter_recovery`, `tcp_enter_loss`,
//! `tcp_cwnd_reduction`, `tcp_enter_cwr`, `tcp_process_tlp_ack`,
//! `tcp_cong_control` — of net/ipv4/tcp_recovery.c (RACK, NewReno marking)
//! and of `tcp_xmit_retransmit_queue` (tcp_output.c).
//!
//! Data structures. The retransmission queue is a `VecDeque` of small `Copy`
//! records, one per segment (GSO off), sorted by sequence; a segment is found
//! by binary search. Linux's `tsorted_sent_queue` (send-time order, for RACK)
//! is a log of `(send time, seq)` with lazy deletion: an entry is live while
//! its segment still exists, is unSACKed, not waiting for retransmission,
//! and was last sent at that time; dead entries are dropped from the front.
//! The SACK walk skips ranges the previous ACK already tagged (Linux's
//! `recv_sack_cache`), so a long SACK block costs only its new part: per-ACK
//! work is proportional to what changed, not to the window.
//!
//! Profiles: PRR's slow-start branch differs (lab2019: only after
//! retransmitted data is acked without a lost retransmission, else the
//! conservative `min(delta, newly_acked_sacked)`; modern: RFC 6937's
//! `SND.UNA advanced and nothing newly lost`, tcp.md §9.4).

use std::collections::VecDeque;

use super::cc::{usecs_to_jiffies, AckSample, CaEvent, CaState, CcProfile, TCP_INFINITE_SSTHRESH};
use super::endpoint::{flag, Rexmit, TcpEndpoint, TcpState, TCP_MAX_REORDERING};
use super::rate::{sent_after, RateAcc, TxInfo};
use super::rtt::{jiffies_to_usecs, TCP_TIMEOUT_MIN_US};
use super::seq::{after, before};
use super::timers::TcpTimer;
use crate::packet::{tcp_flags, TcpHeader};

/// `TCPCB_SACKED_ACKED`: the receiver holds this segment (SACKed).
pub const SACKED_ACKED: u8 = 0x01;
/// `TCPCB_SACKED_RETRANS`: a retransmission of it is in flight.
pub const SACKED_RETRANS: u8 = 0x02;
/// `TCPCB_LOST`: marked lost.
pub const LOST: u8 = 0x04;
/// `TCPCB_TAGBITS`.
pub const TAGBITS: u8 = SACKED_ACKED | SACKED_RETRANS | LOST;
/// `TCPCB_EVER_RETRANS`.
pub const EVER_RETRANS: u8 = 0x80;
/// `TCPCB_RETRANS`.
pub const RETRANS: u8 = SACKED_RETRANS | EVER_RETRANS;

/// `TCP_RACK_RECOVERY_THRESH`.
const TCP_RACK_RECOVERY_THRESH: u8 = 16;

/// One segment on the retransmission queue (an skb with `pcount == 1`).
#[derive(Clone, Copy, Debug)]
pub struct Seg {
    pub seq: u32,
    /// end of the segment, SYN/FIN included
    pub end_seq: u32,
    /// TCPCB_* scoreboard bits
    pub sacked: u8,
    /// `tcp_flags::SYN`/`FIN` carried by this segment
    pub flags: u8,
    /// on the send-time list (RACK candidates)
    pub in_tsorted: bool,
    /// last (re)transmission time, µs (`tcp_skb_timestamp_us`)
    pub xmit_us: u64,
    /// delivery-rate snapshot of the last transmission
    pub tx: TxInfo,
}

/// RACK state (`tp->rack`, tcp.md §9.2).
#[derive(Clone, Debug)]
pub struct Rack {
    /// send time of the most recently sent (s)acked segment, µs
    pub mstamp: u64,
    pub end_seq: u32,
    /// RTT of that segment, µs
    pub rtt_us: u32,
    pub advanced: bool,
    pub reo_wnd_steps: u8,
    pub reo_wnd_persist: u8,
    pub dsack_seen: bool,
    pub last_delivered: u32,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            mstamp: 0,
            end_seq: 0,
            rtt_us: 0,
            advanced: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
        }
    }
}

/// The retransmission queue and scoreboard counters.
#[derive(Clone, Debug)]
pub struct Scoreboard {
    pub q: VecDeque<Seg>,
    /// send-time log `(xmit_us, seq)` for RACK, lazily pruned
    tsorted: VecDeque<(u64, u32)>,
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// `retransmit_skb_hint`: where the retransmit walk resumes
    pub retransmit_hint: Option<u32>,
    /// `tcp_highest_sack_seq` while `sacked_out > 0`
    pub highest_sack_end: u32,
    /// `recv_sack_cache`: the previous ACK's SACK blocks
    pub sack_cache: [(u32, u32); 4],
    pub sack_cache_len: usize,
}

impl Default for Scoreboard {
    fn default() -> Self {
        Self::new()
    }
}

impl Scoreboard {
    pub fn new() -> Self {
        Scoreboard {
            q: VecDeque::with_capacity(64),
            tsorted: VecDeque::with_capacity(64),
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            retransmit_hint: None,
            highest_sack_end: 0,
            sack_cache: [(0, 0); 4],
            sack_cache_len: 0,
        }
    }

    /// `tcp_packets_in_flight`: packets_out − (sacked_out + lost_out) + retrans_out.
    #[inline]
    pub fn in_flight(&self) -> u32 {
        (self.packets_out + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }

    /// A newly sent segment at the tail.
    pub fn push(&mut self, seg: Seg) {
        self.tsorted.push_back((seg.xmit_us, seg.seq));
        self.q.push_back(seg);
        self.packets_out += 1;
    }

    #[inline]
    fn base(&self) -> u32 {
        self.q.front().map_or(0, |s| s.seq)
    }

    /// Index of the segment starting exactly at `seq`.
    pub fn index_of_seq(&self, seq: u32) -> Option<usize> {
        let first = self.q.front()?;
        let base = first.seq;
        let key = seq.wrapping_sub(base);
        if key > i32::MAX as u32 {
            return None; // before the window: already acknowledged
        }
        // Segments are nearly always one MSS long: try that position first.
        let mss = first.end_seq.wrapping_sub(base);
        if let Some(guess) = key.checked_div(mss).map(|g| g as usize) {
            if self.q.get(guess).is_some_and(|s| s.seq == seq) {
                return Some(guess);
            }
        }
        let i = self.q.partition_point(|s| s.seq.wrapping_sub(base) < key);
        (i < self.q.len() && self.q[i].seq == seq).then_some(i)
    }

    /// Index of the first segment ending after `seq` (`tcp_sacktag_bsearch`).
    pub fn first_ending_after(&self, seq: u32) -> usize {
        let base = self.base();
        let key = seq.wrapping_sub(base);
        self.q
            .partition_point(|s| s.end_seq.wrapping_sub(base) <= key)
    }

    /// A retransmission of `idx` left at `xmit_us`: re-stamp it and move it
    /// to the send-time tail.
    pub fn on_retransmit(&mut self, idx: usize, xmit_us: u64, tx: TxInfo) {
        let s = &mut self.q[idx];
        s.xmit_us = xmit_us;
        s.tx = tx;
        s.in_tsorted = true;
        s.sacked |= EVER_RETRANS;
        let seq = s.seq;
        self.tsorted.push_back((xmit_us, seq));
    }

    /// `tcp_verify_retransmit_hint`.
    fn verify_retransmit_hint(&mut self, seq: u32) {
        match self.retransmit_hint {
            None if self.retrans_out >= self.lost_out => self.retransmit_hint = Some(seq),
            Some(h) if before(seq, h) => self.retransmit_hint = Some(seq),
            _ => {}
        }
    }

    /// `tcp_mark_skb_lost`; returns true if `tp->lost` counts it.
    pub fn mark_lost(&mut self, idx: usize) -> bool {
        let sacked = self.q[idx].sacked;
        if sacked & SACKED_ACKED != 0 {
            return false;
        }
        let seq = self.q[idx].seq;
        self.verify_retransmit_hint(seq);
        let s = &mut self.q[idx];
        if sacked & LOST != 0 {
            if sacked & SACKED_RETRANS != 0 {
                // a retransmission lost again
                s.sacked &= !SACKED_RETRANS;
                s.in_tsorted = false;
                self.retrans_out -= 1;
                return true;
            }
            false
        } else {
            s.sacked |= LOST;
            if s.sacked & SACKED_RETRANS == 0 {
                s.in_tsorted = false;
            }
            self.lost_out += 1;
            true
        }
    }

    /// Drop dead entries from the front of the send-time log (after every
    /// cumulative ACK and RACK walk, so the log stays about a window long).
    pub fn prune_tsorted(&mut self) {
        while let Some(&(t, seq)) = self.tsorted.front() {
            if self.tsorted_live(t, seq).is_some() {
                break;
            }
            self.tsorted.pop_front();
        }
    }

    fn tsorted_live(&self, t: u64, seq: u32) -> Option<usize> {
        let i = self.index_of_seq(seq)?;
        let s = &self.q[i];
        (s.in_tsorted && s.xmit_us == t && s.sacked & SACKED_ACKED == 0).then_some(i)
    }

    /// `tcp_rack_detect_loss`: mark lost every segment sent before the RACK
    /// segment whose wait exceeded RTT + reo_wnd; returns (newly counted
    /// losses, the longest remaining wait in µs).
    pub fn rack_detect_loss(&mut self, rack: &Rack, reo_wnd: u32, now_us: u64) -> (u32, u32) {
        self.prune_tsorted();
        let mut timeout = 0u32;
        let mut lost = 0u32;
        let mut k = 0;
        while k < self.tsorted.len() {
            let (t, seq) = self.tsorted[k];
            k += 1;
            let Some(idx) = self.tsorted_live(t, seq) else {
                continue;
            };
            let s = self.q[idx];
            // skip ones marked lost but not yet retransmitted
            if s.sacked & LOST != 0 && s.sacked & SACKED_RETRANS == 0 {
                continue;
            }
            if !sent_after(rack.mstamp, s.xmit_us, rack.end_seq, s.end_seq) {
                break;
            }
            let waited = now_us.saturating_sub(s.xmit_us) as i64;
            let remaining = rack.rtt_us as i64 + reo_wnd as i64 - waited;
            if remaining <= 0 {
                if self.mark_lost(idx) {
                    lost += 1;
                }
                self.q[idx].in_tsorted = false;
            } else {
                timeout = timeout.max(remaining as u32);
            }
        }
        self.prune_tsorted();
        (lost, timeout)
    }
}

impl Scoreboard {
    /// The counters agree with the per-segment bits (`tcp_verify_left_out`
    /// and friends); for tests.
    #[cfg(test)]
    pub fn check(&self, sack_ok: bool) {
        let count = |m: u8| self.q.iter().filter(|s| s.sacked & m != 0).count() as u32;
        assert_eq!(self.packets_out as usize, self.q.len(), "packets_out");
        assert_eq!(self.lost_out, count(LOST), "lost_out");
        assert_eq!(self.retrans_out, count(SACKED_RETRANS), "retrans_out");
        if sack_ok {
            assert_eq!(self.sacked_out, count(SACKED_ACKED), "sacked_out");
        }
        assert!(
            self.sacked_out + self.lost_out <= self.packets_out,
            "left_out"
        );
        for w in self.q.iter().collect::<Vec<_>>().windows(2) {
            assert_eq!(w[0].end_seq, w[1].seq, "contiguous");
        }
    }
}

/// `struct tcp_sacktag_state`.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct SackTagState {
    pub first_sackt: u64,
    pub last_sackt: u64,
    pub reord: u32,
    pub sack_delivered: u32,
    pub flag: u32,
}

impl TcpEndpoint {
    // =====================================================================
    // tcp_ack (tcp.md §8)
    // =====================================================================

    /// `tcp_ack`. `Err` = the ACK is unacceptable (discard the segment).
    pub(super) fn tcp_ack(
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
        if hdr.flags & tcp_flags::ECE != 0 && hdr.flags & tcp_flags::SYN == 0 && self.ecn_ok {
            fl |= flag::ECE;
        }
        if st.sack_delivered > 0 {
            self.count_delivered(st.sack_delivered, fl & flag::ECE != 0);
        }
        // tcp_ecn_accept_cwr: the sender has reduced; stop echoing
        if hdr.flags & tcp_flags::CWR != 0 {
            self.rcv.demand_cwr = false;
            if payload_len > 0 {
                self.rcv.ack_pending |= super::rcv::ACK_NOW;
            }
        }
        self.probes_out = 0;
        self.rcv_tstamp = self.jiffies();
        if prior_packets == 0 {
            // no_queue
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
        self.rack_update_reo_wnd(&rs);
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

    /// `tcp_ack_is_dubious`.
    fn ack_is_dubious(&self, fl: u32) -> bool {
        fl & flag::NOT_DUP == 0 || fl & flag::CA_ALERT != 0 || self.ca_state() != CaState::Open
    }

    /// `tcp_may_raise_cwnd`.
    fn may_raise_cwnd(&self, fl: u32) -> bool {
        if self.reordering > 3 {
            return fl & flag::FORWARD_PROGRESS != 0;
        }
        fl & flag::DATA_ACKED != 0
    }

    /// `tcp_count_delivered`.
    fn count_delivered(&mut self, n: u32, ece: bool) {
        self.rate.delivered = self.rate.delivered.wrapping_add(n);
        if ece {
            self.rate.delivered_ce = self.rate.delivered_ce.wrapping_add(n);
        }
    }

    /// `tcp_replace_ts_recent`.
    fn replace_ts_recent(&mut self, seq: u32) {
        if self.saw_tstamp && !after(seq, self.rcv.rcv_wup) {
            self.ts_recent = self.rcv_tsval;
        }
    }

    /// `tcp_ack_update_window` + `tcp_snd_una_update`.
    fn ack_update_window(&mut self, hdr: &TcpHeader, ack: u32, ack_seq: u32) -> u32 {
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
    fn ack_probe(&mut self) {
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
            let base = self.icsk_rto.max(super::rtt::TCP_RTO_MIN);
            let when = ((base as u64) << self.backoff).min(super::rtt::TCP_RTO_MAX as u64) as u32;
            self.reset_xmit_timer(TcpTimer::Probe0, when, true);
        }
    }

    /// `tcp_highest_sack_seq`.
    pub(super) fn highest_sack_seq(&self) -> u32 {
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
    fn sacktag_write_queue(
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
        let mut sp = [(0u32, 0u32, false); 3];
        let mut used = 0;
        for (i, &(s, e)) in blocks.iter().enumerate() {
            let dup = i == 0 && found_dup;
            if !self.sack_block_valid(dup, s, e) {
                continue;
            }
            if !after(e, prior_snd_una) {
                continue; // very old
            }
            sp[used] = (s, e, dup);
            used += 1;
        }
        let sp = &mut sp[..used];
        sp.sort_by(|a, b| {
            if before(a.0, b.0) {
                std::cmp::Ordering::Less
            } else if a.0 == b.0 {
                std::cmp::Ordering::Equal
            } else {
                std::cmp::Ordering::Greater
            }
        });
        let use_cache = self.sb.sacked_out > 0;
        let cache = self.sb.sack_cache;
        let cache_len = if use_cache { self.sb.sack_cache_len } else { 0 };
        for &(s, e, dup) in sp.iter() {
            if dup {
                self.sacktag_range(s, e, true, st, rs);
                continue;
            }
            // walk only what the previous ACK's blocks did not already cover
            let mut cur = s;
            for &(cs, ce) in &cache[..cache_len] {
                if !after(ce, cur) || !before(cs, e) {
                    continue;
                }
                if after(cs, cur) {
                    self.sacktag_range(cur, cs, false, st, rs);
                }
                cur = ce;
                if !before(cur, e) {
                    break;
                }
            }
            if before(cur, e) {
                self.sacktag_range(cur, e, false, st, rs);
            }
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
        if self.ca_state() != CaState::Loss || self.undo_marker != 0 {
            self.check_sack_reordering(st.reord, false);
        }
        st.flag
    }

    /// `tcp_is_sackblock_valid`.
    fn sack_block_valid(&self, is_dsack: bool, start: u32, end: u32) -> bool {
        if after(end, self.snd_nxt) || !before(start, end) {
            return false;
        }
        if !before(start, self.snd_nxt) {
            return false;
        }
        if after(start, self.snd_una) {
            return true;
        }
        if !is_dsack || self.undo_marker == 0 {
            return false;
        }
        if after(end, self.snd_una) {
            return false;
        }
        if !before(start, self.undo_marker) {
            return true;
        }
        if !after(end, self.undo_marker) {
            return false;
        }
        !before(start, end.wrapping_sub(self.max_window))
    }

    /// `tcp_check_dsack`: is the first block a D-SACK (RFC 2883)?
    fn check_dsack(
        &mut self,
        blocks: &[(u32, u32)],
        ack: u32,
        prior_snd_una: u32,
        st: &mut SackTagState,
    ) -> bool {
        let Some(&(s0, e0)) = blocks.first() else {
            return false;
        };
        if before(s0, ack) {
            // below the cumulative ACK
        } else if blocks.len() > 1 {
            let (s1, e1) = blocks[1];
            if after(e0, e1) || before(s0, s1) {
                return false;
            }
        } else {
            return false;
        }
        let dup_segs = self.dsack_seen(s0, e0, st);
        if dup_segs == 0 {
            return false;
        }
        if self.undo_marker != 0
            && self.undo_retrans > 0
            && !after(e0, prior_snd_una)
            && after(e0, self.undo_marker)
        {
            self.undo_retrans = (self.undo_retrans - dup_segs as i32).max(0);
        }
        true
    }

    /// `tcp_dsack_seen`.
    fn dsack_seen(&mut self, start: u32, end: u32, st: &mut SackTagState) -> u32 {
        if !before(start, end) {
            return 0;
        }
        let seq_len = end.wrapping_sub(start);
        if seq_len > self.max_window {
            return 0;
        }
        let mut dup_segs = 1;
        if seq_len > self.mss_cache {
            dup_segs = seq_len.div_ceil(self.mss_cache);
        } else if self.tlp_high_seq != 0 && self.tlp_high_seq == end {
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
    fn sacktag_range(
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
    fn sacktag_one(&mut self, idx: usize, dup: bool, st: &mut SackTagState) {
        let seg = self.sb.q[idx];
        let mut sacked = seg.sacked;
        let (start, end) = (seg.seq, seg.end_seq);
        // account D-SACK for a retransmitted segment
        if dup && sacked & RETRANS != 0 {
            if self.undo_marker != 0 && self.undo_retrans > 0 && after(end, self.undo_marker) {
                self.undo_retrans = (self.undo_retrans - 1).max(0);
            }
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
    fn check_sack_reordering(&mut self, low_seq: u32, _ts: bool) {
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
    fn rack_advance(&mut self, sacked: u8, end_seq: u32, xmit_us: u64) {
        let rtt_us = self.now_us.saturating_sub(xmit_us).min(u32::MAX as u64) as u32;
        if rtt_us < self.min_rtt_us() && sacked & RETRANS != 0 {
            // ambiguous: the original might have been (s)acked
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if sent_after(xmit_us, self.rack.mstamp, end_seq, self.rack.end_seq) {
            self.rack.mstamp = xmit_us;
            self.rack.end_seq = end_seq;
        }
    }

    // =====================================================================
    // cumulative ACK: tcp_clean_rtx_queue, RTT samples
    // =====================================================================

    /// `tcp_clean_rtx_queue`.
    fn clean_rtx_queue(
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
            in_flight: rs.prior_in_flight,
        };
        self.cc_sync();
        self.cc.pkts_acked(&mut self.cs, &sample);
        fl
    }

    /// `tcp_skb_spurious_retrans`: the echoed timestamp predates the
    /// retransmission, so the original was acked.
    fn skb_spurious_retrans(&self, seg: &Seg) -> bool {
        seg.sacked & RETRANS != 0 && self.tsopt_ecr_before((seg.xmit_us / 1000) as u32)
    }

    /// `tcp_tsopt_ecr_before`.
    fn tsopt_ecr_before(&self, when: u32) -> bool {
        self.saw_tstamp && self.rcv_tsecr != 0 && before(self.rcv_tsecr, when)
    }

    /// `tcp_rtt_tsopt_us`.
    fn rtt_tsopt_us(&self, min_delta: u32) -> i64 {
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

    /// `tcp_ack_update_rtt` (tcp.md §5 "RTT sample per ACK").
    pub(super) fn ack_update_rtt(
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
    fn update_rtt_min(&mut self, rtt_us: i64, fl: u32) {
        let rtt = rtt_us.max(0) as u32;
        if fl & flag::ACK_MAYBE_DELAYED != 0 && rtt > self.min_rtt_us() {
            return;
        }
        let wlen = 300 * super::cc::HZ;
        let v = if rtt != 0 { rtt } else { jiffies_to_usecs(1) };
        let j = self.jiffies();
        self.rtt_min.running_min(wlen, j, v);
    }

    // =====================================================================
    // non-SACK (Reno) dupack accounting
    // =====================================================================

    /// `tcp_limit_reno_sacked`.
    fn limit_reno_sacked(&mut self) -> bool {
        let holes = self.sb.lost_out.max(1).min(self.sb.packets_out);
        if self.sb.sacked_out + holes > self.sb.packets_out {
            self.sb.sacked_out = self.sb.packets_out - holes;
            return true;
        }
        false
    }

    /// `tcp_check_reno_reordering`.
    fn check_reno_reordering(&mut self, addend: u32) {
        if !self.limit_reno_sacked() {
            return;
        }
        self.reordering = (self.sb.packets_out + addend).min(TCP_MAX_REORDERING);
        self.reord_seen += 1;
    }

    /// `tcp_add_reno_sack`.
    fn add_reno_sack(&mut self, num_dupack: u32, ece: bool) {
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
    fn remove_reno_sacks(&mut self, acked: u32, ece: bool) {
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

    // =====================================================================
    // the recovery state machine (tcp_fastretrans_alert, tcp.md §9.1)
    // =====================================================================

    /// `tcp_init_undo`.
    fn init_undo(&mut self) {
        self.undo_marker = self.snd_una;
        self.undo_retrans = self.sb.retrans_out as i32;
        if self.tlp_high_seq != 0 && self.tlp_retrans {
            self.undo_retrans += 1;
        }
        if self.undo_retrans == 0 {
            self.undo_retrans = -1;
        }
    }

    /// `tcp_any_retrans_done`.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0
            || self
                .sb
                .q
                .front()
                .is_some_and(|h| h.sacked & EVER_RETRANS != 0)
    }

    /// `tcp_packet_delayed`.
    fn packet_delayed(&self) -> bool {
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
    fn may_undo(&self) -> bool {
        self.undo_marker != 0 && (self.undo_retrans == 0 || self.packet_delayed())
    }

    /// `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            for s in self.sb.q.iter_mut() {
                s.sacked &= !LOST;
            }
            self.sb.lost_out = 0;
            self.sb.retransmit_hint = None;
        }
        if self.prior_ssthresh != 0 {
            self.cc_sync();
            let c = self.cc.undo_cwnd(&mut self.cs);
            self.set_cwnd(c);
            if self.prior_ssthresh > self.cs.snd_ssthresh {
                self.cs.snd_ssthresh = self.prior_ssthresh;
                self.ecn_queue_cwr = false; // tcp_ecn_withdraw_cwr
            }
        }
        self.snd_cwnd_stamp = self.jiffies();
        self.undo_marker = 0;
        self.rack.advanced = true; // force RACK to re-examine losses
    }

    /// `tcp_is_non_sack_preventing_reopen`.
    fn non_sack_preventing_reopen(&mut self) -> bool {
        if self.snd_una == self.high_seq && !self.sack_ok {
            if !self.any_retrans_done() {
                self.retrans_stamp = 0;
            }
            return true;
        }
        false
    }

    /// `tcp_try_undo_recovery`.
    fn try_undo_recovery(&mut self) -> bool {
        if self.may_undo() {
            self.undo_cwnd_reduction(false);
        } else if self.rack.reo_wnd_persist > 0 {
            self.rack.reo_wnd_persist -= 1;
        }
        if self.non_sack_preventing_reopen() {
            return true;
        }
        self.set_ca_state(CaState::Open);
        self.is_sack_reneg = false;
        false
    }

    /// `tcp_try_undo_dsack`.
    fn try_undo_dsack(&mut self) -> bool {
        if self.undo_marker != 0 && self.undo_retrans == 0 {
            self.rack.reo_wnd_persist =
                (self.rack.reo_wnd_persist + 1).min(TCP_RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss`.
    fn try_undo_loss(&mut self, frto_undo: bool) -> bool {
        if frto_undo || self.may_undo() {
            self.undo_cwnd_reduction(true);
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
    fn try_undo_partial(&mut self, prior_snd_una: u32) -> bool {
        if self.undo_marker != 0 && self.packet_delayed() {
            self.check_sack_reordering(prior_snd_una, true);
            if self.sb.retrans_out > 0 {
                return true;
            }
            if !self.any_retrans_done() {
                self.retrans_stamp = 0;
            }
            self.undo_cwnd_reduction(true);
            self.try_keep_open();
        }
        false
    }

    /// `tcp_init_cwnd_reduction`.
    fn init_cwnd_reduction(&mut self) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = 0;
        self.cs.snd_cwnd_cnt = 0;
        self.cs.prior_cwnd = self.cwnd();
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.cs.snd_ssthresh = self.cc_ssthresh();
        if self.ecn_ok {
            self.ecn_queue_cwr = true;
        }
    }

    /// `tcp_cwnd_reduction`: PRR (RFC 6937, tcp.md §9.4).
    fn cwnd_reduction(&mut self, newly_acked_sacked: i32, newly_lost: i32, fl: u32) {
        if newly_acked_sacked <= 0 || self.cs.prior_cwnd == 0 {
            return;
        }
        let in_flight = self.in_flight() as i64;
        let ssthresh = self.cs.snd_ssthresh as i64;
        let delta = ssthresh - in_flight;
        self.prr_delivered = self.prr_delivered.wrapping_add(newly_acked_sacked as u32);
        let prr_delivered = self.prr_delivered as i64;
        let prr_out = self.prr_out as i64;
        let nas = newly_acked_sacked as i64;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend =
                ssthresh as u64 * self.prr_delivered as u64 + self.cs.prior_cwnd as u64 - 1;
            (dividend / self.cs.prior_cwnd as u64) as i64 - prr_out
        } else {
            match self.cfg.profile {
                CcProfile::Modern => {
                    let mut c = (prr_delivered - prr_out).max(nas);
                    if fl & flag::SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                        c += 1;
                    }
                    delta.min(c)
                }
                CcProfile::Lab2019 => {
                    if fl & (flag::RETRANS_DATA_ACKED | flag::LOST_RETRANS)
                        == flag::RETRANS_DATA_ACKED
                    {
                        delta.min((prr_delivered - prr_out).max(nas) + 1)
                    } else {
                        delta.min(nas)
                    }
                }
            }
        };
        // force a fast retransmit upon entering fast recovery
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        let c = (in_flight + sndcnt).max(0) as u32;
        self.set_cwnd(c);
    }

    /// `tcp_end_cwnd_reduction`.
    fn end_cwnd_reduction(&mut self) {
        if self.cc.has_cong_control() {
            return;
        }
        if self.cs.snd_ssthresh < TCP_INFINITE_SSTHRESH
            && (self.ca_state() == CaState::Cwr || self.undo_marker != 0)
        {
            let s = self.cs.snd_ssthresh;
            self.set_cwnd(s);
            self.snd_cwnd_stamp = self.jiffies();
        }
        self.ca_event(CaEvent::CompleteCwr);
    }

    /// `tcp_enter_cwr`: ECN (or local) congestion, no undo.
    pub(super) fn enter_cwr(&mut self) {
        self.prior_ssthresh = 0;
        if self.ca_state() < CaState::Cwr {
            self.undo_marker = 0;
            self.init_cwnd_reduction();
            self.set_ca_state(CaState::Cwr);
        }
    }

    /// `tcp_try_keep_open`.
    fn try_keep_open(&mut self) {
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
    fn try_to_open(&mut self, fl: u32) {
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
    fn enter_recovery(&mut self, ece_ack: bool) {
        if !self.any_retrans_done() {
            self.retrans_stamp = 0; // tcp_retrans_stamp_cleanup
        }
        self.prior_ssthresh = 0;
        self.init_undo();
        if !self.in_cwnd_reduction() {
            if !ece_ack {
                self.prior_ssthresh = self.current_ssthresh();
            }
            self.init_cwnd_reduction();
        }
        self.set_ca_state(CaState::Recovery);
    }

    /// `tcp_timeout_mark_lost`.
    fn timeout_mark_lost(&mut self) {
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
                self.lost = self.lost.wrapping_add(1);
            }
        }
        self.sb.retransmit_hint = None;
    }

    /// `tcp_enter_loss` (tcp.md §9.5).
    pub(super) fn enter_loss(&mut self) {
        let new_recovery = self.ca_state() < CaState::Recovery;
        self.timeout_mark_lost();
        if self.ca_state() <= CaState::Disorder
            || !after(self.high_seq, self.snd_una)
            || (self.ca_state() == CaState::Loss && self.retransmits == 0)
        {
            self.prior_ssthresh = self.current_ssthresh();
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
        if self.ecn_ok {
            self.ecn_queue_cwr = true;
        }
        // F-RTO (tcp_frto = 2) unless this is a repeated timeout mid-recovery
        self.frto = new_recovery || self.retransmits > 0;
    }

    /// `tcp_process_loss`.
    fn process_loss(&mut self, fl: u32, num_dupack: u32) {
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
    fn identify_packet_loss(&mut self, fl: &mut u32) {
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
    fn time_to_recover(&self) -> bool {
        self.sb.lost_out != 0
    }

    /// `tcp_fastretrans_alert`.
    fn fastretrans_alert(&mut self, prior_snd_una: u32, num_dupack: u32, fl: &mut u32) {
        let ece_ack = *fl & flag::ECE != 0;
        if self.sb.packets_out == 0 && self.sb.sacked_out > 0 {
            self.sb.sacked_out = 0;
        }
        // A. ECE: no undo of this reduction
        if ece_ack {
            self.prior_ssthresh = 0;
        }
        // B. SACK reneging: give the receiver max(RTT/2, 10 ms)
        if *fl & flag::SACK_RENEGING != 0 && *fl & flag::SND_UNA_ADVANCED != 0 {
            let delay =
                usecs_to_jiffies(self.rtt.srtt_us >> 4).max(super::cc::msecs_to_jiffies(10));
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

    /// `tcp_process_tlp_ack` (tcp.md §9.3).
    fn process_tlp_ack(&mut self, ack: u32, fl: u32) {
        if before(ack, self.tlp_high_seq) {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = 0; // a probe of new data was acked
        } else if fl & flag::DSACK_TLP != 0 {
            self.tlp_high_seq = 0; // the original and the probe arrived
        } else if after(ack, self.tlp_high_seq) {
            // the probe repaired a loss: one-shot reduction
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
    fn rack_reo_wnd(&self) -> u32 {
        if self.reord_seen == 0 {
            if self.ca_state() >= CaState::Recovery {
                return 0;
            }
            if self.sb.sacked_out >= self.reordering {
                return 0;
            }
        }
        let min_rtt = self.min_rtt_us();
        let w = (min_rtt >> 2) as u64 * self.rack.reo_wnd_steps as u64;
        w.min((self.rtt.srtt_us >> 3) as u64) as u32
    }

    /// `tcp_rack_detect_loss`.
    fn rack_detect_loss(&mut self) -> u32 {
        let reo_wnd = self.rack_reo_wnd();
        let rack = self.rack.clone();
        let (lost, timeout) = self.sb.rack_detect_loss(&rack, reo_wnd, self.now_us);
        self.lost = self.lost.wrapping_add(lost);
        timeout
    }

    /// `tcp_rack_mark_lost`; true if a reordering timer was armed.
    fn rack_mark_lost(&mut self) -> bool {
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
    pub(super) fn rack_reo_timeout(&mut self) {
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

    /// `tcp_rack_update_reo_wnd`.
    fn rack_update_reo_wnd(&mut self, rs: &RateAcc) {
        if rs.prior_delivered == 0 {
            return;
        }
        if before(rs.prior_delivered, self.rack.last_delivered) {
            self.rack.dsack_seen = false;
        }
        if self.rack.dsack_seen {
            self.rack.reo_wnd_steps = self.rack.reo_wnd_steps.saturating_add(1);
            self.rack.dsack_seen = false;
            self.rack.last_delivered = self.rate.delivered;
            self.rack.reo_wnd_persist = TCP_RACK_RECOVERY_THRESH;
        } else if self.rack.reo_wnd_persist == 0 {
            self.rack.reo_wnd_steps = 1;
        }
    }

    /// `tcp_newreno_mark_lost` (non-SACK, RFC 6582).
    fn newreno_mark_lost(&mut self, snd_una_advanced: bool) {
        let state = self.ca_state();
        if (state < CaState::Recovery && self.sb.sacked_out >= self.reordering)
            || (state == CaState::Recovery && snd_una_advanced)
        {
            if self.sb.q.front().is_some_and(|h| h.sacked & LOST != 0) {
                return;
            }
            if self.sb.mark_lost(0) {
                self.lost = self.lost.wrapping_add(1);
            }
        }
    }

    // =====================================================================
    // congestion control step and retransmission (tcp.md §8 steps 11–12)
    // =====================================================================

    /// `tcp_cong_control`.
    fn cong_control(&mut self, ack: u32, acked_sacked: u32, fl: u32, rs: &RateAcc) {
        if self.cc.has_cong_control() {
            self.cc_sync();
            let r = rs.to_cc();
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
        }
        self.update_pacing_rate();
    }

    /// `tcp_xmit_recovery`.
    pub(super) fn xmit_recovery(&mut self) {
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
    /// while cwnd allows (tcp.md §6.5).
    pub(super) fn xmit_retransmit_queue(&mut self) {
        if self.sb.packets_out == 0 {
            return;
        }
        let mut idx = match self.sb.retransmit_hint {
            Some(h) if after(h, self.snd_una) || h == self.snd_una => self.sb.first_ending_after(h),
            _ => 0,
        };
        let mut hole = false;
        let mut rearm = false;
        // __tcp_retransmit_skb sends up to the free cwnd of one skb's lost
        // segments as one aggregate: neighbours retransmitted in a row
        // leave together
        let mut prev_retransmitted: Option<usize> = None;
        while idx < self.sb.q.len() {
            if self.pacing_check() {
                break;
            }
            if !hole {
                self.sb.retransmit_hint = Some(self.sb.q[idx].seq);
            }
            if self.cwnd() as i64 - self.in_flight() as i64 <= 0 {
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
            self.gso_continue = prev_retransmitted.is_some_and(|p| p + 1 == idx);
            let sent = self.retransmit_seg(idx);
            self.gso_continue = false;
            if !sent {
                break;
            }
            prev_retransmitted = Some(idx);
            if self.in_cwnd_reduction() {
                self.prr_out += 1;
            }
            if idx == 0 && !matches!(self.timers.pending_xmit(), Some((TcpTimer::ReoTimeout, _))) {
                rearm = true;
            }
            idx += 1;
        }
        if rearm {
            let rto = self.icsk_rto;
            self.reset_xmit_timer(TcpTimer::Retransmit, rto, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(seq: u32, xmit_us: u64) -> Seg {
        Seg {
            seq,
            end_seq: seq.wrapping_add(1000),
            sacked: 0,
            flags: 0,
            in_tsorted: true,
            xmit_us,
            tx: TxInfo::default(),
        }
    }

    #[test]
    fn scoreboard_finds_segments_by_sequence_across_the_wrap() {
        let mut sb = Scoreboard::new();
        let base = u32::MAX - 2500;
        for i in 0..6 {
            sb.push(seg(base.wrapping_add(i * 1000), i as u64));
        }
        assert_eq!(sb.index_of_seq(base.wrapping_add(3000)), Some(3));
        assert_eq!(sb.index_of_seq(base.wrapping_add(3001)), None);
        assert_eq!(sb.first_ending_after(base.wrapping_add(2500)), 2);
        assert_eq!(sb.first_ending_after(base.wrapping_add(3000)), 3);
        assert_eq!(sb.packets_out, 6);
    }

    #[test]
    fn rack_marks_only_segments_sent_before_the_delivered_one_and_older_than_rtt() {
        let mut sb = Scoreboard::new();
        for i in 0..5u32 {
            sb.push(seg(i * 1000, 1000 + i as u64 * 100));
        }
        // segment 3 (sent at 1300 µs) was SACKed at 21 300 µs: RACK rtt 20 000
        sb.q[3].sacked |= SACKED_ACKED;
        sb.sacked_out = 1;
        sb.q[3].in_tsorted = false;
        let rack = Rack {
            mstamp: 1300,
            end_seq: 4000,
            rtt_us: 20_000,
            advanced: true,
            ..Rack::default()
        };
        // at 21 300: segments 0..2 waited 20 300, 20 200, 20 100 ≥ 20 000 → lost
        let (lost, timeout) = sb.rack_detect_loss(&rack, 0, 21_300);
        assert_eq!((lost, timeout), (3, 0));
        assert_eq!(sb.lost_out, 3);
        assert_eq!(sb.q[4].sacked, 0, "sent after the RACK segment");
        // with a 1 ms reordering window nothing more is lost, segment 4 is not a candidate
        let (lost, timeout) = sb.rack_detect_loss(&rack, 1000, 21_300);
        assert_eq!((lost, timeout), (0, 0));
        assert_eq!(sb.in_flight(), 1);
    }

    #[test]
    fn rack_reports_the_remaining_wait_inside_the_reordering_window() {
        let mut sb = Scoreboard::new();
        for i in 0..3u32 {
            sb.push(seg(i * 1000, 1000 + i as u64 * 100));
        }
        sb.q[2].sacked |= SACKED_ACKED;
        sb.q[2].in_tsorted = false;
        let rack = Rack {
            mstamp: 1200,
            end_seq: 3000,
            rtt_us: 20_000,
            ..Rack::default()
        };
        // reo_wnd 5 ms: segments 0 and 1 waited 20 200 and 20 100 of 25 000;
        // the timer covers the longest remaining wait
        let (lost, timeout) = sb.rack_detect_loss(&rack, 5000, 21_200);
        assert_eq!(lost, 0);
        assert_eq!(timeout, 4900);
    }
}

#[cfg(test)]
mod endpoint_tests {
    use super::super::cc::CcProfile;
    use super::super::endpoint::{TcpConfig, TcpEndpoint};
    use super::super::harness::*;
    use crate::packet::tcp_flags;
    use crate::time::{Rate, SimDuration, SimTime};

    /// Client with IW20 (one whole window in flight at once), server with a
    /// large receive buffer, 10 Mb/s bottleneck (1.211 ms per full frame), 100 ms RTT.
    fn iw20_pair(cc: &str, profile: CcProfile) -> Pair {
        let mut a = TcpConfig {
            congestion: cc.to_string(),
            ..TcpConfig::for_profile(profile)
        };
        a.init_cwnd = 20;
        let mut b = a.clone();
        b.rmem = [4096, 1 << 20, 6 << 20];
        let mut p = Pair::new(a, b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p
    }

    /// Run the single-loss scenario and return, per SACK received, how many
    /// segments the client sent in response (SACK 1, 2, ...), up to the
    /// cumulative ACK that ends recovery; plus the (cwnd, ssthresh) after.
    fn prr_run(profile: CcProfile) -> (Vec<u32>, (u32, u32)) {
        let mut p = iw20_pair("reno", profile);
        let iss = p.a.iss();
        p.ab.drop = Some(drop_first_tx(iss, vec![0]));
        p.to_write = 60 * 1448;
        p.run_until(SimTime::ZERO + SimDuration::from_secs(3));
        assert_eq!(p.read, 60 * 1448, "everything delivered");
        assert_eq!(p.a.info().total_retrans, 1);
        let first_data = p.data_from_a().next().unwrap().t;
        let mut per_sack = Vec::new();
        for ack in p.arrivals.iter().filter(|s| !s.from_a && s.t > first_data) {
            let sent = p.data_from_a().filter(|s| s.t == ack.t).count() as u32;
            if ack.seg.hdr.ack == iss.wrapping_add(1) && ack.seg.hdr.sack_len > 0 {
                per_sack.push(sent);
            } else if !per_sack.is_empty() {
                break;
            }
        }
        let after = p
            .samples
            .iter()
            .find(|s| s.ca_state == 0 && s.t > first_data + SimDuration::from_millis(150))
            .unwrap();
        (per_sack, (after.cwnd, after.ssthresh))
    }

    /// tcp.md §9.4 applied to the scenario's scoreboard: entry on SACK 3
    /// with 22 packets out (20 + 2 limited-transmit), 3 SACKed, 1 lost;
    /// every later SACK delivers one packet; nothing newly lost, SND.UNA
    /// never advances, no retransmission acked.
    fn prr_model(profile: CcProfile, n_sacks: i64) -> Vec<u32> {
        let (ssthresh, prior_cwnd) = (10i64, 20i64);
        let (mut packets_out, mut sacked, lost, mut retrans) = (22i64, 2i64, 1i64, 0i64);
        let (mut prr_delivered, mut prr_out) = (0i64, 0i64);
        let mut out = Vec::new();
        for k in 3..=n_sacks {
            sacked += 1;
            let in_flight = packets_out - sacked - lost + retrans;
            prr_delivered += 1;
            let delta = ssthresh - in_flight;
            let mut sndcnt = if delta < 0 {
                (ssthresh * prr_delivered + prior_cwnd - 1) / prior_cwnd - prr_out
            } else {
                match profile {
                    // no retransmitted data acked: the conservative bound
                    CcProfile::Lab2019 => delta.min(1),
                    // RFC 6937 slow start toward ssthresh (no "+1": SND.UNA did not move)
                    CcProfile::Modern => delta.min((prr_delivered - prr_out).max(1)),
                }
            };
            sndcnt = sndcnt.max(if prr_out == 0 { 1 } else { 0 });
            if k == 3 {
                retrans += 1;
            } else {
                packets_out += sndcnt;
            }
            prr_out += sndcnt;
            out.push(sndcnt as u32);
        }
        out
    }

    #[test]
    fn prr_below_ssthresh_is_conservative_in_lab2019_and_slow_starts_in_modern() {
        // tcp_cwnd_reduction with in_flight 4 < ssthresh 10, prr_delivered
        // jumping to 6 while prr_out is 2, a SACK-only ACK of 1 packet:
        // lab2019 min(delta, newly_acked_sacked) = 1; modern
        // min(delta, max(prr_delivered − prr_out, 1)) = 4; with retransmitted
        // data acked (lab2019) or SND.UNA advanced (modern) one more
        use crate::rng::ComponentRng;
        use crate::tcp::endpoint::flag;
        for (profile, fl, want) in [
            (CcProfile::Lab2019, 0, 1),
            (CcProfile::Modern, 0, 4),
            (
                CcProfile::Lab2019,
                flag::RETRANS_DATA_ACKED | flag::SND_UNA_ADVANCED,
                5,
            ),
            (
                CcProfile::Modern,
                flag::RETRANS_DATA_ACKED | flag::SND_UNA_ADVANCED,
                5,
            ),
        ] {
            let c = TcpConfig::for_profile(profile);
            let mut ep =
                TcpEndpoint::connect(c, A_ADDR, B_ADDR, SimTime::ZERO, ComponentRng::new(1, "t"));
            ep.sb.packets_out = 8;
            ep.sb.sacked_out = 4; // in flight 4
            ep.cs.snd_ssthresh = 10;
            ep.cs.prior_cwnd = 20;
            ep.prr_delivered = 5;
            ep.prr_out = 2;
            ep.cwnd_reduction(1, 0, fl);
            assert_eq!(ep.cwnd(), 4 + want, "{profile:?} {fl:x}");
        }
    }

    #[test]
    fn sack_recovery_of_one_loss_sends_what_prr_allows() {
        // Reno, IW20 on a 10 Mb/s, 100 ms path, the first segment of the
        // window lost. SACKs come back one per segment; RACK declares the
        // loss on the third (reo_wnd 0 once sacked_out ≥ 3). Before that each
        // SACK frees one packet of the 20-packet cwnd: two new segments go
        // out. Recovery: prior_cwnd 20, ssthresh 10, in_flight 18 at entry;
        // PRR sends the retransmission on SACK 3, then one new segment per
        // two SACKs while in_flight > ssthresh, then the profile's bound.
        for profile in [CcProfile::Lab2019, CcProfile::Modern] {
            let (per_sack, after) = prr_run(profile);
            // 21 SACKs: segments 1–19 and the two limited-transmit ones
            assert_eq!(per_sack.len(), 21, "{profile:?}");
            assert_eq!(&per_sack[..2], &[1, 1], "{profile:?}: limited transmit");
            let expected = prr_model(profile, 21);
            assert_eq!(&per_sack[2..], &expected[..], "{profile:?}");
            // recovery ends at cwnd = ssthresh = 10
            assert_eq!(after, (10, 10), "{profile:?}");
        }
        // the numbers: lab2019 sends ceil(10·19/20) = 10 in all
        assert_eq!(
            prr_model(CcProfile::Lab2019, 21),
            [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1]
        );
        assert_eq!(prr_model(CcProfile::Lab2019, 21).iter().sum::<u32>(), 10);
        // (with a single loss in_flight never falls more than one below
        // ssthresh, so the profiles' slow-start bounds coincide here)
        assert_eq!(
            prr_model(CcProfile::Modern, 21),
            prr_model(CcProfile::Lab2019, 21)
        );
    }

    /// IW10 client (one write of `n` segments), 10 Mb/s bottleneck, 100 ms RTT.
    fn burst_pair(n: u32, drop: Vec<u32>, owd_ms: u64) -> Pair {
        let mut p = Pair::sym(cfg("reno"), SimDuration::from_millis(owd_ms));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        let iss = p.a.iss();
        p.ab.drop = Some(drop_first_tx(iss, drop.iter().map(|k| k * 1448).collect()));
        p.to_write = n as u64 * 1448;
        p
    }

    /// Time and sequence offset of the client's retransmissions.
    fn retransmissions(p: &Pair) -> Vec<(SimTime, u32)> {
        let iss = p.a.iss();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for s in p.data_from_a() {
            let off = s.seg.hdr.seq.wrapping_sub(iss.wrapping_add(1));
            if !seen.insert(off) {
                out.push((s.t, off / 1448));
            }
        }
        out
    }

    fn tick(t: SimTime) -> u64 {
        t.as_nanos() / 4_000_000
    }

    #[test]
    fn rack_detects_a_lost_last_but_one_segment_after_the_reordering_window() {
        // 10 segments, the 9th lost: only one segment (the 10th) is SACKed, so
        // no dupack threshold; RACK waits reo_wnd = min_rtt/4 and declares it
        // (with 49 ms each way the REO timer, armed mid-tick, still fires after
        // the reordering window; Linux's tcp_rack_reo_timeout does not re-arm
        // itself if the jiffy rounding makes it fire a few µs early)
        let mut p = burst_pair(10, vec![8], 49);
        p.run_until(ms(1000));
        assert_eq!(p.read, 10 * 1448);
        let rtx = retransmissions(&p);
        assert_eq!(rtx.len(), 1);
        assert_eq!(rtx[0].1, 8);
        // the SACK of segment 9 reached the client at t_sack
        let t_sack = p
            .arrivals
            .iter()
            .find(|s| !s.from_a && s.seg.hdr.sack_len > 0)
            .unwrap()
            .t;
        let min_rtt = p.a.info().min_rtt;
        // REO timer: usecs_to_jiffies(reo_wnd + 2 ms) from the SACK's tick
        let reo_wnd = min_rtt / 4;
        let when = (reo_wnd + 2000).div_ceil(4000) as u64;
        assert_eq!(tick(rtx[0].0), tick(t_sack) + when);
        assert_eq!(rtx[0].0.as_nanos() % 4_000_000, 0);
        assert!(
            rtx[0].0 - t_sack < SimDuration::from_millis(50),
            "well before TLP/RTO"
        );
        let i = p.a.info();
        assert_eq!((i.total_retrans, i.backoff), (1, 0));
    }

    #[test]
    fn tlp_probes_a_tail_loss_and_rack_repairs_the_rest() {
        // 10 segments, the last three lost: no SACK at all comes back. After the
        // ACK of segment 7 the loss probe is armed at 2·srtt + 2 jiffies
        // (lab2019); it retransmits the last segment, whose SACK lets RACK
        // mark the other two lost: fast recovery, no RTO.
        let mut p = burst_pair(10, vec![7, 8, 9], 50);
        p.run_until(ms(500));
        let rtx = retransmissions(&p);
        assert_eq!(rtx.len(), 1, "only the probe so far");
        assert_eq!(rtx[0].1, 9, "the probe re-sends the last segment");
        let srtt = p.a.info().rtt; // no RTT sample since the last ACK
        let t_last_ack = p
            .arrivals
            .iter()
            .rfind(|s| !s.from_a && s.t < rtx[0].0)
            .unwrap()
            .t;
        let pto = (2 * srtt).div_ceil(4000) as u64 + 2;
        assert_eq!(tick(rtx[0].0), tick(t_last_ack) + pto);
        p.run_until(ms(2000));
        assert_eq!(p.read, 10 * 1448);
        let rtx = retransmissions(&p);
        assert_eq!(rtx.iter().map(|r| r.1).collect::<Vec<_>>(), vec![9, 7, 8]);
        let i = p.a.info();
        assert_eq!((i.total_retrans, i.backoff), (3, 0));
        assert!(p.samples.iter().any(|s| s.ca_state == 3), "fast recovery");
        assert!(p.samples.iter().all(|s| s.ca_state != 4), "never an RTO");
    }

    #[test]
    fn rto_after_a_lost_window_sets_ssthresh_cwnd_one_and_loss_state() {
        // bulk Reno over 10 Mb/s, 100 ms RTT, held to ~88 segments in flight
        // by a fixed 256 KiB receive buffer; from t = 1 s every data segment
        // sent in the next 350 ms is lost: the whole flight and the loss
        // probe. The RTO fires (the ACK clock has stopped) and its
        // retransmission gets through.
        use std::cell::RefCell;
        use std::rc::Rc;
        let mut b = cfg("reno");
        b.rcvbuf = Some(131_072);
        let mut p = Pair::new(cfg("reno"), b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p.to_write = u64::MAX;
        let dropped = Rc::new(RefCell::new(Vec::new()));
        p.run_until(ms(1000));
        let d2 = dropped.clone();
        let clock = Rc::new(RefCell::new(SimTime::ZERO));
        let c2 = clock.clone();
        p.ab.drop = Some(Box::new(move |s: &crate::tcp::Segment| {
            let now = *c2.borrow();
            if s.payload_len > 0 && now < ms(1350) {
                d2.borrow_mut().push(s.hdr.seq);
                return true;
            }
            false
        }));
        // step in 1 ms slices so the drop rule knows the time
        let mut before_rto = None;
        while p.now < ms(3000) {
            *clock.borrow_mut() = p.now;
            let prev = p.a.info();
            p.run_for(SimDuration::from_millis(1));
            let i = p.a.info();
            if before_rto.is_none() && i.ca_state == 4 {
                before_rto = Some((prev, i));
            }
        }
        let (prev, at) = before_rto.expect("an RTO happened");
        assert_eq!(at.snd_cwnd, 1);
        assert_eq!(
            at.snd_ssthresh,
            (prev.snd_cwnd / 2).max(2),
            "Reno halves the cwnd of the moment"
        );
        assert_eq!(at.backoff, 1);
        assert_eq!(at.rto, 2 * prev.rto, "RTO doubled");
        // total_retrans counts every retransmission on the wire: the loss
        // probe (a re-send of the last segment: the flight is rwnd-limited,
        // so no new data fits), the RTO retransmission and the Loss-state
        // slow-start retransmissions; nothing outside the lost flight
        let mut d = dropped.borrow().clone();
        d.sort_unstable();
        d.dedup();
        let iss = p.a.iss();
        let lost: Vec<u32> = d
            .iter()
            .map(|x| x.wrapping_sub(iss.wrapping_add(1)) / 1448)
            .collect();
        let rtx = retransmissions(&p);
        let i = p.a.info();
        assert_eq!(i.total_retrans as usize, rtx.len());
        assert_eq!(
            rtx.len(),
            lost.len() + 1,
            "one loss probe, then each lost segment once"
        );
        assert_eq!(
            rtx[0].1,
            *lost.last().unwrap(),
            "the probe re-sends the last segment"
        );
        let mut again: Vec<u32> = rtx[1..].iter().map(|r| r.1).collect();
        again.sort_unstable();
        assert_eq!(again, lost);
        assert_eq!(i.ca_state, 0, "recovered");
        assert!(p.read > 1_000_000, "{}", p.read);
    }

    #[test]
    fn a_reordered_segment_triggers_a_spurious_fast_retransmit_that_is_undone() {
        // segment 30 (in slow start) is delayed 30 ms: RACK declares it lost
        // once three later segments are SACKed, the original then arrives
        // before the retransmission; the ACK's echoed timestamp predates the
        // retransmission (Eifel, tcp_packet_delayed), so the reduction is
        // undone, and the duplicate is D-SACKed
        let mut b = cfg("reno");
        b.rmem = [4096, 1 << 20, 6 << 20];
        let mut p = Pair::new(cfg("reno"), b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        let iss = p.a.iss();
        let mut done = false;
        p.ab.delay_rule = Some(Box::new(move |s: &crate::tcp::Segment| {
            let k = s.hdr.seq.wrapping_sub(iss.wrapping_add(1)) / 1448;
            if s.payload_len > 0 && k == 30 && !done {
                done = true;
                return SimDuration::from_millis(30);
            }
            SimDuration::ZERO
        }));
        p.to_write = u64::MAX;
        p.run_until(ms(1500));
        let i = p.a.info();
        assert_eq!(i.total_retrans, 1, "one spurious retransmission");
        assert_eq!(retransmissions(&p)[0].1, 30);
        assert!(i.reord_seen > 0, "reordering detected");
        assert_eq!(i.dsack_dups, 1, "the duplicate was D-SACKed");
        // the cwnd reduction was undone: still in slow start, never cut
        let rec = p
            .samples
            .iter()
            .position(|s| s.ca_state == 3)
            .expect("recovery");
        let before = p.samples[rec - 1].cwnd;
        assert!(p.samples[rec..]
            .iter()
            .any(|s| s.ca_state == 0 && s.cwnd >= before));
        assert_eq!(i.snd_ssthresh, crate::tcp::cc::TCP_INFINITE_SSTHRESH);
    }

    #[test]
    fn ecn_ce_is_echoed_until_cwr_and_cwnd_is_cut_once_per_window() {
        let mut c = cfg("reno");
        c.ecn = 1;
        let mut b = c.clone();
        b.rmem = [4096, 1 << 20, 6 << 20];
        let mut p = Pair::new(c, b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p.to_write = u64::MAX;
        let iss = p.a.iss();
        // CE on two segments of one window, and on one four RTTs later
        let marks = [200u32, 205, 600];
        p.ab.ce_rule = Some(Box::new(move |s: &crate::tcp::Segment| {
            let k = s.hdr.seq.wrapping_sub(iss.wrapping_add(1)) / 1448;
            s.payload_len > 0 && marks.contains(&k)
        }));
        p.run_until(ms(4000));
        // negotiation: SYN with ECE|CWR, SYN-ACK with ECE
        let ece_cwr = tcp_flags::ECE | tcp_flags::CWR;
        assert_eq!(p.log[0].seg.hdr.flags & ece_cwr, ece_cwr);
        assert_eq!(
            p.segs_from_b().next().unwrap().seg.hdr.flags & ece_cwr,
            tcp_flags::ECE
        );
        assert!(p.data_from_a().all(|s| s.seg.ect));
        let i = p.a.info();
        assert_eq!(i.total_retrans, 0);
        // the sender set CWR on exactly two data segments: one per reduction
        let cwr: Vec<SimTime> = p
            .data_from_a()
            .filter(|s| s.seg.hdr.flags & tcp_flags::CWR != 0)
            .map(|s| s.t)
            .collect();
        assert_eq!(cwr.len(), 2);
        // the receiver echoed ECE from each first CE until the next CWR arrived
        let arr_of = |k: u32| {
            p.arrivals
                .iter()
                .find(|s| s.from_a && s.seg.hdr.seq.wrapping_sub(iss.wrapping_add(1)) / 1448 == k)
                .unwrap()
                .t
        };
        let cwr_arr: Vec<SimTime> = p
            .arrivals
            .iter()
            .filter(|s| s.from_a && s.seg.payload_len > 0 && s.seg.hdr.flags & tcp_flags::CWR != 0)
            .map(|s| s.t)
            .collect();
        let windows = [(arr_of(200), cwr_arr[0]), (arr_of(600), cwr_arr[1])];
        assert!(
            arr_of(205) < cwr_arr[0],
            "the second mark fell in the same episode"
        );
        for s in p
            .segs_from_b()
            .filter(|s| s.seg.hdr.flags & tcp_flags::SYN == 0)
        {
            let ece = s.seg.hdr.flags & tcp_flags::ECE != 0;
            let expect = windows.iter().any(|&(a, b)| s.t >= a && s.t < b);
            assert_eq!(ece, expect, "ACK at {}", s.t);
        }
        // one CWR episode for the two marks of the first window: ssthresh halved once
        let cwr_states: Vec<&Sample> = p.samples.iter().filter(|s| s.ca_state == 2).collect();
        let first = cwr_states[0];
        let entered: Vec<&Sample> = p
            .samples
            .windows(2)
            .filter(|w| w[0].ca_state != 2 && w[1].ca_state == 2)
            .map(|w| &w[1])
            .collect();
        assert_eq!(entered.len(), 2);
        let before = p.samples.iter().rfind(|s| s.t < first.t).unwrap();
        assert_eq!(first.ssthresh, (before.cwnd / 2).max(2));
    }
}

#[cfg(test)]
mod stress_tests {
    use super::super::cc::CcProfile;
    use super::super::endpoint::TcpConfig;
    use super::super::harness::*;
    use crate::time::{Rate, SimDuration};

    /// A drop-tail bottleneck that overflows: every module recovers from
    /// repeated losses without stalling and keeps the scoreboard consistent.
    fn lossy_run(cc: &str, sack: bool) -> (u64, u32) {
        lossy_run_profile(cc, sack, CcProfile::Lab2019)
    }

    fn lossy_run_profile(cc: &str, sack: bool, profile: CcProfile) -> (u64, u32) {
        let mut c = TcpConfig {
            congestion: cc.to_string(),
            ..TcpConfig::for_profile(profile)
        };
        c.sack = sack;
        c.rmem = [4096, 87380, 6 << 20];
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.ab.rate = Some(Rate::from_bps(20_000_000));
        p.ab.limit = 30;
        p.to_write = u64::MAX;
        p.run_until(ms(5000));
        let i = p.a.info();
        (p.read, i.total_retrans)
    }

    #[test]
    fn every_module_survives_a_lossy_drop_tail_bottleneck() {
        // 20 Mb/s × 20 ms = 34.5 packets of BDP, 30-packet queue
        let ceiling = 20e6 / 8.0 * 1448.0 / 1514.0 * 5.0;
        for cc in ["reno", "cubic", "htcp", "bbr"] {
            let (read, retrans) = lossy_run(cc, true);
            assert!(retrans > 0, "{cc}: the queue overflowed");
            assert!(read as f64 > 0.75 * ceiling, "{cc}: {read} of {ceiling}");
        }
    }

    #[test]
    fn every_module_survives_it_with_the_modern_profile_too() {
        let ceiling = 20e6 / 8.0 * 1448.0 / 1514.0 * 5.0;
        for cc in ["reno", "cubic", "htcp", "bbr"] {
            let (read, retrans) = lossy_run_profile(cc, true, CcProfile::Modern);
            assert!(retrans > 0, "{cc}: the queue overflowed");
            assert!(read as f64 > 0.75 * ceiling, "{cc}: {read} of {ceiling}");
        }
    }

    #[test]
    fn newreno_without_sack_recovers_too() {
        let ceiling = 20e6 / 8.0 * 1448.0 / 1514.0 * 5.0;
        let (read, retrans) = lossy_run("reno", false);
        assert!(retrans > 0);
        assert!(read as f64 > 0.6 * ceiling, "{read}");
    }

    /// Throughput of the model itself: a 1 Gb/s, 20 ms path with a
    /// 1000-packet drop-tail queue for 10 simulated seconds (~0.8 M data
    /// segments); `cargo test --release -- --ignored perf` prints the rate.
    #[test]
    #[ignore]
    fn perf_one_gigabit_ten_seconds() {
        for cc in ["cubic", "bbr"] {
            let mut c = cfg(cc);
            c.rmem = [10240, 87380, 52_428_800];
            c.wmem = [10240, 87380, 52_428_800];
            let mut p = Pair::sym(c, SimDuration::from_millis(10));
            p.ab.rate = Some(Rate::from_bps(1_000_000_000));
            p.ab.limit = 1000;
            p.to_write = u64::MAX;
            p.record = false;
            p.check = false;
            let t0 = std::time::Instant::now();
            p.run_until(ms(10_000));
            let el = t0.elapsed().as_secs_f64();
            let segs = p.a.info().data_segs_out as f64;
            eprintln!(
                "{cc}: {segs} segments in {el:.2} s wall = {:.2} M segments/s; goodput {:.1} Mb/s; retrans {}",
                segs / el / 1e6,
                p.read as f64 * 8.0 / 10.0 / 1e6,
                p.a.info().total_retrans
            );
            // nothing grows without bound: the send-time log stays within a
            // window's worth of entries
            eprintln!(
                "  rtx queue {} segments, send-time log {} entries, staged output {}",
                p.a.sb.q.len(),
                p.a.sb.tsorted.len(),
                p.a.out.capacity()
            );
            assert!(p.a.sb.tsorted.len() <= 2 * p.a.sb.q.len() + 64);
        }
    }
}
