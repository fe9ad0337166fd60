//! Units as types: simulated time in integer nanoseconds, durations, and
//! rates in bits per second. No floating-point time anywhere in the engine
//! (docs/internals.md "Rules of the house").

use serde::{Deserialize, Serialize};
use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant of simulated time, in nanoseconds since the start of the run.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct SimDuration(pub u64);

/// A rate in bits per second.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Rate(pub u64);

pub const NS_PER_SEC: u64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    /// `self - earlier`, zero if `earlier` is later (never wraps).
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);

    pub const fn from_nanos(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * NS_PER_SEC)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
}

impl Rate {
    pub const fn from_bps(bps: u64) -> Self {
        Rate(bps)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Serialisation time of `bytes` at this rate, rounded down to the nanosecond.
    /// A zero rate means "infinitely fast" and costs nothing.
    pub fn tx_time(self, bytes: u64) -> SimDuration {
        if self.0 == 0 {
            return SimDuration::ZERO;
        }
        // the same quotient in 64 bits when the product fits (any frame: a
        // 128-bit division is a library call, on every packet's transmission)
        match bytes.checked_mul(8 * NS_PER_SEC) {
            Some(bit_ns) => SimDuration(bit_ns / self.0),
            None => SimDuration(((bytes as u128 * 8 * NS_PER_SEC as u128) / self.0 as u128) as u64),
        }
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, d: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(d.0))
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, d: SimDuration) {
        self.0 = self.0.saturating_add(d.0);
    }
}

impl Sub for SimTime {
    type Output = SimDuration;
    /// Panics in debug builds if `rhs` is later than `self`: that is a logic error.
    fn sub(self, rhs: SimTime) -> SimDuration {
        debug_assert!(self.0 >= rhs.0, "time went backwards: {} - {}", self, rhs);
        SimDuration(self.0.saturating_sub(rhs.0))
    }
}

impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, d: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(d.0))
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / NS_PER_SEC, self.0 % NS_PER_SEC)
    }
}

impl fmt::Display for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / NS_PER_SEC, self.0 % NS_PER_SEC)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_of_full_frame_at_one_gigabit_is_12112_ns() {
        assert_eq!(Rate(1_000_000_000).tx_time(1514), SimDuration(12_112));
    }

    #[test]
    fn tx_time_truncates_to_the_nanosecond() {
        // 1490 B at 3 Mbit/s = 3_973_333.33 ns
        assert_eq!(Rate(3_000_000).tx_time(1490), SimDuration(3_973_333));
    }

    #[test]
    fn tx_time_of_huge_transfers_is_exact() {
        // past 2^64 bit-nanoseconds the 128-bit path takes over: 10^10 B at 3 Mbit/s
        assert_eq!(
            Rate(3_000_000).tx_time(10_000_000_000),
            SimDuration(26_666_666_666_666)
        );
    }

    #[test]
    fn zero_rate_is_infinitely_fast() {
        assert_eq!(Rate(0).tx_time(1_000_000), SimDuration::ZERO);
    }

    #[test]
    fn time_arithmetic_and_display() {
        let t = SimTime(1_500_000_000) + SimDuration::from_millis(20);
        assert_eq!(t, SimTime(1_520_000_000));
        assert_eq!(t - SimTime(20_000_000), SimDuration(1_500_000_000));
        assert_eq!(
            t.saturating_since(SimTime(2_000_000_000)),
            SimDuration::ZERO
        );
        assert_eq!(format!("{}", t), "1.520000000s");
    }
}
