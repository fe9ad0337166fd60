//! Software prefetch, for state that is out of cache when its turn comes:
//! with thousands of connections, each one's state when its segment arrives
//! (app/conns.rs: the fields a segment touches would otherwise miss one after
//! the other as the code reaches them; asking for all at once overlaps the
//! misses); behind a deep queue, the packet records that were stored long
//! before they leave (packet.rs `PacketArena::prefetch`). A hint only: no
//! effect on results, a no-op off x86-64.

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
