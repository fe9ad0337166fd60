//! iperf3's send throttle for `-b` (src/iperf_api.c): the green light of
//! each sending stream, re-checked after each send and on a periodic timer.
//! UDP clients pace every datagram with it; TCP streams check it between
//! blocks (tcp.rs).

use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime, NS_PER_SEC};
use serde::Deserialize;

/// How an iperf3 client paces (see [`Throttle`] for the model and its sources).
#[derive(Clone, Copy, Debug, Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PacingSpec {
    /// `--pacing-timer` in µs: the period of the timer that re-checks the
    /// throttle. iperf3 ≥ 3.2 defaults to 1000; 3.0/3.1 have no option and a
    /// fixed 100 000 (0.1 s). Zero or negative: the timer is due on every
    /// pass of the loop (iperf3 accepts any integer).
    pub timer_us: i64,
    /// `-b RATE/BURST`: datagrams sent per pass with the throttle checked
    /// once after the whole burst; 0 = no burst (checked after every datagram)
    pub burst: u32,
    /// one pass of iperf3's client loop that sends one datagram (select,
    /// clock read, sendto), ns: the profile's `iperf3_send_loop_us`
    pub send_ns: u64,
    /// how late a `select` timeout may wake the process: Linux's default
    /// `timer_slack_ns` for normal tasks (50 µs), ns
    pub slack_ns: u64,
}

impl Default for PacingSpec {
    fn default() -> Self {
        PacingSpec {
            timer_us: 1000,
            burst: 0,
            send_ns: 6_000,
            slack_ns: 50_000,
        }
    }
}

/// iperf3's UDP send throttle in simulated time.
///
/// What iperf3 does (same logic in 3.0 through 3.12; read in `src/iperf_api.c`
/// `iperf_send`, `iperf_check_throttle`, `send_timer_proc`,
/// `iperf_create_send_timers`, `src/iperf_client_api.c` `iperf_run_client`
/// and `src/timer.c`):
///
/// * each stream has a green light, on at TEST_START, when `start_time_fixed`
///   is taken and a periodic timer of `pacing_timer` µs is created (expiries
///   at start + k·period, rescheduled by adding the period, never drifting);
/// * the single-threaded client loop `select`s on the sockets whose light is
///   green and on the next timer expiry, then calls `iperf_send` and runs the
///   due timers. A UDP socket is always writable, so while the light is green
///   the loop spins: one datagram per pass;
/// * the throttle: light := bytes_sent·8 / (now − start) < rate. Without a
///   burst it is evaluated after every datagram (with `now` read before the
///   send), and on every timer expiry; with `-b RATE/N` each pass sends N
///   datagrams and the light is evaluated once after them (and on expiries);
/// * so a sender below its rate sends the next datagram on the first timer
///   expiry after its CBR instant, and a sender that fell behind (a rate
///   above one datagram per period) sends back to back until caught up.
///
/// Host timing, the part the source leaves to the machine: a pass of the loop
/// takes `send_ns` (a profile constant; single-stream iperf3 UDP tops out
/// near 2 Gbit/s of 1448-byte datagrams, about 6 µs a datagram, e.g.
/// esnet/iperf issues #773 and #828), and a wake-up from `select` lands
/// uniformly in `[expiry, expiry + slack]` — Linux lets a normal task's
/// hrtimer fire anywhere in its slack window (`select_estimate_accuracy` in
/// `fs/select.c`, `timer_slack_ns` = 50 µs), drawn from this client's own
/// random stream. When the timer period is shorter than a pass the timer is
/// always due and the loop never sleeps: expiries are then the passes
/// themselves (period = `send_ns`, no slack). Not modelled: iperf_time's
/// 1 µs resolution, socket-buffer blocking, other processes' CPU use.
///
/// Expiries that cannot turn the light green (those ending before the CBR
/// instant even with the whole slack) are skipped without being scheduled:
/// the light is a pure function of the instant, so this changes nothing but
/// the event count.
pub(super) struct Throttle {
    rate_bps: u64,
    /// bits per datagram (the UDP payload, as iperf3 counts `bytes_sent`)
    bits: u64,
    burst: u32,
    period: SimDuration,
    slack: SimDuration,
    pass: SimDuration,
    /// `start_time_fixed`, also the timer's origin
    start: SimTime,
    /// the next send pass while the light is green
    next_send: Option<SimTime>,
    /// datagrams still to go in the current burst
    burst_left: u32,
    /// index of the timer expiry `wake` belongs to
    tick: u64,
    /// the wake-up for expiry `tick` while the light is red
    wake: Option<SimTime>,
    /// end of the loop's last activity: a wake-up cannot precede it
    busy_until: SimTime,
    rng: ComponentRng,
}

impl Throttle {
    pub(super) fn new(
        spec: &PacingSpec,
        rate_bps: u64,
        blksize: u32,
        start: SimTime,
        rng: ComponentRng,
    ) -> Self {
        let pass = SimDuration(spec.send_ns);
        let timer = SimDuration(spec.timer_us.max(0) as u64 * 1000);
        // a timer shorter than a pass is always due: the loop polls, never sleeps
        let (period, slack) = if timer < pass || timer == SimDuration::ZERO {
            (pass, SimDuration::ZERO)
        } else {
            (timer, SimDuration(spec.slack_ns))
        };
        Throttle {
            rate_bps,
            bits: blksize as u64 * 8,
            burst: spec.burst,
            period: SimDuration(period.as_nanos().max(1)),
            slack,
            pass,
            start,
            // iperf_create_send_timers: the light starts green
            next_send: Some(start),
            burst_left: spec.burst.max(1),
            tick: 0,
            wake: None,
            busy_until: start,
            rng,
        }
    }

    pub(super) fn poll_timeout(&self) -> Option<SimTime> {
        self.next_send.or(self.wake)
    }

    /// Is the light green? (A TCP stream writes while it is and its socket
    /// takes data: a socket is not always writable, so only the wake-up is a
    /// timeout.)
    pub(super) fn green(&self) -> bool {
        self.next_send.is_some()
    }

    /// The timer expiry that will re-check a red light.
    pub(super) fn wake_at(&self) -> Option<SimTime> {
        self.wake
    }

    /// iperf_check_throttle at `now` after `sent` datagrams: the light is
    /// green iff sent·bits / elapsed < rate (at elapsed 0 the quotient is
    /// infinite: red).
    fn green_at(&self, now: SimTime, sent: u64) -> bool {
        let elapsed = (now - self.start).as_nanos() as u128;
        elapsed > 0
            && (sent as u128 * self.bits as u128 * NS_PER_SEC as u128)
                < self.rate_bps as u128 * elapsed
    }

    /// Is a send pass due at `now`?
    pub(super) fn send_due(&self, now: SimTime) -> bool {
        self.next_send.is_some_and(|t| t <= now)
    }

    /// A datagram left at `now`, the `sent`-th since the start.
    pub(super) fn on_sent(&mut self, now: SimTime, sent: u64) {
        if self.burst == 0 {
            // iperf_send: checked after each datagram with the clock read before it
            if self.green_at(now, sent) {
                self.next_send = Some(now + self.pass);
            } else {
                self.go_red(now + self.pass, sent);
            }
            return;
        }
        self.burst_left -= 1;
        if self.burst_left > 0 {
            self.next_send = Some(now + self.pass);
            return;
        }
        // the whole burst is out: one check, with the clock read after it
        let after = now + self.pass;
        if self.green_at(after, sent) {
            self.burst_left = self.burst;
            self.next_send = Some(after);
        } else {
            self.go_red(after, sent);
        }
    }

    /// The light turned red; the loop is busy until `busy`. Schedule the wake
    /// for the first timer expiry that could turn it green again.
    fn go_red(&mut self, busy: SimTime, sent: u64) {
        self.next_send = None;
        self.busy_until = busy;
        // expiries due while the loop was busy run at `busy`, where the light is
        // still red (it only turns green later): the first candidate follows
        let elapsed_busy = (busy - self.start).as_nanos();
        let after_busy = elapsed_busy / self.period.as_nanos() + 1;
        // the light turns green once elapsed > need/rate
        let need = sent as u128 * self.bits as u128 * NS_PER_SEC as u128;
        let green_from = (need / self.rate_bps as u128 + 1).min(u64::MAX as u128) as u64;
        let earliest = green_from.saturating_sub(self.slack.as_nanos());
        let could_be_green = earliest.div_ceil(self.period.as_nanos());
        self.tick = after_busy.max(could_be_green).max(self.tick + 1);
        self.schedule_wake();
    }

    fn schedule_wake(&mut self) {
        let expiry = self.start + SimDuration(self.tick.saturating_mul(self.period.as_nanos()));
        let late = SimDuration(self.rng.range_u64(0, self.slack.as_nanos()));
        self.wake = Some((expiry + late).max(self.busy_until));
    }

    /// Run the timer expiry due at `now` (send_timer_proc), `sent` datagrams out.
    pub(super) fn handle_wake(&mut self, now: SimTime, sent: u64) {
        if self.wake.is_none_or(|w| w > now) {
            return;
        }
        self.wake = None;
        self.busy_until = now;
        if self.green_at(now, sent) {
            self.burst_left = self.burst.max(1);
            self.next_send = Some(now);
        } else {
            self.go_red(now, sent);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const US: u64 = 1_000;

    fn throttle(rate_bps: u64, timer_us: i64, burst: u32, slack_ns: u64) -> Throttle {
        let spec = PacingSpec {
            timer_us,
            burst,
            send_ns: 10 * US,
            slack_ns,
        };
        // 125-byte datagrams: 1000 bits each
        Throttle::new(
            &spec,
            rate_bps,
            125,
            SimTime::ZERO,
            ComponentRng::new(1, "t"),
        )
    }

    /// Drive the throttle as the client does; the send instants before `until`, in ns.
    fn sends(th: &mut Throttle, until: u64) -> Vec<u64> {
        let mut sent = 0;
        let mut out = Vec::new();
        while let Some(t) = th.poll_timeout().filter(|t| t.as_nanos() < until) {
            th.handle_wake(t, sent);
            while th.send_due(t) {
                sent += 1;
                out.push(t.as_nanos());
                th.on_sent(t, sent);
            }
        }
        out
    }

    #[test]
    fn below_one_datagram_per_tick_each_goes_on_the_first_tick_after_its_cbr_instant() {
        // 400 kbit/s of 1000-bit datagrams: CBR instants 0, 2.5, 5, 7.5, 10, 12.5 ms.
        // The light turns green once elapsed > sent·bits/rate, strictly, so the
        // tick at exactly 5 ms (or 10 ms) finds the average equal to the rate: red.
        let mut th = throttle(400_000, 1000, 0, 0);
        assert_eq!(
            sends(&mut th, 14 * MS),
            vec![0, 3 * MS, 6 * MS, 8 * MS, 11 * MS, 13 * MS]
        );
    }

    #[test]
    fn above_one_datagram_per_tick_the_loop_catches_up_back_to_back() {
        // 4 Mbit/s = 4 datagrams a millisecond; passes of 10 µs. At the 1 ms tick
        // datagrams 2..5 go at 1.000, 1.010, 1.020, 1.030 ms: after the fifth,
        // 5000 bits / 1.030 ms > 4 Mbit/s turns the light red (checked with the
        // clock read before the send).
        let mut th = throttle(4_000_000, 1000, 0, 0);
        let ms = |x: f64| (x * MS as f64).round() as u64;
        assert_eq!(
            sends(&mut th, 2100 * US),
            vec![
                0,
                ms(1.0),
                ms(1.01),
                ms(1.02),
                ms(1.03),
                ms(2.0),
                ms(2.01),
                ms(2.02),
                ms(2.03),
            ]
        );
    }

    #[test]
    fn a_burst_goes_out_whole_and_the_light_is_checked_after_it() {
        // -b 400k/3: three passes at 0, 10, 20 µs, then the check at 30 µs; red
        // until 3000 bits / elapsed < 400 kbit/s, i.e. after 7.5 ms: tick 8 ms.
        let mut th = throttle(400_000, 1000, 3, 0);
        assert_eq!(
            sends(&mut th, 17 * MS),
            vec![
                0,
                10 * US,
                20 * US,
                8 * MS,
                8 * MS + 10 * US,
                8 * MS + 20 * US,
                16 * MS,
                16 * MS + 10 * US,
                16 * MS + 20 * US,
            ]
        );
    }

    #[test]
    fn iperf3_3_1s_tenth_of_a_second_timer_sends_in_bursts_of_catch_up() {
        // 3.0/3.1: the timer is 100 ms; at 25 kbit/s (one datagram per 40 ms) each
        // tick finds the sender 2–3 datagrams behind and sends them 10 µs apart.
        let mut th = throttle(25_000, 100_000, 0, 0);
        let s = sends(&mut th, 250 * MS);
        let at_100: Vec<u64> = s
            .iter()
            .copied()
            .filter(|&t| (100..101).contains(&(t / MS)))
            .collect();
        // by 100 ms: 100 ms·25 kbit/s = 2500 bits; sent 1, so 2 and 3 go
        // (3000 bits / 100.01 ms > 25 kbit/s stops it)
        assert_eq!(at_100, vec![100 * MS, 100 * MS + 10 * US]);
        assert_eq!(s.len(), 1 + 2 + 3);
    }

    #[test]
    fn a_zero_pacing_timer_polls_every_pass() {
        // --pacing-timer 0: the timer is always due; the loop re-checks every
        // 10 µs pass, so datagrams leave within one pass after their CBR instant
        let mut th = throttle(400_000, 0, 0, 50_000);
        assert_eq!(
            sends(&mut th, 8 * MS),
            vec![0, 2510 * US, 5010 * US, 7510 * US]
        );
    }

    #[test]
    fn wake_ups_fall_in_the_slack_window_after_the_first_useful_tick() {
        // 3.5 Mbit/s of 1448-byte datagrams (3.31 ms apart), 1 ms timer, 50 µs slack
        let spec = PacingSpec::default();
        let run = |seed| {
            let mut th = Throttle::new(
                &spec,
                3_500_000,
                1448,
                SimTime::ZERO,
                ComponentRng::new(seed, "t"),
            );
            sends(&mut th, 2_000 * MS)
        };
        let s = run(7);
        assert_eq!(s, run(7), "same seed, same instants");
        assert_ne!(s, run(8));
        let cbr = |n: u64| (n * 1448 * 8 * NS_PER_SEC).div_ceil(3_500_000);
        for (n, &t) in s.iter().enumerate().skip(1) {
            let (k, late) = (t / MS, t % MS);
            assert!(
                late <= 50 * US,
                "datagram {n} at {t} ns: outside the slack window"
            );
            // sent on the first expiry k whose wake-up comes after the CBR instant
            assert!(
                t > cbr(n as u64),
                "datagram {n} at {t} ns before its CBR instant"
            );
            assert!(
                k * MS <= cbr(n as u64) + MS,
                "datagram {n} at {t} ns: a useful tick was missed"
            );
        }
        // floor(3.5e6·2 / 11584) + 1 = 605 by 2 s, give or take the last tick
        assert!((604..=605).contains(&s.len()), "{}", s.len());
        let lates: Vec<u64> = s.iter().skip(1).map(|t| t % MS).collect();
        let mean = lates.iter().sum::<u64>() as f64 / lates.len() as f64;
        assert!(
            (mean - 25_000.0).abs() < 3_000.0,
            "uniform over 0..50 µs: mean {mean}"
        );
    }
}
