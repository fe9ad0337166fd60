//! SACK and D-SACK block handling (RFC 2018, RFC 2883; net/ipv4/tcp_input.c
//! `tcp_sacktag_write_queue`).

/// `struct tcp_sacktag_state`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SackTagState {
    pub first_sackt: u64,
    pub last_sackt: u64,
    pub reord: u32,
    pub sack_delivered: u32,
    pub flag: u32,
}
