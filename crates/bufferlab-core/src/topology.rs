//! Nodes, interfaces and links, and shortest-path static routing.
//!
//! The Python layer applies Mininet's conventions (docs/semantics/qdiscs.md §9: host `hX`
//! has `hX-eth0` and 10.0.0.X; the k-th link of a switch is `sX-eth<k>`) and
//! hands the engine a fully named topology. Switches forward at layer 2 and
//! routers at layer 3; both are modelled as forwarding by destination address
//! along shortest paths (in hops; ties go to the link listed first), which is
//! what Mininet's learning switches and a statically routed Linux router do
//! on the tree-shaped lab topologies. Hosts never forward.
//!
//! Routes are computed per destination address when first asked for (one
//! breadth-first search gives every node's route to it) and cached, with a
//! bound on the cached entries: a table per node for every destination would
//! take memory in the square of the node count (10 000 hosts: 10⁸ routes),
//! while a run uses the routes to the destinations it sends to.

use crate::error::{Error, Result};
use crate::packet::Ipv4;
use rustc_hash::FxHashMap;
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NodeKind {
    Host,
    Switch,
    Router,
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    pub kind: NodeKind,
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointConfig {
    pub node: String,
    pub intf: String,
    #[serde(default)]
    pub ip: Option<Ipv4>,
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    pub a: EndpointConfig,
    pub b: EndpointConfig,
    /// Serialisation rate of the wire in bit/s; 0 = veth (instantaneous).
    #[serde(default)]
    pub rate_bps: u64,
    /// Propagation delay in ns (0 for veth).
    #[serde(default)]
    pub delay_ns: u64,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyConfig {
    pub nodes: Vec<NodeConfig>,
    pub links: Vec<LinkConfig>,
}

/// Index of a node / interface in the engine's tables.
pub type NodeId = usize;
pub type IfaceId = usize;

/// Where a node sends packets for one destination: out interface and the
/// address of the next layer-3 hop (the neighbour ARP must resolve).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    pub dst: Ipv4,
    pub out: IfaceId,
    pub next_hop: Ipv4,
}

/// Route entries (8 bytes each) the cache keeps at most: 128 MiB.
const MAX_ROUTE_ENTRIES: usize = 1 << 24;

/// One node's way towards a cached destination.
#[derive(Clone, Copy, Debug)]
struct Hop {
    /// out interface, `u32::MAX` when the destination is unreachable
    out: u32,
    next_hop: Ipv4,
}

const NO_ROUTE: Hop = Hop {
    out: u32::MAX,
    next_hop: Ipv4(0),
};

/// Every node's route to the destinations asked for lately; the least
/// recently used destination's table is reused when the bound is reached.
/// Caching changes no route, so results do not depend on the bound.
#[derive(Debug)]
struct RouteCache {
    /// destination address → its slot
    by_dst: FxHashMap<Ipv4, usize>,
    /// per slot: its destination, when it was last used
    slots: Vec<(Ipv4, u64)>,
    /// every slot's hop of each node, slot after slot (slot `s`, node `v` at
    /// `s * nodes + v`): one load from slot to hop, none through a pointer
    hops: Vec<Hop>,
    clock: u64,
    max_entries: usize,
}

impl RouteCache {
    fn new(max_entries: usize) -> Self {
        RouteCache {
            by_dst: FxHashMap::default(),
            slots: Vec::new(),
            hops: Vec::new(),
            clock: 0,
            max_entries,
        }
    }
}

/// The static part of the network: names, adjacency and routes.
#[derive(Debug)]
pub struct Topology {
    pub node_names: Vec<String>,
    pub node_kinds: Vec<NodeKind>,
    /// interfaces of each node, in link order
    pub node_ifaces: Vec<Vec<IfaceId>>,
    pub iface_names: Vec<String>,
    pub iface_node: Vec<NodeId>,
    pub iface_peer: Vec<IfaceId>,
    pub iface_ip: Vec<Option<Ipv4>>,
    /// per node: its addresses in interface order (none on a switch), so that
    /// "is this packet for me?" costs nothing per packet on a switch of many ports
    pub local_addrs: Vec<Vec<Ipv4>>,
    pub iface_rate_bps: Vec<u64>,
    pub iface_delay_ns: Vec<u64>,
    node_index: HashMap<String, NodeId>,
    iface_index: HashMap<String, IfaceId>,
    /// the interface that holds each address
    addr_iface: FxHashMap<Ipv4, IfaceId>,
    routes: RouteCache,
}

impl Topology {
    pub fn build(cfg: &TopologyConfig) -> Result<Topology> {
        let mut node_index: HashMap<&str, NodeId> = HashMap::new();
        for (i, n) in cfg.nodes.iter().enumerate() {
            if n.name.is_empty() {
                return Err(Error::Config("a node has an empty name".into()));
            }
            if node_index.insert(n.name.as_str(), i).is_some() {
                return Err(Error::Config(format!(
                    "node {:?} is declared twice",
                    n.name
                )));
            }
        }
        let mut t = Topology {
            node_names: cfg.nodes.iter().map(|n| n.name.clone()).collect(),
            node_kinds: cfg.nodes.iter().map(|n| n.kind).collect(),
            node_ifaces: vec![Vec::new(); cfg.nodes.len()],
            iface_names: Vec::new(),
            iface_node: Vec::new(),
            iface_peer: Vec::new(),
            iface_ip: Vec::new(),
            local_addrs: vec![Vec::new(); cfg.nodes.len()],
            iface_rate_bps: Vec::new(),
            iface_delay_ns: Vec::new(),
            node_index: HashMap::new(),
            iface_index: HashMap::new(),
            addr_iface: FxHashMap::default(),
            routes: RouteCache::new(MAX_ROUTE_ENTRIES),
        };
        let mut iface_index: HashMap<String, IfaceId> = HashMap::new();
        let mut addr_owner: HashMap<Ipv4, IfaceId> = HashMap::new();
        for (li, link) in cfg.links.iter().enumerate() {
            let mut ids = [0usize; 2];
            for (k, ep) in [&link.a, &link.b].into_iter().enumerate() {
                let node = *node_index.get(ep.node.as_str()).ok_or_else(|| {
                    Error::Config(format!("link {} names unknown node {:?}", li + 1, ep.node))
                })?;
                let id = t.iface_names.len();
                if iface_index.insert(ep.intf.clone(), id).is_some() {
                    return Err(Error::Config(format!(
                        "interface {:?} is declared twice",
                        ep.intf
                    )));
                }
                if let Some(ip) = ep.ip {
                    if t.node_kinds[node] == NodeKind::Switch {
                        return Err(Error::Config(format!(
                            "interface {:?} of switch {:?} cannot have an address (switches forward at layer 2)",
                            ep.intf, ep.node
                        )));
                    }
                    if let Some(other) = addr_owner.insert(ip, id) {
                        return Err(Error::Config(format!(
                            "address {ip} is given to both {:?} and {:?}",
                            t.iface_names[other], ep.intf
                        )));
                    }
                } else if t.node_kinds[node] != NodeKind::Switch {
                    return Err(Error::Config(format!(
                        "interface {:?} of {:?} needs an address",
                        ep.intf, ep.node
                    )));
                }
                t.iface_names.push(ep.intf.clone());
                t.iface_node.push(node);
                t.iface_ip.push(ep.ip);
                t.local_addrs[node].extend(ep.ip);
                t.iface_rate_bps.push(link.rate_bps);
                t.iface_delay_ns.push(link.delay_ns);
                t.iface_peer.push(usize::MAX);
                t.node_ifaces[node].push(id);
                ids[k] = id;
            }
            if t.iface_node[ids[0]] == t.iface_node[ids[1]] {
                return Err(Error::Config(format!(
                    "link {} connects {:?} to itself",
                    li + 1,
                    link.a.node
                )));
            }
            t.iface_peer[ids[0]] = ids[1];
            t.iface_peer[ids[1]] = ids[0];
        }
        t.node_index = node_index
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        t.iface_index = iface_index;
        t.addr_iface = addr_owner.into_iter().collect();
        Ok(t)
    }

    /// `ip link add NAME type ifb` on `node`: a device with no link and no
    /// address (routing never picks it: it is not among the node's
    /// interfaces). Its id follows the linked interfaces'.
    pub fn add_virtual(&mut self, node: NodeId, name: &str) -> Result<IfaceId> {
        // (the command layer checks the user's name against IFNAMSIZ; the
        // engine's name may carry the namespace, `h1:ifb0`)
        if name.is_empty() || name.contains(['/', ' ']) {
            return Err(Error::Config(format!(
                "\"{name}\" is not a valid device name"
            )));
        }
        if self.iface_index.contains_key(name) {
            return Err(Error::Config(format!(
                "RTNETLINK answers: File exists (device {name:?} already exists)"
            )));
        }
        let id = self.iface_names.len();
        self.iface_names.push(name.to_string());
        self.iface_node.push(node);
        self.iface_ip.push(None);
        self.iface_rate_bps.push(0);
        self.iface_delay_ns.push(0);
        self.iface_peer.push(id);
        self.iface_index.insert(name.to_string(), id);
        Ok(id)
    }

    pub fn iface_by_name(&self, name: &str) -> Option<IfaceId> {
        self.iface_index.get(name).copied()
    }

    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.node_index.get(name).copied()
    }

    /// Addresses of a node, in interface order.
    pub fn node_addrs(&self, node: NodeId) -> impl Iterator<Item = Ipv4> + '_ {
        self.local_addrs[node].iter().copied()
    }

    #[inline]
    pub fn is_local(&self, node: NodeId, addr: Ipv4) -> bool {
        self.local_addrs[node].contains(&addr)
    }

    /// Route of `node` towards `dst`, if `dst` is reachable (the owner of
    /// `dst` has none: it is local there).
    #[inline]
    pub fn route(&mut self, node: NodeId, dst: Ipv4) -> Option<Route> {
        let c = &mut self.routes;
        c.clock += 1;
        let slot = match c.by_dst.get(&dst) {
            Some(&i) => i,
            None => self.cache_routes_to(dst)?,
        };
        let n = self.node_names.len();
        let c = &mut self.routes;
        c.slots[slot].1 = c.clock;
        let h = c.hops[slot * n + node];
        (h.out != u32::MAX).then_some(Route {
            dst,
            out: h.out as IfaceId,
            next_hop: h.next_hop,
        })
    }

    /// Compute every node's route to `dst` into a cache slot (the least
    /// recently used one once the cache is full); `None` if no interface
    /// has the address.
    fn cache_routes_to(&mut self, dst: Ipv4) -> Option<usize> {
        let dst_iface = *self.addr_iface.get(&dst)?;
        let n = self.node_names.len();
        let c = &mut self.routes;
        let max_slots = (c.max_entries / n.max(1)).max(1);
        let slot = if c.slots.len() < max_slots {
            c.slots.push((dst, 0));
            c.hops.resize(c.hops.len() + n, NO_ROUTE);
            c.slots.len() - 1
        } else {
            let (i, _) = c
                .slots
                .iter()
                .enumerate()
                .min_by_key(|(_, s)| s.1)
                .expect("at least one slot");
            c.by_dst.remove(&c.slots[i].0);
            c.slots[i].0 = dst;
            c.hops[i * n..(i + 1) * n].fill(NO_ROUTE);
            i
        };
        let mut hops = std::mem::take(&mut self.routes.hops);
        self.routes_to(dst_iface, &mut hops[slot * n..(slot + 1) * n]);
        let c = &mut self.routes;
        c.hops = hops;
        c.by_dst.insert(dst, slot);
        Some(slot)
    }

    /// Breadth-first search from the interface holding the destination back
    /// over the graph. Hosts are leaves: paths never transit a host.
    /// Neighbours are explored in interface (= link) order, so ties go to
    /// the first link. `hops` comes filled with `NO_ROUTE`.
    fn routes_to(&self, dst_iface: IfaceId, hops: &mut [Hop]) {
        let n = self.node_names.len();
        let dst = self.iface_ip[dst_iface].expect("an addressed interface");
        let dst_node = self.iface_node[dst_iface];
        // for each node, the interface leading towards dst and the first
        // layer-3 node's address on the way
        let mut visited = vec![false; n];
        let mut queue = VecDeque::new();
        visited[dst_node] = true;
        // The owner reaches itself locally; its neighbours reach it through
        // the link attached to `dst_iface` first, then other links.
        let mut order: Vec<IfaceId> = vec![dst_iface];
        order.extend(
            self.node_ifaces[dst_node]
                .iter()
                .copied()
                .filter(|&i| i != dst_iface),
        );
        for &i in &order {
            let peer = self.iface_peer[i];
            let pn = self.iface_node[peer];
            if !visited[pn] {
                visited[pn] = true;
                // next_hop seen from pn is the address on dst_node's side of the link
                let hop = self.iface_ip[i].unwrap_or(dst);
                hops[pn] = Hop {
                    out: peer as u32,
                    next_hop: hop,
                };
                queue.push_back((pn, hop));
            }
        }
        while let Some((node, hop_from_node)) = queue.pop_front() {
            if self.node_kinds[node] == NodeKind::Host {
                continue; // hosts do not forward
            }
            for &i in &self.node_ifaces[node] {
                let peer = self.iface_peer[i];
                let pn = self.iface_node[peer];
                if visited[pn] {
                    continue;
                }
                visited[pn] = true;
                // A switch is transparent: the next L3 hop stays the same.
                // A router is itself the next hop: its address on this link.
                let hop = match self.node_kinds[node] {
                    NodeKind::Switch => hop_from_node,
                    _ => self.iface_ip[i].unwrap_or(hop_from_node),
                };
                hops[pn] = Hop {
                    out: peer as u32,
                    next_hop: hop,
                };
                queue.push_back((pn, hop));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(node: &str, intf: &str, ip: Option<&str>) -> EndpointConfig {
        EndpointConfig {
            node: node.into(),
            intf: intf.into(),
            ip: ip.map(|s| Ipv4::parse(s).unwrap()),
        }
    }

    fn link(a: EndpointConfig, b: EndpointConfig) -> LinkConfig {
        LinkConfig {
            a,
            b,
            rate_bps: 0,
            delay_ns: 0,
        }
    }

    fn node(name: &str, kind: NodeKind) -> NodeConfig {
        NodeConfig {
            name: name.into(),
            kind,
        }
    }

    /// Lab 14: links [h1,s1] [s1,s2] [s2,h3] [h2,s1].
    fn lab14() -> Topology {
        let cfg = TopologyConfig {
            nodes: vec![
                node("h1", NodeKind::Host),
                node("h2", NodeKind::Host),
                node("h3", NodeKind::Host),
                node("s1", NodeKind::Switch),
                node("s2", NodeKind::Switch),
            ],
            links: vec![
                link(
                    ep("h1", "h1-eth0", Some("10.0.0.1")),
                    ep("s1", "s1-eth1", None),
                ),
                link(ep("s1", "s1-eth2", None), ep("s2", "s2-eth1", None)),
                link(
                    ep("s2", "s2-eth2", None),
                    ep("h3", "h3-eth0", Some("10.0.0.3")),
                ),
                link(
                    ep("h2", "h2-eth0", Some("10.0.0.2")),
                    ep("s1", "s1-eth3", None),
                ),
            ],
        };
        Topology::build(&cfg).unwrap()
    }

    #[test]
    fn lab14_routes_cross_s1_eth2() {
        let mut t = lab14();
        let h3 = Ipv4::parse("10.0.0.3").unwrap();
        let s1 = t.node_by_name("s1").unwrap();
        let r = t.route(s1, h3).unwrap();
        assert_eq!(t.iface_names[r.out], "s1-eth2");
        let h1 = t.node_by_name("h1").unwrap();
        let r = t.route(h1, h3).unwrap();
        assert_eq!(t.iface_names[r.out], "h1-eth0");
        assert_eq!(r.next_hop, h3, "switches are transparent for ARP");
        // back from h3 to h2 goes through s2-eth1 and s1-eth3
        let h2 = Ipv4::parse("10.0.0.2").unwrap();
        let s2 = t.node_by_name("s2").unwrap();
        let out = t.route(s2, h2).unwrap().out;
        assert_eq!(t.iface_names[out], "s2-eth1");
        let out = t.route(s1, h2).unwrap().out;
        assert_eq!(t.iface_names[out], "s1-eth3");
    }

    #[test]
    fn routes_are_cached_per_destination_within_the_bound() {
        // a star of 300 hosts: nothing is computed until asked for, one
        // table per destination used, and a table evicted from a full cache
        // comes back the same
        let n = 300;
        let mut nodes = vec![node("s1", NodeKind::Switch)];
        let mut links = vec![];
        for i in 1..=n {
            nodes.push(node(&format!("h{i}"), NodeKind::Host));
            links.push(link(
                ep(
                    &format!("h{i}"),
                    &format!("h{i}-eth0"),
                    Some(&format!("10.0.1.{}", i % 250)),
                ),
                ep("s1", &format!("s1-eth{i}"), None),
            ));
        }
        // (addresses must be unique: hosts above 249 go to 10.0.2.x)
        for (i, l) in links.iter_mut().enumerate().skip(249) {
            l.a.ip = Some(Ipv4::parse(&format!("10.0.2.{}", i - 248)).unwrap());
        }
        let mut t = Topology::build(&TopologyConfig { nodes, links }).unwrap();
        assert!(t.routes.slots.is_empty());
        let s1 = t.node_by_name("s1").unwrap();
        let h1 = t.node_by_name("h1").unwrap();
        let dst = |k: usize| t_ip(k);
        fn t_ip(k: usize) -> Ipv4 {
            if k < 250 {
                Ipv4::parse(&format!("10.0.1.{}", k % 250)).unwrap()
            } else {
                Ipv4::parse(&format!("10.0.2.{}", k - 249)).unwrap()
            }
        }
        let first: Vec<Option<Route>> = (1..=n).map(|k| t.route(s1, dst(k))).collect();
        assert_eq!(t.routes.slots.len(), n, "one table per destination");
        assert!(first.iter().all(|r| r.is_some()));
        assert_eq!(t.iface_names[first[9].unwrap().out], "s1-eth10");
        assert_eq!(t.route(h1, dst(2)).unwrap().next_hop, dst(2));
        assert_eq!(t.route(h1, Ipv4::parse("10.9.9.9").unwrap()), None);
        // a cache of 4 tables: the least recently used goes, answers stay
        t.routes = RouteCache::new(4 * (n + 1));
        for round in 0..3 {
            for k in [5, 6, 7, 8, 9, 5, 100, 1, 300] {
                assert_eq!(t.route(s1, dst(k)), first[k - 1], "round {round}");
                assert_eq!(
                    t.route(h1, dst(k)).map(|r| r.next_hop),
                    Some(dst(k)).filter(|_| k != 1)
                );
            }
        }
        assert_eq!(t.routes.slots.len(), 4);
        assert_eq!(t.routes.by_dst.len(), 4);
    }

    #[test]
    fn router_is_the_next_hop_of_its_hosts() {
        let cfg = TopologyConfig {
            nodes: vec![
                node("host1", NodeKind::Host),
                node("router", NodeKind::Router),
                node("host2", NodeKind::Host),
            ],
            links: vec![
                link(
                    ep("host1", "eth0", Some("192.168.24.21")),
                    ep("router", "eth2", Some("192.168.24.22")),
                ),
                link(
                    ep("router", "eth1", Some("192.168.25.22")),
                    ep("host2", "eth0b", Some("192.168.25.24")),
                ),
            ],
        };
        let mut t = Topology::build(&cfg).unwrap();
        let h1 = t.node_by_name("host1").unwrap();
        let r = t.route(h1, Ipv4::parse("192.168.25.24").unwrap()).unwrap();
        assert_eq!(r.next_hop, Ipv4::parse("192.168.24.22").unwrap());
        let router = t.node_by_name("router").unwrap();
        let r = t
            .route(router, Ipv4::parse("192.168.25.24").unwrap())
            .unwrap();
        assert_eq!(t.iface_names[r.out], "eth1");
        assert_eq!(r.next_hop, Ipv4::parse("192.168.25.24").unwrap());
    }

    #[test]
    fn bad_topologies_are_rejected_with_a_reason() {
        let dup = TopologyConfig {
            nodes: vec![node("h1", NodeKind::Host), node("h1", NodeKind::Host)],
            links: vec![],
        };
        assert!(matches!(Topology::build(&dup), Err(Error::Config(m)) if m.contains("twice")));
        let unknown = TopologyConfig {
            nodes: vec![node("h1", NodeKind::Host)],
            links: vec![link(
                ep("h1", "h1-eth0", Some("10.0.0.1")),
                ep("s9", "s9-eth1", None),
            )],
        };
        assert!(matches!(Topology::build(&unknown), Err(Error::Config(m)) if m.contains("s9")));
        let no_ip = TopologyConfig {
            nodes: vec![node("h1", NodeKind::Host), node("s1", NodeKind::Switch)],
            links: vec![link(ep("h1", "h1-eth0", None), ep("s1", "s1-eth1", None))],
        };
        assert!(
            matches!(Topology::build(&no_ip), Err(Error::Config(m)) if m.contains("needs an address"))
        );
    }
}
