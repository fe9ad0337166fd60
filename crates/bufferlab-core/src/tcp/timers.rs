//! The endpoint's timers as a table (docs/internals.md "Timers as a table"): one
//! `Option<SimTime>` per [`TcpTimer`]; re-arming is a store, the next wake-up
//! is the minimum, and a stale deadline is simply overwritten.
//!
//! Linux keeps RTO, tail-loss probe, RACK reordering timeout and zero-window
//! probe on one timer (`icsk_retransmit_timer` with `icsk_pending` naming the
//! event, net/ipv4/inet_connection_sock.c); [`TimerTable::set_xmit`] keeps
//! that exclusivity. Jiffy timers fire on a tick: a timeout of `n` jiffies
//! armed at `now` expires at the start of tick `jiffies(now) + n`
//! ([`jiffies_deadline`]); the pacing and SACK-compression timers are
//! hrtimers and fire at their exact nanosecond.

use super::cc::HZ;
use crate::time::SimTime;

/// Nanoseconds per jiffy at HZ 250.
pub const NS_PER_JIFFY: u64 = 1_000_000_000 / HZ as u64;

/// The endpoint's timers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TcpTimer {
    /// `ICSK_TIME_RETRANS`: RTO (also SYN / SYN-ACK retransmission)
    Retransmit = 0,
    /// `ICSK_TIME_LOSS_PROBE`: tail loss probe (docs/semantics/tcp.md §9.3)
    LossProbe = 1,
    /// `ICSK_TIME_REO_TIMEOUT`: RACK reordering window expiry (§9.2)
    ReoTimeout = 2,
    /// `ICSK_TIME_PROBE0`: zero-window probe
    Probe0 = 3,
    /// `icsk_delack_timer`: delayed ACK (§7.3)
    DelayedAck = 4,
    /// `compressed_ack_timer` (hrtimer): release of coalesced SACKs
    CompressedAck = 5,
    /// `pacing_timer` (hrtimer): next departure allowed by pacing (§12)
    Pacing = 6,
    /// end of TIME-WAIT (60 s)
    TimeWait = 7,
}

/// Number of timers in the table.
pub const N_TIMERS: usize = 8;

impl TcpTimer {
    /// All timers, in the order `handle_timeout` serves expired ones.
    pub const ALL: [TcpTimer; N_TIMERS] = [
        TcpTimer::DelayedAck,
        TcpTimer::CompressedAck,
        TcpTimer::Retransmit,
        TcpTimer::LossProbe,
        TcpTimer::ReoTimeout,
        TcpTimer::Probe0,
        TcpTimer::Pacing,
        TcpTimer::TimeWait,
    ];

    /// The four events sharing `icsk_retransmit_timer`.
    pub const XMIT: [TcpTimer; 4] = [
        TcpTimer::Retransmit,
        TcpTimer::LossProbe,
        TcpTimer::ReoTimeout,
        TcpTimer::Probe0,
    ];
}

/// Deadline of a jiffy timer of `when` jiffies armed at `now`
/// (`jiffies + when`, firing at the start of that tick).
#[inline]
pub fn jiffies_deadline(now: SimTime, when: u32) -> SimTime {
    let tick = now.as_nanos() / NS_PER_JIFFY;
    SimTime::from_nanos((tick + when as u64) * NS_PER_JIFFY)
}

/// The timer table: one deadline per timer, [`SimTime::MAX`] when disarmed
/// (64 bytes, one cache line, where `Option<SimTime>` would take two; it
/// is read on every segment of every connection).
#[derive(Clone, Debug)]
pub struct TimerTable {
    at: [SimTime; N_TIMERS],
}

impl Default for TimerTable {
    fn default() -> Self {
        TimerTable {
            at: [SimTime::MAX; N_TIMERS],
        }
    }
}

impl TimerTable {
    #[inline]
    pub fn get(&self, t: TcpTimer) -> Option<SimTime> {
        let at = self.at[t as usize];
        (at != SimTime::MAX).then_some(at)
    }

    #[inline]
    pub fn set(&mut self, t: TcpTimer, when: SimTime) {
        debug_assert!(when != SimTime::MAX, "SimTime::MAX means disarmed");
        self.at[t as usize] = when;
    }

    #[inline]
    pub fn clear(&mut self, t: TcpTimer) {
        self.at[t as usize] = SimTime::MAX;
    }

    pub fn clear_all(&mut self) {
        self.at = [SimTime::MAX; N_TIMERS];
    }

    /// `inet_csk_reset_xmit_timer`: arm one of the retransmit-timer events,
    /// replacing whichever was pending.
    pub fn set_xmit(&mut self, t: TcpTimer, when: SimTime) {
        debug_assert!(TcpTimer::XMIT.contains(&t));
        self.clear_xmit();
        self.set(t, when);
    }

    /// `inet_csk_clear_xmit_timer` for the shared retransmit timer.
    pub fn clear_xmit(&mut self) {
        for x in TcpTimer::XMIT {
            self.clear(x);
        }
    }

    /// `icsk_pending`: which retransmit-timer event is armed, and when.
    pub fn pending_xmit(&self) -> Option<(TcpTimer, SimTime)> {
        TcpTimer::XMIT
            .iter()
            .find_map(|&t| self.get(t).map(|w| (t, w)))
    }

    /// Earliest deadline of all armed timers.
    pub fn next(&self) -> Option<SimTime> {
        let earliest = self.at.iter().copied().min().unwrap_or(SimTime::MAX);
        (earliest != SimTime::MAX).then_some(earliest)
    }

    /// The first timer (in [`TcpTimer::ALL`] order) due at `now`, disarmed.
    pub fn take_expired(&mut self, now: SimTime) -> Option<TcpTimer> {
        let due = TcpTimer::ALL
            .into_iter()
            .find(|&t| self.get(t).is_some_and(|w| w <= now))?;
        self.clear(due);
        Some(due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimDuration;

    #[test]
    fn jiffy_timers_fire_on_the_tick() {
        // armed 1 ms into a tick: 10 jiffies → 36 ms later
        let now = SimTime::ZERO + SimDuration::from_millis(5);
        assert_eq!(
            jiffies_deadline(now, 10),
            SimTime::ZERO + SimDuration::from_millis(44)
        );
        // armed on a tick boundary: exactly 40 ms
        let now = SimTime::ZERO + SimDuration::from_millis(8);
        assert_eq!(
            jiffies_deadline(now, 10),
            SimTime::ZERO + SimDuration::from_millis(48)
        );
    }

    #[test]
    fn xmit_events_are_exclusive_and_next_is_the_minimum() {
        let mut t = TimerTable::default();
        t.set(TcpTimer::DelayedAck, SimTime(50));
        t.set_xmit(TcpTimer::Retransmit, SimTime(100));
        t.set_xmit(TcpTimer::LossProbe, SimTime(30));
        assert_eq!(t.get(TcpTimer::Retransmit), None);
        assert_eq!(t.pending_xmit(), Some((TcpTimer::LossProbe, SimTime(30))));
        assert_eq!(t.next(), Some(SimTime(30)));
        assert_eq!(t.take_expired(SimTime(40)), Some(TcpTimer::LossProbe));
        assert_eq!(t.take_expired(SimTime(40)), None);
        assert_eq!(t.next(), Some(SimTime(50)));
    }
}
