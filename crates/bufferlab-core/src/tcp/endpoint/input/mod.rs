//! The socket's input side, net/ipv4/tcp_input.c: the ACK path (ack.rs), the
//! loss-recovery state machine that drives `tcp/recovery/` (fastretrans.rs)
//! and the data receive path over `tcp/rcv.rs` (data.rs).

mod ack;
mod data;
mod fastretrans;

#[cfg(test)]
mod recovery_tests;
