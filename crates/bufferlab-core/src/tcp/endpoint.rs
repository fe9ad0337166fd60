//! The I/O-free TCP endpoint (tcp.md, docs/tcp-design.md): one connection's
//! sender and receiver, Linux-faithful, with no clock and no I/O.
//!
//! Calling convention (STYLE.md "Sans-I/O models"):
//!
//! * inputs: [`TcpEndpoint::handle_segment`] (a segment arrived),
//!   [`TcpEndpoint::handle_timeout`] (the time from
//!   [`TcpEndpoint::poll_timeout`] has come), and the socket calls
//!   [`TcpEndpoint::write`], [`TcpEndpoint::read`], [`TcpEndpoint::close`]
//!   (plus [`TcpEndpoint::poll_writable`], `select()` for `POLLOUT`);
//! * outputs: [`TcpEndpoint::poll_transmit`] — drain it after every input
//!   at the same instant: the segments the kernel would have handed to IP,
//!   in order — and [`TcpEndpoint::poll_timeout`] (earliest armed timer,
//!   including the pacing release time).
//!
//! Each input runs to completion the way the kernel's softirq does — an ACK
//! runs `tcp_ack()` (loss detection, congestion control), then
//! `tcp_xmit_recovery()`, `tcp_data_snd_check()` and `tcp_ack_snd_check()`
//! (net/ipv4/tcp_input.c `tcp_rcv_established`) — so every decision sees
//! exactly the state Linux's would, and transmission time stamps, rate
//! snapshots and PRR's `prr_out` advance segment by segment as in
//! `tcp_write_xmit`. The segments produced wait in a reused `VecDeque` (no
//! allocation per segment once warm).
//!
//! Where the code lives: this file has the public API, connection set-up and
//! tear-down (`tcp_connect`, `tcp_rcv_synsent_state_process`,
//! `tcp_rcv_state_process`), the send path (`tcp_write_xmit`,
//! `__tcp_transmit_skb`, `__tcp_retransmit_skb`, EDT pacing, cwnd
//! validation, send-buffer sizing) and the timers (`tcp_retransmit_timer`,
//! `tcp_send_loss_probe`, `tcp_probe_timer`, delayed ACK; net/ipv4/
//! tcp_output.c, tcp_timer.c); input/ has `tcp_ack()` and the recovery state
//! machine (tcp.md §8–9) over the pieces in recovery/; rcv.rs the receiver (§7).
//!
//! Clocks: `tcp_mstamp` is the simulated time in µs plus [`CLOCK_BASE_US`]
//! (the kernel treats a zero stamp as "none"); jiffies come from
//! `cc::tcp_jiffies32` (HZ 250) and jiffy timers fire on tick boundaries.
//!
//! TSO/GSO (tcp.md §2.1, §6.1 step 5, §6.3): with [`TcpConfig::gso_max_size`]
//! non-zero, `tcp_write_xmit` cuts the write queue into skbs of up to
//! `tcp_tso_autosize` segments, may defer a short one
//! (`tcp_tso_should_defer`), and hands each to IP as one [`Segment`] whose
//! `gso_segs` counts its MSS-sized pieces; retransmissions of neighbouring
//! lost segments leave together as Linux's `__tcp_retransmit_skb` sends
//! them (up to the free cwnd). The scoreboard keeps one entry per MSS, the
//! granularity Linux reaches by fragmenting skbs on SACKs. With it zero
//! every skb is one MSS (`gso_mode = off`).
//!
//! Not modelled: TSQ, urgent data,
//! keep-alive, Fast Open, MTU probing, PAWS rejection, SYN cookies,
//! simultaneous open, autocorking, the route-metrics cache
//! (`tcp_no_metrics_save`), and receiver memory pressure beyond dropping
//! what does not fit `sk_rcvbuf`. An `fq` qdisc's EDT pacing
//! ([`TcpConfig::pacing`]) is approximated by holding segments in the
//! endpoint until their departure time (same schedule; they reach the
//! qdisc later).

use std::collections::VecDeque;
use std::fmt;

use super::cc::{
    tcp_jiffies32, usecs_to_jiffies, CaEvent, CaState, Cc, CcProfile, CcSock, HZ,
    TCP_INFINITE_SSTHRESH,
};
use super::minmax::MinMax;
use super::rate::RateState;
use super::rcv::Receiver;
use super::recovery::{Prr, Rack, Scoreboard, Seg, Undo, RETRANS};
use super::rtt::{
    jiffies_to_usecs, RttEstimator, TCP_RTO_MAX, TCP_RTO_MIN, TCP_TIMEOUT_INIT, TCP_TIMEOUT_MIN,
    TCP_TIMEOUT_MIN_US,
};
use super::seq::{after, before};
use super::timers::{jiffies_deadline, TcpTimer, TimerTable, NS_PER_JIFFY};
use crate::packet::{tcp_flags, Ipv4, TcpHeader};
use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime};

/// `TCP_MSS_DEFAULT`: the MSS assumed before the peer's SYN option is known.
pub const TCP_MSS_DEFAULT: u32 = 536;
/// `TCP_MIN_MSS`.
pub const TCP_MIN_MSS: u32 = 88;
/// TCP header with the aligned timestamp option, bytes.
pub const TCP_HEADER_TS: u32 = 32;
/// `TCPOLEN_TSTAMP_ALIGNED`.
pub const TCPOLEN_TSTAMP_ALIGNED: u32 = 12;
/// `MAX_TCP_HEADER` on x86-64, bytes (skb headroom; sndbuf/rcvbuf sizing).
pub const MAX_TCP_HEADER: u32 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))`, bytes.
pub const SKB_SHINFO: u32 = 320;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))`, bytes.
pub const SKB_STRUCT: u32 = 256;
/// `TCP_MAX_WSCALE`.
pub const TCP_MAX_WSCALE: u8 = 14;
/// `tcp_syn_retries` default.
pub const TCP_SYN_RETRIES: u32 = 6;
/// `tcp_synack_retries` default.
pub const TCP_SYNACK_RETRIES: u32 = 5;
/// `tcp_max_reordering` default.
pub const TCP_MAX_REORDERING: u32 = 300;
/// `TCP_TIMEWAIT_LEN`: 60 s.
pub const TCP_TIMEWAIT: SimDuration = SimDuration::from_secs(60);
/// Send-buffer overhead per queued payload byte with TSO-sized skbs
/// (tcp.md §6.2: `queued × 1.05 < sndbuf`), as a ratio ×100.
pub const SNDBUF_OVERHEAD_PCT: u64 = 105;
/// `sk_pacing_shift` default: TSO skbs hold ~1 ms (2^-10 s) of the pacing rate.
const SK_PACING_SHIFT: u32 = 10;
/// `net.ipv4.tcp_tso_rtt_log` default \[modern\].
const TCP_TSO_RTT_LOG: u32 = 9;
/// `net.ipv4.tcp_tso_win_divisor` default.
const TCP_TSO_WIN_DIVISOR: u32 = 3;
/// `GSO_MAX_SEGS` (`sk_gso_max_segs` of a veth).
const GSO_MAX_SEGS: u32 = 65535;
/// `tcp_mstamp` at simulated time zero, µs: the kernel's clocks are never
/// zero (0 means "no timestamp" in many places), so ours start at 1 s.
pub const CLOCK_BASE_US: u64 = 1_000_000;

/// Socket and sysctl settings of one endpoint (Linux defaults in
/// [`TcpConfig::default`] / [`TcpConfig::for_profile`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TcpConfig {
    /// MSS advertised in the SYN, bytes: path MTU − 40 = 1460 on a 1500-byte
    /// path; the sending MSS is this minus 12 with timestamps (1448).
    pub mss: u32,
    /// path MTU, bytes (`tcpi_pmtu`)
    pub pmtu: u32,
    /// `net.ipv4.tcp_rmem` (min, default, max), bytes
    pub rmem: [u32; 3],
    /// `net.ipv4.tcp_wmem` (min, default, max), bytes
    pub wmem: [u32; 3],
    /// `net.core.rmem_max`
    pub rmem_max: u32,
    /// `net.core.wmem_max`
    pub wmem_max: u32,
    /// `net.ipv4.tcp_congestion_control`
    pub congestion: String,
    /// `net.ipv4.tcp_ecn`: 0 off, 1 request and accept, 2 accept only
    pub ecn: u8,
    /// `net.ipv4.tcp_sack`
    pub sack: bool,
    /// `net.ipv4.tcp_timestamps`
    pub timestamps: bool,
    /// `net.ipv4.tcp_window_scaling`
    pub window_scaling: bool,
    /// `net.ipv4.tcp_moderate_rcvbuf` (receive autotuning)
    pub moderate_rcvbuf: bool,
    /// `net.ipv4.tcp_adv_win_scale` (lab2019 `tcp_win_from_space`)
    pub adv_win_scale: i32,
    /// `net.ipv4.tcp_slow_start_after_idle`
    pub slow_start_after_idle: bool,
    /// `net.ipv4.tcp_no_metrics_save` (the metrics cache is not modelled)
    pub no_metrics_save: bool,
    /// `TCP_RTO_MIN` / route `rto_min`
    pub min_rto: SimDuration,
    /// initial congestion window, packets (`TCP_INIT_CWND`)
    pub init_cwnd: u32,
    /// `SO_SNDBUF` request (iperf3 `-w`): the buffer is twice this, capped at
    /// 2 × wmem_max, and autotuning is off for it
    pub sndbuf: Option<u32>,
    /// `SO_RCVBUF` request: as `sndbuf` for the receive buffer
    pub rcvbuf: Option<u32>,
    /// an `fq` qdisc paces this flow (EDT pacing at `sk_pacing_rate`)
    pub pacing: bool,
    /// `SO_MAX_PACING_RATE` (iperf3 `--fq-rate`), bytes/s; `u64::MAX` = none
    pub max_pacing_rate: u64,
    /// `TCP_NODELAY`
    pub nodelay: bool,
    /// kernel profile (tcp.md: `lab2019` or `modern`)
    pub profile: CcProfile,
    /// IP TOS byte of the socket; TCP owns the ECN bits
    pub tos: u8,
    /// seed mixed into the endpoint's random draws (ISN, TS offset, BBR)
    pub seed: u64,
    /// `sk_gso_max_size` of the route's device, bytes: 65536 on a veth with
    /// TSO/GSO on (a Mininet host); 0 = GSO off (every skb one MSS)
    pub gso_max_size: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::for_profile(CcProfile::Lab2019)
    }
}

impl TcpConfig {
    /// Linux's defaults for a kernel profile (`tcp_init`, tcp_ipv4.c).
    pub fn for_profile(profile: CcProfile) -> Self {
        let rmem1 = match profile {
            CcProfile::Lab2019 => 87_380,
            CcProfile::Modern => 131_072,
        };
        TcpConfig {
            mss: 1460,
            pmtu: 1500,
            rmem: [4096, rmem1, 6_291_456],
            wmem: [4096, 16_384, 4_194_304],
            rmem_max: 212_992,
            wmem_max: 212_992,
            congestion: "cubic".to_string(),
            ecn: 2,
            sack: true,
            timestamps: true,
            window_scaling: true,
            moderate_rcvbuf: true,
            adv_win_scale: 1,
            slow_start_after_idle: true,
            no_metrics_save: false,
            min_rto: SimDuration::from_millis(200),
            init_cwnd: 10,
            sndbuf: None,
            rcvbuf: None,
            pacing: false,
            max_pacing_rate: u64::MAX,
            nodelay: false,
            profile,
            tos: 0,
            seed: 0,
            gso_max_size: 0,
        }
    }
}

/// RFC 793 connection states (`enum tcp_states`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcpState {
    Closed,
    Listen,
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
}

impl fmt::Display for TcpState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TcpState::Closed => "CLOSED",
            TcpState::Listen => "LISTEN",
            TcpState::SynSent => "SYN-SENT",
            TcpState::SynReceived => "SYN-RECEIVED",
            TcpState::Established => "ESTABLISHED",
            TcpState::FinWait1 => "FIN-WAIT-1",
            TcpState::FinWait2 => "FIN-WAIT-2",
            TcpState::CloseWait => "CLOSE-WAIT",
            TcpState::Closing => "CLOSING",
            TcpState::LastAck => "LAST-ACK",
            TcpState::TimeWait => "TIME-WAIT",
        })
    }
}

/// One skb handed to IP: a single segment, or a TSO/GSO aggregate of
/// `gso_segs` segments of `gso_size` payload bytes (the last may be shorter)
/// that share `hdr` (its sequence number is the first segment's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub hdr: TcpHeader,
    /// payload bytes over all segments (SYN/FIN not counted)
    pub payload_len: u32,
    /// set ECT(0) in the IP header (new data of an ECN connection)
    pub ect: bool,
    /// segments in this skb (`tcp_skb_pcount`), at least 1
    pub gso_segs: u32,
    /// payload bytes per segment (`mss_now` when the skb was cut)
    pub gso_size: u32,
}

impl Segment {
    /// An skb of one segment, cut with MSS `gso_size`.
    pub fn single(hdr: TcpHeader, payload_len: u32, ect: bool, gso_size: u32) -> Segment {
        Segment {
            hdr,
            payload_len,
            ect,
            gso_segs: 1,
            gso_size,
        }
    }

    /// L2 bytes as qdiscs count them (`qdisc_pkt_len`): one Ethernet + IP +
    /// TCP header per segment (qdiscs.md §1.2) plus the payload.
    pub fn frame_len(&self) -> u32 {
        self.gso_segs
            * (crate::packet::ETH_HEADER + crate::packet::IPV4_HEADER + self.hdr.header_len())
            + self.payload_len
    }
}

/// The `struct tcp_info` fields downstream code reads (tcp.md §14), as
/// `getsockopt(TCP_INFO)` would report them at this instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    pub state: Option<TcpState>,
    pub ca_state: u8,
    pub retransmits: u32,
    pub probes: u32,
    pub backoff: u32,
    /// TCPI_OPT_* bits (1 TS, 2 SACK, 4 WSCALE, 8 ECN)
    pub options: u8,
    pub snd_wscale: u8,
    pub rcv_wscale: u8,
    pub delivery_rate_app_limited: bool,
    /// µs
    pub rto: u32,
    /// µs
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub last_data_sent_ms: u32,
    pub last_data_recv_ms: u32,
    pub last_ack_recv_ms: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    /// smoothed RTT, µs
    pub rtt: u32,
    /// mean deviation, µs (`mdev_us >> 2`, not the RTO's rttvar)
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    /// packets
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    /// receiver RTT estimate, µs
    pub rcv_rtt: u32,
    /// receive autotuning's bytes-per-RTT estimate
    pub rcv_space: u32,
    pub total_retrans: u32,
    /// bytes/s
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    /// µs (`tcp_min_rtt`; `u32::MAX` before a sample)
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    /// bytes/s
    pub delivery_rate: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    /// peer's window, bytes
    pub snd_wnd: u32,
    /// our advertised window, bytes
    pub rcv_wnd: u32,
    /// send buffer size (`sk_sndbuf`), bytes
    pub sndbuf: u32,
    /// receive buffer size (`sk_rcvbuf`), bytes
    pub rcvbuf: u32,
}

/// `flag` bits of `tcp_ack()` (net/ipv4/tcp_input.c).
pub(super) mod flag {
    pub const DATA: u32 = 0x01;
    pub const WIN_UPDATE: u32 = 0x02;
    pub const DATA_ACKED: u32 = 0x04;
    pub const RETRANS_DATA_ACKED: u32 = 0x08;
    pub const SYN_ACKED: u32 = 0x10;
    pub const DATA_SACKED: u32 = 0x20;
    pub const ECE: u32 = 0x40;
    pub const LOST_RETRANS: u32 = 0x80;
    pub const SLOWPATH: u32 = 0x100;
    pub const ORIG_SACK_ACKED: u32 = 0x200;
    pub const SND_UNA_ADVANCED: u32 = 0x400;
    pub const DSACKING_ACK: u32 = 0x800;
    pub const SET_XMIT_TIMER: u32 = 0x1000;
    pub const SACK_RENEGING: u32 = 0x2000;
    pub const UPDATE_TS_RECENT: u32 = 0x4000;
    pub const ACK_MAYBE_DELAYED: u32 = 0x10000;
    pub const DSACK_TLP: u32 = 0x20000;
    pub const ACKED: u32 = DATA_ACKED | SYN_ACKED;
    pub const NOT_DUP: u32 = DATA | WIN_UPDATE | ACKED;
    pub const CA_ALERT: u32 = DATA_SACKED | ECE | DSACKING_ACK;
    pub const FORWARD_PROGRESS: u32 = ACKED | DATA_SACKED;
}

/// What loss recovery asks to (re)transmit after an ACK (`REXMIT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rexmit {
    None,
    Lost,
    New,
}

/// A Linux-faithful TCP connection without I/O. See the module doc for the
/// calling convention.
pub struct TcpEndpoint {
    // ---- identity, configuration, plumbing
    pub(super) cfg: TcpConfig,
    pub(super) local: (Ipv4, u16),
    pub(super) remote: (Ipv4, u16),
    pub(super) state: TcpState,
    pub(super) timers: TimerTable,
    pub(super) out: VecDeque<Segment>,
    /// the next emitted data segment continues the skb at the back of `out`
    /// (the pieces of one TSO skb, or a retransmission of the neighbour of
    /// the segment just retransmitted)
    pub(super) gso_continue: bool,
    /// `tcp_clock_cache` (ns) of the input being processed
    pub(super) now: SimTime,
    /// `tcp_mstamp`, µs
    pub(super) now_us: u64,

    // ---- negotiated options
    pub(super) sack_ok: bool,
    pub(super) ts_ok: bool,
    pub(super) wscale_ok: bool,
    pub(super) snd_wscale: u8,
    pub(super) ecn_ok: bool,
    pub(super) tsoffset: u32,
    /// `rx_opt.ts_recent`: the peer's TSval to echo
    pub(super) ts_recent: u32,
    /// the segment being processed carried timestamps (`rx_opt.saw_tstamp`)
    pub(super) saw_tstamp: bool,
    pub(super) rcv_tsval: u32,
    pub(super) rcv_tsecr: u32,

    // ---- send sequence space
    pub(super) iss: u32,
    pub(super) snd_una: u32,
    pub(super) snd_nxt: u32,
    /// end of the application's data (+1 once a FIN is queued)
    pub(super) write_seq: u32,
    pub(super) fin_queued: bool,
    pub(super) snd_wnd: u32,
    pub(super) snd_wl1: u32,
    pub(super) max_window: u32,
    pub(super) snd_sml: u32,
    pub(super) bytes_acked: u64,
    /// `mss_cache`: sending MSS, bytes
    pub(super) mss_cache: u32,
    /// our advertised MSS
    pub(super) advmss: u32,
    /// the peer's MSS option (`rx_opt.mss_clamp`)
    pub(super) mss_clamp: u32,

    // ---- congestion control and loss recovery
    pub(super) cc: Cc,
    /// cwnd, ssthresh, ca_state, pacing rate live here (tcp-design.md)
    pub(super) cs: CcSock,
    pub(super) sb: Scoreboard,
    pub(super) rate: RateState,
    pub(super) rtt: RttEstimator,
    pub(super) rtt_min: MinMax,
    /// `icsk_rto`, jiffies (includes backoff)
    pub(super) icsk_rto: u32,
    pub(super) backoff: u32,
    /// `icsk_retransmits`: RTOs since the last forward progress
    pub(super) retransmits: u32,
    pub(super) probes_out: u32,
    pub(super) total_retrans: u32,
    pub(super) total_rto: u32,
    pub(super) lost: u32,
    pub(super) high_seq: u32,
    pub(super) undo: Undo,
    /// TS-clock stamp of the first retransmission of the episode (0 = none)
    pub(super) retrans_stamp: u32,
    pub(super) reordering: u32,
    pub(super) reord_seen: u32,
    pub(super) frto: bool,
    pub(super) tlp_high_seq: u32,
    pub(super) tlp_retrans: bool,
    pub(super) is_sack_reneg: bool,
    pub(super) prr: Prr,
    pub(super) rack: Rack,
    pub(super) dsack_dups: u32,
    /// retransmissions `tcp_ack` asked for, done by `tcp_xmit_recovery`
    pub(super) rexmit: Rexmit,

    // ---- cwnd validation (RFC 2861 / 7661 as Linux does it)
    pub(super) is_cwnd_limited: bool,
    pub(super) max_packets_out: u32,
    pub(super) cwnd_usage_seq: u32,
    pub(super) snd_cwnd_used: u32,
    pub(super) snd_cwnd_stamp: u32,
    pub(super) lsndtime: u32,
    /// `tcp_rcv_tstamp`: jiffies of the last ACK received
    pub(super) rcv_tstamp: u32,

    // ---- pacing (EDT, tcp.md §12)
    pub(super) wstamp_ns: u64,
    pub(super) data_segs_out: u32,

    // ---- ECN (RFC 3168)
    pub(super) ecn_queue_cwr: bool,

    // ---- send buffer
    pub(super) sndbuf: u32,
    pub(super) sndbuf_locked: bool,
    /// `SOCK_NOSPACE`: the application found the buffer full
    pub(super) nospace: bool,

    // ---- receiver
    pub(super) rcv: Receiver,
    /// SYN-ACK retransmissions (passive side, `req->num_retrans`)
    pub(super) synack_retrans: u32,
    /// SYN-ACK time for the passive open's RTT sample, µs
    pub(super) synack_sent_us: u64,

    // ---- counters
    pub(super) segs_out: u32,
    pub(super) segs_in: u32,
    pub(super) data_segs_in: u32,
    pub(super) bytes_sent: u64,
    pub(super) bytes_retrans: u64,
    pub(super) last_data_recv: u32,
}

impl TcpEndpoint {
    fn new(
        cfg: TcpConfig,
        local: (Ipv4, u16),
        remote: (Ipv4, u16),
        now: SimTime,
        rng: &mut ComponentRng,
    ) -> Self {
        let cc_rng = ComponentRng::new(cfg.seed ^ rng.next_u64(), "tcp/cc");
        let cc = Cc::from_name_with(&cfg.congestion, cfg.profile, cc_rng)
            .or_else(|| Cc::from_name_with("cubic", cfg.profile, ComponentRng::new(0, "tcp/cc")))
            .expect("cubic exists");
        let iss = rng.next_u32();
        let tsoffset = if cfg.timestamps { rng.next_u32() } else { 0 };
        let rto_min_us = (cfg.min_rto.as_nanos() / 1000) as u32;
        let mut cs = CcSock {
            snd_cwnd: cfg.init_cwnd.max(1),
            max_pacing_rate: cfg.max_pacing_rate,
            pacing_rate: u64::MAX,
            pacing_status_needed: cfg.pacing,
            tso_segs_goal: 1,
            ..CcSock::default()
        };
        cs.set_clock(now);
        cs.now_us = now.as_nanos() / 1000 + CLOCK_BASE_US;
        let jiffies = tcp_jiffies32(now);
        // SO_SNDBUF / SO_RCVBUF: doubled, capped at twice the core maximum
        let (sndbuf, sndbuf_locked) = match cfg.sndbuf {
            Some(v) => (v.min(cfg.wmem_max).saturating_mul(2).max(4608), true),
            None => (cfg.wmem[1], false),
        };
        let (rcvbuf, rcvbuf_locked) = match cfg.rcvbuf {
            Some(v) => (v.min(cfg.rmem_max).saturating_mul(2).max(2304), true),
            None => (cfg.rmem[1], false),
        };
        let advmss = cfg.mss.min(cfg.pmtu.saturating_sub(40)).max(TCP_MIN_MSS);
        let rcv = Receiver::new(&cfg, rcvbuf, rcvbuf_locked, advmss);
        let icsk_rto = TCP_TIMEOUT_INIT;
        TcpEndpoint {
            local,
            remote,
            state: TcpState::Closed,
            timers: TimerTable::default(),
            out: VecDeque::with_capacity(64),
            now,
            now_us: now.as_nanos() / 1000 + CLOCK_BASE_US,
            sack_ok: false,
            ts_ok: false,
            wscale_ok: false,
            snd_wscale: 0,
            ecn_ok: false,
            tsoffset,
            ts_recent: 0,
            saw_tstamp: false,
            rcv_tsval: 0,
            rcv_tsecr: 0,
            iss,
            snd_una: iss,
            snd_nxt: iss,
            write_seq: iss,
            fin_queued: false,
            snd_wnd: 0,
            snd_wl1: 0,
            max_window: 0,
            snd_sml: iss,
            bytes_acked: 0,
            mss_cache: TCP_MSS_DEFAULT,
            advmss,
            mss_clamp: TCP_MSS_DEFAULT,
            cc,
            cs,
            sb: Scoreboard::new(),
            rate: RateState::default(),
            rtt: RttEstimator::new(rto_min_us),
            rtt_min: MinMax::new(jiffies, u32::MAX),
            icsk_rto,
            backoff: 0,
            retransmits: 0,
            probes_out: 0,
            total_retrans: 0,
            total_rto: 0,
            lost: 0,
            high_seq: 0,
            undo: Undo::default(),
            retrans_stamp: 0,
            reordering: 3,
            reord_seen: 0,
            frto: false,
            tlp_high_seq: 0,
            tlp_retrans: false,
            is_sack_reneg: false,
            prr: Prr::default(),
            rack: Rack::default(),
            dsack_dups: 0,
            rexmit: Rexmit::None,
            is_cwnd_limited: false,
            max_packets_out: 0,
            cwnd_usage_seq: iss,
            snd_cwnd_used: 0,
            snd_cwnd_stamp: jiffies,
            lsndtime: jiffies,
            rcv_tstamp: jiffies,
            wstamp_ns: 0,
            data_segs_out: 0,
            ecn_queue_cwr: false,
            sndbuf,
            sndbuf_locked,
            nospace: false,
            rcv,
            synack_retrans: 0,
            synack_sent_us: 0,
            segs_out: 0,
            segs_in: 0,
            data_segs_in: 0,
            bytes_sent: 0,
            bytes_retrans: 0,
            last_data_recv: jiffies,
            gso_continue: false,
            cfg,
        }
    }

    /// Active open (`tcp_connect`): sends the SYN.
    pub fn connect(
        cfg: TcpConfig,
        local: (Ipv4, u16),
        remote: (Ipv4, u16),
        now: SimTime,
        mut rng: ComponentRng,
    ) -> Self {
        let mut ep = TcpEndpoint::new(cfg, local, remote, now, &mut rng);
        ep.set_clock(now);
        // tcp_connect_init: our window and scale; the peer's MSS is unknown
        ep.rcv
            .select_initial_window(&ep.cfg, ep.advmss, ep.cfg.window_scaling);
        ep.rcv
            .initialize_rcv_mss(ep.advmss, ep.mss_cache_for(TCP_MSS_DEFAULT));
        ep.set_state(TcpState::SynSent);
        // the SYN sits on the retransmission queue like data (tcp_connect_queue_skb)
        ep.write_seq = ep.iss.wrapping_add(1);
        ep.retrans_stamp = ep.ts_now();
        ep.send_syn();
        ep.snd_nxt = ep.write_seq;
        let rto = ep.icsk_rto;
        ep.reset_xmit_timer(TcpTimer::Retransmit, rto, false);
        ep
    }

    /// Passive open from a received SYN (`tcp_conn_request` +
    /// `tcp_openreq_init_rwin` + `tcp_make_synack`): sends the SYN-ACK.
    pub fn listen_accept(
        cfg: TcpConfig,
        local: (Ipv4, u16),
        remote: (Ipv4, u16),
        syn: &TcpHeader,
        now: SimTime,
        mut rng: ComponentRng,
    ) -> Self {
        let mut ep = TcpEndpoint::new(cfg, local, remote, now, &mut rng);
        ep.set_clock(now);
        ep.segs_in += 1;
        // tcp_parse_options on the SYN
        ep.parse_syn_options(syn);
        ep.rcv.rcv_nxt = syn.seq.wrapping_add(1);
        ep.rcv.rcv_wup = ep.rcv.rcv_nxt;
        ep.rcv.copied_seq = ep.rcv.rcv_nxt;
        ep.rcv.space_seq = ep.rcv.rcv_nxt;
        // tcp_ecn_create_request: ECN only if the SYN asked (ECE+CWR) and tcp_ecn != 0
        let ece_cwr = tcp_flags::ECE | tcp_flags::CWR;
        ep.ecn_ok = syn.flags & ece_cwr == ece_cwr && ep.cfg.ecn != 0;
        // tcp_openreq_init_rwin: the window offered with mss minus the TS option
        let mss = ep.advmss - if ep.ts_ok { TCPOLEN_TSTAMP_ALIGNED } else { 0 };
        ep.rcv
            .select_initial_window(&ep.cfg, mss, ep.wscale_ok && ep.cfg.window_scaling);
        if !ep.wscale_ok {
            ep.rcv.rcv_wscale = 0;
        }
        ep.sync_mss();
        ep.rcv.initialize_rcv_mss(ep.advmss, ep.mss_cache);
        ep.snd_wnd = syn.window as u32; // SYN windows are never scaled
        ep.snd_wl1 = syn.seq;
        ep.max_window = ep.snd_wnd;
        ep.set_state(TcpState::SynReceived);
        ep.write_seq = ep.iss.wrapping_add(1);
        ep.snd_nxt = ep.write_seq;
        ep.send_synack();
        let rto = TCP_TIMEOUT_INIT;
        ep.timers
            .set_xmit(TcpTimer::Retransmit, jiffies_deadline(now, rto));
        ep
    }

    /// An skb arrived (`tcp_v4_rcv` → `tcp_rcv_state_process` /
    /// `tcp_rcv_established`). `payload_len` excludes SYN/FIN; `gso_size`
    /// is the segment size of an aggregate (0 for a single segment);
    /// `ecn_ce` is the IP header's CE mark.
    pub fn handle_segment(
        &mut self,
        now: SimTime,
        hdr: &TcpHeader,
        payload_len: u32,
        gso_size: u32,
        ecn_ce: bool,
    ) {
        self.set_clock(now);
        // tcp_segs_in counts the segments an aggregate stands for
        let segs = if gso_size > 0 {
            payload_len.div_ceil(gso_size).max(1)
        } else {
            1
        };
        self.segs_in = self.segs_in.wrapping_add(segs);
        if payload_len > 0 {
            self.data_segs_in = self.data_segs_in.wrapping_add(segs);
        }
        self.rcv.skb_gso_size = gso_size;
        self.parse_timestamps(hdr);
        match self.state {
            TcpState::Closed | TcpState::Listen => {}
            TcpState::SynSent => self.rcv_synsent(hdr, payload_len),
            _ => self.rcv_state_process(hdr, payload_len, ecn_ce),
        }
    }

    /// The next segment to hand to IP, if any (drain after every input).
    pub fn poll_transmit(&mut self, _now: SimTime) -> Option<Segment> {
        self.out.pop_front()
    }

    /// Earliest armed timer (RTO/TLP/REO/probe, delayed ACK, pacing release,
    /// SACK compression, TIME-WAIT).
    pub fn poll_timeout(&self) -> Option<SimTime> {
        self.timers.next()
    }

    /// Serve every timer due at `now`.
    pub fn handle_timeout(&mut self, now: SimTime) {
        self.set_clock(now);
        while let Some(t) = self.timers.take_expired(now) {
            match t {
                TcpTimer::DelayedAck => self.delack_timer(),
                TcpTimer::CompressedAck => self.compressed_ack_timer(),
                TcpTimer::Retransmit => self.retransmit_timer(),
                TcpTimer::LossProbe => self.send_loss_probe(),
                TcpTimer::ReoTimeout => self.rack_reo_timeout(),
                TcpTimer::Probe0 => self.probe_timer(),
                TcpTimer::Pacing => self.tsq_write(),
                TcpTimer::TimeWait => {
                    self.set_state(TcpState::Closed);
                    self.timers.clear_all();
                }
            }
        }
    }

    /// The application writes `bytes` (`tcp_sendmsg`); returns how many the
    /// send buffer accepted (tcp.md §6.2) and pushes what may be sent now.
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
            self.write_seq = self.write_seq.wrapping_add(n as u32);
            if established {
                self.push_pending_frames(false);
            }
        }
        n
    }

    /// Bytes the application may write now.
    pub fn send_space(&self) -> u64 {
        let limit = self.sndbuf as u64 * 100 / SNDBUF_OVERHEAD_PCT;
        limit.saturating_sub(self.queued_bytes() as u64)
    }

    /// `sk_stream_is_writeable`: free space ≥ half of what is queued
    /// (`select()` reports writable), tcp.md §6.2. A pure query; an
    /// application that waits for writability should use
    /// [`TcpEndpoint::poll_writable`].
    pub fn writable(&self) -> bool {
        let queued = self.queued_bytes() as u64 * SNDBUF_OVERHEAD_PCT / 100;
        !self.fin_queued && queued * 3 / 2 <= self.sndbuf as u64
    }

    /// `tcp_poll` for `POLLOUT`: as [`TcpEndpoint::writable`], and a "no"
    /// marks the socket `SOCK_NOSPACE` — the application is blocked on the
    /// send buffer, which lets ACKs grow it (`tcp_new_space`). iperf3's
    /// `select()` loop is exactly this.
    pub fn poll_writable(&mut self) -> bool {
        let w = self.writable();
        if !w {
            self.nospace = true;
        }
        w
    }

    /// The application reads up to `max` in-order bytes (`tcp_recvmsg`);
    /// may send a window update (`tcp_cleanup_rbuf`).
    pub fn read(&mut self, now: SimTime, max: u64) -> u64 {
        self.set_clock(now);
        let n = self.rcv.consume(max);
        if n > 0 || self.rcv.readable() == 0 {
            self.rcv_space_adjust();
            self.cleanup_rbuf(n as u32);
        }
        n
    }

    /// Bytes waiting to be read.
    pub fn readable(&self) -> u64 {
        self.rcv.readable()
    }

    /// The peer's FIN has been received and all data before it read.
    pub fn eof(&self) -> bool {
        self.rcv.fin_received && self.rcv.readable() == 0
    }

    /// `close()` / `shutdown(SHUT_WR)`: a FIN follows the queued data.
    pub fn close(&mut self, now: SimTime) {
        self.set_clock(now);
        match self.state {
            TcpState::Established => self.set_state(TcpState::FinWait1),
            TcpState::CloseWait => self.set_state(TcpState::LastAck),
            TcpState::SynSent | TcpState::Closed | TcpState::Listen => {
                self.set_state(TcpState::Closed);
                self.timers.clear_all();
                return;
            }
            _ => return,
        }
        // tcp_send_fin: the FIN takes one sequence number after the data
        self.fin_queued = true;
        self.write_seq = self.write_seq.wrapping_add(1);
        self.push_pending_frames(true);
    }

    pub fn state(&self) -> TcpState {
        self.state
    }

    /// Local address and port.
    pub fn local(&self) -> (Ipv4, u16) {
        self.local
    }

    /// Remote address and port.
    pub fn remote(&self) -> (Ipv4, u16) {
        self.remote
    }

    /// The congestion-control module (for traces: [`Cc::metrics`]).
    pub fn cc(&self) -> &Cc {
        &self.cc
    }

    /// `getsockopt(TCP_INFO)` (net/ipv4/tcp.c `tcp_get_info`).
    pub fn info(&self) -> TcpInfo {
        let jiffies = tcp_jiffies32(self.now);
        let since_ms = |t: u32| jiffies.wrapping_sub(t).wrapping_mul(1000 / HZ);
        let mut options = 0u8;
        if self.ts_ok {
            options |= 1;
        }
        if self.sack_ok {
            options |= 2;
        }
        if self.wscale_ok {
            options |= 4;
        }
        if self.ecn_ok {
            options |= 8;
        }
        let cwnd = self.cs.snd_cwnd;
        let ssthresh = self.cs.snd_ssthresh;
        TcpInfo {
            state: Some(self.state),
            ca_state: self.cs.ca_state as u8,
            retransmits: self.retransmits,
            probes: self.probes_out,
            backoff: self.backoff,
            options,
            snd_wscale: self.snd_wscale,
            rcv_wscale: self.rcv.rcv_wscale,
            delivery_rate_app_limited: self.rate.rate_app_limited,
            rto: jiffies_to_usecs(self.icsk_rto),
            ato: jiffies_to_usecs(self.rcv.ato),
            snd_mss: self.mss_cache,
            rcv_mss: self.rcv.rcv_mss,
            unacked: self.sb.packets_out,
            sacked: self.sb.sacked_out,
            lost: self.sb.lost_out,
            retrans: self.sb.retrans_out,
            last_data_sent_ms: since_ms(self.lsndtime),
            last_data_recv_ms: since_ms(self.last_data_recv),
            last_ack_recv_ms: since_ms(self.rcv_tstamp),
            pmtu: self.cfg.pmtu,
            rcv_ssthresh: self.rcv.rcv_ssthresh,
            rtt: self.rtt.srtt_us >> 3,
            rttvar: self.rtt.mdev_us >> 2,
            // tcp_in_initial_slowstart: ssthresh still infinite
            snd_ssthresh: if ssthresh >= TCP_INFINITE_SSTHRESH {
                TCP_INFINITE_SSTHRESH
            } else {
                ssthresh
            },
            snd_cwnd: cwnd,
            advmss: self.advmss,
            reordering: self.reordering,
            rcv_rtt: self.rcv.rcv_rtt_us >> 3,
            rcv_space: self.rcv.space,
            total_retrans: self.total_retrans,
            pacing_rate: self.cs.pacing_rate,
            max_pacing_rate: self.cs.max_pacing_rate,
            bytes_acked: self.bytes_acked,
            bytes_received: self.rcv.bytes_received,
            segs_out: self.segs_out,
            segs_in: self.segs_in,
            notsent_bytes: self.unsent_bytes(),
            min_rtt: self.rtt_min.get(),
            data_segs_in: self.data_segs_in,
            data_segs_out: self.data_segs_out,
            delivery_rate: self.rate.delivery_rate(self.mss_cache),
            delivered: self.rate.delivered,
            delivered_ce: self.rate.delivered_ce,
            bytes_sent: self.bytes_sent,
            bytes_retrans: self.bytes_retrans,
            dsack_dups: self.dsack_dups,
            reord_seen: self.reord_seen,
            snd_wnd: self.snd_wnd,
            rcv_wnd: self.rcv.rcv_wnd,
            sndbuf: self.sndbuf,
            rcvbuf: self.rcv.rcvbuf,
        }
    }

    // =====================================================================
    // small helpers
    // =====================================================================

    pub(super) fn set_clock(&mut self, now: SimTime) {
        debug_assert!(now >= self.now, "time went backwards");
        self.now = now;
        self.now_us = now.as_nanos() / 1000 + CLOCK_BASE_US;
        self.cs.set_clock(now);
        self.cs.now_us = self.now_us;
    }

    #[inline]
    pub(super) fn jiffies(&self) -> u32 {
        self.cs.jiffies
    }

    /// `tcp_time_stamp_ts`: the TS-option clock (ms), without the offset.
    #[inline]
    pub(super) fn ts_now(&self) -> u32 {
        (self.now_us / 1000) as u32
    }

    pub(super) fn set_state(&mut self, s: TcpState) {
        self.state = s;
    }

    /// `tcp_packets_in_flight`.
    #[inline]
    pub(super) fn in_flight(&self) -> u32 {
        self.sb.in_flight()
    }

    #[inline]
    pub(super) fn cwnd(&self) -> u32 {
        self.cs.snd_cwnd
    }

    #[inline]
    pub(super) fn set_cwnd(&mut self, c: u32) {
        self.cs.snd_cwnd = c.min(self.cs.snd_cwnd_clamp);
    }

    #[inline]
    pub(super) fn ca_state(&self) -> CaState {
        self.cs.ca_state
    }

    /// `tcp_min_rtt`.
    #[inline]
    pub(super) fn min_rtt_us(&self) -> u32 {
        self.rtt_min.get()
    }

    /// Data (and FIN) queued but not yet sent, in sequence space.
    #[inline]
    pub(super) fn unsent_seq(&self) -> u32 {
        self.write_seq.wrapping_sub(self.snd_nxt)
    }

    /// Unsent application bytes (FIN excluded).
    pub(super) fn unsent_bytes(&self) -> u32 {
        let fin_pending = self.fin_queued && self.unsent_seq() > 0;
        self.unsent_seq() - fin_pending as u32
    }

    /// Bytes in the socket (unsent + unacknowledged), FIN/SYN excluded.
    pub(super) fn queued_bytes(&self) -> u32 {
        let mut q = self.write_seq.wrapping_sub(self.snd_una);
        if self.fin_queued && q > 0 {
            q -= 1;
        }
        if matches!(self.state, TcpState::SynSent | TcpState::SynReceived) && q > 0 {
            q -= 1; // the SYN
        }
        q
    }

    /// `tcp_wnd_end`.
    #[inline]
    pub(super) fn wnd_end(&self) -> u32 {
        self.snd_una.wrapping_add(self.snd_wnd)
    }

    /// `tcp_in_cwnd_reduction`: CWR or Recovery.
    #[inline]
    pub(super) fn in_cwnd_reduction(&self) -> bool {
        matches!(self.ca_state(), CaState::Cwr | CaState::Recovery)
    }

    /// `tcp_is_cwnd_limited` (tcp.md §4).
    pub(super) fn is_cwnd_limited_now(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        if self.cs.in_slow_start() {
            return self.cs.snd_cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// `tcp_current_ssthresh`.
    pub(super) fn current_ssthresh(&self) -> u32 {
        if self.in_cwnd_reduction() {
            self.cs.snd_ssthresh
        } else {
            self.cs
                .snd_ssthresh
                .max((self.cs.snd_cwnd >> 1) + (self.cs.snd_cwnd >> 2))
        }
    }

    /// Bring the CcSock mirror of our state up to date before a hook.
    pub(super) fn cc_sync(&mut self) {
        let in_flight = self.in_flight();
        let limited = self.is_cwnd_limited_now();
        let cs = &mut self.cs;
        cs.mss_cache = self.mss_cache;
        cs.srtt_us = self.rtt.srtt_us;
        cs.min_rtt_us = self.rtt_min.get();
        cs.packets_out = self.sb.packets_out;
        cs.packets_in_flight = in_flight;
        cs.is_cwnd_limited = limited;
        cs.delivered = self.rate.delivered;
        cs.delivered_ce = self.rate.delivered_ce;
        cs.lost = self.lost;
        cs.app_limited = self.rate.app_limited;
        cs.snd_nxt = self.snd_nxt;
        cs.snd_una = self.snd_una;
        cs.delivered_mstamp = self.rate.delivered_mstamp;
        cs.lsndtime = self.lsndtime;
        cs.wstamp_ns = self.wstamp_ns;
    }

    /// `tcp_set_ca_state`.
    pub(super) fn set_ca_state(&mut self, s: CaState) {
        self.cc_sync();
        self.cc.set_state(&mut self.cs, s);
    }

    /// `tcp_ca_event`.
    pub(super) fn ca_event(&mut self, ev: CaEvent) {
        self.cc_sync();
        self.cc.cwnd_event(&mut self.cs, ev);
    }

    /// `ca_ops->ssthresh(sk)`.
    pub(super) fn cc_ssthresh(&mut self) -> u32 {
        self.cc_sync();
        self.cc.ssthresh(&mut self.cs)
    }

    /// `mss_cache` as `tcp_sync_mss` computes it for a given peer MSS.
    pub(super) fn mss_cache_for(&self, mss_clamp: u32) -> u32 {
        let mss = (self.cfg.pmtu - 40).min(mss_clamp);
        let opts = if self.cfg.timestamps {
            TCPOLEN_TSTAMP_ALIGNED
        } else {
            0
        };
        mss.saturating_sub(opts).max(48)
    }

    /// `tcp_sync_mss`: the sending MSS from the path MTU and the peer's MSS.
    pub(super) fn sync_mss(&mut self) {
        let mss = (self.cfg.pmtu - 40).min(self.mss_clamp);
        let opts = if self.ts_ok {
            TCPOLEN_TSTAMP_ALIGNED
        } else {
            0
        };
        let mut mss = mss.saturating_sub(opts).max(48);
        // tcp_bound_to_half_wnd
        if self.max_window > TCP_MSS_DEFAULT && mss > self.max_window / 2 {
            mss = (self.max_window / 2).max(68 - 40);
        }
        self.mss_cache = mss;
        self.cs.mss_cache = mss;
    }

    fn parse_syn_options(&mut self, syn: &TcpHeader) {
        self.mss_clamp = if syn.mss > 0 {
            syn.mss as u32
        } else {
            TCP_MSS_DEFAULT
        };
        self.wscale_ok = self.cfg.window_scaling && syn.wscale.is_some();
        self.snd_wscale = if self.wscale_ok {
            syn.wscale.unwrap_or(0).min(TCP_MAX_WSCALE)
        } else {
            0
        };
        self.sack_ok = self.cfg.sack && syn.sack_ok;
        self.ts_ok = self.cfg.timestamps && syn.ts;
        if self.ts_ok {
            self.ts_recent = syn.tsval;
        }
    }

    fn parse_timestamps(&mut self, hdr: &TcpHeader) {
        let ts = hdr.ts && (self.ts_ok || hdr.flags & tcp_flags::SYN != 0 && self.cfg.timestamps);
        self.saw_tstamp = ts;
        if ts {
            self.rcv_tsval = hdr.tsval;
            self.rcv_tsecr = if hdr.tsecr != 0 {
                hdr.tsecr.wrapping_sub(self.tsoffset)
            } else {
                0
            };
        }
    }

    // =====================================================================
    // connection set-up and tear-down (tcp_rcv_state_process)
    // =====================================================================

    /// `tcp_rcv_synsent_state_process` for the active opener.
    fn rcv_synsent(&mut self, hdr: &TcpHeader, payload_len: u32) {
        let f = hdr.flags;
        if f & tcp_flags::ACK != 0 {
            // the ACK must cover exactly our SYN
            if !after(hdr.ack, self.iss) || after(hdr.ack, self.snd_nxt) {
                return; // (a RST would be sent in reply)
            }
            if f & tcp_flags::RST != 0 {
                self.set_state(TcpState::Closed);
                self.timers.clear_all();
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
            self.ecn_ok = self.cfg.ecn == 1 && f & tcp_flags::ECE != 0 && f & tcp_flags::CWR == 0;
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
            // the handshake's ACK goes out at once, then any queued data
            self.send_ack();
            self.push_pending_frames(false);
            let _ = payload_len;
        } else if f & tcp_flags::SYN != 0 && f & tcp_flags::RST == 0 {
            // simultaneous open: not modelled
        }
    }

    /// `tcp_finish_connect` / the SYN-RECV → ESTABLISHED arm: both end in
    /// `tcp_init_transfer` (initial cwnd, CC init, buffer space).
    fn finish_connect(&mut self) {
        self.set_state(TcpState::Established);
        self.rcv.lrcvtime = self.jiffies();
        self.init_transfer();
        self.lsndtime = self.jiffies();
        self.update_pacing_rate();
    }

    /// `tcp_init_transfer`.
    fn init_transfer(&mut self) {
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
        if self.cfg.pacing {
            self.cs.pacing_status_needed = true;
        }
        self.init_buffer_space();
    }

    /// `tcp_init_buffer_space`.
    fn init_buffer_space(&mut self) {
        if !self.sndbuf_locked {
            self.sndbuf_expand();
        }
        let now_us = self.now_us;
        self.rcv.init_buffer_space(now_us);
    }

    /// `tcp_sndbuf_expand` (tcp.md §6.2).
    pub(super) fn sndbuf_expand(&mut self) {
        let per_mss = self.mss_clamp.max(self.mss_cache) + MAX_TCP_HEADER + SKB_SHINFO;
        let per_mss = per_mss.next_power_of_two() + SKB_STRUCT;
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

    /// `tcp_check_space` → `tcp_new_space`: after sending, if the
    /// application was blocked on a full buffer and cwnd is not full.
    pub(super) fn check_space(&mut self) {
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
    fn rcv_state_process(&mut self, hdr: &TcpHeader, payload_len: u32, ecn_ce: bool) {
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
            }
            return;
        }
        if f & tcp_flags::RST != 0 {
            if seq == self.rcv.rcv_nxt {
                self.set_state(TcpState::Closed);
                self.timers.clear_all();
            }
            return;
        }
        if syn {
            // a SYN in window: challenge ACK (RFC 5961 §4.2)
            self.send_ack();
            return;
        }
        if f & tcp_flags::ACK == 0 {
            return;
        }
        let flags = flag::SLOWPATH | flag::UPDATE_TS_RECENT;
        if self.state == TcpState::SynReceived {
            // the ACK of our SYN-ACK completes the passive open
            if !after(hdr.ack, self.snd_una) || after(hdr.ack, self.snd_nxt) {
                return;
            }
            self.establish_passive(hdr);
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
                self.set_state(TcpState::Closed);
                self.timers.clear_all();
                return;
            }
            _ => {}
        }
        self.rcv_rtt_measure_ts(seq, end_seq, payload_len);
        // step 7: the segment text
        if matches!(
            self.state,
            TcpState::Established | TcpState::FinWait1 | TcpState::FinWait2
        ) {
            self.data_queue(hdr, seq, payload_len, fin, ecn_ce);
        }
        if self.state == TcpState::TimeWait {
            return;
        }
        self.data_snd_check();
        self.ack_snd_check();
    }

    /// SYN-RECEIVED → ESTABLISHED (`tcp_rcv_state_process`, TCP_SYN_RECV).
    fn establish_passive(&mut self, hdr: &TcpHeader) {
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
        let mut rs = super::rate::RateAcc::default();
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

    fn our_fin_acked(&self) -> bool {
        self.fin_queued && self.snd_una == self.write_seq
    }

    pub(super) fn enter_time_wait(&mut self) {
        self.set_state(TcpState::TimeWait);
        self.timers.clear_all();
        self.timers.set(TcpTimer::TimeWait, self.now + TCP_TIMEWAIT);
    }

    /// The peer's FIN was consumed in sequence (`tcp_fin`).
    pub(super) fn on_fin(&mut self) {
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

    // =====================================================================
    // send path (net/ipv4/tcp_output.c)
    // =====================================================================

    /// `tcp_data_snd_check`: push pending data, then `tcp_check_space`.
    pub(super) fn data_snd_check(&mut self) {
        self.push_pending_frames(false);
        self.check_space();
    }

    /// `__tcp_push_pending_frames`.
    pub(super) fn push_pending_frames(&mut self, nagle_off: bool) {
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
    fn check_probe_timer(&mut self) {
        if self.sb.packets_out == 0 && self.timers.pending_xmit().is_none() {
            let base = self.probe0_base();
            self.reset_xmit_timer(TcpTimer::Probe0, base, true);
        }
    }

    fn probe0_base(&self) -> u32 {
        self.icsk_rto.max(TCP_RTO_MIN)
    }

    /// `tcp_pacing_check`: internal pacing holds the next packet until its
    /// earliest departure time, arming the pacing timer.
    pub(super) fn pacing_check(&mut self) -> bool {
        if !self.cs.pacing_status_needed {
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
    fn cwnd_test(&self) -> u32 {
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
    /// normal, 2 = one segment ignoring cwnd (loss probe). Returns true when
    /// nothing is in flight but data waits (zero window).
    pub(super) fn write_xmit(&mut self, nagle_off: bool, push_one: u8) -> bool {
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
    fn nagle_holds(&self, partial: u32, nagle_off: bool) -> bool {
        if partial == 0 || nagle_off || self.cfg.nodelay {
            return false;
        }
        let minshall = after(self.snd_sml, self.snd_una) && !after(self.snd_sml, self.snd_nxt);
        self.sb.packets_out > 0 && minshall
    }

    /// `tcp_tso_segs` / `tcp_tso_autosize` (tcp.md §6.3): segments per TSO
    /// skb, about 1 ms of the pacing rate (`sk_pacing_shift` 10), at least
    /// the module's `min_tso_segs`, at most what `gso_max_size` holds.
    /// \[lab2019\] caps the bytes at `gso_max_size − 1 − MAX_TCP_HEADER`;
    /// \[modern\] (≥ 5.18) adds `gso_max_size >> (min_rtt_us >> 9)` for short
    /// RTTs (`tcp_tso_rtt_log` 9) and caps at `gso_max_size`. 1 with GSO off.
    pub(super) fn tso_segs(&self) -> u32 {
        let gso_max = self.cfg.gso_max_size as u64;
        if gso_max == 0 {
            return 1;
        }
        let mut bytes = self.cs.pacing_rate >> SK_PACING_SHIFT;
        match self.cfg.profile {
            CcProfile::Lab2019 => bytes = bytes.min(gso_max - 1 - MAX_TCP_HEADER as u64),
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

    /// `tcp_tso_should_defer` (tcp.md §6.1 step 5): hold back a TSO skb
    /// that cannot be sent whole when an ACK that frees more is due soon.
    fn tso_should_defer(
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
        // the next ACK would come too late: the head left under srtt/2 ago
        let Some(head) = self.sb.q.front() else {
            return false;
        };
        let since_head_us = self.now_us.saturating_sub(head.xmit_us);
        if since_head_us < (self.rtt.srtt_us >> 4) as u64 {
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
    fn mss_split_point(&self, skb_len: u32, is_tail: bool, max_segs: u32, nagle_off: bool) -> u32 {
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
    pub(super) fn build_header(&mut self, seq: u32, flags: u8) -> TcpHeader {
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
            h.tsval = self.ts_now().wrapping_add(self.tsoffset);
            h.tsecr = self.ts_recent;
        }
        if self.rcv.demand_cwr && !syn {
            h.flags |= tcp_flags::ECE;
        }
        h
    }

    /// Stage a segment for IP and do the bookkeeping every transmission
    /// shares (`tcp_event_ack_sent`, counters).
    pub(super) fn emit(&mut self, hdr: TcpHeader, payload_len: u32, ect: bool) {
        if hdr.flags & tcp_flags::ACK != 0 {
            self.event_ack_sent();
        }
        self.segs_out = self.segs_out.wrapping_add(1);
        if self.gso_continue && self.append_to_skb(&hdr, payload_len, ect) {
            return;
        }
        self.out
            .push_back(Segment::single(hdr, payload_len, ect, self.mss_cache));
    }

    /// Add the next segment to the skb at the back of `out` if it continues
    /// it: contiguous data, every earlier piece a full `gso_size`, same ECN
    /// codepoint, below the GSO segment cap. Flags a segmenting device would
    /// give the last piece (PSH, FIN) move to the aggregate; CWR stays with
    /// the first (net/ipv4/tcp_offload.c `tcp_gso_segment`).
    fn append_to_skb(&mut self, hdr: &TcpHeader, payload_len: u32, ect: bool) -> bool {
        let max_segs = self.tso_segs();
        let Some(skb) = self.out.back_mut() else {
            return false;
        };
        let continues = payload_len > 0
            && payload_len <= skb.gso_size
            && skb.payload_len == skb.gso_segs * skb.gso_size
            && skb.hdr.flags & (tcp_flags::SYN | tcp_flags::FIN) == 0
            && skb.hdr.seq.wrapping_add(skb.payload_len) == hdr.seq
            && skb.ect == ect
            && skb.gso_segs < max_segs;
        if continues {
            skb.payload_len += payload_len;
            skb.gso_segs += 1;
            skb.hdr.flags |= hdr.flags & (tcp_flags::PSH | tcp_flags::FIN);
            skb.hdr.ack = hdr.ack;
            skb.hdr.window = hdr.window;
        }
        continues
    }

    /// `tcp_event_data_sent`: a segment with payload (or a retransmission)
    /// leaves.
    fn event_data_sent(&mut self) {
        if self.in_flight() == 0 {
            self.ca_event(CaEvent::TxStart);
        }
        let now = self.jiffies();
        self.lsndtime = now;
        if now.wrapping_sub(self.rcv.lrcvtime) < self.rcv.ato {
            self.rcv.inc_pingpong();
        }
    }

    /// `tcp_update_skb_after_send`: EDT pacing advance (tcp.md §12).
    fn update_after_send(&mut self, len: u32, prior_wstamp: u64) {
        if self.cs.pacing_status_needed {
            let rate = self.cs.pacing_rate;
            if rate != u64::MAX && rate != 0 && self.data_segs_out >= 10 {
                let len_ns = len as u64 * 1_000_000_000 / rate;
                let credit = self.wstamp_ns.saturating_sub(prior_wstamp);
                self.wstamp_ns += len_ns - (len_ns / 2).min(credit);
            }
        }
    }

    /// `tcp_wstamp_ns = max(tcp_wstamp_ns, clock)`; returns the prior value.
    fn advance_wstamp(&mut self) -> u64 {
        let prior = self.wstamp_ns;
        self.wstamp_ns = self.wstamp_ns.max(self.now.as_nanos());
        prior
    }

    /// Send one skb of `len` new bytes (+FIN) at `snd_nxt`, cut into MSS
    /// pieces that leave as one aggregate (`tcp_transmit_skb` +
    /// `tcp_event_new_data_sent`; pacing advances once for the skb). Returns
    /// the segments sent (`tcp_skb_pcount`).
    fn send_new_skb(&mut self, len: u32, fin: bool) -> u32 {
        let prior_wstamp = self.advance_wstamp();
        let xmit_us = self.wstamp_ns / 1000 + CLOCK_BASE_US;
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
    fn send_new_segment(&mut self, len: u32, fin: bool, xmit_us: u64) {
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
        // tcp_ecn_send: new data is ECT(0) and carries a queued CWR
        let mut ect = false;
        if self.ecn_ok && len > 0 {
            ect = true;
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
        self.emit(hdr, len, ect);
        let tx = self.rate.on_sent(self.sb.packets_out, xmit_us);
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

    /// `tcp_retransmit_skb` for the segment at `idx`: resend it and count it
    /// as a retransmission in flight (`SACKED_RETRANS`, `retrans_out`, the
    /// undo bookkeeping); false if it could not be sent.
    pub(super) fn retransmit_seg(&mut self, idx: usize) -> bool {
        if !self.retransmit_raw(idx) {
            return false;
        }
        let s = &mut self.sb.q[idx];
        s.sacked |= RETRANS;
        let xmit_ms = (s.xmit_us / 1000) as u32;
        self.sb.retrans_out += 1;
        if self.retrans_stamp == 0 {
            self.retrans_stamp = xmit_ms;
        }
        self.undo.on_retransmit();
        true
    }

    /// `__tcp_retransmit_skb`: resend the segment at `idx` (counted in
    /// `total_retrans`, marked `EVER_RETRANS`) without the scoreboard
    /// bookkeeping — what a tail loss probe does; false if it could not be
    /// sent (outside the peer's window).
    pub(super) fn retransmit_raw(&mut self, idx: usize) -> bool {
        let seg = self.sb.q[idx];
        // __tcp_retransmit_skb: do not retransmit beyond a shrunk window,
        // except the head as a zero-window probe
        let avail = self.wnd_end().wrapping_sub(seg.seq) as i32;
        if avail <= 0 && seg.seq != self.snd_una {
            return false;
        }
        let syn = seg.flags & tcp_flags::SYN != 0;
        let fin = seg.flags & tcp_flags::FIN != 0;
        let len = seg
            .end_seq
            .wrapping_sub(seg.seq)
            .wrapping_sub(syn as u32)
            .wrapping_sub(fin as u32);
        self.total_retrans = self.total_retrans.wrapping_add(1);
        self.bytes_retrans += len as u64;
        let prior_wstamp = self.advance_wstamp();
        let xmit_us = self.wstamp_ns / 1000 + CLOCK_BASE_US;
        let hdr = if syn {
            // RFC 3168 6.1.1.1 fallback (tcp_ecn_clear_syn): a retransmitted
            // SYN no longer asks for ECN
            let mut h = self.syn_header();
            h.flags &= !(tcp_flags::ECE | tcp_flags::CWR);
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
                self.data_segs_out = self.data_segs_out.wrapping_add(1);
            }
        }
        // retransmissions are Not-ECT (tcp_ecn_send)
        self.emit(hdr, len, false);
        self.update_after_send(len, prior_wstamp);
        let tx = self.rate.on_sent(self.sb.packets_out, xmit_us);
        self.sb.on_retransmit(idx, xmit_us, tx);
        true
    }

    fn syn_header(&mut self) -> TcpHeader {
        let mut h = self.build_header(self.iss, tcp_flags::SYN);
        if self.cfg.ecn == 1 {
            h.flags |= tcp_flags::ECE | tcp_flags::CWR; // tcp_ecn_send_syn
        }
        h
    }

    /// The SYN (`tcp_connect`), queued on the retransmission queue.
    fn send_syn(&mut self) {
        let hdr = self.syn_header();
        let xmit_us = self.now_us;
        self.wstamp_ns = self.wstamp_ns.max(self.now.as_nanos());
        self.segs_out = self.segs_out.wrapping_add(1);
        self.out.push_back(Segment::single(hdr, 0, false, 0));
        // tcp_connect_queue_skb counts it before tcp_rate_skb_sent sees it
        self.sb.packets_out += 1;
        let tx = self.rate.on_sent(self.sb.packets_out, xmit_us);
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
    fn send_synack(&mut self) {
        let mut hdr = self.build_header(self.iss, tcp_flags::SYN | tcp_flags::ACK);
        if self.ecn_ok {
            hdr.flags |= tcp_flags::ECE;
        }
        if self.synack_sent_us == 0 {
            self.synack_sent_us = self.now_us.max(1);
        }
        self.segs_out = self.segs_out.wrapping_add(1);
        self.out.push_back(Segment::single(hdr, 0, false, 0));
    }

    /// `tcp_send_ack`: a pure ACK (with window, SACK blocks, ECE).
    pub(super) fn send_ack(&mut self) {
        if matches!(self.state, TcpState::Closed | TcpState::SynSent) {
            return;
        }
        let seq = self.acceptable_seq();
        let hdr = self.build_header(seq, tcp_flags::ACK);
        self.emit(hdr, 0, false);
    }

    /// `tcp_acceptable_seq`.
    fn acceptable_seq(&self) -> u32 {
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
    fn event_ack_sent(&mut self) {
        if self.rcv.compressed_ack > 0 {
            self.rcv.compressed_ack = 0;
            self.timers.clear(TcpTimer::CompressedAck);
        }
        self.rcv.dec_quickack_mode();
        self.rcv.ack_pending = 0;
        self.timers.clear(TcpTimer::DelayedAck);
    }

    /// `tcp_select_window`: the window field for an outgoing segment; never
    /// shrinks the right edge offered before (tcp.md §17.14).
    fn select_window(&mut self) -> u16 {
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

    /// `__tcp_select_window` (tcp.md §7.1).
    pub(super) fn select_window_raw(&mut self) -> u32 {
        self.rcv.select_window_raw()
    }

    /// `tcp_xmit_probe_skb`: a segment the receiver must answer, outside the
    /// window (`snd_una − 1`).
    fn xmit_probe_skb(&mut self) {
        let seq = self.snd_una.wrapping_sub(1);
        let hdr = self.build_header(seq, tcp_flags::ACK);
        self.emit(hdr, 0, false);
    }

    /// `tcp_cwnd_validate`.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
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
    fn cwnd_application_limited(&mut self) {
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
    pub(super) fn slow_start_after_idle_check(&mut self) {
        if !self.cfg.slow_start_after_idle || self.sb.packets_out > 0 || self.cc.has_cong_control()
        {
            return;
        }
        let delta = self.jiffies().wrapping_sub(self.lsndtime) as i32;
        if delta > self.icsk_rto as i32 {
            self.cwnd_restart(delta);
        }
    }

    fn cwnd_restart(&mut self, mut delta: i32) {
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

    /// `tcp_update_pacing_rate` (non-BBR; tcp.md §12).
    pub(super) fn update_pacing_rate(&mut self) {
        let mut rate = self.mss_cache as u64 * ((1_000_000 / 100) << 3);
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
    fn rate_check_app_limited(&mut self) {
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

    // =====================================================================
    // timers (net/ipv4/tcp_timer.c)
    // =====================================================================

    /// `tcp_reset_xmit_timer`: arm an `icsk_pending` event `when` jiffies
    /// ahead (plus the pacing delay), capped at `TCP_RTO_MAX`.
    pub(super) fn reset_xmit_timer(&mut self, what: TcpTimer, mut when: u32, pace_delay: bool) {
        if pace_delay {
            let delay = self.wstamp_ns.saturating_sub(self.now.as_nanos());
            when = when.saturating_add((delay / NS_PER_JIFFY) as u32);
        }
        let when = when.min(TCP_RTO_MAX);
        let at = jiffies_deadline(self.now, when);
        self.timers.set_xmit(what, at);
    }

    /// `tcp_rto_delta_us`: how far in the future the RTO of the head is.
    pub(super) fn rto_delta_us(&self) -> i64 {
        match self.sb.q.front() {
            Some(h) => {
                let rto_at = h.xmit_us + jiffies_to_usecs(self.icsk_rto) as u64;
                rto_at as i64 - self.now_us as i64
            }
            None => jiffies_to_usecs(self.icsk_rto) as i64,
        }
    }

    /// `tcp_rearm_rto`.
    pub(super) fn rearm_rto(&mut self) {
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
    pub(super) fn set_xmit_timer(&mut self) {
        if !self.schedule_loss_probe(true) {
            self.rearm_rto();
        }
    }

    /// `tcp_schedule_loss_probe` (tcp.md §9.3).
    pub(super) fn schedule_loss_probe(&mut self, advancing_rto: bool) -> bool {
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
    /// segment again (tcp.md §9.3).
    fn send_loss_probe(&mut self) {
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
        self.tlp_high_seq = self.snd_nxt;
        // reset so that tcp_rearm_rto restarts the RTO from now
        self.timers.clear_xmit();
        self.rearm_rto();
    }

    /// `tcp_retransmit_timer` (tcp.md §5 "RTO expiry").
    fn retransmit_timer(&mut self) {
        match self.state {
            TcpState::SynReceived => {
                // the request sock's SYN-ACK timer (inet_rtx_syn_ack)
                if self.synack_retrans >= TCP_SYNACK_RETRIES {
                    self.set_state(TcpState::Closed);
                    self.timers.clear_all();
                    return;
                }
                self.synack_retrans += 1;
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
            self.set_state(TcpState::Closed);
            self.timers.clear_all();
            return;
        }
        if self.snd_wnd == 0 && self.state != TcpState::SynSent {
            // the receiver shrank its window to zero: retransmissions probe
            self.enter_loss();
            self.retransmit_seg(0);
        } else {
            self.enter_loss();
            // tcp_update_rto_stats
            self.retransmits += 1;
            self.total_rto += 1;
            self.retransmit_seg(0);
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

    /// `tcp_probe_timer` → `tcp_send_probe0` (zero-window probing).
    fn probe_timer(&mut self) {
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
    fn tsq_write(&mut self) {
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
    fn delack_timer(&mut self) {
        if matches!(self.state, TcpState::Closed | TcpState::Listen) {
            return;
        }
        if self.rcv.ack_pending & super::rcv::ACK_TIMER == 0 {
            return;
        }
        self.rcv.ack_pending &= !super::rcv::ACK_TIMER;
        if self.rcv.ack_pending & super::rcv::ACK_SCHED != 0 {
            if !self.rcv.in_pingpong() {
                // delayed ACK missed: inflate ATO
                self.rcv.ato = (self.rcv.ato << 1).min(self.icsk_rto);
            } else {
                self.rcv.exit_pingpong();
                self.rcv.ato = super::rcv::TCP_ATO_MIN;
            }
            self.send_ack();
        }
    }

    /// `tcp_compressed_ack_kick`: release the coalesced SACKs.
    fn compressed_ack_timer(&mut self) {
        if self.rcv.compressed_ack > 0 {
            self.rcv.compressed_ack -= 1;
            self.send_ack();
        }
    }

    /// `tcp_send_delayed_ack`: arm the delayed-ACK timer (tcp.md §7.3).
    pub(super) fn send_delayed_ack(&mut self) {
        let mut ato = self.rcv.ato;
        if ato > super::rcv::TCP_DELACK_MIN {
            let mut max_ato = HZ / 2;
            if self.rcv.in_pingpong() || self.rcv.ack_pending & super::rcv::ACK_PUSHED != 0 {
                max_ato = super::rcv::TCP_DELACK_MAX;
            }
            if self.rtt.srtt_us != 0 {
                let rtt = usecs_to_jiffies(self.rtt.srtt_us >> 3).max(super::rcv::TCP_DELACK_MIN);
                if rtt < max_ato {
                    max_ato = rtt;
                }
            }
            ato = ato.min(max_ato);
        }
        if self.cfg.profile == CcProfile::Modern {
            // tcp_delack_max: min(TCP_DELACK_MAX, rto_min − 1 jiffy)
            let rto_min_j = usecs_to_jiffies(self.rtt.rto_min_us).max(2);
            ato = ato.min(super::rcv::TCP_DELACK_MAX.min(rto_min_j - 1));
        }
        let now_j = self.jiffies();
        let mut timeout = now_j.wrapping_add(ato);
        if self.rcv.ack_pending & super::rcv::ACK_TIMER != 0 {
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
        self.rcv.ack_pending |= super::rcv::ACK_SCHED | super::rcv::ACK_TIMER;
        self.rcv.delack_timeout = timeout;
        let when = timeout.wrapping_sub(now_j);
        self.timers
            .set(TcpTimer::DelayedAck, jiffies_deadline(self.now, when));
    }

    /// (for tests) the sender's ISN.
    #[cfg(test)]
    pub(super) fn iss(&self) -> u32 {
        self.iss
    }
}

#[cfg(test)]
mod tests {
    use super::super::harness::*;
    use super::*;
    use crate::time::Rate;

    #[test]
    fn handshake_offers_lab2019_windows_and_scales() {
        // tcp_rmem 4096 87380 6291456 (lab2019): SYN 29200 (20 × 1460), wscale 7;
        // the passive side quantises with MSS − 12: SYN-ACK 28960
        let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
        p.run_until(ms(100));
        let syn = p.log[0].seg.hdr;
        assert_eq!(syn.flags, tcp_flags::SYN);
        assert_eq!(
            (syn.window, syn.mss, syn.wscale, syn.sack_ok, syn.ts),
            (29200, 1460, Some(7), true, true)
        );
        assert_eq!(syn.header_len(), 40);
        let synack = p.segs_from_b().next().unwrap().seg.hdr;
        assert_eq!(synack.flags, tcp_flags::SYN | tcp_flags::ACK);
        assert_eq!((synack.window, synack.wscale), (28960, Some(7)));
        assert_eq!(p.a.state(), TcpState::Established);
        assert_eq!(p.b().state(), TcpState::Established);
        let i = p.a.info();
        assert_eq!(
            (i.snd_mss, i.pmtu, i.snd_wscale, i.rcv_wscale, i.options),
            (1448, 1500, 7, 7, 7)
        );
        // the handshake's RTT sample: 20 ms, RTO 20 + 200 ms = 55 jiffies
        assert_eq!((i.rtt, i.rttvar, i.rto), (20_000, 10_000, 220_000));
        assert_eq!(i.snd_cwnd, 10);
        assert_eq!(i.snd_ssthresh, TCP_INFINITE_SSTHRESH);
        assert_eq!(p.b().info().rtt, 20_000, "SYN-ACK → ACK sample");
        // tcp_rmem[2] = 52428800 (the handouts) → wscale 10
        let mut big = cfg("cubic");
        big.rmem = [10240, 87380, 52_428_800];
        let p = Pair::sym(big, SimDuration::from_millis(10));
        assert!(p.log.is_empty());
        let syn = p.a.out.front().unwrap().hdr;
        assert_eq!((syn.window, syn.wscale), (29200, Some(10)));
    }

    #[test]
    fn handshake_offers_modern_windows() {
        // tcp_rmem[1] = 131072 (modern): 65536 of window → SYN 64240, SYN-ACK 65160
        let c = TcpConfig::for_profile(CcProfile::Modern);
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.run_until(ms(100));
        assert_eq!(p.log[0].seg.hdr.window, 64240);
        assert_eq!(p.segs_from_b().next().unwrap().seg.hdr.window, 65160);
    }

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

    #[test]
    fn close_sends_fin_after_the_data_and_both_sides_finish() {
        let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
        p.to_write = 5000;
        p.run_until(ms(100));
        p.a.close(p.now);
        p.run_until(ms(200));
        assert_eq!(p.read, 5000);
        assert!(p.b().eof());
        assert_eq!(p.a.state(), TcpState::FinWait2);
        assert_eq!(p.b().state(), TcpState::CloseWait);
        let now = p.now;
        p.b.as_mut().unwrap().close(now);
        p.run_until(ms(300));
        assert_eq!(p.b().state(), TcpState::Closed);
        assert_eq!(p.a.state(), TcpState::TimeWait);
        p.run_until(ms(61_000));
        assert_eq!(p.a.state(), TcpState::Closed);
        assert_eq!(p.a.poll_timeout(), None);
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

#[cfg(test)]
#[path = "gso_tests.rs"]
mod gso_tests;
