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
//! - net/sched/act_police.c (`tcf_police_act`, `tcf_police_init`): a token
//!   bucket in nanoseconds of the rate (depth `burst`) and, with a peak
//!   rate, a second bucket of one `mtu`; a packet that conforms to both
//!   takes its tokens and gets the conform verdict, anything longer than
//!   `mtu` or short of tokens gets the exceed verdict and counts as an
//!   overlimit (and as a drop when that verdict is "drop").
//! - net/sched/act_mirred.c (`tcf_mirred_act`): `egress redirect dev D`
//!   hands the packet to D's transmit path and steals it from the hook;
//!   from the receive hook the Ethernet header is pushed back first.
//! - drivers/net/ifb.c (`ifb_xmit`, `ifb_ri_tasklet`): what an ifb's root
//!   qdisc releases goes back where it was going — into the receive path
//!   of the device it came from (past that device's hook), or, from an
//!   egress hook, into that device's transmit queue.
//!
//! The engine (engine/dev.rs) calls [`Hook::run`] and carries out the verdict.

use super::spec::{ActionSpec, Control, HookFilter, HookSpec, U32Match};
use super::tbf::RateCfg;
use crate::error::TcError;
use crate::packet::{Packet, Proto};
use crate::time::SimTime;
use serde::Serialize;

/// `__tcf_classify`'s bound on "reclassify" restarts before it drops.
pub const MAX_RECLASSIFY_LOOP: u32 = 16;

/// `tcf_auto_prio`: the prio of the first filter added without one.
pub const AUTO_PRIO: u32 = 0xC000;

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

/// Counters of one police action (`tc -s actions`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ActionStats {
    pub bytes: u64,
    pub packets: u64,
    pub drops: u64,
    pub overlimits: u64,
}

/// The state of a token-bucket policer (`struct tcf_police` and its params).
#[derive(Clone, Debug)]
pub struct Police {
    rate: Option<RateCfg>,
    peak: Option<RateCfg>,
    /// bucket depth, ns
    burst: i64,
    /// largest conforming packet, bytes
    mtu: u32,
    /// peak bucket depth: the time of one `mtu` at the peak rate, ns
    mtu_ptoks: i64,
    toks: i64,
    ptoks: i64,
    t_c: SimTime,
    exceed: Control,
    conform: Control,
    pub stats: ActionStats,
}

impl Police {
    /// `tcf_police_init`: a full bucket at `now`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rate: u64,
        burst_ns: u64,
        mtu: u32,
        peakrate: Option<u64>,
        overhead: u32,
        mpu: u32,
        atm: bool,
        exceed: Control,
        conform: Control,
        now: SimTime,
    ) -> Result<Police, TcError> {
        let rate_cfg = (rate > 0).then(|| RateCfg::new(rate, overhead, mpu, atm));
        let peak = match peakrate {
            Some(p) if p > 0 => {
                if rate_cfg.is_none() {
                    return Err(TcError::Invalid("'peakrate' requires 'rate'".into()));
                }
                if mtu == 0 {
                    return Err(TcError::Invalid(
                        "'mtu' is required, if 'peakrate' is requested".into(),
                    ));
                }
                Some(RateCfg::new(p, overhead, mpu, atm))
            }
            _ => None,
        };
        if rate_cfg.is_none() && mtu == 0 {
            return Err(TcError::Invalid(
                "'rate' or 'avrate' or 'mtu' or 'pkts_rate' MUST be specified".into(),
            ));
        }
        let mtu = if mtu == 0 { u32::MAX } else { mtu };
        let burst = burst_ns.min(i64::MAX as u64) as i64;
        let mtu_ptoks = peak.map_or(0, |p| p.l2t_ns(mtu).min(i64::MAX as u64) as i64);
        Ok(Police {
            rate: rate_cfg,
            peak,
            burst,
            mtu,
            mtu_ptoks,
            toks: burst,
            ptoks: mtu_ptoks,
            t_c: now,
            exceed,
            conform,
            stats: ActionStats::default(),
        })
    }

    /// `tcf_police_act` for a packet of `len` bytes (the length the hook
    /// sees) at `now`.
    pub fn act(&mut self, now: SimTime, len: u32) -> Control {
        self.stats.bytes += len as u64;
        self.stats.packets += 1;
        let mut verdict = self.exceed;
        let mut conformed = false;
        if len <= self.mtu {
            match self.rate {
                None => {
                    verdict = self.conform;
                    conformed = true;
                }
                Some(rate) => {
                    let elapsed = now
                        .saturating_since(self.t_c)
                        .as_nanos()
                        .min(i64::MAX as u64) as i64;
                    let mut toks = elapsed.min(self.burst);
                    let mut ptoks = 0i64;
                    if let Some(peak) = self.peak {
                        ptoks = (toks + self.ptoks).min(self.mtu_ptoks);
                        ptoks -= peak.l2t_ns(len) as i64;
                    }
                    toks = (toks + self.toks).min(self.burst);
                    toks -= rate.l2t_ns(len) as i64;
                    if (toks | ptoks) >= 0 {
                        self.t_c = now;
                        self.toks = toks;
                        self.ptoks = ptoks;
                        verdict = self.conform;
                        conformed = true;
                    }
                }
            }
        }
        if !conformed {
            self.stats.overlimits += 1;
        }
        if verdict == Control::Drop {
            self.stats.drops += 1;
        }
        verdict
    }

    /// Tokens left in the rate bucket, ns (tests).
    pub fn tokens_ns(&self) -> i64 {
        self.toks
    }
}

#[derive(Clone, Debug)]
enum Action {
    Redirect(usize),
    Police(Police),
    Gact(Control),
}

#[derive(Clone, Debug)]
struct Filter {
    protocol_all: bool,
    matches: Vec<U32Match>,
    actions: Vec<Action>,
}

/// What one action or filter said.
enum Step {
    Control(Control),
    Stolen(usize),
}

impl Filter {
    fn matches(&self, p: &Packet) -> bool {
        if p.proto == Proto::Arp {
            return self.protocol_all && self.matches.iter().all(|m| m.mask == 0);
        }
        self.matches.iter().all(|m| {
            if m.mask == 0 {
                return true;
            }
            super::classify::u32_match(m, p)
        })
    }

    fn exec(&mut self, now: SimTime, len: u32) -> Step {
        let mut last = Control::Pipe;
        for a in &mut self.actions {
            last = match a {
                Action::Redirect(dev) => return Step::Stolen(*dev),
                Action::Police(pol) => pol.act(now, len),
                Action::Gact(c) => *c,
            };
            if last != Control::Pipe {
                break;
            }
        }
        Step::Control(last)
    }
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
}

impl Hook {
    /// Build the hook of `spec`; `dev_index` resolves a mirred target.
    /// Policers whose parameters did not change keep their buckets and
    /// counters (the filters a `tc filter` verb leaves in place, engine/tc.rs
    /// `tc_hook_filter`).
    pub fn new(
        clsact: bool,
        spec: &HookSpec,
        now: SimTime,
        dev_index: &dyn Fn(&str) -> Option<usize>,
        old: Option<&Hook>,
    ) -> Result<Hook, TcError> {
        if !clsact && !spec.egress.is_empty() {
            return Err(TcError::Invalid(
                "the ingress qdisc has no egress hook (use clsact)".into(),
            ));
        }
        let build = |list: &[HookFilter],
                     old_specs: Option<(&[HookFilter], &[Filter])>|
         -> Result<Vec<Filter>, TcError> {
            let mut order: Vec<usize> = (0..list.len()).collect();
            order.sort_by_key(|&i| list[i].prio);
            let mut out = Vec::with_capacity(list.len());
            for i in order {
                let f = &list[i];
                let reuse = old_specs.and_then(|(specs, built)| {
                    let j = specs.iter().position(|s| s == f)?;
                    let mut k: Vec<usize> = (0..specs.len()).collect();
                    k.sort_by_key(|&x| specs[x].prio);
                    let pos = k.iter().position(|&x| x == j)?;
                    built.get(pos).cloned()
                });
                if let Some(kept) = reuse {
                    out.push(kept);
                    continue;
                }
                let mut actions = Vec::with_capacity(f.actions.len());
                for a in &f.actions {
                    actions.push(match a {
                        ActionSpec::Mirred { dev } => Action::Redirect(dev_index(dev).ok_or_else(|| {
                            TcError::Invalid(format!(
                                "mirred: Cannot find device \"{dev}\" (create it with ip link add {dev} type ifb)"
                            ))
                        })?),
                        ActionSpec::Police {
                            rate,
                            burst_ns,
                            mtu,
                            peakrate,
                            overhead,
                            mpu,
                            atm,
                            exceed,
                            conform,
                        } => Action::Police(Police::new(
                            *rate, *burst_ns, *mtu, *peakrate, *overhead, *mpu, *atm, *exceed,
                            *conform, now,
                        )?),
                        ActionSpec::Gact { control } => Action::Gact(*control),
                    });
                }
                out.push(Filter {
                    protocol_all: f.protocol_all,
                    matches: f.matches.clone(),
                    actions,
                });
            }
            Ok(out)
        };
        let ingress = build(
            &spec.ingress,
            old.map(|o| (o.spec.ingress.as_slice(), o.ingress.as_slice())),
        )?;
        let egress = build(
            &spec.egress,
            old.map(|o| (o.spec.egress.as_slice(), o.egress.as_slice())),
        )?;
        Ok(Hook {
            clsact,
            spec: spec.clone(),
            ingress,
            egress,
            stats: old.map_or(HookStats::default(), |o| o.stats),
        })
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
        let mut restarts = 0;
        'classify: loop {
            for f in filters.iter_mut() {
                if !f.matches(p) {
                    continue;
                }
                match f.exec(now, len) {
                    Step::Stolen(dev) => return Outcome::Redirect(dev),
                    Step::Control(Control::Continue) => continue,
                    Step::Control(Control::Reclassify) => {
                        restarts += 1;
                        if restarts >= MAX_RECLASSIFY_LOOP {
                            break 'classify;
                        }
                        continue 'classify;
                    }
                    Step::Control(Control::Drop) => break 'classify,
                    Step::Control(Control::Ok | Control::Pipe) => return Outcome::Pass,
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
            .filter_map(|a| match a {
                Action::Police(p) => Some(p.stats),
                _ => None,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::frame;
    use crate::qdisc::spec::{Classifier, U32Field};

    fn t(ns: u64) -> SimTime {
        SimTime::from_nanos(ns)
    }

    /// 1 Mbit/s (125 000 B/s), burst 10 000 B → tc ticks
    /// floor(1e6·10000/125000·15.625) = 1 250 000 → 80 000 000 ns.
    fn police(exceed: Control) -> Police {
        Police::new(
            125_000,
            1_250_000 << 6,
            0,
            None,
            0,
            0,
            false,
            exceed,
            Control::Ok,
            t(0),
        )
        .unwrap()
    }

    #[test]
    fn police_passes_the_burst_then_drops_until_tokens_refill() {
        let mut p = police(Control::Drop);
        // 1000 bytes cost 8 ms at 125 000 B/s; 80 ms of bucket = 10 packets
        for i in 0..10 {
            assert_eq!(p.act(t(0), 1000), Control::Ok, "packet {i}");
        }
        assert_eq!(p.tokens_ns(), 0);
        assert_eq!(p.act(t(0), 1000), Control::Drop);
        // 7.999 ms later one packet is still short of tokens
        assert_eq!(p.act(t(7_999_999), 1000), Control::Drop);
        assert_eq!(p.act(t(8_000_000), 1000), Control::Ok);
        assert_eq!(
            p.stats,
            ActionStats {
                bytes: 13_000,
                packets: 13,
                drops: 2,
                overlimits: 2
            }
        );
    }

    #[test]
    fn police_refill_is_capped_at_the_burst() {
        let mut p = police(Control::Drop);
        // idle for 10 s: still only 80 ms of tokens
        for _ in 0..10 {
            assert_eq!(p.act(t(10_000_000_000), 1000), Control::Ok);
        }
        assert_eq!(p.act(t(10_000_000_000), 1000), Control::Drop);
    }

    #[test]
    fn police_mtu_and_peakrate() {
        // mtu 1500: a 1501-byte packet always exceeds
        let mut p = Police::new(
            125_000,
            1_250_000 << 6,
            1500,
            Some(250_000),
            0,
            0,
            false,
            Control::Drop,
            Control::Ok,
            t(0),
        )
        .unwrap();
        assert_eq!(p.act(t(0), 1501), Control::Drop);
        // the peak bucket holds one mtu (6 ms at 250 000 B/s): 1500 B pass,
        // the next 1500 B needs 6 ms more
        assert_eq!(p.act(t(0), 1500), Control::Ok);
        assert_eq!(p.act(t(0), 1500), Control::Drop);
        assert_eq!(p.act(t(6_000_000), 1500), Control::Ok);
        assert!(Police::new(
            125_000,
            1 << 20,
            0,
            Some(250_000),
            0,
            0,
            false,
            Control::Drop,
            Control::Ok,
            t(0)
        )
        .is_err());
    }

    fn hook(filters: Vec<HookFilter>) -> Hook {
        let spec = HookSpec {
            ingress: filters,
            egress: vec![],
        };
        Hook::new(false, &spec, t(0), &|d| (d == "ifb0").then_some(7), None).unwrap()
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
            classid: None,
            actions,
        }
    }

    #[test]
    fn mirred_steals_and_the_hook_counts_everything() {
        let mut h = hook(vec![filter(
            10,
            vec![ActionSpec::Mirred { dev: "ifb0".into() }],
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
    fn unknown_mirred_device_is_an_error() {
        let spec = HookSpec {
            ingress: vec![filter(1, vec![ActionSpec::Mirred { dev: "ifb9".into() }])],
            egress: vec![],
        };
        let e = Hook::new(false, &spec, t(0), &|_| None, None).unwrap_err();
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
                    ActionSpec::Mirred { dev: "ifb0".into() },
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
        let mut h2 = Hook::new(false, &spec, t(0), &|_| Some(7), Some(&h)).unwrap();
        assert_eq!(h2.run(false, t(0), &frame(1000), 1000), Outcome::Drop);
    }
}
