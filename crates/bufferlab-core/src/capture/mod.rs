//! Observation of a running simulation: packet captures (`tcpdump -w`,
//! `tshark -w`, the scenario's `[capture]` table) and exact queue traces
//! (`[trace] queues`, `plot_q.sh`). The only part of the engine that emits
//! bytes, and it opens nothing itself: the embedder hands over an [`Output`]
//! per file (the Python binding opens files link-safely and buffers them,
//! crates/bufferlab-py/src/output.rs). Records stream into it, nothing
//! accumulates in memory, and nothing here feeds back into the simulation
//! (same seed, same results, with or without observers).
//!
//! Capture points are Linux's: an outgoing packet is seen when it leaves the
//! interface's qdisc onto the wire (`dev_hard_start_xmit` → `dev_queue_xmit_nit`),
//! an incoming one when the interface receives it (`__netif_receive_skb`), so
//! a tcpdump on an interface sees both directions, and drops in the qdisc are
//! not in the file. Frame layout: [`frame`]; file formats: [`pcap`]; filters:
//! [`filter`]; queue traces: [`trace`].
//!
//! Ethernet addresses are synthetic and stable: interface `i` (in link order)
//! has `02:00:00:00:HI:LO` with HI:LO = i + 1. A frame carries the addresses of
//! the layer-3 hop crossing the segment (switches keep them): its sender's
//! and its next hop's interface, found from the routing tables.

pub mod filter;
pub mod frame;
pub mod pcap;
pub mod trace;

use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Payload};
use crate::topology::{IfaceId, NodeKind, Topology};
use filter::Filter;
use frame::Mac;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::HashMap;
use trace::QueueTrace;

/// A byte stream that observers write one file into. The embedder opens it
/// (given the spec's path) only once the request is otherwise valid, so a
/// refused request leaves no file behind; `flush` is called when the capture
/// or trace ends, and its error is reported like a write error. `Send +
/// Sync` because the simulator lives in a Python object run off the GIL.
pub type Output = Box<dyn std::io::Write + Send + Sync>;

/// tcpdump's default snapshot length (`MAXIMUM_SNAPLEN`, also for `-s 0`).
pub const DEFAULT_SNAPLEN: u32 = 262_144;

fn default_snaplen() -> u32 {
    DEFAULT_SNAPLEN
}

fn no_filter() -> Filter {
    Filter::True
}

/// What Python asks for (validated there; docs/internals.md "Observation").
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    pub dev: String,
    pub path: String,
    pub format: pcap::Format,
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// stop after this many packets (`-c`)
    #[serde(default)]
    pub count: Option<u64>,
    #[serde(default = "no_filter")]
    pub filter: Filter,
    /// write GSO aggregates as the segments a device would send
    /// (`[capture] segment_gso`, tcpdump/tshark `--segment-gso`); default:
    /// one large frame, as tcpdump shows them on a veth with GSO
    #[serde(default)]
    pub segment_gso: bool,
}

struct Sink {
    iface: IfaceId,
    writer: Option<pcap::Writer<Output>>,
    snaplen: u32,
    count: Option<u64>,
    filter: Filter,
    segment_gso: bool,
    captured: u64,
    matched: u64,
    error: Option<String>,
}

struct TraceSlot {
    iface: IfaceId,
    trace: Option<QueueTrace<Output>>,
    error: Option<String>,
}

/// Layer-2 segments (interfaces joined by links and switches) and the
/// interface owning each address on a segment.
struct MacMap {
    seg: Vec<usize>,
    on_seg: HashMap<(usize, u32), IfaceId>,
    cache: HashMap<(usize, u32, u32, u8), (Mac, Mac)>,
}

pub fn iface_mac(i: IfaceId) -> Mac {
    let n = i as u32 + 1;
    [0x02, 0, 0, 0, (n >> 8) as u8, n as u8]
}

impl MacMap {
    fn new(topo: &Topology) -> MacMap {
        let n = topo.iface_names.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        let join = |p: &mut Vec<usize>, a: usize, b: usize| {
            let (ra, rb) = (find(p, a), find(p, b));
            p[ra.max(rb)] = ra.min(rb);
        };
        for i in 0..n {
            join(&mut parent, i, topo.iface_peer[i]);
        }
        for (node, ifaces) in topo.node_ifaces.iter().enumerate() {
            if topo.node_kinds[node] == NodeKind::Switch {
                for w in ifaces.windows(2) {
                    join(&mut parent, w[0], w[1]);
                }
            }
        }
        let seg: Vec<usize> = (0..n).map(|i| find(&mut parent, i)).collect();
        let mut on_seg = HashMap::new();
        for (i, ip) in topo.iface_ip.iter().enumerate() {
            if let Some(ip) = ip {
                on_seg.entry((seg[i], ip.0)).or_insert(i);
            }
        }
        MacMap {
            seg,
            on_seg,
            cache: HashMap::new(),
        }
    }

    /// The layer-3 interface on `seg` that hands a packet from `src` to
    /// this segment: the source's own interface, or a router's whose route
    /// back to `src` leaves through another segment.
    fn sender(&self, topo: &mut Topology, seg: usize, src: Ipv4) -> Option<IfaceId> {
        if let Some(&i) = self.on_seg.get(&(seg, src.0)) {
            return Some(i);
        }
        (0..self.seg.len()).find(|&i| {
            self.seg[i] == seg
                && topo.iface_ip[i].is_some()
                && topo.node_kinds[topo.iface_node[i]] == NodeKind::Router
                && {
                    let node = topo.iface_node[i];
                    topo.route(node, src)
                        .is_some_and(|r| self.seg[r.out] != seg)
                }
        })
    }

    fn resolve(&mut self, topo: &mut Topology, iface: IfaceId, p: &Packet) -> (Mac, Mac) {
        let seg = self.seg[iface];
        let arp = match p.payload {
            Payload::Arp { reply } => 1 + reply as u8,
            _ => 0,
        };
        let key = (seg, p.src.0, p.dst.0, arp);
        if let Some(&m) = self.cache.get(&key) {
            return m;
        }
        let sender = self.sender(topo, seg, p.src);
        let src_mac = iface_mac(sender.unwrap_or(iface));
        let dst_mac = if arp == 1 {
            frame::BROADCAST
        } else {
            let direct = self.on_seg.get(&(seg, p.dst.0)).copied();
            let via = || {
                let s = sender?;
                let node = topo.iface_node[s];
                let r = topo.route(node, p.dst)?;
                self.on_seg.get(&(seg, r.next_hop.0)).copied()
            };
            direct
                .or_else(via)
                .map_or(iface_mac(topo.iface_peer[iface]), iface_mac)
        };
        self.cache.insert(key, (src_mac, dst_mac));
        (src_mac, dst_mac)
    }
}

/// All observers of one simulator.
#[derive(Default)]
pub struct Observer {
    sinks: Vec<Sink>,
    /// open captures per interface (ids into `sinks`)
    by_iface: Vec<Vec<u32>>,
    traces: Vec<TraceSlot>,
    /// the open trace of each interface
    trace_of: Vec<Option<u32>>,
    /// captures that reached their `-c` count since the last `take_finished`
    finished: Vec<u32>,
    macs: Option<MacMap>,
    buf: Vec<u8>,
}

fn io_err(path: &str, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        _ => e.to_string(),
    };
    format!("{path}: {why}")
}

impl Observer {
    pub fn new(ifaces: usize) -> Observer {
        Observer {
            by_iface: vec![Vec::new(); ifaces],
            trace_of: vec![None; ifaces],
            ..Observer::default()
        }
    }

    /// One more interface (an ifb added while running).
    pub fn add_iface(&mut self) {
        self.by_iface.push(Vec::new());
        self.trace_of.push(None);
        self.macs = None;
    }

    // ------------------------------------------------------------ captures

    /// Start a capture into the output `open` makes of `spec.path`.
    pub fn capture_start(
        &mut self,
        topo: &Topology,
        spec: CaptureSpec,
        open: impl FnOnce(&str) -> std::io::Result<Output>,
    ) -> Result<u32> {
        let iface = topo
            .iface_by_name(&spec.dev)
            .ok_or_else(|| Error::App(format!("{}: No such device exists", spec.dev)))?;
        let snaplen = if spec.snaplen == 0 {
            DEFAULT_SNAPLEN
        } else {
            spec.snaplen
        };
        let writer = open(&spec.path)
            .and_then(|out| pcap::Writer::create(out, spec.format, snaplen, &spec.dev))
            .map_err(|e| Error::App(io_err(&spec.path, &e)))?;
        let id = self.sinks.len() as u32;
        self.sinks.push(Sink {
            iface,
            writer: Some(writer),
            snaplen,
            count: spec.count.filter(|&c| c > 0),
            filter: spec.filter,
            segment_gso: spec.segment_gso,
            captured: 0,
            matched: 0,
            error: None,
        });
        self.by_iface[iface].push(id);
        if self.macs.is_none() {
            self.macs = Some(MacMap::new(topo));
        }
        Ok(id)
    }

    fn sink(&mut self, id: u32) -> Result<&mut Sink> {
        self.sinks
            .get_mut(id as usize)
            .ok_or_else(|| Error::App(format!("no capture with id {id}")))
    }

    /// Close the file (if still open) and report the counters.
    pub fn capture_stop(&mut self, id: u32) -> Result<Value> {
        self.close_sink(id)?;
        let s = self.sink(id)?;
        Ok(json!({"captured": s.captured, "matched": s.matched, "error": s.error}))
    }

    pub fn capture_done(&self, id: u32) -> bool {
        self.sinks
            .get(id as usize)
            .is_some_and(|s| s.writer.is_none())
    }

    fn close_sink(&mut self, id: u32) -> Result<()> {
        let s = self.sink(id)?;
        let iface = s.iface;
        if let Some(w) = s.writer.take() {
            if let Err(e) = w.finish() {
                s.error.get_or_insert_with(|| e.to_string());
            }
            self.by_iface[iface].retain(|&x| x != id);
        }
        Ok(())
    }

    pub fn has_finished(&self) -> bool {
        !self.finished.is_empty()
    }

    pub fn take_finished(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.finished)
    }

    #[inline]
    pub fn captures_on(&self, iface: IfaceId) -> bool {
        !self.by_iface[iface].is_empty()
    }

    /// `p` is on `iface` at `t_ns` (leaving it or arriving on it). Sinks
    /// that ask for segmented aggregates get each segment of one.
    pub fn capture(&mut self, topo: &mut Topology, iface: IfaceId, t_ns: u64, p: &Packet) {
        if !p.is_gso() {
            self.offer(topo, iface, t_ns, p, None);
            return;
        }
        self.offer(topo, iface, t_ns, p, Some(false));
        if self.by_iface[iface]
            .iter()
            .any(|&id| self.sinks[id as usize].segment_gso)
        {
            for seg in p.segments() {
                self.offer(topo, iface, t_ns, &seg, Some(true));
            }
        }
    }

    /// Record `p` in the sinks of `iface` (those whose `segment_gso` equals
    /// `segmented`, or all when `None`).
    fn offer(
        &mut self,
        topo: &mut Topology,
        iface: IfaceId,
        t_ns: u64,
        p: &Packet,
        segmented: Option<bool>,
    ) {
        let macs = self.macs.get_or_insert_with(|| MacMap::new(topo));
        let (src, dst) = macs.resolve(topo, iface, p);
        let orig_len = frame::write_headers(p, src, dst, &mut self.buf);
        let mut k = 0;
        while k < self.by_iface[iface].len() {
            let id = self.by_iface[iface][k];
            k += 1;
            let s = &mut self.sinks[id as usize];
            if segmented.is_some_and(|want| s.segment_gso != want) {
                continue;
            }
            if !s.filter.matches(p, &self.buf, orig_len) {
                continue;
            }
            s.matched += 1;
            let want = (s.snaplen as usize).min(orig_len);
            if self.buf.len() < want {
                self.buf.resize(want, 0); // payload zeros
            }
            if let Some(w) = s.writer.as_mut() {
                if let Err(e) = w.record(t_ns, &self.buf[..want], orig_len as u32) {
                    s.error = Some(e.to_string());
                    s.writer = None;
                    self.by_iface[iface].retain(|&x| x != id);
                    k -= 1;
                    continue;
                }
            }
            s.captured += 1;
            if s.count.is_some_and(|c| s.captured >= c) {
                let _ = self.close_sink(id);
                self.finished.push(id);
                k -= 1;
            }
        }
    }

    // ------------------------------------------------------------ queue traces

    pub fn trace_start(
        &mut self,
        topo: &Topology,
        dev: &str,
        path: &str,
        min_interval_ns: u64,
        drops_now: u64,
        open: impl FnOnce(&str) -> std::io::Result<Output>,
    ) -> Result<u32> {
        let iface = topo
            .iface_by_name(dev)
            .ok_or_else(|| Error::App(format!("Cannot find device \"{dev}\"")))?;
        if self.trace_of[iface].is_some() {
            return Err(Error::App(format!("{dev} is already traced")));
        }
        let out = open(path).map_err(|e| Error::App(io_err(path, &e)))?;
        let trace = QueueTrace::new(out, min_interval_ns, drops_now);
        let id = self.traces.len() as u32;
        self.traces.push(TraceSlot {
            iface,
            trace: Some(trace),
            error: None,
        });
        self.trace_of[iface] = Some(id);
        Ok(id)
    }

    pub fn trace_stop(&mut self, id: u32) -> Result<Value> {
        let slot = self
            .traces
            .get_mut(id as usize)
            .ok_or_else(|| Error::App(format!("no queue trace with id {id}")))?;
        let mut counts = json!(null);
        if let Some(t) = slot.trace.take() {
            counts = json!({"records": t.records, "enqueues": t.enqueues, "dequeues": t.dequeues});
            if let Err(e) = t.finish() {
                slot.error.get_or_insert_with(|| e.to_string());
            }
            self.trace_of[slot.iface] = None;
        }
        Ok(json!({"counts": counts, "error": slot.error}))
    }

    #[inline]
    pub fn traced(&self, iface: IfaceId) -> bool {
        self.trace_of[iface].is_some()
    }

    /// Run `f` on the interface's open trace; a write error closes the trace
    /// and is reported by `trace_stop`.
    pub fn with_trace(
        &mut self,
        iface: IfaceId,
        f: impl FnOnce(&mut QueueTrace<Output>) -> std::io::Result<()>,
    ) {
        let Some(id) = self.trace_of[iface] else {
            return;
        };
        let slot = &mut self.traces[id as usize];
        if let Some(t) = slot.trace.as_mut() {
            if let Err(e) = f(t) {
                slot.error = Some(e.to_string());
                slot.trace = None;
            }
        }
    }
}

/// Whether a packet's ECN field is CE.
#[inline]
pub fn is_ce(tos: u8) -> bool {
    tos & crate::packet::ECN_MASK == crate::packet::ECN_CE
}
