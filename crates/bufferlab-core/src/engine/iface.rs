//! Interfaces: what a device holds (its qdisc tree, the packets on its wire,
//! its offloads, counters and hook) and the `ip link` / `ethtool` requests that
//! change it: `ip link add … type ifb`, `ip link set … up|down`, `ethtool -K`.
//! Follows `struct net_device` (include/linux/netdevice.h), drivers/net/ifb.c
//! (`ifb_setup`), net/core/dev.c (`dev_change_flags`) and net/ethtool/features.c.

use super::Simulator;
use crate::app::QdiscBacklog;
use crate::capture::trace::Snap;
use crate::error::{Error, Result};
use crate::packet::{PacketId, TsqRelease};
use crate::qdisc::ingress::Hook;
use crate::qdisc::{DropCounters, QdiscTree};
use crate::time::{Rate, SimDuration, SimTime};
use std::collections::VecDeque;

/// Segmentation offloads of an interface (`ethtool -k`), the ones that
/// decide what a packet record stands for (docs/semantics/tcp.md §2.1, docs/semantics/qdiscs.md §1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Offloads {
    /// tcp-segmentation-offload: aggregates leave the device whole
    pub tso: bool,
    /// generic-segmentation-offload: the stack builds aggregates and a
    /// device without TSO segments them when it transmits
    pub gso: bool,
    /// generic-receive-offload: on on a fresh veth, off on Mininet's
    /// TCLinks; recorded, not modelled (received segments are not merged)
    pub gro: bool,
}

impl Offloads {
    /// `sk_gso_max_size` a TCP socket routed out of this device gets.
    pub fn gso_max_size(self) -> u32 {
        if self.tso || self.gso {
            GSO_MAX_SIZE
        } else {
            0
        }
    }
}

/// `GSO_MAX_SIZE` of a veth, bytes.
const GSO_MAX_SIZE: u32 = 65_536;

pub(super) struct Iface {
    pub(super) tree: QdiscTree,
    pub(super) offloads: Offloads,
    /// the most the qdiscs held since the last `reset_peak_backlogs`:
    /// (bytes, packets), each its own maximum
    pub(super) peak: (u64, u64),
    /// packets on the way to the peer, in order: (when the peer handles it
    /// — for a host, once its receiving stack has spent the packet's cost —,
    /// the packet, when it reached the peer's interface)
    pub(super) wire: VecDeque<(SimTime, PacketId, SimTime)>,
    pub(super) rate: Rate,
    pub(super) delay: SimDuration,
    pub(super) busy_until: SimTime,
    /// a `LinkFree` is due at `busy_until`: queued, or kept aside in
    /// `quiet_link_free`
    pub(super) link_free_pending: bool,
    /// the sequence number of a pending `LinkFree` not in the event queue
    /// because it will find the qdiscs empty (engine/link_free.rs)
    pub(super) quiet_link_free: Option<u64>,
    /// listed in `Simulator::quiet_link_frees`
    pub(super) quiet_listed: bool,
    /// TCP Small Queues: the send memory of the packets serialising on a
    /// finite-rate link, given back to their sockets at TX completion
    /// (`busy_until`, the next `LinkFree`)
    pub(super) tx_releases: Vec<TsqRelease>,
    pub(super) watchdog_at: Option<SimTime>,
    pub(super) drops: DropCounters,
    pub(super) tx_packets: u64,
    pub(super) tx_bytes: u64,
    pub(super) rx_packets: u64,
    pub(super) rx_bytes: u64,
    /// the `ingress` / `clsact` qdisc and its filters (qdisc/ingress.rs)
    pub(super) hook: Option<Hook>,
    /// an ifb (`ip link add … type ifb`): what its root qdisc releases goes
    /// back to where it came from instead of onto a wire
    pub(super) ifb: bool,
    /// `ip link set DEV down`: the device neither sends nor receives (a
    /// downed device's transmit queue is not fed, net/core/dev.c
    /// `__dev_queue_xmit` sees !netif_running; received frames are dropped)
    pub(super) down: bool,
}

impl Iface {
    /// A device with `tree` at its root and nothing sent, received or held yet.
    pub(super) fn new(
        tree: QdiscTree,
        offloads: Offloads,
        rate: Rate,
        delay: SimDuration,
        ifb: bool,
    ) -> Iface {
        Iface {
            tree,
            peak: (0, 0),
            offloads,
            wire: VecDeque::new(),
            rate,
            delay,
            busy_until: SimTime::ZERO,
            link_free_pending: false,
            quiet_link_free: None,
            quiet_listed: false,
            tx_releases: Vec::new(),
            watchdog_at: None,
            drops: DropCounters::default(),
            tx_packets: 0,
            tx_bytes: 0,
            rx_packets: 0,
            rx_bytes: 0,
            hook: None,
            ifb,
            down: false,
        }
    }
}

impl QdiscBacklog for Vec<Iface> {
    fn leaf_backlog(&self, iface: usize) -> (u64, u64) {
        self[iface].tree.leaf_backlog()
    }
}

impl Simulator {
    /// `ip link add NAME type ifb` in `node`'s namespace: a new device whose
    /// root qdisc is pfifo_fast (ifb has a transmit queue).
    pub fn add_ifb(&mut self, node: &str, name: &str) -> Result<()> {
        let n = self
            .topo
            .node_by_name(node)
            .ok_or_else(|| Error::Config(format!("no node {node:?}")))?;
        let id = self.topo.add_virtual(n, name)?;
        let tree = QdiscTree::new_nic(name, self.seed, self.profile);
        let offloads = Offloads {
            tso: true,
            gso: true,
            gro: false,
        };
        self.ifaces
            .push(Iface::new(tree, offloads, Rate(0), SimDuration(0), true));
        debug_assert_eq!(id + 1, self.ifaces.len());
        self.obs.add_iface();
        Ok(())
    }

    /// `ip link set DEV up|down`: a downed device drops what it would send
    /// or receive; what its qdiscs hold stays until it is up again.
    pub fn set_link_up(&mut self, dev: &str, up: bool) -> Result<()> {
        let iface = self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| Error::App(format!("no such interface {dev:?}")))?;
        self.ifaces[iface].down = !up;
        Ok(())
    }

    /// `ethtool -K DEV FEATURE on|off` for the segmentation offloads.
    /// Sockets see a change when they connect (Linux reads the device's
    /// features into `sk_route_caps` then).
    pub fn set_offload(&mut self, dev: &str, feature: &str, on: bool) -> Result<()> {
        let iface = self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| Error::App(format!("no such interface {dev:?}")))?;
        let o = &mut self.ifaces[iface].offloads;
        match feature {
            "tso" => o.tso = on,
            "gso" => o.gso = on,
            "gro" => o.gro = on,
            _ => return Err(Error::App(format!("unknown offload feature {feature:?}"))),
        }
        Ok(())
    }

    /// The segmentation offloads of `dev` (`ethtool -k`).
    pub fn offloads(&self, dev: &str) -> Result<Offloads> {
        let iface = self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| Error::App(format!("no such interface {dev:?}")))?;
        Ok(self.ifaces[iface].offloads)
    }
}

/// The interface's qdiscs as queue traces record them: everything the tree
/// holds (a root netem's own counters leave out its child's queue, which is
/// where a lab's bottleneck usually is) and all drops counted on the
/// interface, wherever in the tree they happen.
pub(super) fn root_snap(ifc: &Iface) -> Snap {
    let (bytes, packets) = ifc.tree.held_backlog();
    Snap {
        bytes,
        packets,
        drops: ifc.drops.total_packets(),
    }
}
