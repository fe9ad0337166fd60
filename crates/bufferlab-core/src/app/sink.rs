//! `sink`: counts what arrives on a UDP or TCP port (like ns-3's PacketSink)
//! and reports goodput at the end. Runs until interrupted. Over TCP it
//! accepts every connection to its port and reads everything as it arrives.

use super::tcp::{is_syn, next_timeout, Conn, TcpSpec};
use super::AppCtx;
use crate::error::{Error, Result};
use crate::packet::{Packet, Proto};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::TcpConfig;
use crate::time::SimTime;
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SinkProto {
    Udp,
    Tcp,
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SinkSpec {
    pub port: u16,
    pub proto: SinkProto,
    #[serde(default)]
    pub tcp: TcpSpec,
}

pub struct Sink {
    port: u16,
    proto: SinkProto,
    /// TCP: socket settings of accepted connections, and the connections
    tcp: Option<TcpConfig>,
    conns: Vec<Conn>,
    rng: ComponentRng,
    start: SimTime,
    end: SimTime,
    first: Option<SimTime>,
    last: Option<SimTime>,
    /// UDP datagrams (TCP: data segments) received
    packets: u64,
    /// payload bytes received (TCP: read by the application)
    bytes: u64,
    /// UDP one-way delays (arrival − send timestamp): sum and maximum, ns
    delay_sum: u128,
    delay_max: u64,
    finished: bool,
}

impl Sink {
    /// Settings for the TCP connections accepted from now on (a UDP sink
    /// has none to change).
    pub fn set_tcp(&mut self, spec: &TcpSpec) -> Result<()> {
        match &mut self.tcp {
            Some(cfg) => {
                *cfg = spec.config(cfg.seed, 0)?;
                Ok(())
            }
            None => Err(Error::App("a UDP sink accepts no TCP connections".into())),
        }
    }

    pub fn new(spec: SinkSpec, mut rng: ComponentRng) -> Result<Sink> {
        let tcp = match spec.proto {
            SinkProto::Tcp => Some(spec.tcp.config(rng.next_u64(), 0)?),
            SinkProto::Udp => None,
        };
        Ok(Sink {
            port: spec.port,
            proto: spec.proto,
            tcp,
            conns: Vec::new(),
            rng,
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

    fn ip_proto(&self) -> Proto {
        match self.proto {
            SinkProto::Udp => Proto::Udp,
            SinkProto::Tcp => Proto::Tcp,
        }
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        let proto = self.ip_proto();
        ctx.sockets.bind(proto, self.port, ctx.id).map_err(|_| {
            let name = proto.name().to_uppercase();
            Error::App(format!(
                "{name} port {} is already in use on this host",
                self.port
            ))
        })
    }

    fn arrived(&mut self, now: SimTime, bytes: u64) {
        if bytes > 0 {
            self.first.get_or_insert(now);
            self.last = Some(now);
            self.bytes += bytes;
        }
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let Some(cfg) = &self.tcp else {
            self.packets += 1;
            self.arrived(ctx.now, p.udp_payload_len() as u64);
            let d = ctx.now.saturating_since(p.sent_at).as_nanos();
            self.delay_sum += d as u128;
            self.delay_max = self.delay_max.max(d);
            return;
        };
        let i = match self.conns.iter().position(|c| c.owns(p)) {
            Some(i) => {
                self.conns[i].input(ctx.now, p);
                i
            }
            // the new connection has answered this SYN already; feeding it
            // again would read as a retransmitted SYN (a second SYN-ACK)
            None if is_syn(p) => {
                let rng = ComponentRng::new(self.rng.next_u64(), "sink/conn");
                let Some(conn) = Conn::accept(cfg.clone(), ctx, p, rng) else {
                    return;
                };
                self.conns.push(conn);
                self.conns.len() - 1
            }
            None => return,
        };
        self.drain(ctx, i);
    }

    /// Read everything the connection has, and send what it has to send.
    fn drain(&mut self, ctx: &mut AppCtx, i: usize) {
        let got = self.conns[i].ep.read(ctx.now, u64::MAX);
        self.arrived(ctx.now, got);
        self.conns[i].flush(ctx, 0);
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        next_timeout(self.conns.iter())
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        for i in 0..self.conns.len() {
            if self.conns[i]
                .ep
                .poll_timeout()
                .is_some_and(|t| t <= ctx.now)
            {
                self.conns[i].ep.handle_timeout(ctx.now);
                self.drain(ctx, i);
            }
        }
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
        let packets = match self.proto {
            SinkProto::Udp => self.packets,
            SinkProto::Tcp => self
                .conns
                .iter()
                .map(|c| c.ep.info().data_segs_in as u64)
                .sum(),
        };
        json!({
            "port": self.port,
            "proto": match self.proto { SinkProto::Udp => "udp", SinkProto::Tcp => "tcp" },
            "connections": self.conns.len(),
            "packets": packets,
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
