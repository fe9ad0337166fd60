//! COBALT, CAKE's AQM: CoDel's drop schedule with the inverse square root
//! by Newton steps (and a 16-entry cache for small counts) combined with BLUE's
//! drop probability for unresponsive flows. Follows net/sched/sch_cake.c
//! (`cobalt_newton_step`, `cobalt_cache_init`, `cobalt_invsqrt`,
//! `cobalt_control`, `cobalt_queue_full`, `cobalt_queue_empty`,
//! `cobalt_should_drop`).

use std::sync::OnceLock;

/// `struct cobalt_params` (ns, Q0.32 probabilities).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltParams {
    pub interval: u64,
    pub target: u64,
    pub mtu_time: u64,
    pub p_inc: u32,
    pub p_dec: u32,
}

/// `struct cobalt_vars`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CobaltVars {
    pub count: u32,
    /// 1/sqrt(count), Q0.32
    pub rec_inv_sqrt: u32,
    pub drop_next: i64,
    pub blue_timer: i64,
    pub p_drop: u32,
    pub dropping: bool,
    pub ecn_marked: bool,
}

/// What `cobalt_should_drop` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Deliver,
    /// CoDel's schedule fell due and the packet is not ECN-capable.
    Congested,
    /// BLUE's coin (`SKB_DROP_REASON_CAKE_FLOOD`).
    Flood,
}

/// `cobalt_newton_step`: one Newton iteration of 1/sqrt(count) in Q0.32.
pub fn newton_step(count: u32, rec_inv_sqrt: u32) -> u32 {
    let inv = rec_inv_sqrt as u64;
    let inv2 = (inv * inv) >> 32;
    let mut val = (3u64 << 32).wrapping_sub(count as u64 * inv2);
    val >>= 2;
    val = val.wrapping_mul(inv) >> (32 - 2 + 1);
    val as u32
}

/// `cobalt_cache_init`: 1/sqrt(n) for n < 16 by four Newton steps per n,
/// carried on from the previous entry; entries 0 and 1 stand for 1.0.
pub fn inv_sqrt_cache() -> &'static [u32; 16] {
    static CACHE: OnceLock<[u32; 16]> = OnceLock::new();
    CACHE.get_or_init(|| {
        let mut c = [0u32; 16];
        let mut v = u32::MAX;
        c[0] = v;
        for (n, slot) in c.iter_mut().enumerate().skip(1) {
            for _ in 0..4 {
                v = newton_step(n as u32, v);
            }
            *slot = v;
        }
        c
    })
}

impl CobaltVars {
    pub(super) fn new() -> CobaltVars {
        CobaltVars::default()
    }

    /// `cobalt_invsqrt`.
    fn invsqrt(&mut self) {
        if self.count < 16 {
            self.rec_inv_sqrt = inv_sqrt_cache()[self.count as usize];
        } else {
            self.rec_inv_sqrt = newton_step(self.count, self.rec_inv_sqrt);
        }
    }

    /// `cobalt_control`: t + interval/sqrt(count); `reciprocal_scale` takes
    /// the interval as a u32.
    pub fn control(t: i64, interval: u64, rec_inv_sqrt: u32) -> i64 {
        t + (((interval as u32 as u64) * rec_inv_sqrt as u64) >> 32) as i64
    }

    /// `cobalt_queue_full`: true when BLUE went from quiescent to active.
    pub fn queue_full(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut up = false;
        if (now - self.blue_timer) as u64 > p.target {
            up = self.p_drop == 0;
            self.p_drop = self.p_drop.wrapping_add(p.p_inc);
            if self.p_drop < p.p_inc {
                self.p_drop = u32::MAX;
            }
            self.blue_timer = now;
        }
        self.dropping = true;
        self.drop_next = now;
        if self.count == 0 {
            self.count = 1;
        }
        up
    }

    /// `cobalt_queue_empty`: true when BLUE went from active to quiescent.
    pub fn queue_empty(&mut self, p: &CobaltParams, now: i64) -> bool {
        let mut down = false;
        if self.p_drop != 0 && (now - self.blue_timer) as u64 > p.target {
            self.p_drop = self.p_drop.saturating_sub(p.p_dec);
            self.blue_timer = now;
            down = self.p_drop == 0;
        }
        self.dropping = false;
        if self.count != 0 && now - self.drop_next >= 0 {
            self.count -= 1;
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
        }
        down
    }

    /// `cobalt_should_drop` for a packet just taken off its flow after
    /// `sojourn` ns; `set_ce` marks it if it is ECN-capable. `draw` is the
    /// BLUE coin, drawn only while BLUE is active and CoDel did not drop.
    pub fn should_drop(
        &mut self,
        p: &CobaltParams,
        now: i64,
        sojourn: u64,
        bulk_flows: u32,
        set_ce: &mut dyn FnMut() -> bool,
        draw: &mut dyn FnMut() -> u32,
    ) -> Signal {
        let mut signal = Signal::Deliver;
        let mut schedule = now - self.drop_next;
        let over_target = sojourn > p.target
            && sojourn > p.mtu_time * bulk_flows as u64 * 2
            && sojourn > p.mtu_time * 4;
        let mut next_due = self.count != 0 && schedule >= 0;
        self.ecn_marked = false;
        if over_target {
            if !self.dropping {
                self.dropping = true;
                self.drop_next = Self::control(now, p.interval, self.rec_inv_sqrt);
            }
            if self.count == 0 {
                self.count = 1;
            }
        } else if self.dropping {
            self.dropping = false;
        }
        if next_due && self.dropping {
            self.ecn_marked = set_ce();
            if !self.ecn_marked {
                signal = Signal::Congested;
            }
            self.count = self.count.wrapping_add(1);
            if self.count == 0 {
                self.count = u32::MAX;
            }
            self.invsqrt();
            self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
            schedule = now - self.drop_next;
        } else {
            while next_due {
                self.count -= 1;
                self.invsqrt();
                self.drop_next = Self::control(self.drop_next, p.interval, self.rec_inv_sqrt);
                schedule = now - self.drop_next;
                next_due = self.count != 0 && schedule >= 0;
            }
        }
        if self.p_drop != 0 && signal == Signal::Deliver && draw() < self.p_drop {
            signal = Signal::Flood;
        }
        if self.count == 0 {
            self.drop_next = now + p.interval as i64;
        } else if schedule > 0 && signal == Signal::Deliver {
            self.drop_next = now;
        }
        signal
    }
}
