//! `reno` — Linux's Reno cwnd policy (net/ipv4/tcp_cong.c:
//! `tcp_reno_cong_avoid`, `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`;
//! docs/semantics/tcp.md §11.1).
//!
//! Units: packets. No state and no parameters: slow start below ssthresh,
//! +1 packet per cwnd of packets acked above it, halve on loss (floor 2),
//! undo to the cwnd before the reduction. Loss recovery itself (SACK/RACK,
//! PRR, RTO) is the endpoint's and the same for every module (docs/semantics/tcp.md §9,
//! §17.12): this is not RFC 5681's one-retransmission-per-RTT Reno.

use super::{tcp_cong_avoid_ai, tcp_slow_start, CcProfile, CcSock, CongestionOps};
use crate::rng::ComponentRng;

/// Reno: stateless.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reno;

impl Reno {}

/// `tcp_reno` (tcp_cong.c); `undo_cwnd` is the default `tcp_reno_undo_cwnd`.
impl CongestionOps for Reno {
    const NAME: &'static str = "reno";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Reno {
        Reno
    }

    /// `tcp_reno_ssthresh`: ssthresh = max(cwnd / 2, 2) (RFC 5681 eq. 4
    /// with FlightSize replaced by cwnd, as Linux does).
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        (tp.snd_cwnd >> 1).max(2)
    }

    /// `tcp_reno_cong_avoid`: slow start while cwnd < ssthresh, leftover
    /// acks feed additive increase with w = cwnd (RFC 5681 eq. 3); nothing
    /// happens when the flow was not cwnd-limited.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, mut acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        let w = tp.snd_cwnd;
        tcp_cong_avoid_ai(tp, w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::{Fluid, Path};
    use super::super::{Cc, TCP_INFINITE_SSTHRESH};
    use super::*;

    fn limited(cwnd: u32, ssthresh: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: ssthresh,
            is_cwnd_limited: true,
            ..CcSock::default()
        }
    }

    #[test]
    fn slow_start_doubles_per_window_of_acks() {
        let mut r = Reno;
        let mut tp = limited(10, TCP_INFINITE_SSTHRESH);
        for _ in 0..10 {
            r.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 20);
    }

    #[test]
    fn leftover_acks_at_ssthresh_go_to_additive_increase() {
        let mut r = Reno;
        let mut tp = limited(10, 12);
        // 10 + 5 capped at 12; 3 left over count towards the first +1 at w = 12
        r.cong_avoid(&mut tp, 0, 5);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (12, 3));
        // 9 more acks complete the window: cwnd 13, counter 0
        for _ in 0..9 {
            r.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (13, 0));
    }

    #[test]
    fn congestion_avoidance_adds_one_packet_per_rtt() {
        let mut r = Reno;
        let mut tp = limited(40, 20);
        // one RTT = 40 acks → 41; the next RTT needs 41 acks → 42
        for _ in 0..40 {
            r.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 41);
        for _ in 0..40 {
            r.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (41, 40));
        r.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (42, 0));
    }

    #[test]
    fn cwnd_freezes_when_not_cwnd_limited() {
        let mut r = Reno;
        let mut tp = CcSock {
            is_cwnd_limited: false,
            ..limited(10, 5)
        };
        r.cong_avoid(&mut tp, 0, 100);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (10, 0));
    }

    #[test]
    fn ssthresh_halves_with_a_floor_of_two() {
        let mut r = Reno;
        assert_eq!(r.ssthresh(&limited(25, 0)), 12);
        assert_eq!(r.ssthresh(&limited(100, 0)), 50);
        assert_eq!(r.ssthresh(&limited(3, 0)), 2);
        assert_eq!(r.ssthresh(&limited(1, 0)), 2);
    }

    #[test]
    fn undo_restores_the_larger_of_cwnd_and_prior_cwnd() {
        let mut r = Reno;
        let tp = CcSock {
            prior_cwnd: 20,
            ..limited(6, 10)
        };
        assert_eq!(r.undo_cwnd(&tp), 20);
        let tp = CcSock {
            prior_cwnd: 20,
            ..limited(26, 10)
        };
        assert_eq!(r.undo_cwnd(&tp), 26);
    }

    /// Fluid run: 1000 packets/s bottleneck, 40 ms base RTT (BDP 40), a
    /// 40-packet buffer. Every loss halves cwnd exactly (ssthresh =
    /// cwnd/2), and in congestion avoidance the peaks repeat: a sawtooth
    /// between ~BDP+buffer and half of it.
    #[test]
    fn fluid_reno_sawtooth_halves_at_every_loss() {
        let path = Path {
            rate_pps: 1000,
            base_rtt_us: 40_000,
            buffer_pkts: 40,
        };
        let mut f = Fluid::new(Cc::from_name("reno").unwrap(), path);
        f.run_for_us(60_000_000);
        let ev = &f.recoveries;
        assert!(ev.len() >= 6, "{} losses", ev.len());
        for e in ev {
            assert_eq!(e.ssthresh, (e.cwnd_before / 2).max(2), "{e:?}");
        }
        // after the slow-start overshoot, every peak is the same height:
        // the queue overflows at in-flight = BDP + buffer + 1 = 81
        for e in &ev[2..] {
            assert!((81..=83).contains(&e.cwnd_before), "{e:?}");
        }
        // one RTT of AI is +1 and above the BDP the RTT is cwnd ms (1 ms
        // per queued packet): a cycle from 41 to 81 lasts about
        // Σ_{w=41}^{81} w ms = 2.5 s
        for w in ev[2..].windows(2) {
            let gap = w[1].at_us - w[0].at_us;
            assert!((2_000_000..=2_900_000).contains(&gap), "{gap}");
        }
    }
}
