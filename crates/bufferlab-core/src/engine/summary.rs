//! The run's summary: per interface its counters, drops by reason and qdiscs,
//! per node its drops, per flow what was sent and received, and the packet
//! accounting identity (created = delivered + dropped + live, with where the
//! live ones are held); also the qdiscs' peak backlogs. The interface figures
//! are those of `ip -s link` (net/core/rtnetlink.c `rtnl_fill_stats`) and
//! `tc -s qdisc` (net/sched/sch_api.c `tc_fill_qdisc`).

use super::Simulator;
use crate::qdisc::{DropCounters, DropReason};
use serde_json::{json, Value};

impl Simulator {
    /// Per interface with a qdisc: the most bytes and packets its qdiscs
    /// held since the last reset (each its own maximum; only enqueues raise
    /// them). A per-part summary without a queue trace reads these.
    pub fn peak_backlogs(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (i, ifc) in self.ifaces.iter().enumerate() {
            if !ifc.tree.is_noqueue() {
                m.insert(
                    self.topo.iface_names[i].clone(),
                    json!({"bytes": ifc.peak.0, "packets": ifc.peak.1}),
                );
            }
        }
        Value::Object(m)
    }

    /// Start new high-water marks from what each interface holds now.
    pub fn reset_peak_backlogs(&mut self) {
        for ifc in &mut self.ifaces {
            ifc.peak = ifc.tree.held_backlog();
        }
    }

    /// Segments of the packets alive now (O(live packets); reports only).
    fn live_segments(&self) -> u64 {
        self.arena.live_segments()
    }

    /// Packets physically held anywhere: qdiscs, wires, ARP queues, and the
    /// zero-delay arrival FIFO.
    fn held_packets(&self) -> u64 {
        let in_ifaces: u64 = self
            .ifaces
            .iter()
            .map(|i| i.tree.held_packets() + i.wire.len() as u64)
            .sum();
        let in_arp: u64 = self
            .nodes
            .iter()
            .flat_map(|n| n.neighbours.iter())
            .map(|e| e.queue.len() as u64)
            .sum();
        let in_cpus: u64 = self.nodes.iter().map(|n| n.tx_cpu.len() as u64).sum();
        in_ifaces + in_arp + in_cpus + self.pending.len() as u64
    }

    pub fn summary(&self) -> Value {
        let drops_json = |d: &DropCounters| {
            let mut m = serde_json::Map::new();
            for r in DropReason::ALL {
                if d.packets[r.index()] > 0 {
                    m.insert(
                        r.name().into(),
                        json!({"packets": d.packets[r.index()], "bytes": d.bytes[r.index()]}),
                    );
                }
            }
            Value::Object(m)
        };
        let mut ifaces = serde_json::Map::new();
        let mut dropped: u64 = 0;
        let mut dropped_segments: u64 = 0;
        for (i, ifc) in self.ifaces.iter().enumerate() {
            dropped += ifc.drops.total_packets();
            dropped_segments += ifc.drops.total_segments();
            ifaces.insert(
                self.topo.iface_names[i].clone(),
                json!({
                    "node": self.topo.node_names[self.topo.iface_node[i]],
                    "peer": self.topo.iface_names[self.topo.iface_peer[i]],
                    "tx_packets": ifc.tx_packets, "tx_bytes": ifc.tx_bytes,
                    "rx_packets": ifc.rx_packets, "rx_bytes": ifc.rx_bytes,
                    "drops": drops_json(&ifc.drops),
                    "qdiscs": ifc.tree.show(),
                    "offloads": {"tso": ifc.offloads.tso, "gso": ifc.offloads.gso,
                                 "gro": ifc.offloads.gro},
                }),
            );
        }
        let mut nodes = serde_json::Map::new();
        for (n, node) in self.nodes.iter().enumerate() {
            dropped += node.drops.total_packets();
            dropped_segments += node.drops.total_segments();
            nodes.insert(
                self.topo.node_names[n].clone(),
                json!({"drops": drops_json(&node.drops)}),
            );
        }
        let flows: Vec<Value> = self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.sent_packets > 0)
            .map(|(id, f)| {
                json!({
                    "app": id, "kind": self.apps[id].app.kind(),
                    "node": self.topo.node_names[self.apps[id].node],
                    "sent_packets": f.sent_packets, "sent_bytes": f.sent_bytes,
                    "received_packets": f.received_packets, "received_bytes": f.received_bytes,
                })
            })
            .collect();
        json!({
            "time_ns": self.now.as_nanos(),
            "events": self.events.popped(),
            "packets": {
                "created": self.arena.created(),
                "delivered": self.delivered_packets,
                "delivered_bytes": self.delivered_bytes,
                "dropped": dropped,
                "live": self.arena.live(),
                "held": self.held_packets(),
                "segmented": self.arena.segmented(),
            },
            // the same identity counted in segments (an aggregate counts
            // gso_segs; splitting one changes nothing here)
            "segments": {
                "created": self.arena.created_segments(),
                "delivered": self.delivered_segments,
                "dropped": dropped_segments,
                "live": self.live_segments(),
            },
            "interfaces": ifaces,
            "nodes": nodes,
            "flows": flows,
        })
    }
}
