//! `drr` — deficit round robin over classes (Linux net/sched/sch_drr.c:
//! `drr_enqueue`, `drr_dequeue`, `drr_change_class`, `drr_classify`,
//! `drr_dump_class_stats`; the command side follows iproute2 tc/q_drr.c).
//! See docs/semantics/qdiscs.md §18.
//!
//! Classes are flat (all under the qdisc). A class joins the tail of the
//! active list when its leaf goes from empty to backlogged, with its deficit
//! set to its quantum. Dequeue looks at the head class: if the head packet
//! of its leaf fits in the deficit, the packet leaves and the deficit
//! shrinks by its length (the class leaves the list when its leaf empties);
//! otherwise the class earns one more quantum and moves to the tail.
//!
//! Classification: the u32 filters attached at the qdisc; no match, or a
//! flowid naming no class, drops the packet (`drops` of the qdisc, reason
//! `unclassified`). `skb->priority` naming a class is not modelled.

use super::classful;
use super::ops::{wrong_kind, BuildEnv, Built, Changed, Purged, Qdisc, Reduce};
use super::spec::{DrrClassSpec, DrrSpec, QdiscSpec};
use super::tree::{self, Node};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use serde_json::json;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct DrrClass {
    pub spec: DrrClassSpec,
    pub quantum: u32,
    pub deficit: i64,
    leaf: Vec<Node>,
    pub stats: QdiscStats,
}

#[derive(Debug)]
pub struct Drr {
    spec: DrrSpec,
    classes: Vec<DrrClass>,
    /// classids of the backlogged classes, in round-robin order
    active: VecDeque<u16>,
    stats: QdiscStats,
    seed: u64,
}

impl Drr {
    pub fn new(spec: &DrrSpec, env: &BuildEnv) -> Result<Drr, TcError> {
        let mut d = Drr {
            spec: DrrSpec {
                classes: Vec::new(),
                ..spec.clone()
            },
            classes: Vec::new(),
            active: VecDeque::new(),
            stats: QdiscStats::default(),
            seed: env.seed,
        };
        let removed = d.reconfigure(spec, env.now.as_nanos() as i64)?;
        debug_assert!(removed.is_empty());
        Ok(d)
    }

    fn validate(spec: &DrrSpec) -> Result<(), TcError> {
        for (i, c) in spec.classes.iter().enumerate() {
            if c.classid == 0 {
                return Err(TcError::Invalid("drr: classid minor must not be 0".into()));
            }
            if spec.classes[..i].iter().any(|o| o.classid == c.classid) {
                return Err(TcError::Exists);
            }
            if c.quantum == 0 {
                return Err(TcError::Invalid(
                    "Specified DRR quantum cannot be zero".into(),
                ));
            }
        }
        Ok(())
    }

    /// Apply a whole spec; classes whose classid survives keep their
    /// deficit, counters and (unless another leaf was grafted) their leaf.
    fn reconfigure(&mut self, spec: &DrrSpec, now: i64) -> Result<Vec<Vec<Node>>, TcError> {
        Self::validate(spec)?;
        let mut fresh = Vec::with_capacity(spec.classes.len());
        for c in &spec.classes {
            let keep = self
                .classes
                .iter()
                .any(|o| o.spec.classid == c.classid && o.spec.leaf == c.leaf);
            fresh.push(if keep {
                None
            } else {
                Some(classful::build_leaf(
                    c.leaf.as_ref(),
                    spec.leaf_limit,
                    self.seed,
                    now,
                    "drr-leaf",
                )?)
            });
        }
        let mut old = std::mem::take(&mut self.classes);
        let mut removed = Vec::new();
        for (c, leaf) in spec.classes.iter().zip(fresh) {
            let prev = old
                .iter()
                .position(|o| o.spec.classid == c.classid)
                .map(|i| old.swap_remove(i));
            let mut cl = prev.unwrap_or_else(|| DrrClass {
                spec: c.clone(),
                quantum: c.quantum,
                deficit: 0,
                leaf: Vec::new(),
                stats: QdiscStats::default(),
            });
            if let Some(l) = leaf {
                let old = std::mem::replace(&mut cl.leaf, l);
                if !old.is_empty() {
                    removed.push(old);
                }
            }
            cl.spec = c.clone();
            cl.quantum = c.quantum;
            self.classes.push(cl);
        }
        removed.extend(old.into_iter().map(|c| c.leaf));
        let classes = &self.classes;
        self.active.retain(|id| {
            classes
                .iter()
                .any(|c| c.spec.classid == *id && classful::leaf_backlog(&c.leaf).0 > 0)
        });
        self.spec = spec.clone();
        Ok(removed)
    }

    fn index(&self, classid: u16) -> Option<usize> {
        self.classes.iter().position(|c| c.spec.classid == classid)
    }

    /// `drr_classify`: the class of the first matching filter.
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> Option<usize> {
        classful::u32_classify(&self.spec.filters, ctx.arena.get(id)).and_then(|m| self.index(m))
    }

    /// `drr_qlen_notify`: a class whose leaf emptied outside a dequeue
    /// (drops inside it) leaves the active list.
    fn forget_empty(&mut self, i: usize) {
        if classful::leaf_backlog(&self.classes[i].leaf).0 == 0 {
            let id = self.classes[i].spec.classid;
            self.active.retain(|&a| a != id);
        }
    }

    pub fn classes(&self) -> &[DrrClass] {
        &self.classes
    }
}

impl Qdisc for Drr {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Drr(s) = spec else {
            return None;
        };
        Some(Drr::new(s, env).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "drr"
    }

    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        red: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        let len = ctx.arena.len_of(id);
        let Some(i) = self.classify(ctx, id) else {
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::Unclassified);
            return Verdict::Dropped(DropReason::Unclassified);
        };
        let first = classful::leaf_backlog(&self.classes[i].leaf).0 == 0;
        let before = *red;
        let cl = &mut self.classes[i];
        let v = tree::enqueue_chain(&mut cl.leaf, ctx, red, id);
        let lost = red.since(before);
        cl.stats.absorb(lost);
        self.stats.absorb(lost);
        match v {
            Verdict::Queued => {
                self.stats.queued(len);
                if first && classful::leaf_backlog(&self.classes[i].leaf).0 > 0 {
                    let cl = &mut self.classes[i];
                    cl.deficit = cl.quantum as i64;
                    self.active.push_back(cl.spec.classid);
                }
            }
            Verdict::Dropped(_) => {
                self.classes[i].stats.dropped();
                self.stats.dropped();
            }
        }
        v
    }

    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        red: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        loop {
            let &cid = self.active.front()?;
            let Some(i) = self.index(cid) else {
                self.active.pop_front();
                continue;
            };
            let before = *red;
            let head = tree::peek_chain(&mut self.classes[i].leaf, ctx, red);
            let lost = red.since(before);
            self.classes[i].stats.absorb(lost);
            self.stats.absorb(lost);
            let Some(h) = head else {
                if classful::leaf_backlog(&self.classes[i].leaf).0 == 0 {
                    self.forget_empty(i);
                    continue;
                }
                // a non-work-conserving leaf holds its head: the round stops
                return None;
            };
            let len = ctx.arena.len_of(h);
            let cl = &mut self.classes[i];
            if len as i64 <= cl.deficit {
                cl.deficit -= len as i64;
                let before = *red;
                let got = tree::dequeue_chain(&mut cl.leaf, ctx, red);
                let lost = red.since(before);
                cl.stats.absorb(lost);
                self.stats.absorb(lost);
                let id = got.expect("a peeked packet is there");
                let segs = ctx.arena.segs_of(id);
                cl.stats.sent(len, segs);
                if classful::leaf_backlog(&cl.leaf).0 == 0 {
                    self.active.pop_front();
                }
                self.stats.unqueued(len);
                self.stats.sent(len, segs);
                return Some(id);
            }
            cl.deficit += cl.quantum as i64;
            self.active.rotate_left(1);
        }
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for c in &mut self.classes {
            for n in c.leaf.iter_mut() {
                purged.add(n.reset(ctx));
            }
        }
        self.active.clear();
        purged
    }

    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Drr(spec) = spec else {
            return Err(wrong_kind());
        };
        let removed = self.reconfigure(spec, ctx.now.as_nanos() as i64)?;
        Ok(classful::purge_removed(removed, &mut self.stats, ctx))
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn stats_mut(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.spec).expect("spec serialises")
    }

    /// Per-class state for `tc -s class show` (`drr_dump_class_stats`: the
    /// deficit is reported only while the class has packets).
    fn xstats(&self) -> serde_json::Value {
        let classes: Vec<_> = self
            .classes
            .iter()
            .map(|c| {
                let (qlen, backlog) = classful::leaf_backlog(&c.leaf);
                json!({
                    "classid": c.spec.classid,
                    "parent": 0,
                    "quantum": c.quantum,
                    "deficit": if qlen > 0 { c.deficit.max(0) } else { 0 },
                    "bytes": c.stats.bytes,
                    "packets": c.stats.packets,
                    "drops": c.stats.drops,
                    "overlimits": 0,
                    "qlen": qlen,
                    "backlog": backlog,
                    "leaf": classful::leaf_json(&c.leaf),
                })
            })
            .collect();
        json!({ "classes": classes })
    }

    fn inner_netems(&self, out: &mut Vec<bool>) {
        for c in &self.classes {
            tree::chain_netems(&c.leaf, out);
        }
    }

    fn held(&self) -> u64 {
        self.classes
            .iter()
            .flat_map(|c| c.leaf.iter())
            .map(Node::held_packets)
            .sum()
    }
}

#[cfg(test)]
#[path = "drr_tests.rs"]
mod tests;
