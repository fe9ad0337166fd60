//! Validated `tc qdisc` requests as they cross from the command parser
//! (python/bufferlab/commands/tc.py) into the engine, as JSON.
//!
//! All numbers are already in the kernel's units, exactly as `tc` would hand
//! them to the kernel (qdiscs.md §1.1): rates in bytes/s, sizes in bytes,
//! times in ns, probabilities as u32 fractions of 2³²−1. An optional field
//! that is absent (`null`) means "not given on the command line", which
//! matters for `change` (netem keeps some settings unless re-specified, §4.8).

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TcVerb {
    Add,
    Change,
    Replace,
    Link,
    Delete,
}

/// `parent X:Y` or `root`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParentSpec {
    Root,
    Class { major: u16, minor: u16 },
}

/// One `tc qdisc VERB dev DEV [root|parent P] [handle H:] [KIND OPTIONS]`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
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

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QdiscSpec {
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
    /// Modelled as pfifo(txqueuelen) with the pfifo_fast printout (qdiscs.md §2).
    PfifoFast,
    Tbf(TbfSpec),
    Netem(NetemSpec),
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
        }
    }
}

/// `tbf` as the kernel receives it (qdiscs.md §3.2). `latency` has already
/// been turned into `limit` by the parser, as `tc` does.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
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

/// netem's loss model (qdiscs.md §4.3). Probabilities are u32 fractions.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NetemDistribution {
    Uniform,
    Normal,
    Pareto,
    Paretonormal,
}

/// `slot MIN [MAX] [packets N] [bytes S]` or `slot distribution ...`.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
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

/// `netem` as the kernel receives it (qdiscs.md §4.1). The fixed block
/// (limit, latency, jitter, random loss, gap, duplicate) is always present;
/// `None` in the other fields means "not given" and keeps the current value on
/// `change` (§4.8).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct NetemCorrelation {
    pub delay: u32,
    pub loss: u32,
    pub duplicate: u32,
}

/// A probability with its own correlation (reorder, corrupt).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct NetemPercent {
    pub p: u32,
    pub corr: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
pub struct NetemRate {
    /// bytes per second
    pub rate: u64,
    pub packet_overhead: i32,
    pub cell_size: u32,
    pub cell_overhead: i32,
}
