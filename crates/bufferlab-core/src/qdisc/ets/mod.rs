//! `ets` — Enhanced Transmission Selection, IEEE 802.1Qaz (Linux
//! net/sched/sch_ets.c: `ets_qdisc_change`, `ets_classify`,
//! `ets_qdisc_enqueue`, `ets_qdisc_dequeue`, `ets_class_change`; the
//! command side follows iproute2 tc/q_ets.c). See docs/semantics/qdiscs.md §19.
//!
//! `bands` classes 1:1…1:N, each with its own leaf (pfifo by default).
//! The first `strict` bands are served in strict priority, band 1 first;
//! when they are all empty the remaining bands share the link by deficit
//! round robin with their `quanta` (a band joins the tail of the active
//! list with its deficit set to its quantum, exactly as drr).
//!
//! The bands are the classes: `tc class change … ets quantum Q` sets a
//! non-strict band's quantum (`ets_class_change`), `tc qdisc … parent M:N`
//! grafts a band's leaf (`ets_class_graft`), through [`ClassOps`]
//! (class_api/); a `tc qdisc change` keeps the leaves of the bands that
//! remain and the filters.
//!
//! Classification: a u32 filter's flowid names the band (a band number
//! beyond `bands` falls back to `priomap[0]`); with no match the packet's
//! `skb->priority` (from its TOS byte, classful.rs) indexes `priomap`.

use super::classful::{self, PSCHED_MTU};
use super::ops::{
    wrong_kind, BuildEnv, Built, Changed, ChildChange, ClassChanged, ClassOps, Purged, Qdisc,
    Reduce,
};
use super::spec::{ClassRequest, ClassSpec, ClassVerb, EtsClassSpec, EtsSpec, HtbLeaf, QdiscSpec};
use super::tree::{self, Node};
use super::{AnyQdisc, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use serde_json::json;
use std::collections::VecDeque;

/// `TCQ_ETS_MAX_BANDS`
pub const MAX_BANDS: u8 = 16;
/// `TC_PRIO_MAX + 1`
pub const PRIOMAP_LEN: usize = 16;

#[derive(Debug)]
pub struct Band {
    /// 0 for a strict band
    pub quantum: u32,
    pub deficit: i64,
    leaf_spec: Option<super::spec::HtbLeaf>,
    leaf: Vec<Node>,
    pub stats: QdiscStats,
}

#[derive(Debug)]
pub struct Ets {
    spec: EtsSpec,
    bands: Vec<Band>,
    /// indices of the backlogged non-strict bands, round-robin order
    active: VecDeque<usize>,
    stats: QdiscStats,
    seed: u64,
}

impl Ets {
    pub fn new(spec: &EtsSpec, env: &BuildEnv) -> Result<Ets, TcError> {
        let mut e = Ets {
            spec: spec.clone(),
            bands: Vec::new(),
            active: VecDeque::new(),
            stats: QdiscStats::default(),
            seed: env.seed,
        };
        let removed = e.reconfigure(spec, env.now.as_nanos() as i64)?;
        debug_assert!(removed.is_empty());
        Ok(e)
    }

    /// `ets_qdisc_change`'s checks, in the kernel's words.
    fn validate(spec: &EtsSpec) -> Result<(), TcError> {
        if spec.bands == 0 || spec.bands > MAX_BANDS {
            return Err(TcError::Invalid("Invalid number of bands".into()));
        }
        if spec.strict > spec.bands {
            return Err(TcError::Invalid("Invalid number of strict bands".into()));
        }
        if spec.quanta.len() > (spec.bands - spec.strict) as usize {
            return Err(TcError::Invalid("Too many quanta".into()));
        }
        if spec.quanta.contains(&0) {
            return Err(TcError::Invalid("ETS quantum cannot be zero".into()));
        }
        if spec.priomap.len() > PRIOMAP_LEN {
            return Err(TcError::Invalid(
                "Too many priorities in ETS priomap".into(),
            ));
        }
        if spec.priomap.iter().any(|&b| b >= spec.bands) {
            return Err(TcError::Invalid("Invalid band number".into()));
        }
        for c in &spec.classes {
            if c.classid == 0 || c.classid > spec.bands as u16 {
                return Err(TcError::Invalid("Specified class not found".into()));
            }
        }
        Ok(())
    }

    /// The quantum of band `i` (0-based): 0 when strict, else the given
    /// quantum or `psched_mtu`.
    fn quantum_of(spec: &EtsSpec, i: usize) -> u32 {
        let strict = spec.strict as usize;
        if i < strict {
            0
        } else {
            spec.quanta.get(i - strict).copied().unwrap_or(PSCHED_MTU)
        }
    }

    fn reconfigure(&mut self, spec: &EtsSpec, now: i64) -> Result<Vec<Vec<Node>>, TcError> {
        Self::validate(spec)?;
        let n = spec.bands as usize;
        let leaf_of = |i: usize| {
            spec.classes
                .iter()
                .find(|c| c.classid as usize == i + 1)
                .and_then(|c| c.leaf.clone())
        };
        let mut fresh = Vec::with_capacity(n);
        for i in 0..n {
            let want = leaf_of(i);
            let keep = self.bands.get(i).is_some_and(|b| b.leaf_spec == want);
            fresh.push(if keep {
                None
            } else {
                Some(classful::build_leaf(
                    want.as_ref(),
                    spec.leaf_limit,
                    self.seed,
                    now,
                    "ets-leaf",
                )?)
            });
        }
        let mut removed = Vec::new();
        for b in self.bands.drain(n.min(self.bands.len())..) {
            removed.push(b.leaf);
        }
        for (i, leaf) in fresh.into_iter().enumerate() {
            if i >= self.bands.len() {
                self.bands.push(Band {
                    quantum: 0,
                    deficit: 0,
                    leaf_spec: None,
                    leaf: Vec::new(),
                    stats: QdiscStats::default(),
                });
            }
            let b = &mut self.bands[i];
            if let Some(l) = leaf {
                let old = std::mem::replace(&mut b.leaf, l);
                if !old.is_empty() {
                    removed.push(old);
                }
                b.leaf_spec = leaf_of(i);
            }
            b.quantum = Self::quantum_of(spec, i);
        }
        // The active list: bands still non-strict and backlogged keep their
        // place; bands that became non-strict with packets join the tail.
        let strict = spec.strict as usize;
        let bands = &self.bands;
        self.active
            .retain(|&i| i < n && i >= strict && classful::leaf_backlog(&bands[i].leaf).0 > 0);
        for i in strict..n {
            if !self.active.contains(&i) && classful::leaf_backlog(&self.bands[i].leaf).0 > 0 {
                self.bands[i].deficit = self.bands[i].quantum as i64;
                self.active.push_back(i);
            }
        }
        self.spec = spec.clone();
        Ok(removed)
    }

    /// `ets_classify`.
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> usize {
        let p = ctx.arena.get(id);
        let prio = |k: usize| {
            self.spec
                .priomap
                .get(k)
                .copied()
                .unwrap_or(self.spec.bands - 1)
        };
        match classful::u32_classify(&self.spec.filters, p) {
            Some(minor) => {
                let band = (minor as usize).wrapping_sub(1);
                if band >= self.bands.len() {
                    prio(0) as usize
                } else {
                    band
                }
            }
            None => prio(classful::tos_priority(p.tos) as usize) as usize,
        }
    }

    pub fn bands(&self) -> &[Band] {
        &self.bands
    }

    fn take(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, i: usize) -> Option<PacketId> {
        let b = &mut self.bands[i];
        let got = classful::absorbing_class(&mut b.stats, &mut self.stats, reduce, |reduce| {
            tree::dequeue_chain(&mut b.leaf, ctx, reduce)
        });
        let id = got?;
        let len = ctx.arena.len_of(id);
        let segs = ctx.arena.segs_of(id);
        self.bands[i].stats.sent(len, segs);
        self.stats.unqueued(len);
        self.stats.sent(len, segs);
        Some(id)
    }
}

/// `tc class` and grafts on ets bands (`ets_class_ops`).
impl ClassOps for Ets {
    /// `ets_class_change`: the bands come with the qdisc (no class is added
    /// or deleted); a non-strict band takes a new quantum.
    fn class_verb(
        &mut self,
        req: &ClassRequest,
        _ctx: &mut QdiscCtx,
    ) -> Result<ClassChanged, TcError> {
        let opts = classful::class_opts(req, ClassSpec::ets)?;
        let Some(i) = self.find(req.minor) else {
            return Err(TcError::NotSupported(
                "Fine-grained class addition and removal is not supported".into(),
            ));
        };
        match req.verb {
            ClassVerb::Delete => return Err(TcError::NotSupported(String::new())),
            ClassVerb::Add => return Err(TcError::Exists),
            ClassVerb::Change | ClassVerb::Replace => {}
        }
        if let Some(q) = opts.and_then(|o| o.quantum) {
            let strict = self.spec.strict as usize;
            if i < strict {
                return Err(TcError::Invalid(
                    "Strict bands do not have a configurable quantum".into(),
                ));
            }
            let k = i - strict;
            if self.spec.quanta.len() <= k {
                self.spec.quanta.resize(k + 1, PSCHED_MTU);
            }
            self.spec.quanta[k] = q;
            self.bands[i].quantum = q;
        }
        Ok(ClassChanged::default())
    }

    fn find(&self, minor: u16) -> Option<usize> {
        classful::band(minor, self.bands.len())
    }

    fn grafted(&self, i: usize) -> Option<&HtbLeaf> {
        self.bands[i].leaf_spec.as_ref()
    }

    /// `ets_class_graft`; the document lists the bands grafted on (or
    /// ungrafted), in the order of their first graft. A band with a new
    /// leaf leaves the active list (its queue is empty).
    fn regraft(
        &mut self,
        i: usize,
        leaf: Option<HtbLeaf>,
        now: i64,
    ) -> Result<Option<Vec<Node>>, TcError> {
        let (seed, limit) = (self.seed, self.spec.leaf_limit);
        let b = &mut self.bands[i];
        let old = classful::regraft(&mut b.leaf_spec, &mut b.leaf, leaf.clone(), true, |l| {
            classful::build_leaf(l, limit, seed, now, "ets-leaf")
        })?;
        let classid = i as u16 + 1;
        match self.spec.classes.iter_mut().find(|c| c.classid == classid) {
            Some(c) => c.leaf = leaf,
            None => self.spec.classes.push(EtsClassSpec { classid, leaf }),
        }
        if old.is_some() {
            self.active.retain(|&a| a != i);
        }
        Ok(old)
    }

    fn leaves(&self) -> Box<dyn Iterator<Item = (u16, &HtbLeaf)> + '_> {
        Box::new((self.spec.classes.iter()).filter_map(|c| Some((c.classid, c.leaf.as_ref()?))))
    }
}

impl Qdisc for Ets {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Ets(s) = spec else {
            return None;
        };
        Some(Ets::new(s, env).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "ets"
    }

    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        let len = ctx.arena.len_of(id);
        let i = self.classify(ctx, id);
        let first = classful::leaf_backlog(&self.bands[i].leaf).0 == 0;
        let b = &mut self.bands[i];
        let v = classful::absorbing_class(&mut b.stats, &mut self.stats, reduce, |reduce| {
            tree::enqueue_chain(&mut b.leaf, ctx, reduce, id)
        });
        match v {
            Verdict::Queued => {
                self.stats.queued(len);
                let b = &mut self.bands[i];
                if first && b.quantum > 0 && classful::leaf_backlog(&b.leaf).0 > 0 {
                    b.deficit = b.quantum as i64;
                    self.active.push_back(i);
                }
            }
            Verdict::Dropped(_) => {
                self.bands[i].stats.dropped();
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
        for i in 0..self.spec.strict as usize {
            if let Some(id) = self.take(ctx, reduce, i) {
                return Some(id);
            }
        }
        loop {
            let &i = self.active.front()?;
            let b = &mut self.bands[i];
            let head = classful::absorbing_class(&mut b.stats, &mut self.stats, reduce, |reduce| {
                tree::peek_chain(&mut b.leaf, ctx, reduce)
            });
            let Some(h) = head else {
                if classful::leaf_backlog(&self.bands[i].leaf).0 == 0 {
                    self.active.pop_front();
                    continue;
                }
                return None;
            };
            let len = ctx.arena.len_of(h) as i64;
            if len <= self.bands[i].deficit {
                self.bands[i].deficit -= len;
                let id = self.take(ctx, reduce, i);
                if classful::leaf_backlog(&self.bands[i].leaf).0 == 0 {
                    self.active.pop_front();
                }
                return id;
            }
            self.bands[i].deficit += self.bands[i].quantum as i64;
            self.active.rotate_left(1);
        }
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for b in &mut self.bands {
            purged.add(tree::reset_chain(&mut b.leaf, ctx));
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
        let QdiscSpec::Ets(spec) = spec else {
            return Err(wrong_kind());
        };
        // `ets_qdisc_change`: the leaves of the bands that remain and the
        // filters stay
        let doc = EtsSpec {
            classes: (self.spec.classes.iter())
                .filter(|c| c.classid <= spec.bands as u16)
                .cloned()
                .collect(),
            filters: self.spec.filters.clone(),
            ..spec.clone()
        };
        let removed = self.reconfigure(&doc, ctx.now.as_nanos() as i64)?;
        Ok(Changed {
            purged: super::ops::purge_removed(removed, &mut self.stats, ctx),
            child: ChildChange::Keep,
        })
    }

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.spec).expect("spec serialises")
    }

    /// Per-band state for `tc -s class show` (the kernel has no ets xstats).
    fn xstats(&self) -> serde_json::Value {
        let classes: Vec<_> = self
            .bands
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let (qlen, backlog) = classful::leaf_backlog(&b.leaf);
                json!({
                    "classid": i + 1,
                    "parent": 0,
                    "quantum": b.quantum,
                    "deficit": b.deficit,
                    "bytes": b.stats.bytes,
                    "packets": b.stats.packets,
                    "drops": b.stats.drops,
                    "overlimits": 0,
                    "qlen": qlen,
                    "backlog": backlog,
                    "leaf": classful::leaf_json(&b.leaf),
                })
            })
            .collect();
        json!({ "classes": classes })
    }

    classful::class_owner_methods!(self => self.bands.iter().map(|b| &b.leaf));
}

#[cfg(test)]
mod tests;
