//! The retransmission queue and its scoreboard (RFC 6675 §3–4 as Linux keeps
//! it: `TCPCB_SACKED_ACKED`/`SACKED_RETRANS`/`LOST` per skb and the
//! `sacked_out`/`lost_out`/`retrans_out` counters of include/linux/tcp.h).
//!
//! The queue is a `VecDeque` of small `Copy` records, one per MSS, sorted by
//! sequence; a segment is found by binary search. Linux's `tsorted_sent_queue`
//! (send-time order, for RACK) is a log of `(send time, seq)` with lazy
//! deletion: an entry is live while its segment still exists, is unSACKed,
//! not waiting for retransmission, and was last sent at that time; dead
//! entries are dropped from the front.

use std::collections::VecDeque;

use super::super::rate::TxInfo;
use super::super::seq::before;

/// `TCPCB_SACKED_ACKED`: the receiver holds this segment (SACKed).
pub const SACKED_ACKED: u8 = 0x01;
/// `TCPCB_SACKED_RETRANS`: a retransmission of it is in flight.
pub const SACKED_RETRANS: u8 = 0x02;
/// `TCPCB_LOST`: marked lost.
pub const LOST: u8 = 0x04;
/// `TCPCB_EVER_RETRANS`.
pub const EVER_RETRANS: u8 = 0x80;
/// `TCPCB_RETRANS`.
pub const RETRANS: u8 = SACKED_RETRANS | EVER_RETRANS;

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

/// The retransmission queue and scoreboard counters.
#[derive(Clone, Debug)]
pub struct Scoreboard {
    pub q: VecDeque<Seg>,
    /// send-time log `(xmit_us, seq)` for RACK, lazily pruned
    pub(in crate::tcp) tsorted: VecDeque<(u64, u32)>,
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
    /// keep the snapshots of newly lost segments in `lost_log` (set for a
    /// module with `skb_marked_lost`)
    pub log_lost: bool,
    /// the `tx` snapshot of each segment `mark_lost` counted, in order,
    /// until the endpoint hands them to the module
    pub lost_log: Vec<TxInfo>,
}

impl Default for Scoreboard {
    fn default() -> Self {
        Self::new()
    }
}

impl Scoreboard {
    pub fn new() -> Self {
        Scoreboard {
            q: VecDeque::new(),
            tsorted: VecDeque::new(),
            packets_out: 0,
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            retransmit_hint: None,
            highest_sack_end: 0,
            sack_cache: [(0, 0); 4],
            sack_cache_len: 0,
            log_lost: false,
            lost_log: Vec::new(),
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

    /// How many segments from `idx` (at most `max`, at least 1) one
    /// retransmitted skb takes: `idx` and the contiguous segments after it
    /// that are lost and neither SACKed nor already retransmitted.
    pub fn lost_run(&self, idx: usize, max: usize) -> usize {
        let mut n = 1;
        while n < max {
            let (prev, next) = match (self.q.get(idx + n - 1), self.q.get(idx + n)) {
                (Some(p), Some(s)) => (p, s),
                _ => break,
            };
            if next.seq != prev.end_seq
                || next.sacked & LOST == 0
                || next.sacked & (SACKED_ACKED | SACKED_RETRANS) != 0
            {
                break;
            }
            n += 1;
        }
        n
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
                if self.log_lost {
                    self.lost_log.push(s.tx);
                }
                return true;
            }
            false
        } else {
            s.sacked |= LOST;
            if s.sacked & SACKED_RETRANS == 0 {
                s.in_tsorted = false;
            }
            self.lost_out += 1;
            if self.log_lost {
                self.lost_log.push(s.tx);
            }
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

    pub(super) fn tsorted_live(&self, t: u64, seq: u32) -> Option<usize> {
        let i = self.index_of_seq(seq)?;
        let s = &self.q[i];
        (s.in_tsorted && s.xmit_us == t && s.sacked & SACKED_ACKED == 0).then_some(i)
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
#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A fresh 1000-byte segment on the send-time list.
    pub(in super::super) fn seg(seq: u32, xmit_us: u64) -> Seg {
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

    fn ten_segments() -> Scoreboard {
        let mut sb = Scoreboard::new();
        for i in 0..10u32 {
            sb.push(seg(i * 1000, 100 + i as u64));
        }
        sb
    }

    /// RFC 6675 §4 pipe as Linux counts it (`tcp_packets_in_flight`):
    /// 10 out, 3 SACKed, 2 lost of which 1 retransmitted → 10 − 5 + 1 = 6.
    #[test]
    fn in_flight_excludes_sacked_and_lost_and_adds_retransmissions() {
        let mut sb = ten_segments();
        for i in [5, 6, 7] {
            sb.q[i].sacked |= SACKED_ACKED;
        }
        sb.sacked_out = 3;
        assert!(sb.mark_lost(1));
        assert!(sb.mark_lost(2));
        sb.q[1].sacked |= SACKED_RETRANS;
        sb.retrans_out += 1;
        sb.on_retransmit(1, 5_000, TxInfo::default());
        assert_eq!(sb.in_flight(), 6);
        sb.check(true);
    }

    #[test]
    fn a_segment_is_counted_lost_once_and_never_once_sacked() {
        let mut sb = ten_segments();
        assert!(sb.mark_lost(0));
        assert!(!sb.mark_lost(0), "already lost");
        assert_eq!(sb.lost_out, 1);
        sb.q[4].sacked |= SACKED_ACKED;
        sb.sacked_out = 1;
        assert!(!sb.mark_lost(4), "the receiver holds it");
        assert_eq!(sb.lost_out, 1);
        assert_eq!(
            sb.retransmit_hint,
            Some(0),
            "the retransmit walk starts at the loss"
        );
        sb.check(true);
    }

    /// A lost retransmission (`tcp_mark_skb_lost` on a LOST|RETRANS segment)
    /// leaves it lost, no longer in flight, and counts one more loss.
    #[test]
    fn a_lost_retransmission_is_no_longer_in_flight() {
        let mut sb = ten_segments();
        sb.mark_lost(3);
        sb.q[3].sacked |= SACKED_RETRANS;
        sb.retrans_out = 1;
        sb.on_retransmit(3, 9_000, TxInfo::default());
        assert_eq!(sb.in_flight(), 10);
        assert!(sb.mark_lost(3));
        assert_eq!((sb.lost_out, sb.retrans_out), (1, 0));
        assert_eq!(sb.q[3].sacked, LOST | EVER_RETRANS);
        assert_eq!(sb.in_flight(), 9);
        sb.check(true);
    }

    /// The send-time log keeps a retransmitted segment at its new time only:
    /// the stale entry is dropped once it reaches the front.
    #[test]
    fn the_send_time_log_drops_entries_of_retransmitted_segments() {
        let mut sb = ten_segments();
        sb.on_retransmit(0, 9_000, TxInfo::default());
        assert_eq!(sb.tsorted.len(), 11);
        sb.prune_tsorted();
        assert_eq!(sb.tsorted.front(), Some(&(101, 1000)));
        assert_eq!(sb.tsorted.back(), Some(&(9_000, 0)));
    }
}
