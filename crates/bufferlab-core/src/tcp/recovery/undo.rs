//! Undo of a spurious cwnd reduction (net/ipv4/tcp_input.c `tcp_init_undo`,
//! `tcp_may_undo`, `tcp_try_undo_*`; Eifel detection RFC 3522 via echoed
//! timestamps, D-SACK accounting RFC 2883 §5 / RFC 3708): the bookkeeping
//! that decides whether every retransmission of an episode was needless.

use crate::tcp::seq::after;

/// Undo bookkeeping of one recovery episode (`tp->undo_marker`,
/// `tp->undo_retrans`, `tp->prior_ssthresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Undo {
    /// SND.UNA when the episode began; 0 = nothing to undo
    pub marker: u32,
    /// retransmissions not yet shown needless by a D-SACK; -1 = none sent
    pub retrans: i32,
    /// ssthresh to restore on undo (0 = none saved, e.g. after ECN)
    pub prior_ssthresh: u32,
}

impl Default for Undo {
    fn default() -> Self {
        Undo {
            marker: 0,
            retrans: -1,
            prior_ssthresh: 0,
        }
    }
}

impl Undo {
    /// An episode begins at `snd_una` with `retrans_out` retransmissions (and
    /// a TLP retransmission, if one is out) already in flight (`tcp_init_undo`).
    pub fn start(&mut self, snd_una: u32, retrans_out: u32, tlp_retrans_out: bool) {
        self.marker = snd_una;
        self.retrans = retrans_out as i32 + i32::from(tlp_retrans_out);
        if self.retrans == 0 {
            self.retrans = -1;
        }
    }

    /// An undo is possible at all.
    pub fn is_armed(&self) -> bool {
        self.marker != 0
    }

    /// A retransmission left (`tcp_retransmit_skb`).
    pub fn on_retransmit(&mut self) {
        self.retrans = self.retrans.max(0) + 1;
    }

    /// A D-SACK reports `dup_segs` needless retransmissions of data ending
    /// at `end_seq`; only data of this episode (after the marker) counts.
    pub fn on_dsack(&mut self, end_seq: u32, dup_segs: u32) {
        if self.marker != 0 && self.retrans > 0 && after(end_seq, self.marker) {
            self.retrans = (self.retrans - dup_segs as i32).max(0);
        }
    }

    /// Every retransmission of the episode was D-SACKed (`tcp_try_undo_dsack`).
    pub fn all_retransmits_dsacked(&self) -> bool {
        self.marker != 0 && self.retrans == 0
    }

    /// `tcp_may_undo`: D-SACKs covered every retransmission, or the echoed
    /// timestamp shows the originals arrived (`packet_delayed`, Eifel).
    pub fn may_undo(&self, packet_delayed: impl FnOnce() -> bool) -> bool {
        self.marker != 0 && (self.retrans == 0 || packet_delayed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsacks_for_every_retransmission_of_the_episode_allow_the_undo() {
        let mut undo = Undo::default();
        undo.start(10_000, 2, false);
        assert_eq!(undo.retrans, 2);
        undo.on_retransmit();
        assert!(!undo.all_retransmits_dsacked());
        // a D-SACK for data before the episode does not count
        undo.on_dsack(9_000, 1);
        assert_eq!(undo.retrans, 3);
        // one D-SACK covering two segments, then one more
        undo.on_dsack(13_000, 2);
        undo.on_dsack(14_000, 1);
        assert!(undo.all_retransmits_dsacked());
        assert!(undo.may_undo(|| unreachable!("no timestamp check needed")));
        // more D-SACKs than retransmissions never go negative
        undo.on_dsack(15_000, 5);
        assert_eq!(undo.retrans, 0);
    }

    #[test]
    fn with_retransmissions_unaccounted_only_a_delayed_original_allows_the_undo() {
        let mut undo = Undo::default();
        undo.start(10_000, 1, true);
        assert_eq!(undo.retrans, 2, "the TLP retransmission counts");
        assert!(!undo.may_undo(|| false));
        assert!(undo.may_undo(|| true));
        undo.marker = 0;
        assert!(
            !undo.may_undo(|| true),
            "nothing to undo once the marker is cleared"
        );
    }

    #[test]
    fn an_episode_without_retransmissions_starts_at_minus_one() {
        let mut undo = Undo::default();
        undo.start(5_000, 0, false);
        assert_eq!(undo.retrans, -1);
        // D-SACKs cannot bring it to zero before a retransmission
        undo.on_dsack(6_000, 1);
        assert!(!undo.all_retransmits_dsacked());
        undo.on_retransmit();
        assert_eq!(undo.retrans, 1);
    }
}
