//! Socket and sysctl settings of an endpoint and the Linux constants they
//! size things with (include/net/tcp.h; defaults from `tcp_init`, tcp_ipv4.c).

use super::cc::CcProfile;
use crate::time::SimDuration;

/// `TCP_MSS_DEFAULT`: the MSS assumed before the peer's SYN option is known.
pub const TCP_MSS_DEFAULT: u32 = 536;
/// `TCP_MIN_MSS`.
pub const TCP_MIN_MSS: u32 = 88;
/// TCP header with the aligned timestamp option, bytes.
pub const TCP_HEADER_TS: u32 = 32;
/// `TCPOLEN_TSTAMP_ALIGNED`.
pub const TCPOLEN_TSTAMP_ALIGNED: u32 = 12;
/// `MAX_TCP_HEADER` (include/net/tcp.h) as x86-64 distribution kernels build it, bytes:
/// `L1_CACHE_ALIGN(128 + MAX_HEADER)` with WLAN/Hyper-V's `LL_MAX_HEADER` and the
/// tunnels' 48 bytes. The skb headroom; it sizes the send buffer (`tcp_sndbuf_expand`).
pub const DEFAULT_MAX_TCP_HEADER: u32 = 320;
/// The values `MAX_TCP_HEADER` takes on x86-64 (64-byte cache lines): `LL_MAX_HEADER`
/// 32, 96 or 128 (include/linux/netdevice.h), plus 48 with IP tunnels, plus 128,
/// rounded up to 64 bytes.
pub const MAX_TCP_HEADER_BUILDS: [u32; 3] = [192, 256, 320];
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
/// `net.ipv4.tcp_limit_output_bytes` default: \[lab2019\] 1 MiB (Linux
/// 4.20–6.15), \[modern\] 4 MiB (6.16+).
pub fn default_limit_output_bytes(profile: CcProfile) -> u32 {
    match profile {
        CcProfile::Lab2019 => 1 << 20,
        CcProfile::Modern => 4 << 20,
    }
}
/// Send-buffer overhead per queued payload byte with TSO-sized skbs
/// (docs/semantics/tcp.md §6.2: `queued × 1.05 < sndbuf`), as a ratio ×100.
pub const SNDBUF_OVERHEAD_PCT: u64 = 105;
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
    /// `net.ipv4.tcp_ecn`: incoming / outgoing connections get — 0 no ECN
    /// / no ECN, 1 ECN / ECN, 2 ECN / no ECN (default), 3 AccECN / AccECN,
    /// 4 AccECN / ECN, 5 AccECN / no ECN (Linux 6.18+, ip-sysctl.rst)
    pub ecn: u8,
    /// `net.ipv4.tcp_ecn_fallback`: a retransmitted SYN stops asking for
    /// ECN (RFC 3168 §6.1.1.1); AccECN handshake feedback is checked
    pub ecn_fallback: bool,
    /// `net.ipv4.tcp_ecn_option`: AccECN option sending — 0 never, 2 on
    /// every segment it fits (default), 3 also after a fallback (1, the
    /// minimum rules, is refused as not supported yet)
    pub ecn_option: u8,
    /// `net.ipv4.tcp_ecn_option_beacon` (default 3): options per RTT in
    /// mode 1; modes 0, 2 and 3 do not read it
    pub ecn_option_beacon: u32,
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
    /// `net.ipv4.tcp_limit_output_bytes`: the most an unpaced socket may have
    /// in its host's qdiscs and device (TSQ, docs/semantics/tcp.md §6.4), bytes
    pub limit_output_bytes: u32,
    /// `TCP_RTO_MIN` / route `rto_min`
    pub min_rto: SimDuration,
    /// initial congestion window, packets (`TCP_INIT_CWND`)
    pub init_cwnd: u32,
    /// `SO_SNDBUF` request (iperf3 `-w`): the buffer is twice this, capped at
    /// 2 × wmem_max, and autotuning is off for it
    pub sndbuf: Option<u32>,
    /// `SO_RCVBUF` request: as `sndbuf` for the receive buffer
    pub rcvbuf: Option<u32>,
    /// `SO_MAX_PACING_RATE` (iperf3 `--fq-rate`), bytes/s; `u64::MAX` = none.
    /// Any other value also asks for pacing (`sk_setsockopt` sets
    /// SK_PACING_NEEDED, net/core/sock.c, since Linux 4.13's "tcp: internal
    /// implementation for pacing"): TCP paces itself unless an fq does.
    pub max_pacing_rate: u64,
    /// `TCP_NODELAY`
    pub nodelay: bool,
    /// kernel profile (docs/semantics/tcp.md: `lab2019` or `modern`)
    pub profile: CcProfile,
    /// IP TOS byte of the socket; TCP owns the ECN bits
    pub tos: u8,
    /// seed mixed into the endpoint's random draws (ISN, TS offset, BBR)
    pub seed: u64,
    /// `sk_gso_max_size` of the route's device, bytes: 65536 on a veth with
    /// TSO/GSO on (a Mininet host); 0 = GSO off (every skb one MSS)
    pub gso_max_size: u32,
    /// The phase of the host's TCP clock, µs in [0, 1000): how far past a
    /// whole millisecond `tcp_clock_ns` is at simulated time zero, which
    /// decides where its TS-option ticks fall among the packets (tcp/clock.rs)
    pub clock_phase_us: u32,
    /// The kernel build's `MAX_TCP_HEADER`, bytes (one of [`MAX_TCP_HEADER_BUILDS`];
    /// `[sim] max_tcp_header`, the host's setting like `gso_max_size`)
    pub max_tcp_header: u32,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig::for_profile(CcProfile::Lab2019)
    }
}

/// A socket's buffer sizes and whether `SO_SNDBUF`/`SO_RCVBUF` locked them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocketBuffers {
    pub sndbuf: u32,
    pub sndbuf_locked: bool,
    pub rcvbuf: u32,
    pub rcvbuf_locked: bool,
}

impl TcpConfig {
    /// Was `SO_MAX_PACING_RATE` set (SK_PACING_NEEDED from the start)?
    pub fn requests_pacing(&self) -> bool {
        self.max_pacing_rate != u64::MAX
    }

    /// `sk_sndbuf` / `sk_rcvbuf` of a new socket: `tcp_wmem[1]` / `tcp_rmem[1]`
    /// (tcp_init_sock), or what `SO_SNDBUF` / `SO_RCVBUF` set (sock.c
    /// `sock_setsockopt`: doubled, capped at twice the core maximum, at least
    /// SOCK_MIN_SNDBUF / SOCK_MIN_RCVBUF).
    pub fn socket_buffers(&self) -> SocketBuffers {
        let (sndbuf, sndbuf_locked) = match self.sndbuf {
            Some(v) => (v.min(self.wmem_max).saturating_mul(2).max(4608), true),
            None => (self.wmem[1], false),
        };
        let (rcvbuf, rcvbuf_locked) = match self.rcvbuf {
            Some(v) => (v.min(self.rmem_max).saturating_mul(2).max(2304), true),
            None => (self.rmem[1], false),
        };
        SocketBuffers {
            sndbuf,
            sndbuf_locked,
            rcvbuf,
            rcvbuf_locked,
        }
    }

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
            ecn_fallback: true,
            ecn_option: 2,
            ecn_option_beacon: 3,
            sack: true,
            timestamps: true,
            window_scaling: true,
            moderate_rcvbuf: true,
            adv_win_scale: 1,
            slow_start_after_idle: true,
            no_metrics_save: false,
            limit_output_bytes: default_limit_output_bytes(profile),
            min_rto: SimDuration::from_millis(200),
            init_cwnd: 10,
            sndbuf: None,
            rcvbuf: None,
            max_pacing_rate: u64::MAX,
            nodelay: false,
            profile,
            tos: 0,
            seed: 0,
            gso_max_size: 0,
            clock_phase_us: 0,
            max_tcp_header: DEFAULT_MAX_TCP_HEADER,
        }
    }
}
