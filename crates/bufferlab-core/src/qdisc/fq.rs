//! Size: sch_fq.c in one file, as Linux keeps it: the flow table with its garbage
//! collection, the throttled flows and the bands are one state that each enqueue and
//! dequeue walks.
//!
//! `fq` — Fair Queue with per-socket flows and pacing, as Linux 6.8 has it
//! (docs/semantics/qdiscs.md §15; net/sched/sch_fq.c: `fq_classify`,
//! `fq_fastpath_check`, `fq_gc`, `fq_enqueue`, `fq_check_throttled`,
//! `fq_pband_head_select`, `fq_dequeue`, `fq_change`, `fq_init`, `fq_dump`,
//! `fq_dump_stats`).
//!
//! Flows: a packet a local socket sent ([`Packet::local`], `skb->sk`) belongs
//! to its socket's flow (SIM: a socket is its 5-tuple); a forwarded packet,
//! an ARP frame, an ICMP (unconnected ping socket) packet is hashed into one
//! of `orphan_mask + 1` orphan flows. Flows live in `2^buckets_log` buckets
//! (the kernel's rb-trees), are created on first use with `initial_quantum`
//! of credit and garbage-collected from their bucket once detached for 3 s.
//! Three priority bands (`priomap` of `rt_tos2priority(tos)`) are served by
//! weighted round robin (`weights`, bytes); inside a band, new flows before
//! old ones, each flow a deficit round robin of `quantum`. `limit` counts
//! the packets of a band, `flow_limit` those of a flow. An enqueue into an
//! empty (or fully idle) fq with nothing paced takes the fast path: a FIFO
//! served before the bands.
//!
//! Pacing: a packet's `time_to_send` is its EDT stamp ([`Packet::tstamp`],
//! `skb->tstamp`: a TCP socket's `tcp_wstamp_ns`, ahead of the clock when
//! fq paces the socket) or, unstamped, its enqueue instant (`fq_enqueue`); a
//! stamp more than `horizon` ahead is dropped (`horizon_drop`) or brought
//! back to it. A flow's queue is kept in `time_to_send` order
//! (`flow_queue_add`). A flow whose head is not due, or whose
//! `time_next_packet` is ahead, is throttled (`fq_dequeue`): it waits in a
//! time-ordered set, counted in `throttled`, until `fq_check_throttled`
//! returns it to the old flows, with the watchdog armed at the earliest
//! (SIM: without `timer_slack`'s range, at the instant itself). With
//! `pacing` on, `maxrate` spaces every flow's packets by len / maxrate (by
//! max(len, quantum) per quantum of credit for packets without a stamp),
//! with the kernel's drift credit (len/2 at most) and 1 s clamp.
//!
//! GSO: the kernel does not segment in fq; an aggregate is one entry of its
//! full length, as here.

use super::fq_codel::hash32;
use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc};
use super::spec::{FqSpec, QdiscSpec};
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::{Packet, PacketId, Proto};
use crate::rng::ComponentRng;
use serde_json::json;
use std::collections::{BTreeMap, VecDeque};

pub const BANDS: usize = 3;
/// `psched_mtu` of an Ethernet device: 1500 + 14.
const MTU: u32 = 1514;
/// HZ = 250
const JIFFY_NS: u64 = 4_000_000;
/// `FQ_GC_AGE`: 3 s of jiffies
const GC_AGE_JIFFIES: u64 = 3 * 250;
const NSEC_PER_SEC: u64 = 1_000_000_000;
/// `FQ_MIN_WEIGHT`
const MIN_WEIGHT: i32 = 16_384;
const NO_RATE: u64 = u64::MAX;
/// `sch_default_prio2band`
pub const DEFAULT_PRIOMAP: [u8; 16] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// `rt_tos2priority` (include/net/route.h, `ip_tos2prio`): the priority
/// Linux gives a packet of this TOS byte (forwarded, or a socket's IP_TOS).
pub fn tos2priority(tos: u8) -> u8 {
    const MAP: [u8; 16] = [0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4];
    MAP[((tos & 0x1e) >> 1) as usize]
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    id: PacketId,
    len: u32,
    /// `time_to_send`, ns
    tts: u64,
    /// the packet had an EDT stamp (`skb->tstamp` set)
    stamped: bool,
    /// band at enqueue (`fq_skb_cb(skb)->band`)
    band: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// not on a list; `age` is the jiffy it left (`fq_flow_set_detached`)
    Detached,
    Listed,
    Throttled,
}

#[derive(Debug)]
struct Flow {
    queue: VecDeque<Entry>,
    key: u64,
    credit: i64,
    band: u8,
    time_next_packet: u64,
    state: State,
    age: u64,
    bucket: u32,
}

#[derive(Clone, Debug, PartialEq)]
struct Conf {
    limit: u32,
    flow_limit: u32,
    quantum: u32,
    initial_quantum: u32,
    rate_enable: bool,
    /// bytes/s, `NO_RATE` = none
    maxrate: u64,
    buckets_log: u32,
    /// jiffies
    refill_delay: u64,
    orphan_mask: u32,
    low_rate_threshold: u64,
    /// ns
    ce_threshold: u64,
    timer_slack: u32,
    /// ns
    horizon: u64,
    horizon_drop: bool,
    priomap: [u8; 16],
    weights: [i32; BANDS],
}

impl Default for Conf {
    fn default() -> Self {
        Conf {
            limit: 10_000,
            flow_limit: 100,
            quantum: 2 * MTU,
            initial_quantum: 10 * MTU,
            rate_enable: true,
            maxrate: NO_RATE,
            buckets_log: 10,
            refill_delay: 10,
            orphan_mask: 1023,
            low_rate_threshold: 550_000 / 8,
            ce_threshold: 1000 * u32::MAX as u64,
            timer_slack: 10_000,
            horizon: 10 * NSEC_PER_SEC,
            horizon_drop: true,
            priomap: DEFAULT_PRIOMAP,
            weights: [9 << 16, 3 << 16, 1 << 16],
        }
    }
}

/// `usecs_to_jiffies` at HZ = 250 (rounds up).
fn us_to_jiffies(us: u32) -> u64 {
    (us as u64).div_ceil(4000)
}

/// `fq_change`'s checks and assignments on a copy (nothing changes on error).
fn resolve(s: &FqSpec, cur: &Conf) -> Result<Conf, TcError> {
    let mut c = cur.clone();
    if let Some(l) = s.buckets_log {
        if !(1..=18).contains(&l) {
            return Err(TcError::Invalid(String::new()));
        }
        c.buckets_log = l;
    }
    if let Some(v) = s.limit {
        c.limit = v;
    }
    if let Some(v) = s.flow_limit {
        c.flow_limit = v;
    }
    if let Some(q) = s.quantum {
        if q == 0 || q > 1 << 20 {
            return Err(TcError::Invalid("sch_fq: invalid quantum".into()));
        }
        c.quantum = q;
    }
    if let Some(v) = s.initial_quantum {
        if v > i32::MAX as u32 {
            return Err(TcError::Invalid("integer out of range".into()));
        }
        c.initial_quantum = v;
    }
    if let Some(r) = s.maxrate {
        c.maxrate = if r == u32::MAX { NO_RATE } else { r as u64 };
    }
    if let Some(v) = s.low_rate_threshold {
        c.low_rate_threshold = v as u64;
    }
    if let Some(p) = s.pacing {
        c.rate_enable = p;
    }
    if let Some(us) = s.refill_delay {
        c.refill_delay = us_to_jiffies(us);
    }
    if let Some(map) = &s.priomap {
        if map.len() != 16 {
            return Err(TcError::Invalid("sch_fq: FQ only supports 3 bands".into()));
        }
        if let Some((i, b)) = map.iter().enumerate().find(|(_, &b)| b as usize >= BANDS) {
            return Err(TcError::Invalid(format!(
                "sch_fq: FQ priomap field {i} maps to a too high band {b}"
            )));
        }
        c.priomap.copy_from_slice(map);
    }
    if let Some(w) = &s.weights {
        if w.len() != BANDS {
            return Err(TcError::Invalid(String::new()));
        }
        if let Some(&bad) = w.iter().find(|&&x| x < MIN_WEIGHT) {
            return Err(TcError::Invalid(format!(
                "sch_fq: Weight {bad} less that minimum allowed {MIN_WEIGHT}"
            )));
        }
        c.weights.copy_from_slice(w);
    }
    if let Some(v) = s.orphan_mask {
        c.orphan_mask = v;
    }
    if let Some(us) = s.ce_threshold {
        c.ce_threshold = 1000 * us as u64;
    }
    if let Some(v) = s.timer_slack {
        c.timer_slack = v;
    }
    if let Some(us) = s.horizon {
        c.horizon = 1000 * us as u64;
    }
    if let Some(d) = s.horizon_drop {
        c.horizon_drop = d;
    }
    Ok(c)
}

/// Kind-specific counters (`struct tc_fq_qd_stats`).
#[derive(Clone, Copy, Debug, Default)]
struct Xstats {
    gc_flows: u64,
    fastpath_packets: u64,
    throttled: u64,
    flows_plimit: u64,
    pkts_too_long: u64,
    ce_mark: u64,
    horizon_drops: u64,
    horizon_caps: u64,
    band_drops: [u64; BANDS],
    unthrottle_latency_ns: u64,
}

#[derive(Debug)]
pub struct Fq {
    c: Conf,
    flows: Vec<Flow>,
    free: Vec<u32>,
    buckets: Vec<Vec<u32>>,
    new_flows: [VecDeque<u32>; BANDS],
    old_flows: [VecDeque<u32>; BANDS],
    band_credit: [i64; BANDS],
    band_nr: usize,
    band_pkt_count: [u32; BANDS],
    /// the fast-path FIFO (`q->internal`)
    internal: VecDeque<Entry>,
    /// throttled flows by (time_next_packet, arrival order)
    delayed: BTreeMap<(u64, u64), u32>,
    delayed_seq: u64,
    time_next_delayed_flow: u64,
    n_flows: u32,
    inactive_flows: u32,
    /// instant of the last enqueue or dequeue (the dump's `now`, SIM)
    last_now: u64,
    hash_key: u64,
    x: Xstats,
    stats: QdiscStats,
}

impl Fq {
    pub fn new(spec: &FqSpec, seed: u64, stream: &str) -> Result<Fq, TcError> {
        let c = resolve(spec, &Conf::default())?;
        let weights = c.weights;
        Ok(Fq {
            buckets: vec![Vec::new(); 1 << c.buckets_log],
            c,
            flows: Vec::new(),
            free: Vec::new(),
            new_flows: Default::default(),
            old_flows: Default::default(),
            band_credit: weights.map(|w| w as i64),
            band_nr: 0,
            band_pkt_count: [0; BANDS],
            internal: VecDeque::new(),
            delayed: BTreeMap::new(),
            delayed_seq: 0,
            time_next_delayed_flow: u64::MAX,
            n_flows: 0,
            inactive_flows: 0,
            last_now: 0,
            hash_key: ComponentRng::new(seed, stream).next_u64(),
            x: Xstats::default(),
            stats: QdiscStats::default(),
        })
    }

    /// Does fq pace (`TCA_FQ_RATE_ENABLE`)? Then the sockets whose packets it
    /// sees leave pacing to it.
    pub fn paces(&self) -> bool {
        self.c.rate_enable
    }

    /// The flow identity `fq_classify` uses: the socket (even keys) or an
    /// orphan hash `(hash & orphan_mask) << 1 | 1`.
    fn flow_key(&self, p: &Packet) -> u64 {
        let socket = p.local && matches!(p.proto, Proto::Tcp | Proto::Udp);
        if socket {
            let h = ((hash32(p, self.hash_key) as u64) << 32)
                | hash32(p, self.hash_key ^ 0x5bd1_e995) as u64;
            h << 1
        } else {
            (((hash32(p, !self.hash_key) & self.c.orphan_mask) as u64) << 1) | 1
        }
    }

    /// `hash_ptr(sk, fq_trees_log)`
    fn bucket_of(&self, key: u64) -> u32 {
        (key.wrapping_mul(0x61C8_8646_80B5_83EB) >> (64 - self.c.buckets_log)) as u32
    }

    /// `fq_fastpath_check` for a packet due at `tts`: never one stamped for
    /// later.
    fn fastpath_ok(&self, tts: u64, now: u64) -> bool {
        if tts > now {
            return false;
        }
        if self.stats.qlen != 0 {
            if self.n_flows != self.inactive_flows + self.delayed.len() as u32 {
                return false;
            }
            if self.internal.len() >= 8 {
                return false;
            }
            if self.time_next_delayed_flow <= now {
                return false;
            }
        }
        self.c.maxrate == NO_RATE
    }

    /// `fq_gc` on one bucket, then the lookup or creation of `key`'s flow.
    fn classify(&mut self, key: u64, now_j: u64) -> u32 {
        let b = self.bucket_of(key) as usize;
        let mut found = None;
        let mut i = 0;
        while i < self.buckets[b].len() {
            let fi = self.buckets[b][i];
            let f = &self.flows[fi as usize];
            if f.key == key {
                found = Some(fi);
                break;
            }
            if f.state == State::Detached && f.queue.is_empty() && now_j > f.age + GC_AGE_JIFFIES {
                self.buckets[b].swap_remove(i);
                self.free.push(fi);
                self.n_flows -= 1;
                self.inactive_flows -= 1;
                self.x.gc_flows += 1;
                continue;
            }
            i += 1;
        }
        if let Some(fi) = found {
            return fi;
        }
        let flow = Flow {
            queue: VecDeque::new(),
            key,
            credit: self.c.initial_quantum as i64,
            band: 0,
            time_next_packet: 0,
            state: State::Detached,
            age: now_j,
            bucket: b as u32,
        };
        let fi = match self.free.pop() {
            Some(fi) => {
                self.flows[fi as usize] = flow;
                fi
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        self.buckets[b].push(fi);
        self.n_flows += 1;
        self.inactive_flows += 1;
        fi
    }

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let now = ctx.now.as_nanos();
        self.last_now = now;
        let p = ctx.arena.get(id);
        let band = self.c.priomap[(tos2priority(p.tos) & 15) as usize] as usize;
        let len = p.len;
        let tstamp = p.tstamp.map(|t| t.as_nanos());
        if self.band_pkt_count[band] >= self.c.limit {
            self.x.band_drops[band] += 1;
            return self.drop(ctx, id, DropReason::QueueFull);
        }
        let key = self.flow_key(p);
        let tts = match tstamp {
            None => now,
            // fq_packet_beyond_horizon
            Some(t) if t > now + self.c.horizon => {
                if self.c.horizon_drop {
                    self.x.horizon_drops += 1;
                    return self.drop(ctx, id, DropReason::Horizon);
                }
                self.x.horizon_caps += 1;
                now + self.c.horizon
            }
            Some(t) => t,
        };
        let e = Entry {
            id,
            len,
            tts,
            stamped: tstamp.is_some(),
            band: band as u8,
        };
        if self.fastpath_ok(tts, now) {
            self.x.fastpath_packets += 1;
            self.internal.push_back(e);
            self.stats.queued(len);
            return Verdict::Queued;
        }
        let now_j = now / JIFFY_NS;
        let fi = self.classify(key, now_j) as usize;
        let quantum = self.c.quantum as i64;
        let f = &mut self.flows[fi];
        if f.queue.len() as u32 >= self.c.flow_limit {
            self.x.flows_plimit += 1;
            return self.drop(ctx, id, DropReason::FlowLimit);
        }
        if f.state == State::Detached {
            f.state = State::Listed;
            if now_j > f.age + self.c.refill_delay {
                f.credit = f.credit.max(quantum);
            }
            f.band = band as u8;
            self.new_flows[band].push_back(fi as u32);
        }
        f.band = band as u8;
        if f.queue.is_empty() {
            self.inactive_flows -= 1;
        }
        // flow_queue_add: a packet due before the tail's goes in stamp order
        // (after those due at the same time)
        if f.queue.back().is_some_and(|t| tts < t.tts) {
            let at = f.queue.partition_point(|q| q.tts <= tts);
            f.queue.insert(at, e);
        } else {
            f.queue.push_back(e);
        }
        self.band_pkt_count[band] += 1;
        self.stats.queued(len);
        Verdict::Queued
    }

    fn drop(&mut self, ctx: &mut QdiscCtx, id: PacketId, why: DropReason) -> Verdict {
        self.stats.dropped();
        ctx.drop_packet(id, why);
        Verdict::Dropped(why)
    }

    fn set_throttled(&mut self, fi: u32) {
        let f = &mut self.flows[fi as usize];
        f.state = State::Throttled;
        let t = f.time_next_packet;
        self.delayed.insert((t, self.delayed_seq), fi);
        self.delayed_seq += 1;
        self.x.throttled += 1;
        self.time_next_delayed_flow = self.time_next_delayed_flow.min(t);
    }

    /// `fq_check_throttled`.
    fn check_throttled(&mut self, now: u64) {
        if self.time_next_delayed_flow > now {
            return;
        }
        let sample = now - self.time_next_delayed_flow;
        if sample > 0 {
            let l = &mut self.x.unthrottle_latency_ns;
            *l -= *l >> 3;
            *l += sample >> 3;
        }
        self.time_next_delayed_flow = u64::MAX;
        while let Some((&(t, seq), &fi)) = self.delayed.iter().next() {
            if t > now {
                self.time_next_delayed_flow = t;
                break;
            }
            self.delayed.remove(&(t, seq));
            let f = &mut self.flows[fi as usize];
            f.state = State::Listed;
            self.old_flows[f.band as usize].push_back(fi);
        }
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<PacketId> {
        if self.stats.qlen == 0 {
            return None;
        }
        let now = ctx.now.as_nanos();
        self.last_now = now;
        if let Some(e) = self.internal.pop_front() {
            self.stats.unqueued(e.len);
            self.stats.sent(e.len, ctx.arena.segs_of(e.id));
            return Some(e.id);
        }
        self.check_throttled(now);
        let mut retry = 0;
        let (fi, e) = 'begin: loop {
            let b = self.band_nr;
            let head = if self.band_credit[b] <= 0 {
                None
            } else if !self.new_flows[b].is_empty() {
                Some(true)
            } else if !self.old_flows[b].is_empty() {
                Some(false)
            } else {
                None
            };
            let Some(from_new) = head else {
                loop {
                    retry += 1;
                    if retry > BANDS {
                        break;
                    }
                    self.band_nr = (self.band_nr + 1) % BANDS;
                    let nb = self.band_nr;
                    let w = self.c.weights[nb] as i64;
                    self.band_credit[nb] = (self.band_credit[nb] + w).min(w);
                    if self.band_credit[nb] > 0 {
                        continue 'begin;
                    }
                    retry = 0;
                }
                if self.time_next_delayed_flow != u64::MAX {
                    ctx.arm_watchdog(crate::time::SimTime::from_nanos(
                        self.time_next_delayed_flow,
                    ));
                }
                return None;
            };
            let list = if from_new {
                &mut self.new_flows[b]
            } else {
                &mut self.old_flows[b]
            };
            let fi = *list.front().expect("non-empty");
            retry = 0;
            let f = &mut self.flows[fi as usize];
            if f.credit <= 0 {
                f.credit += self.c.quantum as i64;
                list.pop_front();
                self.old_flows[b].push_back(fi);
                continue;
            }
            match f.queue.front().copied() {
                Some(e) => {
                    let tnp = e.tts.max(f.time_next_packet);
                    if now < tnp {
                        list.pop_front();
                        f.time_next_packet = tnp;
                        self.set_throttled(fi);
                        continue;
                    }
                    f.queue.pop_front();
                    if (now as i64)
                        .wrapping_sub(tnp as i64)
                        .wrapping_sub(self.c.ce_threshold as i64)
                        > 0
                    {
                        ctx.arena.get_mut(e.id).set_ce();
                        self.x.ce_mark += 1;
                    }
                    if f.queue.is_empty() {
                        self.inactive_flows += 1;
                    }
                    self.band_pkt_count[e.band as usize] -= 1;
                    break (fi, e);
                }
                None => {
                    list.pop_front();
                    if from_new {
                        self.old_flows[b].push_back(fi);
                    } else {
                        f.state = State::Detached;
                        f.age = now / JIFFY_NS;
                    }
                }
            }
        };
        self.stats.unqueued(e.len);
        self.stats.sent(e.len, ctx.arena.segs_of(e.id));
        let b = self.band_nr;
        let f = &mut self.flows[fi as usize];
        let mut plen = e.len as u64;
        f.credit -= plen as i64;
        self.band_credit[b] -= plen as i64;
        if !self.c.rate_enable {
            return Some(e.id);
        }
        let rate = self.c.maxrate;
        if !e.stamped {
            // no socket pacing rate below the maximum for non-TCP sockets
            if rate <= self.c.low_rate_threshold {
                f.credit = 0;
            } else {
                plen = plen.max(self.c.quantum as u64);
                if f.credit > 0 {
                    return Some(e.id);
                }
            }
        }
        if rate != NO_RATE {
            // a zero rate leaves the length undivided (and then clamped), as fq_dequeue does
            let mut len = (plen * NSEC_PER_SEC)
                .checked_div(rate)
                .unwrap_or(plen * NSEC_PER_SEC);
            if len > NSEC_PER_SEC {
                len = NSEC_PER_SEC;
                self.x.pkts_too_long += 1;
            }
            if f.time_next_packet != 0 {
                len -= (len / 2).min(now.saturating_sub(f.time_next_packet));
            }
            f.time_next_packet = now + len;
        }
        Some(e.id)
    }

    /// (flows, inactive, throttled)
    pub fn flow_counts(&self) -> (u32, u32, u32) {
        (self.n_flows, self.inactive_flows, self.delayed.len() as u32)
    }

    fn purge(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let (mut n, mut b) = (0, 0);
        let mut free = |e: Entry, ctx: &mut QdiscCtx| {
            n += 1;
            b += e.len as u64;
            ctx.drop_packet(e.id, DropReason::Purged);
        };
        for e in self.internal.drain(..) {
            free(e, ctx);
        }
        for f in &mut self.flows {
            for e in f.queue.drain(..) {
                free(e, ctx);
            }
        }
        Purged {
            packets: n,
            bytes: b,
        }
    }
}

impl Qdisc for Fq {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Fq(s) = spec else {
            return None;
        };
        Some(Fq::new(s, env.seed, env.stream).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "fq"
    }

    crate::qdisc::ops::forward_queue_ops!(leaf Fq);

    /// `fq_reset`: every flow freed.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let p = self.purge(ctx);
        self.flows.clear();
        self.free.clear();
        self.buckets.iter_mut().for_each(Vec::clear);
        self.new_flows = Default::default();
        self.old_flows = Default::default();
        self.delayed.clear();
        self.time_next_delayed_flow = u64::MAX;
        self.band_pkt_count = [0; BANDS];
        self.n_flows = 0;
        self.inactive_flows = 0;
        p
    }

    /// `fq_change`: the attributes given; a new `buckets` rehashes the
    /// flows (`fq_resize`/`fq_rehash`, collecting the old detached ones);
    /// then head packets are dropped down to `limit`.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Fq(spec) = spec else {
            return Err(wrong_kind());
        };
        let c = resolve(spec, &self.c)?;
        let rehash = c.buckets_log != self.c.buckets_log;
        self.c = c;
        if rehash {
            let now_j = ctx.now.as_nanos() / JIFFY_NS;
            let old = std::mem::take(&mut self.buckets);
            self.buckets = vec![Vec::new(); 1 << self.c.buckets_log];
            for fi in old.into_iter().flatten() {
                let f = &self.flows[fi as usize];
                if f.state == State::Detached
                    && f.queue.is_empty()
                    && now_j > f.age + GC_AGE_JIFFIES
                {
                    self.free.push(fi);
                    self.n_flows -= 1;
                    self.inactive_flows -= 1;
                    self.x.gc_flows += 1;
                    continue;
                }
                let b = self.bucket_of(f.key);
                self.flows[fi as usize].bucket = b;
                self.buckets[b as usize].push(fi);
            }
        }
        let (mut n, mut b) = (0, 0);
        while self.stats.qlen > self.c.limit as u64 {
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

    /// `fq_dump`, in the kernel's units (µs, ns for `timer_slack`).
    fn options(&self) -> serde_json::Value {
        let c = &self.c;
        json!({
            "kind": "fq",
            "limit": c.limit,
            "flow_limit": c.flow_limit,
            "quantum": c.quantum,
            "initial_quantum": c.initial_quantum,
            "pacing": c.rate_enable,
            "maxrate": c.maxrate.min(u32::MAX as u64),
            "refill_delay": c.refill_delay * 4000,
            "orphan_mask": c.orphan_mask,
            "low_rate_threshold": c.low_rate_threshold,
            "ce_threshold": (c.ce_threshold / 1000) as u32,
            "buckets_log": c.buckets_log,
            "timer_slack": c.timer_slack,
            "horizon": (c.horizon / 1000) as u32,
            "horizon_drop": c.horizon_drop,
            "priomap": c.priomap,
            "weights": c.weights,
        })
    }

    /// `fq_dump_stats`. `time_next_delayed_flow` is signed (negative when
    /// nothing is throttled); SIM: measured from the last enqueue or
    /// dequeue, the instant the qdisc last saw.
    fn xstats(&self) -> serde_json::Value {
        let x = &self.x;
        json!({
            "gc_flows": x.gc_flows,
            "highprio_packets": 0,
            "fastpath_packets": x.fastpath_packets,
            "tcp_retrans": 0,
            "throttled": x.throttled,
            "flows_plimit": x.flows_plimit,
            "pkts_too_long": x.pkts_too_long,
            "allocation_errors": 0,
            "time_next_delayed_flow": self
                .time_next_delayed_flow
                .wrapping_add(self.c.timer_slack as u64)
                .wrapping_sub(self.last_now) as i64,
            "flows": self.n_flows,
            "inactive_flows": self.inactive_flows,
            "throttled_flows": self.delayed.len(),
            "unthrottle_latency_ns": x.unthrottle_latency_ns.min(u32::MAX as u64),
            "ce_mark": x.ce_mark,
            "horizon_drops": x.horizon_drops,
            "horizon_caps": x.horizon_caps,
            "band_drops": x.band_drops,
            "band_pkt_count": self.band_pkt_count,
        })
    }

    fn held(&self) -> u64 {
        self.internal.len() as u64 + self.flows.iter().map(|f| f.queue.len() as u64).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::tree::harness::Env;

    const MS: u64 = 1_000_000;

    /// A packet of a local TCP socket (source port `sport`).
    fn tcp(env: &mut Env, len: u32, sport: u16) -> PacketId {
        let id = env.pkt(len);
        let p = env.arena.get_mut(id);
        p.local = true;
        p.proto = Proto::Tcp;
        p.src_port = sport;
        id
    }

    /// A packet of a local TCP socket stamped to leave at `at` ns.
    fn stamped(env: &mut Env, sport: u16, at: u64) -> PacketId {
        let id = tcp(env, 1514, sport);
        env.arena.get_mut(id).tstamp = Some(crate::time::SimTime::from_nanos(at));
        id
    }

    /// A forwarded packet (no socket: an orphan flow).
    fn fwd(env: &mut Env, len: u32, sport: u16) -> PacketId {
        let id = env.pkt(len);
        env.arena.get_mut(id).src_port = sport;
        id
    }

    fn drain(q: &mut Fq, env: &mut Env, t: u64) -> (Vec<u16>, Option<u64>) {
        let mut out = vec![];
        loop {
            let mut ctx = env.ctx(t);
            match q.dequeue(&mut ctx) {
                Some(id) => {
                    out.push(env.arena.get(id).src_port);
                    env.arena.free(id);
                }
                None => {
                    let w = ctx.watchdog.map(|w| w.as_nanos());
                    return (out, w);
                }
            }
        }
    }

    #[test]
    fn tos_maps_to_linux_priorities_and_default_bands() {
        // ip_tos2prio: 0x00 → 0 (band 1), 0x08 maximize-throughput → 2 (band 2),
        // 0x10 minimize-delay → 6 (band 0), 0x18 → 4 (band 1)
        let p: Vec<u8> = [0x00, 0x08, 0x10, 0x18, 0x02].map(tos2priority).to_vec();
        assert_eq!(p, vec![0, 2, 6, 4, 0]);
        let b: Vec<u8> = p.iter().map(|&x| DEFAULT_PRIOMAP[x as usize]).collect();
        assert_eq!(b, vec![1, 2, 0, 1, 1]);
    }

    #[test]
    fn an_idle_fq_takes_eight_packets_on_the_fast_path() {
        let mut env = Env::default();
        let mut q = Fq::new(&FqSpec::default(), 1, "t").unwrap();
        for _ in 0..10 {
            let id = tcp(&mut env, 1514, 5001);
            assert_eq!(q.enqueue(&mut env.ctx(0), id), Verdict::Queued);
        }
        // 8 in the internal FIFO (qlen 0, then only idle flows), 2 in the flow
        assert_eq!(q.x.fastpath_packets, 8);
        assert_eq!(q.flow_counts(), (1, 0, 0));
        assert_eq!(q.band_pkt_count, [0, 2, 0]);
        let (out, w) = drain(&mut q, &mut env, 0);
        assert_eq!((out.len(), w), (10, None));
        // the flow went empty: inactive, then detached by the next pass
        assert_eq!(q.flow_counts(), (1, 1, 0));
        assert_eq!(q.stats().qlen, 0);
    }

    #[test]
    fn sockets_share_by_quantum_new_flows_first() {
        // 8 packets of C fill the fast path; A and B then get flows with
        // initial_quantum 3028: two 1514-byte packets per turn each
        let spec = FqSpec {
            initial_quantum: Some(3028),
            ..Default::default()
        };
        let mut env = Env::default();
        let mut q = Fq::new(&spec, 1, "t").unwrap();
        for _ in 0..8 {
            let id = tcp(&mut env, 1514, 3);
            q.enqueue(&mut env.ctx(0), id);
        }
        for port in [1, 1, 1, 1, 2, 2, 2, 2] {
            let id = tcp(&mut env, 1514, port);
            q.enqueue(&mut env.ctx(0), id);
        }
        assert_eq!(q.x.fastpath_packets, 8);
        let (out, _) = drain(&mut q, &mut env, 0);
        assert_eq!(out, vec![3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 2, 2, 1, 1, 2, 2]);
    }

    #[test]
    fn maxrate_paces_a_forwarded_flow_by_quantum() {
        // maxrate 1 Mbit/s = 125 000 B/s: no fast path. 1000-byte packets
        // of one orphan flow leave while its credit (15 140 initially) lasts:
        // 16 at t = 0; the 16th leaves credit −860 and sets time_next_packet
        // to max(1000, quantum 3028) / 125 000 s = 24.224 ms.
        let spec = FqSpec {
            maxrate: Some(125_000),
            ..Default::default()
        };
        let mut env = Env::default();
        let mut q = Fq::new(&spec, 1, "t").unwrap();
        for _ in 0..24 {
            let id = fwd(&mut env, 1000, 7);
            q.enqueue(&mut env.ctx(0), id);
        }
        assert_eq!(q.x.fastpath_packets, 0);
        let (out, w) = drain(&mut q, &mut env, 0);
        assert_eq!((out.len(), w), (16, Some(24_224_000)));
        assert_eq!(q.flow_counts(), (1, 0, 1));
        assert_eq!(q.x.throttled, 1);
        // refilled to −860 + 3028 = 2168: three more, then 24.224 ms again
        let (out, w) = drain(&mut q, &mut env, 24_224_000);
        assert_eq!((out.len(), w), (3, Some(48_448_000)));
        assert_eq!(q.x.unthrottle_latency_ns, 0);
    }

    #[test]
    fn a_stamped_packet_is_throttled_until_its_stamp() {
        // fq_enqueue: time_to_send = skb->tstamp (5 ms), so no fast path;
        // the unstamped packet of socket 2 after it finds a flow that is not
        // idle, no fast path either. fq_dequeue at 0: socket 1's head is not
        // due, its flow is throttled (throttled 1) and socket 2's goes; the
        // watchdog is set at 5 ms, when socket 1's packet leaves.
        let mut env = Env::default();
        let mut q = Fq::new(&FqSpec::default(), 1, "t").unwrap();
        let a = stamped(&mut env, 1, 5 * MS);
        let b = tcp(&mut env, 1514, 2);
        assert_eq!(q.enqueue(&mut env.ctx(0), a), Verdict::Queued);
        assert_eq!(q.enqueue(&mut env.ctx(0), b), Verdict::Queued);
        assert_eq!(q.x.fastpath_packets, 0);
        let (out, w) = drain(&mut q, &mut env, 0);
        assert_eq!((out, w), (vec![2], Some(5 * MS)));
        assert_eq!((q.x.throttled, q.flow_counts()), (1, (2, 1, 1)));
        assert_eq!(q.xstats()["throttled_flows"], 1);
        // a dequeue before the stamp still sends nothing
        assert_eq!(drain(&mut q, &mut env, 5 * MS - 1), (vec![], Some(5 * MS)));
        assert_eq!(drain(&mut q, &mut env, 5 * MS), (vec![1], None));
        assert_eq!((q.x.throttled, q.flow_counts()), (1, (2, 2, 0)));
    }

    #[test]
    fn a_flow_sends_in_stamp_order() {
        // flow_queue_add: stamps 3, 1, 2, 1 ms of one socket leave as
        // 1 (first), 1 (second), 2, 3 ms; each later one throttles the flow
        let mut env = Env::default();
        let mut q = Fq::new(&FqSpec::default(), 1, "t").unwrap();
        for (i, at) in [3, 1, 2, 1].into_iter().enumerate() {
            let id = stamped(&mut env, 1, at * MS);
            env.arena.get_mut(id).seq = i as u64;
            q.enqueue(&mut env.ctx(0), id);
        }
        let mut order = vec![];
        for t in [0, MS, 2 * MS, 3 * MS] {
            while let Some(id) = q.dequeue(&mut env.ctx(t)) {
                order.push((t / MS, env.arena.get(id).seq));
                env.arena.free(id);
            }
        }
        assert_eq!(order, vec![(1, 1), (1, 3), (2, 2), (3, 0)]);
        assert_eq!(q.x.throttled, 3);
    }

    /// Feed `arrivals` (enqueue instant, source port, stamp; in time order)
    /// and dequeue at every arrival and every watchdog instant until the
    /// queue is empty: (release instant, source port) of every packet.
    fn run_script(q: &mut Fq, env: &mut Env, arrivals: &[(u64, u16, u64)]) -> Vec<(u64, u16)> {
        let mut out = vec![];
        let mut next = 0;
        let mut t = 0;
        loop {
            while next < arrivals.len() && arrivals[next].0 <= t {
                let (_, port, at) = arrivals[next];
                let id = stamped(env, port, at);
                assert_eq!(q.enqueue(&mut env.ctx(t), id), Verdict::Queued);
                next += 1;
            }
            let (ports, watchdog) = drain(q, env, t);
            out.extend(ports.into_iter().map(|p| (t, p)));
            let arrival = arrivals.get(next).map(|a| a.0);
            match (watchdog, arrival) {
                (None, None) => return out,
                (w, a) => t = w.unwrap_or(u64::MAX).min(a.unwrap_or(u64::MAX)),
            }
        }
    }

    #[test]
    fn stamped_packets_leave_at_their_stamps() {
        // Two sockets hand fq packets ahead of their stamps (µs): socket 1
        // at 0 for 500, 1000, 1500; socket 2 at 100 for 200 and at 1100 for
        // 1200. Without maxrate nothing else spaces them: fq_dequeue sends
        // each at its time_to_send, the watchdog armed at the earliest
        // throttled flow's (fq_check_throttled), whatever the order in which
        // they arrived.
        const US: u64 = 1000;
        let mut env = Env::default();
        let mut q = Fq::new(&FqSpec::default(), 1, "t").unwrap();
        let arrivals = [
            (0, 1, 500 * US),
            (0, 1, 1000 * US),
            (0, 1, 1500 * US),
            (100 * US, 2, 200 * US),
            (1100 * US, 2, 1200 * US),
        ];
        let out = run_script(&mut q, &mut env, &arrivals);
        let want = [(200, 2), (500, 1), (1000, 1), (1200, 2), (1500, 1)];
        assert_eq!(out, want.map(|(t, p)| (t * US, p)));
        // every release but the first of each flow's turns followed a throttle
        assert_eq!((q.x.fastpath_packets, q.x.throttled), (0, 5));
    }

    #[test]
    fn maxrate_spaces_stamped_packets_too() {
        // maxrate 1 Mbit/s (125 000 B/s): after each 1514-byte packet
        // time_next_packet = now + 12.112 ms, less the drift credit
        // min(len / 2, now − time_next_packet) (fq_dequeue); a packet leaves
        // at the later of its stamp and that. Stamps 0, 1, 30, 31 ms leave
        // at 0; 12.112 (the rate); 30 (the stamp); 42.112: the flow was
        // throttled for the third packet's stamp, which fq_dequeue then keeps
        // as time_next_packet, so the third left on time and no drift credit
        // shortens the next gap.
        let spec = FqSpec {
            maxrate: Some(125_000),
            ..Default::default()
        };
        let mut env = Env::default();
        let mut q = Fq::new(&spec, 1, "t").unwrap();
        let arrivals = [(0, 1, 0), (0, 1, MS), (0, 1, 30 * MS), (0, 1, 31 * MS)];
        let out = run_script(&mut q, &mut env, &arrivals);
        let times: Vec<u64> = out.iter().map(|o| o.0).collect();
        assert_eq!(times, vec![0, 12_112_000, 30_000_000, 42_112_000]);
    }

    #[test]
    fn a_stamp_beyond_the_horizon_is_dropped_or_capped() {
        // fq_packet_beyond_horizon: horizon 1 s; a stamp of exactly now + 1 s
        // is kept, one 1 ns later dropped (horizon_drop, the default) ...
        let spec = FqSpec {
            horizon: Some(1_000_000),
            ..Default::default()
        };
        let mut env = Env::default();
        let mut q = Fq::new(&spec, 1, "t").unwrap();
        let now = 2 * NSEC_PER_SEC;
        let ok = stamped(&mut env, 1, now + NSEC_PER_SEC);
        let far = stamped(&mut env, 1, now + NSEC_PER_SEC + 1);
        assert_eq!(q.enqueue(&mut env.ctx(now), ok), Verdict::Queued);
        assert_eq!(
            q.enqueue(&mut env.ctx(now), far),
            Verdict::Dropped(DropReason::Horizon)
        );
        assert_eq!((q.x.horizon_drops, q.stats().drops), (1, 1));
        assert_eq!(env.drops.packets[DropReason::Horizon.index()], 1);
        // ... or, with horizon_cap, sent at now + horizon
        let mut q = Fq::new(
            &FqSpec {
                horizon_drop: Some(false),
                ..spec
            },
            1,
            "t",
        )
        .unwrap();
        let far = stamped(&mut env, 1, now + 5 * NSEC_PER_SEC);
        assert_eq!(q.enqueue(&mut env.ctx(now), far), Verdict::Queued);
        assert_eq!(q.x.horizon_caps, 1);
        assert_eq!(
            drain(&mut q, &mut env, now),
            (vec![], Some(now + NSEC_PER_SEC))
        );
        assert_eq!(drain(&mut q, &mut env, now + NSEC_PER_SEC).0, vec![1]);
    }

    #[test]
    fn flow_limit_drops_the_arrival() {
        let spec = FqSpec {
            flow_limit: Some(3),
            ..Default::default()
        };
        let mut env = Env::default();
        let mut q = Fq::new(&spec, 1, "t").unwrap();
        let mut verdicts = vec![];
        for _ in 0..12 {
            let id = tcp(&mut env, 100, 9);
            verdicts.push(q.enqueue(&mut env.ctx(0), id));
        }
        assert_eq!(verdicts[11], Verdict::Dropped(DropReason::FlowLimit));
        assert!(verdicts[..11].iter().all(|v| *v == Verdict::Queued));
        assert_eq!(
            (q.x.flows_plimit, q.stats().drops, q.stats().qlen),
            (1, 1, 11)
        );
        assert_eq!(env.drops.packets[DropReason::FlowLimit.index()], 1);
    }

    #[test]
    fn ce_threshold_marks_packets_that_waited_longer() {
        // ce_threshold 1 ms: an ECT(0) packet queued at 0 and sent at 2 ms
        // is marked; the fast-path packets before it are not.
        let spec = FqSpec {
            ce_threshold: Some(1000),
            ..Default::default()
        };
        let mut env = Env::default();
        let mut q = Fq::new(&spec, 1, "t").unwrap();
        for _ in 0..9 {
            let id = tcp(&mut env, 100, 4);
            env.arena.get_mut(id).tos = 0x02;
            q.enqueue(&mut env.ctx(0), id);
        }
        let mut ce = vec![];
        while let Some(id) = q.dequeue(&mut env.ctx(2 * MS)) {
            ce.push(env.arena.get(id).tos & 3 == 3);
            env.arena.free(id);
        }
        assert_eq!(
            ce,
            vec![false; 8].into_iter().chain([true]).collect::<Vec<_>>()
        );
        assert_eq!(q.x.ce_mark, 1);
    }

    #[test]
    fn detached_flows_are_collected_after_three_seconds() {
        // fq_gc: a lookup in a bucket frees the flows there that have been
        // detached for more than FQ_GC_AGE (3 s = 750 jiffies)
        let mut q = Fq::new(
            &FqSpec {
                buckets_log: Some(1),
                ..Default::default()
            },
            1,
            "t",
        )
        .unwrap();
        let keys: Vec<u64> = (1..=6u64).map(|k| k << 1).collect();
        for &k in &keys {
            let fi = q.classify(k, 0) as usize;
            q.flows[fi].age = 10;
        }
        assert_eq!(q.flow_counts(), (6, 6, 0));
        // 760 jiffies: not yet older than 750
        for &k in &keys {
            q.classify(k | 1, 760);
        }
        assert_eq!((q.x.gc_flows, q.flow_counts().0), (0, 12));
        // 761: the old flows a lookup passes before finding its own go; a
        // lookup stops at the flow it finds (the kernel's tree search path),
        // so one old flow behind a found one is left for later
        for &k in &keys {
            q.classify(k | 1, 761);
        }
        assert_eq!((q.x.gc_flows, q.flow_counts()), (5, (7, 7, 0)));
    }

    #[test]
    fn change_checks_like_fq_change() {
        let mut q = Fq::new(&FqSpec::default(), 1, "t").unwrap();
        let mut env = Env::default();
        let bad = |s: FqSpec| QdiscSpec::Fq(s);
        let e = q
            .change(
                &bad(FqSpec {
                    quantum: Some(0),
                    ..Default::default()
                }),
                &mut env.ctx(0),
                None,
            )
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "Error: sch_fq: invalid quantum.\nRTNETLINK answers: Invalid argument"
        );
        let e = q
            .change(
                &bad(FqSpec {
                    buckets_log: Some(0),
                    ..Default::default()
                }),
                &mut env.ctx(0),
                None,
            )
            .unwrap_err();
        assert_eq!(e.to_string(), "RTNETLINK answers: Invalid argument");
        let e = q
            .change(
                &bad(FqSpec {
                    weights: Some(vec![100, 20000, 20000]),
                    ..Default::default()
                }),
                &mut env.ctx(0),
                None,
            )
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("Weight 100 less that minimum allowed 16384"),
            "{e}"
        );
        q.change(
            &bad(FqSpec {
                buckets_log: Some(4),
                limit: Some(5),
                ..Default::default()
            }),
            &mut env.ctx(0),
            None,
        )
        .unwrap();
        let o = q.options();
        assert_eq!(
            (o["buckets_log"].as_u64(), o["limit"].as_u64()),
            (Some(4), Some(5))
        );
        assert_eq!(o["refill_delay"], 40_000);
        assert_eq!(o["ce_threshold"], u32::MAX);
        assert_eq!(o["low_rate_threshold"], 68_750);
    }
}
