//! What `ss` reads of a node's sockets (the inet_diag dump of
//! net/ipv4/inet_diag.c and tcp_diag.c: state, addresses, queues, timer,
//! `struct tcp_info` from net/ipv4/tcp.c `tcp_get_info`, the congestion
//! control's name and `get_info` block), as JSON for
//! python/bufferlab/formats/ss.py. Listing order: listeners and UDP sockets
//! in registration order, then TCP connections in slot order.

use super::{PortKind, SockIdent, Sockets, TcpSocket};
use crate::packet::Ipv4;
use crate::tcp::cc::CcInfo;
use crate::tcp::endpoint::{SkMemInfo, TcpInfo, TcpState};
use crate::time::SimTime;
use serde_json::{json, Value};

/// What a listener's accepted connections would get: the congestion
/// control's name and the initial window (`ss -i` of a listener shows them),
/// and the listener's own buffers (`ss -m`).
pub struct ListenerTcp {
    pub congestion: String,
    pub init_cwnd: u32,
    /// `net.core.somaxconn`: 128 before Linux 5.4, 4096 since
    pub somaxconn: u32,
    pub sndbuf: u32,
    pub rcvbuf: u32,
}

impl ListenerTcp {
    pub fn of(cfg: &crate::tcp::endpoint::TcpConfig) -> ListenerTcp {
        let buffers = cfg.socket_buffers();
        ListenerTcp {
            congestion: cfg.congestion.clone(),
            init_cwnd: cfg.init_cwnd,
            sndbuf: buffers.sndbuf,
            rcvbuf: buffers.rcvbuf,
            somaxconn: match cfg.profile {
                crate::tcp::cc::CcProfile::Lab2019 => 128,
                crate::tcp::cc::CcProfile::Modern => 4096,
            },
        }
    }
}

/// `sstate_name` of misc/ss.c.
fn state_name(s: TcpState) -> &'static str {
    match s {
        TcpState::Established => "ESTAB",
        TcpState::SynSent => "SYN-SENT",
        TcpState::SynReceived => "SYN-RECV",
        TcpState::FinWait1 => "FIN-WAIT-1",
        TcpState::FinWait2 => "FIN-WAIT-2",
        TcpState::TimeWait => "TIME-WAIT",
        TcpState::Closed => "UNCONN",
        TcpState::CloseWait => "CLOSE-WAIT",
        TcpState::LastAck => "LAST-ACK",
        TcpState::Listen => "LISTEN",
        TcpState::Closing => "CLOSING",
    }
}

/// `union tcp_cc_info` as `ss -i` prints it.
fn cc_info_json(info: Option<CcInfo>) -> Value {
    match info {
        Some(CcInfo::Dctcp {
            enabled,
            ce_state,
            alpha,
            ab_ecn,
            ab_tot,
        }) => json!({"dctcp": {"enabled": enabled, "ce_state": ce_state, "alpha": alpha,
                               "ab_ecn": ab_ecn, "ab_tot": ab_tot}}),
        Some(CcInfo::Vegas {
            enabled,
            rttcnt,
            rtt,
            minrtt,
        }) => {
            json!({"vegas": {"enabled": enabled, "rttcnt": rttcnt, "rtt": rtt, "minrtt": minrtt}})
        }
        Some(CcInfo::Bbr {
            bw,
            min_rtt,
            pacing_gain,
            cwnd_gain,
        }) => json!({"bbr": {"bw": bw, "min_rtt": min_rtt, "pacing_gain": pacing_gain,
                             "cwnd_gain": cwnd_gain}}),
        // tcp_prague.c reports under its own attribute (INET_DIAG_PRAGUEINFO,
        // L4STeam's), which upstream misc/ss.c does not decode: nothing shown
        Some(CcInfo::Prague { .. }) | None => Value::Null,
    }
}

/// The `struct tcp_info` fields `ss` prints, by their `tcpi_` names; a
/// rate of `~0` (none) is null.
fn tcp_info_json(i: &TcpInfo) -> Value {
    let rate = |r: u64| -> Value { (r != u64::MAX).then_some(r).into() };
    let fields: [(&str, Value); 50] = [
        ("ca_state", i.ca_state.into()),
        ("retransmits", i.retransmits.into()),
        ("probes", i.probes.into()),
        ("backoff", i.backoff.into()),
        ("options", i.options.into()),
        ("snd_wscale", i.snd_wscale.into()),
        ("rcv_wscale", i.rcv_wscale.into()),
        (
            "delivery_rate_app_limited",
            i.delivery_rate_app_limited.into(),
        ),
        ("rto", i.rto.into()),
        ("ato", i.ato.into()),
        ("snd_mss", i.snd_mss.into()),
        ("rcv_mss", i.rcv_mss.into()),
        ("unacked", i.unacked.into()),
        ("sacked", i.sacked.into()),
        ("lost", i.lost.into()),
        ("retrans", i.retrans.into()),
        ("last_data_sent", i.last_data_sent_ms.into()),
        ("last_data_recv", i.last_data_recv_ms.into()),
        ("last_ack_recv", i.last_ack_recv_ms.into()),
        ("pmtu", i.pmtu.into()),
        ("rcv_ssthresh", i.rcv_ssthresh.into()),
        ("rtt", i.rtt.into()),
        ("rttvar", i.rttvar.into()),
        ("snd_ssthresh", i.snd_ssthresh.into()),
        ("snd_cwnd", i.snd_cwnd.into()),
        ("advmss", i.advmss.into()),
        ("reordering", i.reordering.into()),
        ("rcv_rtt", i.rcv_rtt.into()),
        ("rcv_space", i.rcv_space.into()),
        ("total_retrans", i.total_retrans.into()),
        ("pacing_rate", rate(i.pacing_rate)),
        ("max_pacing_rate", rate(i.max_pacing_rate)),
        ("bytes_acked", i.bytes_acked.into()),
        ("bytes_received", i.bytes_received.into()),
        ("segs_out", i.segs_out.into()),
        ("segs_in", i.segs_in.into()),
        ("notsent_bytes", i.notsent_bytes.into()),
        ("min_rtt", i.min_rtt.into()),
        ("data_segs_in", i.data_segs_in.into()),
        ("data_segs_out", i.data_segs_out.into()),
        ("delivery_rate", i.delivery_rate.into()),
        ("delivered", i.delivered.into()),
        ("delivered_ce", i.delivered_ce.into()),
        ("bytes_sent", i.bytes_sent.into()),
        ("bytes_retrans", i.bytes_retrans.into()),
        ("dsack_dups", i.dsack_dups.into()),
        ("reord_seen", i.reord_seen.into()),
        ("rcv_ooopack", i.rcv_ooopack.into()),
        ("snd_wnd", i.snd_wnd.into()),
        ("rcv_wnd", i.rcv_wnd.into()),
    ];
    Value::Object(
        fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// `sk_get_meminfo` as `ss -m` reads it, in `SK_MEMINFO_*` order.
fn meminfo_json(m: &SkMemInfo) -> Value {
    json!({"r": m.rmem_alloc, "rb": m.rcvbuf, "t": m.wmem_alloc, "tb": m.sndbuf,
           "f": m.forward_alloc, "w": m.wmem_queued, "o": 0, "bl": 0, "d": m.drops})
}

/// A full socket's `ss -e` identity: its inode (0 once its application closed
/// it: `sock_orphan`), cookie and `sk_shutdown` bits (1 receive, 2 send).
fn full_socket_ident(ident: SockIdent, orphan: bool, shutdown: u8) -> Value {
    json!({"ino": if orphan { 0 } else { ident }, "cookie": ident, "shutdown": shutdown})
}

/// `ss -e` and `-m` of a connection. The applications close (never shut
/// down) their sockets, so a FIN sent means an orphan with both directions
/// shut. A request socket (SYN-RECV) and a timewait socket (TIME-WAIT, and
/// FIN-WAIT-2 once orphaned: `tcp_time_wait(sk, TCP_FIN_WAIT2, …)` when
/// `tcp_fin_timeout` is at most TCP_TIMEWAIT_LEN, the default) are not full
/// sockets: no inode, shutdown bits nor memory (inet_diag.c
/// `inet_req_diag_fill`, `inet_twsk_diag_fill`); their cookie is the
/// socket's.
fn connection_ident_and_mem(s: &TcpSocket) -> (Value, Value) {
    let ep = &s.conn.ep;
    let minimal = json!({"ino": 0, "cookie": s.ident, "shutdown": null});
    match ep.state() {
        TcpState::SynReceived | TcpState::TimeWait | TcpState::FinWait2 => (minimal, Value::Null),
        state => {
            let (orphan, shutdown) = match state {
                TcpState::FinWait1 | TcpState::Closing | TcpState::LastAck => (true, 3),
                TcpState::CloseWait => (false, 1),
                _ => (false, 0),
            };
            (
                full_socket_ident(s.ident, orphan, shutdown),
                meminfo_json(&ep.meminfo()),
            )
        }
    }
}

fn connection_json(s: &TcpSocket, addr: Ipv4, now: SimTime) -> Value {
    let ep = &s.conn.ep;
    let info = ep.info();
    let (ident, mem) = connection_ident_and_mem(s);
    let (recv_q, send_q) = ep.diag_queues();
    let timer = ep.diag_timer(now).map(|(name, expires_ms, retrans)| {
        json!({"name": name, "expires_ms": expires_ms, "retrans": retrans})
    });
    json!({
        "proto": "tcp",
        "state": state_name(ep.state()),
        "v6": s.v6,
        "local": addr.to_string(), "lport": s.conn.local_port,
        "peer": s.conn.remote.0.to_string(), "pport": s.conn.remote.1,
        "recv_q": recv_q, "send_q": send_q,
        "owner": s.owner,
        "timer": timer,
        "cc": ep.cc().ops_name(),
        "cc_info": cc_info_json(info.cc_info),
        "info": tcp_info_json(&info),
        "ident": ident,
        "mem": mem,
    })
}

impl Sockets {
    /// Every socket `ss -a` would list on a node whose address is `addr`;
    /// `listener` gives a listening application's TCP settings.
    pub fn diag(
        &self,
        addr: Ipv4,
        now: SimTime,
        listener: impl Fn(u32) -> Option<ListenerTcp>,
    ) -> Vec<Value> {
        let mut out = Vec::new();
        for (v, ident) in self.views() {
            let any = if v.v6 { "::" } else { "0.0.0.0" };
            let mut entry = json!({
                "proto": "udp", "state": "UNCONN", "v6": v.v6,
                "local": any, "lport": v.port, "peer": any, "pport": 0,
                "recv_q": 0, "send_q": 0, "owner": v.owner,
                "timer": null, "cc": null, "cc_info": null, "info": null,
                "ident": full_socket_ident(ident, false, 0), "mem": null,
            });
            match v.kind {
                PortKind::Listen { backlog } => {
                    // tcp_get_info of a listener: cwnd, reordering, the accept
                    // queue (unacked) and its limit (sacked)
                    let tcp = listener(v.owner);
                    let backlog = backlog.min(tcp.as_ref().map_or(4096, |t| t.somaxconn));
                    entry["proto"] = json!("tcp");
                    entry["state"] = json!("LISTEN");
                    entry["send_q"] = json!(backlog);
                    entry["cc"] = json!(tcp.as_ref().map(|t| t.congestion.clone()));
                    entry["mem"] = tcp.as_ref().map_or(Value::Null, |t| {
                        meminfo_json(&SkMemInfo {
                            rcvbuf: t.rcvbuf,
                            sndbuf: t.sndbuf,
                            ..SkMemInfo::default()
                        })
                    });
                    entry["info"] = json!({
                        "snd_cwnd": tcp.map_or(0, |t| t.init_cwnd), "reordering": 3,
                        "unacked": 0, "sacked": backlog,
                    });
                }
                PortKind::Udp {
                    peer: Some((ip, port)),
                } => {
                    entry["state"] = json!("ESTAB");
                    entry["local"] = json!(addr.to_string());
                    entry["peer"] = json!(ip.to_string());
                    entry["pport"] = json!(port);
                }
                PortKind::Udp { peer: None } => {}
            }
            out.push(entry);
        }
        out.extend(self.tcp_sockets().map(|s| connection_json(s, addr, now)));
        out
    }
}
