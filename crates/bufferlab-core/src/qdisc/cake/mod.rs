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
//!
//! The qdisc is one file in Linux; here its parts are files of their own,
//! around the `Cake` state of this one: cobalt.rs (the AQM), tin.rs (tins,
//! flows, hosts, the DRR++ lists), shaper.rs (rate, schedules, overhead,
//! capacity estimate), config.rs (attributes, tin layouts, DSCP maps, tin
//! selection), hash.rs (flow and host placement), enqueue.rs, dequeue.rs,
//! overflow.rs (drops from the longest queue), ack_filter.rs and classes.rs
//! (the flows `tc class show` lists).

mod ack_filter;
mod classes;
mod cobalt;
mod config;
mod dequeue;
mod enqueue;
mod hash;
mod overflow;
mod shaper;
mod tin;

pub use classes::FlowClass;
pub use cobalt::{inv_sqrt_cache, newton_step, CobaltParams, CobaltVars, Signal};
pub use shaper::Overhead;

use config::{diffserv_name, flowmode_name, Config, BESTEFFORT, NORMAL_ORDER};
use tin::{Entry, Tin};

use super::ops::{wrong_kind, BuildEnv, Built, Changed, ChildChange, Purged, Qdisc, Reduce};
use super::spec::{CakeAckFilter, CakeAtm, CakeFlowMode, CakeSpec, QdiscSpec};
use super::tree::Node;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::error::TcError;
use crate::packet::PacketId;
use crate::rng::ComponentRng;
use crate::time::SimTime;
use serde_json::json;

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

    /// Entries stored in the flow queues, counted one by one.
    #[cfg(test)]
    fn stored(&self) -> u64 {
        self.tins
            .iter()
            .map(|b| b.flows.iter().map(|f| f.queue.len() as u64).sum::<u64>())
            .sum()
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

    crate::qdisc::ops::own_stats!();

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

    /// `cake_walk`: the flows on a list, as classes (classes.rs).
    fn walked_classes(&self, now: SimTime) -> serde_json::Value {
        serde_json::to_value(self.flow_classes(now.as_nanos() as i64)).unwrap_or_default()
    }

    /// O(1): the engine asks on every enqueue (peak backlog); every entry
    /// stored in a flow is counted in `qlen` (the unit tests check both agree).
    fn held(&self) -> u64 {
        self.stats.qlen
    }
}

#[cfg(test)]
mod tests;
