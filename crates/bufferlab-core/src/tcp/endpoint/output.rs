//! Size: tcp_output.c's send path in one file: `tcp_write_xmit`'s checks (Nagle,
//! TSO deferral, pacing, TSQ, cwnd validation) read and change one socket state in one pass.
//!
//! The send path, net/ipv4/tcp_output.c (docs/semantics/tcp.md §6, §12): `tcp_write_xmit`
//! with Nagle, TSO autosizing and deferral (`tcp_tso_autosize`,
//! `tcp_tso_should_defer`), EDT pacing, `__tcp_transmit_skb`,
//! `__tcp_retransmit_skb`, SYN/ACK construction, window selection, cwnd
//! validation (RFC 7661 as Linux does it), the pacing rate, and TCP Small
//! Queues (`tcp_small_queue_check`, `tcp_wfree`, the TSQ handler;
//! docs/semantics/tcp.md §6.4).

use super::{Segment, TcpEndpoint, TcpState};
use crate::packet::{tcp_flags, TcpHeader, ECN_ECT0, SKB_TRUESIZE_OVERHEAD};
use crate::tcp::accecn::{self, EcnMode};
use crate::tcp::cc::{CaEvent, CaState, CcProfile};
use crate::tcp::config::TCPOLEN_TSTAMP_ALIGNED;
use crate::tcp::recovery::{Seg, RETRANS};
use crate::tcp::rtt::TCP_RTO_MIN;
use crate::tcp::seq::{after, before};
use crate::tcp::timers::TcpTimer;
use crate::time::SimTime;

/// `sk_pacing_shift` default: TSO skbs hold ~1 ms (2^-10 s) of the pacing rate.
const SK_PACING_SHIFT: u32 = 10;
/// `net.ipv4.tcp_tso_rtt_log` default \[modern\].
const TCP_TSO_RTT_LOG: u32 = 9;
/// `net.ipv4.tcp_tso_win_divisor` default.
const TCP_TSO_WIN_DIVISOR: u32 = 3;
/// `GSO_MAX_SEGS` (`sk_gso_max_segs` of a veth).
pub(super) const GSO_MAX_SEGS: u32 = 65535;

/// `tcp_small_queue_check`'s limit on `sk_wmem_alloc` before an skb of
/// `truesize` bytes may go (docs/semantics/tcp.md §6.4): two such skbs or about
/// 1 ms at the pacing rate (`pacing_rate >> sk_pacing_shift`), whichever is
/// more; at most `tcp_limit_output_bytes` unless the socket is paced
/// (`sk_pacing_status != SK_PACING_NONE`: BBR, or an fq); doubled `factor`
/// times (1 for retransmissions).
pub fn tsq_limit(
    truesize: u32,
    pacing_rate: u64,
    paced: bool,
    limit_output_bytes: u32,
    factor: u32,
) -> u64 {
    let mut limit = (2 * truesize as u64).max(pacing_rate >> SK_PACING_SHIFT);
    if !paced {
        limit = limit.min(limit_output_bytes as u64);
    }
    limit << factor
}
impl TcpEndpoint {
    // =====================================================================
    // send path (net/ipv4/tcp_output.c)
    // =====================================================================

    /// `tcp_data_snd_check`: push pending data, then `tcp_check_space`.
    pub(in crate::tcp) fn data_snd_check(&mut self) {
        self.push_pending_frames(false);
        self.check_space();
    }

    /// `__tcp_push_pending_frames`.
    pub(in crate::tcp) fn push_pending_frames(&mut self, nagle_off: bool) {
        if matches!(
            self.state,
            TcpState::Closed | TcpState::SynSent | TcpState::SynReceived | TcpState::TimeWait
        ) {
            return;
        }
        if self.write_xmit(nagle_off, 0) {
            self.check_probe_timer();
        }
    }

    /// `tcp_check_probe_timer`.
    pub(super) fn check_probe_timer(&mut self) {
        if self.sb.packets_out == 0 && self.timers.pending_xmit().is_none() {
            let base = self.probe0_base();
            self.reset_xmit_timer(TcpTimer::Probe0, base, true);
        }
    }

    pub(super) fn probe0_base(&self) -> u32 {
        self.icsk_rto.max(TCP_RTO_MIN)
    }

    /// An `fq` qdisc paces this socket from now on (sch_fq.c `fq_classify`
    /// stores `SK_PACING_FQ` in `sk_pacing_status`; it stays): every
    /// congestion control is paced at `sk_pacing_rate` through the EDT stamps
    /// `tcp_update_skb_after_send` advances. TCP's own pacing timer is no
    /// longer needed ([`TcpEndpoint::needs_internal_pacing`]): skbs leave at
    /// once with their stamps and fq holds them until then, TCP Small Queues
    /// bounding what waits there.
    pub fn set_pacing_fq(&mut self) {
        self.cs.pacing_fq = true;
        self.cs.pacing_status_needed = true;
    }

    /// The stamp `__tcp_transmit_skb` gives an skb it sends now:
    /// `tcp_wstamp_ns`, never before the clock.
    pub(super) fn edt(&self) -> SimTime {
        SimTime::from_nanos(self.wstamp_ns.max(self.now.as_nanos()))
    }

    /// `tcp_skb_timestamp_ts` of an skb sent now: [`Self::edt`] on the TS
    /// clock (ms, the same base as [`TcpEndpoint::ts_now`]).
    pub(super) fn edt_ts(&self) -> u32 {
        (self.tcp_clock_us(self.edt().as_nanos()) / 1000) as u32
    }

    /// `tcp_needs_internal_pacing`: the congestion control asked for pacing
    /// (`SK_PACING_NEEDED`, BBR) and no fq paces the socket.
    pub fn needs_internal_pacing(&self) -> bool {
        self.cs.pacing_status_needed && !self.cs.pacing_fq
    }

    /// Is the socket paced by an fq qdisc (`SK_PACING_FQ`)?
    pub fn paced_by_fq(&self) -> bool {
        self.cs.pacing_fq
    }

    /// Whether the host can hold this socket's skbs once TCP has sent them (a
    /// qdisc or a finite-rate device on the way out): from then on each data
    /// skb charges its truesize until the host gives it back, and TCP Small
    /// Queues can stop transmissions. Off (the default) the host hands every
    /// skb on at once (a veth with `noqueue` orphans it in `veth_xmit`), so
    /// nothing is ever held.
    pub fn set_tsq(&mut self, on: bool) {
        self.tsq_on = on;
    }

    /// `sk_wmem_alloc` (truesize of this socket's skbs still in its host).
    pub fn wmem_alloc(&self) -> u64 {
        self.wmem_alloc
    }

    /// `tcp_wfree`: the host gave back `bytes` of truesize (an skb left it or
    /// was freed); a throttled socket's TSQ handler becomes due
    /// ([`TcpEndpoint::tsq_handler`]). Negative `bytes` charge more (the
    /// segments of a split aggregate each carry an skb's overhead).
    pub fn tsq_account(&mut self, bytes: i64) {
        if bytes < 0 {
            self.wmem_alloc += bytes.unsigned_abs();
            return;
        }
        self.wmem_alloc = self.wmem_alloc.saturating_sub(bytes as u64);
        if self.tsq_throttled {
            self.tsq_throttled = false;
            self.tsq_queued = true;
        }
    }

    /// The TSQ handler (`tcp_tsq_handler` → `tcp_tsq_write`), if a release
    /// found the socket throttled: retransmit what is lost and push new data.
    /// Returns whether it ran.
    pub fn tsq_handler(&mut self, now: SimTime) -> bool {
        if !self.tsq_queued {
            return false;
        }
        self.tsq_queued = false;
        self.set_clock(now);
        self.tsq_write();
        true
    }

    /// `tcp_small_queue_check`: does the socket hold too much in its host to
    /// send an skb of `truesize` bytes now? Then it is throttled until a
    /// release. An empty retransmission queue, or one holding only the last
    /// skb sent, never waits (TX completions may come late).
    pub(in crate::tcp) fn small_queue_check(&mut self, truesize: u32, factor: u32) -> bool {
        if !self.tsq_on {
            return false;
        }
        let limit = tsq_limit(
            truesize,
            self.cs.pacing_rate,
            self.cs.pacing_status_needed,
            self.cfg.limit_output_bytes,
            factor,
        );
        if self.wmem_alloc <= limit
            || self.sb.packets_out == 0
            || !before(self.snd_una, self.last_skb_seq)
        {
            return false;
        }
        self.tsq_throttled = true;
        true
    }

    /// `tcp_pacing_check`: internal pacing holds the next packet until its
    /// earliest departure time, arming the pacing timer; with fq pacing the
    /// packet goes now and fq holds it until its stamp.
    pub(in crate::tcp) fn pacing_check(&mut self) -> bool {
        if !self.needs_internal_pacing() {
            return false;
        }
        if self.wstamp_ns <= self.now.as_nanos() {
            return false;
        }
        if self.timers.get(TcpTimer::Pacing).is_none() {
            self.timers
                .set(TcpTimer::Pacing, SimTime::from_nanos(self.wstamp_ns));
        }
        true
    }

    /// `tcp_cwnd_test`.
    pub(super) fn cwnd_test(&self) -> u32 {
        let in_flight = self.in_flight();
        let cwnd = self.cwnd();
        if in_flight >= cwnd {
            return 0;
        }
        let half = (cwnd >> 1).max(1);
        half.min(cwnd - in_flight)
    }

    /// `tcp_write_xmit`: send skbs of the write queue while cwnd, the
    /// peer's window, Nagle, TSO deferral and pacing allow. `push_one`: 0 =
    /// normal, 1 = the head skb only, without TSO deferral (`tcp_push_one`,
    /// sendmsg.rs), 2 = one segment ignoring cwnd (loss probe). Returns true when
    /// nothing is in flight but data waits (zero window).
    pub(in crate::tcp) fn write_xmit(&mut self, nagle_off: bool, push_one: u8) -> bool {
        let mut sent = 0u32;
        let mut is_cwnd_limited = false;
        let mss = self.mss_cache;
        let max_segs = self.tso_segs();
        loop {
            if self.unsent_seq() == 0 {
                break;
            }
            if self.pacing_check() {
                break;
            }
            // tcp_cwnd_test (a loss probe may exceed cwnd by one)
            let mut cwnd_quota = self.cwnd_test();
            if cwnd_quota == 0 {
                if push_one != 2 {
                    break;
                }
                cwnd_quota = 1;
            }
            // the skb at the head of the unsent queue: tcp_sendmsg cut the
            // stream at size_goal = tso_segs × mss
            let data_left = self.unsent_bytes();
            let skb_len = data_left.min(max_segs * mss);
            let is_tail = skb_len == data_left;
            let fin = self.fin_queued && is_tail;
            // tcp_snd_wnd_test: the first MSS must fit the peer's window
            let first = skb_len.min(mss);
            let end = self
                .snd_nxt
                .wrapping_add(first)
                .wrapping_add((fin && skb_len <= mss) as u32);
            if after(end, self.wnd_end()) {
                break;
            }
            let tso_segs = skb_len.div_ceil(mss.max(1));
            if tso_segs <= 1 {
                // tcp_nagle_test on the last (possibly partial) skb
                if is_tail && skb_len < mss && !fin && self.nagle_holds(skb_len, nagle_off) {
                    break;
                }
            } else if push_one == 0
                && self.tso_should_defer(skb_len, is_tail, max_segs, &mut is_cwnd_limited)
            {
                break;
            }
            let len = if tso_segs > 1 {
                self.mss_split_point(skb_len, is_tail, cwnd_quota.min(max_segs), nagle_off)
            } else {
                skb_len
            };
            if self.small_queue_check(len + SKB_TRUESIZE_OVERHEAD, 0) {
                break;
            }
            if len == 0 && !fin {
                break;
            }
            sent += self.send_new_skb(len, fin && len == skb_len);
            if push_one != 0 {
                break;
            }
        }
        is_cwnd_limited |= self.in_flight() >= self.cwnd();
        if sent > 0 || is_cwnd_limited {
            self.cwnd_validate(is_cwnd_limited);
        }
        if sent > 0 {
            if self.in_cwnd_reduction() {
                self.prr.on_sent(sent);
            }
            if push_one != 2 {
                self.schedule_loss_probe(false);
            }
            return false;
        }
        self.sb.packets_out == 0 && self.unsent_seq() > 0
    }

    /// `tcp_nagle_check` for a sub-MSS tail: hold it while earlier small
    /// segments are unacknowledged (Minshall's variant).
    pub(super) fn nagle_holds(&self, partial: u32, nagle_off: bool) -> bool {
        if partial == 0 || nagle_off || self.cfg.nodelay {
            return false;
        }
        let minshall = after(self.snd_sml, self.snd_una) && !after(self.snd_sml, self.snd_nxt);
        self.sb.packets_out > 0 && minshall
    }

    /// `tcp_tso_segs` / `tcp_tso_autosize` (docs/semantics/tcp.md §6.3): segments per TSO
    /// skb, about 1 ms of the pacing rate (`sk_pacing_shift` 10), at least
    /// the module's `min_tso_segs`, at most what `gso_max_size` holds.
    /// \[lab2019\] caps the bytes at `gso_max_size − 1 − MAX_TCP_HEADER`;
    /// \[modern\] (≥ 5.18) adds `gso_max_size >> (min_rtt_us >> 9)` for short
    /// RTTs (`tcp_tso_rtt_log` 9) and caps at `gso_max_size`. 1 with GSO off.
    pub(in crate::tcp) fn tso_segs(&self) -> u32 {
        let gso_max = self.cfg.gso_max_size as u64;
        if gso_max == 0 {
            return 1;
        }
        // tcp_tso_segs: a module's own burst size (Prague)
        if let Some(segs) = self.cc.tso_segs(&self.cs) {
            return segs.min(GSO_MAX_SEGS);
        }
        let mut bytes = self.cs.pacing_rate >> SK_PACING_SHIFT;
        match self.cfg.profile {
            CcProfile::Lab2019 => bytes = bytes.min(gso_max - 1 - self.cfg.max_tcp_header as u64),
            CcProfile::Modern => {
                let r = self.min_rtt_us() >> TCP_TSO_RTT_LOG;
                if r < 32 {
                    bytes = bytes.saturating_add(gso_max >> r);
                }
                bytes = bytes.min(gso_max);
            }
        }
        let segs = (bytes / self.mss_cache.max(1) as u64) as u32;
        segs.max(self.cc.min_tso_segs(&self.cs)).min(GSO_MAX_SEGS)
    }

    /// `tcp_tso_should_defer` (docs/semantics/tcp.md §6.1 step 5): hold back a TSO skb
    /// that cannot be sent whole when an ACK that frees more is due soon.
    pub(super) fn tso_should_defer(
        &self,
        skb_len: u32,
        is_tail: bool,
        max_segs: u32,
        is_cwnd_limited: &mut bool,
    ) -> bool {
        if self.ca_state() as u8 >= CaState::Recovery as u8 {
            return false;
        }
        // only right after a transmission: \[lab2019\] within the same
        // jiffy (lsndtime), \[modern\] within 1 ms of the last departure
        let recent = match self.cfg.profile {
            CcProfile::Lab2019 => self.jiffies() == self.lsndtime,
            CcProfile::Modern => self.now.as_nanos() <= self.wstamp_ns + 1_000_000,
        };
        if !recent {
            return false;
        }
        let in_flight = self.in_flight();
        let mss = self.mss_cache;
        let send_win = self.wnd_end().wrapping_sub(self.snd_nxt);
        let cong_win = self.cwnd().saturating_sub(in_flight) * mss;
        let limit = send_win.min(cong_win);
        if limit >= max_segs * mss {
            return false; // a full-sized TSO skb can go
        }
        if !is_tail && limit >= skb_len {
            return false; // this skb will not grow: send it whole
        }
        let chunk = self.snd_wnd.min(self.cwnd() * mss) / TCP_TSO_WIN_DIVISOR;
        if limit >= chunk {
            return false;
        }
        // defer only if the ACK of the head is due soon: \[lab2019\] the head
        // left at least srtt/2 ago; \[modern\] (6.18, "tcp: fix
        // tcp_tso_should_defer() vs large RTT") it is expected within
        // min(srtt/2, 1 ms), so a long path is not held waiting for ACKs
        let Some(head) = self.sb.q.front() else {
            return false;
        };
        let srtt_us = (self.rtt.srtt_us >> 3) as i64;
        let ack_due_soon = match self.cfg.profile {
            CcProfile::Lab2019 => self.now_us.saturating_sub(head.xmit_us) as i64 >= srtt_us / 2,
            CcProfile::Modern => {
                let how_far = head.xmit_us as i64 + srtt_us - self.now_us as i64;
                how_far <= (srtt_us / 2).min(1000)
            }
        };
        if !ack_due_soon {
            return false;
        }
        if cong_win < send_win && cong_win <= skb_len {
            *is_cwnd_limited = true;
        }
        true
    }

    /// `tcp_mss_split_point`: bytes of the head skb to send now, at most
    /// `max_segs` segments, within the peer's window, and without a sub-MSS
    /// tail Nagle would hold.
    pub(super) fn mss_split_point(
        &self,
        skb_len: u32,
        is_tail: bool,
        max_segs: u32,
        nagle_off: bool,
    ) -> u32 {
        let mss = self.mss_cache;
        let window = self.wnd_end().wrapping_sub(self.snd_nxt);
        let max_len = mss * max_segs;
        if max_len <= window && !is_tail {
            return max_len.min(skb_len);
        }
        let needed = skb_len.min(window);
        if max_len <= needed {
            return max_len;
        }
        let partial = needed % mss;
        if self.nagle_holds(partial, nagle_off) {
            return needed - partial;
        }
        needed
    }

    /// Header common to every segment we send (`__tcp_transmit_skb`,
    /// `tcp_established_options`, `tcp_select_window`).
    pub(in crate::tcp) fn build_header(&mut self, seq: u32, flags: u8) -> TcpHeader {
        let mut h = TcpHeader {
            seq,
            ack: if flags & tcp_flags::ACK != 0 {
                self.rcv.rcv_nxt
            } else {
                0
            },
            flags,
            ..TcpHeader::default()
        };
        let syn = flags & tcp_flags::SYN != 0;
        if syn {
            // RFC 1323: SYN windows are never scaled
            h.window = self.rcv.rcv_wnd.min(65535) as u16;
            h.mss = self.advmss as u16;
            let active = flags & tcp_flags::ACK == 0;
            if (active && self.cfg.window_scaling) || (!active && self.wscale_ok) {
                h.wscale = Some(self.rcv.rcv_wscale);
            }
            h.sack_ok = if active { self.cfg.sack } else { self.sack_ok };
            h.ts = if active {
                self.cfg.timestamps
            } else {
                self.ts_ok
            };
        } else {
            h.window = self.select_window();
            h.ts = self.ts_ok;
            if self.sack_ok {
                self.rcv.write_sack_blocks(&mut h);
            }
        }
        if h.ts {
            // tcp_established_options / tcp_syn_options: the TS clock of
            // the skb's departure stamp (`tcp_skb_timestamp_ts`), which is
            // ahead of the clock while the socket is paced
            h.tsval = self.edt_ts().wrapping_add(self.tsoffset);
            h.tsecr = self.ts_recent;
        }
        if self.ecn_mode == EcnMode::AccEcn && !syn {
            self.accecn_header(&mut h);
        } else if self.rcv.demand_cwr && !syn {
            h.flags |= tcp_flags::ECE;
        }
        h
    }

    /// An AccECN connection's ACE and option on a segment after the SYNs
    /// (`tcp_ecn_send` → `tcp_accecn_set_ace`; `tcp_established_options`
    /// → `tcp_options_fit_accecn`; `tcp_options_write`).
    fn accecn_header(&mut self, h: &mut TcpHeader) {
        h.gso_accecn = true;
        if std::mem::take(&mut self.accecn_reflect) {
            // the handshake's last ACK reports the SYN-ACK's ECN field
            h.set_ace(accecn::reflector_ace(self.accecn.syn_ect_rcv));
        } else {
            let ace = self.accecn.take_ace();
            h.set_ace(ace);
        }
        let opt = self.cfg.ecn_option;
        let a = &self.accecn;
        let send = opt != 0
            && a.saw_opt != accecn::OPT_NOT_SEEN
            && (opt >= 3 || a.fail_mode & accecn::OPT_FAIL_SEND == 0)
            && (opt >= 2 || a.opt_demand > 0);
        if !send {
            return;
        }
        let mut size = if h.ts { TCPOLEN_TSTAMP_ALIGNED } else { 0 };
        if h.sack_len > 0 {
            size += 4 + 8 * h.sack_len as u32;
        }
        let mut sacks = h.sack_len as u32;
        let fit = accecn::fit_accecn(
            a.minlen as u32,
            accecn::MAX_TCP_OPTION_SPACE.saturating_sub(size),
            &mut sacks,
            None,
        );
        if let Some((fields, _)) = fit {
            h.sack_len = sacks as u8;
            h.accecn = a.option(fields, false);
            self.accecn.option_sent();
        }
    }

    /// Stage a segment for IP and do the bookkeeping every transmission
    /// shares (`tcp_event_ack_sent`, counters).
    pub(in crate::tcp) fn emit(&mut self, hdr: TcpHeader, payload_len: u32, ecn: u8) {
        if hdr.flags & tcp_flags::ACK != 0 {
            self.event_ack_sent();
        }
        self.emit_no_ack_event(hdr, payload_len, ecn);
    }

    /// [`Self::emit`] without `tcp_event_ack_sent` (DCTCP's special ACK).
    pub(in crate::tcp) fn emit_no_ack_event(&mut self, hdr: TcpHeader, payload_len: u32, ecn: u8) {
        self.segs_out = self.segs_out.wrapping_add(1);
        if self.gso_continue && self.append_to_skb(&hdr, payload_len, ecn) {
            return;
        }
        let mut skb = Segment::single(hdr, payload_len, ecn, self.mss_cache, self.edt());
        if self.tsq_on && payload_len > 0 {
            // skb_set_owner_w in __tcp_transmit_skb (pure ACKs are not counted)
            skb.truesize = payload_len + SKB_TRUESIZE_OVERHEAD;
            self.wmem_alloc += skb.truesize as u64;
        }
        self.out.push_back(skb);
    }

    /// Add the next segment to the skb at the back of `out` if it continues
    /// it: contiguous data, every earlier piece a full `gso_size`, same ECN
    /// codepoint, below the GSO segment cap. Flags a segmenting device would
    /// give the last piece (PSH, FIN) move to the aggregate; CWR stays with
    /// the first (net/ipv4/tcp_offload.c `tcp_gso_segment`).
    pub(super) fn append_to_skb(&mut self, hdr: &TcpHeader, payload_len: u32, ecn: u8) -> bool {
        let max_segs = self.tso_segs();
        let Some(skb) = self.out.back_mut() else {
            return false;
        };
        let continues = payload_len > 0
            && payload_len <= skb.gso_size
            && skb.payload_len == skb.gso_segs * skb.gso_size
            && skb.hdr.flags & (tcp_flags::SYN | tcp_flags::FIN) == 0
            && skb.hdr.seq.wrapping_add(skb.payload_len) == hdr.seq
            && skb.ecn == ecn
            && skb.gso_segs < max_segs;
        let mut charged = 0;
        if continues {
            skb.payload_len += payload_len;
            skb.gso_segs += 1;
            skb.hdr.flags |= hdr.flags & (tcp_flags::PSH | tcp_flags::FIN);
            skb.hdr.ack = hdr.ack;
            skb.hdr.window = hdr.window;
            if skb.truesize > 0 {
                skb.truesize += payload_len;
                charged = payload_len;
            }
        }
        self.wmem_alloc += charged as u64;
        continues
    }

    /// `tcp_event_data_sent`: a segment with payload (or a retransmission)
    /// leaves.
    pub(super) fn event_data_sent(&mut self) {
        if self.in_flight() == 0 {
            self.ca_event(CaEvent::TxStart);
        }
        let now = self.jiffies();
        self.lsndtime = now;
        if now.wrapping_sub(self.rcv.lrcvtime) < self.rcv.ato {
            self.rcv.inc_pingpong();
        }
    }

    /// `tcp_update_skb_after_send`: EDT pacing advance (docs/semantics/tcp.md §12).
    pub(super) fn update_after_send(&mut self, len: u32, prior_wstamp: u64) {
        if !self.cs.pacing_status_needed || self.data_segs_out < 10 {
            return;
        }
        let rate = self.cs.pacing_rate;
        if rate != u64::MAX && rate != 0 {
            let len_ns = len as u64 * 1_000_000_000 / rate;
            let credit = self.wstamp_ns.saturating_sub(prior_wstamp);
            self.wstamp_ns += len_ns - (len_ns / 2).min(credit);
        }
    }

    /// `tcp_wstamp_ns = max(tcp_wstamp_ns, clock)`; returns the prior value.
    pub(super) fn advance_wstamp(&mut self) -> u64 {
        let prior = self.wstamp_ns;
        self.wstamp_ns = self.wstamp_ns.max(self.now.as_nanos());
        prior
    }

    /// Send one skb of `len` new bytes (+FIN) at `snd_nxt`, cut into MSS
    /// pieces that leave as one aggregate (`tcp_transmit_skb` +
    /// `tcp_event_new_data_sent`; pacing advances once for the skb). Returns
    /// the segments sent (`tcp_skb_pcount`).
    pub(super) fn send_new_skb(&mut self, len: u32, fin: bool) -> u32 {
        self.last_skb_seq = self.snd_nxt;
        let prior_wstamp = self.advance_wstamp();
        let xmit_us = self.tcp_clock_us(self.wstamp_ns);
        let mss = self.mss_cache.max(1);
        let mut off = 0;
        let mut segs = 0;
        loop {
            let piece = (len - off).min(mss);
            let last = off + piece == len;
            self.gso_continue = segs > 0;
            self.send_new_segment(piece, fin && last, xmit_us);
            segs += 1;
            off += piece;
            if last {
                break;
            }
        }
        self.gso_continue = false;
        self.update_after_send(len, prior_wstamp);
        segs
    }

    /// One MSS piece of a new skb: header, scoreboard entry, timers.
    pub(super) fn send_new_segment(&mut self, len: u32, fin: bool, xmit_us: u64) {
        let seq = self.snd_nxt;
        let end_seq = seq.wrapping_add(len).wrapping_add(fin as u32);
        let mut flags = tcp_flags::ACK;
        if fin {
            flags |= tcp_flags::FIN;
        }
        if end_seq == self.write_seq && len > 0 {
            flags |= tcp_flags::PSH;
        }
        let mut hdr = self.build_header(seq, flags);
        // tcp_ecn_send: new data of a classic ECN connection is ECT(0) and
        // carries a queued CWR; a bare FIN is ECT only for a module that
        // needs ECN; on an AccECN connection every packet is ECT
        let mut ect = self.ect_always();
        if self.ecn_mode == EcnMode::Rfc3168 && len > 0 {
            ect = if self.cc.needs_ecn() {
                self.module_ect()
            } else {
                ECN_ECT0
            };
            if self.ecn_queue_cwr {
                self.ecn_queue_cwr = false;
                hdr.flags |= tcp_flags::CWR;
            }
        }
        if len > 0 {
            self.event_data_sent();
            self.data_segs_out = self.data_segs_out.wrapping_add(1);
            self.bytes_sent += len as u64;
        }
        self.mib.orig_data_sent += 1; // tcp_event_new_data_sent
        self.emit(hdr, len, ect);
        let tx = self.rate_on_sent(xmit_us);
        // tcp_event_new_data_sent
        self.snd_nxt = end_seq;
        let prior_packets = self.sb.packets_out;
        self.sb.push(Seg {
            seq,
            end_seq,
            sacked: 0,
            flags: if fin { tcp_flags::FIN } else { 0 },
            in_tsorted: true,
            xmit_us,
            tx,
        });
        if len < self.mss_cache {
            self.snd_sml = end_seq; // tcp_minshall_update
        }
        if prior_packets == 0
            || matches!(self.timers.pending_xmit(), Some((TcpTimer::LossProbe, _)))
        {
            self.rearm_rto();
        }
    }

    /// `tcp_retransmit_skb` for the `n` segments from `idx`: resend them as
    /// one skb and count them as retransmissions in flight
    /// (`SACKED_RETRANS`, `retrans_out`, the undo bookkeeping). Returns the
    /// segments sent (0 if none could be).
    pub(in crate::tcp) fn retransmit_seg(&mut self, idx: usize, n: usize) -> usize {
        self.retransmit_skb(idx, n, true)
    }

    /// `__tcp_retransmit_skb` of the one segment at `idx` (counted in
    /// `total_retrans`, marked `EVER_RETRANS`) without the scoreboard
    /// bookkeeping — what a tail loss probe does; false if it could not be
    /// sent (outside the peer's window).
    pub(in crate::tcp) fn retransmit_raw(&mut self, idx: usize) -> bool {
        self.retransmit_skb(idx, 1, false) > 0
    }

    /// Resend up to `n` segments from `idx` as one skb, with the
    /// retransmission bookkeeping if `count`. Like `__tcp_retransmit_skb`'s
    /// `len = cur_mss * segs` (net/ipv4/tcp_output.c), the skb takes the
    /// segments that fit the peer's window; they share one departure stamp
    /// and pacing advances once for their bytes (`tcp_update_skb_after_send`
    /// in `__tcp_transmit_skb`), so a paced sender's retransmission leaves as
    /// one aggregate as the kernel's does. Returns the segments sent: 0 if
    /// the first lies beyond a shrunk window (only the head may, as a
    /// zero-window probe).
    fn retransmit_skb(&mut self, idx: usize, n: usize, count: bool) -> usize {
        let wnd_end = self.wnd_end();
        let first = self.sb.q[idx];
        if wnd_end.wrapping_sub(first.seq) as i32 <= 0 && first.seq != self.snd_una {
            return 0;
        }
        let n = 1
            + (idx + 1..idx + n)
                .take_while(|&i| !after(self.sb.q[i].end_seq, wnd_end))
                .count();
        let prior_wstamp = self.advance_wstamp();
        let xmit_us = self.tcp_clock_us(self.wstamp_ns);
        let mut skb_len = 0;
        for i in idx..idx + n {
            self.gso_continue = i > idx;
            skb_len += self.retransmit_piece(i, xmit_us);
            if count {
                self.sb.q[i].sacked |= RETRANS;
                self.sb.retrans_out += 1;
                if self.retrans_stamp == 0 {
                    self.retrans_stamp = (xmit_us / 1000) as u32;
                }
                self.undo.on_retransmit();
            }
        }
        self.gso_continue = false;
        self.update_after_send(skb_len, prior_wstamp);
        n
    }

    /// One segment of a retransmitted skb, leaving at `xmit_us`: counters,
    /// header, emission, the scoreboard's send stamp. Returns its payload.
    fn retransmit_piece(&mut self, idx: usize, xmit_us: u64) -> u32 {
        let seg = self.sb.q[idx];
        let syn = seg.flags & tcp_flags::SYN != 0;
        let fin = seg.flags & tcp_flags::FIN != 0;
        let len = seg
            .end_seq
            .wrapping_sub(seg.seq)
            .wrapping_sub(syn as u32)
            .wrapping_sub(fin as u32);
        self.total_retrans = self.total_retrans.wrapping_add(1);
        self.bytes_retrans += len as u64;
        self.mib.retrans_segs += 1;
        if syn {
            self.mib.syn_retrans += 1;
        }
        let hdr = if syn {
            // RFC 3168 6.1.1.1 fallback (tcp_ecn_clear_syn): with
            // tcp_ecn_fallback (the default) a retransmitted SYN no longer
            // asks for ECN
            let mut h = self.syn_header();
            if self.cfg.ecn_fallback {
                h.flags &= !(tcp_flags::ECE | tcp_flags::CWR);
                h.ae = false;
            }
            h
        } else {
            let mut flags = tcp_flags::ACK;
            if fin {
                flags |= tcp_flags::FIN;
            }
            self.build_header(seg.seq, flags)
        };
        if len > 0 || syn {
            self.event_data_sent();
            if len > 0 {
                // __tcp_transmit_skb counts a retransmission's bytes too
                self.data_segs_out = self.data_segs_out.wrapping_add(1);
                self.bytes_sent += len as u64;
            }
        }
        // retransmissions are Not-ECT (tcp_ecn_send) unless the module
        // needs ECN (the socket's ECT stays set)
        let ect = self.ect_always();
        self.emit(hdr, len, ect);
        let tx = self.rate_on_sent(xmit_us);
        self.sb.on_retransmit(idx, xmit_us, tx);
        len
    }

    pub(super) fn syn_header(&mut self) -> TcpHeader {
        let mut h = self.build_header(self.iss, tcp_flags::SYN);
        // tcp_ecn_send_syn: AccECN (AE, CWR, ECE) with tcp_ecn = 3 or a
        // module that needs AccECN; classic ECN (CWR, ECE) with tcp_ecn 1
        // or 4, or a module that needs ECN
        let e = self.cfg.ecn;
        let use_accecn = e == 3 || self.cc.needs_accecn();
        if e == 1 || e == 4 || self.cc.needs_ecn() || use_accecn {
            h.flags |= tcp_flags::ECE | tcp_flags::CWR;
            h.ae = use_accecn;
        }
        h
    }

    /// The SYN (`tcp_connect`), queued on the retransmission queue.
    pub(super) fn send_syn(&mut self) {
        let hdr = self.syn_header();
        let xmit_us = self.now_us;
        self.wstamp_ns = self.wstamp_ns.max(self.now.as_nanos());
        self.segs_out = self.segs_out.wrapping_add(1);
        // a module that needs ECN sends its SYN as ECT (INET_ECN_xmit)
        let ect = if self.cc.needs_ecn() {
            self.module_ect()
        } else {
            0
        };
        self.ecn_mode = if hdr.ae {
            EcnMode::Pending
        } else if hdr.flags & tcp_flags::ECE != 0 {
            EcnMode::Rfc3168
        } else {
            EcnMode::Disabled
        };
        self.accecn.syn_ect_snt = ect;
        self.out
            .push_back(Segment::single(hdr, 0, ect, 0, self.edt()));
        // tcp_connect_queue_skb counts it before tcp_rate_skb_sent sees it
        self.sb.packets_out += 1;
        let tx = self.rate_on_sent(xmit_us);
        self.sb.packets_out -= 1;
        self.sb.push(Seg {
            seq: self.iss,
            end_seq: self.iss.wrapping_add(1),
            sacked: 0,
            flags: tcp_flags::SYN,
            in_tsorted: true,
            xmit_us,
            tx,
        });
    }

    /// The SYN-ACK (`tcp_make_synack`).
    pub(super) fn send_synack(&mut self) {
        let mut hdr = self.build_header(self.iss, tcp_flags::SYN | tcp_flags::ACK);
        let first = self.synack_sent_us == 0;
        if self.ecn_mode == EcnMode::AccEcn {
            // tcp_ecn_make_synack: ACE reflects the SYN's ECN field; the
            // option (zero counts) unless this is a retransmission
            hdr.set_ace(accecn::reflector_ace(self.accecn.syn_ect_rcv));
            if self.cfg.ecn_option != 0 && first {
                let mut used = 4 + if hdr.wscale.is_some() { 4 } else { 0 };
                if hdr.ts {
                    used += TCPOLEN_TSTAMP_ALIGNED;
                } else if hdr.sack_ok {
                    used += 4;
                }
                let saving = if hdr.sack_ok && !hdr.ts {
                    2
                } else if hdr.wscale.is_some() {
                    1
                } else {
                    0
                };
                let mut sacks = 0;
                if let Some((fields, _)) = accecn::fit_accecn(
                    0,
                    accecn::MAX_TCP_OPTION_SPACE - used,
                    &mut sacks,
                    Some(saving),
                ) {
                    hdr.accecn = self.accecn.option(fields, true);
                }
            }
        } else if self.ecn_ok {
            hdr.flags |= tcp_flags::ECE;
        }
        if first {
            self.synack_sent_us = self.now_us.max(1);
        }
        self.segs_out = self.segs_out.wrapping_add(1);
        // the listener's ECT: set when its module needs ECN
        let ect = self.ect_always();
        self.accecn.syn_ect_snt = ect;
        self.out
            .push_back(Segment::single(hdr, 0, ect, 0, self.edt()));
    }

    /// `tcp_send_ack`: a pure ACK (with window, SACK blocks, ECE).
    pub(in crate::tcp) fn send_ack(&mut self) {
        if matches!(self.state, TcpState::Closed | TcpState::SynSent) {
            return;
        }
        let seq = self.acceptable_seq();
        let hdr = self.build_header(seq, tcp_flags::ACK);
        let ect = self.ect_always();
        self.emit(hdr, 0, ect);
    }

    /// `tcp_send_active_reset`: abort the connection on the wire (RST|ACK at
    /// the acceptable sequence number, through `tcp_transmit_skb` like any
    /// other segment of the socket).
    pub(in crate::tcp) fn send_active_reset(&mut self) {
        let seq = self.acceptable_seq();
        let hdr = self.build_header(seq, tcp_flags::RST | tcp_flags::ACK);
        let ect = self.ect_always();
        self.emit(hdr, 0, ect);
    }

    /// `tcp_v4_send_reset`: the bare reset answering one segment (no
    /// options, window 0).
    pub(in crate::tcp) fn send_reset_reply(&mut self, hdr: &TcpHeader, payload_len: u32) {
        self.emit_no_ack_event(hdr.reset_reply(payload_len), 0, 0);
    }

    /// `tcp_acceptable_seq`.
    pub(super) fn acceptable_seq(&self) -> u32 {
        if !before(self.wnd_end(), self.snd_nxt)
            || (self.wscale_ok
                && self.snd_nxt.wrapping_sub(self.wnd_end()) < (1u32 << self.rcv.rcv_wscale))
        {
            self.snd_nxt
        } else {
            self.wnd_end()
        }
    }

    /// `tcp_event_ack_sent`.
    pub(super) fn event_ack_sent(&mut self) {
        if self.rcv.compressed_ack > 0 {
            self.rcv.compressed_ack = 0;
            self.timers.clear(TcpTimer::CompressedAck);
        }
        self.rcv.dec_quickack_mode();
        self.rcv.ack_pending = 0;
        self.timers.clear(TcpTimer::DelayedAck);
    }

    /// `tcp_select_window`: the window field for an outgoing segment; never
    /// shrinks the right edge offered before (docs/semantics/tcp.md §17.14).
    pub(super) fn select_window(&mut self) -> u16 {
        let cur_win = self.rcv.receive_window();
        let mut new_win = self.select_window_raw();
        if new_win < cur_win {
            // never shrink the offered window
            let a = 1u32 << self.rcv.rcv_wscale;
            new_win = cur_win.div_ceil(a) * a;
        }
        self.rcv.rcv_wnd = new_win;
        self.rcv.rcv_wup = self.rcv.rcv_nxt;
        let new_win = new_win.min(65535u32 << self.rcv.rcv_wscale);
        (new_win >> self.rcv.rcv_wscale) as u16
    }

    /// `__tcp_select_window` (docs/semantics/tcp.md §7.1).
    pub(in crate::tcp) fn select_window_raw(&mut self) -> u32 {
        self.rcv.select_window_raw()
    }

    /// `tcp_xmit_probe_skb`: a segment the receiver must answer, outside the
    /// window (`snd_una − 1`).
    pub(super) fn xmit_probe_skb(&mut self) {
        let seq = self.snd_una.wrapping_sub(1);
        let hdr = self.build_header(seq, tcp_flags::ACK);
        let ect = self.ect_always();
        self.emit(hdr, 0, ect);
    }

    /// `tcp_cwnd_validate`.
    pub(super) fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        if !before(self.snd_una, self.cwnd_usage_seq)
            || is_cwnd_limited
            || (!self.is_cwnd_limited && self.sb.packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = self.sb.packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        if self.is_cwnd_limited_now() {
            self.snd_cwnd_used = 0;
            self.snd_cwnd_stamp = self.jiffies();
        } else {
            if self.sb.packets_out > self.snd_cwnd_used {
                self.snd_cwnd_used = self.sb.packets_out;
            }
            if self.cfg.slow_start_after_idle
                && self.jiffies().wrapping_sub(self.snd_cwnd_stamp) as i32 >= self.icsk_rto as i32
                && !self.cc.has_cong_control()
            {
                self.cwnd_application_limited();
            }
        }
    }

    /// `tcp_cwnd_application_limited` (RFC 2861, slow part).
    pub(super) fn cwnd_application_limited(&mut self) {
        if self.ca_state() == CaState::Open && !self.nospace {
            let init_win = self.cfg.init_cwnd.min(self.cs.snd_cwnd_clamp);
            let win_used = self.snd_cwnd_used.max(init_win);
            if win_used < self.cwnd() {
                self.cs.snd_ssthresh = self.current_ssthresh();
                let c = (self.cwnd() + win_used) >> 1;
                self.set_cwnd(c);
            }
            self.snd_cwnd_used = 0;
        }
        self.snd_cwnd_stamp = self.jiffies();
    }

    /// `tcp_slow_start_after_idle_check` → `tcp_cwnd_restart` (RFC 2861).
    pub(in crate::tcp) fn slow_start_after_idle_check(&mut self) {
        if !self.cfg.slow_start_after_idle || self.sb.packets_out > 0 || self.cc.has_cong_control()
        {
            return;
        }
        let delta = self.jiffies().wrapping_sub(self.lsndtime) as i32;
        if delta > self.icsk_rto as i32 {
            self.cwnd_restart(delta);
        }
    }

    pub(super) fn cwnd_restart(&mut self, mut delta: i32) {
        self.ca_event(CaEvent::CwndRestart);
        let restart = self.cfg.init_cwnd.min(self.cs.snd_cwnd_clamp);
        let mut cwnd = self.cwnd();
        self.cs.snd_ssthresh = self.current_ssthresh();
        let restart = restart.min(cwnd);
        loop {
            delta -= self.icsk_rto as i32;
            if delta <= 0 || cwnd <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.set_cwnd(cwnd.max(restart));
        self.snd_cwnd_stamp = self.jiffies();
        self.snd_cwnd_used = 0;
    }

    /// `tcp_update_pacing_rate` (non-BBR; docs/semantics/tcp.md §12).
    pub(in crate::tcp) fn update_pacing_rate(&mut self) {
        let mut rate = (self.mss_cache + self.accecn_opt_len) as u64 * ((1_000_000 / 100) << 3);
        let ratio = if self.cwnd() < self.cs.snd_ssthresh / 2 {
            200
        } else {
            120
        };
        rate *= ratio;
        rate *= self.cwnd().max(self.sb.packets_out) as u64;
        if self.rtt.srtt_us != 0 {
            rate /= self.rtt.srtt_us as u64;
        }
        self.cs.pacing_rate = rate.min(self.cs.max_pacing_rate);
    }

    /// `tcp_rate_check_app_limited`.
    pub(super) fn rate_check_app_limited(&mut self) {
        let unsent = self.unsent_bytes();
        let in_flight = self.in_flight();
        self.rate.check_app_limited(
            unsent,
            self.mss_cache,
            in_flight,
            self.cwnd(),
            self.sb.lost_out,
            self.sb.retrans_out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::endpoint::{TcpConfig, CLOCK_BASE_US};
    use crate::tcp::harness::*;
    use crate::time::{Rate, SimDuration};

    #[test]
    fn initial_window_is_ten_segments() {
        let mut p = Pair::sym(cfg("reno"), SimDuration::from_millis(50));
        p.to_write = u64::MAX;
        // the handshake completes at 100 ms; the first ACK of data returns at 200 ms
        p.run_until(ms(199));
        let first: Vec<_> = p.data_from_a().collect();
        assert_eq!(first.len(), 10);
        assert!(first
            .iter()
            .all(|s| s.t == ms(100) && s.seg.payload_len == 1448));
        assert_eq!(p.a.info().unacked, 10);
    }

    /// Segments the client sent in each RTT-long slice after the handshake.
    fn flights(p: &Pair, start: SimTime, rtt: SimDuration, n: usize) -> Vec<usize> {
        (0..n)
            .map(|k| {
                let lo = start + SimDuration::from_nanos(rtt.as_nanos() * k as u64);
                let hi = lo + rtt;
                p.data_from_a().filter(|s| s.t >= lo && s.t < hi).count()
            })
            .collect()
    }

    #[test]
    fn slow_start_doubles_cwnd_every_rtt() {
        // a receiver with room (no rwnd limit) and no bottleneck
        let mut b = cfg("reno");
        b.rmem = [4096, 4 << 20, 16 << 20];
        let mut p = Pair::new(cfg("reno"), b, SimDuration::from_millis(50));
        p.to_write = u64::MAX;
        p.run_until(ms(700));
        let f = flights(&p, ms(100), SimDuration::from_millis(100), 6);
        assert_eq!(f, vec![10, 20, 40, 80, 160, 320]);
    }

    #[test]
    fn bbr_paces_its_segments() {
        // BBR asks for internal pacing (no fq here): after the first ten
        // segments, departures are spaced by len / pacing_rate
        let mut p = Pair::sym(cfg("bbr"), SimDuration::from_millis(5));
        p.check = false;
        p.ab.rate = Some(Rate::from_bps(1_000_000_000));
        p.to_write = u64::MAX;
        p.run_until(ms(1000));
        let sends: Vec<SimTime> = p.data_from_a().map(|s| s.t).collect();
        // distinct departure instants: far more than the number of ACKs would give
        let mut gaps: Vec<u64> = sends.windows(2).map(|w| (w[1] - w[0]).as_nanos()).collect();
        let bursts = gaps.iter().filter(|&&g| g == 0).count();
        assert!(bursts < sends.len() / 10, "{bursts} of {}", sends.len());
        gaps.retain(|&g| g > 0);
        assert!(p.a.info().pacing_rate > 0);
        let i = p.a.info();
        // goodput near the 1 Gb/s bottleneck (956 Mb/s of payload) after startup
        assert!(p.read as f64 > 0.8 * 956e6 / 8.0, "{} {:?}", p.read, i);
        assert_eq!(i.total_retrans, 0);
    }

    /// Departure stamps of A's skbs equal to the one before, as a share.
    fn burst_share(p: &Pair) -> f64 {
        let sends: Vec<SimTime> = p.data_from_a().map(|s| s.seg.tstamp).collect();
        let same = sends.windows(2).filter(|w| w[0] == w[1]).count();
        same as f64 / sends.len() as f64
    }

    #[test]
    fn tsq_limit_hand_computed() {
        // a 45-segment skb: 65 160 payload + 896 = 66 056 bytes of truesize;
        // 1 ms of 50 MB/s (>> 10) is 48 828: two skbs bind
        assert_eq!(tsq_limit(66_056, 50_000_000, false, 4 << 20, 0), 132_112);
        // 500 MB/s: 500e6 >> 10 = 488 281 bytes
        assert_eq!(tsq_limit(66_056, 500_000_000, false, 4 << 20, 0), 488_281);
        // 10 GB/s: 9 765 625, above tcp_limit_output_bytes (4 MiB) ...
        assert_eq!(
            tsq_limit(66_056, 10_000_000_000, false, 4 << 20, 0),
            4_194_304
        );
        // ... which does not bind a paced socket (BBR, fq)
        assert_eq!(
            tsq_limit(66_056, 10_000_000_000, true, 4 << 20, 0),
            9_765_625
        );
        // a retransmission may queue twice as much
        assert_eq!(tsq_limit(66_056, 50_000_000, false, 4 << 20, 1), 264_224);
        // one segment (1448 + 896) at 1 MB/s: 2 × 2344
        assert_eq!(tsq_limit(2_344, 1_000_000, false, 1 << 20, 0), 4_688);
        // no pacing rate yet (~0): the sysctl, 1 MiB in lab2019
        assert_eq!(tsq_limit(2_344, u64::MAX, false, 1 << 20, 0), 1_048_576);
    }

    /// A CUBIC sender whose own queue is a 50 Mbit/s bottleneck of 2000
    /// skbs (the harness gives an skb's send memory back as it leaves that
    /// queue), 0.05 ms each way; `bytes` written.
    fn own_queue(tsq: bool, bytes: u64) -> Pair {
        let mut c = TcpConfig::for_profile(CcProfile::Modern);
        c.congestion = "cubic".into();
        c.gso_max_size = 65_536;
        let mut p = Pair::sym(c, SimDuration::from_micros(50));
        p.check = false;
        p.ab.rate = Some(Rate::from_bps(50_000_000));
        p.ab.limit = 2000;
        p.a.set_tsq(tsq);
        p.to_write = bytes;
        p.run_until(ms(3000));
        p
    }

    #[test]
    fn tsq_keeps_a_senders_own_queue_to_three_skbs() {
        // tcp_small_queue_check: an skb goes while the socket holds at most
        // 2 × 66 056 bytes of truesize in its host, so the queue never has
        // more than three 45-segment skbs; without TSQ the window fills it
        let with = own_queue(true, 12_000_000);
        let without = own_queue(false, 12_000_000);
        assert!(with.ab.max_queue <= 3, "{}", with.ab.max_queue);
        assert!(without.ab.max_queue > 30, "{}", without.ab.max_queue);
        // the link is as busy: the same bytes arrive by the same time
        assert_eq!(with.read, 12_000_000);
        assert_eq!(without.read, 12_000_000);
        // every skb's memory came back; nothing waits for a release
        assert_eq!(with.a.wmem_alloc(), 0);
        assert_eq!(without.a.wmem_alloc(), 0);
        assert_eq!(with.ab.queue_drops + without.ab.queue_drops, 0);
    }

    #[test]
    fn a_root_fq_paces_cubic_and_takes_over_bbrs_pacing() {
        // tcp_needs_internal_pacing: with fq (SK_PACING_FQ) TCP's own timer
        // is off for BBR, yet its EDT schedule, and CUBIC's, is kept: skbs
        // leave at once stamped with it, and the path (one fq flow) holds
        // each until its stamp
        let run = |cc: &str, fq: bool| {
            let mut p = Pair::sym(cfg(cc), SimDuration::from_millis(5));
            p.check = false;
            p.ab.rate = Some(Rate::from_bps(1_000_000_000));
            p.to_write = u64::MAX;
            if fq {
                p.a.set_pacing_fq();
                p.ab.edt = true;
            }
            p.run_until(ms(600));
            p
        };
        // the share of A's skbs sent before their stamp
        let ahead = |p: &Pair| {
            let n = p.data_from_a().filter(|s| s.seg.tstamp > s.t).count();
            n as f64 / p.data_from_a().count() as f64
        };
        let cubic = run("cubic", false);
        let cubic_fq = run("cubic", true);
        assert!(burst_share(&cubic) > 0.5, "{}", burst_share(&cubic));
        assert!(burst_share(&cubic_fq) < 0.1, "{}", burst_share(&cubic_fq));
        assert!(cubic_fq.a.paced_by_fq() && !cubic_fq.a.needs_internal_pacing());
        assert_eq!(ahead(&cubic), 0.0);
        assert!(ahead(&cubic_fq) > 0.5, "{}", ahead(&cubic_fq));
        let bbr = run("bbr", false);
        let bbr_fq = run("bbr", true);
        assert!(bbr.a.needs_internal_pacing() && !bbr.a.paced_by_fq());
        assert!(!bbr_fq.a.needs_internal_pacing() && bbr_fq.a.paced_by_fq());
        assert!(burst_share(&bbr) < 0.1 && burst_share(&bbr_fq) < 0.1);
        assert_eq!((ahead(&bbr), bbr_fq.a.info().total_retrans), (0.0, 0));
        assert!(ahead(&bbr_fq) > 0.5, "{}", ahead(&bbr_fq));
    }

    #[test]
    fn an_fq_paced_retransmission_leaves_behind_the_stamps_without_an_undo() {
        // With fq pacing, __tcp_transmit_skb stamps a retransmission with
        // tcp_wstamp_ns, ahead of the clock, and its TS value is that stamp
        // (tcp_established_options: tcp_skb_timestamp_ts); tcp_retransmit_skb
        // saves the same stamp in retrans_stamp. ACKs of segments sent before
        // the retransmission left echo earlier TS values, so
        // tcp_packet_delayed must not take them for ACKs of the original and
        // undo the recovery (with the send instant as TS value, two of BBR's
        // seven recoveries here were undone: an undo unmarks the lost
        // segments, and in the lesson's heavier losses only the RTO resent
        // them). Each loss is repaired by one fast retransmission that waits
        // for at most the ~1 ms TCP Small Queues let the socket keep in fq.
        for cc in ["cubic", "bbr"] {
            // GSO off: every skb one segment, so the drop rule can pick them;
            // the host's TCP clock 0.7 ms past a whole millisecond
            let c = TcpConfig {
                gso_max_size: 0,
                clock_phase_us: 700,
                ..cfg(cc)
            };
            let mut p = Pair::sym(c, SimDuration::from_millis(10));
            p.check = false;
            p.ab.rate = Some(Rate::from_bps(100_000_000));
            p.ab.edt = true;
            p.a.set_pacing_fq();
            p.a.set_tsq(true);
            p.to_write = 8_000_000;
            let lost: Vec<u32> = (0..7).map(|k| (1400 + k * 200) * 1448).collect();
            p.ab.drop = Some(drop_first_tx(p.a.iss(), lost.clone()));
            // how long the transfer takes depends on the clock's phase: the
            // receiver's DRS steps count TS ticks (tcp/clock.rs); at 0.7 ms
            // CUBIC's window is held by the receiver in slow start and the
            // transfer ends at 3.05 s, at 0 or 0.8 ms at 2.7 s
            p.run_until(ms(4000));
            let m = p.a.mib();
            assert_eq!(p.read, 8_000_000, "{cc}");
            assert_eq!((m.timeouts, m.retrans_segs), (0, 7), "{cc} {m:?}");
            let undos = m.full_undo + m.partial_undo + m.dsack_undo + m.loss_undo;
            assert_eq!(undos, 0, "{cc} {m:?}");
            let iss = p.a.iss().wrapping_add(1);
            let tsoffset = p.a.tsoffset;
            let mut resent = vec![];
            for s in p.data_from_a() {
                // TSval = the stamp on the host's TS clock (ms from the clock
                // base, shifted by the host's phase)
                let ts = ((s.seg.tstamp.as_nanos() / 1000 + CLOCK_BASE_US + 700) / 1000) as u32;
                assert_eq!(s.seg.hdr.tsval, ts.wrapping_add(tsoffset), "{cc}");
                let off = s.seg.hdr.seq.wrapping_sub(iss);
                if s.seg.hdr.seq != p.a.iss() && lost.contains(&off) {
                    resent.push((off, s.seg.tstamp - s.t));
                }
            }
            // each lost segment twice: dropped, then resent (before the next
            // loss); the resend held in fq no longer than TSQ lets it wait
            assert_eq!(resent.len(), 2 * lost.len(), "{cc} {resent:?}");
            for pair in resent.chunks(2) {
                let ((first, _), (again, wait)) = (pair[0], pair[1]);
                assert_eq!(first, again, "{cc} {resent:?}");
                assert!(wait < SimDuration::from_millis(2), "{cc} {again} {wait}");
            }
        }
    }
}
