//! Accurate ECN through whole connections (tcp/harness.rs): the
//! negotiation matrix of `tcp_ecn` at both ends, the handshake's ACE
//! reflections and option, conservation of CE marks from the path to the
//! receiver's counter and back to the sender, and the fallbacks
//! (docs/semantics/tcp.md §13.1).

use crate::packet::{tcp_flags, ECN_CE, ECN_ECT0, ECN_ECT1, TCPOPT_ACCECN1};
use crate::tcp::accecn::{self, EcnMode};
use crate::tcp::cc::CcProfile;
use crate::tcp::harness::Pair;
use crate::tcp::{Segment, TcpConfig};
use crate::time::{Rate, SimDuration, SimTime};

fn cfg(cc: &str, ecn: u8) -> TcpConfig {
    TcpConfig {
        congestion: cc.into(),
        ecn,
        ..TcpConfig::for_profile(CcProfile::Modern)
    }
}

fn ms(v: u64) -> SimTime {
    SimTime::from_nanos(v * 1_000_000)
}

fn pair(a: TcpConfig, b: TcpConfig) -> Pair {
    let mut p = Pair::new(a, b, SimDuration::from_millis(5));
    p.to_write = 200_000;
    p.run_until(ms(500));
    p
}

/// tcp_ecn 0..5 at the client × 0..5 at the server (ip-sysctl.rst: 3
/// AccECN both ways, 4 AccECN in / ECN out, 5 AccECN in / none out):
/// AccECN needs a client at 3 and a server at 3..5; classic ECN a client
/// at 1, 3 or 4 and any server but 0.
#[test]
fn negotiation_matrix_of_tcp_ecn() {
    for c in 0..=5u8 {
        for s in 0..=5u8 {
            let p = pair(cfg("cubic", c), cfg("cubic", s));
            let want = match (c, s) {
                (3, 3..=5) => EcnMode::AccEcn,
                (1 | 3 | 4, 1..=5) => EcnMode::Rfc3168,
                _ => EcnMode::Disabled,
            };
            assert_eq!(p.a.ecn_mode, want, "client {c} server {s}");
            assert_eq!(p.b().ecn_mode, want, "server of client {c} server {s}");
            assert_eq!(p.read, 200_000, "client {c} server {s}");
        }
    }
}

/// The handshake: SYN AE|CWR|ECE; the SYN-ACK reflects the SYN's Not-ECT
/// as ACE 010 and carries the zero-count option (EE1B 1, ECEB 0, EE0B 1,
/// kind 174, 11 bytes padded to 12); the last ACK reflects the SYN-ACK's
/// Not-ECT as 010 too; then ACE is 5 (no CE) on every segment and the
/// option costs 12 bytes of every data segment's MSS.
#[test]
fn handshake_reflects_ect_and_options_shrink_the_mss() {
    let p = pair(cfg("cubic", 3), cfg("cubic", 5));
    let syn = p.log[0].seg;
    assert_eq!(syn.hdr.ace(), 0b111);
    assert_eq!(syn.ecn, 0, "a cubic SYN is Not-ECT");
    let synack = p.segs_from_b().next().unwrap().seg;
    assert_eq!(synack.hdr.ace(), 0b010);
    assert_eq!(synack.hdr.accecn.kind, TCPOPT_ACCECN1);
    assert_eq!(synack.hdr.accecn.fields_len, 3);
    assert_eq!(synack.hdr.accecn.fields, [1, 0, 1]);
    // MSS 4 + TS 12 (SACK-permitted packed) + WS 4 + AccECN 12
    assert_eq!(synack.hdr.header_len(), 20 + 32);
    let third = p
        .log
        .iter()
        .find(|s| s.from_a && s.seg.hdr.flags & tcp_flags::SYN == 0);
    assert_eq!(third.unwrap().seg.hdr.ace(), 0b010);
    // AccECN: every later packet is ECT(0), ACE = 0 + 5
    let data: Vec<&Segment> = p.data_from_a().map(|s| &s.seg).collect();
    assert!(data.iter().all(|s| s.ecn == ECN_ECT0 && s.hdr.ace() == 5));
    assert!(data.iter().all(|s| s.hdr.accecn.fields_len == 3));
    // 1448 − 12: 20 + 12 (TS) + 12 (AccECN) header, 1514-byte frames
    assert_eq!(p.a.mss_cache, 1436);
    assert_eq!(p.a.info().snd_mss, 1448);
    let full = data
        .iter()
        .find(|s| s.gso_segs == 1 && s.payload_len == 1436);
    assert_eq!(full.unwrap().frame_len(), 1514);
    // the receiver's option reports the ECT(0) bytes it got: EE0B = 1 + bytes
    let last_ack = p.segs_from_b().last().unwrap().seg;
    assert_eq!(last_ack.hdr.accecn.fields[2], (1 + 200_000) & 0xff_ffff);
    assert_eq!(last_ack.ecn, ECN_ECT0, "pure ACKs are ECT on AccECN");
}

/// tcp_ecn_option 0: no option anywhere, the full MSS.
#[test]
fn without_the_option_only_ace_reports() {
    let mut a = cfg("cubic", 3);
    a.ecn_option = 0;
    let mut b = cfg("cubic", 3);
    b.ecn_option = 0;
    let p = pair(a, b);
    assert_eq!(p.a.ecn_mode, EcnMode::AccEcn);
    assert!(p.log.iter().all(|s| !s.seg.hdr.accecn.present()));
    assert_eq!(p.a.mss_cache, 1448);
}

/// Prague's SYN asks for AccECN whatever tcp_ecn says and is ECT(1); a
/// listener at 3..5 accepts and the data is ECT(1); a classic listener
/// answers 001 and Prague, which refuses classic ECN, runs prague-reno
/// without ECN.
#[test]
fn prague_needs_accecn_and_falls_back_to_reno() {
    let p = pair(cfg("prague", 2), cfg("cubic", 5));
    assert_eq!(p.log[0].seg.ecn, ECN_ECT1);
    assert_eq!(p.log[0].seg.hdr.ace(), 0b111);
    assert_eq!(
        p.segs_from_b().next().unwrap().seg.hdr.ace(),
        0b011,
        "ECT(1) seen"
    );
    assert_eq!(p.a.cc().ops_name(), "prague");
    assert!(p.data_from_a().all(|s| s.seg.ecn == ECN_ECT1));
    let q = pair(cfg("prague", 2), cfg("cubic", 2));
    assert_eq!(q.segs_from_b().next().unwrap().seg.hdr.ace(), 0b001);
    assert_eq!(q.a.ecn_mode, EcnMode::Disabled);
    assert_eq!(q.a.cc().ops_name(), "prague-reno");
    assert!(q.data_from_a().all(|s| s.seg.ecn == 0));
    // a Prague listener accepts AccECN from a client at tcp_ecn 3
    let r = pair(cfg("cubic", 3), cfg("prague", 0));
    assert_eq!(r.b().ecn_mode, EcnMode::AccEcn);
}

/// Marks are conserved: CE marks the path applies = CE packets the
/// receiver counts (`tcpi_received_ce`) = CE packets the sender learns
/// from the ACE deltas (`tcpi_delivered_ce`), and the CE bytes of the
/// option match.
#[test]
fn ce_marks_are_conserved_from_path_to_receiver_to_sender() {
    for cc in ["cubic", "prague"] {
        let mut p = Pair::new(cfg(cc, 3), cfg("cubic", 3), SimDuration::from_millis(5));
        p.ab.rate = Some(Rate::from_bps(50_000_000));
        p.ab.limit = 1000;
        // Prague paces and keeps the queue short: mark from 1 packet on
        p.ab.ce_threshold = Some(if cc == "prague" { 1 } else { 5 });
        p.to_write = 3_000_000;
        p.run_until(ms(3000));
        assert_eq!(p.read, 3_000_000, "{cc}");
        let marked = p.ab.ce_marked as u32;
        assert!(marked > 20, "{cc}: {marked}");
        assert_eq!(p.b().info().received_ce, marked, "{cc}");
        assert_eq!(p.a.info().delivered_ce, marked, "{cc}");
        assert_eq!(
            p.a.accecn.delivered_ce_bytes(),
            p.b().accecn.received_ecn_bytes[(ECN_CE - 1) as usize],
            "{cc}"
        );
    }
}

/// With tcp_ecn_fallback a retransmitted SYN asks for nothing (AE, CWR and
/// ECE cleared); without it, it asks again for AccECN.
#[test]
fn retransmitted_syn_clears_ace_with_fallback() {
    for fallback in [true, false] {
        let mut a = cfg("cubic", 3);
        a.ecn_fallback = fallback;
        let mut p = Pair::new(a, cfg("cubic", 3), SimDuration::from_millis(5));
        let mut first = true;
        p.ab.drop = Some(Box::new(move |s: &Segment| {
            let syn = s.hdr.flags & tcp_flags::SYN != 0;
            let drop = syn && first;
            first &= !syn;
            drop
        }));
        p.to_write = 10_000;
        p.run_until(ms(3000));
        let syns: Vec<u8> = p
            .log
            .iter()
            .filter(|s| s.from_a && s.seg.hdr.flags & tcp_flags::SYN != 0)
            .map(|s| s.seg.hdr.ace())
            .collect();
        assert_eq!(syns[0], 0b111);
        assert_eq!(syns[1], if fallback { 0 } else { 0b111 });
        let want = if fallback {
            EcnMode::Disabled
        } else {
            EcnMode::AccEcn
        };
        assert_eq!(p.a.ecn_mode, want);
    }
}

/// A middlebox that zeroes the option (EE1B 0) is detected: option
/// failure at the receiver of it; ACE keeps working.
#[test]
fn a_zeroed_option_marks_the_option_failed() {
    let mut p = Pair::new(
        cfg("cubic", 3),
        cfg("cubic", 3),
        SimDuration::from_millis(5),
    );
    p.to_write = 100_000;
    // zero every option the server sends (SYN-ACK and ACKs)
    p.ba.mangle = Some(Box::new(|s: &mut Segment| {
        if s.hdr.accecn.present() {
            s.hdr.accecn.fields = [0; 3];
        }
    }));
    p.run_until(ms(500));
    assert_eq!(p.a.accecn.saw_opt, accecn::OPT_FAIL_SEEN);
    assert_ne!(p.a.accecn.fail_mode & accecn::OPT_FAIL_RECV, 0);
    assert_eq!(p.a.ecn_mode, EcnMode::AccEcn);
    assert_eq!(p.read, 100_000);
}
