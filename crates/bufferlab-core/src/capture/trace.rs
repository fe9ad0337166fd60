//! Exact per-change queue series of an interface's root qdisc.
//!
//! The engine snapshots the root's backlog and the interface's drop counter
//! around every root operation (enqueue, dequeue, tc change) and hands both
//! snapshots here; this module turns the difference into records:
//!
//! - enqueue: one `Enqueue` per packet offered to the root (netem duplicates
//!   count as offered), then a `Drop` if the operation dropped anything
//!   (tail drop of the arrival, a head drop, an AQM early drop; one record per
//!   operation, the `drops` column says how many), then a `Mark` if the packet
//!   was CE-marked on enqueue. An arrival that was dropped shows the backlog
//!   unchanged, so backlog never exceeds the qdisc's limit.
//! - dequeue: `Drop` for packets dropped at dequeue (CoDel), `Mark` if the
//!   packet leaving was CE-marked inside the qdisc, then `Dequeue` with the
//!   packet's sojourn time (now − when it entered the root).
//!
//! Hence for any trace started on an empty queue: #enqueue − #dequeue −
//! drops = backlog_packets (conservation). `marks` counts packets whose ECN
//! field became CE inside this qdisc (ECT→CE); a packet that arrives already
//! CE is not counted, whereas a qdisc's own `marked` counter would count it.
//!
//! Records are fixed 56-byte little-endian rows streamed into the writer
//! given (python/bufferlab/outputs/queue_traces.py reads them): t_ns u64,
//! backlog_bytes u64, backlog_packets u64, drops u64, marks u64,
//! sojourn_ns i64 (−1 = none), kind u8, 7 bytes padding.

use std::io::{self, Write};

pub const RECORD_BYTES: usize = 56;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Enqueue = 0,
    Dequeue = 1,
    Drop = 2,
    Mark = 3,
}

/// Root-qdisc state at one instant: (backlog bytes, backlog packets, drops).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snap {
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
}

pub struct QueueTrace<W: Write> {
    out: W,
    /// thinning: write a record only this long after the previous one of
    /// the same kind (0 = all). Per kind, because the first change after an
    /// interval is nearly always the same kind (an arrival at a paced
    /// bottleneck): one clock for all kept almost no dequeues, hence no
    /// sojourn times.
    min_interval_ns: u64,
    last_written: [Option<u64>; 4],
    marks: u64,
    pub records: u64,
    pub enqueues: u64,
    pub dequeues: u64,
    /// the first drops value seen, so the column counts from the trace's start
    drops_base: u64,
    row: [u8; RECORD_BYTES],
}

impl<W: Write> QueueTrace<W> {
    pub fn new(out: W, min_interval_ns: u64, drops_now: u64) -> Self {
        QueueTrace {
            out,
            min_interval_ns,
            last_written: [None; 4],
            marks: 0,
            records: 0,
            enqueues: 0,
            dequeues: 0,
            drops_base: drops_now,
            row: [0; RECORD_BYTES],
        }
    }

    fn emit(&mut self, t: u64, kind: Kind, s: Snap, sojourn_ns: i64) -> io::Result<()> {
        match kind {
            Kind::Enqueue => self.enqueues += 1,
            Kind::Dequeue => self.dequeues += 1,
            _ => {}
        }
        let last = &mut self.last_written[kind as usize];
        if self.min_interval_ns > 0 && last.is_some_and(|l| t < l + self.min_interval_ns) {
            return Ok(());
        }
        *last = Some(t);
        self.records += 1;
        let r = &mut self.row;
        r[0..8].copy_from_slice(&t.to_le_bytes());
        r[8..16].copy_from_slice(&s.bytes.to_le_bytes());
        r[16..24].copy_from_slice(&s.packets.to_le_bytes());
        r[24..32].copy_from_slice(&(s.drops - self.drops_base).to_le_bytes());
        r[32..40].copy_from_slice(&self.marks.to_le_bytes());
        r[40..48].copy_from_slice(&sojourn_ns.to_le_bytes());
        r[48] = kind as u8;
        self.out.write_all(&self.row)
    }

    /// A packet of `len` bytes was offered to the root: `before`/`after`
    /// around the whole operation; `marked` if it left the operation CE-marked.
    pub fn on_enqueue(
        &mut self,
        t: u64,
        before: Snap,
        after: Snap,
        marked: bool,
    ) -> io::Result<()> {
        let dropped = after.drops.saturating_sub(before.drops);
        // offered packets: growth of the queue plus what was dropped
        let offered = (after.packets + dropped)
            .saturating_sub(before.packets)
            .max(1);
        for i in 1..=offered {
            let s = if dropped > 0 {
                Snap {
                    drops: before.drops,
                    ..before
                }
            } else if i == offered {
                after
            } else {
                // netem duplicates: the intermediate count (bytes as after)
                Snap {
                    packets: before.packets + i,
                    ..after
                }
            };
            self.emit(t, Kind::Enqueue, s, -1)?;
        }
        if dropped > 0 {
            self.emit(t, Kind::Drop, after, -1)?;
        }
        if marked {
            self.marks += 1;
            self.emit(t, Kind::Mark, after, -1)?;
        }
        Ok(())
    }

    /// A dequeue operation: `out` is (packet length, sojourn ns, marked
    /// inside the qdisc) of the packet that left, if one did.
    pub fn on_dequeue(
        &mut self,
        t: u64,
        before: Snap,
        after: Snap,
        out: Option<(u32, Option<u64>, bool)>,
    ) -> io::Result<()> {
        let dropped = after.drops.saturating_sub(before.drops);
        let left = out.is_some() as u64;
        // packets that entered during the operation (netem duplicates reinjected)
        let entered = (after.packets + dropped + left).saturating_sub(before.packets);
        for _ in 0..entered {
            self.emit(t, Kind::Enqueue, before, -1)?;
        }
        // state once the drops are done and before the packet leaves
        let mid = match out {
            Some((len, ..)) => Snap {
                bytes: after.bytes + len as u64,
                packets: after.packets + 1,
                drops: after.drops,
            },
            None => after,
        };
        if dropped > 0 {
            self.emit(t, Kind::Drop, mid, -1)?;
        }
        if let Some((_, sojourn, marked)) = out {
            if marked {
                self.marks += 1;
                self.emit(t, Kind::Mark, mid, -1)?;
            }
            let s = sojourn.map_or(-1, |v| v as i64);
            self.emit(t, Kind::Dequeue, after, s)?;
        }
        Ok(())
    }

    /// Anything else that changed the root (a tc change dropping packets, a
    /// root replaced): a drop record if drops grew, else an unexplained
    /// change in backlog is recorded as a drop record too (packets purged).
    pub fn on_other(&mut self, t: u64, before: Snap, after: Snap) -> io::Result<()> {
        if after != before {
            self.emit(t, Kind::Drop, after, -1)?;
        }
        Ok(())
    }

    /// Flush, and hand the output back.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(b: &[u8]) -> Vec<(u64, u64, u64, u64, u64, i64, u8)> {
        b.chunks_exact(RECORD_BYTES)
            .map(|r| {
                let g = |i: usize| u64::from_le_bytes(r[i..i + 8].try_into().unwrap());
                (g(0), g(8), g(16), g(24), g(32), g(40) as i64, r[48])
            })
            .collect()
    }

    #[test]
    fn tail_drop_and_dequeue_records() {
        let mut tr = QueueTrace::new(Vec::new(), 0, 5);
        let s = |bytes, packets, drops| Snap {
            bytes,
            packets,
            drops,
        };
        tr.on_enqueue(10, s(0, 0, 5), s(100, 1, 5), false).unwrap();
        // arrival tail-dropped: enqueue shows the backlog unchanged, then the drop
        tr.on_enqueue(11, s(100, 1, 5), s(100, 1, 6), false)
            .unwrap();
        tr.on_enqueue(12, s(100, 1, 6), s(300, 2, 6), true).unwrap();
        tr.on_dequeue(20, s(300, 2, 6), s(200, 1, 6), Some((100, Some(10), false)))
            .unwrap();
        let r = rows(&tr.finish().unwrap());
        let kinds: Vec<u8> = r.iter().map(|x| x.6).collect();
        assert_eq!(kinds, vec![0, 0, 2, 0, 3, 1]);
        assert_eq!(r[1], (11, 100, 1, 0, 0, -1, 0));
        assert_eq!(r[2], (11, 100, 1, 1, 0, -1, 2));
        assert_eq!(r[4].4, 1, "marks");
        assert_eq!(r[5], (20, 200, 1, 1, 1, 10, 1));
        // conservation: enqueues - dequeues - drops = backlog packets
        assert_eq!(3 - 1 - 1, r[5].2);
    }
}
