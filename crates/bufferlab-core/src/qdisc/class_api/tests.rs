//! Tests of the class and filter verbs and of grafts on classes (class_api/
//! with the kinds' `ClassOps`): requests as the command layer sends them
//! (JSON), answers as `tc` prints them.

use super::*;
use crate::packet::Proto;
use crate::qdisc::tree::harness::Env;
use crate::qdisc::{AutoHandles, DropReason, QdiscInfo, QdiscProfile, Verdict};
use serde_json::{json, Value};

const DEV: &str = "s1-eth2";
const MBIT: u64 = 125_000;

struct Lab {
    tree: QdiscTree,
    env: Env,
    auto: AutoHandles,
}

impl Lab {
    fn new() -> Lab {
        Lab {
            tree: QdiscTree::new(DEV, 1, QdiscProfile::default()),
            env: Env::default(),
            auto: AutoHandles::default(),
        }
    }

    /// `tc qdisc …` (a `TcRequest` without `verb`/`dev`: added here).
    fn qdisc(&mut self, verb: &str, rest: Value) -> Result<(), TcError> {
        let mut r = json!({"verb": verb, "dev": DEV, "handle": null});
        r.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        let req: TcRequest = serde_json::from_value(r).unwrap();
        self.tree.apply(&req, &mut self.env.ctx(0), &mut self.auto)
    }

    /// `tc class VERB dev DEV [parent 2:P] classid 2:MINOR [htb rate R]`.
    fn htb_class(
        &mut self,
        verb: &str,
        minor: u16,
        parent: Option<u16>,
        rate: u64,
    ) -> Result<Option<String>, TcError> {
        let class = (verb != "delete").then(|| {
            let buffer = 1600 * 1_000_000_000 / rate;
            json!({"kind": "htb", "rate": rate, "ceil": rate, "buffer": buffer,
                   "cbuffer": buffer, "prio": 0, "quantum": 0})
        });
        self.class(json!({"verb": verb, "dev": DEV, "major": 2, "minor": minor,
                          "parent": parent, "class": class}))
    }

    fn class(&mut self, req: Value) -> Result<Option<String>, TcError> {
        let req: ClassRequest = serde_json::from_value(req).unwrap();
        self.tree.class_request(&req, &mut self.env.ctx(0))
    }

    /// `tc filter add dev DEV parent MAJOR: … match ip dport PORT 0xffff flowid MAJOR:FLOWID`
    /// (`port` None: `tc filter del dev DEV parent MAJOR:`).
    fn filter(&mut self, major: u16, port: Option<u16>, flowid: u16) -> Result<(), TcError> {
        let filter = port.map(|p| {
            json!({"prio": 1, "flowid": flowid,
                   "matches": [{"field": "dport", "value": p, "mask": 0xffff}]})
        });
        let verb = if port.is_some() { "add" } else { "delete" };
        let req = json!({"verb": verb, "dev": DEV, "major": major, "filter": filter});
        self.tree
            .filter_request(&serde_json::from_value(req).unwrap())
    }

    /// A tbf 1: (large) at the root with an htb 2: below it.
    fn tbf_htb() -> Lab {
        let mut lab = Lab::new();
        lab.qdisc(
            "add",
            json!({"parent": "root", "handle": 1, "qdisc": {"kind": "tbf",
            "rate": 1_000_000_000, "burst": 100_000, "limit": 10_000_000}}),
        )
        .unwrap();
        lab.qdisc(
            "add",
            json!({"parent": {"class": {"major": 1, "minor": 0}}, "handle": 2,
            "qdisc": {"kind": "htb", "default": 1, "direct_qlen": 1000, "leaf_limit": 1000}}),
        )
        .unwrap();
        lab
    }

    fn htb(&self) -> QdiscInfo {
        self.tree
            .show()
            .into_iter()
            .find(|b| b.kind == "htb")
            .unwrap()
    }

    /// Enqueue a UDP frame to `dport` at the root.
    fn push(&mut self, dport: u16) -> Verdict {
        let id = self.env.pkt(1000);
        let p = self.env.arena.get_mut(id);
        p.proto = Proto::Udp;
        p.dst_port = dport;
        self.tree.enqueue(&mut self.env.ctx(0), id)
    }
}

/// The (classid, level) of every htb class, in the table's order.
fn levels(b: &QdiscInfo) -> Vec<(u64, u64)> {
    let x = b.xstats.as_ref().unwrap();
    x["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["classid"].as_u64().unwrap(), c["level"].as_u64().unwrap()))
        .collect()
}

#[test]
fn a_class_verb_finds_its_qdisc_by_the_classids_major() {
    let mut lab = Lab::tbf_htb();
    assert_eq!(lab.htb_class("add", 1, Some(0), MBIT), Ok(None));
    let not_found = TcError::Extack("Specified qdisc not found".into());
    for major in [1, 3] {
        let got = lab.class(
            json!({"verb": "add", "dev": DEV, "major": major, "minor": 5,
            "parent": 0, "class": {"kind": "drr", "quantum": null}}),
        );
        assert_eq!(got, Err(not_found.clone()));
        assert_eq!(lab.filter(major, Some(80), 5), Err(not_found.clone()));
    }
    let other_dev = json!({"verb": "delete", "dev": "h1-eth0", "major": 2, "minor": 1,
                           "parent": null, "class": null});
    assert_eq!(
        lab.class(other_dev),
        Err(TcError::NoDevice("h1-eth0".into()))
    );
    // another kind's options: EINVAL, before the class is looked up
    let drr_opts = json!({"verb": "change", "dev": DEV, "major": 2, "minor": 9,
                          "parent": null, "class": {"kind": "drr", "quantum": 1}});
    assert_eq!(lab.class(drr_opts), Err(TcError::Invalid(String::new())));
}

#[test]
fn add_change_delete_follow_htb_change_class_and_htb_delete() {
    let mut lab = Lab::tbf_htb();
    lab.htb_class("add", 1, Some(0), 10 * MBIT).unwrap();
    assert_eq!(levels(&lab.htb()), [(1, 0)]);
    // a child makes its parent an inner class at the top level (7)
    lab.htb_class("add", 0x10, Some(1), MBIT).unwrap();
    lab.htb_class("add", 0x11, Some(0x10), MBIT).unwrap();
    assert_eq!(levels(&lab.htb()), [(1, 7), (0x10, 6), (0x11, 0)]);
    assert_eq!(
        lab.htb_class("add", 0x11, Some(0x10), MBIT),
        Err(TcError::Exists)
    );
    assert_eq!(
        lab.htb_class("delete", 0x10, None, 0)
            .unwrap_err()
            .to_string(),
        "Error: Class has children."
    );
    // change: the options, not the place; the quantum clamp warns
    let warning = lab.htb_class("change", 0x11, None, 8000).unwrap();
    assert_eq!(
        warning.as_deref(),
        Some("Warning: sch_htb: quantum of class 20011 is small. Consider r2q change.")
    );
    let x = lab.htb().xstats.unwrap();
    assert_eq!(
        (
            x["classes"][2]["rate"].as_u64(),
            x["classes"][2]["parent"].as_u64()
        ),
        (Some(8000), Some(0x10))
    );
    assert_eq!(x["warnings"], json!([{"classid": 0x11, "what": "small"}]));
    // deleting the last child makes the parent a leaf again, with a default pfifo
    lab.htb_class("delete", 0x11, None, 0).unwrap();
    let b = lab.htb();
    assert_eq!(levels(&b), [(1, 7), (0x10, 0)]);
    assert_eq!(b.xstats.unwrap()["classes"][1]["leaf"][0]["kind"], "pfifo");
    let missing = Err(TcError::Extack("Specified class not found".into()));
    assert_eq!(lab.htb_class("delete", 0x11, None, 0), missing);
    assert_eq!(lab.htb_class("change", 0x11, None, MBIT), missing);
    // the document lists the classes in the order they were made
    let classes = &lab.htb().options["classes"];
    assert_eq!(
        (
            classes[0]["classid"].as_u64(),
            classes[1]["classid"].as_u64()
        ),
        (Some(1), Some(0x10))
    );
}

#[test]
fn a_new_child_purges_its_parents_queue_and_the_ancestors_see_it() {
    let mut lab = Lab::tbf_htb();
    lab.htb_class("add", 1, Some(0), MBIT).unwrap();
    for _ in 0..3 {
        // default class 2:1; the tbf's token bucket lets them through, the
        // htb class holds them (1 Mbit/s, a 1600 B bucket)
        lab.push(5000);
    }
    let held = lab.htb().stats.qlen;
    assert!(held > 0);
    lab.htb_class("add", 0x10, Some(1), MBIT).unwrap();
    let blocks = lab.tree.show();
    assert_eq!((blocks[0].stats.qlen, blocks[0].stats.drops), (0, held));
    assert_eq!((blocks[1].stats.qlen, blocks[1].stats.drops), (0, held));
    assert_eq!(lab.tree.held_backlog(), (0, 0));
    assert_eq!(lab.env.drops.packets[DropReason::Purged.index()], held);
}

#[test]
fn grafts_replace_a_leaf_or_the_child_of_a_qdisc_in_it() {
    let mut lab = Lab::tbf_htb();
    lab.htb_class("add", 1, Some(0), MBIT).unwrap();
    let on_class = |handle: u16, kind: Value| json!({"parent": {"class": {"major": 2, "minor": 1}}, "handle": handle, "qdisc": kind});
    let tbf = json!({"kind": "tbf", "rate": MBIT, "burst": 5000, "limit": 10_000});
    lab.qdisc("add", on_class(6, tbf.clone())).unwrap();
    assert_eq!(
        lab.qdisc("add", on_class(7, tbf.clone()))
            .unwrap_err()
            .to_string(),
        "Error: Exclusivity flag on, cannot modify."
    );
    // `parent 6:` is the child slot of the qdisc 6: grafted on 2:1
    let child = json!({"parent": {"class": {"major": 6, "minor": 0}}, "handle": 0x10,
                       "qdisc": {"kind": "netem", "limit": 1000, "latency": 5_000_000,
                                 "jitter": 0, "loss": {"model": "random", "p": 0},
                                 "gap": 0, "duplicate": 0}});
    lab.qdisc("add", child).unwrap();
    let leaf = &lab.htb().options["classes"][0]["leaf"];
    assert_eq!(
        (leaf["handle"].as_u64(), leaf["child"]["handle"].as_u64()),
        (Some(6), Some(0x10))
    );
    assert_eq!(leaf["child"]["spec"]["kind"], "netem");
    // replacing the leaf drops what was grafted below it; a delete restores the pfifo
    lab.qdisc("replace", on_class(6, tbf)).unwrap();
    assert!(lab.htb().options["classes"][0]["leaf"]["child"].is_null());
    lab.qdisc(
        "delete",
        json!({"parent": {"class": {"major": 2, "minor": 1}}, "qdisc": null}),
    )
    .unwrap();
    let b = lab.htb();
    assert!(b.options["classes"][0]["leaf"].is_null());
    assert_eq!(
        b.xstats.unwrap()["classes"][0]["leaf"][0]["anonymous"],
        true
    );
    let none = json!({"parent": {"class": {"major": 2, "minor": 9}}, "handle": 9,
                      "qdisc": {"kind": "pfifo", "limit": 1}});
    assert_eq!(
        lab.qdisc("add", none),
        Err(TcError::Extack("Specified class not found".into()))
    );
}

#[test]
fn a_graft_keeps_the_duplicating_netem_rule() {
    let mut lab = Lab::tbf_htb();
    lab.htb_class("add", 1, Some(0), MBIT).unwrap();
    lab.htb_class("add", 2, Some(0), MBIT).unwrap();
    let netem = |minor: u16, duplicate: u32| {
        json!({"parent": {"class": {"major": 2, "minor": minor}}, "handle": 0x10 + minor,
               "qdisc": {"kind": "netem", "limit": 1000, "latency": 1_000_000, "jitter": 0,
                         "loss": {"model": "random", "p": 0}, "gap": 0, "duplicate": duplicate}})
    };
    lab.qdisc("add", netem(1, 0)).unwrap();
    let e = lab.qdisc("add", netem(2, 1 << 20)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Error: netem: cannot mix duplicating netems with other netems in tree.\nRTNETLINK answers: Invalid argument"
    );
    // the netem it replaces does not count
    lab.qdisc("replace", netem(1, 1 << 20)).unwrap();
}

#[test]
fn filters_are_added_and_removed_at_their_qdisc() {
    let mut lab = Lab::tbf_htb();
    lab.htb_class("add", 1, Some(0), MBIT).unwrap();
    lab.htb_class("add", 2, Some(0), 10 * MBIT).unwrap();
    lab.filter(2, Some(80), 2).unwrap();
    lab.filter(2, Some(81), 2).unwrap();
    assert_eq!(lab.htb().options["filters"].as_array().unwrap().len(), 2);
    lab.push(80);
    lab.push(443);
    let x = lab.htb().xstats.unwrap();
    let queued = |i: usize| {
        x["classes"][i]["qlen"].as_u64().unwrap() + x["classes"][i]["packets"].as_u64().unwrap()
    };
    assert_eq!(
        (queued(0), queued(1)),
        (1, 1),
        "port 80 to 2:2, the other to the default 2:1"
    );
    lab.filter(2, None, 0).unwrap();
    assert_eq!(lab.htb().options["filters"], json!([]));
}

#[test]
fn class_verbs_make_what_the_document_made() {
    // the classes, leaves and filters of a creating request are made as the
    // verbs make them: the two roads lead to the same qdisc
    let doc = json!({"kind": "htb", "default": 0x10, "r2q": 10, "direct_qlen": 1000,
        "leaf_limit": 1000, "filters": [{"prio": 1, "flowid": 0x10,
            "matches": [{"field": "dport", "value": 80, "mask": 0xffff}]}],
        "classes": [
            {"classid": 1, "parent": 0, "rate": 1_250_000, "ceil": 1_250_000, "buffer": 1_280_000,
             "cbuffer": 1_280_000, "prio": 0, "quantum": 0, "leaf": null},
            {"classid": 0x10, "parent": 1, "rate": 8000, "ceil": 1_250_000, "buffer": 200_000_000,
             "cbuffer": 1_280_000, "prio": 1, "quantum": 0,
             "leaf": {"handle": 0x10, "spec": {"kind": "pfifo", "limit": 5}, "child": null}}]});
    let mut whole = Lab::new();
    whole
        .qdisc(
            "add",
            json!({"parent": "root", "handle": 2, "qdisc": doc.clone()}),
        )
        .unwrap();
    let mut verbs = Lab::new();
    let bare = json!({"kind": "htb", "default": 0x10, "direct_qlen": 1000, "leaf_limit": 1000});
    verbs
        .qdisc("add", json!({"parent": "root", "handle": 2, "qdisc": bare}))
        .unwrap();
    for c in doc["classes"].as_array().unwrap() {
        let mut class = c.clone();
        let m = class.as_object_mut().unwrap();
        let (minor, parent) = (m.remove("classid").unwrap(), m.remove("parent").unwrap());
        m.remove("leaf");
        m.insert("kind".into(), json!("htb"));
        verbs
            .class(
                json!({"verb": "add", "dev": DEV, "major": 2, "minor": minor,
                          "parent": parent, "class": class}),
            )
            .unwrap();
    }
    verbs
        .qdisc(
            "add",
            json!({"parent": {"class": {"major": 2, "minor": 0x10}}, "handle": 0x10,
                             "qdisc": {"kind": "pfifo", "limit": 5}}),
        )
        .unwrap();
    verbs.filter(2, Some(80), 0x10).unwrap();
    let (a, b) = (whole.htb(), verbs.htb());
    assert_eq!(a.options, b.options);
    assert_eq!(a.xstats, b.xstats);
}
