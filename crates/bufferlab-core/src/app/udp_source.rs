//! UDP traffic generators in the spirit of ns-3's applications (docs/internals.md
//! "Commands"): constant bit rate, Poisson arrivals, and on/off.
//!
//! The rate counts UDP payload bits, like ns-3's `DataRate` with
//! `PacketSize` and like iperf3's `-b`. CBR sends packet k (0-based) at
//! `start + k·size·8/rate`, computed from k each time so rounding never
//! accumulates. Poisson draws exponential gaps with the same mean. On/off
//! follows ns-3's `OnOffApplication`: it starts in the *off* state, and
//! during an on period sends at the CBR spacing, the first packet one gap
//! after the period starts (ns-3 carries residual bits across periods; we do
//! not — a sub-packet difference per period).
//!
//! `jitter` (the generators' `--jitter`) leaves those definitions alone and
//! delays each datagram's departure by a uniform draw in `[0, jitter]` from
//! the source's own random stream (a separate stream, so Poisson gaps and
//! sizes are the same draws with and without jitter): the nominal instants
//! keep their exact spacing and the mean rate, only departures move. A
//! datagram never leaves before the previous one — a host's sender hands one
//! socket's datagrams to the stack in order, so jitter does not reorder a
//! flow (departure = max(nominal + draw, previous departure)). Datagrams
//! still waiting when the source stops (`-t`, Ctrl-C) are not sent; with
//! `-n` the source ends once the last emitted datagram has left.

use super::{parse_addr, AppCtx, Application, Lifetime, ResultCtx};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Proto};
use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime, NS_PER_SEC};
use serde::Deserialize;
use serde_json::json;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    Cbr,
    Poisson,
    Onoff,
}

/// Payload size of each datagram: always `size`, or exponentially
/// distributed with mean `size` (rounded, at least 1 byte) for M/M/1-like
/// service times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    #[default]
    Fixed,
    Exponential,
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UdpSourceSpec {
    pub pattern: Pattern,
    pub dst: String,
    pub port: u16,
    pub rate_bps: u64,
    /// UDP payload bytes per datagram
    pub size: u32,
    #[serde(default)]
    pub duration_ns: Option<u64>,
    #[serde(default)]
    pub bytes: Option<u64>,
    #[serde(default)]
    pub on_ns: Option<u64>,
    #[serde(default)]
    pub off_ns: Option<u64>,
    #[serde(default)]
    pub tos: u8,
    #[serde(default)]
    pub size_dist: SizeDist,
    /// largest extra delay of a datagram's departure (uniform in [0, jitter]), ns
    #[serde(default)]
    pub jitter_ns: u64,
}

/// Largest UDP payload in an IPv4 datagram.
const MAX_UDP_PAYLOAD: u32 = 65_507;

pub struct UdpSource {
    spec: UdpSourceSpec,
    dst: Ipv4,
    sport: u16,
    rng: ComponentRng,
    /// departure jitter's own stream (only with `jitter_ns` > 0)
    jitter_rng: Option<ComponentRng>,
    /// emitted datagrams waiting for their departure: (instant, size, sequence number)
    pending: VecDeque<(SimTime, u32, u64)>,
    /// datagrams and bytes emitted at their nominal instants
    emitted: u64,
    emitted_bytes: u64,
    start: SimTime,
    stop_at: Option<SimTime>,
    /// packets sent in the current CBR run (on period, or whole run)
    run_index: u64,
    run_start: SimTime,
    next_send: Option<SimTime>,
    /// on/off: the instant the current on/off period ends
    period_end: Option<SimTime>,
    on: bool,
    packets: u64,
    bytes: u64,
    life: Lifetime,
}

impl UdpSource {
    /// Gap of CBR packet `k` from the start of its run.
    fn cbr_offset(&self, k: u64) -> SimDuration {
        let bits = k as u128 * self.spec.size as u128 * 8;
        SimDuration((bits * NS_PER_SEC as u128 / self.spec.rate_bps as u128) as u64)
    }

    fn mean_gap_s(&self) -> f64 {
        self.spec.size as f64 * 8.0 / self.spec.rate_bps as f64
    }

    fn begin_run(&mut self, at: SimTime, first_offset: SimDuration) {
        self.run_start = at;
        self.run_index = 0;
        self.next_send = Some(at + first_offset);
    }

    fn toggle_period(&mut self, now: SimTime) {
        self.on = !self.on;
        if self.on {
            let on = SimDuration(self.spec.on_ns.unwrap_or(0));
            self.period_end = Some(now + on);
            let first = self.cbr_offset(1);
            self.begin_run(now, first);
        } else {
            self.period_end = Some(now + SimDuration(self.spec.off_ns.unwrap_or(0)));
            self.next_send = None;
        }
    }

    /// The datagram of the nominal instant `next_send`: queue it for its
    /// departure and compute the next nominal instant.
    fn emit(&mut self) {
        let Some(nominal) = self.next_send else {
            return;
        };
        let size = match self.spec.size_dist {
            SizeDist::Fixed => self.spec.size,
            SizeDist::Exponential => (self.rng.exponential(self.spec.size as f64).round() as u32)
                .clamp(1, MAX_UDP_PAYLOAD),
        };
        self.emitted += 1;
        self.emitted_bytes += size as u64;
        let late = match self.jitter_rng.as_mut() {
            Some(r) => SimDuration(r.range_u64(0, self.spec.jitter_ns)),
            None => SimDuration::ZERO,
        };
        let previous = self.pending.back().map_or(SimTime::ZERO, |p| p.0);
        self.pending
            .push_back(((nominal + late).max(previous), size, self.emitted));
        self.run_index += 1;
        self.next_send = match self.spec.pattern {
            Pattern::Cbr => Some(self.run_start + self.cbr_offset(self.run_index)),
            Pattern::Onoff => {
                let t = self.run_start + self.cbr_offset(self.run_index + 1);
                self.period_end.filter(|&e| t < e).map(|_| t)
            }
            Pattern::Poisson => {
                let gap = self.rng.exponential(self.mean_gap_s());
                Some(nominal + SimDuration((gap * 1e9) as u64))
            }
        };
    }

    /// Send the queued datagrams whose departure has come.
    fn depart(&mut self, ctx: &mut AppCtx) {
        while let Some(&(at, size, seq)) = self.pending.front() {
            if at > ctx.now {
                break;
            }
            self.pending.pop_front();
            self.packets += 1;
            self.bytes += size as u64;
            ctx.send_udp(
                self.dst,
                self.sport,
                self.spec.port,
                size,
                self.spec.tos,
                seq,
            );
        }
    }

    /// Stop when the duration elapsed or the byte budget is spent.
    fn check_stop(&mut self, ctx: &mut AppCtx) -> bool {
        let out_of_time = self.stop_at.is_some_and(|t| ctx.now >= t);
        let out_of_bytes =
            self.spec.bytes.is_some_and(|b| self.emitted_bytes >= b) && self.pending.is_empty();
        if out_of_time || out_of_bytes {
            self.life.finish(ctx);
        }
        self.life.finished
    }
}

impl Application for UdpSource {
    const KIND: &'static str = "udp_source";
    type Spec = UdpSourceSpec;

    fn new(spec: UdpSourceSpec, rng: ComponentRng) -> Result<UdpSource> {
        if spec.rate_bps == 0 {
            return Err(Error::App("udp source: rate must be positive".into()));
        }
        if spec.size == 0 || spec.size > MAX_UDP_PAYLOAD {
            return Err(Error::App(format!(
                "udp source: size {} outside 1..65507",
                spec.size
            )));
        }
        if spec.pattern == Pattern::Onoff && (spec.on_ns.unwrap_or(0) == 0 || spec.off_ns.is_none())
        {
            return Err(Error::App(
                "onoff: needs a positive on time and an off time".into(),
            ));
        }
        // seeded from a copy of the source's stream, which is left untouched
        let jitter_rng = (spec.jitter_ns > 0)
            .then(|| ComponentRng::new(rng.clone().next_u64(), "udp_source/jitter"));
        Ok(UdpSource {
            dst: parse_addr("udp source dst", &spec.dst)?,
            spec,
            sport: 0,
            rng,
            jitter_rng,
            pending: VecDeque::new(),
            emitted: 0,
            emitted_bytes: 0,
            start: SimTime::ZERO,
            stop_at: None,
            run_index: 0,
            run_start: SimTime::ZERO,
            next_send: None,
            period_end: None,
            on: false,
            packets: 0,
            bytes: 0,
            life: Lifetime::default(),
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        self.sport = ctx.sockets.bind_ephemeral(Proto::Udp, ctx.id)?;
        self.stop_at = self.spec.duration_ns.map(|d| ctx.now + SimDuration(d));
        match self.spec.pattern {
            Pattern::Cbr => self.begin_run(ctx.now, SimDuration::ZERO),
            Pattern::Poisson => {
                let gap = self.rng.exponential(self.mean_gap_s());
                self.next_send = Some(ctx.now + SimDuration((gap * 1e9) as u64));
            }
            Pattern::Onoff => {
                self.on = false;
                self.period_end = Some(ctx.now + SimDuration(self.spec.off_ns.unwrap_or(0)));
            }
        }
        self.check_stop(ctx);
        Ok(())
    }

    fn poll_timeout(&self, _sockets: &super::Sockets) -> Option<SimTime> {
        if self.life.finished {
            return None;
        }
        let departure = self.pending.front().map(|p| p.0);
        [self.next_send, departure, self.period_end, self.stop_at]
            .into_iter()
            .flatten()
            .min()
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        if self.check_stop(ctx) {
            return;
        }
        if self.period_end.is_some_and(|t| ctx.now >= t) {
            self.toggle_period(ctx.now);
        }
        let budget_left = self.spec.bytes.is_none_or(|b| self.emitted_bytes < b);
        if budget_left && self.next_send.is_some_and(|t| ctx.now >= t) {
            self.emit();
        }
        self.depart(ctx);
        self.check_stop(ctx);
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        self.life.interrupt(ctx);
    }

    fn is_finished(&self) -> bool {
        self.life.finished
    }

    fn result(&self, _r: &ResultCtx) -> serde_json::Value {
        json!({
            "packets": self.packets,
            "bytes": self.bytes,
            "start_ns": self.start.as_nanos(),
            "end_ns": self.life.end.as_nanos(),
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
    use crate::app::test_support::Bench;
    use crate::app::test_support::{no_results, no_sockets};
    use crate::packet::Packet;

    const MS: u64 = 1_000_000;

    fn source(pattern: Pattern, jitter_ns: u64, seed: u64) -> UdpSource {
        let spec = UdpSourceSpec {
            pattern,
            dst: "10.0.0.2".into(),
            port: 9,
            rate_bps: 8_000_000, // 1000-byte datagrams every 1 ms
            size: 1000,
            duration_ns: Some(100 * MS),
            bytes: None,
            on_ns: Some(20 * MS),
            off_ns: Some(10 * MS),
            tos: 0,
            size_dist: SizeDist::Fixed,
            jitter_ns,
        };
        UdpSource::new(spec, ComponentRng::new(seed, "src")).unwrap()
    }

    /// Run the source as the engine does until it stops: each datagram with
    /// its departure instant.
    fn run(mut src: UdpSource) -> Vec<(SimTime, Packet)> {
        let mut bench = Bench::new(1);
        src.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        let mut now = SimTime::ZERO;
        let mut sent: Vec<(SimTime, Packet)> =
            bench.sent(0).into_iter().map(|p| (now, p)).collect();
        while let Some(t) = src.poll_timeout(no_sockets()) {
            assert!(t >= now, "time went backwards");
            now = t;
            src.handle_timeout(&mut bench.ctx(0, now));
            sent.extend(bench.sent(0).into_iter().map(|p| (now, p)));
        }
        sent
    }

    /// (departure ns, sequence number) of each datagram.
    fn departures(src: UdpSource) -> Vec<(u64, u64)> {
        run(src)
            .iter()
            .map(|(t, p)| (t.as_nanos(), p.seq))
            .collect()
    }

    #[test]
    fn cbr_without_jitter_keeps_its_exact_instants() {
        let d = departures(source(Pattern::Cbr, 0, 1));
        let expected: Vec<(u64, u64)> = (0..100).map(|k| (k * MS, k + 1)).collect();
        assert_eq!(d, expected);
    }

    #[test]
    fn jitter_delays_each_datagram_within_its_bound_and_never_reorders() {
        // 3 ms of jitter on a 1 ms spacing: draws larger than the gap would
        // reorder; departures stay in sequence order instead
        let d = departures(source(Pattern::Cbr, 3 * MS, 1));
        assert_eq!(
            d,
            departures(source(Pattern::Cbr, 3 * MS, 1)),
            "deterministic"
        );
        assert_ne!(d, departures(source(Pattern::Cbr, 3 * MS, 2)));
        let mut prev = 0;
        let mut delayed = 0;
        for (i, &(t, seq)) in d.iter().enumerate() {
            let nominal = (seq - 1) * MS;
            assert_eq!(seq, i as u64 + 1, "sequence order");
            assert!(t >= prev && t >= nominal, "{t} before {prev} or {nominal}");
            // late by at most the jitter, or by waiting for its predecessor
            assert!(t <= nominal + 3 * MS || t == prev, "{seq} at {t}");
            delayed += (t > nominal) as u32;
            prev = t;
        }
        assert!(delayed > 90, "{delayed} of {} datagrams moved", d.len());
        // datagrams nominally before the 100 ms end but still waiting then are not sent
        let last_nominal = (d.last().unwrap().1 - 1) * MS;
        assert!(d.len() <= 100 && last_nominal < 100 * MS);
    }

    #[test]
    fn poisson_gaps_are_the_same_draws_with_and_without_jitter() {
        let plain = departures(source(Pattern::Poisson, 0, 4));
        let jittered = departures(source(Pattern::Poisson, 200_000, 4));
        // same nominal instants: each jittered departure is 0..0.2 ms after the
        // plain one, or waits for its predecessor
        let mut prev = 0;
        for (&(t0, s0), &(t1, s1)) in plain.iter().zip(&jittered) {
            assert_eq!(s0, s1);
            assert!(
                t1 >= t0 && (t1 <= t0 + 200_000 || t1 == prev),
                "{t0} vs {t1}"
            );
            prev = t1;
        }
        assert!(plain.len().abs_diff(jittered.len()) <= 1);
    }

    #[test]
    fn onoff_keeps_its_periods_and_a_late_datagram_may_spill_into_the_off_time() {
        // off 10 ms, on 20 ms: nominal sends at 11..29 ms, 41..59 ms, 71..89 ms
        let plain = departures(source(Pattern::Onoff, 0, 1));
        let nominal: Vec<u64> = [10, 40, 70]
            .iter()
            .flat_map(|&s| (1..20).map(move |k| (s + k) * MS))
            .collect();
        assert_eq!(plain.iter().map(|d| d.0).collect::<Vec<_>>(), nominal);
        let jittered = departures(source(Pattern::Onoff, 2 * MS, 1));
        assert_eq!(jittered.len(), nominal.len());
        for (&(t, _), &n) in jittered.iter().zip(&nominal) {
            assert!(t >= n && t <= n + 2 * MS + MS, "{t} vs nominal {n}");
        }
    }

    fn with(f: impl FnOnce(&mut UdpSourceSpec)) -> UdpSource {
        let mut src = source(Pattern::Cbr, 0, 1);
        f(&mut src.spec);
        src
    }

    #[test]
    fn cbr_instants_come_from_the_index_so_rounding_never_accumulates() {
        // 1000-byte datagrams at 3 Mbit/s: 8000/3 µs apart, floored per datagram
        let d = departures(with(|s| {
            s.rate_bps = 3_000_000;
            s.duration_ns = Some(12 * MS);
        }));
        let times: Vec<u64> = d.iter().map(|x| x.0).collect();
        assert_eq!(times, vec![0, 2_666_666, 5_333_333, 8_000_000, 10_666_666]);
    }

    #[test]
    fn datagrams_carry_the_size_port_tos_and_a_sequence_from_one() {
        let sent = run(with(|s| {
            s.tos = 0x28;
            s.duration_ns = Some(3 * MS);
        }));
        assert_eq!(sent.len(), 3);
        for (i, (_, p)) in sent.iter().enumerate() {
            assert_eq!(
                (p.proto, p.udp_payload_len(), p.dst_port, p.tos, p.seq),
                (Proto::Udp, 1000, 9, 0x28, i as u64 + 1)
            );
            assert!(p.src_port >= crate::app::EPHEMERAL_LOW);
        }
    }

    #[test]
    fn a_byte_budget_sends_whole_datagrams_until_it_is_reached() {
        // -n 2500 of 1000-byte datagrams: the third passes it; done at its departure
        let mut src = with(|s| {
            s.bytes = Some(2500);
            s.duration_ns = None;
        });
        let mut bench = Bench::new(1);
        src.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        while let Some(t) = src.poll_timeout(no_sockets()) {
            src.handle_timeout(&mut bench.ctx(0, t));
        }
        assert_eq!(bench.sent(0).len(), 3);
        let r = src.result(&no_results());
        assert_eq!(
            (
                r["packets"].as_u64(),
                r["bytes"].as_u64(),
                r["end_ns"].as_u64()
            ),
            (Some(3), Some(3000), Some(2 * MS))
        );
    }

    #[test]
    fn poisson_arrivals_keep_the_mean_rate_and_exponential_gaps() {
        // mean gap 1 ms over 20 s: 20 000 expected, σ = √20000 ≈ 141
        let d = departures(with(|s| {
            s.pattern = Pattern::Poisson;
            s.duration_ns = Some(20_000 * MS);
        }));
        let n = d.len() as f64;
        assert!((n - 20_000.0).abs() < 5.0 * 141.0, "{n} datagrams");
        let gaps: Vec<f64> = d.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        // exponential: standard deviation equals the mean
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
        assert_eq!(
            d,
            departures(with(|s| {
                s.pattern = Pattern::Poisson;
                s.duration_ns = Some(20_000 * MS);
            })),
            "same seed, same draws"
        );
    }

    #[test]
    fn exponential_sizes_average_the_configured_size() {
        let sent = run(with(|s| {
            s.size_dist = SizeDist::Exponential;
            s.duration_ns = Some(10_000 * MS);
        }));
        let sizes: Vec<u32> = sent.iter().map(|(_, p)| p.udp_payload_len()).collect();
        let mean = sizes.iter().map(|&s| s as f64).sum::<f64>() / sizes.len() as f64;
        // 10 000 draws of mean 1000, σ 1000: the mean within 5σ/√n = 50 bytes
        assert!((mean - 1000.0).abs() < 50.0, "{mean}");
        assert!(sizes.iter().all(|&s| s >= 1) && sizes.iter().any(|&s| s != 1000));
    }

    #[test]
    fn onoff_sends_only_strictly_inside_each_on_period() {
        // off 5 ms, on 5 ms at one datagram a ms: +1..+4 ms of each on period
        // (the one due at the period's end is not sent)
        let d = departures(with(|s| {
            s.pattern = Pattern::Onoff;
            s.on_ns = Some(5 * MS);
            s.off_ns = Some(5 * MS);
            s.duration_ns = Some(20 * MS);
        }));
        let ms: Vec<u64> = d.iter().map(|x| x.0 / MS).collect();
        assert_eq!(ms, vec![6, 7, 8, 9, 16, 17, 18, 19]);
    }

    #[test]
    fn ctrl_c_stops_the_source_and_reports_it() {
        let mut src = source(Pattern::Cbr, 0, 1);
        let mut bench = Bench::new(1);
        src.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        for t in 0..3 {
            src.handle_timeout(&mut bench.ctx(0, SimTime(t * MS)));
        }
        src.interrupt(&mut bench.ctx(0, SimTime(2_500_000)));
        assert_eq!(src.poll_timeout(no_sockets()), None);
        let r = src.result(&no_results());
        assert_eq!(
            (
                r["packets"].as_u64(),
                r["end_ns"].as_u64(),
                r["interrupted"].as_bool()
            ),
            (Some(3), Some(2_500_000), Some(true))
        );
        assert!(!bench.hosts[0].sockets.is_bound(Proto::Udp, src.sport));
    }

    #[test]
    fn invalid_specs_are_refused() {
        let bad: [fn(&mut UdpSourceSpec); 4] = [
            |s| s.rate_bps = 0,
            |s| s.size = 0,
            |s| s.size = 65_508,
            |s| {
                s.pattern = Pattern::Onoff;
                s.on_ns = Some(0);
            },
        ];
        for f in bad {
            let mut spec = source(Pattern::Cbr, 0, 1).spec;
            f(&mut spec);
            assert!(UdpSource::new(spec, ComponentRng::new(0, "s")).is_err());
        }
    }
}
