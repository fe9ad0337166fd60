//! Proportional Rate Reduction (RFC 6937; net/ipv4/tcp_input.c
//! `tcp_cwnd_reduction`, docs/semantics/tcp.md §9.4): during a cwnd reduction, each ACK
//! lets the sender put `sndcnt` segments on the wire so that in-flight data
//! falls smoothly from the pre-reduction cwnd (`RecoverFS`) to ssthresh.
//!
//! Profiles differ below ssthresh: lab2019 slow-starts back up only after
//! retransmitted data is acked without a lost retransmission, else it is
//! conservative (`min(delta, newly_acked_sacked)`); modern follows RFC 6937
//! §3's reduction bound: slow start when SND.UNA advanced and nothing was
//! newly lost.

use crate::tcp::cc::CcProfile;

/// PRR's per-episode counters (`tp->prr_delivered`, `tp->prr_out`), segments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Prr {
    /// delivered to the receiver since the reduction began (`prr_delivered`)
    pub delivered: u32,
    /// sent since the reduction began (`prr_out`)
    pub out: u32,
}

/// What one ACK during a reduction tells PRR.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrrAck {
    /// segments newly cumulatively acked or SACKed (`DeliveredData`)
    pub newly_acked_sacked: i32,
    /// segments newly marked lost
    pub newly_lost: i32,
    /// the ACK advanced SND.UNA (`FLAG_SND_UNA_ADVANCED`)
    pub snd_una_advanced: bool,
    /// retransmitted data was acked and no retransmission was lost
    /// (`FLAG_RETRANS_DATA_ACKED` without `FLAG_LOST_RETRANS`)
    pub retrans_acked_none_lost: bool,
}

impl Prr {
    /// A reduction begins (`tcp_init_cwnd_reduction`).
    pub fn start(&mut self) {
        *self = Prr::default();
    }

    /// `segs` segments left during the reduction.
    pub fn on_sent(&mut self, segs: u32) {
        self.out += segs;
    }

    /// The cwnd after `ack`: what is in flight plus `sndcnt` (RFC 6937 §3),
    /// or `None` when the ACK delivered nothing or no reduction is under
    /// way (`prior_cwnd` 0).
    pub fn cwnd_on_ack(
        &mut self,
        profile: CcProfile,
        prior_cwnd: u32,
        ssthresh: u32,
        in_flight: u32,
        ack: &PrrAck,
    ) -> Option<u32> {
        if ack.newly_acked_sacked <= 0 || prior_cwnd == 0 {
            return None;
        }
        let in_flight = in_flight as i64;
        let delta = ssthresh as i64 - in_flight;
        self.delivered = self.delivered.wrapping_add(ack.newly_acked_sacked as u32);
        let delivered = self.delivered as i64;
        let out = self.out as i64;
        let newly = ack.newly_acked_sacked as i64;
        let sndcnt = if delta < 0 {
            // proportional part: CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out
            let dividend = ssthresh as u64 * self.delivered as u64 + prior_cwnd as u64 - 1;
            (dividend / prior_cwnd as u64) as i64 - out
        } else {
            match profile {
                CcProfile::Modern => {
                    let mut limit = (delivered - out).max(newly);
                    if ack.snd_una_advanced && ack.newly_lost == 0 {
                        limit += 1;
                    }
                    delta.min(limit)
                }
                CcProfile::Lab2019 if ack.retrans_acked_none_lost => {
                    delta.min((delivered - out).max(newly) + 1)
                }
                CcProfile::Lab2019 => delta.min(newly),
            }
        };
        // the first ACK of a reduction always allows the fast retransmit
        let sndcnt = sndcnt.max(if self.out > 0 { 0 } else { 1 });
        Some((in_flight + sndcnt).max(0) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(newly: i32) -> PrrAck {
        PrrAck {
            newly_acked_sacked: newly,
            ..PrrAck::default()
        }
    }

    /// RFC 6937's halving from RecoverFS 20 to ssthresh 10 with one SACK per
    /// ACK and pipe above ssthresh: CEIL(10 * delivered / 20) - out allows
    /// one segment every other ACK, the first one at once (the retransmission).
    #[test]
    fn above_ssthresh_prr_sends_one_segment_per_two_delivered() {
        let mut prr = Prr::default();
        prr.start();
        let mut in_flight = 19;
        let mut sndcnts = Vec::new();
        for _ in 0..8 {
            in_flight -= 1; // one more segment left the network
            let cwnd = prr
                .cwnd_on_ack(CcProfile::Modern, 20, 10, in_flight, &ack(1))
                .unwrap();
            let sndcnt = cwnd - in_flight;
            prr.on_sent(sndcnt);
            in_flight += sndcnt;
            sndcnts.push(sndcnt);
        }
        assert_eq!(sndcnts, [1, 0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(
            prr,
            Prr {
                delivered: 8,
                out: 4
            }
        );
    }

    /// Below ssthresh (delta = 10 - 6 = 4, prr_delivered - prr_out = 12 - 9):
    /// modern slow-starts by the bound `max(3, 1) + 1` when SND.UNA advanced
    /// without new loss, else `max(3, 1)`; lab2019 sends only what was
    /// delivered unless retransmitted data was acked cleanly.
    #[test]
    fn below_ssthresh_the_reduction_bound_depends_on_profile_and_ack() {
        let run = |profile, a: PrrAck| {
            let mut prr = Prr {
                delivered: 11,
                out: 9,
            };
            prr.cwnd_on_ack(profile, 20, 10, 6, &a).unwrap()
        };
        let advanced = PrrAck {
            snd_una_advanced: true,
            ..ack(1)
        };
        assert_eq!(run(CcProfile::Modern, advanced), 6 + 4);
        assert_eq!(run(CcProfile::Modern, ack(1)), 6 + 3);
        let lost = PrrAck {
            newly_lost: 1,
            ..advanced
        };
        assert_eq!(run(CcProfile::Modern, lost), 6 + 3);
        assert_eq!(run(CcProfile::Lab2019, advanced), 6 + 1);
        let clean_retrans = PrrAck {
            retrans_acked_none_lost: true,
            ..ack(1)
        };
        assert_eq!(run(CcProfile::Lab2019, clean_retrans), 6 + 4);
    }

    #[test]
    fn an_ack_that_delivers_nothing_leaves_cwnd_alone() {
        let mut prr = Prr::default();
        assert_eq!(
            prr.cwnd_on_ack(CcProfile::Modern, 20, 10, 15, &ack(0)),
            None
        );
        assert_eq!(prr.cwnd_on_ack(CcProfile::Modern, 0, 10, 15, &ack(1)), None);
        assert_eq!(prr.delivered, 0);
    }

    /// With pipe at ssthresh lab2019's conservative bound `min(delta, 1)` is
    /// 0, yet the first ACK of a reduction still lets the fast retransmit out.
    #[test]
    fn the_first_ack_of_a_reduction_always_allows_one_segment() {
        let mut prr = Prr::default();
        assert_eq!(
            prr.cwnd_on_ack(CcProfile::Lab2019, 20, 10, 10, &ack(1)),
            Some(11)
        );
        prr.on_sent(1);
        assert_eq!(
            prr.cwnd_on_ack(CcProfile::Lab2019, 20, 10, 10, &ack(1)),
            Some(10)
        );
    }
}
