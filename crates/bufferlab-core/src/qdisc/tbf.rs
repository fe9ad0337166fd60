//! `tbf` — token bucket filter (docs/semantics/qdiscs.md §3; Linux net/sched/sch_tbf.c,
//! `psched_ratecfg_precompute` in net/sched/sch_generic.c, `psched_l2t_ns`
//! in include/net/sch_generic.h).
//!
//! Tokens are time: the bucket holds up to `buffer` ns of transmission credit
//! at `rate`; a packet costs `l2t(len)` ns computed with the kernel's
//! multiply-shift reciprocal, so every departure time is the kernel's to the
//! nanosecond. The bucket starts full; `change` refills it (tokens reset,
//! `t_c` kept). A packet longer than `max_size` (the burst, or the peak
//! bucket if smaller) can never be sent and is dropped at enqueue.
//!
//! The queue lives in the single child (by default an anonymous `bfifo` of
//! `limit` bytes); tbf only peeks at the child's head and takes it when both
//! buckets cover its cost, otherwise it arms the watchdog for the exact
//! instant the tokens will suffice and counts one `overlimits`.
//!
//! The child handling that needs the whole hierarchy (creating the default
//! bfifo, `fifo_set_limit` on change, the noop black hole after the child is
//! deleted) lives in `tree/`. Not modelled: GSO segmentation of oversized
//! skbs (our packets are MTU frames), the legacy rate tables (`/CELL`).

use super::fifo::Fifo;
use super::ops::{
    absorbing, wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc, Reduce,
};
use super::spec::QdiscSpec;
use super::spec::TbfSpec;
use super::tree::{self, Node};
use super::AnyQdisc;
use super::{DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::time::SimTime;

/// A rate in the kernel's precomputed form (`struct psched_ratecfg`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateCfg {
    /// bytes per second
    pub rate: u64,
    pub mult: u32,
    pub shift: u8,
    /// bytes added to every packet before costing (`overhead`, u16 in tc_ratespec)
    pub overhead: u32,
    /// minimum packet unit (`mpu`)
    pub mpu: u32,
    /// `linklayer atm|adsl`: ceil(len/48) cells of 53 bytes
    pub atm: bool,
}

impl RateCfg {
    /// `psched_ratecfg_precompute`: the smallest `shift` for which
    /// `mult = floor(1e9·2^shift / rate)` has bit 31 set (or the factor has
    /// reached 2^63), so that `len·mult >> shift` ≈ len·1e9/rate ns.
    pub fn new(rate: u64, overhead: u32, mpu: u32, atm: bool) -> RateCfg {
        let (mut mult, mut shift) = (1u32, 0u8);
        let mut factor: u64 = 1_000_000_000;
        // A zero rate (refused by validation) keeps mult 1, shift 0.
        while let Some(m) = factor.checked_div(rate) {
            // Fits in u32: it starts ≤ 1e9 and stops once bit 31 is set.
            mult = m as u32;
            if mult & (1 << 31) != 0 || factor & (1 << 63) != 0 {
                break;
            }
            factor <<= 1;
            shift += 1;
        }
        RateCfg {
            rate,
            mult,
            shift,
            overhead,
            mpu,
            atm,
        }
    }

    /// `psched_l2t_ns`: nanoseconds to send `len` bytes (overhead added
    /// first, then raised to `mpu`, then ATM cells).
    #[inline]
    pub fn l2t_ns(&self, len: u32) -> u64 {
        let mut len = len as u64 + self.overhead as u64;
        if len < self.mpu as u64 {
            len = self.mpu as u64;
        }
        if self.atm {
            len = len.div_ceil(48) * 53;
        }
        match len.checked_mul(self.mult as u64) {
            Some(p) => p >> self.shift,
            None => ((len as u128 * self.mult as u128) >> self.shift) as u64,
        }
    }
}

/// The tbf qdisc.
#[derive(Debug)]
pub struct Tbf {
    /// The options as last configured (shown by `tc qdisc show`).
    spec: TbfSpec,
    rate: RateCfg,
    peak: Option<RateCfg>,
    /// bucket depth in ns (`q->buffer`)
    buffer: i64,
    /// peak bucket depth in ns (`q->mtu`), 0 without peakrate
    mtu: i64,
    /// largest admissible packet in bytes
    max_size: u32,
    /// current credit in ns (`q->tokens`, `q->ptokens`)
    tokens: i64,
    ptokens: i64,
    /// time of the last departure (`q->t_c`)
    t_c: i64,
    stats: QdiscStats,
}

/// Parameters derived from a spec, validated, not yet applied.
struct Params {
    rate: RateCfg,
    peak: Option<RateCfg>,
    buffer: i64,
    mtu: i64,
    max_size: u32,
}

impl Tbf {
    /// `tbf_init`: validate, precompute, start with a full bucket at `now`.
    pub fn new(spec: &TbfSpec, now: SimTime) -> Result<Tbf, TcError> {
        let p = Self::params(spec)?;
        Ok(Tbf {
            spec: spec.clone(),
            rate: p.rate,
            peak: p.peak,
            buffer: p.buffer,
            mtu: p.mtu,
            max_size: p.max_size,
            tokens: p.buffer,
            ptokens: p.mtu,
            t_c: now.as_nanos() as i64,
            stats: QdiscStats::default(),
        })
    }

    /// The checks and arithmetic of `tbf_change` (iproute2 ≥ 3.14 sends the
    /// burst in bytes, so `buffer = l2t(burst)` and `max_size = burst`).
    fn params(spec: &TbfSpec) -> Result<Params, TcError> {
        if spec.rate == 0 {
            return Err(TcError::Invalid(
                "tbf: \"rate\" must be greater than 0".into(),
            ));
        }
        if spec.overhead > u16::MAX as u32 {
            return Err(TcError::Invalid(format!(
                "tbf: overhead {} out of range 0..65535",
                spec.overhead
            )));
        }
        if spec.mpu > u16::MAX as u32 {
            return Err(TcError::Invalid(format!(
                "tbf: mpu {} out of range 0..65535",
                spec.mpu
            )));
        }
        let rate = RateCfg::new(spec.rate, spec.overhead, spec.mpu, spec.atm);
        let mut max_size = spec.burst;
        // With the burst in bytes (TCA_TBF_BURST) the kernel takes l2t(burst)
        // unclamped; only the legacy tick value was capped at 2³² ns.
        let buffer = rate.l2t_ns(spec.burst).min(i64::MAX as u64) as i64;
        let (peak, mtu) = match spec.peakrate {
            None | Some(0) => (None, 0),
            Some(prate) => {
                if prate <= spec.rate {
                    return Err(TcError::Invalid(format!(
                        "tbf: peakrate {prate} B/s must be greater than rate {} B/s",
                        spec.rate
                    )));
                }
                let mtu_bytes = spec.mtu.ok_or_else(|| {
                    TcError::Invalid(
                        "tbf: when \"peakrate\" is specified, \"mtu\" must also be specified"
                            .into(),
                    )
                })?;
                let peak = RateCfg::new(prate, spec.overhead, spec.mpu, spec.atm);
                max_size = max_size.min(mtu_bytes);
                (
                    Some(peak),
                    peak.l2t_ns(mtu_bytes).min(i64::MAX as u64) as i64,
                )
            }
        };
        if max_size == 0 {
            return Err(TcError::Invalid(
                "tbf: \"burst\" (and \"mtu\" with peakrate) must be greater than 0".into(),
            ));
        }
        Ok(Params {
            rate,
            peak,
            buffer,
            mtu,
            max_size,
        })
    }

    /// `tbf_enqueue`: drop what can never be sent, split a GSO aggregate
    /// larger than the bucket into segments that fit (`tbf_segment`, E5),
    /// else hand to the child. An empty slot (`child` empty) is Linux's
    /// noop qdisc: a black hole.
    pub fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        child: &mut [Node],
    ) -> Verdict {
        let len = ctx.arena.len_of(id);
        if len > self.max_size {
            let p = ctx.arena.get(id);
            if p.is_gso() && p.header_len() + p.gso_size as u32 <= self.max_size {
                return self.enqueue_segments(ctx, reduce, id, child);
            }
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::TooBig);
            return Verdict::Dropped(DropReason::TooBig);
        }
        if child.is_empty() {
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::Blackhole);
            return Verdict::Dropped(DropReason::Blackhole);
        }
        let v = absorbing(self, reduce, |reduce| {
            tree::enqueue_chain(child, ctx, reduce, id)
        });
        match v {
            Verdict::Queued => {
                self.stats.queued(len);
                Verdict::Queued
            }
            Verdict::Dropped(r) => {
                self.stats.dropped();
                Verdict::Dropped(r)
            }
        }
    }

    /// `tbf_segment`: enqueue each segment of the aggregate `id` into the
    /// child. Queued if any segment was; the ancestors, which count one
    /// entry of the aggregate's length, learn of the extra entries and of
    /// the bytes of segments the child refused (`Reduce`).
    fn enqueue_segments(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        child: &mut [Node],
    ) -> Verdict {
        let prev_len = ctx.arena.len_of(id) as u64;
        let mut segs = Vec::new();
        ctx.arena.segment(id, &mut segs);
        let (mut queued, mut queued_len) = (0u64, 0u64);
        let mut last = Verdict::Dropped(DropReason::Blackhole);
        for s in segs {
            let seg_len = ctx.arena.len_of(s);
            last = if child.is_empty() {
                ctx.drop_packet(s, DropReason::Blackhole);
                Verdict::Dropped(DropReason::Blackhole)
            } else {
                absorbing(self, reduce, |reduce| {
                    tree::enqueue_chain(child, ctx, reduce, s)
                })
            };
            match last {
                Verdict::Queued => {
                    self.stats.queued(seg_len);
                    queued += 1;
                    queued_len += seg_len as u64;
                }
                Verdict::Dropped(_) => self.stats.dropped(),
            }
        }
        if queued == 0 {
            return last;
        }
        reduce.grew(queued - 1);
        reduce.left(0, prev_len - queued_len, 0);
        Verdict::Queued
    }

    /// `tbf_dequeue`: peek at the child's head; send it if both buckets cover
    /// its cost, else arm the watchdog for the exact instant and count an
    /// overlimit. Nothing happens (no overlimit) while the child is empty.
    pub fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        child: &mut [Node],
    ) -> Option<PacketId> {
        let head = absorbing(self, reduce, |reduce| tree::peek_chain(child, ctx, reduce));
        let id = head?;
        let len = ctx.arena.len_of(id);
        let now = ctx.now.as_nanos() as i64;
        let elapsed = (now - self.t_c).min(self.buffer);
        let ptoks = match &self.peak {
            Some(peak) => (elapsed + self.ptokens).min(self.mtu) - peak.l2t_ns(len) as i64,
            None => 0,
        };
        let toks = (elapsed + self.tokens).min(self.buffer) - self.rate.l2t_ns(len) as i64;
        if toks >= 0 && ptoks >= 0 {
            let taken = absorbing(self, reduce, |reduce| {
                tree::dequeue_chain(child, ctx, reduce)
            });
            let id = taken?;
            self.t_c = now;
            self.tokens = toks;
            self.ptokens = ptoks;
            self.stats.unqueued(len);
            self.stats.sent(len, ctx.arena.segs_of(id));
            return Some(id);
        }
        let wait = (-toks).max(-ptoks);
        ctx.arm_watchdog(SimTime::from_nanos((now + wait) as u64));
        self.stats.overlimits += 1;
        None
    }

    pub fn spec(&self) -> &TbfSpec {
        &self.spec
    }

    /// Bucket depth in ns (`buffer`; `tc` prints it as `buffer >> 6` ticks).
    pub fn buffer_ns(&self) -> u64 {
        self.buffer as u64
    }

    pub fn max_size(&self) -> u32 {
        self.max_size
    }

    /// Current token credit in ns.
    pub fn tokens_ns(&self) -> i64 {
        self.tokens
    }
}

impl Qdisc for Tbf {
    /// `tbf_init`, with the default bfifo child when `limit > 0`.
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Tbf(s) = spec else {
            return None;
        };
        Some(Tbf::new(s, env.now).map(|t| Built {
            qdisc: t,
            default_child: (s.limit > 0).then(|| Fifo::bfifo(s.limit).into()),
        }))
    }

    fn kind(&self) -> &'static str {
        "tbf"
    }

    crate::qdisc::ops::forward_queue_ops!(chained Tbf);

    /// `tbf_reset` (the tree purges the child): empty, bucket full, `t_c = now`.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        self.stats.qlen = 0;
        self.stats.backlog = 0;
        self.t_c = ctx.now.as_nanos() as i64;
        self.tokens = self.buffer;
        self.ptokens = self.mtu;
        Purged::default()
    }

    /// `tbf_change` for this qdisc's own state: recompute, refill both
    /// buckets, keep counters and `t_c`. On error nothing changes. The child's
    /// limit (`fifo_set_limit`) is the tree's business.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        _ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Tbf(spec) = spec else {
            return Err(wrong_kind());
        };
        let p = Self::params(spec)?;
        self.spec = spec.clone();
        self.rate = p.rate;
        self.peak = p.peak;
        self.buffer = p.buffer;
        self.mtu = p.mtu;
        self.max_size = p.max_size;
        self.tokens = p.buffer;
        self.ptokens = p.mtu;
        Ok(Changed {
            purged: Purged::default(),
            child: ChildChange::FifoLimit(spec.limit),
        })
    }

    crate::qdisc::ops::own_stats!();

    /// The options as `tc` sent them (the [`TbfSpec`] JSON shape).
    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.spec).unwrap_or(serde_json::Value::Null)
    }

    fn held(&self) -> u64 {
        0
    }

    fn classful(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::spec::QdiscSpec;
    use crate::qdisc::tree::harness::{run, Env};
    use crate::qdisc::{AnyQdisc, AutoHandles, QdiscProfile, QdiscTree};
    use crate::qdisc::{ParentSpec, TcRequest, TcVerb};

    fn spec(rate: u64, burst: u32, limit: u32) -> TbfSpec {
        TbfSpec {
            rate,
            burst,
            limit,
            peakrate: None,
            mtu: None,
            mpu: 0,
            overhead: 0,
            atm: false,
        }
    }

    fn root_tbf(env: &mut Env, s: TbfSpec) -> QdiscTree {
        let mut tree = QdiscTree::new("s2-eth2", 1, QdiscProfile::default());
        let req = TcRequest {
            verb: TcVerb::Add,
            dev: "s2-eth2".into(),
            parent: Some(ParentSpec::Root),
            handle: Some(1),
            qdisc: Some(QdiscSpec::Tbf(s)),
        };
        tree.apply(&req, &mut env.ctx(0), &mut AutoHandles::default())
            .unwrap();
        tree
    }

    fn tbf_of(tree: &QdiscTree) -> &Tbf {
        match tree.node_qdisc(0) {
            Some(AnyQdisc::Tbf(t)) => t,
            _ => panic!("root is not tbf"),
        }
    }

    #[test]
    fn e3_one_gigabit_precompute() {
        let r = RateCfg::new(125_000_000, 0, 0, false);
        assert_eq!((r.mult, r.shift), (2_147_483_648, 28));
        assert_eq!(r.l2t_ns(1514), 12_112);
        assert_eq!(r.l2t_ns(1500), 12_000);
        assert_eq!(r.l2t_ns(65_536), 524_288);
        assert_eq!(r.l2t_ns(500_000), 4_000_000);
        let t = Tbf::new(&spec(125_000_000, 500_000, 26_214_400), SimTime::ZERO).unwrap();
        assert_eq!(
            (t.buffer_ns(), t.max_size(), t.tokens_ns()),
            (4_000_000, 500_000, 4_000_000)
        );
    }

    #[test]
    fn e3_full_bucket_releases_330_frames_then_one_per_12112_ns() {
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, spec(125_000_000, 500_000, 26_214_400));
        let arrivals: Vec<(u64, u32)> = vec![(0, 1514); 340];
        let out = run(&mut tree, &mut env, &arrivals, true, u64::MAX);
        assert_eq!(out.len(), 340);
        assert!(out[..330].iter().all(|&(t, _)| t == 0));
        // 330 × 12 112 = 3 996 960: 3 040 ns of credit left, frame 331 waits 9 072 ns.
        assert_eq!(out[330].0, 9_072);
        for k in 331..340 {
            assert_eq!(out[k].0 - out[k - 1].0, 12_112);
        }
        let s = tbf_of(&tree).stats();
        assert_eq!(
            (s.packets, s.bytes, s.qlen, s.backlog),
            (340, 340 * 1514, 0, 0)
        );
    }

    #[test]
    fn e4_small_limit_holds_105_frames() {
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, spec(125_000_000, 500_000, 160_000));
        for _ in 0..120 {
            let id = env.pkt(1514);
            tree.enqueue(&mut env.ctx(0), id);
        }
        let s = *tbf_of(&tree).stats();
        assert_eq!((s.qlen, s.backlog, s.drops), (105, 105 * 1514, 15));
        let child = tree.show()[1].clone();
        assert!(child.anonymous);
        assert_eq!(
            (child.kind, child.stats.drops, child.parent),
            ("bfifo", 15, Some((1, 1)))
        );
    }

    #[test]
    fn e5_hundred_megabit_precompute() {
        let r = RateCfg::new(12_500_000, 0, 0, false);
        assert_eq!((r.mult, r.shift), (2_684_354_560, 25));
        assert_eq!(r.l2t_ns(1514), 121_120);
        let t = Tbf::new(&spec(12_500_000, 50_000, 26_214_400), SimTime::ZERO).unwrap();
        assert_eq!((t.buffer_ns(), t.max_size()), (4_000_000, 50_000));
        // 33 frames per full bucket: 33 × 121 120 = 3 996 960 ≤ 4 000 000 < 34 × 121 120.
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, spec(12_500_000, 50_000, 26_214_400));
        let out = run(&mut tree, &mut env, &[(0, 1514); 40], true, u64::MAX);
        assert_eq!(out.iter().filter(|&&(t, _)| t == 0).count(), 33);
        // A packet larger than the burst can never be sent.
        let big = env.pkt(50_001);
        assert_eq!(
            tree.enqueue(&mut env.ctx(0), big),
            Verdict::Dropped(DropReason::TooBig)
        );
    }

    #[test]
    fn e6_eight_megabit_departures_and_overlimits() {
        let r = RateCfg::new(1_000_000, 0, 0, false);
        assert_eq!((r.mult, r.shift), (4_194_304_000, 22));
        assert_eq!(r.l2t_ns(1514), 1_514_000);
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, spec(1_000_000, 10_240, 204_800));
        assert_eq!(tbf_of(&tree).buffer_ns(), 10_240_000);
        // All ten present at t = 0, one dequeue run at 0, then one per watchdog.
        let out = run(&mut tree, &mut env, &[(0, 1514); 10], true, u64::MAX);
        let times: Vec<u64> = out.iter().map(|&(t, _)| t).collect();
        assert_eq!(
            times,
            [0, 0, 0, 0, 0, 0, 358_000, 1_872_000, 3_386_000, 4_900_000]
        );
        assert_eq!(tbf_of(&tree).stats().overlimits, 4);
        assert_eq!(tbf_of(&tree).tokens_ns(), 0);
    }

    #[test]
    fn e6_tokens_after_each_of_the_first_six() {
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, spec(1_000_000, 10_240, 204_800));
        for _ in 0..10 {
            let id = env.pkt(1514);
            tree.enqueue(&mut env.ctx(0), id);
        }
        let mut left = vec![];
        for _ in 0..6 {
            tree.dequeue(&mut env.ctx(0)).unwrap();
            left.push(tbf_of(&tree).tokens_ns());
        }
        assert_eq!(
            left,
            [8_726_000, 7_212_000, 5_698_000, 4_184_000, 2_670_000, 1_156_000]
        );
        let mut ctx = env.ctx(0);
        assert!(tree.dequeue(&mut ctx).is_none());
        assert_eq!(ctx.watchdog, Some(SimTime::from_nanos(358_000)));
    }

    #[test]
    fn e24_change_raises_the_fifo_limit_in_place_and_refills() {
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, spec(125_000_000, 500_000, 2_621_440));
        // Drain the bucket, then queue 1 000 000 bytes (approximately: 660 frames).
        let _ = run(&mut tree, &mut env, &[(0, 1514); 330], true, 0);
        for _ in 0..660 {
            let id = env.pkt(1514);
            tree.enqueue(&mut env.ctx(1_000), id);
        }
        assert_eq!(tbf_of(&tree).tokens_ns(), 3_040);
        let before = *tbf_of(&tree).stats();
        let req = |limit| TcRequest {
            verb: TcVerb::Change,
            dev: "s2-eth2".into(),
            parent: Some(ParentSpec::Root),
            handle: Some(1),
            qdisc: Some(QdiscSpec::Tbf(spec(125_000_000, 500_000, limit))),
        };
        tree.apply(
            &req(26_214_400),
            &mut env.ctx(2_000),
            &mut AutoHandles::default(),
        )
        .unwrap();
        let after = *tbf_of(&tree).stats();
        assert_eq!(after, before, "nothing dropped, counters continue");
        assert_eq!(tbf_of(&tree).tokens_ns(), 4_000_000);
        assert_eq!(
            tree.show()[1].options,
            serde_json::json!({"limit": 26_214_400})
        );
        // The reverse change with ~20 MB queued drops nothing now; arrivals are
        // dropped until the backlog falls below limit − len.
        for _ in 0..13_000 {
            let id = env.pkt(1514);
            tree.enqueue(&mut env.ctx(3_000), id);
        }
        let queued = tbf_of(&tree).stats().backlog;
        assert_eq!(queued, 13_660 * 1514);
        tree.apply(
            &req(2_621_440),
            &mut env.ctx(4_000),
            &mut AutoHandles::default(),
        )
        .unwrap();
        assert_eq!(tbf_of(&tree).stats().backlog, queued);
        let id = env.pkt(1514);
        assert_eq!(
            tree.enqueue(&mut env.ctx(5_000), id),
            Verdict::Dropped(DropReason::QueueFull)
        );
        // Order is preserved: packets leave in arrival order.
        let mut seqs = vec![];
        while let Some(id) = tree.dequeue(&mut env.ctx(10_000_000)) {
            seqs.push(env.arena.get(id).seq);
            env.arena.free(id);
        }
        assert_eq!(seqs.len(), 330);
        assert!(seqs.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            seqs[0], 330,
            "the first frame queued after the initial burst"
        );
    }

    #[test]
    fn peakrate_limits_back_to_back_frames() {
        // rate 1 Mbit/s, burst 100 000, peakrate 10 Mbit/s, mtu 1514:
        // the peak bucket holds one frame, then one frame per 1 211 200 ns.
        let mut s = spec(125_000, 100_000, 100_000);
        s.peakrate = Some(1_250_000);
        s.mtu = Some(1514);
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, s.clone());
        let out = run(&mut tree, &mut env, &[(0, 1514); 4], true, u64::MAX);
        let times: Vec<u64> = out.iter().map(|&(t, _)| t).collect();
        assert_eq!(times, [0, 1_211_200, 2_422_400, 3_633_600]);
        assert_eq!(tbf_of(&tree).max_size(), 1514);
        // Validation at construction, naming the option.
        s.peakrate = Some(125_000);
        let e = Tbf::new(&s, SimTime::ZERO).unwrap_err();
        assert!(
            matches!(e, TcError::Invalid(ref m) if m.contains("peakrate")),
            "{e:?}"
        );
        s.peakrate = Some(1_250_000);
        s.mtu = None;
        assert!(Tbf::new(&s, SimTime::ZERO).is_err());
        assert!(Tbf::new(&spec(0, 1000, 1000), SimTime::ZERO).is_err());
        assert!(Tbf::new(&spec(1000, 0, 1000), SimTime::ZERO).is_err());
    }

    #[test]
    fn overhead_mpu_and_atm_change_the_cost() {
        let r = RateCfg::new(1_000_000, 24, 0, false);
        assert_eq!(r.l2t_ns(1514), 1_538_000);
        let r = RateCfg::new(1_000_000, 0, 100, false);
        assert_eq!(r.l2t_ns(64), 100_000);
        // ATM: ceil(1514/48) = 32 cells × 53 = 1696 bytes.
        let r = RateCfg::new(1_000_000, 0, 0, true);
        assert_eq!(r.l2t_ns(1514), 1_696_000);
        let mut s = spec(1_000_000, 10_000, 10_000);
        s.overhead = 70_000;
        assert!(Tbf::new(&s, SimTime::ZERO).is_err());
    }

    #[test]
    fn limit_zero_means_no_child_and_a_black_hole() {
        let mut env = Env::default();
        let mut tree = root_tbf(&mut env, spec(125_000_000, 500_000, 0));
        assert_eq!(tree.show().len(), 1);
        let id = env.pkt(1514);
        assert_eq!(
            tree.enqueue(&mut env.ctx(0), id),
            Verdict::Dropped(DropReason::Blackhole)
        );
        assert!(tree.dequeue(&mut env.ctx(0)).is_none());
        assert_eq!(tbf_of(&tree).stats().overlimits, 0);
    }
}
