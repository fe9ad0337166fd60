//! `prio` (net/sched/sch_prio.c; tc/q_prio.c) and `pfifo_fast`
//! (net/sched/sch_generic.c), the two kinds that pick a band by the
//! packet's priority. docs/semantics/qdiscs.md §13.
//!
//! Priority: `skb->priority`, which a socket gets from its TOS
//! (`rt_tos2priority`, classify.rs). `prio_classify`: u32 filters attached
//! at the qdisc first (`flowid M:N` → band N − 1; a band out of range →
//! the band of priority 0), else the priomap of the priority. `prio_dequeue`
//! serves the lowest band that gives a packet (a throttled child, e.g. a
//! tbf, lets the next band send); `prio_peek` likewise. Each band holds a
//! qdisc chain as an htb class does (classful.rs `build_leaf`): a default
//! pfifo of the device's txqueuelen, or what `tc qdisc … parent M:N`
//! grafted (`prio_graft`, through [`ClassOps`] and class_api/; deleting
//! it puts a default pfifo back). prio has no class verbs: its classes are
//! its bands.
//! `prio_tune`: 2 ≤ bands ≤ 16 and every priomap entry < bands, else
//! EINVAL; bands that disappear lose their queue.
//!
//! `pfifo_fast` (`pfifo_fast_enqueue`/`pfifo_fast_dequeue`, kernels ≥ 4.16
//! with one ring of txqueuelen packets per band): three bands by the fixed
//! priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1, band 0 first.

use super::classful;
use super::ops::{
    absorbing, wrong_kind, BuildEnv, Built, Changed, ChildChange, ClassOps, Peeked, Purged, Qdisc,
    Reduce,
};
use super::spec::{HtbLeaf, PrioClassSpec, PrioSpec, QdiscSpec};
use super::tree::{self, Node};
use super::{classify, AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use serde_json::json;
use std::collections::VecDeque;

/// `TCQ_PRIO_BANDS`, `TCQ_MIN_PRIO_BANDS`.
pub const MAX_BANDS: u32 = 16;
pub const MIN_BANDS: u32 = 2;
/// `sch_default_prio2band`: the priomap of pfifo_fast and of a plain `prio`.
pub const DEFAULT_PRIOMAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// One band: the leaf it was grafted with (`None` = default pfifo) and
/// the qdisc chain.
#[derive(Debug)]
struct Band {
    leaf_spec: Option<HtbLeaf>,
    chain: Vec<Node>,
}

#[derive(Debug)]
pub struct Prio {
    spec: PrioSpec,
    bands: Vec<Band>,
    prio2band: [u8; 16],
    seed: u64,
    stats: QdiscStats,
}

impl Prio {
    pub fn new(spec: &PrioSpec, env: &BuildEnv) -> Result<Prio, TcError> {
        let mut p = Prio {
            spec: spec.clone(),
            bands: Vec::new(),
            prio2band: DEFAULT_PRIOMAP,
            seed: env.seed,
            stats: QdiscStats::default(),
        };
        let removed = p.tune(spec, env.now.as_nanos() as i64)?;
        debug_assert!(removed.is_empty());
        Ok(p)
    }

    fn validate(spec: &PrioSpec) -> Result<(), TcError> {
        if !(MIN_BANDS..=MAX_BANDS).contains(&spec.bands)
            || spec.priomap.len() != 16
            || spec.priomap.iter().any(|&b| b as u32 >= spec.bands)
        {
            return Err(TcError::Invalid(String::new()));
        }
        for c in &spec.classes {
            if c.classid == 0 || c.classid as u32 > spec.bands {
                return Err(TcError::Invalid("Specified class not found".into()));
            }
        }
        Ok(())
    }

    /// `prio_tune` plus the grafts of the document: bands keep their chain
    /// when their leaf is unchanged; the chains of removed or re-grafted
    /// bands are returned for the caller to purge. On error nothing changed.
    fn tune(&mut self, spec: &PrioSpec, now: i64) -> Result<Vec<Vec<Node>>, TcError> {
        Self::validate(spec)?;
        let want = |i: usize| -> Option<&HtbLeaf> {
            spec.classes
                .iter()
                .find(|c| c.classid as usize == i + 1)
                .and_then(|c| c.leaf.as_ref())
        };
        let mut fresh = Vec::with_capacity(spec.bands as usize);
        for i in 0..spec.bands as usize {
            let keep = self
                .bands
                .get(i)
                .is_some_and(|b| b.leaf_spec.as_ref() == want(i));
            fresh.push(if keep {
                None
            } else {
                Some(classful::build_leaf(
                    want(i),
                    spec.leaf_limit,
                    self.seed,
                    now,
                    "prio-band",
                )?)
            });
        }
        let mut removed = Vec::new();
        let mut old = std::mem::take(&mut self.bands).into_iter();
        for (i, chain) in fresh.into_iter().enumerate() {
            let prev = old.next();
            match (prev, chain) {
                (Some(b), None) => self.bands.push(b),
                (prev, Some(chain)) => {
                    if let Some(b) = prev {
                        removed.push(b.chain);
                    }
                    self.bands.push(Band {
                        leaf_spec: want(i).cloned(),
                        chain,
                    });
                }
                (None, None) => unreachable!("a missing band is always built"),
            }
        }
        removed.extend(old.map(|b| b.chain));
        self.prio2band.copy_from_slice(&spec.priomap);
        self.spec = spec.clone();
        Ok(removed)
    }

    /// `prio_classify`: the band index.
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> usize {
        let p = ctx.arena.get(id);
        let prio = classify::tos_priority(p.tos);
        match classify::u32_flowid(&self.spec.filters, p) {
            Some(minor) => {
                let band = (minor as usize).wrapping_sub(1);
                if band < self.bands.len() {
                    band
                } else {
                    self.prio2band[0] as usize
                }
            }
            None => self.prio2band[(prio & 15) as usize] as usize,
        }
    }
}

impl Prio {
    /// The document's bands (every one, with what is grafted on it).
    fn band_specs(&self) -> Vec<PrioClassSpec> {
        (self.bands.iter().enumerate())
            .map(|(i, b)| PrioClassSpec {
                classid: i as u16 + 1,
                leaf: b.leaf_spec.clone(),
            })
            .collect()
    }
}

/// Grafts on prio bands (`prio_class_ops`).
impl ClassOps for Prio {
    fn find(&self, minor: u16) -> Option<usize> {
        classful::band(minor, self.bands.len())
    }

    fn grafted(&self, i: usize) -> Option<&HtbLeaf> {
        self.bands[i].leaf_spec.as_ref()
    }

    /// `prio_graft`.
    fn regraft(
        &mut self,
        i: usize,
        leaf: Option<HtbLeaf>,
        now: i64,
    ) -> Result<Option<Vec<Node>>, TcError> {
        let (seed, limit) = (self.seed, self.spec.leaf_limit);
        let b = &mut self.bands[i];
        classful::regraft(&mut b.leaf_spec, &mut b.chain, leaf, true, |l| {
            classful::build_leaf(l, limit, seed, now, "prio-band")
        })
    }

    fn leaves(&self) -> Box<dyn Iterator<Item = (u16, &HtbLeaf)> + '_> {
        Box::new(
            (self.bands.iter().enumerate())
                .filter_map(|(i, b)| Some((i as u16 + 1, b.leaf_spec.as_ref()?))),
        )
    }
}

impl Qdisc for Prio {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Prio(s) = spec else {
            return None;
        };
        Some(Prio::new(s, env).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "prio"
    }

    /// `prio_enqueue`.
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        let len = ctx.arena.len_of(id);
        let band = self.classify(ctx, id);
        let v = absorbing(&mut self.stats, reduce, |reduce| {
            tree::enqueue_chain(&mut self.bands[band].chain, ctx, reduce, id)
        });
        match v {
            Verdict::Queued => self.stats.queued(len),
            Verdict::Dropped(_) => self.stats.dropped(),
        }
        v
    }

    /// `prio_dequeue`: the first band that gives a packet.
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        for b in 0..self.bands.len() {
            let got = absorbing(&mut self.stats, reduce, |reduce| {
                tree::dequeue_chain(&mut self.bands[b].chain, ctx, reduce)
            });
            if let Some(id) = got {
                let len = ctx.arena.len_of(id);
                self.stats.unqueued(len);
                self.stats.sent(len, ctx.arena.segs_of(id));
                return Some(id);
            }
        }
        None
    }

    /// `prio_peek`: the head of the first band that has one, left there.
    fn peek(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, _child: &mut [Node]) -> Peeked {
        for b in 0..self.bands.len() {
            let got = absorbing(&mut self.stats, reduce, |reduce| {
                tree::peek_chain(&mut self.bands[b].chain, ctx, reduce)
            });
            if got.is_some() {
                return Peeked::Head(got);
            }
        }
        Peeked::Head(None)
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for b in &mut self.bands {
            purged.add(tree::reset_chain(&mut b.chain, ctx));
        }
        purged
    }

    /// `tc qdisc change … prio` (`prio_tune`): the grafts of the bands that
    /// remain and the filters stay.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Prio(spec) = spec else {
            return Err(wrong_kind());
        };
        let mut classes = self.band_specs();
        classes.retain(|c| c.classid as u32 <= spec.bands);
        let doc = PrioSpec {
            classes,
            filters: self.spec.filters.clone(),
            ..spec.clone()
        };
        let removed = self.tune(&doc, ctx.now.as_nanos() as i64)?;
        Ok(Changed {
            purged: super::ops::purge_removed(removed, &mut self.stats, ctx),
            child: ChildChange::Keep,
        })
    }

    /// The document, every band listed (`prio_dump` gives bands and priomap).
    fn options(&self) -> serde_json::Value {
        let spec = PrioSpec {
            classes: self.band_specs(),
            ..self.spec.clone()
        };
        serde_json::to_value(&spec).expect("spec serialises")
    }

    /// Each band's qdisc chain (`tc -s class show`, `tc qdisc show`).
    fn xstats(&self) -> serde_json::Value {
        let classes: Vec<_> = self
            .bands
            .iter()
            .enumerate()
            .map(|(i, b)| json!({"classid": i + 1, "leaf": classful::leaf_json(&b.chain)}))
            .collect();
        json!({ "classes": classes })
    }

    classful::class_owner_methods!(self => self.bands.iter().map(|b| &b.chain));
}

/// `pfifo_fast`: three bands of up to txqueuelen packets each.
#[derive(Debug)]
pub struct PfifoFast {
    bands: [VecDeque<PacketId>; 3],
    limit: u32,
    stats: QdiscStats,
}

impl Default for PfifoFast {
    fn default() -> Self {
        PfifoFast {
            bands: Default::default(),
            limit: super::fifo::TXQUEUELEN,
            stats: QdiscStats::default(),
        }
    }
}

impl PfifoFast {
    /// Packets queued in each band.
    pub fn band_lens(&self) -> [usize; 3] {
        [
            self.bands[0].len(),
            self.bands[1].len(),
            self.bands[2].len(),
        ]
    }
}

impl Qdisc for PfifoFast {
    fn build(spec: &QdiscSpec, _env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        matches!(spec, QdiscSpec::PfifoFast).then(|| Ok(Built::alone(PfifoFast::default())))
    }

    fn kind(&self) -> &'static str {
        "pfifo_fast"
    }

    /// `pfifo_fast_enqueue`.
    #[inline]
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        _reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        let prio = classify::tos_priority(ctx.arena.get(id).tos);
        let band = &mut self.bands[DEFAULT_PRIOMAP[prio as usize] as usize];
        if band.len() as u64 >= self.limit as u64 {
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::QueueFull);
            return Verdict::Dropped(DropReason::QueueFull);
        }
        band.push_back(id);
        self.stats.queued(ctx.arena.len_of(id));
        Verdict::Queued
    }

    /// `pfifo_fast_dequeue`: band 0 first.
    #[inline]
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        _reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        let id = self.bands.iter_mut().find_map(|b| b.pop_front())?;
        let len = ctx.arena.len_of(id);
        self.stats.unqueued(len);
        self.stats.sent(len, ctx.arena.segs_of(id));
        Some(id)
    }

    fn peek(&mut self, _ctx: &mut QdiscCtx, _reduce: &mut Reduce, _child: &mut [Node]) -> Peeked {
        Peeked::Head(self.bands.iter().find_map(|b| b.front().copied()))
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for b in &mut self.bands {
            for id in b.drain(..) {
                purged.add(Purged {
                    packets: 1,
                    bytes: ctx.arena.len_of(id) as u64,
                });
                ctx.drop_packet(id, DropReason::Purged);
            }
        }
        purged
    }

    /// pfifo_fast has no change op.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        _ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        match spec {
            QdiscSpec::PfifoFast => Ok(Changed::IN_PLACE),
            _ => Err(wrong_kind()),
        }
    }

    crate::qdisc::ops::own_stats!();

    fn options(&self) -> serde_json::Value {
        json!({"bands": 3, "priomap": DEFAULT_PRIOMAP})
    }

    fn held(&self) -> u64 {
        self.bands.iter().map(|b| b.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests;
