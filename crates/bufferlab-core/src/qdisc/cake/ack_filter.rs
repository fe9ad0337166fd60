//! CAKE's ACK filter: a pure ACK queued behind an older one of the same
//! connection that it makes redundant removes that one. Follows
//! net/sched/sch_cake.c (`cake_ack_filter`, `cake_tcph_may_drop`,
//! `cake_tcph_sack_compare`).

use super::tin::Entry;
use super::Cake;
use crate::packet::{tcp_flags, Payload};
use crate::qdisc::spec::CakeAckFilter;
use crate::qdisc::QdiscCtx;

impl Cake {
    /// `cake_ack_filter`: with the packet just queued at the tail of flow
    /// `idx`, find an older pure ACK of the same connection it makes
    /// redundant; remove and return it.
    pub(super) fn ack_filter(&mut self, ctx: &QdiscCtx, t: usize, idx: usize) -> Option<Entry> {
        let aggressive = self.cfg.ack_filter == CakeAckFilter::Aggressive;
        let q = &mut self.tins[t].flows[idx].queue;
        if q.len() < 2 {
            return None;
        }
        let last = q.len() - 1;
        let trig = *ctx.arena.get(q[last].id);
        let Payload::Tcp(th) = trig.payload else {
            return None;
        };
        if th.flags & (tcp_flags::ACK | tcp_flags::SYN) != tcp_flags::ACK {
            return None;
        }
        let (tsval, tsecr) = if th.ts { (th.tsval, th.tsecr) } else { (0, 0) };
        let ecn_bits = tcp_flags::ECE | tcp_flags::CWR;
        let mut elig: Option<usize> = None;
        let mut elig_flags = 0u8;
        let mut num_found = 0;
        let mut chosen = None;
        for (i, e) in q.iter().enumerate().take(last) {
            let c = ctx.arena.get(e.id);
            let Payload::Tcp(ch) = c.payload else {
                continue;
            };
            if c.src_port != trig.src_port
                || c.dst_port != trig.dst_port
                || c.src != trig.src
                || c.dst != trig.dst
            {
                continue;
            }
            if elig.is_some() && (ch.flags & ecn_bits) != elig_flags {
                elig = None;
                num_found -= 1;
            }
            if !tcph_may_drop(&ch, tsval, tsecr)
                || c.payload_len() != 0
                || seq_after(ch.ack, th.ack)
            {
                continue;
            }
            let sack_comp = sack_compare(&ch, &th);
            if sack_comp < 0 || (ch.ack == th.ack && sack_comp == 0) {
                continue;
            }
            if elig.is_none() {
                elig = Some(i);
                elig_flags = ch.flags & ecn_bits;
            }
            let before = num_found;
            num_found += 1;
            if before > 0 {
                chosen = elig;
                break;
            }
        }
        if chosen.is_none() {
            if let Some(i) = elig {
                if aggressive && i + 1 == last && elig_flags == (th.flags & ecn_bits) {
                    chosen = Some(i);
                }
            }
        }
        let i = chosen?;
        q.remove(i)
    }
}

#[inline]
fn seq_after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

#[inline]
fn seq_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `cake_tcph_may_drop`: a pure ACK (no flag but ACK besides ECE/CWR) whose
/// options are only SACK and timestamps not newer than the triggering ACK's.
fn tcph_may_drop(h: &crate::packet::TcpHeader, tsval: u32, tsecr: u32) -> bool {
    let ecn = tcp_flags::ECE | tcp_flags::CWR;
    if h.flags & !ecn != tcp_flags::ACK {
        return false;
    }
    if h.mss != 0 || h.wscale.is_some() || h.sack_ok {
        return false;
    }
    if h.ts && (seq_after(h.tsval, tsval) || seq_after(h.tsecr, tsecr)) {
        return false;
    }
    true
}

/// `cake_tcph_sack_compare`: −1 if `a` SACKs something `b` does not (or
/// carries a D-SACK), 1 if `b` SACKs strictly more bytes, 0 if the same.
fn sack_compare(a: &crate::packet::TcpHeader, b: &crate::packet::TcpHeader) -> i32 {
    let (na, nb) = (a.sack_len as usize, b.sack_len as usize);
    if na > 0 && nb == 0 {
        return -1;
    }
    if nb > 0 && na == 0 {
        return 1;
    }
    if na == 0 && nb == 0 {
        return 0;
    }
    let (mut bytes_a, mut bytes_b) = (0u32, 0u32);
    let mut first = true;
    for &(sa, ea) in &a.sack[..na] {
        if seq_before(sa, a.ack) {
            return -1;
        }
        bytes_a = bytes_a.wrapping_add(ea.wrapping_sub(sa));
        let mut found = false;
        for &(sb, eb) in &b.sack[..nb] {
            if first {
                bytes_b = bytes_b.wrapping_add(eb.wrapping_sub(sb));
            }
            if !seq_after(sb, sa) && !seq_before(eb, ea) {
                found = true;
                if !first {
                    break;
                }
            }
        }
        if !found {
            return -1;
        }
        first = false;
    }
    if bytes_b > bytes_a {
        1
    } else {
        0
    }
}
