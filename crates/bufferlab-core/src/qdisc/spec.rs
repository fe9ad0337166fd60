//! Size: declarations only: one serde request type per qdisc kind, each with its
//! checks, read as one table by the parsers and the schema (schema.rs).
//!
//! Validated `tc qdisc` requests as they cross from the command parser
//! (python/bufferlab/commands/tc/, one module per kind) into the engine, as JSON.
//!
//! All numbers are already in the kernel's units, exactly as `tc` would hand
//! them to the kernel (docs/semantics/qdiscs.md §1.1): rates in bytes/s, sizes in bytes,
//! times in ns, probabilities as u32 fractions of 2³²−1. An optional field
//! that is absent (`null`) means "not given on the command line", which
//! matters for `change` (netem keeps some settings unless re-specified, §4.8).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TcVerb {
    Add,
    Change,
    Replace,
    Link,
    Delete,
}

/// `parent X:Y` or `root`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "snake_case")]
pub enum ParentSpec {
    Root,
    Class { major: u16, minor: u16 },
}

/// One `tc qdisc VERB dev DEV [root|parent P] [handle H:] [KIND OPTIONS]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcRequest {
    pub verb: TcVerb,
    pub dev: String,
    /// `None` when neither `root` nor `parent` was given.
    pub parent: Option<ParentSpec>,
    /// Major number of `handle X:`; `None` when not given.
    pub handle: Option<u16>,
    /// The qdisc and its options; may be `None` only for `delete`.
    pub qdisc: Option<QdiscSpec>,
}

/// `tc class add|change|replace|delete` (iproute2 tc/tc_class.c; the
/// kernel's net/sched/sch_api.c `tc_ctl_tclass`), addressed to the qdisc of
/// handle `major` on `dev` (class_api/).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClassRequest {
    pub verb: ClassVerb,
    pub dev: String,
    /// major of `classid M:N`: the handle of the qdisc that owns the class
    pub major: u16,
    /// minor of `classid M:N`
    pub minor: u16,
    /// minor of `parent M:P` (0: directly under the qdisc); `None`: not given
    pub parent: Option<u16>,
    /// the class's kind and options (`None` for `delete`)
    pub class: Option<ClassSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassVerb {
    Add,
    Change,
    Replace,
    Delete,
}

/// The options after `tc class … KIND`, as the kind's `parse_class_opt`
/// sends them (`None`: not given).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ClassSpec {
    Htb(HtbClassOpts),
    Drr(DrrClassOpts),
    Ets(EtsClassOpts),
    Hfsc(HfscClassOpts),
}

impl ClassSpec {
    /// htb's options, if these are.
    pub fn htb(&self) -> Option<&HtbClassOpts> {
        match self {
            ClassSpec::Htb(o) => Some(o),
            _ => None,
        }
    }

    pub fn drr(&self) -> Option<&DrrClassOpts> {
        match self {
            ClassSpec::Drr(o) => Some(o),
            _ => None,
        }
    }

    pub fn ets(&self) -> Option<&EtsClassOpts> {
        match self {
            ClassSpec::Ets(o) => Some(o),
            _ => None,
        }
    }

    pub fn hfsc(&self) -> Option<&HfscClassOpts> {
        match self {
            ClassSpec::Hfsc(o) => Some(o),
            _ => None,
        }
    }
}

/// `tc class … htb rate R [ceil C] [burst B] [cburst CB] [prio P] [quantum Q]`
/// as q_htb.c `htb_parse_class_opt` computes it (the fields of [`HtbClassSpec`]).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HtbClassOpts {
    pub rate: u64,
    pub ceil: u64,
    /// ns
    pub buffer: u64,
    /// ns
    pub cbuffer: u64,
    pub prio: u32,
    /// bytes; 0 = rate / r2q
    pub quantum: u32,
}

/// `tc class … drr [quantum Q]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DrrClassOpts {
    #[serde(default)]
    pub quantum: Option<u32>,
}

/// `tc class change … ets [quantum Q]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EtsClassOpts {
    #[serde(default)]
    pub quantum: Option<u32>,
}

/// `tc class … hfsc [rt SC] [ls SC] [sc SC] [ul SC]`: the curves given.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HfscClassOpts {
    #[serde(default)]
    pub rsc: Option<ServiceCurve>,
    #[serde(default)]
    pub fsc: Option<ServiceCurve>,
    #[serde(default)]
    pub usc: Option<ServiceCurve>,
}

/// `tc filter add|delete dev D parent M: … u32 … flowid M:N` (iproute2
/// tc/tc_filter.c and f_u32.c; the kernel's net/sched/cls_api.c
/// `tc_new_tfilter`/`tc_del_tfilter`): a u32 filter attached at the qdisc
/// of handle `major` (class_api/).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FilterRequest {
    pub verb: FilterVerb,
    pub dev: String,
    /// major of `parent M:`
    pub major: u16,
    /// the filter to add; `None` for `delete`, which removes every filter
    /// attached at the qdisc
    pub filter: Option<U32Filter>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FilterVerb {
    Add,
    Delete,
}

/// `tc filter add|delete dev D {parent ffff:|ingress|egress} [prio N] …`:
/// a filter of a receive or transmit hook (ingress.rs, engine/tc.rs
/// `tc_hook_filter`).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookFilterRequest {
    pub verb: FilterVerb,
    pub dev: String,
    pub hook: HookSide,
    /// `prio` of a `delete` (0: every filter of the hook)
    #[serde(default)]
    pub prio: u32,
    /// the filter to add (prio 0: automatic); `None` for `delete`
    pub filter: Option<HookFilter>,
}

/// Which hook of an ingress/clsact qdisc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HookSide {
    /// `ffff:` / `ffff:fff2`: the receive hook
    Ingress,
    /// `ffff:fff3`: clsact's transmit hook
    Egress,
}

#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QdiscSpec {
    #[serde(deserialize_with = "crate::closed::no_fields")]
    Noqueue,
    /// `limit` in packets; `None` = txqueuelen (1000).
    Pfifo {
        limit: Option<u32>,
    },
    /// `limit` in bytes; `None` = txqueuelen × (mtu + 14) = 1 514 000.
    Bfifo {
        limit: Option<u32>,
    },
    PfifoHeadDrop {
        limit: Option<u32>,
    },
    /// Modelled as pfifo(txqueuelen) with the pfifo_fast printout (docs/semantics/qdiscs.md §2).
    #[serde(deserialize_with = "crate::closed::no_fields")]
    PfifoFast,
    Tbf(TbfSpec),
    Netem(NetemSpec),
    /// `red` (also `red_csc573`/`cpm_red` with a DS-byte coefficient map).
    Red(RedSpec),
    /// `blue` / `cpm_blue` (SIM qdisc, docs/semantics/qdiscs.md §6.1, §7).
    Blue(BlueSpec),
    /// `codel` (docs/semantics/qdiscs.md §8.1).
    Codel(CodelSpec),
    /// `fq_codel` (docs/semantics/qdiscs.md §8.2).
    FqCodel(FqCodelSpec),
    /// `pie` (docs/semantics/qdiscs.md §8.3).
    Pie(PieSpec),
    /// `red_ns3` (SIM: ns-3's RED, docs/semantics/qdiscs.md §5.10).
    RedNs3(RedNs3Spec),
    /// `sfb` (Stochastic Fair Blue, docs/semantics/qdiscs.md §6.2).
    Sfb(SfbSpec),
    /// `htb` with its classes, u32 filters and leaf qdiscs (models.md, HTB).
    Htb(HtbSpec),
    /// `dualpi2` (docs/semantics/qdiscs.md §12).
    Dualpi2(DualPi2Spec),
    /// `prio` with its u32 filters and the qdiscs grafted on its bands
    /// (docs/semantics/qdiscs.md §13).
    Prio(PrioSpec),
    /// `fq` (Fair Queue with per-socket flows and pacing, docs/semantics/qdiscs.md §15).
    Fq(FqSpec),
    /// `sfq` (Stochastic Fairness Queueing, docs/semantics/qdiscs.md §16).
    Sfq(SfqSpec),
    /// `fq_pie` (flow queues with PIE per flow, docs/semantics/qdiscs.md §17).
    FqPie(FqPieSpec),
    /// `drr` with its classes, u32 filters and leaf qdiscs (docs/semantics/qdiscs.md §18).
    Drr(DrrSpec),
    /// `ets` with its bands and leaf qdiscs (docs/semantics/qdiscs.md §19).
    Ets(EtsSpec),
    /// `hfsc` with its classes, u32 filters and leaf qdiscs (docs/semantics/qdiscs.md §20).
    Hfsc(HfscSpec),
    /// `cake` (docs/semantics/qdiscs.md §14).
    Cake(CakeSpec),
    /// `ingress` with the filters of its receive hook (docs/semantics/qdiscs.md §21).
    Ingress(HookSpec),
    /// `clsact`: receive and transmit hooks (docs/semantics/qdiscs.md §21).
    Clsact(HookSpec),
}

impl QdiscSpec {
    /// The `tc` kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            QdiscSpec::Noqueue => "noqueue",
            QdiscSpec::Pfifo { .. } => "pfifo",
            QdiscSpec::Bfifo { .. } => "bfifo",
            QdiscSpec::PfifoHeadDrop { .. } => "pfifo_head_drop",
            QdiscSpec::PfifoFast => "pfifo_fast",
            QdiscSpec::Tbf(_) => "tbf",
            QdiscSpec::Netem(_) => "netem",
            QdiscSpec::Red(_) => "red",
            QdiscSpec::Blue(_) => "blue",
            QdiscSpec::Codel(_) => "codel",
            QdiscSpec::FqCodel(_) => "fq_codel",
            QdiscSpec::Pie(_) => "pie",
            QdiscSpec::RedNs3(_) => "red_ns3",
            QdiscSpec::Sfb(_) => "sfb",
            QdiscSpec::Htb(_) => "htb",
            QdiscSpec::Dualpi2(_) => "dualpi2",
            QdiscSpec::Prio(_) => "prio",
            QdiscSpec::Fq(_) => "fq",
            QdiscSpec::Sfq(_) => "sfq",
            QdiscSpec::FqPie(_) => "fq_pie",
            QdiscSpec::Drr(_) => "drr",
            QdiscSpec::Ets(_) => "ets",
            QdiscSpec::Hfsc(_) => "hfsc",
            QdiscSpec::Cake(_) => "cake",
            QdiscSpec::Ingress(_) => "ingress",
            QdiscSpec::Clsact(_) => "clsact",
        }
    }

    /// The netems this spec creates (itself, or an htb's grafted leaves):
    /// for each, whether it duplicates (`check_netem_in_tree`, api.rs).
    pub fn netems(&self, out: &mut Vec<bool>) {
        match self {
            QdiscSpec::Netem(n) => out.push(n.duplicate != 0),
            QdiscSpec::Htb(h) => {
                for c in &h.classes {
                    HtbLeaf::chain_netems(c.leaf.as_ref(), out);
                }
            }
            QdiscSpec::Prio(p) => {
                for c in &p.classes {
                    HtbLeaf::chain_netems(c.leaf.as_ref(), out);
                }
            }
            QdiscSpec::Drr(d) => {
                for c in &d.classes {
                    HtbLeaf::chain_netems(c.leaf.as_ref(), out);
                }
            }
            QdiscSpec::Ets(e) => {
                for c in &e.classes {
                    HtbLeaf::chain_netems(c.leaf.as_ref(), out);
                }
            }
            QdiscSpec::Hfsc(h) => {
                for c in &h.classes {
                    HtbLeaf::chain_netems(c.leaf.as_ref(), out);
                }
            }
            _ => {}
        }
    }
}

/// `tbf` as the kernel receives it (docs/semantics/qdiscs.md §3.2). `latency` has already
/// been turned into `limit` by the parser, as `tc` does.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TbfSpec {
    /// bytes per second
    pub rate: u64,
    /// bucket size in bytes
    pub burst: u32,
    /// byte limit of the default bfifo child
    pub limit: u32,
    /// bytes per second, with `mtu`
    #[serde(default)]
    pub peakrate: Option<u64>,
    /// peak bucket (`mtu`/`minburst`) in bytes
    #[serde(default)]
    pub mtu: Option<u32>,
    #[serde(default)]
    pub mpu: u32,
    #[serde(default)]
    pub overhead: u32,
    /// `linklayer atm|adsl`: cost ceil(len/48)·53 bytes.
    #[serde(default)]
    pub atm: bool,
}

/// netem's loss model (docs/semantics/qdiscs.md §4.3). Probabilities are u32 fractions.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
#[serde(tag = "model", rename_all = "snake_case")]
pub enum NetemLoss {
    Random {
        p: u32,
    },
    /// 4-state Markov model ("GI").
    State {
        p13: u32,
        p31: u32,
        p32: u32,
        p23: u32,
        p14: u32,
    },
    /// Gilbert-Elliott.
    Gemodel {
        p: u32,
        r: u32,
        h: u32,
        k1: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetemDistribution {
    Uniform,
    Normal,
    Pareto,
    Paretonormal,
}

/// `slot MIN [MAX] [packets N] [bytes S]` or `slot distribution ...`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetemSlot {
    pub min_delay: u64,
    pub max_delay: u64,
    /// `slot distribution TYPE DELAY JITTER`: delay/jitter drawn from a table.
    #[serde(default)]
    pub dist: Option<(NetemDistribution, u64, u64)>,
    #[serde(default)]
    pub packets: Option<u32>,
    #[serde(default)]
    pub bytes: Option<u32>,
}

/// `netem` as the kernel receives it (docs/semantics/qdiscs.md §4.1). The fixed block
/// (limit, latency, jitter, random loss, gap, duplicate) is always present;
/// `None` in the other fields means "not given" and keeps the current value on
/// `change` (§4.8).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NetemSpec {
    /// packets (default 1000)
    pub limit: u32,
    /// ns
    pub latency: u64,
    /// ns
    pub jitter: u64,
    /// loss model; `Random { p: 0 }` when no loss was given
    pub loss: NetemLoss,
    pub gap: u32,
    pub duplicate: u32,
    /// correlations (delay, loss, duplicate), replaced together when any is given
    #[serde(default)]
    pub correlation: Option<NetemCorrelation>,
    #[serde(default)]
    pub reorder: Option<NetemPercent>,
    #[serde(default)]
    pub corrupt: Option<NetemPercent>,
    #[serde(default)]
    pub rate: Option<NetemRate>,
    #[serde(default)]
    pub ecn: Option<bool>,
    #[serde(default)]
    pub slot: Option<NetemSlot>,
    #[serde(default)]
    pub distribution: Option<NetemDistribution>,
}

#[cfg(test)]
impl NetemSpec {
    /// `netem delay LATENCY` and nothing else (tc's defaults), for tests.
    pub(crate) fn delay_only(latency: u64) -> NetemSpec {
        NetemSpec {
            limit: 1000,
            latency,
            jitter: 0,
            loss: NetemLoss::Random { p: 0 },
            gap: 0,
            duplicate: 0,
            correlation: None,
            reorder: None,
            corrupt: None,
            rate: None,
            ecn: None,
            slot: None,
            distribution: None,
        }
    }
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize,
)]
#[serde(deny_unknown_fields)]
pub struct NetemCorrelation {
    pub delay: u32,
    pub loss: u32,
    pub duplicate: u32,
}

/// A probability with its own correlation (reorder, corrupt).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize,
)]
#[serde(deny_unknown_fields)]
pub struct NetemPercent {
    pub p: u32,
    pub corr: u32,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize,
)]
#[serde(deny_unknown_fields)]
pub struct NetemRate {
    /// bytes per second
    pub rate: u64,
    pub packet_overhead: i32,
    pub cell_size: u32,
    pub cell_overhead: i32,
}

/// One entry of a CPM coefficient map: packets whose key (DS byte, or DSCP
/// with `match_dscp`) equals `key` use the coefficient `num / den`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DscpClass {
    pub key: u8,
    pub num: u32,
    pub den: u32,
}

/// `dscp-coeff K:C,...,default:C [dscp-match byte|dscp]` (docs/semantics/qdiscs.md §7):
/// the CPM-RED / CPM-BLUE per-class factor on the marking probability.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DscpCoeff {
    pub classes: Vec<DscpClass>,
    /// coefficient of every other key, as `(num, den)`
    pub default: (u32, u32),
    /// key = DS byte >> 2 (DSCP) instead of the whole DS byte
    #[serde(default)]
    pub match_dscp: bool,
}

/// `red` as the kernel receives it (docs/semantics/qdiscs.md §5.2–5.3): `tc` has already
/// computed Wlog, Plog, Scell_log, max_P and the idle-damping table.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    /// bytes: the limit of the default bfifo child (0 = keep the child)
    pub limit: u32,
    /// thresholds in bytes (unscaled)
    pub qth_min: u32,
    pub qth_max: u32,
    pub wlog: u8,
    pub plog: u8,
    pub scell_log: u8,
    /// 256 entries (`Stab`)
    pub stab: Vec<u8>,
    /// trunc(probability·2³²); 0 = derive from Plog (probability 1.0)
    pub max_p: u32,
    #[serde(default)]
    pub ecn: bool,
    #[serde(default)]
    pub harddrop: bool,
    #[serde(default)]
    pub adaptive: bool,
    #[serde(default)]
    pub nodrop: bool,
    /// The adaptive flag reached the kernel in the qopt flags byte, so the
    /// 500 ms timer runs (iproute2 ≤ 5.6, \[lab2019\]); false = \[modern\].
    #[serde(default)]
    pub adaptive_timer: bool,
    /// CPM-RED coefficient map (SIM extension); `None` = plain RED.
    #[serde(default)]
    pub dscp_coeff: Option<DscpCoeff>,
}

/// `blue` (docs/semantics/qdiscs.md §6.1). Probabilities are u32 fractions of 2³², times ns.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BlueSpec {
    /// packets
    pub limit: u32,
    /// d1, d2 as rint(d·2³²)
    pub increment: u32,
    pub decrement: u32,
    /// hold times in ns
    pub freeze_inc: u64,
    pub freeze_dec: u64,
    /// one shared timestamp for both directions (Feng's pseudo-code)
    #[serde(default = "yes")]
    pub shared: bool,
    /// optional "queue above L" increase trigger, packets
    #[serde(default)]
    pub qthresh: Option<u32>,
    #[serde(default)]
    pub ecn: bool,
    #[serde(default)]
    pub dscp_coeff: Option<DscpCoeff>,
}

fn yes() -> bool {
    true
}

/// `sfb` as the kernel receives it (`struct tc_sfb_qopt`, docs/semantics/qdiscs.md §6.2):
/// tc has already filled in its defaults and derived `max`/`target`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SfbSpec {
    /// ms (`rehash_interval`; 0 = never rehash)
    pub rehash: u32,
    /// ms (`warmup_time`, the double-buffering lead; 0 = none)
    pub db: u32,
    /// packets; 0 = the device's txqueuelen
    pub limit: u32,
    /// per-bin virtual queue length at which arrivals are dropped
    pub max: u32,
    /// per-bin length at which the bin's probability rises (`bin_size`)
    pub target: u32,
    /// Q0.16 probabilities (65535 ≈ 1)
    pub increment: u32,
    pub decrement: u32,
    /// packets per second and bucket size of the shared penalty box
    pub penalty_rate: u32,
    pub penalty_burst: u32,
}

/// `codel` as the kernel receives it (netlink attributes, docs/semantics/qdiscs.md §8.1):
/// times in µs. `None` = attribute not sent: the kernel default on creation,
/// the current value on `change`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CodelSpec {
    /// packets (default 1000)
    #[serde(default)]
    pub limit: Option<u32>,
    /// µs (default 5 000)
    #[serde(default)]
    pub target: Option<u32>,
    /// µs (default 100 000)
    #[serde(default)]
    pub interval: Option<u32>,
    /// µs (default off)
    #[serde(default)]
    pub ce_threshold: Option<u32>,
    /// default off
    #[serde(default)]
    pub ecn: Option<bool>,
}

/// `fq_codel` as the kernel receives it (docs/semantics/qdiscs.md §8.2); times in µs,
/// `None` = not given.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FqCodelSpec {
    /// packets (default 10 240)
    #[serde(default)]
    pub limit: Option<u32>,
    /// number of flow queues (default 1024; only at creation)
    #[serde(default)]
    pub flows: Option<u32>,
    #[serde(default)]
    pub target: Option<u32>,
    #[serde(default)]
    pub interval: Option<u32>,
    /// bytes (default 1514, minimum 256)
    #[serde(default)]
    pub quantum: Option<u32>,
    /// default on
    #[serde(default)]
    pub ecn: Option<bool>,
    #[serde(default)]
    pub ce_threshold: Option<u32>,
    /// bytes (default 32 MiB, capped at 2 GiB)
    #[serde(default)]
    pub memory_limit: Option<u32>,
    /// default 64
    #[serde(default)]
    pub drop_batch: Option<u32>,
}

/// `pie` as the kernel receives it (docs/semantics/qdiscs.md §8.3): times in µs, alpha and
/// beta as given (0..32); `None` = not given.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PieSpec {
    /// packets (default 1000)
    #[serde(default)]
    pub limit: Option<u32>,
    /// µs (default 15 000)
    #[serde(default)]
    pub target: Option<u32>,
    /// µs (default 15 000; kept in jiffies, rounded up)
    #[serde(default)]
    pub tupdate: Option<u32>,
    #[serde(default)]
    pub alpha: Option<u32>,
    #[serde(default)]
    pub beta: Option<u32>,
    #[serde(default)]
    pub ecn: Option<bool>,
    #[serde(default)]
    pub bytemode: Option<bool>,
    #[serde(default)]
    pub dq_rate_estimator: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
pub enum RedNs3Variant {
    /// `ns3::RedQueue` (src/network/utils/red-queue.cc, 2015)
    #[serde(rename = "2015")]
    V2015,
    /// `ns3::RedQueueDisc` (ns-3 ≥ 3.25)
    #[serde(rename = "qdisc")]
    Qdisc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RedNs3Mode {
    Packets,
    Bytes,
}

/// `red_ns3` (docs/semantics/qdiscs.md §5.10): ns-3's RED attributes as given (thresholds
/// and limit in the mode's unit, `qw` may be 0/−1/−2 for the automatic
/// settings). Exactly one of `max_p` / `linterm` (max_p = 1/linterm) is set.
/// Times in ns, `bandwidth` in bit/s.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RedNs3Spec {
    pub variant: RedNs3Variant,
    pub mode: RedNs3Mode,
    pub limit: u32,
    pub min_th: f64,
    pub max_th: f64,
    pub qw: f64,
    #[serde(default)]
    pub max_p: Option<f64>,
    #[serde(default)]
    pub linterm: Option<f64>,
    pub mean_pkt_size: u32,
    pub gentle: bool,
    pub wait: bool,
    #[serde(default)]
    pub ecn: bool,
    /// RedQueueDisc `UseHardDrop` (default true)
    #[serde(default = "yes")]
    pub harddrop: bool,
    #[serde(default)]
    pub ns1compat: bool,
    pub bandwidth: u64,
    pub link_delay: u64,
    #[serde(default)]
    pub ared: bool,
    #[serde(default)]
    pub adapt_max_p: bool,
    pub target_delay: u64,
    pub interval: u64,
    pub top: f64,
    /// 0 = min(0.01, 8·MeanPktSize·rtt/bandwidth)
    pub bottom: f64,
    pub alpha: f64,
    pub beta: f64,
    pub rtt: u64,
    #[serde(default)]
    pub feng: bool,
    pub feng_alpha: f64,
    pub feng_beta: f64,
    #[serde(default)]
    pub nlred: bool,
}

impl Default for RedNs3Spec {
    /// ns-3's attribute defaults (RedQueueDisc, packet mode).
    fn default() -> Self {
        RedNs3Spec {
            variant: RedNs3Variant::Qdisc,
            mode: RedNs3Mode::Packets,
            limit: 25,
            min_th: 5.0,
            max_th: 15.0,
            qw: 0.002,
            max_p: None,
            linterm: Some(50.0),
            mean_pkt_size: 500,
            gentle: true,
            wait: true,
            ecn: false,
            harddrop: true,
            ns1compat: false,
            bandwidth: 1_500_000,
            link_delay: 20_000_000,
            ared: false,
            adapt_max_p: false,
            target_delay: 5_000_000,
            interval: 500_000_000,
            top: 0.5,
            bottom: 0.0,
            alpha: 0.01,
            beta: 0.9,
            rtt: 100_000_000,
            feng: false,
            feng_alpha: 3.0,
            feng_beta: 2.0,
            nlred: false,
        }
    }
}

/// `htb` as a whole: the qdisc options (`tc qdisc add … htb`), every class
/// (`tc class add … htb`), the u32 filters attached at the qdisc and the
/// leaf qdiscs grafted on classes — what `qdisc_show` dumps as its options.
/// Classes, filters and leaves come one verb at a time ([`ClassRequest`],
/// [`FilterRequest`], a graft: class_api/); a request creating the qdisc
/// may carry a first document (`tc` sends none), and `tc qdisc change … htb`
/// replaces the classes with the request's (htb/ `change`).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HtbSpec {
    /// minor of the default class; 0 = unclassified traffic goes direct
    #[serde(default)]
    pub default: u16,
    /// rate-to-quantum divisor (default 10)
    #[serde(default = "ten")]
    pub r2q: u32,
    /// packets of the direct queue (the device's txqueuelen)
    pub direct_qlen: u32,
    /// limit of a class's default pfifo leaf (txqueuelen)
    pub leaf_limit: u32,
    #[serde(default)]
    pub classes: Vec<HtbClassSpec>,
    #[serde(default)]
    pub filters: Vec<U32Filter>,
}

fn ten() -> u32 {
    10
}

/// One `tc class … htb` as the kernel receives it (`struct tc_htb_opt`):
/// rates in bytes/s, buckets in ns (tc turned the byte bursts into time).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HtbClassSpec {
    /// classid minor
    pub classid: u16,
    /// parent class minor; 0 = directly under the qdisc
    #[serde(default)]
    pub parent: u16,
    pub rate: u64,
    pub ceil: u64,
    /// ns
    pub buffer: u64,
    /// ns
    pub cbuffer: u64,
    #[serde(default)]
    pub prio: u32,
    /// bytes; 0 = rate / r2q
    #[serde(default)]
    pub quantum: u32,
    /// leaf qdisc grafted on the class (`None` = pfifo of `leaf_limit`)
    #[serde(default)]
    pub leaf: Option<HtbLeaf>,
}

impl HtbClassSpec {
    /// Class `classid` under `parent` with the options of its `tc class` line.
    pub fn new(classid: u16, parent: u16, o: &HtbClassOpts) -> Self {
        let mut c = HtbClassSpec {
            classid,
            parent,
            rate: 0,
            ceil: 0,
            buffer: 0,
            cbuffer: 0,
            prio: 0,
            quantum: 0,
            leaf: None,
        };
        c.set_opts(o);
        c
    }

    /// The options of a `tc class change|replace` line (the class keeps its
    /// place and its leaf).
    pub fn set_opts(&mut self, o: &HtbClassOpts) {
        self.rate = o.rate;
        self.ceil = o.ceil;
        self.buffer = o.buffer;
        self.cbuffer = o.cbuffer;
        self.prio = o.prio;
        self.quantum = o.quantum;
    }
}

/// A qdisc grafted on an htb class with `tc qdisc add … parent M:N`, and
/// what was grafted below it (`parent H:` with H its handle; Mininet's
/// TCLink puts netem under red under the class).
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HtbLeaf {
    pub handle: u16,
    pub spec: Box<QdiscSpec>,
    /// `None`: the kind's default child, if it has one
    #[serde(default)]
    pub child: Option<Box<HtbLeaf>>,
}

impl HtbLeaf {
    /// The netems of a grafted chain (see [`QdiscSpec::netems`]).
    pub(crate) fn chain_netems(mut leaf: Option<&HtbLeaf>, out: &mut Vec<bool>) {
        while let Some(l) = leaf {
            l.spec.netems(out);
            leaf = l.child.as_deref();
        }
    }
}

/// `tc filter … u32 match … flowid M:N` (all matches must hold), or with
/// `flower` set `tc filter … flower KEYS classid M:N` (its keys must hold;
/// `matches` is then empty).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct U32Filter {
    /// 0 in a `tc filter add` without one: the kernel's pick (ingress.rs `auto_prio`)
    pub prio: u32,
    pub matches: Vec<U32Match>,
    /// minor of the target class
    pub flowid: u16,
    /// a flower filter's keys (classify.rs `flower_match`)
    #[serde(default)]
    pub flower: Option<FlowerKey>,
}

/// The keys of one `flower` filter as tc/f_flower.c `flower_parse_opt`
/// sends them and net/sched/cls_flower.c `fl_set_key` keeps them: each
/// value as typed with its mask; a packet matches when `field & mask ==
/// value & mask` holds for every key given (a port range: min ≤ port ≤ max).
/// `protocol ip` is the `eth_type` key, which the filter's protocol carries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowerKey {
    /// IP protocol number (`ip_proto tcp` 6, `udp` 17, `icmp` 1, `sctp` 132)
    #[serde(default)]
    pub ip_proto: Option<u8>,
    #[serde(default)]
    pub src_ip: Option<FlowerMasked>,
    #[serde(default)]
    pub dst_ip: Option<FlowerMasked>,
    #[serde(default)]
    pub src_port: Option<FlowerPort>,
    #[serde(default)]
    pub dst_port: Option<FlowerPort>,
    /// the whole TOS byte (DSCP and ECN)
    #[serde(default)]
    pub ip_tos: Option<FlowerMasked>,
    #[serde(default)]
    pub ip_ttl: Option<FlowerMasked>,
    /// `ip_flags`: bit 0 `frag`, bit 1 `firstfrag` (`TCA_FLOWER_KEY_FLAGS_*`)
    #[serde(default)]
    pub ip_flags: Option<FlowerMasked>,
    /// `indev DEV`: only packets received on DEV (a receive hook's filters)
    #[serde(default)]
    pub indev: Option<String>,
    /// `skip_hw` (`TCA_CLS_FLAGS_SKIP_HW`; every filter is `not_in_hw`)
    #[serde(default)]
    pub skip_hw: bool,
}

/// A key and its mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FlowerMasked {
    pub value: u32,
    pub mask: u32,
}

/// `src_port`/`dst_port`: `N` or `N/MASK` (`TCA_FLOWER_KEY_TCP_DST` and its
/// mask), or `MIN-MAX` (`TCA_FLOWER_KEY_PORT_DST_MIN`/`_MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FlowerPort {
    Masked { value: u16, mask: u16 },
    Range { min: u16, max: u16 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum U32Field {
    /// `match u32 VALUE 0 [at 0]`: a key of mask zero (every packet)
    Any,
    Src,
    Dst,
    Sport,
    Dport,
    Tos,
}

/// `match ip FIELD VALUE MASK`: `(field & mask) == value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct U32Match {
    pub field: U32Field,
    pub value: u32,
    pub mask: u32,
}

/// `dualpi2` as the kernel receives it (`TCA_DUALPI2_*` attributes,
/// docs/semantics/qdiscs.md §12): `None` = attribute not sent (the kernel
/// default on creation, the current value on `change`). Times in µs,
/// `alpha`/`beta` in units of 1/256 Hz as tc sends them.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DualPi2Spec {
    /// packets of both queues together (default 10 000; also resets `memlimit`)
    #[serde(default)]
    pub limit: Option<u32>,
    /// bytes (default limit × 2 × 1514)
    #[serde(default)]
    pub memlimit: Option<u32>,
    /// µs (default 15 000)
    #[serde(default)]
    pub target: Option<u32>,
    /// µs (default 16 000)
    #[serde(default)]
    pub tupdate: Option<u32>,
    /// 1/256 Hz (default 41 → 40 after the kernel's scaling round trip)
    #[serde(default)]
    pub alpha: Option<u32>,
    /// 1/256 Hz (default 819 → 818)
    #[serde(default)]
    pub beta: Option<u32>,
    /// step threshold in packets of the L queue (`step_thresh Np`)
    #[serde(default)]
    pub step_thresh_pkts: Option<u32>,
    /// step threshold in µs of L-queue sojourn time (default 1 000)
    #[serde(default)]
    pub step_thresh_us: Option<u32>,
    /// L-queue length from which the step applies (default 0)
    #[serde(default)]
    pub min_qlen_step: Option<u32>,
    /// coupling factor k (default 2)
    #[serde(default)]
    pub coupling: Option<u8>,
    /// `drop_on_overload` (true, default) or `overflow`
    #[serde(default)]
    pub drop_overload: Option<bool>,
    /// `drop_enqueue` (true) or `drop_dequeue` (false, default)
    #[serde(default)]
    pub drop_early: Option<bool>,
    /// C-queue WRR weight in % (default 10)
    #[serde(default)]
    pub c_protection: Option<u8>,
    /// ECN bits that select the L queue: 1 = `l4s_ect` (default), 3 = `any_ect`
    #[serde(default)]
    pub ecn_mask: Option<u8>,
    /// default true
    #[serde(default)]
    pub split_gso: Option<bool>,
    /// u32 filters attached at the qdisc (`flowid M:0` C, `M:1` L, `M:2` L
    /// without AQM); `None` = keep the current ones
    #[serde(default)]
    pub filters: Option<Vec<U32Filter>>,
}

/// `prio` as a whole (sch_prio.c; docs/semantics/qdiscs.md §13): the
/// qdisc options, the u32 filters attached at it and the qdiscs grafted on
/// its classes `M:1` … `M:bands` (each band has a default pfifo otherwise).
/// Grafts and filters come one verb at a time (class_api/), as for htb;
/// a `change` keeps those of the bands that remain.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrioSpec {
    /// 2..16 (default 3)
    pub bands: u32,
    /// band of each of the 16 priorities (`TC_PRIO_*`)
    pub priomap: Vec<u8>,
    /// limit of a band's default pfifo (the device's txqueuelen)
    #[serde(default = "txqueuelen")]
    pub leaf_limit: u32,
    /// one entry per band, classid minor 1..bands (missing: default pfifo)
    #[serde(default)]
    pub classes: Vec<PrioClassSpec>,
    #[serde(default)]
    pub filters: Vec<U32Filter>,
}

fn txqueuelen() -> u32 {
    1000
}

/// One band of a prio: its classid minor and the qdisc grafted on it.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrioClassSpec {
    pub classid: u16,
    #[serde(default)]
    pub leaf: Option<HtbLeaf>,
}

/// `fq` as the kernel receives it (`TCA_FQ_*` attributes, docs/semantics/qdiscs.md §15):
/// rates in bytes/s, `refill_delay`, `ce_threshold` and `horizon` in µs,
/// `timer_slack` in ns; `None` = not given.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FqSpec {
    /// packets per band (default 10 000)
    #[serde(default)]
    pub limit: Option<u32>,
    /// packets per flow (default 100)
    #[serde(default)]
    pub flow_limit: Option<u32>,
    /// bytes (default 2 × 1514)
    #[serde(default)]
    pub quantum: Option<u32>,
    /// bytes (default 10 × 1514)
    #[serde(default)]
    pub initial_quantum: Option<u32>,
    /// `pacing` / `nopacing` (`TCA_FQ_RATE_ENABLE`, default on)
    #[serde(default)]
    pub pacing: Option<bool>,
    /// bytes/s; 4294967295 = no maximum (default)
    #[serde(default)]
    pub maxrate: Option<u32>,
    /// `defrate` (ignored by the kernel since 4.x, accepted)
    #[serde(default)]
    pub defrate: Option<u32>,
    /// log2 of `buckets` as tc sends it (default 10)
    #[serde(default)]
    pub buckets_log: Option<u32>,
    /// µs (default 40 ms)
    #[serde(default)]
    pub refill_delay: Option<u32>,
    /// default 1023
    #[serde(default)]
    pub orphan_mask: Option<u32>,
    /// bytes/s (default 68 750 = 550 kbit/s)
    #[serde(default)]
    pub low_rate_threshold: Option<u32>,
    /// µs; 4294967295 = off (default)
    #[serde(default)]
    pub ce_threshold: Option<u32>,
    /// ns (default 10 000)
    #[serde(default)]
    pub timer_slack: Option<u32>,
    /// µs (default 10 s)
    #[serde(default)]
    pub horizon: Option<u32>,
    /// `horizon_drop` (true, default) / `horizon_cap` (false)
    #[serde(default)]
    pub horizon_drop: Option<bool>,
    /// band of each of the 16 priorities (`bands 3 priomap …`)
    #[serde(default)]
    pub priomap: Option<Vec<u8>>,
    /// the three bands' WRR weights, bytes
    #[serde(default)]
    pub weights: Option<Vec<i32>>,
}

/// `sfq` as the kernel receives it (`struct tc_sfq_qopt_v1`,
/// docs/semantics/qdiscs.md §16): 0 = not given (the kernel's own convention).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SfqSpec {
    /// bytes (default 1514)
    #[serde(default)]
    pub quantum: u32,
    /// seconds between hash perturbations (0 = never)
    #[serde(default)]
    pub perturb: i32,
    /// packets (default 127)
    #[serde(default)]
    pub limit: u32,
    /// hash table size, a power of two ≤ 65536 (default 1024)
    #[serde(default)]
    pub divisor: u32,
    /// flow slots (default 128, at most 65408)
    #[serde(default)]
    pub flows: u32,
    /// packets per flow (default 127, at most 127)
    #[serde(default)]
    pub depth: u32,
    #[serde(default)]
    pub headdrop: bool,
    /// `redflowlimit …`: RED per flow on its byte backlog
    #[serde(default)]
    pub red: Option<SfqRedSpec>,
}

/// RED parameters of an `sfq` (`qth_min`, `qth_max` in bytes, unscaled).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SfqRedSpec {
    pub qth_min: u32,
    pub qth_max: u32,
    pub wlog: u8,
    pub plog: u8,
    /// trunc(probability·2³²)
    pub max_p: u32,
    #[serde(default)]
    pub ecn: bool,
    #[serde(default)]
    pub harddrop: bool,
}

/// `fq_pie` as the kernel receives it (`TCA_FQ_PIE_*`, docs/semantics/qdiscs.md §17):
/// times in µs; `None` = not given.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FqPieSpec {
    /// packets (default 10 240)
    #[serde(default)]
    pub limit: Option<u32>,
    /// flow queues (default 1024; only at creation)
    #[serde(default)]
    pub flows: Option<u32>,
    /// µs (default 15 000)
    #[serde(default)]
    pub target: Option<u32>,
    /// µs (default 15 000; kept in jiffies, rounded up)
    #[serde(default)]
    pub tupdate: Option<u32>,
    #[serde(default)]
    pub alpha: Option<u32>,
    #[serde(default)]
    pub beta: Option<u32>,
    /// bytes (default 1514)
    #[serde(default)]
    pub quantum: Option<u32>,
    /// bytes (default 32 MiB)
    #[serde(default)]
    pub memory_limit: Option<u32>,
    /// percent (default 10)
    #[serde(default)]
    pub ecn_prob: Option<u32>,
    #[serde(default)]
    pub ecn: Option<bool>,
    #[serde(default)]
    pub bytemode: Option<bool>,
    #[serde(default)]
    pub dq_rate_estimator: Option<bool>,
}

/// `drr` as a whole (net/sched/sch_drr.c): its classes (`tc class … drr
/// quantum Q`), the u32 filters attached at the qdisc and the leaf qdiscs,
/// one verb at a time as for [`HtbSpec`]; a `change` keeps them.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DrrSpec {
    /// limit of a class's default pfifo leaf (txqueuelen)
    pub leaf_limit: u32,
    #[serde(default)]
    pub classes: Vec<DrrClassSpec>,
    #[serde(default)]
    pub filters: Vec<U32Filter>,
}

/// One `tc class … drr`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DrrClassSpec {
    /// classid minor
    pub classid: u16,
    /// bytes per round (`psched_mtu` = 1514 when not given)
    pub quantum: u32,
    #[serde(default)]
    pub leaf: Option<HtbLeaf>,
}

/// `ets` (net/sched/sch_ets.c): `bands` classes `1:1…`, the first `strict`
/// served in strict priority, the others by DRR with `quanta` (one per
/// non-strict band), `priomap` (16 entries, band of each `skb->priority`).
/// Grafts, filters and `tc class change … quantum` come one verb at a time
/// (class_api/); a `change` keeps the leaves of the bands that remain and
/// the filters.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EtsSpec {
    pub bands: u8,
    #[serde(default)]
    pub strict: u8,
    /// quantum of bands `strict+1 … bands`, in bytes
    #[serde(default)]
    pub quanta: Vec<u32>,
    /// band (0-based) of each priority 0..15
    pub priomap: Vec<u8>,
    /// limit of a band's default pfifo leaf (txqueuelen)
    pub leaf_limit: u32,
    /// grafted leaves (band classid minor 1…bands)
    #[serde(default)]
    pub classes: Vec<EtsClassSpec>,
    #[serde(default)]
    pub filters: Vec<U32Filter>,
}

/// A band of an ets with a qdisc grafted on it.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EtsClassSpec {
    pub classid: u16,
    #[serde(default)]
    pub leaf: Option<HtbLeaf>,
}

/// `hfsc` (net/sched/sch_hfsc.c) as a whole: the default class, every
/// class with its service curves, the u32 filters and the leaf qdiscs, one
/// verb at a time as for [`HtbSpec`]; a `change` keeps them.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HfscSpec {
    /// minor of the default class (0: none)
    #[serde(default)]
    pub default: u16,
    /// limit of a class's default pfifo leaf (txqueuelen)
    pub leaf_limit: u32,
    #[serde(default)]
    pub classes: Vec<HfscClassSpec>,
    #[serde(default)]
    pub filters: Vec<U32Filter>,
}

/// One `tc class … hfsc [rt SC] [ls SC] [sc SC] [ul SC]`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HfscClassSpec {
    pub classid: u16,
    /// parent class minor; 0 = the root class (the qdisc's handle)
    #[serde(default)]
    pub parent: u16,
    /// real-time curve
    #[serde(default)]
    pub rsc: Option<ServiceCurve>,
    /// link-sharing (fair) curve
    #[serde(default)]
    pub fsc: Option<ServiceCurve>,
    /// upper-limit curve
    #[serde(default)]
    pub usc: Option<ServiceCurve>,
    #[serde(default)]
    pub leaf: Option<HtbLeaf>,
}

/// `struct tc_service_curve`: slope `m1` (bytes/s) for `d` µs, then `m2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceCurve {
    pub m1: u32,
    pub d: u32,
    pub m2: u32,
}

/// CAKE's tin layout (`TCA_CAKE_DIFFSERV_MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CakeDiffserv {
    Diffserv3,
    Diffserv4,
    Diffserv8,
    Besteffort,
    Precedence,
}

/// CAKE's flow isolation (`TCA_CAKE_FLOW_MODE`, `enum CAKE_FLOW_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CakeFlowMode {
    Flowblind,
    Srchost,
    Dsthost,
    Hosts,
    Flows,
    DualSrchost,
    DualDsthost,
    TripleIsolate,
}

/// Link-layer cell framing (`TCA_CAKE_ATM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CakeAtm {
    Noatm,
    Atm,
    Ptm,
}

/// `TCA_CAKE_ACK_FILTER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CakeAckFilter {
    None,
    Filter,
    Aggressive,
}

/// `cake` as the kernel receives it: the netlink attributes iproute2's
/// `cake_parse_opt` sends (docs/semantics/qdiscs.md §14). `None` = the
/// attribute was not sent (the kernel default on creation, the current value
/// on `change`). Rates in bytes/s, times in µs, sizes in bytes.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CakeSpec {
    /// bytes/s; `Some(0)` = `unlimited`
    #[serde(default)]
    pub bandwidth: Option<u64>,
    #[serde(default)]
    pub diffserv: Option<CakeDiffserv>,
    #[serde(default)]
    pub atm: Option<CakeAtm>,
    #[serde(default)]
    pub flowmode: Option<CakeFlowMode>,
    /// bytes, -64..256 (sets the overhead flag: the MAC header is taken off first)
    #[serde(default)]
    pub overhead: Option<i32>,
    /// `raw`: TCA_CAKE_RAW sent (clears the overhead flag)
    #[serde(default)]
    pub raw: bool,
    #[serde(default)]
    pub mpu: Option<u32>,
    /// µs (`rtt`, or a preset's interval)
    #[serde(default)]
    pub rtt: Option<u32>,
    /// µs (rtt / 20, or a preset's target)
    #[serde(default)]
    pub target: Option<u32>,
    #[serde(default)]
    pub autorate: Option<bool>,
    /// bytes (`memlimit`)
    #[serde(default)]
    pub memlimit: Option<u32>,
    #[serde(default)]
    pub fwmark: Option<u32>,
    /// accepted and shown; conntrack is not modelled, nothing is translated
    #[serde(default)]
    pub nat: Option<bool>,
    #[serde(default)]
    pub wash: Option<bool>,
    #[serde(default)]
    pub split_gso: Option<bool>,
    #[serde(default)]
    pub ingress: Option<bool>,
    #[serde(default)]
    pub ack_filter: Option<CakeAckFilter>,
}

// ------------------------------------------------------------ hook filters
// The requests of the ingress / clsact hooks (qdisc/ingress.rs runs them).

/// `ingress` / `clsact` as a whole: the filters of its hooks, as `tc qdisc
/// show` dumps them. `tc filter` adds and removes them one at a time
/// (engine/tc.rs `tc_hook_filter`); a request creating the qdisc carries the
/// filters it starts with (`tc` sends none), and a `change`/`replace` of the
/// same kind keeps those it has.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    /// filters at `ffff:` / `ffff:fff2` (the receive hook)
    #[serde(default)]
    pub ingress: Vec<HookFilter>,
    /// filters at `ffff:fff3` (clsact's transmit hook)
    #[serde(default)]
    pub egress: Vec<HookFilter>,
}

/// One `tc filter add dev D parent ffff: [protocol ip|all] [prio N]
/// (u32 match … | matchall | flower KEYS) [flowid X:Y] action …`.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookFilter {
    pub prio: u32,
    /// `protocol all` (else `ip`: ARP frames do not match)
    #[serde(default)]
    pub protocol_all: bool,
    /// `u32`, `matchall` or `flower`
    pub classifier: Classifier,
    /// u32 matches, all of which must hold (none: every packet)
    #[serde(default)]
    pub matches: Vec<U32Match>,
    /// flower's keys
    #[serde(default)]
    pub flower: Option<FlowerKey>,
    /// `flowid`/`classid` (major << 16 | minor), recorded for show
    #[serde(default)]
    pub classid: Option<u32>,
    /// the actions, in order
    pub actions: Vec<ActionSpec>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Classifier {
    U32,
    Matchall,
    Flower,
}

/// A verdict of an action (`TC_ACT_*` as tc's `parse_action_control` names
/// them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// `ok` / `pass`
    Ok,
    /// `drop` / `shot`
    Drop,
    /// `continue`: on to the next filter
    Continue,
    /// `pipe`: on to the next action
    Pipe,
    /// `reclassify`: restart the filter list
    Reclassify,
}

/// One action of a filter.
#[derive(Clone, Debug, PartialEq, Deserialize, schemars::JsonSchema, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ActionSpec {
    /// `mirred egress redirect dev DEV`, or with `mirror` `mirred egress
    /// mirror dev DEV`: a copy goes to DEV's transmit path and the packet
    /// goes on (the action's verdict is tc's default for a mirror, pipe)
    Mirred {
        dev: String,
        #[serde(default)]
        mirror: bool,
    },
    /// `police …` as the kernel receives it (`struct tc_police`): rates in
    /// bytes/s, the bucket depth in ns (tc's ticks × 64), `mtu` in bytes
    /// (tc sends 0 when none is given; the kernel then takes
    /// 255 << cell_log of the rate table, `u32::MAX` without a rate).
    Police {
        #[serde(default)]
        rate: u64,
        #[serde(default)]
        burst_ns: u64,
        mtu: u32,
        #[serde(default)]
        peakrate: Option<u64>,
        #[serde(default)]
        overhead: u32,
        #[serde(default)]
        mpu: u32,
        #[serde(default)]
        atm: bool,
        exceed: Control,
        conform: Control,
    },
    /// `gact`: `action ok|pass|drop|shot|continue|pipe|reclassify`
    Gact { control: Control },
}
