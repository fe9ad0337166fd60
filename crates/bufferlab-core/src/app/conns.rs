//! The TCP connections of an application that holds many at once (a sink,
//! `bulk -P N`, the `flows` client and server), with per-packet work
//! independent of their number. The connections themselves live in the
//! node's socket table (app/sockets: found there by the 4-tuple through a
//! hash table, their output buffer lent by it); the application keeps one
//! record per connection, holding its [`SocketHandle`], in a slot of a
//! [`ConnTable`], and its timers in a min-heap of the connections' own
//! deadlines ([`DeadlineHeap`]) instead of a scan over every timer table.
//! The heap's top is kept exact after every operation, so
//! [`ConnTable::next_timeout`] is a peek and an application is never woken
//! for nothing. A socket's tag is its record's slot, so a segment finds its
//! record with one lookup.
//!
//! Slots of closed connections are reused (a free list), so a workload of
//! millions of short flows keeps as many slots as were ever open at once.

use super::sockets::{SocketHandle, Sockets};
use super::AppCtx;
use crate::packet::{Packet, TsqRelease};
use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Anything that holds one connection of the node's table.
pub trait HasSocket {
    fn sock(&self) -> SocketHandle;
}

impl HasSocket for SocketHandle {
    fn sock(&self) -> SocketHandle {
        *self
    }
}

/// `HasSocket` for per-connection records whose handle is their `sock`
/// field (bulk's streams, the flows client's flows and server's accepts).
macro_rules! sock_field {
    ($($record:ty),+) => {
        $(impl $crate::app::conns::HasSocket for $record {
            fn sock(&self) -> $crate::app::sockets::SocketHandle {
                self.sock
            }
        })+
    };
}
pub(crate) use sock_field;

/// Deadlines of items `0..n`. Each item's wanted instant is remembered and
/// the heap holds at most one live entry per item, never later than what the
/// item wants. A deadline that moves later (a re-armed RTO, a delayed ACK
/// re-armed by the next segment) costs no push: its old entry is moved when
/// it reaches the top. A deadline that moves earlier pushes a new entry;
/// the superseded one is discarded when it surfaces.
#[derive(Default)]
pub struct DeadlineHeap {
    heap: BinaryHeap<Reverse<(SimTime, u32)>>,
    items: Vec<ItemDeadlines>,
}

/// One item's deadlines, side by side so that re-arming touches one cache
/// line per item ([`SimTime::MAX`] = none).
#[derive(Clone, Copy)]
struct ItemDeadlines {
    wanted: SimTime,
    /// instant of the item's live entry in the heap
    queued: SimTime,
}

impl ItemDeadlines {
    const NONE: ItemDeadlines = ItemDeadlines {
        wanted: SimTime::MAX,
        queued: SimTime::MAX,
    };
}

impl DeadlineHeap {
    /// Item `id` now wants to be woken at `at` (or never).
    pub fn set(&mut self, id: u32, at: Option<SimTime>) {
        let i = id as usize;
        if i >= self.items.len() {
            self.items.resize(i + 1, ItemDeadlines::NONE);
        }
        let item = &mut self.items[i];
        item.wanted = at.unwrap_or(SimTime::MAX);
        if let Some(t) = at {
            debug_assert!(t != SimTime::MAX, "SimTime::MAX means none");
            if t < item.queued {
                item.queued = t;
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
            self.items[id as usize] = ItemDeadlines::NONE;
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
            let item = &mut self.items[id as usize];
            if item.queued != t {
                self.heap.pop(); // superseded by an earlier entry of the item
                continue;
            }
            if item.wanted == t {
                return;
            }
            self.heap.pop();
            item.queued = item.wanted;
            if item.wanted != SimTime::MAX {
                self.heap.push(Reverse((item.wanted, id)));
            }
        }
    }

    /// Entries held, superseded ones included (for the memory benchmark).
    pub fn entries(&self) -> usize {
        self.heap.len()
    }
}

/// An application's connection records in slots, woken by deadline.
pub struct ConnTable<T> {
    slots: Vec<Option<T>>,
    free: Vec<u32>,
    timers: DeadlineHeap,
    len: usize,
}

impl<T> Default for ConnTable<T> {
    fn default() -> Self {
        ConnTable {
            slots: Vec::new(),
            free: Vec::new(),
            timers: DeadlineHeap::default(),
            len: 0,
        }
    }
}

impl<T: HasSocket> ConnTable<T> {
    /// Add a record of a connection of `sockets`; returns its slot (also the
    /// socket's tag). Its timer is armed at once.
    pub fn insert(&mut self, val: T, sockets: &mut Sockets) -> u32 {
        let h = val.sock();
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(val);
                s
            }
            None => {
                self.slots.push(Some(val));
                (self.slots.len() - 1) as u32
            }
        };
        sockets.set_tag(h, slot);
        self.len += 1;
        self.rearm(slot, sockets);
        slot
    }

    /// The record of the connection a received segment belongs to.
    #[inline]
    pub fn find(&self, p: &Packet, sockets: &Sockets) -> Option<u32> {
        let h = sockets.find(p)?;
        Some(sockets.tag(h))
    }

    pub fn get(&self, slot: u32) -> &T {
        self.slots[slot as usize].as_ref().expect("live slot")
    }

    /// The record, to work on; call [`ConnTable::rearm`] (or
    /// [`ConnTable::remove`]) afterwards.
    pub fn get_mut(&mut self, slot: u32) -> &mut T {
        self.slots[slot as usize].as_mut().expect("live slot")
    }

    /// After the connection in `slot` was worked on: re-read its deadline.
    pub fn rearm(&mut self, slot: u32, sockets: &Sockets) {
        let deadline = sockets.tcp(self.get(slot).sock()).ep.poll_timeout();
        self.timers.set(slot, deadline);
    }

    /// Drop a record and its connection (out of the node's table, its
    /// counters kept there); the slot and its timer are freed.
    pub fn remove(&mut self, slot: u32, sockets: &mut Sockets) -> T {
        let val = self.slots[slot as usize].take().expect("live slot");
        sockets.remove_tcp(val.sock());
        self.timers.set(slot, None);
        self.free.push(slot);
        self.len -= 1;
        val
    }

    /// TCP Small Queues for the table's connections ([`AppCtx::tsq_release`]):
    /// the slots whose TSQ handler ran, in the order it did (the caller
    /// services them as after a timer).
    pub fn tsq_release(&self, ctx: &mut AppCtx, releases: &[TsqRelease]) -> Vec<u32> {
        let ran = ctx.tsq_release(releases);
        ran.into_iter().map(|h| ctx.sockets.tag(h)).collect()
    }

    /// Run the timers due at `now` (`ep.handle_timeout`) and return those
    /// connections' slots in slot order; the caller then services each (sends,
    /// reads) and re-arms or removes it.
    pub fn run_timers(&mut self, now: SimTime, sockets: &mut Sockets) -> Vec<u32> {
        let due = self.timers.take_due(now);
        if let Some(&first) = due.first() {
            sockets.prefetch(self.get(first).sock());
        }
        for (i, &slot) in due.iter().enumerate() {
            if let Some(&next) = due.get(i + 1) {
                sockets.prefetch(self.get(next).sock());
            }
            let h = self.get(slot).sock();
            sockets.tcp_mut(h).ep.handle_timeout(now);
        }
        due
    }

    /// Earliest timer of any connection.
    #[inline]
    pub fn next_timeout(&self) -> Option<SimTime> {
        self.timers.peek()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots of the live records in slot order (deterministic; for the
    /// rare whole-table operations: Ctrl-C, results).
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| i as u32)
    }

    /// The live records in slot order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::tcp::TcpSpec;
    use crate::app::test_support::{Bench, MS};
    use crate::rng::ComponentRng;

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

    /// A connection from host 0's `port` to host 1:5001 in host 0's socket
    /// table (SYN sent: its retransmission timer runs, 1 s in Linux's
    /// initial RTO).
    fn conn(bench: &mut Bench, port: u16, now: SimTime) -> SocketHandle {
        let cfg = TcpSpec::default().config(1, 0).unwrap();
        let dst = bench.addr(1);
        let mut ctx = bench.ctx(0, now);
        let h = ctx.connect(cfg, port, (dst, 5001), ComponentRng::new(1, "c"));
        ctx.flush(h, 0);
        h
    }

    fn segment_to(bench: &Bench, local_port: u16) -> Packet {
        crate::app::test_support::control((bench.addr(1), 5001), (bench.addr(0), local_port), 0, 0)
    }

    #[test]
    fn segments_find_their_record_and_removed_ones_are_gone() {
        let mut bench = Bench::new(2);
        let mut t = ConnTable::default();
        let (ha, hb) = (
            conn(&mut bench, 40_000, SimTime::ZERO),
            conn(&mut bench, 40_001, SimTime::ZERO),
        );
        let socks = &mut bench.hosts[0].sockets;
        let a = t.insert(ha, socks);
        let b = t.insert(hb, socks);
        assert_eq!(
            t.find(&segment_to(&bench, 40_001), &bench.hosts[0].sockets),
            Some(b)
        );
        assert_eq!(
            t.find(&segment_to(&bench, 40_000), &bench.hosts[0].sockets),
            Some(a)
        );
        assert_eq!(
            t.find(&segment_to(&bench, 40_002), &bench.hosts[0].sockets),
            None
        );
        assert_eq!(t.remove(a, &mut bench.hosts[0].sockets), ha);
        let gone = t.find(&segment_to(&bench, 40_000), &bench.hosts[0].sockets);
        assert_eq!(
            (gone, t.len(), bench.hosts[0].sockets.tcp_len()),
            (None, 1, 1)
        );
        // the freed slot is reused, and so is the socket's
        let hc = conn(&mut bench, 40_003, SimTime::ZERO);
        assert_eq!(hc, ha, "the socket table reuses the freed slot");
        assert_eq!(t.insert(hc, &mut bench.hosts[0].sockets), a);
        assert_eq!(t.slots().collect::<Vec<_>>(), vec![a, b]);
        assert_eq!(
            bench.hosts[0].sockets.tag(hb),
            b,
            "a socket's tag is its record's slot"
        );
    }

    #[test]
    fn a_removed_connection_never_fires_and_a_due_one_runs_its_timer_once() {
        let mut bench = Bench::new(2);
        let mut t = ConnTable::default();
        let he = conn(&mut bench, 40_000, SimTime::ZERO);
        let hl = conn(&mut bench, 40_001, SimTime(300 * MS));
        let socks = &mut bench.hosts[0].sockets;
        let early = t.insert(he, socks);
        let late = t.insert(hl, socks);
        let first = socks.tcp(he).ep.poll_timeout().unwrap();
        assert_eq!(t.next_timeout(), Some(first));
        assert_eq!(
            t.run_timers(SimTime(first.as_nanos() - 1), socks),
            Vec::<u32>::new()
        );
        // the early connection is gone: its entry is stale, the late one is due
        t.remove(early, socks);
        let second = socks.tcp(hl).ep.poll_timeout().unwrap();
        assert!(second > first);
        assert_eq!(t.run_timers(second, socks), vec![late]);
        assert_eq!(
            t.next_timeout(),
            None,
            "disarmed until the caller re-arms it"
        );
        t.rearm(late, socks);
        // its timer ran: the SYN went again, with the retransmission timer backed off
        assert!(t.next_timeout().unwrap() > second);
    }
}
