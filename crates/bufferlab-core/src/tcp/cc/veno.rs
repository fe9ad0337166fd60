//! `veno` — TCP Veno as Linux runs it (net/ipv4/tcp_veno.c: `veno_enable`,
//! `veno_disable`, `tcp_veno_init`, `tcp_veno_pkts_acked`, `tcp_veno_state`,
//! `tcp_veno_cwnd_event`, `tcp_veno_cong_avoid`, `tcp_veno_ssthresh`; Fu &
//! Liew, IEEE JSAC 21(2), 2003; docs/semantics/tcp.md §18.9).
//!
//! Units: packets, µs; `diff` fixed point << 1. Constant: `beta` 3 packets.
//!
//! Veno estimates the packets it has queued, N = cwnd·(RTT − baseRTT)/RTT
//! (Vegas' diff, from the smallest RTT sample since the previous ACK), and
//! uses it only to tell congestive from random loss: with N < 3 a loss cuts
//! cwnd by 1/5 (random loss), otherwise by 1/2; and while N ≥ 3 the
//! additive increase runs at one packet every other RTT. It is Reno outside
//! Open and until three RTT samples were taken. Undo is Reno's.
//!
//! [lab2019] (before Linux 5.6's stretch-ACK fixes): every ACK counts as one
//! packet in congestion avoidance, and acks left over when slow start
//! reaches ssthresh are lost.

use super::{
    tcp_cong_avoid_ai, tcp_reno_cong_avoid, tcp_reno_undo_cwnd, tcp_slow_start, AckSample, CaEvent,
    CaState, CcProfile, CcSock, CongestionOps,
};
use crate::rng::ComponentRng;

/// `V_PARAM_SHIFT`.
const V_PARAM_SHIFT: u32 = 1;
/// `beta`: 3 packets queued, << 1.
const BETA: u32 = 3 << V_PARAM_SHIFT;

/// `struct veno`.
#[derive(Clone, Debug, Default)]
pub struct Veno {
    profile: CcProfile,
    doing_veno_now: bool,
    cntrtt: u16,
    minrtt: u32,
    basertt: u32,
    /// increase on the next window's worth of acks (congestive state)
    inc: u32,
    /// packets queued << 1
    diff: u32,
}

impl Veno {
    /// The last queue estimate, packets << 1.
    pub fn diff(&self) -> u32 {
        self.diff
    }

    /// `veno_enable`.
    fn enable(&mut self) {
        self.doing_veno_now = true;
        self.minrtt = 0x7fff_ffff;
    }
}

impl CongestionOps for Veno {
    const NAME: &'static str = "veno";

    fn create(profile: CcProfile, _rng: ComponentRng) -> Veno {
        Veno {
            profile,
            ..Veno::default()
        }
    }

    /// `tcp_veno_init`.
    fn init(&mut self, _tp: &mut CcSock) {
        self.basertt = 0x7fff_ffff;
        self.inc = 1;
        self.enable();
    }

    /// `tcp_veno_ssthresh`: 4/5 in the non-congestive state, else 1/2.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.diff < BETA {
            (tp.snd_cwnd.wrapping_mul(4) / 5).max(2)
        } else {
            (tp.snd_cwnd >> 1).max(2)
        }
    }

    /// `tcp_veno_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, mut acked: u32) {
        if !self.doing_veno_now {
            tcp_reno_cong_avoid(tp, acked);
            return;
        }
        if !tp.is_cwnd_limited {
            return;
        }
        if self.cntrtt <= 2 {
            tcp_reno_cong_avoid(tp, acked);
        } else {
            let rtt = self.minrtt;
            let target = ((tp.snd_cwnd as u64 * self.basertt as u64) << V_PARAM_SHIFT) / rtt as u64;
            self.diff = (tp.snd_cwnd << V_PARAM_SHIFT).wrapping_sub(target as u32);
            let mut grow = true;
            if tp.in_slow_start() {
                acked = tcp_slow_start(tp, acked);
                grow = acked != 0 && self.profile != CcProfile::Lab2019;
            } else if self.profile == CcProfile::Lab2019 {
                acked = 1;
            }
            if grow {
                if self.diff < BETA {
                    // non-congestive: Reno's +1 per RTT
                    let w = tp.snd_cwnd;
                    tcp_cong_avoid_ai(tp, w, acked);
                } else if tp.snd_cwnd_cnt >= tp.snd_cwnd {
                    // congestive: +1 every other RTT
                    if self.inc != 0 && tp.snd_cwnd < tp.snd_cwnd_clamp {
                        tp.snd_cwnd += 1;
                        self.inc = 0;
                    } else {
                        self.inc = 1;
                    }
                    tp.snd_cwnd_cnt = 0;
                } else {
                    tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(acked);
                }
            }
            if tp.snd_cwnd < 2 {
                tp.snd_cwnd = 2;
            } else if tp.snd_cwnd > tp.snd_cwnd_clamp {
                tp.snd_cwnd = tp.snd_cwnd_clamp;
            }
        }
        // the sample count is kept (the kernel's reset is commented out)
        self.minrtt = 0x7fff_ffff;
    }

    /// `tcp_veno_state`.
    fn set_state(&mut self, _tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Open {
            self.enable();
        } else {
            self.doing_veno_now = false;
        }
    }

    /// `tcp_veno_cwnd_event`.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.init(tp);
        }
    }

    /// `tcp_veno_pkts_acked`: as Vegas'.
    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &AckSample) {
        if sample.rtt_us < 0 {
            return;
        }
        let vrtt = (sample.rtt_us as i32).wrapping_add(1) as u32;
        if vrtt < self.basertt {
            self.basertt = vrtt;
        }
        self.minrtt = self.minrtt.min(vrtt);
        self.cntrtt = self.cntrtt.wrapping_add(1);
    }

    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("queued", self.diff as f64 / 2.0));
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

    fn veno(base: u32, min: u32) -> Veno {
        let mut v = Veno::default();
        v.init(&mut ca(2));
        v.basertt = base;
        v.minrtt = min;
        v.cntrtt = 3;
        v
    }

    /// cwnd 50, base 20 000, RTT 21 000: target = 50·20000·2/21000 = 95,
    /// diff = 100 − 95 = 5 (2.5 packets) < 6: non-congestive, Reno's AI,
    /// and a loss takes a fifth: 40. RTT 25 000: target 80, diff 20
    /// (10 packets): congestive, a loss halves.
    #[test]
    fn queue_estimate_decides_the_state() {
        let mut v = veno(20_000, 21_000);
        let mut tp = ca(50);
        v.cong_avoid(&mut tp, 0, 1);
        assert_eq!((v.diff, tp.snd_cwnd_cnt), (5, 1));
        assert_eq!(v.ssthresh(&tp), 40);
        assert_eq!(v.minrtt, 0x7fff_ffff); // reset per ACK
        let mut v = veno(20_000, 25_000);
        v.cong_avoid(&mut tp, 0, 1);
        assert_eq!(v.diff, 20);
        assert_eq!(v.ssthresh(&tp), 25);
    }

    /// In the congestive state (cwnd 20 at RTT = 1.25 base: diff = 40 − 32
    /// = 8 ≥ 6) a full window of acks alternately adds one packet and
    /// nothing.
    #[test]
    fn congestive_state_grows_every_other_rtt() {
        let mut v = veno(20_000, 25_000);
        let mut tp = ca(20);
        let mut cwnds = vec![];
        for _ in 0..4 {
            for _ in 0..=tp.snd_cwnd {
                v.minrtt = 25_000;
                v.cong_avoid(&mut tp, 0, 1);
            }
            cwnds.push(tp.snd_cwnd);
        }
        assert_eq!(cwnds, [21, 21, 22, 22]);
    }

    #[test]
    fn reno_until_three_samples_and_outside_open() {
        let mut v = Veno::default();
        let mut tp = ca(10);
        v.init(&mut tp);
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 999,
            in_flight: 0,
        };
        v.pkts_acked(&mut tp, &s);
        v.pkts_acked(&mut tp, &s);
        assert_eq!((v.basertt, v.cntrtt), (1000, 2));
        v.cong_avoid(&mut tp, 0, 1);
        assert_eq!(tp.snd_cwnd_cnt, 1);
        assert_eq!(v.diff, 0);
        v.set_state(&mut tp, CaState::Loss);
        v.cntrtt = 5;
        v.cong_avoid(&mut tp, 0, 1);
        assert_eq!((tp.snd_cwnd_cnt, v.diff), (2, 0));
        assert_eq!(v.ssthresh(&ca(10)), 8);
        assert_eq!(v.ssthresh(&ca(2)), 2);
    }

    /// [lab2019]: ACKs, not packets, in congestion avoidance.
    #[test]
    fn lab2019_counts_acks() {
        let mut v = Veno::create(CcProfile::Lab2019, ComponentRng::new(0, "t"));
        v.init(&mut ca(2));
        v.basertt = 20_000;
        v.cntrtt = 3;
        let mut tp = ca(50);
        v.minrtt = 21_000;
        v.cong_avoid(&mut tp, 0, 3);
        assert_eq!(tp.snd_cwnd_cnt, 1);
        v.minrtt = 25_000;
        v.cong_avoid(&mut tp, 0, 3);
        assert_eq!(tp.snd_cwnd_cnt, 2);
    }
}
