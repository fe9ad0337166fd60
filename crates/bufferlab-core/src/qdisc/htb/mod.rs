//! Size: sch_htb.c in one file, as Linux keeps it: the class table, each class's two
//! token buckets and the per-level, per-priority feeds are one state that enqueue,
//! dequeue and the class verbs all walk.
//!
//! `htb` — hierarchical token bucket (Linux net/sched/sch_htb.c; the
//! command side follows iproute2 tc/q_htb.c). See docs/models.md, HTB.
//!
//! The qdisc owns its class table: every class has a rate bucket
//! (`tokens`, depth `buffer`) and a ceil bucket (`ctokens`, depth
//! `cbuffer`), both in nanoseconds of transmission time as in the kernel,
//! refilled by the time since the class last sent (`t_c`, capped at
//! `mbuffer` = 60 s). A class is CAN_SEND when both buckets are
//! non-negative, MAY_BORROW when only the ceil bucket is, CANT_SEND
//! otherwise (`htb_class_mode`, hysteresis off as in current kernels).
//!
//! A leaf (level 0) with packets sends at the level of the first class on
//! its path to the root that is CAN_SEND, every class below it being
//! MAY_BORROW (the kernel's feeds and rows). Dequeue serves the lowest
//! level first, then the lowest `prio`, and among the leaves of one
//! (level, prio) runs deficit round robin by `quantum`; the sent bytes are
//! charged to the whole path (`htb_charge_class`): the lender and the
//! classes above it pay both buckets (`lended` counts at the lender), the
//! classes below it only their ceil bucket (`borrowed`). Inner classes take
//! the kernel's levels (a class under the qdisc is level 7, its inner
//! children 6, …); leaves are level 0.
//!
//! Modes are evaluated when a dequeue needs them instead of through the
//! kernel's event queue: with hysteresis off a mode is a function of the
//! buckets and the clock, so the decisions are the same. What the stored
//! modes remember is the kernel's (they decide `overlimits`): a dequeue runs
//! the events of the levels up to the one that sends, an empty tree none, and
//! a blocked tree's watchdog is armed for the next mode change of any class.
//!
//! Classes are made, changed and deleted one `tc class` line at a time
//! (`htb_change_class`, `htb_delete`) and leaves grafted one `tc qdisc … parent
//! M:N` at a time (`htb_graft`), through [`ClassOps`] (class_api/ routes the
//! requests): a new class is a leaf with a default pfifo; its parent, if it was
//! a leaf, becomes an inner class and its queue is purged; deleting a parent's
//! last child makes it a leaf again, with what was grafted on it or a default
//! pfifo. Each costs the same whatever the number of classes (a classid finds
//! its class through the table's index, classful.rs `ClassTable`).
//!
//! Classification: the u32 filters attached at the qdisc in `prio` order,
//! then the `default` class; a target that is not a leaf, or no default,
//! sends the packet to the direct queue (`direct_qlen` packets, served
//! before any class, counted in `direct_packets_stat`). Not modelled:
//! filters attached to inner classes, `skb->priority` classification,
//! hysteresis, offload.

use super::classful::{self, shifted, ClassTable, Classid};
use super::ops::{
    class_not_found, wrong_kind, BuildEnv, Built, Changed, ChildChange, ClassChanged, ClassOps,
    Purged, Qdisc, Reduce,
};
#[cfg(test)]
use super::spec::U32Field;
use super::spec::{
    ClassRequest, ClassSpec, ClassVerb, HtbClassOpts, HtbClassSpec, HtbLeaf, HtbSpec, QdiscSpec,
};
use super::tbf::RateCfg;
use super::tree::{self, Node};
use super::{classify, AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::time::SimTime;
use serde_json::json;
use std::collections::{BTreeSet, VecDeque};

/// `TC_HTB_MAXDEPTH`: levels 0..7, a class under the qdisc is level 7.
pub const MAX_DEPTH: usize = 8;
/// `TC_HTB_NUMPRIO`: prio 0..7 (higher values are clamped to 7).
pub const NUM_PRIO: usize = 8;
/// Largest refill the kernel credits at once (`mbuffer`, 60 s).
const MBUFFER_NS: i64 = 60_000_000_000;
/// Quantum bounds of `htb_change_class` (it warns and clamps).
const MIN_QUANTUM: u32 = 1000;
const MAX_QUANTUM: u32 = 200_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    CantSend,
    MayBorrow,
    CanSend,
}

/// One class of the hierarchy.
#[derive(Debug)]
pub struct HtbClass {
    pub spec: HtbClassSpec,
    rate: RateCfg,
    ceil: RateCfg,
    /// index of the parent class in the table
    parent: Option<usize>,
    /// 0 for a leaf, the kernel's level for an inner class
    pub level: usize,
    pub quantum: u32,
    pub prio: usize,
    pub tokens: i64,
    pub ctokens: i64,
    t_c: i64,
    mode: Mode,
    deficit: [i64; MAX_DEPTH],
    /// the leaf qdisc chain (empty for an inner class)
    leaf: Vec<Node>,
    pub stats: QdiscStats,
    pub lends: u64,
    pub borrows: u64,
    /// child classes: with any, the class is an inner class
    children: usize,
    /// the clamp of its quantum ("small" | "big"), which `tc` relays as the
    /// kernel's warning
    warning: Option<&'static str>,
}

impl Classid for HtbClass {
    fn classid(&self) -> u16 {
        self.spec.classid
    }
}

impl HtbClass {
    fn backlog(&self) -> (u64, u64) {
        classful::leaf_backlog(&self.leaf)
    }

    /// `htb_class_mode` for a refill of `diff` ns.
    fn mode_after(&self, diff: i64) -> Mode {
        if self.ctokens + diff < 0 {
            Mode::CantSend
        } else if self.tokens + diff >= 0 {
            Mode::CanSend
        } else {
            Mode::MayBorrow
        }
    }

    fn diff(&self, now: i64) -> i64 {
        (now - self.t_c).min(MBUFFER_NS)
    }

    /// Take the class's options (rates, buckets, prio, quantum) from its
    /// spec, with `r2q` for a quantum not given.
    fn configure(&mut self, r2q: u32) {
        let c = &self.spec;
        self.rate = RateCfg::new(c.rate, 0, 0, false);
        self.ceil = RateCfg::new(c.ceil, 0, 0, false);
        (self.quantum, self.warning) = Htb::quantum(r2q, c);
        self.prio = (c.prio as usize).min(NUM_PRIO - 1);
    }
}

/// The htb qdisc.
#[derive(Debug)]
pub struct Htb {
    /// the qdisc's options and filters (its classes are the table's)
    spec: HtbSpec,
    classes: ClassTable<HtbClass>,
    direct: VecDeque<PacketId>,
    direct_pkts: u64,
    /// DRR position per (level, prio): the classid served last
    ptr: [[Option<u16>; NUM_PRIO]; MAX_DEPTH],
    stats: QdiscStats,
    seed: u64,
    /// Leaves that may hold packets (indices): every leaf with a backlog is
    /// here (it enters when a packet is classified to it) and an emptied one
    /// leaves at the next dequeue. Dequeue looks at these only, as the
    /// kernel's per-level active rb-trees let `htb_dequeue` do: a packet costs
    /// O(active classes), not O(classes).
    backlogged: BTreeSet<usize>,
    /// Classes not in CAN_SEND (indices), the kernel's wait queue: between two
    /// charges a class's tokens only grow, so the clock can change the mode of
    /// these alone (`htb_do_events`).
    waiting: BTreeSet<usize>,
}

impl Htb {
    /// `htb_init`, then the classes of `spec` as `tc class add` makes them,
    /// in order, and the leaves grafted on them (the command layer sends
    /// none: its classes come one `tc class` line at a time).
    pub fn new(spec: &HtbSpec, env: &BuildEnv) -> Result<Htb, TcError> {
        if spec.r2q == 0 {
            return Err(TcError::Invalid("htb: r2q must be greater than 0".into()));
        }
        let mut h = Htb {
            spec: HtbSpec {
                classes: Vec::new(),
                ..spec.clone()
            },
            classes: ClassTable::default(),
            direct: VecDeque::new(),
            direct_pkts: 0,
            ptr: [[None; NUM_PRIO]; MAX_DEPTH],
            stats: QdiscStats::default(),
            seed: env.seed,
            backlogged: BTreeSet::new(),
            waiting: BTreeSet::new(),
        };
        let now = env.now.as_nanos() as i64;
        for c in &spec.classes {
            h.add_class(c, now)?;
        }
        let leaves = spec.classes.iter().map(|c| (c.classid, c.leaf.as_ref()));
        classful::graft_all(&mut h, leaves, now)?;
        Ok(h)
    }

    /// `htb_change_class`'s quantum: `rate / r2q` unless given, clamped to
    /// 1000..200000 with the kernel's warning.
    fn quantum(r2q: u32, c: &HtbClassSpec) -> (u32, Option<&'static str>) {
        if c.quantum != 0 {
            return (c.quantum, None);
        }
        let q = (c.rate / r2q as u64).min(u32::MAX as u64) as u32;
        if q < MIN_QUANTUM {
            (MIN_QUANTUM, Some("small"))
        } else if q > MAX_QUANTUM {
            (MAX_QUANTUM, Some("big"))
        } else {
            (q, None)
        }
    }

    /// `htb_change_class` for a new class (a leaf with a default pfifo: what
    /// `spec` grafts on it comes by `regraft`); a parent that was a leaf
    /// becomes an inner class and its queue is purged.
    fn add_class(&mut self, spec: &HtbClassSpec, now: i64) -> Result<Vec<Node>, TcError> {
        if spec.classid == 0 {
            return Err(TcError::Invalid("htb: classid minor must not be 0".into()));
        }
        if self.classes.find(spec.classid).is_some() {
            return Err(TcError::Exists);
        }
        if spec.rate == 0 {
            return Err(TcError::Invalid("htb: rate must be greater than 0".into()));
        }
        let parent = match spec.parent {
            0 => None,
            p => Some(self.classes.find(p).ok_or_else(|| {
                TcError::Invalid(format!(
                    "htb: parent class {:x} of class {:x} does not exist",
                    p, spec.classid
                ))
            })?),
        };
        let mut depth = 1;
        let mut up = parent;
        while let Some(p) = up {
            depth += 1;
            up = self.classes[p].parent;
        }
        if depth >= MAX_DEPTH {
            return Err(TcError::Invalid("htb: tree is too deep".into()));
        }
        let leaf = classful::build_leaf(None, self.spec.leaf_limit, self.seed, now, "htb-leaf")?;
        let mut purged = Vec::new();
        if let Some(p) = parent {
            let level = match self.classes[p].parent {
                Some(g) => self.classes[g].level - 1,
                None => MAX_DEPTH - 1,
            };
            let pc = &mut self.classes[p];
            if pc.children == 0 {
                purged = std::mem::take(&mut pc.leaf);
                pc.stats.qlen = 0;
                pc.stats.backlog = 0;
                pc.level = level;
            }
            pc.children += 1;
        }
        let mut cl = HtbClass {
            rate: RateCfg::new(spec.rate, 0, 0, false),
            ceil: RateCfg::new(spec.ceil, 0, 0, false),
            parent,
            level: 0,
            quantum: 0,
            prio: 0,
            tokens: spec.buffer as i64,
            ctokens: spec.cbuffer as i64,
            t_c: now,
            mode: Mode::CanSend,
            deficit: [0; MAX_DEPTH],
            leaf,
            stats: QdiscStats::default(),
            lends: 0,
            borrows: 0,
            children: 0,
            warning: None,
            spec: HtbClassSpec {
                leaf: None,
                ..spec.clone()
            },
        };
        cl.configure(self.spec.r2q);
        self.classes.push(cl);
        Ok(purged)
    }

    /// `htb_delete` of class `i` (it has no children): its queue is purged;
    /// a parent left without children becomes a leaf again, with what was
    /// grafted on it or a default pfifo (built first: on error nothing
    /// changed).
    fn delete_class(&mut self, i: usize, now: i64) -> Result<Vec<Node>, TcError> {
        if self.classes[i].children > 0 {
            return Err(TcError::Extack("Class has children".into()));
        }
        let parent = self.classes[i].parent;
        let regrown = match parent {
            Some(p) if self.classes[p].children == 1 => {
                let grafted = self.classes[p].spec.leaf.as_ref();
                Some(classful::build_leaf(
                    grafted,
                    self.spec.leaf_limit,
                    self.seed,
                    now,
                    "htb-leaf",
                )?)
            }
            _ => None,
        };
        let gone = self.classes.remove(i);
        for c in self.classes.iter_mut() {
            c.parent = c.parent.map(|p| shifted(p, i));
        }
        for set in [&mut self.backlogged, &mut self.waiting] {
            *set = set
                .iter()
                .filter(|&&k| k != i)
                .map(|&k| shifted(k, i))
                .collect();
        }
        if let Some(p) = parent.map(|p| shifted(p, i)) {
            let pc = &mut self.classes[p];
            pc.children -= 1;
            if let Some(leaf) = regrown {
                pc.leaf = leaf;
                pc.level = 0;
            }
        }
        Ok(gone.leaf)
    }

    /// The kernel's warning for class `minor` whose quantum was clamped.
    fn warning_text(&self, major: u16, minor: u16) -> Option<String> {
        let what = self.classes[self.classes.find(minor)?].warning?;
        Some(format!(
            "Warning: sch_htb: quantum of class {:X} is {what}. Consider r2q change.",
            (major as u32) << 16 | minor as u32
        ))
    }

    /// The class a packet goes to (index), or `None` for the direct queue.
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> Option<usize> {
        let p = ctx.arena.get(id);
        let leaf_of = |minor: u16| {
            self.classes
                .find(minor)
                .filter(|&i| self.classes[i].level == 0)
        };
        classify::u32_flowid(&self.spec.filters, p)
            .and_then(leaf_of)
            .or_else(|| leaf_of(self.spec.default))
    }

    /// The level at which leaf `i` may send now: its own if CAN_SEND, else
    /// that of the first CAN_SEND ancestor above a run of MAY_BORROW ones.
    fn send_level(&self, i: usize, now: i64) -> Option<usize> {
        let mut c = i;
        loop {
            let cl = &self.classes[c];
            match cl.mode_after(cl.diff(now)) {
                Mode::CanSend => return Some(cl.level),
                Mode::CantSend => return None,
                Mode::MayBorrow => c = cl.parent?,
            }
        }
    }

    /// When waiting class `i`'s mode next changes (the kernel's `pq_key`,
    /// `htb_class_mode`'s `diff`): CANT_SEND leaves when `ctokens` are back
    /// to zero, MAY_BORROW when `tokens` are.
    fn next_change(&self, i: usize) -> i64 {
        let cl = &self.classes[i];
        let short = match cl.mode {
            Mode::CantSend => cl.ctokens,
            Mode::MayBorrow | Mode::CanSend => cl.tokens,
        };
        cl.t_c - short.min(0)
    }

    /// Pick the leaf to serve: lowest level, then lowest prio, then round
    /// robin from the DRR position of that (level, prio).
    fn pick(&self, now: i64) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize, u16, usize)> = None;
        for &i in &self.backlogged {
            let c = &self.classes[i];
            // a drop on dequeue (a leaf AQM) may have emptied it since the pruning
            if c.level != 0 || c.backlog().0 == 0 {
                continue;
            }
            let Some(level) = self.send_level(i, now) else {
                continue;
            };
            let ptr = self.ptr[level][c.prio].unwrap_or(0);
            // Round robin: classids at or after the position come first.
            let order = c.spec.classid.wrapping_sub(ptr);
            let key = (level, c.prio, order);
            if best.is_none_or(|(l, p, o, _)| key < (l, p, o)) {
                best = Some((level, c.prio, order, i));
            }
        }
        best.map(|(level, _, _, i)| (i, level))
    }

    /// Move the DRR position of (level, prio) past class `i`.
    fn advance(&mut self, i: usize, level: usize) {
        let c = &self.classes[i];
        self.ptr[level][c.prio] = Some(c.spec.classid.wrapping_add(1));
    }

    /// `htb_do_events` for levels 0..=`up_to`: the modes of the classes there
    /// catch up with the clock. `htb_dequeue` runs a level's due events just
    /// before it looks for a packet at that level, so the classes above the
    /// level that sends keep their last mode (`overlimits` counts changes into
    /// CANT_SEND from the mode the kernel holds, docs/semantics/qdiscs.md, HTB).
    fn run_events(&mut self, up_to: usize, now: i64) {
        let classes = &mut self.classes;
        self.waiting.retain(|&i| {
            let cl = &mut classes[i];
            if cl.level <= up_to {
                cl.mode = cl.mode_after(cl.diff(now));
            }
            cl.mode != Mode::CanSend
        });
    }

    /// `htb_charge_class`: charge `len` bytes to the path of leaf `i` that
    /// sent at `level`.
    fn charge(&mut self, i: usize, level: usize, len: u32, segs: u32, now: i64) {
        let mut c = Some(i);
        while let Some(k) = c {
            let cl = &mut self.classes[k];
            let diff = cl.diff(now);
            if cl.level >= level {
                if cl.level == level {
                    cl.lends += 1;
                }
                cl.tokens = account(cl.tokens, diff, cl.spec.buffer as i64, &cl.rate, len);
            } else {
                cl.borrows += 1;
                cl.tokens += diff;
            }
            cl.ctokens = account(cl.ctokens, diff, cl.spec.cbuffer as i64, &cl.ceil, len);
            cl.t_c = now;
            let mode = cl.mode_after(0);
            if mode == Mode::CantSend && cl.mode != Mode::CantSend {
                cl.stats.overlimits += 1;
                self.stats.overlimits += 1;
            }
            cl.mode = mode;
            if mode == Mode::CanSend {
                self.waiting.remove(&k);
            } else {
                self.waiting.insert(k);
            }
            cl.stats.sent(len, segs);
            c = cl.parent;
        }
    }

    pub fn classes(&self) -> &[HtbClass] {
        &self.classes
    }

    pub fn direct_packets(&self) -> u64 {
        self.direct_pkts
    }

    /// Quantum clamps of the classes (classid minor, "small" | "big").
    pub fn warnings(&self) -> Vec<(u16, &'static str)> {
        self.classes
            .iter()
            .filter_map(|c| Some((c.spec.classid, c.warning?)))
            .collect()
    }
}

/// `tc class` and grafts on htb classes (`htb_class_ops`).
impl ClassOps for Htb {
    /// `htb_change_class` / `htb_delete`, with the answers `tc` prints.
    fn class_verb(
        &mut self,
        req: &ClassRequest,
        ctx: &mut QdiscCtx,
    ) -> Result<ClassChanged, TcError> {
        let now = ctx.now.as_nanos() as i64;
        let opts = classful::class_opts(req, ClassSpec::htb)?;
        let found = self.classes.find(req.minor);
        let removed = match (req.verb, found, opts) {
            (ClassVerb::Delete, Some(i), _) => self.delete_class(i, now)?,
            (ClassVerb::Delete | ClassVerb::Change, None, _) => return Err(class_not_found()),
            (ClassVerb::Add, Some(_), _) => return Err(TcError::Exists),
            (_, None, Some(o)) => {
                let parent = req.parent.ok_or_else(class_not_found)?;
                self.add_class(&HtbClassSpec::new(req.minor, parent, o), now)?
            }
            (_, Some(i), Some(o)) => {
                self.update_class(i, o)?;
                Vec::new()
            }
            (_, _, None) => unreachable!("class_opts gives options to every verb but delete"),
        };
        let purged = super::ops::purge_removed([removed], &mut self.stats, ctx);
        Ok(ClassChanged {
            purged,
            warning: (req.verb != ClassVerb::Delete)
                .then(|| self.warning_text(req.major, req.minor))
                .flatten(),
        })
    }

    fn find(&self, minor: u16) -> Option<usize> {
        self.classes.find(minor)
    }

    fn grafted(&self, i: usize) -> Option<&HtbLeaf> {
        self.classes[i].spec.leaf.as_ref()
    }

    /// `htb_graft`: an inner class only records the leaf (it gets it when
    /// its last child goes).
    fn regraft(
        &mut self,
        i: usize,
        leaf: Option<HtbLeaf>,
        now: i64,
    ) -> Result<Option<Vec<Node>>, TcError> {
        let (seed, limit) = (self.seed, self.spec.leaf_limit);
        let cl = &mut self.classes[i];
        let old = classful::regraft(
            &mut cl.spec.leaf,
            &mut cl.leaf,
            leaf,
            cl.children == 0,
            |l| classful::build_leaf(l, limit, seed, now, "htb-leaf"),
        )?;
        if old.is_some() {
            cl.stats.qlen = 0;
            cl.stats.backlog = 0;
        }
        Ok(old)
    }

    fn leaves(&self) -> Box<dyn Iterator<Item = (u16, &HtbLeaf)> + '_> {
        Box::new(
            (self.classes.iter()).filter_map(|c| Some((c.spec.classid, c.spec.leaf.as_ref()?))),
        )
    }
}

impl Htb {
    /// `htb_change_class` on an existing class: its options, not its place
    /// or leaf; the buckets keep their tokens.
    fn update_class(&mut self, i: usize, o: &HtbClassOpts) -> Result<(), TcError> {
        if o.rate == 0 {
            return Err(TcError::Invalid("htb: rate must be greater than 0".into()));
        }
        let cl = &mut self.classes[i];
        cl.spec.set_opts(o);
        cl.configure(self.spec.r2q);
        Ok(())
    }
}

/// `htb_accnt_tokens`/`htb_accnt_ctokens`: refill by `diff`, cap at the
/// bucket, pay the packet's transmission time, floor at `1 − mbuffer`.
fn account(toks: i64, diff: i64, depth: i64, rate: &RateCfg, len: u32) -> i64 {
    let t = (toks + diff).min(depth) - rate.l2t_ns(len) as i64;
    if t <= -MBUFFER_NS {
        1 - MBUFFER_NS
    } else {
        t
    }
}

impl Qdisc for Htb {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Htb(s) = spec else {
            return None;
        };
        Some(Htb::new(s, env).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "htb"
    }

    /// `htb_enqueue`: classify; the direct queue or the class's leaf.
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        let len = ctx.arena.len_of(id);
        let Some(i) = self.classify(ctx, id) else {
            if (self.direct.len() as u64) < self.spec.direct_qlen as u64 {
                self.direct.push_back(id);
                self.direct_pkts += 1;
                self.stats.queued(len);
                return Verdict::Queued;
            }
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::QueueFull);
            return Verdict::Dropped(DropReason::QueueFull);
        };
        self.backlogged.insert(i);
        let cl = &mut self.classes[i];
        let v = classful::absorbing_class(&mut cl.stats, &mut self.stats, reduce, |reduce| {
            tree::enqueue_chain(&mut cl.leaf, ctx, reduce, id)
        });
        match v {
            Verdict::Queued => {
                cl.stats.queued(len);
                self.stats.queued(len);
            }
            Verdict::Dropped(_) => {
                cl.stats.dropped();
                self.stats.dropped();
            }
        }
        v
    }

    /// `htb_dequeue`: the direct queue first, then the class tree.
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        if let Some(id) = self.direct.pop_front() {
            let len = ctx.arena.len_of(id);
            self.stats.unqueued(len);
            self.stats.sent(len, ctx.arena.segs_of(id));
            return Some(id);
        }
        // an empty tree runs no events: the classes keep their modes until
        // the next packet (`htb_dequeue` returns before `htb_do_events`)
        if self.stats.qlen == 0 {
            return None;
        }
        let now = ctx.now.as_nanos() as i64;
        let classes = &self.classes;
        self.backlogged
            .retain(|&i| classes[i].level == 0 && classes[i].backlog().0 > 0);
        let mut tried = 0;
        while let Some((i, level)) = self.pick(now) {
            self.run_events(level, now);
            let cl = &mut self.classes[i];
            let got = classful::absorbing_class(&mut cl.stats, &mut self.stats, reduce, |reduce| {
                tree::dequeue_chain(&mut cl.leaf, ctx, reduce)
            });
            let Some(id) = got else {
                // A non-work-conserving leaf (netem) holding its packets:
                // try the next leaf; the leaf armed its own watchdog.
                self.advance(i, level);
                tried += 1;
                if tried > self.classes.len() {
                    return None;
                }
                continue;
            };
            let len = ctx.arena.len_of(id);
            let segs = ctx.arena.segs_of(id);
            let cl = &mut self.classes[i];
            cl.stats.unqueued(len);
            cl.deficit[level] -= len as i64;
            if cl.deficit[level] < 0 {
                cl.deficit[level] += cl.quantum as i64;
                self.advance(i, level);
            } else {
                self.ptr[level][self.classes[i].prio] = Some(self.classes[i].spec.classid);
            }
            self.charge(i, level, len, segs, now);
            self.stats.unqueued(len);
            self.stats.sent(len, segs);
            return Some(id);
        }
        // Nothing may send: every level's events ran, and the watchdog wakes
        // the qdisc at the next mode change of any class, at any level
        // (`htb_dequeue`'s `next_event`), even one that lets no leaf send:
        // that wake-up still brings the class's mode up to date, and so
        // decides whether its next charge counts an overlimit.
        self.run_events(MAX_DEPTH - 1, now);
        let next = self.waiting.iter().map(|&i| self.next_change(i)).min();
        if let Some(t) = next.filter(|&t| t > now) {
            ctx.arm_watchdog(SimTime::from_nanos(t as u64));
        }
        None
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for id in self.direct.drain(..) {
            purged.add(Purged {
                packets: 1,
                bytes: ctx.arena.len_of(id) as u64,
            });
            ctx.drop_packet(id, DropReason::Purged);
        }
        let now = ctx.now.as_nanos() as i64;
        for c in self.classes.iter_mut() {
            purged.add(tree::reset_chain(&mut c.leaf, ctx));
            c.stats.qlen = 0;
            c.stats.backlog = 0;
            c.tokens = c.spec.buffer as i64;
            c.ctokens = c.spec.cbuffer as i64;
            c.t_c = now;
            c.mode = Mode::CanSend;
        }
        self.backlogged.clear();
        self.waiting.clear();
        purged
    }

    /// `tc qdisc change … htb`. sch_htb.c has no `change` (Linux answers
    /// EINVAL); bufferlab, whose htb was one document resent whole, takes the
    /// request as a new class table (the one it carries: `tc` sends none) and
    /// purges the classes it had. Kept so that outputs stay as they were.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Htb(spec) = spec else {
            return Err(wrong_kind());
        };
        let env = BuildEnv {
            seed: self.seed,
            stream: "",
            profile: Default::default(),
            now: ctx.now,
            at_root: false,
        };
        let fresh = Htb::new(spec, &env)?;
        self.spec = fresh.spec;
        self.backlogged = fresh.backlogged;
        self.waiting = fresh.waiting;
        let old = std::mem::replace(&mut self.classes, fresh.classes).take_all();
        let purged =
            super::ops::purge_removed(old.into_iter().map(|c| c.leaf), &mut self.stats, ctx);
        Ok(Changed {
            purged,
            child: ChildChange::Keep,
        })
    }

    /// The options, every class (in the order they were made) and the
    /// filters: the document the command layer used to resend.
    fn options(&self) -> serde_json::Value {
        let spec = HtbSpec {
            classes: self.classes.iter().map(|c| c.spec.clone()).collect(),
            ..self.spec.clone()
        };
        serde_json::to_value(&spec).expect("spec serialises")
    }

    /// `direct_packets_stat`, the kernel's warnings and per-class state
    /// (`tc -s class show`; tokens in ticks of 64 ns as the kernel dumps).
    fn xstats(&self) -> serde_json::Value {
        let classes: Vec<_> = self
            .classes
            .iter()
            .map(|c| {
                let (qlen, backlog) = c.backlog();
                let leaf = classful::leaf_json(&c.leaf);
                json!({
                    "classid": c.spec.classid,
                    "parent": c.spec.parent,
                    "level": c.level,
                    "prio": c.prio,
                    "quantum": c.quantum,
                    "rate": c.spec.rate,
                    "ceil": c.spec.ceil,
                    "buffer": c.spec.buffer,
                    "cbuffer": c.spec.cbuffer,
                    "bytes": c.stats.bytes,
                    "packets": c.stats.packets,
                    "drops": c.stats.drops,
                    "overlimits": c.stats.overlimits,
                    "qlen": qlen,
                    "backlog": backlog,
                    "lends": c.lends,
                    "borrows": c.borrows,
                    "giants": 0,
                    "tokens": clamp_ticks(c.tokens),
                    "ctokens": clamp_ticks(c.ctokens),
                    "leaf": leaf,
                })
            })
            .collect();
        json!({
            "direct_packets_stat": self.direct_pkts,
            "warnings": self
                .warnings()
                .iter()
                .map(|(classid, what)| json!({"classid": classid, "what": what}))
                .collect::<Vec<_>>(),
            "classes": classes,
        })
    }

    // the direct queue holds packets besides the leaf chains
    classful::class_owner_methods!(
        self => self.classes.iter().map(|c| &c.leaf),
        self.direct.len() as u64
    );
}

/// `PSCHED_NS2TICKS` clamped to i32, as `htb_dump_class_stats` reports.
fn clamp_ticks(ns: i64) -> i64 {
    (ns >> 6).clamp(i32::MIN as i64, i32::MAX as i64)
}

#[cfg(test)]
mod tests;
