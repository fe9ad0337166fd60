//! `red_ns3` — RED as ns-3 implements it (SIM qdisc, docs/semantics/qdiscs.md §5.10, E16),
//! for replaying ns-3 studies such as the RED-vs-DropTail script.
//!
//! Two generations, read in nsnam/ns-3-dev-git:
//! - `variant 2015`: `ns3::RedQueue`, src/network/utils/red-queue.cc (commit
//!   bd130e86): a device queue with its own `QueueLimit` test
//!   (`n ≥ limit` before the packet ⇒ forced drop, counted as qLimDrop too);
//!   no ECN, no adaptation; the idle decay multiplies by (1−qW) in a loop.
//! - `variant qdisc`: `ns3::RedQueueDisc`, src/traffic-control/model/
//!   red-queue-disc.cc (commit 0626f468): an internal drop-tail queue of
//!   `MaxSize` (`n + size > limit` ⇒ internal drop), ECN marking, hard drop,
//!   ARED (`AdaptMaxP`), Feng's adaptive RED, nonlinear RED; the idle decay
//!   uses `pow(1−qW, m+1)`.
//!
//! All arithmetic is in `f64` as in ns-3: the average is an EWMA of the queue
//! size in the mode's unit (packets or bytes) sampled before each arrival; an
//! idle period counts as `m = trunc(C · idle_seconds)` virtual empty arrivals
//! (C = link packets/s at `MeanPktSize`). Between the thresholds the drop
//! probability `pb` (linear, or the gentle ramp up to 2·maxTh) is turned into
//! `pa` by the count rule (`wait`: no drop until count·pb ≥ 1), scaled by
//! size/MeanPktSize in byte mode, and compared with a uniform draw from the
//! qdisc's own stream (`u ≤ pa`). The first packet after the average crosses
//! minTh is never dropped, and nothing is early-dropped while at most one
//! packet (byte mode: one byte) is queued.
//!
//! "Idle" is a dequeue that finds the queue empty (ns-3's device calls
//! dequeue when a transmission completes; the engine does the same on wires).
//! A peek never starts an idle period. Where the spec and the sources differ
//! the sources were followed (docs/models.md "red_ns3").

use super::ops::{wrong_kind, BuildEnv, Built, Changed, Peeked, Purged, Qdisc, Reduce};
use super::spec::{QdiscSpec, RedNs3Mode, RedNs3Spec, RedNs3Variant};
use super::tree::Node;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::rng::ComponentRng;
use crate::time::SimTime;
use serde_json::json;
use std::collections::VecDeque;

/// Above this many virtual arrivals the 2015 loop is replaced by `powi`
/// (same value up to rounding; keeps a long idle period cheap).
const LOOP_MAX: u32 = 1 << 20;

/// `keep`^(m + 1), what the average keeps over `m` idle arrivals and this
/// one. With QW 1 (the instantaneous queue, as DCTCP's switches use it)
/// `keep` is 0 and with no idle arrival the power is `keep` itself: both
/// exact, so libm's `pow` (a call on every enqueue) is left for the rest.
#[inline]
fn keep_factor(keep: f64, m: u32) -> f64 {
    if keep == 0.0 || m == 0 {
        keep
    } else {
        keep.powf(m as f64 + 1.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FengStatus {
    Above,
    Between,
    Below,
}

/// The parameters `InitializeParams` derives from the attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct Ns3Params {
    /// link capacity in mean-size packets per second (`m_ptc`)
    pub ptc: f64,
    pub qw: f64,
    pub min_th: f64,
    pub max_th: f64,
    /// 1/(maxTh − minTh) and −minTh/(maxTh − minTh)
    pub v_a: f64,
    pub v_b: f64,
    /// gentle ramp from the INITIAL max_p (ns-3 never recomputes it)
    pub v_c: f64,
    pub v_d: f64,
    pub max_p: f64,
    pub bottom: f64,
    pub adapt_max_p: bool,
}

impl Ns3Params {
    pub fn new(s: &RedNs3Spec) -> Result<Ns3Params, TcError> {
        let bad = |m: &str| Err(TcError::Invalid(format!("red_ns3: {m}")));
        if s.mean_pkt_size == 0 {
            return bad("meanpktsize must be at least 1");
        }
        if s.bandwidth == 0 {
            return bad("bandwidth must be above 0");
        }
        if s.limit == 0 {
            return bad("limit must be at least 1");
        }
        let qdisc = s.variant == RedNs3Variant::Qdisc;
        if !qdisc && (s.ecn || s.ared || s.adapt_max_p || s.feng || s.nlred) {
            return bad("ecn, ared, adaptmaxp, feng and nlred need variant qdisc");
        }
        if (s.ared || s.adapt_max_p) && s.feng {
            return bad("ared/adaptmaxp and feng cannot be used together");
        }
        let cur_max_p = match (s.max_p, s.linterm) {
            (Some(p), None) if (0.0..=1.0).contains(&p) => p,
            (None, Some(l)) if l > 0.0 => 1.0 / l,
            _ => return bad("give exactly one of maxp (0..1) or linterm (> 0)"),
        };
        let ptc = s.bandwidth as f64 / (8.0 * s.mean_pkt_size as f64);
        let (mut min_th, mut max_th, mut qw) = (s.min_th, s.max_th, s.qw);
        if s.ared {
            (min_th, max_th, qw) = (0.0, 0.0, 0.0);
        }
        if min_th == 0.0 && max_th == 0.0 {
            // automatic thresholds (Floyd's ARED paper): max(5, target queue / 2)
            min_th = 5.0;
            let target = s.target_delay as f64 / 1e9 * ptc;
            if min_th < target / 2.0 {
                min_th = target / 2.0;
            }
            if s.mode == RedNs3Mode::Bytes {
                min_th *= s.mean_pkt_size as f64;
            }
            max_th = 3.0 * min_th;
        }
        if !(0.0..=max_th).contains(&min_th) {
            return bad("need 0 <= minth <= maxth");
        }
        let mut th_diff = max_th - min_th;
        if th_diff == 0.0 {
            th_diff = 1.0;
        }
        let (v_c, v_d) = if s.gentle {
            ((1.0 - cur_max_p) / max_th, 2.0 * cur_max_p - 1.0)
        } else {
            (0.0, 0.0)
        };
        if qw == 0.0 {
            qw = 1.0 - (-1.0 / ptc).exp();
        } else if qw == -1.0 {
            let rtt = (3.0 * (s.link_delay as f64 / 1e9 + 1.0 / ptc)).max(0.1);
            qw = 1.0 - (-1.0 / (10.0 * rtt * ptc)).exp();
        } else if qw == -2.0 {
            qw = 1.0 - (-10.0 / ptc).exp();
        } else if !(qw > 0.0 && qw <= 1.0) {
            return bad("qw must be in (0, 1], or 0, -1, -2 for the automatic settings");
        }
        let mut bottom = s.bottom;
        if bottom == 0.0 {
            bottom = 0.01f64
                .min(8.0 * s.mean_pkt_size as f64 * (s.rtt as f64 / 1e9) / s.bandwidth as f64);
        }
        Ok(Ns3Params {
            ptc,
            qw,
            min_th,
            max_th,
            v_a: 1.0 / th_diff,
            v_b: -min_th / th_diff,
            v_c,
            v_d,
            max_p: cur_max_p,
            bottom,
            adapt_max_p: s.adapt_max_p || s.ared,
        })
    }
}

/// Drop counters, named as ns-3 names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ns3Counters {
    /// early (probabilistic) drops
    pub unforced_drop: u64,
    /// drops because the average was at/above maxTh (2·maxTh gentle)
    pub forced_drop: u64,
    /// drops by the hard limit (2015: QueueLimit; qdisc: the internal queue)
    pub qlim_drop: u64,
    pub unforced_mark: u64,
    pub forced_mark: u64,
}

#[derive(Debug)]
pub struct RedNs3 {
    spec: RedNs3Spec,
    p: Ns3Params,
    q_avg: f64,
    /// packets / bytes since the last drop (u32 as in ns-3)
    count: u32,
    count_bytes: u32,
    /// the average was already above minTh at the previous arrival
    old: bool,
    idle: bool,
    idle_time: u64,
    last_set: u64,
    feng: FengStatus,
    queue: VecDeque<PacketId>,
    bytes: u64,
    rng: ComponentRng,
    #[cfg(test)]
    pub(crate) scripted: VecDeque<f64>,
    pub counters: Ns3Counters,
    stats: QdiscStats,
}

enum Decision {
    None,
    Unforced,
    Forced,
}

impl RedNs3 {
    pub fn new(
        spec: &RedNs3Spec,
        seed: u64,
        stream: &str,
        now: SimTime,
    ) -> Result<RedNs3, TcError> {
        let p = Ns3Params::new(spec)?;
        let mut r = RedNs3 {
            spec: spec.clone(),
            p,
            q_avg: 0.0,
            count: 0,
            count_bytes: 0,
            old: false,
            idle: true,
            idle_time: 0,
            last_set: 0,
            feng: FengStatus::Above,
            queue: VecDeque::new(),
            bytes: 0,
            rng: ComponentRng::new(seed, stream),
            #[cfg(test)]
            scripted: VecDeque::new(),
            counters: Ns3Counters::default(),
            stats: QdiscStats::default(),
        };
        r.init_state(now.as_nanos());
        Ok(r)
    }

    /// `InitializeParams`' state part. ns-3 measures the first idle period
    /// and ARED's `LastSet` from simulation start; here from configuration.
    fn init_state(&mut self, now: u64) {
        self.q_avg = 0.0;
        self.count = 0;
        self.count_bytes = 0;
        self.old = false;
        self.idle = true;
        self.idle_time = now;
        self.last_set = now;
        self.feng = FengStatus::Above;
    }

    pub fn params(&self) -> &Ns3Params {
        &self.p
    }

    pub fn avg(&self) -> f64 {
        self.q_avg
    }

    fn bytes_mode(&self) -> bool {
        self.spec.mode == RedNs3Mode::Bytes
    }

    fn size_now(&self) -> u64 {
        if self.bytes_mode() {
            self.bytes
        } else {
            self.queue.len() as u64
        }
    }

    fn uniform(&mut self) -> f64 {
        #[cfg(test)]
        if let Some(u) = self.scripted.pop_front() {
            return u;
        }
        self.rng.next_f64()
    }

    /// `Estimator`: avg·(1−qW)^(m+1) + qW·n, then the max_p adaptation.
    pub fn estimate(&mut self, n: u64, m: u32, now: u64) -> f64 {
        let qw = self.p.qw;
        let mut avg = self.q_avg;
        match self.spec.variant {
            RedNs3Variant::V2015 if m < LOOP_MAX => {
                for _ in 0..m {
                    if avg == 0.0 {
                        break;
                    }
                    avg *= 1.0 - qw;
                }
                avg *= 1.0 - qw;
            }
            _ => avg *= keep_factor(1.0 - qw, m),
        }
        avg += qw * n as f64;
        if self.p.adapt_max_p && now > self.last_set.saturating_add(self.spec.interval) {
            self.update_max_p(avg, now);
        } else if self.spec.feng {
            self.update_max_p_feng(avg);
        }
        avg
    }

    /// ARED's AIMD step (`UpdateMaxP`), aiming at an average between
    /// minTh + 0.4Δ and maxTh − 0.4Δ.
    fn update_max_p(&mut self, avg: f64, now: u64) {
        let part = 0.4 * (self.p.max_th - self.p.min_th);
        if avg < self.p.min_th + part && self.p.max_p > self.p.bottom {
            self.p.max_p *= self.spec.beta;
            self.last_set = now;
        } else if avg > self.p.max_th - part && self.spec.top > self.p.max_p {
            self.p.max_p += self.spec.alpha.min(0.25 * self.p.max_p);
            self.last_set = now;
        }
    }

    /// Feng et al.'s self-configuring RED: one step per change of region.
    fn update_max_p_feng(&mut self, avg: f64) {
        if self.p.min_th < avg && avg < self.p.max_th {
            self.feng = FengStatus::Between;
        } else if avg < self.p.min_th && self.feng != FengStatus::Below {
            self.feng = FengStatus::Below;
            self.p.max_p /= self.spec.feng_alpha;
        } else if avg > self.p.max_th && self.feng != FengStatus::Above {
            self.feng = FengStatus::Above;
            self.p.max_p *= self.spec.feng_beta;
        }
    }

    /// `CalculatePNew`: pb for the current average.
    pub fn calc_pnew(&self) -> f64 {
        let avg = self.q_avg;
        let p = if self.spec.gentle && avg >= self.p.max_th {
            self.p.v_c * avg + self.p.v_d
        } else if avg >= self.p.max_th {
            1.0
        } else {
            let mut x = self.p.v_a * avg + self.p.v_b;
            if self.spec.nlred {
                x = x * (x * 1.5); // ns-3 scales by 1.5·x, in this order
            }
            x * self.p.max_p
        };
        p.min(1.0)
    }

    /// `ModifyP`: pa from pb, the count since the last drop and the size.
    pub fn modify_p(&self, pb: f64, size: u32) -> f64 {
        let count = if self.bytes_mode() {
            (self.count_bytes / self.spec.mean_pkt_size) as f64
        } else {
            self.count as f64
        };
        let cp = count * pb;
        let mut p = if self.spec.wait {
            if cp < 1.0 {
                0.0
            } else if cp < 2.0 {
                pb / (2.0 - cp)
            } else {
                1.0
            }
        } else if cp < 1.0 {
            pb / (1.0 - cp)
        } else {
            1.0
        };
        if self.bytes_mode() && p < 1.0 {
            p = p * size as f64 / self.spec.mean_pkt_size as f64;
        }
        p.min(1.0)
    }

    fn drop_early(&mut self, size: u32) -> bool {
        let pa = self.modify_p(self.calc_pnew(), size);
        if self.uniform() <= pa {
            self.count = 0;
            self.count_bytes = 0;
            return true;
        }
        false
    }

    /// Virtual arrivals of an idle period ending `now`: trunc(C · seconds).
    pub fn idle_arrivals(&self, now: u64) -> u32 {
        let secs = now.saturating_sub(self.idle_time) as f64 / 1e9;
        let m = self.p.ptc * secs;
        if m >= u32::MAX as f64 {
            u32::MAX
        } else {
            m as u32
        }
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let now = ctx.now.as_nanos();
        let size = ctx.arena.len_of(id);
        let n = self.size_now();
        let m = if self.idle {
            self.idle = false;
            self.idle_arrivals(now)
        } else {
            0
        };
        self.q_avg = self.estimate(n, m, now);
        self.count = self.count.wrapping_add(1);
        self.count_bytes = self.count_bytes.wrapping_add(size);

        let mut decision = Decision::None;
        if self.q_avg >= self.p.min_th && n > 1 {
            let forced_at = if self.spec.gentle {
                2.0 * self.p.max_th
            } else {
                self.p.max_th
            };
            if self.q_avg >= forced_at {
                decision = Decision::Forced;
            } else if !self.old {
                // just crossed minTh: start counting, never drop this one
                self.old = true;
                self.count = 1;
                self.count_bytes = size;
            } else if self.drop_early(size) {
                decision = Decision::Unforced;
            }
        } else {
            self.old = false;
        }

        let v2015 = self.spec.variant == RedNs3Variant::V2015;
        if v2015 && n >= self.spec.limit as u64 {
            // QueueLimit overrides any other verdict; counted as forced too
            self.counters.qlim_drop += 1;
            return self.forced_drop(ctx, id, DropReason::QueueFull);
        }
        match decision {
            Decision::Unforced => {
                self.stats.overlimits += 1;
                if self.spec.ecn && ctx.arena.get_mut(id).set_ce() {
                    self.counters.unforced_mark += 1;
                } else {
                    self.counters.unforced_drop += 1;
                    self.stats.dropped();
                    ctx.drop_packet(id, DropReason::EarlyDrop);
                    return Verdict::Dropped(DropReason::EarlyDrop);
                }
            }
            Decision::Forced => {
                self.stats.overlimits += 1;
                if !self.spec.harddrop && self.spec.ecn && ctx.arena.get_mut(id).set_ce() {
                    self.counters.forced_mark += 1;
                } else {
                    self.counters.forced_drop += 1;
                    return self.forced_drop(ctx, id, DropReason::ForcedDrop);
                }
            }
            Decision::None => {}
        }
        if !v2015 {
            let over = if self.bytes_mode() {
                self.bytes + size as u64 > self.spec.limit as u64
            } else {
                self.queue.len() as u64 + 1 > self.spec.limit as u64
            };
            if over {
                self.counters.qlim_drop += 1;
                self.stats.dropped();
                ctx.drop_packet(id, DropReason::QueueFull);
                return Verdict::Dropped(DropReason::QueueFull);
            }
        }
        self.queue.push_back(id);
        self.bytes += size as u64;
        self.stats.queued(size);
        Verdict::Queued
    }

    fn forced_drop(&mut self, ctx: &mut QdiscCtx, id: PacketId, why: DropReason) -> Verdict {
        if self.spec.ns1compat {
            self.count = 0;
            self.count_bytes = 0;
        }
        self.stats.dropped();
        ctx.drop_packet(id, why);
        Verdict::Dropped(why)
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<PacketId> {
        match self.queue.pop_front() {
            Some(id) => {
                self.idle = false;
                let len = ctx.arena.len_of(id);
                self.bytes -= len as u64;
                self.stats.unqueued(len);
                self.stats.sent(len, ctx.arena.segs_of(id));
                Some(id)
            }
            None => {
                self.idle = true;
                self.idle_time = ctx.now.as_nanos();
                None
            }
        }
    }
}

impl Qdisc for RedNs3 {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::RedNs3(s) = spec else {
            return None;
        };
        Some(RedNs3::new(s, env.seed, env.stream, env.now).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "red_ns3"
    }

    crate::qdisc::ops::forward_queue_ops!(leaf RedNs3);

    fn peek(&mut self, _ctx: &mut QdiscCtx, _reduce: &mut Reduce, _child: &mut [Node]) -> Peeked {
        Peeked::Head(self.queue.front().copied())
    }

    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        while let Some(id) = self.queue.pop_front() {
            n += 1;
            b += ctx.arena.len_of(id) as u64;
            ctx.drop_packet(id, DropReason::Purged);
        }
        self.bytes = 0;
        Purged {
            packets: n,
            bytes: b,
        }
    }

    /// New attributes: parameters and RED state are re-initialised (as a
    /// fresh `InitializeParams`); queued packets and counters are kept.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::RedNs3(spec) = spec else {
            return Err(wrong_kind());
        };
        self.p = Ns3Params::new(spec)?;
        self.spec = spec.clone();
        self.init_state(ctx.now.as_nanos());
        Ok(Changed::IN_PLACE)
    }

    crate::qdisc::ops::own_stats!();

    fn options(&self) -> serde_json::Value {
        serde_json::to_value(&self.spec).unwrap_or(serde_json::Value::Null)
    }

    /// Linux-red-style summary plus ns-3's own counters and the live state.
    /// ns-3's 2015 `forcedDrop` includes the QueueLimit drops; `forced_drop`
    /// here follows ns-3 for each variant.
    fn xstats(&self) -> serde_json::Value {
        let c = &self.counters;
        let v2015 = self.spec.variant == RedNs3Variant::V2015;
        json!({
            "marked": c.unforced_mark + c.forced_mark,
            "early": c.unforced_drop + c.forced_drop,
            "pdrop": c.qlim_drop,
            "other": 0,
            "unforced_drop": c.unforced_drop,
            "forced_drop": c.forced_drop + if v2015 { c.qlim_drop } else { 0 },
            "qlim_drop": c.qlim_drop,
            "unforced_mark": c.unforced_mark,
            "forced_mark": c.forced_mark,
            "avg": self.q_avg,
            "cur_max_p": self.p.max_p,
            "qw": self.p.qw,
            "min_th": self.p.min_th,
            "max_th": self.p.max_th,
        })
    }

    fn held(&self) -> u64 {
        self.queue.len() as u64
    }
}

#[cfg(test)]
mod tests;
