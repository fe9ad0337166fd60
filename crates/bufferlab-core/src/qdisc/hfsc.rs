//! `hfsc` — Hierarchical Fair Service Curve (Linux net/sched/sch_hfsc.c:
//! the service-curve arithmetic `seg_x2y`, `seg_y2x`, `m2sm`, `m2ism`,
//! `d2dx`, `sm2m`, `dx2d`, `sc2isc`, `rtsc_init`, `rtsc_x2y`, `rtsc_y2x`,
//! `rtsc_min`; the schedulers `init_ed`, `update_ed`, `update_d`,
//! `init_vf`, `update_vf`, `eltree_get_mindl`, `vttree_get_minvt`,
//! `hfsc_enqueue`, `hfsc_dequeue`, `hfsc_schedule_watchdog`; the class
//! verbs `hfsc_change_class`, `hfsc_delete_class`, `hfsc_classify`,
//! `hfsc_qlen_notify`, `hfsc_dump_class_stats`; the command side follows
//! iproute2 tc/q_hfsc.c). See docs/semantics/qdiscs.md §20.
//!
//! Time is the kernel's psched clock: ticks of 64 ns (`PSCHED_SHIFT` 6,
//! 15 625 000 ticks/s). A curve `m1 d m2` (bytes/s, µs, bytes/s) becomes
//! the internal slopes `sm` = bytes/tick << 24 and `ism` = ticks/byte <<
//! 14, rounded up as the kernel rounds, and `dx` ticks / `dy` bytes for
//! the first segment.
//!
//! Real-time (rt): a backlogged class has an eligible time `e` and a
//! deadline `d` read off its eligible and deadline curves at its real-time
//! work `cumul` (and `cumul` + the head packet); when some class is
//! eligible (`e` ≤ now) the one with the smallest deadline sends and its
//! bytes count as real-time work. Link-sharing (ls): otherwise, from the
//! root down, the child with the smallest virtual time `vt` whose fit time
//! `f` has come (the upper-limit curve `ul` pushes `f` into the future)
//! is chosen, down to a leaf. Every sent byte advances `total` (and so
//! `vt`) on the whole path. With neither criterion able to send, the
//! watchdog is armed for the smallest eligible time or the root's
//! smallest fit time (`overlimits` counts these refusals).
//!
//! The eligible/vt/cf red-black trees of the kernel are kept as flags with
//! an insertion sequence number: the ordered walks sort by (key, seq), which
//! is the order the kernel's trees give equal keys (a new node goes right
//! of equal ones). Classification: the u32 filters attached at the qdisc
//! (a flowid naming an inner class or no class falls to the default), then
//! the `default` class; none: the packet is dropped (reason
//! `unclassified`). Not modelled: filters attached to inner classes,
//! `skb->priority` naming a class, rate estimators.
//!
//! Classes come one `tc class` line at a time and leaves one graft at a time
//! through [`ClassOps`] (class_api.rs): a new class is a leaf with a default
//! pfifo, and its parent, if it was a leaf, loses its queue; the levels are
//! adjusted from the parent up (`hfsc_adjust_levels`).

use super::classful::{self, shifted, ClassTable, Classid};
use super::ops::{
    class_not_found, wrong_kind, BuildEnv, Built, Changed, ClassChanged, ClassOps, Purged, Qdisc,
    Reduce,
};
use super::spec::{
    ClassRequest, ClassSpec, ClassVerb, HfscClassOpts, HfscClassSpec, HfscSpec, HtbLeaf, QdiscSpec,
    ServiceCurve,
};
use super::tree::{self, Node};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::time::SimTime;
use serde_json::json;

/// `PSCHED_SHIFT`: a psched tick is 64 ns.
pub const PSCHED_SHIFT: u32 = 6;
/// `PSCHED_TICKS_PER_SEC`
pub const TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// `SM_SHIFT` = 30 − PSCHED_SHIFT
pub const SM_SHIFT: u32 = 30 - PSCHED_SHIFT;
/// `ISM_SHIFT` = 8 + PSCHED_SHIFT
pub const ISM_SHIFT: u32 = 8 + PSCHED_SHIFT;
const SM_MASK: u64 = (1 << SM_SHIFT) - 1;
const ISM_MASK: u64 = (1 << ISM_SHIFT) - 1;
/// `HT_INFINITY`
pub const INFINITY: u64 = u64::MAX;
const USEC_PER_SEC: u64 = 1_000_000;

/// y = x·sm >> SM_SHIFT, split so that it does not overflow.
pub fn seg_x2y(x: u64, sm: u64) -> u64 {
    (x >> SM_SHIFT)
        .wrapping_mul(sm)
        .wrapping_add(((x & SM_MASK).wrapping_mul(sm)) >> SM_SHIFT)
}

/// x = y·ism >> ISM_SHIFT (infinite for an infinite inverse slope).
pub fn seg_y2x(y: u64, ism: u64) -> u64 {
    if y == 0 {
        0
    } else if ism == INFINITY {
        INFINITY
    } else {
        (y >> ISM_SHIFT)
            .wrapping_mul(ism)
            .wrapping_add(((y & ISM_MASK).wrapping_mul(ism)) >> ISM_SHIFT)
    }
}

/// bytes/s → bytes per tick << SM_SHIFT, rounded up.
pub fn m2sm(m: u32) -> u64 {
    ((m as u64) << SM_SHIFT).div_ceil(TICKS_PER_SEC)
}

/// bytes/s → ticks per byte << ISM_SHIFT, rounded up; infinite for 0.
pub fn m2ism(m: u32) -> u64 {
    if m == 0 {
        INFINITY
    } else {
        (TICKS_PER_SEC << ISM_SHIFT).div_ceil(m as u64)
    }
}

/// µs → ticks, rounded up.
pub fn d2dx(d: u32) -> u64 {
    (d as u64 * TICKS_PER_SEC).div_ceil(USEC_PER_SEC)
}

/// The slope as the kernel dumps it back (bytes/s, rounded down).
pub fn sm2m(sm: u64) -> u32 {
    ((sm as u128 * TICKS_PER_SEC as u128) >> SM_SHIFT) as u32
}

/// Ticks back to µs (rounded down).
pub fn dx2d(dx: u64) -> u32 {
    (dx * USEC_PER_SEC / TICKS_PER_SEC) as u32
}

/// `struct internal_sc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Isc {
    pub sm1: u64,
    pub ism1: u64,
    pub dx: u64,
    pub dy: u64,
    pub sm2: u64,
    pub ism2: u64,
}

impl Isc {
    /// `sc2isc`
    pub fn new(sc: &ServiceCurve) -> Isc {
        let sm1 = m2sm(sc.m1);
        let dx = d2dx(sc.d);
        Isc {
            sm1,
            ism1: m2ism(sc.m1),
            dx,
            dy: seg_x2y(dx, sm1),
            sm2: m2sm(sc.m2),
            ism2: m2ism(sc.m2),
        }
    }

    /// The curve as `hfsc_dump_sc` reports it.
    pub fn dump(&self) -> ServiceCurve {
        ServiceCurve {
            m1: sm2m(self.sm1),
            d: dx2d(self.dx),
            m2: sm2m(self.sm2),
        }
    }

    fn convex(&self) -> bool {
        self.sm1 <= self.sm2
    }
}

/// `struct runtime_sc`: a two-piece curve anchored at (x, y).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rtsc {
    pub x: u64,
    pub y: u64,
    pub sm1: u64,
    pub ism1: u64,
    pub dx: u64,
    pub dy: u64,
    pub sm2: u64,
    pub ism2: u64,
}

impl Rtsc {
    /// `rtsc_init`
    pub fn new(isc: &Isc, x: u64, y: u64) -> Rtsc {
        Rtsc {
            x,
            y,
            sm1: isc.sm1,
            ism1: isc.ism1,
            dx: isc.dx,
            dy: isc.dy,
            sm2: isc.sm2,
            ism2: isc.ism2,
        }
    }

    /// `rtsc_y2x`: the time at which the curve reaches `y`.
    pub fn y2x(&self, y: u64) -> u64 {
        if y < self.y {
            self.x
        } else if y <= self.y.wrapping_add(self.dy) {
            if self.dy == 0 {
                self.x.wrapping_add(self.dx)
            } else {
                self.x.wrapping_add(seg_y2x(y - self.y, self.ism1))
            }
        } else {
            self.x
                .wrapping_add(self.dx)
                .wrapping_add(seg_y2x(y - self.y - self.dy, self.ism2))
        }
    }

    /// `rtsc_x2y`: the service the curve gives by time `x`.
    pub fn x2y(&self, x: u64) -> u64 {
        if x <= self.x {
            self.y
        } else if x <= self.x.wrapping_add(self.dx) {
            self.y.wrapping_add(seg_x2y(x - self.x, self.sm1))
        } else {
            self.y
                .wrapping_add(self.dy)
                .wrapping_add(seg_x2y(x - self.x - self.dx, self.sm2))
        }
    }

    /// `rtsc_min`: the lower envelope of this curve and `isc` started at
    /// (x, y).
    pub fn min_with(&mut self, isc: &Isc, x: u64, y: u64) {
        if isc.convex() {
            if self.x2y(x) < y {
                return;
            }
            self.x = x;
            self.y = y;
            return;
        }
        let y1 = self.x2y(x);
        if y1 <= y {
            return;
        }
        let y2 = self.x2y(x.wrapping_add(isc.dx));
        if y2 >= y.wrapping_add(isc.dy) {
            self.x = x;
            self.y = y;
            self.dx = isc.dx;
            self.dy = isc.dy;
            return;
        }
        // The curves cross: the first segment of `isc` lasts until the
        // gap y1 − y is closed at slope sm1 − sm2.
        let dsm = isc.sm1 - isc.sm2;
        let mut dx = (((y1 - y) as u128) << SM_SHIFT) as u64 / dsm;
        if self.x + self.dx > x {
            dx += self.x + self.dx - x;
        }
        let dy = seg_x2y(dx, isc.sm1);
        self.x = x;
        self.y = y;
        self.dx = dx;
        self.dy = dy;
    }
}

/// One class (index 0 of the table is the root class, the qdisc itself).
#[derive(Debug)]
pub struct HfscClass {
    pub classid: u16,
    pub parent: Option<usize>,
    pub level: u32,
    spec: Option<HfscClassSpec>,
    pub rsc: Option<Isc>,
    pub fsc: Option<Isc>,
    pub usc: Option<Isc>,
    pub total: u64,
    pub cumul: u64,
    pub d: u64,
    pub e: u64,
    pub vt: u64,
    pub f: u64,
    pub myf: u64,
    pub cfmin: u64,
    pub cvtmin: u64,
    pub vtadj: u64,
    pub cvtoff: u64,
    pub deadline: Rtsc,
    pub eligible: Rtsc,
    pub virt: Rtsc,
    pub ulimit: Rtsc,
    pub vtperiod: u32,
    pub parentperiod: u32,
    pub nactive: u32,
    /// length of the head packet as last seen (enqueue of the first packet,
    /// the peek after each dequeue): `qdisc_peek_len` for a class changed
    /// while backlogged
    head_len: u32,
    /// membership of the eligible tree, the parent's vt tree and cf tree
    /// (the insertion sequence number)
    el: Option<u64>,
    vtn: Option<u64>,
    cfn: Option<u64>,
    leaf: Vec<Node>,
    pub stats: QdiscStats,
}

impl HfscClass {
    fn new(classid: u16, parent: Option<usize>, spec: Option<HfscClassSpec>) -> HfscClass {
        HfscClass {
            classid,
            parent,
            level: 0,
            spec,
            rsc: None,
            fsc: None,
            usc: None,
            total: 0,
            cumul: 0,
            d: 0,
            e: 0,
            vt: 0,
            f: 0,
            myf: 0,
            cfmin: 0,
            cvtmin: 0,
            vtadj: 0,
            cvtoff: 0,
            deadline: Rtsc::default(),
            eligible: Rtsc::default(),
            virt: Rtsc::default(),
            ulimit: Rtsc::default(),
            vtperiod: 0,
            parentperiod: 0,
            nactive: 0,
            head_len: 0,
            el: None,
            vtn: None,
            cfn: None,
            leaf: Vec::new(),
            stats: QdiscStats::default(),
        }
    }

    fn qlen(&self) -> u64 {
        classful::leaf_backlog(&self.leaf).0
    }

    /// The class's curves as its spec gives them (a new class: at `now` 0,
    /// as `hfsc_change_class` starts them).
    fn start_curves(&mut self, c: &HfscClassSpec) {
        if let Some(sc) = curve(&c.rsc) {
            self.change_rsc(&sc, 0);
        }
        if let Some(sc) = curve(&c.fsc) {
            self.change_fsc(&sc);
        }
        if let Some(sc) = curve(&c.usc) {
            self.change_usc(&sc, 0);
        }
    }

    /// `hfsc_change_rsc`
    fn change_rsc(&mut self, sc: &ServiceCurve, now: u64) {
        let isc = Isc::new(sc);
        self.deadline = Rtsc::new(&isc, now, self.cumul);
        self.eligible = self.deadline;
        if isc.convex() {
            self.eligible.dx = 0;
            self.eligible.dy = 0;
        }
        self.rsc = Some(isc);
    }

    /// `hfsc_change_fsc`
    fn change_fsc(&mut self, sc: &ServiceCurve) {
        let isc = Isc::new(sc);
        self.virt = Rtsc::new(&isc, self.vt, self.total);
        self.fsc = Some(isc);
    }

    /// `hfsc_change_usc`
    fn change_usc(&mut self, sc: &ServiceCurve, now: u64) {
        let isc = Isc::new(sc);
        self.ulimit = Rtsc::new(&isc, now, self.total);
        self.usc = Some(isc);
    }
}

/// A curve with two zero slopes is no curve (`hfsc_change_class`).
fn curve(sc: &Option<ServiceCurve>) -> Option<ServiceCurve> {
    sc.filter(|c| c.m1 != 0 || c.m2 != 0)
}

impl Classid for HfscClass {
    fn classid(&self) -> u16 {
        self.classid
    }
}

/// The hfsc qdisc.
#[derive(Debug)]
pub struct Hfsc {
    /// the qdisc's options and filters (its classes are the table's)
    spec: HfscSpec,
    /// the root class (the qdisc's handle, classid 0) first
    classes: ClassTable<HfscClass>,
    seq: u64,
    stats: QdiscStats,
    seed: u64,
}

fn einval() -> TcError {
    TcError::Invalid(String::new())
}

impl Hfsc {
    /// `hfsc_init_qdisc` (the root class, with a default pfifo that the
    /// first class replaces, empty), then the classes of `spec` as `tc
    /// class add` makes them and the leaves grafted on them (the command
    /// layer sends none).
    pub fn new(spec: &HfscSpec, env: &BuildEnv) -> Result<Hfsc, TcError> {
        let now = env.now.as_nanos() as i64;
        let mut root = HfscClass::new(0, None, None);
        root.leaf = classful::build_leaf(None, spec.leaf_limit, env.seed, now, "hfsc-leaf")?;
        let mut h = Hfsc {
            spec: HfscSpec {
                classes: Vec::new(),
                ..spec.clone()
            },
            classes: ClassTable::default(),
            seq: 0,
            stats: QdiscStats::default(),
            seed: env.seed,
        };
        h.classes.push(root);
        for c in &spec.classes {
            h.add_class(c, now)?;
        }
        let leaves = spec.classes.iter().map(|c| (c.classid, c.leaf.as_ref()));
        classful::graft_all(&mut h, leaves, now)?;
        Ok(h)
    }

    fn ticks(ns: i64) -> u64 {
        (ns.max(0) as u64) >> PSCHED_SHIFT
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Position of class `minor` other than the root.
    fn class(&self, minor: u16) -> Option<usize> {
        self.classes.find(minor).filter(|&i| i != 0)
    }

    /// `hfsc_change_class` for a new class (the kernel gives no extack:
    /// bare EINVAL, EEXIST, ENOENT): a leaf with a default pfifo; a parent
    /// that was a leaf loses its queue (what `c` grafts on it comes by
    /// `regraft`). The purged chains.
    fn add_class(&mut self, c: &HfscClassSpec, now_ns: i64) -> Result<Vec<Vec<Node>>, TcError> {
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
    fn qlen_notify(&mut self, i: usize) {
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

    /// `qdisc_peek_len` of a backlogged class, as last seen.
    fn head_len(&self, i: usize) -> u32 {
        self.classes[i].head_len
    }

    // ------------------------------------------------------------ trees

    /// `eltree_get_mindl`: among the classes eligible at `now`, the one with
    /// the smallest deadline.
    fn get_mindl(&self, now: u64) -> Option<usize> {
        let mut el: Vec<(u64, u64, usize)> = self
            .classes
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.el.map(|s| (c.e, s, i)))
            .collect();
        el.sort_unstable();
        let mut best: Option<usize> = None;
        for (e, _, i) in el {
            if e > now {
                break;
            }
            if best.is_none_or(|b| self.classes[i].d < self.classes[b].d) {
                best = Some(i);
            }
        }
        best
    }

    /// `eltree_get_minel`
    fn get_minel(&self) -> Option<usize> {
        self.classes
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.el.map(|s| (c.e, s, i)))
            .min()
            .map(|(_, _, i)| i)
    }

    /// The children of `p` in its vt tree, by (vt, insertion order).
    fn vt_children(&self, p: usize) -> Vec<usize> {
        let mut v: Vec<(u64, u64, usize)> = self
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.parent == Some(p))
            .filter_map(|(i, c)| c.vtn.map(|s| (c.vt, s, i)))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, i)| i).collect()
    }

    /// `update_cfmin`: the smallest fit time among `p`'s active children.
    fn update_cfmin(&mut self, p: usize) {
        let m = self
            .classes
            .iter()
            .filter(|c| c.parent == Some(p))
            .filter_map(|c| c.cfn.map(|s| (c.f, s)))
            .min();
        self.classes[p].cfmin = m.map_or(0, |(f, _)| f);
    }

    /// `vttree_get_minvt`: descend from the root by smallest vt among the
    /// children that fit at `now`.
    fn get_minvt(&mut self, now: u64) -> Option<usize> {
        if self.classes[0].cfmin > now {
            return None;
        }
        let mut cl = 0;
        while self.classes[cl].level > 0 {
            let next = self
                .vt_children(cl)
                .into_iter()
                .find(|&c| self.classes[c].f <= now)?;
            let vt = self.classes[next].vt;
            let p = &mut self.classes[cl];
            if p.cvtmin < vt {
                p.cvtmin = vt;
            }
            cl = next;
        }
        Some(cl)
    }

    // ------------------------------------------------------------ real time

    /// `init_ed`
    fn init_ed(&mut self, i: usize, next_len: u32, now: u64) {
        let cl = &mut self.classes[i];
        let rsc = cl.rsc.expect("a real-time class");
        cl.deadline.min_with(&rsc, now, cl.cumul);
        cl.eligible = cl.deadline;
        if rsc.convex() {
            cl.eligible.dx = 0;
            cl.eligible.dy = 0;
        }
        cl.e = cl.eligible.y2x(cl.cumul);
        cl.d = cl.deadline.y2x(cl.cumul + next_len as u64);
        let s = self.next_seq();
        self.classes[i].el = Some(s);
    }

    /// `update_ed`
    fn update_ed(&mut self, i: usize, next_len: u32) {
        let cl = &mut self.classes[i];
        cl.e = cl.eligible.y2x(cl.cumul);
        cl.d = cl.deadline.y2x(cl.cumul + next_len as u64);
        let s = self.next_seq();
        self.classes[i].el = Some(s);
    }

    /// `update_d`
    fn update_d(&mut self, i: usize, next_len: u32) {
        let cl = &mut self.classes[i];
        cl.d = cl.deadline.y2x(cl.cumul + next_len as u64);
    }

    // ------------------------------------------------------------ link sharing

    /// `init_vf`: class `i` becomes backlogged; activate it and every
    /// ancestor that was idle.
    fn init_vf(&mut self, i: usize, now: u64) {
        let mut go_active = true;
        let mut cl = i;
        while let Some(p) = self.classes[cl].parent {
            if go_active {
                let c = &mut self.classes[cl];
                go_active = c.nactive == 0;
                c.nactive += 1;
            }
            if go_active {
                let max_vt = self.vt_children(p).last().map(|&m| self.classes[m].vt);
                match max_vt {
                    Some(max) => {
                        let pc = &self.classes[p];
                        let mut vt = max;
                        if pc.cvtmin != 0 {
                            vt = (pc.cvtmin + vt) / 2;
                        }
                        let (pperiod, _) = (pc.vtperiod, ());
                        let c = &mut self.classes[cl];
                        if pperiod != c.parentperiod || vt > c.vt {
                            c.vt = vt;
                        }
                    }
                    None => {
                        let off = self.classes[p].cvtoff;
                        self.classes[cl].vt = off;
                        self.classes[p].cvtmin = 0;
                    }
                }
                let (pperiod, pnactive) = (self.classes[p].vtperiod, self.classes[p].nactive);
                let c = &mut self.classes[cl];
                if let Some(fsc) = c.fsc {
                    c.virt.min_with(&fsc, c.vt, c.total);
                }
                c.vtadj = 0;
                c.vtperiod += 1;
                c.parentperiod = pperiod;
                if pnactive == 0 {
                    c.parentperiod += 1;
                }
                c.f = 0;
                let s1 = self.next_seq();
                let s2 = self.next_seq();
                let c = &mut self.classes[cl];
                c.vtn = Some(s1);
                c.cfn = Some(s2);
                if let Some(usc) = c.usc {
                    c.ulimit.min_with(&usc, now, c.total);
                    c.myf = c.ulimit.y2x(c.total);
                }
            }
            let c = &self.classes[cl];
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                self.classes[cl].f = f;
                let s = self.next_seq();
                self.classes[cl].cfn = Some(s);
            }
            self.update_cfmin(p);
            cl = p;
        }
    }

    /// `update_vf`: `len` bytes left class `i`; advance `total` and the
    /// virtual times on the path, deactivating what became idle.
    fn update_vf(&mut self, i: usize, len: u32) {
        let mut go_passive = self.classes[i].qlen() == 0 && self.classes[i].fsc.is_some();
        let mut cl = i;
        while let Some(p) = self.classes[cl].parent {
            self.classes[cl].total += len as u64;
            if self.classes[cl].fsc.is_none() || self.classes[cl].nactive == 0 {
                cl = p;
                continue;
            }
            if go_passive {
                let c = &mut self.classes[cl];
                c.nactive -= 1;
                go_passive = c.nactive == 0;
            }
            let pcvtmin = self.classes[p].cvtmin;
            let c = &mut self.classes[cl];
            c.vt = c.virt.y2x(c.total).wrapping_add(c.vtadj);
            if c.vt < pcvtmin {
                c.vtadj += pcvtmin - c.vt;
                c.vt = pcvtmin;
            }
            if go_passive {
                let vt = c.vt;
                c.vtn = None;
                c.cfn = None;
                if vt > self.classes[p].cvtoff {
                    self.classes[p].cvtoff = vt;
                }
                self.update_cfmin(p);
                cl = p;
                continue;
            }
            let s = self.next_seq();
            let c = &mut self.classes[cl];
            c.vtn = Some(s);
            if c.usc.is_some() {
                c.myf = c.ulimit.y2x(c.total);
            }
            let f = c.myf.max(c.cfmin);
            if f != c.f {
                c.f = f;
                let s = self.next_seq();
                self.classes[cl].cfn = Some(s);
                self.update_cfmin(p);
            }
            cl = p;
        }
    }

    /// `hfsc_classify`
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> Option<usize> {
        let leaf = |minor: u16| {
            self.classes
                .find(minor)
                .filter(|&i| self.classes[i].level == 0)
        };
        let hit = classful::u32_classify(&self.spec.filters, ctx.arena.get(id))
            .filter(|&m| m != 0)
            .and_then(leaf);
        hit.or_else(|| leaf(self.spec.default))
    }

    /// `hfsc_schedule_watchdog`
    fn schedule_watchdog(&self, ctx: &mut QdiscCtx) {
        let mut next = self.get_minel().map_or(0, |i| self.classes[i].e);
        let cfmin = self.classes[0].cfmin;
        if cfmin != 0 && (next == 0 || next > cfmin) {
            next = cfmin;
        }
        if next == 0 {
            return;
        }
        let now = ctx.now.as_nanos();
        let at = next.saturating_mul(1 << PSCHED_SHIFT).max(now + 1);
        ctx.arm_watchdog(SimTime::from_nanos(at));
    }

    /// After drops inside a leaf: an emptied class leaves the schedule.
    fn after_loss(&mut self, i: usize, lost: Reduce) {
        self.classes[i].stats.absorb(lost);
        self.stats.absorb(lost);
        if lost.qlen > 0
            && self.classes[i].qlen() == 0
            && (self.classes[i].nactive > 0 || self.classes[i].el.is_some())
        {
            self.qlen_notify(i);
        }
    }

    pub fn classes(&self) -> &[HfscClass] {
        &self.classes
    }

    fn peek_len(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, i: usize) -> u32 {
        let before = *reduce;
        let h = tree::peek_chain(&mut self.classes[i].leaf, ctx, reduce);
        let lost = reduce.since(before);
        self.after_loss(i, lost);
        let len = h.map_or(0, |h| ctx.arena.len_of(h));
        self.classes[i].head_len = len;
        len
    }
}

impl Qdisc for Hfsc {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Hfsc(s) = spec else {
            return None;
        };
        Some(Hfsc::new(s, env).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "hfsc"
    }

    /// `hfsc_enqueue`
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
        let first = self.classes[i].qlen() == 0;
        let cl = &mut self.classes[i];
        let v = classful::absorbing_class(&mut cl.stats, &mut self.stats, reduce, |reduce| {
            tree::enqueue_chain(&mut cl.leaf, ctx, reduce, id)
        });
        match v {
            Verdict::Queued => {
                self.stats.queued(len);
                if first && self.classes[i].qlen() > 0 {
                    self.classes[i].head_len = len;
                    let now = Self::ticks(ctx.now.as_nanos() as i64);
                    if self.classes[i].rsc.is_some() {
                        self.init_ed(i, len, now);
                    }
                    if self.classes[i].fsc.is_some() {
                        self.init_vf(i, now);
                    }
                    if self.classes[i].rsc.is_some() {
                        // isolate the head (the kernel's peek after the first packet)
                        self.peek_len(ctx, reduce, i);
                    }
                }
            }
            Verdict::Dropped(_) => {
                self.classes[i].stats.dropped();
                self.stats.dropped();
            }
        }
        v
    }

    /// `hfsc_dequeue`
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        if self.stats.qlen == 0 {
            return None;
        }
        let now = Self::ticks(ctx.now.as_nanos() as i64);
        let (i, realtime) = match self.get_mindl(now) {
            Some(i) => (i, true),
            None => match self.get_minvt(now) {
                Some(i) => (i, false),
                None => {
                    self.stats.overlimits += 1;
                    self.schedule_watchdog(ctx);
                    return None;
                }
            },
        };
        let before = *reduce;
        let got = tree::dequeue_chain(&mut self.classes[i].leaf, ctx, reduce);
        let lost = reduce.since(before);
        self.after_loss(i, lost);
        let id = got?;
        let len = ctx.arena.len_of(id);
        let segs = ctx.arena.segs_of(id);
        self.classes[i].stats.sent(len, segs);
        self.update_vf(i, len);
        if realtime {
            self.classes[i].cumul += len as u64;
        }
        if self.classes[i].rsc.is_some() {
            if self.classes[i].qlen() != 0 {
                let next_len = self.peek_len(ctx, reduce, i);
                if self.classes[i].qlen() != 0 {
                    if realtime {
                        self.update_ed(i, next_len);
                    } else {
                        self.update_d(i, next_len);
                    }
                }
            } else {
                self.classes[i].el = None;
            }
        }
        self.stats.unqueued(len);
        self.stats.sent(len, segs);
        Some(id)
    }

    /// `hfsc_reset_qdisc` / `hfsc_reset_class`
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for c in self.classes.iter_mut() {
            purged.add(tree::reset_chain(&mut c.leaf, ctx));
            c.total = 0;
            c.cumul = 0;
            c.d = 0;
            c.e = 0;
            c.vt = 0;
            c.vtadj = 0;
            c.cvtmin = 0;
            c.cvtoff = 0;
            c.vtperiod = 0;
            c.parentperiod = 0;
            c.f = 0;
            c.myf = 0;
            c.cfmin = 0;
            c.nactive = 0;
            c.el = None;
            c.vtn = None;
            c.cfn = None;
            if let Some(r) = c.rsc {
                c.deadline = Rtsc::new(&r, 0, 0);
            }
            if let Some(f) = c.fsc {
                c.virt = Rtsc::new(&f, 0, 0);
            }
            if let Some(u) = c.usc {
                c.ulimit = Rtsc::new(&u, 0, 0);
            }
        }
        purged
    }

    /// `hfsc_change_qdisc`: the default class (and the limit of the
    /// default leaves); the classes, leaves and filters stay.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        _ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Hfsc(spec) = spec else {
            return Err(wrong_kind());
        };
        self.spec.default = spec.default;
        self.spec.leaf_limit = spec.leaf_limit;
        Ok(Changed::IN_PLACE)
    }

    /// The document: every class but the root in the order made, and the
    /// filters.
    fn options(&self) -> serde_json::Value {
        let spec = HfscSpec {
            classes: (self.classes.iter().skip(1))
                .filter_map(|c| c.spec.clone())
                .collect(),
            ..self.spec.clone()
        };
        serde_json::to_value(&spec).expect("spec serialises")
    }

    /// Per-class state for `tc -s class show` (`hfsc_dump_class`: the
    /// curves as dumped back; `hfsc_dump_class_stats`: level, period,
    /// work, rtwork). The root class (the qdisc's handle) comes first.
    fn xstats(&self) -> serde_json::Value {
        let classes: Vec<_> = self
            .classes
            .iter()
            .map(|c| {
                let (qlen, backlog) = classful::leaf_backlog(&c.leaf);
                json!({
                    "classid": c.classid,
                    "root": c.parent.is_none(),
                    "parent": c.parent.map_or(0, |p| self.classes[p].classid),
                    "level": c.level,
                    "period": c.vtperiod,
                    "work": c.total,
                    "rtwork": c.cumul,
                    "rsc": c.rsc.map(|s| s.dump()),
                    "fsc": c.fsc.map(|s| s.dump()),
                    "usc": c.usc.map(|s| s.dump()),
                    "bytes": c.stats.bytes,
                    "packets": c.stats.packets,
                    "drops": c.stats.drops,
                    "overlimits": 0,
                    "qlen": qlen,
                    "backlog": backlog,
                    "leaf": if c.level == 0 { classful::leaf_json(&c.leaf) } else { Vec::new() },
                })
            })
            .collect();
        json!({ "classes": classes })
    }

    classful::class_owner_methods!(self => self.classes.iter().map(|c| &c.leaf));
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
        Ok(super::ops::purge_removed(removed, &mut self.stats, ctx).into())
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

#[cfg(test)]
#[path = "hfsc_tests.rs"]
mod tests;
