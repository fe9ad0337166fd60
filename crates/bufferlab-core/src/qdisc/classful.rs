//! What the kinds that own classes (htb, prio, drr, ets, hfsc) share: the
//! class table found by classid ([`ClassTable`], `qdisc_class_find` of
//! sch_api.c), the leaf qdisc chain grafted on a class (the spec's
//! [`HtbLeaf`]: `tc qdisc … parent M:N`, default pfifo of `leaf_limit`
//! packets, as `qdisc_create_dflt(&pfifo_qdisc_ops)`: [`build_leaf`]) and its
//! replacement by a graft ([`regraft`]), a leaf's `qdisc_show` blocks and
//! counters, and the entry to classify.rs (the u32 filter match and
//! `skb->priority` from the TOS byte). class_api/ routes the verbs; ops.rs
//! `purge_removed` purges the chains a verb drops.

use super::fifo::Fifo;
use super::ops::{BuildEnv, ClassOps, Qdisc, Reduce};
use super::spec::{ClassRequest, ClassSpec, ClassVerb, HtbLeaf, QdiscSpec, U32Filter};
use super::tree::Node;
use super::{AnyQdisc, QdiscStats};
use crate::error::TcError;
use crate::packet::Packet;
use crate::time::SimTime;
use rustc_hash::FxHashMap;
use serde_json::json;
use std::ops::{Deref, DerefMut};

/// `psched_mtu` of a bufferlab device: MTU 1500 + the 14-byte Ethernet
/// header (drr's and ets's default quantum).
pub const PSCHED_MTU: u32 = 1514;

/// `rt_tos2priority`: the packet's `skb->priority` (classify.rs).
pub fn tos_priority(tos: u8) -> u8 {
    super::classify::tos_priority(tos)
}

/// The flowid minor of the first u32 filter (lowest `prio` first, then in
/// the order added) whose matches all hold for `p` (classify.rs).
pub fn u32_classify(filters: &[U32Filter], p: &Packet) -> Option<u16> {
    super::classify::u32_flowid(filters, p)
}

/// The qdisc chain of a class: the grafted `leaf` and what was grafted below
/// it (each kind's default child where nothing was), or a default pfifo of
/// `default_limit` packets (`qdisc_create_dflt`). `stream` names the RNG
/// stream of the qdiscs built.
pub fn build_leaf(
    leaf: Option<&HtbLeaf>,
    default_limit: u32,
    seed: u64,
    now: i64,
    stream: &str,
) -> Result<Vec<Node>, TcError> {
    let Some(leaf) = leaf else {
        let fifo = Fifo::from_spec(&QdiscSpec::Pfifo {
            limit: Some(default_limit),
        })
        .expect("pfifo is a fifo");
        return Ok(vec![Node::new(0, 0, true, AnyQdisc::Fifo(fifo))]);
    };
    let env = BuildEnv {
        seed,
        stream,
        profile: Default::default(),
        now: SimTime::from_nanos(now.max(0) as u64),
        at_root: false,
    };
    let mut chain = Vec::new();
    let mut next = Some(leaf);
    while let Some(l) = next {
        let built = AnyQdisc::build(&l.spec, &env)?;
        if l.child.is_some() && !built.qdisc.classful() {
            // `qdisc_graft` on a kind without a child slot (api.rs says the same)
            return Err(TcError::Invalid(format!(
                "Operation not supported: qdisc {} has no classes to attach to",
                built.qdisc.kind()
            )));
        }
        chain.push(Node::new(l.handle, 0, false, built.qdisc));
        next = l.child.as_deref();
        if let (None, Some(f)) = (next, built.default_child) {
            chain.push(Node::new(0, 0, true, f));
        }
    }
    Ok(chain)
}

/// (qlen, backlog) of the qdisc at the head of a leaf chain.
pub fn leaf_backlog(chain: &[Node]) -> (u64, u64) {
    chain
        .first()
        .map_or((0, 0), |n| (n.q.stats().qlen, n.q.stats().backlog))
}

/// The leaf chain as `qdisc_show` blocks (htb.py `leaf_blocks` lists them).
pub fn leaf_json(chain: &[Node]) -> Vec<serde_json::Value> {
    chain
        .iter()
        .map(|n| {
            json!({
                "kind": n.q.kind(),
                "handle": n.handle,
                "anonymous": n.anonymous,
                "options": n.q.options(),
                "stats": n.q.stats(),
                "xstats": n.q.xstats(),
            })
        })
        .collect()
}

/// `graft` on one class: `spec` is what is grafted now, `chain` the class's
/// qdiscs (empty while the class has children: htb and hfsc inner classes
/// hold no queue). The same leaf changes nothing; another one is recorded
/// and, for a class that `holds` a queue, built (`build`; on error nothing
/// changed) in place of the old chain, which is returned for purging.
pub fn regraft(
    spec: &mut Option<HtbLeaf>,
    chain: &mut Vec<Node>,
    leaf: Option<HtbLeaf>,
    holds: bool,
    build: impl FnOnce(Option<&HtbLeaf>) -> Result<Vec<Node>, TcError>,
) -> Result<Option<Vec<Node>>, TcError> {
    if *spec == leaf {
        return Ok(None);
    }
    let old = if holds {
        Some(std::mem::replace(chain, build(leaf.as_ref())?))
    } else {
        None
    };
    *spec = leaf;
    Ok(old)
}

/// The options of a class verb if they are this kind's (`pick`). Another
/// kind's options are EINVAL for any verb but `delete` (which takes none):
/// the kernel cannot parse them.
pub fn class_opts<'a, T>(
    req: &'a ClassRequest,
    pick: impl FnOnce(&'a ClassSpec) -> Option<&'a T>,
) -> Result<Option<&'a T>, TcError> {
    if req.verb == ClassVerb::Delete {
        return Ok(None);
    }
    match req.class.as_ref().and_then(pick) {
        Some(o) => Ok(Some(o)),
        None => Err(TcError::Invalid(String::new())),
    }
}

/// The bands of prio and ets are their classes `M:1` … `M:bands`: the
/// position of class `minor`.
pub fn band(minor: u16, bands: usize) -> Option<usize> {
    (1..=bands)
        .contains(&(minor as usize))
        .then(|| minor as usize - 1)
}

/// The leaves of a creating request's document, grafted on the classes it
/// made (their default pfifos, empty, are dropped).
pub fn graft_all<'a>(
    classes: &mut dyn ClassOps,
    leaves: impl IntoIterator<Item = (u16, Option<&'a HtbLeaf>)>,
    now: i64,
) -> Result<(), TcError> {
    for (minor, leaf) in leaves {
        let i = classes.find(minor).expect("the document's class was made");
        classes.regraft(i, leaf.cloned(), now)?;
    }
    Ok(())
}

/// Something kept in a [`ClassTable`]: a class with its classid minor.
pub trait Classid {
    fn classid(&self) -> u16;
}

/// A qdisc's classes in the order they were made (the order its document
/// lists them), found by classid minor in constant time (`qdisc_class_find`).
/// Reads and per-class changes go through the slice it dereferences to; only
/// `push` and `remove` reshape it. Removing a class moves the later ones up
/// one place: a kind that keeps class indices (a parent's) shifts them.
#[derive(Debug)]
pub struct ClassTable<C> {
    items: Vec<C>,
    index: FxHashMap<u16, usize>,
}

impl<C> Default for ClassTable<C> {
    fn default() -> Self {
        ClassTable {
            items: Vec::new(),
            index: FxHashMap::default(),
        }
    }
}

impl<C: Classid> ClassTable<C> {
    /// Position of class `minor`.
    pub fn find(&self, minor: u16) -> Option<usize> {
        self.index.get(&minor).copied()
    }

    /// Append a class (its classid is not in the table yet); its position.
    pub fn push(&mut self, c: C) -> usize {
        let i = self.items.len();
        self.index.insert(c.classid(), i);
        self.items.push(c);
        i
    }

    /// Take class `i` out; the classes after it move up one place.
    pub fn remove(&mut self, i: usize) -> C {
        let c = self.items.remove(i);
        self.index.remove(&c.classid());
        for (j, later) in self.items.iter().enumerate().skip(i) {
            self.index.insert(later.classid(), j);
        }
        c
    }

    /// Every class, out of the table (which is empty then).
    pub fn take_all(&mut self) -> Vec<C> {
        self.index.clear();
        std::mem::take(&mut self.items)
    }
}

impl<C> Deref for ClassTable<C> {
    type Target = [C];
    fn deref(&self) -> &[C] {
        &self.items
    }
}

impl<C> DerefMut for ClassTable<C> {
    fn deref_mut(&mut self) -> &mut [C] {
        &mut self.items
    }
}

/// The new position of a class index after [`ClassTable::remove`] of `gone`.
pub fn shifted(i: usize, gone: usize) -> usize {
    if i > gone {
        i - 1
    } else {
        i
    }
}

/// [`absorbing`](super::ops::absorbing) for a class's leaf chain: what
/// left the chain during `leaf_op` comes off the class's counters and the
/// qdisc's alike (the two steps of `qdisc_tree_reduce_backlog` that reach
/// them).
#[inline]
pub(crate) fn absorbing_class<T>(
    class: &mut QdiscStats,
    qdisc: &mut QdiscStats,
    reduce: &mut Reduce,
    leaf_op: impl FnOnce(&mut Reduce) -> T,
) -> T {
    let before = *reduce;
    let out = leaf_op(reduce);
    let lost = reduce.since(before);
    class.absorb(lost);
    qdisc.absorb(lost);
    out
}

/// The [`Qdisc`] methods every kind that owns classes (drr, ets, hfsc, htb,
/// prio) writes alike, stated once inside its `impl Qdisc`: its counters are
/// `stats`, its [`ClassOps`] itself, its u32 filters `spec.filters`; the
/// packets it holds are those of the leaf chains `$chains` yields (`&Vec<Node>`
/// read through `$self`, which is `self`: a macro's own `self` would not
/// reach the caller's expression) plus `$own` kept outside them (htb's direct
/// queue), and its netems are those of the chains.
macro_rules! class_owner_methods {
    ($self:ident => $chains:expr) => {
        $crate::qdisc::classful::class_owner_methods!($self => $chains, 0);
    };
    ($self:ident => $chains:expr, $own:expr) => {
        $crate::qdisc::ops::own_stats!();

        fn class_ops(&mut self) -> Option<&mut dyn $crate::qdisc::ops::ClassOps> {
            Some(self)
        }

        fn filters(&mut self) -> Option<&mut Vec<$crate::qdisc::spec::U32Filter>> {
            Some(&mut self.spec.filters)
        }

        fn inner_netems(&$self, out: &mut Vec<bool>) {
            for chain in $chains {
                $crate::qdisc::tree::chain_netems(chain, out);
            }
        }

        fn held(&$self) -> u64 {
            let leaves: u64 = ($chains)
                .flat_map(|chain| chain.iter())
                .map($crate::qdisc::tree::Node::held_packets)
                .sum();
            $own + leaves
        }
    };
}
pub(crate) use class_owner_methods;

/// Helpers of the drr/ets/hfsc unit tests: filters on the destination
/// port, scripted arrivals, and a line that dequeues at a fixed rate.
#[cfg(test)]
pub(crate) mod testkit {
    use super::super::ops::{BuildEnv, Qdisc, Reduce};
    use super::super::spec::{U32Field, U32Filter, U32Match};
    use super::super::tree::harness::Env;
    use super::super::Verdict;
    use crate::packet::PacketId;
    use crate::time::SimTime;

    pub fn dport_filter(port: u16, flowid: u16) -> U32Filter {
        U32Filter {
            prio: 1,
            matches: vec![U32Match {
                field: U32Field::Dport,
                value: port as u32,
                mask: 0xffff,
            }],
            flowid,
            flower: None,
        }
    }

    pub fn build_env() -> BuildEnv<'static> {
        BuildEnv {
            seed: 1,
            stream: "test",
            profile: Default::default(),
            now: SimTime::ZERO,
            at_root: true,
        }
    }

    pub fn push<Q: Qdisc>(q: &mut Q, env: &mut Env, t: u64, dport: u16, len: u32) -> Verdict {
        let id = env.pkt(len);
        env.arena.get_mut(id).dst_port = dport;
        let mut reduce = Reduce::default();
        q.enqueue(&mut env.ctx(t), &mut reduce, id, &mut [])
    }

    /// Dequeue one packet at `t`: (its dport and length, or the watchdog).
    pub fn pop<Q: Qdisc>(q: &mut Q, env: &mut Env, t: u64) -> Result<(u16, u32), Option<u64>> {
        let mut ctx = env.ctx(t);
        let mut reduce = Reduce::default();
        let got: Option<PacketId> = q.dequeue(&mut ctx, &mut reduce, &mut []);
        let wd = ctx.watchdog.map(|w| w.as_nanos());
        match got {
            Some(id) => {
                let p = env.arena.get(id);
                let out = (p.dst_port, p.len);
                env.arena.free(id);
                Ok(out)
            }
            None => Err(wd),
        }
    }

    /// Keep every port in `ports` backlogged with `len`-byte frames for
    /// `secs` s, dequeued by a line of `line` bytes/s; the bytes sent per port.
    pub fn saturate<Q: Qdisc>(
        q: &mut Q,
        env: &mut Env,
        ports: &[u16],
        len: u32,
        line: u64,
        secs: u64,
    ) -> Vec<u64> {
        let mut sent = vec![0u64; ports.len()];
        let mut queued = vec![0usize; ports.len()];
        let (mut t, end) = (0u64, secs * 1_000_000_000);
        while t < end {
            for (k, &p) in ports.iter().enumerate() {
                while queued[k] < 20 {
                    assert_eq!(push(q, env, t, p, len), Verdict::Queued);
                    queued[k] += 1;
                }
            }
            match pop(q, env, t) {
                Ok((port, l)) => {
                    let k = ports.iter().position(|&p| p == port).unwrap();
                    sent[k] += l as u64;
                    queued[k] -= 1;
                    t += l as u64 * 1_000_000_000 / line;
                }
                Err(wd) => t = wd.expect("a backlogged qdisc arms its watchdog"),
            }
        }
        sent
    }

    pub fn assert_near(got: f64, want: f64, tol: f64) {
        assert!(
            (got - want).abs() <= want * tol,
            "got {got:.4}, want {want:.4} ± {:.1} %",
            tol * 100.0
        );
    }
}
