//! Applications on the simulator: start and stop them, their results, the
//! queries on a node's stack (`ss`, `nstat`), and the context an application
//! is lent to run in — its socket's route capabilities (GSO size, fq pacing,
//! TCP Small Queues) — with what it sends handed to its host's stack and its
//! timer re-armed. Follows net/socket.c (the system calls), net/core/sock.c
//! (`sk_setup_caps`), net/ipv4/tcp_output.c (`tcp_needs_internal_pacing`),
//! net/ipv4/inet_diag.c (`ss`) and net/ipv4/proc.c (`nstat`).

use super::iface::Iface;
use super::tsq::node_tsq;
use super::Simulator;
use crate::app::{App, AppCtx, AppSpec, ResultCtx};
use crate::error::{Error, Result};
use crate::packet::Packet;
use crate::rng::ComponentRng;
use crate::sched::Event;
use crate::time::SimTime;
use crate::topology::{NodeId, NodeKind, Topology};
use serde_json::Value;

/// An application and its timer bookkeeping. `timer_at` is when the
/// application wants to be woken; `scheduled` is the earliest `AppTimer`
/// entry known to be in the event queue. A timer that moves later (TCP's RTO
/// on nearly every ACK) costs nothing: the pending entry fires early, finds
/// nothing due, and re-arms. Only an earlier wake-up pushes a new entry.
pub(super) struct AppSlot {
    pub(super) app: App,
    pub(super) node: NodeId,
    pub(super) timer_at: Option<SimTime>,
    pub(super) scheduled: Option<SimTime>,
    pub(super) reported: bool,
}

/// What one application's packets did: sent by it (in segments and bytes), and
/// received by their destination's stack (the summary's `flows`).
#[derive(Clone, Copy, Default)]
pub(super) struct FlowStats {
    pub(super) sent_packets: u64,
    pub(super) sent_bytes: u64,
    pub(super) received_packets: u64,
    pub(super) received_bytes: u64,
}

impl Simulator {
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

    pub(super) fn with_app<R>(&mut self, id: u32, f: impl FnOnce(&mut App, &mut AppCtx) -> R) -> R {
        let n = self.apps[id as usize].node;
        let caps = if self.in_stretch {
            let caps = self.stretch_caps[n];
            debug_assert_eq!(caps, RouteCaps::of(&self.topo, &self.ifaces, n));
            caps
        } else {
            RouteCaps::of(&self.topo, &self.ifaces, n)
        };
        let slot = &mut self.apps[id as usize];
        let node = &mut self.nodes[slot.node];
        let mut ctx = AppCtx {
            now: self.now,
            id,
            addr: node.addr,
            gso_max_size: caps.gso_max_size,
            fq_pacing: caps.fq_pacing,
            tsq: caps.tsq,
            tcp_clock_phase_us: self.tcp_clock_phase_us,
            timing: &mut node.timing,
            max_tcp_header: self.options.max_tcp_header,
            out: &mut self.out_buf,
            sockets: &mut node.sockets,
            iperf: &mut self.iperf,
            rr: &mut self.rr,
            qdiscs: &self.ifaces,
        };
        f(&mut slot.app, &mut ctx)
    }

    /// Send what the application queued, re-arm its timer, note completion.
    pub(super) fn after_app(&mut self, id: u32) {
        let node = self.apps[id as usize].node;
        let mut out = std::mem::take(&mut self.out_buf);
        // (by reference: each record is copied once, into the arena)
        for p in &out {
            self.nodes[node].mib.on_originate(p);
            if p.flow != Packet::NO_FLOW {
                let f = &mut self.flows[p.flow as usize];
                f.sent_packets += p.segs() as u64;
                f.sent_bytes += p.len as u64;
            }
            let pid = self.arena.alloc(Packet { local: true, ..*p });
            self.host_send(node, pid);
        }
        out.clear();
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
}

/// The route capabilities a node's sockets get (`sk_setup_caps`). They
/// change only with `tc` and `ethtool` requests, which come between the
/// engine's stretches: each stretch takes them once for every node
/// ([`Simulator::take_route_caps`]) instead of once per packet an
/// application handles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct RouteCaps {
    gso_max_size: u32,
    fq_pacing: bool,
    tsq: bool,
}

impl RouteCaps {
    fn of(topo: &Topology, ifaces: &[Iface], node: NodeId) -> RouteCaps {
        RouteCaps {
            gso_max_size: node_gso_max_size(topo, ifaces, node),
            fq_pacing: node_fq_pacing(topo, ifaces, node),
            tsq: node_tsq(topo, ifaces, node),
        }
    }
}

impl Simulator {
    /// Every node's [`RouteCaps`], for the stretch that starts.
    pub(super) fn take_route_caps(&mut self) {
        let mut caps = std::mem::take(&mut self.stretch_caps);
        caps.clear();
        caps.extend((0..self.nodes.len()).map(|n| RouteCaps::of(&self.topo, &self.ifaces, n)));
        self.stretch_caps = caps;
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
