//! Windowed min/max filter (lib/win_minmax.c, include/linux/win_minmax.h):
//! Kathleen Nichols' constant-space estimator of the running maximum (or
//! minimum) of a stream over a sliding window.
//!
//! It keeps the best, second-best and third-best samples with
//! non-decreasing timestamps. A new best overwrites all three; otherwise a
//! sample replaces the 2nd/3rd choice it beats. As time passes without a
//! new best, the 2nd and 3rd choices are refreshed from the later quarter
//! and half of the window, and when the best ages out of the window the
//! choices shift down. TCP uses it as the 5-minute min-RTT filter
//! (`tcp_min_rtt`, time in jiffies) and BBR as a max over 10 packet-timed
//! rounds (time = round count, value = bandwidth in pkts/µs << 24).

/// One sample: time (any u32 clock, wrapping) and value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinMaxSample {
    pub t: u32,
    pub v: u32,
}

/// `struct minmax`: best, 2nd and 3rd choices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MinMax {
    s: [MinMaxSample; 3],
}

impl MinMax {
    /// A filter holding `meas` at time `t` (`minmax_reset`; TCP starts its
    /// min-RTT filter at `~0U`).
    pub fn new(t: u32, meas: u32) -> Self {
        let mut m = MinMax::default();
        m.reset(t, meas);
        m
    }

    /// `minmax_get`: the current best.
    #[inline]
    pub fn get(&self) -> u32 {
        self.s[0].v
    }

    /// `minmax_reset`: forget everything, (t, meas) becomes all three choices.
    pub fn reset(&mut self, t: u32, meas: u32) -> u32 {
        let val = MinMaxSample { t, v: meas };
        self.s = [val; 3];
        meas
    }

    /// `minmax_subwin_update`: age the choices as time passes.
    fn subwin_update(&mut self, win: u32, val: MinMaxSample) -> u32 {
        let dt = val.t.wrapping_sub(self.s[0].t);
        if dt > win {
            // the best left the window: promote the 2nd and 3rd choices
            // (twice if the 2nd is out of the window as well)
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.t.wrapping_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // a quarter of the window without a new 2nd choice: take one
            // from the second quarter
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // half the window without a new 3rd choice: take one from the
            // second half
            self.s[2] = val;
        }
        self.s[0].v
    }

    /// `minmax_running_max`: add a sample at time `t`, window `win`;
    /// returns the windowed maximum.
    pub fn running_max(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinMaxSample { t, v: meas };
        if val.v >= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v >= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v >= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }

    /// `minmax_running_min`: add a sample at time `t`, window `win`;
    /// returns the windowed minimum.
    pub fn running_min(&mut self, win: u32, t: u32, meas: u32) -> u32 {
        let val = MinMaxSample { t, v: meas };
        if val.v <= self.s[0].v || val.t.wrapping_sub(self.s[2].t) > win {
            return self.reset(t, meas);
        }
        if val.v <= self.s[1].v {
            self.s[1] = val;
            self.s[2] = val;
        } else if val.v <= self.s[2].v {
            self.s[2] = val;
        }
        self.subwin_update(win, val)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// BBR's bw filter: window 10 rounds.
    const WIN: u32 = 10;

    #[test]
    fn a_max_holds_for_ten_rounds_then_expires() {
        let mut f = MinMax::default();
        assert_eq!(f.running_max(WIN, 0, 100), 100);
        // lower samples every round: the 100 stays while t − 0 ≤ 10
        for t in 1..=10 {
            assert_eq!(f.running_max(WIN, t, 50), 100, "round {t}");
        }
        // the 50s were taken as 2nd/3rd choices from round 3 on (> win/4)
        assert_eq!(f.s[1], MinMaxSample { t: 10, v: 50 });
        // round 11: 11 − 0 > 10, the 100 ages out and the 50 takes over
        assert_eq!(f.running_max(WIN, 11, 50), 50);
    }

    #[test]
    fn second_and_third_choices_come_from_later_subwindows() {
        let mut f = MinMax::default();
        f.running_max(WIN, 0, 100);
        // within the first quarter (dt ≤ 10/4 = 2) lower samples are not kept
        f.running_max(WIN, 1, 90);
        f.running_max(WIN, 2, 80);
        assert_eq!(f.s, [MinMaxSample { t: 0, v: 100 }; 3]);
        // round 3 (> win/4, 2nd choice still the best's): 2nd and 3rd choice
        f.running_max(WIN, 3, 75);
        assert_eq!(f.s[1], MinMaxSample { t: 3, v: 75 });
        assert_eq!(f.s[2], MinMaxSample { t: 3, v: 75 });
        // round 6 (> win/2, 3rd choice still the 2nd's): a new 3rd choice
        f.running_max(WIN, 6, 70);
        assert_eq!(f.s[2], MinMaxSample { t: 6, v: 70 });
        // round 11: the 100 expires, 75 (round 3) is the best, 70 second
        assert_eq!(f.running_max(WIN, 11, 60), 75);
        assert_eq!(f.s[1], MinMaxSample { t: 6, v: 70 });
        assert_eq!(f.s[2], MinMaxSample { t: 11, v: 60 });
        // round 14: 75 (round 3) is 11 rounds old; 70 (round 6) takes over
        assert_eq!(f.running_max(WIN, 14, 60), 70);
    }

    #[test]
    fn a_new_max_resets_all_choices() {
        let mut f = MinMax::default();
        f.running_max(WIN, 0, 100);
        f.running_max(WIN, 4, 80);
        assert_eq!(f.running_max(WIN, 5, 120), 120);
        assert_eq!(f.s, [MinMaxSample { t: 5, v: 120 }; 3]);
        // an equal value is a new max too (refreshes the timestamp)
        f.running_max(WIN, 9, 120);
        assert_eq!(f.s[0].t, 9);
    }

    #[test]
    fn nothing_left_in_the_window_resets_to_the_new_sample() {
        let mut f = MinMax::default();
        f.running_max(WIN, 0, 100);
        // 11 rounds of silence: even a lower sample replaces everything
        assert_eq!(f.running_max(WIN, 11, 10), 10);
    }

    #[test]
    fn running_min_mirrors_running_max() {
        let mut f = MinMax::default();
        f.reset(0, u32::MAX);
        assert_eq!(f.running_min(WIN, 0, 40), 40);
        assert_eq!(f.running_min(WIN, 5, 60), 40);
        assert_eq!(f.running_min(WIN, 10, 60), 40);
        assert_eq!(f.running_min(WIN, 11, 60), 60);
        assert_eq!(f.running_min(WIN, 12, 30), 30);
    }

    #[test]
    fn time_wraps_like_the_kernel_u32_clock() {
        let mut f = MinMax::default();
        let t0 = u32::MAX - 3;
        f.running_max(WIN, t0, 100);
        assert_eq!(f.running_max(WIN, t0.wrapping_add(10), 50), 100);
        assert_eq!(f.running_max(WIN, t0.wrapping_add(11), 50), 50);
    }
}
