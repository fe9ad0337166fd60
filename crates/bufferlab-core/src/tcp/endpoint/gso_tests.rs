//! TSO/GSO at the sender and the receiver (issue 10, docs/semantics/tcp.md §2.1, §6.1,
//! §6.3, §17 item 9): `tcp_tso_autosize` vectors computed by hand, and a
//! harness pair with `gso_max_size` 65536 — aggregates, stretch ACKs, slow
//! start without an ABC cap, `rcv_mss` from `gso_size`, retransmissions
//! counted per segment.

use super::super::harness::*;
use super::*;
use crate::tcp::cc::{CcProfile, TCP_INFINITE_SSTHRESH};
use crate::time::{Rate, SimDuration};

/// Headers per segment with timestamps: Ethernet 14 + IP 20 + TCP 20 + TS 12.
const HDR: u32 = 66;
const MSS: u32 = 1448;

/// `tso_segs()` of an endpoint with the given profile, CC, `gso_max_size`,
/// pacing rate (bytes/s) and min RTT (µs), sending MSS 1448.
fn autosize(profile: CcProfile, cc: &str, gso_max: u32, pacing_rate: u64, min_rtt_us: u32) -> u32 {
    let c = TcpConfig {
        congestion: cc.to_string(),
        gso_max_size: gso_max,
        ..TcpConfig::for_profile(profile)
    };
    let mut ep = TcpEndpoint::connect(c, A_ADDR, B_ADDR, SimTime::ZERO, ComponentRng::new(1, "a"));
    ep.mss_cache = MSS;
    ep.cs.mss_cache = MSS;
    ep.cs.pacing_rate = pacing_rate;
    ep.rtt_min = MinMax::new(0, min_rtt_us);
    ep.tso_segs()
}

#[test]
fn tso_autosize_lab2019_vectors() {
    let lab = |rate| autosize(CcProfile::Lab2019, "cubic", 65_536, rate, 20_000);
    // bytes = min(rate >> 10, 65536 − 1 − 320 = 65215); segs = max(bytes / 1448, 2)
    // 1 Gbit/s: 125e6 >> 10 = 122070 → capped 65215 → 65215 / 1448 = 45 (45 × 1448 = 65160)
    assert_eq!(lab(125_000_000), 45);
    // 10 Gbit/s: still the 64 KB cap
    assert_eq!(lab(1_250_000_000), 45);
    // exactly at the cap: 65215 × 1024 = 66 780 160 → 65215 → 45;
    // one byte of rate below 45 × 1448 × 1024 = 66 723 840 → 65159 → 44
    assert_eq!(lab(66_780_160), 45);
    assert_eq!(lab(66_723_839), 44);
    assert_eq!(lab(66_723_840), 45);
    // 400 Mbit/s: 50e6 >> 10 = 48828 → 48828 / 1448 = 33 (33 × 1448 = 47784)
    assert_eq!(lab(50_000_000), 33);
    // 100 Mbit/s: 12.5e6 >> 10 = 12207 → 8 (8 × 1448 = 11584, 9 × 1448 = 13032)
    assert_eq!(lab(12_500_000), 8);
    // 23 168 000 B/s (2 × 160 × 1448 / 20 ms): >> 10 = 22625 → 15
    assert_eq!(lab(23_168_000), 15);
    // 10 Mbit/s: 1 250 000 >> 10 = 1220 < 1448 → 0 → min_tso_segs 2
    assert_eq!(lab(1_250_000), 2);
    // 2 × 10 × 1448 / 20 ms = 1 448 000 B/s (initial window): 1414 → 0 → 2
    assert_eq!(lab(1_448_000), 2);
    // no pacing rate yet
    assert_eq!(lab(0), 2);
    // [lab2019] has no RTT allowance: a 100 µs path changes nothing
    assert_eq!(
        autosize(CcProfile::Lab2019, "cubic", 65_536, 1_250_000, 100),
        2
    );
    assert_eq!(
        autosize(CcProfile::Lab2019, "reno", 65_536, 12_500_000, 100),
        8
    );
}

#[test]
fn tso_autosize_bbr_min_tso_segs() {
    // bbr_min_tso_segs: 1 below bbr_min_tso_rate 1.2 Mbit/s = 150 000 B/s, else 2
    for profile in [CcProfile::Lab2019, CcProfile::Modern] {
        let bbr = |rate| autosize(profile, "bbr", 65_536, rate, 20_000);
        // 100 000 B/s (800 kbit/s): 97 bytes → 0 segments → floor 1
        assert_eq!(bbr(100_000), 1, "{profile:?}");
        assert_eq!(bbr(149_999), 1, "{profile:?}");
        // 150 000 B/s: not below the threshold → floor 2
        assert_eq!(bbr(150_000), 2, "{profile:?}");
        // 1 Gbit/s: the cap as for every CC
        assert_eq!(bbr(125_000_000), 45, "{profile:?}");
        // 100 Mbit/s: 8, above both floors
        assert_eq!(bbr(12_500_000), 8, "{profile:?}");
    }
    // CUBIC's floor is 2 even at 800 kbit/s
    assert_eq!(
        autosize(CcProfile::Lab2019, "cubic", 65_536, 100_000, 20_000),
        2
    );
}

#[test]
fn tso_autosize_modern_vectors() {
    let m = |rate, rtt| autosize(CcProfile::Modern, "cubic", 65_536, rate, rtt);
    // bytes = rate >> 10; r = min_rtt_us >> 9; r < 32 → bytes += 65536 >> r;
    // bytes = min(bytes, 65536); segs = max(bytes / 1448, 2)
    // 20 ms: r = 39 ≥ 32 → no allowance; 12.5e6 → 12207 → 8
    assert_eq!(m(12_500_000, 20_000), 8);
    // 1 Gbit/s, 20 ms: 122070 → cap 65536 → 65536 / 1448 = 45 (45 × 1448 = 65160)
    assert_eq!(m(125_000_000, 20_000), 45);
    // no RTT sample yet (~0U): r huge → no allowance; 10 Mbit/s → 2
    assert_eq!(m(1_250_000, u32::MAX), 2);
    // 100 µs: r = 0 → + 65536 → 1220 + 65536 = 66756 → cap 65536 → 45
    assert_eq!(m(1_250_000, 100), 45);
    // 511 µs still r = 0; 512 µs → r = 1 → + 32768
    assert_eq!(m(0, 511), 45);
    // 1000 µs: r = 1 → 1220 + 32768 = 33988 → 23 (23 × 1448 = 33304, 24 × 1448 = 34752)
    assert_eq!(m(1_250_000, 1000), 23);
    // 2048 µs: r = 4 → 65536 >> 4 = 4096 → 1220 + 4096 = 5316 → 3
    assert_eq!(m(1_250_000, 2048), 3);
    // 5000 µs: r = 9 → + 128. 13 213 696 B/s = 12904 × 1024 → 12904 + 128 = 13032
    // = 9 × 1448 → 9; the same rate without the allowance gives 8 (lab2019)
    assert_eq!(m(13_213_696, 5000), 9);
    assert_eq!(
        autosize(CcProfile::Lab2019, "cubic", 65_536, 13_213_696, 5000),
        8
    );
    // 16 383 µs: r = 31 → 65536 >> 31 = 0 → nothing added; 16 384 µs: r = 32 → no term
    assert_eq!(m(13_213_696, 16_383), 8);
    assert_eq!(m(13_213_696, 16_384), 8);
    // the allowance alone at r = 5 (2560 µs): 65536 >> 5 = 2048 → 1 segment → floor 2
    assert_eq!(m(0, 2560), 2);
    // r = 3 (1536 µs): 8192 → 5 (5 × 1448 = 7240)
    assert_eq!(m(0, 1536), 5);
}

#[test]
fn tso_autosize_is_one_with_gso_off() {
    for profile in [CcProfile::Lab2019, CcProfile::Modern] {
        for cc in ["cubic", "reno", "bbr"] {
            for (rate, rtt) in [(125_000_000, 20_000), (1_250_000, 100), (0, u32::MAX)] {
                assert_eq!(autosize(profile, cc, 0, rate, rtt), 1, "{profile:?} {cc}");
            }
        }
    }
}

/// A lab2019 CC config with GSO on (a Mininet veth: 65536).
fn gso_cfg(cc: &str) -> TcpConfig {
    TcpConfig {
        gso_max_size: 65_536,
        ..cfg(cc)
    }
}

/// A receiver whose window never limits the sender in these runs.
fn roomy(mut c: TcpConfig) -> TcpConfig {
    c.rmem = [4096, 4 << 20, 16 << 20];
    c
}

#[test]
fn gso_pair_sends_aggregates_with_per_segment_headers() {
    let mut p = Pair::new(
        gso_cfg("reno"),
        roomy(gso_cfg("reno")),
        SimDuration::from_millis(10),
    );
    p.ab.rate = Some(Rate::from_bps(1_000_000_000));
    p.to_write = u64::MAX;
    p.run_until(ms(400));
    let data: Vec<_> = p.data_from_a().collect();
    assert!(!data.is_empty());
    let mut agg = 0;
    let mut full = 0;
    let mut segs = 0u64;
    for s in &data {
        let g = s.seg;
        assert!(g.gso_segs >= 1);
        assert_eq!(g.gso_size, MSS);
        // every piece a full MSS but the last, which may be shorter (the
        // tail of an iperf3-style 128 KiB write: 131072 = 90 × 1448 + 752)
        assert!(g.payload_len > (g.gso_segs - 1) * MSS, "{g:?}");
        assert!(g.payload_len <= g.gso_segs * MSS, "{g:?}");
        // one 66-byte header per segment: frame_len = segs × 66 + payload,
        // 1514 per full segment
        assert_eq!(g.frame_len(), g.gso_segs * HDR + g.payload_len);
        if g.payload_len == g.gso_segs * MSS {
            assert_eq!(g.frame_len(), g.gso_segs * 1514);
            full += 1;
        }
        // no skb exceeds the 64 KB cap: 45 segments (45 × 1448 = 65160 ≤ 65215)
        assert!(g.gso_segs <= 45, "{g:?}");
        if g.gso_segs > 1 {
            agg += 1;
        }
        segs += g.gso_segs as u64;
    }
    assert!(agg > data.len() / 2, "{agg} aggregates of {}", data.len());
    assert!(
        full > data.len() / 2,
        "{full} all-full skbs of {}",
        data.len()
    );
    // the initial window: srtt 20 ms, cwnd 10 → pacing rate 2 × 10 × 1448 /
    // 20 ms = 1 448 000 B/s → 1414 bytes per ms → min_tso_segs 2: five
    // aggregates of two segments at t = 20 ms
    let first: Vec<u32> = data
        .iter()
        .filter(|s| s.t == data[0].t)
        .map(|s| s.seg.gso_segs)
        .collect();
    assert_eq!(first, vec![2; 5]);
    // segments counted by the sender: data_segs_out counts every segment
    let i = p.a.info();
    assert_eq!(i.data_segs_out as u64, segs);
    assert_eq!(i.total_retrans, 0);
    // larger aggregates once the pacing rate grows (≥ 2 × 45 × 1448 / srtt)
    assert!(data.iter().any(|s| s.seg.gso_segs >= 20));
}

#[test]
fn receiver_acks_each_aggregate_once_and_takes_rcv_mss_from_gso_size() {
    let mut p = Pair::new(
        gso_cfg("reno"),
        roomy(gso_cfg("reno")),
        SimDuration::from_millis(10),
    );
    p.ab.rate = Some(Rate::from_bps(1_000_000_000));
    p.to_write = u64::MAX;
    p.run_until(ms(300));
    // rcv_mss = gso_size 1448; an aggregate's whole length (≥ 2896) would
    // have been clamped to advmss 1460
    assert_eq!(p.b().info().rcv_mss, MSS);
    // every aggregate that reached b is ACKed at its arrival instant by
    // exactly one ACK covering it (more than one full segment received:
    // tcp_ack_snd_check sends at once)
    let b_acks: Vec<(SimTime, u32)> = p.segs_from_b().map(|s| (s.t, s.seg.hdr.ack)).collect();
    let mut checked = 0;
    for a in p.arrivals.iter().filter(|s| s.from_a && s.seg.gso_segs > 1) {
        let end = a.seg.hdr.seq.wrapping_add(a.seg.payload_len);
        let n = b_acks
            .iter()
            .filter(|&&(t, ack)| ack == end && t == a.t)
            .count();
        assert_eq!(n, 1, "aggregate {:?} at {}", a.seg, a.t);
        checked += 1;
    }
    assert!(checked > 50, "{checked}");
    // and b sends no more pure ACKs than aggregates + single segments arrived
    let arrived = p
        .arrivals
        .iter()
        .filter(|s| s.from_a && s.seg.payload_len > 0)
        .count();
    let acks = p.segs_from_b().filter(|s| s.seg.payload_len == 0).count();
    assert!(acks <= arrived + 2, "{acks} ACKs for {arrived} skbs");
    // the receiver counts segments, not skbs (tcp_segs_in adds gso_segs)
    let segs: u32 = p
        .arrivals
        .iter()
        .filter(|s| s.from_a && s.seg.payload_len > 0)
        .map(|s| s.seg.gso_segs)
        .sum();
    assert_eq!(p.b().info().data_segs_in, segs);
}

#[test]
fn slow_start_grows_by_the_segments_a_stretch_ack_covers() {
    // docs/semantics/tcp.md §17 item 9: no ABC cap — an ACK for n segments adds n in slow start
    let mut p = Pair::new(
        gso_cfg("reno"),
        roomy(gso_cfg("reno")),
        SimDuration::from_millis(10),
    );
    p.ab.rate = Some(Rate::from_bps(1_000_000_000));
    p.to_write = u64::MAX;
    p.run_until(ms(200));
    assert!(
        p.a.info().snd_ssthresh >= TCP_INFINITE_SSTHRESH,
        "still in slow start"
    );
    // pair each ACK arrival at a with the sample taken right after it
    let acks: Vec<(SimTime, u32)> = p
        .arrivals
        .iter()
        .filter(|s| !s.from_a)
        .map(|s| (s.t, s.seg.hdr.ack))
        .collect();
    let iss = p.a.iss();
    let mut highest = iss.wrapping_add(1);
    let mut si = 0;
    let mut prev_cwnd = 10;
    let mut stretch = 0;
    let mut grown = 0u32;
    for (t, ack) in acks {
        while p.samples[si].t < t {
            prev_cwnd = p.samples[si].cwnd;
            si += 1;
        }
        let s = p.samples[si];
        assert_eq!(s.t, t);
        si += 1;
        let newly = ack.wrapping_sub(highest);
        if (newly as i32) > 0 {
            let n = newly / MSS;
            assert_eq!(newly % MSS, 0);
            assert_eq!(s.cwnd, prev_cwnd + n, "ACK of {n} segments at {t}");
            grown += n;
            if n > 2 {
                stretch += 1;
            }
            highest = ack;
        }
        prev_cwnd = s.cwnd;
    }
    assert!(stretch > 10, "{stretch} stretch ACKs");
    // cwnd = IW 10 + every segment ACKed
    assert_eq!(p.a.info().snd_cwnd, 10 + grown);
    // tcpi_bytes_acked also counts the SYN's sequence number (1)
    assert_eq!(p.a.info().bytes_acked, grown as u64 * MSS as u64 + 1);
}

#[test]
fn a_lost_aggregate_counts_one_retransmission_per_segment() {
    // find an aggregate of at least 5 segments in a clean run (past the
    // initial window, so later data SACKs around the hole)
    let run = |drop: Option<u32>| {
        let mut p = Pair::new(
            gso_cfg("reno"),
            roomy(gso_cfg("reno")),
            SimDuration::from_millis(10),
        );
        p.ab.rate = Some(Rate::from_bps(100_000_000));
        p.to_write = u64::MAX;
        if let Some(off) = drop {
            let isn = p.a.iss();
            p.ab.drop = Some(drop_first_tx(isn, vec![off]));
        }
        p.run_until(ms(600));
        p
    };
    let clean = run(None);
    assert_eq!(clean.a.info().total_retrans, 0);
    let isn = clean.a.iss();
    let victim = clean
        .data_from_a()
        .skip(10)
        .find(|s| s.seg.gso_segs >= 5)
        .unwrap()
        .seg;
    let n = victim.gso_segs;
    let off = victim.hdr.seq.wrapping_sub(isn.wrapping_add(1));
    let p = run(Some(off));
    assert_eq!(p.ab.dropped, 1, "one aggregate dropped");
    let i = p.a.info();
    // every segment of the lost skb was retransmitted once: n retransmissions,
    // n × 1448 bytes (docs/semantics/tcp.md §6.5, §17 item 3)
    assert_eq!(i.total_retrans, n, "{i:?}");
    assert_eq!(i.bytes_retrans, n as u64 * MSS as u64);
    // the retransmissions cover exactly the lost range
    let lo = victim.hdr.seq;
    let hi = lo.wrapping_add(victim.payload_len);
    let mut covered = 0;
    let mut first_tx_seen = false;
    for s in p.data_from_a() {
        let seq = s.seg.hdr.seq;
        if seq.wrapping_sub(lo) < hi.wrapping_sub(lo) {
            if seq == lo && !first_tx_seen {
                first_tx_seen = true;
                continue;
            }
            covered += s.seg.gso_segs;
        }
    }
    assert_eq!(covered, n);
    assert!(p.read > 1_000_000);
}

#[test]
fn a_paced_retransmission_leaves_as_one_skb_of_free_cwnd_and_tso_goal() {
    // tcp_xmit_retransmit_queue → tcp_retransmit_skb(sk, skb, segs): one skb
    // of min(cwnd − in_flight, tcp_tso_segs) lost segments, then the pacing
    // check; pacing advances once for the skb's bytes (net/ipv4/tcp_output.c)
    let mut p = Pair::new(
        gso_cfg("bbr"),
        roomy(gso_cfg("bbr")),
        SimDuration::from_millis(10),
    );
    p.ab.rate = Some(Rate::from_bps(100_000_000));
    p.to_write = u64::MAX;
    p.run_until(ms(300));
    let a = &mut p.a;
    assert!(a.needs_internal_pacing());
    assert!(a.data_segs_out >= 10);
    assert!(a.sb.q.len() >= 8, "{} segments out", a.sb.q.len());
    // the first seven segments out are lost
    for i in 0..7 {
        assert_eq!(a.sb.q[i].sacked, 0);
        assert!(a.sb.mark_lost(i));
        a.sb.lost_out += 1;
    }
    // 10 MB/s: tso goal (10 000 000 >> 10) / 1448 = 9765 / 1448 = 6 segments
    a.cs.pacing_rate = 10_000_000;
    assert_eq!(a.tso_segs(), 6);
    let room = 10;
    a.set_cwnd(a.in_flight() + room);
    let t0 = a.now.as_nanos();
    a.wstamp_ns = t0;
    a.out.clear();
    let lost_seq = a.sb.q[0].seq;
    a.xmit_retransmit_queue();
    // one skb of 6 segments (the tso goal), and pacing holds the 7th:
    // 6 × 1448 = 8688 bytes at 10 MB/s = 868 800 ns, no credit (stamp = now)
    let sent: Vec<_> = a.out.drain(..).collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        (sent[0].hdr.seq, sent[0].gso_segs, sent[0].payload_len),
        (lost_seq, 6, 6 * MSS)
    );
    assert_eq!(a.wstamp_ns, t0 + 868_800);
    assert_eq!(a.sb.retrans_out, 6);
    assert_eq!(a.total_retrans, 6);
    // at its departure time the 7th goes alone: 1448 bytes = 144 800 ns
    a.set_clock(SimTime::from_nanos(t0 + 868_800));
    a.xmit_retransmit_queue();
    let sent: Vec<_> = a.out.drain(..).collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(
        (sent[0].hdr.seq, sent[0].gso_segs),
        (lost_seq.wrapping_add(6 * MSS), 1)
    );
    assert_eq!(a.wstamp_ns, t0 + 868_800 + 144_800);
    assert_eq!(a.sb.retrans_out, 7);
}

#[test]
fn gso_off_sends_one_segment_per_skb() {
    let mut p = Pair::new(
        cfg("reno"),
        roomy(cfg("reno")),
        SimDuration::from_millis(10),
    );
    p.ab.rate = Some(Rate::from_bps(1_000_000_000));
    p.to_write = u64::MAX;
    p.run_until(ms(300));
    let mut n = 0;
    for s in p.data_from_a() {
        assert_eq!(s.seg.gso_segs, 1);
        assert!(s.seg.payload_len <= MSS);
        assert_eq!(s.seg.frame_len(), HDR + s.seg.payload_len);
        n += 1;
    }
    assert!(n > 1000, "{n}");
    let i = p.a.info();
    assert_eq!(i.data_segs_out, n);
    // the initial window leaves as ten single segments
    let data: Vec<_> = p.data_from_a().collect();
    assert_eq!(data.iter().filter(|s| s.t == data[0].t).count(), 10);
    // receiver: delayed ACKs every second segment at most (no stretch ACKs
    // beyond the quickack/delack rules): ACKs ≥ segments / 2
    let acks = p.segs_from_b().filter(|s| s.seg.payload_len == 0).count();
    assert!(acks * 2 + 2 >= n as usize, "{acks} ACKs for {n}");
    assert_eq!(p.b().info().rcv_mss, MSS);
}
