//! Per-packet cost of the flow-queueing kinds against fq_codel (issue 25's
//! target: within 1.5×). Not a unit test: run it optimised,
//! `cargo test --release -p bufferlab-core -- --ignored per_packet_cost --nocapture`.
//! 100 forwarded flows of 1514-byte packets, a standing queue of about 400
//! packets (enqueue two, dequeue two), 2 × 10⁶ packets per kind.

use super::dispatch::AnyQdisc;
use super::ops::{BuildEnv, Qdisc, Reduce};
use super::spec::{FqCodelSpec, FqPieSpec, FqSpec, QdiscSpec, SfqSpec};
use super::tree::harness::Env;
use super::QdiscProfile;
use crate::time::SimTime;

fn cost_ns(spec: &QdiscSpec, packets: u64) -> f64 {
    let env_b = BuildEnv {
        seed: 1,
        stream: "bench",
        profile: QdiscProfile::default(),
        now: SimTime::from_nanos(0),
        at_root: true,
    };
    let mut q = AnyQdisc::build(spec, &env_b).expect("valid").qdisc;
    let mut env = Env::default();
    let mut reduce = Reduce::default();
    let gap = 12_112; // 1514 B at 1 Gbit/s, ns
    let mut t = 0u64;
    let mut port = 0u16;
    let enq = |q: &mut AnyQdisc, env: &mut Env, t: u64, reduce: &mut Reduce, port: &mut u16| {
        let id = env.pkt(1514);
        env.arena.get_mut(id).src_port = 1000 + *port;
        *port = (*port + 1) % 100;
        q.enqueue(&mut env.ctx(t), reduce, id, &mut []);
    };
    for _ in 0..400 {
        enq(&mut q, &mut env, t, &mut reduce, &mut port);
    }
    let start = std::time::Instant::now();
    for _ in 0..packets / 2 {
        t += 2 * gap;
        enq(&mut q, &mut env, t, &mut reduce, &mut port);
        enq(&mut q, &mut env, t, &mut reduce, &mut port);
        for _ in 0..2 {
            if let Some(id) = q.dequeue(&mut env.ctx(t), &mut reduce, &mut []) {
                env.arena.free(id);
            }
        }
    }
    start.elapsed().as_nanos() as f64 / packets as f64
}

#[test]
#[ignore]
fn per_packet_cost_against_fq_codel() {
    let n = 2_000_000;
    let kinds = [
        ("fq_codel", QdiscSpec::FqCodel(FqCodelSpec::default())),
        ("fq", QdiscSpec::Fq(FqSpec::default())),
        (
            "sfq",
            QdiscSpec::Sfq(SfqSpec {
                limit: 1000,
                ..Default::default()
            }),
        ),
        ("fq_pie", QdiscSpec::FqPie(FqPieSpec::default())),
    ];
    // warm up, then the median of three rounds
    let mut rows = vec![];
    for (name, spec) in &kinds {
        cost_ns(spec, n / 10);
        let mut v: Vec<f64> = (0..3).map(|_| cost_ns(spec, n)).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        rows.push((*name, v[1]));
    }
    let base = rows[0].1;
    for (name, ns) in &rows {
        eprintln!("{name:9} {ns:7.1} ns/packet  ratio {:.2}", ns / base);
    }
}
