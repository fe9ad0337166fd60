//! Host timing noise: how late a loaded Linux host's stack gets to the
//! packets it receives (docs/models.md "Host timing noise").
//!
//! bufferlab's hosts are otherwise punctual (host.rs): each received packet
//! is handled as soon as its CPU cost is paid. A Linux host is not: the
//! receive softirq (`net_rx_action`, net/core/dev.c) may wait for a busy
//! CPU or for `ksoftirqd`, and a segment that finds its socket owned by the
//! reading process waits on the socket's backlog until `release_sock`
//! (`tcp_v4_rcv` → `sk_add_backlog`, net/ipv4/tcp_ipv4.c; `__release_sock`,
//! net/core/sock.c). Everything the stack does in response — the ACK
//! (`__tcp_ack_snd_check`, net/ipv4/tcp_input.c), a ping's echo reply, an
//! ACK's processing at a sender — moves with it.
//!
//! The model: each packet a host receives for itself is handed to its
//! stack a random latency after its CPU is done with it, the latency drawn
//! from a lognormal distribution given by its median and 99th percentile
//! and clamped to a maximum, from a stream of the host's own
//! (`node/<host>/noise`: drawing it never moves another component's
//! draws). A packet is never handed over before the one received ahead of
//! it (one softirq handles a CPU's backlog in order, `process_backlog`), so
//! a long latency holds the packets behind it and releases them together,
//! as a late softirq does; nothing a host sends is reordered, since the
//! transmit path is untouched.

use crate::error::{Error, Result};
use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;

/// The standard normal distribution's 99th percentile.
const Z_P99: f64 = 2.326_347_874_040_841;

/// The latency distribution of one host's receive path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostNoise {
    /// median latency, ns (more than 0)
    pub median_ns: u64,
    /// 99th percentile, ns (at least the median)
    pub p99_ns: u64,
    /// the longest latency: longer draws are clamped to it, ns (at least the p99)
    pub max_ns: u64,
}

impl HostNoise {
    pub fn validate(&self, host: &str) -> Result<()> {
        if self.median_ns == 0 || self.p99_ns < self.median_ns || self.max_ns < self.p99_ns {
            return Err(Error::Schema(format!(
                "host noise of {host}: needs 0 < median ({} ns) <= p99 ({} ns) <= max ({} ns)",
                self.median_ns, self.p99_ns, self.max_ns
            )));
        }
        Ok(())
    }
}

/// Draws from one latency distribution, on a random stream of its own.
#[derive(Clone, Debug)]
pub struct Latency {
    rng: ComponentRng,
    /// the underlying normal's mean and deviation (ln of ns)
    mu: f64,
    sigma: f64,
    max_ns: u64,
}

impl Latency {
    /// `stream` names the random stream (`node/<host>/noise`, `node/<host>/wakeup`).
    pub fn new(spec: HostNoise, seed: u64, stream: &str) -> Self {
        let mu = (spec.median_ns as f64).ln();
        Latency {
            rng: ComponentRng::new(seed, stream),
            mu,
            sigma: ((spec.p99_ns as f64).ln() - mu) / Z_P99,
            max_ns: spec.max_ns,
        }
    }

    /// One latency: exp(mu + sigma·Z), Z standard normal by Box–Muller,
    /// rounded to whole ns and clamped to the maximum.
    pub fn draw(&mut self) -> SimDuration {
        let radius = (-2.0 * (1.0 - self.rng.next_f64()).ln()).sqrt();
        let z = radius * (std::f64::consts::TAU * self.rng.next_f64()).cos();
        let ns = (self.mu + self.sigma * z).exp().round();
        SimDuration((ns as u64).min(self.max_ns))
    }
}

/// A host's processes' timing, each part drawn on a stream of its own
/// (`node/<host>/wakeup`, `node/<host>/setup`); `None`: punctual.
#[derive(Clone, Debug, Default)]
pub struct HostTiming {
    /// how long a process woken by a readable socket takes to run
    pub reader_wakeup: Option<Latency>,
    /// a server program's work between its last stream's arrival and the
    /// test's start (iperf3: `iperf_tcp_accept`'s stream set-up, then
    /// TEST_START and TEST_RUNNING)
    pub app_setup: Option<Latency>,
}

impl HostTiming {
    pub fn new(
        reader_wakeup: Option<HostNoise>,
        app_setup: Option<HostNoise>,
        seed: u64,
        host: &str,
    ) -> Self {
        let draw = |spec: Option<HostNoise>, part: &str| {
            spec.map(|spec| Latency::new(spec, seed, &format!("node/{host}/{part}")))
        };
        HostTiming {
            reader_wakeup: draw(reader_wakeup, "wakeup"),
            app_setup: draw(app_setup, "setup"),
        }
    }
}

/// One host's receive-path latency: its draws and the last hand-over.
#[derive(Clone, Debug)]
pub struct RxNoise {
    latency: Latency,
    /// when the last packet was handed to the stack
    handed: SimTime,
}

impl RxNoise {
    pub fn new(spec: HostNoise, seed: u64, host: &str) -> Self {
        RxNoise {
            latency: Latency::new(spec, seed, &format!("node/{host}/noise")),
            handed: SimTime::ZERO,
        }
    }

    /// When a packet the CPU is done with at `ready` reaches the stack:
    /// after its latency, and not before the packet ahead of it.
    pub fn hand(&mut self, ready: SimTime) -> SimTime {
        let at = (ready + self.latency.draw()).max(self.handed);
        self.handed = at;
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: HostNoise = HostNoise {
        median_ns: 6_000,
        p99_ns: 400_000,
        max_ns: 1_500_000,
    };

    fn draws(seed: u64, n: usize) -> Vec<u64> {
        let mut noise = Latency::new(SPEC, seed, "node/h2/noise");
        (0..n).map(|_| noise.draw().as_nanos()).collect()
    }

    #[test]
    fn the_same_seed_draws_the_same_latencies() {
        assert_eq!(draws(1, 1000), draws(1, 1000));
        assert_ne!(draws(1, 1000), draws(2, 1000));
    }

    #[test]
    fn the_draws_have_the_given_median_and_p99_and_never_exceed_the_max() {
        let mut d = draws(7, 200_000);
        d.sort_unstable();
        let q = |p: f64| d[(p * (d.len() - 1) as f64) as usize] as f64;
        assert!((q(0.5) / 6_000.0 - 1.0).abs() < 0.03, "median {}", q(0.5));
        assert!((q(0.99) / 400_000.0 - 1.0).abs() < 0.08, "p99 {}", q(0.99));
        assert_eq!(*d.last().unwrap(), 1_500_000, "the tail is clamped at max");
    }

    #[test]
    fn a_host_hands_packets_over_in_the_order_it_received_them() {
        let mut noise = RxNoise::new(SPEC, 3, "h1");
        let mut last = SimTime::ZERO;
        let mut held = 0;
        for k in 0..50_000u64 {
            // a packet every 10 µs: far less than the tail, so late ones hold others
            let ready = SimTime::from_nanos(k * 10_000);
            let at = noise.hand(ready);
            assert!(at >= ready && at >= last);
            held += usize::from(at == last);
            last = at;
        }
        assert!(
            held > 100,
            "a late packet releases those behind it together ({held})"
        );
    }

    #[test]
    fn bad_distributions_are_refused() {
        let bad = HostNoise {
            median_ns: 10,
            p99_ns: 5,
            max_ns: 20,
        };
        assert!(bad.validate("h1").is_err());
        assert!(HostNoise {
            median_ns: 0,
            ..SPEC
        }
        .validate("h1")
        .is_err());
        assert!(SPEC.validate("h1").is_ok());
    }
}
