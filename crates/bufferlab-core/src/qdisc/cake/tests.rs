//! CAKE's arithmetic against hand-computed vectors (docs/semantics/qdiscs.md §14).
use super::*;
use crate::packet::{tcp_flags, Ipv4, Payload, Proto, TcpHeader};
use crate::qdisc::spec::CakeDiffserv;
use crate::qdisc::tree::harness::Env;

const MS: i64 = 1_000_000;

fn cake(spec: CakeSpec) -> Cake {
    Cake::new(&spec, 1, "t", SimTime::from_nanos(0)).unwrap()
}

fn pkt(env: &mut Env, len: u32, src: u32, dst: u32, sport: u16) -> PacketId {
    let id = env.pkt(len);
    let p = env.arena.get_mut(id);
    p.src = Ipv4(src);
    p.dst = Ipv4(dst);
    p.src_port = sport;
    p.dst_port = 5001;
    id
}

#[test]
fn overhead_presets_compute_the_kernels_lengths() {
    let raw = Overhead {
        flag: false,
        overhead: 0,
        mpu: 0,
        atm: CakeAtm::Noatm,
    };
    // raw: the frame as the qdisc sees it, MAC header included
    assert_eq!(raw.adjust(1514, 14), (1514, 1514));
    // `ethernet`: 1500 + 38 = 1538; a 54-byte ACK: 40 + 38 = 78, raised to mpu 84
    let eth = Overhead {
        flag: true,
        overhead: 38,
        mpu: 84,
        atm: CakeAtm::Noatm,
    };
    assert_eq!(eth.adjust(1514, 14), (1500, 1538));
    assert_eq!(eth.adjust(54, 14), (40, 84));
    // `pppoe-llcsnap` (ATM, +40): 1540 B = 32.08 cells → 33 cells of 53 = 1749
    let atm = Overhead {
        flag: true,
        overhead: 40,
        mpu: 0,
        atm: CakeAtm::Atm,
    };
    assert_eq!(atm.adjust(1514, 14), (1500, 1749));
    // `conservative` (ATM, +48): ACK 40 + 48 = 88 → 2 cells = 106
    let cons = Overhead {
        overhead: 48,
        ..atm
    };
    assert_eq!(cons.adjust(54, 14), (40, 106));
    // exactly one cell: 48 → 53
    assert_eq!(cons.adjust(14, 14), (0, 53));
    // `bridged-ptm` (+22, PTM 64/65): 1522 + ceil(1522/64) = 1522 + 24 = 1546
    let ptm = Overhead {
        flag: true,
        overhead: 22,
        mpu: 0,
        atm: CakeAtm::Ptm,
    };
    assert_eq!(ptm.adjust(1514, 14), (1500, 1546));
    // 64 bytes of PTM payload cost exactly one extra byte
    assert_eq!(ptm.adjust(56, 14), (42, 65));
    // `docsis` (+18, mpu 64): 1518; a 60-byte frame 46 + 18 = 64
    let docsis = Overhead {
        flag: true,
        overhead: 18,
        mpu: 64,
        atm: CakeAtm::Noatm,
    };
    assert_eq!(docsis.adjust(1514, 14), (1500, 1518));
    assert_eq!(docsis.adjust(60, 14), (46, 64));
    // a negative overhead
    let neg = Overhead {
        flag: true,
        overhead: -4,
        mpu: 0,
        atm: CakeAtm::Noatm,
    };
    assert_eq!(neg.adjust(1514, 14), (1500, 1496));
    // u32 arithmetic as in C: −64 on a 42-byte frame wraps, then 48/53 wraps too
    let wrap = Overhead {
        overhead: -64,
        atm: CakeAtm::Atm,
        ..neg
    };
    assert_eq!(wrap.adjust(42, 14), (28, 0));
}

#[test]
fn set_rate_makes_time_per_byte_and_the_codel_parameters() {
    // 10 Mbit/s = 1 250 000 B/s: 800 ns per byte exactly, as 800·2²⁴ >> 24
    let q = cake(CakeSpec {
        bandwidth: Some(1_250_000),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    assert_eq!(q.tin_rate(0), (13_421_772_800, 24, 305, 65535));
    let cp = q.tin_params(0);
    assert_eq!(
        (cp.mtu_time, cp.target, cp.interval),
        (1_211_200, 5_000_000, 100_000_000)
    );
    // 1 Mbit/s: 8000 ns/byte; mtu_time 12.112 ms > 5 ms·2/3, so
    // target = 1.5 · 12.112 = 18.168 ms, interval = 100 + 18.168 − 5 ms
    let q = cake(CakeSpec {
        bandwidth: Some(125_000),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    assert_eq!(q.tin_rate(0), (16_777_216_000, 21, 300, 65535));
    let cp = q.tin_params(0);
    assert_eq!(
        (cp.mtu_time, cp.target, cp.interval),
        (12_112_000, 18_168_000, 113_168_000)
    );
    // 3 Mbit/s: floor(1e9·2³⁴ / 375 000) shifted to 34 bits
    let q = cake(CakeSpec {
        bandwidth: Some(375_000),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    assert_eq!(q.tin_rate(0).0, 11_184_810_666);
    assert_eq!(q.tin_rate(0).1, 22);
    assert_eq!(q.tin_params(0).mtu_time, 4_037_333);
}

#[test]
fn diffserv3_tins_share_out_the_rate() {
    // tin 0 best effort at the full rate, tin 1 bulk at 1/16, tin 2 voice at 1/4
    let q = cake(CakeSpec {
        bandwidth: Some(1_250_000),
        ..Default::default()
    });
    let x = q.xstats();
    let tins = x["tins"].as_array().unwrap();
    // dumped in bulk_order: bulk, best effort, voice
    let rates: Vec<u64> = tins
        .iter()
        .map(|t| t["threshold_rate"].as_u64().unwrap())
        .collect();
    assert_eq!(rates, vec![78_125, 1_250_000, 312_500]);
    let quanta: Vec<u64> = tins
        .iter()
        .map(|t| t["flow_quantum"].as_u64().unwrap())
        .collect();
    // 78 125 >> 12 = 19 → 300; 1 250 000 >> 12 = 305; 312 500 >> 12 = 76 → 300
    assert_eq!(quanta, vec![300, 305, 300]);
    assert_eq!(q.tin_rate(1).3, 64);
    assert_eq!(q.tin_rate(2).3, 256);
    // memory: max(1 250 000 · 100 000 / 250 000, 4 MiB) = 4 MiB
    assert_eq!(q.buffer_limit(), 4 << 20);
    // unlimited: capped at limit · mtu = 10240 · 1514
    assert_eq!(cake(CakeSpec::default()).buffer_limit(), 15_503_360);
    let q = cake(CakeSpec {
        memlimit: Some(1_000_000),
        ..Default::default()
    });
    assert_eq!(q.buffer_limit(), 1_000_000);
}

#[test]
fn dscp_selects_the_tin_and_wash_clears_it() {
    let mut q = cake(CakeSpec {
        diffserv: Some(CakeDiffserv::Diffserv4),
        wash: Some(true),
        ..Default::default()
    });
    let mut env = Env::default();
    let id = env.pkt(100);
    let p = env.arena.get_mut(id);
    // AF41 (34) → video (2), CS4 (32) → voice (3), CS1 (8) → bulk (1), EF (46) → voice
    for (dscp, tin) in [(34u8, 2usize), (32, 3), (8, 1), (46, 3), (0, 0), (10, 0)] {
        p.tos = dscp << 2 | 0b10;
        assert_eq!(q.select_tin(p), tin, "dscp {dscp}");
        // washed: DSCP cleared, ECN kept
        assert_eq!(p.tos, 0b10);
    }
    q.cfg.tin_mode = CakeDiffserv::Diffserv3;
    q.reconfigure(&mut Vec::new());
    q.cfg.wash = false;
    for (dscp, tin) in [
        (46u8, 2usize),
        (44, 2),
        (4, 2),
        (48, 2),
        (8, 1),
        (1, 1),
        (34, 0),
    ] {
        p.tos = dscp << 2;
        assert_eq!(q.select_tin(p), tin, "dscp {dscp}");
        assert_eq!(p.tos, dscp << 2);
    }
    q.cfg.tin_mode = CakeDiffserv::Diffserv8;
    q.reconfigure(&mut Vec::new());
    for (dscp, tin) in [
        (0u8, 2usize),
        (1, 0),
        (8, 1),
        (46, 6),
        (48, 7),
        (16, 5),
        (34, 3),
    ] {
        p.tos = dscp << 2;
        assert_eq!(q.select_tin(p), tin, "dscp {dscp}");
    }
    q.cfg.tin_mode = CakeDiffserv::Precedence;
    q.reconfigure(&mut Vec::new());
    p.tos = 46 << 2;
    assert_eq!(q.select_tin(p), 5);
}

#[test]
fn inv_sqrt_cache_holds_four_newton_steps_per_count() {
    let c = inv_sqrt_cache();
    assert_eq!(c[0], 0xFFFF_FFFF);
    assert_eq!(c[1], 0xFFFF_FFFF);
    assert_eq!(c[2], 0xB4EA_D8A0); // 0.7071
    assert_eq!(c[4], 0x7FFF_FFFF); // 0.5
    assert_eq!(c[9], 0x5555_5555); // 1/3
                                   // the control law spacing at interval 100 ms
    let spacing: Vec<i64> = [1usize, 2, 3, 4]
        .iter()
        .map(|&n| CobaltVars::control(0, 100_000_000, c[n]))
        .collect();
    assert_eq!(
        spacing,
        vec![99_999_999, 70_670_846, 57_735_025, 49_999_999]
    );
}

#[test]
fn cobalt_drop_schedule() {
    let p = CobaltParams {
        interval: 100_000_000,
        target: 5_000_000,
        mtu_time: 0,
        p_inc: 1 << 24,
        p_dec: 1 << 20,
    };
    let t0 = 1000 * MS;
    let mut v = CobaltVars::new();
    let mut not_ect = || false;
    let mut ect = || true;
    let mut coin = || -> u32 { panic!("BLUE is quiescent") };
    // a fresh flow: rec_inv_sqrt is 0, so the schedule starts at once
    assert_eq!(
        v.should_drop(&p, t0, 10_000_000, 0, &mut not_ect, &mut coin),
        Signal::Deliver
    );
    assert_eq!((v.dropping, v.count, v.drop_next), (true, 1, t0));
    // the next packet above target 1 ms later is due: dropped, count 2,
    // next signal 100 ms / √2 later
    assert_eq!(
        v.should_drop(&p, t0 + MS, 10_000_000, 0, &mut not_ect, &mut coin),
        Signal::Congested
    );
    assert_eq!((v.count, v.drop_next), (2, t0 + 70_670_846));
    assert_eq!(
        v.should_drop(&p, t0 + 2 * MS, 10_000_000, 0, &mut not_ect, &mut coin),
        Signal::Deliver
    );
    assert_eq!(
        v.should_drop(&p, t0 + 70_670_846, 10_000_000, 0, &mut not_ect, &mut coin),
        Signal::Congested
    );
    assert_eq!((v.count, v.drop_next), (3, t0 + 128_405_871));
    // an ECN-capable packet is marked instead
    assert_eq!(
        v.should_drop(&p, t0 + 128_405_871, 10_000_000, 0, &mut ect, &mut coin),
        Signal::Deliver
    );
    assert!(v.ecn_marked);
    assert_eq!((v.count, v.drop_next), (4, t0 + 178_405_870));
    // below target at 300 ms: the schedule unwinds while it is due
    // (count 4 → 3 → 2, drop_next + 57.7 ms + 70.7 ms)
    assert_eq!(
        v.should_drop(&p, t0 + 300 * MS, MS as u64, 0, &mut not_ect, &mut coin),
        Signal::Deliver
    );
    assert!(!v.dropping);
    assert_eq!((v.count, v.drop_next), (2, t0 + 306_811_741));
    // sojourn must also exceed 4 MTU times, and 2 per bulk flow (ingress)
    let slow = CobaltParams {
        mtu_time: 12_112_000,
        ..p
    };
    let mut w = CobaltVars::new();
    w.should_drop(&slow, t0, 40_000_000, 0, &mut not_ect, &mut coin);
    assert!(!w.dropping, "40 ms < 4 · 12.112 ms");
    w.should_drop(&slow, t0, 50_000_000, 3, &mut not_ect, &mut coin);
    assert!(!w.dropping, "50 ms < 2 · 3 · 12.112 ms");
    w.should_drop(&slow, t0, 50_000_000, 2, &mut not_ect, &mut coin);
    assert!(w.dropping);
}

#[test]
fn blue_rises_on_overflow_and_decays_on_empty() {
    let p = CobaltParams {
        interval: 100_000_000,
        target: 5_000_000,
        mtu_time: 0,
        p_inc: 1 << 24,
        p_dec: 1 << 20,
    };
    let mut v = CobaltVars::new();
    assert!(v.queue_full(&p, 10 * MS));
    assert_eq!((v.p_drop, v.count, v.dropping), (1 << 24, 1, true));
    // within one target of the last change: no change
    assert!(!v.queue_full(&p, 14 * MS));
    assert_eq!(v.p_drop, 1 << 24);
    assert!(!v.queue_full(&p, 16 * MS));
    assert_eq!(v.p_drop, 2 << 24);
    // BLUE drops what CoDel lets through, with probability p_drop / 2³²
    let mut not_ect = || false;
    let mut low = || 0u32;
    let mut high = || u32::MAX;
    let mut w = v;
    w.count = 0;
    w.dropping = false;
    assert_eq!(
        w.should_drop(&p, 17 * MS, 0, 0, &mut not_ect, &mut low),
        Signal::Flood
    );
    assert_eq!(
        w.should_drop(&p, 17 * MS, 0, 0, &mut not_ect, &mut high),
        Signal::Deliver
    );
    assert!(!v.queue_empty(&p, 20 * MS), "within one target: no change");
    assert_eq!(v.p_drop, 2 << 24);
    assert!(!v.queue_empty(&p, 22 * MS));
    assert_eq!(v.p_drop, (2 << 24) - (1 << 20));
}

#[test]
fn shaper_releases_packets_at_the_rate() {
    // 10 Mbit/s, raw: 1514 B every 1.2112 ms; the failsafe runs 1.5× slower
    let mut q = cake(CakeSpec {
        bandwidth: Some(1_250_000),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    for _ in 0..3 {
        let id = pkt(&mut env, 1514, 1, 2, 1000);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
    }
    let mut ctx = env.ctx(0);
    assert!(q.dequeue(&mut ctx, &mut reduce).is_some());
    assert_eq!(ctx.watchdog, Some(SimTime::from_nanos(1_211_200)));
    assert_eq!(
        (q.time_next_packet, q.failsafe_next_packet),
        (1_211_200, 1_816_800)
    );
    let mut ctx = env.ctx(1_000_000);
    assert!(q.dequeue(&mut ctx, &mut reduce).is_none());
    assert_eq!(ctx.watchdog, Some(SimTime::from_nanos(1_211_200)));
    assert_eq!(q.stats().overlimits, 1);
    let mut ctx = env.ctx(1_211_200);
    assert!(q.dequeue(&mut ctx, &mut reduce).is_some());
    assert_eq!(q.time_next_packet, 2_422_400);
    // the `ethernet` preset charges 1538 B: 1.2304 ms
    let mut q = cake(CakeSpec {
        bandwidth: Some(1_250_000),
        diffserv: Some(CakeDiffserv::Besteffort),
        overhead: Some(38),
        mpu: Some(84),
        ..Default::default()
    });
    let id = pkt(&mut env, 1514, 1, 2, 1000);
    q.enqueue(&mut env.ctx(0), &mut reduce, id);
    assert!(q.dequeue(&mut env.ctx(0), &mut reduce).is_some());
    assert_eq!(q.time_next_packet, 1_230_400);
    let x = q.xstats();
    assert_eq!(
        (x["max_network_size"].as_u64(), x["max_adj_size"].as_u64()),
        (Some(1500), Some(1538))
    );
    assert_eq!(x["avg_hdr_offset"].as_u64(), Some(0)); // (14·2¹⁶/256 + 2¹⁵) >> 16
}

/// Bytes each of the two sending hosts gets out of a backlogged CAKE:
/// host A (10.0.0.1) with `na` flows to 10.0.0.3, host B with 1 flow to
/// 10.0.0.4.
fn host_shares(mode: CakeFlowMode, na: u16) -> (u64, u64) {
    let mut q = cake(CakeSpec {
        flowmode: Some(mode),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    for _ in 0..400 {
        for f in 0..na {
            let id = pkt(&mut env, 1514, 0x0a00_0001, 0x0a00_0003, 40_000 + f);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        let id = pkt(&mut env, 1514, 0x0a00_0002, 0x0a00_0004, 50_000);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
    }
    let (mut a, mut b) = (0, 0);
    for _ in 0..600 {
        let id = q.dequeue(&mut env.ctx(0), &mut reduce).unwrap();
        let p = env.arena.get(id);
        if p.src.0 == 0x0a00_0001 {
            a += p.len as u64;
        } else {
            b += p.len as u64;
        }
        env.arena.free(id);
    }
    assert_eq!(reduce, Reduce::default());
    assert_eq!(q.stored(), q.stats().qlen);
    (a, b)
}

#[test]
fn triple_isolate_shares_by_host_flows_by_flow() {
    // per host: 8 flows of host A each get quantum/8, B's one flow a whole one
    let (a, b) = host_shares(CakeFlowMode::TripleIsolate, 8);
    let share = a as f64 / (a + b) as f64;
    assert!(
        (0.45..0.55).contains(&share),
        "triple-isolate A share {share}"
    );
    let (a, b) = host_shares(CakeFlowMode::DualSrchost, 8);
    let share = a as f64 / (a + b) as f64;
    assert!(
        (0.45..0.55).contains(&share),
        "dual-srchost A share {share}"
    );
    // per flow: 8 : 1
    let (a, b) = host_shares(CakeFlowMode::Flows, 8);
    let share = a as f64 / (a + b) as f64;
    assert!((0.85..0.93).contains(&share), "flows A share {share}");
}

#[test]
fn host_quantum_is_the_flow_quantum_over_the_bulk_count() {
    let mut q = cake(CakeSpec::default());
    let b = &mut q.tins[0];
    b.flow_quantum = 1514;
    b.flows[5].srchost = 9;
    b.flows[5].dsthost = 11;
    b.hosts[9].src_bulk = 8;
    b.hosts[11].dst_bulk = 3;
    // 1514 · (65535 / 8 = 8191) >> 16 = 189, +1 with a dither of 0xFFFF·2¹⁶
    assert_eq!(b.flow_quantum_for(5, 7, 0), 189);
    assert_eq!(b.flow_quantum_for(5, 7, u32::MAX), 190);
    // dual-dsthost looks at the destination only: 65535 / 3 = 21845 → 504
    assert_eq!(b.flow_quantum_for(5, 6, 0), 504);
    // flows mode: no host load, 1514 · 65535 >> 16 = 1513
    assert_eq!(b.flow_quantum_for(5, 4, 0), 1513);
}

#[test]
fn memory_limit_drops_from_the_longest_queue() {
    let mut q = cake(CakeSpec {
        memlimit: Some(10_000),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    // truesize 1514 + 768 = 2282: the fifth packet takes the total to 11 410
    for i in 0..5u32 {
        let id = pkt(&mut env, 1514, 1, 2, 1000);
        env.arena.get_mut(id).seq = i as u64;
        assert_eq!(
            q.enqueue(&mut env.ctx(1_000_000_000), &mut reduce, id),
            Verdict::Queued
        );
    }
    assert_eq!((reduce.qlen, reduce.backlog, reduce.drops), (1, 1514, 1));
    assert_eq!((q.stats().qlen, q.stats().drops), (4, 1));
    assert_eq!(q.buffer_used, 4 * 2282);
    assert_eq!((q.stored(), q.held()), (4, 4));
    assert_eq!(q.xstats()["drop_overlimit"].as_u64(), Some(1));
    assert_eq!(env.drops.packets[DropReason::QueueFull.index()], 1);
    // the head went: the next out is the second packet
    let id = q.dequeue(&mut env.ctx(1_000_000_000), &mut reduce).unwrap();
    assert_eq!(env.arena.get(id).seq, 1);
    // BLUE of that flow went up
    let f = q.tins[0]
        .flows
        .iter()
        .find(|f| !f.queue.is_empty())
        .unwrap();
    assert_eq!(f.cvars.p_drop, 1 << 24);
}

fn ack(env: &mut Env, ack: u32, flags: u8) -> PacketId {
    let id = pkt(env, 66, 0x0a00_0003, 0x0a00_0001, 5001);
    let p = env.arena.get_mut(id);
    p.proto = Proto::Tcp;
    p.payload = Payload::Tcp(TcpHeader {
        ack,
        flags,
        ts: true,
        tsval: ack,
        tsecr: 7,
        ..Default::default()
    });
    p.len = p.header_len();
    id
}

#[test]
fn ack_filter_drops_redundant_pure_acks() {
    for (mode, left) in [
        (CakeAckFilter::Filter, 2u64),
        (CakeAckFilter::Aggressive, 1),
    ] {
        let mut q = cake(CakeSpec {
            ack_filter: Some(mode),
            ..Default::default()
        });
        let mut env = Env::default();
        let mut reduce = Reduce::default();
        for a in [1000u32, 2000] {
            let id = ack(&mut env, a, tcp_flags::ACK);
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
        // the third cumulative ACK: two older eligible ACKs → the first goes
        // (normal); aggressive already dropped one on the second ACK
        let id = ack(&mut env, 3000, tcp_flags::ACK);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
        assert_eq!(q.stats().qlen, left, "{mode:?}");
        assert_eq!(env.drops.packets[DropReason::AckFilter.index()], 3 - left);
        assert_eq!(q.xstats()["tins"][1]["ack_drops"].as_u64(), Some(3 - left));
        // an ACK carrying ECE: the normal filter still drops the older of two
        // plain eligible ACKs (their flags agree); the aggressive one keeps
        // a lone plain ACK whose flags differ from the trigger's
        let id = ack(&mut env, 4000, tcp_flags::ACK | tcp_flags::ECE);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
        assert_eq!(q.stats().qlen, 2, "{mode:?}");
    }
}

#[test]
fn split_gso_enqueues_the_segments() {
    let mut q = cake(CakeSpec::default());
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    let id = env.pkt(1514);
    {
        let p = env.arena.get_mut(id);
        p.proto = Proto::Tcp;
        p.payload = Payload::Tcp(TcpHeader {
            flags: tcp_flags::ACK,
            ..Default::default()
        });
        let hdr = p.header_len();
        p.gso_segs = 3;
        p.gso_size = 1448;
        p.len = 3 * (hdr + 1448);
    }
    q.enqueue(&mut env.ctx(0), &mut reduce, id);
    assert_eq!(q.stats().qlen, 3);
    assert_eq!(reduce.grew, 2);
    let x = q.xstats();
    assert_eq!(x["tins"][1]["sent_packets"].as_u64(), Some(3));
    // without splitting: one entry, overhead per segment
    let mut q = cake(CakeSpec {
        split_gso: Some(false),
        overhead: Some(38),
        ..Default::default()
    });
    let id = env.pkt(1514);
    {
        let p = env.arena.get_mut(id);
        p.proto = Proto::Tcp;
        p.payload = Payload::Tcp(TcpHeader {
            flags: tcp_flags::ACK,
            ..Default::default()
        });
        let hdr = p.header_len();
        p.gso_segs = 3;
        p.gso_size = 1448;
        p.len = 3 * (hdr + 1448);
    }
    let mut reduce = Reduce::default();
    q.enqueue(&mut env.ctx(0), &mut reduce, id);
    assert_eq!(q.stats().qlen, 1);
    let e = q.tins[0]
        .flows
        .iter()
        .find_map(|f| f.queue.front())
        .unwrap();
    // each 1502-byte segment: 1488 + 38 = 1526, three of them
    assert_eq!(e.adj_len, 3 * 1526);
}

#[test]
fn unlimited_tins_share_by_tin_quantum() {
    // diffserv3 unlimited: voice has quantum 256, best effort 1024, bulk 64
    let mut q = cake(CakeSpec::default());
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    for _ in 0..100 {
        for (tos, sport) in [(46u8 << 2, 1u16), (0, 2), (8 << 2, 3)] {
            let id = pkt(&mut env, 1000, 1, 2, sport);
            env.arena.get_mut(id).tos = tos;
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
    }
    let mut by = [0u32; 3];
    for _ in 0..134 {
        let id = q.dequeue(&mut env.ctx(0), &mut reduce).unwrap();
        by[env.arena.get(id).src_port as usize - 1] += 1;
        env.arena.free(id);
    }
    // 1024 : 256 : 64 → 16 : 4 : 1 of the packets
    assert!(by[1] > 3 * by[0] && by[0] > 2 * by[2], "{by:?}");
}

#[test]
fn change_to_fewer_tins_frees_their_packets() {
    let mut q = cake(CakeSpec {
        diffserv: Some(CakeDiffserv::Diffserv8),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    let id = pkt(&mut env, 500, 1, 2, 1);
    env.arena.get_mut(id).tos = 46 << 2; // tin 5
    q.enqueue(&mut env.ctx(0), &mut reduce, id);
    let c = Qdisc::change(
        &mut q,
        &QdiscSpec::Cake(CakeSpec {
            diffserv: Some(CakeDiffserv::Besteffort),
            ..Default::default()
        }),
        &mut env.ctx(0),
        None,
    )
    .unwrap();
    assert_eq!((c.purged.packets, c.purged.bytes), (1, 500));
    assert_eq!(q.stats().qlen, 0);
    assert_eq!(q.tin_cnt, 1);
}

#[test]
fn autorate_follows_the_arrival_rate() {
    // bursts of 10 × 1000 B every 10 ms: each window, closed by the first
    // packet after a gap (its bytes included), holds 10 000 B in 10 ms =
    // 1 MB/s; the peak EWMA rises to it with weight 1/4 (reaching it exactly
    // in integers) and the rate follows at 15/16 once 250 ms have passed
    let mut q = cake(CakeSpec {
        autorate: Some(true),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    for burst in 1..=100i64 {
        for i in 0..10i64 {
            let id = pkt(&mut env, 1000, 1, 2, 1000);
            q.enqueue(
                &mut env.ctx((burst * 10 * MS + i * 1000) as u64),
                &mut reduce,
                id,
            );
        }
        while let Some(id) = q.dequeue(&mut env.ctx((burst * 10 * MS + 10_000) as u64), &mut reduce)
        {
            env.arena.free(id);
        }
    }
    let cap = q.xstats()["capacity_estimate"].as_u64().unwrap();
    assert_eq!(cap, 1_000_000);
    assert_eq!(q.cfg.rate_bps, 937_500);
    // 937 500 >> 12 = 228 → 300
    assert_eq!(q.tin_rate(0).2, 300);
}

#[test]
fn ingress_charges_dropped_packets_to_the_shaper() {
    let mut q = cake(CakeSpec {
        bandwidth: Some(1_250_000),
        ingress: Some(true),
        memlimit: Some(10_000),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    let t = 1_000_000_000u64;
    for _ in 0..5 {
        let id = pkt(&mut env, 1514, 1, 2, 1000);
        q.enqueue(&mut env.ctx(t), &mut reduce, id);
    }
    // the overflow drop cost 1514 B of the global schedule, not of the failsafe
    assert_eq!(reduce.drops, 1);
    assert_eq!(q.time_next_packet, t as i64 + 1_211_200);
    assert_eq!(q.failsafe_next_packet, t as i64);
    // the failsafe lets the next packet out at once
    assert!(q.dequeue(&mut env.ctx(t), &mut reduce).is_some());
}

#[test]
fn flowblind_puts_everything_in_one_queue_hosts_by_address_pair() {
    let mut q = cake(CakeSpec {
        flowmode: Some(CakeFlowMode::Flowblind),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    for (s, d, p) in [(1, 2, 1000), (3, 4, 2000)] {
        let id = pkt(&mut env, 100, s, d, p);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
    }
    assert_eq!(q.tins[0].flows[0].queue.len(), 2);
    // hosts: one queue per address pair, whatever the ports
    let mut q = cake(CakeSpec {
        flowmode: Some(CakeFlowMode::Hosts),
        ..Default::default()
    });
    for (s, d, p) in [(1, 2, 1000), (1, 2, 2000), (1, 3, 1000)] {
        let id = pkt(&mut env, 100, s, d, p);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
    }
    let mut lens: Vec<usize> = q.tins[0]
        .flows
        .iter()
        .map(|f| f.queue.len())
        .filter(|&n| n > 0)
        .collect();
    lens.sort_unstable();
    assert_eq!(lens, vec![1, 2]);
}

#[test]
fn shaped_tins_prefer_the_highest_tin_within_its_threshold() {
    // diffserv3 at 10 Mbit/s: voice (tin 2) may use 1/4 of the rate before
    // best effort gets its turn back
    let mut q = cake(CakeSpec {
        bandwidth: Some(1_250_000),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    for _ in 0..40 {
        for (tos, sport) in [(46u8 << 2, 1u16), (0, 2)] {
            let id = pkt(&mut env, 1000, 1, 2, sport);
            env.arena.get_mut(id).tos = tos;
            q.enqueue(&mut env.ctx(0), &mut reduce, id);
        }
    }
    let mut t = 0u64;
    let mut voice = 0;
    for _ in 0..40 {
        loop {
            let mut ctx = env.ctx(t);
            if let Some(id) = q.dequeue(&mut ctx, &mut reduce) {
                voice += (env.arena.get(id).src_port == 1) as u32;
                env.arena.free(id);
                break;
            }
            t = ctx.watchdog.unwrap().as_nanos();
        }
    }
    // voice at 2.5 Mbit/s of 10: about a quarter of the packets once its
    // schedule runs ahead (it goes first while within it)
    assert!((9..=14).contains(&voice), "{voice}");
}

#[test]
fn one_pass_rotation_matches_the_kernels_visit_by_visit_loop() {
    // 12 flows of one host, 3 of another, with COBALT at work (time passes):
    // the dequeue order, deficits and draws are those of the kernel's loop
    let run = |fast: bool| {
        let mut q = cake(CakeSpec {
            bandwidth: Some(1_250_000),
            diffserv: Some(CakeDiffserv::Besteffort),
            ..Default::default()
        });
        q.fast_rotate = fast;
        let mut env = Env::default();
        let mut reduce = Reduce::default();
        let mut order = vec![];
        let mut t = 1_000_000_000u64;
        for round in 0..300u64 {
            for f in 0..15u16 {
                if !(round + f as u64).is_multiple_of(3) {
                    let src = if f < 12 { 1 } else { 2 };
                    let id = pkt(&mut env, 300 + 90 * f as u32, src, 3 + src, 1000 + f);
                    q.enqueue(&mut env.ctx(t), &mut reduce, id);
                }
            }
            for _ in 0..8 {
                let mut ctx = env.ctx(t);
                match q.dequeue(&mut ctx, &mut reduce) {
                    Some(id) => {
                        order.push(env.arena.get(id).src_port);
                        env.arena.free(id);
                    }
                    None => t = ctx.watchdog.map_or(t + 1_000_000, |w| w.as_nanos()),
                }
            }
        }
        let deficits: Vec<i32> = q.tins[0].flows.iter().map(|f| f.deficit).collect();
        (order, deficits, q.rng.next_u64(), q.stats().drops)
    };
    let (a, b) = (run(false), run(true));
    assert!(a.0.len() > 1000);
    assert_eq!(a, b);
}

/// Engine cost of one enqueue + dequeue against fq_codel's (issue 25's target:
/// within 1.5×), as dualpi2/tests.rs measures it: 100 packets standing, 8 flows
/// of one host (so triple-isolate divides their quantum by 8).
/// `cargo test --release -p bufferlab-core --lib qdisc_cost_cake -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run by hand in release mode"]
fn qdisc_cost_cake_vs_fq_codel() {
    use crate::qdisc::ops::BuildEnv;
    use crate::qdisc::spec::FqCodelSpec;
    use crate::qdisc::AnyQdisc;
    fn ns_per_packet(spec: QdiscSpec) -> f64 {
        let env_b = BuildEnv {
            seed: 1,
            stream: "bench",
            profile: Default::default(),
            now: SimTime::ZERO,
            at_root: true,
        };
        let mut q = AnyQdisc::build(&spec, &env_b).unwrap().qdisc;
        let mut env = Env::default();
        let n = 2_000_000u64;
        let start = std::time::Instant::now();
        for i in 0..n + 100 {
            let t = i * 12_000;
            let id = env.pkt(1514);
            env.arena.get_mut(id).src_port = (i % 8) as u16;
            let mut reduce = Reduce::default();
            q.enqueue(&mut env.ctx(t), &mut reduce, id, &mut []);
            if i >= 100 {
                if let Some(id) = q.dequeue(&mut env.ctx(t), &mut reduce, &mut []) {
                    env.arena.free(id);
                }
            }
        }
        start.elapsed().as_nanos() as f64 / n as f64
    }
    let fq = ns_per_packet(QdiscSpec::FqCodel(FqCodelSpec::default()));
    let triple = ns_per_packet(QdiscSpec::Cake(CakeSpec::default()));
    let flows = ns_per_packet(QdiscSpec::Cake(CakeSpec {
        flowmode: Some(CakeFlowMode::Flows),
        ..Default::default()
    }));
    let shaped = ns_per_packet(QdiscSpec::Cake(CakeSpec {
        bandwidth: Some(125_000_000),
        ..Default::default()
    }));
    eprintln!(
        "ns per enqueue+dequeue: fq_codel {fq:.1}, cake triple-isolate {triple:.1} ({:.2}x), \
         cake flows {flows:.1} ({:.2}x), cake 1 Gbit/s shaped {shaped:.1} ({:.2}x)",
        triple / fq,
        flows / fq,
        shaped / fq
    );
}

#[test]
fn flow_classes_list_the_flows_on_a_list_with_their_queue_stats() {
    // unlimited, one tin, per-flow: flow_quantum 1514, quantum_div[1] = 65535,
    // so the dithered quantum is (1514 · 65535 + r16) >> 16 ∈ {1513, 1514}
    let mut q = cake(CakeSpec {
        flowmode: Some(CakeFlowMode::Flows),
        diffserv: Some(CakeDiffserv::Besteffort),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    assert!(q.flow_classes(0).is_empty(), "no flow on a list");
    for _ in 0..3 {
        let id = pkt(&mut env, 1000, 0x0a00_0001, 0x0a00_0002, 40_000);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
    }
    for _ in 0..2 {
        let id = pkt(&mut env, 600, 0x0a00_0001, 0x0a00_0002, 40_001);
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
    }
    let listed = q.flow_classes(0);
    assert_eq!(listed.len(), 2);
    assert!(listed[0].minor < listed[1].minor, "queue order");
    let by_len = |c: &[FlowClass], backlog_per_pkt: u32| {
        c.iter()
            .find(|f| f.backlog == f.qlen * backlog_per_pkt)
            .cloned()
            .unwrap()
    };
    let (a, b) = (by_len(&listed, 1000), by_len(&listed, 600));
    assert_eq!((a.qlen, a.backlog, b.qlen, b.backlog), (3, 3000, 2, 1200));
    for f in [&a, &b] {
        assert!((1..=1024).contains(&f.minor));
        assert!((1513..=1514).contains(&f.deficit), "{f:?}");
        assert_eq!((f.drops, f.count, f.dropping, f.p_drop), (0, 0, false, 0));
        assert_eq!((f.drop_next_us, f.blue_timer_us), (None, None));
    }
    // the flow of the first packet heads the new list: two of its packets go
    // (1000 B each from its deficit), the third dequeue finds it at
    // deficit ≤ 0, refills it (+ quantum) onto the old list and serves the other
    for _ in 0..3 {
        let id = q.dequeue(&mut env.ctx(MS as u64), &mut reduce).unwrap();
        env.arena.free(id);
    }
    let listed = q.flow_classes(MS);
    let a2 = listed.iter().find(|f| f.minor == a.minor).unwrap();
    let b2 = listed.iter().find(|f| f.minor == b.minor).unwrap();
    assert_eq!((a2.qlen, a2.backlog), (1, 1000));
    assert!((a.deficit - 2000 + 1513..=a.deficit - 2000 + 1514).contains(&a2.deficit));
    assert_eq!((b2.qlen, b2.backlog, b2.deficit), (1, 600, b.deficit - 600));
    // emptied flows stay listed while on the old or decaying list
    while let Some(id) = q.dequeue(&mut env.ctx(MS as u64), &mut reduce) {
        env.arena.free(id);
    }
    let left: Vec<u32> = q.flow_classes(MS).iter().map(|f| f.qlen).collect();
    assert!(left.iter().all(|&n| n == 0), "{left:?}");
}

#[test]
fn flow_classes_report_cobalt_times_back_from_now_and_tins_in_dump_order() {
    // diffserv3 dumps its tins in bulk order: bulk (tin 1) is position 0,
    // best effort (tin 0) position 1, so a CS1 packet's class is ≤ 1024 and a
    // best-effort one's 1025..2048
    let mut q = cake(CakeSpec {
        diffserv: Some(CakeDiffserv::Diffserv3),
        ..Default::default()
    });
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    for (dscp, sport) in [(8u8, 1), (0, 2)] {
        let id = pkt(&mut env, 500, 0x0a00_0001, 0x0a00_0002, sport);
        env.arena.get_mut(id).tos = dscp << 2;
        q.enqueue(&mut env.ctx(0), &mut reduce, id);
    }
    let listed = q.flow_classes(0);
    assert_eq!(listed.len(), 2);
    assert!((1..=1024).contains(&listed[0].minor));
    assert!((1025..=2048).contains(&listed[1].minor));
    // best effort's flow: dropping with its next signal 2.5 ms ago, BLUE
    // raised 1.000999 ms ago (µs truncated toward zero, as ktime_to_us)
    let j = (listed[1].minor - 1025) as usize;
    let now = 1000 * MS;
    let c = &mut q.tins[0].flows[j].cvars;
    (c.dropping, c.count, c.drop_next) = (true, 7, now - 2_500_000);
    (c.p_drop, c.blue_timer) = (1 << 24, now - 1_000_999);
    let f = q.flow_classes(now)[1].clone();
    assert_eq!((f.count, f.dropping, f.p_drop), (7, true, 1 << 24));
    assert_eq!((f.drop_next_us, f.blue_timer_us), (Some(2500), Some(1000)));
    // a signal still ahead is negative: −1.5007 ms → −1500 µs
    q.tins[0].flows[j].cvars.drop_next = now + 1_500_700;
    assert_eq!(q.flow_classes(now)[1].drop_next_us, Some(-1500));
}
