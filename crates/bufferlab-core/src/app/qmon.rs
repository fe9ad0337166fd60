//! `plot_q.sh IFACE`: samples the backlog of the interface's leaf qdisc (the
//! last block `tc -s qdisc show` prints) every `interval`, as the real
//! script polls `tc -s` (formats.md §6). Runs until interrupted.

use super::AppCtx;
use crate::error::{Error, Result};
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use serde_json::json;

#[derive(Clone, Debug, Deserialize)]
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
}

impl Qmon {
    pub fn new(spec: QmonSpec) -> Result<Qmon> {
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
        })
    }

    pub fn dev(&self) -> &str {
        &self.dev
    }

    pub fn iface(&self) -> usize {
        self.iface
    }

    pub fn set_iface(&mut self, iface: usize) {
        self.iface = iface;
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.next = Some(ctx.now);
        Ok(())
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.finished {
            None
        } else {
            self.next
        }
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx, backlog: (u64, u64)) {
        self.samples.push((ctx.now, backlog.0, backlog.1));
        self.next = Some(ctx.now + self.interval);
    }

    pub fn interrupt(&mut self, _ctx: &mut AppCtx) {
        self.finished = true;
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn result(&self) -> serde_json::Value {
        let samples: Vec<_> = self
            .samples
            .iter()
            .map(|(t, b, q)| json!([t.as_nanos(), b, q]))
            .collect();
        json!({"dev": self.dev, "samples": samples})
    }
}
