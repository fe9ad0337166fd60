//! CAKE's dequeue: the global hard shaper, the choice of tin (tin DRR when
//! unshaped, the earliest schedule when shaped), DRR++ over the new, old and
//! decaying flow lists with host-scaled quanta, and COBALT on the packet
//! taken. Follows net/sched/sch_cake.c (`cake_dequeue`, `cake_dequeue_one`).

use super::cobalt::Signal;
use super::tin::{quantum_div, Entry, Set, DECAYING, NEW, OLD};
use super::{dual_dst, dual_src, ewma, Cake, NIL, TRUESIZE_EXTRA};
use crate::packet::PacketId;
use crate::qdisc::ops::Reduce;
use crate::qdisc::{DropReason, QdiscCtx};
use crate::time::SimTime;

impl Cake {
    /// `cake_dequeue_one`: the head of the current flow.
    pub(super) fn dequeue_one(&mut self) -> Option<Entry> {
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
}
