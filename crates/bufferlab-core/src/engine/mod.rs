//! The simulator: interfaces with their qdisc trees and wires, the nodes'
//! IP stacks (routing, ARP, ICMP echo, sockets), applications, and the run
//! loop. This file holds the `Simulator`, its configuration and its per-node
//! state; each part of its work is a file of its own:
//!
//! | file | concept | follows |
//! |---|---|---|
//! | run.rs | the event loop, dispatch, the per-instant limits | net/core/dev.c `net_rx_action` |
//! | apps.rs | applications, their context and sockets' route caps, `ss`/`nstat` | net/socket.c, net/core/sock.c |
//! | tsq.rs | TCP Small Queues: charging and handing back send memory | net/ipv4/tcp_output.c |
//! | host_time.rs | hosts' CPU time sending and receiving | (crate::host) |
//! | ip.rs | routing, forwarding, receiving at layer 3 | net/ipv4/ip_input.c, ip_forward.c, ip_output.c |
//! | local.rs | local delivery: sockets, ICMP echo, TCP resets | net/ipv4/ip_input.c, icmp.c, tcp_ipv4.c |
//! | neigh.rs | neighbours (ARP) | net/core/neighbour.c, net/ipv4/arp.c |
//! | iface.rs | a device's state; `ip link`, `ethtool -K` | include/linux/netdevice.h, drivers/net/ifb.c |
//! | dev.rs | a device's receive and transmit steps: link down, hooks, redirect, ifb | net/core/dev.c, act_mirred.c |
//! | qdisc_run.rs | the root qdisc: enqueue and `__qdisc_run` | net/sched/sch_generic.c |
//! | wire.rs | transmission, serialisation, propagation, TX completion | net/core/dev.c, drivers/net/veth.c |
//! | link_free.rs | TX completion: the events of quiet ones kept out of the queue | (engine only) |
//! | tc.rs | the `tc` verbs and the ingress/clsact hook | net/sched/sch_api.c, cls_api.c |
//! | observe.rs | packet captures and queue traces | net/packet/af_packet.c |
//! | summary.rs | the summary and the accounting identity | net/core/rtnetlink.c |
//!
//! Packet path (docs/semantics/qdiscs.md §1.4): a node hands a packet to an interface; the
//! interface enqueues it into its root qdisc (or, with `noqueue`, puts it on
//! the wire at once) and then "kicks" the root: dequeue and transmit until
//! the qdisc is empty or throttled (the qdisc then asks for a watchdog) or
//! the wire is busy serialising (finite-rate links only; veths have no
//! serialisation delay). A packet on a wire reaches the peer after
//! `tx_time + delay`; zero-delay arrivals are processed at the same instant
//! through a FIFO, wires with delay keep their own FIFO and schedule only
//! their head (docs/internals.md "Performance design").
//!
//! Accounting: every packet created is eventually delivered to a node's
//! stack, dropped with a counted reason (per interface or per node), or is
//! still held somewhere (qdisc, wire, ARP queue). `summary()` reports all
//! three and the identity between them.

mod apps;
mod dev;
mod host_time;
mod iface;
mod ip;
mod link_free;
mod local;
mod neigh;
mod observe;
mod qdisc_run;
mod run;
mod summary;
mod tc;
mod tsq;
mod wire;

pub use iface::Offloads;

use crate::app::{IperfRegistry, Sockets};
use crate::capture::Observer;
use crate::error::{Error, Result};
use crate::host::{CpuQueue, StackCost};
use crate::host_noise::{HostNoise, HostTiming, RxNoise};
use crate::mib::NodeMib;
use crate::packet::{Ipv4, Packet, PacketArena, PacketId};
use crate::qdisc::{AutoHandles, DropCounters, QdiscProfile, QdiscTree};
use crate::rng::ComponentRng;
use crate::sched::EventQueue;
use crate::tcp::config::{DEFAULT_MAX_TCP_HEADER, MAX_TCP_HEADER_BUILDS};
use crate::time::{Rate, SimDuration, SimTime};
use crate::topology::{IfaceId, NodeKind, Topology, TopologyConfig};
use apps::{AppSlot, FlowStats, RouteCaps};
use iface::Iface;
use neigh::NeighbourTable;
use run::MAX_WORK_PER_INSTANT;
use serde::Deserialize;
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EngineOptions {
    /// Resolve neighbours with ARP before the first packet (docs/semantics/formats.md §2.5:
    /// the first ping of a pair pays one extra round trip).
    #[serde(default = "yes")]
    pub arp: bool,
    #[serde(default)]
    pub netem_modern_accounting: bool,
    #[serde(default)]
    pub netem_dup_after_limit: bool,
    /// TSO/GSO on every interface at start (a Mininet VM's veths: on;
    /// `[sim] gso = false` for textbook per-MTU packets, docs/semantics/tcp.md §2.1)
    #[serde(default = "yes")]
    pub gso: bool,
    /// hosts' stack processing time (host.rs)
    #[serde(default)]
    pub host_cost: StackCost,
    /// hosts' receive-path timing noise, by host name (host_noise.rs); none: punctual
    #[serde(default)]
    pub host_noise: BTreeMap<String, HostNoise>,
    /// how long a host's reading process takes to run once its socket is
    /// readable, by host name (host_noise.rs `HostTiming`); none: at once
    #[serde(default)]
    pub reader_wakeup: BTreeMap<String, HostNoise>,
    /// a host's server programs' set-up work before a test starts, by host
    /// name (host_noise.rs `HostTiming`); none: none
    #[serde(default)]
    pub app_setup: BTreeMap<String, HostNoise>,
    /// the kernel build's `MAX_TCP_HEADER`, bytes, for every host's TCP
    /// (`[sim] max_tcp_header`; tcp/config.rs)
    #[serde(default = "default_max_tcp_header")]
    pub max_tcp_header: u32,
}

fn default_max_tcp_header() -> u32 {
    DEFAULT_MAX_TCP_HEADER
}

fn yes() -> bool {
    true
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            arp: true,
            netem_modern_accounting: false,
            netem_dup_after_limit: false,
            gso: true,
            host_cost: StackCost::default(),
            host_noise: BTreeMap::new(),
            reader_wakeup: BTreeMap::new(),
            app_setup: BTreeMap::new(),
            max_tcp_header: DEFAULT_MAX_TCP_HEADER,
        }
    }
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    pub seed: u64,
    pub nodes: Vec<crate::topology::NodeConfig>,
    pub links: Vec<crate::topology::LinkConfig>,
    #[serde(default)]
    pub options: EngineOptions,
}

struct Node {
    kind: NodeKind,
    /// the host's sending stack (host.rs): packets that leave through a
    /// qdisc, a finite-rate link or ARP wait here; the rest go on the wire
    /// at once, departing when the CPU is done with them
    tx_cpu: CpuQueue,
    /// when the host's receiving stack is free again (its cost is added to
    /// a packet's arrival when the packet is put on the wire towards it)
    rx_free: SimTime,
    /// the receiving stack's timing noise (host_noise.rs), if it has any
    rx_noise: Option<RxNoise>,
    /// its processes' timing (host_noise.rs)
    timing: HostTiming,
    addr: Ipv4,
    sockets: Sockets,
    neighbours: NeighbourTable,
    drops: DropCounters,
    timer_at: Option<SimTime>,
    /// the stack's SNMP counters (mib.rs); its connections' are in `sockets`
    mib: NodeMib,
}

/// The whole simulated network. See the module doc for the data flow.
pub struct Simulator {
    now: SimTime,
    seed: u64,
    /// the phase of the TCP clock every host's sockets read (tcp/clock.rs)
    tcp_clock_phase_us: u32,
    topo: Topology,
    ifaces: Vec<Iface>,
    nodes: Vec<Node>,
    apps: Vec<AppSlot>,
    flows: Vec<FlowStats>,
    events: EventQueue,
    arena: PacketArena,
    auto_handles: AutoHandles,
    iperf: IperfRegistry,
    rr: crate::app::rr::RrBoard,
    options: EngineOptions,
    /// zero-delay arrivals to process at the current instant: (receiving iface, packet)
    pending: VecDeque<(IfaceId, PacketId)>,
    out_buf: Vec<Packet>,
    reinject_buf: Vec<PacketId>,
    segment_buf: Vec<PacketId>,
    finished: Vec<u32>,
    delivered_packets: u64,
    delivered_bytes: u64,
    delivered_segments: u64,
    /// zero-delay arrivals processed at `instant` (see MAX_PACKETS_PER_INSTANT)
    instant: SimTime,
    instant_packets: u64,
    /// work done at `instant`, and the most allowed (MAX_WORK_PER_INSTANT)
    instant_work: u64,
    work_cap: u64,
    /// why the run cannot go on, found deep inside an operation that has no
    /// error path (a qdisc's dequeue loop, a host's send); `run_bounded`
    /// returns it as its error
    stuck: Option<String>,
    /// packet captures and queue traces (capture/mod.rs); never read back
    obs: Observer,
    /// per packet slot held by an ifb: where it came from, as
    /// `iface << 1 | from_egress_hook` (ifb.c keeps `skb->skb_iif` and
    /// `tc_at_ingress`)
    ifb_from: Vec<u32>,
    /// how deep `hook_mirrors` is sending copies of copies (dev.rs)
    mirred_nest: u32,
    /// the qdisc profile new devices (ifb) get
    profile: QdiscProfile,
    /// inside `run_bounded`, the only place a `LinkFree` may stay out of
    /// the queue (link_free.rs)
    in_stretch: bool,
    /// each node's route capabilities, taken when the stretch began (apps.rs)
    stretch_caps: Vec<RouteCaps>,
    /// events (and zero-delay arrivals) the current stretch may still run
    stretch_left: u64,
    /// the devices whose `LinkFree` may be out of the queue (link_free.rs)
    quiet_link_frees: Vec<u32>,
    /// tests: queue every `LinkFree`, the reference the quiet ones must match
    #[cfg(test)]
    queue_every_link_free: bool,
}

impl Simulator {
    pub fn from_json(config: &str) -> Result<Simulator> {
        let cfg: SimConfig = serde_json::from_str(config)
            .map_err(|e| Error::Schema(format!("simulator config: {e}")))?;
        Simulator::new(cfg)
    }

    pub fn new(cfg: SimConfig) -> Result<Simulator> {
        let topo = Topology::build(&TopologyConfig {
            nodes: cfg.nodes,
            links: cfg.links,
        })?;
        for (what, specs) in [
            ("host noise", &cfg.options.host_noise),
            ("reader wake-up", &cfg.options.reader_wakeup),
            ("application set-up", &cfg.options.app_setup),
        ] {
            for (host, spec) in specs {
                let n = topo.node_names.iter().position(|name| name == host);
                if !n.is_some_and(|n| topo.node_kinds[n] == NodeKind::Host) {
                    return Err(Error::Schema(format!("{what}: no host named {host:?}")));
                }
                spec.validate(host)?;
            }
        }
        if !MAX_TCP_HEADER_BUILDS.contains(&cfg.options.max_tcp_header) {
            return Err(Error::Schema(format!(
                "max_tcp_header {}: expected one of {MAX_TCP_HEADER_BUILDS:?} (an x86-64 kernel's \
                 L1_CACHE_ALIGN(128 + MAX_HEADER); distribution kernels: 320)",
                cfg.options.max_tcp_header
            )));
        }
        let n_ifaces = topo.iface_names.len();
        let profile = QdiscProfile {
            netem_modern_accounting: cfg.options.netem_modern_accounting,
            netem_dup_after_limit: cfg.options.netem_dup_after_limit,
        };
        let ifaces = (0..topo.iface_names.len())
            .map(|i| {
                // A finite-rate wire is a real NIC with a TX queue: its default
                // qdisc is pfifo_fast (veths keep noqueue), as Linux's default_qdisc.
                let tree = if topo.iface_rate_bps[i] > 0 {
                    QdiscTree::new_nic(&topo.iface_names[i], cfg.seed, profile)
                } else {
                    QdiscTree::new(&topo.iface_names[i], cfg.seed, profile)
                };
                let offloads = Offloads {
                    tso: cfg.options.gso,
                    gso: cfg.options.gso,
                    gro: cfg.options.gso,
                };
                let rate = Rate(topo.iface_rate_bps[i]);
                Iface::new(
                    tree,
                    offloads,
                    rate,
                    SimDuration(topo.iface_delay_ns[i]),
                    false,
                )
            })
            .collect();
        let nodes = (0..topo.node_names.len())
            .map(|n| Node {
                kind: topo.node_kinds[n],
                tx_cpu: CpuQueue::default(),
                rx_free: SimTime::ZERO,
                rx_noise: cfg
                    .options
                    .host_noise
                    .get(&topo.node_names[n])
                    .map(|&spec| RxNoise::new(spec, cfg.seed, &topo.node_names[n])),
                timing: HostTiming::new(
                    cfg.options.reader_wakeup.get(&topo.node_names[n]).copied(),
                    cfg.options.app_setup.get(&topo.node_names[n]).copied(),
                    cfg.seed,
                    &topo.node_names[n],
                ),
                addr: topo.node_addrs(n).next().unwrap_or(Ipv4::UNSPECIFIED),
                sockets: Sockets::new(ComponentRng::new(
                    cfg.seed,
                    &format!("node/{}/ports", topo.node_names[n]),
                )),
                neighbours: NeighbourTable::default(),
                drops: DropCounters::default(),
                timer_at: None,
                mib: NodeMib::default(),
            })
            .collect();
        Ok(Simulator {
            now: SimTime::ZERO,
            seed: cfg.seed,
            tcp_clock_phase_us: crate::tcp::clock::clock_phase_us(cfg.seed),
            topo,
            ifaces,
            nodes,
            apps: Vec::new(),
            flows: Vec::new(),
            events: EventQueue::default(),
            arena: PacketArena::default(),
            auto_handles: AutoHandles::default(),
            iperf: IperfRegistry::default(),
            rr: crate::app::rr::RrBoard::default(),
            options: cfg.options,
            pending: VecDeque::new(),
            out_buf: Vec::new(),
            reinject_buf: Vec::new(),
            segment_buf: Vec::new(),
            finished: Vec::new(),
            delivered_packets: 0,
            delivered_bytes: 0,
            delivered_segments: 0,
            instant: SimTime::ZERO,
            instant_packets: 0,
            instant_work: 0,
            work_cap: MAX_WORK_PER_INSTANT,
            stuck: None,
            obs: Observer::new(n_ifaces),
            ifb_from: Vec::new(),
            mirred_nest: 0,
            profile,
            in_stretch: false,
            stretch_caps: Vec::new(),
            stretch_left: 0,
            quiet_link_frees: Vec::new(),
            #[cfg(test)]
            queue_every_link_free: false,
        })
    }

    pub fn now(&self) -> SimTime {
        self.now
    }
}

#[cfg(test)]
mod tests;
