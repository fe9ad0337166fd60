//! Applications: sans-I/O state machines driven by the engine.
//!
//! Calling convention (the same for every model, after quinn-proto's
//! `Connection`): the engine calls `start`, then `handle_packet` for every
//! packet delivered to a socket the application bound, `handle_timeout` when
//! the instant returned by `poll_timeout` is reached, and `interrupt` for a
//! Ctrl-C. Outputs leave through [`AppCtx`]: packets to send from the node,
//! socket bindings. `is_finished` turns true once; `result` is then the
//! application's report as JSON (schemas in docs/internals.md).

pub mod bulk;
pub mod iperf3;
pub mod iperf3_tcp;
pub mod ping;
pub mod qmon;
pub mod sink;
pub mod tcp;
#[cfg(test)]
pub(crate) mod test_support;
pub mod udp_source;

use crate::error::{Error, Result};
use crate::packet::{
    Ipv4, Packet, Payload, Proto, ETH_HEADER, IPV4_HEADER, TCP_HEADER_TS, UDP_HEADER,
};
use crate::rng::ComponentRng;
use crate::time::SimTime;
use serde::Deserialize;

pub use iperf3::IperfRegistry;

/// Validated application specs as they arrive from Python (JSON, tagged by `kind`).
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AppSpec {
    Ping(ping::PingSpec),
    UdpSource(udp_source::UdpSourceSpec),
    Sink(sink::SinkSpec),
    Bulk(bulk::BulkSpec),
    Iperf3Server(iperf3::ServerSpec),
    Iperf3Client(iperf3::ClientSpec),
    Qmon(qmon::QmonSpec),
}

/// The closed set of application models. One value exists per running
/// application (never per packet), so variant sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub enum App {
    Ping(ping::Ping),
    UdpSource(udp_source::UdpSource),
    Sink(sink::Sink),
    Bulk(bulk::Bulk),
    Iperf3Server(iperf3::Server),
    Iperf3Client(iperf3::Client),
    Qmon(qmon::Qmon),
}

/// Sockets bound on one node: (protocol, port) → application id, plus the
/// ephemeral port chooser (Linux's default range 32768–60999).
pub struct Sockets {
    bound: Vec<(Proto, u16, u32)>,
    rng: ComponentRng,
}

pub const EPHEMERAL_LOW: u16 = 32768;
pub const EPHEMERAL_HIGH: u16 = 60999;

impl Sockets {
    pub fn new(rng: ComponentRng) -> Self {
        Sockets {
            bound: Vec::new(),
            rng,
        }
    }

    #[inline]
    pub fn lookup(&self, proto: Proto, port: u16) -> Option<u32> {
        self.bound
            .iter()
            .find(|b| b.0 == proto && b.1 == port)
            .map(|b| b.2)
    }

    pub fn is_bound(&self, proto: Proto, port: u16) -> bool {
        self.lookup(proto, port).is_some()
    }

    pub fn bind(&mut self, proto: Proto, port: u16, app: u32) -> Result<()> {
        if self.is_bound(proto, port) {
            return Err(Error::App(format!(
                "{} port {port} is already in use",
                proto.name()
            )));
        }
        self.bound.push((proto, port, app));
        Ok(())
    }

    /// A free ephemeral port for `proto`, chosen at random like Linux does.
    pub fn bind_ephemeral(&mut self, proto: Proto, app: u32) -> u16 {
        loop {
            let p = self
                .rng
                .range_u64(EPHEMERAL_LOW as u64, EPHEMERAL_HIGH as u64) as u16;
            if !self.is_bound(proto, p) {
                self.bound.push((proto, p, app));
                return p;
            }
        }
    }

    /// Bind `preferred` if free, else the next free port above it.
    pub fn bind_near(&mut self, proto: Proto, preferred: u16, app: u32) -> u16 {
        let mut p = preferred;
        while self.is_bound(proto, p) {
            p = if p >= EPHEMERAL_HIGH {
                EPHEMERAL_LOW
            } else {
                p + 1
            };
        }
        self.bound.push((proto, p, app));
        p
    }

    pub fn unbind_all(&mut self, app: u32) {
        self.bound.retain(|b| b.2 != app);
    }
}

/// How a traffic source's run ended (bulk, cbr/poisson/onoff): when, and
/// whether by Ctrl-C. Finishing closes the application's sockets once.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lifetime {
    pub end: SimTime,
    pub finished: bool,
    pub interrupted: bool,
}

impl Lifetime {
    pub fn finish(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.finished = true;
            self.end = ctx.now;
            ctx.sockets.unbind_all(ctx.id);
        }
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.interrupted = true;
            self.finish(ctx);
        }
    }
}

/// Everything an application may touch while it runs.
pub struct AppCtx<'a> {
    pub now: SimTime,
    /// This application's id (also its flow id for accounting).
    pub id: u32,
    /// The node's primary address (source of every packet it sends).
    pub addr: Ipv4,
    /// `sk_gso_max_size` for the node's TCP sockets (0: GSO off).
    pub gso_max_size: u32,
    pub out: &'a mut Vec<Packet>,
    pub sockets: &'a mut Sockets,
    pub iperf: &'a mut IperfRegistry,
}

impl AppCtx<'_> {
    /// A packet from this application with the given protocol, frame length
    /// and payload; ports, TOS and sequence number start at zero.
    fn base(&self, dst: Ipv4, proto: Proto, len: u32, payload: Payload) -> Packet {
        Packet {
            src: self.addr,
            dst,
            proto,
            tos: 0,
            ttl: 64,
            len,
            src_port: 0,
            dst_port: 0,
            payload,
            seq: 0,
            sent_at: self.now,
            flow: self.id,
            corrupt: false,
            gso_segs: 1,
            gso_size: 0,
        }
    }

    /// Queue a UDP datagram with `payload_len` bytes of data.
    pub fn send_udp(
        &mut self,
        dst: Ipv4,
        sport: u16,
        dport: u16,
        payload_len: u32,
        tos: u8,
        seq: u64,
    ) {
        let len = ETH_HEADER + IPV4_HEADER + UDP_HEADER + payload_len;
        let p = self.base(dst, Proto::Udp, len, Payload::Data);
        self.out.push(Packet {
            src_port: sport,
            dst_port: dport,
            tos,
            seq,
            ..p
        });
    }

    /// Queue a message on a modelled TCP control connection, carrying
    /// `data_len` bytes of application data.
    pub fn send_control(
        &mut self,
        dst: Ipv4,
        sport: u16,
        dport: u16,
        msg: u8,
        conn: u32,
        data_len: u32,
    ) {
        let len = ETH_HEADER + IPV4_HEADER + TCP_HEADER_TS + data_len;
        let p = self.base(dst, Proto::Tcp, len, Payload::Control { msg, conn });
        self.out.push(Packet {
            src_port: sport,
            dst_port: dport,
            ..p
        });
    }

    /// Queue an ICMP echo request / reply of `data_len` data bytes.
    pub fn send_echo(&mut self, dst: Ipv4, ident: u16, seq: u16, data_len: u32, tos: u8) {
        let len = ETH_HEADER + IPV4_HEADER + crate::packet::ICMP_HEADER + data_len;
        let p = self.base(
            dst,
            Proto::Icmp,
            len,
            Payload::Echo {
                reply: false,
                ident,
                seq,
            },
        );
        self.out.push(Packet { tos, ..p });
    }
}

impl App {
    pub fn new(spec: AppSpec, rng: ComponentRng) -> Result<App> {
        Ok(match spec {
            AppSpec::Ping(s) => App::Ping(ping::Ping::new(s, rng)?),
            AppSpec::UdpSource(s) => App::UdpSource(udp_source::UdpSource::new(s, rng)?),
            AppSpec::Sink(s) => App::Sink(sink::Sink::new(s, rng)?),
            AppSpec::Bulk(s) => App::Bulk(bulk::Bulk::new(s, rng)?),
            AppSpec::Iperf3Server(s) => App::Iperf3Server(iperf3::Server::new(s, rng)?),
            AppSpec::Iperf3Client(s) => App::Iperf3Client(iperf3::Client::new(s, rng)?),
            AppSpec::Qmon(s) => App::Qmon(qmon::Qmon::new(s)?),
        })
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        match self {
            App::Ping(a) => a.start(ctx),
            App::UdpSource(a) => a.start(ctx),
            App::Sink(a) => a.start(ctx),
            App::Bulk(a) => a.start(ctx),
            App::Iperf3Server(a) => a.start(ctx),
            App::Iperf3Client(a) => a.start(ctx),
            App::Qmon(a) => a.start(ctx),
        }
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        match self {
            App::Ping(a) => a.handle_packet(ctx, p),
            App::UdpSource(_) | App::Qmon(_) => {}
            App::Sink(a) => a.handle_packet(ctx, p),
            App::Bulk(a) => a.handle_packet(ctx, p),
            App::Iperf3Server(a) => a.handle_packet(ctx, p),
            App::Iperf3Client(a) => a.handle_packet(ctx, p),
        }
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        match self {
            App::Ping(a) => a.poll_timeout(),
            App::UdpSource(a) => a.poll_timeout(),
            App::Sink(a) => a.poll_timeout(),
            App::Bulk(a) => a.poll_timeout(),
            App::Iperf3Server(a) => a.poll_timeout(),
            App::Iperf3Client(a) => a.poll_timeout(),
            App::Qmon(a) => a.poll_timeout(),
        }
    }

    /// `qdisc_backlog` is only read by the queue monitor: (bytes, packets)
    /// of the monitored interface's leaf qdisc at this instant.
    pub fn handle_timeout(
        &mut self,
        ctx: &mut AppCtx,
        qdisc_backlog: impl FnOnce(usize) -> (u64, u64),
    ) {
        match self {
            App::Ping(a) => a.handle_timeout(ctx),
            App::UdpSource(a) => a.handle_timeout(ctx),
            App::Sink(a) => a.handle_timeout(ctx),
            App::Bulk(a) => a.handle_timeout(ctx),
            App::Iperf3Server(a) => a.handle_timeout(ctx),
            App::Iperf3Client(a) => a.handle_timeout(ctx),
            App::Qmon(a) => {
                let b = qdisc_backlog(a.iface());
                a.handle_timeout(ctx, b)
            }
        }
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        match self {
            App::Ping(a) => a.interrupt(ctx),
            App::UdpSource(a) => a.interrupt(ctx),
            App::Sink(a) => a.interrupt(ctx),
            App::Bulk(a) => a.interrupt(ctx),
            App::Iperf3Server(a) => a.interrupt(ctx),
            App::Iperf3Client(a) => a.interrupt(ctx),
            App::Qmon(a) => a.interrupt(ctx),
        }
    }

    pub fn is_finished(&self) -> bool {
        match self {
            App::Ping(a) => a.is_finished(),
            App::UdpSource(a) => a.is_finished(),
            App::Sink(a) => a.is_finished(),
            App::Bulk(a) => a.is_finished(),
            App::Iperf3Server(a) => a.is_finished(),
            App::Iperf3Client(a) => a.is_finished(),
            App::Qmon(a) => a.is_finished(),
        }
    }

    pub fn result(&self, iperf: &IperfRegistry) -> serde_json::Value {
        match self {
            App::Ping(a) => a.result(),
            App::UdpSource(a) => a.result(),
            App::Sink(a) => a.result(),
            App::Bulk(a) => a.result(),
            App::Iperf3Server(a) => a.result(iperf),
            App::Iperf3Client(a) => a.result(iperf),
            App::Qmon(a) => a.result(),
        }
    }

    /// The address the application sends to, if any (checked for a route at start).
    pub fn destination(&self) -> Option<Ipv4> {
        match self {
            App::Ping(a) => Some(a.destination()),
            App::UdpSource(a) => Some(a.destination()),
            App::Iperf3Client(a) => Some(a.destination()),
            App::Bulk(a) => Some(a.destination()),
            App::Sink(_) | App::Iperf3Server(_) | App::Qmon(_) => None,
        }
    }

    /// The queue monitor names an interface that the engine must resolve.
    pub fn monitored_dev(&self) -> Option<&str> {
        match self {
            App::Qmon(a) => Some(a.dev()),
            _ => None,
        }
    }

    /// A listening TCP application (iperf3 server, TCP sink) takes the
    /// host's current sysctls for the connections it accepts from now on:
    /// Linux reads them when a connection is created, not when the
    /// listener was (tcp.md §4).
    pub fn set_listener_tcp(&mut self, spec: &tcp::TcpSpec) -> Result<()> {
        match self {
            App::Iperf3Server(a) => a.set_tcp(spec),
            App::Sink(a) => a.set_tcp(spec),
            _ => Err(Error::App(format!(
                "{} does not accept TCP connections",
                self.kind()
            ))),
        }
    }

    pub fn bind_monitored_iface(&mut self, iface: usize) {
        if let App::Qmon(a) = self {
            a.set_iface(iface);
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            App::Ping(_) => "ping",
            App::UdpSource(_) => "udp_source",
            App::Sink(_) => "sink",
            App::Bulk(_) => "bulk",
            App::Iperf3Server(_) => "iperf3_server",
            App::Iperf3Client(_) => "iperf3_client",
            App::Qmon(_) => "qmon",
        }
    }
}

/// Parse a dotted address from a spec, naming the field on failure.
pub(crate) fn parse_addr(field: &str, s: &str) -> Result<Ipv4> {
    Ipv4::parse(s).ok_or_else(|| Error::App(format!("{field}: {s:?} is not an IPv4 address")))
}
