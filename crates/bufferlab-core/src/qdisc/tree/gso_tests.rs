//! GSO aggregates through the qdiscs (issue 10; docs/semantics/qdiscs.md §1.2, §2, §3.3,
//! E4, E5, P9, P10): one queue entry per aggregate, `Sent … pkt` counting
//! segments, byte limits counting `pkt_len`, tbf splitting what exceeds its
//! `max_size`, netem's `limit` counting aggregates and netem corruption
//! segmenting. Numbers are computed by hand in the comments.

use super::harness::{kick, Env};
use super::*;
use crate::packet::{tcp_flags, Packet};
use crate::qdisc::spec::{NetemPercent, NetemSpec, ParentSpec, TbfSpec, TcVerb};
use crate::qdisc::{AutoHandles, TcRequest};

const MS: u64 = 1_000_000;
const DEV: &str = "s1-eth2";
/// A full segment: 1448 payload + 66 header bytes.
const FULL: u32 = 1514;
/// A 64 KB TSO skb: 45 × 1514 = 68 130 bytes as qdiscs count it.
const AGG45: u32 = 45 * FULL;

fn req(parent: ParentSpec, handle: u16, q: QdiscSpec) -> TcRequest {
    TcRequest {
        verb: TcVerb::Add,
        dev: DEV.into(),
        parent: Some(parent),
        handle: Some(handle),
        qdisc: Some(q),
    }
}

fn tbf(rate: u64, burst: u32, limit: u32) -> QdiscSpec {
    QdiscSpec::Tbf(TbfSpec {
        rate,
        burst,
        limit,
        peakrate: None,
        mtu: None,
        mpu: 0,
        overhead: 0,
        atm: false,
    })
}

/// E5: `tbf rate 100mbit burst 50000 limit …` (12.5e6 B/s, cost 80 ns/B).
fn tbf_e5(limit: u32) -> QdiscSpec {
    tbf(12_500_000, 50_000, limit)
}

const CHILD: ParentSpec = ParentSpec::Class { major: 1, minor: 0 };

struct Lab {
    tree: QdiscTree,
    env: Env,
    auto: AutoHandles,
    seq: u64,
}

impl Lab {
    fn new(modern: bool) -> Lab {
        let profile = QdiscProfile {
            netem_modern_accounting: modern,
            ..Default::default()
        };
        Lab {
            tree: QdiscTree::new(DEV, 42, profile),
            env: Env::default(),
            auto: AutoHandles::default(),
            seq: 1_000_000,
        }
    }

    fn tc(&mut self, r: TcRequest) {
        let mut ctx = self.env.ctx(0);
        self.tree.apply(&r, &mut ctx, &mut self.auto).unwrap();
    }

    /// A TCP GSO aggregate of `segs` full 1448-byte segments (1514 bytes
    /// each as a qdisc counts them); `seq` numbers records in creation order.
    fn gso(&mut self, segs: u16) -> PacketId {
        let mut p: Packet =
            crate::packet::tests::tcp_aggregate(1, tcp_flags::ACK, segs, 1448, 1448);
        p.seq = self.seq;
        self.seq += 1;
        self.env.arena.alloc(p)
    }

    fn enqueue(&mut self, t: u64, id: PacketId) -> Verdict {
        self.tree.enqueue(&mut self.env.ctx(t), id)
    }

    fn stats(&self, i: usize) -> QdiscStats {
        self.tree.show()[i].stats
    }

    /// Kick at `t` and at every watchdog until idle; (time, len, segs) out.
    fn drain(&mut self, mut t: u64) -> Vec<(u64, u32, u32)> {
        let mut out = vec![];
        loop {
            let mut ctx = self.env.ctx(t);
            let p = self.tree.dequeue(&mut ctx);
            let wd = ctx.watchdog;
            match p {
                Some(id) => {
                    let pk = self.env.arena.get(id);
                    out.push((t, pk.len, pk.segs()));
                    self.env.arena.free(id);
                }
                None => match wd {
                    Some(w) => {
                        assert!(w.as_nanos() > t);
                        t = w.as_nanos();
                    }
                    None => break,
                },
            }
        }
        self.check();
        out
    }

    /// Conservation in the arena and a tree that holds what the arena says.
    fn check(&self) {
        assert_eq!(
            self.env.arena.live(),
            self.tree.held_packets(),
            "live vs held"
        );
        assert_eq!(
            self.tree.held_backlog().0,
            self.env.arena.live_bytes(),
            "bytes held"
        );
    }
}

#[test]
fn e5_tbf_splits_an_aggregate_larger_than_max_size() {
    // tbf root alone: max_size = burst = 50 000; a 45-segment aggregate of
    // 68 130 bytes exceeds it, each 1514-byte segment fits → 45 entries
    let mut lab = Lab::new(false);
    lab.tc(req(ParentSpec::Root, 1, tbf_e5(26_214_400)));
    let id = lab.gso(45);
    assert_eq!(lab.env.arena.len_of(id), AGG45);
    assert_eq!(lab.enqueue(0, id), Verdict::Queued);
    let (tb, bf) = (lab.stats(0), lab.stats(1));
    assert_eq!((tb.qlen, tb.backlog), (45, 68_130));
    assert_eq!((bf.qlen, bf.backlog), (45, 68_130));
    assert_eq!((tb.drops, bf.drops), (0, 0));
    assert_eq!(lab.env.arena.segmented(), 1);
    assert_eq!(lab.env.arena.live(), 45);
    lab.check();
    // drain from a full bucket (4 000 000 ns; cost(1514) = 80 × 1514 =
    // 121 120 ns): 33 segments at t = 0 (33 × 121 120 = 3 996 960, 3 040
    // left), the 34th after 121 120 − 3 040 = 118 080 ns, then one every
    // 121 120 ns: the 45th at 118 080 + 11 × 121 120 = 1 450 400 ns
    let out = lab.drain(0);
    assert_eq!(out.len(), 45);
    assert!(out.iter().all(|&(_, len, segs)| len == FULL && segs == 1));
    assert!(out[..33].iter().all(|o| o.0 == 0));
    assert_eq!(out[33].0, 118_080);
    assert_eq!(out[44].0, 1_450_400);
    let (tb, bf) = (lab.stats(0), lab.stats(1));
    // Sent 68130 bytes 45 pkt on both
    assert_eq!(
        (tb.bytes, tb.packets, tb.qlen, tb.backlog),
        (68_130, 45, 0, 0)
    );
    assert_eq!((bf.bytes, bf.packets), (68_130, 45));
    lab.check();
}

#[test]
fn e5_tbf_keeps_an_aggregate_within_max_size_whole() {
    let mut lab = Lab::new(false);
    lab.tc(req(ParentSpec::Root, 1, tbf_e5(26_214_400)));
    // 33 segments: 33 × 1514 = 49 962 ≤ 50 000 → one entry
    let id = lab.gso(33);
    assert_eq!(lab.enqueue(0, id), Verdict::Queued);
    let (tb, bf) = (lab.stats(0), lab.stats(1));
    assert_eq!(
        (tb.qlen, tb.backlog, bf.qlen, bf.backlog),
        (1, 49_962, 1, 49_962)
    );
    assert_eq!(lab.env.arena.segmented(), 0);
    // cost 80 × 49 962 = 3 996 960 ≤ 4 000 000: leaves at once, whole;
    // Sent 49962 bytes 33 pkt
    let out = lab.drain(0);
    assert_eq!(out, vec![(0, 49_962, 33)]);
    let tb = lab.stats(0);
    assert_eq!((tb.bytes, tb.packets, tb.qlen), (49_962, 33, 0));
    // the bucket is now at 3 040 ns: a second one waits 3 996 960 − 3 040 =
    // 3 993 920 ns
    let id = lab.gso(33);
    lab.enqueue(0, id);
    let out = lab.drain(0);
    assert_eq!(out, vec![(3_993_920, 49_962, 33)]);
    assert_eq!(lab.stats(0).packets, 66);
    lab.check();
}

#[test]
fn e5_tbf_still_drops_what_cannot_be_split_small_enough() {
    let mut lab = Lab::new(false);
    lab.tc(req(ParentSpec::Root, 1, tbf_e5(26_214_400)));
    // a plain (non-GSO) 50 001-byte frame > max_size: TooBig, always
    let id = lab.env.pkt(50_001);
    assert_eq!(lab.enqueue(0, id), Verdict::Dropped(DropReason::TooBig));
    // a plain 50 000-byte frame fits exactly
    let id = lab.env.pkt(50_000);
    assert_eq!(lab.enqueue(0, id), Verdict::Queued);
    let tb = lab.stats(0);
    assert_eq!((tb.drops, tb.qlen, tb.backlog), (1, 1, 50_000));
    assert_eq!(lab.env.drops.packets[DropReason::TooBig.index()], 1);
    // a tbf with burst 1000: the aggregate's 1514-byte segments do not fit
    // either → the whole aggregate is dropped as one entry of 45 segments
    let mut lab = Lab::new(false);
    lab.tc(req(ParentSpec::Root, 1, tbf(12_500_000, 1000, 26_214_400)));
    let id = lab.gso(45);
    assert_eq!(lab.enqueue(0, id), Verdict::Dropped(DropReason::TooBig));
    assert_eq!(lab.stats(0).drops, 1);
    assert_eq!(lab.env.drops.total_packets(), 1);
    assert_eq!(lab.env.drops.total_segments(), 45);
    assert_eq!(lab.env.drops.total_bytes(), 68_130);
    assert_eq!(lab.env.arena.segmented(), 0);
    lab.check();
}

#[test]
fn e5_under_netem_the_parent_counts_the_segments_tbf_made() {
    // Lab 14's shape at 100 Mbit/s, [modern] netem accounting (netem's qlen
    // and backlog include its child): netem delay 20ms, then tbf (E5) with
    // a bfifo of 100 000 bytes (66 frames: 66 × 1514 = 99 924, 67 → 101 438)
    let mut lab = Lab::new(true);
    lab.tc(req(
        ParentSpec::Root,
        1,
        QdiscSpec::Netem(NetemSpec::delay_only(20 * MS)),
    ));
    lab.tc(req(CHILD, 2, tbf_e5(100_000)));
    let a = lab.gso(45);
    let b = lab.gso(45);
    assert_eq!(lab.enqueue(0, a), Verdict::Queued);
    assert_eq!(lab.enqueue(0, b), Verdict::Queued);
    // in the delay line: 2 entries, 136 260 bytes
    let ne = lab.stats(0);
    assert_eq!((ne.qlen, ne.backlog), (2, 136_260));
    lab.check();
    // at 20 ms netem moves both into the tbf, which splits them: the first
    // gives 45 entries, the second 21 (99 924 bytes in the bfifo) and 24
    // tail drops; then 33 leave from the full bucket
    let mut out = vec![];
    let wd = kick(&mut lab.tree, &mut lab.env, 20 * MS, &mut out);
    assert_eq!(out.len(), 33);
    assert_eq!(wd, Some(20 * MS + 118_080));
    let (ne, tb, bf) = (lab.stats(0), lab.stats(1), lab.stats(2));
    // tbf: 66 queued − 33 sent = 33 entries, 49 962 bytes; 24 drops
    assert_eq!((tb.qlen, tb.backlog, tb.drops), (33, 49_962, 24));
    assert_eq!((bf.qlen, bf.backlog, bf.drops), (33, 49_962, 24));
    // netem counted one entry per aggregate; Reduce::grew makes it follow
    // the split: 2 + (45 − 1) + (21 − 1) − 33 = 33 entries, 136 260 −
    // 24 × 1514 − 33 × 1514 = 49 962 bytes; a partial split is a success
    // for netem (tbf_segment returns NET_XMIT_SUCCESS): no netem drop
    assert_eq!((ne.qlen, ne.backlog, ne.drops), (33, 49_962, 0));
    // Sent: 33 pkt, 33 × 1514 = 49 962 bytes on every level
    assert_eq!((ne.packets, ne.bytes), (33, 49_962));
    assert_eq!((tb.packets, tb.bytes), (33, 49_962));
    // the 24 drops are segments of 1514 bytes at the interface
    assert_eq!(lab.env.drops.packets[DropReason::QueueFull.index()], 24);
    assert_eq!(lab.env.drops.total_segments(), 24);
    assert_eq!(lab.env.drops.total_bytes(), 24 * 1514);
    assert_eq!(lab.env.arena.segmented(), 2);
    lab.check();
    // the rest drains at one per 121 120 ns: the 66th leaves at
    // 20 ms + 118 080 + 32 × 121 120 = 20 ms + 3 993 920
    let rest = lab.drain(20 * MS + 118_080);
    assert_eq!(rest.len(), 33);
    assert_eq!(rest.last().unwrap().0, 20 * MS + 3_993_920);
    let (ne, tb) = (lab.stats(0), lab.stats(1));
    assert_eq!((ne.qlen, ne.backlog, tb.qlen, tb.backlog), (0, 0, 0, 0));
    assert_eq!((ne.packets, ne.bytes, ne.drops), (66, 99_924, 0));
    assert_eq!((tb.packets, tb.bytes, tb.drops), (66, 99_924, 24));
    lab.check();
}

#[test]
fn e5_under_netem_a_fully_refused_aggregate_is_one_netem_drop() {
    // bfifo of 1000 bytes: no 1514-byte segment fits → the split yields
    // nothing, tbf returns a drop: netem counts 1 drop and forgets the entry
    let mut lab = Lab::new(true);
    lab.tc(req(
        ParentSpec::Root,
        1,
        QdiscSpec::Netem(NetemSpec::delay_only(20 * MS)),
    ));
    lab.tc(req(CHILD, 2, tbf_e5(1000)));
    let a = lab.gso(45);
    lab.enqueue(0, a);
    let mut out = vec![];
    kick(&mut lab.tree, &mut lab.env, 20 * MS, &mut out);
    assert!(out.is_empty());
    let (ne, tb) = (lab.stats(0), lab.stats(1));
    assert_eq!((tb.qlen, tb.backlog, tb.drops), (0, 0, 45));
    assert_eq!((ne.qlen, ne.backlog, ne.drops), (0, 0, 1));
    assert_eq!(lab.env.drops.total_segments(), 45);
    assert_eq!(lab.env.drops.total_packets(), 45);
    lab.check();
}

#[test]
fn netem_limit_counts_aggregates_not_segments() {
    for modern in [false, true] {
        // netem delay 20ms, limit 1000 (P9): 1000 aggregates of 45 segments
        // (45 000 segments, 68 130 000 bytes) fit the delay line
        let mut lab = Lab::new(modern);
        lab.tc(req(
            ParentSpec::Root,
            1,
            QdiscSpec::Netem(NetemSpec::delay_only(20 * MS)),
        ));
        for k in 0..1000 {
            let id = lab.gso(45);
            assert_eq!(lab.enqueue(k * 1000, id), Verdict::Queued, "#{k}");
        }
        let ne = lab.stats(0);
        assert_eq!((ne.qlen, ne.backlog), (1000, 68_130_000));
        // the 1001st is dropped: one entry, 45 segments
        let id = lab.gso(45);
        assert_eq!(
            lab.enqueue(1_000_000, id),
            Verdict::Dropped(DropReason::NetemLimit)
        );
        assert_eq!(lab.stats(0).drops, 1);
        assert_eq!(lab.env.drops.total_segments(), 45);
        lab.check();
        // all leave 20 ms after arrival, whole; Sent 68130000 bytes 45000 pkt
        let out = lab.drain(20 * MS);
        assert_eq!(out.len(), 1000);
        assert!(out.iter().all(|&(_, len, segs)| len == AGG45 && segs == 45));
        assert_eq!(out[999].0, 20 * MS + 999_000);
        let ne = lab.stats(0);
        assert_eq!((ne.packets, ne.bytes, ne.qlen), (45_000, 68_130_000, 0));
        assert_eq!(lab.env.arena.segmented(), 0);
        lab.check();
    }
}

#[test]
fn pfifo_limit_counts_entries_and_bfifo_counts_pkt_len() {
    // pfifo limit 2: two 45-segment aggregates queue, the third is dropped
    let mut lab = Lab::new(false);
    lab.tc(req(
        ParentSpec::Root,
        1,
        QdiscSpec::Pfifo { limit: Some(2) },
    ));
    let ids: Vec<PacketId> = (0..3).map(|_| lab.gso(45)).collect();
    assert_eq!(lab.enqueue(0, ids[0]), Verdict::Queued);
    assert_eq!(lab.enqueue(0, ids[1]), Verdict::Queued);
    assert_eq!(
        lab.enqueue(0, ids[2]),
        Verdict::Dropped(DropReason::QueueFull)
    );
    let s = lab.stats(0);
    // backlog 136260b 2p, dropped 1 (one entry of 45 segments)
    assert_eq!((s.qlen, s.backlog, s.drops), (2, 136_260, 1));
    assert_eq!(lab.env.drops.total_segments(), 45);
    // a 1-segment frame is refused as well: the limit is entries
    let id = lab.env.pkt(100);
    assert_eq!(lab.enqueue(0, id), Verdict::Dropped(DropReason::QueueFull));
    let out = lab.drain(0);
    assert_eq!(out.len(), 2);
    let s = lab.stats(0);
    // Sent 136260 bytes 90 pkt
    assert_eq!((s.bytes, s.packets), (136_260, 90));
    lab.check();

    // bfifo limit 160000 (E4): 2 aggregates (136 260 ≤ 160 000), a third
    // would make 204 390 > 160 000; 15 more 1514-byte frames then fit
    // (136 260 + 15 × 1514 = 158 970), the 16th does not (160 484)
    let mut lab = Lab::new(false);
    lab.tc(req(
        ParentSpec::Root,
        1,
        QdiscSpec::Bfifo {
            limit: Some(160_000),
        },
    ));
    for _ in 0..2 {
        let id = lab.gso(45);
        assert_eq!(lab.enqueue(0, id), Verdict::Queued);
    }
    let id = lab.gso(45);
    assert_eq!(lab.enqueue(0, id), Verdict::Dropped(DropReason::QueueFull));
    for k in 0..16 {
        let id = lab.env.pkt(FULL);
        let v = lab.enqueue(0, id);
        assert_eq!(v == Verdict::Queued, k < 15, "frame {k}: {v:?}");
    }
    let s = lab.stats(0);
    assert_eq!((s.qlen, s.backlog, s.drops), (17, 158_970, 2));
    // a bfifo accepting up to exactly its limit: 2 × 68 130 = 136 260
    let mut lab = Lab::new(false);
    lab.tc(req(
        ParentSpec::Root,
        1,
        QdiscSpec::Bfifo {
            limit: Some(136_260),
        },
    ));
    let (x, y) = (lab.gso(45), lab.gso(45));
    assert_eq!(lab.enqueue(0, x), Verdict::Queued);
    assert_eq!(lab.enqueue(0, y), Verdict::Queued);
    let id = lab.env.pkt(60);
    assert_eq!(lab.enqueue(0, id), Verdict::Dropped(DropReason::QueueFull));
    let out = lab.drain(0);
    assert_eq!(out, vec![(0, AGG45, 45), (0, AGG45, 45)]);
    assert_eq!((lab.stats(0).packets, lab.stats(0).bytes), (90, 136_260));
    lab.check();
}

#[test]
fn netem_corrupt_segments_an_aggregate_and_corrupts_the_first() {
    // netem corrupt 100% (p = 2³² − 1) delay 1ms at the root: the aggregate
    // of 3 segments becomes 3 entries; every segment passes netem's enqueue
    // (as Linux re-enqueues them into netem), so with 100% all are corrupt
    let mut spec = NetemSpec::delay_only(MS);
    spec.corrupt = Some(NetemPercent {
        p: u32::MAX,
        corr: 0,
    });
    let mut lab = Lab::new(false);
    lab.tc(req(ParentSpec::Root, 1, QdiscSpec::Netem(spec)));
    let id = lab.gso(3);
    assert_eq!(lab.enqueue(0, id), Verdict::Queued);
    let ne = lab.stats(0);
    assert_eq!((ne.qlen, ne.backlog), (3, 3 * 1514));
    assert_eq!(lab.env.arena.segmented(), 1);
    assert_eq!(lab.env.arena.created_segments(), 3);
    let mut got = vec![];
    loop {
        let mut ctx = lab.env.ctx(MS);
        match lab.tree.dequeue(&mut ctx) {
            Some(p) => {
                let pk = *lab.env.arena.get(p);
                got.push((pk.len, pk.segs(), pk.corrupt, pk.payload));
                lab.env.arena.free(p);
            }
            None => break,
        }
    }
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|g| g.0 == 1514 && g.1 == 1 && g.2));
    // in sequence order: seq 1, 1449, 2897
    let seqs: Vec<u32> = got
        .iter()
        .map(|g| match g.3 {
            crate::packet::Payload::Tcp(h) => h.seq,
            _ => panic!(),
        })
        .collect();
    assert_eq!(seqs, vec![1, 1449, 2897]);
    let ne = lab.stats(0);
    assert_eq!((ne.packets, ne.bytes, ne.qlen), (3, 4542, 0));
    lab.check();

    // without corruption the aggregate stays one entry
    let mut lab = Lab::new(false);
    lab.tc(req(
        ParentSpec::Root,
        1,
        QdiscSpec::Netem(NetemSpec::delay_only(MS)),
    ));
    let id = lab.gso(3);
    lab.enqueue(0, id);
    assert_eq!(lab.stats(0).qlen, 1);
    assert_eq!(lab.env.arena.segmented(), 0);
}
