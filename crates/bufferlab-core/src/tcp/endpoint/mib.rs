//! The SNMP and `TcpExt` counters one connection raises, counted at the
//! points Linux counts them (net/ipv4/tcp_input.c, tcp_output.c,
//! tcp_timer.c, tcp.c `tcp_set_state`; names as net/ipv4/proc.c prints them
//! in /proc/net/snmp and /proc/net/netstat). A node adds them up over its
//! sockets (app/sockets.rs); the node's own counters (segments to no socket,
//! resets, IP, ICMP, UDP) are the engine's.
//!
//! Only what the model really counts is here. Absent on purpose: the header
//! prediction counters (`TCPHPHits`, `TCPHPAcks`, `TCPPureAcks`: every ACK
//! takes the slow path here, so a count would not be Linux's split),
//! `TCPLostRetransmit`, the reordering counters, `TW` (TIME-WAIT is not held
//! once the application is done with a connection), and everything about
//! features the model lacks (SYN cookies, Fast Open, MD5, memory pressure).

use super::{TcpEndpoint, TcpState};

crate::counters::mib_counters! {
    /// Counters of one connection (see the module doc), 32 bits as the
    /// socket's own counters are (`tcp_info`).
    TcpMib(u32) =>
    /// A node's sum of its connections' counters.
    TcpTotals {
        active_opens => "Tcp" "ActiveOpens",
        passive_opens => "Tcp" "PassiveOpens",
        attempt_fails => "Tcp" "AttemptFails",
        estab_resets => "Tcp" "EstabResets",
        out_segs => "Tcp" "OutSegs",
        retrans_segs => "Tcp" "RetransSegs",
        delayed_acks => "TcpExt" "DelayedACKs",
        reno_recovery => "TcpExt" "TCPRenoRecovery",
        sack_recovery => "TcpExt" "TCPSackRecovery",
        full_undo => "TcpExt" "TCPFullUndo",
        partial_undo => "TcpExt" "TCPPartialUndo",
        dsack_undo => "TcpExt" "TCPDSACKUndo",
        loss_undo => "TcpExt" "TCPLossUndo",
        reno_failures => "TcpExt" "TCPRenoFailures",
        sack_failures => "TcpExt" "TCPSackFailures",
        loss_failures => "TcpExt" "TCPLossFailures",
        fast_retrans => "TcpExt" "TCPFastRetrans",
        slow_start_retrans => "TcpExt" "TCPSlowStartRetrans",
        timeouts => "TcpExt" "TCPTimeouts",
        loss_probes => "TcpExt" "TCPLossProbes",
        loss_probe_recovery => "TcpExt" "TCPLossProbeRecovery",
        reno_recovery_fail => "TcpExt" "TCPRenoRecoveryFail",
        sack_recovery_fail => "TcpExt" "TCPSackRecoveryFail",
        dsack_old_sent => "TcpExt" "TCPDSACKOldSent",
        dsack_ofo_sent => "TcpExt" "TCPDSACKOfoSent",
        dsack_recv => "TcpExt" "TCPDSACKRecv",
        dsack_ofo_recv => "TcpExt" "TCPDSACKOfoRecv",
        spurious_rtos => "TcpExt" "TCPSpuriousRTOs",
        ofo_queue => "TcpExt" "TCPOFOQueue",
        syn_retrans => "TcpExt" "TCPSynRetrans",
        orig_data_sent => "TcpExt" "TCPOrigDataSent",
        delivered => "TcpExt" "TCPDelivered",
        delivered_ce => "TcpExt" "TCPDeliveredCE",
        hystart_train_detect => "TcpExt" "TCPHystartTrainDetect",
        hystart_train_cwnd => "TcpExt" "TCPHystartTrainCwnd",
        hystart_delay_detect => "TcpExt" "TCPHystartDelayDetect",
        hystart_delay_cwnd => "TcpExt" "TCPHystartDelayCwnd",
        abort_on_close => "TcpExt" "TCPAbortOnClose",
        abort_on_data => "TcpExt" "TCPAbortOnData",
    }
}

impl TcpMib {
    /// `tcp_set_state` and `tcp_done`'s counters for a change of state:
    /// `PassiveOpens` when the passive open completes (the child socket of
    /// `tcp_create_openreq_child`), `AttemptFails` when an opening
    /// connection dies, `EstabResets` when an established one does.
    /// (`ActiveOpens` is `tcp_connect`'s.)
    pub fn on_state_change(&mut self, old: TcpState, new: TcpState) {
        match (old, new) {
            (TcpState::SynReceived, TcpState::Established) => self.passive_opens += 1,
            (TcpState::SynSent | TcpState::SynReceived, TcpState::Closed) => {
                self.attempt_fails += 1
            }
            (TcpState::Established | TcpState::CloseWait, TcpState::Closed) => {
                self.estab_resets += 1
            }
            _ => {}
        }
    }
}

impl TcpEndpoint {
    /// This connection's counters as the node adds them up.
    pub fn mib(&self) -> TcpMib {
        // OutSegs counts every segment sent except retransmitted data, SYN
        // and FIN (`__tcp_transmit_skb`); a retransmitted SYN-ACK is counted
        // by both (`tcp_make_synack`, `tcp_rtx_synack`)
        // TCPDelivered and TCPDeliveredCE move with tp->delivered and
        // tp->delivered_ce (`tcp_count_delivered`); CUBIC counts its HyStart exits
        let data_rtx = self.mib.retrans_segs - self.synack_retrans;
        let hystart = self.cs.hystart;
        TcpMib {
            out_segs: self.segs_out.saturating_sub(data_rtx),
            delivered: self.rate.delivered,
            delivered_ce: self.rate.delivered_ce,
            hystart_train_detect: hystart.train_detect,
            hystart_train_cwnd: hystart.train_cwnd,
            hystart_delay_detect: hystart.delay_detect,
            hystart_delay_cwnd: hystart.delay_cwnd,
            ..self.mib
        }
    }

    /// `CurrEstab` counts connections in ESTABLISHED or CLOSE-WAIT.
    pub fn counts_as_established(&self) -> bool {
        matches!(self.state, TcpState::Established | TcpState::CloseWait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_changes_count_opens_and_failures_once_each() {
        let mut m = TcpMib::default();
        m.on_state_change(TcpState::SynReceived, TcpState::Established);
        m.on_state_change(TcpState::SynSent, TcpState::Closed);
        m.on_state_change(TcpState::SynReceived, TcpState::Closed);
        m.on_state_change(TcpState::CloseWait, TcpState::Closed);
        m.on_state_change(TcpState::Established, TcpState::FinWait1);
        m.on_state_change(TcpState::TimeWait, TcpState::Closed);
        assert_eq!(
            (m.passive_opens, m.attempt_fails, m.estab_resets),
            (1, 2, 1)
        );
    }

    #[test]
    fn entries_name_every_counter_once_in_its_group() {
        let m = TcpMib {
            retrans_segs: 3,
            ..TcpMib::default()
        };
        let all: Vec<_> = m.entries().collect();
        assert_eq!(all[0], ("Tcp", "ActiveOpens", 0));
        assert!(all.contains(&("Tcp", "RetransSegs", 3)));
        let mut names: Vec<_> = all.iter().map(|e| e.1).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all.len());
        let mut total = TcpTotals::default();
        total.add(&m);
        total.add(&m);
        assert_eq!(total.retrans_segs, 6);
        assert_eq!(total.entries().count(), all.len());
    }
}
