//! The connections of one application (a sink, a flow server, an iperf3
//! client's streams), with per-packet work independent of their number:
//! demultiplexing by the 4-tuple in a hash table, as Linux's established
//! hash does (`__inet_lookup_established`, net/ipv4/inet_hashtables.c), and
//! the next wake-up from a min-heap of the connections' own deadlines
//! instead of a scan over every timer table.
//!
//! The heap cancels lazily (STYLE.md "Timers as a table", the engine's
//! `AppSlot` does the same): see [`DeadlineHeap`]. Its top is kept exact
//! after every operation, so [`ConnSet::next_timeout`] is a peek.

use super::tcp::Conn;
use crate::packet::{Ipv4, Packet};
use crate::time::SimTime;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What identifies a connection at one host: the peer's address and port
/// and the local port (the local address is the host's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub remote: (Ipv4, u16),
    pub local_port: u16,
}

impl ConnKey {
    /// The connection an arriving packet belongs to.
    pub fn of_arrival(p: &Packet) -> ConnKey {
        ConnKey {
            remote: (p.src, p.src_port),
            local_port: p.dst_port,
        }
    }
}

/// Anything that owns one TCP connection.
pub trait HasConn {
    fn conn(&self) -> &Conn;
}

impl HasConn for Conn {
    fn conn(&self) -> &Conn {
        self
    }
}

/// Deadlines of items `0..n`. Each item's wanted instant is remembered and
/// the heap holds at most one live entry per item, never later than what the
/// item wants. A deadline that moves later (a re-armed RTO, a delayed ACK
/// re-armed by the next segment) costs no push: its old entry is moved when
/// it reaches the top. A deadline that moves earlier pushes a new entry;
/// the superseded one is discarded when it surfaces.
#[derive(Default)]
pub struct DeadlineHeap {
    heap: BinaryHeap<Reverse<(SimTime, u32)>>,
    wanted: Vec<Option<SimTime>>,
    /// instant of the item's live entry in the heap
    queued: Vec<Option<SimTime>>,
}

impl DeadlineHeap {
    /// Item `id` now wants to be woken at `at` (or never).
    pub fn set(&mut self, id: u32, at: Option<SimTime>) {
        let i = id as usize;
        if i >= self.wanted.len() {
            self.wanted.resize(i + 1, None);
            self.queued.resize(i + 1, None);
        }
        self.wanted[i] = at;
        if let Some(t) = at {
            if self.queued[i].is_none_or(|q| t < q) {
                self.queued[i] = Some(t);
                self.heap.push(Reverse((t, id)));
            }
        }
        self.settle_top();
    }

    /// The earliest wanted deadline (exact: the top is always settled).
    pub fn peek(&self) -> Option<SimTime> {
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Items whose deadline is at or before `now`, disarmed, in id order.
    pub fn take_due(&mut self, now: SimTime) -> Vec<u32> {
        let mut due = Vec::new();
        while let Some(&Reverse((t, id))) = self.heap.peek() {
            if t > now {
                break;
            }
            self.heap.pop();
            self.queued[id as usize] = None;
            self.wanted[id as usize] = None;
            due.push(id);
            self.settle_top();
        }
        due.sort_unstable();
        due
    }

    /// Make the top entry one whose item wants exactly that instant:
    /// discard superseded entries, move entries whose item now wants later.
    fn settle_top(&mut self) {
        while let Some(&Reverse((t, id))) = self.heap.peek() {
            let i = id as usize;
            if self.queued[i] != Some(t) {
                self.heap.pop(); // superseded by an earlier entry of the item
                continue;
            }
            if self.wanted[i] == Some(t) {
                return;
            }
            self.heap.pop();
            self.queued[i] = self.wanted[i];
            if let Some(later) = self.wanted[i] {
                self.heap.push(Reverse((later, id)));
            }
        }
    }

    /// Entries held, superseded ones included (for the memory benchmark).
    pub fn entries(&self) -> usize {
        self.heap.len()
    }
}

/// Connections in arrival order, found by key, woken by deadline.
pub struct ConnSet<T> {
    items: Vec<T>,
    index: FxHashMap<ConnKey, u32>,
    timers: DeadlineHeap,
}

impl<T> Default for ConnSet<T> {
    fn default() -> Self {
        ConnSet {
            items: Vec::new(),
            index: FxHashMap::default(),
            timers: DeadlineHeap::default(),
        }
    }
}

impl<T: HasConn> ConnSet<T> {
    /// Add a connection; returns its id (its position in arrival order).
    pub fn push(&mut self, item: T) -> u32 {
        let id = self.items.len() as u32;
        let c = item.conn();
        let key = ConnKey {
            remote: c.remote,
            local_port: c.local_port,
        };
        let deadline = c.ep.poll_timeout();
        self.index.insert(key, id);
        self.items.push(item);
        self.timers.set(id, deadline);
        id
    }

    /// The connection `p` arrived for, if any.
    #[inline]
    pub fn find(&self, p: &Packet) -> Option<u32> {
        self.index.get(&ConnKey::of_arrival(p)).copied()
    }

    pub fn get(&self, id: u32) -> &T {
        &self.items[id as usize]
    }

    /// Work on one connection; its deadline is re-read afterwards.
    pub fn update<R>(&mut self, id: u32, f: impl FnOnce(&mut T) -> R) -> R {
        let item = &mut self.items[id as usize];
        let r = f(item);
        let deadline = item.conn().ep.poll_timeout();
        self.timers.set(id, deadline);
        r
    }

    /// Work on every connection (rare, whole-set operations such as the end
    /// of a test); every deadline is re-read afterwards.
    pub fn update_all(&mut self, mut f: impl FnMut(&mut T)) {
        for id in 0..self.items.len() as u32 {
            self.update(id, &mut f);
        }
    }

    /// Ids of the connections whose timers are due at `now`, in arrival order.
    /// The caller serves each with [`ConnSet::update`].
    pub fn take_due(&mut self, now: SimTime) -> Vec<u32> {
        self.timers.take_due(now)
    }

    /// Earliest timer of any connection.
    #[inline]
    pub fn next_timeout(&self) -> Option<SimTime> {
        self.timers.peek()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ns: u64) -> Option<SimTime> {
        Some(SimTime::from_nanos(ns))
    }

    #[test]
    fn the_heap_answers_the_earliest_current_deadline() {
        let mut h = DeadlineHeap::default();
        h.set(0, t(30));
        h.set(1, t(10));
        h.set(2, t(20));
        assert_eq!(h.peek(), t(10));
        h.set(1, t(40)); // moved later: its entry at 10 moves when it surfaces
        assert_eq!(h.peek(), t(20));
        assert_eq!(h.entries(), 3);
        h.set(2, None); // cancelled
        assert_eq!(h.peek(), t(30));
        h.set(0, None);
        h.set(1, None);
        assert_eq!(h.peek(), None);
        assert_eq!(h.entries(), 0, "stale entries at the top are discarded");
    }

    #[test]
    fn due_items_come_once_in_id_order_and_are_disarmed() {
        let mut h = DeadlineHeap::default();
        h.set(3, t(5));
        h.set(1, t(10));
        h.set(2, t(10));
        h.set(0, t(11));
        assert_eq!(h.take_due(SimTime::from_nanos(10)), vec![1, 2, 3]);
        assert_eq!(h.take_due(SimTime::from_nanos(10)), Vec::<u32>::new());
        assert_eq!(h.peek(), t(11));
        h.set(1, t(10)); // re-armed after being served
        assert_eq!(h.peek(), t(10));
    }

    #[test]
    fn deadlines_moving_later_push_nothing_and_earlier_ones_supersede() {
        let mut h = DeadlineHeap::default();
        h.set(8, t(1_000));
        for k in 0..100 {
            h.set(7, t(50 + k)); // an RTO re-armed on every ACK
        }
        assert_eq!(h.entries(), 2);
        assert_eq!(h.peek(), t(149));
        h.set(7, t(20)); // earlier: a new entry; the one at 50 is superseded
        assert_eq!(h.peek(), t(20));
        assert_eq!(h.take_due(SimTime::from_nanos(999)), vec![7]);
        assert_eq!(h.peek(), t(1_000), "the superseded entry never fires");
        assert_eq!(h.entries(), 1);
    }

    #[test]
    fn random_operations_agree_with_a_plain_scan() {
        let mut rng = crate::rng::ComponentRng::new(11, "deadline-heap");
        let mut h = DeadlineHeap::default();
        let mut want = [None::<SimTime>; 16];
        let mut now = 0;
        for _ in 0..20_000 {
            let id = rng.range_u64(0, 15) as usize;
            match rng.range_u64(0, 9) {
                0 => want[id] = None,
                1..=7 => want[id] = t(now + rng.range_u64(0, 500)),
                _ => {
                    now += rng.range_u64(0, 100);
                    let at = SimTime::from_nanos(now);
                    let mut expected: Vec<u32> = (0..16u32)
                        .filter(|&i| want[i as usize].is_some_and(|w| w <= at))
                        .collect();
                    expected.sort_unstable();
                    assert_eq!(h.take_due(at), expected);
                    for i in &expected {
                        want[*i as usize] = None;
                    }
                    continue;
                }
            }
            h.set(id as u32, want[id]);
            assert_eq!(h.peek(), want.iter().flatten().min().copied());
        }
    }
}
