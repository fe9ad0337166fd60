//! `rr_client`'s UDP exchanges (rr/mod.rs): each request one datagram — paced
//! at the client's interval (irtt), or closed-loop, the next when the reply
//! comes or the timeout passes (netperf's UDP_RR) — the replies matched to
//! their requests by sequence number (duplicates and late ones counted), and
//! the end of a paced run once every reply is in or irtt's wait is over.

use super::super::RrMode;
use super::{RrClient, Tx};
use crate::app::AppCtx;
use crate::packet::Packet;
use crate::time::{SimDuration, SimTime};

impl RrClient {
    pub(super) fn send_udp(&mut self, ctx: &mut AppCtx) {
        let Some(at) = self.next_send else { return };
        if ctx.now < at || self.out.finished {
            return;
        }
        let paced = self.mode == RrMode::Paced;
        if self.time_up(ctx.now) || self.count.is_some_and(|c| self.seq >= c) {
            self.next_send = None;
            if paced {
                // irtt's waiter: three times the largest RTT, 4 s without replies
                let wait = if self.replies > 0 {
                    SimDuration(self.max_rtt.as_nanos().saturating_mul(3))
                } else {
                    SimDuration::from_millis(4000)
                };
                self.wait_until = Some(ctx.now + wait);
                self.check_replies_done(ctx);
            } else {
                self.finish(ctx, None);
            }
            return;
        }
        let seq = (self.response << 32) | (self.seq & 0xFFFF_FFFF);
        ctx.send_udp(
            self.dst,
            self.local_port,
            self.port,
            self.request as u32,
            self.tos,
            seq,
        );
        self.written += self.request;
        self.push_tx(Tx {
            sent: ctx.now,
            ..Tx::default()
        });
        self.seq += 1;
        self.next_send = if paced {
            Some(at + self.interval)
        } else {
            // closed: the next request goes when the reply comes, or after the timeout
            self.timeout.map(|t| ctx.now + t).or(Some(SimTime::MAX))
        };
    }

    pub(super) fn udp_reply(&mut self, ctx: &mut AppCtx, p: &Packet) {
        let num = p.seq & 0xFFFF_FFFF;
        self.server_received = self.server_received.max(p.seq >> 32);
        if num >= self.seq {
            return; // not one of ours
        }
        let first_time = self.max_reply_seq.is_none_or(|m| num > m);
        let idx = num as usize;
        let sent = if self.record {
            self.txs.get(idx).map(|t| t.sent)
        } else {
            None
        };
        if self.record {
            if let Some(tx) = self.txs.get_mut(idx) {
                if tx.done.is_some() {
                    self.duplicates += 1;
                    return;
                }
                tx.done = Some(ctx.now);
                tx.server = Some(p.sent_at);
                tx.late = !first_time;
            }
        }
        self.replies += 1;
        self.read += p.payload_len() as u64;
        if first_time {
            self.max_reply_seq = Some(num);
        }
        let started = sent.unwrap_or(self.start);
        self.max_rtt = self.max_rtt.max(ctx.now.saturating_since(started));
        if self.mode == RrMode::Closed {
            if num + 1 != self.seq {
                return; // a reply to a request we gave up on
            }
            self.complete_tx(ctx.now, started);
            self.next_send = Some(ctx.now);
            self.send_udp(ctx);
        } else {
            self.completed += 1;
            self.check_replies_done(ctx);
        }
    }

    pub(super) fn check_replies_done(&mut self, ctx: &mut AppCtx) {
        if self.next_send.is_none() && self.mode == RrMode::Paced {
            let all = self.completed >= self.seq;
            if all || self.wait_until.is_some_and(|t| ctx.now >= t) {
                self.finish(ctx, None);
                self.release(ctx);
            }
        }
    }
}
