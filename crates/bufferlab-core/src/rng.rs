//! Per-component random streams.
//!
//! Every random process (a netem loss coin, an application's Poisson gaps, a
//! host's ephemeral-port choice) owns a generator seeded from
//! `(run seed, component name)`, so adding a component never shifts another
//! component's draws (docs/internals.md "Rules of the house"). Linux itself uses
//! unseeded kernel randomness, so only distributions can match it, never
//! sequences (docs/semantics/qdiscs.md P21).

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// A deterministic random stream owned by one component.
#[derive(Clone, Debug)]
pub struct ComponentRng {
    inner: Xoshiro256PlusPlus,
}

/// FNV-1a over the component name: stable across platforms and Rust versions
/// (unlike `std::hash`), which the determinism guarantee needs.
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// SplitMix64 finaliser: spreads nearby seeds over the whole state space.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl ComponentRng {
    /// The stream of component `component` in a run seeded with `seed`.
    pub fn new(seed: u64, component: &str) -> Self {
        let mixed = splitmix64(seed ^ splitmix64(fnv1a64(component.as_bytes())));
        ComponentRng {
            inner: Xoshiro256PlusPlus::seed_from_u64(mixed),
        }
    }

    /// A uniform 32-bit draw ("draw u32" in docs/semantics/qdiscs.md).
    pub fn next_u32(&mut self) -> u32 {
        (self.inner.next_u64() >> 32) as u32
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.inner.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [lo, hi] (inclusive); `lo <= hi`.
    pub fn range_u64(&mut self, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= hi);
        let span = hi - lo + 1;
        lo + ((self.inner.next_u64() as u128 * span as u128) >> 64) as u64
    }

    /// Exponentially distributed with the given mean, by inversion
    /// (`-mean * ln(1 - U)`, U in [0,1) so the log argument is never 0).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.next_f64()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_component_give_the_same_stream() {
        let mut a = ComponentRng::new(7, "s1-eth2/netem");
        let mut b = ComponentRng::new(7, "s1-eth2/netem");
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn components_and_seeds_are_independent_streams() {
        let a: Vec<u32> = (0..8)
            .scan(ComponentRng::new(1, "a"), |r, _| Some(r.next_u32()))
            .collect();
        let b: Vec<u32> = (0..8)
            .scan(ComponentRng::new(1, "b"), |r, _| Some(r.next_u32()))
            .collect();
        let c: Vec<u32> = (0..8)
            .scan(ComponentRng::new(2, "a"), |r, _| Some(r.next_u32()))
            .collect();
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn uniform_and_exponential_have_the_right_means() {
        let mut r = ComponentRng::new(3, "stats");
        let n = 200_000;
        let mean_u: f64 = (0..n).map(|_| r.next_f64()).sum::<f64>() / n as f64;
        let mean_e: f64 = (0..n).map(|_| r.exponential(2.0)).sum::<f64>() / n as f64;
        // standard errors: 1/sqrt(12 n) = 0.00065 and 2/sqrt(n) = 0.0045; allow 5 sigma
        assert!((mean_u - 0.5).abs() < 0.0033, "{mean_u}");
        assert!((mean_e - 2.0).abs() < 0.023, "{mean_e}");
    }

    #[test]
    fn range_stays_inside_bounds() {
        let mut r = ComponentRng::new(9, "ports");
        for _ in 0..10_000 {
            let v = r.range_u64(32768, 60999);
            assert!((32768..=60999).contains(&v));
        }
    }
}
