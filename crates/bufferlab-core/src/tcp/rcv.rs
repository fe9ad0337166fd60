//! Size: the receiver's own state with the parts of tcp_input.c that need nothing
//! else (below): one unit the socket drives from endpoint/input/data.rs.
//!
//! The receiver (docs/semantics/tcp.md §7): in-order and out-of-order queues with SACK and
//! D-SACK generation, the advertised window (`__tcp_select_window`, never
//! shrinking), receive-buffer autotuning (DRS, `tcp_rcv_space_adjust`) and
//! the ACK policy (delayed ACK with `ato`, quickack credits, SACK
//! compression).
//!
//! This is the receiver's own state with the parts of net/ipv4/tcp_input.c
//! that need nothing else — `tcp_sack_new_ofo_skb`, `tcp_sack_remove`,
//! `tcp_dsack_set`, `tcp_measure_rcv_mss`, `tcp_grow_window`,
//! `tcp_rcv_rtt_update` — and of tcp_output.c (`tcp_select_initial_window`,
//! `__tcp_select_window`); the socket drives it from endpoint/input/data.rs
//! (`tcp_data_queue`, `tcp_event_data_recv`, `tcp_rcv_space_adjust`,
//! `__tcp_ack_snd_check`, `tcp_cleanup_rbuf`).
//!
//! Memory accounting: each received segment is charged a truesize of
//! `roundup_pow2(len + 450) + 256` bytes (a driver's page-fragment buffer
//! plus `struct sk_buff`: 2304 for a full 1448-byte segment), so the window
//! reflects `tcp_space()` as the kernel computes it from `sk_rmem_alloc`.

use std::collections::VecDeque;

use super::cc::{CcProfile, HZ, TCP_INIT_CWND};
use super::config::{TcpConfig, TCP_MAX_WSCALE, TCP_MIN_MSS, TCP_MSS_DEFAULT};
use super::seq::{after, before, seq_max, seq_min};
use crate::packet::{tcp_flags, TcpHeader};

/// `ICSK_ACK_SCHED`: an ACK is owed.
pub const ACK_SCHED: u8 = 1;
/// `ICSK_ACK_TIMER`: the delayed-ACK timer is armed.
pub const ACK_TIMER: u8 = 2;
/// `ICSK_ACK_PUSHED`.
pub const ACK_PUSHED: u8 = 4;
/// `ICSK_ACK_PUSHED2`.
pub const ACK_PUSHED2: u8 = 8;
/// `ICSK_ACK_NOW`: send an ACK immediately.
pub const ACK_NOW: u8 = 16;
/// `TCP_ATO_MIN` = `TCP_DELACK_MIN`: 40 ms in jiffies.
pub const TCP_ATO_MIN: u32 = HZ / 25;
pub const TCP_DELACK_MIN: u32 = HZ / 25;
/// `TCP_DELACK_MAX`: 200 ms in jiffies.
pub const TCP_DELACK_MAX: u32 = HZ / 5;
/// `TCP_MAX_QUICKACKS`.
pub const TCP_MAX_QUICKACKS: u32 = 16;
/// `TCP_FASTRETRANS_THRESH`: dupacks sent at once before SACK compression.
pub const TCP_FASTRETRANS_THRESH: u32 = 3;
/// `tcp_comp_sack_nr` default.
pub const TCP_COMP_SACK_NR: u32 = 44;
/// `tcp_comp_sack_delay_ns` default: 1 ms.
pub const TCP_COMP_SACK_DELAY_NS: u64 = 1_000_000;
/// `TCP_SACK_BLOCKS_EXPECTED`.
const TCP_SACK_BLOCKS_EXPECTED: usize = 2;
/// `TCP_DEFAULT_SCALING_RATIO` (modern `tcp_win_from_space`), /256.
const TCP_DEFAULT_SCALING_RATIO: u32 = 128;
/// `SOCK_MIN_RCVBUF` (2 × SKB_TRUESIZE(256)).
const SOCK_MIN_RCVBUF: u32 = 2304;
/// `TCP_PINGPONG_THRESH`.
const TCP_PINGPONG_THRESH: u32 = 1;

/// Memory charged for a received segment of `len` payload bytes.
#[inline]
pub fn rx_truesize(len: u32) -> u32 {
    (len + 450).next_power_of_two() + 256
}

/// Memory charged for a received GSO aggregate of `len` payload bytes: a
/// veth hands the sender's skb over as it is, its payload in page fragments
/// charged byte for byte plus one skb head (`SKB_TRUESIZE(MAX_TCP_HEADER)`,
/// ~896 bytes on x86-64; an approximation of `tcp_sendmsg`'s accounting).
#[inline]
pub fn rx_truesize_gso(len: u32) -> u32 {
    len + 896
}

/// One out-of-order run `[seq, end)` with the truesize it holds.
#[derive(Clone, Copy, Debug)]
pub(in crate::tcp) struct OooRun {
    pub(in crate::tcp) seq: u32,
    pub(in crate::tcp) end: u32,
    pub(in crate::tcp) truesize: u32,
    pub(in crate::tcp) fin: bool,
}

/// The receive half of a connection.
#[derive(Clone, Debug)]
pub struct Receiver {
    pub rcv_nxt: u32,
    /// `rcv_nxt` when the last window was advertised
    pub rcv_wup: u32,
    /// the last advertised window, bytes
    pub rcv_wnd: u32,
    /// next byte the application will read
    pub copied_seq: u32,
    pub rcv_ssthresh: u32,
    pub window_clamp: u32,
    pub rcv_wscale: u8,
    /// `sk_rcvbuf`
    pub rcvbuf: u32,
    pub rcvbuf_locked: bool,
    /// `sk_rmem_alloc`: truesize of queued data (in order + out of order)
    pub rmem_alloc: u32,
    pub advmss: u32,
    pub(in crate::tcp) rmem2: u32,
    pub(in crate::tcp) moderate_rcvbuf: bool,
    adv_win_scale: i32,
    profile: CcProfile,
    /// modern `tcp_win_from_space` ratio, /256
    scaling_ratio: u32,
    /// in-order unread segments: (end_seq, truesize)
    pub(in crate::tcp) inq: VecDeque<(u32, u32)>,
    pub(in crate::tcp) ooo: VecDeque<OooRun>,
    /// SACK blocks to report, most recent first
    sacks: [(u32, u32); 4],
    pub(in crate::tcp) num_sacks: usize,
    /// a D-SACK block is pending (`rx_opt.dsack`)
    pub(in crate::tcp) dsack: bool,
    dup_sack: (u32, u32),
    // ---- ACK policy (icsk_ack)
    pub ack_pending: u8,
    pub quick: u32,
    pingpong: u32,
    /// delayed-ACK timeout, jiffies
    pub ato: u32,
    /// jiffies of the last data received
    pub lrcvtime: u32,
    /// estimate of the peer's MSS, bytes
    pub rcv_mss: u32,
    last_seg_size: u32,
    /// `gso_size` of the skb being processed (0: a single segment)
    pub skb_gso_size: u32,
    /// jiffies at which the delayed-ACK timer fires
    pub delack_timeout: u32,
    pub compressed_ack: u32,
    pub(in crate::tcp) compressed_ack_rcv_nxt: u32,
    pub(in crate::tcp) dup_ack_counter: u32,
    // ---- receiver RTT estimate (DRS)
    /// µs << 3
    pub rcv_rtt_us: u32,
    rcv_rtt_seq: u32,
    rcv_rtt_time: u64,
    pub(in crate::tcp) rcv_rtt_last_tsecr: u32,
    /// `rcvq_space`: bytes per RTT the application consumed
    pub space: u32,
    pub space_seq: u32,
    pub(in crate::tcp) space_time: u64,
    // ---- ECN (receiver side)
    pub demand_cwr: bool,
    pub(in crate::tcp) ecn_seen: bool,
    /// CE-marked data segments received on the ECN connection (each
    /// segment of an aggregate counted)
    pub ce_received: u32,
    pub fin_received: bool,
    pub(in crate::tcp) fin_seq: Option<u32>,
    pub bytes_received: u64,
}

impl Receiver {
    pub fn new(cfg: &TcpConfig, rcvbuf: u32, rcvbuf_locked: bool, advmss: u32) -> Self {
        Receiver {
            rcv_nxt: 0,
            rcv_wup: 0,
            rcv_wnd: 0,
            copied_seq: 0,
            rcv_ssthresh: 0,
            window_clamp: 0,
            rcv_wscale: 0,
            rcvbuf,
            rcvbuf_locked,
            rmem_alloc: 0,
            advmss,
            rmem2: cfg.rmem[2],
            moderate_rcvbuf: cfg.moderate_rcvbuf,
            adv_win_scale: cfg.adv_win_scale,
            profile: cfg.profile,
            scaling_ratio: TCP_DEFAULT_SCALING_RATIO,
            inq: VecDeque::new(),
            ooo: VecDeque::new(),
            sacks: [(0, 0); 4],
            num_sacks: 0,
            dsack: false,
            dup_sack: (0, 0),
            ack_pending: 0,
            quick: 0,
            pingpong: 0,
            ato: 0,
            lrcvtime: 0,
            rcv_mss: TCP_MSS_DEFAULT,
            last_seg_size: 0,
            skb_gso_size: 0,
            delack_timeout: 0,
            compressed_ack: 0,
            compressed_ack_rcv_nxt: 0,
            dup_ack_counter: 0,
            rcv_rtt_us: 0,
            rcv_rtt_seq: 0,
            rcv_rtt_time: 0,
            rcv_rtt_last_tsecr: 0,
            space: 0,
            space_seq: 0,
            space_time: 0,
            demand_cwr: false,
            ecn_seen: false,
            ce_received: 0,
            fin_received: false,
            fin_seq: None,
            bytes_received: 0,
        }
    }

    /// `tcp_win_from_space` (docs/semantics/tcp.md §3): lab2019 `space − space/2^scale`,
    /// modern `space × scaling_ratio / 256`.
    pub fn win_from_space(&self, space: i64) -> i64 {
        match self.profile {
            CcProfile::Lab2019 => {
                if self.adv_win_scale <= 0 {
                    space >> (-self.adv_win_scale)
                } else {
                    space - (space >> self.adv_win_scale)
                }
            }
            CcProfile::Modern => (space * self.scaling_ratio as i64) >> 8,
        }
    }

    /// The modern `scaling_ratio` as a test sets it (the kernel learns it
    /// from the first full-sized skb's len/truesize).
    #[cfg(test)]
    pub(in crate::tcp) fn set_scaling_ratio(&mut self, ratio: u32) {
        self.scaling_ratio = ratio.clamp(1, 255);
    }

    /// `tcp_space_from_win` (modern).
    pub(in crate::tcp) fn space_from_win(&self, win: u64) -> u64 {
        (win << 8) / self.scaling_ratio.max(1) as u64
    }

    /// `tcp_space`: window the free buffer space allows.
    pub fn tcp_space(&self) -> i64 {
        self.win_from_space(self.rcvbuf as i64 - self.rmem_alloc as i64)
    }

    /// `tcp_full_space`.
    pub fn full_space(&self) -> i64 {
        self.win_from_space(self.rcvbuf as i64)
    }

    /// `tcp_select_initial_window` (docs/semantics/tcp.md §3). `mss` is the advertised MSS
    /// less the timestamp option on the passive side.
    pub fn select_initial_window(&mut self, cfg: &TcpConfig, mss: u32, wscale_ok: bool) {
        let full = self.full_space().max(0) as u32;
        if self.rcvbuf_locked && (self.window_clamp > full || self.window_clamp == 0) {
            self.window_clamp = full;
        }
        let mut clamp = self.window_clamp;
        if clamp == 0 {
            clamp = 65535u32 << TCP_MAX_WSCALE;
        }
        let mut space = clamp.min(full);
        if space > mss {
            space = space / mss * mss;
        }
        let mut rcv_wnd = space;
        let mut wscale = 0u8;
        if wscale_ok {
            let mut s = space.max(cfg.rmem[2]).max(cfg.rmem_max);
            s = s.min(clamp);
            let l = 31 - s.max(1).leading_zeros() as i32;
            wscale = (l - 15).clamp(0, TCP_MAX_WSCALE as i32) as u8;
        }
        if self.profile == CcProfile::Lab2019 && mss > (1u32 << wscale) {
            // [lab2019] the initial window is capped at 20 segments: 29200 B
            // for the active side's MSS 1460, 28960 for the passive side's
            // 1448 — the SYN/SYN-ACK windows of the handouts' kernels (the
            // cap went with 4.19's "SYN rwin to around 64KB", commit
            // a337531b, whose message gives the old value as ~29 KB = 20 MSS)
            let init = if mss > 1460 {
                (1460 * 20 / mss).max(2)
            } else {
                20
            };
            rcv_wnd = rcv_wnd.min(init * mss);
        }
        self.rcv_wnd = rcv_wnd;
        self.rcv_wscale = wscale;
        self.window_clamp = (65535u32 << wscale).min(clamp);
        self.rcv_ssthresh = rcv_wnd;
    }

    /// `tcp_initialize_rcv_mss`.
    pub fn initialize_rcv_mss(&mut self, advmss: u32, mss_cache: u32) {
        // min(advmss, mss_cache, rcv_wnd / 2, TCP_MSS_DEFAULT), at least TCP_MIN_MSS
        let hint = advmss
            .min(mss_cache)
            .min(self.rcv_wnd / 2)
            .min(TCP_MSS_DEFAULT);
        let hint = hint.max(TCP_MIN_MSS);
        self.rcv_mss = hint;
    }

    /// `tcp_init_buffer_space`, receive half.
    pub fn init_buffer_space(&mut self, now_us: u64) {
        self.space_time = now_us;
        self.space_seq = self.copied_seq;
        let maxwin = self.full_space().max(0) as u32;
        if self.window_clamp >= maxwin {
            self.window_clamp = maxwin;
            // tcp_app_win = 31: maxwin >> 31 = 0
        }
        // force reservation of one segment
        if self.window_clamp > 2 * self.advmss && self.window_clamp + self.advmss > maxwin {
            self.window_clamp = (2 * self.advmss).max(maxwin.saturating_sub(self.advmss));
        }
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        self.space = self
            .rcv_ssthresh
            .min(self.rcv_wnd)
            .min(TCP_INIT_CWND * self.advmss);
    }

    /// `tcp_receive_window`: what is left of the last advertised window.
    pub fn receive_window(&self) -> u32 {
        let w = self
            .rcv_wup
            .wrapping_add(self.rcv_wnd)
            .wrapping_sub(self.rcv_nxt) as i32;
        w.max(0) as u32
    }

    /// `__tcp_select_window` (docs/semantics/tcp.md §7.1), non-shrinking variant.
    pub fn select_window_raw(&mut self) -> u32 {
        let mut mss = self.rcv_mss as i64;
        let mut free = self.tcp_space();
        let allowed = self.full_space();
        let full = (self.window_clamp as i64).min(allowed);
        if mss > full {
            mss = full;
            if mss <= 0 {
                return 0;
            }
        }
        if free < full >> 1 {
            self.quick = 0;
            free &= !((1i64 << self.rcv_wscale) - 1);
            if free < allowed >> 4 || free < mss {
                return 0;
            }
        }
        if free > self.rcv_ssthresh as i64 {
            free = self.rcv_ssthresh as i64;
        }
        let free = free.max(0);
        if self.rcv_wscale > 0 {
            // round up to a multiple of 2^wscale (free ≥ 0: shifts, no division)
            let w = self.rcv_wscale as u32;
            (((free + (1i64 << w) - 1) >> w) << w) as u32
        } else {
            let mut window = self.rcv_wnd as i64;
            if window <= free - mss || window > free {
                window = free / mss * mss;
            } else if mss == full && free > window + (full >> 1) {
                window = free;
            }
            window as u32
        }
    }

    /// SACK option blocks for an outgoing ACK (`tcp_established_options`:
    /// a pending D-SACK first, at most 3 blocks with timestamps).
    pub fn write_sack_blocks(&mut self, h: &mut TcpHeader) {
        let mut n = 0;
        if self.dsack {
            h.sack[0] = self.dup_sack;
            n = 1;
            self.dsack = false;
        }
        for i in 0..self.num_sacks {
            if n >= 3 {
                break;
            }
            h.sack[n] = self.sacks[i];
            n += 1;
        }
        h.sack_len = n as u8;
    }

    /// In-order bytes not yet read.
    pub fn readable(&self) -> u64 {
        let mut n = self.rcv_nxt.wrapping_sub(self.copied_seq) as u64;
        if let Some(f) = self.fin_seq {
            if !before(self.rcv_nxt, f.wrapping_add(1)) && n > 0 && !before(f, self.copied_seq) {
                n -= 1; // the FIN occupies a sequence number but is not data
            }
        }
        n
    }

    /// The application reads up to `max` bytes.
    pub fn consume(&mut self, max: u64) -> u64 {
        let n = self.readable().min(max) as u32;
        self.copied_seq = self.copied_seq.wrapping_add(n);
        // free every segment read completely
        while let Some(&(end, ts)) = self.inq.front() {
            let fin_only =
                self.fin_seq == Some(end.wrapping_sub(1)) && end.wrapping_sub(1) == self.copied_seq;
            if !after(end, self.copied_seq) || fin_only {
                self.rmem_alloc -= ts;
                self.inq.pop_front();
                if fin_only {
                    self.copied_seq = end;
                }
            } else {
                break;
            }
        }
        n as u64
    }

    /// `tcp_sequence`: is the segment at least partly in the window?
    pub fn sequence_ok(&self, seq: u32, end_seq: u32) -> bool {
        !before(end_seq, self.rcv_wup)
            && !after(seq, self.rcv_nxt.wrapping_add(self.receive_window()))
    }

    pub fn schedule_ack(&mut self) {
        self.ack_pending |= ACK_SCHED;
    }

    pub fn in_pingpong(&self) -> bool {
        self.pingpong >= TCP_PINGPONG_THRESH
    }

    pub fn enter_pingpong(&mut self) {
        self.pingpong = TCP_PINGPONG_THRESH;
    }

    pub fn exit_pingpong(&mut self) {
        self.pingpong = 0;
    }

    pub fn inc_pingpong(&mut self) {
        self.pingpong = self.pingpong.saturating_add(1);
    }

    /// `tcp_in_quickack_mode`.
    pub fn in_quickack_mode(&self) -> bool {
        self.quick > 0 && !self.in_pingpong()
    }

    /// `tcp_incr_quickack`.
    pub(in crate::tcp) fn incr_quickack(&mut self, max: u32) {
        let mut q = self.rcv_wnd / (2 * self.rcv_mss.max(1));
        if q == 0 {
            q = 2;
        }
        q = q.min(max);
        if q > self.quick {
            self.quick = q;
        }
    }

    /// `tcp_enter_quickack_mode`.
    pub fn enter_quickack_mode(&mut self, max: u32) {
        self.incr_quickack(max);
        self.exit_pingpong();
        self.ato = TCP_ATO_MIN;
    }

    /// `tcp_dec_quickack_mode` when an ACK leaves.
    pub fn dec_quickack_mode(&mut self) {
        if self.quick > 0 {
            let pkts = match self.profile {
                CcProfile::Lab2019 => 1,
                CcProfile::Modern => (self.ack_pending & ACK_SCHED != 0) as u32,
            };
            if pkts >= self.quick {
                self.quick = 0;
                self.ato = TCP_ATO_MIN;
            } else {
                self.quick -= pkts;
            }
        }
    }

    /// Memory the skb being processed, of `len` payload bytes, is charged.
    pub fn skb_truesize(&self, len: u32) -> u32 {
        if self.skb_gso_size > 0 {
            rx_truesize_gso(len)
        } else {
            rx_truesize(len)
        }
    }

    /// `tcp_measure_rcv_mss` (tcp_input.c): an aggregate tells the peer's MSS
    /// by its `gso_size`, a plain skb by its length; [modern] a new MSS
    /// re-measures `scaling_ratio` (len/truesize) and, if the ratio changed,
    /// moves the clamp with `tcp_set_window_clamp` (6.18).
    pub(in crate::tcp) fn measure_rcv_mss(
        &mut self,
        skb_len: u32,
        truesize: u32,
        flags: u8,
        hdr_len: u32,
    ) {
        let lss = self.last_seg_size;
        self.last_seg_size = 0;
        let len = if self.skb_gso_size > 0 {
            self.skb_gso_size
        } else {
            skb_len
        };
        if len >= self.rcv_mss {
            if self.profile == CcProfile::Modern && len != self.rcv_mss {
                let old_ratio = self.scaling_ratio;
                let v = ((skb_len as u64) << 8) / truesize as u64;
                self.scaling_ratio = (v as u32).clamp(1, 255);
                // only a new ratio re-derives the clamp from sk_rcvbuf: an
                // unchanged one leaves init_buffer_space's one-segment
                // reservation and rcv_ssthresh alone
                if self.scaling_ratio != old_ratio {
                    self.set_window_clamp(self.full_space().max(0) as u32);
                    if self.window_clamp < self.space {
                        self.space = self.window_clamp;
                    }
                }
            }
            self.rcv_mss = len.min(self.advmss);
            // [modern] a full segment with PSH likely ends a write: let
            // tcp_cleanup_rbuf ACK at once when the reader drains it
            if self.profile == CcProfile::Modern && flags & tcp_flags::PSH != 0 {
                self.ack_pending |= ACK_PUSHED;
            }
        } else {
            let len = len + hdr_len;
            if len >= TCP_MSS_DEFAULT + 20
                || (len >= TCP_MIN_MSS + 20
                    && flags & (tcp_flags::FIN | tcp_flags::SYN | tcp_flags::PSH) == 0)
            {
                let len = len - hdr_len;
                self.last_seg_size = len;
                if len == lss {
                    self.rcv_mss = len;
                    return;
                }
            }
            if self.ack_pending & ACK_PUSHED != 0 {
                self.ack_pending |= ACK_PUSHED2;
            }
            self.ack_pending |= ACK_PUSHED;
        }
    }

    /// `tcp_set_window_clamp` (tcp.c) for a non-zero `val`: a shrinking
    /// clamp pulls `rcv_ssthresh` down with it (`__tcp_adjust_rcv_ssthresh`,
    /// no reserved memory here), a growing one lets it reach the window
    /// already offered; an unchanged clamp changes nothing.
    fn set_window_clamp(&mut self, val: u32) {
        let new = val.max(SOCK_MIN_RCVBUF / 2);
        if new == self.window_clamp {
            return;
        }
        if new < self.window_clamp {
            self.rcv_ssthresh = self.rcv_ssthresh.min(new);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(new));
        }
        self.window_clamp = new;
    }

    /// `tcp_rcv_rtt_update`.
    pub(in crate::tcp) fn rcv_rtt_update(&mut self, sample: u32, win_dep: bool) {
        let old = self.rcv_rtt_us;
        let m = sample << 3;
        let new = if old == 0 || m < old {
            m
        } else {
            if win_dep {
                return;
            }
            if self.rcv_nxt != self.copied_seq {
                return;
            }
            old - (old >> 3) + sample
        };
        self.rcv_rtt_us = new;
    }

    /// `tcp_rcv_rtt_measure`: one sample per window without timestamps.
    pub(in crate::tcp) fn rcv_rtt_measure(&mut self, now_us: u64) {
        if self.rcv_rtt_time != 0 {
            if before(self.rcv_nxt, self.rcv_rtt_seq) {
                return;
            }
            let d = now_us.saturating_sub(self.rcv_rtt_time).max(1) as u32;
            self.rcv_rtt_update(d, true);
        }
        self.rcv_rtt_seq = self.rcv_nxt.wrapping_add(self.rcv_wnd);
        self.rcv_rtt_time = now_us;
    }

    /// `__tcp_grow_window`.
    fn grow_window_slow(&self, len: u32, truesize: u32) -> u32 {
        let mut ts = self.win_from_space(truesize as i64) >> 1;
        let mut window = self.win_from_space(self.rmem2 as i64) >> 1;
        while self.rcv_ssthresh as i64 <= window {
            if ts <= len as i64 {
                return 2 * self.rcv_mss;
            }
            ts >>= 1;
            window >>= 1;
        }
        0
    }

    /// `tcp_grow_window`: open `rcv_ssthresh` as well-sized data arrives.
    pub(in crate::tcp) fn grow_window(&mut self, len: u32, truesize: u32) {
        let incr_for = |r: &Receiver| {
            if r.win_from_space(truesize as i64) <= len as i64 {
                2 * r.advmss
            } else {
                r.grow_window_slow(len, truesize)
            }
        };
        match self.profile {
            CcProfile::Lab2019 => {
                if self.rcv_ssthresh < self.window_clamp
                    && (self.rcv_ssthresh as i64) < self.tcp_space()
                {
                    let incr = incr_for(self);
                    if incr > 0 {
                        let incr = incr.max(2 * len);
                        self.rcv_ssthresh = (self.rcv_ssthresh + incr).min(self.window_clamp);
                        self.quick |= 1;
                    }
                }
            }
            CcProfile::Modern => {
                let room =
                    (self.window_clamp as i64).min(self.tcp_space()) - self.rcv_ssthresh as i64;
                if room <= 0 {
                    return;
                }
                let incr = incr_for(self);
                if incr > 0 {
                    let incr = incr.max(2 * len) as i64;
                    self.rcv_ssthresh += room.min(incr) as u32;
                    self.quick |= 1;
                }
            }
        }
    }

    /// `tcp_dsack_set`.
    pub(in crate::tcp) fn dsack_set(&mut self, sack_ok: bool, seq: u32, end_seq: u32) {
        if sack_ok {
            self.dsack = true;
            self.dup_sack = (seq, end_seq);
        }
    }

    /// `tcp_dsack_extend`.
    pub(in crate::tcp) fn dsack_extend(&mut self, sack_ok: bool, seq: u32, end_seq: u32) {
        if !self.dsack {
            self.dsack_set(sack_ok, seq, end_seq);
        } else {
            sack_extend(&mut self.dup_sack, seq, end_seq);
        }
    }

    /// `tcp_sack_remove`: drop blocks `rcv_nxt` has passed.
    pub(in crate::tcp) fn sack_remove(&mut self) {
        if self.ooo.is_empty() {
            self.num_sacks = 0;
            return;
        }
        let mut i = 0;
        while i < self.num_sacks {
            if !before(self.rcv_nxt, self.sacks[i].0) {
                for j in i + 1..self.num_sacks {
                    self.sacks[j - 1] = self.sacks[j];
                }
                self.num_sacks -= 1;
                continue;
            }
            i += 1;
        }
    }

    /// `tcp_sack_maybe_coalesce`.
    fn sack_maybe_coalesce(&mut self) {
        let mut i = 1;
        while i < self.num_sacks {
            let (s, e) = self.sacks[i];
            if sack_extend(&mut self.sacks[0], s, e) {
                self.num_sacks -= 1;
                for j in i..self.num_sacks {
                    self.sacks[j] = self.sacks[j + 1];
                }
                continue;
            }
            i += 1;
        }
    }

    /// `tcp_sack_new_ofo_skb`; returns true if a compressed ACK must go
    /// out first (`tcp_sack_compress_send_ack`).
    pub(in crate::tcp) fn sack_new_ofo(&mut self, seq: u32, end_seq: u32) -> bool {
        let mut flush = false;
        if self.num_sacks == 0 {
            self.sacks[0] = (seq, end_seq);
            self.num_sacks = 1;
            return false;
        }
        for i in 0..self.num_sacks {
            if sack_extend(&mut self.sacks[i], seq, end_seq) {
                if i >= TCP_SACK_BLOCKS_EXPECTED {
                    flush = true;
                }
                // rotate this block to the front
                let b = self.sacks[i];
                for j in (1..=i).rev() {
                    self.sacks[j] = self.sacks[j - 1];
                }
                self.sacks[0] = b;
                if self.num_sacks > 1 {
                    self.sack_maybe_coalesce();
                }
                return flush;
            }
        }
        if self.num_sacks >= TCP_SACK_BLOCKS_EXPECTED {
            flush = true;
        }
        let mut n = self.num_sacks;
        if n >= 4 {
            n -= 1;
            self.num_sacks -= 1;
        }
        for j in (1..=n).rev() {
            self.sacks[j] = self.sacks[j - 1];
        }
        self.sacks[0] = (seq, end_seq);
        self.num_sacks += 1;
        flush
    }

    /// Insert `[seq, end)` into the out-of-order queue (`tcp_data_queue_ofo`
    /// placement): overlaps produce D-SACKs; returns false if nothing new.
    pub(in crate::tcp) fn ofo_insert(
        &mut self,
        sack_ok: bool,
        seq: u32,
        end: u32,
        truesize: u32,
        fin: bool,
    ) -> bool {
        // fast path: append after the last run
        if let Some(last) = self.ooo.back_mut() {
            if last.end == seq {
                last.end = end;
                last.truesize += truesize;
                last.fin |= fin;
                self.rmem_alloc += truesize;
                return true;
            }
            if after(seq, last.end) {
                self.ooo.push_back(OooRun {
                    seq,
                    end,
                    truesize,
                    fin,
                });
                self.rmem_alloc += truesize;
                return true;
            }
        } else {
            self.ooo.push_back(OooRun {
                seq,
                end,
                truesize,
                fin,
            });
            self.rmem_alloc += truesize;
            return true;
        }
        // general case: find the runs it touches
        let i = self.ooo.partition_point(|r| before(r.end, seq));
        if i < self.ooo.len() {
            let r = self.ooo[i];
            if !after(r.seq, seq) && !before(r.end, end) {
                // all the bits are present
                self.dsack_set(sack_ok, seq, end);
                return false;
            }
        }
        let mut new = OooRun {
            seq,
            end,
            truesize,
            fin,
        };
        let mut j = i;
        while j < self.ooo.len() && !after(self.ooo[j].seq, end) {
            let r = self.ooo[j];
            // the overlap is duplicate data
            let os = seq_max(r.seq, seq);
            let oe = seq_min(r.end, end);
            if before(os, oe) {
                self.dsack_extend(sack_ok, os, oe);
            }
            new.seq = seq_min(new.seq, r.seq);
            new.end = seq_max(new.end, r.end);
            new.truesize += r.truesize;
            new.fin |= r.fin;
            j += 1;
        }
        self.ooo.drain(i..j);
        self.ooo.insert(i, new);
        self.rmem_alloc += truesize;
        true
    }
}

/// `tcp_sack_extend`.
fn sack_extend(sp: &mut (u32, u32), seq: u32, end_seq: u32) -> bool {
    if !after(seq, sp.1) && !after(sp.0, end_seq) {
        if before(seq, sp.0) {
            sp.0 = seq;
        }
        if after(end_seq, sp.1) {
            sp.1 = end_seq;
        }
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::harness::cfg;
    use super::*;

    fn test_receiver() -> Receiver {
        let c = cfg("cubic");
        let mut r = Receiver::new(&c, 87_380, false, 1460);
        r.select_initial_window(&c, 1460, true);
        r.rcv_nxt = 1000;
        r.rcv_wup = 1000;
        r.copied_seq = 1000;
        r
    }

    #[test]
    fn initial_window_and_scale_follow_the_buffer_sizes() {
        let r = test_receiver();
        // before the connection is established the clamp is the largest
        // window the scale can express
        assert_eq!(
            (r.rcv_wnd, r.rcv_wscale, r.window_clamp),
            (29_200, 7, 65_535 << 7)
        );
        // tcp_rmem[2] = 52428800 → wscale 10; 65535 → no scaling needed
        for (rmem2, ws) in [(52_428_800u32, 10u8), (6_291_456, 7), (65_535, 0)] {
            let mut c = cfg("cubic");
            c.rmem[2] = rmem2;
            c.rmem_max = 0;
            let mut r = Receiver::new(&c, 87_380, false, 1460);
            r.select_initial_window(&c, 1460, true);
            assert_eq!(r.rcv_wscale, ws, "{rmem2}");
        }
    }

    #[test]
    fn out_of_order_arrivals_build_sack_blocks_most_recent_first() {
        let mut r = test_receiver();
        let mss = 1448;
        let seg = |k: u32| (1000 + k * mss, 1000 + (k + 1) * mss);
        // segments 2, 3 (one run), 6, 9 arrive; 0 is missing
        for k in [2, 3, 6, 9] {
            let (s, e) = seg(k);
            assert!(r.ofo_insert(true, s, e, rx_truesize(mss), false));
            r.sack_new_ofo(s, e);
        }
        assert_eq!(r.num_sacks, 3);
        assert_eq!(r.sacks[0], seg(9));
        assert_eq!(r.sacks[1], seg(6));
        assert_eq!(r.sacks[2], (seg(2).0, seg(3).1));
        // 7 joins 6's block, which moves to the front
        let (s, e) = seg(7);
        r.ofo_insert(true, s, e, rx_truesize(mss), false);
        r.sack_new_ofo(s, e);
        assert_eq!(r.sacks[0], (seg(6).0, seg(7).1));
        assert_eq!(r.sacks[1], seg(9));
        // a duplicate of 3 is reported as a D-SACK, first in the option
        assert!(!r.ofo_insert(true, seg(3).0, seg(3).1, rx_truesize(mss), false));
        let mut h = TcpHeader::default();
        r.write_sack_blocks(&mut h);
        assert_eq!(h.sack_len, 3);
        assert_eq!(h.sack[0], seg(3));
        assert_eq!(h.sack[1], (seg(6).0, seg(7).1));
        // once sent, the D-SACK is gone
        r.write_sack_blocks(&mut h);
        assert_eq!(h.sack[0], (seg(6).0, seg(7).1));
        assert_eq!(r.rmem_alloc, 5 * rx_truesize(mss));
    }

    #[test]
    fn only_a_new_scaling_ratio_moves_the_window_clamp() {
        // modern profile, 128 KiB buffer (tcp_rmem[1]), advmss 1460
        let c = TcpConfig::for_profile(CcProfile::Modern);
        let mut r = Receiver::new(&c, 131_072, false, 1460);
        r.select_initial_window(&c, 1448, true);
        r.init_buffer_space(0);
        // full space 131072·128/256 = 65536; the SYN window 45·1448 = 65160;
        // one segment reserved: clamp 65536 − 1460 = 64076
        assert_eq!(
            (r.rcv_wnd, r.window_clamp, r.rcv_ssthresh),
            (65_160, 64_076, 64_076)
        );
        // a 1152-byte segment (truesize 2048 + 256) has the default ratio
        // 1152·256/2304 = 128: the clamp keeps its reservation
        r.measure_rcv_mss(1152, rx_truesize(1152), tcp_flags::ACK, 32);
        assert_eq!((r.scaling_ratio, r.rcv_mss), (128, 1152));
        assert_eq!((r.window_clamp, r.rcv_ssthresh), (64_076, 64_076));
        // a 1448-byte one: 1448·256/2304 = 160, the clamp becomes
        // 131072·160/256 = 81920 and rcv_ssthresh the offered 65160
        r.measure_rcv_mss(1448, rx_truesize(1448), tcp_flags::ACK, 32);
        assert_eq!((r.scaling_ratio, r.rcv_mss), (160, 1448));
        assert_eq!((r.window_clamp, r.rcv_ssthresh), (81_920, 65_160));
    }

    #[test]
    fn the_offered_window_follows_free_space_and_closes_below_a_sixteenth() {
        let mut r = test_receiver();
        r.init_buffer_space(0);
        assert_eq!((r.window_clamp, r.rcv_ssthresh), (42_230, 29_200));
        r.rcv_ssthresh = 42_230;
        assert_eq!(
            r.select_window_raw(),
            42_240,
            "rcv_ssthresh rounded up to 128"
        );
        // unread data: less than half the window free → the free space,
        // rounded down to the scale unit
        r.rmem_alloc = 60_000;
        assert_eq!(r.select_window_raw(), 13_568);
        // below 1/16 of the full window: zero window
        r.rmem_alloc = 87_380 - 2 * 2000;
        assert_eq!(r.select_window_raw(), 0);
    }
}
