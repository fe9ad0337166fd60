//! A node's SNMP counters (`netstat -s`, `nstat`, /proc/net/snmp and
//! /proc/net/netstat; names as net/ipv4/proc.c prints them, meanings from
//! include/uapi/linux/snmp.h): the node's own, counted by the engine where
//! Linux counts them (net/ipv4/ip_input.c `ip_rcv_core`,
//! `ip_local_deliver_finish`, ip_forward.c, icmp.c `icmp_rcv`, udp.c
//! `__udp4_lib_rcv`, tcp_ipv4.c `tcp_v4_rcv`, `tcp_v4_send_reset`), and the
//! sum of its TCP connections' (tcp/endpoint/mib.rs, app/sockets).
//!
//! Counted per packet record, as Linux counts per skb: a TSO/GSO aggregate
//! is one `InReceives`, one `InSegs`, and its segments in the ECN counters.
//! iperf3's control connection is modelled as messages, not TCP: its
//! packets count in `Ip` only. Not counted, so absent from the JSON:
//! octets, fragments, header and address errors other than an expired TTL,
//! and every ICMP error (the model sends none: where Linux answers a
//! datagram to a closed port with a port unreachable, only `Udp NoPorts`
//! moves here).

use crate::packet::{tcp_flags, Packet, Payload, Proto, ECN_MASK};
use crate::tcp::endpoint::TcpTotals;
use serde_json::{json, Map, Value};

crate::counters::mib_counters! {
    /// The counters a node's stack keeps itself (see the module doc).
    NodeMib(u64) {
        ip_in_receives => "Ip" "InReceives",
        ip_in_hdr_errors => "Ip" "InHdrErrors",
        ip_forw_datagrams => "Ip" "ForwDatagrams",
        ip_in_delivers => "Ip" "InDelivers",
        ip_out_requests => "Ip" "OutRequests",
        ip_in_noect => "IpExt" "InNoECTPkts",
        ip_in_ect1 => "IpExt" "InECT1Pkts",
        ip_in_ect0 => "IpExt" "InECT0Pkts",
        ip_in_ce => "IpExt" "InCEPkts",
        icmp_in_msgs => "Icmp" "InMsgs",
        icmp_in_errors => "Icmp" "InErrors",
        icmp_in_csum_errors => "Icmp" "InCsumErrors",
        icmp_in_echos => "Icmp" "InEchos",
        icmp_in_echo_reps => "Icmp" "InEchoReps",
        icmp_out_msgs => "Icmp" "OutMsgs",
        icmp_out_echos => "Icmp" "OutEchos",
        icmp_out_echo_reps => "Icmp" "OutEchoReps",
        udp_in_datagrams => "Udp" "InDatagrams",
        udp_no_ports => "Udp" "NoPorts",
        udp_in_errors => "Udp" "InErrors",
        udp_in_csum_errors => "Udp" "InCsumErrors",
        udp_out_datagrams => "Udp" "OutDatagrams",
        tcp_in_segs => "Tcp" "InSegs",
        tcp_in_errs => "Tcp" "InErrs",
        tcp_in_csum_errors => "Tcp" "InCsumErrors",
        tcp_out_rsts => "Tcp" "OutRsts",
        tcp_out_segs => "Tcp" "OutSegs",
    }
}

/// Is `p` one of the model's TCP segments (not iperf3's modelled control
/// messages)?
fn is_tcp_segment(p: &Packet) -> bool {
    matches!(p.payload, Payload::Tcp(_))
}

impl NodeMib {
    /// `ip_rcv_core`: an IP packet arrived for this node's stack (to deliver
    /// or forward); the ECN counters count the segments it stands for.
    pub fn on_ip_receive(&mut self, p: &Packet) {
        self.ip_in_receives += 1;
        let segs = p.segs() as u64;
        match p.tos & ECN_MASK {
            0 => self.ip_in_noect += segs,
            1 => self.ip_in_ect1 += segs,
            2 => self.ip_in_ect0 += segs,
            _ => self.ip_in_ce += segs,
        }
    }

    /// `ip_forward_finish`: forwarded on.
    pub fn on_forward(&mut self) {
        self.ip_forw_datagrams += 1;
    }

    /// `ip_forward`'s TTL check failed (`InHdrErrors`; Linux also answers
    /// with a time exceeded, not modelled).
    pub fn on_ttl_expired(&mut self) {
        self.ip_in_hdr_errors += 1;
    }

    /// `ip_local_deliver_finish` hands `p` to its protocol; `to_socket` says
    /// whether a socket (or the echo responder) takes it. A corrupted
    /// packet fails the transport checksum, where the capture shows the
    /// flipped bit (capture/frame.rs).
    pub fn on_deliver(&mut self, p: &Packet, to_socket: bool) {
        self.ip_in_delivers += 1;
        match p.proto {
            Proto::Icmp => {
                self.icmp_in_msgs += 1;
                if p.corrupt {
                    self.icmp_in_csum_errors += 1;
                    self.icmp_in_errors += 1;
                } else if let Payload::Echo { reply, .. } = p.payload {
                    if reply {
                        self.icmp_in_echo_reps += 1;
                    } else {
                        self.icmp_in_echos += 1;
                    }
                }
            }
            Proto::Udp if p.corrupt => {
                self.udp_in_csum_errors += 1;
                self.udp_in_errors += 1;
            }
            Proto::Udp if to_socket => self.udp_in_datagrams += 1,
            Proto::Udp => self.udp_no_ports += 1,
            Proto::Tcp if is_tcp_segment(p) => {
                // tcp_v4_rcv counts every segment, even bad ones
                self.tcp_in_segs += 1;
                if p.corrupt {
                    self.tcp_in_csum_errors += 1;
                    self.tcp_in_errs += 1;
                }
            }
            _ => {}
        }
    }

    /// The node's stack sends `p` it made itself (`ip_local_out`): an
    /// application's packet, an echo reply, a reset. TCP segments of
    /// connections are counted by their endpoint.
    pub fn on_originate(&mut self, p: &Packet) {
        self.ip_out_requests += 1;
        match p.payload {
            Payload::Echo { reply, .. } => {
                self.icmp_out_msgs += 1;
                if reply {
                    self.icmp_out_echo_reps += 1;
                } else {
                    self.icmp_out_echos += 1;
                }
            }
            // every reset, a socket's (`tcp_send_active_reset`, an aborted
            // connection's answer) or the node's own
            Payload::Tcp(h) if h.flags & tcp_flags::RST != 0 => self.tcp_out_rsts += 1,
            _ if p.proto == Proto::Udp => self.udp_out_datagrams += 1,
            _ => {}
        }
    }

    /// `tcp_v4_send_reset` for a segment no socket wanted: a segment the
    /// node sends itself (a socket counts its own).
    pub fn on_reset_sent(&mut self) {
        self.tcp_out_segs += 1;
    }
}

/// Every counter of a node as `{"Ip": {...}, "Tcp": {...}, ...}`: its own,
/// its connections' (`tcp`), the `CurrEstab` gauge and the constants Linux
/// prints beside them (`Forwarding` 1 on a router, 2 on a host; the RTO
/// bounds in ms). Counters the model does not count are absent.
pub fn snmp_json(node: &NodeMib, tcp: &TcpTotals, curr_estab: u64, forwarding: bool) -> Value {
    let mut groups: Map<String, Value> = Map::new();
    let mut put = |group: &str, name: &str, v: Value| {
        let g = groups
            .entry(group.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = g {
            let old = m.get(name).and_then(Value::as_u64).unwrap_or(0);
            let add = v.as_u64().map(|n| json!(n + old)).unwrap_or(v);
            m.insert(name.to_string(), add);
        }
    };
    put("Ip", "Forwarding", json!(if forwarding { 1 } else { 2 }));
    put("Ip", "DefaultTTL", json!(64));
    put("Tcp", "RtoAlgorithm", json!(1));
    put("Tcp", "RtoMin", json!(200));
    put("Tcp", "RtoMax", json!(120_000));
    put("Tcp", "MaxConn", json!(-1));
    put("Tcp", "CurrEstab", json!(curr_estab));
    for (group, name, v) in node.entries().chain(tcp.entries()) {
        put(group, name, json!(v));
    }
    // IcmpMsg: the per-type counters behind InEchos & co. (Linux lists only
    // the types seen)
    for (name, v) in [
        ("InType0", node.icmp_in_echo_reps),
        ("InType8", node.icmp_in_echos),
        ("OutType0", node.icmp_out_echo_reps),
        ("OutType8", node.icmp_out_echos),
    ] {
        put("IcmpMsg", name, json!(v));
    }
    Value::Object(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::TcpHeader;
    use crate::tcp::endpoint::TcpMib;

    fn packet(proto: Proto, payload: Payload) -> Packet {
        Packet {
            proto,
            payload,
            ..crate::packet::tests::frame(100)
        }
    }

    #[test]
    fn each_delivery_counts_once_in_ip_and_once_in_its_protocol() {
        let mut m = NodeMib::default();
        let seg = packet(Proto::Tcp, Payload::Tcp(TcpHeader::default()));
        let bad = Packet {
            corrupt: true,
            ..seg
        };
        let udp = packet(Proto::Udp, Payload::Data);
        let ctrl = packet(Proto::Tcp, Payload::Control { msg: 1, conn: 0 });
        m.on_deliver(&seg, true);
        m.on_deliver(&bad, true);
        m.on_deliver(&udp, false);
        m.on_deliver(&udp, true);
        m.on_deliver(&ctrl, true);
        assert_eq!(m.ip_in_delivers, 5);
        assert_eq!(
            (m.tcp_in_segs, m.tcp_in_errs, m.tcp_in_csum_errors),
            (2, 1, 1)
        );
        assert_eq!((m.udp_no_ports, m.udp_in_datagrams), (1, 1));
    }

    #[test]
    fn ecn_counters_count_the_segments_of_an_aggregate() {
        let mut m = NodeMib::default();
        let agg = Packet {
            tos: 0b10,
            gso_segs: 4,
            gso_size: 1448,
            ..packet(Proto::Tcp, Payload::Tcp(TcpHeader::default()))
        };
        m.on_ip_receive(&agg);
        m.on_ip_receive(&Packet { tos: 0b11, ..agg });
        assert_eq!((m.ip_in_receives, m.ip_in_ect0, m.ip_in_ce), (2, 4, 4));
    }

    #[test]
    fn the_json_joins_node_and_connection_counters_with_the_constants() {
        let node = NodeMib {
            tcp_out_segs: 2,
            icmp_in_echos: 3,
            ..NodeMib::default()
        };
        let mut tcp = TcpTotals::default();
        tcp.add(&TcpMib {
            out_segs: 10,
            retrans_segs: 1,
            ..TcpMib::default()
        });
        let j = snmp_json(&node, &tcp, 1, false);
        assert_eq!(
            j["Tcp"]["OutSegs"], 12,
            "a node's resets plus its connections'"
        );
        assert_eq!(j["Tcp"]["RetransSegs"], 1);
        assert_eq!(j["Tcp"]["CurrEstab"], 1);
        assert_eq!(j["Tcp"]["MaxConn"], -1);
        assert_eq!(j["Ip"]["Forwarding"], 2);
        assert_eq!(j["IcmpMsg"]["InType8"], 3);
        assert!(j["Ip"].get("InOctets").is_none(), "not counted: absent");
    }
}
