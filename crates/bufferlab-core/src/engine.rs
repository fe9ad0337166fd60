//! The simulator: interfaces with their qdisc trees and wires, the nodes'
//! IP stacks (routing, ARP, ICMP echo, sockets), applications, and the run
//! loop.
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

use crate::app::{App, AppCtx, AppSpec, IperfRegistry, QdiscBacklog, ResultCtx, Sockets};
use crate::capture::trace::Snap;
use crate::capture::{is_ce, CaptureSpec, Observer, Output};
use crate::error::{Error, Result};
use crate::host::{CpuQueue, StackCost};
use crate::mib::NodeMib;
use crate::packet::{
    tcp_flags, Ipv4, Packet, PacketArena, PacketId, Payload, Proto, TcpHeader, TsqRelease,
    ARP_FRAME,
};
use crate::qdisc::ingress::{Hook, Outcome};
use crate::qdisc::spec::{FilterVerb, HookFilterRequest, HookSide};
use crate::qdisc::{AutoHandles, ParentSpec, QdiscProfile, QdiscSpec, QdiscStats, TcVerb};
use crate::qdisc::{ClassRequest, FilterRequest};
use crate::qdisc::{DropCounters, DropReason, QdiscCtx, QdiscInfo, QdiscTree, TcRequest, Verdict};
use crate::rng::ComponentRng;
use crate::sched::{Event, EventQueue};
use crate::time::{Rate, SimDuration, SimTime};
use crate::topology::{IfaceId, NodeId, NodeKind, Topology, TopologyConfig};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::VecDeque;

/// Linux `neigh` defaults: unresolved queue of 212 992 bytes
/// (`unres_qlen_bytes` = SK_WMEM_MAX), 3 solicitations 1 s apart.
const ARP_QUEUE_BYTES: u64 = 212_992;
const ARP_TRIES: u32 = 3;
const ARP_RETRANS: SimDuration = SimDuration::from_secs(1);

/// Packets that may cross the network within one instant before a run is
/// declared stuck. A TCP flow over a path with neither delay nor a rate limit
/// (plain veths: no serialisation, no propagation, no host processing time
/// modelled) has a zero round-trip time and would move unbounded data
/// without simulated time advancing.
const MAX_PACKETS_PER_INSTANT: u64 = 2_000_000;

/// Extra packets one `qdisc_restart` asks the root for after the first on a
/// multi-queue device such as a veth (`try_bulk_dequeue_skb_slow` in
/// net/sched/sch_generic.c: at most 8 more, stopping at the first failure).
const BULK_EXTRA: u32 = 8;

/// Units of work (events dispatched, packets a qdisc hands out) at one
/// simulated instant before the run is declared stuck, naming the component
/// that did the last of them. Far above any lab (a gigabit link moves about
/// 10⁵ packets in a second, spread over as many instants); a loop that does
/// not advance time (a misbehaving model) hits it within seconds of wall
/// time instead of running for ever.
const MAX_WORK_PER_INSTANT: u64 = 10_000_000;

/// How far a host's sending stack may fall behind the packets its
/// applications hand it (host.rs: each costs CPU time). A real sender
/// blocks in `sendto`; the generators here do not, so a rate no host can
/// process would queue packets without bound (`cbr -r 1e12`: 10⁸ packets a
/// second against the ~3·10⁵ a host processes).
const MAX_STACK_BACKLOG: SimDuration = SimDuration::from_secs(1);

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

struct Iface {
    tree: QdiscTree,
    offloads: Offloads,
    /// the most the qdiscs held since the last `reset_peak_backlogs`:
    /// (bytes, packets), each its own maximum
    peak: (u64, u64),
    /// packets on the way to the peer, in order: (when the peer handles it
    /// — for a host, once its receiving stack has spent the packet's cost —,
    /// the packet, when it reached the peer's interface)
    wire: VecDeque<(SimTime, PacketId, SimTime)>,
    rate: Rate,
    delay: SimDuration,
    busy_until: SimTime,
    link_free_pending: bool,
    /// TCP Small Queues: the send memory of the packets serialising on a
    /// finite-rate link, given back to their sockets at TX completion
    /// (`busy_until`, the next `LinkFree`)
    tx_releases: Vec<TsqRelease>,
    watchdog_at: Option<SimTime>,
    drops: DropCounters,
    tx_packets: u64,
    tx_bytes: u64,
    rx_packets: u64,
    rx_bytes: u64,
    /// the `ingress` / `clsact` qdisc and its filters (qdisc/ingress.rs)
    hook: Option<Hook>,
    /// an ifb (`ip link add … type ifb`): what its root qdisc releases goes
    /// back to where it came from instead of onto a wire
    ifb: bool,
    /// `ip link set DEV down`: the device neither sends nor receives (a
    /// downed device's transmit queue is not fed, net/core/dev.c
    /// `__dev_queue_xmit` sees !netif_running; received frames are dropped)
    down: bool,
}

impl QdiscBacklog for Vec<Iface> {
    fn leaf_backlog(&self, iface: usize) -> (u64, u64) {
        self[iface].tree.leaf_backlog()
    }
}

enum NeighState {
    Incomplete { tries: u32, retry_at: SimTime },
    Reachable,
}

struct Neighbour {
    addr: Ipv4,
    out: IfaceId,
    state: NeighState,
    queue: Vec<PacketId>,
    queued_bytes: u64,
}

/// A node's neighbour (ARP) table: entries in creation order (the order
/// ARP retries are sent in) with a hash index by address, so forwarding
/// looks a next hop up in O(1) however many neighbours a node has
/// (Linux's `neigh_lookup` hash, net/core/neighbour.c).
#[derive(Default)]
struct NeighbourTable {
    entries: Vec<Neighbour>,
    index: FxHashMap<Ipv4, usize>,
}

impl NeighbourTable {
    fn find(&self, addr: Ipv4) -> Option<usize> {
        self.index.get(&addr).copied()
    }

    fn push(&mut self, e: Neighbour) -> usize {
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

struct Node {
    kind: NodeKind,
    /// the host's sending stack (host.rs): packets that leave through a
    /// qdisc, a finite-rate link or ARP wait here; the rest go on the wire
    /// at once, departing when the CPU is done with them
    tx_cpu: CpuQueue,
    /// when the host's receiving stack is free again (its cost is added to
    /// a packet's arrival when the packet is put on the wire towards it)
    rx_free: SimTime,
    addr: Ipv4,
    sockets: Sockets,
    neighbours: NeighbourTable,
    drops: DropCounters,
    timer_at: Option<SimTime>,
    /// the stack's SNMP counters (mib.rs); its connections' are in `sockets`
    mib: NodeMib,
}

/// An application and its timer bookkeeping. `timer_at` is when the
/// application wants to be woken; `scheduled` is the earliest `AppTimer`
/// entry known to be in the event queue. A timer that moves later (TCP's RTO
/// on nearly every ACK) costs nothing: the pending entry fires early, finds
/// nothing due, and re-arms. Only an earlier wake-up pushes a new entry.
struct AppSlot {
    app: App,
    node: NodeId,
    timer_at: Option<SimTime>,
    scheduled: Option<SimTime>,
    reported: bool,
}

#[derive(Clone, Copy, Default)]
struct FlowStats {
    sent_packets: u64,
    sent_bytes: u64,
    received_packets: u64,
    received_bytes: u64,
}

/// The whole simulated network. See the module doc for the data flow.
pub struct Simulator {
    now: SimTime,
    seed: u64,
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
    /// the qdisc profile new devices (ifb) get
    profile: QdiscProfile,
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
        let n_ifaces = topo.iface_names.len();
        let profile = QdiscProfile {
            netem_modern_accounting: cfg.options.netem_modern_accounting,
            netem_dup_after_limit: cfg.options.netem_dup_after_limit,
        };
        let ifaces = (0..topo.iface_names.len())
            .map(|i| Iface {
                // A finite-rate wire is a real NIC with a TX queue: its default
                // qdisc is pfifo_fast (veths keep noqueue), as Linux's default_qdisc.
                tree: if topo.iface_rate_bps[i] > 0 {
                    QdiscTree::new_nic(&topo.iface_names[i], cfg.seed, profile)
                } else {
                    QdiscTree::new(&topo.iface_names[i], cfg.seed, profile)
                },
                peak: (0, 0),
                offloads: Offloads {
                    tso: cfg.options.gso,
                    gso: cfg.options.gso,
                    gro: cfg.options.gso,
                },
                wire: VecDeque::new(),
                rate: Rate(topo.iface_rate_bps[i]),
                delay: SimDuration(topo.iface_delay_ns[i]),
                busy_until: SimTime::ZERO,
                link_free_pending: false,
                tx_releases: Vec::new(),
                watchdog_at: None,
                drops: DropCounters::default(),
                tx_packets: 0,
                tx_bytes: 0,
                rx_packets: 0,
                rx_bytes: 0,
                hook: None,
                ifb: false,
                down: false,
            })
            .collect();
        let nodes = (0..topo.node_names.len())
            .map(|n| Node {
                kind: topo.node_kinds[n],
                tx_cpu: CpuQueue::default(),
                rx_free: SimTime::ZERO,
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
            profile,
        })
    }

    pub fn now(&self) -> SimTime {
        self.now
    }

    // ------------------------------------------------------------ control API

    /// One `tc qdisc` verb (a graft when its parent is a class, class_api.rs).
    pub fn tc(&mut self, req: &TcRequest) -> Result<()> {
        let iface = self.tc_iface(&req.dev)?;
        if is_hook_request(req) && self.ifaces[iface].tree.graft_slot(req).is_none() {
            return self.hook_tc(iface, req);
        }
        self.tc_on(iface, |tree, ctx, auto| tree.apply(req, ctx, auto))
    }

    /// One `tc class` verb: the kernel's warning for `tc` to print, if any.
    pub fn tc_class(&mut self, req: &ClassRequest) -> Result<Option<String>> {
        let iface = self.tc_iface(&req.dev)?;
        self.tc_on(iface, |tree, ctx, _| tree.class_request(req, ctx))
    }

    /// One `tc filter` verb on a qdisc's u32 filters.
    pub fn tc_filter(&mut self, req: &FilterRequest) -> Result<()> {
        let iface = self.tc_iface(&req.dev)?;
        self.tc_on(iface, |tree, _, _| tree.filter_request(req))
    }

    fn tc_iface(&self, dev: &str) -> Result<IfaceId> {
        Ok(self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| crate::error::TcError::NoDevice(dev.to_string()))?)
    }

    /// Apply one `tc` verb to `iface`'s qdiscs: what it changed goes to the
    /// queue trace, and on success the interface is kicked (a change may
    /// release packets at once: tbf refills its bucket).
    fn tc_on<T>(
        &mut self,
        iface: IfaceId,
        verb: impl FnOnce(
            &mut QdiscTree,
            &mut QdiscCtx,
            &mut AutoHandles,
        ) -> std::result::Result<T, crate::error::TcError>,
    ) -> Result<T> {
        let before = self
            .obs
            .traced(iface)
            .then(|| root_snap(&self.ifaces[iface]));
        let ifc = &mut self.ifaces[iface];
        let mut ctx = QdiscCtx::new(
            self.now,
            &mut self.arena,
            &mut ifc.drops,
            &mut self.reinject_buf,
        );
        let out = verb(&mut ifc.tree, &mut ctx, &mut self.auto_handles)?;
        if let Some(before) = before {
            let after = root_snap(&self.ifaces[iface]);
            let t = self.now.as_nanos();
            self.obs
                .with_trace(iface, |tr| tr.on_other(t, before, after));
        }
        self.kick(iface);
        self.settle_tsq();
        Ok(out)
    }

    pub fn qdisc_show(&self, dev: &str) -> Result<Vec<QdiscInfo>> {
        let iface = self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| crate::error::TcError::NoDevice(dev.to_string()))?;
        let ifc = &self.ifaces[iface];
        let mut blocks = ifc.tree.show();
        if let Some(h) = &ifc.hook {
            // after the transmit qdiscs, as tc lists the ingress queue's
            blocks.push(QdiscInfo {
                kind: if h.clsact { "clsact" } else { "ingress" },
                handle: 0xffff,
                parent: Some((0xffff, 0xfff1)),
                anonymous: false,
                options: serde_json::to_value(&h.spec).unwrap_or(Value::Null),
                stats: QdiscStats {
                    bytes: h.stats.bytes,
                    packets: h.stats.packets,
                    drops: h.stats.drops,
                    ..QdiscStats::default()
                },
                xstats: Some(json!({ "police": h.police_stats() })),
            });
        }
        Ok(blocks)
    }

    /// `ip link add NAME type ifb` in `node`'s namespace: a new device whose
    /// root qdisc is pfifo_fast (ifb has a transmit queue).
    pub fn add_ifb(&mut self, node: &str, name: &str) -> Result<()> {
        let n = self
            .topo
            .node_by_name(node)
            .ok_or_else(|| Error::Config(format!("no node {node:?}")))?;
        let id = self.topo.add_virtual(n, name)?;
        self.ifaces.push(Iface {
            tree: QdiscTree::new_nic(name, self.seed, self.profile),
            peak: (0, 0),
            offloads: Offloads {
                tso: true,
                gso: true,
                gro: false,
            },
            wire: VecDeque::new(),
            rate: Rate(0),
            delay: SimDuration(0),
            busy_until: SimTime::ZERO,
            link_free_pending: false,
            tx_releases: Vec::new(),
            watchdog_at: None,
            drops: DropCounters::default(),
            tx_packets: 0,
            tx_bytes: 0,
            rx_packets: 0,
            rx_bytes: 0,
            hook: None,
            ifb: true,
            down: false,
        });
        debug_assert_eq!(id + 1, self.ifaces.len());
        self.obs.add_iface();
        Ok(())
    }

    /// `tc qdisc add|replace|change|del … ingress|clsact` (sch_api.c with
    /// the ingress queue as the only slot; docs/semantics/qdiscs.md §21).
    fn hook_tc(&mut self, iface: IfaceId, req: &TcRequest) -> Result<()> {
        use crate::error::TcError;
        let (clsact, spec) = match &req.qdisc {
            Some(QdiscSpec::Ingress(s)) => (false, Some(s)),
            Some(QdiscSpec::Clsact(s)) => (true, Some(s)),
            None => (false, None),
            Some(other) => {
                return Err(TcError::Invalid(format!(
                    "{} cannot be attached at ffff:fff1 (only ingress or clsact)",
                    other.kind()
                ))
                .into())
            }
        };
        let existing = self.ifaces[iface].hook.as_ref().map(|h| h.clsact);
        if req.verb == TcVerb::Delete {
            let Some(was_clsact) = existing else {
                return Err(TcError::Invalid(
                    "Cannot find specified qdisc on specified device".into(),
                )
                .into());
            };
            if spec.is_some() && was_clsact != clsact {
                return Err(TcError::Invalid("Invalid qdisc name".into()).into());
            }
            self.ifaces[iface].hook = None;
            return Ok(());
        }
        let spec = spec
            .ok_or_else(|| TcError::Invalid("a qdisc kind is required for this command".into()))?;
        let old = match (req.verb, existing) {
            (TcVerb::Add, Some(_)) => return Err(TcError::Exists.into()),
            (TcVerb::Change, None) => return Err(TcError::NotFound.into()),
            // the same handle ffff: with another kind (tc_modify_qdisc)
            (_, Some(c)) if c != clsact => {
                return Err(TcError::Invalid("Invalid qdisc name".into()).into())
            }
            (_, Some(_)) => self.ifaces[iface].hook.take(),
            _ => None,
        };
        // change/replace of the same kind: sch_ingress has no options to
        // change, the filters stay
        let spec = match (req.verb, &old) {
            (TcVerb::Change | TcVerb::Replace, Some(h)) => h.spec.clone(),
            _ => spec.clone(),
        };
        self.rebuild_hook(iface, clsact, &spec, old)
    }

    /// `tc filter add|delete` at a receive or transmit hook (cls_api.c
    /// `tc_new_tfilter`/`tc_del_tfilter` on the ingress/clsact block): `add`
    /// appends the filter (an automatic prio one below the highest,
    /// `tcf_auto_prio`), `delete` removes those of its prio (every one for
    /// prio 0). Policers of the filters that stay keep their state.
    pub fn tc_hook_filter(&mut self, req: &HookFilterRequest) -> Result<()> {
        use crate::error::TcError;
        let iface = self.tc_iface(&req.dev)?;
        let Some(hook) = &self.ifaces[iface].hook else {
            return Err(TcError::FilterExtack("Parent Qdisc doesn't exists".into()).into());
        };
        let clsact = hook.clsact;
        if req.hook == HookSide::Egress && !clsact {
            return Err(TcError::FilterExtack("Specified class doesn't exist".into()).into());
        }
        let mut spec = hook.spec.clone();
        let filters = match req.hook {
            HookSide::Ingress => &mut spec.ingress,
            HookSide::Egress => &mut spec.egress,
        };
        match (req.verb, &req.filter) {
            (FilterVerb::Delete, _) => filters.retain(|f| req.prio != 0 && f.prio != req.prio),
            (FilterVerb::Add, Some(f)) => {
                let mut f = f.clone();
                if f.prio == 0 {
                    let last = filters.iter().map(|f| f.prio).max();
                    f.prio = last.unwrap_or(crate::qdisc::ingress::AUTO_PRIO + 1) - 1;
                }
                filters.push(f);
            }
            (FilterVerb::Add, None) => {
                return Err(TcError::Invalid("a filter is required for this command".into()).into())
            }
        }
        let old = self.ifaces[iface].hook.take();
        self.rebuild_hook(iface, clsact, &spec, old)
    }

    /// Build `iface`'s hook from `spec`, reusing what `old` built of the
    /// same filters; on error `old` stays.
    fn rebuild_hook(
        &mut self,
        iface: IfaceId,
        clsact: bool,
        spec: &crate::qdisc::ingress::HookSpec,
        old: Option<Hook>,
    ) -> Result<()> {
        let topo = &self.topo;
        let built = Hook::new(
            clsact,
            spec,
            self.now,
            &|d| topo.iface_by_name(d),
            old.as_ref(),
        );
        match built {
            Ok(h) => {
                self.ifaces[iface].hook = Some(h);
                Ok(())
            }
            Err(e) => {
                self.ifaces[iface].hook = old;
                Err(e.into())
            }
        }
    }

    /// `ethtool -K DEV FEATURE on|off` for the segmentation offloads.
    /// Sockets see a change when they connect (Linux reads the device's
    /// features into `sk_route_caps` then).
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

    /// The segmentation offloads of `dev` (`ethtool -k`).
    pub fn offloads(&self, dev: &str) -> Result<Offloads> {
        let iface = self
            .topo
            .iface_by_name(dev)
            .ok_or_else(|| Error::App(format!("no such interface {dev:?}")))?;
        Ok(self.ifaces[iface].offloads)
    }

    pub fn start_app(&mut self, node_name: &str, spec_json: &str) -> Result<u32> {
        let spec: AppSpec = serde_json::from_str(spec_json)
            .map_err(|e| Error::Schema(format!("application spec: {e}")))?;
        let node = self
            .topo
            .node_by_name(node_name)
            .ok_or_else(|| Error::App(format!("unknown node {node_name:?}")))?;
        if self.nodes[node].kind == NodeKind::Switch {
            return Err(Error::App(format!(
                "{node_name} is a switch: it runs no applications (use a host's terminal)"
            )));
        }
        let id = self.apps.len() as u32;
        let rng = ComponentRng::new(self.seed, &format!("app/{id}"));
        let mut app = App::new(spec, rng)?;
        if let Some(dst) = app.destination() {
            // connect()/sendto() fail at once without a route (ENETUNREACH)
            if !self.topo.is_local(node, dst) && self.topo.route(node, dst).is_none() {
                return Err(Error::App("Network is unreachable".into()));
            }
        }
        if let Some(dev) = app.monitored_dev() {
            let iface = self
                .topo
                .iface_by_name(dev)
                .ok_or_else(|| Error::App(format!("Cannot find device \"{dev}\"")))?;
            app.bind_monitored_iface(iface);
        }
        self.apps.push(AppSlot {
            app,
            node,
            timer_at: None,
            scheduled: None,
            reported: false,
        });
        self.flows.push(FlowStats::default());
        if let Err(e) = self.with_app(id, |app, ctx| app.start(ctx)) {
            self.nodes[node].sockets.unbind_all(id);
            self.out_buf.clear();
            self.apps.pop();
            self.flows.pop();
            return Err(e);
        }
        self.after_app(id);
        self.settle_tsq();
        Ok(id)
    }

    /// The host's TCP sysctls changed: listening application `id` uses
    /// `spec_json` (a `TcpSpec`) for the connections it accepts from now on.
    pub fn set_listener_tcp(&mut self, id: u32, spec_json: &str) -> Result<()> {
        self.check_app(id)?;
        let spec: crate::app::tcp::TcpSpec =
            serde_json::from_str(spec_json).map_err(|e| Error::Schema(format!("tcp spec: {e}")))?;
        self.apps[id as usize].app.set_listener_tcp(&spec)
    }

    pub fn stop_app(&mut self, id: u32) -> Result<()> {
        self.check_app(id)?;
        self.with_app(id, |app, ctx| app.interrupt(ctx));
        self.after_app(id);
        self.settle_tsq();
        Ok(())
    }

    pub fn app_result(&self, id: u32) -> Result<Value> {
        self.check_app(id)?;
        let slot = &self.apps[id as usize];
        let r = ResultCtx {
            iperf: &self.iperf,
            sockets: &self.nodes[slot.node].sockets,
        };
        Ok(slot.app.result(&r))
    }

    /// The node of a query (`ss`, `nstat`): a host or a router.
    fn stack_node(&self, name: &str) -> Result<NodeId> {
        let n = self
            .topo
            .node_by_name(name)
            .ok_or_else(|| Error::App(format!("unknown node {name:?}")))?;
        if self.nodes[n].kind == NodeKind::Switch {
            return Err(Error::App(format!(
                "{name} is a switch: its ports live in the machine's own namespace, \
                 where the model has no sockets or IP counters"
            )));
        }
        Ok(n)
    }

    /// What `ss -a` lists on `node` (app/sockets/diag.rs), as a JSON list.
    pub fn sockets(&self, node: &str) -> Result<Value> {
        let n = &self.nodes[self.stack_node(node)?];
        let apps = &self.apps;
        let list = n.sockets.diag(n.addr, self.now, |owner| {
            apps.get(owner as usize).and_then(|a| a.app.listener_tcp())
        });
        Ok(Value::Array(list))
    }

    /// `node`'s SNMP counters, `{"Ip": {...}, "Tcp": {...}, ...}` (mib.rs).
    pub fn netstat(&self, node: &str) -> Result<Value> {
        let i = self.stack_node(node)?;
        let n = &self.nodes[i];
        let s = &n.sockets;
        Ok(crate::mib::snmp_json(
            &n.mib,
            &s.tcp_mib(),
            s.curr_estab(),
            n.kind == NodeKind::Router,
        ))
    }

    pub fn app_finished(&self, id: u32) -> Result<bool> {
        self.check_app(id)?;
        Ok(self.apps[id as usize].app.is_finished())
    }

    fn check_app(&self, id: u32) -> Result<()> {
        if (id as usize) < self.apps.len() {
            Ok(())
        } else {
            Err(Error::App(format!("no application with id {id}")))
        }
    }

    /// Advance simulated time up to `until`, or until one or more
    /// applications finish; returns the ids of the applications that finished
    /// since the previous call (also those that finished inside `start_app`
    /// or `stop_app`, e.g. a ping of the node's own address).
    pub fn run(&mut self, until: SimTime) -> Result<Vec<u32>> {
        loop {
            if let Some(done) = self.run_bounded(until, u64::MAX)? {
                return Ok(done);
            }
        }
    }

    /// `run` in a bounded stretch: at most `max_events` events are dispatched,
    /// then `None` if the run is not over (neither `until` reached nor an
    /// application finished). Calling it again resumes exactly where it
    /// stopped, so a run in stretches is identical to one `run` (the binding
    /// checks for signals between stretches).
    /// Zero-delay arrivals count against `max_events` too, so that a stretch
    /// ends (and the binding checks for signals, the caller for its limits)
    /// however long simulated time stands still.
    pub fn run_bounded(&mut self, until: SimTime, max_events: u64) -> Result<Option<Vec<u32>>> {
        let mut budget = max_events;
        loop {
            let drained = self.drain_pending(&mut budget);
            self.check_stuck()?;
            if !drained? {
                return Ok(None);
            }
            if !self.finished.is_empty() || self.obs.has_finished() {
                break;
            }
            match self.events.peek_time() {
                Some(t) if t <= until => {
                    if budget == 0 {
                        return Ok(None);
                    }
                    budget -= 1;
                    let (t, ev) = self.events.pop().expect("peeked");
                    self.now = t;
                    if self.work_at_instant() {
                        let who = self.component(ev);
                        self.stuck_with(who);
                    } else {
                        self.dispatch(ev);
                        self.settle_tsq();
                    }
                    self.check_stuck()?;
                }
                _ => {
                    self.now = self.now.max(until);
                    break;
                }
            }
        }
        Ok(Some(std::mem::take(&mut self.finished)))
    }

    /// Instant of the next scheduled event, if any.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.events.peek_time()
    }

    pub fn events_processed(&self) -> u64 {
        self.events.popped()
    }

    // ------------------------------------------------------------ observation

    /// Start a packet capture (capture/mod.rs) into the output `open` makes
    /// of the spec's path, once the spec is valid; returns its id.
    pub fn capture_start(
        &mut self,
        spec_json: &str,
        open: impl FnOnce(&str) -> std::io::Result<Output>,
    ) -> Result<u32> {
        let spec: CaptureSpec = serde_json::from_str(spec_json)
            .map_err(|e| Error::Schema(format!("capture spec: {e}")))?;
        self.obs.capture_start(&self.topo, spec, open)
    }

    /// Close a capture (idempotent): `{"captured", "matched", "error"}`.
    pub fn capture_stop(&mut self, id: u32) -> Result<Value> {
        self.obs.capture_stop(id)
    }

    /// The capture reached its packet count (`-c`) and closed its file.
    pub fn capture_done(&self, id: u32) -> bool {
        self.obs.capture_done(id)
    }

    /// Captures that reached their count since the last call; `run` returns
    /// early at the instant one does.
    pub fn take_finished_captures(&mut self) -> Vec<u32> {
        self.obs.take_finished()
    }

    /// Trace every change of `dev`'s root qdisc (capture/trace.rs) into the
    /// output `open` makes of `path`, at most one record per
    /// `min_interval_ns` (0 = every change).
    pub fn trace_start(
        &mut self,
        dev: &str,
        path: &str,
        min_interval_ns: u64,
        open: impl FnOnce(&str) -> std::io::Result<Output>,
    ) -> Result<u32> {
        let drops = self
            .topo
            .iface_by_name(dev)
            .map_or(0, |i| self.ifaces[i].drops.total_packets());
        self.obs
            .trace_start(&self.topo, dev, path, min_interval_ns, drops, open)
    }

    /// Close a queue trace: `{"counts": {...} | null, "error": str | null}`.
    pub fn trace_stop(&mut self, id: u32) -> Result<Value> {
        self.obs.trace_stop(id)
    }

    // ------------------------------------------------------------ dispatch

    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::WireArrival(i) => self.wire_arrival(i as usize),
            Event::LinkFree(i) => {
                let ifc = &mut self.ifaces[i as usize];
                ifc.link_free_pending = false;
                // TX completion: the sockets get the sent packets' memory back
                for r in ifc.tx_releases.drain(..) {
                    self.arena.push_tsq(r);
                }
                self.kick(i as usize);
            }
            Event::Watchdog(i) => {
                let ifc = &mut self.ifaces[i as usize];
                if ifc.watchdog_at == Some(self.now) {
                    ifc.watchdog_at = None;
                    self.kick(i as usize);
                }
            }
            Event::AppTimer(a) => {
                let slot = &mut self.apps[a as usize];
                if slot.scheduled == Some(self.now) {
                    slot.scheduled = None;
                }
                if slot.timer_at.is_some_and(|t| t <= self.now) {
                    self.with_app(a, |app, ctx| app.handle_timeout(ctx));
                }
                self.after_app(a);
            }
            Event::HostTx(n) => self.host_tx_done(n as usize),
            Event::NodeTimer(n) => {
                if self.nodes[n as usize].timer_at == Some(self.now) {
                    self.nodes[n as usize].timer_at = None;
                    self.arp_timer(n as usize);
                }
            }
        }
    }

    /// Start the per-instant counters afresh when time moved.
    fn at_instant(&mut self) {
        if self.instant != self.now {
            self.instant = self.now;
            self.instant_packets = 0;
            self.instant_work = 0;
        }
    }

    /// Count one unit of work at the current instant; true once the
    /// instant had more than `MAX_WORK_PER_INSTANT`.
    fn work_at_instant(&mut self) -> bool {
        self.at_instant();
        self.instant_work += 1;
        self.instant_work > self.work_cap
    }

    /// Declare the run stuck at this instant because of `who` (the first
    /// reason found is kept).
    fn stuck_with(&mut self, who: String) {
        if self.stuck.is_none() {
            self.stuck = Some(format!(
                "simulated time stopped advancing at {}: more than {} events in that one instant, \
                 the last of them in {who}. A model that loops without time passing is a bug: \
                 please report it with the scenario",
                self.now, self.work_cap
            ));
        }
    }

    fn check_stuck(&mut self) -> Result<()> {
        match self.stuck.take() {
            Some(why) => Err(Error::Stalled(why)),
            None => Ok(()),
        }
    }

    /// The part of the network an event belongs to, in the user's names.
    fn component(&self, ev: Event) -> String {
        let t = &self.topo;
        match ev {
            Event::WireArrival(i) => format!("the link out of {}", t.iface_names[i as usize]),
            Event::LinkFree(i) | Event::Watchdog(i) => self.qdisc_component(i as usize),
            Event::AppTimer(a) => {
                let slot = &self.apps[a as usize];
                format!(
                    "application {a} ({}) on {}",
                    slot.app.kind(),
                    t.node_names[slot.node]
                )
            }
            Event::HostTx(n) => format!("the network stack of {}", t.node_names[n as usize]),
            Event::NodeTimer(n) => format!("the ARP timer of {}", t.node_names[n as usize]),
        }
    }

    /// `the qdiscs of DEV (root KIND H:)`.
    fn qdisc_component(&self, iface: IfaceId) -> String {
        let root = self.ifaces[iface].tree.show().into_iter().next();
        let what = root.map_or(String::new(), |q| {
            format!(" (root {} {:x}:)", q.kind, q.handle)
        });
        format!("the qdiscs of {}{what}", self.topo.iface_names[iface])
    }

    /// Process the zero-delay arrivals of this instant, each against
    /// `budget`; false when the budget ran out first.
    fn drain_pending(&mut self, budget: &mut u64) -> Result<bool> {
        self.at_instant();
        while let Some((iface, pid)) = self.pending.pop_front() {
            if *budget == 0 {
                self.pending.push_front((iface, pid));
                return Ok(false);
            }
            *budget -= 1;
            self.instant_packets += 1;
            if self.instant_packets > MAX_PACKETS_PER_INSTANT {
                self.pending.push_front((iface, pid));
                return Err(Error::Stalled(format!(
                    "simulated time stopped advancing at {}: {} packets crossed the network in that one \
                     instant. A TCP flow on a path with neither delay nor a rate limit (plain veths) has no \
                     round-trip time and moves data without time passing; give the path a delay or a rate, \
                     e.g. tc qdisc add dev s1-eth2 root netem delay 1ms",
                    self.now, MAX_PACKETS_PER_INSTANT
                )));
            }
            self.receive(iface, pid);
            self.settle_tsq();
            if self.stuck.is_some() {
                break;
            }
        }
        Ok(true)
    }

    fn with_app<R>(&mut self, id: u32, f: impl FnOnce(&mut App, &mut AppCtx) -> R) -> R {
        let slot = &mut self.apps[id as usize];
        let gso_max_size = node_gso_max_size(&self.topo, &self.ifaces, slot.node);
        let fq_pacing = node_fq_pacing(&self.topo, &self.ifaces, slot.node);
        let tsq = node_tsq(&self.topo, &self.ifaces, slot.node);
        let node = &mut self.nodes[slot.node];
        let mut ctx = AppCtx {
            now: self.now,
            id,
            addr: node.addr,
            gso_max_size,
            fq_pacing,
            tsq,
            out: &mut self.out_buf,
            sockets: &mut node.sockets,
            iperf: &mut self.iperf,
            rr: &mut self.rr,
            qdiscs: &self.ifaces,
        };
        f(&mut slot.app, &mut ctx)
    }

    /// TCP Small Queues (docs/semantics/tcp.md §6.4): tell the sockets what
    /// their hosts gave back since the last call (`tcp_wfree`), each
    /// application its own releases in order, then let them send; what they
    /// send may free more, so until none is left. Linux runs the TSQ handlers
    /// from a BH work item after the qdisc run that freed the skbs: here after
    /// the event or arrival that did.
    fn settle_tsq(&mut self) {
        while self.arena.has_tsq() {
            let mut batch = self.arena.take_tsq();
            batch.sort_by_key(|r| r.flow);
            let mut i = 0;
            while i < batch.len() {
                let flow = batch[i].flow;
                let n = batch[i..].iter().take_while(|r| r.flow == flow).count();
                if (flow as usize) < self.apps.len() {
                    let part = &batch[i..i + n];
                    self.with_app(flow, |app, ctx| app.tsq_release(ctx, part));
                    self.after_app(flow);
                }
                i += n;
            }
            self.arena.restore_tsq_buffer(batch);
            if self.work_at_instant() {
                self.stuck_with("TCP Small Queues".to_string());
                return;
            }
        }
    }

    /// Send what the application queued, re-arm its timer, note completion.
    fn after_app(&mut self, id: u32) {
        let node = self.apps[id as usize].node;
        let mut out = std::mem::take(&mut self.out_buf);
        for p in out.drain(..) {
            self.nodes[node].mib.on_originate(&p);
            if p.flow != Packet::NO_FLOW {
                let f = &mut self.flows[p.flow as usize];
                f.sent_packets += p.segs() as u64;
                f.sent_bytes += p.len as u64;
            }
            let pid = self.arena.alloc(Packet { local: true, ..p });
            self.host_send(node, pid);
        }
        self.out_buf = out;
        let slot = &mut self.apps[id as usize];
        slot.timer_at = slot.app.poll_timeout(&self.nodes[node].sockets);
        if let Some(t) = slot.timer_at.map(|t| t.max(self.now)) {
            if slot.scheduled.is_none_or(|s| t < s) {
                slot.scheduled = Some(t);
                self.events.schedule(t, Event::AppTimer(id));
            }
        }
        if slot.app.is_finished() && !slot.reported {
            slot.reported = true;
            self.finished.push(id);
        }
    }

    // ------------------------------------------------------------ IP layer

    fn node_drop(&mut self, node: NodeId, pid: PacketId, reason: DropReason) {
        let len = self.arena.len_of(pid);
        let segs = self.arena.segs_of(pid);
        self.nodes[node].drops.count(reason, len, segs);
        self.arena.free(pid);
    }

    /// A host's stack sends `pid` once its CPU has spent the packet's cost
    /// on it (host.rs); other nodes send at once. The common case — a veth
    /// without a qdisc towards a resolved neighbour — needs no event: the
    /// packet goes on the wire now, departing when the CPU is done.
    fn host_send(&mut self, node: NodeId, pid: PacketId) {
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
    fn host_tx_done(&mut self, node: NodeId) {
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
    /// reply also wakes the sleeping ping. Only packets for the host pay.
    fn host_rx_done(&mut self, peer: IfaceId, pid: PacketId, at: SimTime) -> SimTime {
        let cost = self.options.host_cost;
        let node = self.topo.iface_node[peer];
        let p = self.arena.get(pid);
        if cost.is_zero()
            || self.nodes[node].kind != NodeKind::Host
            || p.proto == Proto::Arp
            || !self.topo.is_local(node, p.dst)
        {
            return at;
        }
        let mut t = cost.of(p.len);
        if matches!(p.payload, Payload::Echo { reply: true, .. }) {
            t = t + SimDuration(cost.wakeup_ns);
        }
        let n = &mut self.nodes[node];
        n.rx_free = n.rx_free.max(at) + t;
        n.rx_free
    }

    /// A node originates or forwards `pid`: route it, resolve the next hop,
    /// hand it to the out interface.
    fn send_from_node(&mut self, node: NodeId, pid: PacketId) {
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

    /// Hold a packet until its neighbour resolves; like Linux, drop the
    /// oldest held packets when the queue's byte budget is exceeded.
    fn arp_enqueue(&mut self, node: NodeId, i: usize, pid: PacketId) {
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

    fn send_arp(&mut self, node: NodeId, out: IfaceId, target: Ipv4, reply: bool) {
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

    fn arm_node_timer(&mut self, node: NodeId) {
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
    fn arp_timer(&mut self, node: NodeId) {
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
    fn neighbour_confirmed(&mut self, node: NodeId, addr: Ipv4, via: IfaceId) {
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

    /// A packet arrives on `iface` (of the receiving node) now.
    fn receive(&mut self, iface: IfaceId, pid: PacketId) {
        self.receive_at(iface, pid, self.now);
    }

    /// A packet that reached `iface` at `reached` (earlier than now when a
    /// host's receiving stack took time over it: tcpdump's timestamp) is
    /// handled now.
    fn receive_at(&mut self, iface: IfaceId, pid: PacketId, reached: SimTime) {
        if self.obs.captures_on(iface) {
            let t = reached.as_nanos();
            self.obs
                .capture(&mut self.topo, iface, t, self.arena.get(pid));
        }
        if self.ifaces[iface].down {
            return self.link_down_drop(iface, pid);
        }
        let ifc = &mut self.ifaces[iface];
        ifc.rx_packets += 1;
        ifc.rx_bytes += self.arena.len_of(pid) as u64;
        if let Some(h) = ifc.hook.as_mut() {
            // sch_handle_ingress sees the frame without its Ethernet header
            let p = self.arena.get(pid);
            let len = p.len.saturating_sub(crate::packet::ETH_HEADER);
            match h.run(false, self.now, p, len) {
                Outcome::Pass => {}
                Outcome::Drop => return self.hook_drop(iface, pid),
                Outcome::Redirect(to) => return self.redirect(to, iface, false, pid),
            }
        }
        self.receive_past_hook(iface, pid);
    }

    /// The receive path after the ingress hook (also where an ifb returns
    /// a packet it took from the hook).
    fn receive_past_hook(&mut self, iface: IfaceId, pid: PacketId) {
        let node = self.topo.iface_node[iface];
        // a received packet has no socket of this node (`skb->sk` is NULL)
        // and no departure stamp (forwarding clears `skb->tstamp`)
        let rx = self.arena.get_mut(pid);
        rx.local = false;
        rx.tstamp = None;
        let p = *self.arena.get(pid);
        if p.proto == Proto::Arp && self.topo.is_local(node, p.dst) {
            self.delivered(pid);
            let is_reply = matches!(p.payload, Payload::Arp { reply: true });
            self.neighbour_confirmed(node, p.src, iface);
            if !is_reply {
                self.send_arp(node, iface, p.src, true);
            }
            return;
        }
        if self.nodes[node].kind != NodeKind::Switch {
            self.nodes[node].mib.on_ip_receive(&p);
        }
        match self.nodes[node].kind {
            NodeKind::Switch => self.send_from_node(node, pid),
            NodeKind::Host | NodeKind::Router if self.topo.is_local(node, p.dst) => {
                self.local_deliver(node, pid)
            }
            NodeKind::Host => self.node_drop(node, pid, DropReason::NoRoute),
            NodeKind::Router => {
                if p.ttl <= 1 {
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

    fn delivered(&mut self, pid: PacketId) {
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
    fn local_deliver(&mut self, node: NodeId, pid: PacketId) {
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
                        Some(Payload::Tcp(reset_for(&h, &p)))
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

    // ------------------------------------------------------------ interfaces

    fn iface_xmit(&mut self, iface: IfaceId, pid: PacketId) {
        if self.ifaces[iface].down {
            return self.link_down_drop(iface, pid);
        }
        if let Some(h) = self.ifaces[iface].hook.as_mut().filter(|h| h.has_egress()) {
            let p = self.arena.get(pid);
            match h.run(true, self.now, p, p.len) {
                Outcome::Pass => {}
                Outcome::Drop => return self.hook_drop(iface, pid),
                Outcome::Redirect(to) => return self.redirect(to, iface, true, pid),
            }
        }
        self.xmit_past_hook(iface, pid);
    }

    /// A downed device dropped `pid` (counted on the device, reason link_down).
    fn link_down_drop(&mut self, iface: IfaceId, pid: PacketId) {
        let len = self.arena.len_of(pid);
        let segs = self.arena.segs_of(pid);
        self.ifaces[iface]
            .drops
            .count(DropReason::LinkDown, len, segs);
        self.arena.free(pid);
    }

    /// A hook's filter dropped `pid` (counted on the device, reason tc_action).
    fn hook_drop(&mut self, iface: IfaceId, pid: PacketId) {
        let len = self.arena.len_of(pid);
        let segs = self.arena.segs_of(pid);
        self.ifaces[iface]
            .drops
            .count(DropReason::TcAction, len, segs);
        self.arena.free(pid);
    }

    /// `mirred egress redirect dev TO` from `from`'s hook: the packet enters
    /// TO's transmit path (act_mirred.c `tcf_mirred_act`). Only an ifb
    /// sends it back; a redirect to any other device transmits it there.
    fn redirect(&mut self, to: IfaceId, from: IfaceId, egress: bool, pid: PacketId) {
        if self.ifaces[to].ifb {
            let i = pid.0 as usize;
            if i >= self.ifb_from.len() {
                self.ifb_from.resize(i + 1, u32::MAX);
            }
            self.ifb_from[i] = ((from as u32) << 1) | egress as u32;
            // ifb_xmit counts what it is given as received
            let len = self.arena.len_of(pid) as u64;
            let ifc = &mut self.ifaces[to];
            ifc.rx_packets += 1;
            ifc.rx_bytes += len;
        }
        self.iface_xmit(to, pid);
    }

    /// `ifb_ri_tasklet`: the ifb's qdisc released `pid`; it goes on where
    /// it was going.
    fn ifb_return(&mut self, ifb: IfaceId, pid: PacketId) {
        let len = self.arena.len_of(pid) as u64;
        let ifc = &mut self.ifaces[ifb];
        ifc.tx_packets += 1;
        ifc.tx_bytes += len;
        let from = self
            .ifb_from
            .get(pid.0 as usize)
            .copied()
            .unwrap_or(u32::MAX);
        if from == u32::MAX {
            // sent to the ifb by nothing that redirects (cannot happen: no
            // route leads to an ifb); ifb.c drops such packets
            self.hook_drop(ifb, pid);
            return;
        }
        self.ifb_from[pid.0 as usize] = u32::MAX;
        let orig = (from >> 1) as IfaceId;
        if from & 1 == 1 {
            self.xmit_past_hook(orig, pid);
        } else {
            self.receive_past_hook(orig, pid);
        }
    }

    /// The transmit path after clsact's egress hook: the root qdisc.
    fn xmit_past_hook(&mut self, iface: IfaceId, pid: PacketId) {
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
    fn kick(&mut self, iface: IfaceId) {
        // packets the current restart has taken (0: the next dequeue starts a restart)
        let mut batch = 0u32;
        loop {
            let ifc = &mut self.ifaces[iface];
            if ifc.busy_until > self.now {
                if !ifc.link_free_pending {
                    ifc.link_free_pending = true;
                    self.events
                        .schedule(ifc.busy_until, Event::LinkFree(iface as u32));
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

    /// Transmit `pid` on `iface`. A device without TSO segments an aggregate
    /// first (`validate_xmit_skb` → `skb_gso_segment`), before the taps
    /// (tcpdump) see it.
    fn put_on_wire(&mut self, iface: IfaceId, pid: PacketId) {
        self.put_on_wire_at(iface, pid, self.now);
    }

    /// Transmit `pid` on `iface`, leaving at `depart` (now, or when the
    /// sending host's CPU is done with it; zero-rate links only then).
    fn put_on_wire_at(&mut self, iface: IfaceId, pid: PacketId, depart: SimTime) {
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

    fn wire_arrival(&mut self, iface: IfaceId) {
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

    // ------------------------------------------------------------ reporting

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

/// `sk_gso_max_size` for sockets of `node`: GSO needs every one of the
/// node's interfaces able to take aggregates (hosts have one; SIM: Linux
/// decides per route).
fn node_gso_max_size(topo: &Topology, ifaces: &[Iface], node: NodeId) -> u32 {
    topo.node_ifaces[node]
        .iter()
        .map(|&i| ifaces[i].offloads.gso_max_size())
        .min()
        .unwrap_or(0)
}

/// Is an `fq` with pacing on at the root of one of `node`'s interfaces? Its
/// sockets then leave pacing to it (tcp_output.c `tcp_needs_internal_pacing`;
/// SIM: hosts have one interface, Linux decides by the interface the packets
/// reach).
fn node_fq_pacing(topo: &Topology, ifaces: &[Iface], node: NodeId) -> bool {
    topo.node_ifaces[node].iter().any(|&i| {
        matches!(ifaces[i].tree.node_qdisc(0),
            Some(crate::qdisc::AnyQdisc::Fq(q)) if q.paces())
    })
}

/// Can `node`'s packets wait in it after its TCP sockets send them? Only then
/// do the sockets charge their skbs for TCP Small Queues (docs/semantics/tcp.md
/// §6.4): not behind a plain veth (`noqueue`: `veth_xmit` orphans the skb at
/// once) nor behind a netem that delays at the root (it orphans at enqueue).
fn node_tsq(topo: &Topology, ifaces: &[Iface], node: NodeId) -> bool {
    topo.node_ifaces[node].iter().any(|&i| {
        let ifc = &ifaces[i];
        if ifc.rate.bps() > 0 || ifc.hook.as_ref().is_some_and(|h| h.has_egress()) {
            return true;
        }
        match ifc.tree.node_qdisc(0) {
            _ if ifc.tree.is_noqueue() => false,
            Some(crate::qdisc::AnyQdisc::Netem(q)) => !q.orphans(),
            _ => true,
        }
    })
}

/// The interface's qdiscs as queue traces record them: everything the tree
/// holds (a root netem's own counters leave out its child's queue, which is
/// where a lab's bottleneck usually is) and all drops counted on the
/// interface, wherever in the tree they happen.
/// Does this `tc qdisc` request address the ingress queue (`ingress`,
/// `clsact`, `parent ffff:fff1`, or a delete of handle `ffff:`)?
fn is_hook_request(req: &TcRequest) -> bool {
    matches!(
        req.qdisc,
        Some(QdiscSpec::Ingress(_) | QdiscSpec::Clsact(_))
    ) || req.parent
        == Some(ParentSpec::Class {
            major: 0xffff,
            minor: 0xfff1,
        })
        || (req.verb == TcVerb::Delete && req.parent.is_none() && req.handle == Some(0xffff))
}

fn root_snap(ifc: &Iface) -> Snap {
    let (bytes, packets) = ifc.tree.held_backlog();
    Snap {
        bytes,
        packets,
        drops: ifc.drops.total_packets(),
    }
}

/// The RST a closed port sends back (RFC 793 "Reset Generation"): it takes
/// the offending segment's ACK as its sequence number, or, if there was no
/// ACK, acknowledges the segment (SYN and FIN count one each).
fn reset_for(h: &TcpHeader, p: &Packet) -> TcpHeader {
    use tcp_flags::{ACK, FIN, RST, SYN};
    if h.flags & ACK != 0 {
        return TcpHeader {
            seq: h.ack,
            flags: RST,
            ..TcpHeader::default()
        };
    }
    let payload = p
        .len
        .saturating_sub(crate::packet::ETH_HEADER + crate::packet::IPV4_HEADER + h.header_len());
    let len = payload + (h.flags & SYN != 0) as u32 + (h.flags & FIN != 0) as u32;
    TcpHeader {
        ack: h.seq.wrapping_add(len),
        flags: RST | ACK,
        ..TcpHeader::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// h1 -- s1 -- h2 on veths; `host_cost` as given.
    fn pair(host_cost: Value) -> Simulator {
        let cfg = json!({
            "seed": 1,
            "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                      {"name": "s1", "kind": "switch"}],
            "links": [
                {"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"}, "b": {"node": "s1", "intf": "s1-eth1"}},
                {"a": {"node": "s1", "intf": "s1-eth2"}, "b": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"}}
            ],
            "options": {"host_cost": host_cost},
        });
        Simulator::from_json(&cfg.to_string()).unwrap()
    }

    fn no_cost() -> Value {
        json!({"packet_ns": 0, "byte_ps": 0, "wakeup_ns": 0})
    }

    /// A cbr whose datagrams all fall on one nanosecond: 1-byte datagrams at
    /// u64::MAX bit/s are 4·10⁻¹⁰ ns apart.
    fn flood(sim: &mut Simulator) -> u32 {
        let spec = json!({"kind": "udp_source", "pattern": "cbr", "dst": "10.0.0.2", "port": 9,
                          "rate_bps": u64::MAX, "size": 1, "duration_ns": S});
        sim.start_app("h1", &spec.to_string()).unwrap()
    }

    #[test]
    fn work_without_time_passing_stops_naming_the_component() {
        let mut sim = pair(no_cost());
        sim.work_cap = 5_000;
        flood(&mut sim);
        let err = sim.run(SimTime::from_nanos(S)).unwrap_err();
        let Error::Stalled(msg) = err else {
            panic!("{err:?}")
        };
        assert!(
            msg.starts_with("simulated time stopped advancing at "),
            "{msg}"
        );
        assert!(
            msg.contains("more than 5000 events in that one instant"),
            "{msg}"
        );
        assert!(msg.contains("application 0 (udp_source) on h1"), "{msg}");
        assert_eq!(sim.now(), SimTime::ZERO);
    }

    #[test]
    fn a_qdisc_handing_out_packets_without_end_is_named() {
        // every packet a qdisc hands out counts: 300 through a pfifo at one
        // instant
        let mut sim = pair(no_cost());
        sim.work_cap = 100;
        let tc = json!({"verb": "add", "dev": "h1-eth0", "parent": "root", "handle": 1,
                        "qdisc": {"kind": "pfifo", "limit": 1000}});
        sim.tc(&serde_json::from_value(tc).unwrap()).unwrap();
        let ifc = sim.topo.iface_by_name("h1-eth0").unwrap();
        for _ in 0..300 {
            let p = Packet {
                src: Ipv4::parse("10.0.0.1").unwrap(),
                dst: Ipv4::parse("10.0.0.2").unwrap(),
                proto: Proto::Udp,
                tos: 0,
                ttl: 64,
                len: 100,
                src_port: 1,
                dst_port: 9,
                payload: Payload::Data,
                seq: 0,
                sent_at: SimTime::ZERO,
                flow: Packet::NO_FLOW,
                corrupt: false,
                local: false,
                gso_segs: 1,
                gso_size: 0,
                tsq: 0,
                tstamp: None,
            };
            let id = sim.arena.alloc(p);
            sim.iface_xmit(ifc, id);
        }
        let err = sim.check_stuck().unwrap_err().to_string();
        assert!(
            err.contains("in the qdiscs of h1-eth0 (root pfifo 1:)"),
            "{err}"
        );
    }

    /// A 1514-byte UDP frame from h1 to h2, as a socket of application 0
    /// would hand it to h1's stack (charged `tsq` bytes of send memory).
    fn frame(tsq: u32) -> Packet {
        Packet {
            src: Ipv4::parse("10.0.0.1").unwrap(),
            dst: Ipv4::parse("10.0.0.2").unwrap(),
            proto: Proto::Udp,
            tos: 0,
            ttl: 64,
            len: 1514,
            src_port: 40000,
            dst_port: 9,
            payload: Payload::Data,
            seq: 0,
            sent_at: SimTime::ZERO,
            flow: 0,
            corrupt: false,
            local: true,
            gso_segs: 1,
            gso_size: 0,
            tsq,
            tstamp: None,
        }
    }

    /// `tbf rate 1000000 burst 1514`: one frame of tokens, 1 514 000 ns per frame.
    fn one_frame_tbf(sim: &mut Simulator, dev: &str) {
        let tc = json!({"verb": "add", "dev": dev, "parent": "root", "handle": 1,
                        "qdisc": {"kind": "tbf", "rate": 1_000_000, "burst": 1514, "limit": 100_000}});
        sim.tc(&serde_json::from_value(tc).unwrap()).unwrap();
    }

    #[test]
    fn a_backlogged_tbf_on_a_veth_counts_two_overlimits_per_release_and_one_per_arrival() {
        // Ten frames handed to h1-eth0 at t = 0. The first takes the bucket's
        // one frame of tokens; its batch's extra dequeue and the next restart
        // find the queue empty (tbf counts nothing then). Frames 2..10 arrive
        // throttled: one failed dequeue each (9). The watchdog releases
        // frames 2..10 at k × 1.514 ms; after each of 2..9 the batch's extra
        // dequeue and the next restart fail (2 × 8), after the 10th the queue
        // is empty (0): 9 + 16 = 25 = 3N − 5 (2N − 3 = 17 with one dequeue
        // per kick, as the model had before).
        let mut sim = pair(no_cost());
        sim.options.arp = false;
        one_frame_tbf(&mut sim, "h1-eth0");
        let ifc = sim.topo.iface_by_name("h1-eth0").unwrap();
        for _ in 0..10 {
            let id = sim.arena.alloc(frame(0));
            sim.iface_xmit(ifc, id);
        }
        sim.run(SimTime::from_nanos(S)).unwrap();
        let tbf = sim.ifaces[ifc].tree.show()[0].stats;
        assert_eq!((tbf.packets, tbf.overlimits), (10, 25));
        assert_eq!(sim.ifaces[ifc].tx_packets, 10);
    }

    #[test]
    fn a_packets_send_memory_comes_back_when_it_leaves_the_host() {
        // TCP Small Queues (docs/semantics/tcp.md §6.4): a charged frame held
        // by h1's tbf keeps its charge until the tbf sends it; it is then given
        // back for the socket (application 0, port 40000, to 10.0.0.2:9).
        let mut sim = pair(no_cost());
        sim.options.arp = false;
        one_frame_tbf(&mut sim, "h1-eth0");
        let ifc = sim.topo.iface_by_name("h1-eth0").unwrap();
        for _ in 0..2 {
            let id = sim.arena.alloc(frame(2410));
            sim.iface_xmit(ifc, id);
        }
        // the first left at once, the second waits for tokens
        let released = sim.arena.take_tsq();
        let expect = TsqRelease {
            flow: 0,
            local_port: 40000,
            remote: (Ipv4::parse("10.0.0.2").unwrap(), 9),
            bytes: 2410,
        };
        assert_eq!(released, vec![expect]);
        // the watchdog's instant: the tokens for the second frame are there
        assert_eq!(
            sim.ifaces[ifc].watchdog_at,
            Some(SimTime::from_nanos(1_514_000))
        );
        sim.now = SimTime::from_nanos(1_513_999);
        sim.kick(ifc);
        assert_eq!(
            sim.arena.take_tsq(),
            vec![],
            "still held a nanosecond early"
        );
        sim.now = SimTime::from_nanos(1_514_000);
        sim.kick(ifc);
        assert_eq!(
            sim.arena.take_tsq(),
            vec![expect],
            "given back as it leaves"
        );
    }

    #[test]
    fn zero_delay_arrivals_count_against_a_stretch() {
        // every stretch of 64 units returns, however long time stands still
        let mut sim = pair(no_cost());
        flood(&mut sim);
        for _ in 0..50 {
            assert_eq!(sim.run_bounded(SimTime::from_nanos(S), 64).unwrap(), None);
            assert_eq!(sim.now(), SimTime::ZERO);
        }
        // 3200 units: events and arrivals, about 3 per datagram (its timer, two hops)
        let h2 = sim.topo.iface_by_name("h2-eth0").unwrap();
        let received = sim.ifaces[h2].rx_packets;
        assert!((500..=3200).contains(&received), "{received}");
    }

    #[test]
    fn a_host_sending_faster_than_its_stack_stops_the_run() {
        // 10⁸ datagrams/s against ~3·10⁵ a host processes: after about a
        // second of backlog (some 3·10⁵ packets) the run stops, naming h1
        let mut sim = pair(json!({}));
        let spec = json!({"kind": "udp_source", "pattern": "cbr", "dst": "10.0.0.2", "port": 9,
                          "rate_bps": 1_000_000_000_000u64, "size": 1250, "duration_ns": S});
        sim.start_app("h1", &spec.to_string()).unwrap();
        let err = sim.run(SimTime::from_nanos(S)).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "h1's applications send more packets than its network stack can process"
            ),
            "{err}"
        );
        assert!(err.contains("1 s behind"), "{err}");
        assert!(sim.now() < SimTime::from_nanos(S / 100), "{}", sim.now());
    }
}
