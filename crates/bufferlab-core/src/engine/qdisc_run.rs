//! The root qdisc of a device: enqueue a packet, then run the qdisc — dequeue
//! and hand packets to the wire until it is empty, throttled (a watchdog is
//! armed) or the wire is busy — with the queue trace's records of both. Follows
//! net/core/dev.c (`__dev_xmit_skb`) and net/sched/sch_generic.c (`__qdisc_run`,
//! `qdisc_restart`, `dequeue_skb`, `try_bulk_dequeue_skb_slow`).

use super::iface::root_snap;
use super::Simulator;
use crate::capture::is_ce;
use crate::capture::trace::Snap;
use crate::packet::PacketId;
use crate::qdisc::{QdiscCtx, Verdict};
use crate::sched::Event;
use crate::topology::IfaceId;

/// Extra packets one `qdisc_restart` asks the root for after the first on a
/// multi-queue device such as a veth (`try_bulk_dequeue_skb_slow` in
/// net/sched/sch_generic.c: at most 8 more, stopping at the first failure).
const BULK_EXTRA: u32 = 8;

impl Simulator {
    /// The transmit path after clsact's egress hook: the root qdisc.
    pub(super) fn xmit_past_hook(&mut self, iface: IfaceId, pid: PacketId) {
        self.settle_link_free(iface);
        if self.ifaces[iface].tree.is_noqueue() {
            self.put_on_wire(iface, pid);
            return;
        }
        let before = self
            .obs
            .traced(iface)
            .then(|| root_snap(&self.ifaces[iface]));
        let tos = self.arena.get(pid).tos;
        self.arena.stamp(pid, self.now, tos);
        let ifc = &mut self.ifaces[iface];
        let mut ctx = QdiscCtx::new(
            self.now,
            &mut self.arena,
            &mut ifc.drops,
            &mut self.reinject_buf,
        );
        // (the tree re-enqueues netem duplicates at its root itself)
        let verdict = ifc.tree.enqueue(&mut ctx, pid);
        let (bytes, packets) = ifc.tree.held_backlog();
        ifc.peak = (ifc.peak.0.max(bytes), ifc.peak.1.max(packets));
        if let Some(before) = before {
            let after = root_snap(&self.ifaces[iface]);
            let queued = matches!(verdict, Verdict::Queued);
            let now_tos = self.arena.get(pid).tos;
            let marked = queued && is_ce(now_tos) && !is_ce(tos);
            if queued {
                // a mark made later, at dequeue, is told from this one by the TOS then
                self.arena.stamp(pid, self.now, now_tos);
            }
            let t = self.now.as_nanos();
            self.obs
                .with_trace(iface, |tr| tr.on_enqueue(t, before, after, marked));
        }
        // a wire still serialising, its end already queued: `kick` would
        // find it busy and return (the call is most of the cost)
        let ifc = &self.ifaces[iface];
        if ifc.busy_until > self.now && ifc.link_free_pending && ifc.quiet_link_free.is_none() {
            return;
        }
        self.kick(iface);
    }

    /// Queue-trace records of one dequeue operation at the root.
    fn trace_dequeue(&mut self, iface: IfaceId, before: Snap, out: Option<PacketId>) {
        let after = root_snap(&self.ifaces[iface]);
        let t = self.now.as_nanos();
        let left = out.map(|pid| {
            let p = self.arena.get(pid);
            let st = self.arena.stamp_of(pid);
            let sojourn = t.saturating_sub(st.at.as_nanos());
            (p.len, Some(sojourn), is_ce(p.tos) && !is_ce(st.tos))
        });
        self.obs
            .with_trace(iface, |tr| tr.on_dequeue(t, before, after, left));
    }

    /// Dequeue and transmit until the root is empty, throttled, or the wire busy
    /// (`__qdisc_run`, docs/semantics/qdiscs.md §1.4). On a zero-rate link (a veth, a
    /// multi-queue device) each `qdisc_restart` takes a batch: after the first packet
    /// it asks the root for up to `BULK_EXTRA` more (`try_bulk_dequeue_skb_slow`), so a
    /// batch that ends for want of a packet costs one failed dequeue of its own before
    /// the next restart fails again — a throttled tbf counts two `overlimits` per
    /// packet it releases, one per arrival it refuses.
    pub(super) fn kick(&mut self, iface: IfaceId) {
        // packets the current restart has taken (0: the next dequeue starts a restart)
        let mut batch = 0u32;
        self.settle_link_free(iface);
        loop {
            let ifc = &mut self.ifaces[iface];
            if ifc.busy_until > self.now {
                if !ifc.link_free_pending {
                    self.arm_link_free(iface);
                }
                return;
            }
            if ifc.tree.is_noqueue() {
                return;
            }
            let before = self.obs.traced(iface).then(|| root_snap(ifc));
            let mut ctx = QdiscCtx::new(
                self.now,
                &mut self.arena,
                &mut ifc.drops,
                &mut self.reinject_buf,
            );
            let out = ifc.tree.dequeue(&mut ctx);
            let watchdog = ctx.watchdog;
            if let Some(before) = before {
                self.trace_dequeue(iface, before, out);
            }
            match out {
                Some(pid) if self.ifaces[iface].ifb => {
                    self.ifb_return(iface, pid);
                    if self.work_at_instant() {
                        let who = self.qdisc_component(iface);
                        self.stuck_with(who);
                        return;
                    }
                }
                Some(pid) => {
                    if self.ifaces[iface].rate.bps() == 0 {
                        batch = if batch < BULK_EXTRA { batch + 1 } else { 0 };
                    }
                    self.put_on_wire(iface, pid);
                    if self.work_at_instant() {
                        let who = self.qdisc_component(iface);
                        self.stuck_with(who);
                        return;
                    }
                }
                None => {
                    let ifc = &mut self.ifaces[iface];
                    if let Some(w) = watchdog {
                        if ifc.watchdog_at != Some(w) {
                            ifc.watchdog_at = Some(w);
                            self.events
                                .schedule(w.max(self.now), Event::Watchdog(iface as u32));
                        }
                    }
                    if batch > 0 {
                        // the batch's extra dequeue failed; the next restart asks again
                        batch = 0;
                        continue;
                    }
                    return;
                }
            }
        }
    }
}
