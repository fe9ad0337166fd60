//! `rr_client`: the requesting side (module docs in rr/mod.rs). This file holds
//! the client and its TCP exchanges; udp.rs its UDP ones.

mod udp;

use super::{Exchange, RrClientSpec, RrMode, RrProto, MAX_RECORDED, UNBOUNDED};
use crate::app::sockets::{PortKind, PortView, SocketHandle};
use crate::app::tcp::{Conn, TcpSpec};
use crate::app::{parse_addr, AppCtx, Application, ResultCtx, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime};
use serde_json::json;
use std::sync::Arc;

/// The instants of one transaction (or probe).
#[derive(Clone, Copy, Debug, Default)]
struct Tx {
    sent: SimTime,
    first: Option<SimTime>,
    done: Option<SimTime>,
    /// UDP: the server's reply instant
    server: Option<SimTime>,
    late: bool,
}

/// Netperf's demo-mode ticks.
#[derive(Default)]
struct Ticks {
    every: Option<SimDuration>,
    last: SimTime,
    units: u64,
    out: Vec<(SimTime, u64)>,
}

impl Ticks {
    fn add(&mut self, now: SimTime, units: u64) {
        let Some(every) = self.every else { return };
        self.units += units;
        if units > 0 && now.saturating_since(self.last) >= every {
            self.out.push((now, self.units));
            self.units = 0;
            self.last = now;
        }
    }
}

/// The client's end of things: how it ended.
#[derive(Default)]
struct Outcome {
    error: Option<String>,
    end: SimTime,
    finished: bool,
    interrupted: bool,
}

pub struct RrClient {
    dst: Ipv4,
    port: u16,
    proto: RrProto,
    mode: RrMode,
    request: u64,
    response: u64,
    count: Option<u64>,
    duration: Option<SimDuration>,
    interval: SimDuration,
    timeout: Option<SimDuration>,
    close_after: bool,
    log: bool,
    record: bool,
    tos: u8,
    server_tos: u8,
    server_congestion: Option<Arc<str>>,
    cfg: TcpConfig,
    rng: Option<ComponentRng>,
    // running state
    start: SimTime,
    stop_at: Option<SimTime>,
    /// the TCP connection, in the node's socket table
    sock: Option<SocketHandle>,
    /// what the report says of the connection, taken when it left the table
    tcp_report: Option<serde_json::Value>,
    local_port: u16,
    connected: Option<SimTime>,
    written: u64,
    read: u64,
    /// closed mode: request bytes still to write, response bytes still to read
    req_left: u64,
    resp_left: u64,
    in_flight: bool,
    closing: bool,
    txs: Vec<Tx>,
    completed: u64,
    latency_sum: u128,
    latency_min: Option<SimDuration>,
    latency_max: SimDuration,
    /// UDP: next request instant, its number, the highest reply number seen,
    /// the server's received count, replies received (with duplicates)
    next_send: Option<SimTime>,
    seq: u64,
    max_reply_seq: Option<u64>,
    server_received: u64,
    replies: u64,
    duplicates: u64,
    max_rtt: SimDuration,
    wait_until: Option<SimTime>,
    ticks: Ticks,
    out: Outcome,
    /// the connection is gone (the application may still have been finished earlier)
    released: bool,
}

impl Application for RrClient {
    const KIND: &'static str = "rr_client";
    type Spec = RrClientSpec;

    fn new(spec: RrClientSpec, mut rng: ComponentRng) -> Result<RrClient> {
        let bad = |m: String| Err(Error::App(format!("rr_client: {m}")));
        if spec.mode == RrMode::Paced && spec.interval_ns.is_none_or(|i| i == 0) {
            return bad("paced mode needs a positive interval_ns".into());
        }
        if matches!(spec.mode, RrMode::Stream | RrMode::Maerts) && spec.proto == RrProto::Udp {
            return bad("stream and maerts run over TCP".into());
        }
        if spec.mode == RrMode::Paced && spec.proto == RrProto::Tcp {
            return bad("paced mode runs over UDP".into());
        }
        if matches!(spec.mode, RrMode::Stream | RrMode::Maerts | RrMode::Paced)
            && spec.duration_ns.is_none()
        {
            return bad("stream, maerts and paced modes need duration_ns".into());
        }
        if spec.mode == RrMode::Closed && spec.count.is_none() && spec.duration_ns.is_none() {
            return bad("closed mode needs a count or duration_ns".into());
        }
        if spec.proto == RrProto::Udp
            && (spec.request == 0 || spec.request > 65_507 || spec.response > 65_507)
        {
            return bad(format!(
                "UDP request {} and response {} must be 1..65507 bytes",
                spec.request, spec.response
            ));
        }
        if spec.mode == RrMode::Closed && spec.proto == RrProto::Tcp && spec.request == 0 {
            return bad("a TCP request needs at least 1 byte".into());
        }
        let cfg = spec.tcp.config(rng.next_u64(), spec.tos)?;
        if let Some(cc) = &spec.server_congestion {
            // validated here, where the user's command is (the server would only drop it)
            TcpSpec {
                congestion: Some(cc.clone()),
                ..TcpSpec::default()
            }
            .config(0, 0)?;
        }
        Ok(RrClient {
            dst: parse_addr("rr_client dst", &spec.dst)?,
            port: spec.port,
            proto: spec.proto,
            mode: spec.mode,
            request: spec.request,
            response: spec.response,
            count: spec.count,
            duration: spec.duration_ns.map(SimDuration),
            interval: SimDuration(spec.interval_ns.unwrap_or(0)),
            timeout: spec.timeout_ns.map(SimDuration),
            close_after: spec.close_after,
            log: spec.log,
            record: spec.record,
            tos: spec.tos,
            server_tos: spec.server_tos.unwrap_or(spec.tos),
            server_congestion: spec.server_congestion.map(Arc::from),
            cfg,
            rng: Some(rng),
            start: SimTime::ZERO,
            stop_at: None,
            sock: None,
            tcp_report: None,
            local_port: 0,
            connected: None,
            written: 0,
            read: 0,
            req_left: 0,
            resp_left: 0,
            in_flight: false,
            closing: false,
            txs: Vec::new(),
            completed: 0,
            latency_sum: 0,
            latency_min: None,
            latency_max: SimDuration::ZERO,
            next_send: None,
            seq: 0,
            max_reply_seq: None,
            server_received: 0,
            replies: 0,
            duplicates: 0,
            max_rtt: SimDuration::ZERO,
            wait_until: None,
            ticks: Ticks {
                every: spec.tick_ns.map(SimDuration),
                ..Ticks::default()
            },
            out: Outcome::default(),
            released: false,
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        self.ticks.last = ctx.now;
        self.stop_at = self.duration.map(|d| ctx.now + d);
        match self.proto {
            RrProto::Tcp => {
                let port = ctx.sockets.bind_ephemeral(Proto::Tcp, ctx.id)?;
                self.local_port = port;
                let first = match self.mode {
                    RrMode::Stream => Exchange {
                        request: UNBOUNDED,
                        response: 0,
                        response_for: None,
                        close_after: false,
                        ..self.exchange()
                    },
                    RrMode::Maerts => Exchange {
                        request: 0,
                        response: UNBOUNDED,
                        response_for: self.duration,
                        close_after: true,
                        ..self.exchange()
                    },
                    _ => self.exchange(),
                };
                ctx.rr.post((ctx.addr, port), self.port, first);
                let rng = self.rng.take().expect("started once");
                let sock = ctx.connect(self.cfg.clone(), port, (self.dst, self.port), rng);
                ctx.flush(sock, self.tos);
                self.sock = Some(sock);
                if self.mode == RrMode::Closed {
                    self.begin_tx(ctx.now);
                }
            }
            RrProto::Udp => {
                self.local_port = ctx.sockets.bind_ephemeral(Proto::Udp, ctx.id)?;
                // netperf's and irtt's data sockets are connected to the server
                ctx.sockets.add_view(PortView {
                    port: self.local_port,
                    owner: ctx.id,
                    kind: PortKind::Udp {
                        peer: Some((self.dst, self.port)),
                    },
                    v6: false,
                });
                self.next_send = Some(ctx.now);
                self.send_udp(ctx);
            }
        }
        Ok(())
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        match self.proto {
            RrProto::Tcp => {
                if let Some(h) = self.sock.filter(|&h| ctx.sockets.find(p) == Some(h)) {
                    let now = ctx.now;
                    ctx.tcp_mut(h).input(now, p);
                    self.pump(ctx);
                }
            }
            RrProto::Udp => {
                if !self.out.finished && p.proto == Proto::Udp && p.src == self.dst {
                    self.udp_reply(ctx, p);
                }
            }
        }
    }

    fn poll_timeout(&self, sockets: &Sockets) -> Option<SimTime> {
        if self.released {
            return None;
        }
        let conn = self.sock.and_then(|h| sockets.tcp(h).ep.poll_timeout());
        // only a stream acts at its end instant (maerts waits for the server, closed mode for
        // the transaction in flight)
        let stop = self
            .stop_at
            .filter(|_| !self.out.finished && !self.closing && self.mode == RrMode::Stream);
        let limit = self
            .timeout
            .filter(|_| self.proto == RrProto::Tcp && !self.out.finished)
            .map(|t| self.start + t);
        let udp = self.next_send.filter(|t| *t != SimTime::MAX);
        [conn, stop, limit, udp, self.wait_until]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        match self.proto {
            RrProto::Tcp => {
                let over = self
                    .timeout
                    .is_some_and(|t| ctx.now >= self.start + t && !self.out.finished);
                if over {
                    let ms = self.timeout.map_or(0, |t| t.as_nanos() / 1_000_000);
                    let got = self.read;
                    self.finish(
                        ctx,
                        Some(format!(
                            "Operation timed out after {ms} milliseconds with {got} bytes received"
                        )),
                    );
                    if let Some(h) = self.sock {
                        let now = ctx.now;
                        ctx.tcp_mut(h).ep.close(now);
                        self.closing = true;
                    }
                }
                if let Some(h) = self.sock {
                    let now = ctx.now;
                    ctx.tcp_mut(h).ep.handle_timeout(now);
                }
                self.pump(ctx);
            }
            RrProto::Udp => {
                if self.mode == RrMode::Closed && self.next_send.is_some_and(|t| ctx.now >= t) {
                    // netperf -e: the request timed out; its transaction is abandoned
                    self.ticks.add(ctx.now, 0);
                }
                self.send_udp(ctx);
                self.check_replies_done(ctx);
            }
        }
    }

    /// TCP Small Queues (`Sockets::tsq_release`): a handler that ran may
    /// have sent, so the exchange moves on as after an arrival.
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        if !ctx.tsq_release(releases).is_empty() {
            self.pump(ctx);
        }
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.out.finished {
            self.out.interrupted = true;
            self.finish(ctx, None);
            if let Some(h) = self.sock {
                let now = ctx.now;
                ctx.tcp_mut(h).ep.close(now);
                ctx.flush(h, self.tos);
            }
            self.release(ctx);
        }
    }

    fn is_finished(&self) -> bool {
        self.out.finished
    }

    fn result(&self, r: &ResultCtx) -> serde_json::Value {
        let ns = |t: Option<SimTime>| t.map(|t| t.as_nanos());
        let tcp = match self.sock {
            Some(h) => Some(self.tcp_report(r.sockets.tcp(h))),
            None => self.tcp_report.clone(),
        };
        json!({
            "proto": self.proto.name(),
            "local_port": self.local_port,
            "error": self.out.error,
            "interrupted": self.out.interrupted,
            "start_ns": self.start.as_nanos(),
            "connected_ns": ns(self.connected),
            "end_ns": self.out.end.as_nanos(),
            "bytes_written": self.written,
            "bytes_read": self.read,
            "completed": self.completed,
            "requests": self.seq.max(self.completed + self.in_flight as u64),
            "latency_sum_ns": self.latency_sum as u64,
            "latency_min_ns": self.latency_min.map(|d| d.as_nanos()),
            "latency_max_ns": self.latency_max.as_nanos(),
            "replies": self.replies,
            "duplicates": self.duplicates,
            "server_received": self.server_received,
            "ticks": self.ticks.out.iter().map(|(t, u)| [t.as_nanos(), *u]).collect::<Vec<_>>(),
            "tx": {
                "sent_ns": self.txs.iter().map(|t| t.sent.as_nanos()).collect::<Vec<_>>(),
                "first_ns": self.txs.iter().map(|t| ns(t.first)).collect::<Vec<_>>(),
                "done_ns": self.txs.iter().map(|t| ns(t.done)).collect::<Vec<_>>(),
                "server_ns": self.txs.iter().map(|t| ns(t.server)).collect::<Vec<_>>(),
                "late": self.txs.iter().map(|t| t.late).collect::<Vec<_>>(),
            },
            "tcp": tcp,
        })
    }

    fn destination(&self) -> Option<Ipv4> {
        Some(self.dst)
    }
}

impl RrClient {
    fn exchange(&self) -> Exchange {
        Exchange {
            request: self.request,
            response: self.response,
            response_for: None,
            close_after: self.close_after,
            log: self.log,
            tos: self.server_tos,
            congestion: self.server_congestion.clone(),
        }
    }

    fn begin_tx(&mut self, now: SimTime) {
        self.req_left = self.request;
        self.resp_left = self.response;
        self.in_flight = true;
        self.push_tx(Tx {
            sent: now,
            ..Tx::default()
        });
    }

    fn push_tx(&mut self, tx: Tx) {
        if self.record && self.txs.len() < MAX_RECORDED {
            self.txs.push(tx);
        }
    }

    fn current_tx(&mut self) -> Option<&mut Tx> {
        if self.record && (self.txs.len() as u64) == self.completed + 1 {
            self.txs.last_mut()
        } else {
            None
        }
    }

    fn complete_tx(&mut self, now: SimTime, started: SimTime) {
        let lat = now.saturating_since(started);
        self.completed += 1;
        self.latency_sum += lat.as_nanos() as u128;
        self.latency_min = Some(self.latency_min.map_or(lat, |m| m.min(lat)));
        self.latency_max = self.latency_max.max(lat);
        self.ticks.add(now, 1);
    }

    fn time_up(&self, now: SimTime) -> bool {
        self.stop_at.is_some_and(|t| now >= t)
    }

    fn finish(&mut self, ctx: &mut AppCtx, error: Option<String>) {
        if !self.out.finished {
            self.out.finished = true;
            self.out.end = ctx.now;
            if self.out.error.is_none() {
                self.out.error = error;
            }
        }
    }

    /// What the report says of the TCP connection.
    fn tcp_report(&self, c: &Conn) -> serde_json::Value {
        let i = c.ep.info();
        json!({"mss": i.snd_mss, "retransmits": i.total_retrans, "congestion": self.cfg.congestion,
               "rtt_us": i.rtt, "acked": c.ep.bytes_acked().saturating_sub(1)})
    }

    /// The connection has closed: free its port, its socket (its report
    /// kept) and what it posted.
    fn release(&mut self, ctx: &mut AppCtx) {
        if !self.released {
            self.released = true;
            ctx.sockets.unbind(self.proto.ip(), self.local_port);
            ctx.sockets.remove_views(ctx.id, self.local_port, |_| true);
            if let Some(h) = self.sock.take() {
                self.tcp_report = Some(self.tcp_report(ctx.tcp(h)));
                ctx.sockets.remove_tcp(h);
            }
            ctx.rr.forget((ctx.addr, self.local_port), self.port);
        }
    }

    // ------------------------------------------------------------ TCP

    fn pump(&mut self, ctx: &mut AppCtx) {
        let now = ctx.now;
        let up = self.time_up(now);
        let Some(h) = self.sock else {
            return;
        };
        let state = ctx.tcp(h).ep.state();
        if self.connected.is_none() && matches!(state, TcpState::Established | TcpState::CloseWait)
        {
            self.connected = Some(now);
        }
        if !self.out.finished && !self.closing {
            match self.mode {
                RrMode::Stream => {
                    let ep = &mut ctx.tcp_mut(h).ep;
                    if up {
                        // netperf's TCP_STREAM: shutdown(SHUT_WR), then read
                        // until the remote closes
                        ep.shutdown_write(now);
                        self.closing = true;
                    } else if state == TcpState::Established {
                        let n = ep.write(now, u64::MAX);
                        self.written += n;
                        self.ticks.add(now, n);
                    }
                }
                RrMode::Maerts => {
                    let ep = &mut ctx.tcp_mut(h).ep;
                    let n = ep.read(now, u64::MAX);
                    self.read += n;
                    self.ticks.add(now, n);
                    if ep.eof() {
                        ep.close(now);
                        self.closing = true;
                    }
                }
                _ => self.pump_closed(ctx, h),
            }
        } else {
            // finished or closing: drain what still arrives
            let ep = &mut ctx.tcp_mut(h).ep;
            let n = ep.read(now, u64::MAX);
            self.read += n;
            if ep.eof() && !self.closing {
                ep.close(now);
                self.closing = true;
            }
        }
        ctx.flush(h, self.tos);
        let ep = &ctx.tcp(h).ep;
        let gone = matches!(ep.state(), TcpState::Closed | TcpState::TimeWait);
        let (retrans, acked) = (ep.info().total_retrans, ep.bytes_acked());
        if !self.out.finished {
            if gone && self.connected.is_none() {
                // a reset answers a SYN at once; six unanswered SYNs (tcp_syn_retries) time out
                let why = if retrans >= 6 {
                    "Connection timed out"
                } else {
                    "Connection refused"
                };
                self.finish(ctx, Some(why.into()));
            } else if self.mode == RrMode::Stream && self.closing {
                // every written byte acknowledged (the SYN counts one)
                if acked > self.written || gone {
                    self.finish(ctx, None);
                }
            } else if gone {
                let err = (self.mode == RrMode::Closed && self.in_flight)
                    .then(|| "Connection reset by peer".to_string());
                self.finish(ctx, err);
            }
        }
        if gone {
            self.release(ctx);
        }
    }

    fn pump_closed(&mut self, ctx: &mut AppCtx, h: SocketHandle) {
        let now = ctx.now;
        let addr = ctx.addr;
        loop {
            let ep = &mut ctx.tcp_mut(h).ep;
            if !matches!(ep.state(), TcpState::Established | TcpState::CloseWait) {
                return;
            }
            if self.in_flight && self.req_left > 0 {
                let n = ep.write(now, self.req_left);
                self.req_left -= n;
                self.written += n;
            }
            let n = ep.read(now, u64::MAX);
            self.read += n;
            if n == 0 || !self.in_flight {
                if ep.eof() && !self.closing {
                    ep.close(now);
                    self.closing = true;
                }
                return;
            }
            let took = n.min(self.resp_left);
            self.resp_left -= took;
            let started = self.txs.last().map_or(self.start, |t| t.sent);
            if let Some(tx) = self.current_tx() {
                tx.first.get_or_insert(now);
            }
            if self.resp_left > 0 {
                return;
            }
            // the response is complete
            if let Some(tx) = self.current_tx() {
                tx.done = Some(now);
            }
            self.in_flight = false;
            self.complete_tx(now, started);
            let more = self.count.is_none_or(|c| self.completed < c) && !self.time_up(now);
            if more && !self.close_after {
                ctx.rr
                    .post((addr, self.local_port), self.port, self.exchange());
                self.begin_tx(now);
                continue;
            }
            ctx.tcp_mut(h).ep.close(now);
            self.closing = true;
            self.finish(ctx, None);
            return;
        }
    }
}
