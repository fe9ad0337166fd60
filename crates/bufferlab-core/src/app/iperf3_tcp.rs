//! iperf3's TCP data streams (src/iperf_tcp.c, the TCP parts of
//! src/iperf_api.c; formats.md §1.2–§1.6): the sender keeps its socket
//! full with blocking writes of `blksize` bytes (a write counts once it has
//! been copied whole), and samples `tcp_info` at every interval end; the
//! receiver reads everything as it arrives and counts it while the test runs.
//! The client sends and the server receives, or the reverse with `-R`.

use super::tcp::Conn;
use super::AppCtx;
use crate::time::SimTime;
use serde_json::{json, Value};

/// The sending side of one stream (client without `-R`).
pub struct SendStream {
    pub conn: Conn,
    blksize: u64,
    /// bytes of the current blocking write still to be copied
    block_left: u64,
    /// bytes written since the (post-omit) start, and at the last tick
    bytes: u64,
    tick_bytes: u64,
    /// `tcpi_total_retrans` at the (post-omit) start and at the last tick
    retrans_base: u32,
    tick_retrans: u32,
    intervals: Vec<Value>,
    rtt_sum: u64,
    rtt_count: u64,
    rtt_max: u32,
    rtt_min: u32,
    max_cwnd: u64,
    max_snd_wnd: u64,
}

impl SendStream {
    pub fn new(conn: Conn, blksize: u32) -> Self {
        SendStream {
            conn,
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
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Copy as much of the current block (and the next ones) as the socket takes.
    pub fn write(&mut self, now: SimTime, budget: Option<u64>) {
        loop {
            let mut want = self.block_left;
            if let Some(b) = budget {
                want = want.min(b.saturating_sub(self.bytes + (self.blksize - self.block_left)));
            }
            if want == 0 {
                return;
            }
            let took = self.conn.ep.write(now, want);
            self.block_left -= took;
            if self.block_left == 0 {
                self.bytes += self.blksize;
                self.block_left = self.blksize;
            }
            if took < want {
                return;
            }
        }
    }

    /// iperf_reset_stats at the end of the omit period.
    pub fn reset(&mut self) {
        let total = self.conn.ep.info().total_retrans;
        self.bytes = 0;
        self.tick_bytes = 0;
        self.retrans_base = total;
        self.tick_retrans = total;
    }

    /// Close an interval at `end` with the socket's `tcp_info` at that instant.
    pub fn close_interval(&mut self, start: SimTime, end: SimTime, omitted: bool) {
        let info = self.conn.ep.info();
        let cwnd = info.snd_cwnd as u64 * info.snd_mss as u64;
        self.rtt_sum += info.rtt as u64;
        self.rtt_count += 1;
        self.rtt_max = self.rtt_max.max(info.rtt);
        self.rtt_min = self.rtt_min.min(info.rtt);
        self.max_cwnd = self.max_cwnd.max(cwnd);
        self.max_snd_wnd = self.max_snd_wnd.max(info.snd_wnd as u64);
        self.intervals.push(json!({
            "start_ns": start.as_nanos(), "end_ns": end.as_nanos(),
            "bytes": self.bytes - self.tick_bytes,
            "retransmits": info.total_retrans - self.tick_retrans,
            "snd_cwnd": cwnd, "snd_wnd": info.snd_wnd,
            "rtt_us": info.rtt, "rttvar_us": info.rttvar, "pmtu": info.pmtu,
            "omitted": omitted,
        }));
        self.tick_bytes = self.bytes;
        self.tick_retrans = info.total_retrans;
    }

    /// The sender's totals (the results exchange's per-stream sender fields).
    pub fn totals(&self, start: SimTime, end: SimTime) -> Value {
        let info = self.conn.ep.info();
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
pub struct RecvStream {
    pub conn: Conn,
    /// bytes read while the test was running, since the (post-omit) start
    bytes: u64,
    tick_bytes: u64,
    intervals: Vec<Value>,
}

impl RecvStream {
    pub fn new(conn: Conn) -> Self {
        RecvStream {
            conn,
            bytes: 0,
            tick_bytes: 0,
            intervals: Vec::new(),
        }
    }

    /// Read everything available; count it only while the test runs.
    pub fn read(&mut self, ctx: &mut AppCtx, counting: bool) {
        let got = self.conn.ep.read(ctx.now, u64::MAX);
        if counting {
            self.bytes += got;
        }
        self.conn.flush(ctx, 0);
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn reset(&mut self) {
        self.bytes = 0;
        self.tick_bytes = 0;
    }

    pub fn close_interval(&mut self, start: SimTime, end: SimTime, omitted: bool) {
        self.intervals.push(json!({
            "start_ns": start.as_nanos(), "end_ns": end.as_nanos(),
            "bytes": self.bytes - self.tick_bytes, "omitted": omitted,
        }));
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
    pub fn conn(&self) -> &Conn {
        match self {
            Stream::Send(s) => &s.conn,
            Stream::Recv(s) => &s.conn,
        }
    }

    pub fn conn_mut(&mut self) -> &mut Conn {
        match self {
            Stream::Send(s) => &mut s.conn,
            Stream::Recv(s) => &mut s.conn,
        }
    }

    /// Bytes written (sender) or read while running (receiver).
    pub fn bytes(&self) -> u64 {
        match self {
            Stream::Send(s) => s.bytes(),
            Stream::Recv(s) => s.bytes(),
        }
    }

    /// Move data after an input or timer: while the test is `active` the
    /// sender fills its socket (within `budget` bytes in total, `-n`) and the
    /// receiver counts what it reads; then send what the socket emits.
    pub fn service(&mut self, ctx: &mut AppCtx, active: bool, budget: Option<u64>, tos: u8) {
        match self {
            Stream::Send(s) => {
                if active {
                    s.write(ctx.now, budget);
                }
                s.conn.flush(ctx, tos);
            }
            Stream::Recv(s) => s.read(ctx, active),
        }
    }

    pub fn reset(&mut self) {
        match self {
            Stream::Send(s) => s.reset(),
            Stream::Recv(s) => s.reset(),
        }
    }

    pub fn close_interval(&mut self, start: SimTime, end: SimTime, omitted: bool) {
        match self {
            Stream::Send(s) => s.close_interval(start, end, omitted),
            Stream::Recv(s) => s.close_interval(start, end, omitted),
        }
    }

    pub fn intervals(&self) -> &[Value] {
        match self {
            Stream::Send(s) => &s.intervals,
            Stream::Recv(s) => &s.intervals,
        }
    }

    pub fn totals(&self, start: SimTime, end: SimTime) -> Value {
        match self {
            Stream::Send(s) => s.totals(start, end),
            Stream::Recv(s) => s.totals(start, end),
        }
    }
}
