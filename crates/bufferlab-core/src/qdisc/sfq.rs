//! Size: sch_sfq.c in one file, as Linux keeps it: the hash, the slot table and its
//! depth-ordered lists are one state that enqueue, dequeue, drop and rehash all walk.
//!
//! `sfq` — Stochastic Fairness Queueing (docs/semantics/qdiscs.md §16;
//! net/sched/sch_sfq.c: `sfq_hash`, `sfq_link`/`sfq_unlink`, `sfq_inc`,
//! `sfq_dec`, `sfq_drop`, `sfq_enqueue`, `sfq_dequeue`, `sfq_rehash`,
//! `sfq_perturbation`, `sfq_change`, `sfq_init`, `sfq_dump`).
//!
//! A packet's keyed flow hash (perturbed: a new key every `perturb`
//! seconds, from the qdisc's own random stream) picks one of `divisor`
//! buckets; a bucket in use owns one of `flows` slots. Active slots form a
//! ring served round robin with an allotment of `quantum` bytes (kept in
//! units of 8 bytes, `SFQ_ALLOT_SIZE`). Slots are also linked in lists by
//! their depth, so the deepest one is found in O(1): when `limit` packets
//! are exceeded, the deepest slot loses its tail (its head with
//! `headdrop`); a slot at `depth` drops the arrival (or its own head). With
//! `redflowlimit`, RED runs per slot on the slot's byte backlog (no idle
//! decay, `red_calc_qavg_no_idle_time`): probabilistic and forced marks
//! (ECN, of the head with `headdrop`) or drops.
//!
//! GSO: the kernel does not segment in sfq; an aggregate is one entry.

use super::fq_codel::hash32;
use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc, Reduce};
use super::red::RedParms;
use super::spec::{QdiscSpec, RedSpec, SfqRedSpec, SfqSpec};
use super::tree::Node;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::rng::ComponentRng;
use serde_json::json;
use std::collections::VecDeque;

pub const MAX_DEPTH: u32 = 127;
pub const DEFAULT_FLOWS: u32 = 128;
/// `SFQ_MAX_FLOWS`: 65536 − depth heads − the empty marker
pub const MAX_FLOWS: u32 = 0x10000 - MAX_DEPTH - 1;
const EMPTY: u32 = u32::MAX;
const MTU: u32 = 1514;
/// HZ = 250
const JIFFY_NS: u64 = 4_000_000;

/// `SFQ_ALLOT_SIZE`: bytes in units of 8, rounded up.
#[inline]
fn allot_size(x: u32) -> i32 {
    x.div_ceil(8) as i32
}

/// Which packet RED's ECN mark went to.
enum Marked {
    Head,
    Arrival,
    No,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    id: PacketId,
    len: u32,
}

/// RED's per-slot variables (`struct red_vars`, no idle tracking).
#[derive(Clone, Copy, Debug)]
struct RedVars {
    qavg: u64,
    qcount: i64,
    qr: u32,
}

const RED_VARS_INIT: RedVars = RedVars {
    qavg: 0,
    qcount: -1,
    qr: 0,
};

#[derive(Debug)]
struct Slot {
    queue: VecDeque<Entry>,
    /// next slot of the active ring
    next: u32,
    allot: i32,
    backlog: u32,
    hash: u32,
    vars: RedVars,
}

/// RED counters (`struct tc_sfqred_stats`).
#[derive(Clone, Copy, Debug, Default)]
struct RedStats {
    prob_drop: u64,
    prob_mark: u64,
    prob_mark_head: u64,
    forced_drop: u64,
    forced_mark: u64,
    forced_mark_head: u64,
}

#[derive(Debug)]
pub struct Sfq {
    limit: u32,
    quantum: u32,
    scaled_quantum: i32,
    maxdepth: u32,
    maxflows: u32,
    divisor: u32,
    headdrop: bool,
    /// jiffies; 0 = no perturbation
    perturb_period: u64,
    next_perturb: Option<u64>,
    perturbation: u64,
    red: Option<(SfqRedSpec, RedParms)>,
    ht: Vec<u32>,
    slots: Vec<Slot>,
    /// depth lists: entry `x < maxflows` is slot x's (next, prev); entry
    /// `maxflows + d` is the head of depth d
    dep: Vec<(u32, u32)>,
    qlen_of: Vec<u32>,
    cur_depth: u32,
    /// last slot of the ring (`q->tail`)
    tail: Option<u32>,
    rng: ComponentRng,
    rs: RedStats,
    stats: QdiscStats,
}

/// `red_check_params` + the kernel's `red_set_parms` for sfq's thresholds.
fn red_parms(r: &SfqRedSpec) -> Result<RedParms, TcError> {
    RedParms::new(&RedSpec {
        limit: 0,
        qth_min: r.qth_min,
        qth_max: r.qth_max,
        wlog: r.wlog,
        plog: r.plog,
        scell_log: 0,
        stab: vec![0; 256],
        max_p: r.max_p,
        ecn: r.ecn,
        harddrop: r.harddrop,
        adaptive: false,
        nodrop: false,
        adaptive_timer: false,
        dscp_coeff: None,
    })
    .map_err(|_| TcError::Invalid(String::new()))
}

impl Sfq {
    pub fn new(spec: &SfqSpec, seed: u64, stream: &str, now_ns: u64) -> Result<Sfq, TcError> {
        let mut rng = ComponentRng::new(seed, stream);
        let perturbation = rng.next_u64();
        let mut q = Sfq {
            limit: MAX_DEPTH,
            quantum: MTU,
            scaled_quantum: allot_size(MTU),
            maxdepth: MAX_DEPTH,
            maxflows: DEFAULT_FLOWS,
            divisor: 1024,
            headdrop: false,
            perturb_period: 0,
            next_perturb: None,
            perturbation,
            red: None,
            ht: Vec::new(),
            slots: Vec::new(),
            dep: Vec::new(),
            qlen_of: Vec::new(),
            cur_depth: 0,
            tail: None,
            rng,
            rs: RedStats::default(),
            stats: QdiscStats::default(),
        };
        q.apply(spec, now_ns, true)?;
        q.ht = vec![EMPTY; q.divisor as usize];
        let n = q.maxflows;
        q.slots = (0..n)
            .map(|_| Slot {
                queue: VecDeque::new(),
                next: 0,
                allot: 0,
                backlog: 0,
                hash: 0,
                vars: RED_VARS_INIT,
            })
            .collect();
        q.qlen_of = vec![0; n as usize];
        q.dep = (0..n + MAX_DEPTH + 1)
            .map(|i| if i < n { (0, 0) } else { (i, i) })
            .collect();
        for x in 0..n {
            q.link(x);
        }
        Ok(q)
    }

    /// `sfq_change`'s assignments (validated first; nothing changes on error).
    fn apply(&mut self, s: &SfqSpec, now_ns: u64, init: bool) -> Result<(), TcError> {
        if s.divisor != 0 && (!s.divisor.is_power_of_two() || s.divisor > 65536) {
            return Err(TcError::Invalid(String::new()));
        }
        if s.limit == 1 {
            return Err(TcError::Invalid("sch_sfq: invalid limit".into()));
        }
        if !init
            && ((s.flows != 0 && s.flows.min(MAX_FLOWS) != self.maxflows)
                || (s.divisor != 0 && s.divisor != self.divisor))
        {
            return Err(TcError::Invalid(
                "sch_sfq: flows and divisor are set at creation".into(),
            ));
        }
        let red = match &s.red {
            Some(r) if r.qth_min != 0 => Some((r.clone(), red_parms(r)?)),
            _ => None,
        };
        if s.quantum != 0 {
            self.quantum = s.quantum;
            self.scaled_quantum = allot_size(s.quantum);
        }
        self.perturb_period = (s.perturb.max(0) as u64) * 250;
        if s.flows != 0 {
            self.maxflows = s.flows.min(MAX_FLOWS);
        }
        if s.divisor != 0 {
            self.divisor = s.divisor;
            self.maxflows = self.maxflows.min(self.divisor);
        }
        if s.depth != 0 {
            self.maxdepth = s.depth.min(MAX_DEPTH);
        }
        if red.is_some() {
            self.red = red;
        }
        self.headdrop = s.headdrop;
        if s.limit != 0 {
            self.limit = s.limit.min(self.maxdepth * self.maxflows);
            self.maxflows = self.maxflows.min(self.limit);
        }
        self.next_perturb = if self.perturb_period > 0 {
            if !init {
                self.perturbation = self.rng.next_u64();
            }
            Some((now_ns / JIFFY_NS + self.perturb_period) * JIFFY_NS)
        } else {
            None
        };
        Ok(())
    }

    #[inline]
    fn head(&self, d: u32) -> u32 {
        self.maxflows + d
    }

    /// `sfq_link`: slot x at the head of the list of its depth.
    fn link(&mut self, x: u32) {
        let p = self.head(self.qlen_of[x as usize]);
        let n = self.dep[p as usize].0;
        self.dep[x as usize] = (n, p);
        self.dep[p as usize].0 = x;
        self.dep[n as usize].1 = x;
    }

    fn unlink(&mut self, x: u32) -> (u32, u32) {
        let (n, p) = self.dep[x as usize];
        self.dep[p as usize].0 = n;
        self.dep[n as usize].1 = p;
        (n, p)
    }

    fn inc(&mut self, x: u32) {
        self.unlink(x);
        let d = &mut self.qlen_of[x as usize];
        *d += 1;
        self.cur_depth = self.cur_depth.max(*d);
        self.link(x);
    }

    fn dec(&mut self, x: u32) {
        let (n, p) = self.unlink(x);
        if n == p && self.cur_depth == self.qlen_of[x as usize] {
            self.cur_depth -= 1;
        }
        self.qlen_of[x as usize] -= 1;
        self.link(x);
    }

    fn hash(&self, ctx: &QdiscCtx, id: PacketId) -> u32 {
        hash32(ctx.arena.get(id), self.perturbation) & (self.divisor - 1)
    }

    /// A slot whose queue just got its first packet joins the ring after
    /// the tail and becomes the tail, with a full allotment.
    fn activate(&mut self, x: u32) {
        match self.tail {
            None => self.slots[x as usize].next = x,
            Some(t) => {
                self.slots[x as usize].next = self.slots[t as usize].next;
                self.slots[t as usize].next = x;
            }
        }
        self.tail = Some(x);
        self.slots[x as usize].allot = self.scaled_quantum;
    }

    /// `sfq_drop`: the tail (head with `headdrop`) of the deepest slot; if
    /// every slot holds one packet, the slot after the tail is dropped
    /// whole and leaves the ring. Returns the bytes dropped (0 if empty).
    fn drop_deepest(&mut self, ctx: &mut QdiscCtx) -> u32 {
        let d = self.cur_depth;
        let x = if d > 1 {
            self.dep[self.head(d) as usize].0
        } else if d == 1 {
            let t = self.tail.expect("a slot of depth 1 is on the ring");
            let x = self.slots[t as usize].next;
            let nx = self.slots[x as usize].next;
            self.slots[t as usize].next = nx;
            if x == t {
                self.tail = None;
            }
            let h = self.slots[x as usize].hash;
            self.ht[h as usize] = EMPTY;
            x
        } else {
            return 0;
        };
        let slot = &mut self.slots[x as usize];
        let e = if self.headdrop {
            slot.queue.pop_front()
        } else {
            slot.queue.pop_back()
        }
        .expect("deepest slot holds packets");
        slot.backlog -= e.len;
        self.dec(x);
        self.stats.unqueued(e.len);
        self.stats.dropped();
        ctx.drop_packet(
            e.id,
            if self.headdrop {
                DropReason::HeadDrop
            } else {
                DropReason::QueueFull
            },
        );
        e.len
    }

    fn draw(&mut self) -> u32 {
        self.rng.next_u32()
    }

    /// `red_action` on slot x's variables after the average update.
    fn red_action(&mut self, x: u32) -> super::red::RedVerdict {
        use super::red::RedVerdict;
        let (_, p) = self.red.as_ref().expect("red configured");
        let (qmin, qmax, wlog) = (p.qth_min_s, p.qth_max_s, p.wlog);
        let v = self.slots[x as usize].vars;
        if v.qavg < qmin {
            self.slots[x as usize].vars.qcount = -1;
            return RedVerdict::Pass;
        }
        if v.qavg >= qmax {
            self.slots[x as usize].vars.qcount = -1;
            return RedVerdict::Hard;
        }
        let qcount = v.qcount + 1;
        self.slots[x as usize].vars.qcount = qcount;
        if qcount == 0 {
            let d = self.draw();
            let qr = self.red.as_ref().expect("red").1.random(d);
            self.slots[x as usize].vars.qr = qr;
            return RedVerdict::Pass;
        }
        if ((v.qavg - qmin) >> wlog) * qcount as u64 >= v.qr as u64 {
            let d = self.draw();
            let qr = self.red.as_ref().expect("red").1.random(d);
            let vars = &mut self.slots[x as usize].vars;
            vars.qcount = 0;
            vars.qr = qr;
            return RedVerdict::Prob;
        }
        RedVerdict::Pass
    }

    /// `sfq_perturbation` for every period elapsed by `now` (the timer's
    /// work is done at the next operation; nothing it reads changes between).
    fn perturb_due(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce) {
        while let Some(t) = self.next_perturb {
            if t > ctx.now.as_nanos() {
                break;
            }
            self.perturbation = self.rng.next_u64();
            if self.tail.is_some() {
                self.rehash(ctx, reduce);
            }
            self.next_perturb = Some(t + self.perturb_period * JIFFY_NS);
        }
    }

    /// `sfq_rehash`: every queued packet, slot by slot, re-enters by its new
    /// hash; those without a free slot or above `depth` are dropped.
    fn rehash(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce) {
        let mut list = Vec::with_capacity(self.stats.qlen as usize);
        for x in 0..self.maxflows {
            if self.slots[x as usize].queue.is_empty() {
                continue;
            }
            while let Some(e) = self.slots[x as usize].queue.pop_front() {
                self.dec(x);
                list.push(e);
            }
            let s = &mut self.slots[x as usize];
            s.backlog = 0;
            s.vars = RED_VARS_INIT;
            self.ht[s.hash as usize] = EMPTY;
        }
        self.tail = None;
        let (mut dropped, mut drop_len) = (0u64, 0u64);
        for e in list {
            let h = self.hash(ctx, e.id);
            let mut x = self.ht[h as usize];
            if x == EMPTY {
                x = self.dep[self.head(0) as usize].0;
                if x >= self.maxflows {
                    dropped += 1;
                    drop_len += e.len as u64;
                    self.stats.unqueued(e.len);
                    ctx.drop_packet(e.id, DropReason::QueueFull);
                    continue;
                }
                self.ht[h as usize] = x;
                self.slots[x as usize].hash = h;
            }
            if self.qlen_of[x as usize] >= self.maxdepth {
                dropped += 1;
                drop_len += e.len as u64;
                self.stats.unqueued(e.len);
                ctx.drop_packet(e.id, DropReason::QueueFull);
                continue;
            }
            let wlog = self.red.as_ref().map(|(_, p)| p.wlog);
            let s = &mut self.slots[x as usize];
            s.queue.push_back(e);
            if let Some(w) = wlog {
                s.vars.qavg = s.vars.qavg + s.backlog as u64 - (s.vars.qavg >> w);
            }
            s.backlog += e.len;
            self.inc(x);
            if self.qlen_of[x as usize] == 1 {
                self.activate(x);
            }
        }
        if dropped > 0 {
            self.stats.drops += dropped;
            reduce.left(dropped, drop_len, dropped);
        }
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, id: PacketId) -> Verdict {
        use super::red::RedVerdict;
        self.perturb_due(ctx, reduce);
        let len = ctx.arena.len_of(id);
        let h = self.hash(ctx, id);
        let mut x = self.ht[h as usize];
        if x == EMPTY {
            x = self.dep[self.head(0) as usize].0;
            if x >= self.maxflows {
                return self.drop_arrival(ctx, id, DropReason::QueueFull);
            }
            self.ht[h as usize] = x;
            let s = &mut self.slots[x as usize];
            s.hash = h;
            s.backlog = 0;
            s.vars = RED_VARS_INIT;
        } else if let Some((r, p)) = &self.red {
            let (ecn, harddrop, wlog) = (r.ecn, r.harddrop, p.wlog);
            let s = &mut self.slots[x as usize];
            s.vars.qavg = s.vars.qavg + s.backlog as u64 - (s.vars.qavg >> wlog);
            match self.red_action(x) {
                RedVerdict::Pass => {}
                RedVerdict::Prob => {
                    self.stats.overlimits += 1;
                    match if ecn {
                        self.mark(ctx, x, id)
                    } else {
                        Marked::No
                    } {
                        Marked::Head => self.rs.prob_mark_head += 1,
                        Marked::Arrival => self.rs.prob_mark += 1,
                        Marked::No => {
                            self.rs.prob_drop += 1;
                            return self.congestion_drop(
                                ctx,
                                reduce,
                                x,
                                id,
                                len,
                                DropReason::EarlyDrop,
                            );
                        }
                    }
                }
                RedVerdict::Hard => {
                    self.stats.overlimits += 1;
                    match if ecn && !harddrop {
                        self.mark(ctx, x, id)
                    } else {
                        Marked::No
                    } {
                        Marked::Head => self.rs.forced_mark_head += 1,
                        Marked::Arrival => self.rs.forced_mark += 1,
                        Marked::No => {
                            self.rs.forced_drop += 1;
                            return self.congestion_drop(
                                ctx,
                                reduce,
                                x,
                                id,
                                len,
                                DropReason::ForcedDrop,
                            );
                        }
                    }
                }
            }
        }
        if self.qlen_of[x as usize] >= self.maxdepth {
            return self.congestion_drop(ctx, reduce, x, id, len, DropReason::QueueFull);
        }
        self.queue_arrival(ctx, reduce, x, id, len)
    }

    /// ECN mark: with `headdrop` the slot's head first, then the arrival.
    fn mark(&mut self, ctx: &mut QdiscCtx, x: u32, id: PacketId) -> Marked {
        if self.headdrop {
            if let Some(e) = self.slots[x as usize].queue.front() {
                if ctx.arena.get_mut(e.id).set_ce() {
                    return Marked::Head;
                }
            }
        }
        if ctx.arena.get_mut(id).set_ce() {
            Marked::Arrival
        } else {
            Marked::No
        }
    }

    fn drop_arrival(&mut self, ctx: &mut QdiscCtx, id: PacketId, why: DropReason) -> Verdict {
        self.stats.dropped();
        ctx.drop_packet(id, why);
        Verdict::Dropped(why)
    }

    /// The `congestion_drop` label: the arrival, or with `headdrop` the
    /// slot's head, whose place the arrival takes.
    fn congestion_drop(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        x: u32,
        id: PacketId,
        len: u32,
        why: DropReason,
    ) -> Verdict {
        let s = &mut self.slots[x as usize];
        if !self.headdrop || s.queue.is_empty() {
            return self.drop_arrival(ctx, id, why);
        }
        let head = s.queue.pop_front().expect("non-empty");
        s.backlog = s.backlog - head.len + len;
        s.queue.push_back(Entry { id, len });
        self.stats.backlog = self.stats.backlog - head.len as u64 + len as u64;
        self.stats.dropped();
        ctx.drop_packet(
            head.id,
            if why == DropReason::QueueFull {
                DropReason::HeadDrop
            } else {
                why
            },
        );
        // the head left as a drop, the arrival took its place (NET_XMIT_CN)
        reduce.left(1, head.len as u64, 1);
        Verdict::Queued
    }

    fn queue_arrival(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        x: u32,
        id: PacketId,
        len: u32,
    ) -> Verdict {
        self.stats.queued(len);
        let s = &mut self.slots[x as usize];
        s.backlog += len;
        s.queue.push_back(Entry { id, len });
        self.inc(x);
        if self.qlen_of[x as usize] == 1 {
            self.activate(x);
        }
        if self.stats.qlen <= self.limit as u64 {
            return Verdict::Queued;
        }
        let dropped = self.drop_deepest(ctx);
        reduce.left(1, dropped as u64, 1);
        Verdict::Queued
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce) -> Option<PacketId> {
        self.perturb_due(ctx, reduce);
        let mut a;
        loop {
            let t = self.tail?;
            a = self.slots[t as usize].next;
            if self.slots[a as usize].allot <= 0 {
                self.tail = Some(a);
                self.slots[a as usize].allot += self.scaled_quantum;
                continue;
            }
            break;
        }
        let e = self.slots[a as usize]
            .queue
            .pop_front()
            .expect("ring slots hold packets");
        self.dec(a);
        self.stats.unqueued(e.len);
        self.stats.sent(e.len, ctx.arena.segs_of(e.id));
        let s = &mut self.slots[a as usize];
        s.backlog -= e.len;
        if s.queue.is_empty() {
            self.ht[s.hash as usize] = EMPTY;
            let next_a = s.next;
            let t = self.tail.expect("ring");
            if a == next_a {
                self.tail = None;
                return Some(e.id);
            }
            self.slots[t as usize].next = next_a;
        } else {
            s.allot -= allot_size(e.len);
        }
        Some(e.id)
    }
}

impl Qdisc for Sfq {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Sfq(s) = spec else {
            return None;
        };
        Some(Sfq::new(s, env.seed, env.stream, env.now.as_nanos()).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "sfq"
    }

    #[inline]
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        Sfq::enqueue(self, ctx, reduce, id)
    }

    #[inline]
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        Sfq::dequeue(self, ctx, reduce)
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        let mut reduce = Reduce::default();
        while let Some(id) = self.dequeue(ctx, &mut reduce) {
            let len = ctx.arena.len_of(id);
            self.stats.bytes -= len as u64;
            self.stats.packets -= ctx.arena.segs_of(id) as u64;
            n += 1;
            b += len as u64;
            ctx.drop_packet(id, DropReason::Purged);
        }
        Purged {
            packets: n,
            bytes: b,
        }
    }

    /// `sfq_change`: then the deepest slots lose packets down to `limit`.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Sfq(spec) = spec else {
            return Err(wrong_kind());
        };
        self.apply(spec, ctx.now.as_nanos(), false)?;
        let (mut n, mut b) = (0, 0);
        while self.stats.qlen > self.limit as u64 {
            let len = self.drop_deepest(ctx);
            if len == 0 {
                break;
            }
            n += 1;
            b += len as u64;
        }
        // sfq_drop counted them as drops of this qdisc already
        self.stats.drops -= n;
        Ok(Changed {
            purged: Purged {
                packets: n,
                bytes: b,
            },
            child: ChildChange::Keep,
        })
    }

    crate::qdisc::ops::own_stats!();

    /// `sfq_dump` (`struct tc_sfq_qopt_v1`).
    fn options(&self) -> serde_json::Value {
        let red = self.red.as_ref().map(|(r, _)| {
            json!({
                "qth_min": r.qth_min, "qth_max": r.qth_max, "wlog": r.wlog, "plog": r.plog,
                "max_p": r.max_p, "ecn": r.ecn, "harddrop": r.harddrop,
            })
        });
        json!({
            "kind": "sfq",
            "quantum": self.quantum,
            "perturb": self.perturb_period / 250,
            "limit": self.limit,
            "divisor": self.divisor,
            "flows": self.maxflows,
            "depth": self.maxdepth,
            "headdrop": self.headdrop,
            "red": red,
        })
    }

    /// RED's counters, which `sfq_dump` returns inside the options
    /// (`tc_sfq_qopt_v1.stats`); tc prints them there with `-s`.
    fn xstats(&self) -> serde_json::Value {
        json!({
            "prob_drop": self.rs.prob_drop, "forced_drop": self.rs.forced_drop,
            "prob_mark": self.rs.prob_mark, "forced_mark": self.rs.forced_mark,
            "prob_mark_head": self.rs.prob_mark_head,
            "forced_mark_head": self.rs.forced_mark_head,
        })
    }

    fn held(&self) -> u64 {
        self.slots.iter().map(|s| s.queue.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tree::harness::Env;

    fn pkt(env: &mut Env, len: u32, sport: u16) -> PacketId {
        let id = env.pkt(len);
        env.arena.get_mut(id).src_port = sport;
        id
    }

    /// Two source ports that hash to different buckets.
    fn two_ports(q: &Sfq, env: &mut Env) -> (u16, u16) {
        let a = pkt(env, 64, 1);
        let ha = q.hash(&env.ctx(0), a);
        env.arena.free(a);
        for p in 2..1000 {
            let b = pkt(env, 64, p);
            let hb = q.hash(&env.ctx(0), b);
            env.arena.free(b);
            if hb != ha {
                return (1, p);
            }
        }
        unreachable!()
    }

    fn drain(q: &mut Sfq, env: &mut Env) -> Vec<u16> {
        let mut reduce = Reduce::default();
        let mut out = vec![];
        while let Some(id) = q.dequeue(&mut env.ctx(0), &mut reduce) {
            out.push(env.arena.get(id).src_port);
            env.arena.free(id);
        }
        out
    }

    #[test]
    fn defaults_are_the_kernels() {
        let q = Sfq::new(&SfqSpec::default(), 1, "t", 0).unwrap();
        let o = q.options();
        assert_eq!(
            (
                o["limit"].as_u64(),
                o["quantum"].as_u64(),
                o["depth"].as_u64(),
                o["flows"].as_u64(),
                o["divisor"].as_u64()
            ),
            (Some(127), Some(1514), Some(127), Some(128), Some(1024))
        );
        // SFQ_ALLOT_SIZE(1514) = ceil(1514 / 8)
        assert_eq!(q.scaled_quantum, 190);
    }

    #[test]
    fn slots_take_turns_of_one_quantum() {
        let mut env = Env::default();
        let mut q = Sfq::new(&SfqSpec::default(), 1, "t", 0).unwrap();
        let (a, b) = two_ports(&q, &mut env);
        let mut reduce = Reduce::default();
        for port in [a, a, a, b, b, b] {
            let id = pkt(&mut env, 1514, port);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        // 1514 B spends the whole allotment (190 units): one packet a turn
        assert_eq!(drain(&mut q, &mut env), vec![a, b, a, b, a, b]);
        // 64-byte packets cost 8 units: 24 per 190-unit turn (190 − 23·8 = 6 > 0)
        for _ in 0..30 {
            let id = pkt(&mut env, 64, a);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        for _ in 0..2 {
            let id = pkt(&mut env, 1514, b);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        let out = drain(&mut q, &mut env);
        assert_eq!(out.iter().position(|&p| p == b), Some(24));
        assert_eq!(reduce, Reduce::default());
    }

    #[test]
    fn over_limit_the_deepest_slot_loses_its_tail() {
        let mut env = Env::default();
        let mut q = Sfq::new(
            &SfqSpec {
                limit: 4,
                ..Default::default()
            },
            1,
            "t",
            0,
        )
        .unwrap();
        let (a, b) = two_ports(&q, &mut env);
        let mut reduce = Reduce::default();
        let mut ids = vec![];
        for port in [a, a, a, b, b] {
            let id = pkt(&mut env, 1000, port);
            ids.push(env.arena.get(id).seq);
            assert_eq!(q.enqueue(&mut env.ctx(0), &mut reduce, id), Verdict::Queued);
        }
        // the fifth arrival made 5 > 4: a's third packet (seq 2) is dropped
        assert_eq!((reduce.qlen, reduce.backlog, reduce.drops), (1, 1000, 1));
        assert_eq!((q.stats().qlen, q.stats().drops), (4, 1));
        assert_eq!(env.drops.packets[DropReason::QueueFull.index()], 1);
        // 1000 B costs 125 of a slot's 190 units: two packets a turn
        assert_eq!(drain(&mut q, &mut env), vec![a, a, b, b]);
    }

    #[test]
    fn depth_drops_the_arrival_or_with_headdrop_the_head() {
        for headdrop in [false, true] {
            let mut env = Env::default();
            let spec = SfqSpec {
                depth: 2,
                headdrop,
                ..Default::default()
            };
            let mut q = Sfq::new(&spec, 1, "t", 0).unwrap();
            let mut reduce = Reduce::default();
            let mut verdicts = vec![];
            for _ in 0..3 {
                let id = pkt(&mut env, 500, 7);
                verdicts.push(q.enqueue(&mut env.ctx(0), &mut reduce, id));
            }
            let mut red2 = Reduce::default();
            let mut seqs = vec![];
            while let Some(id) = q.dequeue(&mut env.ctx(0), &mut red2) {
                seqs.push(env.arena.get(id).seq);
                env.arena.free(id);
            }
            if headdrop {
                assert_eq!(verdicts[2], Verdict::Queued);
                assert_eq!(seqs, vec![1, 2]);
                assert_eq!(env.drops.packets[DropReason::HeadDrop.index()], 1);
                assert_eq!((reduce.qlen, reduce.drops), (1, 1));
            } else {
                assert_eq!(verdicts[2], Verdict::Dropped(DropReason::QueueFull));
                assert_eq!(seqs, vec![0, 1]);
            }
            assert_eq!(q.stats().drops, 1);
        }
    }

    #[test]
    fn red_per_slot_forces_a_drop_at_max() {
        // Wlog 0: qavg is the slot's backlog before the arrival. min 3000,
        // max 9000: the tenth 1000-byte packet sees 9000 bytes → forced.
        // max_P = 1 makes the probabilistic branch practically never fire.
        let red = SfqRedSpec {
            qth_min: 3000,
            qth_max: 9000,
            wlog: 0,
            plog: 10,
            max_p: 1,
            ecn: false,
            harddrop: false,
        };
        let spec = SfqSpec {
            red: Some(red.clone()),
            ..Default::default()
        };
        let mut env = Env::default();
        let mut q = Sfq::new(&spec, 1, "t", 0).unwrap();
        let mut rd = Reduce::default();
        let mut v = vec![];
        for _ in 0..10 {
            let id = pkt(&mut env, 1000, 3);
            v.push(q.enqueue(&mut env.ctx(0), &mut rd, id));
        }
        assert_eq!(v[9], Verdict::Dropped(DropReason::ForcedDrop));
        assert!(v[..9].iter().all(|x| *x == Verdict::Queued));
        assert_eq!(
            (q.rs.forced_drop, q.rs.prob_drop, q.stats().overlimits),
            (1, 0, 1)
        );
        // with ecn an ECT packet is marked instead
        let spec = SfqSpec {
            red: Some(SfqRedSpec { ecn: true, ..red }),
            ..Default::default()
        };
        let mut q = Sfq::new(&spec, 1, "t", 0).unwrap();
        for _ in 0..10 {
            let id = pkt(&mut env, 1000, 3);
            env.arena.get_mut(id).tos = 0x01;
            assert_eq!(q.enqueue(&mut env.ctx(0), &mut rd, id), Verdict::Queued);
        }
        assert_eq!((q.rs.forced_mark, q.rs.forced_drop), (1, 0));
        // with headdrop the head (seq of the first packet) is marked, not the arrival
        let spec = SfqSpec {
            headdrop: true,
            red: Some(SfqRedSpec { ecn: true, ..red }),
            ..Default::default()
        };
        let mut q = Sfq::new(&spec, 1, "t", 0).unwrap();
        let mut ids = vec![];
        for _ in 0..10 {
            let id = pkt(&mut env, 1000, 3);
            env.arena.get_mut(id).tos = 0x01;
            ids.push(id);
            assert_eq!(q.enqueue(&mut env.ctx(0), &mut rd, id), Verdict::Queued);
        }
        assert_eq!((q.rs.forced_mark_head, q.rs.forced_mark), (1, 0));
        assert_eq!(env.arena.get(ids[0]).tos & 3, 3);
        assert_eq!(env.arena.get(ids[9]).tos & 3, 1);
    }

    #[test]
    fn perturbation_rehashes_without_losing_packets() {
        let mut env = Env::default();
        let mut q = Sfq::new(
            &SfqSpec {
                perturb: 1,
                ..Default::default()
            },
            1,
            "t",
            0,
        )
        .unwrap();
        let mut reduce = Reduce::default();
        for p in 0..20 {
            let id = pkt(&mut env, 100, p);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        let before = q.perturbation;
        let id = pkt(&mut env, 100, 99);
        q.enqueue(&mut env.ctx(1_000_000_000), &mut reduce, id);
        assert_ne!(q.perturbation, before);
        assert_eq!((q.stats().qlen, q.held(), reduce.drops), (21, 21, 0));
        assert_eq!(drain(&mut q, &mut env).len(), 21);
    }

    #[test]
    fn change_refuses_like_sfq_change() {
        let mut env = Env::default();
        let e = Sfq::new(
            &SfqSpec {
                divisor: 1000,
                ..Default::default()
            },
            1,
            "t",
            0,
        )
        .unwrap_err();
        assert_eq!(e.to_string(), "RTNETLINK answers: Invalid argument");
        let mut q = Sfq::new(&SfqSpec::default(), 1, "t", 0).unwrap();
        let s = QdiscSpec::Sfq(SfqSpec {
            limit: 20,
            depth: 10,
            ..Default::default()
        });
        q.change(&s, &mut env.ctx(0), None).unwrap();
        assert_eq!((q.limit, q.maxdepth), (20, 10));
        // limit is capped at depth × flows: 2 × 3 = 6, flows at limit
        let q = Sfq::new(
            &SfqSpec {
                limit: 100,
                depth: 2,
                flows: 3,
                ..Default::default()
            },
            1,
            "t",
            0,
        )
        .unwrap();
        assert_eq!((q.limit, q.maxflows), (6, 3));
    }
}
