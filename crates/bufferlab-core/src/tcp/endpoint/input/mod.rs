//! The socket's input side, net/ipv4/tcp_input.c: connection set-up and
//! tear-down (state.rs, `tcp_rcv_state_process`), the ACK path (ack.rs), the
//! loss-recovery state machine that drives `tcp/recovery/` (fastretrans.rs)
//! and the data receive path over `tcp/rcv.rs` (data.rs).

mod ack;
mod data;
mod fastretrans;
mod state;

#[cfg(test)]
mod recovery_tests;
