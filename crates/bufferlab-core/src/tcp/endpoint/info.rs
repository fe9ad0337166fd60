//! `getsockopt(TCP_INFO)`: net/ipv4/tcp.c `tcp_get_info` (docs/semantics/tcp.md §14),
//! and the socket memory `ss -m` reads (net/core/sock.c `sk_get_meminfo`).

use super::{TcpEndpoint, TcpState};
use crate::tcp::cc::{tcp_jiffies32, HZ, TCP_INFINITE_SSTHRESH};
use crate::tcp::config::SNDBUF_OVERHEAD_PCT;
use crate::tcp::rtt::jiffies_to_usecs;
use crate::tcp::timers::TcpTimer;
use crate::time::SimTime;

/// The `struct tcp_info` fields downstream code reads (docs/semantics/tcp.md §14), as
/// `getsockopt(TCP_INFO)` would report them at this instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    pub state: Option<TcpState>,
    pub ca_state: u8,
    pub retransmits: u32,
    pub probes: u32,
    pub backoff: u32,
    /// TCPI_OPT_* bits (1 TS, 2 SACK, 4 WSCALE, 8 ECN, 16 ECN_SEEN)
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
    /// CE-marked data segments received (`tcpi_received_ce`; on an AccECN
    /// connection every CE segment, pure ACKs included, as Linux counts)
    pub received_ce: u32,
    /// the congestion control's `get_info` block (`ss -i`)
    pub cc_info: Option<crate::tcp::cc::CcInfo>,
    pub data_segs_out: u32,
    /// bytes/s
    pub delivery_rate: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    /// out-of-order segments received
    pub rcv_ooopack: u32,
    /// peer's window, bytes
    pub snd_wnd: u32,
    /// our advertised window, bytes
    pub rcv_wnd: u32,
    /// send buffer size (`sk_sndbuf`), bytes
    pub sndbuf: u32,
    /// receive buffer size (`sk_rcvbuf`), bytes
    pub rcvbuf: u32,
}

impl TcpEndpoint {
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
        if self.ecn_seen {
            options |= 16;
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
            snd_mss: self.mss_cache + self.accecn_opt_len,
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
            received_ce: if self.ecn_mode == crate::tcp::accecn::EcnMode::AccEcn {
                self.accecn.received_ce
            } else {
                self.rcv.ce_received
            },
            cc_info: self.cc.get_info(&self.cs),
            data_segs_out: self.data_segs_out,
            delivery_rate: self.rate.delivery_rate(self.mss_cache),
            delivered: self.rate.delivered,
            delivered_ce: self.rate.delivered_ce,
            bytes_sent: self.bytes_sent,
            bytes_retrans: self.bytes_retrans,
            dsack_dups: self.dsack_dups,
            reord_seen: self.reord_seen,
            rcv_ooopack: self.rcv_ooopack,
            snd_wnd: self.snd_wnd,
            rcv_wnd: self.rcv.rcv_wnd,
            sndbuf: self.sndbuf,
            rcvbuf: self.rcv.rcvbuf,
        }
    }
}

/// `sk_get_meminfo` (net/core/sock.c) of a connection, as `ss -m` prints it
/// (`skmem:(r…,rb…,t…,tb…,f…,w…,o…,bl…,d…)`), bytes except `drops`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SkMemInfo {
    /// `sk_rmem_alloc`: truesize of received data not read (in order and out of order)
    pub rmem_alloc: u32,
    pub rcvbuf: u32,
    /// `sk_wmem_alloc`: truesize of sent skbs still in the host (TSQ's count)
    pub wmem_alloc: u32,
    pub sndbuf: u32,
    /// `sk_forward_alloc`: what the socket reserved beyond its use. SIM: the
    /// rest of the last 4 KiB page its memory occupies (`sk_mem_pages`
    /// rounding); Linux keeps up to one more page until it reclaims.
    pub forward_alloc: u32,
    /// `sk_wmem_queued`: truesize of the write and retransmit queues. SIM:
    /// the queued bytes with the send buffer's overhead ratio (§6.2).
    pub wmem_queued: u32,
    /// `sk_drops`, segments
    pub drops: u32,
}

/// `SK_MEM_QUANTUM`: the page socket memory is reserved in
const SK_MEM_QUANTUM: u32 = 4096;

impl TcpEndpoint {
    /// `sk_get_meminfo`. Option memory and the backlog (`o`, `bl`) are 0: no
    /// socket options hold memory, and a segment never waits for a socket
    /// owned by its application (a process context the model does not have).
    pub fn meminfo(&self) -> SkMemInfo {
        let wmem_queued = (self.queued_bytes() as u64 * SNDBUF_OVERHEAD_PCT / 100) as u32;
        let used = self.rcv.rmem_alloc.wrapping_add(wmem_queued);
        SkMemInfo {
            rmem_alloc: self.rcv.rmem_alloc,
            rcvbuf: self.rcv.rcvbuf,
            wmem_alloc: self.wmem_alloc.min(u32::MAX as u64) as u32,
            sndbuf: self.sndbuf,
            forward_alloc: (SK_MEM_QUANTUM - used % SK_MEM_QUANTUM) % SK_MEM_QUANTUM,
            wmem_queued,
            drops: self.sk_drops,
        }
    }

    /// `idiag_rqueue`, `idiag_wqueue` of a connection (tcp_diag.c
    /// `tcp_diag_get_info`): bytes received but not read, and sequence
    /// space written but not acknowledged (a queued FIN counts one).
    pub fn diag_queues(&self) -> (u32, u32) {
        let rq = self.rcv.rcv_nxt.wrapping_sub(self.rcv.copied_seq) as i32;
        (rq.max(0) as u32, self.write_seq.wrapping_sub(self.snd_una))
    }

    /// `idiag_timer`, `idiag_expires`, `idiag_retrans` (inet_diag.c): the
    /// pending transmit timer as `ss -o` names it, whole jiffies to its
    /// expiry in ms, and the retransmissions (or zero-window probes) so far.
    pub fn diag_timer(&self, now: SimTime) -> Option<(&'static str, u64, u32)> {
        let left_ms = |at: SimTime| {
            let delta = tcp_jiffies32(at).wrapping_sub(tcp_jiffies32(now)) as i32;
            delta.max(0) as u64 * (1000 / HZ) as u64
        };
        if self.state == TcpState::TimeWait {
            let at = self.timers.get(TcpTimer::TimeWait)?;
            return Some(("timewait", left_ms(at), 0));
        }
        match self.timers.pending_xmit()? {
            (TcpTimer::Probe0, at) => Some(("persist", left_ms(at), self.probes_out)),
            (_, at) => Some(("on", left_ms(at), self.retransmits)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tcp::endpoint::TcpState;
    use crate::tcp::harness::*;
    use crate::time::SimDuration;

    /// `tcpi_options` carries only what both ends negotiated (here window
    /// scaling alone), and without timestamps the sending MSS keeps the 12
    /// option bytes: 1460.
    #[test]
    fn options_and_mss_follow_the_negotiation() {
        let mut c = cfg("cubic");
        c.timestamps = false;
        c.sack = false;
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.run_until(ms(100));
        let i = p.a.info();
        assert_eq!(i.state, Some(TcpState::Established));
        assert_eq!((i.options, i.snd_mss, i.ca_state), (4, 1460, 0));
        assert_eq!((i.unacked, i.sacked, i.lost, i.retrans), (0, 0, 0, 0));
    }
}
