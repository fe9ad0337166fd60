//! `red` — Random Early Detection as Linux implements it (docs/semantics/qdiscs.md §5;
//! Linux include/net/red.h, net/sched/sch_red.c; the parameters arrive as
//! iproute2's tc/q_red.c and tc/tc_red.c computed them).
//!
//! The average is an EWMA of the child's backlog in BYTES, kept scaled by
//! 2^Wlog and updated only at arrivals (`qavg += b − qavg >> Wlog`). Between
//! the thresholds Linux does not flip a fresh coin per packet: it draws a
//! random threshold `qR` once per mark and marks when
//! `((qavg − qth_min) >> Wlog) · qcount ≥ qR`. At or above `max` every packet
//! is a hard mark (no gentle region). ECN marks replace drops when `ecn` is
//! set (`harddrop` keeps hard marks as drops; `nodrop` keeps non-ECT packets).
//!
//! The real queue is the single child (an anonymous bfifo(limit), re-created
//! and purged on every change, see tree/). RED goes idle only when asked to
//! dequeue while empty; under a tbf it is always peeked first and never
//! observes that (§9.3).
//!
//! Adaptive RED runs a 500 ms timer. The model evaluates the ticks lazily:
//! before every operation all ticks due up to `now` are applied in order,
//! which is exact because nothing the tick reads (qavg, idle start) changes
//! between operations.
//!
//! CPM-RED (§7): with a `dscp_coeff` map the between-threshold test becomes
//! `c·lhs ≥ qR` for the packet's class coefficient `c`.

use super::cpm::{scaled_ge, Cpm};
use super::fifo::Fifo;
use super::ops::{
    absorbing, wrong_kind, BuildEnv, Built, Changed, ChildChange, Peeked, Purged, Qdisc, Reduce,
};
use super::spec::QdiscSpec;
use super::spec::RedSpec;
use super::tree::{self, Node};
use super::AnyQdisc;
use super::{DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::rng::ComponentRng;
use crate::time::SimTime;
use serde::Serialize;
use serde_json::json;

/// The adaptive timer period (HZ/2, independent of HZ).
pub const ADAPT_PERIOD_NS: u64 = 500_000_000;
/// 1 % and 50 % of 2³² (`MAX_P_MIN`, `MAX_P_MAX`).
pub const MAX_P_MIN: u32 = 42_949_673;
pub const MAX_P_MAX: u32 = 2_147_483_650;

/// `struct red_stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RedXstats {
    pub prob_drop: u64,
    pub prob_mark: u64,
    pub forced_drop: u64,
    pub forced_mark: u64,
    pub pdrop: u64,
}

/// The kernel's `struct red_parms` derived from a spec (`red_set_parms`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RedParms {
    /// thresholds scaled by 2^Wlog
    pub qth_min_s: u64,
    pub qth_max_s: u64,
    pub wlog: u8,
    pub scell_log: u8,
    pub stab: [u8; 256],
    /// max − min, at least 1 (unscaled bytes)
    pub delta: u32,
    pub max_p: u32,
    pub max_p_delta: u32,
    /// bytes, for adaptive RED
    pub target_min: u32,
    pub target_max: u32,
    /// µs
    pub scell_max: u32,
}

fn bitlen(x: u32) -> u32 {
    32 - x.leading_zeros()
}

impl RedParms {
    /// `red_check_params` + `red_set_parms`.
    pub fn new(s: &RedSpec) -> Result<RedParms, TcError> {
        let inval = |m: &str| Err(TcError::Invalid(m.to_string()));
        if s.wlog as u32 + bitlen(s.qth_min) >= 32 || s.wlog as u32 + bitlen(s.qth_max) >= 32 {
            return inval("RED: thresholds too large for the EWMA constant");
        }
        if s.qth_max < s.qth_min {
            return inval("RED: max threshold is below min");
        }
        if s.scell_log >= 32 || s.plog >= 32 || s.wlog >= 32 {
            return inval("RED: invalid Wlog, Plog or Scell_log");
        }
        if s.stab.len() != 256 || s.stab.iter().any(|&v| v >= 32) {
            return inval("RED: invalid idle-damping table");
        }
        if s.nodrop && !s.ecn {
            return inval("RED: nodrop requires ecn");
        }
        let delta = (s.qth_max - s.qth_min).max(1);
        let max_p = if s.max_p == 0 {
            (u32::MAX >> s.plog).wrapping_mul(delta)
        } else {
            s.max_p
        };
        let mut stab = [0u8; 256];
        stab.copy_from_slice(&s.stab);
        let d5 = delta / 5;
        Ok(RedParms {
            qth_min_s: (s.qth_min as u64) << s.wlog,
            qth_max_s: (s.qth_max as u64) << s.wlog,
            wlog: s.wlog,
            scell_log: s.scell_log,
            stab,
            delta,
            max_p,
            max_p_delta: (max_p / delta).max(1),
            target_min: s.qth_min + 2 * d5,
            target_max: s.qth_min + 3 * d5,
            scell_max: 255u32 << s.scell_log,
        })
    }

    /// `red_calc_qavg_from_idle_time` for an idle period of `idle_ns`.
    pub fn idle_decay(&self, qavg: u64, idle_ns: u64) -> u64 {
        let us = (idle_ns / 1000).min(self.scell_max as u64);
        let s = self.stab[((us >> self.scell_log) & 255) as usize];
        if s > 0 {
            return qavg >> s;
        }
        let lin = ((qavg as u128 * us as u128) >> self.scell_log) as u64;
        if lin < qavg >> 1 {
            qavg - lin
        } else {
            qavg >> 1
        }
    }

    /// One adaptive step (`red_adaptative_algo`) given the unscaled average.
    pub fn adapt(&mut self, avg: u64) {
        if avg > self.target_max as u64 && self.max_p <= MAX_P_MAX {
            self.max_p += MAX_P_MIN.min(self.max_p / 4);
        } else if avg < self.target_min as u64 && self.max_p >= MAX_P_MIN {
            self.max_p = (self.max_p / 10) * 9;
        }
        let d = self.delta;
        self.max_p_delta = ((self.max_p + d / 2) / d).max(1);
    }

    /// `red_random`: the next random threshold, 0 … 2³²/max_p_delta.
    #[inline]
    pub fn random(&self, draw: u32) -> u32 {
        draw / self.max_p_delta
    }
}

/// RED's decision for one arrival (`red_action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedVerdict {
    Pass,
    Prob,
    Hard,
}

/// The red qdisc.
#[derive(Debug)]
pub struct Red {
    spec: RedSpec,
    parms: RedParms,
    /// scaled average (`qavg`)
    qavg: u64,
    qcount: i64,
    qr: u32,
    idle_since: Option<SimTime>,
    /// next adaptive tick (ns), when the timer is armed
    next_adapt: Option<u64>,
    rng: ComponentRng,
    /// Fixed draws for unit tests, consumed before the stream.
    #[cfg(test)]
    pub(crate) scripted: std::collections::VecDeque<u32>,
    xs: RedXstats,
    cpm: Option<Cpm>,
    stats: QdiscStats,
}

impl Red {
    /// `red_init`: the child is created by the tree; RED starts idle.
    pub fn new(spec: &RedSpec, seed: u64, stream: &str, now: SimTime) -> Result<Red, TcError> {
        let parms = RedParms::new(spec)?;
        let cpm = match &spec.dscp_coeff {
            Some(m) => Some(Cpm::new(m).map_err(TcError::Invalid)?),
            None => None,
        };
        Ok(Red {
            spec: spec.clone(),
            parms,
            qavg: 0,
            qcount: -1,
            qr: 0,
            idle_since: Some(now),
            next_adapt: arm(spec, now),
            rng: ComponentRng::new(seed, stream),
            #[cfg(test)]
            scripted: Default::default(),
            xs: RedXstats::default(),
            cpm,
            stats: QdiscStats::default(),
        })
    }

    /// `red_change` for RED's own state (the tree replaces the child when
    /// `limit > 0`): new parameters, qavg 0, qcount −1, max_P as configured,
    /// adaptive timer restarted. `child_empty` says whether the (new) child
    /// holds nothing, which starts an idle period. Counters are kept.
    pub fn change(
        &mut self,
        spec: &RedSpec,
        now: SimTime,
        child_empty: bool,
    ) -> Result<(), TcError> {
        let parms = RedParms::new(spec)?;
        match (&mut self.cpm, &spec.dscp_coeff) {
            (Some(c), Some(m)) => c.change(m).map_err(TcError::Invalid)?,
            (slot, Some(m)) => *slot = Some(Cpm::new(m).map_err(TcError::Invalid)?),
            (slot, None) => *slot = None,
        }
        self.spec = spec.clone();
        self.parms = parms;
        self.qavg = 0;
        self.qcount = -1;
        if child_empty {
            self.idle_since = Some(now);
        }
        self.next_adapt = arm(spec, now);
        Ok(())
    }

    fn draw(&mut self) -> u32 {
        #[cfg(test)]
        if let Some(d) = self.scripted.pop_front() {
            return d;
        }
        self.rng.next_u32()
    }

    /// Apply every adaptive tick due at or before `now`.
    fn catch_up(&mut self, now: SimTime) {
        while let Some(t) = self.next_adapt {
            if t > now.as_nanos() {
                break;
            }
            let q = match self.idle_since {
                Some(s) => self
                    .parms
                    .idle_decay(self.qavg, t.saturating_sub(s.as_nanos())),
                None => self.qavg,
            };
            self.parms.adapt(q >> self.parms.wlog);
            self.next_adapt = Some(t + ADAPT_PERIOD_NS);
        }
    }

    /// The average update and `red_action` for an arrival seeing `backlog`
    /// bytes in the child, with class coefficient `coeff`.
    pub fn decide(&mut self, now: SimTime, backlog: u64, coeff: (u32, u32)) -> RedVerdict {
        let p = &self.parms;
        self.qavg = match self.idle_since.take() {
            Some(s) => p.idle_decay(self.qavg, now.as_nanos().saturating_sub(s.as_nanos())),
            None => self.qavg + backlog - (self.qavg >> p.wlog),
        };
        if self.qavg < p.qth_min_s {
            self.qcount = -1;
            return RedVerdict::Pass;
        }
        if self.qavg >= p.qth_max_s {
            self.qcount = -1;
            return RedVerdict::Hard;
        }
        self.qcount += 1;
        if self.qcount == 0 {
            let d = self.draw();
            self.qr = self.parms.random(d);
            return RedVerdict::Pass;
        }
        let lhs = ((self.qavg - p.qth_min_s) >> p.wlog) * self.qcount as u64;
        if scaled_ge(lhs, self.qr, coeff) {
            self.qcount = 0;
            let d = self.draw();
            self.qr = self.parms.random(d);
            return RedVerdict::Prob;
        }
        RedVerdict::Pass
    }

    /// `red_enqueue`.
    pub fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        child: &mut [Node],
    ) -> Verdict {
        self.catch_up(ctx.now);
        let (len, tos) = {
            let p = ctx.arena.get(id);
            (p.len, p.tos)
        };
        let class = self.cpm.as_ref().map(|c| c.class_of(tos));
        let coeff = match (&self.cpm, class) {
            (Some(c), Some(k)) => c.coeff(k),
            _ => (1, 1),
        };
        let backlog = tree::chain_backlog(child);
        let verdict = self.decide(ctx.now, backlog, coeff);
        let (ecn, harddrop, nodrop) = (self.spec.ecn, self.spec.harddrop, self.spec.nodrop);
        let mut early: Option<DropReason> = None;
        let mut marked = false;
        match verdict {
            RedVerdict::Pass => {}
            RedVerdict::Prob => {
                self.stats.overlimits += 1;
                if ecn && ctx.arena.get_mut(id).set_ce() {
                    self.xs.prob_mark += 1;
                    marked = true;
                } else if !(ecn && nodrop) {
                    self.xs.prob_drop += 1;
                    early = Some(DropReason::EarlyDrop);
                }
            }
            RedVerdict::Hard => {
                self.stats.overlimits += 1;
                if harddrop || !ecn {
                    self.xs.forced_drop += 1;
                    early = Some(DropReason::ForcedDrop);
                } else if ctx.arena.get_mut(id).set_ce() {
                    self.xs.forced_mark += 1;
                    marked = true;
                } else if !nodrop {
                    self.xs.forced_drop += 1;
                    early = Some(DropReason::ForcedDrop);
                }
            }
        }
        let counters = match (&mut self.cpm, class) {
            (Some(c), Some(k)) => Some(&mut c.counters[k]),
            _ => None,
        };
        if let Some(reason) = early {
            if let Some(c) = counters {
                c.early += 1;
                c.forced += (reason == DropReason::ForcedDrop) as u64;
            }
            self.stats.dropped();
            ctx.drop_packet(id, reason);
            return Verdict::Dropped(reason);
        }
        let v = if child.is_empty() {
            ctx.drop_packet(id, DropReason::Blackhole);
            Verdict::Dropped(DropReason::Blackhole)
        } else {
            absorbing(&mut self.stats, reduce, |reduce| {
                tree::enqueue_chain(child, ctx, reduce, id)
            })
        };
        match v {
            Verdict::Queued => {
                if let Some(c) = counters {
                    c.passed += 1;
                    c.marked += marked as u64;
                }
                self.stats.queued(len);
                Verdict::Queued
            }
            Verdict::Dropped(r) => {
                if let Some(c) = counters {
                    c.pdrop += 1;
                }
                self.xs.pdrop += 1;
                self.stats.dropped();
                Verdict::Dropped(r)
            }
        }
    }

    /// `red_dequeue`: take from the child; asked while empty, start idling.
    pub fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        child: &mut [Node],
    ) -> Option<PacketId> {
        self.catch_up(ctx.now);
        let p = absorbing(self, reduce, |reduce| {
            tree::dequeue_chain(child, ctx, reduce)
        });
        match p {
            Some(id) => {
                let len = ctx.arena.len_of(id);
                self.stats.unqueued(len);
                self.stats.sent(len, ctx.arena.segs_of(id));
                Some(id)
            }
            None => {
                if self.idle_since.is_none() {
                    self.idle_since = Some(ctx.now);
                }
                None
            }
        }
    }

    pub fn spec(&self) -> &RedSpec {
        &self.spec
    }

    pub fn parms(&self) -> &RedParms {
        &self.parms
    }

    pub fn xstats_raw(&self) -> &RedXstats {
        &self.xs
    }

    /// Current scaled average and count (for tests and traces).
    pub fn qavg_scaled(&self) -> u64 {
        self.qavg
    }

    pub fn qcount(&self) -> i64 {
        self.qcount
    }
}

impl Qdisc for Red {
    /// `red_init`, with the default bfifo child when `limit > 0`.
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Red(s) = spec else {
            return None;
        };
        Some(Red::new(s, env.seed, env.stream, env.now).map(|r| Built {
            qdisc: r,
            default_child: (s.limit > 0).then(|| Fifo::bfifo(s.limit).into()),
        }))
    }

    fn kind(&self) -> &'static str {
        "red"
    }

    crate::qdisc::ops::forward_queue_ops!(chained Red);

    /// red's peek is its child's own (non-destructive) peek.
    fn peek(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, child: &mut [Node]) -> Peeked {
        Peeked::Head(absorbing(self, reduce, |reduce| {
            tree::peek_chain(child, ctx, reduce)
        }))
    }

    /// `red_reset`: the tree purges the child; the average restarts.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        self.stats.qlen = 0;
        self.stats.backlog = 0;
        self.qavg = 0;
        self.qcount = -1;
        self.idle_since = Some(ctx.now);
        Purged::default()
    }

    /// `red_change`: with `limit > 0` a fresh default bfifo replaces (and
    /// purges) the child, so the child is then empty. Validated first: a
    /// refused change touches nothing.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Red(s) = spec else {
            return Err(wrong_kind());
        };
        // Both checks before anything changes (a failing `Cpm::change` would
        // leave the class table half changed), in the order tc reports them.
        RedParms::new(s)?;
        if let Some(m) = &s.dscp_coeff {
            Cpm::new(m).map_err(TcError::Invalid)?;
        }
        let new_child = (s.limit > 0).then(|| Box::new(AnyQdisc::from(Fifo::bfifo(s.limit))));
        let child_empty = new_child.is_some() || child.is_none_or(|c| c.stats().qlen == 0);
        Red::change(self, s, ctx.now, child_empty)?;
        Ok(Changed {
            purged: Purged::default(),
            child: new_child.map_or(ChildChange::Keep, ChildChange::Replace),
        })
    }

    crate::qdisc::ops::own_stats!();

    /// Options as `tc -d` reports them: the spec's fields without the
    /// damping table, `max_p` the current value (adaptive RED moves it).
    fn options(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(&self.spec).unwrap_or(serde_json::Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.remove("stab");
            o.insert("max_p".into(), json!(self.parms.max_p));
        }
        v
    }

    /// `red_dump_stats`: marked / early / pdrop / other (+ CPM classes).
    fn xstats(&self) -> serde_json::Value {
        let x = &self.xs;
        let mut v = json!({
            "marked": x.prob_mark + x.forced_mark,
            "early": x.prob_drop + x.forced_drop,
            "pdrop": x.pdrop,
            "other": 0,
        });
        if let Some(c) = &self.cpm {
            v["classes"] = c.xstats();
        }
        v
    }

    fn held(&self) -> u64 {
        0
    }

    fn classful(&self) -> bool {
        true
    }
}

fn arm(spec: &RedSpec, now: SimTime) -> Option<u64> {
    (spec.adaptive && spec.adaptive_timer).then(|| now.as_nanos() + ADAPT_PERIOD_NS)
}

#[cfg(test)]
mod tests;
