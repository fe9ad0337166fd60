//! Size: sch_netem.c's per-packet path in one file (its order fixes the counters and
//! which random draws each decision takes, below); the distribution tables are netem/dist.rs.
//!
//! `netem` — network emulator (docs/semantics/qdiscs.md §4; Linux net/sched/sch_netem.c as
//! of 5.2 for \[lab2019\] and 6.x for \[modern\], iproute2 netem/*.c tables).
//!
//! Per packet, in the kernel's order (the order fixes both the counters and
//! which random draws each decision consumes):
//! duplicate? → loss (random / 4-state / Gilbert-Elliott; `ecn` marks instead)
//! → [lab2019: clone re-enqueued at the root] → corrupt → limit
//! → [modern: clone re-enqueued at the root] → reorder-or-delay.
//! Delayed packets wait in a delay line sorted by `time_to_send` (equal times
//! keep arrival order, as the kernel's rbtree insert does); `rate` serialises
//! them behind the last queued packet. Reordered packets go to the head of an
//! immediate queue and leave first (`requeues += 1`).
//!
//! Dequeue hands out the immediate queue first, then every due packet of the
//! delay line — straight up when there is no child, or moved into the child
//! all at once (the child then shapes them: Lab 14's tbf). \[lab2019\] netem's
//! qlen/backlog/limit count only what is inside netem itself; \[modern\] the
//! limit counts the delay line (`t_len`) and qlen/backlog include the child.
//! When nothing is due, netem asks its child for a packet, arms its watchdog
//! for the head's `time_to_send`, and then — as `netem_dequeue` does — asks
//! the child once more, so a throttled tbf child counts two `overlimits` per
//! such attempt (the pseudo-code of docs/semantics/qdiscs.md §4.5 shows only one call).
//!
//! Randomness: one stream per netem (`ComponentRng`), standing in for the
//! kernel's `prandom_u32()` (\[lab2019\]) / per-qdisc PRNG (\[modern\], reseeded
//! on every change). Only distributions can match Linux (docs/semantics/qdiscs.md P21).
//! `crandom` correlation, `tabledist`, the loss chains and the 32-bit
//! probability comparisons are the kernel's integer arithmetic.
//!
//! Deviations, all for consistent accounting in corner cases the labs never
//! reach: a duplicate made by a netem that is not the root is re-enqueued at
//! the root after the original (through `QdiscCtx::reinject`), not before it;
//! when the original is then dropped by the limit we report the drop to the
//! parent (Linux 5.x reports success there and leaks a parent qlen); jitter
//! is capped at 2³¹−1 ns in both profiles (5.x truncated it to 32 bits); a
//! `time_to_send` before time zero is clamped to zero; corruption sets
//! `Packet::corrupt` instead of flipping a bit (no draws consumed); \[lab2019\]
//! netem ignores qlen/backlog reductions reported from its child (it never
//! counted those packets; Linux subtracted them anyway). GSO segmentation is
//! not modelled.

pub mod dist;

use super::ops::{absorbing, wrong_kind, BuildEnv, Built, Changed, Purged, Qdisc, Reduce};
use super::spec::QdiscSpec;
use super::spec::{NetemDistribution, NetemLoss, NetemRate, NetemSlot, NetemSpec};
use super::tree::{self, Node};
use super::AnyQdisc;
use super::{DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::{PacketId, PREFETCH_AHEAD};
use crate::rng::ComponentRng;
use crate::time::SimTime;
use std::collections::VecDeque;

/// Correlated uniform source (`struct crndstate`, `get_crandom`).
///
/// With `rho ≠ 0` each output is a moving average of the fresh draw and the
/// previous output, `(v·(2³²−w) + last·w) >> 32` with `w = rho + 1`: not a
/// true correlation, and its marginal is no longer uniform (docs/semantics/qdiscs.md §4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Crandom {
    pub rho: u32,
    pub last: u32,
}

impl Crandom {
    /// The correlated value given the fresh uniform draw `v`.
    #[inline]
    pub fn apply(&mut self, v: u32) -> u32 {
        if self.rho == 0 {
            return v;
        }
        let w = self.rho as u64 + 1;
        // ≤ (2³²−1)·2³², so the sum never overflows 64 bits.
        let answer = ((v as u64 * ((1u64 << 32) - w) + self.last as u64 * w) >> 32) as u32;
        self.last = answer;
        answer
    }
}

/// The random loss decision: lost iff `p ≠ 0 and p ≥ draw`, so
/// P(lost) = (p+1)/2³² (docs/semantics/qdiscs.md §4.3, P12).
#[inline]
pub fn random_loss(p: u32, draw: u32) -> bool {
    p != 0 && p >= draw
}

/// `tabledist` for `sigma > 0` given the (correlated) draw `rnd`: uniform on
/// [mu−σ, mu+σ) without a table, else `mu + σ·table[rnd mod N]/8192` with the
/// kernel's split rounding. Integer division truncates toward zero, as in C.
pub fn tabledist(mu: i64, sigma: i32, rnd: u32, table: Option<&[i16]>) -> i64 {
    let sigma = sigma as i64;
    match table {
        None => (rnd as i64 % (2 * sigma)).saturating_add(mu) - sigma,
        Some(t) if !t.is_empty() => {
            let t = t[rnd as usize % t.len()] as i64;
            let scale = dist::DIST_SCALE;
            let mut x = (sigma % scale) * t;
            if x >= 0 {
                x += scale / 2;
            } else {
                x -= scale / 2;
            }
            (x / scale + (sigma / scale) * t).saturating_add(mu)
        }
        Some(_) => mu,
    }
}

/// Loss model state (`loss_model` + `struct clgstate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loss {
    /// `loss random P` (also no loss: P = 0): uses `loss` and `loss_cor`.
    Random,
    /// 4-state Markov chain (GI model). `state` 1..=4 as in docs/semantics/qdiscs.md §4.3.
    State {
        p13: u32,
        p31: u32,
        p32: u32,
        p23: u32,
        p14: u32,
        state: u8,
    },
    /// Gilbert-Elliott.
    Gemodel {
        p: u32,
        r: u32,
        h: u32,
        k1: u32,
        bad: bool,
    },
}

/// One step of the 4-state chain (`loss_4state`) on draw `r`; returns
/// (next state, lost). Comparisons are u32, sums wrap as in C; a draw equal
/// to a boundary changes nothing and loses nothing.
pub fn step_4state(
    state: u8,
    r: u32,
    p13: u32,
    p31: u32,
    p32: u32,
    p23: u32,
    p14: u32,
) -> (u8, bool) {
    match state {
        1 => {
            if r < p14 {
                (4, true)
            } else if p14 < r && r < p13.wrapping_add(p14) {
                (3, true)
            } else {
                (1, false)
            }
        }
        2 => {
            if r < p23 {
                (3, true)
            } else {
                (2, false)
            }
        }
        3 => {
            if r < p32 {
                (2, false)
            } else if p32 < r && r < p31.wrapping_add(p32) {
                (1, false)
            } else if p31.wrapping_add(p32) < r {
                (3, true)
            } else {
                (3, false)
            }
        }
        _ => (1, false),
    }
}

/// One step of Gilbert-Elliott (`loss_gilb_ell`): the transition draw, then
/// the loss draw tested against the state the packet arrived in.
pub fn step_gemodel(
    bad: bool,
    transition: u32,
    loss_draw: u32,
    p: u32,
    r: u32,
    h: u32,
    k1: u32,
) -> (bool, bool) {
    if !bad {
        (transition < p, loss_draw < k1)
    } else {
        (transition >= r, loss_draw > h)
    }
}

/// `slot` configuration and state (`tc_netem_slot`, `struct slotstate`).
#[derive(Clone, Debug)]
struct Slot {
    min: i64,
    max: i64,
    /// `slot distribution`: (table, delay, jitter)
    dist: Option<(Option<&'static [i16]>, i64, i32)>,
    max_packets: i32,
    max_bytes: i32,
    next: u64,
    packets_left: i32,
    bytes_left: i32,
}

/// Where the draws come from: the component stream, or a script in tests.
#[derive(Debug)]
enum Draws {
    Stream(ComponentRng),
    #[cfg(test)]
    Script(VecDeque<u32>),
}

impl Draws {
    #[inline]
    fn next_u32(&mut self) -> u32 {
        match self {
            Draws::Stream(r) => r.next_u32(),
            #[cfg(test)]
            Draws::Script(s) => s.pop_front().expect("netem test script exhausted"),
        }
    }
}

/// Behaviour switches from the profile (docs/semantics/qdiscs.md §11).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetemEnv {
    /// \[modern\] limit on the delay line only, qlen/backlog include the child.
    pub modern_accounting: bool,
    /// \[modern\] duplicates re-enqueued after the limit check.
    pub dup_after_limit: bool,
}

/// The netem qdisc.
#[derive(Debug)]
pub struct Netem {
    /// Effective options, including the fields kept across `change` (§4.8).
    spec: NetemSpec,
    limit: u32,
    /// ns
    latency: i64,
    /// ns, capped at 2³¹−1
    jitter: i32,
    /// random-loss probability (u32 fraction)
    loss: u32,
    loss_model: Loss,
    gap: u32,
    counter: u32,
    duplicate: u32,
    reorder: u32,
    corrupt: u32,
    rate: NetemRate,
    ecn: bool,
    slot: Option<Slot>,
    table: Option<&'static [i16]>,
    delay_cor: Crandom,
    loss_cor: Crandom,
    dup_cor: Crandom,
    reorder_cor: Crandom,
    corrupt_cor: Crandom,
    draws: Draws,
    /// RNG stream name and how many times it was reseeded (\[modern\]).
    stream: String,
    seed: u64,
    reseeds: u32,
    /// The delay line ("tfifo"), sorted by time_to_send (ns).
    tfifo: VecDeque<(u64, PacketId)>,
    /// Reordered packets, sent before anything else; new ones at the front.
    immediate: VecDeque<(u64, PacketId)>,
    stats: QdiscStats,
    env: NetemEnv,
    /// Set by the tree: this netem is the device's root qdisc.
    pub(crate) at_root: bool,
    /// Duplicates this netem handed to `ctx.reinject`; they must not be
    /// duplicated again when they come back through this netem.
    own_clones: Vec<PacketId>,
}

impl Netem {
    /// `netem_init`: a zeroed qdisc configured by `spec`. `stream` names the
    /// RNG stream (unique per netem of the run).
    pub fn new(
        spec: &NetemSpec,
        seed: u64,
        stream: String,
        env: NetemEnv,
        now: SimTime,
    ) -> Result<Netem, TcError> {
        let mut q = Netem {
            spec: spec.clone(),
            limit: 0,
            latency: 0,
            jitter: 0,
            loss: 0,
            loss_model: Loss::Random,
            gap: 0,
            counter: 0,
            duplicate: 0,
            reorder: 0,
            corrupt: 0,
            rate: NetemRate::default(),
            ecn: false,
            slot: None,
            table: None,
            delay_cor: Crandom::default(),
            loss_cor: Crandom::default(),
            dup_cor: Crandom::default(),
            reorder_cor: Crandom::default(),
            corrupt_cor: Crandom::default(),
            draws: Draws::Stream(ComponentRng::new(seed, &stream)),
            stream,
            seed,
            reseeds: 0,
            tfifo: VecDeque::new(),
            immediate: VecDeque::new(),
            stats: QdiscStats::default(),
            env,
            at_root: false,
            own_clones: Vec::new(),
        };
        q.configure(spec, now, true)?;
        Ok(q)
    }

    /// Checks the kernel or `tc` would make, in the user's words.
    fn validate(spec: &NetemSpec) -> Result<(), TcError> {
        if let Some(s) = &spec.slot {
            if s.max_delay < s.min_delay {
                return Err(TcError::Invalid(format!(
                    "netem: slot MAX ({} ns) must not be smaller than MIN ({} ns)",
                    s.max_delay, s.min_delay
                )));
            }
        }
        if spec.gap > 0 && spec.latency == 0 {
            return Err(TcError::Invalid(
                "netem: reordering not possible without specifying some delay".into(),
            ));
        }
        Ok(())
    }

    /// `netem_change` (also the tail of init): the fixed block is replaced,
    /// the optional attributes only when present (§4.8).
    fn configure(&mut self, spec: &NetemSpec, now: SimTime, first: bool) -> Result<(), TcError> {
        Self::validate(spec)?;
        self.loss_model = match spec.loss {
            NetemLoss::Random { .. } => Loss::Random,
            NetemLoss::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => Loss::State {
                p13,
                p31,
                p32,
                p23,
                p14,
                state: 1,
            },
            NetemLoss::Gemodel { p, r, h, k1 } => Loss::Gemodel {
                p,
                r,
                h,
                k1,
                bad: false,
            },
        };
        if let Some(d) = spec.distribution {
            self.table = dist::table(d);
        }
        self.limit = spec.limit;
        self.latency = spec.latency.min(i64::MAX as u64) as i64;
        self.jitter = spec.jitter.min(i32::MAX as u64) as i32;
        self.gap = spec.gap;
        self.counter = 0;
        self.loss = match spec.loss {
            NetemLoss::Random { p } => p,
            _ => 0,
        };
        self.duplicate = spec.duplicate;
        // "if gap is set, assume 100% reorder probability" unless given below.
        if self.gap != 0 {
            self.reorder = u32::MAX;
        }
        if let Some(c) = spec.correlation {
            self.delay_cor = Crandom {
                rho: c.delay,
                last: self.draws.next_u32(),
            };
            self.loss_cor = Crandom {
                rho: c.loss,
                last: self.draws.next_u32(),
            };
            self.dup_cor = Crandom {
                rho: c.duplicate,
                last: self.draws.next_u32(),
            };
        }
        if let Some(r) = spec.reorder {
            self.reorder = r.p;
            self.reorder_cor = Crandom {
                rho: r.corr,
                last: self.draws.next_u32(),
            };
        }
        if let Some(c) = spec.corrupt {
            self.corrupt = c.p;
            self.corrupt_cor = Crandom {
                rho: c.corr,
                last: self.draws.next_u32(),
            };
        }
        if let Some(r) = spec.rate {
            self.rate = r;
        }
        if let Some(e) = spec.ecn {
            self.ecn = e;
        }
        if let Some(s) = &spec.slot {
            self.slot = Self::slot_from(s, now);
        }
        if self.env.modern_accounting && !first {
            // [modern] the PRNG is reseeded on every change.
            self.reseeds += 1;
            let name = format!("{}#{}", self.stream, self.reseeds);
            self.draws = Draws::Stream(ComponentRng::new(self.seed, &name));
        }
        self.spec = Self::merged(&self.spec, spec);
        self.spec.jitter = self.jitter as u64;
        if self.gap != 0 && spec.reorder.is_none() {
            let corr = self.spec.reorder.map_or(0, |r| r.corr);
            self.spec.reorder = Some(super::spec::NetemPercent {
                p: self.reorder,
                corr,
            });
        }
        Ok(())
    }

    /// The effective spec after a change: fixed block from `new`, the rest
    /// kept from `old` unless re-specified.
    fn merged(old: &NetemSpec, new: &NetemSpec) -> NetemSpec {
        NetemSpec {
            limit: new.limit,
            latency: new.latency,
            jitter: new.jitter,
            loss: new.loss.clone(),
            gap: new.gap,
            duplicate: new.duplicate,
            correlation: new.correlation.or(old.correlation),
            reorder: new.reorder.or(old.reorder),
            corrupt: new.corrupt.or(old.corrupt),
            rate: new.rate.or(old.rate),
            ecn: new.ecn.or(old.ecn),
            slot: new.slot.clone().or_else(|| old.slot.clone()),
            distribution: new.distribution.or(old.distribution),
        }
    }

    /// `get_slot`: active iff MIN, MAX or the distribution's jitter is
    /// non-zero; the first slot opens at configuration time.
    fn slot_from(s: &NetemSlot, now: SimTime) -> Option<Slot> {
        let clamp32 = |v: Option<u32>| match v {
            None | Some(0) => i32::MAX,
            Some(v) => v.min(i32::MAX as u32) as i32,
        };
        let dist = s.dist.map(|(d, delay, jitter)| {
            let table: Option<&'static [i16]> = match d {
                NetemDistribution::Uniform => None,
                other => dist::table(other),
            };
            (
                table,
                delay.min(i64::MAX as u64) as i64,
                jitter.min(i32::MAX as u64) as i32,
            )
        });
        let dist_jitter = dist.map_or(0, |d| d.2);
        if s.min_delay == 0 && s.max_delay == 0 && dist_jitter == 0 {
            return None;
        }
        let (max_packets, max_bytes) = (clamp32(s.packets), clamp32(s.bytes));
        Some(Slot {
            min: s.min_delay.min(i64::MAX as u64) as i64,
            max: s.max_delay.min(i64::MAX as u64) as i64,
            dist,
            max_packets,
            max_bytes,
            next: now.as_nanos(),
            packets_left: max_packets,
            bytes_left: max_bytes,
        })
    }

    /// `netem_enqueue` (docs/semantics/qdiscs.md §4.4).
    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let is_own_clone = !self.own_clones.is_empty() && self.take_clone_mark(id);
        self.enqueue_one(ctx, id, !is_own_clone)
    }

    fn take_clone_mark(&mut self, id: PacketId) -> bool {
        match self.own_clones.iter().position(|&c| c == id) {
            Some(i) => {
                self.own_clones.swap_remove(i);
                true
            }
            None => false,
        }
    }

    fn enqueue_one(
        &mut self,
        ctx: &mut QdiscCtx,
        mut id: PacketId,
        may_duplicate: bool,
    ) -> Verdict {
        let mut count = 1u32;
        if may_duplicate
            && self.duplicate != 0
            && self.duplicate >= self.dup_cor.apply(self.draws.next_u32())
        {
            count += 1;
        }
        if self.loss_event() {
            if self.ecn && ctx.arena.get_mut(id).set_ce() {
                // Marked instead of lost, but still counted as a drop.
                self.stats.dropped();
            } else {
                count -= 1;
            }
        }
        if count == 0 {
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::NetemLoss);
            return Verdict::Dropped(DropReason::NetemLoss);
        }
        if self.orphans() {
            // skb_orphan_partial: a delaying netem gives the sender's TCP
            // Small Queues budget back now, not when the packet leaves
            ctx.arena.release_tsq(id);
        }
        // The clone is taken before corruption touches the original (a
        // clone has no socket: skb_clone).
        let clone = (count > 1).then(|| crate::packet::Packet {
            tsq: 0,
            tstamp: None,
            ..*ctx.arena.get(id)
        });
        if let Some(copy) = clone {
            if !self.env.dup_after_limit {
                self.duplicate_now(ctx, copy);
            }
        }
        if self.corrupt != 0 && self.corrupt >= self.corrupt_cor.apply(self.draws.next_u32()) {
            if ctx.arena.get(id).is_gso() {
                // netem_segment: corrupt only the first segment; the others
                // are enqueued again one by one (SIM: at the root, like
                // duplicates, which is netem itself when netem is the root)
                let mut segs = Vec::new();
                ctx.arena.segment(id, &mut segs);
                id = segs[0];
                ctx.reinject.extend_from_slice(&segs[1..]);
            }
            ctx.arena.get_mut(id).corrupt = true;
        }
        let full = if self.env.modern_accounting {
            self.tfifo.len() as u64 >= self.limit as u64
        } else {
            self.stats.qlen >= self.limit as u64
        };
        if full {
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::NetemLimit);
            return Verdict::Dropped(DropReason::NetemLimit);
        }
        if let Some(copy) = clone {
            if self.env.dup_after_limit {
                self.duplicate_now(ctx, copy);
            }
        }
        let len = ctx.arena.len_of(id);
        let now = ctx.now.as_nanos();
        self.stats.queued(len);
        if self.gap == 0
            || self.counter < self.gap - 1
            || self.reorder < self.reorder_cor.apply(self.draws.next_u32())
        {
            let mut delay = self.delay_sample();
            let mut base = now as i64;
            if self.rate.rate != 0 {
                let last_imm = self.immediate.back().map(|e| e.0);
                let last_line = self.tfifo.back().map(|e| e.0);
                if let Some(last) = last_imm.max(last_line) {
                    // Serialise behind the last queued packet: its remaining
                    // wait is a bonus taken off this packet's delay.
                    delay = delay.saturating_sub(last as i64 - now as i64).max(0);
                    base = last as i64;
                }
                delay = delay.saturating_add(self.packet_time_ns(len));
            }
            let tts = base.saturating_add(delay).max(0) as u64;
            self.counter = self.counter.wrapping_add(1);
            self.insert(tts, id);
        } else {
            // Reorder: this one goes out first.
            self.counter = 0;
            self.immediate.push_front((now, id));
            self.stats.requeues += 1;
        }
        Verdict::Queued
    }

    /// Does this netem delay what it holds (`latency`, `jitter` or `rate`)?
    /// Then it orphans every packet at enqueue (`skb_orphan_partial`): the
    /// sending socket's TCP Small Queues budget comes back at once.
    pub fn orphans(&self) -> bool {
        self.latency != 0 || self.jitter != 0 || self.rate.rate != 0
    }

    /// Re-enqueue a duplicate at the device's root with duplication off for
    /// it. At the root that is this very qdisc, now; below the root the tree
    /// does it (through `ctx.reinject`) when the current enqueue returns.
    fn duplicate_now(&mut self, ctx: &mut QdiscCtx, copy: crate::packet::Packet) {
        let clone = ctx.arena.alloc(copy);
        if self.at_root {
            let _ = self.enqueue_one(ctx, clone, false);
        } else {
            self.own_clones.push(clone);
            ctx.reinject.push(clone);
        }
    }

    /// `loss_event()`: the configured model's verdict for one packet.
    fn loss_event(&mut self) -> bool {
        match self.loss_model {
            Loss::Random => {
                self.loss != 0 && random_loss(self.loss, self.loss_cor.apply(self.draws.next_u32()))
            }
            Loss::State {
                p13,
                p31,
                p32,
                p23,
                p14,
                state,
            } => {
                let r = self.draws.next_u32();
                let (next, lost) = step_4state(state, r, p13, p31, p32, p23, p14);
                if let Loss::State { state, .. } = &mut self.loss_model {
                    *state = next;
                }
                lost
            }
            Loss::Gemodel { p, r, h, k1, bad } => {
                let t = self.draws.next_u32();
                let l = self.draws.next_u32();
                let (now_bad, lost) = step_gemodel(bad, t, l, p, r, h, k1);
                if let Loss::Gemodel { bad, .. } = &mut self.loss_model {
                    *bad = now_bad;
                }
                lost
            }
        }
    }

    /// `tabledist(latency, jitter, delay_cor, dist)`; no draw when jitter is 0.
    #[inline]
    fn delay_sample(&mut self) -> i64 {
        if self.jitter == 0 {
            return self.latency;
        }
        let rnd = self.delay_cor.apply(self.draws.next_u32());
        tabledist(self.latency, self.jitter, rnd, self.table)
    }

    /// `packet_time_ns`: serialisation time at `rate` with the packet
    /// overhead and cell rounding (docs/semantics/qdiscs.md §4.4).
    pub fn packet_time_ns(&self, len: u32) -> i64 {
        let r = &self.rate;
        if r.rate == 0 {
            return 0;
        }
        let mut l = (len as i128 + r.packet_overhead as i128).max(0);
        if r.cell_size != 0 {
            let cs = r.cell_size as i128;
            let cells = (l + cs - 1) / cs;
            l = (cells * (cs + r.cell_overhead as i128)).max(0);
        }
        (l * 1_000_000_000 / r.rate as i128).min(i64::MAX as i128) as i64
    }

    /// Insert into the delay line after every packet due at the same time or
    /// earlier. O(1) when times arrive in order (no jitter).
    #[inline]
    fn insert(&mut self, tts: u64, id: PacketId) {
        match self.tfifo.back() {
            Some(&(t, _)) if t > tts => {
                let pos = self.tfifo.partition_point(|&(t, _)| t <= tts);
                self.tfifo.insert(pos, (tts, id));
            }
            _ => self.tfifo.push_back((tts, id)),
        }
    }

    /// `get_slot_next`.
    fn new_slot(&mut self, now: u64) {
        let draw = match &self.slot {
            Some(s) => match s.dist {
                Some((Some(_), _, jitter)) if jitter != 0 => Some(self.draws.next_u32()),
                Some((Some(_), _, _)) => None,
                _ => Some(self.draws.next_u32()),
            },
            None => return,
        };
        let Some(s) = &mut self.slot else { return };
        let next_delay = match (s.dist, draw) {
            (Some((Some(table), delay, jitter)), Some(rnd)) => {
                tabledist(delay, jitter, rnd, Some(table))
            }
            (Some((Some(_), delay, _)), None) => delay,
            (_, rnd) => s.min + ((rnd.unwrap_or(0) as i128 * (s.max - s.min) as i128) >> 32) as i64,
        };
        s.next = (now as i64).saturating_add(next_delay).max(0) as u64;
        s.packets_left = s.max_packets;
        s.bytes_left = s.max_bytes;
    }

    /// `netem_dequeue` (docs/semantics/qdiscs.md §4.5). `child` is the chain below netem
    /// (empty: no child, deliver directly).
    pub fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        child: &mut [Node],
    ) -> Option<PacketId> {
        loop {
            if let Some((_, id)) = self.immediate.pop_front() {
                let len = ctx.arena.len_of(id);
                self.stats.unqueued(len);
                self.stats.sent(len, ctx.arena.segs_of(id));
                return Some(id);
            }
            let Some(&(tts, id)) = self.tfifo.front() else {
                break;
            };
            let now = ctx.now.as_nanos();
            if matches!(&self.slot, Some(s) if s.next < tts) {
                self.new_slot(now);
            }
            let slot_open = match &self.slot {
                Some(s) => s.next <= now,
                None => true,
            };
            if tts <= now && slot_open {
                self.tfifo.pop_front();
                if let Some(&(_, ahead)) = self.tfifo.get(PREFETCH_AHEAD) {
                    ctx.arena.prefetch(ahead);
                }
                let len = ctx.arena.len_of(id);
                let mut refill = false;
                if let Some(s) = &mut self.slot {
                    s.packets_left -= 1;
                    s.bytes_left = s.bytes_left.saturating_sub(len as i32);
                    refill = s.packets_left <= 0 || s.bytes_left <= 0;
                }
                if refill {
                    self.new_slot(now);
                }
                if child.is_empty() {
                    self.stats.unqueued(len);
                    self.stats.sent(len, ctx.arena.segs_of(id));
                    return Some(id);
                }
                // Move every due packet into the child.
                if !self.env.modern_accounting {
                    self.stats.unqueued(len);
                }
                let v = absorbing(self, reduce, |reduce| {
                    tree::enqueue_chain(child, ctx, reduce, id)
                });
                if let Verdict::Dropped(_) = v {
                    self.stats.dropped();
                    if self.env.modern_accounting {
                        self.stats.unqueued(len);
                    }
                    reduce.left(1, len as u64, 1);
                }
                continue;
            }
            if !child.is_empty() {
                if let Some(p) = self.child_dequeue(ctx, reduce, child) {
                    return Some(p);
                }
            }
            let at = match &self.slot {
                Some(s) => tts.max(s.next),
                None => tts,
            };
            ctx.arm_watchdog(SimTime::from_nanos(at));
            // Linux then falls through to one more child dequeue (below).
            break;
        }
        if child.is_empty() {
            return None;
        }
        self.child_dequeue(ctx, reduce, child)
    }

    fn child_dequeue(
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
        if self.env.modern_accounting {
            self.stats.unqueued(len);
        }
        self.stats.sent(len, ctx.arena.segs_of(id));
        Some(id)
    }

    /// `tc qdisc change … netem …` (docs/semantics/qdiscs.md §4.8). On error nothing changes.
    pub fn change(&mut self, spec: &NetemSpec, now: SimTime) -> Result<(), TcError> {
        self.configure(spec, now, false)
    }

    /// The effective [`NetemSpec`], kept fields included.
    pub fn spec(&self) -> &NetemSpec {
        &self.spec
    }

    /// Replace the random source by a script of draws (tests only).
    #[cfg(test)]
    pub(crate) fn script(&mut self, draws: &[u32]) {
        self.draws = Draws::Script(draws.iter().copied().collect());
    }
}

impl Qdisc for Netem {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Netem(s) = spec else {
            return None;
        };
        let netem_env = NetemEnv {
            modern_accounting: env.profile.netem_modern_accounting,
            dup_after_limit: env.profile.netem_dup_after_limit,
        };
        let built = Netem::new(s, env.seed, env.stream.to_string(), netem_env, env.now);
        Some(built.map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "netem"
    }

    #[inline]
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        _reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        Netem::enqueue(self, ctx, id)
    }

    #[inline]
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        child: &mut [Node],
    ) -> Option<PacketId> {
        Netem::dequeue(self, ctx, reduce, child)
    }

    /// `netem_reset` for netem's own queues: free them as purged.
    /// Returns (packets, bytes) freed.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0u64, 0u64);
        for (_, id) in self.tfifo.drain(..).chain(self.immediate.drain(..)) {
            n += 1;
            b += ctx.arena.len_of(id) as u64;
            ctx.drop_packet(id, DropReason::Purged);
        }
        self.stats.qlen = 0;
        self.stats.backlog = 0;
        Purged {
            packets: n,
            bytes: b,
        }
    }

    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Netem(s) = spec else {
            return Err(wrong_kind());
        };
        Netem::change(self, s, ctx.now).map(|()| Changed::IN_PLACE)
    }

    crate::qdisc::ops::own_stats!();

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.spec).unwrap_or(serde_json::Value::Null)
    }

    /// Packets physically stored in netem itself (delay line + immediate).
    fn held(&self) -> u64 {
        (self.tfifo.len() + self.immediate.len()) as u64
    }

    fn classful(&self) -> bool {
        true
    }

    /// A change inside the child subtree reported by `qdisc_tree_reduce_backlog`.
    /// \[lab2019\] netem does not count its child's packets, so only the drops apply.
    fn absorb(&mut self, r: Reduce) {
        if self.env.modern_accounting {
            self.stats.absorb(r);
        } else {
            self.stats.drops += r.drops;
        }
    }

    /// At the root a duplicate re-enters this netem at once; below it, the
    /// tree re-enqueues it at the root (`netem_enqueue`'s `rootq`).
    fn placed(&mut self, at_root: bool) {
        self.at_root = at_root;
    }

    /// Forget clone marks once the tree has re-enqueued every clone.
    fn duplicates_reinjected(&mut self) {
        self.own_clones.clear();
    }

    fn netem_duplicates(&self) -> Option<bool> {
        Some(self.duplicate != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::spec::{NetemCorrelation, NetemPercent, QdiscSpec};
    use crate::qdisc::tree::harness::{run, Env};
    use crate::qdisc::{AnyQdisc, AutoHandles, QdiscProfile, QdiscTree};
    use crate::qdisc::{ParentSpec, TcRequest, TcVerb};

    const MS: u64 = 1_000_000;

    /// `rint(pct/100 × (2³²−1))`, as tc encodes percentages.
    fn pct(p: f64) -> u32 {
        (p / 100.0 * u32::MAX as f64).round_ties_even() as u32
    }

    fn base(latency: u64) -> NetemSpec {
        NetemSpec::delay_only(latency)
    }

    fn netem(spec: &NetemSpec) -> Netem {
        let mut q = Netem::new(
            spec,
            7,
            "test/qdisc1".into(),
            NetemEnv::default(),
            SimTime::ZERO,
        )
        .unwrap();
        q.at_root = true;
        q
    }

    fn tree_with(spec: NetemSpec, profile: QdiscProfile) -> (QdiscTree, Env) {
        let mut env = Env::default();
        let mut tree = QdiscTree::new("s1-eth2", 3, profile);
        let req = TcRequest {
            verb: TcVerb::Add,
            dev: "s1-eth2".into(),
            parent: Some(ParentSpec::Root),
            handle: Some(1),
            qdisc: Some(QdiscSpec::Netem(spec)),
        };
        tree.apply(&req, &mut env.ctx(0), &mut AutoHandles::default())
            .unwrap();
        (tree, env)
    }

    fn root_netem(tree: &mut QdiscTree) -> &mut Netem {
        match tree.node_qdisc_mut(0) {
            Some(AnyQdisc::Netem(n)) => n,
            _ => panic!("root is not netem"),
        }
    }

    #[test]
    fn e8_loss_threshold_is_inclusive() {
        let loss = pct(0.01);
        assert_eq!(loss, 429_497);
        assert!(
            random_loss(loss, 429_497),
            "a draw equal to the threshold loses"
        );
        assert!(!random_loss(loss, 429_498));
        assert!(
            !random_loss(0, 0),
            "loss 0 never loses, even on a zero draw"
        );
        assert_eq!(pct(1.0), 42_949_673);
        assert_eq!(pct(100.0), u32::MAX);
        assert!(random_loss(u32::MAX, u32::MAX));
    }

    #[test]
    fn e8_loss_decision_inside_netem_consumes_one_draw() {
        let mut s = base(0);
        s.loss = NetemLoss::Random { p: pct(0.01) };
        let mut q = netem(&s);
        let mut env = Env::default();
        q.script(&[429_497, 429_498]);
        let (a, b) = (env.pkt(1514), env.pkt(1514));
        assert_eq!(
            q.enqueue(&mut env.ctx(0), a),
            Verdict::Dropped(DropReason::NetemLoss)
        );
        assert_eq!(q.enqueue(&mut env.ctx(0), b), Verdict::Queued);
        assert_eq!((q.stats().drops, q.stats().qlen), (1, 1));
    }

    #[test]
    fn e9_uniform_jitter_and_correlation() {
        assert_eq!(
            tabledist(100 * MS as i64, 10 * MS as i32, 0x1234_5678, None),
            95_419_896
        );
        let rho = pct(25.0);
        assert_eq!(rho, 1_073_741_824);
        let mut c = Crandom {
            rho,
            last: 0x8000_0000,
        };
        assert_eq!(c.apply(0x1234_5678), 765_935_834);
        assert_eq!(c.last, 765_935_834);
        // No correlation: the draw itself.
        assert_eq!(Crandom { rho: 0, last: 5 }.apply(42), 42);
    }

    #[test]
    fn e9_jitter_reorders_through_the_sorted_delay_line() {
        // delay 100ms 10ms: A at 0 draws 19 ms above the low end (d = 109 ms),
        // B at 1 ms draws 1 ms (d = 91 ms): B is due at 92 ms, before A.
        let mut s = base(100 * MS);
        s.jitter = 10 * MS;
        let (mut tree, mut env) = tree_with(s, QdiscProfile::default());
        root_netem(&mut tree).script(&[19_000_000, 1_000_000]);
        let out = run(
            &mut tree,
            &mut env,
            &[(0, 1514), (MS, 1514)],
            false,
            u64::MAX,
        );
        assert_eq!(out, [(92 * MS, 1), (109 * MS, 0)]);
    }

    #[test]
    fn equal_times_keep_arrival_order() {
        let mut q = netem(&base(0));
        let mut env = Env::default();
        for (t, id) in [(30, 0), (10, 1), (30, 2), (20, 3), (10, 4)] {
            q.insert(t, PacketId(id));
        }
        let order: Vec<u32> = q.tfifo.iter().map(|e| e.1 .0).collect();
        assert_eq!(order, [1, 4, 3, 0, 2]);
        let _ = &mut env;
    }

    #[test]
    fn tabledist_with_a_table_rounds_like_the_kernel() {
        // σ = 10 000 000 = 1220·8192 + 5 760; t = 8192: x = 5760·8192 + 4096
        // → 5760 + 1220·8192 = σ exactly.
        let table = [8192i16, -8192, 100];
        assert_eq!(tabledist(0, 10_000_000, 0, Some(&table)), 10_000_000);
        assert_eq!(tabledist(0, 10_000_000, 1, Some(&table)), -10_000_000);
        // t = 100: x = 5760·100 + 4096 = 580 096 → 70 (trunc) + 1220·100.
        assert_eq!(tabledist(5, 10_000_000, 2, Some(&table)), 5 + 70 + 122_000);
        let normal = dist::table(NetemDistribution::Normal).unwrap();
        let mut sum = 0i64;
        for r in 0..4096u32 {
            sum += tabledist(20 * MS as i64, MS as i32, r, Some(normal));
        }
        assert!(
            ((sum / 4096) - 20 * MS as i64).abs() < 5_000,
            "mean {}",
            sum / 4096
        );
    }

    #[test]
    fn e10_rate_serialises_behind_the_last_packet() {
        let mut s = base(0);
        s.rate = Some(NetemRate {
            rate: 1_000_000,
            packet_overhead: 0,
            cell_size: 0,
            cell_overhead: 0,
        });
        let (mut tree, mut env) = tree_with(s.clone(), QdiscProfile::default());
        let out = run(&mut tree, &mut env, &[(0, 1514), (0, 1514)], true, u64::MAX);
        assert_eq!(out, [(1_514_000, 0), (3_028_000, 1)]);
        s.rate = Some(NetemRate {
            rate: 1_000_000,
            packet_overhead: -14,
            cell_size: 0,
            cell_overhead: 0,
        });
        let (mut tree, mut env) = tree_with(s, QdiscProfile::default());
        let out = run(&mut tree, &mut env, &[(0, 1514), (0, 1514)], true, u64::MAX);
        assert_eq!(out, [(1_500_000, 0), (3_000_000, 1)]);
    }

    #[test]
    fn rate_cells_round_up() {
        let mut s = base(0);
        // ATM-like: 48-byte cells carried in 53 bytes: 1514 → 32 cells → 1696 B.
        s.rate = Some(NetemRate {
            rate: 1_000_000,
            packet_overhead: 0,
            cell_size: 48,
            cell_overhead: 5,
        });
        let q = netem(&s);
        assert_eq!(q.packet_time_ns(1514), 1_696_000);
        assert_eq!(q.packet_time_ns(48), 53_000);
    }

    #[test]
    fn e7_limit_1000_caps_a_gigabit_delay_line_at_605_mbit() {
        // [lab2019] delay 20ms, limit 1000, 1514-byte frames every 12 112 ns.
        let (mut tree, mut env) = tree_with(base(20 * MS), QdiscProfile::default());
        let n = 30_000u64; // ≈ 363 ms of arrivals
        let arrivals: Vec<(u64, u32)> = (0..n).map(|k| (k * 12_112, 1514)).collect();
        let out = run(&mut tree, &mut env, &arrivals, false, u64::MAX);
        // The line never holds more than 1000, so over any 20 ms at most 1000
        // leave: delivered between 100 ms and 300 ms ≈ 10 000 (605.6 Mbit/s).
        let window = out
            .iter()
            .filter(|&&(t, _)| (100 * MS..300 * MS).contains(&t))
            .count() as f64;
        let mbit = window * 1514.0 * 8.0 / 0.2 / 1e6;
        assert!((mbit - 605.6).abs() < 2.0, "{mbit} Mbit/s");
        let s = *root_netem(&mut tree).stats();
        assert_eq!(s.drops + out.len() as u64, n);
        assert!(s.drops > 10_000, "{}", s.drops);
    }

    #[test]
    fn reorder_gap_sends_every_gap_th_packet_at_once() {
        let mut s = base(10 * MS);
        s.gap = 5;
        s.reorder = Some(NetemPercent {
            p: u32::MAX,
            corr: 0,
        });
        let (mut tree, mut env) = tree_with(s, QdiscProfile::default());
        let arrivals: Vec<(u64, u32)> = (0..10).map(|k| (k * 100_000, 100)).collect();
        let out = run(&mut tree, &mut env, &arrivals, false, u64::MAX);
        // Packets 4 and 9 (0-based) skip the delay line.
        assert_eq!(out[0], (400_000, 4));
        assert_eq!(out[1], (900_000, 9));
        let rest: Vec<u64> = out[2..].iter().map(|e| e.1).collect();
        assert_eq!(rest, [0, 1, 2, 3, 5, 6, 7, 8]);
        assert_eq!(out[2].0, 10 * MS);
        assert_eq!(root_netem(&mut tree).stats().requeues, 2);
    }

    #[test]
    fn reorder_probability_matches_theory() {
        // reorder 25% gap 1: every packet is a candidate; immediate iff draw ≤ p.
        let mut s = base(MS);
        s.gap = 1;
        let p = pct(25.0);
        s.reorder = Some(NetemPercent { p, corr: 0 });
        let mut q = netem(&s);
        let mut env = Env::default();
        let n = 200_000u64;
        for _ in 0..n {
            let id = env.pkt(64);
            q.enqueue(&mut env.ctx(0), id);
            let _ = q.reset(&mut env.ctx(0));
        }
        let prob = (p as f64 + 1.0) / 4_294_967_296.0;
        let (mean, sd) = (n as f64 * prob, (n as f64 * prob * (1.0 - prob)).sqrt());
        let got = q.stats().requeues as f64;
        assert!((got - mean).abs() < 5.0 * sd, "{got} vs {mean} ± {sd}");
    }

    fn dup_order(profile: QdiscProfile) -> Vec<(u64, u64, bool)> {
        let mut s = base(10 * MS);
        s.duplicate = u32::MAX;
        let (mut tree, mut env) = tree_with(s, profile);
        let id = env.pkt(1514);
        assert_eq!(tree.enqueue(&mut env.ctx(0), id), Verdict::Queued);
        let n = root_netem(&mut tree);
        assert_eq!(n.stats().qlen, 2);
        let mut out = vec![];
        let mut ctx = env.ctx(10 * MS);
        while let Some(p) = tree.dequeue(&mut ctx) {
            out.push((ctx.now.as_nanos(), p.0 as u64, p == id));
        }
        out
    }

    #[test]
    fn a_root_duplicate_is_queued_before_its_original_in_both_profiles() {
        // [lab2019] the clone enters the root (this netem) before the original.
        let old = dup_order(QdiscProfile::default());
        assert_eq!(old.iter().map(|e| e.2).collect::<Vec<_>>(), [false, true]);
        // [modern] the clone is enqueued after the limit check, still before
        // the original is put in the delay line.
        let new = dup_order(QdiscProfile {
            netem_modern_accounting: true,
            netem_dup_after_limit: true,
        });
        assert_eq!(new.iter().map(|e| e.2).collect::<Vec<_>>(), [false, true]);
    }

    #[test]
    fn duplicate_before_limit_can_push_the_original_out() {
        // limit 1: [lab2019] the clone takes the last slot, the original is dropped;
        // [modern] the limit is checked first, so the original stays and so does the clone.
        let mut s = base(10 * MS);
        s.duplicate = u32::MAX;
        s.limit = 1;
        let (mut tree, mut env) = tree_with(s.clone(), QdiscProfile::default());
        let id = env.pkt(1514);
        assert_eq!(
            tree.enqueue(&mut env.ctx(0), id),
            Verdict::Dropped(DropReason::NetemLimit)
        );
        assert_eq!(
            (
                root_netem(&mut tree).stats().qlen,
                root_netem(&mut tree).stats().drops
            ),
            (1, 1)
        );
        let (mut tree, mut env) = tree_with(
            s,
            QdiscProfile {
                netem_modern_accounting: true,
                netem_dup_after_limit: true,
            },
        );
        let id = env.pkt(1514);
        assert_eq!(tree.enqueue(&mut env.ctx(0), id), Verdict::Queued);
        assert_eq!(
            root_netem(&mut tree).stats().qlen,
            2,
            "t_len was 0 at both checks"
        );
    }

    #[test]
    fn duplicate_rate_matches_theory() {
        let mut s = base(0);
        let d = pct(10.0);
        s.duplicate = d;
        let (mut tree, mut env) = tree_with(s, QdiscProfile::default());
        let n = 100_000u64;
        let arrivals: Vec<(u64, u32)> = (0..n).map(|k| (k * 1000, 100)).collect();
        let out = run(&mut tree, &mut env, &arrivals, false, u64::MAX);
        let clones = out.len() as f64 - n as f64;
        let prob = (d as f64 + 1.0) / 4_294_967_296.0;
        let (mean, sd) = (n as f64 * prob, (n as f64 * prob * (1.0 - prob)).sqrt());
        assert!(
            (clones - mean).abs() < 5.0 * sd,
            "{clones} vs {mean} ± {sd}"
        );
        assert_eq!(env.arena.created(), out.len() as u64);
    }

    #[test]
    fn corrupt_marks_packets_and_ecn_marks_instead_of_losing() {
        let mut s = base(0);
        s.corrupt = Some(NetemPercent {
            p: u32::MAX,
            corr: 0,
        });
        s.loss = NetemLoss::Random { p: u32::MAX };
        s.ecn = Some(true);
        let mut q = netem(&s);
        let mut env = Env::default();
        let ect = env.pkt(1514);
        env.arena.get_mut(ect).tos = 0x02;
        let plain = env.pkt(1514);
        assert_eq!(q.enqueue(&mut env.ctx(0), ect), Verdict::Queued);
        assert_eq!(
            q.enqueue(&mut env.ctx(0), plain),
            Verdict::Dropped(DropReason::NetemLoss)
        );
        let p = env.arena.get(ect);
        assert_eq!((p.tos, p.corrupt), (0x03, true));
        // The marked "loss" still counts in dropped.
        assert_eq!(q.stats().drops, 2);
    }

    /// Asymptotic variance of Σ f(Xₙ) / n for a finite Markov chain (rows of
    /// `p` sum to 1): Var f + 2 Σₖ Cov(f(X₀), f(Xₖ)), summed until negligible.
    fn markov_mean_var(p: &[Vec<f64>], f: &[f64]) -> (f64, f64) {
        let n = p.len();
        let mut pi = vec![1.0 / n as f64; n];
        for _ in 0..200_000 {
            let mut next = vec![0.0; n];
            for i in 0..n {
                for j in 0..n {
                    next[j] += pi[i] * p[i][j];
                }
            }
            pi = next;
        }
        let mean: f64 = (0..n).map(|i| pi[i] * f[i]).sum();
        let fc: Vec<f64> = f.iter().map(|v| v - mean).collect();
        let var0: f64 = (0..n).map(|i| pi[i] * fc[i] * fc[i]).sum();
        let mut g = fc.clone();
        let mut sum = 0.0;
        for _ in 0..1_000_000 {
            g = (0..n)
                .map(|i| (0..n).map(|j| p[i][j] * g[j]).sum())
                .collect();
            let c: f64 = (0..n).map(|i| pi[i] * fc[i] * g[i]).sum();
            sum += c;
            if c.abs() < 1e-15 {
                break;
            }
        }
        (mean, var0 + 2.0 * sum)
    }

    fn count_losses(spec: &NetemSpec, n: u64) -> u64 {
        let mut q = netem(spec);
        let mut env = Env::default();
        let mut lost = 0;
        for _ in 0..n {
            let id = env.pkt(64);
            if q.enqueue(&mut env.ctx(0), id) != Verdict::Queued {
                lost += 1;
            }
            let _ = q.reset(&mut env.ctx(0));
        }
        lost
    }

    #[test]
    fn random_loss_rate_matches_theory() {
        let mut s = base(0);
        s.loss = NetemLoss::Random { p: pct(1.0) };
        let n = 500_000u64;
        let prob = (pct(1.0) as f64 + 1.0) / 4_294_967_296.0;
        let got = count_losses(&s, n) as f64;
        let (mean, sd) = (n as f64 * prob, (n as f64 * prob * (1.0 - prob)).sqrt());
        assert!((got - mean).abs() < 5.0 * sd, "{got} vs {mean} ± {sd}");
    }

    #[test]
    fn state_loss_rate_matches_the_markov_chain() {
        let (p13, p31, p32, p23, p14) = (pct(5.0), pct(70.0), pct(10.0), pct(40.0), pct(1.0));
        let mut s = base(0);
        s.loss = NetemLoss::State {
            p13,
            p31,
            p32,
            p23,
            p14,
        };
        let f = |v: u32| v as f64 / 4_294_967_296.0;
        // Transitions as the kernel takes them (boundary ties have probability 2^-32).
        let p = vec![
            vec![1.0 - f(p13) - f(p14), 0.0, f(p13), f(p14)],
            vec![0.0, 1.0 - f(p23), f(p23), 0.0],
            vec![f(p31), f(p32), 1.0 - f(p31) - f(p32), 0.0],
            vec![1.0, 0.0, 0.0, 0.0],
        ];
        let (mean, var) = markov_mean_var(&p, &[0.0, 0.0, 1.0, 1.0]);
        let n = 400_000u64;
        let got = count_losses(&s, n) as f64 / n as f64;
        let sd = (var / n as f64).sqrt();
        assert!((got - mean).abs() < 5.0 * sd, "{got} vs {mean} ± {sd}");
    }

    #[test]
    fn gemodel_loss_rate_matches_theory() {
        let (p, r, one_minus_h, one_minus_k) = (pct(2.0), pct(30.0), pct(60.0), pct(1.0));
        let h = u32::MAX - one_minus_h;
        let mut s = base(0);
        s.loss = NetemLoss::Gemodel {
            p,
            r,
            h,
            k1: one_minus_k,
        };
        let f = |v: u32| v as f64 / 4_294_967_296.0;
        // States with the loss probability of the state the packet arrives in.
        let (eg, eb) = (f(one_minus_k), (u32::MAX - h) as f64 / 4_294_967_296.0);
        let (pg, pb) = (f(r) / (f(p) + f(r)), f(p) / (f(p) + f(r)));
        let q = pg * eg + pb * eb;
        let lambda = 1.0 - f(p) - f(r);
        let var = q * (1.0 - q) + 2.0 * pg * pb * (eg - eb).powi(2) * lambda / (1.0 - lambda);
        let n = 400_000u64;
        let got = count_losses(&s, n) as f64 / n as f64;
        let sd = (var / n as f64).sqrt();
        assert!((got - q).abs() < 5.0 * sd, "{got} vs {q} ± {sd}");
    }

    #[test]
    fn four_state_chain_follows_the_kernel_table() {
        let (p13, p31, p32, p23, p14) = (100, 1000, 50, 70, 10);
        assert_eq!(step_4state(1, 5, p13, p31, p32, p23, p14), (4, true));
        assert_eq!(step_4state(1, 50, p13, p31, p32, p23, p14), (3, true));
        assert_eq!(
            step_4state(1, 10, p13, p31, p32, p23, p14),
            (1, false),
            "tie: no change"
        );
        assert_eq!(step_4state(1, 500, p13, p31, p32, p23, p14), (1, false));
        assert_eq!(step_4state(2, 69, p13, p31, p32, p23, p14), (3, true));
        assert_eq!(step_4state(2, 70, p13, p31, p32, p23, p14), (2, false));
        assert_eq!(step_4state(3, 49, p13, p31, p32, p23, p14), (2, false));
        assert_eq!(step_4state(3, 500, p13, p31, p32, p23, p14), (1, false));
        assert_eq!(step_4state(3, 5000, p13, p31, p32, p23, p14), (3, true));
        assert_eq!(step_4state(4, 0, p13, p31, p32, p23, p14), (1, false));
        assert_eq!(step_gemodel(false, 1, 1, 2, 0, 0, 2), (true, true));
        assert_eq!(step_gemodel(true, 5, 10, 0, 6, 9, 0), (false, true));
    }

    #[test]
    fn correlation_shrinks_the_spread_of_crandom() {
        // A moving average (1−ρ)v + ρ·last keeps the mean at 2³¹ but the
        // variance falls to (1−ρ)/(1+ρ) of the uniform's.
        let rho = pct(50.0);
        let mut c = Crandom { rho, last: 0 };
        let mut rng = ComponentRng::new(1, "crandom");
        let n = 200_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| c.apply(rng.next_u32()) as f64 / 4_294_967_296.0)
            .skip(100)
            .collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64;
        let r = rho as f64 / 4_294_967_296.0;
        let want = (1.0 / 12.0) * (1.0 - r) / (1.0 + r);
        assert!((m - 0.5).abs() < 0.005, "{m}");
        assert!((v / want - 1.0).abs() < 0.02, "{v} vs {want}");
        // So a correlated 1% loss loses less than 1% (P13).
        let mut s = base(0);
        s.loss = NetemLoss::Random { p: pct(1.0) };
        s.correlation = Some(NetemCorrelation {
            delay: 0,
            loss: rho,
            duplicate: 0,
        });
        let lost = count_losses(&s, 200_000) as f64 / 200_000.0;
        assert!(lost < 0.005, "{lost}");
    }

    #[test]
    fn slot_releases_bursts_of_n_packets() {
        let mut s = base(0);
        s.slot = Some(NetemSlot {
            min_delay: 10 * MS,
            max_delay: 10 * MS,
            dist: None,
            packets: Some(2),
            bytes: None,
        });
        let (mut tree, mut env) = tree_with(s, QdiscProfile::default());
        let out = run(&mut tree, &mut env, &[(0, 1514); 5], true, u64::MAX);
        let times: Vec<u64> = out.iter().map(|e| e.0).collect();
        assert_eq!(times, [0, 0, 10 * MS, 10 * MS, 20 * MS]);
    }

    #[test]
    fn slot_distribution_draws_slot_gaps_from_the_table() {
        let mut s = base(0);
        s.slot = Some(NetemSlot {
            min_delay: 0,
            max_delay: 0,
            dist: Some((NetemDistribution::Normal, 10 * MS, 2 * MS)),
            packets: Some(1),
            bytes: None,
        });
        let (mut tree, mut env) = tree_with(s, QdiscProfile::default());
        let out = run(&mut tree, &mut env, &[(0, 100); 200], true, u64::MAX);
        assert_eq!(out[0].0, 0, "the first slot opens at configuration");
        let gaps: Vec<f64> = out
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) as f64 / MS as f64)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        // 199 normal gaps of mean 10 ms, sd 2 ms: the mean is within 5·2/√199 ms.
        assert!((mean - 10.0).abs() < 0.71, "{mean}");
        assert!((sd - 2.0).abs() < 0.5, "{sd}");
        // Without a table and MIN = MAX = 0 the slot is off.
        let mut off = base(0);
        off.slot = Some(NetemSlot {
            min_delay: 0,
            max_delay: 0,
            dist: None,
            packets: Some(1),
            bytes: None,
        });
        assert!(netem(&off).slot.is_none());
    }

    #[test]
    fn change_resets_the_fixed_block_and_keeps_the_rest() {
        let mut s = base(20 * MS);
        s.corrupt = Some(NetemPercent { p: 5, corr: 0 });
        s.rate = Some(NetemRate {
            rate: 1_000_000,
            ..Default::default()
        });
        s.ecn = Some(true);
        s.loss = NetemLoss::Random { p: 7 };
        s.distribution = Some(NetemDistribution::Normal);
        s.jitter = 1_000;
        let mut q = netem(&s);
        // Lab 7 part 2: `change … netem loss 0.01% delay 30ms`.
        let mut c = base(30 * MS);
        c.loss = NetemLoss::Random { p: 429_497 };
        q.change(&c, SimTime::ZERO).unwrap();
        let e = q.spec();
        assert_eq!(
            (e.limit, e.latency, e.jitter, e.duplicate),
            (1000, 30 * MS, 0, 0)
        );
        assert_eq!(e.loss, NetemLoss::Random { p: 429_497 });
        assert_eq!(e.corrupt, Some(NetemPercent { p: 5, corr: 0 }));
        assert_eq!(e.rate.map(|r| r.rate), Some(1_000_000));
        assert_eq!(
            (e.ecn, e.distribution),
            (Some(true), Some(NetemDistribution::Normal))
        );
        assert_eq!(q.corrupt, 5);
        assert!(q.table.is_some());
        // A gap without a reorder clause means 100 % reorder.
        let mut g = base(30 * MS);
        g.gap = 3;
        q.change(&g, SimTime::ZERO).unwrap();
        assert_eq!(
            q.spec().reorder,
            Some(NetemPercent {
                p: u32::MAX,
                corr: 0
            })
        );
        // Reordering needs a delay.
        let mut bad = base(0);
        bad.gap = 2;
        assert!(q.change(&bad, SimTime::ZERO).is_err());
        assert_eq!(q.spec().gap, 3, "a failed change changes nothing");
    }

    #[test]
    fn jitter_is_capped_at_i32_max() {
        let mut s = base(0);
        s.jitter = u64::MAX;
        let q = netem(&s);
        assert_eq!(q.jitter, i32::MAX);
        assert_eq!(q.spec().jitter, i32::MAX as u64);
    }
}
