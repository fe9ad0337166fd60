//! iperf3's control connection (src/iperf_api.c `iperf_exchange_parameters`,
//! `iperf_exchange_results`, the `IEST_*`/`TEST_*` states), modelled as a
//! reliable message exchange on its own numbering (see mod.rs), and the side
//! channel standing in for the parameter and result JSON documents it carries.

use crate::time::{SimDuration, SimTime};
use serde_json::json;

/// Control-connection message types (our own numbering).
pub(super) mod msg {
    pub const CONNECT: u8 = 1;
    pub const CREATE_STREAMS: u8 = 2;
    pub const ACCESS_DENIED: u8 = 3;
    pub const TEST_START: u8 = 4;
    pub const TEST_END: u8 = 5;
    /// the server's results JSON (followed at once by DISPLAY_RESULTS, which
    /// this message also stands for)
    pub const RESULTS: u8 = 6;
    /// the server's EXCHANGE_RESULTS state, its answer to TEST_END
    pub const EXCHANGE_RESULTS: u8 = 7;
    /// the client's results JSON, which `iperf_exchange_results` sends before
    /// it reads the server's: the exchange crosses the client→server path twice
    pub const CLIENT_RESULTS: u8 = 8;
}

/// Application bytes carried by each control message (cookie + JSON
/// parameters, a JSON results document, or a one-byte state).
pub(super) const CONNECT_BYTES: u32 = 37 + 4 + 160;
pub(super) const STATE_BYTES: u32 = 1;
pub(super) const RESULTS_BYTES: u32 = 4 + 420;

pub(super) const SETUP_RETRY: SimDuration = SimDuration::from_secs(1);
pub(super) const RUNNING_RETRY: SimDuration = SimDuration::from_millis(300);

/// What the client told the server at CONNECT time, and what the server
/// reports back with RESULTS (the JSON exchanged over the control connection).
pub struct SharedTest {
    pub(super) omit: SimDuration,
    /// the client's parameters (iperf3's parameter JSON) and cookie
    pub(super) params: serde_json::Value,
    pub(super) cookie: String,
    pub(super) totals: Option<ReceiverTotals>,
    /// the client's sender totals, known to the server once TEST_END arrives
    pub(super) peer: Option<serde_json::Value>,
    /// TCP: the server's per-stream receiver totals, in stream order
    pub(super) stream_totals: Vec<serde_json::Value>,
    /// TCP: streams the client opens, who sends (`-R`: the server), the
    /// block size, and the server's congestion control
    pub(super) streams: u32,
    pub(super) reverse: bool,
    pub(super) blksize: u32,
    pub(super) server_congestion: String,
    /// TCP: the client's `-w` (iperf3's `socket_bufsize`, sent as "window"
    /// in the parameter JSON), which the server applies to its data sockets
    pub(super) window: Option<u32>,
    /// TCP: the client's `--fq-rate` in bytes/s (sent as "fqrate"), which
    /// the server sets as SO_MAX_PACING_RATE on its data sockets
    /// (`iperf_tcp_accept`)
    pub(super) max_pacing_rate: Option<u64>,
}

/// The side channel standing in for the parameter and result JSON documents.
#[derive(Default)]
pub struct IperfRegistry {
    pub(super) tests: Vec<SharedTest>,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ReceiverTotals {
    pub(super) bytes: u64,
    pub(super) packets: u64,
    pub(super) received: u64,
    pub(super) lost: u64,
    pub(super) out_of_order: u64,
    pub(super) jitter_s: f64,
    pub(super) start: SimTime,
    pub(super) end: SimTime,
}

impl ReceiverTotals {
    pub(super) fn to_json(self) -> serde_json::Value {
        json!({
            "bytes": self.bytes, "packets": self.packets, "received": self.received,
            "lost": self.lost, "out_of_order": self.out_of_order, "jitter_s": self.jitter_s,
            "start_ns": self.start.as_nanos(), "end_ns": self.end.as_nanos(),
        })
    }
}
