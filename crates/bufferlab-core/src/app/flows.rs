//! `flows`: a flow-workload generator (web-search / data-mining style
//! workloads, as in the DCTCP and pFabric evaluations) and its server.
//!
//! The client opens a new TCP connection per flow, at Poisson arrival
//! instants of the given rate; each flow writes a size drawn from a
//! distribution, closes (FIN), and is *complete* when its last data byte is
//! acknowledged (the sender's view of the flow completion time: connect() to
//! that ACK, so an unloaded flow takes at least two round trips — the
//! handshake and the data's — plus its serialisation at the bottleneck).
//! Its record (id, start, size, FCT, retransmits, completed) is written then;
//! the connection's state is freed once the FIN exchange is over (TIME-WAIT
//! is not held: the port is released at once, and a stray segment meets the
//! host's reset). The server accepts every connection on its port, reads
//! everything, closes when the client has, and frees the connection when it
//! is closed. Both keep their connections in a [`ConnTable`] (per-packet
//! work independent of the number of flows).
//!
//! Sizes are drawn by inversion from the flow's own uniform (Box–Muller for
//! the log-normal), rounded to whole bytes, at least 1:
//! - `fixed`: `bytes`;
//! - `exp`: mean `mean` (`-mean·ln(1−U)`);
//! - `pareto`: Pareto type I with tail index `shape` > 1 and mean `mean`
//!   (scale `x_m = mean·(shape−1)/shape`, `x_m·(1−U)^(−1/shape)`);
//! - `lognormal`: `exp(mu + sigma·Z)`, mu and sigma of the log of the size
//!   in bytes (numpy's `lognormal(mean=mu, sigma=sigma)`);
//! - `empirical`: a CDF given as (size, cumulative probability) points, as
//!   the published web-search and data-mining workloads are; linear
//!   interpolation between points, the first point's probability mass at its
//!   size (ns-2's `EmpiricalRandomVariable`, which those workload files were
//!   written for, interpolates the same way).

use super::conns::{sock_field, ConnTable};
use super::sockets::diag::ListenerTcp;
use super::sockets::{PortKind, SocketHandle, LISTEN_MAX};
use super::tcp::{for_host, is_syn, TcpSpec};
use super::{parse_addr, AppCtx, Application, Lifetime, ResultCtx, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime, NS_PER_SEC};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// Flows open at once at most; an arrival beyond is recorded as not
/// completed (a host runs out of ephemeral ports near 28 000, and a load
/// above the bottleneck's capacity never drains anyway).
pub const MAX_ACTIVE_FLOWS: usize = 16_384;

/// Arrivals one client makes at most; then it stops as at the end of `-t`.
/// Each arrival keeps a 40-byte record until the result is read (and about
/// 0.3 KB while Python turns it into the fct table), so the records are
/// bounded; commands/flows.py refuses at check time a rate × duration whose
/// expected arrivals exceed half of this.
pub const MAX_FLOW_ARRIVALS: u64 = 2_000_000;

/// A flow size distribution (bytes).
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(tag = "dist", rename_all = "snake_case", deny_unknown_fields)]
pub enum FlowSizeDist {
    Fixed {
        bytes: u64,
    },
    Exp {
        mean: f64,
    },
    Pareto {
        mean: f64,
        shape: f64,
    },
    Lognormal {
        mu: f64,
        sigma: f64,
    },
    /// (size in bytes, cumulative probability) points, both non-decreasing,
    /// the last probability 1
    Empirical {
        points: Vec<(f64, f64)>,
    },
}

impl FlowSizeDist {
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::App(format!("flows size: {m}")));
        let positive = |v: f64| v.is_finite() && v > 0.0;
        match self {
            FlowSizeDist::Fixed { bytes: 0 } => bad("fixed size must be at least 1 byte".into()),
            FlowSizeDist::Exp { mean } if !positive(*mean) => bad(format!("mean {mean} must be > 0")),
            FlowSizeDist::Pareto { mean, shape } if !(positive(*mean) && shape.is_finite() && *shape > 1.0) => {
                bad(format!("pareto needs mean > 0 and shape > 1 (a finite mean), got mean {mean} shape {shape}"))
            }
            FlowSizeDist::Lognormal { mu, sigma } if !(mu.is_finite() && sigma.is_finite() && *sigma >= 0.0) => {
                bad(format!("lognormal needs a finite mu and sigma >= 0, got mu {mu} sigma {sigma}"))
            }
            FlowSizeDist::Empirical { points } => {
                let Some(last) = points.last() else {
                    return bad("the empirical CDF has no points".into());
                };
                let mut prev = (0.0, 0.0);
                for &(s, p) in points {
                    if !positive(s) || !(0.0..=1.0).contains(&p) || s < prev.0 || p < prev.1 {
                        return bad(format!(
                            "empirical point ({s}, {p}): sizes must be > 0 and non-decreasing, \
                             probabilities in [0, 1] and non-decreasing"
                        ));
                    }
                    prev = (s, p);
                }
                if last.1 != 1.0 {
                    return bad(format!("the empirical CDF must end at probability 1, not {}", last.1));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The size at cumulative probability `u` in [0, 1) (not for `lognormal`,
    /// which needs a second uniform: [`FlowSizeDist::lognormal`]).
    pub fn quantile(&self, u: f64) -> f64 {
        match self {
            FlowSizeDist::Fixed { bytes } => *bytes as f64,
            FlowSizeDist::Exp { mean } => -mean * (1.0 - u).ln(),
            FlowSizeDist::Pareto { mean, shape } => {
                let xm = mean * (shape - 1.0) / shape;
                xm * (1.0 - u).powf(-1.0 / shape)
            }
            FlowSizeDist::Lognormal { mu, sigma } => Self::lognormal(*mu, *sigma, u, 0.0),
            FlowSizeDist::Empirical { points } => {
                let i = points.partition_point(|&(_, p)| p <= u);
                match i {
                    0 => points[0].0,
                    _ if i == points.len() => points[i - 1].0,
                    _ => {
                        let ((s0, p0), (s1, p1)) = (points[i - 1], points[i]);
                        s0 + (s1 - s0) * (u - p0) / (p1 - p0)
                    }
                }
            }
        }
    }

    /// `exp(mu + sigma·Z)` with Z standard normal from two uniforms
    /// (Box–Muller: `Z = sqrt(−2 ln(1−u1))·cos(2π·u2)`).
    pub fn lognormal(mu: f64, sigma: f64, u1: f64, u2: f64) -> f64 {
        let z = (-2.0 * (1.0 - u1).ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (mu + sigma * z).exp()
    }

    /// One size in whole bytes (at least 1).
    pub fn sample(&self, rng: &mut ComponentRng) -> u64 {
        let x = match self {
            FlowSizeDist::Fixed { bytes } => return *bytes,
            FlowSizeDist::Lognormal { mu, sigma } => {
                let u1 = rng.next_f64();
                Self::lognormal(*mu, *sigma, u1, rng.next_f64())
            }
            _ => self.quantile(rng.next_f64()),
        };
        // an f64 beyond u64 saturates; sizes that large cannot finish anyway
        (x.round() as u64).max(1)
    }
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowsClientSpec {
    pub dst: String,
    pub port: u16,
    /// mean flow arrivals per simulated second (Poisson)
    pub rate_per_s: f64,
    pub size: FlowSizeDist,
    /// arrivals stop after this long; then the client ends once its flows have
    #[serde(default)]
    pub duration_ns: Option<u64>,
    #[serde(default)]
    pub tos: u8,
    #[serde(default)]
    pub tcp: TcpSpec,
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowsServerSpec {
    pub port: u16,
    #[serde(default)]
    pub tcp: TcpSpec,
}

/// What is kept of a flow once it has completed (or failed): 40 bytes.
#[derive(Clone, Copy, Debug)]
struct FlowRecord {
    id: u64,
    start: SimTime,
    size: u64,
    /// flow completion time; None: the flow did not complete
    fct: Option<SimDuration>,
    retransmits: u32,
}

/// A flow in progress.
struct Flow {
    id: u64,
    sock: SocketHandle,
    size: u64,
    written: u64,
    start: SimTime,
    /// FIN queued after the last byte
    closing: bool,
    /// its record was written (the last byte was acknowledged)
    recorded: bool,
}

sock_field!(Flow);

/// The client: one application, many flows.
///
/// Calling order per the app convention (mod.rs): `start`, then
/// `handle_packet` / `handle_timeout` (arrivals, the flows' timers),
/// `interrupt`; `result` once finished.
pub struct FlowsClient {
    dst: Ipv4,
    port: u16,
    mean_gap_ns: f64,
    sizes: FlowSizeDist,
    duration: Option<SimDuration>,
    tos: u8,
    cfg: TcpConfig,
    /// arrivals, sizes and per-flow seeds: three streams, so that changing
    /// the size distribution keeps the arrival instants
    arrivals_rng: ComponentRng,
    sizes_rng: ComponentRng,
    conn_rng: ComponentRng,
    flows: ConnTable<Flow>,
    next_arrival: SimTime,
    stop_at: SimTime,
    /// `stop_at` has passed: no more arrivals, no wake-up for them
    arrivals_over: bool,
    next_id: u64,
    records: Vec<FlowRecord>,
    start: SimTime,
    life: Lifetime,
}

impl FlowsClient {
    fn draw_gap(&mut self) -> SimDuration {
        SimDuration(self.arrivals_rng.exponential(self.mean_gap_ns).round() as u64)
    }

    /// Open every flow whose arrival instant has come.
    fn arrive(&mut self, ctx: &mut AppCtx) {
        while self.next_arrival <= ctx.now && self.next_arrival < self.stop_at {
            if self.next_id >= MAX_FLOW_ARRIVALS {
                self.arrivals_over = true;
                break;
            }
            let id = self.next_id;
            self.next_id += 1;
            let size = self.sizes.sample(&mut self.sizes_rng);
            let gap = self.draw_gap();
            self.next_arrival += gap;
            // beyond the open-flow cap, or with every ephemeral port taken
            // (connect's EADDRNOTAVAIL), the flow never starts
            let port = (self.flows.len() < MAX_ACTIVE_FLOWS)
                .then(|| ctx.sockets.bind_ephemeral(Proto::Tcp, ctx.id).ok())
                .flatten();
            let Some(port) = port else {
                self.records.push(FlowRecord {
                    id,
                    start: ctx.now,
                    size,
                    fct: None,
                    retransmits: 0,
                });
                continue;
            };
            let cfg = TcpConfig {
                seed: self.conn_rng.next_u64(),
                ..self.cfg.clone()
            };
            let rng = ComponentRng::new(self.conn_rng.next_u64(), "flows/conn");
            let sock = ctx.connect(cfg, port, (self.dst, self.port), rng);
            let flow = Flow {
                id,
                sock,
                size,
                written: 0,
                start: ctx.now,
                closing: false,
                recorded: false,
            };
            let slot = self.flows.insert(flow, ctx.sockets);
            self.service(ctx, slot);
        }
    }

    /// Write what the flow may, send, record its completion, free it once closed.
    fn service(&mut self, ctx: &mut AppCtx, slot: u32) {
        let now = ctx.now;
        let f = self.flows.get_mut(slot);
        let ep = &mut ctx.tcp_mut(f.sock).ep;
        if !f.closing && ep.state() == TcpState::Established {
            f.written += ep.write(now, f.size - f.written);
            if f.written == f.size {
                ep.close(now);
                f.closing = true;
            }
        }
        ctx.flush(f.sock, self.tos);
        let conn = ctx.tcp(f.sock);
        let state = conn.ep.state();
        let closed = matches!(state, TcpState::Closed | TcpState::TimeWait);
        if !f.recorded {
            // tcpi_bytes_acked counts the SYN: the last data byte is size + 1
            let done = f.closing && conn.ep.bytes_acked() > f.size;
            if done || closed {
                let info = conn.ep.info();
                f.recorded = true;
                self.records.push(FlowRecord {
                    id: f.id,
                    start: f.start,
                    size: f.size,
                    fct: done.then(|| ctx.now.saturating_since(f.start)),
                    retransmits: info.total_retrans,
                });
            }
        }
        if closed {
            let port = conn.local_port;
            self.flows.remove(slot, ctx.sockets);
            ctx.sockets.unbind(Proto::Tcp, port);
        } else {
            self.flows.rearm(slot, ctx.sockets);
        }
    }

    fn check_finished(&mut self, ctx: &mut AppCtx) {
        self.arrivals_over |= ctx.now >= self.stop_at;
        if self.arrivals_over && self.flows.is_empty() {
            self.life.finish(ctx);
        }
    }
}

impl Application for FlowsClient {
    const KIND: &'static str = "flows_client";
    type Spec = FlowsClientSpec;

    fn new(spec: FlowsClientSpec, mut rng: ComponentRng) -> Result<FlowsClient> {
        if !(spec.rate_per_s.is_finite() && spec.rate_per_s > 0.0) {
            return Err(Error::App(format!(
                "flows rate {} must be above 0 flows/s",
                spec.rate_per_s
            )));
        }
        spec.size.validate()?;
        let cfg = spec.tcp.config(rng.next_u64(), spec.tos)?;
        Ok(FlowsClient {
            dst: parse_addr("flows dst", &spec.dst)?,
            port: spec.port,
            mean_gap_ns: NS_PER_SEC as f64 / spec.rate_per_s,
            sizes: spec.size,
            duration: spec.duration_ns.map(SimDuration),
            tos: spec.tos,
            cfg,
            arrivals_rng: ComponentRng::new(rng.next_u64(), "flows/arrivals"),
            sizes_rng: ComponentRng::new(rng.next_u64(), "flows/sizes"),
            conn_rng: ComponentRng::new(rng.next_u64(), "flows/conns"),
            flows: ConnTable::default(),
            next_arrival: SimTime::ZERO,
            stop_at: SimTime::MAX,
            arrivals_over: false,
            next_id: 0,
            records: Vec::new(),
            start: SimTime::ZERO,
            life: Lifetime::default(),
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        if let Some(d) = self.duration {
            self.stop_at = ctx.now + d;
        }
        self.next_arrival = ctx.now + self.draw_gap();
        self.arrive(ctx);
        Ok(())
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        if let Some(slot) = self.flows.find(p, ctx.sockets) {
            let h = self.flows.get(slot).sock;
            let now = ctx.now;
            ctx.tcp_mut(h).input(now, p);
            self.service(ctx, slot);
            self.check_finished(ctx);
        }
    }

    fn poll_timeout(&self, _sockets: &Sockets) -> Option<SimTime> {
        if self.life.finished {
            return None;
        }
        let arrival = Some(self.next_arrival.min(self.stop_at)).filter(|_| !self.arrivals_over);
        [arrival, self.flows.next_timeout()]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        self.arrive(ctx);
        for slot in self.flows.run_timers(ctx.now, ctx.sockets) {
            self.service(ctx, slot);
        }
        self.check_finished(ctx);
    }

    /// TCP Small Queues (`Sockets::tsq_release`).
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for slot in self.flows.tsq_release(ctx, releases) {
            self.service(ctx, slot);
        }
        self.check_finished(ctx);
    }

    /// Ctrl-C: the flows still open are recorded as not completed.
    fn interrupt(&mut self, ctx: &mut AppCtx) {
        if self.life.finished {
            return;
        }
        let open: Vec<u32> = self.flows.slots().collect();
        for slot in open {
            let retransmits = ctx.tcp(self.flows.get(slot).sock).ep.info().total_retrans;
            let f = self.flows.remove(slot, ctx.sockets);
            if !f.recorded {
                self.records.push(FlowRecord {
                    id: f.id,
                    start: f.start,
                    size: f.size,
                    fct: None,
                    retransmits,
                });
            }
        }
        self.life.interrupt(ctx);
    }

    fn is_finished(&self) -> bool {
        self.life.finished
    }

    /// The flows in order of their ids, as columns.
    fn result(&self, _r: &ResultCtx) -> serde_json::Value {
        let mut recs = self.records.clone();
        recs.sort_unstable_by_key(|r| r.id);
        let completed = recs.iter().filter(|r| r.fct.is_some()).count();
        json!({
            "start_ns": self.start.as_nanos(),
            "end_ns": self.life.end.as_nanos(),
            "interrupted": self.life.interrupted,
            "congestion": self.cfg.congestion,
            "arrivals": self.next_id,
            "completed": completed,
            "open": self.flows.len(),
            "flows": {
                "id": recs.iter().map(|r| r.id).collect::<Vec<_>>(),
                "start_ns": recs.iter().map(|r| r.start.as_nanos()).collect::<Vec<_>>(),
                "size": recs.iter().map(|r| r.size).collect::<Vec<_>>(),
                "fct_ns": recs.iter().map(|r| r.fct.map(|d| d.as_nanos())).collect::<Vec<_>>(),
                "retransmits": recs.iter().map(|r| r.retransmits).collect::<Vec<_>>(),
            },
        })
    }

    fn destination(&self) -> Option<Ipv4> {
        Some(self.dst)
    }
}

/// A connection the server accepted.
struct Accepted {
    sock: SocketHandle,
    closing: bool,
}

sock_field!(Accepted);

/// `flows -s`: accepts, reads, closes after the client, forgets.
pub struct FlowsServer {
    port: u16,
    /// shared by the accepted connections
    cfg: Arc<TcpConfig>,
    rng: ComponentRng,
    conns: ConnTable<Accepted>,
    accepted: u64,
    closed: u64,
    bytes: u64,
    start: SimTime,
    life: Lifetime,
}

impl FlowsServer {
    fn service(&mut self, ctx: &mut AppCtx, slot: u32) {
        let now = ctx.now;
        let a = self.conns.get_mut(slot);
        let ep = &mut ctx.tcp_mut(a.sock).ep;
        self.bytes += ep.read(now, u64::MAX);
        if ep.eof() && !a.closing {
            ep.close(now);
            a.closing = true;
        }
        ctx.flush(a.sock, 0);
        if matches!(
            ctx.tcp(a.sock).ep.state(),
            TcpState::Closed | TcpState::TimeWait
        ) {
            self.conns.remove(slot, ctx.sockets);
            self.closed += 1;
        } else {
            self.conns.rearm(slot, ctx.sockets);
        }
    }
}

impl Application for FlowsServer {
    const KIND: &'static str = "flows_server";
    type Spec = FlowsServerSpec;

    fn new(spec: FlowsServerSpec, mut rng: ComponentRng) -> Result<FlowsServer> {
        Ok(FlowsServer {
            port: spec.port,
            cfg: Arc::new(spec.tcp.config(rng.next_u64(), 0)?),
            rng,
            conns: ConnTable::default(),
            accepted: 0,
            closed: 0,
            bytes: 0,
            start: SimTime::ZERO,
            life: Lifetime::default(),
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        let listen = PortKind::Listen {
            backlog: LISTEN_MAX,
        };
        ctx.bind_server(Proto::Tcp, self.port, listen)
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let slot = match self.conns.find(p, ctx.sockets) {
            Some(slot) => {
                let h = self.conns.get(slot).sock;
                let now = ctx.now;
                ctx.tcp_mut(h).input(now, p);
                slot
            }
            None if is_syn(p) => {
                let rng = ComponentRng::new(self.rng.next_u64(), "flows-server/conn");
                for_host(&mut self.cfg, ctx);
                let Some(sock) = ctx.accept(Arc::clone(&self.cfg), p, rng, false) else {
                    return;
                };
                self.accepted += 1;
                let accepted = Accepted {
                    sock,
                    closing: false,
                };
                self.conns.insert(accepted, ctx.sockets)
            }
            None => return,
        };
        self.service(ctx, slot);
    }

    fn poll_timeout(&self, _sockets: &Sockets) -> Option<SimTime> {
        if self.life.finished {
            return None;
        }
        self.conns.next_timeout()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        for slot in self.conns.run_timers(ctx.now, ctx.sockets) {
            self.service(ctx, slot);
        }
    }

    /// TCP Small Queues (`Sockets::tsq_release`).
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for slot in self.conns.tsq_release(ctx, releases) {
            self.service(ctx, slot);
        }
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        self.life.interrupt(ctx);
    }

    fn is_finished(&self) -> bool {
        self.life.finished
    }

    fn result(&self, _r: &ResultCtx) -> serde_json::Value {
        json!({
            "port": self.port,
            "connections": self.accepted,
            "closed": self.closed,
            "open": self.conns.len(),
            "bytes": self.bytes,
            "start_ns": self.start.as_nanos(),
            "end_ns": self.life.end.as_nanos(),
        })
    }

    /// Settings for the connections accepted from now on (as `sink`).
    fn set_listener_tcp(&mut self, spec: &TcpSpec) -> Result<()> {
        self.cfg = Arc::new(spec.config(self.cfg.seed, 0)?);
        Ok(())
    }

    fn listener_tcp(&self) -> Option<ListenerTcp> {
        Some(ListenerTcp::of(&self.cfg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::test_support::{at_ms, Wire, MS};
    use crate::app::App;

    const PORT: u16 = 5001;

    #[test]
    fn quantiles_match_hand_computed_values() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
        let exp = FlowSizeDist::Exp { mean: 1000.0 };
        // -1000·ln(0.5) = 693.147…; -1000·ln(0.1) = 2302.585…
        assert!(close(exp.quantile(0.5), 693.147_180_559_945_3));
        assert!(close(exp.quantile(0.9), 2_302.585_092_994_045_7));
        assert_eq!(exp.quantile(0.0), 0.0);
        // mean 3000, shape 1.5: x_m = 1000; at U = 0.75: 1000·0.25^(−2/3) = 2519.842…
        let pareto = FlowSizeDist::Pareto {
            mean: 3000.0,
            shape: 1.5,
        };
        assert!(close(pareto.quantile(0.0), 1000.0));
        assert!(close(pareto.quantile(0.75), 2_519.842_099_789_746));
        // shape 2, mean 2000: x_m = 1000; U = 0.99: 1000·0.01^(−1/2) = 10 000
        let p2 = FlowSizeDist::Pareto {
            mean: 2000.0,
            shape: 2.0,
        };
        assert!(close(p2.quantile(0.99), 10_000.0));
        // Box–Muller at u1 = 1 − e^(−2) (so sqrt(−2 ln(1−u1)) = 2), u2 = 0: Z = 2
        let u1 = 1.0 - (-2.0f64).exp();
        assert!(close(
            FlowSizeDist::lognormal(5.0, 0.5, u1, 0.0),
            6.0f64.exp()
        ));
        // u2 = 1/2: cos(π) = −1, Z = −2
        assert!(close(
            FlowSizeDist::lognormal(5.0, 0.5, u1, 0.5),
            4.0f64.exp()
        ));
        let empirical = FlowSizeDist::Empirical {
            points: vec![(100.0, 0.5), (1100.0, 0.9), (10_000.0, 1.0)],
        };
        assert_eq!(empirical.quantile(0.2), 100.0, "mass of the first point");
        assert!(close(empirical.quantile(0.7), 600.0), "halfway 100..1100");
        assert!(close(empirical.quantile(0.95), 5550.0));
        assert_eq!(FlowSizeDist::Fixed { bytes: 42 }.quantile(0.3), 42.0);
    }

    #[test]
    fn samples_are_whole_bytes_at_least_one() {
        let mut rng = ComponentRng::new(1, "t");
        let tiny = FlowSizeDist::Exp { mean: 0.01 };
        assert!((0..1000).all(|_| tiny.sample(&mut rng) == 1));
        assert_eq!(FlowSizeDist::Fixed { bytes: 7 }.sample(&mut rng), 7);
    }

    #[test]
    fn bad_distributions_are_refused_with_the_reason() {
        let err = |d: FlowSizeDist| d.validate().unwrap_err().to_string();
        assert!(err(FlowSizeDist::Fixed { bytes: 0 }).contains("at least 1 byte"));
        assert!(err(FlowSizeDist::Exp { mean: -1.0 }).contains("must be > 0"));
        assert!(err(FlowSizeDist::Pareto {
            mean: 10.0,
            shape: 1.0
        })
        .contains("shape > 1"));
        assert!(err(FlowSizeDist::Lognormal {
            mu: 1.0,
            sigma: -1.0
        })
        .contains("sigma >= 0"));
        assert!(err(FlowSizeDist::Empirical {
            points: vec![(10.0, 0.5), (5.0, 1.0)]
        })
        .contains("non-decreasing"));
        assert!(err(FlowSizeDist::Empirical {
            points: vec![(10.0, 0.5)]
        })
        .contains("end at probability 1"));
        assert!(err(FlowSizeDist::Empirical { points: vec![] }).contains("no points"));
    }

    fn spec(rate: f64, size: FlowSizeDist, duration_ms: u64) -> FlowsClientSpec {
        FlowsClientSpec {
            dst: "10.0.0.2".into(),
            port: PORT,
            rate_per_s: rate,
            size,
            duration_ns: Some(duration_ms * MS),
            tos: 0,
            tcp: TcpSpec::default(),
        }
    }

    /// Client on host 0, server on host 1, 5 ms apart at 50 Mbit/s.
    fn run(spec: FlowsClientSpec, until_ms: u64) -> Wire {
        let client = FlowsClient::new(spec, ComponentRng::new(3, "flows")).unwrap();
        let server = FlowsServer::new(
            FlowsServerSpec {
                port: PORT,
                tcp: TcpSpec::default(),
            },
            ComponentRng::new(4, "server"),
        )
        .unwrap();
        let apps = vec![App::FlowsClient(client), App::FlowsServer(server)];
        let mut wire = Wire::new(apps, SimDuration::from_millis(5)).with_rate(50_000_000);
        wire.start(1);
        wire.start(0);
        wire.run_until(at_ms(until_ms));
        wire
    }

    #[test]
    fn every_flow_completes_with_its_bytes_and_its_state_is_freed() {
        let wire = run(
            spec(50.0, FlowSizeDist::Exp { mean: 20_000.0 }, 2000),
            10_000,
        );
        assert!(wire.apps[0].is_finished());
        let r = wire.result(0);
        let n = r["arrivals"].as_u64().unwrap();
        // 50/s for 2 s: 100 expected; Poisson sd 10
        assert!((60..=140).contains(&n), "{n}");
        assert_eq!(r["completed"].as_u64(), Some(n));
        assert_eq!(r["open"].as_u64(), Some(0));
        let sizes: u64 = r["flows"]["size"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_u64().unwrap())
            .sum();
        let server = wire.result(1);
        assert_eq!(server["bytes"].as_u64(), Some(sizes), "every byte arrived");
        assert_eq!(server["connections"].as_u64(), Some(n));
        assert_eq!(server["open"].as_u64(), Some(0), "server state freed");
        // FCT ≥ 2 RTTs (handshake and data) = 20 ms, plus the serialisation
        let flows = &r["flows"];
        for i in 0..n as usize {
            let fct = flows["fct_ns"][i].as_u64().unwrap();
            let size = flows["size"][i].as_u64().unwrap();
            // 160 ns per byte at 50 Mbit/s
            assert!(fct >= 20 * MS + size * 160, "{fct} {size}");
        }
        let ids: Vec<u64> = flows["id"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(ids, (0..n).collect::<Vec<_>>());
    }

    #[test]
    fn ctrl_c_records_the_open_flows_as_not_completed() {
        let mut wire = run(
            spec(100.0, FlowSizeDist::Fixed { bytes: 5_000_000 }, 60_000),
            300,
        );
        wire.interrupt(0);
        let r = wire.result(0);
        let n = r["arrivals"].as_u64().unwrap();
        assert!(n > 0);
        assert_eq!(
            r["completed"].as_u64(),
            Some(0),
            "5 MB at 50 Mbit/s takes 0.8 s"
        );
        assert_eq!(r["flows"]["fct_ns"].as_array().unwrap().len(), n as usize);
        assert!(r["flows"]["fct_ns"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.is_null()));
        assert_eq!(r["interrupted"].as_bool(), Some(true));
    }

    #[test]
    fn the_same_seed_gives_the_same_flows() {
        let a = run(spec(80.0, FlowSizeDist::Exp { mean: 10_000.0 }, 500), 5000).result(0);
        let b = run(spec(80.0, FlowSizeDist::Exp { mean: 10_000.0 }, 500), 5000).result(0);
        assert_eq!(a, b);
    }
}
