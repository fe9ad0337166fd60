//! IP on a node: route what it originates or forwards and hand it to the out
//! interface once the next hop is resolved; take what it receives (ARP, its own
//! addresses, forwarding with the TTL, a switch's layer-2 forwarding). Follows
//! net/ipv4/ip_input.c (`ip_rcv`), net/ipv4/route.c (`ip_route_input_slow`),
//! net/ipv4/ip_forward.c (`ip_forward`), net/ipv4/ip_output.c
//! (`ip_finish_output2`) and net/bridge/br_forward.c for switches.

use super::neigh::{NeighState, Neighbour, ARP_RETRANS};
use super::Simulator;
use crate::packet::{PacketId, Payload, Proto};
use crate::qdisc::DropReason;
use crate::topology::{IfaceId, NodeId, NodeKind};

impl Simulator {
    pub(super) fn node_drop(&mut self, node: NodeId, pid: PacketId, reason: DropReason) {
        let len = self.arena.len_of(pid);
        let segs = self.arena.segs_of(pid);
        self.nodes[node].drops.count(reason, len, segs);
        self.arena.free(pid);
    }

    /// A node originates or forwards `pid`: route it, resolve the next hop,
    /// hand it to the out interface.
    pub(super) fn send_from_node(&mut self, node: NodeId, pid: PacketId) {
        let dst = self.arena.get(pid).dst;
        if self.topo.is_local(node, dst) {
            self.local_deliver(node, pid);
            return;
        }
        let Some(route) = self.topo.route(node, dst) else {
            self.node_drop(node, pid, DropReason::NoRoute);
            return;
        };
        if !self.options.arp || self.nodes[node].kind == NodeKind::Switch {
            self.iface_xmit(route.out, pid);
            return;
        }
        let n = &mut self.nodes[node];
        match n.neighbours.find(route.next_hop) {
            Some(i) if matches!(n.neighbours[i].state, NeighState::Reachable) => {
                self.iface_xmit(route.out, pid)
            }
            Some(i) => self.arp_enqueue(node, i, pid),
            None => {
                let retry_at = self.now + ARP_RETRANS;
                let i = n.neighbours.push(Neighbour {
                    addr: route.next_hop,
                    out: route.out,
                    state: NeighState::Incomplete { tries: 1, retry_at },
                    queue: Vec::new(),
                    queued_bytes: 0,
                });
                self.arp_enqueue(node, i, pid);
                self.send_arp(node, route.out, route.next_hop, false);
                self.arm_node_timer(node);
            }
        }
    }

    /// The receive path after the ingress hook (also where an ifb returns
    /// a packet it took from the hook).
    pub(super) fn receive_past_hook(&mut self, iface: IfaceId, pid: PacketId) {
        let node = self.topo.iface_node[iface];
        // a received packet has no socket of this node (`skb->sk` is NULL)
        // and no departure stamp (forwarding clears `skb->tstamp`)
        // (the fields it needs, not a copy of the whole record: every hop)
        let rx = self.arena.get_mut(pid);
        rx.local = false;
        rx.tstamp = None;
        let (proto, src, dst, ttl) = (rx.proto, rx.src, rx.dst, rx.ttl);
        if proto == Proto::Arp && self.topo.is_local(node, dst) {
            let is_reply = matches!(rx.payload, Payload::Arp { reply: true });
            self.delivered(pid);
            self.neighbour_confirmed(node, src, iface);
            if !is_reply {
                self.send_arp(node, iface, src, true);
            }
            return;
        }
        let kind = self.nodes[node].kind;
        if kind != NodeKind::Switch {
            self.nodes[node].mib.on_ip_receive(self.arena.get(pid));
        }
        match kind {
            NodeKind::Switch => self.send_from_node(node, pid),
            NodeKind::Host | NodeKind::Router if self.topo.is_local(node, dst) => {
                self.local_deliver(node, pid)
            }
            NodeKind::Host => self.node_drop(node, pid, DropReason::NoRoute),
            NodeKind::Router => {
                if ttl <= 1 {
                    self.nodes[node].mib.on_ttl_expired();
                    self.node_drop(node, pid, DropReason::NoRoute);
                } else {
                    self.nodes[node].mib.on_forward();
                    self.arena.get_mut(pid).ttl -= 1;
                    self.send_from_node(node, pid);
                }
            }
        }
    }
}
