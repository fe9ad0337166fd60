//! netem delay distribution tables (docs/semantics/qdiscs.md §4.2).
//!
//! `tc ... distribution normal|pareto|paretonormal` loads a table of 4096
//! signed 16-bit samples of the standard distribution's inverse CDF, scaled
//! by `NETEM_DIST_SCALE` (8192), that iproute2 generates at build time
//! (iproute2 `netem/normal.c`, `netem/pareto.c`, `netem/paretonormal.c`,
//! NIST Net heritage). We regenerate them from the same recipe at first use:
//!
//! - normal: walk x from −10 in steps of 0.00005 (accumulated in `f64`, as the
//!   generator does), put x into bin `rint(16384·Φ(x))` (the last x wins),
//!   keep every 4th bin, scale by 8192, round half-even, clip to ±32767/−32768;
//! - pareto (shape a = 3): for i = 65536, 65520, …, 16 the value
//!   `((i/65536)^(−1/a) − 1.5)·(4/3)·8192`, clipped above at 32767;
//! - paretonormal: `(normal + 3·pareto) / 4` per entry, C integer division.
//!
//! `uniform` has no table: the kernel's default uniform formula is used.
//! Φ needs `erf`, which Rust's std lacks; [`erf`] below is accurate to a few
//! ulps, enough for the bin assignment to match a glibc build (a test checks
//! this against the platform libm on Linux).

use crate::qdisc::spec::NetemDistribution;
use std::sync::OnceLock;

/// `NETEM_DIST_SCALE` (include/uapi/linux/pkt_sched.h).
pub const DIST_SCALE: i64 = 8192;
/// Entries per table (`TABLESIZE / 4`).
pub const TABLE_LEN: usize = 4096;
/// Bins of the generator's fine grid (`TABLESIZE`).
const FINE_BINS: usize = 16384;

/// The table for `d`, or `None` for `uniform` (no table loaded).
pub fn table(d: NetemDistribution) -> Option<&'static [i16]> {
    static NORMAL: OnceLock<Vec<i16>> = OnceLock::new();
    static PARETO: OnceLock<Vec<i16>> = OnceLock::new();
    static PARETONORMAL: OnceLock<Vec<i16>> = OnceLock::new();
    match d {
        NetemDistribution::Uniform => None,
        NetemDistribution::Normal => Some(NORMAL.get_or_init(|| clip_all(&normal_raw()))),
        NetemDistribution::Pareto => Some(PARETO.get_or_init(|| clip_all(&pareto_raw()))),
        NetemDistribution::Paretonormal => Some(PARETONORMAL.get_or_init(|| {
            let n = normal_raw();
            let p = pareto_raw();
            // C integer division truncates toward zero, as Rust's `/` does.
            let mixed: Vec<i32> = n.iter().zip(&p).map(|(&n, &p)| (n + 3 * p) / 4).collect();
            clip_all(&mixed)
        })),
    }
}

fn clip_all(v: &[i32]) -> Vec<i16> {
    v.iter()
        .map(|&x| x.clamp(i16::MIN as i32, i16::MAX as i32) as i16)
        .collect()
}

/// Standard normal CDF exactly as the generator writes it: `.5 + .5·erf(x/(√2·1))`.
fn phi(x: f64) -> f64 {
    0.5 + 0.5 * erf((x - 0.0) / (2f64.sqrt() * 1.0))
}

/// Unclipped, unscaled-to-i16 normal entries: `rint(x_bin · 8192)` for every
/// 4th bin of the fine grid.
fn normal_raw() -> Vec<i32> {
    normal_raw_with(phi)
}

fn normal_raw_with(cdf: impl Fn(f64) -> f64) -> Vec<i32> {
    let bins = fine_grid(cdf);
    (0..FINE_BINS)
        .step_by(4)
        .map(|i| (bins[i] * DIST_SCALE as f64).round_ties_even() as i32)
        .collect()
}

/// The generator's walk: bin `rint(16384·cdf(x))` keeps the last x that fell
/// into it (`NaN` = never reached).
fn fine_grid(cdf: impl Fn(f64) -> f64) -> Vec<f64> {
    let mut bins = vec![f64::NAN; FINE_BINS + 1];
    let mut x = -10.0f64;
    while x < 10.05 {
        let i = (FINE_BINS as f64 * cdf(x)).round_ties_even();
        if (0.0..=FINE_BINS as f64).contains(&i) {
            bins[i as usize] = x;
        }
        x += 0.00005;
    }
    bins
}

/// Pareto (a = 3) entries, clipped above at 32767 as the generator does.
fn pareto_raw() -> Vec<i32> {
    const A: f64 = 3.0;
    (0..TABLE_LEN)
        .map(|k| {
            let i = 65536 - 16 * k as i64;
            let mut d = i as f64 / 65536.0;
            d = 1.0 / d.powf(1.0 / A);
            d -= 1.5;
            d *= (4.0 / 3.0) * DIST_SCALE as f64;
            if d > 32767.0 {
                d = 32767.0;
            }
            d.round_ties_even() as i32
        })
        .collect()
}

/// The error function, to a few ulps.
///
/// |z| < 2.5: `erf z = 2/√π · e^(−z²) · Σ 2ⁿ z^(2n+1) / (2n+1)!!` — every term is
/// positive, so there is no cancellation; z² is split with an FMA so that
/// `e^(−z²)` does not inherit its rounding error. |z| ≥ 2.5: `1 − erfc z`
/// with erfc from its continued fraction (modified Lentz).
pub fn erf(z: f64) -> f64 {
    if z.is_nan() {
        return z;
    }
    let a = z.abs();
    let r = if a < 2.5 {
        let hi = a * a;
        let lo = a.mul_add(a, -hi);
        let (mut term, mut sum, mut n) = (a, a, 0u32);
        loop {
            n += 1;
            term *= 2.0 * hi / (2 * n + 1) as f64;
            sum += term;
            if term < sum * 1e-17 || n > 200 {
                break;
            }
        }
        let scale = (-hi).exp() * (1.0 - lo);
        std::f64::consts::FRAC_2_SQRT_PI * scale * sum
    } else if a < 27.0 {
        1.0 - erfc_cf(a)
    } else {
        1.0
    };
    r.copysign(z)
}

/// erfc(z) for z ≥ 2.5: `e^(−z²)/√π · 1/(z + (1/2)/(z + 1/(z + (3/2)/(z + …))))`.
fn erfc_cf(z: f64) -> f64 {
    const TINY: f64 = 1e-300;
    // Lentz: f = b0 + a1/(b1 + a2/(b2 + …)), here b_k = z, a_k = k/2.
    let mut f = z;
    let mut c = z;
    let mut d = 0.0;
    for k in 1..500 {
        let ak = k as f64 * 0.5;
        d = z + ak * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = z + ak / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-17 {
            break;
        }
    }
    let hi = z * z;
    let lo = z.mul_add(z, -hi);
    (-hi).exp() * (1.0 - lo) / (f * std::f64::consts::PI.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        // Reference values (Abramowitz & Stegun / high-precision tables).
        let cases = [
            (0.0, 0.0),
            (0.1, 0.112_462_916_018_284_9),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
            (-1.0, -0.842_700_792_949_714_9),
        ];
        for (x, want) in cases {
            let got = erf(x);
            assert!(
                (got - want).abs() <= 4.0 * f64::EPSILON,
                "erf({x}) = {got}, want {want}"
            );
        }
        assert_eq!(erf(30.0), 1.0);
        assert_eq!(erf(-30.0), -1.0);
    }

    #[test]
    fn tables_have_4096_monotone_entries() {
        for d in [
            NetemDistribution::Normal,
            NetemDistribution::Pareto,
            NetemDistribution::Paretonormal,
        ] {
            let t = table(d).unwrap();
            assert_eq!(t.len(), TABLE_LEN);
            assert!(t.windows(2).all(|w| w[0] <= w[1]), "{d:?} not monotone");
        }
        assert!(table(NetemDistribution::Uniform).is_none());
    }

    #[test]
    fn normal_table_is_a_scaled_standard_normal() {
        let t = table(NetemDistribution::Normal).unwrap();
        // The first bin collects x below about −4.0: clipped to −32768.
        assert_eq!(t[0], -32768);
        // Symmetric inverse CDF: within one sigma entry k and entry 4096−k
        // mirror each other up to one fine bin (1.25 units at the centre).
        for k in 1..TABLE_LEN {
            let (a, b) = (t[k] as i32, t[TABLE_LEN - k] as i32);
            if a.abs() < 8192 {
                assert!((a + b).abs() <= 3, "k={k}: {a} vs {b}");
            }
        }
        // Median bin 8192 of the fine grid is x ≈ 0.
        assert_eq!(t[2048], 0);
        let n = t.len() as f64;
        let mean = t.iter().map(|&v| v as f64).sum::<f64>() / n;
        let sd = (t.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!(mean.abs() < 10.0, "{mean}");
        assert!((sd / 8192.0 - 1.0).abs() < 0.01, "{sd}");
        // Every bin used by the table was reached by the grid walk.
        let bins = fine_grid(phi);
        assert!((0..FINE_BINS).step_by(4).all(|i| !bins[i].is_nan()));
    }

    #[test]
    fn pareto_table_matches_the_generator_formula() {
        let t = table(NetemDistribution::Pareto).unwrap();
        // i = 65536: (1 − 1.5)·(4/3)·8192 = −5461.33 → −5461.
        assert_eq!(t[0], -5461);
        // i = 32768: (2^(1/3) − 1.5)·10922.67 = −2622.3 → −2622.
        assert_eq!(t[2048], -2622);
        // The tail is clipped at 32767.
        assert_eq!(t[TABLE_LEN - 1], 32767);
        let pn = table(NetemDistribution::Paretonormal).unwrap();
        // (−32850 + 3·(−5461)) / 4 truncates toward zero.
        let n0 = normal_raw()[0];
        assert_eq!(pn[0] as i32, (n0 + 3 * -5461) / 4);
    }

    /// The generated normal table equals the one a glibc build of iproute2's
    /// generator would print (platform `erf`, Linux only).
    #[cfg(target_os = "linux")]
    #[test]
    fn normal_table_matches_a_libm_build() {
        extern "C" {
            fn erf(x: f64) -> f64;
        }
        // SAFETY: `erf` from the C math library is a pure function of a double.
        let libm_phi = |x: f64| 0.5 + 0.5 * unsafe { erf((x - 0.0) / (2f64.sqrt() * 1.0)) };
        assert_eq!(normal_raw(), normal_raw_with(libm_phi));
        let mut worst = 0.0f64;
        let mut x = -8.0;
        while x < 8.0 {
            // SAFETY: as above.
            let c = unsafe { erf(x) };
            worst = worst.max((super::erf(x) - c).abs() / f64::EPSILON);
            x += 0.0137;
        }
        assert!(worst <= 4.0, "erf differs from libm by {worst} ulp-of-1");
    }
}
