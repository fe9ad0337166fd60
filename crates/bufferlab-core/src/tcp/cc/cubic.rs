//! `cubic` — CUBIC v2.3 with HyStart, Linux's default (net/ipv4/tcp_cubic.c;
//! docs/semantics/tcp.md §11.2; RFC 8312 for the equations).
//!
//! Units. Windows in packets. CUBIC's own clock is jiffies (`epoch_start`,
//! `last_time`), converted to 1/1024 s ("BICTCP_HZ") for the cubic: `K` and
//! `t` are in 1/1024 s. `delay_min` is the minimum RTT seen by `pkts_acked`:
//! µs in `modern`; in `lab2019` it is ms << 3 (1/8 ms), as in 4.15–5.3.
//! HyStart's clock is `tcp_mstamp` µs (`modern`) or wall-clock ms
//! (`lab2019`, `bictcp_clock()` at HZ < 1000).
//!
//! Defaults (module parameters of tcp_cubic.c): `beta` 717/1024 (0.7),
//! `bic_scale` 41 (C = 41·10/1024 ≈ 0.4), `fast_convergence` on,
//! `tcp_friendliness` on, `hystart` on with both detectors,
//! `hystart_low_window` 16, `hystart_ack_delta_us` 2000 (2 ms),
//! `initial_ssthresh` 0. Derived at registration (`cubictcp_register`):
//! `beta_scale` = 8·(1024+717)/3/(1024−717) = 15, `cube_rtt_scale` = 410,
//! `cube_factor` = 2^40 / 410.
//!
//! Profile differences (HyStart only; see `hystart_update`): `lab2019`
//! restarts the HyStart round from `cong_avoid` (`after(ack, end_seq)`),
//! takes the round's RTT as the minimum of its first 8 samples only, and
//! fires the ACK train at delay_min/2 with a 2 ms spacing test on the ms
//! clock; `modern` (≥ 5.7) restarts from `pkts_acked` (`after(snd_una,
//! end_seq)`), keeps the minimum over the whole round, and fires the train
//! at delay_min + a TSO cushion (halved when not paced).
//!
//! Not modelled: the BPF kfunc wrappers and MIB counters.

use super::{
    after, msecs_to_jiffies, tcp_cong_avoid_ai, tcp_slow_start, usecs_to_jiffies, AckSample,
    CaEvent, CaState, CcProfile, CcSock, CongestionOps, HZ,
};
use crate::rng::ComponentRng;

/// `BICTCP_BETA_SCALE`: beta is a fraction of 1024.
const BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: CUBIC time unit is 2^-10 s.
const BICTCP_HZ: u32 = 10;
/// HyStart detectors (`hystart_detect` bits).
const HYSTART_ACK_TRAIN: u8 = 0x1;
const HYSTART_DELAY: u8 = 0x2;
/// Delay samples per round before the delay-increase test (`HYSTART_MIN_SAMPLES`).
const HYSTART_MIN_SAMPLES: u8 = 8;
/// `sk_gso_max_size` of a veth (64 KiB), used by the modern ACK-train cushion.
const GSO_MAX_SIZE: u64 = 65_536;

/// CUBIC's module parameters (Linux defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CubicParams {
    /// on a loss below the previous W_max, remember only (1+β)/2 of cwnd
    pub fast_convergence: bool,
    /// multiplicative decrease, /1024 (717 ≈ 0.7)
    pub beta: u32,
    /// ssthresh at init when HyStart is off (0: leave it infinite)
    pub initial_ssthresh: u32,
    /// C of the cubic, /1024 after ×10 (41 → C = 0.4)
    pub bic_scale: u32,
    /// track the Reno-equivalent window (RFC 8312 §4.2)
    pub tcp_friendliness: bool,
    /// hybrid slow start
    pub hystart: bool,
    /// detectors: 1 = ACK train, 2 = delay increase, 3 = both
    pub hystart_detect: u8,
    /// HyStart runs only at cwnd ≥ this, packets
    pub hystart_low_window: u32,
    /// ACKs closer than this form a train, µs (`lab2019`: 2 ms)
    pub hystart_ack_delta_us: u32,
}

impl Default for CubicParams {
    fn default() -> Self {
        CubicParams {
            fast_convergence: true,
            beta: 717,
            initial_ssthresh: 0,
            bic_scale: 41,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: HYSTART_ACK_TRAIN | HYSTART_DELAY,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2_000,
        }
    }
}

/// CUBIC's per-connection state (`struct bictcp`).
#[derive(Clone, Debug)]
pub struct Cubic {
    params: CubicParams,
    profile: CcProfile,
    /// Reno-equivalent growth rate of the TCP-friendly estimate: acked
    /// packets per +1 are `cwnd·beta_scale/8` (= 3(1−β)/(1+β) per RTT)
    beta_scale: u32,
    /// C·1024 of W(t) = C·(t−K)^3 + W_max with t in 1/1024 s
    cube_rtt_scale: u32,
    /// 2^40 / cube_rtt_scale: K = cbrt(cube_factor · (W_max − cwnd))
    cube_factor: u64,
    /// acks per +1 packet in congestion avoidance
    cnt: u32,
    /// W_max, packets (0 before the first loss)
    last_max_cwnd: u32,
    /// cwnd when `cnt` was last computed
    last_cwnd: u32,
    /// jiffies when `cnt` was last computed
    last_time: u32,
    /// W(K): the plateau of the cubic, packets
    origin_point: u32,
    /// K, 1/1024 s from the epoch start to the plateau
    k: u32,
    /// minimum RTT (µs `modern`, ms << 3 `lab2019`; 0 = none yet)
    delay_min: u32,
    /// jiffies when the congestion-avoidance epoch began (0 = none)
    epoch_start: u32,
    /// packets acked since the Reno estimate last grew
    ack_cnt: u32,
    /// Reno-equivalent cwnd estimate, packets
    tcp_cwnd: u32,
    /// HyStart: delay samples taken this round
    sample_cnt: u8,
    /// HyStart: exit point found (`modern`: 0/1; `lab2019`: detector bits)
    found: u8,
    /// HyStart: start of the round (HyStart clock)
    round_start: u32,
    /// HyStart: the round ends when this sequence number is acked
    end_seq: u32,
    /// HyStart: time of the last ACK of the current train (HyStart clock)
    last_ack: u32,
    /// HyStart: minimum RTT of the current round (units of `delay_min`)
    curr_rtt: u32,
}

/// `cubic_root` (tcp_cubic.c): ∛a by a 64-entry table of the top bits and
/// one Newton–Raphson step, x' = (2x + a/(x(x−1)))/3 with /3 done as
/// ·341/1024 (average error ≈ 0.2 %).
pub fn cubic_root(a: u64) -> u32 {
    // For i in 0..64: about ∛(i·2^18) − 1, hand-tuned in tcp_cubic.c; the
    // values are data the exact arithmetic depends on.
    const V: [u8; 64] = [
        0, 54, 54, 54, 118, 118, 118, 118, //
        123, 129, 134, 138, 143, 147, 151, 156, //
        157, 161, 164, 168, 170, 173, 176, 179, //
        181, 185, 187, 190, 192, 194, 197, 199, //
        200, 202, 204, 206, 209, 211, 213, 215, //
        217, 219, 221, 222, 224, 225, 227, 229, //
        231, 232, 234, 236, 237, 239, 240, 242, //
        244, 245, 246, 248, 250, 251, 252, 254, //
    ];
    let bits = 64 - a.leading_zeros(); // fls64
    if bits < 7 {
        // a < 64: the table alone, rounded
        return (V[a as usize] as u32 + 35) >> 6;
    }
    // b ≈ bits/3 − 1: a >> 3b keeps the top 4..6 bits as the table index
    let b = ((bits * 84) >> 8) - 1;
    let idx = (a >> (b * 3)) as usize;
    let x = ((V[idx] as u32 + 10) << b) >> 6;
    let x = (2 * x).wrapping_add((a / (x as u64 * (x as u64 - 1))) as u32);
    x.wrapping_mul(341) >> 10
}

impl Cubic {
    /// `cubictcp_register` precomputations for `params`.
    pub fn new(params: CubicParams, profile: CcProfile) -> Cubic {
        let beta = params.beta;
        let cube_rtt_scale = params.bic_scale * 10;
        Cubic {
            params,
            profile,
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            cube_rtt_scale,
            cube_factor: (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale as u64,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin_point: 0,
            k: 0,
            delay_min: 0,
            epoch_start: 0,
            ack_cnt: 0,
            tcp_cwnd: 0,
            sample_cnt: 0,
            found: 0,
            round_start: 0,
            end_seq: 0,
            last_ack: 0,
            curr_rtt: 0,
        }
    }

    /// K, 1/1024 s.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// W_max, packets.
    pub fn last_max_cwnd(&self) -> u32 {
        self.last_max_cwnd
    }

    /// `bictcp_reset`: forget the cubic (HyStart's round is kept).
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = 0;
        self.origin_point = 0;
        self.k = 0;
        self.delay_min = 0;
        self.epoch_start = 0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = 0;
    }

    /// HyStart's clock: `tcp_mstamp` µs (`bictcp_clock_us`) or, in
    /// `lab2019`, ms (`bictcp_clock`).
    fn hystart_clock(&self, tp: &CcSock) -> u32 {
        match self.profile {
            CcProfile::Modern => tp.now_us as u32,
            CcProfile::Lab2019 => (tp.now_us / 1_000) as u32,
        }
    }

    /// `bictcp_hystart_reset`: start a HyStart round ending at `snd_nxt`.
    fn hystart_reset(&mut self, tp: &CcSock) {
        let now = self.hystart_clock(tp);
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = tp.snd_nxt;
        self.curr_rtt = match self.profile {
            CcProfile::Modern => u32::MAX,
            CcProfile::Lab2019 => 0,
        };
        self.sample_cnt = 0;
    }

    /// W(t) of RFC 8312 eq. 1, `t` in 1/1024 s since the epoch start:
    /// origin ± C·|t − K|^3 (the `bic_target` of `bictcp_update`), in
    /// 32-bit packets as the kernel computes it.
    fn w_cubic(&self, t: u64) -> u32 {
        let k = self.k as u64;
        let offs = k.abs_diff(t);
        let delta = ((self.cube_rtt_scale as u64)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            .wrapping_mul(offs)
            >> (10 + 3 * BICTCP_HZ)) as u32;
        if t < k {
            self.origin_point.wrapping_sub(delta)
        } else {
            self.origin_point.wrapping_add(delta)
        }
    }

    /// `bictcp_update`: recompute `cnt` (acks per +1 packet) so cwnd
    /// follows W(t + RTT) (RFC 8312 eq. 1, §4.1), at most once per jiffy,
    /// then bound it by the TCP-friendly estimate W_est (eq. 4, §4.2) and
    /// by 2 (at most 1.5× per RTT).
    fn update(&mut self, cwnd: u32, acked: u32, jiffies: u32) {
        self.ack_cnt = self.ack_cnt.wrapping_add(acked);

        if self.last_cwnd == cwnd
            && (jiffies.wrapping_sub(self.last_time) as i32) <= (HZ / 32) as i32
        {
            return;
        }

        // cnt changes at most once per jiffy; reductions zero epoch_start,
        // which forces the recomputation
        if self.epoch_start == 0 || jiffies != self.last_time {
            self.last_cwnd = cwnd;
            self.last_time = jiffies;

            if self.epoch_start == 0 {
                self.epoch_start = jiffies;
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0;
                    self.origin_point = cwnd;
                } else {
                    // eq. 2: K = ∛(W_max·(1−β)/C), here with W_max − cwnd
                    self.k = cubic_root(
                        self.cube_factor
                            .wrapping_mul((self.last_max_cwnd - cwnd) as u64),
                    );
                    self.origin_point = self.last_max_cwnd;
                }
            }

            // t: time since the epoch start plus one min RTT (the target is
            // where the cubic will be an RTT from now), in 1/1024 s
            let mut t = (jiffies.wrapping_sub(self.epoch_start) as i32) as i64 as u64;
            t = t.wrapping_add(match self.profile {
                CcProfile::Modern => usecs_to_jiffies(self.delay_min),
                CcProfile::Lab2019 => msecs_to_jiffies(self.delay_min >> 3),
            } as u64);
            t = (t << BICTCP_HZ) / HZ as u64;

            let target = self.w_cubic(t);
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                cwnd.wrapping_mul(100) // very slow growth on the plateau
            };

            // before any loss W_max is unknown: grow at least 5 % per RTT
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }

        if self.params.tcp_friendliness {
            let per_packet = cwnd.wrapping_mul(self.beta_scale) >> 3;
            while self.ack_cnt > per_packet {
                self.ack_cnt -= per_packet;
                self.tcp_cwnd = self.tcp_cwnd.wrapping_add(1);
            }
            if self.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                if self.cnt > max_cnt {
                    self.cnt = max_cnt;
                }
            }
        }

        self.cnt = self.cnt.max(2);
    }

    /// `hystart_ack_delay` (≥ 5.7): a TSO/GRO cushion of 4 GSO packets at
    /// the pacing rate, at most 1 ms.
    fn hystart_ack_delay(tp: &CcSock) -> u32 {
        if tp.pacing_rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * 1_000_000 / tp.pacing_rate).min(1_000) as u32
    }

    /// `hystart_update` (≥ 5.7): a new round starts once `snd_una` passes
    /// `end_seq`. ACK train: ACKs ≤ 2 ms apart spanning more than
    /// delay_min (+ cushion; halved when unpaced) since the round start.
    /// Delay: after 8 samples, the round's minimum RTT exceeds delay_min
    /// by clamp(delay_min/8, 4 ms, 16 ms). Either sets ssthresh = cwnd,
    /// ending slow start without a reduction.
    fn hystart_update_modern(&mut self, tp: &mut CcSock, delay: u32) {
        if after(tp.snd_una, self.end_seq) {
            self.hystart_reset(tp);
        }
        if tp.snd_cwnd < self.params.hystart_low_window {
            return;
        }
        if self.params.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = tp.now_us as u32;
            if (now.wrapping_sub(self.last_ack) as i32) <= self.params.hystart_ack_delta_us as i32 {
                self.last_ack = now;
                let mut threshold = self.delay_min.wrapping_add(Self::hystart_ack_delay(tp));
                if !tp.pacing_status_needed {
                    threshold >>= 1;
                }
                // the kernel compares (s32) against u32: an unsigned test
                if now.wrapping_sub(self.round_start) > threshold {
                    self.found = 1;
                    tp.hystart.train_detect += 1;
                    tp.hystart.train_cwnd += tp.snd_cwnd;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
        if self.params.hystart_detect & HYSTART_DELAY != 0 {
            if self.curr_rtt > delay {
                self.curr_rtt = delay;
            }
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                self.sample_cnt += 1;
            } else if self.curr_rtt
                > self
                    .delay_min
                    .wrapping_add((self.delay_min >> 3).clamp(4_000, 16_000))
            {
                self.found = 1;
                tp.hystart.delay_detect += 1;
                tp.hystart.delay_cwnd += tp.snd_cwnd;
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
    }

    /// `hystart_update` (4.15–5.6): ms clock, ACK train past delay_min/2
    /// (`delay_min >> 4` in ms << 3 units); the round's RTT is the minimum
    /// of its first 8 samples only; thresholds in ms << 3.
    fn hystart_update_lab2019(&mut self, tp: &mut CcSock, delay: u32) {
        if self.found & self.params.hystart_detect != 0 {
            return;
        }
        if self.params.hystart_detect & HYSTART_ACK_TRAIN != 0 {
            let now = self.hystart_clock(tp);
            let delta_ms = (self.params.hystart_ack_delta_us / 1_000) as i32;
            if (now.wrapping_sub(self.last_ack) as i32) <= delta_ms {
                self.last_ack = now;
                if now.wrapping_sub(self.round_start) > self.delay_min >> 4 {
                    self.found |= HYSTART_ACK_TRAIN;
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
        if self.params.hystart_detect & HYSTART_DELAY != 0 {
            if self.sample_cnt < HYSTART_MIN_SAMPLES {
                if self.curr_rtt == 0 || self.curr_rtt > delay {
                    self.curr_rtt = delay;
                }
                self.sample_cnt += 1;
            } else if self.curr_rtt
                > self
                    .delay_min
                    .wrapping_add((self.delay_min >> 3).clamp(4 << 3, 16 << 3))
            {
                self.found |= HYSTART_DELAY;
                tp.snd_ssthresh = tp.snd_cwnd;
            }
        }
    }
}

/// `cubictcp` (`tcp_congestion_ops`); `undo_cwnd` is the default
/// `tcp_reno_undo_cwnd`, CUBIC's since 4.14.
impl CongestionOps for Cubic {
    const NAME: &'static str = "cubic";

    fn create(profile: CcProfile, _rng: ComponentRng) -> Cubic {
        Cubic::new(CubicParams::default(), profile)
    }

    /// `cubictcp_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.reset();
        if self.params.hystart {
            self.hystart_reset(tp);
        }
        if !self.params.hystart && self.params.initial_ssthresh != 0 {
            tp.snd_ssthresh = self.params.initial_ssthresh;
        }
    }

    /// `cubictcp_recalc_ssthresh`: end the epoch, remember W_max (reduced
    /// to (1+β)/2 of cwnd when below the previous one: fast convergence,
    /// RFC 8312 §4.6), return β·cwnd (eq. 3), at least 2.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        let cwnd = tp.snd_cwnd;
        self.epoch_start = 0;
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.params.fast_convergence {
            cwnd.wrapping_mul(BETA_SCALE + self.params.beta) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        (cwnd.wrapping_mul(self.params.beta) / BETA_SCALE).max(2)
    }

    /// `cubictcp_cong_avoid` (`bictcp_cong_avoid` in lab2019): slow start
    /// below ssthresh, then follow the cubic through `tcp_cong_avoid_ai`.
    fn cong_avoid(&mut self, tp: &mut CcSock, ack: u32, mut acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            if self.profile == CcProfile::Lab2019 && self.params.hystart && after(ack, self.end_seq)
            {
                self.hystart_reset(tp);
            }
            acked = tcp_slow_start(tp, acked);
            if acked == 0 {
                return;
            }
        }
        self.update(tp.snd_cwnd, acked, tp.jiffies);
        tcp_cong_avoid_ai(tp, self.cnt, acked);
    }

    /// `cubictcp_state`: an RTO forgets everything (W_max too) and
    /// restarts HyStart.
    fn set_state(&mut self, tp: &mut CcSock, new_state: CaState) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart_reset(tp);
        }
    }

    /// `cubictcp_cwnd_event`: after an idle period (`CA_EVENT_TX_START`),
    /// shift the epoch by the idle time so the cubic resumes where it was
    /// (never past now).
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        if ev != CaEvent::TxStart {
            return;
        }
        let now = tp.jiffies;
        let delta = now.wrapping_sub(tp.lsndtime) as i32;
        if self.epoch_start != 0 && delta > 0 {
            self.epoch_start = self.epoch_start.wrapping_add(delta as u32);
            if after(self.epoch_start, now) {
                self.epoch_start = now;
            }
        }
    }

    /// `cubictcp_acked` (`bictcp_acked`): track `delay_min` and run HyStart
    /// while in slow start. RTT samples within 1 s of an epoch start (i.e.
    /// right after a reduction) are ignored.
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        let rtt_us = sample.rtt_us as i32; // s32 in struct ack_sample
        if rtt_us < 0 {
            return;
        }
        if self.epoch_start != 0 && (tp.jiffies.wrapping_sub(self.epoch_start) as i32) < HZ as i32 {
            return;
        }
        let mut delay = match self.profile {
            CcProfile::Modern => rtt_us as u32,
            CcProfile::Lab2019 => (rtt_us.wrapping_shl(3) / 1_000) as u32,
        };
        if delay == 0 {
            delay = 1;
        }
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        match self.profile {
            CcProfile::Modern => {
                if self.found == 0 && tp.in_slow_start() && self.params.hystart {
                    self.hystart_update_modern(tp, delay);
                }
            }
            CcProfile::Lab2019 => {
                if self.params.hystart
                    && tp.in_slow_start()
                    && tp.snd_cwnd >= self.params.hystart_low_window
                {
                    self.hystart_update_lab2019(tp, delay);
                }
            }
        }
    }

    /// Trace values: K (s), W_max and the plateau (packets), `cnt`, the
    /// Reno estimate, delay_min (µs) and whether HyStart fired.
    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        let delay_min_us = match self.profile {
            CcProfile::Modern => self.delay_min as f64,
            CcProfile::Lab2019 => self.delay_min as f64 * 125.0,
        };
        out.extend_from_slice(&[
            ("cubic_k_s", self.k as f64 / 1024.0),
            ("cubic_w_max", self.last_max_cwnd as f64),
            ("cubic_origin", self.origin_point as f64),
            ("cubic_cnt", self.cnt as f64),
            ("cubic_reno_cwnd", self.tcp_cwnd as f64),
            ("cubic_delay_min_us", delay_min_us),
            ("hystart_found", (self.found != 0) as u8 as f64),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::{Fluid, Path};
    use super::super::{Cc, HystartExits, INITIAL_JIFFIES, TCP_INFINITE_SSTHRESH};
    use super::*;
    use crate::rng::ComponentRng;

    const J0: u32 = INITIAL_JIFFIES + 1_000;

    fn sock(cwnd: u32, ssthresh: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: ssthresh,
            is_cwnd_limited: true,
            jiffies: J0,
            ..CcSock::default()
        }
    }

    fn cubic(profile: CcProfile) -> Cubic {
        Cubic::new(CubicParams::default(), profile)
    }

    #[test]
    fn registration_constants() {
        let c = cubic(CcProfile::Modern);
        // 8·1741/3 = 4642 (integer), /307 = 15
        assert_eq!(c.beta_scale, 15);
        assert_eq!(c.cube_rtt_scale, 410);
        // 2^40 = 1 099 511 627 776; /410 = 2 681 735 677 (remainder 206)
        assert_eq!(c.cube_factor, 2_681_735_677);
    }

    #[test]
    fn cube_root_table_and_newton_step() {
        // below 64 the table alone: (v[a] + 35) >> 6
        assert_eq!(cubic_root(0), 0); // (0+35)>>6
        assert_eq!(cubic_root(1), 1); // (54+35)>>6 = 89>>6
        assert_eq!(cubic_root(7), 2); // (118+35)>>6 = 153>>6
        assert_eq!(cubic_root(8), 2); // (123+35)>>6 = 158>>6
        assert_eq!(cubic_root(27), 3); // (187+35)>>6 = 222>>6
        assert_eq!(cubic_root(63), 4); // (254+35)>>6 = 289>>6
                                       // a = 64: fls 7, b = (7·84>>8)−1 = 1, idx = 64>>3 = 8, v 123:
                                       // x = (133<<1)>>6 = 4; Newton: (8 + 64/(4·3)) = 13; 13·341>>10 = 4
        assert_eq!(cubic_root(64), 4);
        assert_eq!(cubic_root(1000), 10);
        assert_eq!(cubic_root(1 << 30), 1024);
        // 10^12: the one Newton step leaves 9999 (true 10000)
        assert_eq!(cubic_root(1_000_000_000_000), 9999);
    }

    #[test]
    fn k_for_w_max_100_after_a_loss_at_100() {
        // W_max − cwnd = 30: a = 2 681 735 677·30 = 80 452 070 310, fls 37,
        // b = (37·84>>8)−1 = 11, idx = a>>33 = 9 (v 129),
        // x = (139<<11)>>6 = 4448; a/(4448·4447) = a/19 780 256 = 4067;
        // (2·4448 + 4067)·341 >> 10 = 4 420 383 >> 10 = 4316.
        // K = 4316/1024 s = 4.215 s ≈ ∛(30/0.4004) = 4.216 s.
        assert_eq!(cubic_root(2_681_735_677 * 30), 4316);
        // ΔW = 1: K = 1388 (∛(1/0.4004)·1024 = 1389.3)
        assert_eq!(cubic_root(2_681_735_677), 1388);
        // ΔW = 24: K = 4007 (3.913 s)
        assert_eq!(cubic_root(2_681_735_677 * 24), 4007);

        let mut c = cubic(CcProfile::Modern);
        let mut tp = sock(100, 50);
        assert_eq!(c.ssthresh(&tp), 70); // 100·717/1024 = 70.02
        assert_eq!(c.last_max_cwnd, 100);
        tp.snd_cwnd = 70;
        tp.snd_ssthresh = 70;
        c.cong_avoid(&mut tp, 0, 1);
        assert_eq!((c.k, c.origin_point), (4316, 100));
        assert_eq!(c.epoch_start, J0);
    }

    #[test]
    fn w_of_t_is_concave_then_flat_then_convex() {
        let mut c = cubic(CcProfile::Modern);
        c.k = 4316;
        c.origin_point = 100;
        // delta = 410·|t−K|^3 >> 40
        assert_eq!(c.w_cubic(0), 71); // 410·4316^3>>40 = 29
        assert_eq!(c.w_cubic(1024), 87); // |t−K| = 3292: 13
        assert_eq!(c.w_cubic(2048), 96); // 2268: 4
        assert_eq!(c.w_cubic(4316), 100); // t = K: the plateau
        assert_eq!(c.w_cubic(4316 + 1024), 100); // 0.4·1^3 = 0.4 → 0
        assert_eq!(c.w_cubic(4316 + 2048), 103); // 0.4·2^3 = 3.2
        assert_eq!(c.w_cubic(4316 + 3072), 110); // 0.4·3^3 = 10.8
        assert_eq!(c.w_cubic(2 * 4316), 129); // symmetric to t = 0
    }

    #[test]
    fn cnt_aims_one_rtt_ahead_on_the_cubic() {
        // epoch starts at cwnd 70 below W_max 100 with delay_min 100 ms:
        // t = (0 + usecs_to_jiffies(100 000) = 25 jiffies)·1024/250 = 102,
        // W(102) = 100 − 410·4214^3>>40 = 100 − 27 = 73, cnt = 70/(73−70) = 23
        let mut c = cubic(CcProfile::Modern);
        c.last_max_cwnd = 100;
        c.delay_min = 100_000;
        let mut tp = sock(70, 70);
        c.cong_avoid(&mut tp, 0, 1);
        assert_eq!(c.cnt, 23);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (70, 1));
        // lab2019 keeps delay_min in ms << 3: 100 ms = 800, same t
        let mut c = cubic(CcProfile::Lab2019);
        c.last_max_cwnd = 100;
        c.delay_min = 800;
        let mut tp = sock(70, 70);
        c.cong_avoid(&mut tp, 0, 1);
        assert_eq!(c.cnt, 23);
    }

    #[test]
    fn cnt_is_recomputed_at_most_once_per_jiffy() {
        let mut c = cubic(CcProfile::Modern);
        c.last_max_cwnd = 100;
        c.delay_min = 100_000;
        let mut tp = sock(70, 70);
        c.cong_avoid(&mut tp, 0, 1);
        assert_eq!(c.cnt, 23);
        // cwnd changed but same jiffy: goes straight to the friendliness
        // step and keeps cnt
        tp.snd_cwnd = 71;
        c.cong_avoid(&mut tp, 0, 1);
        assert_eq!(c.cnt, 23);
        // 1 s later (t = 250+25 jiffies → 1126): W = 100 − 410·3190^3>>40
        // = 100 − 12 = 88, cnt = 71/17 = 4
        tp.jiffies = J0 + 250;
        c.cong_avoid(&mut tp, 0, 1);
        assert_eq!(c.cnt, 4);
    }

    #[test]
    fn first_epoch_grows_at_least_five_percent_per_rtt() {
        // no loss yet (W_max 0): the plateau is cwnd itself, cnt would be
        // 100·cwnd; capped at 20
        let mut c = cubic(CcProfile::Modern);
        let mut tp = sock(50, 40);
        c.cong_avoid(&mut tp, 0, 1);
        assert_eq!((c.k, c.origin_point, c.cnt), (0, 50, 20));
    }

    #[test]
    fn reno_estimate_caps_cnt_when_the_cubic_is_flat() {
        // on the plateau (W_max = cwnd = 100) the cubic asks cnt 10 000;
        // the Reno estimate grows 1 per cwnd·15/8 = 187 acks, i.e.
        // 3(1−β)/(1+β) ≈ 0.53 packets per RTT. A 188-packet stretch ACK
        // puts it at 101 > 100, so cnt = 100/(101−100) = 100: cwnd +1, 88
        // acks of credit left.
        let mut c = cubic(CcProfile::Modern);
        c.last_max_cwnd = 100;
        let mut tp = sock(100, 100);
        c.cong_avoid(&mut tp, 0, 188);
        assert_eq!((c.tcp_cwnd, c.ack_cnt), (101, 1));
        assert_eq!(c.cnt, 100);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (101, 88));
        // without friendliness the cubic's cnt stands
        let mut c = Cubic::new(
            CubicParams {
                tcp_friendliness: false,
                ..CubicParams::default()
            },
            CcProfile::Modern,
        );
        c.last_max_cwnd = 100;
        let mut tp = sock(100, 100);
        c.cong_avoid(&mut tp, 0, 188);
        assert_eq!(c.cnt, 10_000);
        assert_eq!(tp.snd_cwnd, 100);
    }

    #[test]
    fn fast_convergence_lowers_w_max_below_the_previous_one() {
        let mut c = cubic(CcProfile::Modern);
        c.last_max_cwnd = 100;
        c.epoch_start = J0;
        // loss at 80 < 100: W_max = 80·1741/2048 = 68, ssthresh 80·717/1024 = 56
        assert_eq!(c.ssthresh(&sock(80, 0)), 56);
        assert_eq!((c.last_max_cwnd, c.epoch_start), (68, 0));
        // loss at 120 ≥ 68: W_max = 120, ssthresh = 86 040/1024 = 84
        assert_eq!(c.ssthresh(&sock(120, 0)), 84);
        assert_eq!(c.last_max_cwnd, 120);
        // the floor: 2·717/1024 = 1 → 2
        assert_eq!(c.ssthresh(&sock(2, 0)), 2);
        // off: W_max is cwnd
        let mut c = Cubic::new(
            CubicParams {
                fast_convergence: false,
                ..CubicParams::default()
            },
            CcProfile::Modern,
        );
        c.last_max_cwnd = 100;
        c.ssthresh(&sock(80, 0));
        assert_eq!(c.last_max_cwnd, 80);
    }

    #[test]
    fn rto_forgets_w_max_and_undo_uses_prior_cwnd() {
        let mut c = cubic(CcProfile::Modern);
        let mut tp = sock(80, 0);
        c.last_max_cwnd = 100;
        c.delay_min = 40_000;
        c.set_state(&mut tp, CaState::Loss);
        assert_eq!((c.last_max_cwnd, c.delay_min, c.epoch_start), (0, 0, 0));
        c.set_state(&mut tp, CaState::Recovery); // no effect
        tp.prior_cwnd = 90;
        assert_eq!(c.undo_cwnd(&tp), 90);
    }

    #[test]
    fn idle_restart_shifts_the_epoch_by_the_idle_time() {
        let mut c = cubic(CcProfile::Modern);
        let mut tp = sock(50, 40);
        c.epoch_start = J0;
        tp.lsndtime = J0 + 10;
        tp.jiffies = J0 + 60; // idle 50 jiffies
        c.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(c.epoch_start, J0 + 50);
        // the shift never moves the epoch past now
        c.epoch_start = J0 + 55;
        c.cwnd_event(&mut tp, CaEvent::TxStart);
        assert_eq!(c.epoch_start, J0 + 60);
        // other events do nothing
        c.cwnd_event(&mut tp, CaEvent::CwndRestart);
        assert_eq!(c.epoch_start, J0 + 60);
    }

    #[test]
    fn rtt_samples_right_after_an_epoch_start_are_ignored() {
        let mut c = cubic(CcProfile::Modern);
        let mut tp = sock(50, 40);
        c.delay_min = 40_000;
        c.epoch_start = J0 - 249; // 249 jiffies < HZ ago
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 30_000,
            in_flight: 10,
        };
        c.pkts_acked(&mut tp, &s);
        assert_eq!(c.delay_min, 40_000);
        c.epoch_start = J0 - 250;
        c.pkts_acked(&mut tp, &s);
        assert_eq!(c.delay_min, 30_000);
        // no-RTT ACKs (−1) are skipped; 0 µs counts as 1
        c.epoch_start = 0;
        c.pkts_acked(&mut tp, &AckSample { rtt_us: -1, ..s });
        assert_eq!(c.delay_min, 30_000);
        c.pkts_acked(&mut tp, &AckSample { rtt_us: 0, ..s });
        assert_eq!(c.delay_min, 1);
    }

    /// Slow start at cwnd 20 (≥ hystart_low_window 16) with delay_min 40 ms:
    /// the delay threshold is 40 + clamp(40/8, 4, 16) = 45 ms.
    fn hystart_setup(profile: CcProfile) -> (Cubic, CcSock) {
        let mut c = cubic(profile);
        let mut tp = sock(20, TCP_INFINITE_SSTHRESH);
        tp.now_us = 1_000_000;
        tp.snd_nxt = 1_000;
        c.init(&mut tp);
        assert_eq!(c.end_seq, 1_000);
        tp.snd_una = 500;
        c.pkts_acked(
            &mut tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: 40_000,
                in_flight: 20,
            },
        );
        (c, tp)
    }

    #[test]
    fn hystart_modern_exits_on_delay_increase_after_eight_samples() {
        let (mut c, mut tp) = hystart_setup(CcProfile::Modern);
        assert_eq!(c.delay_min, 40_000);
        // a new round: snd_una passes end_seq
        tp.snd_una = 1_001;
        tp.snd_nxt = 2_000;
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 46_000,
            in_flight: 20,
        };
        for i in 0..8 {
            tp.now_us += 3_000; // > 2 ms apart: never an ACK train
            c.pkts_acked(&mut tp, &s);
            assert_eq!(tp.snd_ssthresh, TCP_INFINITE_SSTHRESH, "sample {i}");
        }
        assert_eq!((c.sample_cnt, c.curr_rtt, c.end_seq), (8, 46_000, 2_000));
        // the 9th: 46 ms > 45 ms
        tp.now_us += 3_000;
        c.pkts_acked(&mut tp, &s);
        assert_eq!(c.found, 1);
        assert_eq!(tp.snd_ssthresh, 20);
        assert_eq!(tp.snd_cwnd, 20); // no reduction, slow start just ends
                                     // TCPHystartDelayDetect 1, TCPHystartDelayCwnd 20 (≥ 5.7's counters)
        let counted = HystartExits {
            delay_detect: 1,
            delay_cwnd: 20,
            ..HystartExits::default()
        };
        assert_eq!(tp.hystart, counted);
    }

    #[test]
    fn hystart_modern_ignores_an_increase_within_the_threshold() {
        let (mut c, mut tp) = hystart_setup(CcProfile::Modern);
        tp.snd_una = 1_001;
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 45_000, // not > 45 ms
            in_flight: 20,
        };
        for _ in 0..20 {
            tp.now_us += 3_000;
            c.pkts_acked(&mut tp, &s);
        }
        assert_eq!((c.found, tp.snd_ssthresh), (0, TCP_INFINITE_SSTHRESH));
    }

    #[test]
    fn hystart_lab2019_exits_on_delay_increase_in_eighth_ms() {
        // delay_min = (40 000 << 3)/1000 = 320; threshold 320 + clamp(40, 32,
        // 128) = 360; 46 ms → 368 > 360. The round restarts in cong_avoid.
        let (mut c, mut tp) = hystart_setup(CcProfile::Lab2019);
        assert_eq!(c.delay_min, 320);
        tp.snd_nxt = 2_000;
        c.cong_avoid(&mut tp, 1_001, 1); // ack after end_seq: new round
        assert_eq!((c.end_seq, c.sample_cnt, tp.snd_cwnd), (2_000, 0, 21));
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 46_000,
            in_flight: 20,
        };
        for _ in 0..8 {
            tp.now_us += 3_000;
            c.pkts_acked(&mut tp, &s);
        }
        assert_eq!((c.sample_cnt, c.curr_rtt, c.found), (8, 368, 0));
        tp.now_us += 3_000;
        c.pkts_acked(&mut tp, &s);
        assert_eq!(c.found, HYSTART_DELAY);
        assert_eq!(tp.snd_ssthresh, 21);
        // the counters arrived in 5.7: none before
        assert_eq!(tp.hystart, HystartExits::default());
    }

    #[test]
    fn hystart_lab2019_round_rtt_is_the_min_of_its_first_eight_samples() {
        // a lower 9th sample is not taken into curr_rtt in lab2019
        let (mut c, mut tp) = hystart_setup(CcProfile::Lab2019);
        c.cong_avoid(&mut tp, 1_001, 1);
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 46_000,
            in_flight: 20,
        };
        for _ in 0..8 {
            tp.now_us += 3_000;
            c.pkts_acked(&mut tp, &s);
        }
        tp.now_us += 3_000;
        c.pkts_acked(
            &mut tp,
            &AckSample {
                rtt_us: 41_000,
                ..s
            },
        );
        assert_eq!(c.curr_rtt, 368);
        assert_eq!(c.found, HYSTART_DELAY);
    }

    #[test]
    fn hystart_modern_ack_train_unpaced_fires_past_half_delay_min() {
        // unpaced, pacing_rate 0 → cushion 0, threshold = 40 000/2 = 20 000 µs.
        // ACKs 1 ms apart from the round start: the 21st is 21 ms in.
        let (mut c, mut tp) = hystart_setup(CcProfile::Modern);
        tp.snd_una = 1_001;
        tp.snd_nxt = 2_000;
        tp.now_us += 50_000;
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 40_000,
            in_flight: 20,
        };
        c.pkts_acked(&mut tp, &s); // resets the round at this instant
        let t0 = c.round_start;
        assert_eq!(t0 as u64, tp.now_us);
        for k in 1..=20 {
            tp.now_us += 1_000;
            c.pkts_acked(&mut tp, &s);
            assert_eq!(c.found, 0, "ack {k}");
        }
        tp.now_us += 1_000;
        c.pkts_acked(&mut tp, &s);
        assert_eq!((c.found, tp.snd_ssthresh), (1, 20));
    }

    #[test]
    fn hystart_modern_ack_train_paced_adds_the_tso_cushion() {
        // paced at 1 Gb/s (125 MB/s): cushion min(1000, 65 536·4·10^6 /
        // 125·10^6 = 2097) = 1000 µs; threshold 40 000 + 1000, not halved
        let (mut c, mut tp) = hystart_setup(CcProfile::Modern);
        tp.pacing_status_needed = true;
        tp.pacing_rate = 125_000_000;
        assert_eq!(Cubic::hystart_ack_delay(&tp), 1_000);
        tp.snd_una = 1_001;
        tp.snd_nxt = 2_000;
        tp.now_us += 50_000;
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 40_000,
            in_flight: 20,
        };
        c.pkts_acked(&mut tp, &s);
        for _ in 1..=41 {
            tp.now_us += 1_000;
            c.pkts_acked(&mut tp, &s);
        }
        assert_eq!(c.found, 0); // 41 000 is not > 41 000
        tp.now_us += 1_000;
        c.pkts_acked(&mut tp, &s);
        assert_eq!(c.found, 1);
    }

    #[test]
    fn hystart_lab2019_ack_train_fires_past_half_delay_min_in_ms() {
        // delay_min 320 (40 ms) >> 4 = 20 ms; ACKs 1 ms apart on the ms clock
        let (mut c, mut tp) = hystart_setup(CcProfile::Lab2019);
        tp.now_us += 50_000;
        tp.snd_nxt = 2_000;
        c.cong_avoid(&mut tp, 1_001, 1);
        let s = AckSample {
            pkts_acked: 1,
            rtt_us: 40_000,
            in_flight: 20,
        };
        for _ in 1..=20 {
            tp.now_us += 1_000;
            c.pkts_acked(&mut tp, &s);
        }
        assert_eq!(c.found, 0);
        tp.now_us += 1_000;
        c.pkts_acked(&mut tp, &s);
        assert_eq!(c.found, HYSTART_ACK_TRAIN);
    }

    #[test]
    fn hystart_waits_for_the_low_window() {
        let (mut c, mut tp) = hystart_setup(CcProfile::Modern);
        tp.snd_cwnd = 15;
        tp.snd_una = 1_001;
        for _ in 0..40 {
            tp.now_us += 1_000;
            c.pkts_acked(
                &mut tp,
                &AckSample {
                    pkts_acked: 1,
                    rtt_us: 60_000,
                    in_flight: 15,
                },
            );
        }
        assert_eq!(c.found, 0);
    }

    /// Fluid run: 1000 packets/s, 40 ms base RTT, 40-packet buffer until
    /// the first congestion epoch starts, then a 400-packet buffer. The
    /// next epoch climbs concavely to W_max (≈ 81, where the first loss
    /// was), lingers there around t = K, then probes convexly.
    #[test]
    fn fluid_cubic_grows_concave_then_convex() {
        let path = Path {
            rate_pps: 1000,
            base_rtt_us: 40_000,
            buffer_pkts: 40,
        };
        let cc = Cc::from_name_with("cubic", CcProfile::Modern, ComponentRng::new(1, "x")).unwrap();
        let mut f = Fluid::new(cc, path);
        // run until the first recovery is over
        while f.recoveries.is_empty() || f.tp.ca_state != CaState::Open {
            f.run_for_us(1_000);
        }
        let first = f.recoveries[0];
        f.set_buffer(400);
        let Cc::Cubic(c) = &f.cc else { unreachable!() };
        let w_max = c.last_max_cwnd;
        assert_eq!(w_max, first.cwnd_before);
        // cwnd every 0.5 s for 9 s after recovery
        let mut w = Vec::new();
        for _ in 0..18 {
            f.run_for_us(500_000);
            w.push(f.tp.snd_cwnd);
        }
        assert_eq!(f.recoveries.len(), 1, "no loss with the big buffer");
        let Cc::Cubic(c) = &f.cc else { unreachable!() };
        let k_s = c.k as f64 / 1024.0;
        assert!((3.5..4.5).contains(&k_s), "K = {k_s}");
        // concave: the first second gains more than the second before K
        let inc = |i: usize| w[i + 1] as i64 - w[i] as i64;
        assert!(inc(0) + inc(1) > inc(5) + inc(6), "{w:?}");
        // near K the window sits within a few packets of W_max
        let at_k = w[(k_s * 2.0) as usize - 1];
        assert!((w_max - 3..=w_max + 3).contains(&at_k), "{w:?} at K");
        // convex: growth accelerates after the plateau
        assert!(inc(15) + inc(16) > inc(9) + inc(10), "{w:?}");
        assert!(w[17] > w_max + 20, "{w:?}");
    }
}
