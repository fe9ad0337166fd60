//! Classful probability marking (CPM, docs/semantics/qdiscs.md §7): a per-DS-byte factor on
//! the marking probability of RED or BLUE, with per-class counters.
//!
//! The coefficient is an exact fraction `num/den` (0.5 = 5/10), so the RED
//! test `c·lhs ≥ qR` becomes `lhs·num ≥ qR·den` and BLUE's `draw < c·p`
//! becomes `draw·den < p·num`, both in 128-bit integers.

use super::spec::DscpCoeff;
use serde::Serialize;
use serde_json::json;

/// Per-class counters printed as `  class 0x32 passed N marked M early E pdrop P`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClassCounters {
    /// accepted into the queue (ECN-marked ones included)
    pub passed: u64,
    pub marked: u64,
    /// early/forced (or BLUE random) drops
    pub early: u64,
    /// of which RED hard (forced) drops, average at or above `max`
    pub forced: u64,
    /// tail drops at the real queue limit
    pub pdrop: u64,
}

/// A validated coefficient map with its counters.
#[derive(Clone, Debug)]
pub struct Cpm {
    pub map: DscpCoeff,
    /// one per class of `map.classes`, then the default class
    pub counters: Vec<ClassCounters>,
}

impl Cpm {
    pub fn new(map: &DscpCoeff) -> Result<Cpm, String> {
        let bad = |n: u32, d: u32| d == 0 || n as u64 > 1_000_000 * d as u64;
        if map.classes.iter().any(|c| bad(c.num, c.den)) || bad(map.default.0, map.default.1) {
            return Err(
                "dscp-coeff: coefficients must be fractions with a non-zero denominator".into(),
            );
        }
        Ok(Cpm {
            map: map.clone(),
            counters: vec![ClassCounters::default(); map.classes.len() + 1],
        })
    }

    /// Class index of a packet with DS byte `tos` (the default class last).
    pub fn class_of(&self, tos: u8) -> usize {
        let key = if self.map.match_dscp { tos >> 2 } else { tos };
        self.map
            .classes
            .iter()
            .position(|c| c.key == key)
            .unwrap_or(self.map.classes.len())
    }

    /// Coefficient `(num, den)` of class `k`.
    pub fn coeff(&self, k: usize) -> (u32, u32) {
        self.map
            .classes
            .get(k)
            .map(|c| (c.num, c.den))
            .unwrap_or(self.map.default)
    }

    /// Replace the map on `change`; counters are kept when the classes stay.
    pub fn change(&mut self, map: &DscpCoeff) -> Result<(), String> {
        let fresh = Cpm::new(map)?;
        if fresh.map.classes.len() != self.map.classes.len()
            || fresh
                .map
                .classes
                .iter()
                .zip(&self.map.classes)
                .any(|(a, b)| a.key != b.key)
        {
            self.counters = fresh.counters;
        }
        self.map = fresh.map;
        Ok(())
    }

    /// The `classes` entry of the xstats JSON: one object per class.
    pub fn xstats(&self) -> serde_json::Value {
        let mut out = Vec::new();
        for (k, c) in self.counters.iter().enumerate() {
            let key = match self.map.classes.get(k) {
                Some(cl) if self.map.match_dscp => json!(format!("{}", cl.key)),
                Some(cl) => json!(format!("0x{:02x}", cl.key)),
                None => json!("default"),
            };
            let (n, d) = self.coeff(k);
            out.push(json!({
                "key": key,
                "coeff": n as f64 / d as f64,
                "passed": c.passed,
                "marked": c.marked,
                "early": c.early,
                "forced": c.forced,
                "pdrop": c.pdrop,
            }));
        }
        serde_json::Value::Array(out)
    }
}

/// RED's scaled test with a coefficient: `(num/den)·lhs ≥ qr`.
#[inline]
pub fn scaled_ge(lhs: u64, qr: u32, (num, den): (u32, u32)) -> bool {
    lhs as u128 * num as u128 >= qr as u128 * den as u128
}

/// BLUE's random test with a coefficient: `draw < (num/den)·p`.
#[inline]
pub fn scaled_lt(draw: u32, p: u32, (num, den): (u32, u32)) -> bool {
    (draw as u128) * (den as u128) < (p as u128) * (num as u128)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::qdisc::spec::DscpClass;

    pub fn report_map() -> DscpCoeff {
        DscpCoeff {
            classes: vec![
                DscpClass {
                    key: 0x32,
                    num: 5,
                    den: 10,
                },
                DscpClass {
                    key: 0x46,
                    num: 7,
                    den: 10,
                },
            ],
            default: (9, 10),
            match_dscp: false,
        }
    }

    #[test]
    fn classes_by_exact_byte_and_by_dscp() {
        let c = Cpm::new(&report_map()).unwrap();
        assert_eq!(c.class_of(0x32), 0);
        assert_eq!(c.class_of(0x46), 1);
        assert_eq!(c.class_of(0x00), 2);
        // a CE-marked 0x32 (0x33) no longer matches the exact byte (P18)
        assert_eq!(c.class_of(0x33), 2);
        assert_eq!(c.coeff(2), (9, 10));
        let mut m = report_map();
        m.match_dscp = true;
        m.classes[0].key = 12;
        let c = Cpm::new(&m).unwrap();
        assert_eq!(c.class_of(0x33), 0);
    }

    #[test]
    fn e19_scaled_comparisons() {
        let lhs = 8_192u64 * 5;
        assert!(!scaled_ge(lhs, 50_000, (9, 10)));
        assert!(scaled_ge(lhs, 30_000, (9, 10)));
        assert!(!scaled_ge(lhs, 30_000, (7, 10)));
        assert!(!scaled_ge(lhs, 30_000, (5, 10)));
        assert!(scaled_lt(99, 200, (5, 10)));
        assert!(!scaled_lt(100, 200, (5, 10)));
    }
}
