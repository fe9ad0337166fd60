//! The iperf3 client (src/iperf_client_api.c): connects, sends its
//! parameters, runs the UDP or TCP test and collects the server's results.

use super::control::{
    msg, ReceiverTotals, SharedTest, CONNECT_BYTES, RESULTS_BYTES, RUNNING_RETRY, SETUP_RETRY,
    STATE_BYTES,
};
use super::tcp::{records_json, RecvStream, SendStream, Stream};
use super::throttle::{PacingSpec, Throttle};
use super::udp::UDP_CONNECT_BYTES;
use super::{Protocol, Ticker};
use crate::app::sockets::{PortKind, PortView};
use crate::app::tcp::{next_timeout, TcpSpec};
use crate::app::{parse_addr, AppCtx, Application, ResultCtx, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Payload, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::TcpConfig;
use crate::time::{SimDuration, SimTime, NS_PER_SEC};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientSpec {
    pub dst: String,
    pub port: u16,
    pub protocol: Protocol,
    pub rate_bps: u64,
    pub blksize: u32,
    /// test length; 0 = no time limit (`-t 0`, or `-n BYTES`)
    pub duration_ns: u64,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub omit_ns: u64,
    pub interval_ns: u64,
    #[serde(default)]
    pub tos: u8,
    /// TCP: the server sends and the client receives (`-R`)
    #[serde(default)]
    pub reverse: bool,
    /// TCP: number of parallel streams (`-P`) and socket settings
    #[serde(default = "one")]
    pub parallel: u32,
    #[serde(default)]
    pub tcp: TcpSpec,
    /// TCP: `-w` in bytes (iperf3's `socket_bufsize`; 0 = not given). The
    /// client sets it as SO_SNDBUF/SO_RCVBUF and sends it to the server,
    /// which sets it on its data sockets. When absent, equal `tcp.sndbuf`
    /// and `tcp.rcvbuf` requests are taken as `-w` (older callers).
    #[serde(default)]
    pub window: Option<u32>,
    /// UDP: iperf3's pacing options and the host-side timing of its loop
    #[serde(default)]
    pub pacing: PacingSpec,
}

fn one() -> u32 {
    1
}

/// One interval of the client: what it sent over all its streams.
#[derive(Serialize)]
struct ClientInterval {
    start_ns: u64,
    end_ns: u64,
    bytes: u64,
    packets: u64,
    omitted: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientState {
    Connecting,
    Starting,
    Running,
    /// TEST_END sent, waiting for the server's EXCHANGE_RESULTS
    Ending,
    /// the client's results sent, waiting for the server's
    Exchanging,
    Done,
}

pub struct Client {
    spec: ClientSpec,
    dst: Ipv4,
    pub(super) cookie: String,
    state: ClientState,
    conn: u32,
    pub(super) ctrl_port: u16,
    data_port: u16,
    local_ip: Ipv4,
    /// TEST_START arrival; `ticker.start` moves to the omit end
    test_start: SimTime,
    omit_end: Option<SimTime>,
    stop_at: SimTime,
    ticker: Option<Ticker>,
    retry_at: Option<SimTime>,
    /// UDP: the send throttle, from TEST_START to the end of the test
    throttle: Option<Throttle>,
    /// UDP: the throttle's random stream (wake-up instants)
    pacing_rng: Option<ComponentRng>,
    /// datagrams sent since TEST_START (the sequence number)
    sent: u64,
    /// counters since the (post-omit) start and at the last tick
    packets: u64,
    bytes: u64,
    tick_packets: u64,
    tick_bytes: u64,
    intervals: Vec<ClientInterval>,
    sender_end: SimTime,
    error: Option<String>,
    finished: bool,
    interrupted: bool,
    /// TCP: socket settings, the data streams, and their random streams
    tcp: Option<TcpConfig>,
    /// (a stream's socket is tagged with its position here)
    streams: Vec<Stream>,
    rng: ComponentRng,
}

impl Client {
    /// Send a control message and arm its retransmission timer.
    fn send_ctrl(&mut self, ctx: &mut AppCtx, m: u8, bytes: u32, retry: SimDuration) {
        ctx.send_control(
            self.dst,
            self.ctrl_port,
            self.spec.port,
            m,
            self.conn,
            bytes,
        );
        self.retry_at = Some(ctx.now + retry);
    }

    fn send_connect(&mut self, ctx: &mut AppCtx) {
        self.send_ctrl(ctx, msg::CONNECT, CONNECT_BYTES, SETUP_RETRY);
    }

    fn send_udp_connect(&mut self, ctx: &mut AppCtx) {
        ctx.send_udp(
            self.dst,
            self.data_port,
            self.spec.port,
            UDP_CONNECT_BYTES,
            0,
            0,
        );
        self.retry_at = Some(ctx.now + SETUP_RETRY);
    }

    fn send_test_end(&mut self, ctx: &mut AppCtx) {
        self.send_ctrl(ctx, msg::TEST_END, STATE_BYTES, RUNNING_RETRY);
    }

    /// `iperf_exchange_results`: the client's results go first.
    fn send_results(&mut self, ctx: &mut AppCtx) {
        self.send_ctrl(ctx, msg::CLIENT_RESULTS, RESULTS_BYTES, RUNNING_RETRY);
    }

    /// A message of the control connection, by the state the client is in.
    fn on_control(&mut self, ctx: &mut AppCtx, m: u8) {
        match (self.state, m) {
            (ClientState::Connecting, msg::CREATE_STREAMS) => {
                self.state = ClientState::Starting;
                match &self.tcp {
                    None => self.send_udp_connect(ctx),
                    Some(cfg) => {
                        // iperf_create_streams: one connection per stream
                        self.retry_at = None;
                        for _ in 0..self.spec.parallel {
                            let Ok(port) = ctx.sockets.bind_ephemeral(Proto::Tcp, ctx.id) else {
                                self.fail(
                                    ctx,
                                    "unable to connect stream: Cannot assign requested address",
                                );
                                return;
                            };
                            let rng = ComponentRng::new(self.rng.next_u64(), "iperf3/stream");
                            let remote = (self.dst, self.spec.port);
                            let sock = ctx.connect(cfg.clone(), port, remote, rng);
                            ctx.flush(sock, self.spec.tos);
                            ctx.sockets.set_tag(sock, self.streams.len() as u32);
                            let blksize = self.spec.blksize;
                            self.streams.push(
                                if self.spec.reverse {
                                    Stream::Recv(RecvStream::new(sock, blksize))
                                } else {
                                    Stream::Send(SendStream::new(sock, blksize))
                                }
                                .owe_cookie(),
                            );
                        }
                    }
                }
            }
            (ClientState::Connecting, msg::ACCESS_DENIED) => {
                self.fail(ctx, "the server is busy running a test. try again later");
            }
            (ClientState::Starting, msg::TEST_START) => self.begin(ctx),
            (ClientState::Ending, msg::EXCHANGE_RESULTS) => {
                self.state = ClientState::Exchanging;
                self.send_results(ctx);
            }
            (ClientState::Exchanging, msg::RESULTS) => {
                self.state = ClientState::Done;
                self.retry_at = None;
                self.stop(ctx);
            }
            _ => {}
        }
    }

    fn begin(&mut self, ctx: &mut AppCtx) {
        self.state = ClientState::Running;
        self.retry_at = None;
        self.test_start = ctx.now;
        let omit = SimDuration(self.spec.omit_ns);
        self.omit_end = (omit > SimDuration::ZERO).then(|| ctx.now + omit);
        self.stop_at = match self.spec.duration_ns {
            0 => SimTime::MAX,
            d => ctx.now + omit + SimDuration(d),
        };
        self.ticker = Some(Ticker::new(SimDuration(self.spec.interval_ns), ctx.now));
        if let Some(mut rng) = self.pacing_rng.take() {
            if self.tcp.is_none() {
                self.throttle = Some(Throttle::new(
                    &self.spec.pacing,
                    self.spec.rate_bps,
                    self.spec.blksize,
                    ctx.now,
                    rng,
                ));
            } else {
                let (pacing, rate) = (&self.spec.pacing, self.spec.rate_bps);
                for st in &mut self.streams {
                    st.throttle(pacing, rate, self.spec.blksize, ctx.now, &mut rng);
                }
            }
        }
        self.pump(ctx);
    }

    /// TCP: keep every stream's socket full while the test runs (`-n` caps
    /// the bytes written over all streams), and send what the sockets emit.
    fn pump(&mut self, ctx: &mut AppCtx) {
        let active = self.state == ClientState::Running && ctx.now < self.stop_at;
        let mut written: u64 = self.streams.iter().map(Stream::bytes).sum();
        for st in &mut self.streams {
            let before = st.bytes();
            let budget = self.spec.bytes.map(|b| b.saturating_sub(written - before));
            st.service(ctx, active, budget, self.spec.tos);
            written += st.bytes() - before;
        }
        if self.tcp.is_some()
            && !self.spec.reverse
            && self.spec.bytes.is_some_and(|b| written >= b)
            && self.stop_at > ctx.now
        {
            self.stop_at = ctx.now; // -n reached: the test ends at the next timer
        }
    }

    fn close_interval(&mut self, sockets: &Sockets, end: SimTime) {
        let Some(t) = self.ticker.as_mut() else {
            return;
        };
        let omitted = self.omit_end.is_some_and(|e| end <= e);
        for st in &mut self.streams {
            st.close_interval(sockets, t.last_tick, end, omitted);
        }
        self.intervals.push(ClientInterval {
            start_ns: t.last_tick.as_nanos(),
            end_ns: end.as_nanos(),
            bytes: self.bytes - self.tick_bytes,
            packets: self.packets - self.tick_packets,
            omitted,
        });
        t.last_tick = end;
        t.next_tick = end + t.interval;
        self.tick_bytes = self.bytes;
        self.tick_packets = self.packets;
    }

    fn fail(&mut self, ctx: &mut AppCtx, why: &str) {
        self.error = Some(why.to_string());
        self.state = ClientState::Done;
        self.retry_at = None;
        self.stop(ctx);
    }

    fn stop(&mut self, ctx: &mut AppCtx) {
        self.finished = true;
        ctx.sockets.unbind_all(ctx.id);
    }

    fn tcp_result(
        &self,
        cfg: &TcpConfig,
        sockets: &Sockets,
        shared: Option<&SharedTest>,
        start: SimTime,
    ) -> serde_json::Value {
        // the server's side of each stream, from the results exchange
        let peer = shared
            .map(|t| t.stream_totals.as_slice())
            .unwrap_or_default();
        let streams: Vec<_> = self
            .streams
            .iter()
            .enumerate()
            .map(|(i, st)| {
                let mine = Some(st.totals(sockets, start, self.sender_end));
                let theirs = peer.get(i).cloned();
                let (sender, receiver) = if self.spec.reverse {
                    (theirs, mine)
                } else {
                    (mine, theirs)
                };
                json!({"local_port": sockets.tcp(st.sock()).local_port, "intervals": st.intervals(),
                       "sender": sender, "receiver": receiver})
            })
            .collect();
        let server_cc = shared.map(|t| t.server_congestion.clone());
        let (sender_cc, receiver_cc) = if self.spec.reverse {
            (server_cc, Some(cfg.congestion.clone()))
        } else {
            (Some(cfg.congestion.clone()), server_cc)
        };
        // SO_SNDBUF/SO_RCVBUF right after socket creation: tcp_wmem[1]/tcp_rmem[1],
        // or twice the -w request capped at twice the core maximum
        let sndbuf = cfg
            .sndbuf
            .map_or(cfg.wmem[1], |w| (2 * w).min(2 * cfg.wmem_max));
        let rcvbuf = cfg
            .rcvbuf
            .map_or(cfg.rmem[1], |w| (2 * w).min(2 * cfg.rmem_max));
        json!({
            "error": self.error,
            "interrupted": self.interrupted,
            "protocol": "tcp",
            "reverse": self.spec.reverse,
            "local_ip": self.local_ip.to_string(),
            "ctrl_port": self.ctrl_port,
            "remote_ip": self.dst.to_string(),
            "remote_port": self.spec.port,
            "cookie": self.cookie,
            "tcp_mss_default": cfg.mss - if cfg.timestamps { 12 } else { 0 },
            "sndbuf_actual": sndbuf,
            "rcvbuf_actual": rcvbuf,
            "sender_congestion": sender_cc,
            "receiver_congestion": receiver_cc,
            "test_start_ns": self.test_start.as_nanos(),
            "start_ns": start.as_nanos(),
            "streams": streams,
        })
    }
}

impl Application for Client {
    const KIND: &'static str = "iperf3_client";
    type Spec = ClientSpec;

    fn new(spec: ClientSpec, mut rng: ComponentRng) -> Result<Client> {
        let udp = spec.protocol == Protocol::Udp;
        if udp && spec.rate_bps == 0 {
            return Err(Error::App(
                "iperf3: the UDP target bitrate must be positive".into(),
            ));
        }
        if !udp && !(1..=128).contains(&spec.parallel) {
            return Err(Error::App(format!(
                "iperf3: {} parallel streams outside 1..128",
                spec.parallel
            )));
        }
        if !udp && spec.blksize == 0 {
            return Err(Error::App("iperf3: the block size must be positive".into()));
        }
        if udp && (spec.blksize < 16 || spec.blksize > 65507) {
            return Err(Error::App(format!(
                "iperf3: block size {} outside 16..65507 for UDP",
                spec.blksize
            )));
        }
        if spec.interval_ns == 0 {
            return Err(Error::App(
                "iperf3: the reporting interval must be positive".into(),
            ));
        }
        if udp && spec.pacing.burst > 1000 {
            return Err(Error::App(format!(
                "iperf3: burst {} outside 1..1000",
                spec.pacing.burst
            )));
        }
        // make_cookie: 36 characters from the base32 alphabet [a-z2-7].
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";
        let cookie = (0..36)
            .map(|_| ALPHABET[(rng.next_u32() % 32) as usize] as char)
            .collect();
        let tcp = match spec.protocol {
            Protocol::Tcp => {
                let mut cfg = spec.tcp.config(rng.next_u64(), spec.tos)?;
                if let Some(w) = spec.window.filter(|&w| w > 0) {
                    cfg.sndbuf = Some(w);
                    cfg.rcvbuf = Some(w);
                }
                Some(cfg)
            }
            Protocol::Udp => None,
        };
        let throttled_tcp = !udp && spec.rate_bps > 0;
        if throttled_tcp && (spec.reverse || spec.pacing.burst > 0) {
            return Err(Error::App(
                "iperf3 -b over TCP with -R or a /BURST is not supported yet".into(),
            ));
        }
        // drawn after the cookie and only with -b, so unthrottled TCP streams keep their seeds
        let pacing_rng =
            (udp || throttled_tcp).then(|| ComponentRng::new(rng.next_u64(), "iperf3/pacing"));
        Ok(Client {
            tcp,
            streams: Vec::new(),
            rng,
            dst: parse_addr("iperf3 server", &spec.dst)?,
            spec,
            cookie,
            state: ClientState::Connecting,
            conn: 0,
            ctrl_port: 0,
            data_port: 0,
            local_ip: Ipv4::UNSPECIFIED,
            test_start: SimTime::ZERO,
            omit_end: None,
            stop_at: SimTime::MAX,
            ticker: None,
            retry_at: None,
            throttle: None,
            pacing_rng,
            sent: 0,
            packets: 0,
            bytes: 0,
            tick_packets: 0,
            tick_bytes: 0,
            intervals: Vec::new(),
            sender_end: SimTime::ZERO,
            error: None,
            finished: false,
            interrupted: false,
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.local_ip = ctx.addr;
        self.ctrl_port = ctx.sockets.bind_ephemeral(Proto::Tcp, ctx.id)?;
        let streams = match self.spec.protocol {
            Protocol::Udp => {
                self.data_port =
                    ctx.sockets
                        .bind_near(Proto::Udp, self.ctrl_port.saturating_add(2), ctx.id);
                // iperf_udp_connect: the data socket is connected to the server
                ctx.sockets.add_view(PortView {
                    port: self.data_port,
                    owner: ctx.id,
                    kind: PortKind::Udp {
                        peer: Some((self.dst, self.spec.port)),
                    },
                    v6: false,
                });
                0
            }
            Protocol::Tcp => self.spec.parallel,
        };
        self.conn = ctx.iperf.tests.len() as u32;
        // iperf3's parameter JSON, as the server's `-J` output echoes it
        let params = json!({
            "protocol": if streams > 0 { "tcp" } else { "udp" }, "num_streams": streams.max(1),
            "blksize": self.spec.blksize,
            "omit": self.spec.omit_ns / NS_PER_SEC, "duration": self.spec.duration_ns / NS_PER_SEC,
            "bytes": self.spec.bytes.unwrap_or(0), "blocks": 0, "tos": self.spec.tos,
            "rate": self.spec.rate_bps, "reverse": self.spec.reverse,
        });
        // iperf3 sends "window" only when -w was given (send_parameters)
        let window = match (self.spec.window, &self.tcp) {
            (_, None) => None,
            (Some(w), _) => Some(w).filter(|&w| w > 0),
            (None, Some(c)) => c.sndbuf.filter(|&s| c.rcvbuf == Some(s)),
        };
        let mut params = params;
        if let Some(w) = window {
            params["window"] = json!(w);
        }
        ctx.iperf.tests.push(SharedTest {
            omit: SimDuration(self.spec.omit_ns),
            params,
            cookie: self.cookie.clone(),
            totals: None,
            peer: None,
            stream_totals: Vec::new(),
            streams,
            server_congestion: String::new(),
            reverse: self.spec.reverse,
            blksize: self.spec.blksize,
            window,
            max_pacing_rate: (self.tcp.as_ref())
                .filter(|c| c.requests_pacing())
                .map(|c| c.max_pacing_rate),
        });
        self.send_connect(ctx);
        Ok(())
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        match p.payload {
            Payload::Reset { .. } if self.state == ClientState::Connecting => {
                self.fail(ctx, "unable to connect to server: Connection refused");
            }
            Payload::Tcp(_) => {
                if let Some(h) = ctx.sockets.find(p) {
                    let now = ctx.now;
                    ctx.tcp_mut(h).input(now, p);
                    let tos = self.spec.tos;
                    self.streams[ctx.sockets.tag(h) as usize].write_cookie_once_connected(ctx, tos);
                }
                self.pump(ctx);
            }
            Payload::Control { msg: m, .. } => self.on_control(ctx, m),
            _ => {}
        }
    }

    fn poll_timeout(&self, sockets: &Sockets) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        let mut next = [
            self.retry_at,
            next_timeout(sockets, self.streams.iter().map(Stream::sock)),
            self.streams.iter().filter_map(Stream::read_wake).min(),
        ]
        .into_iter()
        .flatten()
        .min();
        if self.state == ClientState::Running {
            let tick = self.ticker.as_ref().map(|t| t.next_tick);
            let send = self.throttle.as_ref().and_then(Throttle::poll_timeout);
            let stream_wake = self.streams.iter().filter_map(Stream::throttle_wake).min();
            for t in [send, stream_wake, tick, self.omit_end, Some(self.stop_at)]
                .into_iter()
                .flatten()
            {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        let now = ctx.now;
        let reading = self.state == ClientState::Running && now < self.stop_at;
        for st in &mut self.streams {
            let h = st.sock();
            if ctx.tcp(h).ep.poll_timeout().is_some_and(|t| t <= now) {
                ctx.tcp_mut(h).ep.handle_timeout(now);
            }
            st.handle_read_wake(ctx, reading);
        }
        if self.retry_at.is_some_and(|t| now >= t) {
            match self.state {
                ClientState::Connecting => self.send_connect(ctx),
                ClientState::Starting => self.send_udp_connect(ctx),
                ClientState::Ending => self.send_test_end(ctx),
                ClientState::Exchanging => self.send_results(ctx),
                _ => self.retry_at = None,
            }
        }
        if self.state != ClientState::Running {
            self.pump(ctx);
            return;
        }
        // Order within one instant: send what is due, then close the stats.
        if now < self.stop_at {
            if let Some(th) = self.throttle.as_mut() {
                th.handle_wake(now, self.sent);
            }
            for st in &mut self.streams {
                st.handle_throttle(now);
            }
        }
        while now < self.stop_at && self.throttle.as_ref().is_some_and(|th| th.send_due(now)) {
            self.sent += 1;
            self.packets += 1;
            self.bytes += self.spec.blksize as u64;
            ctx.send_udp(
                self.dst,
                self.data_port,
                self.spec.port,
                self.spec.blksize,
                self.spec.tos,
                self.sent,
            );
            if self.spec.bytes.is_some_and(|b| self.bytes >= b) {
                self.stop_at = now;
            }
            if let Some(th) = self.throttle.as_mut() {
                th.on_sent(now, self.sent);
            }
        }
        if self.omit_end.is_some_and(|e| now >= e) {
            self.close_interval(ctx.sockets, now);
            self.packets = 0;
            self.bytes = 0;
            self.tick_packets = 0;
            self.tick_bytes = 0;
            for st in &mut self.streams {
                st.reset(ctx.sockets);
            }
            self.ticker = Some(Ticker::new(SimDuration(self.spec.interval_ns), now));
            self.omit_end = None;
        }
        if now >= self.stop_at {
            self.close_interval(ctx.sockets, now);
            self.sender_end = now;
            let start = self.ticker.as_ref().map_or(self.test_start, |t| t.start);
            if let Some(shared) = ctx.iperf.tests.get_mut(self.conn as usize) {
                shared.peer = Some(json!({
                    "bytes": self.bytes, "packets": self.packets,
                    "start_ns": start.as_nanos(), "end_ns": now.as_nanos(),
                }));
            }
            self.throttle = None;
            self.state = ClientState::Ending;
            self.send_test_end(ctx);
        } else if self.ticker.as_ref().is_some_and(|t| now >= t.next_tick) {
            self.close_interval(ctx.sockets, now);
        }
        self.pump(ctx);
    }

    /// TCP Small Queues (`Sockets::tsq_release`).
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        if !ctx.tsq_release(releases).is_empty() {
            self.pump(ctx);
        }
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.interrupted = true;
            if self.state == ClientState::Running {
                self.close_interval(ctx.sockets, ctx.now);
                self.sender_end = ctx.now;
            }
            self.stop(ctx);
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn result(&self, r: &ResultCtx) -> serde_json::Value {
        let start = self.ticker.as_ref().map_or(self.test_start, |t| t.start);
        let iperf = r.iperf;
        if let Some(cfg) = &self.tcp {
            return self.tcp_result(cfg, r.sockets, iperf.tests.get(self.conn as usize), start);
        }
        let receiver = iperf
            .tests
            .get(self.conn as usize)
            .and_then(|t| t.totals)
            .map(ReceiverTotals::to_json);
        json!({
            "error": self.error,
            "interrupted": self.interrupted,
            "local_ip": self.local_ip.to_string(),
            "local_port": self.data_port,
            "ctrl_port": self.ctrl_port,
            "remote_ip": self.dst.to_string(),
            "remote_port": self.spec.port,
            "cookie": self.cookie,
            "test_start_ns": self.test_start.as_nanos(),
            "start_ns": start.as_nanos(),
            "intervals": records_json(&self.intervals),
            "sender": {"bytes": self.bytes, "packets": self.packets, "end_ns": self.sender_end.as_nanos()},
            "receiver": receiver,
        })
    }

    fn destination(&self) -> Option<Ipv4> {
        Some(self.dst)
    }
}
