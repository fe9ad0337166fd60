//! CAKE's flow hashing: a packet's flow and host hashes, and `cake_hash`'s
//! 8-way set-associative placement of the flow in its tin's 1024 queues and of
//! its hosts in the host slots (host fairness for the dual/triple-isolate
//! modes). Follows net/sched/sch_cake.c (`cake_hash`).

use super::tin::Set;
use super::{dual_dst, dual_src, Cake, FLOW_DST_IP, FLOW_FLOWS, FLOW_SRC_IP, QUEUES, WAYS};
use crate::packet::{Packet, Proto};

/// SIM keyed mix (splitmix64 finaliser) standing for the kernel's jhash.
#[inline]
fn mix(key: u64, a: u64, b: u64) -> u32 {
    let mut h = key ^ a.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    h ^= b.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 30;
    h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^= h >> 31;
    (h >> 32) as u32
}

fn proto_num(p: Proto) -> u64 {
    match p {
        Proto::Icmp => 1,
        Proto::Tcp => 6,
        Proto::Udp => 17,
        Proto::Arp => 0x806,
    }
}

/// The flow hash (`skb->hash` of a socket's packets, or the dissected
/// 5-tuple) and the host hashes (one address, the other zeroed; Linux
/// orders the pair before hashing, so a host hashes alike as source and as
/// destination). Non-IP frames have no host hash.
fn hashes(p: &Packet, key: u64) -> (u32, u32, u32) {
    let flow = mix(
        key,
        (p.src.0 as u64) << 32 | p.dst.0 as u64,
        (p.src_port as u64) << 32 | (p.dst_port as u64) << 16 | proto_num(p.proto),
    );
    if p.proto == Proto::Arp {
        return (flow, 0, 0);
    }
    let host = |a: u32| mix(key ^ 0x5bd1_e995, a as u64, 0);
    (flow, host(p.src.0), host(p.dst.0))
}

impl Cake {
    /// `cake_hash`: the queue of tin `t` for a packet.
    pub(super) fn hash(&mut self, t: usize, p: &Packet) -> usize {
        let mode = self.flow_mode();
        if mode == 0 {
            return 0;
        }
        let (fh, src_h, dst_h) = hashes(p, self.hash_key);
        let mut flow_hash = if mode & FLOW_FLOWS != 0 { fh } else { 0 };
        if mode & FLOW_FLOWS == 0 {
            if mode & FLOW_SRC_IP != 0 {
                flow_hash ^= src_h;
            }
            if mode & FLOW_DST_IP != 0 {
                flow_hash ^= dst_h;
            }
        }
        let q = &mut self.tins[t];
        let mut reduced = flow_hash as usize % QUEUES;
        if q.flows[reduced].tag == flow_hash && q.flows[reduced].set != Set::None {
            q.way_directs += 1;
            return reduced;
        }
        let inner = reduced % WAYS;
        let outer = reduced - inner;
        let (mut alloc_src, mut alloc_dst) = (false, false);
        let mut k = inner;
        let mut found = false;
        for i in 0..WAYS {
            let f = &q.flows[outer + k];
            if f.tag == flow_hash {
                if i != 0 {
                    q.way_hits += 1;
                }
                if f.set == Set::None {
                    alloc_src = dual_src(mode);
                    alloc_dst = dual_dst(mode);
                }
                found = true;
                break;
            }
            k = (k + 1) % WAYS;
        }
        if !found {
            for _ in 0..WAYS {
                if q.flows[outer + k].set == Set::None {
                    q.way_misses += 1;
                    alloc_src = dual_src(mode);
                    alloc_dst = dual_dst(mode);
                    found = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
        }
        if !found {
            q.way_collisions += 1;
            if q.flows[outer + k].set == Set::Bulk {
                q.dec_src(outer + k, mode);
                q.dec_dst(outer + k, mode);
            }
            alloc_src = dual_src(mode);
            alloc_dst = dual_dst(mode);
        }
        reduced = outer + k;
        q.flows[reduced].tag = flow_hash;
        if alloc_src {
            let idx = src_h as usize % QUEUES;
            let inner = idx % WAYS;
            let outer = idx - inner;
            let mut k = inner;
            let mut hit = false;
            for _ in 0..WAYS {
                if q.hosts[outer + k].src_tag == src_h {
                    hit = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
            if !hit {
                for _ in 0..WAYS {
                    if q.hosts[outer + k].src_bulk == 0 {
                        break;
                    }
                    k = (k + 1) % WAYS;
                }
                q.hosts[outer + k].src_tag = src_h;
            }
            q.flows[reduced].srchost = (outer + k) as u16;
            if q.flows[reduced].set == Set::Bulk {
                q.inc_src(reduced, mode);
            }
        }
        if alloc_dst {
            let idx = dst_h as usize % QUEUES;
            let inner = idx % WAYS;
            let outer = idx - inner;
            let mut k = inner;
            let mut hit = false;
            for _ in 0..WAYS {
                if q.hosts[outer + k].dst_tag == dst_h {
                    hit = true;
                    break;
                }
                k = (k + 1) % WAYS;
            }
            if !hit {
                for _ in 0..WAYS {
                    if q.hosts[outer + k].dst_bulk == 0 {
                        break;
                    }
                    k = (k + 1) % WAYS;
                }
                q.hosts[outer + k].dst_tag = dst_h;
            }
            q.flows[reduced].dsthost = (outer + k) as u16;
            if q.flows[reduced].set == Set::Bulk {
                q.inc_dst(reduced, mode);
            }
        }
        reduced
    }
}
