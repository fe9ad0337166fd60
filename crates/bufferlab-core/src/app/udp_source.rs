//! UDP traffic generators in the spirit of ns-3's applications (DESIGN.md
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

use super::{parse_addr, AppCtx, Lifetime};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Proto};
use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime, NS_PER_SEC};
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    Cbr,
    Poisson,
    Onoff,
}

/// Payload size of each datagram: always `size`, or exponentially
/// distributed with mean `size` (rounded, at least 1 byte) for M/M/1-like
/// service times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeDist {
    #[default]
    Fixed,
    Exponential,
}

#[derive(Clone, Debug, Deserialize)]
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
}

/// Largest UDP payload in an IPv4 datagram.
const MAX_UDP_PAYLOAD: u32 = 65_507;

pub struct UdpSource {
    spec: UdpSourceSpec,
    dst: Ipv4,
    sport: u16,
    rng: ComponentRng,
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
    pub fn new(spec: UdpSourceSpec, rng: ComponentRng) -> Result<UdpSource> {
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
        Ok(UdpSource {
            dst: parse_addr("udp source dst", &spec.dst)?,
            spec,
            sport: 0,
            rng,
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

    /// Gap of CBR packet `k` from the start of its run.
    fn cbr_offset(&self, k: u64) -> SimDuration {
        let bits = k as u128 * self.spec.size as u128 * 8;
        SimDuration((bits * NS_PER_SEC as u128 / self.spec.rate_bps as u128) as u64)
    }

    fn mean_gap_s(&self) -> f64 {
        self.spec.size as f64 * 8.0 / self.spec.rate_bps as f64
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        self.sport = ctx.sockets.bind_ephemeral(Proto::Udp, ctx.id);
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

    fn begin_run(&mut self, at: SimTime, first_offset: SimDuration) {
        self.run_start = at;
        self.run_index = 0;
        self.next_send = Some(at + first_offset);
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.life.finished {
            return None;
        }
        [self.next_send, self.period_end, self.stop_at]
            .into_iter()
            .flatten()
            .min()
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        if self.check_stop(ctx) {
            return;
        }
        if self.period_end.is_some_and(|t| ctx.now >= t) {
            self.toggle_period(ctx.now);
        }
        if self.next_send.is_some_and(|t| ctx.now >= t) {
            self.send(ctx);
        }
        self.check_stop(ctx);
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

    fn send(&mut self, ctx: &mut AppCtx) {
        let size = match self.spec.size_dist {
            SizeDist::Fixed => self.spec.size,
            SizeDist::Exponential => (self.rng.exponential(self.spec.size as f64).round() as u32)
                .clamp(1, MAX_UDP_PAYLOAD),
        };
        self.packets += 1;
        self.bytes += size as u64;
        ctx.send_udp(
            self.dst,
            self.sport,
            self.spec.port,
            size,
            self.spec.tos,
            self.packets,
        );
        self.run_index += 1;
        self.next_send = match self.spec.pattern {
            Pattern::Cbr => Some(self.run_start + self.cbr_offset(self.run_index)),
            Pattern::Onoff => {
                let t = self.run_start + self.cbr_offset(self.run_index + 1);
                self.period_end.filter(|&e| t < e).map(|_| t)
            }
            Pattern::Poisson => {
                let gap = self.rng.exponential(self.mean_gap_s());
                Some(ctx.now + SimDuration((gap * 1e9) as u64))
            }
        };
    }

    /// Stop when the duration elapsed or the byte budget is spent.
    fn check_stop(&mut self, ctx: &mut AppCtx) -> bool {
        let out_of_time = self.stop_at.is_some_and(|t| ctx.now >= t);
        let out_of_bytes = self.spec.bytes.is_some_and(|b| self.bytes >= b);
        if out_of_time || out_of_bytes {
            self.life.finish(ctx);
        }
        self.life.finished
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        self.life.interrupt(ctx);
    }

    pub fn destination(&self) -> Ipv4 {
        self.dst
    }

    pub fn is_finished(&self) -> bool {
        self.life.finished
    }

    pub fn result(&self) -> serde_json::Value {
        json!({
            "packets": self.packets,
            "bytes": self.bytes,
            "start_ns": self.start.as_nanos(),
            "end_ns": self.life.end.as_nanos(),
            "interrupted": self.life.interrupted,
        })
    }
}
