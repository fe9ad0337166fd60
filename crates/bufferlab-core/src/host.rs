//! Host processing time: the CPU work of a host's network stack, which
//! spaces the packets a host sends and receives and gives a path with
//! neither propagation delay nor a shaper a positive round-trip time.
//!
//! Each host has two serialisers, one for transmission (the sending
//! process's system call and `tcp_write_xmit` → `dev_queue_xmit` → veth)
//! and one for reception (the receiving CPU's softirq: `netif_receive_skb`
//! → IP → TCP/UDP/ICMP), as on a multi-core machine where sender and
//! receiver run on different cores. A packet takes
//! `per_packet + per_byte × len` on each (a GSO aggregate pays the
//! per-packet cost once and the per-byte cost for all its bytes: the reason
//! GSO exists). A packet that wakes a sleeping process (a ping reply) adds
//! the scheduler's wake-up latency.
//!
//! Defaults (`StackCost::default`) were measured on the development machine
//! (2 cores, kernel 6.x, two network namespaces joined by veths through a
//! Linux bridge, as Mininet's): iperf3 TCP reached 12.9 Gbit/s with
//! TSO/GSO on (64 KB aggregates: ~40 µs each at the slowest stage) and
//! 3.8 Gbit/s with both off (1514-byte frames: ~3.2 µs each), which solve to
//! 2.25 µs per packet and 0.61 ns per byte; idle `ping` gave min/avg
//! 0.036/0.058 ms, leaving ~27 µs of wake-up latency beyond four stack
//! passes. Scenarios may change them through `[sim]` (0 disables).

use crate::packet::PacketId;
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use std::collections::VecDeque;

/// Per-host stack costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StackCost {
    /// fixed cost of one packet (or aggregate) through one direction, ns
    #[serde(default = "default_packet_ns")]
    pub packet_ns: u64,
    /// cost per byte of the L2 length (copy, checksum), picoseconds
    #[serde(default = "default_byte_ps")]
    pub byte_ps: u64,
    /// scheduler latency to wake a process blocked on a socket, ns
    #[serde(default = "default_wakeup_ns")]
    pub wakeup_ns: u64,
}

fn default_packet_ns() -> u64 {
    2_250
}

fn default_byte_ps() -> u64 {
    610
}

fn default_wakeup_ns() -> u64 {
    27_000
}

impl Default for StackCost {
    fn default() -> Self {
        StackCost {
            packet_ns: default_packet_ns(),
            byte_ps: default_byte_ps(),
            wakeup_ns: default_wakeup_ns(),
        }
    }
}

impl StackCost {
    /// Time one direction of the stack spends on a packet of `len` bytes.
    pub fn of(&self, len: u32) -> SimDuration {
        SimDuration(self.packet_ns + len as u64 * self.byte_ps / 1000)
    }

    pub fn is_zero(&self) -> bool {
        self.packet_ns == 0 && self.byte_ps == 0 && self.wakeup_ns == 0
    }
}

/// One serialiser: packets leave in arrival order, each when the CPU has
/// finished it. Only the head is scheduled (like a wire's FIFO).
#[derive(Debug, Default)]
pub struct CpuQueue {
    free_at: SimTime,
    queue: VecDeque<(SimTime, PacketId)>,
}

impl CpuQueue {
    /// Take `pid` at `now` for `cost`; returns when it is done and whether
    /// it became the head (the caller schedules the head's event then).
    pub fn admit(&mut self, now: SimTime, cost: SimDuration, pid: PacketId) -> (SimTime, bool) {
        let done = self.free_at.max(now) + cost;
        self.free_at = done;
        self.queue.push_back((done, pid));
        (done, self.queue.len() == 1)
    }

    /// Spend `cost` on a packet that does not wait in the queue (nothing is
    /// queued: its owner sends it on at once, stamped with the result).
    pub fn take(&mut self, now: SimTime, cost: SimDuration) -> SimTime {
        debug_assert!(self.queue.is_empty(), "a packet would overtake the queue");
        self.free_at = self.free_at.max(now) + cost;
        self.free_at
    }

    /// The head, if it is done by `now`.
    pub fn pop_done(&mut self, now: SimTime) -> Option<PacketId> {
        match self.queue.front() {
            Some(&(t, pid)) if t <= now => {
                self.queue.pop_front();
                Some(pid)
            }
            _ => None,
        }
    }

    /// When the head is done, if there is one.
    pub fn head_time(&self) -> Option<SimTime> {
        self.queue.front().map(|&(t, _)| t)
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_of_a_frame_and_an_aggregate() {
        let c = StackCost::default();
        // 2250 + 1514 × 0.61 = 2250 + 923.54 → 3173 ns
        assert_eq!(c.of(1514), SimDuration(3_173));
        // 45 × 1514 = 68 130 B: 2250 + 41 559.3 → 43 809 ns
        assert_eq!(c.of(68_130), SimDuration(43_809));
    }

    #[test]
    fn a_train_leaves_spaced_by_the_cost() {
        let mut q = CpuQueue::default();
        let cost = SimDuration(1_000);
        let t0 = SimTime::from_nanos(5_000);
        assert_eq!(
            q.admit(t0, cost, PacketId(1)),
            (SimTime::from_nanos(6_000), true)
        );
        assert_eq!(
            q.admit(t0, cost, PacketId(2)),
            (SimTime::from_nanos(7_000), false)
        );
        assert_eq!(q.pop_done(SimTime::from_nanos(6_500)), Some(PacketId(1)));
        assert_eq!(q.pop_done(SimTime::from_nanos(6_500)), None);
        assert_eq!(q.head_time(), Some(SimTime::from_nanos(7_000)));
        // idle CPU: the next packet starts when it arrives
        assert_eq!(q.pop_done(SimTime::from_nanos(7_000)), Some(PacketId(2)));
        let (done, head) = q.admit(SimTime::from_nanos(50_000), cost, PacketId(3));
        assert_eq!((done, head), (SimTime::from_nanos(51_000), true));
    }
}
