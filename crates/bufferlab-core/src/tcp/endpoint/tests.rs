//! Whole connections through tcp/harness.rs: handshake, slow start, delayed
//! ACKs, RTO backoff, close, pacing, a closed receive window.

use super::super::harness::*;
use super::*;
use crate::tcp::cc::{CcProfile, TCP_INFINITE_SSTHRESH};
use crate::time::{Rate, SimDuration};

#[test]
fn handshake_offers_lab2019_windows_and_scales() {
    // tcp_rmem 4096 87380 6291456 (lab2019): SYN 29200 (20 × 1460), wscale 7;
    // the passive side quantises with MSS − 12: SYN-ACK 28960
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    p.run_until(ms(100));
    let syn = p.log[0].seg.hdr;
    assert_eq!(syn.flags, tcp_flags::SYN);
    assert_eq!(
        (syn.window, syn.mss, syn.wscale, syn.sack_ok, syn.ts),
        (29200, 1460, Some(7), true, true)
    );
    assert_eq!(syn.header_len(), 40);
    let synack = p.segs_from_b().next().unwrap().seg.hdr;
    assert_eq!(synack.flags, tcp_flags::SYN | tcp_flags::ACK);
    assert_eq!((synack.window, synack.wscale), (28960, Some(7)));
    assert_eq!(p.a.state(), TcpState::Established);
    assert_eq!(p.b().state(), TcpState::Established);
    let i = p.a.info();
    assert_eq!(
        (i.snd_mss, i.pmtu, i.snd_wscale, i.rcv_wscale, i.options),
        (1448, 1500, 7, 7, 7)
    );
    // the handshake's RTT sample: 20 ms, RTO 20 + 200 ms = 55 jiffies
    assert_eq!((i.rtt, i.rttvar, i.rto), (20_000, 10_000, 220_000));
    assert_eq!(i.snd_cwnd, 10);
    assert_eq!(i.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    assert_eq!(p.b().info().rtt, 20_000, "SYN-ACK → ACK sample");
    // tcp_rmem[2] = 52428800 (the handouts) → wscale 10
    let mut big = cfg("cubic");
    big.rmem = [10240, 87380, 52_428_800];
    let p = Pair::sym(big, SimDuration::from_millis(10));
    assert!(p.log.is_empty());
    let syn = p.a.out.front().unwrap().hdr;
    assert_eq!((syn.window, syn.wscale), (29200, Some(10)));
}

#[test]
fn handshake_offers_modern_windows() {
    // tcp_rmem[1] = 131072 (modern): 65536 of window → SYN 64240, SYN-ACK 65160
    let c = TcpConfig::for_profile(CcProfile::Modern);
    let mut p = Pair::sym(c, SimDuration::from_millis(10));
    p.run_until(ms(100));
    assert_eq!(p.log[0].seg.hdr.window, 64240);
    assert_eq!(p.segs_from_b().next().unwrap().seg.hdr.window, 65160);
}

#[test]
fn initial_window_is_ten_segments() {
    let mut p = Pair::sym(cfg("reno"), SimDuration::from_millis(50));
    p.to_write = u64::MAX;
    // the handshake completes at 100 ms; the first ACK of data returns at 200 ms
    p.run_until(ms(199));
    let first: Vec<_> = p.data_from_a().collect();
    assert_eq!(first.len(), 10);
    assert!(first
        .iter()
        .all(|s| s.t == ms(100) && s.seg.payload_len == 1448));
    assert_eq!(p.a.info().unacked, 10);
}

/// Segments the client sent in each RTT-long slice after the handshake.
fn flights(p: &Pair, start: SimTime, rtt: SimDuration, n: usize) -> Vec<usize> {
    (0..n)
        .map(|k| {
            let lo = start + SimDuration::from_nanos(rtt.as_nanos() * k as u64);
            let hi = lo + rtt;
            p.data_from_a().filter(|s| s.t >= lo && s.t < hi).count()
        })
        .collect()
}

#[test]
fn slow_start_doubles_cwnd_every_rtt() {
    // a receiver with room (no rwnd limit) and no bottleneck
    let mut b = cfg("reno");
    b.rmem = [4096, 4 << 20, 16 << 20];
    let mut p = Pair::new(cfg("reno"), b, SimDuration::from_millis(50));
    p.to_write = u64::MAX;
    p.run_until(ms(700));
    let f = flights(&p, ms(100), SimDuration::from_millis(100), 6);
    assert_eq!(f, vec![10, 20, 40, 80, 160, 320]);
}

/// Data segments covered by each new cumulative ACK of the server, with
/// the ACK's send time.
fn acks_of_b(p: &Pair) -> Vec<(SimTime, u32)> {
    let mut out = Vec::new();
    let mut acked = p.segs_from_b().next().unwrap().seg.hdr.ack;
    for s in p.segs_from_b().skip(1) {
        let a = s.seg.hdr.ack;
        if a != acked {
            out.push((s.t, a.wrapping_sub(acked).div_ceil(1448)));
            acked = a;
        }
    }
    out
}

#[test]
fn delayed_ack_every_second_segment_after_quickacks() {
    // a fixed 128 KiB receive buffer (SO_RCVBUF 64 KiB): the window stops
    // growing early, so ACKs settle to one per two segments
    let mut b = cfg("reno");
    b.rcvbuf = Some(65536);
    let mut a = cfg("reno");
    a.wmem = [4096, 1 << 20, 4 << 20]; // the whole write fits the send buffer
    let mut p = Pair::new(a, b, SimDuration::from_millis(50));
    p.ab.rate = Some(Rate::from_bps(10_000_000));
    // 81 full segments in one write (an odd count: the last waits)
    p.to_write = 81 * 1448;
    p.run_until(ms(3000));
    assert_eq!(p.read, 81 * 1448);
    let acks = acks_of_b(&p);
    let per: Vec<u32> = acks.iter().map(|a| a.1).collect();
    // quickack mode first: rcv_wnd 28960 / (2 × 1448) = 10 credits, topped
    // up while grow_window opens rcv_ssthresh
    assert!(per[..10].iter().all(|&n| n == 1));
    // then every second full segment
    let tail = &per[per.len() - 20..per.len() - 1];
    assert!(tail.iter().all(|&n| n == 2), "{tail:?}");
    // the odd last segment waits for the delayed-ACK timer: ato = 40 ms
    // jiffy-quantised (10 ticks after the tick it arrived in), capped by
    // the RTT estimate once ato has grown (tcp_send_delayed_ack)
    let t_arr = p
        .arrivals
        .iter()
        .rfind(|s| s.from_a && s.seg.payload_len > 0)
        .unwrap()
        .t;
    let (t_ack, n) = *acks.last().unwrap();
    assert_eq!(n, 1);
    let tick = 4_000_000;
    let delay_ticks = t_ack.as_nanos() / tick - t_arr.as_nanos() / tick;
    assert!((10..=25).contains(&delay_ticks), "{delay_ticks}");
    assert_eq!(t_ack.as_nanos() % tick, 0);
    // and every ACK not sent on a segment's arrival was a timer ACK ≥ 36 ms later
    let arrivals: Vec<SimTime> = p
        .arrivals
        .iter()
        .filter(|s| s.from_a)
        .map(|s| s.t)
        .collect();
    let timer_acks: Vec<_> = acks.iter().filter(|a| !arrivals.contains(&a.0)).collect();
    assert!(!timer_acks.is_empty());
    for a in timer_acks {
        let prev = arrivals.iter().rfind(|&&t| t < a.0).unwrap();
        assert!(
            a.0 - *prev >= SimDuration::from_millis(36),
            "{} {}",
            a.0,
            prev
        );
    }
}

#[test]
fn repeated_rtos_back_off_exponentially_and_reset_on_an_rtt_sample() {
    // a path that dies at t = 1 s for 4 s: the RTO retransmission is
    // lost again and again, each time after twice the previous RTO
    use std::cell::Cell;
    use std::rc::Rc;
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    p.ab.rate = Some(Rate::from_bps(10_000_000));
    p.ab.limit = 100;
    p.to_write = u64::MAX;
    let clock = Rc::new(Cell::new(SimTime::ZERO));
    let c2 = clock.clone();
    p.ab.drop = Some(Box::new(move |_s: &Segment| {
        let t = c2.get();
        t >= ms(1000) && t < ms(5000)
    }));
    let mut rtos = Vec::new();
    let mut last_backoff = 0;
    while p.now < ms(8000) {
        clock.set(p.now);
        p.run_for(SimDuration::from_micros(500));
        let i = p.a.info();
        if i.backoff > last_backoff {
            rtos.push((p.now, i.backoff, i.rto));
        }
        last_backoff = i.backoff;
    }
    // backoff 1, 2, 3, 4 with the RTO doubling each time
    assert!(rtos.len() >= 4, "{rtos:?}");
    for w in rtos.windows(2) {
        assert_eq!(w[1].1, w[0].1 + 1);
        assert_eq!(w[1].2, 2 * w[0].2);
        // the next RTO fires one (doubled) RTO after the previous one
        let gap = (w[1].0 - w[0].0).as_nanos() as i64;
        assert!((gap - w[0].2 as i64 * 1000).abs() <= 4_500_000, "{rtos:?}");
    }
    // after the outage, an RTT sample resets the backoff
    let i = p.a.info();
    assert_eq!((i.backoff, i.ca_state), (0, 0));
    assert!(i.rto < 400_000);
}

#[test]
fn a_lost_syn_is_retransmitted_after_one_second() {
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    let mut first = true;
    p.ab.drop = Some(Box::new(move |s: &Segment| {
        let syn = s.hdr.flags & tcp_flags::SYN != 0;
        let d = syn && first;
        if syn {
            first = false;
        }
        d
    }));
    p.to_write = 10 * 1448;
    p.run_until(ms(3000));
    let syns: Vec<SimTime> = p
        .log
        .iter()
        .filter(|s| s.from_a && s.seg.hdr.flags & tcp_flags::SYN != 0)
        .map(|s| s.t)
        .collect();
    assert_eq!(syns, vec![ms(0), ms(1000)]);
    let i = p.a.info();
    // Linux counts the SYN retransmission; with one retransmission the
    // initial window stays 10 (cwnd 1 needs more than one)
    assert_eq!(i.total_retrans, 1);
    assert_eq!(p.read, 10 * 1448);
    // the RTT comes from the retransmitted SYN's timestamp echo
    assert_eq!(i.rtt, 20_000);
}

#[test]
fn close_sends_fin_after_the_data_and_both_sides_finish() {
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    p.to_write = 5000;
    p.run_until(ms(100));
    p.a.close(p.now);
    p.run_until(ms(200));
    assert_eq!(p.read, 5000);
    assert!(p.b().eof());
    assert_eq!(p.a.state(), TcpState::FinWait2);
    assert_eq!(p.b().state(), TcpState::CloseWait);
    let now = p.now;
    p.b.as_mut().unwrap().close(now);
    p.run_until(ms(300));
    assert_eq!(p.b().state(), TcpState::Closed);
    assert_eq!(p.a.state(), TcpState::TimeWait);
    p.run_until(ms(61_000));
    assert_eq!(p.a.state(), TcpState::Closed);
    assert_eq!(p.a.poll_timeout(), None);
}

#[test]
fn bbr_paces_its_segments() {
    // BBR asks for internal pacing (no fq here): after the first ten
    // segments, departures are spaced by len / pacing_rate
    let mut p = Pair::sym(cfg("bbr"), SimDuration::from_millis(5));
    p.check = false;
    p.ab.rate = Some(Rate::from_bps(1_000_000_000));
    p.to_write = u64::MAX;
    p.run_until(ms(1000));
    let sends: Vec<SimTime> = p.data_from_a().map(|s| s.t).collect();
    // distinct departure instants: far more than the number of ACKs would give
    let mut gaps: Vec<u64> = sends.windows(2).map(|w| (w[1] - w[0]).as_nanos()).collect();
    let bursts = gaps.iter().filter(|&&g| g == 0).count();
    assert!(bursts < sends.len() / 10, "{bursts} of {}", sends.len());
    gaps.retain(|&g| g > 0);
    assert!(p.a.info().pacing_rate > 0);
    let i = p.a.info();
    // goodput near the 1 Gb/s bottleneck (956 Mb/s of payload) after startup
    assert!(p.read as f64 > 0.8 * 956e6 / 8.0, "{} {:?}", p.read, i);
    assert_eq!(i.total_retrans, 0);
}

#[test]
fn a_receiver_that_stops_reading_closes_the_window_and_reopens_it() {
    // the server application does not read: its 87380-byte buffer fills,
    // the window falls to zero and the sender probes; once the
    // application drains the buffer a window update restarts the flow
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    p.ab.rate = Some(Rate::from_bps(10_000_000));
    p.to_write = u64::MAX;
    p.b_reads = false;
    p.run_until(ms(3000));
    let a = p.a.info();
    assert_eq!(a.snd_wnd, 0, "zero window");
    assert_eq!(a.unacked, 0, "everything sent was acked");
    let queued = p.b().readable();
    assert!(queued > 30_000 && queued < 87_380, "{queued}");
    // zero-window probes went out (bare ACKs below snd_una) and were answered
    let probes = p
        .log
        .iter()
        .filter(|s| s.from_a && s.seg.payload_len == 0 && s.t > ms(500))
        .count();
    assert!(probes >= 2, "{probes}");
    assert_eq!(a.total_retrans, 0);
    // the application reads: an ACK announces the window, data flows again
    p.b_reads = true;
    let now = p.now;
    let n = p.b.as_mut().unwrap().read(now, u64::MAX);
    p.read += n;
    p.run_until(ms(5000));
    assert!(p.read > queued + 1_000_000, "{}", p.read);
}
