//! `cake` — Common Applications Kept Enhanced (docs/semantics/qdiscs.md §14),
//! after Linux's net/sched/sch_cake.c (the 2025 version, with the bounds-checked
//! host counters of `cake_inc/dec_*host_bulk_flow_count` and the dithered
//! `cake_get_flow_quantum`). Written from the algorithm, function by function:
//!
//! * shaper: `cake_set_rate` (time per byte as `rate_ns >> rate_shft`),
//!   `cake_advance_shaper` (per-tin and global `time_next_packet`, the 1.5×
//!   failsafe), the hard-shaper test at the top of `cake_dequeue`;
//! * overhead: `cake_calc_overhead` / `cake_overhead` (MAC header off when an
//!   overhead is configured, + overhead, mpu, ATM 48→53 cells or PTM 64/65),
//!   per segment for a GSO aggregate that is not split;
//! * tins: `cake_config_besteffort/precedence/diffserv8/diffserv4/diffserv3`
//!   and the DSCP maps, `cake_select_tin`, `cake_handle_diffserv` (wash);
//! * flows: `cake_hash` — 1024 queues per tin, 8-way set-associative tags, and
//!   per-source / per-destination host slots whose bulk-flow counts scale a
//!   flow's DRR quantum (`quantum_div`), i.e. host fairness;
//! * DRR++ over new / old / decaying flow lists and tin DRR (unlimited) or
//!   earliest-schedule tin choice (shaped): `cake_dequeue`;
//! * COBALT: `cobalt_should_drop`, `cobalt_queue_full`, `cobalt_queue_empty`,
//!   `cobalt_newton_step` / `cobalt_invsqrt` with the 16-entry cache;
//! * overflow: `cake_drop` from the longest queue through the lazily rebuilt
//!   max-heap (`cake_heapify`, `cake_heapify_up`, with the kernel's heapify,
//!   which keeps comparing against the first larger child it found);
//! * `cake_ack_filter` (and `cake_tcph_may_drop`, `cake_tcph_sack_compare`);
//! * the ingress capacity estimate of `cake_enqueue` (autorate-ingress).
//!
//! SIM: the flow and host hashes are keyed hashes of the 5-tuple and of the
//! addresses (Linux: `skb->hash` / `flow_hash_from_keys` with a boot-time key);
//! `skb->truesize` is `len + 768` as in fq_codel; packets carry no firewall mark
//! or `skb->priority`, so `fwmark` is accepted and shown but every packet is
//! classified by DSCP; `nat` is shown but nothing is translated (no conntrack).
//! The kernel reports drops made inside dequeue when it returns a packet; we
//! report them on every dequeue (as fq_codel.rs does).

use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc, Reduce};
use super::spec::{CakeAckFilter, CakeAtm, CakeDiffserv, CakeFlowMode, CakeSpec, QdiscSpec};
use super::tree::Node;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::{tcp_flags, Packet, PacketId, Payload, Proto, ETH_HEADER};
use crate::rng::ComponentRng;
use crate::time::SimTime;
use serde_json::json;
use std::collections::VecDeque;
use std::sync::OnceLock;

pub const QUEUES: usize = 1024;
const WAYS: usize = 8;
const MAX_TINS: usize = 8;
const NIL: u16 = u16::MAX;
/// `psched_mtu(dev)`: MTU 1500 + the Ethernet header.
const MTU: u32 = 1514;
/// `sch->limit` (packets) that caps the memory limit at `limit · mtu`.
const SCH_LIMIT: u64 = 10_240;
/// SIM stand-in for `skb->truesize` (as fq_codel).
const TRUESIZE_EXTRA: u32 = super::fq_codel::TRUESIZE_EXTRA as u32;
const NSEC_PER_SEC: u64 = 1_000_000_000;

// flow mode bits (`CAKE_FLOW_*`)
const FLOW_SRC_IP: u8 = 1;
const FLOW_DST_IP: u8 = 2;
const FLOW_FLOWS: u8 = 4;

fn flow_mode_bits(m: CakeFlowMode) -> u8 {
    match m {
        CakeFlowMode::Flowblind => 0,
        CakeFlowMode::Srchost => 1,
        CakeFlowMode::Dsthost => 2,
        CakeFlowMode::Hosts => 3,
        CakeFlowMode::Flows => 4,
        CakeFlowMode::DualSrchost => 5,
        CakeFlowMode::DualDsthost => 6,
        CakeFlowMode::TripleIsolate => 7,
    }
}

#[inline]
fn dual_src(mode: u8) -> bool {
    mode & 5 == 5
}

#[inline]
fn dual_dst(mode: u8) -> bool {
    mode & 6 == 6
}

// DSCP → tin maps (one entry per DSCP 0..63), as the kernel's tables.
const PRECEDENCE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = (i / 8) as u8;
        i += 1;
    }
    t
};
#[rustfmt::skip]
const DIFFSERV8: [u8; 64] = [
    2, 0, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2,
    5, 2, 4, 2, 4, 2, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2,
    6, 2, 3, 2, 3, 2, 3, 2, 6, 2, 2, 2, 6, 2, 6, 2,
    7, 2, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2,
];
#[rustfmt::skip]
const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 2, 0, 2, 0, 2, 0, 3, 0, 0, 0, 3, 0, 3, 0,
    3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
];
#[rustfmt::skip]
const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0,
    2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
];
const BESTEFFORT: [u8; 64] = [0; 64];
const NORMAL_ORDER: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
const BULK_ORDER: [u8; 8] = [1, 0, 2, 3, 4, 5, 6, 7];

/// `quantum_div[i] = 65535 / i`, `[0] = 0xFFFF` (host loads are at most 1024).
const QUANTUM_DIV: [u16; QUEUES + 1] = {
    let mut t = [0u16; QUEUES + 1];
    t[0] = 0xFFFF;
    let mut i = 1;
    while i <= QUEUES {
        t[i] = (65_535 / i) as u16;
        i += 1;
    }
    t
};

#[inline]
fn quantum_div(i: u16) -> u32 {
    QUANTUM_DIV[(i as usize).min(QUEUES)] as u32
}

// ---------------------------------------------------------------- COBALT

/// `struct cobalt_params` (ns, Q0.32 probabilities).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltParams {
    pub interval: u64,
    pub target: u64,
    pub mtu_time: u64,
    pub p_inc: u32,
    pub p_dec: u32,
}

/// `struct cobalt_vars`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltVars {
    pub count: u32,
    /// 1/sqrt(count), Q0.32
    pub rec_inv_sqrt: u32,
    pub drop_next: i64,
    pub blue_timer: i64,
    pub p_drop: u32,
    pub dropping: bool,
    pub ecn_marked: bool,
}

/// What `cobalt_should_drop` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Deliver,
    /// CoDel's schedule fell due and the packet is not ECN-capable.
    Congested,
    /// BLUE's coin (`SKB_DROP_REASON_CAKE_FLOOD`).
    Flood,
}

/// `cobalt_newton_step`: one Newton iteration of 1/sqrt(count) in Q0.32.
pub fn newton_step(count: u32, rec_inv_sqrt: u32) -> u32 {
    let inv = rec_inv_sqrt as u64;
    let inv2 = (inv * inv) >> 32;
    let mut val = (3u64 << 32).wrapping_sub(count as u64 * inv2);
    val >>= 2;
    val = val.wrapping_mul(inv) >> (32 - 2 + 1);
    val as u32
}

/// `cobalt_cache_init`: 1/sqrt(n) for n < 16 by four Newton steps per n,
/// carried on from the previous entry; entries 0 and 1 stand for 1.0.
pub fn inv_sqrt_cache() -> &'static [u32; 16] {
    static CACHE: OnceLock<[u32; 16]> = OnceLock::new();
    CACHE.get_or_init(|| {
        let mut c = [0u32; 16];
        let mut v = u32::MAX;
        c[0] = v;
        for (n, slot) in c.iter_mut().enumerate().skip(1) {
            for _ in 0..4 {
                v = newton_step(n as u32, v);
            }
            *slot = v;
        }
        c
    })
}

impl CobaltVars {
    fn new() -> CobaltVars {
        CobaltVars::default()
    }

    /// `cobalt_invsqrt`.
    fn invsqrt(&mut self) {
        if self.count < 16 {
            self.rec_inv_sqrt = inv_sqrt_cache()[self.count as usize];
        } else {
            self.rec_inv_sqrt = newton_step(self.count, self.rec_inv_sqrt);
        }
    }

    /// `cobalt_control`: t + interval/sqrt(count); `reciprocal_scale` takes
    /// the interval as a u32.
    pub fn control(t: i64, interval: u64, rec_inv_sqrt: u32) -> i64 {
        t + (((interval as u32 as u64) * rec_inv_sqrt as u64) >> 32) as i64
    }

    /// `cobalt_queue_full`: true when BLUE went from quiescent to active.
    pub fn queue_full(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut up = false;
        if (now - self.blue_timer) as u64 > p.target {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.wrapping_add(p.p_inc);
            if self.p_drop < p.p_inc {
                self.p_drop = u32::MAX;
            }
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// `cobalt_queue_empty`: true when BLUE went from active to quiescent.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut down = false;
        if self.p_drop != 0 && (now - self.blue_timer) as u64 > p.target {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now - self.drop_next >= 0 {
            self.count -= 1;
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
        down
    }

    /// `cobalt_should_drop` for a packet just taken off its flow after
    /// `sojourn` ns; `set_ce` marks it if it is ECN-capable. `draw` is the
    /// BLUE coin, drawn only while BLUE is active and CoDel did not drop.
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: i64,
        sojourn: u64,
        bulk_flows: u32,
        set_ce: &mut dyn FnMut() -> bool,
        draw: &mut dyn FnMut() -> u32,
    ) -> Signal {
        let mut signal = Signal::Deliver;
        let mut schedule = now - self.drop_next;
        let over_target = sojourn > p.target
            && sojourn > p.mtu_time * bulk_flows as u64 * 2
            && sojourn > p.mtu_time * 4;
        let mut next_due = self.count != 0 && schedule >= 0;
        self.ecn_marked = false;
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = Self::control(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            self.ecn_marked = set_ce();
            if !self.ecn_marked {
                signal = Signal::Congested;
            }
            self.count = self.count.wrapping_add(1);
            if self.count == 0 {
                self.count = u32::MAX;
            }
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = now - self.drop_next;
        } else {
            while next_due {
                self.count -= 1;
                self.invsqrt();
                self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = now - self.drop_next;
                next_due = self.count != 0 && schedule >= 0;
            }
        }
        if self.p_drop != 0 && signal == Signal::Deliver && draw() < self.p_drop {
            signal = Signal::Flood;
        }
        if self.count == 0 {
            self.drop_next = now + p.interval as i64;
        } else if schedule > 0 && signal == Signal::Deliver {
            self.drop_next = now;
        }
        signal
    }
}

// ---------------------------------------------------------------- overhead

/// The overhead compensation of `cake_calc_overhead`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overhead {
    /// the overhead flag: take the MAC header off first
    pub flag: bool,
    pub overhead: i32,
    pub mpu: u32,
    pub atm: CakeAtm,
}

impl Overhead {
    /// Bytes the shaper charges for a frame of `len` bytes with `off` bytes
    /// of MAC header, and the network-layer length it saw.
    pub fn adjust(&self, len: u32, off: u32) -> (u32, u32) {
        let mut len = len;
        if self.flag {
            len = len.wrapping_sub(off);
        }
        let net = len;
        len = len.wrapping_add(self.overhead as u32);
        if len < self.mpu {
            len = self.mpu;
        }
        match self.atm {
            // u32 arithmetic as in C: a negative overhead larger than a tiny
            // frame wraps, and so does everything after it
            CakeAtm::Atm => len = (len.wrapping_add(47) / 48).wrapping_mul(53),
            CakeAtm::Ptm => len = len.wrapping_add(len.wrapping_add(63) / 64),
            CakeAtm::Noatm => {}
        }
        (net, len)
    }
}

// ---------------------------------------------------------------- queues

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Set {
    None,
    Sparse,
    SparseWait,
    Bulk,
    Decaying,
}

const NEW: usize = 0;
const OLD: usize = 1;
const DECAYING: usize = 2;
const NO_CHAIN: u8 = 3;

#[derive(Clone, Copy, Debug)]
struct Entry {
    id: PacketId,
    t_enq: i64,
    adj_len: u32,
    len: u32,
}

#[derive(Debug)]
struct Flow {
    queue: VecDeque<Entry>,
    backlog: u32,
    deficit: i32,
    dropped: u32,
    cvars: CobaltVars,
    srchost: u16,
    dsthost: u16,
    set: Set,
    tag: u32,
    overflow_idx: u16,
    chain: u8,
    prev: u16,
    next: u16,
}

#[derive(Clone, Copy, Debug, Default)]
struct Host {
    src_tag: u32,
    dst_tag: u32,
    src_bulk: u16,
    dst_bulk: u16,
}

/// `struct cake_tin_data`.
#[derive(Debug)]
struct Tin {
    flows: Vec<Flow>,
    hosts: Vec<Host>,
    flow_quantum: u16,
    cp: CobaltParams,
    drop_overlimit: u32,
    bulk_flow_count: u16,
    sparse_flow_count: u16,
    decaying_flow_count: u16,
    unresponsive_flow_count: u16,
    max_skblen: u32,
    head: [u16; 3],
    tail: [u16; 3],
    time_next_packet: i64,
    rate_ns: u64,
    rate_bps: u64,
    rate_shft: u16,
    tin_quantum: u16,
    tin_deficit: i32,
    tin_backlog: u32,
    tin_dropped: u32,
    tin_ecn_mark: u32,
    packets: u32,
    bytes: u64,
    ack_drops: u32,
    avge_delay: u64,
    peak_delay: u64,
    base_delay: u64,
    way_directs: u32,
    way_hits: u32,
    way_misses: u32,
    way_collisions: u32,
    // SIM: drops by reason
    congested_drops: u64,
    flood_drops: u64,
}

impl Tin {
    fn new(t: usize) -> Tin {
        Tin {
            flows: (0..QUEUES)
                .map(|j| Flow {
                    queue: VecDeque::new(),
                    backlog: 0,
                    deficit: 0,
                    dropped: 0,
                    cvars: CobaltVars::new(),
                    srchost: 0,
                    dsthost: 0,
                    set: Set::None,
                    tag: 0,
                    overflow_idx: (j * MAX_TINS + t) as u16,
                    chain: NO_CHAIN,
                    prev: NIL,
                    next: NIL,
                })
                .collect(),
            hosts: vec![Host::default(); QUEUES],
            flow_quantum: 0,
            cp: CobaltParams::default(),
            drop_overlimit: 0,
            bulk_flow_count: 0,
            sparse_flow_count: 0,
            decaying_flow_count: 0,
            unresponsive_flow_count: 0,
            max_skblen: 0,
            head: [NIL; 3],
            tail: [NIL; 3],
            time_next_packet: 0,
            rate_ns: 0,
            rate_bps: 0,
            rate_shft: 0,
            tin_quantum: 0,
            tin_deficit: 0,
            tin_backlog: 0,
            tin_dropped: 0,
            tin_ecn_mark: 0,
            packets: 0,
            bytes: 0,
            ack_drops: 0,
            avge_delay: 0,
            peak_delay: 0,
            base_delay: 0,
            way_directs: 0,
            way_hits: 0,
            way_misses: 0,
            way_collisions: 0,
            congested_drops: 0,
            flood_drops: 0,
        }
    }

    fn active(&self) -> bool {
        self.sparse_flow_count + self.bulk_flow_count > 0
    }

    fn unlink(&mut self, f: u16) {
        let fl = &self.flows[f as usize];
        let (c, p, n) = (fl.chain, fl.prev, fl.next);
        if c == NO_CHAIN {
            return;
        }
        let c = c as usize;
        if p == NIL {
            self.head[c] = n;
        } else {
            self.flows[p as usize].next = n;
        }
        if n == NIL {
            self.tail[c] = p;
        } else {
            self.flows[n as usize].prev = p;
        }
        let fl = &mut self.flows[f as usize];
        fl.chain = NO_CHAIN;
        fl.prev = NIL;
        fl.next = NIL;
    }

    /// `list_move_tail` / `list_add_tail` to chain `c`.
    fn move_tail(&mut self, f: u16, c: usize) {
        self.unlink(f);
        let t = self.tail[c];
        {
            let fl = &mut self.flows[f as usize];
            fl.chain = c as u8;
            fl.prev = t;
            fl.next = NIL;
        }
        if t == NIL {
            self.head[c] = f;
        } else {
            self.flows[t as usize].next = f;
        }
        self.tail[c] = f;
    }

    fn dec_src(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].srchost as usize;
        if dual_src(mode) && self.hosts[h].src_bulk > 0 {
            self.hosts[h].src_bulk -= 1;
        }
    }

    fn inc_src(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].srchost as usize;
        if dual_src(mode) && (self.hosts[h].src_bulk as usize) < QUEUES {
            self.hosts[h].src_bulk += 1;
        }
    }

    fn dec_dst(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].dsthost as usize;
        if dual_dst(mode) && self.hosts[h].dst_bulk > 0 {
            self.hosts[h].dst_bulk -= 1;
        }
    }

    fn inc_dst(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].dsthost as usize;
        if dual_dst(mode) && (self.hosts[h].dst_bulk as usize) < QUEUES {
            self.hosts[h].dst_bulk += 1;
        }
    }

    /// `cake_get_flow_quantum`: the flow quantum divided by the larger bulk
    /// flow count of its two hosts, dithered by a random 16-bit fraction.
    fn flow_quantum_for(&self, f: usize, mode: u8, dither: u32) -> i32 {
        let fl = &self.flows[f];
        let mut load: u16 = 1;
        if dual_src(mode) {
            load = load.max(self.hosts[fl.srchost as usize].src_bulk);
        }
        if dual_dst(mode) {
            load = load.max(self.hosts[fl.dsthost as usize].dst_bulk);
        }
        ((self.flow_quantum as u32 * quantum_div(load) + (dither >> 16)) >> 16) as i32
    }

    /// The deficit refill of `cake_dequeue`'s DRR++: a sparse flow that used
    /// up its deficit turns bulk (or sparse-wait when empty), then gets its
    /// host-scaled quantum.
    #[inline]
    fn refill(&mut self, f: usize, mode: u8, dither: u32) {
        if self.flows[f].set == Set::Sparse {
            if !self.flows[f].queue.is_empty() {
                self.sparse_flow_count -= 1;
                self.bulk_flow_count += 1;
                self.inc_src(f, mode);
                self.inc_dst(f, mode);
                self.flows[f].set = Set::Bulk;
            } else {
                self.flows[f].set = Set::SparseWait;
            }
        }
        let q = self.flow_quantum_for(f, mode, dither);
        self.flows[f].deficit = self.flows[f].deficit.wrapping_add(q);
    }

    /// `cake_set_rate`.
    fn set_rate(&mut self, rate: u64, mtu: u32, target_ns: u64, rtt_ns: u64) {
        const MIN_RATE: u64 = 64;
        let mut rate_shft: u16 = 0;
        let mut rate_ns: u64 = 0;
        self.flow_quantum = 1514;
        if rate != 0 {
            self.flow_quantum = (rate >> 12).clamp(300, 1514) as u16;
            rate_shft = 34;
            rate_ns = (NSEC_PER_SEC << rate_shft) / rate.max(MIN_RATE);
            while rate_ns >> 34 != 0 {
                rate_ns >>= 1;
                rate_shft -= 1;
            }
        }
        self.rate_bps = rate;
        self.rate_ns = rate_ns;
        self.rate_shft = rate_shft;
        let byte_target_ns = (mtu as u64 * rate_ns) >> rate_shft;
        self.cp.target = (byte_target_ns * 3 / 2).max(target_ns);
        self.cp.interval = (rtt_ns + self.cp.target - target_ns).max(self.cp.target * 2);
        self.cp.mtu_time = byte_target_ns;
        self.cp.p_inc = 1 << 24;
        self.cp.p_dec = 1 << 20;
    }
}

// ---------------------------------------------------------------- config

/// What `cake_change` keeps (`struct cake_sched_data`'s configuration).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Config {
    rate_bps: u64,
    tin_mode: CakeDiffserv,
    flow_mode: CakeFlowMode,
    nat: bool,
    wash: bool,
    atm: CakeAtm,
    overhead: i32,
    overhead_flag: bool,
    mpu: u32,
    /// µs
    interval: u32,
    /// µs
    target: u32,
    autorate: bool,
    ingress: bool,
    ack_filter: CakeAckFilter,
    memlimit: u32,
    split_gso: bool,
    fwmark: u32,
}

impl Default for Config {
    /// `cake_init`'s defaults.
    fn default() -> Config {
        Config {
            rate_bps: 0,
            tin_mode: CakeDiffserv::Diffserv3,
            flow_mode: CakeFlowMode::TripleIsolate,
            nat: false,
            wash: false,
            atm: CakeAtm::Noatm,
            overhead: 0,
            overhead_flag: false,
            mpu: 0,
            interval: 100_000,
            target: 5_000,
            autorate: false,
            ingress: false,
            ack_filter: CakeAckFilter::None,
            memlimit: 0,
            split_gso: true,
            fwmark: 0,
        }
    }
}

impl Config {
    /// `cake_change`'s attribute handling; `resets_lengths` when the
    /// overhead (or raw) was given (min/max sizes start again).
    fn apply(&mut self, s: &CakeSpec) -> Result<bool, TcError> {
        let mut c = *self;
        let mut resets = false;
        if let Some(n) = s.nat {
            c.nat = n;
        }
        if let Some(b) = s.bandwidth {
            c.rate_bps = b;
        }
        if let Some(d) = s.diffserv {
            c.tin_mode = d;
        }
        if let Some(w) = s.wash {
            c.wash = w;
        }
        if let Some(f) = s.flowmode {
            c.flow_mode = f;
        }
        if let Some(a) = s.atm {
            c.atm = a;
        }
        if let Some(o) = s.overhead {
            if !(-64..=256).contains(&o) {
                return Err(TcError::Invalid(
                    "Illegal \"overhead\", valid range is -64 to 256".into(),
                ));
            }
            c.overhead = o;
            c.overhead_flag = true;
            resets = true;
        }
        if s.raw {
            c.overhead_flag = false;
            resets = true;
        }
        if let Some(m) = s.mpu {
            if m > 256 {
                return Err(TcError::Invalid(
                    "Illegal \"mpu\", valid range is 0 to 256".into(),
                ));
            }
            c.mpu = m;
        }
        if let Some(r) = s.rtt {
            c.interval = r.max(1);
        }
        if let Some(t) = s.target {
            c.target = t.max(1);
        }
        if let Some(a) = s.autorate {
            c.autorate = a;
        }
        if let Some(i) = s.ingress {
            c.ingress = i;
        }
        if let Some(a) = s.ack_filter {
            c.ack_filter = a;
        }
        if let Some(m) = s.memlimit {
            c.memlimit = m;
        }
        if let Some(g) = s.split_gso {
            c.split_gso = g;
        }
        if let Some(f) = s.fwmark {
            c.fwmark = f;
        }
        *self = c;
        Ok(resets)
    }

    fn overhead(&self) -> Overhead {
        Overhead {
            flag: self.overhead_flag,
            overhead: self.overhead,
            mpu: self.mpu,
            atm: self.atm,
        }
    }
}

fn diffserv_name(d: CakeDiffserv) -> &'static str {
    match d {
        CakeDiffserv::Diffserv3 => "diffserv3",
        CakeDiffserv::Diffserv4 => "diffserv4",
        CakeDiffserv::Diffserv8 => "diffserv8",
        CakeDiffserv::Besteffort => "besteffort",
        CakeDiffserv::Precedence => "precedence",
    }
}

fn flowmode_name(m: CakeFlowMode) -> &'static str {
    match m {
        CakeFlowMode::Flowblind => "flowblind",
        CakeFlowMode::Srchost => "srchost",
        CakeFlowMode::Dsthost => "dsthost",
        CakeFlowMode::Hosts => "hosts",
        CakeFlowMode::Flows => "flows",
        CakeFlowMode::DualSrchost => "dual-srchost",
        CakeFlowMode::DualDsthost => "dual-dsthost",
        CakeFlowMode::TripleIsolate => "triple-isolate",
    }
}

// ---------------------------------------------------------------- hashing

/// SIM keyed mix (splitmix64 finaliser) standing for the kernel's jhash.
#[inline]
fn mix(key: u64, a: u64, b: u64) -> u32 {
    let mut h = key ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    (h >> 32) as u32
}

fn proto_num(p: Proto) -> u64 {
    match p {
        Proto::Icmp => 1,
        Proto::Tcp => 6,
        Proto::Udp => 17,
        Proto::Arp => 0x806,
    }
}

/// The flow hash (`skb->hash` of a socket's packets, or the dissected
/// 5-tuple) and the host hashes (one address, the other zeroed; Linux
/// orders the pair before hashing, so a host hashes alike as source and as
/// destination). Non-IP frames have no host hash.
fn hashes(p: &Packet, key: u64) -> (u32, u32, u32) {
    let flow = mix(
        key,
        (p.src.0 as u64) << 32 | p.dst.0 as u64,
        (p.src_port as u64) << 32 | (p.dst_port as u64) << 16 | proto_num(p.proto),
    );
    if p.proto == Proto::Arp {
        return (flow, 0, 0);
    }
    let host = |a: u32| mix(key ^ 0x5bd1_e995, a as u64, 0);
    (flow, host(p.src.0), host(p.dst.0))
}

// ---------------------------------------------------------------- the qdisc

/// The CAKE qdisc (`struct cake_sched_data`).
#[derive(Debug)]
pub struct Cake {
    cfg: Config,
    tins: Vec<Tin>,
    tin_cnt: usize,
    tin_index: &'static [u8; 64],
    tin_order: &'static [u8; 8],
    overflow_heap: Vec<(u8, u16)>,
    overflow_timeout: u16,
    rate_shft: u16,
    rate_ns: u64,
    time_next_packet: i64,
    failsafe_next_packet: i64,
    buffer_used: u32,
    buffer_max_used: u32,
    buffer_limit: u32,
    cur_tin: usize,
    cur_flow: usize,
    // capacity estimate
    last_packet_time: i64,
    avg_window_begin: i64,
    avg_packet_interval: u64,
    avg_window_bytes: u64,
    avg_peak_bandwidth: u64,
    last_reconfig_time: i64,
    // packet length stats
    avg_netoff: u32,
    max_netlen: u16,
    max_adjlen: u16,
    min_netlen: u16,
    min_adjlen: u16,
    hash_key: u64,
    rng: ComponentRng,
    /// SIM: the old-flows rotation in one pass (`refill_old_rotation`); the
    /// tests compare it with the visit-by-visit path.
    fast_rotate: bool,
    /// (flow, deficit, quantum numerator) of `refill_passes`, kept between calls
    scratch: Vec<(u16, i32, u32)>,
    stats: QdiscStats,
}

impl Cake {
    /// `cake_init`: defaults, then the given attributes, then `cake_reconfigure`.
    pub fn new(spec: &CakeSpec, seed: u64, stream: &str, now: SimTime) -> Result<Cake, TcError> {
        let mut cfg = Config::default();
        cfg.apply(spec)?;
        let mut rng = ComponentRng::new(seed, stream);
        let hash_key = rng.next_u64();
        let mut heap = vec![(0u8, 0u16); QUEUES * MAX_TINS];
        for t in 0..MAX_TINS {
            for j in 0..QUEUES {
                heap[j * MAX_TINS + t] = (t as u8, j as u16);
            }
        }
        let now = now.as_nanos() as i64;
        let mut q = Cake {
            cfg,
            tins: (0..MAX_TINS).map(Tin::new).collect(),
            tin_cnt: 1,
            tin_index: &BESTEFFORT,
            tin_order: &NORMAL_ORDER,
            overflow_heap: heap,
            overflow_timeout: 0,
            rate_shft: 0,
            rate_ns: 0,
            time_next_packet: now,
            failsafe_next_packet: now,
            buffer_used: 0,
            buffer_max_used: 0,
            buffer_limit: 0,
            cur_tin: 0,
            cur_flow: 0,
            last_packet_time: 0,
            avg_window_begin: 0,
            avg_packet_interval: 0,
            avg_window_bytes: 0,
            avg_peak_bandwidth: 0,
            last_reconfig_time: 0,
            avg_netoff: 0,
            max_netlen: 0,
            max_adjlen: 0,
            min_netlen: u16::MAX,
            min_adjlen: u16::MAX,
            hash_key,
            rng,
            fast_rotate: true,
            scratch: Vec::new(),
            stats: QdiscStats::default(),
        };
        let mut none = Vec::new();
        q.reconfigure(&mut none);
        q.avg_peak_bandwidth = q.cfg.rate_bps;
        Ok(q)
    }

    fn flow_mode(&self) -> u8 {
        flow_mode_bits(self.cfg.flow_mode)
    }

    /// `cake_reconfigure`: tins for the diffserv mode, the global rate, the
    /// memory limit. Packets left in tins no longer in use are freed into
    /// `cleared`.
    fn reconfigure(&mut self, cleared: &mut Vec<Entry>) {
        let rate = self.cfg.rate_bps;
        let target_ns = self.cfg.target as u64 * 1000;
        let rtt_ns = self.cfg.interval as u64 * 1000;
        match self.cfg.tin_mode {
            CakeDiffserv::Besteffort => {
                self.tin_cnt = 1;
                self.tin_index = &BESTEFFORT;
                self.tin_order = &NORMAL_ORDER;
                self.tins[0].set_rate(rate, MTU, target_ns, rtt_ns);
                self.tins[0].tin_quantum = 65535;
            }
            CakeDiffserv::Precedence | CakeDiffserv::Diffserv8 => {
                self.tin_cnt = 8;
                self.tin_index = if self.cfg.tin_mode == CakeDiffserv::Precedence {
                    &PRECEDENCE
                } else {
                    &DIFFSERV8
                };
                self.tin_order = &NORMAL_ORDER;
                let (mut r, mut quantum) = (rate, 256u32);
                for t in 0..8 {
                    self.tins[t].set_rate(r, MTU, target_ns, rtt_ns);
                    self.tins[t].tin_quantum = quantum.max(1) as u16;
                    r = r.wrapping_mul(7) >> 3;
                    quantum = (quantum * 7) >> 3;
                }
            }
            CakeDiffserv::Diffserv4 => {
                self.tin_cnt = 4;
                self.tin_index = &DIFFSERV4;
                self.tin_order = &BULK_ORDER;
                for (t, sh) in [(0, 0), (1, 4), (2, 1), (3, 2)] {
                    self.tins[t].set_rate(rate >> sh, MTU, target_ns, rtt_ns);
                    self.tins[t].tin_quantum = (1024u32 >> sh) as u16;
                }
            }
            CakeDiffserv::Diffserv3 => {
                self.tin_cnt = 3;
                self.tin_index = &DIFFSERV3;
                self.tin_order = &BULK_ORDER;
                for (t, sh) in [(0, 0), (1, 4), (2, 2)] {
                    self.tins[t].set_rate(rate >> sh, MTU, target_ns, rtt_ns);
                    self.tins[t].tin_quantum = (1024u32 >> sh) as u16;
                }
            }
        }
        for c in self.tin_cnt..MAX_TINS {
            self.clear_tin(c, cleared);
            self.tins[c].cp.mtu_time = self.tins[0].cp.mtu_time;
        }
        self.rate_ns = self.tins[0].rate_ns;
        self.rate_shft = self.tins[0].rate_shft;
        let mut limit: u64 = if self.cfg.memlimit != 0 {
            self.cfg.memlimit as u64
        } else if self.cfg.rate_bps != 0 {
            let t = self.cfg.rate_bps.wrapping_mul(self.cfg.interval as u64) / 250_000;
            (t as u32).max(4 << 20) as u64
        } else {
            u32::MAX as u64
        };
        limit = limit.min((SCH_LIMIT * MTU as u64).max(self.cfg.memlimit as u64));
        self.buffer_limit = limit.min(u32::MAX as u64) as u32;
    }

    /// `cake_clear_tin`: every packet of tin `t` leaves silently.
    fn clear_tin(&mut self, t: usize, cleared: &mut Vec<Entry>) {
        self.cur_tin = t;
        for f in 0..QUEUES {
            self.cur_flow = f;
            while let Some(e) = self.dequeue_one() {
                cleared.push(e);
            }
        }
    }

    // ------------------------------------------------ heap

    fn heap_backlog(&self, i: usize) -> u32 {
        let (t, b) = self.overflow_heap[i];
        self.tins[t as usize].flows[b as usize].backlog
    }

    fn heap_swap(&mut self, i: usize, j: usize) {
        self.overflow_heap.swap(i, j);
        let (ti, bi) = self.overflow_heap[i];
        let (tj, bj) = self.overflow_heap[j];
        self.tins[ti as usize].flows[bi as usize].overflow_idx = i as u16;
        self.tins[tj as usize].flows[bj as usize].overflow_idx = j as u16;
    }

    /// `cake_heapify` (the largest child is compared against the value first
    /// found larger, as the kernel does).
    fn heapify(&mut self, mut i: usize) {
        let a = QUEUES * MAX_TINS;
        let mut mb = self.heap_backlog(i);
        let mut m = i;
        while m < a {
            let l = m + m + 1;
            let r = l + 1;
            if l < a {
                let lb = self.heap_backlog(l);
                if lb > mb {
                    m = l;
                    mb = lb;
                }
            }
            if r < a {
                let rb = self.heap_backlog(r);
                if rb > mb {
                    m = r;
                    mb = rb;
                }
            }
            if m != i {
                self.heap_swap(i, m);
                i = m;
            } else {
                break;
            }
        }
    }

    fn heapify_up(&mut self, mut i: usize) {
        while i > 0 && i < QUEUES * MAX_TINS {
            let p = (i - 1) >> 1;
            if self.heap_backlog(i) > self.heap_backlog(p) {
                self.heap_swap(i, p);
                i = p;
            } else {
                break;
            }
        }
    }

    // ------------------------------------------------ shaper

    /// `cake_advance_shaper`: charge `adj_len` to tin `t` and the global shaper.
    fn advance_shaper(&mut self, t: usize, adj_len: u32, now: i64, drop: bool) {
        if self.rate_ns == 0 {
            return;
        }
        let b = &mut self.tins[t];
        let tin_dur = ((adj_len as u64).wrapping_mul(b.rate_ns) >> b.rate_shft) as i64;
        let global_dur = ((adj_len as u64).wrapping_mul(self.rate_ns) >> self.rate_shft) as i64;
        let failsafe_dur = global_dur.wrapping_add(global_dur >> 1);
        if b.time_next_packet < now {
            b.time_next_packet = b.time_next_packet.wrapping_add(tin_dur);
        } else if b.time_next_packet < now.wrapping_add(tin_dur) {
            b.time_next_packet = now.wrapping_add(tin_dur);
        }
        self.time_next_packet = self.time_next_packet.wrapping_add(global_dur);
        if !drop {
            self.failsafe_next_packet = self.failsafe_next_packet.wrapping_add(failsafe_dur);
        }
    }

    /// Global shaper's next instant (the earlier of the two schedules).
    fn next_instant(&self) -> i64 {
        self.time_next_packet.min(self.failsafe_next_packet)
    }

    // ------------------------------------------------ classify

    /// `cake_select_tin` (with `cake_handle_diffserv`'s wash).
    fn select_tin(&self, p: &mut Packet) -> usize {
        let dscp = if p.proto == Proto::Arp {
            0x38
        } else {
            p.tos >> 2
        };
        if self.cfg.wash && dscp != 0 && p.proto != Proto::Arp {
            p.tos &= crate::packet::ECN_MASK;
        }
        if self.cfg.tin_mode == CakeDiffserv::Besteffort {
            return 0;
        }
        // no firewall mark and no skb->priority on our packets
        let t = self.tin_index[dscp as usize] as usize;
        if t >= self.tin_cnt {
            0
        } else {
            t
        }
    }

    /// `cake_hash`: the queue of tin `t` for a packet.
    fn hash(&mut self, t: usize, p: &Packet) -> usize {
        let mode = self.flow_mode();
        if mode == 0 {
            return 0;
        }
        let (fh, src_h, dst_h) = hashes(p, self.hash_key);
        let mut flow_hash = if mode & FLOW_FLOWS != 0 { fh } else { 0 };
        if mode & FLOW_FLOWS == 0 {
            if mode & FLOW_SRC_IP != 0 {
                flow_hash ^= src_h;
            }
            if mode & FLOW_DST_IP != 0 {
                flow_hash ^= dst_h;
            }
        }
        let q = &mut self.tins[t];
        let mut reduced = flow_hash as usize % QUEUES;
        if q.flows[reduced].tag == flow_hash && q.flows[reduced].set != Set::None {
            q.way_directs += 1;
            return reduced;
        }
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let (mut alloc_src, mut alloc_dst) = (false, false);
        let mut k = inner;
        let mut found = false;
        for i in 0..WAYS {
            let f = &q.flows[outer + k];
            if f.tag == flow_hash {
                if i != 0 {
                    q.way_hits += 1;
                }
                if f.set == Set::None {
                    alloc_src = dual_src(mode);
                    alloc_dst = dual_dst(mode);
                }
                found = true;
                break;
            }
            k = (k + 1) % WAYS;
        }
        if !found {
            for _ in 0..WAYS {
                if q.flows[outer + k].set == Set::None {
                    q.way_misses += 1;
                    alloc_src = dual_src(mode);
                    alloc_dst = dual_dst(mode);
                    found = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
        }
        if !found {
            q.way_collisions += 1;
            if q.flows[outer + k].set == Set::Bulk {
                q.dec_src(outer + k, mode);
                q.dec_dst(outer + k, mode);
            }
            alloc_src = dual_src(mode);
            alloc_dst = dual_dst(mode);
        }
        reduced = outer + k;
        q.flows[reduced].tag = flow_hash;
        if alloc_src {
            let idx = src_h as usize % QUEUES;
            let inner = idx % WAYS;
            let outer = idx - inner;
            let mut k = inner;
            let mut hit = false;
            for _ in 0..WAYS {
                if q.hosts[outer + k].src_tag == src_h {
                    hit = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
            if !hit {
                for _ in 0..WAYS {
                    if q.hosts[outer + k].src_bulk == 0 {
                        break;
                    }
                    k = (k + 1) % WAYS;
                }
                q.hosts[outer + k].src_tag = src_h;
            }
            q.flows[reduced].srchost = (outer + k) as u16;
            if q.flows[reduced].set == Set::Bulk {
                q.inc_src(reduced, mode);
            }
        }
        if alloc_dst {
            let idx = dst_h as usize % QUEUES;
            let inner = idx % WAYS;
            let outer = idx - inner;
            let mut k = inner;
            let mut hit = false;
            for _ in 0..WAYS {
                if q.hosts[outer + k].dst_tag == dst_h {
                    hit = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
            if !hit {
                for _ in 0..WAYS {
                    if q.hosts[outer + k].dst_bulk == 0 {
                        break;
                    }
                    k = (k + 1) % WAYS;
                }
                q.hosts[outer + k].dst_tag = dst_h;
            }
            q.flows[reduced].dsthost = (outer + k) as u16;
            if q.flows[reduced].set == Set::Bulk {
                q.inc_dst(reduced, mode);
            }
        }
        reduced
    }

    /// `cake_overhead` (and the length statistics of `cake_calc_overhead`).
    fn adjusted_len(&mut self, p: &Packet) -> u32 {
        let off = ETH_HEADER;
        self.avg_netoff = ewma(self.avg_netoff as u64, (off as u64) << 16, 8) as u32;
        let oh = self.cfg.overhead();
        let mut calc = |len: u32| {
            let (net, adj) = oh.adjust(len, off);
            if (self.max_netlen as u32) < net {
                self.max_netlen = net as u16;
            }
            if (self.min_netlen as u32) > net {
                self.min_netlen = net as u16;
            }
            if (self.max_adjlen as u32) < adj {
                self.max_adjlen = adj as u16;
            }
            if (self.min_adjlen as u32) > adj {
                self.min_adjlen = adj as u16;
            }
            adj
        };
        if !p.is_gso() {
            return calc(p.len);
        }
        let hdr_len = p.header_len();
        let segs = p.segs();
        let size = p.gso_size as u32;
        let len = size + hdr_len;
        let last_len = p.skb_len() - size * (segs - 1);
        calc(len)
            .wrapping_mul(segs - 1)
            .wrapping_add(calc(last_len))
    }

    // ------------------------------------------------ enqueue

    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, id: PacketId) -> Verdict {
        let now = ctx.now.as_nanos() as i64;
        let len = ctx.arena.len_of(id);
        let (t, idx) = {
            let p = ctx.arena.get_mut(id);
            let t = self.select_tin(p);
            let p = *p;
            (t, self.hash(t, &p))
        };
        // ensure the shaper state is not stale
        if self.tins[t].tin_backlog == 0 {
            let b = &mut self.tins[t];
            if b.time_next_packet < now {
                b.time_next_packet = now;
            }
            if self.stats.qlen == 0 {
                if self.time_next_packet < now {
                    self.failsafe_next_packet = now;
                    self.time_next_packet = now;
                } else if self.time_next_packet > now && self.failsafe_next_packet > now {
                    self.stats.overlimits += 1;
                    ctx.arm_watchdog(SimTime::from_nanos(self.next_instant() as u64));
                }
            }
        }
        if len > self.tins[t].max_skblen {
            self.tins[t].max_skblen = len;
        }
        let gso = ctx.arena.get(id).is_gso();
        if gso && self.cfg.split_gso {
            let mut segs = Vec::new();
            ctx.arena.segment(id, &mut segs);
            let (mut n, mut slen) = (0u32, 0u32);
            for s in segs {
                let p = *ctx.arena.get(s);
                let adj = self.adjusted_len(&p);
                self.tins[t].flows[idx].queue.push_back(Entry {
                    id: s,
                    t_enq: now,
                    adj_len: adj,
                    len: p.len,
                });
                self.stats.queued(p.len);
                n += 1;
                slen += p.len;
                self.buffer_used = self.buffer_used.wrapping_add(p.len + TRUESIZE_EXTRA);
                self.tins[t].packets = self.tins[t].packets.wrapping_add(1);
            }
            let b = &mut self.tins[t];
            b.bytes += slen as u64;
            b.flows[idx].backlog += slen;
            b.tin_backlog += slen;
            self.avg_window_bytes += slen as u64;
            reduce.grew((n - 1) as u64);
            if slen < len {
                reduce.left(0, (len - slen) as u64, 0);
            }
        } else {
            let p = *ctx.arena.get(id);
            let adj = self.adjusted_len(&p);
            self.tins[t].flows[idx].queue.push_back(Entry {
                id,
                t_enq: now,
                adj_len: adj,
                len,
            });
            self.stats.queued(len);
            let mut net = len;
            let ack = if self.cfg.ack_filter != CakeAckFilter::None {
                self.ack_filter(ctx, t, idx)
            } else {
                None
            };
            if let Some(a) = ack {
                let b = &mut self.tins[t];
                b.ack_drops += 1;
                self.stats.drops += 1;
                b.bytes += a.len as u64;
                net = net.wrapping_sub(a.len); // may be "negative", as the kernel's int
                self.buffer_used = self
                    .buffer_used
                    .wrapping_add(len + TRUESIZE_EXTRA)
                    .wrapping_sub(a.len + TRUESIZE_EXTRA);
                if self.cfg.ingress {
                    self.advance_shaper(t, a.adj_len, now, true);
                }
                self.stats.unqueued(a.len);
                reduce.left(1, a.len as u64, 1);
                ctx.drop_packet(a.id, DropReason::AckFilter);
            } else {
                self.buffer_used = self.buffer_used.wrapping_add(len + TRUESIZE_EXTRA);
            }
            let b = &mut self.tins[t];
            b.packets = b.packets.wrapping_add(1);
            b.bytes = b.bytes.wrapping_add(net as i32 as i64 as u64);
            b.flows[idx].backlog = b.flows[idx].backlog.wrapping_add(net);
            b.tin_backlog = b.tin_backlog.wrapping_add(net);
            self.avg_window_bytes = self.avg_window_bytes.wrapping_add(net as i32 as i64 as u64);
        }
        if self.overflow_timeout != 0 {
            let oi = self.tins[t].flows[idx].overflow_idx as usize;
            self.heapify_up(oi);
        }
        if self.cfg.autorate {
            self.estimate_capacity(now);
        } else {
            self.avg_window_bytes = 0;
            self.last_packet_time = now;
        }
        // flowchain
        let mode = self.flow_mode();
        let set = self.tins[t].flows[idx].set;
        if set == Set::None || set == Set::Decaying {
            let dither = self.rng.next_u32();
            let b = &mut self.tins[t];
            if set == Set::Decaying {
                b.decaying_flow_count -= 1;
            }
            b.move_tail(idx as u16, NEW);
            b.flows[idx].set = Set::Sparse;
            b.sparse_flow_count += 1;
            b.flows[idx].deficit = b.flow_quantum_for(idx, mode, dither);
        } else if set == Set::SparseWait {
            let b = &mut self.tins[t];
            b.flows[idx].set = Set::Bulk;
            b.sparse_flow_count -= 1;
            b.bulk_flow_count += 1;
            b.inc_src(idx, mode);
            b.inc_dst(idx, mode);
        }
        if self.buffer_used > self.buffer_max_used {
            self.buffer_max_used = self.buffer_used;
        }
        if self.buffer_used > self.buffer_limit {
            let (mut dropped, mut stale) = (0, 0);
            while self.buffer_used > self.buffer_limit {
                dropped += 1;
                // a stale heap is rebuilt by the next call (the kernel loops on)
                if !self.drop_longest(ctx, reduce, now) {
                    stale += 1;
                    if stale > 1 {
                        break;
                    }
                }
            }
            self.tins[t].drop_overlimit += dropped;
        }
        Verdict::Queued
    }

    /// The ingress capacity estimate of `cake_enqueue` (autorate-ingress).
    fn estimate_capacity(&mut self, now: i64) {
        let packet_interval = ((now - self.last_packet_time).max(0) as u64).min(NSEC_PER_SEC);
        let shift = if packet_interval > self.avg_packet_interval {
            2
        } else {
            8
        };
        self.avg_packet_interval = ewma(self.avg_packet_interval, packet_interval, shift);
        self.last_packet_time = now;
        if packet_interval > self.avg_packet_interval {
            let window = (now - self.avg_window_begin).max(1) as u64;
            let b =
                ((self.avg_window_bytes as u128 * NSEC_PER_SEC as u128) / window as u128) as u64;
            let shift = if b > self.avg_peak_bandwidth { 2 } else { 8 };
            self.avg_peak_bandwidth = ewma(self.avg_peak_bandwidth, b, shift);
            self.avg_window_bytes = 0;
            self.avg_window_begin = now;
            if now > self.last_reconfig_time + 250_000_000 {
                self.cfg.rate_bps = self.avg_peak_bandwidth.wrapping_mul(15) >> 4;
                let mut cleared = Vec::new();
                self.reconfigure(&mut cleared);
                debug_assert!(cleared.is_empty());
            }
        }
    }

    /// `cake_drop`: one packet off the head of the longest queue. False if
    /// the heap was stale (rebuilt on the next call).
    fn drop_longest(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce, now: i64) -> bool {
        if self.overflow_timeout == 0 {
            for i in (0..=QUEUES * MAX_TINS / 2).rev() {
                self.heapify(i);
            }
        }
        self.overflow_timeout = 65535;
        let (t, idx) = self.overflow_heap[0];
        let (t, idx) = (t as usize, idx as usize);
        let Some(e) = self.tins[t].flows[idx].queue.pop_front() else {
            self.overflow_timeout = 0;
            return false;
        };
        let b = &mut self.tins[t];
        let cp = b.cp;
        if b.flows[idx].cvars.queue_full(&cp, now) {
            b.unresponsive_flow_count += 1;
        }
        self.buffer_used = self.buffer_used.wrapping_sub(e.len + TRUESIZE_EXTRA);
        b.flows[idx].backlog = b.flows[idx].backlog.wrapping_sub(e.len);
        b.tin_backlog = b.tin_backlog.wrapping_sub(e.len);
        b.flows[idx].dropped += 1;
        b.tin_dropped += 1;
        self.stats.unqueued(e.len);
        self.stats.drops += 1;
        reduce.left(1, e.len as u64, 1);
        if self.cfg.ingress {
            self.advance_shaper(t, e.adj_len, now, true);
        }
        ctx.drop_packet(e.id, DropReason::QueueFull);
        self.heapify(0);
        true
    }

    // ------------------------------------------------ ACK filter

    /// `cake_ack_filter`: with the packet just queued at the tail of flow
    /// `idx`, find an older pure ACK of the same connection it makes
    /// redundant; remove and return it.
    fn ack_filter(&mut self, ctx: &QdiscCtx, t: usize, idx: usize) -> Option<Entry> {
        let aggressive = self.cfg.ack_filter == CakeAckFilter::Aggressive;
        let q = &mut self.tins[t].flows[idx].queue;
        if q.len() < 2 {
            return None;
        }
        let last = q.len() - 1;
        let trig = *ctx.arena.get(q[last].id);
        let Payload::Tcp(th) = trig.payload else {
            return None;
        };
        if th.flags & (tcp_flags::ACK | tcp_flags::SYN) != tcp_flags::ACK {
            return None;
        }
        let (tsval, tsecr) = if th.ts { (th.tsval, th.tsecr) } else { (0, 0) };
        let ecn_bits = tcp_flags::ECE | tcp_flags::CWR;
        let mut elig: Option<usize> = None;
        let mut elig_flags = 0u8;
        let mut num_found = 0;
        let mut chosen = None;
        for (i, e) in q.iter().enumerate().take(last) {
            let c = ctx.arena.get(e.id);
            let Payload::Tcp(ch) = c.payload else {
                continue;
            };
            if c.src_port != trig.src_port
                || c.dst_port != trig.dst_port
                || c.src != trig.src
                || c.dst != trig.dst
            {
                continue;
            }
            if elig.is_some() && (ch.flags & ecn_bits) != elig_flags {
                elig = None;
                num_found -= 1;
            }
            if !tcph_may_drop(&ch, tsval, tsecr)
                || c.payload_len() != 0
                || seq_after(ch.ack, th.ack)
            {
                continue;
            }
            let sack_comp = sack_compare(&ch, &th);
            if sack_comp < 0 || (ch.ack == th.ack && sack_comp == 0) {
                continue;
            }
            if elig.is_none() {
                elig = Some(i);
                elig_flags = ch.flags & ecn_bits;
            }
            let before = num_found;
            num_found += 1;
            if before > 0 {
                chosen = elig;
                break;
            }
        }
        if chosen.is_none() {
            if let Some(i) = elig {
                if aggressive && i + 1 == last && elig_flags == (th.flags & ecn_bits) {
                    chosen = Some(i);
                }
            }
        }
        let i = chosen?;
        q.remove(i)
    }

    // ------------------------------------------------ dequeue

    /// `cake_dequeue_one`: the head of the current flow.
    fn dequeue_one(&mut self) -> Option<Entry> {
        let (t, f) = (self.cur_tin, self.cur_flow);
        let e = self.tins[t].flows[f].queue.pop_front()?;
        let b = &mut self.tins[t];
        b.flows[f].backlog = b.flows[f].backlog.wrapping_sub(e.len);
        b.tin_backlog = b.tin_backlog.wrapping_sub(e.len);
        self.buffer_used = self.buffer_used.wrapping_sub(e.len + TRUESIZE_EXTRA);
        self.stats.unqueued(e.len);
        if self.overflow_timeout != 0 {
            let oi = self.tins[t].flows[f].overflow_idx as usize;
            self.heapify(oi);
        }
        Some(e)
    }

    pub fn dequeue(&mut self, ctx: &mut QdiscCtx, reduce: &mut Reduce) -> Option<PacketId> {
        let now = ctx.now.as_nanos() as i64;
        let mode = self.flow_mode();
        let ingress = self.cfg.ingress;
        let mut first_flow = true;
        'begin: loop {
            if self.stats.qlen == 0 {
                return None;
            }
            // global hard shaper
            if self.time_next_packet > now && self.failsafe_next_packet > now {
                self.stats.overlimits += 1;
                ctx.arm_watchdog(SimTime::from_nanos(self.next_instant() as u64));
                return None;
            }
            // choose a tin
            if self.rate_ns == 0 {
                let (mut wrapped, mut empty) = (false, true);
                loop {
                    let b = &mut self.tins[self.cur_tin];
                    if b.tin_deficit >= 0 && b.active() {
                        break;
                    }
                    if b.tin_deficit <= 0 {
                        b.tin_deficit += b.tin_quantum as i32;
                    }
                    if b.active() {
                        empty = false;
                    }
                    self.cur_tin += 1;
                    if self.cur_tin >= self.tin_cnt {
                        self.cur_tin = 0;
                        if wrapped {
                            if empty {
                                return None;
                            }
                        } else {
                            wrapped = true;
                        }
                    }
                }
            } else {
                let mut best_time = i64::MAX;
                let mut best_tin = 0;
                for tin in 0..self.tin_cnt {
                    let b = &self.tins[tin];
                    if b.active() {
                        let time_to_pkt = b.time_next_packet - now;
                        if time_to_pkt <= 0 || time_to_pkt <= best_time {
                            best_time = time_to_pkt;
                            best_tin = tin;
                        }
                    }
                }
                self.cur_tin = best_tin;
                if !self.tins[best_tin].active() {
                    return None;
                }
            }
            let t = self.cur_tin;
            'retry: loop {
                let b = &mut self.tins[t];
                let mut list = DECAYING;
                if !first_flow || b.head[DECAYING] == NIL {
                    list = NEW;
                    if b.head[NEW] == NIL {
                        list = OLD;
                        if b.head[OLD] == NIL {
                            list = DECAYING;
                            if b.head[DECAYING] == NIL {
                                continue 'begin;
                            }
                        }
                    }
                }
                let f = b.head[list] as usize;
                self.cur_flow = f;
                first_flow = false;
                if b.flows[f].deficit <= 0 {
                    if list == OLD && self.fast_rotate {
                        // the same visits, in the same order, with the same
                        // draws as one refill and move per `goto retry`
                        let head = self.refill_old_rotation(t, f, mode);
                        self.cur_flow = head;
                        continue 'retry;
                    }
                    let dither = self.rng.next_u32();
                    let b = &mut self.tins[t];
                    b.refill(f, mode, dither);
                    b.move_tail(f as u16, OLD);
                    continue 'retry;
                }
                // retrieve a packet via the AQM
                let e = loop {
                    let Some(e) = self.dequeue_one() else {
                        let b = &mut self.tins[t];
                        let cp = b.cp;
                        if b.flows[f].cvars.queue_empty(&cp, now) {
                            b.unresponsive_flow_count = b.unresponsive_flow_count.wrapping_sub(1);
                        }
                        let cv = b.flows[f].cvars;
                        if cv.p_drop != 0 || cv.count != 0 || now < cv.drop_next {
                            b.move_tail(f as u16, DECAYING);
                            match b.flows[f].set {
                                Set::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.dec_src(f, mode);
                                    b.dec_dst(f, mode);
                                    b.decaying_flow_count += 1;
                                }
                                Set::Sparse | Set::SparseWait => {
                                    b.sparse_flow_count -= 1;
                                    b.decaying_flow_count += 1;
                                }
                                _ => {}
                            }
                            b.flows[f].set = Set::Decaying;
                        } else {
                            b.unlink(f as u16);
                            match b.flows[f].set {
                                Set::Sparse | Set::SparseWait => b.sparse_flow_count -= 1,
                                Set::Bulk => {
                                    b.bulk_flow_count -= 1;
                                    b.dec_src(f, mode);
                                    b.dec_dst(f, mode);
                                }
                                _ => b.decaying_flow_count -= 1,
                            }
                            b.flows[f].set = Set::None;
                        }
                        continue 'begin;
                    };
                    let b = &mut self.tins[t];
                    let bulk = if ingress { b.bulk_flow_count as u32 } else { 0 };
                    let cp = b.cp;
                    let sojourn = (now - e.t_enq).max(0) as u64;
                    let rng = &mut self.rng;
                    let arena = &mut *ctx.arena;
                    let signal = b.flows[f].cvars.should_drop(
                        &cp,
                        now,
                        sojourn,
                        bulk,
                        &mut || arena.get_mut(e.id).set_ce(),
                        &mut || rng.next_u32(),
                    );
                    if signal == Signal::Deliver || b.flows[f].queue.is_empty() {
                        break e;
                    }
                    // drop this packet, get another one
                    if ingress {
                        self.advance_shaper(t, e.adj_len, now, true);
                        let b = &mut self.tins[t];
                        b.flows[f].deficit = b.flows[f].deficit.wrapping_sub(e.adj_len as i32);
                        b.tin_deficit = b.tin_deficit.wrapping_sub(e.adj_len as i32);
                    }
                    let b = &mut self.tins[t];
                    b.flows[f].dropped += 1;
                    b.tin_dropped += 1;
                    let reason = if signal == Signal::Flood {
                        b.flood_drops += 1;
                        DropReason::Flood
                    } else {
                        b.congested_drops += 1;
                        DropReason::EarlyDrop
                    };
                    self.stats.drops += 1;
                    reduce.left(1, e.len as u64, 1);
                    ctx.drop_packet(e.id, reason);
                    if ingress {
                        continue 'retry;
                    }
                };
                let b = &mut self.tins[t];
                if b.flows[f].cvars.ecn_marked {
                    b.tin_ecn_mark += 1;
                }
                self.stats.sent(e.len, ctx.arena.segs_of(e.id));
                let delay = (now - e.t_enq).max(0) as u64;
                b.avge_delay = ewma(b.avge_delay, delay, 8);
                b.peak_delay = ewma(
                    b.peak_delay,
                    delay,
                    if delay > b.peak_delay { 2 } else { 8 },
                );
                b.base_delay = ewma(
                    b.base_delay,
                    delay,
                    if delay < b.base_delay { 2 } else { 8 },
                );
                self.advance_shaper(t, e.adj_len, now, false);
                let b = &mut self.tins[t];
                b.flows[f].deficit = b.flows[f].deficit.wrapping_sub(e.adj_len as i32);
                b.tin_deficit = b.tin_deficit.wrapping_sub(e.adj_len as i32);
                if self.time_next_packet > now && self.stats.qlen > 0 {
                    ctx.arm_watchdog(SimTime::from_nanos(self.next_instant() as u64));
                } else if self.stats.qlen == 0 {
                    for i in 0..self.tin_cnt {
                        if self.tins[i].decaying_flow_count > 0 {
                            let at = now + self.tins[i].cp.target as i64;
                            ctx.arm_watchdog(SimTime::from_nanos(at as u64));
                            break;
                        }
                    }
                }
                if self.overflow_timeout != 0 {
                    self.overflow_timeout -= 1;
                }
                return Some(e.id);
            }
        }
    }

    /// Entries stored in the flow queues, counted one by one.
    #[cfg(test)]
    fn stored(&self) -> u64 {
        self.tins
            .iter()
            .map(|b| b.flows.iter().map(|f| f.queue.len() as u64).sum::<u64>())
            .sum()
    }

    /// The old-flows rotation of `cake_dequeue` in one pass: starting at the
    /// head `f` (deficit ≤ 0), refill each flow met in list order, wrapping
    /// around, until one has a positive deficit; then make that flow the head
    /// (every flow passed over went to the tail in turn, so the list is only
    /// rotated). Returns the new head. Linux visits the same flows with the
    /// same draws, moving each to the tail one by one — with a host holding
    /// n bulk flows that is about n visits per packet.
    fn refill_old_rotation(&mut self, t: usize, f: usize, mode: u8) -> usize {
        // first pass: the visits that may turn sparse flows bulk (host loads change)
        let mut cur = f;
        let mut wrapped = false;
        loop {
            let b = &self.tins[t];
            if b.flows[cur].deficit > 0 {
                break;
            }
            if wrapped && cur == f {
                // a whole pass without a positive deficit: the loads no longer
                // change, so the further passes run on a compact copy
                cur = self.refill_passes(t, f, mode);
                break;
            }
            let dither = self.rng.next_u32();
            let b = &mut self.tins[t];
            b.refill(cur, mode, dither);
            let n = b.flows[cur].next;
            cur = if n == NIL {
                wrapped = true;
                b.head[OLD] as usize
            } else {
                n as usize
            };
        }
        let b = &mut self.tins[t];
        let head = b.head[OLD];
        if cur as u16 != head {
            // rotate: old tail → old head, cur's predecessor becomes the tail
            let (old_tail, new_tail) = (b.tail[OLD], b.flows[cur].prev);
            b.flows[old_tail as usize].next = head;
            b.flows[head as usize].prev = old_tail;
            b.flows[new_tail as usize].next = NIL;
            b.flows[cur].prev = NIL;
            b.head[OLD] = cur as u16;
            b.tail[OLD] = new_tail;
        }
        cur
    }

    /// Further passes over the old list from `f` (every flow bulk or waiting,
    /// every deficit ≤ 0): each visit draws its dither and adds its quantum,
    /// in list order, until a deficit turns positive. Returns that flow.
    fn refill_passes(&mut self, t: usize, f: usize, mode: u8) -> usize {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let b = &self.tins[t];
        let mut cur = f as u16;
        loop {
            let fl = &b.flows[cur as usize];
            let mut load: u16 = 1;
            if dual_src(mode) {
                load = load.max(b.hosts[fl.srchost as usize].src_bulk);
            }
            if dual_dst(mode) {
                load = load.max(b.hosts[fl.dsthost as usize].dst_bulk);
            }
            scratch.push((cur, fl.deficit, b.flow_quantum as u32 * quantum_div(load)));
            cur = if fl.next == NIL { b.head[OLD] } else { fl.next };
            if cur == f as u16 {
                break;
            }
        }
        // a visit looks at the head: positive → served, else refilled and
        // sent to the tail (scratch[0] = f, known not positive)
        let mut i = 0;
        loop {
            let (_, d, q) = &mut scratch[i];
            if *d > 0 {
                break;
            }
            let dither = self.rng.next_u32();
            *d = d.wrapping_add(((*q + (dither >> 16)) >> 16) as i32);
            i = if i + 1 == scratch.len() { 0 } else { i + 1 };
        }
        let winner = scratch[i].0 as usize;
        let b = &mut self.tins[t];
        for &(g, d, _) in &scratch {
            b.flows[g as usize].deficit = d;
        }
        self.scratch = scratch;
        winner
    }

    /// Memory limit in bytes (the `of …` in `memory used: … of …`).
    pub fn buffer_limit(&self) -> u32 {
        self.buffer_limit
    }

    /// (target, interval, mtu_time) of tin `t` in ns.
    pub fn tin_params(&self, t: usize) -> CobaltParams {
        self.tins[t].cp
    }

    /// (rate_ns, rate_shft, flow_quantum, tin_quantum) of tin `t`.
    pub fn tin_rate(&self, t: usize) -> (u64, u16, u16, u16) {
        let b = &self.tins[t];
        (b.rate_ns, b.rate_shft, b.flow_quantum, b.tin_quantum)
    }

    fn purge_all(&mut self, ctx: &mut QdiscCtx) -> Purged {
        let mut cleared = Vec::new();
        for t in 0..MAX_TINS {
            self.clear_tin(t, &mut cleared);
        }
        let mut p = Purged::default();
        for e in cleared {
            p.packets += 1;
            p.bytes += e.len as u64;
            ctx.drop_packet(e.id, DropReason::Purged);
        }
        p
    }
}

#[inline]
fn ewma(avg: u64, sample: u64, shift: u32) -> u64 {
    (avg - (avg >> shift)).wrapping_add(sample >> shift)
}

#[inline]
fn seq_after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

#[inline]
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `cake_tcph_may_drop`: a pure ACK (no flag but ACK besides ECE/CWR) whose
/// options are only SACK and timestamps not newer than the triggering ACK's.
fn tcph_may_drop(h: &crate::packet::TcpHeader, tsval: u32, tsecr: u32) -> bool {
    let ecn = tcp_flags::ECE | tcp_flags::CWR;
    if h.flags & !ecn != tcp_flags::ACK {
        return false;
    }
    if h.mss != 0 || h.wscale.is_some() || h.sack_ok {
        return false;
    }
    if h.ts && (seq_after(h.tsval, tsval) || seq_after(h.tsecr, tsecr)) {
        return false;
    }
    true
}

/// `cake_tcph_sack_compare`: −1 if `a` SACKs something `b` does not (or
/// carries a D-SACK), 1 if `b` SACKs strictly more bytes, 0 if the same.
fn sack_compare(a: &crate::packet::TcpHeader, b: &crate::packet::TcpHeader) -> i32 {
    let (na, nb) = (a.sack_len as usize, b.sack_len as usize);
    if na > 0 && nb == 0 {
        return -1;
    }
    if nb > 0 && na == 0 {
        return 1;
    }
    if na == 0 && nb == 0 {
        return 0;
    }
    let (mut bytes_a, mut bytes_b) = (0u32, 0u32);
    let mut first = true;
    for &(sa, ea) in &a.sack[..na] {
        if seq_before(sa, a.ack) {
            return -1;
        }
        bytes_a = bytes_a.wrapping_add(ea.wrapping_sub(sa));
        let mut found = false;
        for &(sb, eb) in &b.sack[..nb] {
            if first {
                bytes_b = bytes_b.wrapping_add(eb.wrapping_sub(sb));
            }
            if !seq_after(sb, sa) && !seq_before(eb, ea) {
                found = true;
                if !first {
                    break;
                }
            }
        }
        if !found {
            return -1;
        }
        first = false;
    }
    if bytes_b > bytes_a {
        1
    } else {
        0
    }
}

impl Qdisc for Cake {
    fn build(spec: &QdiscSpec, env: &BuildEnv) -> Option<Result<Built<Self>, TcError>> {
        let QdiscSpec::Cake(s) = spec else {
            return None;
        };
        Some(Cake::new(s, env.seed, env.stream, env.now).map(Built::alone))
    }

    fn kind(&self) -> &'static str {
        "cake"
    }

    #[inline]
    fn enqueue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        id: PacketId,
        _child: &mut [Node],
    ) -> Verdict {
        Cake::enqueue(self, ctx, reduce, id)
    }

    #[inline]
    fn dequeue(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        _child: &mut [Node],
    ) -> Option<PacketId> {
        Cake::dequeue(self, ctx, reduce)
    }

    /// `cake_reset`: every tin cleared.
    fn reset(&mut self, ctx: &mut QdiscCtx) -> Purged {
        self.purge_all(ctx)
    }

    /// `cake_change`: the given attributes, then `cake_reconfigure`; packets
    /// of tins the new mode no longer has are freed.
    fn change(
        &mut self,
        spec: &QdiscSpec,
        ctx: &mut QdiscCtx,
        _child: Option<&AnyQdisc>,
    ) -> Result<Changed, TcError> {
        let QdiscSpec::Cake(spec) = spec else {
            return Err(wrong_kind());
        };
        let resets = self.cfg.apply(spec)?;
        if resets {
            self.max_netlen = 0;
            self.max_adjlen = 0;
            self.min_netlen = u16::MAX;
            self.min_adjlen = u16::MAX;
        }
        let mut cleared = Vec::new();
        self.reconfigure(&mut cleared);
        let mut purged = Purged::default();
        for e in cleared {
            purged.packets += 1;
            purged.bytes += e.len as u64;
            self.stats.drops += 1;
            ctx.drop_packet(e.id, DropReason::Purged);
        }
        Ok(Changed {
            purged,
            child: ChildChange::Keep,
        })
    }

    fn stats(&self) -> &QdiscStats {
        &self.stats
    }

    fn stats_mut(&mut self) -> &mut QdiscStats {
        &mut self.stats
    }

    /// `cake_dump`, in the shape commands/tc/cake.py prints.
    fn options(&self) -> serde_json::Value {
        let c = &self.cfg;
        json!({
            "kind": "cake",
            "bandwidth": c.rate_bps,
            "autorate": c.autorate,
            "diffserv": diffserv_name(c.tin_mode),
            "flowmode": flowmode_name(c.flow_mode),
            "nat": c.nat,
            "wash": c.wash,
            "ingress": c.ingress,
            "ack_filter": match c.ack_filter {
                CakeAckFilter::None => "none",
                CakeAckFilter::Filter => "filter",
                CakeAckFilter::Aggressive => "aggressive",
            },
            "split_gso": c.split_gso,
            "rtt": c.interval,
            "target": c.target,
            "raw": !c.overhead_flag,
            "atm": match c.atm {
                CakeAtm::Noatm => "noatm",
                CakeAtm::Atm => "atm",
                CakeAtm::Ptm => "ptm",
            },
            "overhead": c.overhead,
            "mpu": c.mpu,
            "memlimit": c.memlimit,
            "fwmark": c.fwmark,
        })
    }

    /// `cake_dump_stats` (tins in `tin_order`), plus drops by reason.
    fn xstats(&self) -> serde_json::Value {
        let tins: Vec<serde_json::Value> = (0..self.tin_cnt)
            .map(|i| {
                let b = &self.tins[self.tin_order[i] as usize];
                json!({
                    "threshold_rate": b.rate_bps,
                    "sent_bytes": b.bytes,
                    "backlog_bytes": b.tin_backlog,
                    "target_us": b.cp.target / 1000,
                    "interval_us": b.cp.interval / 1000,
                    "peak_delay_us": b.peak_delay / 1000,
                    "avg_delay_us": b.avge_delay / 1000,
                    "base_delay_us": b.base_delay / 1000,
                    "sent_packets": b.packets,
                    "way_indirect_hits": b.way_hits,
                    "way_misses": b.way_misses,
                    "way_collisions": b.way_collisions,
                    "drops": b.tin_dropped,
                    "ecn_mark": b.tin_ecn_mark,
                    "ack_drops": b.ack_drops,
                    "sparse_flows": b.sparse_flow_count + b.decaying_flow_count,
                    "bulk_flows": b.bulk_flow_count,
                    "unresponsive_flows": b.unresponsive_flow_count,
                    "max_pkt_len": b.max_skblen,
                    "flow_quantum": b.flow_quantum,
                })
            })
            .collect();
        let all = &self.tins[..self.tin_cnt];
        json!({
            "capacity_estimate": self.avg_peak_bandwidth,
            "memory_limit": self.buffer_limit,
            "memory_used": self.buffer_max_used,
            "avg_hdr_offset": (self.avg_netoff + 0x8000) >> 16,
            "max_network_size": self.max_netlen,
            "max_adj_size": self.max_adjlen,
            "min_network_size": self.min_netlen,
            "min_adj_size": self.min_adjlen,
            "tins": tins,
            "drop_overlimit": all.iter().map(|b| b.drop_overlimit as u64).sum::<u64>(),
            "drop_congested": all.iter().map(|b| b.congested_drops).sum::<u64>(),
            "drop_flood": all.iter().map(|b| b.flood_drops).sum::<u64>(),
            "ack_drops": all.iter().map(|b| b.ack_drops as u64).sum::<u64>(),
            "ecn_mark": all.iter().map(|b| b.tin_ecn_mark as u64).sum::<u64>(),
        })
    }

    /// O(1): the engine asks on every enqueue (peak backlog); every entry
    /// stored in a flow is counted in `qlen` (the unit tests check both agree).
    fn held(&self) -> u64 {
        self.stats.qlen
    }
}

#[cfg(test)]
#[path = "cake_tests.rs"]
mod tests;
