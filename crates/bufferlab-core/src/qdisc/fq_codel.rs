//! `fq_codel` — Fair Queuing with CoDel (docs/semantics/qdiscs.md §8.2;
//! net/sched/sch_fq_codel.c). Packets are hashed (SIM keyed hash of the
//! 5-tuple, per-qdisc key) into `flows` queues, each with its own CoDel
//! state; a deficit round robin with quantum serves first the list of new
//! flows, then the old ones. Above `limit` packets (or `memory_limit` bytes of
//! truesize) the fattest flow loses up to `drop_batch` packets from its head,
//! at most half its backlog.
//!
//! Drops inside dequeue (CoDel) and the enqueue-time batch drops are
//! reported to every ancestor through [`Reduce`]. SIM deviation: the kernel
//! reports dequeue-time drops only when a packet is returned; we report them
//! on every dequeue so ancestors never hold phantom packets.

use super::codel::{
    codel_time, codel_to_us, us_to_codel, CodelParams, CodelStats, CodelVars, Entry,
};
use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc, Reduce};
use super::spec::{FqCodelSpec, QdiscSpec};
use super::tree::Node;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::{Packet, PacketId};
use crate::rng::ComponentRng;
use serde_json::json;
use std::collections::VecDeque;

/// SIM stand-in for `skb->truesize` (docs/semantics/qdiscs.md §8.2).
pub const TRUESIZE_EXTRA: u64 = 768;

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
    cvars: CodelVars,
}

impl Flow {
    fn new() -> Flow {
        Flow {
            queue: VecDeque::new(),
            backlog: 0,
            deficit: 0,
            list: List::None,
            cvars: CodelVars::default(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Conf {
    limit: u32,
    quantum: u32,
    memory_limit: u32,
    drop_batch: u32,
}

#[derive(Debug)]
pub struct FqCodel {
    params: CodelParams,
    conf: Conf,
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    hash_key: u64,
    cstats: CodelStats,
    memory_usage: u64,
    drop_overlimit: u64,
    drop_overmemory: u64,
    new_flow_count: u64,
    stats: QdiscStats,
}

fn resolve(
    spec: &FqCodelSpec,
    cur: Option<(CodelParams, Conf)>,
) -> Result<(CodelParams, Conf), TcError> {
    let (p, c) = cur.unwrap_or((
        CodelParams {
            target: us_to_codel(5_000),
            interval: us_to_codel(100_000),
            ce_threshold: None,
            ecn: true,
            mtu: 1514,
        },
        Conf {
            limit: 10_240,
            quantum: 1514,
            memory_limit: 32 << 20,
            drop_batch: 64,
        },
    ));
    let params = CodelParams {
        target: spec.target.map_or(p.target, us_to_codel),
        interval: spec.interval.map_or(p.interval, us_to_codel),
        ce_threshold: spec.ce_threshold.map(us_to_codel).or(p.ce_threshold),
        ecn: spec.ecn.unwrap_or(p.ecn),
        mtu: p.mtu,
    };
    let conf = Conf {
        limit: spec.limit.unwrap_or(c.limit),
        quantum: spec.quantum.map_or(c.quantum, |q| q.max(256)),
        memory_limit: spec.memory_limit.map_or(c.memory_limit, |m| m.min(1 << 31)),
        drop_batch: spec.drop_batch.map_or(c.drop_batch, |b| b.max(1)),
    };
    if conf.limit == 0 {
        return Err(TcError::Invalid(
            "fq_codel: limit must be at least 1".into(),
        ));
    }
    Ok((params, conf))
}

/// SIM flow hash: a keyed mix of the 5-tuple (splitmix64 finaliser).
pub(crate) fn hash32(p: &Packet, key: u64) -> u32 {
    let mut h = key ^ ((p.src.0 as u64) << 32 | p.dst.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= ((p.src_port as u64) << 24 | (p.dst_port as u64) << 8 | p.proto as u64)
        .wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    (h >> 32) as u32
}

impl FqCodel {
    pub fn new(spec: &FqCodelSpec, seed: u64, stream: &str) -> Result<FqCodel, TcError> {
        let (params, conf) = resolve(spec, None)?;
        let n = spec.flows.unwrap_or(1024);
        if !(1..=65_536).contains(&n) {
            return Err(TcError::Invalid("fq_codel: flows must be 1..65536".into()));
        }
        Ok(FqCodel {
            params,
            conf,
            flows: (0..n).map(|_| Flow::new()).collect(),
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            hash_key: ComponentRng::new(seed, stream).next_u64(),
            cstats: CodelStats::default(),
            memory_usage: 0,
            drop_overlimit: 0,
            drop_overmemory: 0,
            new_flow_count: 0,
            stats: QdiscStats::default(),
        })
    }

    pub fn classify(&self, p: &Packet) -> usize {
        ((hash32(p, self.hash_key) as u64 * self.flows.len() as u64) >> 32) as usize
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, id: PacketId) -> Verdict {
        let now = codel_time(ctx.now.as_nanos());
        let (idx, len) = {
            let p = ctx.arena.get(id);
            (self.classify(p), p.len)
        };
        let f = &mut self.flows[idx];
        f.queue.push_back(Entry {
            id,
            t_enq: now,
            len,
        });
        f.backlog += len as u64;
        if f.list == List::None {
            f.list = List::New;
            self.new_flows.push_back(idx as u32);
            self.new_flow_count += 1;
            f.deficit = self.conf.quantum as i64;
        }
        self.stats.queued(len);
        self.memory_usage += len as u64 + TRUESIZE_EXTRA;
        let memory_limited = self.memory_usage > self.conf.memory_limit as u64;
        if self.stats.qlen <= self.conf.limit as u64 && !memory_limited {
            return Verdict::Queued;
        }
        let (n, bytes) = self.drop_fattest(ctx);
        self.drop_overlimit += n;
        if memory_limited {
            self.drop_overmemory += n;
        }
        // Linux returns NET_XMIT_CN when the new packet's own flow lost
        // packets (ancestors then count one drop and no new packet); saying
        // `Queued` and reporting all n leaves every ancestor with the same
        // qlen, backlog and drops.
        reduce.left(n, bytes, n);
        Verdict::Queued
    }

    /// `fq_codel_drop`: up to drop_batch head packets of the flow with the
    /// largest backlog, stopping once half its backlog is gone.
    fn drop_fattest(&mut self, ctx: &mut QdiscCtx) -> (u64, u64) {
        let mut idx = 0;
        let mut max = 0;
        for (i, f) in self.flows.iter().enumerate() {
            if f.backlog > max {
                max = f.backlog;
                idx = i;
            }
        }
        let threshold = max >> 1;
        let f = &mut self.flows[idx];
        let (mut i, mut len) = (0u64, 0u64);
        while let Some(e) = f.queue.pop_front() {
            len += e.len as u64;
            self.memory_usage -= e.len as u64 + TRUESIZE_EXTRA;
            self.stats.unqueued(e.len);
            ctx.drop_packet(e.id, DropReason::QueueFull);
            i += 1;
            if i >= self.conf.drop_batch as u64 || len >= threshold {
                break;
            }
        }
        f.cvars.count = f.cvars.count.wrapping_add(i as u32);
        f.backlog -= len;
        self.stats.drops += i;
        (i, len)
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce) -> Option<PacketId> {
        let quantum = self.conf.quantum as i64;
        let out = loop {
            let from_new = !self.new_flows.is_empty();
            let head = if from_new {
                self.new_flows.front()
            } else {
                self.old_flows.front()
            };
            let Some(&fi) = head else {
                break None;
            };
            let fi = fi as usize;
            if self.flows[fi].deficit <= 0 {
                self.flows[fi].deficit += quantum;
                self.take_head(from_new);
                self.flows[fi].list = List::Old;
                self.old_flows.push_back(fi as u32);
                continue;
            }
            let flow = &mut self.flows[fi];
            let stats = &mut self.stats;
            let mem = &mut self.memory_usage;
            let queue = &mut flow.queue;
            let fb = &mut flow.backlog;
            let mut pop = || {
                let e = queue.pop_front()?;
                *fb -= e.len as u64;
                *mem -= e.len as u64 + TRUESIZE_EXTRA;
                stats.unqueued(e.len);
                Some((e, stats.backlog))
            };
            let got = flow
                .cvars
                .dequeue(&self.params, &mut self.cstats, ctx, &mut pop);
            match got {
                None => {
                    self.take_head(from_new);
                    if from_new && !self.old_flows.is_empty() {
                        self.flows[fi].list = List::Old;
                        self.old_flows.push_back(fi as u32);
                    } else {
                        self.flows[fi].list = List::None;
                    }
                }
                Some(e) => {
                    self.flows[fi].deficit -= e.len as i64;
                    self.stats.sent(e.len, ctx.arena.segs_of(e.id));
                    break Some(e.id);
                }
            }
        };
        let (n, b) = (self.cstats.drop_count, self.cstats.drop_len);
        if n > 0 {
            self.stats.drops += n;
            reduce.left(n, b, n);
            self.cstats.drop_count = 0;
            self.cstats.drop_len = 0;
        }
        out
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

impl Qdisc for FqCodel {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::FqCodel(s) = spec else {
            return None;
        };
        Some(FqCodel::new(s, env.seed, env.stream).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "fq_codel"
    }

    #[inline]
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        FqCodel::enqueue(self, ctx, reduce, id)
    }

    #[inline]
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        FqCodel::dequeue(self, ctx, reduce)
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        for f in &mut self.flows {
            while let Some(e) = f.queue.pop_front() {
                n += 1;
                b += e.len as u64;
                ctx.drop_packet(e.id, DropReason::Purged);
            }
            f.backlog = 0;
            f.list = List::None;
            f.cvars = CodelVars::default();
        }
        self.new_flows.clear();
        self.old_flows.clear();
        self.memory_usage = 0;
        Purged {
            packets: n,
            bytes: b,
        }
    }

    /// `fq_codel_change`: given attributes only (`flows` is refused once
    /// created); then trim to the limits by dequeueing and dropping.
    /// Returns (packets, bytes) dropped for the ancestors.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::FqCodel(spec) = spec else {
            return Err(wrong_kind());
        };
        if spec.flows.is_some_and(|f| f as usize != self.flows.len()) {
            return Err(TcError::Invalid(
                "fq_codel: flows can only be set at creation".into(),
            ));
        }
        let (params, conf) = resolve(spec, Some((self.params, self.conf)))?;
        self.params = params;
        self.conf = conf;
        let (mut n, mut b) = (0, 0);
        while self.stats.qlen > self.conf.limit as u64
            || self.memory_usage > self.conf.memory_limit as u64
        {
            let mut reduce = Reduce::default();
            let Some(id) = self.dequeue(ctx, &mut reduce) else {
                break;
            };
            n += reduce.qlen;
            b += reduce.backlog;
            let len = ctx.arena.len_of(id);
            // not sent after all: undo the Sent count, count a drop
            self.stats.bytes -= len as u64;
            self.stats.packets -= 1;
            self.stats.dropped();
            self.cstats.drop_count = 0;
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

    fn options(&self) -> serde_json::Value {
        json!({
            "kind": "fq_codel",
            "limit": self.conf.limit,
            "flows": self.flows.len(),
            "quantum": self.conf.quantum,
            "target": codel_to_us(self.params.target as i32),
            "interval": codel_to_us(self.params.interval as i32),
            "ce_threshold": self.params.ce_threshold.map(|t| codel_to_us(t as i32)),
            "memory_limit": self.conf.memory_limit,
            "ecn": self.params.ecn,
            "drop_batch": self.conf.drop_batch,
        })
    }

    fn xstats(&self) -> serde_json::Value {
        json!({
            "maxpacket": self.cstats.maxpacket,
            "drop_overlimit": self.drop_overlimit,
            "new_flow_count": self.new_flow_count,
            "ecn_mark": self.cstats.ecn_mark,
            "ce_mark": self.cstats.ce_mark,
            "memory_used": self.memory_usage,
            "drop_overmemory": self.drop_overmemory,
            "new_flows_len": self.new_flows.len(),
            "old_flows_len": self.old_flows.len(),
        })
    }

    fn held(&self) -> u64 {
        self.flows.iter().map(|f| f.queue.len() as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Ipv4;
    use crate::qdisc::tree::harness::Env;

    const MS: u64 = 1_000_000;

    fn pkt(env: &mut Env, len: u32, sport: u16) -> PacketId {
        let id = env.pkt(len);
        let p = env.arena.get_mut(id);
        p.src_port = sport;
        p.src = Ipv4(0x0a00_0001);
        p.dst = Ipv4(0x0a00_0002);
        id
    }

    /// Two source ports landing in different queues.
    fn two_ports(q: &FqCodel, env: &mut Env) -> (u16, u16) {
        let a = 5001;
        let ia = {
            let id = pkt(env, 64, a);
            let i = q.classify(env.arena.get(id));
            env.arena.free(id);
            i
        };
        for b in 5002..6000 {
            let id = pkt(env, 64, b);
            let i = q.classify(env.arena.get(id));
            env.arena.free(id);
            if i != ia {
                return (a, b);
            }
        }
        unreachable!()
    }

    #[test]
    fn e21_drr_small_packets_get_24_per_quantum() {
        let mut env = Env::default();
        let mut q = FqCodel::new(&FqCodelSpec::default(), 1, "t").unwrap();
        let (sparse, bulk) = two_ports(&q, &mut env);
        let mut reduce = Reduce::default();
        for _ in 0..40 {
            let id = pkt(&mut env, 64, sparse);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        for _ in 0..10 {
            let id = pkt(&mut env, 1514, bulk);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        assert_eq!(q.list_lens(), (2, 0));
        assert_eq!(q.new_flow_count, 2);
        let mut order = vec![];
        while let Some(id) = q.dequeue(&mut env.ctx(0), &mut reduce) {
            order.push(env.arena.len_of(id));
            env.arena.free(id);
        }
        // 24 small ones (1514 − 24·64 = −22), then one big one per turn
        assert!(order[..24].iter().all(|&l| l == 64));
        assert_eq!(order[24], 1514);
        // the small flow got deficit −22 + 1514 = 1492 → 24 more (16 left)
        assert!(order[25..41].iter().all(|&l| l == 64), "{order:?}");
        assert_eq!(order.len(), 50);
        assert_eq!(reduce, Reduce::default());
        assert_eq!(
            (q.stats().qlen, q.stats().backlog, q.memory_usage),
            (0, 0, 0)
        );
    }

    #[test]
    fn overlimit_drops_from_the_fattest_flow() {
        let mut env = Env::default();
        let mut q = FqCodel::new(
            &FqCodelSpec {
                limit: Some(10),
                ..Default::default()
            },
            1,
            "t",
        )
        .unwrap();
        let (sparse, bulk) = two_ports(&q, &mut env);
        let mut reduce = Reduce::default();
        let id = pkt(&mut env, 100, sparse);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
        for _ in 0..10 {
            let id = pkt(&mut env, 1000, bulk);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        // 11th packet: the bulk flow (10 000 B) loses head packets until
        // ≥ 5 000 B are gone: 5 packets.
        assert_eq!((reduce.qlen, reduce.backlog, reduce.drops), (5, 5000, 5));
        assert_eq!(
            (q.stats().qlen, q.drop_overlimit, q.stats().drops),
            (6, 5, 5)
        );
        let mut counts: Vec<u32> = q.flows.iter().map(|f| f.cvars.count).collect();
        counts.sort_unstable();
        assert_eq!(counts[counts.len() - 1], 5);
        assert_eq!(counts[counts.len() - 2], 0);
    }

    /// A sparse flow keeps a small delay while a bulk flow overloads the
    /// link; the bulk flow is held near the target by CoDel drops.
    #[test]
    fn sparse_flow_is_isolated_from_a_bulk_flow() {
        let mut env = Env::default();
        let mut q = FqCodel::new(&FqCodelSpec::default(), 7, "t").unwrap();
        let (sparse, bulk) = two_ports(&q, &mut env);
        let mut reduce = Reduce::default();
        let service = 1_211_200; // 1514 B at 10 Mbit/s
        let bulk_gap = service * 20 / 21; // 5 % overload, unresponsive
        let (mut na, mut ns, mut np) = (0u64, 0u64, 3 * MS);
        let end = 40_000 * MS;
        let mut sparse_delay = vec![];
        let mut bulk_delay = vec![];
        while na < end {
            let t = na.min(ns).min(np);
            if t == np {
                let id = pkt(&mut env, 98, sparse);
                env.arena.get_mut(id).sent_at = crate::time::SimTime::from_nanos(t);
                q.enqueue(&mut env.ctx(t), &mut reduce, id);
                np += 100 * MS;
            } else if t == na {
                let id = pkt(&mut env, 1514, bulk);
                env.arena.get_mut(id).sent_at = crate::time::SimTime::from_nanos(t);
                q.enqueue(&mut env.ctx(t), &mut reduce, id);
                na += bulk_gap;
            } else {
                if let Some(id) = q.dequeue(&mut env.ctx(t), &mut reduce) {
                    let p = env.arena.get(id);
                    let d = t - p.sent_at.as_nanos();
                    if t > 10_000 * MS {
                        if p.src_port == sparse {
                            sparse_delay.push(d);
                        } else {
                            bulk_delay.push(d);
                        }
                    }
                    let l = p.len as u64;
                    env.arena.free(id);
                    ns += service * l / 1514;
                } else {
                    ns += service;
                }
            }
        }
        let max_sparse = *sparse_delay.iter().max().unwrap() as f64 / 1e6;
        let mean_bulk = bulk_delay.iter().sum::<u64>() as f64 / bulk_delay.len() as f64 / 1e6;
        eprintln!("fq_codel sparse max {max_sparse} ms, bulk mean {mean_bulk} ms");
        assert!(max_sparse < 2.5, "sparse max delay {max_sparse} ms");
        assert!((2.0..15.0).contains(&mean_bulk), "bulk mean {mean_bulk} ms");
        assert!(q.stats().drops > 0);
        assert_eq!(q.stats().qlen, q.held());
        assert_eq!(reduce.drops, q.stats().drops);
    }
}
