//! The socket's input side, net/ipv4/tcp_input.c: the ACK path (ack.rs) and
//! the loss-recovery state machine that drives `tcp/recovery/` (fastretrans.rs).

mod ack;
mod fastretrans;

#[cfg(test)]
mod recovery_tests;
