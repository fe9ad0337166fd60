//! The actions of a filter (docs/semantics/qdiscs.md §21, docs/models.md
//! "Ingress, ifb and police"): what ingress.rs runs when a filter matches.
//!
//! Linux sources followed (read for their behaviour, not copied):
//! - net/sched/act_police.c (`tcf_police_act`, `tcf_police_init`,
//!   `tcf_police_mtu_check`): a token bucket in nanoseconds of the rate
//!   (depth `burst`) and, with a peak rate, a second bucket of one `mtu`; a
//!   packet that conforms to both takes its tokens and gets the conform
//!   verdict, one whose frame (each segment's, for a GSO aggregate) is longer
//!   than `mtu` or that is short of tokens gets the exceed verdict and counts
//!   as an overlimit (and as a drop when that verdict is "drop").
//! - net/sched/act_mirred.c (`tcf_mirred_act`): `egress redirect dev D`
//!   steals the packet for D's transmit path, `egress mirror dev D` sends a
//!   clone there and the packet goes on (pipe).
//! - net/sched/act_gact.c (`tcf_gact_act`): a plain verdict.
//! - net/sched/act_api.c (`tcf_idr_check_alloc`, `tcf_lastuse_update`):
//!   each action's index in its kind's table and its ages.

use super::filter_show::ActionStats;
use super::spec::{ActionSpec, Control};
use super::tbf::RateCfg;
use crate::error::TcError;
use crate::time::SimTime;

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
    /// sees) at `now`; `frame` is what `tcf_police_mtu_check` holds against
    /// `mtu`: the Ethernet frame, of each segment for a GSO aggregate
    /// (`skb_gso_validate_mac_len`; the tokens are for the whole `len`).
    pub fn act(&mut self, now: SimTime, len: u32, frame: u32) -> Control {
        self.stats.bytes += len as u64;
        self.stats.packets += 1;
        let mut verdict = self.exceed;
        let mut conformed = false;
        if frame <= self.mtu {
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
pub(super) enum Action {
    /// the target device; a mirror (else a redirect)
    Mirred(usize, bool),
    Police(Police),
    Gact(Control),
}

/// One action as the kernel keeps it (`struct tc_action`): its `index` in
/// the namespace's table of its kind (`tcf_idr_check_alloc`: the lowest
/// free one from 1), its counters (police keeps its own) and `tcfa_tm`:
/// installed, last and first use (`tcf_lastuse_update`).
#[derive(Clone, Debug)]
pub(super) struct Act {
    pub(super) action: Action,
    pub(super) index: u32,
    pub(super) stats: ActionStats,
    pub(super) installed: SimTime,
    pub(super) lastuse: SimTime,
    pub(super) firstuse: Option<SimTime>,
}

impl Act {
    pub(super) fn kind(&self) -> &'static str {
        action_kind(&self.action)
    }

    pub(super) fn stats(&self) -> ActionStats {
        match &self.action {
            Action::Police(p) => p.stats,
            _ => self.stats,
        }
    }

    /// Run the action on a packet of `len` bytes: `tcf_mirred_act` and
    /// `tcf_gact_act` count it in their basic stats (gact a shot one as a
    /// drop too), `tcf_police_act` in its own.
    pub(super) fn run(&mut self, now: SimTime, len: u32, frame: u32) -> Step {
        self.lastuse = now;
        self.firstuse.get_or_insert(now);
        if !matches!(self.action, Action::Police(_)) {
            self.stats.bytes += len as u64;
            self.stats.packets += 1;
        }
        match &mut self.action {
            Action::Mirred(dev, false) => Step::Stolen(*dev),
            Action::Mirred(dev, true) => Step::Mirror(*dev),
            Action::Police(pol) => Step::Control(pol.act(now, len, frame)),
            Action::Gact(c) => {
                if *c == Control::Drop {
                    self.stats.drops += 1;
                }
                Step::Control(*c)
            }
        }
    }
}

/// The runtime action of `a` (`tcf_action_init_1`): a mirred target
/// resolved to its device, a policer with a full bucket at `now`.
pub(super) fn build_action(
    a: &ActionSpec,
    now: SimTime,
    dev_index: &dyn Fn(&str) -> Option<usize>,
) -> Result<Action, TcError> {
    Ok(match a {
        ActionSpec::Mirred { dev, mirror } => Action::Mirred(
            dev_index(dev).ok_or_else(|| {
                TcError::Invalid(format!(
                    "mirred: Cannot find device \"{dev}\" (create it with ip link add {dev} type ifb)"
                ))
            })?,
            *mirror,
        ),
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
            *rate, *burst_ns, *mtu, *peakrate, *overhead, *mpu, *atm, *exceed, *conform, now,
        )?),
        ActionSpec::Gact { control } => Action::Gact(*control),
    })
}

pub(super) fn action_kind(a: &Action) -> &'static str {
    match a {
        Action::Mirred(..) => "mirred",
        Action::Police(_) => "police",
        Action::Gact(_) => "gact",
    }
}

/// What one action or filter said.
pub(super) enum Step {
    Control(Control),
    Stolen(usize),
    /// a copy for this device; the packet goes on (pipe)
    Mirror(usize),
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(p.act(t(0), 1000, 1000), Control::Ok, "packet {i}");
        }
        assert_eq!(p.tokens_ns(), 0);
        assert_eq!(p.act(t(0), 1000, 1000), Control::Drop);
        // 7.999 ms later one packet is still short of tokens
        assert_eq!(p.act(t(7_999_999), 1000, 1000), Control::Drop);
        assert_eq!(p.act(t(8_000_000), 1000, 1000), Control::Ok);
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
            assert_eq!(p.act(t(10_000_000_000), 1000, 1000), Control::Ok);
        }
        assert_eq!(p.act(t(10_000_000_000), 1000, 1000), Control::Drop);
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
        assert_eq!(p.act(t(0), 1501, 1501), Control::Drop);
        // the peak bucket holds one mtu (6 ms at 250 000 B/s): 1500 B pass,
        // the next 1500 B needs 6 ms more
        assert_eq!(p.act(t(0), 1500, 1500), Control::Ok);
        assert_eq!(p.act(t(0), 1500, 1500), Control::Drop);
        assert_eq!(p.act(t(6_000_000), 1500, 1500), Control::Ok);
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

    #[test]
    fn police_mtu_holds_each_segment_of_an_aggregate() {
        // mtu 1514: a 3-segment aggregate of 4 434 bytes whose frames are 1 514
        // conforms and takes the tokens of all of it; a 1 515-byte frame exceeds
        let mut p = Police::new(
            125_000,
            80_000_000,
            1514,
            None,
            0,
            0,
            false,
            Control::Drop,
            Control::Ok,
            t(0),
        )
        .unwrap();
        assert_eq!(p.act(t(0), 4434, 1514), Control::Ok);
        // 4 434 B at 125 000 B/s: 35.472 ms of the 80 ms bucket
        assert_eq!(p.tokens_ns(), 80_000_000 - 35_472_000);
        assert_eq!(p.act(t(0), 1501, 1515), Control::Drop);
    }
}
