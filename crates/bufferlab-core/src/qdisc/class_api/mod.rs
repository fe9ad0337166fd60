//! `tc class`, `tc filter` and the `tc qdisc` verbs that land inside a qdisc
//! that owns classes (htb, prio, drr, ets, hfsc) — the role of Linux's
//! net/sched/sch_api.c `tc_ctl_tclass` (the qdisc is found by the classid's
//! major, then its `Qdisc_class_ops` `change`/`delete` act on the class),
//! `qdisc_graft` on a class (`cops->graft`), and net/sched/cls_api.c
//! `tc_new_tfilter`/`tc_del_tfilter` for the u32 filters attached at a qdisc.
//! The kinds implement the operations (ops.rs [`ClassOps`],
//! [`Qdisc::filters`]); this module finds the qdisc and the slot and keeps
//! the tree's books (purged packets, the duplicating-netem rule of api.rs).
//! A request costs the same whatever the number of classes (a classid is
//! found through the class table's index), except where the leaves or the
//! order of the classes must be walked: `tc qdisc … parent H:` with H a qdisc
//! inside a leaf chain (which class holds it), `tc class del` (the later
//! classes move up one place: the order is the dump's) and hfsc's levels (its
//! children are scanned, up to the root).
//!
//! The answers are those `tc` prints, the kernel's extack or errno:
//! `Error: Specified qdisc not found.` (no qdisc of that handle takes the
//! verb), `Error: Specified class not found.`, `Error: Exclusivity flag on,
//! cannot modify.` (`tc qdisc add` on a class that has a leaf), and each
//! kind's own (docs/semantics/qdiscs.md §13, §18–§20; docs/models.md, HTB).

use super::ops::{qdisc_not_found, ClassOps, Qdisc};
use super::spec::{
    ClassRequest, FilterRequest, FilterVerb, HtbLeaf, ParentSpec, TcRequest, TcVerb, U32Filter,
};
use super::tree::{chain_netems, QdiscTree};
use super::QdiscCtx;
use crate::error::TcError;

/// `tc_new_tfilter`'s checks of a new filter against those at its qdisc:
/// one kind per prio (`Specified filter kind does not match existing
/// one`), no second flower filter of the same mask and masked key
/// (cls_flower.c `fl_ht_insert_unique`: EEXIST); `indev` needs a receive
/// hook (a qdisc's packets carry no receiving device in the model).
fn check_new_filter(f: &U32Filter, filters: &[U32Filter]) -> Result<(), TcError> {
    if f.flower.as_ref().is_some_and(|k| k.indev.is_some()) {
        return Err(TcError::NotSupported(
            "flower indev on a qdisc's filters is not supported yet".into(),
        ));
    }
    for g in filters.iter().filter(|g| g.prio == f.prio) {
        match (&g.flower, &f.flower) {
            (Some(a), Some(b)) if a.same_masked_key(b) => {
                return Err(TcError::FilterErrno("File exists"))
            }
            (Some(_), Some(_)) | (None, None) => {}
            _ => {
                return Err(TcError::FilterExtack(
                    "Specified filter kind does not match existing one".into(),
                ))
            }
        }
    }
    Ok(())
}

/// Where a `tc qdisc … parent P` lands inside a qdisc that owns classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraftSlot {
    /// that qdisc's position in the device's chain
    node: usize,
    /// the class whose leaf changes
    minor: u16,
    /// `None`: the class's leaf itself (`parent M:N`); `Some(d)`: the child
    /// of the d-th qdisc of its leaf chain (`parent H:`, H that qdisc's handle)
    below: Option<usize>,
}

impl QdiscTree {
    /// One `tc class add|change|replace|delete`: the kernel's warning for
    /// `tc` to print, if any.
    pub fn class_request(
        &mut self,
        req: &ClassRequest,
        ctx: &mut QdiscCtx,
    ) -> Result<Option<String>, TcError> {
        self.check_dev(&req.dev)?;
        self.settled(ctx, |tree, ctx| {
            let (node, classes) = tree.owner(req.major)?;
            let changed = classes.class_verb(req, ctx)?;
            tree.tell_ancestors(node, changed.purged);
            Ok(changed.warning)
        })
    }

    /// One `tc filter add|delete … u32` at the qdisc `req.major`: `add`
    /// appends the filter, `delete` removes every filter attached there.
    pub fn filter_request(&mut self, req: &FilterRequest) -> Result<(), TcError> {
        self.check_dev(&req.dev)?;
        let filters = self
            .nodes
            .iter_mut()
            .filter(|n| n.handle == req.major)
            .find_map(|n| n.q.filters())
            .ok_or_else(qdisc_not_found)?;
        match (req.verb, &req.filter) {
            (FilterVerb::Add, Some(f)) => {
                let mut f = f.clone();
                if f.prio == 0 {
                    f.prio = super::ingress::auto_prio(filters.iter().map(|g| g.prio))?;
                }
                check_new_filter(&f, filters)?;
                filters.push(f)
            }
            (FilterVerb::Add, None) => {
                return Err(TcError::Invalid(
                    "a filter is required for this command".into(),
                ))
            }
            (FilterVerb::Delete, _) => filters.clear(),
        }
        Ok(())
    }

    /// The u32 filters at the qdisc of handle `major` (the root without
    /// one) for `tc filter show` (filter_show.rs `classful_show`).
    pub fn filter_show(&mut self, major: Option<u16>) -> super::filter_show::FilterDump {
        let Some(n) = (match major {
            Some(m) => self
                .nodes
                .iter_mut()
                .find(|n| n.handle == m && !n.anonymous),
            None => self.nodes.first_mut(),
        }) else {
            return Default::default();
        };
        let handle = n.handle;
        super::filter_show::FilterDump {
            parent: (handle as u32) << 16,
            tps: n
                .q
                .filters()
                .map_or_else(Vec::new, |f| super::filter_show::classful_show(f, handle)),
        }
    }

    /// Where `req` lands inside a qdisc that owns classes, if it does:
    /// `parent M:N` with M such a qdisc's handle is class N's leaf (`Err`:
    /// no class N to graft on); `parent H:` with H the handle of a qdisc of
    /// a class's leaf chain is that qdisc's child.
    pub fn graft_slot(&mut self, req: &TcRequest) -> Option<Result<GraftSlot, TcError>> {
        let Some(ParentSpec::Class { major, minor }) = req.parent else {
            return None;
        };
        for (node, n) in self.nodes.iter_mut().enumerate() {
            let handle = n.handle;
            let Some(classes) = n.q.class_ops() else {
                continue;
            };
            if minor != 0 {
                if handle == major {
                    let slot = GraftSlot {
                        node,
                        minor,
                        below: None,
                    };
                    return Some(classes.leaf(minor).map(|_| slot));
                }
                continue;
            }
            for (class, leaf) in classes.leaves() {
                let mut chain = std::iter::successors(Some(leaf), |l| l.child.as_deref());
                if let Some(depth) = chain.position(|l| l.handle == major) {
                    let slot = GraftSlot {
                        node,
                        minor: class,
                        below: Some(depth),
                    };
                    return Some(Ok(slot));
                }
            }
        }
        None
    }

    /// `tc qdisc add|change|replace|link|delete` at `slot`: the class's leaf
    /// (or the child of a qdisc in it) becomes the request's qdisc, with
    /// nothing grafted below it, or for `delete` goes back to the default.
    pub(super) fn graft(
        &mut self,
        req: &TcRequest,
        slot: GraftSlot,
        ctx: &mut QdiscCtx,
    ) -> Result<(), TcError> {
        let current = self.classes_at(slot.node).leaf(slot.minor)?.cloned();
        let occupied = match (slot.below, &current) {
            (None, cur) => cur.is_some(),
            (Some(d), Some(top)) => nth_in_chain(top, d).child.is_some(),
            (Some(_), None) => unreachable!("the slot was found in this leaf"),
        };
        let new = match (req.verb, &req.qdisc) {
            (TcVerb::Delete, _) => None,
            (TcVerb::Add, _) if occupied => {
                return Err(TcError::Extack("Exclusivity flag on, cannot modify".into()))
            }
            (_, Some(spec)) => Some(HtbLeaf {
                handle: req.handle.unwrap_or(0),
                spec: Box::new(spec.clone()),
                child: None,
            }),
            (_, None) => {
                return Err(TcError::Invalid(
                    "a qdisc kind is required for this command".into(),
                ))
            }
        };
        let leaf = match (slot.below, current) {
            (None, _) => new,
            (Some(d), Some(mut top)) => {
                nth_in_chain_mut(&mut top, d).child = new.map(Box::new);
                Some(top)
            }
            (Some(_), None) => unreachable!("the slot was found in this leaf"),
        };
        self.check_graft_netems(slot, leaf.as_ref())?;
        let purged = self.classes_at(slot.node).graft(slot.minor, leaf, ctx)?;
        self.tell_ancestors(slot.node, purged);
        Ok(())
    }

    /// api.rs's duplicating-netem rule for a graft: the netems of `leaf`
    /// against those of the other qdiscs and of the other classes' leaves.
    fn check_graft_netems(
        &mut self,
        slot: GraftSlot,
        leaf: Option<&HtbLeaf>,
    ) -> Result<(), TcError> {
        let mut new = Vec::new();
        HtbLeaf::chain_netems(leaf, &mut new);
        if new.is_empty() {
            return Ok(());
        }
        let mut all = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if i != slot.node {
                chain_netems(std::slice::from_ref(n), &mut all);
            }
        }
        for (class, l) in self.classes_at(slot.node).leaves() {
            if class != slot.minor {
                HtbLeaf::chain_netems(Some(l), &mut all);
            }
        }
        all.extend(new);
        super::api::netem_mix(&all)
    }

    /// The qdisc of handle `major` that owns classes, with its position.
    fn owner(&mut self, major: u16) -> Result<(usize, &mut dyn ClassOps), TcError> {
        self.nodes
            .iter_mut()
            .enumerate()
            .filter(|(_, n)| n.handle == major)
            .find_map(|(i, n)| Some((i, n.q.class_ops()?)))
            .ok_or_else(qdisc_not_found)
    }

    /// The classes of the qdisc at chain position `node` (a graft slot's).
    fn classes_at(&mut self, node: usize) -> &mut dyn ClassOps {
        self.nodes[node]
            .q
            .class_ops()
            .expect("a graft slot is in a qdisc with classes")
    }
}

/// The `d`-th qdisc of a leaf chain.
fn nth_in_chain(top: &HtbLeaf, d: usize) -> &HtbLeaf {
    let mut at = top;
    for _ in 0..d {
        at = at
            .child
            .as_deref()
            .expect("the slot's depth is in the chain");
    }
    at
}

fn nth_in_chain_mut(top: &mut HtbLeaf, d: usize) -> &mut HtbLeaf {
    let mut at = top;
    for _ in 0..d {
        at = at
            .child
            .as_deref_mut()
            .expect("the slot's depth is in the chain");
    }
    at
}

#[cfg(test)]
mod tests;
