//! `rr_server`: the answering side (module docs in rr/mod.rs): a netserver,
//! an irtt server, a web server.

use super::{Exchange, RrProto, RrServerSpec, UNBOUNDED};
use crate::app::conns::{sock_field, ConnTable};
use crate::app::sockets::diag::ListenerTcp;
use crate::app::sockets::{PortKind, SocketHandle, LISTEN_MAX};
use crate::app::tcp::{for_host, is_syn, TcpSpec};
use crate::app::{AppCtx, Application, ResultCtx, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::SimTime;
use rustc_hash::FxHashMap;
use serde_json::json;
use std::sync::Arc;

/// Where a served connection is in its exchanges.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// no exchange posted yet (the request's bytes wait in `buffered`)
    Idle,
    Reading(Exchange),
    Writing(Exchange),
}

/// A connection the server accepted, and where it is in its exchanges.
struct Served {
    sock: SocketHandle,
    /// the client's address and port
    client: (Ipv4, u16),
    start: SimTime,
    phase: Phase,
    /// request bytes read but not yet taken by an exchange
    buffered: u64,
    resp_left: u64,
    until: Option<SimTime>,
    closing: bool,
    read: u64,
    written: u64,
    requests: u64,
    /// the TOS byte of what it sends (from the exchanges)
    tos: u8,
}

sock_field!(Served);

/// What is kept of a finished connection.
#[derive(Clone, Debug)]
struct ServedRecord {
    client: (Ipv4, u16),
    start: SimTime,
    end: SimTime,
    read: u64,
    written: u64,
    requests: u64,
    retransmits: u32,
    mss: u32,
}

pub struct RrServer {
    port: u16,
    proto: RrProto,
    backlog: u32,
    cfg: Arc<TcpConfig>,
    rng: ComponentRng,
    conns: ConnTable<Served>,
    records: Vec<ServedRecord>,
    /// web server log: (client, port, request instant, response bytes)
    log: Vec<(Ipv4, u16, SimTime, u64)>,
    /// UDP: datagrams received per client
    received: FxHashMap<(Ipv4, u16), u64>,
    datagrams: u64,
    start: SimTime,
    end: SimTime,
    finished: bool,
    interrupted: bool,
}

impl RrServer {
    fn udp_request(&mut self, ctx: &mut AppCtx, p: &Packet) {
        if p.proto != Proto::Udp {
            return;
        }
        self.datagrams += 1;
        let count = self.received.entry((p.src, p.src_port)).or_insert(0);
        *count += 1;
        let asked = p.seq >> 32;
        let len = if asked == 0 {
            p.payload_len()
        } else {
            asked as u32
        };
        let seq = (*count << 32) | (p.seq & 0xFFFF_FFFF);
        ctx.send_udp(p.src, self.port, p.src_port, len, p.tos & !0b11, seq);
    }

    fn service(&mut self, ctx: &mut AppCtx, slot: u32) {
        let now = ctx.now;
        let s = self.conns.get_mut(slot);
        let (h, client) = (s.sock, s.client);
        // the table's fields apart, so that the board stays at hand
        let conn = ctx.sockets.tcp_mut(h);
        let n = conn.ep.read(now, u64::MAX);
        s.read += n;
        s.buffered = s.buffered.saturating_add(n);
        while !s.closing {
            match s.phase {
                Phase::Idle => match ctx.rr.take(client, self.port) {
                    Some(ex) => {
                        s.tos = ex.tos;
                        s.phase = Phase::Reading(ex);
                    }
                    None => break,
                },
                Phase::Reading(ref ex) if ex.request == UNBOUNDED => {
                    s.buffered = 0; // a stream: read and forget
                    break;
                }
                Phase::Reading(ref ex) => {
                    let ex = ex.clone();
                    if s.buffered < ex.request {
                        break; // the request is still arriving
                    }
                    s.buffered -= ex.request;
                    s.requests += 1;
                    s.resp_left = ex.response;
                    s.until = ex.response_for.map(|d| now + d);
                    if ex.log {
                        self.log.push((client.0, client.1, now, ex.response));
                    }
                    s.phase = Phase::Writing(ex);
                }
                Phase::Writing(ref ex) => {
                    let close_after = ex.close_after;
                    if s.resp_left > 0 {
                        if s.until.is_some_and(|t| now >= t) {
                            s.resp_left = 0; // the test's time is over
                        } else {
                            if !matches!(
                                conn.ep.state(),
                                TcpState::Established | TcpState::CloseWait
                            ) {
                                break;
                            }
                            let w = conn.ep.write(now, s.resp_left);
                            s.written += w;
                            if s.resp_left != UNBOUNDED {
                                s.resp_left -= w;
                            }
                            if s.resp_left > 0 {
                                break; // the send buffer is full: go on when ACKs make room
                            }
                        }
                    }
                    s.phase = Phase::Idle;
                    if close_after {
                        conn.ep.close(now);
                        s.closing = true;
                    }
                }
            }
        }
        if conn.ep.eof() && !s.closing && !matches!(s.phase, Phase::Writing(_)) {
            conn.ep.close(now);
            s.closing = true;
        }
        ctx.flush(h, s.tos);
        if matches!(ctx.tcp(h).ep.state(), TcpState::Closed | TcpState::TimeWait) {
            let info = ctx.tcp(h).ep.info();
            let s = self.conns.remove(slot, ctx.sockets);
            ctx.rr.forget(client, self.port);
            self.records.push(ServedRecord {
                client,
                start: s.start,
                end: now,
                read: s.read,
                written: s.written,
                requests: s.requests,
                retransmits: info.total_retrans,
                mss: info.snd_mss,
            });
        } else {
            self.conns.rearm(slot, ctx.sockets);
        }
    }
}

impl Application for RrServer {
    const KIND: &'static str = "rr_server";
    type Spec = RrServerSpec;

    fn new(spec: RrServerSpec, mut rng: ComponentRng) -> Result<RrServer> {
        Ok(RrServer {
            port: spec.port,
            backlog: spec.backlog.unwrap_or(LISTEN_MAX),
            proto: spec.proto,
            cfg: Arc::new(spec.tcp.config(rng.next_u64(), 0)?),
            rng,
            conns: ConnTable::default(),
            records: Vec::new(),
            log: Vec::new(),
            received: FxHashMap::default(),
            datagrams: 0,
            start: SimTime::ZERO,
            end: SimTime::ZERO,
            finished: false,
            interrupted: false,
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        let kind = match self.proto {
            RrProto::Tcp => PortKind::Listen {
                backlog: self.backlog,
            },
            RrProto::Udp => PortKind::Udp { peer: None },
        };
        ctx.bind_server(self.proto.ip(), self.port, kind)
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        if self.finished {
            return;
        }
        if self.proto == RrProto::Udp {
            return self.udp_request(ctx, p);
        }
        let slot = match self.conns.find(p, ctx.sockets) {
            Some(slot) => {
                let h = self.conns.get(slot).sock;
                let now = ctx.now;
                ctx.tcp_mut(h).input(now, p);
                slot
            }
            None if is_syn(p) => {
                let rng = ComponentRng::new(self.rng.next_u64(), "rr-server/conn");
                for_host(&mut self.cfg, ctx);
                // the client's first exchange says what the accepted socket is set to
                let first = ctx.rr.peek((p.src, p.src_port), self.port);
                let tos = first.map_or(0, |ex| ex.tos);
                let cfg = match first.and_then(|ex| ex.congestion.clone()) {
                    Some(cc) if *cc != *self.cfg.congestion => Arc::new(TcpConfig {
                        congestion: cc.to_string(),
                        tos,
                        ..(*self.cfg).clone()
                    }),
                    _ if tos != self.cfg.tos => Arc::new(TcpConfig {
                        tos,
                        ..(*self.cfg).clone()
                    }),
                    _ => Arc::clone(&self.cfg),
                };
                let Some(sock) = ctx.accept(cfg, p, rng, false) else {
                    return;
                };
                let served = Served {
                    sock,
                    client: (p.src, p.src_port),
                    start: ctx.now,
                    phase: Phase::Idle,
                    buffered: 0,
                    resp_left: 0,
                    until: None,
                    closing: false,
                    read: 0,
                    written: 0,
                    requests: 0,
                    tos,
                };
                self.conns.insert(served, ctx.sockets)
            }
            None => return,
        };
        self.service(ctx, slot);
    }

    fn poll_timeout(&self, _sockets: &Sockets) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        let until = self
            .conns
            .iter()
            .filter(|s| !s.closing && matches!(s.phase, Phase::Writing(_)))
            .filter_map(|s| s.until)
            .min();
        [self.conns.next_timeout(), until]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        let mut due = self.conns.run_timers(ctx.now, ctx.sockets);
        let stopping: Vec<u32> = self
            .conns
            .slots()
            .filter(|&k| {
                let s = self.conns.get(k);
                !s.closing
                    && matches!(s.phase, Phase::Writing(_))
                    && s.until.is_some_and(|t| ctx.now >= t)
            })
            .collect();
        due.extend(stopping);
        due.sort_unstable();
        due.dedup();
        for slot in due {
            self.service(ctx, slot);
        }
    }

    /// TCP Small Queues (`Sockets::tsq_release`).
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for slot in self.conns.tsq_release(ctx, releases) {
            self.service(ctx, slot);
        }
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.finished = true;
            self.interrupted = true;
            self.end = ctx.now;
            ctx.sockets.unbind_all(ctx.id);
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn result(&self, r: &ResultCtx) -> serde_json::Value {
        let mut recs = self.records.clone();
        for s in self.conns.iter() {
            let info = r.sockets.tcp(s.sock).ep.info();
            recs.push(ServedRecord {
                client: s.client,
                start: s.start,
                end: self.end,
                read: s.read,
                written: s.written,
                requests: s.requests,
                retransmits: info.total_retrans,
                mss: info.snd_mss,
            });
        }
        let mut clients: Vec<_> = self.received.iter().collect();
        clients.sort_unstable();
        json!({
            "port": self.port,
            "proto": self.proto.name(),
            "start_ns": self.start.as_nanos(),
            "end_ns": self.end.as_nanos(),
            "interrupted": self.interrupted,
            "datagrams": self.datagrams,
            "udp_clients": clients.iter().map(|((a, p), n)| json!([a.to_string(), p, n])).collect::<Vec<_>>(),
            "conns": {
                "client": recs.iter().map(|r| r.client.0.to_string()).collect::<Vec<_>>(),
                "client_port": recs.iter().map(|r| r.client.1).collect::<Vec<_>>(),
                "start_ns": recs.iter().map(|r| r.start.as_nanos()).collect::<Vec<_>>(),
                "end_ns": recs.iter().map(|r| r.end.as_nanos()).collect::<Vec<_>>(),
                "read": recs.iter().map(|r| r.read).collect::<Vec<_>>(),
                "written": recs.iter().map(|r| r.written).collect::<Vec<_>>(),
                "requests": recs.iter().map(|r| r.requests).collect::<Vec<_>>(),
                "retransmits": recs.iter().map(|r| r.retransmits).collect::<Vec<_>>(),
                "mss": recs.iter().map(|r| r.mss).collect::<Vec<_>>(),
                "congestion": self.cfg.congestion,
            },
            "log": {
                "client": self.log.iter().map(|l| l.0.to_string()).collect::<Vec<_>>(),
                "client_port": self.log.iter().map(|l| l.1).collect::<Vec<_>>(),
                "at_ns": self.log.iter().map(|l| l.2.as_nanos()).collect::<Vec<_>>(),
                "bytes": self.log.iter().map(|l| l.3).collect::<Vec<_>>(),
            },
        })
    }

    /// Settings for the TCP connections accepted from now on (as `sink`).
    fn set_listener_tcp(&mut self, spec: &TcpSpec) -> Result<()> {
        if self.proto == RrProto::Udp {
            return Err(Error::App("a UDP server accepts no TCP connections".into()));
        }
        self.cfg = Arc::new(spec.config(self.cfg.seed, 0)?);
        Ok(())
    }

    fn listener_tcp(&self) -> Option<ListenerTcp> {
        (self.proto == RrProto::Tcp).then(|| ListenerTcp::of(&self.cfg))
    }
}
