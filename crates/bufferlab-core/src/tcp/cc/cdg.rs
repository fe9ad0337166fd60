//! `cdg` — CAIA Delay-Gradient as Linux runs it (net/ipv4/tcp_cdg.c:
//! `nexp_u32`, `tcp_cdg_hystart_update`, `tcp_cdg_grad`, `tcp_cdg_backoff`,
//! `tcp_cdg_cong_avoid`, `tcp_cdg_acked`, `tcp_cdg_ssthresh`,
//! `tcp_cdg_cwnd_event`, `tcp_cdg_init`; Hayes & Armitage, IFIP Networking
//! 2011; docs/semantics/tcp.md §18.12).
//!
//! Units: packets, µs. Module parameters (defaults): `window` 8,
//! `backoff_beta` 724/1024 (0.7071), `backoff_factor` 42, `hystart_detect`
//! 3 (ACK train and delay), `use_ineff` 5, `use_shadow` on,
//! `use_tolerance` off.
//!
//! Once per RTT CDG takes the change of the RTT's minimum and maximum
//! against the previous RTT, summed over the last 8 RTTs (the gradient; the
//! minimum's if positive, else the maximum's). A positive gradient g backs
//! off with probability 1 − e^(−g·42/10⁶) (g in µs): ssthresh = cwnd·0.7071
//! through `tcp_enter_cwr`; after 5 backoffs that did not shrink the delay
//! it stops backing off until one does. Growth is Reno's; on loss the
//! "shadow window" (what Reno would have had without the delay backoffs)
//! limits the cut: ssthresh = max(cwnd/2, shadow/2). Slow start ends by a
//! HyStart variant. Undo is Reno's. The random draws come from the
//! connection's congestion-control stream.

use super::{
    after, before, tcp_reno_cong_avoid, tcp_reno_undo_cwnd, AckSample, CaEvent, CcProfile, CcSock,
    CongestionOps,
};
use crate::rng::ComponentRng;

/// `window`: RTTs in the gradient (a power of two ≤ 256).
const WINDOW: usize = 8;
/// `backoff_beta`: 0.7071 · 1024, truncated.
const BACKOFF_BETA: u32 = 724;
/// `backoff_factor`.
const BACKOFF_FACTOR: u32 = 42;
/// `HYSTART_ACK_TRAIN`.
const HYSTART_ACK_TRAIN: u32 = 1;
/// `HYSTART_DELAY`.
const HYSTART_DELAY: u32 = 2;
/// `hystart_detect`.
const HYSTART_DETECT: u32 = HYSTART_ACK_TRAIN | HYSTART_DELAY;
/// `use_ineff`: backoffs without effect before backing off stops.
const USE_INEFF: u16 = 5;

/// `enum cdg_state`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Unknown,
    Backoff,
}

/// `struct cdg_minmax`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MinMax {
    min: i32,
    max: i32,
}

impl MinMax {
    /// `v64 != 0`
    fn is_set(&self) -> bool {
        self.min != 0 || self.max != 0
    }
}

/// `min_not_zero`.
fn min_not_zero(x: i32, y: i32) -> i32 {
    if x == 0 {
        y
    } else if y == 0 {
        x
    } else {
        x.min(y)
    }
}

/// `nexp_u32`: e^(−ux/10⁶) · 2³², from a 16-entry table of e^(−2^k·256/10⁶).
pub fn nexp_u32(ux: u32) -> u32 {
    const V: [u16; 17] = [
        65535, 65518, 65501, 65468, 65401, 65267, 65001, 64470, 63422, 61378, 57484, 50423, 38795,
        22965, 8047, 987, 14,
    ];
    let mut msb = ux >> 8;
    if msb > u16::MAX as u32 {
        return 0;
    }
    // the low eight bits linearly
    let mut res = u32::MAX - (ux & 0xff) * (u32::MAX / 1_000_000);
    let mut i = 1usize;
    while msb != 0 {
        let idx = if msb & 1 != 0 { i } else { 0 };
        let y = V[idx] as u64 + 1;
        res = ((res as u64 * y) >> 16) as u32;
        i += 1;
        msb >>= 1;
    }
    res
}

/// `struct cdg`.
#[derive(Clone, Debug)]
pub struct Cdg {
    rng: ComponentRng,
    rtt: MinMax,
    rtt_prev: MinMax,
    gradients: [MinMax; WINDOW],
    gsum: MinMax,
    gfilled: bool,
    tail: u8,
    state: State,
    delack: u8,
    rtt_seq: u32,
    shadow_wnd: u32,
    backoff_cnt: u16,
    sample_cnt: u16,
    delay_min: i32,
    last_ack: u32,
    round_start: u32,
}

impl Cdg {
    fn new(rng: ComponentRng) -> Cdg {
        Cdg {
            rng,
            rtt: MinMax::default(),
            rtt_prev: MinMax::default(),
            gradients: [MinMax::default(); WINDOW],
            gsum: MinMax::default(),
            gfilled: false,
            tail: 0,
            state: State::Unknown,
            delack: 0,
            rtt_seq: 0,
            shadow_wnd: 0,
            backoff_cnt: 0,
            sample_cnt: 0,
            delay_min: 0,
            last_ack: 0,
            round_start: 0,
        }
    }

    /// Zero every field but the random stream (the kernel's memset).
    fn clear(&mut self) {
        let rng = self.rng.clone();
        *self = Cdg::new(rng);
    }

    /// `tcp_cdg_hystart_update`.
    fn hystart_update(&mut self, tp: &mut CcSock) {
        self.delay_min = min_not_zero(self.delay_min, self.rtt.min);
        if self.delay_min == 0 {
            return;
        }
        if HYSTART_DETECT & HYSTART_ACK_TRAIN != 0 {
            let now_us = tp.now_us as u32;
            if self.last_ack == 0 || !tp.is_cwnd_limited {
                self.last_ack = now_us;
                self.round_start = now_us;
            } else if before(now_us, self.last_ack.wrapping_add(3000)) {
                let base_owd = (self.delay_min as u32 / 2).max(125);
                self.last_ack = now_us;
                if after(now_us, self.round_start.wrapping_add(base_owd)) {
                    tp.snd_ssthresh = tp.snd_cwnd;
                    return;
                }
            }
        }
        if HYSTART_DETECT & HYSTART_DELAY != 0 {
            if self.sample_cnt < 8 {
                self.sample_cnt += 1;
            } else {
                let dm = self.delay_min as u32;
                let thresh = dm.wrapping_add(dm / 8).max(125) as i32;
                if self.rtt.min > thresh {
                    tp.snd_ssthresh = tp.snd_cwnd;
                }
            }
        }
    }

    /// `tcp_cdg_grad`: the summed gradient over the window, µs.
    fn grad(&mut self) -> i32 {
        let mut gmin = self.rtt.min.wrapping_sub(self.rtt_prev.min);
        let mut gmax = self.rtt.max.wrapping_sub(self.rtt_prev.max);
        let t = self.tail as usize;
        self.gsum.min = self
            .gsum
            .min
            .wrapping_add(gmin.wrapping_sub(self.gradients[t].min));
        self.gsum.max = self
            .gsum
            .max
            .wrapping_add(gmax.wrapping_sub(self.gradients[t].max));
        self.gradients[t] = MinMax {
            min: gmin,
            max: gmax,
        };
        self.tail = ((t + 1) & (WINDOW - 1)) as u8;
        gmin = self.gsum.min;
        gmax = self.gsum.max;
        let mut grad = if gmin > 0 { gmin } else { gmax };
        // extrapolate while the window is not yet full
        if !self.gfilled {
            if self.tail == 0 {
                self.gfilled = true;
            } else {
                grad = grad.wrapping_mul(WINDOW as i32) / self.tail as i32;
            }
        }
        // the delay fell: the backoffs worked
        if gmin <= -32 || gmax <= -32 {
            self.backoff_cnt = 0;
        }
        grad
    }

    /// `tcp_cdg_backoff`: back off with probability 1 − e^(−grad·factor).
    fn backoff(&mut self, tp: &mut CcSock, grad: u32) -> bool {
        if self.rng.next_u32() <= nexp_u32(grad.wrapping_mul(BACKOFF_FACTOR)) {
            return false;
        }
        self.backoff_cnt = self.backoff_cnt.wrapping_add(1);
        if self.backoff_cnt > USE_INEFF {
            return false;
        }
        self.shadow_wnd = self.shadow_wnd.max(tp.snd_cwnd);
        self.state = State::Backoff;
        tp.enter_cwr = true;
        true
    }
}

impl CongestionOps for Cdg {
    const NAME: &'static str = "cdg";

    fn create(_profile: CcProfile, rng: ComponentRng) -> Cdg {
        Cdg::new(rng)
    }

    /// `tcp_cdg_init` (the gradient window is a fixed array: no allocation).
    fn init(&mut self, tp: &mut CcSock) {
        self.clear();
        self.rtt_seq = tp.snd_nxt;
        self.shadow_wnd = tp.snd_cwnd;
    }

    /// `tcp_cdg_ssthresh`.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        if self.state == State::Backoff {
            return (tp.snd_cwnd.wrapping_mul(BACKOFF_BETA.min(1024)) >> 10).max(2);
        }
        self.shadow_wnd = (self.shadow_wnd >> 1).min(tp.snd_cwnd);
        2u32.max(self.shadow_wnd).max(tp.snd_cwnd >> 1)
    }

    /// `tcp_cdg_cong_avoid` (never called in CWR or Recovery).
    fn cong_avoid(&mut self, tp: &mut CcSock, ack: u32, acked: u32) {
        if tp.in_slow_start() && HYSTART_DETECT != 0 {
            self.hystart_update(tp);
        }
        if after(ack, self.rtt_seq) && self.rtt.is_set() {
            let mut grad = 0;
            if self.rtt_prev.is_set() {
                grad = self.grad();
            }
            self.rtt_seq = tp.snd_nxt;
            self.rtt_prev = self.rtt;
            self.rtt = MinMax::default();
            self.last_ack = 0;
            self.sample_cnt = 0;
            if grad > 0 && self.backoff(tp, grad as u32) {
                return;
            }
        }
        if !tp.is_cwnd_limited {
            self.shadow_wnd = self.shadow_wnd.min(tp.snd_cwnd);
            return;
        }
        let prior = tp.snd_cwnd;
        tcp_reno_cong_avoid(tp, acked);
        let incr = tp.snd_cwnd.wrapping_sub(prior);
        self.shadow_wnd = self.shadow_wnd.max(self.shadow_wnd.wrapping_add(incr));
    }

    /// `tcp_cdg_acked`: per-RTT min/max with Hayes' delayed-ACK filter.
    fn pkts_acked(&mut self, tp: &mut CcSock, sample: &AckSample) {
        if sample.rtt_us <= 0 {
            return;
        }
        let rtt = sample.rtt_us as i32;
        if tp.sacked_out == 0 {
            if sample.pkts_acked == 1 && self.delack != 0 {
                // a delayed ACK only lowers an existing minimum
                self.rtt.min = self.rtt.min.min(rtt);
                self.delack -= 1;
                return;
            } else if sample.pkts_acked > 1 && self.delack < 5 {
                self.delack += 1;
            }
        }
        self.rtt.min = min_not_zero(self.rtt.min, rtt);
        self.rtt.max = self.rtt.max.max(rtt);
    }

    fn undo_cwnd(&mut self, tp: &CcSock) -> u32 {
        tcp_reno_undo_cwnd(tp)
    }

    /// `tcp_cdg_cwnd_event`.
    fn cwnd_event(&mut self, tp: &mut CcSock, ev: CaEvent) {
        match ev {
            CaEvent::CwndRestart => {
                self.clear();
                self.rtt_seq = tp.snd_nxt;
                self.shadow_wnd = tp.snd_cwnd;
            }
            CaEvent::CompleteCwr => {
                self.state = State::Unknown;
                self.rtt_seq = tp.snd_nxt;
                self.rtt_prev = self.rtt;
                self.rtt = MinMax::default();
            }
            _ => {}
        }
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("shadow_wnd", self.shadow_wnd as f64));
        out.push(("backoff_cnt", self.backoff_cnt as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cdg() -> Cdg {
        Cdg::new(ComponentRng::new(7, "test"))
    }

    /// e^0 = 1 (2³² − 1); the low byte is linear: 255 µs → 2³² − 1 − 255·4294;
    /// 256: (2³² − 1)·(65518 + 1) >> 16 = 4 293 853 183; 10⁶ µs ≈ e^−1.
    #[test]
    fn negative_exponential_vectors() {
        assert_eq!(nexp_u32(0), u32::MAX);
        assert_eq!(nexp_u32(255), u32::MAX - 255 * 4294);
        assert_eq!(nexp_u32(256), 4_293_853_183);
        let e1 = nexp_u32(1_000_000) as f64 / u32::MAX as f64;
        assert!((e1 - (-1f64).exp()).abs() < 1e-3, "{e1}");
        assert_eq!(nexp_u32(1 << 24), 0);
    }

    /// Two RTTs: min 10 000 → 10 400, max 12 000 → 12 100: the first
    /// gradient (one of eight) is extrapolated ×8: 400·8 = 3200.
    #[test]
    fn gradient_sums_and_extrapolates() {
        let mut c = cdg();
        c.rtt_prev = MinMax {
            min: 10_000,
            max: 12_000,
        };
        c.rtt = MinMax {
            min: 10_400,
            max: 12_100,
        };
        assert_eq!(c.grad(), 3_200);
        // second: min falls by 100, max +50: sums (300, 150), gmin > 0:
        // 300·8/2 = 1200
        c.rtt_prev = c.rtt;
        c.rtt = MinMax {
            min: 10_300,
            max: 12_150,
        };
        assert_eq!(c.grad(), 1_200);
        // zero gradients: the sums stay (300, 150), scaled by 8/tail until
        // the eighth fills the window and returns the plain sum
        let mut got = vec![];
        for _ in 0..6 {
            c.rtt_prev = c.rtt;
            got.push(c.grad());
        }
        assert_eq!(got, [800, 600, 480, 400, 342, 300]);
        assert!(c.gfilled);
    }

    /// Delayed-ACK filter: after a stretch ACK, a single-packet ACK may
    /// only lower the minimum; the max ignores it.
    #[test]
    fn delayed_ack_filter() {
        let mut c = cdg();
        let mut tp = CcSock::default();
        let s = |n, rtt| AckSample {
            pkts_acked: n,
            rtt_us: rtt,
            in_flight: 0,
        };
        c.pkts_acked(&mut tp, &s(2, 10_000));
        assert_eq!(
            (c.rtt, c.delack),
            (
                MinMax {
                    min: 10_000,
                    max: 10_000
                },
                1
            )
        );
        c.pkts_acked(&mut tp, &s(1, 50_000)); // filtered
        assert_eq!(
            (c.rtt, c.delack),
            (
                MinMax {
                    min: 10_000,
                    max: 10_000
                },
                0
            )
        );
        c.pkts_acked(&mut tp, &s(1, 50_000)); // counted
        assert_eq!(
            c.rtt,
            MinMax {
                min: 10_000,
                max: 50_000
            }
        );
    }

    /// A large gradient backs off (e^(−3200·42e−6) = 0.87: probability
    /// 0.13 per RTT; a gradient of 100 ms makes it certain): ssthresh =
    /// cwnd·724/1024 through CWR; loss uses the shadow window.
    #[test]
    fn backoff_and_shadow_window() {
        let mut c = cdg();
        let mut tp = CcSock {
            snd_cwnd: 100,
            snd_ssthresh: 50,
            snd_nxt: 5000,
            is_cwnd_limited: true,
            ..CcSock::default()
        };
        c.init(&mut tp);
        assert_eq!(c.shadow_wnd, 100);
        c.rtt_prev = MinMax {
            min: 10_000,
            max: 10_000,
        };
        c.rtt = MinMax {
            min: 110_000,
            max: 110_000,
        };
        c.cong_avoid(&mut tp, 5001, 1);
        assert!(tp.enter_cwr);
        assert_eq!(c.state, State::Backoff);
        assert_eq!(c.ssthresh(&tp), 70); // 100·724 >> 10
        c.cwnd_event(&mut tp, CaEvent::CompleteCwr);
        assert_eq!(c.state, State::Unknown);
        // a loss with cwnd 70 and shadow 100: shadow/2 = 50 < 35? no: 50
        tp.snd_cwnd = 70;
        assert_eq!(c.ssthresh(&tp), 50);
        // growth feeds the shadow window too
        tp.enter_cwr = false;
        tp.snd_cwnd = 10;
        tp.snd_ssthresh = 20;
        c.cong_avoid(&mut tp, 5001, 2);
        assert_eq!((tp.snd_cwnd, c.shadow_wnd), (12, 52));
    }

    #[test]
    fn ineffective_backoffs_stop_after_five() {
        let mut c = cdg();
        let mut tp = CcSock::default();
        for i in 1..=7 {
            let backed = c.backoff(&mut tp, 1_000_000);
            assert_eq!(backed, i <= 5, "{i}");
        }
    }
}
