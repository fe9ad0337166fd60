//! `ping` (iputils): ICMP echo requests at a fixed interval, RTT per reply.
//!
//! Timing follows iputils `ping_common.c` as described in docs/semantics/formats.md §2: one
//! request every `interval` plus a small per-send scheduling lag (real runs
//! accumulate 0.05–0.2 ms per packet, which is visible in the statistics'
//! `time` field); with `-c N` ping stops as soon as N replies arrived, or,
//! after the last request, once twice the slowest RTT (at least one interval)
//! has passed — or `-W` (default 10 s) if no reply came at all
//! (`__schedule_exit`) — or at the `-w` deadline. The RTT is measured from the timestamp carried in the echo data,
//! as ping does. Output text is produced by python/bufferlab/formats/ping.py.

use super::{parse_addr, AppCtx, Application, ResultCtx};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Payload, Proto};
use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use serde_json::json;

/// iputils' MAXWAIT: how long ping lingers for missing replies after the last request.
const LINGER: SimDuration = SimDuration::from_secs(10);

/// Replies one ping keeps at most (16 bytes each here, about 0.3 KB each once
/// Python formats them); then it ends as at its `-w` deadline. run/budget.py
/// refuses at check time a ping that could get more than half of this.
pub const MAX_REPLIES: usize = 2_000_000;

/// iputils' `MAX_DUP_CHK`: one bit per icmp_seq value (ping_common.c's
/// `rcvd_tbl`), so the table covers the whole 16-bit sequence space.
const MAX_DUP_CHK: usize = 0x10000;

/// Which sequence numbers were answered since they were last sent
/// (`rcvd_tbl`): a sequence number's bit is cleared when a request carrying
/// it leaves (`rcvd_clear` before `send_probe`) and set by its first reply; a
/// reply that finds it set is a duplicate. After icmp_seq wraps at 65536 the
/// reused numbers start clean, as in iputils. Fixed size, O(1) per reply.
struct RcvdTable([u64; MAX_DUP_CHK / 64]);

impl RcvdTable {
    fn new() -> Self {
        RcvdTable([0; MAX_DUP_CHK / 64])
    }

    fn clear(&mut self, seq: u16) {
        self.0[seq as usize / 64] &= !(1 << (seq % 64));
    }

    /// Mark `seq` answered; whether it already was (a duplicate).
    fn test_and_set(&mut self, seq: u16) -> bool {
        let (word, bit) = (seq as usize / 64, 1u64 << (seq % 64));
        let was = self.0[word] & bit != 0;
        self.0[word] |= bit;
        was
    }
}

#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PingSpec {
    pub dst: String,
    #[serde(default)]
    pub count: Option<u32>,
    pub interval_ns: u64,
    pub size: u32,
    #[serde(default)]
    pub deadline_ns: Option<u64>,
    #[serde(default)]
    pub timeout_ns: Option<u64>,
    #[serde(default)]
    pub send_lag_ns: u64,
    #[serde(default)]
    pub tos: u8,
}

struct Reply {
    seq: u16,
    ttl: u8,
    rtt: SimDuration,
    dup: bool,
}

pub struct Ping {
    dst: Ipv4,
    count: Option<u32>,
    interval: SimDuration,
    size: u32,
    deadline: Option<SimDuration>,
    linger: SimDuration,
    tos: u8,
    ident: u16,
    start: SimTime,
    transmitted: u32,
    last_send: SimTime,
    next_send: Option<SimTime>,
    /// instant at which ping gives up waiting (deadline or linger)
    give_up: Option<SimTime>,
    replies: Vec<Reply>,
    /// replies that were not duplicates (iputils `nreceived`)
    received: u32,
    /// the slowest RTT so far (for `__schedule_exit`)
    max_rtt: Option<SimDuration>,
    rcvd: Box<RcvdTable>,
    /// largest number of requests outstanding when a reply arrived (iputils `pipesize`)
    pipesize: u32,
    finished: bool,
    interrupted: bool,
}

impl Ping {
    fn send(&mut self, ctx: &mut AppCtx) {
        self.transmitted += 1;
        let seq = self.transmitted as u16; // icmp_seq wraps at 65536 like the real field
        self.rcvd.clear(seq);
        ctx.send_echo(self.dst, self.ident, seq, self.size, self.tos);
        self.last_send = ctx.now;
        let more = self.count.is_none_or(|c| self.transmitted < c);
        self.next_send = if more {
            Some(ctx.now + self.interval)
        } else {
            None
        };
        if !more {
            // __schedule_exit: with some replies, wait twice the slowest RTT
            // (at least one interval); with none, the linger time (-W or 10 s)
            let wait = match self.max_rtt {
                Some(rtt) => SimDuration(2 * rtt.as_nanos()).max(self.interval),
                None => self.linger,
            };
            let end = ctx.now + wait;
            self.give_up = Some(self.give_up.map_or(end, |g| g.min(end)));
        }
    }

    fn finish(&mut self, ctx: &mut AppCtx) {
        self.finished = true;
        self.next_send = None;
        ctx.sockets.unbind_all(ctx.id);
    }
}

impl Application for Ping {
    const KIND: &'static str = "ping";
    type Spec = PingSpec;

    fn new(spec: PingSpec, mut rng: ComponentRng) -> Result<Ping> {
        if spec.interval_ns == 0 {
            return Err(Error::App("ping: interval must be positive".into()));
        }
        if spec.count == Some(0) {
            return Err(Error::App("ping: bad number of packets to transmit".into()));
        }
        Ok(Ping {
            dst: parse_addr("ping dst", &spec.dst)?,
            count: spec.count,
            interval: SimDuration(spec.interval_ns + spec.send_lag_ns),
            size: spec.size,
            deadline: spec.deadline_ns.map(SimDuration),
            linger: spec.timeout_ns.map_or(LINGER, SimDuration),
            tos: spec.tos,
            ident: rng.next_u32() as u16,
            start: SimTime::ZERO,
            transmitted: 0,
            last_send: SimTime::ZERO,
            next_send: None,
            give_up: None,
            replies: Vec::new(),
            received: 0,
            max_rtt: None,
            rcvd: Box::new(RcvdTable::new()),
            pipesize: 0,
            finished: false,
            interrupted: false,
        })
    }

    fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
        self.start = ctx.now;
        // Echo replies come back to the ICMP "port" = our identifier.
        let ident = self.ident;
        self.ident = ctx.sockets.bind_near(Proto::Icmp, ident, ctx.id);
        if let Some(d) = self.deadline {
            self.give_up = Some(ctx.now + d);
        }
        self.send(ctx);
        Ok(())
    }

    fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let Payload::Echo {
            reply: true, seq, ..
        } = p.payload
        else {
            return;
        };
        if self.finished {
            return;
        }
        let dup = self.rcvd.test_and_set(seq);
        let rtt = ctx.now - p.sent_at;
        self.max_rtt = Some(self.max_rtt.map_or(rtt, |m| m.max(rtt)));
        self.received += !dup as u32;
        self.pipesize = self
            .pipesize
            .max((self.transmitted as u16).wrapping_sub(seq) as u32 + 1);
        self.replies.push(Reply {
            seq,
            ttl: p.ttl,
            rtt,
            dup,
        });
        if let Some(c) = self.count {
            if self.received >= c {
                self.finish(ctx);
            }
        }
        if self.replies.len() >= MAX_REPLIES {
            self.finish(ctx);
        }
    }

    fn poll_timeout(&self, _sockets: &super::Sockets) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        match (self.next_send, self.give_up) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        if self.give_up.is_some_and(|g| ctx.now >= g) {
            self.finish(ctx);
            return;
        }
        if self.next_send.is_some_and(|t| ctx.now >= t) {
            self.send(ctx);
        }
    }

    fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.interrupted = true;
            self.finish(ctx);
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }

    fn result(&self, _r: &ResultCtx) -> serde_json::Value {
        let replies: Vec<_> = self
            .replies
            .iter()
            .map(|r| json!({"seq": r.seq, "ttl": r.ttl, "rtt_ns": r.rtt.as_nanos(), "dup": r.dup}))
            .collect();
        json!({
            "dst": self.dst.to_string(),
            "size": self.size,
            "count": self.count,
            "deadline_ns": self.deadline.map(|d| d.as_nanos()),
            "pipesize": self.pipesize,
            "transmitted": self.transmitted,
            "start_ns": self.start.as_nanos(),
            "last_send_ns": self.last_send.as_nanos(),
            "replies": replies,
            "interrupted": self.interrupted,
        })
    }

    fn destination(&self) -> Option<Ipv4> {
        Some(self.dst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::test_support::{at_ms, echo_reply, Bench, Wire, MS};
    use crate::app::test_support::{no_results, no_sockets};
    use crate::app::App;

    fn spec(count: Option<u32>, interval_ms: u64) -> PingSpec {
        PingSpec {
            dst: "10.0.0.2".into(),
            count,
            interval_ns: interval_ms * MS,
            size: 56,
            deadline_ns: None,
            timeout_ns: None,
            send_lag_ns: 0,
            tos: 0,
        }
    }

    fn ping(spec: PingSpec) -> Ping {
        Ping::new(spec, ComponentRng::new(3, "ping")).unwrap()
    }

    /// A ping on host 0 of a one-host bench, started at 0.
    fn started(spec: PingSpec) -> (Ping, Bench) {
        let mut bench = Bench::new(1);
        let mut p = ping(spec);
        p.start(&mut bench.ctx(0, SimTime::ZERO)).unwrap();
        (p, bench)
    }

    /// Run the ping's timers up to `until` (no replies); the echo requests sent.
    fn run_timers(p: &mut Ping, bench: &mut Bench, until: SimTime) -> Vec<Packet> {
        let mut sent = bench.sent(0);
        while let Some(t) = p.poll_timeout(no_sockets()).filter(|&t| t <= until) {
            p.handle_timeout(&mut bench.ctx(0, t));
            sent.extend(bench.sent(0));
        }
        sent
    }

    fn echo_seq(p: &Packet) -> u16 {
        match p.payload {
            Payload::Echo {
                reply: false, seq, ..
            } => seq,
            other => panic!("not an echo request: {other:?}"),
        }
    }

    fn replies(r: &serde_json::Value) -> Vec<(u64, u64, bool)> {
        r["replies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                let n = |k: &str| x[k].as_u64().unwrap();
                (n("seq"), n("rtt_ns"), x["dup"].as_bool().unwrap())
            })
            .collect()
    }

    #[test]
    fn requests_are_numbered_from_one_at_each_interval() {
        let (mut p, mut bench) = started(spec(None, 200));
        let sent = run_timers(&mut p, &mut bench, at_ms(1000));
        let seen: Vec<(u64, u16)> = sent
            .iter()
            .map(|s| (s.sent_at.as_nanos() / MS, echo_seq(s)))
            .collect();
        assert_eq!(
            seen,
            vec![(0, 1), (200, 2), (400, 3), (600, 4), (800, 5), (1000, 6)]
        );
        let s = &sent[0];
        assert_eq!(
            (s.proto, s.dst, s.len),
            (Proto::Icmp, p.dst, 14 + 20 + 8 + 56)
        );
    }

    #[test]
    fn send_lag_stretches_every_interval() {
        let mut s = spec(None, 100);
        s.send_lag_ns = 150_000;
        let (mut p, mut bench) = started(s);
        let times: Vec<u64> = run_timers(&mut p, &mut bench, at_ms(400))
            .iter()
            .map(|s| s.sent_at.as_nanos())
            .collect();
        assert_eq!(times, vec![0, 100_150_000, 200_300_000, 300_450_000]);
    }

    #[test]
    fn the_echo_identifier_is_the_bound_icmp_port() {
        let (p, bench) = started(spec(Some(1), 1000));
        assert_eq!(bench.hosts[0].sockets.lookup(Proto::Icmp, p.ident), Some(0));
    }

    #[test]
    fn rtt_is_arrival_minus_the_echoed_send_timestamp() {
        let (mut p, mut bench) = started(spec(None, 1000));
        let req = bench.sent(0).remove(0);
        p.handle_packet(
            &mut bench.ctx(0, SimTime(12_345_678)),
            &echo_reply(&req, 61),
        );
        let r = p.result(&no_results());
        assert_eq!(replies(&r), vec![(1, 12_345_678, false)]);
        assert_eq!(r["replies"][0]["ttl"], 61);
        assert_eq!(r["transmitted"], 1);
    }

    #[test]
    fn count_reached_by_replies_finishes_at_the_last_reply() {
        let (mut p, mut bench) = started(spec(Some(2), 1000));
        let mut sent = run_timers(&mut p, &mut bench, at_ms(1000));
        assert_eq!(sent.len(), 2);
        p.handle_packet(&mut bench.ctx(0, at_ms(5)), &echo_reply(&sent[0], 64));
        assert!(!p.is_finished());
        let second = sent.remove(1);
        p.handle_packet(&mut bench.ctx(0, at_ms(1007)), &echo_reply(&second, 64));
        assert!(p.is_finished());
        assert_eq!(p.poll_timeout(no_sockets()), None);
        assert!(bench.hosts[0]
            .sockets
            .lookup(Proto::Icmp, p.ident)
            .is_none());
        assert_eq!(p.result(&no_results())["last_send_ns"], 1000 * MS);
    }

    #[test]
    fn without_any_reply_ping_lingers_ten_seconds_after_the_last_request() {
        let (mut p, mut bench) = started(spec(Some(3), 1000));
        run_timers(&mut p, &mut bench, at_ms(2000));
        assert_eq!(p.poll_timeout(no_sockets()), Some(at_ms(12_000)));
        let mut s = spec(Some(3), 1000);
        s.timeout_ns = Some(2_500 * MS); // -W 2.5
        let (mut p, mut bench) = started(s);
        run_timers(&mut p, &mut bench, at_ms(2000));
        assert_eq!(p.poll_timeout(no_sockets()), Some(at_ms(4_500)));
        p.handle_timeout(&mut bench.ctx(0, at_ms(4_500)));
        assert!(p.is_finished());
        assert_eq!(p.result(&no_results())["transmitted"], 3);
    }

    #[test]
    fn after_the_last_request_ping_waits_twice_the_slowest_rtt_at_least_an_interval() {
        // slowest RTT 300 ms > interval 200 ms: wait 600 ms after the last send
        let (mut p, mut bench) = started(spec(Some(3), 200));
        let first = bench.sent(0).remove(0);
        p.handle_packet(&mut bench.ctx(0, at_ms(300)), &echo_reply(&first, 64));
        run_timers(&mut p, &mut bench, at_ms(400));
        assert_eq!(p.poll_timeout(no_sockets()), Some(at_ms(400 + 600)));
        // slowest RTT 30 ms: 60 ms < interval, so one interval
        let (mut p, mut bench) = started(spec(Some(2), 200));
        let first = bench.sent(0).remove(0);
        p.handle_packet(&mut bench.ctx(0, at_ms(30)), &echo_reply(&first, 64));
        run_timers(&mut p, &mut bench, at_ms(200));
        assert_eq!(p.poll_timeout(no_sockets()), Some(at_ms(400)));
    }

    #[test]
    fn deadline_stops_sending_and_finishes_at_start_plus_w() {
        let mut s = spec(None, 300);
        s.deadline_ns = Some(1_000 * MS); // -w 1
        let (mut p, mut bench) = started(s);
        let sent = run_timers(&mut p, &mut bench, at_ms(5_000));
        // requests at 0, 300, 600, 900 ms; the deadline at 1000 ms ends it
        assert_eq!(sent.len(), 4);
        assert!(p.is_finished());
        let r = p.result(&no_results());
        assert_eq!(
            (r["transmitted"].as_u64(), r["deadline_ns"].as_u64()),
            (Some(4), Some(1_000 * MS))
        );
        assert_eq!(r["last_send_ns"], 900 * MS);
    }

    #[test]
    fn deadline_earlier_than_the_linger_wins_with_count() {
        let mut s = spec(Some(2), 100);
        s.deadline_ns = Some(700 * MS);
        let (mut p, mut bench) = started(s);
        run_timers(&mut p, &mut bench, at_ms(100));
        assert_eq!(p.poll_timeout(no_sockets()), Some(at_ms(700)));
    }

    #[test]
    fn duplicates_are_flagged_and_do_not_count_towards_c() {
        let (mut p, mut bench) = started(spec(Some(2), 1000));
        let first = bench.sent(0).remove(0);
        p.handle_packet(&mut bench.ctx(0, at_ms(10)), &echo_reply(&first, 64));
        p.handle_packet(&mut bench.ctx(0, at_ms(11)), &echo_reply(&first, 64));
        assert!(!p.is_finished(), "a duplicate is not a second reply");
        assert_eq!(
            replies(&p.result(&no_results())),
            vec![(1, 10 * MS, false), (1, 11 * MS, true)]
        );
    }

    #[test]
    fn pipesize_counts_requests_outstanding_when_a_reply_arrives() {
        // three requests out (seq 1..3) when the reply to seq 1 arrives
        let (mut p, mut bench) = started(spec(None, 100));
        let sent = run_timers(&mut p, &mut bench, at_ms(200));
        p.handle_packet(&mut bench.ctx(0, at_ms(250)), &echo_reply(&sent[0], 64));
        assert_eq!(p.result(&no_results())["pipesize"], 3);
        p.handle_packet(&mut bench.ctx(0, at_ms(260)), &echo_reply(&sent[2], 64));
        assert_eq!(p.result(&no_results())["pipesize"], 3);
    }

    #[test]
    fn other_packets_and_late_replies_are_ignored() {
        let (mut p, mut bench) = started(spec(Some(1), 1000));
        let req = bench.sent(0).remove(0);
        // the request itself (not a reply) changes nothing
        p.handle_packet(&mut bench.ctx(0, at_ms(1)), &req);
        assert!(replies(&p.result(&no_results())).is_empty());
        p.interrupt(&mut bench.ctx(0, at_ms(2)));
        p.handle_packet(&mut bench.ctx(0, at_ms(3)), &echo_reply(&req, 64));
        let r = p.result(&no_results());
        assert!(replies(&r).is_empty());
        assert_eq!(r["interrupted"], true);
    }

    #[test]
    fn sequence_numbers_wrap_at_65536() {
        let (mut p, mut bench) = started(spec(None, 1));
        let sent = run_timers(&mut p, &mut bench, at_ms(65_536));
        let tail: Vec<u16> = sent[65_534..].iter().map(echo_seq).collect();
        assert_eq!(tail, vec![65_535, 0, 1]);
    }

    #[test]
    fn replies_after_the_wrap_are_new_replies_not_duplicates() {
        // -c 70000, every request answered at once: 70 000 received, no
        // duplicate (iputils clears a sequence number's bit when it is sent
        // again), and the 70 000th reply ends ping
        let (mut p, mut bench) = started(spec(Some(70_000), 1));
        let mut answered = 0u32;
        for k in 0..70_000u64 {
            if k > 0 {
                p.handle_timeout(&mut bench.ctx(0, at_ms(k)));
            }
            for req in bench.sent(0) {
                p.handle_packet(&mut bench.ctx(0, at_ms(k)), &echo_reply(&req, 64));
                answered += 1;
            }
        }
        assert_eq!(answered, 70_000);
        assert!(p.is_finished());
        let r = p.result(&no_results());
        assert_eq!(r["transmitted"], 70_000);
        let rs = replies(&r);
        assert_eq!(rs.len(), 70_000);
        assert!(rs.iter().all(|&(_, _, dup)| !dup));
        // a second answer to a reused sequence number is still a duplicate
        let (mut p, mut bench) = started(spec(None, 1));
        let first = bench.sent(0).remove(0);
        p.handle_packet(&mut bench.ctx(0, at_ms(0)), &echo_reply(&first, 64));
        p.handle_packet(&mut bench.ctx(0, at_ms(0)), &echo_reply(&first, 64));
        assert!(replies(&p.result(&no_results()))[1].2);
    }

    #[test]
    fn a_ping_ends_at_its_reply_cap() {
        let (mut p, mut bench) = started(spec(None, 1));
        let req = bench.sent(0).remove(0);
        p.replies.extend((1..MAX_REPLIES).map(|_| Reply {
            seq: 0,
            ttl: 64,
            rtt: SimDuration::ZERO,
            dup: false,
        }));
        p.handle_packet(&mut bench.ctx(0, at_ms(1)), &echo_reply(&req, 64));
        assert!(p.is_finished());
        assert_eq!(p.poll_timeout(no_sockets()), None);
    }

    #[test]
    fn invalid_specs_are_refused() {
        assert!(Ping::new(spec(Some(0), 1000), ComponentRng::new(0, "p")).is_err());
        assert!(Ping::new(spec(None, 0), ComponentRng::new(0, "p")).is_err());
        let mut s = spec(None, 1000);
        s.dst = "10.0.0".into();
        assert!(Ping::new(s, ComponentRng::new(0, "p")).is_err());
    }

    #[test]
    fn over_a_wire_each_reply_takes_the_round_trip_and_a_loss_is_a_missing_seq() {
        // 10 ms each way; the second request is lost
        let app = App::Ping(ping(spec(Some(3), 200)));
        let mut wire = Wire::new(
            vec![app, App::Sink(idle_peer())],
            SimDuration::from_millis(10),
        )
        .with_loss(|p| {
            matches!(
                p.payload,
                Payload::Echo {
                    reply: false,
                    seq: 2,
                    ..
                }
            )
        });
        wire.start(0);
        // the third request at 400 ms arms the end at 400 + max(2·20, 200) ms
        wire.run_until(at_ms(599));
        assert!(!wire.apps[0].is_finished());
        wire.run_until(at_ms(600));
        assert!(wire.apps[0].is_finished());
        let r = wire.result(0);
        assert_eq!(r["transmitted"], 3);
        assert_eq!(replies(&r), vec![(1, 20 * MS, false), (3, 20 * MS, false)]);
        // requests from host 0, the lost one included; replies from host 1
        let departures: Vec<(usize, u64)> = wire
            .log
            .iter()
            .map(|(t, host, _)| (*host, t.as_nanos() / MS))
            .collect();
        assert_eq!(
            departures,
            vec![(0, 0), (1, 10), (0, 200), (0, 400), (1, 410)]
        );
    }

    /// Host 1 only answers echo requests (done by the wire's stack).
    fn idle_peer() -> crate::app::sink::Sink {
        let spec = crate::app::sink::SinkSpec {
            port: 9,
            proto: crate::app::sink::SinkProto::Udp,
            tcp: Default::default(),
        };
        crate::app::sink::Sink::new(spec, ComponentRng::new(0, "peer")).unwrap()
    }
}
