//! Whole connections through tcp/harness.rs: the handshake and its
//! negotiated windows, and an orderly close.

use super::super::harness::*;
use super::*;
use crate::tcp::cc::{CcProfile, TCP_INFINITE_SSTHRESH};
use crate::time::SimDuration;

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
fn closing_with_unread_data_resets_instead_of_finishing() {
    // tcp_close: what the application left unread is lost, so the
    // connection is aborted with RST|ACK at snd_nxt (TCPAbortOnClose), no
    // FIN; the peer, reset at exactly its rcv_nxt, is gone too
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    p.b_reads = false;
    p.to_write = 5000;
    p.run_until(ms(100));
    assert_eq!(p.b().readable(), 5000);
    let now = p.now;
    p.b.as_mut().unwrap().close(now);
    p.run_until(ms(200));
    let rst = p.segs_from_b().last().unwrap().seg.hdr;
    assert_eq!(rst.flags, tcp_flags::RST | tcp_flags::ACK);
    assert!(p
        .segs_from_b()
        .all(|s| s.seg.hdr.flags & tcp_flags::FIN == 0));
    let m = p.b().mib();
    assert_eq!((m.abort_on_close, m.estab_resets), (1, 1));
    assert_eq!((p.b().state(), p.b().readable()), (TcpState::Closed, 0));
    assert_eq!(p.a.state(), TcpState::Closed, "the peer takes the reset");
}

#[test]
fn data_reaching_a_closed_socket_is_answered_with_a_reset() {
    // iperf3's server closes its data sockets at TEST_END while the client
    // still sends: with nothing unread the FIN goes out, the next data
    // aborts the connection (TCPAbortOnData) and is answered with a reset at
    // the data's ACK, the FIN's own sequence number, which the client, in
    // CLOSE_WAIT by then, takes (tcp_reset_check); the closed socket answers
    // every later segment with a reset of its own
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    p.to_write = u64::MAX;
    p.run_until(ms(100));
    let now = p.now;
    p.b.as_mut().unwrap().close(now);
    p.run_until(ms(300));
    let from_b: Vec<u8> = p.segs_from_b().map(|s| s.seg.hdr.flags).collect();
    let fin = from_b.iter().position(|f| f & tcp_flags::FIN != 0).unwrap();
    let resets = from_b[fin..]
        .iter()
        .filter(|&&f| f == tcp_flags::RST)
        .count();
    assert!(resets >= 2, "{from_b:?}");
    assert_eq!(p.b().mib().abort_on_data, 1);
    assert_eq!(
        (p.b().state(), p.a.state()),
        (TcpState::Closed, TcpState::Closed)
    );
    assert_eq!(p.a.mib().estab_resets, 1, "reset in CLOSE_WAIT");
}

#[test]
fn only_an_empty_output_queue_exchanges_its_buffer() {
    let mut p = Pair::sym(cfg("cubic"), SimDuration::from_millis(10));
    let mut spare = OutputBuffer(VecDeque::with_capacity(64));
    // the SYN waits in the output queue: it keeps its buffer
    p.a.swap_output_buffer(&mut spare);
    assert_eq!((p.a.out.len(), spare.0.capacity() >= 64), (1, true));
    let syn = p.a.poll_transmit(SimTime::ZERO);
    assert!(syn.is_some());
    p.a.swap_output_buffer(&mut spare);
    assert!(p.a.out.capacity() >= 64, "the lent buffer");
}

#[test]
fn per_mss_and_the_first_send_buffer_follow_max_tcp_header() {
    let modern = |max_tcp_header| TcpConfig {
        gso_max_size: 65_536,
        max_tcp_header,
        ..TcpConfig::for_profile(CcProfile::Modern)
    };
    // roundup_pow_of_two(1460 + MAX_TCP_HEADER + 320) + 256, the peer's MSS 1460:
    // 320: 2100 → 4096 + 256 = 4352; 256: 2036 → 2048 + 256 = 2304; 192: 1972 → 2304
    for (header, per_mss) in [(320, 4352), (256, 2304), (192, 2304)] {
        let mut p = Pair::sym(modern(header), SimDuration::from_millis(10));
        p.run_until(ms(30));
        assert_eq!((p.a.mss_clamp, p.a.mss_cache), (1460, 1448));
        assert_eq!(p.a.sndbuf_per_mss(), per_mss, "MAX_TCP_HEADER {header}");
        // tcp_init_buffer_space: 2 × initial cwnd 10 × per_mss; 46 080 = 10 × 4 608 is
        // the `skmem` tb Linux 6.18 showed on this machine (docs/kernel-oracle.md)
        assert_eq!(p.a.sndbuf, 2 * 10 * per_mss, "MAX_TCP_HEADER {header}");
    }
}
