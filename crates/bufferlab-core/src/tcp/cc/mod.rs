//! Size: the congestion-control interface in one place: the hooks of `struct
//! tcp_congestion_ops`, the `tcp_sock` view they share (`CcSock`, `RateSample`), the
//! registry over every module and tcp_cong.c's helpers every module calls.
//!
//! Congestion control: the hook set of Linux's `struct tcp_congestion_ops`
//! (include/net/tcp.h) and ports of `net/ipv4/tcp_cong.c` (Reno and the
//! generic helpers), `tcp_cubic.c`, `tcp_htcp.c`, `tcp_bbr.c` and
//! `tcp_dctcp.c` (docs/semantics/tcp.md §11, docs/tcp-design.md), and of
//! the other modules mainline Linux builds: `tcp_vegas.c`, `tcp_westwood.c`,
//! `tcp_bic.c`, `tcp_highspeed.c`, `tcp_scalable.c`, `tcp_illinois.c`,
//! `tcp_yeah.c`, `tcp_hybla.c`, `tcp_veno.c`, `tcp_nv.c`, `tcp_lp.c` and
//! `tcp_cdg.c` (docs/semantics/tcp.md §18).
//!
//! Shape. The endpoint owns a [`CcSock`] — the `tcp_sock` fields the kernel
//! modules read and write — keeps it in sync with its own state and calls
//! the hooks of the closed enum [`Cc`] — each module implements
//! [`CongestionOps`] in its own file and is registered with one line in
//! `register_congestion_controls!` — at the points Linux calls them
//! (docs/semantics/tcp.md §8): `pkts_acked` after cleaning the retransmission queue, then on
//! the congestion-control step either `cong_control` (BBR, which then owns
//! cwnd and pacing) or, outside CWR/Recovery, `cong_avoid`; `ssthresh` when a
//! reduction starts (recovery, CWR, RTO), `undo_cwnd` when one is undone,
//! `set_state` on every `icsk_ca_state` change, `cwnd_event` for
//! `CA_EVENT_*`. Hooks that return a value (`ssthresh`, `undo_cwnd`) leave
//! the store to the caller, as the kernel's callers do.
//!
//! Units are Linux's (docs/semantics/tcp.md §1): windows in packets, `srtt_us` in µs << 3,
//! time as `tcp_mstamp` µs, `tcp_clock_cache` ns and `tcp_jiffies32` at
//! HZ = 250 (4 ms per jiffy, see [`tcp_jiffies32`]). All arithmetic is the
//! kernel's fixed-width integer arithmetic, wrapping where C wraps, so that
//! cwnd traces match the kernel's packet for packet; nothing here allocates
//! per ACK.
//!
//! Kernel versions. Where the profiles of docs/semantics/tcp.md differ in this code
//! (CUBIC's HyStart, one BBR initial value, and the pre-5.6 stretch-ACK
//! arithmetic of BIC, Scalable and Veno), [`CcProfile`] selects
//! `lab2019` (Linux 4.15–5.3, as the handouts ran) or `modern` (6.x).
//!
//! Not modelled: `get_info` (inet_diag) blocks other than DCTCP's, BBR's (v1 and v3) and
//! the Vegas-style `tcpvegas_info` ([`Cc::get_info`]; the rest have
//! [`Cc::metrics`]), and module parameters other than the documented
//! defaults (each model's `*Params` struct, or its constants, lists them).

pub mod bbr;
pub mod bbr3;
pub mod bic;
pub mod cdg;
pub mod cubic;
pub mod dctcp;
pub mod highspeed;
pub mod htcp;
pub mod hybla;
pub mod illinois;
pub mod lp;
pub mod nv;
pub mod prague;
pub mod reno;
pub mod scalable;
pub mod vegas;
pub mod veno;
pub mod westwood;
pub mod yeah;

#[cfg(test)]
mod fluid;

pub use bbr::BbrMode;
pub use cubic::CubicParams;
pub use dctcp::DctcpParams;
pub use htcp::HtcpParams;

use crate::rng::ComponentRng;
use crate::time::SimTime;

/// Jiffies per second (`CONFIG_HZ` of Ubuntu/Debian generic kernels, docs/semantics/tcp.md §1).
pub const HZ: u32 = 250;
/// `TCP_INFINITE_SSTHRESH` (include/net/tcp.h).
pub const TCP_INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// `TCP_INIT_CWND` (include/net/tcp.h): initial window, packets.
pub const TCP_INIT_CWND: u32 = 10;
/// `INITIAL_JIFFIES` (include/linux/jiffies.h): the jiffies counter starts
/// 300 s before its 32-bit wrap, so wrap-unsafe code fails five minutes in.
pub const INITIAL_JIFFIES: u32 = 0u32.wrapping_sub(300 * HZ);

/// Nanoseconds per jiffy at [`HZ`].
const NS_PER_JIFFY: u64 = 1_000_000_000 / HZ as u64;

/// `tcp_jiffies32` at simulated time `now`: [`INITIAL_JIFFIES`] plus whole
/// 4 ms ticks since the start of the run, wrapping like the kernel's.
pub fn tcp_jiffies32(now: SimTime) -> u32 {
    INITIAL_JIFFIES.wrapping_add((now.as_nanos() / NS_PER_JIFFY) as u32)
}

/// `usecs_to_jiffies` (include/linux/jiffies.h) at HZ 250: rounds **up**.
pub fn usecs_to_jiffies(us: u32) -> u32 {
    (us as u64).div_ceil(1_000_000 / HZ as u64) as u32
}

/// `msecs_to_jiffies` at HZ 250: rounds up.
pub fn msecs_to_jiffies(ms: u32) -> u32 {
    (ms as u64).div_ceil(1_000 / HZ as u64) as u32
}

/// `after(a, b)` (include/net/tcp.h): `a` is later than `b` in 32-bit
/// sequence/jiffies space.
#[inline]
pub(crate) fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `before(a, b)`: `a` is earlier than `b` in 32-bit sequence/jiffies space.
#[inline]
pub(crate) fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `tcp_stamp_us_delta(t1, t0)` (include/net/tcp.h): `t1 − t0` in µs,
/// clamped at 0.
#[inline]
pub(crate) fn stamp_us_delta(t1: u64, t0: u64) -> u64 {
    (t1 as i64).wrapping_sub(t0 as i64).max(0) as u64
}

/// `icsk_ca_state` (include/net/tcp.h `enum tcp_ca_state`); ordered as in
/// Linux, so `state >= CaState::Recovery` reads like the kernel's tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CaState {
    #[default]
    Open = 0,
    Disorder = 1,
    Cwr = 2,
    Recovery = 3,
    Loss = 4,
}

/// `enum tcp_ca_event` (include/net/tcp.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CaEvent {
    /// First transmission when no packet is in flight (`tcp_event_data_sent`).
    TxStart,
    /// Congestion window restart after idle (`tcp_cwnd_restart`).
    CwndRestart,
    /// End of a CWR reduction (`tcp_end_cwnd_reduction`).
    CompleteCwr,
    /// RTO (`tcp_enter_loss`).
    Loss,
    /// ECT packet without CE received (`tcp_ecn_check_ce`, raised only for
    /// modules with [`TCP_CONG_NEEDS_ECN`]).
    EcnNoCe,
    /// CE-marked packet received (as `EcnNoCe`).
    EcnIsCe,
}

/// `TCP_CONG_NON_RESTRICTED` (include/net/tcp.h): any user may select it.
pub const TCP_CONG_NON_RESTRICTED: u32 = 0x1;
/// `TCP_CONG_NEEDS_ECN`: the module requires ECN: its socket asks for ECN
/// in the SYN whatever `tcp_ecn` says, a listener with it accepts ECN, and
/// its packets (SYN, pure ACKs and retransmissions included) are ECT(0)
/// (`tcp_ca_needs_ecn`, `tcp_ecn_send_syn`, `tcp_ecn_create_request`,
/// `tcp_ecn_send`).
pub const TCP_CONG_NEEDS_ECN: u32 = 0x2;
/// `TCP_CONG_NEEDS_ACCECN` (Linux 6.18+): the module needs Accurate ECN
/// feedback: its SYN asks for AccECN whatever `tcp_ecn` says and a
/// listener with it accepts AccECN (`tcp_ca_needs_accecn`).
pub const TCP_CONG_NEEDS_ACCECN: u32 = 0x4;
/// `TCP_CONG_WANTS_ECT_1` (L4S kernels): the module's packets are ECT(1)
/// (RFC 9331's L4S identifier), from the SYN on.
pub const TCP_CONG_WANTS_ECT_1: u32 = 0x8;
/// `TCP_CONG_NO_FALLBACK_RFC3168` (L4S kernels): a SYN-ACK that answers
/// AccECN with classic ECN leaves the connection without ECN.
pub const TCP_CONG_NO_FALLBACK_RFC3168: u32 = 0x10;

/// `enum tcp_ca_ack_event_flags` (include/net/tcp.h): the argument of
/// `in_ack_event`. The ACK went through `tcp_ack`'s slow path.
pub const CA_ACK_SLOWPATH: u32 = 1 << 0;
/// The ACK updated the send window (`FLAG_WIN_UPDATE`).
pub const CA_ACK_WIN_UPDATE: u32 = 1 << 1;
/// The ACK carried ECE (`FLAG_ECE`; only reported on the slow path).
pub const CA_ACK_ECE: u32 = 1 << 2;

/// The receiver's side of `tcp_sock` that the ECN events
/// (`CA_EVENT_ECN_IS_CE` / `CA_EVENT_ECN_NO_CE`) read and write: what a
/// module like DCTCP does to the ACK stream (tcp_dctcp.h
/// `dctcp_ece_ack_update`). The endpoint fills it before raising the event
/// and carries out the requests after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcRcv {
    /// `tp->rcv_nxt` after the segment being processed
    pub rcv_nxt: u32,
    /// `icsk_ack.pending & ICSK_ACK_TIMER`: a delayed ACK is scheduled
    pub delack_pending: bool,
    /// `ecn_flags & TCP_ECN_DEMAND_CWR`: ACKs carry ECE (read and write)
    pub demand_cwr: bool,
    /// request: `icsk_ack.pending |= ICSK_ACK_NOW` (ACK this segment at once)
    pub ack_now: bool,
    /// request: send an ACK for this sequence number now, before anything
    /// else (`__tcp_send_ack(sk, rcv_nxt)`), with ECE = the bool
    pub special_ack: Option<(u32, bool)>,
    /// the special ACK also cancels the delayed ACK ([lab2019]: `tcp_send_ack`
    /// with `rcv_nxt` swapped; [modern] keeps it pending)
    pub special_ack_clears_delack: bool,
}

/// `get_info` (`union tcp_cc_info`, include/uapi/linux/inet_diag.h): what
/// `ss -i` prints per algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcInfo {
    /// `struct tcp_dctcp_info`
    Dctcp {
        enabled: bool,
        ce_state: u16,
        alpha: u32,
        ab_ecn: u32,
        ab_tot: u32,
    },
    /// `struct tcp_prague_info` (L4S kernels' include/uapi/linux/inet_diag.h)
    Prague {
        enabled: bool,
        /// alpha, 1/2^24 units
        alpha: u64,
        max_burst: u32,
        round: u32,
        rate_bytes: u64,
        /// cwnd, 1/2^20 packets
        frac_cwnd: u64,
        /// µs << 3
        rtt_target: u32,
    },
    /// `struct tcpvegas_info` (Vegas, YeAH, Westwood, Illinois, NV fill it,
    /// each with its own meaning of the RTT fields)
    Vegas {
        enabled: u32,
        rttcnt: u32,
        rtt: u32,
        minrtt: u32,
    },
    /// `struct tcp_bbr_info` (`bbr_bw_hi << 32 | bbr_bw_lo` as one number)
    Bbr {
        /// bytes/s
        bw: u64,
        /// µs
        min_rtt: u32,
        /// BBR_UNIT = 256
        pacing_gain: u32,
        cwnd_gain: u32,
    },
}

/// HyStart's slow-start exits as CUBIC counts them (tcp_cubic.c
/// `hystart_update`, Linux ≥ 5.7): each detector's exits and the sum of the
/// cwnd at each (`TCPHystart{Train,Delay}{Detect,Cwnd}` in /proc/net/netstat).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HystartExits {
    pub train_detect: u32,
    pub train_cwnd: u32,
    pub delay_detect: u32,
    pub delay_cwnd: u32,
}

/// The `tcp_sock`/`sock` fields congestion control reads and writes, in the
/// kernel's units. The endpoint keeps them current before every hook call.
///
/// Fields past `tso_segs_goal` are additions to the list in
/// docs/tcp-design.md: CUBIC needs `lsndtime` (`CA_EVENT_TX_START`), BBR needs
/// `delivered_mstamp` and the EDT pair `clock_ns`/`wstamp_ns`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CcSock {
    /// congestion window, packets
    pub snd_cwnd: u32,
    /// slow-start threshold, packets ([`TCP_INFINITE_SSTHRESH`] = none yet)
    pub snd_ssthresh: u32,
    /// linear-increase counter, packets acked since the last +1
    pub snd_cwnd_cnt: u32,
    /// upper bound on `snd_cwnd`, packets (`~0` by default)
    pub snd_cwnd_clamp: u32,
    /// cwnd when the current reduction started, packets (Reno/CUBIC/H-TCP undo)
    pub prior_cwnd: u32,
    /// sending MSS, bytes (1448 with timestamps on a 1500-byte path)
    pub mss_cache: u32,
    /// smoothed RTT, µs << 3 (0 before the first sample)
    pub srtt_us: u32,
    /// `tcp_min_rtt()`: windowed minimum RTT, µs (`u32::MAX` before a sample)
    pub min_rtt_us: u32,
    /// segments sent and not yet cumulatively acked
    pub packets_out: u32,
    /// `tcp_packets_in_flight()`: packets_out − sacked − lost + retrans
    pub packets_in_flight: u32,
    /// `tcp_is_cwnd_limited()` (docs/semantics/tcp.md §4)
    pub is_cwnd_limited: bool,
    /// packets delivered (cumulatively or selectively acked), `tp->delivered`
    pub delivered: u32,
    /// delivered packets that carried CE
    pub delivered_ce: u32,
    /// packets marked lost, `tp->lost`
    pub lost: u32,
    /// `tp->app_limited`: non-zero while the flow is application-limited
    /// (the `delivered` count at which that ends); BBR writes it in PROBE_RTT
    pub app_limited: u32,
    /// `tcp_mstamp`: now, µs
    pub now_us: u64,
    /// `tcp_jiffies32`: now, jiffies (see [`tcp_jiffies32`])
    pub jiffies: u32,
    /// `icsk_ca_state` (updated by [`Cc::set_state`])
    pub ca_state: CaState,
    /// `sk_pacing_rate`, bytes/s (BBR writes it; others' pacing is §12)
    pub pacing_rate: u64,
    /// `sk_max_pacing_rate` (SO_MAX_PACING_RATE), bytes/s, `u64::MAX` = none
    pub max_pacing_rate: u64,
    /// `sk_pacing_status != SK_PACING_NONE`: BBR sets it (internal pacing
    /// needed); the endpoint also sets it when an fq qdisc paces the flow.
    /// CUBIC's HyStart reads it.
    pub pacing_status_needed: bool,
    /// `sk_pacing_status == SK_PACING_FQ`: an `fq` qdisc saw the socket's
    /// packets and paces them; TCP's own pacing timer is then off
    /// (`tcp_needs_internal_pacing`), the EDT stamps still advance.
    pub pacing_fq: bool,
    /// next sequence number to send
    pub snd_nxt: u32,
    /// first unacknowledged sequence number
    pub snd_una: u32,
    /// the endpoint's current TSO burst size, segments (informational)
    pub tso_segs_goal: u32,
    /// `tp->delivered_mstamp`: time of the latest delivery, µs
    pub delivered_mstamp: u64,
    /// `tp->lsndtime`: jiffies of the last data transmission
    pub lsndtime: u32,
    /// `tp->tcp_clock_cache`: now, ns (`now_us == clock_ns / 1000`)
    pub clock_ns: u64,
    /// `tp->tcp_wstamp_ns`: earliest departure time of the next packet, ns
    pub wstamp_ns: u64,
    /// `icsk_ack.rcv_mss`: the receiver's estimate of the peer's MSS, bytes
    /// (DCTCP [lab2019] counts a duplicate ACK as this many bytes)
    pub rcv_mss: u32,
    /// `tp->ecn_flags & TCP_ECN_OK`: the connection negotiated ECN
    pub ecn_ok: bool,
    /// receiver state for the ECN events (see [`CcRcv`])
    pub rcv: CcRcv,
    /// `tp->sacked_out`: packets selectively acked (CDG's delayed-ACK filter)
    pub sacked_out: u32,
    /// `tp->rx_opt.rcv_tsval`: TSval of the latest segment (TCP-LP)
    pub rcv_tsval: u32,
    /// `tp->rx_opt.rcv_tsecr`: its TSecr, our clock without the offset (TCP-LP)
    pub rcv_tsecr: u32,
    /// `tcp_time_stamp_ts(tp)`: our TS-option clock, ms, without the offset
    pub ts_now: u32,
    /// `tp->tcp_header_len`: 20 + the timestamp option's 12 when in use
    /// (`tcp_mss_to_mtu` = mss + this + 20)
    pub tcp_header_len: u32,
    /// request from a hook: call `tcp_enter_cwr` once it returns (CDG's
    /// backoff calls it from `cong_avoid`); the endpoint clears it
    pub enter_cwr: bool,
    /// CUBIC's HyStart counters (the socket's share of the node's `TcpExt`)
    pub hystart: HystartExits,
}

impl Default for CcSock {
    /// The values after `tcp_init_sock` (docs/semantics/tcp.md §4).
    fn default() -> Self {
        CcSock {
            snd_cwnd: TCP_INIT_CWND,
            snd_ssthresh: TCP_INFINITE_SSTHRESH,
            snd_cwnd_cnt: 0,
            snd_cwnd_clamp: u32::MAX,
            prior_cwnd: 0,
            mss_cache: 1448,
            srtt_us: 0,
            min_rtt_us: u32::MAX,
            packets_out: 0,
            packets_in_flight: 0,
            is_cwnd_limited: false,
            delivered: 0,
            delivered_ce: 0,
            lost: 0,
            app_limited: 0,
            now_us: 0,
            jiffies: INITIAL_JIFFIES,
            ca_state: CaState::Open,
            pacing_rate: 0,
            max_pacing_rate: u64::MAX,
            pacing_status_needed: false,
            pacing_fq: false,
            snd_nxt: 0,
            snd_una: 0,
            tso_segs_goal: 2,
            delivered_mstamp: 0,
            lsndtime: INITIAL_JIFFIES,
            clock_ns: 0,
            wstamp_ns: 0,
            rcv_mss: 536,
            ecn_ok: false,
            rcv: CcRcv::default(),
            sacked_out: 0,
            rcv_tsval: 0,
            rcv_tsecr: 0,
            ts_now: 0,
            tcp_header_len: 32,
            enter_cwr: false,
            hystart: HystartExits::default(),
        }
    }
}

impl CcSock {
    /// `tcp_in_slow_start`: cwnd strictly below ssthresh.
    #[inline]
    pub fn in_slow_start(&self) -> bool {
        self.snd_cwnd < self.snd_ssthresh
    }

    /// Sets all clocks from one simulated instant (µs, ns and jiffies agree).
    pub fn set_clock(&mut self, now: SimTime) {
        self.clock_ns = now.as_nanos();
        self.now_us = now.as_nanos() / 1_000;
        self.jiffies = tcp_jiffies32(now);
    }
}

/// `struct ack_sample`: the argument of `pkts_acked`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    /// packets newly cumulatively acked by this ACK
    pub pkts_acked: u32,
    /// RTT sample, µs; −1 when the ACK gives none
    pub rtt_us: i64,
    /// bytes delivered while the sampled packet was in flight:
    /// `mss_cache * (delivered − rs.prior_delivered)` (tcp_clean_rtx_queue;
    /// TCP-NV's rate numerator)
    pub in_flight: u32,
}

/// `struct rate_sample` (docs/semantics/tcp.md §10): the argument of `cong_control`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateSample {
    /// `tp->delivered_mstamp` when the sampled packet was sent, µs
    pub prior_mstamp: u64,
    /// `tp->delivered` when the sampled packet was sent
    pub prior_delivered: u32,
    /// packets delivered over the interval, −1 if no valid sample
    pub delivered: i32,
    /// the sample's interval, µs; −1 if invalid
    pub interval_us: i64,
    pub snd_interval_us: u32,
    pub rcv_interval_us: u32,
    /// RTT of the most recently sent newly acked packet, µs; −1 if none
    pub rtt_us: i64,
    /// packets newly marked lost by this ACK
    pub losses: i32,
    /// packets newly (s)acked by this ACK
    pub acked_sacked: u32,
    /// packets in flight before this ACK
    pub prior_in_flight: u32,
    /// the sampled packet was sent while application-limited
    pub is_app_limited: bool,
    /// the sampled packet was a retransmission
    pub is_retrans: bool,
    /// the ACK was possibly delayed (stretched) by the receiver
    pub is_ack_delayed: bool,
    /// packets the ACK newly reported CE-marked (`rs->ece_delta` of the L4S
    /// kernels: the ACE delta with AccECN, all delivered on a classic ECE)
    pub ece_delta: u32,
    /// packets in flight when the sampled packet was sent, itself included
    /// (`rs->tx_in_flight` of the BBRv3 kernels)
    pub tx_in_flight: u32,
    /// packets marked lost between the sampled packet's transmission and
    /// this ACK (`rs->lost`, BBRv3 kernels)
    pub lost: i32,
    /// delivered packets of the interval that were CE-marked
    /// (`rs->delivered_ce`)
    pub delivered_ce: i32,
    /// the ACK carried ECE (`rs->is_ece`, BBRv3 kernels)
    pub is_ece: bool,
}

impl Default for RateSample {
    /// An invalid sample (as `tcp_rate_gen` leaves it when nothing new was
    /// delivered).
    fn default() -> Self {
        RateSample {
            prior_mstamp: 0,
            prior_delivered: 0,
            delivered: -1,
            interval_us: -1,
            snd_interval_us: 0,
            rcv_interval_us: 0,
            rtt_us: -1,
            losses: 0,
            acked_sacked: 0,
            prior_in_flight: 0,
            is_app_limited: false,
            is_retrans: false,
            is_ack_delayed: false,
            ece_delta: 0,
            tx_in_flight: 0,
            lost: 0,
            delivered_ce: 0,
            is_ece: false,
        }
    }
}

/// A segment just marked lost, as `skb_marked_lost` reads it (the
/// `TCP_SKB_CB(skb)->tx` fields of the BBRv3 kernels).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LostSkb {
    /// `tx.in_flight`: packets in flight when it was sent, itself included
    pub tx_in_flight: u32,
    /// `tp->lost − tx.lost`: packets marked lost since it was sent, itself included
    pub lost: u32,
    /// `tx.is_app_limited`
    pub is_app_limited: bool,
    /// `tx.delivered_mstamp != 0`: its snapshot is still valid (not SACKed)
    pub has_snapshot: bool,
}

/// Which kernel's arithmetic to reproduce where it changed (docs/semantics/tcp.md
/// "kernel profiles"; docs/internals.md "Version profile").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CcProfile {
    /// Linux 4.15–5.3 (Ubuntu 18.04–19.10), as the handouts ran.
    #[default]
    Lab2019,
    /// Linux 6.x mainline.
    Modern,
}

/// Type of a `cong_control` hook (see [`CongestionOps::CONG_CONTROL`]).
pub type CongControl<T> = fn(&mut T, &mut CcSock, &RateSample);

/// One congestion-control module: Linux's `struct tcp_congestion_ops`
/// (include/net/tcp.h). A hook the module leaves out falls back as
/// `net/ipv4/tcp_cong.c` and its callers do when the pointer is NULL.
/// `ssthresh` is required, as `tcp_validate_congestion_control` requires it.
pub trait CongestionOps: Clone + std::fmt::Debug {
    /// The `tcp_congestion_control` sysctl name, also printed by `ss -i`.
    const NAME: &'static str;

    /// A fresh instance with the module's default parameters for kernel
    /// `profile` (`tcp_assign_congestion_control`); `rng` is the connection's
    /// congestion-control stream (BBR draws its initial PROBE_BW phase from it).
    fn create(profile: CcProfile, rng: ComponentRng) -> Self;

    /// `init` (`tcp_init_congestion_control`): connection established.
    fn init(&mut self, _tp: &mut CcSock) {}

    /// `ssthresh`: the slow-start threshold after a congestion event; the
    /// caller stores it in `snd_ssthresh`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32;

    /// `cong_avoid`: grow cwnd on an ACK in Open/Disorder; `ack` is the
    /// cumulative ACK number, `acked` the packets newly (s)acked. Linux
    /// requires it of modules without `cong_control` and never calls it on
    /// those with one, so the empty default is only right for the latter.
    fn cong_avoid(&mut self, _tp: &mut CcSock, _ack: u32, _acked: u32) {}

    /// `set_state`, called by `tcp_set_ca_state` while `tp.ca_state` still
    /// holds the old state.
    fn set_state(&mut self, _tp: &mut CcSock, _new_state: CaState) {}

    /// `flags`: `TCP_CONG_*` bits ([`TCP_CONG_NEEDS_ECN`]).
    const FLAGS: u32 = 0;

    /// The flags of the ops the socket runs now (a module may switch its
    /// ops, as DCTCP does to `dctcp_reno` without ECN).
    fn flags(&self) -> u32 {
        Self::FLAGS
    }

    /// `cwnd_event` (`tcp_ca_event`). For the ECN events the module may
    /// act on the receiver through `tp.rcv` ([`CcRcv`]).
    fn cwnd_event(&mut self, _tp: &mut CcSock, _ev: CaEvent) {}

    /// `in_ack_event` (`tcp_in_ack_event`): once per ACK processed by
    /// `tcp_ack`, with `CA_ACK_*` flags. [lab2019] before the
    /// retransmission queue is cleaned (so `delivered` does not count this
    /// ACK yet); [modern] (6.14+) after it.
    fn in_ack_event(&mut self, _tp: &mut CcSock, _flags: u32) {}

    /// `get_info`: the per-algorithm block of `ss -i` (`None`: the module
    /// has none, as Reno and CUBIC).
    fn get_info(&self, _tp: &CcSock) -> Option<CcInfo> {
        None
    }

    /// The name `ss -i` prints (`icsk_ca_ops->name`): [`Self::NAME`]
    /// unless the module swapped its ops (DCTCP without ECN: `dctcp-reno`).
    fn ops_name(&self) -> &'static str {
        Self::NAME
    }

    /// `pkts_acked`: per-ACK RTT/ack-count sample (docs/semantics/tcp.md §8 step 6).
    fn pkts_acked(&mut self, _tp: &mut CcSock, _sample: &AckSample) {}

    /// `undo_cwnd`: the cwnd to restore when a reduction proves spurious;
    /// the caller stores it in `snd_cwnd`. Default: [`tcp_reno_undo_cwnd`].
    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    /// `cong_control`: a module that has it replaces the generic cwnd logic
    /// (PRR and `cong_avoid`, `tcp_cong_control` in tcp_input.c) and sets
    /// cwnd and pacing itself. `None` (NULL) by default.
    const CONG_CONTROL: Option<CongControl<Self>> = None;

    /// Whether the ops the socket runs now use `cong_control` (a module
    /// that swapped its ops for ones without it, as Prague does to
    /// `prague-reno`, says false).
    fn cong_control_active(&self) -> bool {
        true
    }

    /// `sndbuf_expand`: cwnd multiples the send buffer provisions
    /// (`tcp_sndbuf_expand`, 2 when the hook is NULL).
    fn sndbuf_expand(&self) -> u32 {
        2
    }

    /// `min_tso_segs` (`tcp_tso_autosize`): without the hook, the sysctl
    /// `tcp_min_tso_segs`, 2 by default.
    fn min_tso_segs(&self, _tp: &CcSock) -> u32 {
        2
    }

    /// `tso_segs`: a module with the hook sets the TSO burst itself
    /// (`tcp_tso_segs`); `None` = `tcp_tso_autosize`.
    fn tso_segs(&self, _tp: &CcSock) -> Option<u32> {
        None
    }

    /// Named internal values for traces, in place of `get_info`: appended
    /// to `out`; none by default.
    fn metrics(&self, _out: &mut Vec<(&'static str, f64)>) {}

    /// Whether the module has `skb_marked_lost` (the BBRv3 kernels' hook);
    /// the endpoint only keeps the lost segments' snapshots for those.
    const SKB_MARKED_LOST: bool = false;

    /// `skb_marked_lost` (BBRv3 kernels, called from `tcp_mark_skb_lost`):
    /// a segment was just marked lost (`skb`: what its transmission
    /// recorded, with `tp->lost` counting it).
    fn skb_marked_lost(&mut self, _tp: &mut CcSock, _skb: &LostSkb) {}
}

/// Generates [`Cc`] (one variant per module, static dispatch: this is the
/// per-ACK path), [`Cc::NAMES`], the lookup by name and `dispatch!`, which
/// runs an expression on whichever module a `Cc` holds.
macro_rules! register_congestion_controls {
    ($($variant:ident($module:ident::$ty:ident)),+ $(,)?) => {
        $(pub use $module::$ty;)+

        /// A congestion-control module, selected by its `tcp_congestion_control`
        /// sysctl name. Methods are the [`CongestionOps`] hooks, each delegating
        /// to the model (or to Linux's fallback where the model has no hook).
        #[derive(Clone, Debug)]
        pub enum Cc {
            $($variant($ty),)+
        }

        impl Cc {
            /// The registered module names in registration order, as Linux lists
            /// them in `net.ipv4.tcp_available_congestion_control`.
            pub const NAMES: &'static [&'static str] = &[$(<$ty as CongestionOps>::NAME,)+];

            /// The full constructor: module name, kernel profile, BBR's stream.
            pub fn from_name_with(name: &str, profile: CcProfile, rng: ComponentRng) -> Option<Cc> {
                $(if name == <$ty as CongestionOps>::NAME {
                    return Some(Cc::$variant(<$ty as CongestionOps>::create(profile, rng)));
                })+
                None
            }
        }

        macro_rules! dispatch {
            ($cc:expr, $m:ident => $e:expr) => {
                match $cc {
                    $(Cc::$variant($m) => $e,)+
                }
            };
        }
    };
}

// One line per module: adding a congestion control is its file, its `mod`
// line above (kept outside the macro so rustfmt still finds the file) and
// its line here.
register_congestion_controls! {
    Reno(reno::Reno),
    Cubic(cubic::Cubic),
    Htcp(htcp::Htcp),
    Bbr(bbr::Bbr),
    Dctcp(dctcp::Dctcp),
    Vegas(vegas::Vegas),
    Westwood(westwood::Westwood),
    Bic(bic::Bic),
    Highspeed(highspeed::Highspeed),
    Scalable(scalable::Scalable),
    Illinois(illinois::Illinois),
    Yeah(yeah::Yeah),
    Hybla(hybla::Hybla),
    Veno(veno::Veno),
    Nv(nv::Nv),
    Lp(lp::Lp),
    Cdg(cdg::Cdg),
    Prague(prague::Prague),
    Bbr3(bbr3::Bbr3),
}

/// Run seed of the BBR stream [`Cc::from_name`] uses (callers with a run
/// seed pass their own stream to [`Cc::from_name_seeded`]).
const DEFAULT_SEED: u64 = 0;

impl Cc {
    /// Any of [`Cc::NAMES`] with the default profile (`lab2019`) and a fixed
    /// BBR random stream.
    pub fn from_name(name: &str) -> Option<Cc> {
        Self::from_name_seeded(name, ComponentRng::new(DEFAULT_SEED, "tcp/cc/bbr"))
    }

    /// As [`Cc::from_name`], with the random stream BBR draws its initial
    /// PROBE_BW phase from (`tcp_bbr.c` `bbr_reset_probe_bw_mode`).
    pub fn from_name_seeded(name: &str, rng: ComponentRng) -> Option<Cc> {
        Self::from_name_with(name, CcProfile::default(), rng)
    }

    /// The module's name as `tcp_congestion_control` and `ss -i` print it.
    pub fn name(&self) -> &'static str {
        fn name_of<T: CongestionOps>(_: &T) -> &'static str {
            T::NAME
        }
        dispatch!(self, m => name_of(m))
    }

    /// [`CongestionOps::init`].
    pub fn init(&mut self, tp: &mut CcSock) {
        dispatch!(self, m => m.init(tp))
    }

    /// [`CongestionOps::ssthresh`].
    pub fn ssthresh(&mut self, tp: &mut CcSock) -> u32 {
        dispatch!(self, m => m.ssthresh(tp))
    }

    /// [`CongestionOps::cong_avoid`].
    pub fn cong_avoid(&mut self, tp: &mut CcSock, ack: u32, acked: u32) {
        dispatch!(self, m => m.cong_avoid(tp, ack, acked))
    }

    /// `tcp_set_ca_state`: calls the module's `set_state` while
    /// `tp.ca_state` still holds the old state, then stores `new_state`.
    pub fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        dispatch!(self, m => m.set_state(tp, new_state));
        tp.ca_state = new_state;
    }

    /// [`CongestionOps::cwnd_event`].
    pub fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        dispatch!(self, m => m.cwnd_event(tp, ev))
    }

    /// Whether the ops the socket runs now have `flag` (`TCP_CONG_*`).
    #[inline]
    fn has_flag(&self, flag: u32) -> bool {
        dispatch!(self, m => m.flags()) & flag != 0
    }

    /// `tcp_ca_needs_ecn`: the module has [`TCP_CONG_NEEDS_ECN`].
    #[inline]
    pub fn needs_ecn(&self) -> bool {
        self.has_flag(TCP_CONG_NEEDS_ECN)
    }

    /// `tcp_ca_needs_accecn`: the module has [`TCP_CONG_NEEDS_ACCECN`].
    #[inline]
    pub fn needs_accecn(&self) -> bool {
        self.has_flag(TCP_CONG_NEEDS_ACCECN)
    }

    /// The module's packets are ECT(1) ([`TCP_CONG_WANTS_ECT_1`]).
    #[inline]
    pub fn wants_ect1(&self) -> bool {
        self.has_flag(TCP_CONG_WANTS_ECT_1)
    }

    /// [`TCP_CONG_NO_FALLBACK_RFC3168`].
    #[inline]
    pub fn no_fallback_rfc3168(&self) -> bool {
        self.has_flag(TCP_CONG_NO_FALLBACK_RFC3168)
    }

    /// [`CongestionOps::tso_segs`].
    #[inline]
    pub fn tso_segs(&self, tp: &CcSock) -> Option<u32> {
        dispatch!(self, m => m.tso_segs(tp))
    }

    /// [`CongestionOps::in_ack_event`].
    #[inline]
    pub fn in_ack_event(&mut self, tp: &mut CcSock, flags: u32) {
        dispatch!(self, m => m.in_ack_event(tp, flags))
    }

    /// [`CongestionOps::get_info`].
    pub fn get_info(&self, tp: &CcSock) -> Option<CcInfo> {
        dispatch!(self, m => m.get_info(tp))
    }

    /// [`CongestionOps::ops_name`].
    pub fn ops_name(&self) -> &'static str {
        dispatch!(self, m => m.ops_name())
    }

    /// [`CongestionOps::SKB_MARKED_LOST`].
    pub fn wants_skb_marked_lost(&self) -> bool {
        fn wants<T: CongestionOps>(_: &T) -> bool {
            T::SKB_MARKED_LOST
        }
        dispatch!(self, m => wants(m))
    }

    /// [`CongestionOps::skb_marked_lost`].
    pub fn skb_marked_lost(&mut self, tp: &mut CcSock, skb: &LostSkb) {
        dispatch!(self, m => m.skb_marked_lost(tp, skb))
    }

    /// [`CongestionOps::pkts_acked`].
    pub fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        dispatch!(self, m => m.pkts_acked(tp, sample))
    }

    /// [`CongestionOps::undo_cwnd`].
    pub fn undo_cwnd(&mut self, tp: &mut CcSock) -> u32 {
        dispatch!(self, m => m.undo_cwnd(tp))
    }

    /// Runs the module's `cong_control` ([`CongestionOps::CONG_CONTROL`]);
    /// returns false, doing nothing, for modules without one.
    pub fn cong_control(&mut self, tp: &mut CcSock, rs: &RateSample) -> bool {
        fn run<T: CongestionOps>(m: &mut T, tp: &mut CcSock, rs: &RateSample) -> bool {
            match T::CONG_CONTROL {
                Some(hook) if m.cong_control_active() => {
                    hook(m, tp, rs);
                    true
                }
                _ => false,
            }
        }
        dispatch!(self, m => run(m, tp, rs))
    }

    /// Whether the module has `cong_control` (BBR).
    pub fn has_cong_control(&self) -> bool {
        fn has<T: CongestionOps>(m: &T) -> bool {
            T::CONG_CONTROL.is_some() && m.cong_control_active()
        }
        dispatch!(self, m => has(m))
    }

    /// [`CongestionOps::sndbuf_expand`].
    pub fn sndbuf_expand(&self) -> u32 {
        dispatch!(self, m => m.sndbuf_expand())
    }

    /// [`CongestionOps::min_tso_segs`].
    pub fn min_tso_segs(&self, tp: &CcSock) -> u32 {
        dispatch!(self, m => m.min_tso_segs(tp))
    }

    /// [`CongestionOps::metrics`] as a list (CUBIC's K and W_max, H-TCP's
    /// alpha/beta, BBR's mode, gains and model). Not for the per-ACK path.
    pub fn metrics(&self) -> Vec<(&'static str, f64)> {
        let mut out = Vec::new();
        dispatch!(self, m => m.metrics(&mut out));
        out
    }
}

/// The flags and `ss` name of a module that swaps its ops for Reno's
/// when the connection has no ECN (DCTCP → `dctcp-reno`, Prague →
/// `prague-reno`): no flags and the fallback's name once `fallen_back`.
pub(crate) fn reno_fallback_ops(
    fallen_back: bool,
    flags: u32,
    name: &'static str,
    reno_name: &'static str,
) -> (u32, &'static str) {
    if fallen_back {
        (0, reno_name)
    } else {
        (flags, name)
    }
}

/// `tcp_slow_start` (tcp_cong.c): +1 packet per packet acked up to
/// `ssthresh`, with no ABC cap (a stretch ACK for N adds N, docs/semantics/tcp.md §17.9);
/// returns the acks left over once ssthresh is reached.
pub fn tcp_slow_start(tp: &mut CcSock, acked: u32) -> u32 {
    let cwnd = tp.snd_cwnd.wrapping_add(acked).min(tp.snd_ssthresh);
    let left = acked.wrapping_sub(cwnd.wrapping_sub(tp.snd_cwnd));
    tp.snd_cwnd = cwnd.min(tp.snd_cwnd_clamp);
    left
}

/// `tcp_cong_avoid_ai` (tcp_cong.c): additive increase of one packet per
/// `w` packets acked, counted in `snd_cwnd_cnt`; credit collected under a
/// larger `w` is cashed as a single +1 first.
pub fn tcp_cong_avoid_ai(tp: &mut CcSock, w: u32, acked: u32) {
    if tp.snd_cwnd_cnt >= w {
        tp.snd_cwnd_cnt = 0;
        tp.snd_cwnd = tp.snd_cwnd.wrapping_add(1);
    }
    tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(acked);
    if tp.snd_cwnd_cnt >= w {
        let delta = tp.snd_cwnd_cnt / w;
        tp.snd_cwnd_cnt -= delta * w;
        tp.snd_cwnd = tp.snd_cwnd.wrapping_add(delta);
    }
    tp.snd_cwnd = tp.snd_cwnd.min(tp.snd_cwnd_clamp);
}

/// `tcp_reno_cong_avoid` (tcp_cong.c), for the modules that fall back to
/// it: nothing unless cwnd-limited; slow start, then the leftover acks feed
/// additive increase with w = cwnd.
pub fn tcp_reno_cong_avoid(tp: &mut CcSock, mut acked: u32) {
    if !tp.is_cwnd_limited {
        return;
    }
    if tp.in_slow_start() {
        acked = tcp_slow_start(tp, acked);
        if acked == 0 {
            return;
        }
    }
    let w = tp.snd_cwnd;
    tcp_cong_avoid_ai(tp, w, acked);
}

/// `tcp_reno_ssthresh` (tcp_cong.c): max(cwnd / 2, 2).
pub fn tcp_reno_ssthresh(tp: &CcSock) -> u32 {
    (tp.snd_cwnd >> 1).max(2)
}

/// `tcp_current_ssthresh` (include/net/tcp.h): ssthresh while a reduction
/// (CWR, Recovery) is under way, else at least 3/4 of cwnd.
pub fn tcp_current_ssthresh(tp: &CcSock) -> u32 {
    if matches!(tp.ca_state, CaState::Cwr | CaState::Recovery) {
        tp.snd_ssthresh
    } else {
        tp.snd_ssthresh
            .max((tp.snd_cwnd >> 1).wrapping_add(tp.snd_cwnd >> 2))
    }
}

/// `tcp_reno_undo_cwnd` (tcp_cong.c): max(cwnd, prior_cwnd); Reno's and
/// CUBIC's `undo_cwnd`, and the end of H-TCP's.
pub fn tcp_reno_undo_cwnd(tp: &CcSock) -> u32 {
    tp.snd_cwnd.max(tp.prior_cwnd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jiffies_start_five_minutes_before_the_wrap() {
        assert_eq!(INITIAL_JIFFIES, 4_294_892_296); // 2^32 − 300·250
        assert_eq!(tcp_jiffies32(SimTime::ZERO), INITIAL_JIFFIES);
        // 3.999 ms is still the first tick; 4 ms is the next
        assert_eq!(
            tcp_jiffies32(SimTime::from_nanos(3_999_999)),
            INITIAL_JIFFIES
        );
        assert_eq!(
            tcp_jiffies32(SimTime::from_nanos(4_000_000)),
            INITIAL_JIFFIES + 1
        );
        // 300 s in: 75 000 ticks wrap the counter to exactly 0
        assert_eq!(tcp_jiffies32(SimTime::from_nanos(300_000_000_000)), 0);
        assert!(after(5, INITIAL_JIFFIES));
        assert!(before(INITIAL_JIFFIES, 5));
    }

    #[test]
    fn usecs_and_msecs_to_jiffies_round_up() {
        assert_eq!(usecs_to_jiffies(0), 0);
        assert_eq!(usecs_to_jiffies(1), 1);
        assert_eq!(usecs_to_jiffies(4_000), 1);
        assert_eq!(usecs_to_jiffies(4_001), 2);
        assert_eq!(usecs_to_jiffies(100_000), 25);
        assert_eq!(msecs_to_jiffies(10), 3); // 2.5 → 3
        assert_eq!(msecs_to_jiffies(20), 5);
        assert_eq!(msecs_to_jiffies(200), 50);
    }

    #[test]
    fn slow_start_adds_every_acked_packet_up_to_ssthresh() {
        let mut tp = CcSock::default(); // cwnd 10, ssthresh ∞
        assert_eq!(tcp_slow_start(&mut tp, 5), 0);
        assert_eq!(tp.snd_cwnd, 15);
        // a 40-segment stretch ACK adds 40 (no ABC cap, docs/semantics/tcp.md §17.9)
        assert_eq!(tcp_slow_start(&mut tp, 40), 0);
        assert_eq!(tp.snd_cwnd, 55);
        // crossing ssthresh 60 with 8 acked: +5, 3 left over
        tp.snd_ssthresh = 60;
        assert_eq!(tcp_slow_start(&mut tp, 8), 3);
        assert_eq!(tp.snd_cwnd, 60);
    }

    #[test]
    fn slow_start_respects_the_clamp() {
        let mut tp = CcSock {
            snd_cwnd_clamp: 12,
            ..CcSock::default()
        };
        assert_eq!(tcp_slow_start(&mut tp, 5), 0);
        assert_eq!(tp.snd_cwnd, 12);
    }

    #[test]
    fn additive_increase_is_one_packet_per_window_acked() {
        let mut tp = CcSock::default();
        for _ in 0..9 {
            tcp_cong_avoid_ai(&mut tp, 10, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (10, 9));
        tcp_cong_avoid_ai(&mut tp, 10, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (11, 0));
        // stretch ACK of 25 at w = 11: +2, 3 left in the counter
        tcp_cong_avoid_ai(&mut tp, 11, 25);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (13, 3));
    }

    #[test]
    fn credit_from_a_larger_w_is_cashed_as_one_packet() {
        let mut tp = CcSock {
            snd_cwnd: 20,
            snd_cwnd_cnt: 50,
            ..CcSock::default()
        };
        // cnt 50 ≥ w 10: cnt → 0, cwnd 21; then +1 acked: cnt 1
        tcp_cong_avoid_ai(&mut tp, 10, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (21, 1));
    }

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        // registration order: the error message of app/tcp.rs and Python's
        // SUPPORTED_CC (schema::registry, tests/test_registries.py) list them so
        assert!(Cc::NAMES.starts_with(&["reno", "cubic", "htcp", "bbr"]));
        for &n in Cc::NAMES {
            assert_eq!(Cc::from_name(n).unwrap().name(), n);
        }
        assert!(Cc::from_name("prague").is_some());
        assert!(Cc::from_name("CUBIC").is_none());
    }

    #[test]
    fn only_bbrs_and_prague_have_cong_control_and_bbrs_triple_sndbuf() {
        for &n in Cc::NAMES {
            let cc = Cc::from_name(n).unwrap();
            let bbr = n == "bbr" || n == "bbr3";
            assert_eq!(cc.has_cong_control(), bbr || n == "prague");
            assert_eq!(cc.sndbuf_expand(), if bbr { 3 } else { 2 });
        }
        let mut reno = Cc::from_name("reno").unwrap();
        let mut tp = CcSock::default();
        assert!(!reno.cong_control(&mut tp, &RateSample::default()));
    }

    /// `tcp_validate_congestion_control`: a module without `cong_control`
    /// must have `cong_avoid` (the trait's empty default is for the others).
    #[test]
    fn every_module_has_cong_avoid_or_cong_control() {
        for &n in Cc::NAMES {
            let mut cc = Cc::from_name(n).unwrap();
            let mut tp = CcSock {
                is_cwnd_limited: true,
                ecn_ok: true,
                ..CcSock::default()
            };
            cc.init(&mut tp);
            // (Hybla's init sets cwnd to its ρ)
            let before = tp.snd_cwnd;
            cc.cong_avoid(&mut tp, 0, 1);
            assert!(cc.has_cong_control() || tp.snd_cwnd > before, "{n}");
        }
    }

    #[test]
    fn set_state_stores_the_new_state_after_the_hook() {
        let mut cc = Cc::from_name("reno").unwrap();
        let mut tp = CcSock::default();
        cc.set_state(&mut tp, CaState::Recovery);
        assert_eq!(tp.ca_state, CaState::Recovery);
        assert!(CaState::Loss > CaState::Recovery && CaState::Cwr < CaState::Recovery);
    }
}

/// The hooks alone, per ACK: `cargo test --release -p bufferlab-core
/// per_ack_cost -- --ignored --nocapture` prints ns per ACK for every
/// module and its ratio to reno's (benches/cc_mainline.py measures the
/// whole engine).
#[cfg(test)]
mod bench {
    use super::*;
    use std::time::Instant;

    /// One simulated ACK clock: every ACK acks 2 packets, with an RTT that
    /// cycles over a 40-sample queue build-up, a loss every 2000 ACKs.
    fn drive(name: &str, acks: u32) -> f64 {
        let mut cc = Cc::from_name(name).unwrap();
        let mut tp = CcSock {
            is_cwnd_limited: true,
            snd_nxt: 100_000,
            srtt_us: 20_000 << 3,
            min_rtt_us: 20_000,
            // ECN negotiated: DCTCP and Prague run themselves, not their
            // Reno fallbacks
            ecn_ok: true,
            ..CcSock::default()
        };
        cc.init(&mut tp);
        let t = Instant::now();
        for i in 0..acks {
            tp.snd_una = tp.snd_una.wrapping_add(2 * 1448);
            tp.snd_nxt = tp.snd_una.wrapping_add(tp.snd_cwnd * 1448);
            tp.now_us += 250;
            tp.clock_ns = tp.now_us * 1000;
            tp.jiffies = INITIAL_JIFFIES.wrapping_add((tp.now_us / 4000) as u32);
            tp.ts_now = (tp.now_us / 1000) as u32;
            tp.rcv_tsecr = tp.ts_now.wrapping_sub(20);
            tp.rcv_tsval = tp.ts_now.wrapping_add(7);
            tp.delivered = tp.delivered.wrapping_add(2);
            let rtt = 20_000 + (i % 40) as i64 * 300;
            cc.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
            let s = AckSample {
                pkts_acked: 2,
                rtt_us: rtt,
                in_flight: tp.snd_cwnd * 1448,
            };
            cc.pkts_acked(&mut tp, &s);
            if cc.has_cong_control() {
                let rs = RateSample {
                    // a mark every 20 ACKs (Prague's ece_delta)
                    ece_delta: (i % 20 == 0) as u32,
                    delivered: 2,
                    interval_us: rtt,
                    rtt_us: rtt,
                    acked_sacked: 2,
                    prior_in_flight: tp.snd_cwnd,
                    prior_delivered: tp.delivered.wrapping_sub(tp.snd_cwnd),
                    ..RateSample::default()
                };
                cc.cong_control(&mut tp, &rs);
            } else {
                let ack = tp.snd_una;
                cc.cong_avoid(&mut tp, ack, 2);
            }
            if tp.enter_cwr {
                tp.enter_cwr = false;
            }
            if i % 2000 == 1999 {
                tp.snd_ssthresh = cc.ssthresh(&mut tp);
                tp.snd_cwnd = tp.snd_ssthresh;
            }
            tp.snd_cwnd = tp.snd_cwnd.clamp(2, 2000);
        }
        std::hint::black_box(&tp);
        t.elapsed().as_nanos() as f64 / acks as f64
    }

    #[test]
    #[ignore]
    fn per_ack_cost() {
        let n = 2_000_000;
        let reno = (0..3).map(|_| drive("reno", n)).fold(f64::MAX, f64::min);
        for &name in Cc::NAMES {
            let ns = (0..3).map(|_| drive(name, n)).fold(f64::MAX, f64::min);
            println!("{name:10} {ns:7.1} ns/ACK  {:.2}x reno", ns / reno);
        }
    }
}
