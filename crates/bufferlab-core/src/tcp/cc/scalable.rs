//! `scalable` — Scalable TCP as Linux runs it (net/ipv4/tcp_scalable.c:
//! `tcp_scalable_cong_avoid`, `tcp_scalable_ssthresh`; Kelly, CCR 33(2),
//! 2003; docs/semantics/tcp.md §18.5).
//!
//! Units: packets. Constants: `TCP_SCALABLE_AI_CNT` 100, `MD_SCALE` 3.
//! Above ssthresh, +1 packet per min(cwnd, 100) packets acked (so +1 % per
//! RTT once cwnd exceeds 100); on loss cwnd − cwnd/8. Undo is Reno's.
//!
//! [lab2019] (before Linux 5.6's stretch-ACK fixes): `AI_CNT` 50 ("to
//! account for delayed ACKs"), every ACK counts as one packet in additive
//! increase, and acks left over when slow start reaches ssthresh are lost.

use super::{tcp_cong_avoid_ai, tcp_slow_start, CcProfile, CcSock, CongestionOps};
use crate::rng::ComponentRng;

/// `TCP_SCALABLE_AI_CNT` ([modern]).
pub(super) const AI_CNT: u32 = 100;
/// `TCP_SCALABLE_AI_CNT` before 5.6 ([lab2019]).
const AI_CNT_LAB2019: u32 = 50;
/// `TCP_SCALABLE_MD_SCALE`: decrease by cwnd >> 3.
const MD_SCALE: u32 = 3;

/// Scalable TCP: no state but the kernel generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scalable {
    profile: CcProfile,
}

impl CongestionOps for Scalable {
    const NAME: &'static str = "scalable";

    fn create(profile: CcProfile, _rng: ComponentRng) -> Scalable {
        Scalable { profile }
    }

    /// `tcp_scalable_ssthresh`: max(cwnd − cwnd/8, 2).
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        (tp.snd_cwnd - (tp.snd_cwnd >> MD_SCALE)).max(2)
    }

    /// `tcp_scalable_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, mut acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if self.profile == CcProfile::Lab2019 {
            if tp.in_slow_start() {
                tcp_slow_start(tp, acked);
            } else {
                let w = tp.snd_cwnd.min(AI_CNT_LAB2019);
                tcp_cong_avoid_ai(tp, w, 1);
            }
            return;
        }
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        let w = tp.snd_cwnd.min(AI_CNT);
        tcp_cong_avoid_ai(tp, w, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(cwnd: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 2,
            is_cwnd_limited: true,
            ..CcSock::default()
        }
    }

    const MODERN: Scalable = Scalable {
        profile: CcProfile::Modern,
    };

    #[test]
    fn one_packet_per_hundred_acked_above_a_hundred() {
        let mut s = MODERN;
        let mut tp = ca(1000);
        for _ in 0..1000 {
            s.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 1010); // +1 % per RTT
        let mut tp = ca(50); // below 100: Reno's one per cwnd
        for _ in 0..50 {
            s.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 51);
    }

    #[test]
    fn loss_takes_an_eighth() {
        let mut s = Scalable::default();
        assert_eq!(s.ssthresh(&ca(1000)), 875);
        assert_eq!(s.ssthresh(&ca(100)), 88); // 100 − 12
        assert_eq!(s.ssthresh(&ca(7)), 7); // 7 − 0
        assert_eq!(s.ssthresh(&ca(1)), 2);
    }

    /// [lab2019]: +1 per 50 ACKs whatever they ack (a stretch ACK of 2
    /// counts 1): cwnd 1000 → 1020 after 1000 ACKs; slow-start leftovers
    /// are dropped (10 + 6 capped at ssthresh 14, nothing to AI).
    #[test]
    fn lab2019_counts_acks_with_ai_cnt_fifty() {
        let mut s = Scalable::default();
        let mut tp = ca(1000);
        for _ in 0..1000 {
            s.cong_avoid(&mut tp, 0, 2);
        }
        assert_eq!(tp.snd_cwnd, 1020);
        let mut tp = ca(10);
        tp.snd_ssthresh = 14;
        s.cong_avoid(&mut tp, 0, 6);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (14, 0));
        let mut tp = ca(10);
        tp.snd_ssthresh = 14;
        let mut m = MODERN;
        m.cong_avoid(&mut tp, 0, 6);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (14, 2));
    }
}
