//! The connections of one application (a sink, a flow server, an iperf3
//! client's streams), with per-packet work independent of their number:
//! demultiplexing by the 4-tuple in a hash table, as Linux's established
//! hash does (`__inet_lookup_established`, net/ipv4/inet_hashtables.c), and
//! the next wake-up from a min-heap of the connections' own deadlines
//! instead of a scan over every timer table.
//!
//! The heap cancels lazily (STYLE.md "Timers as a table"): each connection's
//! current deadline is remembered, re-arming pushes a new entry, and an entry
//! whose instant no longer matches is discarded when it reaches the top. The
//! top is kept valid after every operation, so [`ConnSet::next_timeout`] is a
//! peek.

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

/// Deadlines of items `0..n` with lazy cancellation.
#[derive(Default)]
pub struct DeadlineHeap {
    heap: BinaryHeap<Reverse<(SimTime, u32)>>,
    armed: Vec<Option<SimTime>>,
}

impl DeadlineHeap {
    /// Item `id` now wants to be woken at `at` (or never).
    pub fn set(&mut self, id: u32, at: Option<SimTime>) {
        let i = id as usize;
        if i >= self.armed.len() {
            self.armed.resize(i + 1, None);
        }
        if self.armed[i] == at {
            return;
        }
        self.armed[i] = at;
        if let Some(t) = at {
            self.heap.push(Reverse((t, id)));
        }
        self.discard_stale();
    }

    /// The earliest armed deadline.
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
            if self.armed[id as usize] == Some(t) {
                self.armed[id as usize] = None;
                due.push(id);
            }
        }
        self.discard_stale();
        due.sort_unstable();
        due
    }

    fn discard_stale(&mut self) {
        while let Some(&Reverse((t, id))) = self.heap.peek() {
            if self.armed[id as usize] == Some(t) {
                return;
            }
            self.heap.pop();
        }
    }

    /// Entries held, stale ones included (for the memory benchmark).
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
        h.set(1, t(40)); // moved later: the entry at 10 is stale
        assert_eq!(h.peek(), t(20));
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
    fn rearming_to_the_same_instant_pushes_nothing() {
        let mut h = DeadlineHeap::default();
        for _ in 0..100 {
            h.set(7, t(50));
        }
        assert_eq!(h.entries(), 1);
    }
}
