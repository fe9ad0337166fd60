//! The qdisc hierarchy of one interface and the `tc qdisc` verbs.
//! (Skeleton: the signatures are the contract the engine codes against.)

use super::{QdiscCtx, QdiscStats, TcRequest, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use serde::Serialize;

/// Behaviour switches that differ between kernel generations (qdiscs.md §11).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QdiscProfile {
    /// [modern] netem: `limit` counts the delay line only and qlen/backlog
    /// include the child; [lab2019] (false): qlen/backlog = delay line +
    /// immediate queue.
    pub netem_modern_accounting: bool,
    /// [modern] netem duplicates are re-enqueued after the limit check.
    pub netem_dup_after_limit: bool,
}

/// Source of automatic handles (`8001:`, `8002:`, …), machine-wide in Linux
/// (qdiscs.md §1.3, P19).
#[derive(Clone, Debug)]
pub struct AutoHandles {
    pub next: u16,
}

impl Default for AutoHandles {
    fn default() -> Self {
        AutoHandles { next: 0x8001 }
    }
}

/// One block of `tc qdisc show`, in tree order (root first).
#[derive(Clone, Debug, Serialize)]
pub struct QdiscInfo {
    pub kind: &'static str,
    /// handle major (0 for noqueue and anonymous children)
    pub handle: u16,
    /// `None` = root; otherwise the parent's (major, minor)
    pub parent: Option<(u16, u16)>,
    /// hidden default child (shown only with `invisible`)
    pub anonymous: bool,
    /// current options, in the kernel's units (the spec's JSON shape)
    pub options: serde_json::Value,
    pub stats: QdiscStats,
}

pub struct QdiscTree {}

impl QdiscTree {
    pub fn new(_dev: &str, _seed: u64, _profile: QdiscProfile) -> Self {
        todo!()
    }
    pub fn is_noqueue(&self) -> bool {
        todo!()
    }
    pub fn enqueue(&mut self, _ctx: &mut QdiscCtx, _id: PacketId) -> Verdict {
        todo!()
    }
    pub fn dequeue(&mut self, _ctx: &mut QdiscCtx) -> Option<PacketId> {
        todo!()
    }
    pub fn apply(&mut self, _req: &TcRequest, _ctx: &mut QdiscCtx, _auto: &mut AutoHandles) -> Result<(), TcError> {
        todo!()
    }
    pub fn show(&self) -> Vec<QdiscInfo> {
        todo!()
    }
    pub fn leaf_backlog(&self) -> (u64, u64) {
        todo!()
    }
    pub fn held_packets(&self) -> u64 {
        todo!()
    }
}
