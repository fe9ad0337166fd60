//! ETS: strict bands first, the quanta's 2:1 share measured, priomap by
//! TOS, a flowid beyond the bands, the kernel's refusals.

use super::*;
use crate::qdisc::classful::testkit::{assert_near, build_env, dport_filter, pop, push, saturate};
use crate::qdisc::spec::U32Filter;
use crate::qdisc::tree::harness::Env;

fn ets(bands: u8, strict: u8, quanta: &[u32], filters: Vec<U32Filter>) -> Ets {
    let spec = EtsSpec {
        bands,
        strict,
        quanta: quanta.to_vec(),
        priomap: vec![bands - 1; 16],
        leaf_limit: 1000,
        classes: vec![],
        filters,
    };
    Ets::new(&spec, &build_env()).unwrap()
}

#[test]
fn strict_band_first_then_quanta() {
    // band 1 strict; bands 2 and 3 share 3000 : 1000
    let mut e = ets(
        3,
        1,
        &[3000, 1000],
        vec![dport_filter(1, 1), dport_filter(2, 2), dport_filter(3, 3)],
    );
    assert_eq!(
        e.bands().iter().map(|b| b.quantum).collect::<Vec<_>>(),
        vec![0, 3000, 1000]
    );
    let mut env = Env::default();
    for _ in 0..4 {
        push(&mut e, &mut env, 0, 3, 1000);
        push(&mut e, &mut env, 0, 2, 1000);
    }
    push(&mut e, &mut env, 0, 1, 1000);
    // the strict band goes first although it arrived last
    assert_eq!(pop(&mut e, &mut env, 0), Ok((1, 1000)));
    // band 3 became active first: deficit 1000 → sends, 0 left
    assert_eq!(pop(&mut e, &mut env, 0), Ok((3, 1000)));
    // band 3 0 < 1000 → +1000, tail; band 2: 3000 → three packets
    assert_eq!(pop(&mut e, &mut env, 0), Ok((2, 1000)));
    assert_eq!(pop(&mut e, &mut env, 0), Ok((2, 1000)));
    assert_eq!(pop(&mut e, &mut env, 0), Ok((2, 1000)));
    assert_eq!(pop(&mut e, &mut env, 0), Ok((3, 1000)));
    assert_eq!(e.bands()[2].deficit, 0);
}

#[test]
fn quanta_shares_measured() {
    let mut e = ets(
        2,
        0,
        &[3000, 1500],
        vec![dport_filter(1, 1), dport_filter(2, 2)],
    );
    let mut env = Env::default();
    let sent = saturate(&mut e, &mut env, &[1, 2], 1500, 1_250_000, 4);
    assert_near(sent[0] as f64 / sent[1] as f64, 2.0, 0.01);
    // default quanta are psched_mtu each: equal shares
    let mut e = ets(2, 0, &[], vec![dport_filter(1, 1), dport_filter(2, 2)]);
    let mut env = Env::default();
    let sent = saturate(&mut e, &mut env, &[1, 2], 1500, 1_250_000, 2);
    assert_near(sent[0] as f64 / sent[1] as f64, 1.0, 0.01);
    // a strict band starves the others while backlogged
    let mut e = ets(2, 1, &[], vec![dport_filter(1, 1), dport_filter(2, 2)]);
    let mut env = Env::default();
    let sent = saturate(&mut e, &mut env, &[1, 2], 1500, 1_250_000, 1);
    assert_eq!(sent[1], 0);
}

#[test]
fn priomap_by_tos_and_flowid_out_of_range() {
    let mut spec = EtsSpec {
        bands: 3,
        strict: 3,
        quanta: vec![],
        priomap: vec![2; 16],
        leaf_limit: 100,
        classes: vec![],
        filters: vec![dport_filter(9, 7)],
    };
    // TOS 0x10 (low delay) is priority 6 (TC_PRIO_INTERACTIVE)
    spec.priomap[6] = 0;
    spec.priomap[0] = 1;
    let mut e = Ets::new(&spec, &build_env()).unwrap();
    let mut env = Env::default();
    let id = env.pkt(100);
    env.arena.get_mut(id).tos = 0x10;
    let mut reduce = Reduce::default();
    e.enqueue(&mut env.ctx(0), &mut reduce, id, &mut []);
    assert_eq!(classful::leaf_backlog(&e.bands()[0].leaf).0, 1);
    // flowid 1:7 with 3 bands → priomap[0] = band 2 (index 1)
    push(&mut e, &mut env, 0, 9, 100);
    assert_eq!(classful::leaf_backlog(&e.bands()[1].leaf).0, 1);
    // no filter, TOS 0 → priomap[0]
    push(&mut e, &mut env, 0, 5, 100);
    assert_eq!(classful::leaf_backlog(&e.bands()[1].leaf).0, 2);
}

#[test]
fn refusals() {
    let base = EtsSpec {
        bands: 2,
        strict: 0,
        quanta: vec![],
        priomap: vec![1; 16],
        leaf_limit: 100,
        classes: vec![],
        filters: vec![],
    };
    let err = |s: EtsSpec| Ets::new(&s, &build_env()).unwrap_err().to_string();
    assert!(err(EtsSpec {
        bands: 17,
        ..base.clone()
    })
    .contains("Invalid number of bands"));
    assert!(err(EtsSpec {
        strict: 3,
        ..base.clone()
    })
    .contains("Invalid number of strict bands"));
    assert!(err(EtsSpec {
        quanta: vec![1, 2, 3],
        ..base.clone()
    })
    .contains("Too many quanta"));
    assert!(err(EtsSpec {
        quanta: vec![0],
        ..base.clone()
    })
    .contains("cannot be zero"));
    assert!(err(EtsSpec {
        priomap: vec![2],
        ..base.clone()
    })
    .contains("Invalid band number"));
}
