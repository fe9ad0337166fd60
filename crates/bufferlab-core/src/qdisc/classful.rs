//! The entry points drr, ets and hfsc use of the machinery they share with
//! htb and prio: the u32 filter match and `skb->priority` from the TOS
//! byte (classify.rs), the leaf qdisc chain grafted on a class (the spec's
//! [`HtbLeaf`]: `tc qdisc … parent M:N`, default pfifo of `leaf_limit`
//! packets, as `qdisc_create_dflt(&pfifo_qdisc_ops)`; htb.rs
//! `build_leaf_chain`), and a leaf's `qdisc_show` blocks and counters.

use super::ops::{Changed, ChildChange, Purged, Qdisc, Reduce};
use super::spec::{HtbLeaf, U32Filter};
use super::tree::Node;
use super::{QdiscCtx, QdiscStats};
use crate::error::TcError;
use crate::packet::Packet;
use serde_json::json;

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

/// The qdisc chain of a class: the grafted leaf (and what was grafted
/// below it), or the default pfifo of `default_limit` packets (htb.rs
/// `build_leaf_chain`, shared with htb and prio).
pub fn build_leaf(
    leaf: Option<&HtbLeaf>,
    default_limit: u32,
    seed: u64,
    now: i64,
    stream: &str,
) -> Result<Vec<Node>, TcError> {
    super::htb::build_leaf_chain(seed, stream, leaf, default_limit, now.max(0))
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

/// Helpers of the drr/ets/hfsc unit tests: filters on the destination
/// port, scripted arrivals, and a line that dequeues at a fixed rate.
/// A `tc qdisc change` of a classful kind dropped these classes' leaf chains:
/// what they held is purged, taken off the qdisc's counters, and the
/// qdisc's child slot is kept (drr, ets and hfsc share this step).
pub fn purge_removed(
    removed: Vec<Vec<Node>>,
    stats: &mut QdiscStats,
    ctx: &mut QdiscCtx,
) -> Changed {
    let mut lost = Purged::default();
    for mut chain in removed {
        for n in chain.iter_mut() {
            lost.add(n.reset(ctx));
        }
    }
    stats.absorb(Reduce::purged(lost));
    Changed {
        purged: lost,
        child: ChildChange::Keep,
    }
}

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
        let mut red = Reduce::default();
        q.enqueue(&mut env.ctx(t), &mut red, id, &mut [])
    }

    /// Dequeue one packet at `t`: (its dport and length, or the watchdog).
    pub fn pop<Q: Qdisc>(q: &mut Q, env: &mut Env, t: u64) -> Result<(u16, u32), Option<u64>> {
        let mut ctx = env.ctx(t);
        let mut red = Reduce::default();
        let got: Option<PacketId> = q.dequeue(&mut ctx, &mut red, &mut []);
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
