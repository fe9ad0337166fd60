//! Software prefetch: with thousands of connections, each one's state is out
//! of cache when its segment arrives, and the fields a segment touches would
//! otherwise miss one after the other as the code reaches them. Asking for
//! all of them at once overlaps the misses.

/// Start bringing every cache line of `value` into cache.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = (value as *const T).cast::<i8>();
        for offset in (0..std::mem::size_of::<T>()).step_by(64) {
            // SAFETY: a prefetch is a hint that never faults, whatever the
            // address; SSE is part of the x86_64 baseline.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
