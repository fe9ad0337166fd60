//! Test bench for the application models, without the engine.
//!
//! [`Bench`] stands in for what the engine lends an application through
//! [`AppCtx`]: hosts, each with an address, its sockets and an outbox, and
//! the shared iperf3 registry. A test either drives one model by hand
//! (`bench.ctx(host, now)`, then [`Bench::sent`] to read what it queued and
//! scripted [`Packet`]s from the builders below as input), or lets [`Wire`]
//! carry packets between the hosts' models in simulated time, with a fixed
//! one-way delay, an optional per-host bottleneck rate and scripted losses.

use super::tcp::Conn;
use super::{App, AppCtx, IperfRegistry, QdiscBacklog, ResultCtx, SocketHandle, Sockets};
use crate::host_noise::HostTiming;
use crate::packet::{Ipv4, Packet, Payload, Proto, ETH_HEADER, IPV4_HEADER, UDP_HEADER};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime, NS_PER_SEC};
use std::cell::Cell;

pub const MS: u64 = 1_000_000;
pub const US: u64 = 1_000;

pub fn at_ms(ms: u64) -> SimTime {
    SimTime(ms * MS)
}

/// One host: its address, the id of the application running on it (also
/// the flow id its packets carry), its sockets and its outbox.
pub struct Host {
    pub addr: Ipv4,
    pub app_id: u32,
    pub sockets: Sockets,
    pub out: Vec<Packet>,
    /// its processes' timing (punctual unless a test sets it)
    pub timing: HostTiming,
}

/// Hosts `10.0.0.1`, `10.0.0.2`, … (host `i` runs application `i`), the
/// iperf3 registry they share and a scripted qdisc backlog.
pub struct Bench {
    pub hosts: Vec<Host>,
    pub iperf: IperfRegistry,
    pub qdiscs: ScriptedBacklog,
    pub rr: super::rr::RrBoard,
}

/// The backlog a queue monitor reads: `backlog` whatever the interface;
/// `asked` remembers which interface it asked for last.
#[derive(Default)]
pub struct ScriptedBacklog {
    pub backlog: Cell<(u64, u64)>,
    pub asked: Cell<Option<usize>>,
}

impl QdiscBacklog for ScriptedBacklog {
    fn leaf_backlog(&self, iface: usize) -> (u64, u64) {
        self.asked.set(Some(iface));
        self.backlog.get()
    }
}

impl Bench {
    pub fn new(hosts: usize) -> Bench {
        Bench {
            hosts: (0..hosts)
                .map(|i| Host {
                    addr: Ipv4(0x0a00_0001 + i as u32),
                    app_id: i as u32,
                    sockets: Sockets::new(ComponentRng::new(i as u64, "bench/sockets")),
                    out: Vec::new(),
                    timing: HostTiming::default(),
                })
                .collect(),
            iperf: IperfRegistry::default(),
            qdiscs: ScriptedBacklog::default(),
            rr: super::rr::RrBoard::default(),
        }
    }

    pub fn addr(&self, host: usize) -> Ipv4 {
        self.hosts[host].addr
    }

    /// The context the engine would lend host `host`'s application at `now`.
    pub fn ctx(&mut self, host: usize, now: SimTime) -> AppCtx<'_> {
        let h = &mut self.hosts[host];
        AppCtx {
            now,
            id: h.app_id,
            addr: h.addr,
            gso_max_size: 0,
            fq_pacing: false,
            tsq: false,
            tcp_clock_phase_us: 0,
            timing: &mut h.timing,
            max_tcp_header: crate::tcp::config::DEFAULT_MAX_TCP_HEADER,
            out: &mut h.out,
            sockets: &mut h.sockets,
            iperf: &mut self.iperf,
            qdiscs: &self.qdiscs,
            rr: &mut self.rr,
        }
    }

    /// Take what host `host`'s application queued since the last call.
    pub fn sent(&mut self, host: usize) -> Vec<Packet> {
        std::mem::take(&mut self.hosts[host].out)
    }
}

// ---------------------------------------------------------------- scripted packets

/// A packet from `src` to `dst` as the stack would hand it to an
/// application; the builders below fill in the protocol-specific parts.
fn template(src: Ipv4, dst: Ipv4, proto: Proto, len: u32, payload: Payload) -> Packet {
    Packet {
        src,
        dst,
        proto,
        tos: 0,
        ttl: 64,
        len,
        src_port: 0,
        dst_port: 0,
        payload,
        seq: 0,
        sent_at: SimTime::ZERO,
        flow: 0,
        corrupt: false,
        local: false,
        gso_segs: 1,
        gso_size: 0,
        tsq: 0,
        tstamp: None,
    }
}

/// A UDP datagram carrying iperf3's header fields: sequence number `seq`
/// and the send timestamp `sent_at`.
pub fn udp_datagram(
    src: (Ipv4, u16),
    dst: (Ipv4, u16),
    payload_len: u32,
    seq: u64,
    sent_at: SimTime,
) -> Packet {
    let len = ETH_HEADER + IPV4_HEADER + UDP_HEADER + payload_len;
    Packet {
        src_port: src.1,
        dst_port: dst.1,
        seq,
        sent_at,
        ..template(src.0, dst.0, Proto::Udp, len, Payload::Data)
    }
}

/// The echo reply the destination of `request` returns, with the TTL it
/// arrives with (send timestamp and length kept, as the echo data is).
pub fn echo_reply(request: &Packet, ttl: u8) -> Packet {
    let Payload::Echo {
        reply: false,
        ident,
        seq,
    } = request.payload
    else {
        panic!("not an echo request: {request:?}");
    };
    Packet {
        src: request.dst,
        dst: request.src,
        ttl,
        payload: Payload::Echo {
            reply: true,
            ident,
            seq,
        },
        ..*request
    }
}

/// A control message (iperf3's port-5201 connection) from `src` to `dst`.
pub fn control(src: (Ipv4, u16), dst: (Ipv4, u16), msg: u8, conn: u32) -> Packet {
    Packet {
        src_port: src.1,
        dst_port: dst.1,
        ..template(
            src.0,
            dst.0,
            Proto::Tcp,
            ETH_HEADER + IPV4_HEADER + crate::packet::TCP_HEADER_TS + 1,
            Payload::Control { msg, conn },
        )
    }
}

// ---------------------------------------------------------------- wire

/// Hosts on a shared wire, one application each: every packet arrives `delay` after
/// it leaves its sender's bottleneck (serialised at `rate_bps` per sending
/// host when set), unless `lose` says it is lost. The stack's part is
/// modelled as the engine does it: echo requests are answered, packets go
/// to the application bound to their (protocol, port), and a TCP control
/// message to a closed port is answered with a reset.
pub struct Wire {
    pub bench: Bench,
    pub apps: Vec<App>,
    pub now: SimTime,
    delay: SimDuration,
    rate_bps: Option<u64>,
    /// per sending host: the instant its bottleneck is free again
    busy_until: Vec<SimTime>,
    /// packets in flight: (arrival, order of sending, destination host, packet)
    in_flight: Vec<(SimTime, u64, usize, Packet)>,
    sent_count: u64,
    /// every packet put on the wire: (departure, sending host, packet)
    pub log: Vec<(SimTime, usize, Packet)>,
    lose: Box<dyn FnMut(&Packet) -> bool>,
}

impl Wire {
    /// Application `i` runs on host `i`.
    pub fn new(apps: Vec<App>, delay: SimDuration) -> Wire {
        let n = apps.len();
        Wire {
            bench: Bench::new(n),
            apps,
            now: SimTime::ZERO,
            delay,
            rate_bps: None,
            busy_until: vec![SimTime::ZERO; n],
            in_flight: Vec::new(),
            sent_count: 0,
            log: Vec::new(),
            lose: Box::new(|_| false),
        }
    }

    /// Serialise each host's packets at `rate_bps` (frame bits).
    pub fn with_rate(mut self, rate_bps: u64) -> Wire {
        self.rate_bps = Some(rate_bps);
        self
    }

    /// Lose the packets for which `lose` returns true.
    pub fn with_loss(mut self, lose: impl FnMut(&Packet) -> bool + 'static) -> Wire {
        self.lose = Box::new(lose);
        self
    }

    /// Start application `i` at the current instant.
    pub fn start(&mut self, i: usize) {
        let mut ctx = self.bench.ctx(i, self.now);
        self.apps[i].start(&mut ctx).expect("start");
        self.transmit(i);
    }

    /// Deliver Ctrl-C to application `i` at the current instant.
    pub fn interrupt(&mut self, i: usize) {
        let mut ctx = self.bench.ctx(i, self.now);
        self.apps[i].interrupt(&mut ctx);
        self.transmit(i);
    }

    fn host_of(&self, addr: Ipv4) -> Option<usize> {
        self.bench.hosts.iter().position(|h| h.addr == addr)
    }

    /// Put what host `i` queued on the wire.
    fn transmit(&mut self, i: usize) {
        for p in self.bench.sent(i) {
            self.send_from(i, p);
        }
    }

    fn send_from(&mut self, i: usize, p: Packet) {
        let mut leaves = self.now;
        if let Some(rate) = self.rate_bps {
            let start = self.busy_until[i].max(self.now);
            let tx = (p.len as u128 * 8 * NS_PER_SEC as u128).div_ceil(rate as u128) as u64;
            leaves = start + SimDuration(tx);
            self.busy_until[i] = leaves;
        }
        self.log.push((leaves, i, p));
        if (self.lose)(&p) {
            return;
        }
        if let Some(to) = self.host_of(p.dst) {
            self.sent_count += 1;
            self.in_flight
                .push((leaves + self.delay, self.sent_count, to, p));
        }
    }

    fn deliver(&mut self, to: usize, p: Packet) {
        let sockets = &self.bench.hosts[to].sockets;
        let bound = match p.payload {
            Payload::Echo { reply: false, .. } => {
                self.send_from(to, echo_reply(&p, 64));
                return;
            }
            Payload::Echo {
                reply: true, ident, ..
            } => sockets.lookup(Proto::Icmp, ident),
            _ => sockets.lookup(p.proto, p.dst_port),
        };
        match bound {
            Some(app) => {
                let app = app as usize;
                let mut ctx = self.bench.ctx(app, self.now);
                self.apps[app].handle_packet(&mut ctx, &p);
                self.transmit(app);
            }
            None => {
                if let Payload::Control { conn, .. } = p.payload {
                    let reset = Packet {
                        src: p.dst,
                        dst: p.src,
                        src_port: p.dst_port,
                        dst_port: p.src_port,
                        payload: Payload::Reset { conn },
                        ..p
                    };
                    self.send_from(to, reset);
                }
            }
        }
    }

    /// The next instant something happens: an arrival or an application timer.
    fn next_event(&self) -> Option<SimTime> {
        let arrival = self.in_flight.iter().map(|f| f.0).min();
        let timers = (0..self.apps.len())
            .filter_map(|i| self.apps[i].poll_timeout(&self.bench.hosts[i].sockets))
            .min();
        [arrival, timers].into_iter().flatten().min()
    }

    /// Run until nothing is left to do or `until` is reached; arrivals at an
    /// instant go first (in sending order), then the applications' timers.
    pub fn run_until(&mut self, until: SimTime) {
        while let Some(t) = self.next_event().filter(|&t| t <= until) {
            self.now = self.now.max(t);
            self.in_flight.sort_by_key(|f| (f.0, f.1));
            while self.in_flight.first().is_some_and(|f| f.0 <= self.now) {
                let (_, _, to, p) = self.in_flight.remove(0);
                self.deliver(to, p);
            }
            for i in 0..self.apps.len() {
                let due = self.apps[i].poll_timeout(&self.bench.hosts[i].sockets);
                if due.is_some_and(|x| x <= self.now) {
                    let mut ctx = self.bench.ctx(i, self.now);
                    self.apps[i].handle_timeout(&mut ctx);
                    self.transmit(i);
                }
            }
        }
        self.now = self.now.max(until);
    }

    pub fn result(&self, i: usize) -> serde_json::Value {
        self.apps[i].result(&self.bench.results(i))
    }
}

/// An empty socket table, for models that hold no connections (lives for
/// the test process).
pub fn no_sockets() -> &'static Sockets {
    Box::leak(Box::new(Sockets::new(ComponentRng::new(0, "no sockets"))))
}

/// What a report of a model without connections may read (no iperf3 tests,
/// no sockets).
pub fn no_results() -> ResultCtx<'static> {
    ResultCtx {
        iperf: Box::leak(Box::new(IperfRegistry::default())),
        sockets: no_sockets(),
    }
}

// ---------------------------------------------------------------- TCP

impl Bench {
    /// Host `host`'s connection `h`, to read.
    pub fn conn(&self, host: usize, h: SocketHandle) -> &Conn {
        self.hosts[host].sockets.tcp(h)
    }

    /// Host `host`'s connection `h`, to work on.
    pub fn conn_mut(&mut self, host: usize, h: SocketHandle) -> &mut Conn {
        self.hosts[host].sockets.tcp_mut(h)
    }

    /// What a report may read of host `host`.
    pub fn results(&self, host: usize) -> ResultCtx<'_> {
        ResultCtx {
            iperf: &self.iperf,
            sockets: &self.hosts[host].sockets,
        }
    }
}

/// A connection from host 0 (port 40000) to host 1 (port 5001) taken through
/// the three-way handshake at instant 0 on the bench, each end in its host's
/// socket table: (active, passive).
pub fn established(bench: &mut Bench, cfg: &TcpConfig) -> (SocketHandle, SocketHandle) {
    let now = SimTime::ZERO;
    let server = (bench.addr(1), 5001);
    let mut ctx = bench.ctx(0, now);
    let client = ctx.connect(
        cfg.clone(),
        40_000,
        server,
        ComponentRng::new(1, "client conn"),
    );
    ctx.flush(client, 0);
    let syn = bench.sent(0).remove(0);
    let mut ctx = bench.ctx(1, now);
    let accepted = ctx
        .accept(
            cfg.clone(),
            &syn,
            ComponentRng::new(2, "server conn"),
            false,
        )
        .expect("a SYN");
    ctx.flush(accepted, 0);
    exchange(bench, client, accepted, now);
    assert_eq!(bench.conn(0, client).ep.state(), TcpState::Established);
    assert_eq!(bench.conn(1, accepted).ep.state(), TcpState::Established);
    (client, accepted)
}

/// Deliver at `now` what each side queued to the other (host 0's `client`,
/// host 1's `server`) until both are quiet.
pub fn exchange(bench: &mut Bench, client: SocketHandle, server: SocketHandle, now: SimTime) {
    loop {
        let to_client = bench.sent(1);
        let to_server = bench.sent(0);
        if to_client.is_empty() && to_server.is_empty() {
            return;
        }
        for p in &to_client {
            bench.conn_mut(0, client).input(now, p);
        }
        bench.ctx(0, now).flush(client, 0);
        for p in &to_server {
            bench.conn_mut(1, server).input(now, p);
        }
        bench.ctx(1, now).flush(server, 0);
    }
}
