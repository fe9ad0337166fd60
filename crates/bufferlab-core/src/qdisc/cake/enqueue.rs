//! CAKE's enqueue: classify into a tin and a flow, charge the shaper's view
//! of the packet (split GSO aggregates), queue it, run the ACK filter, start
//! a sparse flow, and drop from the longest queue past the memory limit.
//! Follows net/sched/sch_cake.c (`cake_enqueue`).

use super::tin::{Entry, Set, NEW};
use super::{Cake, TRUESIZE_EXTRA};
use crate::packet::PacketId;
use crate::qdisc::ops::Reduce;
use crate::qdisc::spec::CakeAckFilter;
use crate::qdisc::{DropReason, QdiscCtx, Verdict};
use crate::time::SimTime;

impl Cake {
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
}
