//! RACK-TLP loss detection (RFC 8985; net/ipv4/tcp_recovery.c): the RACK
//! state and the time-based walk of the send-time log.

use super::super::rate::sent_after;
use super::scoreboard::{Scoreboard, LOST, SACKED_RETRANS};

/// `TCP_RACK_RECOVERY_THRESH`.
pub const TCP_RACK_RECOVERY_THRESH: u8 = 16;

#[derive(Clone, Debug)]
pub struct Rack {
    /// send time of the most recently sent (s)acked segment, µs
    pub mstamp: u64,
    pub end_seq: u32,
    /// RTT of that segment, µs
    pub rtt_us: u32,
    pub advanced: bool,
    pub reo_wnd_steps: u8,
    pub reo_wnd_persist: u8,
    pub dsack_seen: bool,
    pub last_delivered: u32,
}

impl Default for Rack {
    fn default() -> Self {
        Rack {
            mstamp: 0,
            end_seq: 0,
            rtt_us: 0,
            advanced: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
        }
    }
}

impl Scoreboard {
    /// `tcp_rack_detect_loss`: mark lost every segment sent before the RACK
    /// segment whose wait exceeded RTT + reo_wnd; returns (newly counted
    /// losses, the longest remaining wait in µs).
    pub fn rack_detect_loss(&mut self, rack: &Rack, reo_wnd: u32, now_us: u64) -> (u32, u32) {
        self.prune_tsorted();
        let mut timeout = 0u32;
        let mut lost = 0u32;
        let mut k = 0;
        while k < self.tsorted.len() {
            let (t, seq) = self.tsorted[k];
            k += 1;
            let Some(idx) = self.tsorted_live(t, seq) else {
                continue;
            };
            let s = self.q[idx];
            // skip ones marked lost but not yet retransmitted
            if s.sacked & LOST != 0 && s.sacked & SACKED_RETRANS == 0 {
                continue;
            }
            if !sent_after(rack.mstamp, s.xmit_us, rack.end_seq, s.end_seq) {
                break;
            }
            let waited = now_us.saturating_sub(s.xmit_us) as i64;
            let remaining = rack.rtt_us as i64 + reo_wnd as i64 - waited;
            if remaining <= 0 {
                if self.mark_lost(idx) {
                    lost += 1;
                }
                self.q[idx].in_tsorted = false;
            } else {
                timeout = timeout.max(remaining as u32);
            }
        }
        self.prune_tsorted();
        (lost, timeout)
    }
}
#[cfg(test)]
mod tests {
    use super::super::scoreboard::tests::seg;
    use super::super::scoreboard::SACKED_ACKED;
    use super::*;

    #[test]
    fn rack_marks_only_segments_sent_before_the_delivered_one_and_older_than_rtt() {
        let mut sb = Scoreboard::new();
        for i in 0..5u32 {
            sb.push(seg(i * 1000, 1000 + i as u64 * 100));
        }
        // segment 3 (sent at 1300 µs) was SACKed at 21 300 µs: RACK rtt 20 000
        sb.q[3].sacked |= SACKED_ACKED;
        sb.sacked_out = 1;
        sb.q[3].in_tsorted = false;
        let rack = Rack {
            mstamp: 1300,
            end_seq: 4000,
            rtt_us: 20_000,
            advanced: true,
            ..Rack::default()
        };
        // at 21 300: segments 0..2 waited 20 300, 20 200, 20 100 ≥ 20 000 → lost
        let (lost, timeout) = sb.rack_detect_loss(&rack, 0, 21_300);
        assert_eq!((lost, timeout), (3, 0));
        assert_eq!(sb.lost_out, 3);
        assert_eq!(sb.q[4].sacked, 0, "sent after the RACK segment");
        // with a 1 ms reordering window nothing more is lost, segment 4 is not a candidate
        let (lost, timeout) = sb.rack_detect_loss(&rack, 1000, 21_300);
        assert_eq!((lost, timeout), (0, 0));
        assert_eq!(sb.in_flight(), 1);
    }

    #[test]
    fn rack_reports_the_remaining_wait_inside_the_reordering_window() {
        let mut sb = Scoreboard::new();
        for i in 0..3u32 {
            sb.push(seg(i * 1000, 1000 + i as u64 * 100));
        }
        sb.q[2].sacked |= SACKED_ACKED;
        sb.q[2].in_tsorted = false;
        let rack = Rack {
            mstamp: 1200,
            end_seq: 3000,
            rtt_us: 20_000,
            ..Rack::default()
        };
        // reo_wnd 5 ms: segments 0 and 1 waited 20 200 and 20 100 of 25 000;
        // the timer covers the longest remaining wait
        let (lost, timeout) = sb.rack_detect_loss(&rack, 5000, 21_200);
        assert_eq!(lost, 0);
        assert_eq!(timeout, 4900);
    }
}
