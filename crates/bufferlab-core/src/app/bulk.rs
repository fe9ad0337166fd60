//! `bulk`: a TCP bulk sender in the spirit of ns-3's BulkSendApplication
//! (docs/internals.md "Commands"). It keeps the socket's send buffer full until
//! `bytes` have been written (then closes, sending FIN) or `duration` has
//! passed (then stops writing and closes). It finishes when everything it
//! wrote has been acknowledged, or when the connection is refused or reset.
//!
//! `parallel` = N opens N connections at once (`bulk -P N`, iperf3's `-P`
//! without its 128 cap), each from its own ephemeral port, sharing the byte
//! budget as iperf3's streams share `-n`; they live in a [`ConnTable`], so a
//! packet costs the same with 10 000 connections as with one. Connection 0
//! uses the application's own random stream (a single connection is exactly
//! what it was before `-P`); connection k > 0 a stream derived from the
//! socket seed and k.

use super::conns::{sock_field, ConnTable};
use super::sockets::SocketHandle;
use super::tcp::{for_host, TcpSpec};
use super::{parse_addr, AppCtx, Application, Lifetime, ResultCtx, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{TcpConfig, TcpState};
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// More connections than one host has ephemeral ports for cannot be opened.
pub const MAX_PARALLEL: u32 = 20_000;

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
    /// connections (`-P`), at least 1
    #[serde(default = "one")]
    pub parallel: u32,
}

fn one() -> u32 {
    1
}

/// One connection and what was written into it.
struct Stream {
    sock: SocketHandle,
    written: u64,
    closed: bool,
    /// everything written acknowledged, or the connection gone
    done: bool,
}

sock_field!(Stream);

pub struct Bulk {
    dst: Ipv4,
    port: u16,
    limit: Option<u64>,
    duration: Option<SimDuration>,
    tos: u8,
    parallel: u32,
    /// shared by the streams
    cfg: Arc<TcpConfig>,
    rng: Option<ComponentRng>,
    streams: ConnTable<Stream>,
    start: SimTime,
    stop_at: Option<SimTime>,
    written: u64,
    closed: bool,
    done: u32,
    life: Lifetime,
    refused: bool,
}

impl Bulk {
    /// Fill one stream's send buffer from the shared budget; close the
    /// stream once the budget is spent (or the application stopped).
    fn pump(&mut self, ctx: &mut AppCtx, slot: u32) {
        let now = ctx.now;
        let s = self.streams.get_mut(slot);
        let h = s.sock;
        if !s.closed && self.closed {
            ctx.tcp_mut(h).ep.close(now);
            s.closed = true;
        }
        if !s.closed && ctx.tcp(h).ep.state() == TcpState::Established {
            let want = self.limit.map_or(u64::MAX, |l| l - self.written);
            let n = ctx.tcp_mut(h).ep.write(now, want);
            s.written += n;
            self.written += n;
            if self.limit.is_some_and(|l| self.written >= l) {
                ctx.tcp_mut(h).ep.close(now);
                s.closed = true;
                self.closed = true;
            }
        }
        ctx.flush(h, self.tos);
        let ep = &ctx.tcp(h).ep;
        let state = ep.state();
        if state == TcpState::Closed && !s.closed {
            self.refused = true; // reset before or during the transfer
        }
        let all_acked = s.closed && ep.bytes_acked() >= s.written;
        if !s.done && (all_acked || state == TcpState::Closed) {
            s.done = true;
            self.done += 1;
        }
        self.streams.rearm(slot, ctx.sockets);
    }

    /// The budget ran out or the time is up: every stream closes.
    fn close_all(&mut self, ctx: &mut AppCtx) {
        self.closed = true;
        let slots: Vec<u32> = self.streams.slots().collect();
        for slot in slots {
            self.pump(ctx, slot);
        }
    }

    fn check_finished(&mut self, ctx: &mut AppCtx) {
        if self.done == self.parallel {
            self.life.finish(ctx);
        }
    }
}

impl Application for Bulk {
    const KIND: &'static str = "bulk";
    type Spec = BulkSpec;

    fn new(spec: BulkSpec, mut rng: ComponentRng) -> Result<Bulk> {
        if !(1..=MAX_PARALLEL).contains(&spec.parallel) {
            return Err(Error::App(format!(
                "bulk parallel {} outside 1..{MAX_PARALLEL}",
                spec.parallel
            )));
        }
        let cfg = spec.tcp.config(rng.next_u64(), spec.tos)?;
        Ok(Bulk {
            dst: parse_addr("bulk dst", &spec.dst)?,
            port: spec.port,
            limit: spec.bytes,
            duration: spec.duration_ns.map(SimDuration),
            tos: spec.tos,
            parallel: spec.parallel,
            cfg: Arc::new(cfg),
            rng: Some(rng),
            streams: ConnTable::default(),
            start: SimTime::ZERO,
            stop_at: None,
            written: 0,
            closed: false,
            done: 0,
            life: Lifetime::default(),
            refused: false,
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        self.stop_at = self.duration.map(|d| ctx.now + d);
        for_host(&mut self.cfg, ctx);
        let mut first = self.rng.take();
        for k in 0..self.parallel {
            let port = ctx.sockets.bind_ephemeral(Proto::Tcp, ctx.id)?;
            let rng = first.take().unwrap_or_else(|| {
                ComponentRng::new(self.cfg.seed.wrapping_add(k as u64), "bulk/stream")
            });
            let sock = ctx.connect(Arc::clone(&self.cfg), port, (self.dst, self.port), rng);
            ctx.flush(sock, self.tos);
            let stream = Stream {
                sock,
                written: 0,
                closed: false,
                done: false,
            };
            self.streams.insert(stream, ctx.sockets);
        }
        Ok(())
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        if let Some(slot) = self.streams.find(p, ctx.sockets) {
            let h = self.streams.get(slot).sock;
            let now = ctx.now;
            ctx.tcp_mut(h).input(now, p);
            let budget_open = !self.closed;
            self.pump(ctx, slot);
            if budget_open && self.closed && self.parallel > 1 {
                self.close_all(ctx);
            }
        }
        self.check_finished(ctx);
    }

    fn poll_timeout(&self, _sockets: &Sockets) -> Option<SimTime> {
        if self.life.finished {
            return None;
        }
        let stop = self.stop_at.filter(|_| !self.closed);
        [self.streams.next_timeout(), stop]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        if self.stop_at.is_some_and(|t| ctx.now >= t) && !self.closed {
            self.close_all(ctx);
        }
        for slot in self.streams.run_timers(ctx.now, ctx.sockets) {
            self.pump(ctx, slot);
        }
        self.check_finished(ctx);
    }

    /// TCP Small Queues: the host gave back send memory of these streams
    /// (`Sockets::tsq_release`).
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for slot in self.streams.tsq_release(ctx, releases) {
            self.pump(ctx, slot);
        }
        self.check_finished(ctx);
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        self.life.interrupt(ctx);
    }

    fn is_finished(&self) -> bool {
        self.life.finished
    }

    fn result(&self, r: &ResultCtx) -> serde_json::Value {
        let (mut acked, mut retransmits) = (0, 0u64);
        for slot in self.streams.slots() {
            let info = r.sockets.tcp(self.streams.get(slot).sock).ep.info();
            acked += info.bytes_acked;
            retransmits += info.total_retrans as u64;
        }
        json!({
            "bytes": self.written,
            "acked": acked,
            "retransmits": retransmits,
            "congestion": self.cfg.congestion,
            "parallel": self.parallel,
            "start_ns": self.start.as_nanos(),
            "end_ns": self.life.end.as_nanos(),
            "refused": self.refused,
            "interrupted": self.life.interrupted,
        })
    }

    fn destination(&self) -> Option<Ipv4> {
        Some(self.dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::sink::{Sink, SinkProto, SinkSpec};
    use crate::app::test_support::{at_ms, Bench, Wire, MS};
    use crate::app::App;
    use crate::packet::{tcp_flags, Payload, TcpHeader};

    const PORT: u16 = 5001;

    fn spec(bytes: Option<u64>, duration_ms: Option<u64>) -> BulkSpec {
        BulkSpec {
            dst: "10.0.0.2".into(),
            port: PORT,
            bytes,
            duration_ns: duration_ms.map(|d| d * MS),
            tos: 0,
            tcp: TcpSpec::default(),
            parallel: 1,
        }
    }

    fn bulk(spec: BulkSpec) -> Bulk {
        Bulk::new(spec, ComponentRng::new(7, "bulk")).unwrap()
    }

    /// Bulk on host 0 to a TCP sink on host 1, 5 ms apart at 50 Mbit/s.
    fn transfer(spec: BulkSpec, until_ms: u64) -> Wire {
        let sink = Sink::new(
            SinkSpec {
                port: PORT,
                proto: SinkProto::Tcp,
                tcp: TcpSpec::default(),
            },
            ComponentRng::new(5, "sink"),
        )
        .unwrap();
        let apps = vec![App::Bulk(bulk(spec)), App::Sink(sink)];
        let mut wire = Wire::new(apps, SimDuration::from_millis(5)).with_rate(50_000_000);
        wire.start(1);
        wire.start(0);
        wire.run_until(at_ms(until_ms));
        wire
    }

    #[test]
    fn start_opens_the_connection_with_a_syn_from_an_ephemeral_port() {
        let mut bench = Bench::new(2);
        let mut b = bulk(spec(Some(1000), None));
        b.start(&mut bench.ctx(0, at_ms(3))).unwrap();
        let sent = bench.sent(0);
        assert_eq!(sent.len(), 1);
        let syn = sent[0];
        assert!(matches!(syn.payload, Payload::Tcp(h) if h.flags == tcp_flags::SYN));
        assert_eq!((syn.dst, syn.dst_port), (bench.addr(1), PORT));
        assert!((crate::app::EPHEMERAL_LOW..=crate::app::EPHEMERAL_HIGH).contains(&syn.src_port));
        assert_eq!(
            bench.hosts[0].sockets.lookup(Proto::Tcp, syn.src_port),
            Some(0)
        );
        assert_eq!(
            b.result(&bench.results(0))["start_ns"].as_u64(),
            Some(3 * MS)
        );
    }

    #[test]
    fn a_byte_budget_is_sent_whole_and_finishes_once_acknowledged() {
        let wire = transfer(spec(Some(1_000_000), None), 10_000);
        assert!(wire.apps[0].is_finished());
        let r = wire.result(0);
        // tcpi_bytes_acked counts the SYN and the FIN as one byte each
        assert_eq!(
            (r["bytes"].as_u64(), r["acked"].as_u64()),
            (Some(1_000_000), Some(1_000_002))
        );
        assert_eq!(
            (r["refused"].as_bool(), r["interrupted"].as_bool()),
            (Some(false), Some(false))
        );
        assert_eq!(wire.result(1)["bytes"].as_u64(), Some(1_000_000));
        // 691 frames of at most 1514 bytes at 50 Mbit/s: over 167 ms on the wire alone
        assert!(r["end_ns"].as_u64().unwrap() > 167 * MS);
        assert_eq!(r["congestion"], "cubic");
    }

    #[test]
    fn a_duration_stops_writing_and_finishes_when_everything_written_is_acked() {
        let wire = transfer(spec(None, Some(500)), 10_000);
        let r = wire.result(0);
        let written = r["bytes"].as_u64().unwrap();
        assert_eq!(r["acked"].as_u64(), Some(written + 2), "data, SYN and FIN");
        assert_eq!(wire.result(1)["bytes"].as_u64(), Some(written));
        assert!(r["end_ns"].as_u64().unwrap() >= 500 * MS);
        // most of 0.5 s of the 50 Mbit/s wire (3.1 MB), or more: what sat in
        // the socket at the stop is still delivered
        assert!(written > 2_000_000, "{written}");
    }

    #[test]
    fn ctrl_c_ends_the_transfer_at_once() {
        let mut wire = transfer(spec(None, None), 200);
        assert!(!wire.apps[0].is_finished());
        wire.interrupt(0);
        assert!(wire.apps[0].is_finished());
        let r = wire.result(0);
        assert_eq!(
            (r["interrupted"].as_bool(), r["end_ns"].as_u64()),
            (Some(true), Some(200 * MS))
        );
        assert_eq!(
            wire.apps[0].poll_timeout(&wire.bench.hosts[0].sockets),
            None
        );
    }

    #[test]
    fn a_reset_answering_the_syn_is_a_refused_connection() {
        let mut bench = Bench::new(2);
        let mut b = bulk(spec(Some(1000), None));
        b.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        let syn = bench.sent(0)[0];
        let Payload::Tcp(h) = syn.payload else {
            unreachable!()
        };
        // what a host without a listener answers (tcp_v4_send_reset)
        let rst = Packet {
            src: syn.dst,
            dst: syn.src,
            src_port: syn.dst_port,
            dst_port: syn.src_port,
            payload: Payload::Tcp(TcpHeader {
                ack: h.seq.wrapping_add(1),
                flags: tcp_flags::RST | tcp_flags::ACK,
                ..TcpHeader::default()
            }),
            len: 14 + 20 + 20,
            ..syn
        };
        b.handle_packet(&mut bench.ctx(0, at_ms(1)), &rst);
        assert!(b.is_finished());
        let r = b.result(&bench.results(0));
        assert_eq!(
            (r["refused"].as_bool(), r["bytes"].as_u64()),
            (Some(true), Some(0))
        );
        assert!(!bench.hosts[0].sockets.is_bound(Proto::Tcp, syn.src_port));
    }

    #[test]
    fn parallel_connections_open_from_distinct_ports_and_share_the_byte_budget() {
        let mut bench = Bench::new(2);
        let mut b = bulk(BulkSpec {
            parallel: 5,
            ..spec(Some(1000), None)
        });
        b.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        let mut ports: Vec<u16> = bench.sent(0).iter().map(|p| p.src_port).collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 5, "one SYN from each connection's own port");

        let wire = transfer(
            BulkSpec {
                parallel: 8,
                ..spec(Some(2_000_000), None)
            },
            10_000,
        );
        let r = wire.result(0);
        assert!(wire.apps[0].is_finished());
        // the budget is the total (iperf3's -n); SYN and FIN of each connection count
        assert_eq!(
            (
                r["bytes"].as_u64(),
                r["acked"].as_u64(),
                r["parallel"].as_u64()
            ),
            (Some(2_000_000), Some(2_000_000 + 2 * 8), Some(8))
        );
        assert_eq!(wire.result(1)["bytes"].as_u64(), Some(2_000_000));
        assert_eq!(wire.result(1)["connections"].as_u64(), Some(8));
    }

    #[test]
    fn a_parallel_count_outside_the_range_is_refused() {
        for parallel in [0, MAX_PARALLEL + 1] {
            let err = Bulk::new(
                BulkSpec {
                    parallel,
                    ..spec(None, None)
                },
                ComponentRng::new(0, "b"),
            )
            .err()
            .expect("refused");
            assert!(err.to_string().contains("outside 1..20000"), "{err}");
        }
    }

    #[test]
    fn bad_destination_or_congestion_control_is_refused() {
        let mut s = spec(None, None);
        s.dst = "nowhere".into();
        assert!(Bulk::new(s, ComponentRng::new(0, "b")).is_err());
        let mut s = spec(None, None);
        s.tcp.congestion = Some("prague".into());
        assert!(Bulk::new(s, ComponentRng::new(0, "b")).is_err());
    }
}
