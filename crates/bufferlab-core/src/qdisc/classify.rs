//! Packet classification shared by the classful kinds (htb, prio, dualpi2)
//! and the receive/transmit hooks (ingress.rs): the `u32` matches of `tc
//! filter` (net/sched/cls_u32.c as tc/f_u32.c builds them; docs/models.md,
//! HTB), the `flower` keys (net/sched/cls_flower.c `fl_classify`,
//! `fl_set_key`, `fl_check_assign_mask`) and the socket priority Linux
//! derives from the TOS byte (include/net/route.h `rt_tos2priority`, the
//! table `ip_tos2prio` of net/ipv4/route.c).

use super::spec::{FlowerKey, FlowerPort, U32Field, U32Filter, U32Match};
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

/// Does `f` hold for `p`: every u32 match (ports only for TCP/UDP), or
/// its flower keys?
pub fn u32_matches(f: &U32Filter, p: &Packet) -> bool {
    match &f.flower {
        Some(key) => flower_match(key, p),
        None => f.matches.iter().all(|m| u32_match(m, p)),
    }
}

/// The flow dissector's view of `p` for flower (net/core/flow_dissector.c
/// `__skb_flow_dissect`): IP protocol (0 for ARP, which has none), and the
/// ports of TCP and UDP (0 otherwise: `proto_ports_offset`). No packet of
/// the model is an IP fragment, so the `ip_flags` bits are all clear.
fn dissect(p: &Packet) -> (u8, u16, u16) {
    match p.proto {
        Proto::Tcp => (6, p.src_port, p.dst_port),
        Proto::Udp => (17, p.src_port, p.dst_port),
        Proto::Icmp => (1, 0, 0),
        Proto::Arp => (0, 0, 0),
    }
}

/// `fl_classify` for one filter's keys (the receive hook's `indev` is the
/// caller's: the key names a device, the hook knows its own).
pub fn flower_match(k: &FlowerKey, p: &Packet) -> bool {
    let (proto, sport, dport) = dissect(p);
    let masked = |m: &Option<super::spec::FlowerMasked>, field: u32| {
        m.is_none_or(|m| field & m.mask == m.value & m.mask)
    };
    // fl_range_port_*_cmp: min ≤ port ≤ max; a masked port as any key
    let port = |m: &Option<FlowerPort>, field: u16| match m {
        None => true,
        Some(FlowerPort::Masked { value, mask }) => field & mask == value & mask,
        Some(FlowerPort::Range { min, max }) => (*min..=*max).contains(&field),
    };
    k.ip_proto.is_none_or(|v| v == proto)
        && masked(&k.src_ip, p.src.0)
        && masked(&k.dst_ip, p.dst.0)
        && port(&k.src_port, sport)
        && port(&k.dst_port, dport)
        && masked(&k.ip_tos, p.tos as u32)
        && masked(&k.ip_ttl, p.ttl as u32)
        && masked(&k.ip_flags, 0)
}

impl FlowerKey {
    /// The filter's mask (`struct fl_flow_mask`'s key) field by field: the
    /// filters of one prio that share it share one hash table, which
    /// `fl_classify` tries in the order the masks were created.
    pub fn mask(&self) -> [u64; 9] {
        let masked = |m: &Option<super::spec::FlowerMasked>| m.map_or(0, |m| m.mask as u64);
        // a range masks the min and max keys whole (`fl_set_key_port_range`)
        let port = |m: &Option<FlowerPort>| match m {
            None => 0,
            Some(FlowerPort::Masked { mask, .. }) => *mask as u64,
            Some(FlowerPort::Range { .. }) => 0xffff_ffff << 16,
        };
        [
            self.ip_proto.map_or(0, |_| 0xff),
            masked(&self.src_ip),
            masked(&self.dst_ip),
            port(&self.src_port),
            port(&self.dst_port),
            masked(&self.ip_tos),
            masked(&self.ip_ttl),
            masked(&self.ip_flags),
            self.indev.is_some() as u64,
        ]
    }

    /// The masked key (`fl_set_masked_key`): two filters with the same mask
    /// and masked key are one (`fl_ht_insert_unique`: EEXIST).
    pub fn same_masked_key(&self, other: &FlowerKey) -> bool {
        let masked = |m: &Option<super::spec::FlowerMasked>| m.map(|m| m.value & m.mask);
        let port = |m: &Option<FlowerPort>| match m {
            Some(FlowerPort::Masked { value, mask }) => Some((value & mask, 0)),
            Some(FlowerPort::Range { min, max }) => Some((*min, *max)),
            None => None,
        };
        self.mask() == other.mask()
            && self.ip_proto == other.ip_proto
            && [
                &self.src_ip,
                &self.dst_ip,
                &self.ip_tos,
                &self.ip_ttl,
                &self.ip_flags,
            ]
            .map(masked)
                == [
                    &other.src_ip,
                    &other.dst_ip,
                    &other.ip_tos,
                    &other.ip_ttl,
                    &other.ip_flags,
                ]
                .map(masked)
            && [port(&self.src_port), port(&self.dst_port)]
                == [port(&other.src_port), port(&other.dst_port)]
            && self.indev == other.indev
    }
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

/// Where the kernel tries filter `i` of `list` within its prio (`prio_key`:
/// an item's prio and flower keys): u32 and matchall in list order; flower
/// by mask, each mask where its first filter stands (`fl_create_new_mask`
/// appends a new mask to the list `fl_classify` walks; filters leave a prio
/// only all at once, so no mask is freed before it).
pub fn classify_rank<T>(
    list: &[T],
    i: usize,
    prio_key: impl Fn(&T) -> (u32, Option<&FlowerKey>),
) -> usize {
    let (prio, key) = prio_key(&list[i]);
    let Some(mask) = key.map(FlowerKey::mask) else {
        return i;
    };
    list[..i]
        .iter()
        .map(&prio_key)
        .position(|(p, k)| p == prio && k.is_some_and(|k| k.mask() == mask))
        .unwrap_or(i)
}

/// `tcf_classify` over filters attached at one qdisc: the lowest `prio`
/// first ([`classify_rank`] among equal prios); the `flowid` minor of the
/// first filter that matches. No allocation.
pub fn u32_flowid(filters: &[U32Filter], p: &Packet) -> Option<u16> {
    let mut best: Option<(u32, usize, u16)> = None;
    for (i, f) in filters.iter().enumerate() {
        if best.is_some_and(|(prio, _, _)| f.prio > prio) {
            continue;
        }
        if !u32_matches(f, p) {
            continue;
        }
        let rank = classify_rank(filters, i, |g| (g.prio, g.flower.as_ref()));
        if best.is_none_or(|(prio, best_rank, _)| f.prio < prio || rank < best_rank) {
            best = Some((f.prio, rank, f.flowid));
        }
    }
    best.map(|(_, _, flowid)| flowid)
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
            flower: None,
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

    fn masked(value: u32, mask: u32) -> Option<crate::qdisc::spec::FlowerMasked> {
        Some(crate::qdisc::spec::FlowerMasked { value, mask })
    }

    #[test]
    fn flower_keys_as_fl_classify_matches_them() {
        // the test frame: UDP 10.0.0.1:40000 -> 10.0.0.2:5201, TOS 0, TTL 64
        let p = crate::packet::tests::frame(1514);
        let udp_5201 = FlowerKey {
            ip_proto: Some(17),
            dst_port: Some(FlowerPort::Masked {
                value: 5201,
                mask: 0xffff,
            }),
            ..FlowerKey::default()
        };
        assert!(flower_match(&udp_5201, &p));
        assert!(!flower_match(
            &FlowerKey {
                ip_proto: Some(6),
                ..udp_5201.clone()
            },
            &p
        ));
        // 5201 = 0x1451: under the mask 0xff00 it is 0x1400
        let high_byte = FlowerPort::Masked {
            value: 0x1400,
            mask: 0xff00,
        };
        assert!(flower_match(
            &FlowerKey {
                dst_port: Some(high_byte),
                ..udp_5201.clone()
            },
            &p
        ));
        // ranges are inclusive: 40000 in 39999-40000, not in 40001-65535
        let range = |min, max| FlowerKey {
            ip_proto: Some(17),
            src_port: Some(FlowerPort::Range { min, max }),
            ..FlowerKey::default()
        };
        assert!(flower_match(&range(39_999, 40_000), &p));
        assert!(!flower_match(&range(40_001, 65_535), &p));
        // 10.0.0.2 in 10.0.0.0/24, 10.0.0.1 not in 10.0.0.2/32; TTL 64 = 0x40 under 0xc0
        let addr = FlowerKey {
            dst_ip: masked(0x0a00_0000, 0xffff_ff00),
            src_ip: masked(0x0a00_0002, 0xffff_ffff),
            ..FlowerKey::default()
        };
        assert!(!flower_match(&addr, &p));
        assert!(flower_match(
            &FlowerKey {
                src_ip: None,
                ..addr
            },
            &p
        ));
        let ttl = FlowerKey {
            ip_ttl: masked(0x40, 0xc0),
            ..FlowerKey::default()
        };
        assert!(flower_match(&ttl, &p));
        // no packet is a fragment: nofrag holds, frag does not
        let frag = |value| FlowerKey {
            ip_flags: masked(value, 1),
            ..FlowerKey::default()
        };
        assert!(flower_match(&frag(0), &p) && !flower_match(&frag(1), &p));
        // an ICMP packet has no ports (the filter's ip_proto rules it out anyway)
        let mut icmp = p;
        icmp.proto = Proto::Icmp;
        assert!(!flower_match(&udp_5201, &icmp));
    }

    #[test]
    fn flower_masks_in_creation_order_then_the_masked_key() {
        let p = crate::packet::tests::frame(1514);
        let port = |field: &str, value, flowid| U32Filter {
            prio: 1,
            matches: vec![],
            flowid,
            flower: Some(FlowerKey {
                ip_proto: Some(17),
                src_port: (field == "src").then_some(FlowerPort::Masked {
                    value,
                    mask: 0xffff,
                }),
                dst_port: (field == "dst").then_some(FlowerPort::Masked {
                    value,
                    mask: 0xffff,
                }),
                ..FlowerKey::default()
            }),
        };
        // masks: dst (filters 0 and 2), then src (filter 1); the packet matches 1 and 2:
        // the dst mask, made first, answers
        let filters = vec![
            port("dst", 80, 10),
            port("src", 40_000, 20),
            port("dst", 5201, 30),
        ];
        let rank = |i| classify_rank(&filters, i, |g| (g.prio, g.flower.as_ref()));
        assert_eq!((rank(1), rank(2)), (1, 0));
        assert_eq!(u32_flowid(&filters, &p), Some(30));
        // a lower prio still goes first
        let mut first = port("src", 40_000, 40);
        first.prio = 0;
        let mut with_first = filters.clone();
        with_first.push(first);
        assert_eq!(u32_flowid(&with_first, &p), Some(40));
        // one mask, two masked keys: distinct filters; the same key twice: one
        let (a, b) = (
            filters[0].flower.as_ref().unwrap(),
            filters[2].flower.as_ref().unwrap(),
        );
        assert_eq!(a.mask(), b.mask());
        assert!(!a.same_masked_key(b));
        let a_again = FlowerKey {
            dst_port: Some(FlowerPort::Masked {
                value: 80,
                mask: 0xffff,
            }),
            ..a.clone()
        };
        assert!(a.same_masked_key(&a_again));
        // 81 and 80 under the mask 0xfffe are one key
        let under = |value| FlowerKey {
            dst_port: Some(FlowerPort::Masked {
                value,
                mask: 0xfffe,
            }),
            ..FlowerKey::default()
        };
        assert!(under(80).same_masked_key(&under(81)));
        assert!(!under(80).same_masked_key(&under(82)));
    }
}
