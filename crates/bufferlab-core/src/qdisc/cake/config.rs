//! CAKE's configuration: the `tc` attributes `cake_change` keeps, their
//! defaults, and what they build — the tin layout of each diffserv mode with
//! its DSCP map, rates and quanta, the memory limit — and a packet's tin.
//! Follows net/sched/sch_cake.c (`cake_init`, `cake_change`,
//! `cake_config_besteffort` … `cake_config_diffserv3`, `cake_reconfigure`,
//! `cake_select_tin`, `cake_handle_diffserv`).

use super::shaper::Overhead;
use super::tin::Entry;
use super::{Cake, MAX_TINS, MTU, SCH_LIMIT};
use crate::error::TcError;
use crate::packet::{Packet, Proto};
use crate::qdisc::spec::{CakeAckFilter, CakeAtm, CakeDiffserv, CakeFlowMode, CakeSpec};

// DSCP → tin maps (one entry per DSCP 0..63), as the kernel's tables.
const PRECEDENCE: [u8; 64] = {
    let mut t = [0u8; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = (i / 8) as u8;
        i += 1;
    }
    t
};
#[rustfmt::skip]
const DIFFSERV8: [u8; 64] = [
    2, 0, 1, 2, 4, 2, 2, 2, 1, 2, 1, 2, 1, 2, 1, 2,
    5, 2, 4, 2, 4, 2, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2,
    6, 2, 3, 2, 3, 2, 3, 2, 6, 2, 2, 2, 6, 2, 6, 2,
    7, 2, 2, 2, 2, 2, 2, 2, 7, 2, 2, 2, 2, 2, 2, 2,
];
#[rustfmt::skip]
const DIFFSERV4: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0, 2, 0,
    3, 0, 2, 0, 2, 0, 2, 0, 3, 0, 0, 0, 3, 0, 3, 0,
    3, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,
];
#[rustfmt::skip]
const DIFFSERV3: [u8; 64] = [
    0, 1, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0,
    2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,
];
pub(super) const BESTEFFORT: [u8; 64] = [0; 64];
pub(super) const NORMAL_ORDER: [u8; 8] = [0, 1, 2, 3, 4, 5, 6, 7];
const BULK_ORDER: [u8; 8] = [1, 0, 2, 3, 4, 5, 6, 7];

/// What `cake_change` keeps (`struct cake_sched_data`'s configuration).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Config {
    pub(super) rate_bps: u64,
    pub(super) tin_mode: CakeDiffserv,
    pub(super) flow_mode: CakeFlowMode,
    pub(super) nat: bool,
    pub(super) wash: bool,
    pub(super) atm: CakeAtm,
    pub(super) overhead: i32,
    pub(super) overhead_flag: bool,
    pub(super) mpu: u32,
    /// µs
    pub(super) interval: u32,
    /// µs
    pub(super) target: u32,
    pub(super) autorate: bool,
    pub(super) ingress: bool,
    pub(super) ack_filter: CakeAckFilter,
    pub(super) memlimit: u32,
    pub(super) split_gso: bool,
    pub(super) fwmark: u32,
}

impl Default for Config {
    /// `cake_init`'s defaults.
    fn default() -> Config {
        Config {
            rate_bps: 0,
            tin_mode: CakeDiffserv::Diffserv3,
            flow_mode: CakeFlowMode::TripleIsolate,
            nat: false,
            wash: false,
            atm: CakeAtm::Noatm,
            overhead: 0,
            overhead_flag: false,
            mpu: 0,
            interval: 100_000,
            target: 5_000,
            autorate: false,
            ingress: false,
            ack_filter: CakeAckFilter::None,
            memlimit: 0,
            split_gso: true,
            fwmark: 0,
        }
    }
}

impl Config {
    /// `cake_change`'s attribute handling; `resets_lengths` when the
    /// overhead (or raw) was given (min/max sizes start again).
    pub(super) fn apply(&mut self, s: &CakeSpec) -> Result<bool, TcError> {
        let mut c = *self;
        let mut resets = false;
        if let Some(n) = s.nat {
            c.nat = n;
        }
        if let Some(b) = s.bandwidth {
            c.rate_bps = b;
        }
        if let Some(d) = s.diffserv {
            c.tin_mode = d;
        }
        if let Some(w) = s.wash {
            c.wash = w;
        }
        if let Some(f) = s.flowmode {
            c.flow_mode = f;
        }
        if let Some(a) = s.atm {
            c.atm = a;
        }
        if let Some(o) = s.overhead {
            if !(-64..=256).contains(&o) {
                return Err(TcError::Invalid(
                    "Illegal \"overhead\", valid range is -64 to 256".into(),
                ));
            }
            c.overhead = o;
            c.overhead_flag = true;
            resets = true;
        }
        if s.raw {
            c.overhead_flag = false;
            resets = true;
        }
        if let Some(m) = s.mpu {
            if m > 256 {
                return Err(TcError::Invalid(
                    "Illegal \"mpu\", valid range is 0 to 256".into(),
                ));
            }
            c.mpu = m;
        }
        if let Some(r) = s.rtt {
            c.interval = r.max(1);
        }
        if let Some(t) = s.target {
            c.target = t.max(1);
        }
        if let Some(a) = s.autorate {
            c.autorate = a;
        }
        if let Some(i) = s.ingress {
            c.ingress = i;
        }
        if let Some(a) = s.ack_filter {
            c.ack_filter = a;
        }
        if let Some(m) = s.memlimit {
            c.memlimit = m;
        }
        if let Some(g) = s.split_gso {
            c.split_gso = g;
        }
        if let Some(f) = s.fwmark {
            c.fwmark = f;
        }
        *self = c;
        Ok(resets)
    }

    pub(super) fn overhead(&self) -> Overhead {
        Overhead {
            flag: self.overhead_flag,
            overhead: self.overhead,
            mpu: self.mpu,
            atm: self.atm,
        }
    }
}

pub(super) fn diffserv_name(d: CakeDiffserv) -> &'static str {
    match d {
        CakeDiffserv::Diffserv3 => "diffserv3",
        CakeDiffserv::Diffserv4 => "diffserv4",
        CakeDiffserv::Diffserv8 => "diffserv8",
        CakeDiffserv::Besteffort => "besteffort",
        CakeDiffserv::Precedence => "precedence",
    }
}

pub(super) fn flowmode_name(m: CakeFlowMode) -> &'static str {
    match m {
        CakeFlowMode::Flowblind => "flowblind",
        CakeFlowMode::Srchost => "srchost",
        CakeFlowMode::Dsthost => "dsthost",
        CakeFlowMode::Hosts => "hosts",
        CakeFlowMode::Flows => "flows",
        CakeFlowMode::DualSrchost => "dual-srchost",
        CakeFlowMode::DualDsthost => "dual-dsthost",
        CakeFlowMode::TripleIsolate => "triple-isolate",
    }
}

impl Cake {
    /// `cake_reconfigure`: tins for the diffserv mode, the global rate, the
    /// memory limit. Packets left in tins no longer in use are freed into
    /// `cleared`.
    pub(super) fn reconfigure(&mut self, cleared: &mut Vec<Entry>) {
        let rate = self.cfg.rate_bps;
        let target_ns = self.cfg.target as u64 * 1000;
        let rtt_ns = self.cfg.interval as u64 * 1000;
        match self.cfg.tin_mode {
            CakeDiffserv::Besteffort => {
                self.tin_cnt = 1;
                self.tin_index = &BESTEFFORT;
                self.tin_order = &NORMAL_ORDER;
                self.tins[0].set_rate(rate, MTU, target_ns, rtt_ns);
                self.tins[0].tin_quantum = 65535;
            }
            CakeDiffserv::Precedence | CakeDiffserv::Diffserv8 => {
                self.tin_cnt = 8;
                self.tin_index = if self.cfg.tin_mode == CakeDiffserv::Precedence {
                    &PRECEDENCE
                } else {
                    &DIFFSERV8
                };
                self.tin_order = &NORMAL_ORDER;
                let (mut r, mut quantum) = (rate, 256u32);
                for t in 0..8 {
                    self.tins[t].set_rate(r, MTU, target_ns, rtt_ns);
                    self.tins[t].tin_quantum = quantum.max(1) as u16;
                    r = r.wrapping_mul(7) >> 3;
                    quantum = (quantum * 7) >> 3;
                }
            }
            CakeDiffserv::Diffserv4 => {
                self.tin_cnt = 4;
                self.tin_index = &DIFFSERV4;
                self.tin_order = &BULK_ORDER;
                for (t, sh) in [(0, 0), (1, 4), (2, 1), (3, 2)] {
                    self.tins[t].set_rate(rate >> sh, MTU, target_ns, rtt_ns);
                    self.tins[t].tin_quantum = (1024u32 >> sh) as u16;
                }
            }
            CakeDiffserv::Diffserv3 => {
                self.tin_cnt = 3;
                self.tin_index = &DIFFSERV3;
                self.tin_order = &BULK_ORDER;
                for (t, sh) in [(0, 0), (1, 4), (2, 2)] {
                    self.tins[t].set_rate(rate >> sh, MTU, target_ns, rtt_ns);
                    self.tins[t].tin_quantum = (1024u32 >> sh) as u16;
                }
            }
        }
        for c in self.tin_cnt..MAX_TINS {
            self.clear_tin(c, cleared);
            self.tins[c].cp.mtu_time = self.tins[0].cp.mtu_time;
        }
        self.rate_ns = self.tins[0].rate_ns;
        self.rate_shft = self.tins[0].rate_shft;
        let mut limit: u64 = if self.cfg.memlimit != 0 {
            self.cfg.memlimit as u64
        } else if self.cfg.rate_bps != 0 {
            let t = self.cfg.rate_bps.wrapping_mul(self.cfg.interval as u64) / 250_000;
            (t as u32).max(4 << 20) as u64
        } else {
            u32::MAX as u64
        };
        limit = limit.min((SCH_LIMIT * MTU as u64).max(self.cfg.memlimit as u64));
        self.buffer_limit = limit.min(u32::MAX as u64) as u32;
    }

    /// `cake_select_tin` (with `cake_handle_diffserv`'s wash).
    pub(super) fn select_tin(&self, p: &mut Packet) -> usize {
        let dscp = if p.proto == Proto::Arp {
            0x38
        } else {
            p.tos >> 2
        };
        if self.cfg.wash && dscp != 0 && p.proto != Proto::Arp {
            p.tos &= crate::packet::ECN_MASK;
        }
        if self.cfg.tin_mode == CakeDiffserv::Besteffort {
            return 0;
        }
        // no firewall mark and no skb->priority on our packets
        let t = self.tin_index[dscp as usize] as usize;
        if t >= self.tin_cnt {
            0
        } else {
            t
        }
    }
}
