//! `blue` — BLUE active queue management (SIM qdisc, docs/semantics/qdiscs.md §6.1; Feng,
//! Kandlur, Saha, Shin). One marking probability `p` (Q0.32), raised by `d1`
//! on every loss event (queue overflow, optionally "queue above qthresh") and
//! lowered by `d2` when the link is found idle, each change at most once per
//! freeze time. The default uses one shared timestamp for both directions
//! (Feng's pseudo-code); separate hold times switch to the ns ports' two.
//!
//! BLUE keeps its own packet queue (limit in packets). "Link idle" is a
//! dequeue — or a parent's peek, since a tbf parent only peeks at an empty
//! child (SIM choice, documented in docs/models.md) — that finds the queue
//! empty.
//!
//! CPM-BLUE (§7): the random test uses `coeff × p` for the packet's class;
//! increments and decrements are class-blind.

use super::cpm::{scaled_lt, Cpm};
use super::ops::{wrong_kind, BuildEnv, Built, Changed, Peeked, Purged, Qdisc, Reduce};
use super::spec::{BlueSpec, QdiscSpec};
use super::tree::Node;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::rng::ComponentRng;
use serde_json::json;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct Blue {
    spec: BlueSpec,
    /// marking probability, fraction of 2³²
    p: u32,
    last_inc: Option<u64>,
    last_dec: Option<u64>,
    queue: VecDeque<PacketId>,
    rng: ComponentRng,
    #[cfg(test)]
    pub(crate) scripted: VecDeque<u32>,
    early: u64,
    overflow: u64,
    marked: u64,
    cpm: Option<Cpm>,
    stats: QdiscStats,
}

fn validate(spec: &BlueSpec) -> Result<Option<Cpm>, TcError> {
    if spec.limit == 0 {
        return Err(TcError::Invalid("blue: limit must be at least 1".into()));
    }
    match &spec.dscp_coeff {
        Some(m) => Ok(Some(Cpm::new(m).map_err(TcError::Invalid)?)),
        None => Ok(None),
    }
}

impl Blue {
    pub fn new(spec: &BlueSpec, seed: u64, stream: &str) -> Result<Blue, TcError> {
        let cpm = validate(spec)?;
        Ok(Blue {
            spec: spec.clone(),
            p: 0,
            last_inc: None,
            last_dec: None,
            queue: VecDeque::new(),
            rng: ComponentRng::new(seed, stream),
            #[cfg(test)]
            scripted: VecDeque::new(),
            early: 0,
            overflow: 0,
            marked: 0,
            cpm,
            stats: QdiscStats::default(),
        })
    }

    /// New parameters; p, timestamps, queue and counters are kept (a lower
    /// limit drops nothing already queued).
    pub fn change(&mut self, spec: &BlueSpec) -> Result<(), TcError> {
        let fresh = validate(spec)?;
        match (&mut self.cpm, &spec.dscp_coeff) {
            (Some(c), Some(m)) => c.change(m).map_err(TcError::Invalid)?,
            (slot, _) => *slot = fresh,
        }
        self.spec = spec.clone();
        Ok(())
    }

    fn draw(&mut self) -> u32 {
        #[cfg(test)]
        if let Some(d) = self.scripted.pop_front() {
            return d;
        }
        self.rng.next_u32()
    }

    fn last_inc_mut(&mut self) -> &mut Option<u64> {
        if self.spec.shared {
            &mut self.last_dec
        } else {
            &mut self.last_inc
        }
    }

    /// A loss event at `now` (ns).
    pub fn increase(&mut self, now: u64) {
        let hold = self.spec.freeze_inc;
        let d1 = self.spec.increment;
        let last = self.last_inc_mut();
        if last.is_none_or(|l| now.saturating_sub(l) > hold) {
            *last = Some(now);
            self.p = self.p.saturating_add(d1);
        }
    }

    /// A link-idle event at `now` (ns).
    pub fn decrease(&mut self, now: u64) {
        let hold = if self.spec.shared {
            self.spec.freeze_inc
        } else {
            self.spec.freeze_dec
        };
        if self.last_dec.is_none_or(|l| now.saturating_sub(l) > hold) {
            self.last_dec = Some(now);
            self.p = self.p.saturating_sub(self.spec.decrement);
        }
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let now = ctx.now.as_nanos();
        let (len, tos) = {
            let p = ctx.arena.get(id);
            (p.len, p.tos)
        };
        let class = self.cpm.as_ref().map(|c| c.class_of(tos));
        let qlen = self.queue.len() as u64;
        if qlen >= self.spec.limit as u64 {
            self.increase(now);
            self.overflow += 1;
            self.stats.overlimits += 1;
            if let (Some(c), Some(k)) = (&mut self.cpm, class) {
                c.counters[k].pdrop += 1;
            }
            self.stats.dropped();
            ctx.drop_packet(id, DropReason::QueueFull);
            return Verdict::Dropped(DropReason::QueueFull);
        }
        if let Some(th) = self.spec.qthresh {
            if qlen >= th as u64 {
                self.increase(now);
            }
        }
        let coeff = match (&self.cpm, class) {
            (Some(c), Some(k)) => c.coeff(k),
            _ => (1, 1),
        };
        let d = self.draw();
        let mut marked = false;
        if scaled_lt(d, self.p, coeff) {
            if self.spec.ecn && ctx.arena.get_mut(id).set_ce() {
                self.marked += 1;
                marked = true;
            } else {
                self.early += 1;
                if let (Some(c), Some(k)) = (&mut self.cpm, class) {
                    c.counters[k].early += 1;
                }
                self.stats.dropped();
                ctx.drop_packet(id, DropReason::EarlyDrop);
                return Verdict::Dropped(DropReason::EarlyDrop);
            }
        }
        if let (Some(c), Some(k)) = (&mut self.cpm, class) {
            c.counters[k].passed += 1;
            c.counters[k].marked += marked as u64;
        }
        self.queue.push_back(id);
        self.stats.queued(len);
        Verdict::Queued
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<PacketId> {
        match self.queue.pop_front() {
            Some(id) => {
                let len = ctx.arena.len_of(id);
                self.stats.unqueued(len);
                self.stats.sent(len, ctx.arena.segs_of(id));
                Some(id)
            }
            None => {
                self.decrease(ctx.now.as_nanos());
                None
            }
        }
    }

    pub fn probability(&self) -> u32 {
        self.p
    }
}

impl Qdisc for Blue {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Blue(s) = spec else {
            return None;
        };
        Some(Blue::new(s, env.seed, env.stream).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "blue"
    }

    crate::qdisc::ops::forward_queue_ops!(leaf Blue);

    /// Head of the queue; an empty queue is a link-idle event.
    fn peek(&mut self, ctx: &mut QdiscCtx, _reduce: &mut Reduce, _child: &mut [Node]) -> Peeked {
        let head = self.queue.front().copied();
        if head.is_none() {
            self.decrease(ctx.now.as_nanos());
        }
        Peeked::Head(head)
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        while let Some(id) = self.queue.pop_front() {
            n += 1;
            b += ctx.arena.len_of(id) as u64;
            ctx.drop_packet(id, DropReason::Purged);
        }
        Purged {
            packets: n,
            bytes: b,
        }
    }

    fn change(
        &mut self,
        spec: &QdiscSpec,
        _ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Blue(s) = spec else {
            return Err(wrong_kind());
        };
        Blue::change(self, s).map(|()| Changed::IN_PLACE)
    }

    crate::qdisc::ops::own_stats!();

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.spec).unwrap_or(serde_json::Value::Null)
    }

    fn xstats(&self) -> serde_json::Value {
        let mut v = json!({
            "pmark": self.p as f64 / 4_294_967_296.0,
            "early": self.early,
            "overflow": self.overflow,
            "marked": self.marked,
        });
        if let Some(c) = &self.cpm {
            v["classes"] = c.xstats();
        }
        v
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

    fn e17() -> BlueSpec {
        BlueSpec {
            limit: 2,
            increment: 10_737_418,
            decrement: 1_073_742,
            freeze_inc: 100 * MS,
            freeze_dec: 100 * MS,
            shared: true,
            qthresh: None,
            ecn: false,
            dscp_coeff: None,
        }
    }

    #[test]
    fn e17_probability_rises_on_overflow_and_decays_on_idle() {
        let mut env = Env::default();
        let mut b = Blue::new(&e17(), 1, "t").unwrap();
        b.scripted.extend([u32::MAX; 8]);
        // fill the 2-packet queue at t=0, then overflow at 0, 50, 150 ms
        for t in [0, 0, 0] {
            let id = env.pkt(1000);
            b.enqueue(&mut env.ctx(t), id);
        }
        assert_eq!(b.probability(), 10_737_418);
        let id = env.pkt(1000);
        b.enqueue(&mut env.ctx(50 * MS), id);
        assert_eq!(b.probability(), 10_737_418);
        let id = env.pkt(1000);
        b.enqueue(&mut env.ctx(150 * MS), id);
        assert_eq!(b.probability(), 21_474_836);
        assert_eq!(
            (b.overflow, b.stats().overlimits, b.stats().drops),
            (3, 3, 3)
        );
        // drain, then the idle dequeues
        for _ in 0..2 {
            let id = b.dequeue(&mut env.ctx(150 * MS)).unwrap();
            env.arena.free(id);
        }
        assert!(b.dequeue(&mut env.ctx(200 * MS)).is_none());
        assert_eq!(b.probability(), 21_474_836);
        assert!(b.dequeue(&mut env.ctx(260 * MS)).is_none());
        assert_eq!(b.probability(), 20_401_094);
        // the random test
        b.scripted.clear();
        b.scripted.extend([10_000_000, 30_000_000]);
        let id = env.pkt(1000);
        assert_eq!(
            b.enqueue(&mut env.ctx(300 * MS), id),
            Verdict::Dropped(DropReason::EarlyDrop)
        );
        let id = env.pkt(1000);
        assert_eq!(b.enqueue(&mut env.ctx(300 * MS), id), Verdict::Queued);
        assert_eq!(b.early, 1);
        // decay never goes below zero
        for k in 0..40 {
            let _ = b.dequeue(&mut env.ctx((400 + 200 * k) * MS));
        }
        assert_eq!(b.probability(), 0);
    }

    #[test]
    fn separate_hold_times() {
        let mut s = e17();
        s.shared = false;
        s.freeze_dec = 10 * MS;
        let mut env = Env::default();
        let mut b = Blue::new(&s, 1, "t").unwrap();
        b.increase(0);
        b.increase(150 * MS);
        assert_eq!(b.probability(), 2 * 10_737_418);
        b.decrease(151 * MS);
        b.decrease(155 * MS);
        assert_eq!(b.probability(), 2 * 10_737_418 - 1_073_742);
        b.decrease(170 * MS);
        assert_eq!(b.probability(), 2 * 10_737_418 - 2 * 1_073_742);
        let _ = &mut env;
    }

    #[test]
    fn cpm_blue_scales_the_random_test() {
        use crate::qdisc::spec::{DscpClass, DscpCoeff};
        let mut s = e17();
        s.limit = 100;
        s.dscp_coeff = Some(DscpCoeff {
            classes: vec![DscpClass {
                key: 0x32,
                num: 5,
                den: 10,
            }],
            default: (9, 10),
            match_dscp: false,
        });
        let mut env = Env::default();
        let mut b = Blue::new(&s, 1, "t").unwrap();
        b.p = 1_000_000;
        // draw 600 000: 0.5·p = 500 000 → pass; 0.9·p = 900 000 → drop
        b.scripted.extend([600_000, 600_000]);
        let id = env.pkt(1000);
        env.arena.get_mut(id).tos = 0x32;
        assert_eq!(b.enqueue(&mut env.ctx(0), id), Verdict::Queued);
        let id = env.pkt(1000);
        assert_eq!(
            b.enqueue(&mut env.ctx(0), id),
            Verdict::Dropped(DropReason::EarlyDrop)
        );
        let x = b.xstats();
        assert_eq!(x["classes"][0]["passed"], 1);
        assert_eq!(x["classes"][1]["early"], 1);
    }
}
