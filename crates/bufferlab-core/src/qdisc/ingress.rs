//! The receive-side hooks of a device and what their filters do
//! (docs/semantics/qdiscs.md §21, docs/models.md "Ingress, ifb and police").
//!
//! Linux sources followed (read for their behaviour, not copied):
//! - net/sched/sch_ingress.c (`ingress_init`, `clsact_init`): the `ingress`
//!   qdisc is a place to hang filters on the receive path (`ffff:fff2`);
//!   `clsact` adds a second list run on transmit before the root qdisc
//!   (`ffff:fff3`). Neither queues: packets are classified and go on.
//! - net/core/dev.c (`sch_handle_ingress`, `sch_handle_egress`): the hook
//!   counts every packet in its qdisc's `Sent` (the length the stack sees
//!   there: without the Ethernet header on receive), then acts on the
//!   verdict of the filters: ok / reclassify / pipe / unspec go on,
//!   shot drops (counted in the qdisc's `dropped`), stolen is consumed.
//! - net/sched/cls_api.c (`__tcf_classify`): filters by ascending `prio`,
//!   a filter whose actions say "continue" passes to the next one,
//!   "reclassify" restarts from the first, at most 16 times, then drops.
//! - net/sched/act_api.c (`tcf_action_exec`): a filter's actions run in
//!   order while each returns "pipe"; the first other verdict ends them.
//! - net/sched/cls_flower.c (`fl_change`, `fl_classify`): a flower filter's
//!   handle is the lowest free from 1 in its prio; the prio's masks are
//!   tried in creation order (classify.rs `classify_rank`) and its first
//!   match answers for the whole prio (a "continue" goes on to the next
//!   prio); a second filter with the same mask and masked key is EEXIST.
//! - net/sched/cls_api.c (`tc_new_tfilter`, `tcf_chain_tp_find`): the
//!   filters of one prio are of one kind and one protocol.
//! - the actions (action.rs: police, mirred, gact); net/sched/act_mirred.c
//!   (`tcf_mirred_act`): a redirect from the receive hook pushes the
//!   Ethernet header back first; a mirror's copies are the engine's to send
//!   ([`Hook::take_mirrored`]).
//! - drivers/net/ifb.c (`ifb_xmit`, `ifb_ri_tasklet`): what an ifb's root
//!   qdisc releases goes back where it was going — into the receive path
//!   of the device it came from (past that device's hook), or, from an
//!   egress hook, into that device's transmit queue.
//!
//! The engine (engine/dev.rs) calls [`Hook::run`] and carries out the verdict
//! (and sends the copies of [`Hook::take_mirrored`]).

use super::action::{action_kind, build_action, Act, Action, Step};
use super::classify::{classify_rank, flower_match};
use super::filter_show::{
    u32_keys, ActionShow, ActionStats, ActionTimes, FilterDump, FilterShow, TpShow,
};
use super::spec::{Classifier, Control, HookFilter, HookSpec};
use crate::error::TcError;
use crate::packet::{Packet, Proto};
use crate::time::SimTime;
use serde::Serialize;

/// `__tcf_classify`'s bound on "reclassify" restarts before it drops.
pub const MAX_RECLASSIFY_LOOP: u32 = 16;

/// The prio of a filter added without one, among the prios of those already
/// there (cls_api.c `tc_new_tfilter`: the kernel looks for the first
/// `tcf_proto` at or above 0x8000, and `tcf_auto_prio` takes one below it,
/// or 0xC000 when there is none; one at 0x8000 itself is ENOSPC).
pub fn auto_prio(prios: impl Iterator<Item = u32>) -> Result<u32, TcError> {
    match prios.filter(|&p| p >= 0x8000).min() {
        None => Ok(0xC000),
        Some(0x8000) => Err(TcError::FilterExtack(
            "Lowest ID from auto-alloc range already in use".into(),
        )),
        Some(p) => Ok(p - 1),
    }
}

/// What a hook decided for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// go on (receive path / root qdisc)
    Pass,
    /// `TC_ACT_SHOT`: the hook frees it
    Drop,
    /// stolen by `mirred egress redirect` to this device index
    Redirect(usize),
}

#[derive(Clone, Debug)]
struct Filter {
    spec: HookFilter,
    /// the kernel's handle: u32's `htid:hash:node` (filter_show.rs), 1 for
    /// matchall (`mall_change`), flower's from 1 in its prio (`fl_change`)
    handle: u32,
    /// flower's `indev` names another device than the hook's: no packet
    /// here was received there (`skb->skb_iif`)
    indev_elsewhere: bool,
    actions: Vec<Act>,
    /// packets it matched (matchall's `rhit`, `mall_classify`)
    hits: u64,
}

impl Filter {
    fn matches(&self, p: &Packet) -> bool {
        if p.proto == Proto::Arp && !self.spec.protocol_all {
            return false;
        }
        if let Some(key) = &self.spec.flower {
            return !self.indev_elsewhere && flower_match(key, p);
        }
        if p.proto == Proto::Arp {
            return self.spec.matches.iter().all(|m| m.mask == 0);
        }
        self.spec.matches.iter().all(|m| {
            if m.mask == 0 {
                return true;
            }
            super::classify::u32_match(m, p)
        })
    }

    /// `tcf_exts_exec`: the actions in order while each pipes (`len` and
    /// `frame` as [`Police::act`] takes them); the devices a mirror copies
    /// to go to `mirrored`.
    fn exec(&mut self, now: SimTime, len: u32, frame: u32, mirrored: &mut Vec<usize>) -> Step {
        let mut last = Control::Pipe;
        for a in &mut self.actions {
            last = match a.run(now, len, frame) {
                Step::Stolen(dev) => return Step::Stolen(dev),
                Step::Mirror(dev) => {
                    mirrored.push(dev);
                    Control::Pipe
                }
                Step::Control(c) => c,
            };
            if last != Control::Pipe {
                break;
            }
        }
        Step::Control(last)
    }
}

/// `tc_new_tfilter`'s checks of a new filter `f` against the filters
/// already on its hook (`egress`: clsact's transmit one): one kind and one
/// protocol per prio (`tcf_chain_tp_find`, `tc_new_tfilter`), no second flower filter of the
/// same mask and masked key (`fl_ht_insert_unique`), and `indev` only where
/// packets are received.
fn check_new_filter<'a>(
    f: &HookFilter,
    egress: bool,
    others: impl Iterator<Item = &'a Filter>,
) -> Result<(), TcError> {
    if egress && f.flower.as_ref().is_some_and(|k| k.indev.is_some()) {
        return Err(TcError::NotSupported(
            "flower indev on the transmit hook is not supported yet".into(),
        ));
    }
    for g in others.filter(|g| g.spec.prio == f.prio) {
        if g.spec.protocol_all != f.protocol_all {
            return Err(TcError::FilterExtack(
                "Protocol mismatch for filter with specified priority".into(),
            ));
        }
        if g.spec.classifier != f.classifier {
            return Err(TcError::FilterExtack(
                "Specified filter kind does not match existing one".into(),
            ));
        }
        if let (Some(a), Some(b)) = (&g.spec.flower, &f.flower) {
            if a.same_masked_key(b) {
                return Err(TcError::FilterErrno("File exists"));
            }
        }
    }
    Ok(())
}

/// Counters of the hook's qdisc (`tc -s qdisc show` of ingress/clsact).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HookStats {
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
}

/// A device's `ingress` or `clsact` qdisc.
#[derive(Clone, Debug)]
pub struct Hook {
    pub clsact: bool,
    pub spec: HookSpec,
    ingress: Vec<Filter>,
    egress: Vec<Filter>,
    pub stats: HookStats,
    /// cls_u32's `tc_u_common` of the qdisc (both clsact hooks share it):
    /// the last hash-table id `gen_new_htid` handed out, `None` while the
    /// qdisc has no u32 filter (filter_show.rs)
    u32_last_htid: Option<u32>,
    /// its `hlist`: the u32 tables as (egress side, prio, table handle),
    /// newest first (`u32_init` puts a new one at the head)
    u32_hlist: Vec<(bool, u32, u32)>,
    /// the devices `mirred … mirror` copied the last packet to, in order
    /// (the engine sends the copies: [`Hook::take_mirrored`])
    mirrored: Vec<usize>,
}

impl Hook {
    /// Build the hook of device `dev` from `spec`; `dev_index` resolves a
    /// mirred target or a flower `indev`.
    /// Filters the spec still holds unchanged keep what `old` built of them
    /// (policer buckets, handles, action indexes and counters: the filters a
    /// `tc filter` verb leaves in place, engine/tc.rs `tc_hook_filter`); a
    /// new one gets its handle here and its actions the lowest indexes that
    /// neither this hook nor `taken` (the other hooks of the namespace:
    /// (kind, index)) holds.
    pub fn new(
        dev: usize,
        clsact: bool,
        spec: &HookSpec,
        now: SimTime,
        dev_index: &dyn Fn(&str) -> Option<usize>,
        old: Option<&Hook>,
        taken: &[(&'static str, u32)],
    ) -> Result<Hook, TcError> {
        if !clsact && !spec.egress.is_empty() {
            return Err(TcError::Invalid(
                "the ingress qdisc has no egress hook (use clsact)".into(),
            ));
        }
        // the filters kept from `old`, each old one used once, in spec order
        let keep = |list: &[HookFilter], built: Option<&[Filter]>| -> Vec<Option<Filter>> {
            let mut free: Vec<Option<&Filter>> = built.unwrap_or(&[]).iter().map(Some).collect();
            list.iter()
                .map(|f| {
                    let slot = free.iter_mut().find(|o| o.is_some_and(|b| b.spec == *f))?;
                    slot.take().cloned()
                })
                .collect()
        };
        let mut sides = [
            keep(&spec.ingress, old.map(|o| o.ingress.as_slice())),
            keep(&spec.egress, old.map(|o| o.egress.as_slice())),
        ];
        let any_u32 = |sides: &[Vec<Option<Filter>>; 2]| {
            sides
                .iter()
                .flatten()
                .flatten()
                .any(|f| f.spec.classifier == Classifier::U32)
        };
        let mut last_htid = if any_u32(&sides) {
            old.and_then(|o| o.u32_last_htid)
        } else {
            None
        };
        let mut hlist: Vec<(bool, u32, u32)> = old.map_or_else(Vec::new, |o| o.u32_hlist.clone());
        hlist.retain(|&(egress, prio, ht)| {
            sides[egress as usize].iter().flatten().any(|f| {
                f.spec.classifier == Classifier::U32
                    && f.spec.prio == prio
                    && f.handle & 0xfff0_0000 == ht
            })
        });
        let mut used: Vec<(&'static str, u32)> = taken.to_vec();
        used.extend(
            sides
                .iter()
                .flatten()
                .flatten()
                .flat_map(|f| f.actions.iter().map(|a| (a.kind(), a.index))),
        );
        for (side, list) in [&spec.ingress, &spec.egress].into_iter().enumerate() {
            for (i, f) in list.iter().enumerate() {
                if sides[side][i].is_some() {
                    continue;
                }
                check_new_filter(f, side == 1, sides[side].iter().flatten())?;
                let handle = match f.classifier {
                    Classifier::Matchall => 1,
                    Classifier::Flower => (1..)
                        .find(|h| {
                            !sides[side].iter().flatten().any(|g| {
                                g.spec.classifier == Classifier::Flower
                                    && g.spec.prio == f.prio
                                    && g.handle == *h
                            })
                        })
                        .expect("a free flower handle"),
                    Classifier::U32 => {
                        let had_u32 = any_u32(&sides);
                        let peers: Vec<u32> = sides[side]
                            .iter()
                            .flatten()
                            .filter(|g| {
                                g.spec.classifier == Classifier::U32 && g.spec.prio == f.prio
                            })
                            .map(|g| g.handle)
                            .collect();
                        let live_htids: Vec<u32> = sides
                            .iter()
                            .flatten()
                            .flatten()
                            .filter(|g| g.spec.classifier == Classifier::U32)
                            .map(|g| super::filter_show::htid_of(g.handle))
                            .collect();
                        let handle = super::filter_show::u32_new_handle(
                            &peers,
                            &live_htids,
                            had_u32,
                            &mut last_htid,
                        )?;
                        if peers.is_empty() {
                            hlist.insert(0, (side == 1, f.prio, handle & 0xfff0_0000));
                        }
                        handle
                    }
                };
                let mut actions = Vec::with_capacity(f.actions.len());
                for a in &f.actions {
                    let action = build_action(a, now, dev_index)?;
                    let kind = action_kind(&action);
                    let index = (1..)
                        .find(|n| !used.contains(&(kind, *n)))
                        .expect("a free action index");
                    used.push((kind, index));
                    actions.push(Act {
                        action,
                        index,
                        stats: ActionStats::default(),
                        installed: now,
                        lastuse: now,
                        firstuse: None,
                    });
                }
                let indev = f.flower.as_ref().and_then(|k| k.indev.as_deref());
                let indev_elsewhere = match indev.map(dev_index) {
                    None => false,
                    Some(Some(i)) => i != dev,
                    Some(None) => {
                        return Err(TcError::FilterExtack("Network device not found".into()))
                    }
                };
                sides[side][i] = Some(Filter {
                    spec: f.clone(),
                    handle,
                    indev_elsewhere,
                    actions,
                    hits: 0,
                });
            }
        }
        let [ingress, egress] = sides.map(|list| {
            let out: Vec<Filter> = list.into_iter().flatten().collect();
            // by prio; within one, flower's masks in creation order
            let mut ranked: Vec<(u32, usize, Filter)> = out
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let rank = classify_rank(&out, i, |g| (g.spec.prio, g.spec.flower.as_ref()));
                    (f.spec.prio, rank, f.clone())
                })
                .collect();
            ranked.sort_by_key(|&(prio, rank, _)| (prio, rank));
            ranked.into_iter().map(|(_, _, f)| f).collect::<Vec<_>>()
        });
        Ok(Hook {
            clsact,
            spec: spec.clone(),
            ingress,
            egress,
            stats: old.map_or(HookStats::default(), |o| o.stats),
            u32_last_htid: last_htid,
            u32_hlist: hlist,
            mirrored: Vec::new(),
        })
    }

    /// (kind, index) of every action of the hook (the namespace's action
    /// tables, for [`Hook::new`]'s `taken`).
    pub fn action_indexes(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        self.ingress
            .iter()
            .chain(self.egress.iter())
            .flat_map(|f| f.actions.iter().map(|a| (a.kind(), a.index)))
    }

    /// The devices the last [`Hook::run`] mirrored the packet to (each gets
    /// a copy on its transmit path before the packet's own verdict is
    /// carried out, as `tcf_mirred_act` sends the clone at once).
    pub fn take_mirrored(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.mirrored)
    }

    /// Does the transmit hook have filters (engine: route through it)?
    #[inline]
    pub fn has_egress(&self) -> bool {
        !self.egress.is_empty()
    }

    /// `sch_handle_ingress` / `sch_handle_egress`: count `p` (of `len`
    /// bytes as the hook sees it) and classify it.
    pub fn run(&mut self, egress: bool, now: SimTime, p: &Packet, len: u32) -> Outcome {
        let filters = if egress { &self.egress } else { &self.ingress };
        if filters.is_empty() {
            // no filter list: the kernel has no mini-qdisc to count in
            return Outcome::Pass;
        }
        self.stats.bytes += len as u64;
        self.stats.packets += 1;
        let filters = if egress {
            &mut self.egress
        } else {
            &mut self.ingress
        };
        let frame = if p.is_gso() {
            p.header_len() + p.gso_size as u32
        } else {
            p.len
        };
        let mut restarts = 0;
        'classify: loop {
            // a flower prio that said "continue": its other filters are passed
            let mut passed_prio: Option<u32> = None;
            for f in filters.iter_mut() {
                if passed_prio == Some(f.spec.prio) || !f.matches(p) {
                    continue;
                }
                f.hits += 1;
                match f.exec(now, len, frame, &mut self.mirrored) {
                    Step::Stolen(dev) => return Outcome::Redirect(dev),
                    Step::Control(Control::Continue) => {
                        if f.spec.classifier == Classifier::Flower {
                            passed_prio = Some(f.spec.prio);
                        }
                        continue;
                    }
                    Step::Control(Control::Reclassify) => {
                        restarts += 1;
                        if restarts >= MAX_RECLASSIFY_LOOP {
                            break 'classify;
                        }
                        continue 'classify;
                    }
                    Step::Control(Control::Drop) => break 'classify,
                    Step::Mirror(_) | Step::Control(Control::Ok | Control::Pipe) => {
                        return Outcome::Pass
                    }
                }
            }
            return Outcome::Pass;
        }
        self.stats.drops += 1;
        Outcome::Drop
    }

    /// Counters of every police action, hook by hook in filter order (show).
    pub fn police_stats(&self) -> Vec<ActionStats> {
        self.ingress
            .iter()
            .chain(self.egress.iter())
            .flat_map(|f| f.actions.iter())
            .filter_map(|a| match &a.action {
                Action::Police(p) => Some(p.stats),
                _ => None,
            })
            .collect()
    }

    /// `tc filter show … parent ffff:MINOR`: the block the qdisc's
    /// `find` and `tcf_block` give (sch_ingress.c: the ingress qdisc has one
    /// block whatever the minor, dumped as `ffff:`; clsact one per hook,
    /// `ffff:fff2` and `ffff:fff3`, and none at `ffff:`).
    pub fn filter_dump(&self, minor: u32, now: SimTime) -> FilterDump {
        let (parent, egress) = match (self.clsact, minor) {
            (false, _) => (0xffff_0000, false),
            (true, 0xfff2) => (0xffff_fff2, false),
            (true, 0xfff3) => (0xffff_fff3, true),
            (true, _) => return FilterDump::default(),
        };
        FilterDump {
            parent,
            tps: self.filter_show(egress, now),
        }
    }

    /// `tc filter show` of one hook (`egress`: clsact's transmit hook) at
    /// `now`: its `tcf_proto`s by prio as cls_api.c dumps them. A u32 one
    /// walks every table of its prio in the qdisc's `hlist` (`u32_walk`),
    /// those of clsact's other hook too, each table's filters by node id.
    fn filter_show(&self, egress: bool, now: SimTime) -> Vec<TpShow> {
        let show = |f: &Filter| FilterShow {
            handle: f.handle,
            hits: f.hits,
            classid: f.spec.classid,
            // f_u32.c: a flowid or an action makes the selector terminal
            terminal: f.spec.classid.is_some() || !f.spec.actions.is_empty(),
            keys: match f.spec.classifier {
                Classifier::U32 => u32_keys(&f.spec.matches),
                Classifier::Matchall | Classifier::Flower => vec![],
            },
            flower: f.spec.flower.clone(),
            actions: f
                .actions
                .iter()
                .zip(&f.spec.actions)
                .map(|(a, spec)| ActionShow {
                    spec: spec.clone(),
                    index: a.index,
                    stats: a.stats(),
                    tm: ActionTimes::at(now, a.installed, a.lastuse, a.firstuse),
                })
                .collect(),
        };
        let list = if egress { &self.egress } else { &self.ingress };
        let mut tps: Vec<TpShow> = Vec::new();
        for f in list {
            let kind = f.spec.classifier;
            if tps.iter().any(|t| t.prio == f.spec.prio && t.kind == kind) {
                continue;
            }
            let filters = match kind {
                Classifier::Matchall | Classifier::Flower => {
                    let mut same: Vec<&Filter> = list
                        .iter()
                        .filter(|g| g.spec.classifier == kind && g.spec.prio == f.spec.prio)
                        .collect();
                    // fl_walk: by handle
                    same.sort_by_key(|g| g.handle);
                    same.into_iter().map(show).collect()
                }
                Classifier::U32 => self
                    .u32_hlist
                    .iter()
                    .filter(|&&(_, prio, _)| prio == f.spec.prio)
                    .flat_map(|&(side, _, ht)| {
                        let owner = if side { &self.egress } else { &self.ingress };
                        let mut nodes: Vec<&Filter> = owner
                            .iter()
                            .filter(|g| {
                                g.spec.classifier == Classifier::U32 && g.handle & 0xfff0_0000 == ht
                            })
                            .collect();
                        nodes.sort_by_key(|g| g.handle);
                        nodes.into_iter().map(show)
                    })
                    .collect(),
            };
            tps.push(TpShow {
                prio: f.spec.prio,
                protocol_all: f.spec.protocol_all,
                kind,
                filters,
            });
        }
        tps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::frame;
    use crate::qdisc::spec::ActionSpec;
    use crate::qdisc::spec::{U32Field, U32Match};

    fn t(ns: u64) -> SimTime {
        SimTime::from_nanos(ns)
    }

    fn hook(filters: Vec<HookFilter>) -> Hook {
        let spec = HookSpec {
            ingress: filters,
            egress: vec![],
        };
        Hook::new(
            0,
            false,
            &spec,
            t(0),
            &|d| (d == "ifb0").then_some(7),
            None,
            &[],
        )
        .unwrap()
    }

    fn filter(prio: u32, actions: Vec<ActionSpec>) -> HookFilter {
        HookFilter {
            prio,
            protocol_all: false,
            classifier: Classifier::U32,
            matches: vec![U32Match {
                field: U32Field::Src,
                value: 0,
                mask: 0,
            }],
            flower: None,
            classid: None,
            actions,
        }
    }

    #[test]
    fn mirred_steals_and_the_hook_counts_everything() {
        let mut h = hook(vec![filter(
            10,
            vec![ActionSpec::Mirred {
                dev: "ifb0".into(),
                mirror: false,
            }],
        )]);
        let p = frame(1514);
        assert_eq!(h.run(false, t(0), &p, 1500), Outcome::Redirect(7));
        assert_eq!(
            h.stats,
            HookStats {
                bytes: 1500,
                packets: 1,
                drops: 0
            }
        );
        let mut arp = p;
        arp.proto = Proto::Arp;
        // protocol ip: ARP passes untouched
        assert_eq!(h.run(false, t(0), &arp, 28), Outcome::Pass);
    }

    #[test]
    fn handles_indexes_and_counters_for_show() {
        let mirred = || {
            vec![ActionSpec::Mirred {
                dev: "ifb0".into(),
                mirror: false,
            }]
        };
        let spec = |filters: Vec<HookFilter>| HookSpec {
            ingress: filters,
            egress: vec![],
        };
        // another hook of the namespace holds mirred 1
        let taken = [("mirred", 1)];
        let h = Hook::new(
            0,
            false,
            &spec(vec![filter(5, mirred()), filter(9, mirred())]),
            t(0),
            &|_| Some(7),
            None,
            &taken,
        )
        .unwrap();
        let d = h.filter_dump(0, t(3_000_000_000));
        assert_eq!(d.parent, 0xffff_0000);
        let shown: Vec<(u32, u32, u32)> = d
            .tps
            .iter()
            .map(|tp| {
                (
                    tp.prio,
                    tp.filters[0].handle,
                    tp.filters[0].actions[0].index,
                )
            })
            .collect();
        assert_eq!(shown, vec![(5, 0x8000_0800, 2), (9, 0x8010_0800, 3)]);
        // installed 3 s ago: 750 jiffies, 300 ticks; never used
        assert_eq!(d.tps[0].filters[0].actions[0].tm.install, 300);
        assert_eq!(d.tps[0].filters[0].actions[0].tm.firstuse, 0);
        // prio 5 deleted, prio 7 added: the next table id (802:), the freed index 2
        let mut h2 = Hook::new(
            0,
            false,
            &spec(vec![filter(9, mirred()), filter(7, mirred())]),
            t(0),
            &|_| Some(7),
            Some(&h),
            &taken,
        )
        .unwrap();
        let p = frame(1000);
        assert_eq!(h2.run(false, t(40_000_000), &p, 986), Outcome::Redirect(7));
        let d = h2.filter_dump(0xfff2, t(1_000_000_000));
        let f = &d.tps[0].filters[0];
        assert_eq!(
            (d.tps[0].prio, f.handle, f.actions[0].index),
            (7, 0x8020_0800, 2)
        );
        assert_eq!(
            (f.hits, f.actions[0].stats.bytes, f.actions[0].stats.packets),
            (1, 986, 1)
        );
        // used at 40 ms (10 jiffies): 240 jiffies before 1 s, 96 ticks
        assert_eq!(f.actions[0].tm.lastuse, 96);
        assert_eq!(d.tps[1].filters[0].actions[0].stats.packets, 0);
    }

    #[test]
    fn mirror_copies_and_the_packet_goes_on() {
        // mirror to 7, then the next action (pipe chain) redirects to 7 as well
        let mirror = ActionSpec::Mirred {
            dev: "ifb0".into(),
            mirror: true,
        };
        let mut h = hook(vec![
            filter(1, vec![mirror.clone()]),
            filter(
                2,
                vec![
                    mirror,
                    ActionSpec::Gact {
                        control: Control::Drop,
                    },
                ],
            ),
        ]);
        let p = frame(1000);
        // the first filter's mirror pipes: the filter says pass, the hook passes
        assert_eq!(h.run(false, t(0), &p, 1000), Outcome::Pass);
        assert_eq!(h.take_mirrored(), vec![7]);
        assert_eq!(h.take_mirrored(), Vec::<usize>::new());
        let dump = h.filter_dump(0, t(0));
        let a = &dump.tps[0].filters[0].actions[0];
        assert_eq!((a.stats.packets, a.stats.bytes), (1, 1000));
        // the second filter is never reached
        assert_eq!(dump.tps[1].filters[0].hits, 0);
    }

    #[test]
    fn unknown_mirred_device_is_an_error() {
        let spec = HookSpec {
            ingress: vec![filter(
                1,
                vec![ActionSpec::Mirred {
                    dev: "ifb9".into(),
                    mirror: false,
                }],
            )],
            egress: vec![],
        };
        let e = Hook::new(0, false, &spec, t(0), &|_| None, None, &[]).unwrap_err();
        assert!(e.to_string().contains("ifb9"), "{e}");
    }

    #[test]
    fn police_pipe_then_mirred_and_continue_to_the_next_filter() {
        let pol = |exceed, conform| ActionSpec::Police {
            rate: 125_000,
            burst_ns: 8_000_000,
            mtu: 0,
            peakrate: None,
            overhead: 0,
            mpu: 0,
            atm: false,
            exceed,
            conform,
        };
        // conform pipes on to mirred; exceed continues to the next filter,
        // which drops
        let mut h = hook(vec![
            filter(
                1,
                vec![
                    pol(Control::Continue, Control::Pipe),
                    ActionSpec::Mirred {
                        dev: "ifb0".into(),
                        mirror: false,
                    },
                ],
            ),
            filter(
                2,
                vec![ActionSpec::Gact {
                    control: Control::Drop,
                }],
            ),
        ]);
        let p = frame(1000);
        assert_eq!(h.run(false, t(0), &p, 1000), Outcome::Redirect(7));
        assert_eq!(h.run(false, t(0), &p, 1000), Outcome::Drop);
        assert_eq!(h.stats.drops, 1);
        assert_eq!(h.police_stats()[0].overlimits, 1);
    }

    #[test]
    fn reclassify_loops_sixteen_times_then_drops() {
        let mut h = hook(vec![filter(
            1,
            vec![ActionSpec::Police {
                rate: 125_000,
                burst_ns: 0,
                mtu: 0,
                peakrate: None,
                overhead: 0,
                mpu: 0,
                atm: false,
                exceed: Control::Reclassify,
                conform: Control::Ok,
            }],
        )]);
        let p = frame(1000);
        assert_eq!(h.run(false, t(0), &p, 1000), Outcome::Drop);
        assert_eq!(h.police_stats()[0].overlimits, 16);
    }

    #[test]
    fn an_unchanged_filter_keeps_its_bucket_across_a_resend() {
        let f = filter(
            1,
            vec![ActionSpec::Police {
                rate: 125_000,
                burst_ns: 8_000_000,
                mtu: 0,
                peakrate: None,
                overhead: 0,
                mpu: 0,
                atm: false,
                exceed: Control::Drop,
                conform: Control::Ok,
            }],
        );
        let mut h = hook(vec![f.clone()]);
        assert_eq!(h.run(false, t(0), &frame(1000), 1000), Outcome::Pass);
        let spec = HookSpec {
            ingress: vec![f, filter(5, vec![])],
            egress: vec![],
        };
        let mut h2 = Hook::new(0, false, &spec, t(0), &|_| Some(7), Some(&h), &[]).unwrap();
        assert_eq!(h2.run(false, t(0), &frame(1000), 1000), Outcome::Drop);
    }

    fn flower(prio: u32, key: crate::qdisc::spec::FlowerKey, control: Control) -> HookFilter {
        HookFilter {
            prio,
            protocol_all: false,
            classifier: Classifier::Flower,
            matches: vec![],
            flower: Some(key),
            classid: None,
            actions: vec![ActionSpec::Gact { control }],
        }
    }

    #[test]
    fn flower_continue_passes_its_whole_prio_and_handles_count_from_one() {
        use crate::qdisc::spec::{FlowerKey, FlowerPort};
        let udp = FlowerKey {
            ip_proto: Some(17),
            ..FlowerKey::default()
        };
        let dport = FlowerKey {
            dst_port: Some(FlowerPort::Masked {
                value: 5201,
                mask: 0xffff,
            }),
            ..udp.clone()
        };
        // prio 1: udp (continue), then the port (drop), which the test frame also
        // matches; fl_classify answers once per prio, so prio 2's pass decides
        let mut h = hook(vec![
            flower(1, udp, Control::Continue),
            flower(1, dport.clone(), Control::Drop),
            flower(2, dport, Control::Ok),
        ]);
        assert_eq!(h.run(false, t(0), &frame(1000), 1000), Outcome::Pass);
        let d = h.filter_dump(0, t(0));
        let seen: Vec<(u32, u32, u64)> = d
            .tps
            .iter()
            .flat_map(|tp| tp.filters.iter().map(move |f| (tp.prio, f.handle, f.hits)))
            .collect();
        assert_eq!(seen, vec![(1, 1, 1), (1, 2, 0), (2, 1, 1)]);
    }

    #[test]
    fn flower_indev_is_the_receiving_device() {
        use crate::qdisc::spec::FlowerKey;
        let on = |dev: &str| FlowerKey {
            indev: Some(dev.into()),
            ..FlowerKey::default()
        };
        let spec = HookSpec {
            ingress: vec![flower(1, on("eth1"), Control::Drop)],
            egress: vec![],
        };
        // the hook of device 3; eth1 is device 3, eth2 device 4
        let names = |d: &str| match d {
            "eth1" => Some(3),
            "eth2" => Some(4),
            _ => None,
        };
        let mut h = Hook::new(3, false, &spec, t(0), &names, None, &[]).unwrap();
        assert_eq!(h.run(false, t(0), &frame(100), 100), Outcome::Drop);
        let spec = HookSpec {
            ingress: vec![flower(1, on("eth2"), Control::Drop)],
            egress: vec![],
        };
        let mut h = Hook::new(3, false, &spec, t(0), &names, None, &[]).unwrap();
        assert_eq!(h.run(false, t(0), &frame(100), 100), Outcome::Pass);
        let spec = HookSpec {
            ingress: vec![flower(1, on("eth9"), Control::Drop)],
            egress: vec![],
        };
        let e = Hook::new(3, false, &spec, t(0), &names, None, &[]).unwrap_err();
        assert_eq!(e, TcError::FilterExtack("Network device not found".into()));
    }
}
