//! `sink`: counts what arrives on a UDP or TCP port (like ns-3's PacketSink)
//! and reports goodput at the end. Runs until interrupted. Over TCP it
//! accepts every connection to its port and reads everything as it arrives.

use super::conns::ConnTable;
use super::sockets::diag::ListenerTcp;
use super::sockets::{PortKind, SocketHandle, LISTEN_MAX};
use super::tcp::{for_host, is_syn, TcpSpec};
use super::{AppCtx, Application, ResultCtx, Sockets};
use crate::error::{Error, Result};
use crate::packet::{Packet, Proto, TsqRelease};
use crate::rng::ComponentRng;
use crate::tcp::endpoint::TcpConfig;
use crate::time::SimTime;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

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
    /// TCP: socket settings of accepted connections (shared by them), and
    /// the connections
    tcp: Option<Arc<TcpConfig>>,
    conns: ConnTable<SocketHandle>,
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
    fn ip_proto(&self) -> Proto {
        match self.proto {
            SinkProto::Udp => Proto::Udp,
            SinkProto::Tcp => Proto::Tcp,
        }
    }

    fn arrived(&mut self, now: SimTime, bytes: u64) {
        if bytes > 0 {
            self.first.get_or_insert(now);
            self.last = Some(now);
            self.bytes += bytes;
        }
    }

    /// Read everything the connection has, and send what it has to send.
    fn drain(&mut self, ctx: &mut AppCtx, id: u32) {
        let h = *self.conns.get(id);
        let now = ctx.now;
        let got = ctx.tcp_mut(h).ep.read(now, u64::MAX);
        ctx.flush(h, 0);
        self.conns.rearm(id, ctx.sockets);
        self.arrived(ctx.now, got);
    }
}

impl Application for Sink {
    const KIND: &'static str = "sink";
    type Spec = SinkSpec;

    fn new(spec: SinkSpec, mut rng: ComponentRng) -> Result<Sink> {
        let tcp = match spec.proto {
            SinkProto::Tcp => Some(Arc::new(spec.tcp.config(rng.next_u64(), 0)?)),
            SinkProto::Udp => None,
        };
        Ok(Sink {
            port: spec.port,
            proto: spec.proto,
            tcp,
            conns: ConnTable::default(),
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

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        // an AF_INET socket bound to the wildcard (bufferlab's own tool)
        let kind = match self.proto {
            SinkProto::Tcp => PortKind::Listen {
                backlog: LISTEN_MAX,
            },
            SinkProto::Udp => PortKind::Udp { peer: None },
        };
        ctx.bind_server(self.ip_proto(), self.port, kind)
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let Some(cfg) = &mut self.tcp else {
            self.packets += 1;
            self.arrived(ctx.now, p.udp_payload_len() as u64);
            let d = ctx.now.saturating_since(p.sent_at).as_nanos();
            self.delay_sum += d as u128;
            self.delay_max = self.delay_max.max(d);
            return;
        };
        let id = match self.conns.find(p, ctx.sockets) {
            Some(id) => {
                let h = *self.conns.get(id);
                let now = ctx.now;
                ctx.tcp_mut(h).input(now, p);
                id
            }
            // the new connection has answered this SYN already; feeding it
            // again would read as a retransmitted SYN (a second SYN-ACK)
            None if is_syn(p) => {
                let rng = ComponentRng::new(self.rng.next_u64(), "sink/conn");
                for_host(cfg, ctx);
                let Some(h) = ctx.accept(Arc::clone(cfg), p, rng, false) else {
                    return;
                };
                self.conns.insert(h, ctx.sockets)
            }
            None => return,
        };
        self.drain(ctx, id);
    }

    fn poll_timeout(&self, _sockets: &Sockets) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        self.conns.next_timeout()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        for id in self.conns.run_timers(ctx.now, ctx.sockets) {
            self.drain(ctx, id);
        }
    }

    /// TCP Small Queues (`Sockets::tsq_release`): a sink sends only ACKs,
    /// which charge nothing; kept for symmetry with the other TCP applications.
    fn tsq_release(&mut self, ctx: &mut AppCtx, releases: &[TsqRelease]) {
        for id in self.conns.tsq_release(ctx, releases) {
            self.drain(ctx, id);
        }
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.finished = true;
            self.end = ctx.now;
            ctx.sockets.unbind_all(ctx.id);
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn result(&self, r: &ResultCtx) -> serde_json::Value {
        let packets = match self.proto {
            SinkProto::Udp => self.packets,
            SinkProto::Tcp => self
                .conns
                .iter()
                .map(|&h| r.sockets.tcp(h).ep.info().data_segs_in as u64)
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

    /// Settings for the TCP connections accepted from now on (a UDP sink
    /// has none to change).
    fn set_listener_tcp(&mut self, spec: &TcpSpec) -> Result<()> {
        match &mut self.tcp {
            Some(cfg) => {
                *cfg = Arc::new(spec.config(cfg.seed, 0)?);
                Ok(())
            }
            None => Err(Error::App("a UDP sink accepts no TCP connections".into())),
        }
    }

    fn listener_tcp(&self) -> Option<ListenerTcp> {
        self.tcp.as_deref().map(ListenerTcp::of)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::bulk::{Bulk, BulkSpec};
    use crate::app::test_support::{at_ms, udp_datagram, Bench, Wire, MS};
    use crate::app::test_support::{no_results, no_sockets};
    use crate::app::App;
    use crate::time::SimDuration;

    const PORT: u16 = 5001;

    fn sink(proto: SinkProto) -> Sink {
        let spec = SinkSpec {
            port: PORT,
            proto,
            tcp: TcpSpec::default(),
        };
        Sink::new(spec, ComponentRng::new(5, "sink")).unwrap()
    }

    /// A UDP sink on host 1 started at `start_ms`, fed datagrams
    /// (arrival ms, send ms, payload bytes) from host 0.
    fn udp_sink_fed(start_ms: u64, datagrams: &[(u64, u64, u32)]) -> (Sink, Bench) {
        let mut bench = Bench::new(2);
        let mut s = sink(SinkProto::Udp);
        s.start(&mut bench.ctx(1, at_ms(start_ms))).unwrap();
        let (from, to) = ((bench.addr(0), 40_000), (bench.addr(1), PORT));
        for (i, &(arrival, sent, len)) in datagrams.iter().enumerate() {
            let p = udp_datagram(from, to, len, i as u64 + 1, at_ms(sent));
            s.handle_packet(&mut bench.ctx(1, at_ms(arrival)), &p);
        }
        (s, bench)
    }

    #[test]
    fn udp_sink_counts_datagrams_payload_bytes_and_arrival_span() {
        let (s, _) = udp_sink_fed(1, &[(10, 4, 1000), (20, 12, 1470), (35, 30, 1)]);
        let r = s.result(&no_results());
        assert_eq!(
            (r["packets"].as_u64(), r["bytes"].as_u64()),
            (Some(3), Some(2471))
        );
        assert_eq!(
            (r["first_ns"].as_u64(), r["last_ns"].as_u64()),
            (Some(10 * MS), Some(35 * MS))
        );
        assert_eq!(
            (r["start_ns"].as_u64(), r["proto"].as_str()),
            (Some(MS), Some("udp"))
        );
    }

    #[test]
    fn udp_sink_reports_mean_and_max_one_way_delay() {
        // delays 6, 8 and 5 ms
        let (s, _) = udp_sink_fed(0, &[(10, 4, 100), (20, 12, 100), (35, 30, 100)]);
        let r = s.result(&no_results());
        assert_eq!(r["mean_delay_ns"].as_f64(), Some(19.0 * MS as f64 / 3.0));
        assert_eq!(r["max_delay_ns"].as_u64(), Some(8 * MS));
    }

    #[test]
    fn an_empty_datagram_is_a_packet_but_not_data() {
        let (s, _) = udp_sink_fed(0, &[(10, 9, 0)]);
        let r = s.result(&no_results());
        assert_eq!(
            (r["packets"].as_u64(), r["bytes"].as_u64()),
            (Some(1), Some(0))
        );
        assert!(r["first_ns"].is_null() && r["last_ns"].is_null());
    }

    #[test]
    fn a_sink_without_traffic_reports_zero_delay() {
        let (s, _) = udp_sink_fed(0, &[]);
        assert_eq!(s.result(&no_results())["mean_delay_ns"].as_f64(), Some(0.0));
    }

    #[test]
    fn sink_runs_until_interrupted_and_then_releases_its_port() {
        let (mut s, mut bench) = udp_sink_fed(0, &[(10, 9, 100)]);
        assert_eq!(s.poll_timeout(no_sockets()), None);
        assert!(!s.is_finished());
        assert_eq!(bench.hosts[1].sockets.lookup(Proto::Udp, PORT), Some(1));
        s.interrupt(&mut bench.ctx(1, at_ms(500)));
        assert!(s.is_finished());
        assert_eq!(s.result(&no_results())["end_ns"].as_u64(), Some(500 * MS));
        assert!(!bench.hosts[1].sockets.is_bound(Proto::Udp, PORT));
    }

    #[test]
    fn a_busy_port_is_refused_with_the_protocol_named() {
        let mut bench = Bench::new(1);
        sink(SinkProto::Tcp)
            .start(&mut bench.ctx(0, SimTime::ZERO))
            .unwrap();
        let err = sink(SinkProto::Tcp)
            .start(&mut bench.ctx(0, SimTime::ZERO))
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("TCP port 5001 is already in use on this host"),
            "{err}"
        );
        // the UDP port of the same number is another socket
        sink(SinkProto::Udp)
            .start(&mut bench.ctx(0, SimTime::ZERO))
            .unwrap();
    }

    #[test]
    fn only_a_tcp_sink_takes_listener_settings() {
        assert!(sink(SinkProto::Udp)
            .set_listener_tcp(&TcpSpec::default())
            .is_err());
        assert!(sink(SinkProto::Tcp)
            .set_listener_tcp(&TcpSpec::default())
            .is_ok());
    }

    fn bulk(bytes: u64) -> App {
        let spec = BulkSpec {
            dst: "10.0.0.3".into(),
            port: PORT,
            bytes: Some(bytes),
            duration_ns: None,
            tos: 0,
            tcp: TcpSpec::default(),
            parallel: 1,
        };
        App::Bulk(Bulk::new(spec, ComponentRng::new(7, "bulk")).unwrap())
    }

    #[test]
    fn tcp_sink_accepts_every_connection_and_reads_all_their_data() {
        // two bulk senders (hosts 0 and 1) into one sink (host 2)
        let apps = vec![bulk(300_000), bulk(50_000), App::Sink(sink(SinkProto::Tcp))];
        let mut wire = Wire::new(apps, SimDuration::from_millis(5)).with_rate(50_000_000);
        wire.start(2);
        wire.start(0);
        wire.start(1);
        wire.run_until(at_ms(5_000));
        assert!(wire.apps[0].is_finished() && wire.apps[1].is_finished());
        let r = wire.result(2);
        assert_eq!(
            (r["connections"].as_u64(), r["bytes"].as_u64()),
            (Some(2), Some(350_000))
        );
        // data segments of at most 1448 bytes: at least ⌈300000/1448⌉ + ⌈50000/1448⌉
        assert!(r["packets"].as_u64().unwrap() >= 208 + 35);
        assert_eq!(r["proto"], "tcp");
    }

    #[test]
    fn connections_from_one_port_on_two_hosts_are_two_connections() {
        let apps = vec![bulk(200_000), bulk(70_000), App::Sink(sink(SinkProto::Tcp))];
        let mut wire = Wire::new(apps, SimDuration::from_millis(5)).with_rate(50_000_000);
        // the same port chooser on both senders: both connect from one port
        wire.bench.hosts[1].sockets =
            crate::app::Sockets::new(ComponentRng::new(0, "bench/sockets"));
        wire.start(2);
        wire.start(0);
        wire.start(1);
        wire.run_until(at_ms(5_000));
        let syn_ports: Vec<u16> = wire
            .log
            .iter()
            .filter(|(_, _, p)| is_syn(p))
            .map(|(_, _, p)| p.src_port)
            .collect();
        assert_eq!(syn_ports.len(), 2);
        assert_eq!(
            syn_ports[0], syn_ports[1],
            "the test needs one port on both hosts"
        );
        assert!(wire.apps[0].is_finished() && wire.apps[1].is_finished());
        let r = wire.result(2);
        assert_eq!(
            (r["connections"].as_u64(), r["bytes"].as_u64()),
            (Some(2), Some(270_000))
        );
    }
}
