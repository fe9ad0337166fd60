//! prio and pfifo_fast (docs/semantics/qdiscs.md §13, E35–E36).

use super::*;
use crate::qdisc::spec::{U32Field, U32Filter, U32Match};
use crate::qdisc::tree::harness::Env;
use crate::time::SimTime;

fn env0() -> BuildEnv<'static> {
    BuildEnv {
        seed: 1,
        stream: "t",
        profile: Default::default(),
        now: SimTime::ZERO,
        at_root: true,
    }
}

fn spec(bands: u32) -> PrioSpec {
    PrioSpec {
        bands,
        priomap: DEFAULT_PRIOMAP.to_vec(),
        leaf_limit: 1000,
        classes: vec![],
        filters: vec![],
    }
}

fn pkt(env: &mut Env, tos: u8) -> PacketId {
    let id = env.pkt(1000);
    env.arena.get_mut(id).tos = tos;
    id
}

fn enq<Q: Qdisc>(q: &mut Q, env: &mut Env, id: PacketId) -> Verdict {
    q.enqueue(&mut env.ctx(0), &mut Reduce::default(), id, &mut [])
}

fn drain<Q: Qdisc>(q: &mut Q, env: &mut Env) -> Vec<u8> {
    let mut out = vec![];
    while let Some(id) = q.dequeue(&mut env.ctx(0), &mut Reduce::default(), &mut []) {
        out.push(env.arena.get(id).tos);
        env.arena.free(id);
    }
    out
}

#[test]
fn e35_tos_selects_the_band_through_the_priomap() {
    // TOS 0x08 (throughput) → priority 2 → band 2; 0 → priority 0 → band 1;
    // 0x10 (low delay) → priority 6 → band 0; 0x18 → 4 → band 1
    let mut env = Env::default();
    let mut q = Prio::new(&spec(3), &env0()).unwrap();
    for tos in [0x08, 0x00, 0x10, 0x18, 0x11] {
        let id = pkt(&mut env, tos);
        assert_eq!(enq(&mut q, &mut env, id), Verdict::Queued);
    }
    assert_eq!(q.stats().qlen, 5);
    // strict priority: band 0, then 1 (in arrival order), then 2
    assert_eq!(drain(&mut q, &mut env), [0x10, 0x11, 0x00, 0x18, 0x08]);
    assert_eq!((q.stats().qlen, q.stats().packets), (0, 5));
    let x = q.xstats();
    assert_eq!(x["classes"][0]["leaf"][0]["stats"]["packets"], 2);
    assert_eq!(x["classes"][2]["leaf"][0]["stats"]["packets"], 1);
}

#[test]
fn filters_pick_the_band_and_an_out_of_range_flowid_takes_priority_zeros_band() {
    let mut env = Env::default();
    let f = |dport: u32, flowid| U32Filter {
        prio: 1,
        matches: vec![U32Match {
            field: U32Field::Dport,
            value: dport,
            mask: 0xffff,
        }],
        flowid,
        flower: None,
    };
    let mut s = spec(4);
    s.filters = vec![f(5201, 4)];
    let mut q = Prio::new(&s, &env0()).unwrap();
    let id = pkt(&mut env, 0x10);
    enq(&mut q, &mut env, id);
    assert_eq!(q.xstats()["classes"][3]["leaf"][0]["stats"]["qlen"], 1);
    // flowid 1:9 with 4 bands → prio2band[0] = band 1
    s.filters = vec![f(5201, 9)];
    let mut q = Prio::new(&s, &env0()).unwrap();
    let id = pkt(&mut env, 0x10);
    enq(&mut q, &mut env, id);
    assert_eq!(q.xstats()["classes"][1]["leaf"][0]["stats"]["qlen"], 1);
}

#[test]
fn prio_tune_limits() {
    assert!(Prio::new(&spec(1), &env0()).is_err());
    assert!(Prio::new(&spec(17), &env0()).is_err());
    let mut s = spec(2);
    s.priomap[3] = 2;
    let e = Prio::new(&s, &env0()).unwrap_err();
    assert_eq!(e.to_string(), "RTNETLINK answers: Invalid argument");
    let mut s = spec(2);
    s.priomap = vec![0; 16];
    assert!(Prio::new(&s, &env0()).is_ok());
}

#[test]
fn a_graft_replaces_the_bands_pfifo_and_its_removal_restores_it() {
    let mut env = Env::default();
    let mut q = Prio::new(&spec(3), &env0()).unwrap();
    for _ in 0..3 {
        let id = pkt(&mut env, 0);
        enq(&mut q, &mut env, id);
    }
    // graft pfifo limit 1 as 10: on 1:2: the band's 3 packets are purged
    let leaf = HtbLeaf {
        handle: 0x10,
        spec: Box::new(QdiscSpec::Pfifo { limit: Some(1) }),
        child: None,
    };
    let purged = q.graft(2, Some(leaf.clone()), &mut env.ctx(0)).unwrap();
    assert_eq!(purged.packets, 3);
    assert_eq!((q.stats().qlen, q.stats().drops), (0, 3));
    let a = pkt(&mut env, 0);
    let b = pkt(&mut env, 0);
    assert_eq!(enq(&mut q, &mut env, a), Verdict::Queued);
    assert!(matches!(enq(&mut q, &mut env, b), Verdict::Dropped(_)));
    assert_eq!(q.options()["classes"][1]["leaf"]["handle"], 0x10);
    // the same leaf again keeps the queue
    let purged = q.graft(2, Some(leaf), &mut env.ctx(0)).unwrap();
    assert_eq!((purged.packets, q.stats().qlen), (0, 1));
    // fewer bands (`tc qdisc change … prio bands 2`): band 3 goes (empty),
    // band 2's leaf stays
    let mut s2 = spec(2);
    s2.priomap = vec![1; 16];
    let ch = q
        .change(&QdiscSpec::Prio(s2), &mut env.ctx(0), None)
        .unwrap();
    assert_eq!((ch.purged.packets, q.stats().qlen), (0, 1));
    assert_eq!(q.bands.len(), 2);
    assert_eq!(q.options()["classes"][1]["leaf"]["handle"], 0x10);
    // ungrafting puts a default pfifo back, purging the packet
    let purged = q.graft(2, None, &mut env.ctx(0)).unwrap();
    assert_eq!((purged.packets, q.stats().qlen), (1, 0));
    assert!(q.graft(3, None, &mut env.ctx(0)).is_err());
}

#[test]
fn e36_pfifo_fast_serves_band_0_first_and_limits_each_band() {
    let mut env = Env::default();
    let mut q = PfifoFast::default();
    for tos in [0x00, 0x08, 0x10, 0x00] {
        let id = pkt(&mut env, tos);
        enq(&mut q, &mut env, id);
    }
    assert_eq!(q.band_lens(), [1, 2, 1]);
    assert_eq!(drain(&mut q, &mut env), [0x10, 0x00, 0x00, 0x08]);
    // 1000 packets per band: the 1001st of band 1 is dropped while band 0
    // still takes packets
    for _ in 0..1000 {
        let id = pkt(&mut env, 0);
        assert_eq!(enq(&mut q, &mut env, id), Verdict::Queued);
    }
    let id = pkt(&mut env, 0);
    assert_eq!(
        enq(&mut q, &mut env, id),
        Verdict::Dropped(DropReason::QueueFull)
    );
    let id = pkt(&mut env, 0x10);
    assert_eq!(enq(&mut q, &mut env, id), Verdict::Queued);
    assert_eq!((q.stats().qlen, q.stats().drops), (1001, 1));
}

#[test]
fn a_child_under_a_kind_without_a_child_slot_is_refused() {
    // pfifo grafted below a dualpi2 on band 1:1: sch_dualpi2 has no graft
    let mut s = spec(3);
    s.classes = vec![PrioClassSpec {
        classid: 1,
        leaf: Some(HtbLeaf {
            handle: 0x20,
            spec: Box::new(QdiscSpec::Dualpi2(Default::default())),
            child: Some(Box::new(HtbLeaf {
                handle: 0x30,
                spec: Box::new(QdiscSpec::Pfifo { limit: None }),
                child: None,
            })),
        }),
    }];
    let e = Prio::new(&s, &env0()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Error: Operation not supported: qdisc dualpi2 has no classes to attach to.\n\
         RTNETLINK answers: Invalid argument"
    );
}

#[test]
fn netems_grafted_on_bands_are_seen_by_the_duplicate_check() {
    use crate::qdisc::spec::NetemSpec;
    let mut dup = NetemSpec::delay_only(1_000_000);
    dup.duplicate = 1 << 30;
    let mut s = spec(3);
    s.classes = vec![PrioClassSpec {
        classid: 2,
        leaf: Some(HtbLeaf {
            handle: 0x20,
            spec: Box::new(QdiscSpec::Netem(dup)),
            child: None,
        }),
    }];
    let mut found = Vec::new();
    QdiscSpec::Prio(s.clone()).netems(&mut found);
    assert_eq!(found, [true]);
    let q = Prio::new(&s, &env0()).unwrap();
    let mut inner = Vec::new();
    q.inner_netems(&mut inner);
    assert_eq!(inner, [true]);
}
