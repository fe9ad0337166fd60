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
//! Classes come one `tc class` line at a time (`drr_change_class`,
//! `drr_delete_class`) and leaves one graft at a time (`drr_graft_class`),
//! through [`ClassOps`] (class_api/).
//!
//! Classification: the u32 filters attached at the qdisc; no match, or a
//! flowid naming no class, drops the packet (`drops` of the qdisc, reason
//! `unclassified`). `skb->priority` naming a class is not modelled.

use super::classful::{self, ClassTable, Classid};
use super::ops::{
    class_not_found, wrong_kind, BuildEnv, Built, Changed, ClassChanged, ClassOps, Purged, Qdisc,
    Reduce,
};
use super::spec::{ClassRequest, ClassSpec, ClassVerb, DrrClassSpec, DrrSpec, HtbLeaf, QdiscSpec};
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

impl Classid for DrrClass {
    fn classid(&self) -> u16 {
        self.spec.classid
    }
}

#[derive(Debug)]
pub struct Drr {
    /// the qdisc's options and filters (its classes are the table's)
    spec: DrrSpec,
    classes: ClassTable<DrrClass>,
    /// classids of the backlogged classes, in round-robin order
    active: VecDeque<u16>,
    stats: QdiscStats,
    seed: u64,
}

impl Drr {
    /// `drr_init`, then the classes of `spec` as `tc class add` makes them
    /// and the leaves grafted on them (the command layer sends none).
    pub fn new(spec: &DrrSpec, env: &BuildEnv) -> Result<Drr, TcError> {
        let mut d = Drr {
            spec: DrrSpec {
                classes: Vec::new(),
                ..spec.clone()
            },
            classes: ClassTable::default(),
            active: VecDeque::new(),
            stats: QdiscStats::default(),
            seed: env.seed,
        };
        let now = env.now.as_nanos() as i64;
        for c in &spec.classes {
            d.add_class(c.classid, c.quantum, now)?;
        }
        let leaves = spec.classes.iter().map(|c| (c.classid, c.leaf.as_ref()));
        classful::graft_all(&mut d, leaves, now)?;
        Ok(d)
    }

    /// `drr_change_class` for a new class: a default pfifo, no deficit.
    fn add_class(&mut self, classid: u16, quantum: u32, now: i64) -> Result<(), TcError> {
        if classid == 0 {
            return Err(TcError::Invalid("drr: classid minor must not be 0".into()));
        }
        if self.classes.find(classid).is_some() {
            return Err(TcError::Exists);
        }
        check_quantum(quantum)?;
        let leaf = self.build_leaf(None, now)?;
        self.classes.push(DrrClass {
            spec: DrrClassSpec {
                classid,
                quantum,
                leaf: None,
            },
            quantum,
            deficit: 0,
            leaf,
            stats: QdiscStats::default(),
        });
        Ok(())
    }

    fn build_leaf(&self, leaf: Option<&HtbLeaf>, now: i64) -> Result<Vec<Node>, TcError> {
        classful::build_leaf(leaf, self.spec.leaf_limit, self.seed, now, "drr-leaf")
    }

    /// `drr_classify`: the class of the first matching filter.
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> Option<usize> {
        classful::u32_classify(&self.spec.filters, ctx.arena.get(id))
            .and_then(|m| self.classes.find(m))
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

/// `drr_change_class` refuses a zero quantum.
fn check_quantum(quantum: u32) -> Result<(), TcError> {
    if quantum == 0 {
        return Err(TcError::Invalid(
            "Specified DRR quantum cannot be zero".into(),
        ));
    }
    Ok(())
}

/// `tc class` and grafts on drr classes (`drr_class_ops`).
impl ClassOps for Drr {
    /// `drr_change_class` / `drr_delete_class`: classes are flat (the
    /// parent only says where a new one goes); a change sets the quantum
    /// given.
    fn class_verb(
        &mut self,
        req: &ClassRequest,
        ctx: &mut QdiscCtx,
    ) -> Result<ClassChanged, TcError> {
        let opts = classful::class_opts(req, ClassSpec::drr)?;
        let quantum = opts.and_then(|o| o.quantum);
        let removed = match (req.verb, self.classes.find(req.minor)) {
            (ClassVerb::Delete, None) => return Err(class_not_found()),
            (ClassVerb::Delete, Some(i)) => {
                let gone = self.classes.remove(i);
                self.active.retain(|&a| a != gone.spec.classid);
                gone.leaf
            }
            (ClassVerb::Add, Some(_)) => return Err(TcError::Exists),
            (_, Some(i)) => {
                if let Some(q) = quantum {
                    check_quantum(q)?;
                    let cl = &mut self.classes[i];
                    cl.quantum = q;
                    cl.spec.quantum = q;
                }
                Vec::new()
            }
            (ClassVerb::Change, None) => return Err(TcError::NotFound),
            (_, None) => {
                req.parent.ok_or_else(class_not_found)?;
                let q = quantum.unwrap_or(classful::PSCHED_MTU);
                check_quantum(q)?;
                self.add_class(req.minor, q, ctx.now.as_nanos() as i64)?;
                Vec::new()
            }
        };
        Ok(super::ops::purge_removed([removed], &mut self.stats, ctx).into())
    }

    fn find(&self, minor: u16) -> Option<usize> {
        self.classes.find(minor)
    }

    fn grafted(&self, i: usize) -> Option<&HtbLeaf> {
        self.classes[i].spec.leaf.as_ref()
    }

    /// `drr_graft_class`: a class with a new leaf leaves the active list
    /// (its queue is empty).
    fn regraft(
        &mut self,
        i: usize,
        leaf: Option<HtbLeaf>,
        now: i64,
    ) -> Result<Option<Vec<Node>>, TcError> {
        let (seed, limit) = (self.seed, self.spec.leaf_limit);
        let cl = &mut self.classes[i];
        let old = classful::regraft(&mut cl.spec.leaf, &mut cl.leaf, leaf, true, |l| {
            classful::build_leaf(l, limit, seed, now, "drr-leaf")
        })?;
        if old.is_some() {
            let id = cl.spec.classid;
            self.active.retain(|&a| a != id);
        }
        Ok(old)
    }

    fn leaves(&self) -> Box<dyn Iterator<Item = (u16, &HtbLeaf)> + '_> {
        Box::new(
            (self.classes.iter()).filter_map(|c| Some((c.spec.classid, c.spec.leaf.as_ref()?))),
        )
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
        reduce: &mut Reduce,
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
        let cl = &mut self.classes[i];
        let v = classful::absorbing_class(&mut cl.stats, &mut self.stats, reduce, |reduce| {
            tree::enqueue_chain(&mut cl.leaf, ctx, reduce, id)
        });
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
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        loop {
            let &cid = self.active.front()?;
            let Some(i) = self.classes.find(cid) else {
                self.active.pop_front();
                continue;
            };
            let cl = &mut self.classes[i];
            let head =
                classful::absorbing_class(&mut cl.stats, &mut self.stats, reduce, |reduce| {
                    tree::peek_chain(&mut cl.leaf, ctx, reduce)
                });
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
                let got =
                    classful::absorbing_class(&mut cl.stats, &mut self.stats, reduce, |reduce| {
                        tree::dequeue_chain(&mut cl.leaf, ctx, reduce)
                    });
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
        for c in self.classes.iter_mut() {
            purged.add(tree::reset_chain(&mut c.leaf, ctx));
        }
        self.active.clear();
        purged
    }

    /// `tc qdisc change … drr`: drr has no options of its own (the limit of
    /// the default leaves is the device's); the classes, leaves and filters
    /// stay.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        _ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Drr(spec) = spec else {
            return Err(wrong_kind());
        };
        self.spec.leaf_limit = spec.leaf_limit;
        Ok(Changed::IN_PLACE)
    }

    /// The document: every class in the order made, and the filters.
    fn options(&self) -> serde_json::Value {
        let spec = DrrSpec {
            classes: self.classes.iter().map(|c| c.spec.clone()).collect(),
            ..self.spec.clone()
        };
        serde_json::to_value(&spec).expect("spec serialises")
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

    classful::class_owner_methods!(self => self.classes.iter().map(|c| &c.leaf));
}

#[cfg(test)]
mod tests;
