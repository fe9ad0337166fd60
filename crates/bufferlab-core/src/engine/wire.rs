//! The wire: a device transmits a packet (segmenting an aggregate if it has no
//! TSO, showing it to the captures), serialises it at the link's rate, and the
//! peer receives it after the propagation delay; a veth gives the socket's
//! send memory back at once, a NIC at TX completion. Packets in flight keep
//! their order in the wire's FIFO, whose head alone is an event
//! (docs/internals.md "Performance design"). Follows net/core/dev.c
//! (`validate_xmit_skb`, `dev_queue_xmit_nit`), net/core/gso.c
//! (`skb_gso_segment`) and drivers/net/veth.c (`veth_xmit`).

use super::Simulator;
use crate::packet::PacketId;
use crate::sched::Event;
use crate::time::SimTime;
use crate::topology::IfaceId;

impl Simulator {
    /// Transmit `pid` on `iface`. A device without TSO segments an aggregate
    /// first (`validate_xmit_skb` → `skb_gso_segment`), before the taps
    /// (tcpdump) see it.
    pub(super) fn put_on_wire(&mut self, iface: IfaceId, pid: PacketId) {
        self.put_on_wire_at(iface, pid, self.now);
    }

    /// Transmit `pid` on `iface`, leaving at `depart` (now, or when the
    /// sending host's CPU is done with it; zero-rate links only then).
    pub(super) fn put_on_wire_at(&mut self, iface: IfaceId, pid: PacketId, depart: SimTime) {
        if self.arena.get(pid).is_gso() && !self.ifaces[iface].offloads.tso {
            let mut segs = std::mem::take(&mut self.segment_buf);
            self.arena.segment(pid, &mut segs);
            for s in segs.drain(..) {
                self.transmit(iface, s, depart);
            }
            self.segment_buf = segs;
            return;
        }
        self.transmit(iface, pid, depart);
    }

    fn transmit(&mut self, iface: IfaceId, pid: PacketId, depart: SimTime) {
        self.settle_link_free(iface);
        if self.obs.captures_on(iface) {
            let t = depart.as_nanos();
            self.obs
                .capture(&mut self.topo, iface, t, self.arena.get(pid));
        }
        let len = self.arena.len_of(pid);
        let charge = self.arena.take_charge(pid);
        let ifc = &mut self.ifaces[iface];
        ifc.tx_packets += 1;
        ifc.tx_bytes += len as u64;
        let tx = ifc.rate.tx_time(len as u64);
        if ifc.rate.bps() > 0 {
            ifc.busy_until = self.now + tx;
        }
        if let Some(r) = charge {
            // the packet leaves its sender's host: a veth gives the socket's
            // memory back now (`veth_xmit` orphans it), a NIC at TX completion
            if ifc.rate.bps() > 0 {
                ifc.tx_releases.push(r);
                if !ifc.link_free_pending {
                    ifc.link_free_pending = true;
                    self.events
                        .schedule(ifc.busy_until, Event::LinkFree(iface as u32));
                }
            } else {
                self.arena.push_tsq(r);
            }
        }
        let reached = depart + tx + ifc.delay;
        let peer = self.topo.iface_peer[iface];
        let handled = self.host_rx_done(peer, pid, reached);
        if handled == self.now {
            self.pending.push_back((peer, pid));
        } else {
            let ifc = &mut self.ifaces[iface];
            if ifc.wire.is_empty() {
                self.events
                    .schedule(handled, Event::WireArrival(iface as u32));
            }
            ifc.wire.push_back((handled, pid, reached));
        }
    }

    pub(super) fn wire_arrival(&mut self, iface: IfaceId) {
        let peer = self.topo.iface_peer[iface];
        while let Some(&(t, pid, reached)) = self.ifaces[iface].wire.front() {
            if t > self.now {
                self.events.schedule(t, Event::WireArrival(iface as u32));
                break;
            }
            self.ifaces[iface].wire.pop_front();
            self.receive_at(peer, pid, reached);
        }
    }
}
