//! RTT estimation and the retransmission timeout (docs/semantics/tcp.md §5), and the
//! windowed minimum filter behind `tcp_min_rtt()`.
//!
//! Ports, not copies, of `tcp_rtt_estimator()` / `tcp_set_rto()` /
//! `tcp_bound_rto()` (net/ipv4/tcp_input.c, include/net/tcp.h) and of
//! Kathleen Nichols' running minimum `minmax_running_min()`
//! (lib/win_minmax.c). Units are the kernel's: `srtt_us` is µs << 3,
//! `mdev_us`/`mdev_max_us`/`rttvar_us` are µs << 2, the RTO is in jiffies
//! (HZ 250) and the min filter is stamped in jiffies.

use super::cc::{usecs_to_jiffies, HZ};
use super::seq::after;

/// `TCP_RTO_MAX`: 120 s, in jiffies.
pub const TCP_RTO_MAX: u32 = 120 * HZ;
/// `TCP_RTO_MIN`: 200 ms, in jiffies.
pub const TCP_RTO_MIN: u32 = HZ / 5;
/// `TCP_TIMEOUT_INIT`: 1 s, in jiffies (RFC 6298 initial RTO).
pub const TCP_TIMEOUT_INIT: u32 = HZ;
/// `TCP_TIMEOUT_MIN`: 2 jiffies (8 ms at HZ 250).
pub const TCP_TIMEOUT_MIN: u32 = 2;
/// `TCP_TIMEOUT_MIN_US`: 2 ms.
pub const TCP_TIMEOUT_MIN_US: u32 = 2_000;
/// µs per jiffy at HZ 250.
pub const USEC_PER_JIFFY: u32 = 1_000_000 / HZ;

/// `jiffies_to_usecs`.
#[inline]
pub fn jiffies_to_usecs(j: u32) -> u32 {
    j.saturating_mul(USEC_PER_JIFFY)
}

/// The per-socket RTT estimator (`tcp_sock` fields `srtt_us`, `mdev_us`,
/// `mdev_max_us`, `rttvar_us`, `rtt_seq`).
#[derive(Clone, Debug)]
pub struct RttEstimator {
    /// smoothed RTT, µs << 3 (0 = no sample yet)
    pub srtt_us: u32,
    /// mean deviation, µs << 2 (what `tcpi_rttvar` reports, >> 2)
    pub mdev_us: u32,
    /// maximal mdev over the current flight, µs << 2
    pub mdev_max_us: u32,
    /// the RTO's variance term, µs << 2, never below `rto_min_us`
    pub rttvar_us: u32,
    /// `snd_nxt` when the current flight's variance window started
    pub rtt_seq: u32,
    /// `tcp_rto_min_us()`: 200 ms unless configured otherwise
    pub rto_min_us: u32,
}

impl RttEstimator {
    /// `tcp_init_sock`: no sample, `mdev_us` = 1 s.
    pub fn new(rto_min_us: u32) -> Self {
        RttEstimator {
            srtt_us: 0,
            mdev_us: jiffies_to_usecs(TCP_TIMEOUT_INIT),
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            rto_min_us,
        }
    }

    /// `tcp_rtt_estimator(sk, m)`: Jacobson's estimator with Linux's Eifel-like
    /// damping of mdev when the RTT falls, and `rttvar` that decays at most
    /// once per flight and never below `rto_min`.
    pub fn sample(&mut self, mrtt_us: i64, snd_una: u32, snd_nxt: u32) {
        let mut m = mrtt_us;
        let mut srtt = self.srtt_us as i64;
        if srtt != 0 {
            m -= srtt >> 3; // m is now the error in the estimate
            srtt += m; // srtt = 7/8 srtt + 1/8 m
            if m < 0 {
                m = -m;
                m -= (self.mdev_us >> 2) as i64;
                if m > 0 {
                    m >>= 3; // falling RTT: finer gain for mdev
                }
            } else {
                m -= (self.mdev_us >> 2) as i64;
            }
            self.mdev_us = (self.mdev_us as i64).wrapping_add(m) as u32;
            if self.mdev_us > self.mdev_max_us {
                self.mdev_max_us = self.mdev_us;
                if self.mdev_max_us > self.rttvar_us {
                    self.rttvar_us = self.mdev_max_us;
                }
            }
            if after(snd_una, self.rtt_seq) {
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = self.rto_min_us;
            }
        } else {
            // first sample
            srtt = m << 3;
            self.mdev_us = (m << 1) as u32; // so that RTO = 3 RTT
            self.rttvar_us = self.mdev_us.max(self.rto_min_us);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
        self.srtt_us = (srtt.max(1)) as u32;
    }

    /// `__tcp_set_rto` + `tcp_bound_rto`: the RTO without backoff, jiffies.
    pub fn rto_jiffies(&self) -> u32 {
        usecs_to_jiffies((self.srtt_us >> 3).saturating_add(self.rttvar_us)).min(TCP_RTO_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::minmax::MinMax;

    const RTO_MIN_US: u32 = 200_000;

    #[test]
    fn first_sample_sets_srtt_and_rto_is_rtt_plus_rto_min() {
        let mut r = RttEstimator::new(RTO_MIN_US);
        r.sample(20_000, 1, 1000);
        assert_eq!(r.srtt_us, 160_000); // 20 ms << 3
        assert_eq!(r.mdev_us, 40_000); // 2 m
        assert_eq!(r.rttvar_us, 200_000); // floored at rto_min
        assert_eq!(r.mdev_max_us, 200_000);
        assert_eq!(r.rtt_seq, 1000);
        // (20 000 + 200 000) µs = 55 jiffies exactly
        assert_eq!(r.rto_jiffies(), 55);
    }

    #[test]
    fn estimator_follows_the_kernel_arithmetic_sample_by_sample() {
        let mut r = RttEstimator::new(RTO_MIN_US);
        r.sample(20_000, 1, 1000);
        // rising sample 28 ms: err 8000 → srtt 168 000; mdev 40 000 + (8000 − 10 000)
        r.sample(28_000, 1, 1000);
        assert_eq!(r.srtt_us, 168_000);
        assert_eq!(r.mdev_us, 38_000);
        assert_eq!(r.rttvar_us, 200_000);
        // falling sample 12 ms: err −9000 → srtt 159 000; |err| − mdev/4 = 9000 − 9500 < 0: mdev += −500
        r.sample(12_000, 1, 1000);
        assert_eq!(r.srtt_us, 159_000);
        assert_eq!(r.mdev_us, 37_500);
        // large falling sample: err −17 875 (srtt>>3 = 19 875), |err| − 9375 = 8500 > 0 → >>3 = 1062
        r.sample(2_000, 1, 1000);
        assert_eq!(r.srtt_us, 141_125);
        assert_eq!(r.mdev_us, 38_562);
        // RTO = usecs_to_jiffies(17 640 + 200 000) = 54.41 → 55 jiffies
        assert_eq!(r.rto_jiffies(), 55);
    }

    #[test]
    fn rttvar_decays_once_per_flight_but_not_below_rto_min() {
        let mut r = RttEstimator::new(RTO_MIN_US);
        r.sample(100_000, 0, 10); // mdev 200 000, rttvar 200 000
                                  // a big deviation raises mdev_max and rttvar
        r.sample(400_000, 0, 10);
        assert_eq!(r.srtt_us, 800_000 + 300_000);
        assert_eq!(r.mdev_us, 200_000 + (300_000 - 50_000));
        assert_eq!(r.rttvar_us, 450_000);
        // snd_una passes rtt_seq: rttvar decays 1/4 of the way to mdev_max (450 000: no change)
        r.sample(137_500, 11, 20);
        assert_eq!(r.srtt_us, 1_100_000); // err 0
        assert_eq!(r.mdev_us, 450_000 - 112_500); // damped: −|mdev/4| since err 0 − 112 500 < 0
        assert_eq!(r.rttvar_us, 450_000);
        assert_eq!(r.mdev_max_us, RTO_MIN_US);
        assert_eq!(r.rtt_seq, 20);
        // next flight: mdev_max is 337 500 after the sample, rttvar decays by (450 000 − 337 500)/4
        r.sample(137_500, 21, 30);
        assert_eq!(r.mdev_us, 337_500 - 84_375);
        assert_eq!(r.rttvar_us, 450_000 - (450_000 - 253_125) / 4);
    }

    #[test]
    fn rto_is_capped_at_120_s() {
        let mut r = RttEstimator::new(RTO_MIN_US);
        r.sample(200_000_000, 0, 1);
        assert_eq!(r.rto_jiffies(), TCP_RTO_MAX);
    }

    #[test]
    fn min_filter_keeps_the_window_minimum_and_expires_old_minima() {
        let win = 300 * HZ;
        let mut m = MinMax::new(0, u32::MAX);
        assert_eq!(m.get(), u32::MAX);
        assert_eq!(m.running_min(win, 10, 5000), 5000);
        assert_eq!(m.running_min(win, 20, 7000), 5000);
        assert_eq!(m.running_min(win, 30, 4000), 4000);
        // 4000 ages out after a full window; the later, larger samples take over
        assert_eq!(m.running_min(win, 30 + win / 4 + 1, 6000), 4000);
        assert_eq!(m.running_min(win, 30 + win / 2 + 1, 6500), 4000);
        assert_eq!(m.running_min(win, 30 + win + 1, 9000), 6000);
    }
}
