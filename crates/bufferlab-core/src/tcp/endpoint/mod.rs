//! Size: the socket's state (`struct tcp_sock`: every field the paths read) and its
//! public calls; the paths themselves are output.rs, timer.rs, info.rs and input/.
//!
//! The I/O-free TCP endpoint (docs/semantics/tcp.md, docs/tcp-design.md): one connection's
//! sender and receiver, Linux-faithful, with no clock and no I/O.
//!
//! Calling convention (docs/internals.md "Sans-I/O models"):
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
//! Where the code lives, along Linux's files: this file has the socket
//! struct, the public API (`tcp_connect`, `tcp_close`, ...) and small
//! helpers; output.rs the send path (tcp_output.c); timer.rs the timer
//! handlers (tcp_timer.c); info.rs `tcp_get_info` (tcp.c); input/ the
//! connection state machine, the ACK path, the recovery state machine and
//! the data receive path (tcp_input.c, docs/semantics/tcp.md §3, §7–9). They drive
//! pieces that never see the socket: tcp/recovery/ (scoreboard, SACK,
//! RACK-TLP, PRR, undo), tcp/rcv.rs (receiver state), rtt.rs, rate.rs,
//! timers.rs, cc/; settings and constants are in tcp/config.rs.
//!
//! Clocks: `tcp_mstamp` is the simulated time in µs plus [`CLOCK_BASE_US`]
//! (the kernel treats a zero stamp as "none") plus the host's clock phase
//! ([`TcpConfig::clock_phase_us`], tcp/clock.rs); jiffies come from
//! `cc::tcp_jiffies32` (HZ 250) and jiffy timers fire on tick boundaries.
//!
//! TSO/GSO (docs/semantics/tcp.md §2.1, §6.1 step 5, §6.3): with [`TcpConfig::gso_max_size`]
//! non-zero, `tcp_write_xmit` cuts the write queue into skbs of up to
//! `tcp_tso_autosize` segments, may defer a short one
//! (`tcp_tso_should_defer`), and hands each to IP as one [`Segment`] whose
//! `gso_segs` counts its MSS-sized pieces; retransmissions of neighbouring
//! lost segments leave together as Linux's `__tcp_retransmit_skb` sends
//! them (up to the free cwnd). The scoreboard keeps one entry per MSS, the
//! granularity Linux reaches by fragmenting skbs on SACKs. With it zero
//! every skb is one MSS (`gso_mode = off`).
//!
//! TCP Small Queues (docs/semantics/tcp.md §6.4): with [`TcpEndpoint::set_tsq`] on, each
//! data skb charges its truesize to `sk_wmem_alloc`; `tcp_write_xmit` and the
//! retransmission queue stop once the socket holds more than its TSQ limit in
//! the host, and [`TcpEndpoint::tsq_account`] + [`TcpEndpoint::tsq_handler`]
//! are `tcp_wfree` and the TSQ handler when the host gives skbs back.
//!
//! Not modelled: urgent data,
//! keep-alive, Fast Open, MTU probing, PAWS rejection, SYN cookies,
//! simultaneous open, autocorking, the route-metrics cache
//! (`tcp_no_metrics_save`), and receiver memory pressure beyond dropping
//! what does not fit `sk_rcvbuf`, `skb_still_in_host_queue` (a
//! retransmission is never refused because its previous copy is still in
//! the host). Every skb leaves with its departure stamp
//! ([`Segment::tstamp`], also its TS value); under an `fq` qdisc
//! ([`TcpEndpoint::set_pacing_fq`]) it is handed down at once and fq holds
//! it until then.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;

use crate::packet::{tcp_flags, Ipv4, TcpHeader, ECN_ECT0, ECN_ECT1};
use crate::rng::ComponentRng;
use crate::tcp::accecn::{self, AccEcn, EcnMode};
use crate::tcp::cc::{tcp_jiffies32, CaEvent, CaState, Cc, CcSock};
use crate::tcp::config::{
    SocketBuffers, SNDBUF_OVERHEAD_PCT, TCPOLEN_TSTAMP_ALIGNED, TCP_MAX_WSCALE, TCP_MIN_MSS,
    TCP_MSS_DEFAULT,
};
use crate::tcp::minmax::MinMax;
use crate::tcp::rate::RateState;
use crate::tcp::rcv::Receiver;
use crate::tcp::recovery::{Prr, Rack, Scoreboard, Undo};
use crate::tcp::rtt::{RttEstimator, TCP_TIMEOUT_INIT};
use crate::tcp::timers::{jiffies_deadline, TcpTimer, TimerTable};
use crate::time::SimTime;

mod info;
mod input;
mod mib;
mod output;
mod sendmsg;
mod timer;

pub use crate::tcp::config::TcpConfig;
pub use info::{SkMemInfo, TcpInfo};
pub use mib::{TcpMib, TcpTotals};

#[cfg(test)]
mod accecn_tests;
#[cfg(test)]
mod gso_tests;
#[cfg(test)]
mod tests;

/// `tcp_mstamp` at simulated time zero, µs: the kernel's clocks are never
/// zero (0 means "no timestamp" in many places), so ours start at 1 s.
pub const CLOCK_BASE_US: u64 = 1_000_000;

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
    /// the IP header's ECN field: 0 Not-ECT, ECT(0) (new data of a classic
    /// ECN connection, every packet of an AccECN one) or ECT(1) (L4S)
    pub ecn: u8,
    /// segments in this skb (`tcp_skb_pcount`), at least 1
    pub gso_segs: u32,
    /// payload bytes per segment (`mss_now` when the skb was cut)
    pub gso_size: u32,
    /// `skb->truesize` charged to the socket's `sk_wmem_alloc` while the skb
    /// is in the host (TCP Small Queues, docs/semantics/tcp.md §6.4); 0 when
    /// nothing was charged (no payload, or nothing holds packets on the way out)
    pub truesize: u32,
    /// departure stamp (`skb->tstamp`): the socket's `tcp_wstamp_ns` when
    /// the skb was sent, ahead of the clock while an fq paces the socket
    pub tstamp: SimTime,
}

impl Segment {
    /// An skb of one segment, cut with MSS `gso_size`.
    pub fn single(
        hdr: TcpHeader,
        payload_len: u32,
        ecn: u8,
        gso_size: u32,
        tstamp: SimTime,
    ) -> Segment {
        Segment {
            hdr,
            payload_len,
            ecn,
            gso_segs: 1,
            gso_size,
            truesize: 0,
            tstamp,
        }
    }

    /// L2 bytes as qdiscs count them (`qdisc_pkt_len`): one Ethernet + IP +
    /// TCP header per segment (docs/semantics/qdiscs.md §1.2) plus the payload.
    pub fn frame_len(&self) -> u32 {
        self.gso_segs
            * (crate::packet::ETH_HEADER + crate::packet::IPV4_HEADER + self.hdr.header_len())
            + self.payload_len
    }
}

/// The buffer of an empty output queue, for
/// [`TcpEndpoint::swap_output_buffer`].
#[derive(Default)]
pub struct OutputBuffer(VecDeque<Segment>);

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
    /// shared by the connections of an application: one copy in cache
    pub(super) cfg: Arc<TcpConfig>,
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
    /// `tcp_mstamp` at simulated time zero: [`CLOCK_BASE_US`] plus the
    /// host's clock phase
    pub(super) clock_base_us: u64,

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
    /// where the write queue's last skb starts (`tcp_write_queue_tail`'s
    /// seq); the unsent data are one byte stream, this is the one skb
    /// boundary `tcp_sendmsg_locked` reads (sendmsg.rs)
    pub(super) tail_skb_seq: u32,
    pub(super) fin_queued: bool,
    /// the application closed the socket (`close()` sets `RCV_SHUTDOWN`):
    /// it reads no more, so new data aborts the connection
    pub(super) rcv_shutdown: bool,
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

    // ---- pacing (EDT, docs/semantics/tcp.md §12)
    pub(super) wstamp_ns: u64,
    pub(super) data_segs_out: u32,

    // ---- TCP Small Queues (docs/semantics/tcp.md §6.4, output.rs)
    /// the host may hold this socket's skbs after TCP hands them to IP (a
    /// qdisc or a finite-rate device on the way out): skbs are charged to
    /// `wmem_alloc` until the host gives them back ([`TcpEndpoint::tsq_account`])
    pub(super) tsq_on: bool,
    /// `sk_wmem_alloc`: truesize of this socket's skbs still in the host
    pub(super) wmem_alloc: u64,
    /// `TSQF_THROTTLED`: `tcp_small_queue_check` stopped a transmission
    pub(super) tsq_throttled: bool,
    /// `TSQF_QUEUED`: a release found the socket throttled; its handler is due
    pub(super) tsq_queued: bool,
    /// first sequence number of the last new-data skb sent (the "rtx queue
    /// holds at most one skb" test of `tcp_small_queue_check`)
    pub(super) last_skb_seq: u32,

    // ---- ECN (RFC 3168; Accurate ECN, RFC 9768)
    pub(super) ecn_queue_cwr: bool,
    /// the feedback mode negotiated (`ecn_ok` is true in both ECN modes)
    pub(super) ecn_mode: EcnMode,
    /// AccECN counters (tcp/accecn.rs)
    pub(super) accecn: AccEcn,
    /// the next ACK is the handshake's last and reflects the SYN-ACK's ECN
    /// field in ACE (`tcp_accecn_reflector_flags`)
    pub(super) accecn_reflect: bool,
    /// bytes the AccECN option takes from every data segment once it is
    /// sent on all of them (`tcp_current_mss`): `mss_cache` is shorter by
    /// this much than Linux's, which `tcpi_snd_mss` and the modules see
    pub(super) accecn_opt_len: u32,
    /// CE packets the last ACK reported (`rs->ece_delta`)
    pub(super) ece_delta: u32,

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
    /// out-of-order segments received (`tcpi_rcv_ooopack`)
    pub(super) rcv_ooopack: u32,
    /// `sk_drops`: segments of the received skbs TCP dropped (`tcp_drop_reason`
    /// → `sk_drops_add`: out of sequence, a SYN or no ACK flag in window, old
    /// or out-of-window data, a full receive buffer, out-of-order data held)
    pub(super) sk_drops: u32,
    /// an ECT or CE data segment arrived on this ECN connection
    /// (`TCP_ECN_SEEN`, `TCPI_OPT_ECN_SEEN`)
    pub(super) ecn_seen: bool,
    /// SNMP / TcpExt counters (mib.rs)
    pub(super) mib: TcpMib,
}

impl TcpEndpoint {
    fn new(
        cfg: Arc<TcpConfig>,
        local: (Ipv4, u16),
        remote: (Ipv4, u16),
        now: SimTime,
        rng: &mut ComponentRng,
    ) -> Self {
        let cc_rng = ComponentRng::new(cfg.seed ^ rng.next_u64(), "tcp/cc");
        let cc = Cc::from_name_with(&cfg.congestion, cfg.profile, cc_rng)
            .or_else(|| Cc::from_name_with("cubic", cfg.profile, ComponentRng::new(0, "tcp/cc")))
            .expect("cubic exists");
        let log_lost = cc.wants_skb_marked_lost();
        let iss = rng.next_u32();
        let tsoffset = if cfg.timestamps { rng.next_u32() } else { 0 };
        let rto_min_us = (cfg.min_rto.as_nanos() / 1000) as u32;
        let mut cs = CcSock {
            snd_cwnd: cfg.init_cwnd.max(1),
            max_pacing_rate: cfg.max_pacing_rate,
            // sk_setsockopt: sk_pacing_rate = min(sk_pacing_rate, the maximum)
            pacing_rate: cfg.max_pacing_rate,
            pacing_status_needed: cfg.requests_pacing(),
            tso_segs_goal: 1,
            ..CcSock::default()
        };
        let clock_base_us = CLOCK_BASE_US + cfg.clock_phase_us as u64;
        cs.set_clock(now);
        cs.now_us = now.as_nanos() / 1000 + clock_base_us;
        let jiffies = tcp_jiffies32(now);
        let SocketBuffers {
            sndbuf,
            sndbuf_locked,
            rcvbuf,
            rcvbuf_locked,
        } = cfg.socket_buffers();
        let advmss = cfg.mss.min(cfg.pmtu.saturating_sub(40)).max(TCP_MIN_MSS);
        let rcv = Receiver::new(&cfg, rcvbuf, rcvbuf_locked, advmss);
        let icsk_rto = TCP_TIMEOUT_INIT;
        TcpEndpoint {
            local,
            remote,
            state: TcpState::Closed,
            timers: TimerTable::default(),
            out: VecDeque::new(),
            now,
            now_us: now.as_nanos() / 1000 + clock_base_us,
            clock_base_us,
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
            tail_skb_seq: iss,
            fin_queued: false,
            rcv_shutdown: false,
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
            sb: Scoreboard {
                log_lost,
                ..Scoreboard::new()
            },
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
            tsq_on: false,
            wmem_alloc: 0,
            tsq_throttled: false,
            tsq_queued: false,
            last_skb_seq: iss,
            ecn_queue_cwr: false,
            ecn_mode: EcnMode::Disabled,
            accecn: AccEcn::default(),
            accecn_reflect: false,
            accecn_opt_len: 0,
            ece_delta: 0,
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
            rcv_ooopack: 0,
            sk_drops: 0,
            ecn_seen: false,
            mib: TcpMib::default(),
            gso_continue: false,
            cfg,
        }
    }

    /// Active open (`tcp_connect`): sends the SYN.
    pub fn connect(
        cfg: impl Into<Arc<TcpConfig>>,
        local: (Ipv4, u16),
        remote: (Ipv4, u16),
        now: SimTime,
        mut rng: ComponentRng,
    ) -> Self {
        let mut ep = TcpEndpoint::new(cfg.into(), local, remote, now, &mut rng);
        ep.set_clock(now);
        ep.mib.active_opens = 1;
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
    /// `syn_ecn` is the SYN's IP ECN field.
    pub fn listen_accept(
        cfg: impl Into<Arc<TcpConfig>>,
        local: (Ipv4, u16),
        remote: (Ipv4, u16),
        syn: &TcpHeader,
        syn_ecn: u8,
        now: SimTime,
        mut rng: ComponentRng,
    ) -> Self {
        let mut ep = TcpEndpoint::new(cfg.into(), local, remote, now, &mut rng);
        ep.set_clock(now);
        ep.segs_in += 1;
        // tcp_parse_options on the SYN
        ep.parse_syn_options(syn);
        ep.rcv.rcv_nxt = syn.seq.wrapping_add(1);
        ep.rcv.rcv_wup = ep.rcv.rcv_nxt;
        ep.rcv.copied_seq = ep.rcv.rcv_nxt;
        ep.rcv.space_seq = ep.rcv.rcv_nxt;
        // tcp_ecn_create_request: AccECN if the SYN asked for it (ACE not
        // 000 or 011) and tcp_ecn is 3, 4 or 5 or the listener's module
        // needs AccECN; else classic ECN if the SYN asked (ECE+CWR) and
        // either tcp_ecn != 0 and the SYN itself is Not-ECT or has AE (an
        // ECT SYN is taken for a middlebox's doing, RFC 3168 §6.1.1), or
        // the listener's congestion control needs ECN (tcp_ca_needs_ecn)
        let ece_cwr = tcp_flags::ECE | tcp_flags::CWR;
        let syn_ect = syn_ecn & crate::packet::ECN_MASK != 0;
        if accecn::syn_requested(syn.ace()) && (ep.cfg.ecn >= 3 || ep.cc.needs_accecn()) {
            ep.ecn_mode = EcnMode::AccEcn;
            ep.accecn.syn_ect_rcv = syn_ecn & crate::packet::ECN_MASK;
            ep.accecn.prev_ecnfield = ep.accecn.syn_ect_rcv;
        } else if syn.flags & ece_cwr == ece_cwr
            && (((!syn_ect || syn.ae) && ep.cfg.ecn != 0) || ep.cc.needs_ecn())
        {
            ep.ecn_mode = EcnMode::Rfc3168;
        }
        ep.ecn_ok = ep.ecn_mode != EcnMode::Disabled;
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
    /// `ecn` is the IP header's ECN field (Not-ECT 0, ECT(1) 1, ECT(0) 2,
    /// CE 3).
    pub fn handle_segment(
        &mut self,
        now: SimTime,
        hdr: &TcpHeader,
        payload_len: u32,
        gso_size: u32,
        ecn: u8,
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
            if self.ecn_mode == EcnMode::Rfc3168
                && ecn & crate::packet::ECN_MASK == crate::packet::ECN_CE
            {
                self.rcv.ce_received = self.rcv.ce_received.wrapping_add(segs);
            }
            // __tcp_ecn_check_ce: ECT(0), ECT(1) or CE
            self.ecn_seen |= self.ecn_ok && ecn & crate::packet::ECN_MASK != 0;
        }
        if self.ecn_mode == EcnMode::AccEcn
            && !matches!(self.state, TcpState::SynSent | TcpState::SynReceived)
        {
            self.accecn_received(ecn, segs, payload_len);
        }
        self.rcv.skb_gso_size = gso_size;
        self.parse_timestamps(hdr);
        match self.state {
            // Linux has unhashed a closed socket: what reaches it meets no
            // connection and is answered with a reset (`tcp_v4_send_reset`)
            TcpState::Closed if hdr.flags & tcp_flags::RST == 0 => {
                self.send_reset_reply(hdr, payload_len)
            }
            TcpState::Closed | TcpState::Listen => {}
            TcpState::SynSent => self.rcv_synsent(hdr, payload_len, ecn),
            _ => self.rcv_state_process(hdr, payload_len, ecn & crate::packet::ECN_MASK),
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
                    self.done();
                }
            }
        }
    }

    /// Bytes the application may write now.
    pub fn send_space(&self) -> u64 {
        let limit = self.sndbuf as u64 * 100 / SNDBUF_OVERHEAD_PCT;
        limit.saturating_sub(self.queued_bytes() as u64)
    }

    /// `sk_stream_is_writeable`: free space ≥ half of what is queued
    /// (`select()` reports writable), docs/semantics/tcp.md §6.2. A pure query; an
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
    /// may send a window update (`tcp_cleanup_rbuf`). DRS runs only when
    /// bytes were copied (`tcp_recvmsg_locked` calls `tcp_rcv_space_adjust`
    /// after each copy): a read that finds nothing, as in a recovery hole,
    /// measures nothing (docs/kernel-oracle.md, "BBR's drops").
    pub fn read(&mut self, now: SimTime, max: u64) -> u64 {
        self.set_clock(now);
        let n = self.rcv.consume(max);
        if n > 0 {
            self.rcv_space_adjust();
        }
        if n > 0 || self.rcv.readable() == 0 {
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

    /// `close()`: the application is done with the socket in both
    /// directions (`tcp_close` sets `SHUTDOWN_MASK`). What it left unread is
    /// dropped and, if there was any, the connection is aborted with a reset
    /// (`TCPAbortOnClose`; RFC 2525 §2.17); otherwise a FIN follows the
    /// queued data, and data arriving after it aborts the connection
    /// (`TCPAbortOnData`).
    pub fn close(&mut self, now: SimTime) {
        self.set_clock(now);
        self.rcv_shutdown = true;
        let unread = self.rcv.readable();
        self.rcv.consume(unread);
        if unread > 0 && !matches!(self.state, TcpState::Closed | TcpState::Listen) {
            self.mib.abort_on_close += 1;
            self.send_active_reset();
            self.done();
            return;
        }
        self.shutdown_write(now);
    }

    /// `shutdown(SHUT_WR)` (`tcp_shutdown`, `tcp_close_state`): a FIN
    /// follows the queued data, and the application may go on reading (as
    /// netperf's TCP_STREAM does, waiting for the remote's close).
    pub fn shutdown_write(&mut self, now: SimTime) {
        self.set_clock(now);
        match self.state {
            TcpState::Established => self.set_state(TcpState::FinWait1),
            TcpState::CloseWait => self.set_state(TcpState::LastAck),
            TcpState::SynSent | TcpState::Closed | TcpState::Listen => {
                self.done();
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

    /// `tcpi_bytes_acked` alone: [`TcpEndpoint::info`] reads most of the
    /// socket, too much for a per-segment check.
    pub fn bytes_acked(&self) -> u64 {
        self.bytes_acked
    }

    /// The congestion-control module (for traces: [`Cc::metrics`]).
    pub fn cc(&self) -> &Cc {
        &self.cc
    }

    /// Exchange the buffer of the output queue, if it is empty (it is
    /// between inputs once drained), with `spare`. An application with
    /// thousands of connections lends one buffer, warm in cache, to the
    /// connection it works on, instead of touching that connection's own
    /// cold one on every segment.
    pub fn swap_output_buffer(&mut self, spare: &mut OutputBuffer) {
        if self.out.is_empty() {
            std::mem::swap(&mut self.out, &mut spare.0);
        }
    }

    // =====================================================================
    // small helpers
    // =====================================================================

    pub(super) fn set_clock(&mut self, now: SimTime) {
        debug_assert!(now >= self.now, "time went backwards");
        self.now = now;
        self.now_us = self.tcp_clock_us(now.as_nanos());
        self.cs.set_clock(now);
        self.cs.now_us = self.now_us;
    }

    #[inline]
    pub(super) fn jiffies(&self) -> u32 {
        self.cs.jiffies
    }

    /// `tcp_clock_us` at simulated time `sim_ns`: the host's TCP clock, µs.
    #[inline]
    pub(super) fn tcp_clock_us(&self, sim_ns: u64) -> u64 {
        sim_ns / 1000 + self.clock_base_us
    }

    /// `tcp_time_stamp_ts`: the TS-option clock (ms), without the offset.
    #[inline]
    pub(super) fn ts_now(&self) -> u32 {
        (self.now_us / 1000) as u32
    }

    pub(super) fn set_state(&mut self, s: TcpState) {
        self.mib.on_state_change(self.state, s);
        self.state = s;
    }

    /// `tcp_packets_in_flight`.
    #[inline]
    pub(super) fn in_flight(&self) -> u32 {
        self.sb.in_flight()
    }

    /// `tcp_rate_skb_sent` for the segment about to join the queue (or be
    /// retransmitted): its snapshot, with `tx.in_flight` counting it.
    pub(super) fn rate_on_sent(&mut self, xmit_us: u64) -> crate::tcp::rate::TxInfo {
        let in_flight = self.in_flight().wrapping_add(1);
        self.rate
            .on_sent(self.sb.packets_out, xmit_us, in_flight, self.lost)
    }

    /// `tp->lost += n` for segments the scoreboard just marked lost, then
    /// the module's `skb_marked_lost` for each of them, in marking order,
    /// with `tp->lost` as it stood after that one (the BBRv3 kernels call
    /// the hook from `tcp_mark_skb_lost`).
    pub(super) fn add_lost(&mut self, n: u32) {
        let lost0 = self.lost;
        self.lost = self.lost.wrapping_add(n);
        if self.sb.lost_log.is_empty() {
            return;
        }
        self.cc_sync();
        let log = std::mem::take(&mut self.sb.lost_log);
        for (i, tx) in log.iter().enumerate() {
            let lost_now = lost0.wrapping_add(i as u32 + 1);
            self.cs.lost = lost_now;
            let skb = crate::tcp::cc::LostSkb {
                tx_in_flight: tx.in_flight,
                lost: lost_now.wrapping_sub(tx.lost),
                is_app_limited: tx.is_app_limited,
                has_snapshot: tx.delivered_mstamp != 0,
            };
            self.cc.skb_marked_lost(&mut self.cs, &skb);
        }
        self.cs.lost = self.lost;
        let mut log = log;
        log.clear();
        self.sb.lost_log = log;
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

    /// `tcp_is_cwnd_limited` (docs/semantics/tcp.md §4).
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
        cs.mss_cache = self.mss_cache + self.accecn_opt_len;
        cs.tcp_header_len = 20
            + if self.ts_ok {
                TCPOLEN_TSTAMP_ALIGNED
            } else {
                0
            };
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
        cs.sacked_out = self.sb.sacked_out;
        cs.rcv_tsval = self.rcv_tsval;
        cs.rcv_tsecr = self.rcv_tsecr;
        cs.ts_now = (self.now_us / 1000) as u32;
        cs.rcv_mss = self.rcv.rcv_mss;
        cs.ecn_ok = self.ecn_ok;
        cs.rcv.rcv_nxt = self.rcv.rcv_nxt;
    }

    /// `tcp_in_ack_event`: the module's `in_ack_event` with the `CA_ACK_*`
    /// flags of `tcp_ack`'s flags (every ACK takes the slow path here).
    #[inline]
    pub(super) fn in_ack_event(&mut self, fl: u32) {
        use crate::tcp::cc::{CA_ACK_ECE, CA_ACK_SLOWPATH, CA_ACK_WIN_UPDATE};
        let mut ev = CA_ACK_SLOWPATH;
        if fl & flag::WIN_UPDATE != 0 {
            ev |= CA_ACK_WIN_UPDATE;
        }
        if fl & flag::ECE != 0 {
            ev |= CA_ACK_ECE;
        }
        let cs = &mut self.cs;
        cs.snd_una = self.snd_una;
        cs.snd_nxt = self.snd_nxt;
        cs.delivered = self.rate.delivered;
        cs.delivered_ce = self.rate.delivered_ce;
        cs.rcv_mss = self.rcv.rcv_mss;
        cs.mss_cache = self.mss_cache + self.accecn_opt_len;
        self.cc.in_ack_event(cs, ev);
    }

    /// The ECT codepoint of a module that needs ECN (`INET_ECN_xmit` /
    /// `INET_ECN_xmit_ect_1_negotiation`): ECT(1) for one that wants it
    /// (Prague), else ECT(0).
    #[inline]
    pub(super) fn module_ect(&self) -> u8 {
        if self.cc.wants_ect1() {
            ECN_ECT1
        } else {
            ECN_ECT0
        }
    }

    /// The ECN field of packets that are not new data of a classic ECN
    /// connection (SYN, SYN-ACK, pure ACKs, retransmissions; `tcp_ecn_send`):
    /// on an AccECN connection every packet is ECT (`ECT(1)` for a module
    /// that wants it) unless the handshake showed ECT being mangled; a module
    /// that needs ECN keeps its ECT on every packet (`INET_ECN_xmit` in
    /// `tcp_assign_congestion_control`) until `dctcp_init` finds no ECN.
    #[inline]
    pub(super) fn ect_always(&self) -> u8 {
        if self.ecn_mode == EcnMode::AccEcn && !self.is_handshaking() {
            if self.accecn.fail_mode & (accecn::ACE_FAIL_SEND | accecn::ACE_FAIL_RECV) != 0 {
                return 0;
            }
            return self.module_ect();
        }
        if self.cc.needs_ecn() && (self.ecn_ok || self.is_handshaking()) {
            self.module_ect()
        } else {
            0
        }
    }

    #[inline]
    fn is_handshaking(&self) -> bool {
        matches!(self.state, TcpState::SynSent | TcpState::SynReceived)
    }

    /// `tcp_ecn_received_counters` on a segment of an AccECN connection; a
    /// change of codepoint asks for an immediate ACK.
    pub(super) fn accecn_received(&mut self, ecn: u8, segs: u32, payload_len: u32) {
        if ecn & crate::packet::ECN_MASK != 0 {
            self.rcv.ecn_seen = true;
        }
        if self.accecn.received(ecn, segs, payload_len) {
            self.rcv.ack_pending |= crate::tcp::rcv::ACK_NOW;
        }
    }

    /// The AccECN option goes on every segment (`tcp_ecn_option` 2 or 3)
    /// once the peer's was seen: data segments lose its aligned length
    /// from the MSS (`tcp_current_mss`, sized by `tcp_options_fit_accecn`
    /// without SACK blocks).
    pub(super) fn accecn_update_mss(&mut self) {
        let full = self.ecn_mode == EcnMode::AccEcn
            && self.cfg.ecn_option >= 2
            && self.accecn.saw_opt != accecn::OPT_NOT_SEEN
            && (self.cfg.ecn_option >= 3 || self.accecn.fail_mode & accecn::OPT_FAIL_SEND == 0);
        let len = if full {
            let ts = if self.ts_ok {
                TCPOLEN_TSTAMP_ALIGNED
            } else {
                0
            };
            let mut sacks = 0;
            accecn::fit_accecn(0, accecn::MAX_TCP_OPTION_SPACE - ts, &mut sacks, None)
                .map_or(0, |(_, size)| size)
        } else {
            0
        };
        if len != self.accecn_opt_len {
            self.accecn_opt_len = len;
            self.sync_mss();
        }
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

    /// `tcp_bound_to_half_wnd`: at most half the peer's largest window (all of
    /// it while that is no more than the default MSS), and never below
    /// 68 bytes of packet less the TCP header.
    pub(super) fn bound_to_half_wnd(&self, size: u32) -> u32 {
        let cutoff = if self.max_window > TCP_MSS_DEFAULT {
            self.max_window / 2
        } else {
            self.max_window
        };
        if cutoff == 0 || size <= cutoff {
            return size;
        }
        let header = 20
            + if self.ts_ok {
                TCPOLEN_TSTAMP_ALIGNED
            } else {
                0
            };
        cutoff.max(68 - header)
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
        let mss = self.bound_to_half_wnd(mss.saturating_sub(opts + self.accecn_opt_len).max(48));
        self.mss_cache = mss;
        self.cs.mss_cache = mss + self.accecn_opt_len;
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

    /// (for tests) the sender's ISN.
    #[cfg(test)]
    pub(super) fn iss(&self) -> u32 {
        self.iss
    }
}
