//! CAKE's flows as classes, for `tc class show` (net/sched/sch_cake.c
//! `cake_walk`, `cake_dump_class`, `cake_dump_class_stats`). Only computed
//! when `tc class show` asks: nothing here runs on the packet path.
//!
//! The walk visits the tins in `tin_order` and, in each, the 1024 queues in
//! order; a queue is listed only while its flow is on one of the new / old /
//! decaying lists. The class of tin position `i`, queue `j` has minor
//! `i · 1024 + j + 1` under the qdisc's handle. Its stats are the queue
//! counters alone (packets in the flow, their bytes, the flow's drops) and the
//! flow's DRR deficit and COBALT state; the two times are signed µs measured
//! back from now (`ktime_sub(now, …)`, truncated as `ktime_to_us`).

use super::tin::NO_CHAIN;
use super::{Cake, QUEUES};
use serde::Serialize;

/// One listed flow (`cake_dump_class_stats`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlowClass {
    /// the class handle's minor: tin position · 1024 + queue + 1
    pub minor: u32,
    pub qlen: u32,
    pub backlog: u32,
    pub drops: u32,
    pub deficit: i32,
    pub count: u32,
    pub dropping: bool,
    pub p_drop: u32,
    /// `now − drop_next` in µs, sent only while dropping
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drop_next_us: Option<i32>,
    /// `now − blue_timer` in µs, sent only while BLUE's probability is not 0
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blue_timer_us: Option<i32>,
}

/// `ktime_to_us(ktime_sub(now, t))` as the s32 netlink attribute carries it.
fn us_since(now_ns: i64, t_ns: i64) -> i32 {
    ((now_ns - t_ns) / 1000) as i32
}

impl Cake {
    /// `cake_walk` with `cake_dump_class_stats` of every class it reports.
    pub fn flow_classes(&self, now_ns: i64) -> Vec<FlowClass> {
        let mut out = Vec::new();
        for (i, &t) in self.tin_order[..self.tin_cnt].iter().enumerate() {
            for (j, f) in self.tins[t as usize].flows.iter().enumerate() {
                if f.chain == NO_CHAIN {
                    continue;
                }
                let c = &f.cvars;
                out.push(FlowClass {
                    minor: (i * QUEUES + j + 1) as u32,
                    qlen: f.queue.len() as u32,
                    backlog: f.backlog,
                    drops: f.dropped,
                    deficit: f.deficit,
                    count: c.count,
                    dropping: c.dropping,
                    p_drop: c.p_drop,
                    drop_next_us: c.dropping.then(|| us_since(now_ns, c.drop_next)),
                    blue_timer_us: (c.p_drop != 0).then(|| us_since(now_ns, c.blue_timer)),
                });
            }
        }
        out
    }
}
