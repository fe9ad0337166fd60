//! iperf3 client and server, UDP tests (TCP data streams arrive with the TCP
//! model). Behaviour follows iperf3 3.7 `src/iperf_api.c`, `src/iperf_udp.c`
//! as summarised in docs/semantics/formats.md §1.2 and §1.7:
//!
//! * the control connection (TCP port 5201 by default) is modelled as a
//!   reliable message exchange: CONNECT (cookie + parameters) →
//!   CREATE_STREAMS → the client's 4-byte UDP "connect" datagram and the
//!   server's 4-byte answer (both TOS 0, sent before `IP_TOS` is applied) →
//!   TEST_START (the server's clock starts when it sends it, the client's
//!   when it arrives) → data → TEST_END → RESULTS. Control messages travel
//!   through the same qdiscs as the data, so `receiver_time` includes the
//!   queueing delay, as on a real path. A lost control message is resent
//!   after a fixed timer (1 s during set-up, 300 ms later) — a stand-in for
//!   TCP's retransmission until the TCP model carries the control connection.
//! * the UDP sender paces as iperf3 does (see [`Throttle`]): a green light,
//!   re-evaluated after each send and on every tick of the `--pacing-timer`,
//!   lets datagrams go while bits sent / elapsed < rate; each carries its
//!   sequence number and send timestamp;
//! * the receiver counts gaps (`cnt_error`), late datagrams
//!   (`out_of_order`, which also cancel one error) and the RFC 3550 jitter
//!   estimate with transit times at iperf3's microsecond resolution.
//!
//! Intervals are recorded at exact `interval` ticks from each side's start;
//! text and JSON are produced by python/bufferlab/formats/iperf3.py.

use super::conns::{tsq_release, ConnKey, ConnLookup};
use super::iperf3_tcp::records_json;
use super::iperf3_tcp::{RecvStream, SendStream, Stream};
use super::tcp::{is_syn, next_timeout, Conn, TcpSpec};
use super::{parse_addr, AppCtx};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Payload, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime, NS_PER_SEC};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde::Serialize;
use serde_json::json;

/// Control-connection message types (our own numbering).
mod msg {
    pub const CONNECT: u8 = 1;
    pub const CREATE_STREAMS: u8 = 2;
    pub const ACCESS_DENIED: u8 = 3;
    pub const TEST_START: u8 = 4;
    pub const TEST_END: u8 = 5;
    pub const RESULTS: u8 = 6;
}

/// Application bytes carried by each control message (cookie + JSON
/// parameters, a JSON results document, or a one-byte state).
const CONNECT_BYTES: u32 = 37 + 4 + 160;
const STATE_BYTES: u32 = 1;
const RESULTS_BYTES: u32 = 4 + 420;
/// iperf3's UDP "connect" datagram and its answer carry 4 bytes.
const UDP_CONNECT_BYTES: u32 = 4;

const SETUP_RETRY: SimDuration = SimDuration::from_secs(1);
const RUNNING_RETRY: SimDuration = SimDuration::from_millis(300);

/// What the client told the server at CONNECT time, and what the server
/// reports back with RESULTS (the JSON exchanged over the control connection).
pub struct SharedTest {
    omit: SimDuration,
    /// the client's parameters (iperf3's parameter JSON) and cookie
    params: serde_json::Value,
    cookie: String,
    totals: Option<ReceiverTotals>,
    /// the client's sender totals, known to the server once TEST_END arrives
    peer: Option<serde_json::Value>,
    /// TCP: the server's per-stream receiver totals, in stream order
    stream_totals: Vec<serde_json::Value>,
    /// TCP: streams the client opens, who sends (`-R`: the server), the
    /// block size, and the server's congestion control
    streams: u32,
    reverse: bool,
    blksize: u32,
    server_congestion: String,
    /// TCP: the client's `-w` (iperf3's `socket_bufsize`, sent as "window"
    /// in the parameter JSON), which the server applies to its data sockets
    window: Option<u32>,
}

/// The side channel standing in for the parameter and result JSON documents.
#[derive(Default)]
pub struct IperfRegistry {
    tests: Vec<SharedTest>,
}

#[derive(Clone, Copy, Debug, Default)]
struct ReceiverTotals {
    bytes: u64,
    packets: u64,
    received: u64,
    lost: u64,
    out_of_order: u64,
    jitter_s: f64,
    start: SimTime,
    end: SimTime,
}

impl ReceiverTotals {
    fn to_json(self) -> serde_json::Value {
        json!({
            "bytes": self.bytes, "packets": self.packets, "received": self.received,
            "lost": self.lost, "out_of_order": self.out_of_order, "jitter_s": self.jitter_s,
            "start_ns": self.start.as_nanos(), "end_ns": self.end.as_nanos(),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Udp,
    Tcp,
}

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

/// How an iperf3 UDP client paces (see [`Throttle`] for the model and its sources).
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PacingSpec {
    /// `--pacing-timer` in µs: the period of the timer that re-checks the
    /// throttle. iperf3 ≥ 3.2 defaults to 1000; 3.0/3.1 have no option and a
    /// fixed 100 000 (0.1 s). Zero or negative: the timer is due on every
    /// pass of the loop (iperf3 accepts any integer).
    pub timer_us: i64,
    /// `-b RATE/BURST`: datagrams sent per pass with the throttle checked
    /// once after the whole burst; 0 = no burst (checked after every datagram)
    pub burst: u32,
    /// one pass of iperf3's client loop that sends one datagram (select,
    /// clock read, sendto), ns: the profile's `iperf3_send_loop_us`
    pub send_ns: u64,
    /// how late a `select` timeout may wake the process: Linux's default
    /// `timer_slack_ns` for normal tasks (50 µs), ns
    pub slack_ns: u64,
}

impl Default for PacingSpec {
    fn default() -> Self {
        PacingSpec {
            timer_us: 1000,
            burst: 0,
            send_ns: 6_000,
            slack_ns: 50_000,
        }
    }
}

/// iperf3's UDP send throttle in simulated time.
///
/// What iperf3 does (same logic in 3.0 through 3.12; read in `src/iperf_api.c`
/// `iperf_send`, `iperf_check_throttle`, `send_timer_proc`,
/// `iperf_create_send_timers`, `src/iperf_client_api.c` `iperf_run_client`
/// and `src/timer.c`):
///
/// * each stream has a green light, on at TEST_START, when `start_time_fixed`
///   is taken and a periodic timer of `pacing_timer` µs is created (expiries
///   at start + k·period, rescheduled by adding the period, never drifting);
/// * the single-threaded client loop `select`s on the sockets whose light is
///   green and on the next timer expiry, then calls `iperf_send` and runs the
///   due timers. A UDP socket is always writable, so while the light is green
///   the loop spins: one datagram per pass;
/// * the throttle: light := bytes_sent·8 / (now − start) < rate. Without a
///   burst it is evaluated after every datagram (with `now` read before the
///   send), and on every timer expiry; with `-b RATE/N` each pass sends N
///   datagrams and the light is evaluated once after them (and on expiries);
/// * so a sender below its rate sends the next datagram on the first timer
///   expiry after its CBR instant, and a sender that fell behind (a rate
///   above one datagram per period) sends back to back until caught up.
///
/// Host timing, the part the source leaves to the machine: a pass of the loop
/// takes `send_ns` (a profile constant; single-stream iperf3 UDP tops out
/// near 2 Gbit/s of 1448-byte datagrams, about 6 µs a datagram, e.g.
/// esnet/iperf issues #773 and #828), and a wake-up from `select` lands
/// uniformly in `[expiry, expiry + slack]` — Linux lets a normal task's
/// hrtimer fire anywhere in its slack window (`select_estimate_accuracy` in
/// `fs/select.c`, `timer_slack_ns` = 50 µs), drawn from this client's own
/// random stream. When the timer period is shorter than a pass the timer is
/// always due and the loop never sleeps: expiries are then the passes
/// themselves (period = `send_ns`, no slack). Not modelled: iperf_time's
/// 1 µs resolution, socket-buffer blocking, other processes' CPU use.
///
/// Expiries that cannot turn the light green (those ending before the CBR
/// instant even with the whole slack) are skipped without being scheduled:
/// the light is a pure function of the instant, so this changes nothing but
/// the event count.
struct Throttle {
    rate_bps: u64,
    /// bits per datagram (the UDP payload, as iperf3 counts `bytes_sent`)
    bits: u64,
    burst: u32,
    period: SimDuration,
    slack: SimDuration,
    pass: SimDuration,
    /// `start_time_fixed`, also the timer's origin
    start: SimTime,
    /// the next send pass while the light is green
    next_send: Option<SimTime>,
    /// datagrams still to go in the current burst
    burst_left: u32,
    /// index of the timer expiry `wake` belongs to
    tick: u64,
    /// the wake-up for expiry `tick` while the light is red
    wake: Option<SimTime>,
    /// end of the loop's last activity: a wake-up cannot precede it
    busy_until: SimTime,
    rng: ComponentRng,
}

impl Throttle {
    fn new(
        spec: &PacingSpec,
        rate_bps: u64,
        blksize: u32,
        start: SimTime,
        rng: ComponentRng,
    ) -> Self {
        let pass = SimDuration(spec.send_ns);
        let timer = SimDuration(spec.timer_us.max(0) as u64 * 1000);
        // a timer shorter than a pass is always due: the loop polls, never sleeps
        let (period, slack) = if timer < pass || timer == SimDuration::ZERO {
            (pass, SimDuration::ZERO)
        } else {
            (timer, SimDuration(spec.slack_ns))
        };
        Throttle {
            rate_bps,
            bits: blksize as u64 * 8,
            burst: spec.burst,
            period: SimDuration(period.as_nanos().max(1)),
            slack,
            pass,
            start,
            // iperf_create_send_timers: the light starts green
            next_send: Some(start),
            burst_left: spec.burst.max(1),
            tick: 0,
            wake: None,
            busy_until: start,
            rng,
        }
    }

    fn poll_timeout(&self) -> Option<SimTime> {
        self.next_send.or(self.wake)
    }

    /// iperf_check_throttle at `now` after `sent` datagrams: the light is
    /// green iff sent·bits / elapsed < rate (at elapsed 0 the quotient is
    /// infinite: red).
    fn green_at(&self, now: SimTime, sent: u64) -> bool {
        let elapsed = (now - self.start).as_nanos() as u128;
        elapsed > 0
            && (sent as u128 * self.bits as u128 * NS_PER_SEC as u128)
                < self.rate_bps as u128 * elapsed
    }

    /// Is a send pass due at `now`?
    fn send_due(&self, now: SimTime) -> bool {
        self.next_send.is_some_and(|t| t <= now)
    }

    /// A datagram left at `now`, the `sent`-th since the start.
    fn on_sent(&mut self, now: SimTime, sent: u64) {
        if self.burst == 0 {
            // iperf_send: checked after each datagram with the clock read before it
            if self.green_at(now, sent) {
                self.next_send = Some(now + self.pass);
            } else {
                self.go_red(now + self.pass, sent);
            }
            return;
        }
        self.burst_left -= 1;
        if self.burst_left > 0 {
            self.next_send = Some(now + self.pass);
            return;
        }
        // the whole burst is out: one check, with the clock read after it
        let after = now + self.pass;
        if self.green_at(after, sent) {
            self.burst_left = self.burst;
            self.next_send = Some(after);
        } else {
            self.go_red(after, sent);
        }
    }

    /// The light turned red; the loop is busy until `busy`. Schedule the wake
    /// for the first timer expiry that could turn it green again.
    fn go_red(&mut self, busy: SimTime, sent: u64) {
        self.next_send = None;
        self.busy_until = busy;
        // expiries due while the loop was busy run at `busy`, where the light is
        // still red (it only turns green later): the first candidate follows
        let elapsed_busy = (busy - self.start).as_nanos();
        let after_busy = elapsed_busy / self.period.as_nanos() + 1;
        // the light turns green once elapsed > need/rate
        let need = sent as u128 * self.bits as u128 * NS_PER_SEC as u128;
        let green_from = (need / self.rate_bps as u128 + 1).min(u64::MAX as u128) as u64;
        let earliest = green_from.saturating_sub(self.slack.as_nanos());
        let could_be_green = earliest.div_ceil(self.period.as_nanos());
        self.tick = after_busy.max(could_be_green).max(self.tick + 1);
        self.schedule_wake();
    }

    fn schedule_wake(&mut self) {
        let expiry = self.start + SimDuration(self.tick.saturating_mul(self.period.as_nanos()));
        let late = SimDuration(self.rng.range_u64(0, self.slack.as_nanos()));
        self.wake = Some((expiry + late).max(self.busy_until));
    }

    /// Run the timer expiry due at `now` (send_timer_proc), `sent` datagrams out.
    fn handle_wake(&mut self, now: SimTime, sent: u64) {
        if self.wake.is_none_or(|w| w > now) {
            return;
        }
        self.wake = None;
        self.busy_until = now;
        if self.green_at(now, sent) {
            self.burst_left = self.burst.max(1);
            self.next_send = Some(now);
        } else {
            self.go_red(now, sent);
        }
    }
}

/// Periodic interval bookkeeping shared by both sides: ticks every
/// `interval` from `start`, closing one record per tick.
struct Ticker {
    interval: SimDuration,
    start: SimTime,
    last_tick: SimTime,
    next_tick: SimTime,
}

impl Ticker {
    fn new(interval: SimDuration, start: SimTime) -> Self {
        Ticker {
            interval,
            start,
            last_tick: start,
            next_tick: start + interval,
        }
    }
}

/// One interval of a UDP test's receiver (kept as a record until the
/// report is written; see iperf3_tcp.rs `SendInterval`).
#[derive(Serialize)]
struct UdpRecvInterval {
    start_ns: u64,
    end_ns: u64,
    bytes: u64,
    packets: u64,
    received: u64,
    lost: u64,
    out_of_order: u64,
    jitter_s: f64,
    omitted: bool,
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

/// Counters of one UDP receiving stream (iperf_udp_recv).
#[derive(Clone, Copy, Debug, Default)]
struct RecvCounters {
    bytes: u64,
    received: u64,
    /// highest sequence number seen (iperf3's packet_count)
    max_seq: u64,
    cnt_error: u64,
    out_of_order: u64,
    jitter_s: f64,
    prev_transit_s: f64,
}

impl RecvCounters {
    fn on_datagram(&mut self, seq: u64, payload: u32, sent_at: SimTime, now: SimTime) {
        self.bytes += payload as u64;
        self.received += 1;
        if seq > self.max_seq {
            if seq > self.max_seq + 1 {
                self.cnt_error += seq - 1 - self.max_seq;
            }
            self.max_seq = seq;
        } else {
            self.out_of_order += 1;
            self.cnt_error = self.cnt_error.saturating_sub(1);
        }
        // iperf3 timestamps have microsecond resolution on both ends.
        let transit =
            (now.as_nanos() / 1000) as f64 / 1e6 - (sent_at.as_nanos() / 1000) as f64 / 1e6;
        let d = (transit - self.prev_transit_s).abs();
        self.prev_transit_s = transit;
        self.jitter_s += (d - self.jitter_s) / 16.0;
    }

    fn minus(&self, base: &RecvCounters) -> RecvCounters {
        RecvCounters {
            bytes: self.bytes - base.bytes,
            received: self.received - base.received,
            max_seq: self.max_seq - base.max_seq,
            cnt_error: self.cnt_error.saturating_sub(base.cnt_error),
            out_of_order: self.out_of_order - base.out_of_order,
            jitter_s: self.jitter_s,
            prev_transit_s: self.prev_transit_s,
        }
    }
}

// ---------------------------------------------------------------- server

struct ServerTest {
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
    counters: RecvCounters,
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
    /// TCP: TEST_START is resent until the first data arrives (the control
    /// connection is a modelled message exchange)
    start_retry: Option<SimTime>,
}

impl ServerTest {
    fn close_interval(&mut self, end: SimTime) {
        let Some(t) = self.ticker.as_mut() else {
            return;
        };
        let omitted = self.omit_end.is_some_and(|e| end <= e);
        if self.protocol == Protocol::Tcp {
            for st in &mut self.streams {
                st.close_interval(t.last_tick, end, omitted);
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

    fn to_json(&self, iperf: &IperfRegistry) -> serde_json::Value {
        let shared = iperf.tests.get(self.conn as usize);
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
                    "client_data_port": st.conn().remote.1,
                    "intervals": st.intervals(),
                    "total": self.totals.map(|t| st.totals(start, t.end)),
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
    tests: Vec<ServerTest>,
    /// TCP data connection → (test, stream) it belongs to
    stream_index: FxHashMap<ConnKey, (usize, usize)>,
    /// index into `tests` of the test in progress
    current: Option<usize>,
    finished: bool,
    interrupted: bool,
}

impl Server {
    /// Settings for the data connections accepted from now on (the seed of
    /// their random draws is kept).
    pub fn set_tcp(&mut self, spec: &TcpSpec) -> Result<()> {
        self.tcp = spec.config(self.tcp.seed, 0)?;
        Ok(())
    }

    pub fn new(spec: ServerSpec, mut rng: ComponentRng) -> Result<Server> {
        if spec.interval_ns == 0 {
            return Err(Error::App(
                "iperf3: the reporting interval must be positive".into(),
            ));
        }
        Ok(Server {
            stream_index: FxHashMap::default(),
            port: spec.port,
            one_off: spec.one_off,
            tcp: spec.tcp.config(rng.next_u64(), 0)?,
            rng,
            interval: SimDuration(spec.interval_ns),
            start: SimTime::ZERO,
            end: SimTime::ZERO,
            tests: Vec::new(),
            current: None,
            finished: false,
            interrupted: false,
        })
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
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
            .map_err(in_use)
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        match p.payload {
            Payload::Control { msg, conn } => self.on_control(ctx, p, msg, conn),
            Payload::Data if p.proto == Proto::Udp => self.on_datagram(ctx, p),
            Payload::Tcp(_) => self.on_segment(ctx, p),
            _ => {}
        }
    }

    /// A TCP data-connection segment: accept the client's streams while the
    /// test is being set up, read data, start the test once all are there.
    fn on_segment(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let tcp = &self.tcp;
        let (ti, si) = match self.stream_index.get(&ConnKey::of_arrival(p)).copied() {
            Some((ti, si)) => {
                self.tests[ti].streams[si].conn_mut().input(ctx.now, p);
                (ti, si)
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
                let Some(conn) = Conn::accept(cfg, ctx, p, rng) else {
                    return;
                };
                t.streams.push(if t.reverse {
                    Stream::Send(SendStream::new(conn, t.blksize))
                } else {
                    Stream::Recv(RecvStream::new(conn))
                });
                let at = (ti, t.streams.len() - 1);
                self.stream_index.insert(ConnKey::of_arrival(p), at);
                at
            }
        };
        let interval = self.interval;
        let running = self.current == Some(ti);
        let t = &mut self.tests[ti];
        let counting = running && t.started.is_some();
        t.streams[si].service(ctx, counting, None, 0);
        // Receiving data proves the client got TEST_START; with -R nothing
        // does, so TEST_START is repeated until TEST_END.
        if counting && !t.reverse && t.streams[si].bytes() > 0 {
            t.start_retry = None;
        }
        let all_up = t.streams.len() as u32 == t.expected_streams
            && t.streams
                .iter()
                .all(|st| st.conn().ep.state() == TcpState::Established);
        if running && t.started.is_none() && all_up {
            t.started = Some(ctx.now);
            t.omit_end = (t.omit > SimDuration::ZERO).then(|| ctx.now + t.omit);
            t.ticker = Some(Ticker::new(interval, ctx.now));
            t.start_retry = Some(ctx.now + RUNNING_RETRY);
            ctx.send_control(
                t.client_ip,
                self.port,
                t.client_ctrl_port,
                msg::TEST_START,
                t.conn,
                STATE_BYTES,
            );
            // a sending (-R) server writes as soon as it is TEST_RUNNING
            // (iperf_run_server), not on the next packet to arrive
            if t.reverse {
                for st in t.streams.iter_mut() {
                    st.service(ctx, true, None, 0);
                }
            }
        }
    }

    /// TCP Small Queues (conns.rs `tsq_release`): a sending (`-R`) stream
    /// whose handler ran sends what it may now.
    pub fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for key in tsq_release(ctx.now, releases, self) {
            let Some(&(ti, si)) = self.stream_index.get(&key) else {
                continue;
            };
            let counting = self.current == Some(ti) && self.tests[ti].started.is_some();
            self.tests[ti].streams[si].service(ctx, counting, None, 0);
        }
    }

    fn reply(ctx: &mut AppCtx, p: &Packet, msg: u8, conn: u32, bytes: u32) {
        ctx.send_control(p.src, p.dst_port, p.src_port, msg, conn, bytes);
    }

    fn on_control(&mut self, ctx: &mut AppCtx, p: &Packet, m: u8, conn: u32) {
        let same = |t: &ServerTest| t.conn == conn;
        match m {
            msg::CONNECT => match self.current {
                None if self.tests.last().is_some_and(same) => {} // stale retransmission
                None => {
                    let shared = ctx.iperf.tests.get_mut(conn as usize);
                    let omit = shared.as_ref().map_or(SimDuration::ZERO, |t| t.omit);
                    let expected_streams = shared.as_ref().map_or(0, |t| t.streams);
                    let (reverse, blksize) = shared
                        .as_ref()
                        .map_or((false, 0), |t| (t.reverse, t.blksize));
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
                        start_retry: None,
                    });
                    self.current = Some(self.tests.len() - 1);
                    Self::reply(ctx, p, msg::CREATE_STREAMS, conn, STATE_BYTES);
                }
                Some(i) if same(&self.tests[i]) => {
                    Self::reply(ctx, p, msg::CREATE_STREAMS, conn, STATE_BYTES)
                }
                Some(_) => Self::reply(ctx, p, msg::ACCESS_DENIED, conn, STATE_BYTES),
            },
            msg::TEST_END => {
                if let Some(i) = self.current.filter(|&i| same(&self.tests[i])) {
                    self.finish_test(ctx, i);
                    Self::reply(ctx, p, msg::RESULTS, conn, RESULTS_BYTES);
                    self.current = None;
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
            }
            ctx.send_control(
                t.client_ip,
                self.port,
                t.client_ctrl_port,
                msg::TEST_START,
                t.conn,
                STATE_BYTES,
            );
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
        t.close_interval(ctx.now);
        t.start_retry = None;
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
                    .map(|st| st.totals(start, ctx.now))
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

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        let conns = next_timeout(
            self.tests
                .iter()
                .flat_map(|t| t.streams.iter().map(Stream::conn)),
        );
        let test = self.current.map(|i| &self.tests[i]).and_then(|t| {
            let tick = t.ticker.as_ref()?.next_tick;
            [Some(tick), t.omit_end, t.start_retry]
                .into_iter()
                .flatten()
                .min()
        });
        [conns, test].into_iter().flatten().min()
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        let current = self.current;
        for (ti, t) in self.tests.iter_mut().enumerate() {
            let counting = current == Some(ti) && t.started.is_some();
            for st in &mut t.streams {
                if st.conn().ep.poll_timeout().is_some_and(|x| x <= ctx.now) {
                    st.conn_mut().ep.handle_timeout(ctx.now);
                    st.service(ctx, counting, None, 0);
                }
            }
        }
        let Some(i) = current else { return };
        let t = &mut self.tests[i];
        if t.start_retry.is_some_and(|r| r <= ctx.now) {
            ctx.send_control(
                t.client_ip,
                self.port,
                t.client_ctrl_port,
                msg::TEST_START,
                t.conn,
                STATE_BYTES,
            );
            t.start_retry = Some(ctx.now + RUNNING_RETRY);
        }
        if t.omit_end == Some(ctx.now) {
            // iperf_reset_stats: counters restart, the clock restarts at 0.
            t.close_interval(ctx.now);
            for st in &mut t.streams {
                st.reset();
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
            t.close_interval(ctx.now);
        }
    }

    fn stop(&mut self, ctx: &mut AppCtx) {
        self.finished = true;
        self.end = ctx.now;
        ctx.sockets.unbind_all(ctx.id);
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.interrupted = true;
            // iperf3 runs a last stats callback before printing on SIGINT.
            if let Some(i) = self.current.take() {
                self.finish_test(ctx, i);
            }
            self.stop(ctx);
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn result(&self, iperf: &IperfRegistry) -> serde_json::Value {
        json!({
            "port": self.port,
            "one_off": self.one_off,
            "interval_ns": self.interval.as_nanos(),
            "start_ns": self.start.as_nanos(),
            "end_ns": self.end.as_nanos(),
            "interrupted": self.interrupted,
            "tests": self.tests.iter().map(|t| t.to_json(iperf)).collect::<Vec<_>>(),
        })
    }
}

// ---------------------------------------------------------------- client

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientState {
    Connecting,
    Starting,
    Running,
    Ending,
    Done,
}

pub struct Client {
    spec: ClientSpec,
    dst: Ipv4,
    cookie: String,
    state: ClientState,
    conn: u32,
    ctrl_port: u16,
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
    streams: Vec<Stream>,
    /// TCP data connection → its position in `streams`
    stream_index: FxHashMap<ConnKey, usize>,
    rng: ComponentRng,
}

impl Client {
    pub fn new(spec: ClientSpec, mut rng: ComponentRng) -> Result<Client> {
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
        // drawn after the cookie and only for UDP, so TCP streams keep their seeds
        let pacing_rng = udp.then(|| ComponentRng::new(rng.next_u64(), "iperf3/pacing"));
        Ok(Client {
            tcp,
            streams: Vec::new(),
            stream_index: FxHashMap::default(),
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

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.local_ip = ctx.addr;
        self.ctrl_port = ctx.sockets.bind_ephemeral(Proto::Tcp, ctx.id)?;
        let streams = match self.spec.protocol {
            Protocol::Udp => {
                self.data_port =
                    ctx.sockets
                        .bind_near(Proto::Udp, self.ctrl_port.saturating_add(2), ctx.id);
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
        });
        self.send_connect(ctx);
        Ok(())
    }

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

    /// TCP Small Queues (conns.rs `tsq_release`).
    pub fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        if !tsq_release(ctx.now, releases, self).is_empty() {
            self.pump(ctx);
        }
    }

    fn send_test_end(&mut self, ctx: &mut AppCtx) {
        self.send_ctrl(ctx, msg::TEST_END, STATE_BYTES, RUNNING_RETRY);
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        match (self.state, p.payload) {
            (_, Payload::Reset { .. }) if self.state == ClientState::Connecting => {
                self.fail(ctx, "unable to connect to server: Connection refused");
            }
            (
                ClientState::Connecting,
                Payload::Control {
                    msg: msg::CREATE_STREAMS,
                    ..
                },
            ) => {
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
                            let mut conn = Conn::connect(
                                cfg.clone(),
                                ctx,
                                port,
                                (self.dst, self.spec.port),
                                rng,
                            );
                            conn.flush(ctx, self.spec.tos);
                            let key = ConnKey {
                                remote: conn.remote,
                                local_port: conn.local_port,
                            };
                            self.stream_index.insert(key, self.streams.len());
                            self.streams.push(if self.spec.reverse {
                                Stream::Recv(RecvStream::new(conn))
                            } else {
                                Stream::Send(SendStream::new(conn, self.spec.blksize))
                            });
                        }
                    }
                }
            }
            (_, Payload::Tcp(_)) => {
                if let Some(&si) = self.stream_index.get(&ConnKey::of_arrival(p)) {
                    self.streams[si].conn_mut().input(ctx.now, p);
                }
                self.pump(ctx);
            }
            (
                ClientState::Connecting,
                Payload::Control {
                    msg: msg::ACCESS_DENIED,
                    ..
                },
            ) => {
                self.fail(ctx, "the server is busy running a test. try again later");
            }
            (
                ClientState::Starting,
                Payload::Control {
                    msg: msg::TEST_START,
                    ..
                },
            ) => self.begin(ctx),
            (
                ClientState::Ending,
                Payload::Control {
                    msg: msg::RESULTS, ..
                },
            ) => {
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
        if let Some(rng) = self.pacing_rng.take() {
            self.throttle = Some(Throttle::new(
                &self.spec.pacing,
                self.spec.rate_bps,
                self.spec.blksize,
                ctx.now,
                rng,
            ));
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

    fn close_interval(&mut self, end: SimTime) {
        let Some(t) = self.ticker.as_mut() else {
            return;
        };
        let omitted = self.omit_end.is_some_and(|e| end <= e);
        for st in &mut self.streams {
            st.close_interval(t.last_tick, end, omitted);
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

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        let mut next = [
            self.retry_at,
            next_timeout(self.streams.iter().map(Stream::conn)),
        ]
        .into_iter()
        .flatten()
        .min();
        if self.state == ClientState::Running {
            let tick = self.ticker.as_ref().map(|t| t.next_tick);
            let send = self.throttle.as_ref().and_then(Throttle::poll_timeout);
            for t in [send, tick, self.omit_end, Some(self.stop_at)]
                .into_iter()
                .flatten()
            {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        next
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        let now = ctx.now;
        for st in &mut self.streams {
            if st.conn().ep.poll_timeout().is_some_and(|t| t <= now) {
                st.conn_mut().ep.handle_timeout(now);
            }
        }
        if self.retry_at.is_some_and(|t| now >= t) {
            match self.state {
                ClientState::Connecting => self.send_connect(ctx),
                ClientState::Starting => self.send_udp_connect(ctx),
                ClientState::Ending => self.send_test_end(ctx),
                _ => self.retry_at = None,
            }
        }
        if self.state != ClientState::Running {
            self.pump(ctx);
            return;
        }
        // Order within one instant: send what is due, then close the stats.
        if let Some(th) = self.throttle.as_mut().filter(|_| now < self.stop_at) {
            th.handle_wake(now, self.sent);
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
            self.close_interval(now);
            self.packets = 0;
            self.bytes = 0;
            self.tick_packets = 0;
            self.tick_bytes = 0;
            for st in &mut self.streams {
                st.reset();
            }
            self.ticker = Some(Ticker::new(SimDuration(self.spec.interval_ns), now));
            self.omit_end = None;
        }
        if now >= self.stop_at {
            self.close_interval(now);
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
            self.close_interval(now);
        }
        self.pump(ctx);
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

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.interrupted = true;
            if self.state == ClientState::Running {
                self.close_interval(ctx.now);
                self.sender_end = ctx.now;
            }
            self.stop(ctx);
        }
    }

    pub fn destination(&self) -> Ipv4 {
        self.dst
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn result(&self, iperf: &IperfRegistry) -> serde_json::Value {
        let start = self.ticker.as_ref().map_or(self.test_start, |t| t.start);
        if let Some(cfg) = &self.tcp {
            return self.tcp_result(cfg, iperf.tests.get(self.conn as usize), start);
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

    fn tcp_result(
        &self,
        cfg: &TcpConfig,
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
                let mine = Some(st.totals(start, self.sender_end));
                let theirs = peer.get(i).cloned();
                let (sender, receiver) = if self.spec.reverse {
                    (theirs, mine)
                } else {
                    (mine, theirs)
                };
                json!({"local_port": st.conn().local_port, "intervals": st.intervals(),
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

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn throttle(rate_bps: u64, timer_us: i64, burst: u32, slack_ns: u64) -> Throttle {
        let spec = PacingSpec {
            timer_us,
            burst,
            send_ns: 10 * US,
            slack_ns,
        };
        // 125-byte datagrams: 1000 bits each
        Throttle::new(
            &spec,
            rate_bps,
            125,
            SimTime::ZERO,
            ComponentRng::new(1, "t"),
        )
    }

    /// Drive the throttle as the client does; the send instants before `until`, in ns.
    fn sends(th: &mut Throttle, until: u64) -> Vec<u64> {
        let mut sent = 0;
        let mut out = Vec::new();
        while let Some(t) = th.poll_timeout().filter(|t| t.as_nanos() < until) {
            th.handle_wake(t, sent);
            while th.send_due(t) {
                sent += 1;
                out.push(t.as_nanos());
                th.on_sent(t, sent);
            }
        }
        out
    }

    #[test]
    fn below_one_datagram_per_tick_each_goes_on_the_first_tick_after_its_cbr_instant() {
        // 400 kbit/s of 1000-bit datagrams: CBR instants 0, 2.5, 5, 7.5, 10, 12.5 ms.
        // The light turns green once elapsed > sent·bits/rate, strictly, so the
        // tick at exactly 5 ms (or 10 ms) finds the average equal to the rate: red.
        let mut th = throttle(400_000, 1000, 0, 0);
        assert_eq!(
            sends(&mut th, 14 * MS),
            vec![0, 3 * MS, 6 * MS, 8 * MS, 11 * MS, 13 * MS]
        );
    }

    #[test]
    fn above_one_datagram_per_tick_the_loop_catches_up_back_to_back() {
        // 4 Mbit/s = 4 datagrams a millisecond; passes of 10 µs. At the 1 ms tick
        // datagrams 2..5 go at 1.000, 1.010, 1.020, 1.030 ms: after the fifth,
        // 5000 bits / 1.030 ms > 4 Mbit/s turns the light red (checked with the
        // clock read before the send).
        let mut th = throttle(4_000_000, 1000, 0, 0);
        let ms = |x: f64| (x * MS as f64).round() as u64;
        assert_eq!(
            sends(&mut th, 2100 * US),
            vec![
                0,
                ms(1.0),
                ms(1.01),
                ms(1.02),
                ms(1.03),
                ms(2.0),
                ms(2.01),
                ms(2.02),
                ms(2.03),
            ]
        );
    }

    #[test]
    fn a_burst_goes_out_whole_and_the_light_is_checked_after_it() {
        // -b 400k/3: three passes at 0, 10, 20 µs, then the check at 30 µs; red
        // until 3000 bits / elapsed < 400 kbit/s, i.e. after 7.5 ms: tick 8 ms.
        let mut th = throttle(400_000, 1000, 3, 0);
        assert_eq!(
            sends(&mut th, 17 * MS),
            vec![
                0,
                10 * US,
                20 * US,
                8 * MS,
                8 * MS + 10 * US,
                8 * MS + 20 * US,
                16 * MS,
                16 * MS + 10 * US,
                16 * MS + 20 * US,
            ]
        );
    }

    #[test]
    fn iperf3_3_1s_tenth_of_a_second_timer_sends_in_bursts_of_catch_up() {
        // 3.0/3.1: the timer is 100 ms; at 25 kbit/s (one datagram per 40 ms) each
        // tick finds the sender 2–3 datagrams behind and sends them 10 µs apart.
        let mut th = throttle(25_000, 100_000, 0, 0);
        let s = sends(&mut th, 250 * MS);
        let at_100: Vec<u64> = s
            .iter()
            .copied()
            .filter(|&t| (100..101).contains(&(t / MS)))
            .collect();
        // by 100 ms: 100 ms·25 kbit/s = 2500 bits; sent 1, so 2 and 3 go
        // (3000 bits / 100.01 ms > 25 kbit/s stops it)
        assert_eq!(at_100, vec![100 * MS, 100 * MS + 10 * US]);
        assert_eq!(s.len(), 1 + 2 + 3);
    }

    #[test]
    fn a_zero_pacing_timer_polls_every_pass() {
        // --pacing-timer 0: the timer is always due; the loop re-checks every
        // 10 µs pass, so datagrams leave within one pass after their CBR instant
        let mut th = throttle(400_000, 0, 0, 50_000);
        assert_eq!(
            sends(&mut th, 8 * MS),
            vec![0, 2510 * US, 5010 * US, 7510 * US]
        );
    }

    #[test]
    fn wake_ups_fall_in_the_slack_window_after_the_first_useful_tick() {
        // 3.5 Mbit/s of 1448-byte datagrams (3.31 ms apart), 1 ms timer, 50 µs slack
        let spec = PacingSpec::default();
        let run = |seed| {
            let mut th = Throttle::new(
                &spec,
                3_500_000,
                1448,
                SimTime::ZERO,
                ComponentRng::new(seed, "t"),
            );
            sends(&mut th, 2_000 * MS)
        };
        let s = run(7);
        assert_eq!(s, run(7), "same seed, same instants");
        assert_ne!(s, run(8));
        let cbr = |n: u64| (n * 1448 * 8 * NS_PER_SEC).div_ceil(3_500_000);
        for (n, &t) in s.iter().enumerate().skip(1) {
            let (k, late) = (t / MS, t % MS);
            assert!(
                late <= 50 * US,
                "datagram {n} at {t} ns: outside the slack window"
            );
            // sent on the first expiry k whose wake-up comes after the CBR instant
            assert!(
                t > cbr(n as u64),
                "datagram {n} at {t} ns before its CBR instant"
            );
            assert!(
                k * MS <= cbr(n as u64) + MS,
                "datagram {n} at {t} ns: a useful tick was missed"
            );
        }
        // floor(3.5e6·2 / 11584) + 1 = 605 by 2 s, give or take the last tick
        assert!((604..=605).contains(&s.len()), "{}", s.len());
        let lates: Vec<u64> = s.iter().skip(1).map(|t| t % MS).collect();
        let mean = lates.iter().sum::<u64>() as f64 / lates.len() as f64;
        assert!(
            (mean - 25_000.0).abs() < 3_000.0,
            "uniform over 0..50 µs: mean {mean}"
        );
    }
}

#[cfg(test)]
#[path = "iperf3_tests.rs"]
mod session_tests;

impl ConnLookup for Server {
    fn conn_by_key(&mut self, key: &ConnKey) -> Option<&mut Conn> {
        let &(ti, si) = self.stream_index.get(key)?;
        Some(self.tests[ti].streams[si].conn_mut())
    }
}

impl ConnLookup for Client {
    fn conn_by_key(&mut self, key: &ConnKey) -> Option<&mut Conn> {
        let &si = self.stream_index.get(key)?;
        Some(self.streams[si].conn_mut())
    }
}
