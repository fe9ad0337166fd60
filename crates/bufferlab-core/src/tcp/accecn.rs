//! Accurate ECN feedback (RFC 9768, formerly draft-ietf-tcpm-accurate-ecn)
//! as Linux 6.18 implements it: include/net/tcp_ecn.h, the AccECN parts of
//! net/ipv4/tcp_input.c (`tcp_accecn_process`, `tcp_accecn_process_option`,
//! `tcp_ecn_create_request`) and net/ipv4/tcp_output.c (`tcp_ecn_send`,
//! `tcp_options_fit_accecn`, `tcp_options_write`). Written from the kernel's
//! behaviour (function names cited); no kernel code is copied.
//! docs/semantics/tcp.md §13.1 describes it in prose.
//!
//! Two feedback channels, both cumulative counters the data receiver keeps
//! and the data sender differences:
//! - the ACE field (AE, CWR, ECE; 3 bits) on every segment after the
//!   handshake carries the count of CE-marked packets received, plus 5
//!   (`TCP_ACCECN_CEP_INIT_OFFSET`), modulo 8;
//! - the AccECN option (kind 174 as Linux sends it: EE1B, ECEB, EE0B; kind
//!   172 has EE0B first) carries the payload bytes received with ECT(1),
//!   CE and ECT(0), 24 bits each, EE1B and EE0B starting at 1.
//!
//! This module holds the pure arithmetic (each function is a kernel helper
//! and has unit tests with hand-computed values) and the per-connection
//! counters ([`AccEcn`]); tcp/endpoint/ calls them at the kernel's points.

use crate::packet::{AccEcnOption, ECN_CE, ECN_ECT0, ECN_ECT1, ECN_MASK, TCPOPT_ACCECN1};

/// `TCP_ACCECN_CEP_ACE_MASK`: ACE is 3 bits.
pub const CEP_ACE_MASK: u32 = 0x7;
/// `TCP_ACCECN_ACE_MAX_DELTA`: CE packets a receiver may hold unreported
/// before it ACKs at once.
pub const ACE_MAX_DELTA: u8 = 6;
/// `TCP_ACCECN_CEP_INIT_OFFSET`: the CE packet counter starts at 5.
pub const CEP_INIT_OFFSET: u32 = 5;
/// `TCP_ACCECN_E1B_INIT_OFFSET`.
pub const E1B_INIT_OFFSET: u32 = 1;
/// `TCP_ACCECN_E0B_INIT_OFFSET`.
pub const E0B_INIT_OFFSET: u32 = 1;
/// `TCP_ACCECN_CEB_INIT_OFFSET`.
pub const CEB_INIT_OFFSET: u32 = 0;
/// `TCP_ACCECN_SAFETY_SHIFT` (SAFETY_FACTOR of the draft's Appendix A.2.2).
pub const SAFETY_SHIFT: u32 = 1;
/// `MAX_TCP_OPTION_SPACE`.
pub const MAX_TCP_OPTION_SPACE: u32 = 40;
/// `TCPOLEN_SACK_PERBLOCK`.
const SACK_PERBLOCK: u32 = 8;

/// `tp->saw_accecn_opt` values.
pub const OPT_NOT_SEEN: u8 = 0;
pub const OPT_EMPTY_SEEN: u8 = 1;
pub const OPT_COUNTER_SEEN: u8 = 2;
pub const OPT_FAIL_SEEN: u8 = 3;

/// `tp->accecn_fail_mode` bits.
pub const ACE_FAIL_SEND: u8 = 1;
pub const ACE_FAIL_RECV: u8 = 2;
pub const OPT_FAIL_SEND: u8 = 4;
pub const OPT_FAIL_RECV: u8 = 8;

/// The connection's ECN feedback mode (`tp->ecn_flags & TCP_ECN_MODE_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EcnMode {
    /// no ECN
    #[default]
    Disabled,
    /// classic ECN (RFC 3168): ECE/CWR
    Rfc3168,
    /// Accurate ECN (RFC 9768): ACE and the option
    AccEcn,
    /// the SYN asked for AccECN, no answer yet
    Pending,
}

/// `tcp_accecn_reflector_flags` / `tcp_accecn_echo_syn_ect`: the ACE a
/// SYN-ACK (or the handshake's last ACK) sends to report the ECN field the
/// SYN (SYN-ACK) arrived with (RFC 9768 Table 2 / Table 4).
pub fn reflector_ace(ect: u8) -> u8 {
    match ect & ECN_MASK {
        0 => 0b010,
        ECN_ECT1 => 0b011,
        ECN_ECT0 => 0b100,
        _ => 0b110,
    }
}

/// `tcp_accecn_extract_syn_ect`: the ECN field a reflected ACE reports
/// (undefined and reserved values read as ECT(0)/ECT(1) as the kernel's
/// table maps them).
pub fn extract_syn_ect(ace: u8) -> u8 {
    [
        ECN_ECT0, ECN_ECT1, 0, ECN_ECT1, ECN_ECT0, ECN_ECT1, ECN_CE, ECN_ECT1,
    ][(ace & 7) as usize]
}

/// `tcp_ect_transition_valid`: could a packet sent with `snt` arrive with
/// `rcv`? (Only ECT→CE and ECT(0)↔ECT(1) changes are allowed.)
pub fn ect_transition_valid(snt: u8, rcv: u8) -> bool {
    if rcv == snt {
        return true;
    }
    snt != 0 && rcv != 0 && snt != ECN_CE
}

/// `tcp_accecn_syn_requested`: a SYN asks for AccECN unless its ACE is
/// 000 (no ECN) or 011 (classic ECN) (RFC 9768 §3.1.2).
pub fn syn_requested(ace: u8) -> bool {
    ace != 0 && ace != 0b011
}

/// `tcp_accecn_optfield_to_ecnfield`: the ECN codepoint the `i`-th option
/// field counts, for kind 174 (`order1`) or 172.
pub fn optfield_to_ecnfield(i: usize, order1: bool) -> u8 {
    if order1 {
        [ECN_ECT1, ECN_CE, ECN_ECT0][i % 3]
    } else {
        [ECN_ECT0, ECN_CE, ECN_ECT1][i % 3]
    }
}

/// `tcp_ecnfield_to_accecn_optfield`: fields of a kind-174 option needed
/// to report codepoint `ecn` (0 for Not-ECT).
pub fn ecnfield_to_optfield(ecn: u8) -> u8 {
    match ecn & ECN_MASK {
        ECN_ECT1 => 1,
        ECN_CE => 2,
        ECN_ECT0 => 3,
        _ => 0,
    }
}

/// `tcp_accecn_field_init_offset`.
pub fn field_init_offset(ecn: u8) -> u32 {
    match ecn & ECN_MASK {
        ECN_ECT1 => E1B_INIT_OFFSET,
        ECN_ECT0 => E0B_INIT_OFFSET,
        _ => CEB_INIT_OFFSET,
    }
}

/// `tcp_update_ecn_bytes`: fold a 24-bit option field into the 32-bit
/// counter `cnt`; the change is read as a signed 24-bit number (a field
/// that went back reads negative). Returns the change.
pub fn update_ecn_bytes(cnt: &mut u32, wire: u32, init_offset: u32) -> i32 {
    let truncated = wire.wrapping_sub(init_offset) & 0xff_ffff;
    let delta = truncated.wrapping_sub(*cnt) & 0xff_ffff;
    // sign-extend bit 23
    let delta = ((delta << 8) as i32) >> 8;
    *cnt = cnt.wrapping_add(delta as u32);
    delta
}

/// `tcp_options_fit_accecn`: the most AccECN fields (at least `required`)
/// that fit `remaining` option bytes, padding taken over from the other
/// options up to `max_combine_saving`; a SACK option of more than 2 blocks
/// may lose blocks to make room for the `required` fields. Returns
/// `(fields, bytes added)` or `None` (no option), and updates
/// `num_sack_blocks`.
pub fn fit_accecn(
    required: u32,
    remaining: u32,
    num_sack_blocks: &mut u32,
    syn_combine_saving: Option<u32>,
) -> Option<(u32, u32)> {
    let max_combine = match syn_combine_saving {
        Some(s) => s,
        None if *num_sack_blocks > 0 => 2,
        None => 0,
    };
    let mut size: i32 = 11;
    let mut fields: i32 = 3;
    let mut rem = remaining as i32;
    let mut sack_reduce = 0;
    let required = required as i32;
    let mut aligned = 0;
    while fields >= required {
        aligned = if (size & 3) as u32 > max_combine {
            (size + 3) & !3
        } else {
            size & !3
        };
        if rem >= aligned {
            break;
        } else if fields == required && *num_sack_blocks > 2 && required > 0 {
            *num_sack_blocks -= 1;
            sack_reduce += 1;
            rem += SACK_PERBLOCK as i32;
            fields = 3;
            size = 11;
            continue;
        }
        fields -= 1;
        size -= 3;
    }
    let mut size = aligned;
    if sack_reduce > 0 {
        if fields >= required {
            size -= sack_reduce * SACK_PERBLOCK as i32;
        } else {
            *num_sack_blocks += sack_reduce as u32;
        }
    }
    if fields < required {
        return None;
    }
    Some((fields as u32, size.max(0) as u32))
}

/// `tcp_accecn_option_init`: what a first AccECN option says about the
/// path: empty, counters, or zeroed by a middlebox (EE1B/EE0B of kind 174
/// start at 1, so a 0 there means the option was rewritten).
pub fn option_init(opt: &AccEcnOption) -> u8 {
    let n = opt.n_fields();
    if n == 0 {
        return OPT_EMPTY_SEEN;
    }
    if opt.fields[0] == 0 {
        return OPT_FAIL_SEEN;
    }
    if n < 3 {
        return OPT_COUNTER_SEEN;
    }
    if opt.fields[2] == 0 {
        return OPT_FAIL_SEEN;
    }
    OPT_COUNTER_SEEN
}

/// The CE packet delta one ACK reports (`__tcp_accecn_process` after its
/// early returns): `ace` from the header, `delivered_ce` the sender's count
/// so far, `delivered_pkts` packets this ACK newly delivered, `d_ceb` the
/// CE-byte delta of the option when `opt_valid`. The ACE field wraps every
/// 8 packets: past 7 delivered packets `safe_delta` assumes the most wraps
/// possible, and the option's bytes decide between it and the plain delta
/// (RFC 9768 Appendix A.2.2's heuristic as Linux 6.18 has it).
pub fn ace_delta(
    ace: u8,
    delivered_ce: u32,
    delivered_pkts: u32,
    opt_valid: bool,
    d_ceb: u32,
    mss: u32,
) -> u32 {
    let corrected = (ace as u32).wrapping_sub(CEP_INIT_OFFSET);
    let delta = corrected.wrapping_sub(delivered_ce) & CEP_ACE_MASK;
    if delivered_pkts <= CEP_ACE_MASK {
        return delta;
    }
    let safe_delta = delivered_pkts - (delivered_pkts.wrapping_sub(delta) & CEP_ACE_MASK);
    if opt_valid {
        if d_ceb == 0 {
            return delta;
        }
        if d_ceb as u64 > delta as u64 * mss as u64 {
            return safe_delta;
        }
        if (d_ceb as u64) < (safe_delta as u64 * mss as u64) >> SAFETY_SHIFT {
            return delta;
        }
    }
    safe_delta
}

/// One connection's AccECN state: the receiver's counters (what it reports)
/// and the sender's (what it has been told). Field names are `tcp_sock`'s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccEcn {
    /// `received_ce`: CE-marked packets received (every segment, pure ACKs
    /// too; an aggregate counts its segments)
    pub received_ce: u32,
    /// `received_ce_pending`: CE packets not yet reported, at most 15
    pub received_ce_pending: u8,
    /// `received_ecn_bytes[ecn − 1]`: payload bytes received per codepoint
    pub received_ecn_bytes: [u32; 3],
    /// `accecn_minlen`: option fields the next option must carry
    pub minlen: u8,
    /// `accecn_opt_demand`: options still owed (change-triggered)
    pub opt_demand: u8,
    /// `prev_ecnfield`: codepoint of the previous segment
    pub prev_ecnfield: u8,
    /// `delivered_ecn_bytes[ecn − 1]`: bytes the peer reported
    pub delivered_ecn_bytes: [u32; 3],
    /// `est_ecnfield`: the codepoint delivered bytes are credited to when
    /// an ACK has no option (0 = unknown)
    pub est_ecnfield: u8,
    /// `saw_accecn_opt` (`OPT_*`)
    pub saw_opt: u8,
    /// `accecn_fail_mode` (`*_FAIL_*` bits)
    pub fail_mode: u8,
    /// `syn_ect_snt`: the ECN field our SYN / SYN-ACK went out with
    pub syn_ect_snt: u8,
    /// `syn_ect_rcv`: the ECN field the peer's SYN / SYN-ACK arrived with
    pub syn_ect_rcv: u8,
}

impl AccEcn {
    /// `tcp_ecn_received_counters`: count a received segment of `segs`
    /// segments and `len` payload bytes with ECN field `ecn`. Returns
    /// whether the codepoint changed (the receiver then ACKs at once).
    pub fn received(&mut self, ecn: u8, segs: u32, len: u32) -> bool {
        let ecn = ecn & ECN_MASK;
        let is_ce = ecn == ECN_CE;
        if ecn != 0 {
            let pcount = if is_ce { segs.max(1) } else { 0 };
            self.received_ce = self.received_ce.wrapping_add(pcount);
            self.received_ce_pending = (self.received_ce_pending as u32 + pcount).min(15) as u8;
            if len > 0 {
                let i = (ecn - 1) as usize;
                let old = self.received_ecn_bytes[i];
                self.received_ecn_bytes[i] = old.wrapping_add(len);
                self.minlen = self.minlen.max(ecnfield_to_optfield(ecn));
                // an option at least once per 2^22 bytes of any counter
                if (self.received_ecn_bytes[i] ^ old) & 0xffc0_0000 != 0 {
                    self.opt_demand = self.opt_demand.max(1);
                }
            }
        }
        let edge = self.prev_ecnfield != ecn;
        if edge || is_ce {
            self.prev_ecnfield = ecn;
            self.opt_demand = 2;
        }
        edge
    }

    /// The ACE to send (`tcp_accecn_set_ace`): received CE + 5, mod 8; the
    /// pending count is reported.
    pub fn take_ace(&mut self) -> u8 {
        self.received_ce_pending = 0;
        (self.received_ce.wrapping_add(CEP_INIT_OFFSET) & CEP_ACE_MASK) as u8
    }

    /// The option's 24-bit fields in kind-174 order (EE1B, ECEB, EE0B),
    /// `fields` of them (`tcp_options_write`); `synack`: the SYN-ACK's
    /// option reports zero counts.
    pub fn option(&self, fields: u32, synack: bool) -> AccEcnOption {
        let b = if synack {
            [0; 3]
        } else {
            self.received_ecn_bytes
        };
        let e1b = b[(ECN_ECT1 - 1) as usize].wrapping_add(E1B_INIT_OFFSET) & 0xff_ffff;
        let ceb = b[(ECN_CE - 1) as usize].wrapping_add(CEB_INIT_OFFSET) & 0xff_ffff;
        let e0b = b[(ECN_ECT0 - 1) as usize].wrapping_add(E0B_INIT_OFFSET) & 0xff_ffff;
        AccEcnOption {
            kind: TCPOPT_ACCECN1,
            fields_len: fields as u8,
            fields: [e1b, ceb, e0b],
        }
    }

    /// Bookkeeping once an option went out (`tcp_options_write`).
    pub fn option_sent(&mut self) {
        self.minlen = 0;
        self.opt_demand = self.opt_demand.saturating_sub(1);
    }

    /// `tcp_accecn_process_option`: fold the ACK's option (if any) into
    /// `delivered_ecn_bytes`. Returns whether the byte deltas can be used
    /// for the ACE heuristic. `delivered_bytes`: bytes this ACK delivered;
    /// `bytes_sent`: `tp->bytes_sent` (an option first seen after 2^23
    /// bytes may have wrapped unseen).
    pub fn process_option(
        &mut self,
        opt: &AccEcnOption,
        delivered_bytes: u32,
        bytes_sent: u64,
    ) -> bool {
        if self.fail_mode & OPT_FAIL_RECV != 0 {
            return false;
        }
        let est = self.est_ecnfield;
        if !opt.present() {
            if self.saw_opt == OPT_NOT_SEEN {
                if bytes_sent >= (1 << 23) - 1 {
                    self.saw_opt = OPT_FAIL_SEEN;
                    self.fail_mode |= OPT_FAIL_RECV;
                }
                return false;
            }
            if est != 0 {
                let i = (est - 1) as usize;
                self.delivered_ecn_bytes[i] =
                    self.delivered_ecn_bytes[i].wrapping_add(delivered_bytes);
                return true;
            }
            return false;
        }
        let order1 = opt.kind == TCPOPT_ACCECN1;
        if self.saw_opt < OPT_COUNTER_SEEN {
            self.saw_opt = option_init(opt);
            if self.saw_opt == OPT_FAIL_SEEN {
                self.fail_mode |= OPT_FAIL_RECV;
            }
        }
        let mut res = est != 0;
        let mut ambiguous = false;
        let mut first_changed = false;
        for i in 0..opt.n_fields() as usize {
            let ecn = optfield_to_ecnfield(i, order1);
            let cnt = &mut self.delivered_ecn_bytes[(ecn - 1) as usize];
            let delta = update_ecn_bytes(cnt, opt.fields[i], field_init_offset(ecn));
            if delta < 0 {
                res = false;
                ambiguous = true;
            }
            if delta != 0 && ecn != est {
                if !first_changed {
                    self.est_ecnfield = ecn;
                    first_changed = true;
                } else {
                    res = false;
                    ambiguous = true;
                }
            }
        }
        if ambiguous {
            self.est_ecnfield = 0;
        }
        res
    }

    /// The CE bytes the peer reported so far.
    #[inline]
    pub fn delivered_ce_bytes(&self) -> u32 {
        self.delivered_ecn_bytes[(ECN_CE - 1) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflector_and_extract_follow_rfc9768_table_2() {
        // Not-ECT 010, ECT(1) 011, ECT(0) 100, CE 110
        assert_eq!(reflector_ace(0), 0b010);
        assert_eq!(reflector_ace(ECN_ECT1), 0b011);
        assert_eq!(reflector_ace(ECN_ECT0), 0b100);
        assert_eq!(reflector_ace(ECN_CE), 0b110);
        for ect in 0..4 {
            assert_eq!(extract_syn_ect(reflector_ace(ect)), ect);
        }
        // 000 and the undefined values
        assert_eq!(extract_syn_ect(0), ECN_ECT0);
        assert_eq!(extract_syn_ect(0b111), ECN_ECT1);
    }

    #[test]
    fn transitions_only_ect_to_ce_or_between_ects() {
        assert!(ect_transition_valid(ECN_ECT1, ECN_CE));
        assert!(ect_transition_valid(ECN_ECT0, ECN_ECT1));
        assert!(!ect_transition_valid(0, ECN_ECT0), "Not-ECT made ECT");
        assert!(!ect_transition_valid(ECN_ECT0, 0), "ECT bleached");
        assert!(!ect_transition_valid(ECN_CE, ECN_ECT1), "CE undone");
        assert!(ect_transition_valid(0, 0));
    }

    #[test]
    fn a_syn_requests_accecn_unless_000_or_011() {
        let req: Vec<u8> = (0..8).filter(|&a| syn_requested(a)).collect();
        assert_eq!(req, vec![1, 2, 4, 5, 6, 7]);
    }

    /// The ACE counter wraps every 8 CE packets: received_ce + 5 mod 8.
    #[test]
    fn ace_counter_wraps_mod_8_from_offset_5() {
        let mut a = AccEcn::default();
        assert_eq!(a.take_ace(), 5);
        // 3 CE packets: 5 + 3 = 8 → 0
        a.received(ECN_CE, 3, 3 * 1448);
        assert_eq!(a.received_ce_pending, 3);
        assert_eq!(a.take_ace(), 0);
        assert_eq!(a.received_ce_pending, 0);
        // a 45-segment CE aggregate: 48 + 5 = 53 → 5; pending saturates at 15
        a.received(ECN_CE, 45, 45 * 1448);
        assert_eq!((a.received_ce, a.received_ce_pending), (48, 15));
        assert_eq!(a.take_ace(), 5);
        // the sender's side of the wrap: ACE 0 with 3 delivered_ce → 0 new;
        // ACE 2 with delivered_ce 3 → (2 − 5 − 3) mod 8 = 2
        assert_eq!(ace_delta(0, 3, 4, false, 0, 1448), 0);
        assert_eq!(ace_delta(2, 3, 4, false, 0, 1448), 2);
        // the u32 counter itself wraps: ACE of 2^32 − 1 CE packets is
        // (2^32 − 1 + 5) mod 8 = 4
        let mut w = AccEcn {
            received_ce: u32::MAX - 1,
            ..AccEcn::default()
        };
        w.received(ECN_CE, 1, 0);
        assert_eq!(w.take_ace(), 4);
    }

    /// More than 7 packets per ACK: the heuristic picks the plain delta or
    /// the most wraps (safe_delta) from the option's CE bytes.
    #[test]
    fn multi_wrap_heuristic_of_appendix_a22() {
        // ACE says 2 more (ACE 7 after delivered_ce 0: 7 − 5 = 2); 20 packets
        // delivered: safe_delta = 20 − ((20 − 2) mod 8) = 20 − 2 = 18
        assert_eq!(
            ace_delta(7, 0, 20, false, 0, 1448),
            18,
            "no option: assume wraps"
        );
        assert_eq!(
            ace_delta(7, 0, 20, true, 0, 1448),
            2,
            "no CE bytes: no wrap"
        );
        // 18 packets' worth of CE bytes > 2·1448: wrapped
        assert_eq!(ace_delta(7, 0, 20, true, 18 * 1448, 1448), 18);
        // CE bytes 2·1448 < 18·1448/2: the plain delta
        assert_eq!(ace_delta(7, 0, 20, true, 2 * 1448, 1448), 2);
        // just above 2·mss: more CE bytes than the plain delta explains
        assert_eq!(ace_delta(7, 0, 20, true, 2 * 1448 + 1, 1448), 18);
    }

    /// 24-bit fields are differenced modulo 2^24 and sign-extended.
    #[test]
    fn option_counters_fold_24_bit_deltas() {
        let mut c = 0u32;
        // EE1B 1 (its initial offset): no change
        assert_eq!(update_ecn_bytes(&mut c, 1, E1B_INIT_OFFSET), 0);
        assert_eq!(update_ecn_bytes(&mut c, 1449, E1B_INIT_OFFSET), 1448);
        assert_eq!(c, 1448);
        // the field wraps past 2^24: bytes 0xffffef → 0x1000003 is wire
        // 0xfffff0 → 0x000004, a change of +0x14
        let mut d = 0xff_ffef;
        assert_eq!(update_ecn_bytes(&mut d, 4, 1), 0x14);
        assert_eq!(d, 0x100_0003);
        // a field that went back reads negative
        let mut e = 5000u32;
        assert_eq!(update_ecn_bytes(&mut e, 4001, 1), -1000);
        assert_eq!(e, 4000);
    }

    /// `tcp_options_fit_accecn` sizes as the kernel: 11 bytes padded to 12
    /// alone; with SACK blocks the option takes over their NOP,NOP.
    #[test]
    fn option_fit_matches_linux_sizes() {
        let mut sacks = 0;
        // established, timestamps (12): 28 left → 3 fields, 12 bytes
        assert_eq!(fit_accecn(0, 28, &mut sacks, None), Some((3, 12)));
        // 8 bytes left: 2 fields (8)
        assert_eq!(fit_accecn(0, 8, &mut sacks, None), Some((2, 8)));
        // 4 bytes left: 1 field needs 8 without a SACK, so 0 fields (2 → 4)
        assert_eq!(fit_accecn(0, 4, &mut sacks, None), Some((0, 4)));
        assert_eq!(fit_accecn(1, 4, &mut sacks, None), None);
        // TS + 3 SACK blocks (12 + 28 = 40): nothing left; 0 fields fit in
        // the SACK's NOP,NOP
        let mut sacks = 3;
        assert_eq!(fit_accecn(0, 0, &mut sacks, None), Some((0, 0)));
        // ... and a required field costs a SACK block: with 8 bytes freed,
        // 2 fields (8 bytes) fit, a net 0 bytes more
        assert_eq!(fit_accecn(1, 0, &mut sacks, None), Some((2, 0)));
        assert_eq!(sacks, 2);
        // 1 field + SACK: 5 bytes, the odd byte goes into the NOP,NOP → 4
        let mut one = 1;
        assert_eq!(fit_accecn(1, 4, &mut one, None), Some((1, 4)));
        // SYN-ACK with TS + WS (20 left, 1 NOP to take over): 3 fields, 12
        let mut none = 0;
        assert_eq!(fit_accecn(0, 20, &mut none, Some(1)), Some((3, 12)));
        assert_eq!(AccEcnOption::aligned_len(1, 1), 4);
        assert_eq!(AccEcnOption::aligned_len(0, 1), 4);
    }

    #[test]
    fn option_init_detects_zeroed_fields() {
        let mut a = AccEcn::default();
        assert_eq!(option_init(&a.option(0, true)), OPT_EMPTY_SEEN);
        assert_eq!(option_init(&a.option(3, true)), OPT_COUNTER_SEEN);
        let mut zeroed = a.option(3, true);
        zeroed.fields = [0, 0, 0];
        assert_eq!(option_init(&zeroed), OPT_FAIL_SEEN);
        assert!(!a.process_option(&zeroed, 0, 0));
        assert_eq!(a.fail_mode & OPT_FAIL_RECV, OPT_FAIL_RECV);
    }

    /// Receiver bytes → option → sender bytes: what was received is what
    /// the sender learns, field by field.
    #[test]
    fn option_round_trip_conserves_bytes() {
        let mut rx = AccEcn::default();
        rx.received(ECN_ECT1, 1, 1448);
        rx.received(ECN_CE, 1, 1448);
        rx.received(ECN_ECT1, 1, 1000);
        assert_eq!(rx.minlen, 2);
        let opt = rx.option(3, false);
        assert_eq!(opt.fields, [2449, 1448, 1]);
        let mut tx = AccEcn::default();
        assert!(
            !tx.process_option(&opt, 3896, 3896),
            "two fields changed: ambiguous"
        );
        assert_eq!(tx.delivered_ecn_bytes, [2448, 0, 1448]);
        assert_eq!(tx.delivered_ce_bytes(), 1448);
        assert_eq!(tx.saw_opt, OPT_COUNTER_SEEN);
        // one more ECT(1) segment: one field changes, est = ECT(1)
        rx.received(ECN_ECT1, 1, 1448);
        assert!(!tx.process_option(&rx.option(3, false), 1448, 0));
        assert_eq!(tx.est_ecnfield, ECN_ECT1);
        // an ACK without option credits the estimate
        assert!(tx.process_option(&AccEcnOption::NONE, 1448, 0));
        assert_eq!(tx.delivered_ecn_bytes[0], 2448 + 1448 + 1448);
    }

    /// Codepoint changes demand options and an immediate ACK.
    #[test]
    fn edges_demand_immediate_acks_and_options() {
        let mut a = AccEcn::default();
        assert!(a.received(ECN_ECT1, 1, 100), "Not-ECT → ECT(1)");
        assert_eq!(a.opt_demand, 2);
        a.option_sent();
        assert!(!a.received(ECN_ECT1, 1, 100));
        assert_eq!(a.opt_demand, 1);
        assert!(a.received(ECN_CE, 1, 100));
        assert!(!a.received(ECN_CE, 1, 100), "CE again: no edge");
        assert_eq!(a.opt_demand, 2, "but a demand");
    }
}
