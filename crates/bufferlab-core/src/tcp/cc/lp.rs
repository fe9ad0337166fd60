//! `lp` — TCP Low Priority as Linux runs it (net/ipv4/tcp_lp.c:
//! `tcp_lp_init`, `tcp_lp_cong_avoid`, `tcp_lp_remote_hz_estimator`,
//! `tcp_lp_owd_calculator`, `tcp_lp_rtt_sample`, `tcp_lp_pkts_acked`;
//! Kuzmanovic & Knightly, INFOCOM 2003; docs/semantics/tcp.md §18.11).
//!
//! Units: packets; one-way delays in the TS-option clock (ms,
//! `TCP_TS_HZ` 1000), relative (the peer's clock minus ours); `sowd` << 3.
//!
//! LP yields to other traffic on early signs of congestion: from the
//! timestamps of every ACK it estimates the peer's timestamp rate and the
//! one-way delay, keeps its minimum, maximum and a 1/8 EWMA, and whenever the
//! smoothed delay exceeds min + 15 % of (max − min) it halves cwnd — or
//! drops it to 1 if the previous such cut was less than an "inference time"
//! (3 × the latest timestamp-measured RTT) ago — and re-bases min and max
//! on the smoothed delay. Within the inference time it does not grow; else
//! growth and loss handling are Reno's. Needs TCP timestamps (without them
//! the delay is never valid and LP is Reno).

use super::{tcp_reno_cong_avoid, tcp_reno_ssthresh, AckSample, CcProfile, CcSock, CongestionOps};
use crate::rng::ComponentRng;

/// `LP_RESOL` = `TCP_TS_HZ`: one-way delays in ms.
const LP_RESOL: u32 = 1000;
/// `TCP_TS_HZ`.
const TCP_TS_HZ: u32 = 1000;
/// `LP_VALID_RHZ`: the remote timestamp rate estimate is usable.
const LP_VALID_RHZ: u32 = 1 << 0;
/// `LP_VALID_OWD`: the one-way delay is usable.
const LP_VALID_OWD: u32 = 1 << 1;
/// `LP_WITHIN_THR`: the smoothed delay is under the threshold.
const LP_WITHIN_THR: u32 = 1 << 3;
/// `LP_WITHIN_INF`: within the inference time of the last cut.
const LP_WITHIN_INF: u32 = 1 << 4;

/// `struct lp`.
#[derive(Clone, Debug, Default)]
pub struct Lp {
    flag: u32,
    sowd: u32,
    owd_min: u32,
    owd_max: u32,
    owd_max_rsv: u32,
    remote_hz: u32,
    remote_ref_time: u32,
    local_ref_time: u32,
    last_drop: u32,
    inference: u32,
}

impl Lp {
    /// `tcp_lp_remote_hz_estimator`: the peer's timestamp ticks per second,
    /// a 1/64 EWMA.
    fn remote_hz_estimator(&mut self, tp: &CcSock) -> u32 {
        let mut rhz = (self.remote_hz << 6) as i64;
        if self.remote_ref_time != 0
            && self.local_ref_time != 0
            && tp.rcv_tsval != self.remote_ref_time
            && tp.rcv_tsecr != self.local_ref_time
        {
            // unsigned in C: TCP_TS_HZ·Δremote / Δlocal
            let m = (TCP_TS_HZ.wrapping_mul(tp.rcv_tsval.wrapping_sub(self.remote_ref_time))
                / tp.rcv_tsecr.wrapping_sub(self.local_ref_time)) as i64;
            if rhz > 0 {
                rhz += m - (rhz >> 6);
            } else {
                rhz = m << 6;
            }
        }
        if (rhz >> 6) > 0 {
            self.flag |= LP_VALID_RHZ;
        } else {
            self.flag &= !LP_VALID_RHZ;
        }
        self.remote_ref_time = tp.rcv_tsval;
        self.local_ref_time = tp.rcv_tsecr;
        (rhz >> 6) as u32
    }

    /// `tcp_lp_owd_calculator`: the relative one-way delay, ms.
    fn owd_calculator(&mut self, tp: &CcSock) -> u32 {
        self.remote_hz = self.remote_hz_estimator(tp);
        let mut owd: i64 = 0;
        if self.flag & LP_VALID_RHZ != 0 {
            // u32 arithmetic in C, then widened
            owd = tp
                .rcv_tsval
                .wrapping_mul(LP_RESOL / self.remote_hz)
                .wrapping_sub(tp.rcv_tsecr.wrapping_mul(LP_RESOL / TCP_TS_HZ))
                as i64;
        }
        if owd > 0 {
            self.flag |= LP_VALID_OWD;
        } else {
            self.flag &= !LP_VALID_OWD;
        }
        owd as u32
    }

    /// `tcp_lp_rtt_sample`: min, max (one below the largest) and EWMA of
    /// the one-way delay.
    fn rtt_sample(&mut self, tp: &CcSock) {
        let mut mowd = self.owd_calculator(tp) as i64;
        if self.flag & LP_VALID_RHZ == 0 || self.flag & LP_VALID_OWD == 0 {
            return;
        }
        if mowd < self.owd_min as i64 {
            self.owd_min = mowd as u32;
        }
        if mowd > self.owd_max as i64 {
            if mowd > self.owd_max_rsv as i64 {
                self.owd_max = if self.owd_max_rsv == 0 {
                    mowd as u32
                } else {
                    self.owd_max_rsv
                };
                self.owd_max_rsv = mowd as u32;
            } else {
                self.owd_max = mowd as u32;
            }
        }
        if self.sowd != 0 {
            mowd -= (self.sowd >> 3) as i64;
            self.sowd = (self.sowd as i64).wrapping_add(mowd) as u32;
        } else {
            self.sowd = (mowd << 3) as u32;
        }
    }
}

impl CongestionOps for Lp {
    const NAME: &'static str = "lp";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Lp {
        Lp::default()
    }

    /// `tcp_lp_init`.
    fn init(&mut self, _tp: &mut CcSock) {
        *self = Lp {
            owd_min: 0xffff_ffff,
            ..Lp::default()
        };
    }

    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_ssthresh(tp)
    }

    /// `tcp_lp_cong_avoid`: Reno, except within the inference time.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, acked: u32) {
        if self.flag & LP_WITHIN_INF == 0 {
            tcp_reno_cong_avoid(tp, acked);
        }
    }

    /// `tcp_lp_pkts_acked`: the early-congestion reaction.
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        let now = tp.ts_now;
        if sample.rtt_us > 0 {
            self.rtt_sample(tp);
        }
        let delta = now.wrapping_sub(tp.rcv_tsecr);
        if (delta as i32) > 0 {
            self.inference = delta.wrapping_mul(3);
        }
        if self.last_drop != 0 && now.wrapping_sub(self.last_drop) < self.inference {
            self.flag |= LP_WITHIN_INF;
        } else {
            self.flag &= !LP_WITHIN_INF;
        }
        let thr = self
            .owd_min
            .wrapping_add(15u32.wrapping_mul(self.owd_max.wrapping_sub(self.owd_min)) / 100);
        if self.sowd >> 3 < thr {
            self.flag |= LP_WITHIN_THR;
        } else {
            self.flag &= !LP_WITHIN_THR;
        }
        if self.flag & LP_WITHIN_THR != 0 {
            return;
        }
        // early congestion: re-base min/max on the smoothed delay, back off
        self.owd_min = self.sowd >> 3;
        self.owd_max = self.sowd >> 2;
        self.owd_max_rsv = self.sowd >> 2;
        if self.flag & LP_WITHIN_INF != 0 {
            tp.snd_cwnd = 1;
        } else {
            tp.snd_cwnd = (tp.snd_cwnd >> 1).max(1);
        }
        self.last_drop = now;
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("sowd_ms", (self.sowd >> 3) as f64));
        out.push(("owd_min_ms", self.owd_min as f64));
        out.push(("owd_max_ms", self.owd_max as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(cwnd: u32, tsval: u32, tsecr: u32, now: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 2,
            is_cwnd_limited: true,
            rcv_tsval: tsval,
            rcv_tsecr: tsecr,
            ts_now: now,
            ..CcSock::default()
        }
    }

    fn acked(l: &mut Lp, t: &mut CcSock) {
        l.pkts_acked(
            t,
            &AckSample {
                pkts_acked: 1,
                rtt_us: 1000,
                in_flight: 0,
            },
        );
    }

    /// The peer's clock runs 500 ms ahead of ours. First ACK: references
    /// only. Second (Δremote = Δlocal = 1000): remote HZ 1000, OWD = tsval −
    /// tsecr = 500: min = max = sowd/8 = 500, so the smoothed delay is not
    /// *below* min + 0 — the first valid sample already counts as early
    /// congestion: cwnd 10 → 5, min/max re-based to 500/1000. Third
    /// (Δremote 998): remote HZ (64 000 − 2)/64 = 999, OWD 498, sowd 4000 −
    /// 2 = 3998; threshold 498 + 15·502/100 = 573: within.
    #[test]
    fn remote_hz_and_one_way_delay() {
        let mut l = Lp::default();
        l.init(&mut tp(10, 0, 0, 0));
        let mut t = tp(10, 1500, 1000, 1020);
        acked(&mut l, &mut t);
        assert_eq!(l.flag & LP_VALID_RHZ, 0);
        assert_eq!((l.remote_ref_time, l.local_ref_time), (1500, 1000));
        assert_eq!(l.inference, 60); // 3 × (now − tsecr)
        t.rcv_tsval = 2500;
        t.rcv_tsecr = 2000;
        t.ts_now = 2020;
        acked(&mut l, &mut t);
        assert_eq!(
            (l.remote_hz, l.owd_min, l.owd_max, l.sowd),
            (1000, 500, 1000, 4000)
        );
        assert_eq!((t.snd_cwnd, l.last_drop), (5, 2020));
        t.rcv_tsval = 3498;
        t.rcv_tsecr = 3000;
        t.ts_now = 3020;
        acked(&mut l, &mut t);
        assert_eq!(
            (l.remote_hz, l.owd_min, l.owd_max, l.sowd),
            (999, 498, 1000, 3998)
        );
        assert!(l.flag & LP_WITHIN_THR != 0);
        assert!(l.flag & LP_WITHIN_INF == 0);
        assert_eq!(t.snd_cwnd, 5);
        l.cong_avoid(&mut t, 0, 5);
        assert_eq!(t.snd_cwnd, 6); // Reno outside the inference time
    }

    /// sowd above min + 15 % of the range: halve, re-base, and remember
    /// the drop; another within the inference time takes cwnd to 1 and
    /// freezes growth.
    #[test]
    fn early_congestion_halves_then_drops_to_one() {
        let mut l = Lp {
            flag: LP_VALID_RHZ,
            remote_hz: 1000,
            remote_ref_time: 120,
            local_ref_time: 100,
            owd_min: 10,
            owd_max: 30,
            owd_max_rsv: 30,
            sowd: 20 << 3,
            ..Lp::default()
        };
        // OWD 20: sowd stays 160; threshold 10 + 15·20/100 = 13 < 20 → cut
        let mut t = tp(40, 130, 110, 150);
        acked(&mut l, &mut t);
        assert_eq!(t.snd_cwnd, 20);
        assert_eq!(
            (l.owd_min, l.owd_max, l.last_drop, l.inference),
            (20, 40, 150, 120)
        );
        // 50 s later (remote HZ still 1000) OWD 44: max takes the reserve
        // 40, sowd = 160 + 24 = 184 (23 ms) is not below 20 + 3; the echoed
        // timestamp is 30 s old, so the inference time (90 s) still covers
        // the last drop: cwnd 1
        let mut t = tp(20, 50_154, 50_110, 80_110);
        acked(&mut l, &mut t);
        assert_eq!((l.remote_hz, l.sowd, l.inference), (1000, 23 << 3, 90_000));
        assert_eq!(t.snd_cwnd, 1);
        assert!(l.flag & LP_WITHIN_INF != 0);
        l.cong_avoid(&mut t, 0, 1);
        assert_eq!(t.snd_cwnd, 1);
    }
}
