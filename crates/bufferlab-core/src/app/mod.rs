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
pub mod conns;
pub mod flows;
pub mod iperf3;
pub mod ping;
pub mod qmon;
pub mod rr;
pub mod sink;
pub mod sockets;
pub mod tcp;
#[cfg(test)]
pub(crate) mod test_support;
pub mod udp_source;

use crate::error::{Error, Result};
use crate::host_noise::HostTiming;
use crate::packet::{
    Ipv4, Packet, Payload, Proto, TsqRelease, ETH_HEADER, IPV4_HEADER, TCP_HEADER_TS, UDP_HEADER,
};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::TcpConfig;
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use std::sync::Arc;

pub use iperf3::IperfRegistry;
pub use sockets::{SocketHandle, Sockets, EPHEMERAL_HIGH, EPHEMERAL_LOW};

/// An application model (docs/internals.md "How to add an application
/// model"): a sans-I/O state machine the engine drives. Implemented by each
/// model in its own file and listed once in `register_applications!` below,
/// which builds [`AppSpec`] and [`App`] from the list.
pub trait Application: Sized {
    /// The spec's `kind` (the snake_case name of its registered variant).
    const KIND: &'static str;
    /// The validated spec `start_app` receives.
    type Spec: Clone + std::fmt::Debug + serde::de::DeserializeOwned + schemars::JsonSchema;

    /// Validate the spec; `rng` is the application's own random stream.
    fn new(spec: Self::Spec, rng: ComponentRng) -> Result<Self>;
    /// Bind sockets, send the first packets.
    fn start(&mut self, ctx: &mut AppCtx) -> Result<()>;
    /// A packet arrived on a socket the application bound.
    fn handle_packet(&mut self, _ctx: &mut AppCtx, _p: &Packet) {}
    /// The next instant the application wants [`Application::handle_timeout`]
    /// (its node's `sockets` hold its connections' timers).
    fn poll_timeout(&self, sockets: &Sockets) -> Option<SimTime>;
    fn handle_timeout(&mut self, ctx: &mut AppCtx);
    /// TCP Small Queues: the host gave back (or charged) send memory of the
    /// application's sockets (packet.rs `TsqRelease`, docs/semantics/tcp.md
    /// §6.4). A TCP application passes them to its node's table
    /// ([`Sockets::tsq_release`]) and services the connections whose TSQ
    /// handler ran; the others have no sockets that charge anything.
    fn tsq_release(&mut self, _ctx: &mut AppCtx, _releases: &[TsqRelease]) {}
    /// Ctrl-C.
    fn interrupt(&mut self, ctx: &mut AppCtx);
    fn is_finished(&self) -> bool;
    /// The report (schemas in docs/internals.md).
    fn result(&self, r: &ResultCtx) -> serde_json::Value;

    /// The address the application sends to, if any (checked for a route at start).
    fn destination(&self) -> Option<Ipv4> {
        None
    }

    /// A listening TCP application (iperf3 server, TCP sink, flows server)
    /// takes the host's current sysctls for the connections it accepts from
    /// now on: Linux reads them when a connection is created, not when the
    /// listener was (docs/semantics/tcp.md §4).
    fn set_listener_tcp(&mut self, _spec: &tcp::TcpSpec) -> Result<()> {
        Err(Error::App(format!(
            "{} does not accept TCP connections",
            Self::KIND
        )))
    }

    /// The interface whose qdiscs the application samples (the queue
    /// monitor), which the engine resolves at start.
    fn monitored_dev(&self) -> Option<&str> {
        None
    }

    fn bind_monitored_iface(&mut self, _iface: usize) {}

    /// A TCP listener's settings for new connections (what `ss -il` shows).
    fn listener_tcp(&self) -> Option<sockets::diag::ListenerTcp> {
        None
    }
}

/// Builds, from one line per application model, [`AppSpec`] (the specs,
/// tagged by `kind`), [`App`] (the closed set of running applications:
/// static dispatch, rules of the house "Closed sets are enums"),
/// [`App::KINDS`] and the delegation of every [`Application`] method.
macro_rules! register_applications {
    ($($variant:ident($module:ident::$ty:ident)),+ $(,)?) => {
        /// Validated application specs as they arrive from Python (JSON, tagged by `kind`).
        #[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
        #[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
        pub enum AppSpec {
            $($variant(<$module::$ty as Application>::Spec),)+
        }

        /// The running applications. One value exists per running
        /// application (never per packet), so variant sizes do not matter.
        #[allow(clippy::large_enum_variant)]
        pub enum App {
            $($variant($module::$ty),)+
        }

        impl App {
            /// The registered kinds, in registration order.
            pub const KINDS: &'static [&'static str] = &[$(<$module::$ty as Application>::KIND,)+];

            pub fn new(spec: AppSpec, rng: ComponentRng) -> Result<App> {
                Ok(match spec {
                    $(AppSpec::$variant(s) => App::$variant(<$module::$ty as Application>::new(s, rng)?),)+
                })
            }

            pub fn kind(&self) -> &'static str {
                fn kind_of<T: Application>(_: &T) -> &'static str {
                    T::KIND
                }
                match self {
                    $(App::$variant(a) => kind_of(a),)+
                }
            }
        }

        /// Run an expression on whichever application an [`App`] holds.
        macro_rules! dispatch_app {
            ($app:expr, $a:ident => $e:expr) => {
                match $app {
                    $(App::$variant($a) => $e,)+
                }
            };
        }
    };
}

// One line per application: adding one is its file, its `mod` line at the
// top and its line here.
register_applications! {
    Ping(ping::Ping),
    UdpSource(udp_source::UdpSource),
    Sink(sink::Sink),
    Bulk(bulk::Bulk),
    Iperf3Server(iperf3::Server),
    Iperf3Client(iperf3::Client),
    Qmon(qmon::Qmon),
    FlowsClient(flows::FlowsClient),
    FlowsServer(flows::FlowsServer),
    RrClient(rr::RrClient),
    RrServer(rr::RrServer),
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

/// What an application's report may read besides its own state: what
/// iperf3's client and server exchanged, and its node's sockets (those of an
/// application that ended stay readable by handle).
pub struct ResultCtx<'a> {
    pub iperf: &'a IperfRegistry,
    pub sockets: &'a Sockets,
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
    /// An `fq` with pacing on is the root qdisc of the node's interface: its
    /// TCP sockets' `sk_pacing_status` becomes `SK_PACING_FQ` (sch_fq.c
    /// `fq_classify`), docs/semantics/qdiscs.md §15.
    pub fq_pacing: bool,
    /// The node's packets may wait in it after its TCP sockets send them (a
    /// qdisc other than `noqueue`, a finite-rate device, an egress hook): the
    /// sockets charge their skbs for TCP Small Queues (docs/semantics/tcp.md §6.4).
    pub tsq: bool,
    /// The phase of the TCP clock the node's sockets read, µs (tcp/clock.rs).
    pub tcp_clock_phase_us: u32,
    /// the node's processes' timing (host_noise.rs); punctual by default
    pub timing: &'a mut HostTiming,
    /// The kernel build's `MAX_TCP_HEADER` for the node's TCP sockets, bytes
    /// (`[sim] max_tcp_header`, tcp/config.rs).
    pub max_tcp_header: u32,
    pub out: &'a mut Vec<Packet>,
    pub sockets: &'a mut Sockets,
    pub iperf: &'a mut IperfRegistry,
    /// what request/response clients ask of their servers (app/rr)
    pub rr: &'a mut rr::RrBoard,
    /// the interfaces' qdiscs, as the queue monitor reads them
    pub qdiscs: &'a dyn QdiscBacklog,
}

/// What the queue monitor reads of an interface: (bytes, packets) of its
/// leaf qdisc (the last block `tc -s qdisc show` prints) at this instant.
pub trait QdiscBacklog {
    fn leaf_backlog(&self, iface: usize) -> (u64, u64);
}

impl AppCtx<'_> {
    /// When a process of this node, woken now by a readable socket, runs:
    /// after a scheduling latency drawn from the host's wake-up
    /// distribution, or at once on a punctual host (`None`).
    pub fn wake_delay(&mut self) -> Option<SimDuration> {
        self.timing.reader_wakeup.as_mut().map(|w| w.draw())
    }

    /// How long a server program's set-up work before a test takes on this
    /// node (zero on a punctual host).
    pub fn setup_delay(&mut self) -> SimDuration {
        self.timing
            .app_setup
            .as_mut()
            .map_or(SimDuration::ZERO, |s| s.draw())
    }

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
            local: false,
            gso_segs: 1,
            gso_size: 0,
            tsq: 0,
            tstamp: None,
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

impl AppCtx<'_> {
    /// A server's port: bound to this application (an error naming it when
    /// another holds it) and shown to `ss` as `kind`, an AF_INET socket on
    /// the wildcard address (a listener, an unconnected UDP socket).
    pub fn bind_server(&mut self, proto: Proto, port: u16, kind: sockets::PortKind) -> Result<()> {
        self.sockets.bind(proto, port, self.id).map_err(|_| {
            let name = proto.name().to_uppercase();
            Error::App(format!("{name} port {port} is already in use on this host"))
        })?;
        self.sockets.add_view(sockets::PortView {
            port,
            owner: self.id,
            kind,
            v6: false,
        });
        Ok(())
    }
}

/// TCP through the node's socket table (app/sockets): connections are
/// created, found and flushed here, and the application keeps their handles.
impl AppCtx<'_> {
    /// What sending a connection's segments needs of the node.
    pub fn env(&self) -> tcp::SendEnv {
        tcp::SendEnv {
            now: self.now,
            addr: self.addr,
            id: self.id,
            fq_pacing: self.fq_pacing,
            tsq: self.tsq,
        }
    }

    /// Active open from `local_port` (already bound by the application).
    pub fn connect(
        &mut self,
        cfg: impl Into<Arc<TcpConfig>>,
        local_port: u16,
        remote: (Ipv4, u16),
        rng: ComponentRng,
    ) -> SocketHandle {
        let c = tcp::Conn::connect(cfg, self, local_port, remote, rng);
        self.sockets.add_tcp(c, self.id, false)
    }

    /// Passive open from a SYN that arrived on the application's port; `v6`
    /// for a dual-stack listener (its connections show v4-mapped addresses).
    pub fn accept(
        &mut self,
        cfg: impl Into<Arc<TcpConfig>>,
        p: &Packet,
        rng: ComponentRng,
        v6: bool,
    ) -> Option<SocketHandle> {
        let c = tcp::Conn::accept(cfg, self, p, rng)?;
        Some(self.sockets.add_tcp(c, self.id, v6))
    }

    /// The connection, to read.
    pub fn tcp(&self, h: SocketHandle) -> &tcp::Conn {
        self.sockets.tcp(h)
    }

    /// The connection, to work on.
    pub fn tcp_mut(&mut self, h: SocketHandle) -> &mut tcp::Conn {
        self.sockets.tcp_mut(h)
    }

    /// TCP Small Queues: the host gave back send memory of this
    /// application's connections ([`Sockets::tsq_release`]); the connections
    /// whose TSQ handler ran, to be serviced.
    pub fn tsq_release(&mut self, releases: &[TsqRelease]) -> Vec<SocketHandle> {
        self.sockets.tsq_release(self.now, self.id, releases)
    }

    /// Hand every segment the connection wants to send now to the outbox.
    pub fn flush(&mut self, h: SocketHandle, tos: u8) {
        let env = self.env();
        self.sockets.tcp_mut(h).flush(&env, self.out, tos);
    }
}

impl App {
    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        dispatch_app!(self, a => a.start(ctx))
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        dispatch_app!(self, a => a.handle_packet(ctx, p))
    }

    pub fn poll_timeout(&self, sockets: &Sockets) -> Option<SimTime> {
        dispatch_app!(self, a => a.poll_timeout(sockets))
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        dispatch_app!(self, a => a.handle_timeout(ctx))
    }

    /// [`Application::tsq_release`].
    pub fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        dispatch_app!(self, a => a.tsq_release(ctx, releases))
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        dispatch_app!(self, a => a.interrupt(ctx))
    }

    pub fn is_finished(&self) -> bool {
        dispatch_app!(self, a => a.is_finished())
    }

    pub fn result(&self, r: &ResultCtx) -> serde_json::Value {
        dispatch_app!(self, a => a.result(r))
    }

    /// [`Application::destination`].
    pub fn destination(&self) -> Option<Ipv4> {
        dispatch_app!(self, a => a.destination())
    }

    /// [`Application::monitored_dev`].
    pub fn monitored_dev(&self) -> Option<&str> {
        dispatch_app!(self, a => a.monitored_dev())
    }

    /// [`Application::set_listener_tcp`].
    pub fn set_listener_tcp(&mut self, spec: &tcp::TcpSpec) -> Result<()> {
        dispatch_app!(self, a => a.set_listener_tcp(spec))
    }

    pub fn bind_monitored_iface(&mut self, iface: usize) {
        dispatch_app!(self, a => a.bind_monitored_iface(iface))
    }

    /// [`Application::listener_tcp`].
    pub fn listener_tcp(&self) -> Option<sockets::diag::ListenerTcp> {
        dispatch_app!(self, a => a.listener_tcp())
    }
}

/// Parse a dotted address from a spec, naming the field on failure.
pub(crate) fn parse_addr(field: &str, s: &str) -> Result<Ipv4> {
    Ipv4::parse(s).ok_or_else(|| Error::App(format!("{field}: {s:?} is not an IPv4 address")))
}

#[cfg(test)]
mod tests {
    use super::test_support::{Bench, MS};
    use super::*;
    use serde_json::json;

    #[test]
    fn a_lifetime_finishes_once_at_the_first_instant() {
        let mut bench = Bench::new(1);
        bench.hosts[0].sockets.bind(Proto::Udp, 9, 0).unwrap();
        let mut life = Lifetime::default();
        life.finish(&mut bench.ctx(0, SimTime(5 * MS)));
        life.interrupt(&mut bench.ctx(0, SimTime(9 * MS)));
        assert!(
            life.finished && !life.interrupted,
            "Ctrl-C after the end changes nothing"
        );
        assert_eq!(life.end, SimTime(5 * MS));
        assert!(!bench.hosts[0].sockets.is_bound(Proto::Udp, 9));
        let mut cut = Lifetime::default();
        cut.interrupt(&mut bench.ctx(0, SimTime(7 * MS)));
        assert!(cut.finished && cut.interrupted);
        assert_eq!(cut.end, SimTime(7 * MS));
    }

    #[test]
    fn send_helpers_build_frames_with_the_right_lengths_and_stamps() {
        let mut bench = Bench::new(2);
        let dst = bench.addr(1);
        let mut ctx = bench.ctx(0, SimTime(3 * MS));
        ctx.send_udp(dst, 1000, 2000, 1470, 0x20, 7);
        ctx.send_control(dst, 1001, 5201, 4, 9, 1);
        ctx.send_echo(dst, 77, 5, 56, 0x10);
        let sent = bench.sent(0);
        let lens: Vec<u32> = sent.iter().map(|p| p.len).collect();
        assert_eq!(
            lens,
            vec![14 + 20 + 8 + 1470, 14 + 20 + 32 + 1, 14 + 20 + 8 + 56]
        );
        let udp = sent[0];
        assert_eq!(
            (
                udp.src,
                udp.src_port,
                udp.dst_port,
                udp.tos,
                udp.seq,
                udp.ttl,
                udp.flow
            ),
            (bench.addr(0), 1000, 2000, 0x20, 7, 64, 0)
        );
        assert!(sent
            .iter()
            .all(|p| p.sent_at == SimTime(3 * MS) && p.gso_segs == 1));
        assert_eq!(sent[1].payload, Payload::Control { msg: 4, conn: 9 });
        assert_eq!(
            sent[2].payload,
            Payload::Echo {
                reply: false,
                ident: 77,
                seq: 5
            }
        );
        assert_eq!(sent[2].tos, 0x10);
    }

    fn app(spec: serde_json::Value) -> App {
        App::new(
            serde_json::from_value(spec).unwrap(),
            ComponentRng::new(0, "a"),
        )
        .unwrap()
    }

    #[test]
    fn specs_become_the_named_application_with_its_destination() {
        let cases = [
            (
                json!({"kind": "ping", "dst": "10.0.0.9", "interval_ns": 1, "size": 56}),
                "ping",
                Some("10.0.0.9"),
            ),
            (
                json!({"kind": "sink", "port": 9, "proto": "udp"}),
                "sink",
                None,
            ),
            (
                json!({"kind": "bulk", "dst": "10.0.0.8", "port": 9, "bytes": 10}),
                "bulk",
                Some("10.0.0.8"),
            ),
            (
                json!({"kind": "iperf3_server", "port": 5201, "interval_ns": 1}),
                "iperf3_server",
                None,
            ),
        ];
        for (spec, kind, dst) in cases {
            let a = app(spec);
            assert_eq!(a.kind(), kind);
            assert_eq!(
                a.destination().map(|d| d.to_string()),
                dst.map(String::from)
            );
        }
        let unknown = serde_json::from_value::<AppSpec>(
            json!({"kind": "ping", "dst": "x", "interval_ns": 1, "size": 56, "extra": 1}),
        );
        assert!(unknown.is_err(), "unknown fields are refused");
    }

    #[test]
    fn only_tcp_listeners_take_listener_settings() {
        let mut ping =
            app(json!({"kind": "ping", "dst": "10.0.0.9", "interval_ns": 1, "size": 56}));
        let err = ping.set_listener_tcp(&tcp::TcpSpec::default()).unwrap_err();
        assert!(err
            .to_string()
            .contains("ping does not accept TCP connections"));
        let mut server = app(json!({"kind": "iperf3_server", "port": 5201, "interval_ns": 1}));
        server.set_listener_tcp(&tcp::TcpSpec::default()).unwrap();
    }
}
