//! Size: the `Copy` packet record, its TCP header and the arena that recycles and
//! segments it change together (a field of one shows in the others); one data structure.
//!
//! Packets as small `Copy` records in an arena (no payload bytes: a payload
//! is a length). Handles (`PacketId`) are recycled through a free list, so the
//! hot path never allocates per packet (docs/internals.md "Hot path").
//!
//! Lengths: `len` is the L2 frame length a qdisc sees (`qdisc_pkt_len`): IP
//! total length + 14 bytes of Ethernet header, no FCS (docs/semantics/qdiscs.md §1.2).

use crate::time::SimTime;
use serde::{Deserialize, Serialize};
use std::fmt;

pub const ETH_HEADER: u32 = 14;
pub const IPV4_HEADER: u32 = 20;
pub const UDP_HEADER: u32 = 8;
pub const ICMP_HEADER: u32 = 8;
/// TCP header with the timestamp option (20 + 12), as Linux sends by default.
pub const TCP_HEADER_TS: u32 = 32;
/// An ARP frame on Ethernet: 14 + 28 bytes.
pub const ARP_FRAME: u32 = 42;
/// `skb->truesize` of an skb beyond its payload bytes, x86-64: `SKB_TRUESIZE`
/// of a small head (320 bytes of headroom — `MAX_TCP_HEADER` — in the 640-byte
/// small-head cache, + the aligned `sk_buff` 256 + `skb_shared_info` 320). A
/// TCP skb of `len` payload bytes in page fragments, and each segment of a
/// split aggregate (`skb_segment` allocates the same head), charges
/// `len + SKB_TRUESIZE_OVERHEAD` to its socket's `sk_wmem_alloc` (TCP Small
/// Queues, docs/semantics/tcp.md §6.4).
pub const SKB_TRUESIZE_OVERHEAD: u32 = 896;

/// An IPv4 address in host byte order.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Ipv4(pub u32);

impl Ipv4 {
    pub const UNSPECIFIED: Ipv4 = Ipv4(0);

    pub fn parse(s: &str) -> Option<Ipv4> {
        let mut parts = s.split('.');
        let mut v: u32 = 0;
        for _ in 0..4 {
            let p: u8 = parts.next()?.parse().ok()?;
            v = (v << 8) | p as u32;
        }
        if parts.next().is_some() {
            return None;
        }
        Some(Ipv4(v))
    }
}

impl fmt::Display for Ipv4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0.to_be_bytes();
        write!(f, "{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
}

impl TryFrom<String> for Ipv4 {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        Ipv4::parse(&s).ok_or_else(|| format!("not an IPv4 address: {s:?}"))
    }
}

impl From<Ipv4> for String {
    fn from(a: Ipv4) -> String {
        a.to_string()
    }
}

/// In the engine's input schema an address is its dotted quad, as it crosses.
impl schemars::JsonSchema for Ipv4 {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Ipv4".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "format": "ipv4"})
    }
}

/// IP protocol numbers we model (ARP is not IP but travels the same way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Proto {
    Icmp,
    Tcp,
    Udp,
    Arp,
}

impl Proto {
    pub fn name(self) -> &'static str {
        match self {
            Proto::Icmp => "icmp",
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Arp => "arp",
        }
    }
}

/// What the packet carries, as far as the simulation needs to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// Application data (UDP datagram payload); `seq` and `sent_at` are the
    /// iperf3 payload header (sequence number, send timestamp).
    Data,
    /// ICMP echo request/reply with identifier and sequence.
    Echo { reply: bool, ident: u16, seq: u16 },
    /// ARP request/reply for `Packet::dst` (the address being resolved).
    Arp { reply: bool },
    /// A message on a modelled TCP control connection (iperf3's port-5201
    /// connection): `msg` is the message type, `conn` the connection id.
    Control { msg: u8, conn: u32 },
    /// A TCP reset answering a connection attempt to a closed port.
    Reset { conn: u32 },
    /// A segment of a modelled TCP connection (crates/bufferlab-core/src/tcp).
    Tcp(TcpHeader),
}

/// TCP flag bits (RFC 793, RFC 3168 for ECE/CWR). The ninth flag, AE
/// (RFC 9768 §3: the former NS bit, bit 8 of the 16-bit flags word), is
/// [`TcpHeader::ae`].
pub mod tcp_flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// The TCP header fields the model uses. Options are laid out as Linux does:
/// timestamps (12 bytes with padding) on every segment when enabled, SACK
/// blocks (4 + 8·n bytes, n ≤ 3 with timestamps) on ACKs, and on SYNs the MSS,
/// window-scale and SACK-permitted options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpHeader {
    pub seq: u32,
    pub ack: u32,
    /// `tcp_flags::*` bits
    pub flags: u8,
    /// raw 16-bit window field (scaled by the peer's shift except on SYNs)
    pub window: u16,
    /// timestamps option present
    pub ts: bool,
    pub tsval: u32,
    pub tsecr: u32,
    /// SACK blocks `[start, end)`, the first `sack_len` are valid
    pub sack: [(u32, u32); 3],
    pub sack_len: u8,
    /// SYN options: MSS (0 = absent), window scale (None = absent), SACK permitted
    pub mss: u16,
    pub wscale: Option<u8>,
    pub sack_ok: bool,
    /// AE flag (Accurate ECN, RFC 9768): the top bit of the 3-bit ACE
    /// field AE|CWR|ECE
    pub ae: bool,
    /// sent by an AccECN connection (`SKB_GSO_TCP_ACCECN`): segmenting an
    /// aggregate copies CWR (part of ACE) to every segment
    pub gso_accecn: bool,
    /// the AccECN option (kinds 172/174), if the segment carries one
    pub accecn: AccEcnOption,
}

/// `TCPOPT_ACCECN0` (RFC 9768 §3.2.3): fields in order EE0B, ECEB, EE1B.
pub const TCPOPT_ACCECN0: u8 = 172;
/// `TCPOPT_ACCECN1`: fields in order EE1B, ECEB, EE0B (what Linux sends).
pub const TCPOPT_ACCECN1: u8 = 174;

/// The AccECN option as carried: its kind and 0 to 3 24-bit byte counters
/// in wire order (`fields[0]` is the first on the wire), values as sent
/// (initial offsets included, already truncated to 24 bits).
/// `fields_len` 0xff = no option. `Copy`, 14 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccEcnOption {
    pub kind: u8,
    pub fields_len: u8,
    pub fields: [u32; 3],
}

impl Default for AccEcnOption {
    fn default() -> Self {
        AccEcnOption::NONE
    }
}

impl AccEcnOption {
    /// No option on the segment.
    pub const NONE: AccEcnOption = AccEcnOption {
        kind: 0,
        fields_len: 0xff,
        fields: [0; 3],
    };

    /// Whether the segment carries the option.
    #[inline]
    pub fn present(&self) -> bool {
        self.fields_len != 0xff
    }

    /// Number of 24-bit fields carried (0 when absent).
    #[inline]
    pub fn n_fields(&self) -> u32 {
        if self.present() {
            self.fields_len.min(3) as u32
        } else {
            0
        }
    }

    /// The option's length byte: 2 + 3 per field.
    #[inline]
    pub fn wire_len(&self) -> u8 {
        2 + 3 * self.n_fields() as u8
    }

    /// Bytes the option adds to the header once aligned as Linux's
    /// `tcp_options_fit_accecn` sizes it: it may take over up to
    /// `max_combine_saving` padding bytes of the other options (the NOP,NOP
    /// before a SACK block; on SYNs see [`TcpHeader::header_len`]).
    pub fn aligned_len(n_fields: u32, max_combine_saving: u32) -> u32 {
        let size = 2 + 3 * n_fields;
        if size & 3 > max_combine_saving {
            (size + 3) & !3
        } else {
            size & !3
        }
    }
}

impl TcpHeader {
    /// The reset answering this segment when no connection takes it
    /// (`tcp_v4_send_reset`, RFC 793 "Reset Generation"): an ACK's
    /// acknowledgment becomes the reset's sequence number; otherwise the
    /// reset acknowledges the segment (`payload_len` bytes plus SYN and FIN).
    pub fn reset_reply(&self, payload_len: u32) -> TcpHeader {
        use tcp_flags::{ACK, FIN, RST, SYN};
        if self.flags & ACK != 0 {
            return TcpHeader {
                seq: self.ack,
                flags: RST,
                ..TcpHeader::default()
            };
        }
        let len = payload_len + (self.flags & SYN != 0) as u32 + (self.flags & FIN != 0) as u32;
        TcpHeader {
            ack: self.seq.wrapping_add(len),
            flags: RST | ACK,
            ..TcpHeader::default()
        }
    }

    /// The ACE field (RFC 9768 §3.2.1): AE·4 + CWR·2 + ECE.
    #[inline]
    pub fn ace(&self) -> u8 {
        ((self.ae as u8) << 2)
            | ((self.flags & tcp_flags::CWR != 0) as u8) << 1
            | (self.flags & tcp_flags::ECE != 0) as u8
    }

    /// Set AE, CWR and ECE from a 3-bit ACE value.
    #[inline]
    pub fn set_ace(&mut self, ace: u8) {
        self.ae = ace & 4 != 0;
        self.flags &= !(tcp_flags::CWR | tcp_flags::ECE);
        if ace & 2 != 0 {
            self.flags |= tcp_flags::CWR;
        }
        if ace & 1 != 0 {
            self.flags |= tcp_flags::ECE;
        }
    }

    /// Padding bytes of a SYN's other options the AccECN option can take
    /// over (`tcp_synack_options_combine_saving`): 2 when SACK-permitted
    /// goes without timestamps (its NOP,NOP), else 1 with window scaling
    /// (the NOP before it), else 0.
    fn syn_combine_saving(&self) -> u32 {
        if self.sack_ok && !self.ts {
            2
        } else if self.wscale.is_some() {
            1
        } else {
            0
        }
    }

    /// Header length in bytes including options, as Linux lays them out
    /// (`tcp_options_write`).
    pub fn header_len(&self) -> u32 {
        let mut n = 20;
        if self.flags & tcp_flags::SYN != 0 {
            // MSS 4, SACK-permitted 2 (+ packed with TS), TS 10, NOP+wscale 4: 20 bytes with TS
            n += 4 + if self.ts {
                12
            } else if self.sack_ok {
                4
            } else {
                0
            };
            if self.wscale.is_some() {
                n += 4;
            }
            if self.accecn.present() {
                n += AccEcnOption::aligned_len(self.accecn.n_fields(), self.syn_combine_saving());
            }
            return n;
        }
        if self.ts {
            n += 12;
        }
        if self.accecn.present() {
            let saving = if self.sack_len > 0 { 2 } else { 0 };
            n += AccEcnOption::aligned_len(self.accecn.n_fields(), saving);
        }
        if self.sack_len > 0 {
            n += 4 + 8 * self.sack_len as u32;
        }
        n
    }
}

/// ECN codepoints in the low two bits of the TOS byte (RFC 3168).
pub const ECN_MASK: u8 = 0b11;
pub const ECN_CE: u8 = 0b11;
/// ECT(0) (RFC 3168), the classic ECN-capable codepoint.
pub const ECN_ECT0: u8 = 0b10;
/// ECT(1) (RFC 9331): the L4S identifier.
pub const ECN_ECT1: u8 = 0b01;

/// One packet. `Copy`, a few dozen bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub src: Ipv4,
    pub dst: Ipv4,
    pub proto: Proto,
    /// Full TOS / DS byte (DSCP << 2 | ECN).
    pub tos: u8,
    pub ttl: u8,
    /// L2 frame length in bytes (see module doc).
    pub len: u32,
    pub src_port: u16,
    pub dst_port: u16,
    pub payload: Payload,
    /// Application sequence number (iperf3 UDP counter, 1-based).
    pub seq: u64,
    /// Application send timestamp (iperf3 UDP header, ICMP echo data).
    pub sent_at: SimTime,
    /// Flow index for per-flow accounting (`u32::MAX` = not counted).
    pub flow: u32,
    /// netem flipped a bit: receivers discard the packet (bad checksum).
    pub corrupt: bool,
    /// Sent by a socket of the node whose interface it is on (`skb->sk` set):
    /// set when an application's packet enters its node, cleared when a node
    /// receives it (a forwarded packet has no socket, nor a reply the kernel
    /// builds from a request). `fq` keys its flows on it (net/sched/sch_fq.c
    /// `fq_classify`).
    pub local: bool,
    /// Segments in this record (`skb_shinfo(skb)->gso_segs`): 1 for a plain
    /// packet, up to ~45 for a TSO/GSO aggregate (docs/semantics/tcp.md §2.1).
    pub gso_segs: u16,
    /// Payload bytes per segment of an aggregate (`gso_size`, the MSS the
    /// sender cut it with; the last segment may be shorter); 0 when plain.
    pub gso_size: u16,
    /// Send memory (`skb->truesize`) this packet holds of the TCP socket that
    /// sent it while it is in the sender's host (TCP Small Queues,
    /// docs/semantics/tcp.md §6.4): given back when it leaves the host, is
    /// freed, or is orphaned by a delaying netem ([`PacketArena::release_tsq`]).
    /// 0 for everything else.
    pub tsq: u32,
    /// Earliest departure time (`skb->tstamp`, EDT): a TCP socket stamps
    /// every skb with its `tcp_wstamp_ns` (tcp_output.c `__tcp_transmit_skb`),
    /// later than the send instant when an fq paces it; fq holds the packet
    /// until then (sch_fq.c `fq_enqueue`). Cleared when a node receives the
    /// packet, as forwarding clears it. `None` for everything else.
    pub tstamp: Option<SimTime>,
}

/// A change of the send memory a TCP socket has in its host (TCP Small
/// Queues, docs/semantics/tcp.md §6.4): `bytes` > 0 given back (`tcp_wfree`:
/// the skb left the host or was freed), < 0 charged on top (the segments of a
/// split aggregate each have an skb's overhead, `tcp_gso_segment`). The socket
/// is the one that sent the packet: application `flow`, its `local_port`, the
/// peer `remote`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TsqRelease {
    pub flow: u32,
    pub local_port: u16,
    pub remote: (Ipv4, u16),
    pub bytes: i64,
}

impl Packet {
    pub const NO_FLOW: u32 = u32::MAX;

    /// Segments this record stands for (1 unless it is a GSO aggregate).
    #[inline]
    pub fn segs(&self) -> u32 {
        self.gso_segs.max(1) as u32
    }

    /// Is this record a GSO aggregate of more than one segment?
    #[inline]
    pub fn is_gso(&self) -> bool {
        self.gso_segs > 1
    }

    /// Header bytes every segment of this packet carries on the wire:
    /// Ethernet + IP + the transport header (TCP options included).
    pub fn header_len(&self) -> u32 {
        ETH_HEADER
            + IPV4_HEADER
            + match self.payload {
                Payload::Tcp(h) => h.header_len(),
                Payload::Control { .. } | Payload::Reset { .. } => TCP_HEADER_TS,
                Payload::Echo { .. } => ICMP_HEADER,
                Payload::Arp { .. } => ARP_FRAME - ETH_HEADER - IPV4_HEADER,
                Payload::Data => UDP_HEADER,
            }
    }

    /// `skb->len` of the packet as one frame: a single header and all the
    /// payload (what tcpdump shows for an aggregate on a veth with GSO).
    pub fn skb_len(&self) -> u32 {
        self.len - (self.segs() - 1) * self.header_len()
    }

    /// The segments a device would make of this packet
    /// (`skb_gso_segment`, net/ipv4/tcp_offload.c `tcp_gso_segment`): each
    /// carries the full header, its sequence number advances by `gso_size`,
    /// PSH and FIN stay on the last and CWR on the first (on every one for
    /// an AccECN connection, whose CWR is part of ACE). A plain packet
    /// yields itself.
    pub fn segments(&self) -> impl Iterator<Item = Packet> + '_ {
        let n = self.segs();
        let hdr_len = self.header_len();
        let size = self.gso_size as u32;
        let total = self.payload_len();
        (0..n).map(move |i| {
            let piece = if i + 1 == n { total - i * size } else { size };
            let mut s = *self;
            s.gso_segs = 1;
            s.gso_size = 0;
            s.tsq = 0;
            s.len = hdr_len + piece;
            if let Payload::Tcp(mut h) = self.payload {
                h.seq = h.seq.wrapping_add(i * size);
                if i + 1 < n {
                    h.flags &= !(tcp_flags::PSH | tcp_flags::FIN);
                }
                if i > 0 && !h.gso_accecn {
                    h.flags &= !tcp_flags::CWR;
                }
                s.payload = Payload::Tcp(h);
            }
            s
        })
    }

    /// Transport payload bytes over all segments (`len` counts one header
    /// per segment: docs/semantics/qdiscs.md §1.2 `len + (segs − 1) × header_len`).
    pub fn payload_len(&self) -> u32 {
        self.len.saturating_sub(self.segs() * self.header_len())
    }

    /// RFC 3168 marking primitive (docs/semantics/qdiscs.md §1.6): Not-ECT cannot be marked
    /// (the caller drops instead); ECT(0)/ECT(1) become CE; CE stays CE.
    pub fn set_ce(&mut self) -> bool {
        if self.proto == Proto::Arp || self.tos & ECN_MASK == 0 {
            return false;
        }
        self.tos |= ECN_CE;
        true
    }

    /// IP total length (the frame without its Ethernet header).
    pub fn ip_len(&self) -> u32 {
        self.len - ETH_HEADER
    }

    /// Bytes of UDP payload (0 for other protocols).
    pub fn udp_payload_len(&self) -> u32 {
        match self.proto {
            Proto::Udp => self
                .len
                .saturating_sub(ETH_HEADER + IPV4_HEADER + UDP_HEADER),
            _ => 0,
        }
    }
}

/// Handle of a packet in the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PacketId(pub u32);

/// How far behind its head a queue prefetches packet records.
pub const PREFETCH_AHEAD: usize = 4;

/// Packet storage with a free list. `live()` is the number of packets that
/// exist right now (queued, on a wire, or waiting for ARP), which the
/// conservation check compares with created − delivered − dropped.
#[derive(Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<u32>,
    created: u64,
    /// bytes of every packet ever allocated (a qdisc tree tells the netem
    /// duplicates made during one of its operations by the difference)
    created_bytes: u64,
    /// per slot: when the packet entered its current root qdisc, and its TOS
    /// byte then (queue traces: sojourn time, ECN marks made inside the qdisc)
    entered: Vec<RootStamp>,
    /// aggregates replaced by their segments (freed without being delivered
    /// or dropped: `created` = delivered + dropped + live + `segmented`)
    segmented: u64,
    /// segments of every packet ever made by a node (splitting an aggregate
    /// makes none; conservation in segments needs no `segmented` term)
    created_segments: u64,
    /// TSQ changes not yet told to their sockets (the engine takes them after
    /// each operation: [`PacketArena::take_tsq`])
    tsq: Vec<TsqRelease>,
}

/// See `PacketArena::stamp`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RootStamp {
    pub at: SimTime,
    pub tos: u8,
}

impl PacketArena {
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.created_bytes += p.len as u64;
        self.created_segments += p.segs() as u64;
        self.place(p)
    }

    /// Store `p` in a free slot (counted as a record, not as new bytes).
    fn place(&mut self, p: Packet) -> PacketId {
        self.created += 1;
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = p;
                PacketId(i)
            }
            None => {
                self.slots.push(p);
                PacketId(self.slots.len() as u32 - 1)
            }
        }
    }

    pub fn free(&mut self, id: PacketId) {
        debug_assert!(!self.free.contains(&id.0), "double free of {:?}", id);
        self.release_tsq(id);
        self.free.push(id.0);
    }

    /// `id` no longer holds its socket's send memory (it left the host, was
    /// freed, or a delaying netem orphaned it): note the release for the socket.
    #[inline]
    pub fn release_tsq(&mut self, id: PacketId) {
        if let Some(r) = self.take_charge(id) {
            self.tsq.push(r);
        }
    }

    /// Take `id`'s send-memory charge off it, as a release to be told to its
    /// socket later (a finite-rate device gives it back at TX completion).
    pub fn take_charge(&mut self, id: PacketId) -> Option<TsqRelease> {
        let p = &mut self.slots[id.0 as usize];
        if p.tsq == 0 {
            return None;
        }
        let bytes = p.tsq as i64;
        p.tsq = 0;
        Some(TsqRelease {
            flow: p.flow,
            local_port: p.src_port,
            remote: (p.dst, p.dst_port),
            bytes,
        })
    }

    /// Note a release taken earlier with [`PacketArena::take_charge`].
    pub fn push_tsq(&mut self, r: TsqRelease) {
        self.tsq.push(r);
    }

    /// Are TSQ changes waiting for their sockets?
    #[inline]
    pub fn has_tsq(&self) -> bool {
        !self.tsq.is_empty()
    }

    /// The TSQ changes so far, in order (the buffer is handed back empty
    /// with [`PacketArena::restore_tsq_buffer`] to keep its capacity).
    pub fn take_tsq(&mut self) -> Vec<TsqRelease> {
        std::mem::take(&mut self.tsq)
    }

    pub fn restore_tsq_buffer(&mut self, mut buf: Vec<TsqRelease>) {
        if self.tsq.is_empty() {
            buf.clear();
            self.tsq = buf;
        }
    }

    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id.0 as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id.0 as usize]
    }

    /// Ask the CPU to start loading `id`'s record. A deep queue's packets
    /// were stored long before they leave and are out of cache by then, and
    /// a parent reads the new head at once (tbf's next attempt): so a queue
    /// prefetches the packet [`PREFETCH_AHEAD`] places behind its head at
    /// each dequeue.
    #[inline]
    pub fn prefetch(&self, id: PacketId) {
        if let Some(p) = self.slots.get(id.0 as usize) {
            crate::prefetch::prefetch(p);
        }
    }

    #[inline]
    pub fn len_of(&self, id: PacketId) -> u32 {
        self.slots[id.0 as usize].len
    }

    /// Segments `id` stands for (1 unless it is a GSO aggregate).
    #[inline]
    pub fn segs_of(&self, id: PacketId) -> u32 {
        self.slots[id.0 as usize].segs()
    }

    pub fn live(&self) -> u64 {
        (self.slots.len() - self.free.len()) as u64
    }

    /// Segments of the live packets (O(slots): reports only).
    pub fn live_segments(&self) -> u64 {
        let mut free = vec![false; self.slots.len()];
        for &i in &self.free {
            free[i as usize] = true;
        }
        self.slots
            .iter()
            .zip(free)
            .filter(|(_, f)| !f)
            .map(|(p, _)| p.segs() as u64)
            .sum()
    }

    /// Bytes of the live packets (for tests: O(slots)).
    #[cfg(test)]
    pub fn live_bytes(&self) -> u64 {
        let free: std::collections::HashSet<u32> = self.free.iter().copied().collect();
        (0..self.slots.len() as u32)
            .filter(|i| !free.contains(i))
            .map(|i| self.slots[i as usize].len as u64)
            .sum()
    }

    /// Packet records ever allocated (clones made by netem's `duplicate`
    /// and the segments of split aggregates included).
    pub fn created(&self) -> u64 {
        self.created
    }

    /// Aggregates replaced by their segments so far.
    pub fn segmented(&self) -> u64 {
        self.segmented
    }

    /// Segments ever made by nodes and netem duplication.
    pub fn created_segments(&self) -> u64 {
        self.created_segments
    }

    /// Software segmentation: replace the aggregate `id` by its
    /// [`Packet::segments`], appended to `out` in sequence order, and free
    /// it. The stamp of the root qdisc the aggregate entered carries over.
    /// Bytes are unchanged (`len` already counted every segment's header).
    /// A segment of a TCP sender's aggregate charges its own truesize
    /// (`tcp_gso_segment` copies `tcp_wfree` to every segment and adds the
    /// difference to `sk_wmem_alloc`), so splitting costs the socket
    /// `(n − 1) × SKB_TRUESIZE_OVERHEAD` more send memory until the segments
    /// leave (docs/semantics/tcp.md §6.4).
    pub fn segment(&mut self, id: PacketId, out: &mut Vec<PacketId>) {
        let p = *self.get(id);
        let stamp = self.stamp_of(id);
        let hdr = p.header_len();
        let mut charged = 0i64;
        for mut s in p.segments() {
            if p.tsq > 0 {
                s.tsq = s.len - hdr + SKB_TRUESIZE_OVERHEAD;
                charged += s.tsq as i64;
            }
            let sid = self.place(s);
            self.stamp(sid, stamp.at, stamp.tos);
            out.push(sid);
        }
        if let Some(mut r) = self.take_charge(id) {
            // the aggregate's own charge moves to its segments: only the
            // difference reaches the socket
            r.bytes -= charged;
            if r.bytes != 0 {
                self.tsq.push(r);
            }
        }
        self.free(id);
        self.segmented += 1;
    }

    pub fn created_bytes(&self) -> u64 {
        self.created_bytes
    }

    /// Note that `id` enters an interface's root qdisc now (with TOS `tos`).
    #[inline]
    pub fn stamp(&mut self, id: PacketId, at: SimTime, tos: u8) {
        let i = id.0 as usize;
        if i >= self.entered.len() {
            self.entered
                .resize(self.slots.len().max(i + 1), RootStamp::default());
        }
        self.entered[i] = RootStamp { at, tos };
    }

    /// The last `stamp` of `id` (every packet in a qdisc has one).
    #[inline]
    pub fn stamp_of(&self, id: PacketId) -> RootStamp {
        self.entered.get(id.0 as usize).copied().unwrap_or_default()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 1514-byte UDP test frame from 10.0.0.1 to 10.0.0.2.
    pub(crate) fn frame(len: u32) -> Packet {
        Packet {
            src: Ipv4::parse("10.0.0.1").unwrap(),
            dst: Ipv4::parse("10.0.0.2").unwrap(),
            proto: Proto::Udp,
            tos: 0,
            ttl: 64,
            len,
            src_port: 40000,
            dst_port: 5201,
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
        }
    }

    #[test]
    fn ipv4_round_trip() {
        let a = Ipv4::parse("192.168.25.24").unwrap();
        assert_eq!(a.0, 0xC0A8_1918);
        assert_eq!(a.to_string(), "192.168.25.24");
        assert!(Ipv4::parse("10.0.0").is_none());
        assert!(Ipv4::parse("10.0.0.256").is_none());
        assert!(Ipv4::parse("10.0.0.1.2").is_none());
    }

    #[test]
    fn set_ce_marks_only_ect_packets() {
        let mut p = frame(1514);
        p.tos = 0x00;
        assert!(!p.set_ce());
        p.tos = 0x32; // AF12 + ECT(0), the CPM report's class 2
        assert!(p.set_ce());
        assert_eq!(p.tos, 0x33);
        assert!(p.set_ce(), "already CE counts as marked");
    }

    #[test]
    fn arena_recycles_slots_and_counts_live_packets() {
        let mut a = PacketArena::default();
        let x = a.alloc(frame(100));
        let y = a.alloc(frame(200));
        assert_eq!(a.live(), 2);
        a.free(x);
        assert_eq!(a.live(), 1);
        let z = a.alloc(frame(300));
        assert_eq!(z, x, "freed slot is reused");
        assert_eq!(a.len_of(y), 200);
        assert_eq!(a.len_of(z), 300);
        assert_eq!(a.created(), 3);
    }

    /// A TCP aggregate as a GSO sender hands it to IP: `segs` segments of
    /// `size` payload bytes, the last `last` bytes, one 66-byte header
    /// (14 + 20 + 20 + 12 with timestamps) counted per segment.
    pub(crate) fn tcp_aggregate(seq: u32, flags: u8, segs: u16, size: u16, last: u32) -> Packet {
        let mut p = frame(0);
        p.proto = Proto::Tcp;
        p.payload = Payload::Tcp(TcpHeader {
            seq,
            ack: 7,
            flags,
            window: 229,
            ts: true,
            tsval: 1,
            tsecr: 2,
            ..TcpHeader::default()
        });
        p.gso_segs = segs;
        p.gso_size = size;
        p.len = segs as u32 * 66 + (segs as u32 - 1) * size as u32 + last;
        p
    }

    #[test]
    fn aggregate_lengths_count_one_header_per_segment() {
        use tcp_flags::*;
        // 3 segments: 1448 + 1448 + 1000 payload → len = 3 × 66 + 3896 = 4094
        let p = tcp_aggregate(1000, ACK | PSH, 3, 1448, 1000);
        assert_eq!(p.len, 4094);
        assert_eq!((p.segs(), p.is_gso()), (3, true));
        assert_eq!(p.header_len(), 66);
        assert_eq!(p.payload_len(), 3896);
        // one frame with one header, as tcpdump shows it on a veth: 4094 − 2 × 66
        assert_eq!(p.skb_len(), 3962);
        assert_eq!(p.ip_len(), 4080);
        // 45 full segments (a 64 KB TSO skb): 45 × 1514 = 68130, payload 65160
        let big = tcp_aggregate(0, ACK, 45, 1448, 1448);
        assert_eq!(big.len, 68_130);
        assert_eq!(big.payload_len(), 65_160);
        assert_eq!(big.skb_len(), 65_226);
        // a plain segment: segs 1 (also when gso_segs is 0), no GSO
        let mut one = tcp_aggregate(0, ACK, 1, 0, 1448);
        assert_eq!(
            (one.len, one.segs(), one.is_gso(), one.payload_len()),
            (1514, 1, false, 1448)
        );
        one.gso_segs = 0;
        assert_eq!((one.segs(), one.skb_len()), (1, 1514));
    }

    #[test]
    fn segmenting_an_aggregate_splits_sequence_flags_and_bytes() {
        use tcp_flags::*;
        let mut a = PacketArena::default();
        let agg = tcp_aggregate(u32::MAX - 100, ACK | PSH | FIN | CWR, 3, 1448, 1000);
        let id = a.alloc(agg);
        a.stamp(id, SimTime::from_nanos(5_000), 0x02);
        assert_eq!(
            (a.created(), a.created_segments(), a.created_bytes()),
            (1, 3, 4094)
        );
        let mut out = Vec::new();
        a.segment(id, &mut out);
        assert_eq!(out.len(), 3);
        let segs: Vec<Packet> = out.iter().map(|&s| *a.get(s)).collect();
        // seq advances by gso_size (wrapping): s, s + 1448, s + 2896
        let seqs: Vec<u32> = segs
            .iter()
            .map(|p| match p.payload {
                Payload::Tcp(h) => h.seq,
                _ => panic!(),
            })
            .collect();
        assert_eq!(
            seqs,
            vec![u32::MAX - 100, (u32::MAX - 100).wrapping_add(1448), 2795]
        );
        let flags: Vec<u8> = segs
            .iter()
            .map(|p| match p.payload {
                Payload::Tcp(h) => h.flags,
                _ => panic!(),
            })
            .collect();
        // CWR only on the first, PSH and FIN only on the last
        assert_eq!(flags, vec![ACK | CWR, ACK, ACK | PSH | FIN]);
        // lengths: two full 1514-byte frames and a 66 + 1000 = 1066-byte tail
        let lens: Vec<u32> = segs.iter().map(|p| p.len).collect();
        assert_eq!(lens, vec![1514, 1514, 1066]);
        assert_eq!(lens.iter().sum::<u32>(), 4094, "bytes conserved");
        for p in &segs {
            assert_eq!((p.gso_segs, p.gso_size, p.segs()), (1, 0, 1));
            assert_eq!(
                (p.src, p.dst, p.flow, p.tos),
                (agg.src, agg.dst, agg.flow, agg.tos)
            );
            match p.payload {
                Payload::Tcp(h) => assert_eq!((h.ack, h.window, h.tsval), (7, 229, 1)),
                _ => panic!(),
            }
        }
        // the root stamp carries over to every segment
        for &s in &out {
            assert_eq!(
                a.stamp_of(s),
                RootStamp {
                    at: SimTime::from_nanos(5_000),
                    tos: 0x02
                }
            );
        }
        // records: 1 aggregate + 3 segments created, the aggregate freed as
        // `segmented` (created = live + segmented); segments and bytes unchanged
        assert_eq!((a.created(), a.live(), a.segmented()), (4, 3, 1));
        assert_eq!(a.created(), a.live() + a.segmented());
        assert_eq!((a.created_segments(), a.live_segments()), (3, 3));
        assert_eq!((a.created_bytes(), a.live_bytes()), (4094, 4094));
        // a full 45-segment aggregate: 45 frames of 1514
        let id = a.alloc(tcp_aggregate(0, ACK, 45, 1448, 1448));
        out.clear();
        a.segment(id, &mut out);
        assert_eq!(out.len(), 45);
        assert!(out.iter().all(|&s| a.len_of(s) == 1514));
        assert_eq!(a.segmented(), 2);
        assert_eq!(a.created(), 4 + 1 + 45);
    }

    #[test]
    fn segments_of_a_plain_packet_is_the_packet() {
        let p = frame(1514);
        let v: Vec<Packet> = p.segments().collect();
        assert_eq!(v, vec![p]);
    }

    #[test]
    fn split_aggregates_charge_each_segment_its_own_truesize() {
        use tcp_flags::*;
        // a socket's 3-segment skb, 1448 + 1448 + 1000 payload bytes, charged
        // 3896 + 896 = 4792; its segments charge 1448 + 896 = 2344 twice and
        // 1000 + 896 = 1896: 6584, so the split costs the socket 1792 more
        let mut a = PacketArena::default();
        let mut p = tcp_aggregate(1000, ACK | PSH, 3, 1448, 1000);
        p.flow = 4;
        p.tsq = 3896 + SKB_TRUESIZE_OVERHEAD;
        let id = a.alloc(p);
        let mut out = Vec::new();
        a.segment(id, &mut out);
        let charges: Vec<u32> = out.iter().map(|&s| a.get(s).tsq).collect();
        assert_eq!(charges, vec![2344, 2344, 1896]);
        let key = (p.flow, p.src_port, (p.dst, p.dst_port));
        let got: Vec<_> = a
            .take_tsq()
            .iter()
            .map(|r| ((r.flow, r.local_port, r.remote), r.bytes))
            .collect();
        assert_eq!(got, vec![(key, -1792)]);
        // each segment gives its part back when it leaves or is freed: once
        a.release_tsq(out[0]);
        a.release_tsq(out[0]);
        a.free(out[1]);
        let back: Vec<i64> = a.take_tsq().iter().map(|r| r.bytes).collect();
        assert_eq!(back, vec![2344, 2344]);
        // a packet that charged nothing gives nothing back
        let plain = a.alloc(frame(1514));
        a.free(plain);
        assert!(!a.has_tsq());
    }
}
