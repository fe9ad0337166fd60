//! Queueing disciplines with Linux semantics (docs/semantics/qdiscs.md).
//!
//! The contract follows Linux's `struct Qdisc_ops` (include/net/sch_generic.h):
//! the [`Qdisc`] trait in `ops.rs`, one signature per operation, implemented
//! by every model (one model per file). `dispatch.rs` registers the kinds in
//! the closed enum [`AnyQdisc`]; `tree/` is a device's chain (root/parent/
//! handle, single-slot children of tbf, netem, red and sfb); `api.rs` holds
//! the `tc qdisc add|change|replace|del` decision procedure of
//! net/sched/sch_api.c (`tc_modify_qdisc`, docs/semantics/qdiscs.md §1.3);
//! `class_api/` the `tc class`/`tc filter` verbs and the grafts on classes
//! (`tc_ctl_tclass`, cls_api.c), which the kinds that own classes implement
//! through [`ops::ClassOps`].
//!
//! Drops: the qdisc that drops a packet calls [`QdiscCtx::drop_packet`]
//! (which frees it and counts it once per interface by [`DropReason`]) and
//! returns [`Verdict::Dropped`], so every ancestor adds one to its own
//! `drops` as Linux's parents do (docs/semantics/qdiscs.md §1.5).

pub mod action;
pub mod api;
pub mod blue;
pub mod cake;
pub mod class_api;
pub mod classful;
pub mod classify;
pub mod codel;
pub mod cpm;
pub mod dispatch;
pub mod drr;
pub mod dualpi2;
pub mod ets;
pub mod fifo;
pub mod filter_show;
#[cfg(test)]
mod flowq_bench;
pub mod fq;
pub mod fq_codel;
pub mod fq_pie;
pub mod hfsc;
pub mod htb;
pub mod ingress;
pub mod netem;
pub mod noqueue;
pub mod ops;
pub mod pie;
pub mod prio;
pub mod red;
pub mod red_ns3;
pub mod sfb;
pub mod sfq;
pub mod spec;
pub mod tbf;
pub mod tree;

use crate::packet::{PacketArena, PacketId};
use crate::time::SimTime;
use serde::Serialize;

pub use api::AutoHandles;
pub use dispatch::AnyQdisc;
pub use ops::Qdisc;
pub use spec::{
    BlueSpec, ClassRequest, CodelSpec, DscpClass, DscpCoeff, DualPi2Spec, FilterRequest,
    FqCodelSpec, FqPieSpec, FqSpec, NetemSpec, ParentSpec, PieSpec, PrioSpec, QdiscSpec,
    RedNs3Spec, RedSpec, SfbSpec, SfqSpec, TbfSpec, TcRequest, TcVerb,
};
pub use tree::{QdiscInfo, QdiscProfile, QdiscTree};

/// Why a packet was dropped. Counted per interface (summary.json) and mapped
/// onto tc's counters (`dropped`, RED's `early`/`pdrop`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// A fifo (pfifo/bfifo, the default child of tbf) was full: tail drop.
    QueueFull,
    /// pfifo_head_drop removed its oldest packet to make room.
    HeadDrop,
    /// tbf: packet larger than the bucket (`max_size`), never sendable.
    TooBig,
    /// netem random / Markov / Gilbert-Elliott loss.
    NetemLoss,
    /// netem's own `limit` (delay line full).
    NetemLimit,
    /// Slot held a noop qdisc (tbf/red child deleted): black hole.
    Blackhole,
    /// Queued packets freed when their qdisc was replaced or deleted.
    Purged,
    /// netem corrupted the packet; the receiver's checksum check discards it.
    Corrupt,
    /// No route to the destination / TTL expired.
    NoRoute,
    /// Nobody listens on the destination port (and no ICMP error modelled).
    NoListener,
    /// ARP resolution queue overflow or failure.
    NeighbourFailed,
    /// RED/BLUE probabilistic (early) drop.
    EarlyDrop,
    /// RED hard drop: average at or above `max`.
    ForcedDrop,
    /// fq: the packet's flow already held `flow_limit` packets.
    FlowLimit,
    /// fq: the packet's departure stamp lay beyond `horizon` with
    /// `horizon_drop` (the kernel's `SKB_DROP_REASON_FQ_HORIZON_LIMIT`).
    Horizon,
    /// A classful qdisc found no class for the packet (drr without a
    /// matching filter, hfsc without a default class): `__NET_XMIT_BYPASS`.
    Unclassified,
    /// CAKE's ACK filter removed a pure ACK made redundant by a newer one.
    AckFilter,
    /// CAKE's BLUE half dropped a packet of an unresponsive flow
    /// (the kernel's `SKB_DROP_REASON_CAKE_FLOOD`).
    Flood,
    /// A filter's action at an ingress/clsact hook said drop (`police`
    /// exceeding with `drop`, `action drop`, a reclassify loop): the
    /// kernel's `SKB_DROP_REASON_TC_INGRESS` / `TC_EGRESS`.
    TcAction,
    /// The device was down (`ip link set DEV down`).
    LinkDown,
}

impl DropReason {
    pub const ALL: [DropReason; 20] = [
        DropReason::QueueFull,
        DropReason::HeadDrop,
        DropReason::TooBig,
        DropReason::NetemLoss,
        DropReason::NetemLimit,
        DropReason::Blackhole,
        DropReason::Purged,
        DropReason::Corrupt,
        DropReason::NoRoute,
        DropReason::NoListener,
        DropReason::NeighbourFailed,
        DropReason::EarlyDrop,
        DropReason::ForcedDrop,
        DropReason::FlowLimit,
        DropReason::Horizon,
        DropReason::Unclassified,
        DropReason::AckFilter,
        DropReason::Flood,
        DropReason::TcAction,
        DropReason::LinkDown,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::HeadDrop => "head_drop",
            DropReason::TooBig => "too_big",
            DropReason::NetemLoss => "netem_loss",
            DropReason::NetemLimit => "netem_limit",
            DropReason::Blackhole => "blackhole",
            DropReason::Purged => "purged",
            DropReason::Corrupt => "corrupt",
            DropReason::NoRoute => "no_route",
            DropReason::NoListener => "no_listener",
            DropReason::NeighbourFailed => "neighbour_failed",
            DropReason::EarlyDrop => "early_drop",
            DropReason::ForcedDrop => "forced_drop",
            DropReason::FlowLimit => "flow_limit",
            DropReason::Horizon => "horizon",
            DropReason::Unclassified => "unclassified",
            DropReason::AckFilter => "ack_filter",
            DropReason::Flood => "flood",
            DropReason::TcAction => "tc_action",
            DropReason::LinkDown => "link_down",
        }
    }
}

/// Drop counts of one interface (or node), indexed by [`DropReason`], with
/// running totals: the qdisc tree reads the byte total around every
/// operation, so it must not cost a sum over the reasons.
#[derive(Clone, Debug, Default)]
pub struct DropCounters {
    pub packets: [u64; DropReason::ALL.len()],
    pub bytes: [u64; DropReason::ALL.len()],
    total_packets: u64,
    total_bytes: u64,
    /// segments of the dropped packets (a GSO aggregate counts `gso_segs`)
    total_segments: u64,
}

impl DropCounters {
    /// One packet (queue entry) of `len` bytes and `segs` segments dropped.
    pub fn count(&mut self, reason: DropReason, len: u32, segs: u32) {
        self.packets[reason.index()] += 1;
        self.bytes[reason.index()] += len as u64;
        self.total_packets += 1;
        self.total_bytes += len as u64;
        self.total_segments += segs as u64;
    }

    pub fn total_segments(&self) -> u64 {
        self.total_segments
    }

    pub fn total_packets(&self) -> u64 {
        self.total_packets
    }

    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }
}

/// Result of an enqueue (Linux's NET_XMIT_* codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The packet is now owned by the qdisc. (A pfifo_head_drop that made
    /// room by dropping its oldest packet also says `Queued`; that drop is
    /// counted through the ctx and reported to ancestors separately.)
    Queued,
    /// The packet was dropped (and already freed and counted via the ctx).
    Dropped(DropReason),
}

/// The common statistics block of every qdisc (`struct gnet_stats_basic` +
/// `gnet_stats_queue`); changed only through the helpers below.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QdiscStats {
    /// Sent bytes / packets (updated when a packet is handed upward).
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
    pub requeues: u64,
    /// Queued bytes and entries (`backlog`, `qlen`).
    pub backlog: u64,
    pub qlen: u64,
}

impl QdiscStats {
    #[inline]
    pub fn queued(&mut self, len: u32) {
        self.backlog += len as u64;
        self.qlen += 1;
    }
    #[inline]
    pub fn unqueued(&mut self, len: u32) {
        debug_assert!(
            self.qlen > 0 && self.backlog >= len as u64,
            "qdisc accounting underflow"
        );
        self.backlog = self.backlog.saturating_sub(len as u64);
        self.qlen = self.qlen.saturating_sub(1);
    }
    /// A packet of `len` bytes and `segs` segments left upward: `Sent …
    /// bytes` adds the bytes, `pkt` the segments (a GSO aggregate counts
    /// `gso_segs`, docs/semantics/qdiscs.md §1.2).
    #[inline]
    pub fn sent(&mut self, len: u32, segs: u32) {
        self.bytes += len as u64;
        self.packets += segs as u64;
    }
    #[inline]
    pub fn dropped(&mut self) {
        self.drops += 1;
    }
    /// Packets that left the subtree below without a dequeue
    /// (`qdisc_tree_reduce_backlog`): fewer queued, more dropped.
    #[inline]
    pub(crate) fn absorb(&mut self, r: ops::Reduce) {
        self.qlen = (self.qlen + r.grew).saturating_sub(r.qlen);
        self.backlog = self.backlog.saturating_sub(r.backlog);
        self.drops += r.drops;
    }
}

/// What a qdisc operation may touch besides itself: the clock, the packet
/// arena, the interface's drop counters, the watchdog request and the list
/// of packets to re-enqueue at the root (netem duplicates).
pub struct QdiscCtx<'a> {
    pub now: SimTime,
    pub arena: &'a mut PacketArena,
    pub drops: &'a mut DropCounters,
    /// Earliest instant at which a throttled qdisc wants to be dequeued again
    /// (the qdisc watchdog, an hrtimer in Linux).
    pub watchdog: Option<SimTime>,
    /// Clones to enqueue at the interface's root once the current operation
    /// returns (netem `duplicate`, docs/semantics/qdiscs.md §4.4). `QdiscTree::enqueue` and
    /// `QdiscTree::dequeue` re-enqueue the clones they create themselves and
    /// leave the vector as they found it.
    pub reinject: &'a mut Vec<PacketId>,
}

impl<'a> QdiscCtx<'a> {
    /// A context for one operation at `now` (no watchdog requested yet).
    pub fn new(
        now: SimTime,
        arena: &'a mut PacketArena,
        drops: &'a mut DropCounters,
        reinject: &'a mut Vec<PacketId>,
    ) -> Self {
        QdiscCtx {
            now,
            arena,
            drops,
            watchdog: None,
            reinject,
        }
    }

    /// Free a packet and count it against `reason` for this interface.
    pub fn drop_packet(&mut self, id: PacketId, reason: DropReason) {
        let len = self.arena.len_of(id);
        self.drops.count(reason, len, self.arena.segs_of(id));
        self.arena.free(id);
    }

    /// Ask to be dequeued again at `at` (keeps the earliest request).
    pub fn arm_watchdog(&mut self, at: SimTime) {
        self.watchdog = Some(self.watchdog.map_or(at, |w| w.min(at)));
    }
}
