//! iperf3's TCP data streams (src/iperf_tcp.c, the TCP parts of
//! src/iperf_api.c; docs/semantics/formats.md §1.2–§1.6): the sender keeps its socket
//! full with blocking writes of `blksize` bytes (a write counts once it has
//! been copied whole), and samples `tcp_info` at every interval end; the
//! receiver reads everything as it arrives and counts it while the test runs.
//! The client sends and the server receives, or the reverse with `-R`.

use super::throttle::{PacingSpec, Throttle};
use crate::app::sockets::{SocketHandle, Sockets};
use crate::app::AppCtx;
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpEndpoint, TcpState};
use crate::time::SimTime;
use serde::Serialize;
use serde_json::{json, Value};

/// One interval of a sending stream. Intervals are kept as plain records
/// until the report is written (a one-hour test at `-i 1` holds 3 600 per
/// stream, ~80 bytes each instead of ~1 KB as JSON objects); the report's
/// JSON has the same keys.
#[derive(Serialize)]
pub struct SendInterval {
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes: u64,
    pub retransmits: u32,
    pub snd_cwnd: u64,
    pub snd_wnd: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub pmtu: u32,
    pub omitted: bool,
}

/// One interval of a receiving stream (see [`SendInterval`]).
#[derive(Serialize)]
pub struct RecvInterval {
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes: u64,
    pub omitted: bool,
}

/// A report's records as JSON (plain records: serialising cannot fail).
pub fn records_json<T: Serialize>(records: &[T]) -> Value {
    serde_json::to_value(records).unwrap_or(Value::Null)
}

/// iperf3's cookie (`COOKIE_SIZE`, src/iperf.h): the 37 bytes a client
/// writes first on every data connection, once `connect()` has returned
/// (`iperf_tcp_connect`, src/iperf_tcp.c), and the server reads before it
/// takes the connection as a stream (`iperf_tcp_accept`). They count in no
/// interval or total.
pub const COOKIE_BYTES: u64 = 37;

/// A data connection's cookie, as one side sees it.
#[derive(Clone, Copy, Debug, Default)]
struct Cookie {
    /// the client has yet to write it
    unsent: bool,
    /// bytes of it the server has yet to read
    unread: u64,
}

impl Cookie {
    /// Read what is left of the client's cookie (counted nowhere).
    fn read(&mut self, ep: &mut TcpEndpoint, now: SimTime) {
        if self.unread > 0 {
            self.unread -= ep.read(now, self.unread);
        }
    }
}

/// The sending side of one stream (client without `-R`).
pub struct SendStream {
    pub sock: SocketHandle,
    cookie: Cookie,
    blksize: u64,
    /// bytes of the current blocking write still to be copied
    block_left: u64,
    /// bytes written since the (post-omit) start, and at the last tick
    bytes: u64,
    tick_bytes: u64,
    /// `tcpi_total_retrans` at the (post-omit) start and at the last tick
    retrans_base: u32,
    tick_retrans: u32,
    intervals: Vec<SendInterval>,
    rtt_sum: u64,
    rtt_count: u64,
    rtt_max: u32,
    rtt_min: u32,
    max_cwnd: u64,
    max_snd_wnd: u64,
    /// `-b`: the stream's own throttle (iperf3 keeps a green light per stream;
    /// boxed: most streams have none)
    throttle: Option<Box<Throttle>>,
    /// whole blocks written since TEST_START: the throttle's `bytes_sent`, in
    /// blocks (the omit period does not reset it)
    blocks: u64,
}

impl SendStream {
    pub fn new(sock: SocketHandle, blksize: u32) -> Self {
        SendStream {
            sock,
            cookie: Cookie::default(),
            blksize: blksize as u64,
            block_left: blksize as u64,
            bytes: 0,
            tick_bytes: 0,
            retrans_base: 0,
            tick_retrans: 0,
            intervals: Vec::new(),
            rtt_sum: 0,
            rtt_count: 0,
            rtt_max: 0,
            rtt_min: u32::MAX,
            max_cwnd: 0,
            max_snd_wnd: 0,
            throttle: None,
            blocks: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Copy as much of the current block (and the next ones) as the socket takes.
    /// `-n` is checked only between blocks: iperf3's send loop (iperf_send in
    /// src/iperf_api.c) writes whole `blksize` blocks and stops once the bytes
    /// sent reach `-n`, so the total is `-n` rounded up to a block. With `-b`
    /// the throttle is checked after each block (iperf_check_throttle, with
    /// the clock read before it) and a red light stops the writing until a
    /// timer expiry turns it green.
    pub fn write(&mut self, sockets: &mut Sockets, now: SimTime, budget: Option<u64>) {
        let ep = &mut sockets.tcp_mut(self.sock).ep;
        loop {
            let starting_block = self.block_left == self.blksize;
            let red = self.throttle.as_ref().is_some_and(|t| !t.green());
            if starting_block && (red || budget.is_some_and(|b| self.bytes >= b)) {
                return;
            }
            let want = self.block_left;
            let took = ep.write(now, want);
            self.block_left -= took;
            if self.block_left == 0 {
                self.bytes += self.blksize;
                self.block_left = self.blksize;
                self.blocks += 1;
                if let Some(t) = self.throttle.as_mut() {
                    t.on_sent(now, self.blocks);
                }
            }
            if took < want {
                return;
            }
        }
    }

    /// iperf_reset_stats at the end of the omit period.
    pub fn reset(&mut self, sockets: &Sockets) {
        let total = sockets.tcp(self.sock).ep.info().total_retrans;
        self.bytes = 0;
        self.tick_bytes = 0;
        self.retrans_base = total;
        self.tick_retrans = total;
    }

    /// Close an interval at `end` with the socket's `tcp_info` at that instant.
    pub fn close_interval(
        &mut self,
        sockets: &Sockets,
        start: SimTime,
        end: SimTime,
        omitted: bool,
    ) {
        let info = sockets.tcp(self.sock).ep.info();
        let cwnd = info.snd_cwnd as u64 * info.snd_mss as u64;
        self.rtt_sum += info.rtt as u64;
        self.rtt_count += 1;
        self.rtt_max = self.rtt_max.max(info.rtt);
        self.rtt_min = self.rtt_min.min(info.rtt);
        self.max_cwnd = self.max_cwnd.max(cwnd);
        self.max_snd_wnd = self.max_snd_wnd.max(info.snd_wnd as u64);
        self.intervals.push(SendInterval {
            start_ns: start.as_nanos(),
            end_ns: end.as_nanos(),
            bytes: self.bytes - self.tick_bytes,
            retransmits: info.total_retrans - self.tick_retrans,
            snd_cwnd: cwnd,
            snd_wnd: info.snd_wnd,
            rtt_us: info.rtt,
            rttvar_us: info.rttvar,
            pmtu: info.pmtu,
            omitted,
        });
        self.tick_bytes = self.bytes;
        self.tick_retrans = info.total_retrans;
    }

    /// The sender's totals (the results exchange's per-stream sender fields).
    pub fn totals(&self, sockets: &Sockets, start: SimTime, end: SimTime) -> Value {
        let info = sockets.tcp(self.sock).ep.info();
        json!({
            "bytes": self.bytes, "retransmits": info.total_retrans - self.retrans_base,
            "max_snd_cwnd": self.max_cwnd, "max_snd_wnd": self.max_snd_wnd,
            "max_rtt_us": self.rtt_max, "min_rtt_us": if self.rtt_count > 0 { self.rtt_min } else { 0 },
            "mean_rtt_us": self.rtt_sum.checked_div(self.rtt_count).unwrap_or(0),
            "start_ns": start.as_nanos(), "end_ns": end.as_nanos(),
        })
    }
}

/// The receiving side of one stream (server without `-R`).
///
/// iperf3 reads a data socket when `select` reports it readable
/// (`iperf_recv` → `iperf_tcp_recv` → `Nread` of one block, src/iperf_api.c,
/// src/net.c). The kernel wakes the process from the socket's
/// `sk_data_ready` (`sock_def_readable`, net/core/sock.c); it runs after a
/// scheduling latency, and its reads take everything that arrived meanwhile
/// (consecutive in-order skbs coalesce in the receive queue, `tcp_try_coalesce`,
/// net/ipv4/tcp_input.c), so `tcp_rcv_space_adjust` runs once per read, not
/// once per arrival. On a host with a wake-up distribution
/// (`AppCtx::wake_delay`) an arrival schedules one such read; arrivals
/// before it wait for it. A punctual host reads at each arrival.
pub struct RecvStream {
    pub sock: SocketHandle,
    cookie: Cookie,
    /// iperf3's read size, the block size (`-l`)
    blksize: u32,
    /// the reader's pending wake-up: data arrived, the process has not run yet
    read_at: Option<SimTime>,
    /// bytes read while the test was running, since the (post-omit) start
    bytes: u64,
    tick_bytes: u64,
    intervals: Vec<RecvInterval>,
}

impl RecvStream {
    pub fn new(sock: SocketHandle, blksize: u32) -> Self {
        RecvStream {
            sock,
            cookie: Cookie::default(),
            blksize,
            read_at: None,
            bytes: 0,
            tick_bytes: 0,
            intervals: Vec::new(),
        }
    }

    /// After an input or a timer of the connection: read now on a punctual
    /// host, otherwise wake the reader after its latency (unless it is
    /// already due); send what the connection emits either way.
    pub fn on_input(&mut self, ctx: &mut AppCtx, counting: bool) {
        if self.read_at.is_none() && ctx.tcp(self.sock).ep.readable() > 0 {
            let now = ctx.now;
            self.read_at = ctx.wake_delay().map(|latency| now + latency);
        }
        if self.read_at.is_some() {
            ctx.flush(self.sock, 0);
        } else {
            self.read(ctx, counting);
        }
    }

    /// The reader's wake-up, while one is pending.
    pub fn wake_at(&self) -> Option<SimTime> {
        self.read_at
    }

    /// The reader runs: read what is queued, if its wake-up is due.
    pub fn handle_wake(&mut self, ctx: &mut AppCtx, counting: bool) {
        if self.read_at.is_some_and(|t| t <= ctx.now) {
            self.read_at = None;
            self.read(ctx, counting);
        }
    }

    /// Read everything available, a block per read as `Nread` does (each
    /// read runs the receiver's DRS step once); count it only while the
    /// test runs. iperf3 reads only a socket `select()` reports readable, so
    /// an input that leaves nothing in order (a recovery hole) reads nothing.
    fn read(&mut self, ctx: &mut AppCtx, counting: bool) {
        let now = ctx.now;
        let max = match self.blksize {
            0 => u64::MAX,
            b => u64::from(b),
        };
        let ep = &mut ctx.tcp_mut(self.sock).ep;
        self.cookie.read(ep, now);
        while ep.readable() > 0 {
            let got = ep.read(now, max);
            if counting {
                self.bytes += got;
            }
        }
        ctx.flush(self.sock, 0);
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn reset(&mut self) {
        self.bytes = 0;
        self.tick_bytes = 0;
    }

    pub fn close_interval(&mut self, start: SimTime, end: SimTime, omitted: bool) {
        self.intervals.push(RecvInterval {
            start_ns: start.as_nanos(),
            end_ns: end.as_nanos(),
            bytes: self.bytes - self.tick_bytes,
            omitted,
        });
        self.tick_bytes = self.bytes;
    }

    pub fn totals(&self, start: SimTime, end: SimTime) -> Value {
        json!({"bytes": self.bytes, "start_ns": start.as_nanos(), "end_ns": end.as_nanos()})
    }
}

/// One data stream of a test, on either side.
pub enum Stream {
    Send(SendStream),
    Recv(RecvStream),
}

impl Stream {
    /// The stream's connection in the node's socket table.
    pub fn sock(&self) -> SocketHandle {
        match self {
            Stream::Send(s) => s.sock,
            Stream::Recv(s) => s.sock,
        }
    }

    /// Bytes written (sender) or read while running (receiver).
    pub fn bytes(&self) -> u64 {
        match self {
            Stream::Send(s) => s.bytes(),
            Stream::Recv(s) => s.bytes(),
        }
    }

    /// `-b` (iperf_create_send_timers at TEST_START): from now on a sending
    /// stream starts a block only while its light is green. A TCP pass is the
    /// copy into the socket, instant here: the loop's time per datagram
    /// (`send_ns`) does not apply.
    pub fn throttle(
        &mut self,
        pacing: &PacingSpec,
        rate_bps: u64,
        blksize: u32,
        now: SimTime,
        rng: &mut ComponentRng,
    ) {
        if let Stream::Send(s) = self {
            let pacing = PacingSpec {
                send_ns: 0,
                ..*pacing
            };
            let stream_rng = ComponentRng::new(rng.next_u64(), "iperf3/pacing");
            let throttle = Throttle::new(&pacing, rate_bps, blksize, now, stream_rng);
            s.throttle = Some(Box::new(throttle));
        }
    }

    /// The stream's throttle wake-up, while its light is red.
    pub fn throttle_wake(&self) -> Option<SimTime> {
        match self {
            Stream::Send(s) => s.throttle.as_ref().and_then(|t| t.wake_at()),
            Stream::Recv(_) => None,
        }
    }

    fn cookie_mut(&mut self) -> &mut Cookie {
        match self {
            Stream::Send(s) => &mut s.cookie,
            Stream::Recv(r) => &mut r.cookie,
        }
    }

    /// A client's stream: it writes the cookie once connected.
    pub fn owe_cookie(mut self) -> Self {
        self.cookie_mut().unsent = true;
        self
    }

    /// A server's stream: it reads the client's cookie first.
    pub fn expect_cookie(mut self) -> Self {
        self.cookie_mut().unread = COOKIE_BYTES;
        self
    }

    /// The server has read the stream's cookie.
    pub fn cookie_read(&self) -> bool {
        let cookie = match self {
            Stream::Send(s) => s.cookie,
            Stream::Recv(r) => r.cookie,
        };
        cookie.unread == 0
    }

    /// The client writes the cookie as `connect()` returns (`iperf_tcp_connect`).
    pub fn write_cookie_once_connected(&mut self, ctx: &mut AppCtx, tos: u8) {
        let sock = self.sock();
        let cookie = self.cookie_mut();
        if cookie.unsent && ctx.tcp(sock).ep.state() == TcpState::Established {
            cookie.unsent = false;
            let now = ctx.now;
            ctx.tcp_mut(sock).ep.write(now, COOKIE_BYTES);
            ctx.flush(sock, tos);
        }
    }

    /// A receiving stream's pending read (`RecvStream::wake_at`).
    pub fn read_wake(&self) -> Option<SimTime> {
        match self {
            Stream::Recv(r) => r.wake_at(),
            Stream::Send(_) => None,
        }
    }

    /// Run a receiving stream's reader if its wake-up is due.
    pub fn handle_read_wake(&mut self, ctx: &mut AppCtx, counting: bool) {
        if let Stream::Recv(r) = self {
            r.handle_wake(ctx, counting);
        }
    }

    /// Run the stream's throttle timer if due (send_timer_proc).
    pub fn handle_throttle(&mut self, now: SimTime) {
        if let Stream::Send(s) = self {
            if let Some(t) = s.throttle.as_mut() {
                t.handle_wake(now, s.blocks);
            }
        }
    }

    /// Move data after an input or timer: while the test is `active` the
    /// sender fills its socket (within `budget` bytes in total, `-n`) and the
    /// receiver counts what it reads; then send what the socket emits.
    pub fn service(&mut self, ctx: &mut AppCtx, active: bool, budget: Option<u64>, tos: u8) {
        match self {
            Stream::Send(s) => {
                if s.cookie.unread > 0 {
                    let now = ctx.now;
                    s.cookie.read(&mut ctx.tcp_mut(s.sock).ep, now);
                }
                if active {
                    s.write(ctx.sockets, ctx.now, budget);
                }
                ctx.flush(s.sock, tos);
            }
            Stream::Recv(s) => s.on_input(ctx, active),
        }
    }

    pub fn reset(&mut self, sockets: &Sockets) {
        match self {
            Stream::Send(s) => s.reset(sockets),
            Stream::Recv(s) => s.reset(),
        }
    }

    pub fn close_interval(
        &mut self,
        sockets: &Sockets,
        start: SimTime,
        end: SimTime,
        omitted: bool,
    ) {
        match self {
            Stream::Send(s) => s.close_interval(sockets, start, end, omitted),
            Stream::Recv(s) => s.close_interval(start, end, omitted),
        }
    }

    /// The stream's intervals as the report's JSON.
    pub fn intervals(&self) -> Value {
        match self {
            Stream::Send(s) => records_json(&s.intervals),
            Stream::Recv(s) => records_json(&s.intervals),
        }
    }

    pub fn totals(&self, sockets: &Sockets, start: SimTime, end: SimTime) -> Value {
        match self {
            Stream::Send(s) => s.totals(sockets, start, end),
            Stream::Recv(s) => s.totals(start, end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::tcp::TcpSpec;
    use crate::app::test_support::{established, exchange, Bench, MS};
    use crate::tcp::endpoint::TcpConfig;
    use crate::time::SimDuration;

    fn cfg() -> TcpConfig {
        TcpSpec::default().config(9, 0).unwrap()
    }

    /// A sending stream on host 0 and the receiving one on host 1, connected.
    fn streams(blksize: u32) -> (SendStream, RecvStream, Bench) {
        let mut bench = Bench::new(2);
        let (c, s) = established(&mut bench, &cfg());
        (
            SendStream::new(c, blksize),
            RecvStream::new(s, blksize),
            bench,
        )
    }

    /// Move what the sender wrote across at `ms`, the receiver reading.
    fn deliver(
        tx: &mut SendStream,
        rx: &mut RecvStream,
        bench: &mut Bench,
        ms: u64,
        counting: bool,
    ) {
        let now = SimTime(ms * MS);
        bench.ctx(0, now).flush(tx.sock, 0);
        exchange(bench, tx.sock, rx.sock, now);
        rx.on_input(&mut bench.ctx(1, now), counting);
        exchange(bench, tx.sock, rx.sock, now);
    }

    #[test]
    fn a_byte_budget_is_rounded_up_to_whole_blocks() {
        // -n 2500 with 1000-byte blocks: iperf3 writes three whole blocks
        let (mut tx, mut rx, mut bench) = streams(1000);
        tx.write(&mut bench.hosts[0].sockets, SimTime::ZERO, Some(2500));
        assert_eq!(tx.bytes(), 3000);
        assert_eq!(tx.block_left, 1000, "no block is started past the budget");
        deliver(&mut tx, &mut rx, &mut bench, 1, true);
        assert_eq!(rx.bytes(), 3000);
        tx.write(&mut bench.hosts[0].sockets, SimTime(MS), Some(2500));
        assert_eq!(tx.bytes(), 3000, "the budget is spent");
    }

    #[test]
    fn a_block_larger_than_the_send_buffer_counts_once_it_is_all_copied() {
        // 1 MB blocks into a 16 KB initial send buffer: nothing counted yet
        let (mut tx, mut rx, mut bench) = streams(1_000_000);
        tx.write(&mut bench.hosts[0].sockets, SimTime::ZERO, None);
        assert_eq!(tx.bytes(), 0);
        assert!(tx.block_left < 1_000_000, "part of the block was copied");
        for ms in 1..400 {
            deliver(&mut tx, &mut rx, &mut bench, ms, true);
            tx.write(&mut bench.hosts[0].sockets, SimTime(ms * MS), None);
            if tx.bytes() > 0 {
                break;
            }
        }
        assert_eq!(tx.bytes(), 1_000_000);
    }

    #[test]
    fn a_throttled_stream_writes_a_block_only_when_its_average_falls_below_the_rate() {
        // -b 8M with 10 000-byte blocks (80 000 bits), a 1 ms timer, no slack:
        // the first block goes at TEST_START (elapsed 0: red after it); the light
        // turns green on the first tick past each block's CBR instant, strictly
        // (k blocks need elapsed > k·10 ms), so the next blocks go at 11, 21, 31 ms
        let (mut tx, mut rx, mut bench) = streams(10_000);
        let pacing = PacingSpec {
            timer_us: 1000,
            burst: 0,
            send_ns: 0,
            slack_ns: 0,
        };
        tx.throttle = Some(Box::new(Throttle::new(
            &pacing,
            8_000_000,
            10_000,
            SimTime::ZERO,
            ComponentRng::new(1, "t"),
        )));
        let mut writes = Vec::new();
        for ms in 0..35 {
            let now = SimTime(ms * MS);
            if let Some(t) = tx.throttle.as_mut() {
                t.handle_wake(now, tx.blocks); // send_timer_proc
            }
            let before = tx.bytes();
            tx.write(&mut bench.hosts[0].sockets, now, None);
            if tx.bytes() > before {
                writes.push((ms, tx.bytes() - before));
            }
            deliver(&mut tx, &mut rx, &mut bench, ms, true);
        }
        assert_eq!(
            writes,
            [(0, 10_000), (11, 10_000), (21, 10_000), (31, 10_000)]
        );
    }

    #[test]
    fn the_receiver_counts_only_while_the_test_runs() {
        let (mut tx, mut rx, mut bench) = streams(1000);
        tx.write(&mut bench.hosts[0].sockets, SimTime::ZERO, Some(3000));
        deliver(&mut tx, &mut rx, &mut bench, 1, false);
        assert_eq!(rx.bytes(), 0, "read before TEST_START: discarded");
        tx.write(&mut bench.hosts[0].sockets, SimTime(MS), Some(5000));
        deliver(&mut tx, &mut rx, &mut bench, 2, true);
        assert_eq!(rx.bytes(), 2000);
    }

    #[test]
    fn a_woken_reader_takes_what_arrived_before_it_ran_in_one_wake_up() {
        use crate::host_noise::{HostNoise, Latency};
        let (mut tx, mut rx, mut bench) = streams(1000);
        let fifty_us = HostNoise {
            median_ns: 50_000,
            p99_ns: 50_001,
            max_ns: 50_001,
        };
        bench.hosts[1].timing.reader_wakeup = Some(Latency::new(fifty_us, 1, "node/h2/wakeup"));
        let arrive = |tx: &mut SendStream, rx: &mut RecvStream, bench: &mut Bench, now, budget| {
            tx.write(&mut bench.hosts[0].sockets, now, Some(budget));
            bench.ctx(0, now).flush(tx.sock, 0);
            exchange(bench, tx.sock, rx.sock, now);
            rx.on_input(&mut bench.ctx(1, now), true);
        };
        let first = SimTime(MS);
        arrive(&mut tx, &mut rx, &mut bench, first, 2000);
        assert_eq!(rx.bytes(), 0, "nothing is read before the reader runs");
        let wake = rx.wake_at().expect("a wake-up is pending");
        assert!(
            (49_000..=51_000).contains(&(wake - first).as_nanos()),
            "{wake:?}"
        );
        // a later arrival waits for the same wake-up
        arrive(
            &mut tx,
            &mut rx,
            &mut bench,
            first + SimDuration(10_000),
            5000,
        );
        assert_eq!(rx.wake_at(), Some(wake));
        rx.handle_wake(&mut bench.ctx(1, wake), true);
        assert_eq!((rx.bytes(), rx.wake_at()), (5000, None));
    }

    #[test]
    fn intervals_report_the_bytes_since_the_last_tick_and_totals_all_of_them() {
        let (mut tx, mut rx, mut bench) = streams(1000);
        let t = |ms: u64| SimTime(ms * MS);
        tx.write(&mut bench.hosts[0].sockets, t(0), Some(3000));
        deliver(&mut tx, &mut rx, &mut bench, 1, true);
        tx.close_interval(&bench.hosts[0].sockets, t(0), t(100), false);
        rx.close_interval(t(0), t(100), false);
        tx.write(&mut bench.hosts[0].sockets, t(100), Some(5000));
        deliver(&mut tx, &mut rx, &mut bench, 101, true);
        tx.close_interval(&bench.hosts[0].sockets, t(100), t(200), false);
        rx.close_interval(t(100), t(200), false);
        let sent: Vec<u64> = tx.intervals.iter().map(|i| i.bytes).collect();
        let read: Vec<u64> = rx.intervals.iter().map(|i| i.bytes).collect();
        assert_eq!((sent, read), (vec![3000, 2000], vec![3000, 2000]));
        let json = records_json(&tx.intervals);
        assert_eq!(json[1]["start_ns"], 100 * MS);
        assert_eq!(json[0]["retransmits"], 0);
        assert_eq!(json[0]["pmtu"], 1500);
        let total = tx.totals(&bench.hosts[0].sockets, t(0), t(200));
        assert_eq!(
            (total["bytes"].as_u64(), total["end_ns"].as_u64()),
            (Some(5000), Some(200 * MS))
        );
        assert_eq!(rx.totals(t(0), t(200))["bytes"], 5000);
    }

    #[test]
    fn sender_totals_summarise_the_interval_samples_of_rtt_and_cwnd() {
        let (mut tx, mut rx, mut bench) = streams(1000);
        let t = |ms: u64| SimTime(ms * MS);
        let total = tx.totals(&bench.hosts[0].sockets, t(0), t(0));
        assert_eq!(
            (total["min_rtt_us"].as_u64(), total["mean_rtt_us"].as_u64()),
            (Some(0), Some(0)),
            "no samples yet"
        );
        tx.write(&mut bench.hosts[0].sockets, t(0), Some(1000));
        deliver(&mut tx, &mut rx, &mut bench, 0, true);
        tx.close_interval(&bench.hosts[0].sockets, t(0), t(1), false);
        let rtt = bench.conn(0, tx.sock).ep.info().rtt as u64;
        let cwnd = bench.conn(0, tx.sock).ep.info().snd_cwnd as u64
            * bench.conn(0, tx.sock).ep.info().snd_mss as u64;
        let total = tx.totals(&bench.hosts[0].sockets, t(0), t(1));
        assert_eq!(
            (
                total["min_rtt_us"].as_u64(),
                total["max_rtt_us"].as_u64(),
                total["mean_rtt_us"].as_u64(),
                total["max_snd_cwnd"].as_u64()
            ),
            (Some(rtt), Some(rtt), Some(rtt), Some(cwnd))
        );
        assert_eq!(cwnd, 10 * 1448, "initial window of ten segments");
    }

    #[test]
    fn reset_restarts_the_counts_at_the_omit_end() {
        let (mut tx, mut rx, mut bench) = streams(1000);
        tx.write(&mut bench.hosts[0].sockets, SimTime::ZERO, Some(2000));
        deliver(&mut tx, &mut rx, &mut bench, 1, true);
        let (mut s, mut r) = (Stream::Send(tx), Stream::Recv(rx));
        assert_eq!((s.bytes(), r.bytes()), (2000, 2000));
        s.reset(&bench.hosts[0].sockets);
        r.reset(&bench.hosts[1].sockets);
        assert_eq!((s.bytes(), r.bytes()), (0, 0));
        s.close_interval(&bench.hosts[0].sockets, SimTime::ZERO, SimTime(MS), true);
        assert_eq!(s.intervals()[0]["bytes"], 0);
        assert_eq!(s.intervals()[0]["omitted"], true);
    }

    #[test]
    fn service_writes_only_while_active() {
        let (tx, _, mut bench) = streams(1000);
        let mut s = Stream::Send(tx);
        s.service(&mut bench.ctx(0, SimTime::ZERO), false, None, 0);
        assert_eq!(s.bytes(), 0);
        s.service(&mut bench.ctx(0, SimTime::ZERO), true, Some(4000), 0);
        assert_eq!(s.bytes(), 4000);
        assert!(!bench.sent(0).is_empty(), "the written data leaves at once");
    }
}
