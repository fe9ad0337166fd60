//! CAKE's overflow: when the memory limit is reached, drop from the head of
//! the longest queue of any tin, found through a max-heap of the queues'
//! backlogs rebuilt lazily. Follows net/sched/sch_cake.c (`cake_heapify`,
//! `cake_heapify_up`, `cake_drop`).

use super::{Cake, MAX_TINS, QUEUES, TRUESIZE_EXTRA};
use crate::qdisc::ops::Reduce;
use crate::qdisc::{DropReason, QdiscCtx};

impl Cake {
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
    pub(super) fn heapify(&mut self, mut i: usize) {
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

    pub(super) fn heapify_up(&mut self, mut i: usize) {
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

    /// `cake_drop`: one packet off the head of the longest queue. False if
    /// the heap was stale (rebuilt on the next call).
    pub(super) fn drop_longest(
        &mut self,
        ctx: &mut QdiscCtx,
        reduce: &mut Reduce,
        now: i64,
    ) -> bool {
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
}
