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
//! buckets and the clock, so the decisions are the same; the watchdog is
//! armed for the first instant some waiting leaf can send.
//!
//! Classification: the u32 filters attached at the qdisc in `prio` order,
//! then the `default` class; a target that is not a leaf, or no default,
//! sends the packet to the direct queue (`direct_qlen` packets, served
//! before any class, counted in `direct_packets_stat`). Not modelled:
//! filters attached to inner classes, `skb->priority` classification,
//! hysteresis, offload.

use super::fifo::Fifo;
use super::ops::{wrong_kind, BuildEnv, Built, Changed, Purged, Qdisc, Reduce};
use super::spec::{HtbClassSpec, HtbLeaf, HtbSpec, QdiscSpec};
#[cfg(test)]
use super::spec::{U32Field, U32Filter};
use super::tbf::RateCfg;
use super::tree::{self, Node};
use super::{classify, AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::time::SimTime;
use serde_json::json;
use std::collections::VecDeque;

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
}

impl HtbClass {
    fn backlog(&self) -> (u64, u64) {
        self.leaf
            .first()
            .map_or((0, 0), |n| (n.q.stats().qlen, n.q.stats().backlog))
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
}

/// The htb qdisc.
#[derive(Debug)]
pub struct Htb {
    spec: HtbSpec,
    classes: Vec<HtbClass>,
    direct: VecDeque<PacketId>,
    direct_pkts: u64,
    /// DRR position per (level, prio): the classid served last
    ptr: [[Option<u16>; NUM_PRIO]; MAX_DEPTH],
    stats: QdiscStats,
    /// the quantum clamps of the last configuration: (classid minor,
    /// "small" | "big"), relayed by `tc` as the kernel's warnings
    warnings: Vec<(u16, &'static str)>,
    seed: u64,
}

impl Htb {
    pub fn new(spec: &HtbSpec, env: &BuildEnv) -> Result<Htb, TcError> {
        let mut h = Htb {
            spec: HtbSpec {
                classes: Vec::new(),
                ..spec.clone()
            },
            classes: Vec::new(),
            direct: VecDeque::new(),
            direct_pkts: 0,
            ptr: [[None; NUM_PRIO]; MAX_DEPTH],
            stats: QdiscStats::default(),
            warnings: Vec::new(),
            seed: env.seed,
        };
        let removed = h.reconfigure(spec, env.now.as_nanos() as i64)?;
        debug_assert!(removed.is_empty(), "a new htb has no queue to purge");
        Ok(h)
    }

    fn validate(spec: &HtbSpec) -> Result<(), TcError> {
        if spec.r2q == 0 {
            return Err(TcError::Invalid("htb: r2q must be greater than 0".into()));
        }
        for (i, c) in spec.classes.iter().enumerate() {
            if c.classid == 0 {
                return Err(TcError::Invalid("htb: classid minor must not be 0".into()));
            }
            if spec.classes[..i].iter().any(|o| o.classid == c.classid) {
                return Err(TcError::Exists);
            }
            if c.rate == 0 {
                return Err(TcError::Invalid("htb: rate must be greater than 0".into()));
            }
            if c.parent != 0 && !spec.classes[..i].iter().any(|o| o.classid == c.parent) {
                return Err(TcError::Invalid(format!(
                    "htb: parent class {:x} of class {:x} does not exist",
                    c.parent, c.classid
                )));
            }
        }
        let depth_ok = spec.classes.iter().all(|c| {
            let mut d = 1;
            let mut p = c.parent;
            while p != 0 {
                d += 1;
                p = spec
                    .classes
                    .iter()
                    .find(|o| o.classid == p)
                    .map_or(0, |o| o.parent);
            }
            d < MAX_DEPTH
        });
        if !depth_ok {
            return Err(TcError::Invalid("htb: tree is too deep".into()));
        }
        Ok(())
    }

    /// Apply a whole spec: classes keep their buckets, counters and leaf
    /// when their classid survives; a removed class, or a leaf that became
    /// an inner class or got another leaf qdisc, loses its leaf chain; the
    /// chains are returned for the caller to purge. On error nothing changed.
    fn reconfigure(&mut self, spec: &HtbSpec, now: i64) -> Result<Vec<Vec<Node>>, TcError> {
        Self::validate(spec)?;
        let mut leaves = Vec::with_capacity(spec.classes.len());
        for c in &spec.classes {
            let is_leaf = !spec.classes.iter().any(|o| o.parent == c.classid);
            let keep = self.classes.iter().any(|o| {
                o.spec.classid == c.classid && o.spec.leaf == c.leaf && !o.leaf.is_empty()
            });
            leaves.push(if is_leaf && !keep {
                Some(self.build_leaf(spec, c.leaf.as_ref(), now)?)
            } else {
                None
            });
        }
        let mut removed = Vec::new();
        let mut old: Vec<HtbClass> = std::mem::take(&mut self.classes);
        let mut warnings = Vec::new();
        for (c, new_leaf) in spec.classes.iter().zip(leaves) {
            let is_leaf = !spec.classes.iter().any(|o| o.parent == c.classid);
            let prev = old
                .iter()
                .position(|o| o.spec.classid == c.classid)
                .map(|i| old.swap_remove(i));
            let parent = (c.parent != 0).then(|| {
                self.classes
                    .iter()
                    .position(|o| o.spec.classid == c.parent)
                    .expect("validated parent")
            });
            let level = match (is_leaf, parent) {
                (true, _) => 0,
                (false, None) => MAX_DEPTH - 1,
                (false, Some(p)) => self.classes[p].level - 1,
            };
            let quantum = Self::quantum(spec, c, &mut warnings);
            let mut cl = match prev {
                Some(mut p) => {
                    if new_leaf.is_some() || !is_leaf {
                        removed.push(std::mem::take(&mut p.leaf));
                        p.stats.qlen = 0;
                        p.stats.backlog = 0;
                    }
                    p.spec = c.clone();
                    p
                }
                None => HtbClass {
                    spec: c.clone(),
                    rate: RateCfg::new(c.rate, 0, 0, false),
                    ceil: RateCfg::new(c.ceil, 0, 0, false),
                    parent,
                    level,
                    quantum,
                    prio: 0,
                    tokens: c.buffer as i64,
                    ctokens: c.cbuffer as i64,
                    t_c: now,
                    mode: Mode::CanSend,
                    deficit: [0; MAX_DEPTH],
                    leaf: Vec::new(),
                    stats: QdiscStats::default(),
                    lends: 0,
                    borrows: 0,
                },
            };
            cl.rate = RateCfg::new(c.rate, 0, 0, false);
            cl.ceil = RateCfg::new(c.ceil, 0, 0, false);
            cl.parent = parent;
            cl.level = level;
            cl.quantum = quantum;
            cl.prio = (c.prio as usize).min(NUM_PRIO - 1);
            if let Some(l) = new_leaf {
                cl.leaf = l;
            }
            self.classes.push(cl);
        }
        removed.extend(old.into_iter().map(|c| c.leaf));
        self.warnings = warnings;
        self.spec = spec.clone();
        Ok(removed)
    }

    /// `htb_change_class`'s quantum: `rate / r2q` unless given, clamped to
    /// 1000..200000 with the kernel's warning.
    fn quantum(spec: &HtbSpec, c: &HtbClassSpec, warnings: &mut Vec<(u16, &'static str)>) -> u32 {
        if c.quantum != 0 {
            return c.quantum;
        }
        let q = (c.rate / spec.r2q as u64).min(u32::MAX as u64) as u32;
        if q < MIN_QUANTUM {
            warnings.push((c.classid, "small"));
            MIN_QUANTUM
        } else if q > MAX_QUANTUM {
            warnings.push((c.classid, "big"));
            MAX_QUANTUM
        } else {
            q
        }
    }

    fn build_leaf(
        &self,
        spec: &HtbSpec,
        leaf: Option<&HtbLeaf>,
        now: i64,
    ) -> Result<Vec<Node>, TcError> {
        build_leaf_chain(self.seed, "htb-leaf", leaf, spec.leaf_limit, now)
    }

    /// The class a packet goes to (index), or `None` for the direct queue.
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> Option<usize> {
        let p = ctx.arena.get(id);
        let leaf_of = |minor: u16| {
            self.classes
                .iter()
                .position(|c| c.spec.classid == minor && c.level == 0)
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

    /// First instant at which leaf `i` can send (see `send_level`).
    fn ready_at(&self, i: usize) -> i64 {
        let wait = |toks: i64, t_c: i64| if toks >= 0 { t_c } else { t_c - toks };
        let (mut best, mut below) = (i64::MAX, i64::MIN);
        let mut c = Some(i);
        while let Some(k) = c {
            let cl = &self.classes[k];
            let ceil_ok = wait(cl.ctokens, cl.t_c);
            let own = wait(cl.tokens, cl.t_c).max(ceil_ok).max(below);
            best = best.min(own);
            below = below.max(ceil_ok);
            c = cl.parent;
        }
        best
    }

    /// Pick the leaf to serve: lowest level, then lowest prio, then round
    /// robin from the DRR position of that (level, prio).
    fn pick(&self, now: i64) -> Option<(usize, usize)> {
        let mut best: Option<(usize, usize, u16, usize)> = None;
        for (i, c) in self.classes.iter().enumerate() {
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
        for cl in self.classes.iter_mut().filter(|c| c.level <= up_to) {
            cl.mode = cl.mode_after(cl.diff(now));
        }
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

    /// Quantum clamps of the last configuration (classid minor, "small" | "big").
    pub fn warnings(&self) -> &[(u16, &'static str)] {
        &self.warnings
    }
}

/// The qdisc chain of a class (htb, prio): the grafted `leaf` and what was
/// grafted below it (each kind's default child where nothing was), or a
/// default pfifo of `leaf_limit` packets.
pub(crate) fn build_leaf_chain(
    seed: u64,
    stream: &str,
    leaf: Option<&HtbLeaf>,
    leaf_limit: u32,
    now: i64,
) -> Result<Vec<Node>, TcError> {
    let Some(leaf) = leaf else {
        let fifo = Fifo::from_spec(&QdiscSpec::Pfifo {
            limit: Some(leaf_limit),
        })
        .expect("pfifo is a fifo");
        return Ok(vec![Node::new(0, 0, true, AnyQdisc::Fifo(fifo))]);
    };
    let env = BuildEnv {
        seed,
        stream,
        profile: Default::default(),
        now: SimTime::from_nanos(now as u64),
        at_root: false,
    };
    let mut chain = Vec::new();
    let mut next = Some(leaf);
    while let Some(l) = next {
        let built = AnyQdisc::build(&l.spec, &env)?;
        if l.child.is_some() && !built.qdisc.classful() {
            // `qdisc_graft` on a kind without a child slot (api.rs says the same)
            return Err(TcError::Invalid(format!(
                "Operation not supported: qdisc {} has no classes to attach to",
                built.qdisc.kind()
            )));
        }
        chain.push(Node::new(l.handle, 0, false, built.qdisc));
        next = l.child.as_deref();
        if let (None, Some(f)) = (next, built.default_child) {
            chain.push(Node::new(0, 0, true, AnyQdisc::Fifo(f)));
        }
    }
    Ok(chain)
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
        red: &mut Reduce,
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
        let before = *red;
        let cl = &mut self.classes[i];
        let v = tree::enqueue_chain(&mut cl.leaf, ctx, red, id);
        let lost = red.since(before);
        cl.stats.absorb(lost);
        self.stats.absorb(lost);
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
        red: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        if let Some(id) = self.direct.pop_front() {
            let len = ctx.arena.len_of(id);
            self.stats.unqueued(len);
            self.stats.sent(len, ctx.arena.segs_of(id));
            return Some(id);
        }
        let now = ctx.now.as_nanos() as i64;
        let mut tried = 0;
        while let Some((i, level)) = self.pick(now) {
            self.run_events(level, now);
            let before = *red;
            let got = tree::dequeue_chain(&mut self.classes[i].leaf, ctx, red);
            let lost = red.since(before);
            self.classes[i].stats.absorb(lost);
            self.stats.absorb(lost);
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
        self.run_events(MAX_DEPTH - 1, now);
        if self.stats.qlen > 0 {
            let next = (0..self.classes.len())
                .filter(|&i| self.classes[i].level == 0 && self.classes[i].backlog().0 > 0)
                .map(|i| self.ready_at(i))
                .min();
            if let Some(t) = next.filter(|&t| t > now) {
                ctx.arm_watchdog(SimTime::from_nanos(t as u64));
            }
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
        for c in &mut self.classes {
            for n in c.leaf.iter_mut() {
                purged.add(n.reset(ctx));
            }
            c.stats.qlen = 0;
            c.stats.backlog = 0;
            c.tokens = c.spec.buffer as i64;
            c.ctokens = c.spec.cbuffer as i64;
            c.t_c = now;
            c.mode = Mode::CanSend;
        }
        purged
    }

    /// `tc qdisc change … htb` and every class/filter/leaf verb: the new
    /// whole configuration (see [`HtbSpec`]).
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Htb(spec) = spec else {
            return Err(wrong_kind());
        };
        let removed = self.reconfigure(spec, ctx.now.as_nanos() as i64)?;
        let mut lost = Purged::default();
        for mut chain in removed {
            for n in chain.iter_mut() {
                lost.add(n.reset(ctx));
            }
        }
        self.stats.absorb(Reduce::purged(lost));
        Ok(Changed {
            purged: lost,
            child: super::ops::ChildChange::Keep,
        })
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

    /// `direct_packets_stat`, the kernel's warnings and per-class state
    /// (`tc -s class show`; tokens in ticks of 64 ns as the kernel dumps).
    fn xstats(&self) -> serde_json::Value {
        let classes: Vec<_> = self
            .classes
            .iter()
            .map(|c| {
                let (qlen, backlog) = c.backlog();
                let leaf: Vec<_> = c
                    .leaf
                    .iter()
                    .map(|n| {
                        json!({
                            "kind": n.q.kind(),
                            "handle": n.handle,
                            "anonymous": n.anonymous,
                            "options": n.q.options(),
                            "stats": n.q.stats(),
                            "xstats": n.q.xstats(),
                        })
                    })
                    .collect();
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
                .warnings
                .iter()
                .map(|(classid, what)| json!({"classid": classid, "what": what}))
                .collect::<Vec<_>>(),
            "classes": classes,
        })
    }

    fn inner_netems(&self, out: &mut Vec<bool>) {
        for c in &self.classes {
            tree::chain_netems(&c.leaf, out);
        }
    }

    /// The direct queue and every leaf chain (the leaves are not tree nodes).
    fn held(&self) -> u64 {
        let leaves: u64 = self
            .classes
            .iter()
            .flat_map(|c| c.leaf.iter())
            .map(Node::held_packets)
            .sum();
        self.direct.len() as u64 + leaves
    }
}

/// `PSCHED_NS2TICKS` clamped to i32, as `htb_dump_class_stats` reports.
fn clamp_ticks(ns: i64) -> i64 {
    (ns >> 6).clamp(i32::MIN as i64, i32::MAX as i64)
}

#[cfg(test)]
#[path = "htb_tests.rs"]
mod tests;
