//! Packet classification shared by the classful kinds (htb, prio, dualpi2):
//! the `u32` matches of `tc filter` (net/sched/cls_u32.c as tc/f_u32.c
//! builds them; docs/models.md, HTB) and the socket priority Linux derives
//! from the TOS byte (include/net/route.h `rt_tos2priority`, the table
//! `ip_tos2prio` of net/ipv4/route.c).

use super::spec::{U32Field, U32Filter, U32Match};
use crate::packet::{Packet, Proto};

/// `TC_PRIO_*` of each value of the four TOS bits (`IPTOS_TOS(tos) >> 1`):
/// best effort, bulk, interactive, interactive-bulk in blocks of four.
pub const TOS2PRIO: [u8; 16] = [0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4];

/// `skb->priority` of a packet: `sk_priority`, which `setsockopt(IP_TOS)`
/// sets to `rt_tos2priority(tos)`. The TOS a sender asked for carries no ECN
/// bits (TCP adds them itself), so they are masked off here (a plain socket
/// has TOS 0 and priority 0).
#[inline]
pub fn tos_priority(tos: u8) -> u8 {
    TOS2PRIO[((tos & 0x1C) >> 1) as usize]
}

/// Does every match of `f` hold for `p` (ports only for TCP/UDP)?
pub fn u32_matches(f: &U32Filter, p: &Packet) -> bool {
    f.matches.iter().all(|m| u32_match(m, p))
}

/// Does one u32 match hold for `p` (ports only for TCP/UDP)?
#[inline]
pub fn u32_match(m: &U32Match, p: &Packet) -> bool {
    let ports = matches!(p.proto, Proto::Tcp | Proto::Udp);
    let v = match m.field {
        U32Field::Any => 0,
        U32Field::Src => p.src.0,
        U32Field::Dst => p.dst.0,
        U32Field::Sport if ports => p.src_port as u32,
        U32Field::Dport if ports => p.dst_port as u32,
        U32Field::Tos => p.tos as u32,
        _ => return false,
    };
    v & m.mask == m.value & m.mask
}

/// `tcf_classify` over filters attached at one qdisc: the lowest `prio`
/// first (list order among equal prios); the `flowid` minor of the first
/// filter that matches. No allocation.
pub fn u32_flowid(filters: &[U32Filter], p: &Packet) -> Option<u16> {
    let mut best: Option<(u32, u16)> = None;
    for f in filters {
        if best.is_some_and(|(prio, _)| f.prio >= prio) {
            continue;
        }
        if u32_matches(f, p) {
            best = Some((f.prio, f.flowid));
        }
    }
    best.map(|(_, flowid)| flowid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tos_to_priority_follows_ip_tos2prio() {
        // IPTOS_LOWDELAY 0x10 -> interactive (6); THROUGHPUT 0x08 -> bulk (2);
        // RELIABILITY 0x04 -> best effort; 0x18 -> interactive bulk (4)
        assert_eq!(tos_priority(0x10), 6);
        assert_eq!(tos_priority(0x08), 2);
        assert_eq!(tos_priority(0x04), 0);
        assert_eq!(tos_priority(0x18), 4);
        // ECN bits never change the priority
        assert_eq!(tos_priority(0x01), 0);
        assert_eq!(tos_priority(0x13), 6);
        // DSCP EF (0xb8): TOS bits 0x18 -> 4
        assert_eq!(tos_priority(0xb8), 4);
    }

    #[test]
    fn lowest_prio_filter_wins_then_list_order() {
        let mut env = crate::qdisc::tree::harness::Env::default();
        let id = env.pkt(100);
        let p = env.arena.get_mut(id);
        p.tos = 0x10;
        p.proto = Proto::Udp;
        p.dst_port = 5201;
        let mut p = *p;
        let f = |prio, field, value, mask, flowid| U32Filter {
            prio,
            matches: vec![U32Match { field, value, mask }],
            flowid,
        };
        let filters = vec![
            f(5, U32Field::Dport, 5201, 0xffff, 3),
            f(1, U32Field::Tos, 0x10, 0xff, 2),
            f(1, U32Field::Tos, 0x10, 0xf0, 7),
        ];
        assert_eq!(u32_flowid(&filters, &p), Some(2));
        assert_eq!(u32_flowid(&filters[..1], &p), Some(3));
        p.dst_port = 1;
        assert_eq!(u32_flowid(&filters[..1], &p), None);
    }
}
