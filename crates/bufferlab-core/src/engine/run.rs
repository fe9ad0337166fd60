//! The event loop: `run`/`run_bounded` pop events in (time, sequence) order and
//! dispatch each to the part of the network it belongs to; zero-delay arrivals
//! are drained at their instant; an instant doing work without end stops the
//! run, naming the component. The softirq loop that follows Linux's packet
//! path has no one file in the kernel: `net_rx_action` (net/core/dev.c) and the
//! timer wheel (kernel/time/timer.c) are its nearest counterparts.

use super::Simulator;
use crate::error::{Error, Result};
use crate::sched::Event;
use crate::time::SimTime;
use crate::topology::IfaceId;

/// Packets that may cross the network within one instant before a run is
/// declared stuck. A TCP flow over a path with neither delay nor a rate limit
/// (plain veths: no serialisation, no propagation, no host processing time
/// modelled) has a zero round-trip time and would move unbounded data
/// without simulated time advancing.
const MAX_PACKETS_PER_INSTANT: u64 = 2_000_000;

/// Units of work (events dispatched, packets a qdisc hands out) at one
/// simulated instant before the run is declared stuck, naming the component
/// that did the last of them. Far above any lab (a gigabit link moves about
/// 10⁵ packets in a second, spread over as many instants); a loop that does
/// not advance time (a misbehaving model) hits it within seconds of wall
/// time instead of running for ever.
pub(super) const MAX_WORK_PER_INSTANT: u64 = 10_000_000;

impl Simulator {
    /// Advance simulated time up to `until`, or until one or more
    /// applications finish; returns the ids of the applications that finished
    /// since the previous call (also those that finished inside `start_app`
    /// or `stop_app`, e.g. a ping of the node's own address).
    pub fn run(&mut self, until: SimTime) -> Result<Vec<u32>> {
        loop {
            if let Some(done) = self.run_bounded(until, u64::MAX)? {
                return Ok(done);
            }
        }
    }

    /// `run` in a bounded stretch: at most `max_events` events are dispatched,
    /// then `None` if the run is not over (neither `until` reached nor an
    /// application finished). Calling it again resumes exactly where it
    /// stopped, so a run in stretches is identical to one `run` (the binding
    /// checks for signals between stretches).
    /// Zero-delay arrivals count against `max_events` too, so that a stretch
    /// ends (and the binding checks for signals, the caller for its limits)
    /// however long simulated time stands still.
    pub fn run_bounded(&mut self, until: SimTime, max_events: u64) -> Result<Option<Vec<u32>>> {
        self.stretch_left = max_events;
        self.take_route_caps();
        self.in_stretch = true;
        let ran = self.run_stretch(until);
        // between stretches every event is in the queue (link_free.rs)
        self.in_stretch = false;
        self.settle_link_frees();
        ran
    }

    fn run_stretch(&mut self, until: SimTime) -> Result<Option<Vec<u32>>> {
        loop {
            let drained = self.drain_pending();
            self.check_stuck()?;
            if !drained? {
                return Ok(None);
            }
            if !self.finished.is_empty() || self.obs.has_finished() {
                break;
            }
            match self.events.peek_time() {
                Some(t) if t <= until => {
                    if self.budget_near_quiet() {
                        self.settle_link_frees();
                        self.check_stuck()?;
                        if self.stretch_left == 0 {
                            return Ok(None);
                        }
                        // one of them may now come first
                        continue;
                    }
                    self.stretch_left -= 1;
                    let (t, ev) = self.events.pop().expect("peeked");
                    self.now = t;
                    if self.work_at_instant() {
                        let who = self.component(ev);
                        self.stuck_with(who);
                    } else {
                        self.dispatch(ev);
                        self.settle_tsq();
                    }
                    self.check_stuck()?;
                }
                _ => {
                    self.now = self.now.max(until);
                    self.events.pass(until);
                    break;
                }
            }
        }
        Ok(Some(std::mem::take(&mut self.finished)))
    }

    /// Instant of the next scheduled event, if any.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.events.peek_time()
    }

    pub fn events_processed(&self) -> u64 {
        self.events.popped()
    }

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::WireArrival(i) => self.wire_arrival(i as usize),
            Event::LinkFree(i) => self.link_free(i as usize),
            Event::Watchdog(i) => {
                let ifc = &mut self.ifaces[i as usize];
                if ifc.watchdog_at == Some(self.now) {
                    ifc.watchdog_at = None;
                    self.kick(i as usize);
                }
            }
            Event::AppTimer(a) => {
                let slot = &mut self.apps[a as usize];
                if slot.scheduled == Some(self.now) {
                    slot.scheduled = None;
                }
                if slot.timer_at.is_some_and(|t| t <= self.now) {
                    self.with_app(a, |app, ctx| app.handle_timeout(ctx));
                }
                self.after_app(a);
            }
            Event::HostTx(n) => self.host_tx_done(n as usize),
            Event::NodeTimer(n) => {
                if self.nodes[n as usize].timer_at == Some(self.now) {
                    self.nodes[n as usize].timer_at = None;
                    self.arp_timer(n as usize);
                }
            }
        }
    }

    /// Start the per-instant counters afresh when time moved.
    fn at_instant(&mut self) {
        if self.instant != self.now {
            self.instant = self.now;
            self.instant_packets = 0;
            self.instant_work = 0;
        }
    }

    /// Count one unit of work at the current instant; true once the
    /// instant had more than `MAX_WORK_PER_INSTANT`.
    pub(super) fn work_at_instant(&mut self) -> bool {
        self.at_instant();
        self.instant_work += 1;
        self.instant_work > self.work_cap
    }

    /// Declare the run stuck at this instant because of `who` (the first
    /// reason found is kept).
    pub(super) fn stuck_with(&mut self, who: String) {
        if self.stuck.is_none() {
            self.stuck = Some(format!(
                "simulated time stopped advancing at {}: more than {} events in that one instant, \
                 the last of them in {who}. A model that loops without time passing is a bug: \
                 please report it with the scenario",
                self.now, self.work_cap
            ));
        }
    }

    pub(super) fn check_stuck(&mut self) -> Result<()> {
        match self.stuck.take() {
            Some(why) => Err(Error::Stalled(why)),
            None => Ok(()),
        }
    }

    /// The part of the network an event belongs to, in the user's names.
    fn component(&self, ev: Event) -> String {
        let t = &self.topo;
        match ev {
            Event::WireArrival(i) => format!("the link out of {}", t.iface_names[i as usize]),
            Event::LinkFree(i) | Event::Watchdog(i) => self.qdisc_component(i as usize),
            Event::AppTimer(a) => {
                let slot = &self.apps[a as usize];
                format!(
                    "application {a} ({}) on {}",
                    slot.app.kind(),
                    t.node_names[slot.node]
                )
            }
            Event::HostTx(n) => format!("the network stack of {}", t.node_names[n as usize]),
            Event::NodeTimer(n) => format!("the ARP timer of {}", t.node_names[n as usize]),
        }
    }

    /// `the qdiscs of DEV (root KIND H:)`.
    pub(super) fn qdisc_component(&self, iface: IfaceId) -> String {
        let root = self.ifaces[iface].tree.show().into_iter().next();
        let what = root.map_or(String::new(), |q| {
            format!(" (root {} {:x}:)", q.kind, q.handle)
        });
        format!("the qdiscs of {}{what}", self.topo.iface_names[iface])
    }

    /// Process the zero-delay arrivals of this instant, each against the
    /// stretch's budget; false when the budget ran out first.
    fn drain_pending(&mut self) -> Result<bool> {
        self.at_instant();
        while let Some((iface, pid)) = self.pending.pop_front() {
            if self.budget_near_quiet() {
                self.settle_link_frees();
            }
            if self.stretch_left == 0 {
                self.pending.push_front((iface, pid));
                return Ok(false);
            }
            self.stretch_left -= 1;
            self.instant_packets += 1;
            if self.instant_packets > MAX_PACKETS_PER_INSTANT {
                self.pending.push_front((iface, pid));
                return Err(Error::Stalled(format!(
                    "simulated time stopped advancing at {}: {} packets crossed the network in that one \
                     instant. A TCP flow on a path with neither delay nor a rate limit (plain veths) has no \
                     round-trip time and moves data without time passing; give the path a delay or a rate, \
                     e.g. tc qdisc add dev s1-eth2 root netem delay 1ms",
                    self.now, MAX_PACKETS_PER_INSTANT
                )));
            }
            self.receive(iface, pid);
            self.settle_tsq();
            if self.stuck.is_some() {
                break;
            }
        }
        Ok(true)
    }
}
