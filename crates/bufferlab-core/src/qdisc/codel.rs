//! `codel` — Controlled Delay AQM as Linux implements it (docs/semantics/qdiscs.md §8.1;
//! include/net/codel.h, include/net/codel_impl.h, net/sched/sch_codel.c).
//!
//! Time base: codel time = ns >> 10 (u32, 1.024 µs units), compared by
//! signed difference. `1/sqrt(count)` is kept as a Q0.16 reciprocal updated
//! by one fixed-point Newton step per change of `count` (E20).
//!
//! Every queued packet carries its enqueue timestamp next to its id in the
//! qdisc's own queue (no field on `Packet`). Drops made inside dequeue are
//! reported to every ancestor through [`Reduce`] (docs/semantics/qdiscs.md §1.5). The
//! [`CodelVars::dequeue`] core is shared with fq_codel (one per flow).

use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc, Reduce};
use super::spec::{CodelSpec, QdiscSpec};
use super::tree::Node;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use serde_json::json;
use std::collections::VecDeque;

/// ns → codel time.
#[inline]
pub fn codel_time(ns: u64) -> u32 {
    (ns >> 10) as u32
}

/// µs (netlink) → codel time: `(µs × 1000) >> 10`.
#[inline]
pub fn us_to_codel(us: u32) -> u32 {
    ((us as u64 * 1000) >> 10) as u32
}

/// codel time → µs (`codel_time_to_us`), signed.
#[inline]
pub fn codel_to_us(t: i32) -> i64 {
    (t as i64 * 1024) / 1000
}

#[inline]
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

#[inline]
fn after_eq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

#[inline]
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// A queued packet: id, enqueue time (codel time), length.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub id: PacketId,
    pub t_enq: u32,
    pub len: u32,
}

/// `struct codel_params` in codel time units.
#[derive(Clone, Copy, Debug)]
pub struct CodelParams {
    pub target: u32,
    pub interval: u32,
    pub ce_threshold: Option<u32>,
    pub ecn: bool,
    pub mtu: u32,
}

/// `struct codel_stats` (shared by all flows of an fq_codel).
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelStats {
    pub maxpacket: u32,
    pub ecn_mark: u64,
    pub ce_mark: u64,
    /// drops made by the current dequeue (reported to ancestors, then cleared)
    pub drop_count: u64,
    pub drop_len: u64,
}

/// `struct codel_vars`.
#[derive(Clone, Copy, Debug, Default)]
pub struct CodelVars {
    pub count: u32,
    pub lastcount: u32,
    pub dropping: bool,
    /// 1/sqrt(count), Q0.16
    pub rec_inv_sqrt: u16,
    pub first_above_time: u32,
    pub drop_next: u32,
    pub ldelay: u32,
}

impl CodelVars {
    /// One Newton step of `rec_inv_sqrt` toward count^−½ (`codel_Newton_step`).
    pub fn newton_step(&mut self) {
        let y = (self.rec_inv_sqrt as u32) << 16;
        let y2 = ((y as u64 * y as u64) >> 32) as u32;
        let mut v: u64 = (3u64 << 32).wrapping_sub(self.count as u64 * y2 as u64);
        v >>= 2;
        v = (v.wrapping_mul(y as u64)) >> (32 - 2 + 1);
        self.rec_inv_sqrt = (v >> 16) as u16;
    }

    /// `codel_control_law`: t + interval / sqrt(count).
    pub fn control_law(&self, t: u32, interval: u32) -> u32 {
        let r = ((self.rec_inv_sqrt as u32) << 16) as u64;
        t.wrapping_add(((interval as u64 * r) >> 32) as u32)
    }

    /// `codel_should_drop` for the packet just removed (`backlog` = bytes
    /// still queued in the whole qdisc after its removal).
    fn should_drop(
        &mut self,
        e: Option<Entry>,
        p: &CodelParams,
        st: &mut CodelStats,
        backlog: u64,
        now: u32,
    ) -> bool {
        let Some(e) = e else {
            self.first_above_time = 0;
            return false;
        };
        self.ldelay = now.wrapping_sub(e.t_enq);
        st.maxpacket = st.maxpacket.max(e.len);
        if before(self.ldelay, p.target) || backlog <= p.mtu as u64 {
            self.first_above_time = 0;
            return false;
        }
        if self.first_above_time == 0 {
            self.first_above_time = now.wrapping_add(p.interval);
            false
        } else {
            after(now, self.first_above_time)
        }
    }

    /// `codel_dequeue`. `pop` removes the head of this queue and returns it
    /// together with the qdisc backlog (bytes) left after the removal;
    /// dropped packets are freed here and counted in `st.drop_count/len`.
    pub fn dequeue(
        &mut self,
        p: &CodelParams,
        st: &mut CodelStats,
        ctx: &mut QdiscCtx,
        pop: &mut dyn FnMut() -> Option<(Entry, u64)>,
    ) -> Option<Entry> {
        let now = codel_time(ctx.now.as_nanos());
        let (mut e, mut backlog) = match pop() {
            Some((e, b)) => (Some(e), b),
            None => {
                self.dropping = false;
                return None;
            }
        };
        let drop = self.should_drop(e, p, st, backlog, now);
        let drop_one = |e: Entry, st: &mut CodelStats, ctx: &mut QdiscCtx| {
            st.drop_count += 1;
            st.drop_len += e.len as u64;
            ctx.drop_packet(e.id, DropReason::EarlyDrop);
        };
        if self.dropping {
            if !drop {
                self.dropping = false;
            } else {
                while self.dropping && after_eq(now, self.drop_next) {
                    self.count = self.count.wrapping_add(1);
                    self.newton_step();
                    let cur = e.expect("dropping state implies a packet");
                    if p.ecn && ctx.arena.get_mut(cur.id).set_ce() {
                        st.ecn_mark += 1;
                        self.drop_next = self.control_law(self.drop_next, p.interval);
                        break;
                    }
                    drop_one(cur, st, ctx);
                    match pop() {
                        Some((n, b)) => {
                            e = Some(n);
                            backlog = b;
                        }
                        None => e = None,
                    }
                    if !self.should_drop(e, p, st, backlog, now) {
                        self.dropping = false;
                    } else {
                        self.drop_next = self.control_law(self.drop_next, p.interval);
                    }
                }
            }
        } else if drop {
            let cur = e.expect("drop implies a packet");
            if p.ecn && ctx.arena.get_mut(cur.id).set_ce() {
                st.ecn_mark += 1;
            } else {
                drop_one(cur, st, ctx);
                match pop() {
                    Some((n, b)) => {
                        e = Some(n);
                        backlog = b;
                    }
                    None => e = None,
                }
                let _ = self.should_drop(e, p, st, backlog, now);
            }
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            if delta > 1
                && before(
                    now.wrapping_sub(self.drop_next),
                    16u32.wrapping_mul(p.interval),
                )
            {
                self.count = delta;
                self.newton_step();
            } else {
                self.count = 1;
                self.rec_inv_sqrt = u16::MAX;
            }
            self.lastcount = self.count;
            self.drop_next = self.control_law(now, p.interval);
        }
        if let (Some(cur), Some(th)) = (e, p.ce_threshold) {
            if after(self.ldelay, th) && ctx.arena.get_mut(cur.id).set_ce() {
                st.ce_mark += 1;
            }
        }
        e
    }
}

/// Resolved `codel` parameters (kernel defaults for what was not given).
fn params_of(spec: &CodelSpec, cur: Option<(&CodelParams, u32)>) -> (CodelParams, u32) {
    let (base, limit) = cur.map(|(p, l)| (*p, l)).unwrap_or((
        CodelParams {
            target: us_to_codel(5_000),
            interval: us_to_codel(100_000),
            ce_threshold: None,
            ecn: false,
            mtu: 1514,
        },
        1000,
    ));
    (
        CodelParams {
            target: spec.target.map_or(base.target, us_to_codel),
            interval: spec.interval.map_or(base.interval, us_to_codel),
            ce_threshold: match spec.ce_threshold {
                Some(t) => Some(us_to_codel(t)),
                None => base.ce_threshold,
            },
            ecn: spec.ecn.unwrap_or(base.ecn),
            mtu: base.mtu,
        },
        spec.limit.unwrap_or(limit),
    )
}

#[derive(Debug)]
pub struct Codel {
    params: CodelParams,
    limit: u32,
    vars: CodelVars,
    cstats: CodelStats,
    drop_overlimit: u64,
    queue: VecDeque<Entry>,
    /// last instant the qdisc ran (for xstats' relative `drop_next`)
    last_now: u32,
    stats: QdiscStats,
}

impl Codel {
    pub fn new(spec: &CodelSpec) -> Result<Codel, TcError> {
        let (params, limit) = params_of(spec, None);
        if limit == 0 {
            return Err(TcError::Invalid("codel: limit must be at least 1".into()));
        }
        Ok(Codel {
            params,
            limit,
            vars: CodelVars::default(),
            cstats: CodelStats::default(),
            drop_overlimit: 0,
            queue: VecDeque::new(),
            last_now: 0,
            stats: QdiscStats::default(),
        })
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let now = codel_time(ctx.now.as_nanos());
        self.last_now = now;
        if self.stats.qlen < self.limit as u64 {
            let len = ctx.arena.len_of(id);
            self.queue.push_back(Entry {
                id,
                t_enq: now,
                len,
            });
            self.stats.queued(len);
            return Verdict::Queued;
        }
        self.drop_overlimit += 1;
        self.stats.dropped();
        ctx.drop_packet(id, DropReason::QueueFull);
        Verdict::Dropped(DropReason::QueueFull)
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce) -> Option<PacketId> {
        self.last_now = codel_time(ctx.now.as_nanos());
        let queue = &mut self.queue;
        let stats = &mut self.stats;
        let mut pop = || {
            let e = queue.pop_front()?;
            stats.unqueued(e.len);
            Some((e, stats.backlog))
        };
        let e = self
            .vars
            .dequeue(&self.params, &mut self.cstats, ctx, &mut pop);
        let (n, b) = (self.cstats.drop_count, self.cstats.drop_len);
        if n > 0 {
            self.stats.drops += n;
            reduce.left(n, b, n);
            self.cstats.drop_count = 0;
            self.cstats.drop_len = 0;
        }
        let e = e?;
        self.stats.sent(e.len, ctx.arena.segs_of(e.id));
        Some(e.id)
    }

    pub fn vars(&self) -> &CodelVars {
        &self.vars
    }
}

impl Qdisc for Codel {
    fn build(spec: &QdiscSpec, _env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Codel(s) = spec else {
            return None;
        };
        Some(Codel::new(s).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "codel"
    }

    #[inline]
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        _reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        Codel::enqueue(self, ctx, id)
    }

    #[inline]
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        Codel::dequeue(self, ctx, reduce)
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        while let Some(e) = self.queue.pop_front() {
            n += 1;
            b += e.len as u64;
            ctx.drop_packet(e.id, DropReason::Purged);
        }
        self.vars = CodelVars::default();
        Purged {
            packets: n,
            bytes: b,
        }
    }

    /// `codel_change`: only the given attributes change; if the queue is
    /// above the (new) limit, head packets are dropped. Returns the
    /// (packets, bytes) dropped, for the ancestors.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Codel(spec) = spec else {
            return Err(wrong_kind());
        };
        let (params, limit) = params_of(spec, Some((&self.params, self.limit)));
        if limit == 0 {
            return Err(TcError::Invalid("codel: limit must be at least 1".into()));
        }
        self.params = params;
        self.limit = limit;
        let (mut n, mut b) = (0, 0);
        while self.stats.qlen > self.limit as u64 {
            let Some(e) = self.queue.pop_front() else {
                break;
            };
            self.stats.unqueued(e.len);
            self.stats.dropped();
            n += 1;
            b += e.len as u64;
            ctx.drop_packet(e.id, DropReason::Purged);
        }
        Ok(Changed {
            purged: Purged {
                packets: n,
                bytes: b,
            },
            child: ChildChange::Keep,
        })
    }

    crate::qdisc::ops::own_stats!();

    /// Options in µs, as `tc` would read them back from the kernel.
    fn options(&self) -> serde_json::Value {
        json!({
            "kind": "codel",
            "limit": self.limit,
            "target": codel_to_us(self.params.target as i32),
            "interval": codel_to_us(self.params.interval as i32),
            "ce_threshold": self.params.ce_threshold.map(|t| codel_to_us(t as i32)),
            "ecn": self.params.ecn,
        })
    }

    fn xstats(&self) -> serde_json::Value {
        let v = &self.vars;
        let drop_next = if v.dropping {
            codel_to_us(v.drop_next.wrapping_sub(self.last_now) as i32)
        } else {
            0
        };
        json!({
            "count": v.count,
            "lastcount": v.lastcount,
            "ldelay": codel_to_us(v.ldelay as i32),
            "dropping": v.dropping,
            "drop_next": drop_next,
            "maxpacket": self.cstats.maxpacket,
            "ecn_mark": self.cstats.ecn_mark,
            "drop_overlimit": self.drop_overlimit,
            "ce_mark": self.cstats.ce_mark,
        })
    }

    fn held(&self) -> u64 {
        self.queue.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tree::harness::Env;

    const MS: u64 = 1_000_000;

    #[test]
    fn units() {
        assert_eq!(us_to_codel(5_000), 4_882);
        assert_eq!(us_to_codel(100_000), 97_656);
    }

    #[test]
    fn e20_control_law_newton_steps() {
        let expect: [(u16, u32); 10] = [
            (65_535, 97_654),
            (32_769, 48_829),
            (36_864, 54_931),
            (31_968, 47_635),
            (28_935, 43_116),
            (26_481, 39_459),
            (24_588, 36_638),
            (23_037, 34_327),
            (21_746, 32_403),
            (20_647, 30_766),
        ];
        let mut v = CodelVars {
            count: 1,
            rec_inv_sqrt: u16::MAX,
            ..Default::default()
        };
        for (i, &(rec, spacing)) in expect.iter().enumerate() {
            if i > 0 {
                v.count += 1;
                v.newton_step();
            }
            assert_eq!(
                (v.rec_inv_sqrt, v.control_law(0, 97_656)),
                (rec, spacing),
                "count {}",
                v.count
            );
        }
    }

    fn spec() -> CodelSpec {
        CodelSpec::default()
    }

    #[test]
    fn below_target_nothing_is_dropped_and_overlimit_drops() {
        let mut env = Env::default();
        let mut c = Codel::new(&CodelSpec {
            limit: Some(3),
            ..spec()
        })
        .unwrap();
        for _ in 0..4 {
            let id = env.pkt(1000);
            c.enqueue(&mut env.ctx(0), id);
        }
        assert_eq!(
            (c.stats().qlen, c.drop_overlimit, c.stats().drops),
            (3, 1, 1)
        );
        let mut reduce = Reduce::default();
        for _ in 0..3 {
            let id = c.dequeue(&mut env.ctx(MS), &mut reduce).unwrap();
            env.arena.free(id);
        }
        assert!(c.dequeue(&mut env.ctx(MS), &mut reduce).is_none());
        assert_eq!(reduce, Reduce::default());
        assert_eq!(c.stats().packets, 3);
    }

    /// First drop after one interval above target, then the 1/sqrt law.
    #[test]
    fn persistent_delay_enters_dropping_state() {
        let mut env = Env::default();
        let mut c = Codel::new(&spec()).unwrap();
        for _ in 0..200 {
            let id = env.pkt(1514);
            c.enqueue(&mut env.ctx(0), id);
        }
        let mut reduce = Reduce::default();
        // 10 ms sojourn: above target, first_above set (no drop)
        let id = c.dequeue(&mut env.ctx(10 * MS), &mut reduce).unwrap();
        env.arena.free(id);
        assert!(!c.vars.dropping && c.vars.first_above_time != 0);
        // still within the interval
        let id = c.dequeue(&mut env.ctx(100 * MS), &mut reduce).unwrap();
        env.arena.free(id);
        assert_eq!(c.stats().drops, 0);
        // after the interval: one drop, dropping with count 1
        let id = c.dequeue(&mut env.ctx(111 * MS), &mut reduce).unwrap();
        env.arena.free(id);
        assert!(c.vars.dropping);
        assert_eq!(
            (c.vars.count, c.stats().drops, reduce.drops, reduce.qlen),
            (1, 1, 1, 1)
        );
        assert_eq!(reduce.backlog, 1514);
        // the next drop comes ~100 ms later, then ~70.7/50 ms (Newton: 50 ms)
        let id = c.dequeue(&mut env.ctx(200 * MS), &mut reduce).unwrap();
        env.arena.free(id);
        assert_eq!(c.stats().drops, 1);
        let id = c.dequeue(&mut env.ctx(212 * MS), &mut reduce).unwrap();
        env.arena.free(id);
        assert_eq!((c.stats().drops, c.vars.count), (2, 2));
        let x = c.xstats();
        assert_eq!(x["count"], 2);
        assert_eq!(x["dropping"], true);
        // qlen/backlog consistent
        assert_eq!(c.stats().qlen, c.held());
    }

    #[test]
    fn ecn_marks_instead_of_dropping() {
        let mut env = Env::default();
        let mut c = Codel::new(&CodelSpec {
            ecn: Some(true),
            ..spec()
        })
        .unwrap();
        for _ in 0..50 {
            let id = env.pkt(1514);
            env.arena.get_mut(id).tos = 0x02;
            c.enqueue(&mut env.ctx(0), id);
        }
        let mut reduce = Reduce::default();
        for t in [10, 120, 300] {
            let id = c.dequeue(&mut env.ctx(t * MS), &mut reduce).unwrap();
            env.arena.free(id);
        }
        assert_eq!(c.stats().drops, 0);
        assert_eq!(c.cstats.ecn_mark, 2);
    }

    /// A codel drained at 10 Mbit/s while fed at 12 Mbit/s keeps its
    /// sojourn time near the 5 ms target.
    #[test]
    fn constant_overload_holds_the_sojourn_near_target() {
        let mut env = Env::default();
        let mut c = Codel::new(&spec()).unwrap();
        let mut reduce = Reduce::default();
        let service = 1514 * 8 * 100; // ns per packet at ~10 Mbit/s (121.1 µs·10)
        let arrival = service * 20 / 21; // 5 % overload, unresponsive
        let (mut next_a, mut next_s) = (0u64, 0u64);
        let mut delays = vec![];
        let end = 40_000 * MS;
        while next_a < end || next_s < end {
            if next_a <= next_s {
                let id = env.pkt(1514);
                env.arena.get_mut(id).sent_at = crate::time::SimTime::from_nanos(next_a);
                c.enqueue(&mut env.ctx(next_a), id);
                next_a += arrival;
            } else {
                if let Some(id) = c.dequeue(&mut env.ctx(next_s), &mut reduce) {
                    let d = next_s - env.arena.get(id).sent_at.as_nanos();
                    if next_s > 10_000 * MS {
                        delays.push(d);
                    }
                    env.arena.free(id);
                }
                next_s += service;
            }
        }
        let mean = delays.iter().sum::<u64>() as f64 / delays.len() as f64 / 1e6;
        assert!(c.stats().drops > 50, "drops {}", c.stats().drops);
        eprintln!("codel mean sojourn {mean} ms drops {}", c.stats().drops);
        assert!((2.0..12.0).contains(&mean), "mean sojourn {mean} ms");
        assert_eq!(c.stats().qlen, c.held());
    }
}
