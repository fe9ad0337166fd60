//! Neighbours (ARP): a node's table of next hops, the packets held while one
//! resolves, solicitations retried and given up, replies and requests learnt
//! from. Follows net/core/neighbour.c (`neigh_lookup`, `__neigh_event_send`,
//! `neigh_timer_handler`, `neigh_update`) and net/ipv4/arp.c (`arp_solicit`,
//! `arp_process`).

use super::Simulator;
use crate::packet::{Ipv4, Packet, PacketId, Payload, Proto, ARP_FRAME};
use crate::qdisc::DropReason;
use crate::sched::Event;
use crate::time::{SimDuration, SimTime};
use crate::topology::{IfaceId, NodeId};
use rustc_hash::FxHashMap;

/// Linux `neigh` defaults: unresolved queue of 212 992 bytes
/// (`unres_qlen_bytes` = SK_WMEM_MAX), 3 solicitations 1 s apart.
const ARP_QUEUE_BYTES: u64 = 212_992;
const ARP_TRIES: u32 = 3;
pub(super) const ARP_RETRANS: SimDuration = SimDuration::from_secs(1);

pub(super) enum NeighState {
    Incomplete { tries: u32, retry_at: SimTime },
    Reachable,
}

pub(super) struct Neighbour {
    pub(super) addr: Ipv4,
    pub(super) out: IfaceId,
    pub(super) state: NeighState,
    pub(super) queue: Vec<PacketId>,
    pub(super) queued_bytes: u64,
}

/// A node's neighbour (ARP) table: entries in creation order (the order
/// ARP retries are sent in) with a hash index by address, so forwarding
/// looks a next hop up in O(1) however many neighbours a node has
/// (Linux's `neigh_lookup` hash, net/core/neighbour.c).
#[derive(Default)]
pub(super) struct NeighbourTable {
    entries: Vec<Neighbour>,
    index: FxHashMap<Ipv4, usize>,
}

impl NeighbourTable {
    pub(super) fn find(&self, addr: Ipv4) -> Option<usize> {
        self.index.get(&addr).copied()
    }

    pub(super) fn push(&mut self, e: Neighbour) -> usize {
        let i = self.entries.len();
        self.index.insert(e.addr, i);
        self.entries.push(e);
        i
    }

    /// Remove entry `i` (a failed resolution; rare), renumbering the rest.
    fn remove(&mut self, i: usize) -> Neighbour {
        let e = self.entries.remove(i);
        self.index.remove(&e.addr);
        for (j, later) in self.entries.iter().enumerate().skip(i) {
            self.index.insert(later.addr, j);
        }
        e
    }
}

impl std::ops::Deref for NeighbourTable {
    type Target = [Neighbour];
    fn deref(&self) -> &[Neighbour] {
        &self.entries
    }
}

impl std::ops::DerefMut for NeighbourTable {
    fn deref_mut(&mut self) -> &mut [Neighbour] {
        &mut self.entries
    }
}

impl Simulator {
    /// Hold a packet until its neighbour resolves; like Linux, drop the
    /// oldest held packets when the queue's byte budget is exceeded.
    pub(super) fn arp_enqueue(&mut self, node: NodeId, i: usize, pid: PacketId) {
        let len = self.arena.len_of(pid) as u64;
        loop {
            let e = &mut self.nodes[node].neighbours[i];
            if e.queued_bytes + len <= ARP_QUEUE_BYTES || e.queue.is_empty() {
                break;
            }
            let old = e.queue.remove(0);
            e.queued_bytes -= self.arena.len_of(old) as u64;
            self.node_drop(node, old, DropReason::NeighbourFailed);
        }
        let e = &mut self.nodes[node].neighbours[i];
        e.queue.push(pid);
        e.queued_bytes += len;
    }

    pub(super) fn send_arp(&mut self, node: NodeId, out: IfaceId, target: Ipv4, reply: bool) {
        let src = self.topo.iface_ip[out].unwrap_or(self.nodes[node].addr);
        let p = Packet {
            src,
            dst: target,
            proto: Proto::Arp,
            tos: 0,
            ttl: 64,
            len: ARP_FRAME,
            src_port: 0,
            dst_port: 0,
            payload: Payload::Arp { reply },
            seq: 0,
            sent_at: self.now,
            flow: Packet::NO_FLOW,
            corrupt: false,
            local: false,
            gso_segs: 1,
            gso_size: 0,
            tsq: 0,
            tstamp: None,
        };
        let pid = self.arena.alloc(p);
        self.iface_xmit(out, pid);
    }

    pub(super) fn arm_node_timer(&mut self, node: NodeId) {
        let next = self.nodes[node]
            .neighbours
            .iter()
            .filter_map(|e| match e.state {
                NeighState::Incomplete { retry_at, .. } => Some(retry_at),
                NeighState::Reachable => None,
            })
            .min();
        let n = &mut self.nodes[node];
        if next != n.timer_at {
            n.timer_at = next;
            if let Some(t) = next {
                self.events.schedule(t, Event::NodeTimer(node as u32));
            }
        }
    }

    /// Re-solicit unresolved neighbours; give up after `ARP_TRIES`.
    pub(super) fn arp_timer(&mut self, node: NodeId) {
        let now = self.now;
        let mut i = 0;
        while i < self.nodes[node].neighbours.len() {
            let e = &mut self.nodes[node].neighbours[i];
            match e.state {
                NeighState::Incomplete { tries, retry_at } if retry_at <= now => {
                    if tries >= ARP_TRIES {
                        let e = self.nodes[node].neighbours.remove(i);
                        for pid in e.queue {
                            self.node_drop(node, pid, DropReason::NeighbourFailed);
                        }
                        continue;
                    }
                    e.state = NeighState::Incomplete {
                        tries: tries + 1,
                        retry_at: now + ARP_RETRANS,
                    };
                    let (out, addr) = (e.out, e.addr);
                    self.send_arp(node, out, addr, false);
                }
                _ => {}
            }
            i += 1;
        }
        self.arm_node_timer(node);
    }

    /// Learn that `addr` is reachable and release what waited for it.
    pub(super) fn neighbour_confirmed(&mut self, node: NodeId, addr: Ipv4, via: IfaceId) {
        let n = &mut self.nodes[node];
        match n.neighbours.find(addr) {
            Some(i) => {
                let e = &mut n.neighbours[i];
                e.state = NeighState::Reachable;
                e.queued_bytes = 0;
                let out = e.out;
                let held = std::mem::take(&mut e.queue);
                for pid in held {
                    self.iface_xmit(out, pid);
                }
                self.arm_node_timer(node);
            }
            None => {
                n.neighbours.push(Neighbour {
                    addr,
                    out: via,
                    state: NeighState::Reachable,
                    queue: Vec::new(),
                    queued_bytes: 0,
                });
            }
        }
    }
}
