//! `highspeed` — HighSpeed TCP as Linux runs it (net/ipv4/tcp_highspeed.c:
//! `hstcp_init`, `hstcp_cong_avoid`, `hstcp_ssthresh`; RFC 3649;
//! docs/semantics/tcp.md §18.4).
//!
//! Units: packets. The response function is RFC 3649's table (Appendix B),
//! 72 rows of (cwnd bound, decrease factor · 256). Above ssthresh each ACK
//! — whatever it acks — adds `ai + 1` to `snd_cwnd_cnt`, where `ai` is the
//! row whose bound is the first ≥ cwnd; cwnd grows by one when the counter
//! reaches cwnd (a(w) = ai + 1 packets per RTT). On loss cwnd loses
//! cwnd·md/256 (0.5 below 38 packets, down to 0.1 at 84 035). The clamp is
//! lowered to 2³²/128 so the product never overflows. Undo is Reno's.

use super::{tcp_slow_start, CcProfile, CcSock, CongestionOps};
use crate::rng::ComponentRng;

/// RFC 3649 Appendix B: (cwnd upper bound of the row, md << 8).
const AIMD: [(u32, u32); 72] = [
    (38, 128),
    (118, 112),
    (221, 104),
    (347, 98),
    (495, 93),
    (663, 89),
    (851, 86),
    (1058, 83),
    (1284, 81),
    (1529, 78),
    (1793, 76),
    (2076, 74),
    (2378, 72),
    (2699, 71),
    (3039, 69),
    (3399, 68),
    (3778, 66),
    (4177, 65),
    (4596, 64),
    (5036, 62),
    (5497, 61),
    (5979, 60),
    (6483, 59),
    (7009, 58),
    (7558, 57),
    (8130, 56),
    (8726, 55),
    (9346, 54),
    (9991, 53),
    (10661, 52),
    (11358, 52),
    (12082, 51),
    (12834, 50),
    (13614, 49),
    (14424, 48),
    (15265, 48),
    (16137, 47),
    (17042, 46),
    (17981, 45),
    (18955, 45),
    (19965, 44),
    (21013, 43),
    (22101, 43),
    (23230, 42),
    (24402, 41),
    (25618, 41),
    (26881, 40),
    (28193, 39),
    (29557, 39),
    (30975, 38),
    (32450, 38),
    (33986, 37),
    (35586, 36),
    (37253, 36),
    (38992, 35),
    (40808, 35),
    (42707, 34),
    (44694, 33),
    (46776, 33),
    (48961, 32),
    (51258, 32),
    (53677, 31),
    (56230, 30),
    (58932, 30),
    (61799, 29),
    (64851, 28),
    (68113, 28),
    (71617, 27),
    (75401, 26),
    (79517, 26),
    (84035, 25),
    (89053, 24),
];

/// `struct hstcp`: the current table row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Highspeed {
    ai: u32,
}

impl Highspeed {
    /// The current row (a(w) − 1).
    pub fn ai(&self) -> u32 {
        self.ai
    }
}

impl CongestionOps for Highspeed {
    const NAME: &'static str = "highspeed";

    fn create(_profile: CcProfile, _rng: ComponentRng) -> Highspeed {
        Highspeed::default()
    }

    /// `hstcp_init`.
    fn init(&mut self, tp: &mut CcSock) {
        self.ai = 0;
        tp.snd_cwnd_clamp = tp.snd_cwnd_clamp.min(u32::MAX / 128);
    }

    /// `hstcp_ssthresh`: cwnd − cwnd·md(ai)/256, at least 2.
    fn ssthresh(&mut self, tp: &CcSock) -> u32 {
        let md = AIMD[self.ai as usize].1;
        tp.snd_cwnd
            .wrapping_sub(tp.snd_cwnd.wrapping_mul(md) >> 8)
            .max(2)
    }

    /// `hstcp_cong_avoid`.
    fn cong_avoid(&mut self, tp: &mut CcSock, _ack: u32, acked: u32) {
        if !tp.is_cwnd_limited {
            return;
        }
        if tp.in_slow_start() {
            tcp_slow_start(tp, acked);
            return;
        }
        let cwnd = tp.snd_cwnd;
        let last = AIMD.len() as u32 - 1;
        if cwnd > AIMD[self.ai as usize].0 {
            while cwnd > AIMD[self.ai as usize].0 && self.ai < last {
                self.ai += 1;
            }
        } else if self.ai > 0 && cwnd <= AIMD[self.ai as usize - 1].0 {
            while self.ai > 0 && cwnd <= AIMD[self.ai as usize - 1].0 {
                self.ai -= 1;
            }
        }
        if tp.snd_cwnd < tp.snd_cwnd_clamp {
            tp.snd_cwnd_cnt = tp.snd_cwnd_cnt.wrapping_add(self.ai + 1);
            if tp.snd_cwnd_cnt >= tp.snd_cwnd {
                tp.snd_cwnd_cnt -= tp.snd_cwnd;
                tp.snd_cwnd += 1;
            }
        }
    }

    fn metrics(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("ai", self.ai as f64));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(cwnd: u32) -> CcSock {
        CcSock {
            snd_cwnd: cwnd,
            snd_ssthresh: 2,
            is_cwnd_limited: true,
            ..CcSock::default()
        }
    }

    /// The row is the first bound ≥ cwnd: 38 → 0, 39 → 1, 118 → 1,
    /// 119 → 2, 1000 → 7 (851 < 1000 ≤ 1058), beyond 84 035 → 71.
    #[test]
    fn table_lookup() {
        for (cwnd, ai) in [
            (38, 0),
            (39, 1),
            (118, 1),
            (119, 2),
            (1000, 7),
            (100_000, 71),
        ] {
            let mut h = Highspeed::default();
            let mut tp = ca(cwnd);
            h.cong_avoid(&mut tp, 0, 1);
            assert_eq!(h.ai, ai, "cwnd {cwnd}");
        }
        // and back down when cwnd falls
        let mut h = Highspeed { ai: 7 };
        h.cong_avoid(&mut ca(200), 0, 1);
        assert_eq!(h.ai, 2);
    }

    /// At cwnd 1000 (row 7) each ACK adds 8: +1 packet every 125 ACKs,
    /// whatever each ACK acked.
    #[test]
    fn additive_increase_is_ai_plus_one_per_ack() {
        let mut h = Highspeed::default();
        let mut tp = ca(1000);
        for _ in 0..124 {
            h.cong_avoid(&mut tp, 0, 2);
        }
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1000, 992));
        h.cong_avoid(&mut tp, 0, 2);
        assert_eq!((tp.snd_cwnd, tp.snd_cwnd_cnt), (1001, 0));
    }

    /// cwnd 1000 at row 7 (md 83): 1000 − 83 000/256 = 1000 − 324 = 676;
    /// cwnd 30 at row 0: halved.
    #[test]
    fn decrease_follows_the_table() {
        assert_eq!(Highspeed { ai: 7 }.ssthresh(&ca(1000)), 676);
        assert_eq!(Highspeed { ai: 0 }.ssthresh(&ca(30)), 15);
        assert_eq!(Highspeed { ai: 71 }.ssthresh(&ca(100_000)), 90_625);
        assert_eq!(Highspeed { ai: 0 }.ssthresh(&ca(3)), 2);
        let mut tp = CcSock::default();
        Highspeed::default().init(&mut tp);
        assert_eq!(tp.snd_cwnd_clamp, 33_554_431);
    }
}
