//! CAKE's queues: a tin (`struct cake_tin_data`) with its 1024 flow queues
//! (`struct cake_flow`), host slots (`struct cake_host`) and the new / old /
//! decaying flow lists of DRR++, the per-host bulk-flow counts and the flow
//! quantum they scale. Follows net/sched/sch_cake.c (`cake_get_flow_quantum`,
//! `cake_inc_srchost_bulk_flow_count` and its siblings, `list_move_tail` on the
//! flow lists).

use super::cobalt::{CobaltParams, CobaltVars};
use super::{dual_dst, dual_src, MAX_TINS, NIL, QUEUES};
use crate::packet::PacketId;
use std::collections::VecDeque;

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
pub(super) fn quantum_div(i: u16) -> u32 {
    QUANTUM_DIV[(i as usize).min(QUEUES)] as u32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Set {
    None,
    Sparse,
    SparseWait,
    Bulk,
    Decaying,
}

pub(super) const NEW: usize = 0;
pub(super) const OLD: usize = 1;
pub(super) const DECAYING: usize = 2;
pub(super) const NO_CHAIN: u8 = 3;

#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) id: PacketId,
    pub(super) t_enq: i64,
    pub(super) adj_len: u32,
    pub(super) len: u32,
}

#[derive(Debug)]
pub(super) struct Flow {
    pub(super) queue: VecDeque<Entry>,
    pub(super) backlog: u32,
    pub(super) deficit: i32,
    pub(super) dropped: u32,
    pub(super) cvars: CobaltVars,
    pub(super) srchost: u16,
    pub(super) dsthost: u16,
    pub(super) set: Set,
    pub(super) tag: u32,
    pub(super) overflow_idx: u16,
    pub(super) chain: u8,
    pub(super) prev: u16,
    pub(super) next: u16,
}

#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Host {
    pub(super) src_tag: u32,
    pub(super) dst_tag: u32,
    pub(super) src_bulk: u16,
    pub(super) dst_bulk: u16,
}

/// `struct cake_tin_data`.
#[derive(Debug)]
pub(super) struct Tin {
    pub(super) flows: Vec<Flow>,
    pub(super) hosts: Vec<Host>,
    pub(super) flow_quantum: u16,
    pub(super) cp: CobaltParams,
    pub(super) drop_overlimit: u32,
    pub(super) bulk_flow_count: u16,
    pub(super) sparse_flow_count: u16,
    pub(super) decaying_flow_count: u16,
    pub(super) unresponsive_flow_count: u16,
    pub(super) max_skblen: u32,
    pub(super) head: [u16; 3],
    pub(super) tail: [u16; 3],
    pub(super) time_next_packet: i64,
    pub(super) rate_ns: u64,
    pub(super) rate_bps: u64,
    pub(super) rate_shft: u16,
    pub(super) tin_quantum: u16,
    pub(super) tin_deficit: i32,
    pub(super) tin_backlog: u32,
    pub(super) tin_dropped: u32,
    pub(super) tin_ecn_mark: u32,
    pub(super) packets: u32,
    pub(super) bytes: u64,
    pub(super) ack_drops: u32,
    pub(super) avge_delay: u64,
    pub(super) peak_delay: u64,
    pub(super) base_delay: u64,
    pub(super) way_directs: u32,
    pub(super) way_hits: u32,
    pub(super) way_misses: u32,
    pub(super) way_collisions: u32,
    // SIM: drops by reason
    pub(super) congested_drops: u64,
    pub(super) flood_drops: u64,
}

impl Tin {
    pub(super) fn new(t: usize) -> Tin {
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

    pub(super) fn active(&self) -> bool {
        self.sparse_flow_count + self.bulk_flow_count > 0
    }

    pub(super) fn unlink(&mut self, f: u16) {
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
    pub(super) fn move_tail(&mut self, f: u16, c: usize) {
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

    pub(super) fn dec_src(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].srchost as usize;
        if dual_src(mode) && self.hosts[h].src_bulk > 0 {
            self.hosts[h].src_bulk -= 1;
        }
    }

    pub(super) fn inc_src(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].srchost as usize;
        if dual_src(mode) && (self.hosts[h].src_bulk as usize) < QUEUES {
            self.hosts[h].src_bulk += 1;
        }
    }

    pub(super) fn dec_dst(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].dsthost as usize;
        if dual_dst(mode) && self.hosts[h].dst_bulk > 0 {
            self.hosts[h].dst_bulk -= 1;
        }
    }

    pub(super) fn inc_dst(&mut self, f: usize, mode: u8) {
        let h = self.flows[f].dsthost as usize;
        if dual_dst(mode) && (self.hosts[h].dst_bulk as usize) < QUEUES {
            self.hosts[h].dst_bulk += 1;
        }
    }

    /// `cake_get_flow_quantum`: the flow quantum divided by the larger bulk
    /// flow count of its two hosts, dithered by a random 16-bit fraction.
    pub(super) fn flow_quantum_for(&self, f: usize, mode: u8, dither: u32) -> i32 {
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
    pub(super) fn refill(&mut self, f: usize, mode: u8, dither: u32) {
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
}
