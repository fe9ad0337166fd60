//! A node's socket table, after smoltcp's `SocketSet`: the node owns its
//! sockets and applications hold handles to them. Three parts:
//!
//! - port bindings: (protocol, port) → owning application in a hash table
//!   (one lookup per delivered packet, whatever the number of sockets), the
//!   ports each application holds (released together when it ends), and the
//!   ephemeral port chooser (Linux's default range 32768–60999,
//!   `net.ipv4.ip_local_port_range`);
//! - TCP connections in slots ([`SocketHandle`]), found by the 4-tuple
//!   through a hash table as Linux's established hash does
//!   (`__inet_lookup_established`, net/ipv4/inet_hashtables.c). The slots
//!   are never iterated on the packet path, and the table lends one warm
//!   output buffer to the connection being worked on
//!   (`TcpEndpoint::swap_output_buffer`). Each socket remembers its owner
//!   and the owner's own index for it (the *tag*), so an application maps a
//!   segment to its record with one lookup. An application's timers stay
//!   its own (app/conns.rs), so the order in which things happen at one
//!   instant is the application's, as before the table existed;
//! - what `ss` shows of the bound ports that are not connections
//!   (listeners, UDP sockets), registered by the applications.
//!
//! A socket lives from its creation until its application removes it (a
//! finished `flows` connection) or ends (then every socket it owns is
//! *released*: no longer listed nor demultiplexed, its state kept for the
//! application's report). A connection's counters join the node's totals
//! ([`Sockets::tcp_mib`]) while it lives and once more, frozen, when it goes,
//! so each is counted exactly once. The query side (`ss`) is diag.rs.

pub mod diag;

use super::tcp::Conn;
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Proto, TsqRelease};
use crate::prefetch::prefetch;
use crate::rng::ComponentRng;
use crate::tcp::endpoint::{OutputBuffer, TcpTotals};
use crate::time::SimTime;
use rustc_hash::{FxHashMap, FxHashSet};

pub const EPHEMERAL_LOW: u16 = 32768;
pub const EPHEMERAL_HIGH: u16 = 60999;

/// `listen(fd, INT_MAX)`: the largest backlog an application can ask for
/// (iperf3's; bufferlab's own listeners ask the same). The kernel caps it at
/// `net.core.somaxconn` ([`diag::ListenerTcp`]).
pub const LISTEN_MAX: u32 = i32::MAX as u32;

/// What identifies a connection at one host: the peer's address and port
/// and the local port (the local address is the host's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub remote: (Ipv4, u16),
    pub local_port: u16,
}

impl ConnKey {
    /// The connection an arriving packet belongs to.
    pub fn of_arrival(p: &Packet) -> ConnKey {
        ConnKey {
            remote: (p.src, p.src_port),
            local_port: p.dst_port,
        }
    }

    /// The connection that sent the packet a TSQ release is about.
    pub fn of_release(r: &TsqRelease) -> ConnKey {
        ConnKey {
            remote: r.remote,
            local_port: r.local_port,
        }
    }
}

/// A TCP connection of the node's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SocketHandle(u32);

/// One TCP connection and who owns it.
pub struct TcpSocket {
    pub conn: Conn,
    /// the owning application's id
    pub owner: u32,
    /// the owner's index for this socket
    tag: u32,
    /// still in the table (false once released: kept for the owner's report)
    live: bool,
    /// an AF_INET6 socket talking IPv4 (`ss` shows `[::ffff:a.b.c.d]`)
    pub v6: bool,
    pub ident: SockIdent,
}

/// What `ss -e` shows of a socket's identity, its inode number (sockfs) and
/// its cookie (`sock_gen_cookie`): both are the socket's place in its node's
/// creation order, from 1. SIM: Linux's inode numbers are host-wide and its
/// cookies come from per-CPU batches, so only their shape compares.
pub type SockIdent = u32;

/// What `ss` shows of a bound port that is not a TCP connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortKind {
    /// a TCP listener (`listen(fd, backlog)`: the backlog asked for)
    Listen { backlog: u32 },
    /// a UDP socket, unconnected (`UNCONN`) or connected to `peer` (`ESTAB`)
    Udp { peer: Option<(Ipv4, u16)> },
}

/// A bound port as `ss` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortView {
    pub port: u16,
    pub owner: u32,
    pub kind: PortKind,
    /// bound to the IPv6 wildcard (dual-stack), listed as `*`
    pub v6: bool,
}

/// The sockets of one node (see the module doc).
pub struct Sockets {
    bound: FxHashMap<(Proto, u16), u32>,
    held: FxHashMap<u32, FxHashSet<(Proto, u16)>>,
    rng: ComponentRng,
    views: Vec<(PortView, SockIdent)>,
    tcp: Vec<Option<TcpSocket>>,
    free: Vec<u32>,
    index: FxHashMap<ConnKey, u32>,
    /// the socket last worked on holds the table's warm output buffer
    lent_to: Option<u32>,
    spare: OutputBuffer,
    /// counters of the connections that are gone
    gone: TcpTotals,
    /// sockets created so far (the last identity given)
    created: u32,
    /// `tsq_release`'s connection of each release, looked up once (kept
    /// between calls, so that a release allocates nothing)
    tsq_found: Vec<Option<SocketHandle>>,
}

impl Sockets {
    pub fn new(rng: ComponentRng) -> Self {
        Sockets {
            bound: FxHashMap::default(),
            held: FxHashMap::default(),
            rng,
            views: Vec::new(),
            tcp: Vec::new(),
            free: Vec::new(),
            index: FxHashMap::default(),
            lent_to: None,
            spare: OutputBuffer::default(),
            gone: TcpTotals::default(),
            created: 0,
            tsq_found: Vec::new(),
        }
    }

    fn next_ident(&mut self) -> SockIdent {
        self.created = self.created.wrapping_add(1);
        self.created
    }

    // ------------------------------------------------------------ ports

    #[inline]
    pub fn lookup(&self, proto: Proto, port: u16) -> Option<u32> {
        self.bound.get(&(proto, port)).copied()
    }

    pub fn is_bound(&self, proto: Proto, port: u16) -> bool {
        self.bound.contains_key(&(proto, port))
    }

    fn insert(&mut self, proto: Proto, port: u16, app: u32) {
        self.bound.insert((proto, port), app);
        self.held.entry(app).or_default().insert((proto, port));
    }

    pub fn bind(&mut self, proto: Proto, port: u16, app: u32) -> Result<()> {
        if self.is_bound(proto, port) {
            return Err(Error::App(format!(
                "{} port {port} is already in use",
                proto.name()
            )));
        }
        self.insert(proto, port, app);
        Ok(())
    }

    /// A free ephemeral port for `proto`, chosen at random like Linux does;
    /// an error once every port of the range is taken (connect's
    /// EADDRNOTAVAIL).
    pub fn bind_ephemeral(&mut self, proto: Proto, app: u32) -> Result<u16> {
        let range = (EPHEMERAL_HIGH - EPHEMERAL_LOW) as usize + 1;
        // the full check runs only once as many ports as the range are bound
        if self.bound.len() >= range
            && (EPHEMERAL_LOW..=EPHEMERAL_HIGH).all(|p| self.is_bound(proto, p))
        {
            return Err(Error::App(format!(
                "Cannot assign requested address: all {range} ephemeral {} ports \
                 ({EPHEMERAL_LOW}-{EPHEMERAL_HIGH}) of this host are in use",
                proto.name()
            )));
        }
        loop {
            let p = self
                .rng
                .range_u64(EPHEMERAL_LOW as u64, EPHEMERAL_HIGH as u64) as u16;
            if !self.is_bound(proto, p) {
                self.insert(proto, p, app);
                return Ok(p);
            }
        }
    }

    /// Bind `preferred` if free, else the next free port above it.
    pub fn bind_near(&mut self, proto: Proto, preferred: u16, app: u32) -> u16 {
        let mut p = preferred;
        while self.is_bound(proto, p) {
            p = if p >= EPHEMERAL_HIGH {
                EPHEMERAL_LOW
            } else {
                p + 1
            };
        }
        self.insert(proto, p, app);
        p
    }

    /// Release one port (a connection of a many-connection application ended).
    pub fn unbind(&mut self, proto: Proto, port: u16) {
        if let Some(app) = self.bound.remove(&(proto, port)) {
            if let Some(held) = self.held.get_mut(&app) {
                held.remove(&(proto, port));
            }
        }
    }

    /// Application `app` ended: its ports, their views and its connections go.
    pub fn unbind_all(&mut self, app: u32) {
        for key in self.held.remove(&app).unwrap_or_default() {
            self.bound.remove(&key);
        }
        self.views.retain(|(v, _)| v.owner != app);
        for i in 0..self.tcp.len() {
            if self.tcp[i]
                .as_ref()
                .is_some_and(|s| s.live && s.owner == app)
            {
                self.release(i as u32);
            }
        }
    }

    // ------------------------------------------------------------ views

    /// Show the bound `port` as `kind` (a listener, a UDP socket).
    pub fn add_view(&mut self, view: PortView) {
        let ident = self.next_ident();
        self.views.push((view, ident));
    }

    /// Forget the views of `owner`'s `port` that `pred` picks.
    pub fn remove_views(&mut self, owner: u32, port: u16, pred: impl Fn(&PortKind) -> bool) {
        self.views
            .retain(|(v, _)| !(v.owner == owner && v.port == port && pred(&v.kind)));
    }

    /// The views in registration order, with their identities.
    pub fn views(&self) -> impl Iterator<Item = (&PortView, SockIdent)> {
        self.views.iter().map(|(v, ident)| (v, *ident))
    }

    // ------------------------------------------------------------ TCP

    /// Add a connection owned by application `owner`; its tag starts at 0.
    pub fn add_tcp(&mut self, conn: Conn, owner: u32, v6: bool) -> SocketHandle {
        let key = ConnKey {
            remote: conn.remote,
            local_port: conn.local_port,
        };
        let ident = self.next_ident();
        let sock = Some(TcpSocket {
            conn,
            owner,
            tag: 0,
            live: true,
            v6,
            ident,
        });
        let slot = match self.free.pop() {
            Some(s) => {
                self.tcp[s as usize] = sock;
                s
            }
            None => {
                self.tcp.push(sock);
                (self.tcp.len() - 1) as u32
            }
        };
        self.index.insert(key, slot);
        SocketHandle(slot)
    }

    /// The connection a received segment belongs to; its memory starts
    /// coming into cache now.
    #[inline]
    pub fn find(&self, p: &Packet) -> Option<SocketHandle> {
        let slot = self.index.get(&ConnKey::of_arrival(p)).copied()?;
        self.prefetch(SocketHandle(slot));
        Some(SocketHandle(slot))
    }

    /// Ask for every cache line of a socket's slot at once ([`crate::prefetch`]).
    #[inline]
    pub fn prefetch(&self, h: SocketHandle) {
        prefetch(&self.tcp[h.0 as usize]);
    }

    fn socket(&self, h: SocketHandle) -> &TcpSocket {
        self.tcp[h.0 as usize].as_ref().expect("live socket handle")
    }

    fn socket_mut(&mut self, h: SocketHandle) -> &mut TcpSocket {
        self.tcp[h.0 as usize].as_mut().expect("live socket handle")
    }

    /// The owner's index for the socket.
    #[inline]
    pub fn tag(&self, h: SocketHandle) -> u32 {
        self.socket(h).tag
    }

    pub fn set_tag(&mut self, h: SocketHandle, tag: u32) {
        self.socket_mut(h).tag = tag;
    }

    /// The connection, to read.
    #[inline]
    pub fn tcp(&self, h: SocketHandle) -> &Conn {
        &self.socket(h).conn
    }

    /// The connection, to work on: it borrows the table's warm output buffer.
    #[inline]
    pub fn tcp_mut(&mut self, h: SocketHandle) -> &mut Conn {
        if self.lent_to != Some(h.0) {
            if let Some(prev) = self.lent_to.replace(h.0) {
                self.exchange_output_buffer(prev);
            }
            self.exchange_output_buffer(h.0);
        }
        &mut self.socket_mut(h).conn
    }

    /// Lend the table's output buffer to the socket in `slot`, or take it back.
    fn exchange_output_buffer(&mut self, slot: u32) {
        let s = self.tcp[slot as usize].as_mut().expect("live socket");
        s.conn.ep.swap_output_buffer(&mut self.spare);
    }

    /// Take the warm buffer back from `slot` if it holds it.
    fn take_back_buffer(&mut self, slot: u32) {
        if self.lent_to == Some(slot) {
            self.lent_to = None;
            self.exchange_output_buffer(slot);
        }
    }

    /// The connection is over: out of the table, its counters kept.
    pub fn remove_tcp(&mut self, h: SocketHandle) {
        self.release(h.0);
        self.tcp[h.0 as usize] = None;
        self.free.push(h.0);
    }

    /// Out of the index and the listings, counters folded into the node's;
    /// the state stays readable through its handle.
    fn release(&mut self, slot: u32) {
        self.take_back_buffer(slot);
        let s = self.tcp[slot as usize].as_mut().expect("live socket");
        if !s.live {
            return;
        }
        s.live = false;
        let key = ConnKey {
            remote: s.conn.remote,
            local_port: s.conn.local_port,
        };
        self.gone.add(&s.conn.ep.mib());
        self.index.remove(&key);
    }

    /// TCP Small Queues for `owner`'s connections (docs/semantics/tcp.md
    /// §6.4), as Linux orders it: every `tcp_wfree` of the batch lowers its
    /// socket's `sk_wmem_alloc` first; then the TSQ handler of each socket a
    /// release found throttled runs once. Returns the sockets whose handler
    /// ran, in the order it did (their output waits to be flushed by their
    /// application). A release for a socket no longer in the table (removed,
    /// or its application ended) is dropped.
    pub fn tsq_release(
        &mut self,
        now: SimTime,
        owner: u32,
        releases: &[TsqRelease],
    ) -> Vec<SocketHandle> {
        // (the handlers neither open nor close connections: the lookups of
        // the first pass hold for the second)
        let mut found = std::mem::take(&mut self.tsq_found);
        found.clear();
        for r in releases {
            let h = self.owned(owner, &ConnKey::of_release(r));
            if let Some(h) = h {
                self.tcp_mut(h).ep.tsq_account(r.bytes);
            }
            found.push(h);
        }
        let mut ran = Vec::new();
        for &h in found.iter().flatten() {
            if self.tcp_mut(h).ep.tsq_handler(now) {
                ran.push(h);
            }
        }
        self.tsq_found = found;
        ran
    }

    /// `owner`'s live connection with this key.
    fn owned(&self, owner: u32, key: &ConnKey) -> Option<SocketHandle> {
        let slot = self.index.get(key).copied()?;
        let s = self.tcp[slot as usize].as_ref()?;
        (s.owner == owner).then_some(SocketHandle(slot))
    }

    /// The live connections in slot order (creation order, slots reused).
    pub fn tcp_sockets(&self) -> impl Iterator<Item = &TcpSocket> {
        self.tcp.iter().flatten().filter(|s| s.live)
    }

    /// Live connections (for tests and the memory benchmark).
    pub fn tcp_len(&self) -> usize {
        self.index.len()
    }

    /// The node's TCP counters: the gone connections' and the live ones'.
    pub fn tcp_mib(&self) -> TcpTotals {
        let mut total = self.gone;
        for s in self.tcp_sockets() {
            total.add(&s.conn.ep.mib());
        }
        total
    }

    /// `CurrEstab`: live connections in ESTABLISHED or CLOSE-WAIT.
    pub fn curr_estab(&self) -> u64 {
        self.tcp_sockets()
            .filter(|s| s.conn.ep.counts_as_established())
            .count() as u64
    }
}

#[cfg(test)]
mod tests;
