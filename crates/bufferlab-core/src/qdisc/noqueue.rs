//! `noqueue`, the default root of a virtual device (net/sched/sch_generic.c
//! `noqueue_qdisc_ops`): no queue, zero counters. Packets handed to a
//! noqueue tree anyway pass straight through.

use super::ops::{wrong_kind, BuildEnv, Built, Changed, Peeked, Purged, Qdisc, Reduce};
use super::spec::QdiscSpec;
use super::tree::Node;
use super::{DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use serde_json::json;
use std::collections::VecDeque;

#[derive(Debug, Default)]
pub struct Noqueue {
    passthrough: VecDeque<PacketId>,
    stats: QdiscStats,
}

impl Qdisc for Noqueue {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        if !matches!(spec, QdiscSpec::Noqueue) {
            return None;
        }
        Some(if env.at_root {
            Ok(Built::alone(Noqueue::default()))
        } else {
            Err(TcError::Invalid(
                "noqueue can only be the root qdisc".into(),
            ))
        })
    }

    fn kind(&self) -> &'static str {
        "noqueue"
    }

    fn enqueue(
        &mut self,
        _ctx: &mut QdiscCtx,
        _reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        self.passthrough.push_back(id);
        Verdict::Queued
    }

    fn dequeue(
        &mut self,
        _ctx: &mut QdiscCtx,
        _reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        self.passthrough.pop_front()
    }

    fn peek(&mut self, _ctx: &mut QdiscCtx, _reduce: &mut Reduce, _child: &mut [Node]) -> Peeked {
        Peeked::Head(self.passthrough.front().copied())
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        while let Some(p) = self.passthrough.pop_front() {
            purged.add(Purged {
                packets: 1,
                bytes: ctx.arena.len_of(p) as u64,
            });
            ctx.drop_packet(p, DropReason::Purged);
        }
        purged
    }

    fn change(
        &mut self,
        spec: &QdiscSpec,
        _ctx: &mut QdiscCtx,
        _child: Option<&super::AnyQdisc>,
    ) -> Result<Changed, TcError> {
        match spec {
            QdiscSpec::Noqueue => Ok(Changed::IN_PLACE),
            _ => Err(wrong_kind()),
        }
    }

    crate::qdisc::ops::own_stats!();

    fn options(&self) -> serde_json::Value {
        json!({})
    }

    fn held(&self) -> u64 {
        self.passthrough.len() as u64
    }
}
