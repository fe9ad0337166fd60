//! DRR: hand-computed deficits, the measured 3:1 share of two quanta,
//! unclassified drops, a class leaving and re-entering the round.

use super::*;
use crate::qdisc::classful::testkit::{assert_near, build_env, dport_filter, pop, push, saturate};
use crate::qdisc::tree::harness::Env;

fn drr(classes: &[(u16, u32)]) -> Drr {
    let spec = DrrSpec {
        leaf_limit: 1000,
        classes: classes
            .iter()
            .map(|&(classid, quantum)| DrrClassSpec {
                classid,
                quantum,
                leaf: None,
            })
            .collect(),
        filters: classes.iter().map(|&(c, _)| dport_filter(c, c)).collect(),
    };
    Drr::new(&spec, &build_env()).unwrap()
}

fn deficits(d: &Drr) -> Vec<i64> {
    d.classes().iter().map(|c| c.deficit).collect()
}

#[test]
fn deficits_hand_computed() {
    // class 1: quantum 1500, class 2: quantum 500; 1000-byte packets.
    let mut d = drr(&[(1, 1500), (2, 500)]);
    let mut env = Env::default();
    for _ in 0..4 {
        push(&mut d, &mut env, 0, 1, 1000);
        push(&mut d, &mut env, 0, 2, 1000);
    }
    // first packets set the deficits to the quanta
    assert_eq!(deficits(&d), vec![1500, 500]);
    // 1: 1000 ≤ 1500 → class 1 sends, 500 left
    assert_eq!(pop(&mut d, &mut env, 0), Ok((1, 1000)));
    assert_eq!(deficits(&d), vec![500, 500]);
    // 2: class 1 500 < 1000 → +1500 = 2000, tail; class 2 500 < 1000 →
    //    +500 = 1000, tail; class 1 sends: 2000 − 1000 = 1000
    assert_eq!(pop(&mut d, &mut env, 0), Ok((1, 1000)));
    assert_eq!(deficits(&d), vec![1000, 1000]);
    // 3: class 1 again: 1000 − 1000 = 0
    assert_eq!(pop(&mut d, &mut env, 0), Ok((1, 1000)));
    assert_eq!(deficits(&d), vec![0, 1000]);
    // 4: class 1 0 → 1500, tail; class 2 sends: 1000 − 1000 = 0
    assert_eq!(pop(&mut d, &mut env, 0), Ok((2, 1000)));
    assert_eq!(deficits(&d), vec![1500, 0]);
    // 5: class 2 → 500, tail; class 1 sends: 1500 − 1000 = 500
    assert_eq!(pop(&mut d, &mut env, 0), Ok((1, 1000)));
    assert_eq!(deficits(&d), vec![500, 500]);
    let x = d.xstats();
    // class 1 sent its 4 packets: not backlogged, the kernel reports deficit 0
    assert_eq!(x["classes"][0]["deficit"], 0);
    assert_eq!(x["classes"][1]["deficit"], 500);
    assert_eq!(x["classes"][0]["packets"], 4);
    assert_eq!(x["classes"][1]["packets"], 1);
    assert_eq!(d.stats().qlen, 3);
}

#[test]
fn shares_follow_quanta() {
    // quanta 4500 : 1500 → 3 : 1 of the bytes, whatever the line rate
    let mut d = drr(&[(1, 4500), (2, 1500)]);
    let mut env = Env::default();
    let sent = saturate(&mut d, &mut env, &[1, 2], 1500, 1_250_000, 4);
    assert_near(sent[0] as f64 / sent[1] as f64, 3.0, 0.01);
    // unequal packet sizes: 1000-byte packets against a 1500 quantum still
    // get the class its quantum per round on average
    let mut d = drr(&[(1, 1500), (2, 1500)]);
    let mut env = Env::default();
    let a = saturate(&mut d, &mut env, &[1], 1000, 1_250_000, 1)[0];
    assert!(a > 0);
}

#[test]
fn unclassified_is_dropped() {
    let mut d = drr(&[(1, 1500)]);
    let mut env = Env::default();
    assert_eq!(
        push(&mut d, &mut env, 0, 9, 100),
        Verdict::Dropped(DropReason::Unclassified)
    );
    assert_eq!(d.stats().drops, 1);
    assert_eq!(
        env.drops.total_packets(),
        1,
        "counted against the interface as unclassified"
    );
    // a filter naming a class that does not exist drops too
    let mut spec: DrrSpec = serde_json::from_value(d.options()).unwrap();
    spec.filters.push(dport_filter(7, 0x70));
    let mut d = Drr::new(&spec, &build_env()).unwrap();
    assert!(matches!(
        push(&mut d, &mut env, 0, 7, 100),
        Verdict::Dropped(DropReason::Unclassified)
    ));
}

#[test]
fn idle_class_reenters_with_a_fresh_quantum() {
    let mut d = drr(&[(1, 1500), (2, 1500)]);
    let mut env = Env::default();
    push(&mut d, &mut env, 0, 1, 1000);
    assert_eq!(pop(&mut d, &mut env, 0), Ok((1, 1000)));
    assert_eq!(pop(&mut d, &mut env, 0), Err(None));
    // the class left the round with 500 of deficit; it comes back with 1500
    push(&mut d, &mut env, 1, 1, 1200);
    assert_eq!(deficits(&d)[0], 1500);
    assert_eq!(pop(&mut d, &mut env, 1), Ok((1, 1200)));
}

#[test]
fn zero_quantum_is_refused_and_duplicate_classid_exists() {
    let spec = DrrSpec {
        leaf_limit: 10,
        classes: vec![DrrClassSpec {
            classid: 1,
            quantum: 0,
            leaf: None,
        }],
        filters: vec![],
    };
    let e = Drr::new(&spec, &build_env()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Error: Specified DRR quantum cannot be zero.\nRTNETLINK answers: Invalid argument"
    );
}
