//! `tc filter show`: the filters of a qdisc as the kernel dumps them
//! (docs/semantics/formats.md "tc filter show"); the command layer
//! (python/bufferlab/commands/tc/filter_show.py) prints them as iproute2 does.
//!
//! Linux sources followed (read for their behaviour, not copied):
//! - net/sched/cls_api.c (`tc_dump_tfilter`, `tcf_chain_dump`): one
//!   `tcf_proto` per (prio, protocol) in ascending prio, each dumped as a
//!   header then its filters.
//! - net/sched/cls_u32.c (`u32_init`, `gen_new_htid`, `gen_new_kid`,
//!   `u32_walk`): the first u32 `tcf_proto` of a qdisc creates its
//!   `tc_u_common` and a root hash table `800:`; every later one takes
//!   `(id | 0x800) << 20` with `id` from a cyclic allocator over 1..0x7fe
//!   (shared by both hooks of a clsact, freed with the last u32 filter);
//!   a filter's node id is the lowest free one from 0x800 in its table, and
//!   the walk lists the table, then its nodes by node id.
//! - net/sched/cls_matchall.c (`mall_change`): one filter per prio, handle 1.
//! - net/sched/cls_flower.c (`fl_change`, `fl_walk`, `fl_dump`): handles
//!   from 1 in each prio, dumped by handle with their keys and flags.
//! - net/sched/act_api.c (`tcf_tm_dump`): an action's installed, last-use
//!   and first-use ages in clock ticks (`jiffies_to_clock_t`, USER_HZ 100).
//! - iproute2 tc/f_u32.c (`parse_ip`, `pack_key`): how `match ip …` becomes
//!   the (value, mask, offset) keys the kernel stores and dumps.

use super::spec::{ActionSpec, Classifier, FlowerKey, U32Field, U32Filter, U32Match};
use crate::error::TcError;
use crate::time::SimTime;
use serde::Serialize;

/// What `tc_dump_tfilter` sends: the block's classid, which every message
/// carries as `tcm_parent`, and its `tcf_proto`s.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FilterDump {
    pub parent: u32,
    pub tps: Vec<TpShow>,
}

/// One `tcf_proto`: the filters of one prio.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TpShow {
    pub prio: u32,
    /// `protocol all` (else `ip`)
    pub protocol_all: bool,
    pub kind: Classifier,
    /// by handle
    pub filters: Vec<FilterShow>,
}

/// One filter: its handle (u32's `htid:hash:node`, matchall's 1), the
/// `flowid`, u32's keys and the actions.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FilterShow {
    pub handle: u32,
    /// packets it matched (the hooks' filters; 0 for a classful qdisc's)
    pub hits: u64,
    pub classid: Option<u32>,
    /// u32's `TC_U32_TERMINAL` (a flowid or an action was given)
    pub terminal: bool,
    pub keys: Vec<U32Key>,
    /// flower's keys
    pub flower: Option<FlowerKey>,
    pub actions: Vec<ActionShow>,
}

/// A `struct tc_u32_key` in host order: `(word at off) & mask == val`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct U32Key {
    pub val: u32,
    pub mask: u32,
    pub off: u32,
}

/// Counters of one action (`tc -s filter show`'s `Action statistics`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ActionStats {
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
}

/// One action with what the kernel keeps of it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActionShow {
    #[serde(flatten)]
    pub spec: ActionSpec,
    pub index: u32,
    pub stats: ActionStats,
    pub tm: ActionTimes,
}

/// `struct tcf_t` as `tcf_tm_dump` fills it: ages in clock ticks (1/100 s);
/// `firstuse` 0 for an action never used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ActionTimes {
    pub install: u64,
    pub lastuse: u64,
    pub firstuse: u64,
}

/// `CONFIG_HZ` of the modelled kernel: 250, the value tcp/cc's `HZ` has
/// (docs/semantics/tcp.md §1; qdiscs sit below tcp, so it is not imported).
const HZ: u64 = 250;
/// ns per jiffy.
const NS_PER_JIFFY: u64 = 1_000_000_000 / HZ;
/// ns per clock tick (USER_HZ 100).
const NS_PER_CLOCK_T: u64 = 10_000_000;

fn jiffies(t: SimTime) -> u64 {
    t.as_nanos() / NS_PER_JIFFY
}

/// `jiffies_to_clock_t` of the jiffies between `then` and `now`.
fn clock_t(now: SimTime, then: SimTime) -> u64 {
    jiffies(now).saturating_sub(jiffies(then)) * NS_PER_JIFFY / NS_PER_CLOCK_T
}

impl ActionTimes {
    pub fn at(
        now: SimTime,
        installed: SimTime,
        lastuse: SimTime,
        firstuse: Option<SimTime>,
    ) -> ActionTimes {
        ActionTimes {
            install: clock_t(now, installed),
            lastuse: clock_t(now, lastuse),
            firstuse: firstuse.map_or(0, |f| clock_t(now, f)),
        }
    }
}

/// The keys tc packs for `matches` (f_u32.c `parse_ip` → `pack_key32/16/8`:
/// a field at byte offset `o` of the IP header goes into the 32-bit word at
/// `o & !3`, shifted to its place; keys of the same word merge).
pub fn u32_keys(matches: &[U32Match]) -> Vec<U32Key> {
    let mut keys: Vec<U32Key> = Vec::new();
    for m in matches {
        let (shift, off) = match m.field {
            U32Field::Any => (0, 0),
            U32Field::Src => (0, 12),
            U32Field::Dst => (0, 16),
            U32Field::Sport => (16, 20),
            U32Field::Dport => (0, 20),
            U32Field::Tos => (16, 0),
        };
        let (val, mask) = ((m.value & m.mask) << shift, m.mask << shift);
        match keys.iter_mut().find(|k| k.off == off) {
            Some(k) => {
                k.val |= val;
                k.mask |= mask;
            }
            None => keys.push(U32Key { val, mask, off }),
        }
    }
    keys
}

/// The idr id of a u32 handle's hash table (0 for the root table `800:`,
/// which `u32_init` gives without the allocator).
pub fn htid_of(handle: u32) -> u32 {
    (handle >> 20) & 0x7ff
}

/// The handle of a new u32 filter: in the table of its prio's `tcf_proto`
/// when `peers` (the handles of that prio) is not empty, else in a new
/// table: `800:` when the qdisc had no u32 filter (`had_u32` false: a new
/// `tc_u_common`), else the next id of the cyclic allocator after
/// `last_htid` that no live table (`live_htids`) holds.
pub fn u32_new_handle(
    peers: &[u32],
    live_htids: &[u32],
    had_u32: bool,
    last_htid: &mut Option<u32>,
) -> Result<u32, TcError> {
    let full = || TcError::Invalid("no free u32 handle left".into());
    if let Some(first) = peers.first() {
        let ht = first & 0xfff0_0000;
        let node = (0x800..=0xfff)
            .find(|n| !peers.iter().any(|p| p & 0xfff == *n))
            .ok_or_else(full)?;
        return Ok(ht | node);
    }
    let id = if had_u32 {
        // idr_alloc_cyclic(…, 1, 0x7ff): from one past the last, wrapping
        let start = last_htid.unwrap_or(0) + 1;
        let id = (start..0x7ff)
            .chain(1..start.min(0x7ff))
            .find(|i| !live_htids.contains(i))
            .ok_or_else(full)?;
        *last_htid = Some(id);
        id
    } else {
        *last_htid = Some(0);
        0
    };
    Ok(((id | 0x800) << 20) | 0x800)
}

/// The filters of a classful qdisc of handle `major`, added in list order
/// (class_api.rs: `delete` removes them all, so the handles follow from that
/// order alone: u32 a table per prio from `800:`, nodes from 0x800; flower
/// from 1 in each prio).
pub fn classful_show(filters: &[U32Filter], major: u16) -> Vec<TpShow> {
    let mut tps: Vec<(u32, TpShow)> = Vec::new();
    // u32's hash tables count only the u32 prios
    let mut u32_tables = 0;
    for f in filters {
        let kind = if f.flower.is_some() {
            Classifier::Flower
        } else {
            Classifier::U32
        };
        let pos = match tps.iter().position(|(_, tp)| tp.prio == f.prio) {
            Some(p) => p,
            None => {
                tps.push((
                    u32_tables,
                    TpShow {
                        prio: f.prio,
                        protocol_all: false,
                        kind,
                        filters: vec![],
                    },
                ));
                u32_tables += (kind == Classifier::U32) as u32;
                tps.len() - 1
            }
        };
        let (ht, tp) = &mut tps[pos];
        let handle = match kind {
            Classifier::U32 => ((*ht | 0x800) << 20) | (0x800 + tp.filters.len() as u32),
            _ => 1 + tp.filters.len() as u32,
        };
        tp.filters.push(FilterShow {
            handle,
            hits: 0,
            classid: Some(((major as u32) << 16) | f.flowid as u32),
            terminal: true,
            keys: u32_keys(&f.matches),
            flower: f.flower.clone(),
            actions: vec![],
        });
    }
    let mut out: Vec<TpShow> = tps.into_iter().map(|(_, tp)| tp).collect();
    out.sort_by_key(|tp| tp.prio);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(field: U32Field, value: u32, mask: u32) -> U32Match {
        U32Match { field, value, mask }
    }

    #[test]
    fn keys_as_f_u32_packs_them() {
        // tc filter add … match ip sport 5201 0xffff match ip tos 0x10 0xff:
        // the real tc dumps 14510000/ffff0000 at 20, 00100000/00ff0000 at 0
        let keys = u32_keys(&[
            m(U32Field::Sport, 5201, 0xffff),
            m(U32Field::Tos, 0x10, 0xff),
            m(U32Field::Dport, 80, 0xffff),
            m(U32Field::Dst, 0x0a00_0002, 0xffff_ffff),
        ]);
        assert_eq!(
            keys,
            vec![
                U32Key {
                    val: 0x1451_0050,
                    mask: 0xffff_ffff,
                    off: 20
                },
                U32Key {
                    val: 0x0010_0000,
                    mask: 0x00ff_0000,
                    off: 0
                },
                U32Key {
                    val: 0x0a00_0002,
                    mask: 0xffff_ffff,
                    off: 16
                },
            ]
        );
        assert_eq!(
            u32_keys(&[m(U32Field::Any, 0, 0)]),
            vec![U32Key {
                val: 0,
                mask: 0,
                off: 0
            }]
        );
    }

    #[test]
    fn u32_handles_follow_the_cyclic_allocator() {
        let mut last = None;
        // first filter of the qdisc: 800::800
        assert_eq!(u32_new_handle(&[], &[], false, &mut last), Ok(0x8000_0800));
        // same prio: the next node; another prio: 801:
        assert_eq!(
            u32_new_handle(&[0x8000_0800], &[0], true, &mut last),
            Ok(0x8000_0801)
        );
        assert_eq!(u32_new_handle(&[], &[0], true, &mut last), Ok(0x8010_0800));
        assert_eq!(
            u32_new_handle(&[], &[0, 1], true, &mut last),
            Ok(0x8020_0800)
        );
        // 801: deleted: the allocator still moves on to 803:
        assert_eq!(
            u32_new_handle(&[], &[0, 2], true, &mut last),
            Ok(0x8030_0800)
        );
        // a freed node id is taken again first
        assert_eq!(
            u32_new_handle(&[0x8000_0800, 0x8000_0802], &[0], true, &mut last),
            Ok(0x8000_0801)
        );
        // last id 0x7fe: wraps to the lowest free
        let mut last = Some(0x7fe);
        assert_eq!(
            u32_new_handle(&[], &[0, 1], true, &mut last),
            Ok(0x8020_0800)
        );
    }

    #[test]
    fn classful_tables_per_prio_in_add_order() {
        let f = |prio, flowid| U32Filter {
            prio,
            matches: vec![m(U32Field::Dst, 0x0a00_0002, 0xffff_ffff)],
            flowid,
            flower: None,
        };
        let tps = classful_show(&[f(2, 0x10), f(1, 0x20), f(2, 0x30)], 1);
        assert_eq!(tps.iter().map(|t| t.prio).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(tps[0].filters[0].handle, 0x8010_0800);
        assert_eq!(
            tps[1]
                .filters
                .iter()
                .map(|f| (f.handle, f.classid))
                .collect::<Vec<_>>(),
            vec![(0x8000_0800, Some(0x1_0010)), (0x8000_0801, Some(0x1_0030))]
        );
    }

    #[test]
    fn action_ages_in_clock_ticks() {
        let s = |ms: u64| SimTime::from_nanos(ms * 1_000_000);
        // 2.5 s after install: 625 jiffies = 250 ticks; used 8 ms ago: 2
        // jiffies = 0 ticks (0.8); first used 1 s ago
        let tm = ActionTimes::at(s(2500), s(0), s(2492), Some(s(1500)));
        assert_eq!(
            tm,
            ActionTimes {
                install: 250,
                lastuse: 0,
                firstuse: 100
            }
        );
    }
}
