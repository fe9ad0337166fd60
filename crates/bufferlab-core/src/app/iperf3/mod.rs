//! iperf3 client and server (iperf3 3.7 `src/iperf_api.c`, `src/iperf_udp.c`,
//! `src/iperf_tcp.c`, docs/semantics/formats.md §1.2–§1.7), one concept per
//! file as iperf3 splits them:
//!
//! * control.rs — the control connection (TCP port 5201 by default),
//!   modelled as a reliable message exchange: CONNECT (cookie + parameters)
//!   → CREATE_STREAMS → the client's 4-byte UDP "connect" datagram and the
//!   server's 4-byte answer (both TOS 0, sent before `IP_TOS` is applied) →
//!   TEST_START (the server's clock starts when it sends it, the client's
//!   when it arrives) → data → TEST_END → EXCHANGE_RESULTS → the client's
//!   results → the server's (`iperf_exchange_results`: the client sends
//!   first, so the end crosses the client→server path twice). Control messages travel
//!   through the same qdiscs as the data, so `receiver_time` includes the
//!   queueing delay, as on a real path. A lost control message is resent
//!   after a fixed timer (1 s during set-up, 300 ms later) — a stand-in for
//!   TCP's retransmission until the TCP model carries the control connection;
//! * udp.rs — UDP tests: the sender paces as iperf3 does (`Throttle`: a
//!   green light, re-evaluated after each send and on every tick of the
//!   `--pacing-timer`, lets datagrams go while bits sent / elapsed < rate;
//!   each carries its sequence number and send timestamp); the receiver
//!   counts gaps (`cnt_error`), late datagrams (`out_of_order`, which also
//!   cancel one error) and the RFC 3550 jitter estimate with transit times
//!   at iperf3's microsecond resolution;
//! * tcp.rs — TCP data streams (iperf_tcp.c);
//! * server.rs, client.rs — the two programs (iperf_server_api.c,
//!   iperf_client_api.c).
//!
//! Intervals are recorded at exact `interval` ticks from each side's start;
//! text and JSON are produced by python/bufferlab/formats/iperf3/.

pub mod client;
pub mod control;
pub mod server;
pub mod tcp;
pub mod throttle;
pub mod udp;

#[cfg(test)]
mod tests;

use crate::time::{SimDuration, SimTime};
use serde::Deserialize;

pub use client::{Client, ClientSpec};
pub use control::IperfRegistry;
pub use server::{Server, ServerSpec};
pub use throttle::PacingSpec;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    Udp,
    Tcp,
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
