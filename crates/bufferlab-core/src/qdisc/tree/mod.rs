//! The qdisc chain of one interface: the per-device plumbing of Linux's
//! net/sched/sch_generic.c (`qdisc_tree_reduce_backlog`,
//! `qdisc_reset`) and include/net/sch_generic.h (`qdisc_peek_dequeued`,
//! `qdisc_dequeue_peeked`); the `tc` verbs that reshape it are in `api.rs`,
//! the kinds in `dispatch.rs` (docs/semantics/qdiscs.md §1.3–1.5).
//!
//! Shape. Every classful qdisc we model (tbf, netem, red, sfb) has
//! exactly one child slot, so a device's tree is a chain: `nodes[0]` is the
//! root, `nodes[i+1]` sits in the slot of `nodes[i]`. An empty slot below tbf
//! is Linux's noop qdisc (a black hole); below netem it means "deliver
//! directly". A qdisc calls into its child chain through `enqueue_chain`,
//! `peek_chain` and `dequeue_chain`.
//!
//! Accounting. A parent counts `drops += 1` when its child's enqueue reports
//! a drop. Packets that leave a subtree any other way — a head drop, a netem
//! whose child refused a due packet, a purge — are reported upward as a
//! [`Reduce`] (`qdisc_tree_reduce_backlog`): every ancestor subtracts them
//! from qlen/backlog and adds them to drops.
//!
//! Peek. tbf looks at its child's head before taking it. A fifo shows its
//! head; a tbf or netem child is dequeued and the packet held in a one-slot
//! cache of the child's node, still counted in its qlen/backlog (docs/semantics/qdiscs.md
//! §1.4).
//!
//! Engine contract: call [`QdiscTree::enqueue`] for each packet, then kick:
//! call [`QdiscTree::dequeue`] until it returns `None`. The watchdog the
//! final (empty) dequeue call leaves in `ctx.watchdog` is the earliest
//! instant any qdisc of the tree wants to run again; it replaces any pending
//! one. netem duplicates are re-enqueued at the root by these two methods
//! themselves (they drain the `ctx.reinject` entries they create).

pub(crate) use super::ops::{reset_chain, Node};
use super::ops::{Peeked, Qdisc, Reduce};
#[cfg(test)]
use super::spec::QdiscSpec;
use super::{AnyQdisc, DropReason, QdiscCtx, QdiscStats, Verdict};
use crate::packet::PacketId;
use crate::time::SimTime;
use serde::Serialize;

/// Behaviour switches that differ between kernel generations (docs/semantics/qdiscs.md §11).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QdiscProfile {
    /// \[modern\] netem: `limit` counts the delay line only and qlen/backlog
    /// include the child; \[lab2019\] (false): qlen/backlog = delay line +
    /// immediate queue.
    pub netem_modern_accounting: bool,
    /// \[modern\] netem duplicates are re-enqueued after the limit check.
    pub netem_dup_after_limit: bool,
}

/// One block of `tc qdisc show`, in tree order (root first).
#[derive(Clone, Debug, Serialize)]
pub struct QdiscInfo {
    pub kind: &'static str,
    /// handle major (0 for noqueue and anonymous children)
    pub handle: u16,
    /// `None` = root; otherwise the parent's (major, minor)
    pub parent: Option<(u16, u16)>,
    /// hidden default child (shown only with `invisible`)
    pub anonymous: bool,
    /// current options, in the kernel's units (the spec's JSON shape)
    pub options: serde_json::Value,
    pub stats: QdiscStats,
    /// kind-specific statistics (red: marked/early/pdrop/other; blue)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xstats: Option<serde_json::Value>,
}

impl Node {
    /// The qdisc a device starts with (handle 0, so `add … root` replaces
    /// it): [`AnyQdisc::device_default`].
    pub(super) fn default_root(nic: bool) -> Node {
        Node::new(0, 0, false, AnyQdisc::device_default(nic))
    }
}

/// Enqueue into the qdisc at the head of `chain` (its children follow).
pub(crate) fn enqueue_chain(
    chain: &mut [Node],
    ctx: &mut QdiscCtx,
    reduce: &mut Reduce,
    id: PacketId,
) -> Verdict {
    let Some((node, below)) = chain.split_first_mut() else {
        // An empty slot is the noop qdisc.
        ctx.drop_packet(id, DropReason::Blackhole);
        return Verdict::Dropped(DropReason::Blackhole);
    };
    node.q.enqueue(ctx, reduce, id, below)
}

/// Bytes queued in the qdisc at the head of `chain` (a parent's view of its
/// child's `qstats.backlog`); 0 for an empty slot.
pub(crate) fn chain_backlog(chain: &[Node]) -> u64 {
    chain.first().map_or(0, |n| n.q.stats().backlog)
}

/// Dequeue from the head of `chain`, handing out a peeked packet first
/// (`qdisc_dequeue_peeked`).
pub(crate) fn dequeue_chain(
    chain: &mut [Node],
    ctx: &mut QdiscCtx,
    reduce: &mut Reduce,
) -> Option<PacketId> {
    let (node, below) = chain.split_first_mut()?;
    if let Some(p) = node.peeked.take() {
        let len = ctx.arena.len_of(p);
        node.q.stats_mut().unqueued(len);
        return Some(p);
    }
    node.q.dequeue(ctx, reduce, below)
}

/// Peek at the head of `chain`: a fifo's head, or for tbf/netem/codel the
/// packet their dequeue returns, cached and still counted
/// (`qdisc_peek_dequeued`; codel-like kinds thus run their drop logic at
/// peek time, docs/semantics/qdiscs.md §1.4).
pub(crate) fn peek_chain(
    chain: &mut [Node],
    ctx: &mut QdiscCtx,
    reduce: &mut Reduce,
) -> Option<PacketId> {
    let (node, below) = chain.split_first_mut()?;
    if let Some(p) = node.peeked {
        return Some(p);
    }
    let p = match node.q.peek(ctx, reduce, below) {
        Peeked::Head(head) => return head,
        Peeked::Dequeued(p) => p?,
    };
    let len = ctx.arena.len_of(p);
    node.q.stats_mut().queued(len);
    node.peeked = Some(p);
    Some(p)
}

/// The netems of `chain`, nested ones (htb leaves) included: whether each
/// duplicates.
pub(crate) fn chain_netems(chain: &[Node], out: &mut Vec<bool>) {
    for n in chain {
        out.extend(n.q.netem_duplicates());
        n.q.inner_netems(out);
    }
}

/// Re-enqueues of netem duplicates per tree operation before the rest are
/// dropped (only reachable with several duplicating netems feeding each other,
/// which Linux ≥ 6.x refuses to configure).
const MAX_REINJECT: usize = 4096;

/// What one tree operation can change the tree's contents by, read before it,
/// for `QdiscTree::held`: packets and bytes made inside (netem duplicates, the
/// segments of a split aggregate, which replaces its aggregate), dropped.
pub(super) struct HeldFlow {
    created: u64,
    created_bytes: u64,
    segmented: u64,
    dropped: u64,
    dropped_bytes: u64,
}

/// Packets and bytes anywhere in a tree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Held {
    pub(super) bytes: u64,
    pub(super) packets: u64,
}

impl HeldFlow {
    pub(super) fn start(ctx: &QdiscCtx) -> Self {
        HeldFlow {
            created: ctx.arena.created(),
            created_bytes: ctx.arena.created_bytes(),
            segmented: ctx.arena.segmented(),
            dropped: ctx.drops.total_packets(),
            dropped_bytes: ctx.drops.total_bytes(),
        }
    }

    /// `held` plus what the operation made minus what it dropped and the
    /// packet of `left` bytes it handed out, if any.
    pub(super) fn settle(&self, ctx: &QdiscCtx, held: Held, left: Option<u64>) -> Held {
        let made = ctx.arena.created() - self.created - (ctx.arena.segmented() - self.segmented);
        let made_bytes = ctx.arena.created_bytes() - self.created_bytes;
        Held {
            bytes: held.bytes + made_bytes
                - (ctx.drops.total_bytes() - self.dropped_bytes)
                - left.unwrap_or(0),
            packets: held.packets + made
                - (ctx.drops.total_packets() - self.dropped)
                - left.is_some() as u64,
        }
    }
}

/// The qdiscs of one interface.
#[derive(Debug)]
pub struct QdiscTree {
    pub(super) dev: String,
    pub(super) seed: u64,
    pub(super) profile: QdiscProfile,
    /// root first; `nodes[i+1]` is the child of `nodes[i]`
    pub(super) nodes: Vec<Node>,
    /// qdiscs created so far (names the RNG streams `dev/qdiscN`)
    pub(super) created: u32,
    /// the device has a real TX queue (finite-rate wire): default root pfifo_fast
    pub(super) nic: bool,
    /// packets and bytes anywhere in the tree: in at the root (arrivals) or
    /// made inside (netem duplicates, segments), out by dequeue or a drop;
    /// kept as they change because the engine asks after every enqueue. The
    /// qdiscs' own backlog counters cannot give it: a lab2019 netem counts its
    /// child's packets, a modern one does not, and a peeked packet sits
    /// between two qdiscs.
    pub(super) held: Held,
}

impl QdiscTree {
    /// A fresh veth: `noqueue` root.
    pub fn new(dev: &str, seed: u64, profile: QdiscProfile) -> Self {
        Self::with_default_root(dev, seed, profile, false)
    }

    /// A fresh NIC (a finite-rate wire): `pfifo_fast 0:` root.
    pub fn new_nic(dev: &str, seed: u64, profile: QdiscProfile) -> Self {
        Self::with_default_root(dev, seed, profile, true)
    }

    fn with_default_root(dev: &str, seed: u64, profile: QdiscProfile, nic: bool) -> Self {
        QdiscTree {
            dev: dev.to_string(),
            seed,
            profile,
            nodes: vec![Node::default_root(nic)],
            created: 0,
            nic,
            held: Held::default(),
        }
    }

    /// The root is `noqueue`: the engine hands packets straight to the link.
    pub fn is_noqueue(&self) -> bool {
        matches!(self.nodes[0].q, AnyQdisc::Noqueue(_))
    }

    /// Would a dequeue now hand nothing out, ask for no watchdog and touch no
    /// packet, counter or random stream, changing at most what depends on
    /// the instant alone? True of an empty tree whose one qdisc is a fifo,
    /// pfifo_fast (nothing changes) or ns-3's RED (it notes when its idle
    /// period began, `RedQueueDisc::DoDequeue`). Such a dequeue can be run
    /// later for its instant with the same effect (engine/link_free.rs).
    pub fn dequeue_is_quiet(&self) -> bool {
        self.held.packets == 0
            && matches!(self.nodes.as_slice(), [n] if n.peeked.is_none()
                && matches!(n.q, AnyQdisc::Fifo(_) | AnyQdisc::PfifoFast(_) | AnyQdisc::RedNs3(_)))
    }

    /// Enqueue at the root (then re-enqueue any netem duplicates made).
    pub fn enqueue(&mut self, ctx: &mut QdiscCtx, id: PacketId) -> Verdict {
        let before = HeldFlow::start(ctx);
        let arrived = Held {
            bytes: self.held.bytes + ctx.arena.len_of(id) as u64,
            packets: self.held.packets + 1,
        };
        let start = ctx.reinject.len();
        let mut reduce = Reduce::default();
        let v = enqueue_chain(&mut self.nodes, ctx, &mut reduce, id);
        if ctx.reinject.len() > start {
            self.reinject(ctx, start);
        }
        self.held = before.settle(ctx, arrived, None);
        v
    }

    /// Dequeue from the root; `None` with `ctx.watchdog` set when throttled.
    pub fn dequeue(&mut self, ctx: &mut QdiscCtx) -> Option<PacketId> {
        let before = HeldFlow::start(ctx);
        let start = ctx.reinject.len();
        let mut reduce = Reduce::default();
        let p = dequeue_chain(&mut self.nodes, ctx, &mut reduce);
        if ctx.reinject.len() > start {
            self.reinject(ctx, start);
        }
        let left = p.map(|id| ctx.arena.len_of(id) as u64);
        self.held = before.settle(ctx, self.held, left);
        p
    }

    /// Enqueue at the root the clones netem put into `ctx.reinject[start..]`
    /// (in order, including clones made meanwhile), then forget them.
    fn reinject(&mut self, ctx: &mut QdiscCtx, start: usize) {
        let mut i = start;
        while i < ctx.reinject.len() {
            let clone = ctx.reinject[i];
            i += 1;
            if i - start > MAX_REINJECT {
                ctx.drop_packet(clone, DropReason::NetemLimit);
                continue;
            }
            let mut reduce = Reduce::default();
            // a duplicate enters the root now (queue traces' sojourn time)
            let tos = ctx.arena.get(clone).tos;
            ctx.arena.stamp(clone, ctx.now, tos);
            let _ = enqueue_chain(&mut self.nodes, ctx, &mut reduce, clone);
        }
        ctx.reinject.truncate(start);
        for n in &mut self.nodes {
            n.q.duplicates_reinjected();
        }
    }

    /// `tc qdisc show` blocks in tree order, anonymous children included
    /// (flagged).
    pub fn show(&self) -> Vec<QdiscInfo> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| QdiscInfo {
                kind: n.q.kind(),
                handle: n.handle,
                parent: (i > 0).then(|| (self.nodes[i - 1].handle, n.parent_minor)),
                anonymous: n.anonymous,
                options: n.q.options(),
                stats: *n.q.stats(),
                xstats: Some(n.q.xstats()).filter(|x| !x.is_null()),
            })
            .collect()
    }

    /// Add to the blocks of [`show`](Self::show) the classes each qdisc lists
    /// only through its walk (`Qdisc::walked_classes`: cake's flows), as
    /// `classes` in its xstats, for `tc class show`.
    pub fn add_walked_classes(&self, blocks: &mut [QdiscInfo], now: SimTime) {
        for (n, block) in self.nodes.iter().zip(blocks.iter_mut()) {
            let classes = n.q.walked_classes(now);
            if let (false, Some(serde_json::Value::Object(x))) =
                (classes.is_null(), &mut block.xstats)
            {
                x.insert("classes".into(), classes);
            }
        }
    }

    /// (backlog bytes, qlen) of the last block `tc qdisc show` prints — the
    /// leaf `plot_q.sh` samples (docs/semantics/formats.md §6).
    pub fn leaf_backlog(&self) -> (u64, u64) {
        self.nodes
            .iter()
            .rev()
            .find(|n| !n.anonymous)
            .map(|n| (n.q.stats().backlog, n.q.stats().qlen))
            .unwrap_or((0, 0))
    }

    /// Packets physically stored anywhere in the tree.
    pub fn held_packets(&self) -> u64 {
        self.nodes.iter().map(Node::held_packets).sum()
    }

    /// (bytes, packets) held anywhere in the tree: a netem's delay line and
    /// its child's queue both count. O(1): kept as packets come and go
    /// (`held_packets` walks the qdiscs; tree_tests checks the two agree).
    pub fn held_backlog(&self) -> (u64, u64) {
        (self.held.bytes, self.held.packets)
    }

    /// The qdisc at chain position `idx` (0 = root).
    pub fn node_qdisc(&self, idx: usize) -> Option<&AnyQdisc> {
        self.nodes.get(idx).map(|n| &n.q)
    }

    #[cfg(test)]
    pub(crate) fn nodes_mut(&mut self) -> &mut [Node] {
        &mut self.nodes
    }

    #[cfg(test)]
    pub(crate) fn node_qdisc_mut(&mut self, idx: usize) -> Option<&mut AnyQdisc> {
        self.nodes.get_mut(idx).map(|n| &mut n.q)
    }

    pub fn dev(&self) -> &str {
        &self.dev
    }
}

/// A minimal engine for tests: packets, counters, and the kick loop of
/// docs/semantics/qdiscs.md §1.4.
#[cfg(test)]
pub(crate) mod harness {
    use super::*;
    use crate::packet::PacketArena;
    use crate::qdisc::DropCounters;

    pub struct Env {
        pub arena: PacketArena,
        pub drops: DropCounters,
        pub reinject: Vec<PacketId>,
        seq: u64,
        template: crate::packet::Packet,
    }

    impl Default for Env {
        fn default() -> Self {
            Env {
                arena: PacketArena::default(),
                drops: DropCounters::default(),
                reinject: Vec::new(),
                seq: 0,
                template: crate::packet::tests::frame(1514),
            }
        }
    }

    impl Env {
        pub fn ctx(&mut self, now: u64) -> QdiscCtx<'_> {
            QdiscCtx {
                now: SimTime::from_nanos(now),
                arena: &mut self.arena,
                drops: &mut self.drops,
                watchdog: None,
                reinject: &mut self.reinject,
            }
        }

        /// A UDP frame of `len` bytes; `seq` numbers packets in creation order.
        pub fn pkt(&mut self, len: u32) -> PacketId {
            let mut p = self.template;
            p.len = len;
            p.seq = self.seq;
            self.seq += 1;
            self.arena.alloc(p)
        }
    }

    /// Dequeue until empty at `t`; delivered packets are recorded as
    /// (t, seq) and freed. Returns the watchdog of the final call.
    pub fn kick(
        tree: &mut QdiscTree,
        env: &mut Env,
        t: u64,
        out: &mut Vec<(u64, u64)>,
    ) -> Option<u64> {
        loop {
            let mut ctx = env.ctx(t);
            let p = tree.dequeue(&mut ctx);
            let wd = ctx.watchdog;
            match p {
                Some(id) => {
                    out.push((t, env.arena.get(id).seq));
                    env.arena.free(id);
                }
                None => {
                    let wd = wd.map(|w| w.as_nanos());
                    if let Some(w) = wd {
                        assert!(w > t, "watchdog at {w} not after {t}");
                    }
                    return wd;
                }
            }
        }
    }

    /// Feed `arrivals` (time, len) — kicking after each one, or once per
    /// instant if `batch` — and at every watchdog, up to `until`.
    pub fn run(
        tree: &mut QdiscTree,
        env: &mut Env,
        arrivals: &[(u64, u32)],
        batch: bool,
        until: u64,
    ) -> Vec<(u64, u64)> {
        let mut out = vec![];
        let mut wd: Option<u64> = None;
        let mut i = 0;
        loop {
            let t = match (arrivals.get(i).map(|a| a.0), wd) {
                (Some(a), Some(w)) => a.min(w),
                (Some(a), None) => a,
                (None, Some(w)) => w,
                (None, None) => break,
            };
            if t > until {
                break;
            }
            let mut kicked = false;
            while i < arrivals.len() && arrivals[i].0 == t {
                let id = env.pkt(arrivals[i].1);
                tree.enqueue(&mut env.ctx(t), id);
                i += 1;
                if !batch {
                    wd = kick(tree, env, t, &mut out);
                    kicked = true;
                }
            }
            if !kicked {
                wd = kick(tree, env, t, &mut out);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod perf {
    use super::harness::Env;
    use super::*;
    use crate::qdisc::spec::{NetemLoss, NetemSpec, ParentSpec, TbfSpec, TcVerb};
    use crate::qdisc::{AutoHandles, TcRequest};

    /// Throughput of the Lab 14 tree (netem 20 ms → tbf 1 Gbit/s → bfifo):
    /// `cargo test --release -p bufferlab-core --lib perf -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn lab14_tree_packets_per_second() {
        let mut env = Env::default();
        let mut tree = QdiscTree::new("s1-eth2", 1, QdiscProfile::default());
        let mut auto = AutoHandles::default();
        let netem = NetemSpec {
            limit: 100_000,
            latency: 20_000_000,
            jitter: 0,
            loss: NetemLoss::Random { p: 429_497 },
            gap: 0,
            duplicate: 0,
            correlation: None,
            reorder: None,
            corrupt: None,
            rate: None,
            ecn: None,
            slot: None,
            distribution: None,
        };
        let tbf = TbfSpec {
            rate: 125_000_000,
            burst: 500_000,
            limit: 2_621_440,
            peakrate: None,
            mtu: None,
            mpu: 0,
            overhead: 0,
            atm: false,
        };
        let add = |parent, handle, q| TcRequest {
            verb: TcVerb::Add,
            dev: "s1-eth2".into(),
            parent,
            handle,
            qdisc: Some(q),
        };
        tree.apply(
            &add(Some(ParentSpec::Root), Some(1), QdiscSpec::Netem(netem)),
            &mut env.ctx(0),
            &mut auto,
        )
        .unwrap();
        let child = Some(ParentSpec::Class { major: 1, minor: 0 });
        tree.apply(
            &add(child, Some(2), QdiscSpec::Tbf(tbf)),
            &mut env.ctx(0),
            &mut auto,
        )
        .unwrap();
        let n = 5_000_000u64;
        let start = std::time::Instant::now();
        let mut delivered = 0u64;
        let mut wd: Option<u64> = None;
        for k in 0..n {
            let t = k * 11_000; // slightly faster than the tbf: a standing queue and drops
            while let Some(w) = wd.filter(|&w| w <= t) {
                let mut ctx = env.ctx(w);
                while let Some(p) = tree.dequeue(&mut ctx) {
                    delivered += 1;
                    ctx.arena.free(p);
                }
                wd = ctx.watchdog.map(|x| x.as_nanos());
            }
            let id = env.pkt(1514);
            let mut ctx = env.ctx(t);
            tree.enqueue(&mut ctx, id);
            while let Some(p) = tree.dequeue(&mut ctx) {
                delivered += 1;
                ctx.arena.free(p);
            }
            wd = ctx.watchdog.map(|x| x.as_nanos());
        }
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "{n} packets through netem+tbf in {secs:.3} s: {:.1} M packets/s ({delivered} delivered)",
            n as f64 / secs / 1e6
        );
    }
}

#[cfg(test)]
mod gso_tests;
