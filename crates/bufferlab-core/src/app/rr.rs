//! `rr_client` / `rr_server`: request/response over TCP and UDP — what netperf
//! (TCP_STREAM, TCP_MAERTS, TCP_RR, UDP_RR), irtt and a web fetch (curl, wget
//! against `python -m http.server`) do on the wire (docs/internals.md
//! "Request/response").
//!
//! Packets carry lengths, not bytes, so what a request *says* travels beside
//! it: over TCP the client posts each exchange (request bytes, response bytes,
//! whether the server closes afterwards) on the [`RrBoard`] under its
//! connection's addresses before it writes the request, and the server takes
//! it from there once the request's bytes have arrived — the place where a
//! real server parses the request. Over UDP the request datagram's sequence
//! field carries the response length (bits 32–63, 0 = echo the request's
//! length) and the transaction number (bits 0–31); the reply carries the
//! transaction number and, in bits 32–63, how many datagrams the server has
//! received from this client (irtt's received-count field).
//!
//! Client modes ([`RrMode`]):
//! - `stream`: write for `duration` (netperf TCP_STREAM), then close;
//! - `maerts`: the server writes for `duration` (TCP_MAERTS) and closes; the
//!   client reads to the end;
//! - `closed`: one request at a time — write the request, read the whole
//!   response, record the transaction, repeat until `count` transactions or
//!   `duration` (TCP_RR, UDP_RR with its `timeout` for a lost datagram, and a
//!   web fetch with `count` 1);
//! - `paced`: a UDP request every `interval` for `duration` whatever the
//!   replies (irtt), then up to `wait` for the last replies (irtt's `3x4s`
//!   waiter: three times the largest RTT seen, 4 s without any reply).
//!
//! `tick_ns` asks for netperf's demo-mode interim results: at the first write
//! or read that completes at least that long after the previous tick, the
//! units since then (bytes for a stream, transactions otherwise) are recorded
//! with the instant. Each transaction's instants (request written, first
//! response byte, response complete; for UDP the server's reply instant) are
//! kept when `record` is set.
//!
//! A web fetch ends when its response is complete: the application reports
//! then (curl exits), while its connection finishes the close handshake in
//! the background, as a socket the kernel keeps after the process is gone.

use super::conns::{conn_field, tsq_release, ConnKey, ConnLookup, ConnTable};
use super::tcp::{for_host, is_syn, Conn, TcpSpec};
use super::{parse_addr, AppCtx};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::Arc;

/// A response that lasts until the server's `until` (netperf TCP_MAERTS) or a
/// request that lasts until the client closes (TCP_STREAM).
pub const UNBOUNDED: u64 = u64::MAX;
/// The most transactions a client records one by one (beyond: counted only).
pub const MAX_RECORDED: usize = 1_000_000;

/// One exchange a client posts for its connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub request: u64,
    pub response: u64,
    /// the server stops writing an unbounded response then (from its accept)
    pub response_for: Option<SimDuration>,
    /// the server closes the connection after this response (HTTP/1.0)
    pub close_after: bool,
    /// the server keeps a log line for it (a web server's access log)
    pub log: bool,
    /// the TOS byte of what the server sends (netperf `-Y ,REMOTE`)
    pub tos: u8,
    /// the server's congestion control for this connection (netperf `-K ,REMOTE`)
    pub congestion: Option<Arc<str>>,
}

/// The side channel standing in for the requests' content (module docs).
#[derive(Default)]
pub struct RrBoard {
    posted: FxHashMap<(Ipv4, u16, u16), VecDeque<Exchange>>,
}

impl RrBoard {
    pub fn post(&mut self, client: (Ipv4, u16), server_port: u16, ex: Exchange) {
        self.posted
            .entry((client.0, client.1, server_port))
            .or_default()
            .push_back(ex);
    }

    fn peek(&self, client: (Ipv4, u16), server_port: u16) -> Option<&Exchange> {
        self.posted
            .get(&(client.0, client.1, server_port))
            .and_then(|q| q.front())
    }

    fn take(&mut self, client: (Ipv4, u16), server_port: u16) -> Option<Exchange> {
        let key = (client.0, client.1, server_port);
        let q = self.posted.get_mut(&key)?;
        let ex = q.pop_front();
        if q.is_empty() {
            self.posted.remove(&key);
        }
        ex
    }

    /// A connection went away: what it posted and nobody took is dropped.
    fn forget(&mut self, client: (Ipv4, u16), server_port: u16) {
        self.posted.remove(&(client.0, client.1, server_port));
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RrProto {
    Tcp,
    Udp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RrMode {
    Stream,
    Maerts,
    Closed,
    Paced,
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrClientSpec {
    pub dst: String,
    pub port: u16,
    pub proto: RrProto,
    pub mode: RrMode,
    /// request bytes (a UDP request's payload)
    #[serde(default = "one")]
    pub request: u64,
    /// response bytes (UDP: 0 = the request's length)
    #[serde(default = "one")]
    pub response: u64,
    /// transactions to make (closed mode); none: until `duration`
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default)]
    pub duration_ns: Option<u64>,
    /// paced mode: the gap between requests
    #[serde(default)]
    pub interval_ns: Option<u64>,
    /// netperf demo-mode interval
    #[serde(default)]
    pub tick_ns: Option<u64>,
    /// UDP closed mode: give up on a request after this long and send the
    /// next (netperf `-e`); TCP: the whole fetch's limit (curl `--max-time`)
    #[serde(default)]
    pub timeout_ns: Option<u64>,
    /// the server closes after each response (HTTP/1.0)
    #[serde(default)]
    pub close_after: bool,
    /// the server logs each request
    #[serde(default)]
    pub log: bool,
    /// keep every transaction's instants
    #[serde(default)]
    pub record: bool,
    #[serde(default)]
    pub tos: u8,
    /// the TOS of what the server sends back (default: `tos`)
    #[serde(default)]
    pub server_tos: Option<u8>,
    /// the server's congestion control for this connection (default: its own)
    #[serde(default)]
    pub server_congestion: Option<String>,
    #[serde(default)]
    pub tcp: TcpSpec,
}

fn one() -> u64 {
    1
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RrServerSpec {
    pub port: u16,
    pub proto: RrProto,
    #[serde(default)]
    pub tcp: TcpSpec,
}

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
    conn: Option<Conn>,
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

impl RrClient {
    pub fn new(spec: RrClientSpec, mut rng: ComponentRng) -> Result<RrClient> {
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
            conn: None,
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

    pub fn destination(&self) -> Ipv4 {
        self.dst
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
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
                let mut conn =
                    Conn::connect(self.cfg.clone(), ctx, port, (self.dst, self.port), rng);
                conn.flush(ctx, self.tos);
                self.conn = Some(conn);
                if self.mode == RrMode::Closed {
                    self.begin_tx(ctx.now);
                }
            }
            RrProto::Udp => {
                self.local_port = ctx.sockets.bind_ephemeral(Proto::Udp, ctx.id)?;
                self.next_send = Some(ctx.now);
                self.send_udp(ctx);
            }
        }
        Ok(())
    }

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

    /// The connection has closed: free its port and what it posted.
    fn release(&mut self, ctx: &mut AppCtx) {
        if !self.released {
            self.released = true;
            let proto = match self.proto {
                RrProto::Tcp => Proto::Tcp,
                RrProto::Udp => Proto::Udp,
            };
            ctx.sockets.unbind(proto, self.local_port);
            ctx.rr.forget((ctx.addr, self.local_port), self.port);
        }
    }

    // ------------------------------------------------------------ TCP

    fn pump(&mut self, ctx: &mut AppCtx) {
        let now = ctx.now;
        let up = self.time_up(now);
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let state = conn.ep.state();
        if self.connected.is_none() && matches!(state, TcpState::Established | TcpState::CloseWait)
        {
            self.connected = Some(now);
        }
        if !self.out.finished && !self.closing {
            match self.mode {
                RrMode::Stream => {
                    if up {
                        conn.ep.close(now);
                        self.closing = true;
                    } else if state == TcpState::Established {
                        let n = conn.ep.write(now, u64::MAX);
                        self.written += n;
                        self.ticks.add(now, n);
                    }
                }
                RrMode::Maerts => {
                    let n = conn.ep.read(now, u64::MAX);
                    self.read += n;
                    self.ticks.add(now, n);
                    if conn.ep.eof() {
                        conn.ep.close(now);
                        self.closing = true;
                    }
                }
                _ => self.pump_closed(ctx),
            }
        } else if let Some(conn) = self.conn.as_mut() {
            // finished or closing: drain what still arrives
            let n = conn.ep.read(now, u64::MAX);
            self.read += n;
            if conn.ep.eof() && !self.closing {
                conn.ep.close(now);
                self.closing = true;
            }
        }
        let conn = self.conn.as_mut().expect("checked above");
        conn.flush(ctx, self.tos);
        let state = conn.ep.state();
        let gone = matches!(state, TcpState::Closed | TcpState::TimeWait);
        if !self.out.finished {
            if gone && self.connected.is_none() {
                // a reset answers a SYN at once; six unanswered SYNs (tcp_syn_retries) time out
                let why = if conn.ep.info().total_retrans >= 6 {
                    "Connection timed out"
                } else {
                    "Connection refused"
                };
                self.finish(ctx, Some(why.into()));
            } else if self.mode == RrMode::Stream && self.closing {
                // every written byte acknowledged (the SYN counts one)
                if conn.ep.bytes_acked() > self.written || gone {
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

    fn pump_closed(&mut self, ctx: &mut AppCtx) {
        let now = ctx.now;
        let addr = ctx.addr;
        loop {
            let conn = self.conn.as_mut().expect("tcp");
            if !matches!(conn.ep.state(), TcpState::Established | TcpState::CloseWait) {
                return;
            }
            if self.in_flight && self.req_left > 0 {
                let n = conn.ep.write(now, self.req_left);
                self.req_left -= n;
                self.written += n;
            }
            let n = conn.ep.read(now, u64::MAX);
            self.read += n;
            if n == 0 || !self.in_flight {
                if conn.ep.eof() && !self.closing {
                    conn.ep.close(now);
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
            let conn = self.conn.as_mut().expect("tcp");
            conn.ep.close(now);
            self.closing = true;
            self.finish(ctx, None);
            return;
        }
    }

    // ------------------------------------------------------------ UDP

    fn send_udp(&mut self, ctx: &mut AppCtx) {
        let Some(at) = self.next_send else { return };
        if ctx.now < at || self.out.finished {
            return;
        }
        let paced = self.mode == RrMode::Paced;
        if self.time_up(ctx.now) || self.count.is_some_and(|c| self.seq >= c) {
            self.next_send = None;
            if paced {
                // irtt's waiter: three times the largest RTT, 4 s without replies
                let wait = if self.replies > 0 {
                    SimDuration(self.max_rtt.as_nanos().saturating_mul(3))
                } else {
                    SimDuration::from_millis(4000)
                };
                self.wait_until = Some(ctx.now + wait);
                self.check_replies_done(ctx);
            } else {
                self.finish(ctx, None);
            }
            return;
        }
        let seq = (self.response << 32) | (self.seq & 0xFFFF_FFFF);
        ctx.send_udp(
            self.dst,
            self.local_port,
            self.port,
            self.request as u32,
            self.tos,
            seq,
        );
        self.written += self.request;
        self.push_tx(Tx {
            sent: ctx.now,
            ..Tx::default()
        });
        self.seq += 1;
        self.next_send = if paced {
            Some(at + self.interval)
        } else {
            // closed: the next request goes when the reply comes, or after the timeout
            self.timeout.map(|t| ctx.now + t).or(Some(SimTime::MAX))
        };
    }

    fn udp_reply(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let num = p.seq & 0xFFFF_FFFF;
        self.server_received = self.server_received.max(p.seq >> 32);
        if num >= self.seq {
            return; // not one of ours
        }
        let first_time = self.max_reply_seq.is_none_or(|m| num > m);
        let idx = num as usize;
        let sent = if self.record {
            self.txs.get(idx).map(|t| t.sent)
        } else {
            None
        };
        if self.record {
            if let Some(tx) = self.txs.get_mut(idx) {
                if tx.done.is_some() {
                    self.duplicates += 1;
                    return;
                }
                tx.done = Some(ctx.now);
                tx.server = Some(p.sent_at);
                tx.late = !first_time;
            }
        }
        self.replies += 1;
        self.read += p.payload_len() as u64;
        if first_time {
            self.max_reply_seq = Some(num);
        }
        let started = sent.unwrap_or(self.start);
        self.max_rtt = self.max_rtt.max(ctx.now.saturating_since(started));
        if self.mode == RrMode::Closed {
            if num + 1 != self.seq {
                return; // a reply to a request we gave up on
            }
            self.complete_tx(ctx.now, started);
            self.next_send = Some(ctx.now);
            self.send_udp(ctx);
        } else {
            self.completed += 1;
            self.check_replies_done(ctx);
        }
    }

    fn check_replies_done(&mut self, ctx: &mut AppCtx) {
        if self.next_send.is_none() && self.mode == RrMode::Paced {
            let all = self.completed >= self.seq;
            if all || self.wait_until.is_some_and(|t| ctx.now >= t) {
                self.finish(ctx, None);
                self.release(ctx);
            }
        }
    }

    // ------------------------------------------------------------ the app convention

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        match self.proto {
            RrProto::Tcp => {
                if let Some(conn) = self.conn.as_mut() {
                    if conn.owns(p) {
                        conn.input(ctx.now, p);
                        self.pump(ctx);
                    }
                }
            }
            RrProto::Udp => {
                if !self.out.finished && p.proto == Proto::Udp && p.src == self.dst {
                    self.udp_reply(ctx, p);
                }
            }
        }
    }

    /// TCP Small Queues (conns.rs `tsq_release`): a handler that ran may
    /// have sent, so the exchange moves on as after an arrival.
    pub fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        if !tsq_release(ctx.now, releases, self).is_empty() {
            self.pump(ctx);
        }
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.released {
            return None;
        }
        let conn = self.conn.as_ref().and_then(|c| c.ep.poll_timeout());
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

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
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
                    if let Some(conn) = self.conn.as_mut() {
                        conn.ep.close(ctx.now);
                        self.closing = true;
                    }
                }
                if let Some(conn) = self.conn.as_mut() {
                    conn.ep.handle_timeout(ctx.now);
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

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.out.finished {
            self.out.interrupted = true;
            self.finish(ctx, None);
            if let Some(conn) = self.conn.as_mut() {
                conn.ep.close(ctx.now);
                conn.flush(ctx, self.tos);
            }
            self.release(ctx);
        }
    }

    pub fn is_finished(&self) -> bool {
        self.out.finished
    }

    pub fn result(&self) -> serde_json::Value {
        let ns = |t: Option<SimTime>| t.map(|t| t.as_nanos());
        let info = self.conn.as_ref().map(|c| c.ep.info());
        let tcp = self.conn.as_ref().map(|c| {
            let i = c.ep.info();
            json!({"mss": i.snd_mss, "retransmits": i.total_retrans, "congestion": self.cfg.congestion,
                   "rtt_us": i.rtt, "acked": c.ep.bytes_acked().saturating_sub(1)})
        });
        let _ = info;
        json!({
            "proto": match self.proto { RrProto::Tcp => "tcp", RrProto::Udp => "udp" },
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
}

// ---------------------------------------------------------------- the server

impl ConnLookup for RrClient {
    fn conn_by_key(&mut self, key: &ConnKey) -> Option<&mut Conn> {
        self.conn
            .as_mut()
            .filter(|c| c.remote == key.remote && c.local_port == key.local_port)
    }
}

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
    conn: Conn,
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

conn_field!(Served);

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
    pub fn new(spec: RrServerSpec, mut rng: ComponentRng) -> Result<RrServer> {
        Ok(RrServer {
            port: spec.port,
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

    /// Settings for the TCP connections accepted from now on (as `sink`).
    pub fn set_tcp(&mut self, spec: &TcpSpec) -> Result<()> {
        if self.proto == RrProto::Udp {
            return Err(Error::App("a UDP server accepts no TCP connections".into()));
        }
        self.cfg = Arc::new(spec.config(self.cfg.seed, 0)?);
        Ok(())
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        let proto = match self.proto {
            RrProto::Tcp => Proto::Tcp,
            RrProto::Udp => Proto::Udp,
        };
        ctx.sockets.bind(proto, self.port, ctx.id).map_err(|_| {
            Error::App(format!(
                "{} port {} is already in use on this host",
                proto.name().to_uppercase(),
                self.port
            ))
        })
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        if self.finished {
            return;
        }
        if self.proto == RrProto::Udp {
            return self.udp_request(ctx, p);
        }
        let slot = match self.conns.find(p) {
            Some(slot) => {
                self.conns.get_mut(slot).conn.input(ctx.now, p);
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
                let Some(conn) = Conn::accept(cfg, ctx, p, rng) else {
                    return;
                };
                self.conns.insert(Served {
                    conn,
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
                })
            }
            None => return,
        };
        self.service(ctx, slot);
    }

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
        let client = s.conn.remote;
        let n = s.conn.ep.read(now, u64::MAX);
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
                                s.conn.ep.state(),
                                TcpState::Established | TcpState::CloseWait
                            ) {
                                break;
                            }
                            let w = s.conn.ep.write(now, s.resp_left);
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
                        s.conn.ep.close(now);
                        s.closing = true;
                    }
                }
            }
        }
        if s.conn.ep.eof() && !s.closing && !matches!(s.phase, Phase::Writing(_)) {
            s.conn.ep.close(now);
            s.closing = true;
        }
        s.conn.flush(ctx, s.tos);
        if matches!(s.conn.ep.state(), TcpState::Closed | TcpState::TimeWait) {
            let s = self.conns.remove(slot);
            let info = s.conn.ep.info();
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
            self.conns.rearm(slot);
        }
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
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

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        let mut due = self.conns.run_timers(ctx.now);
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

    /// TCP Small Queues (conns.rs `tsq_release`).
    pub fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for slot in self.conns.tsq_release(ctx.now, releases) {
            self.service(ctx, slot);
        }
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.finished = true;
            self.interrupted = true;
            self.end = ctx.now;
            ctx.sockets.unbind_all(ctx.id);
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn result(&self) -> serde_json::Value {
        let mut recs = self.records.clone();
        for s in self.conns.iter() {
            let info = s.conn.ep.info();
            recs.push(ServedRecord {
                client: s.conn.remote,
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
            "proto": match self.proto { RrProto::Tcp => "tcp", RrProto::Udp => "udp" },
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::test_support::{at_ms, Wire, MS};
    use crate::app::App;

    const PORT: u16 = 80;

    fn client(mode: RrMode, proto: RrProto) -> RrClientSpec {
        RrClientSpec {
            dst: "10.0.0.2".into(),
            port: PORT,
            proto,
            mode,
            request: 100,
            response: 1000,
            count: Some(1),
            duration_ns: None,
            interval_ns: None,
            tick_ns: None,
            timeout_ns: None,
            close_after: false,
            log: false,
            record: true,
            tos: 0,
            server_tos: None,
            server_congestion: None,
            tcp: TcpSpec::default(),
        }
    }

    fn server(proto: RrProto) -> App {
        App::RrServer(
            RrServer::new(
                RrServerSpec {
                    port: PORT,
                    proto,
                    tcp: TcpSpec::default(),
                },
                ComponentRng::new(3, "server"),
            )
            .unwrap(),
        )
    }

    /// Client on host 0, server on host 1, `delay_ms` one way, 50 Mbit/s per sender.
    fn run(spec: RrClientSpec, delay_ms: u64, until_ms: u64) -> Wire {
        let proto = spec.proto;
        let c = App::RrClient(RrClient::new(spec, ComponentRng::new(7, "client")).unwrap());
        let mut wire = Wire::new(vec![c, server(proto)], SimDuration::from_millis(delay_ms))
            .with_rate(50_000_000);
        wire.start(1);
        wire.start(0);
        wire.run_until(at_ms(until_ms));
        wire
    }

    fn frame_ns(payload: u64) -> u64 {
        // Ethernet + IPv4 + TCP with timestamps, at 50 Mbit/s
        (payload + 14 + 20 + 32) * 8 * 1_000_000_000 / 50_000_000
    }

    #[test]
    fn a_fetch_takes_the_handshake_then_one_round_trip_and_the_response_transfer() {
        let mut spec = client(RrMode::Closed, RrProto::Tcp);
        spec.close_after = true;
        spec.log = true;
        let wire = run(spec, 5, 1000);
        let r = wire.result(0);
        assert_eq!(r["error"], serde_json::Value::Null);
        assert_eq!(
            (r["bytes_written"].as_u64(), r["bytes_read"].as_u64()),
            (Some(100), Some(1000))
        );
        assert_eq!(r["completed"], 1);
        let connected = r["connected_ns"].as_u64().unwrap();
        // SYN and SYN-ACK: one round trip of 10 ms plus two 66/74-byte frames
        assert!((10 * MS..11 * MS).contains(&connected), "{connected}");
        let sent = r["tx"]["sent_ns"][0].as_u64().unwrap();
        let done = r["tx"]["done_ns"][0].as_u64().unwrap();
        // the request leaves at connect(), is written once established; the reply needs a
        // round trip after the handshake plus the 100- and 1000-byte frames' serialisation
        let expect = connected + 10 * MS + frame_ns(100) + frame_ns(1000);
        assert!(
            done >= expect && done < expect + MS,
            "done {done}, expected about {expect}"
        );
        assert_eq!(sent, 0);
        assert_eq!(
            r["end_ns"].as_u64(),
            Some(done),
            "curl reports at the last byte"
        );
        let s = wire.result(1);
        assert_eq!(s["log"]["bytes"], serde_json::json!([1000]));
        assert_eq!(s["conns"]["read"], serde_json::json!([100]));
        assert_eq!(s["conns"]["written"], serde_json::json!([1000]));
        assert!(wire.bench.rr.posted.is_empty(), "the exchange was taken");
    }

    #[test]
    fn a_large_response_arrives_whole_and_in_order() {
        let mut spec = client(RrMode::Closed, RrProto::Tcp);
        spec.response = 1_000_000;
        spec.close_after = true;
        let r = run(spec, 2, 5000).result(0);
        assert_eq!(r["bytes_read"].as_u64(), Some(1_000_000));
        let first = r["tx"]["first_ns"][0].as_u64().unwrap();
        let done = r["tx"]["done_ns"][0].as_u64().unwrap();
        // a megabyte at 50 Mbit/s takes at least 160 ms
        assert!(done - first >= 160 * MS, "{}", done - first);
    }

    #[test]
    fn back_to_back_transactions_count_and_tick() {
        let mut spec = client(RrMode::Closed, RrProto::Tcp);
        spec.request = 1;
        spec.response = 1;
        spec.count = None;
        spec.duration_ns = Some(1000 * MS);
        spec.tick_ns = Some(200 * MS);
        spec.record = false;
        let r = run(spec, 5, 3000).result(0);
        // each transaction is one 10 ms round trip (plus two tiny frames)
        let n = r["completed"].as_u64().unwrap();
        assert!((95..=100).contains(&n), "{n}");
        let ticks = r["ticks"].as_array().unwrap();
        assert!(ticks.len() >= 4, "{ticks:?}");
        assert!(ticks
            .iter()
            .all(|t| (19..=21).contains(&t[1].as_u64().unwrap())));
    }

    #[test]
    fn a_stream_writes_for_its_duration_and_the_server_reads_all_of_it() {
        let mut spec = client(RrMode::Stream, RrProto::Tcp);
        spec.duration_ns = Some(1000 * MS);
        spec.tick_ns = Some(200 * MS);
        let wire = run(spec, 5, 5000);
        let r = wire.result(0);
        let written = r["bytes_written"].as_u64().unwrap();
        let end = r["end_ns"].as_u64().unwrap();
        // what was written (some of it still in the send buffer at the close) all arrives,
        // no faster than 50 Mbit/s of frames
        assert_eq!(
            wire.result(1)["conns"]["read"],
            serde_json::json!([written])
        );
        assert!(
            written > 4_000_000 && written * 8 * 1_000_000_000 / end <= 50_000_000,
            "{written} {end}"
        );
        assert!(end >= 1000 * MS);
        assert!(!r["ticks"].as_array().unwrap().is_empty());
    }

    #[test]
    fn maerts_has_the_server_write_for_the_duration_then_close() {
        let mut spec = client(RrMode::Maerts, RrProto::Tcp);
        spec.duration_ns = Some(500 * MS);
        let wire = run(spec, 5, 5000);
        let r = wire.result(0);
        let read = r["bytes_read"].as_u64().unwrap();
        assert_eq!(
            wire.result(1)["conns"]["written"],
            serde_json::json!([read])
        );
        let end = r["end_ns"].as_u64().unwrap();
        // the server stops writing at 500 ms after the accept; its send buffer drains after
        assert!((520 * MS..1000 * MS).contains(&end), "{end}");
        assert!(
            read > 2_000_000 && read * 8 * 1_000_000_000 / end <= 50_000_000,
            "{read} {end}"
        );
    }

    #[test]
    fn the_server_sends_in_the_class_the_client_asked_for() {
        let mut spec = client(RrMode::Maerts, RrProto::Tcp);
        spec.duration_ns = Some(100 * MS);
        spec.tos = 0xb8;
        spec.server_tos = Some(0x20);
        spec.server_congestion = Some("reno".into());
        let wire = run(spec, 5, 2000);
        let from = |host: usize| -> Vec<u8> {
            wire.log
                .iter()
                .filter(|(_, h, p)| *h == host && p.payload_len() > 0)
                .map(|(_, _, p)| p.tos & !3)
                .collect()
        };
        let (sent, answered) = (from(0), from(1));
        assert!(
            !answered.is_empty() && answered.iter().all(|&t| t == 0x20),
            "{answered:?}"
        );
        assert!(sent.iter().all(|&t| t == 0xb8), "{sent:?}");
        let mut bad = client(RrMode::Stream, RrProto::Tcp);
        bad.duration_ns = Some(MS);
        bad.server_congestion = Some("nope".into());
        assert!(
            RrClient::new(bad, ComponentRng::new(0, "x")).is_err(),
            "an unknown congestion control is refused"
        );
    }

    #[test]
    fn paced_udp_probes_record_one_way_delays_and_the_server_count() {
        let mut spec = client(RrMode::Paced, RrProto::Udp);
        spec.request = 60;
        spec.response = 0;
        spec.count = None;
        spec.duration_ns = Some(1000 * MS);
        spec.interval_ns = Some(200 * MS);
        spec.tos = 0xb8;
        let wire = run(spec, 5, 10_000);
        let r = wire.result(0);
        assert_eq!(r["requests"], 5);
        assert_eq!(
            (r["replies"].as_u64(), r["server_received"].as_u64()),
            (Some(5), Some(5))
        );
        let sent = r["tx"]["sent_ns"].as_array().unwrap();
        assert_eq!(sent[4].as_u64(), Some(800 * MS));
        let rtt = r["tx"]["done_ns"][0].as_u64().unwrap() - sent[0].as_u64().unwrap();
        let one_way = r["tx"]["server_ns"][0].as_u64().unwrap() - sent[0].as_u64().unwrap();
        let udp_frame = (60 + 14 + 20 + 8) * 8 * 1_000_000_000 / 50_000_000;
        assert_eq!(rtt, 2 * (5 * MS + udp_frame));
        assert_eq!(one_way, 5 * MS + udp_frame);
        // everything answered by the end of the test: no wait after it (irtt's waiter)
        assert_eq!(r["end_ns"].as_u64(), Some(1000 * MS));
        let echoed: Vec<u8> = wire
            .log
            .iter()
            .filter(|(_, h, _)| *h == 1)
            .map(|(_, _, p)| p.tos)
            .collect();
        assert!(
            echoed.iter().all(|&t| t == 0xb8),
            "the server answers in the request's class"
        );
    }

    #[test]
    fn udp_rr_gives_up_on_a_lost_reply_after_its_timeout() {
        let mut spec = client(RrMode::Closed, RrProto::Udp);
        spec.request = 1;
        spec.response = 1;
        spec.count = None;
        spec.duration_ns = Some(1000 * MS);
        spec.timeout_ns = Some(100 * MS);
        let c = App::RrClient(RrClient::new(spec, ComponentRng::new(7, "client")).unwrap());
        let mut lost = false;
        let mut wire = Wire::new(vec![c, server(RrProto::Udp)], SimDuration::from_millis(5))
            .with_loss(move |p| {
                // lose the server's third reply
                let third = p.src_port == PORT && p.seq & 0xFFFF_FFFF == 2 && !lost;
                lost |= third;
                third
            });
        wire.start(1);
        wire.start(0);
        wire.run_until(at_ms(3000));
        let r = wire.result(0);
        let n = r["completed"].as_u64().unwrap();
        // 10 ms per transaction, 100 ms lost once
        assert!((88..=91).contains(&n), "{n}");
        assert_eq!(r["requests"].as_u64(), Some(n + 1));
    }

    #[test]
    fn the_board_hands_each_exchange_out_once_in_order() {
        let mut b = RrBoard::default();
        let ex = |r| Exchange {
            request: r,
            response: 1,
            response_for: None,
            close_after: false,
            log: false,
            tos: 0,
            congestion: None,
        };
        let c = (Ipv4(1), 40_000);
        b.post(c, 80, ex(1));
        b.post(c, 80, ex(2));
        assert_eq!(b.take(c, 81), None);
        assert_eq!(b.take(c, 80).map(|e| e.request), Some(1));
        assert_eq!(b.take(c, 80).map(|e| e.request), Some(2));
        assert_eq!(b.take(c, 80), None);
        assert!(b.posted.is_empty());
    }

    #[test]
    fn specs_that_cannot_run_are_refused() {
        let err = |spec: RrClientSpec| {
            RrClient::new(spec, ComponentRng::new(0, "x"))
                .err()
                .unwrap()
                .to_string()
        };
        let mut s = client(RrMode::Paced, RrProto::Udp);
        s.duration_ns = Some(1);
        assert!(err(s).contains("positive interval_ns"));
        assert!(err(client(RrMode::Stream, RrProto::Udp)).contains("run over TCP"));
        let mut s = client(RrMode::Closed, RrProto::Udp);
        s.request = 70_000;
        assert!(err(s).contains("1..65507"));
    }
}
