//! The event queue: a binary heap ordered by (time, sequence number), so
//! events at the same instant run in the order they were scheduled, on every
//! run and platform.
//!
//! Cancellation is lazy: owners remember the instant they want to be woken
//! (`Iface::watchdog_at`, an application's next timer) and the engine ignores
//! a popped event whose instant no longer matches (docs/internals.md "Timers as a
//! table"). Packets in flight on a link do not live here: each link keeps a
//! FIFO and only its head is scheduled (docs/internals.md "Performance design").

use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens when an event fires. Ids index the engine's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// The packet at the head of this interface's wire reaches the peer.
    WireArrival(u32),
    /// The serialiser of this interface is free again.
    LinkFree(u32),
    /// The qdisc watchdog of this interface expires.
    Watchdog(u32),
    /// An application's timer.
    AppTimer(u32),
    /// A node's neighbour-resolution (ARP) timer.
    NodeTimer(u32),
    /// A host's CPU finished sending the packet at the head of its queue.
    HostTx(u32),
}

/// Two heaps merged on pop by (time, sequence number), so the order is the
/// one a single heap would give. Packet events (wire, serialiser, watchdog,
/// host CPU) are few at a time and frequent; application timers are one per
/// application — ten thousand with ten thousand flows — and mostly move
/// later without firing. Keeping them apart keeps the per-packet heap
/// operations on a heap whose size does not grow with the number of flows.
/// Min-heap of (instant, sequence number, event).
type Heap = BinaryHeap<Reverse<(SimTime, u64, Event)>>;

#[derive(Default)]
pub struct EventQueue {
    packets: Heap,
    timers: Heap,
    next_seq: u64,
    popped: u64,
}

impl EventQueue {
    pub fn schedule(&mut self, at: SimTime, ev: Event) {
        let heap = match ev {
            Event::AppTimer(_) | Event::NodeTimer(_) => &mut self.timers,
            _ => &mut self.packets,
        };
        heap.push(Reverse((at, self.next_seq, ev)));
        self.next_seq += 1;
    }

    /// The heap whose head comes first.
    fn first(&mut self) -> Option<&mut Heap> {
        match (self.packets.peek(), self.timers.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(&mut self.packets),
            (None, Some(_)) => Some(&mut self.timers),
            (Some(Reverse(p)), Some(Reverse(t))) => {
                if (p.0, p.1) < (t.0, t.1) {
                    Some(&mut self.packets)
                } else {
                    Some(&mut self.timers)
                }
            }
        }
    }

    /// Instant of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        let head = |h: &Heap| h.peek().map(|Reverse(e)| e.0);
        match (head(&self.packets), head(&self.timers)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let Reverse((t, _, e)) = self.first()?.pop()?;
        self.popped += 1;
        Some((t, e))
    }

    /// Events popped so far (stale ones included): the benchmark's event count.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.packets.len() + self.timers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty() && self.timers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_by_scheduling_order() {
        let mut q = EventQueue::default();
        q.schedule(SimTime(20), Event::AppTimer(1));
        q.schedule(SimTime(10), Event::AppTimer(2));
        q.schedule(SimTime(20), Event::Watchdog(0));
        q.schedule(SimTime(10), Event::LinkFree(5));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (SimTime(10), Event::AppTimer(2)),
                (SimTime(10), Event::LinkFree(5)),
                (SimTime(20), Event::AppTimer(1)),
                (SimTime(20), Event::Watchdog(0)),
            ]
        );
        assert_eq!(q.popped(), 4);
        assert!(q.is_empty());
    }
}
