//! Test harness: a fake ACK clock that feeds the congestion-control hooks
//! the way the endpoint will (docs/semantics/tcp.md §8), over one FIFO bottleneck.
//!
//! One bulk flow, always cwnd-limited; the sender sits at the bottleneck, a
//! packet's service time is `1/rate_pps`, and all propagation is lumped into
//! `base_rtt_us` after the bottleneck. A packet that finds `buffer_pkts`
//! packets queued (counting the one in service) is dropped. Every delivered
//! packet is acknowledged on its own (no delayed ACKs). A drop is detected
//! when the next delivered packet's ACK arrives; lost packets are simply
//! forgotten (their retransmissions are not modelled, so they do not
//! consume cwnd). Recovery: RFC 6937 PRR for modules without
//! `cong_control`, exit when everything sent before the loss is acked, then
//! `cwnd = ssthresh` (docs/semantics/tcp.md §9.1, §9.4). Rate samples follow tcp_rate.c
//! (docs/semantics/tcp.md §10). The sender paces only when `pacing_status_needed` is set
//! (BBR).

use std::collections::VecDeque;

use super::{before, AckSample, CaEvent, CaState, Cc, CcSock, RateSample};
use crate::time::SimTime;

#[derive(Clone, Copy, Debug)]
pub(crate) struct Path {
    pub rate_pps: u64,
    pub base_rtt_us: u64,
    pub buffer_pkts: u64,
}

/// One entry into Recovery.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recovery {
    pub at_us: u64,
    pub cwnd_before: u32,
    pub ssthresh: u32,
}

/// The socket after one ACK.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    pub at_us: u64,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub in_flight: u32,
    pub rtt_us: u64,
    pub state: CaState,
}

#[derive(Clone, Copy, Debug)]
struct Pkt {
    seq: u32,
    sent_ns: u64,
    /// None: dropped at the bottleneck
    ack_ns: Option<u64>,
    delivered: u32,
    delivered_mstamp: u64,
    first_tx_mstamp: u64,
    app_limited: bool,
}

pub(crate) struct Fluid {
    pub cc: Cc,
    pub tp: CcSock,
    path: Path,
    now_ns: u64,
    tx_ns: u64,
    link_free_ns: u64,
    flight: VecDeque<Pkt>,
    next_seq: u32,
    first_tx_mstamp: u64,
    high_seq: u32,
    prr_delivered: u32,
    prr_out: u32,
    next_send_ns: u64,
    pub recoveries: Vec<Recovery>,
    pub samples: Vec<Sample>,
}

impl Fluid {
    /// A connection just established over `path`: the handshake gave one
    /// RTT sample of `base_rtt_us`, then `init` ran.
    pub fn new(cc: Cc, path: Path) -> Fluid {
        let now_ns = path.base_rtt_us * 1_000;
        let mut tp = CcSock {
            is_cwnd_limited: true,
            srtt_us: (path.base_rtt_us as u32) << 3,
            min_rtt_us: path.base_rtt_us as u32,
            ..CcSock::default()
        };
        tp.set_clock(SimTime::from_nanos(now_ns));
        tp.lsndtime = tp.jiffies;
        let mut f = Fluid {
            cc,
            tp,
            path,
            now_ns,
            tx_ns: 1_000_000_000 / path.rate_pps,
            link_free_ns: 0,
            flight: VecDeque::new(),
            next_seq: 0,
            first_tx_mstamp: 0,
            high_seq: 0,
            prr_delivered: 0,
            prr_out: 0,
            next_send_ns: 0,
            recoveries: Vec::new(),
            samples: Vec::new(),
        };
        f.cc.init(&mut f.tp);
        f
    }

    /// Changes the bottleneck's buffer from now on.
    pub fn set_buffer(&mut self, pkts: u64) {
        self.path.buffer_pkts = pkts;
    }

    pub fn now_us(&self) -> u64 {
        self.now_ns / 1_000
    }

    /// Runs until `dur_us` of simulated time have passed.
    pub fn run_for_us(&mut self, dur_us: u64) {
        let end = self.now_ns + dur_us * 1_000;
        while self.now_ns < end {
            let next_ack = self.flight.iter().find_map(|p| p.ack_ns);
            let can_send = self.tp.packets_in_flight < self.tp.snd_cwnd;
            let send_at = if self.tp.pacing_status_needed {
                self.now_ns.max(self.next_send_ns)
            } else {
                self.now_ns
            };
            match (can_send, next_ack) {
                (true, Some(a)) if send_at <= a => self.send(send_at),
                (true, None) => self.send(send_at),
                (_, Some(a)) => self.ack(a),
                (false, None) => panic!("stalled: cwnd {}", self.tp.snd_cwnd),
            }
        }
    }

    fn set_clock(&mut self, ns: u64) {
        self.now_ns = ns;
        self.tp.set_clock(SimTime::from_nanos(ns));
    }

    fn send(&mut self, at_ns: u64) {
        self.set_clock(at_ns);
        let now_us = self.tp.now_us;
        if self.tp.packets_out == 0 {
            self.first_tx_mstamp = now_us;
            self.tp.delivered_mstamp = now_us;
            self.cc.cwnd_event(&mut self.tp, CaEvent::TxStart);
        }
        let backlog_ns = self.link_free_ns.saturating_sub(at_ns);
        let queued = backlog_ns.div_ceil(self.tx_ns);
        let ack_ns = if queued >= self.path.buffer_pkts {
            None
        } else {
            let depart = self.link_free_ns.max(at_ns) + self.tx_ns;
            self.link_free_ns = depart;
            Some(depart + self.path.base_rtt_us * 1_000)
        };
        self.flight.push_back(Pkt {
            seq: self.next_seq,
            sent_ns: at_ns,
            ack_ns,
            delivered: self.tp.delivered,
            delivered_mstamp: self.tp.delivered_mstamp,
            first_tx_mstamp: self.first_tx_mstamp,
            app_limited: self.tp.app_limited != 0,
        });
        self.next_seq = self.next_seq.wrapping_add(1);
        self.tp.snd_nxt = self.next_seq;
        self.tp.packets_out += 1;
        self.tp.packets_in_flight += 1;
        self.tp.lsndtime = self.tp.jiffies;
        if self.tp.ca_state == CaState::Recovery {
            self.prr_out += 1;
        }
        if self.tp.pacing_status_needed && self.tp.pacing_rate > 0 {
            let gap = self.tp.mss_cache as u64 * 1_000_000_000 / self.tp.pacing_rate;
            self.next_send_ns = self.next_send_ns.max(at_ns) + gap;
            self.tp.wstamp_ns = self.next_send_ns;
        }
    }

    fn ack(&mut self, at_ns: u64) {
        self.set_clock(at_ns);
        let tp = &mut self.tp;
        let prior_in_flight = tp.packets_in_flight;
        let mut lost = 0u32;
        let p = loop {
            let p = self.flight.pop_front().expect("an acked packet");
            if p.ack_ns.is_some() {
                break p;
            }
            lost += 1;
        };
        tp.lost += lost;
        tp.delivered += 1;
        tp.packets_out -= 1 + lost;
        tp.packets_in_flight = tp.packets_out;
        tp.snd_una = p.seq.wrapping_add(1);
        if tp.app_limited != 0 && super::after(tp.delivered, tp.app_limited) {
            tp.app_limited = 0;
        }

        // RTT sample and estimators (tcp_ack_update_rtt, simplified)
        let rtt_us = (at_ns - p.sent_ns) / 1_000;
        tp.srtt_us = if tp.srtt_us == 0 {
            (rtt_us as u32) << 3
        } else {
            tp.srtt_us - (tp.srtt_us >> 3) + rtt_us as u32
        };
        tp.min_rtt_us = tp.min_rtt_us.min(rtt_us as u32);

        // rate sample (tcp_rate_skb_delivered + tcp_rate_gen)
        let sent_us = p.sent_ns / 1_000;
        let snd_us = sent_us.saturating_sub(p.first_tx_mstamp);
        self.first_tx_mstamp = sent_us;
        tp.delivered_mstamp = tp.now_us;
        let ack_us = tp.now_us.saturating_sub(p.delivered_mstamp);
        let mut rs = RateSample {
            prior_mstamp: p.delivered_mstamp,
            prior_delivered: p.delivered,
            delivered: tp.delivered.wrapping_sub(p.delivered) as i32,
            interval_us: snd_us.max(ack_us) as i64,
            snd_interval_us: snd_us as u32,
            rcv_interval_us: ack_us as u32,
            rtt_us: rtt_us as i64,
            losses: lost as i32,
            acked_sacked: 1,
            prior_in_flight,
            is_app_limited: p.app_limited,
            is_retrans: false,
            is_ack_delayed: false,
            ..RateSample::default()
        };
        if rs.interval_us < tp.min_rtt_us as i64 {
            rs.interval_us = -1;
        }

        self.cc.pkts_acked(
            tp,
            &AckSample {
                pkts_acked: 1,
                rtt_us: rtt_us as i64,
                in_flight: prior_in_flight,
            },
        );

        // loss state machine (tcp_fastretrans_alert, reduced)
        if lost > 0 && tp.ca_state < CaState::Recovery {
            tp.prior_cwnd = tp.snd_cwnd;
            let ssthresh = self.cc.ssthresh(tp);
            tp.snd_ssthresh = ssthresh;
            self.recoveries.push(Recovery {
                at_us: tp.now_us,
                cwnd_before: tp.snd_cwnd,
                ssthresh,
            });
            self.high_seq = tp.snd_nxt;
            self.prr_delivered = 0;
            self.prr_out = 0;
            self.cc.set_state(tp, CaState::Recovery);
        } else if tp.ca_state == CaState::Recovery && !before(tp.snd_una, self.high_seq) {
            if !self.cc.has_cong_control() {
                tp.snd_cwnd = tp.snd_ssthresh; // tcp_end_cwnd_reduction
            }
            self.cc.set_state(tp, CaState::Open);
        }

        // congestion control step (tcp_cong_control)
        if self.cc.has_cong_control() {
            self.cc.cong_control(tp, &rs);
        } else if tp.ca_state == CaState::Recovery {
            // tcp_cwnd_reduction (PRR, docs/semantics/tcp.md §9.4)
            let delta = tp.snd_ssthresh as i64 - tp.packets_in_flight as i64;
            self.prr_delivered += 1;
            let mut sndcnt: i64 = if delta < 0 {
                let num = tp.snd_ssthresh as u64 * self.prr_delivered as u64;
                num.div_ceil(tp.prior_cwnd.max(1) as u64) as i64 - self.prr_out as i64
            } else {
                let mut s = (self.prr_delivered as i64 - self.prr_out as i64).max(1);
                if lost == 0 {
                    s += 1;
                }
                s.min(delta)
            };
            sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
            tp.snd_cwnd = (tp.packets_in_flight as i64 + sndcnt) as u32;
        } else {
            let una = tp.snd_una;
            self.cc.cong_avoid(tp, una, 1);
        }

        self.samples.push(Sample {
            at_us: tp.now_us,
            cwnd: tp.snd_cwnd,
            ssthresh: tp.snd_ssthresh,
            in_flight: tp.packets_in_flight,
            rtt_us,
            state: tp.ca_state,
        });
    }
}
