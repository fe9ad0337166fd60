//! The socket table: ports, connections by handle, release, counters.

use super::diag::ListenerTcp;
use super::*;
use crate::app::tcp::TcpSpec;
use crate::app::test_support::{control, established, exchange, Bench, MS};
use crate::tcp::endpoint::TcpConfig;
use crate::time::SimTime;
use serde_json::Value;

fn cfg() -> TcpConfig {
    TcpSpec::default().config(1, 0).unwrap()
}

/// A segment from host 1's port 5001 to host 0's `port`.
fn segment_to(bench: &Bench, port: u16) -> Packet {
    control((bench.addr(1), 5001), (bench.addr(0), port), 0, 0)
}

/// Host 0 opens a connection from `port` to host 1:5001 (SYN sent).
fn open(bench: &mut Bench, port: u16) -> SocketHandle {
    let dst = (bench.addr(1), 5001);
    let mut ctx = bench.ctx(0, SimTime::ZERO);
    let h = ctx.connect(cfg(), port, dst, ComponentRng::new(port as u64, "c"));
    ctx.flush(h, 0);
    h
}

fn sockets() -> Sockets {
    Sockets::new(ComponentRng::new(1, "sockets"))
}

#[test]
fn a_port_is_bound_once_per_protocol() {
    let mut s = sockets();
    s.bind(Proto::Udp, 5201, 1).unwrap();
    let err = s.bind(Proto::Udp, 5201, 2).unwrap_err();
    assert!(
        err.to_string().contains("udp port 5201 is already in use"),
        "{err}"
    );
    s.bind(Proto::Tcp, 5201, 2).unwrap();
    assert_eq!(
        (s.lookup(Proto::Udp, 5201), s.lookup(Proto::Tcp, 5201)),
        (Some(1), Some(2))
    );
    assert_eq!(s.lookup(Proto::Udp, 5202), None);
}

#[test]
fn ephemeral_ports_are_distinct_and_in_linux_range() {
    let mut s = sockets();
    let ports: Vec<u16> = (0..200)
        .map(|_| s.bind_ephemeral(Proto::Tcp, 1).unwrap())
        .collect();
    assert!(ports
        .iter()
        .all(|p| (EPHEMERAL_LOW..=EPHEMERAL_HIGH).contains(p)));
    let mut unique = ports.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), ports.len());
    let mut again = sockets();
    assert_eq!(
        again.bind_ephemeral(Proto::Tcp, 1).unwrap(),
        ports[0],
        "seeded"
    );
}

#[test]
fn a_full_ephemeral_range_is_an_error_not_a_hang() {
    let mut s = sockets();
    let range = (EPHEMERAL_HIGH - EPHEMERAL_LOW) as usize + 1;
    for _ in 0..range {
        s.bind_ephemeral(Proto::Tcp, 1).unwrap();
    }
    let err = s.bind_ephemeral(Proto::Tcp, 2).unwrap_err().to_string();
    assert!(err.contains("Cannot assign requested address"), "{err}");
    // another protocol's range is separate
    assert!(s.bind_ephemeral(Proto::Udp, 2).is_ok());
}

#[test]
fn bind_near_takes_the_next_free_port_and_wraps_to_the_low_end() {
    let mut s = sockets();
    s.bind(Proto::Udp, 100, 1).unwrap();
    s.bind(Proto::Udp, 101, 1).unwrap();
    assert_eq!(s.bind_near(Proto::Udp, 100, 2), 102);
    s.bind(Proto::Icmp, EPHEMERAL_HIGH, 1).unwrap();
    assert_eq!(s.bind_near(Proto::Icmp, EPHEMERAL_HIGH, 2), EPHEMERAL_LOW);
}

#[test]
fn unbind_all_releases_only_that_applications_ports() {
    let mut s = sockets();
    s.bind(Proto::Udp, 1, 7).unwrap();
    s.bind(Proto::Tcp, 2, 7).unwrap();
    s.bind(Proto::Tcp, 3, 8).unwrap();
    s.unbind_all(7);
    assert!(!s.is_bound(Proto::Udp, 1) && !s.is_bound(Proto::Tcp, 2));
    assert!(s.is_bound(Proto::Tcp, 3));
}

#[test]
fn a_connection_is_found_by_its_four_tuple_and_carries_its_owners_tag() {
    let mut bench = Bench::new(2);
    let a = open(&mut bench, 40_000);
    let b = open(&mut bench, 40_001);
    let socks = &mut bench.hosts[0].sockets;
    socks.set_tag(b, 7);
    assert_eq!(socks.tag(b), 7);
    assert_eq!(socks.tcp(a).local_port, 40_000);
    assert_eq!(socks.tcp_len(), 2);
    let (to_a, to_b) = (segment_to(&bench, 40_000), segment_to(&bench, 40_001));
    let stray = segment_to(&bench, 40_002);
    let socks = &mut bench.hosts[0].sockets;
    assert_eq!((socks.find(&to_a), socks.find(&to_b)), (Some(a), Some(b)));
    assert_eq!(socks.find(&stray), None);
    let socks = &mut bench.hosts[0].sockets;
    socks.remove_tcp(a);
    assert_eq!((socks.find(&to_a), socks.tcp_len()), (None, 1));
    // the freed slot is the next one handed out
    assert_eq!(open(&mut bench, 40_003), a);
    let owners: Vec<u32> = bench.hosts[0]
        .sockets
        .tcp_sockets()
        .map(|s| s.owner)
        .collect();
    assert_eq!(owners, vec![0, 0]);
}

#[test]
fn an_applications_end_releases_its_connections_and_keeps_their_state() {
    let mut bench = Bench::new(2);
    let (client, _) = established(&mut bench, &cfg());
    let socks = &mut bench.hosts[0].sockets;
    socks.bind(Proto::Tcp, 40_000, 0).unwrap();
    let live = socks.tcp_mib();
    socks.unbind_all(0);
    assert_eq!(socks.tcp_sockets().count(), 0, "no longer listed");
    assert_eq!(socks.tcp_len(), 0, "no longer demultiplexed");
    assert_eq!(socks.tcp(client).local_port, 40_000, "still readable");
    assert_eq!(socks.tcp_mib(), live, "counted once, frozen");
    socks.remove_tcp(client);
    assert_eq!(
        socks.tcp_mib(),
        live,
        "removing a released socket adds nothing"
    );
}

#[test]
fn the_node_counts_opens_segments_and_a_timeout_retransmission_once() {
    let mut bench = Bench::new(2);
    let (client, server) = established(&mut bench, &cfg());
    // client: SYN and the handshake's ACK; server: its SYN-ACK
    let (c, s) = (
        bench.hosts[0].sockets.tcp_mib(),
        bench.hosts[1].sockets.tcp_mib(),
    );
    assert_eq!((c.active_opens, c.passive_opens, c.out_segs), (1, 0, 2));
    assert_eq!((s.active_opens, s.passive_opens, s.out_segs), (0, 1, 1));
    assert_eq!(bench.hosts[0].sockets.curr_estab(), 1);
    // 1000 bytes sent and lost, then the tail loss probe's copy lost too:
    // the RTO resends them a third time
    bench.conn_mut(0, client).ep.write(SimTime(MS), 1000);
    bench.ctx(0, SimTime(MS)).flush(client, 0);
    assert_eq!(bench.sent(0).len(), 1, "the data segment, dropped");
    for _ in 0..2 {
        let at = bench.conn(0, client).ep.poll_timeout().unwrap();
        bench.conn_mut(0, client).ep.handle_timeout(at);
        bench.ctx(0, at).flush(client, 0);
        assert_eq!(bench.sent(0).len(), 1, "a retransmission, dropped");
    }
    let m = bench.hosts[0].sockets.tcp_mib();
    let info = bench.conn(0, client).ep.info();
    assert_eq!((m.loss_probes, m.timeouts), (1, 1));
    assert_eq!((m.retrans_segs, info.total_retrans), (2, 2));
    assert_eq!(m.out_segs, 3, "SYN, ACK, the original data segment");
    assert_eq!(m.out_segs + m.retrans_segs, info.segs_out as u64);
    assert_eq!(m.orig_data_sent, 1);
    assert_eq!(
        (info.bytes_sent, info.bytes_retrans),
        (3000, 2000),
        "tcpi_bytes_sent counts every copy (__tcp_transmit_skb)"
    );
    // the third copy arrives
    let at = bench.conn(0, client).ep.poll_timeout().unwrap();
    bench.conn_mut(0, client).ep.handle_timeout(at);
    bench.ctx(0, at).flush(client, 0);
    exchange(&mut bench, client, server, at);
    let m = bench.hosts[0].sockets.tcp_mib();
    assert_eq!(m.retrans_segs, 3);
    assert_eq!(m.delivered, 2, "the SYN and the data segment");
    assert_eq!(
        bench.hosts[1].sockets.tcp_mib().out_segs,
        2,
        "SYN-ACK and one ACK"
    );
}

fn diag(bench: &Bench, host: usize) -> Vec<Value> {
    let h = &bench.hosts[host];
    h.sockets
        .diag(h.addr, SimTime(2 * MS), |_| Some(ListenerTcp::of(&cfg())))
}

#[test]
fn ss_sees_state_addresses_queues_and_tcp_info_of_a_scripted_transfer() {
    let mut bench = Bench::new(2);
    let (client, server) = established(&mut bench, &cfg());
    // 3000 bytes written at 1 ms: 1448 + 1448 + 104 (MSS 1448 with timestamps)
    bench.conn_mut(0, client).ep.write(SimTime(MS), 3000);
    bench.ctx(0, SimTime(MS)).flush(client, 0);
    let data = bench.sent(0);
    assert_eq!(data.len(), 3);
    for p in &data {
        bench.conn_mut(1, server).input(SimTime(MS), p);
    }
    let c = &diag(&bench, 0)[0];
    assert_eq!(c["state"], "ESTAB");
    assert_eq!(
        (c["local"].as_str(), c["lport"].as_u64()),
        (Some("10.0.0.1"), Some(40_000))
    );
    assert_eq!(
        (c["peer"].as_str(), c["pport"].as_u64()),
        (Some("10.0.0.2"), Some(5001))
    );
    assert_eq!(
        (c["recv_q"].as_u64(), c["send_q"].as_u64()),
        (Some(0), Some(3000))
    );
    assert_eq!(c["cc"], "cubic");
    let i = &c["info"];
    assert_eq!(
        (i["snd_mss"].as_u64(), i["snd_cwnd"].as_u64()),
        (Some(1448), Some(10))
    );
    assert_eq!(
        (i["unacked"].as_u64(), i["bytes_sent"].as_u64()),
        (Some(3), Some(3000))
    );
    assert_eq!(i["segs_out"], 5, "SYN, ACK, three data segments");
    assert_eq!(i["bytes_acked"], 1, "the SYN");
    assert_eq!(i["options"], 1 | 2 | 4, "timestamps, SACK, window scaling");
    assert_eq!(c["timer"]["name"], "on");
    assert_eq!(c["timer"]["retrans"], 0);
    // the receiver holds 3000 unread bytes
    let s = &diag(&bench, 1)[0];
    assert_eq!(
        (s["recv_q"].as_u64(), s["send_q"].as_u64()),
        (Some(3000), Some(0))
    );
    assert_eq!(s["info"]["bytes_received"], 3000);
    assert_eq!(s["info"]["segs_in"], 5, "SYN, ACK, three data segments");
}

#[test]
fn listeners_and_udp_sockets_are_listed_before_connections() {
    let mut bench = Bench::new(2);
    let (_, _) = established(&mut bench, &cfg());
    let socks = &mut bench.hosts[0].sockets;
    socks.add_view(PortView {
        port: 5201,
        owner: 3,
        kind: PortKind::Listen {
            backlog: LISTEN_MAX,
        },
        v6: true,
    });
    let peer = Some((Ipv4(0x0a00_0002), 5201));
    socks.add_view(PortView {
        port: 43_000,
        owner: 4,
        kind: PortKind::Udp { peer },
        v6: false,
    });
    let all = diag(&bench, 0);
    let states: Vec<_> = all
        .iter()
        .map(|e| (e["proto"].as_str(), e["state"].as_str()))
        .collect();
    assert_eq!(
        states,
        vec![
            (Some("tcp"), Some("LISTEN")),
            (Some("udp"), Some("ESTAB")),
            (Some("tcp"), Some("ESTAB"))
        ]
    );
    let l = &all[0];
    assert_eq!(
        (l["local"].as_str(), l["v6"].as_bool()),
        (Some("::"), Some(true))
    );
    assert_eq!(l["send_q"], 128, "INT_MAX capped at somaxconn");
    assert_eq!(
        (l["info"]["snd_cwnd"].as_u64(), l["cc"].as_str()),
        (Some(10), Some("cubic"))
    );
    assert_eq!(
        (all[1]["peer"].as_str(), all[1]["pport"].as_u64()),
        (Some("10.0.0.2"), Some(5201))
    );
    bench.hosts[0].sockets.remove_views(4, 43_000, |_| true);
    bench.hosts[0].sockets.unbind_all(3);
    assert_eq!(diag(&bench, 0).len(), 1);
}

#[test]
fn tsq_releases_reach_only_their_owners_live_connections() {
    // host 0's application 0 owns the connection from port 40000; a release
    // names it by (remote, local port) and must come from its owner
    let mut bench = Bench::new(2);
    let h = open(&mut bench, 40_000);
    let remote = (bench.addr(1), 5001);
    let release = |flow: u32, local_port: u16, bytes: i64| TsqRelease {
        flow,
        local_port,
        remote,
        bytes,
    };
    let s = &mut bench.hosts[0].sockets;
    let before = s.tcp(h).ep.wmem_alloc();
    // a negative release charges (a split aggregate's extra skb overhead)
    let ran = s.tsq_release(SimTime::ZERO, 0, &[release(0, 40_000, -1000)]);
    assert_eq!(ran, vec![], "nothing was throttled: no handler runs");
    assert_eq!(s.tcp(h).ep.wmem_alloc(), before + 1000);
    // another application's release, or one for a port with no connection
    s.tsq_release(SimTime::ZERO, 1, &[release(1, 40_000, -1000)]);
    s.tsq_release(SimTime::ZERO, 0, &[release(0, 40_001, -1000)]);
    assert_eq!(s.tcp(h).ep.wmem_alloc(), before + 1000);
    s.tsq_release(SimTime::ZERO, 0, &[release(0, 40_000, 1000)]);
    assert_eq!(s.tcp(h).ep.wmem_alloc(), before);
    // once the connection is gone its releases are dropped
    s.remove_tcp(h);
    assert_eq!(
        s.tsq_release(SimTime::ZERO, 0, &[release(0, 40_000, 1000)]),
        vec![]
    );
}
