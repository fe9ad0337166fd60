//! `sfb` — Stochastic Fair Blue as Linux implements it (docs/semantics/qdiscs.md §6.2;
//! semantics read from Linux net/sched/sch_sfb.c, parameters as iproute2's
//! tc/q_sfb.c fills them in).
//!
//! Two sets of 8 levels × 16 bins; each bin is a virtual queue length and a
//! BLUE marking probability (Q0.16). A packet's 32-bit flow hash, perturbed
//! per set, picks one bin per level (nibble i for level i). On every arrival
//! the bins on its path move: down by `decrement` if empty, up by `increment`
//! if at least `target` long. The packet's fate uses the minimum over its
//! path: all bins ≥ `max` → bucket drop; probability saturated → the shared
//! penalty-box token bucket; otherwise BLUE's random test (drop, or ECN mark
//! when the probability is not above one half).
//!
//! Rehashing: when `rehash` has passed, the active set's perturbation is
//! redrawn (its bins are kept) and the other set becomes active. During the
//! last `db` before a switch only packets of penalty-boxed flows are also
//! hashed into the standby set — as the source codes it.
//!
//! Time is kept in jiffies at HZ = 250 (rehash/db go through
//! `msecs_to_jiffies`, which rounds up; the penalty bucket refills by whole
//! jiffies and only when empty, restarting its clock at every look).
//!
//! The real queue is the single child (an anonymous pfifo(limit), re-created
//! and purged on every change, see tree/). The two hashes a packet was
//! counted under live in a side table indexed by packet id, Linux's skb
//! control block.

use super::fifo::Fifo;
use super::ops::{
    absorbing, wrong_kind, BuildEnv, Built, Changed, ChildChange, Peeked, Purged, Qdisc, Reduce,
};
use super::spec::{QdiscSpec, SfbSpec};
use super::tree::{self, Node};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::{Packet, PacketId};
use crate::rng::ComponentRng;
use crate::time::SimTime;
use serde::Serialize;
use serde_json::json;

pub const LEVELS: usize = 8;
pub const BUCKETS: usize = 16;
/// `SFB_MAX_PROB`: probability 1 in Q0.16.
pub const MAX_PROB: u32 = 0xFFFF;
/// One jiffy at HZ = 250, ns.
pub const JIFFY_NS: u64 = 4_000_000;
const HZ: u64 = 250;

/// `msecs_to_jiffies` at HZ = 250 (rounds up).
pub fn msecs_to_jiffies(ms: u32) -> u64 {
    (ms as u64).div_ceil(1000 / HZ)
}

/// `jiffies_to_msecs`, an `unsigned int` in the kernel (wraps).
pub fn jiffies_to_msecs(j: u64) -> u32 {
    (j * (1000 / HZ)) as u32
}

/// One bin: a virtual queue (`qlen`, saturating u16) and `p_mark`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    pub qlen: u16,
    pub p: u16,
}

/// One set of bins with its hash perturbation.
#[derive(Clone, Debug, Default)]
pub struct Bins {
    pub perturbation: u32,
    pub b: [[Bucket; BUCKETS]; LEVELS],
}

/// `struct tc_sfb_xstats` counters kept by the qdisc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SfbXstats {
    pub earlydrop: u64,
    pub penaltydrop: u64,
    pub bucketdrop: u64,
    pub queuedrop: u64,
    pub childdrop: u64,
    pub marked: u64,
}

#[derive(Debug)]
pub struct Sfb {
    spec: SfbSpec,
    /// effective limit (0 in the spec = txqueuelen)
    limit: u32,
    rehash_j: u64,
    warmup_j: u64,
    rehash_time: u64,
    token_time: u64,
    tokens: u32,
    slot: usize,
    double_buffering: bool,
    bins: [Bins; 2],
    /// per packet id: its hash in set 0 and set 1 (0 = not counted there)
    cb: Vec<[u32; 2]>,
    rng: ComponentRng,
    /// Fixed 16-bit draws for unit tests, consumed before the stream.
    #[cfg(test)]
    pub(crate) scripted: std::collections::VecDeque<u16>,
    xs: SfbXstats,
    stats: QdiscStats,
}

/// SIM flow hash (Linux: flow dissector + keyed hash): the 5-tuple mixed
/// with the set's perturbation; never 0 (0 means "not hashed").
pub fn flow_hash(p: &Packet, perturbation: u32) -> u32 {
    let mut h = (perturbation as u64) << 32 | 0x5fb0_c0de;
    h ^= ((p.src.0 as u64) << 32 | p.dst.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h = h.rotate_left(29);
    h ^= ((p.src_port as u64) << 24 | (p.dst_port as u64) << 8 | p.proto as u64)
        .wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    ((h >> 32) as u32).max(1)
}

fn jiffies(now: SimTime) -> u64 {
    now.as_nanos() / JIFFY_NS
}

impl Sfb {
    /// `sfb_init` → `sfb_change` (the tree builds the pfifo child).
    pub fn new(spec: &SfbSpec, seed: u64, stream: &str, now: SimTime) -> Sfb {
        let mut s = Sfb {
            spec: spec.clone(),
            limit: 0,
            rehash_j: 0,
            warmup_j: 0,
            rehash_time: 0,
            token_time: 0,
            tokens: 0,
            slot: 0,
            double_buffering: false,
            bins: Default::default(),
            cb: Vec::new(),
            rng: ComponentRng::new(seed, stream),
            #[cfg(test)]
            scripted: Default::default(),
            xs: SfbXstats::default(),
            stats: QdiscStats::default(),
        };
        s.change(spec, now);
        s
    }

    /// `sfb_change` for SFB's own state (the tree swaps in the new child):
    /// parameters, timers and a full token bucket; all bins zeroed, set 0
    /// active, both perturbations redrawn. Counters are kept.
    pub fn change(&mut self, spec: &SfbSpec, now: SimTime) {
        let j = jiffies(now);
        self.spec = spec.clone();
        self.limit = effective_limit(spec);
        self.rehash_j = msecs_to_jiffies(spec.rehash);
        self.warmup_j = msecs_to_jiffies(spec.db);
        self.rehash_time = j;
        self.tokens = spec.penalty_burst;
        self.token_time = j;
        self.slot = 0;
        self.double_buffering = false;
        self.bins = Default::default();
        self.bins[0].perturbation = self.rng.next_u32();
        self.bins[1].perturbation = self.rng.next_u32();
        self.cb.clear();
    }

    fn draw_u16(&mut self) -> u32 {
        #[cfg(test)]
        if let Some(d) = self.scripted.pop_front() {
            return d as u32;
        }
        self.rng.next_u32() >> 16
    }

    /// `sfb_swap_slot`: the retiring set gets a fresh perturbation.
    fn swap_slot(&mut self) {
        self.bins[self.slot].perturbation = self.rng.next_u32();
        self.slot ^= 1;
        self.double_buffering = false;
    }

    /// Rehash / double-buffering clock, run at every arrival that passes
    /// the limit check (`time_after` comparisons on jiffies).
    fn tick(&mut self, j: u64) {
        if self.rehash_j == 0 {
            return;
        }
        let limit = self.rehash_time + self.rehash_j;
        if j > limit {
            self.swap_slot();
            self.rehash_time = j;
        } else if !self.double_buffering
            && self.warmup_j > 0
            && (j as i128) > limit as i128 - self.warmup_j as i128
        {
            self.double_buffering = true;
        }
    }

    /// Move the bins on `hash`'s path in `slot`; returns (min qlen, min p).
    fn update_path(&mut self, slot: usize, mut hash: u32) -> (u32, u32) {
        let (inc, dec, target) = (self.spec.increment, self.spec.decrement, self.spec.target);
        let (mut minq, mut pmin) = (u32::MAX, u32::MAX);
        for level in &mut self.bins[slot].b {
            let b = &mut level[(hash & 0xF) as usize];
            hash >>= 4;
            if b.qlen == 0 {
                b.p = (b.p as u32).saturating_sub(dec) as u16;
            } else if b.qlen as u32 >= target {
                b.p = (b.p as u32).saturating_add(inc).min(MAX_PROB) as u16;
            }
            minq = minq.min(b.qlen as u32);
            pmin = pmin.min(b.p as u32);
        }
        (minq, pmin)
    }

    /// Add `delta` (±1) to every bin on the stored path(s) of a packet.
    fn count(&mut self, hashes: [u32; 2], up: bool) {
        for (slot, &h) in hashes.iter().enumerate() {
            if h == 0 {
                continue;
            }
            let mut hash = h;
            for level in &mut self.bins[slot].b {
                let b = &mut level[(hash & 0xF) as usize];
                hash >>= 4;
                b.qlen = if up {
                    b.qlen.saturating_add(1)
                } else {
                    b.qlen.saturating_sub(1)
                };
            }
        }
    }

    /// `sfb_rate_limit`: true = no token, drop. The bucket refills only
    /// when empty, by whole jiffies since the last look (≤ 10 s), and that
    /// look restarts the clock even when it yields nothing.
    fn rate_limited(&mut self, j: u64) -> bool {
        let (rate, burst) = (self.spec.penalty_rate, self.spec.penalty_burst);
        if rate == 0 || burst == 0 {
            return true;
        }
        if self.tokens < 1 {
            let age = (10 * HZ).min(j.saturating_sub(self.token_time));
            self.tokens = ((age * rate as u64) / HZ).min(burst as u64) as u32;
            self.token_time = j;
            if self.tokens < 1 {
                return true;
            }
        }
        self.tokens -= 1;
        false
    }

    fn drop(&mut self, ctx: &mut QdiscCtx, id: PacketId, reason: DropReason) -> Verdict {
        self.stats.dropped();
        ctx.drop_packet(id, reason);
        Verdict::Dropped(reason)
    }

    fn cb_mut(&mut self, id: PacketId) -> &mut [u32; 2] {
        let i = id.0 as usize;
        if i >= self.cb.len() {
            self.cb.resize(i + 1, [0, 0]);
        }
        &mut self.cb[i]
    }

    /// `sfb_enqueue`.
    pub fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        child: &mut [Node],
    ) -> Verdict {
        if self.stats.qlen >= self.limit as u64 {
            self.stats.overlimits += 1;
            self.xs.queuedrop += 1;
            return self.drop(ctx, id, DropReason::QueueFull);
        }
        let j = jiffies(ctx.now);
        self.tick(j);
        let slot = self.slot;
        let pkt = *ctx.arena.get(id);
        let h = flow_hash(&pkt, self.bins[slot].perturbation);
        let mut hashes = [0u32; 2];
        hashes[slot] = h;
        let (minq, pmin) = self.update_path(slot, h);
        if minq >= self.spec.max {
            self.stats.overlimits += 1;
            self.xs.bucketdrop += 1;
            return self.drop(ctx, id, DropReason::ForcedDrop);
        }
        if pmin >= MAX_PROB {
            // Inelastic flow: penalty box (and warm the standby set up).
            if self.double_buffering {
                let other = slot ^ 1;
                let h2 = flow_hash(&pkt, self.bins[other].perturbation);
                hashes[other] = h2;
                self.update_path(other, h2);
            }
            if self.rate_limited(j) {
                self.stats.overlimits += 1;
                self.xs.penaltydrop += 1;
                return self.drop(ctx, id, DropReason::ForcedDrop);
            }
        } else {
            let r = self.draw_u16();
            if r < pmin {
                // Above one half, drop with probability 2(p − ½) even if ECN-capable.
                if pmin > MAX_PROB / 2 && r < (pmin - MAX_PROB / 2) * 2 {
                    self.xs.earlydrop += 1;
                    return self.drop(ctx, id, DropReason::EarlyDrop);
                }
                if ctx.arena.get_mut(id).set_ce() {
                    self.xs.marked += 1;
                } else {
                    self.xs.earlydrop += 1;
                    return self.drop(ctx, id, DropReason::EarlyDrop);
                }
            }
        }
        let len = pkt.len;
        let v = if child.is_empty() {
            ctx.drop_packet(id, DropReason::Blackhole);
            Verdict::Dropped(DropReason::Blackhole)
        } else {
            absorbing(self, reduce, |reduce| {
                tree::enqueue_chain(child, ctx, reduce, id)
            })
        };
        match v {
            Verdict::Queued => {
                *self.cb_mut(id) = hashes;
                self.stats.queued(len);
                self.count(hashes, true);
            }
            Verdict::Dropped(_) => {
                self.xs.childdrop += 1;
                self.stats.dropped();
            }
        }
        v
    }

    /// `sfb_dequeue`: take from the child, un-count the packet's bins.
    pub fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        child: &mut [Node],
    ) -> Option<PacketId> {
        let p = absorbing(self, reduce, |reduce| {
            tree::dequeue_chain(child, ctx, reduce)
        });
        let id = p?;
        let len = ctx.arena.len_of(id);
        self.stats.unqueued(len);
        self.stats.sent(len, ctx.arena.segs_of(id));
        let hashes = std::mem::take(self.cb_mut(id));
        self.count(hashes, false);
        Some(id)
    }

    pub fn spec(&self) -> &SfbSpec {
        &self.spec
    }

    pub fn bins(&self) -> &[Bins; 2] {
        &self.bins
    }

    pub fn active_slot(&self) -> usize {
        self.slot
    }

    pub fn double_buffering(&self) -> bool {
        self.double_buffering
    }

    pub fn xstats_raw(&self) -> &SfbXstats {
        &self.xs
    }
}

impl Qdisc for Sfb {
    /// `sfb_init`, with its default pfifo child.
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Sfb(s) = spec else {
            return None;
        };
        Some(Ok(Built {
            qdisc: Sfb::new(s, env.seed, env.stream, env.now),
            default_child: Some(default_child(s).into()),
        }))
    }

    fn kind(&self) -> &'static str {
        "sfb"
    }

    crate::qdisc::ops::forward_queue_ops!(chained Sfb);

    /// sfb's peek is its child's own peek.
    fn peek(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, child: &mut [Node]) -> Peeked {
        Peeked::Head(absorbing(self, reduce, |reduce| {
            tree::peek_chain(child, ctx, reduce)
        }))
    }

    /// `sfb_reset` (the tree purges the child): bins and perturbations
    /// zeroed, set 0 active with a fresh perturbation.
    fn reset(&mut self, _ctx: &mut QdiscCtx) -> Purged {
        self.stats.qlen = 0;
        self.stats.backlog = 0;
        self.slot = 0;
        self.double_buffering = false;
        // the memset also clears set 1's perturbation; only set 0 is redrawn
        self.bins = Default::default();
        self.bins[0].perturbation = self.rng.next_u32();
        self.cb.clear();
        Purged::default()
    }

    /// `sfb_change`: a new default pfifo always replaces (and purges) the
    /// child, whatever was grafted there.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Sfb(s) = spec else {
            return Err(wrong_kind());
        };
        Sfb::change(self, s, ctx.now);
        Ok(Changed {
            purged: Purged::default(),
            child: ChildChange::Replace(Box::new(default_child(s).into())),
        })
    }

    crate::qdisc::ops::own_stats!();

    /// Options as `sfb_dump` reports them: times back from jiffies, the
    /// effective limit.
    fn options(&self) -> serde_json::Value {
        let s = &self.spec;
        json!({
            "rehash": jiffies_to_msecs(self.rehash_j),
            "db": jiffies_to_msecs(self.warmup_j),
            "limit": self.limit,
            "max": s.max,
            "target": s.target,
            "increment": s.increment,
            "decrement": s.decrement,
            "penalty_rate": s.penalty_rate,
            "penalty_burst": s.penalty_burst,
        })
    }

    /// `sfb_dump_stats`: the counters, then the largest bin length, the
    /// largest and the mean (integer) probability of the active set.
    fn xstats(&self) -> serde_json::Value {
        let (mut maxq, mut maxp, mut total) = (0u32, 0u32, 0u32);
        for b in self.bins[self.slot].b.iter().flatten() {
            maxq = maxq.max(b.qlen as u32);
            maxp = maxp.max(b.p as u32);
            total += b.p as u32;
        }
        let x = &self.xs;
        json!({
            "earlydrop": x.earlydrop,
            "penaltydrop": x.penaltydrop,
            "bucketdrop": x.bucketdrop,
            "queuedrop": x.queuedrop,
            "childdrop": x.childdrop,
            "marked": x.marked,
            "maxqlen": maxq,
            "maxprob": maxp,
            "avgprob": total / (LEVELS * BUCKETS) as u32,
        })
    }

    fn held(&self) -> u64 {
        0
    }

    fn classful(&self) -> bool {
        true
    }
}

/// sfb's default child: pfifo(limit), txqueuelen when `limit` is 0.
fn default_child(spec: &SfbSpec) -> Fifo {
    Fifo::from_spec(&QdiscSpec::Pfifo {
        limit: Some(effective_limit(spec)),
    })
    .expect("pfifo is a fifo")
}

/// The child's limit: `limit`, or the device's txqueuelen when 0.
pub fn effective_limit(spec: &SfbSpec) -> u32 {
    if spec.limit == 0 {
        super::fifo::TXQUEUELEN
    } else {
        spec.limit
    }
}

#[cfg(test)]
mod tests;
