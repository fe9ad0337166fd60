//! The application's write: `tcp_sendmsg_locked` (net/ipv4/tcp.c, Linux 6.18)
//! and the pushes it makes while it copies.
//!
//! The kernel copies a write into the write queue in skbs of `size_goal`
//! bytes (`tcp_send_mss` → `tcp_xmit_size_goal`: the device's GSO size less
//! `MAX_TCP_HEADER + 1`, bounded to half the peer's largest window, a
//! multiple of the MSS). Each time the skb it fills reaches the goal and
//! more of the write is left, it pushes: `__tcp_push_pending_frames` when
//! `forced_push` (more than half the peer's largest window written since the
//! last push), else `tcp_push_one` when that skb is the send head.
//! `tcp_push_one` runs `tcp_write_xmit` with `push_one` set, which sends the
//! head without `tcp_tso_should_defer`, so the piece cwnd allows leaves at
//! once. The write ends with `tcp_push` (as an ACK pushes, with deferral;
//! autocorking is not modelled). docs/kernel-oracle.md "Where the kernel's
//! short skbs come from" measured these pushes on Linux 6.18.
//!
//! bufferlab keeps the unsent data as one byte stream that `tcp_write_xmit`
//! re-cuts at send time (output.rs). Of the kernel's skbs the copy needs
//! only the last: it starts at [`TcpEndpoint::tail_skb_seq`], or at
//! `snd_nxt` once part of it has left (`tso_fragment` leaves the rest as
//! the tail), and it is the send head when nothing unsent precedes it.

use super::{TcpEndpoint, TcpState};
use crate::tcp::seq::after;
use crate::time::SimTime;

use super::output::GSO_MAX_SEGS;

impl TcpEndpoint {
    /// The application writes `bytes` (`tcp_sendmsg`); returns how many the
    /// send buffer accepted (docs/semantics/tcp.md §6.2) and pushes what may be sent now.
    pub fn write(&mut self, now: SimTime, bytes: u64) -> u64 {
        self.set_clock(now);
        if self.fin_queued
            || !matches!(
                self.state,
                TcpState::Established
                    | TcpState::CloseWait
                    | TcpState::SynSent
                    | TcpState::SynReceived
            )
        {
            return 0;
        }
        let established = matches!(self.state, TcpState::Established | TcpState::CloseWait);
        if established {
            self.rate_check_app_limited();
        }
        let space = self.send_space();
        let n = bytes.min(space);
        if n < bytes {
            self.nospace = true;
        }
        if n > 0 {
            if established && self.unsent_bytes() == 0 {
                self.slow_start_after_idle_check();
            }
            self.copy_to_write_queue(n as u32, established);
            if established {
                self.push_pending_frames(false);
            }
        }
        n
    }

    /// `tcp_xmit_size_goal`: the bytes `tcp_sendmsg_locked` puts in one skb.
    /// With GSO off (`gso_max_size` 0) it is one MSS.
    pub(super) fn size_goal(&self) -> u32 {
        let mss = self.mss_cache.max(1);
        if self.cfg.gso_max_size == 0 {
            return mss;
        }
        // sk_setup_caps keeps MAX_TCP_HEADER + 1 of the device's GSO size for headers
        let gso = self
            .cfg
            .gso_max_size
            .saturating_sub(self.cfg.max_tcp_header + 1);
        let segs = (self.bound_to_half_wnd(gso) / mss).min(GSO_MAX_SEGS);
        (segs * mss).max(mss)
    }

    /// `tcp_sendmsg_locked`'s loop over the `len` bytes the buffer accepted:
    /// fill the tail skb up to the size goal, start a new one when it is
    /// full, and push each full skb while more of the write is left. A
    /// connection not yet established only queues (the kernel's writer waits
    /// in `sk_stream_wait_connect`; bufferlab's data go when it opens).
    fn copy_to_write_queue(&mut self, mut len: u32, established: bool) {
        let goal = self.size_goal();
        // tcp_push marked the end of the previous write (tcp_mark_push)
        let mut pushed_seq = self.write_seq;
        while len > 0 {
            let start = if after(self.tail_skb_seq, self.snd_nxt) {
                self.tail_skb_seq
            } else {
                self.snd_nxt
            };
            let mut filled = self.write_seq.wrapping_sub(start);
            if filled == 0 || filled >= goal {
                // tcp_stream_alloc_skb + tcp_skb_entail
                self.tail_skb_seq = self.write_seq;
                filled = 0;
            }
            let copy = (goal - filled).min(len);
            self.write_seq = self.write_seq.wrapping_add(copy);
            len -= copy;
            if len == 0 || !established || filled + copy < goal {
                continue;
            }
            if self.write_seq.wrapping_sub(pushed_seq) > self.max_window >> 1 {
                // forced_push → tcp_mark_push, __tcp_push_pending_frames(TCP_NAGLE_PUSH)
                pushed_seq = self.write_seq;
                self.push_pending_frames(true);
            } else if !after(self.tail_skb_seq, self.snd_nxt) {
                // tcp_push_one: the full skb is the send head
                self.write_xmit(true, 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::harness::*;
    use crate::tcp::cc::CcProfile;
    use crate::tcp::config::TcpConfig;
    use crate::time::{Rate, SimDuration};

    const MSS: u32 = 1448;

    fn modern(max_tcp_header: u32) -> TcpConfig {
        TcpConfig {
            gso_max_size: 65_536,
            max_tcp_header,
            ..TcpConfig::for_profile(CcProfile::Modern)
        }
    }

    #[test]
    fn size_goal_is_the_gso_size_bounded_to_half_the_peers_window() {
        let mut p = Pair::sym(modern(320), SimDuration::from_millis(10));
        p.run_until(ms(30));
        // the server's SYN-ACK offered 65 160: half is 32 580 → 22 segments (31 856),
        // the first goal the kernel's tracepoint showed
        assert_eq!(p.a.max_window, 65_160);
        assert_eq!(p.a.size_goal(), 22 * MSS);
        // a large window: 65 536 − (320 + 1) = 65 215 → 45 segments; 65 279 with 256
        p.a.max_window = 1 << 20;
        assert_eq!(p.a.size_goal(), 45 * MSS);
        // GSO off: one MSS
        let mut off = modern(320);
        off.gso_max_size = 0;
        let mut p = Pair::sym(off, SimDuration::from_millis(10));
        p.run_until(ms(30));
        assert_eq!(p.a.size_goal(), MSS);
    }

    /// The kernel's first rounds of `cubic-4flows-htb` (docs/kernel-oracle.md "Found"): a
    /// writer that fills the buffer whenever `select()` says writable, into a 10 Mbit/s
    /// bottleneck a few µs away, with Linux 6.18's 46 080-byte first send buffer.
    #[test]
    fn a_write_that_fills_the_send_head_sends_what_cwnd_allows_without_deferral() {
        let mut p = Pair::new(modern(256), modern(256), SimDuration::from_micros(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p.ab.limit = 100_000;
        p.run_until(ms(1));
        let mut t = p.now;
        loop {
            assert!(t < ms(50), "no write found the send head held back");
            p.run_until(t);
            t += SimDuration::from_micros(10);
            if !p.a.poll_writable() {
                continue;
            }
            let held = p.a.unsent_bytes();
            if held == 0 || p.a.cwnd_test() == 0 {
                p.a.write(p.now, 128 * 1024);
                continue;
            }
            // The first ACK's push left data that cwnd allows: 5 segments acked, cwnd
            // 10 + 5 = 15, 18 824 B = 13 segments in flight, tcp_cwnd_test =
            // min(15 / 2, 15 − 13) = 2. The head is the first skb, which the first
            // write's 43 885 B (46 080 × 100 / 105) filled to the then goal of 22 segments
            // and tcp_push_one / the ACKs sent 26 064 B of.
            let (una, nxt) = (
                p.a.snd_una.wrapping_sub(p.a.iss),
                p.a.snd_nxt.wrapping_sub(p.a.iss),
            );
            assert_eq!(
                (una - 1, nxt - 1, held),
                (5 * MSS, 18 * MSS, 43_885 - 18 * MSS)
            );
            assert_eq!((p.a.cwnd(), p.a.in_flight(), p.a.cwnd_test()), (15, 13, 2));
            // the push an ACK makes (the old write path's only push) defers it:
            // sent 1 ms ago at most, the head's ACK due within min(srtt/2, 1 ms)
            p.a.push_pending_frames(false);
            assert_eq!(
                p.a.snd_nxt.wrapping_sub(p.a.iss),
                nxt,
                "an ACK's push defers"
            );
            // The write tops the head up to the goal, now 27 segments (the peer's window
            // grew to 78 192: half is 39 096), and tcp_push_one sends the 2 at once
            assert_eq!(p.a.size_goal(), 27 * MSS);
            let n = p.a.write(p.now, 128 * 1024);
            assert!(
                n as u32 >= 27 * MSS - held,
                "the write filled the goal ({n} B)"
            );
            assert_eq!(p.a.snd_nxt.wrapping_sub(p.a.iss) - nxt, 2 * MSS);
            let sent =
                p.a.poll_transmit(p.now)
                    .expect("the piece left at the write");
            assert_eq!(
                (sent.payload_len, sent.hdr.seq.wrapping_sub(p.a.iss)),
                (2 * MSS, nxt)
            );
            return;
        }
    }
}
