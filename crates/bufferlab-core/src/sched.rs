//! The event queue: a min-heap ordered by (time, sequence number), so
//! events at the same instant run in the order they were scheduled, on every
//! run and platform.
//!
//! Cancellation is lazy: owners remember the instant they want to be woken
//! (`Iface::watchdog_at`, an application's next timer) and the engine ignores
//! a popped event whose instant no longer matches (docs/internals.md "Timers as a
//! table"). Packets in flight on a link do not live here: each link keeps a
//! FIFO and only its head is scheduled (docs/internals.md "Performance design").

use crate::time::SimTime;

/// What happens when an event fires. Ids index the engine's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// A scheduled event; 24 bytes, so heap moves are cheap.
#[derive(Clone, Copy)]
struct Entry {
    at: SimTime,
    seq: u64,
    ev: Event,
}

impl Entry {
    /// (instant, sequence number) as one integer: a single comparison, which
    /// the compiler turns into conditional moves rather than branches.
    #[inline(always)]
    fn key(&self) -> u128 {
        key_of(self.at, self.seq)
    }
}

/// Children per heap node: half the depth of a binary heap, and the four
/// children of a node share a cache line or two. Sequence numbers are
/// unique, so the order of pops is the total order of (instant, sequence
/// number) whatever the heap's shape.
const ARITY: usize = 4;

/// Min-heap of entries by `Entry::key`.
#[derive(Default)]
struct Heap(Vec<Entry>);

impl Heap {
    #[inline]
    fn head(&self) -> Option<&Entry> {
        self.0.first()
    }

    fn push(&mut self, e: Entry) {
        let i = self.0.len();
        self.0.push(e);
        self.sift_up(i, e);
    }

    /// Put `e` in the hole at `i` or above it: each step moves a larger
    /// parent down into the hole.
    #[inline]
    fn sift_up(&mut self, mut i: usize, e: Entry) {
        let v = &mut self.0;
        let k = e.key();
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if v[parent].key() <= k {
                break;
            }
            v[i] = v[parent];
            i = parent;
        }
        v[i] = e;
    }

    fn pop(&mut self) -> Option<Entry> {
        let last = self.0.pop()?;
        let v = &mut self.0;
        if v.is_empty() {
            return Some(last);
        }
        let top = v[0];
        // The last entry nearly always belongs near the bottom: move the
        // smallest child up level by level down to a leaf (no comparison with
        // `last` on the way), then sift `last` up from there.
        let n = v.len();
        let mut i = 0;
        loop {
            let f = ARITY * i + 1;
            let c = if let Some(kids) = v.get(f..f + ARITY) {
                // all ARITY (4) children, one bounds check for the four: a
                // tournament of selects, no branch to mispredict
                let k = |j: usize| kids[j].key();
                let (a, ka) = if k(1) < k(0) { (1, k(1)) } else { (0, k(0)) };
                let (b, kb) = if k(3) < k(2) { (3, k(3)) } else { (2, k(2)) };
                f + if kb < ka { b } else { a }
            } else if f < n {
                (f + 1..n).fold(f, |c, j| if v[j].key() < v[c].key() { j } else { c })
            } else {
                break;
            };
            v[i] = v[c];
            i = c;
        }
        self.sift_up(i, last);
        Some(top)
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

/// Two heaps merged on pop by (time, sequence number), so the order is the
/// one a single heap would give. Packet events (wire, serialiser, watchdog,
/// host CPU) are few at a time and frequent; application timers are one per
/// application — ten thousand with ten thousand flows — and mostly move
/// later without firing. Keeping them apart keeps the per-packet heap
/// operations on a heap whose size does not grow with the number of flows.
#[derive(Default)]
pub struct EventQueue {
    packets: Heap,
    timers: Heap,
    next_seq: u64,
    popped: u64,
    /// events run outside the queue (engine/link_free.rs), of `popped`
    run_outside: u64,
    /// (instant, sequence number) of the last event popped, as `Entry::key`
    /// (raised to the end of an instant by [`EventQueue::pass`]): which events
    /// the engine has run already
    position: u128,
}

/// `Entry::key` of an event not (yet) in the queue.
#[inline]
fn key_of(at: SimTime, seq: u64) -> u128 {
    (at.0 as u128) << 64 | seq as u128
}

impl EventQueue {
    pub fn schedule(&mut self, at: SimTime, ev: Event) {
        let seq = self.reserve_seq();
        self.schedule_reserved(at, seq, ev);
    }

    /// The sequence number the next `schedule` would use, taken for an
    /// event the owner keeps aside and may hand to
    /// [`schedule_reserved`](Self::schedule_reserved) later: queued then,
    /// it runs where it would have run had it been queued now.
    pub fn reserve_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }

    /// Queue `ev` at `at` with a sequence number from
    /// [`reserve_seq`](Self::reserve_seq), not yet run past
    /// ([`has_passed`](Self::has_passed) false).
    pub fn schedule_reserved(&mut self, at: SimTime, seq: u64, ev: Event) {
        debug_assert!(!self.has_passed(at, seq));
        let heap = match ev {
            Event::AppTimer(_) | Event::NodeTimer(_) => &mut self.timers,
            _ => &mut self.packets,
        };
        heap.push(Entry { at, seq, ev });
    }

    /// Would an event at `at` with sequence number `seq` have run already?
    #[inline]
    pub fn has_passed(&self, at: SimTime, seq: u64) -> bool {
        key_of(at, seq) < self.position
    }

    /// The run has reached the end of instant `until`: every event at or
    /// before it counts as run.
    pub fn pass(&mut self, until: SimTime) {
        self.position = self.position.max(key_of(until, u64::MAX));
    }

    /// Count an event its owner kept out of the queue and ran itself
    /// (engine/link_free.rs), as if it had been popped.
    pub fn count_run_outside(&mut self) {
        self.popped += 1;
        self.run_outside += 1;
    }

    #[cfg(test)]
    pub fn run_outside(&self) -> u64 {
        self.run_outside
    }

    /// The heap whose head comes first.
    #[inline]
    fn first(&mut self) -> &mut Heap {
        match (self.packets.head(), self.timers.head()) {
            (Some(p), Some(t)) if t.key() < p.key() => &mut self.timers,
            (None, _) => &mut self.timers,
            _ => &mut self.packets,
        }
    }

    /// Instant of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        let head = |h: &Heap| h.head().map(|e| e.at);
        match (head(&self.packets), head(&self.timers)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let e = self.first().pop()?;
        self.popped += 1;
        self.position = e.key();
        Some((e.at, e.ev))
    }

    /// Events popped so far (stale ones included) and those run outside the
    /// queue: the benchmark's event count.
    pub fn popped(&self) -> u64 {
        self.popped
    }

    pub fn len(&self) -> usize {
        self.packets.len() + self.timers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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

    /// Interleaved schedules and pops, with many ties, give the order of a
    /// reference min-heap on (time, sequence number).
    #[test]
    fn matches_a_reference_heap_on_ties_and_interleaving() {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let mut q = EventQueue::default();
        let mut reference = BinaryHeap::new();
        let (mut seq, mut x, mut now) = (0u64, 12345u64, 0u64);
        for round in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = x >> 33;
            if r % 3 != 0 || q.is_empty() {
                let at = SimTime(now + r % 8);
                let ev = match r % 4 {
                    0 => Event::AppTimer(round),
                    1 => Event::NodeTimer(round),
                    2 => Event::LinkFree(round),
                    _ => Event::WireArrival(round),
                };
                q.schedule(at, ev);
                reference.push(Reverse((at, seq, round)));
                seq += 1;
            } else {
                let (at, ev) = q.pop().unwrap();
                let Reverse((rat, _, rid)) = reference.pop().unwrap();
                let id = match ev {
                    Event::AppTimer(i) | Event::NodeTimer(i) => i,
                    Event::LinkFree(i) | Event::WireArrival(i) => i,
                    Event::Watchdog(i) | Event::HostTx(i) => i,
                };
                assert_eq!((at, id), (rat, rid));
                now = at.0;
            }
        }
        assert_eq!(q.len(), reference.len());
    }
}
