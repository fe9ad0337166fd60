//! Delivery-rate samples (docs/semantics/tcp.md §10), a port of net/ipv4/tcp_rate.c:
//! `tcp_rate_skb_sent` snapshots the connection's delivery counters into each
//! transmitted segment, `tcp_rate_skb_delivered` picks the most recently sent
//! of the segments an ACK (s)acks, and `tcp_rate_gen` turns that into a
//! [`RateSample`] (interval = max(send phase, ACK phase), invalid below
//! min_rtt). `tcp_rate_check_app_limited` marks application-limited phases.

use super::cc::RateSample;
use super::seq::after;

/// The per-segment snapshot (`TCP_SKB_CB(skb)->tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxInfo {
    /// `tp->delivered` at transmission
    pub delivered: u32,
    /// `tp->delivered_ce` at transmission
    pub delivered_ce: u32,
    /// `tp->delivered_mstamp` at transmission, µs (0 once SACKed: used)
    pub delivered_mstamp: u64,
    /// `tp->first_tx_mstamp` at transmission, µs
    pub first_tx_mstamp: u64,
    /// the flow was application-limited when this was sent
    pub is_app_limited: bool,
    /// packets in flight just after this one was sent (`tx.in_flight` of
    /// the BBRv3 kernels, `tcp_set_tx_in_flight`)
    pub in_flight: u32,
    /// `tp->lost` when this was sent (`tx.lost`, BBRv3 kernels)
    pub lost: u32,
}

/// The connection's delivery bookkeeping (`tcp_sock` fields).
#[derive(Clone, Debug, Default)]
pub struct RateState {
    /// packets delivered (acked or sacked), `tp->delivered`
    pub delivered: u32,
    /// delivered packets that were ECE-acked, `tp->delivered_ce`
    pub delivered_ce: u32,
    /// send time of the most recently acked packet, µs
    pub first_tx_mstamp: u64,
    /// time of the latest delivery, µs
    pub delivered_mstamp: u64,
    /// `tp->app_limited`: delivered count at which app-limited ends, 0 = not
    pub app_limited: u32,
    /// the last non-app-limited (or best app-limited) sample, for
    /// `tcpi_delivery_rate`
    pub rate_delivered: u32,
    pub rate_interval_us: u32,
    pub rate_app_limited: bool,
}

/// A rate sample under construction (`struct rate_sample` plus the fields
/// tcp_rate.c keeps in it that congestion control does not read).
#[derive(Clone, Copy, Debug)]
pub struct RateAcc {
    pub prior_mstamp: u64,
    pub prior_delivered: u32,
    pub prior_delivered_ce: u32,
    pub delivered: i32,
    pub delivered_ce: i32,
    pub interval_us: i64,
    pub snd_interval_us: u32,
    pub rcv_interval_us: u32,
    pub rtt_us: i64,
    pub losses: i32,
    pub acked_sacked: u32,
    pub prior_in_flight: u32,
    pub last_end_seq: u32,
    pub is_app_limited: bool,
    pub is_retrans: bool,
    pub is_ack_delayed: bool,
    /// `tx.in_flight` of the sampled segment
    pub tx_in_flight: u32,
    /// `tx.lost` of the sampled segment
    pub prior_lost: u32,
}

impl Default for RateAcc {
    /// `struct rate_sample rs = { .prior_delivered = 0 }` in `tcp_ack`.
    fn default() -> Self {
        RateAcc {
            prior_mstamp: 0,
            prior_delivered: 0,
            prior_delivered_ce: 0,
            delivered: 0,
            delivered_ce: 0,
            interval_us: 0,
            snd_interval_us: 0,
            rcv_interval_us: 0,
            rtt_us: -1,
            losses: 0,
            acked_sacked: 0,
            prior_in_flight: 0,
            last_end_seq: 0,
            is_app_limited: false,
            is_retrans: false,
            is_ack_delayed: false,
            tx_in_flight: 0,
            prior_lost: 0,
        }
    }
}

impl RateAcc {
    /// The sample as congestion control sees it; `lost` is `tp->lost` now
    /// (`rs->lost` = packets marked lost since the sampled one was sent,
    /// `rs.prior_lost` being its `tx.lost`: tcp_rate.c of google/bbr v3).
    pub fn to_cc(&self, lost: u32) -> RateSample {
        RateSample {
            prior_mstamp: self.prior_mstamp,
            prior_delivered: self.prior_delivered,
            delivered: self.delivered,
            interval_us: self.interval_us,
            snd_interval_us: self.snd_interval_us,
            rcv_interval_us: self.rcv_interval_us,
            rtt_us: self.rtt_us,
            losses: self.losses,
            acked_sacked: self.acked_sacked,
            prior_in_flight: self.prior_in_flight,
            is_app_limited: self.is_app_limited,
            is_retrans: self.is_retrans,
            is_ack_delayed: self.is_ack_delayed,
            ece_delta: 0,
            tx_in_flight: self.tx_in_flight,
            // as the BBRv3 kernels' tcp_rate_gen: tp->lost − rs->prior_lost,
            // the latter 0 when no segment was sampled
            lost: lost.wrapping_sub(self.prior_lost) as i32,
            delivered_ce: self.delivered_ce,
            is_ece: false,
        }
    }
}

/// `tcp_skb_sent_after(t1, t2, seq1, seq2)`.
#[inline]
pub fn sent_after(t1: u64, t2: u64, seq1: u32, seq2: u32) -> bool {
    t1 > t2 || (t1 == t2 && after(seq1, seq2))
}

impl RateState {
    /// `tcp_rate_skb_sent`: snapshot for a segment sent at `xmit_us`;
    /// `packets_out` is the count before this segment is added,
    /// `in_flight` the packets in flight with it (`tcp_set_tx_in_flight`)
    /// and `lost` the connection's `tp->lost`.
    pub fn on_sent(&mut self, packets_out: u32, xmit_us: u64, in_flight: u32, lost: u32) -> TxInfo {
        if packets_out == 0 {
            self.first_tx_mstamp = xmit_us;
            self.delivered_mstamp = xmit_us;
        }
        TxInfo {
            delivered: self.delivered,
            delivered_ce: self.delivered_ce,
            delivered_mstamp: self.delivered_mstamp,
            first_tx_mstamp: self.first_tx_mstamp,
            is_app_limited: self.app_limited != 0,
            in_flight,
            lost,
        }
    }

    /// `tcp_rate_skb_delivered`: a segment (sent at `xmit_us`, ending at
    /// `end_seq`) was (s)acked. Returns true if its snapshot must be voided
    /// (it was SACKed: the cumulative ACK must not count it again).
    pub fn on_delivered(
        &mut self,
        rs: &mut RateAcc,
        tx: &TxInfo,
        xmit_us: u64,
        end_seq: u32,
        retrans: bool,
        sacked: bool,
    ) -> bool {
        if tx.delivered_mstamp == 0 {
            return false;
        }
        if rs.prior_delivered == 0
            || sent_after(xmit_us, self.first_tx_mstamp, end_seq, rs.last_end_seq)
        {
            rs.prior_delivered_ce = tx.delivered_ce;
            rs.prior_delivered = tx.delivered;
            rs.prior_mstamp = tx.delivered_mstamp;
            rs.is_app_limited = tx.is_app_limited;
            rs.is_retrans = retrans;
            rs.tx_in_flight = tx.in_flight;
            rs.prior_lost = tx.lost;
            rs.last_end_seq = end_seq;
            self.first_tx_mstamp = xmit_us;
            rs.interval_us = xmit_us.saturating_sub(tx.first_tx_mstamp) as i64;
        }
        sacked
    }

    /// `tcp_rate_gen`: finish the sample for an ACK that delivered
    /// `delivered` packets and marked `lost` lost.
    pub fn gen(
        &mut self,
        rs: &mut RateAcc,
        delivered: u32,
        lost: u32,
        is_sack_reneg: bool,
        now_us: u64,
        min_rtt_us: u32,
    ) {
        if self.app_limited != 0 && after(self.delivered, self.app_limited) {
            self.app_limited = 0;
        }
        if delivered != 0 {
            self.delivered_mstamp = now_us;
        }
        rs.acked_sacked = delivered;
        rs.losses = lost as i32;
        if rs.prior_mstamp == 0 || is_sack_reneg {
            rs.delivered = -1;
            rs.interval_us = -1;
            return;
        }
        rs.delivered = self.delivered.wrapping_sub(rs.prior_delivered) as i32;
        rs.delivered_ce = self.delivered_ce.wrapping_sub(rs.prior_delivered_ce) as i32;
        let snd_us = rs.interval_us;
        let ack_us = now_us.saturating_sub(rs.prior_mstamp) as i64;
        rs.interval_us = snd_us.max(ack_us);
        rs.snd_interval_us = snd_us.max(0) as u32;
        rs.rcv_interval_us = ack_us as u32;
        if rs.interval_us < min_rtt_us as i64 {
            rs.interval_us = -1;
            return;
        }
        // remember the last non-app-limited or the highest app-limited rate
        if !rs.is_app_limited
            || (rs.delivered as u64) * (self.rate_interval_us as u64)
                >= (self.rate_delivered as u64) * (rs.interval_us as u64)
        {
            self.rate_delivered = rs.delivered as u32;
            self.rate_interval_us = rs.interval_us as u32;
            self.rate_app_limited = rs.is_app_limited;
        }
    }

    /// `tcp_rate_check_app_limited`: called when the application writes;
    /// `unsent` bytes are queued but not sent.
    pub fn check_app_limited(
        &mut self,
        unsent: u32,
        mss: u32,
        in_flight: u32,
        cwnd: u32,
        lost_out: u32,
        retrans_out: u32,
    ) {
        if unsent < mss && in_flight < cwnd && lost_out <= retrans_out {
            let v = self.delivered.wrapping_add(in_flight);
            self.app_limited = if v != 0 { v } else { 1 };
        }
    }

    /// `tcpi_delivery_rate`, bytes/s.
    pub fn delivery_rate(&self, mss: u32) -> u64 {
        if self.rate_delivered != 0 && self.rate_interval_us != 0 {
            self.rate_delivered as u64 * mss as u64 * 1_000_000 / self.rate_interval_us as u64
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_uses_the_longer_of_send_and_ack_phases() {
        let mut st = RateState::default();
        // ten packets sent 100 µs apart from t = 1000 µs, first with nothing in flight
        let mut tx = Vec::new();
        for i in 0..10u64 {
            tx.push(st.on_sent(i as u32, 1000 + 100 * i, 0, 0));
        }
        assert_eq!(tx[0].first_tx_mstamp, 1000);
        assert_eq!(tx[9].delivered_mstamp, 1000);
        // all ten acked at t = 21 000 µs
        let mut rs = RateAcc::default();
        for (i, t) in tx.iter().enumerate() {
            st.delivered += 1;
            st.on_delivered(
                &mut rs,
                t,
                1000 + 100 * i as u64,
                1448 * (i as u32 + 1),
                false,
                false,
            );
        }
        st.gen(&mut rs, 10, 0, false, 21_000, 20_000);
        assert_eq!(rs.delivered, 10);
        assert_eq!(rs.snd_interval_us, 900);
        assert_eq!(rs.rcv_interval_us, 20_000);
        assert_eq!(rs.interval_us, 20_000);
        // 10 × 1448 B in 20 ms = 724 000 B/s
        assert_eq!(st.delivery_rate(1448), 724_000);
    }

    #[test]
    fn a_sample_shorter_than_min_rtt_is_invalid() {
        let mut st = RateState::default();
        let t = st.on_sent(0, 1000, 0, 0);
        let mut rs = RateAcc::default();
        st.delivered += 1;
        st.on_delivered(&mut rs, &t, 1000, 1448, false, false);
        st.gen(&mut rs, 1, 0, false, 1500, 20_000);
        assert_eq!(rs.interval_us, -1);
        assert_eq!(st.delivery_rate(1448), 0);
    }

    #[test]
    fn app_limited_marks_until_the_bubble_is_delivered() {
        let mut st = RateState {
            delivered: 100,
            ..RateState::default()
        };
        st.check_app_limited(0, 1448, 5, 10, 0, 0);
        assert_eq!(st.app_limited, 105);
        let t = st.on_sent(5, 2000, 0, 0);
        assert!(t.is_app_limited);
        st.delivered = 106;
        let mut rs = RateAcc::default();
        st.gen(&mut rs, 1, 0, false, 3000, 10);
        assert_eq!(st.app_limited, 0);
    }
}
