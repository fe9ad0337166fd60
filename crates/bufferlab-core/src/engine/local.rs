//! Local delivery: a packet for one of the node's own addresses reaches its
//! socket (an application), is answered (ICMP echo; a reset from a closed TCP
//! port) or is dropped (bad checksum, no listener), and the delivered packets
//! are counted per flow. Follows net/ipv4/ip_input.c (`ip_local_deliver`),
//! net/ipv4/icmp.c (`icmp_echo`), net/ipv4/tcp_ipv4.c (`tcp_v4_send_reset`) and
//! net/ipv4/udp.c (`__udp4_lib_rcv`).

use super::Simulator;
use crate::packet::{tcp_flags, Packet, PacketId, Payload, Proto};
use crate::qdisc::DropReason;
use crate::topology::NodeId;

impl Simulator {
    pub(super) fn delivered(&mut self, pid: PacketId) {
        let p = self.arena.get(pid);
        self.delivered_packets += 1;
        self.delivered_bytes += p.len as u64;
        self.delivered_segments += p.segs() as u64;
        if p.flow != Packet::NO_FLOW {
            let f = &mut self.flows[p.flow as usize];
            f.received_packets += p.segs() as u64;
            f.received_bytes += p.len as u64;
        }
        self.arena.free(pid);
    }

    /// The node's own stack consumes the packet.
    pub(super) fn local_deliver(&mut self, node: NodeId, pid: PacketId) {
        let p = *self.arena.get(pid);
        if p.corrupt {
            // The IP/UDP/ICMP checksum fails; the stack discards it.
            self.nodes[node].mib.on_deliver(&p, false);
            self.node_drop(node, pid, DropReason::Corrupt);
            return;
        }
        let target = match p.payload {
            Payload::Echo {
                reply: false,
                ident,
                seq,
            } => {
                self.delivered(pid);
                let mut r = p;
                r.src = p.dst;
                r.dst = p.src;
                r.ttl = 64;
                r.flow = Packet::NO_FLOW;
                r.tsq = 0;
                r.payload = Payload::Echo {
                    reply: true,
                    ident,
                    seq,
                };
                let mib = &mut self.nodes[node].mib;
                mib.on_deliver(&p, true);
                mib.on_originate(&r);
                let rid = self.arena.alloc(r);
                self.host_send(node, rid);
                return;
            }
            Payload::Echo {
                reply: true, ident, ..
            } => self.nodes[node].sockets.lookup(Proto::Icmp, ident),
            Payload::Arp { .. } => None,
            _ => self.nodes[node].sockets.lookup(p.proto, p.dst_port),
        };
        if p.proto != Proto::Arp {
            self.nodes[node].mib.on_deliver(&p, target.is_some());
        }
        match target {
            Some(app) => {
                self.delivered(pid);
                self.with_app(app, |a, ctx| a.handle_packet(ctx, &p));
                self.after_app(app);
            }
            None if p.proto == Proto::Tcp => {
                // A closed TCP port answers with a reset (connection refused;
                // tcp_v4_send_reset), except to a reset.
                self.delivered(pid);
                let reset = match p.payload {
                    Payload::Control { conn, .. } => Some(Payload::Reset { conn }),
                    Payload::Tcp(h) if h.flags & tcp_flags::RST == 0 => {
                        Some(Payload::Tcp(h.reset_reply(p.payload_len())))
                    }
                    _ => None,
                };
                if let Some(payload) = reset {
                    let r = Packet {
                        src: p.dst,
                        dst: p.src,
                        src_port: p.dst_port,
                        dst_port: p.src_port,
                        ttl: 64,
                        tos: 0,
                        flow: Packet::NO_FLOW,
                        len: crate::packet::ETH_HEADER + crate::packet::IPV4_HEADER + 20,
                        payload,
                        tsq: 0,
                        tstamp: None,
                        ..p
                    };
                    let mib = &mut self.nodes[node].mib;
                    mib.on_originate(&r);
                    if matches!(r.payload, Payload::Tcp(_)) {
                        mib.on_reset_sent();
                    }
                    let rid = self.arena.alloc(r);
                    self.host_send(node, rid);
                }
            }
            None => self.node_drop(node, pid, DropReason::NoListener),
        }
    }
}
