//! CAKE's shaper: the rate as time per byte (`rate_ns >> rate_shft`), the
//! per-tin and global schedules with the 1.5× failsafe, the overhead
//! compensation that decides what a frame costs (MAC header, overhead, mpu,
//! ATM cells, PTM), and the ingress capacity estimate (autorate-ingress).
//! Follows net/sched/sch_cake.c (`cake_set_rate`, `cake_advance_shaper`,
//! `cake_calc_overhead`, `cake_overhead`, the estimate in `cake_enqueue`).

use super::tin::Tin;
use super::{ewma, Cake, NSEC_PER_SEC};
use crate::packet::{Packet, ETH_HEADER};
use crate::qdisc::spec::CakeAtm;

/// The overhead compensation of `cake_calc_overhead`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overhead {
    /// the overhead flag: take the MAC header off first
    pub flag: bool,
    pub overhead: i32,
    pub mpu: u32,
    pub atm: CakeAtm,
}

impl Overhead {
    /// Bytes the shaper charges for a frame of `len` bytes with `off` bytes
    /// of MAC header, and the network-layer length it saw.
    pub fn adjust(&self, len: u32, off: u32) -> (u32, u32) {
        let mut len = len;
        if self.flag {
            len = len.wrapping_sub(off);
        }
        let net = len;
        len = len.wrapping_add(self.overhead as u32);
        if len < self.mpu {
            len = self.mpu;
        }
        match self.atm {
            // u32 arithmetic as in C: a negative overhead larger than a tiny
            // frame wraps, and so does everything after it
            CakeAtm::Atm => len = (len.wrapping_add(47) / 48).wrapping_mul(53),
            CakeAtm::Ptm => len = len.wrapping_add(len.wrapping_add(63) / 64),
            CakeAtm::Noatm => {}
        }
        (net, len)
    }
}

impl Tin {
    /// `cake_set_rate`.
    pub(super) fn set_rate(&mut self, rate: u64, mtu: u32, target_ns: u64, rtt_ns: u64) {
        const MIN_RATE: u64 = 64;
        let mut rate_shft: u16 = 0;
        let mut rate_ns: u64 = 0;
        self.flow_quantum = 1514;
        if rate != 0 {
            self.flow_quantum = (rate >> 12).clamp(300, 1514) as u16;
            rate_shft = 34;
            rate_ns = (NSEC_PER_SEC << rate_shft) / rate.max(MIN_RATE);
            while rate_ns >> 34 != 0 {
                rate_ns >>= 1;
                rate_shft -= 1;
            }
        }
        self.rate_bps = rate;
        self.rate_ns = rate_ns;
        self.rate_shft = rate_shft;
        let byte_target_ns = (mtu as u64 * rate_ns) >> rate_shft;
        self.cp.target = (byte_target_ns * 3 / 2).max(target_ns);
        self.cp.interval = (rtt_ns + self.cp.target - target_ns).max(self.cp.target * 2);
        self.cp.mtu_time = byte_target_ns;
        self.cp.p_inc = 1 << 24;
        self.cp.p_dec = 1 << 20;
    }
}

impl Cake {
    /// `cake_advance_shaper`: charge `adj_len` to tin `t` and the global shaper.
    pub(super) fn advance_shaper(&mut self, t: usize, adj_len: u32, now: i64, drop: bool) {
        if self.rate_ns == 0 {
            return;
        }
        let b = &mut self.tins[t];
        let tin_dur = ((adj_len as u64).wrapping_mul(b.rate_ns) >> b.rate_shft) as i64;
        let global_dur = ((adj_len as u64).wrapping_mul(self.rate_ns) >> self.rate_shft) as i64;
        let failsafe_dur = global_dur.wrapping_add(global_dur >> 1);
        if b.time_next_packet < now {
            b.time_next_packet = b.time_next_packet.wrapping_add(tin_dur);
        } else if b.time_next_packet < now.wrapping_add(tin_dur) {
            b.time_next_packet = now.wrapping_add(tin_dur);
        }
        self.time_next_packet = self.time_next_packet.wrapping_add(global_dur);
        if !drop {
            self.failsafe_next_packet = self.failsafe_next_packet.wrapping_add(failsafe_dur);
        }
    }

    /// Global shaper's next instant (the earlier of the two schedules).
    pub(super) fn next_instant(&self) -> i64 {
        self.time_next_packet.min(self.failsafe_next_packet)
    }

    /// `cake_overhead` (and the length statistics of `cake_calc_overhead`).
    pub(super) fn adjusted_len(&mut self, p: &Packet) -> u32 {
        let off = ETH_HEADER;
        self.avg_netoff = ewma(self.avg_netoff as u64, (off as u64) << 16, 8) as u32;
        let oh = self.cfg.overhead();
        let mut calc = |len: u32| {
            let (net, adj) = oh.adjust(len, off);
            if (self.max_netlen as u32) < net {
                self.max_netlen = net as u16;
            }
            if (self.min_netlen as u32) > net {
                self.min_netlen = net as u16;
            }
            if (self.max_adjlen as u32) < adj {
                self.max_adjlen = adj as u16;
            }
            if (self.min_adjlen as u32) > adj {
                self.min_adjlen = adj as u16;
            }
            adj
        };
        if !p.is_gso() {
            return calc(p.len);
        }
        let hdr_len = p.header_len();
        let segs = p.segs();
        let size = p.gso_size as u32;
        let len = size + hdr_len;
        let last_len = p.skb_len() - size * (segs - 1);
        calc(len)
            .wrapping_mul(segs - 1)
            .wrapping_add(calc(last_len))
    }

    /// The ingress capacity estimate of `cake_enqueue` (autorate-ingress).
    pub(super) fn estimate_capacity(&mut self, now: i64) {
        let packet_interval = ((now - self.last_packet_time).max(0) as u64).min(NSEC_PER_SEC);
        let shift = if packet_interval > self.avg_packet_interval {
            2
        } else {
            8
        };
        self.avg_packet_interval = ewma(self.avg_packet_interval, packet_interval, shift);
        self.last_packet_time = now;
        if packet_interval > self.avg_packet_interval {
            let window = (now - self.avg_window_begin).max(1) as u64;
            let b =
                ((self.avg_window_bytes as u128 * NSEC_PER_SEC as u128) / window as u128) as u64;
            let shift = if b > self.avg_peak_bandwidth { 2 } else { 8 };
            self.avg_peak_bandwidth = ewma(self.avg_peak_bandwidth, b, shift);
            self.avg_window_bytes = 0;
            self.avg_window_begin = now;
            if now > self.last_reconfig_time + 250_000_000 {
                self.cfg.rate_bps = self.avg_peak_bandwidth.wrapping_mul(15) >> 4;
                let mut cleared = Vec::new();
                self.reconfigure(&mut cleared);
                debug_assert!(cleared.is_empty());
            }
        }
    }
}
