//! `vegas` — TCP Vegas as Linux runs it (net/ipv4/tcp_vegas.c:
//! `tcp_vegas_init`, `vegas_enable`/`vegas_disable`, `tcp_vegas_pkts_acked`,
//! `tcp_vegas_state`, `tcp_vegas_cwnd_event`, `tcp_vegas_cong_avoid`,
//! `tcp_vegas_get_info`; Brakmo & Peterson, IEEE JSAC 13(8), 1995;
//! docs/semantics/tcp.md §18.1).
//!
//! Units: windows in packets, RTTs in µs (each sample + 1, so never 0).
//! Module parameters (defaults): `alpha` 2, `beta` 4, `gamma` 1 packets.
//!
//! Once per RTT (the first ACK beyond the `snd_nxt` recorded one RTT
//! before), with at least three RTT samples in that RTT, Vegas compares
//! the window with the one the base RTT would need for the rate actually
//! achieved: `diff = cwnd·(minRTT − baseRTT)/baseRTT`, the packets it keeps
//! queued. In slow start, `diff > gamma` ends slow start (cwnd cut to the
//! achieved rate's window + 1); in congestion avoidance cwnd grows by one
//! when `diff < alpha`, shrinks by one when `diff > beta`. Outside Open, or
//! with too few samples, it is Reno. Loss handling is Reno's
//! (`tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`).
//!
//! [`VegasCore`] is the part `tcp_yeah.c` shares (its `struct vegas`,
//! `pkts_acked`, `set_state`, `cwnd_event`, `get_info`).

use super::{
    after, tcp_current_ssthresh, tcp_reno_cong_avoid, tcp_reno_ssthresh, tcp_slow_start, AckSample,
    CaEvent, CaState, CcInfo, CcProfile, CcSock, CongestionOps,
};
use crate::rng::ComponentRng;

/// Vegas' module parameters (Linux defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VegasParams {
    /// fewest packets to keep queued (grow below)
    pub alpha: u32,
    /// most packets to keep queued (shrink above)
    pub beta: u32,
    /// queued packets that end slow start
    pub gamma: u32,
}

impl Default for VegasParams {
    fn default() -> Self {
        VegasParams {
            alpha: 2,
            beta: 4,
            gamma: 1,
        }
    }
}

/// "No sample yet" for the RTT minima (`0x7fffffff`).
const NO_RTT: u32 = 0x7fff_ffff;

/// `struct vegas` (tcp_vegas.h), shared with YeAH.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VegasCore {
    /// right edge of the window when this RTT began
    pub beg_snd_nxt: u32,
    /// left edge then (YeAH writes it)
    pub beg_snd_una: u32,
    /// cwnd then (YeAH writes it)
    pub beg_snd_cwnd: u32,
    /// Vegas decisions enabled (CA state Open)
    pub doing_vegas_now: bool,
    /// RTT samples in this RTT (u16 as in the kernel)
    pub cnt_rtt: u16,
    /// smallest RTT sample in this RTT, µs
    pub min_rtt: u32,
    /// smallest RTT sample ever, µs
    pub base_rtt: u32,
}

impl VegasCore {
    /// `vegas_enable`: start a fresh measurement RTT at `snd_nxt`.
    pub fn enable(&mut self, tp: &CcSock) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = tp.snd_nxt;
        self.cnt_rtt = 0;
        self.min_rtt = NO_RTT;
    }

    /// `tcp_vegas_init`: forget the base RTT too.
    pub fn init(&mut self, tp: &CcSock) {
        self.base_rtt = NO_RTT;
        self.enable(tp);
    }

    /// `tcp_vegas_pkts_acked`.
    pub fn pkts_acked(&mut self, sample: &AckSample) {
        if sample.rtt_us < 0 {
            return;
        }
        // s32 + 1 stored in a u32: never zero
        let vrtt = (sample.rtt_us as i32).wrapping_add(1) as u32;
        if vrtt < self.base_rtt {
            self.base_rtt = vrtt;
        }
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt = self.cnt_rtt.wrapping_add(1);
    }

    /// `tcp_vegas_state`: enabled in Open only.
    pub fn set_state(&mut self, tp: &CcSock, new_state: CaState) {
        if new_state == CaState::Open {
            self.enable(tp);
        } else {
            self.doing_vegas_now = false;
        }
    }

    /// `tcp_vegas_cwnd_event`: restart after idle re-initialises.
    pub fn cwnd_event(&mut self, tp: &CcSock, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.init(tp);
        }
    }

    /// `tcp_vegas_get_info`.
    pub fn get_info(&self) -> CcInfo {
        CcInfo::Vegas {
            enabled: self.doing_vegas_now as u32,
            rttcnt: self.cnt_rtt as u32,
            rtt: self.base_rtt,
            minrtt: self.min_rtt,
        }
    }
}

/// Vegas: [`VegasCore`] and the parameters.
#[derive(Clone, Debug, Default)]
pub struct Vegas {
    params: VegasParams,
    v: VegasCore,
}

impl Vegas {
    /// With explicit module parameters.
    pub fn with_params(params: VegasParams) -> Vegas {
        Vegas {
            params,
            v: VegasCore::default(),
        }
    }

    /// The shared state (tests, traces).
    pub fn core(&self) -> &VegasCore {
        &self.v
    }
}

/// `tcp_vegas_ssthresh`: min(ssthresh, cwnd).
#[inline]
fn vegas_ssthresh(tp: &CcSock) -> u32 {
    tp.snd_ssthresh.min(tp.snd_cwnd)
}

impl CongestionOps for Vegas {
    const NAME: &'static str = "vegas";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Vegas {
        Vegas::default()
    }

    fn init(&mut self, tp: &mut CcSock) {
        self.v.init(tp);
    }

    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// `tcp_vegas_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, ack: u32, acked: u32) {
        if !self.v.doing_vegas_now {
            tcp_reno_cong_avoid(tp, acked);
            return;
        }
        if after(ack, self.v.beg_snd_nxt) {
            // the once-per-RTT decision
            self.v.beg_snd_nxt = tp.snd_nxt;
            if self.v.cnt_rtt <= 2 {
                // too few samples: maybe only delayed ACKs; behave as Reno
                tcp_reno_cong_avoid(tp, acked);
            } else {
                let rtt = self.v.min_rtt;
                let base = self.v.base_rtt;
                let target_cwnd = (tp.snd_cwnd as u64 * base as u64) / rtt as u64;
                // packets queued, in the kernel's u32 arithmetic
                let diff = tp.snd_cwnd.wrapping_mul(rtt.wrapping_sub(base)) / base;
                if diff > self.params.gamma && tp.in_slow_start() {
                    tp.snd_cwnd = tp.snd_cwnd.min((target_cwnd as u32).wrapping_add(1));
                    tp.snd_ssthresh = vegas_ssthresh(tp);
                } else if tp.in_slow_start() {
                    tcp_slow_start(tp, acked);
                } else if diff > self.params.beta {
                    tp.snd_cwnd = tp.snd_cwnd.wrapping_sub(1);
                    tp.snd_ssthresh = vegas_ssthresh(tp);
                } else if diff < self.params.alpha {
                    tp.snd_cwnd = tp.snd_cwnd.wrapping_add(1);
                }
                if tp.snd_cwnd < 2 {
                    tp.snd_cwnd = 2;
                } else if tp.snd_cwnd > tp.snd_cwnd_clamp {
                    tp.snd_cwnd = tp.snd_cwnd_clamp;
                }
                tp.snd_ssthresh = tcp_current_ssthresh(tp);
            }
            self.v.cnt_rtt = 0;
            self.v.min_rtt = NO_RTT;
        } else if tp.in_slow_start() {
            tcp_slow_start(tp, acked);
        }
    }

    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        self.v.set_state(tp, new_state);
    }

    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        self.v.cwnd_event(tp, ev);
    }

    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &AckSample) {
        self.v.pkts_acked(sample);
    }

    fn get_info(&self, _tp: &CcSock) -> Option<CcInfo> {
        Some(self.v.get_info())
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("base_rtt_us", self.v.base_rtt as f64));
        out.push(("min_rtt_us", self.v.min_rtt as f64));
        out.push(("doing_vegas", self.v.doing_vegas_now as u32 as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::super::TCP_INFINITE_SSTHRESH;
    use super::*;

    fn sample(rtt_us: i64) -> AckSample {
        AckSample {
            pkts_acked: 1,
            rtt_us,
            in_flight: 0,
        }
    }

    /// A Vegas whose current RTT saw `n` samples with minimum `rtt`, base
    /// `base`, and whose measurement RTT ends at sequence 1000.
    fn measured(base: u32, rtt: u32, n: u16) -> Vegas {
        Vegas {
            params: VegasParams::default(),
            v: VegasCore {
                doing_vegas_now: true,
                beg_snd_nxt: 1000,
                cnt_rtt: n,
                min_rtt: rtt,
                base_rtt: base,
                ..VegasCore::default()
            },
        }
    }

    fn tp(cwnd: u32, ssthresh: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: ssthresh,
            snd_nxt: 5000,
            is_cwnd_limited: true,
            ..CcSock::default()
        }
    }

    #[test]
    fn samples_add_one_microsecond_and_keep_minima() {
        let mut v = Vegas::default();
        let mut t = tp(10, TCP_INFINITE_SSTHRESH);
        v.init(&mut t);
        assert_eq!((v.v.base_rtt, v.v.min_rtt), (NO_RTT, NO_RTT));
        v.pkts_acked(&mut t, &sample(20_000));
        v.pkts_acked(&mut t, &sample(-1)); // no sample: ignored
        v.pkts_acked(&mut t, &sample(25_000));
        v.pkts_acked(&mut t, &sample(19_999));
        assert_eq!(
            (v.v.base_rtt, v.v.min_rtt, v.v.cnt_rtt),
            (20_000, 20_000, 3)
        );
        assert_eq!(
            v.get_info(&t),
            Some(CcInfo::Vegas {
                enabled: 1,
                rttcnt: 3,
                rtt: 20_000,
                minrtt: 20_000
            })
        );
    }

    /// cwnd 40, base 20 000 µs, minRTT 22 000 µs: diff = 40·2000/20000 = 4
    /// packets queued — at beta, so cwnd stays; at 22 500 µs diff = 5 > 4:
    /// −1; at 20 500 µs diff = 1 < 2: +1.
    #[test]
    fn congestion_avoidance_holds_diff_between_alpha_and_beta() {
        for (rtt, want) in [(22_000, 40), (22_500, 39), (20_500, 41), (21_000, 40)] {
            let mut v = measured(20_000, rtt, 5);
            let mut t = tp(40, 30);
            v.cong_avoid(&mut t, 1001, 1);
            assert_eq!(t.snd_cwnd, want, "rtt {rtt}");
            // the next RTT starts at snd_nxt with a clean slate
            assert_eq!(
                (v.v.beg_snd_nxt, v.v.cnt_rtt, v.v.min_rtt),
                (5000, 0, NO_RTT)
            );
        }
        // shrinking also lowers ssthresh to cwnd (min(40, 39)), and
        // current_ssthresh (Open) keeps max(39, 19 + 9) = 39
        let mut v = measured(20_000, 22_500, 5);
        let mut t = tp(40, 40);
        v.cong_avoid(&mut t, 1001, 1);
        assert_eq!((t.snd_cwnd, t.snd_ssthresh), (39, 39));
    }

    /// Slow start: cwnd 20, base 10 000, minRTT 11 000: diff = 20·1000/10000
    /// = 2 > gamma 1 → cwnd = min(20, 20·10000/11000 + 1 = 19) = 19 and
    /// ssthresh = min(∞, 19); current_ssthresh then gives max(19, 9 + 4).
    #[test]
    fn slow_start_ends_when_more_than_gamma_packets_queue() {
        let mut v = measured(10_000, 11_000, 3);
        let mut t = tp(20, TCP_INFINITE_SSTHRESH);
        v.cong_avoid(&mut t, 1001, 2);
        assert_eq!((t.snd_cwnd, t.snd_ssthresh), (19, 19));
        // diff 1 (10 500 µs: 20·500/10000 = 1) keeps slow-starting: +2
        let mut v = measured(10_000, 10_500, 3);
        let mut t = tp(20, TCP_INFINITE_SSTHRESH);
        v.cong_avoid(&mut t, 1001, 2);
        assert_eq!(t.snd_cwnd, 22);
        // current_ssthresh in Open: max(∞, ...) stays ∞
        assert_eq!(t.snd_ssthresh, TCP_INFINITE_SSTHRESH);
    }

    #[test]
    fn within_an_rtt_only_slow_start_grows_and_few_samples_mean_reno() {
        let mut v = measured(10_000, 30_000, 9);
        let mut t = tp(20, 10);
        v.cong_avoid(&mut t, 1000, 1); // not after beg_snd_nxt, CA: nothing
        assert_eq!((t.snd_cwnd, t.snd_cwnd_cnt), (20, 0));
        let mut t = tp(5, 10);
        v.cong_avoid(&mut t, 1000, 3); // slow start within the RTT
        assert_eq!(t.snd_cwnd, 8);
        // two samples only: Reno's AI (counter +1)
        let mut v = measured(10_000, 30_000, 2);
        let mut t = tp(20, 10);
        v.cong_avoid(&mut t, 1001, 1);
        assert_eq!((t.snd_cwnd, t.snd_cwnd_cnt), (20, 1));
        assert_eq!(v.v.cnt_rtt, 0);
    }

    #[test]
    fn outside_open_it_is_reno_and_reopening_restarts_the_rtt() {
        let mut v = measured(10_000, 30_000, 9);
        let mut t = tp(20, 10);
        v.set_state(&mut t, CaState::Recovery);
        assert!(!v.v.doing_vegas_now);
        v.cong_avoid(&mut t, 1001, 1);
        assert_eq!((t.snd_cwnd, t.snd_cwnd_cnt), (20, 1));
        t.snd_nxt = 7000;
        v.set_state(&mut t, CaState::Open);
        assert!(v.v.doing_vegas_now);
        assert_eq!((v.v.beg_snd_nxt, v.v.cnt_rtt), (7000, 0));
        assert_eq!(v.v.base_rtt, 10_000); // kept
        v.cwnd_event(&mut t, CaEvent::TxStart); // idle restart: forgotten
        assert_eq!(v.v.base_rtt, NO_RTT);
        assert_eq!(v.ssthresh(&tp(25, 0)), 12);
    }
}
