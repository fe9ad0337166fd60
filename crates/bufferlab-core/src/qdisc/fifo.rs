//! `pfifo`, `bfifo`, `pfifo_head_drop` (docs/semantics/qdiscs.md §2; Linux
//! net/sched/sch_fifo.c). `pfifo_fast` and its TOS bands live in prio/.
//!
//! - pfifo: tail drop once `qlen == limit` (packets).
//! - bfifo: tail drop when `backlog + len > limit` (bytes of `pkt_len`).
//! - pfifo_head_drop: when full, the oldest packet is dropped and the
//!   arriving one is queued (sch_fifo.c `pfifo_tail_enqueue`). Linux returns
//!   NET_XMIT_CN and corrects the ancestors' backlog by the byte difference;
//!   we report the same change as "the arrival was queued" plus one packet of
//!   the old length leaving the subtree ([`Reduce`]), which gives every
//!   ancestor the same counters.
//! - `change` only sets `limit`; queued packets stay even above a lowered
//!   limit (sch_fifo.c `fifo_init` used as the change op).
//! - Default limits (no `limit` given): the device `txqueuelen` (1000) for the
//!   packet fifos, `txqueuelen × (mtu + 14)` = 1 514 000 for bfifo.
//!
//! Not modelled: the CAN_BYPASS shortcut (it
//! changes no counter a user can see: an empty fifo hands the packet straight
//! to the device, which our dequeue-right-after-enqueue also does).

use super::ops::{wrong_kind, BuildEnv, Built, Changed, Peeked, Purged, Qdisc, Reduce};
use super::spec::QdiscSpec;
use super::tree::Node;
use super::{DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::{PacketId, PREFETCH_AHEAD};
use serde_json::json;
use std::collections::VecDeque;

/// `txqueuelen` of a Mininet veth (and of Ethernet devices).
pub const TXQUEUELEN: u32 = 1000;
/// `psched_mtu()` of a 1500-byte-MTU Ethernet/veth device: mtu + 14.
pub const PSCHED_MTU: u32 = 1514;
/// bfifo default: `txqueuelen × psched_mtu` = 1 514 000 bytes.
pub const BFIFO_DEFAULT_LIMIT: u32 = TXQUEUELEN * PSCHED_MTU;

/// Which of the fifo family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoKind {
    Pfifo,
    Bfifo,
    PfifoHeadDrop,
}

impl FifoKind {
    pub fn name(self) -> &'static str {
        match self {
            FifoKind::Pfifo => "pfifo",
            FifoKind::Bfifo => "bfifo",
            FifoKind::PfifoHeadDrop => "pfifo_head_drop",
        }
    }
}

/// A fifo qdisc: one queue of packet handles and its limit.
#[derive(Debug)]
pub struct Fifo {
    kind: FifoKind,
    /// packets (pfifo, pfifo_head_drop) or bytes (bfifo)
    limit: u32,
    queue: VecDeque<PacketId>,
    stats: QdiscStats,
}

impl Fifo {
    /// `init` from a `tc` spec; `None` if `spec` is not a fifo kind.
    pub fn from_spec(spec: &QdiscSpec) -> Option<Fifo> {
        let (kind, limit) = Self::resolve(spec)?;
        Some(Fifo {
            kind,
            limit,
            queue: VecDeque::new(),
            stats: QdiscStats::default(),
        })
    }

    /// The default child of tbf (sch_fifo.c `fifo_create_dflt` with bfifo ops).
    pub fn bfifo(limit: u32) -> Fifo {
        Fifo {
            kind: FifoKind::Bfifo,
            limit,
            queue: VecDeque::new(),
            stats: QdiscStats::default(),
        }
    }

    /// Kind and effective limit of a fifo spec (defaults resolved).
    fn resolve(spec: &QdiscSpec) -> Option<(FifoKind, u32)> {
        Some(match *spec {
            QdiscSpec::Pfifo { limit } => (FifoKind::Pfifo, limit.unwrap_or(TXQUEUELEN)),
            QdiscSpec::Bfifo { limit } => (FifoKind::Bfifo, limit.unwrap_or(BFIFO_DEFAULT_LIMIT)),
            QdiscSpec::PfifoHeadDrop { limit } => {
                (FifoKind::PfifoHeadDrop, limit.unwrap_or(TXQUEUELEN))
            }
            _ => return None,
        })
    }

    /// Tail enqueue (`bfifo_enqueue`, `pfifo_enqueue`, `pfifo_tail_enqueue`).
    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, id: PacketId) -> Verdict {
        let len = ctx.arena.len_of(id);
        let fits = match self.kind {
            FifoKind::Bfifo => self.stats.backlog + len as u64 <= self.limit as u64,
            _ => self.stats.qlen < self.limit as u64,
        };
        if fits {
            self.queue.push_back(id);
            self.stats.queued(len);
            return Verdict::Queued;
        }
        if self.kind != FifoKind::PfifoHeadDrop {
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::QueueFull);
            return Verdict::Dropped(DropReason::QueueFull);
        }
        // Head drop: Linux counts the drop even when there is no head to drop
        // (only possible with `limit 0`), then queues the arrival regardless.
        self.stats.dropped();
        match self.queue.pop_front() {
            Some(old) => {
                let old_len = ctx.arena.len_of(old);
                self.stats.unqueued(old_len);
                ctx.drop_packet(old, DropReason::HeadDrop);
                reduce.left(1, old_len as u64, 1);
            }
            None => reduce.left(0, 0, 1),
        }
        self.queue.push_back(id);
        self.stats.queued(len);
        Verdict::Queued
    }

    /// `qdisc_dequeue_head`: pop the oldest packet.
    pub fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<PacketId> {
        let id = self.queue.pop_front()?;
        if let Some(&ahead) = self.queue.get(PREFETCH_AHEAD) {
            // tbf reads the next head's length at once (packet.rs)
            ctx.arena.prefetch(ahead);
        }
        let len = ctx.arena.len_of(id);
        self.stats.unqueued(len);
        self.stats.sent(len, ctx.arena.segs_of(id));
        Some(id)
    }

    /// `tc qdisc change … <fifo> [limit N]`: only the limit changes.
    pub fn change(&mut self, spec: &QdiscSpec) -> Result<(), TcError> {
        let (kind, limit) = Self::resolve(spec).ok_or_else(|| {
            TcError::Invalid(format!("{} cannot take these options", self.kind.name()))
        })?;
        if kind != self.kind {
            return Err(wrong_kind());
        }
        self.limit = limit;
        Ok(())
    }

    /// `fifo_set_limit()` as called by tbf's change: applies to the `*fifo*`
    /// kinds that have a change op (pfifo_fast, in prio/, has none).
    /// Returns whether the limit was set.
    pub fn set_limit(&mut self, limit: u32) -> bool {
        self.limit = limit;
        true
    }

    pub fn kind(&self) -> FifoKind {
        self.kind
    }

    pub fn limit(&self) -> u32 {
        self.limit
    }
}

impl Qdisc for Fifo {
    fn build(spec: &QdiscSpec, _env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        Fifo::from_spec(spec).map(|f| Ok(Built::alone(f)))
    }

    fn kind(&self) -> &'static str {
        self.kind.name()
    }

    #[inline]
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        Fifo::enqueue(self, ctx, reduce, id)
    }

    #[inline]
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        _reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        Fifo::dequeue(self, ctx)
    }

    /// `qdisc_peek_head`: the head, not taken.
    fn peek(&mut self, _ctx: &mut QdiscCtx, _reduce: &mut Reduce, _child: &mut [Node]) -> Peeked {
        Peeked::Head(self.queue.front().copied())
    }

    /// Free every queued packet as [`DropReason::Purged`] (qdisc reset on
    /// graft/delete). Returns (packets, bytes) removed.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (n, b) = (self.stats.qlen, self.stats.backlog);
        while let Some(id) = self.queue.pop_front() {
            ctx.drop_packet(id, DropReason::Purged);
        }
        self.stats.qlen = 0;
        self.stats.backlog = 0;
        Purged {
            packets: n,
            bytes: b,
        }
    }

    fn change(
        &mut self,
        spec: &QdiscSpec,
        _ctx: &mut QdiscCtx,
        _child: Option<&super::AnyQdisc>,
    ) -> Result<Changed, TcError> {
        Fifo::change(self, spec).map(|()| Changed::IN_PLACE)
    }

    crate::qdisc::ops::own_stats!();

    /// `{"limit": N}` with the default resolved (packets or bytes).
    fn options(&self) -> serde_json::Value {
        json!({ "limit": self.limit })
    }

    fn held(&self) -> u64 {
        self.queue.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tree::harness::Env;

    fn fifo(spec: QdiscSpec) -> Fifo {
        Fifo::from_spec(&spec).unwrap()
    }

    #[test]
    fn e2a_bfifo_admits_while_backlog_plus_len_fits() {
        let mut env = Env::default();
        let mut q = fifo(QdiscSpec::Bfifo { limit: Some(3000) });
        let mut reduce = Reduce::default();
        let a = env.pkt(1514);
        let b = env.pkt(1514);
        let c = env.pkt(1486);
        let mut ctx = env.ctx(0);
        assert_eq!(
            q.enqueue(&mut ctx, &mut reduce, a),
            Verdict::Queued,
            "0 + 1514 <= 3000"
        );
        assert_eq!(
            q.enqueue(&mut ctx, &mut reduce, b),
            Verdict::Dropped(DropReason::QueueFull),
            "3028 > 3000"
        );
        assert_eq!(
            q.enqueue(&mut ctx, &mut reduce, c),
            Verdict::Queued,
            "3000 <= 3000"
        );
        assert_eq!(
            (q.stats().backlog, q.stats().qlen, q.stats().drops),
            (3000, 2, 1)
        );
        assert_eq!(env.drops.packets[DropReason::QueueFull.index()], 1);
    }

    #[test]
    fn e2b_pfifo_counts_packets() {
        let mut env = Env::default();
        let mut q = fifo(QdiscSpec::Pfifo { limit: Some(2) });
        let mut reduce = Reduce::default();
        let ids: Vec<_> = (0..3).map(|_| env.pkt(1514)).collect();
        let mut ctx = env.ctx(0);
        let v: Vec<_> = ids
            .iter()
            .map(|&id| q.enqueue(&mut ctx, &mut reduce, id))
            .collect();
        assert_eq!(
            v,
            [
                Verdict::Queued,
                Verdict::Queued,
                Verdict::Dropped(DropReason::QueueFull)
            ]
        );
        let s = q.stats();
        assert_eq!((s.drops, s.backlog, s.qlen, s.overlimits), (1, 3028, 2, 0));
    }

    #[test]
    fn e2c_pfifo_head_drop_keeps_the_newest() {
        let mut env = Env::default();
        let mut q = fifo(QdiscSpec::PfifoHeadDrop { limit: Some(2) });
        let mut reduce = Reduce::default();
        let (a, b, c) = (env.pkt(100), env.pkt(200), env.pkt(300));
        let mut ctx = env.ctx(0);
        for id in [a, b, c] {
            assert_eq!(q.enqueue(&mut ctx, &mut reduce, id), Verdict::Queued);
        }
        assert_eq!(q.queue.iter().copied().collect::<Vec<_>>(), [b, c]);
        assert_eq!(
            (q.stats().drops, q.stats().qlen, q.stats().backlog),
            (1, 2, 500)
        );
        // Ancestors learn: one packet of 100 bytes left, one drop.
        assert_eq!(
            reduce,
            Reduce {
                qlen: 1,
                backlog: 100,
                drops: 1,
                grew: 0,
            }
        );
        assert_eq!(env.drops.packets[DropReason::HeadDrop.index()], 1);
    }

    #[test]
    fn e2d_capacity_of_the_handout_byte_limits() {
        for (limit, frames) in [
            (160_000, 105),
            (204_800, 135),
            (409_600, 270),
            (2_500_000, 1651),
            (2_621_440, 1731),
            (26_214_400, 17314),
        ] {
            let mut env = Env::default();
            let mut q = Fifo::bfifo(limit);
            let mut reduce = Reduce::default();
            let mut accepted = 0;
            for _ in 0..frames + 5 {
                let id = env.pkt(1514);
                let mut ctx = env.ctx(0);
                if q.enqueue(&mut ctx, &mut reduce, id) == Verdict::Queued {
                    accepted += 1;
                }
            }
            assert_eq!(accepted, frames, "limit {limit}");
        }
    }

    #[test]
    fn defaults_are_txqueuelen_based() {
        assert_eq!(fifo(QdiscSpec::Pfifo { limit: None }).limit(), 1000);
        assert_eq!(fifo(QdiscSpec::Bfifo { limit: None }).limit(), 1_514_000);
        assert_eq!(fifo(QdiscSpec::PfifoHeadDrop { limit: None }).limit(), 1000);
        assert!(Fifo::from_spec(&QdiscSpec::PfifoFast).is_none());
    }

    #[test]
    fn change_lowers_the_limit_without_dropping_queued_packets() {
        let mut env = Env::default();
        let mut q = fifo(QdiscSpec::Pfifo { limit: Some(5) });
        let mut reduce = Reduce::default();
        for _ in 0..5 {
            let id = env.pkt(1000);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        q.change(&QdiscSpec::Pfifo { limit: Some(2) }).unwrap();
        assert_eq!((q.stats().qlen, q.stats().drops), (5, 0));
        let id = env.pkt(1000);
        assert_eq!(
            q.enqueue(&mut env.ctx(0), &mut reduce, id),
            Verdict::Dropped(DropReason::QueueFull)
        );
        // Dequeue in order; Sent counts bytes and packets.
        let first = q.dequeue(&mut env.ctx(0)).unwrap();
        assert_eq!(first, PacketId(0));
        assert_eq!(
            (q.stats().packets, q.stats().bytes, q.stats().qlen),
            (1, 1000, 4)
        );
        assert!(q.change(&QdiscSpec::Bfifo { limit: None }).is_err());
    }

    #[test]
    fn reset_purges_everything() {
        let mut env = Env::default();
        let mut q = Fifo::bfifo(10_000);
        let mut reduce = Reduce::default();
        for _ in 0..3 {
            let id = env.pkt(1514);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        assert_eq!(
            q.reset(&mut env.ctx(0)),
            Purged {
                packets: 3,
                bytes: 4542
            }
        );
        assert_eq!((q.stats().qlen, q.stats().backlog, q.held()), (0, 0, 0));
        assert_eq!(env.drops.packets[DropReason::Purged.index()], 3);
        assert_eq!(env.arena.live(), 0);
    }
}
