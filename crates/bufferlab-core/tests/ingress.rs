//! System tests of the receive-side hooks: `ingress` + `mirred` to an ifb
//! shaped by tbf, `police` at ingress, clsact's egress hook
//! (docs/semantics/qdiscs.md §21).

use bufferlab_core::time::SimTime;
use bufferlab_core::Simulator;
use serde_json::{json, Value};

const S: u64 = 1_000_000_000;

/// h1 -- s1 -- h2 on veths, no host cost.
fn pair() -> Simulator {
    let cfg = json!({
        "seed": 1,
        "nodes": [{"name": "h1", "kind": "host"}, {"name": "h2", "kind": "host"},
                  {"name": "s1", "kind": "switch"}],
        "links": [
            {"a": {"node": "h1", "intf": "h1-eth0", "ip": "10.0.0.1"}, "b": {"node": "s1", "intf": "s1-eth1"}},
            {"a": {"node": "s1", "intf": "s1-eth2"}, "b": {"node": "h2", "intf": "h2-eth0", "ip": "10.0.0.2"}}
        ],
        "options": {"host_cost": {"packet_ns": 0, "byte_ps": 0, "wakeup_ns": 0}},
    });
    Simulator::from_json(&cfg.to_string()).unwrap()
}

fn tc(sim: &mut Simulator, v: Value) -> Result<(), String> {
    sim.tc(&serde_json::from_value(v).unwrap())
        .map_err(|e| e.to_string())
}

fn hook(verb: &str, dev: &str, kind: &str, ingress: Value, egress: Value) -> Value {
    json!({"verb": verb, "dev": dev, "parent": {"class": {"major": 0xffff, "minor": 0xfff1}},
           "handle": 0xffff, "qdisc": {"kind": kind, "ingress": ingress, "egress": egress}})
}

fn all_to(dev: &str) -> Value {
    json!({"prio": 10, "protocol_all": true, "classifier": "u32",
           "matches": [{"field": "src", "value": 0, "mask": 0}], "classid": 0x10001,
           "actions": [{"kind": "mirred", "dev": dev}]})
}

/// 20 Mbit/s of 1000-byte datagrams from h1 to h2 for 2 s; the sink's bytes.
fn blast(sim: &mut Simulator) -> u64 {
    let sink = sim
        .start_app(
            "h2",
            &json!({"kind": "sink", "port": 5001, "proto": "udp"}).to_string(),
        )
        .unwrap();
    sim.start_app(
        "h1",
        &json!({"kind": "udp_source", "pattern": "cbr", "dst": "10.0.0.2", "port": 5001,
                "rate_bps": 20_000_000, "size": 1000, "duration_ns": 2 * S})
        .to_string(),
    )
    .unwrap();
    sim.run(SimTime(3 * S)).unwrap();
    sim.stop_app(sink).unwrap();
    sim.app_result(sink).unwrap()["bytes"].as_u64().unwrap()
}

fn block<'a>(show: &'a Value, kind: &str) -> &'a Value {
    show.as_array()
        .unwrap()
        .iter()
        .find(|b| b["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in {show}"))
}

#[test]
fn ingress_through_an_ifb_is_shaped_by_its_tbf() {
    let mut sim = pair();
    sim.add_ifb("h2", "ifb0").unwrap();
    assert!(sim
        .add_ifb("h2", "ifb0")
        .unwrap_err()
        .to_string()
        .contains("File exists"));
    // 5 Mbit/s = 625 000 B/s
    tc(&mut sim, json!({"verb": "add", "dev": "ifb0", "parent": "root", "handle": 1,
                        "qdisc": {"kind": "tbf", "rate": 625_000, "burst": 10_000, "limit": 30_000}}))
    .unwrap();
    tc(
        &mut sim,
        hook(
            "add",
            "h2-eth0",
            "ingress",
            json!([all_to("ifb0")]),
            json!([]),
        ),
    )
    .unwrap();
    let bytes = blast(&mut sim);
    // payload share of 5 Mbit/s over 2 s (+ the bucket and the queue)
    // (1000-byte payloads in 1042-byte frames)
    let expect = 625_000.0 * 2.0 * 1000.0 / 1042.0;
    assert!(
        (bytes as f64 - expect).abs() / expect < 0.05,
        "{bytes} vs {expect}"
    );
    let show = serde_json::to_value(sim.qdisc_show("h2-eth0").unwrap()).unwrap();
    let ing = block(&show, "ingress");
    assert_eq!(ing["handle"], 0xffff);
    assert_eq!(ing["parent"], json!([0xffff, 0xfff1]));
    // every frame counted, without its 14-byte Ethernet header
    let pkts = ing["stats"]["packets"].as_u64().unwrap();
    assert!(pkts >= 5000, "{ing}");
    // (and the ARP request, 28 bytes)
    assert_eq!(
        ing["stats"]["bytes"].as_u64().unwrap(),
        (pkts - 1) * 1028 + 28,
        "{ing}"
    );
    let ifb = serde_json::to_value(sim.qdisc_show("ifb0").unwrap()).unwrap();
    let tbf = block(&ifb, "tbf");
    assert!(tbf["stats"]["drops"].as_u64().unwrap() > 1000, "{tbf}");
    let s = sim.summary();
    let p = &s["packets"];
    let n = |k: &str| p[k].as_u64().unwrap();
    assert_eq!(
        n("created"),
        n("delivered") + n("dropped") + n("live") + n("segmented"),
        "{p}"
    );
}

#[test]
fn police_at_ingress_drops_what_exceeds() {
    let mut sim = pair();
    // 5 Mbit/s, burst 10 kB: ticks floor(1e6·10000/625000·15.625) = 250 000
    let police = json!({"prio": 1, "protocol_all": false, "classifier": "u32",
        "matches": [{"field": "src", "value": 0, "mask": 0}],
        "actions": [{"kind": "police", "rate": 625_000, "burst_ns": 250_000u64 << 6, "mtu": 2040,
                     "exceed": "drop", "conform": "ok"}]});
    tc(
        &mut sim,
        hook("add", "h2-eth0", "ingress", json!([police]), json!([])),
    )
    .unwrap();
    let bytes = blast(&mut sim);
    // the policer counts the L3 length (1028 B): 625 000 B/s passes ≈ 608
    // frames/s, plus the 10 kB burst
    let frames = bytes / 1000;
    let expect = (2.0 * 625_000.0 / 1028.0) as u64 + 9;
    assert!(frames.abs_diff(expect) <= 3, "{frames} vs {expect}");
    let show = serde_json::to_value(sim.qdisc_show("h2-eth0").unwrap()).unwrap();
    let ing = block(&show, "ingress");
    let dropped = ing["stats"]["drops"].as_u64().unwrap();
    assert_eq!(
        ing["stats"]["packets"].as_u64().unwrap(),
        frames + dropped + 1,
        "{ing}"
    );
    let pol = &ing["xstats"]["police"][0];
    assert_eq!(pol["drops"].as_u64().unwrap(), dropped);
    assert_eq!(pol["overlimits"].as_u64().unwrap(), dropped);
    let drops = &sim.summary()["interfaces"];
    assert!(drops.to_string().contains("tc_action"), "{drops}");
}

#[test]
fn clsact_egress_through_an_ifb_returns_to_the_device() {
    let mut sim = pair();
    sim.add_ifb("h1", "ifb1").unwrap();
    tc(&mut sim, json!({"verb": "add", "dev": "ifb1", "parent": "root", "handle": 1,
                        "qdisc": {"kind": "tbf", "rate": 625_000, "burst": 10_000, "limit": 30_000}}))
    .unwrap();
    tc(
        &mut sim,
        hook(
            "add",
            "h1-eth0",
            "clsact",
            json!([]),
            json!([all_to("ifb1")]),
        ),
    )
    .unwrap();
    let bytes = blast(&mut sim);
    let expect = 625_000.0 * 2.0 * 1000.0 / 1042.0;
    assert!(
        (bytes as f64 - expect).abs() / expect < 0.05,
        "{bytes} vs {expect}"
    );
}

#[test]
fn hook_verbs_follow_sch_api() {
    let mut sim = pair();
    let e = tc(&mut sim, json!({"verb": "delete", "dev": "h2-eth0", "parent": {"class": {"major": 0xffff, "minor": 0xfff1}},
                                "handle": null, "qdisc": null}))
    .unwrap_err();
    assert!(e.contains("Cannot find specified qdisc"), "{e}");
    tc(
        &mut sim,
        hook("add", "h2-eth0", "ingress", json!([]), json!([])),
    )
    .unwrap();
    let e = tc(
        &mut sim,
        hook("add", "h2-eth0", "ingress", json!([]), json!([])),
    )
    .unwrap_err();
    assert!(e.contains("File exists"), "{e}");
    let e = tc(
        &mut sim,
        hook("add", "h1-eth0", "ingress", json!([]), json!([all_to("x")])),
    )
    .unwrap_err();
    assert!(e.contains("no egress hook"), "{e}");
    // tc filter at the hooks (tc_new_tfilter): egress is clsact's only
    let filter = |hook: &str, f: Value| {
        let req = json!({"verb": "add", "dev": "h2-eth0", "hook": hook, "filter": f});
        serde_json::from_value(req).unwrap()
    };
    let e = sim
        .tc_hook_filter(&filter("egress", all_to("ifb7")))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "Error: Specified class doesn't exist.\nWe have an error talking to the kernel"
    );
    let e = sim
        .tc_hook_filter(&filter("ingress", all_to("ifb7")))
        .unwrap_err()
        .to_string();
    assert!(e.contains("ifb7"), "{e}");
    // the failed filter left the qdisc as it was
    let show = sim.qdisc_show("h2-eth0").unwrap();
    assert_eq!(show.len(), 2);
    assert_eq!(show[1].options["ingress"], json!([]));
    let e = tc(
        &mut sim,
        hook("replace", "h2-eth0", "clsact", json!([]), json!([])),
    )
    .unwrap_err();
    assert!(e.contains("Invalid qdisc name"), "{e}");
    let del = json!({"verb": "delete", "dev": "h2-eth0", "parent": null, "handle": 0xffff, "qdisc": null});
    tc(&mut sim, del).unwrap();
    tc(
        &mut sim,
        hook("replace", "h2-eth0", "clsact", json!([]), json!([])),
    )
    .unwrap();
    assert_eq!(sim.qdisc_show("h2-eth0").unwrap()[1].kind, "clsact");
    tc(&mut sim, json!({"verb": "delete", "dev": "h2-eth0", "parent": null, "handle": 0xffff, "qdisc": null})).unwrap();
    assert_eq!(sim.qdisc_show("h2-eth0").unwrap().len(), 1);
}
