//! `bulk`: a TCP bulk sender in the spirit of ns-3's BulkSendApplication
//! (DESIGN.md "Commands"). It keeps the socket's send buffer full until
//! `bytes` have been written (then closes, sending FIN) or `duration` has
//! passed (then stops writing and closes). It finishes when everything it
//! wrote has been acknowledged, or when the connection is refused or reset.

use super::tcp::{next_timeout, Conn, TcpSpec};
use super::{parse_addr, AppCtx, Lifetime};
use crate::error::Result;
use crate::packet::{Ipv4, Packet, Proto};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkSpec {
    pub dst: String,
    pub port: u16,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub duration_ns: Option<u64>,
    #[serde(default)]
    pub tos: u8,
    #[serde(default)]
    pub tcp: TcpSpec,
}

pub struct Bulk {
    dst: Ipv4,
    port: u16,
    limit: Option<u64>,
    duration: Option<SimDuration>,
    tos: u8,
    cfg: TcpConfig,
    rng: Option<ComponentRng>,
    conn: Option<Conn>,
    start: SimTime,
    stop_at: Option<SimTime>,
    written: u64,
    closed: bool,
    life: Lifetime,
    refused: bool,
}

impl Bulk {
    pub fn new(spec: BulkSpec, mut rng: ComponentRng) -> Result<Bulk> {
        let cfg = spec.tcp.config(rng.next_u64(), spec.tos)?;
        Ok(Bulk {
            dst: parse_addr("bulk dst", &spec.dst)?,
            port: spec.port,
            limit: spec.bytes,
            duration: spec.duration_ns.map(SimDuration),
            tos: spec.tos,
            cfg,
            rng: Some(rng),
            conn: None,
            start: SimTime::ZERO,
            stop_at: None,
            written: 0,
            closed: false,
            life: Lifetime::default(),
            refused: false,
        })
    }

    pub fn destination(&self) -> Ipv4 {
        self.dst
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        self.stop_at = self.duration.map(|d| ctx.now + d);
        let port = ctx.sockets.bind_ephemeral(Proto::Tcp, ctx.id);
        let rng = self.rng.take().expect("started once");
        let mut conn = Conn::connect(self.cfg.clone(), ctx, port, (self.dst, self.port), rng);
        conn.flush(ctx, self.tos);
        self.conn = Some(conn);
        Ok(())
    }

    /// Fill the send buffer; close once the byte budget is written.
    fn pump(&mut self, ctx: &mut AppCtx) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        if !self.closed && conn.ep.state() == TcpState::Established {
            let want = self.limit.map_or(u64::MAX, |l| l - self.written);
            self.written += conn.ep.write(ctx.now, want);
            if self.limit.is_some_and(|l| self.written >= l) {
                conn.ep.close(ctx.now);
                self.closed = true;
            }
        }
        conn.flush(ctx, self.tos);
        let state = conn.ep.state();
        if state == TcpState::Closed && !self.closed {
            self.refused = true; // reset before or during the transfer
        }
        let all_acked = self.closed && conn.ep.info().bytes_acked >= self.written;
        if all_acked || state == TcpState::Closed {
            self.life.finish(ctx);
        }
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        if let Some(conn) = self.conn.as_mut() {
            if conn.owns(p) {
                conn.input(ctx.now, p);
            }
        }
        self.pump(ctx);
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.life.finished {
            return None;
        }
        let stop = self.stop_at.filter(|_| !self.closed);
        [next_timeout(self.conn.iter()), stop]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        if self.stop_at.is_some_and(|t| ctx.now >= t) && !self.closed {
            if let Some(conn) = self.conn.as_mut() {
                conn.ep.close(ctx.now);
            }
            self.closed = true;
        }
        if let Some(conn) = self.conn.as_mut() {
            conn.ep.handle_timeout(ctx.now);
        }
        self.pump(ctx);
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        self.life.interrupt(ctx);
    }

    pub fn is_finished(&self) -> bool {
        self.life.finished
    }

    pub fn result(&self) -> serde_json::Value {
        let info = self.conn.as_ref().map(|c| c.ep.info()).unwrap_or_default();
        json!({
            "bytes": self.written,
            "acked": info.bytes_acked,
            "retransmits": info.total_retrans,
            "congestion": self.cfg.congestion,
            "start_ns": self.start.as_nanos(),
            "end_ns": self.life.end.as_nanos(),
            "refused": self.refused,
            "interrupted": self.life.interrupted,
        })
    }
}
