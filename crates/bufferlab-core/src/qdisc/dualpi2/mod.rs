//! `dualpi2` — the coupled dual-queue AQM of RFC 9332 as Linux 6.17+ has it
//! (net/sched/sch_dualpi2.c; the command side is iproute2 tc/q_dualpi2.c).
//! docs/semantics/qdiscs.md §12, docs/models.md "DualPI2".
//!
//! Two FIFOs share one packet limit and one memory limit: the L queue
//! (L4S traffic: ECN bits that meet `ecn_mask`, ECT(1) and CE by default,
//! or a u32 filter's `flowid M:1`/`M:2`) and the C queue (everything else).
//! Functions followed, by name:
//!
//! - `dualpi2_skb_classify` / `dualpi2_read_ect`: the ECN bits first, then
//!   the filters (classid minor 0 C, 1 L, 2 L without AQM, others C).
//!   `skb->priority` classification needs SO_PRIORITY, which no modelled
//!   application sets.
//! - `dualpi2_qdisc_enqueue`: GSO aggregates are segmented first
//!   (`split_gso`, default on), each segment enqueued on its own.
//! - `dualpi2_enqueue_skb`: the whole-qdisc limit in packets and the memory
//!   limit (truesize, SIM `len + 768` as fq_codel) count as overlimit drops;
//!   with `drop_enqueue` the AQM decides here, else at dequeue.
//! - `must_drop` (+ `dualpi2_classic_marking`, `dualpi2_scalable_marking`):
//!   nothing below 2 MTU of backlog; the C queue marks/drops with p² (two
//!   rolls of the base probability p), the L queue marks with k·p and, when
//!   k·p > 1 (overload), drops with p² (`drop_on_overload`) or marks every
//!   packet (`overflow`).
//! - `dequeue_packet`: the WRR between the queues by `credit` (C-queue
//!   protection, `classic_protection` %), `do_step_aqm`: the L queue's step
//!   marking above `step_thresh` (sojourn time, or L-queue length in
//!   packets) once the L queue held `min_qlen_step` packets at enqueue.
//! - `calculate_probability`, run by the `dualpi2_timer` hrtimer every
//!   `tupdate` from creation: a PI controller on the larger of the two head
//!   sojourn times, probabilities on the u32 scale, alpha/beta scaled by
//!   `dualpi2_scale_alpha_beta` (delay in units of 64 ns). Between packet
//!   events nothing it reads changes, so the updates due run lazily, in
//!   order, before each enqueue/dequeue (as pie.rs does).
//! - `dualpi2_change` (attributes given only; then drop from the C head,
//!   else the L head, until both limits hold), `dualpi2_reset`,
//!   `dualpi2_dump` / `dualpi2_dump_stats` (the xstats; the head delays as
//!   of the qdisc's last enqueue/dequeue, since a dump here has no clock).

use super::fq_codel::TRUESIZE_EXTRA;
use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc, Reduce};
use super::spec::{DualPi2Spec, QdiscSpec, U32Filter};
use super::tree::Node;
use super::{classify, AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::{PacketId, ECN_MASK};
use crate::rng::ComponentRng;
use serde_json::json;
use std::collections::VecDeque;

/// Probabilities are fractions of `u32::MAX`.
pub const MAX_PROB: u32 = u32::MAX;
/// `psched_mtu` of a 1500-byte-MTU device.
const MTU: u32 = super::fifo::PSCHED_MTU;
/// netlink alpha/beta are 1/256 Hz, internal ones per 64 ns: shift 8 − 6.
const AB_SCALING: u32 = 2;
const AB_MAX: u32 = (1 << 31) - 1;
const NSEC_PER_SEC: u64 = 1_000_000_000;

/// `dualpi2_scale_alpha_beta`.
pub fn scale_alpha_beta(param: u32) -> u32 {
    (((param as u64 * MAX_PROB as u64) >> AB_SCALING) / NSEC_PER_SEC) as u32
}

/// `dualpi2_unscale_alpha_beta` (what `tc qdisc show` gets back).
pub fn unscale_alpha_beta(param: u32) -> u32 {
    (((param as u64 * NSEC_PER_SEC) << AB_SCALING) / MAX_PROB as u64) as u32
}

fn us_to_ns_u32(us: u32) -> u32 {
    (us as u64 * 1000).min(u32::MAX as u64) as u32
}

fn ns_to_us_u32(ns: u64) -> u32 {
    (ns / 1000).min(u32::MAX as u64) as u32
}

/// `get_memory_limit`: the rule of thumb limit × 2 × MTU.
fn memory_limit_for(limit: u32) -> u32 {
    (limit as u64 * 2 * MTU as u64).min(u32::MAX as u64) as u32
}

/// Where a packet goes (`enum dualpi2_classification_results`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Classic,
    /// L queue, scalable marking
    L4s,
    /// L queue, no AQM at all
    Llll,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Params {
    limit: u32,
    memory_limit: u32,
    target: u64,
    tupdate: u32,
    alpha: u32,
    beta: u32,
    step_thresh: u32,
    step_in_packets: bool,
    min_qlen_step: u32,
    coupling: u8,
    drop_overload: bool,
    drop_early: bool,
    wc: u8,
    wl: u8,
    credit_init: i32,
    ecn_mask: u8,
    split_gso: bool,
}

impl Params {
    /// `dualpi2_reset_default`.
    fn defaults() -> Params {
        let mut p = Params {
            limit: 10_000,
            memory_limit: memory_limit_for(10_000),
            target: 15_000_000,
            tupdate: 16_000_000,
            alpha: scale_alpha_beta(41),
            beta: scale_alpha_beta(819),
            step_thresh: 1_000_000,
            step_in_packets: false,
            min_qlen_step: 0,
            coupling: 2,
            drop_overload: true,
            drop_early: false,
            wc: 0,
            wl: 0,
            credit_init: 0,
            ecn_mask: 1,
            split_gso: true,
        };
        p.set_c_protection(10);
        p
    }

    /// `dualpi2_calculate_c_protection`.
    fn set_c_protection(&mut self, wc: u8) {
        self.wc = wc;
        self.wl = 100 - wc;
        self.credit_init = MTU as i32 * (self.wc as i32 - self.wl as i32);
    }

    /// The netlink policy, then `dualpi2_change`'s assignments in its order.
    fn apply(mut self, s: &DualPi2Spec) -> Result<Params, TcError> {
        let range = || TcError::Invalid("integer out of range".into());
        let min1 = |v: Option<u32>| v.is_some_and(|v| v < 1);
        if min1(s.limit) || min1(s.memlimit) || min1(s.tupdate) {
            return Err(range());
        }
        let ab = |v: Option<u32>| v.is_some_and(|v| !(1..=AB_MAX).contains(&v));
        if ab(s.alpha) || ab(s.beta) {
            return Err(range());
        }
        if s.coupling == Some(0)
            || s.c_protection.is_some_and(|c| c > 100)
            || s.ecn_mask.is_some_and(|m| !(1..=3).contains(&m))
        {
            return Err(range());
        }
        if s.step_thresh_pkts.is_some() && s.step_thresh_us.is_some() {
            return Err(TcError::Invalid(
                "sch_dualpi2: multiple step thresh attributes".into(),
            ));
        }
        if let Some(l) = s.limit {
            self.limit = l;
            self.memory_limit = memory_limit_for(l);
        }
        if let Some(m) = s.memlimit {
            self.memory_limit = m;
        }
        if let Some(t) = s.target {
            self.target = t as u64 * 1000;
        }
        if let Some(t) = s.tupdate {
            self.tupdate = us_to_ns_u32(t);
        }
        if let Some(a) = s.alpha {
            self.alpha = scale_alpha_beta(a);
        }
        if let Some(b) = s.beta {
            self.beta = scale_alpha_beta(b);
        }
        if let Some(n) = s.step_thresh_pkts {
            self.step_in_packets = true;
            self.step_thresh = n;
        } else if let Some(us) = s.step_thresh_us {
            self.step_in_packets = false;
            self.step_thresh = us_to_ns_u32(us);
        }
        if let Some(m) = s.min_qlen_step {
            self.min_qlen_step = m;
        }
        if let Some(k) = s.coupling {
            self.coupling = k;
        }
        if let Some(d) = s.drop_overload {
            self.drop_overload = d;
        }
        if let Some(d) = s.drop_early {
            self.drop_early = d;
        }
        if let Some(wc) = s.c_protection {
            self.set_c_protection(wc);
        }
        if let Some(m) = s.ecn_mask {
            self.ecn_mask = m;
        }
        if let Some(g) = s.split_gso {
            self.split_gso = g;
        }
        Ok(self)
    }
}

/// The PI2 state the timer updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pi2 {
    /// base probability p (u32 scale)
    pub prob: u32,
    /// ns, the delay the previous update saw
    pub last_qdelay: u64,
}

/// `calculate_probability` for the head sojourn times `qdelay_c`,
/// `qdelay_l` (ns) with the scaled `alpha`, `beta`; returns the new p.
#[allow(clippy::too_many_arguments)]
pub fn calculate_probability(
    s: &mut Pi2,
    qdelay_c: u64,
    qdelay_l: u64,
    target: u64,
    alpha: u32,
    beta: u32,
    drop_overload: bool,
    coupling: u8,
) -> u32 {
    let qdelay = qdelay_c.max(qdelay_l);
    let mut delta = (qdelay as i64)
        .wrapping_sub(target as i64)
        .wrapping_mul(alpha as i64);
    delta = delta.wrapping_add(
        (qdelay as i64)
            .wrapping_sub(s.last_qdelay as i64)
            .wrapping_mul(beta as i64),
    );
    s.last_qdelay = qdelay;
    let prob = s.prob;
    // the 64-bit sum/difference is stored in a u32 (truncated), then
    // bounded by the direction of the change
    let new = if delta > 0 {
        let n = ((delta as u64 >> 6) as i64).wrapping_add(prob as i64) as u32;
        if n < prob {
            MAX_PROB
        } else {
            n
        }
    } else {
        let n = (prob as i64).wrapping_sub((delta.wrapping_neg() as u64 >> 6) as i64) as u32;
        if n > prob {
            0
        } else {
            n
        }
    };
    if drop_overload {
        new
    } else {
        new.min(MAX_PROB / coupling as u32)
    }
}

/// One queued packet and what the enqueue decided about it (`dualpi2_skb_cb`).
#[derive(Clone, Copy, Debug)]
struct Entry {
    id: PacketId,
    /// enqueue time, ns
    ts: u64,
    len: u32,
    class: Class,
    /// ECN bits at classification
    ect: u8,
    apply_step: bool,
}

#[derive(Debug)]
pub struct DualPi2 {
    p: Params,
    filters: Vec<U32Filter>,
    c: VecDeque<Entry>,
    l: VecDeque<Entry>,
    pi2: Pi2,
    next_update: u64,
    c_head_ts: Option<u64>,
    l_head_ts: Option<u64>,
    credit: i32,
    packets_in_c: u32,
    packets_in_l: u32,
    maxq: u32,
    ecn_mark: u32,
    step_marks: u32,
    memory_used: u64,
    max_memory_used: u64,
    /// time of the last enqueue/dequeue (the xstats' "now")
    last_ns: u64,
    rng: ComponentRng,
    /// draws to use before the generator's (tests)
    #[cfg(test)]
    pub(crate) scripted: VecDeque<u32>,
    segs: Vec<PacketId>,
    stats: QdiscStats,
}

impl DualPi2 {
    pub fn new(spec: &DualPi2Spec, seed: u64, stream: &str, now_ns: u64) -> Result<Self, TcError> {
        let p = Params::defaults().apply(spec)?;
        Ok(DualPi2 {
            p,
            filters: spec.filters.clone().unwrap_or_default(),
            c: VecDeque::new(),
            l: VecDeque::new(),
            pi2: Pi2::default(),
            next_update: now_ns + p.tupdate as u64,
            c_head_ts: None,
            l_head_ts: None,
            credit: p.credit_init,
            packets_in_c: 0,
            packets_in_l: 0,
            maxq: 0,
            ecn_mark: 0,
            step_marks: 0,
            memory_used: 0,
            max_memory_used: 0,
            last_ns: now_ns,
            rng: ComponentRng::new(seed, stream),
            #[cfg(test)]
            scripted: VecDeque::new(),
            segs: Vec::new(),
            stats: QdiscStats::default(),
        })
    }

    pub fn pi2(&self) -> Pi2 {
        self.pi2
    }

    pub fn credit(&self) -> i32 {
        self.credit
    }

    /// (C, L) packets queued.
    pub fn queue_lens(&self) -> (usize, usize) {
        (self.c.len(), self.l.len())
    }

    /// Run the probability updates due at or before `now`.
    fn timers(&mut self, now: u64) {
        while self.next_update <= now {
            let t = self.next_update;
            let tupdate = self.p.tupdate.max(1) as u64;
            if self.pi2.prob == 0
                && self.pi2.last_qdelay == 0
                && self.c_head_ts.is_none()
                && self.l_head_ts.is_none()
            {
                // every update until `now` would leave p = 0, last_qdelay = 0
                self.next_update = t + ((now - t) / tupdate + 1) * tupdate;
                break;
            }
            let qc = self.c_head_ts.map_or(0, |h| t.saturating_sub(h));
            let ql = self.l_head_ts.map_or(0, |h| t.saturating_sub(h));
            self.pi2.prob = calculate_probability(
                &mut self.pi2,
                qc,
                ql,
                self.p.target,
                self.p.alpha,
                self.p.beta,
                self.p.drop_overload,
                self.p.coupling,
            );
            self.next_update = t + tupdate;
        }
    }

    /// `dualpi2_roll`: a uniform u32 at or below `prob`.
    fn roll(&mut self, prob: u32) -> bool {
        #[cfg(test)]
        if let Some(d) = self.scripted.pop_front() {
            return d <= prob;
        }
        self.rng.next_u32() <= prob
    }

    /// `dualpi2_mark`.
    fn mark(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> bool {
        if ctx.arena.get_mut(id).set_ce() {
            self.ecn_mark += 1;
            true
        } else {
            false
        }
    }

    /// `must_drop`: drop (true) or mark (as a side effect) by the PI2
    /// probability.
    fn must_drop(&mut self, ctx: &mut QdiscCtx, id: PacketId, class: Class, ect: u8) -> bool {
        if self.stats.backlog < 2 * MTU as u64 {
            return false;
        }
        let prob = self.pi2.prob;
        let local_l = prob as u64 * self.p.coupling as u64;
        let overload = local_l > MAX_PROB as u64;
        match class {
            Class::Classic => {
                if self.roll(prob) && self.roll(prob) {
                    if overload || ect == 0 {
                        return true;
                    }
                    self.mark(ctx, id);
                }
                false
            }
            Class::L4s => {
                if overload {
                    if !(self.p.drop_overload && self.roll(prob) && self.roll(prob)) {
                        self.mark(ctx, id);
                        return false;
                    }
                    return true;
                }
                if self.roll(local_l as u32) {
                    if ect == 0 {
                        return true;
                    }
                    self.mark(ctx, id);
                }
                false
            }
            Class::Llll => false,
        }
    }

    /// `dualpi2_skb_classify`.
    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> (Class, u8) {
        let p = ctx.arena.get(id);
        let ect = p.tos & ECN_MASK;
        if ect & self.p.ecn_mask != 0 {
            return (Class::L4s, ect);
        }
        let class = match classify::u32_flowid(&self.filters, p) {
            Some(1) => Class::L4s,
            Some(2) => Class::Llll,
            _ => Class::Classic,
        };
        (class, ect)
    }

    /// `dualpi2_enqueue_skb` for one packet (or segment).
    fn enqueue_one(
        &mut self,
        ctx: &mut QdiscCtx,
        id: PacketId,
        class: Class,
        ect: u8,
        now: u64,
    ) -> Verdict {
        let len = ctx.arena.len_of(id);
        let truesize = len as u64 + TRUESIZE_EXTRA;
        if self.stats.qlen >= self.p.limit as u64
            || self.memory_used + truesize > self.p.memory_limit as u64
        {
            self.stats.overlimits += 1;
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::QueueFull);
            return Verdict::Dropped(DropReason::QueueFull);
        }
        if self.p.drop_early && self.must_drop(ctx, id, class, ect) {
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::EarlyDrop);
            return Verdict::Dropped(DropReason::EarlyDrop);
        }
        self.memory_used += truesize;
        self.max_memory_used = self.max_memory_used.max(self.memory_used);
        self.maxq = self.maxq.max(self.stats.qlen.min(u32::MAX as u64) as u32);
        let mut e = Entry {
            id,
            ts: now,
            len,
            class,
            ect,
            apply_step: false,
        };
        if class == Class::Classic {
            self.packets_in_c = self.packets_in_c.wrapping_add(1);
            self.c_head_ts.get_or_insert(now);
            self.c.push_back(e);
        } else {
            e.apply_step =
                class == Class::L4s && self.l.len() as u64 >= self.p.min_qlen_step as u64;
            self.packets_in_l = self.packets_in_l.wrapping_add(1);
            self.l_head_ts.get_or_insert(now);
            self.l.push_back(e);
        }
        self.stats.queued(len);
        Verdict::Queued
    }

    /// `dequeue_packet`: the WRR pick; the credit change to apply if the
    /// packet is sent. `None` (and the credit reset) when both are empty.
    fn dequeue_packet(&mut self) -> Option<(Entry, i32)> {
        let (c_len, l_len) = (self.c.len(), self.l.len());
        let (e, change) = if l_len > 0 && (c_len == 0 || self.credit <= 0) {
            let e = self.l.pop_front().expect("L queue not empty");
            self.l_head_ts = self.l.front().map(|h| h.ts);
            (e, if c_len > 0 { self.p.wc as i32 } else { 0 })
        } else if c_len > 0 {
            let e = self.c.pop_front().expect("C queue not empty");
            self.c_head_ts = self.c.front().map(|h| h.ts);
            (e, if l_len > 0 { -(self.p.wl as i32) } else { 0 })
        } else {
            self.credit = self.p.credit_init;
            return None;
        };
        self.memory_used -= e.len as u64 + TRUESIZE_EXTRA;
        self.stats.unqueued(e.len);
        Some((e, change * e.len as i32))
    }

    /// `do_step_aqm`: true = drop this (non-ECT) L packet.
    fn step_aqm(&mut self, ctx: &mut QdiscCtx, e: &Entry, now: u64) -> bool {
        let qdelay = if self.p.step_in_packets {
            self.l.len() as u64
        } else {
            now - e.ts
        };
        if e.apply_step && qdelay > self.p.step_thresh as u64 {
            if e.ect == 0 {
                return true;
            }
            if self.mark(ctx, e.id) {
                self.step_marks = self.step_marks.wrapping_add(1);
            }
        }
        false
    }

    fn drop_entry(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, e: &Entry) {
        self.stats.dropped();
        reduce.left(1, e.len as u64, 1);
        ctx.drop_packet(e.id, DropReason::EarlyDrop);
    }

    fn free_all(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut purged = Purged::default();
        for e in self.c.drain(..).chain(self.l.drain(..)) {
            purged.add(Purged {
                packets: 1,
                bytes: e.len as u64,
            });
            ctx.drop_packet(e.id, DropReason::Purged);
        }
        purged
    }
}

impl Qdisc for DualPi2 {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Dualpi2(s) = spec else {
            return None;
        };
        Some(DualPi2::new(s, env.seed, env.stream, env.now.as_nanos()).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "dualpi2"
    }

    /// `dualpi2_qdisc_enqueue`.
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        let now = ctx.now.as_nanos();
        self.timers(now);
        self.last_ns = now;
        let (class, ect) = self.classify(ctx, id);
        if !(self.p.split_gso && ctx.arena.get(id).is_gso()) {
            return self.enqueue_one(ctx, id, class, ect, now);
        }
        let orig_len = ctx.arena.len_of(id) as u64;
        let mut segs = std::mem::take(&mut self.segs);
        ctx.arena.segment(id, &mut segs);
        let (mut cnt, mut bytes) = (0u64, 0u64);
        let mut last = Verdict::Queued;
        for &s in &segs {
            let len = ctx.arena.len_of(s) as u64;
            last = self.enqueue_one(ctx, s, class, ect, now);
            if last == Verdict::Queued {
                cnt += 1;
                bytes += len;
            }
        }
        segs.clear();
        self.segs = segs;
        if cnt == 0 {
            return last;
        }
        reduce.grew(cnt - 1);
        reduce.left(0, orig_len - bytes, 0);
        Verdict::Queued
    }

    /// `dualpi2_qdisc_dequeue`: drops at dequeue go to the ancestors at once.
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        let now = ctx.now.as_nanos();
        self.timers(now);
        self.last_ns = now;
        while let Some((e, change)) = self.dequeue_packet() {
            if !self.p.drop_early && self.must_drop(ctx, e.id, e.class, e.ect) {
                self.drop_entry(ctx, reduce, &e);
                continue;
            }
            if e.class != Class::Classic && self.step_aqm(ctx, &e, now) {
                self.drop_entry(ctx, reduce, &e);
                continue;
            }
            self.credit = self.credit.wrapping_add(change);
            self.stats.sent(e.len, ctx.arena.segs_of(e.id));
            return Some(e.id);
        }
        None
    }

    /// `dualpi2_reset`.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let purged = self.free_all(ctx);
        self.c_head_ts = None;
        self.l_head_ts = None;
        self.pi2.prob = 0;
        self.packets_in_c = 0;
        self.packets_in_l = 0;
        self.maxq = 0;
        self.ecn_mark = 0;
        self.step_marks = 0;
        self.memory_used = 0;
        self.max_memory_used = 0;
        self.credit = self.p.credit_init;
        purged
    }

    /// `dualpi2_change`.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Dualpi2(spec) = spec else {
            return Err(wrong_kind());
        };
        // `tc qdisc change … dualpi2` without options sends an empty nest;
        // a request that carries filters only changes those (`tc filter` is
        // class_api/'s, on `Qdisc::filters`)
        let attrs = DualPi2Spec {
            filters: None,
            ..spec.clone()
        };
        if spec.filters.is_none() && attrs == DualPi2Spec::default() {
            return Err(TcError::Invalid(
                "sch_dualpi2: Dualpi2 options are required".into(),
            ));
        }
        self.p = self.p.apply(spec)?;
        if let Some(f) = &spec.filters {
            self.filters = f.clone();
        }
        let mut purged = Purged::default();
        while self.stats.qlen > self.p.limit as u64 || self.memory_used > self.p.memory_limit as u64
        {
            // the C head first; like the kernel, the C head timestamp is
            // left as it was (the next dequeue refreshes it)
            let e = match self.c.pop_front() {
                Some(e) => e,
                None => match self.l.pop_front() {
                    Some(e) => {
                        self.l_head_ts = self.l.front().map(|h| h.ts);
                        e
                    }
                    None => break,
                },
            };
            self.memory_used -= e.len as u64 + TRUESIZE_EXTRA;
            self.stats.unqueued(e.len);
            self.stats.dropped();
            purged.add(Purged {
                packets: 1,
                bytes: e.len as u64,
            });
            ctx.drop_packet(e.id, DropReason::Purged);
        }
        Ok(Changed {
            purged,
            child: ChildChange::Keep,
        })
    }

    crate::qdisc::ops::own_stats!();

    /// `dualpi2_dump`: every attribute, in the spec's shape.
    fn filters(&mut self) -> Option<&mut Vec<U32Filter>> {
        Some(&mut self.filters)
    }

    fn options(&self) -> serde_json::Value {
        let p = &self.p;
        let (pkts, us) = if p.step_in_packets {
            (Some(p.step_thresh), None)
        } else {
            (None, Some(ns_to_us_u32(p.step_thresh as u64)))
        };
        json!({
            "kind": "dualpi2",
            "limit": p.limit,
            "memlimit": p.memory_limit,
            "target": ns_to_us_u32(p.target),
            "tupdate": ns_to_us_u32(p.tupdate as u64),
            "alpha": unscale_alpha_beta(p.alpha),
            "beta": unscale_alpha_beta(p.beta),
            "step_thresh_pkts": pkts,
            "step_thresh_us": us,
            "min_qlen_step": p.min_qlen_step,
            "coupling": p.coupling,
            "drop_overload": p.drop_overload,
            "drop_early": p.drop_early,
            "c_protection": p.wc,
            "ecn_mask": p.ecn_mask,
            "split_gso": p.split_gso,
            "filters": self.filters,
        })
    }

    /// `dualpi2_dump_stats` (`struct tc_dualpi2_xstats`).
    fn xstats(&self) -> serde_json::Value {
        let delay = |h: Option<u64>| ns_to_us_u32(h.map_or(0, |h| self.last_ns.saturating_sub(h)));
        json!({
            "prob": self.pi2.prob,
            "delay_c": delay(self.c_head_ts),
            "delay_l": delay(self.l_head_ts),
            "packets_in_c": self.packets_in_c,
            "packets_in_l": self.packets_in_l,
            "maxq": self.maxq,
            "ecn_mark": self.ecn_mark,
            "step_marks": self.step_marks,
            "credit": self.credit,
            "memory_used": self.memory_used.min(u32::MAX as u64),
            "max_memory_used": self.max_memory_used.min(u32::MAX as u64),
            "memory_limit": self.p.memory_limit,
        })
    }

    fn held(&self) -> u64 {
        (self.c.len() + self.l.len()) as u64
    }
}

#[cfg(test)]
mod tests;
