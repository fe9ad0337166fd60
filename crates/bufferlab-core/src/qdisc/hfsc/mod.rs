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
//! through [`ClassOps`] (class_api/): a new class is a leaf with a default
//! pfifo, and its parent, if it was a leaf, loses its queue; the levels are
//! adjusted from the parent up (`hfsc_adjust_levels`).
//!
//! Files: this one holds the qdisc and its enqueue/dequeue; curve.rs the
//! service-curve arithmetic, sched.rs the real-time and link-sharing
//! schedulers, class.rs the class verbs.

mod class;
mod curve;
mod sched;

pub use curve::{
    d2dx, dx2d, m2ism, m2sm, seg_x2y, seg_y2x, sm2m, Isc, Rtsc, INFINITY, ISM_SHIFT, PSCHED_SHIFT,
    SM_SHIFT, TICKS_PER_SEC,
};

use super::classful::{self, ClassTable, Classid};
use super::ops::{wrong_kind, BuildEnv, Built, Changed, Purged, Qdisc, Reduce};
use super::spec::{HfscClassSpec, HfscSpec, QdiscSpec, ServiceCurve};
use super::tree::{self, Node};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::time::SimTime;
use serde_json::json;

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

#[cfg(test)]
mod tests;
