//! `plot_q.sh IFACE`: samples the backlog of the interface's leaf qdisc (the
//! last block `tc -s qdisc show` prints) every `interval`, as the real
//! script polls `tc -s` (docs/semantics/formats.md §6). Runs until interrupted.
//!
//! Memory is bounded: at most [`MAX_SAMPLES`] samples are kept (the Python
//! side rejects, at check time, an interval that could exceed it:
//! docs/fuzzing.md "Resource budgets"), and the buffer grows fallibly; past
//! the cap or when memory runs out the monitor stops sampling and its result
//! carries an `"error"` instead of the process aborting.

use super::{AppCtx, Application, ResultCtx};
use crate::error::{Error, Result};
use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use serde_json::json;

/// The most samples one monitor keeps (24 bytes each here, ~0.3 KB each while
/// the result is turned into JSON and Python lists).
pub const MAX_SAMPLES: usize = 1_000_000;

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QmonSpec {
    pub dev: String,
    pub interval_ns: u64,
}

pub struct Qmon {
    dev: String,
    iface: usize,
    interval: SimDuration,
    next: Option<SimTime>,
    /// (time, backlog bytes, backlog packets)
    samples: Vec<(SimTime, u64, u64)>,
    finished: bool,
    /// why sampling stopped early (sample cap or allocation failure)
    error: Option<String>,
}

impl Qmon {
    /// Room for one more sample, or why not (never aborts on allocation).
    fn grow(&mut self) -> std::result::Result<(), String> {
        if self.samples.len() >= MAX_SAMPLES {
            return Err(format!(
                "plot_q.sh {}: stopped after {} samples (the most one monitor keeps); \
                 raise [sim] queue_sample_interval",
                self.dev, MAX_SAMPLES
            ));
        }
        if self.samples.len() == self.samples.capacity() {
            let want = self
                .samples
                .len()
                .max(1024)
                .min(MAX_SAMPLES - self.samples.len());
            self.samples.try_reserve_exact(want).map_err(|e| {
                format!(
                    "plot_q.sh {}: out of memory after {} samples ({e})",
                    self.dev,
                    self.samples.len()
                )
            })?;
        }
        Ok(())
    }
}

impl Application for Qmon {
    const KIND: &'static str = "qmon";
    type Spec = QmonSpec;

    fn new(spec: QmonSpec, _rng: ComponentRng) -> Result<Qmon> {
        if spec.interval_ns == 0 {
            return Err(Error::App(
                "plot_q.sh: the sampling interval must be positive".into(),
            ));
        }
        Ok(Qmon {
            dev: spec.dev,
            iface: usize::MAX,
            interval: SimDuration(spec.interval_ns),
            next: None,
            samples: Vec::new(),
            finished: false,
            error: None,
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.next = Some(ctx.now);
        Ok(())
    }

    fn poll_timeout(&self, _sockets: &super::Sockets) -> Option<SimTime> {
        if self.finished {
            None
        } else {
            self.next
        }
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        let backlog = ctx.qdiscs.leaf_backlog(self.iface);
        if let Err(e) = self.grow() {
            self.error = Some(e);
            self.finished = true;
            self.next = None;
            return;
        }
        self.samples.push((ctx.now, backlog.0, backlog.1));
        self.next = Some(ctx.now + self.interval);
    }

    fn interrupt(&mut self, _ctx: &mut AppCtx) {
        self.finished = true;
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn result(&self, _r: &ResultCtx) -> serde_json::Value {
        let samples: Vec<_> = self
            .samples
            .iter()
            .map(|(t, b, q)| json!([t.as_nanos(), b, q]))
            .collect();
        match &self.error {
            Some(e) => json!({"dev": self.dev, "samples": samples, "error": e}),
            None => json!({"dev": self.dev, "samples": samples}),
        }
    }

    fn monitored_dev(&self) -> Option<&str> {
        Some(&self.dev)
    }

    fn bind_monitored_iface(&mut self, iface: usize) {
        self.iface = iface;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::test_support::{no_results, no_sockets};

    #[test]
    fn sample_cap_stops_the_monitor_with_an_error() {
        let mut q = Qmon::new(
            QmonSpec {
                dev: "s1-eth2".into(),
                interval_ns: 1,
            },
            ComponentRng::new(0, "q"),
        )
        .unwrap();
        q.samples = Vec::with_capacity(MAX_SAMPLES);
        q.samples.resize(MAX_SAMPLES, (SimTime(0), 0, 0));
        assert!(q.grow().is_err());
        assert!(q.result(&no_results())["error"].is_null());
        q.error = q.grow().err();
        q.finished = true;
        assert!(q.result(&no_results())["error"]
            .as_str()
            .unwrap()
            .contains("queue_sample_interval"));
        assert!(q.poll_timeout(no_sockets()).is_none());
    }

    #[test]
    fn growth_is_bounded_by_the_cap() {
        let mut q = Qmon::new(
            QmonSpec {
                dev: "d".into(),
                interval_ns: 1,
            },
            ComponentRng::new(0, "q"),
        )
        .unwrap();
        for _ in 0..5000 {
            q.grow().unwrap();
            q.samples.push((SimTime(0), 0, 0));
        }
        assert!(q.samples.capacity() <= MAX_SAMPLES);
    }

    use crate::app::test_support::{at_ms, Bench, MS};
    use crate::app::{App, AppSpec};
    use crate::rng::ComponentRng;

    fn monitor(interval_ms: u64) -> Qmon {
        Qmon::new(
            QmonSpec {
                dev: "s1-eth2".into(),
                interval_ns: interval_ms * MS,
            },
            ComponentRng::new(0, "q"),
        )
        .unwrap()
    }

    #[test]
    fn samples_start_at_once_and_follow_every_interval_with_the_backlog_given() {
        let mut q = monitor(10);
        let mut bench = Bench::new(1);
        q.start(&mut bench.ctx(0, at_ms(5))).unwrap();
        let backlog = [(0, 0), (3000, 2), (1514, 1)];
        for b in backlog {
            let t = q.poll_timeout(no_sockets()).unwrap();
            bench.qdiscs.backlog.set(b);
            q.handle_timeout(&mut bench.ctx(0, t));
        }
        assert_eq!(
            q.result(&no_results()),
            json!({"dev": "s1-eth2", "samples": [[5 * MS, 0, 0], [15 * MS, 3000, 2], [25 * MS, 1514, 1]]})
        );
        assert_eq!(q.poll_timeout(no_sockets()), Some(at_ms(35)));
        assert!(bench.sent(0).is_empty(), "a monitor sends nothing");
    }

    #[test]
    fn a_late_wake_up_shifts_the_following_samples() {
        // the next sample is due one interval after the last one taken
        let mut q = monitor(10);
        let mut bench = Bench::new(1);
        q.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        q.handle_timeout(&mut bench.ctx(0, at_ms(3)));
        assert_eq!(q.poll_timeout(no_sockets()), Some(at_ms(13)));
    }

    #[test]
    fn ctrl_c_stops_sampling_and_keeps_the_samples() {
        let mut q = monitor(10);
        let mut bench = Bench::new(1);
        q.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        bench.qdiscs.backlog.set((7, 1));
        q.handle_timeout(&mut bench.ctx(0, SimTime::ZERO));
        q.interrupt(&mut bench.ctx(0, at_ms(4)));
        assert!(q.is_finished());
        assert_eq!(q.poll_timeout(no_sockets()), None);
        assert_eq!(q.result(&no_results())["samples"], json!([[0, 7, 1]]));
    }

    #[test]
    fn the_engine_passes_the_monitored_interface_to_the_backlog_reader() {
        let spec: AppSpec =
            serde_json::from_value(json!({"kind": "qmon", "dev": "r1-eth0", "interval_ns": 1000}))
                .unwrap();
        let mut app = App::new(spec, ComponentRng::new(0, "q")).unwrap();
        assert_eq!(app.monitored_dev(), Some("r1-eth0"));
        app.bind_monitored_iface(4);
        let mut bench = Bench::new(1);
        app.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        bench.qdiscs.backlog.set((100, 1));
        app.handle_timeout(&mut bench.ctx(0, SimTime::ZERO));
        assert_eq!(bench.qdiscs.asked.get(), Some(4));
        assert_eq!(
            app.result(&bench.results(0))["samples"],
            json!([[0, 100, 1]])
        );
    }

    #[test]
    fn a_zero_interval_is_refused() {
        let spec = QmonSpec {
            dev: "d".into(),
            interval_ns: 0,
        };
        assert!(Qmon::new(spec, ComponentRng::new(0, "q")).is_err());
    }
}
