//! HFSC's classes: `tc class add|change|delete` on the class table — the
//! curves of a class changed in place, the levels adjusted from a parent up,
//! a leaf's queue purged — and the class verbs the tree calls. Follows
//! net/sched/sch_hfsc.c (`hfsc_change_class`, `hfsc_delete_class`,
//! `hfsc_adjust_levels`, `hfsc_purge_queue`, `hfsc_qlen_notify`,
//! `hfsc_graft_class`).

use super::super::classful::{self, shifted};
use super::super::ops::{class_not_found, ClassChanged, ClassOps};
use super::super::spec::{
    ClassRequest, ClassSpec, ClassVerb, HfscClassOpts, HfscClassSpec, HtbLeaf,
};
use super::super::tree::Node;
use super::super::QdiscCtx;
use super::{curve, einval, Hfsc, HfscClass};
use crate::error::TcError;

impl Hfsc {
    /// Position of class `minor` other than the root.
    fn class(&self, minor: u16) -> Option<usize> {
        self.classes.find(minor).filter(|&i| i != 0)
    }

    /// `hfsc_change_class` for a new class (the kernel gives no extack:
    /// bare EINVAL, EEXIST, ENOENT): a leaf with a default pfifo; a parent
    /// that was a leaf loses its queue (what `c` grafts on it comes by
    /// `regraft`). The purged chains.
    pub(super) fn add_class(
        &mut self,
        c: &HfscClassSpec,
        now_ns: i64,
    ) -> Result<Vec<Vec<Node>>, TcError> {
        if c.classid == 0 {
            return Err(einval());
        }
        if self.classes.find(c.classid).is_some() {
            return Err(TcError::Exists);
        }
        let parent = match c.parent {
            0 => 0,
            p => self.class(p).ok_or(TcError::NotFound)?,
        };
        let parent_fsc = self.classes[parent].spec.as_ref().map(|s| curve(&s.fsc));
        if parent_fsc.is_some_and(|f| f.is_none()) {
            return Err(einval());
        }
        if curve(&c.rsc).is_none() && curve(&c.fsc).is_none() {
            return Err(einval());
        }
        let leaf =
            classful::build_leaf(None, self.spec.leaf_limit, self.seed, now_ns, "hfsc-leaf")?;
        let mut cl = HfscClass::new(c.classid, Some(parent), None);
        cl.start_curves(c);
        cl.spec = Some(HfscClassSpec {
            leaf: None,
            ..c.clone()
        });
        cl.leaf = leaf;
        self.classes.push(cl);
        let mut removed = Vec::new();
        if self.classes[parent].level == 0 {
            removed.push(self.purge(parent, now_ns));
        }
        self.adjust_levels(parent);
        Ok(removed)
    }

    /// `hfsc_delete_class` of class `i` (it has no children): its queue is
    /// purged, the levels above it adjusted.
    fn delete_class(&mut self, i: usize) -> Vec<Node> {
        let leaf = std::mem::take(&mut self.classes[i].leaf);
        self.qlen_notify(i);
        let parent = self.classes[i].parent;
        self.classes.remove(i);
        for c in self.classes.iter_mut() {
            c.parent = c.parent.map(|p| shifted(p, i));
        }
        if let Some(p) = parent {
            self.adjust_levels(shifted(p, i));
        }
        leaf
    }

    /// `hfsc_change_class` on class `i`: the curves given replace its own
    /// (a curve given again unchanged is left running).
    fn update_class(&mut self, i: usize, o: &HfscClassOpts, now_ns: i64) {
        let old = self.classes[i].spec.clone().expect("not the root");
        let mut new = old.clone();
        new.rsc = o.rsc.or(old.rsc);
        new.fsc = o.fsc.or(old.fsc);
        new.usc = o.usc.or(old.usc);
        self.classes[i].spec = Some(new.clone());
        self.change_curves(i, &old, &new, Self::ticks(now_ns));
    }

    /// `hfsc_adjust_levels` from class `i` up to the root: a class is one
    /// level above its highest child.
    fn adjust_levels(&mut self, i: usize) {
        let mut at = Some(i);
        while let Some(k) = at {
            let level = (self.classes.iter())
                .filter(|c| c.parent == Some(k))
                .map(|c| c.level + 1)
                .max()
                .unwrap_or(0);
            self.classes[k].level = level;
            at = self.classes[k].parent;
        }
    }

    /// Take the leaf chain of class `i` out (to be purged by the caller),
    /// leaving a fresh default pfifo, and tell the scheduler the class
    /// emptied (`hfsc_purge_queue` → `hfsc_qlen_notify`).
    fn purge(&mut self, i: usize, now: i64) -> Vec<Node> {
        let fresh = classful::build_leaf(None, self.spec.leaf_limit, self.seed, now, "hfsc-leaf")
            .expect("pfifo builds");
        let old = std::mem::replace(&mut self.classes[i].leaf, fresh);
        self.qlen_notify(i);
        old
    }

    /// `hfsc_qlen_notify`: the class's leaf emptied outside a dequeue.
    pub(super) fn qlen_notify(&mut self, i: usize) {
        if self.classes[i].nactive > 0 {
            self.update_vf(i, 0);
        }
        self.classes[i].el = None;
    }

    /// `hfsc_change_class` on an existing class: the curves given anew are
    /// restarted now; a backlogged class is rescheduled.
    fn change_curves(&mut self, i: usize, old: &HfscClassSpec, new: &HfscClassSpec, now: u64) {
        let had_rsc = self.classes[i].rsc.is_some();
        let had_fsc = self.classes[i].fsc.is_some();
        let cl = &mut self.classes[i];
        let mut touched = false;
        if curve(&new.rsc) != curve(&old.rsc) {
            if let Some(sc) = curve(&new.rsc) {
                cl.change_rsc(&sc, now);
                touched = true;
            }
        }
        if curve(&new.fsc) != curve(&old.fsc) {
            if let Some(sc) = curve(&new.fsc) {
                cl.change_fsc(&sc);
                touched = true;
            }
        }
        if curve(&new.usc) != curve(&old.usc) {
            if let Some(sc) = curve(&new.usc) {
                cl.change_usc(&sc, now);
                touched = true;
            }
        }
        if !touched || cl.qlen() == 0 {
            return;
        }
        let len = self.head_len(i);
        if self.classes[i].rsc.is_some() {
            if had_rsc {
                self.update_ed(i, len);
            } else {
                self.init_ed(i, len, now);
            }
        }
        if self.classes[i].fsc.is_some() {
            if had_fsc {
                self.update_vf(i, 0);
            } else {
                self.init_vf(i, now);
            }
        }
    }
}

/// `tc class` and grafts on hfsc classes (`hfsc_class_ops`).
impl ClassOps for Hfsc {
    /// `hfsc_change_class` / `hfsc_delete_class`, with the kernel's bare
    /// errnos (no extack).
    fn class_verb(
        &mut self,
        req: &ClassRequest,
        ctx: &mut QdiscCtx,
    ) -> Result<ClassChanged, TcError> {
        let opts = classful::class_opts(req, ClassSpec::hfsc)?;
        let now = ctx.now.as_nanos() as i64;
        let removed = match (req.verb, self.class(req.minor), opts) {
            (ClassVerb::Delete, None, _) => return Err(class_not_found()),
            (ClassVerb::Delete, Some(i), _) => {
                if self.classes[i].level > 0 {
                    return Err(TcError::Busy);
                }
                vec![self.delete_class(i)]
            }
            (ClassVerb::Add, Some(_), _) => return Err(TcError::Exists),
            (_, Some(i), Some(o)) => {
                let parent = self.classes[i]
                    .parent
                    .map_or(0, |p| self.classes[p].classid);
                if req.parent.is_some_and(|p| p != parent) {
                    return Err(einval());
                }
                self.update_class(i, o, now);
                Vec::new()
            }
            (ClassVerb::Change, None, _) => return Err(TcError::NotFound),
            (_, None, Some(o)) => {
                let parent = req.parent.ok_or_else(class_not_found)?;
                let c = HfscClassSpec {
                    classid: req.minor,
                    parent,
                    rsc: o.rsc,
                    fsc: o.fsc,
                    usc: o.usc,
                    leaf: None,
                };
                self.add_class(&c, now)?
            }
            (_, _, None) => unreachable!("class_opts gives options to every verb but delete"),
        };
        Ok(super::super::ops::purge_removed(removed, &mut self.stats, ctx).into())
    }

    fn find(&self, minor: u16) -> Option<usize> {
        self.class(minor)
    }

    fn grafted(&self, i: usize) -> Option<&HtbLeaf> {
        self.classes[i].spec.as_ref().and_then(|s| s.leaf.as_ref())
    }

    /// `hfsc_graft_class`: a leaf class's scheduler forgets it (its new queue
    /// is empty).
    fn regraft(
        &mut self,
        i: usize,
        leaf: Option<HtbLeaf>,
        now: i64,
    ) -> Result<Option<Vec<Node>>, TcError> {
        let (seed, limit) = (self.seed, self.spec.leaf_limit);
        let cl = &mut self.classes[i];
        let spec = &mut cl.spec.as_mut().expect("not the root").leaf;
        let old = classful::regraft(spec, &mut cl.leaf, leaf, true, |l| {
            classful::build_leaf(l, limit, seed, now, "hfsc-leaf")
        })?;
        if old.is_some() && self.classes[i].level == 0 {
            self.qlen_notify(i);
        }
        Ok(old)
    }

    fn leaves(&self) -> Box<dyn Iterator<Item = (u16, &HtbLeaf)> + '_> {
        Box::new(
            (self.classes.iter())
                .filter_map(|c| Some((c.classid, c.spec.as_ref()?.leaf.as_ref()?))),
        )
    }
}
