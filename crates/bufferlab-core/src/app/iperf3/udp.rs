//! iperf3 UDP tests (src/iperf_udp.c, the UDP parts of src/iperf_api.c):
//! the receiver's counters ([`RecvCounters`]: gaps, late datagrams, RFC 3550
//! jitter); the sender's pacing is throttle.rs.

use crate::time::SimTime;
use serde::Serialize;

/// iperf3's UDP "connect" datagram and its answer carry 4 bytes.
pub(super) const UDP_CONNECT_BYTES: u32 = 4;

/// One interval of a UDP test's receiver (kept as a record until the
/// report is written; see iperf3_tcp.rs `SendInterval`).
#[derive(Serialize)]
pub(super) struct UdpRecvInterval {
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
    pub(super) bytes: u64,
    pub(super) packets: u64,
    pub(super) received: u64,
    pub(super) lost: u64,
    pub(super) out_of_order: u64,
    pub(super) jitter_s: f64,
    pub(super) omitted: bool,
}

/// Counters of one UDP receiving stream (iperf_udp_recv).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct RecvCounters {
    pub(super) bytes: u64,
    pub(super) received: u64,
    /// highest sequence number seen (iperf3's packet_count)
    pub(super) max_seq: u64,
    pub(super) cnt_error: u64,
    pub(super) out_of_order: u64,
    pub(super) jitter_s: f64,
    pub(super) prev_transit_s: f64,
}

impl RecvCounters {
    pub(super) fn on_datagram(&mut self, seq: u64, payload: u32, sent_at: SimTime, now: SimTime) {
        self.bytes += payload as u64;
        self.received += 1;
        if seq > self.max_seq {
            if seq > self.max_seq + 1 {
                self.cnt_error += seq - 1 - self.max_seq;
            }
            self.max_seq = seq;
        } else {
            self.out_of_order += 1;
            self.cnt_error = self.cnt_error.saturating_sub(1);
        }
        // iperf3 timestamps have microsecond resolution on both ends.
        let transit =
            (now.as_nanos() / 1000) as f64 / 1e6 - (sent_at.as_nanos() / 1000) as f64 / 1e6;
        let d = (transit - self.prev_transit_s).abs();
        self.prev_transit_s = transit;
        self.jitter_s += (d - self.jitter_s) / 16.0;
    }

    pub(super) fn minus(&self, base: &RecvCounters) -> RecvCounters {
        RecvCounters {
            bytes: self.bytes - base.bytes,
            received: self.received - base.received,
            max_seq: self.max_seq - base.max_seq,
            cnt_error: self.cnt_error.saturating_sub(base.cnt_error),
            out_of_order: self.out_of_order - base.out_of_order,
            jitter_s: self.jitter_s,
            prev_transit_s: self.prev_transit_s,
        }
    }
}
