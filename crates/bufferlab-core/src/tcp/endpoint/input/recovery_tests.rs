//! Loss recovery through whole connections (two endpoints and a bottleneck
//! stepped in simulated time, tcp/harness.rs).

mod endpoint_tests {
    use crate::packet::tcp_flags;
    use crate::tcp::cc::CcProfile;
    use crate::tcp::endpoint::{TcpConfig, TcpEndpoint};
    use crate::tcp::harness::*;
    use crate::time::{Rate, SimDuration, SimTime};

    /// Client with IW20 (one whole window in flight at once), server with a
    /// large receive buffer, 10 Mb/s bottleneck (1.211 ms per full frame), 100 ms RTT.
    fn iw20_pair(cc: &str, profile: CcProfile) -> Pair {
        let mut a = TcpConfig {
            congestion: cc.to_string(),
            ..TcpConfig::for_profile(profile)
        };
        a.init_cwnd = 20;
        let mut b = a.clone();
        b.rmem = [4096, 1 << 20, 6 << 20];
        let mut p = Pair::new(a, b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p
    }

    /// Run the single-loss scenario and return, per SACK received, how many
    /// segments the client sent in response (SACK 1, 2, ...), up to the
    /// cumulative ACK that ends recovery; plus the (cwnd, ssthresh) after.
    fn prr_run(profile: CcProfile) -> (Vec<u32>, (u32, u32)) {
        let mut p = iw20_pair("reno", profile);
        let iss = p.a.iss();
        p.ab.drop = Some(drop_first_tx(iss, vec![0]));
        p.to_write = 60 * 1448;
        p.run_until(SimTime::ZERO + SimDuration::from_secs(3));
        assert_eq!(p.read, 60 * 1448, "everything delivered");
        assert_eq!(p.a.info().total_retrans, 1);
        let first_data = p.data_from_a().next().unwrap().t;
        let mut per_sack = Vec::new();
        for ack in p.arrivals.iter().filter(|s| !s.from_a && s.t > first_data) {
            let sent = p.data_from_a().filter(|s| s.t == ack.t).count() as u32;
            if ack.seg.hdr.ack == iss.wrapping_add(1) && ack.seg.hdr.sack_len > 0 {
                per_sack.push(sent);
            } else if !per_sack.is_empty() {
                break;
            }
        }
        let after = p
            .samples
            .iter()
            .find(|s| s.ca_state == 0 && s.t > first_data + SimDuration::from_millis(150))
            .unwrap();
        (per_sack, (after.cwnd, after.ssthresh))
    }

    /// docs/semantics/tcp.md §9.4 applied to the scenario's scoreboard: entry on SACK 3
    /// with 22 packets out (20 + 2 limited-transmit), 3 SACKed, 1 lost;
    /// every later SACK delivers one packet; nothing newly lost, SND.UNA
    /// never advances, no retransmission acked.
    fn prr_model(profile: CcProfile, n_sacks: i64) -> Vec<u32> {
        let (ssthresh, prior_cwnd) = (10i64, 20i64);
        let (mut packets_out, mut sacked, lost, mut retrans) = (22i64, 2i64, 1i64, 0i64);
        let (mut prr_delivered, mut prr_out) = (0i64, 0i64);
        let mut out = Vec::new();
        for k in 3..=n_sacks {
            sacked += 1;
            let in_flight = packets_out - sacked - lost + retrans;
            prr_delivered += 1;
            let delta = ssthresh - in_flight;
            let mut sndcnt = if delta < 0 {
                (ssthresh * prr_delivered + prior_cwnd - 1) / prior_cwnd - prr_out
            } else {
                match profile {
                    // no retransmitted data acked: the conservative bound
                    CcProfile::Lab2019 => delta.min(1),
                    // RFC 6937 slow start toward ssthresh (no "+1": SND.UNA did not move)
                    CcProfile::Modern => delta.min((prr_delivered - prr_out).max(1)),
                }
            };
            sndcnt = sndcnt.max(if prr_out == 0 { 1 } else { 0 });
            if k == 3 {
                retrans += 1;
            } else {
                packets_out += sndcnt;
            }
            prr_out += sndcnt;
            out.push(sndcnt as u32);
        }
        out
    }

    #[test]
    fn prr_below_ssthresh_is_conservative_in_lab2019_and_slow_starts_in_modern() {
        // tcp_cwnd_reduction with in_flight 4 < ssthresh 10, prr_delivered
        // jumping to 6 while prr_out is 2, a SACK-only ACK of 1 packet:
        // lab2019 min(delta, newly_acked_sacked) = 1; modern
        // min(delta, max(prr_delivered − prr_out, 1)) = 4; with retransmitted
        // data acked (lab2019) or SND.UNA advanced (modern) one more
        use crate::rng::ComponentRng;
        use crate::tcp::endpoint::flag;
        for (profile, fl, want) in [
            (CcProfile::Lab2019, 0, 1),
            (CcProfile::Modern, 0, 4),
            (
                CcProfile::Lab2019,
                flag::RETRANS_DATA_ACKED | flag::SND_UNA_ADVANCED,
                5,
            ),
            (
                CcProfile::Modern,
                flag::RETRANS_DATA_ACKED | flag::SND_UNA_ADVANCED,
                5,
            ),
        ] {
            let c = TcpConfig::for_profile(profile);
            let mut ep =
                TcpEndpoint::connect(c, A_ADDR, B_ADDR, SimTime::ZERO, ComponentRng::new(1, "t"));
            ep.sb.packets_out = 8;
            ep.sb.sacked_out = 4; // in flight 4
            ep.cs.snd_ssthresh = 10;
            ep.cs.prior_cwnd = 20;
            ep.prr.delivered = 5;
            ep.prr.out = 2;
            ep.cwnd_reduction(1, 0, fl);
            assert_eq!(ep.cwnd(), 4 + want, "{profile:?} {fl:x}");
        }
    }

    #[test]
    fn sack_recovery_of_one_loss_sends_what_prr_allows() {
        // Reno, IW20 on a 10 Mb/s, 100 ms path, the first segment of the
        // window lost. SACKs come back one per segment; RACK declares the
        // loss on the third (reo_wnd 0 once sacked_out ≥ 3). Before that each
        // SACK frees one packet of the 20-packet cwnd: two new segments go
        // out. Recovery: prior_cwnd 20, ssthresh 10, in_flight 18 at entry;
        // PRR sends the retransmission on SACK 3, then one new segment per
        // two SACKs while in_flight > ssthresh, then the profile's bound.
        for profile in [CcProfile::Lab2019, CcProfile::Modern] {
            let (per_sack, after) = prr_run(profile);
            // 21 SACKs: segments 1–19 and the two limited-transmit ones
            assert_eq!(per_sack.len(), 21, "{profile:?}");
            assert_eq!(&per_sack[..2], &[1, 1], "{profile:?}: limited transmit");
            let expected = prr_model(profile, 21);
            assert_eq!(&per_sack[2..], &expected[..], "{profile:?}");
            // recovery ends at cwnd = ssthresh = 10
            assert_eq!(after, (10, 10), "{profile:?}");
        }
        // the numbers: lab2019 sends ceil(10·19/20) = 10 in all
        assert_eq!(
            prr_model(CcProfile::Lab2019, 21),
            [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1]
        );
        assert_eq!(prr_model(CcProfile::Lab2019, 21).iter().sum::<u32>(), 10);
        // (with a single loss in_flight never falls more than one below
        // ssthresh, so the profiles' slow-start bounds coincide here)
        assert_eq!(
            prr_model(CcProfile::Modern, 21),
            prr_model(CcProfile::Lab2019, 21)
        );
    }

    /// IW10 client (one write of `n` segments), 10 Mb/s bottleneck, 100 ms RTT.
    fn burst_pair(n: u32, drop: Vec<u32>, owd_ms: u64) -> Pair {
        let mut p = Pair::sym(cfg("reno"), SimDuration::from_millis(owd_ms));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        let iss = p.a.iss();
        p.ab.drop = Some(drop_first_tx(iss, drop.iter().map(|k| k * 1448).collect()));
        p.to_write = n as u64 * 1448;
        p
    }

    /// Time and sequence offset of the client's retransmissions.
    fn retransmissions(p: &Pair) -> Vec<(SimTime, u32)> {
        let iss = p.a.iss();
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for s in p.data_from_a() {
            let off = s.seg.hdr.seq.wrapping_sub(iss.wrapping_add(1));
            if !seen.insert(off) {
                out.push((s.t, off / 1448));
            }
        }
        out
    }

    fn tick(t: SimTime) -> u64 {
        t.as_nanos() / 4_000_000
    }

    #[test]
    fn rack_detects_a_lost_last_but_one_segment_after_the_reordering_window() {
        // 10 segments, the 9th lost: only one segment (the 10th) is SACKed, so
        // no dupack threshold; RACK waits reo_wnd = min_rtt/4 and declares it
        // (with 49 ms each way the REO timer, armed mid-tick, still fires after
        // the reordering window; Linux's tcp_rack_reo_timeout does not re-arm
        // itself if the jiffy rounding makes it fire a few µs early)
        let mut p = burst_pair(10, vec![8], 49);
        p.run_until(ms(1000));
        assert_eq!(p.read, 10 * 1448);
        let rtx = retransmissions(&p);
        assert_eq!(rtx.len(), 1);
        assert_eq!(rtx[0].1, 8);
        // the SACK of segment 9 reached the client at t_sack
        let t_sack = p
            .arrivals
            .iter()
            .find(|s| !s.from_a && s.seg.hdr.sack_len > 0)
            .unwrap()
            .t;
        let min_rtt = p.a.info().min_rtt;
        // REO timer: usecs_to_jiffies(reo_wnd + 2 ms) from the SACK's tick
        let reo_wnd = min_rtt / 4;
        let when = (reo_wnd + 2000).div_ceil(4000) as u64;
        assert_eq!(tick(rtx[0].0), tick(t_sack) + when);
        assert_eq!(rtx[0].0.as_nanos() % 4_000_000, 0);
        assert!(
            rtx[0].0 - t_sack < SimDuration::from_millis(50),
            "well before TLP/RTO"
        );
        let i = p.a.info();
        assert_eq!((i.total_retrans, i.backoff), (1, 0));
    }

    #[test]
    fn tlp_probes_a_tail_loss_and_rack_repairs_the_rest() {
        // 10 segments, the last three lost: no SACK at all comes back. After the
        // ACK of segment 7 the loss probe is armed at 2·srtt + 2 jiffies
        // (lab2019); it retransmits the last segment, whose SACK lets RACK
        // mark the other two lost: fast recovery, no RTO.
        let mut p = burst_pair(10, vec![7, 8, 9], 50);
        p.run_until(ms(500));
        let rtx = retransmissions(&p);
        assert_eq!(rtx.len(), 1, "only the probe so far");
        assert_eq!(rtx[0].1, 9, "the probe re-sends the last segment");
        let srtt = p.a.info().rtt; // no RTT sample since the last ACK
        let t_last_ack = p
            .arrivals
            .iter()
            .rfind(|s| !s.from_a && s.t < rtx[0].0)
            .unwrap()
            .t;
        let pto = (2 * srtt).div_ceil(4000) as u64 + 2;
        assert_eq!(tick(rtx[0].0), tick(t_last_ack) + pto);
        p.run_until(ms(2000));
        assert_eq!(p.read, 10 * 1448);
        let rtx = retransmissions(&p);
        assert_eq!(rtx.iter().map(|r| r.1).collect::<Vec<_>>(), vec![9, 7, 8]);
        let i = p.a.info();
        assert_eq!((i.total_retrans, i.backoff), (3, 0));
        assert!(p.samples.iter().any(|s| s.ca_state == 3), "fast recovery");
        assert!(p.samples.iter().all(|s| s.ca_state != 4), "never an RTO");
    }

    #[test]
    fn rto_after_a_lost_window_sets_ssthresh_cwnd_one_and_loss_state() {
        // bulk Reno over 10 Mb/s, 100 ms RTT, held to ~88 segments in flight
        // by a fixed 256 KiB receive buffer; from t = 1 s every data segment
        // sent in the next 350 ms is lost: the whole flight and the loss
        // probe. The RTO fires (the ACK clock has stopped) and its
        // retransmission gets through.
        use std::cell::RefCell;
        use std::rc::Rc;
        let mut b = cfg("reno");
        b.rcvbuf = Some(131_072);
        let mut p = Pair::new(cfg("reno"), b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p.to_write = u64::MAX;
        let dropped = Rc::new(RefCell::new(Vec::new()));
        p.run_until(ms(1000));
        let d2 = dropped.clone();
        let clock = Rc::new(RefCell::new(SimTime::ZERO));
        let c2 = clock.clone();
        p.ab.drop = Some(Box::new(move |s: &crate::tcp::Segment| {
            let now = *c2.borrow();
            if s.payload_len > 0 && now < ms(1350) {
                d2.borrow_mut().push(s.hdr.seq);
                return true;
            }
            false
        }));
        // step in 1 ms slices so the drop rule knows the time
        let mut before_rto = None;
        while p.now < ms(3000) {
            *clock.borrow_mut() = p.now;
            let prev = p.a.info();
            p.run_for(SimDuration::from_millis(1));
            let i = p.a.info();
            if before_rto.is_none() && i.ca_state == 4 {
                before_rto = Some((prev, i));
            }
        }
        let (prev, at) = before_rto.expect("an RTO happened");
        assert_eq!(at.snd_cwnd, 1);
        assert_eq!(
            at.snd_ssthresh,
            (prev.snd_cwnd / 2).max(2),
            "Reno halves the cwnd of the moment"
        );
        assert_eq!(at.backoff, 1);
        assert_eq!(at.rto, 2 * prev.rto, "RTO doubled");
        // total_retrans counts every retransmission on the wire: the loss
        // probe (a re-send of the last segment: the flight is rwnd-limited,
        // so no new data fits), the RTO retransmission and the Loss-state
        // slow-start retransmissions; nothing outside the lost flight
        let mut d = dropped.borrow().clone();
        d.sort_unstable();
        d.dedup();
        let iss = p.a.iss();
        let lost: Vec<u32> = d
            .iter()
            .map(|x| x.wrapping_sub(iss.wrapping_add(1)) / 1448)
            .collect();
        let rtx = retransmissions(&p);
        let i = p.a.info();
        assert_eq!(i.total_retrans as usize, rtx.len());
        assert_eq!(
            rtx.len(),
            lost.len() + 1,
            "one loss probe, then each lost segment once"
        );
        assert_eq!(
            rtx[0].1,
            *lost.last().unwrap(),
            "the probe re-sends the last segment"
        );
        let mut again: Vec<u32> = rtx[1..].iter().map(|r| r.1).collect();
        again.sort_unstable();
        assert_eq!(again, lost);
        assert_eq!(i.ca_state, 0, "recovered");
        assert!(p.read > 1_000_000, "{}", p.read);
    }

    #[test]
    fn a_reordered_segment_triggers_a_spurious_fast_retransmit_that_is_undone() {
        // segment 30 (in slow start) is delayed 30 ms: RACK declares it lost
        // once three later segments are SACKed, the original then arrives
        // before the retransmission; the ACK's echoed timestamp predates the
        // retransmission (Eifel, tcp_packet_delayed), so the reduction is
        // undone, and the duplicate is D-SACKed
        let mut b = cfg("reno");
        b.rmem = [4096, 1 << 20, 6 << 20];
        let mut p = Pair::new(cfg("reno"), b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        let iss = p.a.iss();
        let mut done = false;
        p.ab.delay_rule = Some(Box::new(move |s: &crate::tcp::Segment| {
            let k = s.hdr.seq.wrapping_sub(iss.wrapping_add(1)) / 1448;
            if s.payload_len > 0 && k == 30 && !done {
                done = true;
                return SimDuration::from_millis(30);
            }
            SimDuration::ZERO
        }));
        p.to_write = u64::MAX;
        p.run_until(ms(1500));
        let i = p.a.info();
        assert_eq!(i.total_retrans, 1, "one spurious retransmission");
        assert_eq!(retransmissions(&p)[0].1, 30);
        assert!(i.reord_seen > 0, "reordering detected");
        assert_eq!(i.dsack_dups, 1, "the duplicate was D-SACKed");
        // the cwnd reduction was undone: still in slow start, never cut
        let rec = p
            .samples
            .iter()
            .position(|s| s.ca_state == 3)
            .expect("recovery");
        let before = p.samples[rec - 1].cwnd;
        assert!(p.samples[rec..]
            .iter()
            .any(|s| s.ca_state == 0 && s.cwnd >= before));
        assert_eq!(i.snd_ssthresh, crate::tcp::cc::TCP_INFINITE_SSTHRESH);
    }

    #[test]
    fn ecn_ce_is_echoed_until_cwr_and_cwnd_is_cut_once_per_window() {
        let mut c = cfg("reno");
        c.ecn = 1;
        let mut b = c.clone();
        b.rmem = [4096, 1 << 20, 6 << 20];
        let mut p = Pair::new(c, b, SimDuration::from_millis(50));
        p.ab.rate = Some(Rate::from_bps(10_000_000));
        p.to_write = u64::MAX;
        let iss = p.a.iss();
        // CE on two segments of one window, and on one four RTTs later
        let marks = [200u32, 205, 600];
        p.ab.ce_rule = Some(Box::new(move |s: &crate::tcp::Segment| {
            let k = s.hdr.seq.wrapping_sub(iss.wrapping_add(1)) / 1448;
            s.payload_len > 0 && marks.contains(&k)
        }));
        p.run_until(ms(4000));
        // negotiation: SYN with ECE|CWR, SYN-ACK with ECE
        let ece_cwr = tcp_flags::ECE | tcp_flags::CWR;
        assert_eq!(p.log[0].seg.hdr.flags & ece_cwr, ece_cwr);
        assert_eq!(
            p.segs_from_b().next().unwrap().seg.hdr.flags & ece_cwr,
            tcp_flags::ECE
        );
        assert!(p.data_from_a().all(|s| s.seg.ecn != 0));
        let i = p.a.info();
        assert_eq!(i.total_retrans, 0);
        // the sender set CWR on exactly two data segments: one per reduction
        let cwr: Vec<SimTime> = p
            .data_from_a()
            .filter(|s| s.seg.hdr.flags & tcp_flags::CWR != 0)
            .map(|s| s.t)
            .collect();
        assert_eq!(cwr.len(), 2);
        // the receiver echoed ECE from each first CE until the next CWR arrived
        let arr_of = |k: u32| {
            p.arrivals
                .iter()
                .find(|s| s.from_a && s.seg.hdr.seq.wrapping_sub(iss.wrapping_add(1)) / 1448 == k)
                .unwrap()
                .t
        };
        let cwr_arr: Vec<SimTime> = p
            .arrivals
            .iter()
            .filter(|s| s.from_a && s.seg.payload_len > 0 && s.seg.hdr.flags & tcp_flags::CWR != 0)
            .map(|s| s.t)
            .collect();
        let windows = [(arr_of(200), cwr_arr[0]), (arr_of(600), cwr_arr[1])];
        assert!(
            arr_of(205) < cwr_arr[0],
            "the second mark fell in the same episode"
        );
        for s in p
            .segs_from_b()
            .filter(|s| s.seg.hdr.flags & tcp_flags::SYN == 0)
        {
            let ece = s.seg.hdr.flags & tcp_flags::ECE != 0;
            let expect = windows.iter().any(|&(a, b)| s.t >= a && s.t < b);
            assert_eq!(ece, expect, "ACK at {}", s.t);
        }
        // one CWR episode for the two marks of the first window: ssthresh halved once
        let cwr_states: Vec<&Sample> = p.samples.iter().filter(|s| s.ca_state == 2).collect();
        let first = cwr_states[0];
        let entered: Vec<&Sample> = p
            .samples
            .windows(2)
            .filter(|w| w[0].ca_state != 2 && w[1].ca_state == 2)
            .map(|w| &w[1])
            .collect();
        assert_eq!(entered.len(), 2);
        let before = p.samples.iter().rfind(|s| s.t < first.t).unwrap();
        assert_eq!(first.ssthresh, (before.cwnd / 2).max(2));
    }
}

mod stress_tests {
    use crate::tcp::cc::{Cc, CcProfile};
    use crate::tcp::endpoint::TcpConfig;
    use crate::tcp::harness::*;
    use crate::time::{Rate, SimDuration};

    /// Delay-based modules that may keep the queue below its limit for the
    /// whole run (CDG backs off on the delay gradient before 30 packets).
    const HOLDS_QUEUE: &[&str] = &["vegas", "nv", "cdg"];

    /// A drop-tail bottleneck that overflows: every module recovers from
    /// repeated losses without stalling and keeps the scoreboard consistent.
    fn lossy_run(cc: &str, sack: bool) -> (u64, u32) {
        lossy_run_profile(cc, sack, CcProfile::Lab2019)
    }

    fn lossy_run_profile(cc: &str, sack: bool, profile: CcProfile) -> (u64, u32) {
        let mut c = TcpConfig {
            congestion: cc.to_string(),
            ..TcpConfig::for_profile(profile)
        };
        c.sack = sack;
        c.rmem = [4096, 87380, 6 << 20];
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.ab.rate = Some(Rate::from_bps(20_000_000));
        p.ab.limit = 30;
        p.to_write = u64::MAX;
        p.run_until(ms(5000));
        let i = p.a.info();
        (p.read, i.total_retrans)
    }

    #[test]
    fn every_module_survives_a_lossy_drop_tail_bottleneck() {
        // 20 Mb/s × 20 ms = 34.5 packets of BDP, 30-packet queue
        let ceiling = 20e6 / 8.0 * 1448.0 / 1514.0 * 5.0;
        for &cc in Cc::NAMES {
            let (read, retrans) = lossy_run(cc, true);
            assert!(
                retrans > 0 || HOLDS_QUEUE.contains(&cc),
                "{cc}: the queue overflowed"
            );
            assert!(read as f64 > 0.75 * ceiling, "{cc}: {read} of {ceiling}");
        }
    }

    /// Westwood's estimate is fed by `in_ack_event` on every ACK and
    /// filtered per jiffy window: after 5 s through 20 Mbit/s it is the
    /// payload rate in bytes per 4 ms jiffy, 20e6/8 · 0.004 · 1448/1514 ≈
    /// 9562 (±25 %), so the window after a loss is about one BDP.
    #[test]
    fn westwood_estimates_the_bottleneck_rate_from_every_ack() {
        let mut c = TcpConfig {
            congestion: "westwood".to_string(),
            ..TcpConfig::for_profile(CcProfile::Lab2019)
        };
        c.rmem = [4096, 87380, 6 << 20];
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.ab.rate = Some(Rate::from_bps(20_000_000));
        p.ab.limit = 30;
        p.to_write = u64::MAX;
        p.run_until(ms(5000));
        let m = p.a.cc.metrics();
        let bw = m
            .iter()
            .find(|(k, _)| *k == "bw_est_bytes_per_jiffy")
            .unwrap()
            .1;
        let want = 20e6 / 8.0 * 0.004 * 1448.0 / 1514.0;
        assert!((0.75 * want..1.25 * want).contains(&bw), "{bw} vs {want}");
    }

    /// CDG's delay backoff calls `tcp_enter_cwr` from `cong_avoid`: with a
    /// buffer far above the BDP (no loss in 5 s), the queue's growing delay
    /// makes it enter CWR (ca_state 2) with ssthresh = cwnd·724/1024, and
    /// never retransmit.
    #[test]
    fn cdg_backs_off_through_cwr_before_any_loss() {
        let c = TcpConfig {
            congestion: "cdg".to_string(),
            ..TcpConfig::for_profile(CcProfile::Lab2019)
        };
        let mut p = Pair::sym(c, SimDuration::from_millis(10));
        p.ab.rate = Some(Rate::from_bps(20_000_000));
        p.ab.limit = 1000;
        p.to_write = u64::MAX;
        p.run_until(ms(5000));
        assert_eq!(p.a.info().total_retrans, 0);
        let entered: Vec<_> = p
            .samples
            .windows(2)
            .filter(|w| w[0].ca_state != 2 && w[1].ca_state == 2)
            .map(|w| (w[0].cwnd, w[1].ssthresh))
            .collect();
        assert!(!entered.is_empty());
        for (cwnd, ssthresh) in entered {
            assert_eq!(ssthresh, ((cwnd * 724) >> 10).max(2), "{cwnd}");
        }
    }

    #[test]
    fn every_module_survives_it_with_the_modern_profile_too() {
        let ceiling = 20e6 / 8.0 * 1448.0 / 1514.0 * 5.0;
        for &cc in Cc::NAMES {
            let (read, retrans) = lossy_run_profile(cc, true, CcProfile::Modern);
            assert!(
                retrans > 0 || HOLDS_QUEUE.contains(&cc),
                "{cc}: the queue overflowed"
            );
            assert!(read as f64 > 0.75 * ceiling, "{cc}: {read} of {ceiling}");
        }
    }

    #[test]
    fn newreno_without_sack_recovers_too() {
        let ceiling = 20e6 / 8.0 * 1448.0 / 1514.0 * 5.0;
        let (read, retrans) = lossy_run("reno", false);
        assert!(retrans > 0);
        assert!(read as f64 > 0.6 * ceiling, "{read}");
    }

    /// Throughput of the model itself: a 1 Gb/s, 20 ms path with a
    /// 1000-packet drop-tail queue for 10 simulated seconds (~0.8 M data
    /// segments); `cargo test --release -- --ignored perf` prints the rate.
    #[test]
    #[ignore]
    fn perf_one_gigabit_ten_seconds() {
        for cc in ["cubic", "bbr"] {
            let mut c = cfg(cc);
            c.rmem = [10240, 87380, 52_428_800];
            c.wmem = [10240, 87380, 52_428_800];
            let mut p = Pair::sym(c, SimDuration::from_millis(10));
            p.ab.rate = Some(Rate::from_bps(1_000_000_000));
            p.ab.limit = 1000;
            p.to_write = u64::MAX;
            p.record = false;
            p.check = false;
            let t0 = std::time::Instant::now();
            p.run_until(ms(10_000));
            let el = t0.elapsed().as_secs_f64();
            let segs = p.a.info().data_segs_out as f64;
            eprintln!(
                "{cc}: {segs} segments in {el:.2} s wall = {:.2} M segments/s; goodput {:.1} Mb/s; retrans {}",
                segs / el / 1e6,
                p.read as f64 * 8.0 / 10.0 / 1e6,
                p.a.info().total_retrans
            );
            // nothing grows without bound: the send-time log stays within a
            // window's worth of entries
            eprintln!(
                "  rtx queue {} segments, send-time log {} entries, staged output {}",
                p.a.sb.q.len(),
                p.a.sb.tsorted.len(),
                p.a.out.capacity()
            );
            assert!(p.a.sb.tsorted.len() <= 2 * p.a.sb.q.len() + 64);
        }
    }
}
