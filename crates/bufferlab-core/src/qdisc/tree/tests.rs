//! Tests of the qdisc chain and the `tc` verbs (tree/, api.rs).

use super::harness::{kick, run, Env};
use super::*;
use crate::error::TcError;
use crate::qdisc::spec::{NetemLoss, NetemPercent, NetemSpec, TbfSpec};
use crate::qdisc::spec::{ParentSpec, TcVerb};
use crate::qdisc::{AutoHandles, TcRequest};
use serde_json::json;

const MS: u64 = 1_000_000;
const DEV: &str = "s1-eth2";

fn req(
    verb: TcVerb,
    parent: Option<ParentSpec>,
    handle: Option<u16>,
    qdisc: Option<QdiscSpec>,
) -> TcRequest {
    TcRequest {
        verb,
        dev: DEV.into(),
        parent,
        handle,
        qdisc,
    }
}

fn root() -> Option<ParentSpec> {
    Some(ParentSpec::Root)
}

fn class(major: u16, minor: u16) -> Option<ParentSpec> {
    Some(ParentSpec::Class { major, minor })
}

fn tbf(rate: u64, burst: u32, limit: u32) -> QdiscSpec {
    QdiscSpec::Tbf(TbfSpec {
        rate,
        burst,
        limit,
        peakrate: None,
        mtu: None,
        mpu: 0,
        overhead: 0,
        atm: false,
    })
}

fn netem(latency: u64) -> NetemSpec {
    NetemSpec::delay_only(latency)
}

/// (kind, handle, parent, anonymous) of a `show` block.
type Block = (&'static str, u16, Option<(u16, u16)>, bool);

struct Lab {
    tree: QdiscTree,
    env: Env,
    auto: AutoHandles,
}

impl Lab {
    fn new(profile: QdiscProfile) -> Lab {
        Lab {
            tree: QdiscTree::new(DEV, 42, profile),
            env: Env::default(),
            auto: AutoHandles::default(),
        }
    }
    fn tc(&mut self, r: TcRequest) -> Result<(), TcError> {
        self.tc_at(0, r)
    }
    fn tc_at(&mut self, t: u64, r: TcRequest) -> Result<(), TcError> {
        let mut ctx = self.env.ctx(t);
        self.tree.apply(&r, &mut ctx, &mut self.auto)
    }
    fn blocks(&self) -> Vec<Block> {
        self.tree
            .show()
            .iter()
            .map(|b| (b.kind, b.handle, b.parent, b.anonymous))
            .collect()
    }
    fn stats(&self, i: usize) -> QdiscStats {
        self.tree.show()[i].stats
    }
    fn enqueue(&mut self, t: u64, n: usize, len: u32) {
        for _ in 0..n {
            let id = self.env.pkt(len);
            self.tree.enqueue(&mut self.env.ctx(t), id);
        }
    }
    /// created = delivered (freed) + dropped + held, and nothing leaks.
    fn conserved(&self) {
        let held = self.tree.held_packets();
        assert_eq!(self.env.arena.live(), held, "live packets vs held");
        assert_eq!(self.tree.held_backlog().1, held, "packets kept vs walked");
        assert_eq!(
            self.tree.held_backlog().0,
            self.env.arena.live_bytes(),
            "bytes held"
        );
    }
}

fn lab14(profile: QdiscProfile, limit: u32) -> Lab {
    let mut lab = Lab::new(profile);
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(QdiscSpec::Netem(netem(20 * MS))),
    ))
    .unwrap();
    lab.tc(req(
        TcVerb::Add,
        class(1, 0),
        Some(2),
        Some(tbf(125_000_000, 500_000, limit)),
    ))
    .unwrap();
    lab
}

#[test]
fn a_fresh_device_shows_noqueue() {
    let lab = Lab::new(QdiscProfile::default());
    assert!(lab.tree.is_noqueue());
    let b = &lab.tree.show()[0];
    assert_eq!(
        (b.kind, b.handle, b.parent, b.anonymous),
        ("noqueue", 0, None, false)
    );
    assert_eq!(b.stats, QdiscStats::default());
    assert_eq!(lab.tree.leaf_backlog(), (0, 0));
}

#[test]
fn lab14_tree_shape_and_leaf() {
    let mut lab = lab14(QdiscProfile::default(), 160_000);
    assert!(!lab.tree.is_noqueue());
    assert_eq!(
        lab.blocks(),
        [
            ("netem", 1, None, false),
            ("tbf", 2, Some((1, 0)), false),
            ("bfifo", 0, Some((2, 1)), true)
        ]
    );
    let show = lab.tree.show();
    assert_eq!(show[2].options, json!({"limit": 160_000}));
    assert_eq!(show[1].options["burst"], json!(500_000));
    assert_eq!(show[0].options["latency"], json!(20 * MS));
    // Lab 14 part 2: change the tbf's limit; the bfifo follows in place.
    lab.tc(req(
        TcVerb::Change,
        class(1, 0),
        Some(2),
        Some(tbf(125_000_000, 500_000, 2_621_440)),
    ))
    .unwrap();
    assert_eq!(lab.tree.show()[2].options, json!({"limit": 2_621_440}));
    lab.enqueue(0, 3, 1000);
    kick(&mut lab.tree, &mut lab.env, 21 * MS, &mut vec![]);
    assert_eq!(
        lab.tree.leaf_backlog(),
        (0, 0),
        "the tbf is the leaf; it sent everything"
    );
}

#[test]
fn lab14_burst_into_a_small_tbf_drops_propagate_to_netem() {
    let mut lab = lab14(QdiscProfile::default(), 160_000);
    // 400 back-to-back frames at t = 0: all due at 20 ms, all moved into the
    // tbf at once; its bfifo keeps 105, the full bucket sends them at 20 ms.
    let out = run(
        &mut lab.tree,
        &mut lab.env,
        &[(0, 1514); 400],
        true,
        u64::MAX,
    );
    assert_eq!(out.len(), 105);
    assert!(out.iter().all(|&(t, _)| t == 20 * MS));
    let (ne, tb, bf) = (lab.stats(0), lab.stats(1), lab.stats(2));
    assert_eq!((bf.drops, tb.drops, ne.drops), (295, 295, 295));
    assert_eq!((ne.packets, tb.packets, bf.packets), (105, 105, 105));
    assert_eq!(ne.bytes, 105 * 1514);
    assert_eq!(lab.env.drops.packets[DropReason::QueueFull.index()], 295);
    lab.conserved();
}

#[test]
fn lab14_two_gigabit_arrivals_through_netem_and_tbf() {
    let mut lab = lab14(QdiscProfile::default(), 160_000);
    let n = 1000u64;
    let arrivals: Vec<(u64, u32)> = (0..n).map(|k| (k * 6_056, 1514)).collect();
    let out = run(&mut lab.tree, &mut lab.env, &arrivals, false, u64::MAX);
    // While the bucket lasts (≈ 660 frames) every frame leaves exactly 20 ms
    // after it arrived.
    for &(t, seq) in &out[..600] {
        assert_eq!(t, seq * 6_056 + 20 * MS);
    }
    // Once the bucket is empty the tbf paces at exactly 12 112 ns.
    let tail = &out[out.len() - 50..];
    assert!(tail.windows(2).all(|w| w[1].0 - w[0].0 == 12_112));
    let (ne, tb, bf) = (lab.stats(0), lab.stats(1), lab.stats(2));
    assert!(bf.drops > 0);
    assert_eq!((ne.drops, tb.drops), (bf.drops, bf.drops));
    assert_eq!(out.len() as u64 + bf.drops, n);
    assert_eq!(
        (ne.packets, tb.packets),
        (out.len() as u64, out.len() as u64)
    );
    assert_eq!((ne.qlen, ne.backlog, tb.qlen, tb.backlog), (0, 0, 0, 0));
    // Under netem every dequeue attempt while the tbf is throttled counts
    // twice (netem tries its child again after arming its own watchdog).
    assert!(tb.overlimits > 0);
    lab.conserved();
}

#[test]
fn netem_accounting_lab2019_vs_modern() {
    for (profile, netem_qlen) in [
        (QdiscProfile::default(), 0),
        (
            QdiscProfile {
                netem_modern_accounting: true,
                ..Default::default()
            },
            10,
        ),
    ] {
        // tbf 1 kbit/s: whatever netem moves into it stays there.
        let mut lab = Lab::new(profile);
        lab.tc(req(
            TcVerb::Add,
            root(),
            Some(1),
            Some(QdiscSpec::Netem(netem(MS))),
        ))
        .unwrap();
        lab.tc(req(
            TcVerb::Add,
            class(1, 0),
            Some(2),
            Some(tbf(125, 1514, 100_000)),
        ))
        .unwrap();
        lab.enqueue(0, 11, 1000);
        assert_eq!(lab.stats(0).qlen, 11);
        let mut out = vec![];
        kick(&mut lab.tree, &mut lab.env, 2 * MS, &mut out);
        assert_eq!(out.len(), 1, "one frame fits the bucket");
        assert_eq!(lab.stats(0).qlen, netem_qlen);
        assert_eq!(lab.stats(0).backlog, netem_qlen * 1000);
        assert_eq!(
            (lab.stats(1).qlen, lab.tree.leaf_backlog()),
            (10, (10_000, 10))
        );
        lab.conserved();
    }
}

#[test]
fn nic_default_pfifo_fast_is_replaced_by_add_root_and_restored_by_delete() {
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tree = QdiscTree::new_nic(DEV, 42, QdiscProfile::default());
    assert_eq!(lab.blocks(), vec![("pfifo_fast", 0, None, false)]);
    // CPM: `tc qdisc add dev eth1 root handle 1: tbf …` on a real NIC
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(tbf(1_000_000, 10_240, 204_800)),
    ))
    .unwrap();
    assert_eq!(lab.blocks()[0], ("tbf", 1, None, false));
    lab.tc(req(TcVerb::Delete, root(), None, None)).unwrap();
    assert_eq!(lab.blocks(), vec![("pfifo_fast", 0, None, false)]);
    assert!(!lab.tree.is_noqueue());
}

#[test]
fn lab16_tbf_root_graft_then_change_keeps_the_child() {
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(tbf(125_000_000, 500_000, 26_214_400)),
    ))
    .unwrap();
    assert_eq!(
        lab.blocks(),
        [("tbf", 1, None, false), ("bfifo", 0, Some((1, 1)), true)]
    );
    // Drain the bucket and leave 20 frames in the default bfifo.
    run(&mut lab.tree, &mut lab.env, &[(0, 1514); 350], true, 0);
    assert_eq!(lab.stats(0).qlen, 20);
    // The default child is treated as empty: the graft succeeds and purges it.
    lab.tc(req(
        TcVerb::Add,
        class(1, 0),
        Some(2),
        Some(QdiscSpec::Netem(netem(5 * MS))),
    ))
    .unwrap();
    assert_eq!(
        lab.blocks(),
        [("tbf", 1, None, false), ("netem", 2, Some((1, 0)), false)]
    );
    let t = lab.stats(0);
    assert_eq!((t.qlen, t.backlog, t.drops), (0, 0, 20));
    assert_eq!(lab.env.drops.packets[DropReason::Purged.index()], 20);
    lab.enqueue(MS, 5, 1514);
    // Lab 16 part 3: change the root tbf; the child and its queue survive.
    lab.tc_at(
        2 * MS,
        req(
            TcVerb::Change,
            root(),
            Some(1),
            Some(tbf(12_500_000, 50_000, 26_214_400)),
        ),
    )
    .unwrap();
    assert_eq!(
        lab.blocks(),
        [("tbf", 1, None, false), ("netem", 2, Some((1, 0)), false)]
    );
    assert_eq!((lab.stats(0).qlen, lab.stats(1).qlen), (5, 5));
    match lab.tree.node_qdisc(0) {
        Some(AnyQdisc::Tbf(t)) => {
            assert_eq!((t.tokens_ns(), t.spec().rate), (4_000_000, 12_500_000))
        }
        _ => panic!(),
    }
    let out = run(&mut lab.tree, &mut lab.env, &[], true, u64::MAX);
    assert!(out.is_empty());
    let mut out = vec![];
    let wd = kick(&mut lab.tree, &mut lab.env, 6 * MS, &mut out);
    assert_eq!((out.len(), wd), (5, None));
    lab.conserved();
}

#[test]
fn tbf_change_sets_a_named_fifo_child_limit() {
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(tbf(125_000_000, 500_000, 100_000)),
    ))
    .unwrap();
    lab.tc(req(
        TcVerb::Add,
        class(1, 1),
        Some(2),
        Some(QdiscSpec::Pfifo { limit: Some(10) }),
    ))
    .unwrap();
    assert_eq!(lab.tree.show()[1].parent, Some((1, 1)));
    lab.tc(req(
        TcVerb::Change,
        root(),
        Some(1),
        Some(tbf(125_000_000, 500_000, 64)),
    ))
    .unwrap();
    // fifo_set_limit hands the byte limit to the pfifo, which reads packets.
    assert_eq!(lab.tree.show()[1].options, json!({"limit": 64}));
}

#[test]
fn deleting_the_tbf_child_leaves_a_black_hole() {
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(tbf(125_000_000, 500_000, 100_000)),
    ))
    .unwrap();
    lab.tc(req(
        TcVerb::Add,
        class(1, 0),
        Some(2),
        Some(QdiscSpec::Pfifo { limit: None }),
    ))
    .unwrap();
    // The anonymous bfifo cannot be deleted (handle 0), the named pfifo can.
    lab.tc(req(TcVerb::Delete, class(1, 0), Some(2), None))
        .unwrap();
    assert_eq!(lab.blocks(), [("tbf", 1, None, false)]);
    let id = lab.env.pkt(100);
    assert_eq!(
        lab.tree.enqueue(&mut lab.env.ctx(0), id),
        Verdict::Dropped(DropReason::Blackhole)
    );
    assert_eq!(lab.stats(0).drops, 1);
    assert_eq!(
        lab.tc(req(TcVerb::Delete, class(1, 0), None, None)),
        Err(TcError::NotFound)
    );
    // A later change of the tbf finds the noop slot and creates a new default bfifo.
    lab.tc(req(
        TcVerb::Change,
        root(),
        Some(1),
        Some(tbf(125_000_000, 500_000, 100_000)),
    ))
    .unwrap();
    assert_eq!(
        lab.blocks(),
        [("tbf", 1, None, false), ("bfifo", 0, Some((1, 1)), true)]
    );
    assert_eq!(
        lab.tc(req(TcVerb::Delete, class(1, 0), None, None)),
        Err(TcError::NotFound)
    );
    lab.conserved();
}

#[test]
fn deleting_the_netem_child_delivers_directly() {
    let mut lab = lab14(QdiscProfile::default(), 160_000);
    lab.enqueue(0, 3, 1514);
    lab.tc(req(
        TcVerb::Delete,
        class(1, 0),
        Some(2),
        Some(tbf(1, 1, 1)),
    ))
    .unwrap();
    assert_eq!(lab.blocks(), [("netem", 1, None, false)]);
    let mut out = vec![];
    kick(&mut lab.tree, &mut lab.env, 20 * MS, &mut out);
    assert_eq!(out.len(), 3);
    lab.conserved();
}

#[test]
fn add_replace_change_delete_errors() {
    let mut lab = Lab::new(QdiscProfile::default());
    let ne = || Some(QdiscSpec::Netem(netem(MS)));
    let pf = || Some(QdiscSpec::Pfifo { limit: None });
    // Nothing to delete on a fresh veth.
    assert_eq!(
        lab.tc(req(TcVerb::Delete, root(), None, None)),
        Err(TcError::NotFound)
    );
    assert_eq!(
        lab.tc(req(TcVerb::Change, None, Some(5), ne())),
        Err(TcError::NotFound)
    );
    assert_eq!(
        lab.tc(req(TcVerb::Link, root(), Some(9), pf())),
        Err(TcError::NotFound)
    );
    lab.tc(req(TcVerb::Add, root(), Some(1), ne())).unwrap();
    // add on an occupied root, with the same or another handle.
    assert_eq!(
        lab.tc(req(TcVerb::Add, root(), Some(1), ne())),
        Err(TcError::Exists)
    );
    assert_eq!(
        lab.tc(req(
            TcVerb::Add,
            root(),
            Some(2),
            Some(tbf(1000, 1000, 1000))
        )),
        Err(TcError::Exists)
    );
    assert_eq!(
        lab.tc(req(TcVerb::Add, root(), None, ne())),
        Err(TcError::Exists)
    );
    assert_eq!(
        lab.tc(req(TcVerb::Change, root(), Some(3), ne())),
        Err(TcError::Exists)
    );
    assert_eq!(
        lab.tc(req(TcVerb::Add, None, Some(1), ne())),
        Err(TcError::Exists)
    );
    // Same handle, other kind: EINVAL.
    let e = lab.tc(req(
        TcVerb::Replace,
        root(),
        Some(1),
        Some(tbf(1000, 1000, 1000)),
    ));
    assert!(matches!(e, Err(TcError::Invalid(_))), "{e:?}");
    assert!(matches!(
        lab.tc(req(TcVerb::Change, None, None, ne())),
        Err(TcError::Invalid(_))
    ));
    assert_eq!(
        lab.tc(req(TcVerb::Change, class(7, 0), Some(2), ne())),
        Err(TcError::NotFound)
    );
    assert!(matches!(
        lab.tc(req(TcVerb::Delete, None, Some(1), None)),
        Err(TcError::Invalid(_))
    ));
    assert!(matches!(
        lab.tc(req(TcVerb::Delete, root(), Some(2), None)),
        Err(TcError::Invalid(_))
    ));
    // change without a handle modifies the root of the same kind.
    lab.tc(req(TcVerb::Change, root(), None, ne())).unwrap();
    assert_eq!(lab.blocks(), [("netem", 1, None, false)]);
    // replace without a handle and another kind: new qdisc, automatic handle.
    lab.tc(req(
        TcVerb::Replace,
        root(),
        None,
        Some(tbf(125_000, 10_000, 10_000)),
    ))
    .unwrap();
    assert_eq!(
        lab.blocks(),
        [
            ("tbf", 0x8001, None, false),
            ("bfifo", 0, Some((0x8001, 1)), true)
        ]
    );
    // The default child does not block an add without handle: 8002.
    lab.tc(req(TcVerb::Add, class(0x8001, 0), None, pf()))
        .unwrap();
    assert_eq!(
        lab.blocks(),
        [
            ("tbf", 0x8001, None, false),
            ("pfifo", 0x8002, Some((0x8001, 0)), false)
        ]
    );
    // A fifo has no classes.
    let e = lab.tc(req(TcVerb::Add, class(0x8002, 0), None, pf()));
    assert!(matches!(e, Err(TcError::Invalid(_))), "{e:?}");
    assert_eq!(lab.auto.next, 0x8004, "the failed create consumed 8003");
    // Loop: graft the root below its own child.
    let e = lab.tc(req(
        TcVerb::Replace,
        class(0x8002, 0),
        Some(0x8001),
        Some(tbf(1000, 1000, 1000)),
    ));
    assert!(matches!(e, Err(TcError::Invalid(_))), "{e:?}");
    // Invalid options are refused before anything changes.
    let e = lab.tc(req(
        TcVerb::Replace,
        root(),
        None,
        Some(QdiscSpec::Tbf(TbfSpec {
            rate: 1000,
            burst: 1000,
            limit: 1000,
            peakrate: Some(10),
            mtu: Some(1514),
            mpu: 0,
            overhead: 0,
            atm: false,
        })),
    ));
    assert!(
        matches!(e, Err(TcError::Invalid(ref m)) if m.contains("peakrate")),
        "{e:?}"
    );
    assert_eq!(lab.blocks()[0].1, 0x8001);
    // delete root restores noqueue.
    lab.tc(req(TcVerb::Delete, root(), None, None)).unwrap();
    assert!(lab.tree.is_noqueue());
    assert_eq!(
        lab.tc(req(TcVerb::Delete, root(), None, None)),
        Err(TcError::NotFound)
    );
    let other = TcRequest {
        dev: "s9-eth9".into(),
        ..req(TcVerb::Add, root(), None, ne())
    };
    assert_eq!(lab.tc(other), Err(TcError::NoDevice("s9-eth9".into())));
}

#[test]
fn automatic_handles_skip_those_in_use() {
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(0x8001),
        Some(tbf(125_000, 10_000, 0)),
    ))
    .unwrap();
    lab.tc(req(
        TcVerb::Add,
        class(0x8001, 0),
        None,
        Some(QdiscSpec::Netem(netem(MS))),
    ))
    .unwrap();
    assert_eq!(lab.blocks()[1].1, 0x8002);
    // The counter is machine-wide: another device continues from it.
    let mut other = QdiscTree::new("s2-eth1", 42, QdiscProfile::default());
    let r = TcRequest {
        dev: "s2-eth1".into(),
        ..req(TcVerb::Add, root(), None, Some(QdiscSpec::Netem(netem(0))))
    };
    other.apply(&r, &mut lab.env.ctx(0), &mut lab.auto).unwrap();
    assert_eq!(other.show()[0].handle, 0x8003);
    let mut a = AutoHandles { next: 0xFFFE };
    assert_eq!(a.alloc(|_| false), Some(0xFFFE));
    assert_eq!(a.alloc(|_| false), Some(0x8000));
    assert_eq!(a.alloc(|h| h == 0x8001), Some(0x8002));
    assert_eq!(AutoHandles::default().alloc(|_| true), None);
}

#[test]
fn replacing_a_loaded_subtree_purges_it() {
    let mut lab = lab14(
        QdiscProfile {
            netem_modern_accounting: true,
            ..Default::default()
        },
        1_000_000,
    );
    // 10 in netem's delay line, 30 in the tbf (bucket empty), 1 ms apart.
    let c = |lab: &mut Lab, t, n| {
        lab.enqueue(t, n, 1514);
        kick(&mut lab.tree, &mut lab.env, t, &mut vec![])
    };
    c(&mut lab, 0, 360);
    c(&mut lab, 20 * MS, 0);
    lab.enqueue(20 * MS, 10, 1514);
    assert_eq!(
        (lab.stats(0).qlen, lab.stats(1).qlen, lab.stats(2).qlen),
        (40, 30, 30)
    );
    // Replace the tbf by a pfifo: its 30 packets are purged.
    lab.tc_at(
        20 * MS,
        req(
            TcVerb::Replace,
            class(1, 0),
            Some(3),
            Some(QdiscSpec::Pfifo { limit: None }),
        ),
    )
    .unwrap();
    assert_eq!(
        lab.blocks(),
        [("netem", 1, None, false), ("pfifo", 3, Some((1, 0)), false)]
    );
    let ne = lab.stats(0);
    assert_eq!((ne.qlen, ne.backlog, ne.drops), (10, 15_140, 30));
    assert_eq!(lab.env.drops.packets[DropReason::Purged.index()], 30);
    lab.conserved();
    // Delete the root: everything else goes.
    lab.tc(req(
        TcVerb::Delete,
        root(),
        Some(1),
        Some(QdiscSpec::Netem(netem(0))),
    ))
    .unwrap();
    assert_eq!(lab.env.arena.live(), 0);
    assert_eq!(lab.tree.held_packets(), 0);
}

#[test]
fn duplicates_below_the_root_are_reinjected_at_the_root() {
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(tbf(125_000_000, 500_000, 100_000)),
    ))
    .unwrap();
    let mut n = netem(MS);
    n.duplicate = u32::MAX;
    lab.tc(req(
        TcVerb::Add,
        class(1, 0),
        Some(2),
        Some(QdiscSpec::Netem(n)),
    ))
    .unwrap();
    let id = lab.env.pkt(1000);
    assert_eq!(lab.tree.enqueue(&mut lab.env.ctx(0), id), Verdict::Queued);
    assert!(lab.env.reinject.is_empty(), "the tree drained its clones");
    // The clone went through the tbf too; netem did not duplicate it again.
    assert_eq!((lab.stats(0).qlen, lab.stats(1).qlen), (2, 2));
    let mut ctx = lab.env.ctx(MS);
    let first = lab.tree.dequeue(&mut ctx).unwrap();
    let second = lab.tree.dequeue(&mut ctx).unwrap();
    assert_eq!(first, id, "original first, then the clone");
    assert_ne!(second, id);
    assert!(lab.tree.dequeue(&mut ctx).is_none());
    assert_eq!(lab.env.arena.created(), 2);
    lab.env.arena.free(first);
    lab.env.arena.free(second);
    lab.conserved();
}

#[test]
fn a_duplicating_netem_never_shares_a_tree_with_another_netem() {
    // sch_netem.c (6.16): two nested `netem duplicate 100%` copy each
    // other's copies for ever; the second is refused, as is any netem next
    // to a duplicating one, and a change that makes one of two netems duplicate
    let mixed = Err(TcError::Invalid(
        "netem: cannot mix duplicating netems with other netems in tree".into(),
    ));
    let dup = || {
        let mut n = netem(0);
        n.duplicate = u32::MAX;
        QdiscSpec::Netem(n)
    };
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(TcVerb::Add, root(), Some(1), Some(dup())))
        .unwrap();
    assert_eq!(
        lab.tc(req(TcVerb::Add, class(1, 0), Some(2), Some(dup()))),
        mixed
    );
    let plain = QdiscSpec::Netem(netem(MS));
    assert_eq!(
        lab.tc(req(TcVerb::Add, class(1, 0), Some(2), Some(plain.clone()))),
        mixed
    );
    assert_eq!(lab.blocks().len(), 1, "nothing changed");
    // a tbf between them changes nothing: the tree is the device's
    lab.tc(req(
        TcVerb::Add,
        class(1, 0),
        Some(2),
        Some(tbf(125_000, 1600, 3000)),
    ))
    .unwrap();
    assert_eq!(
        lab.tc(req(TcVerb::Add, class(2, 0), Some(3), Some(plain.clone()))),
        mixed
    );
    // the duplicating netem may change itself (it does not count against itself)
    lab.tc(req(TcVerb::Change, None, Some(1), Some(dup())))
        .unwrap();
    // two plain netems are fine; turning one into a duplicating one is not
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(TcVerb::Add, root(), Some(1), Some(plain.clone())))
        .unwrap();
    lab.tc(req(TcVerb::Add, class(1, 0), Some(2), Some(plain.clone())))
        .unwrap();
    assert_eq!(
        lab.tc(req(TcVerb::Change, None, Some(2), Some(dup()))),
        mixed
    );
    // replacing the root netem by a duplicating one with another handle: the
    // old one still exists when the new one is created (the kernel's order)
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(TcVerb::Add, root(), Some(1), Some(plain)))
        .unwrap();
    assert_eq!(
        lab.tc(req(TcVerb::Replace, root(), Some(5), Some(dup()))),
        mixed
    );
    // netems grafted on htb classes count too (Mininet's TCLink puts netem there)
    use crate::qdisc::spec::{HtbClassSpec, HtbLeaf, HtbSpec};
    let leaf = |spec: QdiscSpec, handle: u16| HtbLeaf {
        handle,
        spec: Box::new(spec),
        child: None,
    };
    let htb = |leaves: Vec<HtbLeaf>| {
        let classes = leaves
            .into_iter()
            .enumerate()
            .map(|(i, l)| HtbClassSpec {
                classid: 10 + i as u16,
                parent: 0,
                rate: 125_000,
                ceil: 125_000,
                buffer: 12_800_000,
                cbuffer: 12_800_000,
                prio: 0,
                quantum: 0,
                leaf: Some(l),
            })
            .collect();
        QdiscSpec::Htb(HtbSpec {
            default: 10,
            r2q: 10,
            direct_qlen: 1000,
            leaf_limit: 1000,
            classes,
            filters: vec![],
        })
    };
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(htb(vec![leaf(dup(), 0x10)])),
    ))
    .unwrap();
    let two = htb(vec![
        leaf(dup(), 0x10),
        leaf(QdiscSpec::Netem(netem(MS)), 0x11),
    ]);
    assert_eq!(lab.tc(req(TcVerb::Change, None, Some(1), Some(two))), mixed);
    let mut nested = leaf(dup(), 0x10);
    nested.child = Some(Box::new(leaf(dup(), 0x20)));
    let mut lab = Lab::new(QdiscProfile::default());
    assert_eq!(
        lab.tc(req(TcVerb::Add, root(), Some(1), Some(htb(vec![nested])))),
        mixed
    );
}

#[test]
fn netem_under_tbf_arms_its_watchdog_through_the_peek() {
    let mut lab = Lab::new(QdiscProfile::default());
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(tbf(125_000_000, 500_000, 0)),
    ))
    .unwrap();
    lab.tc(req(
        TcVerb::Add,
        class(1, 0),
        Some(2),
        Some(QdiscSpec::Netem(netem(5 * MS))),
    ))
    .unwrap();
    assert_eq!(
        lab.blocks(),
        [("tbf", 1, None, false), ("netem", 2, Some((1, 0)), false)]
    );
    let out = run(
        &mut lab.tree,
        &mut lab.env,
        &[(0, 1514), (MS, 1514)],
        false,
        u64::MAX,
    );
    assert_eq!(out, [(5 * MS, 0), (6 * MS, 1)]);
    // An empty peek is not an overlimit.
    assert_eq!(
        (
            lab.stats(0).overlimits,
            lab.stats(0).packets,
            lab.stats(1).packets
        ),
        (0, 2, 2)
    );
    lab.conserved();
}

#[test]
fn a_throttled_tbf_under_a_tbf_holds_its_packet_in_the_peek_cache() {
    let mut lab = Lab::new(QdiscProfile::default());
    // Outer: one 1000-byte frame per 8 µs but a single-frame bucket;
    // inner: 1 Gbit/s too, bucket of five frames.
    lab.tc(req(
        TcVerb::Add,
        root(),
        Some(1),
        Some(tbf(125_000_000, 1000, 0)),
    ))
    .unwrap();
    lab.tc(req(
        TcVerb::Add,
        class(1, 0),
        Some(2),
        Some(tbf(125_000_000, 5000, 100_000)),
    ))
    .unwrap();
    lab.enqueue(0, 4, 1000);
    let mut out = vec![];
    let wd = kick(&mut lab.tree, &mut lab.env, 0, &mut out);
    assert_eq!((out.len(), wd), (1, Some(8_000)));
    // The inner tbf already released the second frame; it waits in the cache.
    let inner = lab.stats(1);
    assert_eq!((inner.qlen, inner.backlog, inner.packets), (3, 3000, 2));
    assert_eq!((lab.stats(0).qlen, lab.stats(0).overlimits), (3, 1));
    assert_eq!(lab.tree.held_packets(), 3);
    lab.conserved();
    let out = run(&mut lab.tree, &mut lab.env, &[], true, u64::MAX);
    assert!(out.is_empty());
    let mut out = vec![];
    for t in [8_000, 16_000, 24_000] {
        kick(&mut lab.tree, &mut lab.env, t, &mut out);
    }
    assert_eq!(out, [(8_000, 1), (16_000, 2), (24_000, 3)]);
    assert_eq!(
        (lab.stats(0).qlen, lab.stats(1).qlen, lab.stats(2).qlen),
        (0, 0, 0)
    );
    lab.conserved();
}

#[test]
fn conservation_under_lossy_jittery_duplicating_traffic() {
    for profile in [
        QdiscProfile::default(),
        QdiscProfile {
            netem_modern_accounting: true,
            netem_dup_after_limit: true,
        },
    ] {
        let mut lab = Lab::new(profile);
        let mut n = netem(5 * MS);
        n.jitter = 3 * MS;
        n.limit = 200;
        n.loss = NetemLoss::Random { p: u32::MAX / 20 };
        n.duplicate = u32::MAX / 20;
        n.gap = 3;
        n.reorder = Some(NetemPercent {
            p: u32::MAX / 4,
            corr: 0,
        });
        lab.tc(req(TcVerb::Add, root(), Some(1), Some(QdiscSpec::Netem(n))))
            .unwrap();
        lab.tc(req(
            TcVerb::Add,
            class(1, 0),
            Some(2),
            Some(tbf(12_500_000, 15_140, 60_000)),
        ))
        .unwrap();
        let arrivals: Vec<(u64, u32)> = (0..20_000u64)
            .map(|k| (k * 40_000 + (k * 7919) % 30_000, 1514))
            .collect();
        let out = run(&mut lab.tree, &mut lab.env, &arrivals, false, u64::MAX);
        let dropped = lab.env.drops.total_packets();
        assert_eq!(
            lab.env.arena.created(),
            out.len() as u64 + dropped + lab.tree.held_packets()
        );
        assert_eq!(lab.tree.held_packets(), 0);
        let (ne, tb) = (lab.stats(0), lab.stats(1));
        assert_eq!(ne.packets, out.len() as u64);
        // Reordered packets leave from netem's immediate queue, bypassing the child.
        assert_eq!(tb.packets + ne.requeues, out.len() as u64);
        assert!(ne.requeues > 0 && tb.drops > 0 && ne.drops > tb.drops);
        lab.conserved();
    }
}

/// The tree keeps its packet count as packets come and go (the engine asks on
/// every enqueue); through the flow-queueing kinds' overlimit drops at
/// enqueue, AQM drops at dequeue and flows that empty and come back it must
/// match the packets alive and the qdiscs' own stores.
#[test]
fn flow_queueing_kinds_hold_what_they_count() {
    use crate::qdisc::spec::{CakeSpec, DualPi2Spec, FqCodelSpec, FqPieSpec, FqSpec, SfqSpec};
    let kinds = [
        QdiscSpec::FqCodel(FqCodelSpec {
            limit: Some(64),
            ..Default::default()
        }),
        QdiscSpec::Fq(FqSpec {
            limit: Some(64),
            flow_limit: Some(8),
            ..Default::default()
        }),
        QdiscSpec::Sfq(SfqSpec {
            limit: 64,
            ..Default::default()
        }),
        QdiscSpec::FqPie(FqPieSpec {
            limit: Some(64),
            ..Default::default()
        }),
        QdiscSpec::Cake(CakeSpec {
            memlimit: Some(64 * 1514),
            ..Default::default()
        }),
        QdiscSpec::Dualpi2(DualPi2Spec {
            limit: Some(64),
            ..Default::default()
        }),
    ];
    for spec in kinds {
        let mut lab = Lab::new(QdiscProfile::default());
        lab.tc(req(TcVerb::Add, root(), Some(1), Some(spec.clone())))
            .unwrap();
        let mut out = vec![];
        // bursts of 48 packets over 24 ports every 2 ms, half drained at once,
        // the rest after 30 ms (past CoDel's and PIE's targets)
        for round in 0..40u64 {
            let t = round * 2 * MS;
            for k in 0..48u16 {
                let id = lab.env.pkt(1514);
                lab.env.arena.get_mut(id).src_port = 1000 + k % 24;
                lab.tree.enqueue(&mut lab.env.ctx(t), id);
                lab.conserved();
            }
            for _ in 0..24 {
                let mut ctx = lab.env.ctx(t);
                if let Some(id) = lab.tree.dequeue(&mut ctx) {
                    out.push(id);
                    lab.env.arena.free(id);
                }
                lab.conserved();
            }
        }
        kick(&mut lab.tree, &mut lab.env, 200 * MS, &mut vec![]);
        lab.conserved();
        let dropped = lab.env.drops.total_packets();
        assert!(dropped > 0, "{spec:?}: the bursts overflow the limit");
        assert_eq!(lab.tree.held_packets(), 0, "{spec:?}: drained");
    }
}
