//! The phase of the TCP clock (docs/tcp-design.md "The TCP clock's phase").
//!
//! Linux's TCP reads one clock: `tcp_clock_ns()` is `local_clock()`
//! (include/net/tcp.h), `tcp_mstamp_refresh` keeps its µs value in
//! `tp->tcp_mstamp`, and the TS option's millisecond ticks are that value
//! divided down (`tcp_time_stamp_ts`, `tcp_skb_timestamp_ts`). The receiver's
//! RTT estimate for window autotuning (`tcp_rcv_rtt_measure_ts`,
//! net/ipv4/tcp_input.c) and the sender's TS-option RTT samples
//! (`tcp_rtt_tsopt_us`) count whole ticks, so where the ticks fall among the
//! packets decides whether a 20 ms path measures 20 or 21 ms — and in slow
//! start, which flight closes a DRS measurement (docs/kernel-oracle.md,
//! "Reno's slow-start loss and the receiver's clock").
//!
//! `local_clock()` counts from boot, so the phase of its millisecond
//! boundaries against a lab's traffic is arbitrary and differs from run to
//! run. A lab's hosts are network namespaces of one kernel (Mininet), so
//! they read the same clock: the run draws one phase from its seed and
//! every host's TCP uses it. Jiffies (`tcp_jiffies32`, the timer wheel) are
//! a separate clock and keep their ticks at whole 4 ms of simulated time.

use crate::rng::ComponentRng;

/// One millisecond, the TS clock's tick (`TCP_TS_HZ` = 1000), in µs.
const TS_TICK_US: u64 = 1000;

/// The kernel's TCP clock phase for a run seeded with `seed`: µs in
/// [0, 1000) by which `tcp_clock_ns` is past a whole millisecond at
/// simulated time zero. Its own random stream, so no other draw moves.
pub fn clock_phase_us(seed: u64) -> u32 {
    ComponentRng::new(seed, "kernel/tcp_clock").range_u64(0, TS_TICK_US - 1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_comes_from_the_seed_and_spreads_over_the_tick() {
        assert_eq!(clock_phase_us(7), clock_phase_us(7));
        let phases: Vec<u32> = (1..=200).map(clock_phase_us).collect();
        assert!(phases.iter().all(|&p| (p as u64) < TS_TICK_US));
        // 200 uniform draws: each tenth of the tick gets ~20 (none empty)
        for tenth in 0..10 {
            let n = phases.iter().filter(|&&p| p / 100 == tenth).count();
            assert!((5..=40).contains(&n), "tenth {tenth}: {n} of 200");
        }
    }
}
