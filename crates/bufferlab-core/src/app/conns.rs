//! A table of TCP connections for applications that hold many at once
//! (`bulk -P N`, the `flows` client and server).
//!
//! Two things keep the per-packet work of such an application independent of
//! how many connections it holds:
//!
//! - demultiplexing by the segment's (remote address, remote port, local
//!   port) through a hash map with a fixed hasher (deterministic; the map is
//!   never iterated, so its order cannot leak into results);
//! - a timer heap with lazy cancellation, the engine's own scheme one level
//!   down (engine.rs, `AppSlot`): each connection records the earliest entry
//!   it has in the heap (`armed`); a timer that moves later costs nothing (the
//!   early entry pops, finds nothing due and re-arms), only an earlier one
//!   pushes. The application's `poll_timeout` is the heap's top.
//!
//! Slots of finished connections are reused (a free list), so a workload of
//! millions of short flows keeps as many slots as were ever open at once.

use super::tcp::Conn;
use crate::packet::{Ipv4, Packet};
use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// What the table needs of an application's per-connection state.
pub trait HasConn {
    fn conn(&self) -> &Conn;
}

/// Multiplicative hashing of one `u64` key (the 4-tuple packed by [`key`]):
/// cheap, and the same on every platform and run.
#[derive(Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// (remote address, remote port, local port) in one word: what tells two
/// connections of one application apart (the local address is the host's).
fn key(remote: Ipv4, remote_port: u16, local_port: u16) -> u64 {
    ((remote.0 as u64) << 32) | ((remote_port as u64) << 16) | local_port as u64
}

/// Up to this many slots, [`ConnTable::next_timeout`] scans them instead of
/// trusting the heap's top.
pub const EXACT_UP_TO: usize = 8;

struct Entry<T> {
    /// distinguishes this connection from later users of the same slot
    serial: u64,
    /// the earliest heap entry this connection has (None: none pending)
    armed: Option<SimTime>,
    key: u64,
    val: T,
}

pub struct ConnTable<T> {
    slots: Vec<Option<Entry<T>>>,
    free: Vec<u32>,
    index: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    timers: BinaryHeap<Reverse<(SimTime, u32, u64)>>,
    next_serial: u64,
    len: usize,
}

impl<T: HasConn> Default for ConnTable<T> {
    fn default() -> Self {
        ConnTable {
            slots: Vec::new(),
            free: Vec::new(),
            index: HashMap::default(),
            timers: BinaryHeap::new(),
            next_serial: 0,
            len: 0,
        }
    }
}

impl<T: HasConn> ConnTable<T> {
    /// Add a connection; returns its slot. Its timer is armed at once.
    pub fn insert(&mut self, val: T) -> u32 {
        let c = val.conn();
        let k = key(c.remote.0, c.remote.1, c.local_port);
        let entry = Entry {
            serial: self.next_serial,
            armed: None,
            key: k,
            val,
        };
        self.next_serial += 1;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(entry);
                s
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        self.index.insert(k, slot);
        self.len += 1;
        self.rearm(slot);
        slot
    }

    /// The connection a received segment belongs to.
    #[inline]
    pub fn find(&self, p: &Packet) -> Option<u32> {
        self.index.get(&key(p.src, p.src_port, p.dst_port)).copied()
    }

    pub fn get(&self, slot: u32) -> &T {
        &self.slots[slot as usize].as_ref().expect("live slot").val
    }

    pub fn get_mut(&mut self, slot: u32) -> &mut T {
        &mut self.slots[slot as usize].as_mut().expect("live slot").val
    }

    /// Drop a connection and free its slot; its pending heap entries become
    /// stale (their serial no longer matches).
    pub fn remove(&mut self, slot: u32) -> T {
        let e = self.slots[slot as usize].take().expect("live slot");
        self.index.remove(&e.key);
        self.free.push(slot);
        self.len -= 1;
        e.val
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots of the live connections in slot order (deterministic; for the
    /// rare whole-table operations: Ctrl-C, results).
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| i as u32)
    }

    /// After the connection in `slot` was touched: make sure the heap holds
    /// an entry no later than its next timer.
    pub fn rearm(&mut self, slot: u32) {
        let Some(e) = self.slots[slot as usize].as_mut() else {
            return;
        };
        if let Some(t) = e.val.conn().ep.poll_timeout() {
            if e.armed.is_none_or(|a| t < a) {
                e.armed = Some(t);
                self.timers.push(Reverse((t, slot, e.serial)));
            }
        }
    }

    /// When the application must be woken. A table that never held more
    /// than [`EXACT_UP_TO`] connections answers exactly (the minimum of its
    /// connections' timers: no spurious wake-up, so `bulk` with a few
    /// connections runs event for event as before the table); a larger one
    /// answers with the heap's earliest entry, possibly stale (then the
    /// application is woken early, finds nothing due and sleeps again).
    pub fn next_timeout(&self) -> Option<SimTime> {
        if self.slots.len() <= EXACT_UP_TO {
            return self
                .slots
                .iter()
                .flatten()
                .filter_map(|e| e.val.conn().ep.poll_timeout())
                .min();
        }
        self.timers.peek().map(|Reverse((t, _, _))| *t)
    }

    /// The next connection whose timer is due at `now`, if any. The caller
    /// serves it (`ep.handle_timeout`) and then calls [`ConnTable::rearm`]
    /// (or removes it); connections whose entry was stale are re-armed here.
    pub fn pop_due(&mut self, now: SimTime) -> Option<u32> {
        while let Some(&Reverse((t, slot, serial))) = self.timers.peek() {
            if t > now {
                return None;
            }
            self.timers.pop();
            let Some(e) = self.slots[slot as usize].as_mut() else {
                continue;
            };
            if e.serial != serial {
                continue;
            }
            if e.armed == Some(t) {
                e.armed = None;
            }
            if e.val.conn().ep.poll_timeout().is_some_and(|due| due <= now) {
                return Some(slot);
            }
            self.rearm(slot);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::tcp::TcpSpec;
    use crate::app::test_support::{Bench, MS};
    use crate::rng::ComponentRng;

    struct C(Conn);
    impl HasConn for C {
        fn conn(&self) -> &Conn {
            &self.0
        }
    }

    /// A connection from host 0's `port` to host 1:5001 (SYN sent: its
    /// retransmission timer runs, 1 s in Linux's initial RTO).
    fn conn(bench: &mut Bench, port: u16, now: SimTime) -> C {
        let cfg = TcpSpec::default().config(1, 0).unwrap();
        let dst = bench.addr(1);
        let mut ctx = bench.ctx(0, now);
        let mut c = Conn::connect(cfg, &ctx, port, (dst, 5001), ComponentRng::new(1, "c"));
        c.flush(&mut ctx, 0);
        C(c)
    }

    fn segment_to(bench: &Bench, local_port: u16) -> Packet {
        crate::app::test_support::control((bench.addr(1), 5001), (bench.addr(0), local_port), 0, 0)
    }

    #[test]
    fn segments_find_their_connection_and_removed_ones_are_gone() {
        let mut bench = Bench::new(2);
        let mut t = ConnTable::default();
        let a = t.insert(conn(&mut bench, 40_000, SimTime::ZERO));
        let b = t.insert(conn(&mut bench, 40_001, SimTime::ZERO));
        assert_eq!(t.find(&segment_to(&bench, 40_001)), Some(b));
        assert_eq!(t.find(&segment_to(&bench, 40_000)), Some(a));
        assert_eq!(t.find(&segment_to(&bench, 40_002)), None);
        t.remove(a);
        assert_eq!((t.find(&segment_to(&bench, 40_000)), t.len()), (None, 1));
        // the freed slot is reused
        assert_eq!(t.insert(conn(&mut bench, 40_003, SimTime::ZERO)), a);
        assert_eq!(t.slots().collect::<Vec<_>>(), vec![a, b]);
    }

    #[test]
    fn due_timers_come_out_in_time_order_and_stale_entries_are_skipped() {
        let mut bench = Bench::new(2);
        let mut t = ConnTable::default();
        let early = t.insert(conn(&mut bench, 40_000, SimTime::ZERO));
        let late = t.insert(conn(&mut bench, 40_001, SimTime(300 * MS)));
        let first = t.get(early).0.ep.poll_timeout().unwrap();
        assert_eq!(t.next_timeout(), Some(first));
        assert_eq!(t.pop_due(SimTime(first.as_nanos() - 1)), None);
        // the early connection is gone: its entry is stale, the late one is due
        t.remove(early);
        let second = t.get(late).0.ep.poll_timeout().unwrap();
        assert!(second > first);
        assert_eq!(
            t.next_timeout(),
            Some(second),
            "a small table answers exactly"
        );
        assert_eq!(t.pop_due(second), Some(late));
        t.rearm(late);
        assert_eq!(t.next_timeout(), Some(second), "not served: armed again");
    }

    #[test]
    fn a_large_table_wakes_at_the_heaps_top_even_when_it_is_stale() {
        let mut bench = Bench::new(2);
        let mut t = ConnTable::default();
        let slots: Vec<u32> = (0..=EXACT_UP_TO as u16)
            .map(|i| t.insert(conn(&mut bench, 40_000 + i, SimTime(i as u64 * 10 * MS))))
            .collect();
        let first = t.get(slots[0]).0.ep.poll_timeout().unwrap();
        t.remove(slots[0]);
        // the removed connection's entry is still the top: an early wake-up
        assert_eq!(t.next_timeout(), Some(first));
        assert_eq!(t.pop_due(first), None, "stale: nothing due");
        let next = t.get(slots[1]).0.ep.poll_timeout().unwrap();
        assert_eq!(t.next_timeout(), Some(next));
    }
}
