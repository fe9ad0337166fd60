//! `westwood` — TCP Westwood+ as Linux runs it (net/ipv4/tcp_westwood.c:
//! `tcp_westwood_init`, `westwood_do_filter`, `westwood_filter`,
//! `tcp_westwood_pkts_acked`, `westwood_update_window`, `update_rtt_min`,
//! `westwood_fast_bw`, `westwood_acked_count`, `tcp_westwood_bw_rttmin`,
//! `tcp_westwood_ack`, `tcp_westwood_event`, `tcp_westwood_info`; Mascolo et
//! al., MobiCom 2001; docs/semantics/tcp.md §18.2).
//!
//! Units: bytes, jiffies (HZ 250), bandwidth in bytes per jiffy.
//!
//! Growth is Reno's. On every ACK (`in_ack_event`) the bytes it acked are
//! added to `bk`; once per max(RTT, 50 ms) window `bk/Δ` feeds two cascaded
//! 7/8 low-pass filters into `bw_est`. After a loss the window is set from
//! the estimate rather than halved: at the end of a fast recovery (or CWR)
//! cwnd = ssthresh = max(bw_est·RTTmin/mss, 2); after an RTO only ssthresh.
//! Duplicate ACKs count one MSS each ("accounted") and are taken back from
//! the next cumulative ACK. bufferlab has no header-prediction fast path,
//! so every ACK takes the kernel's slow-path accounting.

use super::{
    tcp_reno_cong_avoid, tcp_reno_ssthresh, usecs_to_jiffies, AckSample, CaEvent, CcInfo,
    CcProfile, CcSock, CongestionOps, CA_ACK_SLOWPATH, HZ,
};
use crate::rng::ComponentRng;

/// `TCP_WESTWOOD_RTT_MIN`: 50 ms in jiffies (HZ/20, truncated: 12).
const RTT_MIN: u32 = HZ / 20;
/// `TCP_WESTWOOD_INIT_RTT`: 20 s in jiffies.
const INIT_RTT: u32 = 20 * HZ;
/// µs per jiffy (`jiffies_to_usecs`).
const US_PER_JIFFY: u32 = 1_000_000 / HZ;

/// `struct westwood`.
#[derive(Clone, Debug, Default)]
pub struct Westwood {
    /// first filter stage, bytes/jiffy
    bw_ns_est: u32,
    /// bandwidth estimate, bytes/jiffy
    bw_est: u32,
    /// start of the current sampling window, jiffies
    rtt_win_sx: u32,
    /// bytes acked in the current window
    bk: u32,
    /// snd_una at the previous ACK
    snd_una: u32,
    cumul_ack: u32,
    /// bytes already credited by duplicate ACKs
    accounted: u32,
    /// latest RTT sample, jiffies
    rtt: u32,
    /// smallest RTT since the last RTO, jiffies
    rtt_min: u32,
    first_ack: bool,
    reset_rtt_min: bool,
}

/// `westwood_do_filter`: (7a + b)/8.
#[inline]
fn do_filter(a: u32, b: u32) -> u32 {
    a.wrapping_mul(7).wrapping_add(b) >> 3
}

impl Westwood {
    /// The bandwidth estimate, bytes per jiffy.
    pub fn bw_est(&self) -> u32 {
        self.bw_est
    }

    /// `westwood_filter`: the first sample fills both stages.
    fn filter(&mut self, delta: u32) {
        if self.bw_ns_est == 0 && self.bw_est == 0 {
            self.bw_ns_est = self.bk / delta;
            self.bw_est = self.bw_ns_est;
        } else {
            self.bw_ns_est = do_filter(self.bw_ns_est, self.bk / delta);
            self.bw_est = do_filter(self.bw_est, self.bw_ns_est);
        }
    }

    /// `westwood_update_window`.
    fn update_window(&mut self, tp: &CcSock) {
        let delta = tp.jiffies.wrapping_sub(self.rtt_win_sx);
        if self.first_ack {
            self.snd_una = tp.snd_una;
            self.first_ack = false;
        }
        // s32 delta against a u32 bound: compared unsigned, as C does
        if self.rtt != 0 && delta > self.rtt.max(RTT_MIN) {
            self.filter(delta);
            self.bk = 0;
            self.rtt_win_sx = tp.jiffies;
        }
    }

    /// `update_rtt_min`.
    fn update_rtt_min(&mut self) {
        if self.reset_rtt_min {
            self.rtt_min = self.rtt;
            self.reset_rtt_min = false;
        } else {
            self.rtt_min = self.rtt_min.min(self.rtt);
        }
    }

    /// `westwood_acked_count`: bytes this ACK stands for, dupacks counting
    /// one MSS now and being subtracted later.
    fn acked_count(&mut self, tp: &CcSock) -> u32 {
        self.cumul_ack = tp.snd_una.wrapping_sub(self.snd_una);
        if self.cumul_ack == 0 {
            self.accounted = self.accounted.wrapping_add(tp.mss_cache);
            self.cumul_ack = tp.mss_cache;
        }
        if self.cumul_ack > tp.mss_cache {
            if self.accounted >= self.cumul_ack {
                self.accounted -= self.cumul_ack;
                self.cumul_ack = tp.mss_cache;
            } else {
                self.cumul_ack -= self.accounted;
                self.accounted = 0;
            }
        }
        self.snd_una = tp.snd_una;
        self.cumul_ack
    }

    /// `tcp_westwood_bw_rttmin`: max(bw_est·rtt_min/mss, 2) packets.
    fn bw_rttmin(&self, tp: &CcSock) -> u32 {
        (self.bw_est.wrapping_mul(self.rtt_min) / tp.mss_cache).max(2)
    }
}

impl CongestionOps for Westwood {
    const NAME: &'static str = "westwood";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Westwood {
        Westwood::default()
    }

    /// `tcp_westwood_init`.
    fn init(&mut self, tp: &mut CcSock) {
        *self = Westwood {
            rtt: INIT_RTT,
            rtt_min: INIT_RTT,
            rtt_win_sx: tp.jiffies,
            snd_una: tp.snd_una,
            first_ack: true,
            reset_rtt_min: true,
            ..Westwood::default()
        };
    }

    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, acked: u32) {
        tcp_reno_cong_avoid(tp, acked);
    }

    /// `tcp_westwood_event`.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        match ev {
            CaEvent::CompleteCwr => {
                tp.snd_ssthresh = self.bw_rttmin(tp);
                tp.snd_cwnd = tp.snd_ssthresh;
            }
            CaEvent::Loss => {
                tp.snd_ssthresh = self.bw_rttmin(tp);
                self.reset_rtt_min = true;
            }
            _ => {}
        }
    }

    /// `tcp_westwood_ack`.
    fn in_ack_event(&mut self, tp: &mut CcSock, flags: u32) {
        if flags & CA_ACK_SLOWPATH != 0 {
            self.update_window(tp);
            let n = self.acked_count(tp);
            self.bk = self.bk.wrapping_add(n);
            self.update_rtt_min();
            return;
        }
        // westwood_fast_bw
        self.update_window(tp);
        self.bk = self.bk.wrapping_add(tp.snd_una.wrapping_sub(self.snd_una));
        self.snd_una = tp.snd_una;
        self.update_rtt_min();
    }

    /// `tcp_westwood_pkts_acked`: the latest RTT, in jiffies rounded up.
    fn pkts_acked(&mut self, _tp: &mut CcSock, sample: &AckSample) {
        if sample.rtt_us > 0 {
            self.rtt = usecs_to_jiffies(sample.rtt_us as u32);
        }
    }

    fn get_info(&self, _tp: &CcSock) -> Option<CcInfo> {
        Some(CcInfo::Vegas {
            enabled: 1,
            rttcnt: 0,
            rtt: self.rtt.wrapping_mul(US_PER_JIFFY),
            minrtt: self.rtt_min.wrapping_mul(US_PER_JIFFY),
        })
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("bw_est_bytes_per_jiffy", self.bw_est as f64));
        out.push(("rtt_min_jiffies", self.rtt_min as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CA_ACK_WIN_UPDATE, INITIAL_JIFFIES};
    use super::*;

    fn tp_at(jiffies: u32, snd_una: u32) -> CcSock {
        CcSock {
            jiffies,
            snd_una,
            mss_cache: 1000,
            ..CcSock::default()
        }
    }

    fn rtt(w: &mut Westwood, us: i64) {
        let mut tp = CcSock::default();
        w.pkts_acked(
            &mut tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: us,
                in_flight: 0,
            },
        );
    }

    /// 100 ms RTT (25 jiffies); one ACK of 10 000 bytes per 4 ms jiffy. The
    /// first ACK only re-bases `snd_una` (`first_ack`), so it counts as a
    /// duplicate (one MSS, 1000, "accounted"), taken back from the second
    /// (9000). The window closes at the first ACK more than 25 jiffies after
    /// the start, j = 26, with bk = 1000 + 9000 + 23·10 000 = 240 000:
    /// 240 000/26 = 9230 bytes/jiffy fills both stages. A next window at
    /// 13 000 bytes/jiffy from 10 000: bw_ns = (7·10000 + 13000)/8 = 10375,
    /// bw = (7·10000 + 10375)/8 = 10046.
    #[test]
    fn bandwidth_filter_vectors() {
        let j0 = INITIAL_JIFFIES;
        let mut w = Westwood::default();
        w.init(&mut tp_at(j0, 0));
        rtt(&mut w, 100_000);
        assert_eq!(w.rtt, 25);
        for j in 1..=26u32 {
            w.in_ack_event(&mut tp_at(j0.wrapping_add(j), j * 10_000), CA_ACK_SLOWPATH);
        }
        assert_eq!((w.bw_ns_est, w.bw_est), (9_230, 9_230));
        assert_eq!(w.bk, 10_000); // the 26th ACK starts the next window
        let mut w = Westwood {
            bw_ns_est: 10_000,
            bw_est: 10_000,
            bk: 13_000 * 26,
            rtt: 25,
            rtt_win_sx: j0,
            ..Westwood::default()
        };
        w.update_window(&tp_at(j0.wrapping_add(26), 0));
        assert_eq!((w.bw_ns_est, w.bw_est), (10_375, 10_046));
        assert_eq!(w.bk, 0);
    }

    /// Windows shorter than 50 ms (12 jiffies) keep accumulating.
    #[test]
    fn short_rtts_sample_over_fifty_milliseconds() {
        let mut w = Westwood {
            rtt: 5,
            rtt_win_sx: 100,
            bk: 1,
            ..Westwood::default()
        };
        w.update_window(&tp_at(112, 0));
        assert_eq!(w.bk, 1);
        w.update_window(&tp_at(113, 0));
        assert_eq!(w.bk, 0);
    }

    /// Three duplicate ACKs credit 3 MSS; the cumulative ACK for 5 MSS that
    /// ends recovery then counts 5 − 3 = 2 MSS.
    #[test]
    fn duplicate_acks_are_credited_then_taken_back() {
        let mut w = Westwood {
            snd_una: 10_000,
            rtt: 25,
            rtt_win_sx: 0,
            ..Westwood::default()
        };
        for _ in 0..3 {
            w.in_ack_event(&mut tp_at(1, 10_000), CA_ACK_SLOWPATH);
        }
        assert_eq!((w.bk, w.accounted), (3_000, 3_000));
        w.in_ack_event(&mut tp_at(2, 15_000), CA_ACK_SLOWPATH | CA_ACK_WIN_UPDATE);
        assert_eq!((w.bk, w.accounted), (5_000, 0));
        // a later 2-MSS ACK with nothing accounted counts in full
        w.in_ack_event(&mut tp_at(3, 17_000), CA_ACK_SLOWPATH);
        assert_eq!(w.bk, 7_000);
        // with 3 MSS accounted, a 2-MSS ACK counts one MSS
        w.accounted = 3_000;
        w.in_ack_event(&mut tp_at(3, 19_000), CA_ACK_SLOWPATH);
        assert_eq!((w.bk, w.accounted), (8_000, 1_000));
    }

    /// bw 5000 bytes/jiffy (10 Mbit/s at 4 ms jiffies is 5000), RTTmin 5
    /// jiffies, mss 1448: 25 000/1448 = 17 packets.
    #[test]
    fn recovery_end_sets_cwnd_to_bandwidth_times_min_rtt() {
        let mut w = Westwood {
            bw_est: 5_000,
            rtt_min: 5,
            rtt: 7,
            ..Westwood::default()
        };
        let mut tp = CcSock {
            snd_cwnd: 40,
            snd_ssthresh: 20,
            ..CcSock::default()
        };
        w.cwnd_event(&mut tp, CaEvent::CompleteCwr);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (17, 17));
        tp.snd_cwnd = 30;
        w.cwnd_event(&mut tp, CaEvent::Loss);
        assert_eq!((tp.snd_cwnd, tp.snd_ssthresh), (30, 17));
        // after an RTO the next ACK takes the latest RTT as the minimum
        w.in_ack_event(&mut tp, CA_ACK_SLOWPATH);
        assert_eq!(w.rtt_min, 7);
        // no estimate yet: floor of 2
        let w = Westwood::default();
        assert_eq!(w.bw_rttmin(&tp), 2);
    }

    #[test]
    fn rtt_samples_round_up_to_jiffies() {
        let mut w = Westwood::default();
        rtt(&mut w, 20_001);
        assert_eq!(w.rtt, 6);
        rtt(&mut w, 0); // not > 0: ignored
        assert_eq!(w.rtt, 6);
        assert_eq!(
            w.get_info(&CcSock::default()),
            Some(CcInfo::Vegas {
                enabled: 1,
                rttcnt: 0,
                rtt: 24_000,
                minrtt: 0
            })
        );
    }
}
