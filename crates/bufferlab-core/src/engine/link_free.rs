//! Quiet transmission ends: the `LinkFree` of a device whose qdiscs are
//! empty when its wire becomes free is not queued. On a link that is not a
//! bottleneck nearly every packet leaves an empty queue behind it, and its
//! `LinkFree` would only find nothing to send: a quarter of all events of
//! ns-3's dctcp-example (benches/RESULTS.md).
//!
//! Exactness. Such an event keeps the sequence number it would have had
//! (`EventQueue::reserve_seq`), and the device's `quiet_link_free` holds it.
//! Whatever reaches the device's transmit side next (`xmit_past_hook`,
//! `kick`, `transmit`) first settles it: if the event would have run already
//! (its instant and sequence number are behind the queue's position), its
//! work is run now for its own instant — the dequeue of an empty tree,
//! which `QdiscTree::dequeue_is_quiet` promises changes nothing but what
//! depends on that instant (ns-3's RED notes the start of its idle period) —
//! else it is queued with its own sequence number, where it would have been.
//! Nothing else reads the device between the two, so every run is the one it
//! was with the event queued. Only inside `run_bounded`: each stretch settles
//! all of them at its end, so between stretches (commands, statistics,
//! `next_event_time`) the queue holds every event, and a stretch whose budget
//! could run out among them settles them first, so it stops after the same
//! events. The event count includes them (`EventQueue::count_run_outside`).
//!
//! Only a device that gives no socket memory back at this transmission end
//! (no TCP Small Queues release pending: `tx_releases`) qualifies, since
//! that hand-back wakes the sockets at the event's own position.

use super::Simulator;
use crate::sched::Event;
use crate::topology::IfaceId;

impl Simulator {
    /// The wire of `iface` is busy until `busy_until` and no `LinkFree` is
    /// pending: keep it out of the queue if it will be quiet, else queue it.
    pub(super) fn arm_link_free(&mut self, iface: IfaceId) {
        let ifc = &mut self.ifaces[iface];
        ifc.link_free_pending = true;
        let quiet = self.in_stretch && ifc.tx_releases.is_empty() && ifc.tree.dequeue_is_quiet();
        #[cfg(test)]
        let quiet = quiet && !self.queue_every_link_free;
        if quiet {
            ifc.quiet_link_free = Some(self.events.reserve_seq());
            if !ifc.quiet_listed {
                ifc.quiet_listed = true;
                self.quiet_link_frees.push(iface as u32);
            }
        } else {
            self.events
                .schedule(ifc.busy_until, Event::LinkFree(iface as u32));
        }
    }

    /// The serialiser of `iface` is free (`Event::LinkFree`): TX completion
    /// gives the sockets the sent packets' memory back, then the root runs.
    pub(super) fn link_free(&mut self, iface: IfaceId) {
        let ifc = &mut self.ifaces[iface];
        ifc.link_free_pending = false;
        for r in ifc.tx_releases.drain(..) {
            self.arena.push_tsq(r);
        }
        self.kick(iface);
    }

    /// Before anything touches `iface`'s transmit side: its quiet `LinkFree`,
    /// if it has one, runs now for its own instant or joins the queue.
    #[inline]
    pub(super) fn settle_link_free(&mut self, iface: IfaceId) {
        if self.ifaces[iface].quiet_link_free.is_some() {
            self.settle_link_free_of(iface);
        }
    }

    fn settle_link_free_of(&mut self, iface: IfaceId) {
        let Some(seq) = self.ifaces[iface].quiet_link_free.take() else {
            return;
        };
        let at = self.ifaces[iface].busy_until;
        if !self.events.has_passed(at, seq) {
            self.events
                .schedule_reserved(at, seq, Event::LinkFree(iface as u32));
            return;
        }
        self.events.count_run_outside();
        self.stretch_left = self.stretch_left.saturating_sub(1);
        // the work limit of the current instant counts it, as the event
        // would have been; an earlier instant's count is over
        if at == self.now && self.work_at_instant() {
            let who = self.qdisc_component(iface);
            self.stuck_with(who);
            return;
        }
        let now = std::mem::replace(&mut self.now, at);
        self.link_free(iface);
        self.now = now;
    }

    /// Settle every quiet `LinkFree` (the end of a stretch, or a budget that
    /// may run out among them).
    pub(super) fn settle_link_frees(&mut self) {
        let mut quiet = std::mem::take(&mut self.quiet_link_frees);
        for &i in &quiet {
            self.settle_link_free(i as IfaceId);
            self.ifaces[i as usize].quiet_listed = false;
        }
        quiet.clear();
        self.quiet_link_frees = quiet;
    }

    /// Could the stretch's budget run out among the quiet `LinkFree`s? Each
    /// counts one event when it is settled; the list holds every device that
    /// has one (and some that had one since the last `settle_link_frees`).
    #[inline]
    pub(super) fn budget_near_quiet(&self) -> bool {
        self.stretch_left <= self.quiet_link_frees.len() as u64
    }
}
