//! Observation: packet captures (`tcpdump`) and queue traces started and
//! stopped on the simulator (crate::capture). The taps themselves sit where
//! Linux has them: a device's transmit (wire.rs, `dev_queue_xmit_nit` in
//! net/core/dev.c) and receive (dev.rs, `__netif_receive_skb_core`); the queue
//! trace records at the root qdisc (qdisc_run.rs).

use super::Simulator;
use crate::capture::{CaptureSpec, Output};
use crate::error::{Error, Result};
use serde_json::Value;

impl Simulator {
    /// Start a packet capture (capture/mod.rs) into the output `open` makes
    /// of the spec's path, once the spec is valid; returns its id.
    pub fn capture_start(
        &mut self,
        spec_json: &str,
        open: impl FnOnce(&str) -> std::io::Result<Output>,
    ) -> Result<u32> {
        let spec: CaptureSpec = serde_json::from_str(spec_json)
            .map_err(|e| Error::Schema(format!("capture spec: {e}")))?;
        self.obs.capture_start(&self.topo, spec, open)
    }

    /// Close a capture (idempotent): `{"captured", "matched", "error"}`.
    pub fn capture_stop(&mut self, id: u32) -> Result<Value> {
        self.obs.capture_stop(id)
    }

    /// The capture reached its packet count (`-c`) and closed its file.
    pub fn capture_done(&self, id: u32) -> bool {
        self.obs.capture_done(id)
    }

    /// Captures that reached their count since the last call; `run` returns
    /// early at the instant one does.
    pub fn take_finished_captures(&mut self) -> Vec<u32> {
        self.obs.take_finished()
    }

    /// Trace every change of `dev`'s root qdisc (capture/trace.rs) into the
    /// output `open` makes of `path`, at most one record per
    /// `min_interval_ns` (0 = every change).
    pub fn trace_start(
        &mut self,
        dev: &str,
        path: &str,
        min_interval_ns: u64,
        open: impl FnOnce(&str) -> std::io::Result<Output>,
    ) -> Result<u32> {
        let drops = self
            .topo
            .iface_by_name(dev)
            .map_or(0, |i| self.ifaces[i].drops.total_packets());
        self.obs
            .trace_start(&self.topo, dev, path, min_interval_ns, drops, open)
    }

    /// Close a queue trace: `{"counts": {...} | null, "error": str | null}`.
    pub fn trace_stop(&mut self, id: u32) -> Result<Value> {
        self.obs.trace_stop(id)
    }
}
