//! The iperf3 server (src/iperf_server_api.c): accepts one test at a time
//! on its port, UDP or TCP, and reports per test.

use super::control::{msg, ReceiverTotals, RESULTS_BYTES, RUNNING_RETRY, STATE_BYTES};
use super::tcp::{records_json, RecvStream, SendStream, Stream};
use super::udp::{RecvCounters, UdpRecvInterval, UDP_CONNECT_BYTES};
use super::{Protocol, Ticker};
use crate::app::sockets::diag::ListenerTcp;
use crate::app::sockets::{PortKind, PortView, LISTEN_MAX};
use crate::app::tcp::{is_syn, next_timeout, TcpSpec};
use crate::app::{AppCtx, Application, ResultCtx, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Payload, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    pub port: u16,
    #[serde(default)]
    pub one_off: bool,
    pub interval_ns: u64,
    /// socket settings of accepted TCP data connections (the server host's sysctls)
    #[serde(default)]
    pub tcp: TcpSpec,
}

pub(super) struct ServerTest {
    conn: u32,
    client_ip: Ipv4,
    client_ctrl_port: u16,
    client_data_port: Option<u16>,
    local_ip: Ipv4,
    omit: SimDuration,
    /// instant TEST_START was sent (first start; `ticker.start` moves at omit end)
    started: Option<SimTime>,
    omit_end: Option<SimTime>,
    ticker: Option<Ticker>,
    pub(super) counters: RecvCounters,
    /// counters at the omit end and at the last interval tick
    base: RecvCounters,
    at_last_tick: RecvCounters,
    intervals: Vec<UdpRecvInterval>,
    totals: Option<ReceiverTotals>,
    protocol: Protocol,
    /// TCP data connections, in accept order
    streams: Vec<Stream>,
    expected_streams: u32,
    /// `-R`: this side sends
    reverse: bool,
    blksize: u32,
    /// TCP: the client's `-w`; with the server's buffer sizes it gives
    /// (SO_SNDBUF, SO_RCVBUF) as getsockopt reads them back
    window: Option<(u32, u32, u32)>,
    /// TCP: the client's `--fq-rate`, bytes/s (SO_MAX_PACING_RATE)
    max_pacing_rate: Option<u64>,
    /// TCP: TEST_START is resent until the first data arrives (the control
    /// connection is a modelled message exchange)
    start_retry: Option<SimTime>,
    /// TCP: when TEST_START leaves, the server's set-up work being done
    start_at: Option<SimTime>,
}

impl ServerTest {
    /// TEST_START to the client's control port (the server's port `port`).
    fn send_test_start(&self, ctx: &mut AppCtx, port: u16) {
        ctx.send_control(
            self.client_ip,
            port,
            self.client_ctrl_port,
            msg::TEST_START,
            self.conn,
            STATE_BYTES,
        );
    }

    /// Reading data proves the client got TEST_START; with -R nothing
    /// does, so TEST_START is repeated until TEST_END.
    fn note_data_arrived(&mut self, counting: bool) {
        if counting && !self.reverse && self.streams.iter().any(|st| st.bytes() > 0) {
            self.start_retry = None;
        }
    }

    fn close_interval(&mut self, sockets: &Sockets, end: SimTime) {
        let Some(t) = self.ticker.as_mut() else {
            return;
        };
        let omitted = self.omit_end.is_some_and(|e| end <= e);
        if self.protocol == Protocol::Tcp {
            for st in &mut self.streams {
                st.close_interval(sockets, t.last_tick, end, omitted);
            }
            t.last_tick = end;
            t.next_tick = end + t.interval;
            return;
        }
        let d = self.counters.minus(&self.at_last_tick);
        self.intervals.push(UdpRecvInterval {
            start_ns: t.last_tick.as_nanos(),
            end_ns: end.as_nanos(),
            bytes: d.bytes,
            packets: d.max_seq,
            received: d.received,
            lost: d.cnt_error,
            out_of_order: d.out_of_order,
            jitter_s: self.counters.jitter_s,
            omitted,
        });
        t.last_tick = end;
        t.next_tick = end + t.interval;
        self.at_last_tick = self.counters;
    }

    fn to_json(&self, r: &ResultCtx) -> serde_json::Value {
        let shared = r.iperf.tests.get(self.conn as usize);
        let mut doc = json!({
            "params": shared.map(|t| t.params.clone()),
            "cookie": shared.map(|t| t.cookie.clone()),
            "peer": shared.and_then(|t| t.peer.clone()),
            "client_ip": self.client_ip.to_string(),
            "client_ctrl_port": self.client_ctrl_port,
            "client_data_port": self.client_data_port,
            "local_ip": self.local_ip.to_string(),
            "protocol": match self.protocol { Protocol::Udp => "udp", Protocol::Tcp => "tcp" },
            "streams": self.streams.iter().map(|st| {
                let start = self.ticker.as_ref().map_or(SimTime::ZERO, |t| t.start);
                json!({
                    "client_data_port": r.sockets.tcp(st.sock()).remote.1,
                    "intervals": st.intervals(),
                    "total": self.totals.map(|t| st.totals(r.sockets, start, t.end)),
                })
            }).collect::<Vec<_>>(),
            "test_start_ns": self.started.map(|t| t.as_nanos()),
            "start_ns": self.ticker.as_ref().map(|t| t.start.as_nanos()),
            "omit_ns": self.omit.as_nanos(),
            "intervals": records_json(&self.intervals),
            "total": self.totals.map(ReceiverTotals::to_json),
            "complete": self.totals.is_some(),
        });
        if let Some((_, sndbuf, rcvbuf)) = self.window {
            // the listener's buffers after setsockopt (formats default them otherwise)
            doc["sndbuf_actual"] = json!(sndbuf);
            doc["rcvbuf_actual"] = json!(rcvbuf);
        }
        doc
    }
}

pub struct Server {
    port: u16,
    one_off: bool,
    tcp: TcpConfig,
    rng: ComponentRng,
    interval: SimDuration,
    start: SimTime,
    end: SimTime,
    pub(super) tests: Vec<ServerTest>,
    /// (test, stream) of each TCP data connection, by its socket's tag
    stream_at: Vec<(usize, usize)>,
    /// index into `tests` of the test in progress
    current: Option<usize>,
    /// the test whose results are being exchanged (it has ended; the server
    /// takes no other client until the exchange is over)
    exchanging: Option<usize>,
    finished: bool,
    interrupted: bool,
}

impl Server {
    /// A TCP data-connection segment: accept the client's streams while the
    /// test is being set up, read data, start the test once all are there.
    fn on_segment(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let tcp = &self.tcp;
        let (ti, si) = match ctx.sockets.find(p) {
            Some(h) => {
                let now = ctx.now;
                ctx.tcp_mut(h).input(now, p);
                self.stream_at[ctx.sockets.tag(h) as usize]
            }
            // the new connection has answered this SYN already (see sink.rs)
            None => {
                let Some(ti) = self.current else { return };
                let t = &mut self.tests[ti];
                let full = t.streams.len() as u32 >= t.expected_streams;
                if !is_syn(p) || p.src != t.client_ip || t.protocol != Protocol::Tcp || full {
                    return;
                }
                let rng = ComponentRng::new(self.rng.next_u64(), "iperf3/conn");
                let mut cfg = tcp.clone();
                if let Some((w, _, _)) = t.window {
                    cfg.sndbuf = Some(w);
                    cfg.rcvbuf = Some(w);
                }
                if let Some(rate) = t.max_pacing_rate {
                    cfg.max_pacing_rate = rate;
                }
                // iperf3's listener is a dual-stack AF_INET6 socket
                let Some(sock) = ctx.accept(cfg, p, rng, true) else {
                    return;
                };
                t.streams.push(
                    if t.reverse {
                        Stream::Send(SendStream::new(sock, t.blksize))
                    } else {
                        Stream::Recv(RecvStream::new(sock, t.blksize))
                    }
                    .expect_cookie(),
                );
                let at = (ti, t.streams.len() - 1);
                ctx.sockets.set_tag(sock, self.stream_at.len() as u32);
                self.stream_at.push(at);
                at
            }
        };
        let running = self.current == Some(ti);
        let t = &mut self.tests[ti];
        let counting = running && t.started.is_some();
        t.streams[si].service(ctx, counting, None, 0);
        t.note_data_arrived(counting);
        if running {
            self.check_streams_ready(ctx, ti);
        }
    }

    /// Once every stream is connected and its cookie read, the server sets
    /// TEST_START after its set-up work (the host's `app_setup`).
    fn check_streams_ready(&mut self, ctx: &mut AppCtx, ti: usize) {
        let t = &mut self.tests[ti];
        let ready = t.started.is_none()
            && t.start_at.is_none()
            && t.streams.len() as u32 == t.expected_streams
            && t.streams.iter().all(|st| {
                st.cookie_read() && ctx.tcp(st.sock()).ep.state() == TcpState::Established
            });
        if !ready {
            return;
        }
        match ctx.setup_delay() {
            SimDuration::ZERO => self.start_test(ctx, ti),
            setup => t.start_at = Some(ctx.now + setup),
        }
    }

    /// TEST_START (and TEST_RUNNING, which the same message stands for):
    /// the server's clock starts.
    fn start_test(&mut self, ctx: &mut AppCtx, ti: usize) {
        let t = &mut self.tests[ti];
        t.start_at = None;
        t.started = Some(ctx.now);
        t.omit_end = (t.omit > SimDuration::ZERO).then(|| ctx.now + t.omit);
        t.ticker = Some(Ticker::new(self.interval, ctx.now));
        t.start_retry = Some(ctx.now + RUNNING_RETRY);
        t.send_test_start(ctx, self.port);
        // a sending (-R) server writes as soon as it is TEST_RUNNING
        // (iperf_run_server), not on the next packet to arrive
        if t.reverse {
            for st in t.streams.iter_mut() {
                st.service(ctx, true, None, 0);
            }
        }
    }

    fn reply(ctx: &mut AppCtx, p: &Packet, msg: u8, conn: u32, bytes: u32) {
        ctx.send_control(p.src, p.dst_port, p.src_port, msg, conn, bytes);
    }

    fn on_control(&mut self, ctx: &mut AppCtx, p: &Packet, m: u8, conn: u32) {
        let same = |t: &ServerTest| t.conn == conn;
        match m {
            msg::CONNECT => match self.current.or(self.exchanging) {
                None if self.tests.last().is_some_and(same) => {} // stale retransmission
                None => {
                    let shared = ctx.iperf.tests.get_mut(conn as usize);
                    let omit = shared.as_ref().map_or(SimDuration::ZERO, |t| t.omit);
                    let expected_streams = shared.as_ref().map_or(0, |t| t.streams);
                    let (reverse, blksize, max_pacing_rate) =
                        shared.as_ref().map_or((false, 0, None), |t| {
                            (t.reverse, t.blksize, t.max_pacing_rate)
                        });
                    // iperf_tcp_listen: SO_RCVBUF/SO_SNDBUF of the client's -w on the
                    // listener, inherited by the accepted data sockets; the kernel
                    // doubles the request, capped at twice net.core.[rw]mem_max
                    let window = shared.as_ref().and_then(|t| t.window).map(|w| {
                        let cfg = &self.tcp;
                        (
                            w,
                            (2 * w).min(2 * cfg.wmem_max),
                            (2 * w).min(2 * cfg.rmem_max),
                        )
                    });
                    if let Some(shared) = shared {
                        shared.server_congestion = self.tcp.congestion.clone();
                    }
                    self.tests.push(ServerTest {
                        conn,
                        client_ip: p.src,
                        client_ctrl_port: p.src_port,
                        client_data_port: None,
                        local_ip: p.dst,
                        omit,
                        started: None,
                        omit_end: None,
                        ticker: None,
                        counters: RecvCounters::default(),
                        base: RecvCounters::default(),
                        at_last_tick: RecvCounters::default(),
                        intervals: Vec::new(),
                        totals: None,
                        protocol: if expected_streams > 0 {
                            Protocol::Tcp
                        } else {
                            Protocol::Udp
                        },
                        streams: Vec::new(),
                        expected_streams,
                        reverse,
                        blksize,
                        window,
                        max_pacing_rate,
                        start_retry: None,
                        start_at: None,
                    });
                    self.current = Some(self.tests.len() - 1);
                    Self::reply(ctx, p, msg::CREATE_STREAMS, conn, STATE_BYTES);
                }
                Some(i) if same(&self.tests[i]) => {
                    Self::reply(ctx, p, msg::CREATE_STREAMS, conn, STATE_BYTES)
                }
                Some(_) => Self::reply(ctx, p, msg::ACCESS_DENIED, conn, STATE_BYTES),
            },
            // iperf_server_api.c: TEST_END closes the test and answers
            // EXCHANGE_RESULTS; the server then reads the client's results
            // before it sends its own (`iperf_exchange_results`), and is busy
            // until then
            msg::TEST_END => {
                if let Some(i) = self.current.filter(|&i| same(&self.tests[i])) {
                    self.finish_test(ctx, i);
                    // ... and closes every data socket: one still holding
                    // unread data is reset at once, the others when the
                    // client's next data reaches them (docs/semantics/tcp.md §3.1)
                    let now = ctx.now;
                    for st in &self.tests[i].streams {
                        let sock = st.sock();
                        ctx.tcp_mut(sock).ep.close(now);
                        ctx.flush(sock, 0);
                    }
                    self.current = None;
                    self.exchanging = Some(i);
                }
                if self.exchanging.is_some_and(|i| same(&self.tests[i])) {
                    Self::reply(ctx, p, msg::EXCHANGE_RESULTS, conn, STATE_BYTES);
                }
            }
            msg::CLIENT_RESULTS => {
                if self.exchanging.is_some_and(|i| same(&self.tests[i])) {
                    Self::reply(ctx, p, msg::RESULTS, conn, RESULTS_BYTES);
                    self.exchanging = None;
                    if self.one_off {
                        self.stop(ctx);
                    }
                } else if self.tests.iter().any(|t| same(t) && t.totals.is_some()) {
                    Self::reply(ctx, p, msg::RESULTS, conn, RESULTS_BYTES); // our RESULTS was lost
                }
            }
            _ => {}
        }
    }

    fn on_datagram(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let Some(i) = self.current else { return };
        let t = &mut self.tests[i];
        if p.src != t.client_ip {
            return;
        }
        if p.seq == 0 {
            // UDP "connect": answer it and start the test (idempotent on retries).
            t.client_data_port = Some(p.src_port);
            ctx.send_udp(p.src, self.port, p.src_port, UDP_CONNECT_BYTES, 0, 0);
            if t.started.is_none() {
                t.started = Some(ctx.now);
                t.omit_end = (t.omit > SimDuration::ZERO).then(|| ctx.now + t.omit);
                t.ticker = Some(Ticker::new(self.interval, ctx.now));
                // the UDP test's listener (iperf_exchange_parameters), which
                // iperf_udp_accept connects to the client, opening a new
                // unconnected one in its place
                for peer in [Some((p.src, p.src_port)), None] {
                    ctx.sockets.add_view(PortView {
                        port: self.port,
                        owner: ctx.id,
                        kind: PortKind::Udp { peer },
                        v6: true,
                    });
                }
            }
            t.send_test_start(ctx, self.port);
        } else if t.started.is_some() && Some(p.src_port) == t.client_data_port {
            t.counters
                .on_datagram(p.seq, p.udp_payload_len(), p.sent_at, ctx.now);
        }
    }

    fn finish_test(&mut self, ctx: &mut AppCtx, i: usize) {
        let t = &mut self.tests[i];
        let Some(ticker) = t.ticker.as_ref() else {
            // TEST_END before the test started: nothing was measured.
            t.totals = Some(ReceiverTotals {
                start: ctx.now,
                end: ctx.now,
                ..Default::default()
            });
            return;
        };
        let start = ticker.start;
        t.close_interval(ctx.sockets, ctx.now);
        t.start_retry = None;
        // the test's UDP sockets close with it
        ctx.sockets
            .remove_views(ctx.id, self.port, |k| matches!(k, PortKind::Udp { .. }));
        if t.protocol == Protocol::Tcp {
            let bytes: u64 = t.streams.iter().map(Stream::bytes).sum();
            let totals = ReceiverTotals {
                bytes,
                start,
                end: ctx.now,
                ..Default::default()
            };
            t.totals = Some(totals);
            if let Some(shared) = ctx.iperf.tests.get_mut(t.conn as usize) {
                shared.totals = Some(totals);
                shared.stream_totals = t
                    .streams
                    .iter()
                    .map(|st| st.totals(ctx.sockets, start, ctx.now))
                    .collect();
            }
            return;
        }
        let d = t.counters.minus(&t.base);
        let totals = ReceiverTotals {
            bytes: d.bytes,
            packets: d.max_seq,
            received: d.received,
            lost: d.cnt_error,
            out_of_order: d.out_of_order,
            jitter_s: t.counters.jitter_s,
            start,
            end: ctx.now,
        };
        t.totals = Some(totals);
        if let Some(shared) = ctx.iperf.tests.get_mut(t.conn as usize) {
            shared.totals = Some(totals);
        }
    }

    fn stop(&mut self, ctx: &mut AppCtx) {
        self.finished = true;
        self.end = ctx.now;
        ctx.sockets.unbind_all(ctx.id);
    }
}

impl Application for Server {
    const KIND: &'static str = "iperf3_server";
    type Spec = ServerSpec;

    fn new(spec: ServerSpec, mut rng: ComponentRng) -> Result<Server> {
        if spec.interval_ns == 0 {
            return Err(Error::App(
                "iperf3: the reporting interval must be positive".into(),
            ));
        }
        Ok(Server {
            stream_at: Vec::new(),
            port: spec.port,
            one_off: spec.one_off,
            tcp: spec.tcp.config(rng.next_u64(), 0)?,
            rng,
            interval: SimDuration(spec.interval_ns),
            start: SimTime::ZERO,
            end: SimTime::ZERO,
            tests: Vec::new(),
            current: None,
            exchanging: None,
            finished: false,
            interrupted: false,
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        let in_use = |_| {
            Error::App(format!(
                "iperf3: error - unable to start listener for connections: Address already in use (port {})",
                self.port
            ))
        };
        ctx.sockets
            .bind(Proto::Tcp, self.port, ctx.id)
            .map_err(in_use)?;
        ctx.sockets
            .bind(Proto::Udp, self.port, ctx.id)
            .map_err(in_use)?;
        // netannounce: an AF_INET6 socket bound to the wildcard (dual-stack),
        // `listen(s, INT_MAX)`; the UDP socket comes with a UDP test
        ctx.sockets.add_view(PortView {
            port: self.port,
            owner: ctx.id,
            kind: PortKind::Listen {
                backlog: LISTEN_MAX,
            },
            v6: true,
        });
        Ok(())
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        match p.payload {
            Payload::Control { msg, conn } => self.on_control(ctx, p, msg, conn),
            Payload::Data if p.proto == Proto::Udp => self.on_datagram(ctx, p),
            Payload::Tcp(_) => self.on_segment(ctx, p),
            _ => {}
        }
    }

    fn poll_timeout(&self, sockets: &Sockets) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        let streams = || self.tests.iter().flat_map(|t| t.streams.iter());
        let conns = next_timeout(sockets, streams().map(Stream::sock));
        let reads = streams().filter_map(Stream::read_wake).min();
        let test = self.current.map(|i| &self.tests[i]).and_then(|t| {
            let tick = t.ticker.as_ref()?.next_tick;
            [Some(tick), t.omit_end, t.start_retry]
                .into_iter()
                .flatten()
                .min()
        });
        let setup = self.current.and_then(|i| self.tests[i].start_at);
        [conns, reads, test, setup].into_iter().flatten().min()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        let current = self.current;
        for (ti, t) in self.tests.iter_mut().enumerate() {
            let counting = current == Some(ti) && t.started.is_some();
            for st in &mut t.streams {
                let (h, now) = (st.sock(), ctx.now);
                if ctx.tcp(h).ep.poll_timeout().is_some_and(|x| x <= now) {
                    ctx.tcp_mut(h).ep.handle_timeout(now);
                    st.service(ctx, counting, None, 0);
                }
                st.handle_read_wake(ctx, counting);
            }
            t.note_data_arrived(counting);
        }
        let Some(i) = current else { return };
        if self.tests[i].start_at.is_some_and(|at| at <= ctx.now) {
            self.start_test(ctx, i);
        } else {
            self.check_streams_ready(ctx, i);
        }
        let t = &mut self.tests[i];
        if t.start_retry.is_some_and(|r| r <= ctx.now) {
            t.send_test_start(ctx, self.port);
            t.start_retry = Some(ctx.now + RUNNING_RETRY);
        }
        if t.omit_end == Some(ctx.now) {
            // iperf_reset_stats: counters restart, the clock restarts at 0.
            t.close_interval(ctx.sockets, ctx.now);
            for st in &mut t.streams {
                st.reset(ctx.sockets);
            }
            t.base = t.counters;
            t.base.jitter_s = 0.0;
            t.counters.jitter_s = 0.0;
            t.at_last_tick = t.counters;
            t.ticker = Some(Ticker::new(self.interval, ctx.now));
            t.omit_end = None;
            return;
        }
        if t.ticker.as_ref().is_some_and(|k| ctx.now >= k.next_tick) {
            t.close_interval(ctx.sockets, ctx.now);
        }
    }

    /// TCP Small Queues (`Sockets::tsq_release`): a sending (`-R`) stream
    /// whose handler ran sends what it may now.
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for h in ctx.tsq_release(releases) {
            let (ti, si) = self.stream_at[ctx.sockets.tag(h) as usize];
            let counting = self.current == Some(ti) && self.tests[ti].started.is_some();
            self.tests[ti].streams[si].service(ctx, counting, None, 0);
        }
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.interrupted = true;
            // iperf3 runs a last stats callback before printing on SIGINT.
            if let Some(i) = self.current.take() {
                self.finish_test(ctx, i);
            }
            self.stop(ctx);
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn result(&self, r: &ResultCtx) -> serde_json::Value {
        json!({
            "port": self.port,
            "one_off": self.one_off,
            "interval_ns": self.interval.as_nanos(),
            "start_ns": self.start.as_nanos(),
            "end_ns": self.end.as_nanos(),
            "interrupted": self.interrupted,
            "tests": self.tests.iter().map(|t| t.to_json(r)).collect::<Vec<_>>(),
        })
    }

    /// Settings for the data connections accepted from now on (the seed of
    /// their random draws is kept).
    fn set_listener_tcp(&mut self, spec: &TcpSpec) -> Result<()> {
        self.tcp = spec.config(self.tcp.seed, 0)?;
        Ok(())
    }

    fn listener_tcp(&self) -> Option<ListenerTcp> {
        Some(ListenerTcp::of(&self.tcp))
    }
}
