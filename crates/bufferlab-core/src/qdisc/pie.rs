//! `pie` — Proportional Integral controller Enhanced as Linux implements it
//! after the 2020 rework (docs/semantics/qdiscs.md §8.3; include/net/pie.h,
//! net/sched/sch_pie.c). Drop probability on the scale MAX = 2⁵⁶ − 1,
//! time in psched ticks (64 ns). Queue delay from per-packet timestamps
//! (default) or from the drain-rate estimator (`dq_rate_estimator`).
//!
//! The probability update is a kernel timer (first 500 ms after creation,
//! then every `tupdate`, rounded up to jiffies at HZ = 250). Between packet
//! events nothing it reads changes, so the updates due are run lazily,
//! in order, before each enqueue/dequeue at or after their instant.

use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc};
use super::spec::{PieSpec, QdiscSpec};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::rng::ComponentRng;
use serde_json::json;
use std::collections::VecDeque;

pub const MAX_PROB: u64 = (1 << 56) - 1;
const TICKS_PER_SEC: u64 = 15_625_000;
const QUEUE_THRESHOLD: u64 = 16_384;
const MTU: u64 = 1514;
/// jiffy at HZ = 250, ns
const JIFFY: u64 = 4_000_000;

#[inline]
fn ticks(ns: u64) -> u64 {
    ns >> 6
}

#[derive(Clone, Copy, Debug)]
struct Params {
    limit: u32,
    /// ticks
    target: u64,
    /// ns (whole jiffies)
    tupdate: u64,
    alpha: u32,
    beta: u32,
    ecn: bool,
    bytemode: bool,
    dq_rate_estimator: bool,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PieVars {
    pub prob: u64,
    pub qdelay: u64,
    pub qdelay_old: u64,
    pub burst_time: u64,
    pub accu_prob: u64,
    /// ticks of the last dequeue / start of a rate measurement
    pub dq_tstamp: Option<u64>,
    pub dq_count: Option<u64>,
    pub avg_dq_rate: u64,
}

impl PieVars {
    pub(crate) fn init(&mut self) {
        self.burst_time = ticks(150_000_000);
        self.dq_tstamp = None;
        self.accu_prob = 0;
        self.dq_count = None;
        self.avg_dq_rate = 0;
    }
}

/// `pie_calculate_probability` (one timer run); `backlog` in bytes.
pub fn calculate_probability(
    v: &mut PieVars,
    target: u64,
    alpha: u32,
    beta: u32,
    rate_mode: bool,
    backlog: u64,
) {
    let (qdelay, qdelay_old);
    if rate_mode {
        qdelay_old = v.qdelay;
        v.qdelay_old = v.qdelay;
        qdelay = (backlog << 8).checked_div(v.avg_dq_rate).unwrap_or(0);
    } else {
        qdelay = v.qdelay;
        qdelay_old = v.qdelay_old;
    }
    let mut update_prob = !(qdelay == 0 && backlog != 0);
    let mut a = (alpha as u64 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
    let mut b = (beta as u64 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
    if v.prob < MAX_PROB / 10 {
        a >>= 1;
        b >>= 1;
        let mut power = 100u64;
        while v.prob < MAX_PROB / power && power <= 1_000_000 {
            a >>= 2;
            b >>= 2;
            power *= 10;
        }
    }
    let mut delta: i64 = (a as i64).wrapping_mul(qdelay as i64 - target as i64);
    delta = delta.wrapping_add((b as i64).wrapping_mul(qdelay as i64 - qdelay_old as i64));
    let oldprob = v.prob;
    if delta > (MAX_PROB / 50) as i64 && v.prob >= MAX_PROB / 10 {
        delta = ((MAX_PROB / 100) * 2) as i64;
    }
    if qdelay > ticks(250_000_000) {
        delta += (MAX_PROB / 50) as i64;
    }
    v.prob = v.prob.wrapping_add(delta as u64);
    if delta > 0 {
        if v.prob < oldprob {
            v.prob = MAX_PROB;
            update_prob = false;
        }
    } else if v.prob > oldprob {
        v.prob = 0;
    }
    if qdelay == 0 && qdelay_old == 0 && update_prob {
        v.prob -= v.prob / 64;
    }
    v.qdelay = qdelay;
    if v.qdelay < target / 2
        && v.qdelay_old < target / 2
        && v.prob == 0
        && (v.avg_dq_rate > 0 || !rate_mode)
    {
        v.init();
    }
    if !rate_mode {
        v.qdelay_old = qdelay;
    }
}

#[derive(Debug)]
pub struct Pie {
    p: Params,
    vars: PieVars,
    queue: VecDeque<(PacketId, u64, u32)>,
    next_update: u64,
    rng: ComponentRng,
    #[cfg(test)]
    pub(crate) scripted: VecDeque<u64>,
    packets_in: u64,
    overlimit: u64,
    dropped: u64,
    maxq: u64,
    ecn_mark: u64,
    stats: QdiscStats,
}

fn resolve(spec: &PieSpec, cur: Option<Params>) -> Result<Params, TcError> {
    let c = cur.unwrap_or(Params {
        limit: 1000,
        target: ticks(15_000_000),
        tupdate: 4 * JIFFY,
        alpha: 2,
        beta: 20,
        ecn: false,
        bytemode: false,
        dq_rate_estimator: false,
    });
    let p = Params {
        limit: spec.limit.unwrap_or(c.limit),
        target: spec.target.map_or(c.target, |us| ticks(us as u64 * 1000)),
        tupdate: spec
            .tupdate
            .map_or(c.tupdate, |us| (us as u64 * 1000).div_ceil(JIFFY) * JIFFY),
        alpha: spec.alpha.unwrap_or(c.alpha),
        beta: spec.beta.unwrap_or(c.beta),
        ecn: spec.ecn.unwrap_or(c.ecn),
        bytemode: spec.bytemode.unwrap_or(c.bytemode),
        dq_rate_estimator: spec.dq_rate_estimator.unwrap_or(c.dq_rate_estimator),
    };
    if p.limit == 0 {
        return Err(TcError::Invalid("pie: limit must be at least 1".into()));
    }
    if p.alpha > 32 || p.beta > 32 {
        return Err(TcError::Invalid("pie: alpha and beta must be 0..32".into()));
    }
    Ok(p)
}

impl Pie {
    pub fn new(spec: &PieSpec, seed: u64, stream: &str, now_ns: u64) -> Result<Pie, TcError> {
        let p = resolve(spec, None)?;
        let mut vars = PieVars::default();
        vars.init();
        Ok(Pie {
            p,
            vars,
            queue: VecDeque::new(),
            next_update: now_ns + 500_000_000,
            rng: ComponentRng::new(seed, stream),
            #[cfg(test)]
            scripted: VecDeque::new(),
            packets_in: 0,
            overlimit: 0,
            dropped: 0,
            maxq: 0,
            ecn_mark: 0,
            stats: QdiscStats::default(),
        })
    }

    /// Run the probability updates due at or before `now_ns`.
    fn timers(&mut self, now_ns: u64) {
        while self.next_update <= now_ns {
            calculate_probability(
                &mut self.vars,
                self.p.target,
                self.p.alpha,
                self.p.beta,
                self.p.dq_rate_estimator,
                self.stats.backlog,
            );
            if self.p.tupdate == 0 {
                self.next_update = u64::MAX;
            } else {
                self.next_update += self.p.tupdate;
            }
        }
    }

    fn draw(&mut self) -> u64 {
        #[cfg(test)]
        if let Some(d) = self.scripted.pop_front() {
            return d;
        }
        self.rng.next_u64()
    }

    /// `pie_drop_early`.
    fn drop_early(&mut self, backlog: u64, len: u32) -> bool {
        let (target, bytemode) = (self.p.target, self.p.bytemode);
        let mut v = self.vars;
        let out = drop_early(&mut v, target, bytemode, MTU, backlog, len, || self.draw());
        self.vars = v;
        out
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let now = ctx.now.as_nanos();
        self.timers(now);
        let len = ctx.arena.len_of(id);
        let reason = if self.stats.qlen >= self.p.limit as u64 {
            self.overlimit += 1;
            DropReason::QueueFull
        } else {
            let enqueue = if !self.drop_early(self.stats.backlog, len) {
                true
            } else if self.p.ecn
                && self.vars.prob <= MAX_PROB / 10
                && ctx.arena.get_mut(id).set_ce()
            {
                self.ecn_mark += 1;
                true
            } else {
                false
            };
            if enqueue {
                self.packets_in += 1;
                self.maxq = self.maxq.max(self.stats.qlen);
                self.queue.push_back((id, ticks(now), len));
                self.stats.queued(len);
                return Verdict::Queued;
            }
            DropReason::EarlyDrop
        };
        self.dropped += 1;
        self.vars.accu_prob = 0;
        self.stats.dropped();
        ctx.drop_packet(id, reason);
        Verdict::Dropped(reason)
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<PacketId> {
        let now_ns = ctx.now.as_nanos();
        self.timers(now_ns);
        let (id, t_enq, len) = self.queue.pop_front()?;
        self.stats.unqueued(len);
        self.process_dequeue(ticks(now_ns), t_enq, len);
        self.stats.sent(len, ctx.arena.segs_of(id));
        Some(id)
    }

    /// `pie_process_dequeue` (backlog = bytes left after the removal).
    fn process_dequeue(&mut self, now: u64, t_enq: u64, len: u32) {
        process_dequeue(
            &mut self.vars,
            self.p.dq_rate_estimator,
            now,
            t_enq,
            len,
            self.stats.backlog,
        );
    }

    pub fn vars(&self) -> &PieVars {
        &self.vars
    }
}

/// `pie_process_dequeue` on one set of variables (`backlog` = bytes left
/// after the removal; times in psched ticks).
pub fn process_dequeue(
    v: &mut PieVars,
    rate_est: bool,
    now: u64,
    t_enq: u64,
    len: u32,
    backlog: u64,
) {
    {
        let dtime;
        if !rate_est {
            v.qdelay = now - t_enq;
            dtime = v.dq_tstamp.map_or(0, |t| now - t);
            v.dq_tstamp = Some(now);
            if backlog == 0 {
                v.qdelay = 0;
            }
            if dtime == 0 {
                return;
            }
        } else {
            if backlog >= QUEUE_THRESHOLD && v.dq_count.is_none() {
                v.dq_tstamp = Some(now);
                v.dq_count = Some(0);
            }
            let Some(c) = v.dq_count else {
                return;
            };
            let c = c + len as u64;
            v.dq_count = Some(c);
            if c < QUEUE_THRESHOLD {
                return;
            }
            let count = ((c << 8) as u32) as u64;
            let dt = now - v.dq_tstamp.unwrap_or(now);
            if dt == 0 {
                return;
            }
            let rate = count / dt;
            v.avg_dq_rate = if v.avg_dq_rate == 0 {
                rate
            } else {
                v.avg_dq_rate - (v.avg_dq_rate >> 3) + (rate >> 3)
            };
            if backlog < QUEUE_THRESHOLD {
                v.dq_count = None;
            } else {
                v.dq_count = Some(0);
                v.dq_tstamp = Some(now);
            }
            dtime = dt;
        }
        v.burst_time = v.burst_time.saturating_sub(dtime);
    }
}

/// `pie_drop_early` on one set of variables: `mtu` is `psched_mtu`, `draw`
/// the random number (64 bits; its top 56 are compared) when one is needed.
pub fn drop_early(
    v: &mut PieVars,
    target: u64,
    bytemode: bool,
    mtu: u64,
    backlog: u64,
    len: u32,
    draw: impl FnOnce() -> u64,
) -> bool {
    if v.burst_time > 0 {
        return false;
    }
    if v.qdelay < target / 2 && v.prob < MAX_PROB / 5 {
        return false;
    }
    if backlog < 2 * mtu {
        return false;
    }
    let lp = if bytemode && len as u64 <= mtu {
        len as u64 * (v.prob / mtu)
    } else {
        v.prob
    };
    if lp == 0 {
        v.accu_prob = 0;
    } else {
        v.accu_prob = v.accu_prob.wrapping_add(lp);
    }
    if v.accu_prob < (MAX_PROB / 100) * 85 {
        return false;
    }
    if v.accu_prob >= (MAX_PROB / 2) * 17 {
        return true;
    }
    if (draw() >> 8) < lp {
        v.accu_prob = 0;
        return true;
    }
    false
}

impl Qdisc for Pie {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Pie(s) = spec else {
            return None;
        };
        Some(Pie::new(s, env.seed, env.stream, env.now.as_nanos()).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "pie"
    }

    crate::qdisc::ops::forward_queue_ops!(leaf Pie);

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        while let Some((id, _, len)) = self.queue.pop_front() {
            n += 1;
            b += len as u64;
            ctx.drop_packet(id, DropReason::Purged);
        }
        self.vars = PieVars::default();
        self.vars.init();
        Purged {
            packets: n,
            bytes: b,
        }
    }

    /// `pie_change`: given attributes only; then drop head packets down to
    /// the limit. Returns (packets, bytes) dropped, for the ancestors.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Pie(spec) = spec else {
            return Err(wrong_kind());
        };
        self.p = resolve(spec, Some(self.p))?;
        let (mut n, mut b) = (0, 0);
        while self.stats.qlen > self.p.limit as u64 {
            let Some((id, _, len)) = self.queue.pop_front() else {
                break;
            };
            self.stats.unqueued(len);
            self.stats.dropped();
            n += 1;
            b += len as u64;
            ctx.drop_packet(id, DropReason::Purged);
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

    /// Options as the kernel reports them (µs).
    fn options(&self) -> serde_json::Value {
        json!({
            "kind": "pie",
            "limit": self.p.limit,
            "target": (self.p.target << 6) / 1000,
            "tupdate": self.p.tupdate / 1000,
            "alpha": self.p.alpha,
            "beta": self.p.beta,
            "ecn": self.p.ecn,
            "bytemode": self.p.bytemode,
            "dq_rate_estimator": self.p.dq_rate_estimator,
        })
    }

    fn xstats(&self) -> serde_json::Value {
        let mut x = json!({
            "prob": self.vars.prob as f64 / MAX_PROB as f64,
            "delay": ((self.vars.qdelay << 6) as u32) / 1000,
            "packets_in": self.packets_in,
            "overlimit": self.overlimit,
            "dropped": self.dropped,
            "maxq": self.maxq,
            "ecn_mark": self.ecn_mark,
        });
        if self.p.dq_rate_estimator {
            x["avg_dq_rate"] = json!((self.vars.avg_dq_rate * TICKS_PER_SEC) >> 8);
        }
        x
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
    fn e22_alpha_beta_scaling_and_delta() {
        assert_eq!(ticks(15_000_000), 234_375);
        let a = (2 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
        let b = (20 * (MAX_PROB / TICKS_PER_SEC)) >> 4;
        assert_eq!((a, b), (576_460_752, 5_764_607_522));
        let mut v = PieVars {
            qdelay: 312_500,
            qdelay_old: 234_375,
            ..Default::default()
        };
        calculate_probability(&mut v, 234_375, 2, 20, false, 100_000);
        assert_eq!(v.prob, 241_892_421_875);
        assert_eq!(v.qdelay_old, 312_500);
        // a second round with the same delay: only the alpha term, still up
        let p1 = v.prob;
        calculate_probability(&mut v, 234_375, 2, 20, false, 100_000);
        assert!(v.prob > p1);
    }

    #[test]
    fn zero_delay_decays_by_a_64th_and_small_delay_resets() {
        let mut v = PieVars {
            prob: MAX_PROB / 2,
            ..Default::default()
        };
        calculate_probability(&mut v, 234_375, 2, 20, false, 0);
        // delta = a·(0 − target) < 0 first, then the non-linear decay
        let a = ((2 * (MAX_PROB / TICKS_PER_SEC)) >> 4) as i64;
        let after_delta = (MAX_PROB / 2) as i64 - a * 234_375;
        let expect = after_delta as u64 - after_delta as u64 / 64;
        assert_eq!(v.prob, expect);
    }

    fn spec() -> PieSpec {
        PieSpec::default()
    }

    /// Probability rises under a constant overload and decays to zero
    /// (and the state resets) once the queue has emptied.
    #[test]
    fn probability_rises_under_overload_and_decays_when_empty() {
        let mut env = Env::default();
        let mut q = Pie::new(&spec(), 3, "t", 0).unwrap();
        let service = 1_211_200; // 1514 B at 10 Mbit/s
        let arrival = service * 2 / 3; // 15 Mbit/s offered
        let (mut na, mut ns) = (0u64, 0u64);
        let mut peak = 0;
        let mut delays = vec![];
        while na < 20_000 * MS {
            if na <= ns {
                let id = env.pkt(1514);
                env.arena.get_mut(id).sent_at = crate::time::SimTime::from_nanos(na);
                q.enqueue(&mut env.ctx(na), id);
                na += arrival;
            } else {
                if let Some(id) = q.dequeue(&mut env.ctx(ns)) {
                    if ns > 10_000 * MS {
                        delays.push(ns - env.arena.get(id).sent_at.as_nanos());
                    }
                    env.arena.free(id);
                }
                ns += service;
            }
            peak = peak.max(q.vars.prob);
        }
        let mean = delays.iter().sum::<u64>() as f64 / delays.len() as f64 / 1e6;
        assert!(
            peak > MAX_PROB / 5,
            "peak {}",
            peak as f64 / MAX_PROB as f64
        );
        assert!(q.dropped > 1000);
        // held near the 15 ms target
        assert!((5.0..40.0).contains(&mean), "mean {mean} ms");
        // drain, then idle: prob decays and the state resets
        let mut t = 20_000 * MS;
        while q
            .dequeue(&mut env.ctx(t))
            .map(|id| env.arena.free(id))
            .is_some()
        {
            t += service;
        }
        let p_drained = q.vars.prob;
        let _ = q.dequeue(&mut env.ctx(t + 100 * MS));
        assert!(q.vars.prob < p_drained);
        let _ = q.dequeue(&mut env.ctx(t + 30_000 * MS));
        assert_eq!(q.vars.prob, 0);
        assert_eq!(q.vars.burst_time, ticks(150 * MS));
        let x = q.xstats();
        assert_eq!(x["dropped"], q.dropped);
    }

    #[test]
    fn burst_allowance_and_limit() {
        let mut env = Env::default();
        let mut q = Pie::new(
            &PieSpec {
                limit: Some(2),
                ..spec()
            },
            3,
            "t",
            0,
        )
        .unwrap();
        q.vars.prob = MAX_PROB; // burst allowance still protects
        for _ in 0..2 {
            let id = env.pkt(1514);
            assert_eq!(q.enqueue(&mut env.ctx(0), id), Verdict::Queued);
        }
        let id = env.pkt(1514);
        assert_eq!(
            q.enqueue(&mut env.ctx(0), id),
            Verdict::Dropped(DropReason::QueueFull)
        );
        assert_eq!((q.overlimit, q.dropped, q.stats().drops), (1, 1, 1));
        // burst allowance consumed by dequeues 150 ms apart
        let id = q.dequeue(&mut env.ctx(0)).unwrap();
        env.arena.free(id);
        let id = q.dequeue(&mut env.ctx(160 * MS)).unwrap();
        env.arena.free(id);
        assert_eq!(q.vars.burst_time, 0);
    }
}
