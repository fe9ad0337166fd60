//! Wire bytes of a simulated packet, as a capture on a Linux interface shows
//! them: Ethernet II, IPv4 (RFC 791), then TCP (RFC 9293, options as Linux's
//! `tcp_options_write` lays them out), UDP (RFC 768), ICMP echo (RFC 792) or
//! ARP (RFC 826). Packets carry no payload bytes, so payloads are zeros; all
//! checksums are computed over those zeros and are therefore valid.
//!
//! Approximations (docs/internals.md "Observation"): the IPv4 ID is derived
//! from fields the packet carries (stable across capture points, not Linux's
//! per-socket counter); DF is set on every IP packet; iperf3's modelled
//! control connection (`Payload::Control`) has no TCP state, so its segments
//! show PSH|ACK with sequence numbers 0; a packet netem corrupted shows a
//! transport checksum with its lowest bit flipped (Linux flips a random bit).

use crate::packet::{tcp_flags, Packet, Payload, Proto, TcpHeader, ETH_HEADER};

pub type Mac = [u8; 6];
pub const BROADCAST: Mac = [0xff; 6];

/// Offset of the IP header in a frame.
pub const IP_OFF: usize = ETH_HEADER as usize;

/// RFC 1071 sum of `data` added to `acc` (not yet folded or complemented).
fn sum16(mut acc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u32) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// Internet checksum of `data`.
pub fn checksum(data: &[u8]) -> u16 {
    fold(sum16(0, data))
}

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_be_bytes());
}

fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_be_bytes());
}

/// The IPv4 identification field: derived from what identifies the datagram,
/// so the same packet shows the same ID at every capture point.
fn ip_id(p: &Packet) -> u16 {
    let v: u64 = match p.payload {
        Payload::Echo { seq, ident, .. } => ((ident as u64) << 16) | seq as u64,
        Payload::Tcp(h) => (h.seq ^ h.ack.rotate_left(7) ^ h.tsval.rotate_left(13)) as u64,
        _ => p.seq,
    };
    (v ^ (v >> 16) ^ (v >> 32) ^ (v >> 48)) as u16
}

/// The TCP header the frame shows for a packet of protocol TCP.
fn tcp_header_of(p: &Packet) -> TcpHeader {
    match p.payload {
        Payload::Tcp(h) => h,
        Payload::Reset { .. } => TcpHeader {
            flags: tcp_flags::RST,
            ..TcpHeader::default()
        },
        // iperf3's control connection: data segments with timestamps, as Linux sends them
        _ => TcpHeader {
            flags: tcp_flags::PSH | tcp_flags::ACK,
            window: 502,
            ts: true,
            tsval: (p.sent_at.as_nanos() / 1_000_000) as u32,
            ..TcpHeader::default()
        },
    }
}

/// The AccECN option's bytes as `tcp_options_write` lays them out after
/// the timestamps: whole words for 2 or 3 fields (3: a NOP pads the
/// twelfth byte); with 0 or 1 field the last 2 bytes (kind and length,
/// or EE1B's low byte and a NOP) are left over for the next word, where
/// they replace NOPs. Returns the leftover pair.
fn accecn_option(h: &TcpHeader, out: &mut Vec<u8>) -> Option<[u8; 2]> {
    let o = &h.accecn;
    if !o.present() {
        return None;
    }
    let n = o.n_fields() as usize;
    let len = o.wire_len();
    let f = |i: usize| (o.fields[i] & 0xff_ffff).to_be_bytes();
    match n {
        0 => Some([o.kind, len]),
        1 => {
            let a = f(0);
            out.extend_from_slice(&[o.kind, len, a[1], a[2]]);
            Some([a[3], NOP])
        }
        _ => {
            out.extend_from_slice(&[o.kind, len]);
            for i in 0..n {
                out.extend_from_slice(&f(i)[1..]);
            }
            if n == 3 {
                out.push(NOP);
            }
            None
        }
    }
}

/// `TCPOPT_NOP`.
const NOP: u8 = 1;

/// TCP options in Linux's order and padding (`tcp_options_write`).
fn tcp_options(h: &TcpHeader, out: &mut Vec<u8>) {
    if h.flags & tcp_flags::SYN != 0 {
        out.extend_from_slice(&[2, 4]);
        put16(out, h.mss);
        if h.ts {
            if h.sack_ok {
                out.extend_from_slice(&[4, 2, 8, 10]);
            } else {
                out.extend_from_slice(&[1, 1, 8, 10]);
            }
            put32(out, h.tsval);
            put32(out, h.tsecr);
        }
        let mut left = accecn_option(h, out);
        if h.sack_ok && !h.ts {
            let [a, b] = left.take().unwrap_or([NOP, NOP]);
            out.extend_from_slice(&[a, b, 4, 2]);
        }
        if let Some(ws) = h.wscale {
            // a single leftover byte may take the NOP before window scale
            let first = match left {
                Some([a, NOP]) => {
                    left = None;
                    a
                }
                _ => NOP,
            };
            out.extend_from_slice(&[first, 3, 3, ws]);
        }
        if let Some([a, b]) = left {
            out.extend_from_slice(&[a, b, NOP, NOP]);
        }
        return;
    }
    if h.ts {
        out.extend_from_slice(&[1, 1, 8, 10]);
        put32(out, h.tsval);
        put32(out, h.tsecr);
    }
    let left = accecn_option(h, out);
    if h.sack_len > 0 {
        let n = h.sack_len.min(3) as usize;
        let [a, b] = left.unwrap_or([NOP, NOP]);
        out.extend_from_slice(&[a, b, 5, 2 + 8 * n as u8]);
        for &(s, e) in &h.sack[..n] {
            put32(out, s);
            put32(out, e);
        }
    } else if let Some([a, b]) = left {
        out.extend_from_slice(&[a, b, NOP, NOP]);
    }
}

/// Pseudo-header sum for a TCP/UDP checksum.
fn pseudo(p: &Packet, proto: u8, len: u32) -> u32 {
    let mut acc = sum16(0, &p.src.0.to_be_bytes());
    acc = sum16(acc, &p.dst.0.to_be_bytes());
    acc + proto as u32 + len
}

/// Write the frame's headers into `buf` (cleared first): Ethernet, then for
/// IP packets the IP and transport headers, for ARP the ARP body. Returns the
/// frame's original length (`orig_len`: 14 + IP total length; 42 for ARP).
/// Bytes past the headers are payload zeros the caller appends as needed.
pub fn write_headers(p: &Packet, src_mac: Mac, dst_mac: Mac, buf: &mut Vec<u8>) -> usize {
    buf.clear();
    buf.extend_from_slice(&dst_mac);
    buf.extend_from_slice(&src_mac);
    if p.proto == Proto::Arp {
        let reply = matches!(p.payload, Payload::Arp { reply: true });
        put16(buf, 0x0806);
        put16(buf, 1); // Ethernet
        put16(buf, 0x0800);
        buf.extend_from_slice(&[6, 4]);
        put16(buf, if reply { 2 } else { 1 });
        buf.extend_from_slice(&src_mac);
        put32(buf, p.src.0);
        buf.extend_from_slice(&if reply { dst_mac } else { [0; 6] });
        put32(buf, p.dst.0);
        return buf.len();
    }
    put16(buf, 0x0800);
    // an aggregate is one frame: one header and all the payload
    let ip_len = p.skb_len().saturating_sub(ETH_HEADER).max(20);
    let proto_num: u8 = match p.proto {
        Proto::Icmp => 1,
        Proto::Tcp => 6,
        Proto::Udp => 17,
        Proto::Arp => unreachable!("handled above"),
    };
    let ip_start = buf.len();
    buf.extend_from_slice(&[0x45, p.tos]);
    put16(buf, ip_len as u16);
    put16(buf, ip_id(p));
    put16(buf, 0x4000); // DF, fragment offset 0
    buf.extend_from_slice(&[p.ttl, proto_num, 0, 0]);
    put32(buf, p.src.0);
    put32(buf, p.dst.0);
    let ip_sum = checksum(&buf[ip_start..ip_start + 20]);
    buf[ip_start + 10..ip_start + 12].copy_from_slice(&ip_sum.to_be_bytes());
    let l4 = buf.len();
    let l4_len = ip_len - 20;
    let sum_at = match p.proto {
        Proto::Tcp => {
            let h = tcp_header_of(p);
            let hl = h.header_len().min(60) as usize;
            put16(buf, p.src_port);
            put16(buf, p.dst_port);
            put32(buf, h.seq);
            put32(buf, h.ack);
            // data offset, then AE (RFC 9768) in the former NS bit
            buf.extend_from_slice(&[((hl / 4) as u8) << 4 | h.ae as u8, h.flags]);
            put16(buf, h.window);
            buf.extend_from_slice(&[0, 0, 0, 0]);
            tcp_options(&h, buf);
            // header_len() is authoritative for the data offset: pad with NOPs
            buf.resize(l4 + hl.max(buf.len() - l4), 1);
            buf.truncate(l4 + hl);
            l4 + 16
        }
        Proto::Udp => {
            put16(buf, p.src_port);
            put16(buf, p.dst_port);
            put16(buf, l4_len as u16);
            put16(buf, 0);
            l4 + 6
        }
        Proto::Icmp => {
            let (ty, ident, seq) = match p.payload {
                Payload::Echo { reply, ident, seq } => (if reply { 0 } else { 8 }, ident, seq),
                _ => (8, 0, 0),
            };
            buf.extend_from_slice(&[ty, 0, 0, 0]);
            put16(buf, ident);
            put16(buf, seq);
            l4 + 2
        }
        Proto::Arp => unreachable!("handled above"),
    };
    // The payload is zeros: it adds nothing to the sum.
    let mut sum = match p.proto {
        Proto::Icmp => checksum(&buf[l4..]),
        _ => fold(sum16(pseudo(p, proto_num, l4_len), &buf[l4..])),
    };
    if p.proto == Proto::Udp && sum == 0 {
        sum = 0xffff; // RFC 768: a computed zero is sent as all ones
    }
    if p.corrupt {
        sum ^= 1;
    }
    buf[sum_at..sum_at + 2].copy_from_slice(&sum.to_be_bytes());
    (ETH_HEADER + ip_len) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::tests::frame;
    use crate::packet::{Ipv4, TCP_HEADER_TS};

    const A: Mac = [2, 0, 0, 0, 0, 1];
    const B: Mac = [2, 0, 0, 0, 0, 2];

    /// Sum of 16-bit words by hand, for cross-checking `checksum`.
    fn verify(data: &[u8]) -> bool {
        checksum(data) == 0
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 §3: the sum of 00 01 f2 03 f4 f5 f6 f7 is ddf2 (before complement)
        assert_eq!(checksum(&[0, 1, 0xf2, 3, 0xf4, 0xf5, 0xf6, 0xf7]), !0xddf2);
    }

    #[test]
    fn udp_frame_bytes_and_checksums() {
        let mut p = frame(1490); // 1448-byte iperf3 datagram
        p.tos = 0x32;
        p.seq = 7;
        let mut b = Vec::new();
        let orig = write_headers(&p, A, B, &mut b);
        assert_eq!(orig, 1490);
        assert_eq!(b.len(), 14 + 20 + 8);
        assert_eq!(&b[0..6], &B);
        assert_eq!(&b[6..12], &A);
        assert_eq!(&b[12..14], &[0x08, 0x00]);
        let ip = &b[14..34];
        assert_eq!(ip[0], 0x45);
        assert_eq!(ip[1], 0x32, "TOS byte incl. ECN bits");
        assert_eq!(u16::from_be_bytes([ip[2], ip[3]]), 1476);
        assert_eq!(ip[8], 64);
        assert_eq!(ip[9], 17);
        assert_eq!(&ip[12..16], &[10, 0, 0, 1]);
        // IP header checksum by hand: words 4500 05c4 id 4000 4011 0000 0a00 0001 0a00 0002
        let id = u16::from_be_bytes([ip[4], ip[5]]) as u32;
        let mut s: u32 = 0x4532 + 0x05c4 + id + 0x4000 + 0x4011 + 0x0a00 + 0x0001 + 0x0a00 + 0x0002;
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        assert_eq!(u16::from_be_bytes([ip[10], ip[11]]), !(s as u16));
        assert!(verify(ip));
        let udp = &b[34..42];
        assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), 40000);
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 5201);
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]), 1456);
        // UDP checksum by hand: pseudo header (src, dst, 0x0011, length) + header, zero data
        let mut s: u32 = 0x0a00 + 0x0001 + 0x0a00 + 0x0002 + 0x0011 + 1456;
        s += 40000 + 5201 + 1456;
        s = (s & 0xffff) + (s >> 16);
        s = (s & 0xffff) + (s >> 16);
        assert_eq!(u16::from_be_bytes([udp[6], udp[7]]), !(s as u16));
    }

    /// `tcp_parse_options` for the AccECN option: walk the option bytes
    /// (NOP 1, EOL 0, kind/len otherwise) and read kind 172/174's fields.
    fn parse_accecn(opts: &[u8]) -> crate::packet::AccEcnOption {
        let mut i = 0;
        while i < opts.len() {
            match opts[i] {
                0 => break,
                1 => i += 1,
                kind => {
                    let len = opts[i + 1] as usize;
                    if kind == 172 || kind == 174 {
                        let n = (len - 2) / 3;
                        let mut fields = [0; 3];
                        for (k, f) in fields.iter_mut().enumerate().take(n) {
                            let b = &opts[i + 2 + 3 * k..i + 5 + 3 * k];
                            *f = u32::from_be_bytes([0, b[0], b[1], b[2]]);
                        }
                        return crate::packet::AccEcnOption {
                            kind,
                            fields_len: n as u8,
                            fields,
                        };
                    }
                    i += len;
                }
            }
        }
        crate::packet::AccEcnOption::NONE
    }

    /// The AccECN option byte for byte as Linux writes it after the
    /// timestamps, alone and ahead of SACK blocks, and the AE bit.
    #[test]
    fn accecn_option_and_ae_bytes() {
        use crate::packet::{AccEcnOption, TCPOPT_ACCECN1};
        let mut p = frame(0);
        p.proto = Proto::Tcp;
        let opt = |n: u8| AccEcnOption {
            kind: TCPOPT_ACCECN1,
            fields_len: n,
            fields: [0x01_0203, 0x04_0506, 0x07_0809],
        };
        let mut h = TcpHeader {
            flags: tcp_flags::ACK | tcp_flags::CWR,
            ae: true,
            ts: true,
            accecn: opt(3),
            ..TcpHeader::default()
        };
        let bytes = |h: &TcpHeader, p: &mut Packet| {
            p.payload = Payload::Tcp(*h);
            p.len = 14 + 20 + h.header_len();
            let mut b = Vec::new();
            write_headers(p, A, B, &mut b);
            b[34..].to_vec()
        };
        let t = bytes(&h, &mut p);
        // 44-byte header: offset 11 words, AE in the low bit; ACE = 110
        assert_eq!(t[12], (11 << 4) | 1);
        assert_eq!(t[13], tcp_flags::ACK | tcp_flags::CWR);
        assert_eq!(h.ace(), 0b110);
        assert_eq!(
            &t[32..44],
            &[174, 11, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1],
            "EE1B ECEB EE0B then a NOP"
        );
        assert_eq!(parse_accecn(&t[20..44]), opt(3));
        // 2 fields: 8 bytes, no padding
        h.accecn = opt(2);
        let t = bytes(&h, &mut p);
        assert_eq!(t.len(), 20 + 12 + 8);
        assert_eq!(&t[32..40], &[174, 8, 1, 2, 3, 4, 5, 6]);
        assert_eq!(parse_accecn(&t[20..]).fields[..2], [0x01_0203, 0x04_0506]);
        // 1 field: 5 bytes, its last byte and a NOP pad the next word
        h.accecn = opt(1);
        let t = bytes(&h, &mut p);
        assert_eq!(&t[32..40], &[174, 5, 1, 2, 3, 1, 1, 1]);
        // ... or go in front of a SACK block instead of its NOP,NOP
        h.sack = [(100, 200), (0, 0), (0, 0)];
        h.sack_len = 1;
        let t = bytes(&h, &mut p);
        assert_eq!(h.header_len(), 20 + 12 + 4 + 12);
        assert_eq!(&t[32..40], &[174, 5, 1, 2, 3, 1, 5, 10]);
        assert_eq!(parse_accecn(&t[20..]).fields[0], 0x01_0203);
        // 0 fields before SACK: kind and length take the NOP,NOP
        h.accecn = opt(0);
        let t = bytes(&h, &mut p);
        assert_eq!(h.header_len(), 20 + 12 + 12);
        assert_eq!(&t[32..36], &[174, 2, 5, 10]);
        assert_eq!(parse_accecn(&t[20..]).fields_len, 0);
        // SYN-ACK: MSS, TS (+SACK-permitted), AccECN 3 fields, NOP+WS
        let synack = TcpHeader {
            flags: tcp_flags::SYN | tcp_flags::ACK | tcp_flags::CWR,
            ts: true,
            sack_ok: true,
            mss: 1460,
            wscale: Some(7),
            accecn: AccEcnOption {
                fields: [1, 0, 1],
                ..opt(3)
            },
            ..TcpHeader::default()
        };
        let t = bytes(&synack, &mut p);
        assert_eq!(t.len(), 52);
        assert_eq!(
            &t[36..52],
            &[174, 11, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 1, 3, 3, 7]
        );
    }

    #[test]
    fn tcp_syn_and_sack_options_as_linux_lays_them_out() {
        let mut p = frame(0);
        p.proto = Proto::Tcp;
        let syn = TcpHeader {
            seq: 1000,
            flags: tcp_flags::SYN,
            window: 64240,
            ts: true,
            tsval: 77,
            mss: 1460,
            wscale: Some(7),
            sack_ok: true,
            ..TcpHeader::default()
        };
        p.payload = Payload::Tcp(syn);
        p.len = 14 + 20 + syn.header_len();
        let mut b = Vec::new();
        write_headers(&p, A, B, &mut b);
        let t = &b[34..];
        assert_eq!(t.len(), 40);
        assert_eq!(t[12] >> 4, 10, "data offset 40 bytes");
        assert_eq!(t[13], tcp_flags::SYN);
        assert_eq!(
            &t[20..],
            &[2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 77, 0, 0, 0, 0, 1, 3, 3, 7]
        );
        let ack = TcpHeader {
            seq: 5,
            ack: 9,
            flags: tcp_flags::ACK,
            window: 501,
            ts: true,
            tsval: 1,
            tsecr: 2,
            sack: [(100, 200), (300, 400), (0, 0)],
            sack_len: 2,
            ..TcpHeader::default()
        };
        p.payload = Payload::Tcp(ack);
        p.len = 14 + 20 + ack.header_len();
        write_headers(&p, A, B, &mut b);
        let t = &b[34..];
        assert_eq!(t.len(), 20 + 12 + 20);
        assert_eq!(&t[20..24], &[1, 1, 8, 10]);
        assert_eq!(&t[32..36], &[1, 1, 5, 18]);
        assert_eq!(&t[36..40], &100u32.to_be_bytes());
        // the checksum verifies over pseudo header + segment (payload zeros add nothing)
        let mut s = pseudo(&p, 6, t.len() as u32);
        s = sum16(s, t);
        assert_eq!(fold(s), 0);
    }

    #[test]
    fn tcp_data_segment_has_timestamp_header_and_zero_payload() {
        let mut p = frame(1514);
        p.proto = Proto::Tcp;
        p.payload = Payload::Tcp(TcpHeader {
            flags: tcp_flags::ACK,
            ts: true,
            ..TcpHeader::default()
        });
        let mut b = Vec::new();
        assert_eq!(write_headers(&p, A, B, &mut b), 1514);
        assert_eq!(b.len() as u32, 14 + 20 + TCP_HEADER_TS);
    }

    #[test]
    fn icmp_echo_and_arp() {
        let mut p = frame(98);
        p.proto = Proto::Icmp;
        p.payload = Payload::Echo {
            reply: false,
            ident: 0x1234,
            seq: 3,
        };
        let mut b = Vec::new();
        write_headers(&p, A, B, &mut b);
        let icmp = &b[34..];
        assert_eq!(icmp[0], 8);
        assert_eq!(&icmp[4..8], &[0x12, 0x34, 0, 3]);
        // by hand: 0800 + 1234 + 0003, complemented
        assert_eq!(
            u16::from_be_bytes([icmp[2], icmp[3]]),
            !(0x0800u16 + 0x1234 + 3)
        );

        let mut a = frame(42);
        a.proto = Proto::Arp;
        a.payload = Payload::Arp { reply: false };
        a.dst = Ipv4::parse("10.0.0.9").unwrap();
        assert_eq!(write_headers(&a, A, BROADCAST, &mut b), 42);
        assert_eq!(b.len(), 42);
        assert_eq!(&b[12..14], &[0x08, 0x06]);
        assert_eq!(&b[20..22], &[0, 1], "request");
        assert_eq!(&b[38..42], &[10, 0, 0, 9]);
    }

    #[test]
    fn corrupt_packets_fail_their_checksum() {
        let mut p = frame(100);
        p.corrupt = true;
        let mut b = Vec::new();
        write_headers(&p, A, B, &mut b);
        let mut s = pseudo(&p, 17, 66);
        s = sum16(s, &b[34..]);
        assert_ne!(fold(s), 0);
    }
}
