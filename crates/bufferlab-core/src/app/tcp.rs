//! Glue between applications and TCP endpoints (crates/bufferlab-core/src/tcp).
//!
//! An application owns its [`TcpEndpoint`]s. Segments it receives arrive
//! through the port it bound; after every input or timer the application
//! drains each endpoint's output into its packet outbox with [`flush`].
//! [`TcpSpec`] is the socket configuration as it crosses from Python: the
//! host's sysctls (net.ipv4.tcp_*, net.core.*) and per-socket options
//! (iperf3 `-w`, `-C`), with Linux's defaults for anything left out.

use super::{AppCtx, SocketHandle, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Payload, Proto};
use crate::rng::ComponentRng;
use crate::tcp::cc::{Cc, CcProfile};
use crate::tcp::endpoint::{TcpConfig, TcpEndpoint};
use crate::time::SimTime;
use serde::Deserialize;
use std::sync::Arc;

/// ECN codepoint ECT(0) (RFC 3168).
#[cfg(test)]
const ECT0: u8 = 0b10;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KernelProfile {
    #[default]
    Lab2019,
    Modern,
}

/// Socket settings; `None` keeps the kernel profile's default.
#[derive(Clone, Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    #[serde(default)]
    pub profile: KernelProfile,
    #[serde(default)]
    pub rmem: Option<[u32; 3]>,
    #[serde(default)]
    pub wmem: Option<[u32; 3]>,
    #[serde(default)]
    pub rmem_max: Option<u32>,
    #[serde(default)]
    pub wmem_max: Option<u32>,
    #[serde(default)]
    pub congestion: Option<String>,
    #[serde(default)]
    pub ecn: Option<u8>,
    /// `net.ipv4.tcp_ecn_fallback`
    #[serde(default)]
    pub ecn_fallback: Option<bool>,
    /// `net.ipv4.tcp_ecn_option` (AccECN option sending: 0, 2, 3)
    #[serde(default)]
    pub ecn_option: Option<u8>,
    /// `net.ipv4.tcp_ecn_option_beacon`
    #[serde(default)]
    pub ecn_option_beacon: Option<u32>,
    #[serde(default)]
    pub sack: Option<bool>,
    #[serde(default)]
    pub timestamps: Option<bool>,
    #[serde(default)]
    pub window_scaling: Option<bool>,
    #[serde(default)]
    pub moderate_rcvbuf: Option<bool>,
    #[serde(default)]
    pub adv_win_scale: Option<i32>,
    #[serde(default)]
    pub slow_start_after_idle: Option<bool>,
    #[serde(default)]
    pub no_metrics_save: Option<bool>,
    /// `net.ipv4.tcp_limit_output_bytes` (TCP Small Queues), bytes
    #[serde(default)]
    pub limit_output_bytes: Option<u32>,
    /// `SO_SNDBUF` / `SO_RCVBUF` requests (iperf3 `-w`), bytes
    #[serde(default)]
    pub sndbuf: Option<u32>,
    #[serde(default)]
    pub rcvbuf: Option<u32>,
    /// `SO_MAX_PACING_RATE` (iperf3 `--fq-rate`), bytes/s
    #[serde(default)]
    pub max_pacing_rate: Option<u64>,
    /// advertised MSS in bytes (1460 on a 1500-byte path; the sending MSS is
    /// 12 less with timestamps)
    #[serde(default)]
    pub mss: Option<u32>,
    /// minimum retransmission timeout (Linux 200 ms; ns-3 1 s)
    #[serde(default)]
    pub min_rto_ns: Option<u64>,
    /// initial congestion window in segments (Linux 10; ns-3 1)
    #[serde(default)]
    pub init_cwnd: Option<u32>,
}

impl TcpSpec {
    /// The endpoint configuration, validated (unknown congestion control → error).
    pub fn config(&self, seed: u64, tos: u8) -> Result<TcpConfig> {
        let profile = match self.profile {
            KernelProfile::Lab2019 => CcProfile::Lab2019,
            KernelProfile::Modern => CcProfile::Modern,
        };
        let mut c = TcpConfig::for_profile(profile);
        if let Some(name) = &self.congestion {
            if Cc::from_name(name).is_none() {
                return Err(Error::App(format!(
                    "congestion control {name:?} is not available ({})",
                    Cc::NAMES.join(", ")
                )));
            }
            c.congestion = name.clone();
        }
        c.rmem = self.rmem.unwrap_or(c.rmem);
        c.wmem = self.wmem.unwrap_or(c.wmem);
        c.rmem_max = self.rmem_max.unwrap_or(c.rmem_max);
        c.wmem_max = self.wmem_max.unwrap_or(c.wmem_max);
        c.ecn = self.ecn.unwrap_or(c.ecn);
        if c.ecn > 5 {
            return Err(Error::App(format!(
                "net.ipv4.tcp_ecn = {}: must be 0 to 5",
                c.ecn
            )));
        }
        let accecn_kernel = profile == CcProfile::Modern;
        if c.ecn > 2 && !accecn_kernel {
            return Err(Error::App(format!(
                "net.ipv4.tcp_ecn = {}: Accurate ECN needs Linux 6.18+ (kernel profile \"modern\"); \
                 the lab2019 kernels accept 0 to 2",
                c.ecn
            )));
        }
        if c.congestion == "prague" && !accecn_kernel {
            return Err(Error::App(
                "congestion control \"prague\" needs an L4S kernel (6.x, kernel profile \"modern\")"
                    .into(),
            ));
        }
        c.ecn_fallback = self.ecn_fallback.unwrap_or(c.ecn_fallback);
        c.ecn_option = self.ecn_option.unwrap_or(c.ecn_option);
        match c.ecn_option {
            0 | 2 | 3 => {}
            1 => {
                return Err(Error::App(
                    "net.ipv4.tcp_ecn_option = 1: the minimum AccECN option rules are not supported yet \
                     (0, 2 or 3 are)"
                        .into(),
                ))
            }
            n => {
                return Err(Error::App(format!(
                    "net.ipv4.tcp_ecn_option = {n}: must be 0 to 3"
                )))
            }
        }
        c.ecn_option_beacon = self.ecn_option_beacon.unwrap_or(c.ecn_option_beacon);
        c.sack = self.sack.unwrap_or(c.sack);
        c.timestamps = self.timestamps.unwrap_or(c.timestamps);
        c.window_scaling = self.window_scaling.unwrap_or(c.window_scaling);
        c.moderate_rcvbuf = self.moderate_rcvbuf.unwrap_or(c.moderate_rcvbuf);
        c.adv_win_scale = self.adv_win_scale.unwrap_or(c.adv_win_scale);
        c.slow_start_after_idle = self
            .slow_start_after_idle
            .unwrap_or(c.slow_start_after_idle);
        c.no_metrics_save = self.no_metrics_save.unwrap_or(c.no_metrics_save);
        c.limit_output_bytes = self.limit_output_bytes.unwrap_or(c.limit_output_bytes);
        c.sndbuf = self.sndbuf.or(c.sndbuf);
        c.rcvbuf = self.rcvbuf.or(c.rcvbuf);
        c.max_pacing_rate = self.max_pacing_rate.unwrap_or(c.max_pacing_rate);
        if let Some(mss) = self.mss {
            if !(88..=c.pmtu - 40).contains(&mss) {
                return Err(Error::App(format!(
                    "tcp mss {mss} outside 88..{}",
                    c.pmtu - 40
                )));
            }
            c.mss = mss;
        }
        c.min_rto = self.min_rto_ns.map_or(c.min_rto, crate::time::SimDuration);
        if let Some(iw) = self.init_cwnd {
            if iw == 0 {
                return Err(Error::App(
                    "tcp init_cwnd must be at least 1 segment".into(),
                ));
            }
            c.init_cwnd = iw;
        }
        c.tos = tos;
        c.seed = seed;
        Ok(c)
    }
}

/// Give socket settings the host's GSO limit, TCP clock phase and kernel
/// build's `MAX_TCP_HEADER`. An
/// application with many connections applies them to the settings it keeps,
/// so that its connections share one copy (this copies them only if either
/// differs).
pub fn for_host(cfg: &mut Arc<TcpConfig>, ctx: &AppCtx) {
    if cfg.gso_max_size != ctx.gso_max_size {
        Arc::make_mut(cfg).gso_max_size = ctx.gso_max_size;
    }
    if cfg.clock_phase_us != ctx.tcp_clock_phase_us {
        Arc::make_mut(cfg).clock_phase_us = ctx.tcp_clock_phase_us;
    }
    if cfg.max_tcp_header != ctx.max_tcp_header {
        Arc::make_mut(cfg).max_tcp_header = ctx.max_tcp_header;
    }
}

/// What sending a connection's segments needs of its node: the instant,
/// the node's address, the flow id (the owning application's) and whether
/// an `fq` paces the node's sockets (`AppCtx::fq_pacing`), and whether its
/// sockets charge their skbs for TCP Small Queues (`AppCtx::tsq`).
#[derive(Clone, Copy, Debug)]
pub struct SendEnv {
    pub now: SimTime,
    pub addr: Ipv4,
    pub id: u32,
    pub fq_pacing: bool,
    pub tsq: bool,
}

/// One TCP connection: the endpoint and its addressing. It lives in its
/// node's socket table (app/sockets); applications hold its handle.
pub struct Conn {
    pub ep: TcpEndpoint,
    pub local_port: u16,
    pub remote: (Ipv4, u16),
}

impl Conn {
    /// Active open from `local_port` (already bound by the application).
    pub fn connect(
        cfg: impl Into<Arc<TcpConfig>>,
        ctx: &AppCtx,
        local_port: u16,
        remote: (Ipv4, u16),
        rng: ComponentRng,
    ) -> Conn {
        let mut cfg = cfg.into();
        for_host(&mut cfg, ctx);
        let mut ep = TcpEndpoint::connect(cfg, (ctx.addr, local_port), remote, ctx.now, rng);
        ep.set_tsq(ctx.tsq);
        Conn {
            ep,
            local_port,
            remote,
        }
    }

    /// Passive open from a SYN that arrived on the application's port.
    pub fn accept(
        cfg: impl Into<Arc<TcpConfig>>,
        ctx: &AppCtx,
        p: &Packet,
        rng: ComponentRng,
    ) -> Option<Conn> {
        let Payload::Tcp(hdr) = p.payload else {
            return None;
        };
        let mut cfg = cfg.into();
        for_host(&mut cfg, ctx);
        let mut ep = TcpEndpoint::listen_accept(
            cfg,
            (p.dst, p.dst_port),
            (p.src, p.src_port),
            &hdr,
            p.tos & 0b11,
            ctx.now,
            rng,
        );
        ep.set_tsq(ctx.tsq);
        Some(Conn {
            ep,
            local_port: p.dst_port,
            remote: (p.src, p.src_port),
        })
    }

    /// Feed a received segment to the endpoint.
    pub fn input(&mut self, now: SimTime, p: &Packet) {
        if let Payload::Tcp(hdr) = p.payload {
            let gso_size = if p.is_gso() { p.gso_size as u32 } else { 0 };
            self.ep
                .handle_segment(now, &hdr, p.payload_len(), gso_size, p.tos & 0b11);
        }
    }

    /// Hand every segment the endpoint wants to send now to `out`.
    pub fn flush(&mut self, env: &SendEnv, out: &mut Vec<Packet>, tos: u8) {
        if env.fq_pacing {
            self.ep.set_pacing_fq();
        }
        // a qdisc added or removed since: the next transmissions see it
        self.ep.set_tsq(env.tsq);
        while let Some(seg) = self.ep.poll_transmit(env.now) {
            let ecn = seg.ecn & 0b11;
            out.push(Packet {
                src: env.addr,
                dst: self.remote.0,
                proto: Proto::Tcp,
                tos: (tos & !0b11) | ecn,
                ttl: 64,
                len: seg.frame_len(),
                src_port: self.local_port,
                dst_port: self.remote.1,
                payload: Payload::Tcp(seg.hdr),
                seq: 0,
                sent_at: env.now,
                flow: env.id,
                corrupt: false,
                local: false,
                gso_segs: seg.gso_segs as u16,
                gso_size: if seg.gso_segs > 1 {
                    seg.gso_size as u16
                } else {
                    0
                },
                tsq: seg.truesize,
                tstamp: Some(seg.tstamp),
            });
        }
    }
}

/// Earliest timer of a set of connections of `sockets`.
pub fn next_timeout(
    sockets: &Sockets,
    conns: impl Iterator<Item = SocketHandle>,
) -> Option<SimTime> {
    conns.filter_map(|h| sockets.tcp(h).ep.poll_timeout()).min()
}

/// Is `p` a connection request (SYN without ACK)?
pub fn is_syn(p: &Packet) -> bool {
    use crate::packet::tcp_flags::{ACK, SYN};
    matches!(p.payload, Payload::Tcp(h) if h.flags & SYN != 0 && h.flags & ACK == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::test_support::{established, Bench, MS};
    use crate::packet::tcp_flags::{ACK, SYN};
    use crate::packet::TcpHeader;

    #[test]
    fn an_empty_spec_keeps_the_profile_defaults_with_seed_and_tos() {
        let c = TcpSpec::default().config(42, 0xb8).unwrap();
        let d = TcpConfig::for_profile(CcProfile::Lab2019);
        assert_eq!((c.seed, c.tos), (42, 0xb8));
        assert_eq!(
            (c.mss, c.wmem, c.rmem, c.init_cwnd),
            (d.mss, d.wmem, d.rmem, d.init_cwnd)
        );
        assert_eq!(c.congestion, d.congestion);
    }

    #[test]
    fn given_settings_override_the_profile() {
        let spec = TcpSpec {
            congestion: Some("bbr".into()),
            wmem: Some([4096, 65_536, 1_000_000]),
            sack: Some(false),
            sndbuf: Some(100_000),
            mss: Some(1000),
            min_rto_ns: Some(1_000 * MS),
            init_cwnd: Some(1),
            ..TcpSpec::default()
        };
        let c = spec.config(0, 0).unwrap();
        assert_eq!(
            (c.congestion.as_str(), c.wmem[1], c.sack, c.sndbuf),
            ("bbr", 65_536, false, Some(100_000))
        );
        assert_eq!(
            (c.mss, c.min_rto.as_nanos(), c.init_cwnd),
            (1000, 1_000 * MS, 1)
        );
    }

    #[test]
    fn out_of_range_settings_are_refused_in_the_users_words() {
        let err = |spec: TcpSpec| spec.config(0, 0).unwrap_err().to_string();
        let cc = err(TcpSpec {
            congestion: Some("l4s".into()),
            ..TcpSpec::default()
        });
        // the registered names in order (Cc::NAMES; a new module appends)
        assert!(
            cc.contains("\"l4s\" is not available (reno, cubic, htcp, bbr"),
            "{cc}"
        );
        // Prague and AccECN need a 6.x kernel; tcp_ecn_option 1 is refused
        let prague = err(TcpSpec {
            congestion: Some("prague".into()),
            ..TcpSpec::default()
        });
        assert!(prague.contains("needs an L4S kernel"), "{prague}");
        assert!(err(TcpSpec {
            ecn: Some(3),
            ..TcpSpec::default()
        })
        .contains("Accurate ECN needs Linux 6.18+"));
        assert!(err(TcpSpec {
            ecn: Some(6),
            ..TcpSpec::default()
        })
        .contains("must be 0 to 5"));
        let modern = |spec: TcpSpec| TcpSpec {
            profile: KernelProfile::Modern,
            ..spec
        };
        assert!(modern(TcpSpec {
            ecn: Some(3),
            congestion: Some("prague".into()),
            ..TcpSpec::default()
        })
        .config(0, 0)
        .is_ok());
        assert!(err(modern(TcpSpec {
            ecn_option: Some(1),
            ..TcpSpec::default()
        }))
        .contains("minimum AccECN option rules are not supported yet"));
        assert!(err(TcpSpec {
            mss: Some(87),
            ..TcpSpec::default()
        })
        .contains("tcp mss 87 outside 88..1460"));
        assert!(err(TcpSpec {
            mss: Some(1461),
            ..TcpSpec::default()
        })
        .contains("outside 88..1460"));
        assert!(err(TcpSpec {
            init_cwnd: Some(0),
            ..TcpSpec::default()
        })
        .contains("at least 1 segment"));
        for ok in [88, 1460] {
            assert!(TcpSpec {
                mss: Some(ok),
                ..TcpSpec::default()
            }
            .config(0, 0)
            .is_ok());
        }
    }

    #[test]
    fn flush_stamps_the_tos_and_marks_ect_when_the_socket_negotiated_ecn() {
        let mut bench = Bench::new(2);
        let ecn = TcpSpec {
            ecn: Some(1),
            ..TcpSpec::default()
        }
        .config(1, 0)
        .unwrap();
        let (client, _) = established(&mut bench, &ecn);
        bench.conn_mut(0, client).ep.write(SimTime(MS), 1000);
        bench.ctx(0, SimTime(MS)).flush(client, 0xb9);
        let data = bench.sent(0);
        assert_eq!(data.len(), 1);
        let p = data[0];
        // DSCP bits of the TOS kept, its ECN bits replaced by ECT(0)
        assert_eq!(p.tos, 0xb8 | ECT0);
        assert_eq!(
            (p.src_port, p.dst_port, p.flow, p.sent_at),
            (40_000, 5001, 0, SimTime(MS))
        );
        assert_eq!(p.payload_len(), 1000);
    }

    #[test]
    fn only_a_syn_without_ack_is_a_connection_request() {
        let mut p = crate::app::test_support::control((Ipv4(1), 1), (Ipv4(2), 2), 0, 0);
        let with = |flags| {
            Payload::Tcp(TcpHeader {
                flags,
                ..TcpHeader::default()
            })
        };
        p.payload = with(SYN);
        assert!(is_syn(&p));
        p.payload = with(SYN | ACK);
        assert!(!is_syn(&p));
        p.payload = with(ACK);
        assert!(!is_syn(&p));
        p.payload = Payload::Control { msg: 1, conn: 0 };
        assert!(!is_syn(&p));
    }

    #[test]
    fn next_timeout_is_the_earliest_of_the_connections() {
        let mut bench = Bench::new(2);
        let cfg = TcpSpec::default().config(1, 0).unwrap();
        let (client, _) = established(&mut bench, &cfg);
        assert_eq!(next_timeout(&bench.hosts[0].sockets, [].into_iter()), None);
        bench.conn_mut(0, client).ep.write(SimTime(MS), 1000);
        bench.ctx(0, SimTime(MS)).flush(client, 0);
        let rto = bench.conn(0, client).ep.poll_timeout();
        assert!(rto.is_some(), "retransmission timer armed");
        // a second connection, still in SYN-SENT: its timer is the initial 1 s RTO
        let dst = (bench.addr(1), 5002);
        let mut ctx = bench.ctx(0, SimTime(MS));
        let syn_sent = ctx.connect(cfg, 40_001, dst, ComponentRng::new(3, "c"));
        let socks = &bench.hosts[0].sockets;
        let syn_rto = socks.tcp(syn_sent).ep.poll_timeout();
        assert!(syn_rto > rto);
        assert_eq!(next_timeout(socks, [syn_sent, client].into_iter()), rto);
        assert_eq!(next_timeout(socks, [syn_sent].into_iter()), syn_rto);
    }
}
