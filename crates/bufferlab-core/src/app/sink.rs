//! `sink`: counts what arrives on a UDP port (like ns-3's PacketSink) and
//! reports goodput at the end. Runs until interrupted.

use super::AppCtx;
use crate::error::{Error, Result};
use crate::packet::{Packet, Proto};
use crate::time::SimTime;
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SinkProto {
    Udp,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinkSpec {
    pub port: u16,
    pub proto: SinkProto,
}

pub struct Sink {
    port: u16,
    start: SimTime,
    end: SimTime,
    first: Option<SimTime>,
    last: Option<SimTime>,
    packets: u64,
    /// UDP payload bytes
    bytes: u64,
    /// one-way delays (arrival − send timestamp): sum and maximum, ns
    delay_sum: u128,
    delay_max: u64,
    finished: bool,
}

impl Sink {
    pub fn new(spec: SinkSpec) -> Result<Sink> {
        let SinkProto::Udp = spec.proto;
        Ok(Sink {
            port: spec.port,
            start: SimTime::ZERO,
            end: SimTime::ZERO,
            first: None,
            last: None,
            packets: 0,
            bytes: 0,
            delay_sum: 0,
            delay_max: 0,
            finished: false,
        })
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        ctx.sockets
            .bind(Proto::Udp, self.port, ctx.id)
            .map_err(|_| {
                Error::App(format!(
                    "sink: UDP port {} is already in use on this host",
                    self.port
                ))
            })
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        self.first.get_or_insert(ctx.now);
        self.last = Some(ctx.now);
        self.packets += 1;
        self.bytes += p.udp_payload_len() as u64;
        let d = ctx.now.saturating_since(p.sent_at).as_nanos();
        self.delay_sum += d as u128;
        self.delay_max = self.delay_max.max(d);
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.finished = true;
            self.end = ctx.now;
            ctx.sockets.unbind_all(ctx.id);
        }
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn result(&self) -> serde_json::Value {
        json!({
            "port": self.port,
            "packets": self.packets,
            "bytes": self.bytes,
            "mean_delay_ns": if self.packets > 0 { self.delay_sum as f64 / self.packets as f64 } else { 0.0 },
            "max_delay_ns": self.delay_max,
            "first_ns": self.first.map(|t| t.as_nanos()),
            "last_ns": self.last.map(|t| t.as_nanos()),
            "start_ns": self.start.as_nanos(),
            "end_ns": self.end.as_nanos(),
        })
    }
}
