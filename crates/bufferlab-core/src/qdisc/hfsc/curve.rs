//! HFSC's service-curve arithmetic: the kernel's fixed-point slopes
//! (bytes per psched tick scaled by `SM_SHIFT`, inverse slopes by
//! `ISM_SHIFT`), the conversions from `tc`'s units, the internal two-piece
//! curve (`struct internal_sc`) and the runtime curve anchored at a point
//! (`struct runtime_sc`) with its inverse and the minimum of two. Follows
//! net/sched/sch_hfsc.c (`seg_x2y`, `seg_y2x`, `m2sm`, `m2ism`, `d2dx`,
//! `sm2m`, `dx2d`, `sc2isc`, `rtsc_init`, `rtsc_x2y`, `rtsc_y2x`, `rtsc_min`).

use super::ServiceCurve;

/// `PSCHED_SHIFT`: a psched tick is 64 ns.
pub const PSCHED_SHIFT: u32 = 6;
/// `PSCHED_TICKS_PER_SEC`
pub const TICKS_PER_SEC: u64 = 1_000_000_000 >> PSCHED_SHIFT;
/// `SM_SHIFT` = 30 − PSCHED_SHIFT
pub const SM_SHIFT: u32 = 30 - PSCHED_SHIFT;
/// `ISM_SHIFT` = 8 + PSCHED_SHIFT
pub const ISM_SHIFT: u32 = 8 + PSCHED_SHIFT;
const SM_MASK: u64 = (1 << SM_SHIFT) - 1;
const ISM_MASK: u64 = (1 << ISM_SHIFT) - 1;
/// `HT_INFINITY`
pub const INFINITY: u64 = u64::MAX;
const USEC_PER_SEC: u64 = 1_000_000;

/// y = x·sm >> SM_SHIFT, split so that it does not overflow.
pub fn seg_x2y(x: u64, sm: u64) -> u64 {
    (x >> SM_SHIFT)
        .wrapping_mul(sm)
        .wrapping_add(((x & SM_MASK).wrapping_mul(sm)) >> SM_SHIFT)
}

/// x = y·ism >> ISM_SHIFT (infinite for an infinite inverse slope).
pub fn seg_y2x(y: u64, ism: u64) -> u64 {
    if y == 0 {
        0
    } else if ism == INFINITY {
        INFINITY
    } else {
        (y >> ISM_SHIFT)
            .wrapping_mul(ism)
            .wrapping_add(((y & ISM_MASK).wrapping_mul(ism)) >> ISM_SHIFT)
    }
}

/// bytes/s → bytes per tick << SM_SHIFT, rounded up.
pub fn m2sm(m: u32) -> u64 {
    ((m as u64) << SM_SHIFT).div_ceil(TICKS_PER_SEC)
}

/// bytes/s → ticks per byte << ISM_SHIFT, rounded up; infinite for 0.
pub fn m2ism(m: u32) -> u64 {
    if m == 0 {
        INFINITY
    } else {
        (TICKS_PER_SEC << ISM_SHIFT).div_ceil(m as u64)
    }
}

/// µs → ticks, rounded up.
pub fn d2dx(d: u32) -> u64 {
    (d as u64 * TICKS_PER_SEC).div_ceil(USEC_PER_SEC)
}

/// The slope as the kernel dumps it back (bytes/s, rounded down).
pub fn sm2m(sm: u64) -> u32 {
    ((sm as u128 * TICKS_PER_SEC as u128) >> SM_SHIFT) as u32
}

/// Ticks back to µs (rounded down).
pub fn dx2d(dx: u64) -> u32 {
    (dx * USEC_PER_SEC / TICKS_PER_SEC) as u32
}

/// `struct internal_sc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Isc {
    pub sm1: u64,
    pub ism1: u64,
    pub dx: u64,
    pub dy: u64,
    pub sm2: u64,
    pub ism2: u64,
}

impl Isc {
    /// `sc2isc`
    pub fn new(sc: &ServiceCurve) -> Isc {
        let sm1 = m2sm(sc.m1);
        let dx = d2dx(sc.d);
        Isc {
            sm1,
            ism1: m2ism(sc.m1),
            dx,
            dy: seg_x2y(dx, sm1),
            sm2: m2sm(sc.m2),
            ism2: m2ism(sc.m2),
        }
    }

    /// The curve as `hfsc_dump_sc` reports it.
    pub fn dump(&self) -> ServiceCurve {
        ServiceCurve {
            m1: sm2m(self.sm1),
            d: dx2d(self.dx),
            m2: sm2m(self.sm2),
        }
    }

    pub(super) fn convex(&self) -> bool {
        self.sm1 <= self.sm2
    }
}

/// `struct runtime_sc`: a two-piece curve anchored at (x, y).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rtsc {
    pub x: u64,
    pub y: u64,
    pub sm1: u64,
    pub ism1: u64,
    pub dx: u64,
    pub dy: u64,
    pub sm2: u64,
    pub ism2: u64,
}

impl Rtsc {
    /// `rtsc_init`
    pub fn new(isc: &Isc, x: u64, y: u64) -> Rtsc {
        Rtsc {
            x,
            y,
            sm1: isc.sm1,
            ism1: isc.ism1,
            dx: isc.dx,
            dy: isc.dy,
            sm2: isc.sm2,
            ism2: isc.ism2,
        }
    }

    /// `rtsc_y2x`: the time at which the curve reaches `y`.
    pub fn y2x(&self, y: u64) -> u64 {
        if y < self.y {
            self.x
        } else if y <= self.y.wrapping_add(self.dy) {
            if self.dy == 0 {
                self.x.wrapping_add(self.dx)
            } else {
                self.x.wrapping_add(seg_y2x(y - self.y, self.ism1))
            }
        } else {
            self.x
                .wrapping_add(self.dx)
                .wrapping_add(seg_y2x(y - self.y - self.dy, self.ism2))
        }
    }

    /// `rtsc_x2y`: the service the curve gives by time `x`.
    pub fn x2y(&self, x: u64) -> u64 {
        if x <= self.x {
            self.y
        } else if x <= self.x.wrapping_add(self.dx) {
            self.y.wrapping_add(seg_x2y(x - self.x, self.sm1))
        } else {
            self.y
                .wrapping_add(self.dy)
                .wrapping_add(seg_x2y(x - self.x - self.dx, self.sm2))
        }
    }

    /// `rtsc_min`: the lower envelope of this curve and `isc` started at
    /// (x, y).
    pub fn min_with(&mut self, isc: &Isc, x: u64, y: u64) {
        if isc.convex() {
            if self.x2y(x) < y {
                return;
            }
            self.x = x;
            self.y = y;
            return;
        }
        let y1 = self.x2y(x);
        if y1 <= y {
            return;
        }
        let y2 = self.x2y(x.wrapping_add(isc.dx));
        if y2 >= y.wrapping_add(isc.dy) {
            self.x = x;
            self.y = y;
            self.dx = isc.dx;
            self.dy = isc.dy;
            return;
        }
        // The curves cross: the first segment of `isc` lasts until the
        // gap y1 − y is closed at slope sm1 − sm2.
        let dsm = isc.sm1 - isc.sm2;
        let mut dx = (((y1 - y) as u128) << SM_SHIFT) as u64 / dsm;
        if self.x + self.dx > x {
            dx += self.x + self.dx - x;
        }
        let dy = seg_x2y(dx, isc.sm1);
        self.x = x;
        self.y = y;
        self.dx = dx;
        self.dy = dy;
    }
}
