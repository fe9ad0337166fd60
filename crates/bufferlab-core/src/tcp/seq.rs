//! Sequence-number arithmetic: 32-bit wrapping comparisons as Linux's
//! `before()`/`after()`/`between()` (include/net/tcp.h). Every comparison of
//! sequence numbers (and of 32-bit jiffies or TS-option clocks) in the TCP
//! model goes through these, so a run that wraps the sequence space behaves
//! like the kernel.

/// `before(a, b)`: `a` precedes `b` in sequence space.
#[inline]
pub fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `after(a, b)`: `a` follows `b` in sequence space.
#[inline]
pub fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

/// `between(seq, low, high)`: `low <= seq <= high` in sequence space.
#[inline]
pub fn between(seq: u32, low: u32, high: u32) -> bool {
    high.wrapping_sub(low) >= seq.wrapping_sub(low)
}

/// The later of two sequence numbers.
#[inline]
pub fn seq_max(a: u32, b: u32) -> u32 {
    if after(a, b) {
        a
    } else {
        b
    }
}

/// The earlier of two sequence numbers.
#[inline]
pub fn seq_min(a: u32, b: u32) -> u32 {
    if before(a, b) {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_wrap_around_the_sequence_space() {
        assert!(before(1, 2));
        assert!(!before(2, 2));
        assert!(after(3, 2));
        // 0xffff_fff0 precedes 0x10 once the space wraps
        assert!(before(0xffff_fff0, 0x10));
        assert!(after(0x10, 0xffff_fff0));
        assert_eq!(seq_max(0xffff_fff0, 0x10), 0x10);
        assert_eq!(seq_min(0xffff_fff0, 0x10), 0xffff_fff0);
    }

    #[test]
    fn between_is_inclusive_and_wraps() {
        assert!(between(5, 5, 10));
        assert!(between(10, 5, 10));
        assert!(!between(11, 5, 10));
        assert!(between(2, 0xffff_fff0, 0x10));
        assert!(!between(0x20, 0xffff_fff0, 0x10));
    }
}
