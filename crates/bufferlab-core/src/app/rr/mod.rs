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
//! - `stream`: write for `duration` (netperf TCP_STREAM), then `shutdown(SHUT_WR)` and read
//!   until the remote closes;
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

//!
//! The two applications are registered in app/mod.rs: the client in
//! client/ (its UDP exchanges in client/udp.rs), the server in server.rs;
//! this file holds what they share (the specs, the board).

mod client;
mod server;
#[cfg(test)]
mod tests;

pub use client::RrClient;
pub use server::RrServer;

use super::tcp::TcpSpec;
use crate::packet::{Ipv4, Proto};
use crate::time::SimDuration;
use rustc_hash::FxHashMap;
use serde::Deserialize;
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
    pub(super) posted: FxHashMap<(Ipv4, u16, u16), VecDeque<Exchange>>,
}

impl RrBoard {
    pub fn post(&mut self, client: (Ipv4, u16), server_port: u16, ex: Exchange) {
        self.posted
            .entry((client.0, client.1, server_port))
            .or_default()
            .push_back(ex);
    }

    pub(super) fn peek(&self, client: (Ipv4, u16), server_port: u16) -> Option<&Exchange> {
        self.posted
            .get(&(client.0, client.1, server_port))
            .and_then(|q| q.front())
    }

    pub(super) fn take(&mut self, client: (Ipv4, u16), server_port: u16) -> Option<Exchange> {
        let key = (client.0, client.1, server_port);
        let q = self.posted.get_mut(&key)?;
        let ex = q.pop_front();
        if q.is_empty() {
            self.posted.remove(&key);
        }
        ex
    }

    /// A connection went away: what it posted and nobody took is dropped.
    pub(super) fn forget(&mut self, client: (Ipv4, u16), server_port: u16) {
        self.posted.remove(&(client.0, client.1, server_port));
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RrProto {
    Tcp,
    Udp,
}

impl RrProto {
    /// The IP protocol of the application's sockets.
    fn ip(self) -> Proto {
        match self {
            RrProto::Tcp => Proto::Tcp,
            RrProto::Udp => Proto::Udp,
        }
    }

    /// As the reports name it.
    fn name(self) -> &'static str {
        match self {
            RrProto::Tcp => "tcp",
            RrProto::Udp => "udp",
        }
    }
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
    /// a TCP server's `listen()` backlog (`ss -l`'s Send-Q, capped at
    /// `somaxconn`); none: `INT_MAX`, as bufferlab's own listeners ask
    #[serde(default)]
    pub backlog: Option<u32>,
    #[serde(default)]
    pub tcp: TcpSpec,
}
