//! `yeah` — YeAH-TCP as Linux runs it (net/ipv4/tcp_yeah.c: `tcp_yeah_init`,
//! `tcp_yeah_cong_avoid`, `tcp_yeah_ssthresh`, with Vegas' `pkts_acked`,
//! `set_state`, `cwnd_event` and `get_info` from tcp_vegas.c; Baiocchi,
//! Castellani & Vacirca, PFLDnet 2007; docs/semantics/tcp.md §18.7).
//!
//! Units: packets, µs. Constants: `ALPHA` 80 packets queued, `GAMMA` 1,
//! `DELTA` 3, `EPSILON` 1, `PHY` 8, `RHO` 16, `ZETA` 50; Scalable's
//! increase with `AI_CNT` 100.
//!
//! Fast mode grows as Scalable TCP (+1 per min(cwnd, 100) acked); slow
//! ("Reno") mode as Reno. Once per RTT, with three RTT samples, the queue
//! estimate Q = cwnd·(minRTT − baseRTT)/minRTT decides: Q > 80 packets or a
//! queueing delay above baseRTT/8 switches to Reno mode, and Q > 80 also
//! drains the queue at once (cwnd −= min(Q, cwnd/2), not below
//! `reno_count`). On loss YeAH removes the estimated queue (at least
//! cwnd/8, at most half), or half the window after 16 RTTs in Reno mode.

use super::vegas::VegasCore;
use super::{
    after, tcp_cong_avoid_ai, tcp_reno_undo_cwnd, tcp_slow_start, AckSample, CaEvent, CaState,
    CcInfo, CcProfile, CcSock, CongestionOps,
};
use crate::rng::ComponentRng;

/// `TCP_YEAH_ALPHA`: packets queued at the bottleneck that mean congestion.
const YEAH_ALPHA: u32 = 80;
/// `TCP_YEAH_GAMMA`: fraction of the queue removed per RTT.
const YEAH_GAMMA: u32 = 1;
/// `TCP_YEAH_DELTA`: log2 of the least fraction of cwnd removed on loss.
const YEAH_DELTA: u32 = 3;
/// `TCP_YEAH_EPSILON`: log2 of the most removed by precautionary decongestion.
const YEAH_EPSILON: u32 = 1;
/// `TCP_YEAH_PHY`: queueing delay above baseRTT/PHY means congestion.
const YEAH_PHY: u32 = 8;
/// `TCP_YEAH_RHO`: Reno-mode RTTs after which a loss halves.
const YEAH_RHO: u32 = 16;
/// `TCP_YEAH_ZETA`: fast RTTs before `reno_count` is reset.
const YEAH_ZETA: u32 = 50;
/// `TCP_SCALABLE_AI_CNT` as tcp_yeah.c defines it.
const SCALABLE_AI_CNT: u32 = 100;

/// `struct yeah`.
#[derive(Clone, Debug, Default)]
pub struct Yeah {
    vegas: VegasCore,
    last_q: u32,
    doing_reno_now: u32,
    reno_count: u32,
    fast_count: u32,
}

impl Yeah {
    /// Queue estimate of the last decision, packets.
    pub fn last_q(&self) -> u32 {
        self.last_q
    }
}

impl CongestionOps for Yeah {
    const NAME: &'static str = "yeah";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Yeah {
        Yeah::default()
    }

    /// `tcp_yeah_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.vegas.init(tp);
        self.doing_reno_now = 0;
        self.last_q = 0;
        self.reno_count = 2;
        tp.snd_cwnd_clamp = tp.snd_cwnd_clamp.min(u32::MAX / 128);
    }

    /// `tcp_yeah_ssthresh`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        let reduction = if self.doing_reno_now < YEAH_RHO {
            self.last_q.min((cwnd >> 1).max(2)).max(cwnd >> YEAH_DELTA)
        } else {
            (cwnd >> 1).max(2)
        };
        self.fast_count = 0;
        self.reno_count = (self.reno_count >> 1).max(2);
        (cwnd.wrapping_sub(reduction) as i32).max(2) as u32
    }

    /// `tcp_yeah_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, ack: u32, mut acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        let mut grow = true;
        if tp.in_slow_start() {
            acked = tcp_slow_start(tp, acked);
            grow = acked != 0;
        }
        if grow {
            let w = if self.doing_reno_now == 0 {
                tp.snd_cwnd.min(SCALABLE_AI_CNT)
            } else {
                tp.snd_cwnd
            };
            tcp_cong_avoid_ai(tp, w, acked);
        }
        if !after(ack, self.vegas.beg_snd_nxt) {
            return;
        }
        if self.vegas.cnt_rtt > 2 {
            let rtt = self.vegas.min_rtt;
            let base = self.vegas.base_rtt;
            let queue = ((tp.snd_cwnd as u64 * rtt.wrapping_sub(base) as u64) / rtt as u64) as u32;
            if queue > YEAH_ALPHA || rtt.wrapping_sub(base) > base / YEAH_PHY {
                if queue > YEAH_ALPHA && tp.snd_cwnd > self.reno_count {
                    let reduction = (queue / YEAH_GAMMA).min(tp.snd_cwnd >> YEAH_EPSILON);
                    tp.snd_cwnd = (tp.snd_cwnd - reduction).max(self.reno_count);
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
                if self.reno_count <= 2 {
                    self.reno_count = (tp.snd_cwnd >> 1).max(2);
                } else {
                    self.reno_count += 1;
                }
                self.doing_reno_now = (self.doing_reno_now + 1).min(0xff_ffff);
            } else {
                self.fast_count += 1;
                if self.fast_count > YEAH_ZETA {
                    self.reno_count = 2;
                    self.fast_count = 0;
                }
                self.doing_reno_now = 0;
            }
            self.last_q = queue;
        }
        self.vegas.beg_snd_una = self.vegas.beg_snd_nxt;
        self.vegas.beg_snd_nxt = tp.snd_nxt;
        self.vegas.beg_snd_cwnd = tp.snd_cwnd;
        self.vegas.cnt_rtt = 0;
        self.vegas.min_rtt = 0x7fff_ffff;
    }

    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        self.vegas.set_state(tp, new_state);
    }

    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        self.vegas.cwnd_event(tp, ev);
    }

    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &AckSample) {
        self.vegas.pkts_acked(sample);
    }

    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    fn get_info(&self, _tp: &CcSock) -> Option<CcInfo> {
        Some(self.vegas.get_info())
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("queue", self.last_q as f64));
        out.push(("doing_reno", self.doing_reno_now as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(cwnd: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 2,
            snd_nxt: 50_000,
            is_cwnd_limited: true,
            ..CcSock::default()
        }
    }

    fn measured(base: u32, rtt: u32) -> Yeah {
        let mut y = Yeah::default();
        let mut tp = ca(10);
        y.init(&mut tp);
        y.vegas.beg_snd_nxt = 1000;
        y.vegas.base_rtt = base;
        y.vegas.min_rtt = rtt;
        y.vegas.cnt_rtt = 3;
        y
    }

    /// cwnd 300, base 10 000, minRTT 15 000: Q = 300·5000/15000 = 100 >
    /// 80 → cwnd − min(100, 150) = 200 = ssthresh; reno_count becomes
    /// 200/2 = 100, Reno mode.
    #[test]
    fn a_long_queue_is_drained_at_once() {
        let mut y = measured(10_000, 15_000);
        let mut tp = ca(300);
        tp.snd_cwnd_cnt = 0;
        y.cong_avoid(&mut tp, 1001, 1);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (200, 200));
        assert_eq!((y.last_q, y.reno_count, y.doing_reno_now), (100, 100, 1));
        assert_eq!((y.vegas.beg_snd_nxt, y.vegas.cnt_rtt), (50_000, 0));
    }

    /// cwnd 100, base 10 000, minRTT 11 500: Q = 100·1500/11500 = 13 ≤ 80,
    /// but 1500 µs > 10 000/8 = 1250: Reno mode without a cut.
    #[test]
    fn queueing_delay_alone_switches_to_reno_mode() {
        let mut y = measured(10_000, 11_500);
        let mut tp = ca(100);
        y.cong_avoid(&mut tp, 1001, 1);
        assert_eq!(tp.snd_cwnd, 100);
        assert_eq!((y.last_q, y.doing_reno_now, y.reno_count), (13, 1, 50));
        // 1200 µs ≤ 1250: fast (Scalable) mode again
        let mut y2 = measured(10_000, 11_200);
        y2.doing_reno_now = 5;
        y2.cong_avoid(&mut tp, 1001, 1);
        assert_eq!((y2.doing_reno_now, y2.fast_count), (0, 1));
    }

    #[test]
    fn fast_mode_is_scalable_and_reno_mode_is_reno() {
        let mut y = Yeah::default();
        let mut tp = ca(1000);
        y.init(&mut tp);
        y.vegas.beg_snd_nxt = 1_000_000; // no decision
        for _ in 0..100 {
            y.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!(tp.snd_cwnd, 1001);
        y.doing_reno_now = 1;
        tp.snd_cwnd_cnt = 0;
        for _ in 0..1000 {
            y.cong_avoid(&mut tp, 0, 1);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1001, 1000));
    }

    /// Loss in fast mode: the queue estimate, bounded by [cwnd/8, cwnd/2].
    #[test]
    fn loss_removes_the_queue() {
        let mut y = Yeah {
            last_q: 30,
            reno_count: 9,
            fast_count: 7,
            ..Yeah::default()
        };
        assert_eq!(y.ssthresh(&ca(100)), 70);
        assert_eq!((y.reno_count, y.fast_count), (4, 0));
        y.last_q = 2;
        assert_eq!(y.ssthresh(&ca(100)), 88); // at least 100/8 = 12
        y.last_q = 90;
        assert_eq!(y.ssthresh(&ca(100)), 50); // at most half
        y.doing_reno_now = 16;
        assert_eq!(y.ssthresh(&ca(100)), 50);
        assert_eq!(y.ssthresh(&ca(3)), 2);
    }
}
