//! RACK-TLP loss detection (RFC 8985; net/ipv4/tcp_recovery.c): the RACK
//! state and the time-based walk of the send-time log.

use super::super::rate::sent_after;
use super::super::seq::before;
use super::scoreboard::{Scoreboard, LOST, SACKED_RETRANS};

/// `TCP_RACK_RECOVERY_THRESH`.
pub const TCP_RACK_RECOVERY_THRESH: u8 = 16;

/// RACK state (`tp->rack`, docs/semantics/tcp.md §9.2, RFC 8985 §6.1).
#[derive(Clone, Debug)]
pub struct Rack {
    /// send time of the most recently sent (s)acked segment, µs (`RACK.xmit_ts`)
    pub mstamp: u64,
    /// its end sequence (`RACK.end_seq`)
    pub end_seq: u32,
    /// RTT of that segment, µs (`RACK.rtt`)
    pub rtt_us: u32,
    /// a newer segment was delivered since the last loss walk
    pub advanced: bool,
    /// reordering window in quarters of min RTT (`RACK.reo_wnd_mult`)
    pub reo_wnd_steps: u8,
    /// recoveries left before the window falls back to one step
    /// (`RACK.reo_wnd_persist`)
    pub reo_wnd_persist: u8,
    /// a D-SACK showed reordering since the last window update
    pub dsack_seen: bool,
    /// `tp->delivered` when the window last grew
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

/// What the reordering window depends on besides RACK's own state.
#[derive(Clone, Copy, Debug)]
pub struct ReoWndInputs {
    /// reordering was ever seen on the connection (`tp->reord_seen > 0`)
    pub reordering_seen: bool,
    /// `ca_state >= Recovery`
    pub in_recovery: bool,
    pub sacked_out: u32,
    /// `tp->reordering`, segments (the DupThresh)
    pub reordering: u32,
    pub min_rtt_us: u32,
    /// smoothed RTT ×8, µs (`tp->srtt_us`)
    pub srtt_us_x8: u32,
}

impl Rack {
    /// `tcp_rack_advance` (RFC 8985 §6.2 step 2): `xmit_us` was sent and
    /// `end_seq` (s)acked at `now_us`; an RTT shorter than the minimum for a
    /// retransmitted segment is ambiguous (the original may have been acked).
    pub fn advance(
        &mut self,
        retransmitted: bool,
        end_seq: u32,
        xmit_us: u64,
        now_us: u64,
        min_rtt_us: u32,
    ) {
        let rtt_us = now_us.saturating_sub(xmit_us).min(u32::MAX as u64) as u32;
        if rtt_us < min_rtt_us && retransmitted {
            return;
        }
        self.advanced = true;
        self.rtt_us = rtt_us;
        if sent_after(xmit_us, self.mstamp, end_seq, self.end_seq) {
            self.mstamp = xmit_us;
            self.end_seq = end_seq;
        }
    }

    /// `tcp_rack_reo_wnd` (RFC 8985 §6.2 step 4): zero while no reordering
    /// was seen and either recovery is under way or DupThresh segments are
    /// SACKed; else `steps` quarters of min RTT, at most SRTT.
    pub fn reo_wnd(&self, inputs: &ReoWndInputs) -> u32 {
        if !inputs.reordering_seen && (inputs.in_recovery || inputs.sacked_out >= inputs.reordering)
        {
            return 0;
        }
        let window = (inputs.min_rtt_us >> 2) as u64 * self.reo_wnd_steps as u64;
        window.min((inputs.srtt_us_x8 >> 3) as u64) as u32
    }

    /// `tcp_rack_update_reo_wnd`: a D-SACK since the window last grew widens
    /// it by a step for the next 16 recoveries; after those it falls back to
    /// one step. `prior_delivered` is the ACKed data's `tp->delivered` at
    /// send time, `delivered` the current count.
    pub fn update_reo_wnd(&mut self, prior_delivered: u32, delivered: u32) {
        if prior_delivered == 0 {
            return;
        }
        if before(prior_delivered, self.last_delivered) {
            self.dsack_seen = false; // the D-SACK is older than the last step
        }
        if self.dsack_seen {
            self.reo_wnd_steps = self.reo_wnd_steps.saturating_add(1);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = TCP_RACK_RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }

    /// A recovery ended without undo: one fewer recovery keeps the window wide.
    pub fn on_recovery_done(&mut self) {
        self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
    }

    /// A D-SACK undid a recovery: keep the window for one more.
    pub fn on_dsack_undo(&mut self) {
        self.reo_wnd_persist = (self.reo_wnd_persist + 1).min(TCP_RACK_RECOVERY_THRESH);
    }

    /// `tcp_rack_detect_loss` (RFC 8985 §6.2 step 5): in send-time order,
    /// mark lost every segment sent before the RACK segment that has waited
    /// longer than its RTT + `reo_wnd`; returns (newly counted losses, the
    /// longest remaining wait in µs, 0 if none, for the reordering timer).
    pub fn detect_loss(&self, sb: &mut Scoreboard, reo_wnd: u32, now_us: u64) -> (u32, u32) {
        sb.prune_tsorted();
        let mut timeout = 0u32;
        let mut lost = 0u32;
        let mut k = 0;
        while k < sb.tsorted.len() {
            let (t, seq) = sb.tsorted[k];
            k += 1;
            let Some(idx) = sb.tsorted_live(t, seq) else {
                continue;
            };
            let s = sb.q[idx];
            // skip ones marked lost but not yet retransmitted
            if s.sacked & LOST != 0 && s.sacked & SACKED_RETRANS == 0 {
                continue;
            }
            if !sent_after(self.mstamp, s.xmit_us, self.end_seq, s.end_seq) {
                break;
            }
            let waited = now_us.saturating_sub(s.xmit_us) as i64;
            let remaining = self.rtt_us as i64 + reo_wnd as i64 - waited;
            if remaining <= 0 {
                if sb.mark_lost(idx) {
                    lost += 1;
                }
                sb.q[idx].in_tsorted = false;
            } else {
                timeout = timeout.max(remaining as u32);
            }
        }
        sb.prune_tsorted();
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
        let (lost, timeout) = rack.detect_loss(&mut sb, 0, 21_300);
        assert_eq!((lost, timeout), (3, 0));
        assert_eq!(sb.lost_out, 3);
        assert_eq!(sb.q[4].sacked, 0, "sent after the RACK segment");
        // with a 1 ms reordering window nothing more is lost, segment 4 is not a candidate
        let (lost, timeout) = rack.detect_loss(&mut sb, 1000, 21_300);
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
        let (lost, timeout) = rack.detect_loss(&mut sb, 5000, 21_200);
        assert_eq!(lost, 0);
        assert_eq!(timeout, 4900);
    }

    const INPUTS: ReoWndInputs = ReoWndInputs {
        reordering_seen: true,
        in_recovery: false,
        sacked_out: 0,
        reordering: 3,
        min_rtt_us: 40_000,
        srtt_us_x8: 50_000 << 3,
    };

    /// RFC 8985 §6.2: reo_wnd = min(mult × min_RTT / 4, SRTT).
    #[test]
    fn the_reordering_window_is_quarters_of_min_rtt_capped_at_srtt() {
        let mut rack = Rack::default();
        assert_eq!(rack.reo_wnd(&INPUTS), 10_000);
        rack.reo_wnd_steps = 3;
        assert_eq!(rack.reo_wnd(&INPUTS), 30_000);
        rack.reo_wnd_steps = 8;
        assert_eq!(rack.reo_wnd(&INPUTS), 50_000);
    }

    /// Without reordering seen, the window closes in recovery and once
    /// DupThresh (3) segments are SACKed.
    #[test]
    fn without_reordering_the_window_closes_at_dupthresh_and_in_recovery() {
        let rack = Rack::default();
        let fresh = ReoWndInputs {
            reordering_seen: false,
            ..INPUTS
        };
        assert_eq!(
            rack.reo_wnd(&ReoWndInputs {
                sacked_out: 2,
                ..fresh
            }),
            10_000
        );
        assert_eq!(
            rack.reo_wnd(&ReoWndInputs {
                sacked_out: 3,
                ..fresh
            }),
            0
        );
        assert_eq!(
            rack.reo_wnd(&ReoWndInputs {
                in_recovery: true,
                ..fresh
            }),
            0
        );
        assert_eq!(
            rack.reo_wnd(&ReoWndInputs {
                in_recovery: true,
                ..INPUTS
            }),
            10_000
        );
    }

    /// RFC 8985 §6.2 step 4: a D-SACK widens the window a step and keeps it
    /// for 16 recoveries, after which it falls back to one step.
    #[test]
    fn a_dsack_widens_the_window_for_sixteen_recoveries() {
        let mut rack = Rack {
            dsack_seen: true,
            ..Rack::default()
        };
        rack.update_reo_wnd(100, 120);
        assert_eq!((rack.reo_wnd_steps, rack.reo_wnd_persist), (2, 16));
        assert_eq!(rack.last_delivered, 120);
        // a D-SACK for data sent before the last step does not widen again
        rack.dsack_seen = true;
        rack.update_reo_wnd(110, 130);
        assert_eq!(rack.reo_wnd_steps, 2);
        for _ in 0..16 {
            rack.update_reo_wnd(140, 150);
            assert_eq!(rack.reo_wnd_steps, 2);
            rack.on_recovery_done();
        }
        rack.update_reo_wnd(140, 150);
        assert_eq!(rack.reo_wnd_steps, 1);
    }

    #[test]
    fn rack_follows_the_latest_sent_delivered_segment() {
        let mut rack = Rack::default();
        rack.advance(false, 3_000, 1_200, 21_200, 15_000);
        assert_eq!(
            (rack.mstamp, rack.end_seq, rack.rtt_us),
            (1_200, 3_000, 20_000)
        );
        // an older segment delivered later updates the RTT but not the position
        rack.advance(false, 1_000, 1_000, 22_000, 15_000);
        assert_eq!(
            (rack.mstamp, rack.end_seq, rack.rtt_us),
            (1_200, 3_000, 21_000)
        );
        // a retransmission acked faster than min RTT is ambiguous: ignored
        rack.advanced = false;
        rack.advance(true, 5_000, 20_000, 30_000, 15_000);
        assert!(!rack.advanced);
        assert_eq!(rack.end_seq, 3_000);
    }
}
