//! Test harness (docs/internals.md "A harness per model"): two endpoints joined by a
//! simulated path stepped in simulated time. Each direction has a fixed
//! propagation delay, an optional rate-limited drop-tail FIFO (limit in
//! packets, optional CE marking above a threshold for ECT packets) and an
//! optional drop rule. Applications: the client writes a bulk stream (as
//! iperf3 does: whenever the socket is writable), the server reads whatever
//! arrives (or never, to fill its buffer). Everything is deterministic.

use std::collections::VecDeque;

use super::cc::CcProfile;
use super::endpoint::{Segment, TcpConfig, TcpEndpoint, TcpState};
use crate::packet::{tcp_flags, Ipv4};
use crate::rng::ComponentRng;
use crate::time::{Rate, SimDuration, SimTime};

/// A drop rule: sees every segment entering a direction, in order; returns
/// true to drop it.
pub type DropRule = Box<dyn FnMut(&Segment) -> bool>;

/// A middlebox rule: rewrites segments entering a direction.
pub type MangleRule = Box<dyn FnMut(&mut Segment)>;

/// An extra-delay rule: extra propagation delay per segment (reordering).
pub type DelayRule = Box<dyn FnMut(&Segment) -> SimDuration>;

/// One direction of the path.
pub struct Dir {
    pub delay: SimDuration,
    pub rate: Option<Rate>,
    /// bottleneck queue limit, packets (including the one in service)
    pub limit: usize,
    /// mark CE on ECT packets when this many are queued
    pub ce_threshold: Option<usize>,
    pub drop: Option<DropRule>,
    /// mark CE on the segments this rule picks (ECT ones only)
    pub ce_rule: Option<DropRule>,
    /// extra propagation delay for some segments (reordering)
    pub delay_rule: Option<DelayRule>,
    /// a middlebox rewriting segments
    pub mangle: Option<MangleRule>,
    /// the bottleneck starts no segment before its departure stamp (one
    /// flow in an fq: sch_fq.c `fq_dequeue` throttles until `time_to_send`)
    pub edt: bool,
    departures: VecDeque<SimTime>,
    busy_until: SimTime,
    flight: VecDeque<(SimTime, Segment, u8)>,
    pub dropped: u64,
    pub queue_drops: u64,
    pub max_queue: usize,
    /// segments marked CE in this direction
    pub ce_marked: u64,
    /// TCP Small Queues: (when, truesize) of the skbs charged to the sender,
    /// given back as they leave the bottleneck (the sender's own queue here)
    /// or are dropped
    releases: VecDeque<(SimTime, u32)>,
}

impl Dir {
    pub fn new(delay: SimDuration) -> Self {
        Dir {
            delay,
            rate: None,
            limit: usize::MAX,
            ce_threshold: None,
            drop: None,
            ce_rule: None,
            mangle: None,
            delay_rule: None,
            edt: false,
            departures: VecDeque::new(),
            busy_until: SimTime::ZERO,
            flight: VecDeque::new(),
            dropped: 0,
            queue_drops: 0,
            max_queue: 0,
            ce_marked: 0,
            releases: VecDeque::new(),
        }
    }

    /// The skb's send memory comes back at `at` (TSQ: `tcp_wfree`).
    fn release_at(&mut self, at: SimTime, seg: &Segment) {
        if seg.truesize > 0 {
            self.releases.push_back((at, seg.truesize));
        }
    }

    fn send(&mut self, now: SimTime, mut seg: Segment) {
        if let Some(m) = self.mangle.as_mut() {
            m(&mut seg);
        }
        if let Some(d) = self.drop.as_mut() {
            if d(&seg) {
                self.dropped += 1;
                self.release_at(now, &seg);
                return;
            }
        }
        let mut ce = false;
        if let Some(r) = self.ce_rule.as_mut() {
            if r(&seg) && seg.ecn != 0 {
                ce = true;
            }
        }
        let depart = match self.rate {
            None => now,
            Some(rate) => {
                while self.departures.front().is_some_and(|&t| t <= now) {
                    self.departures.pop_front();
                }
                let qlen = self.departures.len();
                if qlen >= self.limit {
                    self.queue_drops += 1;
                    self.release_at(now, &seg);
                    return;
                }
                if let Some(k) = self.ce_threshold {
                    if seg.ecn != 0 && qlen >= k {
                        ce = true;
                    }
                }
                let due = if self.edt { seg.tstamp.max(now) } else { now };
                let start = self.busy_until.max(due);
                let done = start + rate.tx_time(seg.frame_len() as u64);
                self.busy_until = done;
                self.departures.push_back(done);
                self.max_queue = self.max_queue.max(qlen + 1);
                done
            }
        };
        self.release_at(depart, &seg);
        let extra = match self.delay_rule.as_mut() {
            Some(r) => r(&seg),
            None => SimDuration::ZERO,
        };
        let at = depart + self.delay + extra;
        // keep the flight sorted by arrival (a delayed segment is overtaken)
        let i = self.flight.partition_point(|f| f.0 <= at);
        // the IP ECN field on arrival: CE, or as sent
        let ecn = if ce {
            self.ce_marked += 1;
            crate::packet::ECN_CE
        } else {
            seg.ecn & crate::packet::ECN_MASK
        };
        self.flight.insert(i, (at, seg, ecn));
    }

    fn next(&self) -> Option<SimTime> {
        self.flight.front().map(|f| f.0)
    }

    /// Send memory due back by `now`, summed.
    fn take_releases(&mut self, now: SimTime) -> u64 {
        let mut bytes = 0;
        while let Some(&(t, b)) = self.releases.front() {
            if t > now {
                break;
            }
            self.releases.pop_front();
            bytes += b as u64;
        }
        bytes
    }
}

/// A segment seen on the path.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub t: SimTime,
    /// sent by the client
    pub from_a: bool,
    pub seg: Segment,
}

/// A state sample of the client after an event.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub t: SimTime,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub ca_state: u8,
}

/// Two endpoints and a path.
pub struct Pair {
    pub now: SimTime,
    pub a: TcpEndpoint,
    pub b: Option<TcpEndpoint>,
    pub b_cfg: TcpConfig,
    pub ab: Dir,
    pub ba: Dir,
    /// bytes the client still wants to write (u64::MAX = unlimited)
    pub to_write: u64,
    pub written: u64,
    /// the server application reads what arrives
    pub b_reads: bool,
    pub read: u64,
    pub log: Vec<Sent>,
    /// segments as delivered: time of arrival, and `seg.ecn` the IP ECN
    /// field as it arrived (CE where the path marked it)
    pub arrivals: Vec<Sent>,
    pub samples: Vec<Sample>,
    pub record: bool,
    /// check the scoreboard invariants after every event
    pub check: bool,
}

pub const A_ADDR: (Ipv4, u16) = (Ipv4(0x0a00_0001), 40000);
pub const B_ADDR: (Ipv4, u16) = (Ipv4(0x0a00_0002), 5201);

impl Pair {
    /// A connection with one-way delay `owd` each way, client config `a`,
    /// server config `b`; the SYN leaves at t = 0.
    pub fn new(a: TcpConfig, b: TcpConfig, owd: SimDuration) -> Self {
        let ep = TcpEndpoint::connect(a, A_ADDR, B_ADDR, SimTime::ZERO, ComponentRng::new(1, "a"));
        Pair {
            now: SimTime::ZERO,
            a: ep,
            b: None,
            b_cfg: b,
            ab: Dir::new(owd),
            ba: Dir::new(owd),
            to_write: 0,
            written: 0,
            b_reads: true,
            read: 0,
            log: Vec::new(),
            arrivals: Vec::new(),
            samples: Vec::new(),
            record: true,
            check: true,
        }
    }

    /// Same config both ends.
    pub fn sym(cfg: TcpConfig, owd: SimDuration) -> Self {
        Pair::new(cfg.clone(), cfg, owd)
    }

    pub fn b(&self) -> &TcpEndpoint {
        self.b.as_ref().expect("server exists")
    }

    fn drain(&mut self) {
        while let Some(s) = self.a.poll_transmit(self.now) {
            if self.record {
                self.log.push(Sent {
                    t: self.now,
                    from_a: true,
                    seg: s,
                });
            }
            self.ab.send(self.now, s);
        }
        if let Some(b) = self.b.as_mut() {
            while let Some(s) = b.poll_transmit(self.now) {
                if self.record {
                    self.log.push(Sent {
                        t: self.now,
                        from_a: false,
                        seg: s,
                    });
                }
                self.ba.send(self.now, s);
            }
        }
    }

    fn apps(&mut self) {
        if self.to_write > 0 && self.a.state() == TcpState::Established {
            while self.to_write > 0 && self.a.poll_writable() {
                let chunk = self.to_write.min(128 * 1024);
                let n = self.a.write(self.now, chunk);
                if n == 0 {
                    break;
                }
                self.written += n;
                if self.to_write != u64::MAX {
                    self.to_write -= n;
                }
            }
        }
        if self.b_reads {
            if let Some(b) = self.b.as_mut() {
                if b.readable() > 0 {
                    self.read += b.read(self.now, u64::MAX);
                }
            }
        }
        self.drain();
    }

    fn sample(&mut self) {
        if self.check {
            self.a.sb.check(self.a.sack_ok);
        }
        if self.record {
            let i = self.a.info();
            self.samples.push(Sample {
                t: self.now,
                cwnd: i.snd_cwnd,
                ssthresh: i.snd_ssthresh,
                ca_state: i.ca_state,
            });
        }
    }

    /// Run until `t_end` (events at exactly `t_end` included).
    pub fn run_until(&mut self, t_end: SimTime) {
        self.drain();
        loop {
            let mut next = SimTime::MAX;
            for t in [
                self.ab.next(),
                self.ba.next(),
                self.ab.releases.front().map(|r| r.0),
                self.a.poll_timeout(),
                self.b.as_ref().and_then(|b| b.poll_timeout()),
            ]
            .into_iter()
            .flatten()
            {
                next = next.min(t);
            }
            if next > t_end || next == SimTime::MAX {
                self.now = self.now.max(t_end.min(next));
                break;
            }
            self.now = next;
            // TSQ: what left the client's queue, then its handler
            let back = self.ab.take_releases(self.now);
            if back > 0 {
                self.a.tsq_account(back as i64);
                if self.a.tsq_handler(self.now) {
                    self.apps();
                    self.sample();
                }
            }
            // deliveries
            while self.ab.next() == Some(self.now) {
                let (_, seg, ce) = self.ab.flight.pop_front().expect("due");
                if self.record {
                    self.arrivals.push(Sent {
                        t: self.now,
                        from_a: true,
                        seg: Segment { ecn: ce, ..seg },
                    });
                }
                match self.b.as_mut() {
                    Some(b) => b.handle_segment(
                        self.now,
                        &seg.hdr,
                        seg.payload_len,
                        seg_gso_size(&seg),
                        ce,
                    ),
                    None => {
                        if seg.hdr.flags & tcp_flags::SYN != 0 {
                            self.b = Some(TcpEndpoint::listen_accept(
                                self.b_cfg.clone(),
                                B_ADDR,
                                A_ADDR,
                                &seg.hdr,
                                ce,
                                self.now,
                                ComponentRng::new(2, "b"),
                            ));
                        }
                    }
                }
                self.apps();
            }
            while self.ba.next() == Some(self.now) {
                let (_, seg, ce) = self.ba.flight.pop_front().expect("due");
                if self.record {
                    self.arrivals.push(Sent {
                        t: self.now,
                        from_a: false,
                        seg: Segment { ecn: ce, ..seg },
                    });
                }
                self.a
                    .handle_segment(self.now, &seg.hdr, seg.payload_len, seg_gso_size(&seg), ce);
                self.apps();
                self.sample();
            }
            if self.a.poll_timeout().is_some_and(|t| t <= self.now) {
                self.a.handle_timeout(self.now);
                self.apps();
                self.sample();
            }
            if let Some(b) = self.b.as_mut() {
                if b.poll_timeout().is_some_and(|t| t <= self.now) {
                    b.handle_timeout(self.now);
                    self.apps();
                }
            }
        }
    }

    pub fn run_for(&mut self, d: SimDuration) {
        let end = self.now + d;
        self.run_until(end);
    }

    /// Data segments (payload > 0) sent by the client, in order.
    pub fn data_from_a(&self) -> impl Iterator<Item = &Sent> {
        self.log
            .iter()
            .filter(|s| s.from_a && s.seg.payload_len > 0)
    }

    /// Segments sent by the server, in order.
    pub fn segs_from_b(&self) -> impl Iterator<Item = &Sent> {
        self.log.iter().filter(|s| !s.from_a)
    }
}

/// Milliseconds as SimTime.
pub fn ms(v: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_millis(v)
}

/// A lab2019 Linux config with the given congestion control.
pub fn cfg(cc: &str) -> TcpConfig {
    TcpConfig {
        congestion: cc.to_string(),
        ..TcpConfig::for_profile(CcProfile::Lab2019)
    }
}

/// Drop the first transmission of each data segment whose sequence offset
/// (from the client's first data byte) is in `offsets`.
pub fn drop_first_tx(isn: u32, offsets: Vec<u32>) -> DropRule {
    let mut seen: Vec<u32> = Vec::new();
    Box::new(move |s: &Segment| {
        if s.payload_len == 0 {
            return false;
        }
        let off = s.hdr.seq.wrapping_sub(isn.wrapping_add(1));
        if offsets.contains(&off) && !seen.contains(&off) {
            seen.push(off);
            return true;
        }
        false
    })
}

impl Pair {
    /// Print the segment log (debugging aid).
    #[allow(dead_code)]
    pub fn dump(&self, n: usize) {
        let iss = self.a.iss();
        for s in self.log.iter().take(n) {
            let h = s.seg.hdr;
            eprintln!(
                "{} {} seq {} ack {} len {} sack {:?} fl {:x} win {}",
                s.t,
                if s.from_a { "A>" } else { "<B" },
                if s.from_a {
                    h.seq.wrapping_sub(iss)
                } else {
                    h.seq
                },
                if s.from_a {
                    h.ack
                } else {
                    h.ack.wrapping_sub(iss)
                },
                s.seg.payload_len,
                h.sack[..h.sack_len as usize]
                    .iter()
                    .map(|b| (b.0.wrapping_sub(iss), b.1.wrapping_sub(iss)))
                    .collect::<Vec<_>>(),
                h.flags,
                h.window
            );
        }
    }
}

/// The `gso_size` a receiver sees for `seg`: 0 unless it is an aggregate.
fn seg_gso_size(seg: &Segment) -> u32 {
    if seg.gso_segs > 1 {
        seg.gso_size
    } else {
        0
    }
}
