//! `ping` (iputils): ICMP echo requests at a fixed interval, RTT per reply.
//!
//! Timing follows iputils `ping_common.c` as described in formats.md §2: one
//! request every `interval` plus a small per-send scheduling lag (real runs
//! accumulate 0.05–0.2 ms per packet, which is visible in the statistics'
//! `time` field); with `-c N` ping stops as soon as N replies arrived, or,
//! after the last request, once twice the slowest RTT (at least one interval)
//! has passed — or `-W` (default 10 s) if no reply came at all
//! (`__schedule_exit`) — or at the `-w` deadline. The RTT is measured from the timestamp carried in the echo data,
//! as ping does. Output text is produced by python/bufferlab/formats/ping.py.

use super::{parse_addr, AppCtx};
use crate::error::{Error, Result};
use crate::packet::{Ipv4, Packet, Payload, Proto};
use crate::rng::ComponentRng;
use crate::time::{SimDuration, SimTime};
use serde::Deserialize;
use serde_json::json;

/// iputils' MAXWAIT: how long ping lingers for missing replies after the last request.
const LINGER: SimDuration = SimDuration::from_secs(10);

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
    seen: Vec<bool>,
    /// largest number of requests outstanding when a reply arrived (iputils `pipesize`)
    pipesize: u32,
    finished: bool,
    interrupted: bool,
}

impl Ping {
    pub fn new(spec: PingSpec, mut rng: ComponentRng) -> Result<Ping> {
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
            seen: Vec::new(),
            pipesize: 0,
            finished: false,
            interrupted: false,
        })
    }

    pub fn start(&mut self, ctx: &mut AppCtx) -> Result<()> {
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

    fn send(&mut self, ctx: &mut AppCtx) {
        self.transmitted += 1;
        let seq = self.transmitted as u16; // icmp_seq wraps at 65536 like the real field
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
            let max_rtt = self.replies.iter().map(|r| r.rtt).max();
            let wait = match max_rtt {
                Some(rtt) => SimDuration(2 * rtt.as_nanos()).max(self.interval),
                None => self.linger,
            };
            let end = ctx.now + wait;
            self.give_up = Some(self.give_up.map_or(end, |g| g.min(end)));
        }
    }

    pub fn handle_packet(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let Payload::Echo {
            reply: true, seq, ..
        } = p.payload
        else {
            return;
        };
        if self.finished {
            return;
        }
        let idx = seq as usize;
        if self.seen.len() <= idx {
            self.seen.resize(idx + 1, false);
        }
        let dup = self.seen[idx];
        self.seen[idx] = true;
        self.pipesize = self
            .pipesize
            .max((self.transmitted as u16).wrapping_sub(seq) as u32 + 1);
        self.replies.push(Reply {
            seq,
            ttl: p.ttl,
            rtt: ctx.now - p.sent_at,
            dup,
        });
        if let Some(c) = self.count {
            let received = self.replies.iter().filter(|r| !r.dup).count() as u32;
            if received >= c {
                self.finish(ctx);
            }
        }
    }

    pub fn poll_timeout(&self) -> Option<SimTime> {
        if self.finished {
            return None;
        }
        match (self.next_send, self.give_up) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn handle_timeout(&mut self, ctx: &mut AppCtx) {
        if self.give_up.is_some_and(|g| ctx.now >= g) {
            self.finish(ctx);
            return;
        }
        if self.next_send.is_some_and(|t| ctx.now >= t) {
            self.send(ctx);
        }
    }

    pub fn interrupt(&mut self, ctx: &mut AppCtx) {
        if !self.finished {
            self.interrupted = true;
            self.finish(ctx);
        }
    }

    fn finish(&mut self, ctx: &mut AppCtx) {
        self.finished = true;
        self.next_send = None;
        ctx.sockets.unbind_all(ctx.id);
    }

    pub fn destination(&self) -> Ipv4 {
        self.dst
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn result(&self) -> serde_json::Value {
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
}
