//! `fq_pie` — flow queues with PIE per flow (docs/semantics/qdiscs.md §17;
//! net/sched/sch_fq_pie.c: `fq_pie_classify`, `fq_pie_qdisc_enqueue`,
//! `fq_pie_qdisc_dequeue`, `fq_pie_timer`, `fq_pie_change`, `fq_pie_init`,
//! `fq_pie_dump`, `fq_pie_dump_stats`; the PIE arithmetic of
//! include/net/pie.h and net/sched/sch_pie.c, shared with `pie`: pie.rs
//! `drop_early`, `process_dequeue`, `calculate_probability`).
//!
//! Packets are hashed (the keyed 5-tuple hash fq_codel uses) into `flows`
//! queues served by the deficit round robin of fq_codel (new flows first,
//! `quantum` bytes). Each flow has its own PIE variables; the parameters
//! (`target`, `tupdate`, `alpha`, `beta`, `bytemode`,
//! `dq_rate_estimator`) are shared. An arrival is dropped when the qdisc
//! holds `limit` packets, or by its flow's `pie_drop_early` on the flow's
//! backlog, unless `ecn` is on, the flow's probability is at most
//! `ecn_prob` % and the packet is ECN-capable: then it is marked. Above
//! `memory_limit` (truesize, as fq_codel's) only `overmemory` counts.
//! The probability timer (first 500 ms after creation, then every
//! `tupdate`, in whole jiffies) updates every flow; as in pie.rs it runs
//! lazily before the next packet event (flows idle since their last reset
//! are skipped: the update leaves them as they are).
//!
//! GSO: the kernel does not segment in fq_pie; an aggregate is one entry.

use super::fq_codel::{hash32, TRUESIZE_EXTRA};
use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc};
use super::pie::{calculate_probability, drop_early, process_dequeue, PieVars, MAX_PROB};
use super::spec::{FqPieSpec, QdiscSpec};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::rng::ComponentRng;
use serde_json::json;
use std::collections::VecDeque;

const MTU: u64 = 1514;
/// jiffy at HZ = 250, ns
const JIFFY: u64 = 4_000_000;

#[inline]
fn ticks(ns: u64) -> u64 {
    ns >> 6
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    id: PacketId,
    /// enqueue time, psched ticks
    t_enq: u64,
    len: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Debug)]
struct Flow {
    queue: VecDeque<Entry>,
    backlog: u64,
    deficit: i64,
    list: List,
    vars: PieVars,
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
    quantum: u32,
    memory_limit: u32,
    ecn_prob: u32,
    ecn: bool,
    bytemode: bool,
    dq_rate_estimator: bool,
}

fn fresh_vars() -> PieVars {
    let mut v = PieVars::default();
    v.init();
    v
}

fn resolve(s: &FqPieSpec, cur: Option<Params>) -> Result<Params, TcError> {
    let c = cur.unwrap_or(Params {
        limit: 10_240,
        target: ticks(15_000_000),
        tupdate: 4 * JIFFY,
        alpha: 2,
        beta: 20,
        quantum: MTU as u32,
        memory_limit: 32 << 20,
        ecn_prob: 10,
        ecn: false,
        bytemode: false,
        dq_rate_estimator: false,
    });
    let p = Params {
        limit: s.limit.unwrap_or(c.limit),
        target: s.target.map_or(c.target, |us| ticks(us as u64 * 1000)),
        tupdate: s
            .tupdate
            .map_or(c.tupdate, |us| (us as u64 * 1000).div_ceil(JIFFY) * JIFFY),
        alpha: s.alpha.unwrap_or(c.alpha),
        beta: s.beta.unwrap_or(c.beta),
        quantum: s.quantum.unwrap_or(c.quantum),
        memory_limit: s.memory_limit.unwrap_or(c.memory_limit),
        ecn_prob: s.ecn_prob.unwrap_or(c.ecn_prob),
        ecn: s.ecn.unwrap_or(c.ecn),
        bytemode: s.bytemode.unwrap_or(c.bytemode),
        dq_rate_estimator: s.dq_rate_estimator.unwrap_or(c.dq_rate_estimator),
    };
    if p.alpha > 32 || p.beta > 32 || p.ecn_prob >= 100 {
        return Err(TcError::Invalid(String::new()));
    }
    Ok(p)
}

#[derive(Debug)]
pub struct FqPie {
    p: Params,
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    hash_key: u64,
    rng: ComponentRng,
    next_update: u64,
    memory_usage: u64,
    packets_in: u64,
    dropped: u64,
    overlimit: u64,
    overmemory: u64,
    ecn_mark: u64,
    new_flow_count: u64,
    stats: QdiscStats,
}

impl FqPie {
    pub fn new(spec: &FqPieSpec, seed: u64, stream: &str, now_ns: u64) -> Result<FqPie, TcError> {
        if let Some(n) = spec.flows {
            if !(1..=65_536).contains(&n) {
                return Err(TcError::Invalid(
                    "sch_fq_pie: Number of flows must range in [1..65536]".into(),
                ));
            }
        }
        let p = resolve(spec, None)?;
        let n = spec.flows.unwrap_or(1024);
        let mut rng = ComponentRng::new(seed, stream);
        Ok(FqPie {
            p,
            flows: (0..n)
                .map(|_| Flow {
                    queue: VecDeque::new(),
                    backlog: 0,
                    deficit: 0,
                    list: List::None,
                    vars: fresh_vars(),
                })
                .collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            hash_key: rng.next_u64(),
            rng,
            next_update: now_ns + 500_000_000,
            memory_usage: 0,
            packets_in: 0,
            dropped: 0,
            overlimit: 0,
            overmemory: 0,
            ecn_mark: 0,
            new_flow_count: 0,
            stats: QdiscStats::default(),
        })
    }

    fn classify(&self, ctx: &QdiscCtx, id: PacketId) -> usize {
        let h = hash32(ctx.arena.get(id), self.hash_key) as u64;
        ((h * self.flows.len() as u64) >> 32) as usize
    }

    /// `fq_pie_timer` for every run due by `now_ns`.
    fn timers(&mut self, now_ns: u64) {
        let idle = fresh_vars();
        while self.next_update <= now_ns {
            for f in &mut self.flows {
                if f.backlog == 0 && f.vars == idle {
                    continue;
                }
                calculate_probability(
                    &mut f.vars,
                    self.p.target,
                    self.p.alpha,
                    self.p.beta,
                    self.p.dq_rate_estimator,
                    f.backlog,
                );
            }
            if self.p.tupdate == 0 {
                self.next_update = u64::MAX;
            } else {
                self.next_update += self.p.tupdate;
            }
        }
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let now = ctx.now.as_nanos();
        self.timers(now);
        let idx = self.classify(ctx, id);
        let len = ctx.arena.len_of(id);
        let truesize = len as u64 + TRUESIZE_EXTRA;
        let memory_limited = self.memory_usage > self.p.memory_limit as u64 + truesize;
        let reason = if self.stats.qlen >= self.p.limit as u64 {
            self.overlimit += 1;
            DropReason::QueueFull
        } else {
            if memory_limited {
                self.overmemory += 1;
            }
            let p = self.p;
            let rng = &mut self.rng;
            let f = &mut self.flows[idx];
            let enqueue = if !drop_early(
                &mut f.vars,
                p.target,
                p.bytemode,
                MTU,
                f.backlog,
                len,
                || rng.next_u64(),
            ) {
                true
            } else if p.ecn
                && f.vars.prob <= (MAX_PROB / 100) * p.ecn_prob as u64
                && ctx.arena.get_mut(id).set_ce()
            {
                self.ecn_mark += 1;
                true
            } else {
                false
            };
            if enqueue {
                self.packets_in += 1;
                self.memory_usage += truesize;
                self.stats.queued(len);
                if f.list == List::None {
                    f.list = List::New;
                    f.deficit = p.quantum as i64;
                    self.new_flows.push_back(idx as u32);
                    self.new_flow_count += 1;
                }
                f.queue.push_back(Entry {
                    id,
                    t_enq: ticks(now),
                    len,
                });
                f.backlog += len as u64;
                return Verdict::Queued;
            }
            DropReason::EarlyDrop
        };
        self.dropped += 1;
        self.flows[idx].vars.accu_prob = 0;
        self.stats.dropped();
        ctx.drop_packet(id, reason);
        Verdict::Dropped(reason)
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<PacketId> {
        let now = ctx.now.as_nanos();
        self.timers(now);
        loop {
            let from_new = !self.new_flows.is_empty();
            let fi = *if from_new {
                self.new_flows.front()
            } else {
                self.old_flows.front()
            }? as usize;
            let f = &mut self.flows[fi];
            if f.deficit <= 0 {
                f.deficit += self.p.quantum as i64;
                f.list = List::Old;
                self.take_head(from_new);
                self.old_flows.push_back(fi as u32);
                continue;
            }
            let Some(e) = f.queue.pop_front() else {
                self.take_head(from_new);
                if from_new && !self.old_flows.is_empty() {
                    self.flows[fi].list = List::Old;
                    self.old_flows.push_back(fi as u32);
                } else {
                    self.flows[fi].list = List::None;
                }
                continue;
            };
            f.deficit -= e.len as i64;
            f.backlog -= e.len as u64;
            self.memory_usage -= e.len as u64 + TRUESIZE_EXTRA;
            process_dequeue(
                &mut f.vars,
                self.p.dq_rate_estimator,
                ticks(now),
                e.t_enq,
                e.len,
                f.backlog,
            );
            self.stats.unqueued(e.len);
            self.stats.sent(e.len, ctx.arena.segs_of(e.id));
            return Some(e.id);
        }
    }

    fn take_head(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// (new_flows_len, old_flows_len)
    pub fn list_lens(&self) -> (usize, usize) {
        (self.new_flows.len(), self.old_flows.len())
    }
}

impl Qdisc for FqPie {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::FqPie(s) = spec else {
            return None;
        };
        Some(FqPie::new(s, env.seed, env.stream, env.now.as_nanos()).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "fq_pie"
    }

    crate::qdisc::ops::forward_queue_ops!(leaf FqPie);

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        for f in &mut self.flows {
            for e in f.queue.drain(..) {
                n += 1;
                b += e.len as u64;
                ctx.drop_packet(e.id, DropReason::Purged);
            }
            f.backlog = 0;
            f.list = List::None;
            f.vars = fresh_vars();
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.memory_usage = 0;
        Purged {
            packets: n,
            bytes: b,
        }
    }

    /// `fq_pie_change`: `flows` only at creation; then head packets leave
    /// (dequeued and dropped) down to `limit`.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::FqPie(spec) = spec else {
            return Err(wrong_kind());
        };
        // the kernel refuses any `flows` once created; the same number is let
        // through, as for fq_codel, so that a change repeating the options
        // the qdisc was made with still applies
        if spec.flows.is_some_and(|f| f as usize != self.flows.len()) {
            return Err(TcError::Invalid(
                "sch_fq_pie: Number of flows cannot be changed".into(),
            ));
        }
        self.p = resolve(spec, Some(self.p))?;
        let (mut n, mut b) = (0, 0);
        while self.stats.qlen > self.p.limit as u64 {
            let Some(id) = self.dequeue(ctx) else {
                break;
            };
            let len = ctx.arena.len_of(id);
            self.stats.bytes -= len as u64;
            self.stats.packets -= ctx.arena.segs_of(id) as u64;
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

    /// `fq_pie_dump`: times in µs as the kernel reports them.
    fn options(&self) -> serde_json::Value {
        json!({
            "kind": "fq_pie",
            "limit": self.p.limit,
            "flows": self.flows.len(),
            "target": (self.p.target << 6) / 1000,
            "tupdate": self.p.tupdate / 1000,
            "alpha": self.p.alpha,
            "beta": self.p.beta,
            "quantum": self.p.quantum,
            "memory_limit": self.p.memory_limit,
            "ecn_prob": self.p.ecn_prob,
            "ecn": self.p.ecn,
            "bytemode": self.p.bytemode,
            "dq_rate_estimator": self.p.dq_rate_estimator,
        })
    }

    /// `fq_pie_dump_stats` (`struct tc_fq_pie_xstats`).
    fn xstats(&self) -> serde_json::Value {
        json!({
            "packets_in": self.packets_in,
            "dropped": self.dropped,
            "overlimit": self.overlimit,
            "overmemory": self.overmemory,
            "ecn_mark": self.ecn_mark,
            "new_flow_count": self.new_flow_count,
            "new_flows_len": self.new_flows.len(),
            "old_flows_len": self.old_flows.len(),
            "memory_usage": self.memory_usage,
        })
    }

    fn held(&self) -> u64 {
        self.flows.iter().map(|f| f.queue.len() as u64).sum()
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

    fn two_ports(q: &FqPie, env: &mut Env) -> (u16, u16) {
        let a = pkt(env, 64, 1);
        let ia = q.classify(&env.ctx(0), a);
        env.arena.free(a);
        for p in 2..1000 {
            let b = pkt(env, 64, p);
            let ib = q.classify(&env.ctx(0), b);
            env.arena.free(b);
            if ib != ia {
                return (1, p);
            }
        }
        unreachable!()
    }

    #[test]
    fn defaults_are_the_kernels() {
        let q = FqPie::new(&FqPieSpec::default(), 1, "t", 0).unwrap();
        let o = q.options();
        assert_eq!(o["limit"], 10_240);
        assert_eq!(o["flows"], 1024);
        assert_eq!(o["target"], 15_000);
        assert_eq!(o["tupdate"], 16_000); // 15 ms in whole 4 ms jiffies
        assert_eq!(o["quantum"], 1514);
        assert_eq!(o["memory_limit"], 32 << 20);
        assert_eq!(o["ecn_prob"], 10);
    }

    #[test]
    fn drr_gives_small_packets_24_per_quantum() {
        let mut env = Env::default();
        let mut q = FqPie::new(&FqPieSpec::default(), 1, "t", 0).unwrap();
        let (sparse, bulk) = two_ports(&q, &mut env);
        for _ in 0..40 {
            let id = pkt(&mut env, 64, sparse);
            q.enqueue(&mut env.ctx(0), id);
        }
        for _ in 0..10 {
            let id = pkt(&mut env, 1514, bulk);
            q.enqueue(&mut env.ctx(0), id);
        }
        assert_eq!((q.list_lens(), q.new_flow_count), ((2, 0), 2));
        let mut order = vec![];
        while let Some(id) = q.dequeue(&mut env.ctx(0)) {
            order.push(env.arena.len_of(id));
            env.arena.free(id);
        }
        assert!(order[..24].iter().all(|&l| l == 64));
        assert_eq!(order[24], 1514);
        assert_eq!(order.len(), 50);
        assert_eq!(
            (q.stats().qlen, q.stats().backlog, q.memory_usage),
            (0, 0, 0)
        );
    }

    #[test]
    fn limit_drops_count_as_overlimit() {
        let mut env = Env::default();
        let mut q = FqPie::new(
            &FqPieSpec {
                limit: Some(5),
                ..Default::default()
            },
            1,
            "t",
            0,
        )
        .unwrap();
        let mut v = vec![];
        for _ in 0..6 {
            let id = pkt(&mut env, 100, 1);
            v.push(q.enqueue(&mut env.ctx(0), id));
        }
        assert_eq!(v[5], Verdict::Dropped(DropReason::QueueFull));
        assert_eq!(
            (q.overlimit, q.dropped, q.packets_in, q.stats().drops),
            (1, 1, 5, 1)
        );
    }

    #[test]
    fn probability_is_per_flow() {
        // A bulk flow sits 100 ms deep; a sparse flow's packets wait for
        // nothing. After the timer runs, only the bulk flow has a probability.
        let mut env = Env::default();
        let mut q = FqPie::new(&FqPieSpec::default(), 1, "t", 0).unwrap();
        let (sparse, bulk) = two_ports(&q, &mut env);
        let ms = 1_000_000u64;
        for i in 0..200u64 {
            let id = pkt(&mut env, 1000, bulk);
            q.enqueue(&mut env.ctx(i * ms), id);
        }
        // serve the bulk flow at 100 packets/s from 100 ms on: sojourn ≥ 100 ms
        let mut t = 100 * ms;
        while t < 1_000 * ms {
            if let Some(id) = q.dequeue(&mut env.ctx(t)) {
                env.arena.free(id);
            }
            let id = pkt(&mut env, 1000, bulk);
            q.enqueue(&mut env.ctx(t), id);
            t += 10 * ms;
        }
        let id = pkt(&mut env, 100, sparse);
        q.enqueue(&mut env.ctx(t), id);
        let (pb, ps) = (pkt(&mut env, 1, bulk), pkt(&mut env, 1, sparse));
        let ib = q.classify(&env.ctx(0), pb);
        let is = q.classify(&env.ctx(0), ps);
        assert!(q.flows[ib].vars.prob > 0);
        assert_eq!(q.flows[is].vars.prob, 0);
        assert_eq!(q.flows[is].vars, fresh_vars());
    }

    #[test]
    fn flows_only_at_creation() {
        let mut env = Env::default();
        let mut q = FqPie::new(&FqPieSpec::default(), 1, "t", 0).unwrap();
        let same = QdiscSpec::FqPie(FqPieSpec {
            flows: Some(1024),
            ..Default::default()
        });
        q.change(&same, &mut env.ctx(0), None).unwrap();
        let s = QdiscSpec::FqPie(FqPieSpec {
            flows: Some(512),
            ..Default::default()
        });
        let e = q.change(&s, &mut env.ctx(0), None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Error: sch_fq_pie: Number of flows cannot be changed.\nRTNETLINK answers: Invalid argument"
        );
        let e = FqPie::new(
            &FqPieSpec {
                flows: Some(0),
                ..Default::default()
            },
            1,
            "t",
            0,
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .contains("Number of flows must range in [1..65536]"));
    }
}
