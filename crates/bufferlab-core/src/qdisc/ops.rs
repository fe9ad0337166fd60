//! The contract every qdisc implements: Linux's `struct Qdisc_ops`
//! (include/net/sch_generic.h) as one trait with one signature per
//! operation, plus the child-absorb helper of the classful kinds
//! (net/sched/sch_api.c `qdisc_tree_reduce_backlog`).
//!
//! Order of the methods, as in the ops tables at the bottom of
//! net/sched/sch_*.c: enqueue, dequeue, peek, init ([`Qdisc::build`]),
//! reset, change, dump (options), dump_stats (xstats). A kind with classes
//! also implements [`ClassOps`] (`struct Qdisc_class_ops`), reached through
//! [`Qdisc::class_ops`] as the kernel reaches `cl_ops`, and lends its u32
//! filter list through [`Qdisc::filters`] (its `tcf_block`); class_api/
//! drives both.

use super::spec::{ClassRequest, HtbLeaf, QdiscSpec, U32Filter};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscProfile, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::time::SimTime;

/// Packets that left a subtree other than by dequeue, reported to every
/// ancestor (`qdisc_tree_reduce_backlog(n, len)` with `drops` = n), and
/// entries a subtree gained by splitting one it was handed (tbf's
/// `tbf_segment`: `qdisc_tree_reduce_backlog(sch, 1 − nb, …)`, a negative n).
/// Cumulative: a parent applies `after.since(before)` around a child call
/// (see [`absorbing`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reduce {
    pub qlen: u64,
    pub backlog: u64,
    pub drops: u64,
    pub grew: u64,
}

impl Reduce {
    /// Record `n` packets of `bytes` in total leaving, `drops` of them dropped.
    #[inline]
    pub fn left(&mut self, n: u64, bytes: u64, drops: u64) {
        self.qlen += n;
        self.backlog += bytes;
        self.drops += drops;
    }

    /// One entry handed to the subtree became `n` + 1 entries.
    #[inline]
    pub fn grew(&mut self, n: u64) {
        self.grew += n;
    }

    /// What was added since `before`.
    #[inline]
    pub fn since(self, before: Reduce) -> Reduce {
        Reduce {
            qlen: self.qlen - before.qlen,
            backlog: self.backlog - before.backlog,
            drops: self.drops - before.drops,
            grew: self.grew - before.grew,
        }
    }

    /// `n` packets of `bytes` in total purged from a subtree (all dropped).
    pub fn purged(p: Purged) -> Reduce {
        Reduce {
            qlen: p.packets,
            backlog: p.bytes,
            drops: p.packets,
            grew: 0,
        }
    }
}

/// Run `child_op` on `parent`'s child subtree, then apply to `parent` what
/// left the subtree meanwhile — the one place a classful qdisc (tbf, netem,
/// red, sfb) takes its child's drops and backlog changes, the step of
/// `qdisc_tree_reduce_backlog` (sch_api.c) that reaches this parent.
#[inline]
pub(crate) fn absorbing<T>(
    parent: &mut impl Absorb,
    reduce: &mut Reduce,
    child_op: impl FnOnce(&mut Reduce) -> T,
) -> T {
    let before = *reduce;
    let out = child_op(reduce);
    parent.absorb(reduce.since(before));
    out
}

/// Whatever takes a child's reduction: a qdisc (its own rule, as lab2019
/// netem's) or a bare counter block (when other fields are borrowed).
pub(crate) trait Absorb {
    fn absorb(&mut self, r: Reduce);
}

impl<Q: Qdisc + ?Sized> Absorb for Q {
    #[inline]
    fn absorb(&mut self, r: Reduce) {
        Qdisc::absorb(self, r);
    }
}

impl Absorb for QdiscStats {
    #[inline]
    fn absorb(&mut self, r: Reduce) {
        QdiscStats::absorb(self, r);
    }
}

/// Packets and bytes a qdisc freed itself (reset, or a change that shrank
/// its queue); the tree tells the ancestors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Purged {
    pub packets: u64,
    pub bytes: u64,
}

impl Purged {
    pub fn add(&mut self, other: Purged) {
        self.packets += other.packets;
        self.bytes += other.bytes;
    }
}

/// What a peek returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peeked {
    /// The head, still in place (fifo's `qdisc_peek_head`, red's child peek).
    Head(Option<PacketId>),
    /// Taken by a dequeue for the peek; the tree caches it in the node,
    /// still counted there (`qdisc_peek_dequeued`).
    Dequeued(Option<PacketId>),
}

/// What a `change` asks of the child slot.
#[derive(Debug)]
pub enum ChildChange {
    Keep,
    /// Purge the child subtree and graft this default child (red with
    /// `limit`, sfb: `fifo_create_dflt` + `qdisc_replace`).
    Replace(Box<AnyQdisc>),
    /// tbf: `fifo_set_limit` on a fifo child; an empty slot gets a default
    /// bfifo of this limit if it is not 0.
    FifoLimit(u32),
}

/// The outcome of a successful `change`.
#[derive(Debug)]
pub struct Changed {
    /// packets the qdisc dropped from its own queue to fit the new limit
    pub purged: Purged,
    pub child: ChildChange,
}

impl Changed {
    pub const IN_PLACE: Changed = Changed {
        purged: Purged {
            packets: 0,
            bytes: 0,
        },
        child: ChildChange::Keep,
    };
}

/// A change, class verb or graft dropped these leaf chains (a classful
/// qdisc's): what they held is purged and taken off the qdisc's counters
/// (`qdisc_purge_queue`); the tree tells the ancestors.
pub(crate) fn purge_removed(
    removed: impl IntoIterator<Item = Vec<Node>>,
    stats: &mut QdiscStats,
    ctx: &mut QdiscCtx,
) -> Purged {
    let mut lost = Purged::default();
    for mut chain in removed {
        lost.add(reset_chain(&mut chain, ctx));
    }
    stats.absorb(Reduce::purged(lost));
    lost
}

/// What a class verb or a graft did: the packets it purged (the tree tells
/// the ancestors) and the kernel's warning that `tc` prints, if any (htb's
/// quantum clamp).
#[derive(Debug, Default)]
pub struct ClassChanged {
    pub purged: Purged,
    pub warning: Option<String>,
}

impl From<Purged> for ClassChanged {
    fn from(purged: Purged) -> Self {
        ClassChanged {
            purged,
            warning: None,
        }
    }
}

/// `tc` finds no qdisc of that handle among those the verb applies to.
pub(crate) fn qdisc_not_found() -> TcError {
    TcError::Extack("Specified qdisc not found".into())
}

/// `qdisc_class_find` failed (`tc class`, or a graft on a class).
pub(crate) fn class_not_found() -> TcError {
    TcError::Extack("Specified class not found".into())
}

/// The classes of a qdisc that owns them (htb, prio, drr, ets, hfsc): Linux's
/// `struct Qdisc_class_ops` — `change` and `delete` (one method: each kind's
/// verb rules differ), `find`, `leaf` and `graft`. class_api/ resolves the
/// request (which qdisc, which slot) and calls these; each kind keeps the leaf
/// chains and says what a new leaf changes in its scheduler (`regraft`). A
/// purge reduces the qdisc's own counters ([`Qdisc::stats_mut`]).
pub trait ClassOps: Qdisc {
    /// `tc class add|change|replace|delete` on class `req.minor`, the kind's
    /// own rules (`htb_change_class`/`htb_delete`, `drr_change_class`, …);
    /// `req.class`, if any, is this kind's. A kind without class verbs
    /// (prio) keeps the default: `tc` addresses no qdisc of its kind.
    fn class_verb(
        &mut self,
        req: &ClassRequest,
        ctx: &mut QdiscCtx,
    ) -> Result<ClassChanged, TcError> {
        let _ = (req, ctx);
        Err(qdisc_not_found())
    }

    /// `find`: the position of class `minor` among those a qdisc can be
    /// grafted on.
    fn find(&self, minor: u16) -> Option<usize>;

    /// What is grafted on the class at position `i` (`None`: its default
    /// pfifo).
    fn grafted(&self, i: usize) -> Option<&HtbLeaf>;

    /// Graft `leaf` on the class at position `i` (classful.rs `regraft`
    /// and what the kind's scheduler must know of it): the chain it replaced,
    /// for the caller to purge. On error nothing changed.
    fn regraft(
        &mut self,
        i: usize,
        leaf: Option<HtbLeaf>,
        now: i64,
    ) -> Result<Option<Vec<Node>>, TcError>;

    /// Every grafted leaf with its class's minor, in class order (where
    /// `tc qdisc … parent H:` looks for the qdisc of handle H).
    fn leaves(&self) -> Box<dyn Iterator<Item = (u16, &HtbLeaf)> + '_>;

    /// `leaf`: what is grafted on class `minor`; `Err` when there is no
    /// class `minor` to graft on.
    fn leaf(&self, minor: u16) -> Result<Option<&HtbLeaf>, TcError> {
        let i = self.find(minor).ok_or_else(class_not_found)?;
        Ok(self.grafted(i))
    }

    /// `graft`: class `minor` gets `leaf` (`None`: a default pfifo again).
    /// The same leaf as before changes nothing; another one replaces the
    /// class's chain, whose packets are purged. On error nothing changed.
    fn graft(
        &mut self,
        minor: u16,
        leaf: Option<HtbLeaf>,
        ctx: &mut QdiscCtx,
    ) -> Result<Purged, TcError> {
        let i = self.find(minor).ok_or_else(class_not_found)?;
        let old = self.regraft(i, leaf, ctx.now.as_nanos() as i64)?;
        Ok(purge_removed(old, self.stats_mut(), ctx))
    }
}

/// What `init` may read besides the spec.
pub struct BuildEnv<'a> {
    /// seed of the run and name of this qdisc's RNG stream (`dev/qdiscN`)
    pub seed: u64,
    pub stream: &'a str,
    pub profile: QdiscProfile,
    pub now: SimTime,
    pub at_root: bool,
}

/// A new qdisc and the default child it creates in `init` (tbf, red, sfb).
pub struct Built<Q> {
    pub qdisc: Q,
    pub default_child: Option<AnyQdisc>,
}

impl<Q> Built<Q> {
    pub fn alone(qdisc: Q) -> Self {
        Built {
            qdisc,
            default_child: None,
        }
    }
}

/// The error of a spec handed to a qdisc of another kind.
pub(crate) fn wrong_kind() -> TcError {
    TcError::Invalid("Invalid qdisc name".into())
}

/// One queueing discipline (`struct Qdisc_ops`). `child` is the chain below
/// the qdisc: empty for a leaf kind and for an empty slot.
pub trait Qdisc {
    /// `init`: `None` when `spec` is another kind's, else the new qdisc
    /// (validated in the user's words).
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>>
    where
        Self: Sized;

    /// The `tc` kind name.
    fn kind(&self) -> &'static str;

    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        child: &mut [Node],
    ) -> Verdict;

    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        child: &mut [Node],
    ) -> Option<PacketId>;

    /// Linux's default for a qdisc without its own peek:
    /// `qdisc_peek_dequeued`.
    fn peek(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, child: &mut [Node]) -> Peeked {
        Peeked::Dequeued(self.dequeue(ctx, reduce, child))
    }

    /// Free what this qdisc holds itself (not its child) as purged.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged;

    /// `tc qdisc change`: on error nothing changed. `child` is the current
    /// occupant of the child slot.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError>;

    fn stats(&self) -> &QdiscStats;

    fn stats_mut(&mut self) -> &mut QdiscStats;

    /// Current options in the spec's JSON shape (`dump`).
    fn options(&self) -> serde_json::Value;

    /// Kind-specific statistics (`dump_stats`); `null` for a kind without.
    fn xstats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }

    /// The classes a kind lists only through its walk, for `tc class show`
    /// (cake's flows, `cake_walk`); `null` for every other kind. Computed
    /// only when `tc class show` runs.
    fn walked_classes(&self, now: SimTime) -> serde_json::Value {
        let _ = now;
        serde_json::Value::Null
    }

    /// Packets physically stored in this qdisc itself.
    fn held(&self) -> u64;

    /// Has a child slot (`cl_ops`).
    fn classful(&self) -> bool {
        false
    }

    /// The classes of a kind that owns classes (`cl_ops` of htb, prio, drr,
    /// ets, hfsc); `None` for every other kind.
    fn class_ops(&mut self) -> Option<&mut dyn ClassOps> {
        None
    }

    /// The u32 filters attached at the qdisc (its `tcf_block`), for the kinds
    /// that classify with them; `None` for the others.
    fn filters(&mut self) -> Option<&mut Vec<U32Filter>> {
        None
    }

    /// Apply a reduction coming from the child subtree.
    fn absorb(&mut self, r: Reduce) {
        self.stats_mut().absorb(r);
    }

    /// Its position in the chain changed (netem behaves differently at the root).
    fn placed(&mut self, _at_root: bool) {}

    /// The root re-enqueued the duplicates the current operation made.
    fn duplicates_reinjected(&mut self) {}

    /// Netem only: it duplicates packets (`duplicate` ≠ 0).
    fn netem_duplicates(&self) -> Option<bool> {
        None
    }

    /// The netems inside this qdisc that are not nodes of the device's chain
    /// (an htb's leaves): whether each duplicates.
    fn inner_netems(&self, _out: &mut Vec<bool>) {}
}

/// `stats` and `stats_mut` of a kind whose counters are its field `stats`,
/// stated once inside its `impl Qdisc`.
macro_rules! own_stats {
    () => {
        fn stats(&self) -> &$crate::qdisc::QdiscStats {
            &self.stats
        }

        fn stats_mut(&mut self) -> &mut $crate::qdisc::QdiscStats {
            &mut self.stats
        }
    };
}
pub(crate) use own_stats;

/// `enqueue` and `dequeue` of a kind whose inherent methods of the same names
/// do the work, stated once inside its `impl Qdisc`. A `leaf` kind's take the
/// context and the packet only (it has no child chain and reduces nothing);
/// a `chained` kind's (tbf, red, sfb) also the reduction and the chain below.
macro_rules! forward_queue_ops {
    (leaf $kind:ident) => {
        #[inline]
        fn enqueue(
            &mut self,
            ctx: &mut $crate::qdisc::QdiscCtx,
            _reduce: &mut $crate::qdisc::ops::Reduce,
            id: $crate::packet::PacketId,
            _child: &mut [$crate::qdisc::ops::Node],
        ) -> $crate::qdisc::Verdict {
            $kind::enqueue(self, ctx, id)
        }

        #[inline]
        fn dequeue(
            &mut self,
            ctx: &mut $crate::qdisc::QdiscCtx,
            _reduce: &mut $crate::qdisc::ops::Reduce,
            _child: &mut [$crate::qdisc::ops::Node],
        ) -> Option<$crate::packet::PacketId> {
            $kind::dequeue(self, ctx)
        }
    };
    (chained $kind:ident) => {
        #[inline]
        fn enqueue(
            &mut self,
            ctx: &mut $crate::qdisc::QdiscCtx,
            reduce: &mut $crate::qdisc::ops::Reduce,
            id: $crate::packet::PacketId,
            child: &mut [$crate::qdisc::ops::Node],
        ) -> $crate::qdisc::Verdict {
            $kind::enqueue(self, ctx, reduce, id, child)
        }

        #[inline]
        fn dequeue(
            &mut self,
            ctx: &mut $crate::qdisc::QdiscCtx,
            reduce: &mut $crate::qdisc::ops::Reduce,
            child: &mut [$crate::qdisc::ops::Node],
        ) -> Option<$crate::packet::PacketId> {
            $kind::dequeue(self, ctx, reduce, child)
        }
    };
}
pub(crate) use forward_queue_ops;

// ------------------------------------------------------------ the chain

/// One qdisc in a device's chain.
#[derive(Debug)]
pub struct Node {
    /// major of the handle; 0 for the default root and anonymous children
    pub(super) handle: u16,
    /// minor of the `parent` classid it was attached with (printed `1:` or `1:1`)
    pub(super) parent_minor: u16,
    /// a default child created by its parent (hidden from `tc qdisc show`)
    pub(super) anonymous: bool,
    pub(super) q: AnyQdisc,
    /// `gso_skb`: a packet dequeued by a parent's peek, still counted here
    pub(super) peeked: Option<PacketId>,
}

impl Node {
    pub(super) fn new(handle: u16, parent_minor: u16, anonymous: bool, q: AnyQdisc) -> Node {
        Node {
            handle,
            parent_minor,
            anonymous,
            q,
            peeked: None,
        }
    }

    /// Packets stored in this node: the qdisc's own and a peeked one.
    pub(super) fn held_packets(&self) -> u64 {
        self.q.held() + self.peeked.is_some() as u64
    }

    /// Free everything this qdisc holds itself (not its children) as purged;
    /// then it holds nothing (`qdisc_reset`, sch_generic.c).
    pub(super) fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        if let Some(p) = self.peeked.take() {
            purged.add(Purged {
                packets: 1,
                bytes: ctx.arena.len_of(p) as u64,
            });
            ctx.drop_packet(p, DropReason::Purged);
        }
        purged.add(self.q.reset(ctx));
        let s = self.q.stats_mut();
        s.qlen = 0;
        s.backlog = 0;
        purged
    }
}

/// Free what every qdisc of `chain` holds itself, as purged (a class's
/// leaf chain on reset, or one a verb dropped).
pub(crate) fn reset_chain(chain: &mut [Node], ctx: &mut QdiscCtx) -> Purged {
    let mut purged = Purged::default();
    for n in chain {
        purged.add(n.reset(ctx));
    }
    purged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::fifo::Fifo;
    use crate::qdisc::tree::harness::Env;

    fn fifo_holding(qlen: u64, backlog: u64, drops: u64) -> Fifo {
        let mut f = Fifo::bfifo(100_000);
        let s = f.stats_mut();
        s.qlen = qlen;
        s.backlog = backlog;
        s.drops = drops;
        f
    }

    #[test]
    fn absorbing_applies_what_left_the_child_during_the_call() {
        // 5 packets (7500 B) queued, 1 drop; the child call drops 2 packets
        // of 1500 B and splits one entry into 2 (grew 1):
        // qlen 5 + 1 − 2 = 4, backlog 7500 − 3000 = 4500, drops 1 + 2 = 3.
        let mut parent = fifo_holding(5, 7500, 1);
        let mut reduce = Reduce::default();
        let out = absorbing(&mut parent, &mut reduce, |reduce| {
            reduce.left(2, 3000, 2);
            reduce.grew(1);
            "child result"
        });
        assert_eq!(out, "child result");
        let s = parent.stats();
        assert_eq!((s.qlen, s.backlog, s.drops), (4, 4500, 3));
        // the cumulative report still carries everything for the ancestors
        assert_eq!(
            reduce,
            Reduce {
                qlen: 2,
                backlog: 3000,
                drops: 2,
                grew: 1
            }
        );
    }

    #[test]
    fn absorbing_ignores_what_left_before_the_call() {
        // 1 packet of 1000 B already reported by a sibling call; this call
        // adds 1 of 400 B: only the 400 B reach the parent (3 → 2, 3000 → 2600).
        let mut parent = fifo_holding(3, 3000, 0);
        let mut reduce = Reduce::default();
        reduce.left(1, 1000, 1);
        absorbing(&mut parent, &mut reduce, |reduce| reduce.left(1, 400, 1));
        let s = parent.stats();
        assert_eq!((s.qlen, s.backlog, s.drops), (2, 2600, 1));
        assert_eq!((reduce.qlen, reduce.backlog, reduce.drops), (2, 1400, 2));
    }

    #[test]
    fn absorbing_a_quiet_child_changes_nothing() {
        let mut parent = fifo_holding(2, 3000, 4);
        let mut reduce = Reduce::default();
        let mut env = Env::default();
        let mut ctx = env.ctx(0);
        let got = absorbing(&mut parent, &mut reduce, |reduce| {
            super::super::tree::dequeue_chain(&mut [], &mut ctx, reduce)
        });
        assert_eq!(got, None);
        let s = parent.stats();
        assert_eq!((s.qlen, s.backlog, s.drops), (2, 3000, 4));
    }

    #[test]
    fn purged_packets_reduce_as_drops() {
        let r = Reduce::purged(Purged {
            packets: 3,
            bytes: 4542,
        });
        assert_eq!((r.qlen, r.backlog, r.drops, r.grew), (3, 4542, 3, 0));
    }
}
