//! Capture filters: the subset of pcap-filter(7) that python/bufferlab's
//! compiler accepts, as an expression tree evaluated per packet. Semantics as
//! in pcap-filter(7): `host` also matches ARP sender/target addresses; `port`
//! matches TCP and UDP; `proto[off:size]` reads the frame's bytes relative to
//! that protocol's header and is false when the packet is of another protocol
//! or the bytes lie beyond the frame.

use super::frame::IP_OFF;
use crate::packet::{Ipv4, Packet, Proto};
use serde::Deserialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    Src,
    Dst,
    Any,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    Ether,
    Ip,
    Arp,
    Tcp,
    Udp,
    Icmp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub enum Cmp {
    #[serde(rename = "==")]
    Eq,
    #[serde(rename = "!=")]
    Ne,
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Cmp {
    fn eval(self, a: u32, b: u32) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
pub enum Filter {
    #[serde(deserialize_with = "crate::closed::no_fields")]
    True,
    And {
        args: Vec<Filter>,
    },
    Or {
        args: Vec<Filter>,
    },
    Not {
        arg: Box<Filter>,
    },
    /// `ip`, `arp`, `tcp`, `udp`, `icmp`
    Proto {
        layer: Layer,
    },
    Host {
        dir: Dir,
        addr: Ipv4,
    },
    Net {
        dir: Dir,
        addr: Ipv4,
        prefix: u8,
    },
    /// `[tcp|udp] [src|dst] port N`
    Port {
        dir: Dir,
        layer: Option<Layer>,
        port: u16,
    },
    /// `len <= N` (`less N`), `len >= N` (`greater N`): the frame's length
    Len {
        cmp: Cmp,
        value: u32,
    },
    /// `layer[offset:size] [& mask] cmp value`
    Byte {
        layer: Layer,
        offset: u32,
        size: u8,
        mask: Option<u32>,
        cmp: Cmp,
        value: u32,
    },
}

fn layer_matches(layer: Layer, p: &Packet) -> bool {
    match layer {
        Layer::Ether => true,
        Layer::Ip => p.proto != Proto::Arp,
        Layer::Arp => p.proto == Proto::Arp,
        Layer::Tcp => p.proto == Proto::Tcp,
        Layer::Udp => p.proto == Proto::Udp,
        Layer::Icmp => p.proto == Proto::Icmp,
    }
}

fn dir_match(dir: Dir, src: bool, dst: bool) -> bool {
    match dir {
        Dir::Src => src,
        Dir::Dst => dst,
        Dir::Any => src || dst,
    }
}

impl Filter {
    /// Does the packet match? `frame` holds its headers (payload bytes past
    /// them are zeros up to `orig_len`).
    pub fn matches(&self, p: &Packet, frame: &[u8], orig_len: usize) -> bool {
        match self {
            Filter::True => true,
            Filter::And { args } => args.iter().all(|f| f.matches(p, frame, orig_len)),
            Filter::Or { args } => args.iter().any(|f| f.matches(p, frame, orig_len)),
            Filter::Not { arg } => !arg.matches(p, frame, orig_len),
            Filter::Proto { layer } => layer_matches(*layer, p),
            Filter::Host { dir, addr } => dir_match(*dir, p.src == *addr, p.dst == *addr),
            Filter::Net { dir, addr, prefix } => {
                let mask = if *prefix == 0 {
                    0
                } else {
                    u32::MAX << (32 - *prefix as u32)
                };
                let m = |a: Ipv4| a.0 & mask == addr.0 & mask;
                dir_match(*dir, m(p.src), m(p.dst))
            }
            Filter::Port { dir, layer, port } => {
                let l4 = matches!(p.proto, Proto::Tcp | Proto::Udp);
                l4 && layer.is_none_or(|l| layer_matches(l, p))
                    && dir_match(*dir, p.src_port == *port, p.dst_port == *port)
            }
            Filter::Len { cmp, value } => cmp.eval(orig_len as u32, *value),
            Filter::Byte {
                layer,
                offset,
                size,
                mask,
                cmp,
                value,
            } => {
                if !layer_matches(*layer, p) {
                    return false;
                }
                let base = match layer {
                    Layer::Ether => 0,
                    Layer::Ip | Layer::Arp => IP_OFF,
                    // IHL is 5: the simulator sends no IP options
                    Layer::Tcp | Layer::Udp | Layer::Icmp => IP_OFF + 20,
                };
                let start = base + *offset as usize;
                let end = start + *size as usize;
                if end > orig_len {
                    return false;
                }
                let mut v: u32 = 0;
                for i in start..end {
                    v = (v << 8) | frame.get(i).copied().unwrap_or(0) as u32;
                }
                cmp.eval(v & mask.unwrap_or(u32::MAX), *value)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::frame::write_headers;
    use super::*;
    use crate::packet::tests::frame;

    fn f(json: &str) -> Filter {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn primitives_and_combinators() {
        let mut p = frame(1490);
        p.tos = 0x32;
        let mut b = Vec::new();
        let n = write_headers(&p, [0; 6], [1; 6], &mut b);
        let m = |s: &str| f(s).matches(&p, &b, n);
        assert!(m(r#"{"op":"proto","layer":"udp"}"#));
        assert!(!m(r#"{"op":"proto","layer":"tcp"}"#));
        assert!(m(r#"{"op":"host","dir":"src","addr":"10.0.0.1"}"#));
        assert!(!m(r#"{"op":"host","dir":"dst","addr":"10.0.0.1"}"#));
        assert!(m(
            r#"{"op":"net","dir":"any","addr":"10.0.0.0","prefix":24}"#
        ));
        assert!(m(r#"{"op":"port","dir":"dst","layer":"udp","port":5201}"#));
        assert!(!m(r#"{"op":"port","dir":"any","layer":"tcp","port":5201}"#));
        assert!(m(
            r#"{"op":"byte","layer":"ip","offset":1,"size":1,"mask":null,"cmp":"==","value":50}"#
        ));
        assert!(m(
            r#"{"op":"byte","layer":"ip","offset":1,"size":1,"mask":252,"cmp":"==","value":48}"#
        ));
        assert!(m(
            r#"{"op":"byte","layer":"ip","offset":2,"size":2,"mask":null,"cmp":"==","value":1476}"#
        ));
        assert!(
            !m(
                r#"{"op":"byte","layer":"tcp","offset":13,"size":1,"mask":null,"cmp":"==","value":0}"#
            ),
            "tcp[] is false on UDP"
        );
        assert!(
            m(
                r#"{"op":"byte","layer":"udp","offset":100,"size":1,"mask":null,"cmp":"==","value":0}"#
            ),
            "payload bytes read as zeros"
        );
        assert!(m(
            r#"{"op":"and","args":[{"op":"proto","layer":"ip"},{"op":"not","arg":{"op":"proto","layer":"arp"}}]}"#
        ));
        assert!(m(
            r#"{"op":"or","args":[{"op":"proto","layer":"icmp"},{"op":"len","cmp":">=","value":1000}]}"#
        ));
    }
}
