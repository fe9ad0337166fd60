//! Host CPU time (crate::host): a host's sending stack spends each packet's
//! cost before the packet leaves, its receiving stack before the packet is
//! handled; a sender that outruns its stack stops the run. Linux spends this
//! time for real (no one kernel file: the `sendmsg` path down to
//! `dev_queue_xmit`, and `net_rx_action` up to the socket); the costs are
//! docs/models.md's.

use super::neigh::NeighState;
use super::Simulator;
use crate::packet::{PacketId, Payload, Proto};
use crate::sched::Event;
use crate::time::{SimDuration, SimTime};
use crate::topology::{IfaceId, NodeId, NodeKind};

/// How far a host's sending stack may fall behind the packets its
/// applications hand it (host.rs: each costs CPU time). A real sender
/// blocks in `sendto`; the generators here do not, so a rate no host can
/// process would queue packets without bound (`cbr -r 1e12`: 10⁸ packets a
/// second against the ~3·10⁵ a host processes).
const MAX_STACK_BACKLOG: SimDuration = SimDuration::from_secs(1);

impl Simulator {
    /// A host's stack sends `pid` once its CPU has spent the packet's cost
    /// on it (host.rs); other nodes send at once. The common case — a veth
    /// without a qdisc towards a resolved neighbour — needs no event: the
    /// packet goes on the wire now, departing when the CPU is done.
    pub(super) fn host_send(&mut self, node: NodeId, pid: PacketId) {
        let cost = self.options.host_cost;
        if self.nodes[node].kind != NodeKind::Host || cost.is_zero() {
            self.send_from_node(node, pid);
            return;
        }
        let len = self.arena.len_of(pid);
        if self.nodes[node].tx_cpu.is_empty() {
            if let Some(out) = self.direct_veth(node, pid) {
                let done = self.nodes[node].tx_cpu.take(self.now, cost.of(len));
                self.put_on_wire_at(out, pid, done);
                self.check_stack_backlog(node, done);
                return;
            }
        }
        let (done, head) = self.nodes[node].tx_cpu.admit(self.now, cost.of(len), pid);
        if head {
            self.events.schedule(done, Event::HostTx(node as u32));
        }
        self.check_stack_backlog(node, done);
    }

    /// Stop the run once `node`'s sending stack is `MAX_STACK_BACKLOG`
    /// behind (it would otherwise hold packets without bound).
    fn check_stack_backlog(&mut self, node: NodeId, done: SimTime) {
        if done.saturating_since(self.now) <= MAX_STACK_BACKLOG || self.stuck.is_some() {
            return;
        }
        let cost = self.options.host_cost;
        let per_s = 1e9 / cost.of(1514).as_nanos().max(1) as f64;
        self.stuck = Some(format!(
            "{}'s applications send more packets than its network stack can process: at {} it is \
             {} s behind (a host processes about {:.0} full-size packets/s: {} ns per packet + {} ps \
             per byte, [sim] host_packet_ns / host_byte_ps). Lower the sending rate (cbr/poisson/onoff -r)",
            self.topo.node_names[node],
            self.now,
            MAX_STACK_BACKLOG.as_nanos() / 1_000_000_000,
            per_s,
            cost.packet_ns,
            cost.byte_ps
        ));
    }

    /// The interface `pid` leaves `node` by if nothing stands between the
    /// stack and the wire: a zero-rate veth with `noqueue`, a resolved
    /// neighbour, a remote destination.
    fn direct_veth(&mut self, node: NodeId, pid: PacketId) -> Option<IfaceId> {
        let dst = self.arena.get(pid).dst;
        if self.topo.is_local(node, dst) {
            return None;
        }
        let route = self.topo.route(node, dst)?;
        let ifc = &self.ifaces[route.out];
        if !ifc.tree.is_noqueue()
            || ifc.rate.bps() > 0
            || ifc.hook.as_ref().is_some_and(|h| h.has_egress())
        {
            return None;
        }
        let resolved = !self.options.arp
            || self.nodes[node]
                .neighbours
                .find(route.next_hop)
                .is_some_and(|i| {
                    matches!(self.nodes[node].neighbours[i].state, NeighState::Reachable)
                });
        resolved.then_some(route.out)
    }

    /// The host's CPU finished the packets at the head of its send queue.
    pub(super) fn host_tx_done(&mut self, node: NodeId) {
        loop {
            let cpu = &mut self.nodes[node].tx_cpu;
            let Some(pid) = cpu.pop_done(self.now) else {
                if let Some(t) = cpu.head_time() {
                    self.events.schedule(t, Event::HostTx(node as u32));
                }
                return;
            };
            self.send_from_node(node, pid);
        }
    }

    /// When `peer`'s receiving stack is done with `pid`, which reaches its
    /// interface at `at` (host.rs): the CPU takes packets in order; a ping
    /// reply also wakes the sleeping ping; a noisy host hands the packet to
    /// its stack later still (host_noise.rs). Only packets for the host pay.
    pub(super) fn host_rx_done(&mut self, peer: IfaceId, pid: PacketId, at: SimTime) -> SimTime {
        let cost = self.options.host_cost;
        let node = self.topo.iface_node[peer];
        let p = self.arena.get(pid);
        let n = &mut self.nodes[node];
        if (cost.is_zero() && n.rx_noise.is_none())
            || n.kind != NodeKind::Host
            || p.proto == Proto::Arp
            || !self.topo.is_local(node, p.dst)
        {
            return at;
        }
        let mut done = at;
        if !cost.is_zero() {
            let mut t = cost.of(p.len);
            if matches!(p.payload, Payload::Echo { reply: true, .. }) {
                t = t + SimDuration(cost.wakeup_ns);
            }
            n.rx_free = n.rx_free.max(at) + t;
            done = n.rx_free;
        }
        match n.rx_noise.as_mut() {
            Some(noise) => noise.hand(done),
            None => done,
        }
    }
}
